//! Self-test kernels with known answers: each exercises one part of the device prelude
//! the way the paper kernels use it, so that a wrong emulator or a wrong intrinsic shows
//! up here first, on the emulator in `cargo test` and on the GPU in `harness selftest`.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

use gpu_kernels::prelude::*;
use gpu_kernels::{DevPtr, DevPtrMut, KernelStruct};

/// The parameters of [`struct_params()`]: device pointers, scalars of three widths and a
/// table, laid out the same on the host and the GPU (`#[repr(C)]`, with padding after
/// `scale`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AxpyParams<'a> {
    pub x: DevPtr<'a, u32>,
    pub y: DevPtrMut<'a, u64>,
    pub n: u32,
    pub a: u32,
    pub table: [u64; 4],
    pub scale: f32,
}

// SAFETY: `#[repr(C)]`; the fields are device pointers, integers, a float and an array
// of integers; `Host<'a>` differs only in the lifetime.
unsafe impl KernelStruct for AxpyParams<'static> {
    type Host<'a> = AxpyParams<'a>;
}

kernel! {
    /// Block sum reduction through shared memory and barriers.
    ///
    /// Thread t of block b loads `input[b * blockDim + t]` (0 past `n`) into shared slot t;
    /// then log2(blockDim) rounds halve the active threads, each adding its partner's
    /// slot, with a barrier between rounds; thread 0 writes the block's sum to `sums[b]`.
    /// blockDim must be a power of two; shared memory: blockDim u32.
    pub fn block_sum(input: *const u32, n: u32, sums: *mut u32) {
        let tile = dynamic_shared::<u32>();
        let t = thread_idx_x();
        let i = global_id_x();
        *tile.add(t as usize) = if i < n { *input.add(i as usize) } else { 0 };
        sync_threads();
        let mut stride = block_dim_x() / 2;
        while stride > 0 {
            if t < stride {
                *tile.add(t as usize) += *tile.add((t + stride) as usize);
            }
            sync_threads();
            stride /= 2;
        }
        if t == 0 {
            *sums.add(block_idx_x() as usize) = *tile;
        }
    }

    /// Early-returning threads followed by a barrier (CUDA's exited-thread rule).
    ///
    /// Threads with an odd index return at once; the even ones each write their index
    /// into shared slot t/2, meet at a barrier that the odd ones no longer hold back, and
    /// then thread 0 writes the sum of all slots to `out[block]`: the sum of the block's
    /// even thread indices. Shared memory: blockDim/2 u32.
    pub fn early_exit_barrier(out: *mut u32) {
        let t = thread_idx_x();
        if !t.is_multiple_of(2) {
            return;
        }
        let slots = dynamic_shared::<u32>();
        *slots.add((t / 2) as usize) = t;
        sync_threads();
        if t == 0 {
            let mut s = 0;
            for k in 0..block_dim_x() / 2 {
                s += *slots.add(k as usize);
            }
            *out.add(block_idx_x() as usize) = s;
        }
    }

    /// Warp vote and shuffle.
    ///
    /// Each thread t writes, at `out[4 * t ..]`: the ballot of (lane is a multiple of 3),
    /// the warp sum of lane ids by a butterfly (`shfl_xor`) reduction, the value of lane
    /// 0 read with `shfl`, and the lane id of lane+1 read with `shfl_down` (own id at the
    /// warp's end), so the host knows every expected word.
    pub fn warp_vote_shuffle(out: *mut u32) {
        let t = global_id_x();
        let lane = lane_id();
        let b = ballot(lane.is_multiple_of(3));
        let mut s = lane;
        let mut m = 16;
        while m > 0 {
            s += shfl_xor(s, m);
            m /= 2;
        }
        let first = shfl(lane * 7 + 1, 0);
        let next = shfl_down(lane, 1);
        let o = out.add(4 * t as usize);
        *o = b;
        *o.add(1) = s;
        *o.add(2) = first;
        *o.add(3) = next;
    }

    /// Heavy atomic contention: every thread adds 1 to `counters[i % buckets]` `reps`
    /// times, ORs its bit into `bits[i / 32]`, and takes the max of its index into
    /// `counters[buckets]` and, once, a 64-bit add of its index into `sum64`.
    pub fn atomic_contention(counters: *mut u32, buckets: u32, reps: u32, bits: *mut u32, sum64: *mut u64, n: u32) {
        let i = global_id_x();
        if i >= n {
            return;
        }
        for _ in 0..reps {
            atomic_add(counters.add((i % buckets) as usize), 1);
        }
        atomic_or(bits.add((i / 32) as usize), 1 << (i % 32));
        atomic_max(counters.add(buckets as usize), i);
        atomic_add_u64(sum64, i as u64);
    }
}

kernel! {
    /// A parameter struct passed by value (one parameter in the constant bank).
    ///
    /// Thread i < `p.n` writes `y[i] = x[i] * a + table[i % 4] + (scale * i) as u64 +
    /// extra`; the table is indexed with constant indices (a `match`), so it is read
    /// from the parameter space as the scalars it replaces would be.
    pub fn struct_params(p: AxpyParams<'static>, extra: u32) {
        let i = global_id_x();
        if i >= p.n {
            return;
        }
        let t = match i % 4 {
            0 => p.table[0],
            1 => p.table[1],
            2 => p.table[2],
            _ => p.table[3],
        };
        let v = p.x.read(i as usize) as u64 * p.a as u64 + t + (p.scale * i as f32) as u64 + extra as u64;
        p.y.write(i as usize, v);
    }
}

kernel! {
    /// A persistent kernel ([`gpu_kernels::persist`]): serves requests from the ring
    /// until the stop request. For each request, every thread of the grid adds its
    /// grid-stride share of the payload words into `acc[round % 2]` (64-bit atomics,
    /// global memory), global thread 0 zeroing the other word for the next round; thread
    /// 0 of block 0 answers `[sum, round, blocks]` with the request's
    /// kind as status (mapped host memory). Shared memory: the ring's
    /// ([`gpu_kernels::persist::shared_bytes`]).
    pub fn persistent_sum(
        req: *const u64,
        resp: *mut u64,
        ctl: *mut u32,
        bcast: *mut u64,
        slots: u32,
        req_words: u32,
        resp_words: u32,
        acc: *mut u64,
    ) {
        let ring = gpu_kernels::persist::DeviceRing { req, resp, ctl, bcast, slots, req_words, resp_words };
        gpu_kernels::persist::serve(
            &ring,
            dynamic_shared::<u64>(),
            |r| {
                let parity = (r.round % 2) as usize;
                if global_id_x() == 0 {
                    *acc.add(1 - parity) = 0;
                }
                let mut i = global_id_x();
                let stride = grid_dim_x() * block_dim_x();
                while i < r.len {
                    atomic_add_u64(acc.add(parity), *r.words.add(i as usize));
                    i += stride;
                }
            },
            |r, out| {
                if thread_idx_x() == 0 {
                    out.put(0, volatile_load_u64(acc.add((r.round % 2) as usize)));
                    out.put(1, r.round as u64);
                    out.put(2, grid_dim_x() as u64);
                }
                (r.kind, 3)
            },
        );
    }
}

/// [`persist_probe()`] flags: what one round does besides the poll and the answer.
pub mod probe {
    /// `membar.sys` once the request's `seq` is seen.
    pub const FENCE_IN: u32 = 1;
    /// The header read again after `seq` is seen (a second round trip over the bus).
    pub const READ_AGAIN: u32 = 2;
    /// `membar.sys` between the answer's payload pair and its header pair (else none, as
    /// in the ring's protocol: every pair carries `seq`).
    pub const FENCE_OUT: u32 = 4;
    /// Three block barriers, as [`gpu_kernels::persist::serve`] has around its stages.
    pub const SYNC: u32 = 8;
    /// An atomic add and `membar.gl` on a device word (the blocks' arrival).
    pub const ATOMIC: u32 = 16;
    /// Warp 0 polls the whole slot's first 32 words at once (else lane 0 polls `seq`
    /// and the header).
    pub const WARP: u32 = 32;
    /// `seq` polled with `ld.acquire.sys` (else `ld.volatile`).
    pub const ACQUIRE: u32 = 64;
}

kernel! {
    /// A stripped persistent round trip, for measuring what each part of
    /// [`gpu_kernels::persist::serve`] costs (example `persist_probe`): block 0 only
    /// (other blocks return at once); round `r` waits for request `r + 1` in slot
    /// `r % slots` of the ring's request slots (mapped host memory), per `flags`
    /// ([`probe`]), then writes the answer `[r]` with the request's kind as status and
    /// publishes its `seq`. A request of kind `u32::MAX` ends the kernel. `ctl` (device
    /// memory) takes the atomic of [`probe::ATOMIC`]; `bcast` is not used.
    pub fn persist_probe(
        req: *const u64,
        resp: *mut u64,
        ctl: *mut u32,
        bcast: *mut u64,
        slots: u32,
        req_words: u32,
        resp_words: u32,
        flags: u32,
    ) {
        let _ = bcast;
        if block_idx_x() != 0 {
            return;
        }
        let tid = thread_idx_x();
        let sh = dynamic_shared::<u64>();
        let req_stride = gpu_kernels::persist::request_slot_words(req_words);
        let resp_stride = gpu_kernels::persist::response_slot_words(resp_words);
        let mut round: u32 = 0;
        loop {
            let slot = req.add((round % slots) as usize * req_stride);
            let want = round as u64 + 1;
            if flags & probe::WARP != 0 {
                if tid < 32 {
                    let mut v;
                    loop {
                        v = if flags & probe::ACQUIRE != 0 && tid == 0 {
                            load_acquire_system_u64(slot)
                        } else {
                            volatile_load_u64(slot.add(tid as usize))
                        };
                        if shfl(v as u32, 0) as u64 == want & 0xffff_ffff {
                            break;
                        }
                    }
                    let head = shfl(v as u32, 1) as u64 | (shfl((v >> 32) as u32, 1) as u64) << 32;
                    if tid == 0 {
                        *sh = head;
                    }
                }
            } else if tid == 0 {
                let mut head;
                loop {
                    let s = if flags & probe::ACQUIRE != 0 {
                        load_acquire_system_u64(slot)
                    } else {
                        volatile_load_u64(slot)
                    };
                    head = volatile_load_u64(slot.add(1));
                    if s == want {
                        break;
                    }
                }
                if flags & probe::FENCE_IN != 0 {
                    fence_system();
                }
                if flags & probe::READ_AGAIN != 0 {
                    head = volatile_load_u64(slot.add(1));
                }
                *sh = head;
            }
            if flags & probe::SYNC != 0 {
                sync_threads();
                sync_threads();
            }
            sync_threads();
            let head = *sh;
            if head as u32 == u32::MAX {
                return;
            }
            if tid == 0 {
                if flags & probe::ATOMIC != 0 {
                    thread_fence();
                    atomic_add(ctl.add(1), 1);
                    thread_fence();
                }
                // The ring's response layout: tagged pairs, the payload `[want, round]`
                // then the header `[want, status | 1 << 32]`.
                let out = resp.add((round % slots) as usize * resp_stride);
                volatile_store_pair(out.add(2), want, round as u64);
                if flags & probe::FENCE_OUT != 0 {
                    fence_system();
                }
                volatile_store_pair(out, want, (head & 0xffff_ffff) | 1 << 32);
            }
            if flags & probe::SYNC != 0 {
                sync_threads();
            }
            round = round.wrapping_add(1);
        }
    }
}
