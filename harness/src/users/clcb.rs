//! `harness clcb match` and `harness clcb generate`: CLCB (Cugola & Margara, Middleware
//! 2012) on the user's own subscriptions and events.

use super::{
    bad_lines, check_inputs, fallback_note, stream_text, warn_if_empty, write_ids, GpuOpening,
    Lent, Reading, Stats, StreamArgs,
};
use crate::bad_input;
use crate::engines::ClcbEngine;
use baselines::grid_index::GridIndex;
use baselines::rtree::RTreeMatcher;
use baselines::sff_location::SffLocation;
use ccm::text::TextWindow;
use clcb::batch::EventBatch;
use clcb::cells::{CellAnswers, CellIndex, CellOptions, CellPlan};
use clcb::workload::{Params, Spatial, Workload};
use clcb::{Engine, Options, Subscriptions};
use gpu_kernels::Device;
use rayon::prelude::*;
use std::path::{Path, PathBuf};

/// `clcb match`'s default window: events of Table 1's scenarios (about 100 bytes a line)
/// in windows of about 26 MB, eight of the cell index's largest launches, so that its
/// fixed costs per window (the launches' ramp up to the largest, the pipeline's drain,
/// the window's dictionaries) are spread over many events. Fewer of them are parsed ahead
/// while the index is built ([`AHEAD_EVENTS`]).
const WINDOW: &str = "262144";

/// Events parsed ahead while the index is built, in whole windows (at least one, at most
/// [`super::AHEAD_WINDOWS`]): as many as [`super::AHEAD_WINDOWS`] windows of 65,536 hold,
/// so that a larger window does not raise the memory held during the build.
const AHEAD_EVENTS: usize = 4 * 65_536;

/// `harness clcb ...`: the user's own workloads.
#[derive(clap::Subcommand, Debug)]
pub enum Cmd {
    /// Match events against subscriptions; prints one line per event: the JSON array of
    /// the matching subscription ids, ascending.
    #[command(after_help = super::BAD_LINE_RULE)]
    #[command(mut_arg("window", |a| a.default_value(WINDOW)))]
    Match {
        /// Subscriptions, JSON Lines (`-`: standard input), one filter per line:
        /// {"subscription": 7, "filter": [["n1", "=", "a"]], "area": [x, y, r]}: an id, a
        /// filter (the conjunction of its constraints `[name, operator, value]`; values
        /// are JSON numbers or strings; operators on numbers: = != < > <= >=, on strings:
        /// = != prefix suffix substr) and the area it is interested in: a circle
        /// [x, y, radius] or an axis-aligned rectangle [x_min, y_min, x_max, y_max]
        /// (borders included). Lines with the same id are one subscription's filters.
        #[arg(long)]
        subscriptions: PathBuf,
        /// Events, JSON Lines (`-`: standard input): {"loc": [x, y], "attrs": {"n1": "a"}}:
        /// a location and attributes (numbers or strings); `attrs` may be left out.
        #[arg(long)]
        events: PathBuf,
        /// Default: grid, the strongest CPU engine, on an events file under 64 MiB
        /// (where it is likely faster end to end); else gpu-cells
        /// when a GPU can be opened (the fastest GPU engine end to end), else grid (with a
        /// note saying why).
        #[arg(long, value_enum)]
        engine: Option<ClcbEngine>,
        /// On gpu / emu: match one event at a time (the paper's mode) instead of the
        /// batched kernels over each window (beyond the paper). With no --engine: the
        /// paper's kernels on the GPU, one event at a time.
        #[arg(long)]
        per_event: bool,
        /// The batched kernels over each window (the default; kept for old scripts).
        #[arg(long, hide = true, conflicts_with = "per_event")]
        batched: bool,
        #[command(flatten)]
        stream: StreamArgs,
        /// GPU ordinal.
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// The batched kernels over several GPUs (`all` or ordinals such as `0,1`;
        /// overrides --device): subscriptions cut over them by filter count, every
        /// event matched on each. With --engine emu, as many emulated devices as
        /// ordinals named (`all`: one per GPU present, at least two).
        #[arg(long, conflicts_with = "per_event")]
        devices: Option<gpu_kernels::multi::DeviceSpec>,
    },
    /// Write a generated workload (Table 1 parameters) as JSON Lines files.
    Generate {
        #[arg(long)]
        out_subscriptions: PathBuf,
        #[arg(long)]
        out_events: PathBuf,
        #[arg(long, default_value_t = 1000)]
        subscriptions: usize,
        #[arg(long, default_value_t = 100)]
        events: usize,
        /// Area covered by each filter, in percent.
        #[arg(long, default_value_t = 0.01)]
        area_percent: f64,
        /// Zipf spatial distribution instead of uniform.
        #[arg(long)]
        zipf: bool,
        /// Every filter's content holds for every event (Fig. 6b).
        #[arg(long)]
        all_match: bool,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

pub fn run_cmd(cmd: Cmd) -> anyhow::Result<()> {
    match cmd {
        Cmd::Match {
            subscriptions,
            events,
            engine,
            per_event,
            batched: _,
            stream,
            device,
            devices,
        } => match_cmd(
            &subscriptions,
            &events,
            engine,
            per_event,
            &stream,
            (device, devices),
        ),
        Cmd::Generate {
            out_subscriptions,
            out_events,
            subscriptions,
            events,
            area_percent,
            zipf,
            all_match,
            seed,
        } => {
            let params = Params {
                subscriptions,
                events,
                area_percent,
                spatial: if zipf {
                    Spatial::Zipf { s: 1.0 }
                } else {
                    Spatial::Uniform
                },
                all_match,
                ..Params::default()
            };
            let w = Workload::new(params, seed);
            let mut s = super::create(&out_subscriptions)?;
            clcb::io::write_subscriptions(&mut s, w.subscriptions().as_slice())?;
            std::io::Write::flush(&mut s)?;
            let mut e = super::create(&out_events)?;
            clcb::io::write_events(&mut e, &w.events())?;
            std::io::Write::flush(&mut e)?;
            Ok(())
        }
    }
}

/// A window's events (its text, lines numbered from `first_line`), parsed on all cores
/// into one flat batch, each task cutting its own part into lines; errors as their
/// messages.
fn parse_window(
    file: &Path,
    text: &TextWindow,
    first_line: usize,
) -> (super::Window<Events>, usize) {
    let (w, lines) = clcb::io::parse_events_text(file, text.bytes(), first_line);
    let window = super::Window {
        good: super::Recycled::new(w.batch, clcb::io::recycle_batch),
        bad: w.bad.into_iter().map(|(i, e)| (i, e.to_string())).collect(),
        bytes: 0,
    };
    (window, lines)
}

/// A window's events; dropped once matched and written, its batch goes back to be
/// parsed into again ([`clcb::io::recycle_batch`]).
type Events = super::Recycled<EventBatch>;

/// The cell index's answers of a window, read by the writer where the device wrote them.
impl super::Answered for Lent<CellAnswers> {
    fn count(&self) -> usize {
        self.get().map_or(0, CellAnswers::len)
    }
    fn ids(&self, i: usize) -> &[u32] {
        self.get().map_or(&[], |a| a.get(i))
    }
}

/// [`CellAnswers`] at most in flight: one being matched into, one waiting for the
/// writer, one being written, one being given back.
const ANSWERS_IN_FLIGHT: usize = 4;

/// The fewest bytes of an event's line in the estimate of a file's events that sizes
/// the answers made before the stream (a location and one attribute take more).
const LEAST_LINE: usize = 48;

/// Bytes of an events file from which the default engine is the GPU's cell index
/// (`gpu-cells`); below, the CPU grid on every core. On an H200 with 16 host cores, the
/// paper's default scenario (250k subscriptions, 1M events, a 103 MB events file,
/// `results/e2e/clcb-load-2026-11-29.*`, driver cache warm): `gpu-cells` 0.57-0.61 s for
/// the whole command against the grid's 0.59-0.63 s. Loading the subscriptions as columns
/// (0.16-0.22 s) about hides the GPU's opening (0.22-0.25 s); the cell index is built and
/// uploaded in 0.28-0.29 s against the grid's 0.24-0.26 s; the stream takes 0.06-0.07 s
/// against 0.17-0.18 s. From those phases the GPU wins from about 0.6M events (60 MB),
/// and a machine's first run also pays the PTX's JIT (about 0.6 s more here).
const GPU_FROM_EVENT_BYTES: u64 = 64 << 20;

fn match_cmd(
    subs_path: &Path,
    events_path: &Path,
    engine: Option<ClcbEngine>,
    per_event: bool,
    stream: &StreamArgs,
    (device, devices): (usize, Option<gpu_kernels::multi::DeviceSpec>),
) -> anyhow::Result<()> {
    check_inputs(&[subs_path, events_path])?;
    let multi = match (&devices, engine) {
        (None, _) => None,
        (Some(spec), None | Some(ClcbEngine::Gpu)) => Some((spec, false)),
        (Some(spec), Some(ClcbEngine::Emu)) => Some((spec, true)),
        (Some(_), Some(other)) => {
            return Err(bad_input(anyhow::anyhow!(
                "--devices runs the kernels (gpu, emu), not {}",
                crate::engines::name(&other)
            )))
        }
    };
    let mut stats = Stats::new(stream.stats);
    // The default engine on a small events file: the CPU grid, faster end to end.
    let small = engine.is_none()
        && !per_event
        && multi.is_none()
        && std::fs::metadata(events_path)
            .is_ok_and(|m| m.is_file() && m.len() < GPU_FROM_EVENT_BYTES);
    let window = stream.window as usize;
    // The cell index's answers, lent to the writer and given back; the first ones made
    // on the opening thread (`ready` counts them).
    let (back, given_back) = std::sync::mpsc::channel();
    let ready = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // The page-locked parts the cell index is copied to the device through, made on the
    // opening thread too.
    let (stager_to, stager_made) = std::sync::mpsc::channel();
    // The GPU opens on its own thread while the subscriptions load; for the cell index,
    // it then makes the page-locked areas of the stream's first answers.
    let cells = |e: Option<ClcbEngine>| match e {
        None => !per_event,
        Some(e) => e == ClcbEngine::GpuCells,
    };
    let opening = match (&multi, engine) {
        (None, None) if small => None,
        (None, e @ (None | Some(ClcbEngine::Gpu | ClcbEngine::GpuCells))) if cells(e) => {
            let warm = warm_answers(
                (subs_path, events_path),
                window,
                back.clone(),
                ready.clone(),
                stager_to,
            );
            Some(GpuOpening::start_warmed(device, clcb::PTX, warm))
        }
        (None, None | Some(ClcbEngine::Gpu | ClcbEngine::GpuCells)) => {
            Some(GpuOpening::start(device, clcb::PTX))
        }
        _ => None,
    };
    let t0 = std::time::Instant::now();
    // Parsed straight into columns on all cores (no heap object per subscription,
    // filter or constraint): what the cell index and the grid build from.
    let (mut cols, load) =
        clcb::io::load_subscription_columns_timed(subs_path).map_err(bad_input)?;
    warn_if_empty(subs_path, cols.len());
    stats.add(
        "load subscriptions",
        t0.elapsed(),
        format!(
            "({} subscriptions, {} filters; mapped or read in {:.3} s, parsed on all cores {:.3}, joined {:.3})",
            cols.len(),
            cols.filter_count(),
            load.read.as_secs_f64(),
            load.parse.as_secs_f64(),
            load.join.as_secs_f64()
        ),
    );
    // Answers are dense subscription indices; printed as the subscriptions' ids.
    let ids: Vec<u32> = cols.ids().iter().map(|s| s.0).collect();
    let format = |a: &[u32], out: &mut Vec<u8>| {
        write_ids(out, a.iter().map(|&i| ids[i as usize]));
    };
    if let Some((spec, emulated)) = multi {
        let devs = super::devices_of(spec, clcb::PTX, emulated, &mut stats)?;
        let t = std::time::Instant::now();
        let subs = cols.to_subscriptions();
        let mut m = clcb::multi::MultiEngine::new(devs, &subs, Options::default())?;
        m.synchronize()?;
        stats.add("build + upload tables", t.elapsed(), String::new());
        let matcher = |evs: &Events| -> anyhow::Result<Vec<Vec<u32>>> {
            Ok(m.match_batch(&evs.batch.to_events())?)
        };
        let done = stream_text(
            events_path,
            window,
            parse_window,
            matcher,
            format,
            &mut stats,
        )?;
        stats.print(done.events, "events", done.bytes, done.wall);
        return bad_lines(&done);
    }
    // The events' first windows are read and parsed while the index is built (and the
    // GPU opens): about AHEAD_EVENTS, not in the stream's time (noted in --stats);
    // standard input is read when matching begins.
    let early = if events_path.as_os_str() == clcb::io::STDIN {
        None
    } else {
        Some(Reading::start_text(
            events_path,
            window,
            parse_window,
            (AHEAD_EVENTS / window).clamp(1, super::AHEAD_WINDOWS),
        )?)
    };
    let reading = |early: Option<Reading<Events>>| match early {
        Some(r) => Ok(r),
        None => Reading::start_text(events_path, window, parse_window, 1),
    };
    let engine = if small {
        stats.add(
            "default engine",
            std::time::Duration::ZERO,
            format!(
                "(grid: an events file under {} MiB is matched on the CPU, faster end to end \
                 than the GPU's cell index, whose build and opening cost more than it saves; \
                 --engine gpu-cells for the GPU)",
                GPU_FROM_EVENT_BYTES >> 20
            ),
        );
        Some(ClcbEngine::Grid)
    } else {
        engine
    };
    // The cell index laid out on the host while the GPU opens, its upload left for the
    // device: for the cell index asked for, and for the default engine where a GPU is
    // likely (if it then fails to open, the grid reads the subscriptions again; not
    // from standard input, which cannot be read again).
    let early_plan = match engine {
        Some(ClcbEngine::GpuCells | ClcbEngine::EmuCells) => true,
        None => {
            !per_event
                && subs_path.as_os_str() != clcb::io::STDIN
                && opening.as_ref().is_some_and(GpuOpening::likely_present)
        }
        _ => false,
    };
    let mut plan = if early_plan {
        let t = std::time::Instant::now();
        let p = CellPlan::build(std::mem::take(&mut cols))?;
        stats.add(
            "lay out the cell index",
            t.elapsed(),
            "(on the host, while the GPU opens)".into(),
        );
        Some(p)
    } else {
        None
    };
    let opened = |stats: &mut Stats| match opening {
        Some(o) => o.wait(stats),
        None => Device::gpu(device, clcb::PTX),
    };
    let dev = match engine {
        Some(ClcbEngine::Sff | ClcbEngine::Rtree | ClcbEngine::Grid) => None,
        Some(ClcbEngine::Emu | ClcbEngine::EmuCells) => Some(Device::emulator()),
        Some(ClcbEngine::Gpu | ClcbEngine::GpuCells) => Some(opened(&mut stats).map_err(|e| {
            anyhow::Error::new(e).context("opening the GPU (use --engine grid for the CPU)")
        })?),
        None => match opened(&mut stats) {
            Ok(d) => Some(d),
            Err(e) => {
                fallback_note(&e, "grid", "gpu");
                if plan.take().is_some() {
                    // The columns went into the cell index's plan: read again.
                    cols = stats.time("load subscriptions again", || {
                        clcb::io::load_subscription_columns(subs_path).map_err(bad_input)
                    })?;
                }
                None
            }
        },
    };
    // The model, for the engines that read it (not the grid or the cell index).
    let model = std::cell::OnceCell::new();
    let subs = || -> &Subscriptions { model.get_or_init(|| cols.to_subscriptions()) };
    let done = match (dev, engine) {
        (None, Some(ClcbEngine::Sff)) => {
            let m = stats.time("build the index (sff)", || SffLocation::build(subs()));
            let matcher = |evs: &Events| {
                let evs = &evs.batch;
                Ok((0..evs.len())
                    .into_par_iter()
                    .with_min_len(64)
                    .map_init(
                        || m.scratch(),
                        |s, i| m.match_indices_with(&evs.event(i), s),
                    )
                    .collect::<Vec<Vec<u32>>>())
            };
            let done = reading(early)?.run(matcher, format, &mut stats)?;
            super::keep_until_exit(m);
            done
        }
        (None, Some(ClcbEngine::Rtree)) => {
            let subs = subs();
            let m = stats.time("build the index (rtree)", || RTreeMatcher::build(subs));
            let matcher = |evs: &Events| {
                let evs = &evs.batch;
                Ok((0..evs.len())
                    .into_par_iter()
                    .with_min_len(64)
                    .map(|i| m.match_indices(&evs.event(i), subs))
                    .collect::<Vec<Vec<u32>>>())
            };
            let done = reading(early)?.run(matcher, format, &mut stats)?;
            super::keep_until_exit(m);
            done
        }
        (None, _) => {
            let t = std::time::Instant::now();
            let m = GridIndex::from_columns(&cols)?;
            let b = m.build_timing();
            stats.add(
                "build the index (grid)",
                t.elapsed(),
                format!(
                    "(check {:.3} s, keys {:.3}, constraints compiled {:.3}, cells {:.3})",
                    b.check.as_secs_f64(),
                    b.keys.as_secs_f64(),
                    b.tests.as_secs_f64(),
                    b.cells.as_secs_f64()
                ),
            );
            let matcher = |evs: &Events| Ok(m.match_batch_parallel(&evs.batch));
            let done = reading(early)?.run(matcher, format, &mut stats)?;
            super::keep_until_exit(m);
            done
        }
        (Some(dev), None | Some(ClcbEngine::GpuCells | ClcbEngine::EmuCells))
            if engine.is_some() || !per_event =>
        {
            let t = std::time::Instant::now();
            let opts = CellOptions::for_device(&dev);
            // The index takes the columns' constraints as its tables (moved, not copied).
            let plan = match plan.take() {
                Some(p) => p,
                None => CellPlan::build(std::mem::take(&mut cols))?,
            };
            // Made on the opening thread, else now (on a GPU; failing that, the tables
            // are copied from pageable memory).
            let mut stager = match stager_made.try_recv() {
                Ok(s) => Some(s),
                Err(_) if dev.is_gpu() => clcb::cells::upload_stager(&dev).ok(),
                Err(_) => None,
            };
            let mut index = CellIndex::from_plan_staged(dev, plan, opts, stager.as_mut())?;
            drop(stager);
            index.synchronize()?;
            let b = index.build_timing();
            let tables: Vec<String> = index
                .table_bytes()
                .iter()
                .map(|(name, bytes)| format!("{name} {:.1}", *bytes as f64 / 1e6))
                .collect();
            stats.add(
                "build + upload the cell index",
                t.elapsed(),
                format!(
                    "({:.1} MB on the device: {}; {b})",
                    index.device().allocated_bytes() as f64 / 1e6,
                    tables.join(", "),
                ),
            );
            // The device's clock (two marks a launch) in --stats, but for small windows
            // (`--window 1`: a launch an event), whose launches it would slow.
            index.set_device_clock(stream.stats && window >= 4096);
            // A few `CellAnswers` for the whole stream, their page-locked areas reused:
            // the writer formats one where the device wrote it while the next window is
            // matched into another. Their areas made before the stream (on the opening
            // thread, or now), rather than between the launches of its first windows.
            let mut made = ready.load(std::sync::atomic::Ordering::SeqCst);
            if made == 0 {
                let t = std::time::Instant::now();
                let (n, events) = answers_ahead(events_path, window);
                for _ in 0..n {
                    let mut answers = CellAnswers::default();
                    index.reserve_answers(&mut answers, events)?;
                    back.send(answers)?;
                }
                made = n;
                stats.add(
                    "page-locked answers",
                    t.elapsed(),
                    format!("({n} windows' areas, made before the stream)"),
                );
            }
            let matcher = |evs: &Events| -> anyhow::Result<Lent<CellAnswers>> {
                let mut answers = Lent::take(&mut made, ANSWERS_IN_FLIGHT, &given_back)?;
                index.match_event_batch_into(&evs.batch, &mut answers)?;
                Ok(Lent::new(answers, &back))
            };
            let done = reading(early)?.run(matcher, format, &mut stats)?;
            index_stats(&index.take_timing(), &mut stats);
            super::keep_until_exit((index, given_back));
            done
        }
        (Some(dev), _) => {
            let t = std::time::Instant::now();
            let mut e = Engine::new(dev, subs(), Options::default())?;
            e.synchronize()?;
            stats.add(
                "build + upload tables",
                t.elapsed(),
                format!("({:.1} MB on the device)", e.device_bytes() as f64 / 1e6),
            );
            let matcher = |evs: &Events| -> anyhow::Result<Vec<Vec<u32>>> {
                let evs = &evs.batch;
                if per_event {
                    (0..evs.len())
                        .map(|i| Ok(e.match_indices(&evs.event(i), None)?))
                        .collect()
                } else {
                    Ok(e.match_event_batch(evs)?)
                }
            };
            let done = reading(early)?.run(matcher, format, &mut stats)?;
            super::keep_until_exit(e);
            done
        }
    };
    stats.print(done.events, "events", done.bytes, done.wall);
    super::keep_until_exit((model, cols));
    bad_lines(&done)
}

/// The answers made before the stream: (how many, events each), for as many windows as
/// the events file can hold (lines of at least `LEAST_LINE` bytes; none for standard
/// input), at most [`ANSWERS_IN_FLIGHT`].
fn answers_ahead(events_path: &Path, window: usize) -> (usize, usize) {
    let most_events = std::fs::metadata(events_path).map_or(0, |m| m.len() as usize / LEAST_LINE);
    (
        most_events.div_ceil(window.max(1)).min(ANSWERS_IN_FLIGHT),
        window.min(most_events),
    )
}

/// The warm-up of `clcb match`'s GPU for the cell index, on its opening thread (while
/// the subscriptions load and the index is laid out): the page-locked areas of the
/// stream's first answers ([`answers_ahead`]) made and sent to `back`, `ready` counting
/// them (the command makes the rest, if any is missing, before its stream), the
/// page-locked parts the index's tables are copied in through
/// ([`clcb::cells::upload_stager`]) sent to `stager_to`, and device memory for the
/// index's tables taken into the allocator's pool, sized from the subscriptions file.
fn warm_answers(
    (subs_path, events_path): (&Path, &Path),
    window: usize,
    back: std::sync::mpsc::Sender<CellAnswers>,
    ready: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stager_to: std::sync::mpsc::Sender<gpu_kernels::Stager>,
) -> super::Warm {
    let (n, events) = answers_ahead(events_path, window);
    let subs_bytes = std::fs::metadata(subs_path).map_or(0, |m| m.len() as usize);
    Box::new(move |dev: &Device| {
        let t = std::time::Instant::now();
        let opts = CellOptions::for_device(dev);
        let mut made = 0;
        let mut why = None;
        for _ in 0..n {
            match CellAnswers::reserved(dev, &opts, events) {
                Ok(a) => {
                    if back.send(a).is_err() {
                        break;
                    }
                    made += 1;
                }
                Err(e) => {
                    why = Some(e);
                    break;
                }
            }
        }
        ready.store(made, std::sync::atomic::Ordering::SeqCst);
        let note = match why {
            None => format!("({made} windows' areas, on the opening thread)"),
            Some(e) => format!("({made} windows' areas; then: {e})"),
        };
        let answers = ("open: page-locked answers", t.elapsed(), note);
        let t = std::time::Instant::now();
        let note = match clcb::cells::upload_stager(dev) {
            Ok(s) => {
                let note = format!(
                    "({} parts of {:.1} MB, the index's copies in)",
                    clcb::cells::UPLOAD_PARTS,
                    s.part_bytes() as f64 / 1e6
                );
                let _ = stager_to.send(s);
                note
            }
            Err(e) => format!("(not done: {e})"),
        };
        let staging = ("open: page-locked staging", t.elapsed(), note);
        // The cell index's tables, uploaded once the host has laid them out, took about
        // 1.3 times the subscriptions file's bytes on the device (Table 1's default
        // scenario: 560 MB for 427 MB): that much, at most half the free memory, taken
        // into the device's pool now, so that their allocation maps no memory.
        let (free, _) = dev.mem_info().unwrap_or((0, 0));
        let bytes = (subs_bytes / 2 * 3).min(free / 2);
        vec![answers, staging, super::reserve_phase(dev, bytes)]
    })
}

/// The cell index's share of the stream's match in `--stats` ([`clcb::cells::CellTiming`]).
fn index_stats(t: &clcb::cells::CellTiming, stats: &mut Stats) {
    let events = format!("({} events)", t.events);
    for (phase, d) in [
        ("index: dictionaries", t.dictionaries),
        ("index: stage events", t.stage),
        ("index: submit", t.submit),
        ("index: answers", t.answers),
        ("index: kernels, device clock", t.device),
    ] {
        stats.add(phase, d, events.clone());
    }
    stats.add(
        "index: staging not hidden",
        t.waited,
        format!("({} launches, {} answers)", t.launches, t.pairs),
    );
}
