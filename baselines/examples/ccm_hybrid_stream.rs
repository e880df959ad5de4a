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
//!         [--filters 100000,1000000] [--names 4,10,20] [--interfaces 10] [--seeds 1] [--reps 5] [--wall] [--share] [--stream 65536] [--model dense|table2|zipf]
//!
//! `--share` builds the hybrid over the content index timed beside it
//! ([`HybridIndex::with_content`]: the same filters at the same addresses), so that the
//! two differ only by the hybrid's choice; by default each has its own, as in the harness.
//! Timed by the thread's CPU time (the time other processes hold the core is not
//! counted), `--wall` by the wall clock as the harness does. `--names 4` is 3-5 names per event (the harness's x = 4), any other `x` exactly `x`;
//! `--interfaces 0` is one interface per filter (the `dense` experiment).
//! `--model table2` and `--model zipf` time Table 2's default scenario instead (Table 1's
//! model, uniform or Zipf names, as the harness's `table2` builds it; `--filters`,
//! `--names` and `--interfaces` are then ignored).

use baselines::content_index::ContentIndex;
use baselines::hybrid_index::{Choice, HybridIndex};
use baselines::Matcher;
use ccm::workload::{generate, generate_dense, DenseParams, NameDist, Params};
use ccm::{Event, InterfaceId};
use std::sync::Arc;
use std::time::Instant;

#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::thread_cpu_s;

/// The harness's stream of events per one-core timing (`INDEX_STREAM`), the default of
/// `--stream`.
const STREAM: usize = 65_536;

/// Events each index runs on before the other takes its turn.
const CHUNK: usize = 4096;

/// The comma-separated values after `flag`, or `default`.
fn list(args: &[String], flag: &str, default: &[usize]) -> Vec<usize> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

/// Seconds by the wall clock since the first call.
fn wall_s() -> f64 {
    static T0: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    T0.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// Microseconds per event of `f` over `stream` by `clock`, and the answers.
fn time(
    clock: fn() -> f64,
    stream: &[Event],
    mut f: impl FnMut(&Event) -> Vec<InterfaceId>,
) -> (f64, Vec<Vec<InterfaceId>>) {
    let mut out = Vec::with_capacity(stream.len());
    let t0 = clock();
    for e in stream {
        out.push(f(e));
    }
    ((clock() - t0) * 1e6 / stream.len() as f64, out)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filters = list(&args, "--filters", &[100_000]);
    let names = list(&args, "--names", &[4]);
    let interfaces = list(&args, "--interfaces", &[10])[0];
    let seeds = list(&args, "--seeds", &[1]);
    let reps = list(&args, "--reps", &[5])[0].max(1);
    let stream_len = list(&args, "--stream", &[STREAM])[0].max(1);
    let share = args.iter().any(|a| a == "--share");
    let model = args
        .iter()
        .position(|a| a == "--model")
        .and_then(|i| args.get(i + 1))
        .map_or("dense", String::as_str);
    let table2 = match model {
        "dense" => None,
        "table2" => Some(NameDist::Uniform),
        "zipf" => Some(NameDist::Zipf(1.0)),
        other => return Err(format!("--model {other}: dense, table2 or zipf").into()),
    };
    // Table 2: one point (its filters and names per event are Table 1's).
    let (filters, names) = if table2.is_some() {
        (vec![250_000], vec![4])
    } else {
        (filters, names)
    };
    let clock: fn() -> f64 = if args.iter().any(|a| a == "--wall") {
        wall_s
    } else {
        thread_cpu_s
    };
    println!("filters | names | seed | rep | index us | hybrid us | hybrid/index | values chosen | measured, timed, explored, gave up");
    for &f in &filters {
        for &x in &names {
            let mut ratios = Vec::new();
            for &seed in &seeds {
                let w = match table2 {
                    Some(name_dist) => generate(
                        &Params {
                            name_dist,
                            ..Params::default()
                        },
                        seed as u64,
                    )?,
                    None => {
                        let p = DenseParams {
                            events: 1000,
                            filters: f,
                            interfaces: (interfaces > 0).then_some(interfaces),
                            names_per_event: if x == 4 { (3, 5) } else { (x, x) },
                            ..DenseParams::default()
                        };
                        generate_dense(&p, seed as u64)?
                    }
                };
                let stream: Vec<Event> =
                    w.events.iter().cycle().take(stream_len).cloned().collect();
                let ci = Arc::new(ContentIndex::build(&w.subscriptions)?);
                for rep in 0..reps {
                    // A fresh hybrid each time, as the harness builds one per point: its
                    // first events are sampled.
                    let hi = if share {
                        HybridIndex::with_content(Arc::clone(&ci), &w.subscriptions)?
                    } else {
                        HybridIndex::build(&w.subscriptions)?
                    };
                    let (mut cs, mut hs) = (ci.scratch(), hi.scratch());
                    let mut values = 0usize;
                    // By turns in chunks of the stream, alternating which goes first, so
                    // that a noisy stretch of a shared machine hits both.
                    let (mut c_us, mut h_us) = (0.0, 0.0);
                    let (mut want, mut got) = (Vec::new(), Vec::new());
                    for (i, chunk) in stream.chunks(CHUNK).enumerate() {
                        let mut index = || time(clock, chunk, |e| ci.match_event_with(e, &mut cs));
                        let mut hybrid = || {
                            time(clock, chunk, |e| {
                                let (out, c) = hi.match_choosing(e, &mut hs);
                                values += usize::from(c == Choice::Values);
                                out
                            })
                        };
                        let ((c, mut w), (h, mut g)) = if (i + rep) % 2 == 0 {
                            let c = index();
                            (c, hybrid())
                        } else {
                            let h = hybrid();
                            (index(), h)
                        };
                        c_us += c * chunk.len() as f64 / stream_len as f64;
                        h_us += h * chunk.len() as f64 / stream_len as f64;
                        want.append(&mut w);
                        got.append(&mut g);
                    }
                    if got != want {
                        return Err(
                            format!("hybrid and index disagree at {f} filters, x = {x}").into()
                        );
                    }
                    ratios.push(h_us / c_us);
                    if rep + 1 == reps {
                        // The hybrid's means: (names per event, name index ns, value index ns).
                        let means: Vec<String> = hi
                            .timings()
                            .iter()
                            .map(|(k, n, v)| format!("{k}: {n:.0}/{v:.0}"))
                            .collect();
                        println!(
                            "    hybrid's means (names: name index / value index ns): {}",
                            means.join(", ")
                        );
                    }
                    let st = hs.stats();
                    println!(
                        "{f} | {x} | {seed} | {rep} | {c_us:.3} | {h_us:.3} | {:.3} | {values} | {}, {}, {}, {}",
                        h_us / c_us,
                        st.measured,
                        st.timed,
                        st.explored,
                        st.gave_up
                    );
                }
            }
            ratios.sort_by(f64::total_cmp);
            let n = ratios.len();
            println!(
                "{f} | {x} | median hybrid/index {:.3} (quartiles {:.3}-{:.3}, range {:.3}-{:.3}) over {n} runs",
                ratios[n / 2],
                ratios[n / 4],
                ratios[(3 * n) / 4],
                ratios[0],
                ratios[n - 1]
            );
        }
    }
    Ok(())
}
