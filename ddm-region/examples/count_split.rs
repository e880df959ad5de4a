//! Where a 1M-region 2-D count's time goes on the sorting engines, on four workloads
//! (seed 1): the scale-up at alpha 1 and 100, the peer's random intervals at overlap
//! degree 1 and 100 (the harness's `density_2d`), and the paper's uniform scenario with
//! RS 10 (what `ddm generate` writes and `ddm match` reads in the e2e runs). Per engine
//! (`sweep`; `bisect` over the whole space, as before its strips; `bisect` in strips
//! where they pay, its default; `bisect` in strips wherever they can be made): the load from host memory ([`Engine::load`], with its fills' and the
//! bus's share, [`Engine::last_load_times`]) and the count on the device
//! ([`Engine::count`]), best and median of `reps`, every answer checked against the
//! CPU's (`sbm`, all cores). Run under `ncu --metrics gpu__time_duration.sum` with `reps`
//! 1 to see each kernel of one count. Without a GPU it runs on the emulator at 2,000
//! regions.
//!
//!     cargo run --release -p ddm-region --example count_split [reps (at least 1)] [regions]

mod common;

use ddm_region::workload::{
    intervals, scale_up, Distribution, IntervalParams, ScaleUpParams, Scenario, ScenarioParams,
};
use ddm_region::{Approach, Device, Engine, RegionSet};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (dev, note) = match Device::gpu(0, ddm_region::PTX) {
        Ok(d) => (d, "GPU"),
        Err(_) => (Device::emulator(), "emulator"),
    };
    let (reps, regions) = common::reps_and_regions(if dev.is_gpu() { 1 << 20 } else { 2000 })?;
    println!("{note}: {regions} regions, 2-D, {reps} reps");
    let cpu = baselines::ddm::DdmMatcher::new(
        baselines::ddm::Algorithm::Sbm,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    type Make = Box<dyn Fn() -> Result<RegionSet, Box<dyn std::error::Error>>>;
    let scale = |alpha: f64| -> Make {
        Box::new(move || {
            let p = ScaleUpParams {
                regions,
                alpha,
                dims: 2,
            };
            Ok(scale_up(&p, 1)?)
        })
    };
    let degree = |degree: f64| -> Make {
        Box::new(move || {
            Ok(intervals(
                &IntervalParams::for_degree(regions, 2, degree),
                1,
            )?)
        })
    };
    let paper: Make = Box::new(move || {
        let p = ScenarioParams::paper(regions, 10, Distribution::Uniform);
        Ok(Scenario::new(p, 1)?.regions().clone())
    });
    let workloads: Vec<(&str, Make)> = vec![
        ("scale-up alpha 1", scale(1.0)),
        ("scale-up alpha 100", scale(100.0)),
        ("intervals degree 1", degree(1.0)),
        ("intervals degree 100", degree(100.0)),
        ("paper scenario RS 10", paper),
    ];
    for (name, make) in workloads {
        let set = make()?;
        let want = cpu.count(&set);
        // (`bisect` with strips where they pay, its default, and wherever they can be
        // made: `Some(0)`.)
        for (approach, strips, from) in [
            (Approach::Sweep, false, None),
            (Approach::Bisect, false, None),
            (Approach::Bisect, true, None),
            (Approach::Bisect, true, Some(0)),
        ] {
            let mut e = Engine::new(&dev, approach.clone(), 2, set.n_pub(), set.n_sub())?;
            // (The tiles of small sets off: the emulator's sets are small.)
            e.set_tiled_max(0);
            e.set_strips(strips);
            if let Some(from) = from {
                e.set_strips_from(from);
            }
            e.load(&set)?;
            let got = e.count()?;
            assert_eq!(
                got,
                want,
                "{name}, {}: the CPU's sbm found {want}",
                approach.name()
            );
            let (mut load, mut count) = (Vec::new(), Vec::new());
            for _ in 0..reps {
                let t = Instant::now();
                e.load(&set)?;
                load.push(t.elapsed().as_secs_f64() * 1e6);
                let t = Instant::now();
                let again = e.count()?;
                count.push(t.elapsed().as_secs_f64() * 1e6);
                assert_eq!(again, want, "{name}, {}: a repeated count", approach.name());
            }
            let lt = e.last_load_times();
            for v in [&mut load, &mut count] {
                v.sort_by(f64::total_cmp);
            }
            let how = match e.strips() {
                Some(s) => format!(
                    "in strips of dimension {}, {} wide, keys by quanta of 2^{}",
                    s.dim, s.width, s.quantum
                ),
                None => "whole space".to_string(),
            };
            println!(
                "{name}, {} ({how}): load best {:.1} us median {:.1} (last: fills {:.1} us, drain {:.1} us, {} bytes); count best {:.1} us median {:.1}; {want} pairs, as the CPU's",
                approach.name(),
                load[0],
                load[reps / 2],
                lt.fill_us,
                lt.drain_us,
                lt.bytes,
                count[0],
                count[reps / 2],
            );
        }
    }
    Ok(())
}
