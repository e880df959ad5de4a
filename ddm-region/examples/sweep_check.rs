//! The bisect engine's sorted sweep (in strips and over the whole space) against the
//! CPU (`sbm`, all cores) on a few sets: counts and pairs, then again after a third of
//! the regions is removed and some moved. For running the kernels under
//! `compute-sanitizer` (memcheck, racecheck) on the GPU; exits with an error on the first
//! difference. Without a GPU it runs on the emulator.
//!
//!     cargo run --release -p ddm-region --example sweep_check [reps (ignored)] [regions]

mod common;

use baselines::ddm::DdmMatcher;
use ddm_region::workload::{
    intervals, scale_up, Distribution, IntervalParams, ScaleUpParams, Scenario, ScenarioParams,
};
use ddm_region::{Approach, Device, Engine, Kind, Range, RegionSet, UpdateBatch};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (dev, note) = match Device::gpu(0, ddm_region::PTX) {
        Ok(d) => (d, "GPU"),
        Err(_) => (Device::emulator(), "emulator"),
    };
    let (_, regions) = common::reps_and_regions(if dev.is_gpu() { 20_000 } else { 2000 })?;
    println!("{note}: {regions} regions a set");
    let cpu = DdmMatcher::new(
        baselines::ddm::Algorithm::Sbm,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    let paper = Scenario::new(
        ScenarioParams::paper(regions, 100, Distribution::Uniform),
        2,
    )?
    .regions()
    .clone();
    let sets = [
        (
            "intervals 2-D degree 10",
            intervals(&IntervalParams::for_degree(regions, 2, 10.0), 3)?,
        ),
        (
            "intervals 3-D degree 10",
            intervals(&IntervalParams::for_degree(regions, 3, 10.0), 4)?,
        ),
        ("paper scenario RS 100", paper),
        (
            "scale-up 2-D alpha 100 (bounds by quanta)",
            scale_up(
                &ScaleUpParams {
                    regions,
                    alpha: 100.0,
                    dims: 2,
                },
                5,
            )?,
        ),
    ];
    for (name, set) in sets {
        let mut e = Engine::with_regions(&dev, Approach::Bisect, &set)?;
        e.set_tiled_max(0);
        check(&mut e, &cpu, &set, &format!("{name}, all"))?;
        // A third of each kind removed: on the CPU's side, ranges past every other
        // (empty, at u32::MAX) stand for them, which overlap nothing.
        let mut batch = UpdateBatch::default();
        let mut after = RegionSet::new(set.dims())?;
        let gone = vec![
            Range {
                lo: u32::MAX,
                hi: u32::MAX
            };
            set.dims()
        ];
        for kind in [Kind::Publication, Kind::Subscription] {
            let n = match kind {
                Kind::Publication => set.n_pub(),
                Kind::Subscription => set.n_sub(),
            };
            for i in 0..n {
                if i % 3 == (kind == Kind::Subscription) as u32 {
                    batch.remove(kind, i);
                    after.push(kind, i as u64, &gone)?;
                } else {
                    after.push(kind, i as u64, set.region(kind, i))?;
                }
            }
        }
        e.step(&batch, false)?;
        check(&mut e, &cpu, &after, &format!("{name}, after removals"))?;
    }
    println!("every count and pair list equals the CPU's");
    Ok(())
}

/// The engine's count and pairs, in strips and over the whole space, against the CPU's
/// on `set`.
fn check(
    e: &mut Engine,
    cpu: &DdmMatcher,
    set: &RegionSet,
    name: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let want_pairs = cpu.pairs(set);
    let want = want_pairs.len() as u64;
    for strips in [true, false] {
        e.set_strips(strips);
        // (Strips wherever they can be made, however few the candidates they save.)
        e.set_strips_from(0);
        let got = e.count()?;
        let how = e.strips().map_or("whole space".to_string(), |s| {
            format!(
                "strips of dimension {}, {} wide, quanta 2^{}",
                s.dim, s.width, s.quantum
            )
        });
        let pairs = e.pairs()?;
        println!(
            "{name}, {how}: count {got}, {} pairs; the CPU's {want}",
            pairs.len()
        );
        if got != want || pairs != want_pairs {
            return Err(format!("{name}, {how}: differs from the CPU").into());
        }
    }
    Ok(())
}
