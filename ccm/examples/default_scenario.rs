//! Table 1's default scenario on the GPU (or, without one, the same on the host emulator
//! with fewer events): deployment time, device bytes (Table 2), the per-event latency of
//! each per-event path (median and mean, end to end: encode, launch, results on the
//! host), Fig. 5's split, and the batched throughput. Every answer is checked against
//! the SFF-like baseline.
//!
//!     cargo run --release -p ccm --example default_scenario [seed] [events]

use baselines::sff::Sff;
use baselines::Matcher;
use ccm::{workload, Ccm, Config, Event, InterfaceId, Params, Reset};
use gpu_kernels::Device;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let seed = args.next().map(|s| s.parse()).transpose()?.unwrap_or(1);
    let measured: Option<usize> = args.next().map(|s| s.parse()).transpose()?;
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
            println!("no GPU ({e}): the host emulator, few events");
            (Device::emulator(), false)
        }
    };
    println!("device: {}", dev.name());
    let t0 = Instant::now();
    let sff = Sff::build(&w.subscriptions)?;
    let truth = sff.match_parallel(&w.events);
    println!(
        "sff: built and matched all events on all cores ({:.0} ms)",
        t0.elapsed().as_secs_f64() * 1e3
    );
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
            "{label}: deployment {:.1} ms, {:.1} MB on the device",
            t0.elapsed().as_secs_f64() * 1e3,
            ccm.device_bytes() as f64 / 1e6,
        );
    }

    // Per event: warm-up, then `n` events one by one (the workload's, cycled).
    let (warm, n) = if gpu {
        (200, measured.unwrap_or(5000))
    } else {
        (0, measured.unwrap_or(3))
    };
    let block = if gpu { 256 } else { 32 };
    let paths = [
        (
            "paper (memset)",
            Config {
                reset: Reset::Memset,
                ..Config::default()
            },
        ),
        ("paper (in-kernel reset)", Config::default()),
        (
            "inline Input",
            Config {
                inline_events: true,
                ..Config::default()
            },
        ),
        (
            "mapped output",
            Config {
                mapped_output: true,
                ..Config::default()
            },
        ),
        ("low latency (inline + mapped)", Config::low_latency()),
    ];
    // The low-latency path at other block sizes (GPU only).
    let blocks: &[(&str, u32)] = if gpu {
        &[
            ("low latency, block 128", 128),
            ("low latency, block 512", 512),
            ("low latency, block 1024", 1024),
        ]
    } else {
        &[]
    };
    let paths = paths
        .into_iter()
        .map(|(l, c)| (l, Config { block, ..c }))
        .chain(blocks.iter().map(|&(l, block)| {
            (
                l,
                Config {
                    block,
                    ..Config::low_latency()
                },
            )
        }));
    println!("per event, {n} events after {warm} of warm-up (end to end, host clock):");
    for (label, cfg) in paths {
        let mut ccm = Ccm::new(&dev, &w.subscriptions, cfg)?;
        let order = (0..w.events.len()).cycle();
        for i in order.clone().take(warm) {
            check(&ccm.match_event(&w.events[i])?, &truth[i], label, i)?;
        }
        let mut us = Vec::with_capacity(n);
        for i in order.clone().skip(warm).take(n) {
            let t = Instant::now();
            let got = ccm.match_event(&w.events[i])?;
            us.push(t.elapsed().as_secs_f64() * 1e6);
            check(&got, &truth[i], label, i)?;
        }
        let (cin, k, cout) = split(&mut ccm, &w.events, &truth, label, n.min(2000))?;
        us.sort_by(f64::total_cmp);
        let mean = us.iter().sum::<f64>() / us.len() as f64;
        println!(
            "  {label:30} median {:7.2} us  mean {:7.2} us  p99 {:7.2} us  | split (synchronised): copy in {:.2}, kernel {:.2}, copy out {:.2} us",
            us[us.len() / 2],
            mean,
            us[(us.len() * 99 / 100).min(us.len() - 1)],
            cin,
            k,
            cout
        );
    }

    // SFF, one core, for the speedup.
    let mut scratch = sff.scratch();
    let m = w.events.len().min(if gpu { 1000 } else { 20 });
    let t0 = Instant::now();
    for (i, e) in w.events.iter().enumerate().take(m) {
        check(&sff.match_event_with(e, &mut scratch), &truth[i], "sff", i)?;
    }
    println!(
        "sff (one core): {:.2} us per event",
        t0.elapsed().as_secs_f64() * 1e6 / m as f64
    );

    let mut ccm = Ccm::new(
        &dev,
        &w.subscriptions,
        Config {
            block,
            batch_events: if gpu { 16_384 } else { 64 },
            batch_chunk: if gpu { 256 } else { 16 },
            ..Config::default()
        },
    )?;
    let reps = if gpu { 262_144 } else { 16 };
    let stream = w.batch.cycled(reps);
    ccm.match_range(&w.batch, 0..w.events.len().min(reps))?;
    let t0 = Instant::now();
    let got = ccm.match_batch(&stream)?;
    let s = t0.elapsed().as_secs_f64();
    for (i, g) in got.iter().enumerate() {
        check(g, &truth[i % truth.len()], "batched", i)?;
    }
    println!("batched: {:.0} events/s", got.len() as f64 / s);
    Ok(())
}

/// Fig. 5's split (mean microseconds per phase, a synchronisation after each) over `n`
/// events.
fn split(
    ccm: &mut Ccm,
    events: &[Event],
    truth: &[Vec<InterfaceId>],
    label: &str,
    n: usize,
) -> Result<(f64, f64, f64), Box<dyn std::error::Error>> {
    let (mut cin, mut k, mut cout) = (0.0, 0.0, 0.0);
    for i in (0..events.len()).cycle().take(n) {
        let (got, t) = ccm.match_event_timed(&events[i])?;
        check(&got, &truth[i], label, i)?;
        cin += t.copy_in_ms;
        k += t.kernel_ms;
        cout += t.copy_out_ms;
    }
    let us = |ms: f64| ms * 1e3 / n.max(1) as f64;
    Ok((us(cin), us(k), us(cout)))
}

fn check(
    got: &[InterfaceId],
    want: &[InterfaceId],
    label: &str,
    i: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    if got != want {
        return Err(format!("{label}: event {i}: got {got:?}, sff says {want:?}").into());
    }
    Ok(())
}
