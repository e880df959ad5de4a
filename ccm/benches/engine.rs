//! The CCM engine's hot paths (§4): one event end to end on the paper's path and on the
//! low-latency path, and a batch of events, on Table 1's default scenario. On a machine
//! without a GPU the same kernels run on the host emulator over a small workload (the
//! times then say nothing about a GPU; the bench still exercises the code).
//!
//!     cargo bench -p ccm --bench engine

use ccm::{workload, Ccm, Config, Params};
use criterion::{criterion_group, criterion_main, Criterion};
use gpu_kernels::Device;

fn engine(c: &mut Criterion) {
    let dev = Device::gpu_or_emulator_noted(0, ccm::PTX);
    let gpu = dev.is_gpu();
    let params = if gpu {
        Params::default()
    } else {
        Params {
            events: 8,
            filters_per_interface: (20, 30),
            ..Params::default()
        }
    };
    let w = workload::generate(&params, 1).expect("workload");
    let mut g = c.benchmark_group(if gpu {
        "ccm_default"
    } else {
        "ccm_emulator_small"
    });
    g.sample_size(10);
    for (name, cfg) in [
        ("paper", Config::default()),
        ("low_latency", Config::low_latency()),
    ] {
        let mut ccm = Ccm::new(&dev, &w.subscriptions, cfg).expect("engine");
        let mut i = 0;
        g.bench_function(format!("{name}_per_event"), |b| {
            b.iter(|| {
                i = (i + 1) % w.events.len();
                ccm.match_event(&w.events[i]).expect("match")
            })
        });
    }
    let cfg = Config {
        batch_tables: true,
        ..Config::default()
    };
    let mut ccm = Ccm::new(&dev, &w.subscriptions, cfg).expect("engine");
    g.bench_function(format!("batch_of_{}", w.events.len()), |b| {
        b.iter(|| ccm.match_batch(&w.batch).expect("match"))
    });
    g.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
