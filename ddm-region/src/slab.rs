//! Beyond the paper (which uses one GPU): the sort-and-sweep split by coordinate over
//! many GPUs of one host, [`SlabEngine`]; [`multi`](crate::multi) cuts the publications
//! instead.
//!
//! - **Cut.** Dimension 0 is cut at `k - 1` coordinates `c_1 < .. < c_{k-1}` (the
//!   quantiles of the regions' lower bounds there, so that the slabs hold about as many
//!   regions each); slab `i` is `[c_i, c_{i+1})` with `c_0 = 0` and `c_k` past every
//!   coordinate, and device `i` holds every region, publication or subscription, that
//!   can take part in a pair whose overlap *begins* in its slab: `lo < c_{i+1}` and
//!   `hi >= c_i` (a zero-width region at `c_i` overlaps ranges around `c_i`).
//! - **Each pair once.** A pair overlaps from `m = max(lo_p, lo_s)` on in dimension 0,
//!   and belongs to the slab holding `m`. Device `i`'s regions all begin before
//!   `c_{i+1}`, so their pairs have `m < c_{i+1}`; its engine counts and enumerates only
//!   those with `m >= c_i` ([`Engine::set_overlaps_from`], a comparison in the sweep's
//!   and the sorted tiles' candidate test), leaving the pairs of regions that both begin
//!   before `c_i` (the *straddlers*) to an earlier slab. (A first form counted the
//!   straddlers' pairs with a second engine and took them away: on 2x H100 at 1M
//!   regions, its launches and wait were most of what kept two GPUs from halving a
//!   count.)
//! - **Merge.** Counts are summed; each device's pairs, renumbered in the whole set
//!   (its regions were taken in index order, so its order is kept), are merged by a
//!   parallel sort into the one-device engine's order.
//!
//! Every device works on about `1/k` of the regions (plus the straddlers), where the cut
//! by publications has every device sort every subscription. The engines must sort
//! (sweep or bisect): the region and grid engines keep every pair. The slabs are fixed
//! when the engine is built: a region that moves may change slab, so this engine
//! matches a set as loaded (count and pairs) and has no steps.

use crate::engine::{Approach, DdmError, Engine};
use crate::model::{Kind, Pair, RegionSet};
use gpu_kernels::multi::{concat_parts, Devices, OnDevice};
use rayon::prelude::*;

/// An error of a [`SlabEngine`]: the failure of one device, named by its ordinal.
pub type SlabError = OnDevice<DdmError>;

/// Lower bounds sampled to place the cuts.
const CUT_SAMPLE: usize = 1 << 16;

/// Region matching with the regions cut by their coordinate in dimension 0 over a set of
/// devices, each pair found on one device.
///
/// ```
/// use baselines::ddm::{Algorithm, DdmMatcher};
/// use ddm_region::workload::{scale_up, ScaleUpParams};
/// use ddm_region::{Approach, SlabEngine};
/// use gpu_kernels::multi::Devices;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let set = scale_up(&ScaleUpParams { regions: 400, alpha: 20.0, dims: 2 }, 1)?;
/// // Three emulated devices stand for three GPUs (or Devices::all(ddm_region::PTX)?).
/// let devs = Devices::emulated(3)?;
/// let mut engine = SlabEngine::with_regions(&devs, Approach::Sweep, &set)?;
/// let cpu = DdmMatcher::new(Algorithm::Brute, 1);
/// assert_eq!(engine.count()?, cpu.count(&set));
/// assert_eq!(engine.pairs()?, cpu.pairs(&set));
/// # Ok(()) }
/// ```
pub struct SlabEngine<'d> {
    devices: &'d Devices,
    /// Device `i`'s slab, `None` when it holds no region.
    parts: Vec<Option<Slab<'d>>>,
    /// `c_1 .. c_{k-1}`.
    cuts: Vec<u32>,
}

/// One device's share: its regions' engine (its pairs those of the slab) and the global
/// indices of its regions.
struct Slab<'d> {
    all: Engine<'d>,
    /// Global index of each local publication and subscription of `all`.
    pubs: Vec<u32>,
    subs: Vec<u32>,
}

impl<'d> SlabEngine<'d> {
    /// The engines over `devices`, each with the regions of `set` its slab needs
    /// (matched with `approach`, as [`Engine::with_regions`]; sweep or bisect, else
    /// [`DdmError::NoRestriction`] on the first device).
    pub fn with_regions(
        devices: &'d Devices,
        approach: Approach,
        set: &RegionSet,
    ) -> Result<Self, SlabError> {
        let cuts = cut_points(set, devices.len());
        let parts = devices.par_map(|i, dev| {
            if !approach.sorts() {
                return Err(DdmError::NoRestriction(approach.name()));
            }
            if i > cuts.len() {
                // Fewer distinct cuts than devices: this one has no slab.
                return Ok(None);
            }
            let lo = if i == 0 { 0 } else { cuts[i - 1] };
            let hi = cuts.get(i).copied();
            let share = share_of(set, lo, hi).map_err(DdmError::from)?;
            if share.all.n_pub() + share.all.n_sub() == 0 {
                return Ok(None);
            }
            let mut all = Engine::with_regions(dev, approach.clone(), &share.all)?;
            all.set_overlaps_from(lo)?;
            Ok(Some(Slab {
                all,
                pubs: share.pubs,
                subs: share.subs,
            }))
        })?;
        Ok(SlabEngine {
            devices,
            parts,
            cuts,
        })
    }

    /// The devices the engine runs on.
    pub fn devices(&self) -> &'d Devices {
        self.devices
    }

    /// The coordinates of dimension 0 where one device's slab ends and the next one's
    /// begins (one fewer than the devices).
    pub fn cuts(&self) -> &[u32] {
        &self.cuts
    }

    /// The number of overlapping pairs: each device's count of its slab's pairs, summed.
    pub fn count(&mut self) -> Result<u64, SlabError> {
        let counts = self
            .devices
            .par_each(&mut self.parts, |slab| -> Result<u64, DdmError> {
                let Some(slab) = slab else {
                    return Ok(0);
                };
                slab.all.count()
            })?;
        Ok(counts.into_iter().sum())
    }

    /// All overlapping pairs, ordered by publication, then subscription.
    pub fn pairs(&mut self) -> Result<Vec<Pair>, SlabError> {
        let lists =
            self.devices
                .par_each(&mut self.parts, |slab| -> Result<Vec<Pair>, DdmError> {
                    let Some(slab) = slab else {
                        return Ok(Vec::new());
                    };
                    let mut pairs = slab.all.pairs_unordered()?;
                    for p in &mut pairs {
                        p.publication = slab.pubs[p.publication as usize];
                        p.subscription = slab.subs[p.subscription as usize];
                    }
                    Ok(pairs)
                })?;
        let mut all = concat_parts(lists);
        all.par_sort_unstable();
        Ok(all)
    }
}

/// `k - 1` cut coordinates in dimension 0, ascending and distinct: quantiles of a
/// sample of the regions' lower bounds there (fewer when the bounds take fewer values).
fn cut_points(set: &RegionSet, k: usize) -> Vec<u32> {
    let mut lows: Vec<u32> = [Kind::Publication, Kind::Subscription]
        .into_iter()
        .flat_map(|kind| {
            let n = set.len(kind) as usize;
            let step = (n / (CUT_SAMPLE / 2)).max(1);
            (0..n)
                .step_by(step)
                .map(move |i| set.region(kind, i as u32)[0].lo)
        })
        .collect();
    lows.sort_unstable();
    let mut cuts: Vec<u32> = (1..k)
        .filter_map(|i| lows.get(i * lows.len() / k).copied())
        .filter(|&c| c > 0)
        .collect();
    cuts.dedup();
    cuts
}

/// The regions one slab `[lo, hi)` of dimension 0 needs (`hi` `None`: to the end), in
/// index order, with their global indices.
struct Share {
    all: RegionSet,
    pubs: Vec<u32>,
    subs: Vec<u32>,
}

fn share_of(set: &RegionSet, lo: u32, hi: Option<u32>) -> Result<Share, crate::model::ModelError> {
    let mut share = Share {
        all: RegionSet::new(set.dims())?,
        pubs: Vec::new(),
        subs: Vec::new(),
    };
    for kind in [Kind::Publication, Kind::Subscription] {
        let n = set.len(kind);
        let ids = set.ids(kind);
        for i in 0..n {
            let ranges = set.region(kind, i);
            let r = ranges[0];
            if hi.is_some_and(|hi| r.lo >= hi) || r.hi < lo {
                continue;
            }
            share.all.push(kind, ids[i as usize], ranges)?;
            match kind {
                Kind::Publication => share.pubs.push(i),
                Kind::Subscription => share.subs.push(i),
            }
        }
    }
    Ok(share)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Range;

    fn set_of_lows(lows: &[u32]) -> RegionSet {
        let mut set = RegionSet::new(1).expect("one dimension");
        for (i, &lo) in lows.iter().enumerate() {
            let kind = if i % 2 == 0 {
                Kind::Publication
            } else {
                Kind::Subscription
            };
            set.push(kind, i as u64, &[Range { lo, hi: lo + 5 }])
                .expect("a valid range");
        }
        set
    }

    #[test]
    fn cuts_are_ascending_distinct_quantiles_of_the_lower_bounds() {
        let set = set_of_lows(&(0..1000).map(|i| i * 10).collect::<Vec<_>>());
        let cuts = cut_points(&set, 4);
        assert_eq!(cuts.len(), 3);
        assert!(cuts.windows(2).all(|w| w[0] < w[1]), "{cuts:?}");
        // Quartiles of 0, 10, .., 9990.
        for (c, want) in cuts.iter().zip([2500, 5000, 7500]) {
            assert!(c.abs_diff(want) <= 20, "{cuts:?}");
        }
        assert!(cut_points(&set, 1).is_empty(), "one device: no cut");
    }

    #[test]
    fn lower_bounds_of_few_values_give_fewer_cuts() {
        // Every region begins at 0 or 7: a cut at 0 would be empty, so one cut (at 7) at most.
        let set = set_of_lows(&[0, 0, 0, 7, 7, 7, 7, 7]);
        let cuts = cut_points(&set, 4);
        assert_eq!(cuts, vec![7]);
    }
}
