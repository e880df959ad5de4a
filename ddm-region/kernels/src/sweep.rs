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
//! ranges in sorted order ([`sweep_gather()`]: a removed region's copy overlaps nothing),
//! so that a task's consecutive candidates are consecutive in memory, not gathered
//! from the region table by index. Each run is a *task*; the candidates of all tasks form one work list of `W` items
//! (prefix sums of the run lengths), cut into chunks of equal length so that crowded
//! regions do not leave threads idle. Each candidate gets the full overlap test in all
//! dimensions (which also settles the zero-width cases).
//!
//! In several dimensions the candidates along one dimension grow with the square of the
//! regions (1M 2-D regions at overlap degree 1: about 4 * 10^8 candidates for 10^6
//! pairs); the bisect engine therefore sweeps in *strips* of a second dimension
//! ([`Strips`]): each region is entered once per strip it touches (one or two, the strips
//! as wide as the widest range), the sort keys put each strip's entries together, and a
//! run is searched within its own strip, so that only regions near each other in both
//! dimensions are candidates (a few million there). A pair is counted in the strip where
//! its overlap begins.
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

/// The key of an entry that stands for no strip ([`sweep_keys()`] with strips: a region
/// touching one strip has a second entry with this key): sorted after every live key, it
/// is no candidate and its task's run is empty.
pub const NO_STRIP: u32 = u32::MAX;

/// How the sweep cuts a second dimension into strips (beyond the paper; `width` 0: no
/// strips, the plain sweep of the whole space). They are the paper's grid (§III.C) in one
/// dimension, its cell lists replaced by sorted keys: strip `k` is `[k * width, (k + 1) *
/// width)` of dimension `dim`, `width` at least the widest live range there, so that a
/// region touches one strip or two; each touched strip gives the region an entry whose
/// sort key is `(k << shift) + (lo >> quantum)` (`lo` its lower bound in the sweep
/// dimension, every live bound there below `1 << (shift + quantum)`), so that the sorted
/// keys run strip by strip and the sweep of each strip meets only the regions of that
/// strip. A pair that overlaps in `dim` is counted in one strip only, the one holding the
/// start of its overlap there (`max(lo_p, lo_s)`), which both regions touch (as the
/// paper's grid compares a pair in one cell, here the one of its intersection's lower
/// corner). Where the sweep dimension's bounds need more bits than the keys leave
/// (`quantum` > 0), a run is searched by the bounds' quanta, a superset, and a candidate
/// whose lower bound ties the task's quantum is told apart exactly in the walk: a pair
/// belongs to the publication's run when `lo_p <= lo_s`, else to the subscription's.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Strips {
    pub dim: u32,
    pub shift: u32,
    pub width: u32,
    pub quantum: u32,
}

impl Strips {
    /// Entries per region: 1 without strips, 2 with.
    #[inline(always)]
    pub fn entries(self) -> u32 {
        if self.width == 0 {
            1
        } else {
            2
        }
    }

    /// The strip of coordinate `x` of the strip dimension.
    #[inline(always)]
    pub fn strip_of(self, x: u32) -> u32 {
        x / self.width
    }

    /// The key of coordinate `x` of the sweep dimension in strip `k`.
    #[inline(always)]
    pub fn key(self, k: u32, x: u32) -> u32 {
        (k << self.shift) + (x >> self.quantum)
    }

    /// With strips, the keys `[from, to)` of the run of the entry whose key is `own` and
    /// whose range in the sweep dimension is `r`: every candidate whose lower bound lies
    /// in `r`, in the entry's strip (by quanta: a superset); `None` for an empty range or
    /// a [`NO_STRIP`] entry.
    #[inline(always)]
    pub fn run_keys(self, own: u32, r: Range) -> Option<(u32, u32)> {
        if own == NO_STRIP || r.hi <= r.lo {
            return None;
        }
        let k = own >> self.shift;
        // (The last key may be the next strip's first: an exclusive bound.)
        Some((self.key(k, r.lo), self.key(k, r.hi - 1) + 1))
    }
}

kernel! {
    /// Sort keys: thread `i < n` takes region `base + i` (global region table). Without
    /// strips (`strip_width` 0) it writes its lower bound in dimension `sweep_dim` to
    /// `keys[i]` and `i` to `vals[i]`; removed regions keep their last bounds as keys (the
    /// tasks and the candidate test skip them). With strips ([`Strips`]) it writes the
    /// region's two entries, `i` and `n + i`: the key in its first strip of dimension
    /// `strip_dim`, and in the next one when it reaches it, else [`NO_STRIP`] (both
    /// [`NO_STRIP`] for a removed region), `i` as both values.
    pub fn sweep_keys(
        tables: *const DdmTables,
        base: u32,
        n: u32,
        sweep_dim: u32,
        strip_dim: u32,
        strip_shift: u32,
        strip_width: u32,
        strip_quantum: u32,
        keys: *mut u32,
        vals: *mut u32,
    ) {
        let i = global_id_x();
        if i >= n {
            return;
        }
        let t = *tables;
        let r = base + i;
        let lo = (*t.extent(r).add(sweep_dim as usize)).lo;
        *vals.add(i as usize) = i;
        if strip_width == 0 {
            *keys.add(i as usize) = lo;
            return;
        }
        let strips = Strips { dim: strip_dim, shift: strip_shift, width: strip_width, quantum: strip_quantum };
        let (first, second) = if *t.alive().add(r as usize) != 0 {
            let b = *t.extent(r).add(strip_dim as usize);
            let k = strips.strip_of(b.lo);
            let last = if b.hi > b.lo { strips.strip_of(b.hi - 1) } else { k };
            (strips.key(k, lo), if last > k { strips.key(k + 1, lo) } else { NO_STRIP })
        } else {
            (NO_STRIP, NO_STRIP)
        };
        *keys.add(i as usize) = first;
        *keys.add((n + i) as usize) = second;
        *vals.add((n + i) as usize) = i;
    }
}

/// What a removed region's copy holds in every dimension of the sorted copies
/// ([`sweep_gather()`]): an empty range past every coordinate, which overlaps nothing.
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
    /// The tasks, in sorted order: thread `i < n_pub_tasks` finds the case-1 run of the
    /// `i`-th publication entry by key in the sorted subscription keys (`n_sub_tasks`),
    /// thread `n_pub_tasks + j` the case-2 run of the `j`-th subscription entry in the
    /// sorted publication keys (binary searches in global memory, neighbouring threads
    /// on neighbouring keys), its sweep-dimension range read from the sorted copies
    /// ([`sweep_gather`]; a removed region's copy, [`GONE`], finds an empty run), with
    /// strips (`strip_width` > 0) the bounds searched within the entry's own strip (a
    /// [`NO_STRIP`] entry's run is empty), and writes the run's first sorted index to
    /// `begin[i]` and its length to `count[i]`.
    pub fn sweep_tasks(
        tables: *const DdmTables,
        sweep_dim: u32,
        pub_keys: *const u32,
        sub_keys: *const u32,
        pub_sorted: *const Range,
        sub_sorted: *const Range,
        begin: *mut u32,
        count: *mut u64,
        n_pub_tasks: u32,
        n_sub_tasks: u32,
        strip_shift: u32,
        strip_width: u32,
        strip_quantum: u32,
    ) {
        let t = *tables;
        let i = global_id_x();
        if i >= n_pub_tasks + n_sub_tasks {
            return;
        }
        let strips = Strips { dim: 0, shift: strip_shift, width: strip_width, quantum: strip_quantum };
        let dims = t.dims as usize;
        let (b, e) = if i < n_pub_tasks {
            let r = *pub_sorted.add(i as usize * dims + sweep_dim as usize);
            if strip_width == 0 {
                (search(sub_keys, n_sub_tasks, r.lo, false), search(sub_keys, n_sub_tasks, r.hi, false))
            } else if let Some((from, to)) = strips.run_keys(*pub_keys.add(i as usize), r) {
                (search(sub_keys, n_sub_tasks, from, false), search(sub_keys, n_sub_tasks, to, false))
            } else {
                (0, 0)
            }
        } else {
            let j = (i - n_pub_tasks) as usize;
            let r = *sub_sorted.add(j * dims + sweep_dim as usize);
            if strip_width == 0 {
                (search(pub_keys, n_pub_tasks, r.lo, true), search(pub_keys, n_pub_tasks, r.hi, false))
            } else if let Some((from, to)) = strips.run_keys(*sub_keys.add(j), r) {
                (search(pub_keys, n_pub_tasks, from, false), search(pub_keys, n_pub_tasks, to, false))
            } else {
                (0, 0)
            }
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
    /// `u32[n_pub_tasks]`, `u32[n_tasks - n_pub_tasks]`: region indices in sorted order.
    pub pub_vals: u64,
    pub sub_vals: u64,
    /// The sorted keys of the same entries (read for a strip's number, [`Strips`]).
    pub pub_keys: u64,
    pub sub_keys: u64,
    /// `Range[n_pub_tasks * dims]`, `Range[(n_tasks - n_pub_tasks) * dims]`: the entries' ranges in sorted order
    /// ([`sweep_gather()`]; [`GONE`] for a removed region).
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
    /// Tasks in all, and of publication entries (the first ones): one entry a region,
    /// two with strips.
    pub n_tasks: u32,
    pub n_pub_tasks: u32,
    /// The sweep dimension, and the strips ([`Strips`]; `strip_width` 0: none).
    pub sweep_dim: u32,
    pub strip_dim: u32,
    pub strip_shift: u32,
    pub strip_width: u32,
    pub strip_quantum: u32,
    pub _pad: u32,
}

impl SweepWork {
    /// The strips of this sweep.
    #[inline(always)]
    pub fn strips(&self) -> Strips {
        Strips {
            dim: self.strip_dim,
            shift: self.strip_shift,
            width: self.strip_width,
            quantum: self.strip_quantum,
        }
    }
}

/// True when the pair of a task's entry (key `own`, ranges at `a`, a publication's when
/// `own_is_pub`) and a candidate (ranges at `b`), which overlap, is counted in this run:
/// always without strips (the runs are exact); with them, when the entry's strip holds the
/// start of their overlap in the strip dimension, and the run is the pair's by the lower
/// bounds in the sweep dimension `sweep` (the publication's when `lo_p <= lo_s`).
///
/// # Safety
/// `a` and `b` must point at the ranges of every dimension up to the strip and sweep
/// dimensions.
#[inline(always)]
unsafe fn counted_here(
    strips: Strips,
    sweep: u32,
    own: u32,
    own_is_pub: bool,
    a: *const Range,
    b: *const Range,
) -> bool {
    if strips.width == 0 {
        return true;
    }
    // SAFETY: both point at the strip and sweep dimensions' ranges (this fn's contract).
    let (ra, rb, sa, sb) = unsafe {
        (
            *a.add(strips.dim as usize),
            *b.add(strips.dim as usize),
            *a.add(sweep as usize),
            *b.add(sweep as usize),
        )
    };
    let ours = if own_is_pub {
        sa.lo <= sb.lo
    } else {
        sa.lo < sb.lo
    };
    ours && strips.strip_of(ra.lo.max(rb.lo)) == own >> strips.shift
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

/// Empty tasks a walk steps over one by one before it finds the next task with
/// candidates by binary search ([`owner`]).
const SKIP_STEPS: u32 = 8;

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
    // sorted values and keys, task begins and offsets of `n_tasks` tasks (the first
    // `n_pub_tasks` of them publication entries), `w0 < w1 <= total`
    // so every task found by `owner` is `< n_tasks`, and `t` the live region tables.
    unsafe {
        let offsets = wk.offsets as usize as *const u64;
        let begin = wk.begin as usize as *const u32;
        let pub_vals = wk.pub_vals as usize as *const u32;
        let sub_vals = wk.sub_vals as usize as *const u32;
        let pub_keys = wk.pub_keys as usize as *const u32;
        let sub_keys = wk.sub_keys as usize as *const u32;
        let mut task = owner(offsets, wk.n_tasks, w0);
        let mut start = *offsets.add(task as usize);
        let mut end = if task + 1 < wk.n_tasks {
            *offsets.add(task as usize + 1)
        } else {
            wk.total
        };
        let mut w = w0;
        while w < w1 {
            // The next task with candidates: the next few one by one, then, past a
            // stretch of empty ones (the strips' `NO_STRIP` entries lie together at the
            // end of each kind's list: hundreds of thousands at 1M regions, which one
            // thread stepped through one by one for tens of ms), by binary search.
            let mut steps = 0;
            while w >= end {
                if steps < SKIP_STEPS {
                    task += 1;
                    start = end;
                    steps += 1;
                } else {
                    task = owner(offsets, wk.n_tasks, w);
                    start = *offsets.add(task as usize);
                }
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
            let strips = wk.strips();
            if task < wk.n_pub_tasks {
                let own = pub_or_sub_sorted(wk.pub_sorted, task as u64, dims);
                let cand = pub_or_sub_sorted(wk.sub_sorted, j, dims);
                if extents_overlap(own, cand, t.dims)
                    && begins_from(own, cand, t.overlaps_from)
                    && counted_here(
                        strips,
                        wk.sweep_dim,
                        *pub_keys.add(task as usize),
                        true,
                        own,
                        cand,
                    )
                {
                    hit(*pub_vals.add(task as usize), *sub_vals.add(j as usize));
                }
            } else {
                let e = (task - wk.n_pub_tasks) as usize;
                let own = pub_or_sub_sorted(wk.sub_sorted, e as u64, dims);
                let cand = pub_or_sub_sorted(wk.pub_sorted, j, dims);
                if extents_overlap(cand, own, t.dims)
                    && begins_from(cand, own, t.overlaps_from)
                    && counted_here(strips, wk.sweep_dim, *sub_keys.add(e), false, own, cand)
                {
                    hit(*pub_vals.add(j as usize), *sub_vals.add(e));
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
/// candidates ([`sweep_plan()`], and the host where it reads `W` back).
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
