//! The matcher over several emulated devices ([`MultiEngine`]) answers as the one-device
//! engine, event by event and in batches, before and after area moves, in the paper's
//! pipeline and over the grid index, whatever the number of devices (devices left
//! without subscriptions included).

use clcb::multi::MultiEngine;
use clcb::workload::{Params, Workload};
use clcb::{Area, AreaUpdate, Engine, EngineError, FilterId, Options};
use gpu_kernels::multi::{Devices, OnDevice};
use gpu_kernels::Device;
use proptest::prelude::*;

fn small(subscriptions: usize, seed: u64) -> Workload {
    Workload::new(
        Params {
            events: 5,
            subscriptions,
            filters_per_subscription: 3,
            names: 8,
            area_percent: 20.0,
            selectivity_percent: 50.0,
            ..Params::default()
        },
        seed,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn the_matcher_over_devices_answers_as_one_device(
        seed in any::<u64>(),
        subscriptions in 1usize..40,
        devices in 2usize..=4,
        grid in any::<bool>(),
    ) {
        let w = small(subscriptions, seed);
        let subs = w.subscriptions();
        let events = w.events();
        let mut one = Engine::new(Device::emulator(), &subs, Options::default()).unwrap();
        let mut multi =
            MultiEngine::new(Devices::emulated(devices).unwrap(), &subs, Options::default()).unwrap();
        one.set_grid(grid).unwrap();
        multi.set_grid(grid).unwrap();
        prop_assert_eq!(multi.runs().iter().map(|r| r.len()).sum::<usize>(), subs.len());
        for e in &events {
            prop_assert_eq!(multi.match_event(e).unwrap(), one.match_event(e).unwrap());
        }
        for u in w.updates(10, subs.filter_count()) {
            multi.move_area(&u).unwrap();
            one.move_area(&u).unwrap();
        }
        let want = one.match_batch(&events).unwrap();
        prop_assert_eq!(multi.match_batch(&events).unwrap(), want);
    }
}

#[test]
fn matches_are_found_and_moves_reach_the_device_holding_the_filter() {
    let w = small(30, 9);
    let subs = w.subscriptions();
    let events = w.events();
    let mut one = Engine::new(Device::emulator(), &subs, Options::default()).unwrap();
    let mut multi =
        MultiEngine::new(Devices::emulated(3).unwrap(), &subs, Options::default()).unwrap();
    let before = one.match_batch(&events).unwrap();
    assert!(before.iter().any(|a| !a.is_empty()), "nothing matched");
    assert_eq!(multi.match_batch(&events).unwrap(), before);
    // Move the areas of the last device's first filter's subscription far away.
    let last = multi.runs()[2].start;
    let f = subs.filter_start(last);
    let away = AreaUpdate {
        filter: f,
        area: Area::circle(-1e9, -1e9, 1.0).unwrap(),
    };
    multi.move_area(&away).unwrap();
    one.move_area(&away).unwrap();
    assert_eq!(
        multi.match_batch(&events).unwrap(),
        one.match_batch(&events).unwrap()
    );
    let beyond = AreaUpdate {
        filter: FilterId(subs.filter_count() as u32),
        area: Area::circle(0.0, 0.0, 1.0).unwrap(),
    };
    assert!(matches!(
        multi.move_area(&beyond),
        Err(OnDevice::Failed {
            ordinal: 2,
            error: EngineError::Model(_)
        })
    ));
}
