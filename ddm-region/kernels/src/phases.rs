//! Phases 1 and 2 of §III.B, shared by the region-based and the grid-based approach.
//!
//! Phase 1 ("the information of updated regions is copied to the global memory of the
//! device") is the host's copy of the [`UpdatedRegion`] records and their ranges;
//! [`commit_updates()`] then installs them in the region table. Phase 2 is
//! [`clear_overlaps()`]: the overlap information of each updated region is reset, and the
//! regions it overlapped before forget it.

use crate::{staged_update, DdmTables, Pair, Range, StepCounters, UpdatedRegion};
use gpu_kernels::prelude::*;

kernel! {
    /// Phase 1 (device side): one thread per updated region. Thread `i` copies update
    /// `i`'s record (or, for a dense step, `dense = 1`, the record of region `i`, alive:
    /// [`staged_update`]) to `copy_out` (global) and its `dims` ranges from `ranges` (both
    /// staged by the host: their device copy, or mapped host memory read over the bus)
    /// into the region table, and sets
    /// the region's live flag and its update epoch (global). Runs after Phase 2, which still
    /// needs the old ranges (the grid's unmapping). Thread 0 also zeroes the step
    /// counters, which only the later kernels of the step use.
    pub fn commit_updates(
        tables: *const DdmTables,
        updates: *const UpdatedRegion,
        ranges: *const Range,
        n_updates: u32,
        dense: u32,
        epoch: u32,
        copy_out: *mut UpdatedRegion,
    ) {
        commit_one(&*tables, global_id_x(), (updates, dense), ranges, n_updates, epoch, copy_out);
    }
}

/// [`commit_updates()`]' work for thread `i` (also run by the grid's fused
/// `commit_and_compact`): thread 0 zeroes the step counters; thread `i < n_updates`
/// installs update `i`.
///
/// # Safety
/// `t` describes live device tables; `updates` and `copy_out` hold `n_updates` records,
/// `ranges` `dims` ranges per record, each record's region below `n_pub + n_sub`; a
/// dense step (`updates.1 != 0`, see [`staged_update`]) sends no records.
#[inline(always)]
pub unsafe fn commit_one(
    t: &DdmTables,
    i: u32,
    updates: (*const UpdatedRegion, u32),
    ranges: *const Range,
    n_updates: u32,
    epoch: u32,
    copy_out: *mut UpdatedRegion,
) {
    // SAFETY: the indices stay below `n_updates` and the regions inside the table (this
    // fn's contract); thread 0 alone writes the counters, thread `i` alone record `i`
    // and its region's entries (a batch names a region once).
    unsafe {
        if i == 0 {
            *t.counters() = StepCounters::default();
        }
        if i >= n_updates {
            return;
        }
        let u = staged_update(updates.0, updates.1, i);
        *copy_out.add(i as usize) = u;
        let dst = t.extent(u.region);
        let src = ranges.add(i as usize * t.dims as usize);
        let mut d = 0usize;
        while d < t.dims as usize {
            *dst.add(d) = *src.add(d);
            d += 1;
        }
        *t.alive().add(u.region as usize) = u.alive;
        *t.epoch().add(u.region as usize) = epoch;
    }
}

kernel! {
    /// Phase 2 of §III.B: one warp per updated region (the paper gives it one thread;
    /// a warp lets the 32 lanes sweep the region's bit row in coalesced strides).
    ///
    /// Update `w` is record `w` of `updates`, or region `w` for a dense step
    /// ([`staged_update`]). The lanes of warp `w` exchange the words of updated region
    /// `u`'s own row with 0
    /// ("reset the overlapped information of the assigned updated region") and, for each
    /// bit that was set, clear `u`'s bit in the partner's row of the other matrix with an
    /// atomic AND ("clear those regions which the assigned region overlapped before").
    /// The overlap count (global `u64`) drops by the number of `pub_rows` bits cleared:
    /// each such bit is cleared by exactly one atomic that saw it set. A region whose
    /// `dirty` flag is 0 has an empty row and is skipped (at RS 10, most regions); lane 0
    /// resets the flag.
    pub fn clear_overlaps(
        tables: *const DdmTables,
        updates: *const UpdatedRegion,
        n_updates: u32,
        dense: u32,
    ) {
        let t = *tables;
        let w = global_id_x() / WARP_SIZE;
        let lane = lane_id();
        // `w` is the warp's: a warp past the updates leaves whole, so the shuffle below
        // meets every lane of a warp that stays.
        if w >= n_updates {
            return;
        }
        let r = staged_update(updates, dense, w).region;
        clear_row(&t, r, lane);
    }
}

/// [`clear_overlaps()`]' work for one warp (also run by the grid's fused
/// `clear_and_unmap`): the lanes clear unified region `r`'s row and its bits in its
/// partners' rows, and drop the overlap count by the pairs cleared. Every lane of the
/// warp must call it (it shuffles).
///
/// # Safety
/// `t` describes live device tables and `r < n_pub + n_sub`; no other warp clears `r`
/// in this launch.
#[inline(always)]
pub unsafe fn clear_row(t: &DdmTables, r: u32, lane: u32) {
    // SAFETY: the rows, flags and counter are addressed from `r` and the tables' sizes
    // (this fn's contract); cross-row bits change only through atomics.
    unsafe {
        let mut cleared: u64 = 0;
        // A region whose row has held no bit since its last clear has nothing to clear.
        // Lane 0 reads the flag and hands it to the warp (the shuffle also orders every
        // lane's read before lane 0 resets it below).
        let dirty = t.dirty as usize as *mut u32;
        let flag = if lane == 0 { *dirty.add(r as usize) } else { 0 };
        if shfl(flag, 0) != 0 {
            let pub_rows = t.pub_rows as usize as *mut u32;
            let sub_rows = t.sub_rows as usize as *mut u32;
            if r < t.n_pub {
                let p = r;
                let row = pub_rows.add(p as usize * t.sub_words as usize);
                let mut k = lane;
                while k < t.sub_words {
                    // No bit is set during Phase 2, so a zero word stays zero.
                    if *row.add(k as usize) != 0 {
                        let mut old = atomic_exch(row.add(k as usize), 0);
                        cleared += old.count_ones() as u64;
                        while old != 0 {
                            let b = old.trailing_zeros();
                            old &= old - 1;
                            let s = k * 32 + b;
                            let word =
                                sub_rows.add(s as usize * t.pub_words as usize + (p / 32) as usize);
                            atomic_and(word, !(1u32 << (p % 32)));
                        }
                    }
                    k += WARP_SIZE;
                }
            } else {
                let s = r - t.n_pub;
                let row = sub_rows.add(s as usize * t.pub_words as usize);
                let mut k = lane;
                while k < t.pub_words {
                    if *row.add(k as usize) != 0 {
                        let mut old = atomic_exch(row.add(k as usize), 0);
                        while old != 0 {
                            let b = old.trailing_zeros();
                            old &= old - 1;
                            let p = k * 32 + b;
                            let word =
                                pub_rows.add(p as usize * t.sub_words as usize + (s / 32) as usize);
                            let bit = 1u32 << (s % 32);
                            if atomic_and(word, !bit) & bit != 0 {
                                cleared += 1;
                            }
                        }
                    }
                    k += WARP_SIZE;
                }
            }
        }
        if lane == 0 {
            // Every lane has swept its words (the row is empty now); Phase 3, a later
            // launch, sets the flag again when it sets a bit.
            *dirty.add(r as usize) = 0;
        }
        if cleared != 0 {
            atomic_add_u64(t.overlaps as usize as *mut u64, cleared.wrapping_neg());
        }
    }
}

kernel! {
    /// Beyond the paper, the sorting engines' whole-set load (`Engine::load`): the host has
    /// copied every region's ranges straight into the region table; thread `r` marks
    /// region `r` live and stamps it with `epoch` (global), and thread 0 zeroes the step
    /// counters, as [`commit_updates`] does for a batch naming every region.
    pub fn install_all(tables: *const DdmTables, epoch: u32) {
        let r = global_id_x();
        let t = *tables;
        if r == 0 {
            *t.counters() = StepCounters::default();
        }
        if r >= t.n_pub + t.n_sub {
            return;
        }
        *t.alive().add(r as usize) = 1;
        *t.epoch().add(r as usize) = epoch;
    }
}

kernel! {
    /// Phase 4 of §III.B (Phase 5 of §III.C), device side: the step's answer, written
    /// by the GPU straight into mapped page-locked host memory, so that the host waits
    /// once (one stream synchronisation) and reads it there: no device-to-host copies.
    ///
    /// Thread 0 writes the status pair `[StepCounters as u64, overlap count]` (global)
    /// to `status_out[0..2]`. When `want_pairs` is 1 and the pair list did not
    /// overflow (`new_pairs <= pair_cap`, no cell list overflowed), the threads copy
    /// the `new_pairs` pairs of the list (global) to `pairs_out` (mapped host memory,
    /// room for `pair_cap`) in a grid-stride loop: thread `i` copies pairs `i`,
    /// `i + threads`, ... (coalesced: a warp writes 32 consecutive pairs). Launched
    /// after every kernel of the step, on the same stream.
    pub fn publish_step(
        tables: *const DdmTables,
        want_pairs: u32,
        status_out: *mut u64,
        pairs_out: *mut Pair,
    ) {
        let t = *tables;
        let i = global_id_x();
        let c = *t.counters();
        if i == 0 {
            // The counters' bytes as one word, as the host reads them back.
            *status_out = *(t.counters as usize as *const u64);
            *status_out.add(1) = *(t.overlaps as usize as *const u64);
        }
        if want_pairs == 0 || c.new_pairs > t.pair_cap || c.cell_overflow != 0 {
            return;
        }
        let pairs = t.pairs as usize as *const Pair;
        let threads = grid_dim_x() * block_dim_x();
        let mut j = i;
        while j < c.new_pairs {
            *pairs_out.add(j as usize) = *pairs.add(j as usize);
            j += threads;
        }
    }
}
