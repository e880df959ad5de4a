//! Times the parsers of an events file (JSON Lines) on all cores: into heap `Event`s
//! (`parse_events_window`) and into one flat batch (`parse_events_batch`) over the whole
//! file at once, then the stream's two paths window by window: lines cut by the reader
//! (`LineReader` + `parse_events_batch`) and text cut by the parsing tasks (`TextReader`
//! + `parse_events_text`).
//!
//! `cargo run --release -p ccm --example parse_events -- events.jsonl [window] [text]`
//!
//! With `text`, only the path of `ccm match` (text cut by the parsing tasks), five rounds,
//! and the fastest: the parser's rate on the host's cores (`RAYON_NUM_THREADS` sets how
//! many).

use ccm::io::{parse_events_batch, parse_events_text, parse_events_window, LineReader, RawLines};
use ccm::text::{TextReader, TextWindow};
use std::path::Path;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: parse_events FILE [WINDOW]")?;
    let window: usize = match std::env::args().nth(2) {
        Some(w) => w.parse()?,
        None => 65_536,
    };
    let file = Path::new(&path);
    if std::env::args().nth(3).as_deref() == Some("text") {
        return text_only(file, window);
    }
    let mut lines = RawLines::default();
    let t = Instant::now();
    LineReader::new(file, ccm::io::open_input(file)?).read_window(usize::MAX, &mut lines)?;
    println!(
        "read and split into lines on one thread: {:.3} s",
        t.elapsed().as_secs_f64()
    );
    let mb = lines.bytes() as f64 / 1e6;
    let threads = rayon::current_num_threads();
    for round in 0..2 {
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
             batch {flat_s:.3} s ({:.0} MB/s), {} bad, {threads} threads",
            lines.len(),
            mb / heap_s,
            mb / flat_s,
            flat.bad.len(),
        );
    }
    drop(lines);
    for round in 0..3 {
        let t = Instant::now();
        let mut r = LineReader::new(file, ccm::io::open_input(file)?);
        let mut w = RawLines::default();
        let mut events = 0;
        loop {
            r.read_window(window, &mut w)?;
            if w.is_empty() {
                break;
            }
            events += parse_events_batch(file, &w).batch.len();
        }
        let lines_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let (text_events, mapped) = text_pass(file, window)?;
        let text_s = t.elapsed().as_secs_f64();
        assert_eq!(events, text_events);
        println!(
            "stream round {round}, windows of {window}: lines cut by the reader {lines_s:.3} s ({:.0} MB/s), \
             text cut by the parsers {text_s:.3} s ({:.0} MB/s; mapped: {}), {events} events, {threads} threads",
            mb / lines_s,
            mb / text_s,
            mapped
        );
    }
    Ok(())
}

/// One pass of `ccm match`'s path over the file: text windows cut by the parsing tasks
/// (each window's batch given back for the next). Its events, and whether it was mapped.
fn text_pass(file: &Path, window: usize) -> Result<(usize, bool), Box<dyn std::error::Error>> {
    let mut r = TextReader::open(file)?;
    let mut w = TextWindow::default();
    let (mut line, mut events) = (1, 0);
    loop {
        r.read_window(window, &mut w)?;
        if w.is_empty() {
            break;
        }
        let (parsed, n) = parse_events_text(file, w.bytes(), line);
        line += n;
        events += parsed.batch.len();
        ccm::io::recycle_batch(parsed.batch);
        w.clear();
    }
    Ok((events, r.is_mapped()))
}

/// The text path alone, five rounds: each round's time and the fastest.
fn text_only(file: &Path, window: usize) -> Result<(), Box<dyn std::error::Error>> {
    let mb = std::fs::metadata(file)?.len() as f64 / 1e6;
    let mut best = f64::INFINITY;
    for round in 0..5 {
        let t = Instant::now();
        let (events, _) = text_pass(file, window)?;
        let s = t.elapsed().as_secs_f64();
        best = best.min(s);
        println!(
            "text round {round}, windows of {window}: {s:.4} s ({:.0} MB/s, {:.1}M events/s), {events} events, {} threads",
            mb / s,
            events as f64 / s / 1e6,
            rayon::current_num_threads()
        );
    }
    println!(
        "text best: {best:.4} s ({:.0} MB/s), {} threads",
        mb / best,
        rayon::current_num_threads()
    );
    Ok(())
}
