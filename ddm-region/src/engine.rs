//! The engines: one host driver per approach, written once against [`Device`], so that the
//! same code runs the kernels on the GPU (`gpu-*`) and on the emulator (`emu-*`).
//!
//! - [`Approach::Region`]: §III.B, Phases 1–4.
//! - [`Approach::Grid`]: §III.C, Phases 1–5.
//! - [`Approach::Sweep`]: beyond the paper, a GPU sort-based sweep for a million regions.
//! - [`Approach::Bisect`]: beyond the paper, counting whose cost does not grow with the
//!   pairs: in one dimension, two binary searches per region over the sorted end points
//!   (after Marzolla, Birolo, D'Angelo & Fariselli 2024); in several, the sweep on the
//!   dimension a sample says has the fewest candidates, in strips of a second dimension
//!   (the paper's grid, §III.C, in one dimension: [`plan_strips`]); for small sets (the paper's
//!   32768 regions a step), sorted tiles of publications swept in shared memory, two
//!   launches and one wait where the sorts and sweep take about twenty launches and
//!   one wait (a count) or more (the pairs).
//!
//! The code is in three parts beside the engine's state here: `step` (a time step,
//! Phases 1–5), `load` (a whole region set at once) and `sweep` (counting and enumerating
//! every pair: sort, sweep, binary search, sorted tiles).
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
//! - host staging: before, two or three passes on rayon's pool (keys in `last`, then
//!   writes); now, for an ordered batch (every kind by index, no removal: the scenarios'
//!   and [`UpdateBatch::everything`]'s), one pass, no keys, no record when dense, the
//!   ranges by streaming stores, on pool threads gathered before the previous step's wait
//!   ([`Engine::set_stage_crew`]); other batches as before;
//! - copies in: before, 2 (records, ranges; page-locked): 24 bytes per region in 2-D; now
//!   1 for a dense batch (every region, in order: the ranges alone, 16 bytes per region;
//!   the kernels make the records), 2 otherwise;
//! - kernels: before, 6 (clear, unmap, compact, commit, map, match); now 5:
//!   `clear_and_unmap`, `commit_and_compact`, map, match, `publish_step`
//!   ([`Engine::set_fused`]);
//! - copies out: before, 2 (status, pairs), each followed by a wait; now 0: `publish_step`
//!   writes into mapped host memory;
//! - waits: before, 1 at the start (idle: nothing queued) + 2; now 1 at the start (idle) + 1;
//! - answer handed over: before, one copy into a `Vec`; now the same, on all host threads
//!   from 65536 pairs (~10^5 at RS 100);
//! - allocations: the answer's `Vec` only (the pair list and cell lists grow only on
//!   overflow), before and now.
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
    bisect_count, dim_candidates, dim_extents, end_keys, EMPTY_FLAG, EXTENT_HI, EXTENT_WIDTH,
    MAX_ESTIMATED_DIMS, SAMPLE,
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
    sweep_tasks, Strips, SweepWork, MAX_CHUNKS_LOG2,
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

mod load;
mod step;
mod sweep;

#[cfg(test)]
use sweep::append_pairs;
use sweep::{copy_out, radix_sort};

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

/// Threads per SM of the strided count ([`sweep_count_strided()`]): a full SM's worth,
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
    strips: Strips,
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

/// The work description of `n_pub_tasks` publication entries and `n_sub_tasks`
/// subscription entries sorted into `s` (list B placed for them), the sort's keys in
/// `keys` and values in `vals`, swept along `sweep_dim` in `strips` (its totals left 0: [`sweep_plan`] or
/// the host fills them).
fn work_of(
    s: &SweepState,
    [keys, vals]: [&Buffer<u32>; 2],
    sweep_dim: u32,
    strips: Strips,
    [n_pub_tasks, n_sub_tasks]: [u32; 2],
) -> SweepWork {
    let b_at = (SortLists::list_b_at(n_pub_tasks as usize) * std::mem::size_of::<u32>()) as u64;
    SweepWork {
        pub_vals: addr(vals),
        sub_vals: addr(vals) + b_at,
        pub_keys: addr(keys),
        sub_keys: addr(keys) + b_at,
        pub_sorted: addr(&s.pub_sorted),
        sub_sorted: addr(&s.sub_sorted),
        begin: addr(&s.begin),
        offsets: addr(&s.offsets),
        total: 0,
        chunk: 0,
        n_tasks: n_pub_tasks + n_sub_tasks,
        n_pub_tasks,
        sweep_dim,
        strip_dim: strips.dim,
        strip_shift: strips.shift,
        strip_width: strips.width,
        strip_quantum: strips.quantum,
        _pad: 0,
    }
}

/// Fewest strips worth sweeping in ([`Strips`]): with fewer, the bisect engine sweeps the
/// whole space (every region one entry, not two).
pub const MIN_STRIPS: u64 = 4;

/// Candidates a region (whole-space sweep, estimated from the sample) from which the
/// bisect engine sweeps in strips: below, the strips' second entry a region costs more
/// than the candidates it saves. On an H200 (1M 2-D regions, `count_split`), a candidate
/// of the whole-space walk took about 6 ps and an entry of the sort and tasks about
/// 0.2 ns: the scale-up at alpha 1 (about 0.5 candidates a region) counted in 0.28 ms
/// over the whole space and 0.50 ms in strips, at alpha 100 (about 50) in 0.58 and
/// 0.54 ms, the paper's scenario with RS 10 (about 500) in 8.1 and 0.52 ms.
pub const STRIPS_FROM_CANDIDATES: u64 = 32;

/// Most strips the bisect engine cuts a dimension into (2^16: more than a million
/// regions' worth where the ranges are narrow; their keys keep 14 bits or more for the
/// sweep dimension's bounds).
pub const MAX_STRIPS: u64 = 1 << 16;

/// The strips of the bisect engine's sweep of dimension `dim` ([`Strips`]), from the
/// live regions' largest upper bound (`max_hi[d]`) and widest range (`max_width[d]`) in
/// each estimated dimension: in the dimension (other than `dim`) that the widest range
/// cuts into the most strips, strips as wide as that range (wider where there would be
/// more than [`MAX_STRIPS`]), the sweep dimension's bounds in the keys' bits the strips'
/// numbers leave of 31 (by quanta of `2^quantum` where they need more), with the radix
/// passes the keys need; `None` (sweep the whole space) in one dimension or where fewer
/// than [`MIN_STRIPS`] strips would be made.
///
/// ```
/// use ddm_region::plan_strips;
/// // 2-D, the space 10,000 wide, ranges at most 10 wide: 1,002 strips of dimension 1,
/// // the bounds of dimension 0 exact in the low 14 bits of the keys.
/// let (s, passes) = plan_strips(0, &[10_010, 10_010], &[10, 10]).unwrap();
/// assert_eq!((s.dim, s.width, s.shift, s.quantum, passes), (1, 10, 14, 0, 3));
/// // Bounds up to 2^30 in both: 1,025 strips, the bounds by quanta of 2^11.
/// let (s, passes) = plan_strips(1, &[1 << 30, 1 << 30], &[1 << 20, 1 << 20]).unwrap();
/// assert_eq!((s.dim, s.width, s.shift, s.quantum, passes), (0, 1 << 20, 20, 11, 4));
/// // One dimension, or ranges as wide as the space: no strips.
/// assert!(plan_strips(0, &[10_010], &[10]).is_none());
/// assert!(plan_strips(0, &[100, 100], &[90, 90]).is_none());
/// ```
pub fn plan_strips(dim: u32, max_hi: &[u64], max_width: &[u64]) -> Option<(Strips, u32)> {
    let bits = |x: u64| 64 - x.leading_zeros();
    // Every live bound of the sweep dimension below `2^full`.
    let full = bits(*max_hi.get(dim as usize)?);
    (0..max_hi.len().min(max_width.len()))
        .filter(|&d| d != dim as usize)
        .map(|d| {
            let hi = max_hi[d];
            let width = max_width[d].max(1).max(hi / (MAX_STRIPS - 1) + 1);
            // Strip numbers below this (the second entry's too: it is `hi`'s at most).
            (d as u32, width, hi / width + 1)
        })
        .filter(|&(_, _, strips)| strips >= MIN_STRIPS)
        .max_by_key(|&(d, _, strips)| (strips, std::cmp::Reverse(d)))
        .map(|(d, width, strips)| {
            // Keys below `strips << shift`, at most 2^31 (after them, `NO_STRIP`).
            let shift = full.min(31 - bits(strips));
            // Every key + 1 below `2^(8 * passes)`: `NO_STRIP`'s low digits after them.
            let passes = bits(strips << shift).div_ceil(8).clamp(1, 4);
            (
                Strips {
                    dim: d,
                    shift,
                    width: width as u32,
                    quantum: full - shift,
                },
                passes,
            )
        })
}

/// Pairs copied back per window when the sweep engine enumerates.
pub const SWEEP_WINDOW: u64 = 1 << 25;

/// Most pairs `n_pub * n_sub` for which the bisect engine matches in sorted tiles
/// ([`sort_tiles()`], [`tiled_match()`]: two launches and one wait) instead of sorting all
/// regions on the device and sweeping (about twenty launches and one wait);
/// [`Engine::set_tiled_max`] changes it. 2^28 at the paper's 32768 regions a step.
/// Measured with `count_split` (2-D scale-up, when the sorted count still waited three
/// times): a count of 65536 regions (2^30 pairs) took less than half as long in tiles as
/// sorted and swept, and at 131072 regions the sweep took about what the tiles' work
/// (four times 65536's) would (the tiled-steps note of results/notes.toml).
pub const TILED_MAX_PAIRS: u64 = 1 << 31;

/// Blocks [`tiled_match()`] aims at (publication slices times subscription rows): twelve
/// per SM of a 132-SM GPU, when the publications make that many slices of a whole
/// tile each.
pub const TILED_FILL: u32 = 1584;

/// Words of the bisect engine's first [`tiled_match`] landing place (room for 2^16
/// pairs, or 2^17 narrow ones; grown when a step finds more).
const TILED_FIRST_WORDS: usize = 1 << 17;

/// The most publications and subscriptions whose pairs [`tiled_match()`] can hand over as
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
    /// of `SAMPLE x SAMPLE` pairs finds the fewest overlaps (the sweep's candidates), in
    /// strips of another dimension where they pay ([`plan_strips`], [`Strips`]: the
    /// candidates are then the regions near each other in both dimensions).
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

/// Where [`Engine::new`]'s time went (host clock): on a GPU, allocations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NewTimes {
    /// The region table's device buffers (zeroed).
    pub device: Duration,
    /// Page-locked host buffers and the batches' keys (the paper's engines' Phase 1
    /// staging; a sorting engine's is made at its first step).
    pub host: Duration,
    /// The rest: a sorting engine's sort and sweep state, a grid engine's cells.
    pub rest: Duration,
}

/// Where the host's time of the last [`Engine::count`] went (host clock): a GPU's first
/// count may pay what the later ones do not (kernels loaded, memory mapped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CountTimes {
    /// The bisect engine's sample for its sweep dimension (a launch and a wait); zero
    /// when it was known, or in one dimension.
    pub estimate: Duration,
    /// The count's launches queued (on a GPU, recorded and replayed the first time, then
    /// replayed).
    pub queue: Duration,
    /// Waiting for the device and reading the count back.
    pub wait: Duration,
}

/// Where the host's time of the last whole-set [`Engine::load`] on the fast path went
/// (host clock, microseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoadTimes {
    /// Making the page-locked staging of the ranges (a sorting engine's first load; none
    /// with [`Engine::set_pageable_load`]).
    pub staging_us: f64,
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
    /// Room for lists of up to `n_a` and `n_b` pairs (B starting at the tile after A's
    /// last: [`SortLists::list_b_at`]).
    fn new(dev: &Device, n_a: usize, n_b: usize) -> Result<Self, GpuError> {
        let b_at = Self::list_b_at(n_a);
        let n = (b_at + n_b).max(1);
        Ok(SortLists {
            keys: dev.alloc(n)?,
            vals: dev.alloc(n)?,
            tmp_keys: dev.alloc(n)?,
            tmp_vals: dev.alloc(n)?,
            b_at,
        })
    }

    /// Where list B starts after a list A of `n_a` pairs: the tile after A's last (as
    /// [`radix_sort`] takes it).
    fn list_b_at(n_a: usize) -> usize {
        n_a.div_ceil(RADIX_TILE as usize) * RADIX_TILE as usize
    }

    /// Places list B after a list A of `n_a` pairs, for lists of `n_a` and `n_b` pairs
    /// (within the room made), for the keys written next and their sort; returns where
    /// B starts.
    fn place(&mut self, n_a: usize, n_b: usize) -> usize {
        let b_at = Self::list_b_at(n_a);
        assert!(b_at + n_b <= self.keys.len(), "lists past their room");
        self.b_at = b_at;
        b_at
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
    /// The bisect engine's sweep dimension, once estimated (cleared by every step), and
    /// the strips of its sweep with their keys' radix passes ([`plan_strips`]; `None`:
    /// the whole space).
    chosen_dim: Option<u32>,
    chosen_strips: Option<(Strips, u32)>,
    /// Whether the bisect engine sweeps in strips where they pay ([`Engine::set_strips`]),
    /// and from how many whole-space candidates a region ([`Engine::set_strips_from`]).
    strips_on: bool,
    strips_from: u64,
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
    /// [`Engine::new`]'s times.
    new_times: NewTimes,
    /// Whether a fast-path load copies from the set's own memory ([`Engine::set_pageable_load`]).
    pageable_load: bool,
    /// The last count's times.
    count_times: CountTimes,
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
        let started = Instant::now();
        // The step's state (Phase 1's staging, the records, the batches' keys): a
        // sorting engine makes it at its first step, as its whole-set load needs none of
        // it (and the page-locked staging of the load's ranges at its first load).
        let step_n = if approach.sorts() { 0 } else { n };
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
        let staging_dev = dev.alloc(step_n.max(1))?;
        let staging_ranges_dev = dev.alloc((step_n * dims).max(1))?;
        let updates = dev.alloc(step_n.max(1))?;
        let device_done = Instant::now();
        let status_host = dev.alloc_host(2)?;
        let pairs_host = dev.alloc_host(if paper { pair_cap as usize } else { 1 })?;
        let staging = dev.alloc_host(step_n.max(1))?;
        let staging_ranges = dev.alloc_host((step_n * dims).max(1))?;
        // Written now (not left to fault in during the first, timed, step); any key
        // below 1 << 32 is older than every batch.
        let last = (0..step_n).map(|_| AtomicU64::new(1)).collect();
        let host_done = Instant::now();
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
            status_host,
            pairs_host,
            staging,
            staging_ranges,
            staging_dev,
            staging_ranges_dev,
            phase1: Phase1::Copy,
            pageable_load: false,
            updates,
            grid: None,
            sweep: None,
            last,
            threads: rayon::current_num_threads(),
            stage_crew: (STAGE_CREW_HELPERS, STAGE_CREW_WAIT),
            next_crew: None,
            staged_in_parallel: false,
            last_pair_total: 0,
            epoch: 0,
            key_bound: 0,
            end_bound: 0,
            chosen_dim: None,
            chosen_strips: None,
            strips_on: true,
            strips_from: STRIPS_FROM_CANDIDATES,
            tiled_max: TILED_MAX_PAIRS,
            tiled_narrow: true,
            tiled_fill: TILED_FILL,
            slices: Slices::Paper,
            fused: true,
            load_times: LoadTimes::default(),
            new_times: NewTimes::default(),
            count_times: CountTimes::default(),
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
        let sweep_done = Instant::now();
        e.new_times = NewTimes {
            device: device_done - started,
            host: host_done - device_done,
            rest: sweep_done - host_done,
        };
        Ok(e)
    }

    /// About the device memory [`Engine::new`] allocates for these sizes (the region
    /// table; for the sorting engines their sort's and sweep's state, and the bisect
    /// engine's end points; for the paper's engines their overlap matrices and a step's
    /// records): what a program that opens the GPU on a thread of its own can take there
    /// ahead ([`Device::reserve`]) once it knows the sizes, so that the engine's
    /// allocation after the load takes memory already mapped.
    ///
    /// ```
    /// use ddm_region::{Approach, Engine};
    /// // 1M 2-D regions: the table, the sorts' buffers (two entries a region, for the
    /// // strips) and the end points, some 140 bytes a region.
    /// let bytes = Engine::device_bytes(&Approach::Bisect, 2, 500_000, 500_000);
    /// assert!(bytes > 130_000_000 && bytes < 150_000_000);
    /// ```
    pub fn device_bytes(approach: &Approach, dims: usize, n_pub: u32, n_sub: u32) -> u64 {
        let (np, ns, d) = (n_pub as u64, n_sub as u64, dims as u64);
        let n = np + ns;
        // The region table: bounds, alive, epoch, dirty.
        let table = n * (8 * d + 12);
        let rest = match approach {
            Approach::Sweep | Approach::Bisect => {
                // Per sort entry (one a region, two where the sweep may run in strips):
                // keys and values twice, the sorted ranges, task starts and offsets.
                let entries = n * Self::entries_per_region(approach, dims) as u64;
                let sweep = entries * (16 + 8 * d + 16);
                // The bisect engine's end points: both ends of each subscription, sorted.
                let ends = if *approach == Approach::Bisect {
                    32 * ns
                } else {
                    0
                };
                sweep + ends
            }
            Approach::Region | Approach::Grid(_) => {
                // The overlap matrices, the pairs' list, a step's staged records and
                // ranges and its records.
                let (pub_words, sub_words) = (np.div_ceil(32), ns.div_ceil(32));
                4 * (np * sub_words + ns * pub_words) + 8 * 2 * n + n * (8 + 8 * d + 8)
            }
        };
        table + rest
    }

    /// Makes the step's state of a sorting engine at its first step (the others make it
    /// in [`Engine::new`]): Phase 1's page-locked staging of records and ranges, their
    /// device copies, the records on the device, the batches' keys.
    pub(super) fn make_step_room(&mut self) -> Result<(), DdmError> {
        let n = (self.n_pub + self.n_sub) as usize;
        if self.last.len() == n {
            return Ok(());
        }
        self.make_staging_ranges()?;
        let dev = self.dev;
        self.staging = dev.alloc_host(n.max(1))?;
        self.staging_dev = dev.alloc(n.max(1))?;
        self.staging_ranges_dev = dev.alloc((n * self.dims).max(1))?;
        self.updates = dev.alloc(n.max(1))?;
        self.last = (0..n).map(|_| AtomicU64::new(1)).collect();
        Ok(())
    }

    /// Makes the page-locked staging of every region's ranges where it is still missing
    /// (a sorting engine's, at its first load or step); returns whether it was made now.
    pub(super) fn make_staging_ranges(&mut self) -> Result<bool, DdmError> {
        let n = (self.n_pub + self.n_sub) as usize * self.dims;
        if self.staging_ranges.len() >= n.max(1) {
            return Ok(false);
        }
        // (The previous kernels and copies are done with the old one: it is one element.)
        self.dev.synchronize()?;
        self.staging_ranges = self.dev.alloc_host(n.max(1))?;
        Ok(true)
    }

    /// Where [`Engine::new`]'s time went (host clock).
    pub fn new_times(&self) -> NewTimes {
        self.new_times
    }

    /// Sorting engines: whether [`Engine::load`] copies the set's ranges to the device
    /// straight from the set's memory (`true`: the driver stages the pageable memory
    /// itself, no page-locked staging is made) or through the engine's page-locked
    /// staging, filled on all host threads while the previous chunk is copied (`false`,
    /// the default). The same table either way.
    pub fn set_pageable_load(&mut self, on: bool) {
        self.pageable_load = on;
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

    /// Bisect engine: match in sorted tiles ([`tiled_match()`]) when `n_pub * n_sub <=
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

    /// Bisect engine in several dimensions: sweep in strips of a second dimension where
    /// they pay (`true`, the default; [`plan_strips`], [`Engine::set_strips_from`]) or the
    /// whole space (`false`, as
    /// before them: every candidate of the sweep dimension, for an A/B). The same
    /// answers; no effect on the other approaches.
    pub fn set_strips(&mut self, on: bool) {
        self.strips_on = on;
        self.chosen_dim = None;
    }

    /// Bisect engine: sweep in strips where the sample estimates at least `candidates` a
    /// region over the whole space (default [`STRIPS_FROM_CANDIDATES`]; 0: wherever
    /// [`plan_strips`] finds strips). The same answers.
    pub fn set_strips_from(&mut self, candidates: u64) {
        self.strips_from = candidates;
        self.chosen_dim = None;
    }

    /// The strips the bisect engine's sweep of the last count or enumeration used
    /// (`None`: the whole space).
    pub fn strips(&self) -> Option<Strips> {
        self.chosen_dim.and_then(|d| self.strips_for(d).0)
    }

    /// The strips of a sweep of dimension `dim` and the radix passes of its keys: the
    /// chosen ones where they were chosen for `dim`, else none.
    pub(super) fn strips_for(&self, dim: u32) -> (Option<Strips>, u32) {
        match self.chosen_strips {
            Some((strips, passes)) if self.chosen_dim == Some(dim) && self.strips_on => {
                (Some(strips), passes)
            }
            _ => (None, self.sort_passes(dim)),
        }
    }

    /// Entries a region has in the sorting engines' sort (two where the bisect engine
    /// may sweep in strips: several dimensions).
    fn entries_per_region(approach: &Approach, dims: usize) -> usize {
        if *approach == Approach::Bisect && dims >= 2 {
            2
        } else {
            1
        }
    }

    /// True when the bisect engine counts and enumerates in sorted tiles ([`tiled_match()`]).
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
