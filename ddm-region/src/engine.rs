//! The engines: one host driver per approach, written once against [`Device`], so that the
//! same code runs the kernels on the GPU (`gpu-*`) and on the emulator (`emu-*`).
//!
//! - [`Approach::Region`]: §III.B, Phases 1–4.
//! - [`Approach::Grid`]: §III.C, Phases 1–5.
//! - [`Approach::Sweep`]: beyond the paper, a GPU sort-based sweep for a million regions.
//! - [`Approach::Bisect`]: beyond the paper, counting whose cost does not grow with the
//!   pairs: in one dimension, two binary searches per region over the sorted end points
//!   (after Marzolla, Birolo, D'Angelo & Fariselli 2024); in several, the sweep on the
//!   dimension a sample says has the fewest candidates; for small sets (the paper's
//!   32768 regions a step), sorted tiles of publications swept in shared memory, two
//!   launches and one wait where the sorts and sweep take about twenty launches and
//!   one wait (a count) or more (the pairs).
//!
//! The region and grid engines keep the overlap information on the device between steps
//! and update it incrementally: Phase 2 clears the old overlaps of the updated regions,
//! Phase 3 finds their new ones, and Phase 4 copies back the updated overlap
//! information: every overlapping pair that involves an updated region. The sweep
//! engine keeps only the region table and recomputes from scratch, counting or
//! enumerating.
//!
//! # Choices where the paper is silent
//!
//! Each is explained where it is made:
//! - coordinates are `u32`, ranges half-open (HLA 1516); [`model`](crate::model);
//! - the overlap information is a pair of bit matrices (publication rows, subscription
//!   rows), so that Phase 2 can clear a region's old overlaps and Phase 3 set new ones
//!   with atomic OR/AND; Phase 4 copies back the pairs that involve an updated region
//!   (the "updated overlapped information"), collected in a list with an atomic cursor;
//!   [`layout`](crate::layout), `ddm_region_kernels`;
//! - a pair of two updated regions is found once: by the publication's thread
//!   (subscriptions skip publications updated in the same step); in the grid, a pair is
//!   compared only in the cell holding the lower corner of its intersection;
//! - Phase 1 stages the updated regions (de-duplicated, publications first) straight
//!   into page-locked host memory (two passes, on all host threads from 8192 updates;
//!   the host's part of a step is most of its time at 32768 regions: the example
//!   `phase1_staging` times it), then copies them to the device with two DMA copies,
//!   one (the ranges) for a dense batch (or, [`Phase1::Mapped`], lets the first
//!   kernels read them over the bus); Phase 4 hands back one status word pair (step
//!   counters, overlap count) and the new pairs;
//! - Phase 2 runs one warp (not one thread) per updated region, for coalesced row sweeps,
//!   and skips a region whose row has held no bit since its last clear (a per-region
//!   `dirty` flag that Phase 3 sets with the bit): at RS 10 most rows are empty, and the
//!   sweep of 32768 rows of 16384 bits was a third of a step's kernel time;
//! - Phase 4 is one kernel (`publish_step`) that writes the status pair and the step's
//!   pairs straight into mapped page-locked host memory, then one wait for the stream;
//!   the host reads the answer there (it was two device-to-host copies, each with its
//!   own wait: two round trips per step);
//! - Phase 3 of the region approach may, as an option ([`Slices`]; default off, the
//!   paper's one thread per updated region), cut the candidates into slices over block
//!   rows (same comparisons, more blocks) so that a few thousand updated regions fill a GPU;
//! - grid cell lists have a capacity; an overflowing list is detected, the lists grown
//!   and rebuilt, and the step's matching redone;
//! - scenario details (crowd spread, moves at the border): [`workload`](crate::workload).
//!
//! # What one step costs
//!
//! A step of the grid engine (every region moves, the paper's §IV; 32768 regions),
//! as the host sees it ([`Engine::last_step_times`] splits it):
//!
//! | | before | now |
//! | --- | --- | --- |
//! | host staging | two or three passes on rayon's pool (keys in `last`, then writes) | an ordered batch (every kind by index, no removal: the scenarios' and [`UpdateBatch::everything`]'s): one pass, no keys, no record when dense, the ranges by streaming stores, on pool threads gathered before the previous step's wait ([`Engine::set_stage_crew`]); other batches as before |
//! | copies in | 2 (records, ranges; page-locked): 24 bytes per region in 2-D | 1 for a dense batch (every region, in order: the ranges alone, 16 bytes per region; the kernels make the records); 2 otherwise |
//! | kernels | 6 (clear, unmap, compact, commit, map, match) | 5: `clear_and_unmap`, `commit_and_compact`, map, match, `publish_step` ([`Engine::set_fused`]) |
//! | copies out | 2 (status, pairs), each followed by a wait | 0: `publish_step` writes into mapped host memory |
//! | waits | 1 at the start (idle: nothing queued) + 2 | 1 at the start (idle) + 1 |
//! | answer handed over | one copy into a `Vec` | the same, on all host threads from 65536 pairs (~10^5 at RS 100) |
//! | allocations | the answer's `Vec` only (the pair list and cell lists grow only on overflow) | the same |
//!
//! The region engine's step is the same but for the grid's kernels (clear, commit,
//! match twice, publish).
//!
//! The sorting engines sort both kinds at once (the bisect count: a kind's low and high
//! end points), one radix sort over two lists in one buffer, three launches a pass
//! (`radix`'s docs): the tile ranked per warp, staged in shared memory and written run by
//! run, and both kinds in four passes of three launches, where eight passes of five
//! launches (a block-wide ranking with four barriers per 256 elements, every lane's store
//! scattered) took most of a count (`count_split`; the radix-sort note of
//! results/notes.toml has the figures).
//!
//! The sorting engines' sweep reads each candidate's ranges from a copy of the kind's
//! ranges in sorted order (one gather kernel per kind after its sort), so that a task's
//! consecutive candidates are consecutive in memory: the walk read a candidate's live
//! flag and ranges from the region table by index (two scattered reads, ~64 bytes of
//! memory traffic per candidate; at alpha 100 and 1M regions, ~5 * 10^7 candidates).

use crate::layout::{stage_into, stream_copy, GridSpec, Hands, StageCounts};
use crate::model::{Kind, ModelError, Pair, Range, RegionSet, UpdateBatch};
use ddm_region_kernels::count::{
    bisect_count, dim_candidates, end_keys, EMPTY_FLAG, MAX_ESTIMATED_DIMS, SAMPLE,
};
use ddm_region_kernels::grid::{
    clear_and_unmap, commit_and_compact, compact_cells, map_regions, match_grid, unmap_regions,
    GridTables,
};
use ddm_region_kernels::phases::{clear_overlaps, commit_updates, install_all, publish_step};
use ddm_region_kernels::radix::{
    offsets_rows_per_block, radix_hist, radix_offsets, radix_scatter, RADIX_BLOCK, RADIX_DIGITS,
    RADIX_HIST_SHARED, RADIX_SCATTER_SHARED, RADIX_TILE,
};
use ddm_region_kernels::region::match_region;
use ddm_region_kernels::scan::{scan_down, scan_reduce, scan_top, SCAN_BLOCK, SCAN_TILE};
use ddm_region_kernels::sweep::{
    sweep_count, sweep_count_strided, sweep_emit, sweep_gather, sweep_keys, sweep_plan,
    sweep_tasks, SweepWork, MAX_CHUNKS_LOG2,
};
use ddm_region_kernels::tiled::{
    sort_tiles, subs_per_block, tiled_match, tiled_shared_bytes, unpack_narrow, SortedTiles,
    EMIT_COUNT, EMIT_NARROW, EMIT_WIDE, SORT_TILES_SHARED, TILE, TILED_MAX_DIMS,
};
use ddm_region_kernels::{DdmTables, StepCounters, UpdatedRegion};
use gpu_kernels::crew::Crew;
use gpu_kernels::{Buffer, Device, GpuError, HostBuffer, In, LaunchConfig};
use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

/// Threads per block for the paper's kernels (§IV: "each CUDA thread block contains 256
/// CUDA threads"); also `M`, the tile of Fig. 2.
pub const BLOCK: u32 = 256;

/// Most bytes the two overlap bit matrices of the region and grid engines may take.
pub const MAX_MATRIX_BYTES: u64 = 8 << 30;

/// Chunks [`Engine::load`] cuts a region set into, so that filling the page-locked
/// staging overlaps the copies to the device.
pub const LOAD_CHUNKS: usize = 8;

/// Fewest ranges one host task fills in [`Engine::load`] (smaller tasks cost more to
/// hand out than to copy).
const MIN_FILL_TASK: usize = 2048;

/// Most threads of the kernel that writes a step's pairs into host memory (Phase 4 of
/// §III.B): 64 blocks of [`BLOCK`], each thread copying every 16384th pair.
pub const PUBLISH_THREADS: u32 = 64 * BLOCK;

/// Threads per SM of the strided count ([`sweep_count_strided`]): a full SM's worth,
/// each walking every `G`-th chunk.
pub const STRIDED_THREADS_PER_SM: u32 = 2048;

/// Fewest candidates of a chunk when counting (more threads where candidates are few,
/// as at alpha 1) and when enumerating (whose per-chunk counts are then 4x fewer).
const COUNT_MIN_CHUNK: u64 = 8;
const EMIT_MIN_CHUNK: u64 = 32;

/// What a recorded count ([`Engine::sweep_count`]) was recorded for: the sizes and
/// arguments of its launches (the buffers they read and write are the engine's, allocated
/// once, but for the scan's scratch, which enumeration may grow).
#[derive(Clone, Copy, PartialEq, Eq)]
struct CountKey {
    dim: u32,
    passes: u32,
    n_pub: u32,
    n_sub: u32,
    table: u64,
    sums: u64,
}

/// A count's launches recorded on a GPU, and the work description they read.
struct CountRecording {
    key: CountKey,
    work: SweepWork,
    recording: gpu_kernels::Recording,
}

/// The work description of `tasks` tasks sorted into `s`, the sort's values in `vals`
/// (its totals left 0: [`sweep_plan`] or the host fills them).
fn work_of(s: &SweepState, vals: &Buffer<u32>, tasks: u32) -> SweepWork {
    SweepWork {
        pub_vals: addr(vals),
        sub_vals: addr(vals) + (s.sort.b_at * std::mem::size_of::<u32>()) as u64,
        pub_sorted: addr(&s.pub_sorted),
        sub_sorted: addr(&s.sub_sorted),
        begin: addr(&s.begin),
        offsets: addr(&s.offsets),
        total: 0,
        chunk: 0,
        n_tasks: tasks,
        _pad: 0,
    }
}

/// Pairs copied back per window when the sweep engine enumerates.
pub const SWEEP_WINDOW: u64 = 1 << 25;

/// Most pairs `n_pub * n_sub` for which the bisect engine matches in sorted tiles
/// ([`sort_tiles`], [`tiled_match`]: two launches and one wait) instead of sorting all
/// regions on the device and sweeping (about twenty launches and one wait);
/// [`Engine::set_tiled_max`] changes it. 2^28 at the paper's 32768 regions a step.
/// Measured with `count_split` (2-D scale-up, when the sorted count still waited three
/// times): a count of 65536 regions (2^30 pairs) took less than half as long in tiles as
/// sorted and swept, and at 131072 regions the sweep took about what the tiles' work
/// (four times 65536's) would (the tiled-steps note of results/notes.toml).
pub const TILED_MAX_PAIRS: u64 = 1 << 31;

/// Blocks [`tiled_match`] aims at (publication slices times subscription rows): twelve
/// per SM of a 132-SM GPU, when the publications make that many slices of a whole
/// tile each.
pub const TILED_FILL: u32 = 1584;

/// Words of the bisect engine's first [`tiled_match`] landing place (room for 2^16
/// pairs, or 2^17 narrow ones; grown when a step finds more).
const TILED_FIRST_WORDS: usize = 1 << 17;

/// The most publications and subscriptions whose pairs [`tiled_match`] can hand over as
/// one word each ([`pack_narrow`](ddm_region_kernels::tiled::pack_narrow)).
pub const NARROW_MAX: u32 = 1 << 16;

/// Errors of the engines.
#[derive(Debug, thiserror::Error)]
pub enum DdmError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("{kind} region {index} is past the engine's capacity of {capacity}")]
    Capacity {
        kind: &'static str,
        index: u32,
        capacity: u32,
    },
    #[error("malformed update batch: {0}")]
    BadBatch(String),
    #[error("grid: {0}")]
    Grid(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("the {0} engine keeps every pair: only the sort and bisect engines restrict them to those whose overlap begins at a coordinate")]
    NoRestriction(&'static str),
}

/// Which approach an engine runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approach {
    /// §III.B: a thread per updated region against all regions, in shared-memory tiles.
    Region,
    /// §III.C: per-cell publication and subscription lists; cell size is a parameter.
    Grid(GridSpec),
    /// Beyond the paper: sort the lower bounds of dimension 0 on the device, sweep.
    Sweep,
    /// Beyond the paper: the sweep engine's tables, but a count that does not grow with
    /// the pairs where it need not. In one dimension, publication `p`'s count is
    /// `#{s.lo < p.hi} - #{s.hi <= p.lo}`, two binary searches over the subscriptions'
    /// sorted end points ([`ddm_region_kernels::count`]); a live empty range in the
    /// counted dimension (where that identity fails) sends the count to the sweep. In
    /// several dimensions, counting and enumerating sweep the dimension where a sample
    /// of `SAMPLE x SAMPLE` pairs finds the fewest overlaps (the sweep's candidates).
    /// Small sets (`n_pub * n_sub` up to [`TILED_MAX_PAIRS`], at most four dimensions,
    /// as the paper's 32768 regions a step) skip the sorts of all regions: the
    /// publications are sorted tile by tile and every subscription swept against every
    /// tile in shared memory ([`ddm_region_kernels::tiled`]), two launches and one wait.
    Bisect,
}

impl Approach {
    /// `region`, `grid` or `sweep`, as in the engine names `gpu-region`, `emu-grid`...
    pub fn name(&self) -> &'static str {
        match self {
            Approach::Region => "region",
            Approach::Grid(_) => "grid",
            Approach::Sweep => "sweep",
            Approach::Bisect => "bisect",
        }
    }

    /// True for the engines that sort the regions and keep no overlap information
    /// (sweep, bisect).
    pub fn sorts(&self) -> bool {
        matches!(self, Approach::Sweep | Approach::Bisect)
    }
}

/// How Phase 1 ("the information of updated regions is copied to the global memory of
/// the device", §III.B) moves the host-staged records and ranges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Phase1 {
    /// The paper's: copied (DMA from page-locked memory) into device memory, where
    /// Phases 2 and 3 read them.
    #[default]
    Copy,
    /// No copy: the first kernels (Phase 2, the grid's unmapping, the commit) read them
    /// from mapped page-locked host memory over the bus.
    Mapped,
}

/// How Phase 3 of the region approach (§III.B, Fig. 2) lays out its blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Slices {
    /// The paper's: one thread per updated region, which compares it with every
    /// candidate, tile by tile; `ceil(updated / M)` blocks.
    #[default]
    Paper,
    /// Beyond the paper: the candidates' tiles are cut into slices, one per block row,
    /// as many as make about [`FILL_BLOCKS`] blocks (at most one slice per tile); each
    /// updated region is then compared by one thread per slice. The same comparisons
    /// and results; a step of a few thousand updated regions (64 blocks of 256 at 32768
    /// regions) no longer leaves most of a large GPU idle.
    Fill,
    /// Exactly this many slices (at least 1; slices past the last tile are empty).
    Exactly(u32),
}

/// The blocks [`Slices::Fill`] aims at: two waves of 8 blocks of 256 threads on 128 SMs.
pub const FILL_BLOCKS: u32 = 2048;

/// What Phase 4 copied back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepReport {
    /// Overlapping pairs in all after the step.
    pub overlaps: u64,
    /// The overlapping pairs that involve an updated region, when asked for, unordered.
    pub pairs: Option<Vec<Pair>>,
}

/// Where the host's time of the last [`Engine::step`] went (host clock, microseconds),
/// so that a GPU run can tell the host's part of a step from the device's.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepTimes {
    /// Phase 1 on the host: the batch ordered into page-locked staging ([`stage_into`]).
    pub stage_us: f64,
    /// From the staging to the wait: the copies and kernels enqueued (the GPU runs them
    /// meanwhile; the emulator runs them here).
    pub enqueue_us: f64,
    /// Waiting for the device: the step's one synchronisation (and any redone matching).
    pub wait_us: f64,
    /// The whole step, the answer's copy into a `Vec` included.
    pub total_us: f64,
}

/// Where the host's time of the last whole-set [`Engine::load`] on the fast path went
/// (host clock, microseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoadTimes {
    /// Filling the page-locked staging, chunk by chunk (all host threads), summed.
    pub fill_us: f64,
    /// Waiting, after the last fill and the install kernel's launch, for the copies
    /// still under way: near 0 when the fills are slower than the bus.
    pub drain_us: f64,
    /// The whole load.
    pub total_us: f64,
    /// Bytes copied to the device.
    pub bytes: u64,
}

struct GridState {
    spec: GridSpec,
    host: GridTables,
    table: Buffer<GridTables>,
    slots: Buffer<u32>,
    _lens: Buffer<u32>,
}

/// Two lists of `(key, value)` pairs in one buffer, list A at 0 and list B at `b_at`, and
/// the ping-pong pair of their [`radix_sort`]; after [`SortLists::sort`] both are sorted
/// in `keys`, `vals`.
struct SortLists {
    keys: Buffer<u32>,
    vals: Buffer<u32>,
    tmp_keys: Buffer<u32>,
    tmp_vals: Buffer<u32>,
    b_at: usize,
}

impl SortLists {
    /// Room for lists of `n_a` and `n_b` pairs (B starting at the tile after A's last).
    fn new(dev: &Device, n_a: usize, n_b: usize) -> Result<Self, GpuError> {
        let tile = RADIX_TILE as usize;
        let b_at = n_a.div_ceil(tile) * tile;
        let n = (b_at + n_b).max(1);
        Ok(SortLists {
            keys: dev.alloc(n)?,
            vals: dev.alloc(n)?,
            tmp_keys: dev.alloc(n)?,
            tmp_vals: dev.alloc(n)?,
            b_at,
        })
    }

    /// Sorts both lists (`[n_a, n_b]` pairs) by their keys' low `8 * passes` bits; the
    /// result is in `keys`, `vals` (the buffers trade places after an odd pass count).
    fn sort(
        &mut self,
        dev: &Device,
        lists: [u32; 2],
        passes: u32,
        scratch: [&Buffer<u32>; 2],
    ) -> Result<(), GpuError> {
        radix_sort(
            dev,
            [&self.keys, &self.vals, &self.tmp_keys, &self.tmp_vals],
            lists,
            passes,
            scratch,
        )?;
        if passes % 2 == 1 {
            std::mem::swap(&mut self.keys, &mut self.tmp_keys);
            std::mem::swap(&mut self.vals, &mut self.tmp_vals);
        }
        Ok(())
    }
}

struct SweepState {
    /// Both kinds' sort keys and values (region indexes), sorted together: publications
    /// (list A), then subscriptions.
    sort: SortLists,
    /// Each kind's ranges in sorted order (`sweep_gather`), for the candidate walk.
    pub_sorted: Buffer<Range>,
    sub_sorted: Buffer<Range>,
    /// The radix sort's digit-major tile counts and per-digit totals.
    hist: Buffer<u32>,
    digit_total: Buffer<u32>,
    sums: Buffer<u64>,
    total: Buffer<u64>,
    begin: Buffer<u32>,
    offsets: Buffer<u64>,
    work: Buffer<SweepWork>,
    /// The addresses and task count last written to `work` (its total and chunk
    /// zeroed): a count writes them only when they changed.
    work_written: Option<SweepWork>,
    /// The count's launches, recorded on a GPU for the sizes of `key`, with the work
    /// description they read ([`Engine::sweep_count`]).
    count_recording: Option<CountRecording>,
    per_chunk: Buffer<u64>,
    /// The enumeration window (grown on demand, kept across calls) and its landing place
    /// in page-locked host memory.
    out: Buffer<Pair>,
    out_host: HostBuffer<Pair>,
    /// [`tiled_match`]'s landing place for the pairs, in words (mapped page-locked host
    /// memory, written by the kernel: no copy back), grown on demand.
    tiled_out: HostBuffer<u32>,
    /// [`sort_tiles`]'s output, made on the first matching in sorted tiles.
    tiles: Option<TilesState>,
    /// The bisect count's subscription end points (keys, values) and their sort's
    /// ping-pong pair; `[count, empty flag]`; the per-dimension sample overlaps.
    ends: Option<EndsState>,
}

/// Pairs as they land in host memory: [`Pair`]s, or one word each ([`pack_narrow`](ddm_region_kernels::tiled::pack_narrow)).
#[derive(Clone, Copy)]
enum Landed<'a> {
    Wide(&'a [Pair]),
    Narrow(&'a [u32]),
}

impl Landed<'_> {
    fn len(&self) -> usize {
        match self {
            Landed::Wide(p) => p.len(),
            Landed::Narrow(w) => w.len(),
        }
    }

    /// Pairs `from..from + dst.len()`, as [`Pair`]s, into `dst`.
    #[inline]
    fn write_to(&self, from: usize, dst: &mut [MaybeUninit<Pair>]) {
        match self {
            Landed::Wide(p) => {
                for (d, s) in dst.iter_mut().zip(&p[from..]) {
                    d.write(*s);
                }
            }
            Landed::Narrow(w) => {
                for (d, s) in dst.iter_mut().zip(&w[from..]) {
                    d.write(unpack_narrow(*s));
                }
            }
        }
    }
}

/// Where the engine's pairs go, batch by batch, as they landed.
type LandedSink<'a> = dyn FnMut(Landed) + 'a;

/// The publications sorted tile by tile ([`sort_tiles`]) and where they are.
struct TilesState {
    table: Buffer<SortedTiles>,
    _keys: Buffer<u32>,
    _ids: Buffer<u32>,
    _ranges: Buffer<Range>,
    _widths: Buffer<u32>,
}

struct EndsState {
    /// Low end points (list A), then high ones, sorted together.
    sort: SortLists,
    tally: Buffer<u64>,
    per_dim: Buffer<u64>,
}

/// A DDM region-matching engine on one device: the region table and, for the paper's
/// approaches, the overlap information, resident in device memory (Fig. 1).
pub struct Engine<'d> {
    dev: &'d Device,
    approach: Approach,
    dims: usize,
    n_pub: u32,
    n_sub: u32,
    host: DdmTables,
    table: Buffer<DdmTables>,
    _bounds: Buffer<Range>,
    _alive: Buffer<u32>,
    _epoch: Buffer<u32>,
    pub_rows: Buffer<u32>,
    _sub_rows: Buffer<u32>,
    _dirty: Buffer<u32>,
    pairs: Buffer<Pair>,
    /// Phase 4's landing places in page-locked host memory (DMA, no driver bounce
    /// buffer): the status pair and up to `pair_cap` pairs.
    status_host: HostBuffer<u64>,
    pairs_host: HostBuffer<Pair>,
    /// `[StepCounters as u64, overlap count]`: Phase 4 reads both with one copy.
    status: Buffer<u64>,
    /// Phase 1: the [`UpdatedRegion`] records (room for one per region) and their ranges
    /// (`dims` per record), in mapped page-locked host memory, staged there by the host
    /// ([`stage_into`]).
    staging: HostBuffer<UpdatedRegion>,
    staging_ranges: HostBuffer<Range>,
    /// [`Phase1::Copy`]: the staged records and ranges, copied into device memory.
    staging_dev: Buffer<UpdatedRegion>,
    staging_ranges_dev: Buffer<Range>,
    phase1: Phase1,
    /// The records again, in device memory (copied by `commit_updates`) for the kernels
    /// that read them many times.
    updates: Buffer<UpdatedRegion>,
    grid: Option<GridState>,
    sweep: Option<SweepState>,
    /// Per region, the batch that last updated it and its last entry there ([`stage_into`]).
    last: Vec<AtomicU64>,
    /// Host threads Phase 1 may use on a large batch.
    threads: usize,
    /// Pool threads gathered before a step's last device wait, to stage the next step's
    /// batch awake ([`Engine::set_stage_crew`]): how many, and how long they wait for it.
    stage_crew: (usize, Duration),
    /// The crew gathered for the next step, and whether a step staged in parallel has
    /// come since the last one was gathered (so that the next one is likely to be
    /// staged in parallel too; repeated counts gather none).
    next_crew: Option<Crew>,
    staged_in_parallel: bool,
    /// Pairs the last [`Engine::pairs_into`] found (whether to gather threads for the
    /// next one's copy before its device wait).
    last_pair_total: u64,
    epoch: u32,
    /// The largest lower bound in the sweep dimension ever installed (sweep engine):
    /// the radix sort needs only the digits below it.
    key_bound: u32,
    /// The largest upper bound in any dimension ever installed (bisect engine), for
    /// the same purpose.
    end_bound: u32,
    /// The bisect engine's sweep dimension, once estimated (cleared by every step).
    chosen_dim: Option<u32>,
    /// The bisect engine matches in sorted tiles when `n_pub * n_sub` is at most this,
    /// in about this many blocks.
    tiled_max: u64,
    tiled_fill: u32,
    /// The tiles hand pairs over as one word each where they fit ([`NARROW_MAX`]).
    tiled_narrow: bool,
    /// How Phase 3 of the region approach spreads the candidates over blocks.
    slices: Slices,
    /// The last fast-path load's times.
    load_times: LoadTimes,
    /// Grid engine: run Phases 2-3's four kernels as two fused launches (default).
    fused: bool,
    /// The last step's times, and when its staging ended.
    times: StepTimes,
    staged_at: Option<Instant>,
}

fn addr<T>(b: &Buffer<T>) -> u64 {
    b.dev_ptr().addr()
}

impl<'d> Engine<'d> {
    /// An engine for up to `n_pub` publications and `n_sub` subscriptions in a
    /// `dims`-dimensional space, all absent until a step adds them.
    pub fn new(
        dev: &'d Device,
        approach: Approach,
        dims: usize,
        n_pub: u32,
        n_sub: u32,
    ) -> Result<Engine<'d>, DdmError> {
        if dims == 0 {
            return Err(ModelError::NoDimensions.into());
        }
        if n_pub as u64 + n_sub as u64 >= u32::MAX as u64 / 2 {
            return Err(DdmError::TooLarge(format!(
                "{n_pub} + {n_sub} regions: at most 2^31 in all"
            )));
        }
        if let Approach::Grid(g) = &approach {
            if g.dims() != dims {
                return Err(DdmError::Grid(format!(
                    "grid has {} dimensions, the regions {dims}",
                    g.dims()
                )));
            }
        }
        if approach == Approach::Region {
            let shared = 2 * BLOCK as usize * dims * 8 + 8;
            if shared > 48 << 10 {
                return Err(DdmError::TooLarge(format!("{dims} dimensions need {shared} bytes of shared memory per block, at most 49152")));
            }
        }
        let n = (n_pub + n_sub) as usize;
        let paper = !approach.sorts();
        let (pub_words, sub_words) = (n_pub.div_ceil(32), n_sub.div_ceil(32));
        let matrix_bytes = 4 * (n_pub as u64 * sub_words as u64 + n_sub as u64 * pub_words as u64);
        if paper && matrix_bytes > MAX_MATRIX_BYTES {
            return Err(DdmError::TooLarge(format!(
                "the overlap bit matrices of {n_pub} x {n_sub} regions take {matrix_bytes} bytes (at most {MAX_MATRIX_BYTES}); use the sweep engine"
            )));
        }
        let bounds = dev.alloc::<Range>((n * dims).max(1))?;
        let alive = dev.alloc::<u32>(n.max(1))?;
        let epoch = dev.alloc::<u32>(n.max(1))?;
        let pub_rows = dev.alloc::<u32>(if paper {
            (n_pub as usize * sub_words as usize).max(1)
        } else {
            1
        })?;
        let sub_rows = dev.alloc::<u32>(if paper {
            (n_sub as usize * pub_words as usize).max(1)
        } else {
            1
        })?;
        let dirty = dev.alloc::<u32>(n.max(1))?;
        let pair_cap = if paper { 4096u32.max(2 * n as u32) } else { 1 };
        let pairs = dev.alloc::<Pair>(pair_cap as usize)?;
        let status = dev.alloc::<u64>(2)?;
        let host = DdmTables {
            bounds: addr(&bounds),
            alive: addr(&alive),
            epoch: addr(&epoch),
            pub_rows: addr(&pub_rows),
            sub_rows: addr(&sub_rows),
            dirty: addr(&dirty),
            pairs: addr(&pairs),
            counters: addr(&status),
            overlaps: addr(&status) + 8,
            n_pub,
            n_sub,
            pub_words,
            sub_words,
            dims: dims as u32,
            pair_cap,
            overlaps_from: 0,
            _pad: 0,
        };
        let table = dev.upload(&[host])?;
        let mut e = Engine {
            dev,
            approach: approach.clone(),
            dims,
            n_pub,
            n_sub,
            host,
            table,
            _bounds: bounds,
            _alive: alive,
            _epoch: epoch,
            pub_rows,
            _sub_rows: sub_rows,
            _dirty: dirty,
            pairs,
            status,
            status_host: dev.alloc_host(2)?,
            pairs_host: dev.alloc_host(if paper { pair_cap as usize } else { 1 })?,
            staging: dev.alloc_host(n.max(1))?,
            staging_ranges: dev.alloc_host((n * dims).max(1))?,
            staging_dev: dev.alloc(n.max(1))?,
            staging_ranges_dev: dev.alloc((n * dims).max(1))?,
            phase1: Phase1::Copy,
            updates: dev.alloc(n.max(1))?,
            grid: None,
            sweep: None,
            // Written now (not left to fault in during the first, timed, step); any key
            // below 1 << 32 is older than every batch.
            last: (0..n).map(|_| AtomicU64::new(1)).collect(),
            threads: rayon::current_num_threads(),
            stage_crew: (STAGE_CREW_HELPERS, STAGE_CREW_WAIT),
            next_crew: None,
            staged_in_parallel: false,
            last_pair_total: 0,
            epoch: 0,
            key_bound: 0,
            end_bound: 0,
            chosen_dim: None,
            tiled_max: TILED_MAX_PAIRS,
            tiled_narrow: true,
            tiled_fill: TILED_FILL,
            slices: Slices::Paper,
            fused: true,
            load_times: LoadTimes::default(),
            times: StepTimes::default(),
            staged_at: None,
        };
        if let Approach::Grid(spec) = approach {
            let cap = 16;
            e.grid = Some(e.new_grid(spec, cap)?);
        }
        if e.approach.sorts() {
            // The sort's and the sweep's buffers, sized for the capacity now: a count or
            // an enumeration allocates nothing (but a larger enumeration window).
            e.sweep = Some(e.sweep_state()?);
        }
        Ok(e)
    }

    /// An engine holding `set`'s regions, matched (the first step adds them all).
    ///
    /// The three approaches give the same pairs; ranges are half-open, so touching
    /// ranges do not overlap:
    ///
    /// ```
    /// use ddm_region::{Approach, Device, Engine, GridSpec, Kind, Pair, Range, RegionSet};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut set = RegionSet::new(2)?;
    /// let square = |lo, hi| [Range { lo, hi }, Range { lo, hi }];
    /// set.push(Kind::Publication, 100, &square(0, 10))?; // index 0
    /// set.push(Kind::Subscription, 200, &square(5, 15))?; // overlaps it
    /// set.push(Kind::Subscription, 201, &square(10, 20))?; // touches it: no overlap
    /// let dev = Device::emulator();
    /// for approach in [
    ///     Approach::Region,
    ///     Approach::Grid(GridSpec::covering(2, 20, 5)?),
    ///     Approach::Sweep,
    ///     Approach::Bisect,
    /// ] {
    ///     let mut engine = Engine::with_regions(&dev, approach, &set)?;
    ///     assert_eq!(engine.pairs()?, vec![Pair { publication: 0, subscription: 0 }]);
    ///     assert_eq!(engine.count()?, 1);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn with_regions(
        dev: &'d Device,
        approach: Approach,
        set: &RegionSet,
    ) -> Result<Engine<'d>, DdmError> {
        let mut e = Engine::new(dev, approach, set.dims(), set.n_pub(), set.n_sub())?;
        e.step(&UpdateBatch::everything(set), false)?;
        Ok(e)
    }

    fn new_grid(&self, spec: GridSpec, cap: u32) -> Result<GridState, DdmError> {
        let n_cells = spec.n_cells();
        let lists = n_cells as u64 * 2;
        if lists * cap as u64 * 4 > MAX_MATRIX_BYTES {
            return Err(DdmError::TooLarge(format!(
                "{n_cells} cells with {cap} slots per list: use larger cells"
            )));
        }
        let slots = self.dev.alloc::<u32>((lists * cap as u64) as usize)?;
        let lens = self.dev.alloc::<u32>(lists as usize)?;
        let mut host = GridTables {
            slots: addr(&slots),
            lens: addr(&lens),
            cap,
            n_cells,
            ..Default::default()
        };
        for d in 0..spec.dims() {
            host.origin[d] = spec.origin[d];
            host.cell[d] = spec.cell[d];
            host.cells[d] = spec.cells[d];
        }
        let table = self.dev.upload(&[host])?;
        Ok(GridState {
            spec,
            host,
            table,
            slots,
            _lens: lens,
        })
    }

    /// Sets how Phase 3 of the region approach lays out its blocks (default: the
    /// paper's, [`Slices::Paper`]); no effect on the other approaches.
    pub fn set_slices(&mut self, slices: Slices) {
        self.slices = slices;
    }
    pub fn slices(&self) -> Slices {
        self.slices
    }

    /// Grid engine: with `true` (the default), Phase 2 and the unmapping run as one
    /// kernel, the install and the cell lists' compaction as another
    /// (`clear_and_unmap`, `commit_and_compact`); with `false`, as the paper's phases,
    /// one kernel each. The same answers; no effect on the other approaches.
    pub fn set_fused(&mut self, fused: bool) {
        self.fused = fused;
    }

    /// Who stages the next step's batch. Before a step's last device wait (its pairs or
    /// count handed over after it), `helpers` threads of rayon's pool are gathered
    /// ([`Crew::gather`]); they wake while the device works and spin for up to `wait`
    /// for the next step. If its batch is staged in parallel (ordered, at least
    /// [`STAGE_PAR_MIN`](crate::layout::STAGE_PAR_MIN) entries, as the paper's scenarios
    /// make them), they stage it with the caller, awake. Without them the staging wakes
    /// pool threads as it starts, and after a device wait those are asleep: 32768 moved
    /// regions staged in 48-59 µs on 4-16 threads after 300 µs idle, in 18-20 µs on
    /// 8-16 threads gathered before it (`phase1_staging`, H100 host, 16 cores); a whole
    /// step of Figs. 9/11 101 against 122 µs (`step_split`). `helpers == 0` turns it
    /// off; an engine driven from inside rayon's pool gathers none (as [`Crew::gather`]).
    /// Default: [`STAGE_CREW_HELPERS`] helpers for [`STAGE_CREW_WAIT`]. The same
    /// answers either way.
    pub fn set_stage_crew(&mut self, helpers: usize, wait: Duration) {
        self.stage_crew = (helpers, wait);
        self.next_crew = None;
    }

    /// Before a step's last device wait (so that its threads wake while the device
    /// works; gathered after it, they were still waking when the next step came): the
    /// crew for the next step's staging, when the step's batch was staged in parallel.
    fn gather_next_crew(&mut self) {
        let (helpers, wait) = self.stage_crew;
        let parallel = std::mem::take(&mut self.staged_in_parallel);
        self.next_crew = (helpers > 0 && parallel && self.threads > 1)
            .then(|| Crew::gather(helpers.min(self.threads - 1), wait));
    }

    /// Sets how Phase 1 reaches the device (default [`Phase1::Copy`]).
    pub fn set_phase1(&mut self, phase1: Phase1) {
        self.phase1 = phase1;
    }

    /// Bisect engine: match in sorted tiles ([`tiled_match`]) when `n_pub * n_sub <=
    /// pairs` and there are at most four dimensions (default [`TILED_MAX_PAIRS`]; 0:
    /// never). The same answers; no effect on the other approaches.
    pub fn set_tiled_max(&mut self, pairs: u64) {
        self.tiled_max = pairs;
    }

    /// Bisect engine: the blocks the matching in sorted tiles aims at (default
    /// [`TILED_FILL`]; at least one row of subscriptions, at most one slice per tile of
    /// publications). With 1, one block a row takes every tile of publications in turn.
    pub fn set_tiled_fill(&mut self, blocks: u32) {
        self.tiled_fill = blocks;
    }

    /// Bisect engine matching in sorted tiles: whether pairs cross the bus as one word
    /// each (`publication << 16 | subscription`, half the bytes) when both kinds number
    /// at most [`NARROW_MAX`] (default `true`), or as [`Pair`]s. The same answers.
    pub fn set_tiled_narrow(&mut self, narrow: bool) {
        self.tiled_narrow = narrow;
    }

    /// Sorting engines (sweep, bisect): from now on, count and enumerate only the pairs
    /// whose overlap begins at `x` or after in dimension 0 (`max(lo_p, lo_s) >= x`;
    /// 0, the default: every pair), as a slab of the space cut by coordinate does
    /// ([`SlabEngine`](crate::SlabEngine)). The bisect engine's count by binary search
    /// (one dimension) gives way to the sweep while it is set. The region and grid
    /// engines, which keep every pair's bit, refuse it.
    ///
    /// ```
    /// use ddm_region::{Approach, Device, Engine, Kind, Range, RegionSet};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut set = RegionSet::new(1)?;
    /// set.push(Kind::Publication, 1, &[Range { lo: 0, hi: 10 }])?;
    /// set.push(Kind::Subscription, 2, &[Range { lo: 2, hi: 5 }])?; // overlap from 2
    /// set.push(Kind::Subscription, 3, &[Range { lo: 6, hi: 12 }])?; // overlap from 6
    /// let dev = Device::emulator();
    /// let mut e = Engine::with_regions(&dev, Approach::Bisect, &set)?;
    /// assert_eq!(e.count()?, 2);
    /// e.set_overlaps_from(4)?;
    /// assert_eq!(e.count()?, 1);
    /// assert_eq!(e.pairs()?.len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn set_overlaps_from(&mut self, x: u32) -> Result<(), DdmError> {
        if !self.approach.sorts() {
            return Err(DdmError::NoRestriction(self.approach.name()));
        }
        if self.host.overlaps_from != x {
            self.host.overlaps_from = x;
            self.dev.write(&mut self.table, 0, &[self.host])?;
        }
        Ok(())
    }

    /// True when the bisect engine counts and enumerates in sorted tiles ([`tiled_match`]).
    pub fn matches_in_tiles(&self) -> bool {
        self.approach == Approach::Bisect
            && self.dims as u32 <= TILED_MAX_DIMS
            && self.n_pub as u64 * self.n_sub as u64 <= self.tiled_max
    }

    pub fn approach(&self) -> &Approach {
        &self.approach
    }
    pub fn dims(&self) -> usize {
        self.dims
    }
    pub fn device(&self) -> &'d Device {
        self.dev
    }

    /// A launch of `threads` threads in blocks of [`BLOCK`], or of fewer (whole warps)
    /// when there are fewer threads than that.
    fn linear(threads: u32) -> LaunchConfig {
        LaunchConfig::linear(threads, BLOCK.min(threads.next_multiple_of(32)).max(32))
    }

    /// One time step: Phases 1–4 (region) or 1–5 (grid) for the updated regions of
    /// `batch`; with `want_pairs`, Phase 4 also copies back the pairs that involve an
    /// updated region. The sweep engine only installs the regions (Phase 1); its
    /// matching is [`Engine::count`] or [`Engine::pairs`].
    ///
    /// ```
    /// use ddm_region::{Approach, Device, Engine, Kind, Pair, Range, UpdateBatch};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dev = Device::emulator();
    /// // Room for 2 publications and 1 subscription on a line; none present yet.
    /// let mut engine = Engine::new(&dev, Approach::Region, 1, 2, 1)?;
    /// let mut batch = UpdateBatch::default();
    /// batch.set(Kind::Publication, 0, &[Range { lo: 0, hi: 10 }]);
    /// batch.set(Kind::Publication, 1, &[Range { lo: 50, hi: 60 }]);
    /// batch.set(Kind::Subscription, 0, &[Range { lo: 8, hi: 12 }]);
    /// let report = engine.step(&batch, true)?;
    /// assert_eq!(report.overlaps, 1);
    /// assert_eq!(report.pairs, Some(vec![Pair { publication: 0, subscription: 0 }]));
    ///
    /// // The subscription moves next to publication 1; publication 0 is removed.
    /// let mut batch = UpdateBatch::default();
    /// batch.set(Kind::Subscription, 0, &[Range { lo: 55, hi: 70 }]);
    /// batch.remove(Kind::Publication, 0);
    /// assert_eq!(engine.step(&batch, false)?.overlaps, 1);
    /// assert_eq!(engine.pairs()?, vec![Pair { publication: 1, subscription: 0 }]);
    /// # Ok(()) }
    /// ```
    pub fn step(&mut self, batch: &UpdateBatch, want_pairs: bool) -> Result<StepReport, DdmError> {
        let t0 = Instant::now();
        self.times = StepTimes::default();
        self.staged_at = None;
        let r = self.step_phases(batch, want_pairs);
        self.times.total_us = t0.elapsed().as_secs_f64() * 1e6;
        if let Some(at) = self.staged_at {
            self.times.stage_us = (at - t0).as_secs_f64() * 1e6;
        }
        r
    }

    /// Where the host's time of the last [`Engine::step`] went.
    pub fn last_step_times(&self) -> StepTimes {
        self.times
    }

    /// Where the host's time of the last whole-set [`Engine::load`] on its fast path
    /// went (all zeros until one ran).
    pub fn last_load_times(&self) -> LoadTimes {
        self.load_times
    }

    fn step_phases(
        &mut self,
        batch: &UpdateBatch,
        want_pairs: bool,
    ) -> Result<StepReport, DdmError> {
        if self.epoch == u32::MAX {
            // The batch counter wraps: no key may look as new as the next batches'.
            self.last.iter_mut().for_each(|k| *k.get_mut() = 0);
        }
        self.epoch = self.epoch.wrapping_add(1).max(1);
        // Phase 1: the updated regions' information, ordered and de-duplicated straight
        // into page-locked host memory (after the previous step's kernels and copies are
        // done with it), no intermediate vectors; then, by default, copied to the device.
        self.dev.synchronize()?;
        // (Both buffers are padded to one element when the engine holds no region: fuzz
        // finding ddm_diff-2; the slices passed on are the regions' own.)
        let regions = (self.n_pub + self.n_sub) as usize;
        let records = &mut self.staging.as_mut_slice()[..regions];
        let ranges = &mut self.staging_ranges.as_mut_slice()[..regions * self.dims];
        let staged = stage_into(
            batch,
            self.dims,
            (self.n_pub, self.n_sub),
            &mut self.last,
            self.epoch,
            (records, ranges),
            Hands {
                threads: self.threads,
                crew: self.next_crew.take(),
            },
        )?;
        let n = staged.records;
        self.staged_in_parallel = n as usize >= crate::layout::STAGE_PAR_MIN;
        self.staged_at = Some(Instant::now());
        if self.phase1 == Phase1::Copy && n > 0 {
            // Two DMA copies from page-locked memory (records, ranges), stream-ordered
            // before the kernels; one (ranges) for a dense batch, whose records the
            // kernels make.
            let (rec, rng) = (n as usize, n as usize * self.dims);
            if !staged.dense {
                let records = &self.staging.as_slice()[..rec];
                self.dev.write(&mut self.staging_dev, 0, records)?;
            }
            let ranges = &self.staging_ranges.as_slice()[..rng];
            self.dev.write(&mut self.staging_ranges_dev, 0, ranges)?;
        }
        if n == 0 {
            let overlaps = if self.approach.sorts() {
                0
            } else {
                self.read_overlaps()?
            };
            return Ok(StepReport {
                overlaps,
                pairs: want_pairs.then(Vec::new),
            });
        }
        if self.approach.sorts() {
            self.key_bound = self.key_bound.max(staged.max_lo0);
            self.end_bound = self.end_bound.max(staged.max_hi);
            self.chosen_dim = None;
        }
        match self.approach.clone() {
            Approach::Sweep | Approach::Bisect => {
                self.commit(staged)?;
                Ok(StepReport {
                    overlaps: 0,
                    pairs: want_pairs.then(Vec::new),
                })
            }
            Approach::Region => {
                // (commit_updates zeroes the step counters: no copy for that.)
                self.clear(n, self.staged_records(), staged.dense)?;
                self.commit(staged)?;
                self.match_region(staged)?;
                self.finish(staged, want_pairs)
            }
            Approach::Grid(_) if self.fused => {
                // Phase 2 and the unmapping, then the install and the compaction: two
                // launches where the paper's phases take four.
                let g = self.grid.as_ref().expect("grid engine has a grid");
                clear_and_unmap::launch(
                    self.dev,
                    LaunchConfig::linear(n * 32, BLOCK),
                    &self.table,
                    &g.table,
                    self.staged_records(),
                    n,
                    staged.dense as u32,
                )?;
                commit_and_compact::launch(
                    self.dev,
                    Self::linear(n.max(g.host.n_cells * 2)),
                    &self.table,
                    &g.table,
                    self.staged_records(),
                    self.staged_ranges(),
                    n,
                    staged.dense as u32,
                    self.epoch,
                    &self.updates,
                )?;
                map_regions::launch(
                    self.dev,
                    Self::linear(n),
                    &self.table,
                    &g.table,
                    &self.updates,
                    n,
                    0,
                )?;
                self.match_grid(n)?;
                self.finish(staged, want_pairs)
            }
            Approach::Grid(_) => {
                self.clear(n, self.staged_records(), staged.dense)?;
                let g = self.grid.as_ref().expect("grid engine has a grid");
                unmap_regions::launch(
                    self.dev,
                    Self::linear(n),
                    &self.table,
                    &g.table,
                    self.staged_records(),
                    n,
                    staged.dense as u32,
                )?;
                compact_cells::launch(self.dev, Self::linear(g.host.n_cells * 2), &g.table)?;
                self.commit(staged)?;
                map_regions::launch(
                    self.dev,
                    Self::linear(n),
                    &self.table,
                    &g.table,
                    &self.updates,
                    n,
                    0,
                )?;
                self.match_grid(n)?;
                self.finish(staged, want_pairs)
            }
        }
    }

    /// Installs every region of `set`, as a step whose batch sets every region would
    /// ([`UpdateBatch::everything`]), on the fast path from host memory where it can: on
    /// the sorting engines (sweep, bisect) whose capacity is exactly the set's, the
    /// set's ranges are copied in parallel (all host threads) into page-locked staging,
    /// the regions' bounds found on the way, and the staging is copied by DMA straight
    /// into the region table ([`LOAD_CHUNKS`] chunks, each copied while the next is
    /// filled), which one kernel marks live: no records, no de-duplication; it returns
    /// when the copies are done ([`Engine::last_load_times`] tells the fills' share from
    /// the bus's). Elsewhere it is that step.
    ///
    /// ```
    /// use ddm_region::{Approach, Device, Engine, Kind, Range, RegionSet};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut set = RegionSet::new(1)?;
    /// set.push(Kind::Publication, 1, &[Range { lo: 0, hi: 10 }])?;
    /// set.push(Kind::Subscription, 2, &[Range { lo: 5, hi: 15 }])?;
    /// let dev = Device::emulator();
    /// let mut e = Engine::new(&dev, Approach::Bisect, 1, 1, 1)?;
    /// e.load(&set)?;
    /// assert_eq!(e.count()?, 1);
    /// // Two regions of one range each went to the device: 16 bytes.
    /// assert_eq!(e.last_load_times().bytes, 16);
    /// # Ok(()) }
    /// ```
    pub fn load(&mut self, set: &RegionSet) -> Result<(), DdmError> {
        let started = Instant::now();
        let exact =
            set.dims() == self.dims && set.n_pub() == self.n_pub && set.n_sub() == self.n_sub;
        if !self.approach.sorts() || !exact {
            self.step(&UpdateBatch::everything(set), false)?;
            return Ok(());
        }
        let d = self.dims;
        let n = (self.n_pub + self.n_sub) as usize * d;
        if n == 0 {
            return Ok(());
        }
        if self.epoch == u32::MAX {
            self.last.iter_mut().for_each(|k| *k.get_mut() = 0);
        }
        self.epoch = self.epoch.wrapping_add(1).max(1);
        // The previous kernels and copies are done with the staging memory.
        self.dev.synchronize()?;
        // The set's ranges in one numbering (publications first), as the region table
        // holds them, cut into chunks: while the calling thread copies chunk k to the
        // device (one DMA from page-locked memory, which waits for its end), the other
        // host threads fill chunk k + 1 of the staging. Each fill returns (largest lower
        // bound in dimension 0, largest upper bound in any dimension).
        let pubs = set.ranges(Kind::Publication);
        let subs = set.ranges(Kind::Subscription);
        let split = pubs.len();
        // Four tasks a host thread per chunk, so that every thread fills (a chunk of
        // 1M regions' ranges cut into tasks of 16384 regions was 8 tasks: half the
        // threads of a 16-core host idle, and the 1-D load bound by its fills), each
        // task whole regions.
        let threads = rayon::current_num_threads().max(1);
        let per_task = n
            .div_ceil(LOAD_CHUNKS * threads * 4)
            .max(MIN_FILL_TASK)
            .next_multiple_of(d);
        let chunk = n.div_ceil(LOAD_CHUNKS).next_multiple_of(per_task);
        let fill = |dst: &mut [Range], at: usize| -> (u32, u32) {
            dst.par_chunks_mut(per_task)
                .enumerate()
                .map(|(t, out)| {
                    let start = at + t * per_task;
                    let end = start + out.len();
                    // The publications' part, then the subscriptions'.
                    let cut = split.clamp(start, end) - start;
                    // A part wholly among the subscriptions takes no publication (its
                    // start is past them), one wholly among the publications no
                    // subscription (`end - split` would underflow).
                    // (Streaming stores: the CPU never reads the staging back. The
                    // bounds are found in the source, read anyway.)
                    let (mut lo0, mut hi) = (0, 0);
                    let mut part = |dst: &mut [Range], src: &[Range]| {
                        stream_copy(dst, src);
                        lo0 = src.iter().step_by(d).fold(lo0, |m, r| m.max(r.lo));
                        hi = src.iter().fold(hi, |m, r| m.max(r.hi));
                    };
                    if cut > 0 {
                        part(&mut out[..cut], &pubs[start..start + cut]);
                    }
                    if cut < out.len() {
                        part(&mut out[cut..], &subs[start + cut - split..end - split]);
                    }
                    (lo0, hi)
                })
                .reduce(|| (0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)))
        };
        // (Each fill timed: `LoadTimes::fill_us`.)
        let timed_fill = |dst: &mut [Range], at: usize| {
            let t = Instant::now();
            let found = fill(dst, at);
            (found, t.elapsed().as_secs_f64() * 1e6)
        };
        let dev = self.dev;
        let bounds = &mut self._bounds;
        let mut staging = &mut self.staging_ranges.as_mut_slice()[..n];
        let mut at = 0usize;
        let (first, rest) = std::mem::take(&mut staging).split_at_mut(chunk.min(n));
        staging = rest;
        let ((mut lo0, mut hi), mut fill_us) = timed_fill(first, 0);
        let mut pending: &[Range] = first;
        loop {
            let next_len = chunk.min(staging.len());
            let (next, rest) = std::mem::take(&mut staging).split_at_mut(next_len);
            staging = rest;
            let (copied, filled) = rayon::join(
                || dev.write(bounds, at, pending),
                || (next_len > 0).then(|| timed_fill(next, at + pending.len())),
            );
            copied?;
            at += pending.len();
            match filled {
                Some(((l, h), us)) => {
                    lo0 = lo0.max(l);
                    hi = hi.max(h);
                    fill_us += us;
                    pending = next;
                }
                None => break,
            }
        }
        install_all::launch(
            self.dev,
            Self::linear(self.n_pub + self.n_sub),
            &self.table,
            self.epoch,
        )?;
        // The copies still under way when the host has filled the last chunk: the bus's
        // share beyond the fills.
        let drain = Instant::now();
        self.dev.synchronize()?;
        self.load_times = LoadTimes {
            fill_us,
            drain_us: drain.elapsed().as_secs_f64() * 1e6,
            total_us: started.elapsed().as_secs_f64() * 1e6,
            bytes: (n * std::mem::size_of::<Range>()) as u64,
        };
        self.key_bound = self.key_bound.max(lo0);
        self.end_bound = self.end_bound.max(hi);
        self.chosen_dim = None;
        Ok(())
    }

    /// Phase 2 (both approaches): one warp per updated region.
    /// `records`: the staged records (before commit; none written when `dense`) or
    /// their device copy (after).
    fn clear(&self, n: u32, records: In<'_, UpdatedRegion>, dense: bool) -> Result<(), DdmError> {
        let cfg = LaunchConfig::linear(n * 32, BLOCK);
        clear_overlaps::launch(self.dev, cfg, &self.table, records, n, dense as u32)?;
        Ok(())
    }

    /// The staged records, where the kernels read them: the device copy
    /// ([`Phase1::Copy`]) or the mapped host memory.
    fn staged_records(&self) -> In<'_, UpdatedRegion> {
        match self.phase1 {
            Phase1::Copy => self.staging_dev.at(0),
            Phase1::Mapped => self.staging.at(0),
        }
    }

    /// The staged records' ranges, as [`Engine::staged_records`].
    fn staged_ranges(&self) -> In<'_, Range> {
        match self.phase1 {
            Phase1::Copy => self.staging_ranges_dev.at(0),
            Phase1::Mapped => self.staging_ranges.at(0),
        }
    }

    fn commit(&self, staged: StageCounts) -> Result<(), DdmError> {
        let n = staged.records;
        commit_updates::launch(
            self.dev,
            Self::linear(n),
            &self.table,
            self.staged_records(),
            self.staged_ranges(),
            n,
            staged.dense as u32,
            self.epoch,
            &self.updates,
        )?;
        Ok(())
    }

    /// Phase 3 of §III.B: updated publications against all subscriptions, then updated
    /// subscriptions against the publications not updated in this step.
    fn match_region(&self, staged: StageCounts) -> Result<(), DdmError> {
        let shared = (2 * BLOCK as usize * self.dims * 8 + 8) as u32;
        let n_pub_upd = staged.n_pub_updates;
        let n_sub_upd = staged.records - n_pub_upd;
        let runs = [
            (0, n_pub_upd, self.n_pub, self.n_sub, 0u32),
            (n_pub_upd, n_sub_upd, 0, self.n_pub, 1u32),
        ];
        for (first, count, cand_base, n_cand, skip) in runs {
            if count == 0 || n_cand == 0 {
                continue;
            }
            let mut cfg = Self::linear(count).with_shared(shared);
            let tiles = n_cand.div_ceil(BLOCK);
            cfg.grid[1] = match self.slices {
                Slices::Paper => 1,
                Slices::Fill => FILL_BLOCKS.div_ceil(cfg.grid[0]).min(tiles),
                Slices::Exactly(k) => k,
            }
            .clamp(1, 65535);
            match_region::launch(
                self.dev,
                cfg,
                &self.table,
                &self.updates,
                first,
                count,
                cand_base,
                n_cand,
                skip,
                self.epoch,
            )?;
        }
        Ok(())
    }

    /// Phase 4 of §III.C.
    fn match_grid(&self, n: u32) -> Result<(), DdmError> {
        let g = self.grid.as_ref().expect("grid engine has a grid");
        match_grid::launch(
            self.dev,
            Self::linear(n),
            &self.table,
            &g.table,
            &self.updates,
            n,
            self.epoch,
        )?;
        Ok(())
    }

    /// The last phase: copy back the counters and, when asked, the new pairs. A full
    /// pair list or cell list is grown and the step's matching redone (Phases 2 and 3
    /// are idempotent for a given region table).
    fn finish(&mut self, staged: StageCounts, want_pairs: bool) -> Result<StepReport, DdmError> {
        let n = staged.records;
        self.gather_next_crew();
        loop {
            // One kernel writes the status and the pairs into page-locked host memory;
            // one wait for the whole step.
            let threads = if want_pairs {
                PUBLISH_THREADS.min(self.host.pair_cap.max(1))
            } else {
                1
            };
            publish_step::launch(
                self.dev,
                Self::linear(threads),
                &self.table,
                want_pairs as u32,
                self.status_host.at_mut(0),
                self.pairs_host.at_mut(0),
            )?;
            let wait = Instant::now();
            if let Some(at) = self.staged_at.filter(|_| self.times.enqueue_us == 0.0) {
                self.times.enqueue_us = (wait - at).as_secs_f64() * 1e6;
            }
            self.dev.synchronize()?;
            self.times.wait_us += wait.elapsed().as_secs_f64() * 1e6;
            let status = self.status_host.as_slice();
            let c: StepCounters = bytemuck::cast(status[0]);
            let grid_full = c.cell_overflow > 0;
            let list_full = c.new_pairs > self.host.pair_cap;
            if !grid_full && !list_full {
                let overlaps = status[1];
                let pairs = want_pairs
                    .then(|| copy_out(&self.pairs_host.as_slice()[..c.new_pairs as usize]));
                return Ok(StepReport { overlaps, pairs });
            }
            if list_full {
                let cap = c.new_pairs.checked_next_power_of_two().unwrap_or(u32::MAX);
                self.pairs = self.dev.alloc(cap as usize)?;
                self.pairs_host = self.dev.alloc_host(cap as usize)?;
                self.host.pairs = addr(&self.pairs);
                self.host.pair_cap = cap;
                self.dev.write(&mut self.table, 0, &[self.host])?;
            }
            if grid_full {
                let g = self.grid.take().expect("only the grid overflows");
                let cap = c
                    .cell_overflow
                    .checked_next_power_of_two()
                    .unwrap_or(u32::MAX);
                drop(g.slots);
                self.grid = Some(self.new_grid(g.spec, cap)?);
                let g = self.grid.as_ref().expect("just set");
                let all = self.n_pub + self.n_sub;
                map_regions::launch(
                    self.dev,
                    Self::linear(all),
                    &self.table,
                    &g.table,
                    &self.updates,
                    all,
                    1,
                )?;
            }
            self.dev.write(&mut self.status, 0, &[0u64])?;
            self.clear(n, self.updates.at(0), false)?;
            match self.approach {
                Approach::Region => self.match_region(staged)?,
                _ => self.match_grid(n)?,
            }
        }
    }

    fn read_overlaps(&self) -> Result<u64, DdmError> {
        Ok(self.dev.read(&self.status)?[1])
    }

    /// The number of overlapping (publication, subscription) pairs now.
    pub fn count(&mut self) -> Result<u64, DdmError> {
        if self.approach.sorts() {
            self.gather_next_crew();
        }
        self.count_now()
    }

    fn count_now(&mut self) -> Result<u64, DdmError> {
        match self.approach {
            Approach::Sweep => self.sweep_count(0),
            Approach::Bisect if self.matches_in_tiles() => self.tiled(None),
            Approach::Bisect if self.dims == 1 => match self.count_by_search()? {
                Some(n) => Ok(n),
                None => self.sweep_count(0),
            },
            Approach::Bisect => {
                let dim = self.sweep_dim()?;
                self.sweep_count(dim)
            }
            _ => self.read_overlaps(),
        }
    }

    /// The sweep dimension of the bisect engine: the one of the first
    /// [`MAX_ESTIMATED_DIMS`] where a sample of publications against a sample of
    /// subscriptions (`min(SAMPLE, max(n_pub, n_sub) / 8)` of each, every pair) overlaps
    /// least (the lowest on a tie), estimated once per step or load.
    /// Dimension 0 for the sweep engine and in one dimension.
    pub fn sweep_dim(&mut self) -> Result<u32, DdmError> {
        if self.approach != Approach::Bisect || self.dims == 1 {
            return Ok(0);
        }
        if let Some(d) = self.chosen_dim {
            return Ok(d);
        }
        let s = self
            .sweep
            .as_mut()
            .expect("sorting engines keep their state");
        let ends = s.ends.as_mut().expect("the bisect engine has end buffers");
        self.dev.zero(&mut ends.per_dim)?;
        // An estimate: a small set gets a small sample (the emulator runs it too).
        let samples = SAMPLE.min(self.n_pub.max(self.n_sub) / 8).max(1);
        dim_candidates::launch(
            self.dev,
            Self::linear(samples * samples),
            &self.table,
            samples,
            &ends.per_dim,
        )?;
        let per_dim = self.dev.read(&ends.per_dim)?;
        let estimated = (self.dims as u32).min(MAX_ESTIMATED_DIMS) as usize;
        let dim = (0..estimated).min_by_key(|&d| per_dim[d]).unwrap_or(0) as u32;
        self.chosen_dim = Some(dim);
        Ok(dim)
    }

    /// The count by binary search over the end points of dimension 0 ([`Approach::Bisect`]
    /// in one dimension; in several, the overlaps in dimension 0 alone): `None` when a
    /// live range is empty there (the identity it rests on fails), while the pairs are
    /// restricted ([`Engine::set_overlaps_from`]), or for another engine.
    /// [`Engine::count`] then sweeps.
    pub fn count_by_search(&mut self) -> Result<Option<u64>, DdmError> {
        if self.approach != Approach::Bisect || self.host.overlaps_from > 0 {
            return Ok(None);
        }
        let dev = self.dev;
        let (np, ns) = (self.n_pub, self.n_sub);
        if np == 0 || ns == 0 {
            return Ok(Some(0));
        }
        // Removed subscriptions' keys are u32::MAX: sorting the digits below
        // `end_bound + 1` keeps them after every live key.
        let passes = (32 - self.end_bound.saturating_add(1).leading_zeros()).div_ceil(8);
        let s = self
            .sweep
            .as_mut()
            .expect("sorting engines keep their state");
        let mut e = s.ends.take().expect("the bisect engine has end buffers");
        let r = (|| -> Result<(), DdmError> {
            dev.zero(&mut e.tally)?;
            let hi = e.sort.b_at;
            end_keys::launch(
                dev,
                Self::linear(ns),
                &self.table,
                0,
                e.sort.keys.at_mut(0),
                e.sort.vals.at_mut(0),
                e.sort.keys.at_mut(hi),
                e.sort.vals.at_mut(hi),
                &e.tally,
            )?;
            e.sort
                .sort(dev, [ns, ns], passes, [&s.hist, &s.digit_total])?;
            bisect_count::launch(
                dev,
                Self::linear(np),
                &self.table,
                0,
                e.sort.keys.at(0),
                e.sort.keys.at(hi),
                &e.tally,
            )?;
            Ok(())
        })();
        let s = self
            .sweep
            .as_mut()
            .expect("sorting engines keep their state");
        s.ends = Some(e);
        r?;
        let e = s.ends.as_ref().expect("just put back");
        let tally = dev.read(&e.tally)?;
        Ok((tally[EMPTY_FLAG] == 0).then_some(tally[0]))
    }

    /// All overlapping pairs now, ordered by publication, then subscription.
    pub fn pairs(&mut self) -> Result<Vec<Pair>, DdmError> {
        match self.approach {
            Approach::Sweep | Approach::Bisect => {
                let mut all = self.pairs_unordered()?;
                all.sort_unstable();
                Ok(all)
            }
            _ => {
                let bits = self.dev.read(&self.pub_rows)?;
                Ok(crate::layout::decode_pub_rows(
                    &bits,
                    self.n_pub,
                    self.host.sub_words,
                ))
            }
        }
    }

    /// All overlapping pairs now, in no particular order: the sorting engines' pairs as
    /// they come, copied into a new `Vec` on all host threads when there are many
    /// ([`Engine::pairs`] sorts them; the other engines' are sorted anyway).
    ///
    /// ```
    /// use ddm_region::{Approach, Device, Engine, Kind, Range, RegionSet};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut set = RegionSet::new(1)?;
    /// set.push(Kind::Publication, 1, &[Range { lo: 0, hi: 10 }])?;
    /// set.push(Kind::Subscription, 2, &[Range { lo: 5, hi: 15 }])?;
    /// set.push(Kind::Subscription, 3, &[Range { lo: 8, hi: 9 }])?;
    /// let dev = Device::emulator();
    /// let mut e = Engine::with_regions(&dev, Approach::Bisect, &set)?;
    /// // A small set: the publications sorted tile by tile, two launches.
    /// assert!(e.matches_in_tiles());
    /// let mut pairs = e.pairs_unordered()?;
    /// pairs.sort_unstable();
    /// assert_eq!(pairs.len(), 2);
    /// // The same pairs from the sorts of all regions and the sweep.
    /// e.set_tiled_max(0);
    /// assert_eq!(pairs, e.pairs()?);
    /// # Ok(()) }
    /// ```
    pub fn pairs_unordered(&mut self) -> Result<Vec<Pair>, DdmError> {
        let mut all = Vec::new();
        self.pairs_into(&mut all)?;
        Ok(all)
    }

    /// All overlapping pairs now, in no particular order, into `out` (cleared first; its
    /// capacity kept, so that a simulation's steps reuse one buffer, as the paper's
    /// engine does its pair list); returns how many. The sorting engines copy the pairs
    /// out of the page-locked memory the GPU wrote them to on all host threads when
    /// there are many, the threads woken while the GPU matches (when the previous call
    /// found many: [`gpu_kernels::crew`]).
    ///
    /// ```
    /// use ddm_region::{Approach, Device, Engine, Kind, Range, RegionSet};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut set = RegionSet::new(1)?;
    /// set.push(Kind::Publication, 1, &[Range { lo: 0, hi: 10 }])?;
    /// set.push(Kind::Subscription, 2, &[Range { lo: 5, hi: 15 }])?;
    /// let dev = Device::emulator();
    /// let mut e = Engine::with_regions(&dev, Approach::Bisect, &set)?;
    /// let mut pairs = vec![Default::default(); 100];
    /// assert_eq!(e.pairs_into(&mut pairs)?, 1);
    /// assert_eq!(pairs, e.pairs()?);
    /// assert!(pairs.capacity() >= 100);
    /// # Ok(()) }
    /// ```
    pub fn pairs_into(&mut self, out: &mut Vec<Pair>) -> Result<u64, DdmError> {
        out.clear();
        if !self.approach.sorts() {
            let all = self.pairs()?;
            out.extend_from_slice(&all);
            return Ok(all.len() as u64);
        }
        let threads = self.threads;
        let mut crew = (self.last_pair_total >= 2 * COPY_OUT_PART as u64)
            .then(|| Crew::gather(threads.saturating_sub(1), COPY_CREW_WAIT));
        if crew.is_none() {
            // (A step with many pairs leaves the copy's crew awake for the next staging.)
            self.gather_next_crew();
        }
        let total = self.for_each_landed(&mut |b| append_pairs(out, b, crew.take(), threads))?;
        self.last_pair_total = total;
        Ok(total)
    }

    /// Hands all overlapping pairs to `f` in batches (unordered for the sweep engine);
    /// returns how many there were. The number of pairs is not limited by device memory.
    pub fn for_each_pair_batch(&mut self, mut f: impl FnMut(&[Pair])) -> Result<u64, DdmError> {
        if !self.approach.sorts() {
            let all = self.pairs()?;
            f(&all);
            return Ok(all.len() as u64);
        }
        let mut wide = Vec::new();
        self.gather_next_crew();
        self.for_each_landed(&mut |b| match b {
            Landed::Wide(p) => f(p),
            Landed::Narrow(w) => {
                // Unpacked a part at a time (a part stays in the cache for `f`).
                for part in w.chunks(COPY_OUT_PART) {
                    wide.clear();
                    wide.extend(part.iter().map(|&x| unpack_narrow(x)));
                    f(&wide);
                }
                if w.is_empty() {
                    f(&[]);
                }
            }
        })
    }

    /// The sorting engines' pairs, batch by batch, as they landed in host memory.
    fn for_each_landed(&mut self, f: &mut LandedSink) -> Result<u64, DdmError> {
        if self.matches_in_tiles() {
            // More pairs than one window: the sweep enumerates them window by window.
            let total = self.tiled(Some(&mut *f))?;
            if total <= SWEEP_WINDOW {
                return Ok(total);
            }
        }
        let dim = self.sweep_dim()?;
        let (n_chunks, pairs_total) = self.sweep_prepare(dim)?;
        if pairs_total == 0 {
            return Ok(0);
        }
        let window = pairs_total.min(SWEEP_WINDOW);
        let dev = self.dev;
        let s = self.sweep.as_mut().expect("prepared");
        if s.out.len() < window as usize {
            s.out = dev.alloc(window as usize)?;
            // Page-locked, so that the copy back is one DMA (no bounce through a driver
            // buffer), and kept across calls (no allocation per call).
            s.out_host = dev.alloc_host(window as usize)?;
        }
        let s = self.sweep.as_mut().expect("prepared");
        let (out, host) = (&s.out, s.out_host.as_mut_slice());
        let (work, per_chunk) = (&s.work, &s.per_chunk);
        let mut base = 0u64;
        while base < pairs_total {
            let len = (pairs_total - base).min(window);
            Self::launch_chunks(n_chunks, |chunk_base, threads| {
                sweep_emit::launch(
                    self.dev,
                    Self::linear(threads),
                    &self.table,
                    work,
                    chunk_base,
                    n_chunks,
                    per_chunk,
                    pairs_total,
                    out,
                    base,
                    window,
                )
            })?;
            self.dev.read_into(out, 0, &mut host[..len as usize])?;
            f(Landed::Wide(&host[..len as usize]));
            base += len;
        }
        Ok(pairs_total)
    }

    /// Matching in sorted tiles ([`sort_tiles`], then [`tiled_match`]: two launches, one
    /// wait): the count, or with `hand`, the pairs handed over from mapped host memory,
    /// where the kernel wrote them (room is grown and the matching redone when there
    /// were more; not when there are more than [`SWEEP_WINDOW`], which the caller
    /// enumerates otherwise). Returns the count.
    fn tiled(&mut self, mut hand: Option<&mut LandedSink>) -> Result<u64, DdmError> {
        let (np, ns) = (self.n_pub, self.n_sub);
        if np == 0 || ns == 0 {
            if let Some(f) = hand {
                f(Landed::Wide(&[]));
            }
            return Ok(0);
        }
        let narrow = self.tiled_narrow && np <= NARROW_MAX && ns <= NARROW_MAX;
        let dev = self.dev;
        let rows = ns.div_ceil(subs_per_block(self.dims as u32));
        // Publication slices of a whole tile or more, as many as make `tiled_fill`
        // blocks.
        let slices = (self.tiled_fill / rows).clamp(1, np.div_ceil(TILE).min(65535));
        let cfg = LaunchConfig {
            grid: [rows, slices, 1],
            block: [TILE, 1, 1],
            shared_bytes: tiled_shared_bytes(self.dims as u32),
        };
        let emit = match (&hand, narrow) {
            (None, _) => EMIT_COUNT,
            (Some(_), false) => EMIT_WIDE,
            (Some(_), true) => EMIT_NARROW,
        };
        let words_per_pair = if narrow { 1 } else { 2 };
        let n_tiles = np.div_ceil(TILE);
        let s = self
            .sweep
            .as_mut()
            .expect("sorting engines keep their state");
        if s.tiles.is_none() {
            let n = np as usize;
            let (keys, ids) = (dev.alloc::<u32>(n)?, dev.alloc::<u32>(n)?);
            let ranges = dev.alloc::<Range>(n * self.dims)?;
            let widths = dev.alloc::<u32>(n_tiles as usize)?;
            let table = dev.upload(&[SortedTiles {
                keys: addr(&keys),
                ids: addr(&ids),
                ranges: addr(&ranges),
                widths: addr(&widths),
            }])?;
            s.tiles = Some(TilesState {
                table,
                _keys: keys,
                _ids: ids,
                _ranges: ranges,
                _widths: widths,
            });
        }
        let tiles = s.tiles.as_ref().expect("just made");
        // (It zeroes `total` too: no memset before either launch.)
        sort_tiles::launch(
            dev,
            LaunchConfig::blocks(n_tiles, TILE, SORT_TILES_SHARED),
            &self.table,
            &tiles.table,
            &s.total,
        )?;
        loop {
            let s = self
                .sweep
                .as_mut()
                .expect("sorting engines keep their state");
            let tiles = &s.tiles.as_ref().expect("made above").table;
            let cap = if emit == EMIT_COUNT {
                0
            } else {
                (s.tiled_out.len() / words_per_pair) as u64
            };
            tiled_match::launch(
                dev,
                cfg,
                &self.table,
                tiles,
                s.tiled_out.at_mut(0),
                cap,
                &s.total,
                emit,
            )?;
            let total = dev.read(&s.total)?[0];
            let Some(f) = hand.as_mut() else {
                return Ok(total);
            };
            if total <= cap {
                let words = &s.tiled_out.as_slice()[..total as usize * words_per_pair];
                f(if narrow {
                    Landed::Narrow(words)
                } else {
                    Landed::Wide(bytemuck::cast_slice(words))
                });
                return Ok(total);
            }
            if total > SWEEP_WINDOW {
                return Ok(total);
            }
            s.tiled_out = dev.alloc_host(total.next_power_of_two() as usize * words_per_pair)?;
            // Matched again with room for every pair, counted from zero.
            dev.zero(&mut s.total)?;
        }
    }

    /// Launches `n_chunks` threads in launches of at most 2^30 threads.
    fn launch_chunks(
        n_chunks: u64,
        mut launch: impl FnMut(u64, u32) -> Result<(), GpuError>,
    ) -> Result<(), DdmError> {
        let per = 1u64 << 30;
        let mut base = 0u64;
        while base < n_chunks {
            let threads = (n_chunks - base).min(per) as u32;
            launch(base, threads)?;
            base += threads as u64;
        }
        Ok(())
    }

    /// The count of the sorting engines: sorted, tasks found and scanned, then the
    /// chunking chosen on the device ([`sweep_plan`]) and the chunks walked by a grid
    /// of [`STRIDED_THREADS_PER_SM`] threads per SM ([`sweep_count_strided`]): one wait,
    /// for the count, where reading the work total back to choose the chunking on the
    /// host took a second. On a GPU its ~20 launches are recorded once and replayed as
    /// one ([`Device::record`]) while the engine's sizes stay; the emulator queues them.
    fn sweep_count(&mut self, dim: u32) -> Result<u64, DdmError> {
        self.with_sweep_state(|e, s| e.sweep_count_with(s, dim))
    }

    /// Runs `f` with the sorting engines' state (made on first use), taken out of the
    /// engine for the call so that `f` may borrow both.
    fn with_sweep_state<R>(
        &mut self,
        f: impl FnOnce(&mut Self, &mut SweepState) -> Result<R, DdmError>,
    ) -> Result<R, DdmError> {
        let mut s = match self.sweep.take() {
            Some(s) => s,
            None => self.sweep_state()?,
        };
        let r = f(self, &mut s);
        self.sweep = Some(s);
        r
    }

    fn sweep_count_with(&mut self, s: &mut SweepState, dim: u32) -> Result<u64, DdmError> {
        let dev = self.dev;
        let (np, ns) = (self.n_pub, self.n_sub);
        if np + ns == 0 {
            return Ok(0);
        }
        let passes = self.sort_passes(dim);
        let key = CountKey {
            dim,
            passes,
            n_pub: np,
            n_sub: ns,
            table: addr(&self.table),
            sums: addr(&s.sums),
        };
        let replay = s.count_recording.as_ref().is_some_and(|r| r.key == key);
        // The work description the launches read: the recording's own, or the addresses
        // as the sort will leave them (after an odd number of passes the values are in
        // the other buffer); written before the launches (a host copy cannot be
        // recorded) and only when it changed.
        let work = match &s.count_recording {
            Some(r) if replay => r.work,
            _ => {
                let vals = if passes % 2 == 1 {
                    &s.sort.tmp_vals
                } else {
                    &s.sort.vals
                };
                work_of(s, vals, np + ns)
            }
        };
        if s.work_written != Some(work) {
            dev.write(&mut s.work, 0, &[work])?;
            s.work_written = Some(work);
        }
        if let Some(rec) = s.count_recording.as_ref().filter(|_| replay) {
            dev.replay(&rec.recording)?;
        } else {
            s.count_recording = None;
            let threads = dev.sm_count().max(1) * STRIDED_THREADS_PER_SM;
            let recording = dev.record(|| -> Result<(), DdmError> {
                self.sort_and_find_tasks(s, dim, passes)?;
                exclusive_scan(dev, &s.offsets, (np + ns) as u64, &s.sums, &s.total)?;
                sweep_plan::launch(dev, Self::linear(1), &s.work, &s.total, COUNT_MIN_CHUNK)?;
                sweep_count_strided::launch(
                    dev,
                    Self::linear(threads),
                    &self.table,
                    &s.work,
                    &s.total,
                )?;
                Ok(())
            })?;
            if let Some(recording) = recording {
                dev.replay(&recording)?;
                s.count_recording = Some(CountRecording {
                    key,
                    work,
                    recording,
                });
            }
        }
        Ok(dev.read(&s.total)?[0])
    }

    /// Radix passes of a sort in dimension `dim`: only the digits below the largest key
    /// ever installed need sorting.
    fn sort_passes(&self, dim: u32) -> u32 {
        let bound = if dim == 0 {
            self.key_bound
        } else {
            self.end_bound
        };
        (32 - bound.leading_zeros()).div_ceil(8)
    }

    fn sweep_state(&self) -> Result<SweepState, DdmError> {
        let (np, ns) = (self.n_pub as usize, self.n_sub as usize);
        let tile = RADIX_TILE as usize;
        let bisect = self.approach == Approach::Bisect;
        // The sort's tile counts: one column per tile of either pair of lists.
        let tiles = np.div_ceil(tile) + ns.div_ceil(tile) * if bisect { 2 } else { 1 };
        let tasks = np + ns;
        Ok(SweepState {
            sort: SortLists::new(self.dev, np, ns)?,
            pub_sorted: self.dev.alloc((np * self.dims).max(1))?,
            sub_sorted: self.dev.alloc((ns * self.dims).max(1))?,
            hist: self.dev.alloc(tiles.max(1) * RADIX_DIGITS as usize)?,
            digit_total: self.dev.alloc(2 * RADIX_DIGITS as usize)?,
            sums: self.dev.alloc(tasks.div_ceil(SCAN_TILE as usize).max(1))?,
            total: self.dev.alloc(1)?,
            begin: self.dev.alloc(tasks.max(1))?,
            offsets: self.dev.alloc(tasks.max(1))?,
            work: self.dev.alloc(1)?,
            work_written: None,
            count_recording: None,
            per_chunk: self.dev.alloc(1)?,
            out: self.dev.alloc(1)?,
            out_host: self.dev.alloc_host(1)?,
            // (Room for the first pairs only where the engine matches in tiles now; a
            // 1M-region engine never does.)
            tiled_out: self.dev.alloc_host(if self.matches_in_tiles() {
                TILED_FIRST_WORDS
            } else {
                1
            })?,
            tiles: None,
            ends: if bisect {
                Some(EndsState {
                    sort: SortLists::new(self.dev, ns, ns)?,
                    tally: self.dev.alloc(2)?,
                    per_dim: self.dev.alloc(MAX_ESTIMATED_DIMS as usize)?,
                })
            } else {
                None
            },
        })
    }

    /// Sorts, finds the tasks, scans their lengths, reads the work total back to choose
    /// the chunking, then counts and scans the pairs of each chunk (enumeration: each
    /// chunk's pairs land at its offset). Returns (chunks, pairs in all).
    fn sweep_prepare(&mut self, dim: u32) -> Result<(u64, u64), DdmError> {
        self.with_sweep_state(|e, s| e.sweep_prepare_with(s, dim))
    }

    /// Sorts both kinds by their lower bounds in dimension `dim` (`passes` radix
    /// passes), copies their ranges in sorted order and finds each one's run of
    /// candidates (`sweep_keys`, the radix sort, `sweep_gather`, `sweep_tasks`): launches
    /// only.
    fn sort_and_find_tasks(
        &self,
        s: &mut SweepState,
        dim: u32,
        passes: u32,
    ) -> Result<(), DdmError> {
        let dev = self.dev;
        let (np, ns) = (self.n_pub, self.n_sub);
        let sub_at = s.sort.b_at;
        for (first, n, at) in [(0, np, 0), (np, ns, sub_at)] {
            if n > 0 {
                sweep_keys::launch(
                    dev,
                    Self::linear(n),
                    &self.table,
                    first,
                    n,
                    dim,
                    s.sort.keys.at_mut(at),
                    s.sort.vals.at_mut(at),
                )?;
            }
        }
        s.sort
            .sort(dev, [np, ns], passes, [&s.hist, &s.digit_total])?;
        for (first, n, at, sorted) in [(0, np, 0, &s.pub_sorted), (np, ns, sub_at, &s.sub_sorted)] {
            if n > 0 {
                sweep_gather::launch(
                    dev,
                    Self::linear(n),
                    &self.table,
                    first,
                    n,
                    s.sort.vals.at(at),
                    sorted,
                )?;
            }
        }
        if np + ns > 0 {
            sweep_tasks::launch(
                dev,
                Self::linear(np + ns),
                &self.table,
                dim,
                s.sort.keys.at(0),
                s.sort.keys.at(sub_at),
                &s.pub_sorted,
                &s.sub_sorted,
                &s.begin,
                &s.offsets,
            )?;
        }
        Ok(())
    }

    fn sweep_prepare_with(&mut self, s: &mut SweepState, dim: u32) -> Result<(u64, u64), DdmError> {
        let dev = self.dev;
        let tasks = self.n_pub + self.n_sub;
        let passes = self.sort_passes(dim);
        self.sort_and_find_tasks(s, dim, passes)?;
        if tasks == 0 {
            return Ok((0, 0));
        }
        let mut work = work_of(s, &s.sort.vals, tasks);
        exclusive_scan(dev, &s.offsets, tasks as u64, &s.sums, &s.total)?;
        let work_total = dev.read(&s.total)?[0];
        // Enumeration keeps its per-chunk counts 4x fewer than a count's chunks.
        let chunk = EMIT_MIN_CHUNK.max(work_total.div_ceil(1 << MAX_CHUNKS_LOG2));
        let n_chunks = work_total.div_ceil(chunk);
        s.work_written = Some(work);
        work.total = work_total;
        work.chunk = chunk;
        dev.write(&mut s.work, 0, &[work])?;
        if n_chunks == 0 {
            return Ok((0, 0));
        }
        if s.per_chunk.len() < n_chunks as usize {
            s.per_chunk = dev.alloc(n_chunks as usize)?;
        }
        let sums_needed = (n_chunks as usize).div_ceil(SCAN_TILE as usize);
        if s.sums.len() < sums_needed {
            s.sums = dev.alloc(sums_needed)?;
        }
        Self::launch_chunks(n_chunks, |chunk_base, threads| {
            // (Per chunk: `total` is not written.)
            sweep_count::launch(
                dev,
                Self::linear(threads),
                &self.table,
                &s.work,
                chunk_base,
                n_chunks,
                &s.per_chunk,
                &s.total,
                0,
            )
        })?;
        exclusive_scan(dev, &s.per_chunk, n_chunks, &s.sums, &s.total)?;
        let pairs_total = dev.read(&s.total)?[0];
        Ok((n_chunks, pairs_total))
    }
}

/// Pairs copied at once by one host thread when `append_pairs` hands a step's pairs
/// over (64 KB: a step of 32768 regions at RS 100 finds 10^5 to 2 * 10^5 pairs, 13 to
/// 27 parts for 16 threads).
pub const COPY_OUT_PART: usize = 1 << 13;

/// How long the threads gathered to copy a step's pairs out ([`Engine::pairs_into`])
/// spin waiting for the device before they leave: longer than a step of the paper's
/// scale takes on the GPU, short enough that a long wait does not hold the pool.
const COPY_CREW_WAIT: Duration = Duration::from_millis(2);

/// Pool threads gathered, by default, for the next step's staging ([`Engine::set_stage_crew`]).
pub const STAGE_CREW_HELPERS: usize = 7;

/// How long, by default, the threads gathered for the next step's staging spin waiting
/// for it before they leave ([`Engine::set_stage_crew`]), counted from before the device
/// wait of a step (60-150 µs at the paper's 32768 regions): a simulation that steps back
/// to back comes within it; one that does other work between steps gets its cores back.
pub const STAGE_CREW_WAIT: Duration = Duration::from_micros(300);

/// Appends `src` (pairs the GPU has just written into page-locked memory, so none is in
/// a CPU cache) to `out`: many pairs on `crew` (gathered before the device wait, so its
/// threads are up) or on `threads` pool threads gathered now, in parts of
/// [`COPY_OUT_PART`].
fn append_pairs(out: &mut Vec<Pair>, src: Landed, crew: Option<Crew>, threads: usize) {
    let n = src.len();
    out.reserve(n);
    let len = out.len();
    if n < 2 * COPY_OUT_PART {
        src.write_to(0, &mut out.spare_capacity_mut()[..n]);
    } else {
        let parts = out.spare_capacity_mut()[..n]
            .chunks_mut(COPY_OUT_PART)
            .collect();
        let crew = crew.unwrap_or_else(|| Crew::gather(threads.saturating_sub(1), Duration::ZERO));
        crew.map(parts, |i, dst| src.write_to(i * COPY_OUT_PART, dst));
    }
    // SAFETY: `out[len..len + n]` (reserved above) was written element by element
    // through `MaybeUninit::write`, by `write_to` at once or by the parts (the spare
    // capacity cut in order; `run` returns once every part has ended); `Pair` is plain
    // data.
    unsafe { out.set_len(len + n) };
}

/// A step's pairs in a new `Vec` ([`append_pairs`] on all host threads).
fn copy_out(src: &[Pair]) -> Vec<Pair> {
    let mut out = Vec::new();
    append_pairs(
        &mut out,
        Landed::Wide(src),
        None,
        rayon::current_num_threads(),
    );
    out
}

/// Exclusive prefix sums of `buf[..n]` in place; the total goes to `total[0]`.
fn exclusive_scan(
    dev: &Device,
    buf: &Buffer<u64>,
    n: u64,
    sums: &Buffer<u64>,
    total: &Buffer<u64>,
) -> Result<(), GpuError> {
    let shared = SCAN_BLOCK * 8;
    if n <= 4 * SCAN_TILE as u64 {
        // Small: one block scans it all, each thread a contiguous chunk.
        return scan_top::launch(
            dev,
            LaunchConfig::blocks(1, SCAN_BLOCK, shared),
            buf,
            n,
            total,
        );
    }
    let blocks = n.div_ceil(SCAN_TILE as u64).max(1);
    assert!(sums.len() as u64 >= blocks, "scan scratch too small");
    let cfg = LaunchConfig::blocks(blocks as u32, SCAN_BLOCK, shared);
    scan_reduce::launch(dev, cfg, buf, n, sums)?;
    scan_top::launch(
        dev,
        LaunchConfig::blocks(1, SCAN_BLOCK, shared),
        sums,
        blocks,
        total,
    )?;
    // In place: input and output are the same buffer (each thread reads its own items
    // before writing them).
    scan_down::launch(dev, cfg, buf, buf, n, sums)
}

/// Sorts two lists of `(key, value)` pairs, each on its own, by their keys' low
/// `8 * passes` bits: list A at `[0, n_a)` of `keys` (with `vals`) and list B at
/// `[b_at, b_at + n_b)`, `b_at` being `n_a` rounded up to a whole [`RADIX_TILE`], so
/// that both share each launch (a sort of one list passes `n_b = 0`). Stable 8-bit LSD
/// passes (`radix_hist`, `radix_offsets`, `radix_scatter`: three launches each)
/// ping-pong between `[keys, vals]` and `[tmp_keys, tmp_vals]`; after an odd number of
/// passes the result is in the `tmp` pair. Scratch: `[hist, digit_total]`, `hist` of
/// [`RADIX_DIGITS`] words per tile, `digit_total` of two times [`RADIX_DIGITS`].
fn radix_sort(
    dev: &Device,
    bufs: [&Buffer<u32>; 4],
    [n_a, n_b]: [u32; 2],
    passes: u32,
    scratch: [&Buffer<u32>; 2],
) -> Result<(), GpuError> {
    let [keys, vals, tmp_keys, tmp_vals] = bufs;
    let [hist, digit_total] = scratch;
    let tiles_a = n_a.div_ceil(RADIX_TILE);
    let blocks = (tiles_a + n_b.div_ceil(RADIX_TILE)).max(1);
    assert!(
        hist.len() >= (blocks * RADIX_DIGITS) as usize
            && digit_total.len() >= 2 * RADIX_DIGITS as usize,
        "radix scratch too small"
    );
    let lists = if n_b > 0 { 2 } else { 1 };
    for pass in 0..passes {
        let shift = pass * 8;
        let (ki, vi, ko, vo) = if pass % 2 == 0 {
            (keys, vals, tmp_keys, tmp_vals)
        } else {
            (tmp_keys, tmp_vals, keys, vals)
        };
        let cfg = LaunchConfig::blocks(blocks, RADIX_BLOCK, RADIX_HIST_SHARED);
        radix_hist::launch(dev, cfg, ki, n_a, tiles_a, n_b, shift, hist, blocks)?;
        let rows = offsets_rows_per_block(blocks);
        let cfg = LaunchConfig::blocks(lists * (RADIX_DIGITS / rows), RADIX_BLOCK, 0);
        radix_offsets::launch(dev, cfg, hist, blocks, tiles_a, digit_total, rows)?;
        let cfg = LaunchConfig::blocks(blocks, RADIX_BLOCK, RADIX_SCATTER_SHARED);
        radix_scatter::launch(
            dev,
            cfg,
            ki,
            vi,
            ko,
            vo,
            n_a,
            tiles_a,
            n_b,
            shift,
            hist,
            digit_total,
            blocks,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_out_of_many_pairs_equals_a_plain_copy() {
        for n in [
            0,
            10,
            2 * COPY_OUT_PART - 1,
            2 * COPY_OUT_PART,
            3 * COPY_OUT_PART + 17,
        ] {
            let src: Vec<Pair> = (0..n as u32)
                .map(|i| Pair {
                    publication: i,
                    subscription: i.wrapping_mul(2654435761),
                })
                .collect();
            assert_eq!(copy_out(&src), src, "{n} pairs");
            let words: Vec<u32> = src
                .iter()
                .map(|p| (p.publication & 0xFFFF) << 16 | p.subscription & 0xFFFF)
                .collect();
            let mut out = vec![Pair::default(); 5];
            append_pairs(&mut out, Landed::Narrow(&words), None, 4);
            assert_eq!(out.len(), n + 5);
            assert!(out[5..].iter().zip(&src).all(|(o, s)| {
                o.publication == s.publication & 0xFFFF && o.subscription == s.subscription & 0xFFFF
            }));
        }
    }

    #[test]
    fn a_narrow_pair_keeps_both_indices_up_to_the_narrow_limit() {
        use ddm_region_kernels::tiled::pack_narrow;
        for (p, s) in [
            (0, 0),
            (NARROW_MAX - 1, 0),
            (0, NARROW_MAX - 1),
            (40_000, 65_535),
        ] {
            let pair = Pair {
                publication: p,
                subscription: s,
            };
            assert_eq!(unpack_narrow(pack_narrow(pair)), pair);
        }
    }
}
