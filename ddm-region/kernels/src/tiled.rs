//! Matching in two launches and no host round trip (beyond the paper), for the small
//! sets of the paper's own scale (32768 regions a step), where the sorting engines'
//! dozen launches and host waits cost more than the matching: the publications sorted
//! tile by tile, then every subscription against every sorted tile, swept in shared
//! memory.
//!
//! 1. [`sort_tiles()`]: a block per [`TILE`] publications ranks its tile by lower bound
//!    in dimension 0 (each thread counts the keys below its publication's) and writes
//!    the sorted keys, ranges and indices, and the tile's widest range there, `w`.
//! 2. [`tiled_match()`]: the paper's Fig. 2 turned around: a block holds
//!    [`subs_per_block`] subscriptions in registers (each thread [`subs_per_thread`] of
//!    them) and streams its slice of the sorted tiles through shared memory. A
//!    subscription `s` overlaps in dimension 0 only publications with
//!    `s.lo - w < p.lo < s.hi`: a run of the sorted tile found by one binary search;
//!    only the run gets the full test.
//!
//! A tile with one very wide publication degrades to testing all its pairs, and stays
//! correct. Removed publications are sorted as [`GONE`] (key `u32::MAX`): past every
//! run.
//!
//! Measured on an H100 at 32768 regions a step (Figs. 5/7, ncu): testing every pair
//! (the first form) cost ~7 instructions a pair, 120 µs a launch; a rank sort of each
//! tile inside the matching block, 40 µs, most of it sorting each tile again for each
//! block row of subscriptions (8 rows); buckets instead of the sort (a counting sort,
//! six barriers a tile), 47 µs. Sorting once, here, leaves the matching the searches
//! and runs.
//!
//! Enumeration collects a block's pairs in a shared-memory buffer of [`PAIR_BUF`]
//! pairs (a shared atomic cursor) and moves them out a half-full buffer at a time with
//! one global atomic per block (instead of one per pair: at RS 100 a crowded step has
//! ~2 * 10^5 pairs); a pair that finds the buffer full takes its own global slot. The
//! output may be mapped page-locked host memory, so that the pairs need no copy back.
//! Where both kinds number at most 65536 (the paper's scale), a pair crosses the bus as
//! one word, `publication << 16 | subscription` ([`pack_narrow`]): at RS 100 writing the
//! pairs to host memory took longer than finding them (H100, Figs. 10/12: 100 µs more
//! than counting them, for 2 * 10^5 pairs of 8 bytes).

use crate::sweep::GONE;
use crate::{warp_add_u64, DdmTables, Pair, Range};
use gpu_kernels::prelude::*;

/// Threads per block of both kernels; also the publications of a tile (one each).
pub const TILE: u32 = 256;

/// Pairs a block collects in shared memory before moving them out.
pub const PAIR_BUF: u32 = 1024;

/// Most dimensions [`tiled_match()`] handles (its subscriptions live in registers).
pub const TILED_MAX_DIMS: u32 = 4;

/// Subscriptions each thread of [`tiled_match()`] holds in registers in `dims`
/// dimensions: 8 up to two dimensions, 4 beyond (their ranges take `2 * dims`
/// registers each).
pub const fn subs_per_thread(dims: u32) -> u32 {
    if dims <= 2 {
        8
    } else {
        4
    }
}

/// Subscriptions one block of [`tiled_match()`] takes in `dims` dimensions.
pub const fn subs_per_block(dims: u32) -> u32 {
    TILE * subs_per_thread(dims)
}

/// How [`tiled_match()`] hands its pairs over (its `emit` argument): counted only.
pub const EMIT_COUNT: u32 = 0;
/// Each pair as a [`Pair`] (two words).
pub const EMIT_WIDE: u32 = 1;
/// Each pair as one word, [`pack_narrow`] (both kinds' indices below 65536).
pub const EMIT_NARROW: u32 = 2;

/// A pair as one word: the publication in the high half, the subscription in the low;
/// both must be below 65536.
#[inline(always)]
pub fn pack_narrow(p: Pair) -> u32 {
    p.publication << 16 | p.subscription
}

/// The pair [`pack_narrow`] made `w` of.
#[inline(always)]
pub fn unpack_narrow(w: u32) -> Pair {
    Pair {
        publication: w >> 16,
        subscription: w & 0xFFFF,
    }
}

/// Dynamic shared memory of [`sort_tiles()`]: the tile's keys and its width.
pub const SORT_TILES_SHARED: u32 = TILE * 4 + 4;

/// Dynamic shared memory of [`tiled_match()`] in `dims` dimensions: the sorted tile's
/// ranges, the pair buffer, the tile's keys and publication indices, the buffer's
/// cursor (padded to 8 bytes) and the block's output base.
pub const fn tiled_shared_bytes(dims: u32) -> u32 {
    TILE * dims * 8 + PAIR_BUF * 8 + 2 * TILE * 4 + 8 + 8
}

/// Where [`sort_tiles()`] writes the sorted tiles and [`tiled_match()`] reads them, by
/// address (plain data on the host).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct SortedTiles {
    /// `u32[n_pub]`: lower bounds in dimension 0, sorted within each tile of [`TILE`]
    /// (`u32::MAX` for a removed publication).
    pub keys: u64,
    /// `u32[n_pub]`: the publication at each sorted place.
    pub ids: u64,
    /// `Range[n_pub * dims]`: its ranges ([`GONE`] for a removed one).
    pub ranges: u64,
    /// `u32[ceil(n_pub / TILE)]`: each tile's widest live range in dimension 0.
    pub widths: u64,
}

impl SortedTiles {
    #[inline(always)]
    fn keys(&self) -> *mut u32 {
        self.keys as usize as *mut u32
    }
    #[inline(always)]
    fn ids(&self) -> *mut u32 {
        self.ids as usize as *mut u32
    }
    #[inline(always)]
    fn ranges(&self) -> *mut Range {
        self.ranges as usize as *mut Range
    }
    #[inline(always)]
    fn widths(&self) -> *mut u32 {
        self.widths as usize as *mut u32
    }
}

kernel! {
    /// Block `b` of `ceil(n_pub / TILE)` blocks of [`TILE`] threads,
    /// [`SORT_TILES_SHARED`] of shared memory, sorts publications
    /// `b * TILE .. min(n_pub, (b + 1) * TILE)` by lower bound in dimension 0:
    /// thread `k` reads publication `b * TILE + k` (global region table), writes its key
    /// to shared memory and folds its width into the tile's (shared atomic max); after
    /// the barrier, counts the keys below its own (ties by position): its rank `r`, and
    /// writes key, index and ranges at `b * TILE + r` of the sorted arrays (global);
    /// thread 0 writes the tile's width to `widths[b]` (global), and block 0's thread 0
    /// zeroes `total[0]` for the [`tiled_match`] that follows (no host memset before
    /// either).
    pub fn sort_tiles(tables: *const DdmTables, tiles: *const SortedTiles, total: *mut u64) {
        let t = *tables;
        match t.dims {
            1 => sort_tile::<1>(&t, &*tiles, total),
            2 => sort_tile::<2>(&t, &*tiles, total),
            3 => sort_tile::<3>(&t, &*tiles, total),
            _ => sort_tile::<4>(&t, &*tiles, total),
        }
    }
}

kernel! {
    /// Block `(x, y)` of a grid of `ceil(n_sub / subs_per_block(dims))` by
    /// `grid_dim_y()` blocks of [`TILE`] threads, [`tiled_shared_bytes`] of shared
    /// memory, after [`sort_tiles`]: thread `k` holds the ranges of subscriptions
    /// `x * subs_per_block(dims) + k + i * TILE` (`i < subs_per_thread(dims)`) in
    /// registers (read once from the global region table), and the block matches them
    /// with the sorted tiles of slice `y` of `grid_dim_y()` equal slices (whole tiles),
    /// one at a time: thread `k` copies sorted place `k` of the tile (key, index, ranges)
    /// from global to shared memory; barrier; for each of its subscriptions it finds the
    /// run with `s.lo - w < p.lo < s.hi` by binary search over the keys and tests each
    /// publication of the run in every dimension; barrier.
    ///
    /// With `emit = EMIT_COUNT` each thread counts its overlaps, and each warp adds its
    /// lanes' counts to `total[0]` (global) once. Otherwise each overlapping pair goes
    /// to the block's shared buffer (shared atomic cursor), or, when the buffer is full,
    /// straight to `out` at a slot of its own from `total[0]`; after a tile, a buffer at
    /// least half full (and at the end, any) is moved to `out` at a base taken from
    /// `total[0]` with one atomic, by all threads of the block. Pair `i` is words
    /// `2i, 2i + 1` of `out` ([`EMIT_WIDE`], a [`Pair`]) or word `i` ([`EMIT_NARROW`],
    /// [`pack_narrow`]). `total[0]` ends as the number of pairs; those at positions
    /// `>= out_cap` are counted, not written.
    pub fn tiled_match(
        tables: *const DdmTables,
        tiles: *const SortedTiles,
        out: *mut u32,
        out_cap: u64,
        total: *mut u64,
        emit: u32,
    ) {
        let t = *tables;
        let s = *tiles;
        let o = Landing {
            out,
            cap: out_cap,
            total,
            narrow: emit == EMIT_NARROW,
        };
        match (t.dims, emit != EMIT_COUNT) {
            (1, false) => tiled_block::<1, 8, false>(&t, &s, o),
            (1, true) => tiled_block::<1, 8, true>(&t, &s, o),
            (2, false) => tiled_block::<2, 8, false>(&t, &s, o),
            (2, true) => tiled_block::<2, 8, true>(&t, &s, o),
            (3, false) => tiled_block::<3, 4, false>(&t, &s, o),
            (3, true) => tiled_block::<3, 4, true>(&t, &s, o),
            (_, false) => tiled_block::<4, 4, false>(&t, &s, o),
            (_, true) => tiled_block::<4, 4, true>(&t, &s, o),
        }
    }
}

/// Where [`tiled_match`]'s pairs land: `out` (words) with room for `cap` pairs, the
/// global count `total`, and the form of a pair.
#[derive(Clone, Copy)]
struct Landing {
    out: *mut u32,
    cap: u64,
    total: *mut u64,
    narrow: bool,
}

impl Landing {
    /// Writes `pair` as pair `pos` of the landing place, when there is room.
    ///
    /// # Safety
    /// `out` has room for `cap` pairs of the landing's form; position `pos` is the
    /// calling thread's alone.
    #[inline(always)]
    unsafe fn put(&self, pos: u64, pair: Pair) {
        if pos < self.cap {
            // SAFETY: `pos < cap`: inside `out` in either form (this fn's contract).
            unsafe {
                if self.narrow {
                    *self.out.add(pos as usize) = pack_narrow(pair);
                } else {
                    let at = self.out.add(2 * pos as usize);
                    *at = pair.publication;
                    *at.add(1) = pair.subscription;
                }
            }
        }
    }
}

/// HLA 1516 overlap of one dimension's half-open ranges, without branches.
#[inline(always)]
fn overlap(a: Range, b: Range) -> bool {
    (a.lo < b.hi) & (b.lo < a.hi)
}

/// Region `r`'s `D` ranges, or [`GONE`] in each when it is removed.
///
/// # Safety
/// `r < n_pub + n_sub` of the live tables `t`, which hold at least `D` dimensions.
#[inline(always)]
unsafe fn ranges_of<const D: usize>(t: &DdmTables, r: u32) -> [Range; D] {
    let mut out = [GONE; D];
    // SAFETY: `r` is a region of the live tables (this fn's contract): its live flag
    // and its first `D <= dims` ranges lie inside their allocations.
    unsafe {
        if *t.alive().add(r as usize) != 0 {
            let src = t.extent(r);
            let mut d = 0;
            while d < D {
                out[d] = *src.add(d);
                d += 1;
            }
        }
    }
    out
}

/// One block of [`sort_tiles`] in `D` dimensions.
///
/// # Safety
/// The launch of [`sort_tiles`]'s contract: `t` the live tables with `dims == D`, `s`
/// sorted arrays for its `n_pub` publications, `total` a device `u64`, blocks of
/// [`TILE`] threads with [`SORT_TILES_SHARED`] bytes of shared memory.
#[inline(always)]
unsafe fn sort_tile<const D: usize>(t: &DdmTables, s: &SortedTiles, total: *mut u64) {
    let k = thread_idx_x();
    let base = block_idx_x() * TILE;
    let len = t.n_pub.saturating_sub(base).min(TILE);
    let keys = dynamic_shared::<u32>();
    // SAFETY: slot `TILE` of the shared memory (`SORT_TILES_SHARED`): the tile's width.
    let width = unsafe { keys.add(TILE as usize) };
    if k == 0 {
        // SAFETY: thread 0 alone writes the width before the barrier; block 0's thread
        // 0 alone writes `total` (a device u64), read by the next launch only.
        unsafe {
            *width = 0;
            if block_idx_x() == 0 {
                *total = 0;
            }
        }
    }
    sync_threads();
    let mut p = [GONE; D];
    if k < len {
        // SAFETY: `base + k < n_pub`: a publication; slot `k < TILE` of the keys; the
        // shared width, zeroed before the barrier.
        unsafe {
            p = ranges_of::<D>(t, base + k);
            *keys.add(k as usize) = p[0].lo;
            if p[0].lo <= p[0].hi {
                atomic_max(width, p[0].hi - p[0].lo);
            }
        }
    }
    sync_threads();
    if k == 0 {
        // SAFETY: every fold into the width came before the barrier; this tile's slot
        // of the widths (`block_idx_x() < ceil(n_pub / TILE)`) is this thread's alone.
        unsafe { *s.widths().add(block_idx_x() as usize) = *width };
    }
    if k < len {
        let key = p[0].lo;
        // The stable rank: keys at or below this one before it, keys below it after.
        let mut rank = 0u32;
        let mut j = 0u32;
        while j < k {
            // SAFETY: slot `j < k < len` of the keys, written before the barrier.
            rank += (unsafe { *keys.add(j as usize) } <= key) as u32;
            j += 1;
        }
        j += 1;
        while j < len {
            // SAFETY: slot `j < len` of the keys.
            rank += (unsafe { *keys.add(j as usize) } < key) as u32;
            j += 1;
        }
        // SAFETY: ranks are distinct and `< len`: place `base + rank < n_pub` of the
        // sorted arrays is this thread's alone.
        unsafe {
            let at = (base + rank) as usize;
            *s.keys().add(at) = key;
            *s.ids().add(at) = base + k;
            let dst = s.ranges().add(at * D);
            let mut d = 0;
            while d < D {
                *dst.add(d) = p[d];
                d += 1;
            }
        }
    }
}

/// First index of the sorted `keys[..n]` whose key is `> x`.
///
/// # Safety
/// `keys` holds `n` sorted values.
#[inline(always)]
unsafe fn first_above(keys: *const u32, n: u32, x: u32) -> u32 {
    let (mut lo, mut len) = (0u32, n);
    while len > 0 {
        let half = len / 2;
        // SAFETY: `lo + half < lo + len <= n`.
        if unsafe { *keys.add((lo + half) as usize) } <= x {
            lo += half + 1;
            len -= half + 1;
        } else {
            len = half;
        }
    }
    lo
}

/// One block of [`tiled_match`] in `D` dimensions, `K` subscriptions a thread
/// (`subs_per_thread(D)`), counting or (`EMIT`) enumerating.
///
/// # Safety
/// The launch of [`tiled_match`]'s contract: `t` the live tables with `dims == D`
/// (`D == 4` also for more, which the host never launches), `s` the tiles sorted by
/// [`sort_tiles`] for them, blocks of [`TILE`] threads, `o.total` a device `u64`,
/// `o.out` room for `o.cap` pairs of its form, the shared memory of
/// [`tiled_shared_bytes`].
#[inline(always)]
unsafe fn tiled_block<const D: usize, const K: usize, const EMIT: bool>(
    t: &DdmTables,
    s: &SortedTiles,
    o: Landing,
) {
    let k = thread_idx_x();
    // The shared memory of `tiled_shared_bytes(D)`: the tile's ranges, the pair buffer,
    // keys, indices, the cursor (8 bytes), the base; each part 8-aligned.
    let ranges = dynamic_shared::<Range>();
    // SAFETY: offsets inside the block's `tiled_shared_bytes(D)` bytes.
    let (buf, keys, ids, held, base_at) = unsafe {
        let buf = ranges.add(TILE as usize * D) as *mut Pair;
        let keys = buf.add(PAIR_BUF as usize) as *mut u32;
        let ids = keys.add(TILE as usize);
        let held = ids.add(TILE as usize);
        (buf, keys, ids, held, held.add(2) as *mut u64)
    };
    if EMIT && k == 0 {
        // SAFETY: thread 0 alone writes the cursor before the first barrier.
        unsafe { *held = 0 };
    }

    // This thread's subscriptions (GONE past the end: they overlap nothing).
    let first = block_idx_x() * TILE * K as u32 + k;
    let mut mine = [[GONE; D]; K];
    let mut i = 0;
    while i < K {
        let sub = first + i as u32 * TILE;
        if sub < t.n_sub {
            // SAFETY: `n_pub + sub` is a subscription of the live tables.
            mine[i] = unsafe { ranges_of::<D>(t, t.n_pub + sub) };
        }
        i += 1;
    }

    // This block row's slice of the tiles.
    let n_tiles = t.n_pub.div_ceil(TILE);
    let per = n_tiles.div_ceil(grid_dim_y());
    let mut tile = block_idx_y().saturating_mul(per).min(n_tiles);
    let last = tile.saturating_add(per).min(n_tiles);
    let mut found = 0u64;
    while tile < last {
        let at = tile * TILE;
        let len = (t.n_pub - at).min(TILE);
        if k < len {
            // SAFETY: sorted place `at + k < n_pub` (global) to slot `k < TILE` (shared).
            unsafe {
                let from = (at + k) as usize;
                *keys.add(k as usize) = *s.keys().add(from);
                *ids.add(k as usize) = *s.ids().add(from);
                let mut d = 0;
                while d < D {
                    *ranges.add(k as usize * D + d) = *s.ranges().add(from * D + d);
                    d += 1;
                }
            }
        }
        // SAFETY: tile `tile < ceil(n_pub / TILE)`'s width, final since `sort_tiles`.
        let w = unsafe { *s.widths().add(tile as usize) };
        sync_threads();
        let mut i = 0;
        while i < K {
            let sub = mine[i];
            // Candidates have `p.lo > sub.lo - w` (`p.hi <= p.lo + w` must pass `sub.lo`).
            let mut j = if sub[0].lo >= w {
                // SAFETY: the keys `keys[..len]`, sorted, written before the barrier.
                unsafe { first_above(keys, len, sub[0].lo - w) }
            } else {
                0
            };
            // SAFETY: slot `j < len` of the keys.
            while j < len && unsafe { *keys.add(j as usize) } < sub[0].hi {
                // SAFETY: slot `j < len` of the ranges.
                let q = unsafe { ranges.add(j as usize * D) };
                // The overlap must also begin at `overlaps_from` or after (slabs).
                // SAFETY: dimension 0 of slot `j`.
                let mut all = sub[0].lo.max(unsafe { (*q).lo }) >= t.overlaps_from;
                let mut d = 0;
                while d < D {
                    // SAFETY: dimension `d < D` of slot `j`.
                    all &= overlap(sub[d], unsafe { *q.add(d) });
                    d += 1;
                }
                if all {
                    if EMIT {
                        let pair = Pair {
                            // SAFETY: slot `j` of the ids.
                            publication: unsafe { *ids.add(j as usize) },
                            subscription: first + i as u32 * TILE,
                        };
                        // SAFETY: the buffer, cursor and `out` of this fn's contract.
                        unsafe { push(buf, held, o, pair) };
                    } else {
                        found += 1;
                    }
                }
                j += 1;
            }
            i += 1;
        }
        // Every thread is done with the tile (and with pushing) before it is restaged
        // or the buffer moved out; all threads read the same cursor here.
        sync_threads();
        // SAFETY: the cursor; written again only inside `flush`, after its barriers.
        if EMIT && unsafe { *held } >= PAIR_BUF / 2 {
            // SAFETY: all threads of the block call it (uniform condition above).
            unsafe { flush(buf, held, base_at, o) };
        }
        tile += 1;
    }
    if EMIT {
        // SAFETY: after the last barrier (the loop's or `flush`'s), a uniform read.
        if unsafe { *held } > 0 {
            // SAFETY: all threads of the block call it.
            unsafe { flush(buf, held, base_at, o) };
        }
    } else {
        // SAFETY: `total` is a device u64 (contract); every thread of the block gets here.
        unsafe { warp_add_u64(o.total, found) };
    }
}

/// One overlapping pair into the block's buffer, or straight out when it is full.
///
/// # Safety
/// `buf` holds [`PAIR_BUF`] pairs and `held` is its cursor (shared memory), `o.out` has
/// room for `o.cap` pairs of its form, `o.total` is a device `u64`.
#[inline(always)]
unsafe fn push(buf: *mut Pair, held: *mut u32, o: Landing, pair: Pair) {
    // SAFETY: this fn's contract; slot `< PAIR_BUF` is this thread's alone (the cursor
    // hands each slot out once between flushes), a global position too.
    unsafe {
        let slot = atomic_add(held, 1);
        if slot < PAIR_BUF {
            *buf.add(slot as usize) = pair;
        } else {
            o.put(atomic_add_u64(o.total, 1), pair);
        }
    }
}

/// Moves the block's buffered pairs to `out`: thread 0 takes a base for all of them from
/// `total[0]` (one atomic), every thread copies every `block_dim_x()`-th pair, and the
/// cursor is reset. Three barriers.
///
/// # Safety
/// As [`push`], `base_at` a shared `u64`; every thread of the block must call it, after
/// a barrier that follows the last push.
#[inline(always)]
unsafe fn flush(buf: *mut Pair, held: *mut u32, base_at: *mut u64, o: Landing) {
    let k = thread_idx_x();
    // SAFETY: this fn's contract: every read of the cursor here follows a barrier after
    // the last push, and thread 0 alone writes the base and the cursor, each followed
    // by a barrier before anyone reads it again.
    unsafe {
        let n = (*held).min(PAIR_BUF);
        if k == 0 {
            *base_at = atomic_add_u64(o.total, n as u64);
        }
        sync_threads();
        let base = *base_at;
        let mut i = k;
        while i < n {
            o.put(base + i as u64, *buf.add(i as usize));
            i += block_dim_x();
        }
        sync_threads();
        if k == 0 {
            *held = 0;
        }
        sync_threads();
    }
}
