//! HLA DDM region matching on the GPU, after Lo, Chung & Pai, "Offloading Region
//! Matching of Data Distribution Management with CUDA" (`../shared/papers/ddm-region-cuda.txt`).
//!
//! Modules: [`model`] (regions, ranges, pairs, update batches), [`io`] (CSV files),
//! [`workload`] (the paper's scenarios, the alpha scale-up), [`layout`] (device tables,
//! the grid), [`engine`] (the GPU / emulator engines). Kernels: the `ddm-region-kernels`
//! crate. A user starts from a [`RegionSet`] and an [`Engine`]:
//!
//! ```no_run
//! use ddm_region::{Approach, Engine, RegionSet};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let set: RegionSet = ddm_region::io::read_regions("regions.csv".as_ref())?;
//! let dev = gpu_kernels::Device::gpu(0, ddm_region::PTX).unwrap_or_else(|_| gpu_kernels::Device::emulator());
//! let mut engine = Engine::with_regions(&dev, Approach::Region, &set)?;
//! println!("{} overlapping pairs", engine.count()?);
//! # Ok(()) }
//! ```
//!
//! Choices where the paper is silent (each explained where it is made):
//! - coordinates are `u32`, ranges half-open (HLA 1516); [`model`];
//! - the overlap information is a pair of bit matrices (publication rows, subscription
//!   rows), so that Phase 2 can clear a region's old overlaps and Phase 3 set new ones
//!   with atomic OR/AND; Phase 4 copies back the pairs that involve an updated region
//!   (the "updated overlapped information"), collected in a list with an atomic cursor;
//!   [`layout`], `ddm_region_kernels`;
//! - a pair of two updated regions is found once: by the publication's thread
//!   (subscriptions skip publications updated in the same step); in the grid, a pair is
//!   compared only in the cell holding the lower corner of its intersection;
//! - Phase 1 stages the updated regions (de-duplicated, publications first) straight
//!   into page-locked host memory, then copies them to the device with two DMA copies
//!   (or, [`Phase1::Mapped`], lets the first kernels read them over the bus); Phase 4
//!   copies back one status word pair (step counters, overlap count) and the new pairs;
//! - Phase 2 runs one warp (not one thread) per updated region, for coalesced row sweeps;
//! - Phase 3 of the region approach may, as an option ([`Slices`]; default off, the
//!   paper's one thread per updated region), cut the candidates into slices over block
//!   rows (same comparisons, more blocks) so that a few thousand updated regions fill a GPU;
//! - grid cell lists have a capacity; an overflowing list is detected, the lists grown
//!   and rebuilt, and the step's matching redone;
//! - scenario details (crowd spread, moves at the border): [`workload`].

pub mod engine;
pub mod io;
pub mod layout;
pub mod model;
pub mod workload;

pub use engine::{Approach, DdmError, Engine, Phase1, Slices, StepReport};
/// The device type engines run on (re-exported so that users need not name `gpu-kernels`).
pub use gpu_kernels::Device;
pub use layout::GridSpec;
pub use model::{Kind, Pair, Range, RegionSet, UpdateBatch};

/// PTX of this crate's kernels, built by `build.rs` (empty when nightly + rust-src are missing).
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
