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
//! 3. **Exact circle test, then pruning like the content index**. A cell's entry holds
//!    the filter's circle, so the model's test ([`clcb::model::Area::contains`]) runs
//!    on the list itself; then a 128-bit name signature (exact up to 128 names) and,
//!    last, the compiled constraints ([`crate::compiled`], shared with the CCM
//!    indexes), ordered cheapest to reject first: string equalities, then by rarity of
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
//! One event runs on one thread; [`GridIndex::match_parallel`] spreads events over the
//! rayon pool it runs in (all cores by default), each thread with one scratch.

use crate::compiled::{FastMap, Names, Tests};
use crate::content_index::Sig;
use clcb::cells::CellGeometry;
use clcb::model::{
    Area, AreaUpdate, Event, Filter, Location, ModelError, Op, SubscriptionId, Subscriptions, Value,
};

/// Why the index cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum GridError {
    #[error("filter {filter}: {source}")]
    Model {
        filter: usize,
        #[source]
        source: ModelError,
    },
    #[error("more than 2^31 - 1 filters, or 2^32 - 2 constraints or string bytes in total")]
    TooLarge,
}

/// One filter in one cell's list: its id, its circle and its names' signature (the
/// tests that reject most candidates, read from the list itself rather than from
/// per-filter tables at scattered addresses).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Entry {
    /// The filter's id, with [`IMPLIED`] set when the key alone decides its content.
    filter: u32,
    x: f32,
    y: f32,
    /// Squared radius; negative for a tombstone (no point is inside).
    sq: f32,
    sig: Sig,
}

impl Entry {
    fn new(filter: u32, a: &Area, sig: Sig) -> Entry {
        Entry {
            filter,
            x: a.center.x,
            y: a.center.y,
            sq: a.sq_radius,
            sig,
        }
    }

    /// The filter's id, without the [`IMPLIED`] flag.
    #[inline(always)]
    fn id(&self) -> u32 {
        self.filter & !IMPLIED
    }

    /// The model's test ([`Area::contains`]), on the entry's copy of the circle.
    #[inline(always)]
    fn holds(&self, p: Location) -> bool {
        Area {
            center: Location {
                x: self.x,
                y: self.y,
            },
            sq_radius: self.sq,
        }
        .contains(p)
    }
}

const TOMBSTONE: f32 = -1.0;

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
#[derive(Clone, Debug, Default)]
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
                if e.id() == f && e.sq != TOMBSTONE {
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
                if e.sq == TOMBSTONE {
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
    tests: Tests,
    ids: Vec<SubscriptionId>,
}

/// Scratch memory of one matching thread.
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    /// Name number -> 1 + the event attribute's index (0: the event lacks the name).
    slot: Vec<u32>,
    ids: Vec<u32>,
    keys: Vec<u32>,
    /// Filters whose circle and names pass, to evaluate.
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
        let n = subs.filter_count();
        if n >= IMPLIED as usize {
            return Err(GridError::TooLarge);
        }
        let filters: Vec<(usize, &Filter)> = subs.filters().map(|(_, s, f)| (s, f)).collect();
        for (i, (_, f)) in filters.iter().enumerate() {
            f.validate()
                .map_err(|source| GridError::Model { filter: i, source })?;
        }
        // Names numbered; filters per name, per pair of rarest names, per `name = value`.
        let mut names = Names::default();
        let mut name_freq: Vec<u32> = Vec::new();
        let mut filter_names: Vec<Vec<u32>> = Vec::with_capacity(n);
        let mut eq_freq: FastMap<(u32, &str), u32> = FastMap::default();
        for (_, f) in &filters {
            let mut ids: Vec<u32> = f
                .constraints
                .iter()
                .map(|c| names.intern(&c.name))
                .collect();
            for (c, &id) in f.constraints.iter().zip(&ids) {
                if let (Op::Eq, Value::Str(v)) = (c.op, &c.value) {
                    *eq_freq.entry((id, v.as_str())).or_default() += 1;
                }
            }
            ids.sort_unstable();
            ids.dedup();
            for &id in &ids {
                if id as usize >= name_freq.len() {
                    name_freq.resize(id as usize + 1, 0);
                }
                name_freq[id as usize] += 1;
            }
            filter_names.push(ids);
        }
        for ids in &mut filter_names {
            ids.sort_unstable_by_key(|&id| (name_freq[id as usize], id));
        }
        let pair_of = |ids: &[u32]| pair(ids[0], *ids.get(1).unwrap_or(&ids[0]));
        let mut pair_freq: FastMap<u64, u32> = FastMap::default();
        for ids in filter_names.iter().filter(|ids| !ids.is_empty()) {
            *pair_freq.entry(pair_of(ids)).or_default() += 1;
        }
        // Each filter's key: the rarer of its rarest `name = value` and its name pair.
        let mut numbered: FastMap<RawKey, u32> = FastMap::default();
        let mut ix = GridIndex {
            geo: Geometry::of(&[]),
            cells: Vec::new(),
            names: Names::default(),
            eq_keys: Vec::new(),
            pair_keys: FastMap::default(),
            in_pair: Vec::new(),
            empty_key: None,
            key: Vec::with_capacity(n),
            area: Vec::with_capacity(n),
            sub: Vec::with_capacity(n),
            sig: Vec::with_capacity(n),
            entry_id: Vec::with_capacity(n),
            tests: Tests::default(),
            ids: subs.as_slice().iter().map(|s| s.id).collect(),
        };
        let mut eq_keys: Vec<FastMap<Box<str>, u32>> = vec![FastMap::default(); names.len()];
        let mut in_pair = vec![false; names.len()];
        for (i, (s, f)) in filters.iter().enumerate() {
            let ids = &filter_names[i];
            let rarest_eq = f
                .constraints
                .iter()
                .filter_map(|c| match (c.op, &c.value) {
                    (Op::Eq, Value::Str(v)) => {
                        let id = names.get(&c.name).expect("numbered above");
                        Some((eq_freq[&(id, v.as_str())], id, v.as_str()))
                    }
                    _ => None,
                })
                .min();
            let raw = match rarest_eq {
                Some((freq, id, v)) if ids.is_empty() || freq <= pair_freq[&pair_of(ids)] => {
                    RawKey::Eq(id, v)
                }
                _ if ids.is_empty() => RawKey::Empty,
                _ => RawKey::Pair(pair_of(ids)),
            };
            let next = numbered.len() as u32;
            let k = *numbered.entry(raw).or_insert(next);
            if k == next {
                match raw {
                    RawKey::Empty => ix.empty_key = Some(k),
                    RawKey::Pair(p) => {
                        ix.pair_keys.insert(p, k);
                        in_pair[(p >> 32) as usize] = true;
                        in_pair[p as u32 as usize] = true;
                    }
                    RawKey::Eq(id, v) => {
                        eq_keys[id as usize].insert(v.into(), k);
                    }
                }
            }
            // Constraints cheapest to reject first: string equalities, then by rarity.
            let mut cs: Vec<&clcb::model::Constraint> = f.constraints.iter().collect();
            cs.sort_by_key(|c| {
                let id = names.get(&c.name).expect("numbered above");
                let eq = matches!((c.op, &c.value), (Op::Eq, Value::Str(_)));
                (!eq, name_freq[id as usize])
            });
            let cs: Vec<clcb::model::Constraint> = cs.into_iter().cloned().collect();
            ix.tests
                .push(&cs, &names)
                .map_err(|_| GridError::TooLarge)?;
            let implied = f.constraints.is_empty()
                || (f.constraints.len() == 1 && matches!(raw, RawKey::Eq(..)));
            ix.entry_id.push(entry_id_of(i as u32, implied));
            ix.key.push(k);
            ix.area.push(f.area);
            ix.sub.push(*s as u32);
            ix.sig
                .push(ids.iter().fold(Sig::default(), |g, &id| g.or(Sig::of(id))));
        }
        ix.names = names;
        ix.eq_keys = eq_keys;
        ix.in_pair = in_pair;
        // The cells: each filter in every cell its box touches, sorted by key.
        ix.geo = Geometry::of(&ix.area);
        let mut per_cell: Vec<Vec<(u32, Entry)>> = vec![Vec::new(); ix.geo.len()];
        for (f, a) in ix.area.iter().enumerate() {
            for c in ix.geo.cells_of(a) {
                per_cell[c].push((ix.key[f], Entry::new(ix.entry_id[f], a, ix.sig[f])));
            }
        }
        ix.cells = per_cell
            .into_iter()
            .map(|mut items| {
                items.sort_by_key(order);
                Cell::from_sorted(&items)
            })
            .collect();
        Ok(ix)
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
        if scratch.slot.len() != self.names.len() || scratch.matched.len() != self.ids.len() {
            *scratch = self.scratch();
        }
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
        if !self.pair_keys.is_empty() {
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
        let esig = ids.iter().fold(Sig::default(), |g, &id| g.or(Sig::of(id)));
        let cell = &self.cells[self.geo.cell_of(e.loc)];
        let p = e.loc;
        // Pass 1, over the cell's lists: the filters whose circle holds the event and
        // whose names it has. Pass 2: their scattered constraints and subscriptions,
        // fetched ahead so that the cache misses overlap, then evaluated.
        cand.clear();
        let mut visit = |en: &Entry| {
            if en.holds(p) && en.sig.within(esig) {
                cand.push(en.filter);
            }
        };
        for &k in keys.iter() {
            cell.group(k).iter().for_each(&mut visit);
            if !cell.extra.is_empty() {
                cell.extra_group(k).iter().for_each(|(_, en)| visit(en));
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
            if !implied && !self.tests.satisfies(f, attrs, slot) {
                continue;
            }
            let s = self.sub[f];
            if !matched[s as usize] {
                matched[s as usize] = true;
                list.push(s);
            }
        }
        for &id in ids.iter() {
            slot[id as usize] = 0;
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
    use clcb::model::{Constraint, FilterId, Subscription};

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
