//! Differential: ddm-region's engines on the host SIMT emulator (region-based, grid-based
//! and sweep approaches) against the CPU DDM baseline (`baselines::ddm::DdmMatcher`, brute,
//! grid and sort algorithms), on tiny workloads built from the fuzz bytes: 1-3
//! dimensions, up to 10 publications and 10 subscriptions (some absent), small
//! coordinates (touching, nested, zero-width ranges) plus a few near u32::MAX, then up
//! to 2 steps of moves, removals and re-additions. After every step the engine's count
//! and pairs must equal the baseline's on the live regions.
#![no_main]

mod common;

use baselines::ddm::{Algorithm, DdmMatcher};
use ddm_region::{Approach, Device, Engine, GridSpec, Kind, Pair, Range, RegionSet, UpdateBatch};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

type Slots = Vec<Option<Vec<Range>>>;

fn region(u: &mut Unstructured, dims: usize) -> Result<Vec<Range>> {
    (0..dims)
        .map(|_| {
            Ok(if u.ratio(1, 16)? {
                let lo = u32::MAX - u.int_in_range(0..=4u32)?;
                Range { lo, hi: lo + u.int_in_range(0..=u32::MAX - lo)? }
            } else {
                let lo = u.int_in_range(0..=24u32)?;
                Range { lo, hi: lo + u.int_in_range(0..=6u32)? }
            })
        })
        .collect()
}

fn slot(u: &mut Unstructured, dims: usize) -> Result<Option<Vec<Range>>> {
    Ok(if u.ratio(1, 7)? { None } else { Some(region(u, dims)?) })
}

/// The baseline's pairs on the live regions, renumbered to the engine's slots.
fn baseline(m: &DdmMatcher, dims: usize, pubs: &Slots, subs: &Slots) -> Vec<Pair> {
    let mut set = RegionSet::new(dims).unwrap();
    let mut pub_slot = Vec::new();
    let mut sub_slot = Vec::new();
    for (kind, list, map) in [(Kind::Publication, pubs, &mut pub_slot), (Kind::Subscription, subs, &mut sub_slot)] {
        for (i, r) in list.iter().enumerate() {
            if let Some(r) = r {
                set.push(kind, i as u64, r).unwrap();
                map.push(i as u32);
            }
        }
    }
    m.pairs(&set)
        .into_iter()
        .map(|p| Pair {
            publication: pub_slot[p.publication as usize],
            subscription: sub_slot[p.subscription as usize],
        })
        .collect()
}

struct Case {
    dims: usize,
    pubs: Slots,
    subs: Slots,
    steps: Vec<Vec<(Kind, usize, Option<Vec<Range>>)>>,
    approach: Approach,
    matcher: DdmMatcher,
}

fn case(u: &mut Unstructured) -> Result<Case> {
    let dims = u.int_in_range(1..=3usize)?;
    let np = u.int_in_range(0..=10usize)?;
    let ns = u.int_in_range(0..=10usize)?;
    let pubs = (0..np).map(|_| slot(u, dims)).collect::<Result<Slots>>()?;
    let subs = (0..ns).map(|_| slot(u, dims)).collect::<Result<Slots>>()?;
    let mut steps = Vec::new();
    for _ in 0..u.int_in_range(0..=2u8)? {
        let mut step = Vec::new();
        for _ in 0..u.int_in_range(0..=6u8)? {
            let kind = if u.arbitrary()? { Kind::Subscription } else { Kind::Publication };
            let n = if kind == Kind::Subscription { ns } else { np };
            if n == 0 {
                continue;
            }
            let i = u.int_in_range(0..=n - 1)?;
            step.push((kind, i, if u.ratio(1, 5)? { None } else { Some(region(u, dims)?) }));
        }
        steps.push(step);
    }
    let approach = match u.int_in_range(0..=2u8)? {
        0 => Approach::Region,
        1 => Approach::Grid(
            GridSpec::new(vec![u.int_in_range(0..=3u32)?; dims], vec![u.int_in_range(1..=6u32)?; dims], vec![u.int_in_range(1..=7u32)?; dims])
                .expect("grid"),
        ),
        _ => Approach::Sweep,
    };
    let algorithm = match u.int_in_range(0..=2u8)? {
        0 => Algorithm::Brute,
        1 => Algorithm::Grid { cell: None },
        _ => Algorithm::Sort,
    };
    Ok(Case { dims, pubs, subs, steps, approach, matcher: DdmMatcher::new(algorithm, 1) })
}

fn check(e: &mut Engine, c: &Case, pubs: &Slots, subs: &Slots, overlaps: u64, step: usize) {
    let want = baseline(&c.matcher, c.dims, pubs, subs);
    let ctx = || format!("step {step}, {} vs {}, dims {}\npubs {pubs:?}\nsubs {subs:?}", c.approach.name(), c.matcher.name(), c.dims);
    assert_eq!(e.count().expect("count"), want.len() as u64, "count, {}", ctx());
    assert_eq!(e.pairs().expect("pairs"), want, "pairs, {}", ctx());
    if c.approach != Approach::Sweep {
        assert_eq!(overlaps, want.len() as u64, "step report's overlaps, {}", ctx());
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(c) = case(&mut Unstructured::new(data)) else { return };
    let dev = Device::emulator();
    let mut pubs = c.pubs.clone();
    let mut subs = c.subs.clone();
    let mut e = Engine::new(&dev, c.approach.clone(), c.dims, pubs.len() as u32, subs.len() as u32).expect("engine");
    let mut first = UpdateBatch::default();
    for (kind, list) in [(Kind::Publication, &pubs), (Kind::Subscription, &subs)] {
        for (i, r) in list.iter().enumerate() {
            if let Some(r) = r {
                first.set(kind, i as u32, r);
            }
        }
    }
    let report = e.step(&first, true).expect("first step");
    check(&mut e, &c, &pubs, &subs, report.overlaps, 0);
    for (n, step) in c.steps.iter().enumerate() {
        let mut batch = UpdateBatch::default();
        for (kind, i, r) in step {
            match r {
                Some(r) => batch.set(*kind, *i as u32, r),
                None => batch.remove(*kind, *i as u32),
            }
            let list = if *kind == Kind::Subscription { &mut subs } else { &mut pubs };
            list[*i] = r.clone();
        }
        let report = e.step(&batch, true).expect("step");
        check(&mut e, &c, &pubs, &subs, report.overlaps, n + 1);
    }
});
