//! Beyond the paper (which uses one GPU): twig filtering over many GPUs of one host,
//! [`MultiFilter`].
//!
//! - **Partition.** Documents, not queries: every device holds every query (the
//!   personalities are a few hundred kB at the papers' largest query sets), and a batch
//!   of documents is cut into one contiguous run per device of about equal bytes
//!   ([`gpu_kernels::multi::split_weighted`] over [`Document::bytes`]): a kernel's work
//!   is its events times the query groups, so equal bytes are equal work.
//! - **Run.** Device `d` runs an [`Engine`] on its run, on a host thread of its own
//!   ([`par_each_on`]); the runs are encoded on those threads too, so that the host's
//!   share grows no faster than the devices'.
//! - **Merge.** Each device answers its documents in order, and device `d`'s run comes
//!   before device `d + 1`'s: the answers concatenated in device order are the
//!   one-device engine's, document by document in input order.
//!
//! Cutting the queries instead would send every document's events to every device and
//! leave each device's blocks a fraction of the query groups: fewer blocks per launch at
//! the papers' query counts (one warp per 32 query nodes), where the documents give
//! thousands.

use crate::engine::{Engine, EngineConfig};
use crate::layout::EventBatch;
use crate::model::{Document, Matches, ProfileSet};
use crate::XmlError;
use gpu_kernels::multi::{concat_parts, par_each_on, split_weighted, Devices, OnDevice};
use std::ops::Range;

/// An error of a [`MultiFilter`]: the failure of one device, named by its ordinal (a
/// document too deep names its index in the whole batch).
pub type MultiError = OnDevice<XmlError>;

/// The twig filter with the documents of each batch cut over a set of devices.
///
/// ```
/// use xml_twig::{io, EngineConfig, MultiFilter, ProfileSet};
/// use gpu_kernels::multi::Devices;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let set = io::parse_query_file("q.txt", "/a[b]//c\n//d\n")?;
/// let profiles = ProfileSet::compile(&set)?;
/// let docs = [&b"<a><b/><x><c/></x></a>"[..], b"<d/>", b"<a><c/></a>"]
///     .iter()
///     .map(|x| io::parse_document("d.xml", x, &profiles.dict))
///     .collect::<Result<Vec<_>, _>>()?;
/// // Two emulated devices stand for two GPUs (or Devices::all(xml_twig::PTX)?).
/// let cfg = EngineConfig { block_threads: 32, warps_per_block: 1, ..EngineConfig::default() };
/// let mut filter = MultiFilter::new(Devices::emulated(2)?, &profiles, cfg)?;
/// assert_eq!(filter.filter(&docs)?, vec![vec![0], vec![1], vec![]]);
/// # Ok(()) }
/// ```
pub struct MultiFilter {
    /// Device `i`'s engine.
    engines: Vec<Engine>,
    /// The devices' ordinals, in set order.
    ordinals: Vec<usize>,
    name: String,
}

/// A batch encoded for a [`MultiFilter`] ([`MultiFilter::encode`]): each device's run
/// of documents, encoded for its engine.
pub struct MultiBatch {
    /// The documents of each device, in device order.
    runs: Vec<Range<usize>>,
    /// Device `i`'s documents, encoded.
    batches: Vec<EventBatch>,
}

impl MultiBatch {
    /// The documents of each device, in device order.
    pub fn runs(&self) -> &[Range<usize>] {
        &self.runs
    }

    /// Bytes of XML text of the whole batch (for MB/s).
    pub fn bytes(&self) -> usize {
        self.batches.iter().map(|b| b.bytes).sum()
    }
}

impl MultiFilter {
    /// One [`Engine`] per device of `devices`, each with every query of `profiles`
    /// (as [`Engine::new`]).
    pub fn new(
        devices: Devices,
        profiles: &ProfileSet,
        cfg: EngineConfig,
    ) -> Result<Self, MultiError> {
        let name = devices.name();
        let ordinals = devices.ordinals().to_vec();
        let mut parts: Vec<Option<gpu_kernels::Device>> = devices
            .into_parts()
            .into_iter()
            .map(|(_, dev)| Some(dev))
            .collect();
        let engines = par_each_on(&ordinals, &mut parts, |dev| {
            let dev = dev.take().expect("par_each_on visits each part once");
            Engine::new(dev, profiles, cfg.clone())
        })?;
        Ok(MultiFilter {
            engines,
            ordinals,
            name,
        })
    }

    /// Replaces the query set on every device (as [`Engine::load`]).
    pub fn load(&mut self, profiles: &ProfileSet) -> Result<(), MultiError> {
        par_each_on(&self.ordinals, &mut self.engines, |e| e.load(profiles))?;
        Ok(())
    }

    /// Number of devices.
    pub fn len(&self) -> usize {
        self.engines.len()
    }

    /// Never true: a filter runs on at least one device.
    pub fn is_empty(&self) -> bool {
        self.engines.is_empty()
    }

    /// The devices' ordinals, in set order.
    pub fn ordinals(&self) -> &[usize] {
        &self.ordinals
    }

    /// "2 x NVIDIA H100 80GB HBM3", or "3 x host SIMT emulator".
    pub fn name(&self) -> &str {
        &self.name
    }

    /// True when the devices are GPUs.
    pub fn is_gpu(&self) -> bool {
        self.engines.iter().all(|e| e.device().is_gpu())
    }

    /// The deepest document every device can filter.
    pub fn max_depth(&self) -> u32 {
        self.engines
            .iter()
            .map(Engine::max_depth)
            .min()
            .unwrap_or(0)
    }

    /// The run of documents each device filters: contiguous, in order, of about equal
    /// bytes (every document weighs at least one byte).
    pub fn runs(&self, docs: &[Document]) -> Vec<Range<usize>> {
        let bytes: Vec<u64> = docs.iter().map(|d| d.bytes.max(1) as u64).collect();
        split_weighted(&bytes, self.len())
    }

    /// Query ids matched by each document, ascending, in input order (as
    /// [`Engine::filter`]).
    pub fn filter(&mut self, docs: &[Document]) -> Result<Vec<Matches>, MultiError> {
        let runs = self.runs(docs);
        let mut work: Vec<(&mut Engine, Range<usize>)> =
            self.engines.iter_mut().zip(runs).collect();
        let answers = par_each_on(&self.ordinals, &mut work, |(engine, run)| {
            engine
                .filter(&docs[run.clone()])
                .map_err(|e| in_batch(e, run.start))
        })?;
        Ok(concat_parts(answers))
    }

    /// Encodes `docs` for the devices: each device's run for its engine (host work, not
    /// part of the filtering time, as [`Engine::encode`]), on the devices' threads.
    pub fn encode(&self, docs: &[Document]) -> MultiBatch {
        let runs = self.runs(docs);
        let mut work: Vec<(&Engine, Range<usize>)> = self.engines.iter().zip(runs).collect();
        let batches = par_each_on(&self.ordinals, &mut work, |(engine, run)| {
            Ok::<_, std::convert::Infallible>(engine.encode(&docs[run.clone()]))
        });
        let runs = work.into_iter().map(|(_, run)| run).collect();
        match batches {
            Ok(batches) => MultiBatch { runs, batches },
            // Encoding neither fails nor panics but on a bug; say so where it happened.
            Err(OnDevice::Panicked { ordinal, message }) => {
                panic!("encoding for device {ordinal}: {message}")
            }
            Err(OnDevice::Failed { error, .. }) => match error {},
        }
    }

    /// Filters an encoded batch (as [`Engine::filter_encoded`]): every device its run at
    /// once; the answers in input order.
    pub fn filter_encoded(&mut self, batch: &MultiBatch) -> Result<Vec<Matches>, MultiError> {
        if batch.batches.len() != self.len() {
            return Err(OnDevice::Failed {
                ordinal: self.ordinals[0],
                error: XmlError::BatchForOtherDevices {
                    runs: batch.batches.len(),
                    devices: self.len(),
                },
            });
        }
        let mut work: Vec<(&mut Engine, &EventBatch, usize)> = self
            .engines
            .iter_mut()
            .zip(&batch.batches)
            .zip(&batch.runs)
            .map(|((e, b), run)| (e, b, run.start))
            .collect();
        let answers = par_each_on(&self.ordinals, &mut work, |(engine, b, first)| {
            engine.filter_encoded(b).map_err(|e| in_batch(e, *first))
        })?;
        Ok(concat_parts(answers))
    }
}

/// A device's error with its document indices made the batch's (its run starts at
/// `first`).
fn in_batch(e: XmlError, first: usize) -> XmlError {
    match e {
        XmlError::DocumentTooDeep { doc, depth, max } => XmlError::DocumentTooDeep {
            doc: doc + first,
            depth,
            max,
        },
        other => other,
    }
}
