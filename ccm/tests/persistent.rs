//! The persistent-kernel mode ([`Config::persistent`]) on the emulator, where the kernel
//! runs beside the host thread that feeds it, against the SFF-like baseline: answers in
//! order, several events in flight, updates that restart the kernel, long events, stop.

use baselines::sff::Sff;
use baselines::Matcher;
use ccm::model::{Attribute, Constraint, Event, Filter, InterfaceId, Op, Subscription, Value};
use ccm::{Ccm, Config};
use gpu_kernels::Device;
use proptest::prelude::*;

fn persistent_config(slots: u32) -> Config {
    Config {
        block: 32,
        persistent_slots: slots,
        ..Config::persistent()
    }
}

fn workload(seed: u64, events: usize) -> ccm::workload::Workload {
    let p = ccm::Params {
        events,
        interfaces: 5,
        filters_per_interface: (15, 25),
        constraints_per_filter: (1, 3),
        names: 5,
        values: 5,
        ..Default::default()
    };
    ccm::workload::generate(&p, seed).unwrap()
}

fn sff_answers(subs: &[Subscription], events: &[Event]) -> Vec<Vec<InterfaceId>> {
    let sff = Sff::build(subs).unwrap();
    events.iter().map(|e| sff.match_event(e)).collect()
}

#[test]
fn persistent_kernel_answers_every_event_as_sff_one_at_a_time() {
    let w = workload(3, 20);
    let want = sff_answers(&w.subscriptions, &w.events);
    assert!(
        want.iter().filter(|m| !m.is_empty()).count() >= 3,
        "too sparse"
    );
    let dev = Device::emulator();
    let mut ccm = Ccm::new(&dev, &w.subscriptions, persistent_config(4)).unwrap();
    assert!(!ccm.persistent_running());
    for (e, want) in w.events.iter().zip(&want) {
        assert_eq!(&ccm.match_event(e).unwrap(), want, "event {e:?}");
    }
    assert!(ccm.persistent_running());
}

#[test]
fn persistent_kernel_pipelines_events_in_order_at_every_depth() {
    let w = workload(5, 24);
    let want = sff_answers(&w.subscriptions, &w.events);
    let dev = Device::emulator();
    let mut ccm = Ccm::new(&dev, &w.subscriptions, persistent_config(8)).unwrap();
    for in_flight in [1, 3, 8, 100] {
        let mut lat = Vec::new();
        let got = ccm
            .match_pipelined(&w.events, in_flight, Some(&mut lat))
            .unwrap();
        assert_eq!(got, want, "{in_flight} in flight");
        assert_eq!(lat.len(), w.events.len());
        assert!(lat.iter().all(|&us| us > 0.0));
    }
}

#[test]
fn persistent_mode_restarts_after_updates_and_answers_as_a_fresh_sff() {
    let w = workload(7, 12);
    let dev = Device::emulator();
    let (first, later) = w.subscriptions.split_at(w.subscriptions.len() / 2);
    let mut ccm = Ccm::new(&dev, first, persistent_config(4)).unwrap();
    assert_eq!(
        ccm.match_event(&w.events[0]).unwrap(),
        sff_answers(first, &w.events[..1])[0]
    );
    let mut ids = Vec::new();
    for s in later {
        ids.push(ccm.add(s).unwrap());
    }
    // Every other added subscription removed again.
    let mut kept = first.to_vec();
    for (k, (id, s)) in ids.iter().zip(later).enumerate() {
        if k % 2 == 0 {
            ccm.remove(*id).unwrap();
        } else {
            kept.push(s.clone());
        }
    }
    let want = sff_answers(&kept, &w.events);
    assert_eq!(ccm.match_pipelined(&w.events, 4, None).unwrap(), want);
}

fn attr(name: &str, v: Value) -> Attribute {
    Attribute {
        name: name.into(),
        value: v,
    }
}

#[test]
fn persistent_mode_takes_events_longer_than_its_slots_and_empty_events() {
    let sub = |i: u32, c: Constraint| Subscription {
        interface: InterfaceId(i),
        filter: Filter::new(vec![c]).unwrap(),
    };
    let long = "x".repeat(5000) + "needle" + &"y".repeat(3000);
    let subs = vec![
        sub(
            1,
            Constraint::new("s", Op::Substr, Value::Str("needle".into())).unwrap(),
        ),
        sub(
            2,
            Constraint::new("s", Op::Prefix, Value::Str("xx".into())).unwrap(),
        ),
        sub(3, Constraint::new("n", Op::Gt, Value::Int(3)).unwrap()),
    ];
    let events = vec![
        Event::new(vec![attr("n", Value::Int(4))]).unwrap(),
        // No constrained name: answered without the kernel.
        Event::new(vec![attr("other", Value::Int(4))]).unwrap(),
        // 8 kB of string: more than the first ring's slots (a new kernel, larger slots).
        Event::new(vec![attr("s", Value::Str(long)), attr("n", Value::Int(1))]).unwrap(),
        Event::new(vec![attr("s", Value::Str("needle".into()))]).unwrap(),
    ];
    let want = sff_answers(&subs, &events);
    assert_eq!(want[2], vec![InterfaceId(1), InterfaceId(2)]);
    let dev = Device::emulator();
    let mut ccm = Ccm::new(&dev, &subs, persistent_config(2)).unwrap();
    for (e, want) in events.iter().zip(&want) {
        assert_eq!(&ccm.match_event(e).unwrap(), want);
    }
    assert_eq!(ccm.match_pipelined(&events, 2, None).unwrap(), want);
    // Pipelined from the start: the long event waits for the one in flight, then a new
    // kernel with longer slots takes it.
    let mut ccm = Ccm::new(&dev, &subs, persistent_config(2)).unwrap();
    assert_eq!(ccm.match_pipelined(&events, 2, None).unwrap(), want);
}

#[test]
fn persistent_kernel_stops_on_request_and_on_drop() {
    let w = workload(9, 6);
    let want = sff_answers(&w.subscriptions, &w.events);
    let dev = Device::emulator();
    let mut ccm = Ccm::new(&dev, &w.subscriptions, persistent_config(4)).unwrap();
    assert_eq!(ccm.match_pipelined(&w.events, 4, None).unwrap(), want);
    ccm.stop_persistent().unwrap();
    assert!(!ccm.persistent_running());
    // The next event starts a new kernel.
    assert_eq!(ccm.match_event(&w.events[0]).unwrap(), want[0]);
    assert!(ccm.persistent_running());
    drop(ccm);
    // Without the mode, pipelining is refused rather than silently serial.
    let mut plain = Ccm::new(&dev, &w.subscriptions, Config::default()).unwrap();
    assert!(plain.match_pipelined(&w.events, 2, None).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Random Table 1 workloads (numbers and strings, every operator): the persistent
    /// kernel, pipelined, answers every event as SFF.
    #[test]
    fn persistent_kernel_matches_sff_on_random_workloads(seed in 0u64..1000, depth in 1usize..6) {
        let w = workload(seed, 10);
        let want = sff_answers(&w.subscriptions, &w.events);
        let dev = Device::emulator();
        let mut ccm = Ccm::new(&dev, &w.subscriptions, persistent_config(4)).unwrap();
        prop_assert_eq!(ccm.match_pipelined(&w.events, depth, None).unwrap(), want);
    }
}

#[test]
fn persistent_kernel_answers_with_many_interfaces_through_its_list() {
    // More interfaces than the answering block scans (PERSIST_SCAN_MAX): the matching
    // threads list them instead.
    let p = ccm::Params {
        events: 8,
        interfaces: ccm_kernels::PERSIST_SCAN_MAX as usize + 500,
        filters_per_interface: (1, 2),
        constraints_per_filter: (1, 2),
        names: 3,
        values: 3,
        ..Default::default()
    };
    let w = ccm::workload::generate(&p, 2).unwrap();
    let want = sff_answers(&w.subscriptions, &w.events);
    assert!(want.iter().any(|m| m.len() > 100), "too sparse");
    let dev = Device::emulator();
    let mut ccm = Ccm::new(&dev, &w.subscriptions, persistent_config(4)).unwrap();
    assert_eq!(ccm.match_pipelined(&w.events, 3, None).unwrap(), want);
}
