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
//!
//! Choices where the paper is silent:
//! - strings on the GPU: interned ids for `=` / `!=`, full bytes for `prefix`, `suffix`
//!   and `substr` (exact for any length; see [`layout`]);
//! - numbers: `Int` and `Float` compare exactly, on the GPU as on the CPU;
//! - an empty filter and an event with two attributes of one name are refused (a
//!   counting matcher cannot express the first; the second would count twice);
//! - the kernel marks an interface with an atomic OR of 1 where the paper stores 1 (same
//!   effect on the GPU; race-free on the host emulator);
//! - the in-kernel reset (§4.3) zeroes the idle copies with a grid-stride loop, since the
//!   grid (sized by the longest selected row) may have fewer threads than filters;
//! - rows of `Constraints` get 12.5% slack so that subscriptions can be added without a
//!   new layout; a removal moves the row's last constraint into the hole;
//! - beyond the paper, a low-latency per-event path ([`Config::low_latency`]): table
//!   `Input` in the launch parameters and the matched interfaces appended by the kernel
//!   to a list in page-locked host memory mapped into the device, each entry tagged with
//!   the event's sequence number (no reset of the list): one launch and one
//!   synchronisation per event, nothing copied; `Count` and `Interfaces` stay on the
//!   device with the in-kernel reset of §4.3;
//! - beyond the paper, a persistent-kernel mode ([`Config::persistent`]): the matching
//!   kernel launched once and fed events through a ring in mapped host memory, several
//!   in flight ([`Ccm::match_pipelined`]); the GPU busy-waits while it runs, and the
//!   engine's drop stops it;
//! - beyond the paper, a batched kernel ([`Ccm::match_batch`]) matches many events per
//!   launch with one thread per filter and a 64-bit name signature per filter and
//!   event (no counters: a thread sees its whole filter).

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
