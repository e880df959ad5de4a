//! Typed kernel parameters shared by the host and the kernels: `#[repr(C)]` parameter
//! structs ([`KernelStruct`]) and the typed device pointers they hold ([`DevPtr`],
//! [`DevPtrMut`]).
//!
//! A kernel with many parameters takes one struct by value instead of dozens of
//! positional scalars. On the GPU a by-value struct parameter lives in the kernel's
//! parameter space (the constant bank), exactly like the scalars it replaces, so a
//! kernel reading `p.n_filters` costs what reading a scalar `n_filters` did. On the host
//! the struct's bytes are handed to `cuLaunchKernel` as one parameter, and the emulator
//! rebuilds the struct from them after checking the type and the size.
//!
//! Device pointers inside a struct are [`DevPtr<'a, T>`] (read-only) and
//! [`DevPtrMut<'a, T>`] (read-write): 64-bit device addresses with their element type
//! and, on the host, the lifetime of the [`Buffer`](crate::Buffer) they were made from
//! (`buf.dev_ptr()`, `buf.dev_ptr_mut()`). A struct holding them is written with a
//! lifetime parameter, `Params<'a>`; the kernel declares `p: Params<'static>` and the
//! typed launcher takes `Params<'a>`, so the borrow checker keeps every buffer the
//! struct points into alive until the launch has been queued. (A buffer dropped after
//! an asynchronous launch is freed in stream order: see [`Buffer`](crate::Buffer).)
//! Mapped host memory ([`HostBuffer`](crate::HostBuffer)) is never put in a struct: it
//! is passed as a parameter of its own, so that the launch knows the kernel uses it.

use core::marker::PhantomData;

/// A `#[repr(C)]` struct a kernel takes by value as one parameter.
///
/// `Host<'a>` is the type the host builds: the same struct with its lifetime parameter
/// set to the buffers' borrow (`type Host<'a> = Params<'a>;` for `Params<'static>`), or
/// `Self` for a struct without one.
///
/// # Safety
/// The implementer promises that: the type is `#[repr(C)]` (or `#[repr(transparent)]`),
/// so that its layout is the same on the host and on `nvptx64`; its fields are only
/// integers, floats, `bool`s, arrays and structs of these, [`DevPtr`] and [`DevPtrMut`]
/// (no host pointers or references, whose addresses mean nothing on the GPU); every bit
/// pattern the host can build is a valid value for the kernel; and `Host<'a>` is the
/// same type up to lifetimes (same size, same layout), so that its bytes are a valid
/// `Self`.
pub unsafe trait KernelStruct: Copy + 'static {
    /// The struct as the host builds it, with the lifetime of the buffers it points into.
    type Host<'a>: Copy;
}

/// A read-only pointer to device memory holding `T`s, for a field of a [`KernelStruct`].
///
/// Made on the host from a [`Buffer`](crate::Buffer) (`buf.dev_ptr()`,
/// `buf.dev_ptr_at(offset)`), whose borrow `'a` it carries. On the GPU it is a 64-bit
/// address, the same bits as a `*const T` parameter.
#[repr(transparent)]
pub struct DevPtr<'a, T> {
    addr: u64,
    _t: PhantomData<&'a [T]>,
}

/// A read-write pointer to device memory holding `T`s, for a field of a [`KernelStruct`].
///
/// Made on the host from a [`Buffer`](crate::Buffer) (`buf.dev_ptr_mut()`,
/// `buf.dev_ptr_mut_at(offset)`): from a shared borrow, because device memory is never
/// referenced by Rust code on the host (the host copies in and out of it through the
/// [`Device`](crate::Device), in stream order), so that two fields, or two kernels, may
/// write the same buffer.
#[repr(transparent)]
pub struct DevPtrMut<'a, T> {
    addr: u64,
    _t: PhantomData<&'a [T]>,
}

macro_rules! dev_ptr_common {
    ($name:ident, $raw:ty) => {
        impl<T> Clone for $name<'_, T> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T> Copy for $name<'_, T> {}

        impl<T> core::fmt::Debug for $name<'_, T> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "{}({:#x})", stringify!($name), self.addr)
            }
        }

        impl<'a, T> $name<'a, T> {
            /// A null pointer: for a field the kernel does not read in this launch.
            pub const fn null() -> Self {
                $name {
                    addr: 0,
                    _t: PhantomData,
                }
            }

            /// Made from a device address by the host constructors of
            /// [`Buffer`](crate::Buffer) only.
            #[cfg(not(target_arch = "nvptx64"))]
            pub(crate) const fn from_addr(addr: u64) -> Self {
                $name {
                    addr,
                    _t: PhantomData,
                }
            }

            /// The same address as a pointer to `U`s (host side): for words laid at an
            /// aligned offset of a buffer of bytes, so that one copy fills both. Panics
            /// when the address is not aligned for `U`.
            #[cfg(not(target_arch = "nvptx64"))]
            pub fn cast<U>(self) -> $name<'a, U> {
                assert!(
                    self.addr.is_multiple_of(core::mem::align_of::<U>() as u64),
                    "cast: address {:#x} is not aligned for {}",
                    self.addr,
                    core::any::type_name::<U>()
                );
                $name {
                    addr: self.addr,
                    _t: PhantomData,
                }
            }

            /// The device address.
            pub const fn addr(self) -> u64 {
                self.addr
            }

            /// The raw pointer, for the kernel's body.
            #[inline(always)]
            pub fn ptr(self) -> $raw {
                self.addr as usize as $raw
            }

            /// A pointer to element `i` (kernel side).
            ///
            /// # Safety
            /// As `pointer::add`: `i` must stay inside the buffer the pointer was made
            /// from (one past its end at most).
            #[inline(always)]
            pub unsafe fn add(self, i: usize) -> $raw {
                // SAFETY: the caller keeps `i` inside the allocation.
                unsafe { self.ptr().add(i) }
            }

            /// Element `i` (kernel side): a plain load on the GPU, bounds-checked on the
            /// emulator against the buffer's allocation, as [`prelude::load`](crate::prelude::load).
            ///
            /// # Safety
            /// `i` must index an element of the buffer the pointer was made from, and no
            /// other thread may write that element concurrently (without an atomic).
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub unsafe fn read(self, i: usize) -> T
            where
                T: Copy,
            {
                // SAFETY: the caller's contract: `i` is in bounds (checked on the
                // emulator) and the element is not written concurrently.
                unsafe { crate::prelude::load(self.ptr() as *const T, i) }
            }
        }
    };
}
dev_ptr_common!(DevPtr, *const T);
dev_ptr_common!(DevPtrMut, *mut T);

impl<T> DevPtrMut<'_, T> {
    /// Writes element `i` (kernel side): a plain store on the GPU, bounds-checked on the
    /// emulator, as [`prelude::store`](crate::prelude::store).
    ///
    /// # Safety
    /// `i` must index an element of the buffer the pointer was made from, and no other
    /// thread may read or write that element concurrently (without an atomic).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn write(self, i: usize, v: T)
    where
        T: Copy,
    {
        // SAFETY: the caller's contract: `i` is in bounds (checked on the emulator) and
        // the element is this thread's alone.
        unsafe { crate::prelude::store(self.ptr(), i, v) }
    }
}

impl<'a, T> From<DevPtrMut<'a, T>> for DevPtr<'a, T> {
    fn from(p: DevPtrMut<'a, T>) -> Self {
        DevPtr {
            addr: p.addr,
            _t: PhantomData,
        }
    }
}
