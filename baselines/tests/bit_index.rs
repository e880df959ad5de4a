//! The bit index against the SFF-like matcher: on the dense (REIN / HEM) model with
//! uniform and Zipf-drawn event names, one and several interfaces per filter, several
//! cell settings (one cell per name up to many) and sizes across the 65,536-filter
//! segments; on random integer bounds of every indexed operator with integer, fractional,
//! huge and string event values; and that it refuses what it does not index.

use baselines::bit_index::{BitIndex, BitIndexError, Cells};
use baselines::sff::Sff;
use baselines::Matcher;
use ccm::model::{Constraint, Event, Filter, InterfaceId, Op, Subscription, Value};
use ccm::workload::{generate_dense, DenseParams, NameDist};
use proptest::prelude::*;

fn check_dense(p: &DenseParams, seed: u64, cells: Cells) {
    let w = generate_dense(p, seed).unwrap();
    let sff = Sff::build(&w.subscriptions).unwrap();
    let want = sff.match_parallel(&w.events);
    let ix = BitIndex::build_with(&w.subscriptions, cells).unwrap();
    let mut s = ix.scratch();
    for (e, want) in w.events.iter().zip(&want) {
        assert_eq!(&ix.match_event_with(e, &mut s), want, "{p:?} {cells:?}");
    }
    assert_eq!(ix.match_parallel(&w.events), want);
    // A batch of the events, read in place.
    assert_eq!(ix.match_batch(&w.batch), want);
    assert_eq!(ix.match_batch_parallel(&w.batch), want);
}

#[test]
fn equals_sff_on_dense_workloads() {
    for interfaces in [None, Some(7)] {
        for (names_per_event, event_names) in [
            ((3, 5), NameDist::Uniform),
            ((10, 10), NameDist::Uniform),
            ((20, 20), NameDist::Uniform),
            ((5, 10), NameDist::Zipf(1.0)),
        ] {
            let p = DenseParams {
                events: 40,
                filters: 2500,
                interfaces,
                names_per_event,
                event_names,
                ..DenseParams::default()
            };
            for cells in [
                Cells::default(),
                Cells {
                    max: 1,
                    min_bounds: 1,
                    ..Cells::default()
                },
                Cells {
                    max: 200,
                    min_bounds: 1,
                    bytes_per_bound: usize::MAX,
                },
                Cells {
                    bytes_per_bound: 1,
                    ..Cells::default()
                },
            ] {
                check_dense(&p, 3, cells);
            }
        }
    }
}

#[test]
fn equals_sff_across_segments_and_with_many_matches() {
    // More than two segments of filters, a last partial word; wide ranges and all names
    // in the event, so thousands of filters match.
    let p = DenseParams {
        events: 12,
        filters: 140_003,
        names_per_event: (20, 20),
        predicates_per_filter: (1, 2),
        max_width: 0.9,
        ..DenseParams::default()
    };
    let w = generate_dense(&p, 8).unwrap();
    let sff = Sff::build(&w.subscriptions).unwrap();
    let ix = BitIndex::build(&w.subscriptions).unwrap();
    let want = sff.match_parallel(&w.events);
    assert!(want.iter().all(|m| m.len() > 10_000), "dense answers");
    assert_eq!(ix.match_parallel(&w.events), want);
}

fn constraint() -> impl Strategy<Value = Constraint> {
    let op = prop::sample::select(vec![Op::Eq, Op::Lt, Op::Le, Op::Gt, Op::Ge]);
    let v = prop_oneof![
        (-3i64..4).prop_map(Value::Int),
        (-3i64..4).prop_map(|i| Value::Float(i as f64)),
        Just(Value::Int((1 << 61) - 1)),
        Just(Value::Int(-(1 << 61) + 1)),
    ];
    (0..3usize, op, v).prop_map(|(n, op, value)| Constraint {
        name: format!("a{n}"),
        op,
        value,
    })
}

fn event_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-4i64..5).prop_map(Value::Int),
        (-4i64..5).prop_map(|i| Value::Float(i as f64 + 0.5)),
        (-4i64..5).prop_map(|i| Value::Float(i as f64)),
        prop::sample::select(vec![i64::MIN, i64::MAX, 1 << 61, -(1 << 61)]).prop_map(Value::Int),
        prop::sample::select(vec![f64::INFINITY, f64::NEG_INFINITY, 1e300, -0.0])
            .prop_map(Value::Float),
        Just(Value::Str("x".into())),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Every indexed operator, several constraints on one name, interfaces with several
    /// filters given out of order, events with fractions, extremes, strings, absent names.
    #[test]
    fn equals_sff_on_random_integer_bounds(
        filters in prop::collection::vec(
            (0u32..6, prop::collection::vec(constraint(), 1..4)), 1..40),
        events in prop::collection::vec(
            prop::collection::vec(prop::option::of(event_value()), 3), 1..12),
        max in 1usize..6,
    ) {
        let subs: Vec<Subscription> = filters
            .into_iter()
            .map(|(i, c)| Subscription { interface: InterfaceId(i), filter: Filter { constraints: c } })
            .collect();
        let sff = Sff::build(&subs).unwrap();
        let cells = Cells { max, min_bounds: 1, bytes_per_bound: usize::MAX };
        let ix = BitIndex::build_with(&subs, cells).unwrap();
        for vals in events {
            let e = Event::from_pairs(
                vals.into_iter().enumerate().filter_map(|(n, v)| v.map(|v| (format!("a{n}"), v))),
            ).unwrap();
            prop_assert_eq!(ix.match_event(&e), sff.match_event(&e), "{:?}", e);
            let batch = ccm::batch::EventBatch::from_events(std::slice::from_ref(&e));
            prop_assert_eq!(ix.match_batch(&batch), vec![sff.match_event(&e)], "{:?}", e);
        }
    }
}

#[test]
fn refuses_what_it_does_not_index() {
    let sub = |op, value| Subscription {
        interface: InterfaceId(0),
        filter: Filter {
            constraints: vec![Constraint {
                name: "a".into(),
                op,
                value,
            }],
        },
    };
    for bad in [
        sub(Op::Ne, Value::Int(1)),
        sub(Op::Eq, Value::Str("s".into())),
        sub(Op::Prefix, Value::Str("s".into())),
        sub(Op::Lt, Value::Float(0.5)),
        sub(Op::Ge, Value::Int(1 << 62)),
    ] {
        assert!(
            matches!(
                BitIndex::build(std::slice::from_ref(&bad)),
                Err(BitIndexError::Unsupported { index: 0, .. })
            ),
            "{bad:?}"
        );
    }
    let empty = Subscription {
        interface: InterfaceId(0),
        filter: Filter {
            constraints: vec![],
        },
    };
    assert!(matches!(
        BitIndex::build(&[empty]),
        Err(BitIndexError::Model { index: 0, .. })
    ));
    // An empty index answers nothing.
    let ix = BitIndex::build(&[]).unwrap();
    assert!(ix
        .match_event(&Event::from_pairs([("a", Value::Int(1))]).unwrap())
        .is_empty());
}
