//! Where a step of the paper's scenarios goes on the sorting engines (Figs. 5-12: every
//! region moves, then every overlapping pair is handed to the host): the step (Phase 1,
//! [`Engine::last_step_times`] tells its host staging) and the pairs
//! ([`Engine::pairs_into`], one buffer for all steps), median and best of `reps` steps,
//! for the bisect engine matching in sorted tiles (two launches), the bisect engine
//! sorting and sweeping, and the sweep engine; every step's pair count checked against
//! the first engine's. The tiles
//! are also timed finishing with a count instead of the pairs ([`Engine::count`]) and
//! with the pairs handed over in place, not copied ([`Engine::for_each_pair_batch`]),
//! which tells the matching's share from the pairs' writing and their copy, and with the
//! next step's staging crew ([`Engine::set_stage_crew`]) off or of other sizes than the
//! default. Means beside medians (a harness run records means). Without a
//! GPU it runs on the emulator at 400 regions.
//!
//!     cargo run --release -p ddm-region --example step_split [reps (at least 1)] [regions]

mod common;

use ddm_region::workload::{Distribution, Scenario, ScenarioParams};
use ddm_region::{Approach, Device, Engine, UpdateBatch};
use std::time::Instant;

/// How a timed step ends.
#[derive(Clone, Copy)]
enum Finish {
    /// Every pair copied into the `Vec` kept from step to step ([`Engine::pairs_into`]).
    Copied,
    /// Every pair handed over where the device wrote it, and counted.
    InPlace,
    /// The pairs counted on the device.
    Count,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (dev, note) = match Device::gpu(0, ddm_region::PTX) {
        Ok(d) => (d, "GPU"),
        Err(_) => (Device::emulator(), "emulator"),
    };
    let (reps, regions) = common::reps_and_regions(if dev.is_gpu() { 32768 } else { 400 })?;
    println!("{note}: {regions} regions a step, {reps} steps");
    let scenarios = [
        ("Figs. 5/7 (uniform, RS 10)", Distribution::Uniform, 10),
        ("Figs. 6/8 (uniform, RS 100)", Distribution::Uniform, 100),
        ("Figs. 9/11 (crowded, RS 10)", Distribution::Crowded, 10),
        ("Figs. 10/12 (crowded, RS 100)", Distribution::Crowded, 100),
    ];
    for (name, distribution, size) in scenarios {
        let mut params = ScenarioParams::paper(regions, size, distribution);
        params.steps = reps as u32;
        let mut scenario = Scenario::new(params, 1)?;
        let initial = scenario.regions().clone();
        let batches: Vec<UpdateBatch> = (0..reps).map(|_| scenario.step()).collect();
        let mut want: Option<Vec<u64>> = None;
        let default = ddm_region::engine::STAGE_CREW_HELPERS;
        for (label, approach, in_tiles, finish, crew) in [
            (
                "bisect, in sorted tiles",
                Approach::Bisect,
                true,
                Finish::Copied,
                default,
            ),
            (
                "bisect, in sorted tiles, no staging crew",
                Approach::Bisect,
                true,
                Finish::Copied,
                0,
            ),
            (
                "bisect, in sorted tiles, staging crew of 3",
                Approach::Bisect,
                true,
                Finish::Copied,
                3,
            ),
            (
                "bisect, in sorted tiles, staging crew of 15",
                Approach::Bisect,
                true,
                Finish::Copied,
                15,
            ),
            (
                "bisect, in sorted tiles, pairs in place",
                Approach::Bisect,
                true,
                Finish::InPlace,
                default,
            ),
            (
                "bisect, in sorted tiles, count only",
                Approach::Bisect,
                true,
                Finish::Count,
                default,
            ),
            (
                "bisect, sorted and swept",
                Approach::Bisect,
                false,
                Finish::Copied,
                default,
            ),
            ("sweep", Approach::Sweep, false, Finish::Copied, default),
        ] {
            let mut e = Engine::new(
                &dev,
                approach,
                initial.dims(),
                initial.n_pub(),
                initial.n_sub(),
            )?;
            if !in_tiles {
                e.set_tiled_max(0);
            }
            e.set_stage_crew(crew, ddm_region::engine::STAGE_CREW_WAIT);
            e.step(&UpdateBatch::everything(&initial), false)?;
            e.pairs_unordered()?;
            let (mut step, mut stage, mut pairs, mut whole) = (vec![], vec![], vec![], vec![]);
            let mut counts = Vec::new();
            let mut buf = Vec::new();
            for batch in &batches {
                let t = Instant::now();
                e.step(batch, false)?;
                let mid = Instant::now();
                let found = match finish {
                    Finish::Copied => e.pairs_into(&mut buf)?,
                    Finish::InPlace => {
                        let mut n = 0u64;
                        e.for_each_pair_batch(|b| n += b.len() as u64)?;
                        n
                    }
                    Finish::Count => e.count()?,
                };
                let end = Instant::now();
                step.push((mid - t).as_secs_f64() * 1e6);
                stage.push(e.last_step_times().stage_us);
                pairs.push((end - mid).as_secs_f64() * 1e6);
                whole.push((end - t).as_secs_f64() * 1e6);
                counts.push(found);
            }
            match &want {
                None => want = Some(counts.clone()),
                Some(w) if *w != counts => {
                    return Err(format!(
                        "{name}, {label}: pair counts differ from the first engine's"
                    )
                    .into())
                }
                Some(_) => {}
            }
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let (stage_mean, whole_mean) = (mean(&stage), mean(&whole));
            let med = |v: &mut Vec<f64>| {
                v.sort_by(f64::total_cmp);
                (v[v.len() / 2], v[0])
            };
            let (s, sb) = med(&mut step);
            let (g, _) = med(&mut stage);
            let (p, pb) = med(&mut pairs);
            let (w, wb) = med(&mut whole);
            println!(
                "{name}, {label}: step median {s:.1} us (best {sb:.1}; staging {g:.1}, mean {stage_mean:.1}), pairs median {p:.1} us (best {pb:.1}), whole median {w:.1} us (best \
                    {wb:.1}, mean {whole_mean:.1}); {} pairs in the last step",
                counts.last().copied().unwrap_or(0)
            );
        }
    }
    Ok(())
}
