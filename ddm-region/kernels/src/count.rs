//! Counting by binary search over sorted end points (beyond the paper; after Marzolla,
//! Birolo, D'Angelo & Fariselli, "Parallel intersection counting on shared-memory
//! multiprocessors and GPUs", FGCS 2024): the count of overlapping pairs in one
//! dimension costs two sorts and two binary searches per region, whatever the number of
//! pairs.
//!
//! With half-open ranges, publication `p` overlaps subscription `s` in a dimension iff
//! `s.lo < p.hi && p.lo < s.hi`. When `p` is not empty (`p.lo < p.hi`), every `s` with
//! `s.hi <= p.lo` also has `s.lo <= s.hi <= p.lo < p.hi`, so
//!
//! ```text
//! overlaps(p) = #{s : s.lo < p.hi} - #{s : s.hi <= p.lo}
//! ```
//!
//! both terms being ranks in the sorted lower and upper ends of the subscriptions. The
//! identity fails only for an empty `p` meeting an empty `s` at the same point; the
//! kernels raise a flag when they see an empty range in the counted dimension, and the
//! host then counts by the candidate sweep instead ([`crate::sweep`]). Removed
//! subscriptions get the keys `u32::MAX` at both ends: never `< p.hi`, and `<= p.lo`
//! only for an empty `p` (which raises the flag).
//!
//! For several dimensions, [`dim_candidates()`] estimates from a sample which dimension
//! has the fewest overlapping pairs, the sweep's candidates there.

use crate::sweep::search;
use crate::{warp_add_u64, DdmTables};
use gpu_kernels::prelude::*;

/// Index, in the `u64[2]` tally the count kernels write, of the flag raised when a live
/// region has an empty range in the counted dimension (index 0 holds the count).
pub const EMPTY_FLAG: usize = 1;

/// Publications and subscriptions each sampled by [`dim_candidates()`] (at most; the host
/// takes `min(SAMPLE, max(n_pub, n_sub) / 8)`, at least 1).
pub const SAMPLE: u32 = 512;

/// Most dimensions [`dim_candidates()`] estimates (the others are never chosen).
pub const MAX_ESTIMATED_DIMS: u32 = 8;

kernel! {
    /// The subscriptions' end points in dimension `dim`: thread `j < n_sub` writes
    /// subscription `j`'s lower end to `lo_keys[j]` and upper end to `hi_keys[j]`
    /// (`u32::MAX` for both when it is removed; global region table in, global keys
    /// out), and `j` to `lo_vals[j]` and `hi_vals[j]` (the radix sort carries values;
    /// the count does not read them). A live empty range sets `tally[EMPTY_FLAG]` to 1
    /// (a plain store of one value by any racing thread).
    pub fn end_keys(
        tables: *const DdmTables,
        dim: u32,
        lo_keys: *mut u32,
        lo_vals: *mut u32,
        hi_keys: *mut u32,
        hi_vals: *mut u32,
        tally: *mut u64,
    ) {
        let t = *tables;
        let j = global_id_x();
        if j >= t.n_sub {
            return;
        }
        let v = t.n_pub + j;
        let (lo, hi) = if *t.alive().add(v as usize) != 0 {
            let r = *t.extent(v).add(dim as usize);
            if r.lo == r.hi {
                *tally.add(EMPTY_FLAG) = 1;
            }
            (r.lo, r.hi)
        } else {
            (u32::MAX, u32::MAX)
        };
        *lo_keys.add(j as usize) = lo;
        *hi_keys.add(j as usize) = hi;
        *lo_vals.add(j as usize) = j;
        *hi_vals.add(j as usize) = j;
    }
}

kernel! {
    /// The count: thread `i < n_pub` takes publication `i` (global region table) and,
    /// when it is live, finds `#{s.lo < p.hi}` and `#{s.hi <= p.lo}` by binary search in
    /// the sorted subscription ends `lo_sorted` and `hi_sorted` (global, `n_sub` each,
    /// read through the cache: 8 MB for a million subscriptions), and their difference
    /// is its count; the warp sums its lanes' counts and adds them to `tally[0]` with one
    /// 64-bit atomic. An empty publication range sets `tally[EMPTY_FLAG]` (plain store).
    pub fn bisect_count(
        tables: *const DdmTables,
        dim: u32,
        lo_sorted: *const u32,
        hi_sorted: *const u32,
        tally: *mut u64,
    ) {
        let t = *tables;
        let i = global_id_x();
        let mut found = 0u64;
        if i < t.n_pub && *t.alive().add(i as usize) != 0 {
            let r = *t.extent(i).add(dim as usize);
            if r.lo == r.hi {
                *tally.add(EMPTY_FLAG) = 1;
            } else {
                let started = search(lo_sorted, t.n_sub, r.hi, false);
                let ended = search(hi_sorted, t.n_sub, r.lo, true);
                found = started.saturating_sub(ended) as u64;
            }
        }
        warp_add_u64(tally, found);
    }
}

kernel! {
    /// The sweep dimension's estimate: thread `k < samples^2` takes the sample pair
    /// (publication `(k / samples) * n_pub / samples`, subscription
    /// `(k % samples) * n_sub / samples`) (global region table, read through the cache)
    /// and, when both are live, tests their ranges in each of the first
    /// `min(dims, MAX_ESTIMATED_DIMS)` dimensions; per dimension, the warp sums its
    /// lanes' overlaps into `per_dim[d]` (global, zeroed by the host) with one 64-bit
    /// atomic. One pair per thread, so that the few hundred thousand tests run at once
    /// rather than as a long chain of dependent loads per thread. Every lane runs the
    /// same loop (a lane past the pairs counts nothing), so the warp sums meet.
    pub fn dim_candidates(tables: *const DdmTables, samples: u32, per_dim: *mut u64) {
        let t = *tables;
        let k = global_id_x();
        let dims = if t.dims < MAX_ESTIMATED_DIMS { t.dims } else { MAX_ESTIMATED_DIMS };
        let pairs = samples as u64 * samples as u64;
        // (No pair is live when `samples` is 0: `k < pairs` fails.)
        let m = samples.max(1);
        let (i, j) = (k / m, k % m);
        let p = (i as u64 * t.n_pub as u64 / m as u64) as u32;
        let s = (j as u64 * t.n_sub as u64 / m as u64) as u32;
        let live = (k as u64) < pairs
            && p < t.n_pub
            && s < t.n_sub
            && *t.alive().add(p as usize) != 0
            && *t.alive().add((t.n_pub + s) as usize) != 0;
        let mut d = 0u32;
        while d < dims {
            let mut found = 0u64;
            if live {
                let a = *t.extent(p).add(d as usize);
                let b = *t.extent(t.n_pub + s).add(d as usize);
                found = a.overlaps(b) as u64;
            }
            warp_add_u64(per_dim.add(d as usize), found);
            d += 1;
        }
    }
}

/// Where [`dim_extents()`] writes its maxima in its `u64` output: the largest live upper
/// bound of dimension `d` at `EXTENT_HI + d`, the widest live range there at
/// `EXTENT_WIDTH + d` (after the [`dim_candidates()`] sums at `d`, in the same buffer, so
/// that one read brings back both).
pub const EXTENT_HI: usize = MAX_ESTIMATED_DIMS as usize;
pub const EXTENT_WIDTH: usize = 2 * MAX_ESTIMATED_DIMS as usize;

kernel! {
    /// The strips' measures ([`crate::sweep::Strips`]): thread `r` takes region `r`
    /// (global region table) and, when it is live, its upper bound and width in each of
    /// the first `min(dims, MAX_ESTIMATED_DIMS)` dimensions; per dimension, the warp's
    /// maxima go to `out[EXTENT_HI + d]` and `out[EXTENT_WIDTH + d]` (global, zeroed by
    /// the host) with one 64-bit atomic max each. Every lane runs the same loop (a lane
    /// past the regions gives 0), so the warp reductions meet.
    pub fn dim_extents(tables: *const DdmTables, out: *mut u64) {
        let t = *tables;
        let r = global_id_x();
        let dims = if t.dims < MAX_ESTIMATED_DIMS { t.dims } else { MAX_ESTIMATED_DIMS };
        let live = r < t.n_pub + t.n_sub && *t.alive().add(r as usize) != 0;
        let mut d = 0u32;
        while d < dims {
            let (mut hi, mut width) = (0u32, 0u32);
            if live {
                let x = *t.extent(r).add(d as usize);
                hi = x.hi;
                width = x.hi.saturating_sub(x.lo);
            }
            let mut delta = 16;
            while delta > 0 {
                hi = hi.max(shfl_down(hi, delta));
                width = width.max(shfl_down(width, delta));
                delta /= 2;
            }
            if lane_id() == 0 {
                atomic_max_u64(out.add(EXTENT_HI + d as usize), hi as u64);
                atomic_max_u64(out.add(EXTENT_WIDTH + d as usize), width as u64);
            }
            d += 1;
        }
    }
}
