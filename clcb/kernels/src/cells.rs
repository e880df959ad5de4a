//! Beyond the paper: the kernels of the *cell index* (`clcb::cells`), the GPU form of
//! the CPU grid index with content keys inside its cells (`baselines::grid_index`,
//! after FAST, ICDE 2018): a uniform grid whose cells list the filters whose area's
//! bounding box touches them, each cell's list sorted by a content *key* with a
//! directory of the keys, so that an event looks only at the filters of its own cell
//! filed under a key it can satisfy.
//!
//! Keys are 32-bit hashes, computed by the same functions on the host (a filter's key)
//! and on the device (an event's keys): [`eq_key`] of a string equality `name = value`
//! (the name's row and the value's bytes), [`pair_key`] of a pair of name rows, and
//! [`EMPTY_KEY`] for filters without constraints. A hash collision only adds
//! candidates: every candidate's constraints are evaluated, except a filter without
//! any ([`IMPLIED`]), whose key cannot collide (no other key hashes to [`EMPTY_KEY`]).
//!
//! | kernel | one thread per | reads | writes |
//! | --- | --- | --- | --- |
//! | [`cells_match()`] | lane of a warp per event | (1) | (2) |
//! | [`cells_counts()`] | one thread | the launch's two counts | the counts in page-locked host memory, zeroed on the device |
//! | [`cells_write()`] | changed word of the index | the host's changes | [`CellHead`]s, [`DirSlot`]s, [`CellEntry`]s |
//!
//! (1) the launch's columns of the batch ([`CellBatch`]: the event's attributes, its
//! names' rows, its strings; staged in shared memory), its cell's [`CellHead`], the
//! cell's directory ([`DirSlot`]) and the [`CellEntry`]s of its keys'
//! groups and of the cell's overflow, the candidates' constraints. (2) the event's answer,
//! sorted and deduplicated in shared memory, as a run of subscriptions with its start and
//! length (possibly mapped host memory), or, past [`CELLS_SORT_WORDS`] matches, (event,
//! subscription) pairs; the counts (atomic), the next launch's counts (zeroed); with
//! `hand` set, the last block hands the counts to the host as [`cells_counts()`] does.

use crate::{
    filter_holds_with, in_area, str_bits, DevAttr, DevConstraint, Float2, ATTR_WORDS, KIND_STR,
};
use gpu_kernels::prelude::*;
use gpu_kernels::{kernel, DevPtr, DevPtrMut, KernelStruct};

/// The key of the filters without constraints (no other key hashes to it).
pub const EMPTY_KEY: u32 = 0;
/// Set in [`CellEntry::filter`] when the filter has no constraint: its area decides.
pub const IMPLIED: u32 = 1 << 31;
/// Set in [`CellEntry::filter`] when the filter's area is a rectangle (see [`CellEntry`]).
pub const RECT: u32 = 1 << 30;
/// The flags of [`CellEntry::filter`]; the filter's id is the rest.
pub const FLAGS: u32 = IMPLIED | RECT;
/// Bits of a filter's name signature ([`CellEntry::sig`]): name row `r` sets bit
/// `r % SIG_BITS`, exact for up to this many names.
pub const SIG_BITS: u32 = 96;
/// [`CellTables::row_flags`]: some filter is keyed by a string equality on the name.
pub const ROW_EQ: u32 = 1;
/// [`CellTables::row_flags`]: some filter is keyed by a pair holding the name.
pub const ROW_PAIR: u32 = 2;
/// Threads per block of [`cells_match()`] (four warps, four events).
pub const CELLS_BLOCK: u32 = 128;

/// Finalizer of MurmurHash3: spreads every input bit over the word.
#[inline(always)]
fn fmix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// `h`, moved off [`EMPTY_KEY`].
#[inline(always)]
fn not_empty(h: u32) -> u32 {
    if h == EMPTY_KEY {
        1
    } else {
        h
    }
}

/// The key of the string equality `row = bytes` (FNV-1a over the bytes, seeded by the
/// name's row, then `fmix`).
#[inline(always)]
pub fn eq_key(row: u32, bytes: &[u8]) -> u32 {
    let mut h = 0x811C_9DC5u32 ^ row.wrapping_mul(0x9E37_79B9);
    let mut i = 0;
    while i < bytes.len() {
        h = (h ^ bytes[i] as u32).wrapping_mul(0x0100_0193);
        i += 1;
    }
    not_empty(fmix(h ^ bytes.len() as u32))
}

/// The key of the pair of name rows `{a, b}` (order does not matter; `a == b` is the
/// key of a filter on one name).
#[inline(always)]
pub fn pair_key(a: u32, b: u32) -> u32 {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    not_empty(fmix(
        fmix(lo.wrapping_add(0x27D4_EB2F)) ^ hi.wrapping_mul(0x1656_67B1),
    ))
}

/// The signature bit of name row `row`: word and mask of [`CellEntry::sig`].
#[inline(always)]
pub fn sig_bit(row: u32) -> (usize, u32) {
    let b = row % SIG_BITS;
    ((b / 32) as usize, 1u32 << (b % 32))
}

/// The grid's geometry: origin, inverse cell side, cells per side. A point's cell is
/// [`CellGeometry::cell_of`] on both sides (the same `f64` operations, so the same
/// cell); the host lists an area in the cells of its bounding box, widened against the
/// `f32` rounding of the area test. Coordinates outside the grid clamp to its border.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct CellGeometry {
    pub x0: f64,
    pub y0: f64,
    /// 1 / cell side.
    pub inv: f64,
    /// Cells per side, at least 1 each.
    pub nx: u32,
    pub ny: u32,
}

impl CellGeometry {
    /// The column (or row) of coordinate `v`: `floor((v - origin) * inv)` clamped to
    /// `0..n`. Monotone in `v`.
    #[inline(always)]
    pub fn index(&self, v: f64, origin: f64, n: u32) -> u32 {
        let c = (v - origin) * self.inv;
        let top = (n - 1) as f64;
        if c.is_nan() || c < 1.0 {
            0
        } else if c >= top {
            n - 1
        } else {
            // 1 <= c < n - 1: truncation is floor.
            c as u32
        }
    }

    /// The cell (row-major) holding the point `(x, y)`, clamped to the grid.
    #[inline(always)]
    pub fn cell_of(&self, x: f32, y: f32) -> u32 {
        self.index(y as f64, self.y0, self.ny) * self.nx + self.index(x as f64, self.x0, self.nx)
    }
}

/// One cell: where its directory and entries lie. The entries
/// `entries..entries + main` are sorted by key (the groups of the directory's keys,
/// tombstones included); `entries + main..entries + main + extra` is the overflow, the
/// filters moved in since the cell was last laid out, in no order, which every event of
/// the cell scans.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct CellHead {
    /// First [`DirSlot`] of the cell.
    pub dir: u32,
    /// Number of keys (directory slots).
    pub keys: u32,
    /// First [`CellEntry`] of the cell.
    pub entries: u32,
    /// Entries sorted by key.
    pub main: u32,
    /// Overflow entries after them.
    pub extra: u32,
    pub _pad: [u32; 3],
}

/// One key of a cell's directory: the key, and the end of its group (relative to the
/// cell's first entry; the group starts where the previous slot's ends, or at 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct DirSlot {
    pub key: u32,
    pub end: u32,
}

/// One filter in one cell's list, all that the first tests read in one 32-byte record:
/// its id (with [`IMPLIED`] and [`RECT`]), its subscription, its area and its names'
/// signature. 16-byte aligned: two vector loads.
///
/// A circle: centre `(x, y)`, squared radius `sq`, the 96-bit signature. A rectangle
/// ([`RECT`]): low corner `(x, y)`, high corner `(sq, sig[2])` (`sig[2]` holds the
/// top edge's bits) and the signature folded to 64 bits (bit `b` at `b % 64`, as
/// [`fold_sig`] folds it; only pruning, the constraints decide). A tombstone has a NaN
/// in `sq`: no point is inside either form.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct CellEntry {
    pub filter: u32,
    pub sub: u32,
    pub x: f32,
    pub y: f32,
    pub sq: f32,
    pub sig: [u32; 3],
}

/// The cell index's device tables, one parameter struct: the cells, their
/// directories and entries, the filters' constraints (filter-major, `tag` = name row,
/// as the batched kernels read them), the per-row key flags ([`ROW_EQ`], [`ROW_PAIR`])
/// and the geometry.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CellTables<'a> {
    pub heads: DevPtr<'a, CellHead>,
    pub dir: DevPtr<'a, DirSlot>,
    pub entries: DevPtr<'a, CellEntry>,
    /// Filter `f`'s constraints are `fcons[fcons_start[f]..fcons_start[f + 1]]`.
    pub fcons_start: DevPtr<'a, u32>,
    pub fcons: DevPtr<'a, DevConstraint>,
    pub cstrings: DevPtr<'a, u8>,
    /// Per name row: [`ROW_EQ`] | [`ROW_PAIR`] when some key uses it.
    pub row_flags: DevPtr<'a, u32>,
    /// Name rows (the length of `row_flags`).
    pub rows: u32,
    /// Nonzero when some entry may be a rectangle ([`RECT`]); zero: every entry is a
    /// circle and `try_entry` runs the circle's test alone, as before rectangles (one
    /// flag for the launch, not a test of each entry's form).
    pub rects: u32,
    pub geo: CellGeometry,
}

// SAFETY: `#[repr(C)]`; device pointers, `u32`s and a `#[repr(C)]` struct of `f64`s and
// `u32`s only; `Host<'a>` differs only in the lifetime.
unsafe impl KernelStruct for CellTables<'static> {
    type Host<'a> = CellTables<'a>;
}

/// One attribute of a batch as the host holds it (`ccm::batch::Attr`, the same layout,
/// copied as it is): the name's id in the batch's names dictionary, the type (the
/// kinds [`crate::KIND_INT`], [`crate::KIND_FLOAT`], [`KIND_STR`] are the batch's type
/// codes), and the value: an integer's bits, a float's bits, or the string's id in the
/// batch's strings dictionary.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct BatchAttr {
    pub name: u32,
    pub ty: u32,
    pub val: u64,
}

/// A string of the batch's dictionary: its bytes are `arena[off..off + len]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct StrSpan {
    pub off: u32,
    pub len: u32,
}

/// The row of a name no constraint reads ([`CellBatch::name_rows`]): its attributes
/// are left out of the encoding.
pub const NO_ROW: u32 = u32::MAX;

/// Where [`CellBatch::name_rows`] holds a name's key flags ([`ROW_EQ`], [`ROW_PAIR`])
/// above its row (rows below [`ROW_MASK`]), so that the encoding reads both in one
/// load instead of two, the second waiting on the first.
pub const ROW_FLAGS_SHIFT: u32 = 30;
/// The row's bits of a [`CellBatch::name_rows`] word; the rows of an index are fewer
/// (so that no word but [`NO_ROW`] is all ones).
pub const ROW_MASK: u32 = (1 << ROW_FLAGS_SHIFT) - 1;

/// A launch's part of a flat batch as the host holds it, copied in as it is, and the
/// batch's dictionaries translated once per call: `n_events` events, event `e`'s
/// attributes `attrs[starts[e] - starts[0]..starts[e + 1] - starts[0]]` (the starts as
/// the batch holds them, `n_events + 1` of them), its location `(xs[e], ys[e])`;
/// `name_rows[name]` the row of each name id of the batch with the row's key flags
/// above it ([`ROW_FLAGS_SHIFT`]; [`NO_ROW`]: none; `n_names` entries),
/// `spans[string]` each string id's bytes in the batch's arena
/// (`n_strs` entries).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CellBatch<'a> {
    pub attrs: DevPtr<'a, BatchAttr>,
    pub starts: DevPtr<'a, u32>,
    pub xs: DevPtr<'a, f32>,
    pub ys: DevPtr<'a, f32>,
    pub name_rows: DevPtr<'a, u32>,
    pub spans: DevPtr<'a, StrSpan>,
    /// The batch's string arena (the spans' bytes).
    pub bytes: DevPtr<'a, u8>,
    pub n_events: u32,
    pub n_names: u32,
    pub n_strs: u32,
    pub _pad: u32,
}

// SAFETY: `#[repr(C)]`; device pointers and `u32`s only; `Host<'a>` differs only in the
// lifetime.
unsafe impl KernelStruct for CellBatch<'static> {
    type Host<'a> = CellBatch<'a>;
}

/// Attributes whose key flags ([`ROW_EQ`], [`ROW_PAIR`]) the staging keeps in a word of
/// registers, two bits each (attribute `a < KEYED_ATTRS` at bit `2 a`); a later
/// attribute's are read from [`CellTables::row_flags`].
pub const KEYED_ATTRS: u32 = 16;

/// Where the attributes of event `e` of a launch lie in the scratch of an event too long
/// for its warp's staging area ([`CELLS_STAGE_WORDS`]), in words: `ATTR_WORDS` per
/// attribute of the launch before it (`before` = `starts[e] - starts[0]`); its string
/// equalities' keys lie after every attribute's (`total` = `starts[n_events] -
/// starts[0]`), a word per attribute: `(attrs, keys)`. No event's words overlap
/// another's, so no prefix sum is needed.
#[inline(always)]
pub fn scratch_at(before: u32, total: u32) -> (usize, usize) {
    (
        ATTR_WORDS * before as usize,
        ATTR_WORDS * total as usize + before as usize,
    )
}

/// A launch's counters and sizes for [`cells_match()`]. The launch's columns
/// ([`CellBatch`]), a scratch for long events and the answers are separate parameters
/// (`c`, `scratch`, `out`, `spill`); the answers are page-locked host memory mapped
/// into the device.
///
/// `out` holds `2 * n_events + cap` words: `out[2 e]` is where event `e`'s answer starts
/// among the runs, `out[2 e + 1]` its length ([`SPILLED`]: its matches are pairs in
/// `spill`), the two written as one 8-byte word (one write per event into host memory,
/// not two 4-byte ones a launch apart), and the runs from `out[2 * n_events]` on, each an event's subscriptions
/// ascending, once each; `spill` has room for `spill_cap` pairs, `spill[2p]` the event
/// and `spill[2p + 1]` the subscription (unsorted, repeated when several filters of a
/// subscription match).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CellEvents<'a> {
    /// This launch's three counters (zero at the launch): words of runs, spilled pairs,
    /// blocks done ([`cells_match()`] with `hand` set).
    pub count: DevPtrMut<'a, u32>,
    pub n_events: u32,
    /// Words the runs have room for; more are counted, not written.
    pub cap: u32,
    /// Pairs `spill` has room for; more are counted, not written.
    pub spill_cap: u32,
    /// Nonzero: the launch's last block hands the two counts to the host and zeroes the
    /// counters ([`cells_match()`]); zero: [`cells_counts()`] does, queued after it.
    pub hand: u32,
    /// Nonzero: each block writes its events' starts and lengths together
    /// ([`cells_match()`]); zero: each warp writes its event's.
    pub pack: u32,
    pub _pad: u32,
}

/// [`CellEvents`]: the length of an event whose matches went to the spill pairs.
pub const SPILLED: u32 = u32::MAX;

/// Words of an event each warp of [`cells_match()`] stages in shared memory: its
/// attributes ([`ATTR_WORDS`] each) and a key word per attribute (a longer event is
/// staged in the launch's scratch, [`scratch_at`]).
pub const CELLS_STAGE_WORDS: u32 = 192;

/// Matches of an event each warp of [`cells_match()`] collects, sorts and deduplicates
/// in shared memory (a power of two); an event with more spills them as pairs. (At
/// 512, a third of the `keywords` workload's events with 1% regions spilled, and the
/// host's sort of their pairs bounded the stream.)
pub const CELLS_SORT_WORDS: u32 = 2048;

/// Bytes of [`cells_match()`]'s dynamic shared memory: a staging area and a collection
/// area per warp, then a word of 8 bytes per warp (its event's start and length).
pub const fn cells_shared_bytes() -> u32 {
    CELLS_BLOCK / 32 * ((CELLS_STAGE_WORDS + CELLS_SORT_WORDS) * 4 + 8)
}

// SAFETY: `#[repr(C)]`; device pointers and `u32`s only; `Host<'a>` differs only in the
// lifetime.
unsafe impl KernelStruct for CellEvents<'static> {
    type Host<'a> = CellEvents<'a>;
}

/// Whether every name bit of `filter` is set in `event`.
#[inline(always)]
fn sig_within(filter: [u32; 3], event: [u32; 3]) -> bool {
    (filter[0] & !event[0]) | (filter[1] & !event[1]) | (filter[2] & !event[2]) == 0
}

/// The event's key number `q`: 0 the empty key, `1..=n` the string equality of
/// attribute `q - 1`, then the pairs `(i, j)`, `i <= j < n`, row by row. `None` when no
/// filter can be keyed so (not a string, or no key uses the name). An attribute's key
/// flags come from `bf` (the staging's, [`KEYED_ATTRS`]) or, past those, `row_flags`; a
/// string equality's key from `eq_keys` (the staging hashed them, [`stage_event`]).
///
/// # Safety
/// `attrs` are the event's `n` staged attributes, `q < 1 + n + n (n + 1) / 2`,
/// `eq_keys` its `n` words of keys; `t.row_flags` has `t.rows` words.
#[inline(always)]
unsafe fn event_key(
    t: &CellTables,
    (attrs, bf): (*const DevAttr, u32),
    eq_keys: *const u32,
    n: u32,
    q: u32,
) -> Option<u32> {
    if q == 0 {
        return Some(EMPTY_KEY);
    }
    let flags = |a: u32, row: u32| {
        if a < KEYED_ATTRS {
            (bf >> (2 * a)) & (ROW_EQ | ROW_PAIR)
        } else if row < t.rows {
            // SAFETY: `row < t.rows`, the length of `row_flags` (this fn's contract).
            unsafe { t.row_flags.read(row as usize) }
        } else {
            0
        }
    };
    if q <= n {
        // SAFETY: `q - 1 < n`, an attribute of the event.
        let a = unsafe { load(attrs, (q - 1) as usize) };
        if a.kind != KIND_STR || flags(q - 1, a.row) & ROW_EQ == 0 {
            return None;
        }
        // SAFETY: `q - 1 < n`: the attribute's key word (this fn's contract).
        return Some(unsafe { load(eq_keys, (q - 1) as usize) });
    }
    let mut p = q - 1 - n;
    let mut i = 0;
    while p >= n - i {
        p -= n - i;
        i += 1;
    }
    let j = i + p;
    // SAFETY: `i <= j < n`: attributes of the event.
    let (ri, rj) = unsafe { (load(attrs, i as usize).row, load(attrs, j as usize).row) };
    if flags(i, ri) & ROW_PAIR == 0 || flags(j, rj) & ROW_PAIR == 0 {
        return None;
    }
    Some(pair_key(ri, rj))
}

/// A cell's directory sampled across the warp, read once per event with one load of
/// the warp: lane `l` holds the key and end of slot `l * stride` (`stride` =
/// `ceil(keys / 32)`), lanes `0..lanes` hold a slot. [`group`] searches these in
/// registers (shuffles) and then only its key's stretch of `stride` slots, instead of
/// a binary search of the whole directory whose every step waits on a load.
#[derive(Clone, Copy)]
struct Fences {
    key: u32,
    end: u32,
    stride: u32,
    lanes: u32,
}

/// The fences of the cell whose directory starts at slot `dir` and holds `keys` slots.
/// Every lane of the warp calls it.
///
/// # Safety
/// `dir..dir + keys` are slots of `t.dir`.
#[inline(always)]
unsafe fn fences(t: &CellTables, dir: u32, keys: u32) -> Fences {
    let stride = keys.div_ceil(32).max(1);
    let at = lane_id() * stride;
    let (key, end) = if at < keys {
        // SAFETY: `at < keys`: a slot of the cell's directory (this fn's contract).
        let s = unsafe { t.dir.read((dir + at) as usize) };
        (s.key, s.end)
    } else {
        (0, 0)
    };
    Fences {
        key,
        end,
        stride,
        lanes: keys.div_ceil(stride),
    }
}

/// The group of `key` in the cell whose directory starts at slot `dir` and holds
/// `keys` slots: its entries `lo..hi` relative to the cell's first (empty when the
/// cell lacks the key, or for `None`). The last fence at or below the key by a binary
/// search over the lanes' fences (five shuffles), then a search of the slots after it
/// up to the next fence (one `stride`, a cache line or two: [`stretch_group`]). Every
/// lane of the warp calls it, with its own key.
///
/// # Safety
/// As [`fences`]; `f` is `fences(t, dir, keys)`.
#[inline(always)]
unsafe fn group(
    t: &CellTables,
    (dir, keys): (u32, u32),
    f: &Fences,
    key: Option<u32>,
) -> (u32, u32) {
    let k = key.unwrap_or(0);
    let mut l = 0u32;
    let mut step = 16u32;
    while step > 0 {
        // `l + step <= 31`: every lane reads a lane.
        let fk = shfl(f.key, l + step);
        if l + step < f.lanes && fk <= k {
            l += step;
        }
        step /= 2;
    }
    let (lk, lend) = (shfl(f.key, l), shfl(f.end, l));
    // The end of the fence before (the slot before when `stride` is 1).
    let before = shfl(f.end, l.wrapping_sub(1) & 31);
    if key.is_none() || f.lanes == 0 || lk > k {
        return (0, 0);
    }
    let first = l * f.stride;
    if lk != k {
        // SAFETY: `first < first + 1 <= hi <= keys`: slots of the cell's directory, the
        // fence's slot `first` ending at `lend`.
        let found =
            unsafe { stretch_group(t, dir, (first + 1, (first + f.stride).min(keys)), lend, k) };
        return found.unwrap_or((0, 0));
    }
    let start = if first == 0 {
        0
    } else if f.stride == 1 {
        before
    } else {
        // SAFETY: `0 < first < keys`: a slot of the cell's directory.
        unsafe { t.dir.read((dir + first - 1) as usize) }.end
    };
    (start, lend)
}

/// The group `(start, end)` of key `k` among the slots `lo..hi` of the directory that
/// starts at slot `dir` (sorted by key, distinct), `prev` the end of slot `lo - 1`;
/// `None` when none of them holds `k`. A binary search down to 16 slots (a load a
/// step), then two rounds of loads issued together: the last slot of each of the first
/// three quarters, then the at most four slots of the quarter that holds the first key
/// at or above `k`. A stretch of 16 slots costs two waits for memory instead of the
/// five of a binary search (four steps and the slot before).
///
/// # Safety
/// `lo <= hi`, and `dir + lo - 1..dir + hi` are slots of `t.dir`.
#[inline(always)]
unsafe fn stretch_group(
    t: &CellTables,
    dir: u32,
    (mut lo, mut hi): (u32, u32),
    mut prev: u32,
    k: u32,
) -> Option<(u32, u32)> {
    // SAFETY: every `i` read below lies in `lo..hi` (this fn's contract).
    let slot = |i: u32| unsafe { t.dir.read((dir + i) as usize) };
    while hi - lo > 16 {
        let mid = (lo + hi) / 2;
        let s = slot(mid);
        if s.key < k {
            lo = mid + 1;
            prev = s.end;
        } else {
            hi = mid + 1;
        }
    }
    let none = DirSlot {
        key: u32::MAX,
        end: 0,
    };
    let at = |(lo, hi): (u32, u32), j: u32| if lo + j < hi { slot(lo + j) } else { none };
    if hi - lo > 4 {
        let (a, b, c) = (at((lo, hi), 3), at((lo, hi), 7), at((lo, hi), 11));
        // The quarters wholly below the key (a slot past `hi` is not below).
        let below = |j: u32, s: DirSlot| lo + j < hi && s.key < k;
        let (qa, qb, qc) = (below(3, a), below(7, b), below(11, c));
        prev = if qc {
            c.end
        } else if qb {
            b.end
        } else if qa {
            a.end
        } else {
            prev
        };
        lo += 4 * (u32::from(qa) + u32::from(qb) + u32::from(qc));
        hi = hi.min(lo + 4);
    }
    let w = (lo, hi);
    let (s0, s1, s2, s3) = (at(w, 0), at(w, 1), at(w, 2), at(w, 3));
    // The slots in order: one below the key moves `prev` on; the first that is not
    // decides.
    let mut out = None;
    let mut decide = |j: u32, s: DirSlot| {
        if out.is_none() {
            if lo + j < hi && s.key < k {
                prev = s.end;
            } else if lo + j < hi && s.key == k {
                out = Some(Some((prev, s.end)));
            } else {
                out = Some(None);
            }
        }
    };
    decide(0, s0);
    decide(1, s1);
    decide(2, s2);
    decide(3, s3);
    out.flatten()
}

/// A signature of 96 bits folded to 64 (bits 64..96 onto 0..32), a rectangle's entry's
/// form ([`CellEntry`]); folding keeps `a ⊆ b ⇒ fold(a) ⊆ fold(b)`.
#[inline(always)]
pub fn fold_sig(sig: [u32; 3]) -> [u32; 2] {
    [sig[0] | sig[2], sig[1]]
}

/// An entry's area and names' signature against the event at `pos` with signature
/// `esig`: the circle's test ([`in_area`]) or the rectangle's (`lo <= pos <= hi`, no
/// arithmetic), then the signature (folded for a rectangle).
#[inline(always)]
pub fn entry_holds(en: &CellEntry, pos: Float2, esig: [u32; 3]) -> bool {
    if en.filter & RECT != 0 {
        let top = f32::from_bits(en.sig[2]);
        let e = fold_sig(esig);
        en.x <= pos.x
            && pos.x <= en.sq
            && en.y <= pos.y
            && pos.y <= top
            && (en.sig[0] & !e[0]) | (en.sig[1] & !e[1]) == 0
    } else {
        in_area(pos, Float2 { x: en.x, y: en.y }, en.sq) && sig_within(en.sig, esig)
    }
}

/// Tests entry `at` of the index against the event, the whole decision for one
/// candidate: the area, the names' signature, then (unless [`IMPLIED`]) the filter's
/// constraints. Its subscription when it matches.
///
/// # Safety
/// `at` is an entry of `t`; `attrs` the event's `n_attrs` staged attributes, its
/// string values at their offsets from `bytes`.
#[inline(always)]
unsafe fn try_entry(
    t: &CellTables,
    at: u32,
    pos: Float2,
    esig: [u32; 3],
    (attrs, bytes): (*const DevAttr, *const u8),
    n_attrs: u32,
) -> Option<u32> {
    // SAFETY: `at` is an entry (this fn's contract).
    let en = unsafe { t.entries.read(at as usize) };
    let holds = if t.rects == 0 {
        in_area(pos, Float2 { x: en.x, y: en.y }, en.sq) && sig_within(en.sig, esig)
    } else {
        entry_holds(&en, pos, esig)
    };
    if !holds {
        return None;
    }
    if en.filter & IMPLIED != 0 {
        return Some(en.sub);
    }
    let f = (en.filter & !FLAGS) as usize;
    // SAFETY: the host's entries name filters of `fcons_start` (`n + 1` offsets into
    // `fcons`, strings in `cstrings`); the event as this fn's contract says.
    let holds = unsafe {
        let (first, last) = (
            t.fcons_start.read(f) as usize,
            t.fcons_start.read(f + 1) as usize,
        );
        filter_holds_with(
            t.fcons.ptr(),
            first,
            last,
            t.cstrings.ptr(),
            attrs,
            n_attrs,
            bytes,
        )
    };
    if holds {
        Some(en.sub)
    } else {
        None
    }
}

/// Appends the warp's matches of one round (`sub` where `hit`) for event `e` to the
/// spill pairs: one `atomicAdd` per warp reserves their slots, each matching lane
/// writes its pair. Every lane of the warp calls it.
///
/// # Safety
/// `spill` has room for `2 * b.spill_cap` words; `b.count` points at two counts.
#[inline(always)]
unsafe fn spill_pairs(b: &CellEvents, spill: *mut u32, e: u32, hit: Option<u32>) {
    let m = ballot(hit.is_some());
    if m == 0 {
        return;
    }
    let leader = m.trailing_zeros();
    let lane = lane_id();
    let mut at = 0;
    if lane == leader {
        // SAFETY: the counts are written through atomics only; the second is the spill's.
        at = unsafe { atomic_add(b.count.ptr().add(1), m.count_ones()) };
    }
    let at = shfl(at, leader);
    if let Some(s) = hit {
        let pos = at + lanes_below(m);
        if pos < b.spill_cap {
            // SAFETY: `pos < spill_cap`: the pair's two words are inside `spill`, this
            // lane's own.
            unsafe {
                store(spill, 2 * pos as usize, e);
                store(spill, 2 * pos as usize + 1, s);
            }
        }
    }
}

/// Sorts `buf[..n]` ascending in place, by the warp (bitonic, `n` padded with
/// `u32::MAX` to a power of two at most [`CELLS_SORT_WORDS`]): in each stage, the lane
/// of index `i` compares `buf[i]` with `buf[i ^ j]` for `i < i ^ j`, so no two lanes
/// touch one word; a warp barrier between stages. Every lane of the warp calls it.
///
/// # Safety
/// `buf` is the warp's own collection area of [`CELLS_SORT_WORDS`] words in shared
/// memory; `n <= CELLS_SORT_WORDS`.
#[inline(always)]
unsafe fn warp_sort(buf: *mut u32, n: u32) {
    let lane = lane_id();
    let size = n.next_power_of_two();
    let mut i = n + lane;
    while i < size {
        // SAFETY: `i < size <= CELLS_SORT_WORDS`: inside the area.
        unsafe { store(buf, i as usize, u32::MAX) };
        i += 32;
    }
    sync_warp();
    let mut k = 2;
    while k <= size {
        let mut j = k / 2;
        while j > 0 {
            let mut i = lane;
            while i < size {
                let l = i ^ j;
                if l > i {
                    // SAFETY: `i < l < size`: inside the area, this lane's pair alone.
                    unsafe {
                        let (a, c) = (load(buf, i as usize), load(buf, l as usize));
                        if ((i & k) == 0) == (a > c) {
                            store(buf, i as usize, c);
                            store(buf, l as usize, a);
                        }
                    }
                }
                i += 32;
            }
            sync_warp();
            j /= 2;
        }
        k *= 2;
    }
}

/// Writes the warp's sorted `buf[..n]` as event `e`'s run, once each: counts the
/// distinct values (a lane keeps `buf[i]` unless it equals `buf[i - 1]`), reserves
/// their words with one `atomicAdd`, writes them in order, and, from lane 0, the run's
/// start and length ([`store_answer`]). Every lane of the warp calls it.
///
/// # Safety
/// As [`warp_sort`], after it; `out` has `2 * b.n_events + b.cap` words, `e < n_events`;
/// `held` as [`store_answer`] says.
#[inline(always)]
unsafe fn write_run(
    b: &CellEvents,
    (out, held): (*mut u32, *mut u64),
    e: u32,
    buf: *const u32,
    n: u32,
) {
    let lane = lane_id();
    // SAFETY: `i < n <= CELLS_SORT_WORDS` (and `i >= 1` for the word before): the area.
    let keep =
        |i: u32| i < n && (i == 0 || unsafe { load(buf, i as usize) != load(buf, i as usize - 1) });
    let mut kept = 0;
    let mut base = 0;
    while base < n {
        kept += ballot(keep(base + lane)).count_ones();
        base += 32;
    }
    let mut at = 0;
    if lane == 0 && kept > 0 {
        // SAFETY: the counts are written through atomics only; the first is the runs'.
        at = unsafe { atomic_add(b.count.ptr(), kept) };
    }
    let at = shfl(at, 0);
    let runs = 2 * b.n_events as usize;
    let mut w = at;
    let mut base = 0;
    while base < n {
        let i = base + lane;
        let k = keep(i);
        let m = ballot(k);
        if k {
            let pos = w + lanes_below(m);
            if pos < b.cap {
                // SAFETY: `pos < cap`: inside the runs; `i < n`: inside the area.
                unsafe { store(out, runs + pos as usize, load(buf, i as usize)) };
            }
        }
        w += m.count_ones();
        base += 32;
    }
    if lane == 0 {
        // SAFETY: `e < n_events`: the event's start and length words, its warp's alone.
        unsafe { store_answer((out, held), e, at, kept) };
    }
}

/// Writes event `e`'s start and length (`out[2 e]`, `out[2 e + 1]`) as one 8-byte word,
/// or, when `held` is not null, into `*held` (the warp's word of shared memory, which
/// the block writes with its other events' in one write, [`cells_match()`] with
/// `b.pack` set).
///
/// # Safety
/// `out` is 8-byte aligned with `2 * (e + 1)` words at least, the event's warp's alone;
/// `held` null or the warp's own word.
#[inline(always)]
unsafe fn store_answer((out, held): (*mut u32, *mut u64), e: u32, start: u32, len: u32) {
    let word = u64::from(start) | (u64::from(len) << 32);
    // SAFETY: the two words of `e`, 8-byte aligned, or the warp's word (this fn's
    // contract).
    unsafe {
        if held.is_null() {
            store(out as *mut u64, e as usize, word);
        } else {
            store(held, 0, word);
        }
    }
}

/// An event staged by its warp ([`stage_event`]): its attributes and string equality
/// keys (shared memory, or the launch's scratch for a long one), how many it kept, the
/// key flags of its first [`KEYED_ATTRS`] (`bf`), its names' signature.
struct StagedEvent {
    attrs: *const DevAttr,
    eq_keys: *const u32,
    n: u32,
    bf: u32,
    sig: [u32; 3],
}

/// The bitwise OR of `v` over the warp's lanes. Every lane of the warp calls it.
#[inline(always)]
fn warp_or(mut v: u32) -> u32 {
    let mut o = 16;
    while o > 0 {
        v |= shfl_xor(v, o);
        o /= 2;
    }
    v
}

/// Stages event `e` of the launch (its attributes `from..to` of the launch's columns)
/// for its warp, a lane per attribute, 32 at a time: each lane reads its attribute (the
/// first 32 read by the caller, `first`, lane `l`'s attribute `from + l`, so that their
/// load overlaps the cell's),
/// looks its name's row and key flags up in `name_rows` and, for a string, the string's
/// place in the arena in `spans`; the attributes of names some constraint reads are kept
/// in the event's order (a ballot and a count of the lanes below place each) as
/// [`DevAttr`]s (a string's bits: [`str_bits`] of its offset in the arena and its
/// length), with the key ([`eq_key`]) of each string whose name keys a string equality;
/// the key flags and the signature are ORed over the lanes. Into `staged` (the warp's
/// area of [`CELLS_STAGE_WORDS`]) when the attributes and their keys fit, else into the
/// event's place of `scratch` ([`scratch_at`]). A name id outside the dictionary counts
/// as a name no constraint reads; a string id outside it drops its attribute too (the
/// batch never holds either). Every lane of the warp calls it; the caller orders the
/// writes before the reads (`sync_warp`).
///
/// # Safety
/// `e < c.n_events`, the columns as [`CellBatch`] says, `first` the lane's attribute
/// (`None` past `to`); `staged` the warp's staging area;
/// `scratch` has room for [`scratch_at`]`(total, total).1` words (`total` the launch's
/// attributes).
#[inline(always)]
unsafe fn stage_event(
    c: &CellBatch,
    (from, to): (u32, u32),
    first: Option<BatchAttr>,
    (staged, scratch): (*mut u32, *mut u32),
) -> StagedEvent {
    let lane = lane_id();
    let na = to - from;
    // SAFETY: the starts hold `n_events + 1` words (this fn's contract).
    let total = unsafe { c.starts.read(c.n_events as usize) - c.starts.read(0) };
    let (attrs, eq_keys) = if na * (ATTR_WORDS as u32 + 1) <= CELLS_STAGE_WORDS {
        // SAFETY: `na` attributes and `na` keys fit the warp's area.
        (staged, unsafe { staged.add(ATTR_WORDS * na as usize) })
    } else {
        let (a, k) = scratch_at(from, total);
        // SAFETY: the event's own words of the scratch (this fn's contract).
        unsafe { (scratch.add(a), scratch.add(k)) }
    };
    let attrs = attrs as *mut DevAttr;
    let (mut k, mut bf) = (0u32, 0u32);
    // Three words in registers (an indexed array would live in local memory).
    let (mut s0, mut s1, mut s2) = (0u32, 0u32, 0u32);
    let mut a0 = 0;
    while a0 < na {
        let a = a0 + lane;
        let at = if a0 == 0 {
            first
        } else if a < na {
            // SAFETY: `from + a < to`: an attribute of the launch.
            Some(unsafe { c.attrs.read((from + a) as usize) })
        } else {
            None
        };
        let kept = if let Some(at) = at {
            // SAFETY: the name and string ids checked against the dictionaries' lengths.
            unsafe {
                let named = if at.name < c.n_names {
                    c.name_rows.read(at.name as usize)
                } else {
                    NO_ROW
                };
                let bits = if at.ty != KIND_STR {
                    Some(at.val)
                } else if at.val < u64::from(c.n_strs) {
                    let sp = c.spans.read(at.val as usize);
                    Some(str_bits(sp.off, sp.len))
                } else {
                    None
                };
                match (named != NO_ROW, bits) {
                    (true, Some(bits)) => Some((
                        DevAttr {
                            row: named & ROW_MASK,
                            kind: at.ty,
                            bits,
                        },
                        (named >> ROW_FLAGS_SHIFT) & (ROW_EQ | ROW_PAIR),
                    )),
                    _ => None,
                }
            }
        } else {
            None
        };
        let m = ballot(kept.is_some());
        if let Some((d, flags)) = kept {
            let i = k + lanes_below(m);
            // SAFETY: `i < na`: the event's own words (staged or scratch); the string
            // lies in the arena (the batch's spans).
            unsafe {
                store(attrs, i as usize, d);
                if d.kind == KIND_STR && flags & ROW_EQ != 0 {
                    let s = device_slice(
                        c.bytes.ptr().add(d.bits as u32 as usize),
                        (d.bits >> 32) as usize,
                    );
                    store(eq_keys, i as usize, eq_key(d.row, s));
                }
            }
            if i < KEYED_ATTRS {
                bf |= flags << (2 * i);
            }
            let (word, bit) = sig_bit(d.row);
            s0 |= if word == 0 { bit } else { 0 };
            s1 |= if word == 1 { bit } else { 0 };
            s2 |= if word == 2 { bit } else { 0 };
        }
        k += m.count_ones();
        a0 += 32;
    }
    StagedEvent {
        attrs,
        eq_keys,
        n: k,
        bf: warp_or(bf),
        sig: [warp_or(s0), warp_or(s1), warp_or(s2)],
    }
}

/// [`cells_match()`]'s work for the event of the calling warp (all of it, or none: one
/// event per warp).
///
/// # Safety
/// As [`cells_match()`]'s parameters say.
#[inline(always)]
unsafe fn match_warp(
    t: &CellTables,
    c: &CellBatch,
    b: &CellEvents,
    scratch: *mut u32,
    (out, spill, held): (*mut u32, *mut u32, *mut u64),
) {
    let e = global_id_x() / 32;
    if e >= b.n_events {
        return; // the whole warp
    }
    let lane = lane_id();
    // SAFETY: `e < n_events`: its starts and location; its cell's head (clamped to the
    // grid); the warp's own areas of the block's dynamic shared memory.
    let (from, to, pos, first, cell, staged, buf) = unsafe {
        let base = c.starts.read(0);
        let (from, to) = (
            c.starts.read(e as usize) - base,
            c.starts.read(e as usize + 1) - base,
        );
        let pos = Float2 {
            x: c.xs.read(e as usize),
            y: c.ys.read(e as usize),
        };
        // The lane's first attribute, read before the cell's head so that the two
        // loads wait together.
        let first = if lane < to - from {
            Some(c.attrs.read((from + lane) as usize))
        } else {
            None
        };
        let cell = t.heads.read(t.geo.cell_of(pos.x, pos.y) as usize);
        let staged = dynamic_shared::<u32>().add((warp_id() * CELLS_STAGE_WORDS) as usize);
        let buf = dynamic_shared::<u32>()
            .add((CELLS_BLOCK / 32 * CELLS_STAGE_WORDS + warp_id() * CELLS_SORT_WORDS) as usize);
        (from, to, pos, first, cell, staged, buf)
    };
    // Read now, so that its load overlaps the staging's.
    // SAFETY: the cell's directory (the host's tables).
    let fences = unsafe { fences(t, cell.dir, cell.keys) };
    if cell.main + cell.extra == 0 {
        // SAFETY: the warp's own area, `e < n_events`.
        unsafe { write_run(b, (out, held), e, buf, 0) };
        return;
    }
    // SAFETY: `e < n_events`, the launch's columns and scratch (this fn's contract).
    let ev = unsafe { stage_event(c, (from, to), first, (staged, scratch)) };
    // The staging is the warp's own: a warp barrier orders its writes (shared memory or
    // scratch) before its lanes' reads, and no warp waits for another's loads.
    sync_warp();
    let (n, bf, esig) = (ev.n, ev.bf, ev.sig);
    let bytes = c.bytes.ptr();
    let keys = 1 + n + n * (n + 1) / 2;
    // Matches collected in `buf[..found]`, until they spill.
    let mut found = 0u32;
    let mut spilled = false;
    // Rounds of 32 keys, then one round for the overflow.
    let mut base = 0u32;
    loop {
        let overflow = base >= keys;
        let (lo, len) = if overflow {
            // The overflow as one group, owned by lane 0.
            if lane == 0 {
                (cell.main, cell.extra)
            } else {
                (0, 0)
            }
        } else {
            let q = base + lane;
            let k = if q < keys {
                // SAFETY: `q < keys`: a key of the staged event.
                unsafe { event_key(t, (ev.attrs, bf), ev.eq_keys, n, q) }
            } else {
                None
            };
            // SAFETY: `fences` of this cell.
            let (lo, hi) = unsafe { group(t, (cell.dir, cell.keys), &fences, k) };
            (lo, hi - lo)
        };
        let (start, total) = warp_scan(len);
        let mut c0 = 0;
        while c0 < total {
            let ci = c0 + lane;
            let l = lane_holding(start, ci);
            let l_lo = shfl(lo, l);
            let l_start = shfl(start, l);
            let hit = if ci < total {
                // SAFETY: an entry of the cell's group (or overflow); the staged event.
                unsafe {
                    try_entry(
                        t,
                        cell.entries + l_lo + (ci - l_start),
                        pos,
                        esig,
                        (ev.attrs, bytes),
                        n,
                    )
                }
            } else {
                None
            };
            let m = ballot(hit.is_some());
            if !spilled && found + m.count_ones() > CELLS_SORT_WORDS {
                // Too many for the area: what it holds goes to the spill pairs.
                sync_warp();
                let mut i = 0;
                while i < found {
                    let s = if i + lane < found {
                        // SAFETY: `i + lane < found <= CELLS_SORT_WORDS`: the warp's area.
                        Some(unsafe { load(buf, (i + lane) as usize) })
                    } else {
                        None
                    };
                    // SAFETY: the launch's spill and counters.
                    unsafe { spill_pairs(b, spill, e, s) };
                    i += 32;
                }
                spilled = true;
            }
            if spilled {
                // SAFETY: the launch's spill and counters.
                unsafe { spill_pairs(b, spill, e, hit) };
            } else {
                if let Some(s) = hit {
                    // SAFETY: `found + m.count_ones() <= CELLS_SORT_WORDS`: the warp's area.
                    unsafe { store(buf, (found + lanes_below(m)) as usize, s) };
                }
                found += m.count_ones();
            }
            c0 += 32;
        }
        if overflow {
            break;
        }
        base += 32;
    }
    if spilled {
        if lane == 0 {
            // SAFETY: `e < n_events`: the event's own words.
            unsafe { store_answer((out, held), e, 0, SPILLED) };
        }
        return;
    }
    // No barrier here: `warp_sort` synchronises the warp after its padding, which
    // touches only words past `found`.
    // SAFETY: the warp's area, `found <= CELLS_SORT_WORDS`; `e < n_events`.
    unsafe {
        warp_sort(buf, found);
        write_run(b, (out, held), e, buf, found);
    }
}

/// The end of a [`cells_match()`] launch whose `b.hand` is set: each block, once its
/// warps are done, counts itself done (after a fence that publishes its counts and
/// answers); the last one hands the two counts to `host` and zeroes the three counters
/// for the slot's next launch, the work [`cells_counts()`] does in a launch of its own.
/// Every thread of the block calls it, after a barrier of the block.
///
/// # Safety
/// `b.count` points at three counters, `host` at two words.
#[inline(always)]
unsafe fn hand_counts(b: &CellEvents, host: *mut u32) {
    if thread_rank() != 0 {
        return;
    }
    let count = b.count.ptr();
    thread_fence();
    // SAFETY: the counters are written through atomics only while the launch runs.
    if unsafe { atomic_add(count.add(2), 1) } != grid_dim_x() - 1 {
        return;
    }
    // Every other block's counts happened before its own count of itself.
    thread_fence();
    // SAFETY: as above; `host` holds two words (this fn's contract); no block is left
    // to touch the counters.
    unsafe {
        store(host, 0, atomic_exch(count, 0));
        store(host, 1, atomic_exch(count.add(1), 0));
        atomic_exch(count.add(2), 0);
    }
}

kernel! {
    /// Beyond the paper: matches a batch of events against the cell index, one warp per
    /// event (`CELLS_BLOCK / 32` events per block), as the CPU grid index does for one
    /// event on one thread, from the launch's columns of the batch as the host copied
    /// them ([`CellBatch`]: no pass of its own lays the events out first).
    ///
    /// The warp reads its event's starts, location and cell's [`CellHead`], and stages
    /// its attributes in shared memory ([`stage_event`]: a lane per attribute, their
    /// names' rows and key flags, their strings' places and keys, the names'
    /// signature), an event too long for [`CELLS_STAGE_WORDS`] in its place of
    /// `scratch`. It reads its cell's directory [`Fences`] (one slot a lane, one load).
    /// Then the event's keys, 32 at a time, one per lane: the empty key, the `name =
    /// value` of each string attribute whose name keys a filter, the pair of each two
    /// names that key filters ([`event_key`]); each lane finds its key's group
    /// ([`group`]: a search of the fences in registers, then of one stretch between
    /// fences). The groups are laid end to end (`warp_scan` of their sizes) and the
    /// lanes take consecutive candidates (each finds its group's lane with
    /// `lane_holding`), so that a group of 200 entries keeps all 32 lanes busy and
    /// their 32-byte entries are read coalesced. Last, the cell's overflow (entries
    /// moved in since its layout), all of it, the same way. Each candidate is
    /// [`try_entry`]: the circle and the signature from the entry itself, then the
    /// filter's constraints (filter-major table) only for those that pass.
    ///
    /// The answer: each round's matches are collected in the warp's area of shared
    /// memory (a ballot and a count of the lanes below place each); at the end the warp
    /// sorts them ([`warp_sort`]) and writes them once each as the event's run
    /// ([`write_run`]: one `atomicAdd` per event) with its start and length, in the
    /// page-locked answers the host keeps as they lie (no copy, no work per event). An event of more than [`CELLS_SORT_WORDS`] matches writes
    /// what it collected, and every later match, as (event, subscription) pairs
    /// ([`spill_pairs`], one `atomicAdd` per round), and [`SPILLED`] as its length; the
    /// host sorts and deduplicates those. With `b.pack` set, each warp leaves its
    /// event's start and length in shared memory and the block writes its events' at
    /// once (one 32-byte write into the mapped answers, not four of 8 bytes). With
    /// `b.hand` set, the launch's last block hands the two counts to `host` and zeroes
    /// the counters ([`hand_counts`]).
    pub fn cells_match(
        t: CellTables<'static>,
        c: CellBatch<'static>,
        b: CellEvents<'static>,
        scratch: *mut u32,
        out: *mut u32,
        spill: *mut u32,
        host: *mut u32,
    ) {
        // The block's words of starts and lengths, after the warps' areas (8-byte aligned).
        let areas = CELLS_BLOCK / 32 * (CELLS_STAGE_WORDS + CELLS_SORT_WORDS);
        let words = dynamic_shared::<u32>().add(areas as usize) as *mut u64;
        let held = if b.pack != 0 { words.add(warp_id() as usize) } else { core::ptr::null_mut() };
        match_warp(&t, &c, &b, scratch, (out, spill, held));
        if b.pack == 0 && b.hand == 0 {
            return;
        }
        // Every thread of the block gets here (no warp returns before): the warps'
        // words are written.
        sync_threads();
        let first = block_idx_x() * (CELLS_BLOCK / 32);
        let lane = thread_rank();
        if b.pack != 0 && lane < CELLS_BLOCK / 32 && first + lane < b.n_events {
            // Event `first + lane < n_events`: its two words of `out`, its warp's word.
            store(out as *mut u64, (first + lane) as usize, load(words, lane as usize));
        }
        if b.hand != 0 {
            hand_counts(&b, host);
        }
    }
}

kernel! {
    /// Beyond the paper: hands a launch's two counts (words of runs, spilled pairs) to
    /// the host in page-locked memory and zeroes them for the slot's next launch. One
    /// thread (global thread 0); queued after [`cells_match()`] on the same stream.
    pub fn cells_counts(count: *mut u32, host: *mut u32) {
        if global_id_x() != 0 {
            return;
        }
        store(host, 0, load(count, 0));
        store(host, 1, load(count, 1));
        store(count, 0, 0);
        store(count, 1, 0);
    }
}

kernel! {
    /// Beyond the paper: applies the host's changes to the cell index (area moves,
    /// cells laid out again): one thread per changed record, grid-stride; threads
    /// `0..n_heads` write `heads[head_at[i]] = head_val[i]`, the next `n_dir` the
    /// directory slots, the next `n_entries` the entries. Every record is written by
    /// one thread (the host lists each at most once).
    pub fn cells_write(
        n_heads: u32,
        head_at: *const u32,
        head_val: *const CellHead,
        n_dir: u32,
        dir_at: *const u32,
        dir_val: *const DirSlot,
        n_entries: u32,
        entry_at: *const u32,
        entry_val: *const CellEntry,
        heads: *mut CellHead,
        dir: *mut DirSlot,
        entries: *mut CellEntry,
    ) {
        let total = n_heads + n_dir + n_entries;
        let mut i = global_id_x();
        while i < total {
            if i < n_heads {
                let k = i as usize;
                store(heads, load(head_at, k) as usize, load(head_val, k));
            } else if i < n_heads + n_dir {
                let k = (i - n_heads) as usize;
                store(dir, load(dir_at, k) as usize, load(dir_val, k));
            } else {
                let k = (i - n_heads - n_dir) as usize;
                store(entries, load(entry_at, k) as usize, load(entry_val, k));
            }
            i += grid_dim_x() * block_dim_x();
        }
    }
}
