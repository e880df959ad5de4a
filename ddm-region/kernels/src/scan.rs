//! Exclusive prefix sums of `u64` arrays (three kernels: reduce, top, down), used by the
//! radix sort's digit offsets and the sweep's work and output offsets. Beyond the paper.

use gpu_kernels::prelude::*;

/// Threads per scan block (the kernels require exactly this block size).
pub const SCAN_BLOCK: u32 = 256;
/// Consecutive elements per thread.
pub const SCAN_ITEMS: u32 = 4;
/// Elements per scan block.
pub const SCAN_TILE: u32 = SCAN_BLOCK * SCAN_ITEMS;

/// Block-wide exclusive scan of one `u64` per thread (Hillis–Steele in shared memory
/// `sh[SCAN_BLOCK]`); returns (exclusive prefix, block total). All threads must call it.
///
/// # Safety
/// `sh` must point at `SCAN_BLOCK` shared `u64`s; the block must have `SCAN_BLOCK` threads.
#[inline(always)]
pub unsafe fn block_exclusive_scan(sh: *mut u64, v: u64) -> (u64, u64) {
    let k = thread_idx_x() as usize;
    // SAFETY: `sh` holds `SCAN_BLOCK` shared `u64`s and the block has `SCAN_BLOCK` threads
    // (this fn's contract), so `k < SCAN_BLOCK`; every thread calls it, so the barriers
    // are reached by the whole block.
    unsafe {
        *sh.add(k) = v;
        sync_threads();
        let mut off = 1usize;
        while off < SCAN_BLOCK as usize {
            let x = if k >= off { *sh.add(k - off) } else { 0 };
            sync_threads();
            *sh.add(k) += x;
            sync_threads();
            off *= 2;
        }
        let incl = *sh.add(k);
        let total = *sh.add(SCAN_BLOCK as usize - 1);
        sync_threads();
        (incl - v, total)
    }
}

kernel! {
    /// Scan pass 1: block `b` sums `input[b * SCAN_TILE ..][..SCAN_TILE]` (global) into
    /// `block_sums[b]`; thread `k` adds its `SCAN_ITEMS` consecutive elements first.
    pub fn scan_reduce(input: *const u64, n: u64, block_sums: *mut u64) {
        let sh = dynamic_shared::<u64>();
        let base = block_idx_x() as u64 * SCAN_TILE as u64 + thread_idx_x() as u64 * SCAN_ITEMS as u64;
        let mut s = 0u64;
        let mut j = 0u64;
        while j < SCAN_ITEMS as u64 {
            if base + j < n {
                s += *input.add((base + j) as usize);
            }
            j += 1;
        }
        let (_, total) = block_exclusive_scan(sh, s);
        if thread_idx_x() == 0 {
            *block_sums.add(block_idx_x() as usize) = total;
        }
    }
}

kernel! {
    /// Scan pass 2: one block scans the `nb` block sums in place (exclusive) and writes
    /// their total to `total[0]`; thread `k` owns a contiguous chunk of the sums.
    pub fn scan_top(block_sums: *mut u64, nb: u64, total: *mut u64) {
        let sh = dynamic_shared::<u64>();
        let k = thread_idx_x() as u64;
        let chunk = nb.div_ceil(SCAN_BLOCK as u64);
        let lo = core::cmp::min(k * chunk, nb);
        let hi = core::cmp::min(lo + chunk, nb);
        let mut s = 0u64;
        let mut j = lo;
        while j < hi {
            s += *block_sums.add(j as usize);
            j += 1;
        }
        let (mut acc, all) = block_exclusive_scan(sh, s);
        let mut j = lo;
        while j < hi {
            let v = *block_sums.add(j as usize);
            *block_sums.add(j as usize) = acc;
            acc += v;
            j += 1;
        }
        if k == 0 {
            *total = all;
        }
    }
}

kernel! {
    /// Scan pass 3: block `b` writes the exclusive prefix sums of its tile of `input` to
    /// `output` (may be the same array), offset by the scanned `block_sums[b]`.
    pub fn scan_down(input: *const u64, output: *mut u64, n: u64, block_sums: *const u64) {
        let sh = dynamic_shared::<u64>();
        let base = block_idx_x() as u64 * SCAN_TILE as u64 + thread_idx_x() as u64 * SCAN_ITEMS as u64;
        let mut v = [0u64; SCAN_ITEMS as usize];
        let mut s = 0u64;
        let mut j = 0usize;
        while j < SCAN_ITEMS as usize {
            if base + (j as u64) < n {
                let x = *input.add(base as usize + j);
                *v.as_mut_ptr().add(j) = x;
                s += x;
            }
            j += 1;
        }
        let (prefix, _) = block_exclusive_scan(sh, s);
        let mut acc = prefix + *block_sums.add(block_idx_x() as usize);
        let mut j = 0usize;
        while j < SCAN_ITEMS as usize {
            if base + (j as u64) < n {
                *output.add(base as usize + j) = acc;
                acc += *v.as_ptr().add(j);
            }
            j += 1;
        }
    }
}
