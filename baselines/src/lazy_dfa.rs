//! A lazy DFA with a memoized twig join: the strongest CPU XML filter of this project,
//! the yardstick the GPU engines of the twig paper (Absalyamov et al.) are measured
//! against.
//!
//! **Path automaton: the lazy DFA of XMLTK** (Green, Gupta, Miklau, Onizuka & Suciu,
//! "Processing XML streams with deterministic automata and stream indexes", TODS 2004).
//! The NFA of all root-to-node query paths is [`Yfilter`]'s (prefix-shared, `//` as a
//! self-looping state). A DFA state is a *set* of NFA states; it is created only when
//! the document first reaches it, interned in a hash table, and its transitions are
//! filled in on demand in a dense table indexed by tag id. Once warm, an open event is
//! one table load, whatever the number of queries — the TODS paper's observation that
//! the lazy DFA's states stay few on real documents (they are bounded by the
//! document's distinct paths, not by the queries).
//!
//! **Twig join: memoized like XPush's bottom-up states** (Gupta & Suciu, "Stream
//! processing of XPath queries with predicates", SIGMOD 2003). The join itself is
//! [`Yfilter`]'s, restated over sets: when element `e` closes, a query node `n` active
//! at `e` is satisfied iff every child `c` of `n` was satisfied at a child of `e` (`/c`:
//! `c` is in the set `C(e)` of child reports) or at a proper descendant (`//c`: `c` is in
//! `D(e)`, the descendant reports of `e`'s subtree). XPush makes predicate evaluation
//! deterministic by building, lazily, the bottom-up automaton whose states are such
//! sets; we do the same: `C` and `D` are interned sets (ids), and the whole close step
//! — which active nodes are satisfied, the child reports it adds to the parent, the
//! descendant reports it passes up, the queries it matches — is one memoized function
//! of `(parent's DFA state, e's DFA state, C(e), D(e))`. A warm close is one hash
//! lookup plus, where the parent's sets grow, one memoized union: the per-element work
//! no longer touches every matched query node, which is what makes the NFA (and XMLTK's
//! DFA with a per-node join) slow on twigs with thousands of active nodes.
//!
//! `D` is kept small and repetitive (so the memo hits): a descendant report `c` is passed
//! to the parent `p` only if the `//`-state under `c`'s parent query node is in `p`'s DFA
//! state, which is exactly when `c`'s parent node is active at `p` or above it; other
//! reports can never be used again.
//!
//! **Where it departs.** XMLTK filters linear paths; XPush compiles value predicates
//! (`[a = 3]`) into an alternating automaton built eagerly over a training set. Here the
//! predicates are structural (nested twigs, `*`, `//`, as in the twig paper's Fig. 1),
//! the bottom-up states are sets of satisfied query nodes rather than of atomic
//! predicates, and the memo is keyed by the parent's top-down state (XPush's pushdown
//! pairs). Queries already matched in the document are not skipped inside the memo (a
//! memo entry is shared by all documents); instead, each entry's list of matched queries
//! is applied at most once per document.
//!
//! **Bounded memory.** Each [`Cache`] counts the bytes of its states, sets and memo
//! entries. When a document pushes it past the budget ([`LazyDfa::with_budget`],
//! [`DEFAULT_BUDGET`] by default), the document is filtered again from the start by the
//! NFA ([`Yfilter`], the same answers; the fallback XMLTK's paper leaves open) and the
//! cache is flushed, so memory stays bounded whatever the queries and documents, and a
//! later document starts a fresh cache. [`CacheStats`] counts flushes and fallbacks.
//!
//! **Threads.** The automaton is built per thread: [`LazyDfa`] keeps a pool of caches,
//! and [`LazyDfa::filter_batch`] filters documents in parallel (rayon), each worker
//! taking a cache from the pool and returning it, so caches stay warm across calls.
//!
//! Like the NFA, the filter reads encoded events: parsing is not measured (the twig
//! paper's §5 excludes YFilter's parsing time).

use crate::yfilter::{Yfilter, NONE};
use rayon::prelude::*;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;
use xml_twig::model::{Axis, Document, Matches, ProfileSet};

/// Default cache budget per thread: 256 MiB.
pub const DEFAULT_BUDGET: usize = 256 << 20;

/// Id of the empty set in every [`SetTable`].
const EMPTY: u32 = 0;

/// A multiply-rotate hasher (FxHash's): the memo's keys are small integers.
#[derive(Default, Clone, Copy)]
struct Fx(u64);

impl Fx {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
}

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

/// Interned sorted sets of `u32`: equal sets get equal ids; id [`EMPTY`] is `{}`.
#[derive(Clone, Debug)]
struct SetTable {
    data: Vec<u32>,
    /// `(start, len)` of each set in `data`.
    spans: Vec<(u32, u32)>,
    /// Hash of a set's items -> the latest set with that hash; `next` chains the others.
    index: FxMap<u64, u32>,
    next: Vec<u32>,
}

impl SetTable {
    fn new() -> Self {
        let mut t = SetTable {
            data: Vec::new(),
            spans: Vec::new(),
            index: FxMap::default(),
            next: Vec::new(),
        };
        t.intern(&[]);
        t
    }

    #[inline]
    fn get(&self, id: u32) -> &[u32] {
        let (s, n) = self.spans[id as usize];
        &self.data[s as usize..(s + n) as usize]
    }

    fn hash(items: &[u32]) -> u64 {
        let mut h = Fx(items.len() as u64);
        for &x in items {
            h.add(u64::from(x));
        }
        h.0
    }

    /// The id of `items` (sorted, no duplicates) and whether it is new.
    fn intern(&mut self, items: &[u32]) -> (u32, bool) {
        let h = Self::hash(items);
        let mut at = self.index.get(&h).copied().unwrap_or(NONE);
        let head = at;
        while at != NONE {
            if self.get(at) == items {
                return (at, false);
            }
            at = self.next[at as usize];
        }
        let id = self.spans.len() as u32;
        self.spans
            .push((self.data.len() as u32, items.len() as u32));
        self.data.extend_from_slice(items);
        self.next.push(head);
        self.index.insert(h, id);
        (id, true)
    }

    fn len(&self) -> usize {
        self.spans.len()
    }

    fn bytes(&self) -> usize {
        self.data.len() * 4 + self.spans.len() * (8 + 4 + 24)
    }
}

/// One memoized close step.
#[derive(Clone, Copy, Debug)]
struct Close {
    /// Child reports for the parent: satisfied `/` nodes (a set id).
    child: u32,
    /// Descendant reports for the parent: `D(e)` plus the satisfied `//` nodes, kept
    /// where the parent can use them (a set id).
    desc: u32,
    /// Queries matched: `(start, len)` in `Cache::matched_lists`.
    matched: (u32, u32),
}

/// One open element: its DFA state and its child and descendant reports so far.
#[derive(Clone, Copy, Debug)]
struct Frame {
    state: u32,
    child: u32,
    desc: u32,
}

/// Counters of a cache (summed over a [`LazyDfa`]'s caches by [`LazyDfa::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// DFA states built (sets of NFA states).
    pub dfa_states: usize,
    /// Memoized close steps.
    pub closes: usize,
    /// Interned sets of query nodes (child and descendant reports).
    pub node_sets: usize,
    /// Bytes the caches hold now.
    pub bytes: usize,
    /// Times a cache went past its budget and was flushed.
    pub flushes: usize,
    /// Documents filtered by the NFA because the cache went past its budget.
    pub nfa_fallbacks: usize,
}

/// The lazily built automaton of one thread: DFA states, their transitions, the
/// interned report sets and the memoized close steps, plus per-document scratch.
/// A clone is an independent copy (a trained cache handed to several threads).
#[derive(Clone)]
pub struct Cache {
    /// DFA state id -> its NFA states.
    dfa: SetTable,
    /// `trans[state * tags + tag]`: next DFA state, [`NONE`] until first needed.
    trans: Vec<u32>,
    /// DFA state -> `(start, len)` in `active_nodes`: the query nodes active there.
    active: Vec<(u32, u32)>,
    active_nodes: Vec<u32>,
    /// Report sets (of query nodes).
    sets: SetTable,
    /// `(a, b)` with `a < b` -> the id of their union.
    unions: FxMap<u64, u32>,
    /// `(parent state, state, C, D)` -> index into `closes`.
    memo: FxMap<(u64, u64), u32>,
    closes: Vec<Close>,
    matched_lists: Vec<u32>,
    /// Per close entry: the document stamp it last matched queries in.
    applied: Vec<u32>,
    // Scratch.
    nfa_mark: Vec<u32>,
    node_mark: Vec<u32>,
    stamp: u32,
    buf: Vec<u32>,
    buf2: Vec<u32>,
    frames: Vec<Frame>,
    /// Per query: the document stamp it matched in.
    matched: Vec<u32>,
    doc: u32,
    nfa_runtime: Option<crate::yfilter::Runtime>,
    flushes: usize,
    nfa_fallbacks: usize,
    /// Set by every memo miss: the budget is checked only then.
    grew: bool,
}

impl Cache {
    fn new(f: &LazyDfa) -> Self {
        let mut c = Cache {
            dfa: SetTable::new(),
            trans: Vec::new(),
            active: Vec::new(),
            active_nodes: Vec::new(),
            sets: SetTable::new(),
            unions: FxMap::default(),
            memo: FxMap::default(),
            closes: Vec::new(),
            matched_lists: Vec::new(),
            applied: Vec::new(),
            nfa_mark: vec![0; f.nfa.states.len()],
            node_mark: vec![0; f.nfa.nodes.len()],
            stamp: 0,
            buf: Vec::new(),
            buf2: Vec::new(),
            frames: Vec::new(),
            matched: vec![0; f.nfa.ids.len()],
            doc: 0,
            nfa_runtime: None,
            flushes: 0,
            nfa_fallbacks: 0,
            grew: false,
        };
        c.reset(f);
        c
    }

    /// Empties the automaton: only the empty DFA state 0 and the start state 1 remain.
    fn reset(&mut self, f: &LazyDfa) {
        self.dfa = SetTable::new();
        self.trans.clear();
        self.active.clear();
        self.active_nodes.clear();
        self.sets = SetTable::new();
        self.unions = FxMap::default();
        self.memo = FxMap::default();
        self.closes.clear();
        self.matched_lists.clear();
        self.applied.clear();
        // DFA state 0 is the empty set (no NFA state; the table interns it at
        // creation): its row is filled like any other.
        self.trans.extend(std::iter::repeat_n(NONE, f.tags));
        self.active.push((0, 0));
        let start = f.start.clone();
        let (id, _) = self.add_dfa_state(f, &start);
        debug_assert_eq!(id, START);
    }

    /// Bytes held by the automaton and the memo.
    pub fn bytes(&self) -> usize {
        self.dfa.bytes()
            + self.trans.len() * 4
            + self.active_nodes.len() * 4
            + self.active.len() * 8
            + self.sets.bytes()
            + self.unions.len() * 16
            + self.memo.len() * 24
            + self.closes.len() * (16 + 4)
            + self.matched_lists.len() * 4
    }

    /// This cache's counters.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            dfa_states: self.dfa.len(),
            closes: self.closes.len(),
            node_sets: self.sets.len(),
            bytes: self.bytes(),
            flushes: self.flushes,
            nfa_fallbacks: self.nfa_fallbacks,
        }
    }

    fn next_stamp(&mut self) -> u32 {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.nfa_mark.iter_mut().for_each(|x| *x = 0);
            self.node_mark.iter_mut().for_each(|x| *x = 0);
            self.stamp = 1;
        }
        self.stamp
    }

    /// Interns the DFA state of NFA states `set` (sorted); a new one gets an empty
    /// transition row and its list of active query nodes.
    fn add_dfa_state(&mut self, f: &LazyDfa, set: &[u32]) -> (u32, bool) {
        let (id, new) = self.dfa.intern(set);
        self.grew = true;
        if new {
            self.trans.extend(std::iter::repeat_n(NONE, f.tags));
            let start = self.active_nodes.len() as u32;
            for &s in set {
                self.active_nodes
                    .extend_from_slice(&f.nfa.states[s as usize].nodes);
            }
            let len = self.active_nodes.len() as u32 - start;
            self.active.push((start, len));
        }
        (id, new)
    }

    /// Builds the transition of DFA state `from` on `tag` (XMLTK's lazy step).
    #[cold]
    fn build_transition(&mut self, f: &LazyDfa, from: u32, tag: u16) -> u32 {
        let stamp = self.next_stamp();
        let mut next = std::mem::take(&mut self.buf);
        next.clear();
        let add = |s: u32, mark: &mut Vec<u32>, next: &mut Vec<u32>| {
            for x in [s, f.nfa.states[s as usize].eps] {
                if x != NONE && mark[x as usize] != stamp {
                    mark[x as usize] = stamp;
                    next.push(x);
                }
            }
        };
        for &s in self.dfa.get(from) {
            let st = &f.nfa.states[s as usize];
            if st.self_loop {
                add(s, &mut self.nfa_mark, &mut next);
            }
            if let Ok(k) = st.on_tag.binary_search_by_key(&tag, |&(t, _)| t) {
                add(st.on_tag[k].1, &mut self.nfa_mark, &mut next);
            }
            if st.on_any != NONE {
                add(st.on_any, &mut self.nfa_mark, &mut next);
            }
        }
        next.sort_unstable();
        let (to, _) = self.add_dfa_state(f, &next);
        self.buf = next;
        self.trans[from as usize * f.tags + tag as usize] = to;
        to
    }

    /// The union of report sets `a` and `b`, memoized.
    #[inline]
    fn union(&mut self, a: u32, b: u32) -> u32 {
        if a == b || b == EMPTY {
            return a;
        }
        if a == EMPTY {
            return b;
        }
        let key = (u64::from(a.min(b)) << 32) | u64::from(a.max(b));
        if let Some(&u) = self.unions.get(&key) {
            return u;
        }
        self.build_union(key, a, b)
    }

    #[cold]
    fn build_union(&mut self, key: u64, a: u32, b: u32) -> u32 {
        let mut out = std::mem::take(&mut self.buf);
        out.clear();
        let (x, y) = (self.sets.get(a), self.sets.get(b));
        let (mut i, mut j) = (0, 0);
        while i < x.len() && j < y.len() {
            match x[i].cmp(&y[j]) {
                std::cmp::Ordering::Less => {
                    out.push(x[i]);
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    out.push(y[j]);
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    out.push(x[i]);
                    i += 1;
                    j += 1;
                }
            }
        }
        out.extend_from_slice(&x[i..]);
        out.extend_from_slice(&y[j..]);
        let (u, _) = self.sets.intern(&out);
        self.grew = true;
        self.buf = out;
        self.unions.insert(key, u);
        u
    }

    /// Computes the close step of an element in DFA state `state` with reports
    /// `child` and `desc`, under a parent in DFA state `parent` (a memo miss).
    #[cold]
    fn build_close(
        &mut self,
        f: &LazyDfa,
        key: (u64, u64),
        parent: u32,
        state: u32,
        child: u32,
        desc: u32,
    ) -> u32 {
        let stamp = self.next_stamp();
        // Mark the nodes satisfied below: `/` nodes at a child, `//` nodes at a
        // proper descendant (a node has one axis, so one mark serves both sets).
        for &c in self.sets.get(child) {
            self.node_mark[c as usize] = stamp;
        }
        for &c in self.sets.get(desc) {
            self.node_mark[c as usize] = stamp;
        }
        // NFA states of the parent: which `//` reports it can still use.
        for &s in self.dfa.get(parent) {
            self.nfa_mark[s as usize] = stamp;
        }
        let mut child_out = std::mem::take(&mut self.buf);
        let mut desc_out = std::mem::take(&mut self.buf2);
        child_out.clear();
        desc_out.clear();
        let matched_start = self.matched_lists.len() as u32;
        let (a, n) = self.active[state as usize];
        for &node in &self.active_nodes[a as usize..(a + n) as usize] {
            let (cs, cn) = f.children[node as usize];
            let ok = f.child_list[cs as usize..(cs + cn) as usize]
                .iter()
                .all(|&c| self.node_mark[c as usize] == stamp);
            if !ok {
                continue;
            }
            let info = &f.nfa.nodes[node as usize];
            if info.is_top {
                self.matched_lists.push(info.query);
            } else {
                match info.axis {
                    Axis::Child => child_out.push(node),
                    Axis::Descendant => desc_out.push(node),
                }
            }
        }
        desc_out.extend_from_slice(self.sets.get(desc));
        desc_out.retain(|&c| {
            let s = f.desc_state[c as usize];
            s != NONE && self.nfa_mark[s as usize] == stamp
        });
        child_out.sort_unstable();
        child_out.dedup();
        desc_out.sort_unstable();
        desc_out.dedup();
        let (child_id, _) = self.sets.intern(&child_out);
        let (desc_id, _) = self.sets.intern(&desc_out);
        self.buf = child_out;
        self.buf2 = desc_out;
        let id = self.closes.len() as u32;
        self.closes.push(Close {
            child: child_id,
            desc: desc_id,
            matched: (
                matched_start,
                self.matched_lists.len() as u32 - matched_start,
            ),
        });
        self.applied.push(0);
        self.memo.insert(key, id);
        self.grew = true;
        id
    }
}

/// The DFA state every document starts in (state 0 is the empty set).
const START: u32 = 1;

/// The lazy DFA filter of a query set (see the module docs), with a pool of per-thread
/// caches.
pub struct LazyDfa {
    nfa: Yfilter,
    /// Tag ids `0..tags` (the dictionary's, plus 0 for names no query uses).
    tags: usize,
    /// NFA states of the start DFA state (sorted).
    start: Vec<u32>,
    /// Per query node: `(start, len)` of its children in `child_list`.
    children: Vec<(u32, u32)>,
    child_list: Vec<u32>,
    /// Per `//` query node under another node: the `//`-state under its parent's
    /// NFA state ([`NONE`] for `/` nodes and first steps).
    desc_state: Vec<u32>,
    budget: usize,
    pool: Mutex<Vec<Cache>>,
}

impl LazyDfa {
    /// Compiles the NFA of `profiles`; the DFA is built while filtering.
    ///
    /// ```
    /// use baselines::lazy_dfa::LazyDfa;
    /// use xml_twig::{io, ProfileSet};
    /// # fn main() -> Result<(), xml_twig::XmlError> {
    /// let set = io::parse_query_file("q.txt", "/a[b]//c\n//d\n/a/*/c\n")?;
    /// let profiles = ProfileSet::compile(&set)?;
    /// let dfa = LazyDfa::new(&profiles);
    /// let doc = io::parse_document("d.xml", b"<a><b/><x><c/></x></a>", &profiles.dict)?;
    /// assert_eq!(dfa.filter(&doc), vec![0, 2]);
    /// # Ok(()) }
    /// ```
    pub fn new(profiles: &ProfileSet) -> Self {
        Self::with_budget(profiles, DEFAULT_BUDGET)
    }

    /// As [`Self::new`], with each thread's cache bounded by `budget` bytes.
    pub fn with_budget(profiles: &ProfileSet, budget: usize) -> Self {
        let nfa = Yfilter::new(profiles);
        let mut children = Vec::with_capacity(nfa.nodes.len());
        let mut child_list = Vec::new();
        let mut parent = vec![NONE; nfa.nodes.len()];
        for (i, n) in nfa.nodes.iter().enumerate() {
            children.push((child_list.len() as u32, n.children.len() as u32));
            child_list.extend_from_slice(&n.children);
            for &c in &n.children {
                parent[c as usize] = i as u32;
            }
        }
        let mut state_of = vec![NONE; nfa.nodes.len()];
        for (s, st) in nfa.states.iter().enumerate() {
            for &n in &st.nodes {
                state_of[n as usize] = s as u32;
            }
        }
        let desc_state = (0..nfa.nodes.len())
            .map(|n| {
                let p = parent[n];
                if p == NONE || nfa.nodes[n].axis != Axis::Descendant {
                    NONE
                } else {
                    nfa.states[state_of[p as usize] as usize].eps
                }
            })
            .collect();
        let mut start = vec![0u32];
        if nfa.states[0].eps != NONE {
            start.push(nfa.states[0].eps);
        }
        start.sort_unstable();
        LazyDfa {
            tags: profiles.dict.len() + 1,
            nfa,
            start,
            children,
            child_list,
            desc_state,
            budget,
            pool: Mutex::new(Vec::new()),
        }
    }

    /// A fresh, empty cache for one thread.
    pub fn cache(&self) -> Cache {
        Cache::new(self)
    }

    /// A cache trained on `docs` (filtered once, answers dropped): the steady state of a
    /// stream of similar documents, without having seen the ones to be filtered. Timing
    /// a cache warmed on the very documents it then filters would replay memoized
    /// answers, not filter.
    pub fn train(&self, docs: &[Document]) -> Cache {
        let mut cache = self.cache();
        for d in docs {
            self.filter_with(&mut cache, d);
        }
        cache
    }

    /// Replaces the pool with `copies` clones of `cache` (one per worker thread of the
    /// next [`Self::filter_batch`], so that every worker starts from it).
    pub fn fill_pool(&self, cache: &Cache, copies: usize) {
        let fresh: Vec<Cache> = (0..copies).map(|_| cache.clone()).collect();
        *self.pool.lock().unwrap_or_else(|e| e.into_inner()) = fresh;
    }

    /// The NFA the DFA is built from (and falls back to).
    pub fn nfa(&self) -> &Yfilter {
        &self.nfa
    }

    /// Filters one document with `cache`; query ids ascending.
    pub fn filter_with(&self, cache: &mut Cache, doc: &Document) -> Matches {
        if !self.run(cache, doc) {
            // Past the budget: the NFA answers this document, the cache starts afresh.
            let rt = cache.nfa_runtime.get_or_insert_with(|| self.nfa.runtime());
            let out = self.nfa.filter_with(rt, doc);
            cache.reset(self);
            cache.flushes += 1;
            cache.nfa_fallbacks += 1;
            return out;
        }
        let doc_stamp = cache.doc;
        let mut out: Matches = cache
            .matched
            .iter()
            .zip(&self.nfa.ids)
            .filter(|(m, _)| **m == doc_stamp)
            .map(|(_, &id)| id)
            .collect();
        out.sort_unstable();
        out
    }

    /// Runs the automaton over `doc`, marking matched queries with the document's
    /// stamp; false when the cache went past its budget.
    fn run(&self, c: &mut Cache, doc: &Document) -> bool {
        c.doc = c.doc.wrapping_add(1);
        if c.doc == 0 {
            c.matched.iter_mut().for_each(|x| *x = 0);
            c.applied.iter_mut().for_each(|x| *x = 0);
            c.doc = 1;
        }
        let doc_stamp = c.doc;
        let queries = self.nfa.ids.len();
        let mut found = 0usize;
        c.frames.clear();
        c.frames.push(Frame {
            state: START,
            child: EMPTY,
            desc: EMPTY,
        });
        let tags = self.tags;
        for ev in &doc.events {
            if ev.is_open() {
                let mut tag = ev.tag();
                if tag as usize >= tags {
                    tag = 0; // a name no query uses: only `*` and `//` see it
                }
                let from = c.frames.last().map_or(START, |f| f.state);
                let mut to = c.trans[from as usize * tags + tag as usize];
                if to == NONE {
                    to = c.build_transition(self, from, tag);
                }
                c.frames.push(Frame {
                    state: to,
                    child: EMPTY,
                    desc: EMPTY,
                });
            } else {
                if c.frames.len() < 2 {
                    continue; // unbalanced close: ignored (documents are checked when parsed)
                }
                let Some(f) = c.frames.pop() else { continue };
                let parent = c.frames.last().map_or(START, |p| p.state);
                let key = (
                    (u64::from(parent) << 32) | u64::from(f.state),
                    (u64::from(f.child) << 32) | u64::from(f.desc),
                );
                let id = match c.memo.get(&key) {
                    Some(&id) => id,
                    None => c.build_close(self, key, parent, f.state, f.child, f.desc),
                };
                let close = c.closes[id as usize];
                if close.child != EMPTY || close.desc != EMPTY {
                    let (pc, pd) = c
                        .frames
                        .last()
                        .map_or((EMPTY, EMPTY), |p| (p.child, p.desc));
                    let nc = c.union(pc, close.child);
                    let nd = c.union(pd, close.desc);
                    if let Some(p) = c.frames.last_mut() {
                        p.child = nc;
                        p.desc = nd;
                    }
                }
                let (ms, mn) = close.matched;
                if mn > 0 && c.applied[id as usize] != doc_stamp {
                    c.applied[id as usize] = doc_stamp;
                    for &q in &c.matched_lists[ms as usize..(ms + mn) as usize] {
                        if c.matched[q as usize] != doc_stamp {
                            c.matched[q as usize] = doc_stamp;
                            found += 1;
                        }
                    }
                    if found == queries {
                        break; // every query matched: the rest cannot change the answer
                    }
                }
            }
            if c.grew {
                c.grew = false;
                if c.bytes() > self.budget {
                    return false;
                }
            }
        }
        true
    }

    /// Filters one document on a cache from the pool (single-threaded).
    pub fn filter(&self, doc: &Document) -> Matches {
        let mut g = self.take();
        let out = self.filter_with(g.cache(), doc);
        drop(g);
        out
    }

    /// Filters a batch of documents on the current rayon pool, each worker on a cache
    /// from the pool (document-parallel, as the NFA's "pseudo-multicore" mode).
    pub fn filter_batch(&self, docs: &[Document]) -> Vec<Matches> {
        docs.par_iter()
            .map_init(|| self.take(), |g, d| self.filter_with(g.cache(), d))
            .collect()
    }

    /// [`Self::filter_batch`] on a pool of `threads` workers.
    pub fn filter_batch_threads(
        &self,
        docs: &[Document],
        threads: usize,
    ) -> Result<Vec<Matches>, rayon::ThreadPoolBuildError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .build()?;
        Ok(pool.install(|| self.filter_batch(docs)))
    }

    /// The counters of the pooled caches, summed.
    pub fn stats(&self) -> CacheStats {
        let pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        pool.iter().fold(CacheStats::default(), |a, c| {
            let s = c.stats();
            CacheStats {
                dfa_states: a.dfa_states + s.dfa_states,
                closes: a.closes + s.closes,
                node_sets: a.node_sets + s.node_sets,
                bytes: a.bytes + s.bytes,
                flushes: a.flushes + s.flushes,
                nfa_fallbacks: a.nfa_fallbacks + s.nfa_fallbacks,
            }
        })
    }

    /// A cache from the pool (or a new one), returned to the pool when dropped.
    fn take(&self) -> PooledCache<'_> {
        let cache = self
            .pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_else(|| self.cache());
        PooledCache {
            owner: self,
            cache: Some(cache),
        }
    }
}

/// A cache taken from a [`LazyDfa`]'s pool; goes back on drop.
struct PooledCache<'a> {
    owner: &'a LazyDfa,
    cache: Option<Cache>,
}

impl PooledCache<'_> {
    fn cache(&mut self) -> &mut Cache {
        self.cache.get_or_insert_with(|| self.owner.cache())
    }
}

impl Drop for PooledCache<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.cache.take() {
            self.owner
                .pool
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xml_twig::{brute, io, QuerySet};

    fn case(queries: &str, xml: &str) -> (ProfileSet, Document) {
        let set = io::parse_query_file("q.txt", queries).unwrap();
        let profiles = ProfileSet::compile(&set).unwrap();
        let doc = io::parse_document("d.xml", xml.as_bytes(), &profiles.dict).unwrap();
        (profiles, doc)
    }

    #[test]
    fn paper_figure_4_twig_needs_both_paths_under_one_split_node() {
        // /a//c[.//d]/e: both paths match, the twig does not.
        let (p, doc) = case(
            "/a//c[.//d]/e\n/a//c//d\n/a//c/e\n",
            "<a><c><d/></c><c><e/></c></a>",
        );
        let dfa = LazyDfa::new(&p);
        assert_eq!(dfa.filter(&doc), vec![1, 2]);
        assert_eq!(dfa.filter(&doc), brute::filter(&p, &doc));
    }

    #[test]
    fn warm_cache_gives_the_same_answers_and_builds_nothing_more() {
        let (p, doc) = case(
            "//a[b][.//c]\n/r/*/b\n//*[*]\n/r//c\n",
            "<r><a><b/><x><c/></x></a><a><b/></a><q/></r>",
        );
        let dfa = LazyDfa::new(&p);
        let mut cache = dfa.cache();
        let first = dfa.filter_with(&mut cache, &doc);
        let built = cache.stats();
        let again = dfa.filter_with(&mut cache, &doc);
        assert_eq!(first, again);
        assert_eq!(first, brute::filter(&p, &doc));
        assert_eq!(cache.stats(), built, "a warm run builds no state");
    }

    #[test]
    fn a_tiny_budget_falls_back_to_the_nfa_with_the_same_answers() {
        let set = QuerySet::from_queries(
            xml_twig::workload::QueryGenerator::new(
                xml_twig::workload::QueryParams::paper(10, 0.5),
                3,
            )
            .queries(64),
        );
        let p = ProfileSet::compile(&set).unwrap();
        let xml = xml_twig::workload::DblpGenerator::new(4).document(20_000);
        let doc = io::parse_document("d.xml", xml.as_bytes(), &p.dict).unwrap();
        let dfa = LazyDfa::with_budget(&p, 4096);
        let mut cache = dfa.cache();
        assert_eq!(dfa.filter_with(&mut cache, &doc), brute::filter(&p, &doc));
        let s = cache.stats();
        assert_eq!((s.flushes, s.nfa_fallbacks), (1, 1));
    }
}
