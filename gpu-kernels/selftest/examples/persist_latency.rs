//! `persist_latency [PINGS]`: the persistent-kernel protocol's own cost,
//! with `persistent_sum` and empty requests (the work is one store by one thread).
//!
//! For each grid (1 block; one per SM; two per SM), block size (256, 1024) and request
//! memory (write-combined, the default, or cached):
//! `PINGS` ping-pongs (submit, wait; default 20,000) give the end-to-end latency
//! p50/p99/p99.9 in µs; then 8 requests in flight give the throughput; then the
//! medians of the stage stamps (`global_timer`, see [`gpu_kernels::persist`]) of
//! 2,000 stamped pings. One CSV line per configuration on stdout.

use gpu_kernels::persist::{StageTimes, STAMP_WORDS};
use gpu_kernels::{Device, GpuError, LaunchConfig};
use gpu_selftest::ping;
use gpu_selftest_kernels as k;
use std::sync::Arc;
use std::time::Instant;

fn run(dev: &Device, grid: u32, block: u32, wc: bool, pings: usize) -> Result<String, GpuError> {
    let cfg = ping::RING;
    let stamped = pings.clamp(1, 2000);
    let mut ring = ping::ring(dev, wc)?;
    // The ring keeps a clone of the stamps' buffer while the kernel runs.
    let stamps = Arc::new(dev.alloc::<u64>(stamped * STAMP_WORDS)?);
    ring.set_stamps(dev, &stamps)?;
    let lc = LaunchConfig::blocks(1, block, gpu_kernels::persist::shared_bytes(cfg.req_words));
    let acc = dev.alloc::<u64>(2)?;
    let mut run = k::persistent_sum::launch_persistent(dev, lc, ring, Some(grid), acc)?;
    // Stamped pings first (rounds 0..stamped), then the timed ones.
    for _ in 0..stamped {
        run.submit(1, &[])?;
        run.wait()?;
    }
    let mut lat = Vec::with_capacity(pings);
    for _ in 0..pings {
        let t = Instant::now();
        run.submit(1, &[])?;
        run.wait()?;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let n = pings.max(1);
    let t = Instant::now();
    let mut done = 0;
    let mut sent = 0;
    while done < n {
        while sent < n && !run.is_full() {
            run.submit(1, &[])?;
            sent += 1;
        }
        run.wait()?;
        done += 1;
    }
    let per_s = n as f64 / t.elapsed().as_secs_f64();
    run.stop()?;
    let st = StageTimes::from_stamps(&dev.read(&stamps)?);
    Ok(format!(
        "{grid},{block},{},{:.2},{:.2},{:.2},{:.0},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2}",
        if wc { "write-combined" } else { "cached" },
        ping::percentile(&mut lat, 0.5),
        ping::percentile(&mut lat, 0.99),
        ping::percentile(&mut lat, 0.999),
        per_s,
        st.broadcast,
        st.in_shared,
        st.work_done,
        st.all_arrived,
        st.answered,
        st.poll_start,
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
    let sms = dev.sm_count();
    println!("# device: {}, {sms} SMs; {pings} pings", dev.name());
    println!(
        "grid,block,requests,p50_us,p99_us,p999_us,per_s_8_in_flight,\
         bcast_us,in_shared_us,work_done_us,all_arrived_us,answered_us,poll_start_us"
    );
    let blocks = if dev.is_gpu() { [256, 1024] } else { [32, 64] };
    for grid in [1, sms, 2 * sms] {
        for block in blocks {
            for wc in [true, false] {
                match run(&dev, grid, block, wc, pings) {
                    Ok(line) => println!("{line}"),
                    Err(e) => println!("{grid},{block},{wc},error: {e}"),
                }
            }
        }
    }
    Ok(())
}
