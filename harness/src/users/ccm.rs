//! `harness ccm match` and `harness ccm generate`: CCM (Margara & Cugola, DEBS 2011) on
//! the user's own subscriptions and events.

use super::{
    bad_lines, check_inputs, fallback_note, stream_text, warn_if_empty, write_ids, GpuOpening,
    Stats, StreamArgs,
};
use crate::bad_input;
use crate::engines::CcmEngine;
use anyhow::Context as _;
use baselines::content_index::ContentIndex;
use baselines::hybrid_index::HybridIndex;
use baselines::sff::Sff;
use baselines::Matcher;
use ccm::io::{IoError, LineReader, RawLines};
use ccm::layout::Tables;
use ccm::text::TextWindow;
use ccm::workload::{generate, NameDist, Params};
use ccm::Subscription;
use ccm::{Ccm, Config, EventBatch, GpuIndex, IndexConfig, IndexPlan, InterfaceId, MultiIndex};
use gpu_kernels::Device;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `harness ccm ...`: the user's own workloads.
#[derive(clap::Subcommand, Debug)]
pub enum Cmd {
    /// Match events against subscriptions (JSON Lines); prints one line per event, the
    /// JSON array of the matching interface ids, ascending.
    #[command(after_help = super::BAD_LINE_RULE)]
    Match {
        /// Subscriptions file (`-`: standard input):
        /// `{"interface": 3, "filter": [["temp", ">", 30], ["area", "=", "area1"]]}` per line:
        /// an interface id (0..=4294967295) and a filter, the conjunction of its constraints
        /// `[name, operator, value]`. Values are JSON numbers (integers that fit in 64 bits,
        /// or decimals) or strings. Operators on numbers: = != < > <= >=; on strings:
        /// = != prefix suffix substr. An interface may have many filters (their disjunction).
        #[arg(long)]
        subscriptions: PathBuf,
        /// Events file (`-`: standard input): `{"temp": 25, "area": "area1"}` per line: an
        /// object of attributes, each a number or a string.
        #[arg(long)]
        events: PathBuf,
        /// Default: gpu-index when a GPU can be opened (gpu with --per-event), else
        /// hybrid, the strongest CPU engine (with a note saying why). The CPU engines (sff, index, hybrid) match each
        /// window on all cores and give the same answers as the kernels.
        #[arg(long, value_enum)]
        engine: Option<CcmEngine>,
        /// On gpu / emu: one launch per event (the paper's mode, the lowest latency per
        /// event) instead of the batched kernel over each window.
        #[arg(long)]
        per_event: bool,
        /// The batched kernel over each window (the default; kept for old scripts).
        #[arg(long, hide = true, conflicts_with = "per_event")]
        batched: bool,
        #[command(flatten)]
        stream: StreamArgs,
        /// GPU ordinal.
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// The pruning index over several GPUs (`all` or ordinals such as `0,1`;
        /// overrides --device), cut over them as --cut says. With --engine emu-index,
        /// as many emulated devices as ordinals named (`all`: one per GPU present, at
        /// least two).
        #[arg(long, conflicts_with = "per_event")]
        devices: Option<gpu_kernels::multi::DeviceSpec>,
        /// With --devices, what is cut over them: `interfaces` (whole interfaces per
        /// device, balanced by filter count; every event matched on each), `filters`
        /// (equal filter counts; every event matched on each) or `events` (every device
        /// holds the whole index and matches its share of each window's events, each
        /// event encoded once: the choice when the host's encoding bounds one device).
        #[arg(long, value_enum, default_value_t = Cut::Interfaces, requires = "devices")]
        cut: Cut,
        /// With the pruning index on one device: the threads of a pool of its own that
        /// stages each launch's events (0: the pool the process's indexes share, as many
        /// threads as rayon's). Default: an eighth of the host's threads, the others
        /// parsing (see `staging_split`); with `RAYON_NUM_THREADS` set, the shared pool.
        /// For measuring how the host's cores are best split between parsing the stream
        /// (rayon's pool) and staging.
        #[arg(long, hide = true)]
        stage_threads: Option<usize>,
    },
    /// Writes a Table 1 workload as JSON Lines files.
    Generate {
        #[arg(long)]
        out_subscriptions: PathBuf,
        #[arg(long)]
        out_events: PathBuf,
        /// Filters per interface (±10%).
        #[arg(long, default_value_t = 25_000)]
        filters: usize,
        #[arg(long, default_value_t = 10)]
        interfaces: usize,
        #[arg(long, default_value_t = 1000)]
        events: usize,
        #[arg(long, default_value_t = 100)]
        names: usize,
        /// Zipf-distributed names instead of uniform.
        #[arg(long)]
        zipf: bool,
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
            devices: Some(spec),
            cut,
            stage_threads: _,
        } => {
            let _ = (per_event, device);
            match_multi(&subscriptions, &events, engine, (&spec, cut), &stream)
        }
        Cmd::Match {
            subscriptions,
            events,
            engine,
            per_event,
            batched: _,
            stream,
            device,
            devices: None,
            cut: _,
            stage_threads,
        } => match_cmd(
            &subscriptions,
            &events,
            engine,
            per_event,
            &stream,
            (device, stage_threads),
        ),
        Cmd::Generate {
            out_subscriptions,
            out_events,
            filters,
            interfaces,
            events,
            names,
            zipf,
            seed,
        } => {
            let p = Params {
                filters_per_interface: (filters - filters / 10, filters + filters / 10),
                interfaces,
                events,
                names,
                name_dist: if zipf {
                    NameDist::Zipf(1.0)
                } else {
                    NameDist::Uniform
                },
                ..Params::default()
            };
            let w = generate(&p, seed).map_err(bad_input)?;
            let mut s = super::create(&out_subscriptions)?;
            ccm::io::write_subscriptions(&mut s, &w.subscriptions)?;
            std::io::Write::flush(&mut s)?;
            let mut e = super::create(&out_events)?;
            ccm::io::write_events(&mut e, &w.events)?;
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
    let (w, lines) = ccm::io::parse_events_text(file, text.bytes(), first_line);
    let window = super::Window {
        good: super::Recycled::new(w.batch, ccm::io::recycle_batch),
        bad: w.bad.into_iter().map(|(i, e)| (i, e.to_string())).collect(),
        bytes: 0,
    };
    (window, lines)
}

/// A window's events; dropped once matched and written, its batch goes back to be
/// parsed into again ([`ccm::io::recycle_batch`]).
type Events = super::Recycled<EventBatch>;

/// A window's answers from the GPU index, lent to the writer where the device wrote
/// them (no copy), at most this many in flight: one being matched into, one waiting for
/// the writer, one being written, one being given back.
const ANSWERS_IN_FLIGHT: usize = 4;

impl super::Answered for super::Lent<ccm::Answers> {
    fn count(&self) -> usize {
        self.get().map_or(0, ccm::Answers::len)
    }
    fn ids(&self, i: usize) -> &[u32] {
        self.get().map_or(&[], |a| bytemuck::cast_slice(a.get(i)))
    }
}

/// The subscriptions' size in memory: the vector, each filter's constraints, their names
/// and string values (what the peak memory of a stream is compared with).
fn heap_bytes(subs: &[ccm::Subscription]) -> usize {
    use std::mem::size_of;
    subs.iter()
        .map(|s| {
            size_of::<ccm::Subscription>()
                + s.filter.constraints.capacity() * size_of::<ccm::Constraint>()
                + s.filter
                    .constraints
                    .iter()
                    .map(|c| {
                        c.name.capacity()
                            + match &c.value {
                                ccm::Value::Str(v) => v.capacity(),
                                _ => 0,
                            }
                    })
                    .sum::<usize>()
        })
        .sum()
}

/// Subscriptions lines per window when they are laid out as they are parsed.
const SUBS_WINDOW: usize = 16_384;

/// Reads, parses and lays out the subscriptions file `path` window by window: a reader
/// thread parses a window (in parallel) while the previous one is added to the tables,
/// so loading and indexing overlap and all the subscriptions are never held at once.
/// A bad line does not stop the reading: every one is reported (the first
/// [`MAX_REPORTED`](ccm::io::MAX_REPORTED), then a count) as the error (exit code 2).
fn load_tables(path: &Path, grouping: bool, stats: &mut Stats) -> anyhow::Result<Tables> {
    let file = ccm::io::display_path(path);
    let reader = ccm::io::open_input(path).map_err(bad_input)?;
    let t0 = Instant::now();
    type Window = Result<Vec<Result<Subscription, IoError>>, IoError>;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Window>(1);
    let producer = std::thread::spawn(move || {
        let mut lines = LineReader::new(file.clone(), reader);
        let mut raw = RawLines::default();
        let mut busy = Duration::ZERO;
        loop {
            let t = Instant::now();
            if let Err(e) = lines.read_window(SUBS_WINDOW, &mut raw) {
                let _ = tx.send(Err(e));
                break;
            }
            if raw.is_empty() {
                break;
            }
            let parsed: Vec<Result<Subscription, IoError>> = (0..raw.len())
                .into_par_iter()
                .with_min_len(256)
                .map(|i| ccm::io::parse_subscription(&file, raw.line_no(i), raw.raw(i)))
                .collect();
            busy += t.elapsed();
            if tx.send(Ok(parsed)).is_err() {
                break;
            }
        }
        busy
    });
    let mut builder = Tables::builder(grouping);
    let (mut build, mut bytes) = (Duration::ZERO, 0usize);
    let mut bad = ccm::io::BadLines::default();
    for window in rx {
        let mut good = Vec::new();
        for r in window.map_err(bad_input)? {
            match r {
                Ok(s) => good.push(s),
                Err(e) => bad.push(e),
            }
        }
        if !bad.is_empty() {
            // Read on to find every bad line; nothing more is laid out.
            continue;
        }
        bytes += heap_bytes(&good);
        let t = Instant::now();
        builder.push(&good).map_err(bad_input)?;
        build += t.elapsed();
        rayon::spawn(move || drop(good));
    }
    let busy = producer.join().unwrap_or_default();
    bad.finish(|errors, total| IoError::Lines { errors, total })
        .map_err(bad_input)?;
    let n = builder.len();
    warn_if_empty(path, n);
    let t = Instant::now();
    let tables = builder.finish().map_err(bad_input)?;
    build += t.elapsed();
    stats.add(
        "parse subscriptions",
        busy,
        format!(
            "({n} filters, {:.1} MB in memory as a list; reader thread, overlaps indexing)",
            bytes as f64 / 1e6
        ),
    );
    stats.add("build the index", build, "(the tables' layout)".into());
    stats.add("load + index", t0.elapsed(), String::new());
    Ok(tables)
}

/// `ccm match --cut`: what a [`MultiIndex`] cuts over the devices.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Cut {
    Interfaces,
    Filters,
    Events,
}

impl From<Cut> for ccm::Partition {
    fn from(c: Cut) -> Self {
        match c {
            Cut::Interfaces => ccm::Partition::Interfaces,
            Cut::Filters => ccm::Partition::Filters,
            Cut::Events => ccm::Partition::Events,
        }
    }
}

/// A CPU engine of `ccm match`, built over the subscriptions (boxed: the indexes' sizes
/// differ).
enum CpuMatcher {
    Sff(Box<Sff>),
    Index(Box<ContentIndex>),
    Hybrid(Box<HybridIndex>),
}

impl CpuMatcher {
    /// Builds `engine` (`sff`, `index` or `hybrid`; any other is `hybrid`, the strongest
    /// CPU engine) over `subs`; a subscription it cannot index is bad input.
    fn build(engine: CcmEngine, subs: &[Subscription]) -> anyhow::Result<CpuMatcher> {
        Ok(match engine {
            CcmEngine::Sff => CpuMatcher::Sff(Box::new(Sff::build(subs).map_err(bad_input)?)),
            CcmEngine::Index => {
                CpuMatcher::Index(Box::new(ContentIndex::build(subs).map_err(bad_input)?))
            }
            CcmEngine::Hybrid
            | CcmEngine::Gpu
            | CcmEngine::Emu
            | CcmEngine::GpuIndex
            | CcmEngine::EmuIndex => {
                CpuMatcher::Hybrid(Box::new(HybridIndex::build(subs).map_err(bad_input)?))
            }
        })
    }

    /// Every event's answer, on all cores.
    fn match_parallel(&self, events: &EventBatch) -> Vec<Vec<InterfaceId>> {
        match self {
            CpuMatcher::Sff(m) => m.match_batch_parallel(events),
            CpuMatcher::Index(m) => m.match_batch_parallel(events),
            CpuMatcher::Hybrid(m) => m.match_batch_parallel(events),
        }
    }
}

/// `ccm match --devices`: the pruning index partitioned over several devices
/// ([`ccm::MultiIndex`]) over each window.
fn match_multi(
    subs_path: &Path,
    events_path: &Path,
    engine: Option<CcmEngine>,
    (spec, cut): (&gpu_kernels::multi::DeviceSpec, Cut),
    stream: &StreamArgs,
) -> anyhow::Result<()> {
    check_inputs(&[subs_path, events_path])?;
    let mut stats = Stats::new(stream.stats);
    let devs = match engine {
        None | Some(CcmEngine::GpuIndex) => super::devices_of(spec, ccm::PTX, false, &mut stats)?,
        Some(CcmEngine::EmuIndex) => super::devices_of(spec, ccm::PTX, true, &mut stats)?,
        Some(other) => {
            return Err(bad_input(anyhow::anyhow!(
                "--devices runs the pruning index (gpu-index, emu-index), not {}",
                crate::engines::name(&other)
            )))
        }
    };
    let t0 = Instant::now();
    let subs = ccm::io::load_subscriptions(subs_path).map_err(bad_input)?;
    stats.add(
        "load subscriptions",
        t0.elapsed(),
        format!("({} filters)", subs.len()),
    );
    let dev0 = devs.get(0).context("a device")?;
    let t = Instant::now();
    let cfg = IndexConfig::for_device(dev0);
    let mut index =
        MultiIndex::with_partition(&devs, &subs, cfg, cut.into()).map_err(|e| match e {
            gpu_kernels::multi::OnDevice::Failed {
                error: ccm::CcmError::Layout(l),
                ..
            } => bad_input(l),
            other => anyhow::Error::new(other),
        })?;
    drop(subs);
    stats.add(
        "build the index",
        t.elapsed(),
        format!(
            "(pruning index on {}, cut by {cut:?}, filters per device {:?})",
            devs.name(),
            index.filters_per_device()
        ),
    );
    let mut answers = ccm::MultiAnswers::default();
    let done = stream_text(
        events_path,
        stream.window as usize,
        parse_window,
        |evs: &Events| {
            index.match_batch_into(&evs.batch, &mut answers)?;
            Ok(answers.to_vecs())
        },
        format_answer,
        &mut stats,
    )?;
    stats.print(done.events, "events", done.bytes, done.wall);
    bad_lines(&done)
}

/// An event's answer as an output line: the JSON array of its interface ids.
fn format_answer(a: &[u32], out: &mut Vec<u8>) {
    write_ids(out, a.iter().copied());
}

/// The threads of the GPU index's own staging pool by default, rayon's global pool
/// (loading, parsing the stream, writing) started with the host's other threads: an
/// eighth of them, at least 2, on a host of 8 threads or more. Two pools of every thread
/// side by side (parsing, and staging each launch's events into page-locked memory) took
/// turns on the cores: on the H200 machine's 16, 1M events of Table 1's default scenario
/// streamed in 0.057-0.064 s so, in 0.045-0.048 s with 14 threads parsing and 2 staging
/// (12 and 4: 0.047; 13 and 3: 0.049-0.050; 16 and 4: 0.050-0.055). The parser is then
/// the bound: alone on 16 threads it took 0.035 s, on 12 0.042 s. None (0: the shared
/// pool) when `RAYON_NUM_THREADS` sets rayon's threads, on fewer threads, or when
/// rayon's pool was already started.
fn staging_split() -> usize {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads < 8 || std::env::var_os("RAYON_NUM_THREADS").is_some() {
        return 0;
    }
    let stage = (threads / 8).max(2);
    match rayon::ThreadPoolBuilder::new()
        .num_threads(threads - stage)
        .build_global()
    {
        Ok(()) => stage,
        Err(_) => 0,
    }
}

/// Where `ccm match` gets its device.
enum DeviceSource {
    /// The emulator (or a GPU already open).
    Ready(Device),
    /// A GPU the user asked for: failing to open it is an error.
    Opening(GpuOpening),
    /// The default engine's GPU: failing to open it falls back to the CPU.
    Default(GpuOpening),
}

impl DeviceSource {
    /// Whether the device is (or will be) a GPU.
    fn is_gpu(&self) -> bool {
        match self {
            DeviceSource::Ready(d) => d.is_gpu(),
            DeviceSource::Opening(_) | DeviceSource::Default(_) => true,
        }
    }

    /// The device; `None` when the default engine's GPU could not be opened after all
    /// (the note printed: the caller matches on the CPU, reading `subs` again, which
    /// standard input cannot be).
    fn get(self, stats: &mut Stats, subs: &Path) -> anyhow::Result<Option<Device>> {
        match self {
            DeviceSource::Ready(d) => Ok(Some(d)),
            DeviceSource::Opening(o) => o.wait(stats).map(Some).map_err(|e| {
                anyhow::Error::new(e).context("opening the GPU (use --engine hybrid for the CPU)")
            }),
            DeviceSource::Default(o) => match o.wait(stats) {
                Ok(d) => Ok(Some(d)),
                Err(e) if subs.as_os_str() != "-" => {
                    fallback_note(&e, "hybrid", "gpu");
                    Ok(None)
                }
                Err(e) => Err(anyhow::Error::new(e).context(
                    "opening the GPU after the subscriptions were read from standard input \
                     (use --engine hybrid for the CPU)",
                )),
            },
        }
    }
}

/// `ccm match` on a CPU engine: the subscriptions loaded, `cpu` built over them, and the
/// events streamed through it on all cores.
fn match_cpu(
    subs_path: &Path,
    events_path: &Path,
    cpu: CcmEngine,
    window: usize,
    stats: &mut Stats,
) -> anyhow::Result<super::Streamed> {
    let t0 = Instant::now();
    let subs = ccm::io::load_subscriptions(subs_path).map_err(bad_input)?;
    warn_if_empty(subs_path, subs.len());
    stats.add(
        "load subscriptions",
        t0.elapsed(),
        format!(
            "({} filters, {:.1} MB in memory)",
            subs.len(),
            heap_bytes(&subs) as f64 / 1e6
        ),
    );
    let phase = format!("build the index ({})", crate::engines::name(&cpu));
    let matcher = stats.time(&phase, || CpuMatcher::build(cpu, &subs))?;
    stats.add("load + index", t0.elapsed(), String::new());
    drop(subs);
    let done = stream_text(
        events_path,
        window,
        parse_window,
        |evs: &Events| Ok(matcher.match_parallel(&evs.batch)),
        format_answer,
        stats,
    );
    super::keep_until_exit(matcher);
    done
}

fn match_cmd(
    subs_path: &Path,
    events_path: &Path,
    engine: Option<CcmEngine>,
    per_event: bool,
    stream: &StreamArgs,
    (device, stage_threads): (usize, Option<usize>),
) -> anyhow::Result<()> {
    check_inputs(&[subs_path, events_path])?;
    let mut stats = Stats::new(stream.stats);
    // The CPU engine, when no device runs the kernels: the one asked for, else (no GPU)
    // the strongest.
    let cpu = match engine {
        Some(e @ (CcmEngine::Sff | CcmEngine::Index | CcmEngine::Hybrid)) => e,
        _ => CcmEngine::Hybrid,
    };
    // The device: the emulator, or a GPU opened on its own thread while the
    // subscriptions load. The default engine first asks whether there is likely a GPU
    // (without waiting for the driver), since the CPU engine loads the subscriptions in
    // another form.
    let dev = match engine {
        Some(CcmEngine::Sff | CcmEngine::Index | CcmEngine::Hybrid) => None,
        Some(CcmEngine::Emu | CcmEngine::EmuIndex) => Some(DeviceSource::Ready(Device::emulator())),
        Some(CcmEngine::Gpu | CcmEngine::GpuIndex) => {
            Some(DeviceSource::Opening(GpuOpening::start(device, ccm::PTX)))
        }
        None => {
            let opening = GpuOpening::start(device, ccm::PTX);
            if opening.likely_present() {
                Some(DeviceSource::Default(opening))
            } else {
                match opening.wait(&mut stats) {
                    Ok(d) => Some(DeviceSource::Ready(d)),
                    Err(e) => {
                        fallback_note(&e, &crate::engines::name(&cpu), "gpu");
                        None
                    }
                }
            }
        }
    };
    let format = format_answer;
    let window = stream.window as usize;
    // The default engine's GPU, if it fails to open after the subscriptions were laid
    // out, leaves the block for the CPU engine.
    let done = 'stream: {
        match dev {
            None => match_cpu(subs_path, events_path, cpu, window, &mut stats)?,
            Some(source)
                if !per_event
                    && matches!(
                        engine,
                        None | Some(CcmEngine::GpuIndex | CcmEngine::EmuIndex)
                    ) =>
            {
                // The host's threads split between rayon's pool (loading, parsing the
                // stream, writing) and the index's staging, unless asked otherwise.
                let stage_threads = match stage_threads {
                    Some(n) => n,
                    None => staging_split(),
                };
                let tables = load_tables(subs_path, false, &mut stats)?;
                // The first windows of events are parsed while the GPU opens and the
                // index is built (a file only: standard input could not be read again
                // by the CPU engine if the GPU failed to open).
                let early = if events_path.as_os_str() == "-" {
                    None
                } else {
                    Some(super::Reading::start_text(
                        events_path,
                        window,
                        parse_window,
                        super::AHEAD_WINDOWS,
                    )?)
                };
                // The pruning index over each window (smaller launches on the emulator),
                // partitioned on the host while the GPU opens; uploaded once it is open.
                let cfg = IndexConfig::for_gpu(source.is_gpu());
                let t = Instant::now();
                let plan = IndexPlan::new(tables, cfg);
                stats.add(
                    "partition the index",
                    t.elapsed(),
                    "(on the host, while the GPU opens)".into(),
                );
                let Some(dev) = source.get(&mut stats, subs_path)? else {
                    drop((plan, early));
                    break 'stream match_cpu(subs_path, events_path, cpu, window, &mut stats)?;
                };
                let t = Instant::now();
                let mut index = GpuIndex::from_plan(&dev, plan).map_err(|e| match e {
                    ccm::CcmError::Layout(l) => bad_input(l),
                    other => anyhow::Error::new(other),
                })?;
                dev.synchronize()?;
                if stage_threads > 0 {
                    index.set_encode_threads(stage_threads);
                }
                stats.add(
                    "upload the index",
                    t.elapsed(),
                    format!(
                        "(pruning index, {:.1} MB on the device)",
                        index.device_bytes() as f64 / 1e6
                    ),
                );
                // A few `Answers` for the whole stream, their page-locked areas reused: the
                // writer formats one where the device wrote it while the next window is
                // matched into another.
                let (back, given_back) = std::sync::mpsc::channel();
                let mut made = 0;
                let mut reading = match early {
                    Some(r) => r,
                    None => super::Reading::start_text(events_path, window, parse_window, 1)?,
                };
                // The launches' page-locked staging made before the stream, sized from
                // its first window (parsed while the GPU opened).
                if let Some(first) = reading.first() {
                    let t = Instant::now();
                    let made = index.prepare_for(&first.batch)?;
                    stats.add(
                        "page-locked staging",
                        t.elapsed(),
                        format!("({made} areas, made before the stream)"),
                    );
                }
                let done = reading.run(
                    |evs: &Events| {
                        let mut answers =
                            super::Lent::take(&mut made, ANSWERS_IN_FLIGHT, &given_back)?;
                        index.match_batch_into(&evs.batch, &mut answers)?;
                        Ok(super::Lent::new(answers, &back))
                    },
                    format,
                    &mut stats,
                )?;
                let t = index.take_timing();
                for (phase, d) in [
                    ("index: dictionaries", t.dictionaries),
                    ("index: stage events", t.stage),
                    ("index: copy events in", t.copy_in),
                    ("index: kernels", t.kernels),
                    ("index: answers out", t.answers),
                    ("index: kernels, device clock", t.device),
                ] {
                    stats.add(phase, d, format!("({} events)", t.events));
                }
                stats.add(
                    "index: staging not hidden",
                    t.waited,
                    format!(
                        "({} launches, {} with staging grown)",
                        t.launches, t.staging_grown
                    ),
                );
                stats.add(
                    "threads",
                    Duration::ZERO,
                    format!(
                        "({} parsing, {} staging)",
                        rayon::current_num_threads(),
                        match stage_threads {
                            0 => "the shared pool's".to_string(),
                            n => n.to_string(),
                        }
                    ),
                );
                super::keep_until_exit((index, given_back));
                super::keep_until_exit(dev);
                done
            }
            Some(source) => {
                // Smaller blocks on the emulator (fewer OS threads per block); same kernels.
                let cfg = match (source.is_gpu(), per_event) {
                    (_, true) => Config::low_latency(),
                    (true, false) => Config {
                        batch_tables: true,
                        ..Config::default()
                    },
                    (false, false) => Config {
                        batch_tables: true,
                        block: 64,
                        batch_events: 64,
                        batch_chunk: 16,
                        ..Config::default()
                    },
                };
                let tables = load_tables(subs_path, cfg.grouping, &mut stats)?;
                let Some(dev) = source.get(&mut stats, subs_path)? else {
                    drop(tables);
                    break 'stream match_cpu(subs_path, events_path, cpu, window, &mut stats)?;
                };
                let t = Instant::now();
                let mut ccm = Ccm::from_tables(&dev, tables, cfg).map_err(|e| match e {
                    ccm::CcmError::Layout(l) => bad_input(l),
                    other => anyhow::Error::new(other),
                })?;
                dev.synchronize()?;
                stats.add(
                    "upload tables",
                    t.elapsed(),
                    format!("({:.1} MB on the device)", ccm.device_bytes() as f64 / 1e6),
                );
                stream_text(
                    events_path,
                    window,
                    parse_window,
                    |evs: &Events| {
                        let evs = &evs.batch;
                        if per_event {
                            (0..evs.len())
                                .map(|i| ccm.match_event(&evs.event(i)).map_err(Into::into))
                                .collect()
                        } else {
                            Ok(ccm.match_batch(evs)?)
                        }
                    },
                    format,
                    &mut stats,
                )?
            }
        }
    };
    stats.print(done.events, "events", done.bytes, done.wall);
    bad_lines(&done)
}
