//! `harness run` and `harness regress`: runs experiments, checks engines agree, writes
//! CSV, PNG and SVG per experiment, and compares throughputs with a recorded run.

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

/// Runs `exps`; returns the rows written. A failing experiment (an engine error or two
/// engines disagreeing) does not stop the others, but fails the whole run at the end.
pub fn run(exps: &[&Experiment], opts: &RunOpts) -> anyhow::Result<Vec<Row>> {
    let gpu = find_gpu(opts.device);
    let meta = Meta::collect(gpu.as_ref().map_or("none".to_string(), |g| g.1.clone()));
    let seeds: Vec<u64> = (1..=opts.seeds.max(1) as u64).collect();
    let mut all_rows = Vec::new();
    let mut failures = Vec::new();
    for (i, exp) in exps.iter().enumerate() {
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
        let t0 = Instant::now();
        let result = (exp.run)(&mut ctx);
        pb.finish_and_clear();
        let secs = t0.elapsed().as_secs_f64();
        let rows = results::aggregate(exp, &ctx.samples, &meta);
        let label = format!("[{}/{}] {}/{}", i + 1, exps.len(), exp.paper.name(), exp.id);
        if let Err(e) = result {
            eprintln!("{label}: FAILED after {secs:.1} s: {e:#}");
            failures.push(format!("{}/{}: {e:#}", exp.paper.name(), exp.id));
            continue;
        }
        if rows.is_empty() {
            eprintln!("{label}: no engine ran (see --engines); nothing written");
            continue;
        }
        let csv = results::csv_path(&opts.out, exp.paper.name(), exp.id);
        results::write_csv(&csv, &rows)?;
        let png = csv.with_extension("png");
        let paper = results::read_papers(&opts.out, exp.paper.name())?;
        plot::plot(exp, &rows, &paper, &png)
            .with_context(|| format!("plotting {}", png.display()))?;
        eprintln!("{label}: ok in {secs:.1} s -> {}", csv.display());
        print_summary(exp, &rows);
        all_rows.extend(rows);
    }
    if !failures.is_empty() {
        anyhow::bail!(
            "{} experiment(s) failed:\n  {}",
            failures.len(),
            failures.join("\n  ")
        );
    }
    Ok(all_rows)
}

fn print_summary(exp: &Experiment, rows: &[Row]) {
    let Some(last_x) = rows.iter().map(|r| r.x).reduce(f64::max) else {
        return;
    };
    let at: Vec<String> = rows
        .iter()
        .filter(|r| r.x == last_x)
        .map(|r| format!("{}={:.4}", r.series, r.mean))
        .collect();
    println!(
        "    {} = {last_x}: {} ({})",
        exp.x_label,
        at.join("  "),
        exp.y_label
    );
    if let Some(b) = exp.baseline {
        let sp: Vec<String> = results::speedups(rows, b, exp.higher_is_better)
            .into_iter()
            .filter(|s| s.1 == last_x)
            .map(|(s, _, v)| format!("{s} {v:.1}x"))
            .collect();
        if !sp.is_empty() {
            println!("    speedup over {b}: {}", sp.join("  "));
        }
    }
}

/// `harness regress`: reruns `exps` and fails when a series' throughput on this device
/// falls more than `tolerance` below the recorded one for the same device model. Only the
/// GPU series (`gpu*`) are compared unless `all_series`: CPU timings on a shared CI box
/// are too noisy to guard.
pub fn regress(
    exps: &[&Experiment],
    opts: &RunOpts,
    baseline: &Path,
    tolerance: f64,
    all_series: bool,
) -> anyhow::Result<()> {
    let fresh = run(exps, opts)?;
    let mut compared = 0;
    let mut slower = Vec::new();
    for exp in exps {
        let path = results::csv_path(baseline, exp.paper.name(), exp.id);
        if !path.exists() {
            continue;
        }
        let old = results::read_csv(&path)?;
        let gpu_series = |r: &&Row| all_series || r.series.starts_with("gpu");
        for new in fresh
            .iter()
            .filter(|r| r.paper == exp.paper.name() && r.experiment == exp.id)
            .filter(gpu_series)
        {
            let Some(rec) = old
                .iter()
                .find(|o| o.device == new.device && o.series == new.series && o.x == new.x)
            else {
                continue;
            };
            compared += 1;
            // Throughput is the value itself, or its inverse for times.
            let ratio = if exp.higher_is_better {
                new.mean / rec.mean
            } else {
                rec.mean / new.mean
            };
            if ratio < 1.0 - tolerance {
                slower.push(format!(
                    "{}/{} {} at x={}: {:.1}% of the recorded throughput ({} then, {} now, {})",
                    new.paper,
                    new.experiment,
                    new.series,
                    new.x,
                    ratio * 100.0,
                    rec.mean,
                    new.mean,
                    new.unit
                ));
            }
        }
    }
    if compared == 0 {
        eprintln!(
            "note: {} holds no recorded rows for this device model; nothing compared",
            baseline.display()
        );
        return Ok(());
    }
    if !slower.is_empty() {
        anyhow::bail!(
            "throughput regression in {} of {compared} points:\n  {}",
            slower.len(),
            slower.join("\n  ")
        );
    }
    println!(
        "regress: {compared} points within {:.0}% of the recorded throughput",
        tolerance * 100.0
    );
    Ok(())
}
