//! Users' own workloads: `harness ccm|clcb match`, `harness xml filter|generate`,
//! `harness ddm match`, `harness ccm|clcb|ddm generate`.
//!
//! What they share lives here: `-` for standard input, the note printed when the GPU
//! cannot be opened and a CPU engine is used instead, `--stats`, and the streaming of a
//! JSON Lines events file in windows ([`stream_text`]): the events of a window are read
//! and parsed (on all cores, from a thread of their own, while the previous window is matched),
//! matched as one batch, and their answers written in input order and flushed, so memory
//! is bounded by the subscriptions plus a few windows whatever the length of the stream,
//! and a reader of the pipe sees answers as they come.
//!
//! Bad input inside a stream: a bad event line is reported on standard error as
//! `file:line[:column]: reason`, its output line is `null` (blank lines are skipped, so
//! output line N answers the Nth event), the other events are matched, and the exit code is 2 at the
//! end. A bad XML document is reported the same way and skipped (each output line names
//! its document).

pub mod ccm;
pub mod clcb;
pub mod ddm;
pub mod xml;

use crate::bad_input;
use ::ccm::io::IoError;
use ::ccm::text::{TextReader, TextWindow};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The rule for bad input inside a stream, for `--help`.
pub const BAD_LINE_RULE: &str = "Blank lines are skipped (and counted in line numbers): output \
line N answers the Nth event. A bad event line is reported on standard error as \
file:line:column and the reason, and its output line is `null`; the other events are matched, \
and the exit code is 2 at the end. A subscriptions file is read to its end: every bad line is \
reported (the first 20, then a count) and the exit code is 2. `-` reads standard input.";

/// `--window` and `--stats`, shared by the streaming commands (a command may change the
/// window's default: `clcb match`'s is larger).
#[derive(clap::Args, Debug, Clone)]
pub struct StreamArgs {
    /// Events per window: each window is read and parsed, matched as one batch, then
    /// written and flushed, the three stages overlapping on consecutive windows. Memory
    /// holds a few windows, whatever the stream's length. The default is sized for
    /// throughput (the GPU engine's fixed costs per window spread over many events);
    /// 1 answers each event as soon as it arrives (interactive use). A window of 4096
    /// events or more is cut by bytes, sized from the mean line so far: it holds about
    /// that many events.
    #[arg(long, default_value_t = 65_536, value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub window: u64,
    /// Print times on standard error: loading, building the index, uploading, reading,
    /// matching and writing, with events (or MB) per second and the peak memory.
    #[arg(long)]
    pub stats: bool,
}

/// Checks the inputs before anything slow starts: at most one is standard input (`-`),
/// and every file exists (looked up, not opened: opening a named pipe would block).
pub fn check_inputs(paths: &[&Path]) -> anyhow::Result<()> {
    if paths.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
        return Err(bad_input(anyhow::anyhow!(
            "only one input can be standard input (`-`)"
        )));
    }
    for p in paths.iter().filter(|p| p.as_os_str() != "-") {
        std::fs::metadata(p).map_err(|source| {
            bad_input(::ccm::io::IoError::Read {
                file: p.to_path_buf(),
                source,
            })
        })?;
    }
    Ok(())
}

/// The one note printed when the GPU cannot be opened and a CPU engine is used instead:
/// the reason and what to do about it.
pub fn fallback_note(e: &gpu_kernels::GpuError, cpu: &str, gpu: &str) {
    eprintln!(
        "note: the GPU cannot be used ({e}); matching with the CPU engine `{cpu}` instead. \
         Pass `--engine {cpu}` to choose it (and drop this note), or `--engine {gpu}` to make \
         a missing GPU an error; on the GPU machine, see README.md \"On the GPU machine\"."
    );
}

/// A GPU being opened on a thread of its own while the command loads its input: creating
/// the context, loading the module and the driver's JIT of the PTX on a machine's first
/// run take 0.2-1 s, as long as loading a large input, and need nothing from it.
pub struct GpuOpening {
    present: std::sync::mpsc::Receiver<bool>,
    thread: std::thread::JoinHandle<Opened>,
}

/// What the opening thread hands back: the device (or why not), the opening's time, and
/// the phases of the warm-up that followed it.
type Opened = (
    Result<gpu_kernels::Device, gpu_kernels::GpuError>,
    Duration,
    Vec<WarmPhase>,
);

/// A phase of the work done on the opening thread once the device is open ([`Warm`]):
/// its name in `--stats`, its time and a note.
pub type WarmPhase = (&'static str, Duration, String);

/// Work on the freshly opened device, on the opening thread, before the command takes
/// the device: what the command would otherwise pay after its load (device memory
/// mapped, page-locked buffers made, first launches). Returns its phases for `--stats`
/// ("open: ..."); it must not fail the command (what it skips is done at first use).
pub type Warm = Box<dyn FnOnce(&gpu_kernels::Device) -> Vec<WarmPhase> + Send>;

/// Takes `bytes` of device memory into `dev`'s allocator pool
/// ([`gpu_kernels::Device::reserve`]) on an opening thread: the phase "open: device
/// memory taken", timed, its note the megabytes taken or why none were.
pub fn reserve_phase(dev: &gpu_kernels::Device, bytes: usize) -> WarmPhase {
    let t = Instant::now();
    let note = match dev.reserve(bytes) {
        Ok(true) => format!("({:.1} MB)", bytes as f64 / 1e6),
        Ok(false) => "(no stream-ordered allocator)".to_string(),
        Err(e) => format!("(not done: {e})"),
    };
    ("open: device memory taken", t.elapsed(), note)
}

impl GpuOpening {
    /// Starts opening GPU `ordinal` with the module `ptx` (a crate's `PTX`).
    pub fn start(ordinal: usize, ptx: &'static str) -> GpuOpening {
        GpuOpening::start_warmed(ordinal, ptx, Box::new(|_| Vec::new()))
    }

    /// [`GpuOpening::start`], then `warm` on the open device, on the same thread; not
    /// when the environment sets `HARNESS_NO_WARM` (to measure what the warm-up saves:
    /// its work is then paid at first use).
    pub fn start_warmed(ordinal: usize, ptx: &'static str, warm: Warm) -> GpuOpening {
        let warm = match std::env::var_os("HARNESS_NO_WARM") {
            Some(_) => Box::new(|_: &gpu_kernels::Device| Vec::new()),
            None => warm,
        };
        let (tx, present) = std::sync::mpsc::sync_channel(1);
        GpuOpening {
            present,
            thread: std::thread::spawn(move || {
                let t = Instant::now();
                let _ = tx.send(gpu_kernels::Device::gpu_count() > ordinal);
                let r = gpu_kernels::Device::gpu(ordinal, ptx);
                let took = t.elapsed();
                let phases = match &r {
                    Ok(dev) => warm(dev),
                    Err(_) => Vec::new(),
                };
                (r, took, phases)
            }),
        }
    }

    /// Whether the driver reports the GPU (known once the driver is initialised, before
    /// the context and the module): a command whose loading depends on the engine asks
    /// this first. The opening can still fail after a yes.
    pub fn present(&self) -> bool {
        self.present.recv().unwrap_or(false)
    }

    /// Whether a GPU is likely there, without waiting for the driver to start (which
    /// takes a tenth of a second or more): yes when the NVIDIA driver's files show one
    /// (`/proc/driver/nvidia/gpus`, `/dev/nvidiactl`), else the driver's own answer
    /// ([`GpuOpening::present`], quick when there is no driver). A command that guessed
    /// wrong still falls back when the opening fails.
    pub fn likely_present(&self) -> bool {
        let listed = Path::new("/proc/driver/nvidia/gpus")
            .read_dir()
            .is_ok_and(|mut d| d.next().is_some());
        listed || Path::new("/dev/nvidiactl").exists() || self.present()
    }

    /// The opened GPU, or why it could not be opened. `--stats` shows the opening's own
    /// time (which overlapped loading) split into the driver's start, the context and
    /// the module, the warm-up's phases, and how long the command then waited for it.
    pub fn wait(self, stats: &mut Stats) -> Result<gpu_kernels::Device, gpu_kernels::GpuError> {
        let t = Instant::now();
        let (r, took, warmed) = match self.thread.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        let split = match r.as_ref().ok().and_then(gpu_kernels::Device::open_times) {
            Some([driver, context, module]) => format!(
                ": driver started {:.3} s, context {:.3}, module {:.3}",
                driver.as_secs_f64(),
                context.as_secs_f64(),
                module.as_secs_f64()
            ),
            None => String::new(),
        };
        stats.add(
            "open the GPU",
            took,
            format!("(own thread, while the input loads{split})"),
        );
        for (phase, d, note) in warmed {
            stats.add(phase, d, note);
        }
        stats.add("waiting for the GPU", t.elapsed(), String::new());
        r
    }
}

/// Leaves a command's large structures (its subscriptions, its index, the GPU's context
/// and memory) to the end of the process instead of freeing them piece by piece once the
/// last answer is written: the operating system and the driver take them back at once.
/// (Freeing CLCB's 250k subscriptions and their index, 2.8 GB, took 0.45 s after the
/// output was complete, on an H200's host. Closing a GPU is not cheaper at exit: every
/// command that opened one spent 0.10-0.17 s after its last output, against 0.01-0.03 s
/// on the CPU engines; [`crate::exit`] leaves that release to a child process.)
pub fn keep_until_exit<T>(x: T) {
    std::mem::forget(x);
}

/// Warns (on standard error) that the subscriptions file `path` holds no subscription:
/// every event's answer will be `[]`, which is seldom what was meant.
pub fn warn_if_empty(path: &Path, subscriptions: usize) {
    if subscriptions == 0 {
        eprintln!(
            "warning: {}: no subscriptions (the file has no line that is not blank); every \
             event's answer is []",
            ::ccm::io::display_path(path).display()
        );
    }
}

/// The devices of `--devices`: the GPUs it names with `ptx` loaded (a list naming no GPU
/// of the machine is a usage error), or, when `emulated`, as many emulated devices as
/// ordinals named (`all`: one per GPU present, at least two).
pub fn devices_of(
    spec: &gpu_kernels::multi::DeviceSpec,
    ptx: &str,
    emulated: bool,
    stats: &mut Stats,
) -> anyhow::Result<gpu_kernels::multi::Devices> {
    use gpu_kernels::multi::{DeviceSpec, Devices};
    use gpu_kernels::{Device, GpuError};
    if emulated {
        return Ok(Devices::emulated(match spec {
            DeviceSpec::All => Device::gpu_count().max(2),
            DeviceSpec::Ordinals(o) => o.len(),
        })?);
    }
    stats.time("open the GPUs", || {
        Devices::open(spec, ptx).map_err(|e| match e {
            GpuError::NoDevice { .. } | GpuError::EmptyDeviceSet => {
                bad_input(anyhow::Error::new(e).context("--devices"))
            }
            other => anyhow::Error::new(other).context("opening the GPUs"),
        })
    })
}

/// Phase times for `--stats`, printed on standard error.
pub struct Stats {
    on: bool,
    phases: Vec<(String, Duration, String)>,
}

impl Stats {
    pub fn new(on: bool) -> Stats {
        Stats {
            on,
            phases: Vec::new(),
        }
    }

    /// Runs `f` as phase `name`.
    pub fn time<T>(&mut self, name: &str, f: impl FnOnce() -> T) -> T {
        let t0 = Instant::now();
        let r = f();
        self.add(name, t0.elapsed(), String::new());
        r
    }

    /// Adds `d` to phase `name` (created on first use), with a note.
    pub fn add(&mut self, name: &str, d: Duration, note: String) {
        if let Some(p) = self.phases.iter_mut().find(|p| p.0 == name) {
            p.1 += d;
            if !note.is_empty() {
                p.2 = note;
            }
        } else {
            self.phases.push((name.to_string(), d, note));
        }
    }

    /// Prints the phases, then the stream's throughput: `items` of `unit` and `bytes`
    /// of input in `wall`.
    pub fn print(&self, items: u64, unit: &str, bytes: u64, wall: Duration) {
        if !self.on {
            return;
        }
        for (name, d, note) in &self.phases {
            eprintln!("stats: {name:<24} {:>9.3} s  {note}", d.as_secs_f64());
        }
        let s = wall.as_secs_f64().max(1e-9);
        eprintln!(
            "stats: {:<24} {:>9.3} s  {items} {unit}, {:.0} {unit}/s, {:.1} MB/s of input",
            "stream (end to end)",
            s,
            items as f64 / s,
            bytes as f64 / 1e6 / s
        );
        if let Some(kb) = peak_rss_kb() {
            eprintln!("stats: {:<24} {:>9.1} MB", "peak RSS", kb as f64 / 1e3);
        }
        if let Some(t) = PROCESS_START.get() {
            eprintln!(
                "stats: {:<24} {:>9.3} s  (from the process's start to here; the rest of its wall time is its exit)",
                "process so far",
                t.elapsed().as_secs_f64()
            );
        }
    }
}

/// When the process started (set first thing in `main`), for `--stats`' "process so far".
pub static PROCESS_START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// The process's peak resident set (VmHWM), in kB, where /proc tells it.
pub fn peak_rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Appends `[a,b,c]` (ascending ids as given) to `out`.
pub fn write_ids(out: &mut Vec<u8>, ids: impl IntoIterator<Item = u32>) {
    let mut buf = itoa::Buffer::new();
    out.push(b'[');
    for (i, id) in ids.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(buf.format(id).as_bytes());
    }
    out.push(b']');
}

/// A parsed window: its good lines' events as the engine takes them, each bad line's
/// place in the window (from 0, ascending) with its message, and the bytes read.
pub struct Window<B> {
    pub good: B,
    pub bad: Vec<(usize, String)>,
    pub bytes: usize,
}

/// What a window's good events are held in ([`Window::good`]): a paper's flat batch.
pub trait Events: Send + 'static {
    /// Number of events.
    fn count(&self) -> usize;
}

impl Events for ::ccm::EventBatch {
    fn count(&self) -> usize {
        self.len()
    }
}

impl Events for ::clcb::batch::EventBatch {
    fn count(&self) -> usize {
        self.len()
    }
}

/// A window's batch that goes back to its parser when dropped (once matched and
/// written), to be parsed into again: `give_back` is the parser's
/// (`ccm::io::recycle_batch`, `clcb::io::recycle_batch`).
pub struct Recycled<B: Events + Default> {
    pub batch: B,
    give_back: fn(B),
}

impl<B: Events + Default> Recycled<B> {
    /// `batch`, given to `give_back` when dropped.
    pub fn new(batch: B, give_back: fn(B)) -> Recycled<B> {
        Recycled { batch, give_back }
    }
}

impl<B: Events + Default> Drop for Recycled<B> {
    fn drop(&mut self) {
        (self.give_back)(std::mem::take(&mut self.batch));
    }
}

impl<B: Events + Default> Events for Recycled<B> {
    fn count(&self) -> usize {
        self.batch.count()
    }
}

/// A window's answers as an engine gives them: per good event, in order, its ids
/// (ascending) as the command prints them or as `format` maps them.
pub trait Answered: Send + 'static {
    /// Number of events answered.
    fn count(&self) -> usize;
    /// Event `i`'s ids.
    fn ids(&self, i: usize) -> &[u32];
}

impl Answered for Vec<Vec<u32>> {
    fn count(&self) -> usize {
        self.len()
    }
    fn ids(&self, i: usize) -> &[u32] {
        &self[i]
    }
}

impl Answered for Vec<Vec<::ccm::InterfaceId>> {
    fn count(&self) -> usize {
        self.len()
    }
    fn ids(&self, i: usize) -> &[u32] {
        bytemuck::cast_slice(&self[i])
    }
}

/// A window's answers lent to the writer where the engine wrote them (no copy): dropped
/// once written, they go back ([`Lent::take`]) for a later window to be matched into,
/// their memory (page-locked areas a GPU engine writes) reused.
pub struct Lent<T: Send + 'static> {
    answers: Option<T>,
    back: std::sync::mpsc::Sender<T>,
}

impl<T: Default + Send + 'static> Lent<T> {
    /// Answers to match the next window into: some given back, else new ones while fewer
    /// than `most` are made (`made` counts them), else the next given back.
    pub fn take(
        made: &mut usize,
        most: usize,
        back: &std::sync::mpsc::Receiver<T>,
    ) -> anyhow::Result<T> {
        if let Ok(a) = back.try_recv() {
            return Ok(a);
        }
        if *made < most {
            *made += 1;
            return Ok(T::default());
        }
        back.recv()
            .map_err(|_| anyhow::anyhow!("the answers of a window were not given back"))
    }

    /// `answers`, lent: they go to `back` when dropped.
    pub fn new(answers: T, back: &std::sync::mpsc::Sender<T>) -> Lent<T> {
        Lent {
            answers: Some(answers),
            back: back.clone(),
        }
    }

    /// The answers.
    pub fn get(&self) -> Option<&T> {
        self.answers.as_ref()
    }
}

impl<T: Send + 'static> Drop for Lent<T> {
    fn drop(&mut self) {
        if let Some(a) = self.answers.take() {
            let _ = self.back.send(a);
        }
    }
}

/// Output lines a task of [`stream_text`]'s formatting takes.
const FORMAT_CHUNK: usize = 1024;

/// What [`stream_text`] did.
pub struct Streamed {
    pub events: u64,
    pub bad: u64,
    pub bytes: u64,
    pub wall: Duration,
}

/// A parser of a window given as its text ([`Reading::start_text`]): the window's lines
/// parsed, numbered from the given line, and how many lines it held (blank ones
/// included).
pub type ParseText<B> = fn(&Path, &TextWindow, usize) -> (Window<B>, usize);

/// Streams the JSON Lines file `path` (`-`: standard input) window by window: windows
/// of about `window` lines ([`Reading::start_text`]) parsed with `parse` (on all cores,
/// each task cutting its own part into lines) while the previous window is matched;
/// `matcher` matches a window's good events as one batch (one answer per event);
/// `format` appends an answer's ids to the output (without the line end), on all cores.
/// Each window's lines are written in input order (`null` for a bad line, which is
/// reported on standard error) and flushed. Bad lines make the result an error (exit code
/// 2) at the end, after every line is answered.
pub fn stream_text<B: Events, R: Answered + Sync>(
    path: &Path,
    window: usize,
    parse: ParseText<B>,
    matcher: impl FnMut(&B) -> anyhow::Result<R>,
    format: impl Fn(&[u32], &mut Vec<u8>) + Sync,
    stats: &mut Stats,
) -> anyhow::Result<Streamed> {
    Reading::start_text(path, window, parse, 1)?.run(matcher, format, stats)
}

/// Windows parsed ahead of matching by a stream started before its engine is ready
/// ([`Reading::start_text`]), such as `ccm match`'s while the GPU opens: at most this many
/// windows more in memory.
pub const AHEAD_WINDOWS: usize = 4;

/// [`stream_text`]'s first stage, the windows being read and parsed: started before the
/// engine is ready, so that the parsing of the first windows overlaps what the command
/// waits for (dropped unused, it stops).
pub struct Reading<B> {
    rx: std::sync::mpsc::Receiver<anyhow::Result<Window<B>>>,
    producer: std::thread::JoinHandle<(Duration, Duration)>,
    t0: Instant,
    /// Windows handed to the channel so far.
    sent: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// The first window, once [`Reading::first`] has taken it from the channel.
    first: Option<anyhow::Result<Window<B>>>,
}

impl<B: Events> Reading<B> {
    /// Starts reading the JSON Lines file `path` in windows of about `window` lines and
    /// parsing them with `parse`, at most `ahead` parsed windows waiting for the matcher.
    /// The parser cuts each window into lines itself ([`ParseText`]): a window is only
    /// the stream's bytes ([`TextWindow`]: a range of
    /// the file's map, without a copy, when it is a regular file), so that no thread
    /// walks every byte of the stream before the parsing on all cores.
    pub fn start_text(
        path: &Path,
        window: usize,
        parse: ParseText<B>,
        ahead: usize,
    ) -> anyhow::Result<Reading<B>> {
        let file: PathBuf = ::ccm::io::display_path(path);
        let mut reader = TextReader::open(path).map_err(bad_input)?;
        let mut line = 1;
        Ok(Reading::start_windows(
            ahead,
            move |text: &mut TextWindow| reader.read_window(window, text),
            TextWindow::is_empty,
            move |text: &mut TextWindow| {
                let (mut parsed, lines) = parse(&file, text, line);
                line += lines;
                parsed.bytes = text.len();
                // Not cleared here: the reading thread clears the window when it reads
                // into it again (letting its mapped pages go takes the kernel a while,
                // which the windows' parsing on all cores would wait for).
                parsed
            },
        ))
    }

    /// The two threads of a [`Reading`]: one reads windows with `read` (into one given
    /// back for reuse, else a fresh one) until one comes back empty (`is_empty`), beside
    /// the other, which parses each with `parse` (on all cores), sends it on and gives
    /// the window back. Not joined on an early return (an error writing the output): the
    /// threads may be blocked reading standard input, and end with the process.
    fn start_windows<W: Default + Send + 'static>(
        ahead: usize,
        mut read: impl FnMut(&mut W) -> Result<(), IoError> + Send + 'static,
        is_empty: fn(&W) -> bool,
        mut parse: impl FnMut(&mut W) -> Window<B> + Send + 'static,
    ) -> Reading<B> {
        let t0 = Instant::now();
        let (tx, rx) = std::sync::mpsc::sync_channel::<anyhow::Result<Window<B>>>(ahead.max(1));
        let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = std::sync::Arc::clone(&sent);
        let producer = std::thread::spawn(move || {
            let (raw_tx, raw_rx) = std::sync::mpsc::sync_channel::<Result<W, IoError>>(1);
            let (back_tx, back_rx) = std::sync::mpsc::channel::<W>();
            let reading = std::thread::spawn(move || {
                let mut busy = Duration::ZERO;
                loop {
                    let mut w = back_rx.try_recv().unwrap_or_default();
                    let t = Instant::now();
                    let r = read(&mut w);
                    busy += t.elapsed();
                    let sent = match r {
                        Ok(()) if is_empty(&w) => break,
                        Ok(()) => raw_tx.send(Ok(w)),
                        Err(e) => raw_tx.send(Err(e)),
                    };
                    if sent.is_err() {
                        break;
                    }
                }
                busy
            });
            let mut parsing = Duration::ZERO;
            for msg in raw_rx {
                let mut w = match msg {
                    Ok(w) => w,
                    Err(e) => {
                        let _ = tx.send(Err(bad_input(e)));
                        return (Duration::ZERO, parsing);
                    }
                };
                let t = Instant::now();
                let parsed = parse(&mut w);
                parsing += t.elapsed();
                let _ = back_tx.send(w);
                if tx.send(Ok(parsed)).is_err() {
                    return (Duration::ZERO, parsing);
                }
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            // The reader reached the end of the stream.
            (reading.join().unwrap_or_default(), parsing)
        });
        Reading {
            rx,
            producer,
            t0,
            sent,
            first: None,
        }
    }

    /// The first window's good events, waiting for it to be parsed (`None` for an empty
    /// stream, or an error, which [`Reading::run`] reports): what the engine can size its
    /// buffers from before the stream's time runs.
    pub fn first(&mut self) -> Option<&B> {
        if self.first.is_none() {
            self.first = Some(self.rx.recv().ok()?);
        }
        match &self.first {
            Some(Ok(w)) => Some(&w.good),
            _ => None,
        }
    }

    /// The rest of [`stream_text`]: each window matched by `matcher`, its answers
    /// formatted by `format` and written in input order. The stream's time runs from
    /// this call; `--stats` notes the windows parsed before it.
    pub fn run<R: Answered + Sync>(
        self,
        mut matcher: impl FnMut(&B) -> anyhow::Result<R>,
        format: impl Fn(&[u32], &mut Vec<u8>) + Sync,
        stats: &mut Stats,
    ) -> anyhow::Result<Streamed> {
        let Reading {
            rx,
            producer,
            t0: started,
            sent,
            mut first,
        } = self;
        // The stream's time runs from here, when matching can begin.
        let t0 = Instant::now();
        let ahead = sent.load(std::sync::atomic::Ordering::Relaxed);
        let mut done = Streamed {
            events: 0,
            bad: 0,
            bytes: 0,
            wall: Duration::ZERO,
        };
        let (mut t_match, mut waited) = (Duration::ZERO, Duration::ZERO);
        // A third stage: a writer thread formats and writes a window's answers while the
        // next window is matched.
        let t_write = std::thread::scope(|sc| -> anyhow::Result<Duration> {
            let (wtx, wrx) = std::sync::mpsc::sync_channel::<(Vec<Option<usize>>, R, B)>(1);
            let format = &format;
            let writer = sc.spawn(move || -> anyhow::Result<Duration> {
                let stdout = std::io::stdout();
                let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
                let mut took = Duration::ZERO;
                for (slots, answers, good) in wrx {
                    let t = Instant::now();
                    write_window(&mut out, &slots, &answers, format)?;
                    // Freeing a window's events is left to the pool, off this path.
                    rayon::spawn(move || drop((good, answers)));
                    took += t.elapsed();
                }
                Ok(took)
            });
            let matched = (|| -> anyhow::Result<()> {
                loop {
                    let t = Instant::now();
                    let Some(msg) = first.take().or_else(|| rx.recv().ok()) else {
                        return Ok(());
                    };
                    waited += t.elapsed();
                    let w = msg?;
                    done.bytes += w.bytes as u64;
                    let lines = w.good.count() + w.bad.len();
                    done.events += lines as u64;
                    done.bad += w.bad.len() as u64;
                    // Each line's slot: its event's index among the good ones, or `None` for
                    // a bad line (reported here, in input order).
                    let mut slots: Vec<Option<usize>> = Vec::with_capacity(lines);
                    let (mut bad, mut next) = (w.bad.iter().peekable(), 0);
                    for i in 0..lines {
                        match bad.next_if(|b| b.0 == i) {
                            Some((_, m)) => {
                                eprintln!("{m}");
                                slots.push(None);
                            }
                            None => {
                                slots.push(Some(next));
                                next += 1;
                            }
                        }
                    }
                    let good = w.good;
                    let t = Instant::now();
                    let answers = matcher(&good)?;
                    anyhow::ensure!(
                        answers.count() == good.count(),
                        "the engine gave {} answers for {} events",
                        answers.count(),
                        good.count()
                    );
                    t_match += t.elapsed();
                    if wtx.send((slots, answers, good)).is_err() {
                        // The writer stopped on an error: it is returned below.
                        return Ok(());
                    }
                }
            })();
            drop(wtx);
            let written = writer
                .join()
                .map_err(|_| anyhow::anyhow!("the writer thread panicked"))?;
            matched?;
            written
        })?;
        let (reading, parsing) = producer.join().unwrap_or_default();
        done.wall = t0.elapsed();
        stats.add(
            "read events",
            reading,
            "(reader thread, overlaps parsing)".into(),
        );
        stats.add(
            "parse events",
            parsing,
            "(parser thread on all cores, overlaps matching)".into(),
        );
        stats.add("waiting for input", waited, String::new());
        stats.add("match", t_match, String::new());
        stats.add(
            "format + write",
            t_write,
            "(writer thread, overlaps matching)".into(),
        );
        if ahead > 0 {
            stats.add(
                "parsed ahead",
                Duration::ZERO,
                format!(
                    "({ahead} window(s) parsed before matching began, in the {:.3} s the engine \
                 took to be ready: not in the stream's time)",
                    (t0 - started).as_secs_f64()
                ),
            );
        }
        Ok(done)
    }
}

/// Writes a window's output lines to `out` and flushes: per line its answer (`slots`:
/// its index in `answers`) formatted by `format`, or `null` for a bad line. The lines
/// are formatted on all cores in chunks, each into its own buffer, written in order.
fn write_window<R: Answered + Sync>(
    out: &mut impl std::io::Write,
    slots: &[Option<usize>],
    answers: &R,
    format: &(impl Fn(&[u32], &mut Vec<u8>) + Sync),
) -> std::io::Result<()> {
    let chunks: Vec<Vec<u8>> = slots
        .par_chunks(FORMAT_CHUNK)
        .map(|c| {
            let mut b = Vec::with_capacity(c.len() * 8);
            for slot in c {
                match slot {
                    Some(i) => format(answers.ids(*i), &mut b),
                    None => b.extend_from_slice(b"null"),
                }
                b.push(b'\n');
            }
            b
        })
        .collect();
    for c in &chunks {
        out.write_all(c)?;
    }
    out.flush()
}

/// The error for a stream with bad lines (exit code 2), after all of them are answered.
pub fn bad_lines(s: &Streamed) -> anyhow::Result<()> {
    if s.bad > 0 {
        return Err(bad_input(anyhow::anyhow!(
            "{} of {} event line(s) were bad (reported above; their output lines are `null`)",
            s.bad,
            s.events
        )));
    }
    Ok(())
}

/// Creates `path` for writing (buffered), naming it in the error.
pub fn create(path: &Path) -> anyhow::Result<std::io::BufWriter<std::fs::File>> {
    use anyhow::Context as _;
    std::fs::File::create(path)
        .map(std::io::BufWriter::new)
        .with_context(|| format!("{}: cannot create", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers lent to the writer come back when dropped, and are reused before new
    /// ones are made; no more than the most are made.
    #[test]
    fn lent_answers_come_back_and_are_reused() {
        let (back, given_back) = std::sync::mpsc::channel::<Vec<u32>>();
        let mut made = 0;
        let a = Lent::take(&mut made, 2, &given_back).unwrap();
        let mut b = Lent::take(&mut made, 2, &given_back).unwrap();
        assert_eq!(made, 2);
        b.push(7);
        drop(Lent::new(b, &back));
        drop(a);
        // The one given back, not a third.
        assert_eq!(Lent::take(&mut made, 2, &given_back).unwrap(), [7]);
        assert_eq!(made, 2);
        let ids: Vec<Vec<::ccm::InterfaceId>> =
            vec![vec![::ccm::InterfaceId(4), ::ccm::InterfaceId(9)]];
        assert_eq!(ids.ids(0), [4, 9]);
    }
}
