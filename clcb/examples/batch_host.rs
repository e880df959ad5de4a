//! The host's share of a GPU engine's time per event, and the build times of the cell
//! index and the CPU grid index: what reading a flat batch ([`clcb::batch::EventBatch`])
//! instead of heap events saves, measured on the host alone (no device).
//!
//! 1. Laying events out for the device (the cell index's staging), ns per event, over a
//!    stream of 65,536 events, on one core and on all cores: from heap events (one
//!    name look-up per attribute, [`Tables::encode_into`], each event at the offset its
//!    bound leaves it, as the cell index staged them before it read batches) and from
//!    the batch ([`Tables::plan_batch`], [`Tables::write_batch`]); and the time to
//!    build the batch from the heap events ([`EventBatch::from_events`]). Table 2's
//!    events (integers) and the `keywords` workload's (strings).
//!    Then the CPU grid index on one core over the same stream, from heap events
//!    ([`GridIndex::match_indices_with`]) and from the batch
//!    ([`GridIndex::match_view_with`]).
//! 2. Building the cell index (on the emulator: the host build, then an upload that
//!    is a copy) and the CPU grid index of Table 2's default scenario
//!    (`[subscriptions]`, 250,000 by default), on all cores.
//!
//!     cargo run --release -p clcb --example batch_host [subscriptions]

use baselines::grid_index::GridIndex;
use clcb::batch::EventBatch;
use clcb::cells::{CellIndex, CellOptions};
use clcb::keywords::{KeywordParams, KeywordWorkload};
use clcb::layout::Tables;
use clcb::workload::{Params, Workload};
use clcb::{Event, Subscriptions};
use rayon::prelude::*;
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const STREAM: usize = 65_536;

/// The heap path: bounds on all cores, offsets, then each event encoded on all cores.
fn stage_heap(t: &Tables, events: &[Event], out: &mut Vec<u32>) {
    let bounds: Vec<usize> = events.par_iter().map(Tables::encode_bound).collect();
    let head = (events.len() + 1).next_multiple_of(4);
    let total = head + bounds.iter().sum::<usize>();
    out.resize(total, 0);
    let (offsets, mut rest) = out.split_at_mut(head);
    let mut at = head;
    let mut pieces = Vec::with_capacity(events.len());
    for (o, &len) in offsets.iter_mut().zip(&bounds) {
        *o = at as u32;
        at += len;
        let (piece, r) = rest.split_at_mut(len);
        pieces.push(piece);
        rest = r;
    }
    pieces
        .into_par_iter()
        .zip(events)
        .with_min_len(64)
        .for_each(|(piece, e)| {
            t.encode_into(e, piece);
        });
}

/// The batch path, as the cell index stages a launch.
fn stage_batch(t: &Tables, b: &EventBatch, offsets: &mut Vec<u32>, out: &mut Vec<u32>) {
    let rows = t.batch_rows(b);
    let m = b.len();
    let head = (m + 1).next_multiple_of(4);
    let total = Tables::plan_batch(b, &rows, 0..m, head, offsets);
    out.resize(total, 0);
    out[..=m].copy_from_slice(offsets);
    Tables::write_batch(b, &rows, 0..m, offsets, out);
}

/// Mean ns per event of `f` over three rounds (after one warm round).
fn ns(mut f: impl FnMut()) -> f64 {
    f();
    let t0 = Instant::now();
    for _ in 0..3 {
        f();
    }
    t0.elapsed().as_secs_f64() * 1e9 / (3 * STREAM) as f64
}

fn encoding(what: &str, subs: &Subscriptions, events: &[Event]) {
    let t = Tables::build(subs);
    let stream: Vec<Event> = events.iter().cycle().take(STREAM).cloned().collect();
    let batch = EventBatch::from_events(&stream);
    let (mut out, mut offsets) = (Vec::new(), Vec::new());
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a pool");
    let threads = rayon::current_num_threads();
    for (cores, pool) in [("1 core", Some(&one)), ("all cores", None)] {
        let run = |f: &mut (dyn FnMut() + Send)| match pool {
            Some(p) => p.install(|| ns(f)),
            None => ns(f),
        };
        let heap = run(&mut || stage_heap(&t, &stream, &mut out));
        let flat = run(&mut || stage_batch(&t, &batch, &mut offsets, &mut out));
        let build = run(&mut || {
            std::hint::black_box(EventBatch::from_events(&stream));
        });
        println!(
            "{what}, {cores} ({threads} threads in all): laying out heap events {heap:.1} ns/event, \
             the batch {flat:.1} ns/event; building the batch from heap events {build:.1} ns/event"
        );
    }
    // The CPU grid index on one core: heap events against the batch.
    let grid = GridIndex::build(subs).expect("a valid workload");
    let mut scratch = grid.scratch();
    let mut sum = 0usize;
    let heap = ns(|| {
        for e in &stream {
            sum += grid.match_indices_with(e, &mut scratch).len();
        }
    });
    let flat = ns(|| {
        let view = grid.view(&batch);
        for i in 0..batch.len() {
            sum += grid.match_view_with(&view, i, &mut scratch).len();
        }
    });
    println!("{what}, grid index on one core: heap events {heap:.1} ns/event, the batch {flat:.1} ns/event ({sum} answers)");
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(250_000);
    let w = Workload::new(
        Params {
            subscriptions: 2_000,
            events: 1000,
            ..Params::default()
        },
        1,
    );
    encoding("Table 2", &w.subscriptions(), &w.events());
    let k = KeywordWorkload::new(
        KeywordParams {
            subscriptions: 20_000,
            events: 1000,
            ..KeywordParams::default()
        },
        1,
    );
    encoding("keywords", &k.subscriptions(), &k.events());
    let subs = Workload::new(
        Params {
            subscriptions: n,
            events: 0,
            ..Params::default()
        },
        1,
    )
    .subscriptions();
    let t0 = Instant::now();
    let grid = GridIndex::build(&subs)?;
    let grid_s = t0.elapsed().as_secs_f64();
    drop(grid);
    let dev = gpu_kernels::Device::emulator();
    let opts = CellOptions::for_device(&dev);
    let t0 = Instant::now();
    let cells = CellIndex::new(dev, &subs, opts)?;
    let cells_s = t0.elapsed().as_secs_f64();
    drop(cells);
    println!(
        "build, {n} subscriptions ({} filters), {} threads: grid index {grid_s:.2} s, cell index {cells_s:.2} s",
        subs.filter_count(),
        rayon::current_num_threads()
    );
    Ok(())
}
