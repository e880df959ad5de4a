//! The clcb paper's experiments (Cugola & Margara, Middleware 2012, §5: Table 2 and
//! Figs. 3–7). The `clcb match` / `clcb generate` subcommands are in `users::clcb`.
//!
//! Engines: `gpu` (the paper's `Loc`, `Cont`, `Zip` pipeline, one event at a time),
//! `gpu batched` (beyond the paper: many events per pass over the filters), `gpu grid`
//! (beyond the paper: a grid index, only the filters near the event), `gpu grid batched`
//! (beyond the paper: batched, each event's grid candidates only), `gpu latency` and
//! `gpu grid latency` (beyond the paper: the low-latency path, `Engine::set_low_latency`:
//! one launch and one synchronisation per event, the event's header in the launch
//! parameters, the rest of it and the results in mapped host memory, nothing copied;
//! over every filter, or over the grid's candidates; in Table 2 row 3 and Fig. 5, one
//! area update in that mode: one 16-byte copy of the packed position and squared
//! radius; in Fig. 6, `latency kernel` is that path's one kernel), `emu` (the
//! same kernels on the emulator, quick mode), `rtree` (the R*-tree peer: location only
//! in Figs. 3–4 as in the paper, location + content as the oracle), `sff` (the SFF-like
//! matcher, content only and with location encoded as constraints, Table 2), `gpu
//! persistent` (beyond the paper, `Engine::set_persistent`: a persistent kernel fed
//! through a ring in mapped host memory, events and area updates in order, no launch per
//! event; the GPU busy-waits while it runs; Table 2 rows 2 and 3, and the `latency` and
//! `inflight` experiments), `gpu grid persistent` (the same over the grid index),
//! `gpu cells batched` (engine `gpu-cells`, beyond the paper: the cell index,
//! `clcb::cells`, the CPU grid index's cells with content keys on the device, a warp
//! per event, timed over the same stream of events as `grid all cores`; its area moves
//! are the series `gpu cells` in Table 2 row 3 and Fig. 5), and `emu cells batched`
//! (`emu-cells`, the same on the emulator).
//!
//! Batched series read the workload's events as the flat batch its generator draws
//! them into ([`clcb::batch::EventBatch`]): `gpu batched`, `gpu grid batched`, `gpu cells
//! batched`, and the CPU grid, `grid` (one core) and `grid all cores`, so that both sides
//! of every ratio against `best CPU (all cores)` start from the same batch; per-event
//! series (`gpu`, `gpu grid`, the latency and persistent paths) and the R*-tree peer
//! take heap events (`Vec<Event>`); Table 2's SFF peers (content only, and with
//! location) read the batch in place too. Beside them: `grid heap events` (the grid on
//! one core over the same events as heap objects, the yardstick before the batch, to
//! show the batch is not slower) and `batch from heap events` (the time per event to
//! build the batch from heap events on all cores, `EventBatch::from_events`: the share
//! of parsing the batched times leave out), in Table 2, Figs. 3-4 and `keywords`.
//!
//! `GPU_MATCH_CLCB_SIZES` (comma-separated subscription counts) replaces the x values of
//! Figs. 3-4 and `keywords` at full scale, e.g. `1000000` for their largest point only.
//!
//! Every answer of every kernel series (`gpu`, `gpu batched`, `gpu grid`, `gpu grid
//! batched`, `gpu latency`, `gpu grid latency` and their `emu` twins) is checked against
//! the R*-tree with the content check on every workload (a mismatch fails the run), on all the events in quick
//! mode and on the first [`CHECKED_EVENTS`] of each workload at full scale. Times are
//! per event (end to end: encode, copy in, kernels, copy out, sort) or per update, the
//! mean over the workload's events after a short untimed warm-up; CPU peers run fewer
//! events at full scale so that each experiment stays within minutes.

use crate::experiment::{Ctx, EngineKind, Experiment, Paper};
use anyhow::Context as _;
use baselines::grid_index::{GridIndex, Scratch};
use baselines::rtree::RTreeMatcher;
use baselines::sff_location::{content_sff, SffLocation};
use baselines::Matcher;
use clcb::batch::EventBatch;
use clcb::cells::{CellAnswers, CellIndex, CellOptions};
use clcb::keywords::{KeywordParams, KeywordWorkload, Region};
use clcb::workload::{Params, Spatial, Workload};
use clcb::{AreaUpdate, Engine, Event, Options, StepTimes, Subscriptions};
use gpu_kernels::Device;
use std::time::Instant;

/// Events of each full-scale workload checked against the R*-tree oracle.
const CHECKED_EVENTS: usize = 100;

/// The paper's tables and figures.
pub fn experiments() -> Vec<Experiment> {
    let e = |id, title, x_label, y_label, log_x, log_y, baseline, paper_says, run| Experiment {
        paper: Paper::Clcb,
        id,
        title,
        x_label,
        y_label,
        log_x,
        log_y,
        higher_is_better: false,
        baseline,
        paper_says,
        run,
    };
    let subs_x = "subscriptions (10 filters each)";
    let ms = "processing time per event (ms)";
    vec![
        e(
            "table2",
            "Table 2: processing time per event (x = 1: content only, 2: with location) and time per area update (x = 3), default scenario",
            "row (1: w/o location, 2: w/ location, 3: update)",
            "time (ms)",
            false,
            true,
            Some("sff"),
            "SFF 13.78 ms w/o location, 118.69 ms with, 10151 ms per update; CLCB 0.306 ms with location (389x SFF)",
            table2,
        ),
        e(
            "latency",
            "Per-event latency distribution, default scenario (beyond the paper): end to end (event written by the host to answer read by the host) over 100k events for the \
                paper's pipeline (gpu: copy in, Loc, Cont, Zip, copy back), the one-launch mapped path (gpu latency) and the persistent kernel over every filter (gpu persistent) \
                and over the grid index (gpu grid persistent), one event at a time",
            "percentile",
            "latency per event (µs)",
            false,
            true,
            None,
            "the paper reports means only: 0.306 ms per event with location (Table 2)",
            latency,
        ),
        e(
            "inflight",
            "Persistent kernel under load, default scenario (beyond the paper): throughput (series '... events/s') and p99 end-to-end latency (series '... p99 us') as the events \
                in flight in the ring grow",
            "events in flight",
            "events/s, and p99 latency (µs)",
            true,
            true,
            None,
            "not in the paper (one event at a time)",
            inflight,
        ),
        e("fig3a", "Fig. 3a: matching time vs subscriptions, uniform, each filter covers 0.001% of the area", subs_x, ms, true, true, Some("rtree"), "R-Tree faster below ~400 \
            subscriptions; CLCB 2.47x faster at 1M (0.001%)", fig3a),
        e("fig3b", "Fig. 3b: matching time vs subscriptions, uniform, each filter covers 0.01% of the area", subs_x, ms, true, true, Some("rtree"), "CLCB time flat in the area \
            size; R-Tree degrades as areas grow", fig3b),
        e("fig3c", "Fig. 3c: matching time vs subscriptions, uniform, each filter covers 0.1% of the area", subs_x, ms, true, true, Some("rtree"), "CLCB time flat in the area \
            size; R-Tree degrades as areas grow", fig3c),
        e("fig3d", "Fig. 3d: matching time vs subscriptions, uniform, each filter covers 1% of the area", subs_x, ms, true, true, Some("rtree"),
            "CLCB 251.7x faster than R-Tree at 1M subscriptions (1%)", fig3d),
        e("fig4a", "Fig. 4a: matching time vs subscriptions, Zipf, each filter covers 0.001% of the area", subs_x, ms, true, true, Some("rtree"),
            "CLCB 11.7x faster than R-Tree at 1M (0.001%, Zipf)", fig4a),
        e("fig4b", "Fig. 4b: matching time vs subscriptions, Zipf, each filter covers 0.01% of the area", subs_x, ms, true, true, Some("rtree"),
            "CLCB 16.3x faster than R-Tree at 1M (0.01%, Zipf)", fig4b),
        e("fig4c", "Fig. 4c: matching time vs subscriptions, Zipf, each filter covers 0.1% of the area", subs_x, ms, true, true, Some("rtree"),
            "CLCB 132.8x faster than R-Tree at 1M (0.1%, Zipf)", fig4c),
        e("fig4d", "Fig. 4d: matching time vs subscriptions, Zipf, each filter covers 1% of the area", subs_x, ms, true, true, Some("rtree"), "CLCB 544x faster than R-Tree at 1M (1%, Zipf)", fig4d),
        e("fig5a", "Fig. 5a: time per area update vs subscriptions, uniform", subs_x, "time per update (µs)", true, true, Some("rtree"), "CLCB 2.65 µs per update, constant; R-Tree \
            5.26 ms at 1M (1985x)", fig5a),
        e("fig5b", "Fig. 5b: time per area update vs subscriptions, Zipf", subs_x, "time per update (µs)", true, true, Some("rtree"), "update times only marginally influenced by \
            the spatial distribution", fig5b),
        e("fig6a", "Fig. 6a: time per step of the GPU pipeline vs subscriptions, default scenario", subs_x, "time per event (ms)", true, true, None, "copies below 0.1 ms and flat; \
            kernels dominate and grow with the problem", fig6a),
        e("fig6b", "Fig. 6b: time per step of the GPU pipeline vs subscriptions, all-match content", subs_x, "time per event (ms)", true, true, None, "Cont dominates; copy of \
            results stays below 0.6 ms at 1M subscriptions", fig6b),
        e(
            "keywords",
            "Keywords (beyond the paper): spatio-textual matching as FAST (ICDE 2018) measures it: subscriptions = a region covering A % of the space (a circle, or in series \
                `rect` a rectangle) + 1-3 keywords of a Zipf vocabulary of 10k (string equalities), events = a point + 3-8 keywords",
            "subscriptions (1 filter each)",
            ms,
            true,
            true,
            Some("rtree"),
            "not in the paper; FAST (ICDE 2018), one thread, is 1.5-3.6x our R*-tree at 1M subscriptions with 0.01% regions and 15-64x with 1% regions",
            keywords,
        ),
        e("fig7", "Fig. 7: GPU memory vs number of filters", "filters (millions)", "GPU memory (MB)", false, false, None, "1 GB holds more than 13 million filters (1.3M subscriptions)", fig7),
        Experiment {
            higher_is_better: true,
            ..e("scaling", SCALING_TITLE, "GPUs", "events/s, and speedup over one GPU (x)", true, false, None, "not in the paper (one GPU)", scaling)
        },
    ]
}

const SCALING_TITLE: &str = "Many GPUs in one host (beyond the paper): events per second of the matcher with the subscriptions cut over the GPUs (gpu multi: the paper's pipeline, \
    batched; gpu multi grid: the grid index, batched) against the number of GPUs, at Fig. 3a's largest workload (1M subscriptions of 10 filters, uniform, 0.001% areas) and at 4x \
    its subscriptions; answers checked against the one-GPU engine";

// ---------------------------------------------------------------------------------
// Engines of one run.

struct Engines {
    gpu: Option<usize>,
    emu: bool,
    rtree: bool,
    sff: bool,
    grid: bool,
    /// The cell index's devices, by series prefix (`gpu cells`, `emu cells`).
    cells: Vec<(&'static str, Target)>,
}

impl Engines {
    fn of(ctx: &Ctx) -> Engines {
        Engines {
            gpu: if ctx.wants("gpu", EngineKind::Gpu) {
                ctx.gpu_ordinal
            } else {
                None
            },
            emu: ctx.wants("emu", EngineKind::Emu),
            rtree: ctx.wants("rtree", EngineKind::Cpu),
            sff: ctx.wants("sff", EngineKind::Cpu),
            grid: ctx.wants("grid", EngineKind::Cpu),
            cells: [
                ("gpu cells", "gpu-cells", EngineKind::Gpu),
                ("emu cells", "emu-cells", EngineKind::Emu),
            ]
            .into_iter()
            .filter(|&(_, engine, kind)| ctx.wants(engine, kind))
            .map(|(series, _, kind)| match (kind, ctx.gpu_ordinal) {
                (EngineKind::Gpu, Some(o)) => (series, Target::Gpu(o)),
                _ => (series, Target::Emu),
            })
            .collect(),
        }
    }

    /// The devices to run the kernels on, by series name.
    fn devices(&self) -> Vec<(&'static str, Target)> {
        let mut v = Vec::new();
        if let Some(o) = self.gpu {
            v.push(("gpu", Target::Gpu(o)));
        }
        if self.emu {
            v.push(("emu", Target::Emu));
        }
        v
    }
}

/// Where the kernels run; each engine opens its own [`Device`] (an engine owns it).
#[derive(Clone, Copy)]
enum Target {
    Gpu(usize),
    Emu,
}

impl Target {
    fn open(self) -> anyhow::Result<Device> {
        Ok(match self {
            Target::Gpu(o) => Device::gpu(o, clcb::PTX).context("opening the GPU")?,
            Target::Emu => Device::emulator(),
        })
    }
}

/// Workload sizes: the paper's at full scale, small ones in quick mode (the emulator runs
/// every GPU lane on the host).
struct Scale {
    quick: bool,
}

impl Scale {
    fn subscriptions(&self) -> Vec<usize> {
        if self.quick {
            vec![10, 40]
        } else {
            vec![1_000, 10_000, 100_000, 250_000, 1_000_000]
        }
    }
    /// Events timed on the kernels.
    fn events(&self) -> usize {
        if self.quick {
            4
        } else {
            1000
        }
    }
    /// Events timed on a CPU peer.
    fn cpu_events(&self) -> usize {
        if self.quick {
            4
        } else {
            200
        }
    }
    fn checked(&self, n: usize) -> usize {
        if self.quick {
            n
        } else {
            n.min(CHECKED_EVENTS)
        }
    }
    fn default_subs(&self) -> usize {
        if self.quick {
            60
        } else {
            250_000
        }
    }
}

/// The x values (subscriptions) of Figs. 3-4 and `keywords` at full scale: `default`, or
/// those listed in `GPU_MATCH_CLCB_SIZES` (comma-separated, e.g. `1000000` to record
/// only the largest point on a short GPU session).
fn sizes(quick: bool, default: Vec<usize>) -> anyhow::Result<Vec<usize>> {
    let Some(v) = std::env::var_os("GPU_MATCH_CLCB_SIZES").filter(|_| !quick) else {
        return Ok(default);
    };
    let v = v.to_string_lossy();
    v.split(',')
        .map(|n| {
            n.trim()
                .parse::<usize>()
                .with_context(|| format!("GPU_MATCH_CLCB_SIZES: `{n}` is not a count"))
        })
        .collect()
}

fn workload(params: Params, seed: u64) -> (Subscriptions, Vec<Event>, Workload) {
    let w = Workload::new(params, seed);
    (w.subscriptions(), w.events(), w)
}

/// The timed events of a point: the workload's events as heap objects (the per-event
/// paths, the R*-tree and SFF peers, the oracle) and as the flat batch the generator
/// draws them into (every batched engine, CPU and GPU; the same events).
struct Timed<'a> {
    events: &'a [Event],
    batch: &'a EventBatch,
}

/// The stream the grid index and the cell index are timed on: the workload's events
/// repeated to `n`, as a flat batch.
fn stream_of(batch: &EventBatch, n: usize) -> EventBatch {
    batch.repeated(n)
}

/// Records `batch from heap events{suffix}`: the time per event to build the flat batch
/// from heap events on all cores ([`EventBatch::from_events`]), over the stream the grid
/// index is timed on: the share of parsing that the batched engines' times leave out.
fn time_batch_build(ctx: &mut Ctx, events: &[Event], x: f64, suffix: &str) -> anyhow::Result<()> {
    let n = if ctx.quick {
        events.len()
    } else {
        GRID_STREAM.max(events.len())
    };
    let heap: Vec<Event> = events.iter().cycle().take(n).cloned().collect();
    let _ = EventBatch::from_events(&heap[..n.min(1024)]);
    let t0 = Instant::now();
    let batch = EventBatch::from_events(&heap);
    let ms = t0.elapsed().as_secs_f64() * 1e3 / n.max(1) as f64;
    anyhow::ensure!(
        batch.len() == n,
        "the batch of {n} heap events holds {} events",
        batch.len()
    );
    ctx.record(&format!("batch from heap events{suffix}"), x, ms);
    Ok(())
}

/// Mean milliseconds per item of `f` over `items` (after `warm` untimed items).
fn mean_ms<T, R>(
    items: &[T],
    warm: usize,
    mut f: impl FnMut(&T) -> anyhow::Result<R>,
) -> anyhow::Result<(f64, Vec<R>)> {
    for it in items.iter().take(warm) {
        f(it)?;
    }
    let t0 = Instant::now();
    let out = items
        .iter()
        .map(&mut f)
        .collect::<anyhow::Result<Vec<R>>>()?;
    Ok((
        t0.elapsed().as_secs_f64() * 1e3 / items.len().max(1) as f64,
        out,
    ))
}

/// The oracle: the R*-tree with the content check, the events in parallel.
fn oracle(rtree: &RTreeMatcher, subs: &Subscriptions, events: &[Event]) -> Vec<Vec<u32>> {
    use rayon::prelude::*;
    events
        .par_iter()
        .map(|e| rtree.match_indices(e, subs))
        .collect()
}

fn check(
    ctx: &Ctx,
    label: &str,
    truth: &[Vec<u32>],
    name: &str,
    got: &[Vec<u32>],
) -> anyhow::Result<()> {
    // An engine may be timed on a prefix of the events (a slow CPU peer): compare the
    // events both have.
    let n = truth.len().min(got.len());
    ctx.check(label, ("rtree", &truth[..n]), (name, &got[..n]))
}

/// The least time per event (ms) of `call` over `events` events and its last answers:
/// one call untimed (the engine's buffers grow to the batch), then calls while short,
/// as the grid on all cores is timed (within [`CPU_BUDGET_S`]); one call in quick mode.
/// Timed from a single call, the paper's batched kernel read 19.2 µs an event on one
/// seed of two runs of `keywords` (1M subscriptions, 1% regions) against 9.1-13.7 µs
/// on the others (H200, 2026-11-29).
fn least_of_calls<T>(
    ctx: &Ctx,
    events: usize,
    mut call: impl FnMut() -> Result<T, clcb::engine::EngineError>,
) -> anyhow::Result<(f64, T)> {
    if !ctx.quick {
        call()?;
    }
    let (mut ms, mut spent, mut passes) = (f64::INFINITY, 0.0, 0);
    loop {
        let t0 = Instant::now();
        let got = call()?;
        let took = t0.elapsed().as_secs_f64();
        ms = ms.min(took * 1e3 / events.max(1) as f64);
        spent += took;
        passes += 1;
        if !super::another_pass(ctx.quick, true, passes, (spent, took), CPU_BUDGET_S) {
            return Ok((ms, got));
        }
    }
}

/// Times the kernels (per event and batched) on every device, checking their answers;
/// records each series with `suffix` appended (a second factor, or nothing).
#[allow(clippy::too_many_arguments)]
fn time_kernels(
    ctx: &mut Ctx,
    devices: &[(&'static str, Target)],
    subs: &Subscriptions,
    timed: &Timed,
    truth: &[Vec<u32>],
    label: &str,
    x: f64,
    suffix: &str,
) -> anyhow::Result<Vec<(String, f64)>> {
    let (events, batch) = (timed.events, timed.batch);
    let mut out = Vec::new();
    for (name, dev) in devices {
        let mut engine = Engine::new(dev.open()?, subs, Options::default())?;
        let warm = if ctx.quick { 0 } else { 10 };
        let (ms, got) = mean_ms(events, warm, |e| Ok(engine.match_indices(e, None)?))?;
        check(ctx, label, truth, name, &got)?;
        out.push((name.to_string(), ms));
        // Batched: from the flat batch, as the CPU grid is timed.
        let (batched, got) = least_of_calls(ctx, events.len(), || engine.match_event_batch(batch))?;
        check(ctx, label, truth, &format!("{name} batched"), &got)?;
        out.push((format!("{name} batched"), batched));
        // Beyond the paper: the grid index.
        engine.set_grid(true)?;
        let series = format!("{name} grid");
        let (ms, got) = mean_ms(events, warm, |e| Ok(engine.match_indices(e, None)?))?;
        check(ctx, label, truth, &series, &got)?;
        out.push((series, ms));
        // Beyond the paper: batched over the grid's candidates of each event.
        let (batched, got) = least_of_calls(ctx, events.len(), || engine.match_event_batch(batch))?;
        let series = format!("{name} grid batched");
        check(ctx, label, truth, &series, &got)?;
        out.push((series, batched));
        // Beyond the paper: the low-latency path (one launch, one synchronisation,
        // nothing copied), over the grid's candidates, then over every filter.
        engine.set_low_latency(true)?;
        for (series, grid) in [
            (format!("{name} grid latency"), true),
            (format!("{name} latency"), false),
        ] {
            engine.set_grid(grid)?;
            let (ms, got) = mean_ms(events, warm, |e| Ok(engine.match_indices(e, None)?))?;
            check(ctx, label, truth, &series, &got)?;
            out.push((series, ms));
        }
    }
    for (s, v) in &out {
        ctx.record(&format!("{s}{suffix}"), x, *v);
    }
    Ok(out)
}

/// The series of the fastest CPU matcher on all cores at each point.
pub const BEST_CPU: &str = "best CPU (all cores)";

/// A CPU engine's timing budget per point at full scale (seconds, per core count).
const CPU_BUDGET_S: f64 = 1.0;
/// Events the grid index is timed on per point at most (the workload's, repeated):
/// its runs are otherwise too short to time.
const GRID_STREAM: usize = 65_536;

/// Builds the grid index of `subs` and times it on one core and on all cores over a
/// stream of the workload's events (repeated), from the flat batch, checking its answers
/// to the first `truth.len()` events (the oracle's); records `grid{suffix}` and `grid
/// all cores{suffix}` (both from the batch: its dictionaries translated once per call,
/// then the batch read as it lies, [`GridIndex::match_view_with`]) and, beside the
/// one-core series, `grid heap events{suffix}`: one core over the same events as heap
/// objects (`Vec<Event>`, one name look-up per attribute), so that a run shows the batch
/// is not slower. Returns the all-core time per event (ms).
///
/// One core: a prefix of the stream ([`GRID_STREAM`] events) that fits
/// [`CPU_BUDGET_S`], the heap events the same count, the two forms timed by turns twice
/// each and each one's least kept (timed once each, one after the other, the first read
/// up to 28% slower in a run of Fig. 3b on an H200's host); all cores: as many as the
/// one-core rate says fit the same budget on every thread, at least the workload's
/// events, passed again while that is short ([`super::another_pass`] within
/// [`CPU_BUDGET_S`]) and the least time per event kept. Quick mode: the workload's
/// events, once.
#[allow(clippy::too_many_arguments)]
fn time_grid(
    ctx: &mut Ctx,
    subs: &Subscriptions,
    timed: &Timed,
    truth: &[Vec<u32>],
    label: &str,
    x: f64,
    suffix: &str,
) -> anyhow::Result<f64> {
    let events = timed.events;
    let grid = GridIndex::build(subs)?;
    let stream_len = if ctx.quick {
        events.len()
    } else {
        GRID_STREAM.max(events.len())
    };
    // Both forms warmed on the workload's events (the grid's cells and constraints, the
    // scratch), so that neither series pays for the first touches.
    let mut scratch = grid.scratch();
    let warm = grid.view(timed.batch);
    for (i, e) in events
        .iter()
        .enumerate()
        .take(if ctx.quick { 0 } else { events.len() })
    {
        grid.match_view_with(&warm, i, &mut scratch);
        grid.match_indices_with(e, &mut scratch);
    }
    // One core: the workload's events over and over, from the batch (its view made
    // within the timing) and as heap events, by turns (batch, heap, heap, batch: a
    // drift of the machine over the passes falls on both forms alike), each form's
    // least time per event kept. The first pass sets the count: a prefix of the stream
    // that fits the budget; the others take the same count. Quick mode: one pass each.
    let batch_pass = |limit: Option<usize>, scratch: &mut Scratch| {
        let t0 = Instant::now();
        let view = grid.view(timed.batch);
        let mut got = Vec::with_capacity(events.len());
        let mut n = 0usize;
        while n < limit.unwrap_or(stream_len) {
            let a = grid.match_view_with(&view, n % events.len(), scratch);
            if got.len() < events.len() {
                got.push(a);
            }
            n += 1;
            // The clock read every 256 events (a read per event cost ~20 ns in a VM, a
            // fifth of a small workload's time per event).
            if limit.is_none()
                && !ctx.quick
                && n >= events.len()
                && n.is_multiple_of(256)
                && t0.elapsed().as_secs_f64() > CPU_BUDGET_S
            {
                break;
            }
        }
        (t0.elapsed().as_secs_f64() * 1e3 / n.max(1) as f64, n, got)
    };
    let heap_pass = |n: usize, scratch: &mut Scratch| {
        let t0 = Instant::now();
        let mut got = Vec::with_capacity(events.len());
        for e in events.iter().cycle().take(n) {
            let a = grid.match_indices_with(e, scratch);
            if got.len() < events.len() {
                got.push(a);
            }
        }
        (t0.elapsed().as_secs_f64() * 1e3 / n.max(1) as f64, got)
    };
    let (mut one, n, got) = batch_pass(None, &mut scratch);
    let series = format!("grid{suffix}");
    check(ctx, label, truth, &series, &got)?;
    let (mut heap, got) = heap_pass(n, &mut scratch);
    let heap_series = format!("grid heap events{suffix}");
    check(ctx, label, truth, &heap_series, &got)?;
    if !ctx.quick {
        heap = heap.min(heap_pass(n, &mut scratch).0);
        one = one.min(batch_pass(Some(n), &mut scratch).0);
    }
    ctx.record(&series, x, one);
    ctx.record(&heap_series, x, heap);
    let n = if ctx.quick {
        events.len()
    } else {
        let threads = rayon::current_num_threads().max(1) as f64;
        let fits = CPU_BUDGET_S * 1e3 / one.max(1e-9) * threads;
        (fits.min(stream_len as f64) as usize).max(events.len())
    };
    let stream = stream_of(timed.batch, n);
    let _ = grid.match_batch_parallel(&stream_of(timed.batch, n.min(1024)));
    let series = format!("grid all cores{suffix}");
    // Passes while short, the least time per event (as the cell index beside it).
    let (mut all, mut spent, mut passes) = (f64::INFINITY, 0.0, 0);
    loop {
        let t0 = Instant::now();
        let got = grid.match_batch_parallel(&stream);
        let took = t0.elapsed().as_secs_f64();
        check(ctx, label, truth, &series, &got)?;
        all = all.min(took * 1e3 / n.max(1) as f64);
        spent += took;
        passes += 1;
        if !super::another_pass(ctx.quick, true, passes, (spent, took), CPU_BUDGET_S) {
            break;
        }
    }
    ctx.record(&series, x, all);
    Ok(all)
}

/// Times the cell index (`clcb::cells`) on each of `devices` over the stream the grid
/// index is timed on (the workload's events repeated to [`GRID_STREAM`]; quick mode:
/// the workload's), from the flat batch, the stream matched first untimed into the same
/// flat answers ([`CellAnswers`], whose memory a stream reuses), then timed by passes as
/// the grid on all cores (the least time per event); checks its answers to the first
/// `truth.len()` events and records `{prefix} batched{suffix}`: end to end per event (the batch's dictionaries translated and uploaded once, each launch's columns
/// copied on all cores into page-locked staging and to the device, encoded and matched
/// there, the answers left where the device wrote them, in the answers' page-locked
/// areas). The CPU grid's answers are a vector per event: their allocation and copy
/// are a few per cent of its time per event.
#[allow(clippy::too_many_arguments)]
fn time_cells(
    ctx: &mut Ctx,
    devices: &[(&'static str, Target)],
    subs: &Subscriptions,
    timed: &Timed,
    truth: &[Vec<u32>],
    label: &str,
    x: f64,
    suffix: &str,
) -> anyhow::Result<()> {
    for (prefix, target) in devices {
        let dev = target.open()?;
        let mut opts = CellOptions::for_device(&dev);
        // An A/B of the launch size (`GPU_MATCH_CELLS_LAUNCH=events`, for tuning).
        if let Some(n) = std::env::var("GPU_MATCH_CELLS_LAUNCH")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
        {
            opts.batch_events = n.max(1);
        }
        let mut index = CellIndex::new(dev, subs, opts)?;
        // The device's clock only when the split is asked for (two marks per launch).
        index.set_device_clock(std::env::var_os("GPU_MATCH_INDEX_SPLIT").is_some());
        let events = timed.events;
        let n = if ctx.quick {
            events.len()
        } else {
            GRID_STREAM.max(events.len())
        };
        let stream = stream_of(timed.batch, n);
        let mut answers = CellAnswers::default();
        if !ctx.quick {
            // The page-locked stages grow to a launch's size, the answers to the stream's.
            index.match_event_batch_into(&stream, &mut answers)?;
        }
        index.take_timing();
        // Timed as a new batch's call: its dictionaries translated and uploaded, as the
        // CPU grid looks its names up in every call (the warm call left them on the
        // device). Passes while short, the least time per event, as the grid on all
        // cores (a call over 65,536 events takes well under a millisecond: one call's
        // hiccup moved Table 2's ratio between 8.9x and 10.5x).
        let (mut ms, mut spent, mut passes) = (f64::INFINITY, 0.0, 0);
        loop {
            index.forget_dictionaries();
            let t0 = Instant::now();
            index.match_event_batch_into(&stream, &mut answers)?;
            let took = t0.elapsed().as_secs_f64();
            anyhow::ensure!(
                answers.len() == n,
                "{label}: the cell index answered {} of {n} events",
                answers.len()
            );
            ms = ms.min(took * 1e3 / n.max(1) as f64);
            spent += took;
            passes += 1;
            if !super::another_pass(ctx.quick, true, passes, (spent, took), CPU_BUDGET_S) {
                break;
            }
        }
        let got: Vec<Vec<u32>> = (0..truth.len().min(n))
            .map(|i| answers.get(i).to_vec())
            .collect();
        // The time split, for tuning (GPU_MATCH_INDEX_SPLIT=1, as for CCM's index).
        let split = index.take_timing();
        if std::env::var_os("GPU_MATCH_INDEX_SPLIT").is_some() {
            let us = |d: std::time::Duration| d.as_secs_f64() * 1e6 / split.events.max(1) as f64;
            eprintln!(
                "cells split {label}{suffix}: dictionaries {:.3} stage {:.3} submit {:.3} answers {:.3} waited {:.3} device {:.3} us/event \
                 ({} events, {} launches, {:.2} pairs/event)",
                us(split.dictionaries),
                us(split.stage),
                us(split.submit),
                us(split.answers),
                us(split.waited),
                us(split.device),
                split.events,
                split.launches,
                split.pairs as f64 / split.events.max(1) as f64,
            );
        }
        let series = format!("{prefix} batched");
        check(ctx, label, truth, &series, &got)?;
        ctx.record(&format!("{series}{suffix}"), x, ms);
    }
    Ok(())
}

/// The cell index's area moves: the time per move (ms), the moves made one by one on
/// the host and the device brought up to date once at the end (one copy per table, one
/// launch).
fn cells_moves_ms(index: &mut CellIndex, ups: &[AreaUpdate]) -> anyhow::Result<f64> {
    let t0 = Instant::now();
    for u in ups {
        index.move_area(u)?;
    }
    index.synchronize()?;
    Ok(t0.elapsed().as_secs_f64() * 1e3 / ups.len().max(1) as f64)
}

/// The R*-tree with the content check on all cores over `events`, checked; records
/// `rtree all cores{suffix}` and returns its time per event (ms).
fn time_rtree_all(
    ctx: &mut Ctx,
    (rtree, subs): (&RTreeMatcher, &Subscriptions),
    events: &[Event],
    truth: &[Vec<u32>],
    (label, x, suffix): (&str, f64, &str),
) -> anyhow::Result<f64> {
    let t0 = Instant::now();
    let got = oracle(rtree, subs, events);
    let all = t0.elapsed().as_secs_f64() * 1e3 / events.len().max(1) as f64;
    let series = format!("rtree all cores{suffix}");
    check(ctx, label, truth, &series, &got)?;
    ctx.record(&series, x, all);
    Ok(all)
}

// ---------------------------------------------------------------------------------
// Table 2.

fn table2(ctx: &mut Ctx) -> anyhow::Result<()> {
    let engines = Engines::of(ctx);
    let devices = engines.devices();
    let s = Scale { quick: ctx.quick };
    let seeds = ctx.seeds.clone();
    ctx.set_steps(seeds.len() as u64 * 5);
    for &seed in &seeds {
        ctx.step(&format!("table2 seed {seed}: generating"));
        let params = Params {
            subscriptions: s.default_subs(),
            events: s.events(),
            ..Params::default()
        };
        let (subs, events, w) = workload(params, seed);
        let batch = w.event_batch();
        let timed = Timed {
            events: &events,
            batch: &batch,
        };
        let label = format!("table2 seed {seed}");
        let mut rtree = RTreeMatcher::build(&subs);
        let cpu_events = &events[..s.cpu_events().min(events.len())];
        let truth = oracle(&rtree, &subs, &events[..s.checked(events.len())]);
        ctx.step(&format!("table2 seed {seed}: sff"));
        if engines.sff {
            // Both SFFs read the flat batch in place, as the grid does.
            let sff = content_sff(&subs)?;
            let mut scratch = sff.scratch();
            let names = sff.batch_names(batch.content());
            let at: Vec<usize> = (0..cpu_events.len()).collect();
            let (ms, _) = mean_ms(&at, 0, |&i| {
                Ok(sff.match_in_batch_with(batch.content(), &names, i, &mut scratch))
            })?;
            ctx.record("sff", 1.0, ms);
            let sffl = SffLocation::build(&subs);
            let mut scratch = sffl.scratch();
            let names = sffl.batch_names(&batch);
            let few = &at[..at.len().min(if ctx.quick { 6 } else { 50 })];
            let (ms, got) = mean_ms(few, 0, |&i| {
                Ok(sffl.match_in_batch_with(&batch, &names, i, &mut scratch))
            })?;
            check(ctx, &label, &truth, "sff", &got)?;
            ctx.record("sff", 2.0, ms);
            // SFF has no update: one area move costs a rebuild of the whole index.
            let mut model = subs.clone();
            let mut sffl = sffl;
            let u = w.updates(1, subs.filter_count());
            let t0 = Instant::now();
            sffl.move_area(&u[0], &mut model)?;
            ctx.record("sff", 3.0, t0.elapsed().as_secs_f64() * 1e3);
        }
        ctx.step(&format!("table2 seed {seed}: rtree"));
        let (mut best, mut best_move) = (f64::INFINITY, f64::INFINITY);
        let ups = w.updates(if ctx.quick { 20 } else { 1000 }, subs.filter_count());
        if engines.rtree {
            let (ms, got) = mean_ms(cpu_events, 0, |e| Ok(rtree.match_indices(e, &subs)))?;
            check(ctx, &label, &truth, "rtree", &got)?;
            ctx.record("rtree", 2.0, ms);
            let checked = &events[..truth.len()];
            best = time_rtree_all(ctx, (&rtree, &subs), checked, &truth, (&label, 2.0, ""))?;
            let (ms, _) = mean_ms(&ups, 0, |u| Ok(rtree.move_area(u)?))?;
            ctx.record("rtree", 3.0, ms);
            best_move = ms;
        }
        if engines.grid {
            ctx.step(&format!("table2 seed {seed}: grid"));
            best = best.min(time_grid(ctx, &subs, &timed, &truth, &label, 2.0, "")?);
            // Row 3: the grid's area moves, then its answers after them.
            let mut grid = GridIndex::build(&subs)?;
            let (ms, _) = mean_ms(&ups, 0, |u| Ok(grid.move_area(u)?))?;
            ctx.record("grid", 3.0, ms);
            best_move = best_move.min(ms);
            let mut model = subs.clone();
            for u in &ups {
                model.apply(u)?;
            }
            let few = &events[..truth.len().min(if ctx.quick { 4 } else { 20 })];
            let moved = RTreeMatcher::build(&model);
            let want = oracle(&moved, &model, few);
            let got = grid.match_parallel(few);
            check(ctx, &label, &want, "grid", &got)?;
        }
        if best.is_finite() {
            ctx.record(BEST_CPU, 2.0, best);
        }
        if best_move.is_finite() {
            ctx.record(BEST_CPU, 3.0, best_move);
        }
        ctx.step(&format!("table2 seed {seed}: kernels"));
        time_batch_build(ctx, &events, 2.0, "")?;
        time_kernels(ctx, &devices, &subs, &timed, &truth, &label, 2.0, "")?;
        time_cells(ctx, &engines.cells, &subs, &timed, &truth, &label, 2.0, "")?;
        if !engines.cells.is_empty() {
            // Row 3: the cell index's area moves, then its answers after them.
            let mut model = subs.clone();
            for u in &ups {
                model.apply(u)?;
            }
            let few = &events[..truth.len().min(if ctx.quick { 4 } else { 20 })];
            let moved = RTreeMatcher::build(&model);
            let want = oracle(&moved, &model, few);
            for (prefix, target) in &engines.cells {
                let dev = target.open()?;
                let opts = CellOptions::for_device(&dev);
                let mut index = CellIndex::new(dev, &subs, opts)?;
                let ms = cells_moves_ms(&mut index, &ups)?;
                ctx.record(prefix, 3.0, ms);
                check(ctx, &label, &want, prefix, &index.match_batch(few)?)?;
            }
        }
        for (name, dev) in &devices {
            let mut engine = Engine::new(dev.open()?, &subs, Options::default())?;
            let ups = w.updates(if ctx.quick { 20 } else { 1000 }, subs.filter_count());
            let (ms, _) = mean_ms(&ups, 0, |u| Ok(engine.move_area(u)?))?;
            engine.synchronize()?;
            ctx.record(name, 3.0, ms);
            let (ms, _) = mean_ms(&ups, 0, |u| Ok(engine.move_area_by_copies(u)?))?;
            engine.synchronize()?;
            ctx.record(&format!("{name} copies"), 3.0, ms);
            // Beyond the paper: low-latency mode, position and squared radius side by
            // side, one 16-byte copy per update; then its answers are checked.
            engine.set_low_latency(true)?;
            let (ms, _) = mean_ms(&ups, 0, |u| Ok(engine.move_area(u)?))?;
            engine.synchronize()?;
            let series = format!("{name} latency");
            ctx.record(&series, 3.0, ms);
            let mut model = subs.clone();
            for u in &ups {
                model.apply(u)?;
            }
            let few = &events[..s.checked(events.len()).min(if ctx.quick { 4 } else { 20 })];
            let moved = RTreeMatcher::build(&model);
            let truth = oracle(&moved, &model, few);
            let got: Vec<Vec<u32>> = few
                .iter()
                .map(|e| engine.match_indices(e, None))
                .collect::<Result<_, _>>()?;
            check(ctx, &label, &truth, &series, &got)?;
        }
        for (name, dev) in &devices {
            for grid in [false, true] {
                let data = (&subs, &events[..], &truth[..]);
                persistent_table2(ctx, name, *dev, grid, &w, data, &label)?;
            }
        }
    }
    Ok(())
}

/// Table 2, beyond the paper: the persistent mode (`gpu persistent`, and over the grid
/// index `gpu grid persistent`). Row 2: time per event with location, one at a time
/// (end to end: encode, submit to the ring, answer read); row 3: time per area update
/// through the ring, including the wait until the kernel applied the last one. Answers
/// checked against the oracle before and after the updates.
fn persistent_table2(
    ctx: &mut Ctx,
    name: &str,
    dev: Target,
    grid: bool,
    w: &Workload,
    (subs, events, truth): (&Subscriptions, &[Event], &[Vec<u32>]),
    label: &str,
) -> anyhow::Result<()> {
    let series = format!("{name}{} persistent", if grid { " grid" } else { "" });
    let mut engine = Engine::new(dev.open()?, subs, Options::default())?;
    engine.set_grid(grid)?;
    engine.set_persistent(true)?;
    let warm = if ctx.quick { 0 } else { 10 };
    let (ms, got) = mean_ms(events, warm, |e| Ok(engine.match_indices(e, None)?))?;
    check(ctx, label, truth, &series, &got)?;
    ctx.record(&series, 2.0, ms);
    let ups = w.updates(if ctx.quick { 20 } else { 1000 }, subs.filter_count());
    let t0 = Instant::now();
    for u in &ups {
        engine.move_area(u)?;
    }
    engine.synchronize()?;
    ctx.record(
        &series,
        3.0,
        t0.elapsed().as_secs_f64() * 1e3 / ups.len().max(1) as f64,
    );
    let mut model = subs.clone();
    for u in &ups {
        model.apply(u)?;
    }
    let few = &events[..truth.len().min(if ctx.quick { 4 } else { 20 })];
    let moved = RTreeMatcher::build(&model);
    let want = oracle(&moved, &model, few);
    let got: Vec<Vec<u32>> = few
        .iter()
        .map(|e| engine.match_indices(e, None))
        .collect::<Result<_, _>>()?;
    check(ctx, label, &want, &series, &got)
}

// ---------------------------------------------------------------------------------
// Beyond the paper: latency distributions and the persistent kernel under load.

/// Events of the latency experiments: 100k at full size (fewer on the emulator).
fn latency_events(quick: bool) -> usize {
    if quick {
        40
    } else {
        100_000
    }
}

/// The `q`-th percentile (nearest rank) of ascending `sorted`.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A latency experiment's workload: subscriptions, events, the oracle's answers to the
/// first events, and the label naming it in mismatch reports.
type LatencyWorkload = (Subscriptions, Vec<Event>, Vec<Vec<u32>>, String);

/// The default scenario with [`latency_events`] events, and the oracle's answers to the
/// first [`CHECKED_EVENTS`] (all of them in quick mode).
fn latency_workload(ctx: &mut Ctx, seed: u64) -> anyhow::Result<LatencyWorkload> {
    let s = Scale { quick: ctx.quick };
    let params = Params {
        subscriptions: s.default_subs(),
        events: latency_events(ctx.quick),
        ..Params::default()
    };
    let (subs, events, _) = workload(params, seed);
    let label = format!("seed {seed}");
    let rtree = RTreeMatcher::build(&subs);
    let truth = oracle(&rtree, &subs, &events[..s.checked(events.len())]);
    Ok((subs, events, truth, label))
}

/// Per-event end-to-end latency (µs) of 100k events, one at a time, for the paper's
/// pipeline, the one-launch mapped path and the persistent kernel, recorded as p50, p99
/// and p99.9; each path's answers checked against the oracle (first events) and the
/// paper's pipeline (every event).
fn latency(ctx: &mut Ctx) -> anyhow::Result<()> {
    let engines = Engines::of(ctx);
    let devices = engines.devices();
    ctx.set_steps((ctx.seeds.len() * 2) as u64);
    for seed in ctx.seeds.clone() {
        ctx.step(&format!("latency seed {seed}: generating"));
        let (subs, events, truth, label) = latency_workload(ctx, seed)?;
        ctx.step(&format!("latency seed {seed}: kernels"));
        for (name, dev) in &devices {
            let mut reference: Option<Vec<Vec<u32>>> = None;
            let paths = [
                ("", 0),
                (" latency", 1),
                (" persistent", 2),
                (" grid persistent", 3),
            ];
            for (suffix, mode) in paths {
                let series = format!("{name}{suffix}");
                let mut engine = Engine::new(dev.open()?, &subs, Options::default())?;
                match mode {
                    1 => engine.set_low_latency(true)?,
                    2 => engine.set_persistent(true)?,
                    3 => {
                        engine.set_grid(true)?;
                        engine.set_persistent(true)?;
                    }
                    _ => {}
                }
                let warm = if ctx.quick { 0 } else { 100 };
                for e in events.iter().take(warm) {
                    engine.match_indices(e, None)?;
                }
                let mut lat = Vec::with_capacity(events.len());
                let got = if mode >= 2 {
                    engine.match_pipelined(&events, 1, Some(&mut lat))?
                } else {
                    let mut got = Vec::with_capacity(events.len());
                    for e in &events {
                        let t0 = Instant::now();
                        got.push(engine.match_indices(e, None)?);
                        lat.push(t0.elapsed().as_secs_f64() * 1e6);
                    }
                    got
                };
                check(ctx, &label, &truth, &series, &got)?;
                match &reference {
                    None => reference = Some(got),
                    Some(r) => ctx.check(&label, (name, r), (&series, &got))?,
                }
                lat.sort_by(f64::total_cmp);
                for q in [50.0, 99.0, 99.9] {
                    ctx.record(&series, q, percentile(&lat, q));
                }
            }
        }
    }
    Ok(())
}

/// The persistent kernel with 1 to 32 events in flight: events/s and p99 end-to-end
/// latency (µs) over 100k events; answers checked against the paper's pipeline on every
/// event (and it against the oracle on the first events).
fn inflight(ctx: &mut Ctx) -> anyhow::Result<()> {
    let engines = Engines::of(ctx);
    let devices = engines.devices();
    ctx.set_steps((ctx.seeds.len() * 2) as u64);
    for seed in ctx.seeds.clone() {
        ctx.step(&format!("inflight seed {seed}: generating"));
        let (subs, events, truth, label) = latency_workload(ctx, seed)?;
        ctx.step(&format!("inflight seed {seed}: kernels"));
        for (name, dev) in &devices {
            let mut engine = Engine::new(dev.open()?, &subs, Options::default())?;
            let reference = events
                .iter()
                .map(|e| engine.match_indices(e, None))
                .collect::<Result<Vec<_>, _>>()?;
            check(ctx, &label, &truth, name, &reference)?;
            engine.set_persistent_slots(32);
            engine.set_persistent(true)?;
            for grid in [false, true] {
                engine.set_grid(grid)?;
                let warm = if ctx.quick { 0 } else { 100 };
                engine.match_pipelined(&events[..warm.min(events.len())], 32, None)?;
                let series = format!("{name}{} persistent", if grid { " grid" } else { "" });
                for depth in [1usize, 2, 4, 8, 16, 32] {
                    let mut lat = Vec::with_capacity(events.len());
                    let t0 = Instant::now();
                    let got = engine.match_pipelined(&events, depth, Some(&mut lat))?;
                    let secs = t0.elapsed().as_secs_f64();
                    ctx.check(
                        &format!("{label}, {depth} in flight"),
                        (name, &reference),
                        (&series, &got),
                    )?;
                    lat.sort_by(f64::total_cmp);
                    let x = depth as f64;
                    ctx.record(
                        &format!("{series} events/s"),
                        x,
                        events.len() as f64 / secs.max(1e-9),
                    );
                    ctx.record(&format!("{series} p99 us"), x, percentile(&lat, 99.0));
                }
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// Figs. 3 and 4: matching time vs subscriptions, per area coverage.

fn matching_sweep(
    ctx: &mut Ctx,
    id: &str,
    spatial: Spatial,
    area_percent: f64,
) -> anyhow::Result<()> {
    let engines = Engines::of(ctx);
    let devices = engines.devices();
    let s = Scale { quick: ctx.quick };
    let seeds = ctx.seeds.clone();
    let xs = sizes(ctx.quick, s.subscriptions())?;
    ctx.set_steps((seeds.len() * xs.len()) as u64);
    for &seed in &seeds {
        for &n in &xs {
            ctx.step(&format!("{id} seed {seed} subscriptions {n}"));
            let params = Params {
                subscriptions: n,
                events: s.events(),
                spatial,
                area_percent,
                ..Params::default()
            };
            let (subs, events, w) = workload(params, seed);
            let batch = w.event_batch();
            let timed = Timed {
                events: &events,
                batch: &batch,
            };
            let label = format!("{id} seed {seed} subscriptions {n}");
            let rtree = RTreeMatcher::build(&subs);
            let truth = oracle(&rtree, &subs, &events[..s.checked(events.len())]);
            if engines.rtree {
                // The paper's R-Tree series: location only.
                let cpu_events = &events[..s.cpu_events().min(events.len())];
                let (ms, _) = mean_ms(cpu_events, 0, |e| Ok(rtree.locate_indices(e.loc)))?;
                ctx.record("rtree", n as f64, ms);
            }
            if engines.grid {
                let all = time_grid(ctx, &subs, &timed, &truth, &label, n as f64, "")?;
                ctx.record(BEST_CPU, n as f64, all);
            }
            let x = n as f64;
            time_batch_build(ctx, &events, x, "")?;
            time_kernels(ctx, &devices, &subs, &timed, &truth, &label, x, "")?;
            time_cells(ctx, &engines.cells, &subs, &timed, &truth, &label, x, "")?;
        }
    }
    Ok(())
}

const ZIPF: Spatial = Spatial::Zipf { s: 1.0 };

fn fig3a(ctx: &mut Ctx) -> anyhow::Result<()> {
    matching_sweep(ctx, "fig3a", Spatial::Uniform, 0.001)
}
fn fig3b(ctx: &mut Ctx) -> anyhow::Result<()> {
    matching_sweep(ctx, "fig3b", Spatial::Uniform, 0.01)
}
fn fig3c(ctx: &mut Ctx) -> anyhow::Result<()> {
    matching_sweep(ctx, "fig3c", Spatial::Uniform, 0.1)
}
fn fig3d(ctx: &mut Ctx) -> anyhow::Result<()> {
    matching_sweep(ctx, "fig3d", Spatial::Uniform, 1.0)
}
fn fig4a(ctx: &mut Ctx) -> anyhow::Result<()> {
    matching_sweep(ctx, "fig4a", ZIPF, 0.001)
}
fn fig4b(ctx: &mut Ctx) -> anyhow::Result<()> {
    matching_sweep(ctx, "fig4b", ZIPF, 0.01)
}
fn fig4c(ctx: &mut Ctx) -> anyhow::Result<()> {
    matching_sweep(ctx, "fig4c", ZIPF, 0.1)
}
fn fig4d(ctx: &mut Ctx) -> anyhow::Result<()> {
    matching_sweep(ctx, "fig4d", ZIPF, 1.0)
}

// ---------------------------------------------------------------------------------
// Fig. 5: area updates.

fn update_sweep(ctx: &mut Ctx, id: &str, spatial: Spatial) -> anyhow::Result<()> {
    let engines = Engines::of(ctx);
    let devices = engines.devices();
    let s = Scale { quick: ctx.quick };
    let seeds = ctx.seeds.clone();
    let xs = s.subscriptions();
    ctx.set_steps((seeds.len() * xs.len()) as u64);
    let n_updates = if ctx.quick { 20 } else { 1000 };
    for &seed in &seeds {
        for &n in &xs {
            ctx.step(&format!("{id} seed {seed} subscriptions {n}"));
            let events = if ctx.quick { 3 } else { 20 };
            let params = Params {
                subscriptions: n,
                events,
                spatial,
                ..Params::default()
            };
            let (mut subs, events, w) = workload(params, seed);
            let ups = w.updates(n_updates, subs.filter_count());
            let label = format!("{id} seed {seed} subscriptions {n}");
            // Engines are built before the moves, so that the checks below see the moves.
            let mut rtree = RTreeMatcher::build(&subs);
            let mut kernels = Vec::new();
            for (name, dev) in &devices {
                kernels.push((*name, Engine::new(dev.open()?, &subs, Options::default())?));
            }
            let mut cells = Vec::new();
            for (prefix, target) in &engines.cells {
                let dev = target.open()?;
                let opts = CellOptions::for_device(&dev);
                cells.push((*prefix, CellIndex::new(dev, &subs, opts)?));
            }
            let mut grid = if engines.grid {
                Some(GridIndex::build(&subs)?)
            } else {
                None
            };
            let (ms, _) = mean_ms(&ups, 0, |u| Ok(rtree.move_area(u)?))?;
            let mut best = f64::INFINITY;
            if engines.rtree {
                ctx.record("rtree", n as f64, ms * 1e3);
                best = ms * 1e3;
            }
            for u in &ups {
                subs.apply(u)?;
            }
            let truth = oracle(&rtree, &subs, &events);
            if let Some(grid) = &mut grid {
                let (ms, _) = mean_ms(&ups, 0, |u| Ok(grid.move_area(u)?))?;
                ctx.record("grid", n as f64, ms * 1e3);
                best = best.min(ms * 1e3);
                check(ctx, &label, &truth, "grid", &grid.match_parallel(&events))?;
            }
            if best.is_finite() {
                ctx.record(BEST_CPU, n as f64, best);
            }
            for (prefix, index) in &mut cells {
                let ms = cells_moves_ms(index, &ups)?;
                ctx.record(prefix, n as f64, ms * 1e3);
                check(ctx, &label, &truth, prefix, &index.match_batch(&events)?)?;
            }
            for (name, engine) in &mut kernels {
                let name: &str = name;
                let per_update_us =
                    |t0: Instant| t0.elapsed().as_secs_f64() * 1e6 / ups.len() as f64;
                // One update at a time, carried by a launch's arguments (no copy, no wait).
                let t0 = Instant::now();
                for u in &ups {
                    engine.move_area(u)?;
                }
                engine.synchronize()?;
                ctx.record(name, n as f64, per_update_us(t0));
                let got: Vec<Vec<u32>> = events
                    .iter()
                    .map(|e| engine.match_indices(e, None))
                    .collect::<Result<_, _>>()?;
                check(ctx, &label, &truth, name, &got)?;
                // One update at a time as the paper: two copies (position, squared radius).
                let t0 = Instant::now();
                for u in &ups {
                    engine.move_area_by_copies(u)?;
                }
                engine.synchronize()?;
                let series = format!("{name} copies");
                ctx.record(&series, n as f64, per_update_us(t0));
                let got: Vec<Vec<u32>> = events
                    .iter()
                    .map(|e| engine.match_indices(e, None))
                    .collect::<Result<_, _>>()?;
                check(ctx, &label, &truth, &series, &got)?;
                // Beyond the paper: low-latency mode, one 16-byte copy per update (position
                // and squared radius side by side), its answers on the low-latency path.
                engine.set_low_latency(true)?;
                let t0 = Instant::now();
                for u in &ups {
                    engine.move_area(u)?;
                }
                engine.synchronize()?;
                let series = format!("{name} latency");
                ctx.record(&series, n as f64, per_update_us(t0));
                let got: Vec<Vec<u32>> = events
                    .iter()
                    .map(|e| engine.match_indices(e, None))
                    .collect::<Result<_, _>>()?;
                check(ctx, &label, &truth, &series, &got)?;
                engine.set_low_latency(false)?;
                // All updates in one copy and one launch (once untimed: buffer allocation).
                engine.move_areas(&ups)?;
                engine.synchronize()?;
                let t0 = Instant::now();
                engine.move_areas(&ups)?;
                engine.synchronize()?;
                let series = format!("{name} batched");
                ctx.record(&series, n as f64, per_update_us(t0));
                let got: Vec<Vec<u32>> = events
                    .iter()
                    .map(|e| engine.match_indices(e, None))
                    .collect::<Result<_, _>>()?;
                check(ctx, &label, &truth, &series, &got)?;
            }
        }
    }
    Ok(())
}

fn fig5a(ctx: &mut Ctx) -> anyhow::Result<()> {
    update_sweep(ctx, "fig5a", Spatial::Uniform)
}
fn fig5b(ctx: &mut Ctx) -> anyhow::Result<()> {
    update_sweep(ctx, "fig5b", ZIPF)
}

// ---------------------------------------------------------------------------------
// Fig. 6: time per step.

fn steps_sweep(ctx: &mut Ctx, id: &str, params: Params) -> anyhow::Result<()> {
    let engines = Engines::of(ctx);
    let devices = engines.devices();
    let s = Scale { quick: ctx.quick };
    let seeds = ctx.seeds.clone();
    let xs = s.subscriptions();
    ctx.set_steps((seeds.len() * xs.len()) as u64);
    for &seed in &seeds {
        for &n in &xs {
            ctx.step(&format!("{id} seed {seed} subscriptions {n}"));
            let p = Params {
                subscriptions: n,
                events: if ctx.quick { 4 } else { 200 },
                ..params.clone()
            };
            let (subs, events, _) = workload(p, seed);
            let label = format!("{id} seed {seed} subscriptions {n}");
            let rtree = RTreeMatcher::build(&subs);
            let truth = oracle(&rtree, &subs, &events[..s.checked(events.len())]);
            for (name, dev) in &devices {
                let mut engine = Engine::new(dev.open()?, &subs, Options::default())?;
                let mut sum = StepTimes::default();
                let mut got = Vec::with_capacity(events.len());
                for e in &events {
                    let mut t = StepTimes::default();
                    got.push(engine.match_indices(e, Some(&mut t))?);
                    sum.copy_in += t.copy_in;
                    sum.loc += t.loc;
                    sum.cont += t.cont;
                    sum.zip += t.zip;
                    sum.copy_out += t.copy_out;
                }
                check(ctx, &label, &truth, name, &got)?;
                let k = events.len().max(1) as f64;
                let prefix = if *name == "gpu" {
                    String::new()
                } else {
                    format!("{name} ")
                };
                for (step, v) in [
                    ("copy in", sum.copy_in),
                    ("Loc", sum.loc),
                    ("Cont", sum.cont),
                    ("Zip", sum.zip),
                    ("copy out", sum.copy_out),
                    ("total", sum.total()),
                ] {
                    ctx.record(&format!("{prefix}{step}"), n as f64, v / k);
                }
                // Beyond the paper: the low-latency path's one kernel (no copies, no
                // other step), for comparison with Loc + Cont + Zip.
                engine.set_low_latency(true)?;
                let mut kernel = 0.0;
                let mut got = Vec::with_capacity(events.len());
                for e in &events {
                    let mut t = StepTimes::default();
                    got.push(engine.match_indices(e, Some(&mut t))?);
                    kernel += t.total();
                }
                let series = format!("{prefix}latency kernel");
                check(ctx, &label, &truth, &series, &got)?;
                ctx.record(&series, n as f64, kernel / k);
            }
        }
    }
    Ok(())
}

fn fig6a(ctx: &mut Ctx) -> anyhow::Result<()> {
    steps_sweep(ctx, "fig6a", Params::default())
}
fn fig6b(ctx: &mut Ctx) -> anyhow::Result<()> {
    steps_sweep(ctx, "fig6b", Params::all_match())
}

// ---------------------------------------------------------------------------------
// Beyond the paper: the keyword workload of spatio-textual publish-subscribe.

/// The `keywords` experiment: every CPU engine on one core and on all cores (the
/// R*-tree with the content check, SFF with location constraints, the grid index) and
/// every kernel series, on [`clcb::keywords`] workloads of 100k and 1M subscriptions
/// with regions of 0.01 % and 1 % of the space (series suffixed `A=0.01%`, `A=1%`), the
/// regions circles, then rectangles of the same area and an aspect ratio log-uniform in
/// `[1/4, 4]` (series suffixed `rect A=0.01%`, `rect A=1%`; FAST's range queries);
/// answers checked against the R*-tree oracle.
fn keywords(ctx: &mut Ctx) -> anyhow::Result<()> {
    let engines = Engines::of(ctx);
    let devices = engines.devices();
    let s = Scale { quick: ctx.quick };
    let seeds = ctx.seeds.clone();
    let xs: Vec<usize> = if ctx.quick {
        vec![100, 400]
    } else {
        sizes(false, vec![100_000, 1_000_000])?
    };
    let areas = [0.01, 1.0];
    let regions = [
        ("", Region::Circle),
        (" rect", Region::Rect { max_aspect: 4.0 }),
    ];
    ctx.set_steps((seeds.len() * xs.len() * areas.len() * regions.len()) as u64);
    for &seed in &seeds {
        for ((shape, region), area_percent) in
            regions.into_iter().flat_map(|r| areas.map(|a| (r, a)))
        {
            let w = KeywordWorkload::new(
                KeywordParams {
                    subscriptions: xs.iter().copied().max().unwrap_or(0),
                    events: s.events(),
                    area_percent,
                    region,
                    ..KeywordParams::default()
                },
                seed,
            );
            let all_subs = w.subscriptions();
            let events = w.events();
            let batch = w.event_batch();
            let timed = Timed {
                events: &events,
                batch: &batch,
            };
            let suffix = format!("{shape} A={area_percent}%");
            for &n in &xs {
                let label =
                    format!("keywords seed {seed}{shape} area {area_percent}% subscriptions {n}");
                ctx.step(&label);
                let subs = all_subs.prefix(n);
                let x = n as f64;
                let rtree = RTreeMatcher::build(&subs);
                let truth = oracle(&rtree, &subs, &events[..s.checked(events.len())]);
                let checked = &events[..truth.len()];
                let cpu_events = &events[..s.cpu_events().min(events.len())];
                let mut best = f64::INFINITY;
                if engines.rtree {
                    let (ms, got) = mean_ms(cpu_events, 0, |e| Ok(rtree.match_indices(e, &subs)))?;
                    check(ctx, &label, &truth, "rtree", &got)?;
                    ctx.record(&format!("rtree{suffix}"), x, ms);
                    let all = time_rtree_all(
                        ctx,
                        (&rtree, &subs),
                        checked,
                        &truth,
                        (&label, x, &suffix),
                    )?;
                    best = best.min(all);
                }
                if engines.sff {
                    let sff = SffLocation::build(&subs);
                    let mut scratch = sff.scratch();
                    let few = &events[..cpu_events.len().min(if ctx.quick { 4 } else { 20 })];
                    let (ms, got) =
                        mean_ms(few, 0, |e| Ok(sff.match_indices_with(e, &mut scratch)))?;
                    check(ctx, &label, &truth, "sff", &got)?;
                    ctx.record(&format!("sff{suffix}"), x, ms);
                    let t0 = Instant::now();
                    let got = baselines::matcher::per_thread(
                        checked,
                        || sff.scratch(),
                        |e, s| sff.match_indices_with(e, s),
                    );
                    let all = t0.elapsed().as_secs_f64() * 1e3 / checked.len().max(1) as f64;
                    check(ctx, &label, &truth, "sff all cores", &got)?;
                    ctx.record(&format!("sff all cores{suffix}"), x, all);
                    best = best.min(all);
                }
                if engines.grid {
                    best = best.min(time_grid(ctx, &subs, &timed, &truth, &label, x, &suffix)?);
                }
                if best.is_finite() {
                    ctx.record(&format!("{BEST_CPU}{suffix}"), x, best);
                }
                time_batch_build(ctx, &events, x, &suffix)?;
                time_kernels(ctx, &devices, &subs, &timed, &truth, &label, x, &suffix)?;
                time_cells(
                    ctx,
                    &engines.cells,
                    &subs,
                    &timed,
                    &truth,
                    &label,
                    x,
                    &suffix,
                )?;
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// Fig. 7: memory.

fn fig7(ctx: &mut Ctx) -> anyhow::Result<()> {
    let engines = Engines::of(ctx);
    let devices = engines.devices();
    // Memory depends on the sizes, hardly on the seed: one seed is enough at full scale.
    let seeds: Vec<u64> = if ctx.quick {
        ctx.seeds.clone()
    } else {
        ctx.seeds.iter().take(1).copied().collect()
    };
    let xs: Vec<usize> = if ctx.quick {
        vec![1_000, 4_000]
    } else {
        vec![100_000, 250_000, 500_000, 1_000_000, 1_300_000]
    };
    ctx.set_steps((seeds.len() * xs.len()) as u64);
    for &seed in &seeds {
        for &n in &xs {
            ctx.step(&format!("fig7 seed {seed} subscriptions {n}"));
            let (subs, _, _) = workload(
                Params {
                    subscriptions: n,
                    events: 0,
                    ..Params::default()
                },
                seed,
            );
            let filters = subs.filter_count() as f64 / 1e6;
            for (name, dev) in &devices {
                // Device memory is accounted the same way on the emulator.
                let engine = Engine::new(dev.open()?, &subs, Options::default())?;
                ctx.record(name, filters, engine.device_bytes() as f64 / 1e6);
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// Many GPUs (beyond the paper).

/// `scaling` (beyond the paper, which uses one GPU): the matcher with the subscriptions
/// cut over the first 1, 2, 4, 8 GPUs ([`clcb::multi::MultiEngine`]), batched (the
/// fastest GPU paths of `table2` and Figs. 3-4: the paper's pipeline and the grid index,
/// each over batches of events), at Fig. 3a's largest workload (1M subscriptions,
/// uniform, 0.001% areas) and at 4M. Series (see `papers::scaling`): `gpu multi
/// subs=<n> events/s` and `gpu multi grid subs=<n> events/s` with their `speedup` over
/// one GPU, and the one-GPU engine's `gpu batched subs=<n> events/s` and `gpu grid
/// batched subs=<n> events/s` at x = 1. The answers to the workload's events are
/// checked against the one-GPU engine's, whose answers are checked against the
/// R*-tree's on the first events; the stream's answer totals are checked too.
fn scaling(ctx: &mut Ctx) -> anyhow::Result<()> {
    use super::scaling::{rate, Scale};
    use clcb::multi::MultiEngine;
    let Some(scale) = Scale::of(ctx) else {
        return Ok(());
    };
    let (n, events, stream_len) = if ctx.quick {
        (30, 6, 6)
    } else {
        (1_000_000, 1000, 65_536)
    };
    let modes = [("", false), (" grid", true)];
    ctx.set_steps((ctx.seeds.len() * 2 * modes.len() * (1 + scale.counts.len())) as u64);
    for seed in ctx.seeds.clone() {
        for subscriptions in [n, 4 * n] {
            let factor = format!("subs={}", short_count(subscriptions));
            let label = format!("scaling {factor}, seed {seed}");
            // Quick: areas and constraints wide enough that the few subscriptions match
            // (the merge is checked on answers, not on empty lists).
            let params = Params {
                subscriptions,
                events,
                spatial: Spatial::Uniform,
                area_percent: if ctx.quick { 20.0 } else { 0.001 },
                selectivity_percent: if ctx.quick {
                    50.0
                } else {
                    Params::default().selectivity_percent
                },
                ..Params::default()
            };
            let (subs, events, _) = workload(params, seed);
            let stream: Vec<Event> = events.iter().cycle().take(stream_len).cloned().collect();
            let total_of = |truth: &[Vec<u32>], n: usize| -> usize {
                truth.iter().cycle().take(n).map(Vec::len).sum()
            };
            let rtree = RTreeMatcher::build(&subs);
            let checked = events.len().min(CHECKED_EVENTS);
            let truth = oracle(&rtree, &subs, &events[..checked]);
            for (mode, grid) in modes {
                // The one-GPU engine: the reference answers and the throughput to match.
                ctx.step(&format!("{label}: one-device engine{mode}"));
                let one = scale.open(1, clcb::PTX)?;
                let dev = one.into_parts().into_iter().next().context("a device")?.1;
                let mut engine = Engine::new(dev, &subs, Options::default())?;
                engine.set_grid(grid)?;
                let want = engine.match_batch(&events)?;
                let one_name = format!("one-device engine{mode}");
                check(ctx, &label, &truth, &one_name, &want)?;
                anyhow::ensure!(
                    !ctx.quick || want.iter().any(|a| !a.is_empty()),
                    "{label}: no event matched a subscription, so no merge would be checked"
                );
                // Rounds of four full batches (a batch is Options::default().batch events).
                let round = events.len().max(4 * Options::default().batch);
                let (r, timed, total) = rate(ctx.quick, &stream, round, |part| {
                    let t0 = Instant::now();
                    let got = engine.match_batch(part)?;
                    Ok((t0.elapsed(), got.iter().map(Vec::len).sum()))
                })?;
                anyhow::ensure!(
                    total == total_of(&want, timed),
                    "{label}: the one-device engine{mode} found {total} subscriptions over the stream, {} expected",
                    total_of(&want, timed)
                );
                let batched = if grid { "grid batched" } else { "batched" };
                ctx.record(
                    &format!("{} {batched} {factor} events/s", scale.prefix),
                    1.0,
                    r,
                );
                drop(engine);
                let engine_name = format!("multi{mode}");
                let mut on_one = 0.0;
                for &k in &scale.counts {
                    ctx.step(&format!("{label}: {engine_name} on {k} devices"));
                    let mut multi =
                        MultiEngine::new(scale.open(k, clcb::PTX)?, &subs, Options::default())?;
                    multi.set_grid(grid)?;
                    let series = format!("{} {engine_name} {factor} ({k} devices)", scale.prefix);
                    let (r, timed, total) = rate(ctx.quick, &stream, round, |part| {
                        let t0 = Instant::now();
                        let got = multi.match_batch(part)?;
                        Ok((t0.elapsed(), got.iter().map(Vec::len).sum()))
                    })?;
                    anyhow::ensure!(
                        total == total_of(&want, timed),
                        "{series} found {total} subscriptions over the stream, {} expected",
                        total_of(&want, timed)
                    );
                    let got = multi.match_batch(&events)?;
                    ctx.check(&label, (&one_name, &want), (&series, &got))?;
                    if k == 1 {
                        on_one = r;
                    }
                    scale.record(ctx, &engine_name, &factor, "events/s", k, r, on_one);
                }
            }
        }
    }
    Ok(())
}

/// `1M`, `4M`, `30`: a count as a series' factor.
fn short_count(n: usize) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a GPU, `scaling` runs the matcher on 1, 2 and 4 emulated devices at quick
    /// sizes, in the paper's pipeline and over the grid index, every answer checked
    /// against the one-device engine (its answers against the R*-tree's), and records no
    /// speedup (emulator times mean nothing).
    #[test]
    fn scaling_runs_on_emulated_devices_and_checks_every_answer() {
        // 2 workloads x 2 modes: the one-device engine against the R*-tree, and 3
        // device counts against it.
        super::super::scaling::testing::check_emulated_run(
            experiments(),
            2 * 2 * (1 + 3),
            &[
                "emu multi subs=30 events/s",
                "emu multi grid subs=120 events/s",
            ],
            "emu grid batched subs=30 events/s",
        );
    }

    #[test]
    fn counts_read_as_factors() {
        assert_eq!(short_count(1_000_000), "1M");
        assert_eq!(short_count(4_000_000), "4M");
        assert_eq!(short_count(120), "120");
    }
}
