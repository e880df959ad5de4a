//! YFilter-like shared NFA (Diao, Altinel, Franklin, Zhang, Fischer: "Path sharing and
//! predicate evaluation for high-performance XML filtering", TODS 2003): the CPU peer of
//! the XML twig paper (Absalyamov et al., §5), and its correctness oracle.
//!
//! **Path matching (TODS §3).** Every root-to-node path of every twig is inserted into one
//! NFA with prefix sharing: a `/t` step is a transition on `t` (or on `*`), a `//t` step
//! an ε-transition into a `//`-state with a self-loop on every tag, followed by the `t`
//! transition. At run time a stack of active state sets is driven by the document's
//! events: an open event computes the next set from the top set (following tag, `*` and
//! self-loop transitions, plus ε-closure), a close event pops it. Each state lists the
//! query nodes whose path ends there, so an active state at element `e` says "the path
//! from the root to this query node matches with the node at `e`".
//!
//! **Twig join (TODS §4, "nested paths").** YFilter decomposes a twig into paths and
//! joins the path matches at the branching nodes. We join bottom-up at element close,
//! which yields exactly the holistic answer (the whole twig embeds): when element `e`
//! closes, a query node `n` active at `e` is *satisfied* at `e` iff every child `c` of
//! `n` was satisfied at a child of `e` (`/c`) or at a proper descendant of `e` (`//c`).
//! Descendant reports need O(1) state per query node: elements get preorder numbers and
//! `last_hit[c]` holds the number of the latest element at which `c` was satisfied; since
//! every element that closes while `e` is open lies in `e`'s subtree, `c` was satisfied
//! below `e` iff `last_hit[c] > number(e)`. Child reports are kept per open element.
//! A twig matches once its first step is satisfied; later events skip its nodes.
//!
//! Deviation from YFilter: tags are numbered by the queries' [`TagDict`](xml_twig::TagDict)
//! (tags no query names share id 0), and the document arrives as encoded events, so
//! parsing is not measured — as in the paper's §5, which excludes YFilter's parsing time.
//!
//! [`Yfilter::filter_batch`] is the paper's "pseudo-multicore YFilter" (§5.3): documents
//! split across all cores (rayon), each core running the same single NFA.

use rayon::prelude::*;
use xml_twig::model::{Axis, Document, Matches, ProfileSet};

/// "No state" in a transition field.
pub(crate) const NONE: u32 = u32::MAX;

/// One NFA state (the lazy DFA of [`crate::lazy_dfa`] reads them to build its states).
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    /// Transitions on named tags, sorted by tag for binary search.
    pub(crate) on_tag: Vec<(u16, u32)>,
    /// Transition on `*`.
    pub(crate) on_any: u32,
    /// ε-transition into this state's `//`-state.
    pub(crate) eps: u32,
    /// True for a `//`-state: a self-loop on every tag.
    pub(crate) self_loop: bool,
    /// Query nodes whose root-to-node path ends here: index into `Yfilter::nodes`.
    pub(crate) nodes: Vec<u32>,
}

/// A query node, flattened over all twigs.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub(crate) query: u32,
    /// Children: indexes into `Yfilter::nodes`.
    pub(crate) children: Vec<u32>,
    pub(crate) axis: Axis,
    /// True for the first step of a twig.
    pub(crate) is_top: bool,
}

/// The shared NFA of a query set plus the twig structure for the join.
#[derive(Clone, Debug)]
pub struct Yfilter {
    pub(crate) states: Vec<State>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) ids: Vec<u32>,
}

/// Per-thread run-time state: the stack of active state sets and the join's bookkeeping.
#[derive(Clone)]
pub struct Runtime {
    /// Active states, level after level; `frames[l]` is the end of level `l` in `active`.
    active: Vec<u32>,
    frames: Vec<usize>,
    /// `seen[s] == stamp` iff state `s` is already in the set being built.
    seen: Vec<u32>,
    stamp: u32,
    /// Preorder number of each open element, level after level.
    number: Vec<u32>,
    /// Child reports: query nodes satisfied at a child of each open element.
    child_hits: Vec<u32>,
    child_frames: Vec<usize>,
    mark: Vec<u32>,
    last_hit: Vec<u32>,
    matched: Vec<bool>,
}

impl Yfilter {
    /// Builds the shared NFA of all root-to-node paths of `profiles`.
    ///
    /// ```
    /// use baselines::yfilter::Yfilter;
    /// use xml_twig::{io, ProfileSet};
    /// # fn main() -> Result<(), xml_twig::XmlError> {
    /// let set = io::parse_query_file("q.txt", "/a[b]//c\n//d\n/a/*/c\n")?;
    /// let profiles = ProfileSet::compile(&set)?;
    /// let yfilter = Yfilter::new(&profiles);
    /// let doc = io::parse_document("d.xml", b"<a><b/><x><c/></x></a>", &profiles.dict)?;
    /// assert_eq!(yfilter.filter(&doc), vec![0, 2]);
    /// # Ok(()) }
    /// ```
    pub fn new(profiles: &ProfileSet) -> Self {
        let mut y = Yfilter {
            states: vec![State {
                on_any: NONE,
                eps: NONE,
                ..State::default()
            }],
            nodes: Vec::new(),
            ids: profiles.ids.clone(),
        };
        for (qi, twig) in profiles.twigs.iter().enumerate() {
            let base = y.nodes.len() as u32;
            let mut state_of = vec![0u32; twig.nodes.len()];
            for (i, n) in twig.nodes.iter().enumerate() {
                let from = n.parent.map_or(0, |p| state_of[p as usize]);
                let mid = match n.axis {
                    Axis::Child => from,
                    Axis::Descendant => y.eps_state(from),
                };
                let to = y.step(mid, n.tag);
                state_of[i] = to;
                y.states[to as usize].nodes.push(base + i as u32);
                y.nodes.push(Node {
                    query: qi as u32,
                    children: n.children.iter().map(|&c| base + c).collect(),
                    axis: n.axis,
                    is_top: n.parent.is_none(),
                });
            }
        }
        for s in &mut y.states {
            s.on_tag.sort_unstable();
        }
        y
    }

    fn new_state(&mut self, self_loop: bool) -> u32 {
        self.states.push(State {
            on_any: NONE,
            eps: NONE,
            self_loop,
            ..State::default()
        });
        self.states.len() as u32 - 1
    }

    fn eps_state(&mut self, from: u32) -> u32 {
        if self.states[from as usize].eps == NONE {
            let s = self.new_state(true);
            self.states[from as usize].eps = s;
        }
        self.states[from as usize].eps
    }

    fn step(&mut self, from: u32, tag: Option<u16>) -> u32 {
        match tag {
            None => {
                if self.states[from as usize].on_any == NONE {
                    let s = self.new_state(false);
                    self.states[from as usize].on_any = s;
                }
                self.states[from as usize].on_any
            }
            Some(t) => {
                if let Some(&(_, s)) = self.states[from as usize]
                    .on_tag
                    .iter()
                    .find(|(x, _)| *x == t)
                {
                    return s;
                }
                let s = self.new_state(false);
                self.states[from as usize].on_tag.push((t, s));
                s
            }
        }
    }

    /// Number of NFA states (grows with `*` and `//` probability, §5.2).
    pub fn num_states(&self) -> usize {
        self.states.len()
    }

    /// Fresh run-time state for one thread.
    pub fn runtime(&self) -> Runtime {
        Runtime {
            active: Vec::new(),
            frames: Vec::new(),
            seen: vec![0; self.states.len()],
            stamp: 0,
            number: Vec::new(),
            child_hits: Vec::new(),
            child_frames: Vec::new(),
            mark: vec![0; self.nodes.len()],
            last_hit: vec![0; self.nodes.len()],
            matched: vec![false; self.ids.len()],
        }
    }

    #[inline]
    fn add(&self, rt: &mut Runtime, s: u32) {
        if rt.seen[s as usize] != rt.stamp {
            rt.seen[s as usize] = rt.stamp;
            rt.active.push(s);
        }
        let e = self.states[s as usize].eps;
        if e != NONE && rt.seen[e as usize] != rt.stamp {
            rt.seen[e as usize] = rt.stamp;
            rt.active.push(e);
        }
    }

    fn next_stamp(rt: &mut Runtime) {
        rt.stamp = rt.stamp.wrapping_add(1);
        if rt.stamp == 0 {
            rt.seen.iter_mut().for_each(|x| *x = 0);
            rt.stamp = 1;
        }
    }

    /// Filters one document with a reusable runtime; query ids ascending.
    pub fn filter_with(&self, rt: &mut Runtime, doc: &Document) -> Matches {
        rt.active.clear();
        rt.frames.clear();
        rt.number.clear();
        rt.child_hits.clear();
        rt.child_frames.clear();
        rt.mark.iter_mut().for_each(|x| *x = 0);
        rt.last_hit.iter_mut().for_each(|x| *x = 0);
        rt.matched.iter_mut().for_each(|x| *x = false);
        // Level 0: the document node, with the start state and its ε-closure active.
        Self::next_stamp(rt);
        self.add(rt, 0);
        rt.frames.push(rt.active.len());
        rt.number.push(0);
        rt.child_frames.push(0);
        let mut counter = 0u32;
        for ev in &doc.events {
            if ev.is_open() {
                let tag = ev.tag();
                counter += 1;
                Self::next_stamp(rt);
                let lo = if rt.frames.len() >= 2 {
                    rt.frames[rt.frames.len() - 2]
                } else {
                    0
                };
                let hi = rt.frames[rt.frames.len() - 1];
                for i in lo..hi {
                    let s = rt.active[i];
                    let st = &self.states[s as usize];
                    if st.self_loop {
                        self.add(rt, s);
                    }
                    if let Ok(k) = st.on_tag.binary_search_by_key(&tag, |&(t, _)| t) {
                        self.add(rt, st.on_tag[k].1);
                    }
                    if st.on_any != NONE {
                        self.add(rt, st.on_any);
                    }
                }
                rt.frames.push(rt.active.len());
                rt.number.push(counter);
                rt.child_frames.push(rt.child_hits.len());
            } else {
                self.close(rt);
            }
        }
        let mut out: Matches = rt
            .matched
            .iter()
            .zip(&self.ids)
            .filter(|(m, _)| **m)
            .map(|(_, &id)| id)
            .collect();
        out.sort_unstable();
        out
    }

    /// Close of the element on top: join the twig nodes active there, then pop.
    fn close(&self, rt: &mut Runtime) {
        let top = rt.frames.len() - 1;
        if top == 0 {
            return; // unbalanced close: ignore (documents are checked when parsed)
        }
        let lo = rt.frames[top - 1];
        let hi = rt.frames[top];
        let me = rt.number[top];
        let ch_lo = rt.child_frames[top];
        for i in ch_lo..rt.child_hits.len() {
            let c = rt.child_hits[i];
            rt.mark[c as usize] = me;
        }
        rt.child_hits.truncate(ch_lo);
        for i in lo..hi {
            let s = rt.active[i];
            for &n in &self.states[s as usize].nodes {
                let node = &self.nodes[n as usize];
                if rt.matched[node.query as usize] {
                    continue;
                }
                let ok = node
                    .children
                    .iter()
                    .all(|&c| match self.nodes[c as usize].axis {
                        Axis::Child => rt.mark[c as usize] == me,
                        Axis::Descendant => rt.last_hit[c as usize] > me,
                    });
                if !ok {
                    continue;
                }
                if node.is_top {
                    rt.matched[node.query as usize] = true;
                } else {
                    match node.axis {
                        Axis::Child => rt.child_hits.push(n),
                        Axis::Descendant => rt.last_hit[n as usize] = me,
                    }
                }
            }
        }
        rt.active.truncate(lo);
        rt.frames.pop();
        rt.number.pop();
        rt.child_frames.pop();
    }

    /// Filters one document (single-threaded YFilter).
    pub fn filter(&self, doc: &Document) -> Matches {
        self.filter_with(&mut self.runtime(), doc)
    }

    /// Filters a batch of documents on the current rayon pool, one runtime per worker
    /// (the paper's "pseudo-multicore YFilter", §5.3).
    pub fn filter_batch(&self, docs: &[Document]) -> Vec<Matches> {
        docs.par_iter()
            .map_init(|| self.runtime(), |rt, d| self.filter_with(rt, d))
            .collect()
    }

    /// [`Self::filter_batch`] on a pool of `threads` workers.
    pub fn filter_batch_threads(
        &self,
        docs: &[Document],
        threads: usize,
    ) -> Result<Vec<Matches>, rayon::ThreadPoolBuildError> {
        on_threads(threads, || self.filter_batch(docs))
    }
}

/// Runs `f` on a fresh rayon pool of `threads` workers (at least one): the XML filters'
/// `filter_batch_threads`.
pub(crate) fn on_threads<T: Send>(
    threads: usize,
    f: impl FnOnce() -> T + Send,
) -> Result<T, rayon::ThreadPoolBuildError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()?;
    Ok(pool.install(f))
}
