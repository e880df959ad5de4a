//! `harness`: the papers' experiments, users' own workloads, and the GPU self-test.

mod engines;
mod exit;
mod experiment;
mod meta;
mod papers;
mod plot;
mod regress;
mod report;
mod results;
mod runner;
mod targets;
mod users;
mod verdict;

use clap::{Args, Parser, Subcommand};
use experiment::Paper;
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc instead of the system's allocator, for every engine alike: parsing an event
/// line allocates its attributes' names and strings, and the CPU matchers allocate each
/// answer. `ccm match --engine hybrid` on 300k events of the default scenario, 2-core
/// machine: 0.54-0.67M events/s with glibc's malloc, 0.91-0.98M with mimalloc (the
/// reader thread's parsing 0.43-0.53 s -> 0.27-0.31 s).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Marks an error as the user's (bad input or usage): the process exits with code 2.
#[derive(Debug)]
pub struct BadInput(pub anyhow::Error);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}
impl std::error::Error for BadInput {}

/// Wraps an error about the user's input so that the binary exits with code 2.
pub fn bad_input(e: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(BadInput(e.into()))
}

#[derive(Parser, Debug)]
#[command(
    name = "harness",
    version,
    about = "gpu-match: the four GPU matching papers' experiments, your own workloads, and the GPU self-test",
    long_about = "gpu-match reproduces four papers on GPU matching: CCM (content-based matching), CLCB \
(location-aware pub/sub), holistic XML twig filtering, and HLA DDM region matching.\n\n\
`harness list` names every experiment; `harness run all` runs them all (on a machine without a GPU: the \
CPU engines and the host emulator at quick sizes, with a note); `harness report` rebuilds \
the pages of results/. The paper subcommands (ccm, clcb, xml, ddm) run the engines on your own files.\n\n\
Exit codes: 0 success, 1 runtime failure (engine error, engines disagree), 2 bad input or usage."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Top,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Small sizes (seconds, not minutes): for CI and a first look. Without a GPU this is the
    /// default unless --full is given.
    #[arg(long)]
    quick: bool,
    /// Without a GPU, run the CPU baselines at the papers' full sizes anyway (slow).
    #[arg(long, conflicts_with = "quick")]
    full: bool,
    /// Workloads (seeds) per x value; results are mean/min/max over them (the papers used 10).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=1000))]
    seeds: u64,
    /// Comma-separated engine names to run (e.g. gpu,sff); default: every engine the
    /// experiment knows that can run here (GPU engines need a GPU; emulator engines, which
    /// check answers (their times mean nothing), run in --quick mode when there is no GPU:
    /// with one, the GPU engines themselves are checked against the CPU). An experiment
    /// runs those of the named engines it has.
    #[arg(long, value_delimiter = ',', value_enum)]
    engines: Option<Vec<engines::RunEngine>>,
    /// Directory for the CSV and PNG files (default: results/, or results/quick/ with --quick).
    #[arg(long)]
    out: Option<PathBuf>,
    /// GPU ordinal of the one-GPU experiments (every experiment but `scaling`).
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// The GPUs the `scaling` experiments spread their partitioned engines over: `all`
    /// (the default) or ordinals such as `0,1`; they run on the first 1, 2, 4, 8 of
    /// them. Independent of --device, which picks the GPU of every other experiment.
    /// Without a GPU, `scaling` runs on 1 to 4 emulated devices (correctness only).
    #[arg(long)]
    devices: Option<gpu_kernels::multi::DeviceSpec>,
}

/// The sizes `regress` runs at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Size {
    Quick,
    Full,
}

#[derive(Subcommand, Debug)]
enum Top {
    /// List every experiment (paper, id, title).
    List,
    /// Run experiments: `run all`, `run <paper>`, or `run <paper> <experiment>`.
    ///
    /// Each experiment writes `<out>/<paper>/<id>.csv`, .samples.csv, .png and .svg and prints
    /// its values at the largest x and the speedups over its baseline. Emulator series
    /// (`emu`, `emu batched`, `emu index`, ...) check answers only: their times are marked
    /// as such and never turned into speedups. The run ends with a summary table: per
    /// experiment its engines, its answer checks (agree / disagree), and the fastest GPU
    /// series recorded in `results/<paper>/<id>.csv` beside this run's value of the same
    /// series (or of its emulator twin); last, where the files went.
    Run {
        /// `all`, or a paper: ccm, clcb, xml, ddm.
        target: String,
        /// An experiment id of that paper (see `list`), or `all`.
        experiment: Option<String>,
        #[command(flatten)]
        args: RunArgs,
    },
    /// Redraw figures (PNG and SVG) from the recorded CSV files and the papers' numbers
    /// (`<dir>/papers/`), in `<dir>` and in the recorded runs one level below it (such as
    /// results/regress): `plot`, `plot <paper>`, `plot <paper> <experiment>`. No GPU needed.
    Plot {
        /// Directory holding `<paper>/<id>.csv` (default results/).
        #[arg(long, default_value = "results")]
        dir: PathBuf,
        /// `all` (default) or a paper: ccm, clcb, xml, ddm.
        #[arg(default_value = "all")]
        target: String,
        /// An experiment id of that paper (see `list`), or `all`.
        experiment: Option<String>,
    },
    /// Rebuild `<dir>/README.md` and `<dir>/<paper>/README.md` (default results/) from the
    /// recorded CSV files, and the headline table of README.md beside `<dir>`.
    Report {
        #[arg(long, default_value = "results")]
        dir: PathBuf,
    },
    /// Rerun experiments and report which points moved against a recorded run of the
    /// same device model: several samples (seeds) per point, a bootstrap confidence
    /// interval of the throughput change, a change reported only when significant and
    /// beyond the noise threshold; fails when a point got slower, and when nothing was
    /// compared (unless --allow-empty). Quick sizes by default; writes its run to
    /// results/regress-run/.
    Regress {
        /// Directory of a recorded run on this device model (e.g. results/regress).
        #[arg(long)]
        baseline: PathBuf,
        /// quick (the default: seconds per experiment) or full (the papers' sizes).
        #[arg(long, value_enum, default_value_t = Size::Quick)]
        size: Size,
        /// Samples per point: one per seed (the baseline should hold as many).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(2..=1000))]
        samples: u64,
        /// Two-sided confidence of the interval.
        #[arg(long, default_value_t = 0.95)]
        confidence: f64,
        /// Changes smaller than this fraction are noise however significant.
        #[arg(long, default_value_t = 0.02)]
        noise_threshold: f64,
        /// Compare every series, CPU ones too (noisy on shared machines).
        #[arg(long)]
        all_series: bool,
        /// Pass when nothing was compared (no baseline point for this device model, no GPU
        /// here); by default that fails, as a check of nothing.
        #[arg(long)]
        allow_empty: bool,
        /// `all` or a paper.
        #[arg(default_value = "all")]
        target: String,
        /// An experiment id of that paper, or `all`.
        experiment: Option<String>,
        /// Comma-separated engine names to run (default: as `run`).
        #[arg(long, value_delimiter = ',')]
        engines: Option<Vec<String>>,
        /// Directory for this run's CSVs (default results/regress-run, or
        /// results/regress-full with --size full).
        #[arg(long)]
        out: Option<PathBuf>,
        /// GPU ordinal.
        #[arg(long, default_value_t = 0)]
        device: usize,
    },
    /// Run the gpu-kernels self-test kernels on the GPU (or the emulator) and print PASS/FAIL.
    Selftest {
        /// GPU ordinal.
        #[arg(long, default_value_t = 0)]
        device: usize,
    },
    /// CCM (content-based matching): match your own subscriptions and events.
    #[command(subcommand)]
    Ccm(users::ccm::Cmd),
    /// CLCB (location-aware pub/sub): match your own subscriptions and events.
    #[command(subcommand)]
    Clcb(users::clcb::Cmd),
    /// Holistic XML twig filtering: filter your own documents against your queries.
    #[command(subcommand)]
    Xml(users::xml::Cmd),
    /// HLA DDM region matching: match your own regions.
    #[command(subcommand)]
    Ddm(users::ddm::Cmd),
}

fn select<'a>(
    all: &'a [experiment::Experiment],
    target: &str,
    exp: Option<&str>,
) -> anyhow::Result<Vec<&'a experiment::Experiment>> {
    let papers: Vec<Paper> = if target == "all" {
        Paper::ALL.to_vec()
    } else {
        let p = Paper::ALL
            .into_iter()
            .find(|p| p.name() == target)
            .ok_or_else(|| {
                bad_input(anyhow::anyhow!(
                    "unknown paper `{target}`: expected all, ccm, clcb, xml or ddm"
                ))
            })?;
        vec![p]
    };
    let chosen: Vec<_> = all
        .iter()
        .filter(|e| papers.contains(&e.paper))
        .filter(|e| exp.is_none_or(|x| x == "all" || x == e.id))
        .collect();
    if chosen.is_empty() {
        let ids: Vec<&str> = all
            .iter()
            .filter(|e| papers.contains(&e.paper))
            .map(|e| e.id)
            .collect();
        return Err(bad_input(anyhow::anyhow!(
            "no experiment `{}` for {target}; known: {}",
            exp.unwrap_or("all"),
            if ids.is_empty() {
                "none yet".to_string()
            } else {
                ids.join(", ")
            }
        )));
    }
    Ok(chosen)
}

fn run_opts(a: RunArgs, gpu: bool) -> runner::RunOpts {
    let quick = a.quick || (!gpu && !a.full);
    if quick && !a.quick {
        eprintln!(
            "note: no GPU: using --quick sizes (pass --full to run the CPU baselines at full size)"
        );
    }
    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from(if quick { "results/quick" } else { "results" }));
    runner::RunOpts {
        quick,
        seeds: a.seeds as usize,
        engines: a.engines.map(|v| v.iter().map(engines::name).collect()),
        out,
        device: a.device,
        devices: a.devices,
        recorded: Some(PathBuf::from("results")),
    }
}

/// `report` and `regress` read a directory of recorded results: a missing one is a usage
/// error, not an empty report.
fn must_be_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    if !dir.is_dir() {
        return Err(bad_input(anyhow::anyhow!(
            "{}: no such directory (of recorded results)",
            dir.display()
        )));
    }
    Ok(())
}

fn selftest(device: usize) -> anyhow::Result<()> {
    use gpu_kernels::Device;
    use gpu_selftest::Sizes;
    let (dev, sizes) = match Device::gpu(device, gpu_selftest::PTX) {
        Ok(d) => (d, Sizes::LARGE),
        Err(e) => {
            println!("note: {e}; running the self-tests on the host SIMT emulator instead");
            (Device::emulator(), Sizes::SMALL)
        }
    };
    println!("device: {}", dev.name());
    let mut failed = 0;
    for o in gpu_selftest::run_all(&dev, sizes)? {
        match o.failure {
            None => println!("PASS  {}", o.name),
            Some(f) => {
                failed += 1;
                println!("FAIL  {}: {f}", o.name);
            }
        }
    }
    anyhow::ensure!(failed == 0, "{failed} self-test(s) failed");
    Ok(())
}

fn real_main(cli: Cli) -> anyhow::Result<()> {
    match cli.cmd {
        Top::List => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            for e in runner::all_experiments() {
                writeln!(out, "{:<5} {:<14} {}", e.paper.name(), e.id, e.title)?;
            }
            Ok(())
        }
        Top::Run {
            target,
            experiment,
            args,
        } => {
            let all = runner::all_experiments();
            let chosen = select(&all, &target, experiment.as_deref())?;
            let gpu = gpu_kernels::Device::gpu_count() > args.device;
            runner::run(&chosen, &run_opts(args, gpu)).map(|_| ())
        }
        Top::Plot {
            dir,
            target,
            experiment,
        } => {
            let all = runner::all_experiments();
            let chosen = select(&all, &target, experiment.as_deref())?;
            let files = plot::redraw_tree(&chosen, &dir)?;
            println!(
                "drew {} figures (PNG and SVG) under {}",
                files.len() / 2,
                dir.display()
            );
            Ok(())
        }
        Top::Report { dir } => {
            must_be_dir(&dir)?;
            let n = report::write(&runner::all_experiments(), &dir)?;
            println!(
                "wrote {} ({n} experiments with results)",
                dir.join("README.md").display()
            );
            Ok(())
        }
        Top::Regress {
            baseline,
            size,
            samples,
            confidence,
            noise_threshold,
            all_series,
            allow_empty,
            target,
            experiment,
            engines,
            out,
            device,
        } => {
            must_be_dir(&baseline)?;
            if !(0.5..1.0).contains(&confidence) {
                return Err(bad_input(anyhow::anyhow!(
                    "--confidence {confidence}: expected a value in [0.5, 1)"
                )));
            }
            if !(0.0..1.0).contains(&noise_threshold) {
                return Err(bad_input(anyhow::anyhow!(
                    "--noise-threshold {noise_threshold}: expected a fraction in [0, 1)"
                )));
            }
            let all = runner::all_experiments();
            let chosen = select(&all, &target, experiment.as_deref())?;
            let quick = size == Size::Quick;
            let own = PathBuf::from(if quick {
                "results/regress-run"
            } else {
                "results/regress-full"
            });
            let out = out.filter(|o| *o != baseline).unwrap_or(own);
            let run = runner::RunOpts {
                quick,
                seeds: samples as usize,
                engines,
                out,
                device,
                devices: None,
                recorded: None,
            };
            let opts = regress::Opts {
                baseline,
                confidence,
                noise_threshold,
                all_series,
                allow_empty,
            };
            regress::regress(&chosen, &run, &opts)
        }
        Top::Selftest { device } => selftest(device),
        Top::Ccm(c) => users::ccm::run_cmd(c),
        Top::Clcb(c) => users::clcb::run_cmd(c),
        Top::Xml(c) => users::xml::run_cmd(c),
        Top::Ddm(c) => users::ddm::run_cmd(c),
    }
}

fn main() -> ExitCode {
    let _ = users::PROCESS_START.set(std::time::Instant::now());
    let cli = Cli::parse();
    let code = match real_main(cli) {
        Ok(()) => 0,
        // A reader that closed the pipe (`harness list | head`) is not an error.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            0
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.chain().any(|c| c.is::<BadInput>()) {
                2
            } else {
                1
            }
        }
    };
    exit::exit(code)
}
