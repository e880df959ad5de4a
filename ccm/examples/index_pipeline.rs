//! Where the pruning index's time goes on Table 1's default scenario: encoding the
//! events on 1, 2, 4, .. threads (into ordinary memory, alone), then, with a GPU, the
//! index's own split ([`ccm::IndexTiming`]) over a stream of 262,144 events for
//! several launch sizes, the stream's time per event with the index driven from
//! encoding pools of its own of 4, 8, 16, .. threads ([`GpuIndex::set_encode_threads`];
//! on a host of many cores the shared pool of every thread was measured several times
//! slower than a share of them), and the cost of subscriptions removed and added
//! without a rebuild. Answers are not checked here (the harness and the tests do).
//!
//!     cargo run --release -p ccm --example index_pipeline [seed]

use ccm::layout::{Tables, ENCODE_PART};
use ccm::{workload, Event, GpuIndex, IndexConfig, Params};
use std::time::Instant;

/// The allocator of the harness (mimalloc), so that the events lie in memory as the
/// harness's do: encoding reads every event's heap-allocated names and strings.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seed = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1);
    let w = workload::generate(&Params::default(), seed)?;
    let t = Tables::build(&w.subscriptions, false)?;
    let stream: Vec<Event> = w.events.iter().cycle().take(1 << 18).cloned().collect();
    let n = stream.len() as f64;
    let cores = std::thread::available_parallelism()?.get();
    let mut threads = 1;
    while threads <= cores {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?;
        // The exact room (a pass over every attribute), then the slotted one (the
        // events' attribute counts only; string slots sized from the exact pass).
        let (exact, slotted) = pool.install(|| {
            let mut best = [(f64::MAX, f64::MAX); 2];
            let mut slot = 0;
            for _ in 0..3 {
                for (k, b) in best.iter_mut().enumerate() {
                    let t0 = Instant::now();
                    let room = if k == 0 {
                        Tables::encode_room(&stream)
                    } else {
                        Tables::slotted_room(&stream, slot)
                    };
                    let counted = t0.elapsed().as_secs_f64();
                    let (a, b_, c) = room.total();
                    let (mut evs, mut attrs, mut bytes) = (
                        vec![Default::default(); a],
                        vec![Default::default(); b_],
                        vec![0; c],
                    );
                    let t0 = Instant::now();
                    let most = t
                        .encode_into(&stream, &room, &mut evs, &mut attrs, &mut bytes)
                        .expect("the slots hold more than the exact pass's most");
                    slot = Tables::part_slot(most);
                    *b = (b.0.min(counted), b.1.min(t0.elapsed().as_secs_f64()));
                }
            }
            (best[0], best[1])
        });
        for (what, (room_s, encode_s)) in [("exact", exact), ("slotted", slotted)] {
            println!(
                "encoding, {threads:2} threads, {what} room: count {:.1} + encode {:.1} ns/event",
                room_s * 1e9 / n,
                encode_s * 1e9 / n
            );
        }
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
        if batch == 65_536 {
            encode_alone(&dev, &t, &stream, batch)?;
        }
        let mut index = GpuIndex::new(&dev, &w.subscriptions, cfg)?;
        let mut answers = ccm::Answers::default();
        index.match_batch_into(&stream, &mut answers)?;
        for round in 1..=3 {
            index.take_timing();
            let t0 = Instant::now();
            index.match_batch_into(&stream, &mut answers)?;
            let wall = t0.elapsed().as_secs_f64();
            let s = index.take_timing();
            let ns = |d: std::time::Duration| d.as_secs_f64() * 1e9 / n;
            println!(
                "launches of {batch}, round {round}: {:.1} ns/event; encode {:.1}, copy in {:.1}, kernels {:.1}, answers {:.1}; waited for encoding {:.1}; {} launches, {} encoded \
                    twice, {} staging grown",
                wall * 1e9 / n,
                ns(s.encode),
                ns(s.copy_in),
                ns(s.kernels),
                ns(s.answers),
                ns(s.waited),
                s.launches,
                s.encoded_again,
                s.staging_grown
            );
        }
    }
    own_pools(&dev, &w, &stream)?;
    updates(&dev, &w, &stream)?;
    Ok(())
}

/// The stream's time per event with the index on the shared encoding pool (every
/// thread), then on pools of its own of 4, 8, 16, .. threads up to the cores: best of
/// three rounds each, after one that warms the staging.
fn own_pools(
    dev: &gpu_kernels::Device,
    w: &workload::Workload,
    stream: &[Event],
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
            "encoding on {pool}: {:.1} ns/event ({:.1}M events/s)",
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
    stream: &[Event],
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
    index.match_batch(&stream[..1])?;
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

/// The pipeline's encoding without the device at work: launches of `batch` events
/// encoded (slotted room) on pools of 15 and 16 threads, into page-locked staging and
/// into ordinary memory (written once before), so that the pipeline's encode time can
/// be told apart from what the staging memory and the thread count cost.
fn encode_alone(
    dev: &gpu_kernels::Device,
    t: &Tables,
    stream: &[Event],
    batch: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let cores = std::thread::available_parallelism()?.get();
    let room = Tables::encode_room(&stream[..batch]);
    let (a, b, c) = room.total();
    let slot = 4 * c / stream[..batch].len().div_ceil(ENCODE_PART) + 64;
    let slotted = Tables::slotted_room(&stream[..batch], slot);
    // Room for any launch of the stream: twice the first one's.
    let (a2, b2, c2) = slotted.total();
    let (a, b, c, a2, b2, c2) = (2 * a, 2 * b, 2 * c, 2 * a2, 2 * b2, 2 * c2);
    let mut pinned = (
        dev.alloc_host::<ccm_kernels::DevEvent>(a.max(a2))?,
        dev.alloc_host::<ccm_kernels::DevAttr>(b.max(b2))?,
        dev.alloc_host::<u8>(c.max(c2))?,
    );
    let mut plain = (
        vec![ccm_kernels::DevEvent::default(); a.max(a2)],
        vec![ccm_kernels::DevAttr::default(); b.max(b2)],
        vec![0u8; c.max(c2)],
    );
    for threads in [cores.saturating_sub(1).max(1), cores] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?;
        for pinned_mem in [true, false] {
            let mut took = 0.0;
            let mut n = 0usize;
            for _ in 0..4 {
                for chunk in stream.chunks(batch) {
                    let t0 = Instant::now();
                    pool.install(|| {
                        let room = Tables::slotted_room(chunk, slot);
                        let r = if pinned_mem {
                            t.encode_into(
                                chunk,
                                &room,
                                pinned.0.as_mut_slice(),
                                pinned.1.as_mut_slice(),
                                pinned.2.as_mut_slice(),
                            )
                        } else {
                            t.encode_into(chunk, &room, &mut plain.0, &mut plain.1, &mut plain.2)
                        };
                        r.expect("slots of four times the mean hold every part");
                    });
                    took += t0.elapsed().as_secs_f64();
                    n += chunk.len();
                }
            }
            println!(
                "encode alone, launches of {batch}, {threads} threads, into {}: {:.1} ns/event",
                if pinned_mem {
                    "page-locked staging"
                } else {
                    "ordinary memory"
                },
                took * 1e9 / n as f64
            );
        }
    }
    Ok(())
}
