//! The CPU DDM matchers (brute force, grid, sort-based; one thread and several) against
//! a trivial nested-loop oracle on random regions in 1 to 4 dimensions, with equal,
//! touching, nested and zero-width ranges.

use baselines::ddm::{Algorithm, DdmMatcher};
use ddm_region::model::{Kind, Pair, Range, RegionSet};
use proptest::prelude::*;

fn oracle(set: &RegionSet) -> Vec<Pair> {
    let mut out = Vec::new();
    for p in 0..set.n_pub() {
        for s in 0..set.n_sub() {
            let (a, b) = (
                set.region(Kind::Publication, p),
                set.region(Kind::Subscription, s),
            );
            if a.iter().zip(b).all(|(x, y)| x.lo < y.hi && y.lo < x.hi) {
                out.push(Pair {
                    publication: p,
                    subscription: s,
                });
            }
        }
    }
    out
}

fn set(max_coord: u32, max_width: u32) -> impl Strategy<Value = RegionSet> {
    (1usize..=4).prop_flat_map(move |dims| {
        let region = prop::collection::vec((0..max_coord, 0..=max_width), dims);
        (
            Just(dims),
            prop::collection::vec(region.clone(), 0..60),
            prop::collection::vec(region, 0..60),
        )
            .prop_map(|(dims, pubs, subs)| {
                let mut set = RegionSet::new(dims).unwrap();
                for (kind, list) in [(Kind::Publication, pubs), (Kind::Subscription, subs)] {
                    for (i, r) in list.into_iter().enumerate() {
                        let ranges: Vec<Range> = r
                            .into_iter()
                            .map(|(lo, w)| Range { lo, hi: lo + w })
                            .collect();
                        set.push(kind, i as u64, &ranges).unwrap();
                    }
                }
                set
            })
    })
}

/// Every matcher, one thread and three; `small_cells` adds a grid of 3-wide cells
/// (only sensible for small coordinates: a grid's cost grows with the cells a region covers).
fn matchers(small_cells: bool) -> Vec<DdmMatcher> {
    let mut v = Vec::new();
    for threads in [1, 3] {
        v.push(DdmMatcher::new(Algorithm::Brute, threads));
        v.push(DdmMatcher::new(Algorithm::Grid { cell: None }, threads));
        if small_cells {
            v.push(DdmMatcher::new(
                Algorithm::Grid {
                    cell: Some(vec![3]),
                },
                threads,
            ));
        }
        v.push(DdmMatcher::new(Algorithm::Sort, threads));
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn every_matcher_counts_and_enumerates_like_the_oracle_on_small_coordinates(set in set(16, 5)) {
        let want = oracle(&set);
        for m in matchers(true) {
            prop_assert_eq!(m.pairs(&set), want.clone(), "{} pairs", m.name());
            prop_assert_eq!(m.count(&set), want.len() as u64, "{} count", m.name());
        }
    }

    #[test]
    fn every_matcher_agrees_with_the_oracle_on_wide_coordinates(set in set(u32::MAX / 2, 1 << 30)) {
        let want = oracle(&set);
        for m in matchers(false) {
            prop_assert_eq!(m.pairs(&set), want.clone(), "{} pairs", m.name());
        }
    }
}

#[test]
fn touching_ranges_do_not_overlap_and_zero_width_ranges_overlap_only_strictly_inside() {
    let mut set = RegionSet::new(1).unwrap();
    let r = |lo, hi| [Range { lo, hi }];
    set.push(Kind::Publication, 0, &r(0, 10)).unwrap();
    set.push(Kind::Publication, 1, &r(5, 5)).unwrap();
    set.push(Kind::Subscription, 0, &r(10, 20)).unwrap(); // touches p0
    set.push(Kind::Subscription, 1, &r(5, 5)).unwrap(); // inside p0; equal point to p1
    set.push(Kind::Subscription, 2, &r(0, 0)).unwrap(); // p0's lower bound
    set.push(Kind::Subscription, 3, &r(4, 6)).unwrap(); // overlaps p0, contains p1
    let want: Vec<Pair> = [(0, 1), (0, 3), (1, 3)]
        .iter()
        .map(|&(p, s)| Pair {
            publication: p,
            subscription: s,
        })
        .collect();
    // The baselines, then today's strong matchers (SBM, ITM, bisect) on 1 to 4 threads.
    let strong = (1..=4).flat_map(|threads| {
        [Algorithm::Sbm, Algorithm::Itm, Algorithm::Bisect].map(|a| DdmMatcher::new(a, threads))
    });
    for m in matchers(true).into_iter().chain(strong) {
        let who = format!("{} x{}", m.name(), m.threads);
        assert_eq!(m.pairs(&set), want, "{who}");
        assert_eq!(m.count(&set), 3, "{who}");
    }
}

#[test]
fn empty_sets_and_one_sided_sets_have_no_pairs() {
    let mut set = RegionSet::new(3).unwrap();
    for m in matchers(true) {
        assert_eq!(m.count(&set), 0);
    }
    set.push(Kind::Publication, 0, &[Range { lo: 0, hi: 5 }; 3])
        .unwrap();
    for m in matchers(true) {
        assert!(m.pairs(&set).is_empty(), "{}", m.name());
    }
}

/// A set of `dims`-dimensional cubes `[lo, hi)` in every dimension.
fn cubes(dims: usize, pubs: &[(u32, u32)], subs: &[(u32, u32)]) -> RegionSet {
    let mut set = RegionSet::new(dims).unwrap();
    for (kind, list) in [(Kind::Publication, pubs), (Kind::Subscription, subs)] {
        for (i, &(lo, hi)) in list.iter().enumerate() {
            set.push(kind, i as u64, &vec![Range { lo, hi }; dims])
                .unwrap();
        }
    }
    set
}

#[test]
fn grid_baseline_answers_right_on_extreme_coordinates_and_tiny_cells() {
    // fuzz/regressions/ddm_diff-1.bin: in 3 dimensions, one region near 0 and one at
    // u32::MAX made about 2^32 cells of the mean side (1) per dimension, whose product
    // overflowed u64 in `shape` (a panic with overflow checks, a wrapped count without).
    let mut regression = RegionSet::new(3).unwrap();
    let r = |lo, hi| Range { lo, hi };
    regression
        .push(Kind::Publication, 0, &[r(12, 12), r(10, 13), r(1, 1)])
        .unwrap();
    regression
        .push(Kind::Subscription, 0, &[r(u32::MAX, u32::MAX); 3])
        .unwrap();
    let max = u32::MAX;
    let sets = [
        regression,
        // Overlaps near 0, near u32::MAX and across the whole range.
        cubes(
            3,
            &[(0, max), (max - 4, max), (0, 5), (7, 7), (max - 1, max - 1)],
            &[(max - 2, max), (3, 4), (1, 1), (0, max), (max, max), (6, 8)],
        ),
        // 4 dimensions of span 2^16 with cells of side 1: 2^64 cells, a product of 0.
        cubes(
            4,
            &[(0, 1), (65_535, 65_536), (100, 200)],
            &[(0, 65_536), (65_535, 65_536), (150, 151)],
        ),
    ];
    for set in &sets {
        let want = oracle(set);
        for threads in [1, 2] {
            for cell in [None, Some(vec![1]), Some(vec![1, 3, 1, 7])] {
                let m = DdmMatcher::new(Algorithm::Grid { cell: cell.clone() }, threads);
                assert_eq!(m.pairs(set), want, "{} {cell:?}", m.name());
                assert_eq!(m.count(set), want.len() as u64, "{} {cell:?}", m.name());
            }
        }
    }
}
