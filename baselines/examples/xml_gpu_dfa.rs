//! The lazy DFA's warm path on the GPU against the lazy DFA on all cores, on Fig. 9's
//! workload (500 documents of 25 kB, 2048 twigs of `L` nodes, */// 50%), or with `one`
//! on Fig. 7's (one 1 MB document, */// 30%): the cache trained on 1 MB of other
//! documents and grown ahead (`LazyDfa::complete`), its tables on the device; best of 5
//! runs each, for each way of cutting the documents into segments (whole documents,
//! the engine's choice, segments of at least 16 to 1024 events); answers checked
//! equal. Without a GPU, the emulator on 20 documents (a 50 kB one with `one`). For
//! profiling the kernel (`ncu -k filter_dfa`). `DFA_SHARED_MAX=0` puts the accumulators
//! in global memory; `DFA_SEGMENTS=n` times segments of `n`+ events only (0: whole
//! documents). `XML_QUERIES`, `XML_P` (the share of `*` and `//`) and, with `one`,
//! `XML_KB` (the document's size) change the workload (Fig. 8's: 256, 0.1, 2048);
//! `XML_SPLITS=0` makes the twigs linear paths (the `paths` experiment's: the lean
//! walk runs, `DFA_WALK=lanes|rows|warp|host` says which form of it);
//! `XML_SEED` the queries' and documents' seed (1); `XML_BUDGET_MB` the lazy DFA's
//! memory bound (1024; the cache grows ahead to half of it); `XML_DOCS` the emulator's
//! batch; `XML_GROWTH_ONLY=1` stops after counting the documents the grown cache
//! cannot finish.
//!
//!     cargo run --release -p baselines --example xml_gpu_dfa [-- L [one]]

use baselines::lazy_dfa::LazyDfa;
use std::time::Instant;
use xml_twig::workload::{DblpGenerator, QueryGenerator, QueryParams};
use xml_twig::{io, Device, DfaEngine, Document, ProfileSet, QuerySet};

fn docs(profiles: &ProfileSet, n: usize, bytes: usize, seed: u64) -> Vec<Document> {
    let mut g = DblpGenerator::new(seed);
    (0..n)
        .map(|_| io::parse_document("g.xml", g.document(bytes).as_bytes(), &profiles.dict).unwrap())
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let len: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10);
    let one = std::env::args().nth(2).is_some_and(|a| a == "one");
    let gpu = Device::gpu(0, xml_twig::PTX);
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<f64>().ok());
    let (n, bytes) = match (&gpu, one) {
        (Ok(_), false) => (500, 25_000),
        (Ok(_), true) => (1, var("XML_KB").map_or(1_000_000, |kb| kb as usize * 1000)),
        (Err(_), false) => (var("XML_DOCS").map_or(20, |n| n as usize), 25_000),
        (Err(_), true) => (1, 50_000),
    };
    let dev = gpu.unwrap_or_else(|_| Device::emulator());
    let p = var("XML_P").unwrap_or(if one { 0.3 } else { 0.5 });
    let queries = var("XML_QUERIES").map_or(2048, |q| q as usize);
    let seed = var("XML_SEED").map_or(1, |s| s as u64);
    let mut params = QueryParams::paper(len, p);
    if let Some(splits) = var("XML_SPLITS") {
        params.splits = splits as _;
    }
    let set = QuerySet::from_queries(QueryGenerator::new(params, seed).queries(queries));
    let profiles = ProfileSet::compile(&set)?;
    let batch = docs(&profiles, n, bytes, seed ^ 0xba7c);
    let mb = batch.iter().map(|d| d.bytes).sum::<usize>() as f64 / 1e6;
    let budget = var("XML_BUDGET_MB").map_or(1 << 30, |mb| (mb as usize) << 20);
    let dfa = LazyDfa::with_budget(&profiles, budget);
    let training = docs(&profiles, 40, 25_000, 0x7a1e_d0c5);
    let trained = dfa.train(&training);
    let mut ahead = trained.clone();
    let depth = training.iter().map(|d| d.max_depth).max().unwrap_or(0) as usize + 2;
    let t0 = Instant::now();
    let added = dfa.complete(&mut ahead, &training, depth, usize::MAX);
    println!(
        "cache grown ahead to {depth} deep in {:.1} s: {added} states added, {} MB (the growth stops at half of {} MB); documents {} deep at most",
        t0.elapsed().as_secs_f64(),
        ahead.bytes() >> 20,
        budget >> 20,
        batch.iter().map(|d| d.max_depth).max().unwrap_or(0)
    );
    let t = dfa.export(&ahead).expect("narrow");
    // Encoded untimed, as the harness does (the paper excludes parsing).
    let events = xml_twig::layout::EventBatch::encode(&batch, false);
    // The documents whose path the tables lack a transition for (walked on the host).
    let lacking: Vec<Document> = t
        .unfinished(&events)
        .into_iter()
        .map(|i| batch[i].clone())
        .collect();
    println!(
        "{} of {n} documents need a transition the grown cache lacks",
        lacking.len()
    );
    if !lacking.is_empty() {
        // What they cost on the CPU (all cores), from either cache.
        for (what, cache) in [("trained", &trained), ("grown", &ahead)] {
            dfa.fill_pool(cache, lacking.len().min(rayon::current_num_threads()) + 1);
            let t0 = Instant::now();
            dfa.filter_batch(&lacking);
            println!(
                "  they take {:.2} ms on the CPU from the {what} cache",
                t0.elapsed().as_secs_f64() * 1e3
            );
        }
    }
    let t0 = Instant::now();
    dfa.fill_pool(&ahead, rayon::current_num_threads() + 1);
    println!(
        "grown cache copied for {} workers in {:.2} s",
        rayon::current_num_threads() + 1,
        t0.elapsed().as_secs_f64()
    );
    if std::env::var("XML_GROWTH_ONLY").is_ok() {
        return Ok(());
    }
    let active: Vec<u32> = t.masks.iter().map(|m| m[1]).collect();
    let deltas: Vec<u32> = t.bundles.iter().map(|b| b[1]).collect();
    let mean = |v: &[u32]| v.iter().map(|&x| x as f64).sum::<f64>() / v.len().max(1) as f64;
    println!(
        "L={len}: {} states, {} tags, accumulator {} words, {} planes; mean active span {:.1} words (max {}), mean bundle span {:.1} (max {})",
        t.states(),
        t.tags,
        t.template.len(),
        t.planes.len(),
        mean(&active),
        active.iter().max().unwrap_or(&0),
        mean(&deltas),
        deltas.iter().max().unwrap_or(&0)
    );
    let mut gpu = DfaEngine::new(dev, &t)?;
    // The kernels' time by the device's clock in the phases printed below.
    gpu.set_device_clock(true);
    // DFA_WALK: how the lean walk (linear paths) runs: `lanes` (the default: a thread
    // per unit, planned on the device, answers listed on the device), `rows` (the same,
    // the rows of bits decoded on the host), `warp` (a warp per unit, planned on the
    // device) or `host` (a warp per unit, the host's plan, rows decoded on the host).
    match std::env::var("DFA_WALK").as_deref() {
        Ok("warp") => gpu.set_walk_lanes(false),
        Ok("host") => gpu.set_plan_on_device(false),
        Ok("rows") => gpu.set_decode_on_device(false),
        _ => {}
    }
    println!(
        "lean walk: {}",
        std::env::var("DFA_WALK").unwrap_or_else(|_| "lanes".into())
    );
    // DFA_SHARED_MAX=0: accumulators in global memory (L1 left to the tables).
    if let Some(b) = std::env::var("DFA_SHARED_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        gpu.set_shared_max(b);
    }
    let want = dfa.filter_batch(&batch);
    let mut best = f64::INFINITY;
    // DFA_SEGMENTS=n: only segments of n+ events (0: whole documents), for profiling.
    let cuts = match std::env::var("DFA_SEGMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(n) => vec![Some(n)],
        None => vec![
            Some(0),
            None,
            Some(16),
            Some(32),
            Some(64),
            Some(128),
            Some(256),
            Some(1024),
        ],
    };
    for seg in cuts {
        gpu.set_segment_events(seg);
        let mut ms = f64::INFINITY;
        let mut back = 0;
        let mut phases = gpu.phases();
        for _ in 0..5 {
            let t0 = Instant::now();
            let got = gpu.filter_encoded(&events)?;
            let t = t0.elapsed().as_secs_f64() * 1e3;
            if t < ms {
                ms = t;
                phases = gpu.phases();
            }
            back = got.iter().filter(|g| g.is_none()).count();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(g.as_ref().is_none_or(|g| g == w), "document {i}");
            }
        }
        let what = match seg {
            Some(0) => "whole documents".to_string(),
            None => "the engine's choice".to_string(),
            Some(s) => format!("segments of {s}+ events"),
        };
        let p = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        println!(
            "  GPU warm path, {what}: {ms:.2} ms ({:.0} MB/s), {back} handed back; plan {:.2}, upload {:.2}, kernels {:.2}, read {:.2}, decode {:.2} ms",
            mb / ms * 1e3,
            p(phases.plan),
            p(phases.upload),
            p(phases.kernels),
            p(phases.read),
            p(phases.decode)
        );
        best = best.min(ms);
    }
    let mut cpu = f64::INFINITY;
    for _ in 0..3 {
        dfa.fill_pool(&trained, rayon::current_num_threads() + 1);
        let t0 = Instant::now();
        let got = if one {
            vec![dfa.filter_segmented(&batch[0])]
        } else {
            dfa.filter_batch(&batch)
        };
        cpu = cpu.min(t0.elapsed().as_secs_f64() * 1e3);
        assert_eq!(got, want);
    }
    println!(
        "{n} documents, {mb:.1} MB: GPU warm path (best) {best:.2} ms ({:.0} MB/s), lazy DFA on {} threads {cpu:.2} ms ({:.0} MB/s)",
        mb / best * 1e3,
        rayon::current_num_threads(),
        mb / cpu * 1e3
    );
    Ok(())
}
