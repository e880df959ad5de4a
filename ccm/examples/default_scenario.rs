//! Table 1's default scenario on the GPU (or, without one, deployment only on the host
//! emulator): deployment time, device bytes (Table 2), and on a GPU the per-event latency
//! (the paper's mode) and the batched throughput.
//!
//!     cargo run --release -p ccm --example default_scenario [seed]

use ccm::{workload, Ccm, Config, Params};
use gpu_kernels::Device;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seed = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1);
    let t0 = Instant::now();
    let w = workload::generate(&Params::default(), seed)?;
    println!(
        "workload: {} filters, {} constraints, {} events ({:.0} ms)",
        w.subscriptions.len(),
        w.constraints(),
        w.events.len(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    let (dev, gpu) = match Device::gpu(0, ccm::PTX) {
        Ok(d) => (d, true),
        Err(e) => {
            println!("no GPU ({e}): deployment on the emulator only");
            (Device::emulator(), false)
        }
    };
    for (label, cfg) in [
        ("paper", Config::default()),
        (
            "with batch tables",
            Config {
                batch_tables: true,
                ..Config::default()
            },
        ),
    ] {
        let t0 = Instant::now();
        let ccm = Ccm::new(&dev, &w.subscriptions, cfg)?;
        dev.synchronize()?;
        println!(
            "{label}: deployment {:.1} ms, {:.1} MB on {}",
            t0.elapsed().as_secs_f64() * 1e3,
            ccm.device_bytes() as f64 / 1e6,
            dev.name()
        );
    }
    if gpu {
        let mut ccm = Ccm::new(&dev, &w.subscriptions, Config::default())?;
        for e in w.events.iter().take(10) {
            ccm.match_event(e)?;
        }
        let t0 = Instant::now();
        for e in &w.events {
            ccm.match_event(e)?;
        }
        println!(
            "per event: {:.2} us",
            t0.elapsed().as_secs_f64() * 1e6 / w.events.len() as f64
        );
        let stream: Vec<_> = w.events.iter().cycle().take(262_144).cloned().collect();
        ccm.match_batch(&w.events)?;
        let t0 = Instant::now();
        let n = ccm.match_batch(&stream)?.len();
        println!(
            "batched: {:.0} events/s",
            n as f64 / t0.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
