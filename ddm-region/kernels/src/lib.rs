//! GPU kernels of `ddm-region`: region matching for HLA Data Distribution Management
//! (Lo, Chung & Pai, "Offloading Region Matching of Data Distribution Management with
//! CUDA"), written once for the GPU and the host SIMT emulator.
//!
//! | module | paper | kernels |
//! | --- | --- | --- |
//! | [`phases`] | §III.B/C, Phases 1–2 (shared by both approaches) | `commit_updates`, `clear_overlaps` |
//! | [`region`] | §III.B Phase 3, Fig. 2: the parallel region-based approach | `match_region` |
//! | [`grid`] | §III.C Phases 2–4, Figs. 3–4: the parallel grid-based approach | `unmap_regions`, `compact_cells`, `map_regions`, `match_grid` |
//! | [`scan`], [`radix`], [`sweep`] | beyond the paper: a sort-based sweep for 1M regions (after Raczy et al.) | prefix sums, radix sort, `sweep_tasks`, `sweep_gather`, `sweep_count`, `sweep_emit` |
//! | [`tiled`] | beyond the paper: matching for the paper's small sets in two launches, the publications sorted tile by tile, each tile swept in shared memory | `sort_tiles`, `tiled_match` |
//! | [`count`] | beyond the paper: counting by binary search over sorted end points (after Marzolla et al.) | `end_keys`, `bisect_count`, `dim_candidates` |
//!
//! The sweep follows Raczy et al. (2005), its sort an LSD radix sort; the binary-search
//! count Marzolla, Birolo, D'Angelo & Fariselli (2024), and [`count`] also estimates the
//! sweep dimension (`dim_candidates`).
//!
//! Regions of both kinds live in one index space: region `r < n_pub` is publication
//! region `r`, region `r >= n_pub` is subscription region `r - n_pub`. The overlap
//! information (§III.A: kept in device memory between steps) is two bit matrices:
//! row `p` of `pub_rows` holds the subscription regions publication `p` overlaps, row
//! `s` of `sub_rows` the publication regions subscription `s` overlaps.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

pub mod count;
pub mod grid;
pub mod phases;
pub mod radix;
pub mod region;
pub mod scan;
pub mod sweep;
pub mod tiled;

/// One dimension's range of a region, half-open `[lo, hi)` as in HLA 1516.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct Range {
    pub lo: u32,
    pub hi: u32,
}

impl Range {
    /// HLA 1516 overlap of half-open ranges: `lo_a < hi_b && lo_b < hi_a`.
    #[inline(always)]
    pub fn overlaps(self, other: Range) -> bool {
        self.lo < other.hi && other.lo < self.hi
    }
}

/// An updated region (§III.A: "new or modified region"), as copied to the device in
/// Phase 1; its new ranges follow in a separate array, `dims` per update.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct UpdatedRegion {
    /// Index in the unified region space (publications first).
    pub region: u32,
    /// 1 when the region exists after the update, 0 when it was removed.
    pub alive: u32,
}

/// One overlapping (publication, subscription) pair, by region indices of each kind.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct Pair {
    pub publication: u32,
    pub subscription: u32,
}

/// Per-step counters written by the kernels and read back in Phase 4.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct StepCounters {
    /// Pairs newly found in Phase 3 (also the next free slot of the pair list).
    pub new_pairs: u32,
    /// Grid engine: 0, or the slot count a cell list needed beyond its capacity.
    pub cell_overflow: u32,
}

/// The device tables of the overlap information (§III.A), by address. Uploaded once
/// per engine; kernels take a pointer to it. Addresses are `u64` so that the struct
/// is plain data on the host.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct DdmTables {
    /// `Range[(n_pub + n_sub) * dims]`: region `r`'s range in dimension `d` at `r * dims + d`.
    pub bounds: u64,
    /// `u32[n_pub + n_sub]`: 1 for a live region.
    pub alive: u64,
    /// `u32[n_pub + n_sub]`: the step number of the region's last update.
    pub epoch: u64,
    /// `u32[n_pub * sub_words]`: bit `s` of row `p` set iff publication `p` overlaps subscription `s`.
    pub pub_rows: u64,
    /// `u32[n_sub * pub_words]`: bit `p` of row `s` set iff subscription `s` overlaps publication `p`.
    pub sub_rows: u64,
    /// `u32[n_pub + n_sub]`: 0 only if the region's bit row (unified index) is empty. Set
    /// to 1 when Phase 3 sets a bit of the row, reset to 0 when Phase 2 clears the row;
    /// Phase 2 skips the rows of regions that have overlapped nothing since.
    pub dirty: u64,
    /// `Pair[pair_cap]`: the pairs found in this step's Phase 3 (copied back in Phase 4).
    pub pairs: u64,
    /// `StepCounters[1]`.
    pub counters: u64,
    /// `u64[1]`: the number of overlapping pairs, maintained incrementally.
    pub overlaps: u64,
    pub n_pub: u32,
    pub n_sub: u32,
    pub pub_words: u32,
    pub sub_words: u32,
    pub dims: u32,
    pub pair_cap: u32,
    /// The sorting engines count and enumerate only the pairs whose overlap begins at
    /// this coordinate of dimension 0 or after (`max(lo_p, lo_s) >= overlaps_from`; 0:
    /// every pair): a slab of the space cut by coordinate over many GPUs
    /// (`ddm_region::SlabEngine`) keeps the pairs it owns.
    pub overlaps_from: u32,
    pub _pad: u32,
}

impl DdmTables {
    #[inline(always)]
    pub fn bounds(&self) -> *mut Range {
        self.bounds as usize as *mut Range
    }
    #[inline(always)]
    pub fn alive(&self) -> *mut u32 {
        self.alive as usize as *mut u32
    }
    #[inline(always)]
    pub fn epoch(&self) -> *mut u32 {
        self.epoch as usize as *mut u32
    }
    #[inline(always)]
    pub fn counters(&self) -> *mut StepCounters {
        self.counters as usize as *mut StepCounters
    }
    /// The extent (first range) of unified region `r`.
    #[inline(always)]
    pub fn extent(&self, r: u32) -> *mut Range {
        // SAFETY: callers pass a unified region index `r < n_pub + n_sub`, and `bounds` holds
        // `dims` ranges per region: the offset stays inside that allocation.
        unsafe { self.bounds().add(r as usize * self.dims as usize) }
    }
}

/// Staged update `i` of a step: record `i` of `updates`, or, for a dense batch
/// (`dense != 0`: the batch sets every region once, in index order, so the host sends
/// no records, only the ranges), region `i`, alive.
///
/// # Safety
/// With `dense == 0`, `updates` must hold more than `i` records.
#[inline(always)]
pub unsafe fn staged_update(updates: *const UpdatedRegion, dense: u32, i: u32) -> UpdatedRegion {
    if dense != 0 {
        return UpdatedRegion {
            region: i,
            alive: 1,
        };
    }
    // SAFETY: `updates` holds more than `i` records (this fn's contract).
    unsafe { *updates.add(i as usize) }
}

/// True iff the `dims` ranges at `a` and `b` overlap in every dimension.
///
/// # Safety
/// `a` and `b` must point at `dims` ranges each.
#[inline(always)]
pub unsafe fn extents_overlap(a: *const Range, b: *const Range, dims: u32) -> bool {
    let mut d = 0usize;
    while d < dims as usize {
        // SAFETY: `a` and `b` point at `dims` ranges each (this fn's contract), `d < dims`.
        if !unsafe { (*a.add(d)).overlaps(*b.add(d)) } {
            return false;
        }
        d += 1;
    }
    true
}

/// True when the overlap of two regions whose ranges start at `a` and `b` (dimension 0
/// first) begins at `from` or after in dimension 0 ([`DdmTables::overlaps_from`]).
///
/// # Safety
/// `a` and `b` must point at a range each.
#[inline(always)]
pub unsafe fn begins_from(a: *const Range, b: *const Range, from: u32) -> bool {
    // SAFETY: `a` and `b` point at a range each (this fn's contract).
    unsafe { (*a).lo.max((*b).lo) >= from }
}

/// Records that publication `p` overlaps subscription `s` in both bit matrices; the
/// first thread to set the bit appends the pair to the step's pair list (atomics give
/// each writer its own slot, as §III.B asks). Returns 1 if the pair is new, else 0.
///
/// # Safety
/// `t` must describe live device tables and `p < n_pub`, `s < n_sub`.
#[inline(always)]
pub unsafe fn record_overlap(t: &DdmTables, p: u32, s: u32) -> u64 {
    use gpu_kernels::prelude::{atomic_add, atomic_or};
    // SAFETY: `t` describes live device tables and `p < n_pub`, `s < n_sub` (this fn's
    // contract): the bit rows, dirty flags, pair list (a position past `pair_cap` is
    // counted, not written) and counters are addressed inside their allocations; the
    // rows and counters are written through atomics, the dirty flags with plain stores
    // of one value (1) by any racing thread.
    unsafe {
        let pub_rows = t.pub_rows as usize as *mut u32;
        let sub_rows = t.sub_rows as usize as *mut u32;
        let bit = 1u32 << (s % 32);
        let old = atomic_or(
            pub_rows.add(p as usize * t.sub_words as usize + (s / 32) as usize),
            bit,
        );
        atomic_or(
            sub_rows.add(s as usize * t.pub_words as usize + (p / 32) as usize),
            1u32 << (p % 32),
        );
        if old & bit != 0 {
            return 0;
        }
        // Both rows now hold a bit (plain stores of one value: no atomic needed).
        let dirty = t.dirty as usize as *mut u32;
        *dirty.add(p as usize) = 1;
        *dirty.add((t.n_pub + s) as usize) = 1;
        let c = t.counters();
        let pos = atomic_add(core::ptr::addr_of_mut!((*c).new_pairs), 1);
        if pos < t.pair_cap {
            *(t.pairs as usize as *mut Pair).add(pos as usize) = Pair {
                publication: p,
                subscription: s,
            };
        }
        1
    }
}

/// Sums a per-lane `u64` over the warp and adds it to `*total` once per warp.
/// Every live lane of the warp must call it.
///
/// # Safety
/// `total` must point at a device `u64`.
#[inline(always)]
pub unsafe fn warp_add_u64(total: *mut u64, v: u64) {
    use gpu_kernels::prelude::{atomic_add_u64, lane_id, shfl_down};
    let mut lo = v as u32;
    let mut hi = (v >> 32) as u32;
    let mut delta = 16;
    while delta > 0 {
        let olo = shfl_down(lo, delta);
        let ohi = shfl_down(hi, delta);
        let lane_ok = lane_id() + delta < 32;
        if lane_ok {
            let (s, carry) = lo.overflowing_add(olo);
            lo = s;
            hi = hi.wrapping_add(ohi).wrapping_add(carry as u32);
        }
        delta /= 2;
    }
    let sum = ((hi as u64) << 32) | lo as u64;
    if lane_id() == 0 && sum != 0 {
        // SAFETY: `total` points at a device `u64` (this fn's contract); the add is atomic.
        unsafe { atomic_add_u64(total, sum) };
    }
}
