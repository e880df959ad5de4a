//! Where `clcb match`'s loading and building go, on the host alone: a users'
//! subscriptions file loaded as the model ([`clcb::io::load_subscriptions`], then
//! [`Subscriptions::new`]) and as columns ([`clcb::io::load_subscription_columns_timed`]),
//! then the cell index (on the emulator: the host build, then an upload that is a copy)
//! and the CPU grid built from the columns; and an events file parsed window by window
//! into batches ([`clcb::io::parse_events_batch`]), as the stream parses it. Each step
//! `[reps]` times (3 by default), the least time kept, with the process's CPU time
//! (user + system) over the reps.
//!
//!     cargo run --release -p clcb --example load_split -- SUBS.jsonl [EVENTS.jsonl] [reps]

use baselines::grid_index::GridIndex;
use clcb::cells::{CellIndex, CellOptions};
use clcb::io::{LineReader, RawLines};
use clcb::Subscriptions;
use std::path::Path;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The process's user + system CPU time so far (`/proc/self/stat`, clock ticks of 10 ms).
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or_default();
    let f: Vec<u64> = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    Duration::from_millis(10 * f.iter().sum::<u64>())
}

/// Runs `f` `reps` times: the least wall time and the mean CPU time per run.
fn best<T>(reps: usize, mut f: impl FnMut() -> T) -> (Duration, Duration, T) {
    let mut least = Duration::MAX;
    let c0 = cpu();
    let mut last = None;
    for _ in 0..reps {
        drop(last.take());
        let t = Instant::now();
        let v = f();
        least = least.min(t.elapsed());
        last = Some(v);
    }
    let per = (cpu() - c0) / reps as u32;
    (least, per, last.expect("at least one rep"))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let subs_path = Path::new(
        args.first()
            .ok_or("usage: load_split SUBS [EVENTS] [reps]")?,
    );
    let events = args.get(1).filter(|a| a.parse::<usize>().is_err());
    let reps: usize = args.last().and_then(|a| a.parse().ok()).unwrap_or(3).max(1);
    println!(
        "{} threads, {reps} reps (least wall time; mean CPU time)",
        rayon::current_num_threads()
    );
    let (w, c, subs) = best(reps, || {
        Subscriptions::new(clcb::io::load_subscriptions(subs_path).expect("loads"))
    });
    println!(
        "load as the model           {:.3} s  cpu {:.3} s  ({} subscriptions, {} filters)",
        w.as_secs_f64(),
        c.as_secs_f64(),
        subs.len(),
        subs.filter_count()
    );
    drop(subs);
    let (w, c, (cols, t)) = best(reps, || {
        clcb::io::load_subscription_columns_timed(subs_path).expect("loads")
    });
    println!(
        "load as columns             {:.3} s  cpu {:.3} s  (last: map {:.3} s, parse {:.3}, join {:.3})",
        w.as_secs_f64(),
        c.as_secs_f64(),
        t.read.as_secs_f64(),
        t.parse.as_secs_f64(),
        t.join.as_secs_f64()
    );
    // Each build takes its own copy of the columns (made before it is timed).
    let mut copies: Vec<_> = (0..reps).map(|_| cols.clone()).collect();
    let (w, c, ix) = best(reps, || {
        let dev = gpu_kernels::Device::emulator();
        let opts = CellOptions::for_device(&dev);
        let mine = copies.pop().expect("one per rep");
        CellIndex::from_columns(dev, mine, opts).expect("builds")
    });
    println!(
        "cell index from columns     {:.3} s  cpu {:.3} s  (last: {})",
        w.as_secs_f64(),
        c.as_secs_f64(),
        ix.build_timing()
    );
    drop(ix);
    let (w, c, g) = best(reps, || GridIndex::from_columns(&cols).expect("builds"));
    let b = g.build_timing();
    println!(
        "grid from columns           {:.3} s  cpu {:.3} s  (last: keys {:.3} s, tests {:.3}, cells {:.3})",
        w.as_secs_f64(),
        c.as_secs_f64(),
        b.keys.as_secs_f64(),
        b.tests.as_secs_f64(),
        b.cells.as_secs_f64()
    );
    drop(g);
    if let Some(e) = events {
        let path = Path::new(e);
        let (w, c, n) = best(reps, || {
            let f = std::fs::File::open(path).expect("opens");
            let mut r = LineReader::new(path, std::io::BufReader::with_capacity(1 << 20, f));
            let (mut raw, mut n) = (RawLines::default(), 0usize);
            let mut parse = Duration::ZERO;
            loop {
                r.read_window(65_536, &mut raw).expect("reads");
                if raw.is_empty() {
                    break;
                }
                let t = Instant::now();
                let b = clcb::io::parse_events_batch(path, &raw);
                parse += t.elapsed();
                n += b.batch.len();
            }
            (n, parse)
        });
        println!(
            "events read + parsed        {:.3} s  cpu {:.3} s  ({} events; parse alone {:.3} s)",
            w.as_secs_f64(),
            c.as_secs_f64(),
            n.0,
            n.1.as_secs_f64()
        );
    }
    Ok(())
}
