//! Beyond the paper (which uses one GPU): the pruning index over many GPUs of one host,
//! [`MultiIndex`].
//!
//! - **Partition.** Filters, ordered by interface id, are cut into one contiguous range
//!   per device, in one of two ways ([`Partition`]):
//!   - by interface (the default): whole interfaces, ranges of about equal filter count
//!     ([`gpu_kernels::multi::split_weighted`]); a device holds every filter of its
//!     interfaces, so the per-interface early stop of SFF (and of [`GpuIndex`]'s
//!     interface-major kernel) saves as much on each device as on one; the balance is
//!     within one interface's filters (Table 1's default of 10 interfaces on 4 devices:
//!     3, 3, 2, 2 interfaces);
//!   - by filter: equal filter counts ([`gpu_kernels::multi::split_even`]), an
//!     interface at a range's border shared by the devices on either side (which both
//!     may answer it); the early stop then saves per device only.
//!
//!   Or the filters are not cut at all, and the *events* are ([`Partition::Events`]):
//!   every device holds the whole index, and a batch is cut into one run of
//!   consecutive events per device.
//! - **Every event on every device** (when the filters are cut). Each device runs its
//!   own [`GpuIndex`] (its own partitions of its filters by rarest names) on the whole
//!   batch, on a host thread of its own ([`Devices::par_each`]), translating the
//!   batch's dictionaries itself (the names and strings of a device's tables are those
//!   its filters use) and staging every event. The host's work (staging every event,
//!   the whole batch's on one device) is then repeated on every device: where it
//!   bounds one device, more devices make the stream slower. Cut by events, each
//!   event is staged once, by the device that matches it: the host's work stays that
//!   of one device and the devices' work is divided, at the price of a copy of the
//!   index on each.
//! - **Merge.** A device answers only interfaces of its range and each device's list is
//!   ascending ([`Answers`]), so the ascending answer of an event is device 0's list,
//!   then device 1's, and so on, less a border interface that the previous device
//!   answered too: [`MultiAnswers::get`] walks the devices' page-locked lists in place,
//!   with no copy on the host. Cut by events, an event's answer is the one list of the
//!   device that matched it.
//!
//! With one device the index is exactly [`GpuIndex`], driven on the caller's thread.

use crate::batch::EventBatch;
use crate::engine::CcmError;
use crate::index::{encode_threads_shared, Answers, GpuIndex, IndexConfig};
use crate::model::{Event, InterfaceId, Subscription};
use gpu_kernels::multi::{split_even, split_weighted, Devices, OnDevice};
use std::collections::BTreeMap;

/// An error of a [`MultiIndex`]: the failure of one device, named by its ordinal.
pub type MultiError = OnDevice<CcmError>;

/// How a [`MultiIndex`] cuts its filters over the devices (see the module's notes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Partition {
    /// Whole interfaces per device, balanced by filter count.
    #[default]
    Interfaces,
    /// Equal filter counts per device; a border interface is shared.
    Filters,
    /// Every filter on every device; each batch's events cut into one run per device.
    Events,
}

/// The pruning index with its interfaces partitioned over a set of devices.
///
/// ```
/// use ccm::{workload, IndexConfig, MultiIndex};
/// use baselines::Matcher;
/// use gpu_kernels::multi::Devices;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let params = workload::Params {
///     events: 6,
///     interfaces: 5,
///     filters_per_interface: (3, 5),
///     names: 4,
///     values: 3,
///     ..workload::Params::default()
/// };
/// let w = workload::generate(&params, 7)?;
/// // Three emulated devices stand for three GPUs (or Devices::all(ccm::PTX)?).
/// let devs = Devices::emulated(3)?;
/// let dev0 = devs.get(0).expect("a device");
/// let mut index = MultiIndex::new(&devs, &w.subscriptions, IndexConfig::for_device(dev0))?;
/// assert_eq!(index.interfaces_per_device().iter().sum::<usize>(), 5);
/// let answers = index.match_batch(&w.batch)?;
/// let sff = baselines::sff::Sff::build(&w.subscriptions)?;
/// for (i, e) in w.events.iter().enumerate() {
///     assert_eq!(answers.to_vec(i), sff.match_event(e));
/// }
/// # Ok(()) }
/// ```
pub struct MultiIndex<'d> {
    devices: &'d Devices,
    /// Device `i`'s index, `None` when its range of interfaces is empty.
    parts: Vec<Option<GpuIndex<'d>>>,
    /// Interfaces and filters of each device.
    load: Vec<(usize, usize)>,
    partition: Partition,
}

/// The answers of a batch matched by a [`MultiIndex`]: for event `i`,
/// [`MultiAnswers::get`]`(i)` iterates the interfaces it matches, ascending.
///
/// Device `d`'s lists stay in the page-locked areas its index wrote them to (matching
/// into the same `MultiAnswers` again reuses them, as [`Answers`] does).
#[derive(Default)]
pub struct MultiAnswers {
    /// Per device, its answers (empty, and not consulted, for a device without
    /// interfaces).
    per_device: Vec<Answers>,
    /// Devices holding interfaces, in device order.
    active: Vec<usize>,
    /// [`Partition::Events`]: device `d` matched events `runs[d]` (empty otherwise).
    runs: Vec<std::ops::Range<usize>>,
    events: usize,
}

impl std::fmt::Debug for MultiAnswers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiAnswers")
            .field("events", &self.events)
            .field("total", &self.total())
            .finish()
    }
}

impl MultiAnswers {
    /// Number of events answered.
    pub fn len(&self) -> usize {
        self.events
    }

    pub fn is_empty(&self) -> bool {
        self.events == 0
    }

    /// The ascending answer of event `i` as the devices' lists, in device order
    /// (disjoint, each ascending, each device's ids below the next's): a list's first
    /// id is dropped when the previous device answered it too (an interface shared at
    /// the border of two devices' ranges).
    pub fn parts(&self, i: usize) -> impl Iterator<Item = &[InterfaceId]> + '_ {
        let mut last: Option<InterfaceId> = None;
        self.active.iter().map(move |&d| {
            let mut list = match self.runs.get(d) {
                // Cut by events: only the device whose run holds `i` answers it.
                Some(run) if run.contains(&i) => self.per_device[d].get(i - run.start),
                Some(_) => &[],
                None => self.per_device[d].get(i),
            };
            if let (Some(l), Some(&first)) = (last, list.first()) {
                if l == first {
                    list = &list[1..];
                }
            }
            if let Some(&x) = list.last() {
                last = Some(x);
            }
            list
        })
    }

    /// The interfaces event `i` matches, ascending.
    pub fn get(&self, i: usize) -> impl Iterator<Item = InterfaceId> + '_ {
        self.parts(i).flatten().copied()
    }

    /// How many interfaces event `i` matches.
    pub fn count(&self, i: usize) -> usize {
        self.parts(i).map(<[InterfaceId]>::len).sum()
    }

    /// Event `i`'s answer as one vector.
    pub fn to_vec(&self, i: usize) -> Vec<InterfaceId> {
        let mut v = Vec::with_capacity(self.count(i));
        v.extend(self.parts(i).flatten());
        v
    }

    /// One vector per event.
    pub fn to_vecs(&self) -> Vec<Vec<InterfaceId>> {
        (0..self.events).map(|i| self.to_vec(i)).collect()
    }

    /// Interfaces answered over all events.
    pub fn total(&self) -> usize {
        match self.active[..] {
            [d] => self.per_device[d].total(),
            _ if !self.runs.is_empty() => self.per_device.iter().map(Answers::total).sum(),
            _ => (0..self.events).map(|i| self.count(i)).sum(),
        }
    }
}

impl<'d> MultiIndex<'d> {
    /// Partitions `subs` by interface over `devices` and builds each device's index
    /// (on every device at once), each with `cfg`.
    pub fn new(
        devices: &'d Devices,
        subs: &[Subscription],
        cfg: IndexConfig,
    ) -> Result<Self, MultiError> {
        Self::with_partition(devices, subs, cfg, Partition::Interfaces)
    }

    /// As [`MultiIndex::new`], the filters cut over the devices as `partition` says.
    pub fn with_partition(
        devices: &'d Devices,
        subs: &[Subscription],
        cfg: IndexConfig,
        partition: Partition,
    ) -> Result<Self, MultiError> {
        // Interfaces in ascending id, with their filters in input order.
        let mut by_iface: BTreeMap<InterfaceId, Vec<&Subscription>> = BTreeMap::new();
        for s in subs {
            by_iface.entry(s.interface).or_default().push(s);
        }
        let ifaces: Vec<&Vec<&Subscription>> = by_iface.values().collect();
        // Every filter in interface order, and each device's range of them.
        let ordered: Vec<&Subscription> = ifaces.iter().flat_map(|f| f.iter().copied()).collect();
        let ranges = match partition {
            Partition::Interfaces => {
                let weights: Vec<u64> = ifaces.iter().map(|f| f.len() as u64).collect();
                let mut start = 0;
                split_weighted(&weights, devices.len())
                    .into_iter()
                    .map(|r| {
                        let n: usize = ifaces[r].iter().map(|f| f.len()).sum();
                        start += n;
                        start - n..start
                    })
                    .collect()
            }
            Partition::Filters => split_even(ordered.len(), devices.len()),
            Partition::Events => vec![0..ordered.len(); devices.len()],
        };
        let load = ranges
            .iter()
            .map(|r| {
                let mine = &ordered[r.clone()];
                let ifaces = mine.windows(2).filter(|w| w[0].interface != w[1].interface);
                (ifaces.count() + !mine.is_empty() as usize, mine.len())
            })
            .collect();
        let mut parts = devices.par_map(|i, dev| {
            if partition == Partition::Events {
                // Every filter: the caller's subscriptions as they are, not a copy.
                return match subs {
                    [] => Ok(None),
                    _ => GpuIndex::new(dev, subs, cfg).map(Some),
                };
            }
            let mine: Vec<Subscription> = ordered[ranges[i].clone()]
                .iter()
                .map(|&s| s.clone())
                .collect();
            if mine.is_empty() {
                return Ok(None);
            }
            GpuIndex::new(dev, &mine, cfg).map(Some)
        })?;
        if devices.len() > 1 {
            // Each device's pipeline on a pool of its own, a share of the host's cores
            // (`GpuIndex::set_encode_threads` says why), of at most
            // `ENCODE_THREADS_HOST_MAX` threads together.
            let share = encode_threads_shared(rayon::current_num_threads(), devices.len());
            parts
                .iter_mut()
                .flatten()
                .for_each(|ix| ix.set_encode_threads(share));
        }
        Ok(MultiIndex {
            devices,
            parts,
            load,
            partition,
        })
    }

    /// The devices the index runs on.
    pub fn devices(&self) -> &'d Devices {
        self.devices
    }

    /// Interfaces held by each device, in device order (a border interface shared by
    /// two devices counts on both).
    pub fn interfaces_per_device(&self) -> Vec<usize> {
        self.load.iter().map(|l| l.0).collect()
    }

    /// Filters held by each device, in device order.
    pub fn filters_per_device(&self) -> Vec<usize> {
        self.load.iter().map(|l| l.1).collect()
    }

    /// Bytes of the index's tables on each device.
    pub fn device_bytes(&self) -> Vec<usize> {
        self.parts
            .iter()
            .map(|p| p.as_ref().map_or(0, GpuIndex::device_bytes))
            .collect()
    }

    /// Most events per launch on any device ([`GpuIndex::launch_events`]): a caller
    /// that times a stream warms the index with this many events first.
    pub fn launch_events(&self) -> usize {
        self.parts
            .iter()
            .flatten()
            .map(GpuIndex::launch_events)
            .max()
            .unwrap_or(1)
    }

    /// Matches the events of `batch` on every device at once; see
    /// [`MultiIndex::match_batch_into`].
    pub fn match_batch(&mut self, batch: &EventBatch) -> Result<MultiAnswers, MultiError> {
        let mut out = MultiAnswers::default();
        self.match_batch_into(batch, &mut out)?;
        Ok(out)
    }

    /// Matches heap events: [`MultiIndex::match_batch_into`] of their batch
    /// ([`EventBatch::from_events`], built once).
    pub fn match_events_into(
        &mut self,
        events: &[Event],
        out: &mut MultiAnswers,
    ) -> Result<(), MultiError> {
        self.match_batch_into(&EventBatch::from_events(events), out)
    }

    /// Matches the events of `batch` on every device, each device's index on a host
    /// thread of its own ([`GpuIndex::match_batch_into`]: its pipeline of staging,
    /// copies and kernels), into `out`, whose page-locked areas are reused. Cut by
    /// events ([`Partition::Events`]), device `d` matches the `d`-th of as many runs of
    /// consecutive events as there are devices.
    pub fn match_batch_into(
        &mut self,
        batch: &EventBatch,
        out: &mut MultiAnswers,
    ) -> Result<(), MultiError> {
        self.match_range_into(batch, 0..batch.len(), out)
    }

    /// As [`MultiIndex::match_batch_into`], for the events `events` of `batch` only
    /// (answer `i` is event `events.start + i`'s). Panics when `events` is not within
    /// the batch, as slicing does.
    pub fn match_range_into(
        &mut self,
        batch: &EventBatch,
        events: std::ops::Range<usize>,
        out: &mut MultiAnswers,
    ) -> Result<(), MultiError> {
        let n = events.len();
        out.per_device
            .resize_with(self.parts.len(), Answers::default);
        out.active.clear();
        out.active
            .extend((0..self.parts.len()).filter(|&d| self.parts[d].is_some()));
        out.events = 0;
        out.runs = match self.partition {
            Partition::Events => split_even(n, self.parts.len()),
            _ => Vec::new(),
        };
        let runs = &out.runs;
        let mut work: Vec<(usize, Option<&mut GpuIndex<'d>>, &mut Answers)> = self
            .parts
            .iter_mut()
            .map(Option::as_mut)
            .zip(out.per_device.iter_mut())
            .enumerate()
            .map(|(d, (ix, a))| (d, ix, a))
            .collect();
        self.devices
            .par_each(&mut work, |(d, index, answers)| match index {
                Some(ix) => {
                    let mine = runs.get(*d).map_or(events.clone(), |r| {
                        events.start + r.start..events.start + r.end
                    });
                    ix.match_range_into(batch, mine, answers)
                }
                None => Ok(()),
            })?;
        out.events = n;
        Ok(())
    }
}
