//! A bit index for integer range predicates (HEM class): per name, value cells each with
//! a precomputed bitset of the filters that fail anywhere in the cell, so an event costs
//! one word-parallel OR per name it carries, the marking of the few bounds inside its
//! cell, and a scan of the final bitset for the answers.
//!
//! Where the ideas come from:
//! - REIN (Qian, Cao, Li, Wang & Zhu, INFOCOM 2014): match by marking the *failing*
//!   subscriptions of each attribute (a low bound above the value, a high bound below it);
//!   what no attribute marks matches.
//! - HEM (Shi & Qian, DASFAA 2022, and the authors' HEM5 / HEM5_avxOR code): precomputed
//!   bitsets over all subscriptions at *workload-balanced* cut points of each attribute's
//!   value cells, so most failing subscriptions come from a few word ORs and only the
//!   bounds between the value and a cut are marked one by one; SIMD ORs (AVX2); an
//!   attribute the event lacks ORs the bitset of every subscription constraining it.
//!   HEM keeps one cumulative bitset family per side (low, high) and per cell picks the
//!   cheaper of marking towards the lower cut or copying the upper one and unmarking
//!   ("double reverse"), so a present attribute costs two ORs and a copy.
//! - Here, instead, both sides of a name share one bitset per cell: the filters whose low
//!   bound lies above the cell or whose high bound lies below it fail for every value in
//!   the cell. Marking the bounds inside the cell then costs what HEM's nearer-cut
//!   marking costs at the same memory (half the cell's bounds on average, against a
//!   quarter of a twice-as-long gap on each side), with one OR instead of two and no copy.
//!   Cells split each name's bounds evenly (HEM's workload balance); a name with few
//!   bounds gets fewer cells.
//! - Beyond HEM: the names are taken in groups of up to five, and each group keeps the
//!   union of the constrained-filter bitsets of every subset of its names, so all the
//!   names an event lacks cost one OR per group instead of one per name (3-5 names of 20:
//!   four ORs instead of sixteen).
//! - Beyond HEM: the filters are processed in segments of 65,536 (8 KiB of bits): per
//!   segment every source bitset is OR-ed in, up to four per pass, into an accumulator
//!   that stays in the first-level cache, the cell's bounds of that segment (stored per
//!   cell and segment, as 16-bit offsets) are marked there, and the segment's answers are
//!   listed while it is hot: one pass over the memory of each source and none over a
//!   million-bit accumulator.
//! - The listing (HEM counts, the CCM model answers interfaces): the final bitset is read
//!   a word at a time, each clear bit found by `trailing_zeros`; filters are numbered in
//!   interface order, so the answers come out ascending without a sort (an interface of
//!   several filters is written once).
//! - BG-Tree (Shi & Qian's BGTree in the same suite): a node keeps its subscriptions' ids
//!   instead of a bitset while the ids take less memory than the bitset
//!   (`boundaryNumSub`). Here the same trade per name: a name with few bounds gets few
//!   cells ([`Cells::bytes_per_bound`]), its bounds marked one by one from the lists.
//! - All cores: pHEM (HEM5's `match_parallel`) splits one event's attributes over a
//!   thread pool, each thread ORing into its own bitset, then merges them. Here, as in
//!   the suite's own all-thread runs, whole events go to the threads
//!   ([`Matcher::match_parallel`], [`Matcher::match_batch_parallel`]): each thread keeps
//!   one [`BitScratch`] (its L1 accumulator, codes and source lists) for every event it
//!   matches, nothing is merged, and an event allocates only its answer.
//! - The events are read in place from a batch ([`ccm::batch::EventBatch`]) as from heap
//!   events, and [`crate::hybrid_index`] runs this index over the name index's numbering
//!   of names (one array read per name), where it answers the events with many names.
//!
//! What it indexes: filters whose every constraint is `=`, `<`, `<=`, `>` or `>=` on an
//! integer (or an integral float) of magnitude below 2^61. [`BitIndex::build`] refuses
//! anything else with [`BitIndexError::Unsupported`], so that a caller can fall back to
//! an index of the whole model. Events may carry any values: an integer or a float is
//! compared exactly (see [`code_of`]), a string fails every constraint of its name, as
//! an absent name does. Exact for what it accepts: the tests check it against
//! [`crate::sff::Sff`].

use crate::compiled::{AttrValue, Attrs, BatchAttrs, Names, NO_NAME};
use crate::matcher::{BatchNames, ScratchPool};
use crate::sff::Num;
use crate::Matcher;
use ccm::batch::EventBatch;
use ccm::hash::FastMap;
use ccm::model::{Event, InterfaceId, ModelError, Op, Subscription, Value};
use rayon::prelude::*;

/// Filters per segment (the 16-bit offsets of the marked bounds).
const SEG_BITS: usize = 1 << 16;
const SEG_WORDS: usize = SEG_BITS / 64;
/// The largest key magnitude (codes are `2v` or `2v +- 1`).
const MAX_KEY: i64 = 1 << 61;

/// How many cells a name gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cells {
    /// At most this many cells per name (each a bitset of `filters / 8` bytes). 128 by
    /// default: the memory of HEM5DD's bit exponent 6 (63 cut bitsets per side), and on
    /// the dense model at a million filters a tenth faster than 64 cells.
    pub max: usize,
    /// At least this many bounds per cell: a name with few bounds gets fewer cells.
    pub min_bounds: usize,
    /// At most this many bytes of cell bitsets per bound of the name (64: the dense
    /// model's names get every cell; a name few filters constrain gets few, so that
    /// many such names do not cost a bitset each per cell).
    pub bytes_per_bound: usize,
}

impl Default for Cells {
    fn default() -> Self {
        Cells {
            max: 128,
            min_bounds: 32,
            bytes_per_bound: 64,
        }
    }
}

/// Why [`BitIndex::build`] refused the subscriptions.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BitIndexError {
    #[error("subscription {index}: {source}")]
    Model {
        index: usize,
        #[source]
        source: ModelError,
    },
    #[error(
        "subscription {index}: `{name} {op} {value}` is not indexed (only = < <= > >= on integers below 2^61 in magnitude)"
    )]
    Unsupported {
        index: usize,
        name: String,
        op: Op,
        value: Value,
    },
    #[error("more than {} filters or bounds", u32::MAX - 1)]
    TooLarge,
}

/// One name's cells: the cell bitsets and the bounds inside each cell, per segment.
#[derive(Debug, Clone)]
struct NameCells {
    /// Cell `c` holds the codes `bounds[c - 1] .. bounds[c]` (open at both ends).
    bounds: Vec<i64>,
    /// `cells * words`: the filters that fail for every value of the cell.
    fail: Vec<u64>,
    /// Low bounds (`code > t` fails), grouped by `(cell, segment)`, ascending by code in
    /// a group; `low_start` has `cells * segments + 1` group starts.
    low: Marks,
    /// High bounds (`code < t` fails), grouped the same way.
    high: Marks,
    /// The name's group and its bit in the group.
    group: u32,
    bit: u32,
}

#[derive(Debug, Clone, Default)]
struct Marks {
    code: Codes,
    /// The filter's offset in its segment.
    off: Vec<u16>,
    start: Vec<u32>,
}

/// A bound list's codes: as `u32` offsets from the name's smallest code where the name's
/// codes span less than 2^32 (a third less memory to stream per mark), else as they are.
#[derive(Debug, Clone)]
enum Codes {
    Narrow { base: i64, code: Vec<u32> },
    Wide(Vec<i64>),
}

impl Default for Codes {
    fn default() -> Self {
        Codes::Wide(Vec::new())
    }
}

impl Codes {
    fn heap_bytes(&self) -> usize {
        match self {
            Codes::Narrow { code, .. } => code.capacity() * 4,
            Codes::Wide(code) => code.capacity() * 8,
        }
    }

    /// Marks the filters of `range` whose bound fails for the value coded `t`: low bounds
    /// above it (a suffix, read from the end), or high bounds below it (a prefix).
    #[inline]
    fn mark(&self, range: std::ops::Range<usize>, off: &[u16], t: i64, low: bool, acc: &mut [u64]) {
        match self {
            Codes::Narrow { base, code } => mark(
                &code[range.clone()],
                &off[range],
                t.saturating_sub(*base),
                low,
                acc,
            ),
            Codes::Wide(code) => mark(&code[range.clone()], &off[range], t, low, acc),
        }
    }
}

/// See [`Codes::mark`]; `codes` ascending.
#[inline(always)]
fn mark<K: Copy + Into<i64>>(codes: &[K], off: &[u16], t: i64, low: bool, acc: &mut [u64]) {
    if low {
        for (&k, &o) in codes.iter().zip(off).rev() {
            if k.into() <= t {
                break;
            }
            acc[o as usize / 64] |= 1 << (o % 64);
        }
    } else {
        for (&k, &o) in codes.iter().zip(off) {
            if k.into() >= t {
                break;
            }
            acc[o as usize / 64] |= 1 << (o % 64);
        }
    }
}

/// The unions of the constrained-filter bitsets of every subset of a group's names.
#[derive(Debug, Clone)]
struct Group {
    /// `(1 << names) * words`; subset 0 is empty and never read.
    unions: Vec<u64>,
}

/// The bit index (see the module docs).
#[derive(Debug, Clone)]
pub struct BitIndex {
    filters: usize,
    words: usize,
    segments: usize,
    /// The names, numbered in natural order (`n2` before `n10`).
    ids: Names,
    /// The names by number.
    name_list: Vec<String>,
    names: Vec<NameCells>,
    groups: Vec<Group>,
    /// The interface of each filter, ascending.
    iface: Vec<u32>,
    /// Whether filter `i` is interface `i` (one filter per interface, ids `0..n`).
    identity: bool,
    /// Its threads' scratch kept between calls on all cores.
    pool: ScratchPool<BitScratch>,
}

/// One matching thread's scratch memory.
#[derive(Debug, Clone, Default)]
pub struct BitScratch {
    acc: Vec<u64>,
    /// Per name: 1 + the index of the event's attribute of that name, or 0 (kept 0
    /// between events).
    slot: Vec<u32>,
    /// The event's numbered names.
    names: Vec<u32>,
    /// Per name: the event's code, or `None` (absent or a string).
    code: Vec<Option<i64>>,
    /// The present names with their cell.
    present: Vec<(u32, u32, i64)>,
    /// The sources to OR: `(true, name, cell)` or `(false, group, subset)`.
    sources: Vec<(bool, u32, u32)>,
    /// Per group, the subset of its names the event lacks.
    absent: Vec<u32>,
    /// The length of the last answer.
    last: usize,
}

/// The code of an event value against which bound codes compare: `2x` for an integer
/// `x`, `2 floor(x) + 1` for a non-integral float, saturated beyond every key.
///
/// A low bound on `v` is coded `2v` (`>=`, `=`) or `2v + 1` (`>`) and holds iff its code
/// is at most the value's; a high bound `2v` (`<=`, `=`) or `2v - 1` (`<`) holds iff
/// its code is at least the value's. For an integer `x` that is `v <= x`, `v < x`,
/// `v >= x`, `v > x`; for a non-integral `x` both `v <= x` and `v < x` are
/// `v <= floor(x)`, both `v >= x` and `v > x` are `v >= floor(x) + 1`.
pub fn code_of(v: &Value) -> Option<i64> {
    Num::of(v).map(code_of_num)
}

/// [`code_of`] of a number.
#[inline]
fn code_of_num(n: Num) -> i64 {
    match n {
        Num::Int(x) => x.saturating_mul(2),
        Num::Float(x) => {
            if x >= MAX_KEY as f64 {
                i64::MAX
            } else if x <= -(MAX_KEY as f64) {
                i64::MIN
            } else if x.fract() == 0.0 {
                2 * x as i64
            } else {
                2 * x.floor() as i64 + 1
            }
        }
    }
}

/// [`code_of`] of an attribute's value as the indexes read it (heap or batch).
#[inline]
fn code_of_attr(v: AttrValue<'_>) -> Option<i64> {
    match v {
        AttrValue::Num(n) => Some(code_of_num(n)),
        AttrValue::Str(_) => None,
    }
}

/// The integer of a constraint value, when it is one (or an integral float) below
/// [`MAX_KEY`] in magnitude.
fn key_of(v: &Value) -> Option<i64> {
    match *v {
        Value::Int(x) if x > -MAX_KEY && x < MAX_KEY => Some(x),
        Value::Float(x) if x.fract() == 0.0 && x > -(MAX_KEY as f64) && x < MAX_KEY as f64 => {
            Some(x as i64)
        }
        _ => None,
    }
}

impl BitIndex {
    /// Builds the index with [`Cells::default`].
    pub fn build(subs: &[Subscription]) -> Result<BitIndex, BitIndexError> {
        Self::build_with(subs, Cells::default())
    }

    /// Builds the index, or refuses subscriptions it does not index (see the module docs).
    pub fn build_with(subs: &[Subscription], cells: Cells) -> Result<BitIndex, BitIndexError> {
        let bounds: usize = subs.iter().map(|s| 2 * s.filter.constraints.len()).sum();
        if subs.len() >= u32::MAX as usize || bounds >= u32::MAX as usize {
            return Err(BitIndexError::TooLarge);
        }
        // Filters in interface order (stable), so answers come out ascending.
        let mut order: Vec<u32> = (0..subs.len() as u32).collect();
        order.sort_by_key(|&i| subs[i as usize].interface);
        let iface: Vec<u32> = order
            .iter()
            .map(|&i| subs[i as usize].interface.0)
            .collect();
        let identity = iface.iter().enumerate().all(|(i, &f)| f as usize == i);

        // Names in natural order (shorter first, then bytes: n2 before n10).
        let mut seen: FastMap<&str, ()> = FastMap::default();
        for (index, s) in subs.iter().enumerate() {
            s.filter
                .validate()
                .map_err(|source| BitIndexError::Model { index, source })?;
            for c in &s.filter.constraints {
                let bad = || BitIndexError::Unsupported {
                    index,
                    name: c.name.clone(),
                    op: c.op,
                    value: c.value.clone(),
                };
                if key_of(&c.value).is_none()
                    || !matches!(c.op, Op::Eq | Op::Lt | Op::Le | Op::Gt | Op::Ge)
                {
                    return Err(bad());
                }
                seen.insert(&c.name, ());
            }
        }
        let mut name_list: Vec<&str> = seen.into_keys().collect();
        name_list.sort_unstable_by(|a, b| (a.len(), *a).cmp(&(b.len(), *b)));
        let mut ids = Names::default();
        for n in &name_list {
            ids.intern(n);
        }
        let d = name_list.len();

        // Low and high bounds per name.
        let mut lows: Vec<Vec<(i64, u32)>> = vec![Vec::new(); d];
        let mut highs: Vec<Vec<(i64, u32)>> = vec![Vec::new(); d];
        for (f, &i) in order.iter().enumerate() {
            for c in &subs[i as usize].filter.constraints {
                let a = ids.get(&c.name).expect("numbered") as usize;
                let v = key_of(&c.value).expect("checked");
                match c.op {
                    Op::Ge => lows[a].push((2 * v, f as u32)),
                    Op::Gt => lows[a].push((2 * v + 1, f as u32)),
                    Op::Le => highs[a].push((2 * v, f as u32)),
                    Op::Lt => highs[a].push((2 * v - 1, f as u32)),
                    Op::Eq => {
                        lows[a].push((2 * v, f as u32));
                        highs[a].push((2 * v, f as u32));
                    }
                    _ => unreachable!("checked"),
                }
            }
        }
        let filters = subs.len();
        let words = filters.div_ceil(64);
        let segments = filters.div_ceil(SEG_BITS);

        // Groups of names for the absent ones: five names (32 unions) while that costs
        // at most eight bitsets a name, else one (the name's own bitset).
        let g = if d <= 40 { 5 } else { 1 };
        let group_of = |a: usize| (a / g) as u32;
        let bit_of = |a: usize| (a % g) as u32;

        let names: Vec<NameCells> = (0..d)
            .into_par_iter()
            .map(|a| name_cells(&lows[a], &highs[a], cells, filters, group_of(a), bit_of(a)))
            .collect();

        // The constrained filters of each name, then the groups' unions.
        let constrained: Vec<Vec<u64>> = (0..d)
            .into_par_iter()
            .map(|a| {
                let mut b = vec![0u64; words];
                for &(_, f) in lows[a].iter().chain(&highs[a]) {
                    b[f as usize / 64] |= 1 << (f % 64);
                }
                b
            })
            .collect();
        let groups: Vec<Group> = (0..d.div_ceil(g))
            .into_par_iter()
            .map(|gi| {
                let members = &constrained[gi * g..(gi * g + g).min(d)];
                let subsets = 1usize << members.len();
                let mut unions = vec![0u64; subsets * words];
                for m in 1..subsets {
                    let low = m.trailing_zeros() as usize;
                    let rest = m & (m - 1);
                    let (done, todo) = unions.split_at_mut(m * words);
                    let dst = &mut todo[..words];
                    dst.copy_from_slice(&members[low]);
                    if rest != 0 {
                        for (x, y) in dst.iter_mut().zip(&done[rest * words..(rest + 1) * words]) {
                            *x |= y;
                        }
                    }
                }
                Group { unions }
            })
            .collect();

        let name_list = name_list.iter().map(|n| n.to_string()).collect();
        Ok(BitIndex {
            filters,
            words,
            segments,
            ids,
            name_list,
            names,
            groups,
            iface,
            identity,
            pool: ScratchPool::default(),
        })
    }

    /// The number of filters indexed.
    pub fn filters(&self) -> usize {
        self.filters
    }

    /// The 64-bit words it ORs at least for an event with `k` of its names: one bitset
    /// per present name and per group of names with an absent one.
    pub(crate) fn least_words(&self, k: usize) -> usize {
        let d = self.names.len();
        let per_group = d.div_ceil(self.groups.len().max(1)).max(1);
        (k.min(d) + (d - k.min(d)).div_ceil(per_group)) * self.words
    }

    /// The number of each of `names` (another index's numbering of names) in this
    /// index, or [`NO_NAME`]: what [`BitIndex::match_numbered`] takes.
    pub(crate) fn numbering_of(&self, names: &Names) -> Vec<u32> {
        let mut to = vec![NO_NAME; names.len()];
        for (own, name) in self.name_list.iter().enumerate() {
            if let Some(id) = names.get(name) {
                to[id as usize] = own as u32;
            }
        }
        to
    }

    /// The answers to the event of `attrs` (heap or batch), its names numbered by it.
    fn match_attrs<A: Attrs>(&self, attrs: A, s: &mut BitScratch) -> Vec<InterfaceId> {
        s.code.iter_mut().for_each(|c| *c = None);
        attrs.slots(&self.ids, &mut s.slot, &mut s.names);
        for &id in &s.names {
            let k = std::mem::take(&mut s.slot[id as usize]);
            s.code[id as usize] = code_of_attr(attrs.value(k as usize - 1));
        }
        self.answers(s)
    }

    /// The answers to the event of `attrs` whose names another index has numbered
    /// (`slot`: number -> 1 + the attribute's index, `ids`: the event's numbers, as
    /// [`Attrs::slots`] fills them); `to_own` maps that numbering to this index's
    /// ([`BitIndex::numbering_of`]). What the hybrid index runs, over the name index's
    /// numbering.
    pub(crate) fn match_numbered<A: Attrs>(
        &self,
        attrs: A,
        slot: &[u32],
        ids: &[u32],
        to_own: &[u32],
        s: &mut BitScratch,
    ) -> Vec<InterfaceId> {
        s.code.iter_mut().for_each(|c| *c = None);
        for &id in ids {
            let own = to_own[id as usize];
            if own != NO_NAME {
                s.code[own as usize] = code_of_attr(attrs.value(slot[id as usize] as usize - 1));
            }
        }
        self.answers(s)
    }

    /// The answers to the event coded in `s.code`, in a vector with room for a little
    /// more than the last answer (no regrowing while listing).
    fn answers(&self, s: &mut BitScratch) -> Vec<InterfaceId> {
        let mut out = Vec::with_capacity(s.last + s.last / 4 + 16);
        self.match_coded(s, &mut out);
        s.last = out.len();
        out
    }

    /// The answers of the event coded in `s.code` into `out`.
    fn match_coded(&self, s: &mut BitScratch, out: &mut Vec<InterfaceId>) {
        if self.filters == 0 {
            return;
        }
        // Absent names, one union per group; present ones, their cell.
        s.sources.clear();
        s.present.clear();
        let absent = &mut s.absent;
        absent.iter_mut().for_each(|m| *m = 0);
        for (a, nc) in self.names.iter().enumerate() {
            match s.code[a] {
                None => absent[nc.group as usize] |= 1 << nc.bit,
                Some(t) => {
                    let c = nc.bounds.partition_point(|&b| b <= t) as u32;
                    s.present.push((a as u32, c, t));
                    s.sources.push((true, a as u32, c));
                }
            }
        }
        for (gi, &m) in absent.iter().enumerate() {
            if m != 0 {
                s.sources.push((false, gi as u32, m));
            }
        }
        let last_seg = self.segments - 1;
        for seg in 0..self.segments {
            let lo = seg * SEG_WORDS;
            let hi = (lo + SEG_WORDS).min(self.words);
            let acc = &mut s.acc[..hi - lo];
            // OR the sources, four per pass.
            let mut first = true;
            for chunk in s.sources.chunks(4) {
                let mut src: [&[u64]; 4] = [&[]; 4];
                for (k, &(cell, x, y)) in chunk.iter().enumerate() {
                    src[k] = if cell {
                        let off = y as usize * self.words;
                        &self.names[x as usize].fail[off + lo..off + hi]
                    } else {
                        let off = y as usize * self.words;
                        &self.groups[x as usize].unions[off + lo..off + hi]
                    };
                }
                or_sources(acc, &src[..chunk.len()], first);
                first = false;
            }
            if first {
                acc.fill(0);
            }
            // Mark the bounds inside each present name's cell: the low bounds above the
            // value (a suffix of the group), the high ones below it (a prefix), read in
            // order from the group's end and start (a binary search would miss the cache
            // at every step).
            for &(a, c, t) in &s.present {
                let nc = &self.names[a as usize];
                let grp = c as usize * self.segments + seg;
                let (l0, l1) = (nc.low.start[grp] as usize, nc.low.start[grp + 1] as usize);
                nc.low.code.mark(l0..l1, &nc.low.off, t, true, acc);
                let (h0, h1) = (nc.high.start[grp] as usize, nc.high.start[grp + 1] as usize);
                nc.high.code.mark(h0..h1, &nc.high.off, t, false, acc);
            }
            // List the clear bits.
            let base = seg * SEG_BITS;
            let n = acc.len();
            for (w, &x) in acc.iter().enumerate() {
                let mut m = !x;
                if seg == last_seg && w == n - 1 && !self.filters.is_multiple_of(64) {
                    m &= (1u64 << (self.filters % 64)) - 1;
                }
                while m != 0 {
                    let f = base + w * 64 + m.trailing_zeros() as usize;
                    m &= m - 1;
                    if self.identity {
                        out.push(InterfaceId(f as u32));
                    } else {
                        let id = InterfaceId(self.iface[f]);
                        if out.last() != Some(&id) {
                            out.push(id);
                        }
                    }
                }
            }
        }
    }
}

/// The cells of one name from its low and high bounds `(code, filter)`.
fn name_cells(
    lows: &[(i64, u32)],
    highs: &[(i64, u32)],
    cells: Cells,
    filters: usize,
    group: u32,
    bit: u32,
) -> NameCells {
    let words = filters.div_ceil(64);
    let segments = filters.div_ceil(SEG_BITS);
    // Workload-balanced boundaries: quantiles of every bound code of the name.
    let mut all: Vec<i64> = lows.iter().chain(highs).map(|&(c, _)| c).collect();
    all.sort_unstable();
    let by_memory = cells.bytes_per_bound.saturating_mul(all.len()) / (words * 8).max(1);
    let want = (all.len() / cells.min_bounds.max(1))
        .min(by_memory)
        .clamp(1, cells.max.max(1));
    let mut bounds: Vec<i64> = (1..want).map(|k| all[k * all.len() / want]).collect();
    bounds.dedup();
    let k = bounds.len() + 1;
    let cell_of = |code: i64| bounds.partition_point(|&b| b <= code);

    // Fail bitsets: lows of later cells (descending pass), then highs of earlier cells.
    let mut fail = vec![0u64; k * words];
    let mut by_cell_low: Vec<Vec<(i64, u32)>> = vec![Vec::new(); k];
    for &(code, f) in lows {
        by_cell_low[cell_of(code)].push((code, f));
    }
    let mut by_cell_high: Vec<Vec<(i64, u32)>> = vec![Vec::new(); k];
    for &(code, f) in highs {
        by_cell_high[cell_of(code)].push((code, f));
    }
    let mut run = vec![0u64; words];
    for c in (0..k).rev() {
        fail[c * words..(c + 1) * words].copy_from_slice(&run);
        for &(_, f) in &by_cell_low[c] {
            run[f as usize / 64] |= 1 << (f % 64);
        }
    }
    run.fill(0);
    for c in 0..k {
        for (x, y) in fail[c * words..(c + 1) * words].iter_mut().zip(&run) {
            *x |= y;
        }
        for &(_, f) in &by_cell_high[c] {
            run[f as usize / 64] |= 1 << (f % 64);
        }
    }
    let narrow = all
        .first()
        .zip(all.last())
        .is_none_or(|(lo, hi)| hi.abs_diff(*lo) < u32::MAX as u64);
    let base = all.first().copied().unwrap_or(0);
    let marks = |by_cell: &mut [Vec<(i64, u32)>]| {
        let mut codes: Vec<i64> = Vec::new();
        let mut m = Marks {
            start: Vec::with_capacity(k * segments + 1),
            ..Marks::default()
        };
        for list in by_cell.iter_mut() {
            list.sort_unstable_by_key(|&(code, f)| (f as usize / SEG_BITS, code));
            let mut i = 0;
            for seg in 0..segments {
                m.start.push(codes.len() as u32);
                while i < list.len() && list[i].1 as usize / SEG_BITS == seg {
                    codes.push(list[i].0);
                    m.off.push((list[i].1 as usize % SEG_BITS) as u16);
                    i += 1;
                }
            }
        }
        m.start.push(codes.len() as u32);
        m.code = if narrow {
            Codes::Narrow {
                base,
                code: codes.iter().map(|&c| (c - base) as u32).collect(),
            }
        } else {
            Codes::Wide(codes)
        };
        m
    };
    NameCells {
        low: marks(&mut by_cell_low),
        high: marks(&mut by_cell_high),
        bounds,
        fail,
        group,
        bit,
    }
}

/// `acc = OR of src` (`first`) or `acc |= OR of src`, for one to four sources as long as
/// `acc`: with AVX2 where the CPU has it, else with what the target has.
fn or_sources(acc: &mut [u64], src: &[&[u64]], first: bool) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above), all `or_avx2` requires.
            unsafe { or_avx2(acc, src, first) };
            return;
        }
    }
    or_any(acc, src, first);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn or_avx2(acc: &mut [u64], src: &[&[u64]], first: bool) {
    or_any(acc, src, first);
}

/// The ORs as plain loops over equal-length slices, which the compiler vectorises (with
/// AVX2 inside [`or_avx2`]).
#[inline(always)]
fn or_any(acc: &mut [u64], src: &[&[u64]], first: bool) {
    let n = acc.len();
    match (src, first) {
        ([a], true) => acc.copy_from_slice(&a[..n]),
        ([a], false) => acc.iter_mut().zip(&a[..n]).for_each(|(x, a)| *x |= a),
        ([a, b], f) => {
            let (a, b) = (&a[..n], &b[..n]);
            for i in 0..n {
                let v = a[i] | b[i];
                acc[i] = if f { v } else { acc[i] | v };
            }
        }
        ([a, b, c], f) => {
            let (a, b, c) = (&a[..n], &b[..n], &c[..n]);
            for i in 0..n {
                let v = a[i] | b[i] | c[i];
                acc[i] = if f { v } else { acc[i] | v };
            }
        }
        ([a, b, c, d], f) => {
            let (a, b, c, d) = (&a[..n], &b[..n], &c[..n], &d[..n]);
            for i in 0..n {
                let v = a[i] | b[i] | c[i] | d[i];
                acc[i] = if f { v } else { acc[i] | v };
            }
        }
        _ => unreachable!("one to four sources"),
    }
}

impl Matcher for BitIndex {
    fn scratch_pool(&self) -> Option<&ScratchPool<BitScratch>> {
        Some(&self.pool)
    }

    type Scratch = BitScratch;

    fn scratch(&self) -> BitScratch {
        BitScratch {
            acc: vec![0; SEG_WORDS.min(self.words.max(1))],
            slot: vec![0; self.names.len()],
            names: Vec::with_capacity(self.names.len()),
            code: vec![None; self.names.len()],
            present: Vec::with_capacity(self.names.len()),
            sources: Vec::with_capacity(self.names.len() + self.groups.len()),
            absent: vec![0; self.groups.len()],
            last: 0,
        }
    }

    fn match_event_with(&self, e: &Event, scratch: &mut BitScratch) -> Vec<InterfaceId> {
        self.match_attrs(e.attributes(), scratch)
    }

    /// The names of `batch` in this index's numbering.
    fn batch_names(&self, batch: &EventBatch) -> BatchNames {
        self.ids.batch_names(batch.names())
    }

    /// Event `i` of `batch`, read in place: its names through `names`, no hashing.
    fn match_in_batch_with(
        &self,
        batch: &EventBatch,
        names: &BatchNames,
        i: usize,
        scratch: &mut BitScratch,
    ) -> Vec<InterfaceId> {
        let mut fresh = None;
        let names = self.ids.checked(batch, names, &mut fresh);
        self.match_attrs(BatchAttrs::new(batch, names, i), scratch)
    }

    fn heap_bytes(&self) -> usize {
        let marks = |m: &Marks| m.code.heap_bytes() + m.off.capacity() * 2 + m.start.capacity() * 4;
        self.names
            .iter()
            .map(|n| {
                n.bounds.capacity() * 8 + n.fail.capacity() * 8 + marks(&n.low) + marks(&n.high)
            })
            .sum::<usize>()
            + self
                .groups
                .iter()
                .map(|g| g.unions.capacity() * 8)
                .sum::<usize>()
            + self.iface.capacity() * 4
            + self.ids.heap_bytes()
            + self
                .name_list
                .iter()
                .map(|n| n.capacity() + 24)
                .sum::<usize>()
    }
}
