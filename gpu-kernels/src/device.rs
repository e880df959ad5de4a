//! [`Device`]: one host API over the GPU and the emulator, so that an engine that
//! drives kernels is written once and runs on either.

use std::alloc::Layout;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::params::{DevPtr, DevPtrMut, KernelStruct};

/// Errors of the GPU and the emulator. Every variant says what to do or what broke.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no GPU: the CUDA driver library (libcuda.so) is not installed on this machine")]
    NoDriver,
    #[error("no GPU: device {ordinal} was asked for, {count} present")]
    NoDevice { ordinal: usize, count: usize },
    #[error("no device: a device set needs at least one (a GPU ordinal, or one emulated device)")]
    EmptyDeviceSet,
    #[error(
        "the PTX of these kernels was not built (nightly toolchain or its rust-src missing at build \
         time): run `rustup component add rust-src --toolchain nightly`, then rebuild"
    )]
    PtxNotBuilt,
    #[error("this binary was built without the `cuda` feature of gpu-kernels: no GPU support")]
    NoCudaSupport,
    #[error("CUDA driver: {what}: {message}")]
    Driver { what: String, message: String },
    #[error("out of GPU memory: {requested} bytes needed, {free} bytes free of {total}")]
    OutOfMemory {
        requested: usize,
        free: usize,
        total: usize,
    },
    #[error("kernel `{kernel}` not found in the loaded PTX module")]
    NoSuchKernel { kernel: &'static str },
    #[error("kernel `{kernel}`: bad launch: {message}")]
    BadLaunch {
        kernel: &'static str,
        message: String,
    },
    #[error("kernel `{kernel}` failed: {message}")]
    Kernel {
        kernel: &'static str,
        message: String,
    },
    #[error("persistent kernel `{kernel}`: {message}")]
    Persistent {
        kernel: &'static str,
        message: String,
    },
}

/// An untyped kernel argument: a buffer's address (plus offset), a scalar, or the bytes
/// of a [`KernelStruct`] passed by value.
///
/// Only the unsafe raw launches ([`Device::launch`], [`Device::launch_persistent`])
/// take these; the typed launcher `name::launch` that [`kernel!`](crate::kernel)
/// generates for each kernel builds them from typed values.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Ptr(u64),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    Struct(StructArg),
}

/// The bytes of a [`KernelStruct`] parameter and its type's name (checked by the
/// emulator). Built by the typed launchers only.
#[derive(Clone)]
pub struct StructArg {
    ty: &'static str,
    /// The struct's bytes, padding included (hence `MaybeUninit`).
    bytes: Box<[MaybeUninit<u8>]>,
}

impl StructArg {
    /// The struct's size in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }
    /// True for a zero-sized struct.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.bytes.as_ptr() as *const u8
    }
}

impl std::fmt::Debug for StructArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({} bytes)", self.ty, self.bytes.len())
    }
}

/// Two struct arguments are equal when they are the same bytes of the same type
/// (padding bytes, which may be uninitialised, are never compared: equal only when
/// they are the same allocation).
impl PartialEq for StructArg {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.bytes.as_ptr(), other.bytes.as_ptr())
    }
}

macro_rules! arg_from {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for Arg {
            fn from(x: $t) -> Arg { Arg::$v(x) }
        }
        // SAFETY: a scalar is passed as itself (`Arg::$v`), the value the kernel declares.
        unsafe impl KernelParam for $t {
            type Host<'a> = $t;
            fn decode(args: &[Arg], next: &mut usize, name: &str) -> Result<Self, String> {
                match take(args, next, name)? {
                    Arg::$v(x) => Ok(x),
                    other => Err(format!("parameter `{name}` is {}, got {other:?}", stringify!($t))),
                }
            }
            fn push<'a>(h: $t, l: &mut Launch<'a>)
            where
                $t: 'a,
            {
                l.args.push(Arg::$v(h));
            }
        }
    )*};
}
arg_from!(u32 => U32, i32 => I32, u64 => U64, i64 => I64, f32 => F32, f64 => F64);

fn take(args: &[Arg], next: &mut usize, name: &str) -> Result<Arg, String> {
    let a = args
        .get(*next)
        .cloned()
        .ok_or_else(|| format!("parameter `{name}` missing"))?;
    *next += 1;
    Ok(a)
}

/// A kernel parameter type: what the host passes for it (`Host`), how the emulator
/// decodes it from an [`Arg`] (with a type check), and how a typed launch encodes it.
///
/// | kernel parameter | the typed launcher takes |
/// | --- | --- |
/// | `*const T` | [`In<'_, T>`]: `&Buffer<T>`, `&HostBuffer<T>`, `buf.at(offset)` |
/// | `*mut T` | [`Out<'_, T>`]: `&Buffer<T>` or `&mut Buffer<T>`, `&mut HostBuffer<T>`, `buf.at_mut(offset)` |
/// | `u32 i32 u64 i64 f32 f64` | the scalar |
/// | a [`KernelStruct`] `S` | `S::Host<'_>` (the struct, borrowing the buffers it points into) |
///
/// # Safety
/// `push` must push exactly one [`Arg`] that the kernel's parameter of type `Self`
/// reads as a valid value (on the GPU and through `decode` on the emulator), and a
/// pointer only into memory that `Host<'a>` keeps alive for `'a`. Implemented by
/// `gpu-kernels` for the types above; a kernel crate implements [`KernelStruct`]
/// instead.
pub unsafe trait KernelParam: Sized {
    /// What the typed launcher takes for a parameter of this type.
    type Host<'a>
    where
        Self: 'a;
    /// Decodes the parameter `name` from `args[*next]` (emulator), advancing `next`.
    fn decode(args: &[Arg], next: &mut usize, name: &str) -> Result<Self, String>;
    /// Encodes the host value as the launch's next argument.
    fn push<'a>(h: Self::Host<'a>, l: &mut Launch<'a>)
    where
        Self: 'a;
}

// SAFETY: the launcher takes an `In<'a, T>`, made only from a live buffer of `T`s
// (or a view inside one), whose address it pushes.
unsafe impl<T> KernelParam for *const T {
    type Host<'a>
        = In<'a, T>
    where
        T: 'a;
    fn decode(args: &[Arg], next: &mut usize, name: &str) -> Result<Self, String> {
        match take(args, next, name)? {
            Arg::Ptr(p) => Ok(p as usize as *const T),
            other => Err(format!("parameter `{name}` is a pointer, got {other:?}")),
        }
    }
    fn push<'a>(h: In<'a, T>, l: &mut Launch<'a>)
    where
        T: 'a,
    {
        l.args.push(Arg::Ptr(h.addr));
        l.host.extend(h.stamp);
    }
}
// SAFETY: as for `*const T`, with an `Out<'a, T>` (device memory from a shared borrow,
// mapped host memory from an exclusive one).
unsafe impl<T> KernelParam for *mut T {
    type Host<'a>
        = Out<'a, T>
    where
        T: 'a;
    fn decode(args: &[Arg], next: &mut usize, name: &str) -> Result<Self, String> {
        <*const T>::decode(args, next, name).map(|p| p as *mut T)
    }
    fn push<'a>(h: Out<'a, T>, l: &mut Launch<'a>)
    where
        T: 'a,
    {
        l.args.push(Arg::Ptr(h.addr));
        l.host.extend(h.stamp);
    }
}
// SAFETY: the struct's bytes are pushed whole; `KernelStruct`'s contract makes them a
// valid `S` (same layout as `S::Host<'a>`), and its device pointers come from buffers
// borrowed for `'a`. The emulator checks the type name and the size.
unsafe impl<S: KernelStruct> KernelParam for S {
    type Host<'a> = S::Host<'a>;
    fn decode(args: &[Arg], next: &mut usize, name: &str) -> Result<Self, String> {
        let want = std::any::type_name::<S>();
        match take(args, next, name)? {
            Arg::Struct(s) if s.ty == want && s.bytes.len() == std::mem::size_of::<S>() => {
                // SAFETY: the bytes are those of an `S::Host<'_>`, of `S`'s layout (the
                // `KernelStruct` contract; the size is checked above); an unaligned read
                // because the byte buffer has no alignment.
                Ok(unsafe { std::ptr::read_unaligned(s.bytes.as_ptr() as *const S) })
            }
            other => Err(format!(
                "parameter `{name}` is the struct {want}, got {other:?}"
            )),
        }
    }
    fn push<'a>(h: S::Host<'a>, l: &mut Launch<'a>)
    where
        S: 'a,
    {
        l.args.push(struct_arg::<S>(h));
    }
}

/// The argument holding the bytes of `h`, an `S` as the host builds it.
pub(crate) fn struct_arg<'a, S: KernelStruct>(h: S::Host<'a>) -> Arg {
    let size = std::mem::size_of::<S::Host<'a>>();
    assert_eq!(
        size,
        std::mem::size_of::<S>(),
        "KernelStruct {}: Host<'a> differs in size",
        std::any::type_name::<S>()
    );
    let mut bytes = vec![MaybeUninit::<u8>::uninit(); size].into_boxed_slice();
    // SAFETY: copies `size` bytes of `h` (padding included, as `MaybeUninit`) into a
    // buffer of `size` bytes; the two do not overlap.
    unsafe {
        std::ptr::copy_nonoverlapping(
            &h as *const S::Host<'a> as *const MaybeUninit<u8>,
            bytes.as_mut_ptr(),
            size,
        )
    };
    Arg::Struct(StructArg {
        ty: std::any::type_name::<S>(),
        bytes,
    })
}

/// A read-only view of `T`s in device memory or mapped host memory, for a `*const T`
/// kernel parameter: made from `&Buffer<T>`, `&HostBuffer<T>` (`.into()`, or passed as
/// is to a typed launcher), or `buf.at(offset)`. It borrows the buffer for `'a`.
pub struct In<'a, T> {
    addr: u64,
    len: usize,
    /// The stamp of a mapped host buffer, set when a launch uses it.
    stamp: Option<&'a AtomicU64>,
    _t: PhantomData<&'a [T]>,
}

/// A read-write view of `T`s for a `*mut T` kernel parameter: made from `&Buffer<T>`
/// or `&mut Buffer<T>` (device memory, which no Rust reference on the host points into,
/// so one buffer may be passed twice), from `&mut HostBuffer<T>` (mapped host memory,
/// which the host reads through slices: exclusive), or `buf.at_mut(offset)`.
pub struct Out<'a, T> {
    addr: u64,
    len: usize,
    stamp: Option<&'a AtomicU64>,
    _t: PhantomData<&'a [T]>,
}

impl<T> In<'_, T> {
    /// Elements from the view's start to the buffer's end.
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}
impl<'a, T: bytemuck::Pod> In<'a, T> {
    /// The same bytes as `U`s (a buffer packing several tables, say): any bytes are a
    /// valid `U` (`Pod`), and the view must be aligned for `U` (panics otherwise); its
    /// length is the whole `U`s it holds.
    pub fn cast<U: bytemuck::Pod>(self) -> In<'a, U> {
        assert!(
            self.addr.is_multiple_of(std::mem::align_of::<U>() as u64),
            "In::cast: address {:#x} is not aligned for {}",
            self.addr,
            std::any::type_name::<U>()
        );
        In {
            addr: self.addr,
            len: self.len * std::mem::size_of::<T>() / std::mem::size_of::<U>().max(1),
            stamp: self.stamp,
            _t: PhantomData,
        }
    }
}

impl<T> Out<'_, T> {
    /// Elements from the view's start to the buffer's end.
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The view of `len - offset` elements at element `offset` of a buffer at `addr`.
fn view_at<T>(addr: u64, len: usize, offset: usize) -> (u64, usize) {
    assert!(offset <= len, "view at({offset}) past a buffer of {len}");
    (
        addr + (offset * std::mem::size_of::<T>()) as u64,
        len - offset,
    )
}

impl<'a, T> From<&'a Buffer<T>> for In<'a, T> {
    fn from(b: &'a Buffer<T>) -> Self {
        b.at(0)
    }
}
impl<'a, T> From<&'a mut Buffer<T>> for In<'a, T> {
    fn from(b: &'a mut Buffer<T>) -> Self {
        b.at(0)
    }
}
impl<'a, T> From<&'a Buffer<T>> for Out<'a, T> {
    fn from(b: &'a Buffer<T>) -> Self {
        b.at_mut(0)
    }
}
impl<'a, T> From<&'a mut Buffer<T>> for Out<'a, T> {
    fn from(b: &'a mut Buffer<T>) -> Self {
        b.at_mut(0)
    }
}
impl<'a, T> From<&'a HostBuffer<T>> for In<'a, T> {
    fn from(b: &'a HostBuffer<T>) -> Self {
        b.at(0)
    }
}
impl<'a, T> From<&'a mut HostBuffer<T>> for In<'a, T> {
    fn from(b: &'a mut HostBuffer<T>) -> Self {
        b.at(0)
    }
}
impl<'a, T> From<&'a mut HostBuffer<T>> for Out<'a, T> {
    fn from(b: &'a mut HostBuffer<T>) -> Self {
        b.at_mut(0)
    }
}

/// What a typed launcher accepts for a parameter whose host type is `H`: `H` itself, or
/// a buffer borrow that makes one (`&Buffer<T>` for [`In`] or [`Out`], `&mut Buffer<T>`
/// for either, `&HostBuffer<T>` for [`In`], `&mut HostBuffer<T>` for either). A trait of
/// its own rather than `Into`, so that an integer literal passed for a `u32` parameter
/// is a `u32` (there is one implementation for integers: the identity).
pub trait ToParam<H> {
    fn to_param(self) -> H;
}
impl<H> ToParam<H> for H {
    fn to_param(self) -> H {
        self
    }
}
macro_rules! to_param {
    ($($src:ty => $view:ident),*) => {$(
        impl<'a, T> ToParam<$view<'a, T>> for $src {
            fn to_param(self) -> $view<'a, T> {
                self.into()
            }
        }
    )*};
}
to_param!(
    &'a Buffer<T> => In, &'a mut Buffer<T> => In, &'a Buffer<T> => Out, &'a mut Buffer<T> => Out,
    &'a HostBuffer<T> => In, &'a mut HostBuffer<T> => In, &'a mut HostBuffer<T> => Out,
    &'a Arc<Buffer<T>> => In
);
impl<'a, T> From<&'a Arc<Buffer<T>>> for In<'a, T> {
    fn from(b: &'a Arc<Buffer<T>>) -> Self {
        b.at(0)
    }
}

/// What a persistent kernel's typed launcher takes for a buffer
/// ([`PersistParam`](crate::persist::PersistParam)): a clone of a shared one, or one
/// moved in.
impl<T> ToParam<Arc<Buffer<T>>> for &Arc<Buffer<T>> {
    fn to_param(self) -> Arc<Buffer<T>> {
        Arc::clone(self)
    }
}
impl<T> ToParam<Arc<Buffer<T>>> for Buffer<T> {
    fn to_param(self) -> Arc<Buffer<T>> {
        Arc::new(self)
    }
}

/// The arguments of one typed launch, built by the launcher `name::launch` that
/// [`kernel!`](crate::kernel) generates. Not for use by hand.
#[doc(hidden)]
pub struct Launch<'a> {
    dev: &'a Device,
    args: Vec<Arg>,
    /// The stamps of the mapped host buffers the launch uses.
    host: Vec<&'a AtomicU64>,
}

impl<'a> Launch<'a> {
    #[doc(hidden)]
    pub fn new(dev: &'a Device, params: usize) -> Self {
        Launch {
            dev,
            args: Vec::with_capacity(params),
            host: Vec::new(),
        }
    }

    /// Launches `kernel` with the arguments pushed, then stamps the mapped host buffers
    /// the launch uses with its sequence number (after the launch: a synchronisation
    /// racing with it then reads an older count, which errs on the safe side).
    ///
    /// # Safety
    /// The arguments must have been pushed by `KernelParam::push` of `kernel`'s own
    /// parameter types, in order (what the generated launcher does).
    #[doc(hidden)]
    pub unsafe fn run(self, kernel: &Kernel, cfg: LaunchConfig) -> Result<(), GpuError> {
        if !self.host.is_empty() && self.dev.recording.load(Ordering::SeqCst) {
            // A replay would not stamp the buffer: the host could read it too soon.
            return Err(GpuError::BadLaunch {
                kernel: kernel.name,
                message: "a launch that uses mapped host memory cannot be recorded".into(),
            });
        }
        // SAFETY: the caller's contract: each argument is of its parameter's type and
        // points into memory borrowed for the launch (`KernelParam`'s contract).
        let r = unsafe { self.dev.launch(kernel, cfg, &self.args) };
        let seq = self.dev.clock.launched.fetch_add(1, Ordering::SeqCst) + 1;
        for s in self.host {
            s.fetch_max(seq, Ordering::SeqCst);
        }
        r
    }
}

/// A kernel's launch descriptor, made by [`kernel!`](crate::kernel).
#[derive(Clone, Copy)]
pub struct Kernel {
    /// The PTX entry's name.
    pub name: &'static str,
    /// The parameter types, as written.
    pub params: &'static [&'static str],
    /// Decodes the arguments and, when the flag is set, runs the body for one lane.
    #[doc(hidden)]
    pub emu: fn(&[Arg], bool) -> Result<(), String>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", self.name, self.params.join(", "))
    }
}

/// Grid and block shape, and the dynamic shared memory per block in bytes.
///
/// ```
/// use gpu_kernels::LaunchConfig;
/// // At least 1000 threads in blocks of 256: 4 blocks.
/// let cfg = LaunchConfig::linear(1000, 256);
/// assert_eq!((cfg.grid, cfg.block, cfg.shared_bytes), ([4, 1, 1], [256, 1, 1], 0));
/// // 8 blocks of 128 threads, each with 4 KiB of dynamic shared memory.
/// let cfg = LaunchConfig::blocks(8, 128, 0).with_shared(4096);
/// assert_eq!(cfg, LaunchConfig::blocks(8, 128, 4096));
/// // A 2-D grid: set the fields.
/// let cfg = LaunchConfig { grid: [16, 16, 1], block: [32, 8, 1], shared_bytes: 0 };
/// # let _ = cfg;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch of at least `threads` threads in blocks of `block` (grid >= 1).
    pub fn linear(threads: u32, block: u32) -> Self {
        LaunchConfig {
            grid: [threads.div_ceil(block).max(1), 1, 1],
            block: [block, 1, 1],
            shared_bytes: 0,
        }
    }
    /// A 1-D launch of `blocks` blocks of `block` threads with `shared_bytes` of shared memory.
    pub fn blocks(blocks: u32, block: u32, shared_bytes: u32) -> Self {
        LaunchConfig {
            grid: [blocks, 1, 1],
            block: [block, 1, 1],
            shared_bytes,
        }
    }
    /// The same launch with `bytes` of dynamic shared memory per block.
    pub fn with_shared(mut self, bytes: u32) -> Self {
        self.shared_bytes = bytes;
        self
    }

    fn validate(&self, kernel: &'static str) -> Result<(), GpuError> {
        let threads = self.block.iter().map(|&d| d as u64).product::<u64>();
        let bad = |message: String| Err(GpuError::BadLaunch { kernel, message });
        if threads > 1024 {
            return bad(format!("{threads} threads per block, at most 1024"));
        }
        if self.grid[1] > 65535 || self.grid[2] > 65535 {
            return bad(format!("grid {:?}: y and z are at most 65535", self.grid));
        }
        if self.grid[0] > i32::MAX as u32 {
            return bad(format!("grid {:?}: x is at most 2^31 - 1", self.grid));
        }
        Ok(())
    }
}

/// A point in a device's stream, for timing: [`Device::mark`], [`Device::elapsed_ms`].
pub enum Mark {
    Host(Instant),
    #[cfg(feature = "cuda")]
    Gpu(cudarc::driver::CudaEvent),
}

/// Device work recorded once and queued again as one unit ([`Device::record`],
/// [`Device::replay`]): on a GPU a CUDA graph, whose replay costs one call where its
/// launches cost one each.
pub struct Recording {
    #[cfg(feature = "cuda")]
    graph: cudarc::driver::CudaGraph,
}

// SAFETY: a graph is an executable made by the driver, used only through `&Recording`
// by `Device::replay`, which queues it on its device's stream; CUDA requires calls on
// one graph to be serialised, which the owner's `&mut` access to its engine gives (a
// `Recording` is not `Sync`: two threads never replay one at once).
unsafe impl Send for Recording {}

pub(crate) enum Backend {
    Emu,
    #[cfg(feature = "cuda")]
    Gpu(crate::cuda::Gpu),
}

/// A GPU, or the host emulator standing in for one.
///
/// Buffers are allocated on a device, filled from the host and copied back; the same
/// calls run on either backend:
///
/// ```
/// use gpu_kernels::Device;
/// # fn main() -> Result<(), gpu_kernels::GpuError> {
/// let dev = Device::emulator(); // or Device::gpu(0, my_crate::PTX)?
/// assert!(!dev.is_gpu());
/// let mut buf = dev.upload(&[1u32, 2, 3, 4])?;
/// dev.write(&mut buf, 2, &[30, 40])?; // elements 2.. from the host
/// assert_eq!(dev.read(&buf)?, vec![1, 2, 30, 40]);
/// let mut two = [0u32; 2];
/// dev.read_into(&buf, 1, &mut two)?; // elements 1..3
/// assert_eq!(two, [2, 30]);
/// dev.zero(&mut buf)?;
/// assert_eq!(dev.read(&buf)?, vec![0; 4]);
/// assert_eq!(dev.allocated_bytes(), 16);
/// drop(buf);
/// assert_eq!(dev.allocated_bytes(), 0);
/// # Ok(()) }
/// ```
///
/// A program that should run wherever it is takes the GPU when there is one:
///
/// ```
/// use gpu_kernels::Device;
/// // An empty PTX module: no GPU can load these (absent) kernels, so the emulator.
/// let (dev, why) = Device::gpu_or_emulator(0, "");
/// assert!(!dev.is_gpu());
/// assert!(why.is_some()); // no driver, no device, or PTX not built
/// println!("running on {}", dev.name());
/// ```
pub struct Device {
    pub(crate) backend: Backend,
    allocated: Arc<AtomicUsize>,
    pub(crate) clock: Arc<Clock>,
    /// True while [`Device::record`] records this device's work (on a GPU).
    recording: std::sync::atomic::AtomicBool,
}

/// Launch and synchronisation counts of a device, which its mapped host buffers share:
/// a [`HostBuffer`] used by launch number `n` may be read by the host once a
/// synchronisation that began after launch `n` was queued has ended (`synced >= n`).
#[derive(Default)]
pub(crate) struct Clock {
    /// Typed launches queued so far.
    pub(crate) launched: AtomicU64,
    /// `launched` as read at the start of the last completed synchronisation.
    pub(crate) synced: AtomicU64,
}

impl Clock {
    fn idle(&self, stamp: &AtomicU64) -> bool {
        stamp.load(Ordering::SeqCst) <= self.synced.load(Ordering::SeqCst)
    }
}

pub(crate) enum Mem {
    Host {
        ptr: NonNull<u8>,
        layout: Layout,
    },
    #[cfg(feature = "cuda")]
    Gpu(cudarc::driver::CudaSlice<u8>),
}

/// `len` values of `T` in a device's memory (host memory for the emulator).
///
/// Kernels get it as a typed view: `&buf` (or [`Buffer::at`]) for a `*const T`
/// parameter, `&buf`, `&mut buf` or [`Buffer::at_mut`] for a `*mut T` one, and
/// [`Buffer::dev_ptr`] / [`Buffer::dev_ptr_mut`] inside a parameter struct. The host
/// never holds a Rust reference into device memory: it copies in and out through the
/// [`Device`] ([`Device::write`], [`Device::read`]), in stream order with the launches.
///
/// Dropping a buffer while a kernel that uses it may still run is safe: on the GPU the
/// memory is released in stream order (cudarc frees a `CudaSlice` with `cuMemFreeAsync`
/// on the device's one stream, or synchronises that stream first where stream-ordered
/// allocation is missing), so after the kernels queued before the drop; the emulator
/// runs a launch to completion before returning. Persistent kernels run on a stream of
/// their own: their typed launcher takes `Arc<Buffer<T>>`s, whose clones their handle
/// keeps until the kernel has stopped (see [`crate::persist`]).
pub struct Buffer<T> {
    pub(crate) mem: Mem,
    /// The address kernels see.
    addr: u64,
    len: usize,
    allocated: Arc<AtomicUsize>,
    _t: PhantomData<T>,
}

unsafe impl<T: Send> Send for Buffer<T> {}
unsafe impl<T: Sync> Sync for Buffer<T> {}

impl<T> Drop for Buffer<T> {
    fn drop(&mut self) {
        self.allocated.fetch_sub(self.bytes(), Ordering::Relaxed);
        #[allow(irrefutable_let_patterns)]
        if let Mem::Host { ptr, layout } = &self.mem {
            // SAFETY: `ptr` and `layout` are the allocation made by `emu::alloc_zeroed` for this
            // buffer; the emulator runs kernels to completion, so none uses it any more.
            unsafe { crate::emu::dealloc(ptr.as_ptr(), *layout) };
        }
    }
}

impl<T> Buffer<T> {
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }
    /// The buffer as a kernel argument (a pointer to its first element).
    pub fn arg(&self) -> Arg {
        Arg::Ptr(self.addr)
    }
    /// A pointer to element `offset` as a kernel argument (`offset <= len`).
    pub fn arg_at(&self, offset: usize) -> Arg {
        element_arg::<T>(self.addr, self.len, offset)
    }
    /// A read-only view from element `offset` to the end, for a `*const T` parameter
    /// (panics when `offset > len`).
    pub fn at(&self, offset: usize) -> In<'_, T> {
        let (addr, len) = view_at::<T>(self.addr, self.len, offset);
        In {
            addr,
            len,
            stamp: None,
            _t: PhantomData,
        }
    }
    /// A read-write view from element `offset` to the end, for a `*mut T` parameter
    /// (panics when `offset > len`). From a shared borrow: see [`Out`].
    pub fn at_mut(&self, offset: usize) -> Out<'_, T> {
        let (addr, len) = view_at::<T>(self.addr, self.len, offset);
        Out {
            addr,
            len,
            stamp: None,
            _t: PhantomData,
        }
    }
    /// The buffer as a read-only pointer field of a parameter struct.
    pub fn dev_ptr(&self) -> DevPtr<'_, T> {
        DevPtr::from_addr(self.addr)
    }
    /// Element `offset` as a read-only pointer field (panics when `offset > len`).
    pub fn dev_ptr_at(&self, offset: usize) -> DevPtr<'_, T> {
        DevPtr::from_addr(view_at::<T>(self.addr, self.len, offset).0)
    }
    /// The buffer as a read-write pointer field of a parameter struct (from a shared
    /// borrow, as [`Buffer::at_mut`]).
    pub fn dev_ptr_mut(&self) -> DevPtrMut<'_, T> {
        DevPtrMut::from_addr(self.addr)
    }
    /// Element `offset` as a read-write pointer field (panics when `offset > len`).
    pub fn dev_ptr_mut_at(&self, offset: usize) -> DevPtrMut<'_, T> {
        DevPtrMut::from_addr(view_at::<T>(self.addr, self.len, offset).0)
    }
}

impl<T: bytemuck::Pod> Buffer<T> {
    /// The buffer's contents, copied on the stream it was allocated on (for a holder
    /// with no [`Device`] at hand: a persistent kernel's stage stamps, read once the
    /// kernel has stopped).
    pub(crate) fn read_back(&self) -> Result<Vec<T>, GpuError> {
        let mut v = vec![T::zeroed(); self.len];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut v);
        match &self.mem {
            // SAFETY: the allocation holds `self.bytes()` bytes, `bytes` is as long and
            // a distinct vector.
            Mem::Host { ptr, .. } => unsafe {
                std::ptr::copy_nonoverlapping(ptr.as_ptr(), bytes.as_mut_ptr(), bytes.len())
            },
            #[cfg(feature = "cuda")]
            Mem::Gpu(s) => {
                let fail = |e: cudarc::driver::DriverError| GpuError::Driver {
                    what: "reading a buffer back".into(),
                    message: e.to_string(),
                };
                s.stream().memcpy_dtoh(s, bytes).map_err(fail)?;
                s.stream().synchronize().map_err(fail)?;
            }
        }
        Ok(v)
    }
}

impl<'a, T> From<&'a Buffer<T>> for Arg {
    fn from(b: &'a Buffer<T>) -> Arg {
        b.arg()
    }
}

/// `len` values of `T` in page-locked host memory that kernels read and write directly
/// ("mapped" or zero-copy memory): no copy calls, so a per-event round trip is one
/// launch and one synchronisation.
///
/// The host must not touch it while a kernel that uses it may run: write, launch,
/// [`Device::synchronize`], then read. That order is enforced: a typed launch stamps
/// the buffers it uses, and [`HostBuffer::as_slice`] / [`HostBuffer::as_mut_slice`]
/// panic while the last launch that used the buffer has not been waited for (on the
/// emulator too, though its launches end before they return, so that a missing
/// synchronisation fails the emulator tests). A kernel writes it only through an
/// [`Out`] made from `&mut HostBuffer`, so no host slice is alive during the launch.
/// Dropping it waits for the device first when a launch may still use it.
pub struct HostBuffer<T> {
    ptr: NonNull<T>,
    /// The address kernels see.
    addr: u64,
    len: usize,
    mem: HostMem,
    clock: Arc<Clock>,
    /// The sequence number of the last typed launch that used the buffer.
    stamp: AtomicU64,
}

pub(crate) enum HostMem {
    Emu(Layout),
    #[cfg(feature = "cuda")]
    Pinned(Arc<cudarc::driver::CudaContext>),
}

unsafe impl<T: Send> Send for HostBuffer<T> {}
unsafe impl<T: Sync> Sync for HostBuffer<T> {}

impl<T> Drop for HostBuffer<T> {
    fn drop(&mut self) {
        let busy = !self.clock.idle(&self.stamp);
        match &self.mem {
            // SAFETY: `ptr` was allocated by `host_alloc_zeroed` with this layout and is
            // freed once, here; the emulator's launches have ended.
            HostMem::Emu(layout) => unsafe {
                crate::emu::dealloc(self.ptr.as_ptr() as *mut u8, *layout)
            },
            #[cfg(feature = "cuda")]
            HostMem::Pinned(ctx) => crate::cuda::free_host(ctx, self.ptr.as_ptr() as *mut u8, busy),
        }
        let _ = busy;
    }
}

impl<T> HostBuffer<T> {
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Panics when a typed launch that used the buffer may still run.
    #[track_caller]
    fn check_idle(&self, what: &str) {
        assert!(
            self.clock.idle(&self.stamp),
            "HostBuffer::{what} while a kernel that uses the buffer may still run: \
             call Device::synchronize after the launch first"
        );
    }
    /// The values, for the host to read. Panics while a typed launch that used the
    /// buffer has not been waited for ([`Device::synchronize`]).
    #[track_caller]
    pub fn as_slice(&self) -> &[T] {
        self.check_idle("as_slice");
        // SAFETY: `ptr` holds `len` initialised values (zeroed at allocation, `T: Pod`);
        // no kernel writes them while the slice lives: the last launch that used the
        // buffer has ended (checked above), and a later launch that writes it needs
        // `&mut self`, which this borrow excludes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
    /// The values, for the host to write. Panics as [`HostBuffer::as_slice`].
    #[track_caller]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.check_idle("as_mut_slice");
        // SAFETY: as in `as_slice`, and `&mut self` excludes any other slice or view.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
    /// The first element's host address, for memory shared with a running kernel under
    /// a protocol of its own (the rings of [`crate::persist`], which access it through
    /// atomics only).
    pub(crate) fn host_ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }
    /// [`HostBuffer::as_slice`] without the check, for memory shared with a running
    /// kernel under a protocol of its own (the rings of [`crate::persist`]).
    ///
    /// # Safety
    /// No kernel may write the elements the caller reads through the slice while it
    /// lives.
    pub unsafe fn as_slice_unchecked(&self) -> &[T] {
        // SAFETY: the values are initialised; the caller excludes concurrent writes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
    /// [`HostBuffer::as_mut_slice`] without the check.
    ///
    /// # Safety
    /// No kernel may read or write the elements the caller touches through the slice
    /// while it lives.
    pub unsafe fn as_mut_slice_unchecked(&mut self) -> &mut [T] {
        // SAFETY: the values are initialised; the caller excludes concurrent access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
    /// A read-only view from element `offset` to the end, for a `*const T` parameter
    /// (panics when `offset > len`).
    pub fn at(&self, offset: usize) -> In<'_, T> {
        let (addr, len) = view_at::<T>(self.addr, self.len, offset);
        In {
            addr,
            len,
            stamp: Some(&self.stamp),
            _t: PhantomData,
        }
    }
    /// A read-write view from element `offset` to the end, for a `*mut T` parameter
    /// (panics when `offset > len`); exclusive, since the host reads this memory
    /// through slices.
    pub fn at_mut(&mut self, offset: usize) -> Out<'_, T> {
        let (addr, len) = view_at::<T>(self.addr, self.len, offset);
        Out {
            addr,
            len,
            stamp: Some(&self.stamp),
            _t: PhantomData,
        }
    }
    /// The buffer as a kernel argument.
    pub fn arg(&self) -> Arg {
        Arg::Ptr(self.addr)
    }
    /// A pointer to element `offset` as a kernel argument (`offset <= len`).
    pub fn arg_at(&self, offset: usize) -> Arg {
        element_arg::<T>(self.addr, self.len, offset)
    }
}

/// The address of element `offset` of a buffer at `addr` as a kernel argument.
fn element_arg<T>(addr: u64, len: usize, offset: usize) -> Arg {
    assert!(offset <= len, "arg_at({offset}) past a buffer of {len}");
    Arg::Ptr(addr + (offset * std::mem::size_of::<T>()) as u64)
}

/// Zeroed host memory for `len` values of `T`, 16-byte aligned like the GPU's.
fn host_alloc_zeroed<T>(len: usize) -> Result<(NonNull<u8>, Layout, usize), GpuError> {
    let oom = |requested| GpuError::OutOfMemory {
        requested,
        free: 0,
        total: 0,
    };
    let bytes = len
        .checked_mul(std::mem::size_of::<T>())
        .ok_or(oom(usize::MAX))?;
    let layout = Layout::from_size_align(bytes.max(16), 16.max(std::mem::align_of::<T>()))
        .map_err(|_| oom(bytes))?;
    // SAFETY: `layout` has a non-zero size (at least 16 bytes).
    let ptr = NonNull::new(unsafe { crate::emu::alloc_zeroed(layout, bytes) }).ok_or(oom(bytes))?;
    Ok((ptr, layout, bytes))
}

pub(crate) fn check_range(len: usize, offset: usize, n: usize, what: &str) {
    assert!(
        offset.checked_add(n).is_some_and(|end| end <= len),
        "{what}: elements {offset}..{} of a buffer of {len}",
        offset.saturating_add(n)
    );
}

/// Set once this process has called into the GPU driver (see [`Device::gpu_driver_called`]).
pub(crate) static DRIVER_CALLED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

impl Device {
    /// Whether this process has called into the GPU driver (`cuInit`, which a context's
    /// creation follows): from then on the driver's files may be open, or a context be
    /// being created on another thread, and the process's exit waits for the driver (a
    /// context under way: for its creation, then for its release; a context made: for
    /// the kernel to release it, 0.1-1 s, growing with page-locked memory), which a
    /// program may want to leave to another process. Also true for a context since
    /// dropped, or one whose module then failed to load.
    pub fn gpu_driver_called() -> bool {
        DRIVER_CALLED.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The host SIMT emulator.
    pub fn emulator() -> Device {
        Device {
            backend: Backend::Emu,
            allocated: Arc::default(),
            clock: Arc::default(),
            recording: Default::default(),
        }
    }

    /// GPU `ordinal`, with the PTX module `ptx` loaded (a crate's `PTX` constant).
    ///
    /// Never panics: no driver, no such device, PTX not built and load failures are errors.
    pub fn gpu(ordinal: usize, ptx: &str) -> Result<Device, GpuError> {
        #[cfg(feature = "cuda")]
        {
            let gpu = crate::cuda::Gpu::open(ordinal, ptx)?;
            Ok(Device {
                backend: Backend::Gpu(gpu),
                allocated: Arc::default(),
                clock: Arc::default(),
                recording: Default::default(),
            })
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (ordinal, ptx);
            Err(GpuError::NoCudaSupport)
        }
    }

    /// GPU `ordinal` with `ptx` loaded, or, when it cannot be opened, the host emulator
    /// and the reason (for the caller's note): what benches, examples and the self-test
    /// do when they run wherever they are.
    pub fn gpu_or_emulator(ordinal: usize, ptx: &str) -> (Device, Option<GpuError>) {
        match Device::gpu(ordinal, ptx) {
            Ok(d) => (d, None),
            Err(e) => (Device::emulator(), Some(e)),
        }
    }

    /// [`Device::gpu_or_emulator`] for a program that runs wherever it is (benches,
    /// examples): the reason there is no GPU goes to standard error as a one-line note,
    /// and [`Device::is_gpu`] says which one the caller got.
    pub fn gpu_or_emulator_noted(ordinal: usize, ptx: &str) -> Device {
        let (dev, no_gpu) = Device::gpu_or_emulator(ordinal, ptx);
        if let Some(e) = no_gpu {
            eprintln!("no GPU ({e}): the host emulator instead");
        }
        dev
    }

    /// Number of GPUs present (0 when there is no driver).
    pub fn gpu_count() -> usize {
        #[cfg(feature = "cuda")]
        {
            crate::cuda::device_count()
        }
        #[cfg(not(feature = "cuda"))]
        {
            0
        }
    }

    /// True for a real GPU, false for the emulator.
    pub fn is_gpu(&self) -> bool {
        !matches!(self.backend, Backend::Emu)
    }

    /// "NVIDIA H100 80GB HBM3", or "host SIMT emulator".
    pub fn name(&self) -> String {
        match &self.backend {
            Backend::Emu => "host SIMT emulator".to_string(),
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => g.name.clone(),
        }
    }

    /// Streaming multiprocessors of the GPU (4 on the emulator, the persistent
    /// kernels' default grid there).
    pub fn sm_count(&self) -> u32 {
        match &self.backend {
            Backend::Emu => 4,
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => g.sm_count(),
        }
    }

    /// How long [`Device::gpu`] took to open this GPU: (the driver started, `cuInit` and
    /// the device count; the context and its stream made; the module loaded, the PTX's
    /// JIT or its cached result). `None` on the emulator.
    pub fn open_times(&self) -> Option<[Duration; 3]> {
        match &self.backend {
            Backend::Emu => None,
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => Some(*g.open_times),
        }
    }

    /// Keeps the device memory this process's buffers free for its next buffers (the
    /// driver would hand it back at each synchronisation) and takes `bytes` of it now:
    /// the buffers then allocated, up to that size in all, take memory already mapped,
    /// so a program that opens the device on its own thread pays the mapping there.
    /// Returns whether the device has the pool (a GPU with stream-ordered allocation);
    /// the emulator has none.
    pub fn reserve(&self, bytes: usize) -> Result<bool, GpuError> {
        match &self.backend {
            Backend::Emu => {
                let _ = bytes;
                Ok(false)
            }
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => g.reserve(bytes),
        }
    }

    /// Bytes held by this device's live buffers.
    pub fn allocated_bytes(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }

    /// `old` when it holds at least `len` values (at least one), else a fresh zeroed
    /// buffer of `grow(len)` values (and at least `len`), `old` freed first: a buffer
    /// kept from call to call, grown by the caller's rule and never shrunk.
    ///
    /// ```
    /// use gpu_kernels::Device;
    /// let dev = Device::emulator();
    /// let b = dev.kept_or_grown::<u32>(None, 100, usize::next_power_of_two)?;
    /// assert_eq!(b.len(), 128);
    /// let b = dev.kept_or_grown(Some(b), 120, usize::next_power_of_two)?; // kept
    /// assert_eq!(b.len(), 128);
    /// let b = dev.kept_or_grown(Some(b), 130, usize::next_power_of_two)?; // grown
    /// assert_eq!(b.len(), 256);
    /// # Ok::<(), gpu_kernels::GpuError>(())
    /// ```
    pub fn kept_or_grown<T: bytemuck::Pod>(
        &self,
        old: Option<Buffer<T>>,
        len: usize,
        grow: impl Fn(usize) -> usize,
    ) -> Result<Buffer<T>, GpuError> {
        let len = len.max(1);
        match old {
            Some(b) if b.len() >= len => Ok(b),
            old => {
                drop(old);
                self.alloc(grow(len).max(len))
            }
        }
    }

    /// A zeroed buffer of `len` values.
    pub fn alloc<T: bytemuck::Pod>(&self, len: usize) -> Result<Buffer<T>, GpuError> {
        let (mem, addr, bytes) = match &self.backend {
            Backend::Emu => {
                let (ptr, layout, bytes) = host_alloc_zeroed::<T>(len)?;
                (Mem::Host { ptr, layout }, ptr.as_ptr() as u64, bytes)
            }
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => {
                let bytes =
                    len.checked_mul(std::mem::size_of::<T>())
                        .ok_or(GpuError::OutOfMemory {
                            requested: usize::MAX,
                            free: 0,
                            total: 0,
                        })?;
                let (slice, addr) = g.alloc(bytes)?;
                (Mem::Gpu(slice), addr, bytes)
            }
        };
        self.allocated.fetch_add(bytes, Ordering::Relaxed);
        Ok(Buffer {
            mem,
            addr,
            len,
            allocated: Arc::clone(&self.allocated),
            _t: PhantomData,
        })
    }

    /// A zeroed [`HostBuffer`] of `len` values: page-locked host memory mapped into the
    /// device's address space (`cuMemHostAlloc` with `DEVICEMAP`); plain host memory on
    /// the emulator.
    ///
    /// ```
    /// use gpu_kernels::Device;
    /// # fn main() -> Result<(), gpu_kernels::GpuError> {
    /// let dev = Device::emulator();
    /// let list = dev.alloc_host::<u64>(8)?; // zeroed, mapped into the device
    /// assert_eq!(list.len(), 8);
    /// dev.synchronize()?; // no kernel running: the host may read
    /// assert_eq!(list.as_slice(), &[0; 8]);
    /// # Ok(()) }
    /// ```
    pub fn alloc_host<T: bytemuck::Pod>(&self, len: usize) -> Result<HostBuffer<T>, GpuError> {
        self.alloc_host_with(len, false)
    }

    /// [`Device::alloc_host`] in write-combined memory (`CU_MEMHOSTALLOC_WRITECOMBINED`):
    /// the host's writes bypass its caches, so the device reads them without snooping
    /// them out of a CPU cache, but host reads are slow, uncached: for mailboxes the
    /// host only writes. Host writes to it are ordered only by a full fence
    /// (`fence(SeqCst)`). Plain host memory on the emulator.
    pub fn alloc_host_write_combined<T: bytemuck::Pod>(
        &self,
        len: usize,
    ) -> Result<HostBuffer<T>, GpuError> {
        self.alloc_host_with(len, true)
    }

    fn alloc_host_with<T: bytemuck::Pod>(
        &self,
        len: usize,
        write_combined: bool,
    ) -> Result<HostBuffer<T>, GpuError> {
        let _ = write_combined;
        let (ptr, addr, mem) = match &self.backend {
            Backend::Emu => {
                let (ptr, layout, _) = host_alloc_zeroed::<T>(len)?;
                (ptr, ptr.as_ptr() as u64, HostMem::Emu(layout))
            }
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => {
                let bytes =
                    len.checked_mul(std::mem::size_of::<T>())
                        .ok_or(GpuError::OutOfMemory {
                            requested: usize::MAX,
                            free: 0,
                            total: 0,
                        })?;
                let (host, addr, ctx) = g.alloc_host(bytes, write_combined)?;
                // SAFETY: `host` points to `bytes` bytes just allocated, not yet shared with a kernel.
                unsafe { std::ptr::write_bytes(host, 0, bytes) };
                let ptr = NonNull::new(host).ok_or(GpuError::OutOfMemory {
                    requested: bytes,
                    free: 0,
                    total: 0,
                })?;
                (ptr, addr, HostMem::Pinned(ctx))
            }
        };
        Ok(HostBuffer {
            ptr: ptr.cast(),
            addr,
            len,
            mem,
            clock: Arc::clone(&self.clock),
            stamp: AtomicU64::new(0),
        })
    }

    /// A buffer holding a copy of `data`.
    pub fn upload<T: bytemuck::Pod>(&self, data: &[T]) -> Result<Buffer<T>, GpuError> {
        let mut b = self.alloc(data.len())?;
        self.write(&mut b, 0, data)?;
        Ok(b)
    }

    /// Copies `src` into `dst[offset..]` (stream-ordered on the GPU).
    pub fn write<T: bytemuck::Pod>(
        &self,
        dst: &mut Buffer<T>,
        offset: usize,
        src: &[T],
    ) -> Result<(), GpuError> {
        self.copy_in(dst, offset, src, None, "Device::write")
    }

    /// Copies `src` into `dst[offset..]`, queued on `on` or, for `None`, on the device's
    /// stream (the emulator copies at once); `what` names the caller in a range error.
    /// [`Device::write`] and [`Device::write_on`] (a queue's copy) both come here.
    pub(crate) fn copy_in<T: bytemuck::Pod>(
        &self,
        dst: &mut Buffer<T>,
        offset: usize,
        src: &[T],
        on: Option<&crate::Queue>,
        what: &str,
    ) -> Result<(), GpuError> {
        #[cfg(not(feature = "cuda"))]
        let _ = on;
        check_range(dst.len, offset, src.len(), what);
        let size = std::mem::size_of::<T>();
        let bytes: &[u8] = bytemuck::cast_slice(src);
        match (&self.backend, &mut dst.mem) {
            // SAFETY: `check_range` above keeps `offset * size + bytes.len()` within the
            // buffer's allocation; source and destination are distinct allocations.
            (Backend::Emu, Mem::Host { ptr, .. }) => unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    ptr.as_ptr().add(offset * size),
                    bytes.len(),
                );
            },
            #[cfg(feature = "cuda")]
            (Backend::Gpu(g), Mem::Gpu(s)) => {
                g.write_on(on.map(crate::Queue::cuda_stream), s, offset * size, bytes)?
            }
            #[allow(unreachable_patterns)]
            _ => panic!("buffer used with a device it was not allocated on"),
        }
        Ok(())
    }

    /// Copies `src[offset..offset + dst.len()]` into `dst`; waits for the device first.
    pub fn read_into<T: bytemuck::Pod>(
        &self,
        src: &Buffer<T>,
        offset: usize,
        dst: &mut [T],
    ) -> Result<(), GpuError> {
        check_range(src.len, offset, dst.len(), "Device::read_into");
        let launched = self.clock.launched.load(Ordering::SeqCst);
        let size = std::mem::size_of::<T>();
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(dst);
        match (&self.backend, &src.mem) {
            // SAFETY: `check_range` above keeps the range within the buffer's allocation; the
            // destination is the caller's distinct slice.
            (Backend::Emu, Mem::Host { ptr, .. }) => unsafe {
                std::ptr::copy_nonoverlapping(
                    ptr.as_ptr().add(offset * size),
                    bytes.as_mut_ptr(),
                    bytes.len(),
                );
            },
            #[cfg(feature = "cuda")]
            (Backend::Gpu(g), Mem::Gpu(s)) => g.read(s, offset * size, bytes)?,
            #[allow(unreachable_patterns)]
            _ => panic!("buffer used with a device it was not allocated on"),
        }
        // A read waits for the device (on the GPU): the launches queued before it ended.
        self.clock.synced.fetch_max(launched, Ordering::SeqCst);
        Ok(())
    }

    /// The whole buffer, copied back; waits for the device first.
    pub fn read<T: bytemuck::Pod>(&self, src: &Buffer<T>) -> Result<Vec<T>, GpuError> {
        let mut v = vec![T::zeroed(); src.len];
        self.read_into(src, 0, &mut v)?;
        Ok(v)
    }

    /// Sets every byte of `buf` to zero (`cuMemsetD8Async` on the GPU).
    pub fn zero<T: bytemuck::Pod>(&self, buf: &mut Buffer<T>) -> Result<(), GpuError> {
        let bytes = buf.bytes();
        match (&self.backend, &mut buf.mem) {
            // SAFETY: `bytes` is the buffer's size, within its allocation.
            (Backend::Emu, Mem::Host { ptr, .. }) => unsafe {
                std::ptr::write_bytes(ptr.as_ptr(), 0, bytes)
            },
            #[cfg(feature = "cuda")]
            (Backend::Gpu(g), Mem::Gpu(s)) => g.zero(s)?,
            #[allow(unreachable_patterns)]
            _ => panic!("buffer used with a device it was not allocated on"),
        }
        Ok(())
    }

    /// Launches `kernel` with untyped arguments (asynchronous on the GPU; the emulator
    /// runs it to completion). Use the kernel's typed launcher, `name::launch`, which
    /// [`kernel!`](crate::kernel) generates and which calls this.
    ///
    /// The arguments are checked against the kernel's parameter kinds on the emulator
    /// (scalar types, pointer or not, a struct's type and size); on the GPU only their
    /// count is.
    ///
    /// # Safety
    /// Each argument must be what the kernel's parameter at its place expects: a
    /// scalar of its type, the bytes of its struct type, or the address of memory of its
    /// element type that stays allocated until the kernel has ended (device memory
    /// freed in stream order, see [`Buffer`]) and that no host reference reads or
    /// writes meanwhile (mapped host memory: not touched by the host until a
    /// [`Device::synchronize`] after the launch), large enough for every access the
    /// kernel makes with the other arguments.
    pub unsafe fn launch(
        &self,
        kernel: &Kernel,
        cfg: LaunchConfig,
        args: &[Arg],
    ) -> Result<(), GpuError> {
        cfg.validate(kernel.name)?;
        if args.len() != kernel.params.len() {
            return Err(GpuError::BadLaunch {
                kernel: kernel.name,
                message: format!(
                    "{} arguments given, the kernel takes {}",
                    args.len(),
                    kernel.params.len()
                ),
            });
        }
        match &self.backend {
            Backend::Emu => {
                (kernel.emu)(args, false).map_err(|message| GpuError::BadLaunch {
                    kernel: kernel.name,
                    message,
                })?;
                let body = || {
                    // The decode succeeded above; a failure here would be a bug in the macro.
                    (kernel.emu)(args, true).expect("kernel arguments decoded once already");
                };
                crate::emu::run(cfg.grid, cfg.block, cfg.shared_bytes as usize, &body).map_err(
                    |f| GpuError::Kernel {
                        kernel: kernel.name,
                        message: format!(
                            "block {:?} thread {:?}: {}",
                            f.block, f.thread, f.message
                        ),
                    },
                )
            }
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => g.launch(kernel.name, &cfg, args),
        }
    }

    /// How many blocks of `kernel` launched as `cfg` a persistent launch may have:
    /// `per_sm` per SM, or fewer when fewer fit an SM at once (on the emulator, whose
    /// persistent blocks each take a host thread: 2 blocks in all for `per_sm` 1, else 3).
    pub fn resident_blocks(
        &self,
        kernel: &Kernel,
        cfg: LaunchConfig,
        per_sm: u32,
    ) -> Result<u32, GpuError> {
        cfg.validate(kernel.name)?;
        match &self.backend {
            Backend::Emu => Ok(if per_sm <= 1 { 2 } else { 3 }),
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => {
                let (sms, fit) = g.residency(kernel.name, &cfg)?;
                Ok(sms * per_sm.clamp(1, fit))
            }
        }
    }

    /// Launches `kernel` as a persistent kernel serving `ring` (see [`crate::persist`]),
    /// with untyped arguments. Use the kernel's typed launcher, `name::launch_persistent`,
    /// which [`kernel!`](crate::kernel) generates and which calls this, keeping the
    /// arguments' buffers alive until the kernel has stopped. Its arguments are the
    /// ring's ([`Ring::args`](crate::persist::Ring::args)) then the kernel's own, and
    /// `cfg.grid` is ignored: the grid is `blocks` blocks, or when `None` one block per
    /// SM (four on the emulator), every block resident at once (a cooperative launch on
    /// the GPU, on a stream of its own, so that the device's stream stays free; on the
    /// emulator, every block on its own threads, beside the caller's). Returns the handle that feeds it; dropping the handle stops
    /// the kernel.
    ///
    /// While it runs the GPU busy-waits. Do not call [`Device::synchronize`] expecting it
    /// to wait for the kernel (it waits for the device's stream only), and do not free
    /// mapped host memory meanwhile (the driver may synchronise the whole device).
    ///
    /// # Safety
    /// As [`Device::launch`], with the kernel's life in place of the launch's: every
    /// buffer the arguments point into must stay allocated until the returned handle has
    /// stopped the kernel (the kernel runs on a stream of its own, so a buffer's
    /// stream-ordered free does not wait for it), and the host touches memory the kernel
    /// uses only through the ring's protocol.
    pub unsafe fn launch_persistent(
        &self,
        kernel: &Kernel,
        cfg: LaunchConfig,
        args: &[Arg],
        ring: crate::persist::Ring,
        blocks: Option<u32>,
    ) -> Result<crate::persist::Persistent, GpuError> {
        cfg.validate(kernel.name)?;
        if args.len() != kernel.params.len() {
            return Err(GpuError::BadLaunch {
                kernel: kernel.name,
                message: format!(
                    "{} arguments given, the kernel takes {}",
                    args.len(),
                    kernel.params.len()
                ),
            });
        }
        let ring_args = ring.args();
        if args.get(..ring_args.len()) != Some(&ring_args[..]) {
            return Err(GpuError::BadLaunch {
                kernel: kernel.name,
                message: "a persistent kernel's first arguments are its ring's".into(),
            });
        }
        let runner = match &self.backend {
            Backend::Emu => {
                (kernel.emu)(args, false).map_err(|message| GpuError::BadLaunch {
                    kernel: kernel.name,
                    message,
                })?;
                let grid = [blocks.unwrap_or(4).max(1), 1, 1];
                let (k, args, block, shared) =
                    (*kernel, args.to_vec(), cfg.block, cfg.shared_bytes as usize);
                let thread = std::thread::Builder::new()
                    .name(format!("emu {}", k.name))
                    .spawn(move || {
                        let body = || {
                            (k.emu)(&args, true).expect("kernel arguments decoded once already");
                        };
                        crate::emu::run_concurrent(grid, block, shared, &body).map_err(|f| {
                            GpuError::Kernel {
                                kernel: k.name,
                                message: format!(
                                    "block {:?} thread {:?}: {}",
                                    f.block, f.thread, f.message
                                ),
                            }
                        })
                    })
                    .map_err(|e| GpuError::BadLaunch {
                        kernel: kernel.name,
                        message: format!("cannot start the emulator's thread: {e}"),
                    })?;
                crate::persist::Runner::Emu(Some(thread))
            }
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => {
                crate::persist::Runner::Gpu(g.launch_persistent(kernel.name, &cfg, args, blocks)?)
            }
        };
        Ok(crate::persist::Persistent::new(kernel.name, ring, runner))
    }

    /// Runs `f`, recording the device work it queues instead of running it (on a GPU):
    /// the recording, to queue with [`Device::replay`] now and again later, is the same
    /// launches with the same arguments, reading and writing the buffers' contents as
    /// they are at each replay. `f` may queue kernel launches, zeroings and copies
    /// between device buffers; a read, a wait or a copy from host memory inside it fails
    /// the recording, and so does a launch that uses mapped host memory. Nothing else
    /// may queue work on this device while `f` runs (another thread's work on it would
    /// be recorded too, not run). On the emulator, which has no recordings, `f`'s work
    /// runs as it is queued and `None` is returned.
    ///
    /// ```
    /// use gpu_kernels::Device;
    /// # fn main() -> Result<(), gpu_kernels::GpuError> {
    /// let dev = Device::emulator();
    /// let mut buf = dev.upload(&[7u32; 4])?;
    /// let recording = dev.record(|| dev.zero(&mut buf))?;
    /// match recording {
    ///     Some(r) => dev.replay(&r)?, // a GPU: recorded, run now
    ///     None => {}                  // the emulator: it ran already
    /// }
    /// assert_eq!(dev.read(&buf)?, vec![0; 4]);
    /// # Ok(()) }
    /// ```
    pub fn record<E: From<GpuError>>(
        &self,
        f: impl FnOnce() -> Result<(), E>,
    ) -> Result<Option<Recording>, E> {
        match &self.backend {
            Backend::Emu => f().map(|()| None),
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => {
                g.begin_recording()?;
                self.recording.store(true, Ordering::SeqCst);
                let r = f();
                self.recording.store(false, Ordering::SeqCst);
                // Ended whatever `f` did, so that the stream runs work again.
                let graph = g.end_recording();
                r?;
                let graph = graph?.ok_or_else(|| GpuError::Driver {
                    what: "ending a recording".into(),
                    message: "nothing was recorded".into(),
                })?;
                Ok(Some(Recording { graph }))
            }
        }
    }

    /// Queues a recording of this device's work ([`Device::record`]).
    pub fn replay(&self, recording: &Recording) -> Result<(), GpuError> {
        match &self.backend {
            Backend::Emu => {
                let _ = recording;
                Err(GpuError::Driver {
                    what: "replaying a recording".into(),
                    message: "made on a GPU, replayed on the emulator".into(),
                })
            }
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => {
                g.replay(&recording.graph)?;
                self.clock.launched.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        }
    }

    /// Waits until all work queued on the device is done (persistent kernels, on
    /// streams of their own, excepted). Mapped host buffers used by the launches before
    /// it may be read afterwards.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        let launched = self.clock.launched.load(Ordering::SeqCst);
        match &self.backend {
            Backend::Emu => {}
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => g.synchronize()?,
        }
        self.clock.synced.fetch_max(launched, Ordering::SeqCst);
        Ok(())
    }

    /// A timing mark at this point of the device's stream.
    pub fn mark(&self) -> Result<Mark, GpuError> {
        match &self.backend {
            Backend::Emu => Ok(Mark::Host(Instant::now())),
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => g.mark().map(Mark::Gpu),
        }
    }

    /// Moves `mark` to this point of the device's stream, for timing a step that
    /// repeats: on a GPU the same event recorded again, none created or destroyed (a
    /// mark of another kind is replaced by a new one).
    pub fn remark(&self, mark: &mut Mark) -> Result<(), GpuError> {
        match (&self.backend, mark) {
            #[cfg(feature = "cuda")]
            (Backend::Gpu(g), Mark::Gpu(ev)) => g.remark(ev),
            (_, m) => {
                *m = self.mark()?;
                Ok(())
            }
        }
    }

    /// Milliseconds between two marks of this device (waits for the later one).
    pub fn elapsed_ms(&self, from: &Mark, to: &Mark) -> Result<f32, GpuError> {
        match (from, to) {
            (Mark::Host(a), Mark::Host(b)) => Ok(b.duration_since(*a).as_secs_f32() * 1e3),
            #[cfg(feature = "cuda")]
            (Mark::Gpu(a), Mark::Gpu(b)) => crate::cuda::elapsed_ms(a, b),
            #[allow(unreachable_patterns)]
            _ => panic!("marks of different devices"),
        }
    }

    /// (free, total) bytes of device memory; the host's are not tracked (`(0, 0)`).
    pub fn mem_info(&self) -> Result<(usize, usize), GpuError> {
        match &self.backend {
            Backend::Emu => Ok((0, 0)),
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => g.mem_info(),
        }
    }
}
