//! One thread: the grid index ([`baselines::grid_index`]) against the R*-tree with the
//! content check ([`baselines::rtree`]) on CLCB's Table 2 default scenario and on the
//! keyword workload ([`clcb::keywords`]), answers checked equal; prints µs per event.
//!
//!     cargo run --release -p baselines --example clcb_grid -- [subscriptions of table2] [keyword subscriptions]

use baselines::{grid_index::GridIndex, rtree::RTreeMatcher};
use clcb::keywords::{KeywordParams, KeywordWorkload};
use clcb::workload::{Params, Workload};
use clcb::{Event, Subscriptions};
use std::time::Instant;

fn compare(what: &str, subs: &Subscriptions, events: &[Event]) {
    let t = Instant::now();
    let grid = GridIndex::build(subs).expect("a valid workload");
    let build = t.elapsed().as_secs_f64();
    let rtree = RTreeMatcher::build(subs);
    let mut s = grid.scratch();
    // One untimed pass (first touches of the scratch and the cells).
    for e in events {
        grid.match_indices_with(e, &mut s);
    }
    let t = Instant::now();
    let g: Vec<Vec<u32>> = events
        .iter()
        .map(|e| grid.match_indices_with(e, &mut s))
        .collect();
    let tg = t.elapsed().as_secs_f64() * 1e6 / events.len() as f64;
    let t = Instant::now();
    let r: Vec<Vec<u32>> = events
        .iter()
        .map(|e| rtree.match_indices(e, subs))
        .collect();
    let tr = t.elapsed().as_secs_f64() * 1e6 / events.len() as f64;
    assert_eq!(g, r, "{what}: the grid disagrees with the R*-tree");
    let hits: usize = g.iter().map(Vec::len).sum();
    println!(
        "{what}: grid {tg:.2} us/event, rtree+content {tr:.2} us/event, {:.1}x; {:.1} matches/event; grid {:?} cells, {} keys, {:.0} MB, built in {build:.2} s",
        tr / tg,
        hits as f64 / events.len() as f64,
        grid.cells(),
        grid.keys(),
        grid.heap_bytes() as f64 / 1e6,
    );
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let t2 = args.first().copied().unwrap_or(250_000);
    let kw = args.get(1).copied().unwrap_or(1_000_000);
    let w = Workload::new(
        Params {
            subscriptions: t2,
            events: 2000,
            ..Params::default()
        },
        1,
    );
    let subs = w.subscriptions();
    compare("table2 default", &subs, &w.events());
    // Area moves (Table 2 row 3, Fig. 5): 1000 moves, grid and R*-tree, twice each.
    let ups = w.updates(1000, subs.filter_count());
    let mut grid = GridIndex::build(&subs).expect("a valid workload");
    let mut rtree = RTreeMatcher::build(&subs);
    for round in 0..2 {
        let t = Instant::now();
        for u in &ups {
            grid.move_area(u).expect("a filter");
        }
        let tg = t.elapsed().as_secs_f64() * 1e6 / ups.len() as f64;
        let t = Instant::now();
        for u in &ups {
            rtree.move_area(u).expect("a filter");
        }
        let tr = t.elapsed().as_secs_f64() * 1e6 / ups.len() as f64;
        println!(
            "table2 default, moves (round {round}): grid {tg:.2} us/move, rtree {tr:.2} us/move"
        );
    }
    for area in [0.01, 1.0] {
        let w = KeywordWorkload::new(
            KeywordParams {
                subscriptions: kw,
                events: 2000,
                area_percent: area,
                ..Default::default()
            },
            1,
        );
        compare(
            &format!("keywords {area}% {kw}"),
            &w.subscriptions(),
            &w.events(),
        );
    }
}
