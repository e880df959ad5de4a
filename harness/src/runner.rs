//! `harness run`: runs experiments, checks engines agree, writes CSV (and the per-seed
//! samples), PNG and SVG per experiment.

use crate::experiment::{Ctx, Experiment};
use crate::meta::Meta;
use crate::results::{self, Row};
use crate::{papers, plot};
use anyhow::Context;
use gpu_kernels::Device;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
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
        let samples = results::sample_rows(exp, &ctx.samples, &meta);
        results::write_samples(
            &results::samples_path(&opts.out, exp.paper.name(), exp.id),
            &samples,
        )?;
        all_samples.extend(samples);
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
    Ok((all_rows, all_samples))
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
