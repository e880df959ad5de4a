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
//!   and belongs to the slab holding `m`. Device `i`'s engine counts every pair of its
//!   regions: those with `m` in its slab, and those whose regions both begin before
//!   `c_i` (their `m` lies in an earlier slab). The regions of slab `i` that begin
//!   before `c_i` all contain `c_i`, so they overlap one another in dimension 0, and a
//!   second engine on them alone (the *straddlers*) counts exactly the pairs to take
//!   away. Pairs are filtered the same way on the host (a pair of two straddlers is
//!   dropped).
//! - **Merge.** Counts are summed; each device's pairs, renumbered in the whole set
//!   (its regions were taken in index order, so its order is kept), are merged by a
//!   parallel sort into the one-device engine's order.
//!
//! Every device works on about `1/k` of the regions (plus the straddlers), where the cut
//! by publications has every device sort every subscription. The slabs are fixed when
//! the engine is built: a region that moves may change slab, so this engine matches a
//! set as loaded (count and pairs) and has no steps.

use crate::engine::{Approach, DdmError, Engine};
use crate::model::{Kind, Pair, RegionSet};
use gpu_kernels::multi::{Devices, OnDevice};
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

/// One device's share: its regions' engine, the straddlers' engine, and the global
/// indices of its regions.
struct Slab<'d> {
    all: Engine<'d>,
    /// The regions that begin before the slab (none in the first slab).
    straddlers: Option<Engine<'d>>,
    /// Global index of each local publication and subscription of `all`.
    pubs: Vec<u32>,
    subs: Vec<u32>,
    /// Whether each local publication or subscription begins before the slab.
    pub_before: Vec<bool>,
    sub_before: Vec<bool>,
}

impl<'d> SlabEngine<'d> {
    /// The engines over `devices`, each with the regions of `set` its slab needs
    /// (matched with `approach`, as [`Engine::with_regions`]).
    pub fn with_regions(
        devices: &'d Devices,
        approach: Approach,
        set: &RegionSet,
    ) -> Result<Self, SlabError> {
        let cuts = cut_points(set, devices.len());
        let parts = devices.par_map(|i, dev| {
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
            let all = Engine::with_regions(dev, approach.clone(), &share.all)?;
            let straddlers = match &share.straddlers {
                Some(s) if s.n_pub() > 0 && s.n_sub() > 0 => {
                    Some(Engine::with_regions(dev, approach.clone(), s)?)
                }
                _ => None,
            };
            Ok(Some(Slab {
                all,
                straddlers,
                pubs: share.pubs,
                subs: share.subs,
                pub_before: share.pub_before,
                sub_before: share.sub_before,
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

    /// The number of overlapping pairs: on each device, its regions' pairs less its
    /// straddlers' pairs, summed.
    pub fn count(&mut self) -> Result<u64, SlabError> {
        let counts = self
            .devices
            .par_each(&mut self.parts, |slab| -> Result<u64, DdmError> {
                let Some(slab) = slab else {
                    return Ok(0);
                };
                let all = slab.all.count()?;
                let before = match &mut slab.straddlers {
                    Some(e) => e.count()?,
                    None => 0,
                };
                Ok(all - before)
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
                    let mut pairs = slab.all.pairs()?;
                    pairs.retain(|p| {
                        !(slab.pub_before[p.publication as usize]
                            && slab.sub_before[p.subscription as usize])
                    });
                    for p in &mut pairs {
                        p.publication = slab.pubs[p.publication as usize];
                        p.subscription = slab.subs[p.subscription as usize];
                    }
                    Ok(pairs)
                })?;
        let mut all = lists.concat();
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
/// index order, and those of them that begin before it.
struct Share {
    all: RegionSet,
    straddlers: Option<RegionSet>,
    pubs: Vec<u32>,
    subs: Vec<u32>,
    pub_before: Vec<bool>,
    sub_before: Vec<bool>,
}

fn share_of(set: &RegionSet, lo: u32, hi: Option<u32>) -> Result<Share, crate::model::ModelError> {
    let mut share = Share {
        all: RegionSet::new(set.dims())?,
        straddlers: (lo > 0).then(|| RegionSet::new(set.dims())).transpose()?,
        pubs: Vec::new(),
        subs: Vec::new(),
        pub_before: Vec::new(),
        sub_before: Vec::new(),
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
            let before = r.lo < lo;
            share.all.push(kind, ids[i as usize], ranges)?;
            if before {
                if let Some(s) = &mut share.straddlers {
                    s.push(kind, ids[i as usize], ranges)?;
                }
            }
            let (index, flags) = match kind {
                Kind::Publication => (&mut share.pubs, &mut share.pub_before),
                Kind::Subscription => (&mut share.subs, &mut share.sub_before),
            };
            index.push(i);
            flags.push(before);
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
