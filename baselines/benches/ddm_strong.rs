//! Today's strong DDM matchers (Marzolla & D'Angelo's SBM and ITM) next to the
//! sort-based baseline: counting at the paper's 32768 regions (scenario I, uniform,
//! RS = 10 x 10, and crowded RS = 100 x 100) and at the scale-up's 1M regions (alpha = 1
//! and 100), on one thread and on all cores. `cargo bench -p baselines --bench ddm_strong`.
//! The thread-scaling table is `cargo run --release -p baselines --example ddm_scaling`.

use baselines::ddm::{Algorithm, DdmMatcher};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ddm_region::model::RegionSet;
use ddm_region::workload::{scale_up, Distribution, ScaleUpParams, Scenario, ScenarioParams};

fn matchers() -> Vec<(&'static str, DdmMatcher)> {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    vec![
        ("sort", DdmMatcher::new(Algorithm::Sort, 1)),
        ("sort-par", DdmMatcher::new(Algorithm::Sort, all)),
        ("sbm", DdmMatcher::new(Algorithm::Sbm, 1)),
        ("sbm-par", DdmMatcher::new(Algorithm::Sbm, all)),
        ("itm", DdmMatcher::new(Algorithm::Itm, 1)),
        ("itm-par", DdmMatcher::new(Algorithm::Itm, all)),
    ]
}

fn bench_sets(c: &mut Criterion, group: &str, sets: &[(String, RegionSet)], enumerate: bool) {
    let mut g = c.benchmark_group(group);
    g.sample_size(10);
    for (label, set) in sets {
        for (name, m) in matchers() {
            let id = BenchmarkId::new(name, label);
            if enumerate {
                g.bench_with_input(id, set, |b, set| b.iter(|| m.pairs_unordered(set).len()));
            } else {
                g.bench_with_input(id, set, |b, set| b.iter(|| m.count(set)));
            }
        }
    }
    g.finish();
}

fn paper_scale(c: &mut Criterion) {
    let sets: Vec<(String, RegionSet)> =
        [(Distribution::Uniform, 10), (Distribution::Crowded, 100)]
            .into_iter()
            .map(|(dist, size)| {
                let s =
                    Scenario::new(ScenarioParams::paper(32768, size, dist), 1).expect("scenario");
                (format!("{dist:?}-RS{size}"), s.regions().clone())
            })
            .collect();
    bench_sets(c, "ddm_strong_32768_pairs", &sets, true);
}

fn scale_up_1m(c: &mut Criterion) {
    let sets: Vec<(String, RegionSet)> = [1.0, 100.0]
        .into_iter()
        .map(|alpha| {
            let set = scale_up(
                &ScaleUpParams {
                    regions: 1 << 20,
                    alpha,
                    dims: 2,
                },
                1,
            )
            .expect("workload");
            (format!("alpha{alpha}"), set)
        })
        .collect();
    bench_sets(c, "ddm_strong_1m_count", &sets, false);
}

criterion_group!(benches, paper_scale, scale_up_1m);
criterion_main!(benches);
