//! The grid index against the R*-tree oracle (location + content check), on random
//! filters and events with area moves interleaved between the events: zero radii,
//! events on circles' borders, coordinates far from the origin, moves far outside the
//! grid built at first, string equalities (the keys looked up inside the cells), name
//! pairs, filters without content; and long move sequences that compact the cells.

use baselines::grid_index::GridIndex;
use baselines::rtree::RTreeMatcher;
use ccm::model::{Attribute, Constraint, Op, Value};
use clcb::keywords::{KeywordParams, KeywordWorkload};
use clcb::model::{
    Area, AreaUpdate, Event, Filter, FilterId, Location, Subscription, SubscriptionId,
    Subscriptions,
};
use proptest::prelude::*;

mod areas;
use areas::probes;

fn coord() -> impl Strategy<Value = f64> {
    prop_oneof![
        (-6i32..7).prop_map(|i| i as f64 * 0.25),
        (-100.0f64..100.0),
        Just(123_456.75),
        Just(-98_765.5),
    ]
}

fn area() -> impl Strategy<Value = Area> {
    areas::area(
        coord().boxed(),
        prop_oneof![Just(0.0), Just(0.25), Just(1.0), 0.0f64..30.0, Just(1000.0)].boxed(),
    )
}

const STRS: [&str; 4] = ["", "x", "xy", "yx"];

fn constraint() -> impl Strategy<Value = Constraint> {
    prop_oneof![
        (prop::sample::select(vec!["a", "b"]), 0usize..6, -2i64..3).prop_map(|(n, op, v)| {
            let ops = [Op::Eq, Op::Ne, Op::Lt, Op::Gt, Op::Le, Op::Ge];
            Constraint::new(n, ops[op], Value::Int(v)).unwrap()
        }),
        (
            prop::sample::select(vec!["s", "t", "a"]),
            prop_oneof![Just(0usize), Just(0), 0usize..5],
            prop::sample::select(STRS.to_vec())
        )
            .prop_map(|(n, op, v)| {
                let ops = [Op::Eq, Op::Ne, Op::Prefix, Op::Suffix, Op::Substr];
                Constraint::new(n, ops[op], Value::Str(v.into())).unwrap()
            }),
    ]
}

fn subscriptions() -> impl Strategy<Value = Subscriptions> {
    let filter = (prop::collection::vec(constraint(), 0..4), area())
        .prop_map(|(c, a)| Filter::new(c, a).unwrap());
    prop::collection::vec(prop::collection::vec(filter, 1..4), 1..50).prop_map(|subs| {
        Subscriptions::new(
            subs.into_iter()
                .enumerate()
                .map(|(i, filters)| Subscription {
                    id: SubscriptionId(i as u32 * 3 + 2),
                    filters,
                }),
        )
    })
}

/// Events at arbitrary points and on the borders and centres of the filters' circles.
fn events(subs: &Subscriptions) -> impl Strategy<Value = Vec<Event>> {
    let borders: Vec<Location> = subs
        .filters()
        .flat_map(|(_, _, f)| probes(&f.area))
        .collect();
    let loc = prop_oneof![
        (coord(), coord()).prop_map(|(x, y)| Location::new(x, y).unwrap()),
        prop::sample::select(borders),
    ];
    let attrs = (
        prop::option::of(-2i64..3),
        prop::option::of(prop::sample::select(STRS.to_vec())),
        prop::option::of(prop::sample::select(STRS.to_vec())),
        prop::option::of(-2i64..3),
    );
    prop::collection::vec((loc, attrs), 1..10).prop_map(|v| {
        v.into_iter()
            .map(|(loc, (a, s, t, b))| {
                let mut attrs = Vec::new();
                let mut put = |n: &str, v: Option<Value>| {
                    if let Some(value) = v {
                        attrs.push(Attribute {
                            name: n.into(),
                            value,
                        });
                    }
                };
                put("a", a.map(Value::Int));
                put("s", s.map(|s| Value::Str(s.into())));
                put("t", t.map(|s| Value::Str(s.into())));
                put("b", b.map(Value::Int));
                Event {
                    loc,
                    content: ccm::model::Event::new(attrs).unwrap(),
                }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn grid_equals_the_rtree_oracle_with_moves_between_events(
        (subs, evs, moves) in subscriptions().prop_flat_map(|s| {
            let n = s.filter_count();
            (
                Just(s.clone()),
                events(&s),
                prop::collection::vec(prop::collection::vec((0..n, area()), 0..40), 10),
            )
        })
    ) {
        let mut model = subs.clone();
        let mut tree = RTreeMatcher::build(&subs);
        let mut grid = GridIndex::build(&subs).unwrap();
        for (round, e) in evs.iter().enumerate() {
            let truth = tree.match_indices(e, &model);
            prop_assert_eq!(&grid.match_indices(e), &truth, "event {} before its moves", round);
            for &(f, a) in &moves[round] {
                let u = AreaUpdate { filter: FilterId(f as u32), area: a };
                model.apply(&u).unwrap();
                tree.move_area(&u).unwrap();
                grid.move_area(&u).unwrap();
            }
            // Every event again after the moves (all cores).
            let truth: Vec<Vec<u32>> = evs.iter().map(|e| tree.match_indices(e, &model)).collect();
            prop_assert_eq!(&grid.match_parallel(&evs), &truth, "after the moves of round {}", round);
        }
        prop_assert_eq!(grid.filters(), model.filter_count());
    }
}

/// Thousands of moves among a few cells' filters (every cell compacts many times), on
/// the keyword workload: answers stay the oracle's.
#[test]
fn keyword_workload_with_long_move_sequences_stays_exact() {
    let w = KeywordWorkload::new(
        KeywordParams {
            subscriptions: 3000,
            events: 300,
            area_percent: 1.0,
            vocabulary: 50,
            ..KeywordParams::default()
        },
        5,
    );
    let mut subs = w.subscriptions();
    let events = w.events();
    let mut tree = RTreeMatcher::build(&subs);
    let mut grid = GridIndex::build(&subs).unwrap();
    let mut matched = 0;
    for round in 0..6u32 {
        let truth: Vec<Vec<u32>> = events
            .iter()
            .map(|e| tree.match_indices(e, &subs))
            .collect();
        assert_eq!(grid.match_parallel(&events), truth, "round {round}");
        matched += truth.iter().map(Vec::len).sum::<usize>();
        // Half the filters move: most into a corner of the world, some far outside.
        for i in 0..1500u32 {
            let f = (i * 7 + round * 13) % 3000;
            let (x, y) = if i % 10 == 0 {
                (-5e4 - f as f64, 2e4)
            } else {
                ((f % 40) as f64 * 5.0, (f / 40 % 40) as f64 * 5.0)
            };
            let u = AreaUpdate {
                filter: FilterId(f),
                area: subs
                    .filter(FilterId(f))
                    .unwrap()
                    .area
                    .moved_to(Location::new(x, y).unwrap()),
            };
            subs.apply(&u).unwrap();
            tree.move_area(&u).unwrap();
            grid.move_area(&u).unwrap();
        }
    }
    assert!(matched > 1000, "the workload matches ({matched})");
}

#[test]
fn a_table1_workload_matches_the_oracle() {
    use clcb::workload::{Params, Spatial, Workload};
    for spatial in [Spatial::Uniform, Spatial::Zipf { s: 1.0 }] {
        let w = Workload::new(
            Params {
                subscriptions: 2000,
                events: 400,
                names: 20,
                area_percent: 1.0,
                selectivity_percent: 20.0,
                spatial,
                ..Params::default()
            },
            8,
        );
        let subs = w.subscriptions();
        let events = w.events();
        let grid = GridIndex::build(&subs).unwrap();
        let tree = RTreeMatcher::build(&subs);
        let got = grid.match_parallel(&events);
        let want: Vec<Vec<u32>> = events
            .iter()
            .map(|e| tree.match_indices(e, &subs))
            .collect();
        assert_eq!(got, want);
        assert!(want.iter().any(|a| !a.is_empty()));
    }
}
