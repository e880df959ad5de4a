//! The persistent mode ([`Engine::set_persistent`]) on the emulator, where the kernel
//! runs beside the host thread that feeds it: events, area moves and subscription
//! switches through one ring, in order, several in flight, against a brute-force
//! oracle and the per-launch engine.

use ccm::model::{Attribute, Constraint, Op, Value};
use clcb::model::{
    Area, AreaUpdate, Event, Filter, FilterId, Location, Subscription, SubscriptionId,
    Subscriptions,
};
use clcb::{Engine, Options, Request};
use gpu_kernels::Device;
use proptest::prelude::*;

const NAMES: [&str; 4] = ["a", "b", "c", "zz"];

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-3i64..4).prop_map(Value::Int),
        prop::sample::select(vec![-1.5, 0.0, 2.5]).prop_map(Value::Float),
        prop::sample::select(vec!["", "a", "ab", "ba"]).prop_map(|s| Value::Str(s.to_string())),
    ]
}

fn constraint() -> impl Strategy<Value = Constraint> {
    (prop::sample::select(&NAMES[..3]), 0usize..9, value()).prop_map(|(name, op, v)| {
        let ops: &[Op] = if matches!(v, Value::Str(_)) {
            &[Op::Eq, Op::Ne, Op::Prefix, Op::Suffix, Op::Substr]
        } else {
            &[Op::Eq, Op::Ne, Op::Lt, Op::Gt, Op::Le, Op::Ge]
        };
        Constraint::new(name, ops[op % ops.len()], v).expect("operator chosen for the type")
    })
}

fn coord() -> impl Strategy<Value = f64> {
    prop_oneof![(-4i32..5).prop_map(|i| i as f64 * 0.5), Just(0.3)]
}

/// Circles and rectangles (degenerate and huge ones too).
fn area() -> impl Strategy<Value = Area> {
    let circle = (
        coord(),
        coord(),
        prop::sample::select(vec![0.0, 0.5, 1.5, 100.0]),
    )
        .prop_map(|(x, y, r)| Area::circle(x, y, r).expect("finite, non-negative"));
    let side = prop::sample::select(vec![0.0, 0.5, 2.0, 100.0]);
    let rect = (coord(), coord(), side.clone(), side)
        .prop_map(|(x, y, w, h)| Area::rect(x, y, x + w, y + h).expect("ordered"));
    prop_oneof![2 => circle, 1 => rect]
}

fn filter() -> impl Strategy<Value = Filter> {
    (prop::collection::vec(constraint(), 0..3), area())
        .prop_map(|(c, a)| Filter::new(c, a).expect("valid"))
}

fn subscriptions() -> impl Strategy<Value = Subscriptions> {
    prop::collection::vec(prop::collection::vec(filter(), 1..4), 1..12).prop_map(|v| {
        Subscriptions::new(v.into_iter().enumerate().map(|(i, filters)| Subscription {
            id: SubscriptionId(i as u32 * 2 + 1),
            filters,
        }))
    })
}

fn event() -> impl Strategy<Value = Event> {
    (
        (coord(), coord()),
        prop::sample::subsequence(NAMES.to_vec(), 0..=4),
        prop::collection::vec(value(), 4),
    )
        .prop_map(|((x, y), names, values)| Event {
            loc: Location::new(x, y).expect("finite"),
            content: ccm::model::Event::new(
                names
                    .into_iter()
                    .zip(values)
                    .map(|(n, v)| Attribute {
                        name: n.to_string(),
                        value: v,
                    })
                    .collect(),
            )
            .expect("distinct names"),
        })
}

/// A step: match an event, move filter `i % filters`, switch subscription `i % subs`.
#[derive(Clone, Debug)]
enum Step {
    Match(Event),
    Move(usize, Area),
    Switch(usize, bool),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            3 => event().prop_map(Step::Match),
            1 => (any::<usize>(), area()).prop_map(|(i, a)| Step::Move(i, a)),
            1 => (any::<usize>(), any::<bool>()).prop_map(|(i, on)| Step::Switch(i, on)),
        ],
        1..14,
    )
}

/// The definition: a switched-on subscription with some filter holding the event's
/// location in its area and every constraint satisfied.
fn brute_force(subs: &Subscriptions, off: &[bool], e: &Event) -> Vec<u32> {
    (0..subs.len() as u32)
        .filter(|&i| {
            !off[i as usize]
                && subs.as_slice()[i as usize].filters.iter().any(|f| {
                    f.area.contains(e.loc)
                        && f.constraints.iter().all(|c| baselines::rtree::holds(c, e))
                })
        })
        .collect()
}

/// The scenario's area updates, the oracle's answer to each event at its place in it,
/// and the subscriptions and switches after the last step.
type Expected = (Vec<AreaUpdate>, Vec<Vec<u32>>, Subscriptions, Vec<bool>);

fn expected(subs: &Subscriptions, steps: &[Step]) -> Expected {
    let mut model = subs.clone();
    let mut off = vec![false; subs.len()];
    let mut moves = Vec::new();
    let mut answers = Vec::new();
    for s in steps {
        match s {
            Step::Match(e) => answers.push(brute_force(&model, &off, e)),
            Step::Move(i, a) => {
                let u = AreaUpdate {
                    filter: FilterId((i % subs.filter_count()) as u32),
                    area: *a,
                };
                model.apply(&u).expect("filter exists");
                moves.push(u);
            }
            Step::Switch(i, on) => off[i % subs.len()] = !on,
        }
    }
    (moves, answers, model, off)
}

fn requests<'a>(
    subs: &Subscriptions,
    steps: &'a [Step],
    moves: &'a [AreaUpdate],
) -> Vec<Request<'a>> {
    let mut m = moves.iter();
    steps
        .iter()
        .map(|s| match s {
            Step::Match(e) => Request::Event(e),
            Step::Move(..) => Request::Move(m.next().expect("one update per move")),
            Step::Switch(i, on) => Request::Switch {
                subscription: (i % subs.len()) as u32,
                on: *on,
            },
        })
        .collect()
}

fn persistent_engine(subs: &Subscriptions, slots: u32) -> Engine {
    let mut e = Engine::new(Device::emulator(), subs, Options::default()).expect("engine");
    e.set_persistent_slots(slots);
    e.set_persistent(true).unwrap();
    e
}

/// Events, area moves and subscription switches interleaved, several in flight in the
/// ring: every event sees exactly the updates before it (brute force on the model), as
/// one request at a time does, and as the per-launch engine does.
fn updates_interleaved_with_events_apply_in_order(
    subs: &Subscriptions,
    steps: &[Step],
    depth: usize,
) -> Result<(), TestCaseError> {
    let (moves, want, model, off) = expected(subs, steps);
    let reqs = requests(subs, steps, &moves);
    let mut pers = persistent_engine(subs, 4);
    prop_assert_eq!(&pers.pipeline(&reqs, depth, None).unwrap(), &want);
    // Over the grid's candidates (filters leaving their cells join the outside list,
    // which the kernel extends).
    let mut pers = persistent_engine(subs, 4);
    pers.set_grid(true).unwrap();
    prop_assert_eq!(&pers.pipeline(&reqs, depth, None).unwrap(), &want, "grid");
    // One request at a time through the public calls, on a fresh engine.
    let mut one = persistent_engine(subs, 4);
    let mut plain = Engine::new(Device::emulator(), subs, Options::default()).unwrap();
    let mut got = (Vec::new(), Vec::new());
    for r in &reqs {
        match r {
            Request::Event(e) => {
                got.0.push(one.match_indices(e, None).unwrap());
                got.1.push(plain.match_indices(e, None).unwrap());
            }
            Request::Move(u) => {
                one.move_area(u).unwrap();
                plain.move_area(u).unwrap();
            }
            Request::Switch { subscription, on } => {
                one.set_subscription_active(*subscription, *on).unwrap();
                plain.set_subscription_active(*subscription, *on).unwrap();
            }
        }
    }
    prop_assert_eq!(&got.0, &want);
    prop_assert_eq!(&got.1, &want);
    // Leaving the mode brings the per-launch paths up to date with the moves.
    one.set_persistent(false).unwrap();
    prop_assert!(!one.persistent_running());
    if let Some(Step::Match(e)) = steps.iter().rev().find(|s| matches!(s, Step::Match(_))) {
        let last = brute_force(&model, &off, e);
        prop_assert_eq!(&one.match_indices(e, None).unwrap(), &last);
        one.set_low_latency(true).unwrap();
        prop_assert_eq!(&one.match_indices(e, None).unwrap(), &last);
        one.set_grid(true).unwrap();
        prop_assert_eq!(&one.match_indices(e, None).unwrap(), &last);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2, ..ProptestConfig::default() })]

    /// [`updates_interleaved_with_events_apply_in_order`] on two random sequences (the
    /// soak test below runs twelve).
    #[test]
    fn persistent_updates_interleaved_with_events_apply_in_order(
        subs in subscriptions(),
        steps in steps(),
        depth in 1usize..6,
    ) {
        updates_interleaved_with_events_apply_in_order(&subs, &steps, depth)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// The same on twelve random sequences.
    #[test]
    fn persistent_updates_interleaved_with_events_apply_in_order_soak(
        subs in subscriptions(),
        steps in steps(),
        depth in 1usize..6,
    ) {
        updates_interleaved_with_events_apply_in_order(&subs, &steps, depth)?;
    }
}

#[test]
fn persistent_mode_lists_every_match_once_across_blocks_and_events() {
    // 600 subscriptions of two filters each around the origin: a subscription is claimed
    // by two filters, in different blocks of the grid-stride loop.
    let area = Area::circle(0.0, 0.0, 10.0).unwrap();
    let subs = Subscriptions::new((0..600).map(|i| Subscription {
        id: SubscriptionId(1000 - i),
        filters: vec![Filter::new(vec![], area).unwrap(); 2],
    }));
    let mut engine = persistent_engine(&subs, 3);
    engine.set_grid(true).unwrap();
    let near = Event {
        loc: Location { x: 1.0, y: 1.0 },
        content: Default::default(),
    };
    let far = Event {
        loc: Location { x: 11.0, y: 0.0 },
        content: Default::default(),
    };
    let all: Vec<SubscriptionId> = (401..=1000).map(SubscriptionId).collect();
    for _ in 0..2 {
        assert_eq!(engine.match_event(&near).unwrap(), all);
        assert!(engine.match_event(&far).unwrap().is_empty());
    }
    let got = engine
        .match_pipelined(&[near.clone(), far.clone(), near.clone()], 3, None)
        .unwrap();
    assert_eq!(got[0].len(), 600);
    assert!(got[1].is_empty());
    assert_eq!(got[0], got[2]);
    // A switched-off subscription is not listed.
    engine.set_subscription_active(0, false).unwrap();
    assert_eq!(engine.match_event(&near).unwrap().len(), 599);
    assert!(!engine.subscription_active(0));
    assert!(engine.set_subscription_active(600, true).is_err());
}

#[test]
fn persistent_mode_matches_a_generated_workload_and_stops_on_drop() {
    use clcb::workload::{Params, Workload};
    let w = Workload::new(
        Params {
            subscriptions: 200,
            events: 10,
            area_percent: 0.5,
            ..Params::default()
        },
        5,
    );
    let subs = w.subscriptions();
    // Events at the filters' own centres, so that some match.
    let events: Vec<Event> = subs
        .filters()
        .step_by(67)
        .enumerate()
        .map(|(k, (_, _, f))| Event {
            loc: Location::new(f.area.center().0, f.area.center().1).expect("finite"),
            content: w.event(k).content,
        })
        .collect();
    let off = vec![false; subs.len()];
    let want: Vec<Vec<u32>> = events.iter().map(|e| brute_force(&subs, &off, e)).collect();
    assert!(want.iter().any(|m| !m.is_empty()), "too sparse");
    let mut engine = persistent_engine(&subs, 8);
    let mut lat = Vec::new();
    assert_eq!(
        engine.match_pipelined(&events, 8, Some(&mut lat)).unwrap(),
        want
    );
    assert_eq!(lat.len(), events.len());
    assert_eq!(engine.match_batch(&events).unwrap(), want);
    // Switching the grid on restarts the kernel over the grid's candidates.
    engine.set_grid(true).unwrap();
    assert_eq!(engine.match_pipelined(&events, 3, None).unwrap(), want);
    engine.stop_persistent().unwrap();
    assert!(!engine.persistent_running());
    // Still in the mode: the next event starts a new kernel.
    assert_eq!(engine.match_indices(&events[0], None).unwrap(), want[0]);
    assert!(engine.persistent_running());
    drop(engine);
    // Without the mode, the pipeline is refused rather than silently serial.
    let mut plain = Engine::new(Device::emulator(), &subs, Options::default()).unwrap();
    assert!(plain.match_pipelined(&events, 2, None).is_err());
}
