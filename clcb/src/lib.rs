//! CLCB, the CUDA Location-aware Content-Based matcher (Cugola & Margara, Middleware
//! 2012), in Rust: location-aware publish-subscribe matching on the GPU, with the same
//! kernels run by the host SIMT emulator in tests.
//!
//! | module | paper | what |
//! | --- | --- | --- |
//! | [`model`] | §2 | [`Subscription`]s of [`Filter`]s (content constraints + an [`Area`], a circle or a rectangle), [`Event`]s with a [`Location`] |
//! | [`batch`] | beyond | [`batch::EventBatch`]: events as flat arrays (CCM's flat content, locations as columns), what every engine reads |
//! | [`io`] | — | users' JSON Lines files -> model or columns, line-numbered errors |
//! | [`columns`] | beyond | [`columns::SubscriptionColumns`]: subscriptions as flat columns, what the loader parses into and the indexes build from |
//! | [`workload`] | §5, Table 1 | seeded generator of every Table 1 parameter, uniform and Zipf space, all-match |
//! | [`keywords`] | beyond | the keyword workload of spatio-textual publish-subscribe (FAST, ICDE 2018): regions + Zipf keywords as string equalities |
//! | [`layout`] | §4.3, Fig. 2 | `FPos`, `SqDist`, `BF`, `FCount`, `Constraints`/`SizeC`, encoded events; the grid index (beyond) |
//! | [`engine`] | §4.2–4.3, Alg. 1 | [`Engine`]: `Loc`, `Cont`, `Zip` on one stream; area moves; batched, grid and low-latency modes (beyond) |
//! | [`cells`] | beyond | [`cells::CellIndex`]: the grid with content keys inside its cells on the device, a batch of events per launch |
//! | [`multi`] | beyond | [`multi::MultiEngine`]: the matcher over many GPUs of one host, subscriptions cut by filter count |
//!
//! A user starts from [`Subscriptions`] (from [`io::load_subscriptions`] or
//! [`workload::Workload`]) and an [`Engine`] on a [`gpu_kernels::Device`]; here a small
//! seeded workload on the host emulator, with area moves between events, checked
//! against the CPU baseline (the R*-tree matcher of the `baselines` crate):
//!
//! ```
//! use clcb::workload::{Params, Workload};
//! use clcb::{Engine, Options};
//! use gpu_kernels::Device;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let params = Params {
//!     events: 4,
//!     subscriptions: 40,
//!     filters_per_subscription: 2,
//!     names: 10,
//!     area_percent: 20.0,
//!     selectivity_percent: 50.0,
//!     ..Params::default()
//! };
//! let w = Workload::new(params, 3);
//! let mut subs = w.subscriptions();
//! let dev = Device::emulator(); // or Device::gpu(0, clcb::PTX)?
//! let mut engine = Engine::new(dev, &subs, Options::default())?;
//! let mut rtree = baselines::rtree::RTreeMatcher::build(&subs);
//! let mut matches = 0;
//! for e in w.events() {
//!     let ids = engine.match_event(&e)?;
//!     assert_eq!(ids, rtree.match_event(&e, &subs));
//!     matches += ids.len();
//! }
//! assert!(matches > 0);
//! // Filters move (Fig. 5): the engine, the baseline and the model follow.
//! for u in w.updates(5, subs.filter_count()) {
//!     engine.move_area(&u)?;
//!     rtree.move_area(&u)?;
//!     subs.apply(&u)?;
//! }
//! for e in w.events() {
//!     assert_eq!(engine.match_event(&e)?, rtree.match_event(&e, &subs));
//! }
//! # Ok(()) }
//! ```
//!
//! Where the paper is silent, each module says what we chose and why. Beyond the paper,
//! selectable and off by default: batched events, a grid index, area moves by launch,
//! and a low-latency per-event path ([`Engine::set_low_latency`]: one launch and one
//! synchronisation per event, nothing copied; areas packed so that a move is one copy).
//!
//! The kernels live in the `clcb-kernels` crate (`clcb/kernels`), compiled to PTX by
//! `build.rs`; [`PTX`] embeds them.

// Every `unsafe` block says, in its `// SAFETY:` comment, the invariant it relies on.
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod batch;
pub mod cells;
pub mod columns;
pub mod engine;
pub mod io;
pub mod keywords;
pub mod layout;
pub mod model;
pub mod multi;
pub mod workload;

pub use engine::{Engine, EngineError, Options, Request, StepTimes};
pub use model::{
    Area, AreaUpdate, Event, Filter, FilterId, Location, Subscription, SubscriptionId,
    Subscriptions,
};

/// PTX of this crate's kernels, built by `build.rs` (empty when nightly + rust-src are missing).
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
