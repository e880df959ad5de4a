//! The sort-based sweep engine (beyond the paper; after Raczy, Tan & Yu 2005, and
//! Marzolla & D'Angelo's parallel sort-based matching): for the 1M-region scale-up.
//!
//! Along one sweep dimension, with publications and subscriptions each sorted by lower
//! bound, every pair that overlaps there is found exactly once as a candidate:
//! - case 1, `lo_p <= lo_s`: subscription `s` has `lo_s` in `[lo_p, hi_p)`: a
//!   contiguous run of the sorted subscriptions, found by two binary searches;
//! - case 2, `lo_s < lo_p`: publication `p` has `lo_p` in `(lo_s, hi_s)`: a contiguous
//!   run of the sorted publications.
//!
//! Removed regions stay in the sorted arrays (with their last bounds) and are skipped
//! by the candidate test, which reads a candidate's ranges from a copy of each kind's
//! ranges in sorted order ([`sweep_gather`]: a removed region's copy overlaps nothing),
//! so that a task's consecutive candidates are consecutive in memory, not gathered
//! from the region table by index. Each run is a *task*; the candidates of all tasks form one work list of `W` items
//! (prefix sums of the run lengths), cut into chunks of equal length so that crowded
//! regions do not leave threads idle. Each candidate gets the full overlap test in all
//! dimensions (which also settles the zero-width cases).
//!
//! Tasks are numbered in *sorted* order (task `i < n_pub` is the `i`-th publication by
//! lower bound, task `n_pub + j` the `j`-th subscription), not by region: neighbouring
//! threads then search for neighbouring keys, so that a warp's binary searches take
//! the same path through memory (cached, coalesced), and a task reads its own ranges
//! from the sorted copy too. At 1M regions of the scale-up (alpha 1, H100) the task
//! searches in region order took 160 µs, a quarter of a count.

use crate::{begins_from, extents_overlap, warp_add_u64, DdmTables, Pair, Range};
use gpu_kernels::prelude::*;

/// First index of `keys[..n]` whose key is `>= x` (`strict = 0`) or `> x` (`strict = 1`).
///
/// # Safety
/// `keys` must hold `n` sorted values.
#[inline(always)]
pub unsafe fn search(keys: *const u32, n: u32, x: u32, strict: bool) -> u32 {
    let (mut lo, mut hi) = (0u32, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        // SAFETY: `mid < hi <= n` and `keys` holds `n` values (this fn's contract).
        let k = unsafe { *keys.add(mid as usize) };
        if k < x || (strict && k == x) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Last index `t` of `offsets[..n]` (non-decreasing) with `offsets[t] <= w`.
///
/// # Safety
/// `offsets` must hold `n` values.
#[inline(always)]
unsafe fn owner(offsets: *const u64, n: u32, w: u64) -> u32 {
    let (mut lo, mut hi) = (0u32, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        // SAFETY: `mid < hi <= n` and `offsets` holds `n` values (the caller's: the scanned task
        // offsets, `n_tasks` of them).
        if unsafe { *offsets.add(mid as usize) } <= w {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo - 1
}

kernel! {
    /// Sort keys: thread `i` writes the lower bound in dimension `sweep_dim` of region
    /// `base + i` (global region table) to `keys[i]` and `i` to `vals[i]`. Removed regions
    /// keep their last bounds as keys; the tasks and the candidate test skip them.
    pub fn sweep_keys(tables: *const DdmTables, base: u32, n: u32, sweep_dim: u32, keys: *mut u32, vals: *mut u32) {
        let i = global_id_x();
        if i >= n {
            return;
        }
        let t = *tables;
        *keys.add(i as usize) = (*t.extent(base + i).add(sweep_dim as usize)).lo;
        *vals.add(i as usize) = i;
    }
}

/// What a removed region's copy holds in every dimension of the sorted copies
/// ([`sweep_gather`]): an empty range past every coordinate, which overlaps nothing.
pub const GONE: Range = Range {
    lo: u32::MAX,
    hi: 0,
};

kernel! {
    /// The sorted copy of one kind's ranges, so that the candidate walk reads its
    /// candidates' ranges contiguously instead of gathering them by index: thread `i`
    /// copies the `dims` ranges of region `base + vals[i]` (global region table, `vals`
    /// the kind's sort values) to `sorted[i * dims..]` (global), or [`GONE`] in every
    /// dimension for a removed region (the candidate test then needs no live flag).
    pub fn sweep_gather(
        tables: *const DdmTables,
        base: u32,
        n: u32,
        vals: *const u32,
        sorted: *mut Range,
    ) {
        let i = global_id_x();
        if i >= n {
            return;
        }
        let t = *tables;
        let r = base + *vals.add(i as usize);
        let alive = *t.alive().add(r as usize) != 0;
        let src = t.extent(r);
        let dst = sorted.add(i as usize * t.dims as usize);
        let mut d = 0usize;
        while d < t.dims as usize {
            *dst.add(d) = if alive { *src.add(d) } else { GONE };
            d += 1;
        }
    }
}

kernel! {
    /// The tasks, in sorted order: thread `i < n_pub` finds the case-1 run of the
    /// `i`-th publication by lower bound in the sorted subscription keys, thread
    /// `n_pub + j` the case-2 run of the `j`-th subscription in the sorted publication
    /// keys (binary searches in global memory, neighbouring threads on neighbouring
    /// keys), its sweep-dimension range read from the sorted copies ([`sweep_gather`];
    /// a removed region's copy, [`GONE`], finds an empty run), and writes the run's
    /// first sorted index to `begin[i]` and its length to `count[i]`.
    pub fn sweep_tasks(
        tables: *const DdmTables,
        sweep_dim: u32,
        pub_keys: *const u32,
        sub_keys: *const u32,
        pub_sorted: *const Range,
        sub_sorted: *const Range,
        begin: *mut u32,
        count: *mut u64,
    ) {
        let t = *tables;
        let i = global_id_x();
        if i >= t.n_pub + t.n_sub {
            return;
        }
        let dims = t.dims as usize;
        let (b, e) = if i < t.n_pub {
            let r = *pub_sorted.add(i as usize * dims + sweep_dim as usize);
            (search(sub_keys, t.n_sub, r.lo, false), search(sub_keys, t.n_sub, r.hi, false))
        } else {
            let j = (i - t.n_pub) as usize;
            let r = *sub_sorted.add(j * dims + sweep_dim as usize);
            (search(pub_keys, t.n_pub, r.lo, true), search(pub_keys, t.n_pub, r.hi, false))
        };
        *begin.add(i as usize) = b;
        *count.add(i as usize) = if e > b { (e - b) as u64 } else { 0 };
    }
}

/// What a sweep work kernel needs besides the tables.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct SweepWork {
    /// `u32[n_pub]`, `u32[n_sub]`: region indices in sorted order.
    pub pub_vals: u64,
    pub sub_vals: u64,
    /// `Range[n_pub * dims]`, `Range[n_sub * dims]`: the regions' ranges in sorted order
    /// ([`sweep_gather`]; [`GONE`] for a removed region).
    pub pub_sorted: u64,
    pub sub_sorted: u64,
    /// `u32[n_tasks]`: first sorted index of each task's run.
    pub begin: u64,
    /// `u64[n_tasks]`: exclusive prefix sums of the run lengths.
    pub offsets: u64,
    /// Total work `W` (candidates).
    pub total: u64,
    /// Candidates per chunk.
    pub chunk: u64,
    pub n_tasks: u32,
    pub _pad: u32,
}

/// Sorted entry `j`'s ranges in the sorted copy at address `sorted`.
///
/// # Safety
/// `sorted` holds more than `j` entries of `dims` ranges.
#[inline(always)]
unsafe fn pub_or_sub_sorted(sorted: u64, j: u64, dims: usize) -> *const Range {
    // SAFETY: entry `j` lies inside the copy (this fn's contract).
    unsafe { (sorted as usize as *const Range).add(j as usize * dims) }
}

/// Walks chunk `c`'s candidates, calling `hit(p, s)` for each overlapping pair.
///
/// # Safety
/// `t` must describe the live region tables and `wk` the work list the host built for
/// them in this sort (`sweep_prepare`).
#[inline(always)]
unsafe fn walk_chunk(t: &DdmTables, wk: &SweepWork, c: u64, mut hit: impl FnMut(u32, u32)) {
    let w0 = c * wk.chunk;
    if w0 >= wk.total {
        return;
    }
    let w1 = core::cmp::min(w0 + wk.chunk, wk.total);
    // SAFETY: `wk` is the host's `SweepWork` for this sort: its addresses are the live
    // sorted values, task begins and offsets of `n_tasks` tasks, `w0 < w1 <= total`
    // so every task found by `owner` is `< n_tasks`, and `t` the live region tables.
    unsafe {
        let offsets = wk.offsets as usize as *const u64;
        let begin = wk.begin as usize as *const u32;
        let pub_vals = wk.pub_vals as usize as *const u32;
        let sub_vals = wk.sub_vals as usize as *const u32;
        let mut task = owner(offsets, wk.n_tasks, w0);
        let mut start = *offsets.add(task as usize);
        let mut end = if task + 1 < wk.n_tasks {
            *offsets.add(task as usize + 1)
        } else {
            wk.total
        };
        let mut w = w0;
        while w < w1 {
            while w >= end {
                task += 1;
                start = end;
                end = if task + 1 < wk.n_tasks {
                    *offsets.add(task as usize + 1)
                } else {
                    wk.total
                };
            }
            let j = *begin.add(task as usize) as u64 + (w - start);
            // The task's own ranges and the candidate's from the sorted copies:
            // consecutive candidates of a task are consecutive there (a removed one
            // never overlaps).
            let dims = t.dims as usize;
            if task < t.n_pub {
                let own = pub_or_sub_sorted(wk.pub_sorted, task as u64, dims);
                let cand = pub_or_sub_sorted(wk.sub_sorted, j, dims);
                if extents_overlap(own, cand, t.dims) && begins_from(own, cand, t.overlaps_from) {
                    hit(*pub_vals.add(task as usize), *sub_vals.add(j as usize));
                }
            } else {
                let own = pub_or_sub_sorted(wk.sub_sorted, (task - t.n_pub) as u64, dims);
                let cand = pub_or_sub_sorted(wk.pub_sorted, j, dims);
                if extents_overlap(cand, own, t.dims) && begins_from(cand, own, t.overlaps_from) {
                    hit(
                        *pub_vals.add(j as usize),
                        *sub_vals.add((task - t.n_pub) as usize),
                    );
                }
            }
            w += 1;
        }
    }
}

kernel! {
    /// Counting: thread `c` walks chunk `chunk_base + c` of the work list (global tables,
    /// sorted values, task offsets) and counts the overlapping pairs; with `into_total`
    /// 0 it writes the count to `per_chunk[chunk_base + c]` (and leaves `total` alone),
    /// otherwise the warp sums its lanes' counts and adds them to `total[0]` with one
    /// 64-bit atomic (and `per_chunk` is not written).
    pub fn sweep_count(
        tables: *const DdmTables,
        work: *const SweepWork,
        chunk_base: u64,
        n_chunks: u64,
        per_chunk: *mut u64,
        total: *mut u64,
        into_total: u32,
    ) {
        let t = *tables;
        let wk = *work;
        let c = chunk_base + global_id_x() as u64;
        let mut found = 0u64;
        if c < n_chunks {
            walk_chunk(&t, &wk, c, |_, _| found += 1);
        }
        if into_total == 0 {
            if c < n_chunks {
                *per_chunk.add(c as usize) = found;
            }
        } else {
            warp_add_u64(total, found);
        }
    }
}

/// Most chunks the work list is cut into: the chunk is `max(min_chunk, ceil(W / 2^26))`
/// candidates ([`sweep_plan`], and the host where it reads `W` back).
pub const MAX_CHUNKS_LOG2: u32 = 26;

kernel! {
    /// The chunking of a count, chosen on the device so that the host need not read `W`
    /// back (a wait) and write the work description (a copy) between the sort and the
    /// walk: one thread reads `W` from `total[0]` (the scan's total of the run
    /// lengths), writes it and the chunk length `max(min_chunk, ceil(W / 2^26))` into
    /// `*work` (global; the host wrote its addresses), and zeroes `total[0]` for the
    /// count ([`sweep_count_strided`]).
    pub fn sweep_plan(work: *mut SweepWork, total: *mut u64, min_chunk: u64) {
        if global_id_x() != 0 {
            return;
        }
        let w = *total;
        let per = (w + (1u64 << MAX_CHUNKS_LOG2) - 1) >> MAX_CHUNKS_LOG2;
        (*work).total = w;
        (*work).chunk = if per > min_chunk { per } else { min_chunk };
        *total = 0;
    }
}

kernel! {
    /// Counting with the chunking planned on the device ([`sweep_plan`]): thread `g` of
    /// `G` walks chunks `g`, `g + G`, `g + 2G`, .. of the work list (global tables,
    /// sorted values, task offsets; `ceil(W / chunk)` chunks, read from `*work`), counts
    /// the overlapping pairs, and the warp adds its lanes' counts to `total[0]` with one
    /// 64-bit atomic. Neighbouring threads walk neighbouring chunks, as in
    /// [`sweep_count`].
    pub fn sweep_count_strided(tables: *const DdmTables, work: *const SweepWork, total: *mut u64) {
        let t = *tables;
        let wk = *work;
        let n_chunks = wk.total.div_ceil(wk.chunk);
        let stride = grid_dim_x() as u64 * block_dim_x() as u64;
        let mut c = global_id_x() as u64;
        let mut found = 0u64;
        while c < n_chunks {
            walk_chunk(&t, &wk, c, |_, _| found += 1);
            c += stride;
        }
        warp_add_u64(total, found);
    }
}

kernel! {
    /// Enumeration: thread `c` walks chunk `chunk_base + c` again and writes its `k`-th
    /// overlapping pair to global position `chunk_pos[c] + k` (the scanned per-chunk
    /// counts), keeping those in the window `[out_base, out_base + out_cap)` of `out`.
    /// Windows let the host enumerate any number of pairs (positions are 64-bit).
    pub fn sweep_emit(
        tables: *const DdmTables,
        work: *const SweepWork,
        chunk_base: u64,
        n_chunks: u64,
        chunk_pos: *const u64,
        pairs_total: u64,
        out: *mut Pair,
        out_base: u64,
        out_cap: u64,
    ) {
        let t = *tables;
        let wk = *work;
        let c = chunk_base + global_id_x() as u64;
        if c >= n_chunks {
            return;
        }
        let first = *chunk_pos.add(c as usize);
        let last = if c + 1 < n_chunks { *chunk_pos.add(c as usize + 1) } else { pairs_total };
        if first >= out_base + out_cap || last <= out_base || first == last {
            return;
        }
        let mut pos = first;
        walk_chunk(&t, &wk, c, |p, s| {
            if pos >= out_base && pos < out_base + out_cap {
                *out.add((pos - out_base) as usize) = Pair { publication: p, subscription: s };
            }
            pos += 1;
        });
    }
}
