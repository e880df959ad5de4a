//! Where the cell index's time goes ([`clcb::cells::CellTiming`]): the batch's
//! dictionaries, copying each launch's columns into page-locked staging on all cores,
//! queuing the launches, collecting their answers (waiting for the device included; the
//! answers stay in page-locked areas reused from round to round,
//! [`clcb::cells::CellAnswers`]), the device's own time, per event; beside it the CPU
//! grid index on all cores (`baselines::grid_index`, the harness's `best CPU (all
//! cores)` on these workloads) over the same flat batch, and whether the two agree on
//! every event of the stream.
//!
//! The stream is the harness's: the workload's events as a flat batch, repeated to
//! 65,536 events a round (`CELLS_ROUND` changes it); a warm round, then five timed ones
//! (the last two without the device's clock, whose marks cost the host) for each largest
//! launch size of `CELLS_LAUNCH` (comma-separated, default the index's; a size ending in
//! `-` keeps the launches full to the end of a call instead of tapering them;
//! `CELLS_COUNTS_LAUNCH=1` hands each launch's counts over with a launch of their own,
//! `CellIndex::set_counts_launch`; `CELLS_BLOCK_WRITES=1` has each block write its
//! events' starts and lengths at once, `CellIndex::set_block_writes`). On
//! the GPU: Table 2's default scenario (250,000 subscriptions, `[subscriptions]` to
//! change it). Without a GPU it runs on the emulator with 200 subscriptions and 4,096
//! events a round, a check that it runs: the emulator's threads share the host's cores
//! with the staging, so none of its times mean anything. Allocates with mimalloc, as
//! the harness does.
//!
//! `keywords AREA%` instead: the `keywords` experiment's workload ([`clcb::keywords`]:
//! one filter of 1-3 keywords per subscription, regions of AREA% of the world; 1M
//! subscriptions on a GPU, `[subscriptions]` to change it). `uniform AREA%` and `zipf
//! AREA%`: the workloads of Figs. 3 and 4 (Table 1's, areas of AREA% of the world, 1M
//! subscriptions on a GPU; Fig. 4d is `zipf 1`, whose events have thousands of answers).
//!
//!     cargo run --release -p clcb --example cells_split [subscriptions]
//!     cargo run --release -p clcb --example cells_split keywords 1 [subscriptions]
//!     cargo run --release -p clcb --example cells_split zipf 1 [subscriptions]

use baselines::grid_index::GridIndex;
use clcb::cells::{CellAnswers, CellIndex, CellOptions};
use clcb::keywords::{KeywordParams, KeywordWorkload};
use clcb::workload::{Params, Spatial, Workload};
use gpu_kernels::Device;
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (dev, note) = match Device::gpu(0, clcb::PTX) {
        Ok(d) => (d, "GPU"),
        Err(_) => (Device::emulator(), "emulator"),
    };
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // `keywords AREA`, `uniform AREA`, `zipf AREA`: the workload and its areas' size.
    let mode = match args.first().map(String::as_str) {
        Some(m @ ("keywords" | "uniform" | "zipf")) => {
            let m = m.to_string();
            args.remove(0);
            if args.is_empty() {
                return Err(format!("{m} needs the areas' size in percent (e.g. `{m} 1`)").into());
            }
            Some((m, args.remove(0).parse::<f64>()?))
        }
        _ => None,
    };
    let keywords = mode.as_ref().filter(|m| m.0 == "keywords").map(|m| m.1);
    let figure = mode.as_ref().filter(|m| m.0 != "keywords").map(|m| {
        let spatial = if m.0 == "zipf" {
            Spatial::Zipf { s: 1.0 }
        } else {
            Spatial::Uniform
        };
        (spatial, m.1)
    });
    let subscriptions = args.first().map(|s| s.parse()).transpose()?.unwrap_or(
        match (dev.is_gpu(), mode.is_some()) {
            (true, true) => 1_000_000,
            (true, false) => 250_000,
            (false, _) => 200,
        },
    );
    let (subs, batch) = match keywords {
        Some(area_percent) => {
            let w = KeywordWorkload::new(
                KeywordParams {
                    subscriptions,
                    area_percent,
                    ..KeywordParams::default()
                },
                1,
            );
            (w.subscriptions(), w.event_batch())
        }
        None => {
            let (spatial, area_percent) =
                figure.unwrap_or((Spatial::Uniform, Params::default().area_percent));
            let w = Workload::new(
                Params {
                    subscriptions,
                    spatial,
                    area_percent,
                    ..Params::default()
                },
                1,
            );
            (w.subscriptions(), w.event_batch())
        }
    };
    let env = |k: &str| std::env::var(k).ok();
    let round = match env("CELLS_ROUND").and_then(|v| v.parse().ok()) {
        Some(n) => n,
        None if dev.is_gpu() => 1 << 16,
        None => 4096,
    };
    // A launch size ending in `-` keeps full launches to the end of a call (no taper).
    let launches: Vec<(usize, bool)> = match env("CELLS_LAUNCH") {
        Some(v) => v
            .split(',')
            .map(|s| {
                let s = s.trim();
                let size = s.trim_end_matches('-');
                size.parse::<usize>().map(|n| (n, size.len() == s.len()))
            })
            .collect::<Result<_, _>>()?,
        None if dev.is_gpu() => vec![(CellOptions::for_device(&dev).batch_events, true)],
        None => vec![(4096, true)],
    };
    let stream = batch.repeated(round);
    println!(
        "{note}, {subscriptions} subscriptions{}, {} events a round",
        mode.as_ref()
            .map_or(String::new(), |(m, a)| format!(" ({m}, {a}% areas)")),
        stream.len()
    );
    // The yardstick: the grid index on all cores, from the same batch.
    let t0 = Instant::now();
    let grid = GridIndex::build(&subs)?;
    let built = t0.elapsed().as_secs_f64();
    let _ = grid.match_batch_parallel(&stream);
    let t0 = Instant::now();
    let want = grid.match_batch_parallel(&stream);
    let grid_ns = t0.elapsed().as_secs_f64() * 1e9 / stream.len() as f64;
    let gb = grid.build_timing();
    println!(
        "grid all cores ({} threads, built in {built:.3} s: check {:.3}, keys {:.3}, constraints compiled {:.3}, cells {:.3}): {grid_ns:.1} ns/event",
        rayon::current_num_threads(),
        gb.check.as_secs_f64(),
        gb.keys.as_secs_f64(),
        gb.tests.as_secs_f64(),
        gb.cells.as_secs_f64(),
    );
    let t0 = Instant::now();
    let mut index = CellIndex::new(
        dev,
        &subs,
        CellOptions {
            batch_events: launches[0].0,
            taper: launches[0].1,
        },
    )?;
    let b = index.build_timing();
    println!(
        "cell index built in {:.3} s: {b}",
        t0.elapsed().as_secs_f64()
    );
    // `CELLS_COUNTS_LAUNCH=1`: the counts handed over by a launch of their own.
    let counts_launch = env("CELLS_COUNTS_LAUNCH").is_some_and(|v| v == "1");
    index.set_counts_launch(counts_launch);
    // `CELLS_BLOCK_WRITES=1`: each block writes its events' starts and lengths at once.
    let block_writes = env("CELLS_BLOCK_WRITES").is_some_and(|v| v == "1");
    index.set_block_writes(block_writes);
    let mut answers = CellAnswers::default();
    for &(launch, taper) in &launches {
        index.set_batch_events(launch);
        index.set_taper(taper);
        index.set_device_clock(true);
        // Warm: the page-locked stagings and the answers' areas grow to the stream's.
        index.match_event_batch_into(&stream, &mut answers)?;
        let agree = (0..stream.len()).all(|i| answers.get(i) == want[i].as_slice());
        let shape = format!(
            "{}{}{}",
            if taper { "tapered" } else { "full to the end" },
            if counts_launch {
                ", counts launched"
            } else {
                ""
            },
            if block_writes {
                ", a block's writes"
            } else {
                ""
            },
        );
        println!("launches of at most {launch} ({shape}): answers equal to the grid's: {agree}");
        for round in 1..=5 {
            // The last two rounds without the device's clock: its marks cost the host.
            index.set_device_clock(round <= 3);
            index.take_timing();
            let t0 = Instant::now();
            index.match_event_batch_into(&stream, &mut answers)?;
            let wall = t0.elapsed().as_secs_f64() * 1e9 / stream.len() as f64;
            let t = index.take_timing();
            let ns = |d: std::time::Duration| d.as_secs_f64() * 1e9 / t.events.max(1) as f64;
            println!(
                "  round {round}: {wall:.1} ns/event ({:.2}x the grid); dictionaries {:.1}, stage {:.1}, submit {:.1}, \
                 answers (waiting for the device included) {:.1} (of which spilled answers grouped and sorted {:.1}, the sorts {:.1}), waited for staging {:.1}, device {:.1}; \
                 {} launches, {:.2} answers/event",
                grid_ns / wall,
                ns(t.dictionaries),
                ns(t.stage),
                ns(t.submit),
                ns(t.answers),
                ns(t.spilled),
                ns(t.spilled_sort),
                ns(t.waited),
                ns(t.device),
                t.launches,
                t.pairs as f64 / t.events.max(1) as f64,
            );
        }
    }
    Ok(())
}
