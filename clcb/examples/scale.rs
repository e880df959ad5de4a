//! Host-side costs of one full-scale workload (generation, layout, R*-tree build and
//! queries): `cargo run --release -p clcb --example scale -- [subscriptions] [area %]`.

use baselines::rtree::RTreeMatcher;
use clcb::layout::Tables;
use clcb::workload::{Params, Workload};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let area: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let t = Instant::now();
    let w = Workload::new(
        Params {
            subscriptions: n,
            events: 100,
            area_percent: area,
            ..Params::default()
        },
        1,
    );
    let subs = w.subscriptions();
    let events = w.events();
    println!(
        "generate {n} subscriptions: {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let tables = Tables::build(&subs);
    println!(
        "layout ({} constraints): {:.2} s",
        tables.constraints.len(),
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let tree = RTreeMatcher::build(&subs);
    println!("R*-tree bulk load: {:.2} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let hits: usize = events
        .iter()
        .map(|e| tree.locate_indices(e.loc).len())
        .sum();
    println!(
        "locate: {:.3} ms per event, {} subscriptions",
        t.elapsed().as_secs_f64() * 10.0,
        hits / 100
    );
    let t = Instant::now();
    let hits: usize = events
        .iter()
        .map(|e| tree.match_indices(e, &subs).len())
        .sum();
    println!(
        "match with content: {:.3} ms per event, {} subscriptions",
        t.elapsed().as_secs_f64() * 10.0,
        hits / 100
    );
}
