//! The whole-document kernels on one document (Fig. 7's point: 256 queries of 10 nodes,
//! one 1 MB DBLP document), by kernel and launch shape: median time of a `filter` call
//! (events in, kernel, results out) and throughput, each answer checked against the
//! brute-force matcher. Without a GPU it runs the emulator on a small case.
//!
//!     cargo run --release -p xml-twig --example kernel_sweep [QUERIES] [LENGTH] [KB]
use std::time::Instant;
use xml_twig::workload::{DblpGenerator, QueryGenerator, QueryParams};
use xml_twig::{brute, io, Device, Engine, EngineConfig, KernelKind, ProfileSet, QuerySet};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |i: usize, default: usize| -> Result<usize, Box<dyn std::error::Error>> {
        Ok(match std::env::args().nth(i) {
            Some(a) => a.parse()?,
            None => default,
        })
    };
    let gpu = Device::gpu_or_emulator_noted(0, xml_twig::PTX).is_gpu();
    if !gpu {
        println!("the emulator on a small case: times say nothing about a GPU");
    }
    let queries = arg(1, if gpu { 256 } else { 8 })?;
    let length = arg(2, 10)?;
    let kb = arg(3, if gpu { 1024 } else { 4 })?;
    let set = QuerySet::from_queries(
        QueryGenerator::new(QueryParams::paper(length, 0.3), 1).queries(queries),
    );
    let profiles = ProfileSet::compile(&set)?;
    let text = DblpGenerator::new(1).document(kb << 10);
    let doc = io::parse_document("generated.xml", text.as_bytes(), &profiles.dict)?;
    let want = brute::filter(&profiles, &doc);
    println!(
        "{queries} queries of {length} nodes, {} bytes, {} events, {} matches",
        text.len(),
        doc.events.len(),
        want.len()
    );
    let shapes = [
        (KernelKind::Block, 1),
        (KernelKind::Warp, 1),
        (KernelKind::Warp, 2),
        (KernelKind::Warp, 4),
        (KernelKind::Warp, 8),
    ];
    for (kernel, warps_per_block) in shapes {
        let cfg = EngineConfig {
            kernel,
            warps_per_block,
            block_threads: if gpu { 256 } else { 32 },
            ..EngineConfig::default()
        };
        let (dev, _) = Device::gpu_or_emulator(0, xml_twig::PTX);
        let mut engine = Engine::new(dev, &profiles, cfg)?;
        let batch = engine.encode(std::slice::from_ref(&doc));
        let rounds = if gpu { 30 } else { 2 };
        let mut times = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            let got = engine.filter_encoded(&batch)?;
            times.push(t.elapsed().as_secs_f64());
            if got[0] != want {
                return Err(
                    format!("{kernel:?} x{warps_per_block}: differs from brute force").into(),
                );
            }
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        println!(
            "{:<22} {:>9.3} ms  {:>8.1} MB/s  {:>6.1} ns/event",
            match kernel {
                KernelKind::Block => "block (256 columns)".to_string(),
                _ => format!("warp, {warps_per_block} per block"),
            },
            median * 1e3,
            text.len() as f64 / median / 1e6,
            median * 1e9 / doc.events.len() as f64
        );
    }
    Ok(())
}
