//! Persistent kernels: launched once, they serve requests that the host writes into a
//! ring of slots in page-locked host memory mapped into the device, until told to stop.
//! Beyond the papers: their per-event pipeline pays a launch and a synchronisation
//! (about 10 µs) per event; a resident kernel answers in a few microseconds.
//!
//! # The protocol
//!
//! Memory (all zeroed at launch):
//!
//! | what | where | words | written by | read by |
//! | --- | --- | --- | --- | --- |
//! | request slot `s` | mapped host memory | `1 + req_words` tagged pairs (1) | host (2) | warp 0 of block 0 |
//! | response slot `s` | mapped host memory | `1 + resp_words` tagged pairs (3) | block 0 (4) | host |
//! | control | device memory | spare, `arrived`, spare, spare, stamps (5) | `arrived`: every block but 0; stamps: the host, before the launch | block 0 |
//! | broadcast | device memory | `1 + req_words` tagged pairs, as a request slot, tag = request number | block 0 | warp 0 of every other block |
//!
//! (1) `[tag, word]`: the header `[seq, kind | len << 32]`, then the payload.
//! (2) each pair's word, then its tag = `seq`.
//! (3) `[seq, word]`: the header `[seq, status | len << 32]`, then the payload.
//! (4) each pair in one 16-byte store, no fence.
//! (5) the stamps' address and rounds, then a spare word (`u32`, [`CTL_WORDS`]).
//!
//! Request `t` (numbered from 1) sits in slot `(t - 1) % slots`; its answer in the
//! response slot of the same index, carrying the same `seq`. Round `r` (from 0) of the
//! kernel serves request `r + 1`:
//!
//! 1. Fetch. Warp 0 of block 0 polls the request slot: each lane reads one pair with a
//!    single 16-byte load ([`volatile_load_pair`]), lane 0 the header, lane `l` payload
//!    word `l - 1`, until every pair of the request (the header says how many) carries
//!    the tag `r + 1`; longer requests take further 32-pair chunks (four per round
//!    trip). The host writes each pair's word before its tag, so a pair whose tag is
//!    new holds the new word: the request is in the block's shared memory one bus
//!    round trip after it is visible, with no fence (measured on an H100 with
//!    `persist_probe`: a `membar.sys` after the poll cost 1.0 µs, a second read of the
//!    payload 0.7 µs). Warp 0 of every other block polls the broadcast area in device
//!    memory the same way.
//! 2. Broadcast. Block 0's threads write the request's pairs, tagged `r + 1`, into the
//!    broadcast area ([`volatile_store_pair`]). The area is free: every block arrived
//!    (step 4) after reading round `r - 1`'s request, before block 0 answered it.
//! 3. A request of kind [`STOP`] ends the kernel (every block returns, once the stop is
//!    broadcast). Otherwise every block runs the caller's `work` on the request (the
//!    same `r` for all blocks).
//! 4. Completion: after a barrier, lane 0 of each block but 0 adds one to the
//!    monotonic counter `arrived` with a release reduction (no answer to wait for);
//!    lane 0 of block 0 waits with acquire loads until it reads `(r + 1) * (blocks -
//!    1)`, and after a barrier block 0's threads run the caller's `respond`, which
//!    writes the answer's words through an [`Answer`], each as a tagged pair `[seq,
//!    word]` in one 16-byte store ([`volatile_store_pair`]); lane 0 writes the header
//!    pair `[seq, status | len << 32]`. No fence: the host takes the answer once the
//!    header and every payload pair carry `seq`, in whatever order they arrived. (A
//!    system-scope release store of `seq` after the payload, the protocol before,
//!    cost 0.6-0.7 µs a round on an H100: `scripts/probe/ping.cu`, `relsys` against
//!    `lane`, results/gpu-logs/, the floor probe on an H100.)
//!
//! Single-copy atomicity of a 16-byte aligned access is what the tagged pairs rely on,
//! both ways: the GPU serves a 16-byte aligned load in one transaction, from one
//! snapshot of the host's cache line or of the L2 sector, and writes a 16-byte aligned
//! store to host memory in one transaction, which the host's loads see whole (the host
//! reads a pair's tag, then its word, with an acquire load first); PTX's memory model
//! promises it for accesses up to 8 bytes only. The paper crates check every answer of
//! the mode against their CPU engines in the recorded runs.
//!
//! With [`Ring::set_stamps`], lane 0s also write `%globaltimer` stamps of each stage of
//! the first rounds into device memory ([`STAMP_WORDS`] per round), which the
//! `persist_latency` example of `gpu-selftest` reports (the H100's timer ticks every
//! 0.5 µs or so: medians over many rounds are meaningful, single stamps are not).
//!
//! So rounds never overlap (block 0 publishes round `r + 1` only after every block
//! finished round `r`, which lets `work` keep per-round state in device memory and
//! reset the idle copy of it for the next round, as CCM §4.3 does), while the host may
//! keep several requests in flight: block 0 fetches request `r + 2` as soon as it has
//! answered request `r + 1`.
//!
//! Every block must be resident at once (blocks wait for one another): the host side
//! ([`Device::launch_persistent`](crate::Device::launch_persistent)) launches one block
//! per SM with a cooperative launch, which the driver refuses rather than run a grid
//! that does not fit. Blocks have a multiple of 32 threads (warp 0 polls as a whole
//! warp). The GPU busy-waits while the kernel runs: warp 0 of each block spins, the
//! other warps wait at a barrier. Dropping the host handle stops the kernel and frees
//! the GPU.
//!
//! # Launching, and what the kernel's buffers belong to
//!
//! A kernel defined by [`kernel!`](crate::kernel) whose first seven parameters are the
//! ring's (`req: *const u64, resp: *mut u64, ctl: *mut u32, bcast: *mut u64, slots:
//! u32, req_words: u32, resp_words: u32`, the fields of [`DeviceRing`]) gets the safe
//! launcher `name::launch_persistent(&dev, cfg, ring, blocks, args..)`: the [`Ring`]
//! moves into the returned [`Persistent`] handle, and each further argument is owned
//! ([`PersistParam`]): a buffer is passed as an `Arc<Buffer<T>>` (`&arc`, of which the
//! handle keeps a clone; the `Arc` itself; or a `Buffer<T>`, moved in), a scalar as
//! itself.
//!
//! The kernel reads its buffers until the handle has stopped it, long after the launch
//! was queued, and on a stream of its own (a buffer's stream-ordered free does not
//! wait for it). So the handle holds the owners and drops them only once the kernel
//! has ended; when it cannot stop the kernel ([`Persistent::stop`] timing out, a stuck
//! kernel) it leaks them with the ring, as freeing memory under a running kernel would
//! turn a hang into memory corruption. While the handle holds a clone, the host can
//! neither free the buffer nor write it: [`Device::write`](crate::Device::write) and
//! [`Device::zero`](crate::Device::zero) take `&mut Buffer<T>`, which a shared `Arc`
//! does not give (`Arc::get_mut` is `None` until the kernel has stopped).
//!
//! Why owners rather than borrows (a handle `Persistent<'a>` borrowing the buffers):
//! the engines keep their device tables and the running kernel's handle side by side in
//! one struct, for as long as the engine lives, which borrows would make
//! self-referential; an `Arc` costs a clone per buffer at the launch and nothing on the
//! hot path ([`Persistent::submit`] and [`Persistent::wait`] do not touch it). Kernel
//! private state (counters, lists) is simply moved in.
//!
//! What the types do not prevent: reading a buffer the kernel writes (`Device::read`
//! through the host's `Arc`), or an ordinary launch that writes a buffer the kernel
//! reads (`&*arc` as an [`Out`](crate::Out)), while the kernel runs; either races with
//! the kernel (the values read are unspecified). Mapped host memory reaches a
//! persistent kernel only through its ring, whose protocol the handle implements.

use crate::prelude::*;

/// The request kind that stops the kernel.
pub const STOP: u32 = u32::MAX;
/// Words of a request's or a response's header: one tagged pair, `[seq, kind | len <<
/// 32]` or `[seq, status | len << 32]`.
pub const HEADER_WORDS: u32 = 2;
/// `u32` words of the control block in device memory: spare, `arrived` (the blocks'
/// monotonic arrival counter), two spare, the stage stamps' address (two words, 8-byte
/// aligned; 0 = none) and the number of rounds it holds, one spare.
pub const CTL_WORDS: usize = 8;
/// Word of the control block counting the blocks' arrivals.
pub const CTL_ARRIVED: usize = 1;
/// Word of the control block where the stamps' address starts (a `u64`).
pub const CTL_STAMPS: usize = 4;
/// Word of the control block holding the number of stamped rounds.
pub const CTL_STAMP_ROUNDS: usize = 6;
/// `u64` words of stage stamps per round (`global_timer`, ns): request seen by block 0,
/// broadcast published, request in shared memory (latest block), work done (latest
/// block), every block arrived, answer published, block 0 started polling for the
/// request, spare.
pub const STAMP_WORDS: usize = 8;

/// `u64` words of a request slot (or of the broadcast area) holding `req_words` of
/// payload: one tagged pair per word, the header's pair first.
#[inline(always)]
pub const fn request_slot_words(req_words: u32) -> usize {
    2 * (1 + req_words as usize)
}

/// `u64` words of a response slot holding `resp_words` of payload: one tagged pair per
/// word, the header's pair first.
#[inline(always)]
pub const fn response_slot_words(resp_words: u32) -> usize {
    2 * (1 + resp_words as usize)
}

/// Where `respond` writes an answer's payload: word `j` of the response slot, as a
/// tagged pair carrying the request's `seq` (see the module's documentation). Made by
/// [`serve`] for the round's slot; words past the slot's `resp_words` are dropped.
pub struct Answer {
    /// The slot's first payload pair (mapped host memory, 16-byte aligned).
    pairs: *mut u64,
    tag: u64,
    cap: u32,
}

impl Answer {
    /// Writes payload word `j` (nothing when `j` is not below [`Answer::capacity`]).
    #[inline(always)]
    pub fn put(&self, j: u32, word: u64) {
        if j < self.cap {
            // SAFETY: `serve` made `pairs` the slot's payload pairs, `cap` of them, 16-byte
            // aligned in the ring's live response memory; `j < cap`.
            unsafe { volatile_store_pair(self.pairs.add(2 * j as usize), self.tag, word) }
        }
    }

    /// Payload words the slot holds (`resp_words`).
    #[inline(always)]
    pub fn capacity(&self) -> u32 {
        self.cap
    }

    /// Writes the `n` `u32`s at `src` as payload words `0..n.div_ceil(2)`, two to a word
    /// (the first in the low half, a missing last one as 0), the block's threads taking
    /// the words in turn; returns the number of words. `src` is read with volatile
    /// loads, so it may be a list that other blocks wrote in this round (device memory)
    /// or the block's shared memory. Every thread of the block calls it.
    ///
    /// # Safety
    /// `src` must be valid for reads of `n` `u32`s.
    #[inline(always)]
    pub unsafe fn put_u32s(&self, src: *const u32, n: u32) -> u32 {
        let mut w = thread_idx_x();
        while w < n.div_ceil(2) {
            let at = 2 * w as usize;
            // SAFETY: `2w < n` (so `at < n`) and `at + 1 < n` checked: within `src`'s `n`.
            let lo = unsafe { volatile_load_u32(src.add(at)) } as u64;
            let hi = if 2 * w + 1 < n {
                // SAFETY: as above, `at + 1 < n`.
                unsafe { volatile_load_u32(src.add(at + 1)) as u64 }
            } else {
                0
            };
            self.put(w, lo | hi << 32);
            w += block_dim_x();
        }
        n.div_ceil(2)
    }
}

/// Bytes of dynamic shared memory that [`serve`] uses at the start of the block's
/// dynamic shared memory (16-byte aligned); the caller's own shared memory starts there.
#[inline(always)]
pub const fn shared_bytes(req_words: u32) -> u32 {
    ((req_words + HEADER_WORDS + 2) * 8).next_multiple_of(16)
}

/// The ring as a kernel sees it (its launch parameters, in this order: `req`, `resp`,
/// `ctl`, `bcast`, `slots`, `req_words`, `resp_words`).
#[derive(Clone, Copy)]
pub struct DeviceRing {
    /// Request slots, mapped host memory: `slots * request_slot_words(req_words)` words.
    pub req: *const u64,
    /// Response slots, mapped host memory: `slots * response_slot_words(resp_words)` words.
    pub resp: *mut u64,
    /// Control block, device memory: [`CTL_WORDS`] words.
    pub ctl: *mut u32,
    /// Broadcast area, device memory: `request_slot_words(req_words)` words.
    pub bcast: *mut u64,
    pub slots: u32,
    pub req_words: u32,
    pub resp_words: u32,
}

/// One request as `work` and `respond` see it.
#[derive(Clone, Copy)]
pub struct Request {
    /// The caller's kind (never [`STOP`]).
    pub kind: u32,
    /// Payload words (at most `req_words`).
    pub len: u32,
    /// The payload, in the block's shared memory.
    pub words: *const u64,
    /// The round (0, 1, ...): request number `round + 1`. Wraps after 2^32.
    pub round: u32,
}

/// The kernel side of the protocol (see the module's documentation): serves requests
/// until a [`STOP`]. Every thread of every block calls it, with `shared` the block's
/// dynamic shared memory (at least [`shared_bytes`] bytes for the ring).
///
/// `work(&request)` runs on every thread of every block, once per request (it may call
/// `sync_threads`: every thread of a block calls it). `respond(&request, &answer)` runs
/// on every thread of block 0 after all blocks finished `work` (it may call
/// `sync_threads` too); it writes payload words `0..len` through
/// [`Answer::put`](Answer::put) (each exactly once, by any thread) and returns
/// `(status, len)`, taken from thread 0.
///
/// # Safety
/// The ring's pointers must be as [`DeviceRing`] says (the request slots and the
/// broadcast area 16-byte aligned), every block of the grid resident at once, its
/// blocks a multiple of 32 threads, and `shared` the block's dynamic shared memory.
#[inline(always)]
pub unsafe fn serve<W, R>(ring: &DeviceRing, shared: *mut u64, mut work: W, mut respond: R)
where
    W: FnMut(&Request),
    R: FnMut(&Request, &Answer) -> (u32, u32),
{
    let tid = thread_rank();
    let first_block = block_idx_x() == 0 && block_idx_y() == 0 && block_idx_z() == 0;
    let blocks = grid_dim_x() * grid_dim_y() * grid_dim_z();
    let arrived = ring.ctl.add(CTL_ARRIVED);
    // Set by the host before the launch: the stage stamps.
    let stamps = volatile_load_u64(ring.ctl.add(CTL_STAMPS) as *const u64) as *mut u64;
    let stamp_rounds = volatile_load_u32(ring.ctl.add(CTL_STAMP_ROUNDS));
    let req_stride = request_slot_words(ring.req_words);
    let resp_stride = response_slot_words(ring.resp_words);
    // Shared: [0] = header, [1..] = payload.
    let sh_head = shared;
    let sh_words = shared.add(1);
    let mut round: u32 = 0;
    let nthreads = block_dim_x() * block_dim_y() * block_dim_z();
    loop {
        let slot_index = (round % ring.slots) as usize;
        let want = round as u64 + 1;
        // Stage stamps of this round (device memory, [`STAMP_WORDS`] words), or null.
        let st = if !stamps.is_null() && round < stamp_rounds {
            stamps.add(round as usize * STAMP_WORDS)
        } else {
            core::ptr::null_mut()
        };
        if first_block && tid == 0 && !st.is_null() {
            volatile_store_u64(st.add(6), global_timer());
        }
        // 1. Fetch: block 0 from the request slot in host memory, the others from the
        //    broadcast area in device memory.
        let src = if first_block {
            ring.req.add(slot_index * req_stride)
        } else {
            ring.bcast as *const u64
        };
        if tid < WARP_SIZE {
            fetch(src, want, ring.req_words, sh_head, sh_words);
        }
        sync_threads();
        let head = *sh_head;
        let len = payload_len(head, ring.req_words);
        if tid == 0 && !st.is_null() {
            if first_block {
                volatile_store_u64(st, global_timer());
            }
            atomic_max_u64(st.add(2), global_timer());
        }
        // 2. Block 0 republishes the request to the grid.
        if first_block && blocks > 1 {
            let mut i = tid;
            while i <= len {
                let w = if i == 0 {
                    head
                } else {
                    *sh_words.add(i as usize - 1)
                };
                volatile_store_pair(ring.bcast.add(2 * i as usize), want, w);
                i += nthreads;
            }
            if tid == 0 && !st.is_null() {
                volatile_store_u64(st.add(1), global_timer());
            }
        }
        // 3. Stop, or work.
        let kind = head as u32;
        if kind == STOP {
            return;
        }
        let request = Request {
            kind,
            len,
            words: sh_words,
            round,
        };
        work(&request);
        // 4. Completion.
        sync_threads();
        if !first_block {
            if tid == 0 {
                if !st.is_null() {
                    atomic_max_u64(st.add(3), global_timer());
                }
                // Release: the block's work (ordered before it by the barrier above).
                red_release_add(arrived, 1);
            }
        } else {
            if tid == 0 {
                if !st.is_null() {
                    atomic_max_u64(st.add(3), global_timer());
                }
                let all = (round.wrapping_add(1)).wrapping_mul(blocks - 1);
                while load_acquire_u32(arrived) != all {
                    spin_pause();
                }
                if !st.is_null() {
                    volatile_store_u64(st.add(4), global_timer());
                }
            }
            // Every block's work is visible to block 0's threads after this barrier
            // (lane 0's acquire, then the barrier).
            sync_threads();
            let rslot = ring.resp.add(slot_index * resp_stride);
            let answer = Answer {
                pairs: rslot.add(2),
                tag: want,
                cap: ring.resp_words,
            };
            let (status, len) = respond(&request, &answer);
            if tid == 0 {
                let len = if len > ring.resp_words {
                    ring.resp_words
                } else {
                    len
                };
                // The header pair: no fence before it, the host waits for every
                // payload pair's tag too.
                volatile_store_pair(rslot, want, status as u64 | (len as u64) << 32);
                if !st.is_null() {
                    volatile_store_u64(st.add(5), global_timer());
                }
            }
            // The next round's fetch rewrites the request in shared memory, which
            // `respond` may still be reading on other warps.
            sync_threads();
        }
        round = round.wrapping_add(1);
    }
}

/// Step 1 of the protocol, on the 32 lanes of warp 0: polls the tagged pairs at `src`
/// (lane `l` pair `l`: the header, then payload word `l - 1`) until every pair of the
/// request carries `want`, then the further 32-pair chunks, four per round trip;
/// writes the header to `sh_head` and the payload to `sh_words`. (Polling the first two
/// chunks at once, to save the round trip of requests of 32-63 words, measured slower
/// on an H100: CCM 9.8 µs p50 against 8.2, CLCB 30.7 against 28.3.)
///
/// # Safety
/// `src` holds `1 + req_words` tagged pairs (16-byte aligned, readable), `sh_head` and
/// `sh_words` are the block's shared memory with room for the header and `req_words`
/// words, and all 32 lanes of the warp call it together.
#[inline(always)]
unsafe fn fetch(src: *const u64, want: u64, req_words: u32, sh_head: *mut u64, sh_words: *mut u64) {
    let l = lane_id();
    let mut len;
    loop {
        let (t, w) = if l <= req_words {
            volatile_load_pair(src.add(2 * l as usize))
        } else {
            (want, 0)
        };
        let head = (shfl(w as u32, 0) as u64) | (shfl((w >> 32) as u32, 0) as u64) << 32;
        len = payload_len(head, req_words);
        // Lane 0's tag is checked by every lane: a stale header's length means nothing.
        if all_sync(t == want || l > len) {
            if l == 0 {
                *sh_head = head;
            } else if l <= len {
                *sh_words.add(l as usize - 1) = w;
            }
            break;
        }
        spin_pause();
    }
    // Further chunks: pairs 32.., four chunks per round trip.
    let mut base = WARP_SIZE;
    while base <= len {
        loop {
            let mut ok = true;
            let mut got = [0u64; 4];
            let mut k = 0;
            while k < 4 {
                let i = base + WARP_SIZE * k as u32 + l;
                if i <= len {
                    let (t, v) = volatile_load_pair(src.add(2 * i as usize));
                    ok &= t == want;
                    got[k] = v;
                }
                k += 1;
            }
            if all_sync(ok) {
                let mut k = 0;
                while k < 4 {
                    let i = base + WARP_SIZE * k as u32 + l;
                    if i <= len {
                        *sh_words.add(i as usize - 1) = got[k];
                    }
                    k += 1;
                }
                break;
            }
            spin_pause();
        }
        base += 4 * WARP_SIZE;
    }
}

/// A header's payload length, clipped to the slot.
#[inline(always)]
fn payload_len(head: u64, req_words: u32) -> u32 {
    let len = (head >> 32) as u32;
    if len > req_words {
        req_words
    } else {
        len
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::{
        request_slot_words, response_slot_words, CTL_STAMPS, CTL_WORDS, STAMP_WORDS, STOP,
    };
    use crate::device::{struct_arg, Arg, Buffer, Device, GpuError, HostBuffer, Kernel};
    use crate::device::{KernelParam, LaunchConfig};
    use crate::params::KernelStruct;
    use std::sync::atomic::{fence, AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// What a running persistent kernel keeps alive: the owners of the device memory its
    /// arguments point into (clones of `Arc<Buffer<T>>`).
    type Kept = Box<dyn Send + Sync>;

    /// A parameter type a persistent kernel may take after its ring's, and what its
    /// typed launcher `name::launch_persistent` (made by [`kernel!`](crate::kernel))
    /// takes for it: an owner, never a borrow, since the kernel uses its arguments until
    /// its [`Persistent`] handle has stopped it, not only until the launch is queued.
    ///
    /// | kernel parameter | `launch_persistent` takes |
    /// | --- | --- |
    /// | `*const T`, `*mut T` | an `Arc<Buffer<T>>`: `&Arc<Buffer<T>>` (a clone is kept), the `Arc` itself, or a `Buffer<T>` (moved in) |
    /// | `u32 i32 u64 i64 f32 f64` | the scalar |
    /// | a [`KernelStruct`] `S` | `S::Host<'static>` (its device pointers into buffers that are never freed) |
    ///
    /// Mapped host memory ([`HostBuffer`]) is not taken: the host shares memory with a
    /// running kernel only through its ring.
    ///
    /// # Safety
    /// `push` must push exactly one [`Arg`] that the kernel's parameter of type `Self`
    /// reads as a valid value, and keep in the launch whatever owns the memory a pointer
    /// argument points into (the launch hands it to the [`Persistent`] handle, which
    /// drops it only once the kernel has ended, and leaks it when it cannot stop it).
    pub unsafe trait PersistParam: KernelParam {
        /// What `launch_persistent` takes for a parameter of this type.
        type Owned;
        /// Encodes the value as the launch's next argument, keeping its memory's owner.
        fn push(h: Self::Owned, l: &mut PersistentLaunch);
    }

    macro_rules! persist_pointer {
        ($($raw:ty),*) => {$(
            // SAFETY: the argument is the address of an `Arc<Buffer<T>>`'s memory, whose
            // clone the launch keeps: the buffer is freed only after the kernel ends, and
            // no `&mut Buffer<T>` (the host's only way to write it) can be had from a
            // shared `Arc` meanwhile.
            unsafe impl<T: Send + Sync + 'static> PersistParam for $raw {
                type Owned = Arc<Buffer<T>>;
                fn push(b: Arc<Buffer<T>>, l: &mut PersistentLaunch) {
                    l.args.push(b.arg());
                    l.kept.push(Box::new(b));
                }
            }
        )*};
    }
    persist_pointer!(*const T, *mut T);

    macro_rules! persist_scalar {
        ($($t:ty),*) => {$(
            // SAFETY: a scalar is passed as itself, the value the kernel declares.
            unsafe impl PersistParam for $t {
                type Owned = $t;
                fn push(h: $t, l: &mut PersistentLaunch) {
                    l.args.push(h.into());
                }
            }
        )*};
    }
    persist_scalar!(u32, i32, u64, i64, f32, f64);

    // SAFETY: as `KernelParam for S`: the struct's bytes, a valid `S`; its device
    // pointers are `'static` (made from buffers that are never freed).
    unsafe impl<S: KernelStruct> PersistParam for S {
        type Owned = S::Host<'static>;
        fn push(h: S::Host<'static>, l: &mut PersistentLaunch) {
            l.args.push(struct_arg::<S>(h));
        }
    }

    /// The arguments of one typed persistent launch, built by the launcher
    /// `name::launch_persistent` that [`kernel!`](crate::kernel) generates. Not for use
    /// by hand.
    #[doc(hidden)]
    pub struct PersistentLaunch {
        ring: Ring,
        args: Vec<Arg>,
        kept: Vec<Kept>,
    }

    impl PersistentLaunch {
        /// A launch serving `ring`: its arguments start with the ring's.
        #[doc(hidden)]
        pub fn new(ring: Ring, params: usize) -> Self {
            let mut args = Vec::with_capacity(params);
            args.extend(ring.args());
            PersistentLaunch {
                ring,
                args,
                kept: Vec::new(),
            }
        }

        /// Launches `kernel` with the ring's arguments and those pushed, and hands the
        /// owners of their memory to the returned handle.
        ///
        /// # Safety
        /// The kernel's first seven parameters must be the ring's (`req`, `resp`, `ctl`,
        /// `bcast`, `slots`, `req_words`, `resp_words`, as [`DeviceRing`](super::DeviceRing)
        /// says), it must serve the ring as [`serve`](super::serve) does, and the other
        /// arguments must have been pushed by [`PersistParam::push`] of its own
        /// parameter types, in order (what the generated launcher does).
        #[doc(hidden)]
        pub unsafe fn run(
            self,
            dev: &Device,
            kernel: &Kernel,
            cfg: LaunchConfig,
            blocks: Option<u32>,
        ) -> Result<Persistent, GpuError> {
            // SAFETY: the caller's contract: the arguments are the ring's, then one of
            // each parameter's type pointing into memory that `kept` owns; the handle
            // keeps `kept` until the kernel has ended (see `Persistent::kept`).
            let mut p =
                unsafe { dev.launch_persistent(kernel, cfg, &self.args, self.ring, blocks)? };
            p.kept = self.kept;
            Ok(p)
        }
    }

    /// Sizes of a ring: slots (requests in flight at most), request and response
    /// payload words.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct RingConfig {
        pub slots: u32,
        pub req_words: u32,
        pub resp_words: u32,
    }

    /// The ring's memory: request and response slots in mapped host memory, the control
    /// block and the broadcast area in device memory. Made by [`Ring::new`], handed to
    /// the kernel's typed launcher `name::launch_persistent` (or the unsafe
    /// [`Device::launch_persistent`]), whose handle owns it while the kernel runs.
    pub struct Ring {
        cfg: RingConfig,
        req: HostBuffer<u64>,
        resp: HostBuffer<u64>,
        ctl: Buffer<u32>,
        bcast: Buffer<u64>,
        /// The stage stamps the kernel writes ([`Ring::set_stamps`]).
        stamps: Option<Arc<Buffer<u64>>>,
        /// The stamps were asked for by [`STAMPS_ENV`]: their medians are printed when
        /// the kernel stops.
        report_stamps: bool,
    }

    /// Environment variable: when set to `N > 0`, every ring made by [`Ring::new`] has
    /// its kernel stamp the stages of its first `N` rounds ([`Ring::set_stamps`]), and
    /// the handle prints their medians on standard error when the kernel stops
    /// ([`StageTimes`]). A diagnostic of where a round's time goes in any persistent
    /// engine (CCM, CLCB), with no change to its code; off by default.
    pub const STAMPS_ENV: &str = "GPU_MATCH_PERSIST_STAMPS";

    /// Medians over the stamped rounds of each stage of a round, in µs after block 0
    /// saw the request (stage 0 of [`STAMP_WORDS`]); NaN where no round has the stamp.
    #[derive(Clone, Copy, Debug)]
    pub struct StageTimes {
        /// Rounds with stamps.
        pub rounds: usize,
        /// Block 0 published the broadcast.
        pub broadcast: f64,
        /// The latest block had the request in shared memory.
        pub in_shared: f64,
        /// The latest block finished `work`.
        pub work_done: f64,
        /// Block 0 saw every block arrive.
        pub all_arrived: f64,
        /// Block 0 published the answer.
        pub answered: f64,
        /// Block 0 started polling for the request (negative: it waited that long).
        pub poll_start: f64,
    }

    impl StageTimes {
        /// The medians of `stamps` as the kernel wrote them ([`STAMP_WORDS`] per round;
        /// rounds never reached are zero and skipped).
        pub fn from_stamps(stamps: &[u64]) -> StageTimes {
            let mut stage = vec![Vec::new(); STAMP_WORDS];
            let mut rounds = 0;
            for r in stamps.chunks_exact(STAMP_WORDS).filter(|r| r[0] != 0) {
                rounds += 1;
                for (j, s) in stage.iter_mut().enumerate().take(7).skip(1) {
                    if r[j] != 0 {
                        s.push((r[j] as f64 - r[0] as f64) / 1e3);
                    }
                }
            }
            let mut med = |j: usize| {
                let v = &mut stage[j];
                v.sort_by(f64::total_cmp);
                v.get(v.len().saturating_sub(1) / 2)
                    .copied()
                    .unwrap_or(f64::NAN)
            };
            StageTimes {
                rounds,
                broadcast: med(1),
                in_shared: med(2),
                work_done: med(3),
                all_arrived: med(4),
                answered: med(5),
                poll_start: med(6),
            }
        }
    }

    impl std::fmt::Display for StageTimes {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(
                f,
                "medians over {} rounds, µs after block 0 saw the request: broadcast {:.2}, \
                 in shared (latest block) {:.2}, work done (latest block) {:.2}, all arrived \
                 {:.2}, answered {:.2}; polling began at {:.2}",
                self.rounds,
                self.broadcast,
                self.in_shared,
                self.work_done,
                self.all_arrived,
                self.answered,
                self.poll_start
            )
        }
    }

    impl Ring {
        /// Allocates a zeroed ring on `dev`, its request slots in write-combined
        /// memory ([`Device::alloc_host_write_combined`]: the GPU reads a request
        /// without snooping it out of a CPU cache).
        pub fn new(dev: &Device, cfg: RingConfig) -> Result<Ring, GpuError> {
            Ring::allocate(dev, cfg, true)
        }

        /// [`Ring::new`] with the request slots in ordinary (cached) mapped memory, for
        /// comparison.
        pub fn with_cached_requests(dev: &Device, cfg: RingConfig) -> Result<Ring, GpuError> {
            Ring::allocate(dev, cfg, false)
        }

        fn allocate(dev: &Device, cfg: RingConfig, write_combined: bool) -> Result<Ring, GpuError> {
            let slots = cfg.slots.max(1) as usize;
            let cfg = RingConfig {
                slots: slots as u32,
                ..cfg
            };
            let req_len = slots * request_slot_words(cfg.req_words);
            let mut ring = Ring {
                cfg,
                req: if write_combined {
                    dev.alloc_host_write_combined(req_len)?
                } else {
                    dev.alloc_host(req_len)?
                },
                resp: dev.alloc_host(slots * response_slot_words(cfg.resp_words))?,
                ctl: dev.alloc(CTL_WORDS)?,
                bcast: dev.alloc(request_slot_words(cfg.req_words))?,
                stamps: None,
                report_stamps: false,
            };
            let rounds = std::env::var(STAMPS_ENV)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if rounds > 0 {
                let stamps = Arc::new(dev.alloc::<u64>(rounds.saturating_mul(STAMP_WORDS))?);
                ring.set_stamps(dev, &stamps)?;
                ring.report_stamps = true;
            }
            Ok(ring)
        }

        pub fn config(&self) -> RingConfig {
            self.cfg
        }

        /// Makes the kernel write stage stamps (ns, see [`STAMP_WORDS`]) of its first
        /// `stamps.len() / STAMP_WORDS` rounds into `stamps` (zeroed device memory). The
        /// ring keeps a clone of `stamps` (so does the kernel's handle, which owns the
        /// ring): read them once the kernel has stopped.
        pub fn set_stamps(
            &mut self,
            dev: &Device,
            stamps: &Arc<Buffer<u64>>,
        ) -> Result<(), GpuError> {
            let addr = match stamps.arg() {
                Arg::Ptr(p) | Arg::U64(p) => p,
                _ => 0,
            };
            let rounds = (stamps.len() / STAMP_WORDS) as u32;
            dev.write(
                &mut self.ctl,
                CTL_STAMPS,
                &[addr as u32, (addr >> 32) as u32, rounds],
            )?;
            self.stamps = Some(Arc::clone(stamps));
            dev.synchronize()
        }

        /// The kernel's first seven arguments ([`DeviceRing`](super::DeviceRing)'s fields).
        pub fn args(&self) -> [Arg; 7] {
            [
                self.req.arg(),
                self.resp.arg(),
                self.ctl.arg(),
                self.bcast.arg(),
                self.cfg.slots.into(),
                self.cfg.req_words.into(),
                self.cfg.resp_words.into(),
            ]
        }
    }

    /// How often a spinning [`Persistent::wait`] asks whether the kernel still runs.
    const CHECK_EVERY: Duration = Duration::from_millis(1);

    /// How the kernel runs: a host thread running the emulator, or a GPU stream.
    pub(crate) enum Runner {
        /// The emulator's thread (`None` once joined).
        Emu(Option<std::thread::JoinHandle<Result<(), GpuError>>>),
        #[cfg(feature = "cuda")]
        Gpu(crate::cuda::PersistentStream),
    }

    impl Runner {
        /// `None` while the kernel runs; its outcome once it has ended.
        fn poll(&mut self, kernel: &'static str) -> Option<Result<(), GpuError>> {
            match self {
                Runner::Emu(slot) => {
                    if slot.as_ref().is_some_and(|h| !h.is_finished()) {
                        return None;
                    }
                    Some(slot.take().map_or(Ok(()), |h| {
                        h.join().unwrap_or_else(|_| {
                            Err(GpuError::Kernel {
                                kernel,
                                message: "the emulator's thread panicked".into(),
                            })
                        })
                    }))
                }
                #[cfg(feature = "cuda")]
                Runner::Gpu(s) => s.poll(kernel),
            }
        }
    }

    /// A running persistent kernel and its ring (see the [module](super)'s documentation).
    ///
    /// [`submit`](Persistent::submit) writes a request into the next slot;
    /// [`wait`](Persistent::wait) returns the oldest answer, or an error after the
    /// timeout (a stuck or failed kernel is an error, never a hang). Requests are served
    /// in order, at most `slots` in flight. While it lives, the GPU busy-waits for
    /// requests; dropping it (or [`stop`](Persistent::stop)) stops the kernel and
    /// frees the GPU.
    pub struct Persistent {
        kernel: &'static str,
        ring: Ring,
        runner: Option<Runner>,
        timeout: Duration,
        /// Number of the next request (from 1).
        next: u64,
        /// Number of the oldest request not yet answered.
        oldest: u64,
        /// The kernel failed or stopped: its outcome, reported by every later call.
        ended: Option<String>,
        response: Vec<u64>,
        /// A request's payload on its way into the slot's pairs.
        scratch: Vec<u64>,
        /// The owners of the memory the kernel's arguments point into (typed launches:
        /// [`PersistParam`]): dropped after the kernel has ended (fields drop after
        /// [`Drop::drop`], which stops it), leaked with the ring when it cannot be
        /// stopped ([`Persistent::abandon`]).
        kept: Vec<Kept>,
    }

    /// One answer: the request's number, the kernel's status and payload.
    #[derive(Clone, Copy, Debug)]
    pub struct Response<'a> {
        pub seq: u64,
        pub status: u32,
        pub words: &'a [u64],
    }

    /// The host's side of a spin for an answer: the clock every 64 turns, the driver (a
    /// stream query, which would delay the answer's pickup by a microsecond) at most
    /// every [`CHECK_EVERY`], and the handle's timeout.
    struct Spin {
        start: Instant,
        checked: Instant,
        turns: u32,
        emulated: bool,
    }

    impl Spin {
        fn new(emulated: bool) -> Spin {
            let start = Instant::now();
            Spin {
                start,
                checked: start,
                turns: 0,
                emulated,
            }
        }

        /// One turn of waiting for request `seq`'s answer: an error once the kernel has
        /// ended or the timeout has passed.
        fn turn(&mut self, p: &mut Persistent, seq: u64) -> Result<(), GpuError> {
            self.turns = self.turns.wrapping_add(1);
            if self.emulated || self.turns.is_multiple_of(64) {
                let now = Instant::now();
                if self.emulated || now.duration_since(self.checked) >= CHECK_EVERY {
                    self.checked = now;
                    p.check_running()?;
                }
                if now.duration_since(self.start) > p.timeout {
                    let m = format!(
                        "no answer to request {seq} after {:.1} s (the kernel is stuck, or \
                         the GPU is busy with other work)",
                        p.timeout.as_secs_f64()
                    );
                    return Err(p.error(m));
                }
            }
            if self.emulated {
                // The emulator's lanes need the host's cores more than this loop.
                std::thread::sleep(Duration::from_micros(20));
            } else {
                std::hint::spin_loop();
            }
            Ok(())
        }
    }

    impl Persistent {
        pub(crate) fn new(kernel: &'static str, ring: Ring, runner: Runner) -> Persistent {
            Persistent {
                kernel,
                ring,
                runner: Some(runner),
                timeout: Duration::from_secs(10),
                next: 1,
                oldest: 1,
                ended: None,
                response: Vec::new(),
                scratch: Vec::new(),
                kept: Vec::new(),
            }
        }

        /// How long [`wait`](Persistent::wait) and a full ring wait before they give up
        /// (10 s unless set).
        pub fn set_timeout(&mut self, timeout: Duration) {
            self.timeout = timeout;
        }

        pub fn config(&self) -> RingConfig {
            self.ring.cfg
        }

        /// The kernel's name.
        pub fn kernel(&self) -> &'static str {
            self.kernel
        }

        /// Requests submitted and not yet answered.
        pub fn in_flight(&self) -> usize {
            (self.next - self.oldest) as usize
        }

        /// Whether every slot holds a request in flight (then [`submit`](Persistent::submit)
        /// fails: [`wait`](Persistent::wait) first).
        pub fn is_full(&self) -> bool {
            self.in_flight() >= self.ring.cfg.slots as usize
        }

        fn error(&self, message: String) -> GpuError {
            GpuError::Persistent {
                kernel: self.kernel,
                message,
            }
        }

        /// Fails when the kernel has ended (stopped, or failed: its error).
        fn check_running(&mut self) -> Result<(), GpuError> {
            if let Some(m) = &self.ended {
                return Err(self.error(m.clone()));
            }
            let outcome = match self.runner.as_mut() {
                Some(r) => r.poll(self.kernel),
                None => Some(Ok(())),
            };
            match outcome {
                None => Ok(()),
                Some(Ok(())) => {
                    let m = "the kernel has stopped".to_string();
                    self.ended = Some(m.clone());
                    Err(self.error(m))
                }
                Some(Err(e)) => {
                    self.ended = Some(format!("the kernel failed: {e}"));
                    Err(e)
                }
            }
        }

        /// Submits a request of `kind` (not [`STOP`]) whose payload `fill` writes into
        /// the slot (`len` words, at most `req_words`); returns its number.
        pub fn submit_with(
            &mut self,
            kind: u32,
            len: usize,
            fill: impl FnOnce(&mut [u64]),
        ) -> Result<u64, GpuError> {
            if kind == STOP {
                return Err(self.error("kind u32::MAX is reserved for the stop request".into()));
            }
            self.submit_raw(kind, len, fill)
        }

        /// [`submit_with`](Persistent::submit_with) copying `payload`.
        pub fn submit(&mut self, kind: u32, payload: &[u64]) -> Result<u64, GpuError> {
            self.submit_with(kind, payload.len(), |w| w.copy_from_slice(payload))
        }

        fn submit_raw(
            &mut self,
            kind: u32,
            len: usize,
            fill: impl FnOnce(&mut [u64]),
        ) -> Result<u64, GpuError> {
            let cfg = self.ring.cfg;
            if len > cfg.req_words as usize {
                return Err(self.error(format!(
                    "a request of {len} words, the ring's slots hold {}",
                    cfg.req_words
                )));
            }
            if self.is_full() {
                return Err(self.error(format!(
                    "{} requests in flight fill the ring: wait for one first",
                    self.in_flight()
                )));
            }
            // A kernel that ended is reported here only when that is known already: asking
            // the driver (a stream query, about a microsecond) would lie on every request's
            // path. `wait` asks it, at most every `CHECK_EVERY` while it spins.
            if let Some(m) = &self.ended {
                return Err(self.error(m.clone()));
            }
            let seq = self.next;
            let stride = request_slot_words(cfg.req_words);
            let at = ((seq - 1) % cfg.slots as u64) as usize * stride;
            self.scratch.clear();
            self.scratch.resize(len, 0);
            fill(&mut self.scratch);
            // The kernel reads the slot while it runs: every access is an atomic one.
            let base = self.ring.req.host_ptr();
            // SAFETY: `at + i < at + stride <= len` words of the live mapped buffer (the
            // ring owns it while the kernel runs), 8-byte aligned; the kernel only reads
            // these words, and the host touches them through atomics only.
            let word = |i: usize| unsafe { AtomicU64::from_ptr(base.add(at + i)) };
            // The kernel read this slot's previous request before answering it, and that
            // answer was waited for (the ring is not full): the slot is ours to write.
            // The words, a full fence, the tags (`seq`), a full fence: a reader that sees
            // a pair's tag sees its word, and the fences also push the write-combining
            // buffers out to memory at once (a release store would do neither for
            // write-combined memory).
            let head = kind as u64 | (len as u64) << 32;
            for (i, &w) in std::iter::once(&head).chain(&self.scratch).enumerate() {
                word(2 * i + 1).store(w, Ordering::Relaxed);
            }
            fence(Ordering::SeqCst);
            for i in 0..=len {
                word(2 * i).store(seq, Ordering::Relaxed);
            }
            fence(Ordering::SeqCst);
            self.next += 1;
            Ok(seq)
        }

        /// Waits for the oldest request's answer (at most the timeout).
        pub fn wait(&mut self) -> Result<Response<'_>, GpuError> {
            if self.in_flight() == 0 {
                return Err(self.error("wait with no request in flight".into()));
            }
            let seq = self.oldest;
            let cfg = self.ring.cfg;
            let stride = response_slot_words(cfg.resp_words);
            let at = ((seq - 1) % cfg.slots as u64) as usize * stride;
            let mut spin = Spin::new(matches!(self.runner, Some(Runner::Emu(_))));
            let base = self.ring.resp.host_ptr();
            // SAFETY: `at + i < at + stride <= len` words of the live mapped buffer (the
            // ring owns it while the kernel runs), 8-byte aligned; the kernel writes them
            // while it runs, so the host reads them through atomics only.
            let word = |i: usize| unsafe { AtomicU64::from_ptr(base.add(at + i)) };
            // Pair `i` once its tag is `seq`: the kernel stores each pair in one 16-byte
            // store, so its word is new once its tag is (the acquire load of the tag
            // orders the word's load after it).
            let mut pair = |this: &mut Self, i: usize| -> Result<u64, GpuError> {
                while word(2 * i).load(Ordering::Acquire) != seq {
                    spin.turn(this, seq)?;
                }
                Ok(word(2 * i + 1).load(Ordering::Relaxed))
            };
            let head = pair(self, 0)?;
            let len = ((head >> 32) as usize).min(cfg.resp_words as usize);
            let mut words = std::mem::take(&mut self.response);
            words.clear();
            for j in 0..len {
                match pair(self, 1 + j) {
                    Ok(w) => words.push(w),
                    Err(e) => {
                        self.response = words;
                        return Err(e);
                    }
                }
            }
            self.response = words;
            self.oldest += 1;
            Ok(Response {
                seq,
                status: head as u32,
                words: &self.response,
            })
        }

        /// Stops the kernel in order (after the requests in flight, whose answers are
        /// dropped) and waits for it to end (at most the timeout).
        pub fn stop(mut self) -> Result<(), GpuError> {
            self.stop_inner()
        }

        fn stop_inner(&mut self) -> Result<(), GpuError> {
            if self.runner.is_none() {
                return Ok(());
            }
            if self.ended.is_none() {
                let start = Instant::now();
                while self.in_flight() > 0 {
                    if let Err(e) = self.wait() {
                        return self.abandon(e);
                    }
                }
                if let Err(e) = self.submit_raw(STOP, 0, |_| {}) {
                    return self.abandon(e);
                }
                loop {
                    let runner = self.runner.as_mut().expect("checked above");
                    match runner.poll(self.kernel) {
                        None if start.elapsed() > self.timeout => {
                            let e = self.error(format!(
                                "did not stop within {:.1} s",
                                self.timeout.as_secs_f64()
                            ));
                            return self.abandon(e);
                        }
                        None => std::thread::sleep(Duration::from_micros(50)),
                        Some(r) => {
                            self.runner = None;
                            self.ended = Some("the kernel has stopped".into());
                            if let Some(st) = self
                                .ring
                                .stamps
                                .as_ref()
                                .filter(|_| self.ring.report_stamps)
                            {
                                match st.read_back() {
                                    Ok(v) => eprintln!(
                                        "persistent kernel `{}`: {}",
                                        self.kernel,
                                        StageTimes::from_stamps(&v)
                                    ),
                                    Err(e) => eprintln!(
                                        "persistent kernel `{}`: stage stamps not read: {e}",
                                        self.kernel
                                    ),
                                }
                            }
                            return r;
                        }
                    }
                }
            }
            // It ended before (it failed, or stopped): its outcome was reported then.
            self.runner = None;
            Ok(())
        }

        /// Stopping failed. When the kernel may still run, its memory (the ring, and the
        /// buffers a typed launch kept) is leaked: freeing it under a running kernel
        /// would turn a stuck kernel into memory corruption.
        fn abandon(&mut self, e: GpuError) -> Result<(), GpuError> {
            if let Some(mut r) = self.runner.take() {
                if r.poll(self.kernel).is_none() {
                    std::mem::forget(r);
                    let ring = std::mem::replace(&mut self.ring, Ring::dangling());
                    std::mem::forget(ring);
                    std::mem::forget(std::mem::take(&mut self.kept));
                }
            }
            self.ended = Some(format!("abandoned: {e}"));
            Err(e)
        }
    }

    impl Ring {
        /// A placeholder holding no memory (after [`Persistent::abandon`]).
        fn dangling() -> Ring {
            let dev = Device::emulator();
            let cfg = RingConfig {
                slots: 1,
                req_words: 0,
                resp_words: 0,
            };
            Ring::new(&dev, cfg).expect("a few bytes of host memory")
        }
    }

    impl Drop for Persistent {
        fn drop(&mut self) {
            if let Err(e) = self.stop_inner() {
                eprintln!("persistent kernel `{}`: {e}", self.kernel);
            }
        }
    }
}
