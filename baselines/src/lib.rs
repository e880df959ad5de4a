//! CPU peers of the four papers: the yardstick for every speedup and the oracle for
//! every GPU result. They share the paper crates' model types but no matching logic.
//!
//! | module | peer | paper it measures against |
//! | --- | --- | --- |
//! | [`sff`] | SFF-like counting matcher (Carzaniga & Wolf 2003) | CCM, CLCB "with location" |
//! | [`content_index`] | pivot-partitioned boolean-expression index (after OpIndex, VLDB 2014; BE-Tree, SIGMOD 2011) | CCM: the strong CPU yardstick |
//! | [`hybrid_index`] | the value index (REIN/HEM class), the content index and, for integer bounds, the bit index, chosen per event | CCM: the strongest CPU yardstick |
//! | [`matcher`] | what the CCM matchers share: one event with a thread's scratch, many on all cores, from heap events or a flat batch | CCM |
//! | [`bit_index`] | value cells with precomputed failing-filter bitsets, integer ranges only (after HEM, DASFAA 2022; BG-Tree) | CCM: the dense model, in the hybrid |
//! | [`value_index`] | value bitsets with verification (after REIN, INFOCOM 2014; TAMA, INFOCOM 2013; HEM, DASFAA 2022) | CCM: events with many names |
//! | [`rtree`] | R*-tree (rstar) location filter + content check | CLCB |
//! | [`grid_index`] | spatial grid with a content index per cell (after FAST, ICDE 2018; IQ-tree; OpIndex) | CLCB: the strongest CPU yardstick |
//! | [`yfilter`] | YFilter-like shared NFA (Diao et al. 2003) | XML twig filtering |
//! | [`lazy_dfa`] | lazy DFA (XMLTK, Green et al. 2004) with a memoized twig join (after XPush, Gupta & Suciu 2003) | XML: the strongest CPU yardstick |
//! | [`ddm`] | brute force, grid and sort-based DDM matching | DDM region matching |
//! | [`sbm`], [`itm`] (through [`ddm`]) | parallel sort-based and interval-tree matching (Marzolla & D'Angelo 2017/2020) | DDM: the strong CPU yardstick |
//! | [`bisect`] (through [`ddm`]) | counting by binary search over sorted end points (Marzolla, Birolo, D'Angelo & Fariselli 2024) | DDM: the strong CPU yardstick |
//!
//! Each module sits behind a cargo feature of the same paper (`ccm`, `clcb`, `xml`,
//! `ddm`; all on by default), so a user of one paper builds only that paper's peer.
//!
//! A peer takes the paper crate's model and answers as its engine does, so that the two
//! compare with `assert_eq!`; here CCM's two peers, the SFF-like counting matcher and
//! the strong index, agree on a generated workload (each paper crate's own example
//! checks its GPU engine, on the emulator, against a peer the same way):
//!
//! ```
//! # #[cfg(feature = "ccm")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use baselines::{content_index::ContentIndex, sff::Sff, Matcher};
//! let params = ccm::Params {
//!     events: 50,
//!     interfaces: 5,
//!     constraints_per_filter: (1, 3),
//!     filters_per_interface: (20, 40),
//!     names: 6,
//!     values: 4,
//!     ..ccm::Params::default()
//! };
//! let w = ccm::workload::generate(&params, 11)?;
//! let sff = Sff::build(&w.subscriptions)?;
//! let index = ContentIndex::build(&w.subscriptions)?;
//! let answers = index.match_parallel(&w.events); // all cores (rayon)
//! for (e, answer) in w.events.iter().zip(&answers) {
//!     assert_eq!(&sff.match_event(e), answer);
//! }
//! assert!(answers.iter().any(|a| !a.is_empty()));
//! # Ok(()) }
//! # #[cfg(not(feature = "ccm"))]
//! # fn main() {}
//! ```

#[cfg(all(test, feature = "ccm"))]
mod arrow_layout;
#[cfg(feature = "ccm")]
mod compiled;
#[cfg(feature = "ccm")]
pub mod matcher;
#[cfg(feature = "ccm")]
pub use matcher::Matcher;
#[cfg(feature = "ddm")]
pub mod bisect;
#[cfg(feature = "ccm")]
pub mod bit_index;
#[cfg(feature = "ccm")]
pub mod content_index;
#[cfg(feature = "ddm")]
pub mod ddm;
#[cfg(feature = "ddm")]
mod ddm_kit;
#[cfg(feature = "clcb")]
pub mod grid_index;
#[cfg(feature = "ccm")]
pub mod hybrid_index;
#[cfg(feature = "ddm")]
pub mod itm;
#[cfg(feature = "xml")]
pub mod lazy_dfa;
#[cfg(feature = "clcb")]
pub mod rtree;
#[cfg(feature = "ddm")]
pub mod sbm;
#[cfg(feature = "ccm")]
pub mod sff;
#[cfg(feature = "clcb")]
pub mod sff_location;
#[cfg(feature = "ccm")]
pub mod value_index;
#[cfg(feature = "xml")]
pub mod yfilter;
