//! Where a 1M-region count's time goes on the sorting engines (scale-up, 2-D, alpha 1
//! and 100, seed 1): the load from host memory ([`Engine::load`], with its fills' and
//! the bus's share, [`Engine::last_load_times`]) and the count on the device
//! ([`Engine::count`]), best and median of `reps`, each engine's answer checked against
//! the other's. Run under `ncu --metrics gpu__time_duration.sum` with `reps` 1 to see
//! each kernel of one count. Without a GPU it runs on the emulator at 2,000 regions.
//!
//!     cargo run --release -p ddm-region --example count_split [reps (at least 1)] [regions]

mod common;

use ddm_region::workload::{scale_up, ScaleUpParams};
use ddm_region::{Approach, Device, Engine};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (dev, note) = match Device::gpu(0, ddm_region::PTX) {
        Ok(d) => (d, "GPU"),
        Err(_) => (Device::emulator(), "emulator"),
    };
    let (reps, regions) = common::reps_and_regions(if dev.is_gpu() { 1 << 20 } else { 2000 })?;
    println!("{note}: {regions} regions, 2-D, {reps} reps");
    for alpha in [1.0, 100.0] {
        let set = scale_up(
            &ScaleUpParams {
                regions,
                alpha,
                dims: 2,
            },
            1,
        )?;
        let mut counts = Vec::new();
        for approach in [Approach::Sweep, Approach::Bisect] {
            let mut e = Engine::new(&dev, approach.clone(), 2, set.n_pub(), set.n_sub())?;
            e.load(&set)?;
            counts.push(e.count()?);
            let (mut load, mut count) = (Vec::new(), Vec::new());
            for _ in 0..reps {
                let t = Instant::now();
                e.load(&set)?;
                load.push(t.elapsed().as_secs_f64() * 1e6);
                let t = Instant::now();
                e.count()?;
                count.push(t.elapsed().as_secs_f64() * 1e6);
            }
            let lt = e.last_load_times();
            for v in [&mut load, &mut count] {
                v.sort_by(f64::total_cmp);
            }
            println!(
                "alpha {alpha}, {}: load best {:.1} us median {:.1} (last: fills {:.1} us, drain {:.1} us, {} bytes); count best {:.1} us median {:.1}; {} pairs",
                approach.name(),
                load[0],
                load[reps / 2],
                lt.fill_us,
                lt.drain_us,
                lt.bytes,
                count[0],
                count[reps / 2],
                counts.last().copied().unwrap_or(0),
            );
        }
        assert!(
            counts.windows(2).all(|w| w[0] == w[1]),
            "the engines disagree: {counts:?}"
        );
    }
    Ok(())
}
