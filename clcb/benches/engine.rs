//! The CLCB engine's hot paths (§4): one event end to end over every filter (Loc, Cont,
//! Zip) and over the GPU grid, a batch of events, and one area update, on Table 1's
//! default scenario. Without a GPU the same kernels run on the host emulator over a
//! small workload (the times then say nothing about a GPU).
//!
//!     cargo bench -p clcb --bench engine

use clcb::engine::{Engine, Options};
use clcb::workload::{Params, Workload};
use criterion::{criterion_group, criterion_main, Criterion};
use gpu_kernels::Device;

fn engine(c: &mut Criterion) {
    let dev = Device::gpu_or_emulator_noted(0, clcb::PTX);
    let gpu = dev.is_gpu();
    let params = if gpu {
        Params::default()
    } else {
        Params {
            subscriptions: 200,
            events: 8,
            area_percent: 1.0,
            ..Params::default()
        }
    };
    let w = Workload::new(params, 1);
    let subs = w.subscriptions();
    let events = w.events();
    let updates = w.updates(1000, subs.filter_count());
    let mut g = c.benchmark_group(if gpu {
        "clcb_default"
    } else {
        "clcb_emulator_small"
    });
    g.sample_size(10);
    let mut e = Engine::new(dev, &subs, Options::default()).expect("engine");
    for grid in [false, true] {
        e.set_grid(grid).expect("grid");
        let mut i = 0;
        let name = if grid {
            "grid_per_event"
        } else {
            "paper_per_event"
        };
        g.bench_function(name, |b| {
            b.iter(|| {
                i = (i + 1) % events.len();
                e.match_event(&events[i]).expect("match")
            })
        });
    }
    e.set_grid(false).expect("grid");
    g.bench_function(format!("batch_of_{}", events.len()), |b| {
        b.iter(|| e.match_batch(&events).expect("match"))
    });
    let mut i = 0;
    g.bench_function("area_update", |b| {
        b.iter(|| {
            i = (i + 1) % updates.len();
            e.move_area(&updates[i]).expect("update")
        })
    });
    e.synchronize().expect("sync");
    g.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
