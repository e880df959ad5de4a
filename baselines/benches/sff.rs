//! SFF-like matcher at the CCM paper's default scale (Table 1: 10 interfaces, 22,500 to
//! 27,500 filters each, 3-5 constraints per filter, 100 names, 1000 events): time per
//! event single-threaded, per event on all cores, and the index build (deployment).

use baselines::sff::Sff;
use baselines::Matcher;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

fn default_scenario(c: &mut Criterion) {
    let w =
        ccm::workload::generate(&ccm::Params::default(), 1).expect("default parameters are valid");
    let sff = Sff::build(&w.subscriptions).expect("generated filters are well formed");
    let mut g = c.benchmark_group("sff_default_scenario");
    g.sample_size(10);
    g.throughput(Throughput::Elements(w.events.len() as u64));
    g.bench_function("match_1000_events_one_core", |b| {
        let mut s = sff.scratch();
        b.iter(|| {
            w.events
                .iter()
                .map(|e| sff.match_event_with(e, &mut s).len())
                .sum::<usize>()
        })
    });
    g.bench_function("match_1000_events_all_cores", |b| {
        b.iter(|| sff.match_parallel(&w.events).len())
    });
    g.throughput(Throughput::Elements(w.constraints() as u64));
    g.bench_function("deploy", |b| {
        b.iter_batched(
            || w.subscriptions.clone(),
            |subs| Sff::build(&subs).map(|s| s.filters()),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, default_scenario);
criterion_main!(benches);
