//! CPU peers of the four papers: the yardstick for every speedup and the oracle for
//! every GPU result. They share the paper crates' model types but no matching logic.
//!
//! | module | peer | paper it measures against |
//! | --- | --- | --- |
//! | [`sff`] | SFF-like counting matcher (Carzaniga & Wolf 2003) | CCM, CLCB "with location" |
//! | [`content_index`] | pivot-partitioned boolean-expression index (after OpIndex, VLDB 2014; BE-Tree, SIGMOD 2011) | CCM: the strong CPU yardstick |
//! | [`rtree`] | R*-tree (rstar) location filter + content check | CLCB |
//! | [`yfilter`] | YFilter-like shared NFA (Diao et al. 2003) | XML twig filtering |
//! | [`ddm`] | brute force, grid and sort-based DDM matching | DDM region matching |
//! | [`sbm`], [`itm`] (through [`ddm`]) | parallel sort-based and interval-tree matching (Marzolla & D'Angelo 2017/2020) | DDM: the strong CPU yardstick |
//!
//! Each module sits behind a cargo feature of the same paper (`ccm`, `clcb`, `xml`,
//! `ddm`; all on by default), so a user of one paper builds only that paper's peer.

#[cfg(feature = "ccm")]
pub mod content_index;
#[cfg(feature = "ddm")]
pub mod ddm;
#[cfg(feature = "ddm")]
mod ddm_kit;
#[cfg(feature = "ddm")]
pub mod itm;
#[cfg(feature = "clcb")]
pub mod rtree;
#[cfg(feature = "ddm")]
pub mod sbm;
#[cfg(feature = "ccm")]
pub mod sff;
#[cfg(feature = "clcb")]
pub mod sff_location;
#[cfg(feature = "xml")]
pub mod yfilter;
