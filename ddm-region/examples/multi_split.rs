//! Where the time of a count on several GPUs goes (1M regions, 2-D, alpha 100, seed 1,
//! the `scaling` experiment's workload): the one-device engine, the partitioned engines
//! (publications cut, `MultiEngine`; slabs, `SlabEngine`), and the cost of the
//! many-device path alone: a call of `Devices::par_map` that does nothing, and one whose
//! closure reads one word from its device (each device's part on a parked host thread
//! of its own, `gpu_kernels::multi`; it was a thread spawned per device per call,
//! 128-132 µs on 2x H100, then a task of rayon's pool). Median of
//! `reps` calls each. Without GPUs it runs on 2 emulated devices at 2,000 regions.
//!
//!     cargo run --release -p ddm-region --example multi_split [reps] [regions]

mod common;

use ddm_region::workload::{scale_up, ScaleUpParams};
use ddm_region::{Approach, Engine, MultiEngine, SlabEngine};
use gpu_kernels::multi::Devices;
use std::time::Instant;

fn median_us(
    reps: usize,
    mut f: impl FnMut() -> Result<(), Box<dyn std::error::Error>>,
) -> Result<f64, Box<dyn std::error::Error>> {
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        let s = Instant::now();
        f()?;
        t.push(s.elapsed().as_secs_f64() * 1e6);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (devs, gpu) = match Devices::all(ddm_region::PTX) {
        Ok(d) if d.len() >= 2 => (d, true),
        _ => (Devices::emulated(2)?, false),
    };
    let (reps, regions) = common::reps_and_regions(if gpu { 1 << 20 } else { 2000 })?;
    println!(
        "{}: {regions} regions, 2-D, alpha 100, {reps} reps",
        devs.name()
    );
    let set = scale_up(
        &ScaleUpParams {
            regions,
            alpha: 100.0,
            dims: 2,
        },
        1,
    )?;
    let word = devs.par_map(|_, d| d.alloc::<u64>(1))?;
    let idle = median_us(reps, || {
        devs.par_map(|_, _| Ok::<_, std::io::Error>(()))?;
        Ok(())
    })?;
    let read = median_us(reps, || {
        devs.par_map(|i, d| d.read(&word[i]))?;
        Ok(())
    })?;
    println!("par_map, nothing: {idle:.1} us; par_map, one read per device: {read:.1} us");
    let read0 = median_us(reps, || {
        devs.get(0).ok_or("a device")?.read(&word[0])?;
        Ok(())
    })?;
    println!("one read on device 0 from this thread: {read0:.1} us");
    for (name, approach) in [("sweep", Approach::Sweep), ("bisect", Approach::Bisect)] {
        let mut one = Engine::with_regions(devs.get(0).ok_or("a device")?, approach.clone(), &set)?;
        let n = one.count()?;
        let t1 = median_us(reps, || {
            one.count()?;
            Ok(())
        })?;
        drop(one);
        let mut m = MultiEngine::with_regions(&devs, approach.clone(), &set)?;
        assert_eq!(m.count()?, n);
        let tm = median_us(reps, || {
            m.count()?;
            Ok(())
        })?;
        drop(m);
        let mut s = SlabEngine::with_regions(&devs, approach.clone(), &set)?;
        assert_eq!(s.count()?, n);
        let ts = median_us(reps, || {
            s.count()?;
            Ok(())
        })?;
        println!("{name}: one device {t1:.1} us; publications cut {tm:.1} us; slabs {ts:.1} us (cuts {:?}); {n} pairs", s.cuts());
    }
    Ok(())
}
