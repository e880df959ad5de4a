//! One thread, as the harness's `index` and `hybrid` series time them: the content index
//! and a freshly built hybrid index ([`baselines::hybrid_index`]) on the dense workloads
//! (REIN/HEM model: 20 numeric names, 1-5 range predicates per filter, 1000 events),
//! each over the same stream of the workload's events cycled to 65,536, the two by turns
//! (alternating which goes first) so that a noisy stretch of a shared machine hits both.
//! Prints per repetition the two times, their ratio and how often the hybrid answered
//! with the value index; then the median ratio. Every answer of the hybrid is checked
//! against the content index's.
//!
//!     cargo run --release -p baselines --example ccm_hybrid_stream -- \
//!         [--filters 100000,1000000] [--names 4,10,20] [--interfaces 10] [--seeds 1] [--reps 5]
//!
//! `--names 4` is 3-5 names per event (the harness's x = 4), any other `x` exactly `x`;
//! `--interfaces 0` is one interface per filter (the `dense` experiment).

use baselines::content_index::ContentIndex;
use baselines::hybrid_index::{Choice, HybridIndex};
use baselines::Matcher;
use ccm::workload::{generate_dense, DenseParams};
use ccm::{Event, InterfaceId};
use std::time::Instant;

/// The harness's stream of events per one-core timing (`INDEX_STREAM`).
const STREAM: usize = 65_536;

/// The comma-separated values after `flag`, or `default`.
fn list(args: &[String], flag: &str, default: &[usize]) -> Vec<usize> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

/// Microseconds per event of `f` over `stream`, and the answers.
fn time(stream: &[Event], mut f: impl FnMut(&Event) -> Vec<InterfaceId>) -> (f64, Vec<Vec<InterfaceId>>) {
    let mut out = Vec::with_capacity(stream.len());
    let t0 = Instant::now();
    for e in stream {
        out.push(f(e));
    }
    (t0.elapsed().as_secs_f64() * 1e6 / stream.len() as f64, out)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filters = list(&args, "--filters", &[100_000]);
    let names = list(&args, "--names", &[4]);
    let interfaces = list(&args, "--interfaces", &[10])[0];
    let seeds = list(&args, "--seeds", &[1]);
    let reps = list(&args, "--reps", &[5])[0].max(1);
    println!("filters | names | seed | rep | index us | hybrid us | hybrid/index | values chosen");
    for &f in &filters {
        for &x in &names {
            let mut ratios = Vec::new();
            for &seed in &seeds {
                let p = DenseParams {
                    events: 1000,
                    filters: f,
                    interfaces: (interfaces > 0).then_some(interfaces),
                    names_per_event: if x == 4 { (3, 5) } else { (x, x) },
                    ..DenseParams::default()
                };
                let w = generate_dense(&p, seed as u64)?;
                let stream: Vec<Event> = w.events.iter().cycle().take(STREAM).cloned().collect();
                let ci = ContentIndex::build(&w.subscriptions)?;
                for rep in 0..reps {
                    // A fresh hybrid each time, as the harness builds one per point: its
                    // first events are sampled.
                    let hi = HybridIndex::build(&w.subscriptions)?;
                    let (mut cs, mut hs) = (ci.scratch(), hi.scratch());
                    let mut values = 0usize;
                    let mut index = || time(&stream, |e| ci.match_event_with(e, &mut cs));
                    let mut hybrid = || {
                        time(&stream, |e| {
                            let (out, c) = hi.match_choosing(e, &mut hs);
                            values += usize::from(c == Choice::Values);
                            out
                        })
                    };
                    let ((c_us, want), (h_us, got)) = if rep % 2 == 0 {
                        let c = index();
                        (c, hybrid())
                    } else {
                        let h = hybrid();
                        (index(), h)
                    };
                    if got != want {
                        return Err(format!("hybrid and index disagree at {f} filters, x = {x}").into());
                    }
                    ratios.push(h_us / c_us);
                    println!(
                        "{f} | {x} | {seed} | {rep} | {c_us:.3} | {h_us:.3} | {:.3} | {values}",
                        h_us / c_us
                    );
                }
            }
            ratios.sort_by(f64::total_cmp);
            println!("{f} | {x} | median hybrid/index {:.3} over {} runs", ratios[ratios.len() / 2], ratios.len());
        }
    }
    Ok(())
}
