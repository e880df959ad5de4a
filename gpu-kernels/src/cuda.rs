//! The GPU backend of [`Device`](crate::Device): cudarc's driver API, loaded at run time.
//!
//! One context, one stream, one PTX module per device. Kernels are launched with
//! `cuLaunchKernel` on that stream; copies are stream-ordered; reads synchronise.

use crate::device::{Arg, GpuError, LaunchConfig};
use cudarc::driver::sys::{CUevent_flags, CUfunction, CUfunction_attribute, CUmodule, CUresult};
use cudarc::driver::{
    result, CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, DriverError,
};
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::{Arc, Mutex};

/// Shared memory a block may use without opting in.
const DEFAULT_SHARED_LIMIT: u32 = 48 * 1024;

fn driver(what: impl Into<String>) -> impl FnOnce(DriverError) -> GpuError {
    let what = what.into();
    move |e| GpuError::Driver {
        what,
        message: e.to_string(),
    }
}

/// Starts the driver (`cuInit`) and counts its GPUs; `None` when the driver library is
/// missing. Marks the process as having called into the driver
/// ([`crate::Device::gpu_driver_called`]) before the call.
fn driver_count() -> Option<Result<usize, DriverError>> {
    // SAFETY: probes for the driver library; no argument, no precondition.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return None;
    }
    crate::device::DRIVER_CALLED.store(true, std::sync::atomic::Ordering::Relaxed);
    Some(CudaContext::device_count().map(|n| n.max(0) as usize))
}

/// Number of GPUs, 0 when the driver library is missing or fails to initialise.
pub(crate) fn device_count() -> usize {
    driver_count().and_then(Result::ok).unwrap_or(0)
}

struct Function {
    f: CUfunction,
    shared_limit: u32,
}

pub(crate) struct Gpu {
    pub(crate) name: String,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    module: CUmodule,
    functions: Mutex<HashMap<&'static str, Function>>,
    /// The last kernel launched: asynchronous faults surface later, and are blamed on it.
    last_kernel: Mutex<&'static str>,
    /// How long opening took: the driver started (`cuInit`, the device count), the
    /// context and its stream made, the module loaded (the PTX's JIT, or its cache).
    /// (Boxed: a `Device` is moved about, and kept small.)
    pub(crate) open_times: Box<[std::time::Duration; 3]>,
}

// The raw module and function handles are plain driver handles, valid in any thread
// once the context is bound (every entry point binds it).
unsafe impl Send for Gpu {}
unsafe impl Sync for Gpu {}

impl Drop for Gpu {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        let _ = self.stream.synchronize();
        // SAFETY: the module was loaded by `open` and its stream is synchronised above: no
        // kernel of it runs; nothing uses the handle after the drop.
        unsafe {
            let _ = result::module::unload(self.module);
        }
    }
}

impl Gpu {
    pub(crate) fn open(ordinal: usize, ptx: &str) -> Result<Gpu, GpuError> {
        let t = std::time::Instant::now();
        let count = driver_count()
            .ok_or(GpuError::NoDriver)?
            .map_err(driver("cuInit / cuDeviceGetCount"))?;
        if ordinal >= count {
            return Err(GpuError::NoDevice { ordinal, count });
        }
        if ptx.trim().is_empty() {
            return Err(GpuError::PtxNotBuilt);
        }
        let driver_started = t.elapsed();
        let ctx = CudaContext::new(ordinal).map_err(driver(format!("opening device {ordinal}")))?;
        // One stream, used in order: cudarc's per-buffer event tracking is not needed.
        // SAFETY: every buffer is used on the context's one stream, in order (see above).
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(driver("creating a stream"))?;
        let name = ctx.name().map_err(driver("reading the device name"))?;
        let context_made = t.elapsed();
        let src = CString::new(ptx).map_err(|_| GpuError::Driver {
            what: "loading the PTX module".into(),
            message: "the PTX text contains a NUL byte".into(),
        })?;
        // SAFETY: `src` is a NUL-terminated PTX image that lives across the call; the
        // context is bound to this thread (above).
        let module = unsafe { result::module::load_data(src.as_ptr() as *const c_void) }
            .map_err(driver("loading the PTX module (JIT for this GPU)"))?;
        Ok(Gpu {
            name,
            ctx,
            stream,
            module,
            functions: Mutex::new(HashMap::new()),
            last_kernel: Mutex::new("(none)"),
            open_times: Box::new([
                driver_started,
                context_made - driver_started,
                t.elapsed() - context_made,
            ]),
        })
    }

    fn bind(&self) -> Result<(), GpuError> {
        self.ctx
            .bind_to_thread()
            .map_err(driver("binding the context"))
    }

    /// Classifies an error of queued work: a kernel fault is blamed on the last kernel.
    fn async_error(&self, what: &str, e: DriverError) -> GpuError {
        use CUresult::*;
        match e.0 {
            CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_LAUNCH_TIMEOUT
            | CUDA_ERROR_ASSERT => GpuError::Kernel {
                kernel: *self.last_kernel.lock().unwrap_or_else(|p| p.into_inner()),
                message: format!(
                    "{e} (a trap: out-of-bounds index or a failed check in the kernel); \
                     the GPU context is unusable now"
                ),
            },
            _ => GpuError::Driver {
                what: what.to_string(),
                message: e.to_string(),
            },
        }
    }

    pub(crate) fn alloc(&self, bytes: usize) -> Result<(CudaSlice<u8>, u64), GpuError> {
        self.bind()?;
        // SAFETY: the buffer is zeroed or written before any kernel reads it (`Device::alloc`
        // zeroes; `upload` writes): no uninitialised read reaches the host.
        let slice = unsafe { self.stream.alloc::<u8>(bytes.max(1)) }.map_err(|e| {
            if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                let (free, total) = self.mem_info().unwrap_or((0, 0));
                GpuError::OutOfMemory {
                    requested: bytes,
                    free,
                    total,
                }
            } else {
                self.async_error("allocating device memory", e)
            }
        })?;
        let mut slice = slice;
        self.stream
            .memset_zeros(&mut slice)
            .map_err(|e| self.async_error("zeroing a new buffer", e))?;
        let (addr, _) = slice.device_ptr(&self.stream);
        Ok((slice, addr))
    }

    pub(crate) fn read(
        &self,
        src: &CudaSlice<u8>,
        at: usize,
        dst: &mut [u8],
    ) -> Result<(), GpuError> {
        self.bind()?;
        if !dst.is_empty() {
            let view = src.slice(at..at + dst.len());
            self.stream
                .memcpy_dtoh(&view, dst)
                .map_err(|e| self.async_error("copying from the device", e))?;
        }
        self.synchronize()
    }

    pub(crate) fn zero(&self, buf: &mut CudaSlice<u8>) -> Result<(), GpuError> {
        self.bind()?;
        self.stream
            .memset_zeros(buf)
            .map_err(|e| self.async_error("cuMemsetD8Async", e))
    }

    /// Starts recording the stream's work instead of running it ([`crate::Device::record`]).
    /// Relaxed: other threads may use the driver meanwhile (other devices' parts).
    pub(crate) fn begin_recording(&self) -> Result<(), GpuError> {
        use cudarc::driver::sys::CUstreamCaptureMode;
        self.stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
            .map_err(driver("beginning a recording (stream capture)"))
    }

    /// Ends the recording begun by [`Gpu::begin_recording`]: the work recorded, ready to
    /// replay; `None` when nothing was.
    pub(crate) fn end_recording(&self) -> Result<Option<cudarc::driver::CudaGraph>, GpuError> {
        use cudarc::driver::sys::CUgraphInstantiate_flags;
        self.stream
            .end_capture(CUgraphInstantiate_flags(0))
            .map_err(driver(
                "ending a recording (a read, wait or host copy inside it is refused)",
            ))
    }

    /// Queues a recording's work on the stream.
    pub(crate) fn replay(&self, graph: &cudarc::driver::CudaGraph) -> Result<(), GpuError> {
        *self.last_kernel.lock().unwrap_or_else(|p| p.into_inner()) = "(a replayed recording)";
        graph
            .launch()
            .map_err(|e| self.async_error("replaying a recording", e))
    }

    pub(crate) fn synchronize(&self) -> Result<(), GpuError> {
        self.bind()?;
        self.stream
            .synchronize()
            .map_err(|e| self.async_error("synchronising the stream", e))
    }

    fn function(&self, name: &'static str, shared: u32) -> Result<CUfunction, GpuError> {
        let mut fns = self.functions.lock().unwrap_or_else(|p| p.into_inner());
        if !fns.contains_key(name) {
            let cname = CString::new(name).map_err(|_| GpuError::NoSuchKernel { kernel: name })?;
            // SAFETY: `self.module` is the loaded module (alive as long as `self`); `cname` is a
            // valid C string for the call.
            let f = unsafe { result::module::get_function(self.module, cname) }
                .map_err(|_| GpuError::NoSuchKernel { kernel: name })?;
            fns.insert(
                name,
                Function {
                    f,
                    shared_limit: DEFAULT_SHARED_LIMIT,
                },
            );
        }
        let func = fns
            .get_mut(name)
            .ok_or(GpuError::NoSuchKernel { kernel: name })?;
        if shared > func.shared_limit {
            // SAFETY: `func.f` is a function of the loaded module; the size is at most the
            // device's opt-in limit (checked by `residency`/the launch's validation).
            unsafe {
                result::function::set_function_attribute(
                    func.f,
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared as i32,
                )
            }
            .map_err(|e| GpuError::BadLaunch {
                kernel: name,
                message: format!("{shared} bytes of dynamic shared memory refused: {e}"),
            })?;
            func.shared_limit = shared;
        }
        Ok(func.f)
    }

    pub(crate) fn launch(
        &self,
        name: &'static str,
        cfg: &LaunchConfig,
        args: &[Arg],
    ) -> Result<(), GpuError> {
        self.bind()?;
        let f = self.function(name, cfg.shared_bytes)?;
        let mut slots = arg_slots(args);
        let mut params = param_ptrs(args, &mut slots);
        *self.last_kernel.lock().unwrap_or_else(|p| p.into_inner()) = name;
        let g = cfg.grid;
        let b = cfg.block;
        // SAFETY: `f` is a function of the loaded module; `params` holds one pointer per
        // kernel parameter (the count was checked by `Device::launch`, the types by its
        // caller), each to a value of the parameter's size (an 8-byte slot, or a struct's
        // bytes) that outlives the call, which copies them.
        unsafe {
            result::launch_kernel(
                f,
                (g[0], g[1], g[2]),
                (b[0], b[1], b[2]),
                cfg.shared_bytes,
                self.stream.cu_stream(),
                &mut params,
            )
        }
        .map_err(|e| match e.0 {
            CUresult::CUDA_ERROR_INVALID_VALUE | CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => {
                GpuError::BadLaunch {
                    kernel: name,
                    message: format!(
                        "{e} (grid {g:?}, block {b:?}, {} bytes shared)",
                        cfg.shared_bytes
                    ),
                }
            }
            _ => self.async_error(&format!("launching `{name}`"), e),
        })
    }

    /// Makes the device's stream-ordered allocator keep the memory freed to it (its
    /// release threshold set to the largest value), then grows its pool by `bytes`: one
    /// allocation, freed at once, so that the next allocations up to that size take
    /// memory the pool already holds. False where the device has no such allocator.
    pub(crate) fn reserve(&self, bytes: usize) -> Result<bool, GpuError> {
        use cudarc::driver::sys;
        if !self.ctx.has_async_alloc() {
            return Ok(false);
        }
        self.bind()?;
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `pool` is a valid out-pointer; the device is the context's.
        unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, self.ctx.cu_device()) }
            .result()
            .map_err(driver("cuDeviceGetDefaultMemPool"))?;
        let mut keep = u64::MAX;
        // SAFETY: the release threshold's value is a `cuuint64_t`, read through the
        // pointer during the call.
        unsafe {
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                &mut keep as *mut u64 as *mut c_void,
            )
        }
        .result()
        .map_err(driver("cuMemPoolSetAttribute (release threshold)"))?;
        if bytes > 0 {
            let stream = self.stream.cu_stream();
            let mut ptr = 0;
            // SAFETY: `ptr` is a valid out-pointer; the allocation is freed just below, on
            // the same stream, and never used.
            unsafe { sys::cuMemAllocAsync(&mut ptr, bytes, stream) }
                .result()
                .map_err(|e| self.async_error("reserving device memory", e))?;
            // SAFETY: `ptr` was allocated on `stream` just above; nothing uses it.
            unsafe { sys::cuMemFreeAsync(ptr, stream) }
                .result()
                .map_err(|e| self.async_error("reserving device memory", e))?;
            self.synchronize()?;
        }
        Ok(true)
    }

    /// Streaming multiprocessors (1 when the driver does not say).
    pub(crate) fn sm_count(&self) -> u32 {
        use cudarc::driver::sys::CUdevice_attribute;
        self.ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_or(1, |n| n.max(1) as u32)
    }

    /// A persistent kernel (see [`crate::persist`]): `blocks` blocks, or one per SM, on
    /// a new stream of its own, with a cooperative launch (which the driver refuses
    /// when the grid cannot be resident at once, instead of deadlocking).
    /// (SMs, blocks of `cfg` that fit one SM at once) for kernel `name`.
    pub(crate) fn residency(
        &self,
        name: &'static str,
        cfg: &LaunchConfig,
    ) -> Result<(u32, u32), GpuError> {
        use cudarc::driver::sys::CUdevice_attribute;
        self.bind()?;
        let f = self.function(name, cfg.shared_bytes)?;
        let sms = self
            .ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(driver("reading the SM count"))?
            .max(1) as u32;
        let threads = cfg.block.iter().product::<u32>();
        // SAFETY: `f` is a function of the loaded module.
        let per_sm = unsafe {
            result::occupancy::max_active_block_per_multiprocessor(
                f,
                threads as i32,
                cfg.shared_bytes as usize,
            )
        }
        .map_err(driver("cuOccupancyMaxActiveBlocksPerMultiprocessor"))?;
        if per_sm < 1 {
            return Err(GpuError::BadLaunch {
                kernel: name,
                message: format!(
                    "a block of {threads} threads with {} bytes of shared memory does not fit an SM",
                    cfg.shared_bytes
                ),
            });
        }
        Ok((sms, per_sm as u32))
    }

    /// A persistent kernel (see [`crate::persist`]): `blocks` blocks, or one per SM, on
    /// a new stream of its own, with a cooperative launch (which the driver refuses
    /// when the grid cannot be resident at once, instead of deadlocking).
    pub(crate) fn launch_persistent(
        &self,
        name: &'static str,
        cfg: &LaunchConfig,
        args: &[Arg],
        blocks: Option<u32>,
    ) -> Result<PersistentStream, GpuError> {
        let (sms, per_sm) = self.residency(name, cfg)?;
        let f = self.function(name, cfg.shared_bytes)?;
        let bad = |message: String| GpuError::BadLaunch {
            kernel: name,
            message,
        };
        let grid = blocks.unwrap_or(sms).max(1);
        if grid > sms * per_sm {
            return Err(bad(format!(
                "{grid} blocks cannot be resident at once ({sms} SMs x {per_sm} blocks)"
            )));
        }
        let stream = self.ctx.new_stream().map_err(driver("creating a stream"))?;
        let mut slots = arg_slots(args);
        let mut params = param_ptrs(args, &mut slots);
        *self.last_kernel.lock().unwrap_or_else(|p| p.into_inner()) = name;
        let b = cfg.block;
        // SAFETY: `params` holds one 8-byte slot per kernel parameter (the count was
        // checked by the caller); the slots outlive the call, which copies them.
        unsafe {
            result::launch_cooperative_kernel(
                f,
                (grid, 1, 1),
                (b[0], b[1], b[2]),
                cfg.shared_bytes,
                stream.cu_stream(),
                &mut params,
            )
        }
        .map_err(|e| bad(format!("cooperative launch of {grid} blocks of {b:?}: {e}")))?;
        Ok(PersistentStream { stream })
    }

    /// Page-locked host memory mapped into the device: (host pointer, device address, context).
    pub(crate) fn alloc_host(
        &self,
        bytes: usize,
        write_combined: bool,
    ) -> Result<(*mut u8, u64, Arc<CudaContext>), GpuError> {
        self.bind()?;
        const DEVICEMAP: u32 = 0x02; // CU_MEMHOSTALLOC_DEVICEMAP
        const WRITECOMBINED: u32 = 0x04; // CU_MEMHOSTALLOC_WRITECOMBINED
        let flags = DEVICEMAP | if write_combined { WRITECOMBINED } else { 0 };
        // SAFETY: a plain allocation call; the pointer is checked below and freed by
        // `free_host` when the owning HostBuffer drops.
        let host = unsafe { result::malloc_host(bytes.max(1), flags) }.map_err(|e| {
            if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                GpuError::OutOfMemory {
                    requested: bytes,
                    free: 0,
                    total: 0,
                }
            } else {
                GpuError::Driver {
                    what: "cuMemHostAlloc".into(),
                    message: e.to_string(),
                }
            }
        })? as *mut u8;
        let mut dptr = 0;
        // SAFETY: `host` was returned by `cuMemHostAlloc` with DEVICEMAP just above; `dptr`
        // is a valid out-pointer.
        let r = unsafe {
            cudarc::driver::sys::cuMemHostGetDevicePointer_v2(&mut dptr, host as *mut c_void, 0)
        };
        if let Err(e) = r.result() {
            free_host(&self.ctx, host, false);
            return Err(GpuError::Driver {
                what: "cuMemHostGetDevicePointer".into(),
                message: e.to_string(),
            });
        }
        Ok((host, dptr, Arc::clone(&self.ctx)))
    }

    pub(crate) fn mark(&self) -> Result<CudaEvent, GpuError> {
        self.bind()?;
        let ev = self
            .ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver("creating an event"))?;
        ev.record(&self.stream)
            .map_err(driver("recording an event"))?;
        Ok(ev)
    }

    /// Records `ev` again at the end of the device's stream.
    pub(crate) fn remark(&self, ev: &CudaEvent) -> Result<(), GpuError> {
        self.bind()?;
        ev.record(&self.stream)
            .map_err(driver("recording an event"))
    }

    /// A stream of its own for a [`crate::Queue`].
    pub(crate) fn new_queue(&self) -> Result<Arc<CudaStream>, GpuError> {
        self.bind()?;
        self.ctx
            .new_stream()
            .map_err(driver("creating a queue's stream"))
    }

    /// Queues a copy of `src` into `dst[at..]` on `stream` (`None`: the device's own
    /// stream, ordered with the kernels); no wait.
    pub(crate) fn write_on(
        &self,
        stream: Option<&Arc<CudaStream>>,
        dst: &mut CudaSlice<u8>,
        at: usize,
        src: &[u8],
    ) -> Result<(), GpuError> {
        if src.is_empty() {
            return Ok(());
        }
        self.bind()?;
        let mut view = dst.slice_mut(at..at + src.len());
        stream
            .unwrap_or(&self.stream)
            .memcpy_htod(src, &mut view)
            .map_err(|e| self.async_error("copying to the device", e))
    }

    /// Queues a copy of `src[at..]` into `dst` (page-locked, kept untouched by the
    /// caller until the copy has ended) on `stream`; no wait.
    pub(crate) fn read_on(
        &self,
        stream: &Arc<CudaStream>,
        src: &CudaSlice<u8>,
        at: usize,
        dst: &mut [u8],
    ) -> Result<(), GpuError> {
        if dst.is_empty() {
            return Ok(());
        }
        self.bind()?;
        let view = src.slice(at..at + dst.len());
        stream
            .memcpy_dtoh(&view, dst)
            .map_err(|e| self.async_error("copying from the device on a queue", e))
    }

    /// An event (no timing) recorded at the end of `stream`, or of the device's stream.
    pub(crate) fn signal(&self, stream: Option<&Arc<CudaStream>>) -> Result<CudaEvent, GpuError> {
        self.bind()?;
        let ev = self
            .ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .map_err(driver("creating an event"))?;
        ev.record(stream.unwrap_or(&self.stream))
            .map_err(|e| self.async_error("recording an event", e))?;
        Ok(ev)
    }

    /// Makes `stream` (or the device's stream) wait for `ev`.
    pub(crate) fn wait_on(
        &self,
        stream: Option<&Arc<CudaStream>>,
        ev: &CudaEvent,
    ) -> Result<(), GpuError> {
        self.bind()?;
        stream
            .unwrap_or(&self.stream)
            .wait(ev)
            .map_err(|e| self.async_error("waiting for an event on a stream", e))
    }

    /// Waits on the host for `ev`.
    pub(crate) fn reach(&self, ev: &CudaEvent) -> Result<(), GpuError> {
        self.bind()?;
        ev.synchronize()
            .map_err(|e| self.async_error("waiting for an event", e))
    }

    pub(crate) fn mem_info(&self) -> Result<(usize, usize), GpuError> {
        self.ctx.mem_get_info().map_err(driver("cuMemGetInfo"))
    }
}

/// Each scalar argument in its own 8-byte slot; cuLaunchKernel reads each parameter's
/// size from the slot's start (little-endian, so 4-byte values sit in the low half). A
/// struct's slot is unused (its bytes are passed in place).
fn arg_slots(args: &[Arg]) -> Vec<u64> {
    args.iter()
        .map(|a| match *a {
            Arg::Ptr(p) | Arg::U64(p) => p,
            Arg::U32(v) => v as u64,
            Arg::I32(v) => v as u32 as u64,
            Arg::I64(v) => v as u64,
            Arg::F32(v) => v.to_bits() as u64,
            Arg::F64(v) => v.to_bits(),
            Arg::Struct(_) => 0,
        })
        .collect()
}

/// `cuLaunchKernel`'s parameter array: per argument, a pointer to its slot, or to a
/// struct's bytes (which the driver copies into the parameter space whole, as CUDA C++
/// passes a struct by value). Valid while `args` and `slots` are, unmoved.
fn param_ptrs(args: &[Arg], slots: &mut [u64]) -> Vec<*mut c_void> {
    args.iter()
        .zip(slots.iter_mut())
        .map(|(a, s)| match a {
            Arg::Struct(st) => st.as_ptr() as *mut c_void,
            _ => s as *mut u64 as *mut c_void,
        })
        .collect()
}

/// The stream a persistent kernel runs on.
pub(crate) struct PersistentStream {
    stream: Arc<CudaStream>,
}

impl PersistentStream {
    /// `None` while the kernel runs (`cuStreamQuery` says not ready); its outcome once
    /// it has ended.
    pub(crate) fn poll(&self, kernel: &'static str) -> Option<Result<(), GpuError>> {
        if let Err(e) = self.stream.context().bind_to_thread() {
            return Some(Err(driver("binding the context")(e)));
        }
        // SAFETY: the stream is live (owned by `self`).
        let r = unsafe { cudarc::driver::sys::cuStreamQuery(self.stream.cu_stream()) };
        match r {
            CUresult::CUDA_SUCCESS => Some(Ok(())),
            CUresult::CUDA_ERROR_NOT_READY => None,
            e => Some(Err(GpuError::Kernel {
                kernel,
                message: format!(
                    "{e:?} (a trap: out-of-bounds index or a failed check in the kernel); \
                     the GPU context is unusable now"
                ),
            })),
        }
    }
}

/// Frees memory from [`Gpu::alloc_host`] (errors at teardown are not actionable),
/// after waiting for the context's work when a launch may still use it (`busy`).
pub(crate) fn free_host(ctx: &Arc<CudaContext>, host: *mut u8, busy: bool) {
    let _ = ctx.bind_to_thread();
    if busy {
        let _ = ctx.synchronize();
    }
    // SAFETY: `host` came from `cuMemHostAlloc` in this context and is freed once (by
    // the owning `HostBuffer`'s drop, or on `alloc_host`'s error path); no queued
    // launch uses it any more (waited for above when one may).
    let _ = unsafe { result::free_host(host as *mut c_void) };
}

pub(crate) fn elapsed_ms(a: &CudaEvent, b: &CudaEvent) -> Result<f32, GpuError> {
    b.synchronize().map_err(driver("waiting for an event"))?;
    a.elapsed_ms(b).map_err(driver("cuEventElapsedTime"))
}
