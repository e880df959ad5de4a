//! The pruning index on the dense model at 1M filters (`dense`: an interface per filter,
//! answers of thousands of ids per event; `dense10`: ten interfaces), at 4 (3-5), 10 and
//! 20 names per event, in a few tunings (see `main`): the index's default (each launch
//! on the value cells, in interface or name order, or walked, as it measures), every event
//! on the value cells (in name order where built, and in interface order), the partition
//! walk, and for `dense10` the interface-major kernel (no value cells, as before they
//! took filters sharing interfaces): the time per event of each, timed as
//! the harness times `gpu index` (a stream of 16,384 of the workload's events in rounds
//! of four launches, warmed with a round, the least time of two passes), the index's
//! split (the device's time in all and in the walk, the dense events' kernel and the
//! lists; the host's queuing, answers and staging; the launches with every event on the
//! cells), and the hybrid index on all cores (the best CPU of the dense experiments) on
//! 8,192 of the events, the least time of two passes. Every answer of every tuning is
//! checked against the hybrid index's on the workload's events; exits non-zero on the
//! first that differs.
//!
//!     cargo run --release -p ccm --example dense_lists [filters] [seed] [profile|dense|dense10|all] [x,..]
//!
//! (`profile`: only `dense` at x = 20, every event on the value cells, for a profiler;
//! `dense`, `dense10`: only that experiment; the last argument: only those x, e.g. `4,10`.)
//!
//! (1,000,000 filters and seed 1 by default; a GPU, else the host emulator, slowly.)

use baselines::hybrid_index::HybridIndex;
use baselines::Matcher;
use ccm::workload::{generate_dense, DenseParams};
use ccm::{Answers, GpuIndex, IndexConfig};
use gpu_kernels::Device;
use std::io::Write;
use std::time::Instant;

/// The harness's allocator, so that the CPU index's memory behaves as in its runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Events of the GPU stream (a quarter of the harness's, to keep the run short) and of the
/// CPU one.
const GPU_STREAM: usize = 16_384;
const CPU_STREAM: usize = 8_192;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |i: usize, d: u64| -> Result<u64, Box<dyn std::error::Error>> {
        Ok(std::env::args()
            .nth(i)
            .map(|s| s.parse())
            .transpose()?
            .unwrap_or(d))
    };
    let filters = arg(1, 1_000_000)? as usize;
    let seed = arg(2, 1)?;
    // `profile`: only `dense` at x = 20 on the value cells (for a profiler's run).
    let profile = std::env::args().nth(3).as_deref() == Some("profile");
    let only = std::env::args().nth(3).filter(|a| a.starts_with("dense"));
    let xs: Vec<usize> = match std::env::args().nth(4) {
        Some(v) => v.split(',').map(str::parse).collect::<Result<_, _>>()?,
        None => vec![20, 4, 10],
    };
    let dev = Device::gpu_or_emulator_noted(0, ccm::PTX);
    let (gpu_n, cpu_n) = if dev.is_gpu() {
        (GPU_STREAM, CPU_STREAM)
    } else {
        (64, 64)
    };
    let events = if dev.is_gpu() { 1000 } else { 16 };
    let (mut bad, mut failed) = (0, 0);
    for (exp, interfaces) in [("dense", None), ("dense10", Some(10))] {
        for &x in &xs {
            if profile && (interfaces.is_some() || x != 20)
                || only.as_deref().is_some_and(|o| o != exp)
            {
                continue;
            }
            let p = DenseParams {
                events,
                filters,
                interfaces,
                names_per_event: if x == 4 { (3, 5) } else { (x, x) },
                ..DenseParams::default()
            };
            let w = generate_dense(&p, seed)?;
            let label = format!("{exp} F={filters} x={x} seed {seed}");
            let hybrid = HybridIndex::build(&w.subscriptions)?;
            let want = hybrid.match_batch_parallel(&w.batch);
            let per_event = want.iter().map(Vec::len).sum::<usize>() as f64 / want.len() as f64;
            let stream = w.batch.cycled(cpu_n);
            let mut cpu = f64::INFINITY;
            for _ in 0..2 {
                let t = Instant::now();
                let got = hybrid.match_batch_parallel(&stream);
                cpu = cpu.min(t.elapsed().as_secs_f64() * 1e6 / got.len() as f64);
            }
            drop(hybrid);
            println!("{label}: hybrid all cores {cpu:.3} us/event, {per_event:.1} answers/event");
            let base = IndexConfig::for_device(&dev);
            let every = IndexConfig {
                cells_share: 0.0,
                ..base
            };
            let plain = IndexConfig {
                cells_sorted: false,
                ..base
            };
            // The default (each launch on the value cells, in interface order or, for
            // `dense`, in name order, or walked, as the index measures); for `dense`, the
            // default without the name order (the paths before it); every event on the
            // value cells (in name order where built); for `dense`, every event on the
            // cells in interface order; every launch walked (the events beyond an eighth of
            // the filters on the cells); for `dense`, every event on the cells in name
            // order with the answers counted by a second kernel (not the cells), in blocks of 2048 events, and in
            // blocks of 1024 threads with 200 KiB of shared memory (more cells per name
            // beside the name order's longer lists of bounds per slice); for `dense10`, the
            // interface-major kernel (no value cells).
            let walk = IndexConfig {
                cells_adaptive: false,
                ..base
            };
            let tunings: Vec<(&str, IndexConfig)> = if interfaces.is_none() {
                vec![
                    ("default", base),
                    ("default, no name order", plain),
                    ("cells every event", every),
                    (
                        "cells every event, interface order",
                        IndexConfig {
                            cells_share: 0.0,
                            ..plain
                        },
                    ),
                    ("walk", walk),
                    (
                        "cells every event, counted by a second kernel",
                        IndexConfig {
                            sorted_counts: false,
                            ..every
                        },
                    ),
                    (
                        "cells every event, 2048 events per block",
                        IndexConfig {
                            cell_events: 2048,
                            ..every
                        },
                    ),
                    (
                        "cells every event, 1024 threads 200 KiB",
                        IndexConfig {
                            cell_block: 1024,
                            cell_shared: 200 << 10,
                            ..every
                        },
                    ),
                ]
            } else {
                vec![
                    ("default", base),
                    ("cells every event", every),
                    ("walk", walk),
                    (
                        "interface-major",
                        IndexConfig {
                            cells: false,
                            ..base
                        },
                    ),
                ]
            };
            for (tuning, cfg) in tunings {
                if profile && tuning != "cells every event" {
                    continue;
                }
                // A tuning the device refuses (e.g. a block's registers) is reported, and
                // the others run.
                let run = |bad: &mut usize| -> Result<(), Box<dyn std::error::Error>> {
                    let t = Instant::now();
                    let mut index = GpuIndex::new(&dev, &w.subscriptions, cfg)?;
                    let build_s = t.elapsed().as_secs_f64();
                    let mut out = Answers::default();
                    index.match_batch_into(&w.batch, &mut out)?;
                    let wrong = out
                        .iter()
                        .zip(&want)
                        .filter(|(g, w)| *g != w.as_slice())
                        .count()
                        + (out.len() != want.len()) as usize;
                    *bad += wrong;
                    let us = time_stream(&mut index, &w.batch, gpu_n, &mut out)?;
                    let s = index.take_timing();
                    let ns =
                        |d: std::time::Duration| d.as_secs_f64() * 1e9 / s.events.max(1) as f64;
                    println!(
                        "{label}: gpu index, {tuning} (cells built {}): {us:.3} us/event ({:.1}x hybrid all cores), {wrong} answers \
                         differ from the hybrid's; device {:.1} ns/event, of it encode {:.1}, walk {:.1}, dense {:.1}, lists {:.1}; \
                         host kernels {:.1}, copy in {:.1}, answers {:.1}, stage {:.1}, waited {:.1} ns/event ({} events, {} launches, \
                         {} on the cells alone, {} of them in name order, {} dense; built in {build_s:.2} s)",
                        index.has_cells(),
                        cpu / us,
                        ns(s.device),
                        ns(s.device_encode),
                        ns(s.device_walk),
                        ns(s.device_dense),
                        ns(s.device_lists),
                        ns(s.kernels),
                        ns(s.copy_in),
                        ns(s.answers),
                        ns(s.stage),
                        ns(s.waited),
                        s.events,
                        s.launches,
                        s.cells_launches,
                        s.sorted_launches,
                        s.dense_events,
                    );
                    Ok(())
                };
                if let Err(e) = run(&mut bad) {
                    println!("{label}: gpu index, {tuning}: failed: {e}");
                    failed += 1;
                }
                std::io::stdout().flush()?;
            }
        }
    }
    if bad > 0 || failed > 0 {
        let e = format!("{bad} answers differ from the hybrid index's, {failed} tunings failed");
        return Err(e.into());
    }
    println!("all answers equal the hybrid index's");
    Ok(())
}

/// The least time per event (µs) of two passes over a stream of `n` of the batch's
/// events, in rounds of four launches, after a warming round (as the harness times the
/// index); the split is of the two timed passes only.
fn time_stream(
    index: &mut GpuIndex<'_>,
    batch: &ccm::EventBatch,
    n: usize,
    out: &mut Answers,
) -> Result<f64, Box<dyn std::error::Error>> {
    let stream = batch.cycled(n.max(batch.len()));
    let len = stream.len();
    let round = batch.len().max(4 * index.launch_events()).clamp(1, len);
    index.match_range_into(&stream, 0..round, out)?;
    index.take_timing();
    let mut best = f64::INFINITY;
    for _ in 0..2 {
        index.forget_dictionaries();
        let t = Instant::now();
        let mut answers: usize = 0;
        for start in (0..len).step_by(round) {
            index.match_range_into(&stream, start..(start + round).min(len), out)?;
            answers += out.total();
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e6 / len as f64);
        std::hint::black_box(answers);
    }
    Ok(best)
}
