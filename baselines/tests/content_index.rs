//! The CCM indexes (content, value, hybrid) against the SFF-like matcher and a trivial brute force
//! (every constraint of every filter checked directly) on random inputs with every
//! operator and type and the typing edge cases (empty strings, prefixes / suffixes /
//! substrings equal to or longer than the value, int/float comparisons at 2^53 and at
//! the i64 ends, -0.0, infinities, type mismatches, absent attributes), on few names
//! (many matches) and on more names than the index's 128-bit name signatures (signature
//! collisions), one event at a time and on 1 to 4 threads (each call reusing the
//! threads' scratch the call before kept); and on a Table 1 workload.
//! Each also reads the same events from a flat batch ([`ccm::batch::EventBatch`]) and
//! must give there exactly its answers on heap events: numbered apart from the indexes'
//! names, with names and strings no subscription uses, on Table 1's and the dense model.

use baselines::content_index::ContentIndex;
use baselines::hybrid_index::HybridIndex;
use baselines::sff::Sff;
use baselines::value_index::{Cuts, ValueIndex};
use baselines::Matcher;
use ccm::batch::{EventBatch, ValueRef};
use ccm::model::{Attribute, Constraint, Event, Filter, InterfaceId, Op, Subscription, Value};
use proptest::prelude::*;

mod common;
use common::brute;

const STRS: &[&str] = &["", "a", "ab", "aba", "abab", "b", "ba", "é", "aé"];

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-2i64..3).prop_map(Value::Int),
        (-2i64..3).prop_map(|i| Value::Float(i as f64)),
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

/// A constraint on one of `names` with an operator that applies to its value's type.
fn constraint(names: Vec<String>) -> impl Strategy<Value = Constraint> {
    (
        prop::sample::select(names),
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

fn subscriptions(
    names: Vec<String>,
    constraints: std::ops::Range<usize>,
    n: std::ops::Range<usize>,
) -> impl Strategy<Value = Vec<Subscription>> {
    prop::collection::vec(
        (
            0u32..6,
            prop::collection::vec(constraint(names), constraints),
        )
            .prop_map(|(i, cs)| Subscription {
                interface: InterfaceId(i),
                filter: Filter::new(cs).unwrap(),
            }),
        n,
    )
}

fn event(names: Vec<String>, attrs: std::ops::Range<usize>) -> impl Strategy<Value = Event> {
    prop::collection::vec((prop::sample::select(names), value()), attrs).prop_map(|pairs| {
        let mut attrs: Vec<Attribute> = Vec::new();
        for (n, v) in pairs {
            if !attrs.iter().any(|a| a.name == n) {
                attrs.push(Attribute { name: n, value: v });
            }
        }
        Event::new(attrs).unwrap()
    })
}

fn few_names() -> Vec<String> {
    ["a", "b", "c", ""].iter().map(|s| s.to_string()).collect()
}

/// More names than the 128 bits of a signature: filters on names that share a bit.
fn many_names() -> Vec<String> {
    (0..300).map(|i| format!("n{i}")).collect()
}

/// The same subscriptions, each its own interface (answers per subscription).
fn one_interface_each(subs: Vec<Subscription>) -> Vec<Subscription> {
    subs.into_iter()
        .enumerate()
        .map(|(i, s)| Subscription {
            interface: InterfaceId(1000 - i as u32),
            ..s
        })
        .collect()
}

/// The indexes (content, value with one cut per 1 and per 3 bounds, hybrid), SFF and
/// brute force agree on every event, one at a time and in parallel on 1 to 4 threads.
fn agree(subs: &[Subscription], events: &[Event]) -> Result<(), TestCaseError> {
    let ix = ContentIndex::build(subs).unwrap();
    let sff = Sff::build(subs).unwrap();
    let dense = ValueIndex::build_with(
        subs,
        Cuts {
            run: 1,
            max: 1000,
            budget: 1 << 20,
        },
    )
    .unwrap();
    let sparse = ValueIndex::build_with(
        subs,
        Cuts {
            run: 3,
            max: 2,
            budget: 1 << 20,
        },
    )
    .unwrap();
    let hybrid = HybridIndex::build(subs).unwrap();
    let mut scratch = ix.scratch();
    let (mut s1, mut s2, mut s3) = (dense.scratch(), sparse.scratch(), hybrid.scratch());
    let want: Vec<Vec<InterfaceId>> = events.iter().map(|e| brute(subs, e)).collect();
    for (e, w) in events.iter().zip(&want) {
        prop_assert_eq!(&sff.match_event(e), w, "sff, event {:?}", e);
        prop_assert_eq!(
            &ix.match_event_with(e, &mut scratch),
            w,
            "index, event {:?}",
            e
        );
        prop_assert_eq!(
            &dense.match_event_with(e, &mut s1),
            w,
            "value index (every cut), event {:?}",
            e
        );
        prop_assert_eq!(
            &sparse.match_event_with(e, &mut s2),
            w,
            "value index (2 cuts), event {:?}",
            e
        );
        prop_assert_eq!(
            &hybrid.match_event_with(e, &mut s3),
            w,
            "hybrid, event {:?}",
            e
        );
    }
    prop_assert_eq!(
        &dense.match_parallel(events),
        &want,
        "value index in parallel"
    );
    prop_assert_eq!(&hybrid.match_parallel(events), &want, "hybrid in parallel");
    for threads in 1..=4 {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        // Each call takes the scratch its matcher kept from the call before (on
        // another number of threads): reused, it must answer as a fresh one.
        prop_assert_eq!(
            &pool.install(|| ix.match_parallel(events)),
            &want,
            "{} threads",
            threads
        );
        prop_assert_eq!(
            &pool.install(|| dense.match_parallel(events)),
            &want,
            "value index, {} threads, kept scratch",
            threads
        );
        prop_assert_eq!(
            &pool.install(|| hybrid.match_parallel(events)),
            &want,
            "hybrid, {} threads, kept scratch",
            threads
        );
    }
    // The same events from a batch: its names numbered in the events' order (not the
    // indexes'), a name and a string no filter uses interned first.
    let mut batch = EventBatch::new();
    batch.push_named("unused", ValueRef::Str("never")).unwrap();
    batch.abandon_event();
    for e in events {
        batch.push_event(e);
    }
    prop_assert_eq!(&batch.to_events()[..], events);
    prop_assert_eq!(&sff.match_batch(&batch), &want, "sff on the batch");
    prop_assert_eq!(&ix.match_batch(&batch), &want, "index on the batch");
    prop_assert_eq!(
        &dense.match_batch(&batch),
        &want,
        "value index (every cut) on the batch"
    );
    prop_assert_eq!(
        &sparse.match_batch(&batch),
        &want,
        "value index (2 cuts) on the batch"
    );
    prop_assert_eq!(&hybrid.match_batch(&batch), &want, "hybrid on the batch");
    for threads in 1..=4 {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            prop_assert_eq!(
                &ix.match_batch_parallel(&batch),
                &want,
                "index, {} threads",
                threads
            );
            prop_assert_eq!(
                &dense.match_batch_parallel(&batch),
                &want,
                "value, {} threads",
                threads
            );
            prop_assert_eq!(
                &hybrid.match_batch_parallel(&batch),
                &want,
                "hybrid, {} threads",
                threads
            );
            // Into answers kept from an earlier, longer call: each slot replaced, the
            // surplus cut.
            let mut out = vec![vec![ccm::model::InterfaceId(u32::MAX); 3]; batch.len() + 3];
            hybrid.match_batch_parallel_into(&batch, &mut out);
            prop_assert_eq!(&out, &want, "hybrid into kept answers, {} threads", threads);
            Ok(())
        })?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn index_equals_sff_and_brute_force_with_every_operator_and_type_on_few_names(
        subs in subscriptions(few_names(), 1..5, 0..40),
        events in prop::collection::vec(event(few_names(), 0..5), 1..8),
    ) {
        agree(&subs, &events)?;
    }

    #[test]
    fn indexes_equal_sff_and_brute_force_with_one_interface_per_filter(
        subs in subscriptions(few_names(), 1..5, 0..60),
        events in prop::collection::vec(event(few_names(), 0..5), 1..8),
    ) {
        agree(&one_interface_each(subs), &events)?;
    }

    #[test]
    fn index_equals_sff_and_brute_force_when_names_share_signature_bits(
        subs in subscriptions(many_names(), 1..4, 0..120),
        events in prop::collection::vec(event(many_names(), 60..200), 1..6),
    ) {
        agree(&subs, &events)?;
    }
}

#[test]
fn index_equals_sff_on_a_table_1_workload_with_few_names() {
    // Table 1's shape at a small size, with 12 names so that filters match.
    let p = ccm::Params {
        events: 300,
        filters_per_interface: (1800, 2200),
        names: 12,
        ..ccm::Params::default()
    };
    let w = ccm::workload::generate(&p, 3).unwrap();
    let ix = ContentIndex::build(&w.subscriptions).unwrap();
    let sff = Sff::build(&w.subscriptions).unwrap();
    let want = sff.match_parallel(&w.events);
    assert!(want.iter().any(|m| !m.is_empty()), "some events match");
    assert_eq!(ix.match_parallel(&w.events), want);
    assert_eq!(ix.filters(), w.subscriptions.len());
    assert!(ix.heap_bytes() > 0);
}

#[test]
fn substring_occurring_twice_counts_once_and_filters_need_every_name() {
    let subs = vec![Subscription {
        interface: InterfaceId(1),
        filter: Filter::new(vec![
            Constraint::new("s", Op::Substr, Value::Str("ab".into())).unwrap(),
            Constraint::new("t", Op::Eq, Value::Int(0)).unwrap(),
        ])
        .unwrap(),
    }];
    let ix = ContentIndex::build(&subs).unwrap();
    let e = Event::from_pairs([("s", Value::Str("abab".into()))]).unwrap();
    assert!(ix.match_event(&e).is_empty());
    let e =
        Event::from_pairs([("s", Value::Str("abab".into())), ("t", Value::Float(-0.0))]).unwrap();
    assert_eq!(ix.match_event(&e), vec![InterfaceId(1)]);
}

#[test]
fn indexes_equal_sff_on_dense_workloads_with_one_and_with_ten_interfaces() {
    // The REIN/HEM model at a small size: 20 numeric names, 1-5 range predicates per
    // filter, events carrying 3-5, 10 or all 20 names.
    for interfaces in [None, Some(10)] {
        for names_per_event in [(3, 5), (10, 10), (20, 20)] {
            let p = ccm::workload::DenseParams {
                events: 60,
                filters: 3000,
                interfaces,
                names_per_event,
                ..ccm::workload::DenseParams::default()
            };
            let w = ccm::workload::generate_dense(&p, 5).unwrap();
            let sff = Sff::build(&w.subscriptions).unwrap();
            let want = sff.match_parallel(&w.events);
            assert!(want.iter().any(|m| !m.is_empty()), "some events match");
            let value = ValueIndex::build(&w.subscriptions).unwrap();
            let hybrid = HybridIndex::build(&w.subscriptions).unwrap();
            // The same over a content index built apart (shared, not copied).
            let content = std::sync::Arc::new(ContentIndex::build(&w.subscriptions).unwrap());
            let over = HybridIndex::with_content(content.clone(), &w.subscriptions).unwrap();
            assert!(std::sync::Arc::ptr_eq(over.content(), &content));
            assert_eq!(over.match_parallel(&w.events), want);
            let mut s = hybrid.scratch();
            for (e, want) in w.events.iter().zip(&want) {
                assert_eq!(
                    &value.match_event(e),
                    want,
                    "{interfaces:?} {names_per_event:?}"
                );
                assert_eq!(&hybrid.match_event_with(e, &mut s), want);
            }
            assert_eq!(hybrid.match_parallel(&w.events), want);
        }
    }
}

/// Every overridden index (content, value, hybrid) and SFF give on `batch` exactly their
/// answers on `events` (the same events), one thread and all cores.
fn batch_agrees(subs: &[Subscription], events: &[Event], batch: &EventBatch) {
    assert_eq!(batch.to_events(), events);
    let sff = Sff::build(subs).unwrap();
    let want = sff.match_parallel(events);
    assert!(want.iter().any(|m| !m.is_empty()), "some events match");
    assert_eq!(sff.match_batch(batch), want, "sff on the batch");
    assert_eq!(
        sff.match_batch_parallel(batch),
        want,
        "sff on the batch, all cores"
    );
    let ix = ContentIndex::build(subs).unwrap();
    assert_eq!(ix.match_parallel(events), want, "index");
    assert_eq!(ix.match_batch(batch), want, "index on the batch");
    assert_eq!(
        ix.match_batch_parallel(batch),
        want,
        "index on the batch, all cores"
    );
    let value = ValueIndex::build(subs).unwrap();
    assert_eq!(value.match_parallel(events), want, "value index");
    assert_eq!(value.match_batch(batch), want, "value index on the batch");
    assert_eq!(
        value.match_batch_parallel(batch),
        want,
        "value index on the batch, all cores"
    );
    let hybrid = HybridIndex::build(subs).unwrap();
    assert_eq!(hybrid.match_parallel(events), want, "hybrid");
    assert_eq!(hybrid.match_batch(batch), want, "hybrid on the batch");
    assert_eq!(
        hybrid.match_batch_parallel(batch),
        want,
        "hybrid on the batch, all cores"
    );
    // Event by event with one scratch, the choice of index reported the same way.
    let names = hybrid.batch_names(batch);
    let (mut s1, mut s2) = (hybrid.scratch(), hybrid.scratch());
    for (i, e) in events.iter().enumerate() {
        let heap = hybrid.match_choosing(e, &mut s1).0;
        let flat = hybrid.match_choosing_in_batch(batch, &names, i, &mut s2).0;
        assert_eq!((&heap, &flat), (&want[i], &want[i]), "hybrid event {i}");
    }
}

/// `w`'s events each with one more attribute, of a name and a string no filter uses,
/// from heap events and in a batch.
fn with_unknown_attribute(events: &[Event]) -> (Vec<Event>, EventBatch) {
    let events: Vec<Event> = events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut attrs = e.attributes().to_vec();
            attrs.insert(
                i % (attrs.len() + 1),
                Attribute {
                    name: format!("unknown {}", i % 3),
                    value: Value::Str(format!("unknown string {i}")),
                },
            );
            Event::new(attrs).unwrap()
        })
        .collect();
    let batch = EventBatch::from_events(&events);
    (events, batch)
}

#[test]
fn indexes_answer_on_a_batch_as_on_heap_events_on_table_1_workloads() {
    // Table 1's model (ints and strings: =, !=, <, >, prefix, substr) with few names so
    // that filters match, uniform and Zipf names; then with suffixes and 30 names.
    let base = ccm::Params {
        events: 300,
        filters_per_interface: (900, 1100),
        names: 12,
        ..ccm::Params::default()
    };
    let zipf = ccm::Params {
        name_dist: ccm::workload::NameDist::Zipf(1.0),
        ..base.clone()
    };
    let suffixes = ccm::Params {
        names: 30,
        values: 10,
        string_ops: vec![(Op::Suffix, 0.5), (Op::Ne, 0.25), (Op::Eq, 0.25)],
        ..base.clone()
    };
    for p in [base, zipf, suffixes] {
        let w = ccm::workload::generate(&p, 7).unwrap();
        batch_agrees(&w.subscriptions, &w.events, &w.batch);
        let (events, batch) = with_unknown_attribute(&w.events);
        batch_agrees(&w.subscriptions, &events, &batch);
    }
}

#[test]
fn indexes_answer_on_a_batch_as_on_heap_events_on_dense_workloads() {
    // The dense model (floats and ints), one and ten interfaces, 3-5 and 20 names per
    // event: the hybrid's plain and measured paths, the value index by set of names.
    for interfaces in [None, Some(10)] {
        for names_per_event in [(3, 5), (20, 20)] {
            let p = ccm::workload::DenseParams {
                events: 80,
                filters: 3000,
                interfaces,
                names_per_event,
                ..ccm::workload::DenseParams::default()
            };
            let w = ccm::workload::generate_dense(&p, 9).unwrap();
            batch_agrees(&w.subscriptions, &w.events, &w.batch);
            let (events, batch) = with_unknown_attribute(&w.events);
            batch_agrees(&w.subscriptions, &events, &batch);
        }
    }
}

#[test]
fn names_made_for_a_batch_of_other_names_are_made_again_not_misread() {
    let p = ccm::Params {
        events: 200,
        filters_per_interface: (900, 1100),
        names: 12,
        ..ccm::Params::default()
    };
    let w = ccm::workload::generate(&p, 8).unwrap();
    let sff = Sff::build(&w.subscriptions).unwrap();
    let want = sff.match_parallel(&w.events);
    assert!(want.iter().any(|m| !m.is_empty()), "some events match");
    let hybrid = HybridIndex::build(&w.subscriptions).unwrap();
    let ix = ContentIndex::build(&w.subscriptions).unwrap();
    let value = ValueIndex::build(&w.subscriptions).unwrap();
    // Names made for an empty batch, and none at all (what a matcher reading heap
    // events makes): they do not fit this batch's names.
    let empty = EventBatch::new();
    for names in [ix.batch_names(&empty), Default::default()] {
        let (mut hs, mut xs, mut vs) = (hybrid.scratch(), ix.scratch(), value.scratch());
        let mut ss = sff.scratch();
        for (i, want) in want.iter().enumerate() {
            assert_eq!(&sff.match_in_batch_with(&w.batch, &names, i, &mut ss), want);
            assert_eq!(
                &hybrid.match_in_batch_with(&w.batch, &names, i, &mut hs),
                want
            );
            assert_eq!(&ix.match_in_batch_with(&w.batch, &names, i, &mut xs), want);
            assert_eq!(
                &value.match_in_batch_with(&w.batch, &names, i, &mut vs),
                want
            );
        }
    }
}
