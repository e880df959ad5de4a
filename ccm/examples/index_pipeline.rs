//! Where the pruning index's time goes on Table 1's default scenario. On the host, per
//! event of a stream of 262,144 events, on 1, 2, 4, .. threads: the host work the index
//! did before it took a batch (encoding heap events into memory written before: the
//! exact room pass, then `Tables::encode_into`), and what it does now on the batch (the dictionaries'
//! translation, once per batch; copying each launch's attributes and starts, as its
//! staging does, into ordinary memory here). Then, with a GPU, the index's own split
//! ([`ccm::IndexTiming`]) over the stream for several launch sizes, the stream's time
//! per event with the index driven from pools of its own of 4, 8, 16, .. threads
//! ([`GpuIndex::set_encode_threads`]; on a host of many cores the shared pool of every
//! thread was measured several times slower than a share of them), and the cost of
//! subscriptions removed and added without a rebuild. Answers are not checked here (the
//! harness and the tests do).
//!
//! With `table2` after the seed, only this, on a GPU: Table 2's rows 1 and 4 (uniform
//! and Zipf names) timed as the harness times the index (calls of four full launches of
//! a stream cycled from the workload's batch, each as a new batch's, one call to warm,
//! the least time of five), for several tunings of the index ([`IndexConfig`]: the
//! triple partitions' use, launch sizes, the copies' slices, the first launch of a call
//! and the growth of the launches after it, the partition walk's block and warps per
//! event on heavy walks), with the index's split summed over the five calls, and the
//! dense model's events of 3-5 names at 100k filters (the partition walk's other load;
//! one filter per interface, and ten) with the default tuning; then the default tuning
//! on all four with other builds of the kernels, each on a context of its own: the
//! partition walk's registers capped otherwise (`.maxnreg`), and the PTX files named
//! after `table2`, if any (e.g. the kernels before a change, printed by `index_check
//! ptx`).
//!
//! With `profile` after the seed, only Table 2's row 1 with the default tuning, two
//! calls after one to warm (for a profiler: a few launches of each kernel).
//!
//!     cargo run --release -p ccm --example index_pipeline [seed] [table2 [kernels.ptx ..] | profile]

use ccm::batch::{Attr, EventBatch};
use ccm::layout::Tables;
use ccm::workload::NameDist;
use ccm::{workload, Event, GpuIndex, IndexConfig, Params};
use ccm_kernels::{DevAttr, DevEvent};
use rayon::prelude::*;
use std::time::Instant;

/// The allocator of the harness (mimalloc), so that the events lie in memory as the
/// harness's do: encoding heap events reads every event's names and strings.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Events per launch of the index on a GPU (its default).
const LAUNCH: usize = 65_536;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seed = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1);
    match std::env::args().nth(2).as_deref() {
        Some("table2") => return table2(seed),
        Some("profile") => return profile(seed),
        _ => {}
    }
    let w = workload::generate(&Params::default(), seed)?;
    let t = Tables::build(&w.subscriptions, false)?;
    let events: Vec<Event> = w.events.iter().cycle().take(1 << 18).cloned().collect();
    let stream = w.batch.cycled(1 << 18);
    let n = stream.len() as f64;
    let cores = std::thread::available_parallelism()?.get();
    let mut threads = 1;
    while threads <= cores {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?;
        let (before, dicts, stage) = pool.install(|| {
            let (mut before, mut dicts, mut stage) = (f64::MAX, f64::MAX, f64::MAX);
            let mut starts = vec![0u32; LAUNCH + 1];
            let mut attrs = vec![Attr::default(); stream.total_attrs()];
            let (ne, na, nb) = Tables::encode_room(&events).total();
            let mut encoded = (
                vec![DevEvent::default(); ne],
                vec![DevAttr::default(); na],
                vec![0u8; nb],
            );
            for _ in 0..3 {
                let t0 = Instant::now();
                let room = Tables::encode_room(&events);
                let (e, a, b) = (&mut encoded.0, &mut encoded.1, &mut encoded.2);
                t.encode_into(&events, &room, e, a, b)
                    .expect("the exact room holds every part");
                before = before.min(t0.elapsed().as_secs_f64());
                let t0 = Instant::now();
                let rows = translate(&t, &stream);
                dicts = dicts.min(t0.elapsed().as_secs_f64());
                std::hint::black_box(rows);
                let t0 = Instant::now();
                for first in (0..stream.len()).step_by(LAUNCH) {
                    let r = first..(first + LAUNCH).min(stream.len());
                    let s = &stream.starts()[r.start..=r.end];
                    let a = &stream.attrs()[stream.attr_range(r)];
                    let (sd, ad) = (&mut starts[..s.len()], &mut attrs[..a.len()]);
                    rayon::join(
                        || sd.copy_from_slice(s),
                        || {
                            ad.par_chunks_mut(16 << 10)
                                .zip(a.par_chunks(16 << 10))
                                .for_each(|(d, s)| d.copy_from_slice(s))
                        },
                    );
                    std::hint::black_box(&attrs);
                }
                stage = stage.min(t0.elapsed().as_secs_f64());
            }
            (before, dicts, stage)
        });
        println!(
            "host work, {threads:2} threads: heap events encoded {:.2} ns/event; the batch: dictionaries {:.3} ms per call, staging {:.2} ns/event",
            before * 1e9 / n,
            dicts * 1e3,
            stage * 1e9 / n
        );
        threads *= 2;
    }
    let dev = match gpu_kernels::Device::gpu(0, ccm::PTX) {
        Ok(d) => d,
        Err(e) => {
            println!("no GPU ({e}): no pipeline split");
            return Ok(());
        }
    };
    for batch in [16_384, 32_768, 65_536] {
        let cfg = IndexConfig {
            batch_events: batch,
            ..IndexConfig::for_device(&dev)
        };
        let mut index = GpuIndex::new(&dev, &w.subscriptions, cfg)?;
        let mut answers = ccm::Answers::default();
        index.match_batch_into(&stream, &mut answers)?;
        for round in 1..=3 {
            index.take_timing();
            let t0 = Instant::now();
            index.match_batch_into(&stream, &mut answers)?;
            let wall = t0.elapsed().as_secs_f64();
            let s = index.take_timing();
            println!(
                "launches of {batch}, round {round}: {:.1} ns/event; {}",
                wall * 1e9 / n,
                phases(&s)
            );
        }
    }
    own_pools(&dev, &w, &stream)?;
    updates(&dev, &w, &stream)?;
    Ok(())
}

/// What the index computes once per batch from a batch's dictionaries: per name its
/// row, per string its constraint string id (the index's own code is private; this is
/// the same work).
fn translate(t: &Tables, b: &EventBatch) -> (Vec<Option<u32>>, Vec<Option<u32>>) {
    let rows = b
        .names()
        .iter()
        .map(|n| t.names.get(n.as_bytes()))
        .collect();
    let strs = b.strings().iter().map(|s| t.str_id(s)).collect();
    (rows, strs)
}

/// The stream's time per event with the index on the shared pool (every thread), then
/// on pools of its own of 4, 8, 16, .. threads up to the cores: best of
/// three rounds each, after one that warms the staging.
fn own_pools(
    dev: &gpu_kernels::Device,
    w: &workload::Workload,
    stream: &EventBatch,
) -> Result<(), Box<dyn std::error::Error>> {
    let n = stream.len() as f64;
    let cores = std::thread::available_parallelism()?.get();
    let mut sizes = vec![None];
    let mut threads = 4;
    while threads < cores {
        sizes.push(Some(threads));
        threads *= 2;
    }
    sizes.push(Some(cores));
    for size in sizes {
        let mut index = GpuIndex::new(dev, &w.subscriptions, IndexConfig::for_device(dev))?;
        if let Some(t) = size {
            index.set_encode_threads(t);
        }
        let mut answers = ccm::Answers::default();
        index.match_batch_into(stream, &mut answers)?;
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t0 = Instant::now();
            index.match_batch_into(stream, &mut answers)?;
            best = best.min(t0.elapsed().as_secs_f64());
        }
        let pool = size.map_or("the shared pool".to_string(), |t| {
            format!("a pool of its own of {t} threads")
        });
        println!(
            "staging on {pool}: {:.1} ns/event ({:.1}M events/s)",
            best * 1e9 / n,
            n / best / 1e6
        );
    }
    Ok(())
}

/// Subscriptions added and removed without a rebuild: 4,096 of Table 1's filters
/// removed in place, then added back (into the small second table, built at the next
/// match); the time of each kind of update, and the stream's time per event before,
/// with the small table, and after a full build.
fn updates(
    dev: &gpu_kernels::Device,
    w: &workload::Workload,
    stream: &EventBatch,
) -> Result<(), Box<dyn std::error::Error>> {
    let n = stream.len() as f64;
    let mut index = GpuIndex::new(dev, &w.subscriptions, IndexConfig::for_device(dev))?;
    let per_event = |index: &mut GpuIndex| -> Result<f64, ccm::CcmError> {
        let mut answers = ccm::Answers::default();
        index.match_batch_into(stream, &mut answers)?;
        let t0 = Instant::now();
        index.match_batch_into(stream, &mut answers)?;
        Ok(t0.elapsed().as_secs_f64() * 1e9 / n)
    };
    let before = per_event(&mut index)?;
    let k = 4096.min(w.subscriptions.len());
    let t0 = Instant::now();
    for i in 0..k {
        index.remove(ccm::SubId(i as u32))?;
    }
    let removed = t0.elapsed().as_secs_f64() * 1e6 / k as f64;
    let t0 = Instant::now();
    for s in &w.subscriptions[..k] {
        index.add(s)?;
    }
    let added = t0.elapsed().as_secs_f64() * 1e6 / k as f64;
    let t0 = Instant::now();
    index.match_range_into(stream, 0..1, &mut ccm::Answers::default())?;
    let delta_ms = t0.elapsed().as_secs_f64() * 1e3;
    let u = index.updates();
    let with_delta = per_event(&mut index)?;
    // The same filters after a full build.
    let mut fresh = GpuIndex::new(dev, &w.subscriptions, IndexConfig::for_device(dev))?;
    let rebuilt = per_event(&mut fresh)?;
    println!(
        "updates: {k} removed in place {removed:.2} us each, {k} added {added:.2} us each, the small table built by the next match in {delta_ms:.2} ms ({u:?}); stream {before:.1} \
            ns/event before, {with_delta:.1} with the small table, {rebuilt:.1} after a full build"
    );
    Ok(())
}

/// Table 2's rows 1 and 4 for several tunings of the index (module docs), then the
/// default tuning with other builds of the kernels (module docs).
fn table2(seed: u64) -> Result<(), Box<dyn std::error::Error>> {
    let dev = gpu_kernels::Device::gpu(0, ccm::PTX)?;
    let base = IndexConfig::for_device(&dev);
    let tunings: Vec<(&str, IndexConfig)> = vec![
        ("default", base),
        (
            "pairs only (no triples)",
            IndexConfig {
                triple_names: 0,
                ..base
            },
        ),
        (
            "triples up to 4 names",
            IndexConfig {
                triple_names: 4,
                ..base
            },
        ),
        (
            "launches of 65536",
            IndexConfig {
                batch_events: 65_536,
                ..base
            },
        ),
        (
            "launches of 262144",
            IndexConfig {
                batch_events: 262_144,
                ..base
            },
        ),
        (
            "first 32768",
            IndexConfig {
                first_launch: 32_768,
                ..base
            },
        ),
        (
            "first 8192",
            IndexConfig {
                first_launch: 8192,
                ..base
            },
        ),
        (
            "copy slices of 65536",
            IndexConfig {
                copy_slice: 65_536,
                ..base
            },
        ),
        (
            "copy slices of 262144",
            IndexConfig {
                copy_slice: 262_144,
                ..base
            },
        ),
        (
            "growth 1.5",
            IndexConfig {
                ramp_growth: 1.5,
                ..base
            },
        ),
        (
            "walk blocks of 256",
            IndexConfig {
                route_block: 256,
                ..base
            },
        ),
        (
            "heavy walks from 128 filters, 2 warps",
            IndexConfig {
                heavy_walk: 128,
                heavy_warps: 2,
                ..base
            },
        ),
        (
            "heavy walks 2 warps",
            IndexConfig {
                heavy_warps: 2,
                ..base
            },
        ),
    ];
    let rows = [(1, NameDist::Uniform), (4, NameDist::Zipf(1.0))];
    let mut workloads = rows
        .iter()
        .map(|&(row, dist)| {
            let p = Params {
                name_dist: dist,
                ..Params::default()
            };
            workload::generate(&p, seed).map(|w| (format!("table 2 row {row}"), w))
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (label, w) in &workloads {
        for (tuning, cfg) in &tunings {
            time_table2(&dev, label, w, tuning, *cfg)?;
        }
    }
    // The dense model's walked events (3-5 names each, as at the dense experiments'
    // x = 4) at 100k filters, one filter per interface (`dense`) and ten (`dense10`):
    // the partition walk's other load, timed with the default tuning only.
    for (name, interfaces) in [("dense10", Some(10)), ("dense", None)] {
        let p = workload::DenseParams {
            events: 1000,
            filters: 100_000,
            interfaces,
            names_per_event: (3, 5),
            ..workload::DenseParams::default()
        };
        let w = workload::generate_dense(&p, seed)?;
        let label = format!("{name} F=100k x=4");
        time_table2(&dev, &label, &w, "default", base)?;
        workloads.push((label, w));
    }
    // The default tuning with the kernels' PTX changed: the partition walk's registers
    // capped otherwise (`.maxnreg`; the build caps them at 56, 64 leaves them as ptxas
    // would), and the PTX files named after `table2` (other builds of the kernels, e.g.
    // the one before a change), each on a context of its own.
    let mut variants: Vec<(String, String)> = [64, 48]
        .iter()
        .filter_map(|&n| {
            with_maxnreg(ccm::PTX, "ccm_index_route", n).map(|p| (format!("walk .maxnreg {n}"), p))
        })
        .collect();
    for path in std::env::args().skip(3) {
        variants.push((
            format!("kernels of {path}"),
            std::fs::read_to_string(&path)?,
        ));
    }
    drop(dev);
    for (label, ptx) in &variants {
        let dev = gpu_kernels::Device::gpu(0, ptx)?;
        let cfg = IndexConfig::for_device(&dev);
        for (name, w) in &workloads {
            time_table2(&dev, name, w, label, cfg)?;
        }
    }
    Ok(())
}

/// Table 2's row 1 with the default tuning (module docs).
fn profile(seed: u64) -> Result<(), Box<dyn std::error::Error>> {
    let dev = gpu_kernels::Device::gpu(0, ccm::PTX)?;
    let w = workload::generate(&Params::default(), seed)?;
    let mut index = GpuIndex::new(&dev, &w.subscriptions, IndexConfig::for_device(&dev))?;
    let stream = w
        .batch
        .cycled(w.events.len().max(4 * index.launch_events()));
    let mut answers = ccm::Answers::default();
    for _ in 0..3 {
        index.match_batch_into(&stream, &mut answers)?;
    }
    println!(
        "profile: {} events, {} answers",
        answers.len(),
        answers.total()
    );
    Ok(())
}

/// `ptx` with the directive `.maxnreg n` on the entry `kernel` (in place of the one it
/// has, if any; `None`: no such entry).
fn with_maxnreg(ptx: &str, kernel: &str, n: u32) -> Option<String> {
    let at = ptx.find(&format!(".entry {kernel}("))?;
    let body = at + ptx[at..].find("\n{")?;
    let head = &ptx[..body];
    let head = match head.rfind("\n.maxnreg ") {
        Some(d) if d > at => &head[..d],
        _ => head,
    };
    Some(format!("{head}\n.maxnreg {n}{}", &ptx[body..]))
}

/// One line of [`table2`]: workload `w` (named `name`) timed with the index tuned `cfg`
/// on `dev`, as the harness times it.
fn time_table2(
    dev: &gpu_kernels::Device,
    name: &str,
    w: &workload::Workload,
    label: &str,
    cfg: IndexConfig,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut index = GpuIndex::new(dev, &w.subscriptions, cfg)?;
    let round = w.events.len().max(4 * index.launch_events());
    let stream = w.batch.cycled(round);
    let n = stream.len() as f64;
    let mut answers = ccm::Answers::default();
    index.match_batch_into(&stream, &mut answers)?;
    index.take_timing();
    let mut walls = Vec::new();
    for _ in 0..5 {
        // Each call as a new batch's, as the harness times its passes.
        index.forget_dictionaries();
        let t0 = Instant::now();
        index.match_batch_into(&stream, &mut answers)?;
        walls.push(t0.elapsed().as_secs_f64() * 1e9 / n);
    }
    walls.sort_by(f64::total_cmp);
    let s = index.take_timing();
    println!(
        "{name}, {label}: best {:.2} median {:.2} ns/event; {}, {:.3}% of events dense",
        walls[0],
        walls[2],
        phases(&s),
        100.0 * s.dense_events as f64 / s.events.max(1) as f64
    );
    Ok(())
}

/// The index's phases per event of the calls `s` timed (its `events`), as both of this
/// example's tables print them.
fn phases(s: &ccm::IndexTiming) -> String {
    let ns = |d: std::time::Duration| d.as_secs_f64() * 1e9 / s.events.max(1) as f64;
    format!(
        "dictionaries {:.2} stage {:.2} copy in {:.2} kernels {:.2} answers {:.2}; device {:.2} \
            (encoding {:.2}, walk {:.2}, dense {:.2}, lists {:.2}); waited for staging {:.2}; {} launches, {} staging grown",
        ns(s.dictionaries),
        ns(s.stage),
        ns(s.copy_in),
        ns(s.kernels),
        ns(s.answers),
        ns(s.device),
        ns(s.device_encode),
        ns(s.device_walk),
        ns(s.device_dense),
        ns(s.device_lists),
        ns(s.waited),
        s.launches,
        s.staging_grown
    )
}
