//! CPU DDM region matching: the yardstick and the oracle of the `ddm-region` engines.
//!
//! Three classic matchers from the DDM literature, each single-threaded and parallel
//! (rayon), for any number of dimensions, counting or enumerating the overlapping
//! (publication, subscription) pairs. HLA 1516 ranges are half-open: ranges overlap iff
//! `lo_a < hi_b && lo_b < hi_a`, regions iff their ranges overlap in every dimension.
//!
//! - [`Algorithm::Brute`]: region-based matching (Van Hook & Calvin 1998; the "CPU" of
//!   Lo, Chung & Pai's speedups): every publication against every subscription.
//! - [`Algorithm::Grid`]: grid-based matching (Boukerche et al. 2005; Ayani, Moradi & Tan
//!   2000): regions go to the lists of the equal cells they cover; regions meet in a
//!   cell; a pair is reported only in the cell that holds the lower corner of the
//!   intersection, so that it is reported once. Cell size is a parameter (by default
//!   the regions' mean side, doubled until there are at most 4 cells per region).
//! - [`Algorithm::Sort`]: sort-based matching (Raczy, Tan & Yu 2005; Pan et al. 2007):
//!   the end points of dimension 0 are sorted and swept with one active set per kind;
//!   a region meets the active regions of the other kind when its lower end point is
//!   passed. Deviation: rather than sweeping every dimension and intersecting
//!   per-dimension overlap sets (memory quadratic in the regions), the candidates of
//!   dimension 0 are checked directly in the other dimensions: the same pairs, the
//!   usual choice of later work (Marzolla & D'Angelo's ITM/SBM). The parallel sweep
//!   follows Marzolla & D'Angelo's parallel SBM: the sorted end points are cut into one
//!   segment per thread, each segment's initial active sets are computed from the end
//!   points' positions, and the segments are swept independently.
//!
//! - [`Algorithm::Sbm`] and [`Algorithm::Itm`]: today's strong CPU methods, Marzolla &
//!   D'Angelo's parallel sort-based matching ([`crate::sbm`]) and interval-tree matching
//!   ([`crate::itm`]), the CPU yardsticks of the DDM experiments.
//! - [`Algorithm::Bisect`]: counting by binary search over sorted end points (Marzolla,
//!   Birolo, D'Angelo & Fariselli 2024) in one dimension, the sweep of the dimension
//!   with the fewest sampled overlaps in several ([`crate::bisect`]): the CPU twin of the
//!   `gpu-bisect` engine.
//!
//! At equal coordinates, the sweep processes upper end points first, then zero-width
//! ranges (which meet the active regions but never become active), then lower end
//! points: exactly the half-open rule, zero-width ranges included.

use ddm_region::model::{Kind, Pair, Range, RegionSet};
use rayon::prelude::*;

/// Which matcher.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Algorithm {
    Brute,
    /// Cell side per dimension; `None` chooses the regions' mean side.
    Grid {
        cell: Option<Vec<u32>>,
    },
    Sort,
    /// Marzolla & D'Angelo's parallel sort-based matching ([`crate::sbm`]).
    Sbm,
    /// Marzolla & D'Angelo's interval-tree matching ([`crate::itm`]).
    Itm,
    /// Counting by binary search over sorted end points ([`crate::bisect`]).
    Bisect,
}

/// A CPU matcher: an algorithm and a thread count (1 = the sequential code path; more
/// = a rayon pool of that many threads, built once per matcher).
#[derive(Clone, Debug)]
pub struct DdmMatcher {
    pub algorithm: Algorithm,
    pub threads: usize,
    pool: Option<std::sync::Arc<rayon::ThreadPool>>,
}

impl DdmMatcher {
    /// A matcher running `algorithm` on `threads` threads.
    ///
    /// ```
    /// use baselines::ddm::{Algorithm, DdmMatcher};
    /// use ddm_region::workload::{Distribution, Scenario, ScenarioParams};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let params = ScenarioParams::paper(400, 800, Distribution::Crowded);
    /// let scenario = Scenario::new(params, 5)?;
    /// let set = scenario.regions();
    /// let want = DdmMatcher::new(Algorithm::Brute, 1).pairs(set);
    /// assert!(!want.is_empty());
    /// let others = [
    ///     Algorithm::Grid { cell: None },
    ///     Algorithm::Sort,
    ///     Algorithm::Sbm,
    ///     Algorithm::Itm,
    ///     Algorithm::Bisect,
    /// ];
    /// for algorithm in others {
    ///     for threads in [1, 2] {
    ///         let m = DdmMatcher::new(algorithm.clone(), threads);
    ///         assert_eq!(m.pairs(set), want, "{}", m.name());
    ///         assert_eq!(m.count(set), want.len() as u64);
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn new(algorithm: Algorithm, threads: usize) -> DdmMatcher {
        let threads = threads.max(1);
        let pool = (threads > 1).then(|| {
            std::sync::Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .expect("rayon thread pool"),
            )
        });
        DdmMatcher {
            algorithm,
            threads,
            pool,
        }
    }

    fn pool(&self) -> &rayon::ThreadPool {
        self.pool.as_deref().expect("parallel matchers have a pool")
    }

    /// `brute`, `grid`, `sort`, with `-par` when parallel.
    pub fn name(&self) -> String {
        let base = match self.algorithm {
            Algorithm::Brute => "brute",
            Algorithm::Grid { .. } => "grid",
            Algorithm::Sort => "sort",
            Algorithm::Sbm => "sbm",
            Algorithm::Itm => "itm",
            Algorithm::Bisect => "bisect",
        };
        if self.threads > 1 {
            format!("{base}-par")
        } else {
            base.to_string()
        }
    }

    /// The number of overlapping pairs.
    pub fn count(&self, set: &RegionSet) -> u64 {
        match self.algorithm {
            Algorithm::Sbm => crate::sbm::count(set, self.pool.as_deref()),
            Algorithm::Itm => crate::itm::count(set, self.pool.as_deref()),
            Algorithm::Bisect => crate::bisect::count(set, self.pool.as_deref()),
            _ => self.count_fast(set),
        }
    }

    /// The overlapping pairs in the order the algorithm finds them.
    pub fn pairs_unordered(&self, set: &RegionSet) -> Vec<Pair> {
        match self.algorithm {
            Algorithm::Sbm => return crate::sbm::pairs(set, self.pool.as_deref()),
            Algorithm::Itm => return crate::itm::pairs(set, self.pool.as_deref()),
            Algorithm::Bisect => return crate::bisect::pairs(set, self.pool.as_deref()),
            _ => {}
        }
        let mut out = Vec::new();
        self.run(set, &mut |p| out.push(p));
        out
    }

    /// The overlapping pairs, ordered by publication, then subscription.
    pub fn pairs(&self, set: &RegionSet) -> Vec<Pair> {
        let mut out = self.pairs_unordered(set);
        if self.threads > 1 {
            self.pool().install(|| out.par_sort_unstable());
        } else {
            out.sort_unstable();
        }
        out
    }

    fn run(&self, set: &RegionSet, emit: &mut dyn FnMut(Pair)) {
        let v = View::new(set);
        if self.threads == 1 {
            match &self.algorithm {
                Algorithm::Brute => brute(&v, 0..v.n_pub, emit),
                Algorithm::Grid { cell } => {
                    let g = CellGrid::build(&v, cell.as_deref());
                    for c in 0..g.n_cells() {
                        g.match_cell(&v, c, emit);
                    }
                }
                Algorithm::Sort => {
                    let ev = Sweep::new(&v, false);
                    ev.sweep_segment(&v, 0, ev.events.len(), emit);
                }
                Algorithm::Sbm | Algorithm::Itm | Algorithm::Bisect => {
                    self.pairs_unordered(set).into_iter().for_each(emit)
                }
            }
            return;
        }
        let parts: Vec<Vec<Pair>> = self.pool().install(|| match &self.algorithm {
            Algorithm::Brute => {
                let step = (v.n_pub / (self.threads * 8)).max(1);
                (0..v.n_pub.div_ceil(step))
                    .into_par_iter()
                    .map(|k| collect(|e| brute(&v, k * step..((k + 1) * step).min(v.n_pub), e)))
                    .collect()
            }
            Algorithm::Grid { cell } => {
                let g = CellGrid::build_par(&v, cell.as_deref());
                let step = (g.n_cells() / (self.threads * 16)).max(1);
                (0..g.n_cells().div_ceil(step))
                    .into_par_iter()
                    .map(|k| {
                        collect(|e| {
                            for c in k * step..((k + 1) * step).min(g.n_cells()) {
                                g.match_cell(&v, c, e)
                            }
                        })
                    })
                    .collect()
            }
            Algorithm::Sort => {
                let ev = Sweep::new(&v, true);
                let segs = self.threads * 4;
                let len = ev.events.len();
                (0..segs)
                    .into_par_iter()
                    .map(|k| {
                        collect(|e| ev.sweep_segment(&v, k * len / segs, (k + 1) * len / segs, e))
                    })
                    .collect()
            }
            Algorithm::Sbm | Algorithm::Itm | Algorithm::Bisect => {
                vec![self.pairs_unordered(set)]
            }
        });
        for part in parts {
            for p in part {
                emit(p);
            }
        }
    }

    /// Counts without materializing the pairs (the scale-up's counting mode).
    fn count_fast(&self, set: &RegionSet) -> u64 {
        if self.threads == 1 {
            let mut n = 0u64;
            self.run(set, &mut |_| n += 1);
            return n;
        }
        let v = View::new(set);
        self.pool().install(|| match &self.algorithm {
            Algorithm::Brute => {
                let step = (v.n_pub / (self.threads * 8)).max(1);
                (0..v.n_pub.div_ceil(step))
                    .into_par_iter()
                    .map(|k| tally(|e| brute(&v, k * step..((k + 1) * step).min(v.n_pub), e)))
                    .sum()
            }
            Algorithm::Grid { cell } => {
                let g = CellGrid::build_par(&v, cell.as_deref());
                (0..g.n_cells())
                    .into_par_iter()
                    .map(|c| tally(|e| g.match_cell(&v, c, e)))
                    .sum()
            }
            Algorithm::Sort => {
                let ev = Sweep::new(&v, true);
                let segs = self.threads * 4;
                let len = ev.events.len();
                (0..segs)
                    .into_par_iter()
                    .map(|k| {
                        tally(|e| ev.sweep_segment(&v, k * len / segs, (k + 1) * len / segs, e))
                    })
                    .sum()
            }
            Algorithm::Sbm | Algorithm::Itm | Algorithm::Bisect => self.count(set),
        })
    }
}

fn collect(f: impl FnOnce(&mut dyn FnMut(Pair))) -> Vec<Pair> {
    let mut v = Vec::new();
    f(&mut |p| v.push(p));
    v
}

fn tally(f: impl FnOnce(&mut dyn FnMut(Pair))) -> u64 {
    let mut n = 0u64;
    f(&mut |_| n += 1);
    n
}

/// The regions, flat, as the matchers read them.
struct View<'a> {
    dims: usize,
    n_pub: usize,
    n_sub: usize,
    pubs: &'a [Range],
    subs: &'a [Range],
}

impl<'a> View<'a> {
    fn new(set: &'a RegionSet) -> View<'a> {
        View {
            dims: set.dims(),
            n_pub: set.n_pub() as usize,
            n_sub: set.n_sub() as usize,
            pubs: set.ranges(Kind::Publication),
            subs: set.ranges(Kind::Subscription),
        }
    }
    #[inline]
    fn publication(&self, i: usize) -> &[Range] {
        &self.pubs[i * self.dims..(i + 1) * self.dims]
    }
    #[inline]
    fn subscription(&self, i: usize) -> &[Range] {
        &self.subs[i * self.dims..(i + 1) * self.dims]
    }
}

/// Half-open overlap in every dimension.
#[inline]
fn overlap(a: &[Range], b: &[Range]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.lo < y.hi && y.lo < x.hi)
}

/// Region-based matching of publications `range` against all subscriptions.
fn brute(v: &View, range: std::ops::Range<usize>, emit: &mut dyn FnMut(Pair)) {
    if v.dims == 2 {
        // The paper's case, unrolled: the inner loop runs over the subscriptions' flat ranges.
        for p in range {
            let a = v.publication(p);
            let (a0, a1) = (a[0], a[1]);
            for (s, b) in v.subs.chunks_exact(2).enumerate() {
                if (a0.lo < b[0].hi) & (b[0].lo < a0.hi) & (a1.lo < b[1].hi) & (b[1].lo < a1.hi) {
                    emit(Pair {
                        publication: p as u32,
                        subscription: s as u32,
                    });
                }
            }
        }
        return;
    }
    for p in range {
        let a = v.publication(p);
        for s in 0..v.n_sub {
            if overlap(a, v.subscription(s)) {
                emit(Pair {
                    publication: p as u32,
                    subscription: s as u32,
                });
            }
        }
    }
}

/// Cells of the grid-based matcher, as compressed lists (offsets + members) per kind.
struct CellGrid {
    dims: usize,
    origin: Vec<u32>,
    side: Vec<u32>,
    cells: Vec<u32>,
    pub_start: Vec<u32>,
    pub_members: Vec<u32>,
    sub_start: Vec<u32>,
    sub_members: Vec<u32>,
}

/// At most this many cells; sides grow (doubling, up to `u32::MAX`, where one cell spans
/// any dimension) until the grid fits, so any coordinates and cell sizes give a grid.
const MAX_GRID_CELLS: u64 = 1 << 22;

impl CellGrid {
    fn shape(v: &View, cell: Option<&[u32]>) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
        let d = v.dims;
        let mut lo = vec![u32::MAX; d];
        let mut hi = vec![0u32; d];
        let mut sum = vec![0u64; d];
        for r in v.pubs.chunks_exact(d).chain(v.subs.chunks_exact(d)) {
            for k in 0..d {
                lo[k] = lo[k].min(r[k].lo);
                hi[k] = hi[k].max(r[k].hi);
                sum[k] += (r[k].hi - r[k].lo) as u64;
            }
        }
        let n = (v.n_pub + v.n_sub).max(1) as u64;
        if v.n_pub + v.n_sub == 0 {
            return (vec![0; d], vec![1; d], vec![1; d]);
        }
        let mut side: Vec<u32> = match cell {
            Some(c) => (0..d)
                .map(|k| c.get(k).or(c.last()).copied().unwrap_or(1).max(1))
                .collect(),
            None => sum
                .iter()
                .map(|&s| (s / n).clamp(1, u32::MAX as u64) as u32)
                .collect(),
        };
        // By default at most 4 cells per region: more cells than regions only cost empty lists.
        let limit = if cell.is_some() {
            MAX_GRID_CELLS
        } else {
            MAX_GRID_CELLS.min(4 * n.max(16))
        };
        loop {
            let cells: Vec<u32> = (0..d)
                .map(|k| {
                    ((hi[k].saturating_sub(lo[k]) as u64)
                        .div_ceil(side[k] as u64)
                        .max(1)) as u32
                })
                .collect();
            // Up to 2^32 cells per dimension: the product of three already overflows u64
            // (fuzz finding ddm_diff-1), so it is checked, and an overflow is "too many".
            let total = cells.iter().try_fold(1u64, |t, &c| t.checked_mul(c as u64));
            if total.is_some_and(|t| t <= limit) {
                return (lo, side, cells);
            }
            for s in side.iter_mut() {
                *s = s.saturating_mul(2);
            }
        }
    }

    #[inline]
    fn coord(&self, k: usize, x: u32) -> u32 {
        ((x.saturating_sub(self.origin[k])) / self.side[k]).min(self.cells[k] - 1)
    }

    /// Calls `f` with every cell index region `r` covers.
    fn for_cells(&self, r: &[Range], f: &mut impl FnMut(u32)) {
        let d = self.dims;
        let lo: Vec<u32> = (0..d).map(|k| self.coord(k, r[k].lo)).collect();
        let hi: Vec<u32> = (0..d)
            .map(|k| {
                self.coord(
                    k,
                    if r[k].hi > r[k].lo {
                        r[k].hi - 1
                    } else {
                        r[k].lo
                    },
                )
            })
            .collect();
        let mut cur = lo.clone();
        loop {
            let mut c = 0u32;
            for k in (0..d).rev() {
                c = c * self.cells[k] + cur[k];
            }
            f(c);
            let mut k = 0;
            loop {
                if k == d {
                    return;
                }
                if cur[k] < hi[k] {
                    cur[k] += 1;
                    break;
                }
                cur[k] = lo[k];
                k += 1;
            }
        }
    }

    fn lists(&self, ranges: &[Range]) -> (Vec<u32>, Vec<u32>) {
        let n_cells = self.n_cells();
        let mut start = vec![0u32; n_cells + 1];
        for r in ranges.chunks_exact(self.dims) {
            self.for_cells(r, &mut |c| start[c as usize + 1] += 1);
        }
        for c in 0..n_cells {
            start[c + 1] += start[c];
        }
        let mut fill = start.clone();
        let mut members = vec![0u32; start[n_cells] as usize];
        for (i, r) in ranges.chunks_exact(self.dims).enumerate() {
            self.for_cells(r, &mut |c| {
                members[fill[c as usize] as usize] = i as u32;
                fill[c as usize] += 1;
            });
        }
        (start, members)
    }

    fn empty(v: &View, cell: Option<&[u32]>) -> CellGrid {
        let (origin, side, cells) = CellGrid::shape(v, cell);
        CellGrid {
            dims: v.dims,
            origin,
            side,
            cells,
            pub_start: Vec::new(),
            pub_members: Vec::new(),
            sub_start: Vec::new(),
            sub_members: Vec::new(),
        }
    }

    fn build(v: &View, cell: Option<&[u32]>) -> CellGrid {
        let mut g = CellGrid::empty(v, cell);
        (g.pub_start, g.pub_members) = g.lists(v.pubs);
        (g.sub_start, g.sub_members) = g.lists(v.subs);
        g
    }

    fn build_par(v: &View, cell: Option<&[u32]>) -> CellGrid {
        let mut g = CellGrid::empty(v, cell);
        let (p, s) = rayon::join(|| g.lists(v.pubs), || g.lists(v.subs));
        (g.pub_start, g.pub_members) = p;
        (g.sub_start, g.sub_members) = s;
        g
    }

    fn n_cells(&self) -> usize {
        self.cells.iter().map(|&c| c as usize).product()
    }

    /// Compares the publications and subscriptions of cell `c`, reporting a pair only
    /// if `c` holds the lower corner of the pair's intersection.
    fn match_cell(&self, v: &View, c: usize, emit: &mut dyn FnMut(Pair)) {
        let pubs = &self.pub_members[self.pub_start[c] as usize..self.pub_start[c + 1] as usize];
        let subs = &self.sub_members[self.sub_start[c] as usize..self.sub_start[c + 1] as usize];
        if pubs.is_empty() || subs.is_empty() {
            return;
        }
        let mut coords = [0u32; 16];
        let mut rest = c as u32;
        let d = self.dims;
        let big = d > coords.len();
        if !big {
            for (k, slot) in coords.iter_mut().enumerate().take(d) {
                *slot = rest % self.cells[k];
                rest /= self.cells[k];
            }
        }
        for &p in pubs {
            let a = v.publication(p as usize);
            for &s in subs {
                let b = v.subscription(s as usize);
                if !overlap(a, b) {
                    continue;
                }
                let home = if big {
                    let mut cc = 0u32;
                    for k in (0..d).rev() {
                        cc = cc * self.cells[k] + self.coord(k, a[k].lo.max(b[k].lo));
                    }
                    cc as usize == c
                } else {
                    (0..d).all(|k| self.coord(k, a[k].lo.max(b[k].lo)) == coords[k])
                };
                if home {
                    emit(Pair {
                        publication: p,
                        subscription: s,
                    });
                }
            }
        }
    }
}

/// Rank of an end point at equal coordinates: upper end points, then zero-width ranges,
/// then lower end points.
const UPPER: u64 = 0;
const POINT: u64 = 1;
const LOWER: u64 = 2;

/// The sorted end points of dimension 0 and, per region, where its lower and upper end
/// points landed.
struct Sweep {
    /// `(coordinate << 2 | rank, kind << 31 | index)`, sorted by the first field.
    events: Vec<(u64, u32)>,
    /// Position of each publication's lower end point (or its point event) and upper end point.
    pub_pos: Vec<(u32, u32)>,
    sub_pos: Vec<(u32, u32)>,
}

const SUB_BIT: u32 = 1 << 31;

impl Sweep {
    fn new(v: &View, parallel: bool) -> Sweep {
        let mut events = Vec::with_capacity(2 * (v.n_pub + v.n_sub));
        for (kind_bit, ranges) in [(0u32, v.pubs), (SUB_BIT, v.subs)] {
            for (i, r) in ranges.chunks_exact(v.dims).enumerate() {
                let r = r[0];
                let id = kind_bit | i as u32;
                if r.lo == r.hi {
                    events.push(((r.lo as u64) << 2 | POINT, id));
                } else {
                    events.push(((r.lo as u64) << 2 | LOWER, id));
                    events.push(((r.hi as u64) << 2 | UPPER, id));
                }
            }
        }
        if parallel {
            events.par_sort_unstable_by_key(|e| e.0);
        } else {
            events.sort_unstable_by_key(|e| e.0);
        }
        let mut pub_pos = vec![(0u32, 0u32); v.n_pub];
        let mut sub_pos = vec![(0u32, 0u32); v.n_sub];
        for (at, &(key, id)) in events.iter().enumerate() {
            let pos = if id & SUB_BIT != 0 {
                &mut sub_pos[(id & !SUB_BIT) as usize]
            } else {
                &mut pub_pos[id as usize]
            };
            match key & 3 {
                UPPER => pos.1 = at as u32,
                LOWER => pos.0 = at as u32,
                _ => *pos = (at as u32, at as u32),
            }
        }
        Sweep {
            events,
            pub_pos,
            sub_pos,
        }
    }

    /// Sweeps events `from..to`, starting from the regions active at `from` (lower end
    /// point before `from`, upper end point at or after it).
    fn sweep_segment(&self, v: &View, from: usize, to: usize, emit: &mut dyn FnMut(Pair)) {
        let rest = v.dims - 1;
        let mut act_pub = ActiveSet::new(v.n_pub, rest);
        let mut act_sub = ActiveSet::new(v.n_sub, rest);
        if from > 0 {
            let f = from as u32;
            for (i, &(l, u)) in self.pub_pos.iter().enumerate() {
                if l < f && u >= f && l != u {
                    act_pub.insert(i as u32, &v.publication(i)[1..]);
                }
            }
            for (i, &(l, u)) in self.sub_pos.iter().enumerate() {
                if l < f && u >= f && l != u {
                    act_sub.insert(i as u32, &v.subscription(i)[1..]);
                }
            }
        }
        for &(key, id) in &self.events[from..to] {
            let is_sub = id & SUB_BIT != 0;
            let i = id & !SUB_BIT;
            let rank = key & 3;
            if rank == UPPER {
                if is_sub {
                    act_sub.remove(i)
                } else {
                    act_pub.remove(i)
                }
                continue;
            }
            let (me, others, mine) = if is_sub {
                (&v.subscription(i as usize)[1..], &act_pub, &mut act_sub)
            } else {
                (&v.publication(i as usize)[1..], &act_sub, &mut act_pub)
            };
            // The active regions of the other kind overlap this one in dimension 0;
            // check the other dimensions (their ranges are stored with the set).
            let mut hit = |o: u32| {
                emit(if is_sub {
                    Pair {
                        publication: o,
                        subscription: i,
                    }
                } else {
                    Pair {
                        publication: i,
                        subscription: o,
                    }
                })
            };
            match rest {
                0 => others.members.iter().for_each(|&o| hit(o)),
                1 => {
                    let m = me[0];
                    for (&o, r) in others.members.iter().zip(&others.ranges) {
                        if (m.lo < r.hi) & (r.lo < m.hi) {
                            hit(o);
                        }
                    }
                }
                _ => {
                    for (&o, r) in others.members.iter().zip(others.ranges.chunks_exact(rest)) {
                        if overlap(me, r) {
                            hit(o);
                        }
                    }
                }
            }
            if rank == LOWER {
                mine.insert(i, me);
            }
        }
    }
}

/// A set of region indices with O(1) insert, remove and iteration; each member's ranges
/// in the dimensions after the first are stored beside it, so that the sweep's checks
/// read contiguous memory.
struct ActiveSet {
    members: Vec<u32>,
    ranges: Vec<Range>,
    rest: usize,
    slot: Vec<u32>,
}

impl ActiveSet {
    fn new(n: usize, rest: usize) -> ActiveSet {
        ActiveSet {
            members: Vec::new(),
            ranges: Vec::new(),
            rest,
            slot: vec![u32::MAX; n],
        }
    }
    fn insert(&mut self, i: u32, ranges: &[Range]) {
        self.slot[i as usize] = self.members.len() as u32;
        self.members.push(i);
        self.ranges.extend_from_slice(ranges);
    }
    fn remove(&mut self, i: u32) {
        let at = self.slot[i as usize];
        if at == u32::MAX {
            return;
        }
        let at = at as usize;
        let last = self.members.len() - 1;
        let moved = self.members[last];
        self.members.swap_remove(at);
        if self.rest > 0 {
            let (a, l) = (at * self.rest, last * self.rest);
            for k in 0..self.rest {
                self.ranges[a + k] = self.ranges[l + k];
            }
            self.ranges.truncate(l);
        }
        if moved != i {
            self.slot[moved as usize] = at as u32;
        }
        self.slot[i as usize] = u32::MAX;
    }
}
