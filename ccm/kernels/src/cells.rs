//! Beyond the paper: the pruning matcher's value cells (`ccm::index`'s dense path), the
//! device form of the CPU bit index (`baselines::bit_index`, HEM class) for dense events
//! when every filter is integer ranges (the REIN / HEM dense model), each its own
//! interface or interfaces sharing filters.
//!
//! The filter-major kernel ([`crate::index::ccm_index_dense()`]) reads every filter for
//! every dense event; here an event costs, per slice of [`CELL_SLICE`] filters, one OR of
//! a word per name and the few bounds that fall in its value's cell. Where the ideas
//! come from:
//! - REIN (Qian et al., INFOCOM 2014): mark the *failing* filters per name, a lower bound
//!   above the value or an upper bound below it; what nothing marks matches.
//! - HEM (Shi & Qian, DASFAA 2022): per name, cells of values at workload-balanced cut
//!   points (each cell holding as many of the name's bounds), a precomputed bitset per
//!   cell, so most failing filters come from a word OR, and the bounds inside the
//!   event's cell compared one by one; a name the event lacks ORs the bitset of every
//!   filter constraining it.
//! - `baselines::bit_index` (this workspace): one bitset per cell for both sides (the
//!   filters whose lower bound lies above the cell or whose upper bound lies below it),
//!   instead of HEM's two cumulative families and its double reverse: one OR per name;
//!   and the filters taken a segment at a time, the segment's bitsets kept in the
//!   fastest memory while many events are answered. Here a segment is a block's slice of
//!   [`CELL_SLICE`] filters, 32 words per cell, kept in shared memory with the slice's
//!   bounds while the block's warps sweep a batch of events (a warp per event, lane `l`
//!   word `l` of the slice), and the final bitset is written straight into the event's
//!   row of answer bits (filters numbered in interface order, one filter each: bit `k`
//!   of the row is filter slot `k`), which [`ccm_cells_lists()`] (or
//!   [`crate::index::ccm_index_lists()`]) compacts.
//! - Beyond them, filters that share interfaces (an interface matches when any of its
//!   filters does, as SFF stops at an interface's first match): each interface a run of
//!   slots, fewest constraints first; the warp sets the bits of the interfaces whose
//!   slots pass ([`CellTables::shared`]), and the slices where interfaces begin are
//!   taken first, so that an event whose interfaces of a slice are answered skips it, and
//!   a block whose events all do never copies its slice.
//!
//! Cells of a name `r` (of [`CellTables::rows`]): `cells` of them split by `cells - 1`
//! ascending cut values (`cuts[r]`); value `v` lies in cell `c` = the number of cuts at
//! or below `v`. A filter's range `lo..=hi` on `r` fails for every value of cell `c`
//! when the cell of `lo` is above `c` or the cell of `hi` below it (bit set in cell
//! `c`'s bitset); when `lo` (`hi`) lies in cell `c` itself, it is an *edge* of the
//! cell ([`CellEdge`]), compared exactly: a cell's lower edges and its upper edges are
//! each sorted by bound (HEM's sorted buckets), so those that fail for a value are one
//! run of each, found by a binary search, and marked with no compare. Cell `cells` of each name is its *absent*
//! cell: every filter constraining the name. Values are compared as `i32`: every
//! finite bound lies strictly inside `i32` (the host builds the cells only then), so an
//! event's integer clamped to `i32` compares with it as the integer itself.

use crate::index::{
    report_counters, satisfies, warp_sum, write_ids, IndexEvents, IndexTables, REMOVED,
};
use crate::{DevAttr, DevEvent, TY_INT};
use gpu_kernels::prelude::*;
use gpu_kernels::{kernel, DevPtr, KernelStruct};

/// Filters per slice (a block's share of the filters): [`CELL_WORDS`] words per cell.
pub const CELL_SLICE: u32 = 1024;
/// Words of a slice's bitset of one cell: a word per lane of a warp.
pub const CELL_WORDS: u32 = 32;
/// Most names with cells (a lane each; the range form's rows,
/// [`crate::index::RANGE_ROWS`]).
pub const CELL_ROWS: u32 = 32;
/// [`CellEdge::at`]'s flag of an upper bound (the filter fails above it); without it, a
/// lower bound (fails below it).
pub const EDGE_UPPER: u32 = 1 << 31;

/// A slice of [`CellTables::order`]: the slice, where its interfaces begin in
/// [`CellTables::ifaces`] and how many there are, and the first of them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct CellSlice {
    pub slice: u32,
    pub if_at: u32,
    pub n_if: u32,
    pub first: u32,
}

/// A bound that lies in its cell: the filter's place in its slice (below
/// [`CELL_SLICE`]), with [`EDGE_UPPER`] for an upper bound, and the bound.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct CellEdge {
    pub at: u32,
    pub bound: i32,
}

/// The device tables of the value cells over the filters in interface order (slot `k`
/// = `by_iface[k]`): `slices` slices of [`CELL_SLICE`] slots, `rows` names of `cells`
/// cells each, plus each name's absent cell, and (when `groups` is not 0) the unions of
/// the absent cells of every subset of each group of [`GROUP_NAMES`] names.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CellTables<'a> {
    /// Slice `s`, name `r`, cell `c` (`0..=cells`, `cells` the absent cell): words
    /// `s * W + (r * (cells + 1) + c) * CELL_WORDS ..` (bit `k % 32` of word
    /// `k / 32 % 32`: slot `k` of the slice fails), `W` = [`slice_words`]; then the
    /// union of the absent cells of the names `GROUP_NAMES * g + i` for the bits `i` of
    /// `m` (below [`GROUP_SETS`]): words `s * W + (rows * (cells + 1) + g * GROUP_SETS +
    /// m) * CELL_WORDS ..`.
    pub bits: DevPtr<'a, u32>,
    /// Name `r`'s cut values: `cuts[r * (cells - 1) ..][.. cells - 1]`, ascending.
    pub cuts: DevPtr<'a, i32>,
    /// The edges of slice `s`, name `r`, cell `c`: its lower bounds
    /// `edges[edge_at[2q]..edge_at[2q + 1]]`, then its upper bounds
    /// `edges[edge_at[2q + 1]..edge_at[2q + 2]]`, each in ascending order of the bound,
    /// `q = (s * rows + r) * cells + c` (a sentinel after the last).
    pub edge_at: DevPtr<'a, u32>,
    pub edges: DevPtr<'a, CellEdge>,
    pub rows: u32,
    pub cells: u32,
    pub slices: u32,
    /// Most edges of a slice (the room for them in shared memory).
    pub edge_max: u32,
    /// Groups of [`GROUP_NAMES`] names with the unions of their absent cells
    /// (`rows.div_ceil(GROUP_NAMES)`), or 0: none (each absent name ORs its own).
    pub groups: u32,
    /// 1 when interfaces share filters (each interface a run of slots, in rank order):
    /// an interface matches an event when any of its slots passes, so the kernel sets
    /// the interfaces' bits in the event's row of answers (atomic OR) instead of storing
    /// the slots' words, and skips what is already answered; 0: one filter per interface,
    /// slot `k`'s bit is interface `k`'s. The three tables below are read only with it
    /// (null without).
    pub shared: u32,
    /// With `shared`: the slices in the order the blocks take them (`blockIdx.y` is a
    /// position in it): by their depth into the interface of their last slot (the
    /// slices where interfaces begin first, then the next ones, ..), so that an
    /// interface's first slots, which the host sorts likeliest to match first, answer it
    /// before its later slices are reached. Each with what a block reads first of its
    /// slice ([`CellSlice`]: one load before the block can tell its events answered).
    pub order: DevPtr<'a, CellSlice>,
    /// With `shared`: the ranks of the interfaces of slice `s`'s slots, in slot order,
    /// each once: `ifaces[iface_at[s]..iface_at[s + 1]]`.
    pub iface_at: DevPtr<'a, u32>,
    pub ifaces: DevPtr<'a, u32>,
    /// With `shared`: [`CELL_WORDS`] words per slice, bit `k % 32` of word `k / 32` set
    /// when slot `k` of the slice (`k > 0`) begins an interface: the interface of slot `k`
    /// is the slice's interface number (of `ifaces`) counted by the bits up to `k`.
    pub bounds: DevPtr<'a, u32>,
    /// 1 when the slots are in *name order* ([`ccm_index_cells_sorted()`]): the filters
    /// sorted by the ascending rows of their names, so that a slice's filters share
    /// their first names; the two tables below are read only with it (null without).
    pub sorted: u32,
    /// With `sorted`: per slice the AND of its filters' name signatures (the names every
    /// filter of the slice constrains, as [`crate::DevEvent::sig`] has them): an event
    /// whose signature lacks one of them fails every filter of the slice.
    pub need: DevPtr<'a, u64>,
    /// With `sorted`: slot `k`'s interface rank (its bit in an event's row of answers).
    pub rank: DevPtr<'a, u32>,
}

/// Names per group of the absent names' unions ([`CellTables::groups`]; the CPU bit
/// index's groups are of five).
pub const GROUP_NAMES: u32 = 4;
/// Unions per group: one per subset of its names.
pub const GROUP_SETS: u32 = 1 << GROUP_NAMES;

/// Words of a slice's bitsets: its names' cells and absent cells, then its groups'
/// unions.
pub const fn slice_words(rows: u32, cells: u32, groups: u32) -> u32 {
    (rows * (cells + 1) + groups * GROUP_SETS) * CELL_WORDS
}

// SAFETY: `#[repr(C)]`; device pointers and integers; `Host<'a>` differs only in the
// lifetime.
unsafe impl KernelStruct for CellTables<'static> {
    type Host<'a> = CellTables<'a>;
}

/// Words of shared memory per warp of [`ccm_index_cells`]: the marks of the edges that
/// fail (a word per lane), the event's integer per name and its count of attributes per
/// name.
const WARP_WORDS: u32 = 3 * 32;

/// Dynamic shared memory of [`ccm_index_cells()`] for `rows` names of `cells` cells,
/// `groups` groups' unions, at most `edge_max` edges per slice and blocks of `threads`:
/// the slice's bitsets ([`slice_words`]), the
/// cuts, the slice's edge offsets and edges, the slice's live slots (a word per lane),
/// the block's flag (whether its events still need the slice) and each warp's words
/// (the edges' marks, the event's integers and counts by name).
pub const fn cell_shared_bytes(
    rows: u32,
    cells: u32,
    groups: u32,
    edge_max: u32,
    threads: u32,
) -> u32 {
    4 * (slice_words(rows, cells, groups)
        + rows * (cells - 1)
        + 2 * rows * cells
        + 1
        + 2 * edge_max
        + CELL_WORDS
        + 1
        + threads / 32 * WARP_WORDS)
}

/// The cell of `v` among the `n` ascending cuts at `cuts` (shared): how many lie at or
/// below `v` (a binary search).
///
/// # Safety
/// `cuts` holds `n` values.
#[inline(always)]
unsafe fn cell_of(cuts: *const i32, n: u32, v: i32) -> u32 {
    let (mut lo, mut hi) = (0u32, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if *cuts.add(mid as usize) <= v {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The first of the edges `lo..hi` (shared; their bounds ascending) whose bound passes
/// `above` (false up to some edge, true from it on), or `hi` (a binary search).
///
/// # Safety
/// `edges` holds the edges `lo..hi`.
#[inline(always)]
unsafe fn first_bound(
    edges: *const CellEdge,
    lo: u32,
    hi: u32,
    above: impl Fn(i32) -> bool,
) -> u32 {
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if above((*edges.add(mid as usize)).bound) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

kernel! {
    /// Beyond the paper: the value cells' kernel for dense events (module docs).
    ///
    /// Grid: `blockIdx.x` = the slice `s` of [`CELL_SLICE`] filter slots (in interface
    /// order, `by_iface`: global), `blockIdx.y` = the events `blockIdx.y * W + w,
    /// + gridDim.y * W, ..` of the list `dense` (`dense[0]` = the count, the events from
    /// `dense[1]`; global; with `all`, every event of the batch instead) for the block's
    /// warp `w` of `W`. With `c.shared` the two swap: `blockIdx.x` the events,
    /// `blockIdx.y` the slice's position in `c.order` (global), so that the blocks of
    /// the slices where interfaces begin are started first; a block whose slice holds
    /// one interface first reads that interface's bit in each of its events' rows
    /// (global, volatile; a flag in shared memory, a barrier) and returns whole when
    /// every one is set. First every thread copies its
    /// share of the slice's bitsets, the cuts, the slice's edge offsets and edges (global)
    /// into shared memory, and warp `w` finds which of the slots `32 i .. 32 i + 32` (for
    /// `i = w, w + W, ..`) hold a filter not [`REMOVED`] (`t.filters`, global; a ballot
    /// per word, shared); a barrier. Then each warp takes its events one at a time, no
    /// barrier between them (the next event's record and first attributes loaded while
    /// one is matched): lane `l` copies the event's attributes `l, l + 32, ..`
    /// (global) into the warp's shared words as each name's integer and count (shared
    /// atomics); lane `r` of each name `r` below `c.rows` picks the name's cell
    /// ([`cell_of`] over the cuts in shared memory), or its absent cell, and its edges;
    /// lane `l` ORs word `l` of every name's cell bitset (shared) into its word of failing
    /// slots (with `c.groups`, of every present name's cell and, per group of
    /// [`GROUP_NAMES`] names, of the union of its absent names' absent cells); lane `r`
    /// finds the failing edges of its name's cell, one run (the cell's
    /// lower bounds above the value, then its upper bounds below it: two binary searches
    /// in shared memory), the warp lays the names' runs end to end and lane `l` marks the
    /// filters of the edges `l, l + 32, ..` (shuffles) in the warp's marks (shared, atomic
    /// OR), which lane `l` then ORs into its word. Lane `l`
    /// stores its word's live slots that did not fail as word `32 s + l` of the event's
    /// row of `bits` (global; a warp writes 128 contiguous bytes) and, with `all`, its
    /// lane 0 the count of those slots as `counts[e * c.slices + s]` (global; for
    /// [`ccm_cells_spans`] and [`ccm_cells_lists`]). With `c.shared`, instead, the bits
    /// of the interfaces of those slots are set in the event's row (global, atomic OR:
    /// one by lane 0 when the slice holds one interface, else one per lane and interface
    /// of its word, found by the slice's interface bounds `c.bounds`, global), and an
    /// event whose row already had the bits of every interface of the slice when its
    /// record was read (at most 32; lane `l` reads the `l`-th, global, volatile) is
    /// skipped. An event that has a
    /// name of the cells twice or not as an integer is answered instead by SFF's rules,
    /// each lane trying a slot of each group of 32 (its [`IndexFilter`] and constraints,
    /// global) and a ballot making the group's word. Dynamic shared memory:
    /// [`cell_shared_bytes`].
    ///
    /// [`IndexFilter`]: crate::index::IndexFilter
    pub fn ccm_index_cells(
        t: IndexTables<'static>,
        b: IndexEvents<'static>,
        c: CellTables<'static>,
        by_iface: *const u32,
        dense: *const u32,
        all: u32,
        bits: *mut u32,
        counts: *mut u32,
    ) {
        let done = core::ptr::null_mut();
        cells_block::<false, false>(&t, &b, &c, by_iface, dense, all != 0, bits, counts, done);
    }
}

kernel! {
    /// Beyond the paper: [`ccm_index_cells`] over the value cells of the slots in name
    /// order ([`CellTables::sorted`]; `by_iface` maps a slot to its filter), for events
    /// with few names: a warp skips a slice, with no work, when the event's signature
    /// lacks a name of the slice's `c.need` (every filter of the slice constrains it); a
    /// slot that passes sets its interface's bit `c.rank[k]` in the event's row (global,
    /// atomic OR; the row zero before the launch but for bits of the same answers), as
    /// the partition walk does; with `count` (and `all`) it also adds one to the count of
    /// the answer's slice of the row, `counts[e * c.slices + rank / CELL_SLICE]` (global,
    /// atomic; zero before the launch), else no count is written ([`ccm_cells_counts`]
    /// counts the rows for the lists). An event with few names needs few slices: at 1M
    /// filters of 1-5 names of 20, an event of 3-5 names about 110 of the 977 slices.
    #[allow(clippy::too_many_arguments)]
    pub fn ccm_index_cells_sorted(
        t: IndexTables<'static>,
        b: IndexEvents<'static>,
        c: CellTables<'static>,
        by_iface: *const u32,
        dense: *const u32,
        all: u32,
        bits: *mut u32,
        counts: *mut u32,
        count: u32,
    ) {
        let done = core::ptr::null_mut();
        // Counted only with `count` and `all` (a null `counts` says so below).
        let counts = if count != 0 && all != 0 {
            counts
        } else {
            core::ptr::null_mut()
        };
        cells_block::<false, true>(&t, &b, &c, by_iface, dense, all != 0, bits, counts, done);
    }
}

kernel! {
    /// Beyond the paper: [`ccm_index_cells`] for filters that share interfaces
    /// ([`CellTables::shared`]), compiled apart: with the shared interfaces' work compiled
    /// into the one kernel (52 registers, was 47), the dense model's cells, where no
    /// filter shares an interface, took 13% more device time on the H200 at every size
    /// and x (apart, not measured yet). `done` (global, one word per interface, zero
    /// before the launch) counts the events whose row got each interface's bit from this
    /// launch: a block whose slice holds one interface returns at once, before reading
    /// its events, when every event of the launch has it (on the dense model with ten
    /// interfaces, nearly every block after the interfaces' first slices).
    pub fn ccm_index_cells_shared(
        t: IndexTables<'static>,
        b: IndexEvents<'static>,
        c: CellTables<'static>,
        by_iface: *const u32,
        dense: *const u32,
        all: u32,
        bits: *mut u32,
        counts: *mut u32,
        done: *mut u32,
    ) {
        cells_block::<true, false>(&t, &b, &c, by_iface, dense, all != 0, bits, counts, done);
    }
}

/// The body of [`ccm_index_cells`]. Every thread of the block calls it.
///
/// # Safety
/// As the kernel: the launch's tables and batch, `c` built over the filters in the order
/// of `by_iface` (a permutation of them, each its own interface), `dense` the count and
/// the dense events (unless `all`), `bits` a row of `t.words` words per event, `counts`
/// (with `all`) `c.slices` words per event, shared memory of
/// [`cell_shared_bytes`] for the block; with `SHARED`, `done` a word per interface; with
/// `SORTED`, `c` built in name order and `by_iface` its slots' filters, `counts` null or
/// the counts to add each answer to.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn cells_block<const SHARED: bool, const SORTED: bool>(
    t: &IndexTables<'static>,
    b: &IndexEvents<'static>,
    c: &CellTables<'static>,
    by_iface: *const u32,
    dense: *const u32,
    all: bool,
    bits: *mut u32,
    counts: *mut u32,
    done: *mut u32,
) {
    let n_dense = if all { b.n_events } else { *dense };
    let warps = block_dim_x() / 32;
    // (Filters sharing interfaces: `c.shared`, compiled apart.)
    let shared = SHARED;
    // The block's group of events, the groups, its slice (with `shared`: where its
    // interfaces begin, how many, the first).
    let (group, groups, pos) = if shared {
        let pos = c.order.read(block_idx_y() as usize);
        (block_idx_x(), grid_dim_x(), pos)
    } else {
        let pos = CellSlice {
            slice: block_idx_x(),
            ..CellSlice::default()
        };
        (block_idx_y(), grid_dim_y(), pos)
    };
    let s = pos.slice;
    // The block returns whole, before any barrier.
    if group * warps >= n_dense {
        return;
    }
    let (rows, cells) = (c.rows, c.cells);
    let tid = thread_idx_x();
    let nt = block_dim_x();
    let lane = lane_id();
    let warp = tid / 32;
    // Shared memory, in words.
    let n_bits = slice_words(rows, cells, c.groups);
    let n_cuts = rows * (cells - 1);
    let n_at = 2 * rows * cells + 1;
    let sh_bits = dynamic_shared::<u32>();
    let sh_cuts = sh_bits.add(n_bits as usize) as *mut i32;
    let sh_at = sh_cuts.add(n_cuts as usize) as *mut u32;
    let sh_edges = sh_at.add(n_at as usize) as *mut CellEdge;
    let sh_live = sh_edges.add(c.edge_max as usize) as *mut u32;
    let sh_flag = sh_live.add(CELL_WORDS as usize);
    let sh_warp = sh_flag.add((1 + warp * WARP_WORDS) as usize);
    let (sh_mark, sh_val, sh_cnt) = (sh_warp, sh_warp.add(32) as *mut i32, sh_warp.add(64));
    let step = groups * warps;
    let event_of = |j: u32| if all { j } else { *dense.add(1 + j as usize) };
    // With `shared`: the slice's interfaces (lane `l` the `l`-th of them).
    let (if_at, n_if) = (pos.if_at, pos.n_if);
    let answered = |e: u32, i: u32| {
        let word = bits.add(e as usize * t.words as usize + (i / 32) as usize);
        volatile_load_u32(word) & 1 << (i % 32) != 0
    };
    let mut my_iface = pos.first;
    if shared && n_if == 1 {
        // Whether every event of the launch has the slice's one interface (its count of
        // rows that got the bit), else whether an event of the block's still lacks it.
        if tid == 0 {
            *sh_flag = (volatile_load_u32(done.add(my_iface as usize)) < n_dense) as u32;
        }
        sync_threads();
        if *sh_flag == 0 {
            return;
        }
        sync_threads();
        if tid == 0 {
            *sh_flag = 0;
        }
        sync_threads();
        let mut k = lane;
        loop {
            let j = group * warps + warp + k * step;
            if j >= n_dense {
                break;
            }
            if !answered(event_of(j), my_iface) {
                atomic_or(sh_flag, 1);
                break;
            }
            k += 32;
        }
        sync_threads();
        if *sh_flag == 0 {
            return;
        }
    }
    if shared && n_if > 1 {
        my_iface = if lane < n_if {
            c.ifaces.read((if_at + lane) as usize)
        } else {
            0
        };
    }
    // The slice's tables into shared memory.
    let bits0 = s as usize * n_bits as usize;
    let mut i = tid;
    while i < n_bits {
        *sh_bits.add(i as usize) = c.bits.read(bits0 + i as usize);
        i += nt;
    }
    let mut i = tid;
    while i < n_cuts {
        *sh_cuts.add(i as usize) = c.cuts.read(i as usize);
        i += nt;
    }
    let at0 = (2 * s * rows * cells) as usize;
    let first_edge = c.edge_at.read(at0);
    let mut i = tid;
    while i < n_at {
        *sh_at.add(i as usize) = c.edge_at.read(at0 + i as usize) - first_edge;
        i += nt;
    }
    let n_edges = c.edge_at.read(at0 + (2 * rows * cells) as usize) - first_edge;
    let mut i = tid;
    while i < n_edges {
        *sh_edges.add(i as usize) = c.edges.read((first_edge + i) as usize);
        i += nt;
    }
    // The slice's live slots: a filter, not removed.
    let mut w = warp;
    while w < CELL_WORDS {
        let k = s * CELL_SLICE + w * 32 + lane;
        let live =
            k < t.n_filters && t.filters.read(*by_iface.add(k as usize) as usize).iface != REMOVED;
        let m = ballot(live);
        if lane == 0 {
            *sh_live.add(w as usize) = m;
        }
        w += warps;
    }
    *sh_mark.add(lane as usize) = 0;
    *sh_val.add(lane as usize) = 0;
    sync_threads();
    let live = *sh_live.add(lane as usize);
    // In name order: the names every filter of the slice constrains.
    let need = if SORTED { c.need.read(s as usize) } else { 0 };
    let word = s * CELL_WORDS + lane;
    // With `shared`: lane `l`'s word's interface bounds, and those of the lanes below it.
    let bound = if shared {
        c.bounds.read((s * CELL_WORDS + lane) as usize)
    } else {
        0
    };
    let (bound_before, _) = warp_scan(bound.count_ones());
    // The warp's `j`-th event of the list: its index, record and (lane `l`) attribute `l`
    // (global; an event past the list or an attribute past the event: empty).
    // With `shared` (and at most 32 interfaces in the slice), whether lane `l`'s
    // interface is answered already (read with the record: a bit set since is only
    // found at the next slice).
    let check = shared && n_if <= 32;
    let fetch = |j: u32| {
        if j >= n_dense {
            return (0, DevEvent::default(), DevAttr::default(), false);
        }
        let e = event_of(j);
        let ev = b.events.read(e as usize);
        let at = if lane < ev.len {
            b.attrs.read((ev.start + lane) as usize)
        } else {
            DevAttr::default()
        };
        (e, ev, at, check && lane < n_if && answered(e, my_iface))
    };
    let mut j = group * warps + warp;
    let mut next = fetch(j);
    while j < n_dense {
        let (e, ev, first, had) = next;
        // The next event's loads in flight while this one is matched.
        next = fetch(j + step);
        // Every interface of the slice already answered: nothing left to find.
        if check && all_sync(lane >= n_if || had) {
            j += step;
            continue;
        }
        // In name order: a name every filter of the slice constrains is not the event's.
        if SORTED && need & !ev.sig != 0 {
            j += step;
            continue;
        }
        // The event's integer and count of attributes per name of the cells.
        *sh_cnt.add(lane as usize) = 0;
        sync_warp();
        let mut odd = false;
        let mut a = lane;
        while a < ev.len {
            let at = if a < 32 {
                first
            } else {
                b.attrs.read((ev.start + a) as usize)
            };
            if at.row_id < rows {
                atomic_add(sh_cnt.add(at.row_id as usize), 1);
                if at.ty == TY_INT as u32 {
                    let v = (at.val as i64).clamp(i32::MIN as i64, i32::MAX as i64) as i32;
                    *sh_val.add(at.row_id as usize) = v;
                } else {
                    odd = true;
                }
            }
            a += 32;
        }
        sync_warp();
        let count = *sh_cnt.add(lane as usize);
        let fails = if any_sync(odd || (lane < rows && count > 1)) {
            !by_rules(t, b, &ev, s, by_iface)
        } else {
            // Lane `r` of name `r`: its cell (or the absent one) and the cell's failing
            // edges, one run: the lower bounds above the value, then the upper bounds
            // below it (two binary searches).
            let v = *sh_val.add(lane as usize);
            let (cell, e0, e1) = if lane >= rows {
                (0, 0, 0)
            } else if count == 0 {
                (lane * (cells + 1) + cells, 0, 0)
            } else {
                let x = cell_of(sh_cuts.add((lane * (cells - 1)) as usize), cells - 1, v);
                let q = (2 * (lane * cells + x)) as usize;
                let (lo, up, end) = (*sh_at.add(q), *sh_at.add(q + 1), *sh_at.add(q + 2));
                let first = first_bound(sh_edges, lo, up, |b| b > v);
                let last = first_bound(sh_edges, up, end, |b| b >= v);
                (lane * (cells + 1) + x, first, last)
            };
            let word_of = |r: u32| *sh_bits.add((shfl(cell, r) * CELL_WORDS + lane) as usize);
            let (mut f0, mut f1, mut f2, mut f3) = (0u32, 0u32, 0u32, 0u32);
            if c.groups == 0 {
                // Every name's cell or absent cell, four at a time: their four loads in
                // flight at once.
                let mut r = 0;
                while r + 4 <= rows {
                    f0 |= word_of(r);
                    f1 |= word_of(r + 1);
                    f2 |= word_of(r + 2);
                    f3 |= word_of(r + 3);
                    r += 4;
                }
                while r < rows {
                    f0 |= word_of(r);
                    r += 1;
                }
            } else {
                // The present names' cells, two at a time, then per group the union of
                // its absent names' absent cells (one OR for up to four names).
                let present = ballot(lane < rows && count > 0);
                let mut p = present;
                while p != 0 {
                    f0 |= word_of(p.trailing_zeros());
                    p &= p - 1;
                    if p != 0 {
                        f1 |= word_of(p.trailing_zeros());
                        p &= p - 1;
                    }
                }
                let names = if rows >= 32 {
                    u32::MAX
                } else {
                    (1u32 << rows) - 1
                };
                let absent = names & !present;
                let unions = sh_bits.add((rows * (cells + 1) * CELL_WORDS + lane) as usize);
                let mut g = 0;
                while g < c.groups {
                    let m = (absent >> (g * GROUP_NAMES)) & (GROUP_SETS - 1);
                    if m != 0 {
                        let w = *unions.add(((g * GROUP_SETS + m) * CELL_WORDS) as usize);
                        if g % 2 == 0 {
                            f2 |= w;
                        } else {
                            f3 |= w;
                        }
                    }
                    g += 1;
                }
            }
            let mut fw = f0 | f1 | f2 | f3;
            // The names' failing edges end to end, 32 at a time, each marked.
            let (start, total) = warp_scan(e1 - e0);
            let mut base = 0;
            while base < total {
                let i = base + lane;
                let k = lane_holding(start, i);
                let (ek, sk) = (shfl(e0, k), shfl(start, k));
                if i < total {
                    let at = (*sh_edges.add((ek + i - sk) as usize)).at & !EDGE_UPPER;
                    atomic_or(sh_mark.add((at / 32) as usize), 1 << (at % 32));
                }
                base += 32;
            }
            sync_warp();
            fw |= *sh_mark.add(lane as usize);
            *sh_mark.add(lane as usize) = 0;
            fw
        };
        let matched = live & !fails;
        let row = bits.add(e as usize * t.words as usize);
        if shared {
            set_interfaces(
                row,
                matched,
                bound,
                bound_before,
                c,
                if_at,
                n_if,
                my_iface,
                done,
            );
        } else if SORTED {
            // Each passing slot's interface bit, by its rank (and its count).
            let mut m = matched;
            while m != 0 {
                let r = c
                    .rank
                    .read((s * CELL_SLICE + lane * 32 + m.trailing_zeros()) as usize);
                m &= m - 1;
                atomic_or(row.add((r / 32) as usize), 1 << (r % 32));
                if !counts.is_null() {
                    atomic_add(counts.add((e * c.slices + r / CELL_SLICE) as usize), 1);
                }
            }
        } else if word < t.words {
            *row.add(word as usize) = matched;
        }
        if all && !shared && !SORTED {
            // The slice's count of the event's answers, for the lists.
            let n = warp_sum(matched.count_ones());
            if lane == 0 {
                *counts.add((e * c.slices + s) as usize) = n;
            }
        }
        sync_warp();
        j += step;
    }
}

/// With [`CellTables::shared`]: sets in `row` (an event's row of answer bits, global)
/// the bits of the interfaces of the slots that passed, lane `l`'s word `matched` of
/// them. A slice of one interface (`n_if` of them, the first `my_iface` in lane 0): one
/// atomic OR by lane 0 when any lane's word is not zero. Else each lane, per run of its
/// word's slots in one interface with a slot that passed, one atomic OR of that
/// interface's bit: the slice's interface number `before` (the bounds of the lanes
/// below) plus the bounds of its word up to the slot (`ifaces[if_at ..]`, global).
/// Each bit set where the row did not have it counts the event in `done[i]` (global,
/// atomic add). Every lane of the warp calls it.
///
/// # Safety
/// `row` is the event's row of answer bits; `c`'s interface tables hold the slice's
/// interfaces from `if_at` and `bound` is the lane's word of its bounds; `done` holds a
/// word per interface.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn set_interfaces(
    row: *mut u32,
    matched: u32,
    bound: u32,
    before: u32,
    c: &CellTables<'static>,
    if_at: u32,
    n_if: u32,
    my_iface: u32,
    done: *mut u32,
) {
    let set = |i: u32| {
        let bit = 1 << (i % 32);
        if atomic_or(row.add((i / 32) as usize), bit) & bit == 0 {
            atomic_add(done.add(i as usize), 1);
        }
    };
    if n_if == 1 {
        let hit = any_sync(matched != 0);
        if hit && lane_id() == 0 {
            set(my_iface);
        }
        return;
    }
    let mut m = matched;
    while m != 0 {
        let bit = m.trailing_zeros();
        let upto = u32::MAX >> (31 - bit);
        let i = c
            .ifaces
            .read((if_at + before + (bound & upto).count_ones()) as usize);
        set(i);
        // On to the slots of the word's next interface.
        let after = bound & !upto;
        m = if after == 0 {
            0
        } else {
            m & !((1u32 << after.trailing_zeros()) - 1)
        };
    }
}

/// Lane `l`'s word of the slots of slice `s` that event `ev` matches by SFF's rules: for
/// each group of 32 slots, each lane tries one (its filter's constraints, global) and
/// the group's ballot is kept by the lane of the group's word. Every lane of the warp
/// calls it.
///
/// # Safety
/// As [`cells_block`].
#[inline(always)]
unsafe fn by_rules(
    t: &IndexTables<'static>,
    b: &IndexEvents<'static>,
    ev: &crate::DevEvent,
    s: u32,
    by_iface: *const u32,
) -> u32 {
    let lane = lane_id();
    let mut mine = 0;
    let mut w = 0;
    while w < CELL_WORDS {
        let k = s * CELL_SLICE + w * 32 + lane;
        let mut ok = false;
        if k < t.n_filters {
            let p = *by_iface.add(k as usize);
            let f = t.filters.read(p as usize);
            if f.iface != REMOVED && f.sig & !ev.sig == 0 {
                let end = t.filters.read(p as usize + 1).first;
                ok = satisfies(t, b, ev, f.first, end);
            }
        }
        let m = ballot(ok);
        if lane == w {
            mine = m;
        }
        w += 1;
    }
    mine
}

/// Threads per block of [`ccm_cells_spans()`] and [`ccm_cells_lists()`].
pub const CELL_LIST_BLOCK: u32 = 256;

/// Dynamic shared memory of [`ccm_cells_spans()`]: a word per warp of its block, and the
/// event's first place.
pub const CELL_SPANS_SHARED: u32 = 4 * (CELL_LIST_BLOCK / 32 + 1);

kernel! {
    /// Beyond the paper: the answers' counts per slice of the value cells' filters when
    /// events of the batch were walked, for [`ccm_cells_spans`] and [`ccm_cells_lists`]
    /// (with every event on the cells, [`ccm_index_cells`] writes them): a warp per event
    /// and run of [`CELL_LIST_SLICES`] slices (as [`ccm_cells_lists`]), per slice `s`
    /// lane `l` reading word `32 s + l` of the event's row of `bits` (global; the next
    /// slice's word in flight), the warp's sum of their bit counts written to
    /// `counts[e * slices + s]` (global).
    pub fn ccm_cells_counts(
        bits: *const u32,
        words: u32,
        slices: u32,
        n_events: u32,
        counts: *mut u32,
    ) {
        let runs = cell_list_warps(slices).max(1);
        let q = (block_idx_x() * block_dim_x() + thread_idx_x()) / 32;
        let e = q / runs;
        // `q` is the same for the warp's lanes: a warp returns whole.
        if e >= n_events {
            return;
        }
        let lane = lane_id();
        let lo = q % runs * CELL_LIST_SLICES;
        let hi = (lo + CELL_LIST_SLICES).min(slices);
        let row = bits.add(e as usize * words as usize);
        let fetch = |s: u32| {
            let w = s * CELL_WORDS + lane;
            if w < words { load(row, w as usize) } else { 0 }
        };
        let mut next = fetch(lo);
        let mut s = lo;
        while s < hi {
            let word = next;
            if s + 1 < hi {
                next = fetch(s + 1);
            }
            let n = warp_sum(word.count_ones());
            if lane == 0 {
                store(counts, (e * slices + s) as usize, n);
            }
            s += 1;
        }
    }
}

kernel! {
    /// Beyond the paper: the places of the answer lists of events on the value cells'
    /// filters (every event on the cells, [`ccm_index_cells`] with `all`, or the counts
    /// made by [`ccm_cells_counts`]): per event `e` (`blockIdx.x`,
    /// [`CELL_LIST_BLOCK`] threads), thread `i` takes the `i`-th run of its `slices`
    /// counts `counts[e * slices ..]` (global) and sums it; a block scan (each warp's
    /// [`warp_scan`], the warps' sums in shared memory, a barrier) gives each run its
    /// first place in the event's list; thread 0 reserves the event's places (one atomic
    /// add on `total[0]`; global, zero before the launch) and writes
    /// `spans[2e] = first place, spans[2e + 1] = count` (mapped host memory), the first
    /// place to the block through shared memory; then each thread rewrites its run's
    /// counts as each slice's first place in the lists (global). Thread 0 of block 0
    /// reports the launch's dense events and walk and zeroes them
    /// ([`report_counters`], as [`crate::index::ccm_index_lists`] does). Dynamic shared
    /// memory: [`CELL_SPANS_SHARED`].
    pub fn ccm_cells_spans(
        counts: *mut u32,
        slices: u32,
        n_events: u32,
        spans: *mut u32,
        total: *mut u32,
        dense: *mut u32,
        walked: *mut u32,
        n_dense: *mut u32,
    ) {
        let e = block_idx_x();
        if e == 0 && thread_idx_x() == 0 {
            report_counters(dense, walked, n_dense);
        }
        if e >= n_events {
            return;
        }
        let tid = thread_idx_x();
        let warps = block_dim_x() / 32;
        let run = slices.div_ceil(block_dim_x());
        let row = counts.add((e * slices) as usize);
        let lo = (tid * run).min(slices);
        let hi = (lo + run).min(slices);
        let mut sum = 0u32;
        let mut i = lo;
        while i < hi {
            sum += *row.add(i as usize);
            i += 1;
        }
        let sh = dynamic_shared::<u32>();
        let (before, warp_total) = warp_scan(sum);
        let warp = tid / 32;
        if lane_id() == 0 {
            *sh.add(warp as usize) = warp_total;
        }
        sync_threads();
        let (mut at, mut count) = (before, 0u32);
        let mut w = 0;
        while w < warps {
            let v = *sh.add(w as usize);
            if w < warp {
                at += v;
            }
            count += v;
            w += 1;
        }
        if tid == 0 {
            let base = if count > 0 { atomic_add(total, count) } else { 0 };
            *sh.add(warps as usize) = base;
            *(spans as *mut u64).add(e as usize) = base as u64 | (count as u64) << 32;
        }
        sync_threads();
        let mut at = at + *sh.add(warps as usize);
        let mut i = lo;
        while i < hi {
            let n = *row.add(i as usize);
            *row.add(i as usize) = at;
            at += n;
            i += 1;
        }
    }
}

/// Slices per warp of [`ccm_cells_lists()`] and [`ccm_cells_counts()`] (a warp over several
/// slices has the next slice's loads in flight while it lists one). One: on the H200 the
/// dense model's lists at 1M filters took 176-233 ns an event with a warp per slice,
/// 472-822 with a warp per eight (the ids of a word are written one after another, each
/// after its user id's load: the warps' chains, not their first loads, set the time,
/// and eight slices per warp left an eighth of the warps to overlap them).
pub const CELL_LIST_SLICES: u32 = 1;

/// Warps of [`ccm_cells_lists()`] per event of `slices` slices.
pub const fn cell_list_warps(slices: u32) -> u32 {
    slices.div_ceil(CELL_LIST_SLICES)
}

kernel! {
    /// Beyond the paper: the answer lists when every event of the batch was on the value
    /// cells, after [`ccm_cells_spans`]: a warp per event and run of [`CELL_LIST_SLICES`]
    /// slices, `q = blockIdx.x * W + w` (`e = q / R`, the run `q % R`, `R` =
    /// [`cell_list_warps`]; `W` warps per block), taking the run's slices in order, the
    /// next one's loads issued before this one is listed. Per slice `s`, lane `l` reads
    /// word `32 s + l` of the event's row of `bits` (global; the warp 128 contiguous
    /// bytes), the warp's prefix sum of the words' bit counts ([`warp_scan`]) places its
    /// ids after the slice's first place `places[e * slices + s]` (global, from
    /// [`ccm_cells_spans`]), it writes the user ids (`user_ids[rank]`, global, read-only)
    /// of its word's set bits in ascending order into `ids` (global) and zeroes its word
    /// if set (a launch that walks the partitions next ORs into zero rows). The list comes
    /// out ascending with no sort. When the lists outgrow the room `cap` of `ids` (the
    /// answers' total `total[0]`, global, passes it), nothing is listed nor zeroed:
    /// [`crate::index::ccm_index_answers`] lists the events again into a larger buffer,
    /// at the same places, and zeroes their rows.
    pub fn ccm_cells_lists(
        bits: *mut u32,
        words: u32,
        slices: u32,
        n_events: u32,
        places: *const u32,
        user_ids: *const u32,
        ids: *mut u32,
        cap: u32,
        total: *const u32,
    ) {
        let runs = cell_list_warps(slices).max(1);
        let q = (block_idx_x() * block_dim_x() + thread_idx_x()) / 32;
        let e = q / runs;
        // `q` is the same for the warp's lanes: a warp returns whole.
        if e >= n_events || *total > cap {
            return;
        }
        let lane = lane_id();
        let lo = q % runs * CELL_LIST_SLICES;
        let hi = (lo + CELL_LIST_SLICES).min(slices);
        let row = bits.add(e as usize * words as usize);
        let at = places.add(e as usize * slices as usize);
        // Slice `s`'s word of lane `l` and first place.
        let fetch = |s: u32| {
            let w = s * CELL_WORDS + lane;
            let word = if w < words { load(row, w as usize) } else { 0 };
            (word, load(at, s as usize))
        };
        let mut next = fetch(lo);
        let mut s = lo;
        while s < hi {
            let (word, first) = next;
            if s + 1 < hi {
                next = fetch(s + 1);
            }
            let (before, _) = warp_scan(word.count_ones());
            let w = s * CELL_WORDS + lane;
            if word != 0 {
                store(row, w as usize, 0);
            }
            write_ids(word, w, user_ids, ids, first + before);
            s += 1;
        }
    }
}
