//! The parallel grid-based approach (§III.C, Figs. 3 and 4).
//!
//! The space is cut into equal cells; each cell `c` holds `PubList(c)` and `SubList(c)`
//! (Fig. 3), fixed-capacity slot arrays filled with atomics. Removing a region from a
//! list leaves a tombstone; [`compact_cells()`] squeezes them out before new regions are
//! mapped. A list that runs out of slots reports the size it needed in
//! [`StepCounters::cell_overflow`](crate::StepCounters); the host then grows the lists
//! and rebuilds them (the paper is silent on overflow).

use crate::{extents_overlap, record_overlap, staged_update, DdmTables, Range, UpdatedRegion};
use gpu_kernels::prelude::*;

/// Most dimensions the grid engine supports (its cell odometer lives in registers).
pub const GRID_MAX_DIMS: usize = 8;

/// Marks a slot whose region was unmapped.
pub const TOMBSTONE: u32 = u32::MAX;

/// The grid (§III.C: "an N-dimensional space is partitioned into a set of grid cells
/// and each grid cell has the equal size") and its cell lists, by address.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct GridTables {
    /// Lower corner of cell 0 in each dimension.
    pub origin: [u32; GRID_MAX_DIMS],
    /// Cell size in each dimension (>= 1).
    pub cell: [u32; GRID_MAX_DIMS],
    /// Cells along each dimension (>= 1); coordinates past the grid clamp to its border cells.
    pub cells: [u32; GRID_MAX_DIMS],
    /// `u32[n_cells * 2 * cap]`: list `c * 2 + kind` (kind 0 = PubList, 1 = SubList) at `(c * 2 + kind) * cap`.
    pub slots: u64,
    /// `u32[n_cells * 2]`: slots used by each list (may exceed `cap` after an overflow).
    pub lens: u64,
    pub cap: u32,
    pub n_cells: u32,
}

impl GridTables {
    /// The cell coordinate of point `x` in dimension `d`, clamped to the grid.
    #[inline(always)]
    pub fn coord(&self, d: usize, x: u32) -> u32 {
        // SAFETY: every caller passes a dimension `d < dims <= GRID_MAX_DIMS` (the host refuses
        // grids of more dimensions, `GridSpec`), so the three arrays are indexed in bounds;
        // `cell[d] >= 1` and `cells[d] >= 1` as the host builds them.
        unsafe {
            let o = *self.origin.get_unchecked(d);
            let c = (x.saturating_sub(o)) / *self.cell.get_unchecked(d);
            core::cmp::min(c, *self.cells.get_unchecked(d) - 1)
        }
    }
    /// The cells a range covers in dimension `d`: `[coord(lo), coord(max(hi - 1, lo))]`.
    /// A zero-width range covers the cell of its point.
    #[inline(always)]
    pub fn span(&self, d: usize, r: Range) -> (u32, u32) {
        let last = if r.hi > r.lo { r.hi - 1 } else { r.lo };
        (self.coord(d, r.lo), self.coord(d, last))
    }
}

/// Odometer over the cells a region covers ("the set of grid cells C", §III.C Phase 3).
struct CellBox {
    lo: [u32; GRID_MAX_DIMS],
    hi: [u32; GRID_MAX_DIMS],
    cur: [u32; GRID_MAX_DIMS],
    dims: usize,
    done: bool,
}

impl CellBox {
    /// # Safety
    /// `ext` must point at the region's `dims` ranges, `dims <= GRID_MAX_DIMS`.
    #[inline(always)]
    unsafe fn new(g: &GridTables, ext: *const Range, dims: usize) -> CellBox {
        let mut b = CellBox {
            lo: [0; GRID_MAX_DIMS],
            hi: [0; GRID_MAX_DIMS],
            cur: [0; GRID_MAX_DIMS],
            dims,
            done: false,
        };
        let mut d = 0;
        while d < dims {
            // SAFETY: `ext` points at the region's `dims` ranges (this fn's contract), `d < dims`.
            let (a, z) = g.span(d, unsafe { *ext.add(d) });
            // SAFETY: `d < dims <= GRID_MAX_DIMS`, the arrays' length.
            unsafe {
                *b.lo.get_unchecked_mut(d) = a;
                *b.hi.get_unchecked_mut(d) = z;
                *b.cur.get_unchecked_mut(d) = a;
            }
            d += 1;
        }
        b
    }

    /// The linear index of the current cell (dimension 0 varies fastest).
    #[inline(always)]
    fn cell(&self, g: &GridTables) -> u32 {
        let mut c = 0u32;
        let mut d = self.dims;
        while d > 0 {
            d -= 1;
            // SAFETY: `d < self.dims <= GRID_MAX_DIMS` (a `CellBox` is made with the grid's dims).
            unsafe { c = c * *g.cells.get_unchecked(d) + *self.cur.get_unchecked(d) };
        }
        c
    }

    #[inline(always)]
    fn advance(&mut self) {
        let mut d = 0;
        while d < self.dims {
            // SAFETY: `d < self.dims <= GRID_MAX_DIMS`.
            unsafe {
                if *self.cur.get_unchecked(d) < *self.hi.get_unchecked(d) {
                    *self.cur.get_unchecked_mut(d) += 1;
                    return;
                }
                *self.cur.get_unchecked_mut(d) = *self.lo.get_unchecked(d);
            }
            d += 1;
        }
        self.done = true;
    }
}

kernel! {
    /// Phase 3 prologue (§III.C: "if an updated region is ... mapped before, the region is
    /// unmapped before mapping it"): one thread per updated region. Thread `i` reads its
    /// region (record `i`, or region `i` for a dense step: [`staged_update`]) and its
    /// old ranges and live flag (global; [`commit_updates`](crate::phases::commit_updates)
    /// has not run yet) and replaces its index by a tombstone in the lists of its kind of
    /// every cell it covered. Only this thread writes this region's slots.
    pub fn unmap_regions(
        tables: *const DdmTables,
        grid: *const GridTables,
        updates: *const UpdatedRegion,
        n_updates: u32,
        dense: u32,
    ) {
        let i = global_id_x();
        if i >= n_updates {
            return;
        }
        unmap_one(&*tables, &*grid, staged_update(updates, dense, i).region);
    }
}

/// [`unmap_regions`]' work for one updated region `r` (also run by lane 0 of each warp
/// of the fused [`clear_and_unmap`]): a live `r` is replaced by a tombstone in the lists
/// of its kind of every cell its old ranges cover.
///
/// # Safety
/// `t` and `g` describe live device tables, `r < n_pub + n_sub`, `dims <= GRID_MAX_DIMS`;
/// no other thread unmaps `r` in this launch.
#[inline(always)]
unsafe fn unmap_one(t: &DdmTables, g: &GridTables, r: u32) {
    // SAFETY: the region's ranges and the lists are addressed inside their tables (this
    // fn's contract; list lengths are clamped to the capacity); only this thread writes
    // `r`'s slots.
    unsafe {
        if *t.alive().add(r as usize) == 0 {
            return;
        }
        let kind = if r < t.n_pub { 0u32 } else { 1u32 };
        let slots = g.slots as usize as *mut u32;
        let lens = g.lens as usize as *const u32;
        let mut b = CellBox::new(g, t.extent(r), t.dims as usize);
        while !b.done {
            let list = b.cell(g) * 2 + kind;
            let len = core::cmp::min(*lens.add(list as usize), g.cap);
            let s = slots.add(list as usize * g.cap as usize);
            let mut j = 0;
            while j < len {
                if *s.add(j as usize) == r {
                    *s.add(j as usize) = TOMBSTONE;
                    break;
                }
                j += 1;
            }
            b.advance();
        }
    }
}

kernel! {
    /// Phase 2 of §III.B/C and the unmapping of §III.C Phase 3 in one launch (they read
    /// the same old region table and write disjoint memory): warp `w` clears updated
    /// region `w`'s overlaps as [`clear_overlaps`](crate::phases::clear_overlaps) does
    /// (all 32 lanes: bit rows, global), then its lane 0 unmaps the region as
    /// [`unmap_regions`] does (cell lists, global).
    pub fn clear_and_unmap(
        tables: *const DdmTables,
        grid: *const GridTables,
        updates: *const UpdatedRegion,
        n_updates: u32,
        dense: u32,
    ) {
        let t = *tables;
        let w = global_id_x() / WARP_SIZE;
        let lane = lane_id();
        // A warp past the updates leaves whole (the clear shuffles within the warp).
        if w >= n_updates {
            return;
        }
        let r = staged_update(updates, dense, w).region;
        crate::phases::clear_row(&t, r, lane);
        if lane == 0 {
            unmap_one(&t, &*grid, r);
        }
    }
}

kernel! {
    /// Squeezes tombstones out of the cell lists: one thread per list (`n_cells * 2`
    /// threads); thread `l` rewrites list `l`'s slots in place (global) and its length.
    pub fn compact_cells(grid: *const GridTables) {
        compact_list(&*grid, global_id_x());
    }
}

/// [`compact_cells`]' work for list `l` (nothing past the last list).
///
/// # Safety
/// `g` describes live cell lists; no other thread touches list `l` in this launch.
#[inline(always)]
unsafe fn compact_list(g: &GridTables, l: u32) {
    if l >= g.n_cells * 2 {
        return;
    }
    // SAFETY: `l` is a list of the grid and its length is clamped to the capacity: the
    // slots read and written are the list's own.
    unsafe {
        let lens = g.lens as usize as *mut u32;
        let s = (g.slots as usize as *mut u32).add(l as usize * g.cap as usize);
        let len = core::cmp::min(*lens.add(l as usize), g.cap);
        let mut w = 0u32;
        let mut j = 0u32;
        while j < len {
            let v = *s.add(j as usize);
            if v != TOMBSTONE {
                *s.add(w as usize) = v;
                w += 1;
            }
            j += 1;
        }
        *lens.add(l as usize) = w;
    }
}

kernel! {
    /// [`compact_cells`] and Phase 1's install
    /// ([`commit_updates`](crate::phases::commit_updates)) in one launch (cell lists
    /// against the region table: disjoint memory), after [`clear_and_unmap`]: thread `i`
    /// installs update `i` (when `i < n_updates`: its ranges, live flag and epoch into
    /// the region table, its record into `copy_out`; thread 0 zeroes the step counters)
    /// and compacts list `i` (when `i < n_cells * 2`). Launched with
    /// `max(n_updates, n_cells * 2)` threads.
    pub fn commit_and_compact(
        tables: *const DdmTables,
        grid: *const GridTables,
        updates: *const UpdatedRegion,
        ranges: *const Range,
        n_updates: u32,
        dense: u32,
        epoch: u32,
        copy_out: *mut UpdatedRegion,
    ) {
        let i = global_id_x();
        let staged = (updates, dense);
        crate::phases::commit_one(&*tables, i, staged, ranges, n_updates, epoch, copy_out);
        compact_list(&*grid, i);
    }
}

kernel! {
    /// Phase 3 of §III.C (Fig. 3): one thread per updated region (or, with `all = 1`, per
    /// region index, to rebuild the lists). Thread `i` maps its live region on to the
    /// cells it covers: for each cell it takes a slot of the cell's list of its kind
    /// with an atomic add on the list's length (global) and writes its index there. A
    /// full list records the length it needed in `cell_overflow` (atomic max).
    pub fn map_regions(
        tables: *const DdmTables,
        grid: *const GridTables,
        updates: *const UpdatedRegion,
        n: u32,
        all: u32,
    ) {
        let i = global_id_x();
        if i >= n {
            return;
        }
        let t = *tables;
        let g = *grid;
        let r = if all != 0 { i } else { (*updates.add(i as usize)).region };
        if *t.alive().add(r as usize) == 0 {
            return;
        }
        let kind = if r < t.n_pub { 0u32 } else { 1u32 };
        let slots = g.slots as usize as *mut u32;
        let lens = g.lens as usize as *mut u32;
        let mut b = CellBox::new(&g, t.extent(r), t.dims as usize);
        while !b.done {
            let list = b.cell(&g) * 2 + kind;
            let pos = atomic_add(lens.add(list as usize), 1);
            if pos < g.cap {
                *slots.add(list as usize * g.cap as usize + pos as usize) = r;
            } else {
                let c = t.counters();
                atomic_max(core::ptr::addr_of_mut!((*c).cell_overflow), pos + 1);
            }
            b.advance();
        }
    }
}

kernel! {
    /// Phase 4 of §III.C (Fig. 4): one thread per updated region. Thread `i` walks the
    /// cells `C` of its live region and compares it with the regions of the opposite
    /// kind's list of each cell (global), recording overlaps with atomics. A pair is
    /// compared only in its reference cell, the cell holding the lower corner of the two
    /// regions' intersection, so that regions sharing several cells meet once; a
    /// subscription skips publications updated in this `epoch` (their threads find the pair).
    pub fn match_grid(
        tables: *const DdmTables,
        grid: *const GridTables,
        updates: *const UpdatedRegion,
        n_updates: u32,
        epoch: u32,
    ) {
        let i = global_id_x();
        let t = *tables;
        let mut found: u64 = 0;
        if i < n_updates {
            let g = *grid;
            let u = *updates.add(i as usize);
            let r = u.region;
            if u.alive != 0 {
                let dims = t.dims as usize;
                let own = t.extent(r);
                let own_is_pub = r < t.n_pub;
                let other = if own_is_pub { 1u32 } else { 0u32 };
                let slots = g.slots as usize as *const u32;
                let lens = g.lens as usize as *const u32;
                let mut b = CellBox::new(&g, own, dims);
                while !b.done {
                    let list = b.cell(&g) * 2 + other;
                    let len = core::cmp::min(*lens.add(list as usize), g.cap);
                    let s = slots.add(list as usize * g.cap as usize);
                    let mut j = 0;
                    while j < len {
                        let v = *s.add(j as usize);
                        j += 1;
                        if !own_is_pub && *t.epoch().add(v as usize) == epoch {
                            continue;
                        }
                        let cand = t.extent(v);
                        // Reference cell: max of the lower bounds, in every dimension.
                        let mut here = true;
                        let mut d = 0;
                        while d < dims {
                            let m = core::cmp::max((*own.add(d)).lo, (*cand.add(d)).lo);
                            if g.coord(d, m) != *b.cur.get_unchecked(d) {
                                here = false;
                                break;
                            }
                            d += 1;
                        }
                        if here && extents_overlap(own, cand, dims as u32) {
                            found += if own_is_pub {
                                record_overlap(&t, r, v - t.n_pub)
                            } else {
                                record_overlap(&t, v, r - t.n_pub)
                            };
                        }
                    }
                    b.advance();
                }
            }
        }
        if found != 0 {
            atomic_add_u64(t.overlaps as usize as *mut u64, found);
        }
    }
}
