//! Phase 3 of the parallel region-based approach (§III.B, Fig. 2).

use crate::{extents_overlap, record_overlap, DdmTables, Range, UpdatedRegion};
use gpu_kernels::prelude::*;

kernel! {
    /// Phase 3 of §III.B (Fig. 2): one thread per updated region of one kind, blocks of
    /// `M = block_dim_x()` threads.
    ///
    /// Launched over updates `first .. first + n` (all publications, or all
    /// subscriptions) against the `n_cand` regions of the other kind, whose unified
    /// indices start at `cand_base`. For each tile of `M` candidate regions, thread `k` of
    /// the block loads candidate `tile + k`'s ranges from global into shared memory
    /// ("CUDA Thread 1 loads the first region r1 ..."); after the barrier every thread
    /// compares its own updated region (its ranges also staged in shared memory) with
    /// the `M` staged regions, and records each overlap with atomics ([`record_overlap`]).
    /// `skip_updated = 1` (used for subscriptions) skips candidates updated in this
    /// `epoch`, whose own threads find those pairs, so that no pair is compared twice.
    /// A candidate that is removed or skipped is staged as the empty range
    /// `[u32::MAX, 0)` in dimension 0, which overlaps nothing (no flag per candidate);
    /// a tile with no comparable candidate at all (every publication moved, in the
    /// subscriptions' launch) is not compared: the loading threads set a shared word,
    /// one of two used in turn so that thread 0 can clear the next tile's word while
    /// this tile's is read. Shared memory: `2 * M * dims` ranges + 2 words.
    ///
    /// Beyond the paper, the candidates may be cut into `grid_dim_y()` slices of whole
    /// tiles, block row `block_idx_y()` taking one: the same comparisons spread over more
    /// blocks, so that a few thousand updated regions still fill a large GPU.
    pub fn match_region(
        tables: *const DdmTables,
        updates: *const UpdatedRegion,
        first: u32,
        n: u32,
        cand_base: u32,
        n_cand: u32,
        skip_updated: u32,
        epoch: u32,
    ) {
        let t = *tables;
        let dims = t.dims as usize;
        let m = block_dim_x() as usize;
        let k = thread_idx_x() as usize;
        let tile: *mut Range = dynamic_shared::<Range>();
        let own_tile: *mut Range = tile.add(m * dims);
        let any: *mut u32 = own_tile.add(m * dims) as *mut u32;
        if k < 2 {
            *any.add(k) = 0;
        }

        // This thread's updated region (threads past the end still help load tiles).
        let i = global_id_x();
        let mut mine = false;
        let mut r = 0u32;
        if i < n {
            let u = *updates.add((first + i) as usize);
            r = u.region;
            mine = u.alive != 0;
        }
        let own = own_tile.add(k * dims);
        if mine {
            let src = t.extent(r);
            let mut d = 0;
            while d < dims {
                *own.add(d) = *src.add(d);
                d += 1;
            }
        }
        let own_is_pub = r < t.n_pub;
        let mut found: u64 = 0;
        let mut turn = 0usize;
        sync_threads();

        let tiles = n_cand.div_ceil(m as u32);
        let per_slice = tiles.div_ceil(grid_dim_y());
        let mut base = block_idx_y() * per_slice * m as u32;
        let end = core::cmp::min(n_cand, base.saturating_add(per_slice * m as u32));
        while base < end {
            // Load: thread k stages candidate base + k (or the empty range).
            let j = base + k as u32;
            let mut flag = 0u32;
            if j < end {
                let v = cand_base + j;
                flag = *t.alive().add(v as usize);
                if skip_updated != 0 && *t.epoch().add(v as usize) == epoch {
                    flag = 0;
                }
            }
            let dst = tile.add(k * dims);
            if flag != 0 {
                let src = t.extent(cand_base + j);
                let mut d = 0;
                while d < dims {
                    *dst.add(d) = *src.add(d);
                    d += 1;
                }
                *any.add(turn) = 1;
            } else {
                *dst = Range { lo: u32::MAX, hi: 0 };
            }
            sync_threads();
            if k == 0 {
                // Nobody reads or sets the other word until after the next barrier.
                *any.add(turn ^ 1) = 0;
            }
            // Compare: the own region against the M staged regions.
            if mine && *any.add(turn) != 0 {
                let count = core::cmp::min(m as u32, end - base) as usize;
                let mut c = 0usize;
                while c < count {
                    if extents_overlap(own, tile.add(c * dims), dims as u32) {
                        let v = base + c as u32;
                        found += if own_is_pub {
                            record_overlap(&t, r, v)
                        } else {
                            record_overlap(&t, v, r - t.n_pub)
                        };
                    }
                    c += 1;
                }
            }
            sync_threads();
            base += m as u32;
            turn ^= 1;
        }
        if found != 0 {
            atomic_add_u64(t.overlaps as usize as *mut u64, found);
        }
    }
}
