//! `harness xml filter` and `harness xml generate`: holistic XML twig filtering
//! (Absalyamov, Moussalli, Najjar & Tsotras) on the user's own documents and queries,
//! and the paper's workloads (§5) written out as files.

use super::{fallback_note, write_ids, Stats};
use crate::bad_input;
use crate::engines::XmlEngine;
use baselines::lazy_dfa::LazyDfa;
use baselines::yfilter::Yfilter;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use xml_twig::engine::segment_events;
use xml_twig::workload::{DblpGenerator, QueryGenerator, QueryParams};
use xml_twig::{
    io, Device, DfaEngine, Document, Engine, EngineConfig, KernelKind, Matches, MultiFilter,
    ProfileSet,
};

/// The rule for bad documents, for `--help`.
const BAD_DOCUMENT_RULE: &str = "A document that cannot be read, or is not well-formed XML, or \
is in an unsupported encoding, is reported on standard error as file:line:column and the reason, \
and skipped (it has no output line); the other documents are filtered, and the exit code is 2 at \
the end. Documents are read and filtered in windows (--window), so memory holds a few windows \
whatever the number of documents. Encodings: UTF-8, UTF-16 (LE/BE) and those of the WHATWG \
Encoding Standard named by the XML declaration (ISO-8859-1, windows-1252, Shift_JIS, ...). \
`-` reads standard input (one document, or the query file).";

/// `harness xml ...`: the user's own workloads.
#[derive(clap::Subcommand, Debug)]
pub enum Cmd {
    /// Filter XML documents against twig queries; one JSON line per document:
    /// `{"doc": "<path>", "matches": [query ids ascending]}`. Query ids are 0-based line
    /// numbers of the query file.
    #[command(after_help = BAD_DOCUMENT_RULE)]
    Filter {
        /// Query file (`-`: standard input): one twig per line (e.g.
        /// `/dblp/article[author][.//year]//title`).
        #[arg(long)]
        queries: String,
        /// Default: lazy-dfa, the strongest CPU filter, on documents of less than 256 MiB
        /// in all (measured faster end to end up to 102 MB); else gpu when a GPU can be opened,
        /// else lazy-dfa (with a note saying why). gpu-dfa: the lazy DFA's automaton learned on a
        /// thread of its own from the first documents (their first MB, grown ahead along
        /// their tag grammar) while lazy-dfa filters, then walked on the GPU; the
        /// documents it cannot finish go to lazy-dfa on --threads.
        #[arg(long, value_enum)]
        engine: Option<XmlEngine>,
        /// yfilter, lazy-dfa (and gpu-dfa's documents handed back): filter documents on
        /// this many threads (default: every core; lazy-dfa splits a window of one long
        /// document into segments of events).
        #[arg(long)]
        threads: Option<usize>,
        /// Documents per window (a window also ends at 64 MB of documents): each window is
        /// read, filtered as one batch, written and flushed before the next.
        #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        window: u64,
        /// Print times on standard error (loading, compiling, uploading, reading, filtering,
        /// writing), with documents and MB per second and the peak memory.
        #[arg(long)]
        stats: bool,
        /// GPU ordinal.
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// The kernels over several GPUs (`all` or ordinals such as `0,1`; overrides
        /// --device): each window's documents cut over them by bytes, every query on
        /// each. With --engine emu, as many emulated devices as ordinals named (`all`:
        /// one per GPU present, at least two).
        #[arg(long)]
        devices: Option<gpu_kernels::multi::DeviceSpec>,
        /// XML documents (`-`: one document from standard input).
        #[arg(required = true)]
        docs: Vec<String>,
    },
    /// Write one of the paper's workloads (§5) as files: DIR/queries.txt (one twig per
    /// line) and DIR/doc-NNNNN.xml, so that `xml filter --queries DIR/queries.txt
    /// DIR/doc-*.xml` reruns it. With --figure, the figure's fixed parameters and its
    /// document seed are used, as `harness run xml <figure>` does at that point (--quick:
    /// at its quick sizes); the other flags pick the point.
    Generate {
        /// Output directory (created).
        #[arg(long)]
        out: PathBuf,
        /// The experiment whose workload to write (default: custom, every parameter from
        /// the flags, documents seeded with --seed).
        #[arg(long, value_enum, default_value_t = Figure::Custom)]
        figure: Figure,
        /// Number of queries (fig7, fig9, fig10: the x axis; fig8: 256, fig11: 128).
        #[arg(long)]
        queries: Option<usize>,
        /// Query length in nodes: 5, 10 or 15 (fig7, fig9, fig11: a series or the x axis;
        /// fig8: 10, fig10: 5).
        #[arg(long)]
        length: Option<usize>,
        /// Probability of `*` and of `//` at each step (fig8: a series; fig7: 0.3, fig9,
        /// fig10: 0.5, fig11: 0.1).
        #[arg(long)]
        p: Option<f64>,
        /// Split points of a query (default: the paper's for the length: 1, 3 or 6).
        #[arg(long)]
        splits: Option<usize>,
        /// Number of documents (fig7, fig8: 1; fig9, fig10a, fig11a: 500; fig10b, fig11b: 1000).
        #[arg(long)]
        docs: Option<usize>,
        /// Size of each document in kB (fig8: the x axis; fig7: 1024; batches: 25 kB).
        #[arg(long)]
        doc_kb: Option<usize>,
        /// The experiment's seed (its first is 1).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The sizes `harness run --quick` uses (fewer queries and documents, small documents).
        #[arg(long)]
        quick: bool,
    },
}

/// The experiments whose workloads `xml generate --figure` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Figure {
    Fig7,
    Fig8,
    Fig9,
    Fig10a,
    Fig10b,
    Fig11a,
    Fig11b,
    Custom,
}

pub fn run_cmd(cmd: Cmd) -> anyhow::Result<()> {
    match cmd {
        Cmd::Filter {
            queries,
            engine,
            threads,
            window,
            stats,
            device,
            devices,
            docs,
        } => filter_cmd(
            &queries,
            engine,
            threads,
            window as usize,
            stats,
            (device, devices),
            docs,
        ),
        Cmd::Generate {
            out,
            figure,
            queries,
            length,
            p,
            splits,
            docs,
            doc_kb,
            seed,
            quick,
        } => {
            let w = Workload::of(
                figure, queries, length, p, splits, docs, doc_kb, seed, quick,
            )?;
            w.write(&out)
        }
    }
}

/// One workload of §5: queries and documents, and their seeds.
#[derive(Debug, PartialEq)]
struct Workload {
    params: QueryParams,
    queries: usize,
    query_seed: u64,
    docs: usize,
    doc_bytes: usize,
    doc_seed: u64,
}

impl Workload {
    /// The workload of `figure` at the point the flags pick; the fixed parameters and the
    /// document seed of each figure are those of `papers::xml` (fig7 ... fig11b).
    #[allow(clippy::too_many_arguments)]
    fn of(
        figure: Figure,
        queries: Option<usize>,
        length: Option<usize>,
        p: Option<f64>,
        splits: Option<usize>,
        docs: Option<usize>,
        doc_kb: Option<usize>,
        seed: u64,
        quick: bool,
    ) -> anyhow::Result<Workload> {
        // (queries, length, p, docs, kB per document (0: the batch size), document seed)
        let (q, len, pp, n, kb, doc_seed) = match figure {
            Figure::Fig7 => (512, 10, 0.3, 1, 1024, seed ^ 0x5eed),
            Figure::Fig8 => {
                let kb = doc_kb.unwrap_or(256);
                (256, 10, 0.3, 1, kb, seed ^ kb as u64)
            }
            Figure::Fig9 => (512, 10, 0.5, 500, 0, seed ^ 0xba7c),
            Figure::Fig10a => (512, 5, 0.5, 500, 0, seed ^ 0x10),
            Figure::Fig10b => (512, 5, 0.5, 1000, 0, seed ^ 0x10),
            Figure::Fig11a => (128, 10, 0.1, 500, 0, seed ^ 0x11),
            Figure::Fig11b => (128, 10, 0.1, 1000, 0, seed ^ 0x11),
            Figure::Custom => (256, 10, 0.3, 1, 256, seed),
        };
        let fixed = |what: &str, given: bool| -> anyhow::Result<()> {
            if given {
                return Err(bad_input(anyhow::anyhow!(
                    "{figure:?} fixes {what}; leave out that flag (or use --figure custom)"
                )));
            }
            Ok(())
        };
        let custom = figure == Figure::Custom;
        if !custom {
            fixed("the number of documents", docs.is_some())?;
            fixed("the split points", splits.is_some())?;
        }
        if matches!(figure, Figure::Fig8 | Figure::Fig11a | Figure::Fig11b) {
            fixed("the number of queries", queries.is_some())?;
        }
        if matches!(figure, Figure::Fig8 | Figure::Fig10a | Figure::Fig10b) {
            fixed("the query length", length.is_some())?;
        }
        if !matches!(figure, Figure::Fig8 | Figure::Custom) {
            fixed("the share of * and //", p.is_some())?;
            fixed("the document size", doc_kb.is_some())?;
        }
        let len = length.unwrap_or(len);
        let p = p.unwrap_or(pp);
        if !(0.0..=1.0).contains(&p) || len == 0 {
            return Err(bad_input(anyhow::anyhow!(
                "--length must be at least 1 and --p within 0..=1"
            )));
        }
        let mut params = QueryParams::paper(len, p);
        if let Some(s) = splits {
            params.splits = s;
        }
        let q = queries.unwrap_or(q);
        let n = docs.unwrap_or(n);
        let kb = if custom { doc_kb.unwrap_or(kb) } else { kb };
        // The experiments' sizes (papers::xml::Sizes), full or quick.
        let queries = if quick { (q / 32).max(2) } else { q };
        let docs = if quick && n > 1 { (n / 250).max(2) } else { n };
        let doc_bytes = match (kb, quick) {
            (0, false) => 25_000,
            (0, true) => 1_000,
            (kb, false) => kb * 1024,
            (kb, true) => kb.max(512),
        };
        Ok(Workload {
            params,
            queries,
            query_seed: seed,
            docs,
            doc_bytes,
            doc_seed,
        })
    }

    /// Writes `dir/queries.txt` and the documents.
    fn write(&self, dir: &std::path::Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| {
            anyhow::Error::new(e).context(format!("{}: cannot create", dir.display()))
        })?;
        let mut q = super::create(&dir.join("queries.txt"))?;
        for query in QueryGenerator::new(self.params.clone(), self.query_seed).queries(self.queries)
        {
            writeln!(q, "{query}")?;
        }
        q.flush()?;
        let mut g = DblpGenerator::new(self.doc_seed);
        for i in 0..self.docs {
            let mut d = super::create(&dir.join(format!("doc-{i:05}.xml")))?;
            d.write_all(g.document(self.doc_bytes).as_bytes())?;
            d.flush()?;
        }
        Ok(())
    }
}

/// A window of documents: each path with its document or the error's message.
struct DocWindow {
    docs: Vec<(String, Result<Document, String>)>,
    bytes: usize,
}

/// A window ends at this many bytes of documents (or `--window` documents).
const WINDOW_BYTES: usize = 64 << 20;

fn filter_cmd(
    queries: &str,
    engine: Option<XmlEngine>,
    threads: Option<usize>,
    window: usize,
    stats_on: bool,
    (device, devices): (usize, Option<gpu_kernels::multi::DeviceSpec>),
    paths: Vec<String>,
) -> anyhow::Result<()> {
    let stdin_inputs =
        usize::from(queries == "-") + paths.iter().filter(|p| p.as_str() == "-").count();
    if stdin_inputs > 1 {
        return Err(bad_input(anyhow::anyhow!(
            "only one input can be standard input (`-`)"
        )));
    }
    let mut stats = Stats::new(stats_on);
    // The default engine on small files: the CPU's, which answers before the GPU is open.
    let engine = match engine {
        None if devices.is_none() && small_input(&paths) => {
            stats.add(
                "default engine",
                Duration::ZERO,
                format!(
                    "(lazy-dfa: documents under {} MiB in all are filtered on the CPU, \
                     faster end to end than the GPU; --engine gpu for the GPU)",
                    CPU_BELOW_BYTES >> 20
                ),
            );
            Some(XmlEngine::LazyDfa)
        }
        e => e,
    };
    // The GPU opens on its own thread while the queries load and the documents are read.
    let gpu_engine = !matches!(
        engine,
        Some(XmlEngine::Yfilter | XmlEngine::LazyDfa | XmlEngine::Emu)
    );
    let opening =
        (devices.is_none() && gpu_engine).then(|| super::GpuOpening::start(device, xml_twig::PTX));
    let t = Instant::now();
    let qname = if queries == "-" { "<stdin>" } else { queries };
    let bytes = io::read_file(queries).map_err(bad_input)?;
    let text = String::from_utf8(bytes.into_vec())
        .map_err(|_| bad_input(anyhow::anyhow!("{qname}: not valid UTF-8")))?;
    let set = io::parse_query_file(qname, &text).map_err(bad_input)?;
    stats.add(
        "load queries",
        t.elapsed(),
        format!("({} queries)", set.len()),
    );
    let profiles = stats.time("compile queries", || ProfileSet::compile(&set));
    let profiles = profiles.map_err(bad_input)?;
    let y = Yfilter::new(&profiles);
    // The reader thread: reads and parses a window of documents (in parallel, and a long
    // document in parts on all cores) while the previous one is filtered. Not joined on an early return (it ends with the process).
    let dict = profiles.dict.clone();
    let (tx, rx) = std::sync::mpsc::sync_channel::<DocWindow>(1);
    let t0 = Instant::now();
    let producer = std::thread::spawn(move || {
        use rayon::prelude::*;
        let mut busy = Duration::ZERO;
        let mut next = paths.into_iter().peekable();
        while next.peek().is_some() {
            let t = Instant::now();
            let mut raw = Vec::new();
            let mut bytes = 0;
            while raw.len() < window && bytes < WINDOW_BYTES {
                let Some(p) = next.next() else { break };
                let r = io::read_file(&p).map_err(|e| format!("{:#}", anyhow::Error::new(e)));
                bytes += r.as_ref().map_or(0, |b| b.len());
                raw.push((p, r));
            }
            let docs: Vec<(String, Result<Document, String>)> = raw
                .into_par_iter()
                .map(|(p, r)| {
                    let name = if p == "-" { "<stdin>" } else { p.as_str() };
                    let d = r.and_then(|b| {
                        io::parse_document_parallel(name, &b[..], &dict).map_err(|e| e.to_string())
                    });
                    (p, d)
                })
                .collect();
            busy += t.elapsed();
            if tx.send(DocWindow { docs, bytes }).is_err() {
                break;
            }
        }
        busy
    });
    // The device's tables are built while the reader parses the first window (the lazy
    // DFA's warm path: on the first window's documents).
    let mut warm = None;
    let mut kernels = match (devices, engine) {
        (Some(spec), _) => Some(multi_kernels(&spec, engine, &profiles, &mut stats)?),
        (None, Some(XmlEngine::GpuDfa)) => {
            // The GPU keeps opening on its own thread until the first tables are ready
            // (the first windows run on the CPU meanwhile); a missing GPU is an error now.
            // Asked without waiting for the driver to start (a tenth of a second, which
            // the first window's filtering would wait for); a GPU listed that then fails
            // to open leaves the stream to the CPU with a note (`WarmFilter::settle`).
            let gpu = match opening {
                Some(o) if o.likely_present() => Gpu::Opening(o),
                Some(o) => Gpu::Open(o.wait(&mut stats)),
                None => Gpu::Open(Device::gpu(device, xml_twig::PTX)),
            };
            if let Gpu::Open(Err(e)) = gpu {
                return Err(anyhow::Error::new(e)
                    .context("opening the GPU (use --engine lazy-dfa for the CPU)"));
            }
            warm = Some(WarmFilter::new(gpu, &profiles));
            None
        }
        (None, _) => one_device_kernels((opening, device), engine, &profiles, &mut stats)?,
    };
    // Without a GPU, the strongest CPU filter (on every core unless --threads says).
    let engine = engine.or(kernels.is_none().then_some(XmlEngine::LazyDfa));
    let threads = Some(
        threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
    );
    // The lazy DFA keeps its caches across windows: later windows find them warm.
    let lazy = matches!(engine, Some(XmlEngine::LazyDfa | XmlEngine::GpuDfa))
        .then(|| LazyDfa::new(&profiles));
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    let mut buf = Vec::new();
    let (mut n_docs, mut n_bad, mut n_bytes) = (0u64, 0u64, 0u64);
    let (mut t_filter, mut t_write) = (Duration::ZERO, Duration::ZERO);
    for w in rx {
        n_bytes += w.bytes as u64;
        let mut good = Vec::with_capacity(w.docs.len());
        let mut names = Vec::with_capacity(w.docs.len());
        for (p, d) in w.docs {
            n_docs += 1;
            match d {
                Ok(d) => {
                    good.push(d);
                    names.push(p);
                }
                Err(m) => {
                    n_bad += 1;
                    eprintln!("{m}");
                }
            }
        }
        let t = Instant::now();
        let results = match (kernels.as_mut(), warm.as_mut(), &lazy) {
            (Some(k), _, _) => run_kernels(k, &good, &y)?,
            (None, Some(w), Some(dfa)) => w.filter(dfa, &good, threads, &mut stats)?,
            (None, _, Some(dfa)) => run_lazy_dfa(dfa, &good, threads)?,
            (None, _, None) => run_yfilter(&y, &good, threads)?,
        };
        t_filter += t.elapsed();
        let t = Instant::now();
        buf.clear();
        for (p, m) in names.iter().zip(&results) {
            buf.extend_from_slice(b"{\"doc\":");
            serde_json::to_writer(&mut buf, p)?;
            buf.extend_from_slice(b",\"matches\":");
            write_ids(&mut buf, m.iter().copied());
            buf.extend_from_slice(b"}\n");
        }
        out.write_all(&buf)?;
        out.flush()?;
        t_write += t.elapsed();
    }
    let busy = producer.join().unwrap_or_default();
    stats.add(
        "read + parse documents",
        busy,
        "(reader thread, overlaps filtering)".into(),
    );
    let automaton = lazy.as_ref().map_or(String::new(), |dfa| {
        let s = dfa.stats();
        format!(
            "(lazy DFA: {} states, {} leaf bundles, {:.1} MB, {} NFA fallbacks)",
            s.dfa_states,
            s.closes,
            s.bytes as f64 / 1e6,
            s.nfa_fallbacks
        )
    });
    if let Some(w) = &warm {
        stats.add(
            "learn automaton",
            w.learn,
            format!(
                "(own thread, beside filtering: {} states on the GPU, grown {} time(s) after the first)",
                w.states, w.regrowths
            ),
        );
        stats.add(
            "GPU calls",
            w.on_gpu,
            format!(
                "(inside filter; on the CPU: {} window(s) before the automaton, {} document(s) handed back, {:.3} s)",
                w.cpu_windows,
                w.back,
                w.on_cpu.as_secs_f64()
            ),
        );
    }
    stats.add("filter", t_filter, automaton);
    stats.add("format + write", t_write, String::new());
    stats.print(n_docs, "documents", n_bytes, t0.elapsed());
    // The GPU's tables and context go with the process (see `keep_until_exit`).
    super::keep_until_exit((kernels, warm));
    if n_bad > 0 {
        return Err(bad_input(anyhow::anyhow!(
            "{n_bad} of {n_docs} document(s) were bad (reported above; skipped)"
        )));
    }
    Ok(())
}

/// Bytes of documents in all below which the default engine is `lazy-dfa` on every core:
/// on an H200 with 16 host cores, the GPU took 0.21-0.23 s to open (driver cache warm)
/// and about 0.11 s more to close at the process's exit, while `lazy-dfa` answered 1000
/// documents of Fig. 10b (28 MB, 2000 twigs) in 0.07-0.11 s and one document of 102 MB
/// (256 twigs) in 0.19-0.25 s, each whole command faster than on the GPU (0.37 s; 0.38-0.43
/// s with `gpu-seg`, 0.40 s with `gpu`). Larger inputs go to the GPU: later, with the GPU
/// opening in 0.17-0.33 s, the two drew level at 274 MB (10,000 documents of Fig. 10b's
/// kind: `lazy-dfa` 0.53-0.61 s, `gpu` 0.55-0.61 s) and the GPU led at 977 MB (ten
/// documents of 98 MB: `gpu-seg` 0.47-0.55 s, `lazy-dfa` 0.64-0.71 s; `docs/xml.md`).
const CPU_BELOW_BYTES: u64 = 256 << 20;

/// Whether the documents `paths` are files of less than [`CPU_BELOW_BYTES`] in all
/// (standard input, or a file that cannot be looked up: no).
fn small_input(paths: &[String]) -> bool {
    let mut total = 0u64;
    for p in paths {
        match std::fs::metadata(p) {
            Ok(m) if p != "-" && m.is_file() => total += m.len(),
            _ => return false,
        }
        if total >= CPU_BELOW_BYTES {
            return false;
        }
    }
    true
}

/// The kernels of `xml filter` on one device (`None`: a CPU engine, asked for or the
/// fallback without a GPU); `opening`: GPU `device` being opened, for the GPU engines
/// (opened here when it is not).
fn one_device_kernels(
    (opening, device): (Option<super::GpuOpening>, usize),
    engine: Option<XmlEngine>,
    profiles: &ProfileSet,
    stats: &mut Stats,
) -> anyhow::Result<Option<Kernels>> {
    let kernel = |k| (k, false);
    let opened = |stats: &mut Stats| match opening {
        Some(o) => o.wait(stats),
        None => Device::gpu(device, xml_twig::PTX),
    };
    let (dev, kind) = match engine {
        Some(XmlEngine::Yfilter) | Some(XmlEngine::LazyDfa) => (None, None),
        Some(XmlEngine::Emu) => (Some(Device::emulator()), Some(kernel(KernelKind::Auto))),
        Some(e) => {
            let d = opened(stats).map_err(|e| {
                anyhow::Error::new(e).context("opening the GPU (use --engine lazy-dfa for the CPU)")
            })?;
            let k = match e {
                XmlEngine::GpuBlock => (KernelKind::Block, false),
                XmlEngine::GpuSeg => (KernelKind::Auto, true),
                _ => (KernelKind::Auto, false),
            };
            (Some(d), Some(k))
        }
        None => match opened(stats) {
            Ok(d) => (Some(d), Some(kernel(KernelKind::Auto))),
            Err(e) => {
                fallback_note(&e, "lazy-dfa", "gpu");
                (None, None)
            }
        },
    };
    Ok(match (dev, kind) {
        (Some(dev), Some((kernel, segmented))) => {
            let t = Instant::now();
            let e = Engine::new(
                dev,
                profiles,
                EngineConfig {
                    kernel,
                    ..EngineConfig::default()
                },
            )?;
            e.device().synchronize()?;
            stats.add("build + upload tables", t.elapsed(), String::new());
            Some(Kernels::One(Box::new(e), segmented))
        }
        _ => None,
    })
}

/// `xml filter --devices`: the kernels with each window's documents cut over the
/// devices ([`MultiFilter`]).
fn multi_kernels(
    spec: &gpu_kernels::multi::DeviceSpec,
    engine: Option<XmlEngine>,
    profiles: &ProfileSet,
    stats: &mut Stats,
) -> anyhow::Result<Kernels> {
    let (kernel, emulated) = match engine {
        None | Some(XmlEngine::Gpu) => (KernelKind::Auto, false),
        Some(XmlEngine::GpuBlock) => (KernelKind::Block, false),
        Some(XmlEngine::Emu) => (KernelKind::Auto, true),
        Some(other) => {
            return Err(bad_input(anyhow::anyhow!(
                "--devices runs the whole-document kernels (gpu, gpu-block, emu), not {}",
                crate::engines::name(&other)
            )))
        }
    };
    let devs = super::devices_of(spec, xml_twig::PTX, emulated, stats)?;
    let t = Instant::now();
    let cfg = EngineConfig {
        kernel,
        ..EngineConfig::default()
    };
    let m = MultiFilter::new(devs, profiles, cfg)?;
    stats.add("build + upload tables", t.elapsed(), String::new());
    Ok(Kernels::Multi(m))
}

/// The kernels `xml filter` runs: on one device (whole documents, or segments), or over
/// several.
enum Kernels {
    One(Box<Engine>, bool),
    Multi(MultiFilter),
}

impl Kernels {
    /// The deepest document the kernels filter.
    fn max_depth(&self) -> u32 {
        match self {
            Kernels::One(e, _) => e.max_depth(),
            Kernels::Multi(m) => m.max_depth(),
        }
    }

    /// Whole documents filtered (the segments are [`run_kernels`]'s).
    fn filter(&mut self, docs: &[Document]) -> anyhow::Result<Vec<Matches>> {
        Ok(match self {
            Kernels::One(e, _) => e.filter(docs)?,
            Kernels::Multi(m) => m.filter(docs)?,
        })
    }
}

/// Bytes of the first documents the warm path's automaton learns from.
const TRAINING_BYTES: usize = 1 << 20;

/// DFA states the automaton is grown by ahead of the stream, at most (a quarter of it
/// at each later growth; it stops earlier at half the lazy DFA's memory bound).
const GROWN_STATES: usize = 1 << 14;

/// Times the automaton is grown again after a window that handed back more than 1% of
/// its documents.
const MAX_REGROWTHS: usize = 4;

/// `xml filter --engine gpu-dfa`: the lazy DFA's warm path on the GPU ([`DfaEngine`]).
/// The automaton is learned on a thread of its own from the stream's first
/// [`TRAINING_BYTES`] (a long document's first events standing for them, its open
/// elements closed): trained, grown ahead along their tag grammar ([`LazyDfa::complete`],
/// to two levels deeper than they go, by at most [`GROWN_STATES`] states) and exported.
/// Until it is uploaded, windows are filtered by the lazy DFA on the CPU; then every
/// window is walked on the GPU, and the documents it hands back (a transition not
/// built, or deeper than its stack) are filtered by the lazy DFA on the CPU. A window
/// that hands back more than 1% of its documents has the learner grow the automaton by
/// their paths, again on its own thread, and the first window after it is done runs on
/// the new tables (at most [`MAX_REGROWTHS`] times). So a short stream costs about what
/// `lazy-dfa` does (the learner takes one core), and a long one runs on the GPU.
struct WarmFilter {
    /// The device until the first tables are uploaded (opening on its own thread, or
    /// open), then [`Gpu::Given`].
    gpu: Gpu,
    engine: Option<DfaEngine>,
    profiles: ProfileSet,
    /// The learner at work, and its automaton and cache between growths.
    learner: Option<std::thread::JoinHandle<Learned>>,
    grown: Option<(LazyDfa, baselines::lazy_dfa::Cache)>,
    /// How deep the automaton is grown.
    depth: usize,
    regrowths: usize,
    states: usize,
    /// The query set's accumulator is too wide for the automaton, or the GPU did not
    /// open: the CPU filters all.
    too_wide: bool,
    /// The learners' own time, the GPU's calls, the windows filtered on the CPU before
    /// the first tables, the documents handed back and the CPU's time on both.
    learn: Duration,
    on_gpu: Duration,
    cpu_windows: usize,
    back: usize,
    on_cpu: Duration,
}

/// The GPU of `xml filter --engine gpu-dfa` until its first tables.
enum Gpu {
    Opening(super::GpuOpening),
    Open(Result<Device, gpu_kernels::GpuError>),
    Given,
}

/// What a learner hands back: its automaton and cache, their tables (`None`: the
/// accumulator is too wide) and its time.
struct Learned {
    dfa: LazyDfa,
    cache: baselines::lazy_dfa::Cache,
    tables: Option<xml_twig::DfaTables>,
    took: Duration,
}

impl WarmFilter {
    fn new(gpu: Gpu, profiles: &ProfileSet) -> Self {
        WarmFilter {
            gpu,
            engine: None,
            profiles: profiles.clone(),
            learner: None,
            grown: None,
            depth: 0,
            regrowths: 0,
            states: 0,
            too_wide: false,
            learn: Duration::ZERO,
            on_gpu: Duration::ZERO,
            cpu_windows: 0,
            back: 0,
            on_cpu: Duration::ZERO,
        }
    }

    /// Starts a learner on `training`: a fresh automaton, or `grown`'s grown further.
    fn start(
        &mut self,
        grown: Option<(LazyDfa, baselines::lazy_dfa::Cache)>,
        training: Vec<Document>,
    ) {
        let deepest = training.iter().map(|d| d.max_depth).max().unwrap_or(0) as usize;
        self.depth = self.depth.max(deepest + 2);
        let depth = self.depth;
        let profiles = self.profiles.clone();
        let first = grown.is_none();
        self.learner = Some(std::thread::spawn(move || {
            let t = Instant::now();
            let (dfa, mut cache) = match grown {
                Some((dfa, mut cache)) => {
                    for d in &training {
                        dfa.filter_with(&mut cache, d);
                    }
                    (dfa, cache)
                }
                None => {
                    let dfa = LazyDfa::new(&profiles);
                    let cache = dfa.train(&training);
                    (dfa, cache)
                }
            };
            // A growth adds up to GROWN_STATES a time (the first) or a quarter of it.
            let more = if first {
                GROWN_STATES
            } else {
                GROWN_STATES / 4
            };
            let cap = cache.stats().dfa_states + more;
            dfa.complete(&mut cache, &training, depth, cap);
            let tables = dfa.export(&cache);
            Learned {
                dfa,
                cache,
                tables,
                took: t.elapsed(),
            }
        }));
    }

    /// Takes the learner's tables once it is done (`wait`: waits for it) and uploads
    /// them (the first: once the GPU is open; `--stats` shows the wait). A GPU that fails
    /// to open here leaves the stream to the CPU, with a note.
    fn settle(&mut self, wait: bool, stats: &mut Stats) -> anyhow::Result<()> {
        if !wait && !self.learner.as_ref().is_some_and(|h| h.is_finished()) {
            return Ok(());
        }
        let Some(h) = self.learner.take() else {
            return Ok(());
        };
        let l = h
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        self.learn += l.took;
        let Some(tables) = l.tables else {
            eprintln!(
                "note: the query set's accumulator is too wide for the lazy DFA's automaton: \
                 gpu-dfa filters on the CPU"
            );
            self.too_wide = true;
            return Ok(());
        };
        self.states = tables.states();
        match self.engine.as_mut() {
            Some(e) => e.load(&tables)?,
            None => {
                let dev = match std::mem::replace(&mut self.gpu, Gpu::Given) {
                    Gpu::Opening(o) => o.wait(stats),
                    Gpu::Open(dev) => dev,
                    Gpu::Given => anyhow::bail!("the GPU was handed over once"),
                };
                match dev {
                    Ok(dev) => self.engine = Some(DfaEngine::new(dev, &tables)?),
                    Err(e) => {
                        eprintln!("note: the GPU did not open ({e}): gpu-dfa filters on the CPU");
                        self.too_wide = true;
                        return Ok(());
                    }
                }
            }
        }
        self.grown = Some((l.dfa, l.cache));
        Ok(())
    }

    /// The window's answers: on the GPU once the automaton is there, and on the CPU for
    /// the documents it hands back (and for every document before).
    fn filter(
        &mut self,
        dfa: &LazyDfa,
        docs: &[Document],
        threads: Option<usize>,
        stats: &mut Stats,
    ) -> anyhow::Result<Vec<Matches>> {
        if docs.is_empty() {
            return Ok(Vec::new());
        }
        self.settle(false, stats)?;
        if self.engine.is_none() && self.learner.is_none() && !self.too_wide {
            self.start(None, training_docs(docs));
        }
        let Some(engine) = self.engine.as_mut() else {
            let t = Instant::now();
            let out = run_lazy_dfa(dfa, docs, threads)?;
            self.cpu_windows += 1;
            self.on_cpu += t.elapsed();
            return Ok(out);
        };
        let t = Instant::now();
        let got = engine.filter_encoded(&engine.encode(docs))?;
        self.on_gpu += t.elapsed();
        let back: Vec<usize> = (0..docs.len()).filter(|&i| got[i].is_none()).collect();
        let mut out: Vec<Matches> = got.into_iter().map(Option::unwrap_or_default).collect();
        if back.is_empty() {
            return Ok(out);
        }
        let t = Instant::now();
        let which: Vec<Document> = back.iter().map(|&i| docs[i].clone()).collect();
        for (&i, m) in back.iter().zip(run_lazy_dfa(dfa, &which, threads)?) {
            out[i] = m;
        }
        self.back += back.len();
        self.on_cpu += t.elapsed();
        let many = back.len() * 100 > docs.len();
        if many && self.regrowths < MAX_REGROWTHS && self.learner.is_none() {
            if let Some(grown) = self.grown.take() {
                self.start(Some(grown), training_docs(&which));
                self.regrowths += 1;
            }
        }
        Ok(out)
    }
}

/// The first documents of `docs` holding [`TRAINING_BYTES`] (at least one); a document
/// longer than that is stood for by its first events, scaled by bytes, with the
/// elements still open there closed.
fn training_docs(docs: &[Document]) -> Vec<Document> {
    let mut out = Vec::new();
    let mut bytes = 0;
    for d in docs {
        if bytes >= TRAINING_BYTES {
            break;
        }
        if d.bytes <= TRAINING_BYTES - bytes {
            bytes += d.bytes;
            out.push(d.clone());
            continue;
        }
        let keep = (d.events.len() as u128 * (TRAINING_BYTES - bytes) as u128
            / d.bytes.max(1) as u128) as usize;
        let mut events = d.events[..keep.min(d.events.len())].to_vec();
        let mut open = Vec::new();
        for e in &events {
            if e.is_open() {
                open.push(e.tag());
            } else {
                open.pop();
            }
        }
        events.extend(open.into_iter().rev().map(xml_twig::Event::close));
        if let Some(prefix) = Document::from_events(events, TRAINING_BYTES - bytes) {
            out.push(prefix);
        }
        break;
    }
    out
}

fn run_yfilter(
    y: &Yfilter,
    docs: &[Document],
    threads: Option<usize>,
) -> anyhow::Result<Vec<Matches>> {
    Ok(match threads {
        Some(t) if t > 1 => y.filter_batch_threads(docs, t)?,
        _ => docs.iter().map(|d| y.filter(d)).collect(),
    })
}

fn run_lazy_dfa(
    dfa: &LazyDfa,
    docs: &[Document],
    threads: Option<usize>,
) -> anyhow::Result<Vec<Matches>> {
    Ok(match (threads, docs) {
        (Some(t), [doc]) if t > 1 => vec![dfa.filter_segmented_threads(doc, t)?],
        (Some(t), _) if t > 1 => dfa.filter_batch_threads(docs, t)?,
        _ => docs.iter().map(|d| dfa.filter(d)).collect(),
    })
}

/// Events of a document that, alone, fills the GPU with segments
/// ([`segment_events`]: 128 segments of at most 4096 events): the whole-document kernels
/// filter such a document in one block, so `gpu` and the default engine filter it in
/// segments, as `gpu-seg` does (on the H200, one 100 MB document: 0.146 s whole against
/// 0.026 s in segments).
const LONG_DOC_EVENTS: usize = 128 * 4096;

/// The kernels (whole documents, or segments one document at a time); documents deeper
/// than the GPU stack fall back to the NFA, with a note.
fn run_kernels(k: &mut Kernels, docs: &[Document], y: &Yfilter) -> anyhow::Result<Vec<Matches>> {
    run_kernels_with(k, docs, y, LONG_DOC_EVENTS)
}

/// [`run_kernels`], documents of at least `long` events filtered in segments on one
/// device (every document with `gpu-seg`).
fn run_kernels_with(
    k: &mut Kernels,
    docs: &[Document],
    y: &Yfilter,
    long: usize,
) -> anyhow::Result<Vec<Matches>> {
    let max = k.max_depth();
    let (fit, deep): (Vec<usize>, Vec<usize>) =
        (0..docs.len()).partition(|&i| docs[i].max_depth <= max);
    let mut out = vec![Vec::new(); docs.len()];
    let (segmented, whole): (Vec<usize>, Vec<usize>) = match k {
        Kernels::One(_, all) => {
            let all = *all;
            fit.into_iter()
                .partition(|&i| all || docs[i].events.len() >= long)
        }
        Kernels::Multi(_) => (Vec::new(), fit),
    };
    if let Kernels::One(e, _) = k {
        for &i in &segmented {
            out[i] = e.filter_segmented(&docs[i], segment_events(&docs[i]))?;
        }
    }
    if whole.len() == docs.len() {
        for (o, m) in out.iter_mut().zip(k.filter(docs)?) {
            *o = m;
        }
    } else if !whole.is_empty() {
        let batch: Vec<Document> = whole.iter().map(|&i| docs[i].clone()).collect();
        for (&i, m) in whole.iter().zip(k.filter(&batch)?) {
            out[i] = m;
        }
    }
    for i in deep {
        let depth = docs[i].max_depth;
        eprintln!(
            "note: a document is {depth} elements deep, past the GPU stack ({max}): filtered \
             with yfilter"
        );
        out[i] = y.filter(&docs[i]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(f: Figure) -> Workload {
        Workload::of(f, None, None, None, None, None, None, 1, false).unwrap()
    }

    /// `--engine gpu-dfa`'s filter (on the emulator): the automaton learned from a first
    /// window unlike the rest, so that later windows hand documents back (answered by the
    /// lazy DFA) and grow it again; every answer is the NFA's.
    #[test]
    fn the_warm_path_learns_from_the_first_window_and_hands_back_what_it_lacks() {
        let set = xml_twig::QuerySet::from_queries(
            QueryGenerator::new(QueryParams::paper(5, 0.5), 3).queries(24),
        );
        let profiles = ProfileSet::compile(&set).unwrap();
        let parse = |xml: &[u8]| io::parse_document("d.xml", xml, &profiles.dict).unwrap();
        let mut g = DblpGenerator::new(5);
        let mut windows = vec![vec![parse(
            b"<dblp><article><author/><title/></article></dblp>",
        )]];
        for _ in 0..3 {
            windows.push((0..4).map(|_| parse(g.document(1500).as_bytes())).collect());
        }
        let y = Yfilter::new(&profiles);
        let dfa = LazyDfa::new(&profiles);
        let mut w = WarmFilter::new(Gpu::Open(Ok(Device::emulator())), &profiles);
        let mut stats = Stats::new(false);
        for docs in &windows {
            let want: Vec<Matches> = docs.iter().map(|d| y.filter(d)).collect();
            assert_eq!(w.filter(&dfa, docs, Some(2), &mut stats).unwrap(), want);
            // The learner done before the next window (a command does not wait for it).
            w.settle(true, &mut stats).unwrap();
        }
        assert_eq!(
            w.cpu_windows, 1,
            "the first window on the CPU, the rest on the device"
        );
        assert!(
            w.states > 0 && w.back > 0 && w.regrowths > 0,
            "{} {} {}",
            w.states,
            w.back,
            w.regrowths
        );
    }

    /// The kernels (on the emulator) give the NFA's answers whether a window's long
    /// documents go in segments and the rest whole, all go whole, or all in segments.
    #[test]
    fn long_documents_in_segments_and_the_rest_whole_match_the_nfa() {
        let set = xml_twig::QuerySet::from_queries(
            QueryGenerator::new(QueryParams::paper(5, 0.5), 7).queries(16),
        );
        let profiles = ProfileSet::compile(&set).unwrap();
        let parse = |xml: &[u8]| io::parse_document("d.xml", xml, &profiles.dict).unwrap();
        let mut g = DblpGenerator::new(9);
        let docs: Vec<Document> = [400, 30_000, 600, 20_000]
            .iter()
            .map(|&b| parse(g.document(b).as_bytes()))
            .collect();
        let long = 1000;
        assert!(docs.iter().any(|d| d.events.len() >= long));
        assert!(docs.iter().any(|d| d.events.len() < long));
        let y = Yfilter::new(&profiles);
        let want: Vec<Matches> = docs.iter().map(|d| y.filter(d)).collect();
        assert!(want.iter().any(|m| !m.is_empty()), "some query matches");
        let engine = Engine::new(Device::emulator(), &profiles, EngineConfig::default()).unwrap();
        let mut k = Kernels::One(Box::new(engine), false);
        for l in [long, usize::MAX, 0] {
            assert_eq!(
                run_kernels_with(&mut k, &docs, &y, l).unwrap(),
                want,
                "long = {l}"
            );
        }
    }

    /// A document longer than the training bytes is stood for by its first events, its
    /// open elements closed; shorter ones are taken whole up to the bytes.
    #[test]
    fn training_takes_the_first_documents_or_a_long_ones_first_events() {
        let profiles =
            ProfileSet::compile(&io::parse_query_file("q.txt", "//a\n").unwrap()).unwrap();
        let long = io::parse_document(
            "d.xml",
            DblpGenerator::new(1)
                .document(TRAINING_BYTES * 2)
                .as_bytes(),
            &profiles.dict,
        )
        .unwrap();
        let t = training_docs(std::slice::from_ref(&long));
        assert_eq!(t.len(), 1);
        let prefix = &t[0];
        assert_eq!(prefix.bytes, TRAINING_BYTES);
        let opens = prefix.events.iter().filter(|e| e.is_open()).count();
        assert_eq!(opens * 2, prefix.events.len(), "well nested");
        assert!(prefix.events.len() < long.events.len());
        assert_eq!(prefix.events[..opens], long.events[..opens]);
        let small = io::parse_document("d.xml", b"<a/>", &profiles.dict).unwrap();
        let t = training_docs(&[small.clone(), small.clone(), long]);
        assert_eq!(
            t.len(),
            3,
            "two small documents whole, then the long one's start"
        );
        assert_eq!(t[2].bytes, TRAINING_BYTES - 2 * small.bytes);
    }

    #[test]
    fn figure_presets_have_the_papers_parameters() {
        let w = fig(Figure::Fig9);
        assert_eq!((w.queries, w.docs, w.doc_bytes), (512, 500, 25_000));
        assert_eq!(w.params, QueryParams::paper(10, 0.5));
        assert_eq!(w.doc_seed, 1 ^ 0xba7c);
        let w = fig(Figure::Fig10b);
        assert_eq!((w.docs, w.params.length), (1000, 5));
        let w = Workload::of(
            Figure::Fig8,
            None,
            None,
            Some(0.5),
            None,
            None,
            Some(64),
            2,
            false,
        )
        .unwrap();
        assert_eq!((w.docs, w.doc_bytes, w.doc_seed), (1, 64 * 1024, 2 ^ 64));
        assert!(Workload::of(
            Figure::Fig9,
            None,
            None,
            None,
            None,
            Some(3),
            None,
            1,
            false
        )
        .is_err());
    }

    #[test]
    fn generated_files_filter_like_the_experiments_workload() {
        let dir = std::env::temp_dir().join(format!("xml-generate-{}", std::process::id()));
        let w = Workload::of(
            Figure::Fig9,
            Some(64),
            Some(5),
            None,
            None,
            None,
            None,
            1,
            true,
        )
        .unwrap();
        w.write(&dir).unwrap();
        let text = std::fs::read_to_string(dir.join("queries.txt")).unwrap();
        let set = io::parse_query_file("queries.txt", &text).unwrap();
        assert_eq!(set.len(), w.queries);
        let from_files = ProfileSet::compile(&set).unwrap();
        // The experiment's own generators, as papers::xml runs them.
        let direct = ProfileSet::compile(&xml_twig::QuerySet::from_queries(
            QueryGenerator::new(w.params.clone(), 1).queries(w.queries),
        ))
        .unwrap();
        let mut g = DblpGenerator::new(w.doc_seed);
        for i in 0..w.docs {
            let bytes = std::fs::read(dir.join(format!("doc-{i:05}.xml"))).unwrap();
            assert_eq!(bytes, g.document(w.doc_bytes).into_bytes());
            let a = io::parse_document("d", &bytes, &from_files.dict).unwrap();
            let b = io::parse_document("d", &bytes, &direct.dict).unwrap();
            assert_eq!(
                Yfilter::new(&from_files).filter(&a),
                Yfilter::new(&direct).filter(&b)
            );
        }
        std::fs::remove_dir_all(dir).ok();
    }
}
