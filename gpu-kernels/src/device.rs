//! [`Device`]: one host API over the GPU and the emulator, so that an engine that
//! drives kernels is written once and runs on either.

use std::alloc::Layout;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Errors of the GPU and the emulator. Every variant says what to do or what broke.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no GPU: the CUDA driver library (libcuda.so) is not installed on this machine")]
    NoDriver,
    #[error("no GPU: device {ordinal} was asked for, {count} present")]
    NoDevice { ordinal: usize, count: usize },
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

/// A kernel argument: a buffer's address (plus offset) or a scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    Ptr(u64),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
}

macro_rules! arg_from {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for Arg {
            fn from(x: $t) -> Arg { Arg::$v(x) }
        }
        impl KernelParam for $t {
            fn decode(args: &[Arg], next: &mut usize, name: &str) -> Result<Self, String> {
                match take(args, next, name)? {
                    Arg::$v(x) => Ok(x),
                    other => Err(format!("parameter `{name}` is {}, got {other:?}", stringify!($t))),
                }
            }
        }
    )*};
}
arg_from!(u32 => U32, i32 => I32, u64 => U64, i64 => I64, f32 => F32, f64 => F64);

fn take(args: &[Arg], next: &mut usize, name: &str) -> Result<Arg, String> {
    let a = args
        .get(*next)
        .copied()
        .ok_or_else(|| format!("parameter `{name}` missing"))?;
    *next += 1;
    Ok(a)
}

/// A kernel parameter type the emulator can decode from an [`Arg`] (with a type check).
pub trait KernelParam: Sized {
    fn decode(args: &[Arg], next: &mut usize, name: &str) -> Result<Self, String>;
}

impl<T> KernelParam for *const T {
    fn decode(args: &[Arg], next: &mut usize, name: &str) -> Result<Self, String> {
        match take(args, next, name)? {
            Arg::Ptr(p) => Ok(p as usize as *const T),
            other => Err(format!("parameter `{name}` is a pointer, got {other:?}")),
        }
    }
}
impl<T> KernelParam for *mut T {
    fn decode(args: &[Arg], next: &mut usize, name: &str) -> Result<Self, String> {
        <*const T>::decode(args, next, name).map(|p| p as *mut T)
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
}

impl<'a, T> From<&'a Buffer<T>> for Arg {
    fn from(b: &'a Buffer<T>) -> Arg {
        b.arg()
    }
}

/// `len` values of `T` in page-locked host memory that kernels read and write directly
/// ("mapped" or zero-copy memory): no copy calls, so a per-event round trip is one
/// launch and one synchronisation. The host must not touch it while a kernel that uses
/// it may run: write, launch, [`Device::synchronize`], then read.
pub struct HostBuffer<T> {
    ptr: NonNull<T>,
    /// The address kernels see.
    addr: u64,
    len: usize,
    mem: HostMem,
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
        match &self.mem {
            HostMem::Emu(layout) => unsafe {
                crate::emu::dealloc(self.ptr.as_ptr() as *mut u8, *layout)
            },
            #[cfg(feature = "cuda")]
            HostMem::Pinned(ctx) => crate::cuda::free_host(ctx, self.ptr.as_ptr() as *mut u8),
        }
    }
}

impl<T> HostBuffer<T> {
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn as_slice(&self) -> &[T] {
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
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
    let ptr = NonNull::new(unsafe { crate::emu::alloc_zeroed(layout, bytes) }).ok_or(oom(bytes))?;
    Ok((ptr, layout, bytes))
}

fn check_range(len: usize, offset: usize, n: usize, what: &str) {
    assert!(
        offset.checked_add(n).is_some_and(|end| end <= len),
        "{what}: elements {offset}..{} of a buffer of {len}",
        offset.saturating_add(n)
    );
}

impl Device {
    /// The host SIMT emulator.
    pub fn emulator() -> Device {
        Device {
            backend: Backend::Emu,
            allocated: Arc::default(),
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

    /// Bytes held by this device's live buffers.
    pub fn allocated_bytes(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
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
        check_range(dst.len, offset, src.len(), "Device::write");
        let size = std::mem::size_of::<T>();
        let bytes: &[u8] = bytemuck::cast_slice(src);
        match (&self.backend, &mut dst.mem) {
            (Backend::Emu, Mem::Host { ptr, .. }) => unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    ptr.as_ptr().add(offset * size),
                    bytes.len(),
                );
            },
            #[cfg(feature = "cuda")]
            (Backend::Gpu(g), Mem::Gpu(s)) => g.write(s, offset * size, bytes)?,
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
        let size = std::mem::size_of::<T>();
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(dst);
        match (&self.backend, &src.mem) {
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

    /// Launches `kernel` (asynchronous on the GPU; the emulator runs it to completion).
    ///
    /// The arguments are checked against the kernel's parameter types on the emulator;
    /// on the GPU their count is.
    pub fn launch(&self, kernel: &Kernel, cfg: LaunchConfig, args: &[Arg]) -> Result<(), GpuError> {
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
    /// lanes are OS threads: 2 blocks in all for `per_sm` 1, else 3).
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

    /// Launches `kernel` as a persistent kernel serving `ring` (see [`crate::persist`]):
    /// its arguments are the ring's ([`Ring::args`](crate::persist::Ring::args)) then
    /// the kernel's own, and `cfg.grid` is ignored: the grid is `blocks` blocks, or
    /// when `None` one block per SM (four on the emulator), every block resident at
    /// once (a cooperative launch on the GPU, on a stream of its own, so that the
    /// device's stream stays free; on the emulator, every block on its own threads,
    /// beside the caller's). Returns the handle that feeds it; dropping the handle stops
    /// the kernel.
    ///
    /// While it runs the GPU busy-waits. Do not call [`Device::synchronize`] expecting it
    /// to wait for the kernel (it waits for the device's stream only), and do not free
    /// mapped host memory meanwhile (the driver may synchronise the whole device).
    pub fn launch_persistent(
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

    /// Waits until all work queued on the device is done.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        match &self.backend {
            Backend::Emu => Ok(()),
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => g.synchronize(),
        }
    }

    /// A timing mark at this point of the device's stream.
    pub fn mark(&self) -> Result<Mark, GpuError> {
        match &self.backend {
            Backend::Emu => Ok(Mark::Host(Instant::now())),
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => g.mark().map(Mark::Gpu),
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
