//! Criterion bench of the R*-tree peer at the CLCB paper's default scale (§5, Table 1:
//! 250k subscriptions x 10 filters, filters covering 0.01 % of the area, uniform), plus
//! the 1 % coverage of Fig. 3d and the Zipf distribution of Fig. 4: one point query per
//! event (location only, the paper's R-Tree series), the same with the content check,
//! and one area move (remove + insert, Fig. 5).
//!
//! `GPU_MATCH_BENCH_SUBS` overrides the number of subscriptions (e.g. for a quick look).

use baselines::rtree::RTreeMatcher;
use clcb::workload::{Params, Spatial, Workload};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn subscriptions() -> usize {
    std::env::var("GPU_MATCH_BENCH_SUBS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(250_000)
}

fn bench(c: &mut Criterion) {
    let n = subscriptions();
    let cases = [
        ("uniform 0.01%", Spatial::Uniform, 0.01),
        ("uniform 1%", Spatial::Uniform, 1.0),
        ("zipf 0.01%", Spatial::Zipf { s: 1.0 }, 0.01),
    ];
    let mut g = c.benchmark_group(format!("rtree {n} subscriptions"));
    g.sample_size(20);
    for (name, spatial, area_percent) in cases {
        let w = Workload::new(
            Params {
                subscriptions: n,
                events: 1000,
                spatial,
                area_percent,
                ..Params::default()
            },
            1,
        );
        let subs = w.subscriptions();
        let events = w.events();
        let mut tree = RTreeMatcher::build(&subs);
        let mut i = 0usize;
        g.bench_function(format!("{name}: locate (location only)"), |b| {
            b.iter(|| {
                i = (i + 1) % events.len();
                black_box(tree.locate_indices(events[i].loc))
            })
        });
        g.bench_function(format!("{name}: match (location + content)"), |b| {
            b.iter(|| {
                i = (i + 1) % events.len();
                black_box(tree.match_indices(&events[i], &subs))
            })
        });
        let updates = w.updates(10_000, subs.filter_count());
        let mut u = 0usize;
        g.bench_function(format!("{name}: move one area (remove + insert)"), |b| {
            b.iter(|| {
                u = (u + 1) % updates.len();
                tree.move_area(&updates[u]).expect("filter exists")
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
