//! Strong scaling of the CCM CPU matchers: time per event of the content
//! index ([`baselines::content_index`]) and of the SFF-like matcher on 1, 2, 4, 8, 16
//! threads, on the CCM paper's default scenario (Table 1: 10 interfaces x 22,500-27,500
//! filters, 3-5 constraints per filter, 100 names, 1000 events) with uniform and Zipf
//! names (Table 2 rows 1 and 4). Prints one Markdown table per scenario: best-of-`reps`
//! time per event (µs) and speedup over the same matcher on one thread. Every answer is
//! checked against SFF's.
//!
//!     cargo run --release -p baselines --example ccm_index_scaling
//!     cargo run --release -p baselines --example ccm_index_scaling -- --threads 1,2 --reps 2 --quick
//!
//! Flags: `--threads a,b,c` (default 1,2,4,8,16), `--reps n` (default 5), `--quick`
//! (a tenth of the filters), `--events n` (events per run; default: the workload's
//! 1000, repeated to 20,000 for the index, whose runs are otherwise too short to time).

use baselines::content_index::ContentIndex;
use baselines::sff::Sff;
use baselines::Matcher;
use ccm::workload::{generate, NameDist, Params};
use std::time::Instant;

fn arg(args: &[String], flag: &str) -> Option<String> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).cloned()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let threads: Vec<usize> = arg(&args, "--threads")
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2, 4, 8, 16]);
    let reps: usize = arg(&args, "--reps")
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let quick = args.iter().any(|a| a == "--quick");
    let index_events: usize = arg(&args, "--events")
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("# CCM matching, strong scaling ({cores} hardware threads here)\n");
    for (label, dist) in [
        ("uniform names (Table 2 row 1)", NameDist::Uniform),
        ("Zipf names (Table 2 row 4)", NameDist::Zipf(1.0)),
    ] {
        let mut p = Params {
            name_dist: dist,
            ..Params::default()
        };
        if quick {
            p.filters_per_interface = (2_250, 2_750);
        }
        let w = generate(&p, 1).expect("default parameters");
        let t0 = Instant::now();
        let sff = Sff::build(&w.subscriptions).expect("well-formed filters");
        let sff_build = t0.elapsed().as_secs_f64() * 1e3;
        let t0 = Instant::now();
        let ix = ContentIndex::build(&w.subscriptions).expect("well-formed filters");
        let ix_build = t0.elapsed().as_secs_f64() * 1e3;
        let want = sff.match_parallel(&w.events);
        println!(
            "## {} filters, {label}\n\nbuild: sff {sff_build:.0} ms ({:.1} MB), index {ix_build:.0} ms ({:.1} MB); \
             {} of {} events match at least one interface\n",
            w.subscriptions.len(),
            sff.heap_bytes() as f64 / 1e6,
            ix.heap_bytes() as f64 / 1e6,
            want.iter().filter(|m| !m.is_empty()).count(),
            w.events.len()
        );
        print!("| matcher |");
        for t in &threads {
            print!(" {t} thr (µs/event) |");
        }
        for t in threads.iter().skip(1) {
            print!(" x{t} |");
        }
        println!();
        println!("|---{}", "|---".repeat(2 * threads.len() - 1) + "|");
        let long: Vec<ccm::Event> = w
            .events
            .iter()
            .cycle()
            .take(index_events.max(w.events.len()))
            .cloned()
            .collect();
        let long_want: Vec<_> = want.iter().cycle().take(long.len()).cloned().collect();
        type Run<'a> = Box<dyn Fn() -> Vec<Vec<ccm::InterfaceId>> + Sync + 'a>;
        let runs: [(&str, Run, &[Vec<ccm::InterfaceId>], usize); 2] = [
            (
                "sff",
                Box::new(|| sff.match_parallel(&w.events)),
                &want,
                w.events.len(),
            ),
            (
                "index",
                Box::new(|| ix.match_parallel(&long)),
                &long_want,
                long.len(),
            ),
        ];
        for (name, run, expect, n) in &runs {
            let mut times = Vec::new();
            for &t in &threads {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .expect("thread pool");
                let mut best = f64::INFINITY;
                for _ in 0..reps {
                    let t0 = Instant::now();
                    let got = pool.install(run);
                    best = best.min(t0.elapsed().as_secs_f64() * 1e6 / *n as f64);
                    if got.as_slice() != *expect {
                        eprintln!("{name} on {t} threads disagrees with sff");
                        std::process::exit(1);
                    }
                }
                times.push(best);
            }
            print!("| {name} |");
            for us in &times {
                print!(" {us:.3} |");
            }
            for us in times.iter().skip(1) {
                print!(" {:.1} |", times[0] / us);
            }
            println!();
        }
        println!();
    }
}
