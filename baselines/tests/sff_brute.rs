//! The SFF-like matcher against a trivial brute force (every constraint of every filter
//! checked directly), on random inputs with the typing edge cases: empty strings,
//! prefix / suffix / substring equal to the whole value or longer than it, repeated
//! substrings, int/float comparisons at 2^53 and at the i64 ends, -0.0, infinities,
//! type mismatches and absent attributes.

use baselines::sff::Sff;
use baselines::Matcher;
use ccm::model::{Attribute, Constraint, Event, Filter, InterfaceId, Op, Subscription, Value};
use proptest::prelude::*;

mod common;
use common::brute;

const NAMES: &[&str] = &["a", "b", ""];
const STRS: &[&str] = &["", "a", "ab", "aba", "abab", "b", "ba", "é", "aé"];

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-2i64..3).prop_map(Value::Int),
        (-2i64..3).prop_map(|i| Value::Float(i as f64 + 0.5)),
        prop::sample::select(vec![i64::MIN, i64::MAX, 1 << 53, (1 << 53) + 1]).prop_map(Value::Int),
        prop::sample::select(vec![
            -0.0,
            9007199254740992.0,
            9_223_372_036_854_775_808.0,
            f64::INFINITY,
            f64::NEG_INFINITY
        ])
        .prop_map(Value::Float),
        prop::sample::select(STRS.to_vec()).prop_map(|s| Value::Str(s.to_string())),
    ]
}

fn constraint() -> impl Strategy<Value = Constraint> {
    (
        prop::sample::select(NAMES.to_vec()),
        any::<prop::sample::Index>(),
        value(),
    )
        .prop_map(|(n, i, v)| {
            let ops: Vec<Op> = Op::ALL
                .into_iter()
                .filter(|o| {
                    if v.is_number() {
                        o.on_numbers()
                    } else {
                        o.on_strings()
                    }
                })
                .collect();
            Constraint::new(n, *i.get(&ops), v).unwrap()
        })
}

fn event() -> impl Strategy<Value = Event> {
    prop::collection::vec((prop::sample::select(NAMES.to_vec()), value()), 0..4).prop_map(|pairs| {
        let mut attrs: Vec<Attribute> = Vec::new();
        for (n, v) in pairs {
            if !attrs.iter().any(|a| a.name == n) {
                attrs.push(Attribute {
                    name: n.to_string(),
                    value: v,
                });
            }
        }
        Event::new(attrs).unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn sff_equals_brute_force_on_random_inputs(
        subs in prop::collection::vec(
            (0u32..5, prop::collection::vec(constraint(), 1..4))
                .prop_map(|(i, cs)| Subscription { interface: InterfaceId(i), filter: Filter::new(cs).unwrap() }),
            0..30),
        events in prop::collection::vec(event(), 1..8),
    ) {
        let sff = Sff::build(&subs).unwrap();
        let mut scratch = sff.scratch();
        for e in &events {
            let want = brute(&subs, e);
            prop_assert_eq!(sff.match_event_with(e, &mut scratch), want.clone(), "event {:?}", e);
        }
        let want: Vec<_> = events.iter().map(|e| brute(&subs, e)).collect();
        prop_assert_eq!(sff.match_parallel(&events), want);
    }
}

#[test]
fn substring_occurring_twice_counts_once() {
    let subs = vec![Subscription {
        interface: InterfaceId(1),
        filter: Filter::new(vec![
            Constraint::new("s", Op::Substr, Value::Str("ab".into())).unwrap(),
            Constraint::new("t", Op::Eq, Value::Int(0)).unwrap(),
        ])
        .unwrap(),
    }];
    let sff = Sff::build(&subs).unwrap();
    let e = Event::from_pairs([("s", Value::Str("abab".into()))]).unwrap();
    assert!(
        sff.match_event(&e).is_empty(),
        "two occurrences must not stand in for the absent t"
    );
}

#[test]
fn empty_filter_is_refused() {
    let subs = vec![Subscription {
        interface: InterfaceId(0),
        filter: Filter {
            constraints: vec![],
        },
    }];
    assert!(Sff::build(&subs).is_err());
}
