//! Model -> flat device tables (§III.A, Fig. 1: the region information and the overlap
//! information live in device memory), and back.
//!
//! - Region table: publications and subscriptions share one index space (publication
//!   `p` is region `p`, subscription `s` is region `n_pub + s`, with `n_pub` the
//!   engine's publication capacity); region `r`'s ranges are `bounds[r * dims ..][..dims]`.
//! - Overlap information: two bit matrices ([`DdmTables`](crate::DdmTables)), row `p` of
//!   `pub_rows` for publication `p`, row `s` of `sub_rows` for subscription `s`.
//! - Updated regions: [`UpdatedRegion`] records, publications first, then their ranges.
//! - Grid (§III.C, Fig. 3): [`GridSpec`] -> [`GridTables`](crate::GridTables).

use crate::engine::DdmError;
use crate::model::{Change, Kind, Pair, Range, RegionSet, UpdateBatch};
use ddm_region_kernels::grid::GRID_MAX_DIMS;
use ddm_region_kernels::UpdatedRegion;

/// Most cells a grid may have.
pub const MAX_CELLS: u64 = 1 << 24;

/// Phase 1's payload: the updated regions of a batch in device form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StagedUpdates {
    /// Publications first, then subscriptions; one record per region (the last change wins).
    pub records: Vec<UpdatedRegion>,
    /// `dims` ranges per record (zeros for a removed region).
    pub ranges: Vec<Range>,
    /// How many records are publications.
    pub n_pub_updates: u32,
}

/// What [`stage_into`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageCounts {
    /// Records written (one per distinct updated region).
    pub records: u32,
    /// How many of them (the first ones) are publications.
    pub n_pub_updates: u32,
    /// The largest lower bound in dimension 0 of any `Set` entry (0 when none).
    pub max_lo0: u32,
}

/// Orders and de-duplicates a batch for the device. `stamp` (one slot per region of the
/// unified space, owned by the engine) remembers the batch that last saw each region.
/// (Allocating form of [`stage_into`], for tests and one-off use.)
pub fn stage_updates(
    batch: &UpdateBatch,
    dims: usize,
    n_pub: u32,
    n_sub: u32,
    stamp: &mut [u32],
    batch_no: u32,
) -> Result<StagedUpdates, DdmError> {
    let mut last = vec![0u32; stamp.len()];
    let n = batch.entries.len().min(stamp.len());
    let mut records = vec![UpdatedRegion::default(); n];
    let mut ranges = vec![Range::default(); n * dims];
    let c = stage_into(
        batch,
        dims,
        n_pub,
        n_sub,
        (stamp, &mut last),
        batch_no,
        &mut records,
        &mut ranges,
    )?;
    records.truncate(c.records as usize);
    ranges.truncate(c.records as usize * dims);
    Ok(StagedUpdates {
        records,
        ranges,
        n_pub_updates: c.n_pub_updates,
    })
}

/// Phase 1 on the host: orders and de-duplicates `batch` straight into the engine's
/// staging memory (mapped page-locked host memory): `records` gets one
/// [`UpdatedRegion`] per distinct updated region, publications first, each kind in batch
/// order, the last change of a region winning; `ranges` gets `dims` ranges per record
/// (zeros for a removed region). Both must have room for every distinct region of the batch.
///
/// Two linear passes and no allocation (the step's host cost at a million regions):
/// the first checks the entries and records, per region, the batch it was last seen in
/// (`scratch.0`, the engine's stamps) and its last entry (`scratch.1`); the second
/// writes the entries that are their region's last.
#[allow(clippy::too_many_arguments)]
pub fn stage_into(
    batch: &UpdateBatch,
    dims: usize,
    n_pub: u32,
    n_sub: u32,
    scratch: (&mut [u32], &mut [u32]),
    batch_no: u32,
    records: &mut [UpdatedRegion],
    ranges: &mut [Range],
) -> Result<StageCounts, DdmError> {
    // One copy of the passes per small dimensionality, so that a region's ranges are
    // copied with a few moves instead of a `memcpy` call (a third of the time at 1M).
    match dims {
        1 => stage_passes::<1>(
            batch, dims, n_pub, n_sub, scratch, batch_no, records, ranges,
        ),
        2 => stage_passes::<2>(
            batch, dims, n_pub, n_sub, scratch, batch_no, records, ranges,
        ),
        3 => stage_passes::<3>(
            batch, dims, n_pub, n_sub, scratch, batch_no, records, ranges,
        ),
        4 => stage_passes::<4>(
            batch, dims, n_pub, n_sub, scratch, batch_no, records, ranges,
        ),
        _ => stage_passes::<0>(
            batch, dims, n_pub, n_sub, scratch, batch_no, records, ranges,
        ),
    }
}

/// [`stage_into`] for `D` dimensions (`D = 0`: any, from `dims`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn stage_passes<const D: usize>(
    batch: &UpdateBatch,
    dims: usize,
    n_pub: u32,
    n_sub: u32,
    scratch: (&mut [u32], &mut [u32]),
    batch_no: u32,
    records: &mut [UpdatedRegion],
    ranges: &mut [Range],
) -> Result<StageCounts, DdmError> {
    let dims = if D == 0 { dims } else { D };
    let (stamp, last) = scratch;
    let entries = &batch.entries;
    let all = &batch.ranges;
    // Pass 1: check, count the distinct regions of each kind, remember each region's last entry.
    let mut distinct = [0u32; 2];
    let mut at = 0usize;
    let mut max_lo0 = 0u32;
    for (i, &(kind, index, change)) in entries.iter().enumerate() {
        let cap = match kind {
            Kind::Publication => n_pub,
            Kind::Subscription => n_sub,
        };
        if index >= cap {
            return Err(DdmError::Capacity {
                kind: kind.word(),
                index,
                capacity: cap,
            });
        }
        if change == Change::Set {
            let Some(r) = all.get(at..at + dims) else {
                return Err(DdmError::BadBatch(
                    "fewer ranges than Set entries need".into(),
                ));
            };
            if r.iter().any(|x| x.lo > x.hi) {
                crate::model::check_ranges(dims, r)?;
            }
            max_lo0 = max_lo0.max(r[0].lo);
            at += dims;
        }
        let r = unified(kind, index, n_pub) as usize;
        if stamp[r] != batch_no {
            stamp[r] = batch_no;
            distinct[(kind == Kind::Subscription) as usize] += 1;
        }
        last[r] = i as u32;
    }
    if at != all.len() {
        return Err(DdmError::BadBatch(format!(
            "{} ranges given, the Set entries use {at}",
            all.len()
        )));
    }
    let total = (distinct[0] + distinct[1]) as usize;
    assert!(
        records.len() >= total && ranges.len() >= total * dims,
        "staging holds fewer records than the batch's regions"
    );
    // Pass 2: the last entry of each region, written in place.
    let mut next = [0u32, distinct[0]];
    let mut at = 0usize;
    for (i, &(kind, index, change)) in entries.iter().enumerate() {
        let alive = change == Change::Set;
        let r = unified(kind, index, n_pub);
        if last[r as usize] == i as u32 {
            let k = (kind == Kind::Subscription) as usize;
            let slot = next[k] as usize;
            next[k] += 1;
            records[slot] = UpdatedRegion {
                region: r,
                alive: alive as u32,
            };
            let dst = &mut ranges[slot * dims..(slot + 1) * dims];
            if alive {
                dst.copy_from_slice(&all[at..at + dims]);
            } else {
                dst.fill(Range::default());
            }
        }
        if alive {
            at += dims;
        }
    }
    Ok(StageCounts {
        records: distinct[0] + distinct[1],
        n_pub_updates: distinct[0],
        max_lo0,
    })
}

/// Region `index` of `kind` in the unified index space.
pub fn unified(kind: Kind, index: u32, n_pub: u32) -> u32 {
    match kind {
        Kind::Publication => index,
        Kind::Subscription => n_pub + index,
    }
}

/// The pairs of a `pub_rows` bit matrix (`rows` rows of `words` words), in order.
pub fn decode_pub_rows(bits: &[u32], rows: u32, words: u32) -> Vec<Pair> {
    let mut out = Vec::new();
    for p in 0..rows {
        for (w, &word) in bits[(p * words) as usize..][..words as usize]
            .iter()
            .enumerate()
        {
            let mut m = word;
            while m != 0 {
                let b = m.trailing_zeros();
                m &= m - 1;
                out.push(Pair {
                    publication: p,
                    subscription: w as u32 * 32 + b,
                });
            }
        }
    }
    out
}

/// The number of cells of a grid of `cells[d]` cells along dimension `d`; `None` past
/// `u64::MAX` (8 dimensions of up to 2^32 cells: a plain product overflows).
fn total_cells(cells: &[u32]) -> Option<u64> {
    cells.iter().try_fold(1u64, |t, &c| t.checked_mul(c as u64))
}

/// The grid of §III.C: equal cells, `cells[d]` of side `cell[d]` from `origin[d]` in each
/// dimension. Coordinates outside the grid belong to its border cells, so any grid gives
/// exact answers; a good one has cells about as large as the regions (§II.B, §IV: 100 x 100).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GridSpec {
    pub origin: Vec<u32>,
    pub cell: Vec<u32>,
    pub cells: Vec<u32>,
}

impl GridSpec {
    /// A grid from its parts, checked: 1 to 8 dimensions, sizes >= 1, at most [`MAX_CELLS`] cells.
    pub fn new(origin: Vec<u32>, cell: Vec<u32>, cells: Vec<u32>) -> Result<GridSpec, DdmError> {
        let dims = origin.len();
        if dims == 0 || dims > GRID_MAX_DIMS || cell.len() != dims || cells.len() != dims {
            return Err(DdmError::Grid(format!(
                "a grid has 1 to {GRID_MAX_DIMS} dimensions, one origin, cell and count each"
            )));
        }
        if cell.contains(&0) || cells.contains(&0) {
            return Err(DdmError::Grid(
                "cell sizes and counts must be at least 1".into(),
            ));
        }
        match total_cells(&cells) {
            Some(total) if total <= MAX_CELLS => {}
            total => {
                let total =
                    total.map_or_else(|| format!("more than {}", u64::MAX), |t| t.to_string());
                return Err(DdmError::Grid(format!(
                    "{total} cells, at most {MAX_CELLS}: use larger cells"
                )));
            }
        }
        Ok(GridSpec {
            origin,
            cell,
            cells,
        })
    }

    /// The paper's grid: the space `[0, space)` in each of `dims` dimensions cut into
    /// cells of side `cell` (§IV: 10000 / 100).
    pub fn covering(dims: usize, space: u32, cell: u32) -> Result<GridSpec, DdmError> {
        let cell = cell.max(1);
        let n = space.div_ceil(cell).max(1);
        GridSpec::new(vec![0; dims], vec![cell; dims], vec![n; dims])
    }

    /// A grid over the bounding box of `set`, with cells of side `cell` (per dimension)
    /// or, by default, the regions' mean side; cells grow (doubling) until there are at
    /// most [`MAX_CELLS`] / 16 of them and, by default, at most 4 per region (more cells
    /// than regions only cost empty lists).
    pub fn fit(set: &RegionSet, cell: Option<&[u32]>) -> Result<GridSpec, DdmError> {
        let dims = set.dims();
        if dims > GRID_MAX_DIMS {
            return Err(DdmError::Grid(format!(
                "{dims} dimensions; the grid engine supports at most {GRID_MAX_DIMS}"
            )));
        }
        let mut lo = vec![u32::MAX; dims];
        let mut hi = vec![0u32; dims];
        let mut sum = vec![0u64; dims];
        let mut n = 0u64;
        for kind in [Kind::Publication, Kind::Subscription] {
            for r in set.ranges(kind).chunks(dims) {
                for d in 0..dims {
                    lo[d] = lo[d].min(r[d].lo);
                    hi[d] = hi[d].max(r[d].hi);
                    sum[d] += (r[d].hi - r[d].lo) as u64;
                }
                n += 1;
            }
        }
        if n == 0 {
            return GridSpec::new(vec![0; dims], vec![1; dims], vec![1; dims]);
        }
        let limit = match cell {
            Some(_) => MAX_CELLS / 16,
            None => (MAX_CELLS / 16).min(4 * n.max(16)),
        };
        let mut size: Vec<u32> = match cell {
            Some(c) if c.len() == dims => c.iter().map(|&c| c.max(1)).collect(),
            Some(c) => {
                return Err(DdmError::Grid(format!(
                    "{} cell sizes for {dims} dimensions",
                    c.len()
                )))
            }
            None => sum
                .iter()
                .map(|&s| (s / n).clamp(1, u32::MAX as u64) as u32)
                .collect(),
        };
        loop {
            let cells: Vec<u32> = (0..dims)
                .map(|d| {
                    ((hi[d].saturating_sub(lo[d]) as u64)
                        .div_ceil(size[d] as u64)
                        .max(1)) as u32
                })
                .collect();
            if total_cells(&cells).is_some_and(|t| t <= limit) {
                return GridSpec::new(lo, size, cells);
            }
            for s in size.iter_mut() {
                *s = s.saturating_mul(2);
            }
        }
    }

    pub fn dims(&self) -> usize {
        self.origin.len()
    }
    pub fn n_cells(&self) -> u32 {
        self.cells.iter().product()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_puts_publications_first_and_keeps_the_last_change() {
        let mut b = UpdateBatch::default();
        let r = |x| [Range { lo: x, hi: x + 1 }];
        b.set(Kind::Subscription, 0, &r(1));
        b.set(Kind::Publication, 2, &r(2));
        b.set(Kind::Subscription, 0, &r(3));
        b.remove(Kind::Publication, 1);
        let mut stamp = vec![0; 8];
        let s = stage_updates(&b, 1, 4, 4, &mut stamp, 1).unwrap();
        assert_eq!(s.n_pub_updates, 2);
        let regions: Vec<u32> = s.records.iter().map(|u| u.region).collect();
        assert_eq!(regions, [2, 1, 4]);
        assert_eq!(s.records[1].alive, 0);
        assert_eq!(s.ranges, [r(2)[0], Range::default(), r(3)[0]]);
    }

    #[test]
    fn staging_rejects_indices_past_capacity() {
        let mut b = UpdateBatch::default();
        b.set(Kind::Publication, 4, &[Range { lo: 0, hi: 1 }]);
        let mut stamp = vec![0; 8];
        assert!(matches!(
            stage_updates(&b, 1, 4, 4, &mut stamp, 1),
            Err(DdmError::Capacity { .. })
        ));
    }

    #[test]
    fn pub_rows_decode_to_ordered_pairs() {
        let bits = [0b101, 0, 0, 1 << 31];
        let pairs = decode_pub_rows(&bits, 2, 2);
        let want = [(0, 0), (0, 2), (1, 63)].map(|(p, s)| Pair {
            publication: p,
            subscription: s,
        });
        assert_eq!(pairs, want);
    }

    /// The true number of cells of `g`, without overflow.
    fn true_cells(g: &GridSpec) -> u128 {
        g.cells.iter().map(|&c| c as u128).product()
    }

    #[test]
    fn grid_specs_whose_cell_count_overflows_u64_are_a_typed_error() {
        // 2^16 cells in each of 4 dimensions: 2^64 cells, which a u64 product wraps to 0.
        // 2^32 - 1 in each of 8: far past u64.
        for cells in [
            vec![1 << 16; 4],
            vec![u32::MAX; 8],
            vec![1 << 22, 1 << 21, 1 << 21],
        ] {
            let dims = cells.len();
            let e = GridSpec::new(vec![0; dims], vec![1; dims], cells.clone()).unwrap_err();
            let DdmError::Grid(msg) = &e else {
                panic!("{e}")
            };
            assert!(
                msg.contains(&format!("at most {MAX_CELLS}")),
                "{cells:?}: {msg}"
            );
        }
        let e = GridSpec::new(vec![0; 3], vec![1; 3], vec![u32::MAX; 3]).unwrap_err();
        assert!(
            e.to_string()
                .contains("more than 18446744073709551615 cells"),
            "{e}"
        );
    }

    #[test]
    fn fitted_grids_over_extreme_coordinates_and_tiny_cells_stay_under_the_cell_limit() {
        // fuzz/regressions/ddm_diff-1.bin's workload (3 dimensions, one region near 0,
        // one at u32::MAX: about 2^32 cells of the mean side 1 per dimension), and 4
        // dimensions of span 2^16 with cells of side 1 (2^64 cells, a u64 product of 0).
        let region = |lo: u32, hi: u32, dims| vec![Range { lo, hi }; dims];
        let mut far = RegionSet::new(3).unwrap();
        far.push(
            Kind::Publication,
            0,
            &[
                Range { lo: 12, hi: 12 },
                Range { lo: 10, hi: 13 },
                Range { lo: 1, hi: 1 },
            ],
        )
        .unwrap();
        far.push(Kind::Subscription, 0, &region(u32::MAX, u32::MAX, 3))
            .unwrap();
        let mut wide = RegionSet::new(4).unwrap();
        wide.push(Kind::Publication, 0, &region(0, 1, 4)).unwrap();
        wide.push(Kind::Subscription, 0, &region(0, 1 << 16, 4))
            .unwrap();
        for (set, cell) in [
            (&far, None),
            (&far, Some(vec![1; 3])),
            (&wide, None),
            (&wide, Some(vec![1; 4])),
        ] {
            let g = GridSpec::fit(set, cell.as_deref()).unwrap();
            assert!(true_cells(&g) <= (MAX_CELLS / 16) as u128, "{g:?}");
            assert_eq!(g.n_cells() as u128, true_cells(&g));
        }
    }

    #[test]
    fn fitted_grid_stays_under_the_cell_limit() {
        let mut set = RegionSet::new(2).unwrap();
        set.push(
            Kind::Publication,
            0,
            &[Range { lo: 0, hi: 1 }, Range { lo: 0, hi: 1 }],
        )
        .unwrap();
        set.push(
            Kind::Subscription,
            0,
            &[
                Range {
                    lo: 0,
                    hi: 4_000_000_000,
                },
                Range { lo: 0, hi: 1 },
            ],
        )
        .unwrap();
        let g = GridSpec::fit(&set, None).unwrap();
        assert!(g.n_cells() as u64 <= MAX_CELLS / 16);
    }
}
