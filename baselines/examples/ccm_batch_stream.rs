//! One thread, the content index and the hybrid index each over the same stream of events
//! read two ways: from heap `Event`s and in place from the workload's flat batch
//! ([`ccm::batch::EventBatch`]), the four by turns in chunks of the stream (alternating
//! the order) so that a noisy stretch of a shared machine hits all of them. Prints per
//! repetition the four times (µs per event) and each index's batch / heap ratio, then
//! the median ratios. Every answer on the batch is checked against the heap one.
//!
//!     cargo run --release -p baselines --example ccm_batch_stream -- \
//!         [--model table2|zipf|dense] [--filters 100000] [--names 4] [--interfaces 0] [--seeds 1] [--reps 5] [--stream 65536] [--wall]
//!
//! Timed by the thread's CPU time (`--wall`: the wall clock). `--model dense` is the
//! dense model (`--names 4`: 3-5 names per event, else exactly that many;
//! `--interfaces 0`: one interface per filter, the `dense` experiment); `table2` and
//! `zipf` Table 2's default scenario (the other flags ignored).

use baselines::content_index::ContentIndex;
use baselines::hybrid_index::HybridIndex;
use baselines::Matcher;
use ccm::batch::EventBatch;
use ccm::workload::{generate, generate_dense, DenseParams, NameDist, Params};
use ccm::InterfaceId;
use std::time::Instant;

#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::thread_cpu_s;

/// Events each reading takes before the next one's turn.
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

/// One matcher over the stream from heap events and from the batch, by turns with the
/// others: its scratch for each reading.
struct Timed<'a, M: Matcher> {
    m: &'a M,
    heap: M::Scratch,
    flat: M::Scratch,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filters = list(&args, "--filters", &[100_000])[0];
    let names = list(&args, "--names", &[4])[0];
    let interfaces = list(&args, "--interfaces", &[0])[0];
    let seeds = list(&args, "--seeds", &[1]);
    let reps = list(&args, "--reps", &[5])[0].max(1);
    let stream_len = list(&args, "--stream", &[65_536])[0].max(1);
    let model = args
        .iter()
        .position(|a| a == "--model")
        .and_then(|i| args.get(i + 1))
        .map_or("table2", String::as_str);
    let clock: fn() -> f64 = if args.iter().any(|a| a == "--wall") {
        wall_s
    } else {
        thread_cpu_s
    };
    println!("model | seed | rep | index heap us | index batch us | hybrid heap us | hybrid batch us | index batch/heap | hybrid batch/heap");
    let (mut ri, mut rh) = (Vec::new(), Vec::new());
    for &seed in &seeds {
        let w = match model {
            "table2" | "zipf" => {
                let name_dist = if model == "zipf" {
                    NameDist::Zipf(1.0)
                } else {
                    NameDist::Uniform
                };
                generate(
                    &Params {
                        name_dist,
                        ..Params::default()
                    },
                    seed as u64,
                )?
            }
            "dense" => generate_dense(
                &DenseParams {
                    events: 1000,
                    filters,
                    interfaces: (interfaces > 0).then_some(interfaces),
                    names_per_event: if names == 4 { (3, 5) } else { (names, names) },
                    ..DenseParams::default()
                },
                seed as u64,
            )?,
            other => return Err(format!("--model {other}: table2, zipf or dense").into()),
        };
        let n = w.events.len();
        let content = std::sync::Arc::new(ContentIndex::build(&w.subscriptions)?);
        for rep in 0..reps {
            // A fresh hybrid each time, over the content index, as the harness builds it.
            let hybrid = HybridIndex::with_content(content.clone(), &w.subscriptions)?;
            let mut ix = Timed {
                m: &*content,
                heap: content.scratch(),
                flat: content.scratch(),
            };
            let mut hy = Timed {
                m: &hybrid,
                heap: hybrid.scratch(),
                flat: hybrid.scratch(),
            };
            // [index heap, index batch, hybrid heap, hybrid batch] seconds.
            let mut spent = [0.0f64; 4];
            for (turn, from) in (0..stream_len).step_by(CHUNK).enumerate() {
                let len = CHUNK.min(stream_len - from);
                let ids: Vec<usize> = (from..from + len).map(|i| i % n).collect();
                let mut order = [0, 1, 2, 3];
                if (turn + rep) % 2 == 1 {
                    order.reverse();
                }
                let mut answers: [Vec<Vec<InterfaceId>>; 4] = Default::default();
                for k in order {
                    let t0 = clock();
                    answers[k] = match k {
                        0 => heap(&mut ix, &w.events, &ids),
                        1 => flat(&mut ix, &w.batch, &ids),
                        2 => heap(&mut hy, &w.events, &ids),
                        _ => flat(&mut hy, &w.batch, &ids),
                    };
                    spent[k] += clock() - t0;
                }
                if answers.iter().any(|a| a != &answers[0]) {
                    return Err(format!("{model} seed {seed}: the readings disagree").into());
                }
            }
            let us = spent.map(|s| s * 1e6 / stream_len as f64);
            let (i, h) = (us[1] / us[0], us[3] / us[2]);
            println!(
                "{model} | {seed} | {rep} | {:.3} | {:.3} | {:.3} | {:.3} | {i:.3} | {h:.3}",
                us[0], us[1], us[2], us[3]
            );
            ri.push(i);
            rh.push(h);
        }
    }
    for (name, r) in [("index", &mut ri), ("hybrid", &mut rh)] {
        r.sort_by(f64::total_cmp);
        let k = r.len();
        println!(
            "{model} | {name} batch/heap: median {:.3} (quartiles {:.3}-{:.3}, range {:.3}-{:.3}) over {k} runs",
            r[k / 2],
            r[k / 4],
            r[(3 * k) / 4],
            r[0],
            r[k - 1]
        );
    }
    Ok(())
}

/// The answers of stream events `ids` from heap events.
fn heap<M: Matcher>(
    t: &mut Timed<'_, M>,
    events: &[ccm::Event],
    ids: &[usize],
) -> Vec<Vec<InterfaceId>> {
    ids.iter()
        .map(|&i| t.m.match_event_with(&events[i], &mut t.heap))
        .collect()
}

/// The answers of stream events `ids` from the batch, its names translated once.
fn flat<M: Matcher>(
    t: &mut Timed<'_, M>,
    batch: &EventBatch,
    ids: &[usize],
) -> Vec<Vec<InterfaceId>> {
    let names = t.m.batch_names(batch);
    ids.iter()
        .map(|&i| t.m.match_in_batch_with(batch, &names, i, &mut t.flat))
        .collect()
}
