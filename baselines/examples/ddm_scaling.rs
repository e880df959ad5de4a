//! Strong scaling of the CPU DDM matchers: counting time of `sort`, `sbm`
//! and `itm` (and `grid`) on 1, 2, 4, 8, 16 threads, at the paper's 32768 regions
//! (scenario I, uniform, RS = 10 x 10, 2-D) and at 1M regions (scale-up, alpha = 1 and
//! alpha = 100, 2-D). Prints one Markdown table per workload: best-of-`reps` time (ms)
//! and speedup over the same matcher on one thread.
//!
//!     cargo run --release -p baselines --example ddm_scaling
//!     cargo run --release -p baselines --example ddm_scaling -- --threads 1,2,4 --reps 3 --quick
//!
//! Flags: `--threads a,b,c` (default 1,2,4,8,16), `--reps n` (default 5), `--quick`
//! (32768 and 65536 regions instead of 1M, for a look on a small machine), `--matchers
//! sort,sbm,itm,grid` (default sort,sbm,itm,grid).

use baselines::ddm::{Algorithm, DdmMatcher};
use ddm_region::model::RegionSet;
use ddm_region::workload::{scale_up, Distribution, ScaleUpParams, Scenario, ScenarioParams};
use std::time::Instant;

fn arg_list(args: &[String], flag: &str) -> Option<Vec<String>> {
    let i = args.iter().position(|a| a == flag)?;
    Some(
        args.get(i + 1)?
            .split(',')
            .map(|s| s.trim().to_string())
            .collect(),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let threads: Vec<usize> = arg_list(&args, "--threads")
        .map(|v| v.iter().filter_map(|s| s.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2, 4, 8, 16]);
    let reps: usize = arg_list(&args, "--reps")
        .and_then(|v| v.first()?.parse().ok())
        .unwrap_or(5)
        .max(1);
    let matchers = arg_list(&args, "--matchers").unwrap_or_else(|| {
        ["sort", "sbm", "itm", "grid"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    });
    let quick = args.iter().any(|a| a == "--quick");
    let big = if quick { 65_536 } else { 1 << 20 };

    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("# DDM counting, strong scaling ({cores} hardware threads here)\n");
    let mut workloads: Vec<(String, RegionSet)> = vec![(
        "32768 regions, scenario I (uniform, RS = 10 x 10)".to_string(),
        Scenario::new(ScenarioParams::paper(32_768, 10, Distribution::Uniform), 1)
            .expect("scenario")
            .regions()
            .clone(),
    )];
    for alpha in [1.0, 100.0] {
        workloads.push((
            format!("{big} regions, scale-up alpha = {alpha}"),
            scale_up(
                &ScaleUpParams {
                    regions: big,
                    alpha,
                    dims: 2,
                },
                1,
            )
            .expect("scale-up"),
        ));
    }
    for (label, set) in &workloads {
        println!("## {label}\n");
        print!("| matcher |");
        for t in &threads {
            print!(" {t} thr (ms) |");
        }
        for t in threads.iter().skip(1) {
            print!(" x{t} |");
        }
        println!();
        println!("|---{}", "|---".repeat(2 * threads.len() - 1) + "|");
        let mut want = None;
        for name in &matchers {
            let algorithm = match name.as_str() {
                "sort" => Algorithm::Sort,
                "sbm" => Algorithm::Sbm,
                "itm" => Algorithm::Itm,
                "grid" => Algorithm::Grid { cell: None },
                "brute" => Algorithm::Brute,
                other => {
                    eprintln!("unknown matcher {other}");
                    std::process::exit(2);
                }
            };
            let mut times = Vec::new();
            for &t in &threads {
                let m = DdmMatcher::new(algorithm.clone(), t);
                let mut best = f64::INFINITY;
                for _ in 0..reps {
                    let t0 = Instant::now();
                    let n = m.count(set);
                    best = best.min(t0.elapsed().as_secs_f64() * 1e3);
                    if *want.get_or_insert(n) != n {
                        eprintln!("{} on {t} threads counted {n}, expected {want:?}", m.name());
                        std::process::exit(1);
                    }
                }
                times.push(best);
            }
            print!("| {name} |");
            for ms in &times {
                print!(" {ms:.2} |");
            }
            for ms in times.iter().skip(1) {
                print!(" {:.1} |", times[0] / ms);
            }
            println!();
        }
        println!("\n{} overlapping pairs\n", want.unwrap_or(0));
    }
}
