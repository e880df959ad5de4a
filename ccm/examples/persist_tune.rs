//! `persist_tune [events]`: the persistent kernel's grid, tuned. Table 1's
//! default scenario; for each grid (blocks in all) and block size, the end-to-end
//! latency of `events` events one at a time (default 20,000) as p50/p99 in µs, every
//! answer checked against the SFF-like baseline. One CSV line per configuration.
//!
//!     cargo run --release -p ccm --example persist_tune [events]

use baselines::sff::Sff;
use baselines::Matcher;
use ccm::{workload, Ccm, Config, Params};
use gpu_kernels::Device;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let events: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(20_000);
    let (dev, events, grids, blocks) = match Device::gpu(0, ccm::PTX) {
        Ok(d) => (
            d,
            events,
            vec![8, 16, 33, 66, 132, 264],
            vec![128, 256, 512, 1024],
        ),
        Err(e) => {
            println!("# no GPU ({e}): the host emulator, 20 events");
            (Device::emulator(), 20, vec![2], vec![64])
        }
    };
    let p = Params {
        events,
        ..Params::default()
    };
    let w = workload::generate(&p, 1)?;
    let truth = Sff::build(&w.subscriptions)?.match_parallel(&w.events);
    println!("# device: {}; {} events", dev.name(), w.events.len());
    println!("blocks,block,p50_us,p99_us,p999_us");
    for &grid in &grids {
        for &block in &blocks {
            let cfg = Config {
                persistent: true,
                persistent_blocks: grid,
                block,
                ..Config::default()
            };
            let mut ccm = Ccm::new(&dev, &w.subscriptions, cfg)?;
            let mut lat = Vec::with_capacity(w.events.len());
            let got = ccm.match_pipelined(&w.events, 1, Some(&mut lat))?;
            let bad = got
                .iter()
                .zip(&truth)
                .filter(|(g, t)| {
                    let mut g = g.to_vec();
                    g.sort_unstable();
                    let mut t = t.to_vec();
                    t.sort_unstable();
                    g != t
                })
                .count();
            if bad > 0 {
                println!("{grid},{block},error: {bad} answers differ from sff");
                continue;
            }
            println!(
                "{grid},{block},{:.2},{:.2},{:.2}",
                pct(&mut lat, 0.5),
                pct(&mut lat, 0.99),
                pct(&mut lat, 0.999)
            );
        }
    }
    Ok(())
}
