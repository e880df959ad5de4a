//! The lazy DFA's warm path on the GPU (beyond the paper): [`DfaEngine`] filters a
//! batch of documents through a frozen copy of a lazily built automaton, one warp per
//! unit (the kernels: `xml_twig_kernels::dfa`). A unit is a document, or a segment of
//! one: a document is cut between its root's children ([`DfaEngine::set_segment_events`]),
//! each segment replays the root's open and ORs what it reports to the root into the
//! document's row, and a second kernel closes the root once all have run. Only the root
//! is open across a cut, so no other hand-over is needed (the CPU's
//! `LazyDfa::filter_segmented` cuts anywhere and fixes up every level on one thread); a
//! document whose root has few children stays whole. The points between the root's
//! children come with the encoded batch ([`EventBatch::children_of`], found while the
//! events are laid out, as their depth is), so planning the cuts reads a few numbers
//! per document, not its events (on the H100's host, scanning Fig. 9's 500 documents
//! for them took 1.6 ms a batch, twice the kernel).
//!
//! An automaton none of whose leaf bundles reports to an accumulator (linear paths:
//! every match is a leaf step) runs a lean kernel instead, `walk_dfa`: no join, no
//! accumulator, the stack in registers across the warp's lanes, few registers a thread
//! (the general kernel holds 128, which left 16 warps an SM on an H100), and no second
//! kernel for the cut roots.
//!
//! The events go as they were encoded: the paper's 1-byte form where the tables' tags
//! fit 7 bits, written by [`DfaEngine::encode`] straight into page-locked host memory,
//! followed by the other inputs the lean walk reads, so that a call sends the batch as
//! it lies in one copy (a batch in ordinary memory is staged by the call into the
//! engine's page-locked memory first). The lean walk's call waits for the device once
//! (the answers' copy back); the general kernel's three times (see
//! [`DfaEngine::filter_encoded`]).
//!
//! The automaton is built on the CPU by `baselines::lazy_dfa::LazyDfa` (XMLTK's lazy
//! DFA, Green et al., TODS 2004, with a word-parallel twig join), which exports what its
//! cache holds as [`DfaTables`]. The GPU takes the transitions the CPU has built; a
//! document that needs one it has not ([`DfaEngine::filter`] answers `None` for it) is
//! left to the CPU filter, which builds the missing states as it goes, so the lazy
//! construction stays on the CPU and the warm path, most documents of a stream like the
//! ones the cache was trained on, runs here. A document deeper than
//! `xml_twig_kernels::dfa::MAX_DEPTH` - 1 is left to the CPU too.
//!
//! ```
//! use xml_twig::dfa::{DfaEngine, DfaTables};
//! use xml_twig::{io, Device, ProfileSet};
//! # fn main() -> Result<(), xml_twig::XmlError> {
//! // One query, `/a`, by hand: the start state (1) goes to state 2 on tag 1 (`a`),
//! // whose leaf bundle (1) matches query 0; every other transition is not built.
//! let set = io::parse_query_file("q.txt", "/a\n")?;
//! let profiles = ProfileSet::compile(&set)?;
//! let tags = 2; // tag 0 (a name no query uses) and `a`
//! let mut trans = vec![u32::MAX; 3 * tags];
//! trans[tags + 1] = 2;
//! let mut leaf = vec![0; 3 * tags];
//! leaf[tags + 1] = 1;
//! let tables = DfaTables {
//!     tags: tags as u32,
//!     trans,
//!     leaf,
//!     bundles: vec![[0; 4], [0, 0, 0, 1]],
//!     masks: vec![[0; 4]; 3],
//!     sparse: vec![],
//!     tops: vec![0],
//!     jout: vec![],
//!     planes: vec![],
//!     template: vec![0],
//!     ids: vec![0],
//! };
//! let mut engine = DfaEngine::new(Device::emulator(), &tables)?;
//! let hit = io::parse_document("d.xml", b"<a/>", &profiles.dict)?;
//! let miss = io::parse_document("e.xml", b"<a><a/></a>", &profiles.dict)?;
//! assert_eq!(engine.filter(&[hit, miss])?, vec![Some(vec![0]), None]);
//! # Ok(()) }
//! ```

use crate::engine::{decode_row, put, room};
use crate::layout::{EventBatch, EventSlice, EventWords, LockedAt, LockedPool};
use crate::model::{Document, Event, Matches, NARROW_MAX_TAG};
use crate::XmlError;
use gpu_kernels::crew::{claim_map, Crew};
use gpu_kernels::{Buffer, DevPtr, DevPtrMut, Device, HostBuffer, LaunchConfig};
use rayon::prelude::*;
use std::time::{Duration, Instant};
use xml_twig_kernels::dfa::{self as k, DfaParams, MAX_DEPTH, NO_SLOT, NO_STATE};

/// Warps (documents) per block of [`k::filter_dfa`].
const WARPS_PER_BLOCK: u32 = 4;

/// Most bytes of accumulators one launch may use by default
/// ([`DfaEngine::set_launch_bytes`]).
const LAUNCH_BYTES: u64 = 1 << 30;

/// Most bytes of leaf bundles held in full on the device (one accumulator's width
/// each); past it they are ORed from their sparse words.
const DENSE_MAX: u64 = 2 << 30;

/// Most dynamic shared memory a block of [`k::filter_dfa`] asks for by default (its
/// warps' accumulators): none, the accumulators in global memory. Measured on an H100
/// (Fig. 9's batch, 2048 twigs of 10 nodes, segments of 128+ events; ncu): 1.55 ms a
/// launch with them in global memory (16 warps an SM, 72% L1 hits), 2.57 ms in shared
/// memory (8 warps an SM at 92 KiB a block, the L1 left to the tables 49% hits).
const SHARED_MAX: u64 = 0;

/// A lazily built automaton, frozen: what `baselines::lazy_dfa::LazyDfa` has built so
/// far (its states, transitions, leaf bundles and join masks) in flat arrays. Spans
/// are `(start, len)` into `sparse`; accumulator words are 32-bit (bit `b` is bit
/// `b % 32` of word `b / 32`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DfaTables {
    /// Tag ids `0..tags` (0: a name no query uses).
    pub tags: u32,
    /// `trans[state * tags + tag]`: the next DFA state, `u32::MAX` where not built.
    /// State 1 is the start; `trans.len() / tags` states in all.
    pub trans: Vec<u32>,
    /// `leaf[state * tags + tag]`: the leaf bundle of that transition (0: empty).
    pub leaf: Vec<u32>,
    /// Per leaf bundle: `[start, len]` of its words for the parent's accumulator and
    /// `[start, len]` of the queries it matches in `tops`. Bundle 0 is empty.
    pub bundles: Vec<[u32; 4]>,
    /// Per DFA state: `[start, len]` of its active join nodes (words of the numbering
    /// of plane 0) and `[start, len]` of the `//` child bits it passes up (words of
    /// the accumulator).
    pub masks: Vec<[u32; 4]>,
    /// Sparse words `(word, bits)`, word ascending within a span.
    pub sparse: Vec<(u32, u32)>,
    /// Internal query numbers matched by leaf bundles.
    pub tops: Vec<u32>,
    /// Per join node: `(child bit in the parent's accumulator, or u32::MAX when its
    /// satisfaction matches its query, query)`.
    pub jout: Vec<(u32, u32)>,
    /// The accumulator's planes: `(first word, join nodes numbered)`; plane `m` holds
    /// the `m`-th child of every join node of more than `m` children.
    pub planes: Vec<(u32, u32)>,
    /// The empty accumulator.
    pub template: Vec<u32>,
    /// Internal query number -> query id.
    pub ids: Vec<u32>,
}

impl DfaTables {
    /// Number of DFA states.
    pub fn states(&self) -> usize {
        self.trans.len() / (self.tags.max(1) as usize)
    }

    /// The documents of `batch` (ascending) that [`DfaEngine`] will hand back: those
    /// whose walk needs a transition the tables lack, or deeper than
    /// [`MAX_DEPTH`] - 1. Found on the host (on rayon's pool for a large batch) by
    /// walking the transitions alone, so that the CPU can start on them while the GPU
    /// filters the rest.
    ///
    /// ```
    /// use xml_twig::dfa::DfaTables;
    /// use xml_twig::layout::EventBatch;
    /// use xml_twig::{io, ProfileSet};
    /// # fn main() -> Result<(), xml_twig::XmlError> {
    /// let profiles = ProfileSet::compile(&io::parse_query_file("q.txt", "/a\n")?)?;
    /// // Only the start state's transition on `a` (tag 1) is built.
    /// let tables = DfaTables {
    ///     tags: 2,
    ///     trans: vec![u32::MAX, u32::MAX, u32::MAX, 2, u32::MAX, u32::MAX],
    ///     leaf: vec![0, 0, 0, 1, 0, 0],
    ///     bundles: vec![[0; 4], [0, 0, 0, 1]],
    ///     masks: vec![[0; 4]; 3],
    ///     tops: vec![0],
    ///     template: vec![0],
    ///     ids: vec![0],
    ///     ..DfaTables::default()
    /// };
    /// let doc = |xml: &[u8]| io::parse_document("d.xml", xml, &profiles.dict);
    /// let batch = EventBatch::encode(&[doc(b"<a/>")?, doc(b"<a><a/></a>")?], false);
    /// assert_eq!(tables.unfinished(&batch), vec![1]); // `a` under `a` was never built
    /// # Ok(()) }
    /// ```
    pub fn unfinished(&self, batch: &EventBatch) -> Vec<usize> {
        let tags = self.tags.max(1);
        let lacks = |d: usize| -> bool {
            if batch.depth[d] + 1 > MAX_DEPTH {
                return true;
            }
            let (a, b) = (batch.doc_start[d] as usize, batch.doc_start[d + 1] as usize);
            match batch.events.as_slice() {
                EventSlice::Wide(v) => self.lacks(v[a..b].iter().map(|&e| Event(e)), tags),
                EventSlice::Narrow(v) => {
                    self.lacks(v[a..b].iter().map(|&b| Event::from_narrow(b)), tags)
                }
            }
        };
        if batch.events() >= PARALLEL_BATCH_EVENTS {
            (0..batch.len())
                .into_par_iter()
                .filter(|&d| lacks(d))
                .collect()
        } else {
            (0..batch.len()).filter(|&d| lacks(d)).collect()
        }
    }

    /// Whether the walk of one document's `events` needs a transition not built.
    fn lacks(&self, events: impl Iterator<Item = Event>, tags: u32) -> bool {
        let mut stack = Vec::with_capacity(MAX_DEPTH as usize);
        let mut cur = k::START_STATE;
        for e in events {
            if !e.is_open() {
                cur = stack.pop().unwrap_or(k::START_STATE);
                continue;
            }
            let tag = e.tag() as u32;
            let tag = if tag >= tags { 0 } else { tag };
            let to = self
                .trans
                .get((cur * tags + tag) as usize)
                .copied()
                .unwrap_or(NO_STATE);
            if to == NO_STATE {
                return true;
            }
            stack.push(cur);
            cur = to;
        }
        false
    }

    /// Checks that every index stays in its array (the kernel trusts them).
    pub fn check(&self) -> Result<(), XmlError> {
        let bad = |what: String| Err(XmlError::BadTables { what });
        let (tags, states) = (self.tags as usize, self.states());
        if tags == 0 || self.trans.len() != states * tags || self.leaf.len() != self.trans.len() {
            return bad(format!(
                "{} transitions and {} leaf bundles for {tags} tags",
                self.trans.len(),
                self.leaf.len()
            ));
        }
        if states < 2 || self.masks.len() != states {
            return bad(format!(
                "{} join masks for {states} states",
                self.masks.len()
            ));
        }
        if let Some(t) = self
            .trans
            .iter()
            .find(|&&t| t != NO_STATE && t as usize >= states)
        {
            return bad(format!("a transition to state {t} of {states}"));
        }
        if self.bundles.first().is_some_and(|b| *b != [0; 4]) {
            return bad("bundle 0 is not empty".into());
        }
        if let Some(b) = self
            .leaf
            .iter()
            .find(|&&b| b as usize >= self.bundles.len().max(1))
        {
            return bad(format!("leaf bundle {b} of {}", self.bundles.len()));
        }
        let width = self.template.len() as u32;
        let span = |start: u32, len: u32, of: usize| start as u64 + len as u64 <= of as u64;
        let words_in = |start: u32, len: u32, bound: u32| {
            self.sparse[start as usize..(start + len) as usize]
                .iter()
                .all(|&(w, _)| w < bound)
        };
        // Join numbers: every active bit names a join node.
        let joins = self.jout.len() as u64;
        let plane0 = joins.div_ceil(32) as u32;
        let joins_in = |start: u32, len: u32| {
            self.sparse[start as usize..(start + len) as usize]
                .iter()
                .all(|&(w, bits)| {
                    bits == 0 || (w as u64 * 32 + (31 - bits.leading_zeros()) as u64) < joins
                })
        };
        for b in &self.bundles {
            if !span(b[0], b[1], self.sparse.len())
                || !span(b[2], b[3], self.tops.len())
                || !words_in(b[0], b[1], width)
            {
                return bad(format!("a leaf bundle {b:?} out of its arrays"));
            }
        }
        for m in &self.masks {
            if !span(m[0], m[1], self.sparse.len())
                || !span(m[2], m[3], self.sparse.len())
                || !words_in(m[0], m[1], plane0)
                || !joins_in(m[0], m[1])
                || !words_in(m[2], m[3], width)
            {
                return bad(format!("a state's masks {m:?} out of their arrays"));
            }
        }
        if let Some(&(off, n)) = self
            .planes
            .iter()
            .find(|&&(off, n)| off as u64 + (n as u64).div_ceil(32) > width as u64)
        {
            return bad(format!(
                "a plane ({off}, {n}) past the accumulator's {width} words"
            ));
        }
        let queries = self.ids.len() as u32;
        if self.tops.iter().any(|&q| q >= queries)
            || self
                .jout
                .iter()
                .any(|&(slot, q)| q >= queries || (slot != NO_SLOT && slot / 32 >= width))
        {
            return bad("a query or child bit out of range".into());
        }
        Ok(())
    }
}

/// The lazy DFA's warm path on one device (module docs).
pub struct DfaEngine {
    dev: Device,
    t: Tables,
    /// The batch's events, wide or narrow (the other one unused), and the page-locked
    /// host memory they are copied from ([`stage`]).
    events: Option<Buffer<u16>>,
    events8: Option<Buffer<u8>>,
    staging: Option<HostBuffer<u8>>,
    /// The batch's other inputs in one buffer, copied in one write: [`Inputs`].
    ins: Option<Buffer<u32>>,
    /// The outputs in one buffer, zeroed in one call and read back in one copy:
    /// [`Outputs`].
    outs: Option<Buffer<u32>>,
    accs: Option<Buffer<u32>>,
    shared_max: u64,
    dense: bool,
    /// Whether an automaton whose leaf bundles report nothing runs [`k::walk_dfa`].
    walk_only: bool,
    segment_events: Option<usize>,
    launch_bytes: u64,
    phases: Phases,
    handed_back: usize,
    /// Warps of [`k::walk_dfa`] the device holds at once (0: not asked yet).
    walk_warps: usize,
    /// Whether the lean walk plans its units on the device ([`Self::set_plan_on_device`]).
    plan_on_device: bool,
    /// Whether the device's plan is walked a thread per unit ([`k::walk_dfa_lanes`]).
    lanes: bool,
    /// Threads of [`k::walk_dfa_lanes`] the device holds at once (0: not asked yet).
    lane_threads: usize,
    /// The lean walk's inputs, events and plan in one buffer, filled by one copy from
    /// `staging` ([`WalkInputs`]).
    walk_ins: Option<Buffer<u8>>,
    /// Page-locked host memory the rows and status are copied back into.
    back: Option<HostBuffer<u32>>,
    /// Page-locked host memory the lean walk's plan goes to the device from, when the
    /// batch was encoded in page-locked memory ([`EventBatch::encode_locked`]).
    plan_host: Option<HostBuffer<u8>>,
    /// The page-locked blocks [`Self::encode`] writes batches into, reused once a batch
    /// is dropped.
    pool: LockedPool,
    /// Whether the kernels set a query's bit only after a load shows it unset
    /// ([`Self::set_check_bits`]; off by default).
    check_bits: bool,
    /// Whether the lean walk times its kernels by the device's clock
    /// ([`Self::set_device_clock`]), and its marks, recorded again at every call.
    device_clock: bool,
    marks: [Option<gpu_kernels::Mark>; 3],
    /// Whether the lean walk's answers are listed on the device ([`k::compact_rows`]).
    decode_on_device: bool,
    /// [`k::compact_rows`]' output, and how many ids the first copy back brings
    /// (0: [`FIRST_ANSWERS_PER_DOC`] a document; then a quarter over the last batch's).
    answers: Option<Buffer<u32>>,
    answer_cap: usize,
}

/// Where the last [`DfaEngine::filter_encoded`] spent its time: the host's clock, and
/// the device's for the kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Phases {
    /// Planning the cuts and laying out the inputs (host).
    pub plan: Duration,
    /// Copying the events (staged in page-locked memory on rayon's pool) and the other
    /// inputs to the device (two copies) and zeroing the outputs (one call).
    pub upload: Duration,
    /// The kernels, by the device's clock (events recorded around them on its stream).
    pub kernels: Duration,
    /// Of `kernels`, the listing of the answers on the device ([`k::compact_rows()`];
    /// zero when it did not run).
    pub compact: Duration,
    /// From the first launch to the rows of answers on the host: launching the kernels,
    /// waiting for them, one copy back.
    pub read: Duration,
    /// Decoding the rows into query ids (host).
    pub decode: Duration,
    /// Units walked (a warp each, or a thread each), and whether by the lean walk
    /// ([`k::walk_dfa()`]), a thread a unit ([`k::walk_dfa_lanes()`]).
    pub units: usize,
    pub walk_only: bool,
    pub lanes: bool,
}

impl Phases {
    /// The host's time of the call (the device's kernels are inside `read`).
    pub fn total(&self) -> Duration {
        self.plan + self.upload + self.read + self.decode
    }
}

/// Offsets of a call's inputs in the engine's one input buffer: `doc_start` (documents
/// + 1), then the units' `start` (units + 1) and `doc` (units), then `split`.
struct Inputs {
    unit_start: usize,
    unit_doc: usize,
    split: usize,
    /// Units, and documents cut into segments.
    units: usize,
    splits: usize,
}

/// Offsets of a call's outputs in the engine's one output buffer: `matched` (a row of
/// `words` per document) and `status` (one per document) first, read back together;
/// then `root_has` (one per document) and `roots` (a row of `width` per document cut
/// into segments, else one word).
struct Outputs {
    status: usize,
    root_has: usize,
    roots: usize,
    len: usize,
}

/// [`DfaTables`] on the device.
struct Tables {
    /// No leaf bundle has accumulator words: [`k::walk_dfa`] runs.
    leaves_only: bool,
    tags: u32,
    n_planes: u32,
    width: u32,
    ids: Vec<u32>,
    /// `ids` on the device, for [`k::compact_rows`].
    ids_dev: Buffer<u32>,
    trans: Buffer<u32>,
    leaf: Buffer<u32>,
    bundles: Buffer<u32>,
    masks: Buffer<u32>,
    sparse_word: Buffer<u32>,
    sparse_bits: Buffer<u32>,
    tops: Buffer<u32>,
    /// Every leaf bundle's words in full, when they fit [`DENSE_MAX`].
    bundle_words: Option<Buffer<u32>>,
    jout: Buffer<u32>,
    planes: Buffer<u32>,
    template: Buffer<u32>,
}

impl Tables {
    /// Checks `tables` ([`DfaTables::check`]) and uploads them.
    fn upload(dev: &Device, tables: &DfaTables) -> Result<Self, XmlError> {
        tables.check()?;
        let flat = |v: &[[u32; 4]]| v.iter().flatten().copied().collect::<Vec<u32>>();
        let pairs = |v: &[(u32, u32)]| v.iter().flat_map(|&(a, b)| [a, b]).collect::<Vec<_>>();
        let words: Vec<u32> = tables.sparse.iter().map(|&(w, _)| w).collect();
        let bits: Vec<u32> = tables.sparse.iter().map(|&(_, b)| b).collect();
        Ok(Tables {
            leaves_only: tables.bundles.iter().all(|b| b[1] == 0),
            tags: tables.tags,
            n_planes: tables.planes.len() as u32,
            width: tables.template.len().max(1) as u32,
            ids: tables.ids.clone(),
            ids_dev: upload(dev, &tables.ids)?,
            trans: upload(dev, &tables.trans)?,
            leaf: upload(dev, &tables.leaf)?,
            bundles: upload(dev, &flat(&tables.bundles))?,
            masks: upload(dev, &flat(&tables.masks))?,
            sparse_word: upload(dev, &words)?,
            sparse_bits: upload(dev, &bits)?,
            tops: upload(dev, &tables.tops)?,
            bundle_words: Self::dense_bundles(dev, tables)?,
            jout: upload(dev, &pairs(&tables.jout))?,
            planes: upload(dev, &pairs(&tables.planes))?,
            template: upload(dev, &tables.template)?,
        })
    }

    /// Every leaf bundle's words in full (`width` words each), if they fit [`DENSE_MAX`].
    /// On the paper's twigs a bundle spans most of the accumulator (567 of 578 words at
    /// 2048 twigs of 10 nodes), and the full words are ORed without a word index.
    fn dense_bundles(dev: &Device, t: &DfaTables) -> Result<Option<Buffer<u32>>, XmlError> {
        let width = t.template.len().max(1);
        if (t.bundles.len() * width * 4) as u64 > DENSE_MAX {
            return Ok(None);
        }
        let mut words = vec![0u32; t.bundles.len() * width];
        for (b, span) in t.bundles.iter().enumerate() {
            for &(w, bits) in &t.sparse[span[0] as usize..(span[0] + span[1]) as usize] {
                words[b * width + w as usize] |= bits;
            }
        }
        Ok(Some(upload(dev, &words)?))
    }
}

/// Uploads `v` (one zero for an empty array: a buffer is never empty).
fn upload(dev: &Device, v: &[u32]) -> Result<Buffer<u32>, XmlError> {
    Ok(dev.upload(if v.is_empty() { &[0] } else { v })?)
}

impl DfaEngine {
    /// Checks `tables` ([`DfaTables::check`]) and uploads them.
    pub fn new(dev: Device, tables: &DfaTables) -> Result<Self, XmlError> {
        let t = Tables::upload(&dev, tables)?;
        Ok(DfaEngine {
            dev,
            t,
            events: None,
            events8: None,
            staging: None,
            ins: None,
            outs: None,
            accs: None,
            shared_max: SHARED_MAX,
            dense: true,
            walk_only: true,
            segment_events: None,
            launch_bytes: LAUNCH_BYTES,
            phases: Phases::default(),
            handed_back: 0,
            walk_warps: 0,
            plan_on_device: true,
            lanes: true,
            lane_threads: 0,
            walk_ins: None,
            back: None,
            plan_host: None,
            pool: LockedPool::default(),
            check_bits: false,
            device_clock: false,
            marks: [None, None, None],
            decode_on_device: true,
            answers: None,
            answer_cap: 0,
        })
    }

    /// Whether leaf bundles are ORed from their full words when these fit on the device
    /// (the default), or always from their sparse words.
    pub fn set_dense_bundles(&mut self, dense: bool) {
        self.dense = dense;
    }

    /// Whether an automaton none of whose leaf bundles reports to an accumulator
    /// (linear paths) runs the lean walk [`k::walk_dfa()`] (the default), or the general
    /// [`k::filter_dfa()`] (the same answers).
    pub fn set_walk_only(&mut self, on: bool) {
        self.walk_only = on;
    }

    /// Warps of [`k::walk_dfa`] the device holds at once (asked once).
    fn walk_warps(&mut self) -> Result<usize, XmlError> {
        if self.walk_warps == 0 {
            let cfg = LaunchConfig {
                grid: [1, 1, 1],
                block: [WARPS_PER_BLOCK * 32, 1, 1],
                shared_bytes: 0,
            };
            let blocks = self.dev.resident_blocks(&k::walk_dfa::KERNEL, cfg, 64)?;
            self.walk_warps = (blocks * WARPS_PER_BLOCK).max(1) as usize;
        }
        Ok(self.walk_warps)
    }

    /// Whether the lean walk [`k::walk_dfa()`] plans its units on the device (the
    /// default: the host sends each document's unit count and the points between its
    /// root's children, and each warp finds its range), or takes the host's plan (the
    /// general kernel's: a list of units, segments at least `n` events long).
    pub fn set_plan_on_device(&mut self, on: bool) {
        self.plan_on_device = on;
    }

    /// Whether the lean walk on the device's plan runs a thread per unit
    /// ([`k::walk_dfa_lanes()`], the default: many short units, [`LANE_UNITS_PER_THREAD`]
    /// per thread the device holds at once) or a warp per unit ([`k::walk_dfa()`]).
    pub fn set_walk_lanes(&mut self, on: bool) {
        self.lanes = on;
    }

    /// Whether the lean walk's answers are listed on the device ([`k::compact_rows()`],
    /// the default: the host copies each document's ids as they lie) or decoded from
    /// the rows of bits on the host.
    pub fn set_decode_on_device(&mut self, on: bool) {
        self.decode_on_device = on;
    }

    /// Whether the kernels set a query's bit in a document's row only where a load shows
    /// it unset (one load at the L2 instead of one atomic where many units of a document
    /// report the same queries) or always by an atomic OR (the default; the same
    /// answers). Measured on an H200 (the `paths` workload, 2048 paths of 5 nodes, 105k
    /// ids matched; the example `dfa_split`): the kernels took 0.113 ms checking first,
    /// 0.071 ms with atomics alone (the loads' round trips cost more than the atomics
    /// they save); the same at 10 nodes, where nothing matches.
    pub fn set_check_bits(&mut self, on: bool) {
        self.check_bits = on;
    }

    /// Whether the lean walk times its kernels by the device's clock
    /// ([`Phases::kernels`] and [`Phases::compact`]: three events recorded a call, and
    /// two waits for them) or not (the default: both zero). Measured on an H200 (the
    /// `paths` workload, the example `dfa_split`): the clock added 0.013-0.017 ms to a
    /// call of 0.075-0.22 ms.
    pub fn set_device_clock(&mut self, on: bool) {
        self.device_clock = on;
    }

    /// Threads of [`k::walk_dfa_lanes`] the device holds at once (asked once).
    fn lane_threads(&mut self) -> Result<usize, XmlError> {
        if self.lane_threads == 0 {
            let cfg = LaunchConfig {
                grid: [1, 1, 1],
                block: [LANE_BLOCK, 1, 1],
                shared_bytes: 0,
            };
            let blocks = self
                .dev
                .resident_blocks(&k::walk_dfa_lanes::KERNEL, cfg, 64)?;
            self.lane_threads = (blocks * LANE_BLOCK).max(1) as usize;
        }
        Ok(self.lane_threads)
    }

    /// Whether the loaded automaton runs the lean walk [`k::walk_dfa()`]: none of its leaf
    /// bundles reports to an accumulator, and [`Self::set_walk_only`] allows it.
    pub fn walks_only(&self) -> bool {
        self.walk_only && self.t.leaves_only
    }

    /// Most bytes of shared memory a block's accumulators may take (0 by default:
    /// always in global memory, where the L1 caches them); past it they go to global
    /// memory.
    pub fn set_shared_max(&mut self, bytes: u64) {
        self.shared_max = bytes;
    }

    /// How documents are cut into segments, each a warp's work: `Some(n)`, a document
    /// of more than `2n` events into segments of about `n` (cut between its root's
    /// children, so only the root is open across a cut; a document whose root has too
    /// few children stays whole); `Some(0)`, never; `None` (the default), `n` chosen
    /// for [`TARGET_UNITS`] warps a batch (the lean walk: [`WALK_UNITS_PER_WARP`] per warp
    /// the device holds at once), at least [`MIN_SEGMENT_EVENTS`].
    pub fn set_segment_events(&mut self, n: Option<usize>) {
        self.segment_events = n;
    }

    /// Most bytes of accumulators in global memory one launch may use (1 GiB by
    /// default): a batch of more units takes several launches, in order.
    pub fn set_launch_bytes(&mut self, bytes: u64) {
        self.launch_bytes = bytes;
    }

    /// Replaces the automaton (another query set, or a cache that grew), keeping the
    /// device and the batch buffers.
    pub fn load(&mut self, tables: &DfaTables) -> Result<(), XmlError> {
        self.t = Tables::upload(&self.dev, tables)?;
        Ok(())
    }

    /// The device it runs on.
    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// Where the last [`Self::filter_encoded`] spent its time.
    pub fn phases(&self) -> Phases {
        self.phases
    }

    /// How many documents the last [`Self::filter_encoded`] handed back (`None`): a
    /// stream of like documents that handed none back is unlikely to hand back the next
    /// batch's, so a caller may skip looking for them ahead ([`DfaTables::unfinished`]).
    pub fn handed_back(&self) -> usize {
        self.handed_back
    }

    /// Encodes documents (parsed with the query set's dictionary) for this engine: the
    /// paper's 1-byte events when every tag id of the tables fits 7 bits, else 2-byte
    /// ones (host work, like parsing), written straight into page-locked host memory
    /// with the other inputs the lean walk sends ([`EventBatch::encode_locked`]), so
    /// that a call copies them to the device as they lie, with no staging; in ordinary
    /// memory where the device refuses page-locked memory (the same answers, the call
    /// stages the batch then). The engine keeps the blocks of dropped batches for the
    /// next ones ([`EventBatch::encode_locked_in`]).
    pub fn encode(&self, docs: &[Document]) -> EventBatch {
        let narrow = self.t.tags <= NARROW_MAX_TAG as u32 + 1;
        EventBatch::encode_locked_in(docs, narrow, &self.dev, &self.pool)
            .unwrap_or_else(|_| EventBatch::encode(docs, narrow))
    }

    /// Query ids matched by each document, ascending; `None` for a document the frozen
    /// automaton cannot finish (a transition not built, or deeper than the stack), to
    /// be filtered on the CPU.
    pub fn filter(&mut self, docs: &[Document]) -> Result<Vec<Option<Matches>>, XmlError> {
        self.filter_encoded(&self.encode(docs))
    }

    /// [`Self::filter`] on an encoded batch (either event width, uploaded as it is):
    /// plans its units (documents, or segments of them: [`Self::set_segment_events`]),
    /// copies the events and the plan to the device (two copies), zeroes the outputs
    /// (one call), launches [`k::filter_dfa()`] over the units, as many a launch as have
    /// accumulators within 1 GiB, and [`k::close_roots()`] for the documents cut into
    /// segments, and reads the rows of answers and the documents' status back in one
    /// copy: three waits for the device a call.
    pub fn filter_encoded(&mut self, batch: &EventBatch) -> Result<Vec<Option<Matches>>, XmlError> {
        let out = self.filter_queued(batch);
        if out.is_err() {
            // Copies from the batch's page-locked memory may still be queued: wait for
            // them, so that the caller may drop the batch.
            let _ = self.dev.synchronize();
        }
        out
    }

    /// [`Self::filter_encoded`], whose copies from the batch's memory have all ended
    /// when it returns `Ok`.
    fn filter_queued(&mut self, batch: &EventBatch) -> Result<Vec<Option<Matches>>, XmlError> {
        let n_docs = batch.len();
        if n_docs == 0 {
            self.handed_back = 0;
            return Ok(Vec::new());
        }
        let mut clock = Instant::now();
        let mut lap = || {
            let now = Instant::now();
            let d = now - clock;
            clock = now;
            d
        };
        let walk_only = self.walks_only();
        if walk_only && self.plan_on_device {
            return self.filter_walk(batch);
        }
        let walk_warps = if walk_only { self.walk_warps()? } else { 0 };
        let dev = &self.dev;
        let words = self.t.ids.len().div_ceil(32).max(1);
        let units = if walk_only {
            // About two units per warp the device holds at once: the lean walk's waves
            // full, its last one too (a walk's time is its longest chain of loads).
            WALK_UNITS_PER_WARP * walk_warps
        } else {
            TARGET_UNITS
        };
        let seg = self
            .segment_events
            .unwrap_or_else(|| (batch.events() / units).max(MIN_SEGMENT_EVENTS));
        let (ins, at) = Units::plan(batch, seg).lay_out(&batch.doc_start);
        let (n_units, n_split) = (at.units, at.splits);
        // The lean walk keeps no accumulators: its segments report nothing to a root.
        let n_split = if walk_only { 0 } else { n_split };
        let cut = n_split > 0;
        let width = self.t.width as usize;
        let o = Outputs {
            status: n_docs * words,
            root_has: n_docs * (words + 1),
            roots: n_docs * (words + 2),
            len: n_docs * (words + 2) + if cut { n_docs * width } else { 1 },
        };
        let plan = lap();
        let narrow = batch.events.is_narrow();
        // Page-locked events go to the device as they lie; others through the staging.
        let locked = matches!(batch.events, EventWords::Locked(_));
        let (events, events8) = match batch.events.as_slice() {
            EventSlice::Wide(v) => {
                let bytes: &[u8] = bytemuck::cast_slice(v);
                let b = room(dev, &mut self.events, v.len())?;
                if locked {
                    dev.write(b, 0, v)?;
                } else {
                    stage_into(dev, &mut self.staging, bytes.len(), &[(0, bytes)], b, 0)?;
                }
                (b.dev_ptr(), DevPtr::null())
            }
            EventSlice::Narrow(v) => {
                let b = room(dev, &mut self.events8, v.len())?;
                if locked {
                    dev.write(b, 0, v)?;
                } else {
                    stage_into(dev, &mut self.staging, v.len(), &[(0, v)], b, 0)?;
                }
                (DevPtr::null(), b.dev_ptr())
            }
        };
        let ins = &*put(dev, &mut self.ins, &ins)?;
        let outs = room(dev, &mut self.outs, o.len)?;
        dev.zero(outs)?;
        let outs = &*outs;
        let upload = lap();
        let deepest = batch.depth.iter().copied().max().unwrap_or(0);
        let depth_cap = (deepest + 1).min(MAX_DEPTH);
        let per_warp = k::accumulator_bytes(1, depth_cap, self.t.width);
        let per_launch = (self.launch_bytes / per_warp).clamp(1, n_units as u64) as usize;
        // A block's accumulators in shared memory when they fit (one word of global
        // memory stands for them then).
        let block_bytes = per_warp * WARPS_PER_BLOCK as u64;
        let shared = block_bytes <= self.shared_max;
        let acc_words = if shared || walk_only {
            1
        } else {
            per_launch * (per_warp / 4) as usize
        };
        let accs = &*room(dev, &mut self.accs, acc_words)?;
        // A launch's units from `unit` (filter_dfa) or its cut documents from `cut`
        // (close_roots), `n` of them.
        let params = |unit: usize, cut: usize, n: usize| DfaParams {
            events,
            events8,
            doc_start: ins.dev_ptr(),
            unit_start: ins.dev_ptr_at(at.unit_start + unit),
            unit_doc: ins.dev_ptr_at(at.unit_doc + unit),
            split: ins.dev_ptr_at(at.split + cut),
            trans: self.t.trans.dev_ptr(),
            leaf: self.t.leaf.dev_ptr(),
            bundles: self.t.bundles.dev_ptr(),
            masks: self.t.masks.dev_ptr(),
            sparse_word: self.t.sparse_word.dev_ptr(),
            sparse_bits: self.t.sparse_bits.dev_ptr(),
            tops: self.t.tops.dev_ptr(),
            bundle_words: self
                .t
                .bundle_words
                .as_ref()
                .map_or(DevPtr::null(), |b| b.dev_ptr()),
            jout: self.t.jout.dev_ptr(),
            planes: self.t.planes.dev_ptr(),
            template: self.t.template.dev_ptr(),
            accs: accs.dev_ptr_mut(),
            roots: outs.dev_ptr_mut_at(o.roots),
            root_has: outs.dev_ptr_mut_at(o.root_has),
            matched: outs.dev_ptr_mut(),
            status: outs.dev_ptr_mut_at(o.status),
            n_units: n as u32,
            tags: self.t.tags,
            n_planes: self.t.n_planes,
            width: self.t.width,
            depth_cap,
            words_per_doc: words as u32,
            acc_shared: shared as u32,
            dense_bundles: (self.t.bundle_words.is_some() && self.dense) as u32,
            narrow_events: narrow as u32,
            plan_on_device: 0,
            n_docs: n_docs as u32,
            unit_base: DevPtr::null(),
            children_start: DevPtr::null(),
            children: DevPtr::null(),
            ids: DevPtr::null(),
            answers: DevPtrMut::null(),
            check_bits: self.check_bits as u32,
        };
        let cfg = |n: usize| LaunchConfig {
            grid: [(n as u32).div_ceil(WARPS_PER_BLOCK), 1, 1],
            block: [WARPS_PER_BLOCK * 32, 1, 1],
            shared_bytes: if shared { block_bytes as u32 } else { 0 },
        };
        let start = dev.mark()?;
        let mut first = 0;
        while first < n_units {
            let n = per_launch.min(n_units - first);
            if walk_only {
                // No accumulators: every unit in one launch.
                let n = n_units - first;
                let cfg = LaunchConfig {
                    shared_bytes: 0,
                    ..cfg(n)
                };
                k::walk_dfa::launch(dev, cfg, params(first, 0, n))?;
                first += n;
                continue;
            }
            k::filter_dfa::launch(dev, cfg(n), params(first, 0, n))?;
            first += n;
        }
        let mut first = 0;
        while first < n_split {
            let n = per_launch.min(n_split - first);
            k::close_roots::launch(dev, cfg(n), params(0, first, n))?;
            first += n;
        }
        let stop = dev.mark()?;
        // The rows and the status, one copy (it waits for the kernels).
        let mut rows = vec![0u32; o.root_has];
        dev.read_into(outs, 0, &mut rows)?;
        let kernels = Duration::from_secs_f64(dev.elapsed_ms(&start, &stop)? as f64 / 1e3);
        let read = lap();
        let (bits, done) = rows.split_at(o.status);
        let out = decode_rows(bits, done, words, &self.t.ids);
        self.handed_back = out.iter().filter(|m| m.is_none()).count();
        self.phases = Phases {
            plan,
            upload,
            kernels,
            compact: Duration::ZERO,
            read,
            decode: lap(),
            units: n_units,
            walk_only,
            lanes: false,
        };
        Ok(out)
    }
}

impl DfaEngine {
    /// [`Self::filter_encoded`] by the lean walk with the units planned on the device
    /// ([`k::walk_dfa`] with [`DfaParams::plan_on_device`]): the host counts each
    /// document's units (a pass over the documents' lengths); a batch encoded in
    /// page-locked memory ([`Self::encode`]) goes to the device as it lies (the events,
    /// the documents' starts, the points between their roots' children) in one copy and
    /// the unit counts in a second; any other batch is laid out end to end in the
    /// engine's page-locked memory first (on rayon's pool) and sent in one copy. The
    /// outputs are zeroed in one call (the answers' count by the walk), one launch walks
    /// every unit, one lists the answers, and they come back in one copy into
    /// page-locked memory: one wait for the device.
    fn filter_walk(&mut self, batch: &EventBatch) -> Result<Vec<Option<Matches>>, XmlError> {
        let mut clock = Instant::now();
        let mut lap = || {
            let now = Instant::now();
            let d = now - clock;
            clock = now;
            d
        };
        let n_docs = batch.len();
        let lanes = self.lanes;
        // Units wanted: a few per warp (or thread) the device holds at once.
        let (units, min_seg) = if lanes {
            (
                LANE_UNITS_PER_THREAD * self.lane_threads()?,
                MIN_LANE_SEGMENT_EVENTS,
            )
        } else {
            (WALK_UNITS_PER_WARP * self.walk_warps()?, MIN_SEGMENT_EVENTS)
        };
        let words = self.t.ids.len().div_ceil(32).max(1);
        let seg = self
            .segment_events
            .unwrap_or_else(|| (batch.events() / units).max(min_seg));
        let unit_base = walk_unit_base(batch, seg);
        let n_units = *unit_base.last().unwrap_or(&0) as usize;
        let plan = lap();
        let events = batch.events.as_bytes();
        let narrow = batch.events.is_narrow();
        let at = WalkInputs::new(events.len(), batch, &unit_base);
        let dev = &self.dev;
        let ins = room(dev, &mut self.walk_ins, at.bytes)?;
        let plan_bytes: &[u8] = bytemuck::cast_slice(&unit_base);
        // Encoded in page-locked memory as the walk reads it (its parts where the plan
        // puts them: a batch whose fields were changed after encoding is staged).
        let locked = match &batch.events {
            EventWords::Locked(l) if l.at().end == at.unit_base => Some(l),
            _ => None,
        };
        if let Some(l) = locked {
            // One copy as it lies, and the plan from the engine's own page-locked
            // memory in a second.
            dev.write(ins, 0, l.bytes())?;
            stage_into(
                dev,
                &mut self.plan_host,
                plan_bytes.len(),
                &[(0, plan_bytes)],
                ins,
                at.unit_base,
            )?;
        } else {
            stage_into(
                dev,
                &mut self.staging,
                at.bytes,
                &[
                    (0, events),
                    (at.doc_start, bytemuck::cast_slice(&batch.doc_start)),
                    (
                        at.children_start,
                        bytemuck::cast_slice(batch.children_start()),
                    ),
                    (at.children, bytemuck::cast_slice(batch.children())),
                    (at.unit_base, plan_bytes),
                ],
                ins,
                0,
            )?;
        }
        let ins = &*ins;
        let status = n_docs * words;
        let out_len = n_docs * (words + 1);
        let outs = room(dev, &mut self.outs, out_len)?;
        dev.zero(outs)?;
        let outs = &*outs;
        let upload = lap();
        // The answers listed on the device when the worst case fits.
        let worst = n_docs * self.t.ids.len();
        let listed = self.decode_on_device && 1 + 2 * n_docs + worst <= ANSWERS_MAX;
        if listed {
            // Its count is zeroed by the walk (nothing else needs zeroing).
            room(dev, &mut self.answers, 1 + 2 * n_docs + worst)?;
        }
        let answers = match (&self.answers, listed) {
            (Some(a), true) => a.dev_ptr_mut(),
            _ => DevPtrMut::null(),
        };
        let upload = upload + lap();
        let deepest = batch.depth.iter().copied().max().unwrap_or(0);
        let words_at = |off: usize| ins.dev_ptr_at(off).cast::<u32>();
        let params = DfaParams {
            events: if narrow {
                DevPtr::null()
            } else {
                ins.dev_ptr().cast::<u16>()
            },
            events8: if narrow {
                ins.dev_ptr()
            } else {
                DevPtr::null()
            },
            doc_start: words_at(at.doc_start),
            unit_start: DevPtr::null(),
            unit_doc: DevPtr::null(),
            split: DevPtr::null(),
            trans: self.t.trans.dev_ptr(),
            leaf: self.t.leaf.dev_ptr(),
            bundles: self.t.bundles.dev_ptr(),
            masks: self.t.masks.dev_ptr(),
            sparse_word: self.t.sparse_word.dev_ptr(),
            sparse_bits: self.t.sparse_bits.dev_ptr(),
            tops: self.t.tops.dev_ptr(),
            bundle_words: DevPtr::null(),
            jout: self.t.jout.dev_ptr(),
            planes: self.t.planes.dev_ptr(),
            template: self.t.template.dev_ptr(),
            accs: DevPtrMut::null(),
            roots: DevPtrMut::null(),
            root_has: DevPtrMut::null(),
            matched: outs.dev_ptr_mut(),
            status: outs.dev_ptr_mut_at(status),
            n_units: n_units as u32,
            tags: self.t.tags,
            n_planes: self.t.n_planes,
            width: self.t.width,
            depth_cap: (deepest + 1).min(MAX_DEPTH),
            words_per_doc: words as u32,
            acc_shared: 0,
            dense_bundles: 0,
            narrow_events: narrow as u32,
            plan_on_device: 1,
            n_docs: n_docs as u32,
            unit_base: words_at(at.unit_base),
            children_start: words_at(at.children_start),
            children: words_at(at.children),
            ids: self.t.ids_dev.dev_ptr(),
            answers,
            check_bits: self.check_bits as u32,
        };
        // The device's clock around the kernels, when kept: three events recorded a
        // call (the same ones each call).
        let clock = self.device_clock;
        let mut marks = std::mem::take(&mut self.marks);
        let mark = |slot: &mut Option<gpu_kernels::Mark>| -> Result<(), XmlError> {
            match (clock, slot.as_mut()) {
                (false, _) => *slot = None,
                (true, Some(m)) => dev.remark(m)?,
                (true, None) => *slot = Some(dev.mark()?),
            }
            Ok(())
        };
        mark(&mut marks[0])?;
        if lanes {
            let cfg = LaunchConfig {
                grid: [(n_units as u32).div_ceil(LANE_BLOCK), 1, 1],
                block: [LANE_BLOCK, 1, 1],
                shared_bytes: 0,
            };
            k::walk_dfa_lanes::launch(dev, cfg, params)?;
        } else {
            let cfg = LaunchConfig {
                grid: [(n_units as u32).div_ceil(WARPS_PER_BLOCK), 1, 1],
                block: [WARPS_PER_BLOCK * 32, 1, 1],
                shared_bytes: 0,
            };
            k::walk_dfa::launch(dev, cfg, params)?;
        }
        if listed {
            mark(&mut marks[1])?;
            let cfg = LaunchConfig {
                grid: [(n_docs as u32).div_ceil(WARPS_PER_BLOCK), 1, 1],
                block: [WARPS_PER_BLOCK * 32, 1, 1],
                shared_bytes: 0,
            };
            k::compact_rows::launch(dev, cfg, params)?;
        } else {
            marks[1] = None;
        }
        mark(&mut marks[2])?;
        // Pool threads woken while the device works, to share the answers' decoding,
        // where it is likely heavy: the last batch listed many ids (or this is the
        // first), or the rows are long.
        let heavy = if listed {
            self.answer_cap == 0 || self.answer_cap >= PARALLEL_DECODE_IDS
        } else {
            n_docs * words >= PARALLEL_DECODE_WORDS
        };
        let helpers = if heavy {
            rayon::current_num_threads().saturating_sub(1)
        } else {
            0
        };
        let crew = Crew::gather(helpers, CREW_WAIT);
        if listed {
            let host = (plan, upload);
            return self.read_listed(n_docs, worst, marks, host, n_units, crew, lap);
        }
        // The rows and the status, one copy into page-locked memory (it waits for the
        // kernel).
        if self.back.as_ref().is_none_or(|b| b.len() < out_len) {
            self.back = None; // free the old one first
            self.back = Some(dev.alloc_host(out_len.next_power_of_two())?);
        }
        let back = self.back.as_mut().expect("allocated above");
        dev.read_into(outs, 0, &mut back.as_mut_slice()[..out_len])?;
        let kernels = device_time(dev, &marks[0], &marks[2])?;
        self.marks = marks;
        let read = lap();
        let rows = &back.as_slice()[..out_len];
        let (bits, done) = rows.split_at(status);
        let ids = &self.t.ids;
        let heavy = n_docs * words >= PARALLEL_DECODE_WORDS;
        let out = by_documents(n_docs, heavy, crew, |d| {
            (done[d] == k::DONE).then(|| decode_row(&bits[d * words..(d + 1) * words], ids))
        });
        self.handed_back = out.iter().filter(|m| m.is_none()).count();
        self.phases = Phases {
            plan,
            upload,
            kernels,
            compact: Duration::ZERO,
            read,
            decode: lap(),
            units: n_units,
            walk_only: true,
            lanes,
        };
        Ok(out)
    }
}

impl DfaEngine {
    /// The end of [`Self::filter_walk`] when [`k::compact_rows`] listed the answers:
    /// the count, each document's place and the first `answer_cap` ids in one copy back
    /// into page-locked memory (one wait), the rest, if the batch had more, in a second;
    /// then each document's ids copied as they lie.
    #[allow(clippy::too_many_arguments)]
    fn read_listed(
        &mut self,
        n_docs: usize,
        worst: usize,
        marks: [Option<gpu_kernels::Mark>; 3],
        host: (Duration, Duration),
        n_units: usize,
        crew: Crew,
        mut lap: impl FnMut() -> Duration,
    ) -> Result<Vec<Option<Matches>>, XmlError> {
        let dev = &self.dev;
        let head = 1 + 2 * n_docs;
        let cap = if self.answer_cap == 0 {
            FIRST_ANSWERS_PER_DOC * n_docs
        } else {
            self.answer_cap
        }
        .min(worst);
        let need = head + worst;
        if self.back.as_ref().is_none_or(|b| b.len() < need) {
            self.back = None; // free the old one first
            self.back = Some(dev.alloc_host(need.next_power_of_two())?);
        }
        let back = self.back.as_mut().expect("allocated above");
        let answers = self.answers.as_ref().expect("allocated by the caller");
        dev.read_into(answers, 0, &mut back.as_mut_slice()[..head + cap])?;
        let total = back.as_slice()[0] as usize;
        if total > cap {
            let rest = total.min(worst);
            dev.read_into(
                answers,
                head + cap,
                &mut back.as_mut_slice()[head + cap..head + rest],
            )?;
        }
        let (kernels, compact) = (
            device_time(dev, &marks[0], &marks[2])?,
            device_time(dev, &marks[1], &marks[2])?,
        );
        self.marks = marks;
        let read = lap();
        self.answer_cap = total + total / 4 + 64;
        let all = &back.as_slice()[..head + total.min(worst)];
        let (places, ids) = all[1..].split_at(2 * n_docs);
        let listed = |d: usize| -> Result<Option<Matches>, XmlError> {
            let (at, n) = (places[2 * d] as usize, places[2 * d + 1]);
            if n == k::HANDED_BACK {
                return Ok(None);
            }
            let Some(m) = ids.get(at..at + n as usize) else {
                return Err(gpu_kernels::GpuError::Kernel {
                    kernel: "compact_rows",
                    message: format!("a document's {n} ids from {at} past the {total} listed"),
                }
                .into());
            };
            let mut m = m.to_vec();
            if !m.is_sorted() {
                m.sort_unstable();
            }
            Ok(Some(m))
        };
        let heavy = total >= PARALLEL_DECODE_IDS;
        let out = by_documents(n_docs, heavy, crew, listed)
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        self.handed_back = out.iter().filter(|m| m.is_none()).count();
        self.phases = Phases {
            plan: host.0,
            upload: host.1,
            kernels,
            compact,
            read,
            decode: lap(),
            units: n_units,
            walk_only: true,
            lanes: self.lanes,
        };
        Ok(out)
    }
}

/// The device's time from `a` to `b` (zero when either was not kept).
fn device_time(
    dev: &Device,
    a: &Option<gpu_kernels::Mark>,
    b: &Option<gpu_kernels::Mark>,
) -> Result<Duration, XmlError> {
    Ok(match (a, b) {
        (Some(a), Some(b)) => Duration::from_secs_f64(dev.elapsed_ms(a, b)? as f64 / 1e3),
        _ => Duration::ZERO,
    })
}

/// Ids a document brings in the first copy back of an engine's first batch (later
/// batches: a quarter over the last one's count); a batch with more reads the rest
/// in a second copy.
const FIRST_ANSWERS_PER_DOC: usize = 8;

/// Most words of [`k::compact_rows`]' output (its worst case: every query matched by
/// every document): past it the answers are decoded from the rows on the host.
const ANSWERS_MAX: usize = 1 << 24;

/// Each document's first unit in the device's plan of the lean walk (documents + 1,
/// from 0): a document of `n` events whose root has children gets `n / seg` units
/// (at most one per point between its root's children) when `n > 2 * seg`, any other
/// one unit ([`k::walk_dfa`] finds each unit's range between the points).
fn walk_unit_base(batch: &EventBatch, seg: usize) -> Vec<u32> {
    let (starts, kids) = (&batch.doc_start, batch.children_start());
    let mut base = Vec::with_capacity(batch.len() + 1);
    let mut total = 0u32;
    base.push(0);
    for d in 0..batch.len() {
        let n = (starts[d + 1] - starts[d]) as usize;
        let points = (kids[d + 1] - kids[d]) as usize;
        let units = if seg > 0 && points > 0 && n > 2 * seg {
            (n / seg).min(points).max(1)
        } else {
            1
        };
        total += units as u32;
        base.push(total);
    }
    base
}

/// Byte offsets of the lean walk's inputs in its one buffer: the events first, then,
/// each 4-byte aligned, the documents' starts, where their points start, the points,
/// and the units' bases.
struct WalkInputs {
    doc_start: usize,
    children_start: usize,
    children: usize,
    unit_base: usize,
    bytes: usize,
}

impl WalkInputs {
    /// The offsets of a page-locked batch's block ([`LockedAt`]), and the plan after it.
    fn new(event_bytes: usize, batch: &EventBatch, unit_base: &[u32]) -> Self {
        let at = LockedAt::new(event_bytes, batch.len(), batch.children().len());
        WalkInputs {
            doc_start: at.doc_start,
            children_start: at.children_start,
            children: at.children,
            unit_base: at.end,
            bytes: at.end + 4 * unit_base.len(),
        }
    }
}

/// Each document's answer from its row of result bits and its status: the query ids
/// of its row when the device finished it, `None` when it handed it back.
fn decode_rows(bits: &[u32], done: &[u32], words: usize, ids: &[u32]) -> Vec<Option<Matches>> {
    let decode = |(row, &s): (&[u32], &u32)| (s == k::DONE).then(|| decode_row(row, ids));
    let found: usize = bits.iter().map(|w| w.count_ones() as usize).sum();
    if found >= PARALLEL_DECODE_IDS && done.len() > 1 {
        // 500 documents matching most of 2048 queries took 1.1-1.5 ms on one thread of
        // the H100's host, more than the kernel.
        bits.par_chunks(words).zip(done).map(decode).collect()
    } else {
        bits.chunks(words).zip(done).map(decode).collect()
    }
}

/// `one(d)` for each of `n` documents, in order: on the calling thread and `crew` in
/// parts of [`DECODE_PART`] documents when the work is `heavy`, else on the calling
/// thread alone (the crew dismissed).
fn by_documents<R: Send>(
    n: usize,
    heavy: bool,
    crew: Crew,
    one: impl Fn(usize) -> R + Sync,
) -> Vec<R> {
    if !heavy || n < 2 * DECODE_PART || crew.helpers() == 0 {
        drop(crew);
        return (0..n).map(one).collect();
    }
    let parts: Vec<std::ops::Range<usize>> = (0..n)
        .step_by(DECODE_PART)
        .map(|a| a..(a + DECODE_PART).min(n))
        .collect();
    crew.map(parts, |_, r| r.map(&one).collect::<Vec<R>>())
        .into_iter()
        .flatten()
        .collect()
}

/// Documents a part of [`by_documents`] decodes.
const DECODE_PART: usize = 32;

/// How long the pool threads gathered before a device wait spin for the answers
/// ([`Crew::gather`]): longer than Fig. 9's whole call.
const CREW_WAIT: Duration = Duration::from_millis(2);

/// Words of rows from which they are decoded on the gathered crew.
const PARALLEL_DECODE_WORDS: usize = 1 << 14;

/// Warps a batch is cut for when [`DfaEngine::set_segment_events`] is left to choose:
/// a few per scheduler of an H100 (132 SMs of 4), so that a batch of a few hundred
/// documents, or one document, keeps more than one warp per scheduler walking.
pub const TARGET_UNITS: usize = 8192;

/// Units of the lean walk per warp the device holds at once, when
/// [`DfaEngine::set_segment_events`] is left to choose.
pub const WALK_UNITS_PER_WARP: usize = 2;

/// Units of the lean walk a thread per unit ([`k::walk_dfa_lanes()`]) per thread the
/// device holds at once, when [`DfaEngine::set_segment_events`] is left to choose (a
/// batch has fewer points between its roots' children than that on Fig. 9's workload:
/// every child is a unit there).
pub const LANE_UNITS_PER_THREAD: usize = 2;

/// Threads per block of [`k::walk_dfa_lanes`].
const LANE_BLOCK: u32 = 128;

/// The shortest segment the thread-per-unit walk cuts when left to choose.
pub const MIN_LANE_SEGMENT_EVENTS: usize = 8;

/// The shortest segment [`DfaEngine`] cuts when left to choose.
pub const MIN_SEGMENT_EVENTS: usize = 32;

/// A batch's units of work, a warp each: `start` (one more than units) into the batch's
/// events, tiling them, and each unit's document (with [`k::SEGMENT`] for a segment,
/// which the kernel keeps inside its document's root); `split` lists the documents cut
/// into segments.
#[derive(Debug, Default, PartialEq, Eq)]
struct Units {
    start: Vec<u32>,
    doc: Vec<u32>,
    split: Vec<u32>,
}

impl Units {
    /// Each document of the batch whole, or, past `2 * seg` events (`seg > 0`), cut into
    /// segments of at least `seg` events between its root's children (the kernels
    /// replay the root's open and close). A document that is not one root element, or
    /// whose root has too few children to cut, stays whole. The points between the
    /// root's children come with the batch ([`EventBatch::children_of`]): the plan reads
    /// a few per document, not its events.
    fn plan(batch: &EventBatch, seg: usize) -> Self {
        let n = batch.len();
        if n < PARALLEL_PLAN_DOCS {
            return Self::plan_docs(batch, seg, 0..n);
        }
        // Runs of documents planned on rayon's pool, then joined in order (500
        // documents took 0.1 ms on one thread of the H100's host).
        let runs: Vec<Units> = (0..n.div_ceil(PLAN_RUN_DOCS))
            .into_par_iter()
            .map(|r| {
                Self::plan_docs(
                    batch,
                    seg,
                    r * PLAN_RUN_DOCS..((r + 1) * PLAN_RUN_DOCS).min(n),
                )
            })
            .collect();
        let mut u = Units::default();
        for r in runs {
            u.start.extend_from_slice(&r.start[..r.start.len() - 1]);
            u.doc.extend(r.doc);
            u.split.extend(r.split);
        }
        u.start.push(*batch.doc_start.last().unwrap_or(&0));
        u
    }

    /// [`Self::plan`] of the documents `docs` of the batch: their units, the last
    /// `start` the end of the last document.
    fn plan_docs(batch: &EventBatch, seg: usize, docs: std::ops::Range<usize>) -> Self {
        let doc_start = &batch.doc_start;
        let mut u = Units::default();
        let mut cuts = Vec::new();
        let end = doc_start.get(docs.end).copied().unwrap_or(0);
        for d in docs {
            let a = doc_start[d];
            let n = (doc_start[d + 1] - a) as usize;
            cuts.clear();
            if seg > 0 && n > 2 * seg {
                select_cuts(batch.children_of(d), n, seg, &mut cuts);
            }
            if cuts.len() < 3 {
                u.start.push(a);
                u.doc.push(d as u32);
                continue;
            }
            u.split.push(d as u32);
            // The first segment starts at the root's open and the last ends at its
            // close (the kernel steps inside them): the units tile the batch.
            u.start.push(a);
            u.doc.push(d as u32 | k::SEGMENT);
            for &c in &cuts[1..cuts.len() - 1] {
                u.start.push(a + c);
                u.doc.push(d as u32 | k::SEGMENT);
            }
        }
        u.start.push(end);
        u
    }

    /// The kernels' inputs other than the events in one array, for one copy: the
    /// batch's `doc_start`, then the units' starts and documents, then the documents
    /// cut into segments ([`Inputs`]).
    fn lay_out(self, doc_start: &[u32]) -> (Vec<u32>, Inputs) {
        let at = Inputs {
            unit_start: doc_start.len(),
            unit_doc: doc_start.len() + self.start.len(),
            split: doc_start.len() + self.start.len() + self.doc.len(),
            units: self.doc.len(),
            splits: self.split.len(),
        };
        let mut v = Vec::with_capacity(at.split + self.split.len());
        for part in [doc_start, &self.start, &self.doc, &self.split] {
            v.extend_from_slice(part);
        }
        (v, at)
    }
}

/// Documents of a batch from which [`Units::plan`] runs on rayon's pool, in runs of
/// [`PLAN_RUN_DOCS`].
const PARALLEL_PLAN_DOCS: usize = 256;
const PLAN_RUN_DOCS: usize = 64;

/// `parts` (each `(offset, bytes)`, offsets ascending, not overlapping) copied into the
/// first `len` bytes of the page-locked host buffer in `slot` (grown to a power of two
/// when short), then onto the device into `dst` from its byte `dst_at` (stream-ordered: the
/// kernels launched after see them). Large inputs are staged on rayon's pool in pieces
/// of [`STAGE_PIECE`], region by region ([`STAGE_REGION`] bytes): each region's copy to
/// the device is queued as soon as it is staged, so the bus carries one region while
/// the host stages the next. The device copies page-locked bytes at the bus's speed,
/// where bytes of pageable memory go through the driver's own staging on the calling
/// thread. Gaps between parts carry whatever the buffer held. `len` and `dst_at` are
/// multiples of `T`'s size, and `dst_at + len` within `dst`.
fn stage_into<T: bytemuck::Pod>(
    dev: &Device,
    slot: &mut Option<HostBuffer<u8>>,
    len: usize,
    parts: &[(usize, &[u8])],
    dst: &mut Buffer<T>,
    dst_at: usize,
) -> Result<(), XmlError> {
    if slot.as_ref().is_none_or(|b| b.len() < len.max(1)) {
        *slot = None; // free the old one first
        *slot = Some(dev.alloc_host(len.max(1).next_power_of_two())?);
    }
    let buf = slot.as_mut().expect("allocated above");
    let size = std::mem::size_of::<T>();
    // Regions are whole pieces, so every region but the last starts and ends on a
    // multiple of `T`'s size; the last ends at `len`.
    let region = if len >= PARALLEL_STAGE_BYTES {
        STAGE_REGION
    } else {
        len.max(1)
    };
    let mut at = 0;
    for to in buf.as_mut_slice()[..len].chunks_mut(region) {
        let end = at + to.len();
        // The parts' bytes that fall in [at, end), as (destination, source) pairs.
        let mut jobs: Vec<(&mut [u8], &[u8])> = Vec::new();
        let (mut rest, mut rest_at) = (&mut *to, at);
        for &(off, src) in parts {
            let (lo, hi) = (off.max(at), (off + src.len()).min(end));
            if lo >= hi {
                continue;
            }
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(lo - rest_at);
            let (into, tail) = tail.split_at_mut(hi - lo);
            jobs.push((into, &src[lo - off..hi - off]));
            (rest, rest_at) = (tail, hi);
        }
        if len >= PARALLEL_STAGE_BYTES {
            // The caller copies from the first moment, and pool threads join as they
            // wake (handed to rayon's pool as a job, the staging of Fig. 9's batch,
            // about 1 MB, took 0.08 ms on the H200's 16 cores: most likely waiting for
            // sleeping threads, as `gpu_kernels::crew` measured for the DDM engine's
            // staging).
            let pieces: Vec<(&mut [u8], &[u8])> = jobs
                .into_iter()
                .flat_map(|(to, from)| to.chunks_mut(STAGE_PIECE).zip(from.chunks(STAGE_PIECE)))
                .collect();
            let helpers = rayon::current_num_threads().saturating_sub(1);
            claim_map(pieces, helpers, |_, (to, from)| to.copy_from_slice(from));
        } else {
            jobs.into_iter()
                .for_each(|(to, from)| to.copy_from_slice(from));
        }
        dev.write(dst, (dst_at + at) / size, bytemuck::cast_slice::<u8, T>(to))?;
        at = end;
    }
    Ok(())
}

/// Bytes from which [`stage_into`] copies on rayon's pool, a region at a time.
const PARALLEL_STAGE_BYTES: usize = 1 << 18;

/// Bytes each task of [`stage_into`] copies.
const STAGE_PIECE: usize = 1 << 16;

/// Bytes of a region of [`stage_into`]: staged on the pool, then queued for the device
/// while the next is staged (a whole number of pieces).
const STAGE_REGION: usize = 8 * STAGE_PIECE;

/// Events of a batch from which [`DfaTables::unfinished`] walks it on rayon's pool.
const PARALLEL_BATCH_EVENTS: usize = 1 << 16;

/// Query ids a batch's answers hold from which they are decoded on rayon's pool (a
/// few microseconds of work a thread, about 2 ns an id on one).
const PARALLEL_DECODE_IDS: usize = 1 << 14;

/// Into `cuts`, the cut points (offsets into one document of `n` events) of its
/// segments, chosen among the points between its root's children (`points`, ascending;
/// any out of order or past the end is skipped), at least `seg` events apart: the first
/// is 1 (after the root's open), the last `n - 1` (the root's close); nothing when there
/// are no points (not one root element).
fn select_cuts(points: &[u32], n: usize, seg: usize, cuts: &mut Vec<u32>) {
    if points.is_empty() {
        return;
    }
    let (n, seg) = (n as u32, seg as u32);
    cuts.push(1);
    let mut last = 1;
    for &at in points {
        if at >= last + seg && at + seg < n {
            cuts.push(at);
            last = at;
        }
    }
    cuts.push(n - 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parts that straddle the staging's regions (and gaps between them) reach the
    /// device's buffer byte for byte, region by region, as wide and as narrow words.
    #[test]
    fn staged_parts_reach_the_device_across_regions() {
        let dev = Device::emulator();
        let pattern = |n: usize, k: u8| {
            (0..n)
                .map(|i| (i as u8).wrapping_mul(31) ^ k)
                .collect::<Vec<u8>>()
        };
        let a = pattern(STAGE_REGION + 12_346, 1);
        let b = pattern(3 * STAGE_PIECE + 10, 2);
        let c = pattern(2 * STAGE_REGION + 6, 3);
        let (b_at, c_at) = (a.len() + 2, a.len() + 2 + b.len() + 4 * STAGE_PIECE);
        let len = c_at + c.len();
        let parts = [(0, &a[..]), (b_at, &b[..]), (c_at, &c[..])];
        let mut slot = None;
        let mut narrow = dev.alloc::<u8>(len).expect("emulator memory");
        stage_into(&dev, &mut slot, len, &parts, &mut narrow, 0).expect("staged");
        let mut wide = dev.alloc::<u16>(len / 2).expect("emulator memory");
        stage_into(&dev, &mut slot, len, &parts, &mut wide, 0).expect("staged");
        let wide: Vec<u8> = bytemuck::cast_slice(&dev.read(&wide).expect("read")).to_vec();
        for got in [dev.read(&narrow).expect("read"), wide] {
            for (at, part) in parts {
                assert!(got[at..at + part.len()] == *part, "the part at {at}");
            }
        }
        // A small input: one region, on the calling thread.
        let mut small = dev.alloc::<u8>(5).expect("emulator memory");
        stage_into(&dev, &mut slot, 5, &[(1, &a[..4])], &mut small, 0).expect("staged");
        assert_eq!(dev.read(&small).expect("read")[1..], a[..4]);
        // Into the buffer from an offset (whole words), the words before it untouched.
        let mut words = dev.upload(&[7u32; 6]).expect("emulator memory");
        stage_into(&dev, &mut slot, 8, &[(0, &a[..8])], &mut words, 12).expect("staged");
        let got = dev.read(&words).expect("read");
        assert_eq!(got[..3], [7; 3]);
        assert_eq!(bytemuck::cast_slice::<u32, u8>(&got[3..5]), &a[..8]);
        assert_eq!(got[5], 7);
    }

    /// The tables of the module's example: `/a` only.
    fn slash_a() -> DfaTables {
        let tags = 2;
        let mut trans = vec![NO_STATE; 3 * tags];
        trans[tags + 1] = 2;
        let mut leaf = vec![0; 3 * tags];
        leaf[tags + 1] = 1;
        DfaTables {
            tags: tags as u32,
            trans,
            leaf,
            bundles: vec![[0; 4], [0, 0, 0, 1]],
            masks: vec![[0; 4]; 3],
            sparse: vec![],
            tops: vec![0],
            jout: vec![],
            planes: vec![],
            template: vec![0],
            ids: vec![0],
        }
    }

    /// `<r><a/><b><c/></b><a/></r>`, tags r=1, a=2, b=3, c=4.
    fn small_doc() -> Document {
        let (o, c) = (Event::open, Event::close);
        let events = vec![o(1), o(2), c(2), o(3), o(4), c(4), c(3), o(2), c(2), c(1)];
        Document::from_events(events, 0).expect("well nested")
    }

    /// The cut points of one document cut into segments of `seg`+ events.
    fn cuts(doc: &Document, seg: usize) -> Vec<u32> {
        let batch = EventBatch::encode(std::slice::from_ref(doc), false);
        let mut cuts = Vec::new();
        select_cuts(batch.children_of(0), doc.events.len(), seg, &mut cuts);
        cuts
    }

    #[test]
    fn documents_are_cut_between_their_roots_children_and_the_units_tile_the_batch() {
        let doc = small_doc();
        // Every child of the root: after the root's open, after `a`, after `b`.
        assert_eq!(cuts(&doc, 1), vec![1, 3, 7, 9]);
        // Segments of at least 3 events: `a b` (6) would leave `a` (2) alone, so one.
        assert_eq!(cuts(&doc, 3), vec![1, 9]);
        assert_eq!(cuts(&doc, 2), vec![1, 3, 7, 9]);
        // Not one root element: a second root follows.
        let mut two = doc.events.clone();
        two.extend_from_slice(&[Event::open(5), Event::close(5)]);
        assert!(cuts(&Document::from_events(two, 0).expect("nested"), 1).is_empty());
        // Two documents, the first cut (its units start at its root's open), the
        // second too short.
        let (o, c) = (Event::open, Event::close);
        let second = Document::from_events(vec![o(1), o(2), c(2), c(1)], 0).expect("nested");
        let batch = EventBatch::encode(&[doc, second], false);
        assert_eq!(batch.doc_start, vec![0, 10, 14]);
        let u = Units::plan(&batch, 1);
        let seg = k::SEGMENT;
        assert_eq!(u.start, vec![0, 3, 7, 10, 14]);
        assert_eq!(u.doc, vec![seg, seg, seg, 1]);
        assert_eq!(u.split, vec![0]);
        assert_eq!(Units::plan(&batch, 0).start, vec![0, 10, 14]);
    }

    #[test]
    fn a_large_batch_is_planned_in_runs_on_the_pool_as_on_one_thread() {
        // Documents of 1 to 4 children under the root, some not cut at all.
        let (o, c) = (Event::open, Event::close);
        let docs: Vec<Document> = (0..PARALLEL_PLAN_DOCS + 37)
            .map(|i| {
                let mut ev = vec![o(1)];
                for k in 0..=(i % 4) {
                    ev.extend_from_slice(&[o(2 + k as u16), o(6), c(6), c(2 + k as u16)]);
                }
                ev.push(c(1));
                Document::from_events(ev, 0).expect("well nested")
            })
            .collect();
        let batch = EventBatch::encode(&docs, true);
        for seg in [0, 1, 3, 5] {
            let pooled = Units::plan(&batch, seg);
            assert_eq!(
                pooled,
                Units::plan_docs(&batch, seg, 0..docs.len()),
                "segments of {seg}+"
            );
            assert_eq!(pooled.start.len(), pooled.doc.len() + 1);
            let (flat, at) = pooled.lay_out(&batch.doc_start);
            assert_eq!(&flat[..at.unit_start], &batch.doc_start[..]);
            assert_eq!(flat.len(), at.split + at.splits);
            assert_eq!(at.unit_doc - at.unit_start, at.units + 1);
        }
        assert!(
            !Units::plan(&batch, 1).split.is_empty(),
            "some documents cut"
        );
    }

    #[test]
    fn answers_made_on_the_crew_come_in_the_documents_order() {
        for (n, heavy) in [
            (0, true),
            (5, true),
            (200, true),
            (200, false),
            (1000, true),
        ] {
            let crew = Crew::gather(3, Duration::from_millis(5));
            let got = by_documents(n, heavy, crew, |d| (d, d * 7 % 13));
            let want: Vec<_> = (0..n).map(|d| (d, d * 7 % 13)).collect();
            assert_eq!(got, want, "{n} documents, heavy {heavy}");
        }
    }

    #[test]
    fn tables_whose_indices_leave_their_arrays_are_refused_before_any_upload() {
        assert!(slash_a().check().is_ok());
        let mut bad: Vec<(&str, DfaTables)> = Vec::new();
        let mut t = slash_a();
        t.trans[0] = 3; // a state past the last
        bad.push(("transition", t));
        let mut t = slash_a();
        t.leaf[1] = 2; // a bundle past the last
        bad.push(("leaf", t));
        let mut t = slash_a();
        t.bundles[1] = [0, 1, 0, 1]; // a span past `sparse`
        bad.push(("bundle span", t));
        let mut t = slash_a();
        t.tops[0] = 1; // a query past the last
        bad.push(("query", t));
        let mut t = slash_a();
        t.masks.pop(); // a state without masks
        bad.push(("masks", t));
        let mut t = slash_a();
        t.sparse = vec![(0, 1)];
        t.masks[2] = [0, 1, 0, 0]; // an active join node that does not exist
        bad.push(("join node", t));
        let mut t = slash_a();
        t.planes = vec![(0, 64)]; // a plane past the accumulator's one word
        bad.push(("plane", t));
        for (what, t) in bad {
            assert!(
                matches!(t.check(), Err(XmlError::BadTables { .. })),
                "{what} accepted"
            );
            assert!(
                DfaEngine::new(Device::emulator(), &t).is_err(),
                "{what} uploaded"
            );
        }
    }
}
