//! Where the cell index's time goes ([`clcb::cells::CellTiming`]): staging the events on
//! all cores, waiting for the device, copying the answers into flat answers reused from
//! round to round ([`clcb::cells::CellAnswers`]), per event, over a stream of Table 2's
//! events (the default scenario's, repeated), a warm round and three timed ones, on the
//! GPU: the default scenario itself (250,000 subscriptions, `[subscriptions]` to
//! change it), 262,144 events a round in launches of 16,384. Without a GPU it runs on the
//! emulator with 200 subscriptions and 4,096 events a round, a check that it runs: the
//! emulator's threads share the host's cores with the staging, so none of its times
//! mean anything. Allocates with mimalloc, as the harness does. Answers are not checked
//! here (the harness and the tests do).
//!
//! `keywords AREA%` instead: the `keywords` experiment's workload ([`clcb::keywords`]:
//! one filter of 1-3 keywords per subscription, regions of AREA% of the world; 1M
//! subscriptions on a GPU, `[subscriptions]` to change it).
//!
//!     cargo run --release -p clcb --example cells_split [subscriptions]
//!     cargo run --release -p clcb --example cells_split keywords 1 [subscriptions]

use clcb::cells::{CellAnswers, CellIndex, CellOptions};
use clcb::keywords::{KeywordParams, KeywordWorkload};
use clcb::workload::{Params, Workload};
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
    let keywords = if args.first().map(String::as_str) == Some("keywords") {
        args.remove(0);
        if args.is_empty() {
            return Err("keywords needs the regions' area in percent (e.g. `keywords 1`)".into());
        }
        Some(args.remove(0).parse::<f64>()?)
    } else {
        None
    };
    let subscriptions =
        args.first()
            .map(|s| s.parse())
            .transpose()?
            .unwrap_or(match (dev.is_gpu(), keywords) {
                (true, Some(_)) => 1_000_000,
                (true, None) => 250_000,
                (false, _) => 200,
            });
    let (subs, events) = match keywords {
        Some(area_percent) => {
            let w = KeywordWorkload::new(
                KeywordParams {
                    subscriptions,
                    area_percent,
                    ..KeywordParams::default()
                },
                1,
            );
            (w.subscriptions(), w.events())
        }
        None => {
            let w = Workload::new(
                Params {
                    subscriptions,
                    ..Params::default()
                },
                1,
            );
            (w.subscriptions(), w.events())
        }
    };
    let (round, launch) = if dev.is_gpu() {
        (1 << 18, 16_384)
    } else {
        (4096, 4096)
    };
    let stream: Vec<_> = events.iter().cycle().take(round).cloned().collect();
    let opts = CellOptions {
        batch_events: launch,
        ..CellOptions::for_device(&dev)
    };
    let mut index = CellIndex::new(dev, &subs, opts)?;
    // Warm: the page-locked stages and the flat answers grow to the stream's size.
    let mut answers = CellAnswers::default();
    index.match_batch_into(&stream, &mut answers)?;
    println!(
        "{note}, {subscriptions} subscriptions{}, {} events a round",
        keywords.map_or(String::new(), |a| format!(" (keywords, {a}% regions)")),
        stream.len()
    );
    for round in 1..=3 {
        index.take_timing();
        let t0 = Instant::now();
        index.match_batch_into(&stream, &mut answers)?;
        let wall = t0.elapsed().as_secs_f64();
        let t = index.take_timing();
        let ns = |d: std::time::Duration| d.as_secs_f64() * 1e9 / t.events.max(1) as f64;
        println!(
            "round {round}: {:.1} ns/event; stage {:.1}, waiting for the device {:.1}, answers {:.1}; {} launches, {:.2} answers/event",
            wall * 1e9 / t.events.max(1) as f64,
            ns(t.stage),
            ns(t.wait),
            ns(t.answers),
            t.launches,
            t.pairs as f64 / t.events.max(1) as f64,
        );
    }
    Ok(())
}
