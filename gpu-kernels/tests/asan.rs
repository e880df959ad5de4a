//! A deliberate out-of-bounds raw-pointer access in a kernel, which the emulator's own
//! checks cannot see (it does not go through the prelude's `load`/`store`): CI's
//! AddressSanitizer run (`.ci/asan`) runs this ignored test and expects ASan to stop it
//! with a heap-buffer-overflow report. Without ASan the read is undefined behaviour that
//! usually goes unnoticed, which is why it is ignored in normal runs.

use gpu_kernels::prelude::*;
use gpu_kernels::{Device, LaunchConfig};

kernel! {
    /// `dst[i] = src[i + 1]` with raw pointers: thread `n - 1` reads one past the end.
    fn raw_read_one_past_the_end(dst: *mut u32, src: *const u32, n: u32) {
        let i = global_id_x() as usize;
        if i < n as usize {
            *dst.add(i) = core::ptr::read_volatile(src.add(i + 1));
        }
    }
}

#[test]
#[ignore = "undefined behaviour on purpose: run under AddressSanitizer by .ci/asan, which expects it to fail"]
fn asan_stops_an_out_of_bounds_raw_pointer_read_in_a_kernel() {
    let dev = Device::emulator();
    let src = dev.upload(&[1u32, 2, 3, 4]).unwrap();
    let dst = dev.alloc::<u32>(4).unwrap();
    raw_read_one_past_the_end::launch(&dev, LaunchConfig::blocks(1, 4, 0), &dst, &src, 4).unwrap();
    // Reached only without ASan.
    eprintln!("read past the end: {:?}", dev.read(&dst).unwrap());
}
