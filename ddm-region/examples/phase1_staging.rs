//! Phase 1's host side alone: how long `stage_into` takes to order and de-duplicate one
//! step of the paper's scenario (every region moves), by thread count.
//!
//!     cargo run --release -p ddm-region --example phase1_staging [REGIONS]
use ddm_region::layout::stage_into;
use ddm_region::workload::{Distribution, Scenario, ScenarioParams};
use std::sync::atomic::AtomicU64;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u32 = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 32768,
    };
    let mut scenario = Scenario::new(ScenarioParams::paper(n, 10, Distribution::Uniform), 1)?;
    let batches: Vec<_> = (0..8).map(|_| scenario.step()).collect();
    let half = n / 2;
    let mut records = vec![Default::default(); n as usize];
    let mut ranges = vec![Default::default(); 2 * n as usize];
    let cores = rayon::current_num_threads();
    for threads in [1, 2, 4, 8, 16, cores] {
        if threads > cores {
            continue;
        }
        let mut last: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
        let mut times = Vec::new();
        for round in 1..=200u32 {
            let batch = &batches[round as usize % batches.len()];
            let t = Instant::now();
            stage_into(
                batch,
                2,
                (half, half),
                &mut last,
                round,
                (&mut records, &mut ranges),
                threads,
            )?;
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{n} regions, {threads:2} threads: median {:.1} us, min {:.1} us",
            times[100], times[0]
        );
    }
    Ok(())
}
