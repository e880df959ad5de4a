//! `persist_probe [PINGS]`: what each part of a persistent round trip costs.
//!
//! Runs the stripped kernel `persist_probe` (one block, the ring's slots in mapped host
//! memory) with one combination of its flags at a time and prints, per combination,
//! the end-to-end latency of `PINGS` ping-pongs (submit, wait; default 20,000) as
//! p50/p99/p99.9 in µs: the difference between two lines is the cost of the flag that
//! differs. On the emulator it only checks that every combination answers (20 pings).

use gpu_kernels::{Device, GpuError, LaunchConfig};
use gpu_selftest::ping;
use gpu_selftest_kernels::{self as k, probe};
use std::time::Instant;

fn run(dev: &Device, flags: u32, block: u32, wc: bool, pings: usize) -> Result<String, GpuError> {
    let ring = ping::ring(dev, wc)?;
    let lc = LaunchConfig::blocks(1, block, 16);
    let mut run = k::persist_probe::launch_persistent(dev, lc, ring, Some(1), flags)?;
    run.set_timeout(std::time::Duration::from_secs(3));
    for _ in 0..pings.min(1000) {
        run.submit(7, &[])?;
        run.wait()?;
    }
    let mut lat = Vec::with_capacity(pings);
    for i in 0..pings {
        let t = Instant::now();
        run.submit(7, &[])?;
        let r = run.wait()?;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
        if r.status != 7 || r.words.len() != 1 {
            return Err(GpuError::Persistent {
                kernel: "persist_probe",
                message: format!("ping {i}: answer {r:?}"),
            });
        }
    }
    run.stop()?;
    let names = [
        (probe::FENCE_IN, "fence_in"),
        (probe::READ_AGAIN, "read_again"),
        (probe::FENCE_OUT, "fence_out"),
        (probe::SYNC, "sync"),
        (probe::ATOMIC, "atomic"),
        (probe::WARP, "warp"),
        (probe::ACQUIRE, "acquire"),
    ];
    let what: Vec<&str> = names
        .iter()
        .filter(|(f, _)| flags & f != 0)
        .map(|(_, n)| *n)
        .collect();
    Ok(format!(
        "{},{block},{},{:.2},{:.2},{:.2}",
        if what.is_empty() {
            "minimal".to_string()
        } else {
            what.join("+")
        },
        if wc { "write-combined" } else { "cached" },
        ping::percentile(&mut lat, 0.5),
        ping::percentile(&mut lat, 0.99),
        ping::percentile(&mut lat, 0.999),
    ))
}

fn main() -> Result<(), GpuError> {
    let pings = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let (dev, pings) = match Device::gpu(0, gpu_selftest::PTX) {
        Ok(d) => (d, pings),
        Err(e) => {
            eprintln!("note: {e}; running on the host SIMT emulator instead");
            (Device::emulator(), 20)
        }
    };
    println!("# device: {}; {pings} pings", dev.name());
    println!("flags,block,requests,p50_us,p99_us,p999_us");
    use probe::*;
    let serve_like = WARP | ACQUIRE | SYNC | ATOMIC;
    let combos: [(u32, u32); 12] = [
        (0, 32),
        (ACQUIRE, 32),
        (FENCE_OUT, 32),
        (FENCE_IN | FENCE_OUT, 32),
        (FENCE_IN | READ_AGAIN | FENCE_OUT, 32),
        (WARP, 32),
        (WARP | ACQUIRE, 32),
        (SYNC, 256),
        (WARP | ACQUIRE | SYNC, 256),
        (FENCE_IN | READ_AGAIN | FENCE_OUT | SYNC | ATOMIC, 256),
        // Last: on an H100 this one did not stop, and a kernel that does
        // not stop is left running.
        (serve_like, 256),
        (serve_like, 1024),
    ];
    let combos = combos.iter().map(|&(f, b)| (f, b, false)).chain([
        (0, 32, true),
        (WARP | ACQUIRE, 32, true),
        (WARP | ACQUIRE | SYNC, 256, true),
    ]);
    for (flags, block, wc) in combos {
        match run(&dev, flags, block, wc, pings) {
            Ok(line) => println!("{line}"),
            Err(e) => println!("{flags},{block},error: {e}"),
        }
    }
    Ok(())
}
