//! Today's strong DDM matchers (Marzolla & D'Angelo's parallel SBM and ITM) against
//! the existing baselines (brute force and the sort-based sweep, one thread) on random
//! 1-D, 2-D and 3-D regions with touching, equal, nested and zero-width ranges, on 1 to
//! 4 threads, counting and enumerating. (The hand-made touching and zero-width case
//! runs every matcher, these included, in `ddm_baselines.rs`.)

use baselines::ddm::{Algorithm, DdmMatcher};
use ddm_region::model::{Kind, Pair, Range, RegionSet};
use ddm_region::workload::{scale_up, Distribution, ScaleUpParams, Scenario, ScenarioParams};
use proptest::prelude::*;

/// Regions with coordinates on a coarse lattice (`step` apart) so that end points touch
/// and coincide often; widths `0..=max_width` lattice steps.
fn set(
    dims: std::ops::RangeInclusive<usize>,
    max_coord: u32,
    max_width: u32,
    step: u32,
    max_regions: usize,
) -> impl Strategy<Value = RegionSet> {
    dims.prop_flat_map(move |dims| {
        let region = prop::collection::vec((0..max_coord, 0..=max_width), dims);
        (
            Just(dims),
            prop::collection::vec(region.clone(), 0..max_regions),
            prop::collection::vec(region, 0..max_regions),
        )
            .prop_map(move |(dims, pubs, subs)| {
                let mut set = RegionSet::new(dims).unwrap();
                for (kind, list) in [(Kind::Publication, pubs), (Kind::Subscription, subs)] {
                    for (i, r) in list.into_iter().enumerate() {
                        let ranges: Vec<Range> = r
                            .into_iter()
                            .map(|(lo, w)| Range {
                                lo: lo * step,
                                hi: (lo + w) * step,
                            })
                            .collect();
                        set.push(kind, i as u64, &ranges).unwrap();
                    }
                }
                set
            })
    })
}

fn strong(threads: usize) -> [DdmMatcher; 3] {
    [
        DdmMatcher::new(Algorithm::Sbm, threads),
        DdmMatcher::new(Algorithm::Itm, threads),
        DdmMatcher::new(Algorithm::Bisect, threads),
    ]
}

/// Checks every strong matcher on 1..=4 threads against `want`.
fn agree(set: &RegionSet, want: &[Pair]) -> Result<(), TestCaseError> {
    for threads in 1..=4 {
        for m in strong(threads) {
            let name = format!("{} on {threads} threads", m.name());
            prop_assert_eq!(m.pairs(set), want.to_vec(), "{} pairs", &name);
            prop_assert_eq!(m.count(set), want.len() as u64, "{} count", &name);
            prop_assert_eq!(
                m.pairs_unordered(set).len(),
                want.len(),
                "{} unordered",
                &name
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, ..ProptestConfig::default() })]

    #[test]
    fn sbm_itm_and_bisect_match_brute_force_in_1_to_3_dims_with_touching_end_points(
        set in set(1..=3, 12, 4, 1, 50)
    ) {
        let want = DdmMatcher::new(Algorithm::Brute, 1).pairs(&set);
        agree(&set, &want)?;
    }

    #[test]
    fn strong_matchers_match_the_sort_baseline_on_larger_sets(
        set in set(1..=3, 400, 12, 5, 400)
    ) {
        let want = DdmMatcher::new(Algorithm::Sort, 1).pairs(&set);
        agree(&set, &want)?;
    }

    /// Long ranges: large active sets (SBM drops expired members in bulk) and subtrees
    /// wholly inside a query (ITM scans them).
    #[test]
    fn strong_matchers_match_the_sort_baseline_with_long_ranges(
        set in set(1..=3, 60, 60, 1, 300)
    ) {
        let want = DdmMatcher::new(Algorithm::Sort, 1).pairs(&set);
        agree(&set, &want)?;
    }

    #[test]
    fn strong_matchers_match_the_sort_baseline_on_wide_coordinates(
        set in set(1..=3, u32::MAX / 4, 1 << 28, 1, 120)
    ) {
        let want = DdmMatcher::new(Algorithm::Sort, 1).pairs(&set);
        agree(&set, &want)?;
    }
}

#[test]
fn empty_and_one_sided_sets_have_no_pairs() {
    let mut set = RegionSet::new(2).unwrap();
    for threads in [1, 3] {
        for m in strong(threads) {
            assert_eq!(m.count(&set), 0);
            assert!(m.pairs(&set).is_empty());
        }
    }
    let r = [Range { lo: 0, hi: 5 }; 2];
    set.push(Kind::Publication, 0, &r).unwrap();
    for threads in [1, 3] {
        for m in strong(threads) {
            assert_eq!(m.count(&set), 0);
            assert!(m.pairs(&set).is_empty());
        }
    }
}

/// The experiments' workloads at a few thousand regions: the paper's scenarios (uniform
/// and crowded) and the scale-up, on 1 and 4 threads, against the sort baseline.
#[test]
fn strong_matchers_agree_with_sort_on_the_experiments_workloads() {
    let mut sets = Vec::new();
    for (dist, size) in [(Distribution::Uniform, 100), (Distribution::Crowded, 10)] {
        sets.push(
            Scenario::new(ScenarioParams::paper(4096, size, dist), 7)
                .unwrap()
                .regions()
                .clone(),
        );
    }
    for alpha in [1.0, 100.0] {
        sets.push(
            scale_up(
                &ScaleUpParams {
                    regions: 8192,
                    alpha,
                    dims: 2,
                },
                7,
            )
            .unwrap(),
        );
    }
    let mut found = 0;
    for set in &sets {
        let want = DdmMatcher::new(Algorithm::Sort, 1).pairs(set);
        found += want.len();
        for threads in [1, 4] {
            for m in strong(threads) {
                assert_eq!(m.pairs(set), want, "{} x{threads}", m.name());
                assert_eq!(m.count(set), want.len() as u64, "{} x{threads}", m.name());
            }
        }
    }
    assert!(found > 1000, "the workloads have pairs to find");
}
