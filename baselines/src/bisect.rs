//! Counting by binary search over sorted end points, after Marzolla, Birolo, D'Angelo &
//! Fariselli, "Parallel intersection counting on shared-memory multiprocessors and GPUs"
//! (FGCS 2024; their code counts with Thrust on the CPU and the GPU), written here from
//! the paper's idea; the CPU twin of the `gpu-bisect` engine, so that
//! `best CPU (all cores)` knows the method.
//!
//! One dimension: with half-open ranges, publication `p` overlaps subscription `s` iff
//! `s.lo < p.hi && p.lo < s.hi`, so for a non-empty `p`
//! `overlaps(p) = #{s.lo < p.hi} - #{s.hi <= p.lo}` (every `s` ending at or before
//! `p.lo` also starts before `p.hi`): two binary searches in the subscriptions' sorted
//! lower and upper ends, whatever the number of pairs. An empty `p = [x, x)` overlaps
//! the `s` with `s.lo < x < s.hi`; the same two ranks then miscount the empty
//! subscriptions at `x`, which a third sorted list (of the empty subscriptions, usually
//! none) adds back. The sort is `crate::ddm_kit::radix_sort_high`; the searches run
//! over the publications in parallel.
//!
//! Several dimensions (and enumeration in any): the candidates of one dimension are
//! tested in the others. The dimension is the one where `SAMPLE x SAMPLE` sampled pairs
//! overlap least ([`sweep_dim`], the same estimate as the GPU engine's). With both kinds
//! sorted by lower end there, each overlapping pair is found once: `p` finds the `s`
//! with `s.lo` in `[p.lo, p.hi)` (a run of the sorted subscriptions), `s` the `p` with
//! `p.lo` in `(s.lo, s.hi)` (a run of the sorted publications); each candidate gets the
//! full test, which settles the empty ranges. The runs are searched and walked in
//! parallel over the regions, the ranges gathered into sorted order first so that the
//! walks read memory in order.

use crate::ddm_kit::{flatten, on, overlap, radix_sort_high, Collect, Count, Flat, Sink};
use ddm_region::model::{Pair, Range, RegionSet};
use rayon::prelude::*;

/// Publications and subscriptions each sampled by [`sweep_dim`] (at most); the GPU
/// engine's `ddm_region_kernels::count::SAMPLE`.
pub const SAMPLE: usize = 512;

/// Most dimensions [`sweep_dim`] estimates (the GPU engine's limit too).
pub const MAX_ESTIMATED_DIMS: usize = 8;

/// Regions per parallel task.
const GRAIN: usize = 4096;

/// The number of overlapping pairs (on `pool`'s threads when given, else one thread).
pub(crate) fn count(set: &RegionSet, pool: Option<&rayon::ThreadPool>) -> u64 {
    let v = Flat::new(set);
    if v.n_pub == 0 || v.n_sub == 0 {
        return 0;
    }
    on(pool, || {
        if v.dims == 1 {
            count_1d(&v, pool.is_some())
        } else {
            walk::<Count>(&v, choose_dim(&v, pool.is_some()), pool.is_some())
                .iter()
                .map(|c| c.0)
                .sum()
        }
    })
}

/// The overlapping pairs, in no particular order.
pub(crate) fn pairs(set: &RegionSet, pool: Option<&rayon::ThreadPool>) -> Vec<Pair> {
    let v = Flat::new(set);
    if v.n_pub == 0 || v.n_sub == 0 {
        return Vec::new();
    }
    on(pool, || {
        let parts = walk::<Collect>(&v, choose_dim(&v, pool.is_some()), pool.is_some());
        flatten(parts, pool.is_some())
    })
}

/// The dimension whose ranges overlap least among `k = min(SAMPLE, max(n_pub, n_sub) / 8)`
/// publications (every `n_pub / k`-th) against `k` subscriptions, of the first
/// [`MAX_ESTIMATED_DIMS`]; the lowest on a tie; 0 in one dimension.
pub fn sweep_dim(set: &RegionSet) -> usize {
    choose_dim(&Flat::new(set), false)
}

/// [`sweep_dim`], its sample's rows in parallel (on the calling thread's pool) when
/// `parallel`.
fn choose_dim(v: &Flat<'_>, parallel: bool) -> usize {
    if v.dims == 1 || v.n_pub == 0 || v.n_sub == 0 {
        return 0;
    }
    let samples = SAMPLE.min(v.n_pub.max(v.n_sub) / 8).max(1);
    let dims = v.dims.min(MAX_ESTIMATED_DIMS);
    // One row of the sample per task (on the caller's pool).
    let row = |i: usize| -> [u64; MAX_ESTIMATED_DIMS] {
        let mut per_dim = [0u64; MAX_ESTIMATED_DIMS];
        let a = v.publication(i * v.n_pub / samples);
        for j in 0..samples {
            let s = j * v.n_sub / samples;
            let b = &v.subs[s * v.dims..(s + 1) * v.dims];
            for (d, n) in per_dim.iter_mut().enumerate().take(dims) {
                *n += (a[d].lo < b[d].hi && b[d].lo < a[d].hi) as u64;
            }
        }
        per_dim
    };
    let add = |mut x: [u64; MAX_ESTIMATED_DIMS], y: [u64; MAX_ESTIMATED_DIMS]| {
        x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
        x
    };
    let zero = [0u64; MAX_ESTIMATED_DIMS];
    let per_dim = if parallel {
        (0..samples).into_par_iter().map(row).reduce(|| zero, add)
    } else {
        (0..samples).map(row).fold(zero, add)
    };
    (0..dims).min_by_key(|&d| per_dim[d]).unwrap_or(0)
}

/// Keys `coordinate << 32 | index`, sorted by coordinate.
fn sorted_keys(n: usize, coord: impl Fn(usize) -> u32 + Sync, parallel: bool) -> Vec<u64> {
    let mut keys: Vec<u64> = if parallel {
        (0..n)
            .into_par_iter()
            .map(|i| (coord(i) as u64) << 32 | i as u64)
            .collect()
    } else {
        (0..n).map(|i| (coord(i) as u64) << 32 | i as u64).collect()
    };
    let chunks = rayon::current_num_threads() * 4;
    radix_sort_high(&mut keys, 32, parallel, chunks);
    keys
}

/// First index of the sorted keys whose coordinate is `>= x`.
#[inline(always)]
fn rank(keys: &[u64], x: u32) -> usize {
    keys.partition_point(|&k| ((k >> 32) as u32) < x)
}

/// First index of the sorted keys whose coordinate is `> x`.
#[inline(always)]
fn rank_after(keys: &[u64], x: u32) -> usize {
    keys.partition_point(|&k| ((k >> 32) as u32) <= x)
}

/// One dimension: two ranks per publication (plus the empty subscriptions at an empty
/// publication's point).
fn count_1d(v: &Flat<'_>, parallel: bool) -> u64 {
    let subs = v.subs;
    let lo = sorted_keys(v.n_sub, |j| subs[j].lo, parallel);
    let hi = sorted_keys(v.n_sub, |j| subs[j].hi, parallel);
    // The empty subscriptions' points (usually none: a pass over the ranges).
    let mut empty: Vec<u32> = subs.iter().filter(|r| r.lo == r.hi).map(|r| r.lo).collect();
    empty.sort_unstable();
    let one = |p: &Range| -> u64 {
        let started = rank(&lo, p.hi);
        let ended = rank_after(&hi, p.lo);
        let mut n = started as u64 - ended.min(started) as u64;
        if p.lo == p.hi && !empty.is_empty() {
            let at = empty.partition_point(|&x| x < p.lo);
            let past = empty.partition_point(|&x| x <= p.lo);
            // started - ended + (empty subscriptions at the point) is exact here.
            n = (started + (past - at)).saturating_sub(ended) as u64;
        }
        n
    };
    if parallel {
        v.pubs.par_iter().with_min_len(GRAIN).map(one).sum()
    } else {
        v.pubs.iter().map(one).sum()
    }
}

/// One kind sorted by lower end in the sweep dimension: the sorted keys and each
/// region's ranges (all dimensions) in that order.
struct Sorted {
    keys: Vec<u64>,
    ranges: Vec<Range>,
}

impl Sorted {
    fn new(ranges: &[Range], dims: usize, dim: usize, parallel: bool) -> Sorted {
        let n = ranges.len() / dims;
        let keys = sorted_keys(n, |i| ranges[i * dims + dim].lo, parallel);
        let mut gathered = vec![Range::default(); n * dims];
        let gather = |(k, out): (&u64, &mut [Range])| {
            let i = (*k & u32::MAX as u64) as usize;
            out.copy_from_slice(&ranges[i * dims..(i + 1) * dims]);
        };
        if parallel {
            keys.par_iter()
                .zip(gathered.par_chunks_mut(dims))
                .with_min_len(GRAIN)
                .for_each(gather);
        } else {
            keys.iter().zip(gathered.chunks_mut(dims)).for_each(gather);
        }
        Sorted {
            keys,
            ranges: gathered,
        }
    }
    #[inline(always)]
    fn index(&self, k: usize) -> u32 {
        (self.keys[k] & u32::MAX as u64) as u32
    }
}

/// The candidates of dimension `dim`, each tested in every dimension, into one sink per
/// task.
fn walk<S: Sink>(v: &Flat<'_>, dim: usize, parallel: bool) -> Vec<S> {
    let d = v.dims;
    let (subs, pubs) = if parallel {
        rayon::join(
            || Sorted::new(v.subs, d, dim, true),
            || Sorted::new(v.pubs, d, dim, true),
        )
    } else {
        (
            Sorted::new(v.subs, d, dim, false),
            Sorted::new(v.pubs, d, dim, false),
        )
    };
    // Publication p (sorted position k): subscriptions with lo in [p.lo, p.hi).
    let from_pub = |sink: &mut S, k: usize| {
        let a = &pubs.ranges[k * d..(k + 1) * d];
        let (b0, b1) = (rank(&subs.keys, a[dim].lo), rank(&subs.keys, a[dim].hi));
        for j in b0..b1.max(b0) {
            if overlap(a, &subs.ranges[j * d..(j + 1) * d]) {
                sink.hit(pubs.index(k), subs.index(j));
            }
        }
    };
    // Subscription s: publications with lo in (s.lo, s.hi).
    let from_sub = |sink: &mut S, k: usize| {
        let b = &subs.ranges[k * d..(k + 1) * d];
        let (a0, a1) = (
            rank_after(&pubs.keys, b[dim].lo),
            rank(&pubs.keys, b[dim].hi),
        );
        for j in a0..a1.max(a0) {
            if overlap(&pubs.ranges[j * d..(j + 1) * d], b) {
                sink.hit(pubs.index(j), subs.index(k));
            }
        }
    };
    let (np, ns) = (v.n_pub, v.n_sub);
    if !parallel {
        let mut sink = S::default();
        (0..np).for_each(|k| from_pub(&mut sink, k));
        (0..ns).for_each(|k| from_sub(&mut sink, k));
        return vec![sink];
    }
    // Tasks of GRAIN regions (publications, then subscriptions), each with its own sink.
    let tasks = np.div_ceil(GRAIN) + ns.div_ceil(GRAIN);
    (0..tasks)
        .into_par_iter()
        .map(|t| {
            let mut sink = S::default();
            let pub_tasks = np.div_ceil(GRAIN);
            if t < pub_tasks {
                (t * GRAIN..((t + 1) * GRAIN).min(np)).for_each(|k| from_pub(&mut sink, k));
            } else {
                let t = t - pub_tasks;
                (t * GRAIN..((t + 1) * GRAIN).min(ns)).for_each(|k| from_sub(&mut sink, k));
            }
            sink
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ddm_region::model::Kind;

    fn set_1d(pubs: &[(u32, u32)], subs: &[(u32, u32)]) -> RegionSet {
        let mut set = RegionSet::new(1).unwrap();
        for (i, &(lo, hi)) in pubs.iter().enumerate() {
            set.push(Kind::Publication, i as u64, &[Range { lo, hi }])
                .unwrap();
        }
        for (i, &(lo, hi)) in subs.iter().enumerate() {
            set.push(Kind::Subscription, i as u64, &[Range { lo, hi }])
                .unwrap();
        }
        set
    }

    #[test]
    fn touching_ranges_do_not_overlap_and_empty_ones_overlap_strict_containers() {
        // p0 [0,10) meets s0 [5,15) only; s1 [10,20) touches it; the empty p1 [12,12)
        // lies inside s0 and s1; the empty p2 [10,10) lies on s1's lower end (no
        // overlap) and inside s0; the empty s2 [12,12) meets nothing empty (p1 at the
        // same point does not overlap it) and lies inside nothing.
        let set = set_1d(
            &[(0, 10), (12, 12), (10, 10)],
            &[(5, 15), (10, 20), (12, 12)],
        );
        // p0-s0, p1-s0, p1-s1, p2-s0.
        assert_eq!(count(&set, None), 4);
        let mut got = pairs(&set, None);
        got.sort_unstable();
        let pair = |publication, subscription| Pair {
            publication,
            subscription,
        };
        assert_eq!(got, vec![pair(0, 0), pair(1, 0), pair(1, 1), pair(2, 0)]);
    }

    #[test]
    fn the_sample_picks_the_dimension_with_fewer_overlaps() {
        // Every range spans dimension 0, dimension 1 is thin: sweep dimension 1.
        let mut set = RegionSet::new(2).unwrap();
        for i in 0..200u32 {
            let r = [
                Range { lo: 0, hi: 1000 },
                Range {
                    lo: i * 10,
                    hi: i * 10 + 5,
                },
            ];
            set.push(Kind::Publication, i as u64, &r).unwrap();
            set.push(Kind::Subscription, i as u64, &r).unwrap();
        }
        assert_eq!(sweep_dim(&set), 1);
    }
}
