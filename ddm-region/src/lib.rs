//! HLA DDM region matching on the GPU, after Lo, Chung & Pai, "Offloading Region
//! Matching of Data Distribution Management with CUDA" (`../shared/papers/ddm-region-cuda.txt`).
//!
//! Modules: [`model`] (regions, ranges, pairs, update batches), [`io`] (CSV files),
//! [`workload`] (the paper's scenarios, the alpha scale-up), [`layout`] (device tables,
//! the grid), [`engine`] (the GPU / emulator engines), [`multi`] and [`slab`] (beyond the
//! paper: the engines over many GPUs of one host, publications partitioned or the space
//! cut into slabs). Kernels: the `ddm-region-kernels`
//! crate. A user starts from a [`RegionSet`] (from [`io::read_regions`] or
//! [`workload::Scenario`]) and an [`Engine`]; here the paper's scenario I, scaled down,
//! on the host emulator, moved for a few time steps and checked against the CPU
//! baseline (brute-force matching, in the `baselines` crate):
//!
//! ```
//! use baselines::ddm::{Algorithm, DdmMatcher};
//! use ddm_region::workload::{Distribution, Scenario, ScenarioParams};
//! use ddm_region::{Approach, Device, Engine};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut scenario = Scenario::new(ScenarioParams::paper(200, 1000, Distribution::Uniform), 1)?;
//! let dev = Device::emulator(); // or Device::gpu(0, ddm_region::PTX)?
//! let mut engine = Engine::with_regions(&dev, Approach::Region, scenario.regions())?;
//! let cpu = DdmMatcher::new(Algorithm::Brute, 1);
//! assert_eq!(engine.pairs()?, cpu.pairs(scenario.regions()));
//! for _ in 0..3 {
//!     // Every region moves by half its size (§IV); the engine re-matches the moved ones.
//!     let moves = scenario.step();
//!     let report = engine.step(&moves, false)?;
//!     assert_eq!(report.overlaps, cpu.count(scenario.regions()));
//!     assert_eq!(engine.pairs()?, cpu.pairs(scenario.regions()));
//! }
//! assert!(engine.count()? > 0);
//! # Ok(()) }
//! ```
//!
//! Where the paper is silent, the choices made are listed in [`engine`]'s docs.

pub mod engine;
pub mod io;
pub mod layout;
pub mod model;
pub mod multi;
pub mod slab;
pub mod workload;

pub use ddm_region_kernels::sweep::Strips;
pub use engine::{
    plan_strips, Approach, CountTimes, DdmError, Engine, LoadTimes, NewTimes, Phase1, Slices,
    StepReport, StepTimes,
};
/// The device type engines run on (re-exported so that users need not name `gpu-kernels`).
pub use gpu_kernels::Device;
pub use layout::GridSpec;
pub use model::{Kind, Pair, Range, RegionSet, UpdateBatch};
pub use multi::{MultiEngine, MultiError};
pub use slab::{SlabEngine, SlabError};

/// PTX of this crate's kernels, built by `build.rs` (empty when nightly + rust-src are missing).
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
