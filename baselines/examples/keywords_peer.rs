//! The keyword workload (`clcb::keywords`) written out for a published peer run outside
//! this workspace (FAST, ICDE 2018, in its authors' Java), and the grid index timed on
//! the same events on one core, so that the two run side by side on one machine.
//!
//! ```text
//! cargo run --release -p baselines --example keywords_peer -- DIR SUBSCRIPTIONS EVENTS AREA_PERCENT [rect|circle] [SEED] [PASSES]
//! ```
//!
//! Writes `DIR/subs.txt` (one subscription a line: `id x0 y0 x1 y1 word...`, the region's
//! bounding box, which for a rectangle is the region itself) and `DIR/events.txt` (`x y
//! word...`), coordinates as the `f64` of the model's `f32` (exact), then prints the
//! grid's build time, its best mean time per event over `PASSES` passes of the events,
//! wall and this thread's CPU time (one thread, from the flat batch, as the `keywords`
//! experiment's `grid` series), the
//! answers in all and a checksum of them (`sum over events j of (j + 1) * sum of the
//! event's subscription ids`, wrapping), which a peer's driver prints too.

use baselines::grid_index::GridIndex;
use clcb::keywords::{KeywordParams, KeywordWorkload, Region};
use std::io::Write;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        return Err("usage: keywords_peer DIR SUBSCRIPTIONS EVENTS AREA_PERCENT [rect|circle] [SEED] [PASSES]".into());
    }
    let dir = std::path::PathBuf::from(&args[0]);
    let region = match args.get(4).map(String::as_str) {
        None | Some("rect") => Region::Rect { max_aspect: 4.0 },
        Some("circle") => Region::Circle,
        Some(other) => return Err(format!("region `{other}`: rect or circle").into()),
    };
    let w = KeywordWorkload::new(
        KeywordParams {
            subscriptions: args[1].parse()?,
            events: args[2].parse()?,
            area_percent: args[3].parse()?,
            region,
            ..KeywordParams::default()
        },
        args.get(5).map_or(Ok(1), |s| s.parse())?,
    );
    let passes: usize = args.get(6).map_or(Ok(5), |s| s.parse())?;
    let subs = w.subscriptions();
    let events = w.events();
    std::fs::create_dir_all(&dir)?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("subs.txt"))?);
    for s in subs.as_slice() {
        let f = &s.filters[0];
        let [x0, y0, x1, y1] = f.area.bounds();
        write!(out, "{} {x0} {y0} {x1} {y1}", s.id)?;
        for c in &f.constraints {
            write!(out, " {}", c.name)?;
        }
        writeln!(out)?;
    }
    out.flush()?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("events.txt"))?);
    for e in &events {
        write!(out, "{} {}", f64::from(e.loc.x), f64::from(e.loc.y))?;
        for a in e.attributes() {
            write!(out, " {}", a.name)?;
        }
        writeln!(out)?;
    }
    out.flush()?;
    let t0 = Instant::now();
    let grid = GridIndex::build(&subs)?;
    let build = t0.elapsed();
    let batch = w.event_batch();
    let mut scratch = grid.scratch();
    let (mut best, mut best_cpu) = (f64::INFINITY, f64::INFINITY);
    let (mut answers, mut sum) = (0usize, 0u64);
    for pass in 0..=passes {
        let c0 = thread_cpu_ns();
        let t0 = Instant::now();
        let view = grid.view(&batch);
        let (mut a_n, mut a_sum) = (0usize, 0u64);
        for j in 0..batch.len() {
            let a = grid.match_view_with(&view, j, &mut scratch);
            a_n += a.len();
            let ids: u64 = a.iter().map(|&i| u64::from(subs.id(i as usize).0)).sum();
            a_sum = a_sum.wrapping_add((j as u64 + 1).wrapping_mul(ids));
        }
        let us = t0.elapsed().as_secs_f64() * 1e6 / batch.len().max(1) as f64;
        let cpu = (thread_cpu_ns() - c0) as f64 / 1e3 / batch.len().max(1) as f64;
        // Pass 0 warms the caches and is not counted.
        if pass > 0 {
            best = best.min(us);
            best_cpu = best_cpu.min(cpu);
            println!("grid pass {pass}: {us:.2} µs/event wall, {cpu:.2} cpu");
        }
        (answers, sum) = (a_n, a_sum);
    }
    println!(
        "grid: build {:.2} s, best {best:.2} µs/event wall, {best_cpu:.2} cpu, over {passes} passes, {answers} answers, checksum {sum}",
        build.as_secs_f64()
    );
    Ok(())
}

/// This thread's CPU time in nanoseconds (Linux: the first field of
/// `/proc/thread-self/schedstat`), so that a loaded machine's waits are left out.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
