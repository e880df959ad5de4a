//! The emulator engines against a trivial oracle (nested loops over the HLA 1516 rule),
//! on random regions in 1 to 4 dimensions with touching and zero-width ranges, over
//! sequences of moves, removals and re-additions. (`baselines/tests/ddm_engines.rs`
//! checks the same engines against the CPU baselines.)

use ddm_region::workload::{Distribution, Scenario, ScenarioParams};
use ddm_region::{
    Approach, Device, Engine, GridSpec, Kind, Pair, Phase1, Range, RegionSet, Slices, UpdateBatch,
};
use proptest::prelude::*;

/// The oracle: every (live publication, live subscription) pair whose ranges satisfy
/// `lo_a < hi_b && lo_b < hi_a` in every dimension.
fn oracle(dims: usize, pubs: &[Option<Vec<Range>>], subs: &[Option<Vec<Range>>]) -> Vec<Pair> {
    let mut out = Vec::new();
    for (p, a) in pubs.iter().enumerate() {
        for (s, b) in subs.iter().enumerate() {
            if let (Some(a), Some(b)) = (a, b) {
                if (0..dims).all(|d| a[d].lo < b[d].hi && b[d].lo < a[d].hi) {
                    out.push(Pair {
                        publication: p as u32,
                        subscription: s as u32,
                    });
                }
            }
        }
    }
    out
}

/// A region of `dims` ranges, each starting below `span` and narrower than `widths`, in
/// units of `scale`.
fn region_in(dims: usize, span: u32, widths: u32, scale: u32) -> impl Strategy<Value = Vec<Range>> {
    prop::collection::vec((0u32..span, 0u32..widths), dims).prop_map(move |v| {
        v.into_iter()
            .map(|(lo, w)| Range {
                lo: lo * scale,
                hi: (lo + w) * scale,
            })
            .collect()
    })
}

/// One change of a step: (is a subscription, index, new ranges or `None` to remove).
type Change = (bool, usize, Option<Vec<Range>>);

#[derive(Clone, Debug)]
struct Case {
    dims: usize,
    pubs: Vec<Option<Vec<Range>>>,
    subs: Vec<Option<Vec<Range>>>,
    /// Per step: (kind is sub, index, new ranges or removal).
    steps: Vec<Vec<Change>>,
}

fn case() -> impl Strategy<Value = Case> {
    // Small coordinates make touching, nested, equal and zero-width ranges common.
    case_of(1..=4, 40, (24, 6, 1))
}

/// Cases in `dims` dimensions of fewer than `most` regions of each kind, their ranges
/// starting below `span` and narrower than `widths`, in units of `scale`.
fn case_of(
    dims: std::ops::RangeInclusive<usize>,
    most: usize,
    (span, widths, scale): (u32, u32, u32),
) -> impl Strategy<Value = Case> {
    let region = move |dims| region_in(dims, span, widths, scale);
    (dims, 0usize..most, 0usize..most).prop_flat_map(move |(dims, np, ns)| {
        let slot = move || prop::option::weighted(0.85, region(dims));
        let change = move |np: usize, ns: usize| {
            (
                any::<bool>(),
                any::<prop::sample::Index>(),
                prop::option::weighted(0.8, region(dims)),
            )
                .prop_filter_map("kind with no regions", move |(sub, i, r)| {
                    let n = if sub { ns } else { np };
                    (n > 0).then(|| (sub, i.index(n), r))
                })
        };
        (
            Just(dims),
            prop::collection::vec(slot(), np),
            prop::collection::vec(slot(), ns),
            // No region of either kind: no change can name one, so steps are empty
            // (otherwise the filter above rejects every change and proptest aborts).
            prop::collection::vec(
                prop::collection::vec(change(np, ns), 0..if np + ns > 0 { 30 } else { 1 }),
                1..4,
            ),
        )
            .prop_map(|(dims, pubs, subs, steps)| Case {
                dims,
                pubs,
                subs,
                steps,
            })
    })
}

/// A batch that sets every present region (`Some`) of both kinds.
fn setting_every_region(pubs: &[Option<Vec<Range>>], subs: &[Option<Vec<Range>>]) -> UpdateBatch {
    let mut batch = UpdateBatch::default();
    for (kind, list) in [(Kind::Publication, pubs), (Kind::Subscription, subs)] {
        for (i, r) in list.iter().enumerate() {
            if let Some(r) = r {
                batch.set(kind, i as u32, r);
            }
        }
    }
    batch
}

fn run(case: &Case, approach: Approach) {
    run_with(case, approach, Slices::Paper, Phase1::Copy)
}

fn run_with(case: &Case, approach: Approach, slices: Slices, phase1: Phase1) {
    run_tuned(case, approach, |e| {
        e.set_slices(slices);
        e.set_phase1(phase1);
    })
}

/// The update sequence of `case` on an engine that `tune` set up.
fn run_tuned(case: &Case, approach: Approach, tune: impl Fn(&mut Engine)) {
    let dev = Device::emulator();
    let mut pubs = case.pubs.clone();
    let mut subs = case.subs.clone();
    let mut e = Engine::new(
        &dev,
        approach.clone(),
        case.dims,
        pubs.len() as u32,
        subs.len() as u32,
    )
    .unwrap();
    tune(&mut e);
    let first = setting_every_region(&pubs, &subs);
    let check = |e: &mut Engine,
                 report: &ddm_region::StepReport,
                 pubs: &[Option<Vec<Range>>],
                 subs: &[Option<Vec<Range>>],
                 touched: &dyn Fn(&Pair) -> bool| {
        let want = oracle(case.dims, pubs, subs);
        assert_eq!(
            e.count().unwrap(),
            want.len() as u64,
            "{} count",
            approach.name()
        );
        assert_eq!(e.pairs().unwrap(), want, "{} pairs", approach.name());
        if !approach.sorts() {
            assert_eq!(report.overlaps, want.len() as u64);
            let mut got = report.pairs.clone().unwrap();
            got.sort_unstable();
            let want_new: Vec<Pair> = want.iter().copied().filter(|p| touched(p)).collect();
            assert_eq!(got, want_new, "{} Phase 4 pairs", approach.name());
        }
    };
    let report = e.step(&first, true).unwrap();
    check(&mut e, &report, &pubs, &subs, &|_| true);
    for step in &case.steps {
        let mut batch = UpdateBatch::default();
        let mut touched_p = vec![false; pubs.len()];
        let mut touched_s = vec![false; subs.len()];
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
            if *sub {
                subs[*i] = r.clone();
                touched_s[*i] = true;
            } else {
                pubs[*i] = r.clone();
                touched_p[*i] = true;
            }
        }
        let report = e.step(&batch, true).unwrap();
        check(&mut e, &report, &pubs, &subs, &|p| {
            touched_p[p.publication as usize] || touched_s[p.subscription as usize]
        });
    }
}

fn grid_for(case: &Case) -> Approach {
    // Cells of side 4 over [0, 32): many regions span several cells, some lie past the grid.
    Approach::Grid(
        GridSpec::new(vec![2; case.dims], vec![4; case.dims], vec![7; case.dims]).unwrap(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn emu_region_equals_oracle_over_update_sequences(c in case()) {
        run(&c, Approach::Region);
    }

    #[test]
    fn emu_region_sliced_equals_oracle_over_update_sequences(c in case()) {
        // Three slices of the (single) candidate tile: two block rows without candidates;
        // Phase 1 through mapped memory.
        run_with(&c, Approach::Region, Slices::Exactly(3), Phase1::Mapped);
    }

    #[test]
    fn emu_grid_with_mapped_phase_1_equals_oracle_over_update_sequences(c in case()) {
        run_with(&c, grid_for(&c), Slices::Paper, Phase1::Mapped);
    }

    #[test]
    fn emu_grid_equals_oracle_over_update_sequences(c in case()) {
        run(&c, grid_for(&c));
    }

    /// The bisect engine on small sets matches in sorted tiles (`tiled_match`): its
    /// counts and pairs, with removals, in 1-4 dimensions.
    #[test]
    fn emu_bisect_in_tiles_equals_oracle_over_update_sequences(c in case()) {
        run_tuned(&c, Approach::Bisect, |e| assert!(e.matches_in_tiles()));
    }

}

proptest! {
    // The sweep runs ~20 launches per answer; fewer cases keep the emulator under a minute.
    #![proptest_config(ProptestConfig { cases: 10, ..ProptestConfig::default() })]

    #[test]
    #[ignore = "long on the host emulator (seconds to tens of seconds each): .ci/run runs it, with the other ignored tests, after the README's test command"]
    fn emu_sweep_equals_oracle_over_update_sequences(c in case()) {
        run(&c, Approach::Sweep);
    }

    /// Ranges narrow against their space in 2-3 dimensions: the bisect engine sweeps
    /// in strips of a second dimension (each region entered in one or two), with
    /// removals, zero-width and touching ranges.
    #[test]
    #[ignore = "long on the host emulator (seconds to tens of seconds each): .ci/run runs it, with the other ignored tests, after the README's test command"]
    fn emu_bisect_in_strips_equals_oracle_over_update_sequences(c in case_of(2..=3, 60, (120, 12, 1))) {
        run_tuned(&c, Approach::Bisect, |e| {
            e.set_tiled_max(0);
            e.set_strips_from(0);
        });
    }

    /// The same with bounds up to 2^31 (in units of 2^24): the keys hold the sweep
    /// dimension's bounds by quanta, equal quanta and equal bounds are common.
    #[test]
    #[ignore = "long on the host emulator (seconds to tens of seconds each): .ci/run runs it, with the other ignored tests, after the README's test command"]
    fn emu_bisect_in_strips_of_quantized_keys_equals_oracle(c in case_of(2..=3, 60, (120, 12, 1 << 24))) {
        run_tuned(&c, Approach::Bisect, |e| {
            e.set_tiled_max(0);
            e.set_strips_from(0);
        });
    }

    #[test]
    #[ignore = "long on the host emulator (seconds to tens of seconds each): .ci/run runs it, with the other ignored tests, after the README's test command"]
    fn emu_bisect_equals_oracle_over_update_sequences(c in case()) {
        // The sorts and the sweep, not the sorted tiles small sets get.
        run_tuned(&c, Approach::Bisect, |e| e.set_tiled_max(0));
    }

    /// Non-empty ranges on a line, with removals: the count comes from the binary
    /// searches (not the sweep it falls back to) and equals the oracle's.
    #[test]
    fn emu_bisect_counts_by_search_on_a_line(
        pubs in prop::collection::vec(prop::option::weighted(0.8, (0u32..40, 1u32..9)), 0..60),
        subs in prop::collection::vec(prop::option::weighted(0.8, (0u32..40, 1u32..9)), 0..60),
    ) {
        let to = |v: &[Option<(u32, u32)>]| -> Vec<Option<Vec<Range>>> {
            v.iter().map(|r| r.map(|(lo, w)| vec![Range { lo, hi: lo + w }])).collect()
        };
        let (pubs, subs) = (to(&pubs), to(&subs));
        let want = oracle(1, &pubs, &subs).len() as u64;
        let dev = Device::emulator();
        let mut e = Engine::new(&dev, Approach::Bisect, 1, pubs.len() as u32, subs.len() as u32).unwrap();
        // Every region added, then the absent ones removed (removed regions stay in the
        // tables with their last bounds).
        let mut batch = UpdateBatch::default();
        for (kind, list) in [(Kind::Publication, &pubs), (Kind::Subscription, &subs)] {
            for (i, r) in list.iter().enumerate() {
                batch.set(kind, i as u32, r.as_deref().unwrap_or(&[Range { lo: 3, hi: 30 }]));
            }
        }
        e.step(&batch, false).unwrap();
        let mut batch = UpdateBatch::default();
        for (kind, list) in [(Kind::Publication, &pubs), (Kind::Subscription, &subs)] {
            for (i, r) in list.iter().enumerate() {
                if r.is_none() {
                    batch.remove(kind, i as u32);
                }
            }
        }
        e.step(&batch, false).unwrap();
        prop_assert_eq!(e.count_by_search().unwrap(), Some(want));
        prop_assert_eq!(e.count().unwrap(), want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// The sorting engines restricted to the pairs whose overlap begins at `x` or after
    /// in dimension 0 (a slab's pairs, `Engine::set_overlaps_from`): counts and pairs
    /// equal the oracle's pairs with `max(lo_p, lo_s) >= x`, in sorted tiles and sorted
    /// and swept, in 1-4 dimensions; and 0 gives every pair back.
    #[test]
    fn emu_sorting_engines_keep_the_pairs_whose_overlap_begins_at_a_coordinate(
        c in case(),
        x in 0u32..30,
    ) {
        let from = |p: &Pair| {
            let (a, b) = (&c.pubs[p.publication as usize], &c.subs[p.subscription as usize]);
            a.as_ref().map_or(0, |a| a[0].lo).max(b.as_ref().map_or(0, |b| b[0].lo))
        };
        let every = oracle(c.dims, &c.pubs, &c.subs);
        let want: Vec<Pair> = every.iter().copied().filter(|p| from(p) >= x).collect();
        let dev = Device::emulator();
        for (approach, tiles) in [
            (Approach::Bisect, true),
            (Approach::Bisect, false),
            (Approach::Sweep, false),
        ] {
            let mut e = Engine::new(
                &dev,
                approach.clone(),
                c.dims,
                c.pubs.len() as u32,
                c.subs.len() as u32,
            )
            .unwrap();
            if !tiles {
                e.set_tiled_max(0);
            }
            e.step(&setting_every_region(&c.pubs, &c.subs), false).unwrap();
            e.set_overlaps_from(x).unwrap();
            let name = format!("{} tiles={tiles}", approach.name());
            prop_assert_eq!(e.count().unwrap(), want.len() as u64, "{}", &name);
            prop_assert_eq!(e.pairs().unwrap(), want.clone(), "{}", &name);
            e.set_overlaps_from(0).unwrap();
            prop_assert_eq!(e.count().unwrap(), every.len() as u64, "{}", &name);
        }
    }
}

#[test]
fn the_region_and_grid_engines_refuse_to_restrict_their_pairs() {
    let set = RegionSet::new(1).unwrap();
    let dev = Device::emulator();
    let grid = Approach::Grid(GridSpec::new(vec![0], vec![10], vec![2]).unwrap());
    for a in [Approach::Region, grid] {
        let mut e = Engine::with_regions(&dev, a.clone(), &set).unwrap();
        assert!(e.set_overlaps_from(5).is_err(), "{}", a.name());
    }
}

#[test]
fn bisect_count_by_search_gives_way_to_the_sweep_when_a_range_is_empty() {
    let mut set = RegionSet::new(1).unwrap();
    let r = |lo, hi| [Range { lo, hi }];
    set.push(Kind::Publication, 0, &r(5, 5)).unwrap(); // empty, at 5
    set.push(Kind::Subscription, 0, &r(5, 5)).unwrap(); // empty at 5: no overlap
    set.push(Kind::Subscription, 1, &r(0, 9)).unwrap(); // contains 5: overlap
    let dev = Device::emulator();
    let mut e = Engine::with_regions(&dev, Approach::Bisect, &set).unwrap();
    e.set_tiled_max(0);
    assert_eq!(e.count_by_search().unwrap(), None);
    assert_eq!(e.count().unwrap(), 1);
}

#[test]
fn bisect_sweeps_the_dimension_with_fewer_overlaps() {
    // Every range spans dimension 0; dimension 1 is thin: the sample picks dimension 1,
    // and the answers are the oracle's.
    let mut pubs = Vec::new();
    let mut subs = Vec::new();
    for i in 0..150u32 {
        let r = |o: u32| {
            vec![
                Range { lo: 0, hi: 1000 },
                Range {
                    lo: i * 10 + o,
                    hi: i * 10 + o + 7,
                },
            ]
        };
        pubs.push(Some(r(0)));
        subs.push(Some(r(3)));
    }
    let mut set = RegionSet::new(2).unwrap();
    for (kind, list) in [(Kind::Publication, &pubs), (Kind::Subscription, &subs)] {
        for (i, r) in list.iter().enumerate() {
            set.push(kind, i as u64, r.as_ref().unwrap()).unwrap();
        }
    }
    let want = oracle(2, &pubs, &subs);
    let dev = Device::emulator();
    let mut e = Engine::with_regions(&dev, Approach::Bisect, &set).unwrap();
    e.set_tiled_max(0);
    assert_eq!(e.sweep_dim().unwrap(), 1);
    assert_eq!(e.count().unwrap(), want.len() as u64);
    assert_eq!(e.pairs().unwrap(), want);
    let mut s = Engine::with_regions(&dev, Approach::Sweep, &set).unwrap();
    assert_eq!(s.sweep_dim().unwrap(), 0);
}

/// One kind's regions by index (`None`: absent).
type Regions = Vec<Option<Vec<Range>>>;

/// `n` random regions of each kind in `dims` dimensions: in dimension `d` starting below
/// `spans[d]`, narrower than `widths[d]` (zero-width ones among them).
fn random_regions(
    seed: u64,
    n: usize,
    spans: &[u32],
    widths: &[u32],
) -> (Regions, Regions, RegionSet) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut region = || -> Vec<Range> {
        spans
            .iter()
            .zip(widths)
            .map(|(&span, &w)| {
                let lo = rng.gen_range(0..span);
                Range {
                    lo,
                    hi: lo + rng.gen_range(0..w),
                }
            })
            .collect()
    };
    let pubs: Vec<_> = (0..n).map(|_| Some(region())).collect();
    let subs: Vec<_> = (0..n).map(|_| Some(region())).collect();
    let mut set = RegionSet::new(spans.len()).unwrap();
    for (kind, list) in [(Kind::Publication, &pubs), (Kind::Subscription, &subs)] {
        for (i, r) in list.iter().enumerate() {
            set.push(kind, i as u64, r.as_ref().unwrap()).unwrap();
        }
    }
    (pubs, subs, set)
}

#[test]
fn bisect_in_strips_counts_and_enumerates_as_the_whole_sweep() {
    let dev = Device::emulator();
    // 2-D and 3-D, narrow ranges in a wide space (many strips); then coordinates that
    // leave the strips' numbers few bits of the 31 (strips wider than the ranges).
    for (seed, spans, widths) in [
        (1, vec![3000, 3000], vec![60, 40]),
        (2, vec![800, 1200, 900], vec![50, 30, 70]),
        // (The sweep dimension's bounds take 27 bits: at most 15 strips, each wider
        // than the ranges, in the other.)
        (3, vec![1 << 26, 1 << 16], vec![1 << 19, 1 << 10]),
        // Bounds up to 2^30 in both: the sweep dimension's by quanta of 2^7 in the keys.
        (4, vec![1 << 30, 1 << 30], vec![1 << 24, 1 << 24]),
    ] {
        let (mut pubs, mut subs, set) = random_regions(seed, 600, &spans, &widths);
        let dims = spans.len();
        let mut e = Engine::with_regions(&dev, Approach::Bisect, &set).unwrap();
        e.set_tiled_max(0);
        // (Strips wherever they can be made: these sets are small.)
        e.set_strips_from(0);
        let want = oracle(dims, &pubs, &subs);
        assert!(want.len() > 20, "seed {seed}: {} pairs", want.len());
        assert_eq!(e.count().unwrap(), want.len() as u64, "seed {seed}");
        assert!(e.strips().is_some(), "seed {seed}: no strips");
        assert_eq!(e.pairs().unwrap(), want, "seed {seed}");
        e.set_strips(false);
        assert_eq!(e.count().unwrap(), want.len() as u64, "seed {seed} whole");
        assert!(e.strips().is_none());
        e.set_strips(true);
        // A third of each kind removed, a few moved onto others: the removed ones'
        // entries sort last and are no candidates.
        let before = pubs.clone();
        let mut batch = UpdateBatch::default();
        for i in (0..599).step_by(3) {
            batch.remove(Kind::Publication, i as u32);
            batch.remove(Kind::Subscription, (i + 1) as u32);
            pubs[i] = None;
            subs[i + 1] = None;
        }
        for i in (2..600).step_by(7) {
            let r = before[(i + 5) % 600].clone().unwrap();
            batch.set(Kind::Subscription, i as u32, &r);
            subs[i] = Some(r);
        }
        e.step(&batch, false).unwrap();
        let want = oracle(dims, &pubs, &subs);
        assert_eq!(e.count().unwrap(), want.len() as u64, "seed {seed} after");
        assert_eq!(e.pairs().unwrap(), want, "seed {seed} after");
    }
}

#[test]
fn bisect_in_tiles_keeps_every_pair_when_blocks_overflow() {
    // 380 publications and 380 subscriptions that all overlap but a few removed: 143,641
    // pairs, ~18,000 per block (beyond the block's shared buffer: pairs go straight out
    // too) and more than the first landing place holds, as pairs (65,536) and as words
    // (131,072): it grows, the launch is redone.
    const N: u32 = 380;
    let mut set = RegionSet::new(2).unwrap();
    for i in 0..N {
        let r = [
            Range {
                lo: i,
                hi: 1000 + i,
            },
            Range {
                lo: 0,
                hi: 50 + i % 7,
            },
        ];
        set.push(Kind::Publication, i as u64, &r).unwrap();
        set.push(Kind::Subscription, i as u64, &r).unwrap();
    }
    let want: Vec<Pair> = (0..N)
        .filter(|&p| p != 7)
        .flat_map(|p| {
            (0..N - 1).map(move |s| Pair {
                publication: p,
                subscription: s,
            })
        })
        .collect();
    let dev = Device::emulator();
    for narrow in [false, true] {
        let mut e = Engine::with_regions(&dev, Approach::Bisect, &set).unwrap();
        e.set_tiled_narrow(narrow);
        assert!(e.matches_in_tiles());
        let mut batch = UpdateBatch::default();
        batch.remove(Kind::Publication, 7);
        batch.remove(Kind::Subscription, N - 1);
        e.step(&batch, false).unwrap();
        assert_eq!(e.count().unwrap(), want.len() as u64);
        assert_eq!(e.pairs().unwrap(), want, "narrow {narrow}");
        // Twice, into a kept buffer: the grown landing place is kept.
        let mut got = Vec::new();
        assert_eq!(e.pairs_into(&mut got).unwrap(), want.len() as u64);
        got.sort_unstable();
        assert_eq!(got, want, "narrow {narrow}, into a buffer");
        if narrow {
            // One block takes both tiles of publications in turn.
            e.set_tiled_fill(1);
            assert_eq!(e.count().unwrap(), want.len() as u64);
            assert_eq!(e.pairs().unwrap(), want);
        }
    }
}

#[test]
fn bisect_in_tiles_with_many_tiles_a_block_equals_the_oracle() {
    // 700 publications in three tiles taken in turn by one block (each tile sorted and
    // its width kept apart), one of them very wide (its tile's runs are every
    // publication), some removed; crowded and sparse parts in 2-D.
    let mut pubs = Vec::new();
    let mut subs = Vec::new();
    for i in 0..700u32 {
        let x = (i * 7919) % 5000;
        let w = if i == 400 { 4000 } else { 3 + i % 40 };
        let r = vec![
            Range { lo: x, hi: x + w },
            Range {
                lo: i % 13,
                hi: i % 13 + 5,
            },
        ];
        pubs.push((i % 17 != 5).then_some(r));
    }
    for j in 0..500u32 {
        let x = (j * 104_729) % 5200;
        let r = vec![
            Range {
                lo: x,
                hi: x + 1 + j % 60,
            },
            Range {
                lo: j % 11,
                hi: j % 11 + 4,
            },
        ];
        subs.push((j % 23 != 3).then_some(r));
    }
    let want = oracle(2, &pubs, &subs);
    assert!(want.len() > 100, "{}", want.len());
    let dev = Device::emulator();
    let mut e = Engine::new(&dev, Approach::Bisect, 2, 700, 500).unwrap();
    let mut batch = UpdateBatch::default();
    for (kind, list) in [(Kind::Publication, &pubs), (Kind::Subscription, &subs)] {
        for (i, r) in list.iter().enumerate() {
            match r {
                Some(r) => batch.set(kind, i as u32, r),
                None => batch.remove(kind, i as u32),
            }
        }
    }
    e.step(&batch, false).unwrap();
    assert!(e.matches_in_tiles());
    let mut got = vec![Pair::default(); 3];
    for fill in [1, 2, 1584] {
        for narrow in [true, false] {
            e.set_tiled_fill(fill);
            e.set_tiled_narrow(narrow);
            assert_eq!(e.count().unwrap(), want.len() as u64, "fill {fill}");
            assert_eq!(e.pairs().unwrap(), want, "fill {fill}, narrow {narrow}");
            // Into a buffer holding earlier pairs: cleared, then filled.
            e.pairs_into(&mut got).unwrap();
            got.sort_unstable();
            assert_eq!(got, want, "fill {fill}, narrow {narrow}, into a buffer");
        }
    }
}

#[test]
fn touching_ranges_do_not_overlap_and_zero_width_ranges_overlap_only_strictly_inside() {
    let mut set = RegionSet::new(1).unwrap();
    let r = |lo, hi| [Range { lo, hi }];
    set.push(Kind::Publication, 0, &r(0, 10)).unwrap(); // p0
    set.push(Kind::Subscription, 0, &r(10, 20)).unwrap(); // touches p0: no
    set.push(Kind::Subscription, 1, &r(5, 5)).unwrap(); // inside p0: yes
    set.push(Kind::Subscription, 2, &r(0, 0)).unwrap(); // at p0's lower bound: no
    set.push(Kind::Subscription, 3, &r(9, 10)).unwrap(); // yes
    let want = vec![
        Pair {
            publication: 0,
            subscription: 1,
        },
        Pair {
            publication: 0,
            subscription: 3,
        },
    ];
    let dev = Device::emulator();
    for a in [
        Approach::Region,
        Approach::Grid(GridSpec::fit(&set, Some(&[3])).unwrap()),
        Approach::Sweep,
        Approach::Bisect,
    ] {
        let mut e = Engine::with_regions(&dev, a.clone(), &set).unwrap();
        assert_eq!(e.pairs().unwrap(), want, "{}", a.name());
        assert_eq!(e.count().unwrap(), 2, "{}", a.name());
    }
}

#[test]
fn an_engine_without_regions_steps_and_counts_zero() {
    // Fuzz finding ddm_diff-2: a step of an engine of no region panicked in Phase 1.
    let dev = Device::emulator();
    let set = RegionSet::new(2).unwrap();
    for a in [
        Approach::Region,
        Approach::Grid(GridSpec::new(vec![0, 0], vec![10, 10], vec![2, 2]).unwrap()),
        Approach::Sweep,
        Approach::Bisect,
    ] {
        let mut e = Engine::with_regions(&dev, a.clone(), &set).unwrap();
        assert_eq!(e.count().unwrap(), 0, "{}", a.name());
        assert!(e.pairs().unwrap().is_empty(), "{}", a.name());
        let r = e.step(&UpdateBatch::default(), true).unwrap();
        assert_eq!(r.overlaps, 0, "{}", a.name());
    }
}

#[test]
#[ignore = "long on the host emulator (seconds to tens of seconds each): .ci/run runs it, with the other ignored tests, after the README's test command"]
fn dense_steps_of_every_region_equal_the_oracle_on_every_engine() {
    // The paper's steps set every region, in index order: the host sends the ranges
    // alone and the kernels make the records (dense staging). Each approach, Phase 1
    // copied or mapped, against the oracle at every step; the last step's batch names
    // one region twice (not dense) to leave the dense path mid-sequence.
    let mut params = ScenarioParams::paper(80, 60, Distribution::Uniform);
    params.space = 400;
    let grid = Approach::Grid(GridSpec::covering(2, 400, 40).unwrap());
    let dev = Device::emulator();
    // (The sweep engine installs a step as the bisect engine does.)
    for approach in [Approach::Region, grid, Approach::Bisect] {
        for phase1 in [Phase1::Copy, Phase1::Mapped] {
            let mut scenario = Scenario::new(params.clone(), 9).unwrap();
            let set = scenario.regions();
            let mut e = Engine::new(&dev, approach.clone(), 2, set.n_pub(), set.n_sub()).unwrap();
            e.set_phase1(phase1);
            let lists = |set: &RegionSet, kind| -> Vec<Option<Vec<Range>>> {
                (0..set.len(kind))
                    .map(|i| Some(set.region(kind, i).to_vec()))
                    .collect()
            };
            let mut batch = UpdateBatch::everything(scenario.regions());
            for step in 0..4 {
                let report = e.step(&batch, true).unwrap();
                let set = scenario.regions();
                let want = oracle(
                    2,
                    &lists(set, Kind::Publication),
                    &lists(set, Kind::Subscription),
                );
                let what = format!("{} {phase1:?} step {step}", approach.name());
                assert!(!want.is_empty(), "{what}: the scenario overlaps");
                assert_eq!(e.count().unwrap(), want.len() as u64, "{what}");
                assert_eq!(e.pairs().unwrap(), want, "{what}");
                if !approach.sorts() {
                    // Every region was updated: the step's pairs are all pairs.
                    let mut got = report.pairs.unwrap();
                    got.sort_unstable();
                    assert_eq!(got, want, "{what}");
                }
                batch = scenario.step();
                if step == 2 {
                    let (kind, index, _) = batch.entries()[5];
                    let again = scenario.regions().region(kind, index).to_vec();
                    batch.set(kind, index, &again);
                }
            }
        }
    }
}

#[test]
#[ignore = "long on the host emulator (seconds to tens of seconds each): .ci/run runs it, with the other ignored tests, after the README's test command"]
fn fused_grid_launches_equal_the_papers_phases_over_many_steps() {
    // The crowded scenario (RS 100 on a grid of 100 x 100 cells, 16 slots per list at
    // first: lists overflow and grow), every region moving each step, and every fifth
    // step some regions removed and others back: the fused engine and the per-phase one
    // report the same counts and the same new pairs at every step.
    let params = ScenarioParams::paper(600, 100, Distribution::Crowded);
    let mut scenario = Scenario::new(params, 5).unwrap();
    let dev = Device::emulator();
    let grid = Approach::Grid(GridSpec::covering(2, 10_000, 100).unwrap());
    let mut engines: Vec<Engine> = [true, false]
        .into_iter()
        .map(|fused| {
            let set = scenario.regions();
            let mut e = Engine::new(&dev, grid.clone(), 2, set.n_pub(), set.n_sub()).unwrap();
            e.set_fused(fused);
            e
        })
        .collect();
    let first = UpdateBatch::everything(scenario.regions());
    let reports: Vec<_> = engines
        .iter_mut()
        .map(|e| e.step(&first, true).unwrap())
        .collect();
    assert_eq!(reports[0].overlaps, reports[1].overlaps);
    for step in 0..12u32 {
        let mut batch = scenario.step();
        if step % 5 == 4 {
            // Removals, out of order after the moves: the general staging path too.
            for i in (0..300).step_by(7) {
                batch.remove(Kind::Publication, i);
                batch.remove(Kind::Subscription, i + 3);
            }
        }
        let mut got: Vec<_> = engines
            .iter_mut()
            .map(|e| e.step(&batch, true).unwrap())
            .collect();
        for r in &mut got {
            r.pairs.as_mut().unwrap().sort_unstable();
        }
        assert_eq!(got[0], got[1], "step {step}");
        assert!(got[0].overlaps > 0);
        if step % 5 == 4 {
            // The removed regions come back at their scenario positions.
            let back = UpdateBatch::everything(scenario.regions());
            for e in &mut engines {
                e.step(&back, false).unwrap();
            }
        }
    }
    let pairs: Vec<_> = engines.iter_mut().map(|e| e.pairs().unwrap()).collect();
    assert_eq!(pairs[0], pairs[1]);
}

#[test]
fn grid_cell_lists_grow_when_a_cell_is_crowded() {
    // 300 regions in one cell: far past the initial 16 slots per list.
    let mut set = RegionSet::new(2).unwrap();
    for i in 0..150u32 {
        let a = [
            Range {
                lo: i % 7,
                hi: i % 7 + 3,
            },
            Range { lo: 1, hi: 2 },
        ];
        set.push(Kind::Publication, i as u64, &a).unwrap();
        set.push(Kind::Subscription, i as u64, &a).unwrap();
    }
    let dev = Device::emulator();
    let grid = Approach::Grid(GridSpec::new(vec![0, 0], vec![100, 100], vec![2, 2]).unwrap());
    let mut g = Engine::with_regions(&dev, grid, &set).unwrap();
    let mut r = Engine::with_regions(&dev, Approach::Region, &set).unwrap();
    assert_eq!(g.pairs().unwrap(), r.pairs().unwrap());
    assert!(g.count().unwrap() > 10_000);
}

#[test]
#[ignore = "long on the host emulator (seconds to tens of seconds each): .ci/run runs it, with the other ignored tests, after the README's test command"]
fn sweep_sorts_full_32_bit_keys_across_many_blocks() {
    // 4400 regions with bounds spread over the whole u32 range: four radix passes,
    // several radix blocks and rounds, and the multi-block prefix sum (4400 tasks).
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut pubs = Vec::new();
    let mut subs = Vec::new();
    for _ in 0..2200 {
        for list in [&mut pubs, &mut subs] {
            let lo = rng.gen_range(0..u32::MAX - (1 << 24));
            list.push(Some(vec![Range {
                lo,
                hi: lo + rng.gen_range(0..1 << 24),
            }]));
        }
    }
    let mut set = RegionSet::new(1).unwrap();
    for (kind, list) in [(Kind::Publication, &pubs), (Kind::Subscription, &subs)] {
        for (i, r) in list.iter().enumerate() {
            set.push(kind, i as u64, r.as_ref().unwrap()).unwrap();
        }
    }
    let want = oracle(1, &pubs, &subs);
    assert!(want.len() > 1000, "{}", want.len());
    let dev = Device::emulator();
    let mut e = Engine::with_regions(&dev, Approach::Sweep, &set).unwrap();
    assert_eq!(e.count().unwrap(), want.len() as u64);
    assert_eq!(e.pairs().unwrap(), want);
    // The same on the bisect engine's four-pass sorts of both end points (up to near
    // 2^32), by search when no range is empty.
    let mut b = Engine::with_regions(&dev, Approach::Bisect, &set).unwrap();
    b.set_tiled_max(0);
    let empty = pubs
        .iter()
        .chain(&subs)
        .flatten()
        .any(|r| r[0].lo == r[0].hi);
    let by_search = b.count_by_search().unwrap();
    assert_eq!(by_search, (!empty).then_some(want.len() as u64));
    assert_eq!(b.count().unwrap(), want.len() as u64);
}

#[test]
fn sliced_region_phase_3_equals_the_papers_over_many_tiles() {
    // 1200 regions: 600 candidates of each kind, three tiles of 256; every region moves.
    let params = ScenarioParams::paper(1200, 400, Distribution::Uniform);
    let mut scenario = Scenario::new(params, 5).unwrap();
    let dev = Device::emulator();
    let kinds = [
        Slices::Paper,
        Slices::Exactly(2),
        Slices::Exactly(5),
        Slices::Fill,
    ];
    let mut engines: Vec<Engine> = kinds
        .into_iter()
        .map(|k| {
            let mut e = Engine::new(&dev, Approach::Region, 2, 600, 600).unwrap();
            e.set_slices(k);
            e
        })
        .collect();
    let mut batch = UpdateBatch::everything(scenario.regions());
    for _ in 0..3 {
        let mut want = None;
        for e in &mut engines {
            let mut r = e.step(&batch, true).unwrap();
            r.pairs.as_mut().unwrap().sort_unstable();
            let got = (r, e.pairs().unwrap());
            assert!(got.0.overlaps > 0);
            match &want {
                None => want = Some(got),
                Some(w) => assert_eq!(&got, w, "{:?}", e.slices()),
            }
        }
        batch = scenario.step();
    }
}

#[test]
#[ignore = "long on the host emulator (seconds to tens of seconds each): .ci/run runs it, with the other ignored tests, after the README's test command"]
fn load_installs_a_whole_set_like_a_step_naming_every_region() {
    use baselines::ddm::{Algorithm, DdmMatcher};
    use ddm_region::workload::{scale_up, ScaleUpParams};
    let dev = Device::emulator();
    for dims in 1..=3 {
        let params = |alpha| ScaleUpParams {
            regions: 300,
            alpha,
            dims,
        };
        let (first, second) = (
            scale_up(&params(5.0), 1).unwrap(),
            scale_up(&params(30.0), 2).unwrap(),
        );
        let want = DdmMatcher::new(Algorithm::Brute, 1).pairs(&second);
        assert!(!want.is_empty());
        for approach in [Approach::Sweep, Approach::Bisect, Approach::Region] {
            let mut e = Engine::with_regions(&dev, approach.clone(), &first).unwrap();
            // Some regions removed first: the load makes every region live again.
            let mut batch = UpdateBatch::default();
            batch.remove(Kind::Publication, 3);
            batch.remove(Kind::Subscription, 7);
            e.step(&batch, false).unwrap();
            e.load(&second).unwrap();
            assert_eq!(
                e.count().unwrap(),
                want.len() as u64,
                "{} {dims}-D",
                approach.name()
            );
            assert_eq!(e.pairs().unwrap(), want, "{} {dims}-D", approach.name());
        }
    }
}

#[test]
fn load_of_a_set_larger_than_one_staging_part_fills_parts_of_publications_alone() {
    // 20,000 publications and 20,000 subscriptions in parts of 16384 ranges: a part of
    // publications only, one that holds both, one of subscriptions only.
    use baselines::ddm::{Algorithm, DdmMatcher};
    use ddm_region::workload::{scale_up, ScaleUpParams};
    let dev = Device::emulator();
    let params = |alpha| ScaleUpParams {
        regions: 40_000,
        alpha,
        dims: 1,
    };
    let (first, second) = (
        scale_up(&params(1.0), 3).unwrap(),
        scale_up(&params(2.0), 4).unwrap(),
    );
    let want = DdmMatcher::new(Algorithm::Sbm, 1).count(&second);
    let mut e = Engine::with_regions(&dev, Approach::Bisect, &first).unwrap();
    // (4 * 10^8 pairs: too many to test one by one on the emulator.)
    e.set_tiled_max(0);
    e.load(&second).unwrap();
    assert_eq!(e.count().unwrap(), want);
}

#[test]
fn sorting_engines_loaded_then_stepped_equal_the_oracle_whichever_way_the_load_copies() {
    // A sorting engine makes its step state at its first step, after a whole-set load
    // that needed none; the load copies through page-locked staging or straight from
    // the set's memory (`set_pageable_load`): the same counts and pairs.
    use baselines::ddm::{Algorithm, DdmMatcher};
    use ddm_region::workload::{scale_up, ScaleUpParams};
    let dev = Device::emulator();
    for dims in 1..=2 {
        let set = scale_up(
            &ScaleUpParams {
                regions: 400,
                alpha: 10.0,
                dims,
            },
            5,
        )
        .unwrap();
        let want = DdmMatcher::new(Algorithm::Brute, 1).pairs(&set);
        assert!(!want.is_empty());
        // The step: publication 0 moved onto subscription 0's ranges (it overlaps it).
        let mut moved = set.clone();
        let sub0 = set.region(Kind::Subscription, 0).to_vec();
        moved.set(Kind::Publication, 0, &sub0).unwrap();
        let after = DdmMatcher::new(Algorithm::Brute, 1).pairs(&moved);
        let mut batch = UpdateBatch::default();
        batch.set(Kind::Publication, 0, &sub0);
        for approach in [Approach::Sweep, Approach::Bisect] {
            for pageable in [false, true] {
                let what = format!("{} {dims}-D, pageable {pageable}", approach.name());
                let mut e =
                    Engine::new(&dev, approach.clone(), dims, set.n_pub(), set.n_sub()).unwrap();
                e.set_tiled_max(0);
                e.set_pageable_load(pageable);
                e.load(&set).unwrap();
                assert_eq!(e.count().unwrap(), want.len() as u64, "{what}");
                assert_eq!(e.pairs().unwrap(), want, "{what}");
                e.step(&batch, false).unwrap();
                assert_eq!(e.count().unwrap(), after.len() as u64, "{what}, stepped");
                assert_eq!(e.pairs().unwrap(), after, "{what}, stepped");
                // Loaded again after the step: the first set's pairs.
                e.load(&set).unwrap();
                assert_eq!(e.pairs().unwrap(), want, "{what}, loaded again");
            }
        }
    }
}

#[test]
#[ignore = "long on the host emulator (seconds to tens of seconds each): .ci/run runs it, with the other ignored tests, after the README's test command"]
fn steps_staged_by_the_gathered_crew_equal_the_oracle() {
    // 10,000 regions a step (above the parallel staging's threshold): after each step's
    // last wait the engine gathers pool threads for the next step's staging
    // (`Engine::set_stage_crew`, on by default); with it on (off: the other tests), every step's
    // count and pairs equal the oracle's, on the grid engine (its pairs from Phase 4)
    // and the bisect engine (pairs, then counts: the crew comes after either).
    let params = ScenarioParams::paper(10_000, 10, Distribution::Crowded);
    let dev = Device::emulator();
    let grid = Approach::Grid(GridSpec::covering(2, params.space, 100).unwrap());
    for approach in [grid, Approach::Bisect] {
        for helpers in [7] {
            let mut scenario = Scenario::new(params.clone(), 3).unwrap();
            let set = scenario.regions();
            let mut e = Engine::new(&dev, approach.clone(), 2, set.n_pub(), set.n_sub()).unwrap();
            e.set_stage_crew(helpers, std::time::Duration::from_millis(50));
            let mut batch = UpdateBatch::everything(set);
            for step in 0..3 {
                let report = e.step(&batch, true).unwrap();
                let set = scenario.regions();
                let lists = |kind| -> Vec<Option<Vec<Range>>> {
                    (0..set.len(kind))
                        .map(|i| Some(set.region(kind, i).to_vec()))
                        .collect()
                };
                let want = oracle(2, &lists(Kind::Publication), &lists(Kind::Subscription));
                let what = format!("{} helpers {helpers} step {step}", approach.name());
                assert!(!want.is_empty(), "{what}: the scenario overlaps");
                let mut got = if approach.sorts() {
                    e.pairs_unordered().unwrap()
                } else {
                    report.pairs.unwrap()
                };
                got.sort_unstable();
                assert_eq!(got, want, "{what}");
                assert_eq!(e.count().unwrap(), want.len() as u64, "{what}");
                batch = scenario.step();
            }
        }
    }
}
