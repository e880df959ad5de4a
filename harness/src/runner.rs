//! `harness run`: runs experiments, checks engines agree, writes CSV (and the per-seed
//! samples), PNG and SVG per experiment, and ends with a summary table, readable in 100
//! columns: per experiment its engines and answer checks, the recorded GPU figure
//! (results/) beside this run's on lines of their own, and last where the files went.
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
        let mut rows = results::aggregate(exp, &ctx.samples, &meta);
        for r in &mut rows {
            r.sizes = if opts.quick { results::QUICK } else { "full" }.to_string();
        }
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
    for line in summary_lines(&outcomes, opts.recorded.as_deref(), &opts.out) {
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
    /// The recorded GPU figure, then this run's beside it (see [`recorded_vs_now`]); empty
    /// when nothing GPU is recorded.
    pub recorded: Vec<String>,
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

fn value_words(r: &Row) -> String {
    // A series named with its unit (`... regions=1M matchings/s`) is in that unit.
    let unit =
        plot::series_unit(&r.series).map_or_else(|| r.value_unit().to_string(), str::to_string);
    let v = plot::sig(r.mean, 4);
    let v = if unit.is_empty() || unit == "x" || unit.contains("speedup") {
        format!("{v}x")
    } else {
        format!("{v} {unit}")
    };
    format!("{} {v} at x={}", r.series, plot::fmt_num(r.x))
}

/// The recorded GPU figure beside this run's, as two lines: the recorded fastest GPU
/// series at its largest x (`recorded: ...`), and this run's value of the same series (else
/// of its emulator twin) at the same x (else at this run's largest x) (`this run: ...`).
/// Empty when nothing GPU is recorded.
pub fn recorded_vs_now(exp: &Experiment, recorded: &[Row], now: &[Row]) -> Vec<String> {
    let is_gpu = |s: &str| plot::split_series(s).0.starts_with("gpu");
    let gpu: Vec<&Row> = recorded.iter().filter(|r| is_gpu(&r.series)).collect();
    let Some(x) = gpu.iter().map(|r| r.x).reduce(f64::max) else {
        return Vec::new();
    };
    let better = |a: &&&Row, b: &&&Row| {
        if exp.higher_is_better {
            a.mean.total_cmp(&b.mean)
        } else {
            b.mean.total_cmp(&a.mean)
        }
    };
    let Some(best) = gpu.iter().filter(|r| r.x == x).max_by(better).copied() else {
        return Vec::new();
    };
    let then = format!(
        "recorded: {} ({}, {})",
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
    let this = match found {
        Some(r) => {
            let mut text = format!("this run: {}", value_words(r));
            if results::is_emulator(&r.series) {
                text += &format!(" ({EMULATOR_NOTE})");
            } else if r.x == best.x && best.mean > 0.0 {
                text += &format!(" ({}x the recorded)", plot::sig(r.mean / best.mean, 3));
            }
            text
        }
        None => format!("this run: neither {} nor {twin}", best.series),
    };
    vec![then, this]
}

/// The width the summary keeps to.
pub const SUMMARY_COLUMNS: usize = 100;

/// `text` cut at spaces into lines of at most `width` characters (a longer word stays
/// whole), the lines after the first indented by `indent` spaces.
fn wrap_words(text: &str, width: usize, indent: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let lead = if lines.is_empty() { 0 } else { indent };
        if !cur.is_empty() && lead + cur.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                l
            } else {
                format!("{}{l}", " ".repeat(indent))
            }
        })
        .collect()
}

/// Where the files of a run went: `dir/<paper>/<id>.{csv,samples.csv,png,svg}` when every
/// experiment wrote that pattern, else every file.
fn files_words(outcomes: &[Outcome], out: &Path) -> Vec<String> {
    let count: usize = outcomes.iter().map(|o| o.files.len()).sum();
    if count == 0 {
        return vec![format!("files: none written (to {})", out.display())];
    }
    let exts = ["csv", "samples.csv", "png", "svg"];
    let pattern = outcomes.iter().all(|o| {
        let Some((paper, id)) = o.experiment.split_once('/') else {
            return false;
        };
        o.files.is_empty()
            || o.files
                == exts
                    .iter()
                    .map(|e| out.join(paper).join(format!("{id}.{e}")))
                    .collect::<Vec<_>>()
    });
    let ran = outcomes.iter().filter(|o| !o.files.is_empty()).count();
    if pattern {
        let where_ = out
            .join("<paper>")
            .join(format!("<id>.{{{}}}", exts.join(",")));
        return wrap_words(
            &format!(
                "files: {count} written to {} ({ran} experiment(s))",
                where_.display()
            ),
            SUMMARY_COLUMNS,
            4,
        );
    }
    let mut lines = vec![format!("files: {count} written:")];
    for o in outcomes {
        lines.extend(o.files.iter().map(|f| format!("    {}", f.display())));
    }
    lines
}

/// The summary printed after the last experiment, within [`SUMMARY_COLUMNS`] columns: one
/// table row per experiment (engines wrapped), its recorded GPU figure and this run's on
/// lines of their own, the pointer to `plot` and `report`, and last where the files went.
pub fn summary_lines(outcomes: &[Outcome], recorded: Option<&Path>, out: &Path) -> Vec<String> {
    let (agreed, disagreed) = outcomes
        .iter()
        .fold((0, 0), |(a, d), o| (a + o.checks.0, d + o.checks.1));
    let ok = outcomes.iter().filter(|o| o.result == "ok").count();
    let mut lines = vec![String::new()];
    lines.extend(wrap_words(
        &format!(
            "summary: {} experiment(s), {ok} ok, {} not; answer checks: {agreed} agree, {disagreed} disagree",
            outcomes.len(),
            outcomes.len() - ok
        ),
        SUMMARY_COLUMNS,
        4,
    ));
    let head = ["experiment", "result", "checks", "engines"].map(String::from);
    let body: Vec<[String; 4]> = outcomes
        .iter()
        .map(|o| {
            let checks = match o.checks {
                (0, 0) => "none".to_string(),
                (a, 0) => format!("{a} agree"),
                (a, d) => format!("{a} agree, {d} DISAGREE"),
            };
            let engines = if o.engines.is_empty() {
                "-".into()
            } else {
                o.engines.join(", ")
            };
            [o.experiment.clone(), o.result.clone(), checks, engines]
        })
        .collect();
    let mut width = [0usize; 3];
    for row in std::iter::once(&head).chain(&body) {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let lead: usize = width.iter().map(|w| w + 2).sum();
    let fmt = |row: &[String; 4]| -> Vec<String> {
        let mut first = String::new();
        for (c, w) in row.iter().zip(width) {
            first += &format!("{c:<w$}  ");
        }
        let engines = wrap_words(&row[3], SUMMARY_COLUMNS.saturating_sub(lead).max(20), 0);
        let mut out: Vec<String> = engines
            .into_iter()
            .enumerate()
            .map(|(i, e)| {
                if i == 0 {
                    format!("{first}{e}")
                } else {
                    format!("{}{e}", " ".repeat(lead))
                }
            })
            .collect();
        for l in &mut out {
            *l = l.trim_end().to_string();
        }
        out
    };
    lines.extend(fmt(&head));
    for (o, row) in outcomes.iter().zip(&body) {
        lines.extend(fmt(row));
        if recorded.is_some() {
            for r in &o.recorded {
                let wrapped = wrap_words(r, SUMMARY_COLUMNS - 4, "recorded: ".len());
                lines.extend(wrapped.into_iter().map(|l| format!("    {l}")));
            }
        }
    }
    if let Some(d) = recorded {
        lines.push(format!(
            "(recorded: the fastest GPU series in {}/<paper>/<id>.csv at its largest x)",
            d.display()
        ));
    }
    lines.push("redraw figures: harness plot; regenerate results/README.md: harness report".into());
    lines.extend(files_words(outcomes, out));
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
    fn the_summary_lists_every_experiment_in_100_columns_and_ends_with_where_the_files_went() {
        let files = |stem: &str| -> Vec<PathBuf> {
            ["csv", "samples.csv", "png", "svg"]
                .iter()
                .map(|e| PathBuf::from(format!("/tmp/q/{stem}.{e}")))
                .collect()
        };
        let many: Vec<String> = (0..20).map(|i| format!("engine-number-{i}")).collect();
        let outcomes = vec![
            Outcome {
                experiment: "ccm/table2".into(),
                result: "ok".into(),
                engines: vec!["sff".into(), "emu index".into()],
                checks: (12, 0),
                files: files("ccm/table2"),
                recorded: vec![
                    "recorded: gpu index 0.164 ms at x=1 (NVIDIA H100 80GB HBM3, 2026-11-25)"
                        .into(),
                    format!("this run: emu index 30 ms at x=1 ({EMULATOR_NOTE})"),
                ],
            },
            Outcome {
                experiment: "ddm/fig5".into(),
                result: "FAILED".into(),
                engines: vec!["brute".into(), "emu-sweep".into()],
                checks: (3, 1),
                files: Vec::new(),
                recorded: Vec::new(),
            },
            Outcome {
                experiment: "xml/fig7".into(),
                result: "ok".into(),
                engines: many.clone(),
                checks: (0, 0),
                files: files("xml/fig7"),
                recorded: Vec::new(),
            },
        ];
        let lines = summary_lines(&outcomes, Some(Path::new("results")), Path::new("/tmp/q"));
        let text = lines.join("\n");
        for l in &lines {
            assert!(l.chars().count() <= SUMMARY_COLUMNS, "{l}");
        }
        assert!(
            text.contains("3 experiment(s), 2 ok, 1 not; answer checks: 15 agree, 1 disagree"),
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
        // Every engine of a long list is there, wrapped under the engines column, each
        // line but the last filled to near the width.
        for e in &many {
            assert!(text.contains(e.as_str()), "{e}: {text}");
        }
        let at = lines
            .iter()
            .position(|l| l.starts_with("xml/fig7"))
            .unwrap();
        let lead = lines[at].find("engine-number-0").unwrap();
        assert!(lines[at + 1].starts_with(&" ".repeat(lead)), "{text}");
        assert!(
            lines[at + 1].chars().count() > SUMMARY_COLUMNS - 20,
            "{text}"
        );
        // The recorded figure and this run's on lines of their own, under their experiment.
        let at = lines
            .iter()
            .position(|l| l.starts_with("ccm/table2"))
            .unwrap();
        assert!(lines[at + 1]
            .trim_start()
            .starts_with("recorded: gpu index 0.164 ms"));
        assert!(lines[at + 2]
            .trim_start()
            .starts_with("this run: emu index 30 ms"));
        // Last: where the files went.
        assert_eq!(
            lines.last().unwrap(),
            "files: 8 written to /tmp/q/<paper>/<id>.{csv,samples.csv,png,svg} (2 experiment(s))"
        );
        assert!(text.contains("harness plot"));
    }

    #[test]
    fn words_wrap_at_spaces_with_the_continuation_indented() {
        assert_eq!(wrap_words("aa bb cc dd", 5, 2), ["aa bb", "  cc", "  dd"]);
        assert_eq!(wrap_words("", 10, 2), [""]);
        assert_eq!(
            wrap_words("averyveryverylongword x", 5, 0)[0],
            "averyveryverylongword"
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
        let lines = recorded_vs_now(&exp, &recorded, &now);
        assert_eq!(
            lines[0],
            "recorded: gpu index 0.5 ms at x=250k (NVIDIA H100 80GB HBM3, 2026-11-25)"
        );
        assert!(
            lines[1].starts_with("this run: emu index 90 ms at x=2k"),
            "{lines:?}"
        );
        assert!(lines[1].contains(EMULATOR_NOTE), "{lines:?}");
        // A GPU run at the same x: the same series, with the ratio.
        let now = vec![row("fig8", "gpu index", 250000.0, 0.55)];
        let lines = recorded_vs_now(&exp, &recorded, &now);
        assert_eq!(
            lines[1],
            "this run: gpu index 0.55 ms at x=250k (1.1x the recorded)"
        );
        // An axis label as the unit: the unit in its parentheses.
        let mut r = row("fig8", "gpu index", 1000.0, 2.0);
        r.unit = "region matching time per step (ms)".into();
        assert_eq!(value_words(&r), "gpu index 2 ms at x=1k");
        // A series named with its unit, of an experiment of several units.
        let mut r = row("scaling", "gpu multi regions=1M matchings/s", 4.0, 7796.0);
        r.unit = "matchings/s, and the speedup over one GPU".into();
        assert_eq!(
            value_words(&r),
            "gpu multi regions=1M matchings/s 7796 matchings/s at x=4"
        );
        // Nothing recorded on a GPU: no figure.
        assert!(recorded_vs_now(&exp, &recorded[..1], &now).is_empty());
    }
}
