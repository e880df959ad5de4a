//! The CLCB engine (§4.2–4.3): the tables of [`layout`](crate::layout) on a [`Device`]
//! (a GPU or the host emulator: one engine, the same kernels), and the per-event
//! pipeline on one stream with one synchronisation per event:
//!
//! | step | paper | here |
//! | --- | --- | --- |
//! | S1 | copy the event in | one `write` of the encoded event (`InputBF`, `InputPos`, `Attrs`) |
//! | S1a + S1b | `Loc` | [`clcb_kernels::loc()`], one thread per filter |
//! | S2 | `Cont` (CCM) | [`clcb_kernels::cont()`], one row of blocks per attribute |
//! | S2a | `Zip` | [`clcb_kernels::zip()`], one thread per subscription |
//! | S3* | copy `Subs` out | one `read` of `SubsCount` and the first [`Options::read_prefix`] ids (a second read only when more matched) |
//!
//! S4 (the reset) is folded into `Loc` and `Zip` as in the paper; `FCount` keeps one byte
//! per run, so `Loc` resets it once every four events ([`Options::fcount_runs`]).
//!
//! Choices where the paper is silent: `Subs` and `SubsCount` share one buffer so that
//! one copy brings both back; the ids come back in `atomicAdd` order and the engine
//! sorts them; filters without content constraints are completed by `Loc`.
//!
//! Rectangles (beyond the paper): a rectangular area is its low corner in `FPos`, a
//! negative `SqDist` and its high corner in `AreaHi` ([`crate::layout`]), which every
//! kernel reads only for a rectangle and every move path writes; `AreaHi` is allocated
//! at the first rectangle (a set of circles uses no more device memory than before). The
//! grid mode files a rectangle by its enclosing circle ([`crate::layout::enclosing`]) and
//! tests it exactly.
//!
//! Area moves: [`Engine::move_area_by_copies`] is the paper's (two copies);
//! [`Engine::move_area`] carries the update in a launch's arguments instead (no copy,
//! no wait).
//!
//! Beyond the paper: [`Engine::match_batch`] matches many events per pass over the
//! filters (`match_batch` + `zip_batch` kernels, per-event bit vectors), and
//! [`Engine::move_areas`] applies many area updates with one copy and one launch. It
//! reads a flat batch of events ([`Engine::match_event_batch`],
//! [`crate::batch::EventBatch`]) as it lies; heap events are converted to one first.
//!
//! Beyond the paper, the low-latency per-event path ([`Engine::set_low_latency`], as
//! CCM's `Config::low_latency`): one launch and one synchronisation per event, nothing
//! copied. `InputBF` and `InputPos` travel in the launch parameters, the rest of the
//! encoded event in page-locked host memory mapped into the device, which only the
//! blocks holding a candidate filter read (once per block, into shared memory); the
//! kernel (`match_latency` over every filter, or `grid_latency` over the grid's
//! candidates) checks S1a, S1b and the filter's own constraints in one thread, and
//! appends each matching subscription, tagged with the event's number, to a list in
//! mapped host memory. `SubsSeq` (the last event that claimed each subscription)
//! replaces `SubsBV`, so there is no `Zip` and no reset. An event too long to stage in
//! shared memory ([`clcb_kernels::LATENCY_MAX_WORDS`]) takes the copying path. In this
//! mode the areas also live packed, position and squared radius side by side in one
//! 16-byte record per filter ([`PackedArea`], `Areas`), which the low-latency kernels
//! read: moving one area is one 16-byte copy ([`Engine::move_area`]). The paper's
//! `FPos` and `SqDist` then lag behind and are refreshed from `Areas` (one
//! `unpack_areas` launch) before the next kernel that reads them.
//!
//! Beyond the paper, the persistent mode ([`Engine::set_persistent`]): the low-latency
//! matching (over every filter, or in grid mode over the grid's candidates) in a
//! persistent kernel ([`clcb_kernels::clcb_persistent()`], facility
//! [`gpu_kernels::persist`]) launched once, one block per SM, fed through a ring of
//! slots in page-locked mapped host memory and answering into it: no launch, no copy,
//! no synchronisation per event, and several events in flight with
//! [`Engine::match_pipelined`]. Area moves ([`Engine::move_area`] and the other update
//! calls) and subscription switches ([`Engine::set_subscription_active`]) go through
//! the same ring, so each takes effect exactly between the events submitted before and
//! after it; the host does not wait for them. **The GPU busy-waits while the mode is
//! on**; turning it off or dropping the engine stops the kernel and frees the GPU (and
//! brings the other paths' device tables up to date with the moves made meanwhile).
//!
//! Subscription switches ([`Engine::set_subscription_active`], beyond the paper): a
//! switched-off subscription matches nothing until switched on again. In persistent
//! mode the kernel skips it (`SubsOff`); on the other paths the host drops it from the
//! answers.

use crate::batch::EventBatch;
use crate::layout::{Grid, Tables};
use crate::model::{AreaUpdate, Event, ModelError, SubscriptionId, Subscriptions};
use ccm::hash::FastMap;
use clcb_kernels::{AreaMove, Candidates, CellRange, DevConstraint, Float2, PackedArea, MAX_BATCH};
use gpu_kernels::persist::{Persistent, Ring, RingConfig};
use gpu_kernels::{Buffer, DevPtr, Device, GpuError, HostBuffer, LaunchConfig};
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

/// Threads per block of every kernel (the paper's "usually 256").
pub const BLOCK: u32 = 256;
/// Threads per block of the persistent kernel (one block per SM).
pub const PERSIST_BLOCK: u32 = 512;

/// Engine errors.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("{0} subscriptions or filters do not fit the 32-bit ids of the device tables")]
    TooLarge(usize),
}

/// Tunables; [`Options::default`] is the paper's algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Runs per `FCount` reset: 4 is §4.3's byte-per-run trick, 1 resets every event.
    pub fcount_runs: u32,
    /// Subscription ids fetched by the one result copy (more need a second copy).
    pub read_prefix: usize,
    /// Events per pass of [`Engine::match_batch`] (at most [`MAX_BATCH`], the default:
    /// the per-pass copies, launches and synchronisation are shared by more events).
    pub batch: usize,
    /// Beyond the paper: match single events through the grid index
    /// ([`Grid`], kernels `grid_match` + `grid_reset`) instead of
    /// `Loc` + `Cont` + `Zip` over every filter. Off by default (the paper's pipeline).
    pub grid: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fcount_runs: 4,
            read_prefix: 1024,
            batch: MAX_BATCH as usize,
            grid: false,
        }
    }
}

/// Device time of each step of one event (Fig. 6), in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepTimes {
    pub copy_in: f64,
    pub loc: f64,
    pub cont: f64,
    pub zip: f64,
    pub copy_out: f64,
}

impl StepTimes {
    pub fn total(&self) -> f64 {
        self.copy_in + self.loc + self.cont + self.zip + self.copy_out
    }
}

/// Buffers of the batched mode, made on first use.
struct BatchState {
    inputs: Buffer<u32>,
    event_word: Buffer<u32>,
    /// Grid mode: each event's candidates (four ranges of `cell_filters`).
    candidates: Buffer<Candidates>,
    subs_bits: Buffer<u32>,
    pairs: Buffer<u32>,
}

/// The constraints laid out filter-major (batched and grid modes), made on first use.
struct FilterMajor {
    fcons: Arc<Buffer<DevConstraint>>,
    fcons_start: Arc<Buffer<u32>>,
}

/// The grid index on the device (grid mode).
struct GridState {
    grid: Grid,
    /// `Grid::cell_filters`, with room for `capacity - members` filters on the outside list.
    cell_filters: Arc<Buffer<u32>>,
    /// Current end of the outside list in `cell_filters`.
    end: usize,
    /// `[count of even events, count of odd events, Subs...]`.
    out: Buffer<u32>,
    parity: u32,
}

impl GridState {
    /// The candidates of an event at `(x, y)`: the three rows of the 3x3 cells around
    /// it, and the outside list.
    fn candidates(&self, x: f32, y: f32) -> Candidates {
        let [r0, r1, r2] = self.grid.ranges(x, y).map(|(lo, hi)| CellRange { lo, hi });
        let outside = CellRange {
            lo: self.grid.members() as u32,
            hi: self.end as u32,
        };
        Candidates {
            ranges: [r0, r1, r2, outside],
        }
    }
}

/// The [`clcb_kernels::Filters`] parameter struct over an engine's tables (`$engine`
/// an [`Engine`], `$fmajor` its [`FilterMajor`]), with `Areas` (`$areas`, from the
/// low-latency state) and `cell_filters` (`$grid`) when the engine has them: null
/// otherwise, and then the kernels that read them are not launched. A macro, not a
/// method, so that it borrows only the fields it reads: the low-latency launches also
/// take a mapped host buffer of the engine by `&mut`.
macro_rules! filters {
    ($engine:expr, $fmajor:expr, $areas:expr, $grid:expr) => {
        clcb_kernels::Filters {
            bf: $engine.bf.dev_ptr(),
            fpos: $engine.fpos.dev_ptr(),
            sq_dist: $engine.sq_dist.dev_ptr(),
            area_hi: $engine.area_hi.dev_ptr(),
            areas: $areas.map_or(DevPtr::null(), |a: &Buffer<PackedArea>| a.dev_ptr()),
            fcons_start: $fmajor.fcons_start.dev_ptr(),
            fcons: $fmajor.fcons.dev_ptr(),
            cstrings: $engine.cstrings.dev_ptr(),
            filter_sub: $engine.filter_sub.dev_ptr(),
            cell_filters: $grid.map_or(DevPtr::null(), |g: &GridState| g.cell_filters.dev_ptr()),
            n: $engine.n,
            rects: rects(&$engine.area_hi, $engine.n),
        }
    };
}

/// The low-latency path's state (see the module's documentation).
struct LatencyState {
    /// The encoded event, in mapped host memory.
    input: HostBuffer<u32>,
    /// `seq << 32 | subscription` per match, in mapped host memory (one slot per
    /// subscription: a subscription is listed once per event).
    out: HostBuffer<u64>,
    /// `SubsSeq`: the number of the last event that matched each subscription.
    subs_seq: Buffer<u32>,
    /// The list's two counters: the one in use and the one the kernel zeroes.
    tally: Buffer<u32>,
    parity: usize,
    /// The event's number (1 up; 0 is "never").
    seq: u32,
    /// `Areas`: every filter's [`PackedArea`], always current.
    areas: Buffer<PackedArea>,
    /// `FPos` and `SqDist` lag behind `Areas` (single moves wrote only the latter).
    stale: bool,
}

/// CLCB on one device.
pub struct Engine {
    dev: Device,
    opts: Options,
    tables: Tables,
    ids: Vec<SubscriptionId>,
    n: u32,
    k: u32,
    // Fig. 2a, persistent.
    fpos: Buffer<Float2>,
    sq_dist: Buffer<f32>,
    /// `AreaHi` (beyond the paper: rectangles' high corners): one unread word until the
    /// first rectangle, then one per filter ([`Engine::ensure_area_hi`]), so that
    /// circles cost no device memory more.
    area_hi: Buffer<Float2>,
    bf: Arc<Buffer<u32>>,
    size_f: Buffer<u32>,
    filter_sub: Arc<Buffer<u32>>,
    constraints: Buffer<DevConstraint>,
    row_start: Buffer<u32>,
    size_c: Buffer<u32>,
    cstrings: Arc<Buffer<u8>>,
    fcount: Buffer<u32>,
    subs_bv: Buffer<u32>,
    /// `SubsCount` then `Subs`.
    subs_out: Buffer<u32>,
    // Fig. 2b, per event.
    input: Buffer<u32>,
    words: Vec<u32>,
    out: Vec<u32>,
    run: u32,
    updates: Option<Buffer<AreaMove>>,
    batch: Option<BatchState>,
    fmajor: Option<FilterMajor>,
    grid: Option<GridState>,
    latency: Option<LatencyState>,
    /// Whether the persistent mode is on ([`Engine::set_persistent`]).
    persistent: bool,
    /// The running persistent kernel (persistent mode; started by the first request).
    persist: Option<PersistState>,
    /// Ring slots asked for by [`Engine::set_persistent_slots`].
    persist_slots: u32,
    /// Subscriptions switched off ([`Engine::set_subscription_active`]), and how many.
    off: Vec<bool>,
    n_off: usize,
    /// Areas moved in persistent mode: the other paths' device tables lag behind.
    areas_behind: bool,
}

impl Drop for Engine {
    fn drop(&mut self) {
        // The persistent kernel reads the tables and runs in the device's context: stop
        // it before either goes.
        self.persist = None;
    }
}

/// A running [`clcb_kernels::clcb_persistent()`], its own device state and the requests
/// in flight.
struct PersistState {
    /// The kernel's handle: it owns the kernel's own `Areas`, `SubsOff`, `SubsSeq`, list
    /// counters and lists, and a share of the engine's tables, until the kernel stops.
    run: Persistent,
    /// What each request in flight was, oldest first.
    pending: VecDeque<Pending>,
    /// Requests submitted to this kernel (it is restarted before `SubsSeq`'s 32-bit
    /// event numbers wrap).
    submitted: u64,
}

/// One request of [`Engine::pipeline`] (persistent mode).
#[derive(Clone, Copy, Debug)]
pub enum Request<'a> {
    /// Match an event.
    Event(&'a Event),
    /// Move an area ([`Engine::move_area`]).
    Move(&'a AreaUpdate),
    /// Switch a subscription (dense index) on or off ([`Engine::set_subscription_active`]).
    Switch { subscription: u32, on: bool },
}

/// A request in flight in the persistent kernel's ring.
#[derive(Clone, Copy)]
enum Pending {
    /// An area move or a subscription switch (its empty answer is dropped).
    Update,
    /// Event `index` of the caller's slice, submitted (encoding begun) at `t0`.
    Event { index: usize, t0: Instant },
}

/// Bytes of mapped host memory a persistent ring may take (answers have room for every
/// subscription, so large engines get fewer slots).
const RING_BYTES: usize = 64 << 20;

/// [`clcb_kernels::Filters::rects`] of an engine of `n` filters whose `AreaHi` is
/// `area_hi`: 1 once it holds every filter's (the first rectangle allocates it, and every
/// rectangle finds it so), 0 while it is the one unread word of a set of circles: the
/// kernels then test circles alone (an engine of one filter tests both ways).
fn rects(area_hi: &Buffer<Float2>, n: u32) -> u32 {
    u32::from(n > 0 && area_hi.len() >= n as usize)
}

/// Uploads `v`, or one default element when `v` is empty (no zero-size allocations).
fn upload<T: bytemuck::Pod>(dev: &Device, v: &[T]) -> Result<Buffer<T>, GpuError> {
    if v.is_empty() {
        dev.upload(&[T::zeroed()])
    } else {
        dev.upload(v)
    }
}

impl Engine {
    /// Lays out `subs` and uploads the tables (the paper's deployment).
    ///
    /// ```
    /// use ccm::{Constraint, Op, Value};
    /// use clcb::{Area, Engine, Event, Filter, Location, Options};
    /// use clcb::{Subscription, SubscriptionId, Subscriptions};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Subscription 7: hot readings within 10 units of (0, 0), or anything at (100, 0).
    /// let hot = Constraint::new("temp", Op::Gt, Value::Int(30))?;
    /// let subs = Subscriptions::new([Subscription {
    ///     id: SubscriptionId(7),
    ///     filters: vec![
    ///         Filter::new(vec![hot], Area::circle(0.0, 0.0, 10.0)?)?,
    ///         Filter::new(vec![], Area::circle(100.0, 0.0, 1.0)?)?,
    ///     ],
    /// }]);
    /// let mut engine = Engine::new(gpu_kernels::Device::emulator(), &subs, Options::default())?;
    /// let event = |x, temp| -> Result<Event, Box<dyn std::error::Error>> {
    ///     let content = ccm::Event::from_pairs([("temp", Value::Int(temp))])?;
    ///     Ok(Event { loc: Location::new(x, 0.0)?, content })
    /// };
    /// assert_eq!(engine.match_event(&event(3.0, 35)?)?, vec![SubscriptionId(7)]);
    /// assert_eq!(engine.match_event(&event(3.0, 20)?)?, vec![]); // too cold
    /// assert_eq!(engine.match_event(&event(50.0, 35)?)?, vec![]); // too far
    /// assert_eq!(engine.match_event(&event(100.5, 0)?)?, vec![SubscriptionId(7)]);
    /// # Ok(()) }
    /// ```
    pub fn new(dev: Device, subs: &Subscriptions, opts: Options) -> Result<Engine, EngineError> {
        let tables = Tables::build(subs);
        let ids = (0..subs.len()).map(|i| subs.id(i)).collect();
        Engine::from_tables(dev, tables, ids, opts)
    }

    /// Uploads already built tables; `ids[i]` is subscription `i`'s id.
    pub fn from_tables(
        dev: Device,
        tables: Tables,
        ids: Vec<SubscriptionId>,
        opts: Options,
    ) -> Result<Engine, EngineError> {
        let n = tables.filters();
        let k = tables.subscriptions;
        if n >= u32::MAX as usize
            || k >= u32::MAX as usize
            || tables.constraints.len() >= u32::MAX as usize
            || tables.cstrings.len() >= u32::MAX as usize
        {
            return Err(EngineError::TooLarge(n.max(k)));
        }
        let opts = Options {
            fcount_runs: opts.fcount_runs.clamp(1, 4),
            batch: opts.batch.clamp(1, MAX_BATCH as usize),
            ..opts
        };
        let e = Engine {
            fpos: upload(&dev, &tables.fpos)?,
            sq_dist: upload(&dev, &tables.sq_dist)?,
            area_hi: if tables.sq_dist.iter().any(|&q| q < 0.0) {
                upload(&dev, &tables.area_hi)?
            } else {
                upload(&dev, &[])?
            },
            bf: Arc::new(upload(&dev, &tables.bf)?),
            size_f: upload(&dev, &tables.size_f)?,
            filter_sub: Arc::new(upload(&dev, &tables.filter_sub)?),
            constraints: upload(&dev, &tables.constraints)?,
            row_start: upload(&dev, &tables.row_start)?,
            size_c: upload(&dev, &tables.size_c)?,
            cstrings: Arc::new(upload(&dev, &tables.cstrings)?),
            fcount: dev.alloc(n.max(1))?,
            subs_bv: dev.alloc(k.max(1))?,
            subs_out: dev.alloc(k + 1)?,
            input: dev.alloc(1024)?,
            words: Vec::new(),
            out: vec![0; k + 2],
            run: 0,
            updates: None,
            batch: None,
            fmajor: None,
            grid: None,
            latency: None,
            persistent: false,
            persist: None,
            persist_slots: 32,
            off: vec![false; k],
            n_off: 0,
            areas_behind: false,
            n: n as u32,
            k: k as u32,
            ids,
            tables,
            opts,
            dev,
        };
        let mut e = e;
        if e.opts.grid {
            e.build_grid()?;
        }
        e.dev.synchronize()?;
        Ok(e)
    }

    /// Switches grid mode on (building the index from the current areas) or off.
    pub fn set_grid(&mut self, on: bool) -> Result<(), EngineError> {
        if self.grid.is_some() != on && self.persist.is_some() {
            // The persistent kernel holds the grid's device list: a new kernel (with
            // the new index, or none) serves the next request.
            self.drain(None, None)?;
            self.stop_persistent()?;
        }
        self.opts.grid = on;
        match (on, self.grid.is_some()) {
            (true, false) => self.build_grid(),
            (false, true) => {
                self.grid = None;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Beyond the paper: switches the low-latency per-event path on or off (see the
    /// module's documentation). It applies to [`Engine::match_indices`] with and without
    /// grid mode; the paper's pipeline stays the default.
    pub fn set_low_latency(&mut self, on: bool) -> Result<(), EngineError> {
        if !on {
            self.refresh_areas()?;
            self.latency = None;
            return Ok(());
        }
        if self.latency.is_none() {
            self.ensure_filter_major()?;
            let dev = &self.dev;
            let packed: Vec<PackedArea> = self
                .tables
                .fpos
                .iter()
                .zip(&self.tables.sq_dist)
                .map(|(&pos, &sq_dist)| PackedArea {
                    pos,
                    sq_dist,
                    _pad: 0,
                })
                .collect();
            self.latency = Some(LatencyState {
                areas: upload(dev, &packed)?,
                stale: false,
                input: dev.alloc_host(1024)?,
                out: dev.alloc_host((self.k as usize).max(1))?,
                subs_seq: dev.alloc((self.k as usize).max(1))?,
                tally: dev.alloc(2)?,
                parity: 0,
                seq: 1,
            });
            dev.synchronize()?;
        }
        Ok(())
    }

    /// Low-latency mode: brings `FPos` and `SqDist` up to date with `Areas` (one launch
    /// of `unpack_areas`) when single moves left them behind; before any kernel that
    /// reads them.
    fn refresh_areas(&mut self) -> Result<(), EngineError> {
        if let Some(l) = self.latency.as_mut().filter(|l| l.stale) {
            clcb_kernels::unpack_areas::launch(
                &self.dev,
                LaunchConfig::linear(self.n.max(1), BLOCK),
                self.n,
                &l.areas,
                &self.fpos,
                &self.sq_dist,
            )?;
            l.stale = false;
        }
        Ok(())
    }

    /// Whether the low-latency path is on.
    pub fn low_latency(&self) -> bool {
        self.latency.is_some()
    }

    fn ensure_filter_major(&mut self) -> Result<(), EngineError> {
        if self.fmajor.is_none() {
            self.fmajor = Some(FilterMajor {
                fcons: Arc::new(upload(&self.dev, &self.tables.fcons)?),
                fcons_start: Arc::new(upload(&self.dev, &self.tables.fcons_start)?),
            });
        }
        Ok(())
    }

    /// (Re)builds the grid index from the current areas and uploads it.
    fn build_grid(&mut self) -> Result<(), EngineError> {
        self.ensure_filter_major()?;
        let t = &self.tables;
        let grid = Grid::build(&t.fpos, &t.sq_dist, &t.area_hi);
        let end = grid.cell_filters.len();
        let capacity = end + (self.n as usize / 16).max(4096);
        let mut cell_filters = self.dev.alloc(capacity)?;
        self.dev.write(&mut cell_filters, 0, &grid.cell_filters)?;
        // A rebuild keeps the result buffer and its counters' parity.
        let (out, parity) = match self.grid.take() {
            Some(old) => (old.out, old.parity),
            None => (self.dev.alloc(2 + self.k as usize)?, 0),
        };
        self.grid = Some(GridState {
            grid,
            cell_filters: Arc::new(cell_filters),
            end,
            out,
            parity,
        });
        Ok(())
    }

    pub fn device(&self) -> &Device {
        &self.dev
    }

    pub fn options(&self) -> Options {
        self.opts
    }

    /// The host tables the engine was built from.
    pub fn tables(&self) -> &Tables {
        &self.tables
    }

    /// Device bytes held by the engine's buffers (Fig. 7).
    pub fn device_bytes(&self) -> usize {
        self.dev.allocated_bytes()
    }

    /// Dense subscription index -> id.
    pub fn id(&self, index: u32) -> SubscriptionId {
        self.ids[index as usize]
    }

    /// The ids of the subscriptions matching `e`, ascending.
    pub fn match_event(&mut self, e: &Event) -> Result<Vec<SubscriptionId>, EngineError> {
        let idx = self.match_indices(e, None)?;
        Ok(idx.into_iter().map(|i| self.ids[i as usize]).collect())
    }

    /// The dense indices of the subscriptions matching `e`, ascending.
    pub fn match_indices(
        &mut self,
        e: &Event,
        times: Option<&mut StepTimes>,
    ) -> Result<Vec<u32>, EngineError> {
        if self.n == 0 {
            return Ok(Vec::new());
        }
        if self.persistent {
            let mut v = self.match_pipelined(std::slice::from_ref(e), 1, None)?;
            return Ok(v.pop().unwrap_or_default());
        }
        let mut ids = self.match_indices_device(e, times)?;
        if self.n_off > 0 {
            ids.retain(|&s| !self.off[s as usize]);
        }
        Ok(ids)
    }

    /// [`Engine::match_indices`] on the per-launch paths, before the host drops the
    /// switched-off subscriptions.
    fn match_indices_device(
        &mut self,
        e: &Event,
        times: Option<&mut StepTimes>,
    ) -> Result<Vec<u32>, EngineError> {
        self.bring_areas_up_to_date()?;
        if self.latency.is_some() {
            self.words.clear();
            let n_attrs = self.tables.encode_event(e, &mut self.words);
            if self.words.len() <= clcb_kernels::LATENCY_MAX_WORDS as usize {
                return self.match_latency(e, n_attrs, times);
            }
            self.refresh_areas()?;
        }
        if self.grid.is_some() {
            return self.match_grid(e, times);
        }
        let dev = &self.dev;
        let timing = times.is_some();
        let mark = |on: bool| if on { dev.mark().map(Some) } else { Ok(None) };
        // S1: the event in.
        self.words.clear();
        let n_attrs = self.tables.encode_event(e, &mut self.words);
        if self.words.len() > self.input.len() {
            self.input = dev.alloc(self.words.len().next_power_of_two())?;
        }
        let m0 = mark(timing)?;
        dev.write(&mut self.input, 0, &self.words)?;
        let m1 = mark(timing)?;
        // S1a + S1b: Loc.
        clcb_kernels::loc::launch(
            dev,
            LaunchConfig::linear(self.n, BLOCK),
            &self.input,
            self.n,
            self.run,
            &self.bf,
            &self.fpos,
            &self.sq_dist,
            &self.area_hi,
            rects(&self.area_hi, self.n),
            &self.size_f,
            &self.filter_sub,
            &self.fcount,
            &self.subs_bv,
            &self.subs_out,
        )?;
        let m2 = mark(timing)?;
        // S2: Cont, one row of blocks per attribute.
        let longest = self.tables.longest_row(Tables::attrs_of(&self.words));
        if n_attrs > 0 && longest > 0 {
            let cfg = LaunchConfig {
                grid: [longest.div_ceil(BLOCK), n_attrs, 1],
                block: [BLOCK, 1, 1],
                shared_bytes: std::mem::size_of::<clcb_kernels::DevAttr>() as u32,
            };
            clcb_kernels::cont::launch(
                dev,
                cfg,
                &self.input,
                self.run,
                &self.constraints,
                &self.row_start,
                &self.size_c,
                &self.cstrings,
                &self.size_f,
                &self.filter_sub,
                &self.fcount,
                &self.subs_bv,
            )?;
        }
        let m3 = mark(timing)?;
        // S2a: Zip.
        clcb_kernels::zip::launch(
            dev,
            LaunchConfig::linear(self.k, BLOCK),
            self.k,
            &self.subs_bv,
            &self.subs_out,
        )?;
        let m4 = mark(timing)?;
        // S3*: SubsCount and the first ids in one copy.
        let prefix = (self.k as usize).min(self.opts.read_prefix);
        dev.read_into(&self.subs_out, 0, &mut self.out[..1 + prefix])?;
        let count = self.out[0] as usize;
        if count > prefix {
            dev.read_into(
                &self.subs_out,
                1 + prefix,
                &mut self.out[1 + prefix..1 + count],
            )?;
        }
        let m5 = mark(timing)?;
        self.run = (self.run + 1) % self.opts.fcount_runs;
        if let (Some(t), Some(m0), Some(m1), Some(m2), Some(m3), Some(m4), Some(m5)) =
            (times, m0, m1, m2, m3, m4, m5)
        {
            let ms = |a, b| dev.elapsed_ms(a, b).map(f64::from);
            *t = StepTimes {
                copy_in: ms(&m0, &m1)?,
                loc: ms(&m1, &m2)?,
                cont: ms(&m2, &m3)?,
                zip: ms(&m3, &m4)?,
                copy_out: ms(&m4, &m5)?,
            };
        }
        let mut ids = self.out[1..1 + count].to_vec();
        ids.sort_unstable();
        Ok(ids)
    }

    /// The low-latency path (beyond the paper): the event already encoded in
    /// `self.words`, one launch of `match_latency` (or `grid_latency` in grid mode), one
    /// synchronisation, the list read from mapped host memory. In `times`, the kernel's
    /// device time is reported as `loc` (there is no other step).
    fn match_latency(
        &mut self,
        e: &Event,
        n_attrs: u32,
        times: Option<&mut StepTimes>,
    ) -> Result<Vec<u32>, EngineError> {
        let l = self.latency.as_mut().expect("low-latency mode");
        let fm = self
            .fmajor
            .as_ref()
            .expect("made with the low-latency state");
        let dev = &self.dev;
        let words = self.words.len();
        if words > l.input.len() {
            l.input = dev.alloc_host(words.next_power_of_two())?;
        }
        l.input.as_mut_slice()[..words].copy_from_slice(&self.words);
        let head: clcb_kernels::InputHeader =
            bytemuck::pod_read_unaligned(bytemuck::cast_slice(&self.words[..4]));
        debug_assert_eq!(head.n_attrs, n_attrs);
        // Grid mode: the candidates, and nothing to launch when there are none.
        let candidates = self.grid.as_ref().map(|g| g.candidates(e.loc.x, e.loc.y));
        if candidates.is_some_and(|c| c.total() == 0) {
            return Ok(Vec::new());
        }
        let p = l.parity;
        let shared = 16 + 4 * words.next_multiple_of(4) as u32;
        let cfg = |threads: u32| LaunchConfig::linear(threads, BLOCK).with_shared(shared);
        let m0 = if times.is_some() {
            Some(dev.mark()?)
        } else {
            None
        };
        let t = filters!(self, fm, Some(&l.areas), self.grid.as_ref());
        let ev = clcb_kernels::LatencyEvent {
            head,
            words: words as u32,
            seq: l.seq,
            subs_seq: l.subs_seq.dev_ptr_mut(),
            // The list's two counters: the one in use (`p`) and the one the kernel zeroes.
            tally: l.tally.dev_ptr_mut_at(p),
            idle_tally: l.tally.dev_ptr_mut_at(1 - p),
        };
        match candidates {
            None => {
                clcb_kernels::match_latency::launch(dev, cfg(self.n), t, ev, &l.input, &mut l.out)?
            }
            Some(c) => clcb_kernels::grid_latency::launch(
                dev,
                cfg(c.total()),
                t,
                c,
                ev,
                &l.input,
                &mut l.out,
            )?,
        }
        let m1 = if times.is_some() {
            Some(dev.mark()?)
        } else {
            None
        };
        // The one synchronisation; then the list is plain host memory.
        dev.synchronize()?;
        let seq = l.seq;
        let mut ids: Vec<u32> = l
            .out
            .as_slice()
            .iter()
            .take(self.k as usize)
            .take_while(|&&v| (v >> 32) as u32 == seq)
            .map(|&v| v as u32)
            .collect();
        l.parity = 1 - p;
        if seq == u32::MAX {
            // Numbers of 2^32 - 1 events ago would read as current: start afresh.
            dev.zero(&mut l.subs_seq)?;
            l.out.as_mut_slice().fill(0);
            l.seq = 1;
        } else {
            l.seq = seq + 1;
        }
        if let (Some(t), Some(m0), Some(m1)) = (times, m0, m1) {
            *t = StepTimes {
                loc: f64::from(dev.elapsed_ms(&m0, &m1)?),
                ..StepTimes::default()
            };
        }
        ids.sort_unstable();
        Ok(ids)
    }

    /// Grid mode (beyond the paper): one copy in, `grid_match` over the candidates of
    /// the event's 3x3 cells and the outside list, `grid_reset`, one copy out.
    fn match_grid(
        &mut self,
        e: &Event,
        times: Option<&mut StepTimes>,
    ) -> Result<Vec<u32>, EngineError> {
        let g = self.grid.as_mut().expect("grid mode");
        let fm = self.fmajor.as_ref().expect("made with the grid");
        let dev = &self.dev;
        let timing = times.is_some();
        let mark = |on: bool| if on { dev.mark().map(Some) } else { Ok(None) };
        self.words.clear();
        self.tables.encode_event(e, &mut self.words);
        if self.words.len() > self.input.len() {
            self.input = dev.alloc(self.words.len().next_power_of_two())?;
        }
        let candidates = g.candidates(e.loc.x, e.loc.y);
        let total = candidates.total();
        if total == 0 {
            return Ok(Vec::new());
        }
        let m0 = mark(timing)?;
        dev.write(&mut self.input, 0, &self.words)?;
        let m1 = mark(timing)?;
        let p = g.parity as usize;
        clcb_kernels::grid_match::launch(
            dev,
            LaunchConfig::linear(total, BLOCK),
            filters!(self, fm, self.latency.as_ref().map(|l| &l.areas), Some(&*g)),
            candidates,
            &self.input,
            &self.subs_bv,
            g.out.at_mut(p),
            g.out.at_mut(2),
        )?;
        let m2 = mark(timing)?;
        clcb_kernels::grid_reset::launch(
            dev,
            LaunchConfig::linear(total, BLOCK),
            total,
            g.out.at(p),
            g.out.at_mut(1 - p),
            g.out.at(2),
            &self.subs_bv,
        )?;
        let m3 = mark(timing)?;
        let prefix = (self.k as usize).min(self.opts.read_prefix);
        dev.read_into(&g.out, 0, &mut self.out[..2 + prefix])?;
        let count = self.out[p] as usize;
        if count > prefix {
            dev.read_into(&g.out, 2 + prefix, &mut self.out[2 + prefix..2 + count])?;
        }
        let m4 = mark(timing)?;
        g.parity ^= 1;
        if let (Some(t), Some(m0), Some(m1), Some(m2), Some(m3), Some(m4)) =
            (times, m0, m1, m2, m3, m4)
        {
            let ms = |a, b| dev.elapsed_ms(a, b).map(f64::from);
            *t = StepTimes {
                copy_in: ms(&m0, &m1)?,
                loc: ms(&m1, &m2)?,
                cont: 0.0,
                zip: ms(&m2, &m3)?,
                copy_out: ms(&m3, &m4)?,
            };
        }
        let mut ids = self.out[2..2 + count].to_vec();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Beyond the paper: the dense indices matching each event, ascending, matching up
    /// to [`Options::batch`] events per pass over the filters (`match_batch`), or, in
    /// grid mode, per launch over each event's grid candidates (`grid_batch`); then
    /// `zip_batch` and one copy of the (event, subscription) pairs back.
    ///
    /// In persistent mode the events go through the persistent kernel instead, up to
    /// [`Engine::set_persistent_slots`] in flight ([`Engine::match_pipelined`]).
    ///
    /// The answers are dense subscription indices ([`Engine::id`] maps them to ids), the
    /// same as [`Engine::match_indices`]'s:
    ///
    /// ```
    /// use clcb::workload::{Params, Workload};
    /// use clcb::{Engine, Options};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let params = Params {
    ///     events: 5,
    ///     subscriptions: 30,
    ///     names: 10,
    ///     area_percent: 20.0,
    ///     selectivity_percent: 50.0,
    ///     ..Params::default()
    /// };
    /// let w = Workload::new(params, 5);
    /// let opts = Options { batch: 2, ..Options::default() };
    /// let mut engine = Engine::new(gpu_kernels::Device::emulator(), &w.subscriptions(), opts)?;
    /// let events = w.events();
    /// let batched = engine.match_batch(&events)?;
    /// for (e, answer) in events.iter().zip(&batched) {
    ///     assert_eq!(&engine.match_indices(e, None)?, answer);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn match_batch(&mut self, events: &[Event]) -> Result<Vec<Vec<u32>>, EngineError> {
        if self.persistent {
            return self.match_pipelined(events, usize::MAX, None);
        }
        self.match_event_batch(&EventBatch::from_events(events))
    }

    /// [`Engine::match_batch`] over a flat batch, read as it lies: its names translated
    /// to rows once per call ([`Tables::batch_rows`]), each pass's events laid out on
    /// all cores by a tight loop over its arrays ([`Tables::write_batch`]), then copied
    /// to the device as they lie. (In persistent mode the events go through the ring as
    /// heap events.)
    pub fn match_event_batch(&mut self, b: &EventBatch) -> Result<Vec<Vec<u32>>, EngineError> {
        let mut all = Vec::with_capacity(b.len());
        if self.n == 0 {
            all.resize(b.len(), Vec::new());
            return Ok(all);
        }
        if self.persistent {
            return self.match_pipelined(&b.to_events(), usize::MAX, None);
        }
        self.bring_areas_up_to_date()?;
        self.refresh_areas()?;
        let rows = self.tables.batch_rows(b);
        let mut offsets = Vec::new();
        for start in (0..b.len()).step_by(self.opts.batch) {
            let range = start..(start + self.opts.batch).min(b.len());
            self.match_chunk(b, &rows, range, &mut offsets, &mut all)?;
        }
        if self.n_off > 0 {
            for ids in &mut all {
                ids.retain(|&s| !self.off[s as usize]);
            }
        }
        Ok(all)
    }

    fn match_chunk(
        &mut self,
        events: &EventBatch,
        rows: &[u32],
        range: Range<usize>,
        offsets: &mut Vec<u32>,
        all: &mut Vec<Vec<u32>>,
    ) -> Result<(), EngineError> {
        let words_per_event = self.k.div_ceil(32);
        self.ensure_filter_major()?;
        if self.batch.is_none() {
            let dev = &self.dev;
            self.batch = Some(BatchState {
                inputs: dev.alloc(4096)?,
                event_word: dev.alloc(self.opts.batch)?,
                candidates: dev.alloc(self.opts.batch)?,
                subs_bits: dev.alloc(self.opts.batch * words_per_event as usize)?,
                pairs: dev.alloc(1 + 2 * 65536)?,
            });
        }
        let b = self.batch.as_mut().expect("made above");
        let fm = self.fmajor.as_ref().expect("made above");
        let dev = &self.dev;
        let m = range.len();
        let total = Tables::plan_batch(events, rows, range.clone(), 0, offsets);
        if total >= u32::MAX as usize {
            return Err(EngineError::TooLarge(total));
        }
        self.words.resize(total, 0);
        Tables::write_batch(events, rows, range.clone(), offsets, &mut self.words);
        if self.words.len() > b.inputs.len() {
            b.inputs = dev.alloc(self.words.len().next_power_of_two())?;
        }
        dev.write(&mut b.inputs, 0, &self.words)?;
        dev.write(&mut b.event_word, 0, &offsets[..m])?;
        let m = m as u32;
        // Grid mode: every event's candidates, and the most candidates of one event
        // (the width of the launch's rows).
        let mut widest = 0u32;
        if let Some(g) = &self.grid {
            let (xs, ys) = (&events.xs()[range.clone()], &events.ys()[range.clone()]);
            let candidates: Vec<Candidates> = xs
                .iter()
                .zip(ys)
                .map(|(&x, &y)| g.candidates(x, y))
                .collect();
            widest = candidates.iter().map(Candidates::total).max().unwrap_or(0);
            if widest == 0 {
                all.resize(all.len() + range.len(), Vec::new());
                return Ok(());
            }
            dev.write(&mut b.candidates, 0, &candidates)?;
        }
        loop {
            let cap = ((b.pairs.len() - 1) / 2) as u32;
            let t = filters!(
                self,
                fm,
                self.latency.as_ref().map(|l| &l.areas),
                self.grid.as_ref()
            );
            let batch = clcb_kernels::Batch {
                inputs: b.inputs.dev_ptr(),
                event_word: b.event_word.dev_ptr(),
                candidates: b.candidates.dev_ptr(),
                subs_bits: b.subs_bits.dev_ptr_mut(),
                out: b.pairs.dev_ptr_mut(),
                n_events: m,
                words: words_per_event,
            };
            match &self.grid {
                None => clcb_kernels::match_batch::launch(
                    dev,
                    LaunchConfig::linear(self.n, BLOCK)
                        .with_shared(clcb_kernels::batch_shared_bytes(m)),
                    t,
                    batch,
                )?,
                Some(_) => clcb_kernels::grid_batch::launch(
                    dev,
                    LaunchConfig {
                        grid: [widest.div_ceil(BLOCK), m, 1],
                        block: [BLOCK, 1, 1],
                        shared_bytes: 0,
                    },
                    t,
                    batch,
                )?,
            }
            clcb_kernels::zip_batch::launch(
                dev,
                LaunchConfig {
                    grid: [words_per_event.div_ceil(BLOCK), m, 1],
                    block: [BLOCK, 1, 1],
                    shared_bytes: 0,
                },
                words_per_event,
                &b.subs_bits,
                &b.pairs,
                cap,
            )?;
            let mut count = [0u32];
            dev.read_into(&b.pairs, 0, &mut count)?;
            let count = count[0];
            if count > cap {
                // Too many matches for the pair buffer: grow it and run the batch again
                // (zip_batch has reset every bit vector word).
                b.pairs = dev.alloc(1 + 2 * count.next_power_of_two() as usize)?;
                continue;
            }
            let mut pairs = vec![0u32; 2 * count as usize];
            dev.read_into(&b.pairs, 1, &mut pairs)?;
            let base = all.len();
            all.resize(base + range.len(), Vec::new());
            for p in pairs.chunks_exact(2) {
                all[base + p[0] as usize].push(p[1]);
            }
            for v in &mut all[base..] {
                v.sort_unstable();
            }
            return Ok(());
        }
    }

    fn area_move(&self, u: &AreaUpdate) -> Result<AreaMove, EngineError> {
        if u.filter.0 >= self.n {
            return Err(ModelError::NoSuchFilter(u.filter.0, self.n as usize).into());
        }
        let (pos, sq_dist, hi) = crate::layout::device_area(&u.area);
        Ok(AreaMove {
            filter: u.filter.0,
            pos,
            sq_dist,
            hi,
        })
    }

    /// One area update (§5, Fig. 5): the new position and squared radius travel in the
    /// arguments of a one-thread `move_area` launch, which writes `FPos[f]` and
    /// `SqDist[f]`; nothing else changes, nothing is rebuilt, and the host does not wait.
    /// (The paper copies the two values with `cudaMemcpy`; a launch moves the same 16
    /// bytes without a copy from pageable memory, see [`Engine::move_area_by_copies`].)
    ///
    /// In low-latency mode ([`Engine::set_low_latency`]) the update is instead one copy
    /// of the filter's 16-byte [`PackedArea`] into `Areas`.
    ///
    /// In persistent mode the update goes through the persistent kernel's ring, in order
    /// with the events (the same for the other update calls).
    ///
    /// ```
    /// use clcb::{Area, AreaUpdate, Engine, Event, Filter, FilterId, Location, Options};
    /// use clcb::{Subscription, SubscriptionId, Subscriptions};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let subs = Subscriptions::new([Subscription {
    ///     id: SubscriptionId(1),
    ///     filters: vec![Filter::new(vec![], Area::circle(0.0, 0.0, 2.0)?)?],
    /// }]);
    /// let mut engine = Engine::new(gpu_kernels::Device::emulator(), &subs, Options::default())?;
    /// let at = |x| -> Result<Event, clcb::model::ModelError> {
    ///     Ok(Event { loc: Location::new(x, 0.0)?, ..Event::default() })
    /// };
    /// assert_eq!(engine.match_event(&at(50.0)?)?, vec![]);
    /// // The subscriber moves: its filter's area now surrounds (50, 0).
    /// engine.move_area(&AreaUpdate { filter: FilterId(0), area: Area::circle(50.0, 0.0, 2.0)? })?;
    /// assert_eq!(engine.match_event(&at(50.0)?)?, vec![SubscriptionId(1)]);
    /// assert_eq!(engine.match_event(&at(0.0)?)?, vec![]);
    /// # Ok(()) }
    /// ```
    pub fn move_area(&mut self, u: &AreaUpdate) -> Result<(), EngineError> {
        let m = self.area_move(u)?;
        self.ensure_area_hi(&[m])?;
        if self.persistent {
            return self.move_area_persistent(m);
        }
        if self.latency.is_some() {
            return self.move_area_packed(m);
        }
        clcb_kernels::move_area::launch(
            &self.dev,
            LaunchConfig::linear(1, 32),
            m.filter,
            m.pos.x,
            m.pos.y,
            m.sq_dist,
            m.hi.x,
            m.hi.y,
            &self.fpos,
            &self.sq_dist,
            &self.area_hi,
        )?;
        self.keep_tables(&m)
    }

    /// One area update exactly as the paper does it: copy the new position into `FPos`
    /// and the squared radius into `SqDist` (two host-to-device copies).
    /// In low-latency mode the two values are adjacent and this is one copy
    /// (of the packed `Areas` record).
    pub fn move_area_by_copies(&mut self, u: &AreaUpdate) -> Result<(), EngineError> {
        let m = self.area_move(u)?;
        self.ensure_area_hi(&[m])?;
        if self.persistent {
            return self.move_area_persistent(m);
        }
        if self.latency.is_some() {
            return self.move_area_packed(m);
        }
        self.dev
            .write(&mut self.fpos, m.filter as usize, &[m.pos])?;
        self.dev
            .write(&mut self.sq_dist, m.filter as usize, &[m.sq_dist])?;
        if m.sq_dist < 0.0 {
            // A rectangle: its high corner too (a third copy).
            self.dev
                .write(&mut self.area_hi, m.filter as usize, &[m.hi])?;
        }
        self.keep_tables(&m)
    }

    /// Low-latency mode: the paper's update (copy the new position and squared radius to
    /// the device) as ONE host-to-device copy of 16 bytes into `Areas[f]`, where the two
    /// values sit side by side; `FPos` and `SqDist` are refreshed later, only if a kernel
    /// that reads them runs. Nothing is rebuilt and the host does not wait.
    fn move_area_packed(&mut self, m: AreaMove) -> Result<(), EngineError> {
        let l = self.latency.as_mut().expect("low-latency mode");
        let rec = PackedArea {
            pos: m.pos,
            sq_dist: m.sq_dist,
            _pad: 0,
        };
        self.dev.write(&mut l.areas, m.filter as usize, &[rec])?;
        l.stale = true;
        if m.sq_dist < 0.0 {
            // A rectangle: its high corner too (`AreaHi` is always current).
            self.dev
                .write(&mut self.area_hi, m.filter as usize, &[m.hi])?;
        }
        self.keep_tables(&m)
    }

    /// Many area updates: one copy of the updates, one launch of `move_areas`. Later
    /// updates of the same filter win, as if applied one by one.
    pub fn move_areas(&mut self, us: &[AreaUpdate]) -> Result<(), EngineError> {
        let mut moves = Vec::with_capacity(us.len());
        // The last update of each filter wins (its slot in `moves`); a fast hash, not
        // SipHash: 6.5 against 13.5 ns per update for batches of 1,000 (2-core machine).
        let mut slot: FastMap<u32, usize> =
            FastMap::with_capacity_and_hasher(us.len(), Default::default());
        for u in us {
            let m = self.area_move(u)?;
            match slot.entry(m.filter) {
                std::collections::hash_map::Entry::Occupied(o) => moves[*o.get()] = m,
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(moves.len());
                    moves.push(m);
                }
            }
        }
        if moves.is_empty() {
            return Ok(());
        }
        self.ensure_area_hi(&moves)?;
        if self.persistent {
            for m in moves {
                self.move_area_persistent(m)?;
            }
            return Ok(());
        }
        if self.updates.as_ref().is_none_or(|b| b.len() < moves.len()) {
            self.updates = Some(self.dev.alloc(moves.len().next_power_of_two())?);
        }
        let buf = self.updates.as_mut().expect("allocated above");
        self.dev.write(buf, 0, &moves)?;
        if let Some(l) = &self.latency {
            // Low-latency mode: `Areas` too (`FPos` and `SqDist` of other filters may
            // still lag: `stale` stays as it is).
            clcb_kernels::move_areas_packed::launch(
                &self.dev,
                LaunchConfig::linear(moves.len() as u32, BLOCK),
                moves.len() as u32,
                &*buf,
                &l.areas,
                &self.fpos,
                &self.sq_dist,
                &self.area_hi,
            )?;
            for m in &moves {
                self.keep_tables(m)?;
            }
            return Ok(());
        }
        clcb_kernels::move_areas::launch(
            &self.dev,
            LaunchConfig::linear(moves.len() as u32, BLOCK),
            moves.len() as u32,
            &*buf,
            &self.fpos,
            &self.sq_dist,
            &self.area_hi,
        )?;
        for m in &moves {
            self.keep_tables(m)?;
        }
        Ok(())
    }

    /// Keeps the host copy in step (it feeds nothing on the device; it is what
    /// [`Engine::tables`] shows).
    fn keep_tables(&mut self, m: &AreaMove) -> Result<(), EngineError> {
        self.tables.fpos[m.filter as usize] = m.pos;
        self.tables.sq_dist[m.filter as usize] = m.sq_dist;
        self.tables.area_hi[m.filter as usize] = m.hi;
        self.regrid(m)
    }

    /// Before moves `ms`: when one makes a rectangle and `AreaHi` is still the one
    /// unread word, `AreaHi` of every filter (from the host tables; a persistent kernel
    /// keeps its own copy).
    fn ensure_area_hi(&mut self, ms: &[AreaMove]) -> Result<(), EngineError> {
        if self.area_hi.len() < self.n as usize && ms.iter().any(|m| m.sq_dist < 0.0) {
            self.area_hi = upload(&self.dev, &self.tables.area_hi)?;
        }
        Ok(())
    }

    /// Grid mode: a filter moved out of its cell (or grown past the cell size) joins the
    /// outside list (one 4-byte copy); when that list is full, the grid is rebuilt.
    fn regrid(&mut self, m: &AreaMove) -> Result<(), EngineError> {
        let Some(g) = self.grid.as_mut() else {
            return Ok(());
        };
        let f = m.filter as usize;
        if g.grid.home[f] == Grid::OUTSIDE || g.grid.still_fits(f, m.pos, m.sq_dist, m.hi) {
            return Ok(());
        }
        if g.end == g.cell_filters.len() {
            return self.build_grid();
        }
        // The old entry stays in its cell: scanning it again is harmless (the exact
        // test decides, and a subscription is claimed once). Not while a persistent
        // kernel shares the list (its moves go through the ring).
        let cells = Arc::get_mut(&mut g.cell_filters).ok_or_else(|| {
            EngineError::Gpu(GpuError::Persistent {
                kernel: "clcb_persistent",
                message: "the grid's list is written by the host while the kernel reads it".into(),
            })
        })?;
        self.dev.write(cells, g.end, &[m.filter])?;
        g.end += 1;
        g.grid.home[f] = Grid::OUTSIDE;
        Ok(())
    }

    /// Waits for queued work (updates are asynchronous until the next event's copy-back;
    /// in persistent mode, until the kernel has applied every update submitted).
    pub fn synchronize(&mut self) -> Result<(), EngineError> {
        if self.persist.is_some() {
            self.drain(None, None)?;
        }
        Ok(self.dev.synchronize()?)
    }

    /// Beyond the paper: switches subscription `index` (dense) off or back on; a
    /// switched-off subscription matches no event. In persistent mode the switch goes
    /// through the ring, between the events submitted before and after it.
    pub fn set_subscription_active(&mut self, index: u32, on: bool) -> Result<(), EngineError> {
        let i = index as usize;
        if i >= self.off.len() {
            return Err(ModelError::NoSuchSubscription(index, self.off.len()).into());
        }
        if self.off[i] == on {
            self.n_off = if on { self.n_off - 1 } else { self.n_off + 1 };
            self.off[i] = !on;
        }
        if self.persistent {
            self.ensure_persistent(0)?;
            self.submit_update(clcb_kernels::PERSIST_SUBS, &[index as u64, on as u64])?;
        }
        Ok(())
    }

    /// Whether subscription `index` (dense) is switched on.
    pub fn subscription_active(&self, index: u32) -> bool {
        self.off.get(index as usize).is_some_and(|&off| !off)
    }

    /// Beyond the paper: switches the persistent mode on or off (see the module's
    /// documentation). On: the next request starts the persistent kernel, which then
    /// busy-waits on the GPU for the next one. Off: stops the kernel (after the
    /// requests in flight) and brings the other paths' device tables up to date.
    pub fn set_persistent(&mut self, on: bool) -> Result<(), EngineError> {
        self.persistent = on;
        if !on {
            self.stop_persistent()?;
        }
        Ok(())
    }

    /// Whether the persistent mode is on.
    pub fn persistent(&self) -> bool {
        self.persistent
    }

    /// Whether the persistent kernel runs now.
    pub fn persistent_running(&self) -> bool {
        self.persist.is_some()
    }

    /// Ring slots of the persistent kernels started from now on (the most requests in
    /// flight; 32 unless set; fewer when the answers of a large engine would take more
    /// than 64 MiB of mapped memory).
    pub fn set_persistent_slots(&mut self, slots: u32) {
        self.persist_slots = slots.max(1);
    }

    /// Stops the persistent kernel, if one runs, after the requests in flight (their
    /// answers are dropped). In persistent mode the next request starts a new one.
    pub fn stop_persistent(&mut self) -> Result<(), EngineError> {
        if let Some(p) = self.persist.take() {
            p.run.stop()?;
        }
        Ok(())
    }

    /// After area moves in persistent mode: `FPos`, `SqDist`, the low-latency `Areas`
    /// and the grid from the host tables (they are current).
    fn bring_areas_up_to_date(&mut self) -> Result<(), EngineError> {
        if !self.areas_behind {
            return Ok(());
        }
        let t = &self.tables;
        if !t.fpos.is_empty() {
            self.dev.write(&mut self.fpos, 0, &t.fpos)?;
            self.dev.write(&mut self.sq_dist, 0, &t.sq_dist)?;
            if self.area_hi.len() == t.area_hi.len() {
                self.dev.write(&mut self.area_hi, 0, &t.area_hi)?;
            } else if t.sq_dist.iter().any(|&q| q < 0.0) {
                self.area_hi = upload(&self.dev, &t.area_hi)?;
            }
        }
        if let Some(l) = self.latency.as_mut() {
            let packed = Self::packed_areas(t);
            if !packed.is_empty() {
                self.dev.write(&mut l.areas, 0, &packed)?;
            }
            l.stale = false;
        }
        if self.grid.is_some() {
            self.build_grid()?;
        }
        self.areas_behind = false;
        Ok(())
    }

    fn packed_areas(t: &Tables) -> Vec<PackedArea> {
        t.fpos
            .iter()
            .zip(&t.sq_dist)
            .map(|(&pos, &sq_dist)| PackedArea {
                pos,
                sq_dist,
                _pad: 0,
            })
            .collect()
    }

    /// Persistent mode: starts the kernel when none runs or when its slots are shorter
    /// than `need` words, or restarts it before its event numbers wrap (after draining
    /// the requests in flight).
    fn ensure_persistent(&mut self, need: usize) -> Result<(), EngineError> {
        let ok = self.persist.as_ref().is_some_and(|p| {
            p.run.config().req_words as usize >= need && p.submitted < u32::MAX as u64 - 64
        });
        if ok {
            return Ok(());
        }
        if self.persist.is_some() {
            self.drain(None, None)?;
            self.stop_persistent()?;
        }
        self.ensure_filter_major()?;
        let dev = &self.dev;
        let k = self.k as usize;
        let req_words = need.max(256).next_power_of_two();
        let resp_words = k.div_ceil(2).max(1);
        let slot_bytes = 8
            * (gpu_kernels::persist::response_slot_words(resp_words as u32)
                + gpu_kernels::persist::request_slot_words(req_words as u32));
        let slots = (self.persist_slots as usize).min((RING_BYTES / slot_bytes).max(2));
        let rc = RingConfig {
            slots: slots as u32,
            req_words: req_words as u32,
            resp_words: resp_words as u32,
        };
        let ring = Ring::new(dev, rc)?;
        let areas = upload(dev, &Self::packed_areas(&self.tables))?;
        let area_hi = upload(dev, &self.tables.area_hi)?;
        let off: Vec<u32> = self.off.iter().map(|&o| o as u32).collect();
        let subs_off = upload(dev, &off)?;
        let subs_seq = dev.alloc::<u32>(k.max(1))?;
        let tally = dev.alloc::<u32>(2)?;
        let list = dev.alloc::<u32>(2 * k.max(1))?;
        // Grid mode: the kernel reads and extends the grid's device list (without a
        // grid it is given a word it never reads).
        let (cells, cell_capacity) = match &self.grid {
            Some(g) => (Arc::clone(&g.cell_filters), g.cell_filters.len() as u32),
            None => (Arc::new(dev.alloc::<u32>(1)?), 0),
        };
        // The tables must be on the device before the kernel (another stream) reads them.
        dev.synchronize()?;
        let fm = self.fmajor.as_ref().expect("made above");
        // One block of [`PERSIST_BLOCK`] threads per SM, over every filter and over the
        // grid's candidates alike: measured with the stage stamps of
        // `GPU_MATCH_PERSIST_STAMPS`, four blocks of 256 per SM kept no more loads in
        // flight than one of 512 but took several times as long to get each request to
        // the last of their blocks (all polling one broadcast area), so one block per SM
        // answered faster, over every filter and with the grid.
        let per_sm = 1;
        let lc = LaunchConfig::blocks(
            1,
            PERSIST_BLOCK,
            gpu_kernels::persist::shared_bytes(rc.req_words),
        );
        let blocks = dev.resident_blocks(&clcb_kernels::clcb_persistent::KERNEL, lc, per_sm)?;
        // The handle keeps `areas` .. `list` and a share of the tables and of the grid's
        // list until the kernel has stopped: the host cannot free or write them meanwhile.
        let run = clcb_kernels::clcb_persistent::launch_persistent(
            dev,
            lc,
            ring,
            Some(blocks),
            self.n,
            self.k,
            &self.bf,
            areas,
            area_hi,
            &fm.fcons_start,
            &fm.fcons,
            &self.cstrings,
            &self.filter_sub,
            subs_off,
            subs_seq,
            tally,
            list,
            cells,
            cell_capacity,
        )?;
        self.persist = Some(PersistState {
            run,
            pending: VecDeque::new(),
            submitted: 0,
        });
        Ok(())
    }

    /// Persistent mode: one area move through the ring (the host does not wait).
    ///
    /// In grid mode a filter that leaves its cell joins the outside list as in
    /// [`Engine::move_area`], the kernel writing the list's new entry; when the list is
    /// full the kernel is stopped, the grid rebuilt, and the next request starts a new
    /// kernel over the rebuilt grid and the current areas.
    fn move_area_persistent(&mut self, m: AreaMove) -> Result<(), EngineError> {
        self.ensure_persistent(0)?;
        let f = m.filter as usize;
        let mut slot = u32::MAX;
        if let Some(g) = self.grid.as_mut() {
            if g.grid.home[f] != Grid::OUTSIDE && !g.grid.still_fits(f, m.pos, m.sq_dist, m.hi) {
                if g.end == g.cell_filters.len() {
                    self.drain(None, None)?;
                    self.stop_persistent()?;
                    self.tables.fpos[f] = m.pos;
                    self.tables.sq_dist[f] = m.sq_dist;
                    self.tables.area_hi[f] = m.hi;
                    self.areas_behind = true;
                    return self.build_grid();
                }
                slot = g.end as u32;
                g.end += 1;
                g.grid.home[f] = Grid::OUTSIDE;
            }
        }
        let xy = m.pos.x.to_bits() as u64 | (m.pos.y.to_bits() as u64) << 32;
        let hxy = m.hi.x.to_bits() as u64 | (m.hi.y.to_bits() as u64) << 32;
        self.submit_update(
            clcb_kernels::PERSIST_AREA,
            &[
                m.filter as u64,
                xy,
                m.sq_dist.to_bits() as u64,
                slot as u64,
                hxy,
            ],
        )?;
        self.tables.fpos[f] = m.pos;
        self.tables.sq_dist[f] = m.sq_dist;
        self.tables.area_hi[f] = m.hi;
        self.areas_behind = true;
        Ok(())
    }

    /// Submits an update request, first waiting for the oldest request when the ring is
    /// full (only updates can be in flight outside [`Engine::match_pipelined`]).
    fn submit_update(&mut self, kind: u32, payload: &[u64]) -> Result<(), EngineError> {
        if self.persist.as_ref().is_some_and(|p| p.run.is_full()) {
            self.drain_one(None, None)?;
        }
        let p = self.persist.as_mut().expect("started by the caller");
        p.run.submit(kind, payload)?;
        p.pending.push_back(Pending::Update);
        p.submitted += 1;
        Ok(())
    }

    /// Waits for the oldest request in flight; an event's answer goes to
    /// `answers[index]` (ascending) and its latency (µs since `t0`) to `lat[index]`.
    fn drain_one(
        &mut self,
        answers: Option<&mut [Vec<u32>]>,
        lat: Option<&mut [f64]>,
    ) -> Result<(), EngineError> {
        let p = self.persist.as_mut().expect("a request is in flight");
        let Some(what) = p.pending.pop_front() else {
            return Ok(());
        };
        let r = p.run.wait()?;
        if let Pending::Event { index, t0 } = what {
            let m = r.status as usize;
            if m > self.k as usize || r.words.len() < m.div_ceil(2) {
                return Err(EngineError::Gpu(GpuError::Persistent {
                    kernel: p.run.kernel(),
                    message: format!("an answer of {m} subscriptions, the engine has {}", self.k),
                }));
            }
            let mut ids: Vec<u32> = (0..m)
                .map(|j| (r.words[j / 2] >> (32 * (j % 2))) as u32)
                .collect();
            ids.sort_unstable();
            if let Some(l) = lat {
                l[index] = t0.elapsed().as_secs_f64() * 1e6;
            }
            if let Some(a) = answers {
                a[index] = ids;
            }
        }
        Ok(())
    }

    /// Waits for every request in flight.
    fn drain(
        &mut self,
        mut answers: Option<&mut [Vec<u32>]>,
        mut lat: Option<&mut [f64]>,
    ) -> Result<(), EngineError> {
        while self.persist.as_ref().is_some_and(|p| !p.pending.is_empty()) {
            self.drain_one(answers.as_deref_mut(), lat.as_deref_mut())?;
        }
        Ok(())
    }

    /// Beyond the paper, in persistent mode: matches `events` through the persistent
    /// kernel with up to `in_flight` requests in its ring at once (at most its slots):
    /// the host encodes and submits event `i + in_flight` while the kernel matches event
    /// `i`. One answer per event, in order (dense indices, ascending). With
    /// `latencies`, also each event's end-to-end time in microseconds, from the start
    /// of its encoding (once the ring has room for it) to its answer read by the host.
    pub fn match_pipelined(
        &mut self,
        events: &[Event],
        in_flight: usize,
        latencies: Option<&mut Vec<f64>>,
    ) -> Result<Vec<Vec<u32>>, EngineError> {
        let requests: Vec<Request> = events.iter().map(Request::Event).collect();
        self.pipeline(&requests, in_flight, latencies)
    }

    /// Beyond the paper, in persistent mode: events, area moves and subscription
    /// switches through the persistent kernel's ring in the given order, up to
    /// `in_flight` at once: each update takes effect after the events before it and
    /// before the events after it, although none of them waited. One answer per
    /// [`Request::Event`], in order (dense indices, ascending); `latencies` as in
    /// [`Engine::match_pipelined`], one per event.
    pub fn pipeline(
        &mut self,
        requests: &[Request],
        in_flight: usize,
        mut latencies: Option<&mut Vec<f64>>,
    ) -> Result<Vec<Vec<u32>>, EngineError> {
        if !self.persistent {
            return Err(EngineError::Gpu(GpuError::Persistent {
                kernel: "clcb_persistent",
                message: "the persistent mode is off (Engine::set_persistent)".into(),
            }));
        }
        let events = requests
            .iter()
            .filter(|r| matches!(r, Request::Event(_)))
            .count();
        let mut answers = vec![Vec::new(); events];
        if let Some(l) = latencies.as_deref_mut() {
            l.clear();
            l.resize(events, 0.0);
        }
        let mut index = 0;
        for r in requests {
            // Room in the ring first: an event's time (encoding, submit, answer) starts
            // when the ring can take it, as in CCM's `match_pipelined`; the wait for an
            // earlier answer is that answer's latency, not this event's.
            while let Some(p) = self.persist.as_ref() {
                let depth = in_flight.clamp(1, p.run.config().slots as usize);
                if p.pending.len() < depth && !p.run.is_full() {
                    break;
                }
                let lat = latencies.as_deref_mut().map(|l| l.as_mut_slice());
                self.drain_one(Some(&mut answers), lat)?;
            }
            let t0 = Instant::now();
            // Grid mode: the event's candidates; none means no filter can hold the
            // event's location.
            let mut candidates = None;
            let need = match r {
                Request::Event(e) => {
                    self.words.clear();
                    self.tables.encode_event(e, &mut self.words);
                    let mut need = self.words.len().div_ceil(2);
                    if let Some(g) = &self.grid {
                        candidates = Some(g.candidates(e.loc.x, e.loc.y));
                        need += clcb_kernels::PERSIST_GRID_WORDS;
                    }
                    need
                }
                _ => 0,
            };
            let no_candidates = candidates.is_some_and(|c| c.total() == 0);
            let fits = self
                .persist
                .as_ref()
                .is_some_and(|p| p.run.config().req_words as usize >= need);
            if !fits {
                // A new kernel (the first, or with longer slots): first the answers in
                // flight.
                let lat = latencies.as_deref_mut().map(|l| l.as_mut_slice());
                self.drain(Some(&mut answers), lat)?;
                self.ensure_persistent(need)?;
            }
            match r {
                Request::Event(_) if self.n == 0 || no_candidates => {}
                Request::Event(_) => {
                    let p = self.persist.as_mut().expect("started above");
                    let words = &self.words;
                    let (kind, at) = match candidates {
                        Some(_) => (
                            clcb_kernels::PERSIST_EVENT_GRID,
                            clcb_kernels::PERSIST_GRID_WORDS,
                        ),
                        None => (clcb_kernels::PERSIST_EVENT, 0),
                    };
                    p.run
                        .submit_with(kind, need, |w| {
                            for (j, c) in candidates.iter().flat_map(|c| c.ranges).enumerate() {
                                w[j] = c.lo as u64 | (c.hi as u64) << 32;
                            }
                            for (j, pair) in words.chunks(2).enumerate() {
                                w[at + j] = pair[0] as u64
                                    | (pair.get(1).copied().unwrap_or(0) as u64) << 32;
                            }
                        })
                        .map_err(EngineError::from)?;
                    p.pending.push_back(Pending::Event { index, t0 });
                    p.submitted += 1;
                }
                Request::Move(u) => {
                    let m = self.area_move(u)?;
                    self.move_area_persistent(m)?;
                }
                Request::Switch { subscription, on } => {
                    self.set_subscription_active(*subscription, *on)?;
                }
            }
            if matches!(r, Request::Event(_)) {
                index += 1;
            }
        }
        let lat = latencies.map(|l| l.as_mut_slice());
        self.drain(Some(&mut answers), lat)?;
        Ok(answers)
    }
}
