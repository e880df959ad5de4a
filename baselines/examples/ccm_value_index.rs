//! One core, per event: the name index, the value index and the hybrid on the dense
//! workloads (REIN/HEM model: 20 numeric names, 1-5 range predicates per filter; one
//! interface per filter and 10 interfaces) and on Table 1's default scenario (uniform
//! and Zipf names), with the hybrid's choices. The measurements behind the cost model's
//! constants in `baselines::hybrid_index`.
//!
//!     cargo run --release -p baselines --example ccm_value_index [filters]
//!
//! `REPS=<n>` takes the least of `n` timings of each. `ONLY=<prefix>` runs the workloads whose label starts with it (`ONLY=dense`, `ONLY="dense
//! (10"`), `ONLY=fixed` the per-event fixed cost; `PROFILE=<seconds>` runs only the value
//! index on them for that long (`PROFILE_HYBRID=1`: only the hybrid), with the process id on standard error (to attach `perf
//! record -p`); `CPUTIME=1` times by the thread's CPU time instead of the wall clock (on a
//! machine shared with other work).

use baselines::content_index::ContentIndex;
use baselines::hybrid_index::{Choice, HybridIndex};
use baselines::value_index::{Cuts, ValueIndex};
use baselines::Matcher;
use ccm::workload::{generate, generate_dense, DenseParams, NameDist, Params};
use ccm::{Event, InterfaceId};
use std::time::Instant;

#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::thread_cpu_s;

/// Per-event time (the least of `REPS` runs, default 1: the others' interference only
/// adds time) and answers per event.
fn per_event_us(events: &[Event], mut f: impl FnMut(&Event) -> Vec<InterfaceId>) -> (f64, usize) {
    (0..reps())
        .map(|_| per_event_once(events, &mut f))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .expect("one run")
}

/// `REPS`, at least 1.
fn reps() -> usize {
    std::env::var("REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1)
        .max(1)
}

fn per_event_once(
    events: &[Event],
    f: &mut impl FnMut(&Event) -> Vec<InterfaceId>,
) -> (f64, usize) {
    let cpu = std::env::var("CPUTIME").is_ok_and(|v| v == "1");
    let clock = || if cpu { thread_cpu_s() } else { wall_s() };
    let t0 = clock();
    let mut n = 0;
    let mut matches = 0;
    // (The clock read every 16th event: the thread's CPU time is a system call.)
    while n < events.len() || n % 16 != 0 || clock() - t0 < 0.5 {
        matches += f(&events[n % events.len()]).len();
        n += 1;
    }
    ((clock() - t0) * 1e6 / n as f64, matches / n.max(1))
}

/// Seconds since the first call.
fn wall_s() -> f64 {
    static T0: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    T0.get_or_init(Instant::now).elapsed().as_secs_f64()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let filters: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(100_000);
    if std::env::var("ONLY").as_deref() == Ok("fixed") {
        return fixed_cost(filters);
    }
    let mut cases = Vec::new();
    for (label, interfaces) in [("dense", None), ("dense10", Some(10))] {
        for x in [(3, 5), (10, 10), (20, 20)] {
            let p = DenseParams {
                events: 200,
                filters,
                interfaces,
                names_per_event: x,
                ..DenseParams::default()
            };
            cases.push((format!("{label} {x:?}"), generate_dense(&p, 1)?));
        }
    }
    for (label, dist) in [
        ("table1", NameDist::Uniform),
        ("table1 zipf", NameDist::Zipf(1.0)),
    ] {
        let p = Params {
            events: 200,
            name_dist: dist,
            ..Params::default()
        };
        cases.push((label.to_string(), generate(&p, 1)?));
    }
    println!("workload | names index us | value index us | hybrid us | hybrid chose values | answers per event");
    let only = std::env::var("ONLY").unwrap_or_default();
    for (label, w) in cases.iter().filter(|(l, _)| l.starts_with(&only)) {
        let ci = ContentIndex::build(&w.subscriptions)?;
        // CUTS=max,budget: the value index with other cut counts (the hybrid keeps the default).
        let cuts = match std::env::var("CUTS").ok().and_then(|c| {
            let (m, b) = c.split_once(',')?;
            Some((m.parse().ok()?, b.parse().ok()?))
        }) {
            Some((max, budget)) => Cuts {
                max,
                budget,
                ..Cuts::default()
            },
            None => Cuts::default(),
        };
        let vi = ValueIndex::build_with(&w.subscriptions, cuts)?;
        if let Some(secs) = std::env::var("PROFILE")
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
        {
            // PROFILE=secs: only the value index (`PROFILE_HYBRID=1`: only the hybrid),
            // for `secs` seconds (to attach a profiler).
            let hybrid = std::env::var("PROFILE_HYBRID").is_ok_and(|v| v == "1");
            let hi = if hybrid {
                Some(HybridIndex::build(&w.subscriptions)?)
            } else {
                None
            };
            let mut vs = vi.scratch();
            let mut hs = hi.as_ref().map(|h| h.scratch());
            eprintln!("profiling {label} (pid {})", std::process::id());
            let t0 = Instant::now();
            let mut n = 0;
            while t0.elapsed().as_secs_f64() < secs {
                let e = &w.events[n % w.events.len()];
                match (&hi, &mut hs) {
                    (Some(h), Some(s)) => h.match_event_with(e, s),
                    _ => vi.match_event_with(e, &mut vs),
                };
                n += 1;
            }
            let what = if hybrid { "hybrid" } else { "value index" };
            println!("{label} | {what} {:.2} us", secs * 1e6 / n as f64);
            continue;
        }
        let hi = HybridIndex::build(&w.subscriptions)?;
        let (mut cs, mut vs, mut hs) = (ci.scratch(), vi.scratch(), hi.scratch());
        // The three by turns, each rep, so that a noisy stretch hits all of them.
        let (mut c_us, mut v_us, mut h_us, mut m) = (f64::MAX, f64::MAX, f64::MAX, 0);
        for _ in 0..reps() {
            let c = per_event_once(&w.events, &mut |e| ci.match_event_with(e, &mut cs));
            (c_us, m) = (c_us.min(c.0), c.1);
            v_us = v_us.min(per_event_once(&w.events, &mut |e| vi.match_event_with(e, &mut vs)).0);
            h_us = h_us.min(per_event_once(&w.events, &mut |e| hi.match_event_with(e, &mut hs)).0);
        }
        let chose = w
            .events
            .iter()
            .filter(|e| hi.match_choosing(e, &mut hs).1 == Choice::Values)
            .count();
        for e in w.events.iter().take(50) {
            assert_eq!(
                vi.match_event_with(e, &mut vs),
                ci.match_event_with(e, &mut cs)
            );
        }
        println!(
            "{label} | {c_us:.2} | {v_us:.2} | {h_us:.2} | {chose}/{} | {m} | value MB {:.1}, name MB {:.1}",
            w.events.len(),
            vi.heap_bytes() as f64 / 1e6,
            ci.heap_bytes() as f64 / 1e6
        );
        println!(
            "    hybrid's timings (names, name index ns, value index ns): {:?}",
            hi.timings()
        );
    }
    Ok(())
}

/// The per-event fixed cost with one interface per filter (`filters` interfaces): events
/// that match nothing, one carrying only a name no filter constrains, one whose values lie
/// outside every range (names n0-n4, values beyond the domain).
fn fixed_cost(filters: usize) -> Result<(), Box<dyn std::error::Error>> {
    let p = DenseParams {
        events: 10,
        filters,
        ..DenseParams::default()
    };
    let w = generate_dense(&p, 1)?;
    let hi = HybridIndex::build(&w.subscriptions)?;
    let ci = ContentIndex::build(&w.subscriptions)?;
    let unknown = vec![Event::from_pairs([("unconstrained", ccm::Value::Int(1))])?];
    let outside = vec![Event::from_pairs(
        (0..5).map(|i| (format!("n{i}"), ccm::Value::Int(p.domain + 1))),
    )?];
    for (label, evs) in [
        ("unknown name", &unknown),
        ("values outside every range", &outside),
    ] {
        let mut hs = hi.scratch();
        let (h, m) = per_event_us(evs, |e| hi.match_event_with(e, &mut hs));
        let mut cs = ci.scratch();
        let (c, _) = per_event_us(evs, |e| ci.match_event_with(e, &mut cs));
        println!(
            "{filters} interfaces, {label}: hybrid {h:.3} us, name index {c:.3} us ({m} answers)"
        );
    }
    Ok(())
}
