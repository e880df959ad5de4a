//! The paper's workloads (§IV) as parameter structs and seeded generators, plus the
//! scale-up workload of the DDM literature.
//!
//! §IV: a 10000 x 10000 two-dimensional battlefield; 2048 to 32768 regions, as many
//! publications as subscriptions; square regions of side 10 or 100 ("RS = 10 x 10,
//! 100 x 100"); Scenario I places them uniformly, Scenario II puts 20 % of them around
//! three crowded areas at (1000, 1000), (5000, 5000) and (9000, 9000), the rest
//! uniformly; at each time step every region moves north, south, east or west by half
//! its size; 30 time steps.
//!
//! Where the paper is silent we chose: a crowded region's lower corner is drawn from a
//! normal distribution of standard deviation [`CROWD_SIGMA`] around its area's centre,
//! the areas taking turns; a move that would leave the space goes the opposite way
//! (reflection), so that regions stay inside `[0, space)`; in `N` dimensions a move
//! picks one of the `2N` axis directions, and the crowded centres are the diagonal
//! points `(c, c, ..)`.

use crate::model::{Kind, ModelError, Range, RegionSet, UpdateBatch};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution as _, Normal};

/// Standard deviation, in space units (of a 10000-wide space), of a crowded region's
/// position around its area's centre.
pub const CROWD_SIGMA: f64 = 250.0;

/// Scenario I or II of §IV.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// Scenario I: "uniformly (randomly) distributed".
    Uniform,
    /// Scenario II: a fraction of the regions around three crowded areas.
    Crowded,
}

/// The parameters of one simulated scenario (§IV).
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioParams {
    /// Regions in all; `regions / 2` publications, the rest subscriptions.
    pub regions: u32,
    /// Side of every region in every dimension (RS = size x size).
    pub region_size: u32,
    /// Width of the space in every dimension (10000).
    pub space: u32,
    pub dims: usize,
    pub distribution: Distribution,
    /// Share of the regions around the crowded areas (0.2).
    pub crowd_fraction: f64,
    /// Time steps to simulate (30).
    pub steps: u32,
}

impl ScenarioParams {
    /// The paper's setting for `regions` regions of side `region_size`.
    pub fn paper(regions: u32, region_size: u32, distribution: Distribution) -> ScenarioParams {
        ScenarioParams {
            regions,
            region_size,
            space: 10_000,
            dims: 2,
            distribution,
            crowd_fraction: 0.2,
            steps: 30,
        }
    }
}

/// A running scenario: the regions' current positions and the random source of moves.
pub struct Scenario {
    params: ScenarioParams,
    set: RegionSet,
    rng: ChaCha8Rng,
}

impl Scenario {
    /// Places the regions (seeded: the same seed gives the same scenario).
    ///
    /// ```
    /// use ddm_region::workload::{Distribution, Scenario, ScenarioParams};
    /// use ddm_region::Kind;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let params = ScenarioParams::paper(100, 200, Distribution::Crowded);
    /// let mut s = Scenario::new(params.clone(), 7)?;
    /// assert_eq!(s.regions().len(Kind::Publication), 50);
    /// assert_eq!(s.regions().len(Kind::Subscription), 50);
    /// let moves = s.step(); // one time step: every region moves
    /// assert_eq!(moves.len(), 100);
    /// assert_ne!(s.regions(), Scenario::new(params, 7)?.regions());
    /// # Ok(()) }
    /// ```
    pub fn new(params: ScenarioParams, seed: u64) -> Result<Scenario, ModelError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut set = RegionSet::new(params.dims)?;
        let size = params.region_size.min(params.space);
        let max_lo = params.space - size;
        let crowded = match params.distribution {
            Distribution::Uniform => 0,
            Distribution::Crowded => (params.regions as f64 * params.crowd_fraction).round() as u32,
        };
        let scale = params.space as f64 / 10_000.0;
        let centres = [1000.0 * scale, 5000.0 * scale, 9000.0 * scale];
        let normal = Normal::new(0.0, CROWD_SIGMA * scale).expect("positive sigma");
        let mut ranges = vec![Range::default(); params.dims];
        for i in 0..params.regions {
            // Alternate kinds so that crowded and uniform regions are split evenly.
            let kind = alternate_kind(i);
            for r in ranges.iter_mut() {
                let lo = if i < crowded {
                    let c =
                        centres[(i / 2) as usize % 3] - size as f64 / 2.0 + normal.sample(&mut rng);
                    c.round().clamp(0.0, max_lo as f64) as u32
                } else {
                    rng.gen_range(0..=max_lo)
                };
                *r = Range { lo, hi: lo + size };
            }
            set.push(kind, (i / 2) as u64, &ranges)?;
        }
        Ok(Scenario { params, set, rng })
    }

    pub fn params(&self) -> &ScenarioParams {
        &self.params
    }

    /// The regions' current positions.
    pub fn regions(&self) -> &RegionSet {
        &self.set
    }

    /// One time step: every region moves north, south, east or west (one of the `2N`
    /// axis directions) by half its size. Returns the moves as a batch of updated regions.
    pub fn step(&mut self) -> UpdateBatch {
        let dims = self.params.dims;
        let space = self.params.space;
        let n = self.params.regions as usize;
        let mut batch = UpdateBatch::with_capacity(n, n * dims);
        let mut ranges = vec![Range::default(); dims];
        for kind in [Kind::Publication, Kind::Subscription] {
            for i in 0..self.set.len(kind) {
                ranges.copy_from_slice(self.set.region(kind, i));
                let axis = self.rng.gen_range(0..dims);
                let forward = self.rng.gen_bool(0.5);
                let r = &mut ranges[axis];
                let size = r.hi - r.lo;
                let step = (size / 2).max(1);
                let fits_forward = r.hi as u64 + step as u64 <= space as u64;
                let fits_backward = r.lo >= step;
                let go_forward = fits_forward && (forward || !fits_backward);
                if go_forward {
                    r.lo += step;
                    r.hi += step;
                } else if fits_backward {
                    r.lo -= step;
                    r.hi -= step;
                }
                self.set
                    .set(kind, i, &ranges)
                    .expect("a move keeps the ranges valid");
                batch.set(kind, i, &ranges);
            }
        }
        batch
    }
}

/// The scale-up workload beyond the paper: `regions` square regions (half of each kind)
/// placed uniformly in a space of side [`SCALE_UP_SPACE`], all of side `l` with the
/// overlap degree `alpha = regions * l / space` of the DDM literature (Raczy et al.;
/// Marzolla & D'Angelo) in every dimension.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleUpParams {
    pub regions: u32,
    pub alpha: f64,
    pub dims: usize,
}

/// Side of the scale-up space: large so that region sides stay integers >= 1.
pub const SCALE_UP_SPACE: u32 = 1_000_000_000;

/// Generates a scale-up workload (seeded).
///
/// ```
/// use ddm_region::workload::{scale_up, ScaleUpParams, SCALE_UP_SPACE};
/// use ddm_region::Kind;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let set = scale_up(&ScaleUpParams { regions: 1000, alpha: 10.0, dims: 1 }, 3)?;
/// assert_eq!(set.n_pub() + set.n_sub(), 1000);
/// // alpha = regions * side / space: sides of 10^7 in a space of 10^9.
/// let r = set.region(Kind::Publication, 0)[0];
/// assert_eq!(r.hi - r.lo, SCALE_UP_SPACE / 100);
/// # Ok(()) }
/// ```
pub fn scale_up(params: &ScaleUpParams, seed: u64) -> Result<RegionSet, ModelError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut set = RegionSet::new(params.dims)?;
    let side = (params.alpha * SCALE_UP_SPACE as f64 / params.regions.max(1) as f64).round();
    let side = side.clamp(1.0, SCALE_UP_SPACE as f64) as u32;
    let mut ranges = vec![Range::default(); params.dims];
    for i in 0..params.regions {
        let kind = alternate_kind(i);
        for r in ranges.iter_mut() {
            let lo = rng.gen_range(0..=SCALE_UP_SPACE - side);
            *r = Range { lo, hi: lo + side };
        }
        set.push(kind, (i / 2) as u64, &ranges)?;
    }
    Ok(set)
}

/// The random workload of Marzolla, Birolo, D'Angelo & Fariselli's intersection
/// counting (FGCS 2024, their public generator): `regions` intervals (half of each kind,
/// alternating), each with its left end uniform in `[0, span)` and its length uniform in
/// `[min_len, max_len]`, independently in each of `dims` dimensions.
#[derive(Clone, Debug, PartialEq)]
pub struct IntervalParams {
    pub regions: u32,
    pub span: u32,
    pub min_len: u32,
    pub max_len: u32,
    pub dims: usize,
}

impl IntervalParams {
    /// The peer's lengths (10 to 1000) in a span chosen so that a publication overlaps
    /// about `degree` subscriptions: per dimension a pair overlaps with probability
    /// about `(mean length of both) / span`, so `span = 1010 * (n_sub / degree)^(1/dims)`
    /// (at least 1). The peer's 1M-interval runs used spans of 200k (`degree` 2525) and
    /// 20M (25.25).
    pub fn for_degree(regions: u32, dims: usize, degree: f64) -> IntervalParams {
        let n_sub = (regions / 2) as f64;
        let span = 1010.0 * (n_sub / degree.max(1e-9)).powf(1.0 / dims.max(1) as f64);
        IntervalParams {
            regions,
            span: span.round().clamp(1.0, (u32::MAX - 1000) as f64) as u32,
            min_len: 10,
            max_len: 1000,
            dims,
        }
    }
}

/// Generates the peer's random intervals (seeded).
///
/// ```
/// use ddm_region::workload::{intervals, IntervalParams};
/// use ddm_region::Kind;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let p = IntervalParams { regions: 100, span: 200_000, min_len: 10, max_len: 1000, dims: 1 };
/// let set = intervals(&p, 1)?;
/// assert_eq!((set.n_pub(), set.n_sub()), (50, 50));
/// let r = set.region(Kind::Subscription, 7)[0];
/// assert!(r.lo < 200_000 && (10..=1000).contains(&(r.hi - r.lo)));
/// # Ok(()) }
/// ```
pub fn intervals(params: &IntervalParams, seed: u64) -> Result<RegionSet, ModelError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut set = RegionSet::new(params.dims)?;
    let mut ranges = vec![Range::default(); params.dims];
    let span = params.span.max(1);
    let (min_len, max_len) = (params.min_len, params.max_len.max(params.min_len));
    for i in 0..params.regions {
        let kind = alternate_kind(i);
        for r in ranges.iter_mut() {
            let lo = rng.gen_range(0..span);
            let len = rng.gen_range(min_len..=max_len);
            *r = Range {
                lo,
                hi: lo.saturating_add(len),
            };
        }
        set.push(kind, (i / 2) as u64, &ranges)?;
    }
    Ok(set)
}

/// The kind of the `i`-th generated region: publications and subscriptions alternate, so
/// that a set is half of each kind whatever else varies along `i`.
fn alternate_kind(i: u32) -> Kind {
    if i & 1 == 0 {
        Kind::Publication
    } else {
        Kind::Subscription
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_scenario_has_half_publications_and_regions_inside_the_space() {
        let s = Scenario::new(ScenarioParams::paper(2048, 100, Distribution::Uniform), 1).unwrap();
        assert_eq!(s.regions().n_pub(), 1024);
        assert_eq!(s.regions().n_sub(), 1024);
        for r in s.regions().ranges(Kind::Publication) {
            assert!(r.hi <= 10_000 && r.hi - r.lo == 100);
        }
    }

    #[test]
    fn crowded_scenario_puts_a_fifth_near_the_three_centres() {
        let s = Scenario::new(ScenarioParams::paper(3000, 10, Distribution::Crowded), 2).unwrap();
        // Lower corner within 500 of a centre (less half the side) in both dimensions.
        let near = |x: u32, y: u32| {
            [995u32, 4995, 8995]
                .iter()
                .any(|&c| x.abs_diff(c) < 500 && y.abs_diff(c) < 500)
        };
        let set = s.regions();
        let mut n = 0;
        for k in [Kind::Publication, Kind::Subscription] {
            for i in 0..set.len(k) {
                let r = set.region(k, i);
                n += near(r[0].lo, r[1].lo) as u32;
            }
        }
        // ~91 % of the 600 crowded regions (2 sigma in both dimensions), plus the ~3 % of
        // the 2400 uniform ones that fall there by chance: about 620.
        assert!((520..=720).contains(&n), "{n}");
    }

    #[test]
    fn each_step_moves_every_region_by_half_its_size_along_one_axis() {
        let mut s =
            Scenario::new(ScenarioParams::paper(64, 100, Distribution::Uniform), 3).unwrap();
        let before = s.regions().clone();
        let batch = s.step();
        assert_eq!(batch.len(), 64);
        for k in [Kind::Publication, Kind::Subscription] {
            for i in 0..before.len(k) {
                let (a, b) = (before.region(k, i), s.regions().region(k, i));
                let moved: u32 = a.iter().zip(b).map(|(x, y)| x.lo.abs_diff(y.lo)).sum();
                assert_eq!(moved, 50);
                assert!(b.iter().all(|r| r.hi <= 10_000 && r.hi - r.lo == 100));
            }
        }
    }

    #[test]
    fn scale_up_side_gives_the_requested_alpha() {
        let set = scale_up(
            &ScaleUpParams {
                regions: 1000,
                alpha: 10.0,
                dims: 2,
            },
            4,
        )
        .unwrap();
        let r = set.region(Kind::Publication, 0);
        assert_eq!(r[0].hi - r[0].lo, 10_000_000);
    }
}
