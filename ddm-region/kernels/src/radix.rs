//! LSD radix sort of `(u32 key, u32 value)` pairs, 8 bits per pass, for the sweep engine
//! (beyond the paper: §III.A sets sorting aside because *shifting* sorted lists at run
//! time is serial; sorting from scratch each step is data-parallel).
//!
//! A pass is `radix_hist` (per-block digit counts, digit-major), an exclusive scan of
//! the counts ([`crate::scan`]), and `radix_scatter`, which keeps the pass stable: inside
//! a block, elements are placed in index order using warp ballots to rank equal digits.

use gpu_kernels::prelude::*;

/// Threads per radix block (one per digit value: the kernels require exactly 256).
pub const RADIX_BLOCK: u32 = 256;
/// Rounds of `RADIX_BLOCK` consecutive elements per block.
pub const RADIX_ROUNDS: u32 = 8;
/// Elements per radix block.
pub const RADIX_TILE: u32 = RADIX_BLOCK * RADIX_ROUNDS;
/// Shared memory bytes `radix_scatter` needs.
pub const RADIX_SCATTER_SHARED: u32 = 4 * RADIX_BLOCK * (1 + RADIX_BLOCK / 32);

kernel! {
    /// Counts the digits `(key >> shift) & 255` of block `b`'s tile (global keys) in
    /// shared memory with atomics; thread `d` writes digit `d`'s count to
    /// `hist[d * n_blocks + b]` (global), the layout whose exclusive scan gives each
    /// (digit, block) its first output position.
    pub fn radix_hist(keys: *const u32, n: u32, shift: u32, hist: *mut u64, n_blocks: u32) {
        let sh = dynamic_shared::<u32>();
        let k = thread_idx_x();
        let b = block_idx_x();
        *sh.add(k as usize) = 0;
        sync_threads();
        let mut round = 0;
        while round < RADIX_ROUNDS {
            let idx = b * RADIX_TILE + round * RADIX_BLOCK + k;
            if idx < n {
                let d = (*keys.add(idx as usize) >> shift) & 255;
                atomic_add(sh.add(d as usize), 1);
            }
            round += 1;
        }
        sync_threads();
        *hist.add((k * n_blocks + b) as usize) = *sh.add(k as usize) as u64;
    }
}

kernel! {
    /// Stable scatter of block `b`'s tile by digit `(key >> shift) & 255`.
    ///
    /// Thread `d` keeps `run[d]`, the next output position of digit `d` for this block
    /// (from the scanned `offsets`, global). Each round handles 256 consecutive elements:
    /// every warp finds, with 8 ballots, the lanes holding the same digit as each lane
    /// (its rank = same-digit lanes below it), the warps' counts per digit meet in shared
    /// memory `warp_count[warp][digit]` and are prefix-summed over warps by thread
    /// `digit`, and each element goes to `run[d] + warps before + rank`. Shared memory:
    /// `run[256]` and `warp_count[8][256]` (`u32`).
    pub fn radix_scatter(
        keys_in: *const u32,
        vals_in: *const u32,
        keys_out: *mut u32,
        vals_out: *mut u32,
        n: u32,
        shift: u32,
        offsets: *const u64,
        n_blocks: u32,
    ) {
        let run = dynamic_shared::<u32>();
        let warp_count = run.add(RADIX_BLOCK as usize);
        let k = thread_idx_x();
        let b = block_idx_x();
        let lane = lane_id();
        let warp = warp_id();
        let n_warps = RADIX_BLOCK / WARP_SIZE;
        *run.add(k as usize) = *offsets.add((k * n_blocks + b) as usize) as u32;
        let mut w = 0;
        while w < n_warps {
            *warp_count.add((w * RADIX_BLOCK + k) as usize) = 0;
            w += 1;
        }
        sync_threads();
        let mut round = 0;
        // The bound is the same for the whole block, so every thread leaves together.
        while round < RADIX_ROUNDS && b * RADIX_TILE + round * RADIX_BLOCK < n {
            let idx = b * RADIX_TILE + round * RADIX_BLOCK + k;
            let valid = idx < n;
            let (key, val) = if valid { (*keys_in.add(idx as usize), *vals_in.add(idx as usize)) } else { (0, 0) };
            let d = (key >> shift) & 255;
            // Lanes of this warp holding digit d.
            let mut same = ballot(valid);
            let mut bit = 0;
            while bit < 8 {
                let set = (d >> bit) & 1 == 1;
                let votes = ballot(set);
                same &= if set { votes } else { !votes };
                bit += 1;
            }
            let rank = (same & ((1u32 << lane) - 1)).count_ones();
            if valid && lane == 31 - same.leading_zeros() {
                *warp_count.add((warp * RADIX_BLOCK + d) as usize) = same.count_ones();
            }
            sync_threads();
            // Thread k: exclusive prefix of digit k's counts over the warps.
            let mut acc = 0u32;
            let mut w = 0;
            while w < n_warps {
                let p = warp_count.add((w * RADIX_BLOCK + k) as usize);
                let c = *p;
                *p = acc;
                acc += c;
                w += 1;
            }
            sync_threads();
            if valid {
                let pos = *run.add(d as usize) + *warp_count.add((warp * RADIX_BLOCK + d) as usize) + rank;
                *keys_out.add(pos as usize) = key;
                *vals_out.add(pos as usize) = val;
            }
            sync_threads();
            *run.add(k as usize) += acc;
            let mut w = 0;
            while w < n_warps {
                *warp_count.add((w * RADIX_BLOCK + k) as usize) = 0;
                w += 1;
            }
            sync_threads();
            round += 1;
        }
    }
}
