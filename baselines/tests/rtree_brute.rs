//! The R*-tree peer (location only and location + content) and the SFF-with-location
//! peer against a trivial brute force, on random filters and events, with area moves
//! in between. Edges: zero radii, events exactly on a circle's border, coordinates far
//! from the origin (f32 rounding of the bounding boxes), many identical circles,
//! filters without content, empty strings.

use baselines::rtree::{holds, RTreeMatcher};
use baselines::sff_location::{content_only, SffLocation};
use ccm::model::{Attribute, Constraint, Op, Value};
use clcb::batch::EventBatch;
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
        (-1000.0f64..1000.0),
        Just(123_456.75),
        Just(-98_765.5),
    ]
}

fn area() -> impl Strategy<Value = Area> {
    areas::area(
        coord().boxed(),
        prop_oneof![Just(0.0), Just(0.25), Just(1.0), 0.0f64..3.0, Just(1000.0)].boxed(),
    )
}

fn constraint() -> impl Strategy<Value = Constraint> {
    prop_oneof![
        (prop::sample::select(vec!["a", "b"]), 0usize..6, -2i64..3).prop_map(|(n, op, v)| {
            let ops = [Op::Eq, Op::Ne, Op::Lt, Op::Gt, Op::Le, Op::Ge];
            Constraint::new(n, ops[op], Value::Int(v)).unwrap()
        }),
        (
            prop::sample::select(vec!["a", "s"]),
            0usize..5,
            prop::sample::select(vec!["", "x", "xy", "yx"])
        )
            .prop_map(|(n, op, v)| {
                let ops = [Op::Eq, Op::Ne, Op::Prefix, Op::Suffix, Op::Substr];
                Constraint::new(n, ops[op], Value::Str(v.into())).unwrap()
            }),
    ]
}

fn subscriptions() -> impl Strategy<Value = Subscriptions> {
    let filter = (prop::collection::vec(constraint(), 0..3), area())
        .prop_map(|(c, a)| Filter::new(c, a).unwrap());
    prop::collection::vec(prop::collection::vec(filter, 1..4), 1..40).prop_map(|subs| {
        Subscriptions::new(
            subs.into_iter()
                .enumerate()
                .map(|(i, filters)| Subscription {
                    id: SubscriptionId(i as u32 * 7 + 1),
                    filters,
                }),
        )
    })
}

/// Events at arbitrary points and exactly on the borders of the filters' circles.
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
        prop::option::of(prop::sample::select(vec!["", "x", "xy", "yxy"])),
        prop::option::of(-2i64..3),
    );
    prop::collection::vec((loc, attrs), 1..12).prop_map(|v| {
        v.into_iter()
            .map(|(loc, (a, s, b))| {
                let mut attrs = Vec::new();
                if let Some(a) = a {
                    attrs.push(Attribute {
                        name: "a".into(),
                        value: Value::Int(a),
                    });
                }
                if let Some(s) = s {
                    attrs.push(Attribute {
                        name: "s".into(),
                        value: Value::Str(s.into()),
                    });
                }
                if let Some(b) = b {
                    attrs.push(Attribute {
                        name: "b".into(),
                        value: Value::Int(b),
                    });
                }
                Event {
                    loc,
                    content: ccm::model::Event::new(attrs).unwrap(),
                }
            })
            .collect()
    })
}

fn brute_location(subs: &Subscriptions, loc: Location) -> Vec<u32> {
    (0..subs.len() as u32)
        .filter(|&i| {
            subs.as_slice()[i as usize]
                .filters
                .iter()
                .any(|f| f.area.contains(loc))
        })
        .collect()
}

fn brute_match(subs: &Subscriptions, e: &Event) -> Vec<u32> {
    (0..subs.len() as u32)
        .filter(|&i| {
            subs.as_slice()[i as usize]
                .filters
                .iter()
                .any(|f| f.area.contains(e.loc) && f.constraints.iter().all(|c| holds(c, e)))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn rtree_and_sff_location_equal_brute_force_across_moves(
        (subs, evs, moves) in subscriptions().prop_flat_map(|s| {
            let n = s.filter_count();
            (Just(s.clone()), events(&s), prop::collection::vec((0..n, area()), 0..6))
        })
    ) {
        let mut model = subs.clone();
        let mut tree = RTreeMatcher::build(&subs);
        let mut sff_model = subs.clone();
        let mut sff = SffLocation::build(&sff_model);
        for (round, e) in evs.iter().enumerate() {
            prop_assert_eq!(tree.locate_indices(e.loc), brute_location(&model, e.loc), "location only, event {}", round);
            let truth = brute_match(&model, e);
            prop_assert_eq!(&tree.match_indices(e, &model), &truth, "rtree, event {}", round);
            prop_assert_eq!(&sff.match_indices(e), &truth, "sff, event {}", round);
            // The same event read in place from a flat batch, whose names are numbered in
            // its own order (a name no filter has interned first).
            let mut batch = EventBatch::new();
            batch.intern_name("a name no filter has");
            batch.push_event(e);
            let names = sff.batch_names(&batch);
            let mut scratch = sff.scratch();
            prop_assert_eq!(&sff.match_in_batch_with(&batch, &names, 0, &mut scratch), &truth, "sff on a batch, event {}", round);
            if let Some(&(f, a)) = moves.get(round) {
                let u = AreaUpdate { filter: FilterId(f as u32), area: a };
                model.apply(&u).unwrap();
                tree.move_area(&u).unwrap();
                sff.move_area(&u, &mut sff_model).unwrap();
            }
        }
        prop_assert_eq!(tree.filters(), model.filter_count());
    }
}

#[test]
fn identical_circles_all_report_and_moves_remove_exactly_one() {
    let a = Area::circle(5.0, 5.0, 1.0).unwrap();
    let subs = Subscriptions::new((0..50).map(|i| Subscription {
        id: SubscriptionId(i),
        filters: vec![Filter::new(vec![], a).unwrap()],
    }));
    let mut tree = RTreeMatcher::build(&subs);
    assert_eq!(tree.locate(Location { x: 6.0, y: 5.0 }).len(), 50);
    tree.move_area(&AreaUpdate {
        filter: FilterId(7),
        area: Area::circle(-5.0, 0.0, 1.0).unwrap(),
    })
    .unwrap();
    let here = tree.locate(Location { x: 6.0, y: 5.0 });
    assert_eq!(here.len(), 49);
    assert!(!here.contains(&SubscriptionId(7)));
    assert_eq!(
        tree.locate(Location { x: -5.0, y: 1.0 }),
        vec![SubscriptionId(7)]
    );
    assert!(tree
        .move_area(&AreaUpdate {
            filter: FilterId(50),
            area: a
        })
        .is_err());
}

#[test]
fn content_only_keeps_filters_with_constraints_under_their_subscription_id() {
    let a = Area::circle(0.0, 0.0, 1.0).unwrap();
    let c = Constraint::new("a", Op::Eq, Value::Int(1)).unwrap();
    let subs = Subscriptions::new([
        Subscription {
            id: SubscriptionId(3),
            filters: vec![Filter::new(vec![c.clone()], a).unwrap()],
        },
        Subscription {
            id: SubscriptionId(9),
            filters: vec![Filter::new(vec![], a).unwrap()],
        },
    ]);
    let ccm_subs = content_only(&subs);
    assert_eq!(ccm_subs.len(), 1);
    assert_eq!(ccm_subs[0].interface, ccm::model::InterfaceId(3));
    assert_eq!(ccm_subs[0].filter.constraints, vec![c]);
}
