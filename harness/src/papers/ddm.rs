//! The ddm paper's experiments (Lo, Chung & Pai, "Offloading Region Matching of Data
//! Distribution Management with CUDA", §IV: Figs. 5–12), a scale-up series beyond the
//! paper. The `ddm match` / `ddm generate` subcommands are in `users::ddm`.
//!
//! Each speedup figure and its time figure come from the same measurements, so they are
//! one experiment here: `fig5_7` (uniform, RS = 10 x 10), `fig6_8` (uniform, 100 x 100),
//! `fig9_11` (three crowded areas, 10 x 10), `fig10_12` (crowded, 100 x 100); the plot's
//! value panel is the time figure, its speedup panel (over `brute`, the paper's CPU)
//! the speedup figure. `scaleup_a1` and `scaleup_a100` go to a million regions.
//!
//! Engines: `gpu-region`, `gpu-grid` (the paper's two approaches, overlap information
//! maintained on the device across steps), `gpu-region-sliced` (beyond the paper: the
//! region engine with its Phase 3 candidates cut into slices over block rows so that a
//! step fills the GPU, [`Slices::Fill`]; same comparisons and results), `gpu-sweep`
//! (beyond the paper: a GPU sort-based sweep), their emulator twins `emu-*` (quick mode), and the CPU baselines
//! `brute`, `grid`, `sort` (one thread) and `brute-par`, `grid-par`, `sort-par` (all
//! cores), and today's strong CPU methods, Marzolla & D'Angelo's parallel sort-based
//! matching `sbm` / `sbm-par` and interval-tree matching `itm` / `itm-par`
//! ([`baselines::sbm`], [`baselines::itm`]); `best CPU (all cores)` is, per seed, the
//! least time of the all-core CPU series at that point, the yardstick of the targets
//! against today's CPU methods. A step's time is the paper's "region matching time": for
//! the GPU engines, Phase 1 (copy in the moved regions) to Phase 4 (the updated overlap
//! pairs back on the host), wall clock; for the CPU baselines, enumerating every
//! overlapping pair of the step's positions. The mean over the timed steps is recorded per seed. GPU and
//! emulator engines run all 30 steps; the CPU baselines run fewer at large sizes
//! ([`cpu_steps`]) so that an experiment stays within minutes.
//!
//! Checks (a mismatch fails the run): every device engine's pairs of the last step equal
//! the `sort` baseline's on every workload, and its overlap count equals the baseline's
//! after every step.

use crate::experiment::{Ctx, EngineKind, Experiment, Paper};
use anyhow::Context as _;
use baselines::ddm::{Algorithm, DdmMatcher};
use ddm_region::workload::{scale_up, Distribution, ScaleUpParams, Scenario, ScenarioParams};
use ddm_region::{Approach, Device, Engine, GridSpec, Pair, Slices, UpdateBatch};
use std::time::Instant;

/// The paper's tables and figures, and the scale-up beyond it.
pub fn experiments() -> Vec<Experiment> {
    let e = |id, title, x_label, y_label, baseline, paper_says, run| Experiment {
        paper: Paper::Ddm,
        id,
        title,
        x_label,
        y_label,
        log_x: true,
        log_y: true,
        higher_is_better: false,
        baseline,
        paper_says,
        run,
    };
    let regions = "regions (half publications)";
    let ms = "region matching time per step (ms)";
    vec![
        e(
            "fig5_7",
            "Figs. 5 and 7: speedup over the CPU and matching time vs regions, uniform, RS = 10 x 10",
            regions,
            ms,
            Some("brute"),
            "200x (REGION over the CPU at 32768 regions; GRID up to 150x); GRID faster than REGION (Remark 2)",
            fig5_7,
        ),
        e(
            "fig6_8",
            "Figs. 6 and 8: speedup over the CPU and matching time vs regions, uniform, RS = 100 x 100",
            regions,
            ms,
            Some("brute"),
            "200x (REGION over the CPU; GRID up to 150x); GRID slower with larger regions (Remark 3)",
            fig6_8,
        ),
        e(
            "fig9_11",
            "Figs. 9 and 11: speedup and matching time vs regions, three crowded areas (20 %), RS = 10 x 10",
            regions,
            ms,
            Some("brute"),
            "25x (REGION over the CPU, crowded; GRID about 5x); REGION faster than GRID (Remarks 4, 5)",
            fig9_11,
        ),
        e(
            "fig10_12",
            "Figs. 10 and 12: speedup and matching time vs regions, three crowded areas (20 %), RS = 100 x 100",
            regions,
            ms,
            Some("brute"),
            "25x (REGION over the CPU, crowded; GRID about 5x); REGION faster than GRID (Remarks 4, 5)",
            fig10_12,
        ),
        e(
            "scaleup_a1",
            "Beyond the paper: counting time vs regions up to 1M, 2-D, overlap degree alpha = 1",
            regions,
            "time to count all overlapping pairs (ms)",
            Some("sort-par"),
            "not in the paper; our target: gpu-sweep >= 10x sort-par (all host cores) at 1M regions",
            scaleup_a1,
        ),
        e(
            "scaleup_a100",
            "Beyond the paper: counting time vs regions up to 1M, 2-D, overlap degree alpha = 100",
            regions,
            "time to count all overlapping pairs (ms)",
            Some("sort-par"),
            "not in the paper; our target: gpu-sweep >= 10x sort-par (all host cores) at 1M regions",
            scaleup_a100,
        ),
    ]
}

fn fig5_7(ctx: &mut Ctx) -> anyhow::Result<()> {
    scenario_experiment(ctx, Distribution::Uniform, 10)
}
fn fig6_8(ctx: &mut Ctx) -> anyhow::Result<()> {
    scenario_experiment(ctx, Distribution::Uniform, 100)
}
fn fig9_11(ctx: &mut Ctx) -> anyhow::Result<()> {
    scenario_experiment(ctx, Distribution::Crowded, 10)
}
fn fig10_12(ctx: &mut Ctx) -> anyhow::Result<()> {
    scenario_experiment(ctx, Distribution::Crowded, 100)
}
fn scaleup_a1(ctx: &mut Ctx) -> anyhow::Result<()> {
    scaleup_experiment(ctx, 1.0)
}
fn scaleup_a100(ctx: &mut Ctx) -> anyhow::Result<()> {
    scaleup_experiment(ctx, 100.0)
}

fn host_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// The device engines' series suffixes (`gpu-region`, `emu-region-sliced`...).
const APPROACHES: [&str; 4] = ["region", "region-sliced", "grid", "sweep"];

/// The device engines of an experiment: the paper's region engine, the same with its
/// Phase 3 sliced over block rows ([`Slices::Fill`], beyond the paper: series
/// `*-region-sliced`), the paper's grid engine on `grid`, and the sweep.
fn engine_variants(grid: Approach) -> [(Approach, Slices); 4] {
    [
        (Approach::Region, Slices::Paper),
        (Approach::Region, Slices::Fill),
        (grid, Slices::Paper),
        (Approach::Sweep, Slices::Paper),
    ]
}

fn series_name(dev_name: &str, approach: &Approach, slices: Slices) -> String {
    match slices {
        Slices::Paper => format!("{dev_name}-{}", approach.name()),
        _ => format!("{dev_name}-{}-sliced", approach.name()),
    }
}

/// The devices wanted in this run: (`gpu` | `emu`, engine kind, device).
fn devices(ctx: &Ctx, series: &[&str]) -> anyhow::Result<Vec<(&'static str, EngineKind, Device)>> {
    let mut v = Vec::new();
    if series
        .iter()
        .any(|a| ctx.wants(&format!("gpu-{a}"), EngineKind::Gpu))
    {
        let ordinal = ctx
            .gpu_ordinal
            .context("a GPU engine was asked for, but no GPU is present")?;
        v.push((
            "gpu",
            EngineKind::Gpu,
            Device::gpu(ordinal, ddm_region::PTX).context("opening the GPU")?,
        ));
    }
    if series
        .iter()
        .any(|a| ctx.wants(&format!("emu-{a}"), EngineKind::Emu))
    {
        v.push(("emu", EngineKind::Emu, Device::emulator()));
    }
    Ok(v)
}

/// The CPU baselines by series name.
fn cpu_matchers(cell: Option<Vec<u32>>) -> Vec<(&'static str, DdmMatcher)> {
    let all = host_threads();
    vec![
        ("brute", DdmMatcher::new(Algorithm::Brute, 1)),
        ("brute-par", DdmMatcher::new(Algorithm::Brute, all)),
        (
            "grid",
            DdmMatcher::new(Algorithm::Grid { cell: cell.clone() }, 1),
        ),
        ("grid-par", DdmMatcher::new(Algorithm::Grid { cell }, all)),
        ("sort", DdmMatcher::new(Algorithm::Sort, 1)),
        ("sort-par", DdmMatcher::new(Algorithm::Sort, all)),
        // Today's strong CPU methods (Marzolla & D'Angelo's parallel SBM and ITM).
        ("sbm", DdmMatcher::new(Algorithm::Sbm, 1)),
        ("sbm-par", DdmMatcher::new(Algorithm::Sbm, all)),
        ("itm", DdmMatcher::new(Algorithm::Itm, 1)),
        ("itm-par", DdmMatcher::new(Algorithm::Itm, all)),
    ]
}

/// The series of the fastest CPU matcher on all cores at each point: per
/// seed, the least time of the `-par` series measured there.
pub const BEST_CPU: &str = "best CPU (all cores)";

/// Records [`BEST_CPU`] at `x` from this seed's `(series, ms)` times.
fn record_best_cpu(ctx: &mut Ctx, x: f64, times: &[(&str, f64)]) {
    let best = times
        .iter()
        .filter(|(s, _)| s.ends_with("-par"))
        .map(|&(_, ms)| ms)
        .fold(f64::INFINITY, f64::min);
    if best.is_finite() {
        ctx.record(BEST_CPU, x, best);
    }
}

/// Steps a CPU baseline is timed on: all of them, except for the quadratic brute force
/// at the paper's larger sizes (its time per step hardly varies).
fn cpu_steps(name: &str, regions: u32, steps: usize) -> usize {
    match name {
        "brute" if regions >= 8192 => 2.min(steps),
        "brute" | "brute-par" => 5.min(steps),
        _ => 10.min(steps),
    }
}

/// Figs. 5–12: a scenario of §IV per (regions, seed), 30 moves of every region.
fn scenario_experiment(ctx: &mut Ctx, distribution: Distribution, size: u32) -> anyhow::Result<()> {
    let xs: Vec<u32> = if ctx.quick {
        vec![48, 96]
    } else {
        vec![2048, 4096, 8192, 16384, 32768]
    };
    let steps = if ctx.quick { 1 } else { 30 };
    let devs = devices(ctx, &APPROACHES)?;
    // §IV: "the grid cell size ... is set to 100 x 100 for each test case".
    let grid = GridSpec::covering(2, 10_000, 100)?;
    let cpus: Vec<(&str, DdmMatcher)> = cpu_matchers(Some(vec![100, 100]))
        .into_iter()
        .filter(|(n, _)| ctx.wants(n, EngineKind::Cpu))
        .collect();
    let oracle = DdmMatcher::new(Algorithm::Sort, host_threads());
    let seeds = ctx.seeds.clone();
    ctx.set_steps((xs.len() * seeds.len()) as u64);
    for &n in &xs {
        for &seed in &seeds {
            ctx.step(&format!("{n} regions, seed {seed}"));
            let name = format!("{distribution:?} RS={size} regions={n} seed={seed}");
            let mut params = ScenarioParams::paper(n, size, distribution);
            params.steps = steps;
            let mut scenario = Scenario::new(params, seed)?;
            let initial = scenario.regions().clone();
            let mut batches = Vec::with_capacity(steps as usize);
            let mut positions = Vec::with_capacity(steps as usize);
            for _ in 0..steps {
                batches.push(scenario.step());
                positions.push(scenario.regions().clone());
            }
            let counts: Vec<u64> = positions.iter().map(|s| oracle.count(s)).collect();
            let reference = oracle.pairs(positions.last().expect("at least one step"));

            for (dev_name, kind, dev) in &devs {
                for (approach, slices) in engine_variants(Approach::Grid(grid.clone())) {
                    let series = series_name(dev_name, &approach, slices);
                    if !ctx.wants(&series, *kind) {
                        continue;
                    }
                    let mut engine = Engine::new(
                        dev,
                        approach.clone(),
                        initial.dims(),
                        initial.n_pub(),
                        initial.n_sub(),
                    )?;
                    engine.set_slices(slices);
                    engine.step(&UpdateBatch::everything(&initial), false)?;
                    let mut total_ms = 0.0;
                    let mut last = Vec::new();
                    for (i, batch) in batches.iter().enumerate() {
                        let t0 = Instant::now();
                        let (overlaps, pairs) = timed_step(&mut engine, batch)?;
                        total_ms += t0.elapsed().as_secs_f64() * 1e3;
                        ctx.check(
                            &format!("{name} step {i} (count)"),
                            ("sort", &[counts[i]]),
                            (&series, &[overlaps]),
                        )?;
                        last = pairs;
                    }
                    last.sort_unstable();
                    ctx.check(&name, ("sort", &reference), (&series, &last))?;
                    ctx.record(&series, n as f64, total_ms / steps as f64);
                }
            }
            let mut times = Vec::new();
            for (series, m) in &cpus {
                let k = cpu_steps(series, n, steps as usize);
                let t0 = Instant::now();
                let mut found = 0usize;
                for set in &positions[..k] {
                    found += m.pairs_unordered(set).len();
                }
                let ms = t0.elapsed().as_secs_f64() * 1e3 / k as f64;
                let want: usize = counts[..k].iter().map(|&c| c as usize).sum();
                ctx.check(&name, ("sort", &[want]), (series, &[found]))?;
                ctx.record(series, n as f64, ms);
                times.push((*series, ms));
            }
            record_best_cpu(ctx, n as f64, &times);
        }
    }
    Ok(())
}

/// One timed step of a device engine: Phases 1–4 with the updated pairs copied back (the
/// sweep engine, which keeps no overlap state, enumerates all pairs).
fn timed_step(engine: &mut Engine, batch: &UpdateBatch) -> anyhow::Result<(u64, Vec<Pair>)> {
    if *engine.approach() == Approach::Sweep {
        engine.step(batch, false)?;
        let mut pairs = Vec::new();
        let n = engine.for_each_pair_batch(|b| pairs.extend_from_slice(b))?;
        return Ok((n, pairs));
    }
    let r = engine.step(batch, true)?;
    Ok((r.overlaps, r.pairs.unwrap_or_default()))
}

/// The scale-up: one static matching per (regions, seed), counting.
fn scaleup_experiment(ctx: &mut Ctx, alpha: f64) -> anyhow::Result<()> {
    let xs: Vec<u32> = if ctx.quick {
        vec![128, 256]
    } else {
        vec![16_384, 65_536, 262_144, 1_048_576]
    };
    let reps = if ctx.quick { 1 } else { 5 };
    let devs = devices(ctx, &APPROACHES)?;
    let cpus: Vec<(&str, DdmMatcher)> = cpu_matchers(None)
        .into_iter()
        .filter(|(n, _)| !n.starts_with("brute") && ctx.wants(n, EngineKind::Cpu))
        .collect();
    let seeds = ctx.seeds.clone();
    ctx.set_steps((xs.len() * seeds.len()) as u64);
    for &n in &xs {
        for &seed in &seeds {
            ctx.step(&format!("{n} regions, seed {seed}"));
            let name = format!("scale-up alpha={alpha} regions={n} seed={seed}");
            let set = scale_up(
                &ScaleUpParams {
                    regions: n,
                    alpha,
                    dims: 2,
                },
                seed,
            )?;
            let oracle = DdmMatcher::new(Algorithm::Sort, host_threads());
            let want = oracle.count(&set);
            for (dev_name, kind, dev) in &devs {
                for (approach, slices) in
                    engine_variants(Approach::Grid(GridSpec::fit(&set, None)?))
                {
                    let series = series_name(dev_name, &approach, slices);
                    // The paper's engines keep an n_pub x n_sub bit matrix: up to 65536 regions.
                    // (In quick mode the emulator runs the sweep only: the figures cover the rest.)
                    let paper_engine = approach != Approach::Sweep;
                    if !ctx.wants(&series, *kind)
                        || (paper_engine && (n > 65_536 || *kind == EngineKind::Emu))
                    {
                        continue;
                    }
                    let mut engine =
                        Engine::new(dev, approach.clone(), 2, set.n_pub(), set.n_sub())?;
                    engine.set_slices(slices);
                    let everything = UpdateBatch::everything(&set);
                    let t1 = Instant::now();
                    engine.step(&everything, false)?;
                    let got = engine.count()?;
                    let first_ms = t1.elapsed().as_secs_f64() * 1e3;
                    ctx.check(&name, ("sort-par", &[want]), (&series, &[got]))?;
                    if approach == Approach::Sweep {
                        // Regions resident on the device (Fig. 1): the count alone.
                        let t2 = Instant::now();
                        for _ in 0..reps {
                            engine.count()?;
                        }
                        ctx.record(
                            &series,
                            n as f64,
                            t2.elapsed().as_secs_f64() * 1e3 / reps as f64,
                        );
                        ctx.record(&format!("{series}+upload"), n as f64, first_ms);
                    } else {
                        // Incremental engines: adding every region is their matching.
                        ctx.record(&series, n as f64, first_ms);
                    }
                }
            }
            let mut times = Vec::new();
            for (series, m) in &cpus {
                let r = if series.ends_with("-par") { reps } else { 1 };
                let t0 = Instant::now();
                let mut got = 0;
                for _ in 0..r {
                    got = m.count(&set);
                }
                let ms = t0.elapsed().as_secs_f64() * 1e3 / r as f64;
                ctx.record(series, n as f64, ms);
                times.push((*series, ms));
                ctx.check(&name, ("sort-par", &[want]), (series, &[got]))?;
            }
            record_best_cpu(ctx, n as f64, &times);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_experiment_runs_in_quick_mode_on_cpu_engines() {
        for exp in experiments() {
            let names = vec![
                "sort".to_string(),
                "grid".to_string(),
                "sort-par".to_string(),
                "brute".to_string(),
                "sbm".to_string(),
                "sbm-par".to_string(),
                "itm-par".to_string(),
            ];
            let mut ctx = Ctx::new(
                true,
                vec![1],
                Some(names),
                None,
                std::sync::Arc::new(indicatif::ProgressBar::hidden()),
            );
            (exp.run)(&mut ctx).unwrap_or_else(|e| panic!("{}: {e:#}", exp.id));
            assert!(!ctx.samples.is_empty(), "{}", exp.id);
            for series in ["sbm", "sbm-par", "itm-par", BEST_CPU] {
                assert!(
                    ctx.samples.iter().any(|s| s.series == series),
                    "{}: {series} recorded",
                    exp.id
                );
            }
        }
    }

    #[test]
    fn sweep_pairs_of_one_set_match_the_sort_baseline() {
        let set = scale_up(
            &ScaleUpParams {
                regions: 300,
                alpha: 20.0,
                dims: 2,
            },
            3,
        )
        .unwrap();
        let dev = Device::emulator();
        let mut e = Engine::with_regions(&dev, Approach::Sweep, &set).unwrap();
        let want = DdmMatcher::new(Algorithm::Sort, 1).pairs(&set);
        assert!(!want.is_empty());
        assert_eq!(e.pairs().unwrap(), want);
    }
}
