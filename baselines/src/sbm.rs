//! Parallel sort-based matching (SBM) for DDM, after Marzolla & D'Angelo, "Parallel
//! sort-based matching for data distribution management on shared-memory
//! multiprocessors" (DS-RT 2017; extended in ACM TOMACS 2020 as "Parallel Data
//! Distribution Management on Shared-Memory Multiprocessors"), written here from the
//! paper's description.
//!
//! The sweep of dimension 0 (§3 of the paper, after Raczy, Tan & Yu 2005):
//!
//! 1. The end points of every region's range in dimension 0 go into one array `T`,
//!    sorted by coordinate (the paper's parallel sort; here a parallel LSD radix sort of
//!    packed 64-bit keys, `crate::ddm_kit::radix_sort_high`).
//! 2. `T` is cut into `P` segments of equal length (the paper: one per thread; here four
//!    per thread, so that a crowded segment does not hold up the others). Each segment's
//!    initial active sets (the regions opened before the segment and still open at its
//!    start) are computed in parallel: each segment lists the regions that open in it
//!    and are still open at its end (the paper's `SubAdd`/`UpdAdd`), and segment `k`
//!    keeps those of segments `j < k` still open at its start (the paper's prefix
//!    `S_k = (S_{k-1} ∪ Add_{k-1}) \ Del_{k-1}`, evaluated directly per segment rather
//!    than as a sequential chain of set operations).
//! 3. Every segment is swept by one task from its initial active sets, with its own
//!    output (a count, or its own list of pairs: the paper's per-thread output lists).
//!    At a lower end point the region meets the active regions of the other kind (they
//!    overlap in dimension 0) and joins its own kind's active set. (The paper reports at
//!    upper end points; reporting at lower ones finds the same pairs.)
//!
//! Deviation, for speed (same pairs): upper end points are not sorted or swept. Each
//! active region keeps its upper bound; a region whose upper bound is at or below the
//! current coordinate is skipped by every scan of its set, and dropped from it when the
//! set has doubled since its last clean-up (lazy deletion: the sweep's work stays within
//! a constant of the end points plus the candidate pairs of dimension 0). This halves
//! the sort, removes the lookup from an upper end point to its region's place in the
//! active set (a cache miss per region), and lets a scan check its members without a
//! branch (counting is a vectorized sum over the columns of the active set). The
//! regions' ranges are gathered into sweep order once (in parallel) after the sort, so
//! that the sweep reads memory in order.
//!
//! The half-open rule at equal coordinates: a range `[x, x)` of zero width (a "point")
//! is sorted before the ranges that start at `x`, and is checked against the active set
//! but never joins it; an active region with upper bound `x` is expired for every end
//! point at `x`. So `[a, b)` and `[b, c)` do not overlap, and `[x, x)` overlaps exactly
//! the ranges with `lo < x < hi`.
//!
//! Any number of dimensions: the candidates of dimension 0 are checked in the other
//! dimensions directly (their ranges are stored beside each active region, so that the
//! check reads contiguous memory), as the paper does for d > 1. Counting never
//! materializes a pair.

use crate::ddm_kit::{flatten, on, overlap, radix_sort_high, Collect, Count, Flat, Sink};
use ddm_region::model::{Pair, Range, RegionSet};
use rayon::prelude::*;

/// Rank of an end point at equal coordinates (1 bit of the key): zero-width ranges
/// before lower end points.
const POINT: u32 = 0;
const LOWER: u32 = 1;

/// Regions below this use packed 64-bit end points (coordinate, rank, region in 31 bits).
const NARROW_LIMIT: usize = 1 << 31;

/// Segments per thread of the parallel sweep.
const SEGMENTS_PER_THREAD: usize = 4;

/// The number of overlapping pairs (on `pool`'s threads when given, else one thread).
pub(crate) fn count(set: &RegionSet, pool: Option<&rayon::ThreadPool>) -> u64 {
    run::<Count>(set, pool, false).iter().map(|c| c.0).sum()
}

/// The overlapping pairs, in no particular order.
pub(crate) fn pairs(set: &RegionSet, pool: Option<&rayon::ThreadPool>) -> Vec<Pair> {
    let parts = run::<Collect>(set, pool, false);
    on(pool, || flatten(parts, pool.is_some()))
}

fn run<S: Sink>(set: &RegionSet, pool: Option<&rayon::ThreadPool>, wide: bool) -> Vec<S> {
    let v = Flat::new(set);
    if v.n_pub == 0 || v.n_sub == 0 {
        return vec![S::default()];
    }
    let threads = pool.map_or(1, |p| p.current_num_threads());
    on(pool, || {
        if wide || v.n_pub + v.n_sub >= NARROW_LIMIT {
            sweep::<(u64, u32), S>(&v, threads)
        } else {
            sweep::<u64, S>(&v, threads)
        }
    })
}

/// A sorted end point: coordinate, rank, region (see [`Flat`]'s numbering).
trait EndPoint: Copy + Send + Sync {
    fn new(coord: u32, rank: u32, g: u32) -> Self;
    fn rank(self) -> u32;
    fn region(self) -> usize;
    fn sort(v: &mut Vec<Self>, parallel: bool, threads: usize);
}

/// `coordinate << 32 | rank << 31 | region`: regions fewer than 2^31.
impl EndPoint for u64 {
    #[inline(always)]
    fn new(coord: u32, rank: u32, g: u32) -> u64 {
        (coord as u64) << 32 | (rank as u64) << 31 | g as u64
    }
    #[inline(always)]
    fn rank(self) -> u32 {
        (self >> 31) as u32 & 1
    }
    #[inline(always)]
    fn region(self) -> usize {
        (self & ((1 << 31) - 1)) as usize
    }
    fn sort(v: &mut Vec<u64>, parallel: bool, threads: usize) {
        radix_sort_high(v, 31, parallel, threads);
    }
}

/// `(coordinate << 1 | rank, region)`: any number of regions.
impl EndPoint for (u64, u32) {
    #[inline(always)]
    fn new(coord: u32, rank: u32, g: u32) -> (u64, u32) {
        ((coord as u64) << 1 | rank as u64, g)
    }
    #[inline(always)]
    fn rank(self) -> u32 {
        (self.0 & 1) as u32
    }
    #[inline(always)]
    fn region(self) -> usize {
        self.1 as usize
    }
    fn sort(v: &mut Vec<(u64, u32)>, parallel: bool, _: usize) {
        if parallel {
            v.par_sort_unstable_by_key(|e| e.0);
        } else {
            v.sort_unstable_by_key(|e| e.0);
        }
    }
}

/// `T`, sorted: the end points, and in the same order each one's region's range in
/// dimension 0 and its ranges in the other dimensions (`dims - 1` each).
struct Sorted<E> {
    ends: Vec<E>,
    first: Vec<Range>,
    rest: Vec<Range>,
}

fn prepare<E: EndPoint>(v: &Flat, parallel: bool, threads: usize) -> Sorted<E> {
    let total = v.n_pub + v.n_sub;
    let key = |g: usize| {
        let r = v.region(g)[0];
        E::new(r.lo, if r.lo == r.hi { POINT } else { LOWER }, g as u32)
    };
    let d = v.dims;
    // The gathers read the regions in sweep order (random access): written as plain
    // element copies (no memcpy call per region) so that the loads overlap.
    let first = |e: &E| v.region(e.region())[0];
    let second = |e: &E| v.region(e.region())[1];
    let others = |(e, out): (&E, &mut [Range])| {
        for (o, r) in out.iter_mut().zip(&v.region(e.region())[1..]) {
            *o = *r;
        }
    };
    if parallel {
        let mut ends: Vec<E> = (0..total).into_par_iter().map(key).collect();
        E::sort(&mut ends, true, threads);
        let first = ends.par_iter().map(first).collect();
        let rest = match d {
            1 => Vec::new(),
            2 => ends.par_iter().map(second).collect(),
            _ => {
                let mut rest = vec![Range::default(); total * (d - 1)];
                ends.par_iter()
                    .zip(rest.par_chunks_mut(d - 1))
                    .for_each(others);
                rest
            }
        };
        Sorted { ends, first, rest }
    } else {
        let mut ends: Vec<E> = (0..total).map(key).collect();
        E::sort(&mut ends, false, 1);
        let first = ends.iter().map(first).collect();
        let rest = match d {
            1 => Vec::new(),
            2 => ends.iter().map(second).collect(),
            _ => {
                let mut rest = vec![Range::default(); total * (d - 1)];
                ends.iter().zip(rest.chunks_mut(d - 1)).for_each(others);
                rest
            }
        };
        Sorted { ends, first, rest }
    }
}

fn sweep<E: EndPoint, S: Sink>(v: &Flat, threads: usize) -> Vec<S> {
    let parallel = threads > 1;
    let t = prepare::<E>(v, parallel, threads);
    let len = t.ends.len();
    if !parallel {
        return vec![sweep_segment(v, &t, 0, len, &[])];
    }
    let segs = (threads * SEGMENTS_PER_THREAD).min(len);
    let bound = |k: usize| k * len / segs;
    // The coordinate at which segment k starts (end points before it are below or at it).
    let start = |k: usize| {
        if k < segs {
            t.first[bound(k)].lo
        } else {
            u32::MAX
        }
    };
    // Regions that open in segment j and are still open where segment j + 1 starts.
    let open: Vec<Vec<u32>> = (0..segs)
        .into_par_iter()
        .map(|j| {
            let x = start(j + 1);
            (bound(j)..bound(j + 1))
                .filter(|&i| t.ends[i].rank() == LOWER && t.first[i].hi > x)
                .map(|i| i as u32)
                .collect()
        })
        .collect();
    (0..segs)
        .into_par_iter()
        .map(|k| {
            let x = start(k);
            let initial: Vec<u32> = open[..k]
                .iter()
                .flatten()
                .copied()
                .filter(|&i| t.first[i as usize].hi > x)
                .collect();
            sweep_segment(v, &t, bound(k), bound(k + 1), &initial)
        })
        .collect()
}

/// One kind's active regions, as columns: ids, upper bounds in dimension 0, the range
/// in dimension 1 (when there is one), and the ranges of the dimensions after that,
/// `more` per region. Regions whose upper bound has been passed are skipped by every
/// scan, and dropped when the set has grown to twice its live size since the last drop
/// (so a scan's cost stays within twice the live members, and checking a member costs
/// no branch: counting runs as a vectorized sum).
struct Active {
    ids: Vec<u32>,
    hi: Vec<u32>,
    lo1: Vec<u32>,
    hi1: Vec<u32>,
    more: Vec<Range>,
    rest: usize,
    /// Drop the expired members when the set grows beyond this.
    limit: usize,
}

/// Smallest `limit` of an active set.
const MIN_LIMIT: usize = 64;

impl Active {
    fn new(rest: usize) -> Active {
        Active {
            ids: Vec::new(),
            hi: Vec::new(),
            lo1: Vec::new(),
            hi1: Vec::new(),
            more: Vec::new(),
            rest,
            limit: MIN_LIMIT,
        }
    }

    /// Adds a region (its range in dimension 0, and in the others); members that ended at
    /// or before its lower bound may be dropped.
    #[inline(always)]
    fn insert(&mut self, id: u32, first: Range, rest: &[Range]) {
        if self.ids.len() >= self.limit {
            self.drop_expired(first.lo);
        }
        self.ids.push(id);
        self.hi.push(first.hi);
        if self.rest >= 1 {
            self.lo1.push(rest[0].lo);
            self.hi1.push(rest[0].hi);
            if self.rest >= 2 {
                self.more.extend_from_slice(&rest[1..]);
            }
        }
    }

    /// Keeps the members whose upper bound is above `x`.
    fn drop_expired(&mut self, x: u32) {
        let more = self.rest.saturating_sub(1);
        let mut k = 0;
        for j in 0..self.ids.len() {
            if self.hi[j] > x {
                self.ids[k] = self.ids[j];
                self.hi[k] = self.hi[j];
                if self.rest >= 1 {
                    self.lo1[k] = self.lo1[j];
                    self.hi1[k] = self.hi1[j];
                    for m in 0..more {
                        self.more[k * more + m] = self.more[j * more + m];
                    }
                }
                k += 1;
            }
        }
        self.ids.truncate(k);
        self.hi.truncate(k);
        if self.rest >= 1 {
            self.lo1.truncate(k);
            self.hi1.truncate(k);
            self.more.truncate(k * more);
        }
        self.limit = (2 * k).max(MIN_LIMIT);
    }

    /// Reports every member overlapping region `me` (`first`: dimension 0, which starts
    /// at or after every member's; `rest`: the other dimensions).
    #[inline(always)]
    fn scan<S: Sink>(
        &self,
        sink: &mut S,
        me_is_pub: bool,
        me_id: u32,
        first: Range,
        rest: &[Range],
    ) {
        let x = first.lo;
        let n = self.ids.len();
        let hi = &self.hi[..n];
        if self.rest == 0 {
            if S::COUNTING {
                sink.add(hi.iter().map(|&h| (h > x) as u64).sum());
                return;
            }
            for (&h, &o) in hi.iter().zip(&self.ids) {
                if h > x {
                    emit(sink, me_is_pub, me_id, o);
                }
            }
            return;
        }
        let (lo1, hi1) = (&self.lo1[..n], &self.hi1[..n]);
        let m = rest[0];
        let live = |j: usize| (hi[j] > x) & (m.lo < hi1[j]) & (lo1[j] < m.hi);
        if self.rest == 1 {
            if S::COUNTING {
                sink.add((0..n).map(|j| live(j) as u64).sum());
                return;
            }
            for j in 0..n {
                if live(j) {
                    emit(sink, me_is_pub, me_id, self.ids[j]);
                }
            }
            return;
        }
        let more = self.rest - 1;
        for j in 0..n {
            if live(j) && overlap(&rest[1..], &self.more[j * more..(j + 1) * more]) {
                emit(sink, me_is_pub, me_id, self.ids[j]);
            }
        }
    }
}

#[inline(always)]
fn emit<S: Sink>(sink: &mut S, me_is_pub: bool, me_id: u32, other: u32) {
    if me_is_pub {
        sink.hit(me_id, other)
    } else {
        sink.hit(other, me_id)
    }
}

/// Sweeps `T[from..to]` from the active sets given by `initial` (positions in `T` of
/// the regions open at `from`).
fn sweep_segment<E: EndPoint, S: Sink>(
    v: &Flat,
    t: &Sorted<E>,
    from: usize,
    to: usize,
    initial: &[u32],
) -> S {
    let mut sink = S::default();
    let d = v.dims;
    let n_pub = v.n_pub;
    let mut act = [Active::new(d - 1), Active::new(d - 1)];
    let split = |g: usize| {
        if g < n_pub {
            (0usize, g as u32)
        } else {
            (1usize, (g - n_pub) as u32)
        }
    };
    let r = d - 1;
    for &i in initial {
        let i = i as usize;
        let (kind, id) = split(t.ends[i].region());
        act[kind].insert(id, t.first[i], &t.rest[i * r..(i + 1) * r]);
    }
    for i in from..to {
        let e = t.ends[i];
        let (kind, id) = split(e.region());
        let (first, rest) = (t.first[i], &t.rest[i * r..(i + 1) * r]);
        act[1 - kind].scan(&mut sink, kind == 0, id, first, rest);
        if e.rank() == LOWER {
            act[kind].insert(id, first, rest);
        }
    }
    sink
}

#[cfg(test)]
mod tests {
    use super::*;
    use ddm_region::model::Kind;

    /// The fallback for 2^30 regions or more (keys of 96 bits) on small sets: same
    /// answers as the packed keys, counting and enumerating, one thread and several.
    #[test]
    fn wide_end_points_give_the_same_pairs_as_packed_ones() {
        let mut set = RegionSet::new(2).unwrap();
        let mut x = 12345u32;
        let mut next = |m: u32| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x % m
        };
        for i in 0..3000u64 {
            let kind = if i % 2 == 0 {
                Kind::Publication
            } else {
                Kind::Subscription
            };
            let r: Vec<Range> = (0..2)
                .map(|_| {
                    let lo = next(1000);
                    Range {
                        lo,
                        hi: lo + next(40),
                    }
                })
                .collect();
            set.push(kind, i, &r).unwrap();
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        for pool in [None, Some(&pool)] {
            let narrow = run::<Collect>(&set, pool, false);
            let wide = run::<Collect>(&set, pool, true);
            let mut a = flatten(narrow, false);
            let mut b = flatten(wide, false);
            a.sort_unstable();
            b.sort_unstable();
            assert!(!a.is_empty());
            assert_eq!(a, b);
            let c: u64 = run::<Count>(&set, pool, true).iter().map(|c| c.0).sum();
            assert_eq!(c, a.len() as u64);
        }
    }
}
