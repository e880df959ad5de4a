//! Beyond the paper: subscriptions as flat columns, what the loader parses a file into
//! ([`crate::io::load_subscription_columns`]) and what the cell index
//! ([`crate::cells::CellIndex::from_columns`]) and the CPU grid build from: no heap
//! object per subscription, filter, constraint, name or string.
//!
//! Filters lie grouped by subscription (ids ascending), a subscription's in file order;
//! each filter has its area, its subscription's dense index and its run of constraints.
//! A constraint is stored as the batched kernels read it ([`DevConstraint`]: operator
//! code, value kind, value bits, and in `tag` its name's number), a string value as its
//! place in one arena of the strings in constraint order, names numbered in order of
//! first appearance over the filters in order: exactly the filter-major tables of
//! [`crate::layout::Tables`], so the cell index takes them as they are.
//!
//! Columns are made in parts ([`Part`], one per chunk of a file, parsed on all cores)
//! and joined ([`SubscriptionColumns::join`]): the parts' names merged in order, each
//! part copied into its place on all cores, then filters put in subscription order when
//! the file did not list them so (a stable sort, then every column gathered).

use crate::layout::op_code;
use crate::model::{
    Area, Constraint, Filter, ModelError, Op, Subscription, SubscriptionId, Subscriptions,
    MAX_CONSTRAINTS,
};
use ccm::batch::ValueRef;
use ccm::hash::ShortKeyMap;
pub use clcb_kernels::DevConstraint;
use clcb_kernels::{str_bits, KIND_FLOAT, KIND_INT, KIND_STR, OP_EQ};
use rayon::prelude::*;

/// Columns too large for their 32-bit places (filters, constraints or string bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0} {1} do not fit 32-bit places")]
pub struct TooLarge(pub usize, pub &'static str);

/// Subscriptions as columns (see the module's docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SubscriptionColumns {
    /// Per subscription: its id, ascending and distinct.
    ids: Vec<SubscriptionId>,
    /// Per subscription, then the end: its first filter.
    starts: Vec<u32>,
    /// Per filter: its subscription's dense index.
    filter_sub: Vec<u32>,
    /// Per filter: its area.
    area: Vec<Area>,
    /// Per filter, then the end: its first constraint in `cons`.
    cons_start: Vec<u32>,
    /// Every constraint, filter-major, `tag` the name's number.
    cons: Vec<DevConstraint>,
    /// The names, by number.
    names: Vec<String>,
    /// String values' bytes, in constraint order.
    strings: String,
}

/// The operator of a device code ([`op_code`]'s inverse).
pub fn op_of_code(code: u32) -> Op {
    Op::ALL
        .into_iter()
        .find(|&op| op_code(op) == code)
        .unwrap_or(Op::Eq)
}

/// Whether a constraint's value is a string.
#[inline]
pub fn is_str(c: &DevConstraint) -> bool {
    u32::from(c.kind) == KIND_STR
}

/// Whether a constraint is a string equality `name = value` (what the indexes key on).
#[inline]
pub fn is_str_eq(c: &DevConstraint) -> bool {
    is_str(c) && u32::from(c.op) == OP_EQ
}

impl SubscriptionColumns {
    /// Number of subscriptions.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Number of filters.
    pub fn filter_count(&self) -> usize {
        self.area.len()
    }

    /// The id of the subscription of dense index `i`.
    pub fn id(&self, i: usize) -> SubscriptionId {
        self.ids[i]
    }

    /// Every subscription's id, ascending.
    pub fn ids(&self) -> &[SubscriptionId] {
        &self.ids
    }

    /// Per subscription, then the end: its first filter.
    pub fn starts(&self) -> &[u32] {
        &self.starts
    }

    /// Per filter: its subscription's dense index.
    pub fn filter_sub(&self) -> &[u32] {
        &self.filter_sub
    }

    /// Per filter: its area.
    pub fn areas(&self) -> &[Area] {
        &self.area
    }

    /// Per filter, then the end: its first constraint.
    pub fn cons_start(&self) -> &[u32] {
        &self.cons_start
    }

    /// Every constraint, filter-major (`tag`: the name's number).
    pub fn all_constraints(&self) -> &[DevConstraint] {
        &self.cons
    }

    /// Filter `f`'s constraints.
    #[inline]
    pub fn constraints(&self, f: usize) -> &[DevConstraint] {
        &self.cons[self.cons_start[f] as usize..self.cons_start[f + 1] as usize]
    }

    /// The names by number (first appearance over the filters in order).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Every string value's bytes, in constraint order.
    pub fn strings(&self) -> &str {
        &self.strings
    }

    /// The string of a constraint of kind [`KIND_STR`] (else empty).
    #[inline]
    pub fn str_of(&self, c: &DevConstraint) -> &str {
        if u32::from(c.kind) != KIND_STR {
            return "";
        }
        let (at, len) = (c.bits as u32 as usize, (c.bits >> 32) as usize);
        self.strings.get(at..at + len).unwrap_or_default()
    }

    /// The value of a constraint.
    #[inline]
    pub fn value_of(&self, c: &DevConstraint) -> ValueRef<'_> {
        match u32::from(c.kind) {
            KIND_INT => ValueRef::Int(c.bits as i64),
            KIND_FLOAT => ValueRef::Float(f64::from_bits(c.bits)),
            _ => ValueRef::Str(self.str_of(c)),
        }
    }

    /// The per-filter and per-constraint columns, moved out (what the cell index keeps):
    /// the areas, the subscriptions' dense indices and ids, and the tables' columns.
    pub(crate) fn into_parts(self) -> ColumnParts {
        ColumnParts {
            ids: self.ids,
            filter_sub: self.filter_sub,
            area: self.area,
            cons_start: self.cons_start,
            cons: self.cons,
            names: self.names,
            strings: self.strings.into_bytes(),
        }
    }

    /// The columns of `subs`, every filter checked first ([`Filter::validate`]: the
    /// first bad filter's number and error), on all cores.
    pub fn from_subscriptions(subs: &Subscriptions) -> Result<Self, FromModelError> {
        let filters = subs.filters_by_id();
        let bad = filters
            .par_iter()
            .position_first(|(_, f)| f.validate().is_err());
        if let Some(filter) = bad {
            let source = filters[filter].1.validate().expect_err("found above");
            return Err(FromModelError::Filter { filter, source });
        }
        drop(filters);
        let all = subs.as_slice();
        let parts: Vec<Part> = all
            .par_chunks(PART_SUBS)
            .map(|chunk| {
                let mut p = Part::default();
                for s in chunk {
                    for f in &s.filters {
                        p.push_filter(s.id.0, f);
                    }
                }
                p
            })
            .collect();
        let mut cols = Self::join(parts).map_err(FromModelError::TooLarge)?;
        if cols.ids.len() != all.len() {
            // A subscription of no filter (the model allows it; a file cannot hold one)
            // keeps its place: the dense indices are the model's.
            cols.ids = all.iter().map(|s| s.id).collect();
            cols.starts = (0..all.len())
                .map(|i| subs.filter_start(i).0)
                .chain([subs.filter_count() as u32])
                .collect();
            cols.filter_sub = all
                .iter()
                .enumerate()
                .flat_map(|(i, s)| std::iter::repeat_n(i as u32, s.filters.len()))
                .collect();
        }
        Ok(cols)
    }

    /// The model of these columns (for the engines that read it).
    pub fn to_subscriptions(&self) -> Subscriptions {
        let subs: Vec<Subscription> = (0..self.len())
            .into_par_iter()
            .with_min_len(256)
            .map(|i| Subscription {
                id: self.ids[i],
                filters: (self.starts[i]..self.starts[i + 1])
                    .map(|f| self.filter(f as usize))
                    .collect(),
            })
            .collect();
        Subscriptions::from_sorted(subs)
    }

    /// Filter `f` of the model.
    pub fn filter(&self, f: usize) -> Filter {
        let constraints = self
            .constraints(f)
            .iter()
            .map(|c| Constraint {
                name: self.names[c.tag as usize].clone(),
                op: op_of_code(u32::from(c.op)),
                value: self.value_of(c).to_value(),
            })
            .collect();
        Filter {
            constraints,
            area: self.area[f],
        }
    }

    /// Joins parts made in file order (see the module's docs).
    pub fn join(parts: Vec<Part>) -> Result<Self, TooLarge> {
        // The parts' names merged in order; each part's numbers in the merged numbering.
        let mut numbers: ShortKeyMap<u32> = ShortKeyMap::default();
        let mut names: Vec<String> = Vec::new();
        let remaps: Vec<Vec<u32>> = parts
            .iter()
            .map(|p| {
                p.names
                    .iter()
                    .map(|n| {
                        numbers.get(n.as_bytes()).unwrap_or_else(|| {
                            let id = names.len() as u32;
                            numbers.insert(n.as_bytes(), id);
                            names.push(n.clone());
                            id
                        })
                    })
                    .collect()
            })
            .collect();
        // Each part's place in every column.
        let (mut nf, mut nc, mut ns) = (0usize, 0usize, 0usize);
        let mut at = Vec::with_capacity(parts.len());
        for p in &parts {
            at.push((nf, nc, ns));
            nf += p.area.len();
            nc += p.cons.len();
            ns += p.strings.len();
        }
        for (n, what) in [(nf, "filters"), (nc, "constraints"), (ns, "string bytes")] {
            if n >= u32::MAX as usize {
                return Err(TooLarge(n, what));
            }
        }
        let mut raw_id: Vec<u32> = zeroed(nf);
        let mut area: Vec<Area> = zeroed_areas(nf);
        let mut cons_start: Vec<u32> = zeroed(nf + 1);
        let mut cons: Vec<DevConstraint> = zeroed(nc);
        let mut strings: Vec<u8> = zeroed(ns);
        {
            // Each part's runs of the columns, cut in order.
            let mut tasks = Vec::with_capacity(parts.len());
            let (mut r_id, mut r_area, mut r_start) =
                (&mut raw_id[..], &mut area[..], &mut cons_start[..nf]);
            let (mut r_cons, mut r_str) = (&mut cons[..], &mut strings[..]);
            for ((p, remap), &(_, c0, s0)) in parts.iter().zip(&remaps).zip(&at) {
                let (a, b) = r_id.split_at_mut(p.area.len());
                r_id = b;
                let (a2, b2) = r_area.split_at_mut(p.area.len());
                r_area = b2;
                let (a3, b3) = r_start.split_at_mut(p.area.len());
                r_start = b3;
                let (a4, b4) = r_cons.split_at_mut(p.cons.len());
                r_cons = b4;
                let (a5, b5) = r_str.split_at_mut(p.strings.len());
                r_str = b5;
                tasks.push((p, remap, (c0, s0), (a, a2, a3, a4, a5)));
            }
            tasks
                .into_par_iter()
                .for_each(|(p, remap, (c0, s0), (ids, areas, starts, cs, ss))| {
                    ids.copy_from_slice(&p.raw_id);
                    areas.copy_from_slice(&p.area);
                    for (s, &local) in starts.iter_mut().zip(&p.cons_start) {
                        *s = (c0 + local as usize) as u32;
                    }
                    for (out, c) in cs.iter_mut().zip(&p.cons) {
                        let mut c = *c;
                        c.tag = remap[c.tag as usize];
                        if u32::from(c.kind) == KIND_STR {
                            let (off, len) = (c.bits as u32 as usize, (c.bits >> 32) as u32);
                            c.bits = str_bits((s0 + off) as u32, len);
                        }
                        *out = c;
                    }
                    ss.copy_from_slice(p.strings.as_bytes());
                });
        }
        cons_start[nf] = nc as u32;
        drop(parts);
        // The parts' strings end to end: valid UTF-8 (checked, not assumed).
        let strings = String::from_utf8(strings).map_err(|_| TooLarge(ns, "string bytes"))?;
        let mut cols = SubscriptionColumns {
            ids: Vec::new(),
            starts: Vec::new(),
            filter_sub: Vec::new(),
            area,
            cons_start,
            cons,
            names,
            strings,
        };
        let sorted = raw_id.par_windows(2).all(|w| w[0] <= w[1]);
        if !sorted {
            cols.sort_filters(&mut raw_id);
        }
        cols.number_subscriptions(&raw_id);
        cols.renumber_names();
        Ok(cols)
    }

    /// Puts the filters in subscription order (stable: a subscription's in file order),
    /// `raw_id` (each filter's subscription id) with them; every column gathered on all
    /// cores, the strings laid out again in the new constraint order.
    fn sort_filters(&mut self, raw_id: &mut Vec<u32>) {
        let n = raw_id.len();
        let mut order: Vec<u64> = raw_id
            .par_iter()
            .enumerate()
            .map(|(f, &id)| u64::from(id) << 32 | f as u64)
            .collect();
        order.par_sort_unstable();
        let from = |i: usize| order[i] as u32 as usize;
        let new_ids: Vec<u32> = (0..n).into_par_iter().map(|i| raw_id[from(i)]).collect();
        let area: Vec<Area> = (0..n).into_par_iter().map(|i| self.area[from(i)]).collect();
        let lens: Vec<u32> = (0..n)
            .into_par_iter()
            .map(|i| self.cons_start[from(i) + 1] - self.cons_start[from(i)])
            .collect();
        let slens: Vec<usize> = (0..n)
            .into_par_iter()
            .map(|i| {
                self.constraints(from(i))
                    .iter()
                    .map(|c| (c.bits >> 32) as usize * usize::from(u32::from(c.kind) == KIND_STR))
                    .sum()
            })
            .collect();
        let mut cons_start = Vec::with_capacity(n + 1);
        let mut string_at = Vec::with_capacity(n + 1);
        let (mut c, mut s) = (0u32, 0usize);
        for (&l, &sl) in lens.iter().zip(&slens) {
            cons_start.push(c);
            string_at.push(s);
            c += l;
            s += sl;
        }
        cons_start.push(c);
        string_at.push(s);
        // Parts of consecutive new filters, each writing its own runs.
        let mut cons: Vec<DevConstraint> = zeroed(c as usize);
        let mut strings: Vec<u8> = zeroed(s);
        let mut tasks = Vec::new();
        let (mut rc, mut rs) = (&mut cons[..], &mut strings[..]);
        for first in (0..n).step_by(PART_FILTERS) {
            let end = (first + PART_FILTERS).min(n);
            let (a, b) = rc.split_at_mut((cons_start[end] - cons_start[first]) as usize);
            rc = b;
            let (a2, b2) = rs.split_at_mut(string_at[end] - string_at[first]);
            rs = b2;
            tasks.push((first..end, a, a2));
        }
        let this = &*self;
        let string_at = &string_at;
        tasks.into_par_iter().for_each(|(range, cs, ss)| {
            let (mut k, base) = (0usize, string_at[range.start]);
            let mut pool = 0usize;
            for i in range {
                for c in this.constraints(from(i)) {
                    let mut c = *c;
                    if u32::from(c.kind) == KIND_STR {
                        let v = this.str_of(&c).as_bytes();
                        ss[pool..pool + v.len()].copy_from_slice(v);
                        c.bits = str_bits((base + pool) as u32, v.len() as u32);
                        pool += v.len();
                    }
                    cs[k] = c;
                    k += 1;
                }
            }
        });
        self.area = area;
        self.cons_start = cons_start;
        self.cons = cons;
        self.strings = String::from_utf8(strings).unwrap_or_default();
        *raw_id = new_ids;
    }

    /// `ids`, `starts` and `filter_sub` from the filters' subscription ids (in
    /// subscription order).
    fn number_subscriptions(&mut self, raw_id: &[u32]) {
        let n = raw_id.len();
        let (mut ids, mut starts) = (Vec::new(), Vec::new());
        let mut filter_sub = Vec::with_capacity(n);
        for (f, &id) in raw_id.iter().enumerate() {
            if ids.last() != Some(&SubscriptionId(id)) {
                ids.push(SubscriptionId(id));
                starts.push(f as u32);
            }
            filter_sub.push(ids.len() as u32 - 1);
        }
        starts.push(n as u32);
        self.ids = ids;
        self.starts = starts;
        self.filter_sub = filter_sub;
    }

    /// Numbers the names in order of first appearance over the filters in order (names
    /// no constraint uses dropped): each part's first appearances found on all cores,
    /// then merged in order; the constraints renumbered only when that changes a number.
    fn renumber_names(&mut self) {
        let rows = self.names.len();
        let firsts: Vec<Vec<u32>> = self
            .cons
            .par_chunks(PART_CONS)
            .map(|part| {
                let mut seen = vec![false; rows];
                let mut order = Vec::new();
                for c in part {
                    if !std::mem::replace(&mut seen[c.tag as usize], true) {
                        order.push(c.tag);
                    }
                }
                order
            })
            .collect();
        let mut new_of = vec![u32::MAX; rows];
        let mut order = Vec::new();
        for t in firsts.into_iter().flatten() {
            if new_of[t as usize] == u32::MAX {
                new_of[t as usize] = order.len() as u32;
                order.push(t);
            }
        }
        if order.len() == rows && order.iter().enumerate().all(|(i, &t)| i as u32 == t) {
            return;
        }
        let mut names = std::mem::take(&mut self.names);
        self.names = order
            .iter()
            .map(|&t| std::mem::take(&mut names[t as usize]))
            .collect();
        self.cons
            .par_iter_mut()
            .with_min_len(PART_CONS)
            .for_each(|c| c.tag = new_of[c.tag as usize]);
    }
}

/// The columns moved out of a [`SubscriptionColumns`] ([`SubscriptionColumns::into_parts`]).
pub(crate) struct ColumnParts {
    pub ids: Vec<SubscriptionId>,
    pub filter_sub: Vec<u32>,
    pub area: Vec<Area>,
    pub cons_start: Vec<u32>,
    pub cons: Vec<DevConstraint>,
    pub names: Vec<String>,
    pub strings: Vec<u8>,
}

/// Why [`SubscriptionColumns::from_subscriptions`] refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FromModelError {
    #[error("filter {filter}: {source}")]
    Filter {
        filter: usize,
        #[source]
        source: ModelError,
    },
    #[error(transparent)]
    TooLarge(TooLarge),
}

/// Subscriptions per part of [`SubscriptionColumns::from_subscriptions`].
const PART_SUBS: usize = 2048;

/// Filters per part of a gather.
const PART_FILTERS: usize = 8192;

/// Constraints per part of a pass over them.
const PART_CONS: usize = 1 << 16;

/// `n` zeroed records, written on all cores.
fn zeroed<T: bytemuck::Zeroable + Clone + Send + Sync>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    v.par_extend(rayon::iter::repeat_n(T::zeroed(), n));
    v
}

fn zeroed_areas(n: usize) -> Vec<Area> {
    let mut v = Vec::with_capacity(n);
    v.par_extend(rayon::iter::repeat_n(Area::default(), n));
    v
}

/// A part of the columns (a chunk of a file), in file order: each filter with its raw
/// subscription id, names numbered within the part. Filled a filter at a time:
/// [`Part::push_constraint`] for each constraint, then [`Part::end_filter`] (or
/// [`Part::abandon_filter`]).
#[derive(Clone, Debug, Default)]
pub struct Part {
    raw_id: Vec<u32>,
    area: Vec<Area>,
    /// Per filter: its first constraint (the end is the next one's, or `cons.len()`).
    cons_start: Vec<u32>,
    cons: Vec<DevConstraint>,
    names: Vec<String>,
    numbers: ShortKeyMap<u32>,
    strings: String,
    /// Where the filter being pushed began: constraints, string bytes.
    open: (usize, usize),
}

impl Part {
    /// A part with room for about `filters` filters of `cons` constraints.
    pub fn with_capacity(filters: usize, cons: usize) -> Part {
        Part {
            raw_id: Vec::with_capacity(filters),
            area: Vec::with_capacity(filters),
            cons_start: Vec::with_capacity(filters),
            cons: Vec::with_capacity(cons),
            ..Part::default()
        }
    }

    /// Filters pushed.
    pub fn filters(&self) -> usize {
        self.area.len()
    }

    /// Adds a constraint to the filter being pushed, checked as [`Constraint::new`]
    /// checks it: `None` (the part unchanged but for the names it knows) when it would
    /// refuse it, or when the filter would hold more than [`MAX_CONSTRAINTS`].
    #[inline]
    pub fn push_constraint(&mut self, name: &str, op: Op, value: ValueRef<'_>) -> Option<()> {
        if self.cons.len() - self.open.0 >= MAX_CONSTRAINTS {
            return None;
        }
        let (kind, bits) = match value {
            ValueRef::Int(i) if op.on_numbers() => (KIND_INT, i as u64),
            ValueRef::Float(x) if op.on_numbers() && !x.is_nan() => (KIND_FLOAT, x.to_bits()),
            ValueRef::Str(s) if op.on_strings() => {
                let off = self.strings.len();
                self.strings.push_str(s);
                (KIND_STR, str_bits(off as u32, s.len() as u32))
            }
            _ => return None,
        };
        let tag = match self.numbers.get(name.as_bytes()) {
            Some(t) => t,
            None => {
                let t = self.names.len() as u32;
                self.numbers.insert(name.as_bytes(), t);
                self.names.push(name.to_string());
                t
            }
        };
        self.cons.push(DevConstraint {
            op: op_code(op) as u16,
            kind: kind as u16,
            tag,
            bits,
        });
        Some(())
    }

    /// Ends the filter being pushed: its subscription's id and its area.
    #[inline]
    pub fn end_filter(&mut self, id: u32, area: Area) {
        self.raw_id.push(id);
        self.area.push(area);
        self.cons_start.push(self.open.0 as u32);
        self.open = (self.cons.len(), self.strings.len());
    }

    /// Drops the constraints pushed since the last filter ended.
    #[inline]
    pub fn abandon_filter(&mut self) {
        self.cons.truncate(self.open.0);
        self.strings.truncate(self.open.1);
    }

    /// Pushes a checked filter of the model (a subscription `id`'s).
    pub fn push_filter(&mut self, id: u32, f: &Filter) {
        for c in &f.constraints {
            let pushed = self.push_constraint(&c.name, c.op, ValueRef::from(&c.value));
            debug_assert!(pushed.is_some(), "a checked filter's constraint");
        }
        self.end_filter(id, f.area);
    }

    /// Pushes subscription `s`'s filters (checked ones: the loader's).
    pub fn push_subscription(&mut self, s: &Subscription) {
        for f in &s.filters {
            self.push_filter(s.id.0, f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Value;
    use crate::workload::{Params, Workload};

    fn workload(n: usize, seed: u64) -> Subscriptions {
        Workload::new(
            Params {
                subscriptions: n,
                filters_per_subscription: 3,
                names: 12,
                selectivity_percent: 30.0,
                ..Params::default()
            },
            seed,
        )
        .subscriptions()
    }

    #[test]
    fn columns_give_back_the_model_they_were_made_from() {
        for n in [0, 1, 5000] {
            let subs = workload(n, 7);
            let cols = SubscriptionColumns::from_subscriptions(&subs).unwrap();
            assert_eq!(cols.len(), subs.len());
            assert_eq!(cols.filter_count(), subs.filter_count());
            assert_eq!(cols.to_subscriptions(), subs);
        }
    }

    #[test]
    fn parts_out_of_subscription_order_are_sorted_stably_and_names_renumbered() {
        // Subscription 9's filters first, then 2's, then 9's again, in parts.
        let c = |name: &str, op: Op, v: Value| Constraint::new(name, op, v).unwrap();
        let f1 = Filter::new(
            vec![c("z", Op::Eq, Value::Str("a".into()))],
            Area::circle(0.0, 0.0, 1.0).unwrap(),
        )
        .unwrap();
        let f2 = Filter::new(
            vec![
                c("y", Op::Lt, Value::Int(3)),
                c("z", Op::Prefix, Value::Str("bc".into())),
            ],
            Area::circle(1.0, 0.0, 1.0).unwrap(),
        )
        .unwrap();
        let f3 = Filter::new(vec![], Area::rect(0.0, 0.0, 2.0, 1.0).unwrap()).unwrap();
        let f4 = Filter::new(
            vec![c("x", Op::Ge, Value::Float(2.5))],
            Area::circle(2.0, 2.0, 1.0).unwrap(),
        )
        .unwrap();
        let mut p1 = Part::default();
        p1.push_filter(9, &f1);
        p1.push_filter(2, &f2);
        let mut p2 = Part::default();
        p2.push_filter(9, &f3);
        p2.push_filter(2, &f4);
        let cols = SubscriptionColumns::join(vec![p1, p2]).unwrap();
        let want = Subscriptions::new(vec![
            Subscription {
                id: SubscriptionId(9),
                filters: vec![f1, f3],
            },
            Subscription {
                id: SubscriptionId(2),
                filters: vec![f2, f4],
            },
        ]);
        assert_eq!(cols.to_subscriptions(), want);
        // Names in first appearance over the sorted filters: y, z, x.
        assert_eq!(cols.names(), ["y", "z", "x"]);
        assert_eq!(
            cols,
            SubscriptionColumns::from_subscriptions(&want).unwrap()
        );
        assert_eq!(cols.strings(), "bca");
    }

    #[test]
    fn a_subscription_of_no_filter_keeps_its_dense_index() {
        let mut subs = workload(6, 2).as_slice().to_vec();
        subs[2].filters.clear();
        subs[5].filters.clear();
        let subs = Subscriptions::new(subs);
        let cols = SubscriptionColumns::from_subscriptions(&subs).unwrap();
        assert_eq!(cols.len(), 6);
        assert_eq!(
            cols.ids(),
            subs.as_slice().iter().map(|s| s.id).collect::<Vec<_>>()
        );
        assert_eq!(cols.to_subscriptions(), subs);
        let want: Vec<u32> = subs.filters().map(|(_, i, _)| i as u32).collect();
        assert_eq!(cols.filter_sub(), want);
    }

    #[test]
    fn a_refused_constraint_leaves_the_part_as_it_was() {
        let mut p = Part::default();
        assert!(p.push_constraint("a", Op::Eq, ValueRef::Int(1)).is_some());
        assert!(p
            .push_constraint("b", Op::Prefix, ValueRef::Int(1))
            .is_none());
        assert!(p.push_constraint("b", Op::Lt, ValueRef::Str("s")).is_none());
        assert!(p
            .push_constraint("b", Op::Lt, ValueRef::Float(f64::NAN))
            .is_none());
        p.push_constraint("s", Op::Eq, ValueRef::Str("v")).unwrap();
        p.abandon_filter();
        assert!(p.cons.is_empty() && p.strings.is_empty());
        for _ in 0..MAX_CONSTRAINTS {
            p.push_constraint("a", Op::Eq, ValueRef::Int(1)).unwrap();
        }
        assert!(p.push_constraint("a", Op::Eq, ValueRef::Int(1)).is_none());
    }

    #[test]
    fn a_bad_filter_of_the_model_is_named() {
        let mut subs = workload(10, 3).as_slice().to_vec();
        subs[4].filters[1].constraints.push(Constraint {
            name: "n".into(),
            op: Op::Prefix,
            value: Value::Int(1),
        });
        let subs = Subscriptions::new(subs);
        let e = SubscriptionColumns::from_subscriptions(&subs).unwrap_err();
        assert!(
            matches!(e, FromModelError::Filter { filter: 13, .. }),
            "{e}"
        );
    }
}
