//! Acceptance test: the `ddm-region` emulator engines (region, grid, sweep)
//! and every CPU baseline agree on random regions in 1 to 4 dimensions, touching and
//! zero-width ranges included, over sequences of updates (moves, removals, additions).

use baselines::ddm::{Algorithm, DdmMatcher};
use ddm_region::model::{Kind, Pair, Range, RegionSet, UpdateBatch};
use ddm_region::{Approach, Device, Engine, GridSpec};
use proptest::prelude::*;

type Slots = Vec<Option<Vec<Range>>>;

/// The live regions as a compact set, with each compact index's slot index.
fn compact(dims: usize, pubs: &Slots, subs: &Slots) -> (RegionSet, Vec<u32>, Vec<u32>) {
    let mut set = RegionSet::new(dims).unwrap();
    let mut maps = [Vec::new(), Vec::new()];
    for (k, (kind, list)) in [(Kind::Publication, pubs), (Kind::Subscription, subs)]
        .into_iter()
        .enumerate()
    {
        for (i, r) in list.iter().enumerate() {
            if let Some(r) = r {
                set.push(kind, i as u64, r).unwrap();
                maps[k].push(i as u32);
            }
        }
    }
    let [mp, ms] = maps;
    (set, mp, ms)
}

fn region(dims: usize) -> impl Strategy<Value = Vec<Range>> {
    prop::collection::vec((0u32..20, 0u32..5), dims).prop_map(|v| {
        v.into_iter()
            .map(|(lo, w)| Range { lo, hi: lo + w })
            .collect()
    })
}

type Step = Vec<(bool, prop::sample::Index, Option<Vec<Range>>)>;

fn case() -> impl Strategy<Value = (usize, Slots, Slots, Vec<Step>)> {
    (1usize..=4).prop_flat_map(|dims| {
        let slot = move || prop::option::weighted(0.8, region(dims));
        let change = (
            any::<bool>(),
            any::<prop::sample::Index>(),
            prop::option::weighted(0.8, region(dims)),
        );
        (
            Just(dims),
            prop::collection::vec(slot(), 1..30),
            prop::collection::vec(slot(), 1..30),
            prop::collection::vec(prop::collection::vec(change, 0..20), 1..4),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn emu_engines_equal_all_baselines_over_update_sequences((dims, mut pubs, mut subs, steps) in case()) {
        let dev = Device::emulator();
        let grid = GridSpec::new(vec![0; dims], vec![3; dims], vec![6; dims]).unwrap();
        let mut engines: Vec<Engine> = [Approach::Region, Approach::Grid(grid), Approach::Sweep, Approach::Bisect]
            .into_iter()
            .map(|a| Engine::new(&dev, a, dims, pubs.len() as u32, subs.len() as u32).unwrap())
            .collect();
        let baselines: Vec<DdmMatcher> = [Algorithm::Brute, Algorithm::Grid { cell: None }, Algorithm::Sort]
            .into_iter()
            .flat_map(|a| [DdmMatcher::new(a.clone(), 1), DdmMatcher::new(a, 2)])
            .collect();
        let mut batch = UpdateBatch::default();
        for (kind, list) in [(Kind::Publication, &pubs), (Kind::Subscription, &subs)] {
            for (i, r) in list.iter().enumerate() {
                if let Some(r) = r {
                    batch.set(kind, i as u32, r);
                }
            }
        }
        let mut step_no = 0;
        loop {
            for e in engines.iter_mut() {
                e.step(&batch, false).unwrap();
            }
            let (set, mp, ms) = compact(dims, &pubs, &subs);
            let reference = baselines[0].pairs(&set);
            for b in &baselines {
                prop_assert_eq!(b.pairs(&set), reference.clone(), "{} vs brute", b.name());
                prop_assert_eq!(b.count(&set), reference.len() as u64, "{} count", b.name());
            }
            let mut want: Vec<Pair> = reference
                .iter()
                .map(|p| Pair { publication: mp[p.publication as usize], subscription: ms[p.subscription as usize] })
                .collect();
            want.sort_unstable();
            for e in engines.iter_mut() {
                prop_assert_eq!(e.pairs().unwrap(), want.clone(), "emu-{} step {}", e.approach().name(), step_no);
                prop_assert_eq!(e.count().unwrap(), want.len() as u64, "emu-{} count", e.approach().name());
            }
            if step_no == steps.len() {
                break;
            }
            batch = UpdateBatch::default();
            for (sub, i, r) in &steps[step_no] {
                let (kind, list) = if *sub { (Kind::Subscription, &mut subs) } else { (Kind::Publication, &mut pubs) };
                let i = i.index(list.len());
                match r {
                    Some(r) => batch.set(kind, i as u32, r),
                    None => batch.remove(kind, i as u32),
                }
                list[i] = r.clone();
            }
            step_no += 1;
        }
    }
}
