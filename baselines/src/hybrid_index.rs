//! CCM's strongest CPU matcher: the value index ([`crate::value_index`]), the name
//! index ([`crate::content_index`]) and, where every filter is integer bounds, the bit
//! index ([`crate::bit_index`], HEM class) over one subscription set, the cheapest
//! chosen per event by a cost model and measured times.
//!
//! The bit index (HEM5DD's cells of precomputed bitsets and avxOR's AVX2 ORs, BG-Tree's
//! ids-or-bitset trade, REIN's failing-filter marking; see its module docs) is built
//! beside the other two when it accepts every subscription, and is a third choice of
//! the value side, chosen by the same measured times as the value index: on the HEM
//! suite's dense model (20 names, 1-5 ranges per filter, one interface per filter) the
//! hybrid chooses it and answers 1.1-1.6x faster than without it, within the noise of
//! the bit index alone; with few names of many (Table 1: 3-5 of 100, strings and `!=`, which it
//! refuses) it is not built and nothing changes. Where it is built, the static bound
//! takes the value side's least cost as the smaller of the two (the bit index ORs one
//! bitset per present name and per group of five names with an absent one), and the
//! name index's budget is twice the value side's fastest mean, the fastest of the two
//! answering when the name index gives up. With three indexes, an exploration runs one
//! of the two not chosen, at random, so the exploring costs what it cost with two.
//! (Measured with the `dense_bench` example, one core by thread CPU time, on the loaded
//! 2-core machine: see the numbers at the end.)
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
//!    its re-timings of the chosen one 16 at a time and an exploration's sample at once;
//!    the least of the first samples) answers; one event in 8 of a thread, at random,
//!    re-times the chosen one (two clock reads), and now and then the other is
//!    explored: it answers one event cold (timed apart, as its cold time)
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
//!    bound's units, checked every 1024 filters; see `ContentIndex::match_within`) and
//!    the value index answers instead: a tail event costs a few value-index runs, and
//!    the name index's samples (fallbacks included) have a mean that a few hundred of
//!    them estimate. Where even evaluating every filter of the event's partitions
//!    (looked up before any is scanned) stays within the budget, nothing is counted:
//!    the name index's plain scan runs. (Measured on the 2-core machine, one thread, 3 seeds, the
//!    `ccm_hybrid_stream` example: hybrid over name index time, 10 interfaces, 3-5 / 10
//!    / 20 names per event: 1M filters 0.80 / 0.66 / 0.21, 100k 1.03 / 1.00 / 1.05. A
//!    budget of 3 means: 1M 0.90 / 0.66 / 0.39, 100k 1.02 / 1.01 / 1.04.)
//! 4. An event of at most 32 attributes that the bound leaves open has its values
//!    decoded once into an array on the stack (`compiled::Decoded`) before the chosen
//!    index reads them, once per constraint of every candidate filter: a batch's string
//!    value was two reads there each time (its span, then the arena), a heap attribute's
//!    a match on its `Value`. On the 2-core machine, one seed, Fig. 10 at 10 names: the
//!    batch 1.056x the heap events' time before, 0.989x after. Events the bound decides
//!    are not decoded (Table 2's default events, 3-5 values of 0.6 µs an event: clearing
//!    the array and copying them cost 8-11%).
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
//! still costs where nothing is cut: `ContentIndex::match_within` with a budget it
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
//!
//! With the bit index among the choices (the `dense_bench` example, 100k filters, one
//! interface per filter, 2000 events, one core by the thread's CPU time, 3 runs by turns
//! on the 2-core machine shared with other work; µs per event, the median run; HEM5DD
//! and HEM5DD-avxOR, the suite's own code at bit exponents 4 and 6 built with g++ -O3
//! -march=native, each listing its answers from its final bitset, on the same dumped
//! events, its fastest of the four):
//!
//! | names per event | hybrid | bit index alone | HEM's fastest |
//! |---|---|---|---|
//! | 3-5 | 12.5 | 13.0 | 23.5 (HEM5DD, 6) |
//! | 10 | 26.2 | 27.4 | 58.3 (HEM5DD, 6) |
//! | 20 | 39.3 | 42.9 | 93.9 (HEM5DD, 6) |
//! | 5-10, Zipf | 23.3 | 24.1 | 46.6 (HEM5DD, 6) |
//!
//! At a million filters (one run, same machine): 3-5 names 88 µs (the value index alone
//! 89, the bit index 142: the hybrid chose the value index), 10 names 271 (278, 294), 20
//! names 447 (746, 441: the bit index), Zipf 210 (183, 227). Table 1's model (Table 2's
//! default scenario, `ccm_hybrid_stream --model table2 --share`, 6 sets of 6 runs each
//! build by turns): hybrid over name index time, medians of the sets 0.98-1.09 before
//! the bit index and 0.98-1.02 after; the dense model with 10 interfaces (100k filters,
//! 3-5 / 20 names) 1.00 / 1.04 before and after. Neither differs beyond the machine's
//! spread.

use crate::bit_index::{BitIndex, BitScratch};
use crate::compiled::{AttrValue, Attrs, BatchAttrs, Decoded, DECODED_MAX};
use crate::content_index::{ContentIndex, IndexError, Scratch};
use crate::matcher::{BatchNames, ScratchPool};
use crate::sff::Num;
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
    /// Into the index's time per event, at once: a first sample, or an exploration's warm
    /// run.
    Warm,
    /// Into the chosen index's time per event, gathered by the thread [`LOCAL`] at a time
    /// (once it has its first [`SAMPLES`]): a re-timing of the index the times favour.
    Retimed,
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
    /// The bit index ([`BitIndex`]), where it indexes every filter.
    Bits = 2,
}

/// The indexes a hybrid chooses from, the value side first (ties go to the earlier).
const WITH_BITS: [Choice; 3] = [Choice::Bits, Choice::Values, Choice::Names];
const WITHOUT_BITS: [Choice; 2] = [Choice::Values, Choice::Names];

/// Per index ([`Choice`] as the position): one of each.
type PerIndex<T> = [T; 3];

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
/// many, not per sample by every thread. Only the chosen index's re-timings
/// ([`Timed::Retimed`]) wait so; an exploration's warm sample is added at once. It comes
/// once in 1024 events or fewer, so gathered 16 at a time it had reached the shared mean
/// after some 16,000 events of a thread, later than a stream of a few thousand events
/// ends, and a choice made on the first samples stood whatever the explorations found.
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
    /// The bit index, where every filter is one it indexes (integer bounds only), with
    /// the name index's numbering of names in its own.
    bits: Option<(BitIndex, Vec<u32>)>,
    /// Per names-per-event count: `[name index, value index, bit index]`.
    timings: Vec<PerIndex<Timing>>,
    /// Per names-per-event count: `[name index, value index, bit index]` run cold (the
    /// first of an exploration's two runs; a plain mean).
    cold: Vec<PerIndex<Timing>>,
    /// Its threads' scratch kept between calls on all cores.
    pool: ScratchPool<HybridScratch>,
}

/// Scratch memory of one matching thread.
#[derive(Debug, Clone, Default)]
pub struct HybridScratch {
    content: Scratch,
    values: ValueScratch,
    /// The bit index's (empty without one).
    bits: BitScratch,
    /// The state of this thread's pseudo-random numbers ([`next_random`]).
    random: u64,
    /// This thread's samples not yet added to the shared timings: `(sum ns, count)` per
    /// names-per-event count and index.
    local: Vec<PerIndex<(f64, u32)>>,
    /// The names-per-event count whose exploration has run cold and the index explored,
    /// waiting for its warm run (see [`HybridIndex::match_choosing`]).
    pending: Option<(usize, Choice)>,
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
        Self::build_with(subs, true)
    }

    /// [`HybridIndex::build`], with the bit index among its choices (`bits`, where it
    /// indexes every filter) or without it (as the hybrid was before it).
    pub fn build_with(subs: &[Subscription], bits: bool) -> Result<HybridIndex, IndexError> {
        let ((content, values), bit) = rayon::join(
            || {
                rayon::join(
                    || ContentIndex::build_ordered(subs),
                    || ValueIndex::build_to_share(subs),
                )
            },
            || bit_index(subs, bits),
        );
        let ((content, position), (mut values, order)) = (content?, values?);
        let content = Arc::new(content);
        values.share(Arc::clone(&content), &position, &order);
        Ok(Self::of(subs, content, values, bit))
    }

    /// Whether the bit index is among its choices.
    pub fn has_bits(&self) -> bool {
        self.bits.is_some()
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
        let bits = bit_index(subs, true);
        Ok(Self::of(subs, content, values, bits))
    }

    /// The hybrid of the indexes of `subs`: the name index's cost bounds.
    fn of(
        subs: &[Subscription],
        content: Arc<ContentIndex>,
        values: ValueIndex,
        bits: Option<BitIndex>,
    ) -> HybridIndex {
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
                // The value side's least cost: the value index's, or the bit index's
                // (an OR per present name and per group of absent ones) if less.
                let least = bits.as_ref().map_or(usize::MAX, |b| b.least_words(k));
                let least = values.absent_words(k).min(least);
                // No names (none of the event's is constrained): nothing matches, and
                // the name index says so at once.
                k == 0 || name_cost < WORD_NS * least as f64
            })
            .collect::<Vec<bool>>();
        let plain_upto = plain.iter().take_while(|&&p| p).count() - 1;
        let bits = bits.map(|b| {
            let numbering = b.numbering_of(content.names());
            (b, numbering)
        });
        HybridIndex {
            content,
            values,
            bits,
            plain,
            plain_upto,
            timings: (0..BUCKETS).map(|_| Default::default()).collect(),
            cold: (0..BUCKETS).map(|_| Default::default()).collect(),
            pool: ScratchPool::default(),
        }
    }

    /// The measured times so far: `(names per event, name index ns, value index ns)` for
    /// each count with samples of both (whether or not the bit index was timed there;
    /// [`HybridIndex::timings_all`] lists every count with any sample, the bit index's
    /// too). The last count also holds every larger one.
    pub fn timings(&self) -> Vec<(usize, f64, f64)> {
        self.timings_all()
            .into_iter()
            .filter(|(_, _, samples)| samples[0] > 0 && samples[1] > 0)
            .map(|(k, means, _)| (k, means[0], means[1]))
            .collect()
    }

    /// Every index's measured time so far: `(names per event, [name, value, bit index] mean
    /// ns, [their sample counts])` for each count with any sample (the last count also
    /// holds every larger one).
    pub fn timings_all(&self) -> Vec<(usize, [f64; 3], [u32; 3])> {
        self.timings
            .iter()
            .enumerate()
            .filter(|(_, t)| t.iter().any(|t| t.samples() > 0))
            .map(|(k, t)| {
                (
                    k,
                    [t[0].mean(), t[1].mean(), t[2].mean()],
                    [t[0].samples(), t[1].samples(), t[2].samples()],
                )
            })
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

    /// The answer to the event of `attrs` (heap or batch) and which index gave it. An
    /// event the static bound leaves open, with at most [`DECODED_MAX`] attributes, has
    /// its values decoded once ([`Decoded`]) for the index that answers it; one the bound
    /// decides runs the name index on its attributes as given (decoding its few values
    /// cost Table 2's default events 8-11% on the development machine: the array's
    /// clearing and the copies, on events of 0.6 µs).
    #[inline]
    pub(crate) fn choose<A: Attrs>(
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
        if attrs.count() <= DECODED_MAX {
            let mut vals = [AttrValue::Num(Num::Int(0)); DECODED_MAX];
            return self.choose_open(Decoded::of(&attrs, &mut vals), scratch);
        }
        self.choose_open(attrs, scratch)
    }

    /// [`HybridIndex::choose`] for an event the static bound leaves open.
    #[inline]
    fn choose_open<A: Attrs>(
        &self,
        attrs: A,
        scratch: &mut HybridScratch,
    ) -> (Vec<InterfaceId>, Choice) {
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

    /// The answer of index `choice` alone to `e` (the name index without a budget; the
    /// bit index, when it has none, the value index): for the tests, which check every
    /// index the hybrid may choose, whatever the times make it choose.
    #[cfg(test)]
    fn match_by(&self, e: &Event, choice: Choice, scratch: &mut HybridScratch) -> Vec<InterfaceId> {
        let attrs = e.attributes();
        let HybridScratch {
            content,
            values,
            bits,
            ..
        } = scratch;
        let Scratch {
            slot,
            ids,
            matched,
            ranges,
        } = content;
        attrs.slots(self.content.names(), slot, ids);
        let out = match (choice, &self.bits) {
            (Choice::Names, _) => self
                .content
                .match_numbered(attrs, slot, ids, matched, ranges),
            (Choice::Bits, Some((bit, numbering))) => {
                bit.match_numbered(attrs, slot, ids, numbering, bits)
            }
            _ => {
                self.values.plan(attrs, slot, ids, values);
                self.values.run_plan(attrs, slot, ids, values)
            }
        };
        for &id in ids.iter() {
            slot[id as usize] = 0;
        }
        out
    }

    /// The indexes it chooses from, the value side first.
    fn engines(&self) -> &'static [Choice] {
        if self.bits.is_some() {
            &WITH_BITS
        } else {
            &WITHOUT_BITS
        }
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
            bits,
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
        let engines = self.engines();
        let t = &self.timings[b];
        let samples = |c: Choice| t[c as usize].samples();
        let mean = |c: Choice| t[c as usize].mean();
        // The value side's fastest timed index and its mean (0 before any has run).
        let (side, side_ns) = engines
            .iter()
            .filter(|&&c| c != Choice::Names && samples(c) > 0)
            .map(|&c| (c, mean(c)))
            .fold((engines[0], 0.0), |(c0, m0), (c, m)| {
                if m0 == 0.0 || m < m0 {
                    (c, m)
                } else {
                    (c0, m0)
                }
            });
        // (which answers, how it is timed)
        let (choice, timed) = {
            // The fastest, an index not yet run first (its mean 0); ties go to the value
            // side, and the name index yields to it unless faster by a tenth.
            let eff = |c: Choice| {
                let m = mean(c);
                if c == Choice::Names {
                    m
                } else {
                    m * PREFER_NAMES
                }
            };
            let best =
                engines
                    .iter()
                    .copied()
                    .fold(engines[0], |a, c| if eff(c) < eff(a) { c } else { a });
            let best_ns = mean(best);
            // How many times slower than the chosen index another one has been (1 until
            // both have run).
            let ratio = |c: Choice| {
                if samples(c).min(samples(best)) == 0 {
                    1.0
                } else {
                    mean(c) / best_ns.max(1.0)
                }
            };
            let others = engines.iter().copied().filter(|&c| c != best);
            // The nearest of the others.
            let slower = others.clone().map(ratio).fold(f64::INFINITY, f64::min);
            // A wide gap, measured over a full window of the chosen index's samples.
            let wide = slower >= WIDE && samples(best) >= WINDOW / 2;
            // Sampled first: the chosen one and those not far slower than it, the one
            // with the fewest samples.
            let to_sample = |c: Choice| c == best || ratio(c) < FAR_SLOWER;
            let first = engines
                .iter()
                .copied()
                .filter(|&c| samples(c) < SAMPLES && to_sample(c))
                .fold(None, |a: Option<Choice>, c| match a {
                    Some(a) if samples(a) <= samples(c) => Some(a),
                    _ => Some(c),
                });
            // The index an exploration would run now: one of the others at random.
            let n_others = engines.len() - 1;
            let other = others
                .clone()
                .nth((r >> 8) as usize % n_others)
                .unwrap_or(best);
            if let Some(pick) = first {
                // Its first run is cold: timed apart.
                if self.cold[b][pick as usize].samples() == 0 {
                    (pick, Timed::Cold)
                } else {
                    (pick, Timed::Warm)
                }
            } else if let Some((_, c)) = pending.take_if(|(pb, _)| *pb == b) {
                // The second run of an exploration, on another event than the first.
                (c, Timed::Warm)
            } else if (r >> 24).is_multiple_of(LEAST_EXPLORE_EVERY)
                && (r >> 24).is_multiple_of(explore_every(
                    mean(other) + self.cold[b][other as usize].mean_or(mean(other)),
                    best_ns,
                ))
            {
                // The other index has not run for a while: its memory is out of the
                // caches. It answers this event, timed as a cold run, and the next
                // event with as many names, timed as a warm one: timed on this event
                // twice, the second run found the event's own data in the caches and
                // read 2-3 times below the time it takes on a stream of events.
                *pending = Some((b, other));
                stats.explored += 1;
                (other, Timed::Cold)
            } else if r.is_multiple_of(if wide { RETIME_WIDE } else { RETIME_EVERY }) {
                (best, Timed::Retimed)
            } else {
                (best, Timed::No)
            }
        };
        // The name index's budget: a few times the value side's mean (in the name
        // index's units of half a nanosecond), once that has been measured.
        let budget = (side_ns > 0.0).then_some((side_ns * 2.0 * BUDGET) as u64);
        let mut run = |choice: Choice| {
            let choice = match choice {
                Choice::Names => {
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
                    // The name index's budget was spent: the value side's fastest.
                    side
                }
                c => c,
            };
            match (&self.bits, choice) {
                (Some((bit, numbering)), Choice::Bits) => {
                    bit.match_numbered(attrs, slot, ids, numbering, bits)
                }
                _ => {
                    self.values.plan(attrs, slot, ids, values);
                    self.values.run_plan(attrs, slot, ids, values)
                }
            }
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
                if timed == Timed::Warm || *n >= LOCAL || shared.samples() < SAMPLES {
                    shared.add(*sum, *n);
                    (*sum, *n) = (0.0, 0);
                }
            }
        }
        (out, choice)
    }
}

/// The bit index of `subs` when `wanted` and it indexes them all (integer bounds only).
fn bit_index(subs: &[Subscription], wanted: bool) -> Option<BitIndex> {
    wanted.then(|| BitIndex::build(subs).ok()).flatten()
}

impl Matcher for HybridIndex {
    fn scratch_pool(&self) -> Option<&ScratchPool<HybridScratch>> {
        Some(&self.pool)
    }

    type Scratch = HybridScratch;

    /// Fresh scratch memory for [`HybridIndex::match_event_with`].
    fn scratch(&self) -> HybridScratch {
        HybridScratch {
            content: self.content.scratch(),
            values: self.values.scratch(),
            bits: self
                .bits
                .as_ref()
                .map_or_else(BitScratch::default, |(b, _)| b.scratch()),
            // Distinct per scratch, never 0.
            random: SEEDS.fetch_add(0x9e37_79b9_7f4a_7c15, Relaxed) | 1,
            local: vec![[(0.0, 0); 3]; BUCKETS],
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

    /// An estimate of the heap bytes of its indexes.
    fn heap_bytes(&self) -> usize {
        let bits = self
            .bits
            .as_ref()
            .map_or(0, |(b, n)| b.heap_bytes() + n.capacity() * 4);
        self.content.heap_bytes() + self.values.heap_bytes() + bits + self.plain.capacity()
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
    use ccm::workload::{generate, generate_dense, DenseParams, Params, Workload};

    /// Table 1's model at a small size: 3-5 of 100 names per event and per filter.
    fn table1() -> Workload {
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
        // Strings and `!=`: the bit index refuses them, the hybrid chooses as before.
        assert!(!hybrid.has_bits());
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

    /// Events of Table 1's model (strings among their values) answer alike from heap
    /// events and from their batch: as they are (the static bound decides them), with
    /// names no filter constrains added past the bound (their values decoded once) and
    /// past [`DECODED_MAX`] attributes (read in place).
    #[test]
    fn decoded_and_in_place_values_give_the_same_answers() {
        let w = table1();
        let hybrid = HybridIndex::build(&w.subscriptions).unwrap();
        let want = Sff::build(&w.subscriptions)
            .unwrap()
            .match_parallel(&w.events);
        assert!(want.iter().any(|m| !m.is_empty()), "some events match");
        // Events carry 3-5 names: with the bound's count added, each is past the bound
        // and within the decoded attributes.
        let past_bound = hybrid.plain_upto;
        assert!(past_bound + 5 <= DECODED_MAX, "{past_bound}");
        for extra in [0, past_bound, DECODED_MAX + 1] {
            let events: Vec<Event> = w
                .events
                .iter()
                .map(|e| {
                    let mut attrs = e.attributes().to_vec();
                    attrs.extend((0..extra).map(|i| Attribute {
                        name: format!("unconstrained {i}"),
                        value: Value::Str(format!("v{i}")),
                    }));
                    Event::new(attrs).unwrap()
                })
                .collect();
            let n = events[0].attributes().len();
            assert_eq!(n > hybrid.plain_upto, extra > 0);
            assert_eq!(n > DECODED_MAX, extra > DECODED_MAX);
            let batch = EventBatch::from_events(&events);
            let names = hybrid.batch_names(&batch);
            let (mut heap, mut in_batch) = (hybrid.scratch(), hybrid.scratch());
            for (i, (e, want)) in events.iter().zip(&want).enumerate() {
                assert_eq!(&hybrid.match_event_with(e, &mut heap), want, "event {i}");
                assert_eq!(
                    &hybrid.match_in_batch_with(&batch, &names, i, &mut in_batch),
                    want,
                    "event {i} of the batch"
                );
            }
        }
    }

    /// The dense model with 10 interfaces and all 20 names per event (200 events, 3000
    /// filters): the value index's least cost is nothing (no absent name), so the static
    /// bound decides no event, and every event's times go to one count's timings.
    fn all_names_measured(seed: u64) -> Workload {
        let p = DenseParams {
            events: 200,
            filters: 3000,
            interfaces: Some(10),
            names_per_event: (20, 20),
            ..DenseParams::default()
        };
        generate_dense(&p, seed).unwrap()
    }

    #[test]
    fn events_the_static_bound_leaves_open_are_measured() {
        let w = all_names_measured(4);
        let want = Sff::build(&w.subscriptions)
            .unwrap()
            .match_parallel(&w.events);
        // Without the bit index and with it (every filter is integer bounds).
        for bits in [false, true] {
            let hybrid = HybridIndex::build_with(&w.subscriptions, bits).unwrap();
            assert_eq!(hybrid.has_bits(), bits);
            assert!(!hybrid.plain[20]);
            let mut s = hybrid.scratch();
            for (e, want) in w.events.iter().zip(&want) {
                assert_eq!(&hybrid.match_event_with(e, &mut s), want, "bits {bits}");
            }
            let stats = s.stats();
            assert_eq!(stats.measured, w.events.len() as u64);
            // Both indexes sampled first.
            assert!(stats.timed >= 2 * SAMPLES as u64, "{stats:?}");
            // The shared timings hold those samples, all under 20 names; each index
            // sampled has a mean (the bit index none without it), and `timings` lists the
            // name and value indexes' means where both have samples, with the bit index
            // timed or not.
            let all = hybrid.timings_all();
            assert_eq!(all.len(), 1, "{all:?}");
            let (k, means, samples) = all[0];
            assert_eq!(k, 20);
            assert!(samples.iter().sum::<u32>() >= SAMPLES, "{all:?}");
            for (m, n) in means.iter().zip(samples) {
                assert_eq!(*m > 0.0, n > 0, "{all:?}");
            }
            if !bits {
                assert_eq!(samples[2], 0, "{all:?}");
                assert!(samples[0] > 0 && samples[1] > 0, "{all:?}");
            }
            let listed = if samples[0] > 0 && samples[1] > 0 {
                vec![(k, means[0], means[1])]
            } else {
                vec![]
            };
            assert_eq!(hybrid.timings(), listed, "bits {bits}");
        }
    }

    #[test]
    fn an_explorations_warm_sample_reaches_the_shared_timings_at_once() {
        let w = all_names_measured(5);
        for bits in [false, true] {
            let hybrid = HybridIndex::build_with(&w.subscriptions, bits).unwrap();
            let samples = |c: Choice| {
                hybrid
                    .timings_all()
                    .first()
                    .map_or(0, |(_, _, n)| n[c as usize])
            };
            let mut s = hybrid.scratch();
            // The index explored by the event before, if one was.
            let mut explored: Option<Choice> = None;
            let mut checked = 0;
            for i in 0..1_000_000 {
                let e = &w.events[i % w.events.len()];
                let before = s.stats().explored;
                let held = explored.map(samples);
                let (_, c) = hybrid.match_choosing(e, &mut s);
                if let (Some(x), Some(held)) = (explored.take(), held) {
                    // This event was the exploration's warm run, by the explored index. Once
                    // the index has its first samples (added one by one in any case),
                    // this one is in the shared mean at once, not held by the thread.
                    assert_eq!(c, x, "bits {bits}, event {i}");
                    if held >= SAMPLES {
                        assert_eq!(samples(x), held + 1, "bits {bits}, event {i}");
                        checked += 1;
                    }
                }
                if s.stats().explored > before {
                    // Its cold run: timed apart, its warm run comes on the next event.
                    explored = Some(c);
                }
                if checked == 3 {
                    break;
                }
            }
            assert_eq!(checked, 3, "bits {bits}: {:?}", s.stats());
        }
    }
}

#[cfg(test)]
mod with_bits {
    use super::*;
    use crate::sff::Sff;
    use ccm::model::{Constraint, Filter, Op, Value};
    use ccm::workload::{generate_dense, DenseParams, NameDist};
    use proptest::prelude::*;

    /// Every index the hybrid chooses from, and the hybrid itself over a stream (twice
    /// over the events, so that its measured choice settles; heap events and a batch),
    /// against SFF.
    fn check(subs: &[Subscription], events: &[Event], bits: bool) -> Result<(), TestCaseError> {
        let want = Sff::build(subs).unwrap().match_parallel(events);
        let hybrid = HybridIndex::build(subs).unwrap();
        prop_assert_eq!(hybrid.has_bits(), bits);
        let mut s = hybrid.scratch();
        for (e, want) in events.iter().zip(&want) {
            for c in [Choice::Names, Choice::Values, Choice::Bits] {
                prop_assert_eq!(&hybrid.match_by(e, c, &mut s), want, "{:?} {:?}", c, e);
            }
        }
        for _ in 0..2 {
            for (e, want) in events.iter().zip(&want) {
                let (got, c) = hybrid.match_choosing(e, &mut s);
                prop_assert_eq!(&got, want, "{:?} {:?}", c, e);
                prop_assert!(bits || c != Choice::Bits);
            }
        }
        prop_assert_eq!(&hybrid.match_parallel(events), &want);
        // The events of a batch, read in place, on one core and on all.
        let batch = EventBatch::from_events(events);
        prop_assert_eq!(&hybrid.match_batch(&batch), &want);
        prop_assert_eq!(&hybrid.match_batch_parallel(&batch), &want);
        Ok(())
    }

    /// A subscription the bit index refuses: a `!=`, a string, a fraction.
    fn refused() -> impl Strategy<Value = Subscription> {
        let c = prop_oneof![
            Just((Op::Ne, Value::Int(500_000))),
            Just((Op::Eq, Value::Str("x".into()))),
            Just((Op::Lt, Value::Float(400_000.5))),
        ];
        (c, 0u32..3).prop_map(|((op, value), i)| Subscription {
            interface: InterfaceId(i),
            filter: Filter {
                constraints: vec![Constraint {
                    name: "n1".into(),
                    op,
                    value,
                }],
            },
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Random dense workloads (one or several interfaces per filter, uniform or Zipf
        /// event names, across the bit index's 65,536-filter segments at times), with
        /// or without a subscription the bit index refuses (then the hybrid goes
        /// without it).
        #[test]
        fn equals_sff_on_random_dense_workloads(
            filters in prop_oneof![1usize..400, 1500usize..3000, Just(66_000usize)],
            interfaces in prop::option::of(1usize..12),
            names in 2usize..24,
            per_event in (0usize..24, 0usize..24),
            zipf in any::<bool>(),
            predicates in (1usize..4, 0usize..3),
            max_width in prop_oneof![Just(0.05), Just(0.2), Just(0.9)],
            refuse in prop::option::of(refused()),
            seed in 0u64..1000,
        ) {
            let lo = per_event.0.min(names).max(1);
            let hi = (lo + per_event.1).min(names);
            let p = DenseParams {
                events: if filters > 60_000 { 6 } else { 30 },
                filters,
                interfaces,
                names,
                names_per_event: (lo, hi),
                event_names: if zipf { NameDist::Zipf(1.0) } else { NameDist::Uniform },
                predicates_per_filter: (predicates.0.min(names), (predicates.0 + predicates.1).min(names)),
                max_width,
                ..DenseParams::default()
            };
            let w = generate_dense(&p, seed).unwrap();
            let mut subs = w.subscriptions;
            let bits = refuse.is_none();
            subs.extend(refuse);
            check(&subs, &w.events, bits)?;
        }
    }
}
