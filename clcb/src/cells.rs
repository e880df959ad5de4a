//! Beyond the paper: the **cell index** on the device, the GPU form of the strongest CPU
//! matcher (`baselines::grid_index`: a uniform grid with a content index in every
//! cell, after FAST, ICDE 2018), matching a batch of events per launch.
//!
//! - **Grid** (as the CPU grid index sizes it): cell side twice the filters' median
//!   radius, coarser if that would make more than two cells per filter (at least 4096
//!   and at most 2^22 cells); a filter is listed in every cell its area's bounding box
//!   touches (widened against `f32` rounding); an event visits the one cell holding its
//!   location, clamped to the grid, so areas moved anywhere stay exact.
//! - **Content keys inside the cells** (the CPU grid index's rule): each filter is
//!   filed under its rarest string equality `name = value` or the pair of its two
//!   rarest names, whichever fewer filters share, or the empty key when it has no
//!   constraint. Keys are 32-bit hashes computed by the same functions here and on the
//!   device ([`clcb_kernels::cells::eq_key`], [`clcb_kernels::cells::pair_key`]): the
//!   host never looks an event's keys up, the device hashes them from the staged event.
//!   A cell's entries are sorted by key with a directory of its keys; the kernel
//!   ([`clcb_kernels::cells::cells_match()`], a warp per event) looks up only the keys
//!   the event can satisfy, then tests each candidate's area and 96-bit name
//!   signature from its 32-byte entry, then its constraints. A rectangle is filed in the
//!   cells of its own extent and tested by its four comparisons (its entry holds both
//!   corners and the signature folded to 64 bits, [`clcb_kernels::cells::CellEntry`]).
//! - **Built on the host**, once, on all cores, every phase ([`BuildTiming`]): the
//!   filters checked; the paper's tables the index reads, filter-major only
//!   ([`Tables::from_columns`]: the columns' own constraints, [`crate::columns`]); each
//!   filter's key, signature and entry, one column at a time; the (cell, key, filter)
//!   triples of every filter's cells written in place by parts of filters and sorted in
//!   parallel ([`sorted_triples`]); then the cells laid out in parts of consecutive
//!   cells, each into its own run of the tables (zeroed on all cores): the layout a pass
//!   in cell order makes, and what one thread builds
//!   (`the_cells_built_on_all_cores_are_the_sequential_builds`). The layout needs the
//!   filters' name frequencies and the host keeps a mirror of the device tables to
//!   apply moves, so building it there costs nothing extra; uploading it is one copy
//!   per table (the tables' room at their end, which only moves fill, is not copied),
//!   through a few page-locked parts filled on all cores, several copies in flight, when
//!   the caller gives a [`Stager`] ([`CellIndex::from_plan_staged`]).
//! - **Area moves** (Fig. 5), as the CPU grid index does them: a move tombstones the
//!   filter's entries in its old cells and appends it to the *overflow* of each new
//!   cell (room kept after each cell's sorted entries; every event of the cell scans
//!   its overflow whole); a cell is laid out again (overflow merged, tombstones
//!   dropped) when they outgrow a thirty-second of it, moving to the end of the tables
//!   when it no longer fits its room; when that room is spent too, the whole index is
//!   laid out again. Moves change the host mirror only (no device work, no wait); the
//!   next match (or [`CellIndex::synchronize`]) sends the changed records in one copy
//!   per table and applies them with one launch of
//!   [`clcb_kernels::cells::cells_write()`]. Cost of a move: a binary search of the
//!   directory and a scan of the key's group in each old cell (about four), an append
//!   in each new one, 36 bytes per changed entry sent at the flush, and, amortized, a
//!   merge of a cell's entries every `CHURN + main / 32` changes in it (about 32 entries
//!   moved per change); the flush itself is six copies and a launch however many moves it
//!   carries.
//! - **Batches** ([`CellIndex::match_event_batch_into`], a flat
//!   [`EventBatch`]; heap events are converted once, [`CellIndex::match_batch`]): up to
//!   [`CellOptions::batch_events`] events per launch (a call's launches double from an
//!   eighth of that and halve back to it at the call's end, [`CellOptions::taper`]), two
//!   launch slots in a pipeline, and no host work per event but
//!   copying the batch's columns. Once per call the batch's names are translated to
//!   rows and its strings' spans are uploaded with its string arena (one page-locked
//!   run, one copy queued ahead of the first launch's columns). Per launch the
//!   host copies the launch's columns as they are (16-byte attributes, starts, `x`,
//!   `y`) on all cores into one run of page-locked staging, and a queue of its own
//!   copies that to the device in one copy; there one kernel,
//!   [`clcb_kernels::cells::cells_match()`], stages and matches each event (a warp per
//!   event: a lane per attribute stages it in shared memory as the matching reads it,
//!   its names' rows, its strings' places in the arena, its string equalities' keys, its
//!   signature; then its cell's directory is searched by fences across the warp). Each warp collects its event's matches in
//!   shared memory, sorts and deduplicates them there and writes the answer as one run
//!   of subscriptions, with its start and length, straight into an area of the
//!   caller's [`CellAnswers`] (page-locked, mapped into the device): the answers stay
//!   where the device wrote them, nothing is copied or decoded on the host (an event
//!   of more than [`clcb_kernels::cells::CELLS_SORT_WORDS`] matches writes (event,
//!   subscription) pairs instead, which the host groups by event with a counting sort
//!   and sorts event by event, on all cores, in room kept from batch to batch);
//!   the launch's last block hands its two counts to the host.
//!   The driving thread queues launch `k` and collects launch `k - 1` (waits for it,
//!   reads its counts) while the other cores copy launch `k + 1`'s columns. (Before, the host laid
//!   each event out itself into mapped memory and copied each answer into vectors:
//!   18-45 ns an event on 16 cores to lay them out and 12-15 ns to copy the answers,
//!   against ~1 ns of the device's own time, on Table 2's and the `keywords`
//!   workloads: H200, `cells_split`. When the device wrote pairs and the host sorted
//!   them into answers, the answers took 3.4 µs an event on `keywords` with 1% regions,
//!   265 matches an event. With the columns copied and laid out on the device, in
//!   launches of at most 16384 events, four copies per launch: 10.6-12.9 ns an event on
//!   Table 2's stream, 15.0-16.8 on `keywords` with 0.01% regions, of which ~5-6 ns the
//!   device's kernels: H200, 16 host cores, `cells_split`, 2026-11-29. The events were
//!   then laid out by a kernel of their own, a thread per event, and the counts handed
//!   over by a third, `cells_counts`, still there for [`CellIndex::set_counts_launch`].
//!   One kernel instead of those three: Fig. 3a's stream at 1M subscriptions 6.15 ns an
//!   event against 6.68, the device's clock 3.87 against 3.93 ns, queuing a launch
//!   0.6-1.4 ns an event against 1.9-2.5: H200, `cells_split`, 2026-11-29,
//!   `results/gpu-logs/cells-one-kernel-H200-2026-11-29/`.)

use crate::batch::EventBatch;
use crate::columns::{FromModelError, SubscriptionColumns};
use crate::engine::EngineError;
use crate::layout::Tables;
use crate::model::{Area, AreaUpdate, Event, ModelError, SubscriptionId, Subscriptions};
use ccm::hash::{count_in_parts, FastMap};
pub use clcb_kernels::cells::CellGeometry;
use clcb_kernels::cells::{
    cells_counts, cells_match, cells_shared_bytes, cells_write, eq_key, pair_key, scratch_at,
    sig_bit, BatchAttr, CellBatch, CellEntry, CellEvents, CellHead, CellTables, DirSlot, StrSpan,
    CELLS_BLOCK, EMPTY_KEY, FLAGS, IMPLIED, NO_ROW, RECT, ROW_EQ, ROW_FLAGS_SHIFT, ROW_MASK,
    ROW_PAIR, SPILLED,
};
use clcb_kernels::{DevConstraint, ATTR_WORDS, KIND_STR, OP_EQ};
use gpu_kernels::crew::par_copy;
use gpu_kernels::{
    Buffer, DevPtr, Device, HostBuffer, LaunchConfig, Mark, Queue, Ramp, Signal, Stager,
};
use rayon::prelude::*;
use std::ops::Range;
use std::time::{Duration, Instant};

// The batch's attributes are copied to the device as they are: the host's record and
// the kernel's are one layout.
const _: () = assert!(
    std::mem::size_of::<ccm::batch::Attr>() == std::mem::size_of::<BatchAttr>()
        && std::mem::align_of::<ccm::batch::Attr>() == std::mem::align_of::<BatchAttr>()
);

/// The device tables of a [`CellIndex`] (`$ix`) as [`cells_match`] reads them (a macro,
/// so that the borrows are of those fields alone).
macro_rules! cell_tables {
    ($ix:expr) => {
        CellTables {
            heads: $ix.d.heads.dev_ptr(),
            dir: $ix.d.dir.dev_ptr(),
            entries: $ix.d.entries.dev_ptr(),
            fcons_start: $ix.fcons_start.dev_ptr(),
            fcons: $ix.fcons.dev_ptr(),
            cstrings: $ix.cstrings.dev_ptr(),
            row_flags: $ix.d_row_flags.dev_ptr(),
            rows: $ix.row_flags.len() as u32,
            rects: u32::from($ix.has_rects),
            geo: $ix.geo,
        }
    };
}

/// The `sq` word of a tombstone entry: no point is inside a circle of NaN squared
/// radius nor a rectangle of NaN right edge. The model's areas are finite, so a live
/// entry never holds it.
const TOMBSTONE: f32 = f32::NAN;

/// Whether an entry is a tombstone.
#[inline]
fn dead(en: &CellEntry) -> bool {
    en.sq.is_nan()
}

/// An entry for filter word `filter` (id and [`IMPLIED`]), subscription `sub`, area `a`
/// and 96-bit names' signature `sig`, in the form [`CellEntry`] documents.
fn entry(filter: u32, sub: u32, a: &Area, sig: [u32; 3]) -> CellEntry {
    let filter = filter & !RECT;
    match *a {
        Area::Circle { center, sq_radius } => CellEntry {
            filter,
            sub,
            x: center.x,
            y: center.y,
            sq: sq_radius,
            sig,
        },
        Area::Rect { lo, hi } => {
            let [s0, s1] = clcb_kernels::cells::fold_sig(sig);
            CellEntry {
                filter: filter | RECT,
                sub,
                x: lo.x,
                y: lo.y,
                sq: hi.x,
                sig: [s0, s1, hi.y.to_bits()],
            }
        }
    }
}

/// Tuning of [`CellIndex`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellOptions {
    /// Most events per launch (65536 on a GPU, 64 on the emulator); a call's launches
    /// double from an eighth of it. (Table 2's stream of 65,536 events on an H200 with
    /// 16 host cores, `cells_split`: 13.7-14.3 ns an event at 8192, 10.6-12.9 at 16384,
    /// 9.7-11.4 at 32768; in a later run, four rounds each, 8.5-10.4 at 32768 full to the
    /// end and 6.7-7.5 at 65536 tapered; Fig. 3a's workload at 1M subscriptions 8.2-9.9
    /// against 6.6-8.5, `keywords` with 0.01% regions 8.9-10.8 against 7.7-9.2.)
    pub batch_events: usize,
    /// Whether a call's launches shrink again at its end ([`Ramp::tapered`]), so that
    /// the last launch's kernels, which no staging overlaps, are short (default), or
    /// stay full to the end ([`Ramp::new`]).
    pub taper: bool,
}

impl CellOptions {
    /// The defaults for `dev`: large launches on a GPU, small ones on the emulator
    /// (every lane run on the host).
    pub fn for_device(dev: &Device) -> CellOptions {
        CellOptions {
            batch_events: if dev.is_gpu() { 65_536 } else { 64 },
            taper: true,
        }
    }
}

/// The host mirror of the device tables, and each cell's room.
#[derive(Clone, Debug, Default, PartialEq)]
struct Mirror {
    heads: Vec<CellHead>,
    dir: Vec<DirSlot>,
    entries: Vec<CellEntry>,
    /// Per cell: directory slots and entries its room holds.
    dir_cap: Vec<u32>,
    ent_cap: Vec<u32>,
    /// Per cell: tombstones among its sorted entries.
    dead: Vec<u32>,
    /// The tables' used prefix (the rest is room for cells that move to the end).
    dir_used: usize,
    ent_used: usize,
}

/// The records changed since the device was last brought up to date.
#[derive(Clone, Debug, Default)]
struct Changes {
    heads: Vec<u32>,
    dir: Vec<u32>,
    entries: Vec<u32>,
    /// The whole index must be laid out and uploaded again.
    relayout: bool,
}

/// The device tables.
struct DevTables {
    heads: Buffer<CellHead>,
    dir: Buffer<DirSlot>,
    entries: Buffer<CellEntry>,
}

/// Page-locked host memory: a launch's columns of the batch copied as they are, one
/// after another in one run of words (so that one copy moves them): the attributes
/// (16-byte records), the starts, `x`, `y` ([`Cols`]).
struct Staging {
    words: HostBuffer<u32>,
}

impl Staging {
    /// Staging with room for `words` words, and slack (so that the launches of a
    /// stream, whose attributes vary a little, fit the staging the first one made).
    fn alloc(dev: &Device, words: usize) -> Result<Staging, EngineError> {
        Ok(Staging {
            words: dev.alloc_host(room(words + words / 2))?,
        })
    }
}

/// Where a launch's columns lie in its run of words (staging and device alike): `n`
/// events, `na` attributes.
#[derive(Clone, Copy, Debug)]
struct Cols {
    n: usize,
    na: usize,
}

impl Cols {
    /// The attributes (4 words each) first, at word 0: 16-byte aligned.
    fn attrs(&self) -> Range<usize> {
        0..ATTR_WORDS * self.na
    }
    fn starts(&self) -> Range<usize> {
        let a = ATTR_WORDS * self.na;
        a..a + self.n + 1
    }
    fn xs(&self) -> Range<usize> {
        let a = self.starts().end;
        a..a + self.n
    }
    fn ys(&self) -> Range<usize> {
        let a = self.xs().end;
        a..a + self.n
    }
    fn words(&self) -> usize {
        self.ys().end
    }
}

/// One launch's events staged: the staging, the events (of the batch) and where its
/// columns lie.
struct Staged {
    bufs: Staging,
    events: Range<usize>,
    cols: Cols,
}

/// A launch's events after [`Staged::prepare`]: staged, or not yet, because the staging
/// was missing or too small (the events, and that staging).
enum Prepared {
    Staged(Staged),
    Short(Range<usize>, Option<Staging>),
}

/// The device buffers of one of the pipeline's two launch slots (a launch on the device
/// while the other's answers are collected), grown as needed.
struct Slot {
    /// The launch's columns, copied in as staged ([`Cols`]).
    cols: Buffer<u32>,
    /// Room for the launch's events too long for a warp's staging area ([`scratch_at`]).
    enc: Buffer<u32>,
    /// The launch's three counters: words of runs, spilled pairs, blocks done (zero
    /// between launches: the launch's last block, or [`cells_counts`], zeroes them).
    counts: Buffer<u32>,
    /// The two counts handed to the host (page-locked).
    counts_host: HostBuffer<u32>,
    /// The spilled (event, subscription) pairs (page-locked).
    spill: HostBuffer<u32>,
}

impl Slot {
    fn alloc(dev: &Device, events: usize) -> Result<Slot, EngineError> {
        let mut counts = dev.alloc(3)?;
        dev.zero(&mut counts)?;
        Ok(Slot {
            cols: dev.alloc(1)?,
            enc: dev.alloc(1)?,
            counts,
            counts_host: dev.alloc_host(2)?,
            spill: dev.alloc_host(2 * room(events / 16))?,
        })
    }
}

/// The dictionaries of a batch as they were uploaded (names and strings: their bytes
/// and spans): a call whose batch holds the same ones uploads nothing.
#[derive(Default)]
struct DictKey {
    names: (Vec<u8>, Vec<(u32, u32)>),
    strings: (Vec<u8>, Vec<(u32, u32)>),
}

impl DictKey {
    fn of(b: &EventBatch) -> DictKey {
        let (n, s) = (b.content().names(), b.content().strings());
        DictKey {
            names: (n.arena().to_vec(), n.spans().to_vec()),
            strings: (s.arena().to_vec(), s.spans().to_vec()),
        }
    }

    /// True when `b`'s dictionaries are these, byte for byte.
    fn is_of(&self, b: &EventBatch) -> bool {
        let (n, s) = (b.content().names(), b.content().strings());
        self.names.0 == n.arena()
            && self.names.1 == n.spans()
            && self.strings.0 == s.arena()
            && self.strings.1 == s.spans()
    }
}

/// A call's batch dictionaries on the device (kept from call to call, grown as needed),
/// in one run of words that one copy moves: per name id its row with its key flags, per
/// string id its bytes in the arena ([`StrSpan`], two words), the arena (its bytes, and
/// one past them, in whole words).
struct Dicts {
    words: Buffer<u32>,
    /// The run as the host lays it out (page-locked: copied on the pipeline's queue,
    /// while the host stages the call's first launch).
    staging: HostBuffer<u32>,
    n_names: u32,
    n_strs: u32,
    /// The batch dictionaries they were made from (`None`: translate at the next call,
    /// [`CellIndex::forget_dictionaries`]).
    key: Option<DictKey>,
}

impl Dicts {
    fn name_rows(&self) -> DevPtr<'_, u32> {
        self.words.dev_ptr()
    }
    fn spans(&self) -> DevPtr<'_, StrSpan> {
        self.words.dev_ptr_at(self.n_names as usize).cast()
    }
    fn arena(&self) -> DevPtr<'_, u8> {
        let at = self.n_names as usize + 2 * self.n_strs as usize;
        self.words.dev_ptr_at(at).cast()
    }
}

/// The pipeline's state, kept from call to call: the two slots, the two stagings, the
/// dictionaries, the queue the copies in run on.
#[derive(Default)]
struct Pipe {
    slots: [Option<Slot>; 2],
    staging: [Option<Staging>; 2],
    dicts: Option<Dicts>,
    queue: Option<Queue>,
}

/// A launch queued on the device whose answers are not collected yet.
struct InFlight {
    slot: usize,
    events: Range<usize>,
    /// Where its columns lie in its slot.
    cols: Cols,
    /// Its answers' area in the caller's [`CellAnswers`].
    area: usize,
    /// Its staging, free again once `copied` is reached.
    staging: Option<Staging>,
    /// Its columns copied in (on the queue).
    copied: Signal,
    /// Its kernels done (on the device's stream): its counts and answers are in host
    /// memory.
    done: Signal,
    /// The device's clock before its kernels and after them (when the index
    /// keeps it, [`CellIndex::set_device_clock`]).
    marks: Option<[Mark; 2]>,
}

/// The cell index of a set of subscriptions on a device (see the module's docs).
pub struct CellIndex {
    dev: Device,
    opts: CellOptions,
    /// The paper's tables: the names' rows, the event encoding, the constraints.
    tables: Tables,
    ids: Vec<SubscriptionId>,
    geo: CellGeometry,
    /// Per filter: its key, its current area, its entry (circle updated by moves).
    key: Vec<u32>,
    area: Vec<Area>,
    proto: Vec<CellEntry>,
    /// Per filter: its names' 96-bit signature (a rectangle's entry holds it folded).
    sig: Vec<[u32; 3]>,
    /// Whether any entry is a rectangle (a build or a move made one): circles only, the
    /// kernel tests each entry as a circle without looking at its form.
    has_rects: bool,
    row_flags: Vec<u32>,
    mirror: Mirror,
    changes: Changes,
    d: DevTables,
    fcons: Buffer<clcb_kernels::DevConstraint>,
    fcons_start: Buffer<u32>,
    cstrings: Buffer<u8>,
    d_row_flags: Buffer<u32>,
    pipe: Pipe,
    /// Staging of [`CellIndex::flush`]: positions and records.
    writes: Option<WriteBufs>,
    /// Time each launch's kernels by the device's clock ([`CellTiming::device`]).
    device_clock: bool,
    /// Hand each launch's counts to the host with a launch of [`cells_counts`] of its
    /// own ([`CellIndex::set_counts_launch`]).
    counts_launch: bool,
    /// Each block of [`cells_match`] writes its events' starts and lengths at once
    /// ([`CellIndex::set_block_writes`]).
    block_writes: bool,
    timing: CellTiming,
    /// Where the build's time went.
    build: BuildTiming,
}

/// Where [`CellIndex::new`]'s time went, phase by phase (host clock; each phase on all
/// cores where it pays).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BuildTiming {
    /// Checking every filter and making the columns the index builds from (none when
    /// built from columns, [`CellIndex::from_columns`]).
    pub check: Duration,
    /// The paper's tables the index reads ([`Tables::from_columns`]): names' rows,
    /// the constraints filter-major, their strings.
    pub tables: Duration,
    /// Each filter's key, names' signature and cell entry (names', `name = value`s' and
    /// pairs' frequencies counted first).
    pub keys: Duration,
    /// The grid, and the (cell, key, filter) triples of every filter's cells, sorted.
    pub triples: Duration,
    /// The cells laid out from their runs of triples: the host mirror of the device
    /// tables.
    pub layout: Duration,
    /// Allocating the device tables (zeroed).
    pub alloc: Duration,
    /// Copying them in, waited for.
    pub upload: Duration,
}

impl BuildTiming {
    /// The phases' sum.
    pub fn total(&self) -> Duration {
        self.check + self.tables + self.keys + self.triples + self.layout + self.alloc + self.upload
    }
}

/// The phases in seconds, in order: `check 0.064 s, tables 0.315, …, upload 0.332`.
impl std::fmt::Display for BuildTiming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "check {:.3} s, tables {:.3}, keys {:.3}, triples sorted {:.3}, cells laid out {:.3}, allocated {:.3}, \
             upload {:.3}",
            self.check.as_secs_f64(),
            self.tables.as_secs_f64(),
            self.keys.as_secs_f64(),
            self.triples.as_secs_f64(),
            self.layout.as_secs_f64(),
            self.alloc.as_secs_f64(),
            self.upload.as_secs_f64(),
        )
    }
}

/// A stopwatch over consecutive phases.
struct Laps(Instant);

impl Laps {
    /// Adds the time since the last lap to `d`.
    fn lap(&mut self, d: &mut Duration) {
        let now = Instant::now();
        *d += now - self.0;
        self.0 = now;
    }
}

/// Where [`CellIndex::match_event_batch_into`]'s time went, summed over its calls since
/// the last [`CellIndex::take_timing`] (host clock, but for `device`), so that a run can
/// tell the host's share from the device's. The pipeline overlaps a launch's staging,
/// copies, kernels and answers with those of the launches beside it, so the parts can
/// add up to more than the wall time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CellTiming {
    /// Events matched.
    pub events: u64,
    /// Launches (a launch again when its answers outgrew their area counts twice).
    pub launches: u64,
    /// Subscriptions the device answered, and (event, subscription) pairs it spilled.
    pub pairs: u64,
    /// Once per call: the batch's names translated to rows (with their key flags), its
    /// strings' spans, both laid out with its string arena in page-locked memory and
    /// their copy queued (the copy runs beside the first launch's staging).
    pub dictionaries: Duration,
    /// Copying each launch's columns (starts, attributes, locations) on all cores into
    /// page-locked staging: the host's only work per event.
    pub stage: Duration,
    /// Queuing each launch's copies in and kernels.
    pub submit: Duration,
    /// Collecting each launch's answers: waiting for its kernels, reading its two
    /// counts, recording its area (no copy), sorting the spilled pairs if any.
    pub answers: Duration,
    /// Of `answers`: grouping the spilled (event, subscription) pairs by event and
    /// sorting each event's ([`clcb_kernels::cells::CELLS_SORT_WORDS`] or more matches)
    /// on all cores.
    pub spilled: Duration,
    /// Of `spilled`: sorting each event's run (after grouping them).
    pub spilled_sort: Duration,
    /// Time the driving thread spent, its launch collected, on the next launch's
    /// staging (helping with it, or waiting for its last parts): the staging the
    /// device's work did not hide.
    pub waited: Duration,
    /// The kernels by the device's clock, from each launch's encoding to its counts
    /// (copies excluded); only while the index keeps that clock
    /// ([`CellIndex::set_device_clock`]: two marks per launch, off by default).
    pub device: Duration,
}

/// Device buffers of the changes sent by [`CellIndex::flush`].
struct WriteBufs {
    head_at: Buffer<u32>,
    head_val: Buffer<CellHead>,
    dir_at: Buffer<u32>,
    dir_val: Buffer<DirSlot>,
    entry_at: Buffer<u32>,
    entry_val: Buffer<CellEntry>,
}

/// Uploads `v`, or one default element when `v` is empty (no zero-size allocations).
fn upload<T: bytemuck::Pod>(dev: &Device, v: &[T]) -> Result<Buffer<T>, EngineError> {
    Ok(if v.is_empty() {
        dev.upload(&[T::zeroed()])?
    } else {
        dev.upload(v)?
    })
}

/// Copies `src` into the start of `dst`: through `stager`'s page-locked parts, or by a
/// plain [`Device::write`] (see [`CellIndex::from_plan_staged`]).
fn copy_in<T: bytemuck::Pod + Send + Sync>(
    dev: &Device,
    stager: &mut Option<&mut Stager>,
    dst: &mut Buffer<T>,
    src: &[T],
) -> Result<(), EngineError> {
    match stager {
        Some(s) => s.write(dev, dst, 0, src)?,
        None => dev.write(dst, 0, src)?,
    }
    Ok(())
}

/// Page-locked parts of a [`Stager`] for [`CellIndex::from_plan_staged`]: four, so
/// that the host fills one while copies of the others run.
pub const UPLOAD_PARTS: usize = 4;

/// Bytes of each part of [`UPLOAD_PARTS`]: 4 MiB, a copy of about a tenth of a
/// millisecond on PCIe 5 (16 MiB page-locked in all, allocated in about 10 ms).
pub const UPLOAD_PART_BYTES: usize = 4 << 20;

/// The [`Stager`] [`CellIndex::from_plan_staged`] copies the tables through
/// ([`UPLOAD_PARTS`] of [`UPLOAD_PART_BYTES`]), made on `dev`: a program that opens the
/// GPU on a thread of its own makes it there, while the index is laid out.
pub fn upload_stager(dev: &Device) -> Result<Stager, EngineError> {
    Ok(dev.stager(UPLOAD_PARTS, UPLOAD_PART_BYTES)?)
}

/// `n` zeroed records, written on all cores.
fn zeroed<T: bytemuck::Zeroable + Clone + Send>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    v.par_extend(rayon::iter::repeat_n(T::zeroed(), n));
    v
}

/// The launches of a call of `events` events under `opts`: a ramp up to
/// [`CellOptions::batch_events`] (at most 2^20), tapered at its end when
/// [`CellOptions::taper`] says.
fn launches_of(opts: &CellOptions, events: usize) -> Ramp {
    let per = opts.batch_events.clamp(1, 1 << 20);
    let ramp = if opts.taper { Ramp::tapered } else { Ramp::new };
    ramp(0..events, per / 8, 2.0, per)
}

/// Room for `n` records and some more, in whole powers of two.
fn room(n: usize) -> usize {
    n.max(1).next_power_of_two()
}

/// The grid over `areas`, the one the CPU grid index (`baselines::grid_index`) uses
/// too: the areas' bounding box, cells of side twice the median radius (a rectangle's:
/// half its longer side, [`Area::radius`]; of a sample of
/// at most ~4096 areas), coarser if that would make more than two cells per area (at
/// least 4096 cells, at most 2^22 in all, at most 2^16 per side). The bounding box is
/// found on all cores (minima and maxima: the same box in any order).
pub fn geometry(areas: &[Area]) -> CellGeometry {
    let none = || ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
    let join = |(lo, hi): ([f64; 2], [f64; 2]), (l, h): ([f64; 2], [f64; 2])| {
        (
            [lo[0].min(l[0]), lo[1].min(l[1])],
            [hi[0].max(h[0]), hi[1].max(h[1])],
        )
    };
    let (mut lo, mut hi) = areas
        .par_iter()
        .with_min_len(1 << 14)
        .fold(none, |b, a| {
            let [x0, y0, x1, y1] = a.bounds();
            join(b, ([x0, y0], [x1, y1]))
        })
        .reduce(none, join);
    if areas.is_empty() {
        lo = [0.0; 2];
        hi = [1.0; 2];
    }
    let (w, h) = ((hi[0] - lo[0]).max(1e-9), (hi[1] - lo[1]).max(1e-9));
    let step = (areas.len() / 4096).max(1);
    let mut r: Vec<f32> = areas.iter().step_by(step).map(|a| a.radius()).collect();
    r.sort_by(f32::total_cmp);
    let median = r.get(r.len() / 2).map_or(0.0, |&s| f64::from(s));
    let cells = (areas.len() as f64 * 2.0).clamp(4096.0, (1u64 << 22) as f64);
    let side = (2.0 * median).max((w * h / cells).sqrt());
    let n = |extent: f64| ((extent / side).ceil() as u32).clamp(1, 1 << 16);
    CellGeometry {
        x0: lo[0],
        y0: lo[1],
        inv: 1.0 / side,
        nx: n(w),
        ny: n(h),
    }
}

/// The cells of `a`'s bounding box, row-major; the CPU grid index files its filters by
/// it too. A circle's box is widened so that no `f32` rounding of the exact test can
/// accept a point outside (as the R*-tree widens it); a rectangle's is its own extent
/// (its test has no rounding, and the cell of a point is monotone in each coordinate),
/// so a rectangle is filed in exactly the cells it touches.
pub fn cells_of(geo: &CellGeometry, a: &Area) -> impl Iterator<Item = u32> {
    let [mut x0, mut y0, mut x1, mut y1] = a.bounds();
    if let Area::Circle { center, .. } = a {
        let r = f64::from(a.radius());
        let (x, y) = (f64::from(center.x), f64::from(center.y));
        let pad = (r + x.abs().max(y.abs())) * 1e-6 + f64::from(f32::MIN_POSITIVE);
        (x0, y0, x1, y1) = (x0 - pad, y0 - pad, x1 + pad, y1 + pad);
    }
    let (x_lo, x_hi) = (geo.index(x0, geo.x0, geo.nx), geo.index(x1, geo.x0, geo.nx));
    let (y_lo, y_hi) = (geo.index(y0, geo.y0, geo.ny), geo.index(y1, geo.y0, geo.ny));
    let nx = geo.nx;
    (y_lo..=y_hi).flat_map(move |cy| (x_lo..=x_hi).map(move |cx| cy * nx + cx))
}

/// Filters per part of [`sorted_triples`].
const TRIPLE_PART: usize = 4096;

/// Most counters (cells times parts of filters) of [`sorted_triples`]' counting sort by
/// cell; a finer grid is sorted whole.
const CELL_COUNTERS: usize = 1 << 22;

/// The (cell, key, filter) triples of filters `0..key.len()` (filter `f` in each of
/// `cells(f)`, under its key `key[f]`) in `n_cells` cells, sorted, and where each cell's
/// run begins (then their end), on all cores. The cell index's build and the CPU grid's
/// make their cells from them. A triple is held as its key and filter in one `u64`
/// ([`triple_key`], [`triple_filter`]), its cell being the run it lies in: 8 bytes where
/// the three took 16, half the memory to fault in and to sort (Table 1's default
/// scenario: 10M triples).
///
/// A counting sort by cell: each part of consecutive filters counts its triples per
/// cell, then writes each at its place (the parts' counts summed in cell order, then
/// in part order: a cell's triples in filter order), then each cell's run is sorted on
/// its own (by key, then filter). A grid of more cells than the counters allow: the
/// triples written in place by parts of filters (each filter's cells counted first),
/// sorted whole in parallel, and each run found by binary search.
pub fn sorted_triples<I: Iterator<Item = u32>>(
    key: &[u32],
    n_cells: usize,
    cells: impl Fn(usize) -> I + Sync,
) -> (Vec<u64>, Vec<usize>) {
    sorted_triples_with(key, n_cells, cells, CELL_COUNTERS)
}

/// A triple's key ([`sorted_triples`]).
#[inline]
pub fn triple_key(t: u64) -> u32 {
    (t >> 32) as u32
}

/// A triple's filter ([`sorted_triples`]).
#[inline]
pub fn triple_filter(t: u64) -> usize {
    t as u32 as usize
}

fn sorted_triples_with<I: Iterator<Item = u32>>(
    key: &[u32],
    n_cells: usize,
    cells: impl Fn(usize) -> I + Sync,
    counters: usize,
) -> (Vec<u64>, Vec<usize>) {
    let n = key.len();
    let part = TRIPLE_PART.max(n.div_ceil(4 * rayon::current_num_threads().max(1)));
    let parts = n.div_ceil(part);
    let triple = |f: usize, c: u32| (u64::from(c) << 32 | u64::from(key[f]), f as u32);
    // A triple in its cell's run: key and filter ([`triple_key`], [`triple_filter`]).
    let in_run = |f: usize| u64::from(key[f]) << 32 | f as u64;
    if n_cells.saturating_mul(parts) > counters {
        let counts: Vec<usize> = (0..n)
            .into_par_iter()
            .with_min_len(1024)
            .map(|f| cells(f).count())
            .collect();
        let part_len: Vec<usize> = counts.par_chunks(part).map(|c| c.iter().sum()).collect();
        let mut triples: Vec<(u64, u32)> = zeroed(part_len.iter().sum());
        let mut runs = Vec::with_capacity(parts);
        let mut rest = &mut triples[..];
        for (p, &len) in part_len.iter().enumerate() {
            let (run, r) = rest.split_at_mut(len);
            runs.push((p * part, run));
            rest = r;
        }
        runs.into_par_iter().for_each(|(first, run)| {
            let all =
                (first..(first + part).min(n)).flat_map(|f| cells(f).map(move |c| triple(f, c)));
            for (slot, t) in run.iter_mut().zip(all) {
                *slot = t;
            }
        });
        triples.par_sort_unstable();
        let bounds = cell_runs(&triples, n_cells);
        let triples = triples
            .par_iter()
            .map(|&(ck, f)| u64::from(ck as u32) << 32 | u64::from(f))
            .collect();
        return (triples, bounds);
    }
    // Per part, its triples per cell.
    let hist: Vec<Vec<u32>> = (0..parts)
        .into_par_iter()
        .map(|p| {
            let mut h = vec![0u32; n_cells];
            for f in p * part..((p + 1) * part).min(n) {
                for c in cells(f) {
                    h[c as usize] += 1;
                }
            }
            h
        })
        .collect();
    // Each cell's start, and each part's place in each cell (cell order, then part).
    let mut bounds = Vec::with_capacity(n_cells + 1);
    let mut places: Vec<Vec<u32>> = vec![vec![0u32; n_cells]; parts];
    let mut at = 0usize;
    for c in 0..n_cells {
        bounds.push(at);
        for (h, pl) in hist.iter().zip(&mut places) {
            pl[c] = at as u32;
            at += h[c] as usize;
        }
    }
    bounds.push(at);
    drop(hist);
    let total = at;
    assert!(total < u32::MAX as usize, "triples fit their 32-bit places");
    let mut triples: Vec<u64> = zeroed(total);
    let out = SharedTriples(triples.as_mut_ptr());
    places
        .into_par_iter()
        .enumerate()
        .for_each(|(p, mut place)| {
            let out = &out;
            for f in p * part..((p + 1) * part).min(n) {
                for c in cells(f) {
                    let i = place[c as usize] as usize;
                    place[c as usize] += 1;
                    assert!(i < total);
                    // SAFETY: `i < total`, inside `triples`, which nothing else touches
                    // during this loop; part `p`'s places in cell `c` are its own run of
                    // its count of them there (counted above from the same `cells`), after
                    // the earlier parts' runs and before the later ones'.
                    unsafe { out.0.add(i).write(in_run(f)) };
                }
            }
        });
    // Each cell's run, in filter order, sorted by key then filter; a large run (a
    // dense cell of the Zipf space) sorted on all cores itself.
    let mut runs = Vec::with_capacity(n_cells);
    let mut rest = &mut triples[..];
    for c in 0..n_cells {
        let (run, r) = rest.split_at_mut(bounds[c + 1] - bounds[c]);
        runs.push(run);
        rest = r;
    }
    runs.into_par_iter().for_each(|run| {
        if run.len() > 1 << 16 {
            run.par_sort_unstable();
        } else {
            run.sort_unstable();
        }
    });
    (triples, bounds)
}

/// A pointer into the triples that [`sorted_triples`]' parts write at disjoint places.
struct SharedTriples(*mut u64);

// SAFETY: the threads sharing it write disjoint elements (see `sorted_triples_with`).
unsafe impl Sync for SharedTriples {}

/// Where each cell's run of `triples` (sorted, the cell in the high 32 bits) begins,
/// then their end: `cells + 1` places, a binary search each, on all cores.
pub fn cell_runs(triples: &[(u64, u32)], cells: usize) -> Vec<usize> {
    (0..cells + 1)
        .into_par_iter()
        .with_min_len(1024)
        .map(|c| triples.partition_point(|t| t.0 >> 32 < c as u64))
        .collect()
}

/// Filters per part of [`FilterRows`]' passes on all cores.
const ROWS_PART: usize = 4096;

/// Each filter's distinct name rows, end to end in one vector (no vector per filter):
/// filter `f`'s lie where its constraints lie in the filter-major table (it has at most
/// as many distinct names as constraints), `spans[f]` being their start and count.
struct FilterRows {
    spans: Vec<(u32, u32)>,
    rows: Vec<u32>,
}

impl FilterRows {
    /// The distinct rows of each of the `n` filters of `fcons` (filter `f`'s constraints
    /// are `fcons[starts[f]..starts[f + 1]]`), ascending, on all cores.
    fn new(fcons: &[DevConstraint], starts: &[u32], n: usize) -> FilterRows {
        let mut rows: Vec<u32> = zeroed(starts[n] as usize);
        let mut lens: Vec<u32> = zeroed(n);
        let mut tasks = Vec::with_capacity(n.div_ceil(ROWS_PART));
        let (mut rest, mut lens_rest) = (&mut rows[..], &mut lens[..]);
        for first in (0..n).step_by(ROWS_PART) {
            let end = (first + ROWS_PART).min(n);
            let (here, r) = rest.split_at_mut((starts[end] - starts[first]) as usize);
            let (l, lr) = lens_rest.split_at_mut(end - first);
            tasks.push((first..end, here, l));
            (rest, lens_rest) = (r, lr);
        }
        tasks.into_par_iter().for_each(|(filters, here, lens)| {
            let base = starts[filters.start];
            for (f, len) in filters.zip(lens) {
                let (a, b) = ((starts[f] - base) as usize, (starts[f + 1] - base) as usize);
                let rs = &mut here[a..b];
                for (r, c) in rs.iter_mut().zip(&fcons[starts[f] as usize..]) {
                    *r = c.tag;
                }
                rs.sort_unstable();
                *len = dedup_sorted(rs) as u32;
            }
        });
        let spans = (0..n)
            .into_par_iter()
            .with_min_len(ROWS_PART)
            .map(|f| (starts[f], lens[f]))
            .collect();
        FilterRows { spans, rows }
    }

    /// The rows of a span.
    #[inline]
    fn span(&self, (at, len): (u32, u32)) -> &[u32] {
        &self.rows[at as usize..(at + len) as usize]
    }

    /// Filter `f`'s rows.
    #[inline]
    fn of(&self, f: usize) -> &[u32] {
        self.span(self.spans[f])
    }

    /// Sorts each filter's rows by `key`, on all cores.
    fn sort_each<K: Ord>(&mut self, key: impl Fn(u32) -> K + Sync) {
        let n = self.spans.len();
        let spans = &self.spans;
        let mut tasks = Vec::with_capacity(n.div_ceil(ROWS_PART));
        let mut rest = &mut self.rows[..];
        let mut at = 0usize;
        for first in (0..n).step_by(ROWS_PART) {
            let end = (first + ROWS_PART).min(n);
            let upto = spans.get(end).map_or(rest.len() + at, |s| s.0 as usize);
            let (here, r) = rest.split_at_mut(upto - at);
            tasks.push((first..end, at, here));
            rest = r;
            at = upto;
        }
        tasks.into_par_iter().for_each(|(filters, base, here)| {
            for f in filters {
                let (a, len) = spans[f];
                let a = a as usize - base;
                here[a..a + len as usize].sort_unstable_by_key(|&r| key(r));
            }
        });
    }
}

/// Moves the distinct values of the sorted `v` to its front; how many there are.
fn dedup_sorted(v: &mut [u32]) -> usize {
    let mut m = 0;
    for i in 0..v.len() {
        if m == 0 || v[i] != v[m - 1] {
            v[m] = v[i];
            m += 1;
        }
    }
    m
}

/// Changes (overflow entries and tombstones) a cell takes, beyond a thirty-second of
/// its sorted entries, before it is laid out again. Small, so that the many small cells
/// of a fine grid keep little room (a cell of `main` entries keeps `CHURN + 2 + main /
/// 16` spare) and events scan short overflows.
const CHURN: usize = 4;

/// Room of a cell of `main` sorted entries: its overflow may reach `CHURN + 1 + main / 32`
/// before the cell is laid out again, plus as much again to grow.
fn ent_room(main: usize) -> usize {
    main + main / 16 + CHURN + 2
}

/// Room of a cell's directory of `keys` keys.
fn dir_room(keys: usize) -> usize {
    keys + keys / 8 + 2
}

/// Writes a cell's sorted `(key, entry)` list at the start of `dir` and `entries`
/// (which lie at slot `d` and entry `e` of the tables, and have room for it); its head.
fn fill_cell(
    dir: &mut [DirSlot],
    entries: &mut [CellEntry],
    d: usize,
    e: usize,
    items: impl Iterator<Item = (u32, CellEntry)>,
) -> CellHead {
    let (mut keys, mut len, mut last) = (0usize, 0usize, None);
    for (i, (k, en)) in items.enumerate() {
        if last.is_some_and(|l| l != k) {
            keys += 1;
        }
        last = Some(k);
        dir[keys] = DirSlot {
            key: k,
            end: i as u32 + 1,
        };
        entries[i] = en;
        len = i + 1;
    }
    CellHead {
        dir: d as u32,
        keys: if len == 0 { 0 } else { keys as u32 + 1 },
        entries: e as u32,
        main: len as u32,
        extra: 0,
        _pad: [0; 3],
    }
}

impl Mirror {
    /// Lays out `n` cells from their `(key, entry)` lists (`items(c)`, each sorted by
    /// key; `keys(c)` the same keys alone, which size the cells without reading their
    /// entries), with room to spare at the end of the tables, on all cores: each cell's
    /// room, then its place (a running sum in cell order), then the cells written in
    /// parts of consecutive cells, each part into its own run of the tables.
    fn lay_out<I, K>(
        n: usize,
        keys: impl Fn(usize) -> K + Sync,
        items: impl Fn(usize) -> I + Sync,
    ) -> Mirror
    where
        I: Iterator<Item = (u32, CellEntry)>,
        K: Iterator<Item = u32>,
    {
        let sizes: Vec<(usize, usize)> = (0..n)
            .into_par_iter()
            .map(|c| {
                let (mut distinct, mut len, mut last) = (0, 0, None);
                for k in keys(c) {
                    if last != Some(k) {
                        distinct += 1;
                        last = Some(k);
                    }
                    len += 1;
                }
                (distinct, len)
            })
            .collect();
        let mut m = Mirror {
            heads: vec![CellHead::default(); n],
            dir_cap: sizes.iter().map(|&(k, _)| dir_room(k) as u32).collect(),
            ent_cap: sizes.iter().map(|&(_, l)| ent_room(l) as u32).collect(),
            dead: vec![0; n],
            ..Mirror::default()
        };
        let dir_total: usize = m.dir_cap.iter().map(|&c| c as usize).sum();
        let ent_total: usize = m.ent_cap.iter().map(|&c| c as usize).sum();
        m.dir = zeroed(dir_total + dir_total / 8 + 1024);
        m.entries = zeroed(ent_total + ent_total / 8 + 4096);
        m.dir_used = dir_total;
        m.ent_used = ent_total;
        // Parts of consecutive cells, each with its run of the directory and entries.
        const PART: usize = 1024;
        let mut tasks = Vec::with_capacity(n.div_ceil(PART));
        let (mut dir, mut entries) = (&mut m.dir[..dir_total], &mut m.entries[..ent_total]);
        let (mut d, mut e) = (0usize, 0usize);
        for (p, heads) in m.heads.chunks_mut(PART).enumerate() {
            let cells = p * PART..p * PART + heads.len();
            let dn: usize = m.dir_cap[cells.clone()].iter().map(|&c| c as usize).sum();
            let en: usize = m.ent_cap[cells.clone()].iter().map(|&c| c as usize).sum();
            let (dh, dr) = dir.split_at_mut(dn);
            let (eh, er) = entries.split_at_mut(en);
            tasks.push((cells, heads, (d, dh), (e, eh)));
            (dir, entries, d, e) = (dr, er, d + dn, e + en);
        }
        let (dir_cap, ent_cap) = (&m.dir_cap, &m.ent_cap);
        tasks
            .into_par_iter()
            .for_each(|(cells, heads, (mut d, mut dir), (mut e, mut entries))| {
                for (c, head) in cells.zip(heads) {
                    let (dh, dr) = dir.split_at_mut(dir_cap[c] as usize);
                    let (eh, er) = entries.split_at_mut(ent_cap[c] as usize);
                    *head = fill_cell(dh, eh, d, e, items(c));
                    (d, e) = (d + dh.len(), e + eh.len());
                    (dir, entries) = (dr, er);
                }
            });
        m
    }

    /// Writes cell `c`'s sorted `(key, entry)` list at directory slot `d` and entry
    /// `e` (room checked by the caller); no overflow, no tombstones.
    fn fill(&mut self, c: usize, d: usize, e: usize, items: &[(u32, CellEntry)]) {
        let (dir, entries) = (&mut self.dir[d..], &mut self.entries[e..]);
        self.heads[c] = fill_cell(dir, entries, d, e, items.iter().copied());
        self.dead[c] = 0;
    }

    /// The live `(key, entry)` pairs of cell `c`, sorted by key then filter (a merge of
    /// its sorted entries and its sorted overflow); `key_of` gives an overflow entry's
    /// key.
    fn live(&self, c: usize, key_of: impl Fn(u32) -> u32) -> Vec<(u32, CellEntry)> {
        let h = self.heads[c];
        let mut out = Vec::with_capacity((h.main + h.extra) as usize);
        let mut start = 0u32;
        for s in &self.dir[h.dir as usize..(h.dir + h.keys) as usize] {
            for en in &self.entries[(h.entries + start) as usize..(h.entries + s.end) as usize] {
                if !dead(en) {
                    out.push((s.key, *en));
                }
            }
            start = s.end;
        }
        // The sorted entries are in (key, filter) order already: only the overflow is
        // sorted, then merged in.
        let first = (h.entries + h.main) as usize;
        let order = |&(k, en): &(u32, CellEntry)| (k, en.filter & !FLAGS);
        let mut extra: Vec<(u32, CellEntry)> = self.entries[first..first + h.extra as usize]
            .iter()
            .map(|en| (key_of(en.filter & !FLAGS), *en))
            .collect();
        extra.sort_unstable_by_key(order);
        let main = std::mem::take(&mut out);
        let mut merged = Vec::with_capacity(main.len() + extra.len());
        let (mut i, mut j) = (0, 0);
        while i < main.len() || j < extra.len() {
            if j == extra.len() || (i < main.len() && order(&main[i]) <= order(&extra[j])) {
                merged.push(main[i]);
                i += 1;
            } else {
                merged.push(extra[j]);
                j += 1;
            }
        }
        merged
    }
}

impl CellIndex {
    /// Builds the cell index of `subs` at their current areas on `dev` (see the module's
    /// docs for what it holds) and uploads it.
    ///
    /// ```
    /// use clcb::cells::{CellIndex, CellOptions};
    /// use clcb::workload::{Params, Workload};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let params = Params {
    ///     events: 6,
    ///     subscriptions: 40,
    ///     filters_per_subscription: 2,
    ///     names: 10,
    ///     area_percent: 20.0,
    ///     selectivity_percent: 50.0,
    ///     ..Params::default()
    /// };
    /// let w = Workload::new(params, 3);
    /// let mut subs = w.subscriptions();
    /// let dev = gpu_kernels::Device::emulator(); // or Device::gpu(0, clcb::PTX)?
    /// let opts = CellOptions::for_device(&dev);
    /// let mut index = CellIndex::new(dev, &subs, opts)?;
    /// let mut rtree = baselines::rtree::RTreeMatcher::build(&subs);
    /// let events = w.events();
    /// let answers = index.match_batch(&events)?; // dense subscription indices
    /// for (e, a) in events.iter().zip(&answers) {
    ///     assert_eq!(a, &rtree.match_indices(e, &subs));
    /// }
    /// // Areas move (Fig. 5): the cells follow.
    /// for u in w.updates(10, subs.filter_count()) {
    ///     index.move_area(&u)?;
    ///     rtree.move_area(&u)?;
    ///     subs.apply(&u)?;
    /// }
    /// for (e, a) in events.iter().zip(index.match_batch(&events)?) {
    ///     assert_eq!(a, rtree.match_indices(e, &subs));
    /// }
    /// # Ok(()) }
    /// ```
    pub fn new(
        dev: Device,
        subs: &Subscriptions,
        opts: CellOptions,
    ) -> Result<CellIndex, EngineError> {
        let n = subs.filter_count();
        if n >= RECT as usize || subs.len() >= u32::MAX as usize {
            return Err(EngineError::TooLarge(n.max(subs.len())));
        }
        let t = Instant::now();
        // Every filter checked, then the columns the index builds from, on all cores.
        let cols = SubscriptionColumns::from_subscriptions(subs).map_err(|e| match e {
            FromModelError::Filter { source, .. } => EngineError::from(source),
            FromModelError::TooLarge(e) => EngineError::TooLarge(e.0),
        })?;
        let mut ix = Self::from_columns(dev, cols, opts)?;
        ix.build.check = t.elapsed() - ix.build.total();
        Ok(ix)
    }

    /// [`CellIndex::new`] of subscriptions held as columns (what the loader of a file
    /// gives, [`crate::io::load_subscription_columns`]): nothing to check, their
    /// constraints moved in as the tables' ([`Tables::from_columns`]; the index keeps
    /// the subscriptions' ids, [`CellIndex::id`]).
    pub fn from_columns(
        dev: Device,
        cols: SubscriptionColumns,
        opts: CellOptions,
    ) -> Result<CellIndex, EngineError> {
        Self::from_plan(dev, CellPlan::build(cols)?, opts)
    }

    /// The index of `plan` (laid out on the host, [`CellPlan::build`]) on `dev`: its
    /// tables allocated on the device and copied in, waited for.
    pub fn from_plan(
        dev: Device,
        plan: CellPlan,
        opts: CellOptions,
    ) -> Result<CellIndex, EngineError> {
        Self::from_plan_staged(dev, plan, opts, None)
    }

    /// [`CellIndex::from_plan`], its tables copied in through `stager`'s page-locked
    /// parts (made on `dev`, [`Device::stager`]) on all cores, several copies in flight,
    /// or, for `None`, each by one [`Device::write`] from pageable memory (through the
    /// driver's staging, on this thread alone). On an H200 with 16 host cores, Table 1's
    /// default scenario (250k subscriptions, 560 MB on the device, about 515 MB of it
    /// copied): staged through [`upload_stager`]'s parts 0.023-0.029 s, plain
    /// 0.068-0.075 s on the same host (0.095-0.119 s on another),
    /// `results/gpu-logs/clcb-upload-H200-2026-11-29/`.
    pub fn from_plan_staged(
        dev: Device,
        plan: CellPlan,
        opts: CellOptions,
        mut stager: Option<&mut Stager>,
    ) -> Result<CellIndex, EngineError> {
        let CellPlan {
            tables,
            ids,
            geo,
            key,
            area,
            proto,
            sigs,
            has_rects,
            row_flags,
            mirror,
            timing,
        } = plan;
        let mut laps = Laps(Instant::now());
        let mut timing = timing;
        // Every table allocated, then every one copied in (the timing tells the two
        // apart); an empty one gets one zeroed record.
        let mut d = DevTables {
            heads: dev.alloc(mirror.heads.len().max(1))?,
            dir: dev.alloc(mirror.dir.len().max(1))?,
            entries: dev.alloc(mirror.entries.len().max(1))?,
        };
        let mut fcons = dev.alloc(tables.fcons.len().max(1))?;
        let mut fcons_start = dev.alloc(tables.fcons_start.len().max(1))?;
        let mut cstrings = dev.alloc(tables.cstrings.len().max(1))?;
        let mut d_row_flags = dev.alloc(row_flags.len().max(1))?;
        dev.synchronize()?;
        laps.lap(&mut timing.alloc);
        let stager = &mut stager;
        copy_in(&dev, stager, &mut d.heads, &mirror.heads)?;
        copy_in(
            &dev,
            stager,
            &mut d.dir,
            &mirror.dir[..mirror.dir_used.min(mirror.dir.len())],
        )?;
        copy_in(
            &dev,
            stager,
            &mut d.entries,
            &mirror.entries[..mirror.ent_used.min(mirror.entries.len())],
        )?;
        copy_in(&dev, stager, &mut fcons, &tables.fcons)?;
        copy_in(&dev, stager, &mut fcons_start, &tables.fcons_start)?;
        copy_in(&dev, stager, &mut cstrings, &tables.cstrings)?;
        copy_in(&dev, stager, &mut d_row_flags, &row_flags)?;
        if let Some(s) = stager {
            s.finish(&dev)?;
        }
        let ix = CellIndex {
            fcons,
            fcons_start,
            cstrings,
            d_row_flags,
            ids,
            tables,
            geo,
            key,
            area,
            proto,
            sig: sigs,
            has_rects,
            row_flags,
            mirror,
            changes: Changes::default(),
            d,
            pipe: Pipe::default(),
            writes: None,
            device_clock: false,
            counts_launch: false,
            block_writes: false,
            timing: CellTiming::default(),
            opts: CellOptions {
                batch_events: opts.batch_events.clamp(1, 1 << 20),
                ..opts
            },
            dev,
            build: timing,
        };
        ix.dev.synchronize()?;
        let mut ix = ix;
        laps.lap(&mut ix.build.upload);
        Ok(ix)
    }
}

/// A cell index laid out on the host, not yet on a device ([`CellPlan::build`]): what
/// [`CellIndex::from_plan`] uploads. A program that opens the GPU on a thread of its own
/// builds it meanwhile, and waits for the device only to upload it.
pub struct CellPlan {
    tables: Tables,
    ids: Vec<SubscriptionId>,
    geo: CellGeometry,
    key: Vec<u32>,
    area: Vec<Area>,
    proto: Vec<CellEntry>,
    sigs: Vec<[u32; 3]>,
    has_rects: bool,
    row_flags: Vec<u32>,
    mirror: Mirror,
    timing: BuildTiming,
}

impl CellPlan {
    /// The index of subscriptions held as columns, laid out on the host on all cores
    /// (what [`CellIndex::from_columns`] does before its upload).
    pub fn build(cols: SubscriptionColumns) -> Result<CellPlan, EngineError> {
        let n = cols.filter_count();
        if n >= RECT as usize || cols.len() >= u32::MAX as usize {
            return Err(EngineError::TooLarge(n.max(cols.len())));
        }
        let mut timing = BuildTiming::default();
        let mut laps = Laps(Instant::now());
        let (tables, area, ids) = Tables::from_columns(cols);
        laps.lap(&mut timing.tables);
        if tables.fcons.len() >= u32::MAX as usize || tables.cstrings.len() >= u32::MAX as usize {
            return Err(EngineError::TooLarge(tables.fcons.len()));
        }
        let rows = tables.names.len();
        // A filter's constraints are `tables.fcons` (each tagged with its name's row; a
        // string's bytes in `tables.cstrings`): no name is looked up again.
        let cons = |f: usize| {
            &tables.fcons[tables.fcons_start[f] as usize..tables.fcons_start[f + 1] as usize]
        };
        let str_eq = |c: &DevConstraint| -> Option<(u32, &[u8])> {
            (u32::from(c.op) == OP_EQ && u32::from(c.kind) == KIND_STR).then(|| {
                let (at, len) = (c.bits as u32 as usize, (c.bits >> 32) as usize);
                (c.tag, &tables.cstrings[at..at + len])
            })
        };
        // Per filter: its name rows (ascending by frequency); counts of names,
        // `name = value`s, pairs. On all cores: each filter on its own, the counts per
        // thread and then summed.
        let mut filter_rows = FilterRows::new(&tables.fcons, &tables.fcons_start, n);
        let name_freq: Vec<u32> = (0..n)
            .into_par_iter()
            .with_min_len(ROWS_PART)
            .fold(
                || vec![0u32; rows],
                |mut acc, f| {
                    for &r in filter_rows.of(f) {
                        acc[r as usize] += 1;
                    }
                    acc
                },
            )
            .reduce(
                || vec![0u32; rows],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x += y;
                    }
                    a
                },
            );
        // Every filter's constraints lie end to end in `fcons`.
        let all_cons =
            &tables.fcons[tables.fcons_start[0] as usize..tables.fcons_start[n] as usize];
        let eq_freq: FastMap<(u32, &[u8]), u32> =
            count_in_parts(all_cons, |c| str_eq(c).into_iter());
        let pair_of = |rs: &[u32]| (rs[0], *rs.get(1).unwrap_or(&rs[0]));
        filter_rows.sort_each(|r| (name_freq[r as usize], r));
        let filter_rows = filter_rows;
        let pair_freq: FastMap<(u32, u32), u32> = count_in_parts(&filter_rows.spans, |&sp| {
            let rs = filter_rows.span(sp);
            (!rs.is_empty()).then(|| pair_of(rs)).into_iter()
        });
        // Each filter's key and the rows it marks, its signature and its entry, each
        // column on all cores, straight into its place.
        let (mut key, mut marks) = (Vec::new(), Vec::new());
        (0..n)
            .into_par_iter()
            .map(|f| {
                let rs = filter_rows.of(f);
                let rarest_eq = cons(f)
                    .iter()
                    .filter_map(str_eq)
                    .map(|(r, v)| (eq_freq[&(r, v)], r, v))
                    .min();
                match rarest_eq {
                    Some((freq, r, v)) if freq <= pair_freq[&pair_of(rs)] => {
                        (eq_key(r, v), [(r, ROW_EQ), (r, ROW_EQ)])
                    }
                    _ if rs.is_empty() => (EMPTY_KEY, [(0, 0), (0, 0)]),
                    _ => {
                        let (a, b) = pair_of(rs);
                        (pair_key(a, b), [(a, ROW_PAIR), (b, ROW_PAIR)])
                    }
                }
            })
            .unzip_into_vecs(&mut key, &mut marks);
        let sigs: Vec<[u32; 3]> = (0..n)
            .into_par_iter()
            .map(|f| {
                let mut sig = [0u32; 3];
                for &r in filter_rows.of(f) {
                    let (w, bit) = sig_bit(r);
                    sig[w] |= bit;
                }
                sig
            })
            .collect();
        drop(filter_rows);
        let proto: Vec<CellEntry> = (0..n)
            .into_par_iter()
            .map(|f| {
                let implied = if cons(f).is_empty() { IMPLIED } else { 0 };
                entry(f as u32 | implied, tables.filter_sub[f], &area[f], sigs[f])
            })
            .collect();
        // The rows the keys mark (a key of no rows marks none: flag 0), per thread and
        // then joined.
        let row_flags = marks
            .par_iter()
            .fold(
                || vec![0u32; rows],
                |mut acc, m: &[(u32, u32); 2]| {
                    for &(r, flag) in m.iter().filter(|m| m.1 != 0) {
                        acc[r as usize] |= flag;
                    }
                    acc
                },
            )
            .reduce(
                || vec![0u32; rows],
                |mut a, b| {
                    a.iter_mut().zip(b).for_each(|(x, y)| *x |= y);
                    a
                },
            );
        drop(marks);
        laps.lap(&mut timing.keys);
        let geo = geometry(&area);
        let has_rects = area.par_iter().any(Area::is_rect);
        let mirror = CellIndex::cells(&geo, &key, &proto, &area, (&mut laps, &mut timing));
        Ok(CellPlan {
            tables,
            ids,
            geo,
            key,
            area,
            proto,
            sigs,
            has_rects,
            row_flags,
            mirror,
            timing,
        })
    }
}

impl CellIndex {
    /// Where [`CellIndex::new`]'s time went.
    pub fn build_timing(&self) -> BuildTiming {
        self.build
    }

    /// The cells of the filters at their entries' circles, on all cores: the (cell, key,
    /// filter) triples of every filter's cells sorted, then each cell laid out from its
    /// run of them (sorted by key, then filter), with room.
    fn cells(
        geo: &CellGeometry,
        key: &[u32],
        proto: &[CellEntry],
        area: &[Area],
        (laps, timing): (&mut Laps, &mut BuildTiming),
    ) -> Mirror {
        let n_cells = (geo.nx * geo.ny) as usize;
        let (triples, bounds) = sorted_triples(key, n_cells, |f| cells_of(geo, &area[f]));
        laps.lap(&mut timing.triples);
        let triples = &triples;
        let run = |c: usize| &triples[bounds[c]..bounds[c + 1]];
        let m = Mirror::lay_out(
            n_cells,
            |c| run(c).iter().map(|&t| triple_key(t)),
            |c| {
                run(c)
                    .iter()
                    .map(|&t| (triple_key(t), proto[triple_filter(t)]))
            },
        );
        laps.lap(&mut timing.layout);
        m
    }

    /// Sets the most events per launch ([`CellOptions::batch_events`]) of the next
    /// calls (at least 1).
    pub fn set_batch_events(&mut self, events: usize) {
        self.opts.batch_events = events.clamp(1, 1 << 20);
    }

    /// Sets whether the next calls' launches shrink at their end
    /// ([`CellOptions::taper`]).
    pub fn set_taper(&mut self, on: bool) {
        self.opts.taper = on;
    }

    /// Times each launch's kernels by the device's clock ([`CellTiming::device`]) or
    /// not (the default: two marks and a reading less per launch).
    pub fn set_device_clock(&mut self, on: bool) {
        self.device_clock = on;
    }

    /// Hands each launch's two counts to the host with a launch of [`cells_counts()`] of
    /// its own after [`cells_match()`] (`true`), or from the last block of [`cells_match()`]
    /// (`false`, the default: a launch less per launch).
    pub fn set_counts_launch(&mut self, on: bool) {
        self.counts_launch = on;
    }

    /// Has each block of [`cells_match()`] write its events' starts and lengths into the
    /// mapped answers at once, one write of 32 bytes (`true`), or each warp its
    /// event's, four writes of 8 bytes (`false`, the default: the block's way was no
    /// faster on Fig. 3a's stream at 1M subscriptions, 6.1 against 5.95 ns an event:
    /// H200, `cells_split`, 2026-11-29).
    pub fn set_block_writes(&mut self, on: bool) {
        self.block_writes = on;
    }

    /// Number of filters indexed.
    pub fn filters(&self) -> usize {
        self.key.len()
    }

    /// The grid's cells per side (x, y).
    pub fn cells_per_side(&self) -> (u32, u32) {
        (self.geo.nx, self.geo.ny)
    }

    /// Dense subscription index -> the user's id.
    pub fn id(&self, index: u32) -> SubscriptionId {
        self.ids[index as usize]
    }

    /// The device this index lives on.
    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// Bytes of each of the index's device tables, largest first: the cells' entries
    /// (`entries`), directories (`dir`) and heads (`heads`), the filters' constraints
    /// (`fcons`), their starts (`fcons_start`), their strings (`cstrings`), the rows' key
    /// flags (`row_flags`). (The room at the tables' end, which only moves fill, is
    /// allocated but not copied in.)
    pub fn table_bytes(&self) -> Vec<(&'static str, usize)> {
        let mut t = vec![
            ("entries", self.d.entries.bytes()),
            ("dir", self.d.dir.bytes()),
            ("heads", self.d.heads.bytes()),
            ("fcons", self.fcons.bytes()),
            ("fcons_start", self.fcons_start.bytes()),
            ("cstrings", self.cstrings.bytes()),
            ("row_flags", self.d_row_flags.bytes()),
        ];
        t.sort_by_key(|&(_, b)| std::cmp::Reverse(b));
        t
    }

    /// Moves a filter's area (§5, Fig. 5): its entries leave the cells of its old area
    /// (tombstones) and join the overflow of the new one's, on the host mirror; the
    /// device follows at the next match or [`CellIndex::synchronize`].
    pub fn move_area(&mut self, u: &AreaUpdate) -> Result<(), EngineError> {
        let f = u.filter.0 as usize;
        let Some(&old) = self.area.get(f) else {
            return Err(ModelError::NoSuchFilter(u.filter.0, self.area.len()).into());
        };
        for c in cells_of(&self.geo, &old) {
            self.remove(c as usize, f as u32);
        }
        let p = &mut self.proto[f];
        *p = entry(p.filter, p.sub, &u.area, self.sig[f]);
        self.has_rects |= u.area.is_rect();
        let entry = *p;
        for c in cells_of(&self.geo, &u.area) {
            self.add(c as usize, entry);
        }
        self.area[f] = u.area;
        Ok(())
    }

    /// [`CellIndex::move_area`] for each update in order.
    pub fn move_areas(&mut self, us: &[AreaUpdate]) -> Result<(), EngineError> {
        us.iter().try_for_each(|u| self.move_area(u))
    }

    /// Removes filter `f` from cell `c` (a tombstone among the sorted entries, or out
    /// of the overflow).
    fn remove(&mut self, c: usize, f: u32) {
        let m = &mut self.mirror;
        let h = m.heads[c];
        let k = self.key[f as usize];
        let dir = &m.dir[h.dir as usize..(h.dir + h.keys) as usize];
        if let Ok(i) = dir.binary_search_by_key(&k, |s| s.key) {
            let start = if i == 0 { 0 } else { dir[i - 1].end };
            let (lo, hi) = (
                (h.entries + start) as usize,
                (h.entries + dir[i].end) as usize,
            );
            // A key's sorted entries are in filter order (tombstones stay in place):
            // a binary search, where a dense cell of the Zipf space files thousands of
            // filters under one key.
            let j = lo + m.entries[lo..hi].partition_point(|e| e.filter & !FLAGS < f);
            if j < hi && m.entries[j].filter & !FLAGS == f && !dead(&m.entries[j]) {
                m.entries[j].sq = TOMBSTONE;
                m.dead[c] += 1;
                self.changes.entries.push(j as u32);
                self.maybe_lay_out(c);
                return;
            }
        }
        let first = (h.entries + h.main) as usize;
        let last = first + h.extra as usize;
        if let Some(j) = (first..last).find(|&j| m.entries[j].filter & !FLAGS == f) {
            m.entries[j] = m.entries[last - 1];
            m.heads[c].extra -= 1;
            self.changes.entries.push(j as u32);
            self.changes.heads.push(c as u32);
        }
    }

    /// Appends `entry` to cell `c`'s overflow.
    fn add(&mut self, c: usize, entry: CellEntry) {
        let m = &mut self.mirror;
        let h = m.heads[c];
        let at = (h.entries + h.main + h.extra) as usize;
        // The room always holds the overflow: the cell is laid out again before it
        // outgrows `CHURN + 1 + main / 32` (see `ent_room`).
        debug_assert!(h.main + h.extra < m.ent_cap[c]);
        m.entries[at] = entry;
        m.heads[c].extra += 1;
        self.changes.entries.push(at as u32);
        self.changes.heads.push(c as u32);
        self.maybe_lay_out(c);
    }

    /// Lays cell `c` out again (overflow merged into the sorted entries, tombstones
    /// dropped) once they make up more than a thirty-second of it (and more than [`CHURN`]),
    /// in its room, or at the end of the tables when it outgrew it; when the tables
    /// have no room left either, the whole index is laid out again
    /// ([`CellIndex::relayout`]) and the next flush uploads it.
    fn maybe_lay_out(&mut self, c: usize) {
        let m = &self.mirror;
        let h = m.heads[c];
        if (h.extra + m.dead[c]) as usize <= CHURN + h.main as usize / 32 {
            return;
        }
        let key = &self.key;
        let items = m.live(c, |f| key[f as usize]);
        let keys = items
            .iter()
            .enumerate()
            .filter(|&(i, it)| i == 0 || items[i - 1].0 != it.0)
            .count();
        let m = &mut self.mirror;
        let (mut d, mut e) = (h.dir as usize, h.entries as usize);
        if ent_room(items.len()) > m.ent_cap[c] as usize || keys > m.dir_cap[c] as usize {
            let (dc, ec) = (dir_room(2 * keys), ent_room(2 * items.len()));
            if m.dir_used + dc > m.dir.len() || m.ent_used + ec > m.entries.len() {
                // No room left at the end: every cell laid out afresh, with new room,
                // and the next flush uploads the whole index.
                self.relayout();
                return;
            }
            (d, e) = (m.dir_used, m.ent_used);
            m.dir_cap[c] = dc as u32;
            m.ent_cap[c] = ec as u32;
            m.dir_used += dc;
            m.ent_used += ec;
        }
        m.fill(c, d, e, &items);
        self.changes.heads.push(c as u32);
        self.changes.dir.extend(d as u32..(d + keys) as u32);
        self.changes
            .entries
            .extend(e as u32..(e + items.len()) as u32);
    }

    /// Lays every cell out afresh (overflows merged, tombstones dropped, room renewed)
    /// on the host; the next flush uploads the whole index.
    fn relayout(&mut self) {
        let key = &self.key;
        let m = &self.mirror;
        let cells: Vec<Vec<(u32, CellEntry)>> = (0..m.heads.len())
            .into_par_iter()
            .map(|c| m.live(c, |f| key[f as usize]))
            .collect();
        self.mirror = Mirror::lay_out(
            cells.len(),
            |c| cells[c].iter().map(|it| it.0),
            |c| cells[c].iter().copied(),
        );
        self.changes = Changes {
            relayout: true,
            ..Changes::default()
        };
    }

    /// Brings the device tables up to date with the moves made since the last call:
    /// the changed records in one copy per table and one launch of `cells_write`, or,
    /// after [`CellIndex::relayout`], the whole index uploaded.
    fn flush(&mut self) -> Result<(), EngineError> {
        let ch = std::mem::take(&mut self.changes);
        if ch.relayout {
            self.d = DevTables {
                heads: upload(&self.dev, &self.mirror.heads)?,
                dir: upload(&self.dev, &self.mirror.dir)?,
                entries: upload(&self.dev, &self.mirror.entries)?,
            };
            return Ok(());
        }
        let (mut heads, mut dir, mut entries) = (ch.heads, ch.dir, ch.entries);
        for v in [&mut heads, &mut dir, &mut entries] {
            v.sort_unstable();
            v.dedup();
        }
        let total = heads.len() + dir.len() + entries.len();
        if total == 0 {
            return Ok(());
        }
        let m = &self.mirror;
        let hv: Vec<CellHead> = heads.iter().map(|&i| m.heads[i as usize]).collect();
        let dv: Vec<DirSlot> = dir.iter().map(|&i| m.dir[i as usize]).collect();
        let ev: Vec<CellEntry> = entries.iter().map(|&i| m.entries[i as usize]).collect();
        let dev = &self.dev;
        let fits = |w: &WriteBufs| {
            w.head_at.len() >= heads.len()
                && w.dir_at.len() >= dir.len()
                && w.entry_at.len() >= entries.len()
        };
        if !self.writes.as_ref().is_some_and(fits) {
            self.writes = Some(WriteBufs {
                head_at: dev.alloc(room(heads.len()))?,
                head_val: dev.alloc(room(heads.len()))?,
                dir_at: dev.alloc(room(dir.len()))?,
                dir_val: dev.alloc(room(dir.len()))?,
                entry_at: dev.alloc(room(entries.len()))?,
                entry_val: dev.alloc(room(entries.len()))?,
            });
        }
        let w = self.writes.as_mut().expect("allocated above");
        dev.write(&mut w.head_at, 0, &heads)?;
        dev.write(&mut w.head_val, 0, &hv)?;
        dev.write(&mut w.dir_at, 0, &dir)?;
        dev.write(&mut w.dir_val, 0, &dv)?;
        dev.write(&mut w.entry_at, 0, &entries)?;
        dev.write(&mut w.entry_val, 0, &ev)?;
        let threads = (total as u32).min(1 << 20);
        cells_write::launch(
            dev,
            LaunchConfig::linear(threads, 256),
            heads.len() as u32,
            &w.head_at,
            &w.head_val,
            dir.len() as u32,
            &w.dir_at,
            &w.dir_val,
            entries.len() as u32,
            &w.entry_at,
            &w.entry_val,
            &self.d.heads,
            &self.d.dir,
            &self.d.entries,
        )?;
        Ok(())
    }

    /// Applies the moves made so far on the device and waits for it.
    pub fn synchronize(&mut self) -> Result<(), EngineError> {
        self.flush()?;
        Ok(self.dev.synchronize()?)
    }

    /// The dense indices of the subscriptions matching each event, ascending (one
    /// answer per event, in order), [`CellOptions::batch_events`] events per launch: the
    /// answers of [`CellIndex::match_batch_into`], one vector per event.
    pub fn match_batch(&mut self, events: &[Event]) -> Result<Vec<Vec<u32>>, EngineError> {
        self.match_event_batch(&EventBatch::from_events(events))
    }

    /// [`CellIndex::match_batch`] over a flat batch, read as it lies.
    pub fn match_event_batch(&mut self, b: &EventBatch) -> Result<Vec<Vec<u32>>, EngineError> {
        let mut answers = CellAnswers::default();
        self.match_event_batch_into(b, &mut answers)?;
        Ok(answers.to_vecs())
    }

    /// [`CellIndex::match_event_batch_into`] of heap events, converted to a flat batch
    /// first ([`EventBatch::from_events`], on all cores).
    pub fn match_batch_into(
        &mut self,
        events: &[Event],
        answers: &mut CellAnswers,
    ) -> Result<(), EngineError> {
        self.match_event_batch_into(&EventBatch::from_events(events), answers)
    }

    /// Forgets which batch dictionaries are on the device, so that the next call
    /// translates and uploads its batch's (what a call on a new batch pays) even when
    /// they equal the last call's; the device buffers stay for reuse. For timing a call
    /// as a new batch's: a stream of one batch's ranges skips them rightly.
    pub fn forget_dictionaries(&mut self) {
        if let Some(d) = self.pipe.dicts.as_mut() {
            d.key = None;
        }
    }

    /// Matches the events of `b` into `answers` (their page-locked areas reused from
    /// call to call: no allocation, and no work per event, in the steady state), in
    /// launches that double from an eighth of [`CellOptions::batch_events`] up to it.
    ///
    /// Once per call the batch's names are translated to rows and its strings' spans
    /// uploaded with its arena (one copy on the pipeline's queue, which the first
    /// launch's kernels wait for). Then a pipeline of two launch slots: the host queues
    /// launch `k` (its columns copied in on a queue of their own from page-locked
    /// staging; on the device's stream, once they are in, [`cells_match()`] writing the
    /// answers into an area of `answers` and the counts into the slot's),
    /// then collects launch `k - 1` (waits for it, reads its two counts; nothing
    /// copied), while, from the start of the queuing, the other cores copy launch
    /// `k + 1`'s columns into the staging `k - 1` used. The whole call runs on
    /// rayon's pool, so that the staging is work of the pool, not a job handed to it
    /// from outside.
    pub fn match_event_batch_into(
        &mut self,
        b: &EventBatch,
        answers: &mut CellAnswers,
    ) -> Result<(), EngineError> {
        self.flush()?;
        answers.clear();
        if self.key.is_empty() || b.is_empty() {
            answers.events = b.len();
            return Ok(());
        }
        if b.total_attrs() >= u32::MAX as usize {
            return Err(EngineError::TooLarge(b.total_attrs()));
        }
        if self.pipe.queue.is_none() {
            self.pipe.queue = Some(self.dev.queue()?);
        }
        let started = Instant::now();
        self.upload_dicts(b)?;
        self.timing.dictionaries += started.elapsed();
        let r = if rayon::current_thread_index().is_some() {
            self.pipeline(b, answers)
        } else {
            rayon::scope(|_| self.pipeline(b, answers))
        };
        if r.is_err() {
            // Copies may still run on the queue and a slot's counts may be left
            // mid-launch: stop everything, start afresh.
            self.pipe.queue = None;
            let _ = self.dev.synchronize();
            self.pipe.slots = [None, None];
        }
        r
    }

    /// Translates `b`'s dictionaries (names to rows, strings to their spans) and queues
    /// their upload with its string arena, in one copy on the pipeline's queue (before
    /// the call's first launch's columns, whose kernels wait for them), into the last
    /// call's buffers where they are large enough.
    fn upload_dicts(&mut self, b: &EventBatch) -> Result<(), EngineError> {
        if self
            .pipe
            .dicts
            .as_ref()
            .is_some_and(|d| d.key.as_ref().is_some_and(|k| k.is_of(b)))
        {
            // The last call's batch had the same dictionaries: on the device already.
            return Ok(());
        }
        let names = b.content().names();
        if self.row_flags.len() >= ROW_MASK as usize {
            return Err(EngineError::TooLarge(self.row_flags.len()));
        }
        let strings = b.content().strings();
        let arena = strings.arena();
        let (n_names, n_strs) = (names.len(), strings.spans().len());
        // A byte past the arena: an empty string's offset may be the arena's end, which
        // must still lie inside the allocation.
        let arena_words = (arena.len() + 1).div_ceil(4);
        let words = n_names + 2 * n_strs + arena_words;
        let too_large = |n: usize| n >= u32::MAX as usize;
        if too_large(n_names) || too_large(n_strs) || too_large(words) {
            return Err(EngineError::TooLarge(words));
        }
        let dev = &self.dev;
        let (w, h) = match self.pipe.dicts.take() {
            Some(d) => (Some(d.words), Some(d.staging)),
            None => (None, None),
        };
        let mut staging = match h {
            Some(h) if h.len() >= words => h,
            _ => dev.alloc_host(room(words))?,
        };
        let run = &mut staging.as_mut_slice()[..words];
        let (rows, rest) = run.split_at_mut(n_names);
        let (spans, bytes) = rest.split_at_mut(2 * n_strs);
        // A name's row with its key flags above it, each name on its own (on all cores:
        // the `keywords` workload's batches name thousands of keywords).
        rows.par_iter_mut()
            .with_min_len(1024)
            .enumerate()
            .for_each(|(i, r)| {
                let n = names.str_of(i as u32);
                let row = self.tables.name_rows.get(n.as_bytes());
                *r = row.map_or(NO_ROW, |r| {
                    r | (self.row_flags[r as usize] << ROW_FLAGS_SHIFT)
                });
            });
        for (s, &(off, len)) in spans.chunks_exact_mut(2).zip(strings.spans()) {
            s.copy_from_slice(&[off, len]);
        }
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(bytes);
        bytes[..arena.len()].copy_from_slice(arena);
        let fresh = w.as_ref().is_none_or(|w| w.len() < words);
        let d = Dicts {
            words: dev.kept_or_grown(w, words, room)?,
            staging,
            n_names: n_names as u32,
            n_strs: n_strs as u32,
            key: Some(DictKey::of(b)),
        };
        let q = self.pipe.queue.as_ref().expect("made by the call");
        if fresh {
            // Allocated (and zeroed) in the device stream's order: the copy waits.
            let allocated = dev.signal(None)?;
            dev.wait(Some(q), &allocated)?;
        }
        let mut d = d;
        // SAFETY: `d.staging` is written again only by a later call, once this one has
        // ended: its kernels ran, after the signal of its first launch's copy in, which
        // this queue reaches after this copy; `d.words` is read only by this call's
        // kernels (and later calls'), which wait for that signal, and freed or written
        // only by a later call.
        unsafe { dev.write_on(q, &mut d.words, 0, &d.staging, 0..words)? };
        self.pipe.dicts = Some(d);
        Ok(())
    }

    /// The launches of a call of `events` events: doubling from an eighth of a full
    /// one (and halving back to it, [`CellOptions::taper`]).
    fn launches(&self, events: usize) -> Ramp {
        launches_of(&self.opts, events)
    }

    /// Readies `answers` for a call of `events` events: the page-locked area of each of
    /// its launches allocated now, where it is still missing or too small, so that the
    /// call (and any later call of at most as many events) allocates none while its
    /// launches run: a new [`CellAnswers`] otherwise makes each launch's area (about 1.6
    /// MB for 65,536 events) on the driving thread between two launches (`clcb match`
    /// on one H200, whose four windows of 1M events each went into new answers, spent
    /// 11-14 ms of its 53-58 ms stream queuing its 39 launches:
    /// `results/e2e/e2e-2026-11-29-1040.csv`; with its answers made ahead, 4 ms of a 49
    /// ms stream, the areas 22 ms before it: `results/gpu-logs/cells-chains-H200-2026-11-29/`).
    /// The areas are those a call would make:
    /// room for every launch's starts and lengths and four answers an event; more grow
    /// as before.
    pub fn reserve_answers(
        &self,
        answers: &mut CellAnswers,
        events: usize,
    ) -> Result<(), EngineError> {
        answers.reserve(&self.dev, &self.opts, events)
    }

    /// The pipeline of [`CellIndex::match_event_batch_into`], on rayon's pool.
    fn pipeline(&mut self, b: &EventBatch, answers: &mut CellAnswers) -> Result<(), EngineError> {
        let per = self.opts.batch_events;
        let mut chunks = self.launches(b.len());
        let first = chunks.next().expect("a batch of at least one event");
        let t = Instant::now();
        let staging = self.pipe.staging[0].take();
        let mut cur = match Staged::prepare(staging, b, first) {
            Prepared::Staged(st) => st,
            Prepared::Short(events, _) => {
                let bufs = Staging::alloc(&self.dev, cols_of(b, &events).words())?;
                Staged::fill(bufs, b, events)
            }
        };
        self.timing.stage += t.elapsed();
        if self.pipe.staging[1].is_none() && b.len() > cur.events.len() {
            let full = Cols {
                n: per,
                na: cur.cols.na * per / cur.cols.n.max(1),
            };
            self.pipe.staging[1] = Some(Staging::alloc(&self.dev, full.words())?);
        }
        let mut slot = 0;
        // The launch before the one staged in `cur`, queued and not yet collected.
        let mut flying: Option<InFlight> = None;
        loop {
            // The staging of the launch before is free once its copy in has ended (long
            // ago: before its kernels, and its copy was queued a staging ago).
            let spare = match &mut flying {
                Some(f) => {
                    self.dev.reach(&f.copied)?;
                    f.staging.take()
                }
                None => self.pipe.staging[1].take(),
            };
            let next = chunks.next();
            let (job, left) = match next {
                Some(c) => (Some((c, spare)), None),
                None => (None, spare),
            };
            let started = Instant::now();
            // This thread queues the staged launch and collects the one before while the
            // pool stages the next: the queuing (a copy, a launch, two signals) is off the
            // staging's path.
            let ((r, collected), job) = rayon::join(
                || {
                    let r = self.submit(slot, cur, answers).and_then(|launched| {
                        match flying.replace(launched) {
                            Some(f) => self.collect(f, answers),
                            None => Ok(Duration::ZERO),
                        }
                    });
                    (r, started.elapsed())
                },
                || {
                    job.map(|(c, old)| {
                        let t = Instant::now();
                        (Staged::prepare(old, b, c), t.elapsed())
                    })
                },
            );
            slot ^= 1;
            let took = r?;
            self.timing.answers += took;
            let Some((prepared, staged_in)) = job else {
                // The last launch.
                let mut last = flying.take().expect("just submitted");
                let hb = last.staging.take();
                let took = self.collect(last, answers)?;
                self.timing.answers += took;
                self.pipe.staging[0] = hb;
                self.pipe.staging[1] = left.or(self.pipe.staging[1].take());
                return Ok(());
            };
            self.timing.stage += staged_in;
            self.timing.waited += started.elapsed().saturating_sub(collected);
            cur = match prepared {
                Prepared::Staged(st) => st,
                Prepared::Short(events, old) => {
                    // Page-locked memory is allocated on this (the driving) thread.
                    drop(old);
                    let t = Instant::now();
                    let bufs = Staging::alloc(&self.dev, cols_of(b, &events).words())?;
                    let st = Staged::fill(bufs, b, events);
                    self.timing.stage += t.elapsed();
                    st
                }
            };
        }
    }

    /// Queues the launch of the events staged in `st` in slot `slot`, nothing waited
    /// for: the columns' copies in on the queue; on the device's stream, once they are
    /// in, [`cells_match`] (its answers into the next area of `answers`).
    fn submit(
        &mut self,
        slot: usize,
        st: Staged,
        answers: &mut CellAnswers,
    ) -> Result<InFlight, EngineError> {
        let t = Instant::now();
        let dev = &self.dev;
        let cols = st.cols;
        let (n, na) = (cols.n, cols.na);
        let pipe = &mut self.pipe;
        let mut fresh = false;
        if pipe.slots[slot].is_none() {
            pipe.slots[slot] = Some(Slot::alloc(dev, self.opts.batch_events)?);
            fresh = true;
        }
        let s = pipe.slots[slot].as_mut().expect("allocated");
        // Grown with slack, so that the launches of a stream fit the first ones' room.
        if s.cols.len() < cols.words() {
            s.cols = dev.alloc(room(cols.words() + cols.words() / 2))?;
            fresh = true;
        }
        // Every event's attributes and their keys, should all be too long to stage.
        let enc = scratch_at(na as u32, na as u32).1;
        if s.enc.len() < enc {
            s.enc = dev.alloc(room(enc + enc / 2))?;
            fresh = true;
        }
        let q = pipe.queue.as_ref().expect("made by the call");
        if fresh {
            // Allocated (and zeroed) in the device stream's order: the copies wait.
            let allocated = dev.signal(None)?;
            dev.wait(Some(q), &allocated)?;
        }
        let hb = st.bufs;
        // SAFETY: `hb` is held in the returned launch until `copied` is reached (the
        // pipeline reaches it before staging into `hb` again or dropping it); the
        // device buffers are this slot's, whose last launch was collected (its kernels
        // ended) before this one was submitted, and the kernels below wait for `copied`.
        unsafe { dev.write_on(q, &mut s.cols, 0, &hb.words, 0..cols.words())? };
        let copied = dev.signal(Some(q))?;
        dev.wait(None, &copied)?;
        let d = pipe.dicts.as_ref().expect("uploaded by the call");
        let clock = self.device_clock;
        let m0 = clock.then(|| dev.mark()).transpose()?;
        let area = answers.next_area(dev, 2 * n + room(4 * n))?;
        launch_match(
            dev,
            cell_tables!(self),
            (s, d),
            &mut answers.areas[area],
            cols,
            (self.counts_launch, self.block_writes),
        )?;
        let m1 = clock.then(|| dev.mark()).transpose()?;
        let done = dev.signal(None)?;
        self.timing.launches += 1;
        self.timing.submit += t.elapsed();
        Ok(InFlight {
            slot,
            events: st.events,
            cols,
            area,
            staging: Some(hb),
            copied,
            done,
            marks: m0.zip(m1).map(|(a, b)| [a, b]),
        })
    }

    /// Waits for the launch `f` and appends its answers to `answers`: its area as the
    /// device wrote it (nothing copied), after growing the area (or the slot's spill)
    /// and matching the launch again when they did not fit; the spilled pairs, if any,
    /// sorted into their events' answers. The time it took.
    fn collect(&mut self, f: InFlight, answers: &mut CellAnswers) -> Result<Duration, EngineError> {
        let t = Instant::now();
        self.dev.reach(&f.done)?;
        let m = f.events.len();
        let (words, spilled) = loop {
            let s = self.pipe.slots[f.slot].as_mut().expect("a launch's slot");
            let (words, spilled) = {
                let c = s.counts_host.as_slice();
                (c[0] as usize, c[1] as usize)
            };
            let area = &mut answers.areas[f.area];
            let (out_fits, spill_fits) =
                (2 * m + words <= area.len(), 2 * spilled <= s.spill.len());
            if out_fits && spill_fits {
                break (words, spilled);
            }
            // More than room: larger areas, and the launch again (its columns are still
            // in the slot; the launch zeroed its counts).
            if !out_fits {
                *area = self.dev.alloc_host(2 * m + room(words))?;
            }
            if !spill_fits {
                s.spill = self.dev.alloc_host(2 * room(spilled))?;
            }
            let d = self.pipe.dicts.as_ref().expect("uploaded by the call");
            let s = self.pipe.slots[f.slot].as_mut().expect("a launch's slot");
            let tables = cell_tables!(self);
            launch_match(
                &self.dev,
                tables,
                (s, d),
                &mut answers.areas[f.area],
                f.cols,
                (self.counts_launch, self.block_writes),
            )?;
            self.timing.launches += 1;
            self.dev.synchronize()?;
        };
        if let Some([m0, m1]) = &f.marks {
            let ms = self.dev.elapsed_ms(m0, m1)?;
            self.timing.device += Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3);
        }
        let first = answers.events;
        answers.launches.push((first, m, f.area));
        if spilled > 0 {
            let s = self.pipe.slots[f.slot].as_ref().expect("a launch's slot");
            let t = Instant::now();
            self.timing.spilled_sort +=
                answers.add_spilled(first, m, self.ids.len(), &s.spill.as_slice()[..2 * spilled]);
            self.timing.spilled += t.elapsed();
        }
        answers.events += m;
        answers.total += words;
        self.timing.pairs += (words + spilled) as u64;
        self.timing.events += m as u64;
        Ok(t.elapsed())
    }

    /// The time split of the batches matched since the last call (see [`CellTiming`]),
    /// and a fresh one.
    pub fn take_timing(&mut self) -> CellTiming {
        std::mem::take(&mut self.timing)
    }

    /// The ids of the subscriptions matching `e`, ascending (a batch of one).
    ///
    /// ```
    /// use ccm::{Constraint, Op, Value};
    /// use clcb::cells::{CellIndex, CellOptions};
    /// use clcb::{Area, Event, Filter, Location, Subscription, SubscriptionId, Subscriptions};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Subscription 7: the keyword "rain" within 10 units of (0, 0).
    /// let rain = Constraint::new("rain", Op::Eq, Value::Str("rain".into()))?;
    /// let subs = Subscriptions::new([Subscription {
    ///     id: SubscriptionId(7),
    ///     filters: vec![Filter::new(vec![rain], Area::circle(0.0, 0.0, 10.0)?)?],
    /// }]);
    /// let dev = gpu_kernels::Device::emulator();
    /// let opts = CellOptions::for_device(&dev);
    /// let mut index = CellIndex::new(dev, &subs, opts)?;
    /// let at = |x, word: &str| -> Result<Event, Box<dyn std::error::Error>> {
    ///     let content = ccm::Event::from_pairs([(word, Value::Str(word.into()))])?;
    ///     Ok(Event { loc: Location::new(x, 0.0)?, content })
    /// };
    /// assert_eq!(index.match_event(&at(3.0, "rain")?)?, vec![SubscriptionId(7)]);
    /// assert_eq!(index.match_event(&at(3.0, "sun")?)?, vec![]); // another keyword
    /// assert_eq!(index.match_event(&at(30.0, "rain")?)?, vec![]); // too far
    /// # Ok(()) }
    /// ```
    pub fn match_event(&mut self, e: &Event) -> Result<Vec<SubscriptionId>, EngineError> {
        let mut v = self.match_batch(std::slice::from_ref(e))?;
        let ids = v.pop().unwrap_or_default();
        Ok(ids.into_iter().map(|i| self.ids[i as usize]).collect())
    }
}

/// Queues [`cells_match`] over the events whose columns (`cols`) slot `s` holds (the
/// batch's dictionaries `d`), its answers into `area`; the counts handed to the host
/// and zeroed for the slot's next launch by its last block, or, with `counts_launch`,
/// by [`cells_counts`] queued after it; with `block_writes`, each block writes its
/// events' starts and lengths at once.
fn launch_match(
    dev: &Device,
    t: CellTables<'_>,
    (s, d): (&mut Slot, &Dicts),
    area: &mut HostBuffer<u32>,
    cols: Cols,
    (counts_launch, block_writes): (bool, bool),
) -> Result<(), EngineError> {
    let m = cols.n;
    let columns = CellBatch {
        attrs: s.cols.dev_ptr_at(cols.attrs().start).cast(),
        starts: s.cols.dev_ptr_at(cols.starts().start),
        xs: s.cols.dev_ptr_at(cols.xs().start).cast(),
        ys: s.cols.dev_ptr_at(cols.ys().start).cast(),
        name_rows: d.name_rows(),
        spans: d.spans(),
        bytes: d.arena(),
        n_events: m as u32,
        n_names: d.n_names,
        n_strs: d.n_strs,
        _pad: 0,
    };
    let batch = CellEvents {
        count: s.counts.dev_ptr_mut(),
        n_events: m as u32,
        cap: (area.len() - 2 * m).min(u32::MAX as usize) as u32,
        spill_cap: (s.spill.len() / 2).min(u32::MAX as usize) as u32,
        hand: u32::from(!counts_launch),
        pack: u32::from(block_writes),
        _pad: 0,
    };
    let lc = LaunchConfig::linear(m as u32 * 32, CELLS_BLOCK).with_shared(cells_shared_bytes());
    cells_match::launch(
        dev,
        lc,
        t,
        columns,
        batch,
        &mut s.enc,
        area,
        &mut s.spill,
        &mut s.counts_host,
    )?;
    if counts_launch {
        cells_counts::launch(
            dev,
            LaunchConfig::linear(1, 32),
            &s.counts,
            &mut s.counts_host,
        )?;
    }
    Ok(())
}

/// Where the columns of a launch of `events` of `b` lie in its run of words.
fn cols_of(b: &EventBatch, events: &Range<usize>) -> Cols {
    Cols {
        n: events.len(),
        na: b.attr_range(events.clone()).len(),
    }
}

/// Elements per part of a parallel copy into staging (64 KiB of attributes: a full
/// launch of Table 2's events, ~65,000 attributes, in 16 parts, one per core of a
/// 16-core host).
const STAGE_PART: usize = 4 << 10;

impl Staged {
    /// `events` of `b` staged into `old` when it holds them; else the events and the
    /// staging too small for them (page-locked memory is allocated by the driving
    /// thread).
    fn prepare(old: Option<Staging>, b: &EventBatch, events: Range<usize>) -> Prepared {
        match old {
            Some(h) if h.words.len() >= cols_of(b, &events).words() => {
                Prepared::Staged(Staged::fill(h, b, events))
            }
            short => Prepared::Short(events, short),
        }
    }

    /// Copies the columns of `events` of `b` as they are (attributes, starts,
    /// locations) into `bufs` (which hold them) where [`Cols`] puts them, on the pool.
    fn fill(mut bufs: Staging, b: &EventBatch, events: Range<usize>) -> Staged {
        let c = b.content();
        let cols = cols_of(b, &events);
        let starts = &c.starts()[events.start..=events.end];
        let attrs: &[BatchAttr] = bytemuck::cast_slice(&c.attrs()[b.attr_range(events.clone())]);
        let xs: &[u32] = bytemuck::cast_slice(&b.xs()[events.clone()]);
        let ys: &[u32] = bytemuck::cast_slice(&b.ys()[events.clone()]);
        let words = &mut bufs.words.as_mut_slice()[..cols.words()];
        let (ha, rest) = words.split_at_mut(cols.attrs().end);
        let ha: &mut [BatchAttr] = bytemuck::cast_slice_mut(ha);
        let (hs, rest) = rest.split_at_mut(cols.starts().len());
        let (hx, hy) = rest.split_at_mut(cols.xs().len());
        rayon::join(
            || par_copy(ha, attrs, STAGE_PART),
            || {
                rayon::join(
                    || hs.copy_from_slice(starts),
                    || rayon::join(|| hx.copy_from_slice(xs), || hy.copy_from_slice(ys)),
                )
            },
        );
        Staged { bufs, events, cols }
    }
}

/// The answers of a batch matched by [`CellIndex::match_event_batch_into`]: event `i`'s
/// subscriptions (dense indices, ascending, once each) are [`CellAnswers::get`]`(i)`.
///
/// They lie where the device wrote them: one page-locked area per launch, each event's
/// run of subscriptions with its start and length (sorted and deduplicated by the
/// device), so that the host does no work per event; an event whose matches spilled
/// (past [`clcb_kernels::cells::CELLS_SORT_WORDS`]) has its answer sorted by the host,
/// kept beside. Matching into the same answers again reuses the areas (each grows only
/// when a launch answers more than it holds).
#[derive(Default)]
pub struct CellAnswers {
    /// Per launch: its first event, its events, its area.
    launches: Vec<(usize, usize, usize)>,
    /// Per launch, the starts, lengths and runs its events' answers
    /// ([`clcb_kernels::cells::CellEvents`]).
    areas: Vec<HostBuffer<u32>>,
    /// Areas holding this batch's answers (the others are kept for reuse).
    used: usize,
    /// The spilled events' answers: (event, first, count) in `spilled_subs`, by event.
    spilled: Vec<(usize, usize, usize)>,
    /// Each launch's spilled pairs' subscriptions grouped by event, each event's run
    /// sorted and deduplicated in place (its duplicates left behind it, unused); words
    /// past `spilled_used` are room kept from batch to batch (never zeroed again).
    spilled_subs: Vec<u32>,
    spilled_used: usize,
    /// Room kept for [`CellAnswers::add_spilled`]'s counters: a row of a launch's events
    /// per part of its pairs, and each event's count.
    spill_rows: Vec<u32>,
    spill_count: Vec<u32>,
    events: usize,
    total: usize,
}

impl CellAnswers {
    /// Answers readied for calls of up to `events` events of an index on `dev` built with
    /// `opts` ([`CellIndex::reserve_answers`]), before the index exists: a program that
    /// opens the GPU on a thread of its own makes them there while the index is built.
    pub fn reserved(
        dev: &Device,
        opts: &CellOptions,
        events: usize,
    ) -> Result<CellAnswers, EngineError> {
        let mut answers = CellAnswers::default();
        answers.reserve(dev, opts, events)?;
        Ok(answers)
    }

    /// The page-locked area of each launch of a call of `events` events under `opts`,
    /// allocated on `dev` where it is missing or too small.
    fn reserve(
        &mut self,
        dev: &Device,
        opts: &CellOptions,
        events: usize,
    ) -> Result<(), EngineError> {
        for (i, l) in launches_of(opts, events).enumerate() {
            let words = 2 * l.len() + room(4 * l.len());
            if self.areas.get(i).is_none_or(|a| a.len() < words) {
                let fresh = dev.alloc_host(room(words))?;
                if i < self.areas.len() {
                    self.areas[i] = fresh;
                } else {
                    self.areas.push(fresh);
                }
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for CellAnswers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CellAnswers")
            .field("events", &self.events)
            .field("total", &self.total)
            .finish()
    }
}

impl CellAnswers {
    /// Number of events answered.
    pub fn len(&self) -> usize {
        self.events
    }

    pub fn is_empty(&self) -> bool {
        self.events == 0
    }

    /// Event `i`'s subscriptions (dense indices), ascending.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn get(&self, i: usize) -> &[u32] {
        assert!(i < self.events, "answer {i} of {}", self.events);
        let k = self.launches.partition_point(|l| l.0 <= i);
        let Some(&(first, m, area)) = k.checked_sub(1).and_then(|k| self.launches.get(k)) else {
            return &[]; // an index of no filter: no launch
        };
        let j = i - first;
        let out = self.areas[area].as_slice();
        let len = out[2 * j + 1];
        if len == SPILLED {
            let s = self.spilled.partition_point(|s| s.0 < i);
            let (_, at, n) = self.spilled[s];
            return &self.spilled_subs[at..at + n];
        }
        let at = 2 * m + out[2 * j] as usize;
        &out[at..at + len as usize]
    }

    /// Subscriptions answered over all events.
    pub fn total(&self) -> usize {
        self.total
    }

    /// One vector per event.
    pub fn to_vecs(&self) -> Vec<Vec<u32>> {
        (0..self.len()).map(|i| self.get(i).to_vec()).collect()
    }

    /// Forgets the answers, keeping the areas for the next batch.
    fn clear(&mut self) {
        self.launches.clear();
        self.used = 0;
        self.spilled.clear();
        self.spilled_used = 0;
        self.events = 0;
        self.total = 0;
    }

    /// The next launch's area, with room for `words` words (a kept one when it is large
    /// enough), and its number.
    fn next_area(&mut self, dev: &Device, words: usize) -> Result<usize, EngineError> {
        let i = self.used;
        if self.areas.get(i).is_none_or(|a| a.len() < words) {
            let fresh = dev.alloc_host(room(words))?;
            if i < self.areas.len() {
                self.areas[i] = fresh;
            } else {
                self.areas.push(fresh);
            }
        }
        self.used += 1;
        Ok(i)
    }

    /// Adds the answers of the spilled events of a launch of `m` events whose first
    /// event is `first`, from its (event, subscription) `pairs`, on all cores: a counting
    /// sort by event (each part of the pairs, one per thread, counts its own per event,
    /// then writes each subscription at its own place in its event's run: no two threads
    /// touch one counter or one word), then each run sorted and deduplicated on its own.
    /// No pair is sorted against another event's, and the runs lie where they were
    /// grouped: nothing is copied again. The counters (a row of `m` per part) are kept
    /// from launch to launch, and the places are summed over them by blocks of events
    /// on all cores. (Sixty-four rows made afresh per launch and summed on one thread
    /// took 600-670 ns an event on Fig. 4a's workload at 1M subscriptions, 75 answers an
    /// event, launches of 32768, against 20 ns for the sorts: H200, 16 host cores,
    /// `cells_split zipf 0.001`. Counters shared by all threads, incremented atomically,
    /// took 4.0-4.2 µs an event with the sorts on Fig. 4d, 1,292 answers an event; the
    /// global sort of (event, subscription) keys before it 8.7-9.9 µs in all.)
    /// The time the sorts took.
    fn add_spilled(&mut self, first: usize, m: usize, subs: usize, pairs: &[u32]) -> Duration {
        /// Fewest pairs a part counts (fewer parts for a small spill).
        const LEAST_PART: usize = 1 << 15;
        /// Events a block of the places' sums covers.
        const BLOCK: usize = 4096;
        let n = pairs.len() / 2;
        if n == 0 || m == 0 {
            return Duration::ZERO;
        }
        let parts = n
            .div_ceil(LEAST_PART)
            .clamp(1, rayon::current_num_threads().max(1));
        let part = n.div_ceil(parts).max(1);
        let mut rows_kept = std::mem::take(&mut self.spill_rows);
        if rows_kept.len() < parts * m {
            rows_kept.resize(parts * m, 0);
        }
        let rows = &mut rows_kept[..parts * m];
        // Per part of the pairs: its pairs per event (the device writes events of the
        // launch only; a pair of another is dropped).
        rows.par_chunks_mut(m)
            .zip(pairs.par_chunks(2 * part))
            .for_each(|(h, ps)| {
                h.fill(0);
                for p in ps.chunks_exact(2) {
                    if let Some(c) = h.get_mut(p[0] as usize) {
                        *c += 1;
                    }
                }
            });
        // Each event's run in the room after the runs so far, and each part's place in
        // it (events in order, then parts), by blocks of events: each block's pairs in
        // all, then its places from its start.
        let blocks = m.div_ceil(BLOCK);
        let sums: Vec<usize> = (0..blocks)
            .into_par_iter()
            .map(|b| {
                let r = b * BLOCK..((b + 1) * BLOCK).min(m);
                rows.chunks(m)
                    .map(|h| h[r.clone()].iter().map(|&c| c as usize).sum::<usize>())
                    .sum()
            })
            .collect();
        let mut starts = Vec::with_capacity(blocks);
        let mut total = 0usize;
        for s in &sums {
            starts.push(total);
            total += s;
        }
        assert!(
            total < u32::MAX as usize,
            "spilled pairs fit their 32-bit places"
        );
        let mut by_block: Vec<Vec<&mut [u32]>> = (0..blocks).map(|_| Vec::new()).collect();
        for h in rows.chunks_mut(m) {
            for (b, piece) in h.chunks_mut(BLOCK).enumerate() {
                by_block[b].push(piece);
            }
        }
        let mut count_kept = std::mem::take(&mut self.spill_count);
        if count_kept.len() < m {
            count_kept.resize(m, 0);
        }
        let count = &mut count_kept[..m];
        by_block
            .into_par_iter()
            .zip(count.par_chunks_mut(BLOCK))
            .zip(starts)
            .for_each(|((mut pieces, counts), mut at)| {
                for (i, c) in counts.iter_mut().enumerate() {
                    let start = at;
                    for piece in pieces.iter_mut() {
                        let here = piece[i];
                        piece[i] = at as u32;
                        at += here as usize;
                    }
                    *c = (at - start) as u32;
                }
            });
        let base = self.spilled_used;
        if self.spilled_subs.len() < base + total {
            self.spilled_subs.resize(base + total, 0);
        }
        let room = &mut self.spilled_subs[base..base + total];
        let out = SharedWords(room.as_mut_ptr());
        rows.par_chunks_mut(m)
            .zip(pairs.par_chunks(2 * part))
            .for_each(|(place, ps)| {
                let out = &out;
                for p in ps.chunks_exact(2) {
                    if let Some(c) = place.get_mut(p[0] as usize) {
                        let i = *c as usize;
                        *c += 1;
                        assert!(i < total);
                        // SAFETY: `i < total`, inside `room`, which nothing else touches
                        // during this loop; this part's places in event `e` are its own
                        // run of its count of pairs there (counted above from the same
                        // pairs), after the earlier parts' runs and before the later ones'.
                        unsafe { out.0.add(i).write(p[1]) };
                    }
                }
            });
        // Each event's run sorted and deduplicated, runs in parallel.
        let sorting = Instant::now();
        let mut runs = Vec::new();
        let mut rest = room;
        for (e, &c) in count.iter().enumerate() {
            let (run, r) = rest.split_at_mut(c as usize);
            rest = r;
            if !run.is_empty() {
                runs.push((e, run));
            }
        }
        let words = subs.div_ceil(64);
        let kept: Vec<(usize, usize)> = runs
            .into_par_iter()
            .map_init(Vec::new, |bits, (e, run)| {
                (e, sort_unique(run, words, bits))
            })
            .collect();
        let sorted = sorting.elapsed();
        let mut at = base;
        for (e, n) in kept {
            self.spilled.push((first + e, at, n));
            self.total += n;
            at += count[e] as usize;
        }
        self.spilled_used = base + total;
        self.spill_rows = rows_kept;
        self.spill_count = count_kept;
        sorted
    }
}

/// Sorts `run` (subscriptions, dense indices) and drops its repeats, leaving them in
/// `run[..n]`; `n`. A run long beside the subscriptions' `words` (of 64 bits) is set as
/// bits of `bits` (a thread's scratch, all zero between calls) and read back in order,
/// a scan of the words instead of a sort (a few thousand subscriptions of 1M: ~16K
/// words against ~30K comparisons); a short run, or one holding an index past them,
/// is sorted.
fn sort_unique(run: &mut [u32], words: usize, bits: &mut Vec<u64>) -> usize {
    if run.len() * 8 >= words && run.iter().all(|&s| (s as usize) < words * 64) {
        if bits.len() < words {
            bits.resize(words, 0);
        }
        for &s in run.iter() {
            bits[s as usize / 64] |= 1 << (s % 64);
        }
        let mut n = 0;
        for (w, word) in bits[..words].iter_mut().enumerate() {
            let mut b = std::mem::take(word);
            while b != 0 {
                run[n] = (w * 64) as u32 + b.trailing_zeros();
                n += 1;
                b &= b - 1;
            }
        }
        return n;
    }
    run.sort_unstable();
    let mut n = 0;
    for i in 0..run.len() {
        if n == 0 || run[i] != run[n - 1] {
            run[n] = run[i];
            n += 1;
        }
    }
    n
}

/// A pointer into a run of words that [`CellAnswers::add_spilled`]'s threads write at
/// distinct places.
struct SharedWords(*mut u32);

// SAFETY: the threads sharing it write distinct words (see `CellAnswers::add_spilled`).
unsafe impl Sync for SharedWords {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Constraint, FilterId, Location, Op, Subscription, Value};

    fn eq(n: &str, v: &str) -> Constraint {
        Constraint::new(n, Op::Eq, Value::Str(v.into())).unwrap()
    }

    fn event(x: f64, y: f64, attrs: &[(&str, Value)]) -> Event {
        Event {
            loc: Location::new(x, y).unwrap(),
            content: ccm::model::Event::from_pairs(
                attrs.iter().map(|(n, v)| (n.to_string(), v.clone())),
            )
            .unwrap(),
        }
    }

    fn sub(id: u32, filters: Vec<(Vec<Constraint>, (f64, f64, f64))>) -> Subscription {
        Subscription {
            id: SubscriptionId(id),
            filters: filters
                .into_iter()
                .map(|(cs, (x, y, r))| {
                    crate::model::Filter::new(cs, Area::circle(x, y, r).unwrap()).unwrap()
                })
                .collect(),
        }
    }

    /// The spatial invariant the kernel relies on: the cell of any point an area
    /// holds (by the model's exact `f32` test) is among the area's cells, for areas
    /// and points inside, on and just off the grid, and past its border.
    #[test]
    fn the_cell_of_every_point_an_area_holds_is_one_of_its_cells() {
        let areas: Vec<Area> = (0..300)
            .map(|i| {
                let x = (i * 37 % 101) as f64 * 0.731 - 5.0;
                let y = (i * 53 % 89) as f64 * 0.417 + 1e3;
                Area::circle(x, y, [0.0, 0.3, 1.0, 2.5][i % 4]).unwrap()
            })
            .collect();
        let geo = geometry(&areas);
        let far = Area::circle(1e6, -1e6, 3.0).unwrap();
        let rects = [
            Area::rect(-3.0, 1000.5, 20.0, 1000.5).unwrap(),
            Area::rect(7.25, 1001.0, 7.25, 1030.0).unwrap(),
            Area::rect(-1e6, -1e6, 1e6, 1e6).unwrap(),
            Area::rect(5e5, 5e5, 5e5 + 2.0, 5e5 + 1.0).unwrap(),
        ];
        for a in areas.iter().chain([&far]).chain(&rects) {
            let cells: Vec<u32> = cells_of(&geo, a).collect();
            let [x0, y0, x1, y1] = a.bounds();
            let (cx, cy) = a.center();
            let r = ((x1 - x0).max(y1 - y0) / 2.0 * 1.01) as f32;
            for k in 0..400 {
                // Points on a fine lattice over the area's box, and its border.
                let (u, v) = (
                    (k % 20) as f32 / 19.0 * 2.0 - 1.0,
                    (k / 20) as f32 / 19.0 * 2.0 - 1.0,
                );
                let p = Location {
                    x: cx as f32 + u * r,
                    y: cy as f32 + v * r,
                };
                if a.contains(p) {
                    assert!(cells.contains(&geo.cell_of(p.x, p.y)), "{p:?} in {a:?}");
                }
            }
        }
    }

    /// A rectangle is filed in the cells of its own extent, not of its enclosing
    /// circle: a thin one in one or two rows of cells.
    #[test]
    fn a_rectangle_is_filed_by_its_extent() {
        let areas: Vec<Area> = (0..5000)
            .map(|i| Area::circle(f64::from(i % 100), f64::from(i / 100) * 2.0, 0.5).unwrap())
            .collect();
        let geo = geometry(&areas);
        let side = 1.0 / geo.inv;
        let thin = Area::rect(10.0, 50.0, 60.0, 50.25).unwrap();
        let n = cells_of(&geo, &thin).count() as f64;
        let extent = (50.0 / side + 2.0) * (0.25 / side + 2.0);
        assert!(n <= extent, "{n} cells, extent {extent}");
        let circle = Area::circle(35.0, 50.125, 25.001).unwrap();
        assert!(cells_of(&geo, &circle).count() as f64 > 10.0 * n);
    }

    /// The build's cells as the sequential build laid them out: each filter pushed into
    /// its cells' lists in filter order, each list sorted by key then filter, the cells
    /// written one after another (the tables, their room and every head).
    fn sequential_cells(
        geo: &CellGeometry,
        key: &[u32],
        proto: &[CellEntry],
        area: &[Area],
    ) -> Mirror {
        let mut per_cell: Vec<Vec<(u32, CellEntry)>> = vec![Vec::new(); (geo.nx * geo.ny) as usize];
        for (f, p) in proto.iter().enumerate() {
            for c in cells_of(geo, &area[f]) {
                per_cell[c as usize].push((key[f], *p));
            }
        }
        for items in &mut per_cell {
            items.sort_unstable_by_key(|&(k, en)| (k, en.filter & !FLAGS));
        }
        let keys_of = |items: &[(u32, CellEntry)]| {
            items
                .iter()
                .enumerate()
                .filter(|&(i, it)| i == 0 || items[i - 1].0 != it.0)
                .count()
        };
        let n = per_cell.len();
        let mut m = Mirror {
            heads: vec![CellHead::default(); n],
            dir_cap: vec![0; n],
            ent_cap: vec![0; n],
            dead: vec![0; n],
            ..Mirror::default()
        };
        let dir_total: usize = per_cell.iter().map(|it| dir_room(keys_of(it))).sum();
        let ent_total: usize = per_cell.iter().map(|it| ent_room(it.len())).sum();
        m.dir = vec![DirSlot::default(); dir_total + dir_total / 8 + 1024];
        m.entries = vec![CellEntry::default(); ent_total + ent_total / 8 + 4096];
        for (c, items) in per_cell.iter().enumerate() {
            let (d, e) = (m.dir_used, m.ent_used);
            m.dir_cap[c] = dir_room(keys_of(items)) as u32;
            m.ent_cap[c] = ent_room(items.len()) as u32;
            m.dir_used += m.dir_cap[c] as usize;
            m.ent_used += m.ent_cap[c] as usize;
            m.fill(c, d, e, items);
        }
        m
    }

    /// Both ways of sorting the triples (by cell first, or whole for a fine grid) give
    /// the triples sorted (each as its key and filter, in its cell's run) and each
    /// cell's run, on grids of a few cells and of many.
    #[test]
    fn the_triples_are_sorted_by_cell_key_and_filter_either_way() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        for (n, n_cells) in [(10_000usize, 7usize), (20_000, 5000), (3, 1), (0, 4)] {
            // Filter `f` in one to three cells, keys repeating.
            let key: Vec<u32> = (0..n).map(|f| (f as u32 * 7919) % 13).collect();
            let cells = |f: usize| {
                let c = (f * 2_654_435_761 % n_cells) as u32;
                (0..(f % 3) as u32 + 1).map(move |k| (c + k * 3) % n_cells as u32)
            };
            let key_of = |f: usize| key[f];
            let mut want: Vec<(u64, u32)> = (0..n)
                .flat_map(|f| {
                    let k = key_of(f);
                    cells(f).map(move |c| (u64::from(c) << 32 | u64::from(k), f as u32))
                })
                .collect();
            want.sort_unstable();
            let want_runs = cell_runs(&want, n_cells);
            let want: Vec<u64> = want
                .iter()
                .map(|&(ck, f)| u64::from(ck as u32) << 32 | u64::from(f))
                .collect();
            for counters in [0, usize::MAX] {
                let got = pool.install(|| sorted_triples_with(&key, n_cells, cells, counters));
                assert_eq!(
                    got,
                    (want.clone(), want_runs.clone()),
                    "{n} filters, {n_cells} cells, {counters}"
                );
            }
        }
    }

    #[test]
    fn the_cells_built_on_all_cores_are_the_sequential_builds() {
        use crate::workload::{Params, Spatial, Workload};
        for spatial in [Spatial::Uniform, Spatial::Zipf { s: 1.0 }] {
            let params = Params {
                subscriptions: 2_000,
                events: 0,
                area_percent: 0.002,
                spatial,
                ..Params::default()
            };
            let subs = Workload::new(params, 11).subscriptions();
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(4)
                .build()
                .unwrap();
            let g = pool.install(|| {
                CellIndex::new(
                    Device::emulator(),
                    &subs,
                    CellOptions::for_device(&Device::emulator()),
                )
            });
            let g = g.unwrap();
            assert!(g.geo.nx * g.geo.ny > 2 * 1024, "several parts of cells");
            assert_eq!(
                g.mirror,
                sequential_cells(&g.geo, &g.key, &g.proto, &g.area)
            );
            // Every other table as one thread builds it (each filter's key, entry and
            // signature, the rows the keys mark, the grid), and the device's copies.
            let one = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap();
            let s = one
                .install(|| {
                    CellIndex::new(
                        Device::emulator(),
                        &subs,
                        CellOptions {
                            batch_events: 64,
                            taper: true,
                        },
                    )
                })
                .unwrap();
            assert_eq!((&g.key, &g.proto, &g.sig), (&s.key, &s.proto, &s.sig));
            assert_eq!((&g.area, &g.row_flags), (&s.area, &s.row_flags));
            assert_eq!((g.geo, g.has_rects), (s.geo, s.has_rects));
            assert_eq!(g.mirror, s.mirror);
            let dev = &g.dev;
            assert_eq!(dev.read(&g.d.heads).unwrap(), g.mirror.heads);
            let (dir, entries) = (dev.read(&g.d.dir).unwrap(), dev.read(&g.d.entries).unwrap());
            assert_eq!(dir[..g.mirror.dir_used], g.mirror.dir[..g.mirror.dir_used]);
            assert_eq!(
                entries[..g.mirror.ent_used],
                g.mirror.entries[..g.mirror.ent_used]
            );
            assert_eq!(dev.read(&g.fcons).unwrap(), g.tables.fcons);
            assert_eq!(dev.read(&g.d_row_flags).unwrap(), g.row_flags);
            // Copied in through a stager's two small page-locked parts: the same tables
            // on the device.
            let dev = Device::emulator();
            let mut stager = dev.stager(2, 4096).unwrap();
            let cols = SubscriptionColumns::from_subscriptions(&subs).unwrap();
            let plan = CellPlan::build(cols).unwrap();
            let t = CellIndex::from_plan_staged(dev, plan, g.opts, Some(&mut stager)).unwrap();
            let on_device = |ix: &CellIndex| {
                let dev = &ix.dev;
                (
                    (dev.read(&ix.d.heads).unwrap(), dev.read(&ix.d.dir).unwrap()),
                    dev.read(&ix.d.entries).unwrap(),
                    (
                        dev.read(&ix.fcons).unwrap(),
                        dev.read(&ix.fcons_start).unwrap(),
                    ),
                    (
                        dev.read(&ix.cstrings).unwrap(),
                        dev.read(&ix.d_row_flags).unwrap(),
                    ),
                )
            };
            assert!(g.mirror.ent_used * 32 > 3 * 4096, "several parts' worth");
            assert!(on_device(&g) == on_device(&t));
        }
    }

    #[test]
    fn keywords_are_looked_up_by_value_and_areas_decide() {
        let subs = Subscriptions::new([
            sub(1, vec![(vec![eq("rain", "rain")], (0.0, 0.0, 1.0))]),
            sub(2, vec![(vec![eq("sun", "sun")], (0.0, 0.0, 1.0))]),
            sub(3, vec![(vec![], (5.0, 5.0, 1.0))]),
            sub(
                4,
                vec![(
                    vec![Constraint::new("t", Op::Gt, Value::Int(3)).unwrap()],
                    (0.5, 0.0, 1.0),
                )],
            ),
        ]);
        let dev = Device::emulator();
        let opts = CellOptions::for_device(&dev);
        let mut g = CellIndex::new(dev, &subs, opts).unwrap();
        let rain = event(0.2, 0.0, &[("rain", Value::Str("rain".into()))]);
        assert_eq!(g.match_event(&rain).unwrap(), vec![SubscriptionId(1)]);
        let warm = event(
            0.2,
            0.0,
            &[
                ("rain", Value::Str("snow".into())),
                ("t", Value::Float(3.5)),
            ],
        );
        assert_eq!(g.match_event(&warm).unwrap(), vec![SubscriptionId(4)]);
        assert_eq!(
            g.match_event(&event(5.5, 5.0, &[])).unwrap(),
            vec![SubscriptionId(3)]
        );
        // The border belongs to the area; just past it does not.
        assert_eq!(
            g.match_event(&event(6.0, 5.0, &[])).unwrap(),
            vec![SubscriptionId(3)]
        );
        assert_eq!(g.match_event(&event(6.01, 5.0, &[])).unwrap(), vec![]);
    }

    /// The device sorts and deduplicates an event's answer in shared memory up to
    /// `CELLS_SORT_WORDS` matches; past that they spill as pairs, which the host sorts.
    /// Here: subscriptions of two filters each, both holding the events (duplicates, in
    /// two key groups: out of order), 200 around one point (400 matches, sorted on the
    /// device) and `CELLS_SORT_WORDS / 2 + 100` around another (past the area: spilled;
    /// an event without the keyword matches one filter of each, sorted on the device),
    /// in one batch with an event of no match, subscriptions listed in reverse id order.
    #[test]
    fn answers_past_the_sort_area_spill_and_stay_sorted_and_unique() {
        use clcb_kernels::cells::CELLS_SORT_WORDS;
        let around = |n: u32, first: u32, x: f64| {
            (0..n).rev().map(move |i| {
                sub(
                    first + i,
                    vec![
                        (vec![eq("k", "v")], (x, 0.0, 1.0)),
                        (vec![], (x + 0.1, 0.0, 1.0)),
                    ],
                )
            })
        };
        let big = CELLS_SORT_WORDS / 2 + 100;
        let subs = Subscriptions::new(around(200, 0, 0.0).chain(around(big, 10_000, 100.0)));
        let dev = Device::emulator();
        // Launches of 1, 2 and 1 events: the spilled events lie in the second and the
        // third launch, their answers found by their place in the whole batch.
        let opts = CellOptions {
            batch_events: 2,
            taper: true,
        };
        let mut g = CellIndex::new(dev, &subs, opts).unwrap();
        let kv = [("k", Value::Str("v".into()))];
        let events = [
            event(0.05, 0.0, &kv),
            event(100.05, 0.0, &kv),
            event(50.0, 0.0, &kv),
            event(100.05, 0.0, &[]),
        ];
        let got = g.match_batch(&events).unwrap();
        let ids = |v: &Vec<u32>| -> Vec<u32> { v.iter().map(|&i| g.ids[i as usize].0).collect() };
        assert!(200 * 2 <= CELLS_SORT_WORDS && big <= CELLS_SORT_WORDS);
        assert_eq!(ids(&got[0]), (0..200).collect::<Vec<_>>());
        assert_eq!(ids(&got[1]), (10_000..10_000 + big).collect::<Vec<_>>());
        assert_eq!(got[2], Vec::<u32>::new());
        assert_eq!(ids(&got[3]), (10_000..10_000 + big).collect::<Vec<_>>());
        // Words of runs (the duplicates dropped) and spilled pairs (duplicates kept).
        assert_eq!(g.take_timing().pairs, 200 + 2 * big as u64 + big as u64);
    }

    /// A spilled event's subscriptions come out ascending and once each, by the bits
    /// (a run long beside the subscriptions) or by a sort (a short run, or an index
    /// past them), the scratch left zero.
    #[test]
    fn sort_unique_sorts_and_drops_repeats_either_way() {
        let mut bits = Vec::new();
        for (len, subs) in [
            (0usize, 10usize),
            (1, 1),
            (50, 64),
            (300, 1000),
            (30, 100_000),
            (2000, 5000),
        ] {
            let run: Vec<u32> = (0..len).map(|i| ((i * 7919 + len) % subs) as u32).collect();
            let mut want = run.clone();
            want.sort_unstable();
            want.dedup();
            for words in [subs.div_ceil(64), 1] {
                let mut got = run.clone();
                let n = sort_unique(&mut got, words, &mut bits);
                assert_eq!(&got[..n], want.as_slice(), "{len} of {subs}, {words} words");
                assert!(bits.iter().all(|&b| b == 0));
            }
        }
    }

    /// Several events of one launch spill, between events that do not: each gets its
    /// own subscriptions, sorted and once each; answering again into the same answers
    /// (their room kept, not cleared) gives the same.
    #[test]
    fn spilled_pairs_of_many_parts_and_blocks_group_into_each_events_sorted_run() {
        // Enough pairs for several parts (one per thread of an 8-thread pool) and enough
        // events for several blocks of the places' sums; repeats, events outside the
        // launch (dropped), and a second, smaller launch reusing the counters' room.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(8)
            .build()
            .unwrap();
        let mut answers = CellAnswers::default();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u32| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as u32
        };
        let subs = 5000;
        let mut first = 0;
        for (m, n) in [(10_000usize, 200_000usize), (5000, 70_000)] {
            let mut pairs = Vec::with_capacity(2 * n);
            let mut want = vec![Vec::new(); m];
            for _ in 0..n {
                // Events past the launch's `m` are another launch's: dropped.
                let (e, sub) = (next(m as u32 + 50), next(subs as u32));
                pairs.extend([e, sub]);
                if let Some(w) = want.get_mut(e as usize) {
                    w.push(sub);
                }
            }
            for w in &mut want {
                w.sort_unstable();
                w.dedup();
            }
            let before = answers.spilled.len();
            pool.install(|| answers.add_spilled(first, m, subs, &pairs));
            let got = &answers.spilled[before..];
            let runs: Vec<&Vec<u32>> = want.iter().filter(|w| !w.is_empty()).collect();
            assert_eq!(got.len(), runs.len(), "one run per event with pairs");
            for (&(e, at, len), w) in got.iter().zip(runs) {
                assert_eq!(&answers.spilled_subs[at..at + len], &w[..], "event {e}");
                assert_eq!(&want[e - first], w, "runs in event order");
            }
            first += m;
        }
    }

    #[test]
    fn several_spilled_events_of_a_launch_each_get_their_own_answers() {
        use clcb_kernels::cells::CELLS_SORT_WORDS;
        let around = |n: u32, first: u32, x: f64| {
            (0..n).map(move |i| {
                sub(
                    first + i,
                    vec![
                        (vec![eq("k", "v")], (x, 0.0, 1.0)),
                        (vec![], (x + 0.1, 0.0, 1.0)),
                    ],
                )
            })
        };
        let (a, b) = (CELLS_SORT_WORDS / 2 + 30, CELLS_SORT_WORDS / 2 + 70);
        let subs = Subscriptions::new(
            around(a, 0, 0.0)
                .chain(around(b, 10_000, 100.0))
                .chain(around(3, 50_000, 50.0)),
        );
        let mut g = CellIndex::new(
            Device::emulator(),
            &subs,
            CellOptions {
                batch_events: 8,
                taper: true,
            },
        )
        .unwrap();
        let kv = [("k", Value::Str("v".into()))];
        let (at_a, at_b, small) = (
            event(0.05, 0.0, &kv),
            event(100.05, 0.0, &kv),
            event(50.0, 0.0, &kv),
        );
        let want_a: Vec<u32> = (0..a).collect();
        let want_b: Vec<u32> = (10_000..10_000 + b).collect();
        let want_small: Vec<u32> = (50_000..50_003).collect();
        let mut answers = CellAnswers::default();
        for events in [
            vec![
                at_a.clone(),
                small.clone(),
                at_b.clone(),
                at_a.clone(),
                at_b.clone(),
                small.clone(),
            ],
            vec![at_b.clone(), at_b.clone(), small.clone(), at_a.clone()],
        ] {
            g.match_batch_into(&events, &mut answers).unwrap();
            assert_eq!(answers.len(), events.len());
            for (i, e) in events.iter().enumerate() {
                let ids: Vec<u32> = answers
                    .get(i)
                    .iter()
                    .map(|&s| g.ids[s as usize].0)
                    .collect();
                let want = match e.loc.x as i32 {
                    0 => &want_a,
                    100 => &want_b,
                    _ => &want_small,
                };
                assert_eq!(&ids, want, "event {i}");
            }
        }
    }

    /// A call whose batch has the last call's dictionaries uploads none (and answers
    /// by them) unless they were forgotten; a batch whose ids mean other names and
    /// strings replaces them.
    #[test]
    fn the_last_calls_dictionaries_serve_a_batch_with_the_same_ones_only() {
        let subs = Subscriptions::new([
            sub(1, vec![(vec![eq("rain", "rain")], (0.0, 0.0, 1.0))]),
            sub(2, vec![(vec![eq("sun", "sun")], (0.0, 0.0, 1.0))]),
        ]);
        let dev = Device::emulator();
        let opts = CellOptions::for_device(&dev);
        let mut g = CellIndex::new(dev, &subs, opts).unwrap();
        let at = |x: f64, w: &str| event(x, 0.0, &[(w, Value::Str(w.into()))]);
        let batch = |es: &[Event]| EventBatch::from_events(es);
        // Names and strings numbered rain 0, sun 1.
        let a = batch(&[at(0.2, "rain"), at(0.2, "sun")]);
        assert_eq!(g.match_event_batch(&a).unwrap(), vec![vec![0], vec![1]]);
        let same = batch(&[at(0.2, "rain"), at(5.0, "sun")]);
        let key_is_of = |g: &CellIndex, b: &EventBatch| {
            let key = g.pipe.dicts.as_ref().unwrap().key.as_ref();
            key.is_some_and(|k| k.is_of(b))
        };
        assert!(key_is_of(&g, &same));
        assert_eq!(g.match_event_batch(&same).unwrap(), vec![vec![0], vec![]]);
        // Forgotten, they are translated again at the next call, whatever its batch.
        g.forget_dictionaries();
        assert!(!key_is_of(&g, &same));
        assert_eq!(g.match_event_batch(&same).unwrap(), vec![vec![0], vec![]]);
        assert!(key_is_of(&g, &same));
        // Numbered sun 0, rain 1: read with the last dictionaries, the ids would swap.
        let other = batch(&[at(0.2, "sun"), at(0.2, "rain")]);
        assert!(!key_is_of(&g, &other));
        assert_eq!(g.match_event_batch(&other).unwrap(), vec![vec![1], vec![0]]);
    }

    #[test]
    fn the_time_split_counts_each_batchs_events_launches_and_pairs_then_starts_afresh() {
        let subs = Subscriptions::new([
            sub(1, vec![(vec![eq("rain", "rain")], (0.0, 0.0, 1.0))]),
            sub(2, vec![(vec![], (0.0, 0.0, 1.0))]),
        ]);
        let dev = Device::emulator();
        let opts = CellOptions {
            batch_events: 2,
            taper: false,
        };
        let mut g = CellIndex::new(dev, &subs, opts).unwrap();
        assert_eq!(g.take_timing(), CellTiming::default());
        let rain = event(0.2, 0.0, &[("rain", Value::Str("rain".into()))]);
        let far = event(9.0, 9.0, &[("rain", Value::Str("rain".into()))]);
        let got = g.match_batch(&[rain.clone(), far, rain]).unwrap();
        assert_eq!(got.iter().map(Vec::len).collect::<Vec<_>>(), [2, 0, 2]);
        let t = g.take_timing();
        // Three events in launches of two: two launches, the four pairs of the two
        // events in the area.
        assert_eq!((t.events, t.launches, t.pairs), (3, 2, 4));
        assert_eq!(g.take_timing(), CellTiming::default());
    }

    #[test]
    fn moves_go_anywhere_even_off_the_grid_and_cells_are_laid_out_again() {
        let filters: Vec<_> = (0..200)
            .map(|i| (vec![eq("k", "v")], (i as f64 % 20.0, (i / 20) as f64, 0.5)))
            .collect();
        let subs = Subscriptions::new([sub(7, filters)]);
        let dev = Device::emulator();
        let opts = CellOptions::for_device(&dev);
        let mut g = CellIndex::new(dev, &subs, opts).unwrap();
        let far = |i: u32| AreaUpdate {
            filter: FilterId(i),
            area: Area::circle(1e5 + i as f64, -3e4, 0.5).unwrap(),
        };
        let kv = [("k", Value::Str("v".into()))];
        let hit = event(1e5 + 150.0, -3e4, &kv);
        let home = event(3.0, 4.0, &kv);
        assert_eq!(
            g.match_batch(&[hit.clone(), home.clone()]).unwrap(),
            vec![vec![], vec![0]]
        );
        for i in 0..200 {
            g.move_area(&far(i)).unwrap();
        }
        assert_eq!(
            g.match_batch(&[hit.clone(), home.clone()]).unwrap(),
            vec![vec![0], vec![]]
        );
        g.move_area(&AreaUpdate {
            filter: FilterId(150),
            area: Area::circle(3.0, 4.0, 0.5).unwrap(),
        })
        .unwrap();
        assert_eq!(g.match_batch(&[hit, home]).unwrap(), vec![vec![], vec![0]]);
        assert!(g.move_area(&far(200)).is_err());
    }
}
