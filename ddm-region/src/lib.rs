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
//! Where the paper is silent, the choices made are listed in [`engine`]'s docs.

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
