//! Region matching with the publications partitioned over 2 to 4 emulated devices
//! ([`ddm_region::MultiEngine`]) against the one-device engine, step by step, on random
//! regions moved, removed and re-added: counts summed, pairs in the one-device order,
//! the step's new pairs in global publication indices; and with the space cut into slabs
//! ([`ddm_region::SlabEngine`]) against the CPU's brute force.

use baselines::ddm::{Algorithm, DdmMatcher};
use ddm_region::workload::{Distribution, Scenario, ScenarioParams};
use ddm_region::{
    Approach, Device, Engine, Kind, MultiEngine, Range, RegionSet, SlabEngine, UpdateBatch,
};
use gpu_kernels::multi::Devices;
use proptest::prelude::*;

fn region(dims: usize) -> impl Strategy<Value = Vec<Range>> {
    prop::collection::vec((0u32..24, 0u32..6), dims).prop_map(|v| {
        v.into_iter()
            .map(|(lo, w)| Range { lo, hi: lo + w })
            .collect()
    })
}

/// (dims, publications, subscriptions, steps of (is a subscription, index, new ranges
/// or `None` to remove)).
type Case = (
    usize,
    Vec<Vec<Range>>,
    Vec<Vec<Range>>,
    Vec<Vec<(bool, usize, Option<Vec<Range>>)>>,
);

fn case() -> impl Strategy<Value = Case> {
    (1usize..=3, 1usize..30, 1usize..30).prop_flat_map(|(dims, np, ns)| {
        let change = (
            any::<bool>(),
            any::<prop::sample::Index>(),
            prop::option::weighted(0.8, region(dims)),
        )
            .prop_map(move |(sub, i, r)| (sub, i.index(if sub { ns } else { np }), r));
        (
            Just(dims),
            prop::collection::vec(region(dims), np),
            prop::collection::vec(region(dims), ns),
            prop::collection::vec(prop::collection::vec(change, 0..12), 1..3),
        )
    })
}

fn set_of(dims: usize, pubs: &[Vec<Range>], subs: &[Vec<Range>]) -> RegionSet {
    let mut set = RegionSet::new(dims).unwrap();
    for (i, r) in pubs.iter().enumerate() {
        set.push(Kind::Publication, 100 + i as u64, r).unwrap();
    }
    for (i, r) in subs.iter().enumerate() {
        set.push(Kind::Subscription, 500 + i as u64, r).unwrap();
    }
    set
}

/// Both engines step through the case; after each step their counts, pairs and step
/// reports agree.
fn agree(case: &Case, approach: Approach, devices: usize) {
    let (dims, pubs, subs, steps) = case;
    let set = set_of(*dims, pubs, subs);
    let dev = Device::emulator();
    let mut one = Engine::with_regions(&dev, approach.clone(), &set).unwrap();
    let devs = Devices::emulated(devices).unwrap();
    let mut multi = MultiEngine::with_regions(&devs, approach.clone(), &set).unwrap();
    let what = format!("{} on {devices} devices", approach.name());
    assert_eq!(
        multi.count().unwrap(),
        one.count().unwrap(),
        "{what}: count"
    );
    assert_eq!(
        multi.pairs().unwrap(),
        one.pairs().unwrap(),
        "{what}: pairs"
    );
    for step in steps {
        let mut batch = UpdateBatch::default();
        for (sub, i, r) in step {
            let kind = if *sub {
                Kind::Subscription
            } else {
                Kind::Publication
            };
            match r {
                Some(r) => batch.set(kind, *i as u32, r),
                None => batch.remove(kind, *i as u32),
            }
        }
        let want = one.step(&batch, true).unwrap();
        let got = multi.step(&batch, true).unwrap();
        assert_eq!(got.overlaps, want.overlaps, "{what}: step overlaps");
        if !approach.sorts() {
            let (mut g, mut w) = (got.pairs.unwrap(), want.pairs.unwrap());
            g.sort_unstable();
            w.sort_unstable();
            assert_eq!(g, w, "{what}: the step's pairs");
        }
        assert_eq!(
            multi.count().unwrap(),
            one.count().unwrap(),
            "{what}: count"
        );
        assert_eq!(
            multi.pairs().unwrap(),
            one.pairs().unwrap(),
            "{what}: pairs"
        );
    }
}

proptest! {
    // The sweep sorts on the device: many launches per step on the emulator.
    #![proptest_config(ProptestConfig { cases: 3, ..ProptestConfig::default() })]

    #[test]
    fn partitioned_sweep_equals_the_one_device_sweep(c in case(), devices in 2usize..=4) {
        agree(&c, Approach::Sweep, devices);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn partitioned_region_approach_equals_the_one_device_engine(c in case(), devices in 2usize..=4) {
        agree(&c, Approach::Region, devices);
    }
}

#[test]
fn fewer_publications_than_devices_leave_devices_idle() {
    let case: Case = (
        1,
        vec![vec![Range { lo: 0, hi: 10 }]],
        vec![vec![Range { lo: 5, hi: 6 }], vec![Range { lo: 20, hi: 30 }]],
        vec![vec![(true, 1, Some(vec![Range { lo: 9, hi: 12 }]))]],
    );
    agree(&case, Approach::Bisect, 3);
}

#[test]
fn a_loaded_scenario_counts_as_on_one_device() {
    let scenario =
        Scenario::new(ScenarioParams::paper(100, 1000, Distribution::Uniform), 4).unwrap();
    let set = scenario.regions();
    let dev = Device::emulator();
    let mut one =
        Engine::new(&dev, Approach::Bisect, set.dims(), set.n_pub(), set.n_sub()).unwrap();
    one.load(set).unwrap();
    let devs = Devices::emulated(3).unwrap();
    let mut multi = MultiEngine::new(
        &devs,
        Approach::Bisect,
        set.dims(),
        set.n_pub(),
        set.n_sub(),
    )
    .unwrap();
    let held: u32 = multi
        .publications_per_device()
        .iter()
        .map(|r| r.len() as u32)
        .sum();
    assert_eq!(held, set.n_pub());
    multi.load(set).unwrap();
    let want = one.count().unwrap();
    assert!(want > 0, "no overlaps in the scenario");
    assert_eq!(multi.count().unwrap(), want);
    assert_eq!(multi.pairs().unwrap(), one.pairs().unwrap());
}

/// The slab engine ([`SlabEngine`]) on `devices` emulated devices counts and lists the
/// pairs the CPU's brute force finds (ranges narrow and wide, zero-width ones
/// included, so that regions straddle the cuts and pairs begin on either side of them).
fn slabs_agree(
    dims: usize,
    pubs: &[Vec<Range>],
    subs: &[Vec<Range>],
    approach: Approach,
    devices: usize,
) {
    let set = set_of(dims, pubs, subs);
    let cpu = DdmMatcher::new(Algorithm::Brute, 1);
    let devs = Devices::emulated(devices).unwrap();
    let mut slabs = SlabEngine::with_regions(&devs, approach.clone(), &set).unwrap();
    let what = format!(
        "{} in slabs on {devices} devices, cuts {:?}",
        approach.name(),
        slabs.cuts()
    );
    assert_eq!(slabs.count().unwrap(), cpu.count(&set), "{what}: count");
    assert_eq!(slabs.pairs().unwrap(), cpu.pairs(&set), "{what}: pairs");
}

fn wide_region(dims: usize) -> impl Strategy<Value = Vec<Range>> {
    prop::collection::vec((0u32..40, prop_oneof![0u32..4, 0u32..30]), dims).prop_map(|v| {
        v.into_iter()
            .map(|(lo, w)| Range { lo, hi: lo + w })
            .collect()
    })
}

proptest! {
    // The sorting engines sort on the device: many launches per set on the emulator.
    #![proptest_config(ProptestConfig { cases: 4, ..ProptestConfig::default() })]

    #[test]
    fn slabs_of_the_sweep_equal_the_cpu(
        (dims, pubs, subs) in (1usize..=3).prop_flat_map(|d| (
            Just(d),
            prop::collection::vec(wide_region(d), 1..40),
            prop::collection::vec(wide_region(d), 1..40),
        )),
        devices in 2usize..=4,
    ) {
        slabs_agree(dims, &pubs, &subs, Approach::Sweep, devices);
    }
}

#[test]
fn slab_cuts_split_pairs_that_begin_on_either_side_once() {
    // Long publications cross every cut; the subscriptions begin in each slab, and one
    // has zero width at a coordinate that can become a cut.
    let pubs: Vec<Vec<Range>> = (0..12)
        .map(|i| {
            vec![Range {
                lo: i * 10,
                hi: i * 10 + 55,
            }]
        })
        .collect();
    let mut subs: Vec<Vec<Range>> = (0..12)
        .map(|i| {
            vec![Range {
                lo: i * 10 + 3,
                hi: i * 10 + 8,
            }]
        })
        .collect();
    subs.push(vec![Range { lo: 60, hi: 60 }]);
    for devices in [2, 3, 4] {
        slabs_agree(1, &pubs, &subs, Approach::Bisect, devices);
    }
}
