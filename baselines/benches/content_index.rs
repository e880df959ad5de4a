//! The content index next to the SFF-like matcher at the CCM paper's default
//! scale (Table 1: 10 interfaces, 22,500 to 27,500 filters each, 3-5 constraints per
//! filter, 100 names, 1000 events), uniform and Zipf names: time per event on one core
//! and on all cores, and the index build (deployment). The thread-scaling table is
//! `cargo run --release -p baselines --example ccm_index_scaling`.

use baselines::content_index::ContentIndex;
use baselines::Matcher;
use ccm::workload::{generate, NameDist, Params};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

fn default_scenario(c: &mut Criterion) {
    for (label, dist) in [
        ("uniform", NameDist::Uniform),
        ("zipf", NameDist::Zipf(1.0)),
    ] {
        let p = Params {
            name_dist: dist,
            ..Params::default()
        };
        let w = generate(&p, 1).expect("default parameters are valid");
        let ix = ContentIndex::build(&w.subscriptions).expect("generated filters are well formed");
        let mut g = c.benchmark_group(format!("content_index_default_scenario_{label}"));
        g.sample_size(10);
        g.throughput(Throughput::Elements(w.events.len() as u64));
        g.bench_function("match_1000_events_one_core", |b| {
            let mut s = ix.scratch();
            b.iter(|| {
                w.events
                    .iter()
                    .map(|e| ix.match_event_with(e, &mut s).len())
                    .sum::<usize>()
            })
        });
        g.bench_function("match_1000_events_all_cores", |b| {
            b.iter(|| ix.match_parallel(&w.events).len())
        });
        g.throughput(Throughput::Elements(w.constraints() as u64));
        g.bench_function("deploy", |b| {
            b.iter_batched(
                || w.subscriptions.clone(),
                |subs| ContentIndex::build(&subs).map(|s| s.filters()),
                BatchSize::LargeInput,
            )
        });
        g.finish();
    }
}

criterion_group!(benches, default_scenario);
criterion_main!(benches);
