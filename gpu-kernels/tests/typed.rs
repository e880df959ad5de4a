//! Typed launches: views at offsets, one device buffer passed twice, and the guard on
//! mapped host memory that a kernel may still be using.

use gpu_kernels::prelude::*;
use gpu_kernels::{Device, LaunchConfig};

kernel! {
    /// Thread i < n writes `src[i] + add` into `dst[i]`.
    fn add_into(src: *const u32, dst: *mut u32, n: u32, add: u32) {
        let i = global_id_x();
        if i < n {
            *dst.add(i as usize) = *src.add(i as usize) + add;
        }
    }
}

#[test]
fn views_at_offsets_launch_on_the_sub_ranges_they_name() {
    let dev = Device::emulator();
    let src = dev.upload(&[1u32, 2, 3, 4, 5, 6]).unwrap();
    let dst = dev.alloc::<u32>(6).unwrap();
    add_into::launch(
        &dev,
        LaunchConfig::linear(3, 32),
        src.at(2),
        dst.at_mut(1),
        3,
        10,
    )
    .unwrap();
    assert_eq!(dev.read(&dst).unwrap(), [0, 13, 14, 15, 0, 0]);
}

#[test]
fn one_device_buffer_may_be_read_and_written_by_the_same_launch() {
    let dev = Device::emulator();
    let buf = dev.upload(&[1u32, 2, 3, 4]).unwrap();
    // In place: every thread reads and writes its own element.
    add_into::launch(&dev, LaunchConfig::linear(4, 32), &buf, &buf, 4, 100).unwrap();
    assert_eq!(dev.read(&buf).unwrap(), [101, 102, 103, 104]);
}

#[test]
fn a_mapped_buffer_written_by_a_kernel_is_readable_after_synchronize() {
    let dev = Device::emulator();
    let src = dev.upload(&[7u32, 8]).unwrap();
    let mut out = dev.alloc_host::<u32>(2).unwrap();
    add_into::launch(&dev, LaunchConfig::linear(2, 32), &src, &mut out, 2, 1).unwrap();
    dev.synchronize().unwrap();
    assert_eq!(out.as_slice(), [8, 9]);
    // A read of a device buffer waits for the device too.
    add_into::launch(&dev, LaunchConfig::linear(2, 32), &src, &mut out, 2, 2).unwrap();
    dev.read(&src).unwrap();
    assert_eq!(out.as_mut_slice(), [9, 10]);
}

#[test]
#[should_panic(expected = "call Device::synchronize after the launch first")]
fn reading_a_mapped_buffer_a_launch_may_still_write_panics_even_on_the_emulator() {
    let dev = Device::emulator();
    let src = dev.upload(&[7u32, 8]).unwrap();
    let mut out = dev.alloc_host::<u32>(2).unwrap();
    add_into::launch(&dev, LaunchConfig::linear(2, 32), &src, &mut out, 2, 1).unwrap();
    let _ = out.as_slice()[0];
}

#[test]
#[should_panic(expected = "call Device::synchronize after the launch first")]
fn writing_a_mapped_buffer_a_launch_may_still_read_panics() {
    let dev = Device::emulator();
    let mut input = dev.alloc_host::<u32>(2).unwrap();
    let dst = dev.alloc::<u32>(2).unwrap();
    add_into::launch(&dev, LaunchConfig::linear(2, 32), &input, &dst, 2, 1).unwrap();
    input.as_mut_slice()[0] = 3;
}
