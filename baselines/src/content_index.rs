//! A modern CPU index for content-based matching, the strong yardstick of the CCM
//! experiments: it returns exactly the SFF-like matcher's answers
//! ([`crate::sff`]; property tests in `tests/content_index.rs`), faster.
//!
//! Idea. Today's boolean-expression indexes avoid touching most filters at all. OpIndex
//! (Zhang, Chan & Tan, "Efficient processing of boolean expressions" / "OpIndex", VLDB
//! 2014) files each filter under one *pivot* attribute of its own and, for an event,
//! visits only the partitions of the attributes the event has: a filter can match only an
//! event that has every attribute the filter constrains. BE-Tree (Sadoghi & Jacobsen,
//! SIGMOD 2011) partitions on attributes the same way before it partitions on values, and
//! the k-index (Whang et al., VLDB 2009) on the number of constraints. Here, written from
//! those ideas:
//!
//! 1. Names are numbered. Each filter is filed under the *pair* of its two rarest names
//!    (fewest filters constrain them; one name if it constrains only one): a partition
//!    key. An event visits the partitions of every pair of its own names (and of every
//!    single name), so it visits only filters whose two rarest names it has. This is
//!    OpIndex's pivot refined from one attribute to two; with Table 1's 3-5 of 100 names
//!    per event and per filter, an event visits about 15 partitions of a few dozen filters
//!    each instead of every constraint on its names.
//! 2. Within a partition, each filter carries a 128-bit signature of its names (bit
//!    `id mod 128`): a filter whose signature has a bit the event's lacks cannot match
//!    (exact when there are at most 128 names, as in Table 1). This replaces OpIndex's
//!    per-partition counting: one AND per filter, in partition order.
//! 3. The filters that pass are evaluated constraint by constraint against the event's
//!    values (found through a per-thread table from name number to attribute), with the
//!    typing rules of `ccm::model` and SFF's exact integer/float order
//!    ([`crate::sff::cmp_num`]): numbers `=` `!=` `<` `>` `<=` `>=`; strings `=` `!=`
//!    prefix, suffix, substring on the UTF-8 bytes; a constraint on an absent attribute,
//!    or on a value of the other type, is not satisfied.
//! 4. Per-interface pruning as in SFF: filters of an interface that already matched are
//!    skipped, and matching stops when every interface has matched.
//!
//! One event runs on one thread; [`crate::Matcher::match_parallel`] spreads the events over
//! the rayon pool it runs in (all cores by default), each thread with its own scratch.
//! Events are read from heap [`Event`]s or in place from a [`ccm::batch::EventBatch`]
//! ([`crate::Matcher::match_batch_parallel`]: the batch's names translated to the
//! index's numbering once, then no hashing per attribute), by one copy of the matching
//! logic.

use crate::compiled::{Attrs, BatchAttrs, FastMap, Matched, Names, Tests};
use crate::matcher::{BatchNames, ScratchPool};
use crate::Matcher;
use ccm::batch::EventBatch;
use ccm::model::{Event, InterfaceId, ModelError, Subscription};

/// Why the index cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("subscription {index}: {source}")]
    Model {
        index: usize,
        #[source]
        source: ModelError,
    },
    #[error("subscription {index}: more than {max} filters, constraints or string bytes in total", max = u32::MAX - 1)]
    TooLarge { index: usize },
    /// A hybrid index was given a content index of other subscriptions
    /// ([`crate::hybrid_index::HybridIndex::with_content`]).
    #[error("the content index given is not the one of these subscriptions")]
    NotTheContentIndex,
}

/// The names a filter or event has, one bit per name number mod 128.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(crate) struct Sig(pub(crate) u64, pub(crate) u64);

impl Sig {
    #[inline(always)]
    pub(crate) fn of(id: u32) -> Sig {
        let b = id % 128;
        if b < 64 {
            Sig(1 << b, 0)
        } else {
            Sig(0, 1 << (b - 64))
        }
    }
    #[inline(always)]
    pub(crate) fn or(self, o: Sig) -> Sig {
        Sig(self.0 | o.0, self.1 | o.1)
    }
    /// Whether every bit of `self` is in `of`.
    #[inline(always)]
    pub(crate) fn within(self, of: Sig) -> bool {
        (self.0 & !of.0) | (self.1 & !of.1) == 0
    }
}

/// The work of visiting a filter (its signature test) in [`ContentIndex::match_within`]'s
/// budget (about 1.5 ns on one core: units of half a nanosecond).
pub(crate) const VISIT_COST: u64 = 3;
/// The work of evaluating a filter's constraints, beyond its visit (about 10 ns).
pub(crate) const EVAL_COST: u64 = 20;

/// Filters [`ContentIndex::match_within`] scans between two checks of its budget (at
/// most about 10 µs of evaluations past it).
const BLOCK: usize = 1024;

/// The partition key of a pair of name numbers (`a <= b`).
#[inline(always)]
fn key(a: u32, b: u32) -> u64 {
    (a as u64) << 32 | b as u64
}

/// The index: filters grouped by partition, with their signatures, interfaces and
/// compiled constraints in partition order.
#[derive(Debug, Clone, Default)]
pub struct ContentIndex {
    names: Names,
    /// Partition key -> its filters, `start..end` in partition order.
    parts: FastMap<u64, (u32, u32)>,
    sig: Vec<Sig>,
    iface: Vec<u32>,
    /// The filters' constraints, in partition order.
    tests: Tests,
    /// Dense interface index -> user's id.
    interfaces: Vec<InterfaceId>,
    /// Its threads' scratch kept between calls on all cores.
    pool: ScratchPool<Scratch>,
}

/// Scratch memory of one matching thread.
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    /// Name number -> 1 + the event attribute's index (0: the event lacks the name).
    pub(crate) slot: Vec<u32>,
    pub(crate) ids: Vec<u32>,
    pub(crate) matched: Matched,
    /// The partitions an event visits (see [`ContentIndex::match_numbered`]).
    pub(crate) ranges: Vec<(u32, u32)>,
}

impl ContentIndex {
    /// Builds the index of `subs` (each subscription is one filter of its interface).
    pub fn build(subs: &[Subscription]) -> Result<ContentIndex, IndexError> {
        Self::build_ordered(subs).map(|(ix, _)| ix)
    }

    /// [`ContentIndex::build`], and the position of each subscription in the index's
    /// partition order (the numbering of its compiled filters, [`ContentIndex::tests`]).
    pub(crate) fn build_ordered(
        subs: &[Subscription],
    ) -> Result<(ContentIndex, Vec<u32>), IndexError> {
        crate::compiled::check(subs)?;
        let mut ix = ContentIndex::default();
        let (order, keys, filter_names) = Self::partitions(subs, &mut ix.names);
        let mut dense: FastMap<InterfaceId, u32> = FastMap::default();
        let mut position = vec![0u32; subs.len()];
        for (at, &f) in order.iter().enumerate() {
            position[f as usize] = at as u32;
            let f = f as usize;
            let s = &subs[f];
            let k = keys[f];
            let entry = ix.parts.entry(k).or_insert((at as u32, at as u32));
            entry.1 = at as u32 + 1;
            let next = ix.interfaces.len() as u32;
            let iface = *dense.entry(s.interface).or_insert_with(|| {
                ix.interfaces.push(s.interface);
                next
            });
            ix.iface.push(iface);
            ix.sig.push(
                filter_names[f]
                    .iter()
                    .fold(Sig::default(), |g, &id| g.or(Sig::of(id))),
            );
            ix.tests
                .push(&s.filter.constraints, &ix.names)
                .map_err(|_| IndexError::TooLarge { index: f })?;
        }
        Ok((ix, position))
    }

    /// The position of each of `subs` in the partition order of the index built from
    /// them (as [`ContentIndex::build_ordered`] returns it), without building it.
    pub(crate) fn positions(subs: &[Subscription]) -> Vec<u32> {
        let (order, _, _) = Self::partitions(subs, &mut Names::default());
        let mut position = vec![0u32; subs.len()];
        for (at, &f) in order.iter().enumerate() {
            position[f as usize] = at as u32;
        }
        position
    }

    /// Numbers the names of `subs` in `names` and orders the filters by partition: the
    /// order (filters by index in `subs`), each filter's partition key and its names
    /// (distinct, rarest first).
    fn partitions(subs: &[Subscription], names: &mut Names) -> (Vec<u32>, Vec<u64>, Vec<Vec<u32>>) {
        // Pass 1: number the names, count the filters per name.
        let mut filter_names: Vec<Vec<u32>> = Vec::with_capacity(subs.len());
        let mut freq: Vec<u32> = Vec::new();
        for s in subs {
            let mut ids: Vec<u32> = s
                .filter
                .constraints
                .iter()
                .map(|c| names.intern(c.name.as_str()))
                .collect();
            ids.sort_unstable();
            ids.dedup();
            for &id in &ids {
                if id as usize >= freq.len() {
                    freq.resize(id as usize + 1, 0);
                }
                freq[id as usize] += 1;
            }
            filter_names.push(ids);
        }
        // Pass 2: each filter's partition key (its two rarest names), then the filters
        // in key order.
        let keys: Vec<u64> = filter_names
            .iter_mut()
            .map(|ids| {
                ids.sort_unstable_by_key(|&id| (freq[id as usize], id));
                let (a, b) = (ids[0], *ids.get(1).unwrap_or(&ids[0]));
                key(a.min(b), a.max(b))
            })
            .collect();
        let mut order: Vec<u32> = (0..subs.len() as u32).collect();
        order.sort_by_key(|&f| keys[f as usize]);
        (order, keys, filter_names)
    }

    /// The compiled filters, in partition order (the value index of
    /// [`crate::hybrid_index`] verifies through them instead of a copy of its own).
    pub(crate) fn tests(&self) -> &Tests {
        &self.tests
    }

    /// The names' numbering (the value index numbers them the same way).
    pub(crate) fn names(&self) -> &Names {
        &self.names
    }

    /// Number of filters indexed.
    pub fn filters(&self) -> usize {
        self.iface.len()
    }

    /// The match of an event whose names are numbered (`slot`, `ids`: as
    /// `Names::slots` fills them; `ids` is sorted here).
    ///
    /// Never inlined: the name index alone and the hybrid index
    /// ([`crate::hybrid_index`]) run this one copy of the loop, not two copies that the
    /// compiler laid out apart.
    #[inline(never)]
    pub(crate) fn match_numbered<A: Attrs>(
        &self,
        attrs: A,
        slot: &[u32],
        ids: &mut [u32],
        matched: &mut Matched,
        ranges: &mut Vec<(u32, u32)>,
    ) -> Vec<InterfaceId> {
        let esig = ids.iter().fold(Sig::default(), |g, &id| g.or(Sig::of(id)));
        self.partitions_of(ids, ranges);
        self.scan_all(ranges, esig, attrs, slot, matched)
    }

    /// Looks up the partitions of the event's pairs of names (`ids`, sorted here) into
    /// `ranges`, and returns how many filters they hold. All of them before any scan:
    /// the budgeted loop ([`ContentIndex::match_within`]) needs their sizes first, and
    /// the plain one shares the lookups (the name index alone took the same time either
    /// way: dense10, 100k filters, 3-5 and 10 names, 2-core machine).
    #[inline(always)]
    fn partitions_of(&self, ids: &mut [u32], ranges: &mut Vec<(u32, u32)>) -> u64 {
        ids.sort_unstable();
        ranges.clear();
        let mut filters = 0u64;
        for i in 0..ids.len() {
            for j in i..ids.len() {
                if let Some(&(start, end)) = self.parts.get(&key(ids[i], ids[j])) {
                    ranges.push((start, end));
                    filters += (end - start) as u64;
                }
            }
        }
        filters
    }

    /// Scans the partitions `ranges` (see [`ContentIndex::scan`]) until every interface
    /// has matched: the answer.
    #[inline(always)]
    fn scan_all<A: Attrs>(
        &self,
        ranges: &[(u32, u32)],
        esig: Sig,
        attrs: A,
        slot: &[u32],
        matched: &mut Matched,
    ) -> Vec<InterfaceId> {
        let mut left = self.interfaces.len();
        for &(start, end) in ranges {
            if self.scan(start, end, esig, attrs, slot, matched, &mut left) {
                break;
            }
        }
        matched.take(&self.interfaces)
    }

    /// Scans the filters `start..end` of a partition: each whose names the event has
    /// (signature) and whose interface has not matched yet is evaluated; true once every
    /// interface has matched (`left` counts those that have not).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn scan<A: Attrs>(
        &self,
        start: u32,
        end: u32,
        esig: Sig,
        attrs: A,
        slot: &[u32],
        matched: &mut Matched,
        left: &mut usize,
    ) -> bool {
        for f in start as usize..end as usize {
            if !self.sig[f].within(esig) {
                continue;
            }
            let iface = self.iface[f];
            if matched.has(iface) || !self.tests.satisfies(f, attrs, slot) {
                continue;
            }
            matched.set(iface);
            *left -= 1;
            if *left == 0 {
                return true;
            }
        }
        false
    }

    /// [`ContentIndex::match_numbered`] within a budget of work: `None` (and `matched`
    /// cleared) once the filters visited cost more than `budget`, counting
    /// [`VISIT_COST`] per filter of each block of [`BLOCK`] filters scanned and
    /// [`EVAL_COST`] more per filter evaluated, checked after each block (so it may
    /// overrun by one block's work).
    ///
    /// The partitions to visit are looked up first (into `ranges`), and where even
    /// evaluating every filter of them stays within `budget` they are scanned as
    /// [`ContentIndex::match_numbered`] scans them, with nothing counted (dense10, 100k
    /// filters, 3-5 names: ~3,000 filters against a budget of ~60 µs; counting cost the
    /// hybrid 2% against the name index alone there on the GPU machine's host). Otherwise
    /// they are scanned with the counts, by a loop kept apart from the plain one (one
    /// generic function for both changed how the compiler laid out the plain one: 15%
    /// slower on some workloads, faster on others). Never inlined, so that its own code
    /// does not depend on where it is called from (inlined into the hybrid's choice, the
    /// filters' evaluation was left out of line and cost a tenth more). Checked after
    /// every evaluation, or every 64 filters, the budget cost 1.5-2% against the plain
    /// loop (dense10, 100k filters, 3-5 names, 2-core machine); every 1024 filters,
    /// nothing measurable.
    #[inline(never)]
    pub(crate) fn match_within<A: Attrs>(
        &self,
        attrs: A,
        slot: &[u32],
        ids: &mut [u32],
        matched: &mut Matched,
        ranges: &mut Vec<(u32, u32)>,
        budget: u64,
    ) -> Option<Vec<InterfaceId>> {
        let esig = ids.iter().fold(Sig::default(), |g, &id| g.or(Sig::of(id)));
        let most = self.partitions_of(ids, ranges);
        if most * (VISIT_COST + EVAL_COST) <= budget {
            return Some(self.scan_all(ranges, esig, attrs, slot, matched));
        }
        let mut left = self.interfaces.len();
        let mut spent = 0u64;
        let mut gave_up = false;
        'parts: for &(start, end) in ranges.iter() {
            // Visits counted per block once it is scanned (the scan stops early only
            // when every interface has matched), evaluations one by one.
            for block in (start as usize..end as usize).step_by(BLOCK) {
                let to = (block + BLOCK).min(end as usize);
                spent += (to - block) as u64 * VISIT_COST;
                for f in block..to {
                    if !self.sig[f].within(esig) {
                        continue;
                    }
                    let iface = self.iface[f];
                    if matched.has(iface) {
                        continue;
                    }
                    spent += EVAL_COST;
                    if !self.tests.satisfies(f, attrs, slot) {
                        continue;
                    }
                    matched.set(iface);
                    left -= 1;
                    if left == 0 {
                        break 'parts;
                    }
                }
                if spent > budget {
                    gave_up = true;
                    break 'parts;
                }
            }
        }
        if gave_up {
            matched.clear();
            return None;
        }
        Some(matched.take(&self.interfaces))
    }

    /// The interfaces whose predicate matches the event of `attrs` (heap or batch),
    /// ascending by id, reusing `scratch` (one per thread).
    ///
    /// Never inlined: the hybrid index runs this very function on the events its static
    /// bound decides for the name index ([`crate::hybrid_index`]), so that they cost what
    /// they cost the name index alone, not what a copy of it laid out elsewhere costs.
    #[inline(never)]
    pub(crate) fn match_attrs_with<A: Attrs>(
        &self,
        attrs: A,
        scratch: &mut Scratch,
    ) -> Vec<InterfaceId> {
        if scratch.slot.len() != self.names.len()
            || scratch.matched.flag.len() != self.interfaces.len()
        {
            *scratch = self.scratch();
        }
        let Scratch {
            slot,
            ids,
            matched,
            ranges,
        } = scratch;
        attrs.slots(&self.names, slot, ids);
        let out = self.match_numbered(attrs, slot, ids, matched, ranges);
        for &id in ids.iter() {
            slot[id as usize] = 0;
        }
        out
    }
}

impl Matcher for ContentIndex {
    fn scratch_pool(&self) -> Option<&ScratchPool<Scratch>> {
        Some(&self.pool)
    }

    type Scratch = Scratch;

    /// Fresh scratch memory for [`ContentIndex::match_event_with`].
    fn scratch(&self) -> Scratch {
        Scratch {
            slot: vec![0; self.names.len()],
            ids: Vec::new(),
            matched: Matched::new(self.interfaces.len()),
            ranges: Vec::new(),
        }
    }

    /// The interfaces whose predicate matches `e`, ascending by id, reusing `scratch` (one
    /// per thread).
    fn match_event_with(&self, e: &Event, scratch: &mut Scratch) -> Vec<InterfaceId> {
        self.match_attrs_with(e.attributes(), scratch)
    }

    /// The names of `batch` in the index's numbering.
    fn batch_names(&self, batch: &EventBatch) -> BatchNames {
        self.names.batch_names(batch.names())
    }

    /// Event `i` of `batch`, read in place: its names through `names`, no hashing.
    fn match_in_batch_with(
        &self,
        batch: &EventBatch,
        names: &BatchNames,
        i: usize,
        scratch: &mut Scratch,
    ) -> Vec<InterfaceId> {
        let mut fresh = None;
        let names = self.names.checked(batch, names, &mut fresh);
        self.match_attrs_with(BatchAttrs::new(batch, names, i), scratch)
    }

    /// An estimate of the heap bytes of the index.
    fn heap_bytes(&self) -> usize {
        fn vec<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        let names = self.names.heap_bytes();
        let parts = self.parts.capacity() * (std::mem::size_of::<(u64, (u32, u32))>() + 1);
        names
            + parts
            + vec(&self.sig)
            + vec(&self.iface)
            + self.tests.heap_bytes()
            + vec(&self.interfaces)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiled::tests::sub;
    use crate::Matcher;
    use ccm::model::{Filter, Op, Value};

    #[test]
    fn filters_are_found_through_their_two_rarest_names_only() {
        let subs = vec![
            sub(
                1,
                &[
                    ("a", Op::Eq, Value::Int(1)),
                    ("b", Op::Gt, Value::Int(0)),
                    ("c", Op::Prefix, Value::Str("x".into())),
                ],
            ),
            sub(2, &[("a", Op::Ne, Value::Int(5))]),
            sub(
                3,
                &[
                    ("a", Op::Lt, Value::Float(0.5)),
                    ("b", Op::Ge, Value::Int(2)),
                ],
            ),
        ];
        let ix = ContentIndex::build(&subs).unwrap();
        let ev = |pairs: Vec<(&str, Value)>| Event::from_pairs(pairs).unwrap();
        let e = ev(vec![
            ("a", Value::Int(1)),
            ("b", Value::Int(1)),
            ("c", Value::Str("xy".into())),
        ]);
        assert_eq!(ix.match_event(&e), vec![InterfaceId(1), InterfaceId(2)]);
        let e = ev(vec![("a", Value::Int(0)), ("b", Value::Float(2.0))]);
        assert_eq!(ix.match_event(&e), vec![InterfaceId(2), InterfaceId(3)]);
        let e = ev(vec![("b", Value::Int(3)), ("z", Value::Int(0))]);
        assert!(ix.match_event(&e).is_empty());
        // `!=` on an absent attribute or a value of the other type is not satisfied.
        let e = ev(vec![("a", Value::Str("5".into()))]);
        assert!(ix.match_event(&e).is_empty());
    }

    #[test]
    fn a_budget_gives_up_cleared_or_answers_as_without_one() {
        let p = ccm::workload::DenseParams {
            events: 50,
            filters: 2000,
            interfaces: Some(10),
            names_per_event: (20, 20),
            ..Default::default()
        };
        let w = ccm::workload::generate_dense(&p, 2).unwrap();
        let ix = ContentIndex::build(&w.subscriptions).unwrap();
        let Scratch {
            mut slot,
            mut ids,
            mut matched,
            mut ranges,
        } = ix.scratch();
        let (mut gave_up, mut answered) = (0, 0);
        for e in &w.events {
            let want = ix.match_event(e);
            ix.names.slots(e, &mut slot, &mut ids);
            for budget in [0, 2_000, 20_000, u64::MAX] {
                let attrs = e.attributes();
                match ix.match_within(attrs, &slot, &mut ids, &mut matched, &mut ranges, budget) {
                    Some(got) => {
                        assert_eq!(got, want);
                        answered += 1;
                    }
                    None => gave_up += 1,
                }
                // Cleared either way: the next match starts from nothing.
                assert!(matched.list.is_empty() && !matched.flag.contains(&true));
            }
            for &id in &ids {
                slot[id as usize] = 0;
            }
        }
        assert!(
            gave_up > 0 && answered > w.events.len(),
            "{gave_up} {answered}"
        );
    }

    #[test]
    fn an_empty_filter_is_refused() {
        let bad = Subscription {
            interface: InterfaceId(0),
            filter: Filter {
                constraints: Vec::new(),
            },
        };
        assert!(matches!(
            ContentIndex::build(&[bad]),
            Err(IndexError::Model { index: 0, .. })
        ));
    }
}
