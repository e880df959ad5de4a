//! Beyond the paper (which uses one GPU): location-aware matching over many GPUs of one
//! host, [`MultiEngine`], built on [`Engine`]'s public interface.
//!
//! - **Partition.** Subscriptions (in ascending id order, as [`Subscriptions`] keeps
//!   them) are cut into one contiguous run per device of about equal filter counts
//!   ([`gpu_kernels::multi::split_weighted`]): the kernels' work is per filter (`Loc`
//!   tests every area, `Cont` every constraint of the filters in range), so equal
//!   filters are equal work. Each device runs an [`Engine`] on its run.
//! - **Events.** Every event goes to every device, each on a host thread of its own
//!   ([`par_each_on`]); area moves go to the device that holds the filter, its id made
//!   local to the run.
//! - **Merge.** A subscription lives on exactly one device, and device `d`'s ids are all
//!   below device `d + 1`'s: the answers, each ascending, concatenated in device order
//!   are ascending and free of duplicates, the one-device engine's answer.

use crate::engine::{Engine, EngineError, Options};
use crate::model::{AreaUpdate, Event, FilterId, ModelError, SubscriptionId, Subscriptions};
use gpu_kernels::multi::{concat_parts, par_each_on, split_weighted, Devices, OnDevice};
use std::ops::Range;

/// An error of a [`MultiEngine`]: the failure of one device, named by its ordinal.
pub type MultiError = OnDevice<EngineError>;

/// The CLCB matcher with the subscriptions cut over a set of devices.
///
/// ```
/// use clcb::multi::MultiEngine;
/// use clcb::workload::{Params, Workload};
/// use clcb::{Engine, Options};
/// use gpu_kernels::multi::Devices;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let params = Params {
///     events: 4,
///     subscriptions: 40,
///     filters_per_subscription: 2,
///     names: 10,
///     area_percent: 20.0,
///     selectivity_percent: 50.0,
///     ..Params::default()
/// };
/// let w = Workload::new(params, 3);
/// let subs = w.subscriptions();
/// // Two emulated devices stand for two GPUs (or Devices::all(clcb::PTX)?).
/// let mut multi = MultiEngine::new(Devices::emulated(2)?, &subs, Options::default())?;
/// let mut one = Engine::new(gpu_kernels::Device::emulator(), &subs, Options::default())?;
/// for e in w.events() {
///     assert_eq!(multi.match_event(&e)?, one.match_event(&e)?);
/// }
/// for u in w.updates(5, subs.filter_count()) {
///     multi.move_area(&u)?;
///     one.move_area(&u)?;
/// }
/// let events = w.events();
/// assert_eq!(multi.match_batch(&events)?, one.match_batch(&events)?);
/// # Ok(()) }
/// ```
pub struct MultiEngine {
    /// Device `i`'s engine, `None` when it holds no subscription.
    engines: Vec<Option<Engine>>,
    /// The devices' ordinals, in set order.
    ordinals: Vec<usize>,
    /// The subscriptions (dense indices) of each device.
    runs: Vec<Range<usize>>,
    /// The first filter of each device's run, and one past the last filter of the last.
    filter_starts: Vec<u32>,
}

impl MultiEngine {
    /// One [`Engine`] per device of `devices` (as [`Engine::new`]), each on its run of
    /// `subs`.
    pub fn new(devices: Devices, subs: &Subscriptions, opts: Options) -> Result<Self, MultiError> {
        let ordinals = devices.ordinals().to_vec();
        let filters: Vec<u64> = (0..subs.len())
            .map(|i| subs.as_slice()[i].filters.len() as u64)
            .collect();
        let runs = split_weighted(&filters, devices.len());
        let mut filter_starts: Vec<u32> =
            runs.iter().map(|r| first_filter(subs, r.start).0).collect();
        filter_starts.push(subs.filter_count() as u32);
        let mut parts: Vec<(Option<gpu_kernels::Device>, Range<usize>)> = devices
            .into_parts()
            .into_iter()
            .zip(runs.iter().cloned())
            .map(|((_, dev), run)| (Some(dev), run))
            .collect();
        let engines = par_each_on(&ordinals, &mut parts, |(dev, run)| {
            let dev = dev.take().expect("par_each_on visits each part once");
            if run.start == run.end {
                return Ok(None);
            }
            let part = Subscriptions::from_sorted(subs.as_slice()[run.clone()].to_vec());
            Engine::new(dev, &part, opts).map(Some)
        })?;
        Ok(MultiEngine {
            engines,
            ordinals,
            runs,
            filter_starts,
        })
    }

    /// Number of devices.
    pub fn len(&self) -> usize {
        self.engines.len()
    }

    /// Never true: an engine runs on at least one device.
    pub fn is_empty(&self) -> bool {
        self.engines.is_empty()
    }

    /// The devices' ordinals, in set order.
    pub fn ordinals(&self) -> &[usize] {
        &self.ordinals
    }

    /// The subscriptions (dense indices) each device holds, in device order.
    pub fn runs(&self) -> &[Range<usize>] {
        &self.runs
    }

    /// Switches every device's engine to the grid index, or back (as
    /// [`Engine::set_grid`]).
    pub fn set_grid(&mut self, on: bool) -> Result<(), MultiError> {
        self.each(|e, _| e.set_grid(on))?;
        Ok(())
    }

    /// The ids of the subscriptions matching `e`, ascending (as [`Engine::match_event`]).
    pub fn match_event(&mut self, e: &Event) -> Result<Vec<SubscriptionId>, MultiError> {
        Ok(concat_parts(self.each(|engine, _| engine.match_event(e))?))
    }

    /// The dense indices (of the whole subscription set) of the subscriptions matching
    /// each event, ascending (as [`Engine::match_batch`]).
    pub fn match_batch(&mut self, events: &[Event]) -> Result<Vec<Vec<u32>>, MultiError> {
        let per_device = self.each(|engine, first| {
            let mut answers = engine.match_batch(events)?;
            for a in &mut answers {
                a.iter_mut().for_each(|i| *i += first as u32);
            }
            Ok(answers)
        })?;
        let mut out = vec![Vec::new(); events.len()];
        for answers in per_device {
            for (o, a) in out.iter_mut().zip(answers) {
                o.extend(a);
            }
        }
        Ok(out)
    }

    /// Moves a filter's area (as [`Engine::move_area`]) on the device that holds it.
    pub fn move_area(&mut self, u: &AreaUpdate) -> Result<(), MultiError> {
        let f = u.filter.0;
        let starts = &self.filter_starts;
        // The device whose run of filters holds `f` (a device without filters holds none).
        let held = (0..self.engines.len()).find(|&d| (starts[d]..starts[d + 1]).contains(&f));
        let (d, first) = match held {
            Some(d) => (d, starts[d]),
            None => {
                let filters = starts.last().copied().unwrap_or(0) as usize;
                return Err(OnDevice::Failed {
                    ordinal: self.ordinals[self.ordinals.len() - 1],
                    error: EngineError::Model(ModelError::NoSuchFilter(f, filters)),
                });
            }
        };
        let local = AreaUpdate {
            filter: FilterId(f - first),
            area: u.area,
        };
        let ordinal = self.ordinals[d];
        match self.engines[d].as_mut() {
            Some(engine) => engine
                .move_area(&local)
                .map_err(|error| OnDevice::Failed { ordinal, error }),
            // A run holding a filter holds a subscription, and so an engine.
            None => Ok(()),
        }
    }

    /// Waits for every device's queued work (as [`Engine::synchronize`]).
    pub fn synchronize(&mut self) -> Result<(), MultiError> {
        self.each(|e, _| e.synchronize())?;
        Ok(())
    }

    /// Runs `f(engine, first subscription)` on every device that holds subscriptions,
    /// at once; the results in device order.
    fn each<R: Send + Default>(
        &mut self,
        f: impl Fn(&mut Engine, usize) -> Result<R, EngineError> + Sync,
    ) -> Result<Vec<R>, MultiError> {
        let mut work: Vec<(Option<&mut Engine>, usize)> = self
            .engines
            .iter_mut()
            .map(Option::as_mut)
            .zip(self.runs.iter().map(|r| r.start))
            .collect();
        par_each_on(&self.ordinals, &mut work, |(engine, first)| match engine {
            Some(e) => f(e, *first),
            None => Ok(R::default()),
        })
    }
}

/// The first filter of subscription `i` (the filter count when `i` is the end).
fn first_filter(subs: &Subscriptions, i: usize) -> FilterId {
    if i < subs.len() {
        subs.filter_start(i)
    } else {
        FilterId(subs.filter_count() as u32)
    }
}
