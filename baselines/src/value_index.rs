//! A value index for content-based matching (REIN / TAMA / HEM class), exact for CCM's
//! whole model: the filters that can match an event are found by OR-ing precomputed
//! bitsets of *failing* filters, the survivors are checked constraint by constraint.
//!
//! Where the ideas come from:
//! - REIN (Qian, Cao, Li, Wang & Zhu, INFOCOM 2014) indexes each attribute's predicate
//!   bounds in value-ordered buckets and, for an event, marks the subscriptions whose
//!   bounds the event's value lies outside of: a low bound above the value, or a high
//!   bound below it. What is left unmarked matches. Here the same split of every range
//!   into a *lower* and an *upper* bound per name.
//! - TAMA (Zhao & Wu, INFOCOM 2013) trades exactness for speed with approximate
//!   cells; here approximate bitsets are used the other way round: they may leave a
//!   failing filter unmarked, never mark a matching one, and every survivor is verified,
//!   so the answer is exact.
//! - HEM (Shi & Qian, DASFAA 2022) precomputes, per attribute, bitsets of the
//!   subscriptions whose low (high) bounds lie in ranges of cells, so an event costs a few
//!   word-parallel ORs over all subscriptions (about `d · N / 64` word operations for `d`
//!   attributes and `N` subscriptions) instead of a mark per predicate, and marks only
//!   the predicates of the cells between the value and the nearest precomputed range.
//!   Here each name's sorted lower bounds have suffix bitsets at a few cut points
//!   ([`Cuts`]: the filters whose bound lies at or above the cut fail for any value below
//!   it), its upper bounds prefix bitsets; for a value the index ORs the nearest cut on
//!   the safe side and, as HEM, marks the bounds between the value and the cut one by
//!   one. With few interfaces (see below) it leaves those to the verification of the
//!   survivors instead (cheaper there: only a few chunks are scanned).
//!
//! The model's operators in value order: `>` and `>=` are lower bounds, `<` and `<=`
//! upper bounds, `=` both; strings are ordered by their UTF-8 bytes, `= s` is both
//! bounds and `prefix p` the range from `p` up to (not including) the next string after
//! every string starting with `p`. `!=`, `suffix` and `substr` are not indexed: their
//! filters are verified. An attribute the event lacks fails every filter with a
//! constraint on it (one bitset per name: *has*); a value of the other type fails every
//! constraint of that type on the name (*has numbers*, *has strings*).
//!
//! Beyond HEM, two things keep this index cheap where answers are few interfaces rather
//! than one per subscription (CCM's model, Table 1): the filters are numbered interface
//! by interface, and the bitsets are OR-ed chunk by chunk, so that once an interface has
//! matched the rest of its filters are skipped (SFF's per-interface pruning, which
//! [`crate::content_index`] has too); a chunk doubles in length while it finds nothing.
//! The answers are collected per matched filter, never by a scan of every interface.
//!
//! Beyond HEM too, with one interface per filter or few filters each and at most 64
//! names: the filters are numbered by the *set of names* they constrain, and an event
//! visits only the sets within its own names, each over the bitsets of the set's names
//! alone: no OR for an absent name, none over a filter that constrains one. Whether that
//! reads fewer words than the OR over every filter is decided per number of names in
//! the event, from the sets' sizes.
//!
//! Cost: otherwise every name the index knows costs one or more ORs per event, present
//! or not, so with many names and few per event (Table 1: 3-5 of 100) the name index is
//! cheaper; [`crate::hybrid_index`] chooses per event.

use crate::compiled::{AttrValue, Attrs, BatchAttrs, Hits, Names, Tests};
use crate::content_index::{ContentIndex, IndexError};
use crate::matcher::{BatchNames, ScratchPool};
use crate::sff::{cmp_num, Num};
use crate::Matcher;
use ccm::batch::EventBatch;
use ccm::model::{Event, InterfaceId, Op, Subscription, Value};
use rayon::prelude::*;
use std::cmp::Ordering;
use std::sync::Arc;

/// How many cut bitsets a bound list (of one name, type and side) gets: one per `run`
/// bounds, at most `max` (and at least one). More cuts leave fewer failing filters to
/// the verification and cost `filters / 8` bytes each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cuts {
    pub run: usize,
    pub max: usize,
    /// Most cut bitsets in all (each list keeps one).
    pub budget: usize,
}

impl Default for Cuts {
    fn default() -> Self {
        Cuts {
            run: 32,
            max: 32,
            budget: 1024,
        }
    }
}
/// The first and the longest chunk of the OR, in 64-bit words.
const MIN_CHUNK: usize = 4;
const MAX_CHUNK: usize = 256;

/// One name's lower (or upper) bounds of one type, in value order, with the cut bitsets.
///
/// Lower bounds are sorted by `(value, strict)` (non-strict first): for a value `x`, the
/// bounds that fail (`v > x`, or `v == x` and strict) are a suffix, and the cut bitset
/// at position `c` holds the filters of the bounds `c..`. Upper bounds are sorted by
/// `(value, non-strict)` (strict first): those that fail (`v < x`, or `v == x` and
/// strict) are a prefix, and the cut bitset at `c` holds the filters of the bounds `..c`.
///
/// A value's position is found through *fences* (a static B-tree's inner levels, as in
/// cache-conscious search trees): `fences[0]` holds every [`FENCE`]-th key, `fences[1]`
/// every `FENCE`-th of those, and so on up to a level of at most `FENCE` keys. Each level
/// narrows the search to `FENCE` keys of the level below, so a lookup touches a few
/// cache lines per level, and the small upper levels stay in cache between events; a
/// plain binary search over a list of 15,000 bounds misses the cache on most of its 14
/// steps.
#[derive(Debug, Clone)]
struct Bounds<K> {
    keys: Vec<(K, bool)>,
    fences: Vec<Vec<(K, bool)>>,
    /// The filter of each bound.
    fids: Vec<u32>,
    /// `(position, bitset)`, ascending by position.
    cuts: Vec<(u32, u32)>,
    /// The keys as integer codes, when every key is an integer of magnitude below 2^62
    /// (see [`IntKeys`]).
    ints: Option<IntKeys>,
}

/// A numeric bound list's keys as one `i64` each, when every key is an integer of
/// magnitude below 2^62 (the dense model's): `2v + 1` for a strict lower or a non-strict
/// upper bound on `v`, `2v` otherwise, so that the bounds before an integer value `x`'s
/// position ([`Bounds::lower`], [`Bounds::upper`]) are exactly those whose code is at
/// most `2x`, in either list (the codes are in the lists' order). A lookup then compares machine integers down
/// the fences instead of `(Num, bool)` pairs through [`cmp_num`] (a third of the value
/// index's time on dense events went to those comparisons).
#[derive(Debug, Clone, Default)]
struct IntKeys {
    codes: Vec<i64>,
    fences: Vec<Vec<i64>>,
}

impl IntKeys {
    /// The codes of `keys` (`lower`: a lower bound list), or `None` when a key is not an
    /// integer of magnitude below 2^62.
    fn of(keys: &[(Num, bool)], lower: bool) -> Option<IntKeys> {
        const MAX: i64 = 1 << 62;
        let codes = keys
            .iter()
            .map(|&(k, strict)| match k {
                Num::Int(v) if v > -MAX && v < MAX => Some(2 * v + i64::from(strict == lower)),
                _ => None,
            })
            .collect::<Option<Vec<i64>>>()?;
        let fences = fences_of(&codes);
        Some(IntKeys { codes, fences })
    }

    /// The number of codes at most `2x` (the position of the integer value `x`).
    #[inline]
    fn position(&self, x: i64) -> usize {
        // Saturating: beyond +-2^62, `x` is above or below every key.
        let t = x.saturating_mul(2);
        fenced_position(&self.codes, &self.fences, |&c| c <= t)
    }
}

/// The fences of `keys` (see [`Bounds`]): every [`FENCE`]-th key, every `FENCE`-th of
/// those, and so on up to a level of at most `FENCE` keys.
fn fences_of<T: Clone>(keys: &[T]) -> Vec<Vec<T>> {
    let mut fences: Vec<Vec<T>> = Vec::new();
    let mut below = keys;
    while below.len() > FENCE {
        let level: Vec<T> = below.iter().step_by(FENCE).cloned().collect();
        fences.push(level);
        below = fences.last().expect("just pushed");
    }
    fences
}

/// The number of `keys` for which `pred` holds (it holds for a prefix of them), as
/// `keys.partition_point(pred)`, level by level down `fences` (see [`Bounds`]).
#[inline]
fn fenced_position<T>(keys: &[T], fences: &[Vec<T>], pred: impl Fn(&T) -> bool) -> usize {
    let mut levels = fences.iter().rev();
    let mut c = match levels.next() {
        Some(top) => top.partition_point(&pred),
        None => return keys.partition_point(pred),
    };
    // Entry `i` of a level is entry `i * FENCE` of the level below: with `c` entries
    // holding above, `(c - 1) * FENCE + 1 ..= c * FENCE` hold below.
    for level in levels.map(|l| &l[..]).chain([keys]) {
        if c == 0 {
            return 0;
        }
        let lo = (c - 1) * FENCE + 1;
        let hi = (c * FENCE).min(level.len());
        c = lo + level[lo..hi].partition_point(&pred);
    }
    c
}

/// Keys per fence (see [`Bounds`]): 16 keys of 24 bytes are 6 cache lines.
const FENCE: usize = 16;

impl<K> Default for Bounds<K> {
    fn default() -> Self {
        Bounds {
            keys: Vec::new(),
            fences: Vec::new(),
            fids: Vec::new(),
            cuts: Vec::new(),
            ints: None,
        }
    }
}

/// What one bound list contributes for a value: a cut bitset to OR (all its filters
/// fail) and the positions of the failing bounds it leaves out (the gap).
type Lookup = (Option<u32>, u32, u32);

impl<K> Bounds<K> {
    /// The number of keys for which `pred` holds (it holds for a prefix of them), as
    /// `keys.partition_point(pred)`, level by level down the fences.
    #[inline]
    fn position(&self, pred: impl Fn(&(K, bool)) -> bool) -> usize {
        fenced_position(&self.keys, &self.fences, pred)
    }

    /// The bitset to OR for the event's value `x` (`None`: no cut is safe) and the gap;
    /// `vs_x` orders a bound's value against `x`.
    #[inline]
    fn lower(&self, vs_x: impl Fn(&K) -> Ordering) -> Lookup {
        self.lower_at(self.lower_position(vs_x))
    }

    /// The position of the event's value in a lower list: the bounds before it hold.
    #[inline]
    fn lower_position(&self, vs_x: impl Fn(&K) -> Ordering) -> usize {
        self.position(|(k, strict)| match vs_x(k) {
            Ordering::Less => true,
            Ordering::Equal => !strict,
            Ordering::Greater => false,
        })
    }

    /// [`Bounds::lower`] for the value whose position is `p`.
    #[inline]
    fn lower_at(&self, p: usize) -> Lookup {
        // The first cut at or after p.
        let j = self.cuts.partition_point(|&(c, _)| (c as usize) < p);
        match self.cuts.get(j) {
            Some(&(c, b)) => (Some(b), p as u32, c),
            None => (None, p as u32, self.keys.len() as u32),
        }
    }

    #[inline]
    fn upper(&self, vs_x: impl Fn(&K) -> Ordering) -> Lookup {
        self.upper_at(self.upper_position(vs_x))
    }

    /// The position of the event's value in an upper list: the bounds before it fail.
    #[inline]
    fn upper_position(&self, vs_x: impl Fn(&K) -> Ordering) -> usize {
        self.position(|(k, strict)| match vs_x(k) {
            Ordering::Less => true,
            Ordering::Equal => *strict,
            Ordering::Greater => false,
        })
    }

    /// [`Bounds::upper`] for the value whose position is `p`.
    #[inline]
    fn upper_at(&self, p: usize) -> Lookup {
        // The last cut at or before p.
        let j = self.cuts.partition_point(|&(c, _)| (c as usize) <= p);
        match j.checked_sub(1) {
            Some(j) => (Some(self.cuts[j].1), self.cuts[j].0, p as u32),
            None => (None, 0, p as u32),
        }
    }

    fn heap_bytes(&self, key_bytes: impl Fn(&K) -> usize) -> usize {
        self.keys.capacity() * std::mem::size_of::<(K, bool)>()
            + self.keys.iter().map(|(k, _)| key_bytes(k)).sum::<usize>()
            + (self.fences.iter())
                .map(|l| {
                    l.capacity() * std::mem::size_of::<(K, bool)>()
                        + l.iter().map(|(k, _)| key_bytes(k)).sum::<usize>()
                })
                .sum::<usize>()
            + self.fids.capacity() * 4
            + self.cuts.capacity() * 8
            + self.ints.as_ref().map_or(0, |i| {
                (i.codes.capacity() + i.fences.iter().map(Vec::capacity).sum::<usize>()) * 8
            })
    }
}

/// The index of one name.
#[derive(Debug, Clone, Default)]
struct NameIx {
    /// Filters with a constraint on the name.
    has: u32,
    /// Filters with a numeric (string) constraint on it.
    has_num: Option<u32>,
    has_str: Option<u32>,
    num_lower: Bounds<Num>,
    num_upper: Bounds<Num>,
    /// With numeric lower and upper bounds both: their cut bitsets as cells (then the
    /// two lists have no cuts of their own).
    num_cells: Option<Cells>,
    str_lower: Bounds<Box<[u8]>>,
    str_upper: Bounds<Box<[u8]>>,
}

/// One name's numeric lower and upper bounds cut together into *cells* of values, one
/// bitset each (HEM's cells, Shi & Qian, DASFAA 2022, whose bitsets also hold both sides
/// of a range): a value ORs one bitset for both of its lists instead of a lower cut and
/// an upper cut, and with as many bitsets in all each gap is half as long.
///
/// Cell `j` holds the values whose lower position ([`Bounds::lower`]: the lower bounds
/// before it hold) is in `from[j]..from[j + 1]`. For those, the lower bounds from
/// `from[j + 1]` on fail, and so do the upper bounds before `upper[j]`, the position of
/// the least such value (upper positions grow with the value); the cell's bitset holds
/// both. A value's gaps are the lower bounds from its position to `from[j + 1]` and the
/// upper bounds from `upper[j]` to its position.
#[derive(Debug, Clone, Default)]
struct Cells {
    /// Ascending, `from[0] == 0`.
    from: Vec<u32>,
    upper: Vec<u32>,
    bits: Vec<u32>,
    /// The filters of every upper bound (every lower bound): what fails for a value
    /// above every upper bound (below every lower bound), where the end cell would
    /// leave a whole cell's bounds to the gap (an event beyond the values' range
    /// marked thousands of bounds one by one).
    above: u32,
    below: u32,
}

impl Cells {
    /// The cells of `lower` and `upper` (sorted, without cuts), about `n` of them, their
    /// bitsets added to `a`.
    fn new(lower: &Bounds<Num>, upper: &Bounds<Num>, n: usize, a: &mut Arena) -> Cells {
        let m = lower.keys.len();
        let mut from: Vec<u32> = (0..n.max(1)).map(|j| (j * m / n.max(1)) as u32).collect();
        from.dedup();
        let upper_at: Vec<u32> = (from.iter())
            .map(|&f| match (f as usize).checked_sub(1) {
                // The least value with lower position `f`: the key of lower bound `f - 1`
                // (or any value just above it, when that bound is strict); the upper
                // bounds that fail there fail at every value of the cell.
                Some(i) => {
                    let (v, strict) = lower.keys[i];
                    upper.position(|(u, s)| match cmp_num(*u, v) {
                        Ordering::Less => true,
                        Ordering::Equal => strict || *s,
                        Ordering::Greater => false,
                    }) as u32
                }
                None => 0,
            })
            .collect();
        let bits = (0..from.len())
            .map(|j| {
                let next = from.get(j + 1).map_or(m, |&f| f as usize);
                let fails_lower = lower.fids[next..].iter();
                let fails_upper = upper.fids[..upper_at[j] as usize].iter();
                a.add(fails_lower.chain(fails_upper).copied())
            })
            .collect();
        let above = a.add(upper.fids.iter().copied());
        let below = a.add(lower.fids.iter().copied());
        Cells {
            from,
            upper: upper_at,
            bits,
            above,
            below,
        }
    }

    /// The bitset and the two gaps (lower, upper: `(from, to)` positions) of a value whose
    /// lower and upper positions are `pl` and `pu`; `m`, `mu`: the numbers of lower and
    /// upper bounds.
    #[inline]
    fn lookup(
        &self,
        pl: usize,
        pu: usize,
        (m, mu): (usize, usize),
    ) -> (u32, (u32, u32), (u32, u32)) {
        if pu == mu {
            return (self.above, (pl as u32, m as u32), (0, 0));
        }
        if pl == 0 {
            return (self.below, (0, 0), (0, pu as u32));
        }
        let j = self.from.partition_point(|&f| f as usize <= pl) - 1;
        let next = self.from.get(j + 1).map_or(m as u32, |&f| f);
        (self.bits[j], (pl as u32, next), (self.upper[j], pu as u32))
    }

    fn heap_bytes(&self) -> usize {
        (self.from.capacity() + self.upper.capacity() + self.bits.capacity()) * 4
    }
}

/// The value index.
#[derive(Debug, Clone, Default)]
pub struct ValueIndex {
    names: Names,
    by_name: Vec<NameIx>,
    /// Filters in interface order: dense interface of each, and each interface's end.
    iface: Vec<u32>,
    iface_end: Vec<u32>,
    /// The compiled filters that survivors are verified with.
    compiled: Compiled,
    /// `words` 64-bit words per bitset, bitset `b` at `bits[b * words..]`.
    words: usize,
    bits: Vec<u64>,
    /// The filters with a constraint the bounds do not express (`!=`, `suffix`,
    /// `substr`): verified even when no bitset marks them.
    verify: Vec<u64>,
    /// Whether interfaces hold many filters each: then the gaps are left to verification
    /// and whole interfaces are skipped once matched; otherwise the gaps are marked
    /// bound by bound and the answer needs no verification (HEM's way).
    early_stop: bool,
    /// Without early stop and with at most 64 names: the filters ordered by the set of
    /// names they constrain (see [`Self::scan_classes`]).
    classes: Option<Classes>,
    /// Dense interface index -> user's id, ascending (so that [`Hits`] answers in order).
    interfaces: Vec<InterfaceId>,
    /// `Some(c)` when the user's id of dense interface `i` is `i + c` for every `i` (ids
    /// numbered contiguously): the answer needs no lookup in `interfaces`, whose reads
    /// miss the cache at random with a million interfaces.
    id_offset: Option<u32>,
    /// Whether every interface has one filter: then no filter's interface can have
    /// matched before it, and the scans do not ask.
    single: bool,
    /// Its threads' scratch kept between calls on all cores.
    pool: ScratchPool<ValueScratch>,
}

/// The compiled filters a [`ValueIndex`] verifies survivors with.
#[derive(Debug, Clone)]
enum Compiled {
    /// Its own, in its filter order.
    Own(Tests),
    /// Those of the content index of the same subscriptions (in its partition order):
    /// filter `f` is its filter `at[f]`. The hybrid index's value index shares them
    /// instead of a copy (the copy doubled the compiled filters' memory, hundreds of MB
    /// with a million filters).
    Shared {
        content: Arc<ContentIndex>,
        at: Vec<u32>,
    },
}

impl Default for Compiled {
    fn default() -> Self {
        Compiled::Own(Tests::default())
    }
}

/// Scratch memory of one matching thread.
#[derive(Debug, Clone, Default)]
pub struct ValueScratch {
    slot: Vec<u32>,
    ids: Vec<u32>,
    present: Vec<bool>,
    /// The bitsets to OR for the event (all of them, in interface order).
    list: Vec<u32>,
    /// Per present name, the bitsets to OR for filters constraining it (`NONE`: none).
    by_name: Vec<[u32; 3]>,
    /// The event's names as bits (with at most 64 names).
    names_bits: u64,
    /// The gaps: `(name, list, from, to)` positions of failing bounds left out by a cut.
    gaps: Vec<(u32, u8, u32, u32)>,
    acc: Vec<u64>,
    /// The gaps' filters, one bit each (all zero between events).
    mark: Vec<u64>,
    matched: Hits,
}

/// The filters by the set of names they constrain.
#[derive(Debug, Clone, Default)]
struct Classes {
    /// `(names as bits, start, end)` per set, ascending.
    sets: Vec<(u64, u32, u32)>,
    /// Per number `k` of the event's names: whether the scan by set is expected to read
    /// fewer words than the scan of every filter (for `k` names drawn at random: a set
    /// of `s` names is within them with probability `Π_{i<s} (k - i) / (d - i)`, and its
    /// scan reads its words once per bitset of its names and `mark`, a cache line or two
    /// of each at random, each counted as 8 words more; the other reads every word once
    /// per bitset of the event, one per absent name, in order). Measured with 100k
    /// filters (20 names, 10 per event): counting the random lines as single words
    /// chose the scan by set, 1.3x slower than the other.
    better: Vec<bool>,
}

impl Classes {
    fn new(sets: Vec<(u64, u32, u32)>, d: usize, words: usize) -> Classes {
        let better = (0..=d)
            .map(|k| {
                let by_set: f64 = sets
                    .iter()
                    .map(|&(m, start, end)| {
                        let s = m.count_ones() as usize;
                        let p: f64 = (0..s)
                            .map(|i| (k as f64 - i as f64).max(0.0) / (d - i) as f64)
                            .product();
                        let span = (end as usize - 1) / 64 - start as usize / 64 + 1;
                        // Its words in each bitset are a cache line or two at random,
                        // which costs about as much as a line (8 words) read in order.
                        p * ((span + 8) * (2 * s + 1)) as f64
                    })
                    .sum();
                // One test of every set's names.
                let by_set = by_set + sets.len() as f64 / 4.0;
                by_set <= ((d - k) + 2 * k + 1) as f64 * words as f64
            })
            .collect();
        Classes { sets, better }
    }
}

/// The least set of names within `names` (as bits) that is greater than `m`, which is
/// not within it (`None`: there is none). Its bits above the highest bit of `m` outside
/// `names` are within `names`; the answer keeps no bit below it and counts up the ones
/// above it through the bits of `names` only (the next submask).
#[inline]
fn next_within(m: u64, names: u64) -> Option<u64> {
    let high = 63 - (m & !names).leading_zeros();
    let above = u64::MAX.checked_shl(high + 1).unwrap_or(0);
    let (prefix, within) = (m & above, names & above);
    let y = (prefix | !within).wrapping_add(1) & within;
    (y != 0).then_some(y)
}

/// The first set from `at` on whose names (as bits) are at least `y` (`sets` ascending
/// by them): a galloping search, so that a short skip costs a few steps.
#[inline]
fn skip_to(sets: &[(u64, u32, u32)], at: usize, y: u64) -> usize {
    let mut step = 1;
    let mut hi = at;
    while hi < sets.len() && sets[hi].0 < y {
        hi = at + step;
        step *= 2;
    }
    let lo = at + step / 4;
    let hi = hi.min(sets.len());
    lo + sets[lo..hi].partition_point(|s| s.0 < y)
}

/// No bitset, in [`ValueScratch::by_name`].
const NONE: u32 = u32::MAX;

/// Filters per interface from which the early-stop scan is used.
const EARLY_STOP_FILTERS: usize = 1024;

/// A bound of one filter on one name, before sorting.
enum Bound {
    NumLower(Num, bool),
    NumUpper(Num, bool),
    StrLower(Box<[u8]>, bool),
    StrUpper(Box<[u8]>, bool),
}

/// The bounds that constraint `op v` puts on its name (empty: not indexed).
fn bounds(op: Op, v: &Value) -> Vec<Bound> {
    use Bound::*;
    match v {
        Value::Str(s) => {
            let b: Box<[u8]> = s.as_bytes().into();
            match op {
                Op::Eq => vec![StrLower(b.clone(), false), StrUpper(b, false)],
                Op::Prefix => match after_prefix(&b) {
                    Some(end) => vec![StrLower(b, false), StrUpper(end, true)],
                    None => vec![StrLower(b, false)],
                },
                _ => Vec::new(),
            }
        }
        _ => {
            let x = Num::of(v).expect("a number");
            match op {
                Op::Gt => vec![NumLower(x, true)],
                Op::Ge => vec![NumLower(x, false)],
                Op::Lt => vec![NumUpper(x, true)],
                Op::Le => vec![NumUpper(x, false)],
                Op::Eq => vec![NumLower(x, false), NumUpper(x, false)],
                _ => Vec::new(),
            }
        }
    }
}

/// The least byte string greater than every string that starts with `p` (`None`: no
/// such string, when `p` is empty or all `0xff`).
fn after_prefix(p: &[u8]) -> Option<Box<[u8]>> {
    let last = p.iter().rposition(|&b| b != 0xff)?;
    let mut end = p[..=last].to_vec();
    end[last] += 1;
    Some(end.into())
}

/// Bitsets under construction for one name: `words` words each.
struct Arena {
    words: usize,
    bits: Vec<u64>,
}

impl Arena {
    fn add(&mut self, filters: impl IntoIterator<Item = u32>) -> u32 {
        let id = (self.bits.len() / self.words) as u32;
        self.bits.resize(self.bits.len() + self.words, 0);
        let base = id as usize * self.words;
        for f in filters {
            self.bits[base + f as usize / 64] |= 1 << (f % 64);
        }
        id
    }

    /// Sorts `entries` with `cmp`, cuts them and stores the cut bitsets: suffixes from
    /// each cut (`suffix`) or prefixes up to each.
    fn bounds<K: Clone>(
        &mut self,
        mut entries: Vec<(K, bool, u32)>,
        cuts: usize,
        cmp: impl Fn(&(K, bool, u32), &(K, bool, u32)) -> Ordering,
        suffix: bool,
    ) -> Bounds<K> {
        if entries.is_empty() {
            return Bounds::default();
        }
        entries.sort_by(cmp);
        let m = entries.len();
        let positions: Vec<usize> = if suffix {
            (0..cuts).map(|j| j * m / cuts).collect()
        } else {
            (1..=cuts).map(|j| j * m / cuts).collect()
        };
        let mut out = Bounds {
            keys: Vec::with_capacity(m),
            fences: Vec::new(),
            fids: entries.iter().map(|e| e.2).collect(),
            cuts: Vec::with_capacity(cuts),
            ints: None,
        };
        for &c in &positions {
            let range = if suffix { c..m } else { 0..c };
            let b = self.add(entries[range].iter().map(|e| e.2));
            out.cuts.push((c as u32, b));
        }
        out.keys = entries.into_iter().map(|(k, s, _)| (k, s)).collect();
        out.fences = fences_of(&out.keys);
        out
    }
}

/// One name's constraints sorted into bound lists, before the bitsets.
#[derive(Default)]
struct NameEntries {
    has: Vec<u32>,
    num: Vec<u32>,
    str: Vec<u32>,
    nl: Vec<(Num, bool, u32)>,
    nu: Vec<(Num, bool, u32)>,
    sl: Vec<(Box<[u8]>, bool, u32)>,
    su: Vec<(Box<[u8]>, bool, u32)>,
}

impl NameEntries {
    fn of(cs: &[(u32, Op, &Value)]) -> NameEntries {
        let mut n = NameEntries::default();
        for &(f, op, v) in cs {
            n.has.push(f);
            if v.is_number() {
                n.num.push(f);
            } else {
                n.str.push(f);
            }
            for b in bounds(op, v) {
                match b {
                    Bound::NumLower(x, s) => n.nl.push((x, s, f)),
                    Bound::NumUpper(x, s) => n.nu.push((x, s, f)),
                    Bound::StrLower(x, s) => n.sl.push((x, s, f)),
                    Bound::StrUpper(x, s) => n.su.push((x, s, f)),
                }
            }
        }
        n
    }

    /// The bound lists' lengths.
    fn lens(&self) -> [usize; 4] {
        [self.nl.len(), self.nu.len(), self.sl.len(), self.su.len()]
    }
}

impl ValueIndex {
    /// Builds the index of `subs` (each subscription is one filter of its interface).
    pub fn build(subs: &[Subscription]) -> Result<ValueIndex, IndexError> {
        Self::build_with(subs, Cuts::default())
    }

    /// [`ValueIndex::build`] with `cuts` cut bitsets per bound list.
    pub fn build_with(subs: &[Subscription], cuts: Cuts) -> Result<ValueIndex, IndexError> {
        Self::build_inner(subs, cuts, true).map(|(ix, _)| ix)
    }

    /// The value index of `subs` without compiled filters of its own, to be given those of
    /// their content index by [`ValueIndex::share`]; and the subscription (index in
    /// `subs`) of each of its filters.
    pub(crate) fn build_to_share(
        subs: &[Subscription],
    ) -> Result<(ValueIndex, Vec<u32>), IndexError> {
        Self::build_inner(subs, Cuts::default(), false)
    }

    /// Verifies through `content`'s compiled filters: those of the same subscriptions,
    /// `position[s]` the number of subscription `s`'s filter there, `order` as
    /// [`ValueIndex::build_to_share`] returned it.
    pub(crate) fn share(&mut self, content: Arc<ContentIndex>, position: &[u32], order: &[u32]) {
        let at = order.iter().map(|&s| position[s as usize]).collect();
        self.compiled = Compiled::Shared { content, at };
    }

    /// Builds the index; compiles the filters when `compile` (else see
    /// [`ValueIndex::build_to_share`]).
    fn build_inner(
        subs: &[Subscription],
        cuts: Cuts,
        compile: bool,
    ) -> Result<(ValueIndex, Vec<u32>), IndexError> {
        crate::compiled::check(subs)?;
        let mut tests = Tests::default();
        let mut ix = ValueIndex::default();
        let mut dense: crate::compiled::FastMap<InterfaceId, u32> = Default::default();
        let mut of: Vec<u32> = Vec::with_capacity(subs.len());
        for s in subs {
            for c in &s.filter.constraints {
                ix.names.intern(c.name.as_str());
            }
            let next = ix.interfaces.len() as u32;
            of.push(*dense.entry(s.interface).or_insert_with(|| {
                ix.interfaces.push(s.interface);
                next
            }));
        }
        // Dense numbers in ascending order of the users' ids.
        let mut by_id: Vec<u32> = (0..ix.interfaces.len() as u32).collect();
        by_id.sort_unstable_by_key(|&i| ix.interfaces[i as usize]);
        let mut rank = vec![0u32; by_id.len()];
        for (r, &i) in by_id.iter().enumerate() {
            rank[i as usize] = r as u32;
        }
        for o in &mut of {
            *o = rank[*o as usize];
        }
        ix.interfaces = by_id.iter().map(|&i| ix.interfaces[i as usize]).collect();
        ix.single = subs.len() == ix.interfaces.len();
        ix.id_offset = ix.interfaces.first().map(|i| i.0).filter(|&c| {
            ix.interfaces
                .iter()
                .enumerate()
                .all(|(i, id)| id.0.checked_sub(c) == Some(i as u32))
        });
        ix.early_stop = subs.len() >= EARLY_STOP_FILTERS * ix.interfaces.len();
        // Filters interface by interface (stable: input order within one), or, without
        // early stop and with at most 64 names, by the set of names they constrain.
        let mut order: Vec<u32> = (0..subs.len() as u32).collect();
        if !ix.early_stop && ix.names.len() <= 64 {
            let bits: Vec<u64> = subs
                .iter()
                .map(|s| {
                    s.filter.constraints.iter().fold(0u64, |m, c| {
                        m | 1 << ix.names.get(c.name.as_str()).expect("numbered above")
                    })
                })
                .collect();
            order.sort_by_key(|&f| (bits[f as usize], of[f as usize]));
            let mut sets: Vec<(u64, u32, u32)> = Vec::new();
            for (at, &f) in order.iter().enumerate() {
                let m = bits[f as usize];
                match sets.last_mut() {
                    Some(last) if last.0 == m => last.2 = at as u32 + 1,
                    _ => sets.push((m, at as u32, at as u32 + 1)),
                }
            }
            let words = subs.len().div_ceil(64).max(1);
            ix.classes = Some(Classes::new(sets, ix.names.len(), words));
        } else {
            order.sort_by_key(|&f| of[f as usize]);
        }
        ix.iface = order.iter().map(|&f| of[f as usize]).collect();
        ix.iface_end = vec![0; ix.interfaces.len()];
        for (at, &i) in ix.iface.iter().enumerate() {
            ix.iface_end[i as usize] = at as u32 + 1;
        }
        let words = subs.len().div_ceil(64).max(1);
        ix.words = words;
        ix.verify = vec![0; words];
        let d = ix.names.len();
        let mut per_name: Vec<Vec<(u32, Op, &Value)>> = vec![Vec::new(); d];
        for (at, &f) in order.iter().enumerate() {
            let s = &subs[f as usize];
            if compile {
                tests
                    .push(&s.filter.constraints, &ix.names)
                    .map_err(|_| IndexError::TooLarge { index: f as usize })?;
            }
            for c in &s.filter.constraints {
                let n = ix.names.get(c.name.as_str()).expect("numbered above");
                per_name[n as usize].push((at as u32, c.op, &c.value));
                if bounds(c.op, &c.value).is_empty() {
                    ix.verify[at / 64] |= 1 << (at % 64);
                }
            }
        }
        let entries: Vec<NameEntries> = per_name
            .into_par_iter()
            .map(|cs| NameEntries::of(&cs))
            .collect();
        // Cuts per list: one per `run` bounds, at most `max`, scaled down to the budget.
        let want = |m: usize| {
            if m == 0 {
                0
            } else {
                m.div_ceil(cuts.run.max(1)).clamp(1, cuts.max.max(1))
            }
        };
        let total: usize = entries.iter().flat_map(|n| n.lens()).map(want).sum();
        let scale = (cuts.budget as f64 / total.max(1) as f64).min(1.0);
        let per_list = |m: usize| ((want(m) as f64 * scale) as usize).max(1);
        // Each name's bitsets on its own thread, then one arena.
        let built: Vec<(NameIx, Vec<u64>)> = entries
            .into_par_iter()
            .map(|n| Self::build_name(n, words, &per_list))
            .collect();
        let total: usize = built.iter().map(|(_, b)| b.len()).sum();
        ix.bits.reserve_exact(total);
        for (mut n, b) in built {
            let shift = (ix.bits.len() / words) as u32;
            ix.bits.extend_from_slice(&b);
            n.has += shift;
            for id in [&mut n.has_num, &mut n.has_str].into_iter().flatten() {
                *id += shift;
            }
            let cuts = [
                &mut n.num_lower.cuts,
                &mut n.num_upper.cuts,
                &mut n.str_lower.cuts,
                &mut n.str_upper.cuts,
            ];
            for c in cuts.into_iter().flatten() {
                c.1 += shift;
            }
            if let Some(c) = &mut n.num_cells {
                for b in c.bits.iter_mut().chain([&mut c.above, &mut c.below]) {
                    *b += shift;
                }
            }
            ix.by_name.push(n);
        }
        ix.compiled = Compiled::Own(tests);
        Ok((ix, order))
    }

    /// Whether every constraint of filter `f` holds on the event (`slot`: its table).
    #[inline]
    fn satisfies<A: Attrs>(&self, f: usize, attrs: A, slot: &[u32]) -> bool {
        match &self.compiled {
            Compiled::Own(tests) => tests.satisfies(f, attrs, slot),
            Compiled::Shared { content, at } => {
                content.tests().satisfies(at[f] as usize, attrs, slot)
            }
        }
    }

    /// The bitsets of one name, numbered from 0 in their own arena.
    fn build_name(
        n: NameEntries,
        words: usize,
        per_list: &(impl Fn(usize) -> usize + Sync),
    ) -> (NameIx, Vec<u64>) {
        let mut a = Arena {
            words,
            bits: Vec::new(),
        };
        let mut ix = NameIx {
            has: a.add(n.has.iter().copied()),
            ..NameIx::default()
        };
        if !n.num.is_empty() {
            ix.has_num = Some(a.add(n.num.iter().copied()));
        }
        if !n.str.is_empty() {
            ix.has_str = Some(a.add(n.str.iter().copied()));
        }
        let [a0, a1, a2, a3] = n.lens().map(per_list);
        // Numeric bounds of both sides: cells instead of cuts, as many bitsets in all.
        let cells = !n.nl.is_empty() && !n.nu.is_empty();
        let (a0, a1) = if cells { (0, 0) } else { (a0, a1) };
        // Lower: (value, strict) with non-strict first; upper: strict first.
        ix.num_lower = a.bounds(n.nl, a0, |a, b| cmp_num(a.0, b.0).then(a.1.cmp(&b.1)), true);
        ix.num_upper = a.bounds(
            n.nu,
            a1,
            |a, b| cmp_num(a.0, b.0).then(b.1.cmp(&a.1)),
            false,
        );
        if cells {
            let n = per_list(ix.num_lower.keys.len()) + per_list(ix.num_upper.keys.len());
            ix.num_cells = Some(Cells::new(&ix.num_lower, &ix.num_upper, n, &mut a));
        }
        ix.num_lower.ints = IntKeys::of(&ix.num_lower.keys, true);
        ix.num_upper.ints = IntKeys::of(&ix.num_upper.keys, false);
        ix.str_lower = a.bounds(n.sl, a2, |a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)), true);
        ix.str_upper = a.bounds(n.su, a3, |a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)), false);
        (ix, a.bits)
    }

    /// Number of filters indexed.
    pub fn filters(&self) -> usize {
        self.iface.len()
    }

    /// Number of names the filters constrain.
    pub fn names(&self) -> usize {
        self.names.len()
    }

    /// 64-bit words per bitset (one bit per filter).
    pub fn words(&self) -> usize {
        self.words
    }

    /// First step of a match: lists the bitsets to OR and the gaps for an event whose
    /// names are numbered (`slot`, `ids`, as `Names::slots` fills them, with the
    /// numbering of [`crate::content_index`], which interns names in the same order);
    /// returns how many bitsets. [`ValueIndex::run_plan`] completes the match.
    pub(crate) fn plan<A: Attrs>(
        &self,
        attrs: A,
        slot: &[u32],
        ids: &[u32],
        scratch: &mut ValueScratch,
    ) -> usize {
        let ValueScratch {
            present,
            list,
            by_name,
            names_bits,
            gaps,
            ..
        } = scratch;
        list.clear();
        gaps.clear();
        *names_bits = 0;
        for &id in ids {
            present[id as usize] = true;
            let n = &self.by_name[id as usize];
            let v = attrs.value(slot[id as usize] as usize - 1);
            let (other, lo, hi) = match v {
                AttrValue::Str(x) => (
                    n.has_num,
                    n.str_lower.lower(|k| (**k).cmp(x)),
                    n.str_upper.upper(|k| (**k).cmp(x)),
                ),
                AttrValue::Num(x) => {
                    let vs_x = |k: &Num| cmp_num(*k, x);
                    let (l, u) = (&n.num_lower, &n.num_upper);
                    let (pl, pu) = match (x, &l.ints, &u.ints) {
                        (Num::Int(x), Some(li), Some(ui)) => (li.position(x), ui.position(x)),
                        _ => (l.lower_position(vs_x), u.upper_position(vs_x)),
                    };
                    match &n.num_cells {
                        Some(c) => {
                            let (b, (l0, l1), (u0, u1)) =
                                c.lookup(pl, pu, (l.keys.len(), u.keys.len()));
                            (n.has_str, (Some(b), l0, l1), (None, u0, u1))
                        }
                        None => (n.has_str, l.lower_at(pl), u.upper_at(pu)),
                    }
                }
            };
            let which = if matches!(v, AttrValue::Str(_)) { 2 } else { 0 };
            for (j, (_, from, to)) in [(which, lo), (which + 1, hi)] {
                if from < to {
                    gaps.push((id, j, from, to));
                }
            }
            let own = [other, lo.0, hi.0];
            by_name[id as usize] = own.map(|b| b.unwrap_or(NONE));
            list.extend(own.into_iter().flatten());
            *names_bits |= 1u64.checked_shl(id).unwrap_or(0);
        }
        for (n, ix) in self.by_name.iter().enumerate() {
            if present[n] {
                present[n] = false;
            } else {
                list.push(ix.has);
            }
        }
        list.len()
    }

    /// The 64-bit words the value index ORs at least for an event with `k` of its names
    /// (one bitset per absent name; none when it scans by set of names).
    pub(crate) fn absent_words(&self, k: usize) -> usize {
        if self.classes.as_ref().is_some_and(|c| c.better[k]) {
            0
        } else {
            (self.names.len() - k) * self.words
        }
    }

    /// The filters of a gap.
    fn gap(&self, &(name, list, from, to): &(u32, u8, u32, u32)) -> &[u32] {
        let n = &self.by_name[name as usize];
        let fids = match list {
            0 => &n.num_lower.fids,
            1 => &n.num_upper.fids,
            2 => &n.str_lower.fids,
            _ => &n.str_upper.fids,
        };
        &fids[from as usize..to as usize]
    }

    /// Second step: marks the gaps (unless early-stopping), ORs the planned bitsets chunk
    /// by chunk and takes the filters left unmarked; returns the matched interfaces.
    pub(crate) fn run_plan<A: Attrs>(
        &self,
        attrs: A,
        slot: &[u32],
        ids: &[u32],
        scratch: &mut ValueScratch,
    ) -> Vec<InterfaceId> {
        let ValueScratch {
            list,
            by_name,
            names_bits,
            gaps,
            acc,
            mark,
            matched,
            ..
        } = scratch;
        let scratch_names = (&by_name[..], *names_bits);
        let ids_len = ids.len();
        if !self.early_stop {
            for g in gaps.iter() {
                for &f in self.gap(g) {
                    mark[f as usize / 64] |= 1 << (f % 64);
                }
            }
        }
        match &self.classes {
            Some(classes) if classes.better[ids_len] => {
                self.scan_classes(&classes.sets, attrs, slot, scratch_names, mark, matched);
                // Clear the marks: bound by bound (a random store each), or every word
                // in order (a fraction of that per word) when the gaps are long.
                let marked: usize = gaps
                    .iter()
                    .map(|&(_, _, from, to)| (to - from) as usize)
                    .sum();
                if marked * 4 >= mark.len() {
                    mark.fill(0);
                } else {
                    for g in gaps.iter() {
                        for &f in self.gap(g) {
                            mark[f as usize / 64] = 0;
                        }
                    }
                }
            }
            _ => self.scan(attrs, slot, list, acc, mark, matched),
        }
        match self.id_offset {
            Some(c) => matched.take(|i| InterfaceId(i as u32 + c)),
            None => matched.take(|i| self.interfaces[i]),
        }
    }

    /// The filters by set of names: only the sets within the event's names can match, and
    /// a filter of a set has bits only in the bitsets of the set's names, so each set's
    /// range of filters is OR-ed with those few bitsets and `mark`, and its filters whose
    /// bit stayed 0 are taken (verified when a constraint is not a bound). No OR for the
    /// absent names, none over filters that constrain one.
    fn scan_classes<A: Attrs>(
        &self,
        classes: &[(u64, u32, u32)],
        attrs: A,
        slot: &[u32],
        (by_name, names_bits): (&[[u32; 3]], u64),
        mark: &[u64],
        matched: &mut Hits,
    ) {
        let words = self.words;
        let mut own: Vec<usize> = Vec::with_capacity(3 * 64);
        let mut at = 0;
        while let Some(&(m, start, end)) = classes.get(at) {
            if m & !names_bits != 0 {
                // Not within the event's names: on to the first set that can be.
                match next_within(m, names_bits) {
                    Some(y) => at = skip_to(classes, at, y),
                    None => break,
                }
                continue;
            }
            at += 1;
            own.clear();
            let mut names = m;
            while names != 0 {
                let n = names.trailing_zeros() as usize;
                names &= names - 1;
                for &b in &by_name[n] {
                    if b != NONE {
                        own.push(b as usize * words);
                    }
                }
            }
            let (start, end) = (start as usize, end as usize);
            let (w0, w1) = (start / 64, (end - 1) / 64 + 1);
            for ((w, &marked), &check) in (w0..w1).zip(&mark[w0..w1]).zip(&self.verify[w0..w1]) {
                let acc = own.iter().fold(marked, |a, &at| a | self.bits[at + w]);
                // The set's filters within this word.
                let lo = start.saturating_sub(w * 64).min(64);
                let hi = (end - w * 64).min(64);
                let range = (u64::MAX >> (64 - (hi - lo))) << lo;
                let mut z = !acc & range;
                while z != 0 {
                    let b = z.trailing_zeros();
                    z &= z - 1;
                    let f = w * 64 + b as usize;
                    let i = self.iface[f];
                    if (self.single || !matched.has(i))
                        && (check >> b & 1 == 0 || self.satisfies(f, attrs, slot))
                    {
                        matched.set(i);
                    }
                }
            }
        }
    }

    /// ORs words `w..w + acc.len()` of `list`'s bitsets into `acc`, four bitsets at a
    /// time: each word of `acc` is loaded and stored once per four bitsets instead of once
    /// per bitset (the loop is bound by those loads and stores, not by the ORs).
    #[inline]
    fn or_into(&self, acc: &mut [u64], list: &[u32], w: usize) {
        let (n, words) = (acc.len(), self.words);
        let row = |b: u32| &self.bits[b as usize * words + w..][..n];
        let mut quads = list.chunks_exact(4);
        for q in &mut quads {
            let (b0, b1, b2, b3) = (row(q[0]), row(q[1]), row(q[2]), row(q[3]));
            for (i, a) in acc.iter_mut().enumerate() {
                *a |= b0[i] | b1[i] | b2[i] | b3[i];
            }
        }
        for &b in quads.remainder() {
            for (a, x) in acc.iter_mut().zip(row(b)) {
                *a |= *x;
            }
        }
    }

    /// The OR of `list`'s bitsets (and of `mark`, when marking), chunk by chunk, and the
    /// filters whose bit stayed 0 (interface not matched yet): verified when
    /// early-stopping or when a constraint of theirs is not a bound, taken as matches
    /// otherwise. Every word of `mark` is read once, in order, and zeroed as it is read
    /// (or skipped), so that it is all zero again for the next event.
    fn scan<A: Attrs>(
        &self,
        attrs: A,
        slot: &[u32],
        list: &[u32],
        acc: &mut [u64],
        mark: &mut [u64],
        matched: &mut Hits,
    ) {
        let (n, words) = (self.iface.len(), self.words);
        let mut w = 0;
        let mut chunk = MIN_CHUNK;
        while w < words {
            let i0 = self.iface[w * 64];
            // Interfaces are contiguous only in interface order.
            if self.classes.is_none() && matched.has(i0) {
                let skip = self.iface_end[i0 as usize] as usize / 64;
                if skip > w {
                    if !self.early_stop {
                        mark[w..skip].fill(0);
                    }
                    w = skip;
                    continue;
                }
            }
            let we = (w + chunk).min(words);
            let acc = &mut acc[..we - w];
            if self.early_stop {
                acc.fill(0);
            } else {
                acc.copy_from_slice(&mark[w..we]);
                mark[w..we].fill(0);
            }
            self.or_into(acc, list, w);
            let mut skip_next = false;
            for (k, &a) in acc.iter().enumerate() {
                let base = (w + k) * 64;
                let mut z = !a;
                if n - base < 64 {
                    z &= (1u64 << (n - base)) - 1;
                }
                let check = if self.early_stop {
                    !0
                } else {
                    self.verify[w + k]
                };
                while z != 0 {
                    let b = z.trailing_zeros();
                    z &= z - 1;
                    let f = base + b as usize;
                    let i = self.iface[f];
                    if (self.single || !matched.has(i))
                        && (check >> b & 1 == 0 || self.satisfies(f, attrs, slot))
                    {
                        matched.set(i);
                        // (With one filter per interface no interface is skipped.)
                        skip_next |= !self.single && self.iface_end[i as usize] as usize > we * 64;
                    }
                }
            }
            // Short chunks while whole interfaces can be skipped, longer ones otherwise.
            chunk = if skip_next {
                MIN_CHUNK
            } else {
                (chunk * 2).min(MAX_CHUNK)
            };
            w = we;
        }
    }

    /// The interfaces whose predicate matches the event of `attrs` (heap or batch),
    /// ascending by id, reusing `scratch` (one per thread).
    fn match_attrs_with<A: Attrs>(&self, attrs: A, scratch: &mut ValueScratch) -> Vec<InterfaceId> {
        if scratch.slot.len() != self.names.len()
            || scratch.matched.room() != self.interfaces.len().div_ceil(64) * 64
        {
            *scratch = self.scratch();
        }
        let (mut slot, mut ids) = (
            std::mem::take(&mut scratch.slot),
            std::mem::take(&mut scratch.ids),
        );
        attrs.slots(&self.names, &mut slot, &mut ids);
        let out = if ids.is_empty() {
            // None of the event's names is constrained: nothing matches.
            Vec::new()
        } else {
            self.plan(attrs, &slot, &ids, scratch);
            self.run_plan(attrs, &slot, &ids, scratch)
        };
        for &id in &ids {
            slot[id as usize] = 0;
        }
        (scratch.slot, scratch.ids) = (slot, ids);
        out
    }
}

impl Matcher for ValueIndex {
    fn scratch_pool(&self) -> Option<&ScratchPool<ValueScratch>> {
        Some(&self.pool)
    }

    type Scratch = ValueScratch;

    /// Fresh scratch memory for [`ValueIndex::match_event_with`].
    fn scratch(&self) -> ValueScratch {
        ValueScratch {
            slot: vec![0; self.names.len()],
            ids: Vec::new(),
            present: vec![false; self.names.len()],
            list: Vec::new(),
            by_name: vec![[NONE; 3]; self.names.len()],
            names_bits: 0,
            gaps: Vec::new(),
            acc: vec![0; MAX_CHUNK + 1],
            mark: if self.early_stop {
                Vec::new()
            } else {
                vec![0; self.words]
            },
            matched: Hits::new(self.interfaces.len()),
        }
    }

    /// The interfaces whose predicate matches `e`, ascending by id, reusing `scratch` (one
    /// per thread).
    fn match_event_with(&self, e: &Event, scratch: &mut ValueScratch) -> Vec<InterfaceId> {
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
        scratch: &mut ValueScratch,
    ) -> Vec<InterfaceId> {
        let mut fresh = None;
        let names = self.names.checked(batch, names, &mut fresh);
        self.match_attrs_with(BatchAttrs::new(batch, names, i), scratch)
    }

    /// An estimate of the heap bytes of the index.
    fn heap_bytes(&self) -> usize {
        let names: usize = self
            .by_name
            .iter()
            .map(|n| {
                n.num_lower.heap_bytes(|_| 0)
                    + n.num_upper.heap_bytes(|_| 0)
                    + n.num_cells.as_ref().map_or(0, Cells::heap_bytes)
                    + n.str_lower.heap_bytes(|k| k.len())
                    + n.str_upper.heap_bytes(|k| k.len())
            })
            .sum();
        self.names.heap_bytes()
            + names
            + self.by_name.capacity() * std::mem::size_of::<NameIx>()
            + (self.iface.capacity() + self.iface_end.capacity()) * 4
            + match &self.compiled {
                Compiled::Own(tests) => tests.heap_bytes(),
                // The content index's are counted with it.
                Compiled::Shared { at, .. } => at.capacity() * 4,
            }
            + (self.bits.capacity() + self.verify.capacity()) * 8
            + self.interfaces.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiled::tests::sub;
    use crate::Matcher;

    #[test]
    fn a_value_index_verifying_through_the_content_index_answers_as_one_with_its_own() {
        use ccm::workload::{generate, generate_dense, DenseParams, Params};
        let mut workloads = Vec::new();
        for interfaces in [None, Some(10)] {
            for names_per_event in [(3, 5), (20, 20)] {
                let p = DenseParams {
                    events: 40,
                    filters: 3000,
                    interfaces,
                    names_per_event,
                    ..DenseParams::default()
                };
                workloads.push(generate_dense(&p, 3).unwrap());
            }
        }
        // Every operator (`!=` and substrings are verified): Table 1's model, small,
        // with few interfaces (verified whole) and with one filter each.
        for (interfaces, per) in [(3, (300, 400)), (600, (1, 1))] {
            let p = Params {
                events: 100,
                interfaces,
                filters_per_interface: per,
                names: 8,
                values: 4,
                ..Params::default()
            };
            workloads.push(generate(&p, 4).unwrap());
        }
        for w in &workloads {
            let own = ValueIndex::build(&w.subscriptions).unwrap();
            let (content, position) = ContentIndex::build_ordered(&w.subscriptions).unwrap();
            let (mut shared, order) = ValueIndex::build_to_share(&w.subscriptions).unwrap();
            shared.share(Arc::new(content), &position, &order);
            assert!(shared.heap_bytes() < own.heap_bytes());
            let mut matched = 0;
            for e in &w.events {
                let want = own.match_event(e);
                matched += want.len();
                assert_eq!(shared.match_event(e), want);
            }
            assert!(matched > 0, "some events match");
        }
    }

    #[test]
    fn the_skip_lands_on_the_least_set_within_the_names_after_one_that_is_not() {
        // Every set of 6 names, against a few sets of names of the event.
        let sets: Vec<(u64, u32, u32)> = (0..64u64).map(|m| (m, 0, 1)).collect();
        for names in [0b101101u64, 0b000001, 0b111110, 0b100000, 0] {
            for m in (0..64u64).filter(|m| m & !names != 0) {
                let want = (m + 1..64).find(|y| y & !names == 0);
                let got = next_within(m, names);
                // `got` may lie beyond the 6 names (no set there).
                assert_eq!(got.filter(|&y| y < 64), want, "m {m:b} names {names:b}");
                let at = m as usize;
                let land = got.map_or(sets.len(), |y| skip_to(&sets, at, y));
                assert_eq!(land, want.map_or(64, |y| y as usize));
            }
        }
        assert_eq!(next_within(1 << 63, 1), None);
    }

    #[test]
    fn the_search_down_the_fences_finds_the_position_a_binary_search_finds() {
        // Lists of every length around the fence sizes (one, two and three levels), with
        // runs of equal keys, against every threshold in and around them.
        for len in (0..40).chain([255, 256, 257, 4095, 4096, 4097, 5000]) {
            let keys: Vec<(i64, bool)> = (0..len as i64).map(|i| (i / 3, i % 2 == 0)).collect();
            let b = Bounds {
                fences: fences_of(&keys),
                keys,
                fids: Vec::new(),
                cuts: Vec::new(),
                ints: None,
            };
            for x in -1..=(len as i64 / 3 + 1) {
                for strict in [false, true] {
                    // Holds for a prefix of the keys (sorted by value), as the lookups'.
                    let mono = |&(k, _): &(i64, bool)| k < x || (k == x && strict);
                    assert_eq!(
                        b.position(mono),
                        b.keys.partition_point(mono),
                        "len {len} x {x} strict {strict}"
                    );
                }
            }
        }
    }

    #[test]
    fn integer_codes_find_the_positions_the_comparisons_find() {
        // Runs of equal keys, strict and not, near the ends of the code range.
        let big = (1i64 << 62) - 1;
        let mut vals: Vec<i64> = (0..3000).map(|i| i / 4 - 100).collect();
        vals.extend([-big, -big, big, big]);
        for lower in [true, false] {
            let mut keys: Vec<(Num, bool)> = (vals.iter().enumerate())
                .map(|(i, &v)| (Num::Int(v), i % 3 == 0))
                .collect();
            // The lists' orders: lower non-strict first, upper strict first.
            keys.sort_by(|a, b| {
                cmp_num(a.0, b.0).then(if lower { a.1.cmp(&b.1) } else { b.1.cmp(&a.1) })
            });
            let b = Bounds {
                fences: fences_of(&keys),
                keys,
                fids: Vec::new(),
                cuts: Vec::new(),
                ints: None,
            };
            let codes = IntKeys::of(&b.keys, lower).expect("integers below 2^62");
            for x in (-120..700).chain([-big - 1, -big, big, big + 1, i64::MIN, i64::MAX]) {
                let vs_x = |k: &Num| cmp_num(*k, Num::Int(x));
                let want = if lower {
                    b.lower_position(vs_x)
                } else {
                    b.upper_position(vs_x)
                };
                assert_eq!(codes.position(x), want, "lower {lower} x {x}");
            }
        }
        assert!(IntKeys::of(&[(Num::Int(1 << 62), false)], true).is_none());
        assert!(IntKeys::of(&[(Num::Float(0.5), false)], true).is_none());
    }

    #[test]
    fn the_end_of_a_prefix_range_is_the_next_string_after_every_extension() {
        assert_eq!(after_prefix(b"ab").as_deref(), Some(&b"ac"[..]));
        assert_eq!(after_prefix(b"a\xff").as_deref(), Some(&b"b"[..]));
        assert_eq!(after_prefix(b"\xff\xff"), None);
        assert_eq!(after_prefix(b""), None);
    }

    #[test]
    fn ranges_on_one_name_match_inside_and_fail_outside_with_the_strictness_of_each_bound() {
        let subs = vec![
            sub(
                1,
                &[("x", Op::Ge, Value::Int(10)), ("x", Op::Le, Value::Int(20))],
            ),
            sub(
                2,
                &[("x", Op::Gt, Value::Int(10)), ("x", Op::Lt, Value::Int(20))],
            ),
            sub(3, &[("x", Op::Eq, Value::Float(20.0))]),
            sub(4, &[("s", Op::Prefix, Value::Str("ab".into()))]),
            sub(5, &[("s", Op::Eq, Value::Str("ab".into()))]),
        ];
        let ix = ValueIndex::build(&subs).unwrap();
        let ev = |pairs: Vec<(&str, Value)>| Event::from_pairs(pairs).unwrap();
        let ids = |v: &[u32]| v.iter().map(|&i| InterfaceId(i)).collect::<Vec<_>>();
        assert_eq!(ix.match_event(&ev(vec![("x", Value::Int(10))])), ids(&[1]));
        assert_eq!(
            ix.match_event(&ev(vec![("x", Value::Int(15))])),
            ids(&[1, 2])
        );
        assert_eq!(
            ix.match_event(&ev(vec![("x", Value::Int(20))])),
            ids(&[1, 3])
        );
        assert_eq!(
            ix.match_event(&ev(vec![("x", Value::Float(20.5))])),
            ids(&[])
        );
        assert_eq!(
            ix.match_event(&ev(vec![("x", Value::Str("15".into()))])),
            ids(&[])
        );
        assert_eq!(
            ix.match_event(&ev(vec![("s", Value::Str("ab".into()))])),
            ids(&[4, 5])
        );
        assert_eq!(
            ix.match_event(&ev(vec![("s", Value::Str("abz".into()))])),
            ids(&[4])
        );
        assert_eq!(
            ix.match_event(&ev(vec![("s", Value::Str("ac".into()))])),
            ids(&[])
        );
        assert_eq!(ix.match_event(&ev(vec![("y", Value::Int(1))])), ids(&[]));
    }
}
