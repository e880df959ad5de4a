//! Beyond the paper (which uses one GPU): region matching over many GPUs of one host,
//! [`MultiEngine`].
//!
//! - **Partition.** Publications (the update regions of §III.A) are cut into one
//!   contiguous range of indices per device ([`gpu_kernels::multi::split_even`]); every
//!   device holds every subscription region. Device `d` runs an [`Engine`] of any
//!   [`Approach`] on its publications (numbered from 0 there) against all
//!   subscriptions, so it finds exactly the overlapping pairs of its publications.
//! - **Steps.** An update of a publication goes to the device that holds it (its index
//!   made local), an update of a subscription to every device; every device runs its
//!   step at once, on a host thread of its own ([`Devices::par_each`]).
//! - **Merge.** Counts are summed; pairs (ordered by publication, then subscription, on
//!   each device) get their device's first publication index added back and are
//!   concatenated in device order, which is the one-device engine's order.
//!
//! The alternative, the sort-and-sweep split by coordinate, is [`SlabEngine`](crate::SlabEngine):
//! each device holds about its share of both kinds, but the slabs are fixed when it is
//! built, so it has no steps; cutting the publications keeps steps and every engine of
//! the crate, at the price of every device holding (and sorting) every subscription.

use crate::engine::{Approach, DdmError, Engine, StepReport};
use crate::model::{Change, Kind, Pair, RegionSet, UpdateBatch};
use gpu_kernels::multi::{concat_parts, split_even, Devices, OnDevice};
use std::ops::Range;

/// An error of a [`MultiEngine`]: the failure of one device, named by its ordinal.
pub type MultiError = OnDevice<DdmError>;

/// Region matching with the publications partitioned over a set of devices.
///
/// ```
/// use baselines::ddm::{Algorithm, DdmMatcher};
/// use ddm_region::workload::{Distribution, Scenario, ScenarioParams};
/// use ddm_region::{Approach, MultiEngine};
/// use gpu_kernels::multi::Devices;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut scenario = Scenario::new(ScenarioParams::paper(200, 1000, Distribution::Uniform), 1)?;
/// // Two emulated devices stand for two GPUs (or Devices::all(ddm_region::PTX)?).
/// let devs = Devices::emulated(2)?;
/// let mut engine = MultiEngine::with_regions(&devs, Approach::Sweep, scenario.regions())?;
/// let cpu = DdmMatcher::new(Algorithm::Brute, 1);
/// assert_eq!(engine.count()?, cpu.count(scenario.regions()));
/// let moves = scenario.step();
/// engine.step(&moves, false)?; // the sweep recounts on demand
/// assert_eq!(engine.count()?, cpu.count(scenario.regions()));
/// assert_eq!(engine.pairs()?, cpu.pairs(scenario.regions()));
/// # Ok(()) }
/// ```
pub struct MultiEngine<'d> {
    devices: &'d Devices,
    /// Device `i`'s engine, `None` when it holds no publication.
    parts: Vec<Option<Engine<'d>>>,
    /// Publications of each device.
    ranges: Vec<Range<u32>>,
}

impl<'d> MultiEngine<'d> {
    /// Room for `n_pub` publications, cut over `devices`, and `n_sub` subscriptions on
    /// each, in `dims` dimensions; none present yet (as [`Engine::new`]).
    pub fn new(
        devices: &'d Devices,
        approach: Approach,
        dims: usize,
        n_pub: u32,
        n_sub: u32,
    ) -> Result<Self, MultiError> {
        let ranges: Vec<Range<u32>> = split_even(n_pub as usize, devices.len())
            .into_iter()
            .map(|r| r.start as u32..r.end as u32)
            .collect();
        let parts = devices.par_map(|i, dev| {
            let r = &ranges[i];
            if r.is_empty() {
                return Ok(None);
            }
            Engine::new(dev, approach.clone(), dims, r.end - r.start, n_sub).map(Some)
        })?;
        Ok(MultiEngine {
            devices,
            parts,
            ranges,
        })
    }

    /// The engines over `devices` with every region of `set` matched (as
    /// [`Engine::with_regions`]).
    pub fn with_regions(
        devices: &'d Devices,
        approach: Approach,
        set: &RegionSet,
    ) -> Result<Self, MultiError> {
        let mut e = Self::new(devices, approach, set.dims(), set.n_pub(), set.n_sub())?;
        e.step(&UpdateBatch::everything(set), false)?;
        Ok(e)
    }

    /// The devices the engine runs on.
    pub fn devices(&self) -> &'d Devices {
        self.devices
    }

    /// The publications each device holds, in device order.
    pub fn publications_per_device(&self) -> Vec<Range<u32>> {
        self.ranges.clone()
    }

    /// Loads a whole region set of the engine's sizes on every device (as
    /// [`Engine::load`]): each device its publications and every subscription.
    pub fn load(&mut self, set: &RegionSet) -> Result<(), MultiError> {
        let ranges = &self.ranges;
        let mut work: Vec<(usize, Option<&mut Engine<'d>>)> = self
            .parts
            .iter_mut()
            .map(Option::as_mut)
            .enumerate()
            .collect();
        self.devices.par_each(&mut work, |(i, engine)| {
            let Some(engine) = engine else {
                return Ok(());
            };
            engine.load(&part_of(set, ranges[*i].clone())?)
        })?;
        Ok(())
    }

    /// One step (as [`Engine::step`]): each update to the devices that hold its region,
    /// every device's step at once; the overlaps summed and, when asked for, the pairs
    /// that involve an updated region, in global publication indices.
    pub fn step(
        &mut self,
        batch: &UpdateBatch,
        want_pairs: bool,
    ) -> Result<StepReport, MultiError> {
        let dims = self.dims();
        let ranges = &self.ranges;
        let mut work = numbered(&mut self.parts);
        let reports = self.devices.par_each(&mut work, |(i, engine)| {
            let Some(engine) = engine else {
                return Ok(None);
            };
            let r = ranges[*i].clone();
            let mut report = engine.step(&batch_of(batch, dims, r.clone()), want_pairs)?;
            if let Some(pairs) = &mut report.pairs {
                to_global(pairs, r.start);
            }
            Ok(Some(report))
        })?;
        let mut out = StepReport {
            overlaps: 0,
            pairs: want_pairs.then(Vec::new),
        };
        for r in reports.into_iter().flatten() {
            out.overlaps += r.overlaps;
            if let (Some(all), Some(pairs)) = (&mut out.pairs, r.pairs) {
                all.extend(pairs);
            }
        }
        Ok(out)
    }

    /// The number of overlapping pairs now: the devices' counts summed.
    pub fn count(&mut self) -> Result<u64, MultiError> {
        let counts = self
            .devices
            .par_each(&mut self.parts, |engine| match engine {
                Some(e) => e.count(),
                None => Ok(0),
            })?;
        Ok(counts.into_iter().sum())
    }

    /// All overlapping pairs now, ordered by publication, then subscription.
    pub fn pairs(&mut self) -> Result<Vec<Pair>, MultiError> {
        let ranges = &self.ranges;
        let mut work = numbered(&mut self.parts);
        let lists = self.devices.par_each(&mut work, |(i, engine)| {
            let Some(engine) = engine else {
                return Ok(Vec::new());
            };
            let mut pairs = engine.pairs()?;
            to_global(&mut pairs, ranges[*i].start);
            Ok(pairs)
        })?;
        Ok(concat_parts(lists))
    }

    fn dims(&self) -> usize {
        self.parts
            .iter()
            .flatten()
            .map(Engine::dims)
            .next()
            .unwrap_or(1)
    }
}

/// The part of `set` a device holds: publications `pubs` (numbered from 0) and every
/// subscription.
fn part_of(set: &RegionSet, pubs: Range<u32>) -> Result<RegionSet, DdmError> {
    let mut part = RegionSet::new(set.dims()).map_err(DdmError::from)?;
    let ids = set.ids(Kind::Publication);
    for p in pubs {
        part.push(
            Kind::Publication,
            ids[p as usize],
            set.region(Kind::Publication, p),
        )
        .map_err(DdmError::from)?;
    }
    let ids = set.ids(Kind::Subscription);
    for s in 0..set.n_sub() {
        part.push(
            Kind::Subscription,
            ids[s as usize],
            set.region(Kind::Subscription, s),
        )
        .map_err(DdmError::from)?;
    }
    Ok(part)
}

/// The updates of `batch` a device holding publications `pubs` sees: those of its
/// publications (indices made local) and of every subscription, in batch order.
fn batch_of(batch: &UpdateBatch, dims: usize, pubs: Range<u32>) -> UpdateBatch {
    let mut out = UpdateBatch::default();
    let mut at = 0;
    for &(kind, index, change) in batch.entries() {
        let ranges = match change {
            Change::Set => {
                at += dims;
                batch.ranges().get(at - dims..at).unwrap_or(&[])
            }
            Change::Remove => &[],
        };
        let index = match kind {
            Kind::Subscription => index,
            Kind::Publication if pubs.contains(&index) => index - pubs.start,
            Kind::Publication => continue,
        };
        match change {
            Change::Set => out.set(kind, index, ranges),
            Change::Remove => out.remove(kind, index),
        }
    }
    out
}

/// Each device's engine (none where its range of publications is empty) with the
/// device's number, for [`Devices::par_each`].
fn numbered<'a, 'd>(
    parts: &'a mut [Option<Engine<'d>>],
) -> Vec<(usize, Option<&'a mut Engine<'d>>)> {
    parts.iter_mut().map(Option::as_mut).enumerate().collect()
}

/// A device's pairs, numbered by publication within its range starting at `first`,
/// renumbered in the whole set.
fn to_global(pairs: &mut [Pair], first: u32) {
    pairs.iter_mut().for_each(|p| p.publication += first);
}
