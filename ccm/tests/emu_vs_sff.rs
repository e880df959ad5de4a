//! The emulator engine (the GPU kernels run on the host) against the SFF-like baseline,
//! on random workloads with the edge cases of the typing rules: empty strings,
//! prefix = whole string, int/float equality and ordering at 2^53 and at the i64 ends,
//! -0.0, infinities, type mismatches, absent attributes, interfaces with many filters.

use baselines::sff::Sff;
use baselines::Matcher;
use ccm::batch::{EventBatch, ValueRef};
use ccm::model::{Attribute, Constraint, Event, Filter, InterfaceId, Op, Subscription, Value};
use ccm::{Ccm, Config, GpuIndex, IndexConfig, Reset};
use gpu_kernels::Device;
use proptest::prelude::*;

const NAMES: &[&str] = &["a", "b", ""];
/// Includes strings of 9-16 bytes (the second word of an inlined attribute's bytes) and
/// of 17 bytes (too long to inline: the copied-`Input` path).
const STRS: &[&str] = &[
    "",
    "a",
    "ab",
    "abc",
    "b",
    "ba",
    "bab",
    "é",
    "aé",
    "area1",
    "abcdefghijklmnop",
    "jklmnop",
    "abcdefghijklmnopq",
];

fn num() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-2i64..3).prop_map(Value::Int),
        (-2i64..3).prop_map(|i| Value::Float(i as f64)),
        prop::sample::select(vec![
            i64::MIN,
            i64::MAX,
            (1 << 53) + 1,
            1 << 53,
            -(1 << 53) - 1
        ])
        .prop_map(Value::Int),
        prop::sample::select(vec![
            0.5,
            -0.0,
            0.0,
            2.0,
            -2.5,
            9007199254740992.0,
            -9007199254740992.0,
            9_223_372_036_854_775_808.0, // 2^63
            -9_223_372_036_854_775_808.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
        ])
        .prop_map(Value::Float),
    ]
}

fn string() -> impl Strategy<Value = Value> {
    prop::sample::select(STRS.to_vec()).prop_map(|s| Value::Str(s.to_string()))
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![num(), string()]
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
            Constraint::new(n, *i.get(&ops), v).expect("op fits type")
        })
}

fn subscription() -> impl Strategy<Value = Subscription> {
    (0u32..4, prop::collection::vec(constraint(), 1..4)).prop_map(|(i, cs)| Subscription {
        interface: InterfaceId(i * 7),
        filter: Filter::new(cs).unwrap(),
    })
}

fn event() -> impl Strategy<Value = Event> {
    prop::collection::vec((prop::sample::select(NAMES.to_vec()), value()), 0..5).prop_map(|pairs| {
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

/// [`Config::low_latency`] (inline `Input`, mapped output) in emulator-sized blocks.
fn low_latency_config() -> Config {
    Config {
        block: 32,
        ..Config::low_latency()
    }
}

fn small_config(reset: Reset, grouping: bool) -> Config {
    Config {
        reset,
        grouping,
        inline_events: false,
        block: 32,
        batch_events: 5,
        batch_chunk: 4,
        ..Config::default()
    }
}

/// The pruning index with every event on the partition walk, every event on the
/// filter-major kernel or the interface-major one, or a mix; launches of 1-4 events;
/// one or two warps per event.
fn index_config() -> impl Strategy<Value = IndexConfig> {
    (
        prop::sample::select(vec![0.0, 0.3, 2.0]),
        1usize..5,
        prop::sample::select(vec![32u32, 64]),
        prop::sample::select(vec![1usize, usize::MAX]),
        // One warp per event of the partition walk, or several.
        prop::sample::select(vec![1usize, 8448]),
    )
        .prop_map(
            |(dense_share, batch_events, route_block, iface_major_min, walk_warps)| IndexConfig {
                dense_share,
                batch_events,
                route_block,
                dense_block: 32,
                iface_major_min,
                walk_warps,
                ..IndexConfig::default()
            },
        )
}

/// `events` in a batch whose dictionaries first hold names and strings that no
/// subscription has (so that every id of the events' names and strings differs from
/// their order of appearance), after one event of such names and strings only.
fn seeded_batch(events: &[Event]) -> EventBatch {
    let mut b = EventBatch::new();
    for n in ["unknown", "zz"] {
        b.intern_name(n);
    }
    b.push_named("zz", ValueRef::Str("never")).unwrap();
    b.push_named("unknown", ValueRef::Int(1)).unwrap();
    b.end_event().unwrap();
    for e in events {
        b.push_event(e);
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Algorithm 1 (both reset variants, with and without grouping, `Input` copied or
    /// passed in the launch parameters, `Interfaces` copied back or the mapped output)
    /// and the batched kernel give SFF's answers.
    #[test]
    fn emulator_engines_equal_sff_on_random_workloads(
        subs in prop::collection::vec(subscription(), 0..40),
        events in prop::collection::vec(event(), 1..7),
        memset in any::<bool>(),
        grouping in any::<bool>(),
        inline in any::<bool>(),
        mapped in any::<bool>(),
        index_cfg in index_config(),
    ) {
        let sff = Sff::build(&subs).unwrap();
        let want: Vec<Vec<InterfaceId>> = events.iter().map(|e| sff.match_event(e)).collect();
        let dev = Device::emulator();
        let reset = if memset { Reset::Memset } else { Reset::InKernel };
        let cfg = Config {
            inline_events: inline,
            mapped_output: mapped,
            ..small_config(reset, grouping)
        };
        let mut ccm = Ccm::new(&dev, &subs, cfg).unwrap();
        for (e, w) in events.iter().zip(&want) {
            prop_assert_eq!(&ccm.match_event(e).unwrap(), w, "event {:?}", e);
        }
        prop_assert_eq!(ccm.match_events(&events).unwrap(), want.clone());
        let mut index = GpuIndex::new(&dev, &subs, index_cfg).unwrap();
        prop_assert_eq!(index.match_events(&events).unwrap().to_vecs(), want.clone(), "index {:?}", index_cfg);
        // The same events in a batch whose dictionaries also hold names and strings no
        // event or subscription has (every id shifted), after an event of such a name
        // only; a range of it leaves that event out.
        let b = seeded_batch(&events);
        let got = index.match_batch(&b).unwrap().to_vecs();
        prop_assert_eq!(&got[1..], &want[..], "index on a seeded batch {:?}", index_cfg);
        prop_assert_eq!(&ccm.match_batch(&b).unwrap()[1..], &want[..], "batched kernel on a seeded batch");
        prop_assert_eq!(ccm.match_range(&b, 1..b.len()).unwrap(), want.clone(), "batched kernel on a range");
        prop_assert!(got[0].is_empty());
        let mut out = ccm::Answers::default();
        index.match_range_into(&b, 1..b.len(), &mut out).unwrap();
        prop_assert_eq!(out.to_vecs(), want, "index on a range {:?}", index_cfg);
    }

    /// Subscriptions added and removed after deployment: the engine answers as an SFF
    /// built from scratch on the subscriptions that remain.
    #[test]
    fn added_and_removed_subscriptions_match_a_fresh_sff(
        first in prop::collection::vec(subscription(), 0..15),
        later in prop::collection::vec(subscription(), 0..15),
        drop_mask in any::<u32>(),
        events in prop::collection::vec(event(), 1..5),
    ) {
        let dev = Device::emulator();
        let mut ccm = Ccm::new(&dev, &first, small_config(Reset::InKernel, false)).unwrap();
        let mut fast = Ccm::new(&dev, &first, low_latency_config()).unwrap();
        fast.match_event(&events[0]).unwrap();
        let mut index = GpuIndex::new(&dev, &first, IndexConfig::default()).unwrap();
        index.match_events(&events).unwrap();
        // One event before the updates, so the device tables are live when they change.
        ccm.match_event(&events[0]).unwrap();
        let mut live: Vec<(ccm::SubId, Subscription)> =
            first.iter().enumerate().map(|(i, s)| (ccm::SubId(i as u32), s.clone())).collect();
        for s in &later {
            let id = ccm.add(s).unwrap();
            prop_assert_eq!(fast.add(s).unwrap(), id);
            prop_assert_eq!(index.add(s).unwrap(), id);
            live.push((id, s.clone()));
        }
        let mut kept = Vec::new();
        for (i, (id, s)) in live.into_iter().enumerate() {
            if drop_mask & (1 << (i % 32)) != 0 {
                ccm.remove(id).unwrap();
                fast.remove(id).unwrap();
                index.remove(id).unwrap();
            } else {
                kept.push(s);
            }
        }
        let sff = Sff::build(&kept).unwrap();
        for e in &events {
            prop_assert_eq!(ccm.match_event(e).unwrap(), sff.match_event(e), "event {:?}", e);
            prop_assert_eq!(fast.match_event(e).unwrap(), sff.match_event(e), "low latency, event {:?}", e);
        }
        let want: Vec<_> = events.iter().map(|e| sff.match_event(e)).collect();
        prop_assert_eq!(ccm.match_events(&events).unwrap(), want.clone());
        prop_assert_eq!(index.match_batch(&EventBatch::from_events(&events)).unwrap().to_vecs(), want);
    }
}

/// A scaled-down Table 1 workload: every engine agrees with SFF on every event.
#[test]
fn generated_table_1_workload_matches_sff() {
    let p = ccm::Params {
        events: 16,
        interfaces: 4,
        filters_per_interface: (20, 30),
        constraints_per_filter: (1, 3),
        names: 5,
        values: 5,
        ..Default::default()
    };
    let w = ccm::workload::generate(&p, 11).unwrap();
    let sff = Sff::build(&w.subscriptions).unwrap();
    let want: Vec<_> = w.events.iter().map(|e| sff.match_event(e)).collect();
    assert!(
        want.iter().any(|m| !m.is_empty()),
        "workload too sparse to test anything"
    );
    let dev = Device::emulator();
    let mut ccm = Ccm::new(&dev, &w.subscriptions, small_config(Reset::InKernel, true)).unwrap();
    let got: Vec<_> = w
        .events
        .iter()
        .map(|e| ccm.match_event(e).unwrap())
        .collect();
    assert_eq!(got, want);
    let inline = Config {
        inline_events: true,
        ..small_config(Reset::InKernel, false)
    };
    let mut ccm = Ccm::new(&dev, &w.subscriptions, inline).unwrap();
    let got: Vec<_> = w
        .events
        .iter()
        .map(|e| ccm.match_event(e).unwrap())
        .collect();
    assert_eq!(got, want);
    assert_eq!(ccm.match_batch(&w.batch).unwrap(), want);
    let mut ccm = Ccm::new(&dev, &w.subscriptions, low_latency_config()).unwrap();
    let got: Vec<_> = w
        .events
        .iter()
        .map(|e| ccm.match_event(e).unwrap())
        .collect();
    assert_eq!(got, want);
}

/// The hand-checked example of §3: p1 = (area = "area1" ∧ temp > 30) ∨ (area = "area2" ∧ wind > 20).
#[test]
fn paper_section_3_example() {
    let f = |cs: Vec<(&str, Op, Value)>| {
        Filter::new(
            cs.into_iter()
                .map(|(n, o, v)| Constraint::new(n, o, v).unwrap())
                .collect(),
        )
        .unwrap()
    };
    let subs = vec![
        Subscription {
            interface: InterfaceId(1),
            filter: f(vec![
                ("area", Op::Eq, Value::Str("area1".into())),
                ("temp", Op::Gt, Value::Int(30)),
            ]),
        },
        Subscription {
            interface: InterfaceId(1),
            filter: f(vec![
                ("area", Op::Eq, Value::Str("area2".into())),
                ("wind", Op::Gt, Value::Int(20)),
            ]),
        },
        Subscription {
            interface: InterfaceId(2),
            filter: f(vec![("temp", Op::Le, Value::Float(25.0))]),
        },
    ];
    let e1 = Event::from_pairs([
        ("area", Value::Str("area1".into())),
        ("temp", Value::Int(25)),
        ("wind", Value::Int(15)),
    ])
    .unwrap();
    let e2 = Event::from_pairs([
        ("area", Value::Str("area2".into())),
        ("temp", Value::Int(35)),
        ("wind", Value::Int(25)),
    ])
    .unwrap();
    let dev = Device::emulator();
    let mut ccm = Ccm::new(&dev, &subs, small_config(Reset::InKernel, false)).unwrap();
    assert_eq!(ccm.match_event(&e1).unwrap(), vec![InterfaceId(2)]);
    assert_eq!(ccm.match_event(&e2).unwrap(), vec![InterfaceId(1)]);
    assert_eq!(
        Sff::build(&subs).unwrap().match_event(&e2),
        vec![InterfaceId(1)]
    );
}

/// Strings of 16 and 17 bytes (the longest inlined in the launch parameters, and the
/// shortest copied): prefix, suffix and substring constraints reach the last bytes.
#[test]
fn long_strings_match_on_both_input_paths() {
    let c = |op, v: &str| Constraint::new("s", op, Value::Str(v.into())).unwrap();
    let subs: Vec<Subscription> = [
        c(Op::Suffix, "jklmnop"),
        c(Op::Substr, "mno"),
        c(Op::Prefix, "abcdefghijklmnop"),
        c(Op::Suffix, "nopq"),
        c(Op::Eq, "abcdefghijklmnopq"),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, c)| Subscription {
        interface: InterfaceId(i as u32),
        filter: Filter::new(vec![c]).unwrap(),
    })
    .collect();
    let ev = |s: &str| Event::from_pairs([("s", Value::Str(s.into()))]).unwrap();
    let events = [ev("abcdefghijklmnop"), ev("abcdefghijklmnopq"), ev("xyz")];
    let want = [vec![0, 1, 2], vec![1, 2, 3, 4], vec![]];
    let sff = Sff::build(&subs).unwrap();
    let dev = Device::emulator();
    for (inline, mapped) in [(false, false), (true, false), (false, true), (true, true)] {
        let cfg = Config {
            inline_events: inline,
            mapped_output: mapped,
            ..small_config(Reset::InKernel, false)
        };
        let mut ccm = Ccm::new(&dev, &subs, cfg).unwrap();
        for (e, w) in events.iter().zip(&want) {
            let w: Vec<InterfaceId> = w.iter().map(|&i| InterfaceId(i)).collect();
            assert_eq!(sff.match_event(e), w);
            assert_eq!(
                ccm.match_event(e).unwrap(),
                w,
                "inline {inline}, mapped {mapped}, event {e:?}"
            );
        }
    }
}

/// The mapped output over many events and both counters: every interface matching,
/// none, and in between, in turn; a list never carries an earlier event's entries.
#[test]
fn mapped_output_lists_each_event_once() {
    let subs: Vec<Subscription> = (0..12u32)
        .map(|i| Subscription {
            interface: InterfaceId(40 - 3 * i),
            filter: Filter::new(vec![
                Constraint::new("n", Op::Ge, Value::Int(i as i64)).unwrap(),
                Constraint::new("m", Op::Lt, Value::Int(5)).unwrap(),
            ])
            .unwrap(),
        })
        .collect();
    let sff = Sff::build(&subs).unwrap();
    let dev = Device::emulator();
    for memset in [false, true] {
        let reset = if memset {
            Reset::Memset
        } else {
            Reset::InKernel
        };
        let cfg = Config {
            reset,
            ..low_latency_config()
        };
        let mut ccm = Ccm::new(&dev, &subs, cfg).unwrap();
        for k in 0..40i64 {
            let e = Event::from_pairs([
                ("n", Value::Int((k * 7) % 15 - 1)),
                ("m", Value::Int(k % 7)),
            ])
            .unwrap();
            assert_eq!(
                ccm.match_event(&e).unwrap(),
                sff.match_event(&e),
                "memset {memset}, event {k}: {e:?}"
            );
        }
    }
}

/// Interfaces added after deployment, past the mapped list's room: the list grows and
/// every interface still appears.
#[test]
fn mapped_output_grows_with_added_interfaces() {
    let sub = |i: u32| Subscription {
        interface: InterfaceId(i),
        filter: Filter::new(vec![
            Constraint::new("x", Op::Gt, Value::Int(i as i64)).unwrap()
        ])
        .unwrap(),
    };
    let mut subs = vec![sub(0)];
    let dev = Device::emulator();
    let mut ccm = Ccm::new(&dev, &subs, low_latency_config()).unwrap();
    let e = Event::from_pairs([("x", Value::Int(1000))]).unwrap();
    assert_eq!(ccm.match_event(&e).unwrap(), vec![InterfaceId(0)]);
    for i in 1..60 {
        subs.push(sub(i));
        ccm.add(&subs[i as usize]).unwrap();
        if i % 7 == 0 {
            let want = Sff::build(&subs).unwrap().match_event(&e);
            assert_eq!(want.len(), i as usize + 1);
            assert_eq!(ccm.match_event(&e).unwrap(), want, "after {i} additions");
        }
    }
    let e = Event::from_pairs([("x", Value::Int(30))]).unwrap();
    assert_eq!(
        ccm.match_event(&e).unwrap(),
        Sff::build(&subs).unwrap().match_event(&e)
    );
}

/// A stream matched window by window (as `harness ccm match` does: the batched kernel's
/// buffers are kept from one call to the next, and grow for a larger window) gives the
/// answers of one batch, also after a subscription is added between windows.
#[test]
fn windows_of_a_stream_match_like_one_batch_and_after_an_update() {
    let p = ccm::Params {
        events: 24,
        interfaces: 3,
        filters_per_interface: (10, 20),
        constraints_per_filter: (1, 2),
        names: 4,
        values: 4,
        ..Default::default()
    };
    let w = ccm::workload::generate(&p, 5).unwrap();
    let dev = Device::emulator();
    let cfg = Config {
        batch_tables: true,
        ..small_config(Reset::InKernel, false)
    };
    let mut ccm = Ccm::new(&dev, &w.subscriptions, cfg).unwrap();
    let want = Sff::build(&w.subscriptions)
        .unwrap()
        .match_parallel(&w.events);
    let mut got = Vec::new();
    for window in [0..3, 3..4, 4..w.events.len()] {
        got.extend(ccm.match_range(&w.batch, window).unwrap());
    }
    assert_eq!(got, want);
    // A new interface between windows: more output flags per event.
    let extra = Subscription {
        interface: InterfaceId(99),
        filter: Filter::new(vec![Constraint::new("n0", Op::Ne, Value::Int(-1)).unwrap()]).unwrap(),
    };
    ccm.add(&extra).unwrap();
    let mut subs = w.subscriptions.clone();
    subs.push(extra);
    let want = Sff::build(&subs).unwrap().match_parallel(&w.events);
    let mut got = ccm.match_range(&w.batch, 0..2).unwrap();
    got.extend(ccm.match_events(&w.events[2..]).unwrap());
    assert_eq!(got, want);
}
