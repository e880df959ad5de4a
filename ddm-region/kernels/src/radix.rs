//! LSD radix sort of `(u32 key, u32 value)` pairs, 8 bits per pass, for the sweep engine
//! (beyond the paper: §III.A sets sorting aside because *shifting* sorted lists at run
//! time is serial; sorting from scratch each step is data-parallel).
//!
//! One sort orders one or two lists in one buffer, each on its own: list A at
//! `[0, n_a)` and list B at `[tiles_a * RADIX_TILE, .. + n_b)` (the engine's two kinds
//! of region, or a kind's low and high end points), so that both lists share each
//! launch. A tile lies in one list.
//!
//! A pass is three launches, the reduce-then-scan shape of GPU radix sorts:
//! 1. `radix_hist`: block `b` counts the digits of its tile ([`RADIX_TILE`] consecutive
//!    elements) into entry `(d, b)` of a digit-major table;
//! 2. `radix_offsets`: a warp per row `d` scans the list's part of it (exclusive, in
//!    place) and writes its total, so entry `(d, b)` becomes the count of digit `d` in
//!    the list's tiles before `b`;
//! 3. `radix_scatter`: block `b` adds the list's start and the list's totals of the
//!    digits below `d` to its entries and places its tile stably (inside the tile,
//!    equal digits keep their order).
//!
//! The scatter gives each warp a contiguous eighth of the tile and ranks its elements
//! with warp ballots and a per-warp run of each digit (a block-wide ranking costs four
//! barriers per 256 elements), sorts the tile by digit in shared memory, and writes it
//! out run by run, so that neighbouring threads store to neighbouring places.

use gpu_kernels::prelude::*;

/// Threads per radix block (one per digit value: the kernels require exactly 256).
pub const RADIX_BLOCK: u32 = 256;
/// Rounds of 32 consecutive elements per warp (a warp's part of a tile).
pub const RADIX_ROUNDS: u32 = 8;
/// Elements per radix block: each of its 8 warps takes `RADIX_ROUNDS * 32` consecutive.
pub const RADIX_TILE: u32 = RADIX_BLOCK * RADIX_ROUNDS;
/// Digit values (8 bits per pass).
pub const RADIX_DIGITS: u32 = 256;
/// Warps of a radix block.
const WARPS: u32 = RADIX_BLOCK / WARP_SIZE;
/// Words of shared memory [`block_scan`] uses.
const SCAN_WORDS: u32 = 16;
/// Shared memory bytes `radix_hist` needs.
pub const RADIX_HIST_SHARED: u32 = 4 * RADIX_DIGITS;
/// Shared memory bytes `radix_scatter` needs: `base[256]`, `local[256]`,
/// `warp_run[8][256]`, the tile sorted by digit (keys, values) and the scan's words
/// (`u32`).
pub const RADIX_SCATTER_SHARED: u32 =
    4 * (RADIX_DIGITS * (2 + WARPS) + 2 * RADIX_TILE + SCAN_WORDS);

/// Digit `(key >> shift) & 255`.
#[inline(always)]
fn digit(key: u32, shift: u32) -> u32 {
    (key >> shift) & (RADIX_DIGITS - 1)
}

/// The list tile `b` lies in: (its first index, one past its last), for lists A at
/// `[0, n_a)` and B at `[tiles_a * RADIX_TILE, .. + n_b)`.
#[inline(always)]
fn list_of(b: u32, n_a: u32, tiles_a: u32, n_b: u32) -> (u32, u32) {
    if b < tiles_a {
        (0, n_a)
    } else {
        let start = tiles_a * RADIX_TILE;
        (start, start + n_b)
    }
}

/// Exclusive prefix sum of one `u32` per thread over a block of [`RADIX_BLOCK`] threads,
/// and the block's total: a [`warp_scan`] per warp, then warp 0 scans the warps' totals
/// in `sh`. Every thread calls it; `sh` is free again when it returns.
///
/// # Safety
/// `sh` points at [`SCAN_WORDS`] shared `u32`s that no other code touches during the
/// call; the block has [`RADIX_BLOCK`] threads.
#[inline(always)]
unsafe fn block_scan(sh: *mut u32, v: u32) -> (u32, u32) {
    let (lane, warp) = (lane_id(), warp_id());
    let (excl, warp_total) = warp_scan(v);
    // SAFETY: `warp < WARPS`, `lane < WARPS` and `WARPS` index the `SCAN_WORDS` words
    // of `sh` (the contract); the barriers are reached by the whole block.
    unsafe {
        if lane == 0 {
            store(sh, warp as usize, warp_total);
        }
        sync_threads();
        if warp == 0 {
            let t = if lane < WARPS {
                load(sh, lane as usize)
            } else {
                0
            };
            let (before, all) = warp_scan(t);
            if lane < WARPS {
                store(sh, lane as usize, before);
            }
            if lane == 0 {
                store(sh, WARPS as usize, all);
            }
        }
        sync_threads();
        let out = (load(sh, warp as usize) + excl, load(sh, WARPS as usize));
        sync_threads();
        out
    }
}

kernel! {
    /// Pass step 1. Block `b` counts the digits of its tile (global `keys`, the part of
    /// the tile inside its list) in shared memory with atomics; thread `d` writes digit
    /// `d`'s count to `hist[d * n_blocks + b]` (global).
    pub fn radix_hist(
        keys: *const u32,
        n_a: u32,
        tiles_a: u32,
        n_b: u32,
        shift: u32,
        hist: *mut u32,
        n_blocks: u32,
    ) {
        let sh = dynamic_shared::<u32>();
        let k = thread_idx_x();
        let b = block_idx_x();
        let (_, end) = list_of(b, n_a, tiles_a, n_b);
        *sh.add(k as usize) = 0;
        sync_threads();
        let mut round = 0;
        while round < RADIX_ROUNDS {
            let idx = b * RADIX_TILE + round * RADIX_BLOCK + k;
            if idx < end {
                atomic_add(sh.add(digit(*keys.add(idx as usize), shift) as usize), 1);
            }
            round += 1;
        }
        sync_threads();
        *hist.add((k * n_blocks + b) as usize) = *sh.add(k as usize);
    }
}

kernel! {
    /// Pass step 2. Each warp takes rows of `hist` (global: row `d` holds digit `d`'s
    /// count in every tile) and turns the list's part of its row (columns `[0, tiles_a)`
    /// for list A, `[tiles_a, n_blocks)` for B) into its exclusive prefix sums in place,
    /// 32 columns at a time ([`warp_scan`], the carry in a register), then writes their
    /// total to `digit_total[list * 256 + d]`. Block `x` serves list
    /// `x / (256 / rows_per_block)` and its `rows_per_block` rows from
    /// `(x % (256 / rows_per_block)) * rows_per_block`, warp `w` the rows `w, w + 8, ..`
    /// of them: few blocks when the tiles are few, a row per warp when they are many.
    pub fn radix_offsets(
        hist: *mut u32,
        n_blocks: u32,
        tiles_a: u32,
        digit_total: *mut u32,
        rows_per_block: u32,
    ) {
        let lane = lane_id();
        let per_list = RADIX_DIGITS / rows_per_block;
        let x = block_idx_x();
        let list = x / per_list;
        let (from, to) = if list == 1 { (tiles_a, n_blocks) } else { (0, tiles_a) };
        let cols = to - from;
        let first = (x % per_list) * rows_per_block;
        let mut d = first + warp_id();
        while d < first + rows_per_block {
            let row = hist.add((d * n_blocks + from) as usize);
            let mut carry = 0;
            let mut j = 0;
            while j < cols {
                let i = j + lane;
                let c = if i < cols { *row.add(i as usize) } else { 0 };
                let (before, total) = warp_scan(c);
                if i < cols {
                    *row.add(i as usize) = carry + before;
                }
                carry += total;
                j += WARP_SIZE;
            }
            if lane == 0 {
                *digit_total.add((list * RADIX_DIGITS + d) as usize) = carry;
            }
            d += WARPS;
        }
    }
}

/// Rows of the digit table one `radix_offsets` block scans for `n_blocks` tiles: all 256
/// (one block per list) when a row is at most [`FEW_TILES`] columns, else one per warp.
pub const fn offsets_rows_per_block(n_blocks: u32) -> u32 {
    if n_blocks <= FEW_TILES {
        RADIX_DIGITS
    } else {
        WARPS
    }
}

/// Tiles up to which one block per list scans the whole digit table.
pub const FEW_TILES: u32 = 64;

/// One round of a warp's ranking: the lanes holding digit `d` (8 ballots over the
/// `valid` lanes) take consecutive places from `run[d]` (shared, the warp's own run of
/// each digit), in lane order; the highest of them advances the run. Returns the calling
/// lane's place (meaningless where `!valid`). Every lane of the warp calls it.
///
/// # Safety
/// `run` points at the warp's [`RADIX_DIGITS`] shared words, touched by no other warp
/// while it ranks.
#[inline(always)]
unsafe fn take_places(run: *mut u32, valid: bool, d: u32) -> u32 {
    let mut same = ballot(valid);
    let mut bit = 0;
    while bit < 8 {
        let set = (d >> bit) & 1 == 1;
        let votes = ballot(set);
        same &= if set { votes } else { !votes };
        bit += 1;
    }
    // SAFETY: `d < RADIX_DIGITS` indexes the warp's run (the contract).
    unsafe {
        let seen = if valid { load(run, d as usize) } else { 0 };
        // Every lane has read the run before the digit's highest lane advances it.
        sync_warp();
        if valid && lane_id() == 31 - same.leading_zeros() {
            store(run, d as usize, seen + same.count_ones());
        }
        sync_warp();
        seen + lanes_below(same)
    }
}

kernel! {
    /// Pass step 3: the stable scatter of block `b`'s tile by digit.
    ///
    /// Thread `d` first sets `base[d]`, the first output position of digit `d` in this
    /// tile: the list's start, the list's totals of the digits below `d` (a block scan
    /// of its part of `digit_total`) and the scanned `hist[d * n_blocks + b]`. Each
    /// warp then counts the digits of its 8
    /// rounds of 32 consecutive elements into `warp_run[warp][..]` (shared) with
    /// [`take_places`]. After a barrier, thread `d` turns the column `warp_run[..][d]`
    /// into the tile-local sorted position of the warp's first digit `d`: the digits
    /// below `d` in the tile (`local[d]`, a block scan) plus the warps before. Each warp
    /// reads its rounds again (the keys are in L1) and ranks them the same way from
    /// there, placing every element in the tile sorted by digit (`sorted_keys`,
    /// `sorted_vals`, shared). Last, thread `t` writes sorted elements `t, t + 256, ..`
    /// to `base[d] + (i - local[d])` (global `keys_out`, `vals_out`): consecutive
    /// threads write consecutive places of a digit's run, so a warp's stores touch a few
    /// sectors, not one per lane (writing from the ranking scattered every lane's store,
    /// and the L2 was the bound).
    pub fn radix_scatter(
        keys_in: *const u32,
        vals_in: *const u32,
        keys_out: *mut u32,
        vals_out: *mut u32,
        n_a: u32,
        tiles_a: u32,
        n_b: u32,
        shift: u32,
        hist: *const u32,
        digit_total: *const u32,
        n_blocks: u32,
    ) {
        let base = dynamic_shared::<u32>();
        let local = base.add(RADIX_DIGITS as usize);
        let warp_run = local.add(RADIX_DIGITS as usize);
        let sorted_keys = warp_run.add((WARPS * RADIX_DIGITS) as usize);
        let sorted_vals = sorted_keys.add(RADIX_TILE as usize);
        let scan = sorted_vals.add(RADIX_TILE as usize);
        let k = thread_idx_x();
        let b = block_idx_x();
        let lane = lane_id();
        let warp = warp_id();
        let (start, list_end) = list_of(b, n_a, tiles_a, n_b);
        let list = if b < tiles_a { 0 } else { RADIX_DIGITS };
        let (below, _) = block_scan(scan, *digit_total.add((list + k) as usize));
        *base.add(k as usize) = start + below + *hist.add((k * n_blocks + b) as usize);
        let run = warp_run.add((warp * RADIX_DIGITS) as usize);
        let mut i = lane;
        while i < RADIX_DIGITS {
            *run.add(i as usize) = 0;
            i += WARP_SIZE;
        }
        sync_warp();
        let first = b * RADIX_TILE + warp * RADIX_ROUNDS * WARP_SIZE + lane;
        // The warp's rounds stop at the list's end (the bound is the same for every lane
        // of the warp: `idx - lane` is the round's first index).
        let end = core::cmp::min(first + RADIX_ROUNDS * WARP_SIZE, list_end.div_ceil(WARP_SIZE) * WARP_SIZE + lane);
        // The next round's key is loaded before this round is ranked, so that a load
        // from memory overlaps the ranking.
        let mut next = if first < list_end { *keys_in.add(first as usize) } else { 0 };
        let mut idx = first;
        while idx < end {
            let valid = idx < list_end;
            let key = next;
            let ahead = idx + WARP_SIZE;
            if ahead < end && ahead < list_end {
                next = *keys_in.add(ahead as usize);
            }
            take_places(run, valid, digit(key, shift));
            idx += WARP_SIZE;
        }
        sync_threads();
        // Thread k: digit k's column over the warps, then its tile-local start.
        let mut count = 0;
        let mut w = 0;
        while w < WARPS {
            let p = warp_run.add((w * RADIX_DIGITS + k) as usize);
            let c = *p;
            *p = count;
            count += c;
            w += 1;
        }
        let (start, _) = block_scan(scan, count);
        *local.add(k as usize) = start;
        let mut w = 0;
        while w < WARPS {
            *warp_run.add((w * RADIX_DIGITS + k) as usize) += start;
            w += 1;
        }
        sync_threads();
        let mut idx = first;
        while idx < end {
            let valid = idx < list_end;
            let key = if valid { *keys_in.add(idx as usize) } else { 0 };
            let val = if valid { *vals_in.add(idx as usize) } else { 0 };
            let at = take_places(run, valid, digit(key, shift));
            if valid {
                *sorted_keys.add(at as usize) = key;
                *sorted_vals.add(at as usize) = val;
            }
            idx += WARP_SIZE;
        }
        sync_threads();
        let in_tile = core::cmp::min(RADIX_TILE, list_end - b * RADIX_TILE);
        let mut i = k;
        while i < in_tile {
            let key = *sorted_keys.add(i as usize);
            let d = digit(key, shift) as usize;
            let pos = *base.add(d) + i - *local.add(d);
            *keys_out.add(pos as usize) = key;
            *vals_out.add(pos as usize) = *sorted_vals.add(i as usize);
            i += RADIX_BLOCK;
        }
    }
}
