//! The host SIMT emulator: runs a kernel over a grid x block launch on CPU threads.
//!
//! It exists so that CI, which has no GPU, tests the very kernel code that runs on the
//! GPU, and finds there what a GPU would hide. Semantics follow CUDA where a kernel can
//! observe them:
//!
//! - every lane of a block is a coroutine with a stack of its own, and the lanes of a
//!   block take turns on one host thread: a lane runs until it waits (at a barrier, a
//!   warp operation, a turn of a spin loop), yields, or returns, and the next lane in
//!   rank order runs (no OS thread per lane, so a barrier costs two stack switches per
//!   lane, not a wake-up of every lane's thread). The blocks of a grid run on a small
//!   pool of host threads ([`Schedule`]): by default two blocks at once, taking the
//!   blocks in an order shuffled by a seed, and each lane yields to the next at random
//!   (seeded) at barriers, warp operations, atomics and volatile accesses, so that a
//!   kernel whose blocks depend on one another's order (an inter-block race) gives
//!   different results under different seeds, and a kernel whose lanes depend on one
//!   another's order without a barrier sees them interleaved. [`Schedule::Sequential`]
//!   runs the blocks one after another in index order, without those yields. The seed
//!   is fixed by default (tests are reproducible); `GPU_MATCH_EMU_SEED`,
//!   `GPU_MATCH_EMU_BLOCKS` and `GPU_MATCH_EMU_SEQUENTIAL=1` choose another for a whole
//!   test run, and [`with_schedule`] for the launches of one thread;
//! - [`sync_threads`](lane::sync_threads) is a barrier of the block's *live* lanes: a lane
//!   that returned no longer holds it back (CUDA's exited-thread rule). Every lane of one
//!   barrier generation must reach it from the same call site (source line and column):
//!   a barrier reached from two sites (a `__syncthreads` in divergent code, which hangs
//!   or misbehaves on a GPU) fails the launch naming both sites. Warp operations are
//!   checked the same way, per warp;
//! - per-block dynamic shared memory of the launch's size, filled with the byte `0xCD`
//!   before each block so that a read of memory nothing wrote shows up in tests;
//! - warp operations meet at a per-warp barrier of the warp's live lanes (groups of 32
//!   consecutive linear thread ids) and exchange values through per-warp slots;
//! - atomics are the host's atomics on the same addresses; volatile loads and stores
//!   (the prelude's `volatile_*`) are sequentially consistent atomics, fences are
//!   sequentially consistent fences;
//! - bounds: the device allocations of [`Device::alloc`](crate::Device::alloc) and
//!   [`Device::alloc_host`](crate::Device::alloc_host) on the emulator register their
//!   byte range here, and so does the shared memory of each running block. An access
//!   through the prelude's [`load`](crate::prelude::load), [`store`](crate::prelude::store)
//!   or a slice made by [`device_slice`](crate::prelude::device_slice) /
//!   [`device_slice_mut`](crate::prelude::device_slice_mut) is checked against the
//!   allocation its base pointer lies in, and an access outside it fails the launch
//!   with the address, the allocation's range, the index and the kernel's source line.
//!   A plain `*p.add(i)` in a kernel is NOT checked by the emulator (it is a raw
//!   pointer access on the host): CI's AddressSanitizer run (`.ci/asan`) catches those
//!   that leave a heap allocation.
//!
//! A hang is reported within a few seconds: a watchdog fails the launch when every live
//! lane of every running block has been waiting (at a barrier, a warp operation or in
//! [`spin_pause`](lane::spin_pause)) and no barrier, warp operation or lane exit
//! completed for [`HANG_SECS`] seconds, naming each lane's block, thread, what it waits
//! at and where (the source location of its last prelude call). A lane that computes
//! (calls no waiting prelude function) counts as progress, so a lane stuck in a loop of
//! its own is reported only when a barrier has waited for it [`DEADLOCK_SECS`] seconds.
//!
//! A persistent launch ([`run_concurrent`], behind
//! [`Device::launch_persistent`](crate::Device::launch_persistent)) runs every block at
//! once, each on a host thread of its own, so that blocks can wait for one another and
//! for the host thread that feeds them, as co-resident blocks do on a GPU. It has no
//! watchdog and its barriers never report a deadlock (its lanes wait for requests as
//! long as the host sends none; the host side has its own timeout); a failing lane stops
//! every block, including lanes spinning in [`spin_pause`](lane::spin_pause).
//!
//! A panic in a lane (a bounds check, say; on the GPU that is a `trap`) stops the launch:
//! lanes waiting at a barrier unwind, and so does every other lane at its next barrier,
//! warp operation, atomic, volatile access or spin turn; the launch returns an error
//! naming the kernel, the block and the thread.
//!
//! Not checked: data races inside a block or between blocks other than through their
//! visible results (there is no race detector: the seeded order and yields make a race
//! show up as a result that changes with the seed), memory ordering weaker than
//! sequential consistency (the host's is stronger than the GPU's), warp-synchronous code
//! that relies on lockstep execution without warp operations, and raw-pointer accesses
//! that stay inside some other live allocation.

use std::any::Any;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe, Location};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, RwLock};
use std::time::{Duration, Instant};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

/// A barrier wait longer than this is reported as a deadlock (the last resort, for a
/// lane that computes forever while the others wait for it).
pub const DEADLOCK_SECS: u64 = 120;

/// A launch whose lanes all wait, with no progress for this long, is reported as a hang.
pub const HANG_SECS: u64 = 3;

/// Lane stack size (address space; a lane touches a few pages of it): kernels use
/// little stack, and a block may hold 1024 lanes.
const LANE_STACK: usize = 1 << 20;

/// A lane that called [`spin_pause`](lane::spin_pause) within this many milliseconds is
/// spinning (waiting); after that it counts as computing again.
const SPIN_FRESH_MS: u64 = 1000;

/// What went wrong inside an emulated launch.
#[derive(Debug, Clone)]
pub struct LaneFailure {
    pub block: [u32; 3],
    pub thread: [u32; 3],
    pub message: String,
}

// ---------------------------------------------------------------------------------------
// Schedule

/// How the blocks of a normal (not persistent) launch are run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// One block at a time, in index order (x fastest), no yields: the old emulator.
    Sequential,
    /// `blocks` blocks at once (at least 1), taken in an order shuffled by `seed`, each
    /// lane yielding its host thread at seeded random points (barriers, warp operations,
    /// atomics, volatile accesses).
    Concurrent { seed: u64, blocks: u32 },
}

impl Schedule {
    /// The default: two blocks at once, seed 0 (reproducible).
    pub const DEFAULT: Schedule = Schedule::Concurrent { seed: 0, blocks: 2 };

    /// The schedule the environment asks for: `GPU_MATCH_EMU_SEQUENTIAL=1`, or
    /// `GPU_MATCH_EMU_SEED=<u64>` and/or `GPU_MATCH_EMU_BLOCKS=<n>` (the rest from
    /// [`Schedule::DEFAULT`]); `None` when none is set. Read once per process.
    pub fn from_env() -> Option<Schedule> {
        static ENV: OnceLock<Option<Schedule>> = OnceLock::new();
        *ENV.get_or_init(|| {
            let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
            if var("GPU_MATCH_EMU_SEQUENTIAL").is_some_and(|v| v.trim() != "0") {
                return Some(Schedule::Sequential);
            }
            let seed = var("GPU_MATCH_EMU_SEED").map(|v| {
                v.trim()
                    .parse::<u64>()
                    .unwrap_or_else(|_| panic!("GPU_MATCH_EMU_SEED={v}: not a u64"))
            });
            let blocks = var("GPU_MATCH_EMU_BLOCKS").map(|v| {
                v.trim()
                    .parse::<u32>()
                    .unwrap_or_else(|_| panic!("GPU_MATCH_EMU_BLOCKS={v}: not a u32"))
            });
            if seed.is_none() && blocks.is_none() {
                return None;
            }
            Some(Schedule::Concurrent {
                seed: seed.unwrap_or(0),
                blocks: blocks.unwrap_or(2),
            })
        })
    }

    /// The schedule of this thread's next launch: [`with_schedule`]'s, else the
    /// environment's, else [`Schedule::DEFAULT`].
    pub fn current() -> Schedule {
        SCHEDULE
            .with(|s| s.get())
            .or_else(Schedule::from_env)
            .unwrap_or(Schedule::DEFAULT)
    }
}

thread_local! {
    static SCHEDULE: Cell<Option<Schedule>> = const { Cell::new(None) };
}

/// Runs `f` with the emulator launches made by this thread using `schedule` (restored
/// afterwards, also on a panic).
///
/// ```
/// use gpu_kernels::emu::{with_schedule, Schedule};
/// // A test that wants the old order (one block at a time, in index order):
/// let seen = with_schedule(Schedule::Sequential, || {
///     // ... launches on Device::emulator() here run their blocks sequentially ...
///     Schedule::current()
/// });
/// assert_eq!(seen, Schedule::Sequential);
/// // A race hunt: the same launches under several seeds, four blocks at once.
/// for seed in 0..4 {
///     with_schedule(Schedule::Concurrent { seed, blocks: 4 }, || {
///         // ... launch, read back, compare with the sequential answer ...
///     });
/// }
/// ```
pub fn with_schedule<R>(schedule: Schedule, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Schedule>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCHEDULE.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SCHEDULE.with(|s| s.replace(Some(schedule))));
    f()
}

/// splitmix64: the emulator's seeded random numbers.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The order in which the blocks `0..n` are taken: shuffled by `seed` (Fisher-Yates, or
/// for huge grids a seeded affine permutation).
enum Order {
    Identity,
    Table(Vec<u64>),
    Affine { a: u64, c: u64, n: u64 },
}

impl Order {
    fn new(n: u64, seed: Option<u64>) -> Order {
        let Some(seed) = seed else {
            return Order::Identity;
        };
        let mut r = mix(seed ^ 0xB10C);
        if n <= 1 << 22 {
            let mut v: Vec<u64> = (0..n).collect();
            for i in (1..n as usize).rev() {
                r = mix(r);
                v.swap(i, (r % (i as u64 + 1)) as usize);
            }
            Order::Table(v)
        } else {
            let gcd = |mut a: u64, mut b: u64| {
                while b != 0 {
                    (a, b) = (b, a % b);
                }
                a
            };
            let mut a = mix(r) % n;
            while gcd(a, n) != 1 {
                a = (a + 1) % n;
            }
            Order::Affine {
                a,
                c: mix(r ^ 1) % n,
                n,
            }
        }
    }

    fn get(&self, i: u64) -> u64 {
        match self {
            Order::Identity => i,
            Order::Table(v) => v[i as usize],
            Order::Affine { a, c, n } => {
                ((*a as u128 * i as u128 + *c as u128) % *n as u128) as u64
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Bounds registry

/// Device allocations of the emulator: start address -> end address (exclusive).
static ALLOCATIONS: RwLock<BTreeMap<usize, usize>> = RwLock::new(BTreeMap::new());

fn allocations() -> std::sync::RwLockReadGuard<'static, BTreeMap<usize, usize>> {
    ALLOCATIONS.read().unwrap_or_else(|e| e.into_inner())
}

/// Registers `bytes` bytes at `start` as a device allocation (bounds-checked accesses
/// through the prelude's `load`/`store`/`device_slice` must stay inside one).
pub fn register(start: *const u8, bytes: usize) {
    let mut m = ALLOCATIONS.write().unwrap_or_else(|e| e.into_inner());
    m.insert(start as usize, start as usize + bytes);
}

/// Forgets the allocation registered at `start`.
pub fn unregister(start: *const u8) {
    let mut m = ALLOCATIONS.write().unwrap_or_else(|e| e.into_inner());
    m.remove(&(start as usize));
}

/// `std::alloc::alloc_zeroed(layout)`, registered as a device allocation of `bytes`
/// bytes (`bytes <= layout.size()`): the emulator's device memory.
///
/// # Safety
/// As [`std::alloc::alloc_zeroed`]: `layout` has a non-zero size.
pub unsafe fn alloc_zeroed(layout: std::alloc::Layout, bytes: usize) -> *mut u8 {
    // SAFETY: the caller guarantees a non-zero size, as `alloc_zeroed` requires.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if !p.is_null() {
        register(p, bytes.min(layout.size()));
    }
    p
}

/// Unregisters and frees memory from [`alloc_zeroed`].
///
/// # Safety
/// As [`std::alloc::dealloc`]: `p` came from [`alloc_zeroed`] with this `layout` and is
/// not used afterwards.
pub unsafe fn dealloc(p: *mut u8, layout: std::alloc::Layout) {
    unregister(p);
    // SAFETY: the caller guarantees `p` was allocated with `layout` and is dead now.
    unsafe { std::alloc::dealloc(p, layout) };
}

/// Checks an access of `size` bytes at element `index` of the array of `elem`-byte
/// elements at `base` (an access by `lane` code through the prelude's helpers); panics
/// with a kernel-readable message when it leaves the allocation `base` lies in.
#[track_caller]
pub fn check_access(what: &str, base: usize, index: usize, elem: usize, count: usize) {
    let loc = Location::caller();
    let lo = index.checked_mul(elem).and_then(|o| base.checked_add(o));
    let hi = count
        .checked_mul(elem)
        .and_then(|n| lo.and_then(|lo| lo.checked_add(n)));
    let inside = |start: usize, end: usize| {
        (base >= start && (base < end || base == start))
            .then(|| lo.zip(hi).is_some_and(|(lo, hi)| lo >= start && hi <= end))
    };
    // The running block's shared memory first (no lock).
    let shared = LANE
        .with(|l| l.get())
        .map(|c| (c.shared as usize, c.shared_bytes));
    let verdict = match shared.and_then(|(s, n)| inside(s, s + n).map(|ok| (ok, s, s + n))) {
        Some(v) => Some(v),
        None => {
            let m = allocations();
            m.range(..=base)
                .next_back()
                .and_then(|(&s, &e)| inside(s, e).map(|ok| (ok, s, e)))
        }
    };
    let range = |count: usize| {
        if count == 1 {
            format!("index {index}")
        } else {
            format!("indices {index}..{}", index as u128 + count as u128)
        }
    };
    match verdict {
        Some((true, _, _)) => {}
        Some((false, start, end)) => panic!(
            "emulator: out-of-bounds {what} at {loc}: {} of {elem}-byte elements from {base:#x} \
             (bytes {:#x}..{:#x}) leave the allocation {start:#x}..{end:#x} ({} bytes, {} elements \
             from the base)",
            range(count),
            base as u128 + index as u128 * elem as u128,
            base as u128 + (index as u128 + count as u128) * elem as u128,
            end - start,
            (end - base) / elem.max(1)
        ),
        None => panic!(
            "emulator: out-of-bounds {what} at {loc}: {} from {base:#x}, which lies in no device \
             allocation (freed, or not device memory)",
            range(count)
        ),
    }
}

// ---------------------------------------------------------------------------------------
// Lane states and the watchdog

/// What a lane is doing, for the watchdog.
const RUNNING: u8 = 0;
const AT_BARRIER: u8 = 1;
const AT_WARP_OP: u8 = 2;
const DONE: u8 = 3;

/// One lane's slot in its launch's [`Watch`].
struct LaneWatch {
    state: AtomicU8,
    /// Milliseconds since the launch started at the lane's last `spin_pause` (0: none).
    spin_ms: AtomicU64,
    /// The source location of the lane's last prelude call that records one.
    loc: AtomicPtr<Location<'static>>,
}

impl LaneWatch {
    fn new() -> Self {
        LaneWatch {
            state: AtomicU8::new(DONE),
            spin_ms: AtomicU64::new(0),
            loc: AtomicPtr::new(std::ptr::null_mut()),
        }
    }
    fn note(&self, loc: &'static Location<'static>) {
        self.loc
            .store(loc as *const _ as *mut Location<'static>, Ordering::Relaxed);
    }
    fn location(&self) -> Option<&'static Location<'static>> {
        // SAFETY: the pointer is null or came from a `&'static Location` in `note`.
        unsafe { self.loc.load(Ordering::Relaxed).as_ref() }
    }
}

/// A launch's lanes as the watchdog sees them: `groups` pool slots of `lanes` lanes.
struct Watch {
    start: Instant,
    lanes: u32,
    slots: Vec<LaneWatch>,
    /// The block each pool slot runs (`u64::MAX`: none).
    running: Vec<AtomicU64>,
    /// Bumped by every completed barrier and warp operation, lane exit and block start.
    progress: AtomicU64,
    grid: [u32; 3],
    block: [u32; 3],
}

impl Watch {
    fn new(groups: u32, lanes: u32, grid: [u32; 3], block: [u32; 3]) -> Self {
        Watch {
            start: Instant::now(),
            lanes,
            slots: (0..groups * lanes).map(|_| LaneWatch::new()).collect(),
            running: (0..groups).map(|_| AtomicU64::new(u64::MAX)).collect(),
            progress: AtomicU64::new(0),
            grid,
            block,
        }
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64 + 1
    }

    fn bump(&self) {
        self.progress.fetch_add(1, Ordering::Relaxed);
    }

    /// True when some lane waits and no lane runs.
    fn all_waiting(&self) -> bool {
        let now = self.now_ms();
        let mut waiting = false;
        for s in &self.slots {
            match s.state.load(Ordering::Relaxed) {
                DONE => {}
                AT_BARRIER | AT_WARP_OP => waiting = true,
                _ => {
                    let spun = s.spin_ms.load(Ordering::Relaxed);
                    if spun == 0 || now.saturating_sub(spun) > SPIN_FRESH_MS {
                        return false;
                    }
                    waiting = true;
                }
            }
        }
        waiting
    }

    /// The hang report: every live lane, grouped by block, what it waits at and where.
    fn report(&self) -> (String, [u32; 3], [u32; 3]) {
        let now = self.now_ms();
        let mut groups: BTreeMap<(u64, String), Vec<u32>> = BTreeMap::new();
        let mut first = None;
        for (g, run) in self.running.iter().enumerate() {
            let b = run.load(Ordering::Relaxed);
            if b == u64::MAX {
                continue;
            }
            for r in 0..self.lanes {
                let s = &self.slots[g * self.lanes as usize + r as usize];
                let what = match s.state.load(Ordering::Relaxed) {
                    DONE => continue,
                    AT_BARRIER => "waits at sync_threads",
                    AT_WARP_OP => "waits at a warp operation",
                    _ if now.saturating_sub(s.spin_ms.load(Ordering::Relaxed)) <= SPIN_FRESH_MS => {
                        "spins (spin_pause)"
                    }
                    _ => "runs",
                };
                let at = s.location().map_or("no prelude call yet".to_string(), |l| {
                    format!("last at {l}")
                });
                first.get_or_insert((b, r));
                groups
                    .entry((b, format!("{what}, {at}")))
                    .or_default()
                    .push(r);
            }
        }
        let mut msg = format!(
            "emulator: hang: every live thread has waited {HANG_SECS} s with no barrier, warp \
             operation or thread exit completing (a barrier some threads never reach, warp \
             operations called divergently, or a spin on a flag no running thread sets):"
        );
        for ((b, what), ranks) in &groups {
            let bid = self.block_id(*b);
            let mut ids = String::new();
            let mut i = 0;
            while i < ranks.len() {
                let mut j = i;
                while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
                    j += 1;
                }
                if !ids.is_empty() {
                    ids.push(',');
                }
                ids += &if i == j {
                    format!("{:?}", self.thread_id(ranks[i]))
                } else {
                    format!(
                        "{:?}..={:?}",
                        self.thread_id(ranks[i]),
                        self.thread_id(ranks[j])
                    )
                };
                i = j + 1;
            }
            msg += &format!("\n  block {bid:?} thread(s) {ids}: {what}");
        }
        let (b, r) = first.unwrap_or((0, 0));
        (msg, self.block_id(b), self.thread_id(r))
    }

    fn block_id(&self, b: u64) -> [u32; 3] {
        block_id(b, self.grid)
    }
    fn thread_id(&self, r: u32) -> [u32; 3] {
        thread_id(r, self.block)
    }
}

fn block_id(b: u64, grid: [u32; 3]) -> [u32; 3] {
    [
        (b % grid[0] as u64) as u32,
        ((b / grid[0] as u64) % grid[1] as u64) as u32,
        (b / (grid[0] as u64 * grid[1] as u64)) as u32,
    ]
}

fn thread_id(rank: u32, block: [u32; 3]) -> [u32; 3] {
    [
        rank % block[0],
        (rank / block[0]) % block[1],
        rank / (block[0] * block[1]),
    ]
}

// ---------------------------------------------------------------------------------------
// Block synchronisation

/// Sentinel payload used to unwind lanes of a poisoned block; never shown to users.
struct Aborted;

type Site = (&'static Location<'static>, u32);

struct BarState {
    live: u32,
    arrived: u32,
    generation: u64,
    /// Where the first lane of this generation reached the barrier, and its rank.
    site: Option<Site>,
}

struct WarpState {
    live: u32,
    arrived: u32,
    generation: u64,
    slots: [u64; 32],
    /// The slots and the live mask when the last exchange completed.
    result: [u64; 32],
    result_live: u32,
    site: Option<Site>,
}

/// Why a lane gave its host thread back to its block's scheduler.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// A scheduling point: the lane can go on at once.
    Yield,
    /// A turn of a spin loop ([`spin_pause`](lane::spin_pause)).
    Spin,
    /// Waiting at the block's barrier until its generation leaves this one.
    Barrier(u64),
    /// Waiting at warp `.0`'s operation until its generation leaves `.1`.
    Warp(u32, u64),
}

/// Synchronisation state of one running block. Its lanes all run on one host thread (the
/// block's scheduler, [`Launch::run_block`]), so its locks are never contended; they keep
/// the state `Sync` for the lanes' shared references.
struct BlockSync {
    bar: Mutex<BarState>,
    warps: Vec<Mutex<WarpState>>,
    /// Set when any block of the launch failed, or the watchdog found a hang.
    launch: Arc<AtomicBool>,
    /// Whether a long barrier wait is reported as a deadlock (not in persistent launches).
    deadlock: bool,
    watch: Arc<Watch>,
    /// This block's pool slot in `watch`.
    group: u32,
    block: [u32; 3],
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl BlockSync {
    fn new(
        lanes: u32,
        launch: Arc<AtomicBool>,
        deadlock: bool,
        watch: Arc<Watch>,
        group: u32,
        block: [u32; 3],
    ) -> Self {
        let nwarps = lanes.div_ceil(32);
        let warps = (0..nwarps)
            .map(|w| {
                let n = (lanes - w * 32).min(32);
                let live = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
                Mutex::new(WarpState {
                    live,
                    arrived: 0,
                    generation: 0,
                    slots: [0; 32],
                    result: [0; 32],
                    result_live: 0,
                    site: None,
                })
            })
            .collect();
        BlockSync {
            bar: Mutex::new(BarState {
                live: lanes,
                arrived: 0,
                generation: 0,
                site: None,
            }),
            warps,
            launch,
            deadlock,
            watch,
            group,
            block,
        }
    }

    fn lane_watch(&self, rank: u32) -> &LaneWatch {
        &self.watch.slots[(self.group * self.watch.lanes + rank) as usize]
    }

    fn failed(&self) -> bool {
        self.launch.load(Ordering::Relaxed)
    }

    /// Whether a lane that gave its thread back with `w` may go on (or must be resumed
    /// to see that the launch failed).
    fn ready(&self, w: Wait) -> bool {
        match w {
            Wait::Yield | Wait::Spin => true,
            Wait::Barrier(gen) => self.failed() || lock(&self.bar).generation != gen,
            Wait::Warp(i, gen) => self.failed() || lock(&self.warps[i as usize]).generation != gen,
        }
    }

    /// Gives the thread back until `m`'s state leaves generation `gen`, unwinding if the
    /// launch failed and reporting a deadlock after [`DEADLOCK_SECS`].
    fn wait<'a, T>(
        &self,
        m: &'a Mutex<T>,
        what: &str,
        until: Wait,
        generation: impl Fn(&T) -> u64,
        gen: u64,
    ) -> MutexGuard<'a, T> {
        let start = Instant::now();
        loop {
            let g = lock(m);
            if generation(&g) != gen {
                return g;
            }
            drop(g);
            if self.failed() {
                resume_unwind(Box::new(Aborted));
            }
            if self.deadlock && start.elapsed() > Duration::from_secs(DEADLOCK_SECS) {
                panic!("emulator: deadlock: waited {DEADLOCK_SECS} s at {what}");
            }
            suspend(until);
        }
    }

    /// A different call site than the generation's first lane's is an error.
    fn check_site(
        &self,
        site: &mut Option<Site>,
        loc: &'static Location<'static>,
        rank: u32,
        what: &str,
    ) {
        match *site {
            None => *site = Some((loc, rank)),
            Some((first, r)) if first != loc => {
                let (t0, t1) = (
                    thread_id(r, self.watch.block),
                    thread_id(rank, self.watch.block),
                );
                panic!(
                    "emulator: divergent {what} in block {:?}: thread {t0:?} reached it at {first}, \
                     thread {t1:?} at {loc} (every live thread must reach the same {what} \
                     together; on a GPU this hangs or corrupts the barrier)",
                    self.block
                );
            }
            Some(_) => {}
        }
    }

    fn sync_threads(&self, rank: u32, loc: &'static Location<'static>) {
        let mut g = lock(&self.bar);
        let mut site = g.site;
        self.check_site(&mut site, loc, rank, "sync_threads");
        g.site = site;
        g.arrived += 1;
        if g.arrived == g.live {
            self.complete_bar(&mut g);
            return;
        }
        let gen = g.generation;
        drop(g);
        let lw = self.lane_watch(rank);
        lw.state.store(AT_BARRIER, Ordering::Relaxed);
        drop(self.wait(
            &self.bar,
            "sync_threads",
            Wait::Barrier(gen),
            |s| s.generation,
            gen,
        ));
        lw.state.store(RUNNING, Ordering::Relaxed);
    }

    fn complete_bar(&self, g: &mut BarState) {
        g.arrived = 0;
        g.generation += 1;
        g.site = None;
        self.watch.bump();
    }

    /// Exchanges one value per live lane of the warp; returns all slots and the live mask.
    fn warp_exchange(
        &self,
        rank: u32,
        v: u64,
        loc: &'static Location<'static>,
    ) -> ([u64; 32], u32) {
        let w = rank / 32;
        let m = &self.warps[w as usize];
        let bit = 1u32 << (rank % 32);
        let mut g = lock(m);
        let mut site = g.site;
        self.check_site(&mut site, loc, rank, "warp operation");
        g.site = site;
        g.slots[(rank % 32) as usize] = v;
        g.arrived |= bit;
        if g.arrived == g.live {
            self.complete_warp(&mut g);
            return (g.result, g.result_live);
        }
        let gen = g.generation;
        drop(g);
        let lw = self.lane_watch(rank);
        lw.state.store(AT_WARP_OP, Ordering::Relaxed);
        let g = self.wait(
            m,
            "a warp operation",
            Wait::Warp(w, gen),
            |s| s.generation,
            gen,
        );
        lw.state.store(RUNNING, Ordering::Relaxed);
        (g.result, g.result_live)
    }

    fn complete_warp(&self, g: &mut WarpState) {
        g.result = g.slots;
        g.result_live = g.live;
        g.arrived = 0;
        g.generation += 1;
        g.site = None;
        self.watch.bump();
    }

    /// The lane returned (or unwound): it no longer holds barriers back.
    fn exit(&self, rank: u32) {
        self.lane_watch(rank).state.store(DONE, Ordering::Relaxed);
        self.watch.bump();
        {
            let mut g = lock(&self.bar);
            g.live -= 1;
            if g.arrived > 0 && g.arrived == g.live {
                self.complete_bar(&mut g);
            }
        }
        let mut g = lock(&self.warps[(rank / 32) as usize]);
        g.live &= !(1u32 << (rank % 32));
        if g.arrived != 0 && g.arrived == g.live {
            self.complete_warp(&mut g);
        }
    }
}

/// The coroutine handle through which a lane gives its host thread back.
type LaneYielder = Yielder<(), Wait>;

/// The running lane's view of its launch (thread-local, set by the lane itself whenever
/// it runs: the lanes of a block share their host thread).
#[derive(Clone, Copy)]
struct LaneCtx {
    tid: [u32; 3],
    bid: [u32; 3],
    bdim: [u32; 3],
    gdim: [u32; 3],
    rank: u32,
    sync: *const BlockSync,
    shared: *mut u8,
    shared_bytes: usize,
    /// Seeded yields at scheduling points (concurrent schedule only).
    yields: bool,
    /// The lane's coroutine, to give the thread back.
    yielder: *const LaneYielder,
}

thread_local! {
    static LANE: Cell<Option<LaneCtx>> = const { Cell::new(None) };
    /// The running lane's random state for seeded yields.
    static RNG: Cell<u64> = const { Cell::new(0) };
}

fn ctx() -> LaneCtx {
    LANE.with(|l| l.get())
        .expect("gpu-kernels prelude called outside a kernel launch")
}

impl LaneCtx {
    fn sync(&self) -> &BlockSync {
        // SAFETY: `sync` points to the `BlockSync` of the block the lane runs in, which
        // its scheduler (`Launch::run_block`) keeps until every lane has returned.
        unsafe { &*self.sync }
    }
}

/// Gives the running lane's host thread back to its block's scheduler, which resumes it
/// later (at once for `Wait::Yield`); restores the lane's thread-local state afterwards.
fn suspend(w: Wait) {
    let c = ctx();
    let rng = RNG.with(|r| r.get());
    // SAFETY: `yielder` is the `Yielder` of the coroutine this code runs on (set by the
    // lane when it started, valid until the coroutine returns).
    unsafe { &*c.yielder }.suspend(w);
    LANE.with(|l| l.set(Some(c)));
    RNG.with(|r| r.set(rng));
}

/// The emulator's side of the prelude (re-exported by [`crate::prelude`] on the host).
pub mod lane {
    use super::{ctx, LaneCtx, Location, Wait, LANE, RNG};

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

    /// A scheduling point of the running lane: unwinds it when the launch has failed,
    /// records `loc` as its location and, under
    /// a concurrent schedule, gives the host thread to the block's next lane with
    /// probability 1/8 (seeded); otherwise with probability 1/1024, so that a lane that
    /// spins on memory another lane of its block sets (without `spin_pause`) still lets
    /// that lane run. Outside a launch (host code calling an atomic helper) it does nothing.
    #[doc(hidden)]
    #[inline]
    pub fn touch(loc: &'static Location<'static>) {
        if let Some(c) = LANE.with(|l| l.get()) {
            point(&c, loc);
        }
    }

    fn point(c: &LaneCtx, loc: &'static Location<'static>) {
        let sync = c.sync();
        // A failed launch stops its lanes here too: a lane left alone in its block (the
        // others unwound) passes every barrier at once and might never wait again.
        if sync.failed() {
            std::panic::resume_unwind(Box::new(super::Aborted));
        }
        sync.lane_watch(c.rank).note(loc);
        let r = RNG.with(|r| {
            let x = super::mix(r.get());
            r.set(x);
            x
        });
        if r.is_multiple_of(if c.yields { 8 } else { 1024 }) {
            super::suspend(Wait::Yield);
        }
    }

    /// Block-wide barrier of the live lanes, all reaching it from this call site.
    #[track_caller]
    pub fn sync_threads() {
        let c = ctx();
        let loc = Location::caller();
        point(&c, loc);
        c.sync().sync_threads(c.rank, loc);
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

    /// One turn of a spin loop: gives the host thread to the block's other lanes (a
    /// round of the block's lanes in which they only spin sleeps a little: they wait for
    /// another block or the host), and unwinds when the launch has failed. The watchdog
    /// counts a lane that calls it as waiting.
    #[track_caller]
    pub fn spin_pause() {
        let c = ctx();
        let sync = c.sync();
        if sync.failed() {
            std::panic::resume_unwind(Box::new(super::Aborted));
        }
        let lw = sync.lane_watch(c.rank);
        lw.note(Location::caller());
        lw.spin_ms
            .store(sync.watch.now_ms(), std::sync::atomic::Ordering::Relaxed);
        super::suspend(Wait::Spin);
    }

    #[track_caller]
    fn exchange(v: u64) -> ([u64; 32], u32, u32) {
        let c = ctx();
        let loc = Location::caller();
        point(&c, loc);
        let (slots, live) = c.sync().warp_exchange(c.rank, v, loc);
        (slots, live, c.rank % 32)
    }

    /// Bit `i` set iff live lane `i` of the warp passed `true`.
    #[track_caller]
    pub fn ballot(p: bool) -> u32 {
        let (s, live, _) = exchange(p as u64);
        (0..32)
            .filter(|&i| live & (1 << i) != 0 && s[i] != 0)
            .fold(0, |m, i| m | (1 << i))
    }

    /// The warp's barrier: every live lane waits for the others (the exchange's lock
    /// orders their memory accesses).
    #[track_caller]
    pub fn sync_warp() {
        exchange(0);
    }

    /// True iff some live lane of the warp passed `true`.
    #[track_caller]
    pub fn any_sync(p: bool) -> bool {
        ballot(p) != 0
    }

    /// True iff every live lane of the warp passed `true`.
    #[track_caller]
    pub fn all_sync(p: bool) -> bool {
        let (s, live, _) = exchange(p as u64);
        (0..32).all(|i| live & (1 << i) == 0 || s[i] != 0)
    }

    #[track_caller]
    fn read_lane(v: u32, src: Option<u32>) -> u32 {
        let (s, live, _) = exchange(v as u64);
        match src {
            Some(l) if l < 32 && live & (1 << l) != 0 => s[l as usize] as u32,
            _ => v,
        }
    }

    /// `v` of lane `src % 32`.
    #[track_caller]
    pub fn shfl(v: u32, src: u32) -> u32 {
        read_lane(v, Some(src % 32))
    }
    /// `v` of lane `lane ^ lane_mask`.
    #[track_caller]
    pub fn shfl_xor(v: u32, lane_mask: u32) -> u32 {
        let l = ctx().rank % 32;
        read_lane(v, Some((l ^ lane_mask) % 32))
    }
    /// `v` of lane `lane + delta`, or own `v` past the warp's end.
    #[track_caller]
    pub fn shfl_down(v: u32, delta: u32) -> u32 {
        let l = ctx().rank % 32;
        read_lane(v, l.checked_add(delta).filter(|&s| s < 32))
    }
    /// `v` of lane `lane - delta`, or own `v` below lane 0.
    #[track_caller]
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

/// Lane stacks of finished blocks, kept for the next blocks (a new stack is a `mmap`
/// and page faults as it is first touched).
static STACKS: Mutex<Vec<DefaultStack>> = Mutex::new(Vec::new());

/// At most this many stacks are kept in [`STACKS`] (of [`LANE_STACK`] bytes of address
/// space each, of which a lane touches a few pages).
const STACKS_KEPT: usize = 4096;

/// `n` lane stacks: kept ones first, then new ones.
fn take_stacks(n: usize) -> Vec<DefaultStack> {
    let mut got = {
        let mut kept = lock(&STACKS);
        let at = kept.len().saturating_sub(n);
        kept.split_off(at)
    };
    while got.len() < n {
        match DefaultStack::new(LANE_STACK) {
            Ok(s) => got.push(s),
            Err(e) => {
                // Lanes already started may wait for this one forever: abort with a
                // reason rather than hang.
                eprintln!("emulator: cannot allocate a lane stack: {e}");
                std::process::abort();
            }
        }
    }
    got
}

fn keep_stacks(mut stacks: Vec<DefaultStack>) {
    let mut kept = lock(&STACKS);
    let room = STACKS_KEPT.saturating_sub(kept.len());
    stacks.truncate(room);
    kept.append(&mut stacks);
}

/// Shared memory of a block (a raw pointer, handed to each of its lanes).
#[derive(Clone, Copy)]
struct SharedMem(*mut u8);
// SAFETY: the memory it points to outlives the lanes (it is freed after the launch's
// threads have ended), and the lanes access it as a GPU block's lanes access shared
// memory.
unsafe impl Sync for SharedMem {}
// SAFETY: as for `Sync`.
unsafe impl Send for SharedMem {}

/// What every block of one launch shares.
struct Launch<'a> {
    grid: [u32; 3],
    block: [u32; 3],
    lanes: u32,
    shared_bytes: usize,
    body: &'a (dyn Fn() + Sync),
    /// Set when a lane failed (or the watchdog found a hang): the launch stops.
    launch: Arc<AtomicBool>,
    failure: Mutex<Option<LaneFailure>>,
    watch: Arc<Watch>,
    /// Seeded block order and yields (`None`: no yields but the rare ones that keep a
    /// lane spinning without `spin_pause` from starving the others).
    seed: Option<u64>,
    /// Whether a long barrier wait is reported as a deadlock.
    deadlock: bool,
}

impl<'a> Launch<'a> {
    fn new(
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: usize,
        body: &'a (dyn Fn() + Sync),
        groups: u32,
        seed: Option<u64>,
        deadlock: bool,
    ) -> Self {
        let lanes = block[0] * block[1] * block[2];
        Launch {
            grid,
            block,
            lanes,
            shared_bytes,
            body,
            launch: Arc::new(AtomicBool::new(false)),
            failure: Mutex::new(None),
            watch: Arc::new(Watch::new(groups, lanes, grid, block)),
            seed,
            deadlock,
        }
    }

    /// Records a lane's panic as the launch's failure (the first one wins) and stops
    /// the launch.
    fn record_failure(&self, r: std::thread::Result<()>, block: [u32; 3], thread: [u32; 3]) {
        if let Err(p) = r {
            if !p.is::<Aborted>() {
                self.fail(LaneFailure {
                    block,
                    thread,
                    message: panic_message(&*p),
                });
            }
        }
    }

    fn fail(&self, f: LaneFailure) {
        self.launch.store(true, Ordering::Relaxed);
        let mut first = lock(&self.failure);
        if first.is_none() {
            *first = Some(f);
        }
    }

    fn failed(&self) -> bool {
        self.launch.load(Ordering::Relaxed)
    }

    fn into_result(self) -> Result<(), LaneFailure> {
        self.failure
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .map_or(Ok(()), Err)
    }

    /// Runs block `b` in pool slot `group`, its shared memory at `shared`: every lane a
    /// coroutine on this thread, resumed in rank order, round after round, until all
    /// have returned. A lane runs until it waits (a barrier, a warp operation, a turn of
    /// a spin loop), yields at a scheduling point, or returns; a waiting lane is resumed
    /// once what it waits for has completed. A round in which lanes only spun sleeps a
    /// little (they wait for another block or the host); one in which every lane waits
    /// and nothing completed (a hang, which the watchdog reports) sleeps longer.
    fn run_block(&self, group: u32, b: u64, shared: SharedMem) {
        let lanes = self.lanes;
        let bid = block_id(b, self.grid);
        let sync = BlockSync::new(
            lanes,
            Arc::clone(&self.launch),
            self.deadlock,
            Arc::clone(&self.watch),
            group,
            bid,
        );
        for rank in 0..lanes {
            let lw = sync.lane_watch(rank);
            lw.spin_ms.store(0, Ordering::Relaxed);
            lw.state.store(RUNNING, Ordering::Relaxed);
        }
        self.watch.bump();
        let (sync, yields) = (&sync, self.seed.is_some());
        let seed = self.seed.unwrap_or(0);
        let mut coroutines: Vec<Option<Coroutine<(), Wait, (), DefaultStack>>> =
            take_stacks(lanes as usize)
                .into_iter()
                .zip(0..lanes)
                .map(|(stack, rank)| {
                    let lane = move |y: &LaneYielder, ()| {
                        let tid = thread_id(rank, self.block);
                        RNG.with(|r| r.set(mix(seed ^ mix(b) ^ ((rank as u64) << 40))));
                        let lctx = LaneCtx {
                            tid,
                            bid,
                            bdim: self.block,
                            gdim: self.grid,
                            rank,
                            sync,
                            shared: shared.0,
                            shared_bytes: self.shared_bytes,
                            yields,
                            yielder: y,
                        };
                        LANE.with(|l| l.set(Some(lctx)));
                        let r = catch_unwind(AssertUnwindSafe(self.body));
                        LANE.with(|l| l.set(None));
                        self.record_failure(r, bid, tid);
                        sync.exit(rank);
                    };
                    // SAFETY: the closure borrows `self`, `sync` and the launch's shared
                    // memory, all of which outlive the coroutine: every coroutine is run
                    // to completion (a lane's panic is caught inside it) and dropped
                    // below, before this function returns.
                    Some(unsafe { Coroutine::with_stack_unchecked(stack, lane) })
                })
                .collect();
        let mut waits = vec![Wait::Yield; lanes as usize];
        let mut stacks = Vec::with_capacity(lanes as usize);
        let mut left = lanes;
        let mut stalled = false;
        while left > 0 {
            let progress = self.watch.progress.load(Ordering::Relaxed);
            let (mut ran, mut spun) = (false, false);
            for (slot, wait) in coroutines.iter_mut().zip(waits.iter_mut()) {
                let Some(co) = slot else { continue };
                if !stalled && !sync.ready(*wait) {
                    continue;
                }
                match co.resume(()) {
                    CoroutineResult::Return(()) => {
                        if let Some(co) = slot.take() {
                            stacks.push(co.into_stack());
                        }
                        left -= 1;
                        ran = true;
                    }
                    CoroutineResult::Yield(w) => {
                        *wait = w;
                        ran |= w == Wait::Yield;
                        spun |= w == Wait::Spin;
                    }
                }
            }
            stalled = false;
            if spun && !ran {
                std::thread::sleep(Duration::from_micros(20));
            } else if !ran && self.watch.progress.load(Ordering::Relaxed) == progress {
                // Every lane waits for another that will not come: the watchdog reports
                // the hang (or, in a persistent launch, a failure elsewhere ends it);
                // meanwhile every lane is resumed to see it.
                std::thread::sleep(Duration::from_millis(1));
                stalled = true;
            }
        }
        drop(coroutines);
        keep_stacks(stacks);
    }
}

/// Runs `body` once per lane of a `grid` x `block` launch with `shared_bytes` of dynamic
/// shared memory per block, under this thread's [`Schedule`]. Returns the first lane
/// failure (or the watchdog's hang report), if any.
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
    let (seed, pool) = match Schedule::current() {
        Schedule::Sequential => (None, 1),
        Schedule::Concurrent { seed, blocks: k } => (Some(seed), k.max(1)),
    };
    let groups = (pool as u64).min(blocks) as u32;
    let order = Order::new(blocks, seed);
    let next = AtomicU64::new(0);
    let launch = Launch::new(grid, block, shared_bytes, body, groups, seed, true);
    // Shared memory as u128 words: 16-byte aligned, like the GPU's.
    let mut memories: Vec<Vec<u128>> = (0..groups)
        .map(|_| vec![0u128; shared_bytes.div_ceil(16).max(1)])
        .collect();
    let done = (Mutex::new(false), Condvar::new());
    // One pool slot: takes the next block while there is one and the launch has not failed.
    let slot = |g: u32, shared: SharedMem| loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= blocks || launch.failed() {
            launch.watch.running[g as usize].store(u64::MAX, Ordering::Relaxed);
            return;
        }
        let b = order.get(i);
        launch.watch.running[g as usize].store(b, Ordering::Relaxed);
        // SAFETY: the slot's memory holds at least `shared_bytes` bytes, and no lane of
        // the slot runs (the previous block has ended).
        unsafe { std::ptr::write_bytes(shared.0, 0xCD, shared_bytes) };
        launch.run_block(g, b, shared);
    };

    std::thread::scope(|s| {
        // The watchdog: fails the launch when every live lane has waited HANG_SECS.
        {
            let (launch, done) = (&launch, &done);
            s.spawn(move || {
                let watch = &launch.watch;
                let mut last = (watch.progress.load(Ordering::Relaxed), Instant::now());
                let mut g = lock(&done.0);
                while !*g {
                    g = done
                        .1
                        .wait_timeout(g, Duration::from_millis(100))
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                    let p = watch.progress.load(Ordering::Relaxed);
                    if p != last.0 || !watch.all_waiting() {
                        last = (p, Instant::now());
                    } else if last.1.elapsed() >= Duration::from_secs(HANG_SECS) {
                        let (message, block, thread) = watch.report();
                        launch.fail(LaneFailure {
                            block,
                            thread,
                            message,
                        });
                        break;
                    }
                }
            });
        }
        std::thread::scope(|ws| {
            let mut mems = memories.iter_mut();
            let first = mems.next().map(|m| SharedMem(m.as_mut_ptr() as *mut u8));
            for (g, mem) in mems.enumerate() {
                let shared = SharedMem(mem.as_mut_ptr() as *mut u8);
                let slot = &slot;
                if let Err(e) =
                    std::thread::Builder::new().spawn_scoped(ws, move || slot(g as u32 + 1, shared))
                {
                    // Fewer slots run the blocks: the launch stays correct.
                    eprintln!(
                        "emulator: cannot start a block thread ({e}); fewer blocks run at once"
                    );
                }
            }
            // This thread runs the first slot.
            if let Some(shared) = first {
                slot(0, shared);
            }
        });
        *lock(&done.0) = true;
        done.1.notify_all();
    });
    drop(memories);
    launch.into_result()
}

/// Runs `body` once per lane of a `grid` x `block` launch with every block at once (each
/// on a host thread of its own, with its own shared memory and barriers): the
/// emulator's side of a persistent kernel, whose blocks wait for one another. Returns
/// the first lane failure, if any; a failure unwinds every lane of every block. No
/// watchdog, no deadlock report, no seeded yields.
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
    let launch = Launch::new(grid, block, shared_bytes, body, blocks as u32, None, false);
    let mut memories: Vec<Vec<u128>> = (0..blocks)
        .map(|_| vec![0u128; shared_bytes.div_ceil(16).max(1)])
        .collect();
    for m in &mut memories {
        // SAFETY: the vector holds at least `shared_bytes` bytes; no lane runs yet.
        unsafe { std::ptr::write_bytes(m.as_mut_ptr() as *mut u8, 0xCD, shared_bytes) };
    }
    std::thread::scope(|s| {
        for (b, mem) in memories.iter_mut().enumerate() {
            let shared = SharedMem(mem.as_mut_ptr() as *mut u8);
            let launch = &launch;
            launch.watch.running[b].store(b as u64, Ordering::Relaxed);
            if let Err(e) = std::thread::Builder::new()
                .spawn_scoped(s, move || launch.run_block(b as u32, b as u64, shared))
            {
                // The blocks already started may wait for this one forever: abort with
                // a reason rather than hang.
                eprintln!("emulator: cannot start the thread of block {b}: {e}");
                std::process::abort();
            }
        }
    });
    drop(memories);
    launch.into_result()
}
