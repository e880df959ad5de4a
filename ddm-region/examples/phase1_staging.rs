//! Phase 1's host side alone: how long `stage_into` takes to order and de-duplicate one
//! step of the paper's scenario (every region moves), by thread count: back to back
//! (rayon's threads awake) and after 300 µs idle, as between the steps of an engine
//! that waits for its device (the threads asleep, woken by the staging), and after
//! 300 µs idle with a crew gathered before it (as `Engine::set_stage_crew` does: the
//! threads awake, spinning); on 8 batches
//! taken in turn (~7 MB at 32768 regions, in a large last-level cache) and on 40 (out
//! of it, as a harness run's 30 steps generated ahead), and a plain copy of a batch's
//! ranges on one thread beside them.
//!
//!     cargo run --release -p ddm-region --example phase1_staging [REGIONS]
use ddm_region::layout::{stage_into, Hands};
use ddm_region::workload::{Distribution, Scenario, ScenarioParams};
use gpu_kernels::crew::Crew;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

/// What happens before a staging.
#[derive(Clone, Copy, PartialEq)]
enum Before {
    /// Nothing: back to back.
    Nothing,
    /// 300 µs idle.
    Idle,
    /// A crew gathered, then 300 µs idle.
    CrewThenIdle,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u32 = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 32768,
    };
    let mut scenario = Scenario::new(ScenarioParams::paper(n, 10, Distribution::Uniform), 1)?;
    let all: Vec<_> = (0..40).map(|_| scenario.step()).collect();
    let half = n / 2;
    let mut records = vec![Default::default(); n as usize];
    let mut ranges = vec![Default::default(); 2 * n as usize];
    let cores = rayon::current_num_threads();
    for (label, batches) in [("8 batches", &all[..8]), ("40 batches", &all[..])] {
        let mut times = Vec::new();
        for round in 0..200 {
            let t = Instant::now();
            ranges.copy_from_slice(batches[round % batches.len()].ranges());
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{n} regions, {label}: a plain copy of the ranges, one thread: median {:.1} us",
            times[100]
        );
    }
    for (label, batches, idles) in [
        (
            "8 batches",
            &all[..8],
            &[Before::Nothing, Before::Idle, Before::CrewThenIdle][..],
        ),
        (
            "40 batches",
            &all[..],
            &[Before::Idle, Before::CrewThenIdle][..],
        ),
    ] {
        for threads in [1, 2, 4, 8, 16, cores] {
            if threads > cores {
                continue;
            }
            for &before in idles {
                let mut last: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
                let mut times = Vec::new();
                for round in 1..=200u32 {
                    let batch = &batches[round as usize % batches.len()];
                    let crew = (before == Before::CrewThenIdle && threads > 1)
                        .then(|| Crew::gather(threads - 1, Duration::from_millis(1)));
                    if before != Before::Nothing {
                        std::thread::sleep(Duration::from_micros(300));
                    }
                    let t = Instant::now();
                    stage_into(
                        batch,
                        2,
                        (half, half),
                        &mut last,
                        round,
                        (&mut records, &mut ranges),
                        Hands { threads, crew },
                    )?;
                    times.push(t.elapsed().as_secs_f64() * 1e6);
                }
                times.sort_by(f64::total_cmp);
                println!(
                    "{n} regions, {label}, {threads:2} threads{}: median {:.1} us, min {:.1} us",
                    match before {
                        Before::Nothing => "",
                        Before::Idle => ", after 300 us idle",
                        Before::CrewThenIdle => ", crew gathered, then 300 us idle",
                    },
                    times[100],
                    times[0]
                );
            }
        }
    }
    Ok(())
}
