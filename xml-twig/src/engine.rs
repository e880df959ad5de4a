//! The filtering engine: one host driver for the push/pop stack kernels (§4.2, Alg. 1),
//! on the GPU or on the emulator (`Device` decides; the code is the same).
//!
//! [`Engine::new`] packs the queries into blocks and uploads the personalities once (they
//! change only with the query set, §4.3). [`Engine::filter`] encodes a batch of
//! documents into one event array, uploads it, runs one launch whose grid is
//! (query groups x documents) — every block filters one query group against one
//! document, so many documents are in flight at once (§4.4's inter-document parallelism,
//! as one launch instead of one CUDA stream per document) — and reads back one result
//! bit per (document, query).
//!
//! Three ways to run the same recurrences (all checked against the brute-force matcher
//! and the NFA by the property tests):
//!
//! - [`KernelKind::Block`], the paper's kernel: blocks of 256 columns, merged stack and
//!   staged events in shared memory, a block barrier after every event.
//! - [`KernelKind::Warp`] (the default via `Auto` when every query has at most 31 nodes):
//!   a query group per warp; stack tops travel by shuffle and vote, so no barrier and no
//!   shared-memory traffic between columns; warps run independently. It walks a run
//!   of sibling leaf elements (each an open, then its close at once) as one step, and
//!   each step as straight-line code: one 1 MB DBLP document (70,160 events) takes
//!   1.3 ms against the block kernel's 12.8 ms on an H100 (`examples/kernel_sweep.rs`).
//! - [`Engine::filter_segmented`] (beyond the paper): one document cut into segments
//!   filtered in parallel, then composed by a second kernel.
//!
//! Stack depth: the merged stack holds `max_depth + 1` levels of the deepest document of
//! the batch. A document too deep for [`EngineConfig::max_shared_bytes`] is refused
//! with [`XmlError::DocumentTooDeep`] before anything runs; callers may fall back to a
//! CPU filter for it (the `xml filter` command does).
//!
//! Choices where the paper is silent:
//!
//! - **Pop-stack fields.** Table 3 gives the pop half two bits, "from descendant" and
//!   "from nested paths". Here a `/` column reports into pop childMatch and a `//` column
//!   into pop descMatch (carried down level by level, Alg. 1 lines 15-16); a split node
//!   ANDs the reports of its children (§4.6's childrenMatch), which sit in consecutive
//!   columns, so it reads them instead of having them written into an array of its own:
//!   the same data without a second copy, and still one writer per entry, no atomics.
//!   The push stack's prefix test prunes; the pop side alone decides the twig (so a
//!   node's match at an element requires its whole sub-twig below that element, which is
//!   what makes the filtering holistic, Fig. 4).
//! - **Tags.** Ids come from the queries' tags only; every other element name becomes
//!   id 0, which only `*` matches. So the paper's 7-bit field holds 127 query tags, and
//!   wider query sets switch to 2-byte events (15-bit tags).
//! - **Packing.** First-fit decreasing of `length + 1` columns per query; a query never
//!   straddles a block (or, for the warp kernel, a warp).
//! - **Documents in flight.** One launch over (query groups x documents) instead of one
//!   stream per document; more than 65535 documents take several launches.
//! - **Timing** (harness): encoding documents into events is excluded, as the paper
//!   excludes parsing; the GPU time covers copying events in, filtering, copying results
//!   out. For segments, the host's pass that finds the open-tag path at each segment
//!   start (a SAX parser would know it for free) is inside the timed call: each segment
//!   is summarized on its own (what it closes of the path before it, what it leaves
//!   open), on all host threads for a document of a million events or more, and the
//!   paths are chained through the summaries; the events go to the device as they are
//!   stored. On one 100 MB document (7M events, 256 queries) that took the segment
//!   filter from 2.6 to 3.9 GB/s on the H100 (`harness run xml bigdoc`).

use crate::layout::{pack, BlockLayout, EventBatch, EventSlice};
use crate::model::{Document, Event, Matches, ProfileSet};
use crate::XmlError;
use gpu_kernels::{Buffer, Device, LaunchConfig};
use rayon::prelude::*;
use xml_twig_kernels as k;

/// Events per segment for [`Engine::filter_segmented`] on `doc`: enough segments to
/// fill a GPU (about 128), long enough that the fix-up's walk over them stays short.
pub fn segment_events(doc: &Document) -> usize {
    (doc.events.len() / 128).clamp(256, 4096)
}

/// Which kernel filters whole documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelKind {
    /// The paper's kernel (§4.2): a block of `block_threads` columns, the stack and the
    /// staged events in shared memory, one block barrier per event.
    Block,
    /// Warp-synchronous (beyond the paper): a warp of 32 columns per query group,
    /// stack tops exchanged by shuffles and votes, no barriers. Queries of at most 31
    /// nodes only.
    Warp,
    /// `Warp` when every query fits a warp, else `Block`.
    Auto,
}

/// Engine parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    pub kernel: KernelKind,
    /// Threads (stack columns) per block of the `Block` kernel: 256 in the paper (§5).
    pub block_threads: u32,
    /// Warps (query groups) per block of the `Warp` kernel. 4 by default: one warp per
    /// scheduler of an SM; 8 put two warps' steps on one scheduler, which costs a
    /// quarter of one document's speed on an H100 (`examples/kernel_sweep.rs`).
    pub warps_per_block: u32,
    /// Upper bound on a block's dynamic shared memory (merged stack + event chunk).
    pub max_shared_bytes: u32,
    /// Documents per launch (the grid's y dimension is at most 65535).
    pub max_docs_per_launch: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            kernel: KernelKind::Auto,
            block_threads: 256,
            warps_per_block: 4,
            max_shared_bytes: 96 * 1024,
            max_docs_per_launch: 65535,
        }
    }
}

impl EngineConfig {
    /// The default on a GPU; on the emulator, which runs every lane on the host, small
    /// blocks (64 threads, 2 warps a block) that keep it quick.
    ///
    /// ```
    /// use xml_twig::{Device, EngineConfig};
    /// assert_eq!(EngineConfig::for_device(&Device::emulator()).block_threads, 64);
    /// ```
    pub fn for_device(dev: &Device) -> Self {
        if dev.is_gpu() {
            EngineConfig::default()
        } else {
            EngineConfig {
                block_threads: 64,
                warps_per_block: 2,
                ..EngineConfig::default()
            }
        }
    }
}

/// The twig filter on one device.
pub struct Engine {
    dev: Device,
    layout: BlockLayout,
    /// True when `layout` holds 32-column groups for the `Warp` kernel.
    warp: bool,
    personalities: Buffer<k::Personality>,
    result_index: Buffer<u32>,
    narrow: bool,
    scratch: Scratch,
    queries: usize,
    ids: Vec<u32>,
    cfg: EngineConfig,
}

impl Engine {
    /// Packs and uploads the query set's personalities.
    ///
    /// ```
    /// use xml_twig::{io, Device, Engine, EngineConfig, KernelKind, ProfileSet, XmlError};
    /// # fn main() -> Result<(), XmlError> {
    /// let set = io::parse_query_file("q.txt", "//article[author]/title\n/dblp/*/year\n")?;
    /// let profiles = ProfileSet::compile(&set)?;
    /// let xml = b"<dblp><article><author/><title/></article><book><year/></book></dblp>";
    /// let doc = io::parse_document("d.xml", xml, &profiles.dict)?;
    /// // The paper's kernel (one block barrier per event) and the warp-synchronous one.
    /// for kernel in [KernelKind::Block, KernelKind::Warp] {
    ///     let cfg = EngineConfig { kernel, block_threads: 32, ..EngineConfig::default() };
    ///     let mut engine = Engine::new(Device::emulator(), &profiles, cfg)?;
    ///     assert_eq!(engine.filter(std::slice::from_ref(&doc))?, vec![vec![0, 1]]);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn new(dev: Device, profiles: &ProfileSet, cfg: EngineConfig) -> Result<Self, XmlError> {
        let (layout, warp) = Self::pack(profiles, &cfg)?;
        let (pers, index) = Self::padded(&layout, warp, &cfg);
        let personalities = upload_nonempty(&dev, &pers)?;
        let result_index = upload_nonempty(&dev, &index)?;
        Ok(Engine {
            dev,
            warp,
            narrow: profiles.dict.is_narrow(),
            scratch: Scratch::default(),
            queries: profiles.len(),
            ids: profiles.ids.clone(),
            layout,
            personalities,
            result_index,
            cfg,
        })
    }

    /// Replaces the query set (the paper's "query dynamicity", Table 5): re-packs the
    /// queries and uploads the new personalities; the device stays open.
    pub fn load(&mut self, profiles: &ProfileSet) -> Result<(), XmlError> {
        let (layout, warp) = Self::pack(profiles, &self.cfg)?;
        let (pers, index) = Self::padded(&layout, warp, &self.cfg);
        self.personalities = upload_nonempty(&self.dev, &pers)?;
        self.result_index = upload_nonempty(&self.dev, &index)?;
        self.layout = layout;
        self.warp = warp;
        self.narrow = profiles.dict.is_narrow();
        self.queries = profiles.len();
        self.ids = profiles.ids.clone();
        Ok(())
    }

    /// Packs for the configured kernel: 32-column groups for `Warp`, blocks of
    /// `block_threads` columns for `Block`.
    fn pack(profiles: &ProfileSet, cfg: &EngineConfig) -> Result<(BlockLayout, bool), XmlError> {
        let fits_warp = profiles.twigs.iter().all(|t| t.nodes.len() < 32);
        let warp = match cfg.kernel {
            KernelKind::Block => false,
            KernelKind::Warp => true,
            KernelKind::Auto => fits_warp,
        };
        Ok((
            pack(profiles, if warp { 32 } else { cfg.block_threads })?,
            warp,
        ))
    }

    /// Personalities and result indexes padded to whole blocks of the launch.
    fn padded(
        layout: &BlockLayout,
        warp: bool,
        cfg: &EngineConfig,
    ) -> (Vec<k::Personality>, Vec<u32>) {
        let mut pers = layout.personalities.clone();
        let mut index = layout.result_index.clone();
        if warp {
            let per_block = cfg.warps_per_block.max(1) as usize * 32;
            let len = pers.len().div_ceil(per_block) * per_block;
            pers.resize(len, k::Personality::default());
            index.resize(len, u32::MAX);
        }
        (pers, index)
    }

    /// The kernel that filters whole documents.
    pub fn kernel(&self) -> KernelKind {
        if self.warp {
            KernelKind::Warp
        } else {
            KernelKind::Block
        }
    }

    pub fn device(&self) -> &Device {
        &self.dev
    }
    pub fn layout(&self) -> &BlockLayout {
        &self.layout
    }
    /// True when events travel as the paper's 1-byte entries.
    pub fn is_narrow(&self) -> bool {
        self.narrow
    }

    /// The deepest document this engine can filter.
    pub fn max_depth(&self) -> u32 {
        if self.warp {
            let threads = self.cfg.warps_per_block.max(1) * 32;
            return (self.cfg.max_shared_bytes / threads).saturating_sub(1);
        }
        let ev = if self.narrow { 1 } else { 2 };
        let room = self.cfg.max_shared_bytes.saturating_sub(k::CHUNK * ev);
        (room / self.layout.width.max(1)).saturating_sub(1)
    }

    /// Query ids matched by each document, ascending.
    pub fn filter(&mut self, docs: &[Document]) -> Result<Vec<Matches>, XmlError> {
        let batch = self.encode(docs);
        self.filter_encoded(&batch)
    }

    /// Encodes documents for this engine's event width (host work, like parsing: not
    /// part of the paper's measured filtering time).
    pub fn encode(&self, docs: &[Document]) -> EventBatch {
        EventBatch::encode(docs, self.narrow)
    }

    /// Filters an encoded batch: uploads its events once, then one launch per
    /// `max_docs_per_launch` documents, each block one (query group, document) pair.
    pub fn filter_encoded(&mut self, batch: &EventBatch) -> Result<Vec<Matches>, XmlError> {
        let max = self.max_depth();
        if let Some((doc, &depth)) = batch.depth.iter().enumerate().find(|(_, &d)| d > max) {
            return Err(XmlError::DocumentTooDeep { doc, depth, max });
        }
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let words = self.queries.div_ceil(32).max(1);
        let mut sc = std::mem::take(&mut self.scratch);
        let result = self.launch_batch(batch, words, &mut sc);
        self.scratch = sc;
        let bits = result?;
        Ok(bits
            .chunks(words)
            .map(|row| decode_row(row, &self.ids))
            .collect())
    }

    fn launch_batch(
        &self,
        batch: &EventBatch,
        words: usize,
        sc: &mut Scratch,
    ) -> Result<Vec<u32>, XmlError> {
        let dev = &self.dev;
        let n_docs = batch.len();
        let matches = room(dev, &mut sc.matches, n_docs * words)?;
        dev.zero(matches)?;
        let matches = &*matches;
        if self.layout.blocks > 0 {
            // The document's events: bytes with a narrow dictionary, else u16s.
            let (narrow, wide) = match batch.events.as_slice() {
                EventSlice::Narrow(v) => (Some(&*put(dev, &mut sc.narrow, v)?), None),
                EventSlice::Wide(v) => (None, Some(&*put(dev, &mut sc.wide, v)?)),
            };
            let starts = &*put(dev, &mut sc.starts, &batch.doc_start)?;
            let per_launch = self.cfg.max_docs_per_launch.clamp(1, 65535);
            let mut first = 0;
            while first < n_docs {
                let n = per_launch.min(n_docs - first);
                // Offsets stay absolute: each launch sees its documents' slice of
                // `doc_start` and the whole event array.
                let depth_cap = batch.depth[first..first + n]
                    .iter()
                    .copied()
                    .max()
                    .unwrap_or(0)
                    + 1;
                let cfg = if self.warp {
                    let wpb = self.cfg.warps_per_block.max(1);
                    LaunchConfig {
                        grid: [self.layout.blocks.div_ceil(wpb), n as u32, 1],
                        block: [wpb * 32, 1, 1],
                        shared_bytes: k::stack_bytes(depth_cap, wpb * 32),
                    }
                } else {
                    let w = self.layout.width;
                    LaunchConfig {
                        grid: [self.layout.blocks, n as u32, 1],
                        block: [w, 1, 1],
                        shared_bytes: k::shared_bytes(depth_cap, w, batch.bytes_per_event()),
                    }
                };
                let (p, r) = (&self.personalities, &self.result_index);
                let (st, out) = (starts.at(first), matches.at_mut(first * words));
                let w = words as u32;
                match (narrow, wide, self.warp) {
                    (Some(ev), _, false) => {
                        k::filter_narrow::launch(dev, cfg, p, r, ev, st, depth_cap, out, w)?
                    }
                    (Some(ev), _, true) => {
                        k::filter_warp::launch(dev, cfg, p, r, ev, st, depth_cap, out, w)?
                    }
                    (None, Some(ev), false) => {
                        k::filter_wide::launch(dev, cfg, p, r, ev, st, depth_cap, out, w)?
                    }
                    (None, Some(ev), true) => {
                        k::filter_warp_wide::launch(dev, cfg, p, r, ev, st, depth_cap, out, w)?
                    }
                    (None, None, _) => unreachable!("one of the two event buffers is set above"),
                }
                first += n;
            }
        }
        dev.synchronize()?;
        let mut bits = vec![0u32; n_docs * words];
        dev.read_into(matches, 0, &mut bits)?;
        Ok(bits)
    }
}

impl Engine {
    /// Filters one document split into segments of `segment_events` events that are
    /// processed in parallel (beyond the paper), then composed.
    ///
    /// The paper walks a document's events in order inside one block, so one document
    /// keeps only as many blocks busy as there are query groups. Here block (x, y) runs
    /// query group x over segment y, starting from the stack that the open path at the
    /// segment's start implies (push state depends only on that path, which the host
    /// knows from the encoding pass, as a SAX parser does); pop state at the segment
    /// borders is partial, and a second kernel walks the segments in order per query
    /// group, composing each segment's recorded contributions (pop bits only ever OR
    /// together, and a split node's AND is taken once all contributions are in).
    ///
    /// ```
    /// use xml_twig::workload::DblpGenerator;
    /// use xml_twig::{io, Device, Engine, EngineConfig, ProfileSet};
    /// # fn main() -> Result<(), xml_twig::XmlError> {
    /// let set = io::parse_query_file("q.txt", "//article/title\n//book[year]//author\n")?;
    /// let profiles = ProfileSet::compile(&set)?;
    /// let xml = DblpGenerator::new(3).document(4000);
    /// let doc = io::parse_document("dblp.xml", xml.as_bytes(), &profiles.dict)?;
    /// let cfg = EngineConfig { block_threads: 32, warps_per_block: 2, ..EngineConfig::default() };
    /// let mut engine = Engine::new(Device::emulator(), &profiles, cfg)?;
    /// let whole = engine.filter(std::slice::from_ref(&doc))?;
    /// assert_eq!(engine.filter_segmented(&doc, 64)?, whole[0]);
    /// # Ok(()) }
    /// ```
    pub fn filter_segmented(
        &mut self,
        doc: &Document,
        segment_events: usize,
    ) -> Result<Matches, XmlError> {
        let room = self.cfg.max_shared_bytes.saturating_sub(k::CHUNK * 2);
        let max = (room / self.layout.width.max(1)).saturating_sub(1);
        if doc.max_depth > max {
            return Err(XmlError::DocumentTooDeep {
                doc: 0,
                depth: doc.max_depth,
                max,
            });
        }
        let words = self.queries.div_ceil(32).max(1);
        let mut sc = std::mem::take(&mut self.scratch);
        let result = self.launch_segments(doc, segment_events, words, &mut sc);
        self.scratch = sc;
        Ok(decode_row(&result?, &self.ids))
    }

    fn launch_segments(
        &self,
        doc: &Document,
        segment_events: usize,
        words: usize,
        sc: &mut Scratch,
    ) -> Result<Vec<u32>, XmlError> {
        let dev = &self.dev;
        let matches = room(dev, &mut sc.matches, words)?;
        dev.zero(matches)?;
        if self.layout.blocks > 0 {
            let plan = SegmentPlan::new(doc, segment_events);
            let cap = doc.max_depth + 1;
            let n = plan.depth.len();
            // Warp kernel: blocks of `wpb` query groups of 32 columns, and the fix-up
            // over the same padded groups with 32-thread blocks.
            let wpb = self.cfg.warps_per_block.max(1);
            let (seg_grid_x, seg_block, fix_grid_x) = if self.warp {
                let g = self.layout.blocks.div_ceil(wpb);
                (g, wpb * 32, g * wpb)
            } else {
                (self.layout.blocks, self.layout.width, self.layout.blocks)
            };
            let columns = seg_grid_x as usize * seg_block as usize;
            let events: &[u16] = bytemuck::cast_slice(&doc.events);
            let events = &*put(dev, &mut sc.wide, events)?;
            let seg_start = &*put(dev, &mut sc.starts, &plan.start)?;
            let path = &*put(dev, &mut sc.path, &plan.path(cap as usize))?;
            let depth = &*put(dev, &mut sc.depth, &plan.depth)?;
            let info = &*put(dev, &mut sc.info, &plan.info)?;
            // Every record the fix-up reads is written by the segment kernel first.
            let close_rec = &*room(dev, &mut sc.close_rec, n * cap as usize * columns)?;
            let end_rec = &*room(dev, &mut sc.end_rec, n * cap as usize * columns)?;
            let p = &self.personalities;
            if self.warp {
                let cfg = LaunchConfig {
                    grid: [seg_grid_x, n as u32, 1],
                    block: [seg_block, 1, 1],
                    shared_bytes: k::stack_bytes(cap, seg_block),
                };
                k::filter_segments_warp::launch(
                    dev, cfg, p, events, seg_start, path, depth, cap, close_rec, end_rec,
                )?;
            } else {
                let cfg = LaunchConfig {
                    grid: [seg_grid_x, n as u32, 1],
                    block: [seg_block, 1, 1],
                    shared_bytes: k::shared_bytes(cap, seg_block, 2),
                };
                k::filter_segments::launch(
                    dev, cfg, p, events, seg_start, path, depth, cap, close_rec, end_rec,
                )?;
            }
            let width = self.layout.width;
            let cfg = LaunchConfig {
                grid: [fix_grid_x, 1, 1],
                block: [width, 1, 1],
                shared_bytes: k::stack_bytes(cap, width),
            };
            k::fixup_segments::launch(
                dev,
                cfg,
                p,
                &self.result_index,
                info,
                n as u32,
                close_rec,
                end_rec,
                cap,
                &*matches,
            )?;
        }
        dev.synchronize()?;
        let mut bits = vec![0u32; words];
        dev.read_into(matches, 0, &mut bits)?;
        Ok(bits)
    }
}

/// How a document is cut into segments: for each, where it starts, the open path
/// there, and (start depth, lowest level reached, end depth).
struct SegmentPlan {
    start: Vec<u32>,
    depth: Vec<u32>,
    paths: Vec<Vec<u16>>,
    info: Vec<u32>,
}

impl SegmentPlan {
    fn new(doc: &Document, segment_events: usize) -> Self {
        Self::build(
            doc,
            segment_events,
            doc.events.len() >= PARALLEL_PLAN_EVENTS,
        )
    }

    /// The plan, its segments summarized on all host threads when `parallel`.
    fn build(doc: &Document, segment_events: usize, parallel: bool) -> Self {
        let n_events = doc.events.len();
        // At most 65535 segments (the grid's y dimension), at least one.
        let size = segment_events.max(1).max(n_events.div_ceil(65535));
        let (mut paths, dips) = boundaries(doc, size, parallel);
        let n = dips.len();
        let info = (0..n)
            .flat_map(|k| {
                let d = paths[k].len();
                let lowest = (d as i64 + dips[k]).max(0) as u32;
                [d as u32, lowest, paths[k + 1].len() as u32]
            })
            .collect();
        paths.truncate(n);
        SegmentPlan {
            start: (0..=n).map(|k| (k * size).min(n_events) as u32).collect(),
            depth: paths.iter().map(|p| p.len() as u32).collect(),
            paths,
            info,
        }
    }

    /// `path[seg * cap + l]`: tag open at level `l` (1-based) when segment `seg` starts.
    fn path(&self, cap: usize) -> Vec<u16> {
        let mut v = vec![0u16; self.paths.len() * cap];
        for (k, p) in self.paths.iter().enumerate() {
            for (l, &tag) in p.iter().enumerate() {
                if l + 1 < cap {
                    v[k * cap + l + 1] = tag;
                }
            }
        }
        v
    }
}

/// The open path (tag ids, outermost first) at every boundary of `doc` cut into
/// segments of `segment_events` events (at least one): entry `k` is the path where
/// segment `k` starts, the last one the path after the document, so one entry more
/// than there are segments (two for an empty document). Each segment is summarized on
/// its own, on all host threads for a document of a million (2^20) events or
/// more, and the paths are chained through the summaries. What a segment-parallel
/// filter needs to start each segment where the document stands (this engine's
/// segment kernels, the lazy DFA's segments in `baselines`).
pub fn segment_paths(doc: &Document, segment_events: usize) -> Vec<Vec<u16>> {
    let parallel = doc.events.len() >= PARALLEL_PLAN_EVENTS;
    boundaries(doc, segment_events.max(1), parallel).0
}

/// [`segment_paths`] for segments of `size` (> 0) events, with each segment's dip
/// ([`SegmentSummary::dip`]); summarized on all host threads when `parallel`.
fn boundaries(doc: &Document, size: usize, parallel: bool) -> (Vec<Vec<u16>>, Vec<i64>) {
    let n_events = doc.events.len();
    let n = n_events.div_ceil(size).max(1);
    let segment = |k: usize| &doc.events[(k * size).min(n_events)..((k + 1) * size).min(n_events)];
    let summaries = on_host_threads(n, parallel, |k| SegmentSummary::of(segment(k)));
    let mut paths: Vec<Vec<u16>> = Vec::with_capacity(n + 1);
    let mut open: Vec<u16> = Vec::new();
    for sum in &summaries {
        paths.push(open.clone());
        // A well-nested document never closes above its root; a close there is ignored
        // (as the filters do): pop at most the path.
        open.truncate(open.len().saturating_sub(sum.closed));
        open.extend_from_slice(&sum.left_open);
    }
    paths.push(open);
    (paths, summaries.iter().map(|s| s.dip).collect())
}

/// What one segment does to the open path, whatever the path it starts from: it closes
/// `closed` elements opened before it, leaves `left_open` (tags, outermost first) open
/// after them, and on the way goes `dip` (<= 0) levels below its start at the lowest.
struct SegmentSummary {
    closed: usize,
    dip: i64,
    left_open: Vec<u16>,
}

impl SegmentSummary {
    fn of(events: &[Event]) -> Self {
        let mut left_open = Vec::new();
        let mut closed = 0usize;
        let mut dip = 0i64;
        for e in events {
            if e.is_open() {
                left_open.push(e.tag());
            } else {
                if left_open.pop().is_none() {
                    closed += 1;
                }
                dip = dip.min(left_open.len() as i64 - closed as i64);
            }
        }
        SegmentSummary {
            closed,
            dip,
            left_open,
        }
    }
}

/// Events below which a document's segments are summarized on the calling thread
/// (handing the parts to other threads costs more than the pass).
const PARALLEL_PLAN_EVENTS: usize = 1 << 20;

/// `f(0..n)` in order, on rayon's pool when `parallel` (its threads stay warm: threads
/// spawned per call cost more than a batch's pass on the H100's host, measured for the
/// lazy DFA's warm path, `crate::dfa`).
pub(crate) fn on_host_threads<T: Send>(
    n: usize,
    parallel: bool,
    f: impl Fn(usize) -> T + Sync + Send,
) -> Vec<T> {
    if parallel && n > 1 {
        (0..n).into_par_iter().map(f).collect()
    } else {
        (0..n).map(f).collect()
    }
}

/// Device buffers kept between calls, grown on demand, so that a call's time is copies
/// and kernels rather than allocations.
#[derive(Default)]
struct Scratch {
    narrow: Option<Buffer<u8>>,
    wide: Option<Buffer<u16>>,
    starts: Option<Buffer<u32>>,
    matches: Option<Buffer<u32>>,
    path: Option<Buffer<u16>>,
    depth: Option<Buffer<u32>>,
    info: Option<Buffer<u32>>,
    close_rec: Option<Buffer<u8>>,
    end_rec: Option<Buffer<u8>>,
}

/// A buffer of at least `len` elements in `slot` (reallocated, larger, when too small;
/// contents unspecified).
/// The ids of the queries whose bit is set in `row` (bit `q % 32` of word `q / 32` for
/// the query of internal number `q`, `ids[q]`), ascending: a document's row of a
/// kernel's result bits.
pub(crate) fn decode_row(row: &[u32], ids: &[u32]) -> Matches {
    // Sized first: a row of most of 2048 queries grew its vector a dozen times.
    let mut m = Matches::with_capacity(row.iter().map(|w| w.count_ones() as usize).sum());
    for (w, &bits) in row.iter().enumerate() {
        let mut x = bits;
        while x != 0 {
            if let Some(&id) = ids.get(w * 32 + x.trailing_zeros() as usize) {
                m.push(id);
            }
            x &= x - 1;
        }
    }
    // Internal numbers usually follow the ids (a query set's own order): sorted already.
    if !m.is_sorted() {
        m.sort_unstable();
    }
    m
}

/// The buffer in `slot`, kept when it holds `len` values, else grown to the next power
/// of two ([`Device::kept_or_grown`]).
pub(crate) fn room<'a, T: bytemuck::Pod>(
    dev: &Device,
    slot: &'a mut Option<Buffer<T>>,
    len: usize,
) -> Result<&'a mut Buffer<T>, XmlError> {
    let b = dev.kept_or_grown(slot.take(), len, usize::next_power_of_two)?;
    Ok(slot.insert(b))
}

/// `data` copied to the start of the buffer in `slot`.
pub(crate) fn put<'a, T: bytemuck::Pod>(
    dev: &Device,
    slot: &'a mut Option<Buffer<T>>,
    data: &[T],
) -> Result<&'a mut Buffer<T>, XmlError> {
    let b = room(dev, slot, data.len())?;
    if !data.is_empty() {
        dev.write(b, 0, data)?;
    }
    Ok(b)
}

/// Uploads `v`; an empty batch still gets a (one-element) buffer.
fn upload_nonempty<T: bytemuck::Pod + Default>(
    dev: &Device,
    v: &[T],
) -> Result<Buffer<T>, XmlError> {
    Ok(if v.is_empty() {
        dev.upload(&[T::default()])?
    } else {
        dev.upload(v)?
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The plan walked event by event, one open path carried through the document.
    fn plan_by_walk(doc: &Document, size: usize) -> (Vec<Vec<u16>>, Vec<u32>) {
        let (mut paths, mut info, mut open) = (Vec::new(), Vec::new(), Vec::<u16>::new());
        for seg in doc.events.chunks(size) {
            paths.push(open.clone());
            let d = open.len();
            let mut lowest = d;
            for e in seg {
                if e.is_open() {
                    open.push(e.tag());
                } else {
                    open.pop();
                    lowest = lowest.min(open.len());
                }
            }
            info.extend([d as u32, lowest as u32, open.len() as u32]);
        }
        (paths, info)
    }

    /// A well-nested document from a walk: `true` opens (tag from the walk), `false`
    /// closes (ignored at the root's level), everything left open closed at the end.
    fn nested(steps: &[(bool, u16)]) -> Document {
        let mut events = vec![Event::open(1)];
        let mut open = vec![1u16];
        for &(push, tag) in steps {
            if push {
                events.push(Event::open(tag));
                open.push(tag);
            } else if open.len() > 1 {
                events.push(Event::close(open.pop().unwrap_or(0)));
            }
        }
        while let Some(t) = open.pop() {
            events.push(Event::close(t));
        }
        let n = events.len();
        Document::from_events(events, n).expect("built well nested")
    }

    proptest! {
        /// Segments summarized apart (on one thread or many) and chained give every
        /// segment the open path, start depth, lowest level and end depth of the walk.
        #[test]
        fn segment_plan_equals_the_walk(
            steps in proptest::collection::vec((any::<bool>(), 1u16..50), 0..3000),
            size in 1usize..300,
        ) {
            let doc = nested(&steps);
            let (paths, info) = plan_by_walk(&doc, size);
            for parallel in [false, true] {
                let plan = SegmentPlan::build(&doc, size, parallel);
                prop_assert_eq!(&plan.paths, &paths);
                prop_assert_eq!(&plan.info, &info);
                let depths: Vec<u32> = paths.iter().map(|p| p.len() as u32).collect();
                prop_assert_eq!(&plan.depth, &depths);
            }
        }
    }
}
