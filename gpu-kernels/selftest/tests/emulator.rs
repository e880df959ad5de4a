//! The self-test kernels on the emulator: the same code `harness selftest` runs on a GPU.

use gpu_kernels::{Device, GpuError, LaunchConfig};
use gpu_selftest::{run_all, Sizes};

#[test]
fn every_selftest_kernel_gives_the_known_answer_on_the_emulator() {
    let out = run_all(&Device::emulator(), Sizes::SMALL).expect("emulator launch");
    for o in &out {
        assert!(
            o.failure.is_none(),
            "{}: {}",
            o.name,
            o.failure.as_deref().unwrap_or("")
        );
    }
    assert_eq!(out.len(), 7);
}

#[test]
fn a_launch_with_the_wrong_argument_types_is_refused_before_running() {
    let dev = Device::emulator();
    let sums = dev.alloc::<u32>(1).unwrap();
    // block_sum takes (pointer, u32, pointer): pass a u64 where the u32 goes, through
    // the raw launch (the typed launcher would not compile).
    // SAFETY: the emulator decodes every argument before running a lane, and refuses
    // this launch there: nothing is dereferenced.
    let err = unsafe {
        dev.launch(
            &gpu_selftest_kernels::block_sum::KERNEL,
            LaunchConfig::blocks(1, 32, 128),
            &[sums.arg(), 5u64.into(), sums.arg()],
        )
    }
    .unwrap_err();
    assert!(
        matches!(
            err,
            GpuError::BadLaunch {
                kernel: "block_sum",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("parameter `n`"), "{err}");
}

gpu_kernels::kernel! {
    /// Thread 5 of block 1 indexes past a 4-element table (a trap on the GPU); the other
    /// threads wait at a barrier that thread 5 never reaches.
    fn out_of_bounds_in_one_lane(out: *mut u32) {
        let table = [1u32, 2, 3, 4];
        let (t, b) = (gpu_kernels::prelude::thread_idx_x(), gpu_kernels::prelude::block_idx_x());
        let i = if (b, t) == (1, 5) { 9 } else { t as usize % 4 };
        let v = table[i];
        gpu_kernels::prelude::sync_threads();
        *out = v;
    }
}

#[test]
fn a_panicking_lane_fails_the_launch_naming_kernel_block_and_thread() {
    let dev = Device::emulator();
    let out = dev.alloc::<u32>(1).unwrap();
    let err =
        out_of_bounds_in_one_lane::launch(&dev, LaunchConfig::blocks(3, 32, 0), &out).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            GpuError::Kernel {
                kernel: "out_of_bounds_in_one_lane",
                ..
            }
        ),
        "{msg}"
    );
    assert!(
        msg.contains("block [1, 0, 0] thread [5, 0, 0]") && msg.contains("index out of bounds"),
        "{msg}"
    );
}

#[test]
fn a_block_of_more_than_1024_threads_is_refused() {
    let dev = Device::emulator();
    let input = dev.upload(&[1u32; 64]).unwrap();
    let sums = dev.alloc::<u32>(1).unwrap();
    let err = gpu_selftest_kernels::block_sum::launch(
        &dev,
        LaunchConfig::blocks(1, 2048, 0),
        &input,
        64u32,
        &sums,
    )
    .unwrap_err();
    assert!(err.to_string().contains("at most 1024"), "{err}");
}

#[test]
fn device_buffers_round_trip_with_offsets() {
    let dev = Device::emulator();
    let mut b = dev.alloc::<u32>(10).unwrap();
    dev.write(&mut b, 3, &[7, 8, 9]).unwrap();
    assert_eq!(dev.read(&b).unwrap(), [0, 0, 0, 7, 8, 9, 0, 0, 0, 0]);
    let mut part = [0u32; 2];
    dev.read_into(&b, 4, &mut part).unwrap();
    assert_eq!(part, [8, 9]);
    assert_eq!(dev.allocated_bytes(), 40);
    dev.zero(&mut b).unwrap();
    assert_eq!(dev.read(&b).unwrap(), [0; 10]);
    drop(b);
    assert_eq!(dev.allocated_bytes(), 0);
}

#[test]
fn opening_a_gpu_without_a_driver_is_an_error_not_a_panic() {
    // CI has no GPU: this must come back as an error (on a GPU machine it may succeed).
    if let Err(e) = Device::gpu(0, gpu_selftest::PTX) {
        assert!(!e.to_string().is_empty());
    }
}
