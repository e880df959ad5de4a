//! CPU DDM matchers at the paper's scale (§IV: 32768 regions in a 10000 x 10000 space,
//! RS = 10 x 10 and 100 x 100, uniform and crowded; grid cells 100 x 100) and at the
//! scale-up's 1M regions (alpha = 1, counting).

use baselines::ddm::{Algorithm, DdmMatcher};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ddm_region::workload::{scale_up, Distribution, ScaleUpParams, Scenario, ScenarioParams};

fn paper_scale(c: &mut Criterion) {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let mut g = c.benchmark_group("ddm_paper_32768");
    g.sample_size(10);
    for (dist, size) in [
        (Distribution::Uniform, 10),
        (Distribution::Uniform, 100),
        (Distribution::Crowded, 100),
    ] {
        let s = Scenario::new(ScenarioParams::paper(32768, size, dist), 1).expect("scenario");
        let set = s.regions();
        let cell = Some(vec![100, 100]);
        for (name, m) in [
            ("brute", DdmMatcher::new(Algorithm::Brute, 1)),
            ("brute-par", DdmMatcher::new(Algorithm::Brute, threads)),
            (
                "grid",
                DdmMatcher::new(Algorithm::Grid { cell: cell.clone() }, 1),
            ),
            (
                "grid-par",
                DdmMatcher::new(Algorithm::Grid { cell: cell.clone() }, threads),
            ),
            ("sort", DdmMatcher::new(Algorithm::Sort, 1)),
            ("sort-par", DdmMatcher::new(Algorithm::Sort, threads)),
        ] {
            let id = BenchmarkId::new(name, format!("{dist:?}-RS{size}"));
            g.bench_with_input(id, set, |b, set| b.iter(|| m.pairs_unordered(set).len()));
        }
    }
    g.finish();
}

fn scale_up_1m(c: &mut Criterion) {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let set = scale_up(
        &ScaleUpParams {
            regions: 1 << 20,
            alpha: 1.0,
            dims: 2,
        },
        1,
    )
    .expect("workload");
    let mut g = c.benchmark_group("ddm_scaleup_1m_alpha1_count");
    g.sample_size(10);
    for (name, m) in [
        ("sort", DdmMatcher::new(Algorithm::Sort, 1)),
        ("sort-par", DdmMatcher::new(Algorithm::Sort, threads)),
    ] {
        g.bench_function(name, |b| b.iter(|| m.count(&set)));
    }
    g.finish();
}

criterion_group!(benches, paper_scale, scale_up_1m);
criterion_main!(benches);
