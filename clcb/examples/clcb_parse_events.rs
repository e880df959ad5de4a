//! Times the two ways a stream's events file (JSON Lines) is parsed window by window
//! into flat batches on all cores: lines cut by a reader thread first (`LineReader` +
//! `parse_events_batch`) and text cut by the parsing tasks themselves (`TextReader`, a
//! range of the file's map, + `parse_events_text`); checks that both give the same
//! events. `RAYON_NUM_THREADS=1` for one core.
//!
//!     cargo run --release -p clcb --example clcb_parse_events -- events.jsonl [window [text]]
//!
//! `text`: the second path only (to profile it).

use clcb::io::{parse_events_batch, parse_events_text, recycle_batch, LineReader, RawLines};
use std::path::Path;
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: clcb_parse_events FILE [WINDOW [text]]")?;
    let window: usize = match std::env::args().nth(2) {
        Some(w) => w.parse()?,
        None => 65_536,
    };
    let file = Path::new(&path);
    let threads = rayon::current_num_threads();
    let text_only = std::env::args().nth(3).as_deref() == Some("text");
    for round in 0..3 {
        // Lines cut by the reader, then parsed.
        let t = Instant::now();
        let mut reader = LineReader::new(file, clcb::io::open_input(file)?);
        let mut raw = RawLines::default();
        let mut read_s = 0.0;
        let mut lines_sum = Vec::new();
        if !text_only {
            loop {
                let r = Instant::now();
                reader.read_window(window, &mut raw)?;
                read_s += r.elapsed().as_secs_f64();
                if raw.is_empty() {
                    break;
                }
                let w = parse_events_batch(file, &raw);
                lines_sum.push((w.batch.len(), w.batch.total_attrs(), w.bad.len()));
            }
        }
        let lines_s = t.elapsed().as_secs_f64();
        // Text cut by the parsing tasks.
        let t = Instant::now();
        let mut text = ccm::text::TextReader::open(file)?;
        let mut win = ccm::text::TextWindow::default();
        let mut line = 1;
        let mut text_sum = Vec::new();
        loop {
            text.read_window(window, &mut win)?;
            if win.is_empty() {
                break;
            }
            let (w, n) = parse_events_text(file, win.bytes(), line);
            line += n;
            win.clear();
            text_sum.push((w.batch.len(), w.batch.total_attrs(), w.bad.len()));
            recycle_batch(w.batch);
        }
        let text_s = t.elapsed().as_secs_f64();
        let total = |s: &[(usize, usize, usize)]| {
            s.iter()
                .fold((0, 0, 0), |a, x| (a.0 + x.0, a.1 + x.1, a.2 + x.2))
        };
        let (a, b) = (total(&lines_sum), total(&text_sum));
        if !text_only {
            assert_eq!(a, b, "the two paths' events, attributes and bad lines");
        }
        let mb = std::fs::metadata(file)?.len() as f64 / 1e6;
        println!(
            "round {round}, {threads} threads, {} events ({mb:.1} MB), window {window}: lines cut by the reader {lines_s:.3} s \
             ({:.0} MB/s; reading {read_s:.3} s of it), text cut by the tasks {text_s:.3} s ({:.0} MB/s)",
            b.0,
            mb / lines_s,
            mb / text_s
        );
    }
    Ok(())
}
