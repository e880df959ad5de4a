//! Beyond the paper: a pruning matcher on the GPU, [`GpuIndex`]. The paper's kernels
//! (and the batched one) touch every constraint on an event's names, or every filter;
//! today's CPU indexes touch a few hundred filters per event. This one prunes as they
//! do, on the device, for a batch of events at a time.
//!
//! Built from the paper's tables ([`Tables`]: the same name rows, interned strings and
//! filter-major constraints as the batched kernel):
//! 1. **Partitions.** Each filter is filed under the pair of its two rarest names (the
//!    names fewest filters constrain; its one name if it has one), the partitioning of
//!    the CPU name index (`baselines::content_index`, after OpIndex, VLDB 2014). Filters
//!    are stored in partition order with their constraints; an open-addressing table
//!    maps a pair of name rows to its partition's filters
//!    ([`ccm_kernels::index::Partition`]). Within a pair's partition the filters lie in
//!    runs by their third rarest name, and a second table maps each run, a *triple
//!    partition*, to its filters ([`ccm_kernels::index::triple_key`]; filters of fewer
//!    names form runs of their own).
//! 2. **Per event, on the device** ([`ccm_kernels::index::ccm_index_route()`]): a warp
//!    per event probes the partitions of every pair of its names (and every single
//!    name), or, when it has few names ([`IndexConfig::triple_names`]), the triple
//!    partitions of every single, pair and triple of its names (a filter is then visited
//!    only when the event has its three rarest names: on Table 1's model about 8 filters
//!    an event instead of 330), and its lanes sweep their filters laid end to end: a 64-bit name
//!    signature test, then the constraints with SFF's typing rules, or a filter's
//!    *range form* when it has one: a filter whose constraints are all integer
//!    comparisons on at most five names keeps per name the interval they allow (exact
//!    under SFF's signed comparison of two integers), tested against the event's
//!    integers staged in shared memory, as the filter-major kernel does below with the
//!    intervals in registers. A filter whose interface already matched the event is
//!    skipped, as SFF does. Where the last launch's walk visited many filters per
//!    event (hot names' long partitions, [`IndexConfig::heavy_walk`]), each event gets
//!    several warps, which share its filters.
//! 3. **Dense events** ([`ccm_kernels::index::ccm_index_dense()`]): an event carrying
//!    most of the names visits most filters, so partitioning cannot prune it; when the
//!    partitions it visits hold more than [`IndexConfig::dense_share`] of all filters,
//!    the route kernel hands it to a filter-major kernel that reads each filter once
//!    per chunk of such events instead of once per event (comparing the range form's
//!    values as `i32` where every bound allows it exactly,
//!    [`ccm_kernels::index::ccm_index_dense_narrow()`], [`IndexConfig::narrow_ranges`]:
//!    the shared memory it reads per filter and event, its bound at 1M filters, halved). When interfaces hold many
//!    filters each (Table 1's model; [`IndexConfig::iface_major_min`]), it hands it
//!    instead to an interface-major kernel
//!    ([`ccm_kernels::index::ccm_index_iface()`]) that tries an interface's filters,
//!    fewest constraints first, and stops at its first match. Where every filter is
//!    integer ranges and its own interface (the REIN / HEM dense model), the filter-major
//!    kernel still reads every filter for every dense event; there the index builds
//!    *value cells* instead ([`IndexConfig::cells`]; the device form of the CPU bit
//!    index, `baselines::bit_index`, after REIN and HEM: [`ccm_kernels::cells`] says which
//!    idea came from where): per name, cells of values cut where they split the name's
//!    bounds evenly, and per cell a bitset of the filters failing anywhere in it, plus
//!    one of every filter constraining the name (failing when the event lacks it); the
//!    bounds inside a cell are compared exactly. A block owns a slice of 1024 filters,
//!    keeps its slice of every cell's bitset and its bounds in shared memory, and
//!    sweeps a batch of events, a warp per event: one OR of a word per name and lane,
//!    then the bounds of the event's cells ([`ccm_kernels::cells::ccm_index_cells()`]).
//!    An event costs the cells about the same whatever its partitions hold, the walk
//!    as much as they hold, so where the cells are built each launch takes either every
//!    event to them, with no partition walk, or the walk with the events beyond
//!    [`IndexConfig::cells_share`] of the filters on the cells, whichever took less
//!    device time per event when last tried ([`IndexConfig::cells_adaptive`]). A third
//!    path takes every event to cells built over the filters in *name order*
//!    ([`IndexConfig::cells_sorted`], [`ccm_kernels::cells::ccm_index_cells_sorted()`]):
//!    sorted by the ascending rows of their names, the filters of a slice share their
//!    first names, so an event that lacks one of them skips the slice (on the dense
//!    model at 1M filters an event of 3-5 names of 20 needs about 110 of the 977
//!    slices), and sets its answers' bits by rank, as the walk does. Where
//!    filters share interfaces (the dense model with ten interfaces), the cells are
//!    built too, and then instead of the interface-major kernel
//!    ([`ccm_kernels::cells::ccm_index_cells_shared()`]): an interface matches when
//!    any of its slots passes, so a warp sets the bits of the interfaces of the slots that pass (one atomic OR per
//!    slice and event when the slice lies in one interface), skips an event whose row
//!    already holds every interface of the slice, and a block whose events all hold the
//!    one interface of its slice returns before copying it; the blocks take the slices
//!    where interfaces begin first (an interface's filters lie fewest constraints
//!    first, the likeliest to match), so an interface that one of its first 1024
//!    filters answers costs its later slices no more than that test.
//! 4. **Answers** ([`ccm_kernels::index::ccm_index_lists()`]): one bit per (event,
//!    interface), so duplicates cost nothing and the answer is ascending by
//!    construction; a thread per event compacts its row into a list of user ids, in one
//!    pass (places reserved per warp); when rows are long (more than 128 interfaces) a
//!    block of warps per event, each warp a segment of the row
//!    ([`IndexConfig::list_warps`]: one warp listing a row of 1M interfaces took 977
//!    dependent steps); with value cells of one filter per interface, from counts per
//!    slice of 1024 filters instead (the cells' own when every event of the launch was
//!    on them, else counted from the rows, [`ccm_kernels::cells::ccm_cells_counts()`]): a
//!    block per event places its slices, then a warp per event and slice lists its 32
//!    words, all at once ([`ccm_kernels::cells::ccm_cells_spans()`],
//!    [`ccm_kernels::cells::ccm_cells_lists()`], [`IndexConfig::cell_lists`]). The
//!    host reads back the lists only ([`Answers`]): their size follows the matches, not
//!    events x interfaces. The DMA engine writes them straight into the answers'
//!    page-locked areas, which a stream matched into one [`Answers`] reuses: with
//!    thousands of answers per event, a second copy on the host cost as much as the
//!    transfer.
//! 5. **Pipeline** ([`GpuIndex::match_batch`]): the index takes an [`EventBatch`] as it
//!    is. Once per batch the host translates the batch's two dictionaries to the
//!    tables' (per name its row, per string its id among the constraints' strings and
//!    its place in the batch's arena: a few names, the distinct strings) and uploads
//!    them with the string arena, beside the staging of the call's first launch; a
//!    later call on a batch of the same dictionaries (a stream matched a range at a
//!    time) finds them on the device. Per launch it copies the launch's attributes and
//!    starts on all cores into page-locked staging, one of three areas in turn, each
//!    with its own device copy, into which the launch is copied once it is queued (or a
//!    slice at a time as the staging goes on, [`IndexConfig::copy_slice`]). On the
//!    device, [`ccm_kernels::batch::ccm_encode_batch()`] encodes the launch's events (its
//!    names' rows, strings' ids, signatures) into the form the kernels above read, so
//!    the host does no work per attribute. Launches alternate between two slots of
//!    device buffers and nothing in a launch waits for the host: the dense kernels'
//!    grids are sized from the launch before (they stride over any count), the answer
//!    lists are written when they fit their buffer (else the host grows it and lists
//!    them again). While the pool stages launch `k + 1`'s events, the host queues
//!    launch `k` (its kernels on the device's stream, once its copy in, on a queue of
//!    its own, has ended; the lists kernel writes each event's span straight into page-locked host
//!    memory), then collects launch `k - 1`'s answers (its lists copied out on a third
//!    queue, once its kernels are done), and then helps with the staging: launch
//!    `k + 1` is staged and copied in while the device matches launch `k`. No copy out waits on the kernels in a queue, where it
//!    could hold up the next copy in. A call's launches grow from a small first one
//!    ([`IndexConfig::first_launch`], [`IndexConfig::ramp_growth`]), whose staging
//!    nothing overlaps. [`GpuIndex::match_batch_into`] reuses the caller's answer
//!    areas, so a stream writes its answers into page-locked memory already
//!    allocated; [`GpuIndex::match_events`] takes heap events, converted once.
//!
//! Updates without a rebuild ([`GpuIndex::add`], [`GpuIndex::remove`]): a removed
//! filter is marked removed in place on the device (one 16-byte write; every kernel
//! skips it); added filters are partitioned, at the next match, into a second, small
//! partition table on the device that every event walks too (one more launch of the
//! partition walk). A filter of an interface the index has not seen, or with a name it
//! has not seen, and a small table grown past a sixteenth of the index, cost a full
//! build at the next match (on the host, in parallel; see its time in the harness's
//! Table 2). [`GpuIndex::updates`] tells which happened.

use crate::batch::{Attr, EventBatch};
use crate::engine::{room as room_of, CcmError};
use crate::layout::{SubId, Tables};
use crate::model::{Event, InterfaceId, Subscription};
use crate::value_cells::HostCells;
use ccm_kernels::batch::{ccm_encode_batch, BatchAttr, BatchInput, BatchStr, ENCODE_BLOCK, NO_ROW};
use ccm_kernels::cells::{
    ccm_cells_counts, ccm_cells_lists, ccm_cells_spans, ccm_index_cells, ccm_index_cells_shared,
    ccm_index_cells_sorted, cell_list_warps, cell_shared_bytes, CellEdge, CellSlice, CellTables,
    CELL_LIST_BLOCK, CELL_SPANS_SHARED,
};
use ccm_kernels::index::{
    ccm_index_answers, ccm_index_dense, ccm_index_dense_narrow, ccm_index_iface, ccm_index_lists,
    ccm_index_route, dense_shared_bytes, is_narrow, pair_key, route_shared_bytes, slot_of,
    triple_key, IndexEvents, IndexFilter, IndexRange, IndexTables, Partition, DENSE_CHUNK,
    EMPTY_KEY, IFACE_WARPS, LIST_SHARED, LIST_WARPS, LIST_WORDS, MAX_RANGES, NO_THIRD, RANGE_ROWS,
    REMOVED, TRIPLE_NAMES, WALK_WORDS, WARP_BLOCK,
};
use ccm_kernels::{
    DevAttr, DevConstraint, DevEvent, NO_STR, OP_EQ, OP_GE, OP_GT, OP_LE, OP_LT, TY_INT,
};
use gpu_kernels::crew::par_copy;
use gpu_kernels::{Buffer, Device, HostBuffer, LaunchConfig, Mark, Queue, Ramp, Signal};
use rayon::prelude::*;
use std::ops::Range;
use std::time::{Duration, Instant};

// The batch's attributes are copied to the device as they are: the host's record and
// the kernel's are one layout.
const _: () = assert!(
    std::mem::size_of::<Attr>() == std::mem::size_of::<BatchAttr>()
        && std::mem::align_of::<Attr>() == std::mem::align_of::<BatchAttr>()
);

/// Tuning of [`GpuIndex`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexConfig {
    /// An event whose partitions hold more than this share of all filters is matched
    /// by the filter-major kernel (0.125).
    pub dense_share: f64,
    /// Most events per launch (131072); fewer when the answer bitmap (one bit per event
    /// and interface) would pass [`IndexConfig::bitmap_bytes`]. A call with more events
    /// stages the next launch's while the device matches this one's. (On the H200,
    /// Table 2's events went 4.3 ns an event at best in launches of 131072, 6.0 in
    /// launches of 65536, timed as the harness times them: each launch's staging and
    /// fixed costs are the host's share now that the walk is short.)
    pub batch_events: usize,
    /// Most bytes of the answer bitmap (1 GiB: with the dense model's million interfaces,
    /// launches of 8,589 events; on the H200 its events of 3-5 names of 20 took about 534
    /// ns an event of walk in such launches against 768 in launches of 2,147, with 256
    /// MiB, where each event gets three warps: 1.233 against 1.427 us an event in all,
    /// `dense_lists`, one seed).
    pub bitmap_bytes: usize,
    /// Threads per block of the partition walk, a warp per event (128: on the H200,
    /// Table 2's device time per event 4.4 ns with uniform names and 19.8 with Zipf's,
    /// against 4.7 and 21.6 with 256).
    pub route_block: u32,
    /// Warps the partition walk keeps busy at least (8448: 64 per SM of an H100): a
    /// launch of fewer events gives each event several warps.
    pub walk_warps: usize,
    /// Threads per block of the filter-major kernel (256).
    pub dense_block: u32,
    /// Warps per event of the answer lists when an event's row of answer bits is longer
    /// than [`LIST_WORDS`] words (more than 128 interfaces): a block of this many warps
    /// per event, each listing a segment of the row (16, at most [`LIST_WARPS`]; fewer
    /// when the row has fewer runs of 32 words). With one, a warp lists a whole row: at
    /// 1M interfaces, 977 dependent steps of 32 words per event.
    pub list_warps: u32,
    /// Whether the filter-major kernel compares the range form's values as `i32` when
    /// every bound of every range allows it exactly
    /// ([`ccm_kernels::index::ccm_index_dense_narrow()`]: half the shared memory read per
    /// filter and event); `true`. With `false`, always as `i64`.
    pub narrow_ranges: bool,
    /// Dense events go to the interface-major kernel, which stops at an interface's
    /// first match, instead of the filter-major one when interfaces hold at least this
    /// many filters on average (32; Table 1's model has thousands, the dense model one).
    pub iface_major_min: usize,
    /// Each event gets at least [`IndexConfig::heavy_warps`] warps of the partition walk
    /// when the events the walk took in the launch before tried at least this many
    /// filters each on average (the walk's load: hot names' long partitions walked to
    /// their end; warps that stop early, once every interface matched, try fewer). 512:
    /// on the pair partitions, Table 2's events visited about 320 filters an event with
    /// uniform names and 780 with Zipf's (the emulator's count), which went faster on
    /// the H200 with one warp each and with four respectively (`warps_per_event`).
    pub heavy_walk: u32,
    /// Warps per event of the partition walk for heavy walks (4; at most 8).
    pub heavy_warps: usize,
    /// A call's first launch holds at most this many events (16384, an eighth of a
    /// full launch): nothing overlaps its staging. (On the H200, calls of 262,144 of
    /// Table 2's events went 5.6 ns per event at best from 16384, 5.8 from 8192 and from
    /// a full launch, 6.8 from 4096: small launches fill the device less.)
    pub first_launch: usize,
    /// Events of at most this many names walk the triple partitions (each filter filed
    /// also under its three rarest names, within its pair's partition: an event visits
    /// only the filters whose three rarest names it has), the others the pairs'; 5, at
    /// most [`TRIPLE_NAMES`]; 0: every event walks the pairs'. (On Table 1's model an
    /// event visits about 8 filters so instead of 330 with uniform names, 270 instead of
    /// 830 with Zipf's: Monte Carlo counts of the generator's model.)
    pub triple_names: u32,
    /// Attributes per copy to the device queued as a launch's staging goes, each slice's
    /// copy running while the next is staged; 0 (the default): the whole launch copied
    /// once it is queued. (On the H200, Table 2's events at best: in launches of 131072,
    /// 4.3 ns an event copied whole, 5.4 in slices of 65536; in launches of 65536, 6.0
    /// copied whole, 5.1 in slices of 65536, 6.0 in slices of 262144, 10.8 in slices of
    /// 16384: each slice's copy into staging is a fork-join of the pool.)
    pub copy_slice: usize,
    /// Each launch of a call holds this many times the events of the one before (2.0),
    /// up to a full launch: a launch's staging overlaps the device's work on the one
    /// before, so it should not take much longer (1.5 and 1.25 were no faster on the
    /// H200: more, smaller launches).
    pub ramp_growth: f64,
    /// Whether dense events go to the value cells ([`ccm_kernels::cells::ccm_index_cells()`]:
    /// per name, cells of values with a bitset of the filters failing in each, the
    /// device form of the CPU bit index) instead of the filter-major or interface-major
    /// kernel, where the index can build them: every filter integer ranges (its range
    /// form, bounds inside `i32`; the dense model), each its own interface or interfaces
    /// sharing filters (module docs, step 3); `true`.
    pub cells: bool,
    /// With the value cells, in a launch with the partition walk, an event whose
    /// partitions hold more than this share of all filters is matched on them
    /// ([`IndexConfig::dense_share`] otherwise); 0.125. 0.0 (or less): every event on the
    /// cells, with no partition walk, in every launch (in name order where built,
    /// [`IndexConfig::cells_sorted`]).
    pub cells_share: f64,
    /// With the value cells (and [`IndexConfig::cells_share`] above 0), whether each
    /// launch chooses between every event on the cells, with no partition walk, the walk
    /// with the events beyond `cells_share` on the cells, and (where built) every event
    /// on the cells in name order ([`IndexConfig::cells_sorted`]), by the device time per
    /// event each took when last tried: each is tried first, then the fastest is taken
    /// but in one launch of 32, which tries another again (one more than a quarter slower
    /// only one round in four); `true`. An event costs the
    /// cells about the same whatever its partitions hold, the walk as much as they hold:
    /// on the H200, the dense model's events of 3-5 names of 20 took the walk 43.6 ns an
    /// event of device time at 100k filters against 69.8 on the cells, 742 against 754
    /// at 1M (where the walk's tables outgrow the cache). With `false`, every launch
    /// walks.
    pub cells_adaptive: bool,
    /// Threads per block of the value cells' kernel, a warp per event (512).
    pub cell_block: u32,
    /// Events per block of the value cells' kernel (1024): each block first copies its
    /// slice's bitsets and bounds into shared memory, so fewer events per block copy
    /// more often, and more leave fewer blocks to fill the device.
    pub cell_events: u32,
    /// Most bytes of shared memory per block of the value cells' kernel (112 KiB: two
    /// blocks per SM of an H100 or H200); the cells per name are the most that fit.
    pub cell_shared: u32,
    /// Most cells per name (64).
    pub cell_max: u32,
    /// With value cells of one filter per interface (and no filter added since the
    /// build), the answer lists are made from counts per slice of the cells' filters (the
    /// cells' own when every event of the launch was on them, else counted from the rows,
    /// [`ccm_kernels::cells::ccm_cells_counts()`]; then
    /// [`ccm_kernels::cells::ccm_cells_spans()`], [`ccm_kernels::cells::ccm_cells_lists()`]:
    /// a warp per event and slice of 32 words, all at once) instead of by
    /// [`ccm_kernels::index::ccm_index_lists()`]' block per event, whose warps each walk a
    /// segment of the row; `true`.
    pub cell_lists: bool,
    /// Whether the value cells keep, per group of four names, the union of the absent
    /// cells of every subset of them, so that the names an event lacks cost one OR per
    /// group instead of one each (the CPU bit index's groups of names; 16 unions of 32
    /// words per group in a block's shared memory, which leaves fewer cells per name);
    /// `false` (on the H200 the dense model's cells took longer with them at every size
    /// and x: at 1M filters, 20 names, 1419 against 1107 ns an event of the cells' kernel,
    /// 4 names 753 against 744 on launches the index chose, `dense_lists`, one seed).
    pub cell_groups: bool,
    /// With value cells of one filter per interface, whether the index also builds them
    /// over the filters in *name order* (sorted by the ascending rows of their names, so
    /// that a slice of 1024 filters shares its first names,
    /// [`ccm_kernels::cells::ccm_index_cells_sorted()`]): an event skips every slice whose
    /// filters all constrain a name it lacks, and sets its answers' bits by their ranks,
    /// so an event of few names costs a few slices; a third path for the launches'
    /// choice ([`IndexConfig::cells_adaptive`]), and the one taken with every event on
    /// the cells ([`IndexConfig::cells_share`] 0); `true`. (On the H200 at 1M filters,
    /// `dense_lists`, one seed: 3-5 names of 20, 600 ns an event of device time against
    /// 867 in interface order, 0.761 against 1.030 us an event in all; 10 names, 919
    /// against 987 ns; 20 names, 1745 against 1172, where the launches take the interface
    /// order.)
    pub cells_sorted: bool,
    /// With every event on the cells in name order, whether their kernel counts each
    /// event's answers per slice of its row (an atomic add per answer, the counts zeroed
    /// before the launch) instead of [`ccm_kernels::cells::ccm_cells_counts()`] reading the
    /// rows after it; `true` (on the H200 at 1M filters, `dense_lists`, one seed, 3-5
    /// names of 20: 0.674 against 0.774 us an event, the lists' device time 200 against
    /// 306 ns).
    pub sorted_counts: bool,
}

impl Default for IndexConfig {
    fn default() -> Self {
        IndexConfig {
            dense_share: 0.125,
            batch_events: 131_072,
            bitmap_bytes: 1 << 30,
            route_block: 128,
            walk_warps: 8448,
            dense_block: 256,
            list_warps: LIST_WARPS,
            narrow_ranges: true,
            iface_major_min: 32,
            first_launch: 16_384,
            ramp_growth: 2.0,
            copy_slice: 0,
            triple_names: TRIPLE_NAMES,
            heavy_walk: 512,
            heavy_warps: 4,
            cells: true,
            cells_share: 0.125,
            cells_adaptive: true,
            cell_block: 512,
            cell_events: 1024,
            cell_shared: 112 << 10,
            cell_max: 64,
            cell_lists: true,
            cell_groups: false,
            cells_sorted: true,
            sorted_counts: true,
        }
    }
}

impl IndexConfig {
    /// The default on the GPU; on the emulator (every lane run on the host) small launches
    /// and blocks, the same kernels.
    pub fn for_device(dev: &Device) -> IndexConfig {
        IndexConfig::for_gpu(dev.is_gpu())
    }

    /// [`IndexConfig::for_device`] for a device known only as a GPU (`true`, e.g. one
    /// still opening) or the emulator.
    pub fn for_gpu(gpu: bool) -> IndexConfig {
        if gpu {
            IndexConfig::default()
        } else {
            IndexConfig {
                batch_events: 64,
                route_block: 64,
                walk_warps: 128,
                dense_block: 64,
                cell_block: 64,
                cell_events: 16,
                first_launch: 8,
                // Several copies per launch, so the slices are exercised.
                copy_slice: 48,
                ..IndexConfig::default()
            }
        }
    }
}

/// Where [`GpuIndex::match_batch`]'s time went, summed over its calls since the last
/// [`GpuIndex::take_timing`] (host clock, but for `device` and `device_encode`). The
/// pipeline overlaps a launch's staging, copies, kernels and answers with those of the
/// launches beside it, so the parts can add up to more than the wall time; `device`
/// against the wall time says how busy the device was.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IndexTiming {
    /// Once per batch (a call on the batch of the call before skips it): the batch's
    /// dictionaries translated to the tables' (names to rows, strings to the
    /// constraints' string ids) and uploaded with its string arena.
    pub dictionaries: Duration,
    /// Copying each launch's attributes and starts on all cores into page-locked
    /// staging memory: the host's only work per event.
    pub stage: Duration,
    /// Queuing each launch's copy of its staged attributes and starts to the device.
    pub copy_in: Duration,
    /// Queuing each launch's kernels.
    pub kernels: Duration,
    /// Of `device`: the encoding kernel ([`ccm_kernels::batch::ccm_encode_batch()`]).
    pub device_encode: Duration,
    /// Of `device`: the partition walk ([`ccm_kernels::index::ccm_index_route()`]).
    pub device_walk: Duration,
    /// Of `device`: the dense events' kernel ([`ccm_kernels::index::ccm_index_dense()`]
    /// or [`ccm_kernels::index::ccm_index_iface()`]).
    pub device_dense: Duration,
    /// Of `device`: the answer lists ([`ccm_kernels::index::ccm_index_lists()`]).
    pub device_lists: Duration,
    /// The kernels by the device's clock, from the encoding's start to the answer
    /// lists' end (copies to and from the device excluded): the device's own time,
    /// which the pipeline hides the host's work behind.
    pub device: Duration,
    /// Collecting each launch's answers: waiting for its kernels (which write its spans),
    /// the copy of its lists into the page-locked area of [`Answers`] (no copy on the
    /// host), its spans recorded.
    pub answers: Duration,
    /// Events matched.
    pub events: usize,
    /// Launches.
    pub launches: usize,
    /// Time the device's thread spent, its launch done, on the next launch's staging
    /// (helping with it, or waiting for its last parts): the staging the device's work
    /// did not hide.
    pub waited: Duration,
    /// Launches whose page-locked staging had to be allocated or grown first.
    pub staging_grown: usize,
    /// Events the partition walk handed to the filter-major or interface-major kernel
    /// (dense events).
    pub dense_events: usize,
    /// Groups of 32 filters in the partitions the walked (not dense) events visited.
    pub walk_groups: usize,
    /// Launches with every event on the value cells, with no partition walk
    /// ([`IndexConfig::cells_adaptive`]).
    pub cells_launches: usize,
    /// Of `cells_launches`: those on the cells in name order ([`IndexConfig::cells_sorted`]).
    pub sorted_launches: usize,
}

impl IndexTiming {
    /// Counts a launch staged as `st`.
    fn note(&mut self, st: &Staged) {
        self.launches += 1;
        self.staging_grown += st.grown as usize;
    }
}

/// The answers of a batch: for event `i`, [`Answers::get`]`(i)` is the ascending list
/// of the interfaces it matches.
///
/// The lists lie where the device wrote them: one page-locked area per launch, copied
/// into by the DMA engine without a second copy on the host. Matching into the same
/// `Answers` again ([`GpuIndex::match_batch_into`]) reuses its areas (each grows only
/// when a launch has more answers than it holds), so a stream matched batch after
/// batch allocates nothing in the steady state.
#[derive(Default)]
pub struct Answers {
    /// Per event: its launch's area, first place in it, count.
    spans: Vec<(u32, u32, u32)>,
    areas: Vec<HostBuffer<u32>>,
    /// Areas holding this batch's answers (the others are kept for reuse).
    used: usize,
    total: usize,
}

impl std::fmt::Debug for Answers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answers")
            .field("events", &self.len())
            .field("total", &self.total)
            .finish()
    }
}

impl Answers {
    /// Number of events answered.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The interfaces event `i` matches, ascending.
    pub fn get(&self, i: usize) -> &[InterfaceId] {
        let (area, at, n) = self.spans[i];
        if n == 0 {
            return &[];
        }
        let ids: &[InterfaceId] = bytemuck::cast_slice(self.areas[area as usize].as_slice());
        &ids[at as usize..at as usize + n as usize]
    }

    /// The answers in event order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[InterfaceId]> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Interfaces answered over all events.
    pub fn total(&self) -> usize {
        self.total
    }

    /// One vector per event.
    pub fn to_vecs(&self) -> Vec<Vec<InterfaceId>> {
        self.iter().map(|a| a.to_vec()).collect()
    }

    /// Forgets the answers, keeping the areas for the next batch.
    fn clear(&mut self) {
        self.spans.clear();
        self.used = 0;
        self.total = 0;
    }

    /// The next launch's area, with room for `total` answers (a kept one when it is
    /// large enough), and its number.
    fn next_area(
        &mut self,
        dev: &Device,
        total: usize,
    ) -> Result<(u32, &mut HostBuffer<u32>), CcmError> {
        let i = self.used;
        let fits = self.areas.get(i).is_some_and(|a| a.len() >= total);
        if !fits {
            let fresh = dev.alloc_host(room_of(total).max(1 << 16))?;
            if i < self.areas.len() {
                self.areas[i] = fresh;
            } else {
                self.areas.push(fresh);
            }
        }
        self.used += 1;
        self.total += total;
        Ok((i as u32, &mut self.areas[i]))
    }
}

/// The host side of the index: what [`GpuIndex`] uploads.
#[derive(Clone, Debug, Default)]
struct HostIndex {
    filters: Vec<IndexFilter>,
    /// `filters[p].sig` for each filter (no sentinel).
    sigs: Vec<u64>,
    constraints: Vec<DevConstraint>,
    parts: Vec<Partition>,
    /// The triple partitions (empty when not `triples`) and each name row's rank by
    /// rarity ([`ccm_kernels::index::triple_key`]).
    parts3: Vec<Partition>,
    row_rank: Vec<u32>,
    /// Every name row is below `NO_THIRD`: the triple partitions are built.
    triples: bool,
    /// Rank (ascending user id) -> user id.
    user_ids: Vec<u32>,
    /// Filter positions in interface order, within an interface fewest constraints
    /// first (the filter-major and interface-major kernels').
    by_iface: Vec<u32>,
    /// Interface of rank `i`: `by_iface[iface_start[i]..iface_start[i + 1]]`.
    iface_start: Vec<u32>,
    /// Filter `p`'s range form: `ranges[range_at[p]..range_at[p + 1]]` (none when it
    /// has none).
    ranges: Vec<IndexRange>,
    range_at: Vec<u32>,
    /// Some interface has several filters.
    shared: bool,
    /// Filter position -> its slot in the tables (its [`SubId`]).
    slots: Vec<u32>,
}

/// The interfaces of `t` ranked by user id: (interface -> rank, rank -> user id).
fn ranks(t: &Tables) -> (Vec<u32>, Vec<u32>) {
    let mut order: Vec<u32> = (0..t.iface_ids.len() as u32).collect();
    order.sort_unstable_by_key(|&i| t.iface_ids[i as usize]);
    let mut rank = vec![0u32; order.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i as usize] = r as u32;
    }
    let user_ids = order.iter().map(|&i| t.iface_ids[i as usize].0).collect();
    (rank, user_ids)
}

impl HostIndex {
    /// Partitions the filters `live` (slots of `t`) with interface `i` of `t` ranked
    /// `rank[i]` (module docs, step 1); `user_ids` = rank -> user id.
    fn build(t: &Tables, live: &[u32], rank: &[u32], user_ids: Vec<u32>) -> HostIndex {
        let cons = |f: u32| {
            let s = t.filter_start[f as usize] as usize;
            &t.fconstraints[s..s + t.size_f[f as usize] as usize]
        };
        // Filters per name row (a name counted once per filter).
        let mut freq = vec![0u32; t.rows.len()];
        let mut rows_of: Vec<Vec<u32>> = live
            .par_iter()
            .map(|&f| {
                let mut r: Vec<u32> = cons(f).iter().map(|c| c.key).collect();
                r.sort_unstable();
                r.dedup();
                r
            })
            .collect();
        for r in &rows_of {
            for &x in r {
                freq[x as usize] += 1;
            }
        }
        // Triple partitions need every row below `NO_THIRD`.
        let triples = t.rows.len() < NO_THIRD as usize;
        // (order key, pair key, triple key, filter): filters in the order of their
        // triple keys, so that each pair's partition is a run of its triples'.
        let mut keyed: Vec<(u64, u64, u64, u32)> = rows_of
            .par_iter_mut()
            .zip(live)
            .map(|(r, &f)| {
                r.sort_unstable_by_key(|&x| (freq[x as usize], x));
                let (r0, r1) = (r[0], *r.get(1).unwrap_or(&r[0]));
                let pair = pair_key(r0, r1);
                let triple = triple_key(r0, r1, *r.get(2).unwrap_or(&NO_THIRD));
                (if triples { triple } else { pair }, pair, triple, f)
            })
            .collect();
        drop(rows_of);
        keyed.par_sort_unstable();
        // Each row's rank in the order the rarest names were taken in.
        let mut by_rarity: Vec<u32> = (0..t.rows.len() as u32).collect();
        by_rarity.sort_unstable_by_key(|&x| (freq[x as usize], x));
        let mut row_rank = vec![0u32; t.rows.len()];
        for (k, &x) in by_rarity.iter().enumerate() {
            row_rank[x as usize] = k as u32;
        }
        let mut per_iface = vec![0u32; rank.len()];
        let mut filters = Vec::with_capacity(keyed.len() + 1);
        let total: usize = live.iter().map(|&f| t.size_f[f as usize] as usize).sum();
        let mut constraints = Vec::with_capacity(total);
        let mut ranges = Vec::new();
        let mut range_at = Vec::with_capacity(keyed.len() + 1);
        // The filters' range forms, found on all cores.
        let forms: Vec<Option<Vec<IndexRange>>> = keyed
            .par_iter()
            .map(|&(_, _, _, f)| range_form(cons(f)))
            .collect();
        for (&(_, _, _, f), form) in keyed.iter().zip(&forms) {
            range_at.push(ranges.len() as u32);
            if let Some(r) = form {
                ranges.extend_from_slice(r);
            }
            let iface = rank[t.filter_iface[f as usize] as usize];
            per_iface[iface as usize] += 1;
            filters.push(IndexFilter {
                sig: t.filter_sig[f as usize],
                first: constraints.len() as u32,
                iface,
            });
            constraints.extend_from_slice(cons(f));
        }
        filters.push(IndexFilter {
            sig: 0,
            first: constraints.len() as u32,
            iface: 0,
        });
        range_at.push(ranges.len() as u32);
        // The partition tables: at most half full.
        let parts = partition_table(keyed.iter().map(|k| k.1));
        let parts3 = if triples {
            partition_table(keyed.iter().map(|k| k.2))
        } else {
            vec![Partition::default(); 2]
        };
        // Within an interface, the filters likeliest to match (fewest constraints)
        // first: the interface-major kernel stops at an interface's first match.
        let mut by_iface: Vec<u32> = (0..keyed.len() as u32).collect();
        by_iface.par_sort_by_key(|&p| {
            let f = &filters[p as usize];
            (f.iface, filters[p as usize + 1].first - f.first)
        });
        let mut iface_start = Vec::with_capacity(per_iface.len() + 1);
        iface_start.push(0u32);
        for (r, &n) in per_iface.iter().enumerate() {
            iface_start.push(iface_start[r] + n);
        }
        HostIndex {
            slots: keyed.iter().map(|&(_, _, _, f)| f).collect(),
            parts3,
            row_rank,
            triples,
            sigs: filters[..keyed.len()].iter().map(|f| f.sig).collect(),
            filters,
            constraints,
            parts,
            user_ids,
            by_iface,
            iface_start,
            ranges,
            range_at,
            shared: per_iface.iter().any(|&n| n > 1),
        }
    }

    fn n_filters(&self) -> usize {
        self.filters.len() - 1
    }

    /// Filter `p`'s range form (`ranges[range_at[p]..range_at[p + 1]]`).
    fn ranges_of(&self, p: usize) -> &[IndexRange] {
        &self.ranges[self.range_at[p] as usize..self.range_at[p + 1] as usize]
    }
}

/// The open-addressing table (at most half full) of the partitions of filters whose keys,
/// in filter order, are `keys` (each key's filters one run).
fn partition_table(keys: impl Iterator<Item = u64>) -> Vec<Partition> {
    let mut runs: Vec<(u64, u32, u32)> = Vec::new();
    for (i, key) in keys.enumerate() {
        match runs.last_mut() {
            Some(r) if r.0 == key => r.2 = i as u32 + 1,
            _ => runs.push((key, i as u32, i as u32 + 1)),
        }
    }
    let slots = (2 * runs.len()).max(2).next_power_of_two();
    let mask = slots as u32 - 1;
    let mut parts = vec![Partition::default(); slots];
    for (key, first, end) in runs {
        let mut s = slot_of(key, mask);
        while parts[s as usize].key != EMPTY_KEY {
            s = (s + 1) & mask;
        }
        parts[s as usize] = Partition { key, first, end };
    }
    parts
}

/// The range form of a filter's constraints ([`IndexRange`]), when they are all integer
/// comparisons (`=`, `<`, `>`, `<=`, `>=`) on at most [`MAX_RANGES`] names of rows below
/// [`RANGE_ROWS`]: per name the intersection of its constraints' intervals (an empty
/// one, `lo > hi`, matches no integer). SFF compares two integers as signed integers,
/// so an integer attribute satisfies the name's constraints exactly when it lies in
/// the interval.
fn range_form(cons: &[DevConstraint]) -> Option<Vec<IndexRange>> {
    const EMPTY: (i64, i64) = (1, 0);
    let mut out: Vec<IndexRange> = Vec::with_capacity(MAX_RANGES);
    for c in cons {
        if c.ty != TY_INT || c.key >= RANGE_ROWS {
            return None;
        }
        let v = c.val as i64;
        let (lo, hi) = match c.op {
            OP_EQ => (v, v),
            OP_LT => v.checked_sub(1).map_or(EMPTY, |h| (i64::MIN, h)),
            OP_GT => v.checked_add(1).map_or(EMPTY, |l| (l, i64::MAX)),
            OP_LE => (i64::MIN, v),
            OP_GE => (v, i64::MAX),
            _ => return None,
        };
        if let Some(r) = out.iter_mut().find(|r| r.row == c.key) {
            r.lo = r.lo.max(lo);
            r.hi = r.hi.min(hi);
        } else if out.len() < MAX_RANGES {
            out.push(IndexRange {
                lo,
                hi,
                row: c.key,
                pad: 0,
            });
        } else {
            return None;
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The index's tables on the device.
struct DevIndex {
    filters: Buffer<IndexFilter>,
    sigs: Buffer<u64>,
    constraints: Buffer<DevConstraint>,
    cpool: Buffer<u8>,
    parts: Buffer<Partition>,
    parts3: Buffer<Partition>,
    row_rank: Buffer<u32>,
    /// Events of at most this many names probe the triple partitions (0: none).
    triple_names: u32,
    user_ids: Buffer<u32>,
    by_iface: Buffer<u32>,
    iface_start: Buffer<u32>,
    ranges: Buffer<IndexRange>,
    range_at: Buffer<u32>,
    ranged: bool,
    /// Every bound of every range is narrow ([`is_narrow`]): the filter-major kernel may
    /// compare `i32`s ([`ccm_index_dense_narrow`]).
    narrow: bool,
    rows: u32,
    part_mask: u32,
    part3_mask: u32,
    n_filters: u32,
    words: u32,
    shared: bool,
    /// Interfaces; dense events go to the interface-major kernel when set.
    n_ifaces: u32,
    iface_major: bool,
    /// The value cells of the filters, where built ([`HostCells`]).
    cells: Option<DevCells>,
    /// The value cells over the filters in name order ([`IndexConfig::cells_sorted`]),
    /// where built, and their slots' filter positions (one zero without).
    sorted: Option<DevCells>,
    by_names: Buffer<u32>,
}

/// The value cells on the device ([`CellTables`]).
struct DevCells {
    bits: Buffer<u32>,
    cuts: Buffer<i32>,
    edge_at: Buffer<u32>,
    edges: Buffer<CellEdge>,
    rows: u32,
    cells: u32,
    slices: u32,
    edge_max: u32,
    groups: u32,
    /// Interfaces share filters: the slices' interfaces and order (one zero each
    /// without).
    shared: bool,
    order: Buffer<CellSlice>,
    iface_at: Buffer<u32>,
    ifaces: Buffer<u32>,
    bounds: Buffer<u32>,
    /// In name order: each slice's names and each slot's rank (one zero each without).
    sorted: bool,
    need: Buffer<u64>,
    rank: Buffer<u32>,
}

impl DevCells {
    fn upload(dev: &Device, h: &HostCells) -> Result<DevCells, CcmError> {
        Ok(DevCells {
            bits: dev.upload(&h.bits)?,
            cuts: dev.upload(&h.cuts)?,
            edge_at: dev.upload(&h.edge_at)?,
            edges: dev.upload(&h.edges)?,
            rows: h.rows,
            cells: h.cells,
            slices: h.slices,
            edge_max: h.edge_max,
            groups: h.groups,
            shared: h.shared,
            order: dev.upload(&h.order)?,
            iface_at: dev.upload(&h.iface_at)?,
            ifaces: dev.upload(&h.ifaces)?,
            bounds: dev.upload(&h.bounds)?,
            sorted: h.sorted,
            need: dev.upload(&h.need)?,
            rank: dev.upload(&h.rank)?,
        })
    }

    fn tables(&self) -> CellTables<'_> {
        CellTables {
            bits: self.bits.dev_ptr(),
            cuts: self.cuts.dev_ptr(),
            edge_at: self.edge_at.dev_ptr(),
            edges: self.edges.dev_ptr(),
            rows: self.rows,
            cells: self.cells,
            slices: self.slices,
            edge_max: self.edge_max,
            groups: self.groups,
            shared: self.shared as u32,
            order: self.order.dev_ptr(),
            iface_at: self.iface_at.dev_ptr(),
            ifaces: self.ifaces.dev_ptr(),
            bounds: self.bounds.dev_ptr(),
            sorted: self.sorted as u32,
            need: self.need.dev_ptr(),
            rank: self.rank.dev_ptr(),
        }
    }

    fn bytes(&self) -> usize {
        self.bits.bytes()
            + self.cuts.bytes()
            + self.edge_at.bytes()
            + self.edges.bytes()
            + self.order.bytes()
            + self.iface_at.bytes()
            + self.ifaces.bytes()
            + self.bounds.bytes()
            + self.need.bytes()
            + self.rank.bytes()
    }
}

/// The value cells of `h`'s filters for `cfg`, where they can answer its dense events:
/// [`HostCells::build`] accepts them. When every interface of the `n_if` holds one
/// filter, slot `k` (in interface order) is interface `k`; else the cells keep each
/// slot's interface ([`HostCells::with_interfaces`]).
fn cells_of(h: &HostIndex, n_if: usize, cfg: &IndexConfig) -> Option<HostCells> {
    let n = h.n_filters();
    if !cfg.cells {
        return None;
    }
    let cells = HostCells::build(
        n,
        |k| h.ranges_of(h.by_iface[k] as usize),
        cell_block(cfg),
        cfg.cell_shared,
        cfg.cell_max,
        cfg.cell_groups,
    )?;
    if !h.shared && n == n_if {
        Some(cells)
    } else {
        cells.with_interfaces(n, |k| h.filters[h.by_iface[k] as usize].iface)
    }
}

/// The value cells of `h`'s filters in name order ([`IndexConfig::cells_sorted`]) and
/// their slots' filter positions, where the cells in interface order are one filter per
/// interface (`plain`) and [`HostCells::build`] accepts them. Name order: by the
/// ascending rows of a filter's range form (a filter's names before those of any filter
/// whose names begin with them), then by interface rank.
fn sorted_cells_of(h: &HostIndex, plain: bool, cfg: &IndexConfig) -> Option<(Vec<u32>, HostCells)> {
    if !(cfg.cells && cfg.cells_sorted && plain) {
        return None;
    }
    let n = h.n_filters();
    // A filter's rows ascending, six bits each (row + 1, below `RANGE_ROWS` + 1), first
    // row highest: a shorter list of rows sorts before the lists it begins.
    let key = |p: usize| {
        let mut rows: Vec<u32> = h.ranges_of(p).iter().map(|r| r.row + 1).collect();
        rows.sort_unstable();
        let digits = rows
            .iter()
            .chain(std::iter::repeat(&0))
            .take(MAX_RANGES)
            .fold(0u64, |k, &r| k << 6 | u64::from(r));
        digits << 32 | u64::from(h.filters[p].iface)
    };
    let mut by_names: Vec<u32> = (0..n as u32).collect();
    by_names.par_sort_by_cached_key(|&p| key(p as usize));
    let cells = HostCells::build(
        n,
        |k| h.ranges_of(by_names[k] as usize),
        cell_block(cfg),
        cfg.cell_shared,
        cfg.cell_max,
        cfg.cell_groups,
    )?;
    let filter = |k: usize| &h.filters[by_names[k] as usize];
    let cells = cells.with_names(n, |k| filter(k).sig, |k| filter(k).iface);
    Some((by_names, cells))
}

/// Threads per block of the value cells' kernel.
fn cell_block(cfg: &IndexConfig) -> u32 {
    cfg.cell_block.clamp(32, 1024) / 32 * 32
}

impl DevIndex {
    /// `h` (filters of `t`) on `dev`, its answers `n_if` interfaces wide, events of at
    /// most `triple_names` names walking the triple partitions (when built), its value
    /// cells (in interface order, and in name order with its slots' filters) where built.
    #[allow(clippy::too_many_arguments)]
    fn upload(
        dev: &Device,
        h: &HostIndex,
        t: &Tables,
        n_if: usize,
        iface_major: bool,
        triple_names: u32,
        cells: Option<&HostCells>,
        sorted: Option<&(Vec<u32>, HostCells)>,
    ) -> Result<DevIndex, CcmError> {
        Ok(DevIndex {
            cells: cells.map(|c| DevCells::upload(dev, c)).transpose()?,
            sorted: sorted.map(|(_, c)| DevCells::upload(dev, c)).transpose()?,
            by_names: dev.upload(&non_empty(sorted.map_or(&[][..], |(b, _)| b)))?,
            filters: dev.upload(&h.filters)?,
            sigs: dev.upload(&non_empty(&h.sigs))?,
            constraints: dev.upload(&non_empty(&h.constraints))?,
            cpool: dev.upload(&non_empty(&t.pool))?,
            parts: dev.upload(&h.parts)?,
            parts3: dev.upload(&h.parts3)?,
            row_rank: dev.upload(&non_empty(&h.row_rank))?,
            triple_names: if h.triples {
                triple_names.min(TRIPLE_NAMES)
            } else {
                0
            },
            user_ids: dev.upload(&non_empty(&h.user_ids))?,
            by_iface: dev.upload(&non_empty(&h.by_iface))?,
            iface_start: dev.upload(&h.iface_start)?,
            ranges: dev.upload(&non_empty(&h.ranges))?,
            range_at: dev.upload(&h.range_at)?,
            ranged: !h.ranges.is_empty(),
            narrow: h.ranges.iter().all(|r| is_narrow(r.lo, r.hi)),
            rows: t.rows.len() as u32,
            part_mask: h.parts.len() as u32 - 1,
            part3_mask: h.parts3.len() as u32 - 1,
            n_filters: h.n_filters() as u32,
            words: n_if.div_ceil(32).max(1) as u32,
            shared: h.shared,
            n_ifaces: n_if as u32,
            iface_major,
        })
    }

    /// The tables as the kernels take them.
    fn tables(&self) -> IndexTables<'_> {
        IndexTables {
            filters: self.filters.dev_ptr(),
            sigs: self.sigs.dev_ptr(),
            ranges: self.ranges.dev_ptr(),
            range_at: self.range_at.dev_ptr(),
            ranged: self.ranged as u32,
            constraints: self.constraints.dev_ptr(),
            cpool: self.cpool.dev_ptr(),
            parts: self.parts.dev_ptr(),
            part_mask: self.part_mask,
            parts3: self.parts3.dev_ptr(),
            part3_mask: self.part3_mask,
            row_rank: self.row_rank.dev_ptr(),
            triple_names: self.triple_names,
            n_filters: self.n_filters,
            words: self.words,
            shared: self.shared as u32,
            rows: self.rows,
            n_ifaces: self.n_ifaces,
        }
    }
}

/// The buffers of one of the pipeline's two launch slots (a launch on the device while
/// the other's answers are collected), grown as needed.
struct LaunchBufs {
    /// The launch's events and attributes encoded ([`ccm_encode_batch`]).
    events: Buffer<DevEvent>,
    attrs: Buffer<DevAttr>,
    /// `events x words` answer bits (zero between launches: the lists kernel clears).
    bits: Buffer<u32>,
    /// `[count, events..]` handed to the filter-major kernel (the count zero between
    /// launches: the lists kernel clears it).
    dense: Buffer<u32>,
    /// The answers' total (zeroed before each launch).
    total: Buffer<u32>,
    /// The partition walk's groups of 32 filters (zero between launches: the lists
    /// kernel clears it).
    walked: Buffer<u32>,
    /// The answer lists, `total` ids.
    ids: Buffer<u32>,
    /// Per event and slice of the value cells its count of answers, then its first place
    /// in the lists (when every event is on the cells; one word otherwise).
    cell_counts: Buffer<u32>,
    /// With value cells of interfaces sharing filters: per interface the launch's events
    /// whose rows got its bit from the cells (zeroed before each launch; one word
    /// otherwise).
    iface_done: Buffer<u32>,
    /// Per event its first place in the lists and its count, and the launch's count of
    /// dense events and the walk's groups of filters: page-locked host memory the lists
    /// kernel writes (no copy).
    spans_host: HostBuffer<u32>,
    dense_host: HostBuffer<u32>,
}

impl LaunchBufs {
    /// A slot for launches of `per` events, with answers of `words` words per event.
    /// `slices`: of the value cells, 0 without; `ifaces`: interfaces counted on the cells
    /// (0: none).
    fn alloc(
        dev: &Device,
        per: usize,
        words: usize,
        slices: usize,
        ifaces: usize,
    ) -> Result<LaunchBufs, CcmError> {
        Ok(LaunchBufs {
            events: dev.alloc(per)?,
            attrs: dev.alloc(1)?,
            bits: dev.alloc(per * words)?,
            dense: dev.alloc(per + 1)?,
            total: dev.alloc(1)?,
            walked: dev.alloc(WALK_WORDS)?,
            ids: dev.alloc((4 * per).clamp(16, 1 << 16))?,
            cell_counts: dev.alloc((per * slices).max(1))?,
            iface_done: dev.alloc(ifaces.max(1))?,
            spans_host: dev.alloc_host(2 * per)?,
            dense_host: dev.alloc_host(2)?,
        })
    }

    fn bytes(&self) -> usize {
        self.events.bytes()
            + self.attrs.bytes()
            + self.bits.bytes()
            + self.dense.bytes()
            + self.total.bytes()
            + self.walked.bytes()
            + self.ids.bytes()
            + self.cell_counts.bytes()
            + self.iface_done.bytes()
    }
}

/// The pipeline's queues beside the device's stream, which runs the kernels: one copies
/// launches' events in, the other their answer lists out (the spans need no copy).
struct Queues {
    input: Queue,
    output: Queue,
}

impl Queues {
    fn new(dev: &Device) -> Result<Queues, CcmError> {
        Ok(Queues {
            input: dev.queue()?,
            output: dev.queue()?,
        })
    }
}

/// What a collected launch tells the next one: its count of dense events (sizes the
/// dense kernels' grids; all of them after a launch of every event on the value cells)
/// and the filters its walked events tried each, on average (the partition walk's warps
/// per event); and the paths' device times so far ([`PathChoice`]).
#[derive(Clone, Copy, Debug, Default)]
struct Hint {
    dense: u32,
    walk: u32,
    path: PathChoice,
}

/// Launches between two tries of the path not taken ([`PathChoice`]).
const PROBE_EVERY: u32 = 32;

/// [`PathChoice`]: a path measured more than this many times the fastest's device time
/// is tried again in one round of tries in [`SLOW_ROUNDS`] (each try of it costs a launch
/// at its pace). On the H200 at 1M filters of the dense model, the walk and the cells in
/// interface order took 1.37 and 1.44 times the device time of the cells in name order
/// at 3-5 names of 20, the name order 1.49 times the interface order's at 20 names
/// (`dense_lists`, one seed).
const SLOW_PATH: f64 = 1.25;
const SLOW_ROUNDS: usize = 4;

/// A launch's path where the value cells are built: every event on the cells in
/// interface order, the partition walk (events beyond [`IndexConfig::cells_share`] of the
/// filters on those cells), or every event on the cells in name order
/// ([`IndexConfig::cells_sorted`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    Cells = 0,
    Walk = 1,
    Sorted = 2,
}

/// Where the value cells are built and several paths may serve
/// ([`IndexConfig::cells_adaptive`]): the device time per event last measured on each
/// [`Path`] (`ns[path]`), each from a launch of at least half a full launch's events
/// where one was measured (a call's last, short launch pays its fixed costs over fewer
/// events). Each path is tried first, in the order given, then every launch takes the
/// fastest but one in [`PROBE_EVERY`], which tries another again (the others in turn; one
/// measured much slower only one round in [`SLOW_ROUNDS`], [`SLOW_PATH`]): a stream whose
/// events change is followed.
#[derive(Clone, Copy, Debug, Default)]
struct PathChoice {
    ns: [Option<f64>; 3],
    /// Each measure is of a launch of at least half a full launch.
    full: [bool; 3],
    since: u32,
    /// Probes so far (which of the others the next one tries).
    probes: u32,
}

impl PathChoice {
    /// The next launch's path of `paths` (not empty).
    fn next(&mut self, paths: &[Path]) -> Path {
        self.since += 1;
        if let Some(&p) = paths.iter().find(|&&p| self.ns[p as usize].is_none()) {
            return p;
        }
        let ns = |p: &Path| self.ns[*p as usize].unwrap_or(f64::INFINITY);
        let fastest = *paths
            .iter()
            .min_by(|a, b| ns(a).total_cmp(&ns(b)))
            .expect("paths");
        if self.since < PROBE_EVERY || paths.len() < 2 {
            return fastest;
        }
        self.since = 0;
        let others: Vec<Path> = paths.iter().copied().filter(|&p| p != fastest).collect();
        let k = self.probes as usize;
        self.probes += 1;
        let other = others[k % others.len()];
        // A path measured much slower is tried one round in four.
        let slow = ns(&other) > SLOW_PATH * ns(&fastest);
        if slow && !(k / others.len()).is_multiple_of(SLOW_ROUNDS) {
            fastest
        } else {
            other
        }
    }

    /// A launch of `events` on `path` took `ns` per event; a full launch holds `per`
    /// events.
    fn note(&mut self, path: Path, ns: f64, events: usize, per: usize) {
        let i = path as usize;
        let full = 2 * events >= per;
        if full || !self.full[i] {
            self.ns[i] = Some(ns);
            self.full[i] = full;
        }
    }
}

/// The path of a launch of `d` for `cfg`: the walk without cells; every event on the
/// cells (in name order where built) with [`IndexConfig::cells_share`] 0 (or less); else
/// as `choice` says among the cells, the walk and the cells in name order (where built)
/// when [`IndexConfig::cells_adaptive`], the walk otherwise.
fn path_of(d: &DevIndex, cfg: &IndexConfig, choice: &mut PathChoice) -> Path {
    let sorted = d.sorted.is_some();
    if d.cells.is_none() || !cfg.cells {
        Path::Walk
    } else if cfg.cells_share <= 0.0 {
        if sorted {
            Path::Sorted
        } else {
            Path::Cells
        }
    } else if !cfg.cells_adaptive {
        Path::Walk
    } else if sorted {
        choice.next(&[Path::Cells, Path::Walk, Path::Sorted])
    } else {
        choice.next(&[Path::Cells, Path::Walk])
    }
}

/// A launch queued on the device whose answers are not collected yet.
struct InFlight {
    /// Its slot of launch buffers.
    slot: usize,
    events: usize,
    /// Its staging, free again once `done` is reached (its kernels wait for its copy
    /// in).
    staging: Option<HostBufs>,
    /// Its kernels done (on the device's stream): its spans are in host memory.
    done: Signal,
    /// The device's clock before its encoding, after it, after its last kernel.
    marks: [Mark; 6],
    /// Its path (every event on the value cells, or the walk).
    path: Path,
}

/// A call's batch dictionaries on the device, translated to the tables' (kept from call
/// to call, grown as needed).
pub(crate) struct DevDicts {
    /// Per name id of the batch: its row ([`NO_ROW`]: no constraint has the name).
    name_rows: Buffer<u32>,
    /// Per string id of the batch: its bytes in `arena` and its constraint string id.
    strs: Buffer<BatchStr>,
    /// The batch's string bytes (the events' string bytes the kernels compare).
    pub(crate) arena: Buffer<u8>,
    n_names: u32,
    n_strs: u32,
}

impl DevDicts {
    /// Translates `batch`'s dictionaries to `t`'s and uploads them, with the string
    /// arena, into `old`'s buffers where they are large enough.
    pub(crate) fn upload(
        dev: &Device,
        t: &Tables,
        batch: &EventBatch,
        old: Option<DevDicts>,
    ) -> Result<DevDicts, CcmError> {
        let names = batch.names();
        let rows: Vec<u32> = names
            .iter()
            .map(|n| t.names.get(n.as_bytes()).unwrap_or(NO_ROW))
            .collect();
        let strings = batch.strings();
        let strs: Vec<BatchStr> = strings
            .spans()
            .par_iter()
            .with_min_len(4096)
            .enumerate()
            .map(|(i, &(off, len))| BatchStr {
                off,
                len,
                str_id: t.str_id(strings.str_of(i as u32)).unwrap_or(NO_STR),
                pad: 0,
            })
            .collect();
        let arena = strings.arena();
        let (n_names, n_strs) = (
            u32::try_from(rows.len()).map_err(|_| limit("names in a batch", rows.len()))?,
            u32::try_from(strs.len()).map_err(|_| limit("strings in a batch", strs.len()))?,
        );
        let (r, s, a) = match old {
            Some(d) => (Some(d.name_rows), Some(d.strs), Some(d.arena)),
            None => (None, None, None),
        };
        let mut d = DevDicts {
            name_rows: dev.kept_or_grown(r, rows.len(), room_of)?,
            strs: dev.kept_or_grown(s, strs.len(), room_of)?,
            arena: dev.kept_or_grown(a, arena.len(), room_of)?,
            n_names,
            n_strs,
        };
        dev.write(&mut d.name_rows, 0, &rows)?;
        dev.write(&mut d.strs, 0, &strs)?;
        dev.write(&mut d.arena, 0, arena)?;
        Ok(d)
    }

    /// The launch's part of a batch whose starts and attributes are in `starts` and
    /// `attrs` ([`ccm_encode_batch`]'s input), with these dictionaries.
    pub(crate) fn input<'a>(
        &'a self,
        starts: &'a Buffer<u32>,
        attrs: &'a Buffer<BatchAttr>,
        n_events: usize,
    ) -> BatchInput<'a> {
        BatchInput {
            attrs: attrs.dev_ptr(),
            starts: starts.dev_ptr(),
            name_rows: self.name_rows.dev_ptr(),
            strs: self.strs.dev_ptr(),
            n_events: n_events as u32,
            n_names: self.n_names,
            n_strs: self.n_strs,
        }
    }
}

/// A batch too large for the kernels' 32-bit indices.
fn limit(what: &'static str, have: usize) -> CcmError {
    CcmError::Limit {
        what,
        have: have as u64,
        max: u32::MAX as u64,
    }
}

/// A staging area: page-locked host memory where a launch's starts and attributes are
/// staged, and the device buffers they are copied into (which the launch's encoding
/// reads). An area is staged again only once the launch that used it was collected (its
/// copies and kernels ended).
struct HostBufs {
    starts: HostBuffer<u32>,
    attrs: HostBuffer<BatchAttr>,
    dev_starts: Buffer<u32>,
    dev_attrs: Buffer<BatchAttr>,
}

impl HostBufs {
    /// Staging with room for `lens` = (starts, attributes), and slack; copies queued on
    /// `input` wait for the device buffers' allocation (on the device's stream).
    fn alloc(dev: &Device, input: &Queue, lens: (usize, usize)) -> Result<HostBufs, CcmError> {
        let (s, a) = (room_of(lens.0), room_of(lens.1.max(1)));
        let bufs = HostBufs {
            starts: dev.alloc_host(s)?,
            attrs: dev.alloc_host(a)?,
            dev_starts: dev.alloc(s)?,
            dev_attrs: dev.alloc(a)?,
        };
        let allocated = dev.signal(None)?;
        dev.wait(Some(input), &allocated)?;
        Ok(bufs)
    }

    /// Bytes of its device buffers.
    fn device_bytes(&self) -> usize {
        self.dev_starts.bytes() + self.dev_attrs.bytes()
    }

    /// True when the staging holds `lens` = (starts, attributes).
    fn holds(&self, lens: (usize, usize)) -> bool {
        self.starts.len() >= lens.0 && self.attrs.len() >= lens.1
    }
}

/// The pruning matcher on a [`Device`] (GPU or emulator): module docs.
///
/// ```
/// use ccm::{workload, GpuIndex, IndexConfig, Params};
/// use baselines::Matcher;
/// use gpu_kernels::Device;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let params = Params {
///     events: 8,
///     interfaces: 4,
///     constraints_per_filter: (1, 3),
///     filters_per_interface: (3, 6),
///     names: 6,
///     values: 3,
///     ..Params::default()
/// };
/// let w = workload::generate(&params, 7)?;
/// let dev = Device::emulator(); // or Device::gpu(0, ccm::PTX)?
/// let mut index = GpuIndex::new(&dev, &w.subscriptions, IndexConfig::default())?;
/// let answers = index.match_batch(&w.batch)?;
/// let sff = baselines::sff::Sff::build(&w.subscriptions)?;
/// for (e, got) in w.events.iter().zip(answers.iter()) {
///     assert_eq!(got, sff.match_event(e).as_slice());
/// }
/// # Ok(()) }
/// ```
pub struct GpuIndex<'d> {
    dev: &'d Device,
    t: Tables,
    cfg: IndexConfig,
    host: HostIndex,
    d: Option<DevIndex>,
    /// Two launch slots, alternating between launches.
    bufs: [Option<LaunchBufs>; 2],
    /// Staging areas free for a launch's events (three in use at most: the launch being
    /// queued, the one on the device, the next one being staged).
    staging: Vec<HostBufs>,
    /// The queues copying launches in and answers out (made at the first match).
    queues: Option<Queues>,
    /// The last collected launch's count of dense events (sizes the dense kernels'
    /// grids) and walk per event (the partition walk's warps per event).
    dense_hint: Hint,
    /// The last call's batch dictionaries on the device (their buffers reused).
    dicts: Option<DevDicts>,
    /// The dictionaries `dicts` were translated from (`None`: translate at the next
    /// call; the tables changed, or a translation failed).
    dicts_of: Option<DictsSeen>,
    timing: IndexTiming,
    /// Interface (of the tables' `iface_ids`) -> rank, as of the last build.
    rank: Vec<u32>,
    /// Name rows as of the last build.
    rows: usize,
    /// Tables slot -> the built filter's position ([`NOT_BUILT`]: none, or removed).
    at: Vec<u32>,
    /// Slots of the filters added since the last build, matched from `delta`.
    added: Vec<u32>,
    /// The added filters partitioned on the device (`None` when there are none).
    delta: Option<DevIndex>,
    /// `added` changed since `delta` was built.
    delta_stale: bool,
    updates: IndexUpdates,
    /// The pool this index stages launches on and drives its pipeline from
    /// ([`GpuIndex::set_encode_threads`]); `None`: the process's shared pool.
    encode_pool: Option<std::sync::Arc<rayon::ThreadPool>>,
}

/// A [`GpuIndex`] partitioned on the host, not yet on a device ([`IndexPlan::new`]): what
/// [`GpuIndex::from_plan`] uploads. A program that opens the GPU on a thread of its own
/// builds it meanwhile, and waits for the device only to upload it.
pub struct IndexPlan {
    t: Tables,
    cfg: IndexConfig,
    built: Built,
}

impl IndexPlan {
    /// Partitions every live filter of `t` on the host (all cores), with the value cells
    /// or the interface-major layout `cfg` asks for: what [`GpuIndex::from_tables`] does
    /// before its upload. `cfg` is the one the index will have (for a GPU not yet open,
    /// [`IndexConfig::default`]).
    pub fn new(t: Tables, cfg: IndexConfig) -> IndexPlan {
        let built = Built::of(&t, &cfg);
        IndexPlan { t, cfg, built }
    }
}

/// The host's part of a build: the partitions, the interfaces' ranks, the value cells
/// (where they can be built: in interface order, and in name order where filters do not
/// share interfaces) and whether the interface-major kernel runs.
struct Built {
    host: HostIndex,
    rank: Vec<u32>,
    cells: Option<HostCells>,
    sorted: Option<(Vec<u32>, HostCells)>,
    iface_major: bool,
}

impl Built {
    fn of(t: &Tables, cfg: &IndexConfig) -> Built {
        let live: Vec<u32> = (0..t.size_f.len() as u32)
            .filter(|&f| t.size_f[f as usize] > 0)
            .collect();
        let (rank, user_ids) = ranks(t);
        let host = HostIndex::build(t, &live, &rank, user_ids);
        let n_if = host.user_ids.len();
        // The value cells where they can be built, else the interface-major kernel where
        // interfaces hold many filters.
        let cells = cells_of(&host, n_if, cfg);
        let plain = cells.as_ref().is_some_and(|c| !c.shared);
        let sorted = sorted_cells_of(&host, plain, cfg);
        let iface_major = cells.is_none()
            && host.shared
            && host.n_filters() >= cfg.iface_major_min.max(1).saturating_mul(n_if)
            && (n_if as u64) * (per_launch(cfg, 1) as u64) <= i32::MAX as u64;
        Built {
            host,
            rank,
            cells,
            sorted,
            iface_major,
        }
    }
}

/// Staging areas a call's pipeline has in use at most: the launch being queued, the one
/// on the device, the next one being staged ([`GpuIndex::prepare_for`]).
const STAGING_AREAS: usize = 3;

/// No built filter at a tables slot ([`GpuIndex`]'s `at`).
const NOT_BUILT: u32 = u32::MAX;

/// How [`GpuIndex`] has absorbed subscriptions added and removed since it was built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexUpdates {
    /// Full builds so far (the first included).
    pub builds: usize,
    /// Filters added since the last build, matched from the device's second, small
    /// partition table.
    pub added: usize,
    /// Built filters removed in place since the last build (marked removed on the
    /// device: one 16-byte write each).
    pub removed: usize,
}

impl<'d> GpuIndex<'d> {
    /// Lays out `subs`, partitions them and uploads the index.
    pub fn new(dev: &'d Device, subs: &[Subscription], cfg: IndexConfig) -> Result<Self, CcmError> {
        Self::from_tables(dev, Tables::build(subs, false)?, cfg)
    }

    /// The index of tables already laid out (e.g. by a windowed file reader).
    pub fn from_tables(dev: &'d Device, t: Tables, cfg: IndexConfig) -> Result<Self, CcmError> {
        Self::from_plan(dev, IndexPlan::new(t, cfg))
    }

    /// The index of `plan` (partitioned on the host, [`IndexPlan::new`]) uploaded to `dev`.
    pub fn from_plan(dev: &'d Device, plan: IndexPlan) -> Result<Self, CcmError> {
        let IndexPlan { t, cfg, built } = plan;
        let mut ix = GpuIndex {
            dev,
            t,
            cfg,
            host: HostIndex::default(),
            d: None,
            bufs: [None, None],
            staging: Vec::new(),
            queues: None,
            dense_hint: Hint::default(),
            dicts: None,
            dicts_of: None,
            timing: IndexTiming::default(),
            rank: Vec::new(),
            rows: 0,
            at: Vec::new(),
            added: Vec::new(),
            delta: None,
            delta_stale: false,
            updates: IndexUpdates::default(),
            encode_pool: None,
        };
        ix.install(built)?;
        Ok(ix)
    }

    /// Forgets which batch dictionaries are on the device, so that the next call
    /// translates and uploads its batch's (what a call on a new batch pays) even when
    /// they equal the last call's; the device buffers stay for reuse. For timing a pass
    /// as a new batch's: the ranges of one batch matched in turn skip them rightly.
    pub fn forget_dictionaries(&mut self) {
        self.dicts_of = None;
    }

    /// Adds a subscription without a rebuild: the next match partitions the filters
    /// added since the last build into a second, small table on the device, which every
    /// event walks too. The next match rebuilds everything instead when the filter is
    /// the first of its interface (the answer bitmap ranks interfaces by user id), has
    /// a name no filter had at the build, the index was built empty, or the added
    /// filters pass a sixteenth of the built ones (at least 4,096).
    pub fn add(&mut self, s: &Subscription) -> Result<SubId, CcmError> {
        // The tables' names and strings may grow: the next call translates anew.
        self.dicts_of = None;
        let id = self.t.add(s)?;
        let iface = self.t.filter_iface[id.0 as usize] as usize;
        let room = (self.host.n_filters() / 16).max(4096);
        if self.d.is_some()
            && self.host.n_filters() > 0
            && iface < self.rank.len()
            && self.t.rows.len() == self.rows
            && self.added.len() < room
        {
            self.added.push(id.0);
            self.delta_stale = true;
        } else {
            self.d = None;
        }
        Ok(id)
    }

    /// Removes a subscription without a rebuild: a built filter is marked removed on
    /// the device in place ([`ccm_kernels::index::REMOVED`], one 16-byte write); one
    /// added since the build leaves the small table, rebuilt at the next match.
    pub fn remove(&mut self, id: SubId) -> Result<(), CcmError> {
        self.dicts_of = None;
        self.t.remove(id)?;
        let f = id.0 as usize;
        if let Some(i) = self.added.iter().position(|&a| a == id.0) {
            self.added.swap_remove(i);
            self.delta_stale = true;
            return Ok(());
        }
        let p = self.at.get(f).copied().unwrap_or(NOT_BUILT);
        if let (Some(d), true) = (self.d.as_mut(), p != NOT_BUILT) {
            let mut filter = self.host.filters[p as usize];
            filter.iface = REMOVED;
            self.dev.write(&mut d.filters, p as usize, &[filter])?;
            self.host.filters[p as usize] = filter;
            self.at[f] = NOT_BUILT;
            self.updates.removed += 1;
        }
        Ok(())
    }

    /// How the index has absorbed updates since it was built.
    pub fn updates(&self) -> IndexUpdates {
        IndexUpdates {
            added: self.added.len(),
            ..self.updates
        }
    }

    /// The host tables the index was built from.
    pub fn tables(&self) -> &Tables {
        &self.t
    }

    /// Bytes of the index's tables on the device (without the per-launch buffers).
    pub fn device_bytes(&self) -> usize {
        let h = &self.host;
        h.filters.len() * std::mem::size_of::<IndexFilter>()
            + h.sigs.len() * 8
            + h.constraints.len() * std::mem::size_of::<DevConstraint>()
            + (h.parts.len() + h.parts3.len()) * std::mem::size_of::<Partition>()
            + h.row_rank.len() * 4
            + h.user_ids.len() * 4
            + h.by_iface.len() * 4
            + h.iface_start.len() * 4
            + h.ranges.len() * std::mem::size_of::<IndexRange>()
            + h.range_at.len() * 4
            + self.t.pool.len()
            + self.d.as_ref().map_or(0, |d| {
                d.cells.as_ref().map_or(0, DevCells::bytes)
                    + d.sorted.as_ref().map_or(0, DevCells::bytes)
                    + d.by_names.bytes()
            })
    }

    /// Whether the index built value cells for its dense events ([`IndexConfig::cells`]).
    pub fn has_cells(&self) -> bool {
        self.d.as_ref().is_some_and(|d| d.cells.is_some())
    }

    /// Bytes of the per-launch buffers allocated so far (events staged and encoded,
    /// answer bitmap, lists).
    pub fn launch_bytes(&self) -> usize {
        self.bufs
            .iter()
            .flatten()
            .map(LaunchBufs::bytes)
            .sum::<usize>()
            + self
                .staging
                .iter()
                .map(HostBufs::device_bytes)
                .sum::<usize>()
    }

    /// Partitions every live filter of the tables and uploads the index (the filters
    /// added or removed since the last build included).
    fn rebuild(&mut self) -> Result<(), CcmError> {
        let built = Built::of(&self.t, &self.cfg);
        self.install(built)
    }

    /// Uploads the index `built` from the tables.
    fn install(&mut self, built: Built) -> Result<(), CcmError> {
        self.dicts_of = None;
        let Built {
            host,
            rank,
            cells,
            sorted,
            iface_major,
        } = built;
        self.host = host;
        let t = &self.t;
        let h = &self.host;
        let n_if = h.user_ids.len();
        // The old tables' device memory goes before the new ones are uploaded.
        self.d = None;
        self.d = Some(DevIndex::upload(
            self.dev,
            h,
            t,
            n_if,
            iface_major,
            self.cfg.triple_names,
            cells.as_ref(),
            sorted.as_ref(),
        )?);
        self.at = vec![NOT_BUILT; t.size_f.len()];
        for (p, &f) in h.slots.iter().enumerate() {
            self.at[f as usize] = p as u32;
        }
        self.rank = rank;
        self.rows = t.rows.len();
        self.added.clear();
        self.delta = None;
        self.delta_stale = false;
        self.updates = IndexUpdates {
            builds: self.updates.builds + 1,
            ..IndexUpdates::default()
        };
        // The answer bitmap's width may have changed.
        self.bufs = [None, None];
        Ok(())
    }

    /// Partitions the filters added since the last build into the small table (with
    /// its own copy of the tables' string pool, which may have grown since the build).
    fn rebuild_delta(&mut self) -> Result<(), CcmError> {
        self.delta = None;
        self.delta_stale = false;
        if self.added.is_empty() {
            return Ok(());
        }
        let main = self
            .d
            .as_ref()
            .expect("built before the filters added to it");
        let mut live = self.added.clone();
        live.sort_unstable();
        let h = HostIndex::build(&self.t, &live, &self.rank, Vec::new());
        self.delta = Some(DevIndex::upload(
            self.dev,
            &h,
            &self.t,
            main.n_ifaces as usize,
            false,
            self.cfg.triple_names,
            None,
            None,
        )?);
        Ok(())
    }

    /// Most events per launch: [`IndexConfig::batch_events`], fewer when the answer
    /// bitmap would pass [`IndexConfig::bitmap_bytes`]. A caller that times a stream
    /// warms the index with this many events first (its buffers grow to a launch's).
    pub fn launch_events(&self) -> usize {
        let words = (self.host.user_ids.len().div_ceil(32)).max(1) as u32;
        per_launch(&self.cfg, words)
    }

    /// The time split of the calls of [`GpuIndex::match_batch`] since the last call of
    /// this (which resets it).
    pub fn take_timing(&mut self) -> IndexTiming {
        std::mem::take(&mut self.timing)
    }

    /// Matches the events of `batch`, a launch per [`GpuIndex::launch_events`] (or
    /// fewer): the module docs' pipeline (step 5). The answers are fresh page-locked
    /// memory: a stream of calls should use [`GpuIndex::match_batch_into`] with one
    /// [`Answers`], which reuses it.
    pub fn match_batch(&mut self, batch: &EventBatch) -> Result<Answers, CcmError> {
        let mut out = Answers::default();
        self.match_batch_into(batch, &mut out)?;
        Ok(out)
    }

    /// As [`GpuIndex::match_batch`], into `out` (cleared first), whose memory is
    /// reused: a stream matched batch after batch into one [`Answers`] writes its
    /// answer lists into memory already mapped instead of fresh pages each time.
    pub fn match_batch_into(
        &mut self,
        batch: &EventBatch,
        out: &mut Answers,
    ) -> Result<(), CcmError> {
        self.match_range_into(batch, 0..batch.len(), out)
    }

    /// As [`GpuIndex::match_batch_into`], for the events `events` of `batch` only
    /// (answer `i` of `out` is event `events.start + i`'s): a stream held in one batch
    /// is matched a part at a time without copying it. Panics when `events` is not
    /// within the batch, as slicing does.
    pub fn match_range_into(
        &mut self,
        batch: &EventBatch,
        events: Range<usize>,
        out: &mut Answers,
    ) -> Result<(), CcmError> {
        assert!(
            events.start <= events.end && events.end <= batch.len(),
            "events {events:?} of a batch of {}",
            batch.len()
        );
        match self.encode_pool.clone() {
            // The whole call on the index's own pool: every staging inside it stays
            // there ([`on_encode_pool`]).
            Some(pool) => pool.install(|| self.match_on_pool(batch, events, out)),
            // The whole call on the shared pool too, as on a pool of its own: driven
            // from outside, each of its encodings was a job handed to the pool from
            // outside, its threads asleep since the last one (the one-device stream of
            // Table 2's default scenario on the 4-GPU machine ran at 9.5-14.6M
            // events/s so, where a pool of its own of as many threads drove 28-30M).
            None => on_encode_pool(|| self.match_on_pool(batch, events, out)),
        }
    }

    /// Matches heap events: [`GpuIndex::match_batch`] of their batch
    /// ([`EventBatch::from_events`], built once, on all cores).
    pub fn match_events(&mut self, events: &[Event]) -> Result<Answers, CcmError> {
        self.match_batch(&EventBatch::from_events(events))
    }

    /// Matches heap events into `out`: [`GpuIndex::match_batch_into`] of their batch.
    pub fn match_events_into(
        &mut self,
        events: &[Event],
        out: &mut Answers,
    ) -> Result<(), CcmError> {
        self.match_batch_into(&EventBatch::from_events(events), out)
    }

    /// Readies the index for a stream of batches like `sample` before its first call:
    /// the queues made, and the three staging areas a call's pipeline uses with room for
    /// full launches of events like the sample's (as many attributes an event, with
    /// slack), which the first call would otherwise allocate (page-locked) between its
    /// launches. A launch that needs more grows its area as before. Returns the areas
    /// made.
    pub fn prepare_for(&mut self, sample: &EventBatch) -> Result<usize, CcmError> {
        if self.queues.is_none() {
            self.queues = Some(Queues::new(self.dev)?);
        }
        let n = sample.len();
        if n == 0 {
            return Ok(0);
        }
        let per = self.launch_events();
        let full = sample.attr_range(0..n).len().saturating_mul(per) / n;
        let input = &self.queues.as_ref().expect("made").input;
        let mut made = 0;
        while self.staging.len() < STAGING_AREAS {
            let area = HostBufs::alloc(self.dev, input, (per + 1, full.max(1)))?;
            self.staging.push(area);
            made += 1;
        }
        Ok(made)
    }

    /// Gives this index a pool of its own of `threads` threads to stage launches on and
    /// drive its pipeline from ([`GpuIndex::match_batch`]), instead of the pool the
    /// process's indexes share (as many threads as rayon's global pool, up to
    /// [`ENCODE_THREADS_MAX`]). For
    /// several indexes driven at once on one host ([`crate::MultiIndex`], a device
    /// each): on one shared pool, a pipeline's driving thread waiting for its staging
    /// could take another device's whole pipeline and run it to its end, so that the
    /// devices' rounds ran one after another. Should the pool not start, the shared one
    /// stays. The same answers either way.
    pub fn set_encode_threads(&mut self, threads: usize) {
        self.encode_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .thread_name(|i| format!("ccm-encode-own-{i}"))
            .build()
            .ok()
            .map(std::sync::Arc::new);
    }

    /// [`GpuIndex::match_range_into`] on the pool it runs on.
    fn match_on_pool(
        &mut self,
        batch: &EventBatch,
        events: Range<usize>,
        out: &mut Answers,
    ) -> Result<(), CcmError> {
        if self.d.is_none() {
            self.rebuild()?;
        }
        if self.delta_stale {
            self.rebuild_delta()?;
        }
        out.clear();
        let n = events.len();
        out.spans.reserve(n);
        if self.host.n_filters() == 0 || self.host.user_ids.is_empty() || n == 0 {
            out.spans.resize(n, (0, 0, 0));
            return Ok(());
        }
        let per = self.launch_events();
        let dev = self.dev;
        let GpuIndex {
            t,
            cfg,
            d,
            bufs,
            staging,
            dicts,
            dicts_of,
            timing,
            delta,
            queues,
            dense_hint,
            ..
        } = self;
        let (cfg, d) = (&*cfg, d.as_ref().expect("built"));
        let delta = delta.as_ref();
        if queues.is_none() {
            *queues = Some(Queues::new(dev)?);
        }
        let mut chunks = Ramp::new(events, cfg.first_launch, cfg.ramp_growth, per);
        let Some(first) = chunks.next() else {
            return Ok(());
        };
        // The batch's dictionaries, once per batch: a call on the batch (the same
        // dictionaries) the last call translated finds them on the device already.
        // Translated beside the first launch's staging, which nothing else overlaps.
        let same = dicts.is_some() && dicts_of.as_ref().is_some_and(|s| s.holds(batch));
        if !same {
            *dicts_of = None;
        }
        let old = if same { None } else { dicts.take() };
        let feed = Feed {
            dev,
            input: &queues.as_ref().expect("made").input,
            slice: cfg.copy_slice,
        };
        let (dict, prepared) = rayon::join(
            || -> Result<_, CcmError> {
                if same {
                    return Ok(None);
                }
                let started = Instant::now();
                let dict = DevDicts::upload(dev, t, batch, old)?;
                Ok(Some((dict, DictsSeen::of(batch), started.elapsed())))
            },
            || Staged::prepare(staging.pop(), batch, first.clone(), feed),
        );
        let dict = match dict {
            Ok(d) => d,
            Err(e) => {
                // The first launch's copies may read its staging: let them end first.
                feed.drain();
                return Err(e);
            }
        };
        if let Some((dict, seen, took)) = dict {
            *dicts = Some(dict);
            *dicts_of = Some(seen);
            timing.dictionaries += took;
        }
        let dict = dicts.as_ref().expect("uploaded");
        let (cur, took) = prepared?.ready(feed, batch, per)?;
        timing.stage += took;
        timing.note(&cur);
        let p = Pipe {
            dev,
            d,
            delta,
            dict,
            cfg,
            per,
            queues: queues.as_ref().expect("made"),
        };
        // The launch whose answers are still on the device (outside the pipeline, so
        // that on an error its staging is freed only once the queues have stopped).
        let mut flying: Option<InFlight> = None;
        let r = on_encode_pool(|| {
            pipeline(
                &p,
                chunks,
                cur,
                bufs,
                staging,
                dense_hint,
                timing,
                out,
                batch,
                &mut flying,
            )
        });
        if r.is_err() {
            // Copies may still run on the queues and the buffers' counters may be left
            // mid-launch: stop everything, start afresh.
            *queues = None;
            let _ = dev.synchronize();
            *bufs = [None, None];
        }
        if let Some(mut f) = flying {
            staging.extend(f.staging.take());
        }
        r
    }
}

/// The dictionaries of the batch the device's [`DevDicts`] were translated from (a
/// copy): a later call on a batch that [`DictsSeen::holds`] needs no translation. A
/// copy, not the batch's address: a batch freed and another allocated in its place
/// could have other strings.
struct DictsSeen {
    names: (Vec<(u32, u32)>, Vec<u8>),
    strings: (Vec<(u32, u32)>, Vec<u8>),
}

impl DictsSeen {
    fn of(batch: &EventBatch) -> DictsSeen {
        let copy = |d: &crate::batch::Dictionary| (d.spans().to_vec(), d.arena().to_vec());
        DictsSeen {
            names: copy(batch.names()),
            strings: copy(batch.strings()),
        }
    }

    /// `batch`'s dictionaries are these (the same names and strings, numbered alike).
    fn holds(&self, batch: &EventBatch) -> bool {
        let same = |d: &crate::batch::Dictionary, (spans, arena): &(Vec<(u32, u32)>, Vec<u8>)| {
            d.spans() == spans.as_slice() && d.arena() == arena.as_slice()
        };
        same(batch.names(), &self.names) && same(batch.strings(), &self.strings)
    }
}

/// The pipeline of [`GpuIndex::match_batch`] (module docs, step 5), on the staging pool.
/// Step `k`: this thread queues launch `k` on the device ([`submit`]) and collects launch
/// `k - 1`'s answers ([`collect`]) while the pool stages launch `k + 1`'s events into a
/// spare staging area (`join`); its part done, it helps with that staging instead of
/// waiting for it. So launch `k + 1`'s events are staged while the host queues launch
/// `k`, and copied in while the device matches launch `k` (the copy in of a launch
/// staged only after queuing the one before could hold up the kernels: on the H200,
/// queuing a launch and staging the next took about as long as the device's work on
/// a launch of Table 2). `cur` is the first launch's staged events; the staging areas
/// of collected launches go back to `spare`. Three areas in use at most: launch `k`'s,
/// launch `k - 1`'s (its copy in may still run until it is collected) and launch
/// `k + 1`'s.
#[allow(clippy::too_many_arguments)]
fn pipeline(
    p: &Pipe<'_>,
    mut chunks: Ramp,
    cur: Staged,
    bufs: &mut [Option<LaunchBufs>; 2],
    spare: &mut Vec<HostBufs>,
    hint: &mut Hint,
    timing: &mut IndexTiming,
    out: &mut Answers,
    batch: &EventBatch,
    flying: &mut Option<InFlight>,
) -> Result<(), CcmError> {
    let dev = p.dev;
    let feed = Feed {
        dev,
        input: &p.queues.input,
        slice: p.cfg.copy_slice,
    };
    let mut slot = 0;
    let mut cur = Some(cur);
    while let Some(st) = cur.take() {
        let next = chunks.next();
        // A spare area is free: its launch was collected, so its copy in has ended.
        let area = if next.is_some() { spare.pop() } else { None };
        let started = Instant::now();
        let (done, job) = rayon::join(
            || -> Result<Duration, CcmError> {
                let path = path_of(p.d, p.cfg, &mut hint.path);
                let launched = submit(p, bufs, slot, *hint, path, timing, st)?;
                if let Some(mut prev) = flying.replace(launched) {
                    let hb = prev.staging.take();
                    let r = collect(p, bufs, prev, hint, timing, out);
                    // Its copy in ended before its kernels, which `collect` waited for
                    // (or, on an error, the caller stops the queues before reusing it).
                    spare.extend(hb);
                    r?;
                }
                Ok(started.elapsed())
            },
            || next.map(|c| Staged::prepare(area, batch, c, feed)),
        );
        let collected = match done {
            Ok(c) => c,
            Err(e) => {
                // The next launch's copies may read its staging: let them end first.
                feed.drain();
                return Err(e);
            }
        };
        slot ^= 1;
        if let Some(prepared) = job {
            let (st, took) = prepared?.ready(feed, batch, p.per)?;
            timing.waited += started.elapsed().saturating_sub(collected);
            timing.note(&st);
            timing.stage += took;
            cur = Some(st);
        }
    }
    // The last launch.
    if let Some(mut last) = flying.take() {
        let hb = last.staging.take();
        let r = collect(p, bufs, last, hint, timing, out);
        spare.extend(hb);
        r?;
    }
    Ok(())
}

/// The pool that stages launches for every [`GpuIndex`] of the process and runs its
/// pipeline: as many threads as rayon's global pool. The thread driving the device is
/// one of them ([`GpuIndex::match_batch_into`]), busy with its launch while the others
/// stage the next one, then helping them. (Measured when the host still encoded heap
/// events, the work this pool was sized for: a driving thread beside a pool of one
/// thread fewer than the cores waited 4.2 ns per event of Table 1's default scenario
/// for encodings it could have shared; beside a pool of as many threads as cores, it
/// shared a core with one of them and every launch's encoding waited for that
/// thread's parts: 24-28 instead of 13 ns per event on the H100 machine's 16 cores.)
/// Without a pool (its threads could not be started) everything runs on the global
/// pool. With several devices ([`crate::MultiIndex`]) each device's index has a pool
/// of its own, a share of the cores ([`GpuIndex::set_encode_threads`]): as jobs of this
/// one, a driving thread waiting in its `join` could take another device's whole
/// pipeline and run it to its end.
///
/// At most [`ENCODE_THREADS_MAX`] threads, though: on a host of many cores, one index's
/// stream of Table 1's default scenario ran several times faster on a pool of 16 threads
/// than on one of every core, and encoding alone slowed past 32 threads
/// (`index_pipeline`; the figures are in the CCM scaling notes of results/notes.toml).
///
/// Called on a thread of any rayon pool (an index's own pool, or this one, where the
/// pipeline runs), `f` runs right there, on that pool.
fn on_encode_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    let pool = POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(encode_threads(rayon::current_num_threads()))
            .thread_name(|i| format!("ccm-encode-{i}"))
            .build()
            .ok()
    });
    match pool {
        Some(p) => p.install(f),
        None => f(),
    }
}

/// Most threads an index encodes and drives its pipeline on (`on_encode_pool` says
/// why): the H100 machine's 16 cores, where a pool of every core was the fastest.
pub const ENCODE_THREADS_MAX: usize = 16;

/// Most threads the encoding pools of several indexes driven at once on one host
/// ([`crate::MultiIndex`]) take together: encoding alone on the 4-GPU machine's 64
/// cores went 5.7 ns an event on 32 threads and 14 on 64, and four devices' pools of 16
/// threads drove 7-8M events/s each where two drove 28-30M.
pub const ENCODE_THREADS_HOST_MAX: usize = 32;

/// The threads of an encoding pool given `available` of the host's threads: all of
/// them, up to [`ENCODE_THREADS_MAX`].
pub(crate) fn encode_threads(available: usize) -> usize {
    available.clamp(1, ENCODE_THREADS_MAX)
}

/// The threads of each of `indexes` encoding pools driven at once on a host of
/// `available` threads: an equal share of them, of at most [`ENCODE_THREADS_HOST_MAX`]
/// together and [`ENCODE_THREADS_MAX`] each.
pub(crate) fn encode_threads_shared(available: usize, indexes: usize) -> usize {
    encode_threads(available.min(ENCODE_THREADS_HOST_MAX) / indexes.max(1))
}

/// One launch's events staged in page-locked memory: the buffers, and how many events
/// and attributes they hold (the starts, one more than the events, as the batch holds
/// them; the attributes, as the batch holds them).
struct Staged {
    bufs: HostBufs,
    events: usize,
    attrs: usize,
    /// Its staging allocated or grown first.
    grown: bool,
    /// Its copy to the device queued as it was staged (reached: the copy ended); `None`:
    /// [`submit`] queues it.
    copied: Option<Signal>,
}

/// Where and how a staging copies what it staged to the device: the input queue, and
/// the attributes per copy queued as the staging goes ([`IndexConfig::copy_slice`]; 0:
/// none, [`submit`] copies the whole launch).
#[derive(Clone, Copy)]
struct Feed<'a> {
    dev: &'a Device,
    input: &'a Queue,
    slice: usize,
}

impl Feed<'_> {
    /// Waits until the copies queued on the input queue have ended (so that a staging
    /// they read may be freed), as far as the device still answers.
    fn drain(&self) {
        if let Ok(s) = self.dev.signal(Some(self.input)) {
            let _ = self.dev.reach(&s);
        }
    }
}

/// A launch's events after [`Staged::prepare`]: staged, or not yet, because the staging
/// area was missing or too small (page-locked memory is allocated by the device's
/// thread, in [`Prepared::ready`]). With the time spent.
enum Prepared {
    Staged(Staged, Duration),
    /// The events, and the buffers too small for them.
    Short(Range<usize>, Option<HostBufs>, Duration),
}

impl Prepared {
    /// The staged events: those already staged, or (after allocating room for them)
    /// staged now.
    /// A new area has room for a launch of `per` events with as many attributes each as
    /// these have, so that a stream's areas need not grow again for its full launches.
    fn ready(
        self,
        feed: Feed<'_>,
        batch: &EventBatch,
        per: usize,
    ) -> Result<(Staged, Duration), CcmError> {
        match self {
            Prepared::Staged(st, took) => Ok((st, took)),
            Prepared::Short(events, old, took) => {
                drop(old);
                let started = Instant::now();
                let (s, a) = lens_of(batch, &events);
                let full = a.saturating_mul(per) / events.len().max(1);
                let bufs = HostBufs::alloc(feed.dev, feed.input, (s.max(per + 1), a.max(full)))?;
                let st = on_encode_pool(|| Staged::fill(bufs, batch, events, true, feed))?;
                Ok((st, took + started.elapsed()))
            }
        }
    }
}

/// The staging a launch of `events` of `batch` needs: (starts, attributes).
fn lens_of(batch: &EventBatch, events: &Range<usize>) -> (usize, usize) {
    (events.len() + 1, batch.attr_range(events.clone()).len())
}

/// Elements per part of a parallel copy into staging (256 KiB of attributes).
const STAGE_PART: usize = 16 << 10;

impl Staged {
    /// `events` of `batch` staged into `old` when it holds them, on the pool
    /// ([`on_encode_pool`]), copied to the device as `feed` says; else
    /// [`Prepared::Short`].
    fn prepare(
        old: Option<HostBufs>,
        batch: &EventBatch,
        events: Range<usize>,
        feed: Feed<'_>,
    ) -> Result<Prepared, CcmError> {
        let started = Instant::now();
        Ok(match old {
            Some(h) if h.holds(lens_of(batch, &events)) => {
                let st = on_encode_pool(|| Staged::fill(h, batch, events, false, feed))?;
                Prepared::Staged(st, started.elapsed())
            }
            short => Prepared::Short(events, short, started.elapsed()),
        })
    }

    /// Copies the starts and attributes of `events` of `batch` into `bufs` (which hold
    /// them), on the pool it is called on; with a slice in `feed`, the attributes a
    /// slice at a time, each slice's copy to the device queued as soon as it is staged
    /// (so the copies run while the rest is staged), then a signal after the last.
    fn fill(
        mut bufs: HostBufs,
        batch: &EventBatch,
        events: Range<usize>,
        grown: bool,
        feed: Feed<'_>,
    ) -> Result<Staged, CcmError> {
        let starts = &batch.starts()[events.start..=events.end];
        let attrs: &[BatchAttr] = bytemuck::cast_slice(&batch.attrs()[batch.attr_range(events)]);
        let (ns, na) = (starts.len(), attrs.len());
        let slice = if feed.slice == 0 {
            na.max(1)
        } else {
            feed.slice
        };
        // A slice's copy into staging on every thread of the pool (parts of at least
        // 4096 attributes, at most STAGE_PART).
        let part = (slice / rayon::current_num_threads().max(1)).clamp(4096, STAGE_PART);
        let mut at = 0;
        // The starts beside the first slice (or all) of the attributes.
        while at < na || at == 0 {
            let end = if feed.slice == 0 {
                na
            } else {
                (at + slice).min(na)
            };
            let a = &mut bufs.attrs.as_mut_slice()[at..end];
            if at == 0 {
                let s = &mut bufs.starts.as_mut_slice()[..ns];
                rayon::join(
                    || s.copy_from_slice(starts),
                    || par_copy(a, &attrs[..end], part),
                );
            } else {
                par_copy(a, &attrs[at..end], part);
            }
            if feed.slice > 0 {
                if let Err(e) = stage_copy(feed, &mut bufs, at == 0, at..end, ns) {
                    // Copies of earlier slices may still read the staging: let them end
                    // before it is freed.
                    feed.drain();
                    return Err(e);
                }
            }
            at = end;
            if end == 0 {
                break;
            }
        }
        let copied = if feed.slice > 0 {
            Some(feed.dev.signal(Some(feed.input))?)
        } else {
            None
        };
        Ok(Staged {
            bufs,
            events: ns - 1,
            attrs: na,
            grown,
            copied,
        })
    }
}

/// Queues the copy of the staged attributes `attrs` (and, with `starts`, of the first
/// `ns` starts) of `bufs` to its device buffers on `feed`'s input queue.
fn stage_copy(
    feed: Feed<'_>,
    bufs: &mut HostBufs,
    starts: bool,
    attrs: Range<usize>,
    ns: usize,
) -> Result<(), CcmError> {
    // SAFETY: the staging is not written again before its launch is collected, which
    // waits for the launch's kernels, which wait for a signal queued after this copy
    // (or, on an error, the device is synchronized before it is freed); its device
    // buffers are read only by its launch's encoding, queued after that signal, and
    // their last reader (the launch before that used this area) was collected before
    // the area was staged again.
    unsafe {
        if starts {
            feed.dev
                .write_on(feed.input, &mut bufs.dev_starts, 0, &bufs.starts, 0..ns)?;
        }
        if !attrs.is_empty() {
            let at = attrs.start;
            feed.dev
                .write_on(feed.input, &mut bufs.dev_attrs, at, &bufs.attrs, attrs)?;
        }
    }
    Ok(())
}

/// What [`submit`] and [`collect`] share: the device, the index's tables (and those of
/// the filters added since the build), the call's dictionaries, the tuning and the size
/// of the launch buffers ([`GpuIndex::launch_events`]).
struct Pipe<'a> {
    dev: &'a Device,
    d: &'a DevIndex,
    delta: Option<&'a DevIndex>,
    dict: &'a DevDicts,
    cfg: &'a IndexConfig,
    per: usize,
    queues: &'a Queues,
}

/// Queues the launch of the events staged in `st` in slot `slot` of `bufs`, nothing
/// waited for: its events' copy in on the input queue; on the device's stream, once
/// they are in, the events' encoding (with the call's dictionaries), the partition
/// walk, the filter-major (or interface-major) kernel for dense events, the walk of
/// the filters added since the build, the answer lists (their spans written into
/// page-locked host memory). `hint` is the last collected launch's count
/// of dense events, which sizes the dense kernels' grids (they take any count).
#[allow(clippy::too_many_arguments)]
fn submit(
    p: &Pipe<'_>,
    bufs: &mut [Option<LaunchBufs>; 2],
    slot: usize,
    hint: Hint,
    path: Path,
    timing: &mut IndexTiming,
    st: Staged,
) -> Result<InFlight, CcmError> {
    let (dev, d, cfg, q) = (p.dev, p.d, p.cfg, p.queues);
    let (n, na) = (st.events, st.attrs);
    let t = Instant::now();
    if bufs[slot].is_none() {
        // The cells' counts per event and slice, for their lists (not when interfaces
        // share filters: their rows are of interfaces).
        let slices = d.cells.as_ref().filter(|c| !c.shared);
        let slices = slices.map_or(0, |c| c.slices as usize);
        // Interfaces sharing filters on the cells: a count per interface.
        let shared = d.cells.as_ref().is_some_and(|c| c.shared);
        let ifaces = if shared { d.n_ifaces as usize } else { 0 };
        bufs[slot] = Some(LaunchBufs::alloc(
            dev,
            p.per,
            d.words as usize,
            slices,
            ifaces,
        )?);
    }
    let b = bufs[slot].as_mut().expect("allocated");
    if b.attrs.len() < na {
        b.attrs = dev.alloc(room_of(na))?;
    }
    let mut hb = st.bufs;
    let copied = match st.copied {
        // Copied as it was staged.
        Some(copied) => copied,
        None => {
            // SAFETY: as in `stage_copy`: `hb` is held in the returned launch until its
            // `done` is reached (after `copied`: the kernels wait for it), and the
            // pipeline reaches that before staging into `hb` again (or, on an error,
            // stops the queues before); its device buffers' last reader was collected.
            unsafe {
                dev.write_on(&q.input, &mut hb.dev_starts, 0, &hb.starts, 0..n + 1)?;
                if na > 0 {
                    dev.write_on(&q.input, &mut hb.dev_attrs, 0, &hb.attrs, 0..na)?;
                }
            }
            dev.signal(Some(&q.input))?
        }
    };
    dev.zero(&mut b.total)?;
    dev.wait(None, &copied)?;
    timing.copy_in += t.elapsed();
    let t = Instant::now();
    let input = p.dict.input(&hb.dev_starts, &hb.dev_attrs, n);
    let m0 = dev.mark()?;
    let lc = LaunchConfig::linear(n as u32, ENCODE_BLOCK);
    ccm_encode_batch::launch(dev, lc, input, &b.events, &b.attrs)?;
    let m1 = dev.mark()?;
    let tables = d.tables();
    let batch = IndexEvents {
        events: b.events.dev_ptr(),
        attrs: b.attrs.dev_ptr(),
        ebytes: p.dict.arena.dev_ptr(),
        n_events: n as u32,
    };
    let route = cfg.route_block.clamp(32, 1024) / 32 * 32;
    let wpe = warps_per_event(cfg, n, hint.walk);
    let walk = LaunchConfig::blocks(
        (n as u32 * wpe).div_ceil(route / 32),
        route,
        route_shared_bytes(route),
    );
    // Dense events to the value cells where built, else to the filter-major kernel.
    let cells = d.cells.as_ref().filter(|_| cfg.cells);
    let share = if cells.is_some() {
        cfg.cells_share
    } else {
        cfg.dense_share
    };
    let dense_limit = (share * d.n_filters as f64).min(u32::MAX as f64) as u32;
    // Every event on the value cells: no partition walk (its probes only count); in
    // name order on the path that takes them.
    let all = cells.is_some() && path != Path::Walk;
    let sorted = d.sorted.as_ref().filter(|_| all && path == Path::Sorted);
    if all {
        timing.dense_events += n;
    } else {
        ccm_index_route::launch(
            dev,
            walk,
            tables,
            batch,
            dense_limit,
            wpe,
            &b.bits,
            &b.dense,
            &b.walked,
        )?;
    }
    let m_walk = dev.mark()?;
    // The dense events' kernels, their grids sized by the last launch's count: the
    // count of this one is on the device only (the kernels read it; a smaller grid
    // strides over more).
    let hint = hint.dense.min(n as u32);
    if d.iface_major {
        let blocks = (hint.max(1) * d.n_ifaces).max(IFACE_MIN_BLOCKS);
        let lc = LaunchConfig::blocks(blocks, 32 * IFACE_WARPS, 0);
        ccm_index_iface::launch(
            dev,
            lc,
            tables,
            batch,
            &d.by_iface,
            &d.iface_start,
            d.n_ifaces,
            &b.dense,
            &b.bits,
        )?;
    } else if let Some(c) = sorted.or(cells) {
        let block = cell_block(cfg);
        // Sized by the launch's events when all are on the cells, else by the last
        // launch's count of dense events (the kernel strides over any count).
        let events = if all { n as u32 } else { hint };
        let groups = events.div_ceil(cfg.cell_events.max(1)).clamp(1, 65_535);
        // When interfaces share filters, the slices in `blockIdx.y` (the kernel's order).
        let lc = LaunchConfig {
            grid: if c.shared {
                [groups, c.slices, 1]
            } else {
                [c.slices, groups, 1]
            },
            block: [block, 1, 1],
            shared_bytes: cell_shared_bytes(c.rows, c.cells, c.groups, c.edge_max, block),
        };
        // In name order, counted by the cells (the counts zeroed first) or after them.
        let count = c.sorted && sorted_counts(cfg, p.delta.is_some());
        if count {
            dev.zero(&mut b.cell_counts)?;
        }
        let ct = c.tables();
        let by_iface = if c.sorted { &d.by_names } else { &d.by_iface };
        let (dense, bits, counts) = (&b.dense, &b.bits, &b.cell_counts);
        let all = all as u32;
        if c.shared {
            dev.zero(&mut b.iface_done)?;
            let done = &b.iface_done;
            ccm_index_cells_shared::launch(
                dev, lc, tables, batch, ct, by_iface, dense, all, bits, counts, done,
            )?;
        } else if c.sorted {
            ccm_index_cells_sorted::launch(
                dev,
                lc,
                tables,
                batch,
                ct,
                by_iface,
                dense,
                all,
                bits,
                counts,
                count as u32,
            )?;
        } else {
            ccm_index_cells::launch(
                dev, lc, tables, batch, ct, by_iface, dense, all, bits, counts,
            )?;
        }
    } else {
        let block = cfg.dense_block.clamp(32, 1024) / 32 * 32;
        let narrow = d.ranged && d.narrow && cfg.narrow_ranges;
        let cols = d.n_filters.div_ceil(block);
        let rows = hint
            .div_ceil(DENSE_CHUNK)
            .clamp(1, (DENSE_BLOCKS / cols).max(1));
        let lc = LaunchConfig {
            grid: [cols, rows, 1],
            block: [block.max(DENSE_CHUNK), 1, 1],
            shared_bytes: dense_shared_bytes(d.rows, d.ranged, narrow),
        };
        if narrow {
            ccm_index_dense_narrow::launch(dev, lc, tables, batch, &d.by_iface, &b.dense, &b.bits)?;
        } else {
            ccm_index_dense::launch(dev, lc, tables, batch, &d.by_iface, &b.dense, &b.bits)?;
        }
    }
    let m_dense = dev.mark()?;
    // The filters added since the build: every event walks their partitions too (the
    // limit is never passed: they are few).
    if let Some(x) = p.delta {
        let tables = x.tables();
        let (bits, dense, walked) = (&b.bits, &b.dense, &b.walked);
        ccm_index_route::launch(dev, walk, tables, batch, u32::MAX, wpe, bits, dense, walked)?;
    }
    let lists = lists_config(cfg, d.words, n);
    let cap = b.ids.len().min(u32::MAX as usize) as u32;
    let m_lists = dev.mark()?;
    // Nothing added: the lists from counts per slice of the cells' filters, the cells'
    // own when every event was on them, else counted from the rows. (Not when interfaces
    // share filters: their rows are of interfaces.)
    let cell_lists = cfg.cell_lists && p.delta.is_none();
    let cells = cells.filter(|c| !c.shared);
    if let Some(c) = cells.filter(|_| cell_lists) {
        // A warp per event and run of slices.
        let warps = n as u64 * u64::from(cell_list_warps(c.slices));
        let blocks = warps.div_ceil(u64::from(CELL_LIST_BLOCK / 32));
        let blocks =
            u32::try_from(blocks).map_err(|_| limit("value cells' list warps", blocks as usize))?;
        let runs = LaunchConfig::blocks(blocks, CELL_LIST_BLOCK, 0);
        let counts = &b.cell_counts;
        // In name order the cells set the rows' bits by rank, counted only with
        // `sorted_counts`.
        if !all || sorted.is_some() && !sorted_counts(cfg, p.delta.is_some()) {
            ccm_cells_counts::launch(dev, runs, &b.bits, d.words, c.slices, n as u32, counts)?;
        }
        let lc = LaunchConfig::blocks(n as u32, CELL_LIST_BLOCK, CELL_SPANS_SHARED);
        let spans = &mut b.spans_host;
        ccm_cells_spans::launch(
            dev,
            lc,
            counts,
            c.slices,
            n as u32,
            spans,
            &b.total,
            &b.dense,
            &b.walked,
            &mut b.dense_host,
        )?;
        let lc = runs;
        let (bits, ids) = (&b.bits, &b.ids);
        ccm_cells_lists::launch(
            dev,
            lc,
            bits,
            d.words,
            c.slices,
            n as u32,
            counts,
            &d.user_ids,
            ids,
            cap,
            &b.total,
        )?;
    } else {
        ccm_index_lists::launch(
            dev,
            lists,
            &b.bits,
            d.words,
            n as u32,
            &d.user_ids,
            &mut b.spans_host,
            &b.ids,
            cap,
            &b.total,
            &b.dense,
            &b.walked,
            &mut b.dense_host,
        )?;
    }
    let m2 = dev.mark()?;
    // Nothing waits for the kernels on the queues: a copy out queued now would hold
    // up the next launch's copy in wherever the copy engines take them in turn.
    let done = dev.signal(None)?;
    timing.kernels += t.elapsed();
    Ok(InFlight {
        slot,
        events: n,
        staging: Some(hb),
        done,
        marks: [m0, m1, m_walk, m_dense, m_lists, m2],
        path: if all { path } else { Path::Walk },
    })
}

/// Whether the cells in name order count their answers for the lists
/// ([`IndexConfig::sorted_counts`]): not when the lists are made otherwise (`delta`:
/// filters added since the build, walked too).
fn sorted_counts(cfg: &IndexConfig, delta: bool) -> bool {
    cfg.sorted_counts && cfg.cell_lists && !delta
}

/// Launches the answers kernel for the `n` events of the launch in `b`: the lists the
/// lists kernel had no room for, into `b.ids` (grown since).
fn answers_launch(
    dev: &Device,
    d: &DevIndex,
    cfg: &IndexConfig,
    b: &mut LaunchBufs,
    n: usize,
) -> Result<(), CcmError> {
    let lc = if d.words <= LIST_WORDS {
        // A warp per event.
        LaunchConfig::blocks((n as u32).div_ceil(WARP_BLOCK / 32), WARP_BLOCK, 0)
    } else {
        lists_config(cfg, d.words, n)
    };
    let cap = b.ids.len().min(u32::MAX as usize) as u32;
    ccm_index_answers::launch(
        dev,
        lc,
        &b.bits,
        d.words,
        n as u32,
        &d.user_ids,
        &b.spans_host,
        &b.ids,
        cap,
        &b.total,
    )?;
    Ok(())
}

/// Waits for the launch `f` and appends its answers to `out`: the answer lists copied
/// straight into the answers' page-locked area for the launch (the DMA engine's full
/// speed, no copy on the host), after growing the lists' buffer and listing again when
/// they did not fit. Sets `hint` to its count of dense events and its walk per event.
fn collect(
    p: &Pipe<'_>,
    bufs: &mut [Option<LaunchBufs>; 2],
    f: InFlight,
    hint: &mut Hint,
    timing: &mut IndexTiming,
    out: &mut Answers,
) -> Result<(), CcmError> {
    let dev = p.dev;
    let t = Instant::now();
    dev.reach(&f.done)?;
    let b = bufs[f.slot].as_mut().expect("a launch's slot");
    let n = f.events;
    let [dense, groups] = [b.dense_host.as_slice()[0], b.dense_host.as_slice()[1]];
    let walked = n.saturating_sub(dense as usize).max(1) as u64;
    *hint = Hint {
        // After a launch of every event on the cells, a walk's launch may find all dense.
        dense: if f.path != Path::Walk {
            n as u32
        } else {
            dense
        },
        walk: (u64::from(groups) * 32 / walked).min(u64::from(u32::MAX)) as u32,
        path: hint.path,
    };
    timing.cells_launches += (f.path != Path::Walk) as usize;
    timing.sorted_launches += (f.path == Path::Sorted) as usize;
    timing.dense_events += dense as usize;
    timing.walk_groups += groups as usize;
    // The lists fill places `0..total` (each event's reserved at once).
    let total: usize = b.spans_host.as_slice()[..2 * n]
        .chunks_exact(2)
        .map(|s| s[1] as usize)
        .sum();
    let [m0, m1, m_walk, m_dense, m_lists, m2] = &f.marks;
    let span = |from: &Mark, to: &Mark| -> Result<Duration, CcmError> {
        let ms = dev.elapsed_ms(from, to)?;
        Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
    };
    timing.device_encode += span(m0, m1)?;
    timing.device_walk += span(m1, m_walk)?;
    timing.device_dense += span(m_walk, m_dense)?;
    timing.device_lists += span(m_lists, m2)?;
    let all = dev.elapsed_ms(m0, m2)?;
    timing.device += Duration::from_secs_f64(f64::from(all.max(0.0)) / 1e3);
    hint.path
        .note(f.path, f64::from(all) * 1e6 / n.max(1) as f64, n, p.per);
    let (area, room) = out.next_area(dev, total)?;
    if total > b.ids.len() {
        // The lists did not fit: warps whose places passed the room left their rows;
        // the others' lists move to a larger buffer, and the rows left are listed.
        let listed = dev.read(&b.ids)?;
        b.ids = dev.alloc(room_of(total))?;
        dev.write(&mut b.ids, 0, &listed)?;
        answers_launch(dev, p.d, p.cfg, b, n)?;
        dev.read_into(&b.ids, 0, &mut room.as_mut_slice()[..total])?;
    } else if total > 0 {
        // SAFETY: the host touches `room` only after reaching `listed`, just below; the
        // kernels that wrote `ids` have ended (`done` was reached above).
        unsafe { dev.read_on(&p.queues.output, &b.ids, 0, room, 0..total)? };
        let listed = dev.signal(Some(&p.queues.output))?;
        dev.reach(&listed)?;
    }
    let spans = &b.spans_host.as_slice()[..2 * n];
    out.spans
        .extend(spans.chunks_exact(2).map(|s| (area, s[0], s[1])));
    timing.answers += t.elapsed();
    timing.events += n;
    Ok(())
}

/// Fewest blocks of the interface-major kernel (a few per SM), whatever the last
/// launch's count of dense events.
const IFACE_MIN_BLOCKS: u32 = 1024;

/// Most blocks of the filter-major kernel (its rows of chunks of events capped so).
const DENSE_BLOCKS: u32 = 16_384;

/// Warps per event of the partition walk for a launch of `n` events whose launch before
/// walked `walk` filters per event: one, unless the launch holds fewer events than
/// [`IndexConfig::walk_warps`] (a launch capped by the answer bitmap, e.g. ~2,000
/// events with the dense model's million interfaces), then as many as fill that many
/// warps, at most [`MAX_WARPS_PER_EVENT`]; and at least [`IndexConfig::heavy_warps`]
/// when `walk` passes [`IndexConfig::heavy_walk`]. (With one warp per event such a
/// launch left three quarters of the H100 idle while each warp walked ~30,000
/// filters: 6.1 us per event on the dense model's 1M filters with 3-5 names, 2.8 with
/// several warps; 2.1 with the former block per event, whose barriers cost more
/// everywhere else. On the H200, Table 2's events with Zipf names went 21.6 ns per
/// event of device time with one warp each, 15.8 with four; with uniform names 4.7
/// with one, 5.8 with four.)
fn warps_per_event(cfg: &IndexConfig, n: usize, walk: u32) -> u32 {
    let fill = (cfg.walk_warps / n.max(1)).clamp(1, MAX_WARPS_PER_EVENT);
    let heavy = if walk >= cfg.heavy_walk {
        cfg.heavy_warps.clamp(1, MAX_WARPS_PER_EVENT)
    } else {
        1
    };
    fill.max(heavy) as u32
}

/// The answer lists' launch for `n` events of rows of `words` words: a thread per event
/// for short rows, else a block per event of [`IndexConfig::list_warps`] warps (at most
/// [`LIST_WARPS`], and at most one per run of 32 words).
fn lists_config(cfg: &IndexConfig, words: u32, n: usize) -> LaunchConfig {
    if words <= LIST_WORDS {
        LaunchConfig::linear(n as u32, WARP_BLOCK)
    } else {
        let warps = cfg.list_warps.clamp(1, LIST_WARPS).min(words.div_ceil(32));
        LaunchConfig::blocks((n as u32).max(1), 32 * warps, LIST_SHARED)
    }
}

/// Most warps of the partition walk per event.
const MAX_WARPS_PER_EVENT: usize = 8;

/// Most events per launch: the configured batch, fewer when the bitmap of `words`
/// words per event would pass its budget.
fn per_launch(cfg: &IndexConfig, words: u32) -> usize {
    let by_bits = cfg.bitmap_bytes / (4 * words as usize);
    cfg.batch_events.min(by_bits).clamp(1, 1 << 20)
}

/// `data`, or one zero element when it is empty (a device buffer is never empty).
fn non_empty<T: bytemuck::Pod>(data: &[T]) -> std::borrow::Cow<'_, [T]> {
    if data.is_empty() {
        std::borrow::Cow::Owned(vec![T::zeroed()])
    } else {
        std::borrow::Cow::Borrowed(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccm_kernels::{OP_NE, TY_FLOAT};

    #[test]
    fn the_path_choice_tries_each_path_then_takes_the_faster_and_tries_the_other_again() {
        let two = [Path::Cells, Path::Walk];
        let mut c = PathChoice::default();
        // Nothing measured: every event on the cells, until that is measured.
        assert_eq!(c.next(&two), Path::Cells);
        assert_eq!(c.next(&two), Path::Cells);
        c.note(Path::Cells, 50.0, 100, 100);
        assert_eq!(c.next(&two), Path::Walk, "then the walk");
        c.note(Path::Walk, 40.0, 100, 100);
        // The walk was faster: taken, but in one launch of PROBE_EVERY.
        let taken: Vec<Path> = (0..2 * PROBE_EVERY).map(|_| c.next(&two)).collect();
        let cells = taken.iter().filter(|&&p| p == Path::Cells).count();
        assert_eq!(cells, 2, "{taken:?}");
        // The cells measured faster since: taken from then on.
        c.note(Path::Cells, 30.0, 100, 100);
        assert_eq!(c.next(&two), Path::Cells);
        c.note(Path::Walk, 35.0, 100, 100);
        assert_eq!(c.next(&two), Path::Cells);
        // A short launch's measure does not replace a full one's...
        c.note(Path::Walk, 20.0, 49, 100);
        assert_eq!(c.next(&two), Path::Cells);
        // ...but stands where only short ones were measured.
        let mut d = PathChoice::default();
        d.note(Path::Cells, 30.0, 10, 100);
        d.note(Path::Walk, 35.0, 10, 100);
        d.note(Path::Walk, 25.0, 10, 100);
        assert_eq!(d.next(&two), Path::Walk);
        d.note(Path::Cells, 28.0, 60, 100);
        d.note(Path::Cells, 20.0, 10, 100);
        assert_eq!(d.next(&two), Path::Walk, "the full launch's 28 stands");
    }

    #[test]
    fn with_three_paths_each_is_tried_and_the_probes_take_the_others_in_turn() {
        let three = [Path::Cells, Path::Walk, Path::Sorted];
        let mut c = PathChoice::default();
        for want in three {
            assert_eq!(c.next(&three), want, "untried first, in order");
            c.note(want, [50.0, 40.0, 10.0][want as usize], 100, 100);
        }
        // Both others measured much slower: each tried in one round of four (a round: one
        // try of each).
        let taken: Vec<Path> = (0..16 * PROBE_EVERY).map(|_| c.next(&three)).collect();
        let count = |p: Path| taken.iter().filter(|&&t| t == p).count();
        assert_eq!((count(Path::Cells), count(Path::Walk)), (2, 2), "{taken:?}");
        assert_eq!(count(Path::Sorted), taken.len() - 4);
        // Within a quarter of the fastest: every round.
        c.note(Path::Walk, 12.0, 100, 100);
        c.note(Path::Cells, 12.0, 100, 100);
        let taken: Vec<Path> = (0..4 * PROBE_EVERY).map(|_| c.next(&three)).collect();
        let count = |p: Path| taken.iter().filter(|&&t| t == p).count();
        assert_eq!((count(Path::Cells), count(Path::Walk)), (2, 2), "{taken:?}");
    }

    #[test]
    fn an_encoding_pool_takes_every_thread_up_to_the_bound() {
        assert_eq!(encode_threads(0), 1, "at least one thread");
        assert_eq!(encode_threads(8), 8, "a host of few cores: all of them");
        assert_eq!(encode_threads(ENCODE_THREADS_MAX), ENCODE_THREADS_MAX);
        assert_eq!(
            encode_threads(64),
            ENCODE_THREADS_MAX,
            "many cores: the bound"
        );
        // Several indexes at once: a share of the host's bound.
        assert_eq!(encode_threads_shared(64, 2), 16);
        assert_eq!(encode_threads_shared(64, 4), 8);
        assert_eq!(encode_threads_shared(16, 4), 4);
        assert_eq!(encode_threads_shared(2, 4), 1);
    }

    fn con(key: u32, op: u16, v: i64) -> DevConstraint {
        DevConstraint {
            key,
            op,
            ty: TY_INT,
            val: v as u64,
            ..DevConstraint::default()
        }
    }

    fn ranges(cons: &[DevConstraint]) -> Option<Vec<(u32, i64, i64)>> {
        range_form(cons).map(|r| r.iter().map(|r| (r.row, r.lo, r.hi)).collect())
    }

    #[test]
    fn range_form_intersects_a_names_comparisons_and_keeps_the_extremes_exact() {
        let c = [con(3, OP_GE, 10), con(3, OP_LT, 20), con(5, OP_EQ, -4)];
        assert_eq!(ranges(&c), Some(vec![(3, 10, 19), (5, -4, -4)]));
        assert_eq!(
            ranges(&[con(1, OP_LE, i64::MAX)]),
            Some(vec![(1, i64::MIN, i64::MAX)])
        );
        // `< MIN` and `> MAX` match no integer: an empty interval (lo > hi).
        let lt = ranges(&[con(1, OP_LT, i64::MIN)]).unwrap();
        assert!(lt[0].1 > lt[0].2);
        let gt = ranges(&[con(1, OP_GT, i64::MAX)]).unwrap();
        assert!(gt[0].1 > gt[0].2);
        // Disjoint comparisons on one name: empty.
        let d = ranges(&[con(2, OP_GT, 5), con(2, OP_LT, 3)]).unwrap();
        assert!(d[0].1 > d[0].2);
    }

    #[test]
    fn a_range_is_narrow_only_when_clamping_into_i32_keeps_every_integer_on_its_side() {
        assert!(is_narrow(i64::MIN, i64::MAX));
        assert!(is_narrow(-5, 7));
        assert!(is_narrow(i64::MIN, 0));
        assert!(is_narrow(3, i64::MAX));
        // A point at either end of i64 (`= i64::MAX`, `= i64::MIN`): clamped, 2^53 + 1
        // would read as equal to it.
        assert!(!is_narrow(i64::MAX, i64::MAX));
        assert!(!is_narrow(i64::MIN, i64::MIN));
        assert!(!is_narrow(i32::MAX as i64, i64::MAX));
        assert!(!is_narrow(0, 1 << 40));
    }

    #[test]
    fn range_form_is_refused_for_other_operators_types_rows_and_too_many_names() {
        assert_eq!(ranges(&[con(1, OP_NE, 3)]), None);
        let float = DevConstraint {
            ty: TY_FLOAT,
            ..con(1, OP_LT, 3)
        };
        assert_eq!(ranges(&[float]), None);
        assert_eq!(ranges(&[con(RANGE_ROWS, OP_LT, 3)]), None);
        let many: Vec<_> = (0..=MAX_RANGES as u32).map(|k| con(k, OP_GE, 0)).collect();
        assert_eq!(ranges(&many), None);
        assert!(ranges(&many[..MAX_RANGES]).is_some());
    }
}
