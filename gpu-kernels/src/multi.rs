//! Many devices in one host (beyond the papers, which use one GPU): [`Devices`], a set of
//! [`Device`]s, each driven by a host thread of its own, and the partition helpers the
//! papers' partitioned engines share.
//!
//! A partitioned engine is thin: it splits its tables over the set ([`split_weighted`],
//! [`split_even`]), builds one single-device engine per device ([`Devices::par_map`]),
//! runs every request on every device at once ([`Devices::par_each`]) and merges the
//! answers. Because every split is into *contiguous* ranges (of interfaces, regions,
//! documents), device `i`'s answers all come before device `i + 1`'s, and the merge of
//! disjoint ascending lists is their concatenation in device order.
//!
//! Threads and contexts: a [`Device`] is `Send + Sync` and binds its CUDA context to
//! the calling thread on every entry point, so the thread that drives a device may be
//! any thread; [`Devices::par_each`] runs each device's part on a host thread of its
//! own, outside rayon's pool, that lives across calls (a call costs the wake-ups of a
//! few parked threads), the first part on the caller's thread (with one device, exactly
//! as the single-device engine does). Not as tasks of rayon's pool: a part waiting
//! inside its engine's own parallel loop would run another device's part to its end.
//! Not on a thread spawned per call: 55-130 µs a call on 2x H100 (`ddm-region`'s
//! `multi_split`: half the work of a 1M-region count on each GPU). `part_threads`
//! (private) says more.
//!
//! Failure: each device's thread returns on its own; no thread waits for another, so a
//! device that fails (an error of its engine, a fault of its GPU, a panic of its thread)
//! never holds the others back, and the call returns [`OnDevice`] naming the device's
//! ordinal once every thread has ended. A lost GPU is an error of the CUDA driver on the
//! calling thread (`cuStreamSynchronize` fails), never a wait.
//!
//! ```
//! use gpu_kernels::multi::{split_even, DeviceSpec, Devices};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // `--devices all` or `--devices 0,1`; three emulated devices stand for three GPUs.
//! assert_eq!("0,1".parse::<DeviceSpec>()?, DeviceSpec::Ordinals(vec![0, 1]));
//! let devs = Devices::emulated(3)?;
//! // Sum 0..100 in three parts, one per device, on three host threads.
//! let parts = split_even(100, devs.len());
//! let sums = devs.par_map(|i, _dev| Ok::<u64, std::convert::Infallible>(
//!     parts[i].clone().map(|x| x as u64).sum(),
//! ))?;
//! assert_eq!(sums.iter().sum::<u64>(), 4950);
//! # Ok(()) }
//! ```

use crate::device::{Device, GpuError};
use std::fmt;
use std::ops::Range;
use std::str::FromStr;

/// Which GPUs to use: `all` of them, or a list of ordinals (`0,1,3`), as `--devices`
/// takes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSpec {
    All,
    Ordinals(Vec<usize>),
}

/// A `--devices` value that is neither `all` nor a list of distinct ordinals.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceSpecError {
    #[error("no devices given: expected `all` or ordinals such as `0,1`")]
    Empty,
    #[error("`{0}` is not a device ordinal: expected `all` or ordinals such as `0,1`")]
    NotAnOrdinal(String),
    #[error("device {0} is named twice")]
    Repeated(usize),
}

impl FromStr for DeviceSpec {
    type Err = DeviceSpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("all") {
            return Ok(DeviceSpec::All);
        }
        if s.is_empty() {
            return Err(DeviceSpecError::Empty);
        }
        let mut ordinals = Vec::new();
        for part in s.split(',').map(str::trim) {
            let o: usize = part
                .parse()
                .map_err(|_| DeviceSpecError::NotAnOrdinal(part.to_string()))?;
            if ordinals.contains(&o) {
                return Err(DeviceSpecError::Repeated(o));
            }
            ordinals.push(o);
        }
        Ok(DeviceSpec::Ordinals(ordinals))
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::All => write!(f, "all"),
            DeviceSpec::Ordinals(o) => {
                let list: Vec<String> = o.iter().map(usize::to_string).collect();
                write!(f, "{}", list.join(","))
            }
        }
    }
}

impl DeviceSpec {
    /// The ordinals this spec names on a machine with `count` GPUs (`all`: `0..count`;
    /// a list as given, each checked against `count`).
    pub fn ordinals(&self, count: usize) -> Result<Vec<usize>, GpuError> {
        match self {
            DeviceSpec::All if count == 0 => Err(GpuError::EmptyDeviceSet),
            DeviceSpec::All => Ok((0..count).collect()),
            DeviceSpec::Ordinals(o) => match o.iter().find(|&&x| x >= count) {
                Some(&ordinal) => Err(GpuError::NoDevice { ordinal, count }),
                None if o.is_empty() => Err(GpuError::EmptyDeviceSet),
                None => Ok(o.clone()),
            },
        }
    }
}

/// An error of one device of a [`Devices`] set: the engine's error, or its host thread's
/// panic, with the ordinal of the device (the GPU ordinal; an emulated device's place in
/// its set).
#[derive(Debug)]
pub enum OnDevice<E> {
    Failed { ordinal: usize, error: E },
    Panicked { ordinal: usize, message: String },
}

impl<E> OnDevice<E> {
    /// The ordinal of the device that failed.
    pub fn ordinal(&self) -> usize {
        match self {
            OnDevice::Failed { ordinal, .. } | OnDevice::Panicked { ordinal, .. } => *ordinal,
        }
    }

    /// The same failure with the device's error converted (e.g. into a crate's error).
    pub fn map<F>(self, f: impl FnOnce(E) -> F) -> OnDevice<F> {
        match self {
            OnDevice::Failed { ordinal, error } => OnDevice::Failed {
                ordinal,
                error: f(error),
            },
            OnDevice::Panicked { ordinal, message } => OnDevice::Panicked { ordinal, message },
        }
    }
}

impl<E: fmt::Display> fmt::Display for OnDevice<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OnDevice::Failed { ordinal, error } => write!(f, "device {ordinal}: {error}"),
            OnDevice::Panicked { ordinal, message } => {
                write!(f, "device {ordinal}: its host thread panicked: {message}")
            }
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for OnDevice<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OnDevice::Failed { error, .. } => Some(error),
            OnDevice::Panicked { .. } => None,
        }
    }
}

/// A non-empty set of devices: GPUs by ordinal, or emulated devices standing for GPUs
/// (so that partitioned engines are tested without one).
///
/// ```
/// use gpu_kernels::multi::{DeviceSpec, Devices};
/// // No GPU here (an empty PTX module cannot be loaded anyway): the emulator stands in.
/// let devs = match Devices::open(&DeviceSpec::All, "") {
///     Ok(gpus) => gpus,
///     Err(_) => Devices::emulated(2).expect("two emulated devices"),
/// };
/// assert_eq!(devs.ordinals(), &[0, 1]);
/// assert!(!devs.is_gpu());
/// ```
pub struct Devices {
    devices: Vec<Device>,
    ordinals: Vec<usize>,
}

impl fmt::Debug for Devices {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Devices")
            .field("ordinals", &self.ordinals)
            .field("gpu", &self.is_gpu())
            .finish()
    }
}

impl Devices {
    /// GPUs `ordinals`, each with `ptx` loaded, opened in order.
    pub fn gpus(ordinals: &[usize], ptx: &str) -> Result<Devices, GpuError> {
        if ordinals.is_empty() {
            return Err(GpuError::EmptyDeviceSet);
        }
        let devices = ordinals
            .iter()
            .map(|&o| Device::gpu(o, ptx))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Devices {
            devices,
            ordinals: ordinals.to_vec(),
        })
    }

    /// Every GPU of the machine, with `ptx` loaded.
    pub fn all(ptx: &str) -> Result<Devices, GpuError> {
        Devices::open(&DeviceSpec::All, ptx)
    }

    /// The GPUs `spec` names, with `ptx` loaded.
    pub fn open(spec: &DeviceSpec, ptx: &str) -> Result<Devices, GpuError> {
        let count = Device::gpu_count();
        if count == 0 {
            // The reason there is none: no driver, or none present.
            Device::gpu(0, ptx)?;
        }
        Devices::gpus(&spec.ordinals(count)?, ptx)
    }

    /// `n` host emulators standing for `n` GPUs, with ordinals `0..n`.
    pub fn emulated(n: usize) -> Result<Devices, GpuError> {
        if n == 0 {
            return Err(GpuError::EmptyDeviceSet);
        }
        Ok(Devices {
            devices: (0..n).map(|_| Device::emulator()).collect(),
            ordinals: (0..n).collect(),
        })
    }

    /// Number of devices (at least one).
    pub fn len(&self) -> usize {
        self.devices.len()
    }

    /// Never true: a set holds at least one device.
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// The devices' ordinals, in set order.
    pub fn ordinals(&self) -> &[usize] {
        &self.ordinals
    }

    /// Device `i` of the set (in set order, not by ordinal).
    pub fn get(&self, i: usize) -> Option<&Device> {
        self.devices.get(i)
    }

    /// The devices in set order.
    pub fn iter(&self) -> std::slice::Iter<'_, Device> {
        self.devices.iter()
    }

    /// True when the set is of GPUs, false for emulated devices.
    pub fn is_gpu(&self) -> bool {
        self.devices.iter().all(Device::is_gpu)
    }

    /// "2 x NVIDIA H100 80GB HBM3", or "3 x host SIMT emulator".
    pub fn name(&self) -> String {
        format!("{} x {}", self.len(), self.devices[0].name())
    }

    /// Runs `f(i, device i)` for every device of the set at once, each on a host thread
    /// of its own outside rayon's pool (see [`par_each_on`]; device 0's on the caller's
    /// thread), and returns the results in set order, or the first failure in set order
    /// once every thread has ended.
    pub fn par_map<'s, R, E>(
        &'s self,
        f: impl Fn(usize, &'s Device) -> Result<R, E> + Sync,
    ) -> Result<Vec<R>, OnDevice<E>>
    where
        R: Send,
        E: Send,
    {
        let mut idx: Vec<usize> = (0..self.len()).collect();
        self.par_each(&mut idx, |i| f(*i, &self.devices[*i]))
    }

    /// Runs `f(part i)` for the parts of a partitioned engine, part `i` on the thread of
    /// device `i` (the part holds that device's engine), as [`Devices::par_map`] does.
    /// Parts beyond the set's size are blamed on the last device's ordinal, which a
    /// partitioned engine, one part per device, never has.
    pub fn par_each<T, R, E>(
        &self,
        parts: &mut [T],
        f: impl Fn(&mut T) -> Result<R, E> + Sync,
    ) -> Result<Vec<R>, OnDevice<E>>
    where
        T: Send,
        R: Send,
        E: Send,
    {
        par_each_on(&self.ordinals, parts, f)
    }

    /// The devices, in set order, each with its ordinal: for engines that own their
    /// device (then driven with [`par_each_on`]).
    pub fn into_parts(self) -> Vec<(usize, Device)> {
        self.ordinals.into_iter().zip(self.devices).collect()
    }
}

/// [`Devices::par_each`] for the parts of an engine whose single-device engines own
/// their devices (taken from [`Devices::into_parts`]): part `i` runs on a long-lived
/// host thread of its own outside rayon's pool (the caller's for part 0), and its
/// failure names `ordinals[i]`.
///
/// ```
/// use gpu_kernels::multi::{par_each_on, Devices, OnDevice};
/// let mut parts = Devices::emulated(2).expect("two emulated devices").into_parts();
/// let r = par_each_on(&[0, 1], &mut parts, |(ordinal, _dev)| match *ordinal {
///     0 => Ok(10),
///     _ => Err("out of memory"),
/// });
/// assert!(matches!(r, Err(OnDevice::Failed { ordinal: 1, error: "out of memory" })));
/// ```
pub fn par_each_on<T, R, E>(
    ordinals: &[usize],
    parts: &mut [T],
    f: impl Fn(&mut T) -> Result<R, E> + Sync,
) -> Result<Vec<R>, OnDevice<E>>
where
    T: Send,
    R: Send,
    E: Send,
{
    let ordinal = |i: usize| ordinals.get(i).or(ordinals.last()).copied().unwrap_or(i);
    // Each part on a thread of its own outside rayon's pool (the caller's for the
    // first; `part_threads` says why); each slot taken by exactly one part.
    let slots: Vec<std::sync::Mutex<Option<&mut T>>> = parts
        .iter_mut()
        .map(|p| std::sync::Mutex::new(Some(p)))
        .collect();
    crate::part_threads::run_parts(slots.len(), &|i| {
        let mut slot = slots[i].lock().unwrap_or_else(|e| e.into_inner());
        f(slot.take().expect("run_parts runs each part once"))
    })
    .into_iter()
    .enumerate()
    .map(|(i, r)| match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(error)) => Err(OnDevice::Failed {
            ordinal: ordinal(i),
            error,
        }),
        // `run_parts` catches every part's panic and hands it back here.
        Err(payload) => Err(OnDevice::Panicked {
            ordinal: ordinal(i),
            message: panic_message(payload.as_ref()),
        }),
    })
    .collect()
}

impl<'a> IntoIterator for &'a Devices {
    type Item = &'a Device;
    type IntoIter = std::slice::Iter<'a, Device>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}

/// Splits items `0..weights.len()` into `parts` contiguous ranges of about equal total
/// weight (a range ends where the running total first reaches its share, or just
/// before, whichever is nearer). Every item is in exactly one range, in order; a part
/// may be empty when there are fewer items than parts or one item outweighs a share.
///
/// ```
/// use gpu_kernels::multi::split_weighted;
/// assert_eq!(split_weighted(&[5, 5, 5, 5], 2), vec![0..2, 2..4]);
/// assert_eq!(split_weighted(&[9, 1, 1, 1], 2), vec![0..1, 1..4]);
/// assert_eq!(split_weighted(&[1], 3), vec![0..0, 0..0, 0..1]);
/// ```
pub fn split_weighted(weights: &[u64], parts: usize) -> Vec<Range<usize>> {
    let parts = parts.max(1);
    let total: u128 = weights.iter().map(|&w| w as u128).sum();
    let mut out = Vec::with_capacity(parts);
    let (mut start, mut i, mut run) = (0usize, 0usize, 0u128);
    for p in 1..parts {
        // Part p - 1 ends where the running total is nearest to p / parts of the whole.
        let target = total * p as u128 / parts as u128;
        while i < weights.len() && run + (weights[i] as u128) <= target {
            run += weights[i] as u128;
            i += 1;
        }
        // Taking the next item overshoots: take it when that lands nearer the target.
        if i < weights.len() && run + weights[i] as u128 - target < target - run {
            run += weights[i] as u128;
            i += 1;
        }
        out.push(start..i);
        start = i;
    }
    out.push(start..weights.len());
    out
}

/// The merge of the devices' answer lists, in device order: one list as it is (no
/// copy, as with one device), several moved into one (each item moved once, never
/// cloned: a list of lists, such as one answer list per document, keeps its inner
/// lists' memory).
///
/// ```
/// use gpu_kernels::multi::concat_parts;
/// assert_eq!(concat_parts(vec![vec![1, 2], vec![], vec![3]]), vec![1, 2, 3]);
/// let one = vec![vec![7u32; 1000]];
/// let at = one[0].as_ptr();
/// assert_eq!(concat_parts(one).as_ptr(), at); // handed over, not copied
/// ```
pub fn concat_parts<T>(mut parts: Vec<Vec<T>>) -> Vec<T> {
    if parts.len() == 1 {
        return parts.pop().unwrap_or_default();
    }
    let mut all = Vec::with_capacity(parts.iter().map(Vec::len).sum());
    for part in parts {
        all.extend(part);
    }
    all
}

/// Splits `0..n` into `parts` contiguous ranges whose sizes differ by at most one.
///
/// ```
/// use gpu_kernels::multi::split_even;
/// assert_eq!(split_even(10, 3), vec![0..4, 4..7, 7..10]);
/// ```
pub fn split_even(n: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.max(1);
    let (each, extra) = (n / parts, n % parts);
    let mut start = 0;
    (0..parts)
        .map(|p| {
            let len = each + (p < extra) as usize;
            start += len;
            start - len..start
        })
        .collect()
}
