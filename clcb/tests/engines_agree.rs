//! Property tests: the CLCB kernels on the emulator (`emu`, per event and batched), the
//! SFF-with-location baseline, the R*-tree baseline and a brute-force oracle give the
//! same subscriptions for random workloads, with area updates between events; and every
//! engine that reads a flat batch of events answers it as the oracle answers its heap
//! events.
//!
//! Workloads are small (a few blocks of 256 lanes, every lane run by the emulator) and
//! built from small pools of values so that the edges occur often: events on
//! the border of an area, zero radii, rectangles (degenerate, huge, far away), empty strings, integers against floats (2^53 and
//! 2^53 + 1), filters without content constraints, two constraints on one name, names
//! unknown to every filter, more than four events (the `FCount` byte runs wrap).

use baselines::grid_index::GridIndex;
use baselines::rtree::RTreeMatcher;
use baselines::sff_location::SffLocation;
use ccm::batch::ValueRef;
use ccm::model::{Attribute, Constraint, Op, Value};
use clcb::batch::EventBatch;
use clcb::cells::{CellIndex, CellOptions};
use clcb::model::{
    Area, AreaUpdate, Event, Filter, FilterId, Location, Subscription, SubscriptionId,
    Subscriptions,
};
use clcb::{Engine, Options};
use gpu_kernels::Device;
use proptest::prelude::*;

const NAMES: [&str; 5] = ["a", "b", "c", "d", "zz"];

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-3i64..4).prop_map(Value::Int),
        Just(Value::Int(9_007_199_254_740_993)),
        prop::sample::select(vec![-1.5, 0.0, 2.0, 2.5, 9_007_199_254_740_992.0])
            .prop_map(Value::Float),
        prop::sample::select(vec!["", "a", "ab", "ba", "abc", "b"])
            .prop_map(|s| Value::Str(s.to_string())),
    ]
}

fn constraint() -> impl Strategy<Value = Constraint> {
    (prop::sample::select(&NAMES[..4]), 0usize..9, value()).prop_map(|(name, op, v)| {
        let ops: &[Op] = if matches!(v, Value::Str(_)) {
            &[Op::Eq, Op::Ne, Op::Prefix, Op::Suffix, Op::Substr]
        } else {
            &[Op::Eq, Op::Ne, Op::Lt, Op::Gt, Op::Le, Op::Ge]
        };
        Constraint::new(name, ops[op % ops.len()], v).expect("operator chosen for the type")
    })
}

/// Coordinates on a coarse grid (so that borders are hit exactly) plus a few odd ones.
fn coord() -> impl Strategy<Value = f64> {
    prop_oneof![
        (-4i32..5).prop_map(|i| i as f64 * 0.5),
        Just(0.3),
        Just(-1.7),
        Just(1e4)
    ]
}

/// Circles and rectangles (zero width or height, thin, square, huge, far away).
fn area() -> impl Strategy<Value = Area> {
    let circle = (
        coord(),
        coord(),
        prop::sample::select(vec![0.0, 0.5, 1.0, 1.5, 2.5, 100.0]),
    )
        .prop_map(|(x, y, r)| Area::circle(x, y, r).expect("finite, non-negative"));
    let side = prop::sample::select(vec![0.0, 0.5, 1.0, 3.0, 100.0]);
    let rect = prop_oneof![
        6 => (coord(), coord(), side.clone(), side)
            .prop_map(|(x, y, w, h)| Area::rect(x, y, x + w, y + h).expect("ordered")),
        1 => Just(Area::rect(-1e30, -1e30, 1e30, 1e30).expect("finite")),
        1 => Just(Area::rect(-2e4, 5e3, -2e4, 5e3).expect("a point")),
    ];
    prop_oneof![2 => circle, 1 => rect]
}

fn location() -> impl Strategy<Value = Location> {
    (coord(), coord()).prop_map(|(x, y)| Location::new(x, y).expect("finite"))
}

fn filter() -> impl Strategy<Value = Filter> {
    (prop::collection::vec(constraint(), 0..4), area())
        .prop_map(|(c, a)| Filter::new(c, a).expect("valid"))
}

fn subscriptions() -> impl Strategy<Value = Subscriptions> {
    prop::collection::vec((0u32..40, prop::collection::vec(filter(), 1..5)), 1..14).prop_map(|v| {
        Subscriptions::new(v.into_iter().map(|(id, filters)| Subscription {
            id: SubscriptionId(id * 3),
            filters,
        }))
    })
}

fn event() -> impl Strategy<Value = Event> {
    (
        location(),
        prop::sample::subsequence(NAMES.to_vec(), 0..=5),
        prop::collection::vec(value(), 5),
    )
        .prop_map(|(loc, names, values)| {
            let attrs = names.into_iter().zip(values).map(|(n, v)| Attribute {
                name: n.to_string(),
                value: v,
            });
            Event {
                loc,
                content: ccm::model::Event::new(attrs.collect()).expect("distinct names"),
            }
        })
}

/// A step of a scenario: match an event, or move filter `i % filters` to an area.
#[derive(Clone, Debug)]
enum Step {
    Match(Event),
    Move(usize, Area),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![3 => event().prop_map(Step::Match), 1 => (any::<usize>(), area()).prop_map(|(i, a)| Step::Move(i, a))],
        1..12,
    )
}

/// The definition, spelled out: some filter of the subscription has the event in its
/// area and every one of its constraints satisfied by an attribute of the event.
fn brute_force(subs: &Subscriptions, e: &Event) -> Vec<u32> {
    (0..subs.len() as u32)
        .filter(|&i| {
            subs.as_slice()[i as usize].filters.iter().any(|f| {
                f.area.contains(e.loc)
                    && f.constraints.iter().all(|c| baselines::rtree::holds(c, e))
            })
        })
        .collect()
}

fn run_scenario(subs: Subscriptions, steps: Vec<Step>, opts: Options) -> Result<(), TestCaseError> {
    let mut model = subs.clone();
    let mut emu = Engine::new(Device::emulator(), &subs, opts).expect("engine");
    let mut batched = Engine::new(Device::emulator(), &subs, opts).expect("engine");
    let mut grid =
        Engine::new(Device::emulator(), &subs, Options { grid: true, ..opts }).expect("engine");
    // Beyond the paper: the low-latency path, over every filter and over the grid.
    let mut latency = Engine::new(Device::emulator(), &subs, opts).expect("engine");
    latency.set_low_latency(true).expect("low latency");
    let mut grid_latency =
        Engine::new(Device::emulator(), &subs, Options { grid: true, ..opts }).expect("engine");
    grid_latency.set_low_latency(true).expect("low latency");
    let mut rtree = RTreeMatcher::build(&subs);
    let mut sff_model = subs.clone();
    let mut sff = SffLocation::build(&sff_model);
    let mut pending: Vec<Event> = Vec::new();
    let mut pending_truth: Vec<Vec<u32>> = Vec::new();
    for (n, step) in steps.into_iter().enumerate() {
        match step {
            Step::Match(e) => {
                let truth = brute_force(&model, &e);
                let got = emu.match_indices(&e, None).expect("emu");
                prop_assert_eq!(&got, &truth, "emu, step {}", n);
                prop_assert_eq!(
                    &grid.match_indices(&e, None).expect("grid"),
                    &truth,
                    "grid, step {}",
                    n
                );
                prop_assert_eq!(
                    &latency.match_indices(&e, None).expect("latency"),
                    &truth,
                    "latency, step {}",
                    n
                );
                prop_assert_eq!(
                    &grid_latency.match_indices(&e, None).expect("grid latency"),
                    &truth,
                    "grid latency, step {}",
                    n
                );
                prop_assert_eq!(
                    &rtree.match_indices(&e, &model),
                    &truth,
                    "rtree, step {}",
                    n
                );
                prop_assert_eq!(&sff.match_indices(&e), &truth, "sff, step {}", n);
                let ids: Vec<SubscriptionId> =
                    truth.iter().map(|&i| model.id(i as usize)).collect();
                prop_assert_eq!(emu.match_event(&e).expect("emu"), ids);
                pending.push(e);
                pending_truth.push(truth);
            }
            Step::Move(i, area) => {
                // The batched engine matches the events queued before the move first.
                prop_assert_eq!(
                    &batched.match_batch(&pending).expect("batch"),
                    &pending_truth,
                    "batch, step {}",
                    n
                );
                prop_assert_eq!(
                    &grid.match_batch(&pending).expect("grid batch"),
                    &pending_truth,
                    "grid batch, step {}",
                    n
                );
                pending.clear();
                pending_truth.clear();
                let u = AreaUpdate {
                    filter: FilterId((i % model.filter_count()) as u32),
                    area,
                };
                model.apply(&u).expect("filter exists");
                if i % 2 == 0 {
                    emu.move_area(&u).expect("emu move");
                } else {
                    emu.move_area_by_copies(&u).expect("emu move");
                }
                batched.move_areas(&[u]).expect("batched move");
                grid.move_area(&u).expect("grid move");
                if i % 2 == 0 {
                    latency.move_area(&u).expect("latency move");
                    grid_latency.move_area(&u).expect("grid latency move");
                } else {
                    latency.move_area_by_copies(&u).expect("latency move");
                    grid_latency.move_areas(&[u]).expect("grid latency move");
                }
                rtree.move_area(&u).expect("rtree move");
                sff.move_area(&u, &mut sff_model).expect("sff move");
            }
        }
    }
    prop_assert_eq!(
        &batched.match_batch(&pending).expect("batch"),
        &pending_truth,
        "batch at the end"
    );
    // The paper's tables of the low-latency engines, refreshed from their packed areas:
    // batched on one, the copying grid path after leaving low-latency mode on the other.
    prop_assert_eq!(
        &latency.match_batch(&pending).expect("batch"),
        &pending_truth,
        "latency engine batched at the end"
    );
    grid_latency
        .set_low_latency(false)
        .expect("leave low latency");
    for (e, truth) in pending.iter().zip(&pending_truth) {
        prop_assert_eq!(
            &grid_latency.match_indices(e, None).expect("grid"),
            truth,
            "grid after low latency"
        );
    }
    Ok(())
}

/// Every engine that reads a flat batch ([`EventBatch`]) answers it as the definition
/// answers its heap events: the engine's batched and grid-batched paths, the cell
/// index, and the CPU grid index on one core and on all cores. The batch is built by
/// the push API with names and strings in its dictionaries that no event carries (one
/// event abandoned, one refused) and that no filter reads (`zz`, the strings of no
/// constraint), and again from the heap events.
fn batch_agrees(subs: &Subscriptions, events: &[Event]) -> Result<(), TestCaseError> {
    let mut b = EventBatch::new();
    b.push_named("never", ValueRef::Str("unseen"))
        .expect("a string");
    b.abandon_event();
    b.push_named("twice", ValueRef::Int(1)).expect("an integer");
    b.push_named("twice", ValueRef::Str("again"))
        .expect("a string");
    prop_assert!(b.end_event(Location::default()).is_err());
    for e in events {
        for a in e.attributes() {
            let id = b.intern_name(&a.name);
            b.push(id, ValueRef::from(&a.value)).expect("no NaN");
        }
        b.end_event(e.loc).expect("distinct names");
    }
    prop_assert_eq!(&b.to_events()[..], events);
    let want: Vec<Vec<u32>> = events.iter().map(|e| brute_force(subs, e)).collect();
    for batch in [b, EventBatch::from_events(events)] {
        for grid in [false, true] {
            let opts = Options {
                grid,
                batch: 3,
                ..Options::default()
            };
            let mut engine = Engine::new(Device::emulator(), subs, opts).expect("engine");
            let got = engine.match_event_batch(&batch).expect("batch");
            prop_assert_eq!(&got, &want, "engine, grid {}", grid);
        }
        let dev = Device::emulator();
        let opts = CellOptions {
            batch_events: 4,
            taper: true,
        };
        let mut cells = CellIndex::new(dev, subs, opts).expect("cell index");
        prop_assert_eq!(
            &cells.match_event_batch(&batch).expect("cells"),
            &want,
            "cells"
        );
        let cpu = GridIndex::build(subs).expect("grid index");
        prop_assert_eq!(&cpu.match_batch(&batch), &want, "grid index");
        prop_assert_eq!(
            &cpu.match_batch_parallel(&batch),
            &want,
            "grid index, all cores"
        );
        prop_assert_eq!(
            &cpu.match_parallel(events),
            &want,
            "grid index, heap events"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_flat_batch_gets_the_answers_of_its_heap_events_on_every_engine(
        subs in subscriptions(),
        events in prop::collection::vec(event(), 1..10),
    ) {
        batch_agrees(&subs, &events)?;
    }

    #[test]
    fn emu_sff_rtree_and_batched_agree_with_brute_force_across_area_updates(
        subs in subscriptions(),
        steps in steps(),
    ) {
        run_scenario(subs, steps, Options::default())?;
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn resetting_fcount_every_event_gives_the_same_answers(subs in subscriptions(), steps in steps()) {
        run_scenario(subs, steps, Options { fcount_runs: 1, read_prefix: 2, batch: 3, grid: false })?;
    }
}

#[test]
fn event_on_the_border_of_an_area_matches_and_one_ulp_outside_does_not() {
    let area = Area::circle(1.0, 1.0, 0.5).unwrap();
    let subs = Subscriptions::new([Subscription {
        id: SubscriptionId(4),
        filters: vec![Filter::new(
            vec![Constraint::new("a", Op::Ge, Value::Int(0)).unwrap()],
            area,
        )
        .unwrap()],
    }]);
    let mut engine = Engine::new(Device::emulator(), &subs, Options::default()).unwrap();
    let ev = |x: f32| Event {
        loc: Location { x, y: 1.0 },
        content: ccm::model::Event::from_pairs([("a", Value::Float(0.0))]).unwrap(),
    };
    assert_eq!(
        engine.match_event(&ev(1.5)).unwrap(),
        vec![SubscriptionId(4)]
    );
    assert_eq!(engine.match_event(&ev(1.5f32.next_up())).unwrap(), vec![]);
    assert_eq!(
        engine.match_event(&ev(0.5)).unwrap(),
        vec![SubscriptionId(4)]
    );
}

#[test]
fn many_matches_need_the_second_result_copy() {
    // 600 subscriptions (3 blocks of Zip) all matching, a result prefix of 16 ids.
    let area = Area::circle(0.0, 0.0, 10.0).unwrap();
    let subs = Subscriptions::new((0..600).map(|i| Subscription {
        id: SubscriptionId(1000 - i),
        filters: vec![Filter::new(vec![], area).unwrap()],
    }));
    let mut engine = Engine::new(
        Device::emulator(),
        &subs,
        Options {
            read_prefix: 16,
            ..Options::default()
        },
    )
    .unwrap();
    let e = Event {
        loc: Location { x: 1.0, y: 1.0 },
        content: Default::default(),
    };
    let got = engine.match_event(&e).unwrap();
    assert_eq!(got, (401..=1000).map(SubscriptionId).collect::<Vec<_>>());
    let far = Event {
        loc: Location { x: 11.0, y: 0.0 },
        content: Default::default(),
    };
    assert!(engine.match_event(&far).unwrap().is_empty());
}

#[test]
fn grid_mode_rebuilds_its_index_when_too_many_filters_leave_their_cells() {
    use clcb::workload::{Params, Workload};
    // 5000 filters: the outside list holds 4096, so moving all of them forces a rebuild.
    let w = Workload::new(
        Params {
            subscriptions: 500,
            events: 12,
            area_percent: 0.5,
            ..Params::default()
        },
        9,
    );
    let mut subs = w.subscriptions();
    let mut grid = Engine::new(
        Device::emulator(),
        &subs,
        Options {
            grid: true,
            ..Options::default()
        },
    )
    .unwrap();
    let rtree_truth = |subs: &Subscriptions, e: &Event| brute_force(subs, e);
    let events = w.events();
    for e in &events[..3] {
        assert_eq!(grid.match_indices(e, None).unwrap(), rtree_truth(&subs, e));
    }
    let moves = w.updates(20_000, subs.filter_count());
    for chunk in moves.chunks(2500) {
        for u in chunk {
            subs.apply(u).unwrap();
        }
        grid.move_areas(chunk).unwrap();
        for e in &events[3..6] {
            assert_eq!(grid.match_indices(e, None).unwrap(), rtree_truth(&subs, e));
        }
        let truth: Vec<Vec<u32>> = events.iter().map(|e| rtree_truth(&subs, e)).collect();
        assert_eq!(grid.match_batch(&events).unwrap(), truth);
    }
    // Events at the filters' own centres, so that the answers are not all empty.
    for (_, _, f) in subs.filters().step_by(700) {
        let e = Event {
            loc: Location::new(f.area.center().0, f.area.center().1).expect("finite"),
            content: events[0].content.clone(),
        };
        assert_eq!(
            grid.match_indices(&e, None).unwrap(),
            rtree_truth(&subs, &e)
        );
        assert_eq!(
            grid.match_batch(std::slice::from_ref(&e)).unwrap(),
            vec![rtree_truth(&subs, &e)]
        );
    }
}

#[test]
fn low_latency_path_lists_every_match_once_across_blocks_and_events() {
    use clcb::workload::{Params, Workload};
    // 600 subscriptions of two filters each, both around the origin (a subscription is
    // claimed by two filters, in different blocks), all matching, then none, then all.
    let area = Area::circle(0.0, 0.0, 10.0).unwrap();
    let subs = Subscriptions::new((0..600).map(|i| Subscription {
        id: SubscriptionId(1000 - i),
        filters: vec![Filter::new(vec![], area).unwrap(); 2],
    }));
    for grid in [false, true] {
        let mut engine = Engine::new(
            Device::emulator(),
            &subs,
            Options {
                grid,
                ..Options::default()
            },
        )
        .unwrap();
        engine.set_low_latency(true).unwrap();
        let near = Event {
            loc: Location { x: 1.0, y: 1.0 },
            content: Default::default(),
        };
        let far = Event {
            loc: Location { x: 11.0, y: 0.0 },
            content: Default::default(),
        };
        for _ in 0..3 {
            let got = engine.match_event(&near).unwrap();
            assert_eq!(got, (401..=1000).map(SubscriptionId).collect::<Vec<_>>());
            assert!(engine.match_event(&far).unwrap().is_empty());
        }
    }
    // A generated workload (strings, several names) at the filters' own centres.
    let w = Workload::new(
        Params {
            subscriptions: 300,
            events: 8,
            area_percent: 0.5,
            ..Params::default()
        },
        3,
    );
    let subs = w.subscriptions();
    let events = w.events();
    for grid in [false, true] {
        let mut engine = Engine::new(
            Device::emulator(),
            &subs,
            Options {
                grid,
                ..Options::default()
            },
        )
        .unwrap();
        engine.set_low_latency(true).unwrap();
        for (k, (_, _, f)) in subs.filters().step_by(97).enumerate() {
            let e = Event {
                loc: Location::new(f.area.center().0, f.area.center().1).expect("finite"),
                content: events[k % events.len()].content.clone(),
            };
            assert_eq!(
                engine.match_indices(&e, None).unwrap(),
                brute_force(&subs, &e)
            );
        }
    }
}
