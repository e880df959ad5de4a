//! Interval-tree matching (ITM) for DDM, after Marzolla & D'Angelo (DS-RT 2017; ACM
//! TOMACS 2020, §4 "Interval Tree Matching"), written here from the paper's description:
//! an interval tree is built over the subscription regions' ranges in dimension 0, then
//! every publication (the paper's update region) queries it, the queries running in
//! parallel with one output per task.
//!
//! The tree is the augmented binary search tree of the paper (Cormen et al.'s interval
//! tree): nodes ordered by lower bound, each holding the largest upper bound in its
//! subtree, so that a query `[lo, hi)` skips a subtree whose largest upper bound is at or
//! below `lo`, and the right subtree of a node whose lower bound is at or above `hi`.
//! Here it is implicit in an array sorted by lower bound (parallel radix sort): the root
//! of a slice is its middle element, its subtrees the halves on either side; the maxima
//! are filled bottom-up (in parallel for large halves). A query visits O(min(n, k log n))
//! nodes for k overlapping ranges.
//!
//! Half-open ranges, zero-width ones included, follow one rule: `[a, b)` and `[c, d)`
//! overlap iff `a < d && c < b`. Other dimensions are checked directly on each candidate
//! of dimension 0 (the subscriptions' other ranges are stored in tree order).
//!
//! Deviations, for speed (same pairs): the publications query in the order of their
//! lower bounds (one more radix sort), so that consecutive queries walk the same paths
//! of the tree. Each subtree also keeps its smallest upper bound: a subtree whose
//! ranges all overlap the query in dimension 0 (its last lower bound below the query's
//! upper bound, its smallest upper bound above the query's lower bound) is a contiguous
//! slice of the array and is checked by a linear scan, as are subtrees of at most
//! `LEAF` nodes, rather than node by node (the scan counts without a branch).

use crate::ddm_kit::{flatten, on, overlap, radix_sort_high, Collect, Count, Flat, Sink};
use ddm_region::model::{Pair, Range, RegionSet};
use rayon::prelude::*;

/// Subtrees of at most this many nodes are scanned linearly.
const LEAF: usize = 32;
/// Subtrees at least this large fill their halves in parallel.
const PAR_FILL: usize = 1 << 15;
/// Publications per parallel task.
const QUERY_GRAIN: usize = 1 << 10;

/// The number of overlapping pairs (on `pool`'s threads when given, else one thread).
pub(crate) fn count(set: &RegionSet, pool: Option<&rayon::ThreadPool>) -> u64 {
    run::<Count>(set, pool).iter().map(|c| c.0).sum()
}

/// The overlapping pairs, in no particular order.
pub(crate) fn pairs(set: &RegionSet, pool: Option<&rayon::ThreadPool>) -> Vec<Pair> {
    let parts = run::<Collect>(set, pool);
    on(pool, || flatten(parts, pool.is_some()))
}

fn run<S: Sink>(set: &RegionSet, pool: Option<&rayon::ThreadPool>) -> Vec<S> {
    let v = Flat::new(set);
    if v.n_pub == 0 || v.n_sub == 0 {
        return vec![S::default()];
    }
    let threads = pool.map_or(1, |p| p.current_num_threads());
    on(pool, || {
        let tree = Tree::build(&v, threads);
        let order = by_lower_bound(v.n_pub, |i| v.publication(i)[0].lo, threads);
        let query = |mut sink: S, &p: &u32| {
            let me = v.publication(p as usize);
            tree.query(p, me[0], &me[1..], &mut sink);
            sink
        };
        if threads > 1 {
            order
                .par_chunks(QUERY_GRAIN)
                .map(|c| c.iter().fold(S::default(), query))
                .collect()
        } else {
            vec![order.iter().fold(S::default(), query)]
        }
    })
}

/// Indices `0..n` ordered by `lo(i)` (radix sort of `lo << 32 | i`).
fn by_lower_bound(n: usize, lo: impl Fn(usize) -> u32 + Sync, threads: usize) -> Vec<u32> {
    let key = |i: usize| (lo(i) as u64) << 32 | i as u64;
    let mut keys: Vec<u64> = if threads > 1 {
        (0..n).into_par_iter().map(key).collect()
    } else {
        (0..n).map(key).collect()
    };
    radix_sort_high(&mut keys, 32, threads > 1, threads);
    if threads > 1 {
        keys.par_iter().map(|&k| k as u32).collect()
    } else {
        keys.iter().map(|&k| k as u32).collect()
    }
}

/// The subscriptions' interval tree, as columns in tree (lower bound) order: the range
/// in dimension 0, the largest and smallest upper bound of the subtree rooted at each
/// node, the subscription's index, and its ranges in the other dimensions.
struct Tree {
    lo: Vec<u32>,
    hi: Vec<u32>,
    max_hi: Vec<u32>,
    min_hi: Vec<u32>,
    ids: Vec<u32>,
    rest: Vec<Range>,
    dims: usize,
}

impl Tree {
    fn build(v: &Flat, threads: usize) -> Tree {
        let d = v.dims;
        let sub = |s: u32| &v.subs[s as usize * d..(s as usize + 1) * d];
        let ids = by_lower_bound(v.n_sub, |s| sub(s as u32)[0].lo, threads);
        let par = threads > 1;
        let column = |f: &(dyn Fn(u32) -> u32 + Sync)| -> Vec<u32> {
            if par {
                ids.par_iter().map(|&s| f(s)).collect()
            } else {
                ids.iter().map(|&s| f(s)).collect()
            }
        };
        let lo = column(&|s| sub(s)[0].lo);
        let hi = column(&|s| sub(s)[0].hi);
        let mut rest = vec![Range::default(); ids.len() * (d - 1)];
        if d > 1 {
            let copy = |(out, &s): (&mut [Range], &u32)| out.copy_from_slice(&sub(s)[1..]);
            if par {
                rest.par_chunks_mut(d - 1)
                    .zip(ids.par_iter())
                    .for_each(copy);
            } else {
                rest.chunks_mut(d - 1).zip(ids.iter()).for_each(copy);
            }
        }
        let mut max_hi = hi.clone();
        let mut min_hi = hi.clone();
        fill(&mut max_hi, &mut min_hi, par);
        Tree {
            lo,
            hi,
            max_hi,
            min_hi,
            ids,
            rest,
            dims: d,
        }
    }

    /// Reports every subscription overlapping publication `p` (`first`: its range in
    /// dimension 0; `rest`: the others).
    #[inline]
    fn query<S: Sink>(&self, p: u32, first: Range, rest: &[Range], sink: &mut S) {
        let (qlo, qhi) = (first.lo, first.hi);
        // Depth-first over slices: down the left halves, the right halves stacked (at
        // most one per level: 33 levels for 2^32 nodes).
        let mut stack = [(0u32, 0u32); 128];
        let mut top = 0usize;
        let (mut l, mut r) = (0usize, self.lo.len());
        loop {
            // Visit slice [l, r): scan it, or go down its left half and stack its right.
            let mut next = None;
            if r - l <= LEAF {
                self.scan(p, first, rest, l..r, false, sink);
            } else {
                let mid = l + (r - l) / 2;
                if self.max_hi[mid] > qlo && self.lo[l] < qhi {
                    if self.lo[r - 1] < qhi && self.min_hi[mid] > qlo {
                        self.scan(p, first, rest, l..r, true, sink);
                    } else {
                        if self.lo[mid] < qhi {
                            if qlo < self.hi[mid] {
                                self.scan(p, first, rest, mid..mid + 1, true, sink);
                            }
                            stack[top] = (mid as u32 + 1, r as u32);
                            top += 1;
                        }
                        next = Some((l, mid));
                    }
                }
            }
            match next {
                Some(s) => (l, r) = s,
                None if top > 0 => {
                    top -= 1;
                    (l, r) = (stack[top].0 as usize, stack[top].1 as usize);
                }
                None => return,
            }
        }
    }

    /// Checks the nodes `at` (in dimension 0 too, unless `inside`: known to overlap there).
    #[inline(always)]
    fn scan<S: Sink>(
        &self,
        p: u32,
        first: Range,
        rest: &[Range],
        at: std::ops::Range<usize>,
        inside: bool,
        sink: &mut S,
    ) {
        let (lo, hi) = (&self.lo[at.clone()], &self.hi[at.clone()]);
        let dim0 = |j: usize| inside || ((lo[j] < first.hi) & (first.lo < hi[j]));
        let n = at.len();
        match self.dims {
            1 => {
                if S::COUNTING {
                    sink.add((0..n).map(|j| dim0(j) as u64).sum());
                } else {
                    for j in 0..n {
                        if dim0(j) {
                            sink.hit(p, self.ids[at.start + j]);
                        }
                    }
                }
            }
            2 => {
                let m = rest[0];
                let r = &self.rest[at.clone()];
                let ok = |j: usize| dim0(j) & (m.lo < r[j].hi) & (r[j].lo < m.hi);
                if S::COUNTING {
                    sink.add((0..n).map(|j| ok(j) as u64).sum());
                } else {
                    for j in 0..n {
                        if ok(j) {
                            sink.hit(p, self.ids[at.start + j]);
                        }
                    }
                }
            }
            d => {
                let k = d - 1;
                for j in 0..n {
                    let i = at.start + j;
                    if dim0(j) && overlap(rest, &self.rest[i * k..(i + 1) * k]) {
                        sink.hit(p, self.ids[i]);
                    }
                }
            }
        }
    }
}

/// Fills the subtree maxima and minima of the upper bounds (both start as the nodes'
/// own upper bounds) of the implicit tree on a slice (root in the middle); returns the
/// slice's (largest, smallest) upper bound.
fn fill(max_hi: &mut [u32], min_hi: &mut [u32], parallel: bool) -> (u32, u32) {
    if max_hi.is_empty() {
        return (0, u32::MAX);
    }
    let mid = max_hi.len() / 2;
    let (max_l, max_r) = max_hi.split_at_mut(mid);
    let (min_l, min_r) = min_hi.split_at_mut(mid);
    let (max_root, max_r) = max_r.split_first_mut().expect("non-empty");
    let (min_root, min_r) = min_r.split_first_mut().expect("non-empty");
    let (a, b) = if parallel && max_l.len() >= PAR_FILL {
        rayon::join(|| fill(max_l, min_l, true), || fill(max_r, min_r, true))
    } else {
        (fill(max_l, min_l, false), fill(max_r, min_r, false))
    };
    *max_root = (*max_root).max(a.0).max(b.0);
    *min_root = (*min_root).min(a.1).min(b.1);
    (*max_root, *min_root)
}
