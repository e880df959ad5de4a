//! The [`kernel!`] macro: one kernel body for the GPU and the emulator.

/// Defines GPU kernels whose bodies run unchanged on the GPU and on the host emulator,
/// each with a typed launcher.
///
/// ```ignore
/// kernel! {
///     /// docs
///     pub fn name(p: *const u32, n: u32, out: *mut u32) { /* body, implicitly unsafe */ }
/// }
/// ```
///
/// Parameters are raw pointers (`*const T`, `*mut T`), scalars (`u32 i32 u64 i64 f32
/// f64`) and `#[repr(C)]` structs passed by value ([`KernelStruct`](crate::KernelStruct)).
/// On `nvptx64` each item becomes `#[no_mangle] pub unsafe extern "ptx-kernel"`. On the
/// host it becomes `pub unsafe fn name(..)` and a module `name` holding:
///
/// - `launch(dev, cfg, args..)`, the **typed launcher**: one argument per parameter,
///   typed by [`KernelParam::Host`](crate::KernelParam::Host): an
///   [`In<'_, T>`](crate::In) for `*const T` (pass `&buf` for a `Buffer<T>` or
///   `HostBuffer<T>`, or `buf.at(offset)`), an [`Out<'_, T>`](crate::Out) for `*mut T`
///   (`&buf` or `&mut buf` for a `Buffer<T>`, `&mut buf` for a `HostBuffer<T>`,
///   `buf.at_mut(offset)`), the scalar itself, the struct (`S::Host<'_>`). Element
///   types and const/mut are checked at compile time, and the buffers stay borrowed
///   until the launch is queued; it is a safe function.
/// - for a **persistent kernel** ([`persist`](crate::persist)), one whose first seven
///   parameters are its ring's, written exactly `req: *const u64, resp: *mut u64, ctl:
///   *mut u32, bcast: *mut u64, slots: u32, req_words: u32, resp_words: u32`:
///   `launch_persistent(dev, cfg, ring, blocks, args..)` instead of `launch`. The
///   [`Ring`](crate::persist::Ring) moves into the returned
///   [`Persistent`](crate::persist::Persistent) handle, and each further argument is
///   owned, typed by [`PersistParam::Owned`](crate::persist::PersistParam::Owned): an
///   `Arc<Buffer<T>>` for `*const T` and `*mut T` (pass `&arc` to keep a share, or a
///   `Buffer<T>` to move it in), the scalar, the struct (`S::Host<'static>`). The
///   handle keeps the buffers alive until it has stopped the kernel (and leaks them
///   when it cannot), and meanwhile the host cannot write them (no `&mut Buffer` out of
///   a shared `Arc`); the [`persist`](crate::persist) module says why owners and not
///   borrows. A safe function too.
/// - `KERNEL: gpu_kernels::Kernel`, the descriptor the unsafe raw launches
///   ([`Device::launch`](crate::Device::launch),
///   [`Device::launch_persistent`](crate::Device::launch_persistent)) take: its name
///   finds the PTX entry on the GPU, its `emu` function decodes the launch's arguments
///   (checking each one's kind) and calls the body on the emulator.
///
/// A wrong element type, or a read-only buffer for a written parameter, does not compile:
///
/// ```compile_fail,E0277
/// use gpu_kernels::{kernel, Device, LaunchConfig};
/// kernel! {
///     pub fn fill(out: *mut u32, n: u32) {}
/// }
/// fn main() {
///     let dev = Device::emulator();
///     let buf = dev.alloc::<u64>(4).unwrap();
///     // `out` is `*mut u32`: a `Buffer<u64>` is refused.
///     fill::launch(&dev, LaunchConfig::linear(4, 32), &buf, 4u32).unwrap();
/// }
/// ```
///
/// ```compile_fail,E0277
/// use gpu_kernels::{kernel, Device, LaunchConfig};
/// kernel! {
///     pub fn fill(out: *mut u32, n: u32) {}
///     pub fn copy(src: *const u32, dst: *mut u32) {}
/// }
/// fn main() {
///     let dev = Device::emulator();
///     let host = dev.alloc_host::<u32>(4).unwrap();
///     let a = dev.alloc::<u32>(4).unwrap();
///     // A device buffer may be written through a shared borrow...
///     copy::launch(&dev, LaunchConfig::linear(4, 32), &a, &a).unwrap();
///     // ...mapped host memory only through `&mut`: a shared borrow is refused.
///     fill::launch(&dev, LaunchConfig::linear(4, 32), &host, 4u32).unwrap();
/// }
/// ```
///
/// ```compile_fail,E0505
/// use gpu_kernels::{kernel, Device, LaunchConfig, In};
/// kernel! {
///     pub fn read(src: *const u32) {}
/// }
/// fn main() {
///     let dev = Device::emulator();
///     let a = dev.alloc::<u32>(4).unwrap();
///     let view: In<'_, u32> = a.at(1);
///     drop(a); // a view keeps its buffer borrowed: no launch on freed memory
///     read::launch(&dev, LaunchConfig::linear(4, 32), view).unwrap();
/// }
/// ```
///
/// The same launch with the right types runs:
///
/// ```
/// use gpu_kernels::{kernel, Device, LaunchConfig};
/// use gpu_kernels::prelude::*;
/// kernel! {
///     /// Thread i writes i into `out[i]` for i < n.
///     pub fn fill(out: *mut u32, n: u32) {
///         let i = global_id_x();
///         if i < n {
///             *out.add(i as usize) = i;
///         }
///     }
/// }
/// fn main() {
///     let dev = Device::emulator();
///     let mut host = dev.alloc_host::<u32>(4).unwrap();
///     fill::launch(&dev, LaunchConfig::linear(4, 32), &mut host, 4u32).unwrap();
///     dev.synchronize().unwrap(); // without it, `as_slice` panics
///     assert_eq!(host.as_slice(), &[0, 1, 2, 3]);
/// }
/// ```
///
/// A persistent kernel does not take borrowed buffers (it outlives the launch):
///
/// ```compile_fail,E0277
/// use gpu_kernels::persist::{self, Ring, RingConfig};
/// use gpu_kernels::{kernel, Device, LaunchConfig};
/// kernel! {
///     pub fn serve(
///         req: *const u64, resp: *mut u64, ctl: *mut u32, bcast: *mut u64,
///         slots: u32, req_words: u32, resp_words: u32, acc: *mut u64,
///     ) {}
/// }
/// fn main() {
///     let dev = Device::emulator();
///     let cfg = RingConfig { slots: 2, req_words: 4, resp_words: 1 };
///     let ring = Ring::new(&dev, cfg).unwrap();
///     let acc = dev.alloc::<u64>(1).unwrap();
///     let lc = LaunchConfig::blocks(1, 32, persist::shared_bytes(4));
///     // A borrow would end while the kernel still runs: refused.
///     let run = serve::launch_persistent(&dev, lc, ring, Some(2), &acc).unwrap();
///     drop(acc);
///     drop(run);
/// }
/// ```
///
/// It takes an owner: until the kernel has stopped, the handle keeps its share of the
/// buffer alive and the host cannot write it:
///
/// ```
/// use gpu_kernels::persist::{self, DeviceRing, Ring, RingConfig};
/// use gpu_kernels::prelude::*;
/// use gpu_kernels::{kernel, Device, LaunchConfig};
/// use std::sync::Arc;
/// kernel! {
///     /// Answers each request with its number of words plus `acc[0]`.
///     pub fn count(
///         req: *const u64, resp: *mut u64, ctl: *mut u32, bcast: *mut u64,
///         slots: u32, req_words: u32, resp_words: u32, acc: *const u64,
///     ) {
///         let ring = DeviceRing { req, resp, ctl, bcast, slots, req_words, resp_words };
///         persist::serve(&ring, dynamic_shared::<u64>(), |_| {}, |r, out| {
///             if thread_idx_x() == 0 {
///                 out.put(0, r.len as u64 + *acc);
///             }
///             (0, 1)
///         });
///     }
/// }
/// # fn main() -> Result<(), gpu_kernels::GpuError> {
/// let dev = Device::emulator();
/// let cfg = RingConfig { slots: 2, req_words: 4, resp_words: 1 };
/// let ring = Ring::new(&dev, cfg)?;
/// let ring_bytes = dev.allocated_bytes();
/// let mut acc = Arc::new(dev.upload(&[100u64])?);
/// let lc = LaunchConfig::blocks(1, 32, persist::shared_bytes(cfg.req_words));
/// let mut run = count::launch_persistent(&dev, lc, ring, Some(2), &acc)?;
/// assert!(Arc::get_mut(&mut acc).is_none()); // shared with the kernel: no writes
/// drop(acc); // the kernel's share keeps the buffer alive
/// assert_eq!(dev.allocated_bytes(), ring_bytes + 8);
/// run.submit(1, &[7, 8, 9])?;
/// assert_eq!(run.wait()?.words, &[103]);
/// run.stop()?; // the kernel has ended: the handle frees the ring and the buffer
/// assert_eq!(dev.allocated_bytes(), 0);
/// # Ok(()) }
/// ```
#[macro_export]
macro_rules! kernel {
    () => {};
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident ( $($params:tt)* ) { $($body:tt)* }
        $($rest:tt)*
    ) => {
        // The parameters twice: once matched against the ring's, once kept as written.
        $crate::__kernel_sig! {
            [$(#[$meta])*] [$vis] $name ( $($params)* ) ( $($params)* ) { $($body)* }
        }
        $crate::kernel! { $($rest)* }
    };
}

/// One kernel of [`kernel!`], sorted by its parameters: a persistent kernel (its first
/// seven parameters are its ring's) gets `launch_persistent`, any other `launch`.
#[doc(hidden)]
#[macro_export]
macro_rules! __kernel_sig {
    (
        [$($meta:tt)*] [$vis:vis] $name:ident
        (
            req: *const u64,
            resp: *mut u64,
            ctl: *mut u32,
            bcast: *mut u64,
            slots: u32,
            req_words: u32,
            resp_words: u32
            $(, $arg:ident : $ty:ty)* $(,)?
        )
        ( $($all:tt)* ) { $($body:tt)* }
    ) => {
        $crate::__kernel_item! {
            [$($meta)*] [$vis] $name ( $($all)* ) { $($body)* }
            launcher {
                /// The typed persistent launcher: launches the kernel serving `ring`
                /// (its first seven arguments), with `blocks` blocks (`None`: one per
                /// SM), every block resident at once, then one argument per further
                /// kernel parameter, owned (see [`kernel!`](gpu_kernels::kernel));
                /// returns the handle that feeds the kernel and keeps those arguments'
                /// buffers alive until it has stopped it. `cfg.grid` is ignored.
                #[allow(clippy::too_many_arguments, dead_code)]
                pub fn launch_persistent(
                    dev: &$crate::Device,
                    cfg: $crate::LaunchConfig,
                    ring: $crate::persist::Ring,
                    blocks: ::core::option::Option<u32>,
                    $($arg: impl $crate::ToParam<<$ty as $crate::persist::PersistParam>::Owned>),*
                ) -> ::core::result::Result<$crate::persist::Persistent, $crate::GpuError> {
                    let mut l = $crate::persist::PersistentLaunch::new(ring, KERNEL.params.len());
                    $(
                        <$ty as $crate::persist::PersistParam>::push($crate::ToParam::to_param($arg), &mut l);
                    )*
                    // SAFETY: the kernel's first parameters are the ring's (matched by
                    // `kernel!`), and every other argument was pushed by its parameter's
                    // own type, in order, with the owner of its memory.
                    unsafe { l.run(dev, &KERNEL, cfg, blocks) }
                }
            }
        }
    };
    (
        [$($meta:tt)*] [$vis:vis] $name:ident
        ( $($arg:ident : $ty:ty),* $(,)? )
        ( $($all:tt)* ) { $($body:tt)* }
    ) => {
        $crate::__kernel_item! {
            [$($meta)*] [$vis] $name ( $($all)* ) { $($body)* }
            launcher {
                /// The typed launcher (asynchronous on the GPU; the emulator runs the
                /// kernel to completion): one argument per kernel parameter, see
                /// [`kernel!`](gpu_kernels::kernel).
                #[allow(clippy::too_many_arguments, dead_code)]
                pub fn launch<'a>(
                    dev: &'a $crate::Device,
                    cfg: $crate::LaunchConfig,
                    $($arg: impl $crate::ToParam<<$ty as $crate::KernelParam>::Host<'a>>),*
                ) -> ::core::result::Result<(), $crate::GpuError> {
                    let mut l = $crate::Launch::new(dev, KERNEL.params.len());
                    $(
                        <$ty as $crate::KernelParam>::push($crate::ToParam::to_param($arg), &mut l);
                    )*
                    // SAFETY: every argument was pushed by its parameter's own type, in order.
                    unsafe { l.run(&KERNEL, cfg) }
                }
            }
        }
    };
}

/// One kernel of [`kernel!`]: the PTX entry, or on the host the function and its module
/// with the descriptor and the given launcher.
#[doc(hidden)]
#[macro_export]
macro_rules! __kernel_item {
    (
        [$($meta:tt)*] [$vis:vis] $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) { $($body:tt)* }
        launcher { $($launcher:tt)* }
    ) => {
        #[cfg(target_arch = "nvptx64")]
        $($meta)*
        #[no_mangle]
        #[allow(clippy::too_many_arguments, clippy::missing_safety_doc)]
        $vis unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) {
            // SAFETY: a kernel body is unsafe code whose contract the kernel's docs
            // state; its launchers (typed, or the unsafe raw launch) uphold it.
            #[allow(unused_unsafe)]
            unsafe { $($body)* }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        $($meta)*
        ///
        /// (Host build: call it through [`KERNEL`](self::$name::KERNEL) on an emulator
        /// launch, never directly: the prelude needs a lane context.)
        #[allow(clippy::too_many_arguments, clippy::missing_safety_doc, dead_code)]
        $vis unsafe fn $name($($arg: $ty),*) {
            // SAFETY: a kernel body is unsafe code whose contract the kernel's docs
            // state; its launchers (typed, or the unsafe raw launch) uphold it.
            #[allow(unused_unsafe)]
            unsafe { $($body)* }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        #[doc = concat!("Launch descriptor of the kernel [`", stringify!($name), "`](fn@", stringify!($name), ").")]
        $vis mod $name {
            #[allow(unused_imports)]
            use super::*;
            /// The descriptor [`Device::launch`](gpu_kernels::Device::launch) takes.
            pub const KERNEL: $crate::Kernel = $crate::Kernel {
                name: stringify!($name),
                params: &[$(stringify!($ty)),*],
                emu: run,
            };

            $($launcher)*

            #[allow(unused_mut, unused_variables)]
            fn run(args: &[$crate::Arg], call: bool) -> ::core::result::Result<(), $crate::__private::String> {
                let mut next = 0usize;
                $(
                    let $arg = <$ty as $crate::KernelParam>::decode(args, &mut next, stringify!($arg))?;
                )*
                if next != args.len() {
                    return Err($crate::__private::format!("{} arguments given, the kernel takes {}", args.len(), next));
                }
                if call {
                    // SAFETY: the arguments decoded above have the parameters' types, and
                    // the launch's caller vouched for what they point to (`Device::launch`).
                    unsafe { super::$name($($arg),*) };
                }
                Ok(())
            }
        }
    };
}
