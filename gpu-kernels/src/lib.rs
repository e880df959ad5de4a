//! Rust GPU kernels, written once, run on the GPU and on the host.
//!
//! `gpu-kernels` plays the roles that `cuda_std` and `cuda_builder` play in Rust-CUDA
//! (which cannot be built on our machines; `../shared/GPU.md` says why), on top of
//! rustc's own `nvptx64-nvidia-cuda` target and `cudarc`:
//!
//! | module | role | target |
//! | --- | --- | --- |
//! | [`prelude`] | device intrinsics: thread ids, barriers, shared memory, atomics, warp ops, and the [`kernel!`] macro | GPU and host |
//! | [`emu`] | the host SIMT emulator that runs kernels on CPU threads, CUDA semantics included | host |
//! | [`build`] | the build-time PTX builder a crate's `build.rs` calls | host (build scripts) |
//! | [`Device`] | one API over the GPU (cudarc) and the emulator: buffers, copies, launches, timing, [`Recording`]s of launches replayed as one call (CUDA graphs) | host |
//! | [`multi`] | many devices in one host: [`multi::Devices`], one host thread per device, and the partition helpers | host |
//! | [`Queue`] | queues of copies beside a device's stream, and [`Signal`]s between them and the host | host |
//! | [`crew`] | host work in parts around a device wait: pool threads gathered before the wait, the caller working from the start | host |
//! | [`persist`] | persistent kernels: a ring of requests in mapped host memory, served by a resident grid | GPU and host |
//!
//! A kernel is written once, `kernel! { pub fn name(args) { body } }` in a `#![no_std]`
//! kernel crate; on `nvptx64` it is an `extern "ptx-kernel"` entry, on the host a function
//! plus a module `name` with the typed launcher `name::launch`, which runs it on either
//! backend (a persistent kernel, whose first parameters are its ring's, gets
//! `name::launch_persistent` instead: see [`persist`]; and the descriptor `name::KERNEL`
//! of the unsafe raw [`Device::launch`]), so
//! the engine that drives the kernels is written once too. See `gpu-kernels/selftest`
//! for a complete example and the crate README for the toolchain.
//!
//! A kernel (here defined in place; a real one lives in its kernel crate, compiled to
//! PTX by `build.rs`), launched on the emulator and checked against the CPU:
//!
//! ```
//! use gpu_kernels::prelude::*;
//! use gpu_kernels::{kernel, Device, LaunchConfig};
//!
//! kernel! {
//!     /// SAXPY: thread i computes `y[i] = a * x[i] + y[i]` for i < n.
//!     pub fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u32) {
//!         let i = global_id_x();
//!         if i < n {
//!             let i = i as usize;
//!             store(y, i, a * load(x, i) + load(y, i)); // bounds-checked on the emulator
//!         }
//!     }
//! }
//!
//! # fn main() -> Result<(), gpu_kernels::GpuError> {
//! let (xs, ys): (Vec<f32>, Vec<f32>) = (0..100).map(|i| (i as f32, 1.0)).unzip();
//! let dev = Device::emulator(); // or Device::gpu(0, my_kernels::PTX)?
//! let x = dev.upload(&xs)?;
//! let mut y = dev.upload(&ys)?;
//! // Typed: `x` must be a buffer of f32 (`In`), `y` one the kernel may write (`Out`).
//! saxpy::launch(&dev, LaunchConfig::linear(100, 32), 2.0, &x, &mut y, 100)?;
//! let want: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| 2.0 * x + y).collect();
//! assert_eq!(dev.read(&y)?, want);
//! # Ok(()) }
//! ```
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        stdarch_nvptx,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem,
        link_llvm_intrinsics,
        asm_experimental_arch
    )
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

#[cfg(not(target_arch = "nvptx64"))]
pub mod crew;
mod macros;
#[cfg(not(target_arch = "nvptx64"))]
pub mod multi;
pub mod params;
#[cfg(not(target_arch = "nvptx64"))]
mod part_threads;
pub mod persist;
pub mod prelude;
#[cfg(not(target_arch = "nvptx64"))]
mod queue;

#[cfg(not(target_arch = "nvptx64"))]
pub mod build;
#[cfg(all(not(target_arch = "nvptx64"), feature = "cuda"))]
mod cuda;
#[cfg(not(target_arch = "nvptx64"))]
mod device;
#[cfg(not(target_arch = "nvptx64"))]
pub mod emu;

#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
pub use device::Launch;
#[cfg(not(target_arch = "nvptx64"))]
pub use device::{
    Arg, Buffer, Device, GpuError, HostBuffer, In, Kernel, KernelParam, LaunchConfig, Mark, Out,
    Recording, StructArg, ToParam,
};
pub use params::{DevPtr, DevPtrMut, KernelStruct};
#[cfg(not(target_arch = "nvptx64"))]
pub use queue::{Queue, Ramp, Signal, Stager};

/// What the [`kernel!`] macro's host expansion needs from `std` (kernel crates are `no_std`).
#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
pub mod __private {
    pub use std::format;
    pub use std::string::String;
}
