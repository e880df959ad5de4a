//! The host SIMT emulator: runs a kernel over a grid x block launch on CPU threads.
//!
//! It exists so that CI, which has no GPU, tests the very kernel code that runs on the
//! GPU. Semantics follow CUDA where a kernel can observe them:
//!
//! - one OS thread per lane of a block; blocks run one after another, reusing the lanes;
//! - [`sync_threads`](lane::sync_threads) is a barrier of the block's *live* lanes: a lane
//!   that returned no longer holds it back (CUDA's exited-thread rule);
//! - per-block dynamic shared memory of the launch's size, filled with the byte `0xCD`
//!   before each block so that a read of memory nothing wrote shows up in tests;
//! - warp operations meet at a per-warp barrier of the warp's live lanes (groups of 32
//!   consecutive linear thread ids) and exchange values through per-warp slots;
//! - atomics are the host's atomics on the same addresses; volatile loads and stores
//!   (the prelude's `volatile_*`) are sequentially consistent atomics, fences are
//!   sequentially consistent fences.
//!
//! A persistent launch ([`run_concurrent`], behind
//! [`Device::launch_persistent`](crate::Device::launch_persistent)) runs every block at
//! once, each on its own lane threads, so that blocks can wait for one another and for
//! the host thread that feeds them, as co-resident blocks do on a GPU. Its barriers never
//! report a deadlock (its lanes wait for requests as long as the host sends none); a
//! failing lane stops every block, including lanes spinning in
//! [`spin_pause`](lane::spin_pause).
//!
//! A panic in a lane (a bounds check, say; on the GPU that is a `trap`) stops the launch:
//! lanes waiting at a barrier unwind, and the launch returns an error naming the kernel,
//! the block and the thread. A barrier that waits more than [`DEADLOCK_SECS`] seconds
//! (a lane stuck in a loop, warp ops called divergently) is reported the same way.

use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A barrier wait longer than this is reported as a deadlock.
pub const DEADLOCK_SECS: u64 = 120;

/// Lane stack size: kernels use little stack, and a launch may hold 1024 lanes.
const LANE_STACK: usize = 1 << 20;

/// What went wrong inside an emulated launch.
#[derive(Debug, Clone)]
pub struct LaneFailure {
    pub block: [u32; 3],
    pub thread: [u32; 3],
    pub message: String,
}

/// Sentinel payload used to unwind lanes of a poisoned block; never shown to users.
struct Aborted;

struct BarState {
    live: u32,
    arrived: u32,
    generation: u64,
}

struct WarpState {
    live: u32,
    arrived: u32,
    generation: u64,
    slots: [u64; 32],
    /// The slots and the live mask when the last exchange completed.
    result: [u64; 32],
    result_live: u32,
}

/// Synchronisation state of the block being run.
struct BlockSync {
    bar: Mutex<BarState>,
    bar_cv: Condvar,
    warps: Vec<(Mutex<WarpState>, Condvar)>,
    poisoned: AtomicBool,
    /// Set when any block of the launch failed (a persistent launch's blocks run at once).
    launch: Arc<AtomicBool>,
    /// Whether a long barrier wait is reported as a deadlock (not in persistent launches).
    deadlock: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl BlockSync {
    fn new(lanes: u32) -> Self {
        Self::in_launch(lanes, Arc::new(AtomicBool::new(false)), true)
    }

    fn in_launch(lanes: u32, launch: Arc<AtomicBool>, deadlock: bool) -> Self {
        let nwarps = lanes.div_ceil(32);
        let warps = (0..nwarps)
            .map(|w| {
                let n = (lanes - w * 32).min(32);
                let live = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
                (
                    Mutex::new(WarpState {
                        live,
                        arrived: 0,
                        generation: 0,
                        slots: [0; 32],
                        result: [0; 32],
                        result_live: 0,
                    }),
                    Condvar::new(),
                )
            })
            .collect();
        BlockSync {
            bar: Mutex::new(BarState {
                live: lanes,
                arrived: 0,
                generation: 0,
            }),
            bar_cv: Condvar::new(),
            warps,
            poisoned: AtomicBool::new(false),
            launch,
            deadlock,
        }
    }

    /// Waits on `cv` until `done` holds, unwinding if the block is poisoned and
    /// reporting a deadlock after [`DEADLOCK_SECS`].
    fn wait<'a, T>(
        &self,
        cv: &Condvar,
        mut g: MutexGuard<'a, T>,
        what: &str,
        done: impl Fn(&T) -> bool,
    ) -> MutexGuard<'a, T> {
        let start = Instant::now();
        while !done(&g) {
            if self.poisoned.load(Ordering::Relaxed) || self.launch.load(Ordering::Relaxed) {
                drop(g);
                resume_unwind(Box::new(Aborted));
            }
            if self.deadlock && start.elapsed() > Duration::from_secs(DEADLOCK_SECS) {
                drop(g);
                panic!("emulator: deadlock: waited {DEADLOCK_SECS} s at {what}");
            }
            g = cv
                .wait_timeout(g, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        g
    }

    fn sync_threads(&self) {
        let mut g = lock(&self.bar);
        g.arrived += 1;
        if g.arrived == g.live {
            g.arrived = 0;
            g.generation += 1;
            self.bar_cv.notify_all();
            return;
        }
        let gen = g.generation;
        drop(self.wait(&self.bar_cv, g, "sync_threads", |s| s.generation != gen));
    }

    /// Exchanges one value per live lane of the warp; returns all slots and the live mask.
    fn warp_exchange(&self, rank: u32, v: u64) -> ([u64; 32], u32) {
        let (m, cv) = &self.warps[(rank / 32) as usize];
        let bit = 1u32 << (rank % 32);
        let mut g = lock(m);
        g.slots[(rank % 32) as usize] = v;
        g.arrived |= bit;
        if g.arrived == g.live {
            Self::complete_warp(&mut g);
            cv.notify_all();
        } else {
            let gen = g.generation;
            g = self.wait(cv, g, "a warp operation", |s| s.generation != gen);
        }
        (g.result, g.result_live)
    }

    fn complete_warp(g: &mut WarpState) {
        g.result = g.slots;
        g.result_live = g.live;
        g.arrived = 0;
        g.generation += 1;
    }

    /// The lane returned (or unwound): it no longer holds barriers back.
    fn exit(&self, rank: u32) {
        {
            let mut g = lock(&self.bar);
            g.live -= 1;
            if g.arrived > 0 && g.arrived == g.live {
                g.arrived = 0;
                g.generation += 1;
                self.bar_cv.notify_all();
            }
        }
        let (m, cv) = &self.warps[(rank / 32) as usize];
        let mut g = lock(m);
        g.live &= !(1u32 << (rank % 32));
        if g.arrived != 0 && g.arrived == g.live {
            Self::complete_warp(&mut g);
            cv.notify_all();
        }
    }
}

/// The running lane's view of its launch (thread-local).
#[derive(Clone, Copy)]
struct LaneCtx {
    tid: [u32; 3],
    bid: [u32; 3],
    bdim: [u32; 3],
    gdim: [u32; 3],
    rank: u32,
    sync: *const BlockSync,
    shared: *mut u8,
}

thread_local! {
    static LANE: Cell<Option<LaneCtx>> = const { Cell::new(None) };
}

fn ctx() -> LaneCtx {
    LANE.with(|l| l.get())
        .expect("gpu-kernels prelude called outside a kernel launch")
}

/// The emulator's side of the prelude (re-exported by [`crate::prelude`] on the host).
pub mod lane {
    use super::ctx;

    macro_rules! ids {
        ($($name:ident => $field:ident[$i:expr];)*) => {$(
            #[doc = concat!("`", stringify!($name), "` of the running lane.")]
            #[inline]
            pub fn $name() -> u32 { ctx().$field[$i] }
        )*};
    }
    ids! {
        thread_idx_x => tid[0]; thread_idx_y => tid[1]; thread_idx_z => tid[2];
        block_idx_x => bid[0]; block_idx_y => bid[1]; block_idx_z => bid[2];
        block_dim_x => bdim[0]; block_dim_y => bdim[1]; block_dim_z => bdim[2];
        grid_dim_x => gdim[0]; grid_dim_y => gdim[1]; grid_dim_z => gdim[2];
    }

    /// Block-wide barrier of the live lanes.
    pub fn sync_threads() {
        let c = ctx();
        unsafe { &*c.sync }.sync_threads();
    }

    /// The block's dynamic shared memory.
    pub fn dynamic_shared<T>() -> *mut T {
        ctx().shared as *mut T
    }

    /// Sequentially consistent fence (stronger than the GPU's; never weaker).
    pub fn thread_fence() {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }

    /// Sequentially consistent fence (stronger than the GPU's; never weaker).
    pub fn thread_fence_block() {
        thread_fence();
    }

    /// Sequentially consistent fence (as the GPU's `membar.sys`, for the host).
    pub fn fence_system() {
        thread_fence();
    }

    /// One turn of a spin loop: sleeps a little (the emulator's lanes share a few host
    /// cores with the thread they wait for), and unwinds when the launch has failed.
    pub fn spin_pause() {
        let c = ctx();
        let sync = unsafe { &*c.sync };
        if sync.poisoned.load(std::sync::atomic::Ordering::Relaxed)
            || sync.launch.load(std::sync::atomic::Ordering::Relaxed)
        {
            std::panic::resume_unwind(Box::new(super::Aborted));
        }
        std::thread::sleep(std::time::Duration::from_micros(20));
    }

    fn exchange(v: u64) -> ([u64; 32], u32, u32) {
        let c = ctx();
        let (slots, live) = unsafe { &*c.sync }.warp_exchange(c.rank, v);
        (slots, live, c.rank % 32)
    }

    /// Bit `i` set iff live lane `i` of the warp passed `true`.
    pub fn ballot(p: bool) -> u32 {
        let (s, live, _) = exchange(p as u64);
        (0..32)
            .filter(|&i| live & (1 << i) != 0 && s[i] != 0)
            .fold(0, |m, i| m | (1 << i))
    }

    /// True iff some live lane of the warp passed `true`.
    pub fn any_sync(p: bool) -> bool {
        ballot(p) != 0
    }

    /// True iff every live lane of the warp passed `true`.
    pub fn all_sync(p: bool) -> bool {
        let (s, live, _) = exchange(p as u64);
        (0..32).all(|i| live & (1 << i) == 0 || s[i] != 0)
    }

    fn read_lane(v: u32, src: Option<u32>) -> u32 {
        let (s, live, _) = exchange(v as u64);
        match src {
            Some(l) if l < 32 && live & (1 << l) != 0 => s[l as usize] as u32,
            _ => v,
        }
    }

    /// `v` of lane `src % 32`.
    pub fn shfl(v: u32, src: u32) -> u32 {
        read_lane(v, Some(src % 32))
    }
    /// `v` of lane `lane ^ lane_mask`.
    pub fn shfl_xor(v: u32, lane_mask: u32) -> u32 {
        let l = ctx().rank % 32;
        read_lane(v, Some((l ^ lane_mask) % 32))
    }
    /// `v` of lane `lane + delta`, or own `v` past the warp's end.
    pub fn shfl_down(v: u32, delta: u32) -> u32 {
        let l = ctx().rank % 32;
        read_lane(v, l.checked_add(delta).filter(|&s| s < 32))
    }
    /// `v` of lane `lane - delta`, or own `v` below lane 0.
    pub fn shfl_up(v: u32, delta: u32) -> u32 {
        let l = ctx().rank % 32;
        read_lane(v, l.checked_sub(delta))
    }
}

fn panic_message(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic".to_string()
    }
}

/// The shared memory of the block being run (a raw pointer, handed to every lane).
#[derive(Clone, Copy)]
struct SharedMem(*mut u8);
unsafe impl Sync for SharedMem {}
unsafe impl Send for SharedMem {}

/// Runs `body` once per lane of a `grid` x `block` launch with `shared_bytes` of dynamic
/// shared memory per block. Returns the first lane failure, if any.
pub fn run(
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: usize,
    body: &(dyn Fn() + Sync),
) -> Result<(), LaneFailure> {
    let lanes = block[0] * block[1] * block[2];
    let blocks = grid[0] as u64 * grid[1] as u64 * grid[2] as u64;
    if lanes == 0 || blocks == 0 {
        return Ok(());
    }
    // Shared memory as u128 words: 16-byte aligned, like the GPU's.
    let mut words = vec![0u128; shared_bytes.div_ceil(16).max(1)];
    let shared = SharedMem(words.as_mut_ptr() as *mut u8);
    let sync: Mutex<Arc<BlockSync>> = Mutex::new(Arc::new(BlockSync::new(lanes)));
    let failure: Mutex<Option<LaneFailure>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    // Between blocks every lane meets here twice: once after the block (so that lane 0
    // can reset the block's state) and once before the next block starts.
    let between = Barrier::new(lanes as usize);

    std::thread::scope(|s| {
        for rank in 0..lanes {
            let (between, failure, stop, sync) = (&between, &failure, &stop, &sync);
            let lane = move || {
                let shared = shared;
                let tid = [
                    rank % block[0],
                    (rank / block[0]) % block[1],
                    rank / (block[0] * block[1]),
                ];
                for b in 0..blocks {
                    let bid = [
                        (b % grid[0] as u64) as u32,
                        ((b / grid[0] as u64) % grid[1] as u64) as u32,
                        (b / (grid[0] as u64 * grid[1] as u64)) as u32,
                    ];
                    if rank == 0 && b > 0 {
                        *lock(sync) = Arc::new(BlockSync::new(lanes));
                    }
                    if rank == 0 {
                        // Safety: no lane of this block runs yet (all wait at `between`).
                        unsafe { std::ptr::write_bytes(shared.0, 0xCD, shared_bytes) };
                    }
                    between.wait();
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let bsync = Arc::clone(&lock(sync));
                    let lctx = LaneCtx {
                        tid,
                        bid,
                        bdim: block,
                        gdim: grid,
                        rank,
                        sync: Arc::as_ptr(&bsync),
                        shared: shared.0,
                    };
                    LANE.with(|l| l.set(Some(lctx)));
                    let r = catch_unwind(AssertUnwindSafe(body));
                    LANE.with(|l| l.set(None));
                    if let Err(p) = r {
                        if !p.is::<Aborted>() {
                            bsync.poisoned.store(true, Ordering::Relaxed);
                            stop.store(true, Ordering::Relaxed);
                            let mut f = lock(failure);
                            if f.is_none() {
                                *f = Some(LaneFailure {
                                    block: bid,
                                    thread: tid,
                                    message: panic_message(&*p),
                                });
                            }
                        }
                    }
                    bsync.exit(rank);
                    drop(bsync);
                    between.wait();
                }
            };
            if let Err(e) = std::thread::Builder::new()
                .stack_size(LANE_STACK)
                .spawn_scoped(s, lane)
            {
                // The lanes already started wait for this one at `between`: a hang is
                // worse than an abort with a reason.
                eprintln!("emulator: cannot start lane thread {rank} of {lanes}: {e}");
                std::process::abort();
            }
        }
    });
    drop(words);
    failure
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .map_or(Ok(()), Err)
}

/// Runs `body` once per lane of a `grid` x `block` launch with every block at once (each
/// on its own lane threads, with its own shared memory and barriers): the emulator's
/// side of a persistent kernel, whose blocks wait for one another. Returns the first
/// lane failure, if any; a failure unwinds every lane of every block.
pub fn run_concurrent(
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: usize,
    body: &(dyn Fn() + Sync),
) -> Result<(), LaneFailure> {
    let lanes = block[0] * block[1] * block[2];
    let blocks = grid[0] as u64 * grid[1] as u64 * grid[2] as u64;
    if lanes == 0 || blocks == 0 {
        return Ok(());
    }
    let launch = Arc::new(AtomicBool::new(false));
    let failure: Mutex<Option<LaneFailure>> = Mutex::new(None);
    let mut memories: Vec<Vec<u128>> = (0..blocks)
        .map(|_| vec![0u128; shared_bytes.div_ceil(16).max(1)])
        .collect();
    for m in &mut memories {
        // Safety: the vector holds at least `shared_bytes` bytes; no lane runs yet.
        unsafe { std::ptr::write_bytes(m.as_mut_ptr() as *mut u8, 0xCD, shared_bytes) };
    }
    let syncs: Vec<Arc<BlockSync>> = (0..blocks)
        .map(|_| Arc::new(BlockSync::in_launch(lanes, Arc::clone(&launch), false)))
        .collect();
    std::thread::scope(|s| {
        for b in 0..blocks {
            let bid = [
                (b % grid[0] as u64) as u32,
                ((b / grid[0] as u64) % grid[1] as u64) as u32,
                (b / (grid[0] as u64 * grid[1] as u64)) as u32,
            ];
            let shared = SharedMem(memories[b as usize].as_mut_ptr() as *mut u8);
            for rank in 0..lanes {
                let (failure, launch) = (&failure, &launch);
                let bsync = Arc::clone(&syncs[b as usize]);
                let lane = move || {
                    let shared = shared;
                    let tid = [
                        rank % block[0],
                        (rank / block[0]) % block[1],
                        rank / (block[0] * block[1]),
                    ];
                    let lctx = LaneCtx {
                        tid,
                        bid,
                        bdim: block,
                        gdim: grid,
                        rank,
                        sync: Arc::as_ptr(&bsync),
                        shared: shared.0,
                    };
                    LANE.with(|l| l.set(Some(lctx)));
                    let r = catch_unwind(AssertUnwindSafe(body));
                    LANE.with(|l| l.set(None));
                    if let Err(p) = r {
                        if !p.is::<Aborted>() {
                            launch.store(true, Ordering::Relaxed);
                            let mut f = lock(failure);
                            if f.is_none() {
                                *f = Some(LaneFailure {
                                    block: bid,
                                    thread: tid,
                                    message: panic_message(&*p),
                                });
                            }
                        }
                    }
                    bsync.exit(rank);
                };
                if let Err(e) = std::thread::Builder::new()
                    .stack_size(LANE_STACK)
                    .spawn_scoped(s, lane)
                {
                    // Lanes already started may wait for this one forever: abort with a
                    // reason rather than hang.
                    eprintln!("emulator: cannot start lane thread {rank} of block {b}: {e}");
                    std::process::abort();
                }
            }
        }
    });
    drop(memories);
    failure
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .map_or(Ok(()), Err)
}
