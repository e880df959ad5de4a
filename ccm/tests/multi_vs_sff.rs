//! The pruning index partitioned over 2, 3 and 4 emulated devices ([`ccm::MultiIndex`])
//! against the SFF-like baseline and the one-device index ([`ccm::GpuIndex`]) on random
//! workloads, cut by interface, by filter and by event: the merge gives each event's
//! interfaces ascending, exactly once, whether an interface lies on one device or on
//! several, and whichever device matched the event.

use baselines::sff::Sff;
use baselines::Matcher;
use ccm::workload::{generate, generate_dense, DenseParams, NameDist, Params, Workload};
use ccm::{GpuIndex, IndexConfig, InterfaceId, MultiAnswers, MultiIndex, Partition};
use gpu_kernels::multi::Devices;
use gpu_kernels::Device;
use proptest::prelude::*;

/// Small launches and blocks: the emulator runs every lane.
fn cfg() -> IndexConfig {
    IndexConfig {
        batch_events: 5,
        route_block: 32,
        dense_block: 32,
        ..IndexConfig::default()
    }
}

/// SFF's answers and the one-device index's, which must agree; returns them.
fn reference(w: &Workload) -> Vec<Vec<InterfaceId>> {
    let sff = Sff::build(&w.subscriptions).unwrap();
    let want: Vec<_> = w.events.iter().map(|e| sff.match_event(e)).collect();
    let dev = Device::emulator();
    let one = GpuIndex::new(&dev, &w.subscriptions, cfg())
        .unwrap()
        .match_batch(&w.batch)
        .unwrap()
        .to_vecs();
    assert_eq!(one, want, "the one-device index disagrees with SFF");
    want
}

fn assert_answers(got: &MultiAnswers, want: &[Vec<InterfaceId>], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: events answered");
    for (i, w) in want.iter().enumerate() {
        assert_eq!(&got.to_vec(i), w, "{what}: event {i}");
        assert_eq!(got.count(i), w.len(), "{what}: event {i}'s count");
    }
    assert_eq!(
        got.total(),
        want.iter().map(Vec::len).sum::<usize>(),
        "{what}: total"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, ..ProptestConfig::default() })]

    /// Table 1's model, random sizes and seeds, on 2 to 4 devices.
    #[test]
    fn partitioned_index_equals_sff_and_the_one_device_index(
        seed in 0u64..1000,
        devices in 2usize..=4,
        interfaces in 1usize..9,
        names in 3usize..12,
        zipf in any::<bool>(),
        cut in 0usize..3,
    ) {
        let p = Params {
            events: 10,
            interfaces,
            filters_per_interface: (1, 12),
            constraints_per_filter: (1, 3),
            attrs_per_event: (2, 6),
            names,
            values: 4,
            name_dist: if zipf { NameDist::Zipf(1.0) } else { NameDist::Uniform },
            ..Params::default()
        };
        let w = generate(&p, seed).unwrap();
        let want = reference(&w);
        let devs = Devices::emulated(devices).unwrap();
        let partition = [Partition::Interfaces, Partition::Filters, Partition::Events][cut];
        let mut index = MultiIndex::with_partition(&devs, &w.subscriptions, cfg(), partition).unwrap();
        if partition == Partition::Interfaces {
            prop_assert_eq!(index.interfaces_per_device().iter().sum::<usize>(), interfaces);
        }
        let copies = if partition == Partition::Events { devices } else { 1 };
        prop_assert_eq!(
            index.filters_per_device().iter().sum::<usize>(),
            copies * w.subscriptions.len()
        );
        let got = index.match_batch(&w.batch).unwrap();
        assert_answers(&got, &want, &format!("{devices} devices by {partition:?}, seed {seed}"));
    }
}

#[test]
fn dense_model_one_interface_per_filter_and_ten_on_two_three_and_four_devices() {
    for interfaces in [None, Some(10)] {
        let p = DenseParams {
            events: 8,
            filters: 200,
            interfaces,
            names_per_event: (3, 8),
            ..DenseParams::default()
        };
        let w = generate_dense(&p, 11).unwrap();
        let want = reference(&w);
        assert!(want.iter().any(|a| !a.is_empty()), "nothing matched");
        for n in [2, 3, 4] {
            let devs = Devices::emulated(n).unwrap();
            let mut index = MultiIndex::new(&devs, &w.subscriptions, cfg()).unwrap();
            let got = index.match_batch(&w.batch).unwrap();
            assert_answers(
                &got,
                &want,
                &format!("{interfaces:?} interfaces, {n} devices"),
            );
        }
    }
}

#[test]
fn filters_are_balanced_within_one_interface_and_no_interface_is_split() {
    let p = Params {
        events: 4,
        interfaces: 12,
        filters_per_interface: (10, 30),
        names: 6,
        values: 4,
        ..Params::default()
    };
    let w = generate(&p, 3).unwrap();
    let devs = Devices::emulated(4).unwrap();
    let index = MultiIndex::new(&devs, &w.subscriptions, cfg()).unwrap();
    let filters = index.filters_per_device();
    assert_eq!(filters.len(), 4);
    assert_eq!(filters.iter().sum::<usize>(), w.subscriptions.len());
    let share = w.subscriptions.len().div_ceil(4);
    assert!(
        filters.iter().all(|&f| f <= share + 30),
        "{filters:?} (share {share})"
    );
    assert!(index.device_bytes().iter().all(|&b| b > 0));
    // By filter: equal counts to within one filter, the border interfaces shared.
    let index =
        MultiIndex::with_partition(&devs, &w.subscriptions, cfg(), Partition::Filters).unwrap();
    let filters = index.filters_per_device();
    assert!(
        filters.iter().max().unwrap() - filters.iter().min().unwrap() <= 1,
        "{filters:?}"
    );
    assert!(index.interfaces_per_device().iter().sum::<usize>() > 12);
}

#[test]
fn one_interface_cut_by_filter_over_three_devices_is_answered_once() {
    let p = Params {
        events: 10,
        interfaces: 1,
        filters_per_interface: (30, 40),
        names: 4,
        values: 3,
        ..Params::default()
    };
    let w = generate(&p, 2).unwrap();
    let want = reference(&w);
    assert!(want.iter().any(|a| !a.is_empty()), "nothing matched");
    let devs = Devices::emulated(3).unwrap();
    let mut index =
        MultiIndex::with_partition(&devs, &w.subscriptions, cfg(), Partition::Filters).unwrap();
    assert_eq!(index.interfaces_per_device(), [1, 1, 1]);
    assert_answers(
        &index.match_batch(&w.batch).unwrap(),
        &want,
        "one shared interface",
    );
}

#[test]
fn fewer_interfaces_than_devices_leaves_devices_idle_and_answers_right() {
    let p = Params {
        events: 8,
        interfaces: 1,
        filters_per_interface: (20, 30),
        names: 4,
        values: 3,
        ..Params::default()
    };
    let w = generate(&p, 9).unwrap();
    let want = reference(&w);
    let devs = Devices::emulated(3).unwrap();
    let mut index = MultiIndex::new(&devs, &w.subscriptions, cfg()).unwrap();
    assert_eq!(
        index
            .interfaces_per_device()
            .iter()
            .filter(|&&n| n > 0)
            .count(),
        1
    );
    assert_answers(
        &index.match_batch(&w.batch).unwrap(),
        &want,
        "one interface",
    );
    // No subscriptions at all: every event matches nothing.
    let mut empty = MultiIndex::new(&devs, &[], cfg()).unwrap();
    let got = empty.match_batch(&w.batch).unwrap();
    assert_answers(&got, &vec![Vec::new(); w.events.len()], "no subscriptions");
}

#[test]
fn answers_matched_into_again_are_the_new_batchs() {
    let p = Params {
        events: 12,
        interfaces: 6,
        filters_per_interface: (5, 15),
        names: 5,
        values: 3,
        ..Params::default()
    };
    let w = generate(&p, 21).unwrap();
    let want = reference(&w);
    let devs = Devices::emulated(2).unwrap();
    let mut index = MultiIndex::new(&devs, &w.subscriptions, cfg()).unwrap();
    let mut out = MultiAnswers::default();
    for n in [3, w.events.len(), 0, 4] {
        index.match_range_into(&w.batch, 0..n, &mut out).unwrap();
        assert_answers(&out, &want[..n], &format!("{n} events"));
    }
}

#[test]
fn cut_by_event_every_device_holds_every_filter_and_runs_may_be_empty() {
    let p = Params {
        events: 9,
        interfaces: 5,
        filters_per_interface: (3, 8),
        names: 5,
        values: 3,
        ..Params::default()
    };
    let w = generate(&p, 4).unwrap();
    let want = reference(&w);
    assert!(want.iter().any(|a| !a.is_empty()), "nothing matched");
    let devs = Devices::emulated(4).unwrap();
    let mut index =
        MultiIndex::with_partition(&devs, &w.subscriptions, cfg(), Partition::Events).unwrap();
    assert_eq!(index.filters_per_device(), [w.subscriptions.len(); 4]);
    assert_eq!(index.interfaces_per_device(), [5; 4]);
    // Nine events on four devices (runs of 3, 2, 2, 2), then two (two runs empty),
    // into the same answers: the runs of the last batch decide.
    let mut got = MultiAnswers::default();
    index.match_batch_into(&w.batch, &mut got).unwrap();
    assert_answers(&got, &want, "nine events");
    index.match_range_into(&w.batch, 4..6, &mut got).unwrap();
    assert_answers(&got, &want[4..6], "two events on four devices");
}
