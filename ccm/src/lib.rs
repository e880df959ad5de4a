//! CCM, the CUDA Content-based Matcher of Margara & Cugola (DEBS 2011), in Rust.
//!
//! Modules, in the order data flows through them:
//! - [`model`]: events, constraints, filters, interfaces (§3);
//! - [`io`]: users' JSON Lines files -> model, with line-numbered errors;
//! - [`workload`]: Table 1's parameters and a seeded generator;
//! - [`layout`]: model -> the device tables of Fig. 2 (Names, Constraints, SizeC,
//!   Filters, Interfaces);
//! - [`engine`]: the matcher on a `gpu_kernels::Device` (GPU or emulator).
//!
//! A user starts from [`Subscription`]s and [`Event`]s and a [`Ccm`] engine:
//! `Ccm::new(&Device::emulator(), &subs, Config::default())?.match_event(&event)?`.

pub mod engine;
pub mod io;
pub mod layout;
pub mod model;
pub mod workload;

pub use engine::{Ccm, CcmError, Config, Reset, Timing};
pub use layout::SubId;
pub use model::{
    Attribute, Constraint, Event, Filter, Interface, InterfaceId, Op, Subscription, Value,
};
pub use workload::{NameDist, Params, Workload};

/// PTX of this crate's kernels, built by `build.rs` (empty when nightly + rust-src are missing).
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
