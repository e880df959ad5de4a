//! Beyond the paper: the kernels of the pruning matcher (`ccm::index`), which touches
//! only the filters an event can match instead of every constraint on its names.
//!
//! The index is the GPU form of the CPU name index's partitions (OpIndex's pivot
//! attribute, refined to a pair; `baselines::content_index`): each filter is filed
//! under the pair of its two rarest names (or its one name), and an event visits only
//! the partitions of the pairs of its own names. Within a partition each filter carries
//! a 64-bit signature of its names (bit `row % 64`), then its constraints are evaluated
//! with SFF's typing rules (`crate::sat`), or, for a filter of integer comparisons,
//! its range form ([`IndexRange`]: one interval per name) against the event's integers
//! staged in shared memory. Answers are one bit per (event, interface) in a bitmap,
//! turned into a compact list of interfaces per event on the device.
//!
//! Kernels per batch of events:
//! - [`ccm_index_route()`]: a warp per event. Sums the sizes of the partitions the event
//!   visits; an event that would visit more than `dense_limit` filters is handed to the
//!   filter-major kernel (appended to a list), the others are matched here, the warp's
//!   lanes sweeping the event's partitions laid end to end (no block barrier: with a
//!   block per event, its barriers and idle threads made the walk 12 ns per event of
//!   Table 1's default scenario on an H100, most of the device's time);
//! - [`ccm_index_dense()`]: the filter-major kernel for those dense events (events that
//!   carry most names visit most filters: partitioning cannot prune them, so the
//!   filters are read once per chunk of events instead of once per event), or
//!   [`ccm_index_dense_narrow()`], the same comparing `i32`s where every range bound
//!   allows it exactly ([`RangeValue`]);
//! - or, when interfaces hold many filters each, [`ccm_index_iface()`] for those dense
//!   events: a block per (event, interface) tries the interface's filters, fewest
//!   constraints first, and stops at the first match (SFF's early stop per
//!   interface), so a dense event costs a few groups of 32 filters per interface;
//! - [`ccm_index_lists()`]: a thread per event (a block of warps when rows are long,
//!   each warp a segment of the row) counts the bits of its bitmap row, reserves room,
//!   writes the ascending list of its interfaces' user ids and zeroes the row for the
//!   next batch (and the count of dense events; the host zeroes the answers' total
//!   before each launch); when the lists outgrow their buffer, [`ccm_index_answers()`]
//!   lists them again in a larger one.

use crate::{sat_attr, satisfies_all, DevAttr, DevConstraint, DevEvent, TY_INT};
use gpu_kernels::prelude::*;
use gpu_kernels::{kernel, DevPtr, KernelStruct};

/// One filter of the index, in partition order: the signature of its names (bit
/// `row % 64`), its first constraint in [`IndexTables::constraints`] (the next filter's
/// `first` ends them: the table has a sentinel after the last filter) and the rank of
/// its interface (interfaces numbered in ascending order of their user ids), or
/// [`REMOVED`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct IndexFilter {
    pub sig: u64,
    pub first: u32,
    pub iface: u32,
}

/// A filter's constraints on one name in range form (the filter-major kernel's fast
/// path): the integer attribute satisfies them exactly when `lo <= value <= hi`.
/// Built on the host for filters whose constraints are all integer comparisons
/// (`=`, `<`, `>`, `<=`, `>=`) on at most [`MAX_RANGES`] names of rows below
/// [`RANGE_ROWS`]: their intersection per name (SFF's rule for two integers is the
/// signed comparison, so the interval is exact).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct IndexRange {
    pub lo: i64,
    pub hi: i64,
    pub row: u32,
    pub pad: u32,
}

impl IndexRange {
    /// Whether the event's integer of this range's name lies in it.
    ///
    /// # Safety
    /// `vals` holds [`RANGE_ROWS`] values (an event's integers by row) and `self.row` is
    /// below it.
    #[inline(always)]
    pub unsafe fn holds(&self, vals: *const i64) -> bool {
        let v = *vals.add(self.row as usize);
        self.lo <= v && v <= self.hi
    }
}

/// Event `ev`'s integers by row into `vals` (rows below [`RANGE_ROWS`]; the others are
/// left as they are; as [`RangeValue`] `V`), and the mask of those rows: what the ranges
/// of [`IndexRange`] are compared with.
///
/// # Safety
/// `vals` is writable for [`RANGE_ROWS`] values; the event's attributes are in `b`.
#[inline(always)]
unsafe fn stage_integers<V: RangeValue>(
    b: &IndexEvents<'static>,
    ev: &DevEvent,
    vals: *mut V,
) -> u32 {
    let mut mask = 0u32;
    let mut a = 0;
    while a < ev.len {
        let at = b.attrs.read((ev.start + a) as usize);
        if at.row_id < RANGE_ROWS && at.ty == TY_INT as u32 {
            *vals.add(at.row_id as usize) = V::of(at.val as i64);
            mask |= 1 << at.row_id;
        }
        a += 1;
    }
    mask
}

/// Most names of a filter in range form ([`IndexRange`]).
pub const MAX_RANGES: usize = 5;
/// Name rows below this can be in range form: the filter-major kernel keeps each
/// event's integer values of these rows in shared memory.
pub const RANGE_ROWS: u32 = 32;

/// How an event's integer is staged for the range form ([`IndexRange`]): as it is
/// (`i64`), or (`i32`, when every bound of every range is narrow: [`is_narrow`]) clamped
/// to `i32`, with the ranges clamped alike, which decides exactly as the `i64` compare
/// (clamping is monotone, and a narrow bound lies strictly inside `i32` or is
/// unbounded): half the shared memory and the registers, and a warp's reads of 32
/// filters' rows of one event fall in distinct banks.
pub trait RangeValue: Copy + PartialOrd + Default {
    /// The staged form of `v`.
    fn of(v: i64) -> Self;
}

impl RangeValue for i64 {
    #[inline(always)]
    fn of(v: i64) -> i64 {
        v
    }
}

impl RangeValue for i32 {
    #[inline(always)]
    fn of(v: i64) -> i32 {
        v.clamp(i32::MIN as i64, i32::MAX as i64) as i32
    }
}

/// Whether the range `lo..=hi` is narrow: each bound strictly inside `i32` or unbounded
/// on its own side (`lo` at `i64::MIN`, `hi` at `i64::MAX`); when every range is, the
/// filter-major kernel compares `i32`s ([`RangeValue`]: an event's integer clamped into
/// `i32` then lies on the same side of each bound as it did). A lower bound at `i64::MAX`
/// (`= i64::MAX`, `>= i64::MAX`) is not unbounded: clamped, every integer past `i32`
/// would read as equal to it.
pub const fn is_narrow(lo: i64, hi: i64) -> bool {
    const fn inside(b: i64) -> bool {
        b > i32::MIN as i64 && b < i32::MAX as i64
    }
    (lo == i64::MIN || inside(lo)) && (hi == i64::MAX || inside(hi))
}

/// Key of an empty slot of the partition table.
pub const EMPTY_KEY: u64 = u64::MAX;

/// [`IndexFilter::iface`] of a filter removed since the index was built: every kernel
/// skips it (the host overwrites the filter in place instead of rebuilding).
pub const REMOVED: u32 = u32::MAX;

/// One slot of the partition table (open addressing, linear probing): `key` is
/// `a << 32 | b` for the name rows `a <= b` of a partition (`a == b`: filters with one
/// name), its filters are `first..end` in partition order.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct Partition {
    pub key: u64,
    pub first: u32,
    pub end: u32,
}

impl Default for Partition {
    fn default() -> Self {
        Partition {
            key: EMPTY_KEY,
            first: 0,
            end: 0,
        }
    }
}

/// The partition key of name rows `a` and `b`.
#[inline(always)]
pub fn pair_key(a: u32, b: u32) -> u64 {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    (lo as u64) << 32 | hi as u64
}

/// No third name: the third part of the [`triple_key`] of a filter of fewer than three
/// names. Triple partitions need every name row below it.
pub const NO_THIRD: u32 = (1 << 21) - 1;

/// Most names of an event that probes the triple partitions: its singles, pairs and
/// triples of names, at most 32 (one per lane).
pub const TRIPLE_NAMES: u32 = 5;

/// The triple partition key of a filter whose rarest names are `r0`, `r1`, `r2` (in
/// the order of [`IndexTables::row_rank`]; `r1 = r0` for a filter of one name, `r2 =`
/// [`NO_THIRD`] for one of fewer than three): its pair (as [`pair_key`], the lesser row
/// first) and its third name, 21 bits each (never [`EMPTY_KEY`]). Filters are stored in
/// the order of these keys, so a pair's partition is a run of its triples' partitions.
#[inline(always)]
pub fn triple_key(r0: u32, r1: u32, r2: u32) -> u64 {
    let (lo, hi) = if r0 <= r1 { (r0, r1) } else { (r1, r0) };
    (lo as u64) << 42 | (hi as u64) << 21 | r2 as u64
}

/// The first slot to probe for `key` in a table of `mask + 1` slots (a power of two).
#[inline(always)]
pub fn slot_of(key: u64, mask: u32) -> u32 {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as u32 & mask
}

/// The device tables of the index: `filters[0..=n_filters]` (with the sentinel),
/// `constraints` in filter order (`key` = the name's row), the constraint string pool,
/// the partition table of `part_mask + 1` slots; answers are `words` bitmap words per
/// event; `shared` is 1 when some interface has several filters (then a filter whose
/// interface already matched the event is skipped); `rows` name rows. Filter `p`'s
/// range form is `ranges[range_at[p]..range_at[p + 1]]` (none: not in range form);
/// `ranged` is 1 when some filter has one.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IndexTables<'a> {
    pub filters: DevPtr<'a, IndexFilter>,
    /// `filters[p].sig` for each filter `p`, alone: what the partition walk reads of
    /// most filters (half the bytes of their records).
    pub sigs: DevPtr<'a, u64>,
    pub ranges: DevPtr<'a, IndexRange>,
    pub range_at: DevPtr<'a, u32>,
    pub constraints: DevPtr<'a, DevConstraint>,
    pub cpool: DevPtr<'a, u8>,
    pub parts: DevPtr<'a, Partition>,
    pub part_mask: u32,
    /// The triple partitions ([`triple_key`]; `part3_mask + 1` slots, at least one
    /// empty), each a run of filters within its pair's partition.
    pub parts3: DevPtr<'a, Partition>,
    pub part3_mask: u32,
    /// Per name row its rank in the order of the filters' names by rarity (the order
    /// in which a filter's rarest names are taken).
    pub row_rank: DevPtr<'a, u32>,
    /// Events of at most this many names (at most [`TRIPLE_NAMES`]) probe the triple
    /// partitions instead of the pairs'; 0: none does.
    pub triple_names: u32,
    pub n_filters: u32,
    pub words: u32,
    pub shared: u32,
    pub rows: u32,
    pub ranged: u32,
    /// Interfaces (ranks `0..n_ifaces`: the answer bits that can be set).
    pub n_ifaces: u32,
}

// SAFETY: `#[repr(C)]`; device pointers and integers; `Host<'a>` differs only in the
// lifetime.
unsafe impl KernelStruct for IndexTables<'static> {
    type Host<'a> = IndexTables<'a>;
}

/// A batch of encoded events (as [`crate::EventBatch`]): `n_events` events, their
/// attributes (`row_id` = the name's row) and string bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IndexEvents<'a> {
    pub events: DevPtr<'a, DevEvent>,
    pub attrs: DevPtr<'a, DevAttr>,
    pub ebytes: DevPtr<'a, u8>,
    pub n_events: u32,
}

// SAFETY: `#[repr(C)]`; device pointers and integers; `Host<'a>` differs only in the
// lifetime.
unsafe impl KernelStruct for IndexEvents<'static> {
    type Host<'a> = IndexEvents<'a>;
}

/// Threads per block of [`ccm_index_lists()`] and [`ccm_index_answers()`].
pub const WARP_BLOCK: u32 = 256;
/// Events per block row of [`ccm_index_dense()`] (their signatures in shared memory).
pub const DENSE_CHUNK: u32 = 128;

/// The filters `first..end` of the partition with `key`, or an empty range.
///
/// # Safety
/// `t.parts` holds `t.part_mask + 1` slots with at least one empty.
#[inline(always)]
unsafe fn probe(t: &IndexTables<'static>, key: u64) -> (u32, u32) {
    probe_in(t.parts, t.part_mask, key)
}

/// As [`probe`], in the table `parts` of `mask + 1` slots.
///
/// # Safety
/// `parts` holds `mask + 1` slots with at least one empty.
#[inline(always)]
unsafe fn probe_in(parts: DevPtr<'static, Partition>, mask: u32, key: u64) -> (u32, u32) {
    let mut s = slot_of(key, mask);
    loop {
        let p = parts.read(s as usize);
        if p.key == key {
            return (p.first, p.end);
        }
        if p.key == EMPTY_KEY {
            return (0, 0);
        }
        s = (s + 1) & mask;
    }
}

/// The `q`-th pair `(i, j)`, `i < j`, of `n` items in order (0,1), (0,2), .., (1,2), ..
#[inline(always)]
fn strict_pair_of(mut q: u32, n: u32) -> (u32, u32) {
    let mut i = 0;
    while q >= n - 1 - i {
        q -= n - 1 - i;
        i += 1;
    }
    (i, i + 1 + q)
}

/// The filters `first..end` of the triple partition of the event's name set `q` among
/// its singles (`q < n`), pairs, then triples (`n` = `ev.len` names, at most
/// [`TRIPLE_NAMES`]), or an empty range past the last. A set's key is that of a filter
/// whose rarest names are exactly the set ([`triple_key`]): a triple ordered by
/// [`IndexTables::row_rank`], its two rarest as the pair.
///
/// # Safety
/// As [`probe`]; the event's attributes are in `sh_attrs` (shared) and every row has a
/// rank in `t.row_rank`.
#[inline(always)]
unsafe fn triple_range(
    t: &IndexTables<'static>,
    ev: &DevEvent,
    sh_attrs: *const DevAttr,
    q: u32,
    ncombos: u32,
) -> (u32, u32) {
    if q >= ncombos {
        return (0, 0);
    }
    let row = |a: u32| (*sh_attrs.add(a as usize)).row_id;
    let (size, i, j, k) = name_set(q, ev.len);
    if size == 1 {
        let x = row(i);
        return probe_in(t.parts3, t.part3_mask, triple_key(x, x, NO_THIRD));
    }
    if size == 2 {
        return probe_in(t.parts3, t.part3_mask, triple_key(row(i), row(j), NO_THIRD));
    }
    let (mut x, mut y, mut z) = (row(i), row(j), row(k));
    let (mut rx, mut ry, mut rz) = (
        t.row_rank.read(x as usize),
        t.row_rank.read(y as usize),
        t.row_rank.read(z as usize),
    );
    // Sorted by rank: x the rarest, z the most common (the third).
    if ry < rx {
        (x, y, rx, ry) = (y, x, ry, rx);
    }
    if rz < ry {
        (y, z, ry, rz) = (z, y, rz, ry);
    }
    if ry < rx {
        (x, y) = (y, x);
    }
    let _ = (rx, rz);
    probe_in(t.parts3, t.part3_mask, triple_key(x, y, z))
}

/// The `q`-th (below [`triple_sets`]`(n)`) set of the names `0..n`: the singles `(0)`,
/// `(1)`, .., then the pairs `(0, 1)`, `(0, 2)`, .., then the triples `(0, 1, 2)`, ..
/// (`i < j < k`): its size and its names `(i, j, k)` (the unused ones 0).
#[inline(always)]
pub fn name_set(q: u32, n: u32) -> (u32, u32, u32, u32) {
    if q < n {
        return (1, q, 0, 0);
    }
    let mut r = q - n;
    let pairs = n * (n - 1) / 2;
    if r < pairs {
        let (i, j) = strict_pair_of(r, n);
        return (2, i, j, 0);
    }
    r -= pairs;
    // The triples (i, j, k): the pairs of the names after i, for i in turn.
    let mut i = 0;
    loop {
        let m = n - 1 - i;
        let c = m * (m - 1) / 2;
        if r < c {
            break;
        }
        r -= c;
        i += 1;
    }
    let (j, k) = strict_pair_of(r, n - 1 - i);
    (3, i, i + 1 + j, i + 1 + k)
}

/// The number of name sets an event of `n` names probes in the triple partitions:
/// singles, pairs and triples.
#[inline(always)]
pub fn triple_sets(n: u32) -> u32 {
    n + n * (n.max(1) - 1) / 2 + if n >= 3 { n * (n - 1) * (n - 2) / 6 } else { 0 }
}

/// The pair `q` of `n` attributes in triangular order: (0,0), (0,1), .., (0,n-1),
/// (1,1), ..: attribute indices `(i, j)`, `i <= j`.
#[inline(always)]
fn pair_of(mut q: u32, n: u32) -> (u32, u32) {
    let mut i = 0;
    while q >= n - i {
        q -= n - i;
        i += 1;
    }
    (i, i + q)
}

/// Whether event `ev` (attributes in `b`) satisfies every constraint
/// `t.constraints[first..end]` ([`crate::satisfies_all`]: each constraint's attribute
/// found by a search of the event's).
///
/// # Safety
/// The tables and the batch are the launch's (every index the host wrote is in range).
#[inline(always)]
pub(crate) unsafe fn satisfies(
    t: &IndexTables<'static>,
    b: &IndexEvents<'static>,
    ev: &DevEvent,
    first: u32,
    end: u32,
) -> bool {
    satisfies_all(
        t.constraints,
        first,
        end,
        ev,
        b.attrs,
        b.ebytes,
        t.cpool.ptr(),
    )
}

/// Filter `p` (its signature `sig`) against event `e`: the signature test, then (its
/// record read, not [`REMOVED`]) its range form ([`IndexRange`]) against the event's
/// integers by row `vals` (shared; `imask` the rows it has as integers) when the event
/// has each of its names as an integer, else its constraints by SFF's rules (the
/// event's attributes searched in `sh_attrs`, the warp's copy in shared memory, when
/// the event has at most [`ROUTE_ATTRS`]); a filter whose interface's bit is already
/// set (when interfaces have several filters) does not match again. On a match sets
/// the bit of the filter's interface in the event's bitmap row and returns true.
///
/// The loads are issued in as few rounds as their dependences allow, since a warp
/// waits for its slowest lane: the filter's record, the next one's (where its
/// constraints end) and where its ranges lie, together; then the interface's bit with
/// the ranges or the first two constraints (indices clamped into the filter's own, so
/// every load is in bounds), before any of them is used.
///
/// # Safety
/// As [`satisfies`]; `bits` holds `t.words` words per event of the batch; `vals` holds
/// [`RANGE_ROWS`] values; `sh_attrs` holds the event's first [`ROUTE_ATTRS`]
/// attributes; `t.ranges` holds at least one range.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn try_filter(
    t: &IndexTables<'static>,
    b: &IndexEvents<'static>,
    ev: &DevEvent,
    e: u32,
    p: u32,
    sig: u64,
    bits: *mut u32,
    vals: *const i64,
    imask: u32,
    sh_attrs: *const DevAttr,
) -> bool {
    if sig & !ev.sig != 0 {
        return false;
    }
    // Round 1: none of these depends on another.
    let f = t.filters.read(p as usize);
    let end = t.filters.read(p as usize + 1).first;
    let (r0, r1) = if t.ranged != 0 {
        (t.range_at.read(p as usize), t.range_at.read(p as usize + 1))
    } else {
        (0, 0)
    };
    if f.iface == REMOVED {
        return false;
    }
    let word = bits.add(e as usize * t.words as usize + (f.iface / 32) as usize);
    let bit = 1u32 << (f.iface % 32);
    if r0 < r1 {
        // Round 2: the interface's bit and the ranges, at once.
        let seen = if t.shared != 0 {
            volatile_load_u32(word)
        } else {
            0
        };
        let last = r1 - 1;
        let mut rg = [IndexRange::default(); MAX_RANGES];
        let mut k = 0;
        while k < MAX_RANGES {
            rg[k] = t.ranges.read(min_u32(r0 + k as u32, last) as usize);
            k += 1;
        }
        let (mut ok, mut need) = (true, 0u32);
        let mut k = 0;
        while k < MAX_RANGES {
            if r0 + (k as u32) < r1 {
                need |= 1 << rg[k].row;
                ok &= rg[k].holds(vals);
            }
            k += 1;
        }
        if need & !imask == 0 {
            let hit = ok && seen & bit == 0;
            if hit {
                atomic_or(word, bit);
            }
            return hit;
        }
    }
    // Round 2: the interface's bit and the first two constraints, at once (the first
    // unsatisfied one ends the test: most filters that pass the signature fail on one
    // of their first two; more held would cost registers, and so resident warps).
    let seen = if t.shared != 0 {
        volatile_load_u32(word)
    } else {
        0
    };
    // (The constraints buffer is never empty: index 0 is always in bounds.)
    let last = if end > 0 { end - 1 } else { 0 };
    let c0 = t.constraints.read(min_u32(f.first, last) as usize);
    let c1 = t.constraints.read(min_u32(f.first + 1, last) as usize);
    if seen & bit != 0 {
        return false;
    }
    let ok = if ev.len <= ROUTE_ATTRS {
        let n = end - f.first;
        sat_in_shared(b, t, sh_attrs, ev.len, &c0)
            && (n < 2 || sat_in_shared(b, t, sh_attrs, ev.len, &c1))
            && satisfies_shared(t, b, sh_attrs, ev.len, f.first + min_u32(n, 2), end)
    } else {
        satisfies(t, b, ev, f.first, end)
    };
    if ok {
        atomic_or(word, bit);
    }
    ok
}

/// The lesser of `a` and `b`.
#[inline(always)]
fn min_u32(a: u32, b: u32) -> u32 {
    if a < b {
        a
    } else {
        b
    }
}

/// `sat` of constraint `con` for the attribute of its name among the event's `len`
/// attributes in `sh_attrs` (shared), found by a search; an absent attribute fails.
///
/// # Safety
/// As [`satisfies_shared`].
#[inline(always)]
unsafe fn sat_in_shared(
    b: &IndexEvents<'static>,
    t: &IndexTables<'static>,
    sh_attrs: *const DevAttr,
    len: u32,
    con: &DevConstraint,
) -> bool {
    let mut a = 0;
    while a < len {
        let at = *sh_attrs.add(a as usize);
        if at.row_id == con.key {
            return sat_attr(con, &at, b.ebytes, t.cpool.ptr());
        }
        a += 1;
    }
    false
}

/// As [`satisfies`], the event's `len` attributes searched in `sh_attrs` (shared)
/// instead of global memory: a filter's constraints cost one global read each.
///
/// # Safety
/// As [`satisfies`]; `sh_attrs` holds the event's `len` attributes.
#[inline(always)]
unsafe fn satisfies_shared(
    t: &IndexTables<'static>,
    b: &IndexEvents<'static>,
    sh_attrs: *const DevAttr,
    len: u32,
    first: u32,
    end: u32,
) -> bool {
    let mut c = first;
    while c < end {
        if !sat_in_shared(b, t, sh_attrs, len, &t.constraints.read(c as usize)) {
            return false;
        }
        c += 1;
    }
    true
}

/// The sum of `v` over the warp, in every lane.
#[inline(always)]
pub(crate) fn warp_sum(mut v: u32) -> u32 {
    let mut d = 16;
    while d > 0 {
        v += shfl_xor(v, d);
        d /= 2;
    }
    v
}

/// Counters of [`ccm_index_route()`]'s walk (`walked`), each [`WALK_STRIDE`] words from
/// the next: an event adds to one, by its index, so that a launch's events do not all
/// add to one word (one atomic an event on one address, which the L2 serves one at a
/// time); [`ccm_index_lists()`] sums them.
pub const WALK_SLOTS: u32 = 32;
/// Words from one walk counter to the next (128 bytes: distinct lines).
pub const WALK_STRIDE: u32 = 32;
/// Words of the `walked` buffer: [`WALK_SLOTS`] counters [`WALK_STRIDE`] apart.
pub const WALK_WORDS: usize = (WALK_SLOTS * WALK_STRIDE) as usize;

/// The place of event `e`'s walk counter in `walked`.
#[inline(always)]
fn walk_slot(e: u32) -> usize {
    ((e % WALK_SLOTS) * WALK_STRIDE) as usize
}

/// Most attributes of an event that [`ccm_index_route()`] keeps in shared memory (an
/// event with more is searched in global memory).
pub const ROUTE_ATTRS: u32 = 32;

/// Shared memory of [`ccm_index_route()`] per warp (an event): the event's integers by
/// row ([`RANGE_ROWS`] values), the mask of those rows (two words), then its first
/// [`ROUTE_ATTRS`] attributes.
pub const ROUTE_WARP_BYTES: u32 =
    8 * RANGE_ROWS + 8 + ROUTE_ATTRS * core::mem::size_of::<DevAttr>() as u32;

/// Shared memory of [`ccm_index_route()`] for a block of `threads` (a warp per event).
pub const fn route_shared_bytes(threads: u32) -> u32 {
    threads.div_ceil(32) * ROUTE_WARP_BYTES
}

/// The filters `first..end` of the partition of the event's pair `q` (of its `len`
/// attributes), or an empty range past the last pair.
///
/// # Safety
/// As [`probe`]; the event's attributes are in the batch, its first [`ROUTE_ATTRS`] in
/// `sh_attrs` (shared).
#[inline(always)]
unsafe fn pair_range(
    t: &IndexTables<'static>,
    b: &IndexEvents<'static>,
    ev: &DevEvent,
    sh_attrs: *const DevAttr,
    q: u32,
    npairs: u32,
) -> (u32, u32) {
    if q >= npairs {
        return (0, 0);
    }
    let (i, j) = pair_of(q, ev.len);
    let row = |a: u32| {
        if a < ROUTE_ATTRS {
            (*sh_attrs.add(a as usize)).row_id
        } else {
            b.attrs.read((ev.start + a) as usize).row_id
        }
    };
    probe(t, pair_key(row(i), row(j)))
}

kernel! {
    /// Beyond the paper: the pruning matcher's partition walk (module docs).
    ///
    /// Grid: `wpe` warps per event `e` of the batch (`blockDim / 32` warps per block;
    /// more than one when a launch holds too few events to fill the GPU, as with the
    /// dense model's million interfaces, whose answer bitmap caps a launch at ~2,000
    /// events). Each warp first copies `e`'s attributes (global; the first
    /// [`ROUTE_ATTRS`], lane `l` the `l`-th) and its integers by row (for the filters'
    /// range forms) into its shared memory. Lane `l` probes the partition table
    /// (global, read-only) for the pairs `l, l + 32, ..` of `e`'s name rows and the
    /// warp sums the partitions' sizes (shuffles;
    /// each of the event's warps the same). Above `dense_limit` the event is appended
    /// to `dense` (`dense[0]` = the count, the events' indices from `dense[1]`; global,
    /// atomic; by its first warp) and left to [`ccm_index_dense`]. Otherwise, 32 pairs
    /// at a time, the warp lays the pairs' partitions end to end (a prefix sum of their
    /// sizes, held one per lane) and lane `l` of the event's warp `w` takes the filters
    /// `32 w + l, 32 w + l + 32 wpe, ..` of that sequence, finding each one's partition
    /// by a search over the lanes' starts (shuffles), so that a few large partitions
    /// and many small ones both keep every lane busy (the filters' signatures, then for
    /// those that pass their [`IndexFilter`], constraints and pool: global, read-only;
    /// the event's attributes searched in shared memory),
    /// setting bits of row `e` of `bits` (global, atomic
    /// OR). When interfaces have several filters and the row is at most 32 words, the
    /// warp reads the row (lane `l` word `l`, volatile) after each group of 32 filters
    /// in which one of its lanes matched, and stops once every interface's bit is set.
    /// When done, each warp adds the groups of 32 filters it tried to its event's
    /// counter in `walked` (global, atomic, one of [`WALK_SLOTS`] by the event's index):
    /// the launch's walk, which the host reads to give the next launch's events more
    /// warps where they walk long partitions to their end (where warps stop early, more
    /// warps only try more filters each: the dense model's events with ten interfaces
    /// went 28.8 ns an event of walk with four warps each, 6.4 with one).
    /// No block barrier: a warp's work is its own. Dynamic shared memory:
    /// [`route_shared_bytes`].
    pub fn ccm_index_route(
        t: IndexTables<'static>,
        b: IndexEvents<'static>,
        dense_limit: u32,
        wpe: u32,
        bits: *mut u32,
        dense: *mut u32,
        walked: *mut u32,
    ) {
        let warp = thread_idx_x() / 32;
        let gw = block_idx_x() * (block_dim_x() / 32) + warp;
        let (e, sub) = (gw / wpe, gw % wpe);
        // `e` is the same for the warp's lanes: a warp returns whole.
        if e >= b.n_events {
            return;
        }
        let lane = lane_id();
        let sh_val = dynamic_shared::<u8>().add((warp * ROUTE_WARP_BYTES) as usize) as *mut i64;
        let sh_imask = sh_val.add(RANGE_ROWS as usize) as *mut u32;
        let sh_attrs = sh_imask.add(2) as *mut DevAttr;
        let ev = b.events.read(e as usize);
        // The event's attributes in shared memory (lane `l` the `l`-th, read at once),
        // then its integers by row, for the filters' range forms: a row's first
        // attribute, the one SFF's search finds (lanes write distinct rows).
        *sh_val.add(lane as usize) = 0;
        let mut a = lane;
        while a < ev.len && a < ROUTE_ATTRS {
            *sh_attrs.add(a as usize) = b.attrs.read((ev.start + a) as usize);
            a += 32;
        }
        sync_warp();
        let row_of = |k: u32| {
            if k < ROUTE_ATTRS {
                (*sh_attrs.add(k as usize)).row_id
            } else {
                b.attrs.read((ev.start + k) as usize).row_id
            }
        };
        let mut rows = 0u32;
        let mut a = lane;
        while a < ev.len {
            let at = if a < ROUTE_ATTRS {
                *sh_attrs.add(a as usize)
            } else {
                b.attrs.read((ev.start + a) as usize)
            };
            if at.row_id < RANGE_ROWS && at.ty == TY_INT as u32 {
                let mut k = 0;
                while k < a && row_of(k) != at.row_id {
                    k += 1;
                }
                if k == a {
                    *sh_val.add(at.row_id as usize) = at.val as i64;
                    rows |= 1 << at.row_id;
                }
            }
            a += 32;
        }
        let mut d = 16;
        while d > 0 {
            rows |= shfl_xor(rows, d);
            d /= 2;
        }
        let imask = rows;
        sync_warp();
        // An event of few names probes its singles, pairs and triples of names in the
        // triple partitions (a filter is visited only when its three rarest names are
        // the event's), one of more names its singles and pairs in the pairs'.
        let triples = ev.len <= t.triple_names;
        let npairs = if triples {
            triple_sets(ev.len)
        } else {
            ev.len * (ev.len + 1) / 2
        };
        let range = |q: u32| {
            if triples {
                triple_range(&t, &ev, sh_attrs, q, npairs)
            } else {
                pair_range(&t, &b, &ev, sh_attrs, q, npairs)
            }
        };
        // Pass 1: the partitions' sizes (the first 32 pairs' ranges kept for pass 2).
        let (f0, end0) = range(lane);
        let mut mine = end0 - f0;
        let mut q = lane + 32;
        while q < npairs {
            let (f, end) = range(q);
            mine += end - f;
            q += 32;
        }
        let (_, visited) = warp_scan(mine);
        if visited > dense_limit {
            if sub == 0 && lane == 0 {
                let k = atomic_add(dense, 1);
                *dense.add(1 + k as usize) = e;
            }
            return;
        }
        // Pass 2: 32 pairs at a time, their filters end to end, this warp's share.
        // When interfaces have several filters and the answer row is at most 32 words,
        // the warp stops once every interface's bit is set (lane `l` reads word `l`,
        // after a group of 32 filters in which one matched): nothing is left to find
        // (SFF's early stop per interface, for all of them).
        let early = t.shared != 0 && t.words <= 32;
        let row = bits.add(e as usize * t.words as usize);
        let full = if lane + 1 < t.words || t.n_ifaces.is_multiple_of(32) {
            u32::MAX
        } else {
            (1u32 << (t.n_ifaces % 32)) - 1
        };
        let stride = 32 * wpe;
        // The groups of 32 filters this warp tried, counted in `walked` once it is done
        // (with an early stop, fewer than the partitions hold).
        let mut tried = 0u32;
        let mut q0 = 0;
        'walk: while q0 < npairs {
            let (f, end) = if q0 == 0 { (f0, end0) } else { range(q0 + lane) };
            let (start, total) = warp_scan(end - f);
            // The filter at place `i` of the pairs' filters laid end to end (every lane
            // calls it: shuffles), and its signature (0 past the end).
            let locate = |i: u32| {
                let k = lane_holding(start, i);
                shfl(f, k) + (i - shfl(start, k))
            };
            let sig_at = |i: u32, p: u32| if i < total { t.sigs.read(p as usize) } else { 0 };
            // Two of the warp's groups of 32 filters at a time, both filters' signatures
            // read before either is tried (two loads in flight per lane; reading the next
            // two groups' too, before these are tried, cost registers and was slower on
            // the H200: Table 2's walk 1.78 against 1.49 ns an event, Zipf's 15.8
            // against 14.0).
            let mut base = 32 * sub;
            while base < total {
                let (i, i2) = (base + lane, base + stride + lane);
                let (p, p2) = (locate(i), locate(i2));
                let (sa, sb) = (sig_at(i, p), sig_at(i2, p2));
                let hit = i < total && try_filter(&t, &b, &ev, e, p, sa, bits, sh_val, imask, sh_attrs);
                let hit2 = i2 < total && try_filter(&t, &b, &ev, e, p2, sb, bits, sh_val, imask, sh_attrs);
                tried += 1 + (base + stride < total) as u32;
                // A bit was set: the row may be full now.
                if early
                    && any_sync(hit || hit2)
                    && all_sync(lane >= t.words || volatile_load_u32(row.add(lane as usize)) == full)
                {
                    break 'walk;
                }
                base += 2 * stride;
            }
            q0 += 32;
        }
        if lane == 0 && tried > 0 {
            atomic_add(walked.add(walk_slot(e)), tried);
        }
    }
}

/// Most name rows for which [`ccm_index_dense()`] finds an event's attribute by its row
/// in a table in shared memory (above, by a search of the event's attributes).
pub const SLOT_ROWS: u32 = 64;

/// No attribute of the row in the event (a slot of [`ccm_index_dense`]'s table).
const NO_SLOT: u8 = 0xFF;

/// Shared memory of [`ccm_index_dense()`] (`narrow`: of [`ccm_index_dense_narrow()`]): the
/// chunk's events (index, then signature), then (when some filter has a range form)
/// each event's integer values of the rows below [`RANGE_ROWS`] (8 bytes each; 4 when
/// `narrow`) and the mask of those rows it has as integers, then (when the index has at
/// most [`SLOT_ROWS`] rows) each event's row -> attribute table.
pub const fn dense_shared_bytes(rows: u32, ranged: bool, narrow: bool) -> u32 {
    12 * DENSE_CHUNK
        + if ranged {
            DENSE_CHUNK * (if narrow { 4 } else { 8 } * RANGE_ROWS + 4)
        } else {
            0
        }
        + if rows <= SLOT_ROWS {
            DENSE_CHUNK * SLOT_ROWS
        } else {
            0
        }
}

/// A range of [`IndexRange`] held in registers by the filter-major kernel, its bounds
/// as [`RangeValue`] `V`.
#[derive(Clone, Copy, Default)]
struct HeldRange<V> {
    lo: V,
    hi: V,
    row: u32,
}

/// Whether the values `vals` (an event's integers by row, shared) lie in the first
/// `n` of the ranges `rg` (held in registers: the loop has a constant bound and a
/// small body, so it is unrolled and `rg` never lives in memory).
///
/// # Safety
/// `vals` holds [`RANGE_ROWS`] values and every range's row is below it.
#[inline(always)]
unsafe fn in_ranges<V: RangeValue>(
    vals: *const V,
    rg: &[HeldRange<V>; MAX_RANGES],
    n: u32,
) -> bool {
    let mut ok = true;
    let mut k = 0;
    while k < MAX_RANGES {
        if (k as u32) < n {
            let v = *vals.add(rg[k].row as usize);
            ok &= rg[k].lo <= v && v <= rg[k].hi;
        }
        k += 1;
    }
    ok
}

/// `sat` of constraint `con` for the attribute of its name row in event `e`, found
/// through the event's row table `slots` (shared); an absent attribute fails.
///
/// # Safety
/// As [`satisfies_slots`].
#[inline(always)]
unsafe fn sat_by_slot(
    t: &IndexTables<'static>,
    b: &IndexEvents<'static>,
    start: u32,
    slots: *const u8,
    con: &DevConstraint,
) -> bool {
    let a = *slots.add(con.key as usize);
    a != NO_SLOT
        && sat_attr(
            con,
            &b.attrs.read((start + a as u32) as usize),
            b.ebytes,
            t.cpool.ptr(),
        )
}

/// As [`satisfies`], finding each constraint's attribute through the row table
/// `slots` (shared) of the event whose attributes start at `start`, instead of by a
/// search.
///
/// # Safety
/// As [`satisfies`]; `slots` holds [`SLOT_ROWS`] entries, each [`NO_SLOT`] or an index
/// among the event's attributes, and every constraint's row is below [`SLOT_ROWS`].
#[inline(always)]
unsafe fn satisfies_slots(
    t: &IndexTables<'static>,
    b: &IndexEvents<'static>,
    start: u32,
    slots: *const u8,
    first: u32,
    end: u32,
) -> bool {
    let mut c = first;
    while c < end {
        let con = t.constraints.read(c as usize);
        if !sat_by_slot(t, b, start, slots, &con) {
            return false;
        }
        c += 1;
    }
    true
}

/// Most constraints of a filter that [`ccm_index_dense()`] keeps in registers for its
/// chunk of events (a longer filter's are read from memory per event).
pub const REG_CONSTRAINTS: usize = 5;

/// As [`satisfies_slots`], over the filter's `size <= REG_CONSTRAINTS` constraints
/// held in `cs` (registers: the loop has a constant bound and is unrolled).
///
/// # Safety
/// As [`satisfies_slots`].
#[inline(always)]
unsafe fn satisfies_held(
    t: &IndexTables<'static>,
    b: &IndexEvents<'static>,
    start: u32,
    slots: *const u8,
    cs: &[DevConstraint; REG_CONSTRAINTS],
    size: u32,
) -> bool {
    let mut j = 0;
    while j < REG_CONSTRAINTS {
        if (j as u32) < size && !sat_by_slot(t, b, start, slots, &cs[j]) {
            return false;
        }
        j += 1;
    }
    true
}

/// Sets `bit` in word `word` of `bits` for the lanes where `set` holds, with one atomic
/// OR per warp when every such lane's word is the same (filters in interface order: a
/// warp's 32 filters share one or two words), else one per lane. Every lane of the warp
/// calls it.
///
/// # Safety
/// `bits` is valid for every `word` a lane passes with `set`.
#[inline(always)]
unsafe fn warp_or(set: bool, word: u32, bit: u32, bits: *mut u32) {
    let any = ballot(set);
    if any == 0 {
        return;
    }
    let leader = any.trailing_zeros();
    let lw = shfl(word, leader);
    if all_sync(!set || word == lw) {
        let mut m = if set { bit } else { 0 };
        let mut d = 16;
        while d > 0 {
            m |= shfl_xor(m, d);
            d /= 2;
        }
        if lane_id() == leader {
            atomic_or(bits.add(lw as usize), m);
        }
    } else if set {
        atomic_or(bits.add(word as usize), bit);
    }
}

/// How a warp of [`ccm_index_dense`] sets its filters' interface bits, decided once for
/// its 32 filters (fixed for the chunk).
#[derive(Clone, Copy, PartialEq, Eq)]
enum WarpBits {
    /// Every valid lane's interface is the same (an interface of many filters): one
    /// atomic OR of that bit when any lane matched.
    OneBit,
    /// Lane `i`'s interface is bit `i` of one word (one filter per interface, in
    /// interface order): the warp's ballot is the word to OR in.
    Ballot,
    /// Anything else: [`warp_or`].
    Mixed,
}

kernel! {
    /// Beyond the paper: the pruning matcher's filter-major kernel for dense events (an
    /// event that would visit more than the route kernel's limit).
    ///
    /// Grid: `blockIdx.x` and `threadIdx.x` = the `k`-th filter in interface order
    /// (`by_iface[k]`, global), `blockIdx.y` = the chunks `blockIdx.y + m gridDim.y` of
    /// [`DENSE_CHUNK`] events of the list `dense` (`dense[0]` = the count, the events
    /// from `dense[1]`; global; the host sizes the grid before the count is known). For
    /// each chunk the block stages its events and their signatures in shared memory, with each
    /// event's integer values by row (rows below [`RANGE_ROWS`], when some filter has a
    /// range form) and (at most [`SLOT_ROWS`] name rows) its row -> attribute table
    /// (thread `j` fills event `j`'s); each thread then tries its filter against each
    /// event of the chunk: a filter in range form ([`IndexRange`], held in registers
    /// for the chunk) against an event that has its names as integers by comparing
    /// the staged values with its ranges; otherwise by SFF's rules ([`IndexFilter`]
    /// and the events' attributes: global, read through the cache; the filter's
    /// constraints held for the chunk when there are at most [`REG_CONSTRAINTS`], else
    /// read per event), and the
    /// warp sets the matched interfaces' bits of the events' rows of `bits` (global):
    /// one atomic OR per warp and word, of the warp's ballot when its filters are
    /// interfaces `32w..32w + 32` ([`WarpBits`]). Dynamic shared memory:
    /// [`dense_shared_bytes`]. Event values and ranges are compared as `i64`; see
    /// [`ccm_index_dense_narrow`] for `i32`.
    pub fn ccm_index_dense(
        t: IndexTables<'static>,
        b: IndexEvents<'static>,
        by_iface: *const u32,
        dense: *const u32,
        bits: *mut u32,
    ) {
        dense_chunks::<i64>(&t, &b, by_iface, dense, bits);
    }

    /// Beyond the paper: [`ccm_index_dense`] where every bound of every range is narrow
    /// ([`is_narrow`]): the events' integers staged in shared memory and the ranges held
    /// in registers as `i32` (clamped, [`RangeValue`]), the same answers. Dynamic
    /// shared memory: [`dense_shared_bytes`] with `narrow`.
    pub fn ccm_index_dense_narrow(
        t: IndexTables<'static>,
        b: IndexEvents<'static>,
        by_iface: *const u32,
        dense: *const u32,
        bits: *mut u32,
    ) {
        dense_chunks::<i32>(&t, &b, by_iface, dense, bits);
    }
}

/// The body of [`ccm_index_dense`] (`V` = `i64`) and [`ccm_index_dense_narrow`] (`V` =
/// `i32`): range values staged and held as `V`. Every thread of the block calls it.
///
/// # Safety
/// As the kernels: the launch's tables and batch, `by_iface` a permutation of the
/// filters, `dense` the count and the dense events, `bits` a row of `t.words` per event.
#[inline(always)]
unsafe fn dense_chunks<V: RangeValue>(
    t: &IndexTables<'static>,
    b: &IndexEvents<'static>,
    by_iface: *const u32,
    dense: *const u32,
    bits: *mut u32,
) {
    let n_dense = *dense;
    if block_idx_y() * DENSE_CHUNK >= n_dense {
        return;
    }
    let sh_ev = dynamic_shared::<u32>();
    let sh_sig = sh_ev.add(DENSE_CHUNK as usize) as *mut u64;
    let ranged = t.ranged != 0;
    let sh_val = sh_sig.add(DENSE_CHUNK as usize) as *mut V;
    let sh_imask = sh_val.add(if ranged {
        (DENSE_CHUNK * RANGE_ROWS) as usize
    } else {
        0
    }) as *mut u32;
    let use_slots = t.rows <= SLOT_ROWS;
    let sh_slot = sh_imask.add(if ranged { DENSE_CHUNK as usize } else { 0 }) as *mut u8;
    let tid = thread_idx_x();
    let nt = block_dim_x();
    let k = block_idx_x() * nt + tid;
    let p = if k < t.n_filters {
        *by_iface.add(k as usize)
    } else {
        0
    };
    let f = t.filters.read(p as usize);
    let end = t.filters.read(p as usize + 1).first;
    let valid = k < t.n_filters && f.iface != REMOVED;
    // A filter in range form keeps its ranges in registers for the whole chunk.
    let (r0, r1) = if valid && ranged {
        (t.range_at.read(p as usize), t.range_at.read(p as usize + 1))
    } else {
        (0, 0)
    };
    let n_ranges = r1 - r0;
    let mut rg = [HeldRange::<V>::default(); MAX_RANGES];
    let mut rmask = 0u32;
    let mut r = 0;
    while r < MAX_RANGES {
        if (r as u32) < n_ranges {
            let range = t.ranges.read((r0 + r as u32) as usize);
            rg[r] = HeldRange {
                lo: V::of(range.lo),
                hi: V::of(range.hi),
                row: range.row,
            };
            rmask |= 1 << range.row;
        }
        r += 1;
    }
    // A short filter's constraints stay in registers for the whole chunk.
    let size = end - f.first;
    let held = use_slots && size as usize <= REG_CONSTRAINTS && n_ranges == 0;
    let mut cs = [DevConstraint::default(); REG_CONSTRAINTS];
    if valid && held {
        let mut c = 0;
        while c < REG_CONSTRAINTS {
            if (c as u32) < size {
                cs[c] = t.constraints.read((f.first + c as u32) as usize);
            }
            c += 1;
        }
    }
    // The warp's way of setting bits (its filters are fixed for the chunk).
    let lanes = ballot(valid);
    let leader = if lanes == 0 {
        0
    } else {
        lanes.trailing_zeros()
    };
    let lead_iface = shfl(f.iface, leader);
    let mode = if all_sync(!valid || f.iface == lead_iface) {
        WarpBits::OneBit
    } else if all_sync(!valid || (f.iface / 32 == lead_iface / 32 && f.iface % 32 == lane_id())) {
        WarpBits::Ballot
    } else {
        WarpBits::Mixed
    };
    let bit = 1u32 << (f.iface % 32);
    // The chunks of events `blockIdx.y, blockIdx.y + gridDim.y, ..` of the list (the
    // grid is sized before the list is known: a block row may take several).
    let mut first = block_idx_y() * DENSE_CHUNK;
    while first < n_dense {
        let last = if first + DENSE_CHUNK < n_dense {
            first + DENSE_CHUNK
        } else {
            n_dense
        };
        let n = last - first;
        if tid < n {
            let e = *dense.add(1 + (first + tid) as usize);
            *sh_ev.add(tid as usize) = e;
            let ev = b.events.read(e as usize);
            *sh_sig.add(tid as usize) = ev.sig;
            if ranged {
                // Event `tid`'s integers by row and their mask.
                let vals = sh_val.add((tid * RANGE_ROWS) as usize);
                *sh_imask.add(tid as usize) = stage_integers(b, &ev, vals);
            }
        }
        if use_slots {
            let mut i = tid;
            while i < DENSE_CHUNK * SLOT_ROWS {
                *sh_slot.add(i as usize) = NO_SLOT;
                i += nt;
            }
        }
        sync_threads();
        if use_slots && tid < n {
            let ev = b.events.read(*sh_ev.add(tid as usize) as usize);
            let mut a = 0;
            while a < ev.len {
                let row = b.attrs.read((ev.start + a) as usize).row_id;
                *sh_slot.add((tid * SLOT_ROWS + row) as usize) = a as u8;
                a += 1;
            }
        }
        sync_threads();
        let mut j = 0;
        while j < n {
            let e = *sh_ev.add(j as usize);
            let word = e * t.words + f.iface / 32;
            let mut set = valid && f.sig & !*sh_sig.add(j as usize) == 0;
            if set && t.shared != 0 && volatile_load_u32(bits.add(word as usize)) & bit != 0 {
                set = false;
            }
            if set && n_ranges > 0 && rmask & !*sh_imask.add(j as usize) == 0 {
                // The range form: the event has each of the filter's names as an
                // integer, so the ranges decide exactly.
                set = in_ranges(sh_val.add((j * RANGE_ROWS) as usize), &rg, n_ranges);
            } else if set {
                let ev = b.events.read(e as usize);
                let slots = sh_slot.add((j * SLOT_ROWS) as usize);
                set = if held {
                    satisfies_held(t, b, ev.start, slots, &cs, size)
                } else if use_slots {
                    satisfies_slots(t, b, ev.start, slots, f.first, end)
                } else {
                    satisfies(t, b, &ev, f.first, end)
                };
            }
            match mode {
                WarpBits::OneBit => {
                    if any_sync(set) && lane_id() == leader {
                        atomic_or(bits.add(word as usize), bit);
                    }
                }
                WarpBits::Ballot => {
                    let m = ballot(set);
                    if m != 0 && lane_id() == leader {
                        atomic_or(bits.add(word as usize), m);
                    }
                }
                WarpBits::Mixed => warp_or(set, word, bit, bits),
            }
            j += 1;
        }
        // Every thread is done with the chunk's shared memory before the next is staged.
        sync_threads();
        first += grid_dim_y() * DENSE_CHUNK;
    }
}

/// Warps per (event, interface) pair of [`ccm_index_iface()`]: the block of a pair.
pub const IFACE_WARPS: u32 = 4;

kernel! {
    /// Beyond the paper: the pruning matcher's interface-major kernel for dense events
    /// when interfaces hold many filters (Table 1's model): an interface is answered as
    /// soon as one of its filters matches, as SFF and the CPU index stop, instead of
    /// every filter being tried as in [`ccm_index_dense`].
    ///
    /// Grid: a block of [`IFACE_WARPS`] warps per (dense event, interface) pair
    /// `q = j * n_ifaces + i` for the `j`-th event of `dense` (`dense[0]` = the count;
    /// global) and the interface of rank `i`, block `x` taking the pairs
    /// `x, x + gridDim.x, ..` (the host sizes the grid before the count is known). The interface's filters are
    /// `by_iface[iface_start[i]..iface_start[i + 1]]` (global, read-only; the host puts
    /// the filters with fewest constraints first, the likeliest to match); warp `w`
    /// takes them 32 at a time from the `w`-th group of 32, stepping over the block's
    /// warps. Each lane tries one filter ([`IndexFilter`]'s signature, then its
    /// constraints by a search of the event's attributes; global, through the cache).
    /// When a lane matches, its warp's lane 0 sets the interface's bit in the event's
    /// row of `bits` (global, atomic OR); every warp reads that bit (global, volatile)
    /// before each group and stops once it is set.
    pub fn ccm_index_iface(
        t: IndexTables<'static>,
        b: IndexEvents<'static>,
        by_iface: *const u32,
        iface_start: *const u32,
        n_ifaces: u32,
        dense: *const u32,
        bits: *mut u32,
    ) {
        let pairs = *dense * n_ifaces;
        let mut q = block_idx_x();
        while q < pairs {
            iface_pair(&t, &b, by_iface, iface_start, q / n_ifaces, q % n_ifaces, dense, bits);
            q += grid_dim_x();
        }
    }
}

/// [`ccm_index_iface`]'s work on the pair of the `j`-th dense event and the interface of
/// rank `i` (its block's threads).
///
/// # Safety
/// As [`ccm_index_iface`]: `j` below the count `dense[0]`, `i` an interface's rank.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn iface_pair(
    t: &IndexTables<'static>,
    b: &IndexEvents<'static>,
    by_iface: *const u32,
    iface_start: *const u32,
    j: u32,
    i: u32,
    dense: *const u32,
    bits: *mut u32,
) {
    let e = *dense.add(1 + j as usize);
    let ev = b.events.read(e as usize);
    let word = bits.add((e * t.words + i / 32) as usize);
    let bit = 1u32 << (i % 32);
    let hi = *iface_start.add(i as usize + 1);
    let lane = lane_id();
    let step = 32 * (block_dim_x() / 32);
    let mut k = *iface_start.add(i as usize) + thread_idx_x() / 32 * 32;
    while k < hi {
        // Another warp of the block may have answered the interface already.
        if any_sync(volatile_load_u32(word) & bit != 0) {
            break;
        }
        let mut hit = false;
        if k + lane < hi {
            let p = *by_iface.add((k + lane) as usize);
            let f = t.filters.read(p as usize);
            if f.sig & !ev.sig == 0 && f.iface != REMOVED {
                let end = t.filters.read(p as usize + 1).first;
                hit = satisfies(t, b, &ev, f.first, end);
            }
        }
        if any_sync(hit) {
            if lane == 0 {
                atomic_or(word, bit);
            }
            break;
        }
        k += step;
    }
}

/// Most answer words per event for which [`ccm_index_lists()`] takes a thread per event
/// (above, a block of warps per event).
pub const LIST_WORDS: u32 = 4;

/// Most warps per event (the block of an event) of [`ccm_index_lists()`] and
/// [`ccm_index_answers()`] for rows longer than [`LIST_WORDS`] words.
pub const LIST_WARPS: u32 = 16;

/// Dynamic shared memory of [`ccm_index_lists()`] and [`ccm_index_answers()`]: per warp of
/// an event's block its segment's count, then the event's first place.
pub const LIST_SHARED: u32 = 4 * (LIST_WARPS + 1);

kernel! {
    /// Beyond the paper: the pruning matcher's answers in one pass: per event `e` of the
    /// batch, the count of set bits of its row of `bits` (global), that many places of
    /// the answer list reserved (one atomic add on `total[0]` per warp or block; global,
    /// zero before the launch), `spans[2e] = first place, spans[2e + 1] = count` (mapped
    /// host memory: the host reads them once the launch has ended, with no copy),
    /// then, when the event's places lie below the room `cap` of `ids`, the user ids
    /// (`user_ids[rank]`, global, read-only) of the interfaces set in the row written in
    /// ascending order into `ids` (global) and the row zeroed for the next batch (else
    /// the row is left: the host grows `ids` and lists them with
    /// [`ccm_index_answers`]).
    ///
    /// Rows of at most [`LIST_WORDS`] words: a thread per event (`global_id_x`), the
    /// warp reserving its events' places at once. Longer rows: a block per event
    /// (`blockIdx.x`; `blockDim.x / 32` warps, at most [`LIST_WARPS`]), stream compaction
    /// of the row in two passes over it (the count-then-scatter compaction of a bitset,
    /// as in Billeter, Olsson & Assarsson, "Efficient stream compaction on wide SIMD
    /// many-core architectures", HPG 2009): warp `w` owns the `w`-th of the row's
    /// segments (whole runs of 32 words, in order); pass 1, each warp counts its
    /// segment's bits (lane `l` reading words `l, l + 32, ..`, coalesced), its lane 0
    /// writes the count to shared memory; after a barrier every thread sums the counts
    /// of the warps before its own (its segment's first place in the event's list) and
    /// of all; thread 0 reserves the event's places and writes its span, through shared
    /// memory to the block; pass 2, each warp lists its segment 32 words at a time (a
    /// warp prefix sum of the words' bit counts places each lane's ids; the next 32
    /// words loaded before this run's ids are written) and zeroes its nonzero words.
    /// The list comes out ascending with no sort: segments, runs and bits are taken in
    /// order. Dynamic shared memory: [`LIST_SHARED`].
    ///
    /// Thread 0 of block 0 moves the count of
    /// dense events `dense[0]` (global; read by the dense kernels before this launch)
    /// to `n_dense[0]` and the sum of the partition walk's counters of groups of filters
    /// (`walked`, [`WALK_WORDS`] words) to `n_dense[1]` (mapped host memory), for the
    /// host, and zeroes them for the next batch.
    pub fn ccm_index_lists(
        bits: *mut u32,
        words: u32,
        n_events: u32,
        user_ids: *const u32,
        spans: *mut u32,
        ids: *mut u32,
        cap: u32,
        total: *mut u32,
        dense: *mut u32,
        walked: *mut u32,
        n_dense: *mut u32,
    ) {
        let lane = lane_id();
        if block_idx_x() == 0 && thread_idx_x() == 0 {
            report_counters(dense, walked, n_dense);
        }
        if words <= LIST_WORDS {
            // A thread per event; the warp reserves its events' places at once.
            let e = global_id_x();
            let row = bits.add(e as usize * words as usize);
            let mut count = 0u32;
            if e < n_events {
                let mut w = 0;
                while w < words {
                    count += (*row.add(w as usize)).count_ones();
                    w += 1;
                }
            }
            let (before, sum) = warp_scan(count);
            let mut base = 0;
            if lane == 0 && sum > 0 {
                base = atomic_add(total, sum);
            }
            let base = shfl(base, 0);
            if e >= n_events {
                return;
            }
            let mut place = base + before;
            // Place and count in one 8-byte store (a warp's stores are one run of host
            // memory).
            *(spans as *mut u64).add(e as usize) = place as u64 | (count as u64) << 32;
            if count == 0 || base + sum > cap {
                return;
            }
            let mut w = 0;
            while w < words {
                let word = *row.add(w as usize);
                if word != 0 {
                    *row.add(w as usize) = 0;
                }
                place = write_ids(word, w, user_ids, ids, place);
                w += 1;
            }
            return;
        }
        // A block per event.
        let e = block_idx_x();
        if e >= n_events {
            return;
        }
        let row = bits.add(e as usize * words as usize);
        let sh = dynamic_shared::<u32>();
        let (before, count) = block_count(row, words, sh);
        if thread_idx_x() == 0 {
            let base = if count > 0 { atomic_add(total, count) } else { 0 };
            *sh.add(LIST_WARPS as usize) = base;
            *(spans as *mut u64).add(e as usize) = base as u64 | (count as u64) << 32;
        }
        sync_threads();
        let base = *sh.add(LIST_WARPS as usize);
        if count == 0 || base + count > cap {
            return;
        }
        let (lo, hi) = segment(words);
        list_words(row, lo, hi, user_ids, ids, base + before);
    }
}

/// Moves the launch's count of dense events `dense[0]` (global; read by the dense
/// kernels before) to `n_dense[0]` and the sum of the partition walk's counters of
/// groups of filters (`walked`, [`WALK_WORDS`] words) to `n_dense[1]` (mapped host
/// memory), for the host, and zeroes them for the next launch. One thread calls it, in
/// the launch's last kernels ([`ccm_index_lists`], [`crate::cells::ccm_cells_spans`]).
///
/// # Safety
/// `dense` holds the count, `walked` [`WALK_WORDS`] words, `n_dense` two words.
#[inline(always)]
pub(crate) unsafe fn report_counters(dense: *mut u32, walked: *mut u32, n_dense: *mut u32) {
    *n_dense = *dense;
    *dense = 0;
    let mut sum = 0u32;
    let mut k = 0;
    while k < WALK_SLOTS {
        let c = walked.add((k * WALK_STRIDE) as usize);
        sum = sum.wrapping_add(*c);
        *c = 0;
        k += 1;
    }
    *n_dense.add(1) = sum;
}

/// The calling warp's segment `lo..hi` of a row of `words` words, when the block's
/// `blockDim.x / 32` warps take the row's runs of 32 words in equal shares, in order
/// (the last segments may be short or empty).
#[inline(always)]
fn segment(words: u32) -> (u32, u32) {
    let warps = block_dim_x() / 32;
    let runs = words.div_ceil(32).div_ceil(warps);
    let lo = (thread_idx_x() / 32 * runs * 32).min(words);
    (lo, (lo + runs * 32).min(words))
}

/// The set bits of `row` (`words` words) before the calling warp's [`segment`] and in
/// all: pass 1 of [`ccm_index_lists`]'s compaction. Each warp counts its segment (four
/// independent loads per lane in flight), its lane 0 writes the count to `sh[warp]`
/// (shared), and after a barrier every thread sums them. Every thread of the block
/// calls it.
///
/// # Safety
/// `row` holds `words` words; `sh` (shared) has room for a count per warp of the block,
/// which must hold at most [`LIST_WARPS`].
#[inline(always)]
unsafe fn block_count(row: *const u32, words: u32, sh: *mut u32) -> (u32, u32) {
    let (lo, hi) = segment(words);
    let mut w = lo + lane_id();
    let mut c = 0u32;
    while w + 96 < hi {
        c += (*row.add(w as usize)).count_ones()
            + (*row.add(w as usize + 32)).count_ones()
            + (*row.add(w as usize + 64)).count_ones()
            + (*row.add(w as usize + 96)).count_ones();
        w += 128;
    }
    while w < hi {
        c += (*row.add(w as usize)).count_ones();
        w += 32;
    }
    let c = warp_sum(c);
    let warp = thread_idx_x() / 32;
    if lane_id() == 0 {
        *sh.add(warp as usize) = c;
    }
    sync_threads();
    let (mut before, mut all) = (0, 0);
    let mut i = 0;
    while i < block_dim_x() / 32 {
        let v = *sh.add(i as usize);
        if i < warp {
            before += v;
        }
        all += v;
        i += 1;
    }
    (before, all)
}

/// The user ids (`user_ids[rank]`) of the interfaces set in `word`, word `w` of an
/// event's row of answer bits (bit `b` is the interface of rank `32 w + b`), in
/// ascending order into `ids` from place `at`; returns the place after them. What every
/// answer list is written by ([`ccm_index_lists`], [`ccm_index_answers`],
/// [`crate::cells::ccm_cells_lists`]).
///
/// # Safety
/// `ids` has room for the word's set bits from `at`; `user_ids` holds an entry per bit
/// that can be set.
#[inline(always)]
pub(crate) unsafe fn write_ids(
    mut word: u32,
    w: u32,
    user_ids: *const u32,
    ids: *mut u32,
    mut at: u32,
) -> u32 {
    while word != 0 {
        let bit = word.trailing_zeros();
        word &= word - 1;
        store(ids, at as usize, load(user_ids, (w * 32 + bit) as usize));
        at += 1;
    }
    at
}

/// The user ids (`user_ids[rank]`) of the interfaces set in words `lo..hi` of `row`, in
/// ascending order into `ids` from place `at`, and those words zeroed: pass 2 of
/// [`ccm_index_lists`]'s compaction, by a warp, 32 words at a time (a warp prefix sum
/// of the words' bit counts places each lane's; the next 32 words are loaded before
/// this run's ids are written, so that the load's latency overlaps them). Every lane
/// of the warp calls it.
///
/// # Safety
/// `row` holds at least `hi` words; `ids` has room from `at` for the set bits of words
/// `lo..hi`; `user_ids` holds an entry per bit that can be set.
#[inline(always)]
unsafe fn list_words(
    row: *mut u32,
    lo: u32,
    hi: u32,
    user_ids: *const u32,
    ids: *mut u32,
    mut at: u32,
) {
    let lane = lane_id();
    let mut w0 = lo;
    let mut next = if w0 + lane < hi {
        load(row, (w0 + lane) as usize)
    } else {
        0
    };
    while w0 < hi {
        let w = w0 + lane;
        let word = next;
        let ahead = w + 32;
        next = if ahead < hi {
            load(row, ahead as usize)
        } else {
            0
        };
        let (before, sum) = warp_scan(word.count_ones());
        if word != 0 {
            store(row, w as usize, 0);
        }
        write_ids(word, w, user_ids, ids, at + before);
        at += sum;
        w0 += 32;
    }
}

kernel! {
    /// Beyond the paper: the pruning matcher's answer lists again, after
    /// [`ccm_index_lists`] found no room for some: per event `e` of the batch whose
    /// count `spans[2e + 1]` is not zero, the user ids (`user_ids[rank]`, global,
    /// read-only) of the interfaces still set in its row of `bits` (global; the rows
    /// [`ccm_index_lists`] listed are zero) in ascending order into `ids` from place
    /// `spans[2e]` (mapped host memory, as [`ccm_index_lists`] wrote it) and the row
    /// zeroed, unless the answers' total (`total[0]`, global) passes the room `cap` of
    /// `ids`. Rows of at most [`LIST_WORDS`] words: a warp per event (32 words at a
    /// time); longer rows: a block per event, the two passes of [`ccm_index_lists`]'s
    /// (the first only places the warps' segments). Dynamic shared memory:
    /// [`LIST_SHARED`].
    pub fn ccm_index_answers(
        bits: *mut u32,
        words: u32,
        n_events: u32,
        user_ids: *const u32,
        spans: *const u32,
        ids: *mut u32,
        cap: u32,
        total: *const u32,
    ) {
        let short = words <= LIST_WORDS;
        let e = if short {
            (block_idx_x() * block_dim_x() + thread_idx_x()) / 32
        } else {
            block_idx_x()
        };
        if e >= n_events || *total > cap {
            return;
        }
        if *spans.add(2 * e as usize + 1) == 0 {
            return;
        }
        let row = bits.add(e as usize * words as usize);
        let at = *spans.add(2 * e as usize);
        if short {
            list_words(row, 0, words, user_ids, ids, at);
            return;
        }
        let (before, _) = block_count(row, words, dynamic_shared::<u32>());
        let (lo, hi) = segment(words);
        list_words(row, lo, hi, user_ids, ids, at + before);
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    extern crate std;
    use super::*;
    use std::collections::BTreeSet;
    use std::vec::Vec;

    #[test]
    fn name_sets_are_every_single_pair_and_triple_of_the_names_once() {
        for n in 0..=TRIPLE_NAMES {
            let mut seen = BTreeSet::new();
            for q in 0..triple_sets(n) {
                let (size, i, j, k) = name_set(q, n);
                let set: Vec<u32> = [i, j, k][..size as usize].to_vec();
                assert!(set.windows(2).all(|w| w[0] < w[1]), "n {n}, q {q}: {set:?}");
                assert!(set.iter().all(|&x| x < n), "n {n}, q {q}: {set:?}");
                assert!(seen.insert(set), "n {n}, q {q}: twice");
            }
            // Every subset of one, two or three names: n + C(n, 2) + C(n, 3).
            let c =
                |k: u32| (0..k).fold(1, |a, i| a * n.saturating_sub(i)) / (1..=k).product::<u32>();
            assert_eq!(seen.len() as u32, c(1) + c(2) + c(3), "n {n}");
        }
        assert!(triple_sets(TRIPLE_NAMES) <= 32, "one set per lane");
    }
}
