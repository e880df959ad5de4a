//! A spatial grid with a content index in every cell: the strongest CPU matcher for
//! CLCB's location-aware content matching (Cugola & Margara, Middleware 2012) that we
//! build, and the `best CPU (all cores)` yardstick of its experiments. It returns exactly
//! the answers of the R*-tree with the content check ([`crate::rtree`]; property tests in
//! `tests/grid_index.rs`), faster.
//!
//! Ideas taken, and from where:
//!
//! 1. **A uniform grid with a filter list per cell** (FAST, Mahmood, Aly, Qadah, Rezig,
//!    Daghistani & Aref, "FAST: frequency-aware indexing for spatio-textual data
//!    streams", ICDE 2018; and the IQ-tree's grid of query lists, Chen, Cong & Cao,
//!    SIGMOD 2013). Each filter is listed in every cell its area's bounding box touches;
//!    an event visits the one cell its location falls in, so a filter is seen at most
//!    once per event and no tree is walked. The cell side is twice the filters' median
//!    radius (a filter is in about 4 cells; about 5 filters of a cell's key group are
//!    tested per one whose circle holds the event), coarser if that would make more
//!    than two cells per filter. Locations outside the grid are clamped to its border
//!    cells, which keeps every answer exact for areas moved anywhere.
//! 2. **Content keys inside the cells** (FAST's keyword lookup inside its spatial cells;
//!    the boolean-expression indexes' pivots, OpIndex, Zhang, Chan & Tan, VLDB 2014,
//!    through [`crate::content_index`]). Each filter is filed under one *key*: its
//!    rarest string equality `name = value` (FAST's rarest keyword), or the pair of its
//!    two rarest names (the content index's partition key), whichever fewer filters
//!    share; a filter without constraints under the empty key. A cell's list is sorted
//!    by key with a small directory, and an event looks up only the keys it can
//!    satisfy (its `name = value` pairs, its pairs of names, the empty key) by binary
//!    search in its cell's directory: with keywords as string equalities, an event only
//!    looks at the filters filed under one of its own keywords.
//! 3. **Exact area test, then pruning like the content index**. A cell's entry holds
//!    the filter's area, a circle or a rectangle, so the model's test
//!    ([`clcb::model::Area::contains`]) runs on the list itself; a rectangle (FAST's
//!    region) is filed in the cells of its own extent and tested by its four
//!    comparisons, so it costs no more candidates than its extent (filing it as its
//!    enclosing circle, π/2 times the cells of a square and far more of a thin one,
//!    each candidate paying four numeric checks, is what this replaces); then a 128-bit name signature (exact up to 128 names) and,
//!    last, the compiled constraints (as `crate::compiled` compiles them for the CCM
//!    indexes, each string value numbered in one dictionary), ordered cheapest to
//!    reject first: string equalities, then by rarity of
//!    the name; not at all when the key decided them (a filter of one keyword, or of
//!    none). The candidates' constraints are fetched for all of them before any is
//!    evaluated, so that their cache misses overlap. Per-subscription pruning as in
//!    SFF: a subscription is answered once, however many of its filters match.
//! 4. **Area moves as cell-list updates** (Fig. 5). A move tombstones the filter's
//!    entries in its old cells (found through the key directory, then by binary search:
//!    a key's entries are in filter order) and adds it to a small overflow list of each
//!    new cell, in the same order and searched by key like the main list; a cell is
//!    compacted when its overflow and tombstones outgrow a thirty-second of it, which
//!    costs a merge of the cell, a small share per move. (Finding the entry by a scan
//!    of its key's entries instead cost 17-26 µs a move on Fig. 5's Zipf space at 1M
//!    subscriptions, whose dense cells file thousands of filters under one key.)
//!
//! Left out, and why:
//! - FAST's adaptive pyramid (cells split where they are dense) and its frequency-aware
//!   keyword trie: the grid's key directory already bounds the work by the filters
//!   under the event's own keys, and a uniform grid keeps moves to list updates; on the
//!   Zipf space of Fig. 4 the dense cells are as fine as the sparse ones, which costs
//!   memory, not time per event.
//! - The IQ-tree's per-query lower bounds and textual similarity: CLCB asks for a
//!   boolean match, not a ranking.
//! - The value indexes of [`crate::value_index`] (REIN / HEM class): CLCB's events carry
//!   3-8 names, where the content index's pruning already wins (the hybrid CCM index
//!   chooses the value index only for events with many names).
//! - Numeric equalities as keys: an integer and a float compare equal across types,
//!   so they would need a normalised key; they are pruned by their names instead.
//!
//! 5. **A flat batch of events read as it lies** ([`clcb::batch::EventBatch`]): the
//!    batch's names and strings translated once per call into the index's name numbers
//!    and value ids ([`GridIndex::view`]), then each event's attributes read from the
//!    batch's arrays ([`GridIndex::match_view_with`]): no name hashed per attribute, a
//!    string equality an id comparison. Heap events ([`GridIndex::match_indices_with`])
//!    stay for single events and the R*-tree's peers.
//!
//! Built on all cores: names, keys and string values numbered in order of first
//! appearance (each part's distinct items found in parallel, then merged in order),
//! counts summed over parts, the constraints compiled in parts, and the cells made from
//! the (cell, key, filter) triples sorted in parallel: the index a pass in filter order
//! builds (`the_index_built_on_all_cores_is_the_sequential_builds`).
//!
//! One event runs on one thread; [`GridIndex::match_parallel`] and
//! [`GridIndex::match_batch_parallel`] spread events over the rayon pool they run in
//! (all cores by default), each thread with one scratch.

use crate::compiled::{FastMap, Names};
use crate::content_index::Sig;
use crate::sff::{cmp_num, Num};
use ccm::batch::ValueRef;
use ccm::batch::{Attr, Dictionary, TY_FLOAT, TY_INT, TY_STR};
use ccm::hash::count_in_parts;
use clcb::batch::{EventBatch, UNKNOWN};
use clcb::cells::CellGeometry;
use clcb::columns::{
    is_str, is_str_eq, op_of_code, DevConstraint, FromModelError, SubscriptionColumns,
};
use clcb::model::{
    Area, AreaUpdate, Attribute, Event, Location, ModelError, Op, SubscriptionId, Subscriptions,
    Value,
};
use rayon::prelude::*;
use std::cmp::Ordering;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// Why the index cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum GridError {
    #[error("filter {filter}: {source}")]
    Model {
        filter: usize,
        #[source]
        source: ModelError,
    },
    #[error("more than 2^30 - 1 filters, or 2^32 - 2 constraints or string bytes in total")]
    TooLarge,
}

/// One filter in one cell's list: its id, its area and its names' signature (the
/// tests that reject most candidates, read from the list itself rather than from
/// per-filter tables at scattered addresses), 32 bytes.
///
/// A circle: centre `(x, y)`, squared radius `sq`, the 128-bit signature. A rectangle
/// ([`RECT`] set): low corner `(x, y)`, high corner `(sq, sig.1)` (the top edge's bits
/// in the signature's second word) and the signature folded to 64 bits in `sig.0`
/// (only pruning: the constraints decide).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Entry {
    /// The filter's id, with [`IMPLIED`] set when the key alone decides its content,
    /// [`RECT`] when its area is a rectangle.
    filter: u32,
    x: f32,
    y: f32,
    /// A circle's squared radius, a rectangle's right edge; NaN for a tombstone (no
    /// point is inside either).
    sq: f32,
    sig: Sig,
}

impl Entry {
    fn new(filter: u32, a: &Area, sig: Sig) -> Entry {
        let filter = filter & !RECT;
        match *a {
            Area::Circle { center, sq_radius } => Entry {
                filter,
                x: center.x,
                y: center.y,
                sq: sq_radius,
                sig,
            },
            Area::Rect { lo, hi } => Entry {
                filter: filter | RECT,
                x: lo.x,
                y: lo.y,
                sq: hi.x,
                sig: Sig(sig.0 | sig.1, u64::from(hi.y.to_bits())),
            },
        }
    }

    /// The filter's id, without the flags.
    #[inline(always)]
    fn id(&self) -> u32 {
        self.filter & !(IMPLIED | RECT)
    }

    /// Whether this entry is a tombstone.
    #[inline(always)]
    fn dead(&self) -> bool {
        self.sq.is_nan()
    }

    /// The model's test ([`Area::contains`]) on the entry's copy of the area, and its
    /// names' signature within the event's `esig`.
    #[inline(always)]
    fn holds(&self, p: Location, esig: Sig) -> bool {
        if self.filter & RECT != 0 {
            let top = f32::from_bits(self.sig.1 as u32);
            self.x <= p.x
                && p.x <= self.sq
                && self.y <= p.y
                && p.y <= top
                && self.sig.0 & !(esig.0 | esig.1) == 0
        } else {
            self.holds_circle(p) && self.sig.within(esig)
        }
    }

    /// The circle's test of the model ([`Area::contains`]) on a circle's entry.
    #[inline(always)]
    fn holds_circle(&self, p: Location) -> bool {
        let dx = p.x - self.x;
        let dy = p.y - self.y;
        dx * dx + dy * dy <= self.sq
    }
}

/// The `sq` of a tombstone: no point is inside (the model's areas are finite).
const TOMBSTONE: f32 = f32::NAN;

/// Set in [`Entry::filter`] when the filter's area is a rectangle.
const RECT: u32 = 1 << 30;

/// Set in [`Entry::filter`] when looking the filter's key up already decided its
/// content: no constraint (the empty key), or its one constraint is the `name = value`
/// it is filed under (a filter of one keyword). Its constraints are then not evaluated.
const IMPLIED: u32 = 1 << 31;

/// The order of a cell's lists: by key, then filter id (a move's binary searches rely
/// on it).
#[inline(always)]
fn order(&(k, e): &(u32, Entry)) -> (u32, u32) {
    (k, e.id())
}

/// One cell: its filters sorted by key and, within a key, by filter id, with a directory
/// of the keys, and the filters moved in since the last compaction, in the same order.
#[derive(Clone, Debug, Default, PartialEq)]
struct Cell {
    /// Distinct keys, ascending.
    keys: Vec<u32>,
    /// `at[i]..at[i + 1]`: the entries of `keys[i]`.
    at: Vec<u32>,
    entries: Vec<Entry>,
    /// Moved in since the last compaction, ascending by key.
    extra: Vec<(u32, Entry)>,
    /// Tombstones in `entries`.
    dead: u32,
}

impl Cell {
    /// Builds a cell from `(key, entry)` pairs sorted by key, then filter id.
    fn from_sorted(items: &[(u32, Entry)]) -> Cell {
        let mut c = Cell {
            entries: Vec::with_capacity(items.len()),
            ..Cell::default()
        };
        for &(k, e) in items {
            if c.keys.last() != Some(&k) {
                c.keys.push(k);
                c.at.push(c.entries.len() as u32);
            }
            c.entries.push(e);
        }
        c.at.push(c.entries.len() as u32);
        // Room for the first moves in, allocated with the cell rather than by a move.
        if !items.is_empty() {
            c.extra.reserve(8.min(1 + items.len() / 32));
        }
        c
    }

    /// The entries of key `k` in the main list.
    #[inline(always)]
    fn group(&self, k: u32) -> &[Entry] {
        match self.keys.binary_search(&k) {
            Ok(i) => &self.entries[self.at[i] as usize..self.at[i + 1] as usize],
            Err(_) => &[],
        }
    }

    /// The overflow entries of key `k`.
    #[inline(always)]
    fn extra_group(&self, k: u32) -> &[(u32, Entry)] {
        let lo = self.extra.partition_point(|&(x, _)| x < k);
        let hi = lo + self.extra[lo..].partition_point(|&(x, _)| x == k);
        &self.extra[lo..hi]
    }

    /// Files `e` (of key `k`) in the overflow, in [`order`].
    fn add(&mut self, k: u32, e: Entry) {
        let at = self.extra.partition_point(|x| order(x) < order(&(k, e)));
        self.extra.insert(at, (k, e));
        self.maybe_compact();
    }

    /// Removes filter `f` (of key `k`); false if it is not in the cell. Both lists
    /// hold a key's entries in filter order, so each is a binary search (a dense cell
    /// of the Zipf space holds thousands of filters under one key).
    fn remove(&mut self, k: u32, f: u32) -> bool {
        if let Ok(i) = self.keys.binary_search(&k) {
            let (lo, hi) = (self.at[i] as usize, self.at[i + 1] as usize);
            let group = &mut self.entries[lo..hi];
            let j = group.partition_point(|e| e.id() < f);
            if let Some(e) = group.get_mut(j) {
                if e.id() == f && !e.dead() {
                    e.sq = TOMBSTONE;
                    self.dead += 1;
                    self.maybe_compact();
                    return true;
                }
            }
        }
        let j = self.extra.partition_point(|x| order(x) < (k, f));
        if self.extra.get(j).is_some_and(|x| order(x) == (k, f)) {
            self.extra.remove(j);
            return true;
        }
        false
    }

    /// Merges the overflow into the main list and drops the tombstones once they make
    /// up more than a thirty-second of it (and at least a few entries).
    fn maybe_compact(&mut self) {
        let churn = self.extra.len() + self.dead as usize;
        if churn <= 16 + self.entries.len() / 32 {
            return;
        }
        // A merge of two lists in [`order`]: the main list's live entries and the
        // overflow.
        let mut items: Vec<(u32, Entry)> =
            Vec::with_capacity(self.entries.len() + self.extra.len());
        let mut extra = std::mem::take(&mut self.extra).into_iter().peekable();
        for (i, &k) in self.keys.iter().enumerate() {
            for &e in &self.entries[self.at[i] as usize..self.at[i + 1] as usize] {
                if e.dead() {
                    continue;
                }
                while let Some(x) = extra.next_if(|x| order(x) < order(&(k, e))) {
                    items.push(x);
                }
                items.push((k, e));
            }
        }
        items.extend(extra);
        *self = Cell::from_sorted(&items);
    }

    fn heap_bytes(&self) -> usize {
        self.keys.capacity() * 4
            + self.at.capacity() * 4
            + self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.extra.capacity() * std::mem::size_of::<(u32, Entry)>()
    }
}

/// The grid's geometry: origin, cell side and cells per side, sized and filled by
/// [`clcb::cells::geometry`] and [`clcb::cells::cells_of`], which the GPU cell index
/// shares.
#[derive(Clone, Copy, Debug)]
struct Geometry(CellGeometry);

impl Geometry {
    fn of(areas: &[Area]) -> Geometry {
        Geometry(clcb::cells::geometry(areas))
    }

    /// Cells in all.
    fn len(&self) -> usize {
        self.0.nx as usize * self.0.ny as usize
    }

    /// The cell holding `p` (clamped to the grid).
    #[inline(always)]
    fn cell_of(&self, p: Location) -> usize {
        self.0.cell_of(p.x, p.y) as usize
    }

    /// The cells of `a`'s bounding box, widened so that no `f32` rounding of the exact
    /// test can accept a point outside.
    fn cells_of(&self, a: &Area) -> impl Iterator<Item = usize> {
        clcb::cells::cells_of(&self.0, a).map(|c| c as usize)
    }
}

/// The grid index: cells of filters sorted by content key, and the filters' compiled
/// constraints.
pub struct GridIndex {
    geo: Geometry,
    cells: Vec<Cell>,
    names: Names,
    /// Per name number: its string values that key a filter (`name = value`), and the
    /// key number of each.
    eq_keys: Vec<FastMap<Box<str>, u32>>,
    /// The same keys by name number and value id (in [`GridTests::values`]), packed:
    /// what a batch's events look up.
    eq_ids: FastMap<u64, u32>,
    /// Pairs of name numbers (`a <= b`, packed) that key a filter.
    pair_keys: FastMap<u64, u32>,
    /// Per name number: whether it is in a pair key.
    in_pair: Vec<bool>,
    /// The key of filters without constraints, if any.
    empty_key: Option<u32>,
    /// Per filter: its key, its current area, its subscription's dense index, its
    /// names' signature.
    key: Vec<u32>,
    area: Vec<Area>,
    sub: Vec<u32>,
    sig: Vec<Sig>,
    /// Per filter: its id as its cell entries hold it (with [`IMPLIED`]).
    entry_id: Vec<u32>,
    /// Per filter (by id): its constraints, cheapest to reject first.
    tests: GridTests,
    ids: Vec<SubscriptionId>,
    /// Whether any entry is a rectangle (a build or a move made one): circles only, the
    /// scan of a cell runs the circle's test alone, without a branch per entry.
    has_rects: bool,
    /// Where the build's time went.
    build: GridBuildTiming,
}

/// Where [`GridIndex::build`]'s time went, phase by phase (host clock; each phase on all
/// cores where it pays).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GridBuildTiming {
    /// Checking every filter and making the columns the index builds from (none when
    /// built from columns, [`GridIndex::from_columns`]).
    pub check: Duration,
    /// Names, string values and keys numbered, their frequencies counted, each filter's
    /// key, signature and entry.
    pub keys: Duration,
    /// The filters' constraints compiled.
    pub tests: Duration,
    /// The (cell, key, filter) triples of every filter's cells sorted, and the cells
    /// made from them.
    pub cells: Duration,
}

impl GridBuildTiming {
    /// The phases' sum.
    pub fn total(&self) -> Duration {
        self.check + self.keys + self.tests + self.cells
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

/// Pass 1 of [`GridIndex::answer`] over a cell of an index that holds a rectangle: each
/// entry tested by its own form ([`Entry::holds`]). Out of line, so that the circles-only
/// scan keeps the code it had before rectangles.
#[inline(never)]
fn scan_mixed(cell: &Cell, keys: &[u32], p: Location, esig: Sig, cand: &mut Vec<u32>) {
    let mut visit = |en: &Entry| {
        if en.holds(p, esig) {
            cand.push(en.filter & !RECT);
        }
    };
    for &k in keys.iter() {
        cell.group(k).iter().for_each(&mut visit);
        if !cell.extra.is_empty() {
            cell.extra_group(k).iter().for_each(|(_, en)| visit(en));
        }
    }
}

/// Scratch memory of one matching thread.
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    /// Name number -> 1 + the event attribute's index (0: the event lacks the name).
    slot: Vec<u32>,
    ids: Vec<u32>,
    keys: Vec<u32>,
    /// Filters whose area and names pass, to evaluate.
    cand: Vec<u32>,
    matched: Vec<bool>,
    list: Vec<u32>,
}

/// Filter `f`'s id in its cell entries: `f`, with [`IMPLIED`] if `implied`.
fn entry_id_of(f: u32, implied: bool) -> u32 {
    if implied {
        f | IMPLIED
    } else {
        f
    }
}

#[inline(always)]
fn pair(a: u32, b: u32) -> u64 {
    (a.min(b) as u64) << 32 | a.max(b) as u64
}

/// A filter's key before numbering.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum RawKey<'a> {
    Empty,
    Pair(u64),
    Eq(u32, &'a str),
}

/// Items per part of the build's work on all cores.
const PART: usize = 4096;

/// The distinct items of every element of `items` (`of` lists an element's), in order
/// of first appearance over all of them, as one pass in order would find them: each
/// part's distinct items found on all cores, then the parts merged in order.
fn in_order<T: Sync, K: Copy + Hash + Eq + Send, I: Iterator<Item = K>>(
    items: &[T],
    of: impl Fn(&T) -> I + Sync,
) -> Vec<K> {
    let parts: Vec<Vec<K>> = items
        .par_chunks(PART)
        .map(|part| {
            let mut seen: FastMap<K, ()> = FastMap::default();
            let mut order = Vec::new();
            for k in part.iter().flat_map(&of) {
                if seen.insert(k, ()).is_none() {
                    order.push(k);
                }
            }
            order
        })
        .collect();
    let mut seen: FastMap<K, ()> = FastMap::default();
    let mut order = Vec::new();
    for k in parts.into_iter().flatten() {
        if seen.insert(k, ()).is_none() {
            order.push(k);
        }
    }
    order
}

/// The cells of a grid: filter `f` (of key `key[f]` and area `area[f]`) in every cell
/// its area's box touches, each cell's entries (`entry(f)`) sorted by key, then filter.
/// On all cores: the (cell, key, filter) triples sorted, then each cell made from its
/// run of them.
fn cells(
    geo: &Geometry,
    key: &[u32],
    area: &[Area],
    entry: impl Fn(usize) -> Entry + Sync,
) -> Vec<Cell> {
    let (triples, bounds) =
        clcb::cells::sorted_triples(key, geo.len(), |f| clcb::cells::cells_of(&geo.0, &area[f]));
    let triples = &triples;
    (0..geo.len())
        .into_par_iter()
        .map(|c| {
            let items: Vec<(u32, Entry)> = triples[bounds[c]..bounds[c + 1]]
                .iter()
                .map(|&t| {
                    (
                        clcb::cells::triple_key(t),
                        entry(clcb::cells::triple_filter(t)),
                    )
                })
                .collect();
            Cell::from_sorted(&items)
        })
        .collect()
}

/// A compiled constraint's value: a number, or a string of [`GridTests::values`] (its
/// id, and its bytes' place in the dictionary's arena).
#[derive(Clone, Copy, Debug, PartialEq)]
enum GVal {
    Num(Num),
    Str { at: u32, len: u32, id: u32 },
}

/// A compiled constraint: name number, operator, value.
#[derive(Clone, Copy, Debug, PartialEq)]
struct GTest {
    name: u32,
    op: Op,
    val: GVal,
}

/// The filters' constraints compiled (as [`crate::compiled`] compiles them for the CCM
/// indexes, with each string value numbered in one dictionary, so that an event of a
/// batch compares its string's id, translated once per call): filter `f`'s are
/// `tests[at[f]..at[f + 1]]`.
#[derive(Clone, Debug)]
struct GridTests {
    at: Vec<u32>,
    tests: Vec<GTest>,
    /// The constraints' distinct string values.
    values: Dictionary,
}

impl Default for GridTests {
    fn default() -> Self {
        GridTests {
            at: vec![0],
            tests: Vec::new(),
            values: Dictionary::default(),
        }
    }
}

impl GridTests {
    /// The constraints of `filters` compiled, each filter's cheapest to reject first
    /// (string equalities, then by rarity of the name, `name_freq`; a stable sort, so
    /// ties keep their order), names numbered in `names`, string values in `values`. On
    /// all cores: each filter's place is known from its constraint count, so parts of
    /// consecutive filters write their own runs of one table.
    fn build(
        cols: &SubscriptionColumns,
        name_freq: &[u32],
        values: Dictionary,
    ) -> Result<GridTests, GridError> {
        let n = cols.filter_count();
        let total = cols.all_constraints().len();
        if total >= u32::MAX as usize {
            return Err(GridError::TooLarge);
        }
        let at: Vec<u32> = cols.cons_start().par_iter().copied().collect();
        if values.arena().len() >= u32::MAX as usize {
            return Err(GridError::TooLarge);
        }
        let blank = GTest {
            name: 0,
            op: Op::Eq,
            val: GVal::Num(Num::Int(0)),
        };
        let mut tests = Vec::with_capacity(total);
        tests.par_extend(rayon::iter::repeat_n(blank, total));
        let mut tasks = Vec::with_capacity(n.div_ceil(PART));
        let mut rest = &mut tests[..];
        for first in (0..n).step_by(PART) {
            let end = (first + PART).min(n);
            let (here, r) = rest.split_at_mut((at[end] - at[first]) as usize);
            tasks.push((first..end, here));
            rest = r;
        }
        let dict = &values;
        tasks.into_par_iter().for_each(|(range, here)| {
            let mut keyed: Vec<((bool, u32), &DevConstraint)> = Vec::new();
            let mut k = 0;
            for f in range {
                keyed.clear();
                keyed.extend(
                    cols.constraints(f)
                        .iter()
                        .map(|c| ((!is_str_eq(c), name_freq[c.tag as usize]), c)),
                );
                keyed.sort_by_key(|&(key, _)| key);
                for &(_, c) in &keyed {
                    let val = match cols.value_of(c) {
                        ValueRef::Str(x) => {
                            let id = dict.get(x).expect("numbered before compiling");
                            let (at, len) = dict.spans()[id as usize];
                            GVal::Str { at, len, id }
                        }
                        ValueRef::Int(i) => GVal::Num(Num::Int(i)),
                        ValueRef::Float(x) => GVal::Num(Num::Float(x)),
                    };
                    here[k] = GTest {
                        name: c.tag,
                        op: op_of_code(u32::from(c.op)),
                        val,
                    };
                    k += 1;
                }
            }
        });
        Ok(GridTests { at, tests, values })
    }

    /// Filter `f`'s constraints.
    #[inline(always)]
    fn of(&self, f: usize) -> &[GTest] {
        &self.tests[self.at[f] as usize..self.at[f + 1] as usize]
    }

    /// Whether every constraint of filter `f` holds on the heap event whose attribute
    /// of name number `k` is `attrs[slot[k] - 1]` (0: absent).
    #[inline(always)]
    fn satisfies(&self, f: usize, attrs: &[Attribute], slot: &[u32]) -> bool {
        for t in self.of(f) {
            let s = slot[t.name as usize];
            if s == 0 || !self.holds(t, &attrs[s as usize - 1].value) {
                return false;
            }
        }
        true
    }

    /// [`GridTests::satisfies`] on an event of a batch: its attributes `attrs`, the
    /// batch's strings, and each string's id in [`GridTests::values`] (`vids`).
    #[inline(always)]
    fn satisfies_batch(
        &self,
        f: usize,
        (attrs, slot): (&[Attr], &[u32]),
        (strings, vids): (&Dictionary, &[u32]),
    ) -> bool {
        for t in self.of(f) {
            let s = slot[t.name as usize];
            if s == 0 {
                return false;
            }
            let a = &attrs[s as usize - 1];
            let held = match (t.val, a.ty) {
                (GVal::Num(k), TY_INT) => num_holds(t.op, cmp_num(Num::Int(a.val as i64), k)),
                (GVal::Num(k), TY_FLOAT) => {
                    num_holds(t.op, cmp_num(Num::Float(f64::from_bits(a.val)), k))
                }
                (GVal::Str { id, .. }, TY_STR) if matches!(t.op, Op::Eq | Op::Ne) => {
                    (vids[a.val as usize] == id) == (t.op == Op::Eq)
                }
                (GVal::Str { .. }, TY_STR) => {
                    self.str_holds(t, strings.str_of(a.val as u32).as_bytes())
                }
                _ => false,
            };
            if !held {
                return false;
            }
        }
        true
    }

    /// Whether constraint `t` holds on value `v` (the typing rules of `ccm::model`).
    #[inline(always)]
    fn holds(&self, t: &GTest, v: &Value) -> bool {
        match (t.val, v) {
            (GVal::Num(k), Value::Int(_) | Value::Float(_)) => {
                num_holds(t.op, cmp_num(Num::of(v).expect("a number"), k))
            }
            (GVal::Str { .. }, Value::Str(x)) => self.str_holds(t, x.as_bytes()),
            _ => false,
        }
    }

    /// Whether the string constraint `t` holds on the bytes `x`.
    #[inline(always)]
    fn str_holds(&self, t: &GTest, x: &[u8]) -> bool {
        let GVal::Str { at, len, .. } = t.val else {
            return false;
        };
        let k = &self.values.arena()[at as usize..(at + len) as usize];
        match t.op {
            Op::Eq => x == k,
            Op::Ne => x != k,
            Op::Prefix => x.starts_with(k),
            Op::Suffix => x.ends_with(k),
            Op::Substr => k.is_empty() || x.windows(k.len()).any(|w| w == k),
            _ => false,
        }
    }

    /// Hints the CPU to fetch filter `f`'s offsets, so that a batch of filters' misses
    /// overlap.
    #[inline(always)]
    fn prefetch_offsets(&self, f: usize) {
        if let Some(a) = self.at.get(f) {
            crate::compiled::prefetch(a);
        }
    }

    /// Hints the CPU to fetch filter `f`'s first constraints (reads its offset).
    #[inline(always)]
    fn prefetch_tests(&self, f: usize) {
        if let Some(t) = self.at.get(f).and_then(|&a| self.tests.get(a as usize)) {
            crate::compiled::prefetch(t);
        }
    }

    fn heap_bytes(&self) -> usize {
        self.at.capacity() * 4
            + self.tests.capacity() * std::mem::size_of::<GTest>()
            + self.values.heap_bytes()
    }
}

/// Whether a number comparing `o` to a constraint's value satisfies operator `op`.
#[inline(always)]
fn num_holds(op: Op, o: Ordering) -> bool {
    match op {
        Op::Eq => o == Ordering::Equal,
        Op::Ne => o != Ordering::Equal,
        Op::Lt => o == Ordering::Less,
        Op::Gt => o == Ordering::Greater,
        Op::Le => o != Ordering::Greater,
        Op::Ge => o != Ordering::Less,
        _ => false,
    }
}

/// A batch's dictionaries in one grid index's terms, made once per call
/// ([`GridIndex::view`]): each name's number and each string's id among the
/// constraints' values ([`UNKNOWN`] where the index has none).
pub struct BatchView<'a> {
    batch: &'a EventBatch,
    names: Vec<u32>,
    values: Vec<u32>,
}

impl GridIndex {
    /// Builds the index of `subs`' filters at their current areas.
    ///
    /// ```
    /// use baselines::{grid_index::GridIndex, rtree::RTreeMatcher};
    /// use clcb::workload::{Params, Workload};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let params = Params {
    ///     events: 40,
    ///     subscriptions: 300,
    ///     names: 10,
    ///     area_percent: 5.0,
    ///     selectivity_percent: 50.0,
    ///     ..Params::default()
    /// };
    /// let w = Workload::new(params, 3);
    /// let mut subs = w.subscriptions();
    /// let mut grid = GridIndex::build(&subs)?;
    /// let mut rtree = RTreeMatcher::build(&subs);
    /// // Areas move: the grid's cell lists and the tree follow.
    /// for u in w.updates(100, subs.filter_count()) {
    ///     grid.move_area(&u)?;
    ///     rtree.move_area(&u)?;
    ///     subs.apply(&u)?;
    /// }
    /// let events = w.events();
    /// let answers = grid.match_parallel(&events); // all cores (rayon)
    /// for (e, a) in events.iter().zip(&answers) {
    ///     assert_eq!(a, &rtree.match_indices(e, &subs));
    /// }
    /// assert!(answers.iter().any(|a| !a.is_empty()));
    /// # Ok(()) }
    /// ```
    pub fn build(subs: &Subscriptions) -> Result<GridIndex, GridError> {
        if subs.filter_count() >= RECT as usize {
            return Err(GridError::TooLarge);
        }
        let t = Instant::now();
        // Every filter checked, then the columns the index builds from, on all cores.
        let cols = SubscriptionColumns::from_subscriptions(subs).map_err(|e| match e {
            FromModelError::Filter { filter, source } => GridError::Model { filter, source },
            FromModelError::TooLarge(_) => GridError::TooLarge,
        })?;
        let mut ix = Self::from_columns(&cols)?;
        ix.build.check = t.elapsed() - ix.build.total();
        Ok(ix)
    }

    /// [`GridIndex::build`] of subscriptions held as columns (what the loader of a file
    /// gives, `clcb::io::load_subscription_columns`): nothing to check, names already
    /// numbered in order of first appearance.
    pub fn from_columns(cols: &SubscriptionColumns) -> Result<GridIndex, GridError> {
        let n = cols.filter_count();
        if n >= RECT as usize {
            return Err(GridError::TooLarge);
        }
        let mut timing = GridBuildTiming::default();
        let mut laps = Laps(Instant::now());
        // Names numbered as the columns number them (first appearance); filters per
        // name, per pair of rarest names, per `name = value`.
        let mut names = Names::default();
        for name in cols.names() {
            names.intern(name);
        }
        let names = names;
        let mut filter_names: Vec<Vec<u32>> = (0..n)
            .into_par_iter()
            .map(|f| {
                let mut ids: Vec<u32> = cols.constraints(f).iter().map(|c| c.tag).collect();
                ids.sort_unstable();
                ids.dedup();
                ids
            })
            .collect();
        let name_freq: Vec<u32> = filter_names
            .par_iter()
            .fold(
                || vec![0u32; names.len()],
                |mut v, ids| {
                    ids.iter().for_each(|&id| v[id as usize] += 1);
                    v
                },
            )
            .reduce(
                || vec![0u32; names.len()],
                |mut a, b| {
                    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                    a
                },
            );
        let eq_freq: FastMap<(u32, &str), u32> = count_in_parts(cols.all_constraints(), |c| {
            is_str_eq(c).then(|| (c.tag, cols.str_of(c))).into_iter()
        });
        filter_names
            .par_iter_mut()
            .for_each(|ids| ids.sort_unstable_by_key(|&id| (name_freq[id as usize], id)));
        let pair_of = |ids: &[u32]| pair(ids[0], *ids.get(1).unwrap_or(&ids[0]));
        let pair_freq: FastMap<u64, u32> = count_in_parts(&filter_names, |ids| {
            (!ids.is_empty()).then(|| pair_of(ids)).into_iter()
        });
        // Each filter's key: the rarer of its rarest `name = value` and its name pair,
        // numbered in order of first appearance.
        let raw: Vec<RawKey> = (0..n)
            .into_par_iter()
            .map(|i| {
                let ids = &filter_names[i];
                let rarest_eq = cols
                    .constraints(i)
                    .iter()
                    .filter(|c| is_str_eq(c))
                    .map(|c| {
                        let v = cols.str_of(c);
                        (eq_freq[&(c.tag, v)], c.tag, v)
                    })
                    .min();
                match rarest_eq {
                    Some((freq, id, v)) if ids.is_empty() || freq <= pair_freq[&pair_of(ids)] => {
                        RawKey::Eq(id, v)
                    }
                    _ if ids.is_empty() => RawKey::Empty,
                    _ => RawKey::Pair(pair_of(ids)),
                }
            })
            .collect();
        let distinct = in_order(&raw, |&k| std::iter::once(k));
        let numbered: FastMap<RawKey, u32> = distinct
            .iter()
            .enumerate()
            .map(|(k, &r)| (r, k as u32))
            .collect();
        // The constraints' string values, numbered in order of first appearance.
        let mut values = Dictionary::default();
        let str_cons: Vec<&str> = in_order(cols.all_constraints(), |c| {
            is_str(c).then(|| cols.str_of(c)).into_iter()
        });
        for v in str_cons {
            values.intern(v);
        }
        let mut ix = GridIndex {
            geo: Geometry::of(&[]),
            cells: Vec::new(),
            names: Names::default(),
            eq_keys: vec![FastMap::default(); names.len()],
            eq_ids: FastMap::default(),
            pair_keys: FastMap::default(),
            in_pair: vec![false; names.len()],
            empty_key: None,
            key: Vec::new(),
            area: Vec::new(),
            sub: Vec::new(),
            sig: Vec::new(),
            entry_id: Vec::new(),
            tests: GridTests::default(),
            ids: cols.ids().to_vec(),
            has_rects: false,
            build: GridBuildTiming::default(),
        };
        for (k, &r) in distinct.iter().enumerate() {
            let k = k as u32;
            match r {
                RawKey::Empty => ix.empty_key = Some(k),
                RawKey::Pair(p) => {
                    ix.pair_keys.insert(p, k);
                    ix.in_pair[(p >> 32) as usize] = true;
                    ix.in_pair[p as u32 as usize] = true;
                }
                RawKey::Eq(id, v) => {
                    ix.eq_keys[id as usize].insert(v.into(), k);
                    let vid = values.get(v).expect("numbered above");
                    ix.eq_ids.insert(u64::from(id) << 32 | u64::from(vid), k);
                }
            }
        }
        // Per filter: its key, entry id, area, subscription, signature, and its
        // constraints cheapest to reject first (string equalities, then by rarity),
        // compiled in parts on all cores, then laid end to end.
        ix.key = raw.par_iter().map(|r| numbered[r]).collect();
        ix.entry_id = (0..n)
            .into_par_iter()
            .map(|i| {
                let cs = cols.constraints(i);
                let implied = cs.is_empty() || (cs.len() == 1 && matches!(raw[i], RawKey::Eq(..)));
                entry_id_of(i as u32, implied)
            })
            .collect();
        ix.area = cols.areas().par_iter().copied().collect();
        ix.sub = cols.filter_sub().par_iter().copied().collect();
        ix.sig = filter_names
            .par_iter()
            .map(|ids| ids.iter().fold(Sig::default(), |g, &id| g.or(Sig::of(id))))
            .collect();
        drop(filter_names);
        laps.lap(&mut timing.keys);
        ix.tests = GridTests::build(cols, &name_freq, values)?;
        laps.lap(&mut timing.tests);
        ix.names = names;
        // The cells: each filter in every cell its box touches, sorted by key, then
        // filter: the (cell, key, filter) triples of all filters sorted on all cores,
        // then each cell made from its run of them.
        ix.has_rects = ix.area.iter().any(Area::is_rect);
        ix.geo = Geometry::of(&ix.area);
        ix.cells = cells(&ix.geo, &ix.key, &ix.area, |f| {
            Entry::new(ix.entry_id[f], &ix.area[f], ix.sig[f])
        });
        laps.lap(&mut timing.cells);
        ix.build = timing;
        Ok(ix)
    }

    /// Where [`GridIndex::build`]'s time went.
    pub fn build_timing(&self) -> GridBuildTiming {
        self.build
    }

    /// Number of filters indexed.
    pub fn filters(&self) -> usize {
        self.area.len()
    }

    /// The grid's cells per side (x, y).
    pub fn cells(&self) -> (usize, usize) {
        (self.geo.0.nx as usize, self.geo.0.ny as usize)
    }

    /// Distinct content keys the filters are filed under.
    pub fn keys(&self) -> usize {
        self.pair_keys.len()
            + self.eq_keys.iter().map(|m| m.len()).sum::<usize>()
            + usize::from(self.empty_key.is_some())
    }

    /// An estimate of the heap bytes of the index.
    pub fn heap_bytes(&self) -> usize {
        self.cells.iter().map(Cell::heap_bytes).sum::<usize>()
            + self.cells.capacity() * std::mem::size_of::<Cell>()
            + self.tests.heap_bytes()
            + self.eq_ids.capacity() * 12
            + self.names.heap_bytes()
            + self.area.capacity() * std::mem::size_of::<Area>()
            + self.sig.capacity() * std::mem::size_of::<Sig>()
            + (self.key.capacity()
                + self.sub.capacity()
                + self.entry_id.capacity()
                + self.ids.capacity())
                * 4
    }

    /// Fresh scratch memory for [`GridIndex::match_indices_with`].
    pub fn scratch(&self) -> Scratch {
        Scratch {
            slot: vec![0; self.names.len()],
            matched: vec![false; self.ids.len()],
            ..Scratch::default()
        }
    }

    /// The dense indices of the subscriptions matching `e`, ascending, reusing
    /// `scratch` (one per thread).
    pub fn match_indices_with(&self, e: &Event, scratch: &mut Scratch) -> Vec<u32> {
        self.fit(scratch);
        let Scratch {
            slot,
            ids,
            keys,
            cand,
            matched,
            list,
        } = scratch;
        let attrs = e.attributes();
        self.names.slots(&e.content, slot, ids);
        // The keys the event can satisfy.
        keys.clear();
        keys.extend(self.empty_key);
        for &id in ids.iter() {
            let m = &self.eq_keys[id as usize];
            if !m.is_empty() {
                if let Value::Str(v) = &attrs[slot[id as usize] as usize - 1].value {
                    keys.extend(m.get(v.as_str()));
                }
            }
        }
        self.pair_keys_of(ids, keys);
        let sat = |f: usize| self.tests.satisfies(f, attrs, slot);
        let out = self.answer(e.loc, (ids, keys), (cand, matched, list), sat);
        for &id in ids.iter() {
            slot[id as usize] = 0;
        }
        out
    }

    /// The dictionaries of `b` in this index's terms: what [`GridIndex::match_view_with`]
    /// reads (a look-up per distinct name and string of the batch, once per call).
    pub fn view<'a>(&self, b: &'a EventBatch) -> BatchView<'a> {
        let content = b.content();
        BatchView {
            batch: b,
            names: clcb::batch::translate(content.names(), |n| self.names.get(n)),
            values: clcb::batch::translate(content.strings(), |v| self.tests.values.get(v)),
        }
    }

    /// [`GridIndex::match_indices_with`] for event `i` of a batch, read as it lies
    /// through `view` ([`GridIndex::view`]): its attributes' name numbers and string
    /// ids come from the view's tables, so no name or string is hashed per event.
    pub fn match_view_with(&self, view: &BatchView, i: usize, scratch: &mut Scratch) -> Vec<u32> {
        self.fit(scratch);
        let Scratch {
            slot,
            ids,
            keys,
            cand,
            matched,
            list,
        } = scratch;
        let attrs = view.batch.attrs_of(i);
        ids.clear();
        for (k, a) in attrs.iter().enumerate() {
            let id = view.names[a.name as usize];
            if id != UNKNOWN {
                slot[id as usize] = k as u32 + 1;
                ids.push(id);
            }
        }
        keys.clear();
        keys.extend(self.empty_key);
        for &id in ids.iter() {
            if !self.eq_keys[id as usize].is_empty() {
                let a = &attrs[slot[id as usize] as usize - 1];
                if a.ty == TY_STR {
                    let vid = view.values[a.val as usize];
                    if vid != UNKNOWN {
                        keys.extend(self.eq_ids.get(&(u64::from(id) << 32 | u64::from(vid))));
                    }
                }
            }
        }
        self.pair_keys_of(ids, keys);
        let strings = (view.batch.content().strings(), &view.values[..]);
        let sat = |f: usize| self.tests.satisfies_batch(f, (attrs, slot), strings);
        let out = self.answer(view.batch.loc(i), (ids, keys), (cand, matched, list), sat);
        for &id in ids.iter() {
            slot[id as usize] = 0;
        }
        out
    }

    /// Scratch sized for this index.
    fn fit(&self, scratch: &mut Scratch) {
        if scratch.slot.len() != self.names.len() || scratch.matched.len() != self.ids.len() {
            *scratch = self.scratch();
        }
    }

    /// Appends to `keys` the pair keys of the event's name numbers `ids`.
    #[inline(always)]
    fn pair_keys_of(&self, ids: &[u32], keys: &mut Vec<u32>) {
        if self.pair_keys.is_empty() {
            return;
        }
        let paired: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|&id| self.in_pair[id as usize])
            .collect();
        for (i, &a) in paired.iter().enumerate() {
            for &b in &paired[i..] {
                keys.extend(self.pair_keys.get(&pair(a, b)));
            }
        }
    }

    /// The answer of an event at `p` with name numbers `ids` and keys `keys`, whose
    /// filters' constraints `sat` evaluates.
    #[inline(always)]
    fn answer(
        &self,
        p: Location,
        (ids, keys): (&[u32], &[u32]),
        (cand, matched, list): (&mut Vec<u32>, &mut [bool], &mut Vec<u32>),
        sat: impl Fn(usize) -> bool,
    ) -> Vec<u32> {
        let esig = ids.iter().fold(Sig::default(), |g, &id| g.or(Sig::of(id)));
        let cell = &self.cells[self.geo.cell_of(p)];
        // Pass 1, over the cell's lists: the filters whose area holds the event and
        // whose names it has. Pass 2: their scattered constraints and subscriptions,
        // fetched ahead so that the cache misses overlap, then evaluated.
        cand.clear();
        if self.has_rects {
            scan_mixed(cell, keys, p, esig, cand);
        } else {
            // Circles only: every entry is one (the scan as before rectangles).
            let mut visit = |en: &Entry| {
                if en.holds_circle(p) && en.sig.within(esig) {
                    cand.push(en.filter);
                }
            };
            for &k in keys.iter() {
                cell.group(k).iter().for_each(&mut visit);
                if !cell.extra.is_empty() {
                    cell.extra_group(k).iter().for_each(|(_, en)| visit(en));
                }
            }
        }
        for &f in cand.iter() {
            let implied = f & IMPLIED != 0;
            let f = (f & !IMPLIED) as usize;
            if !implied {
                self.tests.prefetch_offsets(f);
            }
            crate::compiled::prefetch(&self.sub[f]);
        }
        for &f in cand.iter().filter(|&&f| f & IMPLIED == 0) {
            self.tests.prefetch_tests(f as usize);
        }
        for &f in cand.iter() {
            let implied = f & IMPLIED != 0;
            let f = (f & !IMPLIED) as usize;
            if !implied && !sat(f) {
                continue;
            }
            let s = self.sub[f];
            if !matched[s as usize] {
                matched[s as usize] = true;
                list.push(s);
            }
        }
        for &s in list.iter() {
            matched[s as usize] = false;
        }
        let mut out = std::mem::take(list);
        out.sort_unstable();
        out
    }

    /// [`GridIndex::match_indices_with`] with fresh scratch memory.
    pub fn match_indices(&self, e: &Event) -> Vec<u32> {
        self.match_indices_with(e, &mut self.scratch())
    }

    /// The ids of the subscriptions matching `e`, ascending.
    pub fn match_event(&self, e: &Event) -> Vec<SubscriptionId> {
        self.match_indices(e)
            .into_iter()
            .map(|i| self.ids[i as usize])
            .collect()
    }

    /// Matches every event on the threads of the rayon pool it runs in (all cores by
    /// default), each thread with one scratch for the whole call; answers as
    /// [`GridIndex::match_indices`].
    pub fn match_parallel(&self, events: &[Event]) -> Vec<Vec<u32>> {
        crate::matcher::per_thread(
            events,
            || self.scratch(),
            |e, s| self.match_indices_with(e, s),
        )
    }

    /// The answers of every event of `b`, one after another on this thread, read as
    /// the batch lies ([`GridIndex::match_view_with`]); as [`GridIndex::match_indices`].
    pub fn match_batch(&self, b: &EventBatch) -> Vec<Vec<u32>> {
        let view = self.view(b);
        let mut s = self.scratch();
        (0..b.len())
            .map(|i| self.match_view_with(&view, i, &mut s))
            .collect()
    }

    /// [`GridIndex::match_batch`] on the threads of the rayon pool it runs in (all cores
    /// by default), each thread with one scratch for the whole call, as
    /// [`GridIndex::match_parallel`].
    pub fn match_batch_parallel(&self, b: &EventBatch) -> Vec<Vec<u32>> {
        let view = self.view(b);
        let idx: Vec<usize> = (0..b.len()).collect();
        crate::matcher::per_thread(
            &idx,
            || self.scratch(),
            |&i, s| self.match_view_with(&view, i, s),
        )
    }

    /// Moves a filter's area (§5, Fig. 5): its entries leave the cells of the old area
    /// and join those of the new one.
    pub fn move_area(&mut self, u: &AreaUpdate) -> Result<(), ModelError> {
        let f = u.filter.0 as usize;
        let Some(&old) = self.area.get(f) else {
            return Err(ModelError::NoSuchFilter(u.filter.0, self.area.len()));
        };
        let k = self.key[f];
        for c in self.geo.cells_of(&old) {
            let removed = self.cells[c].remove(k, f as u32);
            debug_assert!(removed, "filter {f} missing from cell {c}");
        }
        let entry = Entry::new(self.entry_id[f], &u.area, self.sig[f]);
        self.has_rects |= u.area.is_rect();
        for c in self.geo.cells_of(&u.area) {
            self.cells[c].add(k, entry);
        }
        self.area[f] = u.area;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clcb::model::{Constraint, Filter, FilterId, Subscription};

    fn sub(id: u32, filters: Vec<(Vec<Constraint>, (f64, f64, f64))>) -> Subscription {
        Subscription {
            id: SubscriptionId(id),
            filters: filters
                .into_iter()
                .map(|(cs, (x, y, r))| Filter::new(cs, Area::circle(x, y, r).unwrap()).unwrap())
                .collect(),
        }
    }

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

    /// The index built on all cores is the one a pass over the filters in order builds:
    /// the same on one thread and on four; keys numbered in order of first appearance;
    /// each cell its filters in filter order, sorted by key then filter (as pushing
    /// them one by one and sorting each cell made them). Table 2's workload (pair keys)
    /// and the keyword workload (`name = value` keys).
    #[test]
    fn the_index_built_on_all_cores_is_the_sequential_builds() {
        use clcb::keywords::{KeywordParams, KeywordWorkload};
        use clcb::workload::{Params, Workload};
        let table2 = Params {
            subscriptions: 2_000,
            events: 0,
            area_percent: 0.002,
            ..Params::default()
        };
        let keywords = KeywordParams {
            subscriptions: 20_000,
            events: 0,
            ..KeywordParams::default()
        };
        for subs in [
            Workload::new(table2, 3).subscriptions(),
            KeywordWorkload::new(keywords, 3).subscriptions(),
        ] {
            let on = |threads| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| GridIndex::build(&subs)).unwrap()
            };
            let (one, four) = (on(1), on(4));
            assert!(one.key.len() > 2 * PART, "several parts");
            assert_eq!(one.key, four.key);
            assert_eq!(one.entry_id, four.entry_id);
            assert_eq!(
                (&one.area, &one.sub, &one.sig),
                (&four.area, &four.sub, &four.sig)
            );
            assert_eq!(
                (&one.tests.at, &one.tests.tests),
                (&four.tests.at, &four.tests.tests)
            );
            assert!(one.tests.values.iter().eq(four.tests.values.iter()));
            assert_eq!(one.eq_ids, four.eq_ids);
            assert!(one.cells == four.cells);
            // Keys in order of first appearance.
            let mut next = 0;
            for &k in &four.key {
                assert!(k <= next, "key {k} before key {next}");
                next = next.max(k + 1);
            }
            assert_eq!(next as usize, four.keys());
            // Cells as a pass in filter order fills them.
            let mut per_cell: Vec<Vec<(u32, Entry)>> = vec![Vec::new(); four.geo.len()];
            for (f, a) in four.area.iter().enumerate() {
                for c in four.geo.cells_of(a) {
                    per_cell[c].push((four.key[f], Entry::new(four.entry_id[f], a, four.sig[f])));
                }
            }
            for (c, mut items) in per_cell.into_iter().enumerate() {
                items.sort_by_key(order);
                assert!(Cell::from_sorted(&items) == four.cells[c], "cell {c}");
            }
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
        let g = GridIndex::build(&subs).unwrap();
        assert_eq!(g.keys(), 4);
        let e = event(0.2, 0.0, &[("rain", Value::Str("rain".into()))]);
        assert_eq!(g.match_event(&e), vec![SubscriptionId(1)]);
        let e = event(
            0.2,
            0.0,
            &[
                ("rain", Value::Str("snow".into())),
                ("t", Value::Float(3.5)),
            ],
        );
        assert_eq!(g.match_event(&e), vec![SubscriptionId(4)]);
        let e = event(5.5, 5.0, &[]);
        assert_eq!(g.match_event(&e), vec![SubscriptionId(3)]);
        // The border belongs to the area.
        assert_eq!(
            g.match_event(&event(6.0, 5.0, &[])),
            vec![SubscriptionId(3)]
        );
        assert_eq!(g.match_event(&event(6.01, 5.0, &[])), vec![]);
    }

    #[test]
    fn moves_go_anywhere_even_off_the_grid_and_cells_compact() {
        let filters: Vec<_> = (0..200)
            .map(|i| (vec![eq("k", "v")], (i as f64 % 20.0, (i / 20) as f64, 0.5)))
            .collect();
        let subs = Subscriptions::new([sub(7, filters)]);
        let mut g = GridIndex::build(&subs).unwrap();
        let far = |i: u32| AreaUpdate {
            filter: FilterId(i),
            area: Area::circle(1e5 + i as f64, -3e4, 0.5).unwrap(),
        };
        let hit = event(1e5 + 150.0, -3e4, &[("k", Value::Str("v".into()))]);
        assert_eq!(g.match_indices(&hit), Vec::<u32>::new());
        for i in 0..200 {
            g.move_area(&far(i)).unwrap();
        }
        assert_eq!(g.match_indices(&hit), vec![0]);
        let home = event(3.0, 4.0, &[("k", Value::Str("v".into()))]);
        assert_eq!(g.match_indices(&home), Vec::<u32>::new());
        // And back.
        g.move_area(&AreaUpdate {
            filter: FilterId(150),
            area: Area::circle(3.0, 4.0, 0.5).unwrap(),
        })
        .unwrap();
        assert_eq!(g.match_indices(&home), vec![0]);
        assert_eq!(g.match_indices(&hit), Vec::<u32>::new());
        assert!(g.move_area(&far(200)).is_err());
    }
}
