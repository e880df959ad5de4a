//! Filters compiled for direct evaluation, shared by the CCM indexes
//! ([`crate::content_index`], [`crate::value_index`]): names numbered by a fast hash map,
//! each constraint as `(name number, operator, value)` with string values in one byte
//! arena, and the typing rules of `ccm::model` with SFF's exact integer/float order
//! ([`crate::sff::cmp_num`]). An event is read through [`Attrs`], from heap events or
//! in place from a [`ccm::batch::EventBatch`], by one copy of the matching logic.

use crate::content_index::IndexError;
use crate::matcher::BatchNames;
use crate::sff::{cmp_num, Num, Probe};
use ccm::batch::{Attr, Dictionary, EventBatch, TY_FLOAT, TY_INT};
use ccm::model::{Attribute, Constraint, Op, Subscription, Value};
use std::cmp::Ordering;

/// The fast hash of names and partition keys: the one the GPU engines' tables use
/// ([`ccm::hash`]).
pub(crate) use ccm::hash::FastMap;
use ccm::hash::ShortKeyMap;

/// Checks subscriptions for an index: each a well-formed filter, fewer than `u32::MAX`
/// of them (the first error, as the subscription's index).
pub(crate) fn check(subs: &[Subscription]) -> Result<(), IndexError> {
    for (index, s) in subs.iter().enumerate() {
        s.filter
            .validate()
            .map_err(|source| IndexError::Model { index, source })?;
        if subs.len() >= u32::MAX as usize {
            return Err(IndexError::TooLarge { index });
        }
    }
    Ok(())
}

/// Names numbered in the order they are first seen, looked up per event attribute in a
/// [`ccm::hash::ShortKeyMap`] (the kernels' encoding uses the same map).
#[derive(Debug, Clone, Default)]
pub(crate) struct Names(ShortKeyMap<u32>);

impl Names {
    /// The number of `name`, numbering it if it is new.
    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        if let Some(id) = self.0.get(name.as_bytes()) {
            return id;
        }
        let id = self.0.len() as u32;
        self.0.insert(name.as_bytes(), id);
        id
    }

    #[inline]
    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        self.0.get(name.as_bytes())
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.0.heap_bytes()
    }

    /// Fills `slot` (name number -> 1 + the attribute's index) and `ids` (the event's
    /// numbered names, unsorted) from `e`'s attributes; names never seen are skipped.
    /// (The grid reads heap events through it; without CLCB, only tests do.)
    #[cfg(any(test, feature = "clcb"))]
    #[inline]
    pub(crate) fn slots(&self, e: &ccm::Event, slot: &mut [u32], ids: &mut Vec<u32>) {
        e.attributes().slots(self, slot, ids);
    }

    /// The names of `dict` (a batch's) in this numbering, [`NO_NAME`] where a name is
    /// not numbered: a hash lookup per name of the batch, once per batch.
    pub(crate) fn batch_names(&self, dict: &Dictionary) -> BatchNames {
        BatchNames {
            ids: dict
                .iter()
                .map(|n| self.get(n).unwrap_or(NO_NAME))
                .collect(),
            numbered: self.len(),
        }
    }

    /// `names` when it is this numbering's of `batch`'s names (made by
    /// [`Names::batch_names`] for it, or for a batch with the same names), else the
    /// translation made now (a caller's mistake costs time, not a wrong answer).
    #[inline]
    pub(crate) fn checked<'a>(
        &self,
        batch: &EventBatch,
        names: &'a BatchNames,
        fresh: &'a mut Option<BatchNames>,
    ) -> &'a BatchNames {
        if names.numbered == self.len() && names.ids.len() == batch.names().len() {
            names
        } else {
            fresh.insert(self.batch_names(batch.names()))
        }
    }
}

/// A batch's name that the numbering lacks, in [`BatchNames`].
pub(crate) const NO_NAME: u32 = u32::MAX;

/// An event's attributes as the CCM indexes read them: heap attributes (`&[Attribute]`)
/// or a batch's read in place ([`BatchAttrs`]). The matching logic is written once,
/// generic over this; each form gets its own compiled copy.
pub(crate) trait Attrs: Copy {
    /// Number of attributes.
    fn count(&self) -> usize;

    /// The value of attribute `k`.
    fn value(&self, k: usize) -> AttrValue<'_>;

    /// Fills `slot` (name number -> 1 + the attribute's index) and `ids` (the event's
    /// numbered names, unsorted); names the numbering lacks are skipped.
    fn slots(&self, names: &Names, slot: &mut [u32], ids: &mut Vec<u32>);
}

impl Attrs for &[Attribute] {
    #[inline(always)]
    fn count(&self) -> usize {
        self.len()
    }

    #[inline(always)]
    fn value(&self, k: usize) -> AttrValue<'_> {
        match &self[k].value {
            Value::Int(i) => AttrValue::Num(Num::Int(*i)),
            Value::Float(x) => AttrValue::Num(Num::Float(*x)),
            Value::Str(s) => AttrValue::Str(s.as_bytes()),
        }
    }

    /// A hash lookup per attribute.
    #[inline]
    fn slots(&self, names: &Names, slot: &mut [u32], ids: &mut Vec<u32>) {
        ids.clear();
        for (k, a) in self.iter().enumerate() {
            if let Some(id) = names.get(a.name.as_str()) {
                slot[id as usize] = k as u32 + 1;
                ids.push(id);
            }
        }
    }
}

/// An event's attributes with their values decoded once ([`Decoded::of`]): the indexes
/// read a value once per constraint of every candidate filter, and a batch's string
/// value is two reads (its span, then the arena), a heap attribute's a match on its
/// `Value`; decoded, both forms read the same small array. The names are still
/// numbered by the form's own [`Attrs::slots`].
#[derive(Clone, Copy)]
pub(crate) struct Decoded<'a, A> {
    inner: A,
    vals: &'a [AttrValue<'a>],
}

/// Attributes an event may have for [`Decoded::of`] to decode it (on the stack).
pub(crate) const DECODED_MAX: usize = 32;

impl<'a, A: Attrs> Decoded<'a, A> {
    /// `attrs` with its values decoded into `vals` (at least `attrs.count()` long).
    #[inline(always)]
    pub(crate) fn of(attrs: &'a A, vals: &'a mut [AttrValue<'a>]) -> Self {
        let n = attrs.count();
        for (k, v) in vals[..n].iter_mut().enumerate() {
            *v = attrs.value(k);
        }
        Decoded {
            inner: *attrs,
            vals: &vals[..n],
        }
    }
}

impl<A: Attrs> Attrs for Decoded<'_, A> {
    #[inline(always)]
    fn count(&self) -> usize {
        self.vals.len()
    }

    #[inline(always)]
    fn value(&self, k: usize) -> AttrValue<'_> {
        self.vals[k]
    }

    #[inline]
    fn slots(&self, names: &Names, slot: &mut [u32], ids: &mut Vec<u32>) {
        self.inner.slots(names, slot, ids);
    }
}

/// An attribute's value as the indexes compare it: a number, or a string's bytes (SFF's
/// probe of its constraint index, the same thing).
pub(crate) type AttrValue<'a> = Probe<'a>;

/// The value of a batch's attribute `a`, its string (if one) read from `strings`, the
/// batch's arena.
#[inline(always)]
pub(crate) fn value_of<'a>(a: &Attr, strings: &'a Dictionary) -> AttrValue<'a> {
    match a.ty {
        TY_INT => AttrValue::Num(Num::Int(a.val as i64)),
        TY_FLOAT => AttrValue::Num(Num::Float(f64::from_bits(a.val))),
        _ => {
            let (at, len) = strings.spans()[a.val as usize];
            AttrValue::Str(&strings.arena()[at as usize..(at + len) as usize])
        }
    }
}

/// One event of a batch, read in place: its attributes, the batch's strings (spans into
/// one arena) and the batch's names in the index's numbering ([`Names::batch_names`]).
#[derive(Clone, Copy)]
pub(crate) struct BatchAttrs<'a> {
    attrs: &'a [Attr],
    strings: &'a Dictionary,
    names: &'a [u32],
}

impl<'a> BatchAttrs<'a> {
    /// Event `i` of `batch`; `names` must be the batch's names in the index's numbering
    /// (see [`Names::checked`]).
    #[inline(always)]
    pub(crate) fn new(batch: &'a EventBatch, names: &'a BatchNames, i: usize) -> Self {
        BatchAttrs {
            attrs: batch.attrs_of(i),
            strings: batch.strings(),
            names: &names.ids,
        }
    }
}

impl Attrs for BatchAttrs<'_> {
    #[inline(always)]
    fn count(&self) -> usize {
        self.attrs.len()
    }

    #[inline(always)]
    fn value(&self, k: usize) -> AttrValue<'_> {
        value_of(&self.attrs[k], self.strings)
    }

    /// An array read per attribute (the translation of the batch's names), no hashing.
    #[inline]
    fn slots(&self, _: &Names, slot: &mut [u32], ids: &mut Vec<u32>) {
        batch_slots(self.attrs.iter().map(|a| a.name), self.names, slot, ids);
    }
}

/// [`Attrs::slots`] of an event whose attributes' names are given as the batch's name
/// ids (`event_names`, in order), `numbering` the batch's names in the index's numbering.
#[inline(always)]
pub(crate) fn batch_slots(
    event_names: impl Iterator<Item = u32>,
    numbering: &[u32],
    slot: &mut [u32],
    ids: &mut Vec<u32>,
) {
    ids.clear();
    for (k, name) in event_names.enumerate() {
        let id = numbering[name as usize];
        if id != NO_NAME {
            slot[id as usize] = k as u32 + 1;
            ids.push(id);
        }
    }
}

/// A constraint's value, compiled: a number, or a string in the byte arena.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Val {
    Num(Num),
    Str { at: u32, len: u32 },
}

/// A compiled constraint: name number, operator, value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Test {
    pub(crate) name: u32,
    pub(crate) op: Op,
    pub(crate) val: Val,
}

/// Compiled filters: filter `f`'s constraints are `tests[at[f]..at[f + 1]]`.
#[derive(Debug, Clone)]
pub(crate) struct Tests {
    at: Vec<u32>,
    tests: Vec<Test>,
    bytes: Vec<u8>,
}

impl Default for Tests {
    fn default() -> Self {
        Tests {
            at: vec![0],
            tests: Vec::new(),
            bytes: Vec::new(),
        }
    }
}

/// The arena or the constraint table outgrew `u32` offsets.
#[derive(Debug)]
pub(crate) struct TooLarge;

impl Tests {
    /// Appends a filter of `constraints` (their names numbered in `names`).
    pub(crate) fn push(
        &mut self,
        constraints: &[Constraint],
        names: &Names,
    ) -> Result<(), TooLarge> {
        for c in constraints {
            let val = match &c.value {
                Value::Str(x) => {
                    let at = self.bytes.len();
                    self.bytes.extend_from_slice(x.as_bytes());
                    if self.bytes.len() >= u32::MAX as usize {
                        return Err(TooLarge);
                    }
                    Val::Str {
                        at: at as u32,
                        len: x.len() as u32,
                    }
                }
                v => Val::Num(Num::of(v).expect("a number")),
            };
            self.tests.push(Test {
                name: names
                    .get(c.name.as_str())
                    .expect("numbered before compiling"),
                op: c.op,
                val,
            });
        }
        if self.tests.len() >= u32::MAX as usize {
            return Err(TooLarge);
        }
        self.at.push(self.tests.len() as u32);
        Ok(())
    }

    /// Whether every constraint of filter `f` holds on the event (`slot`: its table).
    /// Always inlined: called once per filter evaluated, from the content index's loop
    /// (and its budgeted copy) and the value index's; with that many callers the
    /// compiler left it out of line, and the content index lost 10-20% on dense events.
    #[inline(always)]
    pub(crate) fn satisfies<A: Attrs>(&self, f: usize, attrs: A, slot: &[u32]) -> bool {
        let tests = &self.tests[self.at[f] as usize..self.at[f + 1] as usize];
        // A plain loop (no closure for the compiler to leave out of line).
        for t in tests {
            let s = slot[t.name as usize];
            if s == 0 || !self.holds(t, attrs.value(s as usize - 1)) {
                return false;
            }
        }
        true
    }

    /// Whether constraint `t` holds on value `v` (the typing rules of `ccm::model`).
    /// Always inlined, as [`Tests::satisfies`].
    #[inline(always)]
    pub(crate) fn holds(&self, t: &Test, v: AttrValue<'_>) -> bool {
        match (t.val, v) {
            (Val::Num(k), AttrValue::Num(x)) => {
                let o = cmp_num(x, k);
                match t.op {
                    Op::Eq => o == Ordering::Equal,
                    Op::Ne => o != Ordering::Equal,
                    Op::Lt => o == Ordering::Less,
                    Op::Gt => o == Ordering::Greater,
                    Op::Le => o != Ordering::Greater,
                    Op::Ge => o != Ordering::Less,
                    _ => false,
                }
            }
            (Val::Str { at, len }, AttrValue::Str(x)) => {
                let k = &self.bytes[at as usize..(at + len) as usize];
                match t.op {
                    Op::Eq => x == k,
                    Op::Ne => x != k,
                    Op::Prefix => x.starts_with(k),
                    Op::Suffix => x.ends_with(k),
                    Op::Substr => k.is_empty() || x.windows(k.len()).any(|w| w == k),
                    _ => false,
                }
            }
            _ => false,
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.at.capacity() * 4
            + self.tests.capacity() * std::mem::size_of::<Test>()
            + self.bytes.capacity()
    }
}

/// Hints the CPU to bring the cache line of `p` into its caches (nothing elsewhere).
#[cfg(feature = "clcb")]
#[inline(always)]
pub(crate) fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it reads nothing the program sees and cannot
    // fault; `p` is a valid reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch(
            (p as *const T).cast::<i8>(),
            std::arch::x86_64::_MM_HINT_T0,
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Matched interfaces of one event, collected per matched filter: a flag per interface
/// and the list of those set, so that neither the answer nor the reset scans every
/// interface (with a million interfaces that scan would cost more than the matching).
#[derive(Debug, Clone, Default)]
pub(crate) struct Matched {
    pub(crate) flag: Vec<bool>,
    pub(crate) list: Vec<u32>,
}

impl Matched {
    pub(crate) fn new(interfaces: usize) -> Matched {
        Matched {
            flag: vec![false; interfaces],
            list: Vec::new(),
        }
    }

    #[inline(always)]
    pub(crate) fn has(&self, i: u32) -> bool {
        self.flag[i as usize]
    }

    #[inline(always)]
    pub(crate) fn set(&mut self, i: u32) {
        self.flag[i as usize] = true;
        self.list.push(i);
    }

    /// Clears the set (an answer given up: nothing to return).
    pub(crate) fn clear(&mut self) {
        for &i in &self.list {
            self.flag[i as usize] = false;
        }
        self.list.clear();
    }

    /// The users' ids of the matched interfaces, ascending; clears the set.
    pub(crate) fn take(&mut self, ids: &[ccm::model::InterfaceId]) -> Vec<ccm::model::InterfaceId> {
        let mut out: Vec<_> = self
            .list
            .iter()
            .map(|&i| {
                self.flag[i as usize] = false;
                ids[i as usize]
            })
            .collect();
        self.list.clear();
        out.sort_unstable();
        out
    }
}

/// Matched interfaces of one event as one bit per interface, for an index that numbers
/// its interfaces in ascending order of the users' ids: the bits (1/8 of a flag per
/// interface: they stay in cache with a million interfaces) and the list of those set.
/// The answer comes sorted either way: by sorting the list when it is short, by reading
/// the bits in order (no sort) when it is long; neither touches the bits of interfaces
/// that did not match unless the answer holds at least one per `SCAN_EVERY` words.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hits {
    bits: Vec<u64>,
    list: Vec<u32>,
}

/// [`Hits::take`] reads every word when the answer has at least one interface per this
/// many words (sorting `n` ids costs about `n log n` steps, reading a word less than one).
const SCAN_EVERY: usize = 32;

impl Hits {
    pub(crate) fn new(interfaces: usize) -> Hits {
        Hits {
            bits: vec![0; interfaces.div_ceil(64)],
            list: Vec::new(),
        }
    }

    /// The number of interfaces it has room for, rounded up to 64.
    pub(crate) fn room(&self) -> usize {
        self.bits.len() * 64
    }

    #[inline(always)]
    pub(crate) fn has(&self, i: u32) -> bool {
        self.bits[i as usize / 64] >> (i % 64) & 1 != 0
    }

    /// Marks interface `i`, which must not be marked yet.
    #[inline(always)]
    pub(crate) fn set(&mut self, i: u32) {
        self.bits[i as usize / 64] |= 1 << (i % 64);
        self.list.push(i);
    }

    /// The users' ids of the matched interfaces (`id`: dense number -> id, ascending),
    /// ascending; clears the set.
    #[inline]
    pub(crate) fn take(
        &mut self,
        id: impl Fn(usize) -> ccm::model::InterfaceId,
    ) -> Vec<ccm::model::InterfaceId> {
        let mut out = Vec::with_capacity(self.list.len());
        if self.list.len() * SCAN_EVERY >= self.bits.len() {
            for (w, word) in self.bits.iter_mut().enumerate() {
                let mut z = std::mem::take(word);
                while z != 0 {
                    out.push(id(w * 64 + z.trailing_zeros() as usize));
                    z &= z - 1;
                }
            }
        } else {
            self.list.sort_unstable();
            for &i in &self.list {
                self.bits[i as usize / 64] = 0;
                out.push(id(i as usize));
            }
        }
        self.list.clear();
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ccm::model::{Filter, InterfaceId};

    /// A subscription of interface `iface` with the constraints `cs` (a unit tests' helper).
    pub(crate) fn sub(iface: u32, cs: &[(&str, Op, Value)]) -> Subscription {
        Subscription {
            interface: InterfaceId(iface),
            filter: Filter::new(
                cs.iter()
                    .map(|(n, o, v)| Constraint::new(*n, *o, v.clone()).unwrap())
                    .collect(),
            )
            .unwrap(),
        }
    }

    #[test]
    fn hits_come_out_ascending_and_cleared_whether_sorted_or_scanned() {
        let ids: Vec<InterfaceId> = (0..1000).map(|i| InterfaceId(3 * i + 1)).collect();
        let mut h = Hits::new(ids.len());
        for round in 0..3 {
            // Few (sorted list), then many (scan of the bits), then few again.
            let picks: Vec<u32> = match round {
                1 => (0..1000).rev().filter(|i| i % 3 != 0).collect(),
                _ => vec![999, 5, 64, 63, 0],
            };
            for &i in &picks {
                assert!(!h.has(i));
                h.set(i);
                assert!(h.has(i));
            }
            let mut want: Vec<InterfaceId> = picks.iter().map(|&i| ids[i as usize]).collect();
            want.sort_unstable();
            assert_eq!(h.take(|i| ids[i]), want);
            assert!((0..1000).all(|i| !h.has(i)));
        }
    }
}
