//! What the emulator finds that a GPU would hide: inter-block races (seeded block order),
//! barriers and warp operations reached from two call sites, hangs (reported within
//! seconds, with each thread's location), out-of-bounds accesses through the prelude's
//! `load`/`store`/`device_slice` and through a parameter struct's `DevPtr::read` /
//! `DevPtrMut::write`.

use gpu_kernels::emu::{with_schedule, Schedule};
use gpu_kernels::prelude::*;
use gpu_kernels::{DevPtr, DevPtrMut, Device, GpuError, KernelStruct, LaunchConfig};
use std::time::{Duration, Instant};

/// The parameters of [`struct_shifted_copy`].
#[repr(C)]
#[derive(Clone, Copy)]
struct ShiftedCopy<'a> {
    dst: DevPtrMut<'a, u32>,
    src: DevPtr<'a, u32>,
    n: u32,
    shift: u32,
}

// SAFETY: `#[repr(C)]`; device pointers and integers; `Host<'a>` differs only in the
// lifetime.
unsafe impl KernelStruct for ShiftedCopy<'static> {
    type Host<'a> = ShiftedCopy<'a>;
}

kernel! {
    /// `shifted_copy` through a parameter struct: thread `i < n` writes `dst[i] =
    /// src[i + shift]` with the struct's typed pointers.
    fn struct_shifted_copy(p: ShiftedCopy<'static>) {
        let i = global_id_x() as usize;
        if i < p.n as usize {
            p.dst.write(i, p.src.read(i + p.shift as usize));
        }
    }
}

kernel! {
    /// A bug: block `b > 0` assumes block `b - 1` ran before it (blocks are unordered
    /// on a GPU). Thread 0 of block `b` writes `chain[b] = chain[b - 1] + 1`, block 0
    /// writes 1: right only when the blocks run in index order.
    fn chain_across_blocks(chain: *mut u32) {
        if thread_rank() == 0 {
            let b = block_idx_x() as usize;
            let prev = if b == 0 { 0 } else { volatile_load_u32(chain.add(b - 1)) };
            volatile_store_u32(chain.add(b), prev + 1);
        }
    }

    /// Even threads and odd threads reach `sync_threads` from two different lines.
    fn barrier_in_divergent_branches(out: *mut u32) {
        let r = thread_rank() as usize;
        if r.is_multiple_of(2) {
            *out.add(r) = 1;
            sync_threads();
        } else {
            sync_threads();
            *out.add(r) = 2;
        }
    }

    /// The low half of the warp votes on one line, the high half on another.
    fn ballot_in_divergent_branches(out: *mut u32) {
        let v = if lane_id() < 16 { ballot(true) } else { ballot(false) };
        *out.add(thread_rank() as usize) = v;
    }

    /// Thread 0 spins on a flag nothing sets; the others wait for it at the barrier.
    fn spin_on_a_flag_nobody_sets(flag: *const u32) {
        if thread_rank() == 0 {
            while volatile_load_u32(flag) == 0 {
                spin_pause();
            }
        }
        sync_threads();
    }

    /// `dst[i] = src[i + shift]` through the checked helpers, for `i < n`.
    fn shifted_copy(dst: *mut u32, src: *const u32, n: u32, shift: u32) {
        let i = global_id_x();
        if i < n {
            store(dst, i as usize, load(src, (i + shift) as usize));
        }
    }

    /// Sums `src[..n]` through a `device_slice` into `dst[0]` (thread 0).
    fn slice_sum(dst: *mut u32, src: *const u32, n: u32) {
        if thread_rank() == 0 {
            let s = device_slice(src, n as usize);
            *dst = s.iter().sum();
        }
    }

    /// Each thread stores its rank at shared word `rank + shift` (`shared_bytes` = 4 per thread).
    fn shared_store(shift: u32) {
        store(dynamic_shared::<u32>(), (thread_rank() + shift) as usize, thread_rank());
    }
}

fn kernel_message(r: Result<(), GpuError>) -> String {
    match r {
        Err(GpuError::Kernel { message, .. }) => message,
        other => panic!("expected a kernel failure, got {other:?}"),
    }
}

fn run_chain(dev: &Device, blocks: u32) -> Vec<u32> {
    let chain = dev.alloc::<u32>(blocks as usize).unwrap();
    chain_across_blocks::launch(dev, LaunchConfig::blocks(blocks, 32, 0), &chain).unwrap();
    dev.read(&chain).unwrap()
}

#[test]
fn an_inter_block_race_is_hidden_by_sequential_blocks_and_caught_under_some_seed() {
    let dev = Device::emulator();
    let blocks = 8;
    let right: Vec<u32> = (1..=blocks).collect();
    // The old emulator (blocks in index order) hides the bug.
    let seq = with_schedule(Schedule::Sequential, || run_chain(&dev, blocks));
    assert_eq!(seq, right, "sequential blocks run in index order");
    // A seeded block order exposes it: some seed among the first few gives a wrong chain.
    let caught = (0..8u64).find(|&seed| {
        let got = with_schedule(Schedule::Concurrent { seed, blocks: 2 }, || {
            run_chain(&dev, blocks)
        });
        got != right
    });
    assert!(
        caught.is_some(),
        "no seed of 0..8 ran the blocks out of order"
    );
}

#[test]
fn a_seed_gives_the_same_block_order_every_time_with_one_block_at_a_time() {
    // One block at a time, shuffled: the result depends on the seed only.
    let dev = Device::emulator();
    let s = Schedule::Concurrent { seed: 3, blocks: 1 };
    let a = with_schedule(s, || run_chain(&dev, 8));
    let b = with_schedule(s, || run_chain(&dev, 8));
    assert_eq!(a, b);
    assert_ne!(a, (1..=8).collect::<Vec<u32>>(), "seed 3 shuffles 8 blocks");
}

#[test]
fn with_schedule_sets_the_schedule_of_this_thread_and_restores_it() {
    let before = Schedule::current();
    with_schedule(Schedule::Sequential, || {
        assert_eq!(Schedule::current(), Schedule::Sequential);
        with_schedule(Schedule::Concurrent { seed: 9, blocks: 3 }, || {
            assert_eq!(
                Schedule::current(),
                Schedule::Concurrent { seed: 9, blocks: 3 }
            );
        });
        assert_eq!(Schedule::current(), Schedule::Sequential);
    });
    assert_eq!(Schedule::current(), before);
}

#[test]
fn a_barrier_reached_from_two_call_sites_fails_naming_both() {
    let dev = Device::emulator();
    let out = dev.alloc::<u32>(64).unwrap();
    let msg = kernel_message(barrier_in_divergent_branches::launch(
        &dev,
        LaunchConfig::blocks(2, 64, 0),
        &out,
    ));
    eprintln!("{msg}");
    assert!(msg.contains("divergent sync_threads"), "{msg}");
    let sites: std::collections::HashSet<&str> = msg
        .split_whitespace()
        .filter(|w| w.contains("emulator_checks.rs:"))
        .collect();
    assert_eq!(sites.len(), 2, "both call sites named: {msg}");
}

#[test]
fn warp_operations_reached_from_two_call_sites_fail_naming_both() {
    let dev = Device::emulator();
    let out = dev.alloc::<u32>(32).unwrap();
    let msg = kernel_message(ballot_in_divergent_branches::launch(
        &dev,
        LaunchConfig::blocks(1, 32, 0),
        &out,
    ));
    assert!(msg.contains("divergent warp operation"), "{msg}");
    assert_eq!(msg.matches("emulator_checks.rs:").count(), 2, "{msg}");
}

#[test]
fn a_hang_is_reported_within_seconds_with_each_threads_location() {
    for schedule in [Schedule::Sequential, Schedule::DEFAULT] {
        let dev = Device::emulator();
        let flag = dev.alloc::<u32>(1).unwrap();
        let t = Instant::now();
        let msg = with_schedule(schedule, || {
            kernel_message(spin_on_a_flag_nobody_sets::launch(
                &dev,
                LaunchConfig::blocks(2, 64, 0),
                &flag,
            ))
        });
        let took = t.elapsed();
        eprintln!("{schedule:?}, after {took:?}: {msg}");
        assert!(took < Duration::from_secs(10), "{schedule:?}: {took:?}");
        assert!(msg.contains("hang"), "{msg}");
        assert!(
            msg.contains("thread(s) [0, 0, 0]: spins (spin_pause), last at "),
            "{msg}"
        );
        assert!(
            msg.contains("thread(s) [1, 0, 0]..=[63, 0, 0]: waits at sync_threads, last at "),
            "{msg}"
        );
        assert!(msg.contains("emulator_checks.rs:"), "{msg}");
    }
}

#[test]
fn an_out_of_bounds_load_through_the_prelude_is_reported_with_the_allocation() {
    let dev = Device::emulator();
    let src = dev.upload(&[1u32, 2, 3, 4]).unwrap();
    let dst = dev.alloc::<u32>(4).unwrap();
    let launch = |shift: u32| {
        shifted_copy::launch(&dev, LaunchConfig::blocks(1, 4, 0), &dst, &src, 4, shift)
    };
    launch(0).unwrap();
    assert_eq!(dev.read(&dst).unwrap(), [1, 2, 3, 4]);
    let msg = kernel_message(launch(1));
    assert!(msg.contains("out-of-bounds load"), "{msg}");
    assert!(msg.contains("index 4 of 4-byte elements"), "{msg}");
    assert!(
        msg.contains("(16 bytes, 4 elements from the base)"),
        "{msg}"
    );
    assert!(msg.contains("emulator_checks.rs:"), "{msg}");
}

#[test]
fn an_out_of_bounds_store_into_shared_memory_is_reported() {
    let dev = Device::emulator();
    let cfg = LaunchConfig::blocks(2, 8, 32);
    shared_store::launch(&dev, cfg, 0).unwrap();
    let msg = kernel_message(shared_store::launch(&dev, cfg, 1));
    assert!(msg.contains("out-of-bounds store"), "{msg}");
    assert!(msg.contains("index 8 of 4-byte elements"), "{msg}");
    assert!(msg.contains("(32 bytes"), "{msg}");
}

#[test]
fn a_device_slice_longer_than_its_allocation_is_reported() {
    let dev = Device::emulator();
    let src = dev.upload(&[1u32, 2, 3]).unwrap();
    let dst = dev.alloc::<u32>(1).unwrap();
    let launch = |n: u32| slice_sum::launch(&dev, LaunchConfig::blocks(1, 1, 0), &dst, &src, n);
    launch(3).unwrap();
    assert_eq!(dev.read(&dst).unwrap(), [6]);
    let msg = kernel_message(launch(4));
    assert!(msg.contains("out-of-bounds device_slice"), "{msg}");
    assert!(msg.contains("indices 0..4"), "{msg}");
}

#[test]
fn a_load_through_a_freed_buffer_is_reported() {
    let dev = Device::emulator();
    // An odd size, so that no other test's buffer takes the freed memory meanwhile.
    let src = dev.upload(&[7u32; 1001]).unwrap();
    let dst = dev.alloc::<u32>(4).unwrap();
    let stale = src.arg();
    drop(src);
    // The typed launcher would not compile (the view borrows `src`): the raw launch.
    // SAFETY: deliberately not upheld for `stale`, whose memory the emulator's
    // allocation table no longer holds: the checked load refuses it before reading.
    let msg = kernel_message(unsafe {
        dev.launch(
            &shifted_copy::KERNEL,
            LaunchConfig::blocks(1, 4, 0),
            &[dst.arg(), stale, 4u32.into(), 0u32.into()],
        )
    });
    assert!(msg.contains("lies in no device allocation"), "{msg}");
}

#[test]
fn an_out_of_bounds_read_through_a_parameter_struct_is_reported_with_the_kernels_line() {
    let dev = Device::emulator();
    let src = dev.upload(&[1u32, 2, 3, 4]).unwrap();
    let dst = dev.alloc::<u32>(4).unwrap();
    let launch = |shift: u32| {
        let p = ShiftedCopy {
            dst: dst.dev_ptr_mut(),
            src: src.dev_ptr(),
            n: 4,
            shift,
        };
        struct_shifted_copy::launch(&dev, LaunchConfig::blocks(1, 4, 0), p)
    };
    launch(0).unwrap();
    assert_eq!(dev.read(&dst).unwrap(), [1, 2, 3, 4]);
    let msg = kernel_message(launch(1));
    assert!(msg.contains("out-of-bounds load"), "{msg}");
    assert!(msg.contains("index 4 of 4-byte elements"), "{msg}");
    assert!(msg.contains("emulator_checks.rs:"), "{msg}");
}
