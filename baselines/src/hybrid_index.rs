//! CCM's strongest CPU matcher: the value index ([`crate::value_index`]) and the name
//! index ([`crate::content_index`]) over one subscription set, the cheaper of the two
//! chosen per event by a cost model.
//!
//! Why two. The name index visits the filters whose two rarest names the event has and
//! stops evaluating an interface's filters once it has matched: with few names per
//! event among many (Table 1: 3-5 of 100) it touches a few hundred filters. The value
//! index costs about one OR over every filter's bit per indexed name, whatever the
//! event, and nothing per filter it rules out: with many names per event (the REIN/HEM
//! model, 10-20 of 20) the name index visits most filters and the value index is 10-50x
//! faster. Neither wins everywhere.
//!
//! The choice, per event with `k` of the `d` indexed names:
//! 1. A static bound. The value index costs at least `WORD_NS · (d - k) · N / 64` (an
//!    OR over the `N` filters' bits per absent name; more for the present ones) unless
//!    it scans by set of names (then the bound is 0). The
//!    name index costs at most `VISIT_NS · V(k) + EVAL_NS · E(k)`, where `V(k)` is the
//!    expected number of filters whose two rarest names are among `k` names drawn at
//!    random from `d` (the partitions it visits) and `E(k)` of those whose names all
//!    are (they pass the signature test and are evaluated): `Σ_f Π_{i < s_f} (k - i) /
//!    (d - i)` over the filters with `s_f` distinct names (capped at 2 for `V`),
//!    tabulated for every `k` at build time. Where the name index's bound is below the
//!    value index's cost (Table 1: a few hundred filters against 100 ORs), it answers,
//!    and nothing is measured: the bound is an upper one against a lower one, so
//!    measuring could only confirm it. Which `k` it decides is settled at build time
//!    (`plain`), and such an event runs the name index's plain loop, with no clock, no
//!    budget and no exploration; an event with at most as many attributes as the
//!    largest `k` below which every count is decided (`plain_upto`: Table 1's events,
//!    3-5 of 100 names) runs the very function the name index runs alone
//!    ([`ContentIndex`]'s `match_attrs_with`, the one under its `match_event_with`, for
//!    heap events and for a batch alike), without numbering its names first: one
//!    comparison more than the name index alone. (Before, the bound was evaluated per
//!    event inside the measured path's code, around a copy of the numbering: over the
//!    same name index, Table 2's default scenario took 1-2.5% longer in the hybrid
//!    than in the name index alone; see the numbers at the end.) [`HybridStats`] counts
//!    the events that took more than that.
//! 2. Otherwise it is measured. The bound ignores the name index's early stop: with few
//!    interfaces it stops once each has matched, often after a few dozen filters
//!    (10 interfaces and 20 names per event: 20x below the bound). So both indexes are
//!    timed on the first events of each `k` (the slower once only when it is 4x slower:
//!    with a million filters one run of it costs dozens of the other), then the faster (a
//!    mean per `k` over the last few hundred samples, shared by the threads, each adding
//!    its samples 16 at a time; the least of the first samples) answers; one event in 8
//!    of a thread, at random, re-times the chosen one (two clock reads), and now and then
//!    the other is explored: it answers one event cold (timed apart, as its cold time)
//!    and the next event with as many names warm (timed into its mean). Timed twice on
//!    the same event instead, the second run found that event's data in the caches and
//!    read 2-3x below its time on a stream, so the value index looked cheaper than it was
//!    and was chosen, then dropped, for hundreds of events. An exploration costs about
//!    one cold and one warm run, and the cold run dominates (100k filters in 10
//!    interfaces, 3-5 names: the value index 30-140 µs cold, 4 µs warm; explored once in
//!    1024 events, that cost the hybrid 2% against the name index alone), so it comes
//!    once in as many events as keep it at a quarter percent of the time, never more
//!    often than once in 1024. When the gap is wide (the other index at least twice as
//!    slow as the chosen one, over a full window of the chosen one's samples), the
//!    chosen one is re-timed one event in 32 instead of 8 (100k filters in 10
//!    interfaces, 3-5 names: the name index 3 µs, the value index's mean after its cold
//!    run 11-22 µs; a third of the timed events of before). The other is explored as
//!    often as ever: its mean rests on a few explorations, and exploring it less often
//!    when it looked much slower kept a wrong choice for a third of a stream (see
//!    `WIDE`). The answers are the same whichever answers; only the time
//!    differs. The value index answers only when its mean is below the name index's by a
//!    tenth (a tie goes to the name index), and a timed sample counts at most 8 times the
//!    mean so far (a thread descheduled while timed adds a millisecond, which outweighed
//!    hundreds of samples and flipped the choice on a loaded machine).
//! 3. The name index runs on a budget. With few interfaces its time has a long tail:
//!    an event that one interface does not match makes it evaluate all of that
//!    interface's filters (with 10 interfaces, 1M filters and 20 names per event: 15 µs
//!    on average, standard deviation 160 µs, a few events 5 ms; the value index 17 µs,
//!    deviation 3 µs). Sampled one event in a thousand, such a mean cannot be
//!    estimated, and either index's mean is a poor bound for the other's worst events.
//!    So once the value index has been timed for `k`, the name index gives up past
//!    twice the value index's mean (counted in visits and evaluations, the static
//!    bound's units, checked every 1024 filters; see [`ContentIndex::match_within`]) and
//!    the value index answers instead: a tail event costs a few value-index runs, and
//!    the name index's samples (fallbacks included) have a mean that a few hundred of
//!    them estimate. Where even evaluating every filter of the event's partitions
//!    (looked up before any is scanned) stays within the budget, nothing is counted:
//!    the name index's plain scan runs. (Measured on the 2-core machine, one thread, 3 seeds, the
//!    `ccm_hybrid_stream` example: hybrid over name index time, 10 interfaces, 3-5 / 10
//!    / 20 names per event: 1M filters 0.80 / 0.66 / 0.21, 100k 1.03 / 1.00 / 1.05. A
//!    budget of 3 means: 1M 0.90 / 0.66 / 0.39, 100k 1.02 / 1.01 / 1.04.)
//!
//! The constants are per-operation times measured on one core (`cargo run --release -p
//! baselines --example ccm_value_index`); only their ratios matter, and only for the
//! static bound. It assumes uniformly drawn names; with skewed names (Zipf) the name
//! index visits more than `V(k)`, but there `L` is close to `d` and the choice is the
//! same.
//!
//! Against the name index alone (the `ccm_hybrid_stream` example on the 2-core machine,
//! shared with other work, one thread, thread CPU time, 3 seeds, the two by turns in
//! chunks of 4096 events of a 65,536-event stream, each index built apart as the
//! harness builds them; hybrid over name index time, the median over the runs, then
//! the interquartile range). Before the plain path and after it:
//!
//! | workload | before | after |
//! |---|---|---|
//! | Table 2, uniform names | 1.00 (0.98-1.04) | 1.00 (0.98-1.02) |
//! | Table 2, Zipf names | 1.00 (0.98-1.01) | 1.00 (0.97-1.01) |
//! | dense10, 100k, 3-5 / 10 / 20 names | 1.01 / 1.00 / 1.00 | 1.02 / 1.02 / 1.03 |
//! | dense10, 1M, 3-5 / 10 / 20 names | 0.75 / 0.53 / 0.28 | 0.91 / 0.91 / 0.25 |
//! | dense, 100k, 10 / 20 names (8,192 events) | 0.087 / 0.046 | 0.077 / 0.050 |
//!
//! On this machine the runs' spread (a few percent on Table 2 and dense10 100k, from
//! 0.4 to 1.1 at dense10 1M, where the events the budget cuts and the index's own time
//! vary from run to run) is wider than what the plain path saves, and the two columns
//! do not differ beyond it (dense10 100k, 3-5 / 20 names, the two builds by turns, two
//! sets of 6 runs each: before 1.02 / 1.03 and 1.03 / 1.02, after 1.03 / 1.06 and 1.02
//! / 1.03). So the target (never slower than the name index alone) is met on Table 2
//! and missed by 2-3% at dense10 100k on this machine, before as after. Over one name
//! index shared by both (`--share`) and timed
//! pairwise, 8-12 runs per seed, Table 2's events took 1.009-1.024 of the name index's
//! time before and 0.997-1.007 after (four sets of runs each). What the measured path
//! still costs where nothing is cut: [`ContentIndex::match_within`] with a budget it
//! never reaches took 1.5% (3-5 names) and 3% (20 names) longer than the plain loop
//! (dense10, 100k filters, over the same index, 15 runs each), and at dense10 1M with
//! 10 names seed 1 (no event cut) the hybrid took 1.04-1.10 of the name index's time,
//! before as after. On the GPU machine's host (the harness, 3 seeds) the hybrid then
//! took 1.02 of the name index's time at dense10 100k with 3-5 names. Since a budget
//! that the event's partitions cannot reach is not counted (see item 3), it takes
//! 0.95-0.97 of the name index's time there with 3-5 and 10 names (`--share`, 2-core
//! machine, 6 runs each, the name index looking up its partitions the same way) and
//! 0.88-0.97 in the harness's two recorded runs on the GPU machine's host (3-5, 10 and
//! 20 names).

use crate::compiled::{Attrs, BatchAttrs};
use crate::content_index::{ContentIndex, IndexError, Scratch};
use crate::matcher::BatchNames;
use crate::value_index::{ValueIndex, ValueScratch};
use crate::Matcher;
use ccm::batch::EventBatch;
use ccm::model::{Event, InterfaceId, Subscription};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

/// Time of one 64-bit OR of the value index (ns).
const WORD_NS: f64 = 0.15;
/// Time of one filter visited by the name index: its signature test (ns).
const VISIT_NS: f64 = 1.5;
/// Time of one filter evaluated constraint by constraint (ns).
const EVAL_NS: f64 = 10.0;
/// Timed runs of each index per names-per-event count before choosing by time.
const SAMPLES: u32 = 6;
/// An index this many times slower than the other after one timed run is not sampled
/// further before choosing (with a million filters one run of the slower costs as much as
/// dozens of the faster).
const FAR_SLOWER: f64 = 4.0;

/// The share of the time that exploring the index not chosen may cost: it runs once in
/// [`explore_every`] events, cold and then warm.
const EXPLORE_SHARE: f64 = 1.0 / 400.0;

/// Every how many events (of one thread, on average) the index not chosen is timed
/// again, when one exploration of it (two runs, see [`HybridIndex::match_choosing`])
/// costs `explore_ns` and the chosen index `best_ns` per event: often enough that these
/// runs cost about [`EXPLORE_SHARE`] of the time, at most once in
/// [`LEAST_EXPLORE_EVERY`] events. The cold run is most of it: with 100k filters in 10
/// interfaces and 3-5 names per event, the value index takes 30-140 µs cold against 4
/// µs warm (2-core machine), and at once in 1024 events its explorations cost the hybrid
/// about 2% against the name index alone.
fn explore_every(explore_ns: f64, best_ns: f64) -> u64 {
    let every = explore_ns / (EXPLORE_SHARE * best_ns.max(1.0));
    (every.clamp(LEAST_EXPLORE_EVERY as f64, (1u64 << 40) as f64) as u64).next_power_of_two()
}

/// The fewest events between two explorations (of one thread, on average).
const LEAST_EXPLORE_EVERY: u64 = 1024;

/// A gap between the two indexes is wide when the one not chosen has been this many
/// times slower than the chosen one, over a full window of the chosen one's samples:
/// then the chosen one is re-timed once in [`RETIME_WIDE`] events instead of
/// [`RETIME_EVERY`]. (The other is explored as often as ever: its mean comes from a
/// few explorations only, and when it was wrong, exploring it up to 16 times less
/// often, as many times as it looked slower, kept a wrong choice of the value index for
/// 21k events of a 65k stream: dense10, 1M filters, 3-5 names, seed 2, 1.38 times the
/// name index's time.)
const WIDE: f64 = 2.0;

/// Every how many events (of one thread, on average) the chosen index is timed again
/// when the gap is wide.
const RETIME_WIDE: u64 = 32;

/// Seeds of the scratches' pseudo-random numbers.
static SEEDS: AtomicU64 = AtomicU64::new(0x2545_f491_4f6c_dd1d);

/// The next of a thread's pseudo-random numbers (xorshift64*), which pick the events
/// to time and to explore with. A fixed period would alias with a workload that repeats:
/// a stream that cycles 200 events, timed every 4th event, times the same 50 forever,
/// and missed the few that cost the name index 100 times more than the rest.
fn next_random(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// The value index answers when its mean time is below the name index's divided by this.
const PREFER_NAMES: f64 = 1.1;

/// A timed sample counts at most this many times the mean so far.
const CAP: f64 = 8.0;

/// The name index's budget per event, in multiples of the value index's mean time for
/// the event's number of names: past it the name index gives up and the value index
/// answers (see the module's docs). 8 while that mean was timed on an event's second run
/// (2-3x below its time on a stream); timed on a stream, 3 lost the wins at 1M filters
/// (dense10 20 names: 0.39 of the name index's time against 0.21 at 2).
const BUDGET: f64 = 2.0;

/// Every how many events (of one thread, on average) the chosen index is timed again.
const RETIME_EVERY: u64 = 8;

/// Names-per-event counts with their own measurements (more share the last).
const BUCKETS: usize = 64;

/// How an event's run is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timed {
    No,
    /// Into the index's time per event.
    Warm,
    /// Into its time after it has not run for a while ([`HybridIndex`]'s `cold`).
    Cold,
}

/// Which index answers an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// The name index ([`ContentIndex`]).
    Names = 0,
    /// The value index ([`ValueIndex`]).
    Values = 1,
}

/// Measured time per event of one index for one names-per-event count, shared by the
/// threads: a sum and a count of samples, halved when the count passes [`WINDOW`] (a mean
/// over the last few hundred samples). A mean, not a quantile: the name index's time has
/// a long tail (with 10 interfaces, an event that one interface does not match scans all
/// of that interface's filters: 1 µs typically, 5 ms now and then, 57 µs on average at
/// 1M filters and 20 names), and a moving average that follows slower samples slowly
/// chose it where the value index was twice as fast on average.
#[derive(Debug, Default)]
struct Timing {
    /// Sum of the samples (ns), as `f64` bits.
    sum: AtomicU64,
    samples: AtomicU32,
}

/// Samples a [`Timing`]'s mean spans: the count is halved past it.
const WINDOW: u32 = 512;

/// Samples a thread gathers before adding them to the shared [`Timing`] (after the first
/// [`SAMPLES`], which are added one by one): the shared one is written once per this
/// many, not per sample by every thread.
const LOCAL: u32 = 16;

impl Timing {
    fn samples(&self) -> u32 {
        self.samples.load(Relaxed)
    }

    /// The mean (ns), or `or` without samples.
    fn mean_or(&self, or: f64) -> f64 {
        if self.samples() > 0 {
            self.mean()
        } else {
            or
        }
    }

    /// The mean (ns; 0 without samples).
    fn mean(&self) -> f64 {
        let n = self.samples();
        f64::from_bits(self.sum.load(Relaxed)) / n.max(1) as f64
    }

    /// Adds one sample of `ns` to a plain mean over the window (not the least of the
    /// first samples: a cold run's time is what it measures).
    fn add_mean(&self, ns: f64) {
        let sum = f64::from_bits(self.sum.load(Relaxed)) + ns;
        let (mut total, mut count) = (sum, self.samples() + 1);
        if count > WINDOW {
            (total, count) = (total / 2.0, count / 2);
        }
        self.sum.store(total.to_bits(), Relaxed);
        self.samples.store(count, Relaxed);
    }

    /// Adds `n` samples summing `sum` ns. While there are fewer than [`SAMPLES`], the mean
    /// is the least sample (a first run is often cold). (A lost update between threads
    /// only loses samples.)
    fn add(&self, sum: f64, n: u32) {
        let had = self.samples();
        let old = f64::from_bits(self.sum.load(Relaxed));
        let (mut total, mut count) = if had == 0 {
            (sum, n)
        } else if had < SAMPLES {
            let least = (old / had as f64).min(sum / n as f64);
            (least * (had + n) as f64, had + n)
        } else {
            (old + sum, had + n)
        };
        if count > WINDOW {
            (total, count) = (total / 2.0, count / 2);
        }
        self.sum.store(total.to_bits(), Relaxed);
        self.samples.store(count, Relaxed);
    }
}

/// The hybrid matcher: both indexes, the name index's cost bounds and the timings.
#[derive(Debug)]
pub struct HybridIndex {
    /// The name index, whose compiled filters the value index verifies with too (one
    /// copy of them: see [`HybridIndex::with_content`]).
    content: Arc<ContentIndex>,
    values: ValueIndex,
    /// `plain[k]`: whether the static bound decides for the name index on an event with
    /// `k` names (its cost bound below the value index's least cost), so that such an
    /// event runs the name index's plain loop: no budget, no clock, no exploration.
    plain: Vec<bool>,
    /// The most names `m` with `plain[k]` for every `k <= m`: an event with at most `m`
    /// attributes takes the plain path without numbering its names first.
    plain_upto: usize,
    /// Per names-per-event count: `[name index, value index]`.
    timings: Vec<[Timing; 2]>,
    /// Per names-per-event count: `[name index, value index]` run cold (the first of an
    /// exploration's two runs; a plain mean).
    cold: Vec<[Timing; 2]>,
}

/// Scratch memory of one matching thread.
#[derive(Debug, Clone, Default)]
pub struct HybridScratch {
    content: Scratch,
    values: ValueScratch,
    /// The state of this thread's pseudo-random numbers ([`next_random`]).
    random: u64,
    /// This thread's samples not yet added to the shared timings: `(sum ns, count)` per
    /// names-per-event count and index.
    local: Vec<[(f64, u32); 2]>,
    /// The names-per-event count whose exploration has run cold and waits for its warm
    /// run (see [`HybridIndex::match_choosing`]).
    pending: Option<usize>,
    stats: HybridStats,
}

impl HybridScratch {
    /// What this scratch's events cost beyond the name index alone, since it was made.
    pub fn stats(&self) -> HybridStats {
        self.stats
    }
}

/// Counts of one thread's events (of its [`HybridScratch`]) that took more than the name
/// index's plain loop. The others, those whose number of names the static bound decides,
/// ran that loop and nothing else: they are not counted (a count would be one more
/// store per event).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HybridStats {
    /// Events chosen for by measured time (their number of names not decided by the
    /// static bound).
    pub measured: u64,
    /// Of those, the events timed (two clock reads): sampled, re-timed or explored.
    pub timed: u64,
    /// Explorations of the index not chosen (each a cold run and, on a later event, a
    /// warm one).
    pub explored: u64,
    /// Events on which the name index gave up past its budget (the value index answered).
    pub gave_up: u64,
}

impl HybridIndex {
    /// Builds both indexes of `subs` (each subscription is one filter of its interface).
    pub fn build(subs: &[Subscription]) -> Result<HybridIndex, IndexError> {
        let (content, values) = rayon::join(
            || ContentIndex::build_ordered(subs),
            || ValueIndex::build_to_share(subs),
        );
        let ((content, position), (mut values, order)) = (content?, values?);
        let content = Arc::new(content);
        values.share(Arc::clone(&content), &position, &order);
        Ok(Self::of(subs, content, values))
    }

    /// The hybrid of `content`, the content index of `subs` (built by
    /// [`ContentIndex::build`] from the same subscriptions in the same order), and of a
    /// value index of `subs` built here: the hybrid shares `content`, filters and all,
    /// with whoever else holds it, so that where it chooses the name index it runs the
    /// very same index, at the same addresses. Fails as [`ContentIndex::build`] would on
    /// `subs`, or with [`IndexError::NotTheContentIndex`] when `content` has another
    /// number of filters or names.
    pub fn with_content(
        content: Arc<ContentIndex>,
        subs: &[Subscription],
    ) -> Result<HybridIndex, IndexError> {
        let (mut values, order) = ValueIndex::build_to_share(subs)?;
        if content.filters() != subs.len() || content.names().len() != values.names() {
            return Err(IndexError::NotTheContentIndex);
        }
        let position = ContentIndex::positions(subs);
        values.share(Arc::clone(&content), &position, &order);
        Ok(Self::of(subs, content, values))
    }

    /// The hybrid of both indexes of `subs`: the name index's cost bounds.
    fn of(subs: &[Subscription], content: Arc<ContentIndex>, values: ValueIndex) -> HybridIndex {
        let d = values.names();
        // Filters by number of distinct names.
        let mut by_size: Vec<f64> = Vec::new();
        for s in subs {
            let mut names: Vec<&str> = s
                .filter
                .constraints
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            names.sort_unstable();
            names.dedup();
            if names.len() >= by_size.len() {
                by_size.resize(names.len() + 1, 0.0);
            }
            by_size[names.len()] += 1.0;
        }
        let plain = (0..=d)
            .map(|k| {
                let (mut visits, mut evals) = (0.0, 0.0);
                for (s, &count) in by_size.iter().enumerate().skip(1) {
                    // P(the filter's first i + 1 names are among k drawn from d).
                    let mut p = 1.0;
                    for i in 0..s {
                        p *= (k as f64 - i as f64).max(0.0) / (d - i) as f64;
                        if i + 1 == s.min(2) {
                            visits += count * p;
                        }
                    }
                    evals += count * p;
                }
                let name_cost = VISIT_NS * visits + EVAL_NS * evals;
                // No names (none of the event's is constrained): nothing matches, and
                // the name index says so at once.
                k == 0 || name_cost < WORD_NS * values.absent_words(k) as f64
            })
            .collect::<Vec<bool>>();
        let plain_upto = plain.iter().take_while(|&&p| p).count() - 1;
        HybridIndex {
            content,
            values,
            plain,
            plain_upto,
            timings: (0..BUCKETS).map(|_| Default::default()).collect(),
            cold: (0..BUCKETS).map(|_| Default::default()).collect(),
        }
    }

    /// The measured times so far: `(names per event, name index ns, value index ns)` for
    /// each count with samples of both (the last count also holds every larger one).
    pub fn timings(&self) -> Vec<(usize, f64, f64)> {
        self.timings
            .iter()
            .enumerate()
            .filter(|(_, t)| t.iter().all(|t| t.samples() > 0))
            .map(|(k, t)| (k, t[0].mean(), t[1].mean()))
            .collect()
    }

    /// Number of filters indexed.
    pub fn filters(&self) -> usize {
        self.content.filters()
    }

    /// The name index it chooses from (shared with its value index's verification).
    pub fn content(&self) -> &Arc<ContentIndex> {
        &self.content
    }

    /// The answer and which index gave it.
    pub fn match_choosing(
        &self,
        e: &Event,
        scratch: &mut HybridScratch,
    ) -> (Vec<InterfaceId>, Choice) {
        self.choose(e.attributes(), scratch)
    }

    /// [`HybridIndex::match_choosing`] for event `i` of `batch`, read in place; `names`
    /// as [`Matcher::match_in_batch_with`] takes them.
    pub fn match_choosing_in_batch(
        &self,
        batch: &EventBatch,
        names: &BatchNames,
        i: usize,
        scratch: &mut HybridScratch,
    ) -> (Vec<InterfaceId>, Choice) {
        let mut fresh = None;
        let names = self.content.names().checked(batch, names, &mut fresh);
        self.choose(BatchAttrs::new(batch, names, i), scratch)
    }

    /// The answer to the event of `attrs` (heap or batch) and which index gave it.
    #[inline]
    fn choose<A: Attrs>(
        &self,
        attrs: A,
        scratch: &mut HybridScratch,
    ) -> (Vec<InterfaceId>, Choice) {
        if attrs.count() <= self.plain_upto {
            // However many of its names are indexed, the static bound decides: the name
            // index alone, the very function it runs on its own.
            return (
                self.content.match_attrs_with(attrs, &mut scratch.content),
                Choice::Names,
            );
        }
        if scratch.content.slot.len() != self.values.names() {
            *scratch = self.scratch();
        }
        attrs.slots(
            self.content.names(),
            &mut scratch.content.slot,
            &mut scratch.content.ids,
        );
        let k = scratch.content.ids.len();
        let (out, choice) = if self.plain.get(k).copied().unwrap_or(false) {
            // Decided by the static bound: the name index's own loop, nothing else.
            let Scratch {
                slot,
                ids,
                matched,
                ranges,
            } = &mut scratch.content;
            let out = self
                .content
                .match_numbered(attrs, slot, ids, matched, ranges);
            (out, Choice::Names)
        } else {
            self.match_measured(attrs, scratch)
        };
        let Scratch { slot, ids, .. } = &mut scratch.content;
        for &id in ids.iter() {
            slot[id as usize] = 0;
        }
        (out, choice)
    }

    /// The answer to an event (numbered in `scratch`) whose number of names the static
    /// bound does not decide: chosen by the measured times, timed now and then. Apart
    /// from [`HybridIndex::match_choosing`] and never inlined, so that the plain path's
    /// code is the name index's loop and a call.
    #[inline(never)]
    fn match_measured<A: Attrs>(
        &self,
        attrs: A,
        scratch: &mut HybridScratch,
    ) -> (Vec<InterfaceId>, Choice) {
        let HybridScratch {
            content,
            values,
            random,
            local,
            pending,
            stats,
        } = scratch;
        let Scratch {
            slot,
            ids,
            matched,
            ranges,
        } = content;
        let k = ids.len();
        let b = k.min(BUCKETS - 1);
        stats.measured += 1;
        let r = next_random(random);
        // (which answers, how it is timed)
        // The value index's mean (0 before it has run).
        let values_ns = self.timings[b][Choice::Values as usize].mean();
        let (choice, timed) = {
            let t = &self.timings[b];
            let (n, v) = (t[0].samples(), t[1].samples());
            let means = [t[0].mean(), values_ns];
            // Ties go to the name index (the value index must be clearly faster).
            let (best, other) = if values_ns * PREFER_NAMES <= means[0] {
                (Choice::Values, Choice::Names)
            } else {
                (Choice::Names, Choice::Values)
            };
            let (best_ns, other_ns) = (means[best as usize], means[other as usize]);
            // How many times slower the other index has been (1 until both have run).
            let slower = if n.min(v) == 0 {
                1.0
            } else {
                other_ns / best_ns.max(1.0)
            };
            let samples = |c: Choice| [n, v][c as usize];
            // A wide gap, measured over a full window of the chosen index's samples.
            let wide = slower >= WIDE && samples(best) >= WINDOW / 2;
            if samples(best) < SAMPLES || (samples(other) < SAMPLES && slower < FAR_SLOWER) {
                // The one with fewer samples, unless the other is far slower already.
                let pick = if slower >= FAR_SLOWER {
                    best
                } else if v <= n {
                    Choice::Values
                } else {
                    Choice::Names
                };
                // Its first run is cold: timed apart.
                if self.cold[b][pick as usize].samples() == 0 {
                    (pick, Timed::Cold)
                } else {
                    (pick, Timed::Warm)
                }
            } else if *pending == Some(b) {
                // The second run of an exploration, on another event than the first.
                *pending = None;
                (other, Timed::Warm)
            } else if (r >> 24).is_multiple_of(LEAST_EXPLORE_EVERY)
                && (r >> 24).is_multiple_of(explore_every(
                    other_ns + self.cold[b][other as usize].mean_or(other_ns),
                    best_ns,
                ))
            {
                // The other index has not run for a while: its memory is out of the
                // caches. It answers this event, timed as a cold run, and the next
                // event with as many names, timed as a warm one: timed on this event
                // twice, the second run found the event's own data in the caches and
                // read 2-3 times below the time it takes on a stream of events.
                *pending = Some(b);
                stats.explored += 1;
                (other, Timed::Cold)
            } else if r.is_multiple_of(if wide { RETIME_WIDE } else { RETIME_EVERY }) {
                (best, Timed::Warm)
            } else {
                (best, Timed::No)
            }
        };
        // The name index's budget: a few times the value index's mean (in the name
        // index's units of half a nanosecond), once that has been measured.
        let budget = (values_ns > 0.0).then_some((values_ns * 2.0 * BUDGET) as u64);
        let mut run = |choice: Choice| {
            if choice == Choice::Names {
                let names = match budget {
                    Some(b) => self
                        .content
                        .match_within(attrs, slot, ids, matched, ranges, b),
                    None => Some(
                        self.content
                            .match_numbered(attrs, slot, ids, matched, ranges),
                    ),
                };
                if let Some(out) = names {
                    return out;
                }
                stats.gave_up += 1;
            }
            // The value index, or the name index's budget was spent.
            self.values.plan(attrs, slot, ids, values);
            self.values.run_plan(attrs, slot, ids, values)
        };
        let t0 = (timed != Timed::No).then(Instant::now);
        let out = run(choice);
        if let Some(t0) = t0 {
            stats.timed += 1;
            let ns = t0.elapsed().as_secs_f64() * 1e9;
            if timed == Timed::Cold {
                self.cold[b][choice as usize].add_mean(ns);
            } else {
                let shared = &self.timings[b][choice as usize];
                // A sample far above the mean is capped: a thread descheduled while
                // timed (a millisecond) would otherwise outweigh hundreds of samples.
                let ns = if shared.samples() >= SAMPLES {
                    ns.min(shared.mean() * CAP)
                } else {
                    ns
                };
                let (sum, n) = &mut local[b][choice as usize];
                (*sum, *n) = (*sum + ns, *n + 1);
                if *n >= LOCAL || shared.samples() < SAMPLES {
                    shared.add(*sum, *n);
                    (*sum, *n) = (0.0, 0);
                }
            }
        }
        (out, choice)
    }
}

impl Matcher for HybridIndex {
    type Scratch = HybridScratch;

    /// Fresh scratch memory for [`HybridIndex::match_event_with`].
    fn scratch(&self) -> HybridScratch {
        HybridScratch {
            content: self.content.scratch(),
            values: self.values.scratch(),
            // Distinct per scratch, never 0.
            random: SEEDS.fetch_add(0x9e37_79b9_7f4a_7c15, Relaxed) | 1,
            local: vec![[(0.0, 0); 2]; BUCKETS],
            pending: None,
            stats: HybridStats::default(),
        }
    }

    /// The interfaces whose predicate matches `e`, ascending by id, reusing `scratch` (one
    /// per thread).
    fn match_event_with(&self, e: &Event, scratch: &mut HybridScratch) -> Vec<InterfaceId> {
        self.match_choosing(e, scratch).0
    }

    /// The names of `batch` in both indexes' numbering.
    fn batch_names(&self, batch: &EventBatch) -> BatchNames {
        self.content.batch_names(batch)
    }

    /// Event `i` of `batch`, read in place: its names through `names`, no hashing.
    fn match_in_batch_with(
        &self,
        batch: &EventBatch,
        names: &BatchNames,
        i: usize,
        scratch: &mut HybridScratch,
    ) -> Vec<InterfaceId> {
        self.match_choosing_in_batch(batch, names, i, scratch).0
    }

    /// An estimate of the heap bytes of both indexes.
    fn heap_bytes(&self) -> usize {
        self.content.heap_bytes() + self.values.heap_bytes() + self.plain.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timing_keeps_the_least_of_its_first_samples_then_the_mean_of_a_window() {
        let t = Timing::default();
        assert_eq!((t.samples(), t.mean()), (0, 0.0));
        // A cold first run, then warm ones: the least of them.
        for ns in [900.0, 100.0, 120.0] {
            t.add(ns, 1);
        }
        assert_eq!((t.samples(), t.mean()), (3, 100.0));
        for _ in 3..SAMPLES {
            t.add(100.0, 1);
        }
        // Then a mean: a long tail counts with its weight (one 5,000 in 10 samples).
        t.add(9.0 * 100.0 + 5000.0, 10);
        assert_eq!(t.samples(), SAMPLES + 10);
        let want = (SAMPLES as f64 * 100.0 + 5900.0) / (SAMPLES + 10) as f64;
        assert!((t.mean() - want).abs() < 1e-9);
        // Past the window the count is halved (the mean kept), so the recent samples
        // weigh most.
        for _ in 0..WINDOW {
            t.add(200.0, 1);
        }
        assert!(t.samples() <= WINDOW);
        assert!(t.mean() > 200.0 && t.mean() < 210.0, "{}", t.mean());
    }
}

#[cfg(test)]
mod plain_path {
    use super::*;
    use crate::sff::Sff;
    use ccm::model::{Attribute, Value};
    use ccm::workload::{generate, generate_dense, DenseParams, Params};

    /// Table 1's model at a small size: 3-5 of 100 names per event and per filter.
    fn table1() -> ccm::workload::Workload {
        let p = Params {
            events: 400,
            filters_per_interface: (4500, 5500),
            ..Params::default()
        };
        generate(&p, 3).unwrap()
    }

    #[test]
    fn events_the_static_bound_decides_run_the_name_index_alone() {
        let w = table1();
        let hybrid = HybridIndex::build(&w.subscriptions).unwrap();
        // Every event of Table 1's model is decided (it carries at most 5 names).
        assert!(hybrid.plain_upto >= 5, "{}", hybrid.plain_upto);
        let want = Sff::build(&w.subscriptions)
            .unwrap()
            .match_parallel(&w.events);
        assert!(want.iter().any(|m| !m.is_empty()), "some events match");
        let mut s = hybrid.scratch();
        for (e, want) in w.events.iter().zip(&want) {
            assert_eq!(
                &hybrid.match_choosing(e, &mut s),
                &(want.clone(), Choice::Names)
            );
        }
        // None measured: no clock read, no budget, no exploration.
        assert_eq!(s.stats(), HybridStats::default());
        // Nor with more attributes than that, of names no filter constrains: numbered
        // first, then decided by their count.
        let mut s = hybrid.scratch();
        for (e, want) in w.events.iter().zip(&want) {
            let mut attrs: Vec<Attribute> = e.attributes().to_vec();
            attrs.extend((0..=hybrid.plain_upto).map(|i| Attribute {
                name: format!("unconstrained {i}"),
                value: Value::Int(0),
            }));
            let wide = Event::new(attrs).unwrap();
            assert_eq!(hybrid.match_event_with(&wide, &mut s), *want);
        }
        assert_eq!(s.stats(), HybridStats::default());
        assert!(hybrid.timings().is_empty());
    }

    #[test]
    fn events_the_static_bound_leaves_open_are_measured() {
        // The dense model with 10 interfaces and all 20 names per event: the value
        // index's least cost is nothing (no absent name), the bound decides nothing.
        let p = DenseParams {
            events: 200,
            filters: 3000,
            interfaces: Some(10),
            names_per_event: (20, 20),
            ..DenseParams::default()
        };
        let w = generate_dense(&p, 4).unwrap();
        let hybrid = HybridIndex::build(&w.subscriptions).unwrap();
        assert!(!hybrid.plain[20]);
        let want = Sff::build(&w.subscriptions)
            .unwrap()
            .match_parallel(&w.events);
        let mut s = hybrid.scratch();
        for (e, want) in w.events.iter().zip(&want) {
            assert_eq!(&hybrid.match_event_with(e, &mut s), want);
        }
        let stats = s.stats();
        assert_eq!(stats.measured, w.events.len() as u64);
        // Both indexes sampled first.
        assert!(stats.timed >= 2 * SAMPLES as u64, "{stats:?}");
    }
}
