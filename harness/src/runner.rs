//! `harness run`: runs experiments, checks engines agree, writes CSV (and the per-seed
//! samples), PNG and SVG per experiment, and ends with a summary table: per experiment
//! its engines, its answer checks, its files, and the recorded GPU figure (results/)
//! beside this run's.
//!
//! Emulator series (`emu`, `emu batched`, `emu index`: the kernels on the host SIMT
//! emulator) are correctness runs: their times are printed marked as such and never
//! turned into speedups.

use crate::experiment::{Ctx, Experiment};
use crate::meta::Meta;
use crate::results::{self, Row};
use crate::{papers, plot};
use anyhow::Context;
use gpu_kernels::Device;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Every experiment of the four papers, in paper order.
pub fn all_experiments() -> Vec<Experiment> {
    let mut v = papers::ccm::experiments();
    v.extend(papers::clcb::experiments());
    v.extend(papers::xml::experiments());
    v.extend(papers::ddm::experiments());
    v
}

/// How to run.
#[derive(Clone, Debug)]
pub struct RunOpts {
    pub quick: bool,
    pub seeds: usize,
    pub engines: Option<Vec<String>>,
    pub out: PathBuf,
    pub device: usize,
    /// The GPUs of the scaling experiments (`--devices`; `None`: all of them).
    pub devices: Option<gpu_kernels::multi::DeviceSpec>,
    /// A directory of recorded runs (results/) whose GPU figures the summary quotes beside
    /// this run's; `None`: no such column.
    pub recorded: Option<PathBuf>,
}

/// The GPU to use, if one is present: its ordinal and name. Prints a note when there is none.
pub fn find_gpu(ordinal: usize) -> Option<(usize, String)> {
    match Device::gpu(ordinal, gpu_selftest::PTX) {
        Ok(d) => Some((ordinal, d.name())),
        Err(e) => {
            eprintln!("note: {e}: running the CPU engines and the host emulator only");
            None
        }
    }
}

/// The ordinals `--devices` names (all GPUs by default); a GPU that is not present is
/// the user's error.
pub fn gpu_set(spec: Option<&gpu_kernels::multi::DeviceSpec>) -> anyhow::Result<Vec<usize>> {
    let all = gpu_kernels::multi::DeviceSpec::All;
    spec.unwrap_or(&all)
        .ordinals(Device::gpu_count())
        .map_err(|e| crate::bad_input(anyhow::Error::new(e).context("--devices")))
}

/// Runs `exps`; returns the rows written. A failing experiment (an engine error or two
/// engines disagreeing) does not stop the others, but fails the whole run at the end.
pub fn run(exps: &[&Experiment], opts: &RunOpts) -> anyhow::Result<Vec<Row>> {
    run_with_samples(exps, opts).map(|(rows, _)| rows)
}

/// [`run`], also returning every per-seed sample (written beside each CSV as
/// `<id>.samples.csv`).
pub fn run_with_samples(
    exps: &[&Experiment],
    opts: &RunOpts,
) -> anyhow::Result<(Vec<Row>, Vec<results::SampleRow>)> {
    let mut all_samples = Vec::new();
    let gpu = find_gpu(opts.device);
    let meta = Meta::collect(gpu.as_ref().map_or("none".to_string(), |g| g.1.clone()));
    let seeds: Vec<u64> = (1..=opts.seeds.max(1) as u64).collect();
    let mut all_rows = Vec::new();
    let mut failures = Vec::new();
    let mut outcomes = Vec::new();
    for (i, exp) in exps.iter().enumerate() {
        // Read before the run: a full run may write into the recorded directory itself.
        let recorded = recorded_rows(opts.recorded.as_deref(), exp);
        let pb = Arc::new(ProgressBar::new(0));
        pb.set_style(
            ProgressStyle::with_template(
                "{prefix:>14} [{elapsed_precise}] {wide_bar} {pos}/{len} eta {eta} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        pb.set_prefix(format!("{}/{}", exp.paper.name(), exp.id));
        let mut ctx = Ctx::new(
            opts.quick,
            seeds.clone(),
            opts.engines.clone(),
            gpu.as_ref().map(|g| g.0),
            pb.clone(),
        );
        if gpu.is_some() {
            ctx.gpus = gpu_set(opts.devices.as_ref())?;
        }
        let t0 = Instant::now();
        let result = (exp.run)(&mut ctx);
        pb.finish_and_clear();
        let secs = t0.elapsed().as_secs_f64();
        let rows = results::aggregate(exp, &ctx.samples, &meta);
        let label = format!("[{}/{}] {}/{}", i + 1, exps.len(), exp.paper.name(), exp.id);
        let mut outcome = Outcome {
            experiment: format!("{}/{}", exp.paper.name(), exp.id),
            result: "ok".into(),
            engines: engines_of(&rows),
            checks: ctx.checks(),
            files: Vec::new(),
            recorded: recorded_vs_now(exp, &recorded, &rows),
        };
        if let Err(e) = result {
            eprintln!("{label}: FAILED after {secs:.1} s: {e:#}");
            failures.push(format!("{}/{}: {e:#}", exp.paper.name(), exp.id));
            outcome.result = "FAILED".into();
            outcomes.push(outcome);
            continue;
        }
        if rows.is_empty() {
            eprintln!("{label}: no engine ran (see --engines); nothing written");
            outcome.result = "no engine ran".into();
            outcomes.push(outcome);
            continue;
        }
        let csv = results::csv_path(&opts.out, exp.paper.name(), exp.id);
        results::write_csv(&csv, &rows)?;
        let samples = results::sample_rows(exp, &ctx.samples, &meta);
        let samples_csv = results::samples_path(&opts.out, exp.paper.name(), exp.id);
        results::write_samples(&samples_csv, &samples)?;
        all_samples.extend(samples);
        let png = csv.with_extension("png");
        let paper = results::read_papers(&opts.out, exp.paper.name())?;
        plot::plot(exp, &rows, &paper, &png)
            .with_context(|| format!("plotting {}", png.display()))?;
        eprintln!("{label}: ok in {secs:.1} s -> {}", csv.display());
        for line in console_lines(exp, &rows) {
            println!("{line}");
        }
        outcome.files = vec![csv.clone(), samples_csv, png, csv.with_extension("svg")];
        outcomes.push(outcome);
        all_rows.extend(rows);
    }
    for line in summary_lines(&outcomes, opts.recorded.as_deref()) {
        println!("{line}");
    }
    if !failures.is_empty() {
        anyhow::bail!(
            "{} experiment(s) failed:\n  {}",
            failures.len(),
            failures.join("\n  ")
        );
    }
    Ok((all_rows, all_samples))
}

/// Marks an emulator series' number in the console.
pub const EMULATOR_NOTE: &str = "emulator: correctness run, time not meaningful";

/// The console lines after an experiment: every series' value at the largest x (emulator
/// series apart, marked as correctness runs), then the speedup over the baseline of each
/// non-emulator series.
pub fn console_lines(exp: &Experiment, rows: &[Row]) -> Vec<String> {
    let Some(last_x) = rows.iter().map(|r| r.x).reduce(f64::max) else {
        return Vec::new();
    };
    let at_last = || rows.iter().filter(|r| r.x == last_x);
    let mut lines = Vec::new();
    let measured: Vec<String> = at_last()
        .filter(|r| !results::is_emulator(&r.series))
        .map(|r| format!("{}={:.4}", r.series, r.mean))
        .collect();
    if !measured.is_empty() {
        lines.push(format!(
            "    {} = {last_x}: {} ({})",
            exp.x_label,
            measured.join("  "),
            exp.y_label
        ));
    }
    let emulated: Vec<&Row> = at_last()
        .filter(|r| results::is_emulator(&r.series))
        .collect();
    if !emulated.is_empty() {
        // A recorded speedup of an emulator series (`emu vs yfilter`) is not printed at
        // all; an emulator time is, marked.
        let speedup = |r: &Row| r.series.contains(" vs ") || exp.y_label.contains("speedup");
        let names: Vec<String> = emulated
            .iter()
            .map(|r| {
                if speedup(r) {
                    r.series.clone()
                } else {
                    format!("{}={:.4}", r.series, r.mean)
                }
            })
            .collect();
        let unit = if emulated.iter().all(|r| speedup(r)) {
            "no speedup: ".to_string()
        } else {
            format!("{}; ", exp.y_label)
        };
        lines.push(format!(
            "    {} = {last_x}: {} ({unit}{EMULATOR_NOTE})",
            exp.x_label,
            names.join("  ")
        ));
    }
    if let Some(b) = exp.baseline {
        let sp: Vec<String> = results::speedups(rows, b, exp.higher_is_better)
            .into_iter()
            .filter(|s| s.1 == last_x && !results::is_emulator(&s.0))
            .map(|(s, _, v)| format!("{s} {v:.1}x"))
            .collect();
        if !sp.is_empty() {
            lines.push(format!("    speedup over {b}: {}", sp.join("  ")));
        }
    }
    lines
}

/// What one experiment of a run did, for the summary table at the end.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// `ccm/table2`.
    pub experiment: String,
    /// `ok`, `FAILED` or `no engine ran`.
    pub result: String,
    /// The engines recorded (series without their second factor), in first-seen order.
    pub engines: Vec<String>,
    /// Answer checks ([`Ctx::check`]): (agreed, disagreed).
    pub checks: (usize, usize),
    /// The files written: CSV, per-seed samples CSV, PNG, SVG.
    pub files: Vec<PathBuf>,
    /// The recorded GPU figure beside this run's, or why there is none.
    pub recorded: String,
}

/// The engines of `rows`' series (`gpu L=5` is `gpu`, `emu vs yfilter` is `emu`), in
/// first-seen order.
pub fn engines_of(rows: &[Row]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in rows {
        let e = plot::split_series(&r.series).0;
        if !v.contains(&e) {
            v.push(e);
        }
    }
    v
}

/// The rows recorded for `exp` under `dir`, if any (unreadable ones count as none).
fn recorded_rows(dir: Option<&Path>, exp: &Experiment) -> Vec<Row> {
    let Some(dir) = dir else {
        return Vec::new();
    };
    let csv = results::csv_path(dir, exp.paper.name(), exp.id);
    if !csv.exists() {
        return Vec::new();
    }
    results::read_csv(&csv).unwrap_or_default()
}

/// The unit of row `r`: a table's `ms / ms / MB / ms` gives the part of its row number;
/// an axis label the unit in its parentheses (`time per step (ms)`: `ms`).
fn unit_at(r: &Row) -> String {
    let parts: Vec<&str> = r.unit.split(" / ").map(str::trim).collect();
    let i = r.x as usize;
    let unit = if parts.len() > 1 && r.x.fract() == 0.0 && (1..=parts.len()).contains(&i) {
        parts[i - 1]
    } else {
        r.unit.as_str()
    };
    plot::axis_unit(unit).to_string()
}

fn value_words(r: &Row) -> String {
    let unit = unit_at(r);
    let v = plot::sig(r.mean, 4);
    let v = if unit.is_empty() || unit == "x" || unit.contains("speedup") {
        format!("{v}x")
    } else {
        format!("{v} {unit}")
    };
    format!("{} {v} at x={}", r.series, plot::fmt_num(r.x))
}

/// The recorded GPU figure beside this run's: the recorded fastest GPU series at its
/// largest x, and this run's value of the same series (else of its emulator twin) at the
/// same x (else at this run's largest x). `-` when nothing GPU is recorded.
pub fn recorded_vs_now(exp: &Experiment, recorded: &[Row], now: &[Row]) -> String {
    let is_gpu = |s: &str| plot::split_series(s).0.starts_with("gpu");
    let gpu: Vec<&Row> = recorded.iter().filter(|r| is_gpu(&r.series)).collect();
    let Some(x) = gpu.iter().map(|r| r.x).reduce(f64::max) else {
        return "-".into();
    };
    let better = |a: &&&Row, b: &&&Row| {
        if exp.higher_is_better {
            a.mean.total_cmp(&b.mean)
        } else {
            b.mean.total_cmp(&a.mean)
        }
    };
    let Some(best) = gpu.iter().filter(|r| r.x == x).max_by(better).copied() else {
        return "-".into();
    };
    let mut text = format!(
        "recorded {} ({}, {})",
        value_words(best),
        best.device,
        best.date
    );
    let twin = best.series.replacen("gpu", "emu", 1);
    let now_last = now.iter().map(|r| r.x).reduce(f64::max);
    let found = [x, now_last.unwrap_or(x)].into_iter().find_map(|at| {
        [&best.series, &twin]
            .into_iter()
            .find_map(|s| now.iter().find(|r| &r.series == s && r.x == at))
    });
    match found {
        Some(r) => {
            text += &format!("; this run {}", value_words(r));
            if results::is_emulator(&r.series) {
                text += &format!(" ({EMULATOR_NOTE})");
            } else if r.x == best.x && best.mean > 0.0 {
                text += &format!(" ({}x the recorded)", plot::sig(r.mean / best.mean, 3));
            }
        }
        None => text += &format!("; this run: neither {} nor {twin}", best.series),
    }
    text
}

/// A file list in few words: `dir/ccm/table2.{csv,samples.csv,png,svg}`.
fn files_words(files: &[PathBuf]) -> String {
    let Some(first) = files.first() else {
        return "-".into();
    };
    let first = first.display().to_string();
    let stem = first.strip_suffix(".csv").unwrap_or(&first);
    let exts: Option<Vec<&str>> = files
        .iter()
        .map(|f| {
            f.to_str()
                .and_then(|f| f.strip_prefix(stem))
                .and_then(|e| e.strip_prefix('.'))
        })
        .collect();
    match exts {
        Some(exts) => format!("{stem}.{{{}}}", exts.join(",")),
        None => files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// The summary table printed after the last experiment, and the pointer to `plot` and
/// `report`.
pub fn summary_lines(outcomes: &[Outcome], recorded: Option<&Path>) -> Vec<String> {
    let (agreed, disagreed) = outcomes
        .iter()
        .fold((0, 0), |(a, d), o| (a + o.checks.0, d + o.checks.1));
    let ok = outcomes.iter().filter(|o| o.result == "ok").count();
    let files: usize = outcomes.iter().map(|o| o.files.len()).sum();
    let mut lines = vec![
        String::new(),
        format!(
            "summary: {} experiment(s), {ok} ok, {} not; answer checks: {agreed} agree, {disagreed} disagree; {files} files written",
            outcomes.len(),
            outcomes.len() - ok
        ),
    ];
    let rec_head = match recorded {
        Some(d) => format!("recorded GPU ({}) vs this run", d.display()),
        None => "recorded GPU vs this run".to_string(),
    };
    let head = [
        "experiment".to_string(),
        "result".to_string(),
        "checks".to_string(),
        "engines".to_string(),
        "files".to_string(),
        rec_head,
    ];
    let body: Vec<[String; 6]> = outcomes
        .iter()
        .map(|o| {
            let checks = match o.checks {
                (0, 0) => "none".to_string(),
                (a, 0) => format!("{a} agree"),
                (a, d) => format!("{a} agree, {d} DISAGREE"),
            };
            [
                o.experiment.clone(),
                o.result.clone(),
                checks,
                if o.engines.is_empty() {
                    "-".into()
                } else {
                    o.engines.join(", ")
                },
                files_words(&o.files),
                if recorded.is_some() {
                    o.recorded.clone()
                } else {
                    "-".into()
                },
            ]
        })
        .collect();
    let mut width = [0usize; 6];
    for row in std::iter::once(&head).chain(&body) {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let fmt = |row: &[String; 6]| {
        let mut line = String::new();
        for (i, (c, w)) in row.iter().zip(width).enumerate() {
            if i + 1 == row.len() {
                line += c;
            } else {
                line += &format!("{c:<w$}  ");
            }
        }
        line.trim_end().to_string()
    };
    lines.push(fmt(&head));
    lines.extend(body.iter().map(fmt));
    lines.push("redraw figures: harness plot; regenerate results/README.md: harness report".into());
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(exp: &str, series: &str, x: f64, mean: f64) -> Row {
        Row {
            paper: "ccm".into(),
            experiment: exp.into(),
            series: series.into(),
            x,
            mean,
            min: mean,
            max: mean,
            n: 1,
            unit: "ms".into(),
            device: "NVIDIA H100 80GB HBM3".into(),
            date: "2026-11-25".into(),
            ..Row::default()
        }
    }

    fn experiment(paper: &str, id: &str) -> Experiment {
        all_experiments()
            .into_iter()
            .find(|e| e.paper.name() == paper && e.id == id)
            .unwrap()
    }

    #[test]
    fn emulator_series_are_marked_as_correctness_runs_and_never_speedups_in_the_console() {
        let fig8 = experiment("ccm", "fig8");
        let mut rows = Vec::new();
        for x in [250.0, 1000.0] {
            rows.push(row("fig8", "sff", x, 1.0));
            rows.push(row("fig8", "sff all cores", x, 0.5));
            rows.push(row("fig8", "emu", x, 400.0));
            rows.push(row("fig8", "emu batched", x, 100.0));
            rows.push(row("fig8", "emu index", x, 0.0001));
        }
        let lines = console_lines(&fig8, &rows);
        let speedup: Vec<&String> = lines.iter().filter(|l| l.contains("speedup")).collect();
        assert_eq!(speedup.len(), 1, "{lines:#?}");
        assert!(speedup[0].contains("sff all cores 2.0x"), "{lines:#?}");
        assert!(!speedup[0].contains("emu"), "{lines:#?}");
        let emu: Vec<&String> = lines.iter().filter(|l| l.contains("emu")).collect();
        assert_eq!(emu.len(), 1, "{lines:#?}");
        assert!(emu[0].contains(EMULATOR_NOTE) && emu[0].contains("emu batched=100"));
        assert!(lines[0].contains("sff=1.0000") && !lines[0].contains("emu"));
        // Only emulator series, as in a CPU-only run of an experiment of GPU speedups:
        // no number at all, no speedup line.
        let xml = experiment("xml", "fig10a");
        let rows = vec![
            row("fig10a", "emu vs yfilter", 32.0, 0.001),
            row("fig10a", "emu vs yfilter-mc", 32.0, 0.0005),
        ];
        let lines = console_lines(&xml, &rows);
        assert_eq!(lines.len(), 1, "{lines:#?}");
        assert!(lines[0].contains(EMULATOR_NOTE), "{lines:#?}");
        assert!(!lines[0].contains("0.001"), "{lines:#?}");
    }

    #[test]
    fn the_summary_lists_every_experiment_with_its_checks_files_and_the_recorded_figure() {
        let files = |stem: &str| -> Vec<PathBuf> {
            ["csv", "samples.csv", "png", "svg"]
                .iter()
                .map(|e| PathBuf::from(format!("/tmp/q/{stem}.{e}")))
                .collect()
        };
        let outcomes = vec![
            Outcome {
                experiment: "ccm/table2".into(),
                result: "ok".into(),
                engines: vec!["sff".into(), "emu index".into()],
                checks: (12, 0),
                files: files("ccm/table2"),
                recorded: "recorded gpu index 0.164 ms at x=1".into(),
            },
            Outcome {
                experiment: "ddm/fig5".into(),
                result: "FAILED".into(),
                engines: vec!["brute".into(), "emu-sweep".into()],
                checks: (3, 1),
                files: Vec::new(),
                recorded: "-".into(),
            },
            Outcome {
                experiment: "xml/fig7".into(),
                result: "ok".into(),
                engines: vec!["yfilter".into()],
                checks: (0, 0),
                files: files("xml/fig7"),
                recorded: "-".into(),
            },
        ];
        let lines = summary_lines(&outcomes, Some(Path::new("results")));
        let text = lines.join("\n");
        assert!(
            text.contains("3 experiment(s), 2 ok, 1 not; answer checks: 15 agree, 1 disagree; 8 files written"),
            "{text}"
        );
        assert!(lines
            .iter()
            .any(|l| l.starts_with("experiment") && l.contains("checks")));
        for (name, checks) in [
            ("ccm/table2", "12 agree"),
            ("ddm/fig5", "3 agree, 1 DISAGREE"),
            ("xml/fig7", "none"),
        ] {
            let l = lines.iter().find(|l| l.starts_with(name)).expect(name);
            assert!(l.contains(checks), "{l}");
        }
        let l = lines.iter().find(|l| l.starts_with("ccm/table2")).unwrap();
        assert!(
            l.contains("/tmp/q/ccm/table2.{csv,samples.csv,png,svg}"),
            "{l}"
        );
        assert!(
            l.contains("sff, emu index") && l.contains("recorded gpu index"),
            "{l}"
        );
        assert_eq!(
            lines.last().unwrap(),
            "redraw figures: harness plot; regenerate results/README.md: harness report"
        );
    }

    #[test]
    fn the_recorded_fastest_gpu_series_is_set_beside_this_runs_series_or_its_emulator_twin() {
        let exp = experiment("ccm", "fig8");
        let recorded = vec![
            row("fig8", "sff", 250000.0, 50.0),
            row("fig8", "gpu", 250000.0, 3.0),
            row("fig8", "gpu index", 250000.0, 0.5),
            row("fig8", "gpu index", 1000.0, 0.1),
        ];
        // A CPU-only run at other sizes: the emulator twin at its largest x, marked.
        let now = vec![
            row("fig8", "sff", 2000.0, 5.0),
            row("fig8", "emu index", 2000.0, 90.0),
        ];
        let text = recorded_vs_now(&exp, &recorded, &now);
        assert!(
            text.starts_with(
                "recorded gpu index 0.5 ms at x=250k (NVIDIA H100 80GB HBM3, 2026-11-25)"
            ),
            "{text}"
        );
        assert!(text.contains("this run emu index 90 ms at x=2k"), "{text}");
        assert!(text.contains(EMULATOR_NOTE), "{text}");
        // A GPU run at the same x: the same series, with the ratio.
        let now = vec![row("fig8", "gpu index", 250000.0, 0.55)];
        let text = recorded_vs_now(&exp, &recorded, &now);
        assert!(
            text.contains("this run gpu index 0.55 ms at x=250k (1.1x the recorded)"),
            "{text}"
        );
        // An axis label as the unit: the unit in its parentheses.
        let mut r = row("fig8", "gpu index", 1000.0, 2.0);
        r.unit = "region matching time per step (ms)".into();
        assert_eq!(value_words(&r), "gpu index 2 ms at x=1k");
        // Nothing recorded on a GPU: no figure.
        assert_eq!(recorded_vs_now(&exp, &recorded[..1], &now), "-");
    }
}
