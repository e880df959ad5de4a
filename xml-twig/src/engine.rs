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
//! Stack depth: the merged stack holds `max_depth + 1` levels of the deepest document of
//! the batch. A document too deep for [`EngineConfig::max_shared_bytes`] is refused
//! with [`XmlError::DocumentTooDeep`] before anything runs; callers may fall back to a
//! CPU filter for it (the `xml filter` command does).

use crate::layout::{pack, BlockLayout, EventBatch};
use crate::model::{Document, Matches, ProfileSet};
use crate::XmlError;
use gpu_kernels::{Buffer, Device, LaunchConfig};
use xml_twig_kernels as k;

/// Engine parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// Threads (stack columns) per block: 256 in the paper (§5).
    pub block_threads: u32,
    /// Upper bound on a block's dynamic shared memory (merged stack + event chunk).
    pub max_shared_bytes: u32,
    /// Documents per launch (the grid's y dimension is at most 65535).
    pub max_docs_per_launch: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            block_threads: 256,
            max_shared_bytes: 96 * 1024,
            max_docs_per_launch: 65535,
        }
    }
}

/// The twig filter on one device.
pub struct Engine {
    dev: Device,
    layout: BlockLayout,
    personalities: Buffer<k::Personality>,
    result_index: Buffer<u32>,
    narrow: bool,
    queries: usize,
    ids: Vec<u32>,
    cfg: EngineConfig,
}

impl Engine {
    /// Packs and uploads the query set's personalities.
    pub fn new(dev: Device, profiles: &ProfileSet, cfg: EngineConfig) -> Result<Self, XmlError> {
        let layout = pack(profiles, cfg.block_threads)?;
        let personalities = dev.upload(&layout.personalities)?;
        let result_index = dev.upload(&layout.result_index)?;
        Ok(Engine {
            dev,
            narrow: profiles.dict.is_narrow(),
            queries: profiles.len(),
            ids: profiles.ids.clone(),
            layout,
            personalities,
            result_index,
            cfg,
        })
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
        let ev = if self.narrow { 1 } else { 2 };
        let room = self.cfg.max_shared_bytes.saturating_sub(k::CHUNK * ev);
        (room / self.layout.width.max(1)).saturating_sub(1)
    }

    /// Query ids matched by each document, ascending.
    pub fn filter(&mut self, docs: &[Document]) -> Result<Vec<Matches>, XmlError> {
        let max = self.max_depth();
        if let Some((i, d)) = docs.iter().enumerate().find(|(_, d)| d.max_depth > max) {
            return Err(XmlError::DocumentTooDeep {
                doc: i,
                depth: d.max_depth,
                max,
            });
        }
        let mut out = Vec::with_capacity(docs.len());
        for part in docs.chunks(self.cfg.max_docs_per_launch.clamp(1, 65535)) {
            out.extend(self.filter_launch(part)?);
        }
        Ok(out)
    }

    /// One launch over `docs` (at most 65535 of them).
    fn filter_launch(&mut self, docs: &[Document]) -> Result<Vec<Matches>, XmlError> {
        if docs.is_empty() {
            return Ok(Vec::new());
        }
        let batch = EventBatch::encode(docs, self.narrow);
        let words = self.queries.div_ceil(32).max(1) as u32;
        let mut matches: Buffer<u32> = self.dev.alloc(docs.len() * words as usize)?;
        self.dev.zero(&mut matches)?;
        if self.layout.blocks > 0 {
            let depth_cap = batch.max_depth() + 1;
            let shared = k::shared_bytes(depth_cap, self.layout.width, batch.bytes_per_event());
            let cfg = LaunchConfig {
                grid: [self.layout.blocks, docs.len() as u32, 1],
                block: [self.layout.width, 1, 1],
                shared_bytes: shared,
            };
            let doc_start = self.dev.upload(batch.doc_start())?;
            match &batch {
                EventBatch::Narrow { events, .. } => {
                    let ev = upload_nonempty(&self.dev, events)?;
                    self.dev.launch(
                        &k::filter_narrow::KERNEL,
                        cfg,
                        &[
                            self.personalities.arg(),
                            self.result_index.arg(),
                            ev.arg(),
                            doc_start.arg(),
                            depth_cap.into(),
                            matches.arg(),
                            words.into(),
                        ],
                    )?;
                    self.dev.synchronize()?;
                }
                EventBatch::Wide { events, .. } => {
                    let ev = upload_nonempty(&self.dev, events)?;
                    self.dev.launch(
                        &k::filter_wide::KERNEL,
                        cfg,
                        &[
                            self.personalities.arg(),
                            self.result_index.arg(),
                            ev.arg(),
                            doc_start.arg(),
                            depth_cap.into(),
                            matches.arg(),
                            words.into(),
                        ],
                    )?;
                    self.dev.synchronize()?;
                }
            }
        }
        let bits = self.dev.read(&matches)?;
        Ok(bits
            .chunks(words as usize)
            .map(|row| {
                let mut m: Matches = (0..self.queries)
                    .filter(|&q| row[q / 32] & (1 << (q % 32)) != 0)
                    .map(|q| self.ids[q])
                    .collect();
                m.sort_unstable();
                m
            })
            .collect())
    }
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
