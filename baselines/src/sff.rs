//! SFF-like counting matcher, after Carzaniga & Wolf, "Forwarding in a content-based
//! network" (SIGCOMM 2003), the matcher of Siena that the CCM paper (§5) measures
//! against.
//!
//! Structure (the paper's §3-§4 "constraint index" + "counting"):
//! - constraints are indexed by attribute name ([`Sff`] holds one [`NameIndex`] per
//!   name), then by type and operator: hashing for equality, sorted values with
//!   binary search for `<` `>` `<=` `>=`, grouped values for `!=`, hashed prefixes and
//!   suffixes looked up for each prefix / suffix of the attribute's value, and hashed
//!   substrings looked up for each substring length that some constraint has;
//! - a counter per filter ([`Counters`], stamped with an event generation so nothing is
//!   cleared between events);
//! - per-interface pruning: once an interface matched, its other filters are skipped,
//!   and matching stops when every interface matched (SFF "purges" the interface).
//!
//! Deviations: SFF uses ternary search tries for strings; hashed prefixes / suffixes /
//! substrings give the same answers with the same asymptotics on short values.
//! Numbers: integers and floats compare exactly (see [`cmp_num`]), which Siena does
//! not promise; the typing rules are those of `ccm::model`.
//!
//! An event is read from a heap [`Event`] (each name hashed) or in place from a flat
//! batch ([`ccm::batch::EventBatch`]: the batch's names numbered once, [`Matcher::batch_names`],
//! and each value read from its record as a [`Probe`]); one copy of the counting serves both.
//!
//! The building blocks ([`NameIndex`], [`Counters`], [`cmp_num`]) are public so that the
//! CLCB "with location" variant can reuse them.

use crate::compiled::{value_of, Names, NO_NAME};
use crate::matcher::BatchNames;
use crate::Matcher;
use ccm::batch::{Dictionary, EventBatch};
use ccm::model::{Attribute, Event, Filter, InterfaceId, ModelError, Op, Subscription, Value};
use std::cmp::Ordering;
use std::collections::HashMap;

/// Why the matcher cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum SffError {
    /// The model error is part of the message (and not also the error's source, so that
    /// a chain of causes prints it once).
    #[error("subscription {index}: {error}")]
    Model { index: usize, error: ModelError },
    #[error("subscription {index}: more than {max} filters in total", max = u32::MAX - 1)]
    TooManyFilters { index: usize },
}

/// A number for comparison: integer or float, compared exactly with [`cmp_num`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub fn of(v: &Value) -> Option<Num> {
        match *v {
            Value::Int(i) => Some(Num::Int(i)),
            Value::Float(x) => Some(Num::Float(x)),
            Value::Str(_) => None,
        }
    }

    /// The hash key of the value: integral floats within `i64` hash as integers, so that
    /// `Int(3)` and `Float(3.0)` meet in one bucket.
    fn key(self) -> NumKey {
        match self {
            Num::Int(i) => NumKey::Int(i),
            Num::Float(x) if x.fract() == 0.0 && (-TWO_63..TWO_63).contains(&x) => {
                NumKey::Int(x as i64)
            }
            Num::Float(x) => NumKey::Float(x.to_bits()),
        }
    }
}

const TWO_63: f64 = 9_223_372_036_854_775_808.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum NumKey {
    Int(i64),
    Float(u64),
}

/// Exact order of an integer and a float (no NaN): `i` against the real number `x`.
fn cmp_int_float(i: i64, x: f64) -> Ordering {
    if x >= TWO_63 {
        return Ordering::Less;
    }
    if x < -TWO_63 {
        return Ordering::Greater;
    }
    // |x| < 2^63 (or x = -2^63): its integer part is an exact i64, its fraction exact.
    let whole = x.trunc();
    match i.cmp(&(whole as i64)) {
        Ordering::Equal => 0.0f64.partial_cmp(&(x - whole)).unwrap_or(Ordering::Equal),
        o => o,
    }
}

/// Exact numeric order of two numbers (NaN never occurs in a well-formed model; it
/// would compare equal to everything here).
pub fn cmp_num(a: Num, b: Num) -> Ordering {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x.cmp(&y),
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        (Num::Int(x), Num::Float(y)) => cmp_int_float(x, y),
        (Num::Float(x), Num::Int(y)) => cmp_int_float(y, x).reverse(),
    }
}

/// A filter's slot in the matcher; constraints point at it.
pub type FilterIdx = u32;

/// An attribute's value as a [`NameIndex`] probes it: a number, or a string's bytes
/// (from a heap event's [`Value`], or read in place from a flat batch).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Probe<'a> {
    /// An integer or a float.
    Num(Num),
    /// A string's bytes.
    Str(&'a [u8]),
}

impl<'a> Probe<'a> {
    /// The probe of a heap value.
    pub fn of(v: &'a Value) -> Probe<'a> {
        match v {
            Value::Int(i) => Probe::Num(Num::Int(*i)),
            Value::Float(x) => Probe::Num(Num::Float(*x)),
            Value::Str(s) => Probe::Str(s.as_bytes()),
        }
    }
}

/// All constraints on one attribute name, indexed by type and operator.
#[derive(Default, Debug, Clone)]
pub struct NameIndex {
    num_eq: HashMap<NumKey, Vec<FilterIdx>>,
    num_ne: HashMap<NumKey, Vec<FilterIdx>>,
    /// `(value, filter)` sorted by value, one list per order operator.
    num_lt: Vec<(Num, FilterIdx)>,
    num_le: Vec<(Num, FilterIdx)>,
    num_gt: Vec<(Num, FilterIdx)>,
    num_ge: Vec<(Num, FilterIdx)>,
    str_eq: HashMap<Box<[u8]>, Vec<FilterIdx>>,
    str_ne: HashMap<Box<[u8]>, Vec<FilterIdx>>,
    prefix: HashMap<Box<[u8]>, Vec<FilterIdx>>,
    suffix: HashMap<Box<[u8]>, Vec<FilterIdx>>,
    substr: HashMap<Box<[u8]>, Vec<FilterIdx>>,
    /// Distinct lengths of the substring constraints, ascending.
    substr_lens: Vec<usize>,
    sorted: bool,
}

impl NameIndex {
    /// Adds constraint `op value` of filter `f`. The constraint must be well formed.
    pub fn insert(&mut self, op: Op, value: &Value, f: FilterIdx) {
        self.sorted = false;
        match value {
            Value::Str(s) => {
                let k: Box<[u8]> = s.as_bytes().into();
                let map = match op {
                    Op::Eq => &mut self.str_eq,
                    Op::Ne => &mut self.str_ne,
                    Op::Prefix => &mut self.prefix,
                    Op::Suffix => &mut self.suffix,
                    Op::Substr => {
                        if !self.substr_lens.contains(&k.len()) {
                            self.substr_lens.push(k.len());
                        }
                        &mut self.substr
                    }
                    _ => return, // refused by validation; never satisfiable
                };
                map.entry(k).or_default().push(f);
            }
            v => {
                let n = Num::of(v).expect("number");
                match op {
                    Op::Eq => self.num_eq.entry(n.key()).or_default().push(f),
                    Op::Ne => self.num_ne.entry(n.key()).or_default().push(f),
                    Op::Lt => self.num_lt.push((n, f)),
                    Op::Le => self.num_le.push((n, f)),
                    Op::Gt => self.num_gt.push((n, f)),
                    Op::Ge => self.num_ge.push((n, f)),
                    _ => {}
                }
            }
        }
    }

    /// Sorts the order-operator lists; call once after the inserts.
    pub fn finish(&mut self) {
        for l in [
            &mut self.num_lt,
            &mut self.num_le,
            &mut self.num_gt,
            &mut self.num_ge,
        ] {
            l.sort_by(|a, b| cmp_num(a.0, b.0));
        }
        self.substr_lens.sort_unstable();
        self.sorted = true;
    }

    /// Calls `hit(f)` once per constraint of this name that `value` satisfies (twice
    /// for a filter with two satisfied constraints on this name).
    pub fn for_each_satisfied(&self, value: &Value, hit: impl FnMut(FilterIdx)) {
        self.for_each_probe(Probe::of(value), hit);
    }

    /// [`NameIndex::for_each_satisfied`] for a value as a heap event or a batch holds it.
    pub fn for_each_probe(&self, value: Probe<'_>, mut hit: impl FnMut(FilterIdx)) {
        debug_assert!(self.sorted, "NameIndex::finish not called");
        match value {
            Probe::Str(x) => {
                if let Some(fs) = self.str_eq.get(x) {
                    fs.iter().for_each(|&f| hit(f));
                }
                for (k, fs) in &self.str_ne {
                    if &**k != x {
                        fs.iter().for_each(|&f| hit(f));
                    }
                }
                if !self.prefix.is_empty() {
                    for l in 0..=x.len() {
                        if let Some(fs) = self.prefix.get(&x[..l]) {
                            fs.iter().for_each(|&f| hit(f));
                        }
                    }
                }
                if !self.suffix.is_empty() {
                    for l in 0..=x.len() {
                        if let Some(fs) = self.suffix.get(&x[x.len() - l..]) {
                            fs.iter().for_each(|&f| hit(f));
                        }
                    }
                }
                for &l in self.substr_lens.iter().take_while(|&&l| l <= x.len()) {
                    if l == 0 {
                        // The empty string is a substring of every string.
                        if let Some(fs) = self.substr.get(&[][..]) {
                            fs.iter().for_each(|&f| hit(f));
                        }
                        continue;
                    }
                    // One hit per constraint, however often its value occurs in x.
                    let mut seen: Vec<&[u8]> = Vec::new();
                    for w in x.windows(l) {
                        if let Some(fs) = self.substr.get(w) {
                            if !seen.contains(&w) {
                                seen.push(w);
                                fs.iter().for_each(|&f| hit(f));
                            }
                        }
                    }
                }
            }
            Probe::Num(x) => {
                if let Some(fs) = self.num_eq.get(&x.key()) {
                    fs.iter().for_each(|&f| hit(f));
                }
                let kx = x.key();
                for (k, fs) in &self.num_ne {
                    // Keys are canonical: equal numbers have equal keys.
                    if *k != kx {
                        fs.iter().for_each(|&f| hit(f));
                    }
                }
                // `x < v` holds for the v's strictly above x: a suffix of the sorted list.
                let above = self
                    .num_lt
                    .partition_point(|&(v, _)| cmp_num(v, x) != Ordering::Greater);
                self.num_lt[above..].iter().for_each(|&(_, f)| hit(f));
                let at_or_above = self
                    .num_le
                    .partition_point(|&(v, _)| cmp_num(v, x) == Ordering::Less);
                self.num_le[at_or_above..].iter().for_each(|&(_, f)| hit(f));
                let below = self
                    .num_gt
                    .partition_point(|&(v, _)| cmp_num(v, x) == Ordering::Less);
                self.num_gt[..below].iter().for_each(|&(_, f)| hit(f));
                let at_or_below = self
                    .num_ge
                    .partition_point(|&(v, _)| cmp_num(v, x) != Ordering::Greater);
                self.num_ge[..at_or_below].iter().for_each(|&(_, f)| hit(f));
            }
        }
    }
}

/// The constraint indexes of every name a constraint has, the names numbered as the
/// compiled indexes number theirs ([`Names`]): what [`Sff`] and the CLCB variant look an
/// event's names up in, a heap attribute's hashed, a batch's translated once per batch.
#[derive(Debug, Clone, Default)]
pub(crate) struct ByName {
    names: Names,
    indexes: Vec<NameIndex>,
}

impl ByName {
    /// The constraint index of `name`, made when the name is new.
    pub(crate) fn entry(&mut self, name: &str) -> &mut NameIndex {
        let k = self.names.intern(name) as usize;
        if k == self.indexes.len() {
            self.indexes.push(NameIndex::default());
        }
        &mut self.indexes[k]
    }

    /// [`NameIndex::finish`] for every name; call once after the inserts.
    pub(crate) fn finish(&mut self) {
        self.indexes.iter_mut().for_each(NameIndex::finish);
    }

    /// The constraint index of name number `k` (a number this gave).
    #[inline(always)]
    pub(crate) fn index(&self, k: u32) -> &NameIndex {
        &self.indexes[k as usize]
    }

    /// Per heap attribute whose name some constraint has: the name's number and the
    /// value's probe (a hash lookup per attribute).
    pub(crate) fn heap_probes<'a>(
        &'a self,
        attrs: &'a [Attribute],
    ) -> impl Iterator<Item = (u32, Probe<'a>)> + 'a {
        attrs
            .iter()
            .filter_map(|a| Some((self.names.get(&a.name)?, Probe::of(&a.value))))
    }

    /// A batch's names (its dictionary `dict`) in this numbering.
    pub(crate) fn batch_names(&self, dict: &Dictionary) -> BatchNames {
        self.names.batch_names(dict)
    }

    /// [`ByName::heap_probes`] for event `i` of `batch`, read in place: its names through
    /// `names` (made again into `fresh` when they are not this batch's), its values from
    /// their records.
    pub(crate) fn batch_probes<'a>(
        &'a self,
        batch: &'a EventBatch,
        names: &'a BatchNames,
        i: usize,
        fresh: &'a mut Option<BatchNames>,
    ) -> impl Iterator<Item = (u32, Probe<'a>)> + 'a {
        let ids = &self.names.checked(batch, names, fresh).ids;
        let strings = batch.strings();
        batch.attrs_of(i).iter().filter_map(move |a| {
            let k = ids[a.name as usize];
            (k != NO_NAME).then(|| (k, value_of(a, strings)))
        })
    }
}

/// Per-filter counters of satisfied constraints, stamped with the event's generation so
/// that starting a new event costs nothing.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    gen: u32,
    slots: Vec<(u32, u32)>,
}

impl Counters {
    pub fn new(filters: usize) -> Self {
        Counters {
            gen: 0,
            slots: vec![(0, 0); filters],
        }
    }

    /// Starts a new event: every counter reads 0.
    pub fn next_event(&mut self) {
        self.gen = self.gen.wrapping_add(1);
        if self.gen == 0 {
            self.slots.iter_mut().for_each(|s| *s = (0, 0));
            self.gen = 1;
        }
    }

    /// Increments filter `f`'s counter and returns the new value.
    pub fn bump(&mut self, f: FilterIdx) -> u32 {
        let s = &mut self.slots[f as usize];
        if s.0 != self.gen {
            *s = (self.gen, 0);
        }
        s.1 += 1;
        s.1
    }
}

/// Scratch memory of one matching thread.
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    counters: Counters,
    matched: Vec<bool>,
}

/// The SFF-like matcher: the constraint index plus the filters' sizes and interfaces.
#[derive(Debug, Clone, Default)]
pub struct Sff {
    by_name: ByName,
    /// Per filter: (number of constraints, dense interface index).
    filters: Vec<(u32, u32)>,
    /// Dense interface index -> user's id.
    interfaces: Vec<InterfaceId>,
}

impl Sff {
    /// Builds the index of `subs` (each subscription is one filter of its interface).
    ///
    /// ```
    /// use baselines::{sff::Sff, Matcher};
    /// use ccm::{Constraint, Event, Filter, InterfaceId, Op, Subscription, Value};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let sub = |i, c: Vec<Constraint>| -> Result<Subscription, ccm::model::ModelError> {
    ///     Ok(Subscription { interface: InterfaceId(i), filter: Filter::new(c)? })
    /// };
    /// let subs = vec![
    ///     sub(1, vec![Constraint::new("price", Op::Lt, Value::Float(10.0))?])?,
    ///     sub(2, vec![
    ///         Constraint::new("price", Op::Lt, Value::Int(20))?,
    ///         Constraint::new("item", Op::Substr, Value::Str("book".into()))?,
    ///     ])?,
    /// ];
    /// let sff = Sff::build(&subs)?;
    /// let e = Event::from_pairs([
    ///     ("price", Value::Int(15)),
    ///     ("item", Value::Str("notebook".into())),
    /// ])?;
    /// assert_eq!(sff.match_event(&e), vec![InterfaceId(2)]);
    /// # Ok(()) }
    /// ```
    pub fn build(subs: &[Subscription]) -> Result<Self, SffError> {
        let mut sff = Sff::default();
        let mut dense: HashMap<InterfaceId, u32> = HashMap::new();
        for (index, s) in subs.iter().enumerate() {
            s.filter
                .validate()
                .map_err(|error| SffError::Model { index, error })?;
            let fi = u32::try_from(sff.filters.len())
                .ok()
                .filter(|&f| f < u32::MAX)
                .ok_or(SffError::TooManyFilters { index })?;
            let next = dense.len() as u32;
            let iface = *dense.entry(s.interface).or_insert_with(|| {
                sff.interfaces.push(s.interface);
                next
            });
            sff.filters.push((s.filter.constraints.len() as u32, iface));
            sff.insert_filter(&s.filter, fi);
        }
        sff.by_name.finish();
        Ok(sff)
    }

    fn insert_filter(&mut self, f: &Filter, fi: FilterIdx) {
        for c in &f.constraints {
            self.by_name.entry(&c.name).insert(c.op, &c.value, fi);
        }
    }

    /// Number of filters indexed.
    pub fn filters(&self) -> usize {
        self.filters.len()
    }
}

impl Matcher for Sff {
    type Scratch = Scratch;

    /// Fresh scratch memory for [`Sff::match_event_with`].
    fn scratch(&self) -> Scratch {
        Scratch {
            counters: Counters::new(self.filters.len()),
            matched: vec![false; self.interfaces.len()],
        }
    }

    /// The interfaces whose predicate matches `e`, ascending by id, reusing `scratch` (one
    /// per thread).
    fn match_event_with(&self, e: &Event, scratch: &mut Scratch) -> Vec<InterfaceId> {
        self.match_probes(self.by_name.heap_probes(e.attributes()), scratch)
    }

    /// The batch's names in SFF's numbering.
    fn batch_names(&self, batch: &EventBatch) -> BatchNames {
        self.by_name.batch_names(batch.names())
    }

    /// Event `i` of `batch`, read in place: its names through `names` (no hashing), its
    /// values from the batch's records and string arena.
    fn match_in_batch_with(
        &self,
        batch: &EventBatch,
        names: &BatchNames,
        i: usize,
        scratch: &mut Scratch,
    ) -> Vec<InterfaceId> {
        let mut fresh = None;
        let probes = self.by_name.batch_probes(batch, names, i, &mut fresh);
        self.match_probes(probes, scratch)
    }

    /// An estimate of the heap bytes of the index (Table 2's data-structure size).
    fn heap_bytes(&self) -> usize {
        self.index_bytes()
    }
}

impl Sff {
    /// The interfaces whose predicate matches the event of `probes` (per attribute whose
    /// name some constraint has: the name's number and the value), ascending by id.
    fn match_probes<'a>(
        &self,
        probes: impl Iterator<Item = (u32, Probe<'a>)>,
        scratch: &mut Scratch,
    ) -> Vec<InterfaceId> {
        if scratch.matched.len() != self.interfaces.len()
            || scratch.counters.slots.len() != self.filters.len()
        {
            *scratch = self.scratch();
        }
        let Scratch { counters, matched } = scratch;
        counters.next_event();
        matched.iter_mut().for_each(|m| *m = false);
        let mut left = self.interfaces.len();
        for (k, value) in probes {
            if left == 0 {
                break;
            }
            self.by_name.index(k).for_each_probe(value, |f| {
                let (size, iface) = self.filters[f as usize];
                // Per-interface pruning: a matched interface's filters are skipped.
                if matched[iface as usize] {
                    return;
                }
                if counters.bump(f) == size {
                    matched[iface as usize] = true;
                    left -= 1;
                }
            });
        }
        let mut out: Vec<InterfaceId> = matched
            .iter()
            .zip(&self.interfaces)
            .filter(|(m, _)| **m)
            .map(|(_, &id)| id)
            .collect();
        out.sort_unstable();
        out
    }

    /// [`Matcher::heap_bytes`].
    fn index_bytes(&self) -> usize {
        fn vec<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        fn map<K>(m: &HashMap<K, Vec<FilterIdx>>, key_bytes: impl Fn(&K) -> usize) -> usize {
            m.iter()
                .map(|(k, v)| key_bytes(k) + vec(v) + 8)
                .sum::<usize>()
                + m.capacity()
                    * (std::mem::size_of::<K>() + std::mem::size_of::<Vec<FilterIdx>>() + 1)
        }
        #[allow(clippy::borrowed_box)]
        let bytes_key = |k: &Box<[u8]>| k.len();
        let names: usize = self.by_name.names.heap_bytes()
            + self
                .by_name
                .indexes
                .iter()
                .map(|i| {
                    map(&i.num_eq, |_| 0)
                        + map(&i.num_ne, |_| 0)
                        + vec(&i.num_lt)
                        + vec(&i.num_le)
                        + vec(&i.num_gt)
                        + vec(&i.num_ge)
                        + map(&i.str_eq, bytes_key)
                        + map(&i.str_ne, bytes_key)
                        + map(&i.prefix, bytes_key)
                        + map(&i.suffix, bytes_key)
                        + map(&i.substr, bytes_key)
                        + std::mem::size_of::<NameIndex>()
                })
                .sum::<usize>();
        names + vec(&self.filters) + vec(&self.interfaces)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_float_comparison_is_exact() {
        let big = 1i64 << 53;
        assert_eq!(
            cmp_num(Num::Int(big + 1), Num::Float(big as f64)),
            Ordering::Greater
        );
        assert_eq!(cmp_num(Num::Int(3), Num::Float(3.0)), Ordering::Equal);
        assert_eq!(cmp_num(Num::Int(3), Num::Float(3.5)), Ordering::Less);
        assert_eq!(cmp_num(Num::Int(-3), Num::Float(-3.5)), Ordering::Greater);
        assert_eq!(
            cmp_num(Num::Int(i64::MAX), Num::Float(TWO_63)),
            Ordering::Less
        );
        assert_eq!(
            cmp_num(Num::Int(i64::MIN), Num::Float(-TWO_63)),
            Ordering::Equal
        );
        assert_eq!(
            cmp_num(Num::Float(f64::INFINITY), Num::Int(i64::MAX)),
            Ordering::Greater
        );
        assert_eq!(Num::Float(-0.0).key(), Num::Int(0).key());
    }
}
