//! Holistic XML twig filtering on the GPU, after Absalyamov, Moussalli, Najjar and
//! Tsotras, "High-Performance Holistic XML Twig Filtering Using GPUs" (ADMS 2013).
//!
//! Modules, in the order data flows through them:
//!
//! | module | what | paper |
//! | --- | --- | --- |
//! | [`model`] | [`Query`] twigs, [`TagDict`], [`Event`]s, [`Document`], [`ProfileSet`] | §3.1, §4.1, Table 1 |
//! | [`io`] | query files and XML files -> model, errors with line and column | Fig. 1 |
//! | [`workload`] | seeded YFilter-style twig generator, DBLP-schema document generator | §5 |
//! | [`layout`] | [`Personality`] table, greedy packing of queries into blocks, event batches | §4.3, §4.4, Table 2 |
//! | [`engine`] | [`Engine`]: push/pop stack kernels ([`KernelKind`]) and document segments, GPU or emulator | §4.2, Alg. 1 |
//! | [`multi`] | [`MultiFilter`]: documents cut over many devices of one host | beyond the paper |
//! | [`dfa`] | [`DfaEngine`]: a lazy DFA's frozen tables walked on the GPU, a warp per document or segment | beyond the paper (XMLTK) |
//! | [`brute`] | a brute-force tree matcher: the oracle of the tests | - |
//!
//! A user starts from [`io::parse_query_file`] and [`io::parse_document`], compiles the
//! queries with [`ProfileSet::compile`], and filters with [`Engine::filter`]:
//!
//! ```
//! use xml_twig::{io, Device, Engine, ProfileSet};
//! let set = io::parse_query_file("q.txt", "/a[b]//c\n//d\n")?;
//! let profiles = ProfileSet::compile(&set)?;
//! let doc = io::parse_document("d.xml", b"<a><b/><x><c/></x></a>", &profiles.dict)?;
//! let mut engine = Engine::new(Device::emulator(), &profiles, Default::default())?;
//! assert_eq!(engine.filter(&[doc])?, vec![vec![0]]); // query ids per document
//! # Ok::<(), xml_twig::XmlError>(())
//! ```
//!
//! The paper's workload (§5: YFilter-style twigs over the DBLP schema, DBLP-like
//! documents) from the seeded generators of [`workload`], filtered on the host emulator
//! and checked against the CPU baseline (the YFilter-like NFA of the `baselines` crate):
//!
//! ```
//! use xml_twig::workload::{DblpGenerator, QueryGenerator, QueryParams};
//! use xml_twig::{io, Device, Engine, EngineConfig, ProfileSet, QuerySet};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let queries = QueryGenerator::new(QueryParams::paper(5, 0.3), 1).queries(16);
//! let profiles = ProfileSet::compile(&QuerySet::from_queries(queries))?;
//! let mut dblp = DblpGenerator::new(2);
//! let docs = (0..3)
//!     .map(|_| io::parse_document("dblp.xml", dblp.document(1500).as_bytes(), &profiles.dict))
//!     .collect::<Result<Vec<_>, _>>()?;
//! // Small blocks keep the emulator quick; on a GPU, EngineConfig::default().
//! let cfg = EngineConfig { block_threads: 32, warps_per_block: 2, ..EngineConfig::default() };
//! let mut engine = Engine::new(Device::emulator(), &profiles, cfg)?;
//! let matches = engine.filter(&docs)?;
//! let yfilter = baselines::yfilter::Yfilter::new(&profiles);
//! assert_eq!(matches, yfilter.filter_batch(&docs));
//! assert!(matches.iter().any(|m| !m.is_empty()));
//! # Ok(()) }
//! ```

pub mod brute;
pub mod dfa;
pub mod engine;
pub mod io;
pub mod layout;
pub mod model;
pub mod multi;
pub mod workload;

pub use dfa::{DfaEngine, DfaTables, Phases};
pub use engine::{Engine, EngineConfig, KernelKind};
pub use gpu_kernels::Device;
pub use layout::Personality;
pub use model::{
    Axis, Document, Event, Matches, NodeTest, ProfileSet, Query, QuerySet, TagDict, Twig,
};
pub use multi::{MultiBatch, MultiError, MultiFilter};

/// PTX of this crate's kernels, built by `build.rs` (empty when nightly + rust-src are missing).
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Everything that can go wrong, from a user's file to a kernel launch.
#[derive(Debug, thiserror::Error)]
pub enum XmlError {
    /// A query file line that is not a twig query of the grammar in [`io`].
    #[error("{file}:{line}:{column}: {what}")]
    QuerySyntax {
        file: String,
        line: usize,
        column: usize,
        what: String,
    },
    /// A document that is not well-formed XML.
    #[error("{file}:{line}:{column}: {what}")]
    Xml {
        file: String,
        line: usize,
        column: usize,
        what: String,
    },
    /// A file that cannot be read; the cause is the error's source (printed once by a
    /// chain of causes).
    #[error("{file}: cannot read")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the queries name more than {max} distinct tags")]
    TooManyTags { max: usize },
    /// A query needs more stack columns than a thread block has threads (§4.4).
    #[error("query {id} needs {columns} stack columns; a thread block holds {max}")]
    QueryTooLarge { id: u32, columns: usize, max: usize },
    /// A document deeper than the shared-memory stack the GPU can hold (§4.5).
    #[error("document {doc} is {depth} elements deep; the GPU stack holds at most {max}")]
    DocumentTooDeep { doc: usize, depth: u32, max: u32 },
    /// A [`multi::MultiBatch`] encoded for a filter over another number of devices.
    #[error("a batch encoded for {runs} devices given to a filter over {devices}")]
    BatchForOtherDevices { runs: usize, devices: usize },
    /// [`DfaTables`] whose indices leave their arrays.
    #[error("lazy DFA tables: {what}")]
    BadTables { what: String },
    #[error(transparent)]
    Gpu(#[from] gpu_kernels::GpuError),
}
