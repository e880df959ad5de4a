//! Property tests: the cell index on the emulator (`clcb::cells`) gives the answers of
//! the R*-tree with the content check and of the CPU grid index
//! (`baselines::grid_index`) on random workloads, with area moves between the batches:
//! hand-made workloads whose small pools of names and values make string-equality keys,
//! pair keys, hash groups shared by several filters, filters without constraints,
//! borders, zero radii, rectangles (degenerate, huge, far away) and locations far outside
//! the grid frequent; the paper's
//! generator (uniform and Zipf space); and the keyword workload.
//!
//! Small inputs (a batch is a few warps per event on the emulator).

use baselines::grid_index::GridIndex;
use baselines::rtree::RTreeMatcher;
use ccm::model::{Attribute, Constraint, Op, Value};
use clcb::cells::{CellIndex, CellOptions};
use clcb::keywords::{KeywordParams, KeywordWorkload};
use clcb::model::{
    Area, AreaUpdate, Event, Filter, FilterId, Location, Subscription, SubscriptionId,
    Subscriptions,
};
use clcb::workload::{Params, Spatial, Workload};
use gpu_kernels::Device;
use proptest::prelude::*;

const NAMES: [&str; 6] = ["a", "b", "c", "d", "e", "zz"];
const WORDS: [&str; 5] = ["", "a", "ab", "rain", "sun"];

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => prop::sample::select(WORDS.to_vec()).prop_map(|s| Value::Str(s.to_string())),
        1 => (-2i64..3).prop_map(Value::Int),
        1 => prop::sample::select(vec![-1.5, 0.0, 2.0]).prop_map(Value::Float),
    ]
}

fn constraint() -> impl Strategy<Value = Constraint> {
    (prop::sample::select(&NAMES[..5]), 0usize..12, value()).prop_map(|(name, op, v)| {
        let ops: &[Op] = if matches!(v, Value::Str(_)) {
            // Mostly equalities: they make the `name = value` keys.
            &[Op::Eq, Op::Eq, Op::Eq, Op::Ne, Op::Prefix, Op::Substr]
        } else {
            &[Op::Eq, Op::Ne, Op::Lt, Op::Ge]
        };
        Constraint::new(name, ops[op % ops.len()], v).expect("operator chosen for the type")
    })
}

/// Coordinates on a coarse grid (borders hit exactly) and a few far outside it.
fn coord() -> impl Strategy<Value = f64> {
    prop_oneof![
        8 => (-6i32..7).prop_map(|i| i as f64 * 0.5),
        1 => Just(0.3),
        1 => prop::sample::select(vec![-4e4, 1e5]),
    ]
}

/// Circles and rectangles (zero width or height, thin, square; huge; far outside).
fn area() -> impl Strategy<Value = Area> {
    let circle = (
        coord(),
        coord(),
        prop::sample::select(vec![0.0, 0.25, 0.5, 1.0, 1.5, 4.0]),
    )
        .prop_map(|(x, y, r)| Area::circle(x, y, r).expect("finite, non-negative"));
    let side = prop::sample::select(vec![0.0, 0.5, 1.0, 2.5, 6.0]);
    let rect = prop_oneof![
        6 => (coord(), coord(), side.clone(), side)
            .prop_map(|(x, y, w, h)| Area::rect(x, y, x + w, y + h).expect("ordered")),
        1 => Just(Area::rect(-1e30, -1e30, 1e30, 1e30).expect("finite")),
        1 => Just(Area::rect(1e5, 1e5, 1e5 + 0.5, 1e5).expect("ordered")),
    ];
    prop_oneof![circle, rect]
}

fn subscriptions() -> impl Strategy<Value = Subscriptions> {
    let filter = (prop::collection::vec(constraint(), 0..4), area())
        .prop_map(|(c, a)| Filter::new(c, a).expect("valid"));
    prop::collection::vec((0u32..60, prop::collection::vec(filter, 1..4)), 1..24).prop_map(|v| {
        Subscriptions::new(v.into_iter().map(|(id, filters)| Subscription {
            id: SubscriptionId(id * 2),
            filters,
        }))
    })
}

fn event() -> impl Strategy<Value = Event> {
    (
        (coord(), coord()),
        prop::sample::subsequence(NAMES.to_vec(), 0..=6),
        prop::collection::vec(value(), 6),
    )
        .prop_map(|((x, y), names, values)| {
            let attrs = names.into_iter().zip(values).map(|(n, v)| Attribute {
                name: n.to_string(),
                value: v,
            });
            Event {
                loc: Location::new(x, y).expect("finite"),
                content: ccm::model::Event::new(attrs.collect()).expect("distinct names"),
            }
        })
}

/// Matches `events` on the cell index and checks the answers against the R*-tree and
/// the CPU grid index, both kept at the same areas.
fn agree(
    index: &mut CellIndex,
    rtree: &RTreeMatcher,
    grid: &GridIndex,
    subs: &Subscriptions,
    events: &[Event],
) -> Result<(), TestCaseError> {
    let got = index.match_batch(events).expect("the emulator matches");
    prop_assert_eq!(got.len(), events.len());
    for (e, g) in events.iter().zip(&got) {
        let want = rtree.match_indices(e, subs);
        prop_assert_eq!(g, &want, "event {:?}", e);
        prop_assert_eq!(&grid.match_indices(e), &want);
    }
    Ok(())
}

/// Moves each update in the cell index, the R*-tree, the grid index and the model.
fn move_all(
    index: &mut CellIndex,
    rtree: &mut RTreeMatcher,
    grid: &mut GridIndex,
    subs: &mut Subscriptions,
    ups: &[AreaUpdate],
) {
    for u in ups {
        index.move_area(u).expect("a filter of the set");
        rtree.move_area(u).expect("a filter of the set");
        grid.move_area(u).expect("a filter of the set");
        subs.apply(u).expect("a filter of the set");
    }
}

/// Builds the three matchers of `subs`, checks `rounds` batches of events with area
/// moves before each batch but the first; the cell index in launches of at most
/// `batch_events` events (a call's launches double from an eighth of that, so that a
/// batch spans launches of several sizes and both launch slots), its counts handed
/// over and its starts and lengths written either way.
fn scenario(
    mut subs: Subscriptions,
    rounds: &[(Vec<AreaUpdate>, Vec<Event>)],
    batch_events: usize,
) -> Result<(), TestCaseError> {
    let dev = Device::emulator();
    // Odd launch sizes keep full launches to the end, even ones taper.
    let opts = CellOptions {
        batch_events,
        taper: batch_events.is_multiple_of(2),
    };
    let mut index = CellIndex::new(dev, &subs, opts).expect("a valid set");
    // Launches of 5 or 16 hand their counts over with a launch of `cells_counts` of
    // their own, the others from the last block of `cells_match`; launches of 1 or 16
    // have each warp write its event's start and length, the others each block its
    // events'.
    index.set_counts_launch(matches!(batch_events, 5 | 16));
    index.set_block_writes(!matches!(batch_events, 1 | 16));
    let mut rtree = RTreeMatcher::build(&subs);
    let mut grid = GridIndex::build(&subs).expect("a valid set");
    for (ups, events) in rounds {
        move_all(&mut index, &mut rtree, &mut grid, &mut subs, ups);
        agree(&mut index, &rtree, &grid, &subs, events)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Hand-made workloads: keys of every kind, collisions of groups, empty filters,
    /// borders, locations far outside the grid, moves anywhere (several per filter, so
    /// that overflows fill and cells are laid out again).
    #[test]
    fn cells_agree_with_the_rtree_and_the_grid_index_with_moves(
        subs in subscriptions(),
        rounds in prop::collection::vec(
            (prop::collection::vec((any::<usize>(), area()), 0..40),
             prop::collection::vec(event(), 1..24)),
            1..4,
        ),
        batch_events in prop::sample::select(vec![1usize, 5, 16, 64]),
    ) {
        let n = subs.filter_count();
        let rounds: Vec<(Vec<AreaUpdate>, Vec<Event>)> = rounds
            .into_iter()
            .map(|(moves, events)| {
                let ups = moves
                    .into_iter()
                    .map(|(i, area)| AreaUpdate { filter: FilterId((i % n) as u32), area })
                    .collect();
                (ups, events)
            })
            .collect();
        scenario(subs, &rounds, batch_events)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// The paper's generator, uniform and Zipf space, with its own area updates.
    #[test]
    fn cells_agree_on_the_papers_workloads(
        seed in 0u64..1000,
        zipf in any::<bool>(),
        area_percent in prop::sample::select(vec![0.5, 5.0, 30.0]),
        batch_events in prop::sample::select(vec![1usize, 5, 16, 64]),
    ) {
        let params = Params {
            events: 40,
            subscriptions: 60,
            filters_per_subscription: 3,
            names: 12,
            area_percent,
            selectivity_percent: 50.0,
            spatial: if zipf { Spatial::Zipf { s: 1.0 } } else { Spatial::Uniform },
            ..Params::default()
        };
        let w = Workload::new(params, seed);
        let subs = w.subscriptions();
        let events = w.events();
        let ups = w.updates(120, subs.filter_count());
        scenario(subs, &[(Vec::new(), events.clone()), (ups, events)], batch_events)?;
    }

    /// The keyword workload (keywords as string equalities: `name = value` keys).
    #[test]
    fn cells_agree_on_the_keyword_workload(
        seed in 0u64..1000,
        area_percent in prop::sample::select(vec![1.0, 10.0]),
    ) {
        let w = KeywordWorkload::new(
            KeywordParams {
                subscriptions: 150,
                events: 40,
                area_percent,
                vocabulary: 30,
                ..KeywordParams::default()
            },
            seed,
        );
        let subs = w.subscriptions();
        let events = w.events();
        let n = subs.filter_count() as u32;
        let ups: Vec<AreaUpdate> = (0..60u32)
            .map(|i| AreaUpdate {
                filter: FilterId(i * 7 % n),
                area: Area::circle(f64::from(i) * 150.0, f64::from(i % 7) * 1200.0, 800.0)
                    .expect("finite"),
            })
            .collect();
        scenario(subs, &[(Vec::new(), events.clone()), (ups, events)], 16)?;
    }
}

/// Cells laid out again past their room, then the whole index once the tables' spare
/// room is spent: every filter moves many times into a few cells.
#[test]
fn crowded_moves_relayout_the_whole_index_and_stay_exact() {
    let eq = |v: &str| Constraint::new("k", Op::Eq, Value::Str(v.into())).expect("valid");
    let subs = Subscriptions::new((0..50u32).map(|i| Subscription {
        id: SubscriptionId(i),
        filters: vec![Filter::new(
            vec![eq(["x", "y", "z"][i as usize % 3])],
            Area::circle(f64::from(i % 10) * 10.0, f64::from(i / 10) * 10.0, 2.0).expect("finite"),
        )
        .expect("valid")],
    }));
    let events: Vec<Event> = (0..30)
        .map(|j| Event {
            loc: Location::new(f64::from(j % 5) * 0.7, f64::from(j / 5) * 0.5).expect("finite"),
            content: ccm::model::Event::from_pairs([(
                "k",
                Value::Str(["x", "y", "z"][j as usize % 3].into()),
            )])
            .expect("one name"),
        })
        .collect();
    let rounds: Vec<(Vec<AreaUpdate>, Vec<Event>)> = (0..6u32)
        .map(|r| {
            let ups = (0..50u32)
                .map(|i| AreaUpdate {
                    filter: FilterId(i),
                    area: Area::circle(f64::from((i + r) % 4) * 0.5, f64::from(r % 3) * 0.5, 1.5)
                        .expect("finite"),
                })
                .collect();
            (ups, events.clone())
        })
        .collect();
    scenario(subs, &rounds, 5).expect("the cell index agrees");
}

/// An index of circles only (each entry tested as a circle, without looking at its
/// form) that a move gives its first rectangle, then its first thin one: from then on
/// every entry is tested by its own form.
#[test]
fn a_circles_only_index_tests_rectangles_once_a_move_makes_one() {
    let subs = Subscriptions::new((0..20u32).map(|i| Subscription {
        id: SubscriptionId(i),
        filters: vec![Filter::new(
            vec![],
            Area::circle(f64::from(i % 5) * 10.0, f64::from(i / 5) * 10.0, 3.0).expect("finite"),
        )
        .expect("valid")],
    }));
    // Points inside the rectangles and not in their enclosing circles' reach of the
    // circles' test on a rectangle's words (corners of a wide, flat rectangle).
    let events: Vec<Event> = [
        (0.0, 0.0),
        (39.5, 0.25),
        (-0.5, -0.25),
        (20.0, 20.0),
        (7.0, 31.0),
    ]
    .iter()
    .map(|&(x, y)| Event {
        loc: Location::new(x, y).expect("finite"),
        ..Event::default()
    })
    .collect();
    let rect = |f: u32, x0, y0, x1, y1| AreaUpdate {
        filter: FilterId(f),
        area: Area::rect(x0, y0, x1, y1).expect("ordered"),
    };
    let rounds = vec![
        (vec![], events.clone()),
        (vec![rect(3, -0.5, -0.25, 39.5, 0.25)], events.clone()),
        (vec![rect(17, 7.0, 2.0, 7.0, 31.0)], events),
    ];
    scenario(subs, &rounds, 4).expect("the cell index agrees");
}

/// Cells whose directories hold thousands of keys (a key's group found by the fences
/// across the warp, then a search of one stretch between them: strides of 1 to over
/// 32 slots as the keys grow, so that the stretch is searched by its slots alone (up
/// to 4), by quarters (up to 16), and by halving first), and events of up to 60
/// attributes: past the 32 a warp stages at once, past the attributes whose key flags
/// the staging keeps in a word, and past the words a warp stages in shared memory. Every filter around one point, keyed by
/// its own `name = value`, by a pair of names, or by nothing.
#[test]
fn large_directories_and_long_events_agree() {
    let names: Vec<String> = (0..60).map(|i| format!("n{i:02}")).collect();
    let rng = std::cell::Cell::new(0x9E37_79B9_7F4A_7C15u64);
    let next = |m: u64| {
        let mut r = rng.get();
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        rng.set(r);
        r % m
    };
    let point = |d: u64| 50.0 + d as f64 * 0.01;
    for filters in [20u64, 40, 300, 700, 2500] {
        let subs = Subscriptions::new((0..filters as u32).map(|i| {
            let name = &names[i as usize % 60];
            let cons = match i % 7 {
                // A pair of names (no string equality): keyed by the pair.
                0 => vec![
                    Constraint::new(name, Op::Gt, Value::Int(next(50) as i64)).expect("valid"),
                    Constraint::new(&names[(i as usize + 7) % 60], Op::Lt, Value::Int(60))
                        .expect("valid"),
                ],
                1 if i % 3 == 0 => vec![],
                _ => vec![
                    Constraint::new(name, Op::Eq, Value::Str(format!("v{}", i / 60)))
                        .expect("valid"),
                ],
            };
            let area = Area::circle(point(next(100)), point(next(100)), 3.0).expect("finite");
            Subscription {
                id: SubscriptionId(i),
                filters: vec![Filter::new(cons, area).expect("valid")],
            }
        }));
        let events: Vec<Event> = (0..150)
            .map(|j| {
                let len = [0, 1, 5, 6, 15, 16, 17, 40, 44, 45, 46, 60][j % 12];
                let start = next(60) as usize;
                let pairs = (0..len).map(|k| {
                    let name = names[(start + k) % 60].clone();
                    let value = if next(3) == 0 {
                        Value::Int(next(80) as i64)
                    } else {
                        Value::Str(format!("v{}", next(filters.div_ceil(60) + 2)))
                    };
                    (name, value)
                });
                Event {
                    loc: Location::new(point(next(100)), point(next(100))).expect("finite"),
                    content: ccm::model::Event::from_pairs(pairs).expect("distinct names"),
                }
            })
            .collect();
        let rtree = RTreeMatcher::build(&subs);
        let matched: usize = events
            .iter()
            .map(|e| rtree.match_indices(e, &subs).len())
            .sum();
        assert!(matched > 0, "{filters} filters: some event matches");
        scenario(subs, &[(Vec::new(), events)], 3).expect("the cell index agrees");
    }
}
