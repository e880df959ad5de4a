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
//! (beyond the paper: a GPU sort-based sweep), `gpu-bisect` (beyond the paper: counting
//! by binary search over sorted end points in 1-D, the sweep of the dimension with the
//! fewest sampled overlaps in 2-D and up, and for small sets, as the paper's 32768
//! regions a step, the publications sorted tile by tile and swept in shared memory,
//! two launches and one wait, [`Approach::Bisect`]), their emulator twins `emu-*`
//! (quick mode), and the CPU baselines
//! `brute`, `grid`, `sort` (one thread) and `brute-par`, `grid-par`, `sort-par` (all
//! cores), and today's strong CPU methods, Marzolla & D'Angelo's parallel sort-based
//! matching `sbm` / `sbm-par` and interval-tree matching `itm` / `itm-par`
//! ([`baselines::sbm`], [`baselines::itm`]), and the CPU twin of `gpu-bisect`, `bisect` /
//! `bisect-par` ([`baselines::bisect`]); `best CPU (all cores)` is, per seed, the
//! least time of the all-core CPU series at that point, the yardstick of the targets
//! against today's CPU methods. A step's time is the paper's "region matching time": for
//! the GPU engines, Phase 1 (copy in the moved regions) to Phase 4 (the updated overlap
//! pairs back on the host), wall clock; for the CPU baselines, enumerating every
//! overlapping pair of the step's positions. The mean over the timed steps is recorded per seed. GPU and
//! emulator engines run all 30 steps; the CPU baselines run fewer at large sizes
//! ([`cpu_steps`]) so that an experiment stays within minutes.
//!
//! Beyond the paper too: `density`, `density_2d` and `density_4m` (count time against
//! the overlap degree at a million regions, and at four million in 1-D, on the peer's
//! random intervals: Marzolla, Birolo, D'Angelo & Fariselli's generator,
//! [`intervals`]), and `pairs` and `pairs_2d` (every
//! overlapping pair delivered to the host, 32k to 4M regions).
//!
//! Beyond the papers (one GPU): `scaling`, the sorting engines over many GPUs of one
//! host ([`MultiEngine`], see [`scaling`]).
//!
//! Checks (a mismatch fails the run): every device engine's pairs of the last step equal
//! the `sort` baseline's on every workload, and its overlap count equals the baseline's
//! after every step.

use crate::experiment::{Ctx, EngineKind, Experiment, Paper};
use anyhow::Context as _;
use baselines::ddm::{Algorithm, DdmMatcher};
use ddm_region::workload::{
    intervals, scale_up, Distribution, IntervalParams, ScaleUpParams, Scenario, ScenarioParams,
};
use ddm_region::{
    Approach, Device, Engine, GridSpec, MultiEngine, Pair, RegionSet, SlabEngine, Slices,
    UpdateBatch,
};
use gpu_kernels::multi::Devices;
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
        e(
            "density",
            "Beyond the paper: counting time vs overlap degree, 1M intervals, 1-D, the peer's random intervals (lengths 10-1000)",
            "overlapping subscriptions per publication (nominal)",
            "time to count all overlapping pairs (ms)",
            Some("sbm-par"),
            "not in the paper; peer (Marzolla et al. 2024, Thrust, H100): 4.95 ms at degree 2525 (span 200k), 5.26 ms at 25 (span 20M), transfers included; our target: best GPU \
                from host memory no slower, and >= 10x the best CPU",
            density_1d,
        ),
        e(
            "density_4m",
            "Beyond the paper: counting time vs overlap degree, 4M intervals, 1-D, the peer's random intervals (lengths 10-1000)",
            "overlapping subscriptions per publication (nominal)",
            "time to count all overlapping pairs (ms)",
            Some("sbm-par"),
            "not in the paper; peer (Marzolla et al. 2024, Thrust, H100): 20.3 ms at 4M intervals, span 200k (degree 10100), transfers included; our target: best GPU from host \
                memory no slower, and >= 10x the best CPU",
            density_1d_4m,
        ),
        e(
            "density_2d",
            "Beyond the paper: counting time vs overlap degree, 1M regions, 2-D, the peer's random intervals in each dimension",
            "overlapping subscriptions per publication (nominal)",
            "time to count all overlapping pairs (ms)",
            Some("sbm-par"),
            "not in the paper",
            density_2d,
        ),
        e(
            "pairs",
            "Beyond the paper: every overlapping pair delivered to the host vs regions, 1-D, degree 10",
            regions,
            "time to deliver all overlapping pairs to host memory (ms)",
            Some("sbm-par"),
            "not in the paper; our target at 1M regions: >= 5x sbm-par, or within 1.5x of copying the pairs' bytes",
            pairs_1d,
        ),
        e(
            "pairs_2d",
            "Beyond the paper: every overlapping pair delivered to the host vs regions, 2-D, degree 10",
            regions,
            "time to deliver all overlapping pairs to host memory (ms)",
            Some("sbm-par"),
            "not in the paper; our target at 1M regions: >= 5x sbm-par, or within 1.5x of copying the pairs' bytes",
            pairs_2d,
        ),
        Experiment {
            log_y: false,
            higher_is_better: true,
            ..e(
                "scaling",
                SCALING_TITLE,
                "GPUs",
                "matchings/s, and speedup over one GPU (x)",
                None,
                "not in the paper (one GPU)",
                scaling,
            )
        },
    ]
}

const SCALING_TITLE: &str = "Many GPUs in one host (beyond the paper): matchings per second of the sweep and bisect engines with the publications partitioned over the GPUs (gpu \
    multi sweep, gpu multi bisect) or the space cut into slabs of dimension 0 (by-slab), against the number of GPUs, at the scale-up's largest workload (1M regions, 2-D, overlap \
    degree 100) and at 4x it; a matching is every overlapping pair counted (count) or delivered to host memory (pairs) with the regions resident; answers checked against the one-GPU engine";

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
const APPROACHES: [&str; 5] = ["region", "region-sliced", "grid", "sweep", "bisect"];

/// The device engines of an experiment: the paper's region engine, the same with its
/// Phase 3 sliced over block rows ([`Slices::Fill`], beyond the paper: series
/// `*-region-sliced`), the paper's grid engine on `grid`, the sweep and bisect.
fn engine_variants(grid: Approach) -> [(Approach, Slices); 5] {
    [
        (Approach::Region, Slices::Paper),
        (Approach::Region, Slices::Fill),
        (grid, Slices::Paper),
        (Approach::Sweep, Slices::Paper),
        (Approach::Bisect, Slices::Paper),
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
        // Counting by binary search (Marzolla, Birolo, D'Angelo & Fariselli 2024).
        ("bisect", DdmMatcher::new(Algorithm::Bisect, 1)),
        ("bisect-par", DdmMatcher::new(Algorithm::Bisect, all)),
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
                    let mut parts = [0.0f64; 4];
                    for (i, batch) in batches.iter().enumerate() {
                        let t0 = Instant::now();
                        let overlaps = timed_step(&mut engine, batch, &mut last)?;
                        total_ms += t0.elapsed().as_secs_f64() * 1e3;
                        let t = engine.last_step_times();
                        for (sum, us) in
                            parts
                                .iter_mut()
                                .zip([t.stage_us, t.enqueue_us, t.wait_us, t.total_us])
                        {
                            *sum += us / steps as f64;
                        }
                        ctx.check(
                            &format!("{name} step {i} (count)"),
                            ("sort", &[counts[i]]),
                            (&series, &[overlaps]),
                        )?;
                    }
                    last.sort_unstable();
                    ctx.check(&name, ("sort", &reference), (&series, &last))?;
                    ctx.record(&series, n as f64, total_ms / steps as f64);
                    if *kind == EngineKind::Gpu
                        && !approach.sorts()
                        && n == *xs.last().expect("sizes")
                    {
                        // Where a GPU step's host time goes (the paper's engines; the
                        // sorting engines match after their step, in for_each_pair_batch).
                        let [stage, enqueue, wait, total] = parts;
                        eprintln!(
                            "    {series} step at {n} regions, seed {seed}: staging {stage:.1} us, enqueue {enqueue:.1} us, wait {wait:.1} us, engine step {total:.1} us (mean of {steps})"
                        );
                    }
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
/// sorting engines, which keep no overlap state, enumerate all pairs) into `pairs`, the
/// buffer a simulation keeps from step to step (the CPU engines make a new `Vec` a step:
/// an allocation against milliseconds of matching). Returns the number of overlaps.
fn timed_step(
    engine: &mut Engine,
    batch: &UpdateBatch,
    pairs: &mut Vec<Pair>,
) -> anyhow::Result<u64> {
    if engine.approach().sorts() {
        engine.step(batch, false)?;
        return Ok(engine.pairs_into(pairs)?);
    }
    let r = engine.step(batch, true)?;
    *pairs = r.pairs.unwrap_or_default();
    Ok(r.overlaps)
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
                    let paper_engine = !approach.sorts();
                    if !ctx.wants(&series, *kind)
                        || (paper_engine && (n > 65_536 || *kind == EngineKind::Emu))
                    {
                        continue;
                    }
                    let mut engine =
                        Engine::new(dev, approach.clone(), 2, set.n_pub(), set.n_sub())?;
                    engine.set_slices(slices);
                    let t1 = Instant::now();
                    engine.load(&set)?;
                    let got = engine.count()?;
                    let first_ms = t1.elapsed().as_secs_f64() * 1e3;
                    ctx.check(&name, ("sort-par", &[want]), (&series, &[got]))?;
                    if approach.sorts() {
                        // From regions in host memory: the whole set loaded and counted,
                        // after the untimed first round above (the engine's buffers are
                        // allocated once, as a federation's would be).
                        let t2 = Instant::now();
                        for _ in 0..reps {
                            engine.load(&set)?;
                            engine.count()?;
                        }
                        let upload_ms = t2.elapsed().as_secs_f64() * 1e3 / reps as f64;
                        if *kind == EngineKind::Gpu && n == *xs.last().expect("sizes") {
                            print_load_times(&series, n, seed, &engine);
                        }
                        // Regions resident on the device (Fig. 1): the count alone.
                        let t3 = Instant::now();
                        for _ in 0..reps {
                            engine.count()?;
                        }
                        ctx.record(
                            &series,
                            n as f64,
                            t3.elapsed().as_secs_f64() * 1e3 / reps as f64,
                        );
                        ctx.record(&format!("{series}+upload"), n as f64, upload_ms);
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

/// Where a GPU engine's last whole-set load went (fills of the page-locked staging
/// against the copies' drain): a line on stderr.
fn print_load_times(series: &str, n: u32, seed: u64, engine: &Engine) {
    let t = engine.last_load_times();
    let gbps = |us: f64| t.bytes as f64 / (us * 1e3).max(1e-9);
    eprintln!(
        "    {series} load of {n} regions, seed {seed}: {} MB, fills {:.1} us ({:.1} GB/s), drain {:.1} us, load {:.1} us ({:.1} GB/s end to end)",
        t.bytes >> 20,
        t.fill_us,
        gbps(t.fill_us),
        t.drain_us,
        t.total_us,
        gbps(t.total_us)
    );
}

fn density_1d(ctx: &mut Ctx) -> anyhow::Result<()> {
    let degrees = if ctx.quick {
        vec![1.0, 100.0]
    } else {
        // 25.25 and 2525: the peer's spans of 20M and 200k at 1M intervals.
        vec![1.0, 10.0, 25.25, 100.0, 1000.0, 2525.0, 10_000.0]
    };
    density_experiment(ctx, 1, 1 << 20, &degrees)
}

fn density_1d_4m(ctx: &mut Ctx) -> anyhow::Result<()> {
    let degrees = if ctx.quick {
        vec![1.0, 100.0]
    } else {
        // 101 and 10,100: the peer's spans of 20M and 200k at 4M intervals.
        vec![1.0, 10.0, 101.0, 1000.0, 2525.0, 10_100.0]
    };
    density_experiment(ctx, 1, 1 << 22, &degrees)
}

fn density_2d(ctx: &mut Ctx) -> anyhow::Result<()> {
    let degrees = if ctx.quick {
        vec![1.0, 100.0]
    } else {
        // (Degree 10,000 in 2-D: about 3.5e10 candidates in the sweep dimension, seconds
        // per count on every engine.)
        vec![1.0, 10.0, 100.0, 1000.0]
    };
    density_experiment(ctx, 2, 1 << 20, &degrees)
}

/// Repetitions of a timed device round whose untimed first round took `first`: about
/// 200 ms of them, 1 to 5 (1 in quick mode).
fn timed_reps(ctx: &Ctx, first: std::time::Duration) -> u32 {
    if ctx.quick {
        return 1;
    }
    (0.2 / first.as_secs_f64().max(1e-6)).clamp(1.0, 5.0) as u32
}

/// The strong CPU matchers on all cores, the series the beyond-the-paper experiments
/// time (the one-core ones and the older sweep would take minutes at the dense points).
/// `bisect-par` in one dimension only: in more it is a sweep like `sbm-par`, several
/// times slower at the dense points (seconds per count).
fn strong_cpu_matchers(ctx: &Ctx, dims: usize) -> Vec<(&'static str, DdmMatcher)> {
    let all = host_threads();
    let bisect = (dims == 1).then_some(("bisect-par", Algorithm::Bisect));
    [("sbm-par", Algorithm::Sbm), ("itm-par", Algorithm::Itm)]
        .into_iter()
        .chain(bisect)
        .filter(|(n, _)| ctx.wants(n, EngineKind::Cpu))
        .map(|(n, a)| (n, DdmMatcher::new(a, all)))
        .collect()
}

/// The sorting device engines (`gpu-sweep`, `gpu-bisect` and their emulator twins)
/// wanted in this run: (series, approach, device).
fn sorting_engines<'a>(
    ctx: &Ctx,
    devs: &'a [(&'static str, EngineKind, Device)],
) -> Vec<(String, Approach, &'a Device)> {
    let mut v = Vec::new();
    for (dev_name, kind, dev) in devs {
        for approach in [Approach::Sweep, Approach::Bisect] {
            let series = format!("{dev_name}-{}", approach.name());
            if ctx.wants(&series, *kind) {
                v.push((series, approach, dev));
            }
        }
    }
    v
}

/// `density`, `density_2d`, `density_4m`: one count per (degree, seed) at `regions` (a
/// million, four million) of the peer's random intervals (a thousandth as many in quick
/// runs). Device engines: the count with the regions resident
/// (`gpu-*`) and from regions in host memory (`gpu-*+upload`: the whole set loaded,
/// [`Engine::load`], then counted), each the mean of a few repetitions after one
/// untimed round on the same engine (its buffers are allocated once, as a federation's
/// would be).
fn density_experiment(
    ctx: &mut Ctx,
    dims: usize,
    regions: u32,
    degrees: &[f64],
) -> anyhow::Result<()> {
    let regions: u32 = if ctx.quick {
        (regions / 1000).max(2) & !1
    } else {
        regions
    };
    let devs = devices(ctx, &["sweep", "bisect"])?;
    let engines = sorting_engines(ctx, &devs);
    let cpus = strong_cpu_matchers(ctx, dims);
    let seeds = ctx.seeds.clone();
    ctx.set_steps((degrees.len() * seeds.len()) as u64);
    for &degree in degrees {
        for &seed in &seeds {
            ctx.step(&format!("degree {degree}, seed {seed}"));
            let params = IntervalParams::for_degree(regions, dims, degree);
            let name = format!(
                "intervals {dims}-D regions={regions} span={} seed={seed}",
                params.span
            );
            let set = intervals(&params, seed)?;
            let oracle = DdmMatcher::new(Algorithm::Sbm, host_threads());
            let want = oracle.count(&set);
            for (series, approach, dev) in &engines {
                let mut engine =
                    Engine::new(dev, approach.clone(), dims, set.n_pub(), set.n_sub())?;
                let t = Instant::now();
                engine.load(&set)?;
                let got = engine.count()?;
                let reps = timed_reps(ctx, t.elapsed());
                ctx.check(&name, ("sbm-par", &[want]), (series, &[got]))?;
                let t0 = Instant::now();
                for _ in 0..reps {
                    engine.load(&set)?;
                    engine.count()?;
                }
                let upload_ms = t0.elapsed().as_secs_f64() * 1e3 / reps as f64;
                if dev.is_gpu() && degree == degrees[0] {
                    print_load_times(series, regions, seed, &engine);
                }
                let t1 = Instant::now();
                for _ in 0..reps {
                    engine.count()?;
                }
                let ms = t1.elapsed().as_secs_f64() * 1e3 / reps as f64;
                ctx.record(series, degree, ms);
                ctx.record(&format!("{series}+upload"), degree, upload_ms);
            }
            let mut times = Vec::new();
            for (series, m) in &cpus {
                let r = if ctx.quick || degree > 100.0 { 1 } else { 3 };
                let t0 = Instant::now();
                let mut got = 0;
                for _ in 0..r {
                    got = m.count(&set);
                }
                let ms = t0.elapsed().as_secs_f64() * 1e3 / r as f64;
                ctx.check(&name, ("sbm-par", &[want]), (series, &[got]))?;
                ctx.record(series, degree, ms);
                times.push((*series, ms));
            }
            record_best_cpu(ctx, degree, &times);
        }
    }
    Ok(())
}

fn pairs_1d(ctx: &mut Ctx) -> anyhow::Result<()> {
    pairs_experiment(ctx, 1)
}

fn pairs_2d(ctx: &mut Ctx) -> anyhow::Result<()> {
    pairs_experiment(ctx, 2)
}

/// Pairs up to this many regions are checked pair for pair; above, by count and an
/// order-free checksum.
const PAIR_FOR_PAIR: u32 = 1 << 18;

/// An order-free checksum of a list of pairs (the wrapping sum of a mix of each).
fn pair_checksum(pairs: &[Pair]) -> u64 {
    pairs.iter().fold(0u64, |acc, p| {
        let x = ((p.publication as u64) << 32 | p.subscription as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        acc.wrapping_add(x ^ (x >> 29))
    })
}

/// `pairs`, `pairs_2d`: every overlapping pair delivered to host memory, at overlap
/// degree 10 of the peer's random intervals. Device engines: until every pair has been
/// handed to the caller in host memory (the engine's page-locked window, window by
/// window), with the regions resident (`gpu-*`) and from regions in host memory
/// (`gpu-*+upload`, [`Engine::load`] first), after one untimed round whose pairs are
/// checked; `copy of the pairs' bytes` is one device-to-host copy of as many bytes into
/// page-locked memory (the bus's share). CPU engines: until their unordered pair list
/// is built.
fn pairs_experiment(ctx: &mut Ctx, dims: usize) -> anyhow::Result<()> {
    let xs: Vec<u32> = if ctx.quick {
        vec![256, 512]
    } else {
        vec![32_768, 262_144, 1 << 20, 1 << 22]
    };
    let degree = 10.0;
    let devs = devices(ctx, &["sweep", "bisect"])?;
    let engines = sorting_engines(ctx, &devs);
    let cpus = strong_cpu_matchers(ctx, dims);
    let seeds = ctx.seeds.clone();
    ctx.set_steps((xs.len() * seeds.len()) as u64);
    for &n in &xs {
        for &seed in &seeds {
            ctx.step(&format!("{n} regions, seed {seed}"));
            let params = IntervalParams::for_degree(n, dims, degree);
            let name = format!(
                "intervals {dims}-D regions={n} span={} seed={seed}",
                params.span
            );
            let set = intervals(&params, seed)?;
            let oracle = DdmMatcher::new(Algorithm::Sbm, host_threads());
            let mut want = oracle.pairs_unordered(&set);
            let want_sum = [want.len() as u64, pair_checksum(&want)];
            let exact = n <= PAIR_FOR_PAIR;
            if exact {
                want.sort_unstable();
            }
            let check = |ctx: &Ctx, series: &str, mut got: Vec<Pair>| -> anyhow::Result<()> {
                if exact {
                    got.sort_unstable();
                    ctx.check(&name, ("sbm-par", &want), (series, &got))
                } else {
                    let sum = [got.len() as u64, pair_checksum(&got)];
                    ctx.check(
                        &name,
                        ("sbm-par (count, checksum)", &want_sum),
                        (series, &sum),
                    )
                }
            };
            let mut reps = 1;
            for (series, approach, dev) in &engines {
                let mut engine =
                    Engine::new(dev, approach.clone(), dims, set.n_pub(), set.n_sub())?;
                let t = Instant::now();
                engine.load(&set)?;
                let mut got = Vec::new();
                engine.for_each_pair_batch(|b| got.extend_from_slice(b))?;
                reps = timed_reps(ctx, t.elapsed());
                check(ctx, series, got)?;
                // Timed: until every pair has been handed to the caller in host memory
                // (the engine's page-locked window); what the caller then does with
                // them is its own time.
                let deliver = |e: &mut Engine| -> anyhow::Result<u64> {
                    let mut n = 0u64;
                    e.for_each_pair_batch(|b| n += b.len() as u64)?;
                    Ok(n)
                };
                let t0 = Instant::now();
                for _ in 0..reps {
                    engine.load(&set)?;
                    deliver(&mut engine)?;
                }
                let upload_ms = t0.elapsed().as_secs_f64() * 1e3 / reps as f64;
                let t1 = Instant::now();
                for _ in 0..reps {
                    deliver(&mut engine)?;
                }
                let ms = t1.elapsed().as_secs_f64() * 1e3 / reps as f64;
                ctx.record(series, n as f64, ms);
                ctx.record(&format!("{series}+upload"), n as f64, upload_ms);
            }
            if let Some((_, EngineKind::Gpu, dev)) = devs.iter().find(|d| d.1 == EngineKind::Gpu) {
                let k = want_sum[0].max(1) as usize;
                let buf = dev.alloc::<Pair>(k)?;
                let mut host = dev.alloc_host::<Pair>(k)?;
                dev.read_into(&buf, 0, host.as_mut_slice())?;
                let t0 = Instant::now();
                for _ in 0..reps {
                    dev.read_into(&buf, 0, host.as_mut_slice())?;
                }
                let ms = t0.elapsed().as_secs_f64() * 1e3 / reps as f64;
                ctx.record(COPY_FLOOR, n as f64, ms);
            }
            let mut times = Vec::new();
            for (series, m) in &cpus {
                let t0 = Instant::now();
                let got = m.pairs_unordered(&set);
                let ms = t0.elapsed().as_secs_f64() * 1e3;
                check(ctx, series, got)?;
                ctx.record(series, n as f64, ms);
                times.push((*series, ms));
            }
            record_best_cpu(ctx, n as f64, &times);
        }
    }
    Ok(())
}

/// The series of the `pairs` experiments' bus share: one copy of the pairs' bytes.
pub const COPY_FLOOR: &str = "copy of the pairs' bytes";

/// The scaling experiment's workloads: (second factor, region set) for the scale-up's
/// largest point (1M regions, 2-D, overlap degree 100) and 4x its regions. Quick (the
/// emulator, several devices at once): 32 and 128 regions.
fn scaling_workloads(quick: bool, seed: u64) -> anyhow::Result<Vec<(String, RegionSet)>> {
    let n: u32 = if quick { 32 } else { 1 << 20 };
    [n, 4 * n]
        .into_iter()
        .map(|regions| {
            let set = scale_up(
                &ScaleUpParams {
                    regions,
                    alpha: 100.0,
                    dims: 2,
                },
                seed,
            )?;
            Ok((format!("regions={}", regions_factor(regions)), set))
        })
        .collect()
}

/// `1M`, `4M`, `512`: a region count as a series' factor.
fn regions_factor(n: u32) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{}M", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{}k", n >> 10),
        n => n.to_string(),
    }
}

/// A partitioned engine of the scaling experiment: the publications cut over the
/// devices (`""`, [`MultiEngine`]) or the space cut into slabs (`" by-slab"`,
/// [`SlabEngine`]).
enum Partitioned<'d> {
    Publications(MultiEngine<'d>),
    Slabs(SlabEngine<'d>),
}

impl<'d> Partitioned<'d> {
    fn build(
        cut: &str,
        devs: &'d Devices,
        approach: &Approach,
        set: &RegionSet,
    ) -> anyhow::Result<Self> {
        Ok(if cut.is_empty() {
            Partitioned::Publications(MultiEngine::with_regions(devs, approach.clone(), set)?)
        } else {
            Partitioned::Slabs(SlabEngine::with_regions(devs, approach.clone(), set)?)
        })
    }

    fn matching(&mut self, m: Matching) -> anyhow::Result<Matched> {
        Ok(match (self, m) {
            (Partitioned::Publications(e), Matching::Count) => Matched::Count(e.count()?),
            (Partitioned::Publications(e), Matching::Pairs) => Matched::Pairs(e.pairs()?),
            (Partitioned::Slabs(e), Matching::Count) => Matched::Count(e.count()?),
            (Partitioned::Slabs(e), Matching::Pairs) => Matched::Pairs(e.pairs()?),
        })
    }
}

/// What one timed matching of the scaling experiment delivers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Matching {
    /// The number of overlapping pairs ([`Engine::count`]).
    Count,
    /// Every overlapping pair in host memory ([`Engine::pairs`]).
    Pairs,
}

/// The answers of one matching: a count, or the pairs.
#[derive(Debug, PartialEq)]
enum Matched {
    Count(u64),
    Pairs(Vec<Pair>),
}

impl Matched {
    fn len(&self) -> usize {
        match self {
            Matched::Count(n) => *n as usize,
            Matched::Pairs(p) => p.len(),
        }
    }
}

impl Matching {
    const BOTH: [Matching; 2] = [Matching::Count, Matching::Pairs];

    fn name(self) -> &'static str {
        match self {
            Matching::Count => "count",
            Matching::Pairs => "pairs",
        }
    }

    /// Matchings per second of `run` (one matching of this kind) over the scaling
    /// experiment's stream, and the last matching's answers.
    fn rate(
        self,
        quick: bool,
        mut run: impl FnMut(Matching) -> anyhow::Result<Matched>,
    ) -> anyhow::Result<(f64, Matched)> {
        // Timed rounds of one matching each (the budget ends a full-size stream early).
        let stream = vec![(); if quick { 1 } else { 1000 }];
        let mut last = Matched::Count(0);
        let mut per_round = None;
        let (r, _, _) = super::scaling::rate(quick, &stream, 1, |_| {
            let t0 = Instant::now();
            last = run(self)?;
            let took = t0.elapsed();
            // Every round of a resident set finds the same pairs.
            let n = last.len();
            anyhow::ensure!(
                *per_round.get_or_insert(n) == n,
                "{} found {n} pairs after {} in an earlier round",
                self.name(),
                per_round.unwrap_or(n)
            );
            Ok((took, n))
        })?;
        Ok((r, last))
    }
}

/// `scaling` (beyond the paper, which uses one GPU): the sweep and bisect engines (the
/// fastest device engines at the scale-up's million regions, `scaleup_a1` and
/// `scaleup_a100`) with the publications partitioned over the first 1, 2, 4, 8 GPUs
/// ([`MultiEngine`]) or the space cut into slabs of dimension 0 (`by-slab`,
/// [`SlabEngine`]), at 1M and 4M regions, overlap degree 100. A matching is the
/// scale-up's timed unit with the regions resident: every overlapping pair counted
/// (`count`) or delivered to host memory (`pairs`). Series (see `papers::scaling`):
/// `gpu multi <approach>[ by-slab] <matching> regions=<n> matchings/s` and its `speedup` over one
/// GPU, and the one-GPU engine's `gpu <approach> <matching> regions=<n> matchings/s` at
/// x = 1. The last timed matching's count and pair list are checked against the one-GPU
/// engine's, whose count is checked against the CPU sort's. Without a GPU: 1, 2 and 4
/// emulated devices at 32 and 128 regions.
fn scaling(ctx: &mut Ctx) -> anyhow::Result<()> {
    use super::scaling::Scale;
    let Some(scale) = Scale::of(ctx) else {
        return Ok(());
    };
    let approaches = [("sweep", Approach::Sweep), ("bisect", Approach::Bisect)];
    ctx.set_steps((ctx.seeds.len() * 2 * approaches.len() * (1 + 2 * scale.counts.len())) as u64);
    for seed in ctx.seeds.clone() {
        for (factor, set) in scaling_workloads(ctx.quick, seed)? {
            let label = format!("scaling {factor}, seed {seed}");
            let oracle = DdmMatcher::new(Algorithm::Sort, host_threads()).count(&set);
            for (name, approach) in &approaches {
                // The one-GPU engine: the reference answers and the throughput to match.
                ctx.step(&format!("{label}: one-device {name} engine"));
                let one_name = format!("one-device {name} engine");
                let one = scale.open(1, ddm_region::PTX)?;
                let dev = one.get(0).context("a device")?;
                let mut engine = Engine::with_regions(dev, approach.clone(), &set)?;
                let mut want = Vec::new();
                for m in Matching::BOTH {
                    let (r, answers) = m.rate(ctx.quick, |m| match m {
                        Matching::Count => Ok(Matched::Count(engine.count()?)),
                        Matching::Pairs => Ok(Matched::Pairs(engine.pairs()?)),
                    })?;
                    let series =
                        format!("{} {name} {} {factor} matchings/s", scale.prefix, m.name());
                    ctx.record(&series, 1.0, r);
                    want.push(answers);
                }
                ctx.check(
                    &label,
                    ("sort-par", &[Matched::Count(oracle)]),
                    (&one_name, &want[..1]),
                )?;
                drop(engine);
                drop(one);
                for cut in ["", " by-slab"] {
                    let mut on_one = [0.0; 2];
                    for &k in &scale.counts {
                        ctx.step(&format!("{label}: multi {name}{cut} on {k} devices"));
                        let devs = scale.open(k, ddm_region::PTX)?;
                        let mut run = Partitioned::build(cut, &devs, approach, &set)?;
                        for (i, m) in Matching::BOTH.into_iter().enumerate() {
                            let engine = format!("multi {name}{cut} {}", m.name());
                            let (r, got) = m.rate(ctx.quick, |m| run.matching(m))?;
                            let series =
                                format!("{} {engine} {factor} ({k} devices)", scale.prefix);
                            ctx.check(&label, (&one_name, &want[i..=i]), (&series, &[got]))?;
                            if k == 1 {
                                on_one[i] = r;
                            }
                            scale.record(ctx, &engine, &factor, "matchings/s", k, r, on_one[i]);
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_experiment_runs_in_quick_mode_on_cpu_engines() {
        // (`scaling` runs device engines only: its own test below.)
        for exp in experiments().into_iter().filter(|e| e.id != "scaling") {
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
            let beyond = exp.id.starts_with("density") || exp.id.starts_with("pairs");
            let wanted: &[&str] = if beyond {
                &["sbm-par", "itm-par", BEST_CPU]
            } else {
                &["sbm", "sbm-par", "itm-par", BEST_CPU]
            };
            for &series in wanted {
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

    /// Without a GPU, `scaling` runs the partitioned sweep and bisect engines on 1, 2
    /// and 4 emulated devices at quick sizes, every count and pair list checked against
    /// the one-device engine (and its count against the CPU sort), and records no
    /// speedup (emulator times mean nothing).
    #[test]
    fn scaling_runs_on_emulated_devices_and_checks_every_answer() {
        // 2 workloads x 2 approaches: the one-device count against the CPU's, and the
        // count and the pairs on 3 device counts against the one-device engine's.
        super::super::scaling::testing::check_emulated_run(
            experiments(),
            2 * 2 * (1 + 2 * 2 * 3),
            &[
                "emu multi sweep count regions=32 matchings/s",
                "emu multi bisect pairs regions=128 matchings/s",
                "emu multi sweep by-slab count regions=32 matchings/s",
                "emu multi bisect by-slab pairs regions=128 matchings/s",
            ],
            "emu sweep count regions=32 matchings/s",
        );
    }

    #[test]
    fn region_counts_read_as_factors() {
        assert_eq!(regions_factor(1 << 20), "1M");
        assert_eq!(regions_factor(4 << 20), "4M");
        assert_eq!(regions_factor(512), "512");
        assert_eq!(regions_factor(2048), "2k");
    }
}
