//! The [`kernel!`] macro: one kernel body for the GPU and the emulator.

/// Defines GPU kernels whose bodies run unchanged on the GPU and on the host emulator.
///
/// ```ignore
/// kernel! {
///     /// docs
///     pub fn name(p: *const u32, n: u32) { /* body, implicitly unsafe */ }
/// }
/// ```
///
/// Parameters are raw pointers (`*const T`, `*mut T`) and scalars (`u32 i32 u64 i64 f32
/// f64`). On `nvptx64` each item becomes `#[no_mangle] pub unsafe extern "ptx-kernel"`.
/// On the host it becomes `pub unsafe fn name(..)` and a module `name` holding
/// `KERNEL: gpu_kernels::Kernel`, the descriptor that [`Device::launch`](crate::Device::launch)
/// takes: its name finds the PTX entry on the GPU, its `emu` function decodes the launch's
/// arguments (checking each one's type) and calls the body on the emulator.
#[macro_export]
macro_rules! kernel {
    ($(
        $(#[$meta:meta])*
        $vis:vis fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) { $($body:tt)* }
    )*) => {$(
        #[cfg(target_arch = "nvptx64")]
        $(#[$meta])*
        #[no_mangle]
        #[allow(clippy::too_many_arguments, clippy::missing_safety_doc)]
        $vis unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) {
            #[allow(unused_unsafe)]
            unsafe { $($body)* }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        $(#[$meta])*
        ///
        /// (Host build: call it through [`KERNEL`](self::$name::KERNEL) on an emulator
        /// launch, never directly: the prelude needs a lane context.)
        #[allow(clippy::too_many_arguments, clippy::missing_safety_doc, dead_code)]
        $vis unsafe fn $name($($arg: $ty),*) {
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
                    unsafe { super::$name($($arg),*) };
                }
                Ok(())
            }
        }
    )*};
}
