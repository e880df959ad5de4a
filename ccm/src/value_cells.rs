//! Beyond the paper: the host side of the pruning index's value cells (the device form of
//! the CPU bit index's cells, [`ccm_kernels::cells`], whose docs say where each idea comes
//! from): built from the filters' range forms when every filter is integer ranges, in
//! slices of [`CELL_SLICE`] filters in interface order. When interfaces share filters
//! ([`HostCells::with_interfaces`]), each slice also keeps the interfaces of its slots
//! and the slices are taken by their depth into their interfaces. Built over the filters
//! in name order instead ([`HostCells::with_names`]), each slice also keeps the names
//! all of its filters constrain, so that an event lacking one skips the slice.
//!
//! Per name, the cut values split the name's finite bounds evenly into cells (HEM's
//! workload balance, as `baselines::bit_index` splits them), so each cell holds about as
//! many bounds to compare exactly; the number of cells is the most whose bitsets, with
//! the slice's bounds, fit the kernel's shared memory budget.

use ccm_kernels::cells::{
    cell_shared_bytes, slice_words, CellEdge, CellSlice, CELL_ROWS, CELL_SLICE, CELL_WORDS,
    EDGE_UPPER, GROUP_NAMES, GROUP_SETS,
};
use ccm_kernels::index::IndexRange;
use rayon::prelude::*;

/// The value cells of a set of filters, as uploaded ([`ccm_kernels::cells::CellTables`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HostCells {
    pub bits: Vec<u32>,
    pub cuts: Vec<i32>,
    pub edge_at: Vec<u32>,
    pub edges: Vec<CellEdge>,
    pub rows: u32,
    pub cells: u32,
    pub slices: u32,
    pub edge_max: u32,
    pub groups: u32,
    /// Interfaces share filters ([`ccm_kernels::cells::CellTables::shared`]): the four
    /// tables below are filled (else one zero each).
    pub shared: bool,
    pub order: Vec<CellSlice>,
    pub iface_at: Vec<u32>,
    pub ifaces: Vec<u32>,
    pub bounds: Vec<u32>,
    /// The slots are in name order ([`ccm_kernels::cells::CellTables::sorted`]): the two
    /// tables below are filled (else one zero each).
    pub sorted: bool,
    pub need: Vec<u64>,
    pub rank: Vec<u32>,
}

/// Most slices when interfaces share filters: the kernel's grid takes them in
/// `blockIdx.y` (67M filters).
pub(crate) const SHARED_SLICES_MAX: u32 = 65_535;

/// Whether a finite bound compares exactly as `i32` with an event's integer clamped to
/// `i32`: it lies strictly inside `i32`.
fn inside_i32(v: i64) -> bool {
    v > i32::MIN as i64 && v < i32::MAX as i64
}

/// The cell of `v` among the ascending `cuts`: how many lie at or below it (the kernel's
/// `cell_of`).
fn cell_of(cuts: &[i32], v: i32) -> u32 {
    cuts.partition_point(|&c| c <= v) as u32
}

impl HostCells {
    /// The cells of the filters whose range forms, slot by slot in interface order, are
    /// `ranges(k)` for `k < n`, for the kernel's blocks of `threads` threads within
    /// `budget` bytes of shared memory, at most `max_cells` cells per name, with the
    /// unions of absent names by groups when `groups` (the CPU bit index's groups of
    /// names, [`ccm_kernels::cells::GROUP_NAMES`] each here); `None` when
    /// a filter has no range form, a name row is not below [`CELL_ROWS`], a finite bound
    /// does not lie strictly inside `i32` (unbounded sides are `i64::MIN` and
    /// `i64::MAX`), or not even one cell per name fits the budget.
    pub fn build<'a>(
        n: usize,
        ranges: impl Fn(usize) -> &'a [IndexRange] + Sync,
        threads: u32,
        budget: u32,
        max_cells: u32,
        groups: bool,
    ) -> Option<HostCells> {
        if n == 0 {
            return None;
        }
        let ok = (0..n).into_par_iter().all(|k| {
            let r = ranges(k);
            !r.is_empty()
                && r.iter().all(|g| {
                    g.row < CELL_ROWS
                        && (g.lo == i64::MIN || inside_i32(g.lo))
                        && (g.hi == i64::MAX || inside_i32(g.hi))
                })
        });
        if !ok {
            return None;
        }
        let rows = (0..n)
            .into_par_iter()
            .map(|k| ranges(k).iter().map(|g| g.row + 1).max().unwrap_or(0))
            .max()
            .unwrap_or(0);
        let slices = n.div_ceil(CELL_SLICE as usize);
        let finite = |g: &IndexRange| (g.lo != i64::MIN) as u32 + (g.hi != i64::MAX) as u32;
        let edge_max = (0..slices)
            .into_par_iter()
            .map(|s| {
                let ks = s * CELL_SLICE as usize..((s + 1) * CELL_SLICE as usize).min(n);
                ks.map(|k| ranges(k).iter().map(finite).sum::<u32>())
                    .sum::<u32>()
            })
            .max()
            .unwrap_or(0);
        let n_groups = if groups {
            rows.div_ceil(GROUP_NAMES)
        } else {
            0
        };
        let cells = (1..=max_cells.max(1))
            .rev()
            .find(|&c| cell_shared_bytes(rows, c, n_groups, edge_max, threads) <= budget)?;
        // Each name's finite bounds in value order, cut evenly into `cells` cells.
        let cuts: Vec<i32> = (0..rows)
            .into_par_iter()
            .flat_map_iter(|r| {
                let mut b: Vec<i32> = (0..n)
                    .flat_map(|k| ranges(k).iter().filter(move |g| g.row == r))
                    .flat_map(|g| {
                        let lo = (g.lo != i64::MIN).then_some(g.lo as i32);
                        let hi = (g.hi != i64::MAX).then_some(g.hi as i32);
                        lo.into_iter().chain(hi)
                    })
                    .collect();
                b.sort_unstable();
                let m = b.len();
                (1..cells).map(move |j| {
                    if m == 0 {
                        0
                    } else {
                        b[(j as usize * m / cells as usize).min(m - 1)]
                    }
                })
            })
            .collect();
        let cuts_of = |r: u32| {
            let c = (cells - 1) as usize;
            &cuts[r as usize * c..(r as usize + 1) * c]
        };
        // Per slice: its bitsets and its edges by (name, cell).
        let per_cell = (cells + 1) as usize * CELL_WORDS as usize;
        let words = slice_words(rows, cells, n_groups) as usize;
        let mut bits = vec![0u32; slices * words];
        let slice_edges: Vec<Vec<(u32, CellEdge)>> = bits
            .par_chunks_mut(words)
            .enumerate()
            .map(|(s, out)| {
                let mut edges = Vec::new();
                let first = s * CELL_SLICE as usize;
                for k in first..(first + CELL_SLICE as usize).min(n) {
                    let local = (k - first) as u32;
                    let (w, bit) = ((local / 32) as usize, 1u32 << (local % 32));
                    for g in ranges(k) {
                        let cut = cuts_of(g.row);
                        let row = g.row as usize * per_cell;
                        let mut set =
                            |c: u32| out[row + c as usize * CELL_WORDS as usize + w] |= bit;
                        // The absent cell: every filter constraining the name.
                        set(cells);
                        let lo = if g.lo == i64::MIN {
                            0
                        } else {
                            let c = cell_of(cut, g.lo as i32);
                            edges.push((
                                g.row * cells + c,
                                CellEdge {
                                    at: local,
                                    bound: g.lo as i32,
                                },
                            ));
                            c
                        };
                        let hi = if g.hi == i64::MAX {
                            cells - 1
                        } else {
                            let c = cell_of(cut, g.hi as i32);
                            let at = local | EDGE_UPPER;
                            edges.push((
                                g.row * cells + c,
                                CellEdge {
                                    at,
                                    bound: g.hi as i32,
                                },
                            ));
                            c
                        };
                        // Below the lower bound's cell and above the upper's: fails.
                        (0..lo).chain(hi + 1..cells).for_each(&mut set);
                    }
                }
                // Per group and subset of its names, the union of their absent cells.
                let unions = rows as usize * per_cell;
                for g in 0..n_groups {
                    for m in 1..GROUP_SETS {
                        let at = unions + ((g * GROUP_SETS + m) * CELL_WORDS) as usize;
                        for i in (0..GROUP_NAMES).filter(|i| m & 1 << i != 0) {
                            let r = g * GROUP_NAMES + i;
                            if r < rows {
                                let absent =
                                    r as usize * per_cell + cells as usize * CELL_WORDS as usize;
                                for w in 0..CELL_WORDS as usize {
                                    out[at + w] |= out[absent + w];
                                }
                            }
                        }
                    }
                }
                // By cell, lower bounds before upper ones, each by bound.
                edges.sort_by_key(|e| (e.0, e.1.at & EDGE_UPPER, e.1.bound));
                edges
            })
            .collect();
        // Per cell: where its lower bounds start, where its upper bounds start.
        let per_slice = (rows * cells) as usize;
        let mut edge_at = Vec::with_capacity(2 * slices * per_slice + 1);
        let mut edges = Vec::with_capacity(slice_edges.iter().map(Vec::len).sum());
        for list in slice_edges {
            let mut i = 0;
            for q in 0..per_slice as u32 {
                for upper in [0, EDGE_UPPER] {
                    edge_at.push(edges.len() as u32);
                    while i < list.len() && list[i].0 == q && list[i].1.at & EDGE_UPPER == upper {
                        edges.push(list[i].1);
                        i += 1;
                    }
                }
            }
        }
        edge_at.push(edges.len() as u32);
        Some(HostCells {
            bits,
            cuts: if cuts.is_empty() { vec![0] } else { cuts },
            edge_at,
            edges: if edges.is_empty() {
                vec![CellEdge::default()]
            } else {
                edges
            },
            rows,
            cells,
            slices: slices as u32,
            edge_max,
            groups: n_groups,
            shared: false,
            order: vec![CellSlice::default()],
            iface_at: vec![0],
            ifaces: vec![0],
            bounds: vec![0],
            sorted: false,
            need: vec![0],
            rank: vec![0],
        })
    }

    /// These cells (of `n` slots, one filter per interface) over filters in name order:
    /// slot `k`'s filter has the name signature `sig(k)` and the interface rank
    /// `rank(k)`; per slice the AND of its slots' signatures (the names each of its
    /// filters constrains).
    pub fn with_names(
        mut self,
        n: usize,
        sig: impl Fn(usize) -> u64 + Sync,
        rank: impl Fn(usize) -> u32 + Sync + Send,
    ) -> Self {
        let slice = CELL_SLICE as usize;
        self.need = (0..self.slices as usize)
            .into_par_iter()
            .map(|s| (s * slice..((s + 1) * slice).min(n)).fold(u64::MAX, |a, k| a & sig(k)))
            .collect();
        self.rank = (0..n).into_par_iter().map(rank).collect();
        if self.rank.is_empty() {
            self.rank.push(0);
        }
        self.sorted = true;
        self
    }

    /// These cells (of `n` slots) for filters that share interfaces, slot `k`'s interface
    /// being `iface(k)` (each interface one run of slots): per slice the interfaces of its
    /// slots, each once in slot order, and the slots where one begins (bit `k % 32` of word
    /// `k / 32`, `k > 0`); and the order the kernel takes the slices in, by their depth
    /// (the slice less the first slice of the interface of its last slot: 0 where that
    /// interface begins), then by slice. `None` past [`SHARED_SLICES_MAX`] slices.
    pub fn with_interfaces(mut self, n: usize, iface: impl Fn(usize) -> u32) -> Option<Self> {
        if self.slices > SHARED_SLICES_MAX {
            return None;
        }
        let slice = CELL_SLICE as usize;
        let slices = self.slices as usize;
        let mut iface_at = Vec::with_capacity(slices + 1);
        let mut ifaces = Vec::new();
        let mut bounds = vec![0u32; slices * CELL_WORDS as usize];
        let mut depth = Vec::with_capacity(slices);
        // The first slot of the interface of the slot before.
        let mut run = 0;
        let mut prev = None;
        for s in 0..slices {
            iface_at.push(ifaces.len() as u32);
            let first = s * slice;
            for k in first..(first + slice).min(n) {
                let i = iface(k);
                if prev != Some(i) {
                    run = k;
                    prev = Some(i);
                }
                if k == first || run == k {
                    ifaces.push(i);
                    let local = k - first;
                    if local > 0 {
                        bounds[s * CELL_WORDS as usize + local / 32] |= 1 << (local % 32);
                    }
                }
            }
            depth.push(s - run / slice);
        }
        iface_at.push(ifaces.len() as u32);
        let mut order: Vec<u32> = (0..slices as u32).collect();
        order.sort_by_key(|&s| (depth[s as usize], s));
        let order = order
            .into_iter()
            .map(|s| {
                let (at, end) = (iface_at[s as usize], iface_at[s as usize + 1]);
                CellSlice {
                    slice: s,
                    if_at: at,
                    n_if: end - at,
                    first: ifaces[at as usize],
                }
            })
            .collect();
        self.shared = true;
        self.order = order;
        self.iface_at = iface_at;
        self.ifaces = if ifaces.is_empty() { vec![0] } else { ifaces };
        self.bounds = bounds;
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(row: u32, lo: i64, hi: i64) -> IndexRange {
        IndexRange {
            lo,
            hi,
            row,
            pad: 0,
        }
    }

    /// Whether the cells say slot `k` fails for value `v` of name `r` (`None`: absent):
    /// the cell's bit, or a failing edge of the cell.
    fn fails(h: &HostCells, k: usize, r: u32, v: Option<i32>) -> bool {
        let (s, local) = (k / CELL_SLICE as usize, (k % CELL_SLICE as usize) as u32);
        let per_cell = (h.cells + 1) as usize * CELL_WORDS as usize;
        let base = s * slice_words(h.rows, h.cells, h.groups) as usize + r as usize * per_cell;
        let c = v.map_or(h.cells, |v| {
            cell_of(
                &h.cuts[(r * (h.cells - 1)) as usize..][..(h.cells - 1) as usize],
                v,
            )
        });
        let word = h.bits[base + c as usize * CELL_WORDS as usize + (local / 32) as usize];
        if word & 1 << (local % 32) != 0 {
            return true;
        }
        let Some(v) = v else { return false };
        let q = 2 * ((s * h.rows as usize + r as usize) * h.cells as usize + c as usize);
        let (lo, up, end) = (
            h.edge_at[q] as usize,
            h.edge_at[q + 1] as usize,
            h.edge_at[q + 2] as usize,
        );
        let (lower, upper) = (&h.edges[lo..up], &h.edges[up..end]);
        // Each side sorted by bound, the failing ones a run (as the kernel takes them).
        assert!(lower.windows(2).all(|w| w[0].bound <= w[1].bound));
        assert!(upper.windows(2).all(|w| w[0].bound <= w[1].bound));
        assert!(lower.iter().all(|e| e.at & EDGE_UPPER == 0));
        assert!(upper.iter().all(|e| e.at & EDGE_UPPER != 0));
        let mut failing = lower[lower.partition_point(|e| e.bound <= v)..]
            .iter()
            .chain(&upper[..upper.partition_point(|e| e.bound < v)]);
        failing.any(|e| e.at & !EDGE_UPPER == local)
    }

    #[test]
    fn a_value_fails_a_range_exactly_when_it_lies_outside_it_in_every_cell() {
        // Ranges on two names, with unbounded and empty ones, over three slices.
        let forms: Vec<Vec<IndexRange>> = (0..2500i64)
            .map(|k| {
                let lo = (k * 37) % 1000 - 500;
                let r0 = match k % 5 {
                    0 => range(0, i64::MIN, lo),
                    1 => range(0, lo, i64::MAX),
                    2 => range(0, lo, lo - 1),
                    _ => range(0, lo, lo + k % 300),
                };
                if k % 3 == 0 {
                    vec![r0, range(1, lo / 2, lo / 2 + 100)]
                } else {
                    vec![r0]
                }
            })
            .collect();
        for (max_cells, groups) in [(1, false), (2, true), (7, false), (40, true)] {
            let h = HostCells::build(forms.len(), |k| &forms[k], 64, 1 << 20, max_cells, groups)
                .unwrap();
            assert_eq!((h.rows, h.cells, h.slices), (2, max_cells, 3));
            assert_eq!(h.groups, groups as u32);
            if groups {
                // Each union is the OR of its names' absent cells (the empty one nothing).
                let per_cell = (h.cells + 1) as usize * CELL_WORDS as usize;
                let words = slice_words(h.rows, h.cells, h.groups) as usize;
                for s in 0..3 {
                    let out = &h.bits[s * words..(s + 1) * words];
                    let absent = |r: usize, w: usize| out[r * per_cell + h.cells as usize * 32 + w];
                    for m in 0..GROUP_SETS as usize {
                        for w in 0..32 {
                            let want = (0..2)
                                .filter(|r| m & 1 << r != 0)
                                .fold(0, |a, r| a | absent(r, w));
                            assert_eq!(
                                out[2 * per_cell + m * 32 + w],
                                want,
                                "slice {s} set {m} word {w}"
                            );
                        }
                    }
                }
            }
            for (k, form) in forms.iter().enumerate() {
                for r in 0..2u32 {
                    let g = form.iter().find(|g| g.row == r);
                    assert_eq!(
                        fails(&h, k, r, None),
                        g.is_some(),
                        "slot {k} name {r} absent"
                    );
                    for v in (-700..700).step_by(13).chain([i32::MIN, i32::MAX]) {
                        let want = g.is_some_and(|g| (v as i64) < g.lo || (v as i64) > g.hi);
                        assert_eq!(
                            fails(&h, k, r, Some(v)),
                            want,
                            "slot {k} name {r} value {v}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn in_name_order_each_slice_keeps_the_names_all_its_filters_constrain_and_each_slot_its_rank() {
        // 2500 slots over three slices: slot `k` constrains name 1, and name 2 from slot
        // 1024 on, and name 5 in every third slot; ranks reversed.
        let n = 2500;
        let sig =
            |k: usize| 1u64 << 1 | u64::from(k >= 1024) << 2 | u64::from(k.is_multiple_of(3)) << 5;
        let forms = vec![range(1, 1, 2)];
        let h = HostCells::build(n, |_| &forms, 64, 1 << 20, 4, false)
            .unwrap()
            .with_names(n, sig, |k| (n - 1 - k) as u32);
        assert!(h.sorted);
        assert_eq!(h.need, vec![1 << 1, 1 << 1 | 1 << 2, 1 << 1 | 1 << 2]);
        assert_eq!(h.rank.len(), n);
        assert!(h
            .rank
            .iter()
            .enumerate()
            .all(|(k, &r)| r as usize == n - 1 - k));
    }

    #[test]
    fn cells_are_refused_for_filters_they_cannot_answer_exactly() {
        let ok = [range(3, 5, 9)];
        let build = |f: &[IndexRange]| HostCells::build(1, |_| f, 64, 1 << 20, 8, false);
        assert!(build(&ok).is_some());
        assert!(build(&[]).is_none(), "no range form");
        assert!(build(&[range(CELL_ROWS, 5, 9)]).is_none(), "row");
        assert!(
            build(&[range(0, i32::MAX as i64, i64::MAX)]).is_none(),
            "bound at the edge of i32"
        );
        assert!(
            build(&[range(0, i64::MIN, 1 << 40)]).is_none(),
            "wide bound"
        );
        assert!(
            HostCells::build(1, |_| &ok[..], 64, 64, 8, false).is_none(),
            "budget"
        );
    }

    #[test]
    fn shared_interfaces_are_listed_per_slice_with_their_bounds_and_slices_taken_by_depth() {
        // Interfaces of 1500, 30, 1 and 1000 slots, then 20 of one slot: three slices.
        let mut runs = vec![1500usize, 30, 1, 1000];
        runs.extend([1; 20]);
        let iface: Vec<u32> = runs
            .iter()
            .enumerate()
            .flat_map(|(i, &n)| std::iter::repeat_n(i as u32, n))
            .collect();
        let n = iface.len();
        let forms = vec![range(0, 1, 2)];
        let h = HostCells::build(n, |_| &forms, 64, 1 << 20, 4, false)
            .unwrap()
            .with_interfaces(n, |k| iface[k])
            .unwrap();
        assert!(h.shared);
        assert_eq!(h.slices, 3);
        for s in 0..3usize {
            let slots = s * 1024..((s + 1) * 1024).min(n);
            let mut want: Vec<u32> = iface[slots.clone()].to_vec();
            want.dedup();
            let got = &h.ifaces[h.iface_at[s] as usize..h.iface_at[s + 1] as usize];
            assert_eq!(got, want.as_slice(), "slice {s}");
            for k in slots.clone() {
                let local = k - slots.start;
                let begins = local > 0 && iface[k] != iface[k - 1];
                let bit = h.bounds[s * 32 + local / 32] >> (local % 32) & 1;
                assert_eq!(bit == 1, begins, "slot {k}");
            }
        }
        // Slice 0 begins interface 0 (depth 0); slice 1 ends in interface 3, which
        // begins in it (depth 0); slice 2 ends in one that begins in it (depth 0)...
        let slices = |h: &HostCells| h.order.iter().map(|p| p.slice).collect::<Vec<_>>();
        assert_eq!(slices(&h), vec![0, 1, 2]);
        // Each with its interfaces' place, count and first.
        for p in &h.order {
            let s = p.slice as usize;
            assert_eq!(p.if_at, h.iface_at[s]);
            assert_eq!(p.n_if, h.iface_at[s + 1] - h.iface_at[s]);
            assert_eq!(p.first, h.ifaces[p.if_at as usize]);
        }
        // ...but with interface 0 alone over three slices, slices 1 and 2 are its
        // second and third.
        let one = HostCells::build(2500, |_| &forms, 64, 1 << 20, 4, false)
            .unwrap()
            .with_interfaces(2500, |_| 7)
            .unwrap();
        assert_eq!(slices(&one), vec![0, 1, 2]);
        assert_eq!(one.ifaces, vec![7, 7, 7]);
        // Two interfaces of 2048 slots: each one's first slice before their second ones.
        let two = HostCells::build(4096, |_| &forms, 64, 1 << 20, 4, false)
            .unwrap()
            .with_interfaces(4096, |k| (k / 2048) as u32)
            .unwrap();
        assert_eq!(slices(&two), vec![0, 2, 1, 3]);
        assert!(two.bounds.iter().all(|&w| w == 0));
    }
}
