//! Times the two parsers of an events file (JSON Lines) on all cores: into heap
//! `Event`s (`parse_events_window`) and into one flat batch (`parse_events_batch`).
//!
//! `cargo run --release -p ccm --example parse_events -- events.jsonl`

use ccm::io::{parse_events_batch, parse_events_window, LineReader, RawLines};
use std::path::Path;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: parse_events FILE")?;
    let file = Path::new(&path);
    let mut lines = RawLines::default();
    let t = Instant::now();
    LineReader::new(file, ccm::io::open_input(file)?).read_window(usize::MAX, &mut lines)?;
    println!(
        "read and split into lines on one thread: {:.3} s",
        t.elapsed().as_secs_f64()
    );
    let mb = lines.bytes() as f64 / 1e6;
    for round in 0..3 {
        let t = Instant::now();
        let heap = parse_events_window(file, &lines);
        let heap_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let flat = parse_events_batch(file, &lines);
        let flat_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        drop(heap);
        let drop_s = t.elapsed().as_secs_f64();
        println!(
            "round {round}: {} lines, {mb:.1} MB: heap events {heap_s:.3} s ({:.0} MB/s; freeing them {drop_s:.3} s), \
             batch {flat_s:.3} s ({:.0} MB/s), {} bad, {} threads",
            lines.len(),
            mb / heap_s,
            mb / flat_s,
            flat.bad.len(),
            rayon::current_num_threads()
        );
    }
    Ok(())
}
