//! Table 1 of §5 as a struct ([`Params`], default = the paper's default scenario) and a
//! seeded, deterministic generator ([`generate`]).
//!
//! Choices where the paper is silent (documented here, used by every experiment):
//! - names are `n0 .. n{names-1}`, drawn uniformly or from a Zipf law (exponent 1) over
//!   their index; the constraints of one filter and the attributes of one event have
//!   distinct names (when there are enough names);
//! - each constraint is numerical with probability `numeric_share`, else a string
//!   constraint; each event attribute is a number with the same probability (so a
//!   constraint and an attribute of one name may differ in type: then unsatisfied);
//! - "number of values" `v`: numbers are integers drawn uniformly from `0..v`; strings
//!   come from a vocabulary of `v` random lowercase words of 4-10 letters; an `=` / `!=`
//!   string constraint takes a vocabulary word, a `prefix` / `suffix` one a prefix /
//!   suffix of one (1 to all of its letters), a `substr` one an infix of one;
//! - operators are drawn with the weights of [`Params::numeric_ops`] and
//!   [`Params::string_ops`] (Table 1: 25% each of `= != > <` and `= != substr prefix`).
//!
//! Beyond the paper, [`DenseParams`] and [`generate_dense`] give the "dense" model of the
//! REIN / HEM literature (Shi & Qian's HEM benchmark, DASFAA 2022, after Qian et al.'s
//! REIN): `d` numeric names (20), every filter a conjunction of range predicates on
//! distinct names, every event a value for many of the names. The choices:
//! - names are `n0 .. n{names-1}`; a filter has `k` distinct names, `k` uniform in
//!   [`DenseParams::predicates_per_filter`] (1-5), the names uniform without repetition;
//! - each predicate is a range `lo <= name <= hi` written as two constraints on the same
//!   name, `name >= lo` and `name <= hi` (integer values): its width `hi - lo` is uniform
//!   in `0..=max_width * domain` (a fifth of the domain at most), `lo` uniform in the
//!   values where the range fits the domain `0..domain`;
//! - an event carries `m` distinct names, `m` uniform in
//!   [`DenseParams::names_per_event`], the names uniform without repetition (or, with
//!   [`DenseParams::event_names`] `Zipf(s)`, drawn from a Zipf law over the name index,
//!   repeats drawn again: the HEM suite's skewed events), each with an integer value
//!   uniform in `0..domain`;
//! - with [`DenseParams::interfaces`] `None` each filter is its own interface (filter `i`
//!   is interface `i`: the answers are per subscription, as in the REIN / HEM papers);
//!   with `Some(m)` filter `i` goes to interface `i % m` (so each interface has
//!   `filters / m` filters, give or take one).
//!
//! A predicate holds for a value with probability about `max_width / 2` (0.1), so with
//! all 20 names in the event a filter of `k` predicates matches with probability about
//! `0.1^k`: about 2% of the filters on average over `k` in 1-5, the match rate of the
//! REIN / HEM benchmarks; with 4 names per event far fewer filters have all their names.

use crate::batch::{EventBatch, ValueRef};
use crate::model::{Constraint, Event, Filter, InterfaceId, Op, Subscription, Value};
use rand::distributions::{Distribution, WeightedIndex};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// How attribute and constraint names are drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NameDist {
    Uniform,
    /// Zipf's law with this exponent over the name index (the paper's Table 2, row 4).
    Zipf(f64),
}

/// Table 1's parameters. `Params::default()` is the paper's default scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Number of events (1000).
    pub events: usize,
    /// Attributes per event, min-max (3-5).
    pub attrs_per_event: (usize, usize),
    /// Number of interfaces (10).
    pub interfaces: usize,
    /// Constraints per filter, min-max (3-5).
    pub constraints_per_filter: (usize, usize),
    /// Filters per interface, min-max (22500-27500).
    pub filters_per_interface: (usize, usize),
    /// Number of names (100).
    pub names: usize,
    /// Distribution of names (uniform).
    pub name_dist: NameDist,
    /// Share of numerical constraints and attributes, 0..=1 (0.5).
    pub numeric_share: f64,
    /// Numerical operators with weights (`=` `!=` `>` `<`, 25% each).
    pub numeric_ops: Vec<(Op, f64)>,
    /// String operators with weights (`=` `!=` `substr` `prefix`, 25% each).
    pub string_ops: Vec<(Op, f64)>,
    /// Number of values (100).
    pub values: usize,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            events: 1000,
            attrs_per_event: (3, 5),
            interfaces: 10,
            constraints_per_filter: (3, 5),
            filters_per_interface: (22_500, 27_500),
            names: 100,
            name_dist: NameDist::Uniform,
            numeric_share: 0.5,
            numeric_ops: vec![
                (Op::Eq, 0.25),
                (Op::Ne, 0.25),
                (Op::Gt, 0.25),
                (Op::Lt, 0.25),
            ],
            string_ops: vec![
                (Op::Eq, 0.25),
                (Op::Ne, 0.25),
                (Op::Substr, 0.25),
                (Op::Prefix, 0.25),
            ],
            values: 100,
        }
    }
}

/// Why parameters cannot generate a workload.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WorkloadError {
    #[error("{what}: min {min} > max {max}")]
    Range {
        what: &'static str,
        min: usize,
        max: usize,
    },
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    #[error("numeric_share {0} is not within 0..=1")]
    Share(f64),
    #[error(
        "{0}: operator weights must be non-negative, finite, not all zero, and apply to the type"
    )]
    Ops(&'static str),
    #[error("Zipf exponent {0} must be positive and finite")]
    Zipf(f64),
    #[error("{what}: {max} distinct names asked of only {names}")]
    TooFewNames {
        what: &'static str,
        max: usize,
        names: usize,
    },
    #[error("max_width {0} is not within 0..=1")]
    Width(f64),
    #[error("{filters} filters, one interface each: more than interface ids can number")]
    TooManyInterfaces { filters: usize },
}

/// Subscriptions and events of one seed.
///
/// The generators draw the events into [`Workload::batch`], the flat batch every engine
/// takes ([`crate::batch`]); [`Workload::events`] holds the same events as heap objects,
/// converted once, for the APIs that take them. Code that changes one changes the other
/// too.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub subscriptions: Vec<Subscription>,
    pub events: Vec<Event>,
    pub batch: EventBatch,
}

impl Workload {
    /// Total number of constraints.
    pub fn constraints(&self) -> usize {
        self.subscriptions
            .iter()
            .map(|s| s.filter.constraints.len())
            .sum()
    }
}

impl Params {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        for (what, (min, max)) in [
            ("attrs_per_event", self.attrs_per_event),
            ("constraints_per_filter", self.constraints_per_filter),
            ("filters_per_interface", self.filters_per_interface),
        ] {
            if min > max {
                return Err(WorkloadError::Range { what, min, max });
            }
        }
        if self.constraints_per_filter.0 == 0 {
            return Err(WorkloadError::Zero("constraints_per_filter min"));
        }
        if self.names == 0 {
            return Err(WorkloadError::Zero("names"));
        }
        if self.values == 0 {
            return Err(WorkloadError::Zero("values"));
        }
        if !(0.0..=1.0).contains(&self.numeric_share) {
            return Err(WorkloadError::Share(self.numeric_share));
        }
        if let NameDist::Zipf(s) = self.name_dist {
            if !(s > 0.0 && s.is_finite()) {
                return Err(WorkloadError::Zipf(s));
            }
        }
        let ok = |ops: &[(Op, f64)], num: bool| {
            ops.iter().all(|&(op, w)| {
                w >= 0.0
                    && w.is_finite()
                    && if num {
                        op.on_numbers()
                    } else {
                        op.on_strings()
                    }
            }) && ops.iter().any(|&(_, w)| w > 0.0)
        };
        if !ok(&self.numeric_ops, true) {
            return Err(WorkloadError::Ops("numeric_ops"));
        }
        if !ok(&self.string_ops, false) {
            return Err(WorkloadError::Ops("string_ops"));
        }
        Ok(())
    }
}

#[derive(Clone)]
struct Gen {
    rng: ChaCha8Rng,
    zipf: Option<rand_distr::Zipf<f64>>,
    names: Vec<String>,
    words: Vec<String>,
    num_ops: (Vec<Op>, WeightedIndex<f64>),
    str_ops: (Vec<Op>, WeightedIndex<f64>),
}

impl Gen {
    fn name(&mut self) -> usize {
        match &self.zipf {
            Some(z) => (z.sample(&mut self.rng) as usize).clamp(1, self.names.len()) - 1,
            None => self.rng.gen_range(0..self.names.len()),
        }
    }

    /// `k` names, distinct while there are enough names (rejection with a bound, so a
    /// steep Zipf law cannot loop forever).
    fn distinct_names(&mut self, k: usize) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::with_capacity(k);
        let mut tries = 0;
        while out.len() < k {
            let n = self.name();
            tries += 1;
            if !out.contains(&n) || tries > 64 * k {
                out.push(n);
            }
        }
        out
    }

    fn word(&mut self) -> &str {
        let i = self.rng.gen_range(0..self.words.len());
        &self.words[i]
    }
}

fn gen_words(rng: &mut ChaCha8Rng, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let len = rng.gen_range(4..=10);
            (0..len)
                .map(|_| rng.gen_range(b'a'..=b'z') as char)
                .collect()
        })
        .collect()
}

/// Generates the workload of `p` for `seed` (same inputs, same workload).
///
/// ```
/// use ccm::workload::{generate, NameDist, Params};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // Table 1's default scenario, scaled down, with Zipf-distributed names.
/// let p = Params {
///     events: 20,
///     filters_per_interface: (10, 10),
///     name_dist: NameDist::Zipf(1.0),
///     ..Params::default()
/// };
/// let w = generate(&p, 42)?;
/// assert_eq!(w.events.len(), 20);
/// assert_eq!(w.subscriptions.len(), p.interfaces * 10);
/// assert_eq!(w, generate(&p, 42)?); // deterministic per seed
/// assert!(generate(&Params { numeric_share: 2.0, ..p }, 42).is_err());
/// # Ok(()) }
/// ```
pub fn generate(p: &Params, seed: u64) -> Result<Workload, WorkloadError> {
    p.validate()?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let words = gen_words(&mut rng, p.values);
    let split = |ops: &[(Op, f64)]| {
        (
            ops.iter().map(|o| o.0).collect::<Vec<_>>(),
            WeightedIndex::new(ops.iter().map(|o| o.1)).expect("validated"),
        )
    };
    let mut g = Gen {
        rng,
        zipf: match p.name_dist {
            NameDist::Uniform => None,
            NameDist::Zipf(s) => Some(rand_distr::Zipf::new(p.names as u64, s).expect("validated")),
        },
        names: (0..p.names).map(|i| format!("n{i}")).collect(),
        words,
        num_ops: split(&p.numeric_ops),
        str_ops: split(&p.string_ops),
    };
    // Interfaces are generated in parallel, interface i from ChaCha stream i + 1 of the
    // seed (deterministic whatever the thread count); events from stream 0.
    let per_interface: Vec<Vec<Subscription>> = (0..p.interfaces)
        .into_par_iter()
        .map(|i| {
            let mut g = g.clone();
            g.rng = ChaCha8Rng::seed_from_u64(seed);
            g.rng.set_stream(1 + i as u64);
            let nf = g
                .rng
                .gen_range(p.filters_per_interface.0..=p.filters_per_interface.1);
            (0..nf)
                .map(|_| {
                    let nc = g
                        .rng
                        .gen_range(p.constraints_per_filter.0..=p.constraints_per_filter.1);
                    let names = g.distinct_names(nc);
                    let constraints = names
                        .into_iter()
                        .map(|n| constraint(&mut g, p, n))
                        .collect();
                    Subscription {
                        interface: InterfaceId(i as u32),
                        filter: Filter { constraints },
                    }
                })
                .collect()
        })
        .collect();
    let subscriptions: Vec<Subscription> = per_interface.into_iter().flatten().collect();
    let mut batch = EventBatch::with_capacity(p.events, p.events * p.attrs_per_event.1);
    let ids: Vec<u32> = g.names.iter().map(|n| batch.intern_name(n)).collect();
    for _ in 0..p.events {
        let na = g
            .rng
            .gen_range(p.attrs_per_event.0..=p.attrs_per_event.1)
            .min(p.names);
        let mut names = g.distinct_names(na);
        names.sort_unstable();
        names.dedup();
        for n in names {
            let pushed = if g.rng.gen_bool(p.numeric_share) {
                batch.push(ids[n], ValueRef::Int(g.rng.gen_range(0..p.values as i64)))
            } else {
                let i = g.rng.gen_range(0..g.words.len());
                batch.push(ids[n], ValueRef::Str(&g.words[i]))
            };
            pushed.expect("no NaN");
        }
        batch.end_event().expect("distinct names");
    }
    Ok(Workload {
        subscriptions,
        events: batch.to_events(),
        batch,
    })
}

fn constraint(g: &mut Gen, p: &Params, name: usize) -> Constraint {
    let name = g.names[name].clone();
    if g.rng.gen_bool(p.numeric_share) {
        let op = g.num_ops.0[g.num_ops.1.sample(&mut g.rng)];
        Constraint {
            name,
            op,
            value: Value::Int(g.rng.gen_range(0..p.values as i64)),
        }
    } else {
        let op = g.str_ops.0[g.str_ops.1.sample(&mut g.rng)];
        let w = g.word().to_string();
        let len = w.len();
        let s = match op {
            Op::Prefix => {
                let k = g.rng.gen_range(1..=len);
                w[..k].to_string()
            }
            Op::Suffix => {
                let k = g.rng.gen_range(1..=len);
                w[len - k..].to_string()
            }
            Op::Substr => {
                let a = g.rng.gen_range(0..len);
                let b = g.rng.gen_range(a + 1..=len);
                w[a..b].to_string()
            }
            _ => w,
        };
        Constraint {
            name,
            op,
            value: Value::Str(s),
        }
    }
}

/// The "dense" model of the REIN / HEM literature (see the module docs): numeric names,
/// range predicates, events carrying many names. `DenseParams::default()` is its usual
/// setting at 100k filters, one interface per filter, 3-5 names per event.
#[derive(Clone, Debug, PartialEq)]
pub struct DenseParams {
    /// Number of events (1000).
    pub events: usize,
    /// Number of filters (100,000).
    pub filters: usize,
    /// Number of interfaces: `None` (the default), one per filter (filter `i` is
    /// interface `i`); `Some(m)`, filter `i` goes to interface `i % m`.
    pub interfaces: Option<usize>,
    /// Number of names, `d` (20).
    pub names: usize,
    /// Names carried per event, min-max (3-5).
    pub names_per_event: (usize, usize),
    /// How an event's names are drawn: uniformly (the default) or from a Zipf law over
    /// the name index (`n0` the most likely), without repetition either way.
    pub event_names: NameDist,
    /// Range predicates per filter, each on its own name, min-max (1-5).
    pub predicates_per_filter: (usize, usize),
    /// Values are integers in `0..domain` (1,000,000).
    pub domain: i64,
    /// The widest range, as a share of the domain, 0..=1 (0.2).
    pub max_width: f64,
}

impl Default for DenseParams {
    fn default() -> Self {
        DenseParams {
            events: 1000,
            filters: 100_000,
            interfaces: None,
            names: 20,
            names_per_event: (3, 5),
            event_names: NameDist::Uniform,
            predicates_per_filter: (1, 5),
            domain: 1_000_000,
            max_width: 0.2,
        }
    }
}

impl DenseParams {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        for (what, (min, max)) in [
            ("names_per_event", self.names_per_event),
            ("predicates_per_filter", self.predicates_per_filter),
        ] {
            if min > max {
                return Err(WorkloadError::Range { what, min, max });
            }
            if max > self.names {
                return Err(WorkloadError::TooFewNames {
                    what,
                    max,
                    names: self.names,
                });
            }
        }
        if self.predicates_per_filter.0 == 0 {
            return Err(WorkloadError::Zero("predicates_per_filter min"));
        }
        if self.names == 0 {
            return Err(WorkloadError::Zero("names"));
        }
        if self.domain < 1 {
            return Err(WorkloadError::Zero("domain"));
        }
        if self.interfaces == Some(0) {
            return Err(WorkloadError::Zero("interfaces"));
        }
        if self.interfaces.is_none() && self.filters > u32::MAX as usize {
            return Err(WorkloadError::TooManyInterfaces {
                filters: self.filters,
            });
        }
        if !(0.0..=1.0).contains(&self.max_width) {
            return Err(WorkloadError::Width(self.max_width));
        }
        if let NameDist::Zipf(s) = self.event_names {
            if !(s.is_finite() && s > 0.0) {
                return Err(WorkloadError::Zipf(s));
            }
        }
        Ok(())
    }

    /// The interface of filter `i`.
    fn interface(&self, i: usize) -> InterfaceId {
        InterfaceId(match self.interfaces {
            None => i as u32,
            Some(m) => (i % m) as u32,
        })
    }
}

/// Filters generated from one ChaCha stream by [`generate_dense`] (the streams, not the
/// threads, fix the workload).
const DENSE_CHUNK: usize = 16_384;

/// Generates the dense workload of `p` for `seed` (same inputs, same workload, whatever
/// the number of threads): filters in chunks of 16,384, chunk `j` from ChaCha stream
/// `j + 1` of the seed, in parallel; events from stream 0.
///
/// ```
/// use ccm::workload::{generate_dense, DenseParams};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let p = DenseParams {
///     events: 10,
///     filters: 500,
///     names_per_event: (20, 20),
///     ..DenseParams::default()
/// };
/// let w = generate_dense(&p, 42)?;
/// assert_eq!(w.subscriptions.len(), 500);
/// assert!(w.events.iter().all(|e| e.len() == 20));
/// assert_eq!(w, generate_dense(&p, 42)?); // deterministic per seed
/// assert!(generate_dense(&DenseParams { max_width: 2.0, ..p }, 42).is_err());
/// # Ok(()) }
/// ```
pub fn generate_dense(p: &DenseParams, seed: u64) -> Result<Workload, WorkloadError> {
    p.validate()?;
    let names: Vec<String> = (0..p.names).map(|i| format!("n{i}")).collect();
    let widest = (p.max_width * p.domain as f64).floor() as i64;
    let widest = widest.clamp(0, p.domain - 1);
    let rng_of = |stream: u64| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        rng
    };
    let chunks: Vec<Vec<Subscription>> = (0..p.filters.div_ceil(DENSE_CHUNK))
        .into_par_iter()
        .map(|j| {
            let mut rng = rng_of(1 + j as u64);
            let first = j * DENSE_CHUNK;
            (first..p.filters.min(first + DENSE_CHUNK))
                .map(|i| {
                    let (lo_k, hi_k) = p.predicates_per_filter;
                    let k = rng.gen_range(lo_k..=hi_k);
                    let mut constraints = Vec::with_capacity(2 * k);
                    for n in rand::seq::index::sample(&mut rng, p.names, k) {
                        let width = rng.gen_range(0..=widest);
                        let lo = rng.gen_range(0..p.domain - width);
                        for (op, v) in [(Op::Ge, lo), (Op::Le, lo + width)] {
                            constraints.push(Constraint {
                                name: names[n].clone(),
                                op,
                                value: Value::Int(v),
                            });
                        }
                    }
                    Subscription {
                        interface: p.interface(i),
                        filter: Filter { constraints },
                    }
                })
                .collect()
        })
        .collect();
    let subscriptions: Vec<Subscription> = chunks.into_iter().flatten().collect();
    let mut rng = rng_of(0);
    let mut batch = EventBatch::with_capacity(p.events, p.events * p.names_per_event.1);
    let ids: Vec<u32> = names.iter().map(|n| batch.intern_name(n)).collect();
    let zipf = match p.event_names {
        NameDist::Uniform => None,
        NameDist::Zipf(s) => Some(rand_distr::Zipf::new(p.names as u64, s).expect("validated")),
    };
    for _ in 0..p.events {
        let m = rng.gen_range(p.names_per_event.0..=p.names_per_event.1);
        let mut picked = match &zipf {
            None => rand::seq::index::sample(&mut rng, p.names, m).into_vec(),
            Some(z) => zipf_distinct(&mut rng, z, p.names, m),
        };
        picked.sort_unstable();
        for n in picked {
            let v = ValueRef::Int(rng.gen_range(0..p.domain));
            batch.push(ids[n], v).expect("no NaN");
        }
        batch.end_event().expect("distinct names");
    }
    Ok(Workload {
        subscriptions,
        events: batch.to_events(),
        batch,
    })
}

/// `m` distinct names of `0..names` drawn from the Zipf law `z` (over `1..=names`),
/// a repeat drawn again; after `64 m` draws (a steep law) the rest are the lowest unused
/// names, so the draw always ends.
fn zipf_distinct(
    rng: &mut ChaCha8Rng,
    z: &rand_distr::Zipf<f64>,
    names: usize,
    m: usize,
) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::with_capacity(m);
    let mut tries = 0;
    while out.len() < m && tries < 64 * m {
        let n = (z.sample(rng) as usize).clamp(1, names) - 1;
        tries += 1;
        if !out.contains(&n) {
            out.push(n);
        }
    }
    let mut next = 0;
    while out.len() < m {
        if !out.contains(&next) {
            out.push(next);
        }
        next += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Params {
        Params {
            events: 20,
            interfaces: 3,
            filters_per_interface: (5, 8),
            names: 10,
            ..Params::default()
        }
    }

    #[test]
    fn same_seed_same_workload_other_seed_other_workload() {
        assert_eq!(
            generate(&small(), 7).unwrap(),
            generate(&small(), 7).unwrap()
        );
        assert_ne!(
            generate(&small(), 7).unwrap(),
            generate(&small(), 8).unwrap()
        );
    }

    #[test]
    fn generated_sizes_respect_table_1_ranges() {
        let p = small();
        let w = generate(&p, 1).unwrap();
        assert_eq!(w.events.len(), 20);
        assert!((15..=24).contains(&w.subscriptions.len()));
        for s in &w.subscriptions {
            assert!((3..=5).contains(&s.filter.constraints.len()));
            s.filter.validate().unwrap();
        }
        for e in &w.events {
            assert!((3..=5).contains(&e.len()));
        }
    }

    #[test]
    fn zipf_favours_the_first_names() {
        let p = Params {
            name_dist: NameDist::Zipf(1.0),
            names: 100,
            ..small()
        };
        let w = generate(&p, 3).unwrap();
        let first = w
            .subscriptions
            .iter()
            .flat_map(|s| &s.filter.constraints)
            .filter(|c| c.name == "n0")
            .count();
        let last = w
            .subscriptions
            .iter()
            .flat_map(|s| &s.filter.constraints)
            .filter(|c| c.name == "n99")
            .count();
        assert!(first > last + 3, "{first} vs {last}");
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(generate(
            &Params {
                attrs_per_event: (5, 3),
                ..small()
            },
            0
        )
        .is_err());
        assert!(generate(
            &Params {
                numeric_share: 1.5,
                ..small()
            },
            0
        )
        .is_err());
        assert!(generate(
            &Params {
                numeric_ops: vec![(Op::Prefix, 1.0)],
                ..small()
            },
            0
        )
        .is_err());
        assert!(generate(
            &Params {
                names: 0,
                ..small()
            },
            0
        )
        .is_err());
    }

    fn dense() -> DenseParams {
        DenseParams {
            events: 50,
            filters: 40_000,
            ..DenseParams::default()
        }
    }

    #[test]
    fn dense_same_seed_same_workload_other_seed_other_workload() {
        let p = DenseParams {
            filters: 2 * DENSE_CHUNK + 7,
            ..dense()
        };
        let a = generate_dense(&p, 5).unwrap();
        assert_eq!(a, generate_dense(&p, 5).unwrap());
        // The same on one thread as on the pool's many: streams, not threads.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert_eq!(a, pool.install(|| generate_dense(&p, 5)).unwrap());
        assert_ne!(a, generate_dense(&p, 6).unwrap());
    }

    #[test]
    fn dense_filters_are_ranges_on_distinct_names_and_events_carry_distinct_names() {
        let p = DenseParams {
            names_per_event: (4, 6),
            ..dense()
        };
        let w = generate_dense(&p, 1).unwrap();
        assert_eq!(w.subscriptions.len(), p.filters);
        assert_eq!(w.events.len(), p.events);
        let widest = (p.max_width * p.domain as f64) as i64;
        let mut ks = [0usize; 6];
        for (i, s) in w.subscriptions.iter().enumerate() {
            assert_eq!(s.interface, InterfaceId(i as u32));
            s.filter.validate().unwrap();
            let c = &s.filter.constraints;
            assert_eq!(c.len() % 2, 0);
            let k = c.len() / 2;
            assert!((1..=5).contains(&k), "{k} predicates");
            ks[k] += 1;
            let mut seen = Vec::new();
            for pair in c.chunks(2) {
                let (ge, le) = (&pair[0], &pair[1]);
                assert_eq!(ge.name, le.name);
                assert!(!seen.contains(&ge.name));
                seen.push(ge.name.clone());
                assert!((ge.op, le.op) == (Op::Ge, Op::Le));
                let (Value::Int(lo), Value::Int(hi)) = (&ge.value, &le.value) else {
                    panic!("integer bounds")
                };
                assert!(0 <= *lo && lo <= hi && *hi < p.domain && hi - lo <= widest);
            }
        }
        // Every size of filter occurs, each about a fifth of the time.
        for k in 1..=5 {
            assert!(ks[k] > p.filters / 6, "{ks:?}");
        }
        for e in &w.events {
            assert!((4..=6).contains(&e.len()));
            for a in e.attributes() {
                let Value::Int(v) = a.value else {
                    panic!("integer values")
                };
                assert!((0..p.domain).contains(&v));
                assert!(a.name[1..].parse::<usize>().unwrap() < p.names);
            }
        }
    }

    /// With all 20 names in the event, about 2% of the filters match (the REIN / HEM
    /// benchmarks' rate); with 3-5 names about a fifth of that.
    #[test]
    fn dense_match_rate_with_every_name_is_about_two_percent() {
        let rate = |names_per_event| {
            let p = DenseParams {
                names_per_event,
                ..dense()
            };
            let w = generate_dense(&p, 3).unwrap();
            let matched: usize = w
                .events
                .iter()
                .map(|e| {
                    w.subscriptions
                        .iter()
                        .filter(|s| s.filter.constraints.iter().all(|c| holds(c, e)))
                        .count()
                })
                .sum();
            matched as f64 / (w.events.len() * w.subscriptions.len()) as f64
        };
        let all = rate((20, 20));
        assert!((0.012..0.035).contains(&all), "{all}");
        assert!(rate((3, 5)) < all / 3.0);
    }

    fn holds(c: &Constraint, e: &Event) -> bool {
        let Some(a) = e.attributes().iter().find(|a| a.name == c.name) else {
            return false;
        };
        match (&a.value, &c.value, c.op) {
            (Value::Int(v), Value::Int(x), Op::Ge) => v >= x,
            (Value::Int(v), Value::Int(x), Op::Le) => v <= x,
            _ => unreachable!("dense constraints are integer ranges"),
        }
    }

    #[test]
    fn dense_interfaces_go_round_robin_and_bad_parameters_are_refused() {
        let p = DenseParams {
            filters: 25,
            interfaces: Some(10),
            ..dense()
        };
        let w = generate_dense(&p, 2).unwrap();
        for (i, s) in w.subscriptions.iter().enumerate() {
            assert_eq!(s.interface, InterfaceId((i % 10) as u32));
        }
        for bad in [
            DenseParams {
                interfaces: Some(0),
                ..p.clone()
            },
            DenseParams {
                predicates_per_filter: (0, 3),
                ..p.clone()
            },
            DenseParams {
                names_per_event: (5, 3),
                ..p.clone()
            },
            DenseParams {
                names_per_event: (3, 21),
                ..p.clone()
            },
            DenseParams {
                max_width: -0.1,
                ..p.clone()
            },
            DenseParams {
                domain: 0,
                ..p.clone()
            },
            DenseParams {
                event_names: NameDist::Zipf(0.0),
                ..p.clone()
            },
        ] {
            assert!(generate_dense(&bad, 0).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn dense_zipf_events_carry_distinct_names_favouring_the_first() {
        let p = DenseParams {
            events: 400,
            filters: 10,
            names_per_event: (5, 10),
            event_names: NameDist::Zipf(1.0),
            ..DenseParams::default()
        };
        let w = generate_dense(&p, 5).unwrap();
        let mut seen = vec![0usize; p.names];
        for e in &w.events {
            assert!((5..=10).contains(&e.len()));
            for a in e.attributes() {
                seen[a.name[1..].parse::<usize>().unwrap()] += 1;
            }
        }
        // Event::new refused repeats already; the first name is in almost every event,
        // the last in far fewer.
        assert!(seen[0] > 350 && seen[19] < seen[0] / 2, "{seen:?}");
    }
}
