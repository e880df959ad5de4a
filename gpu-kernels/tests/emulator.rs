//! Emulator semantics a kernel can observe, each checked with a small kernel.

use gpu_kernels::prelude::*;
use gpu_kernels::{Device, LaunchConfig};

kernel! {
    /// Every thread writes its (x, y, z) thread and block ids at its global linear index.
    fn ids_3d(out: *mut u32) {
        let bx = block_idx_x() + grid_dim_x() * (block_idx_y() + grid_dim_y() * block_idx_z());
        let per_block = block_dim_x() * block_dim_y() * block_dim_z();
        let i = (bx * per_block + thread_rank()) as usize * 6;
        let v = [thread_idx_x(), thread_idx_y(), thread_idx_z(), block_idx_x(), block_idx_y(), block_idx_z()];
        for (k, x) in v.iter().enumerate() {
            *out.add(i + k) = *x;
        }
    }

    /// Thread 0 of each block reads the first shared word before anyone writes it
    /// (the emulator's poison), then every thread adds its rank into shared word 1, which
    /// thread 0 reports after a barrier: blocks must not see each other's shared memory.
    fn shared_is_per_block_and_poisoned(out: *mut u32) {
        let s = dynamic_shared::<u32>();
        if thread_rank() == 0 {
            *out.add(2 * block_idx_x() as usize) = *s;
            *s.add(1) = 0;
        }
        sync_threads();
        atomic_add(s.add(1), thread_rank());
        sync_threads();
        if thread_rank() == 0 {
            *out.add(2 * block_idx_x() as usize + 1) = *s.add(1);
        }
    }

    /// any/all/shfl_up and the remaining atomics.
    fn warp_and_atomics(out: *mut u32, cell: *mut u32) {
        let l = lane_id();
        let o = out.add(4 * global_id_x() as usize);
        *o = any_sync(l == 31) as u32 | ((all_sync(l < 32) as u32) << 1) | ((all_sync(l < 31) as u32) << 2);
        *o.add(1) = shfl_up(l, 3);
        *o.add(2) = warp_id();
        atomic_min(cell, 1000 + global_id_x());
        atomic_sub(cell.add(1), 1);
        atomic_xor(cell.add(2), 1 << (global_id_x() % 32));
        atomic_and(cell.add(3), !(1 << (global_id_x() % 32)));
        let mut seen = *cell.add(4);
        loop {
            let old = atomic_cas(cell.add(4), seen, seen + 2);
            if old == seen {
                break;
            }
            seen = old;
        }
        *o.add(3) = atomic_exch(cell.add(5), 7);
    }
}

#[test]
fn thread_and_block_ids_cover_a_3d_launch_exactly_once() {
    let dev = Device::emulator();
    let (grid, block) = ([2, 3, 2], [4, 2, 3]);
    let n = 12 * 24;
    let out = dev.alloc::<u32>(6 * n).unwrap();
    ids_3d::launch(
        &dev,
        LaunchConfig {
            grid,
            block,
            shared_bytes: 0,
        },
        &out,
    )
    .unwrap();
    let v = dev.read(&out).unwrap();
    let mut seen = std::collections::HashSet::new();
    for c in v.chunks(6) {
        assert!(
            c[0] < 4 && c[1] < 2 && c[2] < 3 && c[3] < 2 && c[4] < 3 && c[5] < 2,
            "{c:?}"
        );
        assert!(seen.insert(c.to_vec()), "{c:?} twice");
    }
    assert_eq!(seen.len(), n);
}

#[test]
fn shared_memory_is_private_to_each_block_and_poisoned_before_it() {
    let dev = Device::emulator();
    let out = dev.alloc::<u32>(8).unwrap();
    shared_is_per_block_and_poisoned::launch(&dev, LaunchConfig::blocks(4, 64, 8), &out).unwrap();
    let v = dev.read(&out).unwrap();
    let rank_sum: u32 = (0..64).sum();
    for b in 0..4 {
        assert_eq!(
            v[2 * b],
            0xCDCD_CDCD,
            "block {b} saw shared memory it did not write"
        );
        assert_eq!(v[2 * b + 1], rank_sum, "block {b}");
    }
}

#[test]
fn vote_shfl_up_and_every_atomic_agree_with_cuda() {
    let dev = Device::emulator();
    let n = 64usize;
    let out = dev.alloc::<u32>(4 * n).unwrap();
    let cell = dev.upload(&[u32::MAX, 100, 0, u32::MAX, 0, 0]).unwrap();
    warp_and_atomics::launch(&dev, LaunchConfig::blocks(1, n as u32, 0), &out, &cell).unwrap();
    let v = dev.read(&out).unwrap();
    for t in 0..n {
        let l = (t % 32) as u32;
        assert_eq!(v[4 * t], 0b011, "vote bits of thread {t}");
        assert_eq!(
            v[4 * t + 1],
            if l < 3 { l } else { l - 3 },
            "shfl_up of thread {t}"
        );
        assert_eq!(v[4 * t + 2], t as u32 / 32, "warp_id of thread {t}");
    }
    let zeros = (0..n).filter(|t| v[4 * t + 3] == 0).count();
    assert_eq!(
        zeros, 1,
        "exactly one thread finds the initial value of an exchanged cell"
    );
    assert!((0..n).all(|t| matches!(v[4 * t + 3], 0 | 7)));
    // 64 threads: each bit XORed twice -> 0; each bit cleared -> 0; cas loop adds 2 per thread.
    assert_eq!(dev.read(&cell).unwrap(), [1000, 36, 0, 0, 128, 7]);
}
