//! The project's speed and memory targets, as data: `harness report` checks each one
//! against the recorded CSVs and prints a "Targets" table (met, missed, or not recorded).
//! A target names the experiment, the series and the x value it is read from, so the
//! number quoted is exactly one of the recorded points, never a hand-copied value; a
//! limit is stated in the goal's own unit, the CSV's value converted to it. Why a goal
//! is missed is measurement prose, kept as data beside the CSVs (`results/notes.toml`).

use crate::results::Row;

/// What a target asks of the recorded mean at (series, x).
#[derive(Clone, Copy, Debug)]
pub enum Check {
    /// The value, in the unit given (the goal's: `"µs"`, `"MB"`, `"GB/s"`, `"x"`; the
    /// recorded value is converted to it), must not exceed this.
    AtMost(f64, &'static str),
    /// The value, in the unit given, must reach at least this.
    AtLeast(f64, &'static str),
    /// The series must be at least `factor` times faster than `over` at the same x
    /// (for times: over / series; for throughputs: series / over).
    SpeedupOver { over: &'static str, factor: f64 },
}

/// One target: one goal read from one series at one x.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// What the target is about (`CCM`, `persistent kernels`, ...): the report's first
    /// column, grouping the goals.
    pub topic: &'static str,
    /// The target as stated (several targets may share one goal).
    pub goal: &'static str,
    /// The engine or path this row reads it from.
    pub what: &'static str,
    pub paper: &'static str,
    pub experiment: &'static str,
    pub series: &'static str,
    /// The x value; [`EVERY_X`] for every x the series was recorded at (a speedup
    /// target then reads the least speedup).
    pub x: f64,
    pub check: Check,
}

/// [`Target::x`] for "at every recorded x".
pub const EVERY_X: f64 = f64::NAN;

const fn t(
    topic: &'static str,
    goal: &'static str,
    what: &'static str,
    (paper, experiment): (&'static str, &'static str),
    series: &'static str,
    x: f64,
    check: Check,
) -> Target {
    Target {
        topic,
        goal,
        what,
        paper,
        experiment,
        series,
        x,
        check,
    }
}

const fn over(over: &'static str, factor: f64) -> Check {
    Check::SpeedupOver { over, factor }
}

/// Every target. Each goal (the target as stated) is read from one or more series: the
/// paper-faithful engine and the engines beyond the paper, so that a reader sees which
/// one meets it and what the faithful one does.
#[rustfmt::skip]
pub const TARGETS: &[Target] = &[
    // CCM: Table 2 rows are x = 1 (ms per event) and x = 3 (MB).
    t(T_CCM, CCM_LAT, "low-latency path (one launch, mapped memory)", ("ccm", "table2"), "gpu latency", 1.0, Check::AtMost(15.0, "µs")),
    t(T_CCM, CCM_LAT, "paper-faithful path (§4: copies, kernel, copy back)", ("ccm", "table2"), "gpu", 1.0, Check::AtMost(15.0, "µs")),
    t(T_CCM, CCM_SFF, "per event, low-latency path", ("ccm", "table2"), "gpu latency", 1.0, over("sff", 100.0)),
    t(T_CCM, CCM_SFF, "per event, paper-faithful path", ("ccm", "table2"), "gpu", 1.0, over("sff", 100.0)),
    t(T_CCM, CCM_SFF, "batched: time per event of a batch", ("ccm", "table2"), "gpu batched", 1.0, over("sff", 100.0)),
    t(T_CCM, CCM_RATE, "batched engine", ("ccm", "table2"), "gpu batched", 1.0, Check::AtMost(1.0, "µs")),
    t(T_CCM, CCM_MC, "batched engine", ("ccm", "table2"), "gpu batched", 1.0, over("sff all cores", 10.0)),
    t(T_CCM, CCM_MEM, "paper-faithful engine", ("ccm", "table2"), "gpu", 3.0, Check::AtMost(67.8, "MB")),
    t(T_CCM, CCM_MEM, "batched engine", ("ccm", "table2"), "gpu batched", 3.0, Check::AtMost(67.8, "MB")),
    // CLCB: Table 2 x = 2 is ms per event with location, x = 3 ms per update.
    t(T_CLCB, CLCB_LAT, "paper's Loc/Cont/Zip", ("clcb", "table2"), "gpu", 2.0, Check::AtMost(30.0, "µs")),
    t(T_CLCB, CLCB_LAT, "GPU spatial grid", ("clcb", "table2"), "gpu grid", 2.0, Check::AtMost(30.0, "µs")),
    t(T_CLCB, CLCB_LAT, "low-latency path, every filter", ("clcb", "table2"), "gpu latency", 2.0, Check::AtMost(30.0, "µs")),
    t(T_CLCB, CLCB_LAT, "low-latency path over the grid", ("clcb", "table2"), "gpu grid latency", 2.0, Check::AtMost(30.0, "µs")),
    t(T_CLCB, CLCB_BATCH, "batched passes over every filter", ("clcb", "table2"), "gpu batched", 2.0, Check::AtMost(2.0, "µs")),
    t(T_CLCB, CLCB_BATCH, "batched over the grid's candidates", ("clcb", "table2"), "gpu grid batched", 2.0, Check::AtMost(2.0, "µs")),
    t(T_CLCB, CLCB_UPD, "one launch carrying the update in its arguments", ("clcb", "table2"), "gpu", 3.0, Check::AtMost(3.0, "µs")),
    t(T_CLCB, CLCB_UPD, "two copies, no kernel", ("clcb", "table2"), "gpu copies", 3.0, Check::AtMost(3.0, "µs")),
    t(T_CLCB, CLCB_UPD, "low-latency mode: one 16-byte copy", ("clcb", "table2"), "gpu latency", 3.0, Check::AtMost(3.0, "µs")),
    t(T_CLCB, CLCB_UPDS, "batched updates, 1M subscriptions", ("clcb", "fig5a"), "gpu batched", 1e6, Check::AtMost(0.1, "µs")),
    t(T_CLCB, CLCB_RTREE_U, "batched passes over every filter", ("clcb", "fig3d"), "gpu batched", 1e6, over("rtree", 100.0)),
    t(T_CLCB, CLCB_RTREE_U, "per event over the grid", ("clcb", "fig3d"), "gpu grid", 1e6, over("rtree", 100.0)),
    t(T_CLCB, CLCB_RTREE_U, "batched over the grid", ("clcb", "fig3d"), "gpu grid batched", 1e6, over("rtree", 100.0)),
    t(T_CLCB, CLCB_RTREE_Z, "batched passes over every filter", ("clcb", "fig4d"), "gpu batched", 1e6, over("rtree", 100.0)),
    t(T_CLCB, CLCB_RTREE_Z, "per event over the grid", ("clcb", "fig4d"), "gpu grid", 1e6, over("rtree", 100.0)),
    t(T_CLCB, CLCB_RTREE_Z, "batched over the grid", ("clcb", "fig4d"), "gpu grid batched", 1e6, over("rtree", 100.0)),
    // CLCB against today's best CPU method: the grid index with a content index per
    // cell (`grid`, one thread; `grid all cores`), and the best all-core CPU series.
    t(T_CLCB_BEST, CLCB_BEST_T2, "batched passes over every filter", ("clcb", "table2"), "gpu batched", 2.0, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_T2, "batched over the grid's candidates", ("clcb", "table2"), "gpu grid batched", 2.0, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 3a (uniform, 0.001%), batched over the grid", ("clcb", "fig3a"), "gpu grid batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 3b (uniform, 0.01%), batched over the grid", ("clcb", "fig3b"), "gpu grid batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 3c (uniform, 0.1%), batched over the grid", ("clcb", "fig3c"), "gpu grid batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 3d (uniform, 1%), batched over the grid", ("clcb", "fig3d"), "gpu grid batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 4a (Zipf, 0.001%), batched over the grid", ("clcb", "fig4a"), "gpu grid batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 4b (Zipf, 0.01%), batched over the grid", ("clcb", "fig4b"), "gpu grid batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 4c (Zipf, 0.1%), batched over the grid", ("clcb", "fig4c"), "gpu grid batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 4d (Zipf, 1%), batched over the grid", ("clcb", "fig4d"), "gpu grid batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_T2, "cell index: content keys inside the grid's cells", ("clcb", "table2"), "gpu cells batched", 2.0, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 3a (uniform, 0.001%), cell index", ("clcb", "fig3a"), "gpu cells batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 3b (uniform, 0.01%), cell index", ("clcb", "fig3b"), "gpu cells batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 3c (uniform, 0.1%), cell index", ("clcb", "fig3c"), "gpu cells batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 3d (uniform, 1%), cell index", ("clcb", "fig3d"), "gpu cells batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 4a (Zipf, 0.001%), cell index", ("clcb", "fig4a"), "gpu cells batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 4b (Zipf, 0.01%), cell index", ("clcb", "fig4b"), "gpu cells batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 4c (Zipf, 0.1%), cell index", ("clcb", "fig4c"), "gpu cells batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 4d (Zipf, 1%), cell index", ("clcb", "fig4d"), "gpu cells batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 3d (uniform, 1%), batched over every filter", ("clcb", "fig3d"), "gpu batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_FIGS, "Fig. 4d (Zipf, 1%), batched over every filter", ("clcb", "fig4d"), "gpu batched", 1e6, over(BEST, 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_MOVE, "one launch carrying the update, uniform", ("clcb", "fig5a"), "gpu", 1e6, Check::AtMost(2.0, "µs")),
    t(T_CLCB_BEST, CLCB_BEST_MOVE, "one launch carrying the update, Zipf", ("clcb", "fig5b"), "gpu", 1e6, Check::AtMost(2.0, "µs")),
    t(T_CLCB_BEST, CLCB_BEST_MOVE_CPU, "one launch carrying the update, uniform", ("clcb", "fig5a"), "gpu", 1e6, over("grid", 1.0)),
    t(T_CLCB_BEST, CLCB_BEST_MOVE_CPU, "one launch carrying the update, Zipf", ("clcb", "fig5b"), "gpu", 1e6, over("grid", 1.0)),
    t(T_CLCB_BEST, CLCB_BEST_MOVE_CPU, "low-latency mode: one 16-byte copy, uniform", ("clcb", "fig5a"), "gpu latency", 1e6, over("grid", 1.0)),
    t(T_CLCB_BEST, CLCB_BEST_MOVE, "cell index: tombstones + overflow, one launch per flush, uniform", ("clcb", "fig5a"), "gpu cells", 1e6, Check::AtMost(2.0, "µs")),
    t(T_CLCB_BEST, CLCB_BEST_MOVE, "cell index: tombstones + overflow, one launch per flush, Zipf", ("clcb", "fig5b"), "gpu cells", 1e6, Check::AtMost(2.0, "µs")),
    t(T_CLCB_BEST, CLCB_BEST_MOVE_CPU, "cell index, uniform", ("clcb", "fig5a"), "gpu cells", 1e6, over("grid", 1.0)),
    t(T_CLCB_BEST, CLCB_BEST_MOVE_CPU, "cell index, Zipf", ("clcb", "fig5b"), "gpu cells", 1e6, over("grid", 1.0)),
    t(T_CLCB_BEST, CLCB_GRID_T2, "grid index, one thread", ("clcb", "table2"), "grid", 2.0, over("rtree", 10.0)),
    t(T_CLCB_BEST, CLCB_GRID_KW, "grid index, one thread", ("clcb", "keywords"), "grid A=1%", 1e6, over("rtree A=1%", 30.0)),
    t(T_CLCB_BEST, CLCB_BEST_KW, "batched over the grid, 1% regions", ("clcb", "keywords"), "gpu grid batched A=1%", 1e6, over("best CPU (all cores) A=1%", 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_KW, "batched over the grid, 0.01% regions", ("clcb", "keywords"), "gpu grid batched A=0.01%", 1e6, over("best CPU (all cores) A=0.01%", 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_KW, "cell index, 1% regions", ("clcb", "keywords"), "gpu cells batched A=1%", 1e6, over("best CPU (all cores) A=1%", 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_KW, "cell index, 0.01% regions", ("clcb", "keywords"), "gpu cells batched A=0.01%", 1e6, over("best CPU (all cores) A=0.01%", 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_KW, "batched over every filter, 1% regions", ("clcb", "keywords"), "gpu batched A=1%", 1e6, over("best CPU (all cores) A=1%", 10.0)),
    t(T_CLCB_BEST, CLCB_BEST_KW, "batched over every filter, 0.01% regions", ("clcb", "keywords"), "gpu batched A=0.01%", 1e6, over("best CPU (all cores) A=0.01%", 10.0)),
    // Persistent kernels: the latency experiments' rows are µs at x = the
    // percentile; CLCB Table 2's x = 3 is ms per area update.
    t(T_PERSIST, PERSIST_CCM50, "persistent kernel, one event at a time", ("ccm", "latency"), "gpu persistent", 50.0, Check::AtMost(5.0, "µs")),
    t(T_PERSIST, PERSIST_CCM99, "persistent kernel, one event at a time", ("ccm", "latency"), "gpu persistent", 99.0, Check::AtMost(8.0, "µs")),
    t(T_PERSIST, PERSIST_CLCB50, "persistent kernel, one event at a time", ("clcb", "latency"), "gpu persistent", 50.0, Check::AtMost(6.0, "µs")),
    t(T_PERSIST, PERSIST_CLCB50, "persistent kernel over the grid index", ("clcb", "latency"), "gpu grid persistent", 50.0, Check::AtMost(6.0, "µs")),
    t(T_PERSIST, PERSIST_UPD, "persistent kernel: updates through the ring", ("clcb", "table2"), "gpu persistent", 3.0, Check::AtMost(3.0, "µs")),
    t(T_PERSIST, PERSIST_UPD, "persistent kernel over the grid: updates through the ring", ("clcb", "table2"), "gpu grid persistent", 3.0, Check::AtMost(3.0, "µs")),
    // XML: Fig. 7 is MB/s (higher is better) over one 1 MB document.
    t(T_XML, XML_NFA, "paper's block kernel (§4.2)", ("xml", "fig7"), "gpu-block L=10", 256.0, over("yfilter L=10", 10.0)),
    t(T_XML, XML_NFA, "warp-synchronous kernel", ("xml", "fig7"), "gpu L=10", 256.0, over("yfilter L=10", 10.0)),
    t(T_XML, XML_NFA, "document segments in parallel", ("xml", "fig7"), "gpu-seg L=10", 256.0, over("yfilter L=10", 10.0)),
    t(T_XML, XML_MOON, "document segments in parallel", ("xml", "fig7"), "gpu-seg L=10", 256.0, over("yfilter L=10", 50.0)),
    t(T_XML, XML_MC, "documents in flight in one launch", ("xml", "fig10b"), "gpu vs yfilter-mc", 1000.0, Check::AtLeast(5.0, "x")),
    // XML against the strongest CPU filter: the lazy DFA with the word-parallel twig join
    // (baselines::lazy_dfa), timed from a cache trained on other documents. Fig. 9
    // times the NFA on all cores only, so its twig row compares all cores with all cores.
    t(T_XML_STRONG, XML_LAZY_PATHS, "lazy DFA, one core, linear paths of 5 steps", ("xml", "paths"), "lazy-dfa L=5", 2048.0, over("yfilter L=5", 10.0)),
    t(T_XML_STRONG, XML_LAZY_PATHS, "lazy DFA, one core, linear paths of 10 steps", ("xml", "paths"), "lazy-dfa L=10", 2048.0, over("yfilter L=10", 10.0)),
    t(T_XML_STRONG, XML_LAZY_TWIGS, "lazy DFA, one core, Fig. 7 twigs of 10 nodes, 1024 queries", ("xml", "fig7"), "lazy-dfa L=10", 1024.0, over("yfilter L=10", 3.0)),
    t(T_XML_STRONG, XML_LAZY_TWIGS, "lazy DFA, one core, Fig. 7 twigs of 10 nodes, 2048 queries", ("xml", "fig7"), "lazy-dfa L=10", 2048.0, over("yfilter L=10", 3.0)),
    t(T_XML_STRONG, XML_LAZY_TWIGS, "lazy DFA, all cores over the NFA on all cores, Fig. 9 twigs of 10 nodes", ("xml", "fig9"), "lazy-dfa-mc L=10", 2048.0, over("yfilter-mc L=10", 3.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "kernels, Fig. 7 (one 1 MB document, 10 nodes)", ("xml", "fig7"), "gpu L=10", 2048.0, over("best CPU (all cores) L=10", 10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "document segments, Fig. 7 (one 1 MB document, 10 nodes)", ("xml", "fig7"), "gpu-seg L=10", 2048.0, over("best CPU (all cores) L=10", 10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "kernels, Fig. 8 (one 2 MB document, */// 30%)", ("xml", "fig8"), "gpu vs best CPU (all cores) p=30%", 2048.0, Check::AtLeast(10.0, "x")),
    t(T_XML_STRONG, XML_GPU_BEST, "document segments, Fig. 8 (one 2 MB document, */// 30%)", ("xml", "fig8"), "gpu-seg vs best CPU (all cores) p=30%", 2048.0, Check::AtLeast(10.0, "x")),
    t(T_XML_STRONG, XML_GPU_BEST, "the lazy DFA's warm path in segments, Fig. 7 (one 1 MB document, 10 nodes)", ("xml", "fig7"), "gpu-dfa L=10", 2048.0, over("best CPU (all cores) L=10", 10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "the lazy DFA's warm path in segments, Fig. 8 (one 2 MB document, */// 30%)",
        ("xml", "fig8"), "gpu-dfa vs best CPU (all cores) p=30%", 2048.0, Check::AtLeast(10.0, "x")),
    t(T_XML_STRONG, XML_GPU_BEST, "kernels, Fig. 9 (500 documents, 10 nodes)", ("xml", "fig9"), "gpu L=10", 2048.0, over("best CPU (all cores) L=10", 10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "kernels, Fig. 10a (500 documents)", ("xml", "fig10a"), "gpu vs best CPU (all cores)", 2000.0, Check::AtLeast(10.0, "x")),
    t(T_XML_STRONG, XML_GPU_BEST, "kernels, Fig. 10b (1000 documents)", ("xml", "fig10b"), "gpu vs best CPU (all cores)", 2000.0, Check::AtLeast(10.0, "x")),
    t(T_XML_STRONG, XML_GPU_BEST, "the lazy DFA's warm path, Fig. 9 (500 documents, 5 nodes)", ("xml", "fig9"), "gpu-dfa L=5", 2048.0, over("best CPU (all cores) L=5", 10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "the lazy DFA's warm path, Fig. 9 (500 documents, 10 nodes)", ("xml", "fig9"), "gpu-dfa L=10", 2048.0, over("best CPU (all cores) L=10", 10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "the lazy DFA's warm path, Fig. 9 (500 documents, 15 nodes)", ("xml", "fig9"), "gpu-dfa L=15", 2048.0, over("best CPU (all cores) L=15", 10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "the lazy DFA's warm path, Fig. 10a (500 documents)", ("xml", "fig10a"), "gpu-dfa vs best CPU (all cores)", 2000.0, Check::AtLeast(10.0, "x")),
    t(T_XML_STRONG, XML_GPU_BEST, "the lazy DFA's warm path, Fig. 10b (1000 documents)", ("xml", "fig10b"), "gpu-dfa vs best CPU (all cores)", 2000.0, Check::AtLeast(10.0, "x")),
    t(T_XML_STRONG, XML_BIGDOC, "document segments in parallel", ("xml", "bigdoc"), "gpu-seg", 100.0, Check::AtLeast(3.0, "GB/s")),
    t(T_XML_STRONG, XML_BIGDOC, "kernels, the document whole", ("xml", "bigdoc"), "gpu", 100.0, Check::AtLeast(3.0, "GB/s")),
    t(T_XML_STRONG, XML_BIGDOC, "the lazy DFA's warm path in segments", ("xml", "bigdoc"), "gpu-dfa", 100.0, Check::AtLeast(3.0, "GB/s")),
    // DDM: times per step (ms) at 32768 regions; counting time at 1M regions.
    t(T_DDM, DDM_BRUTE10, "paper's REGION", ("ddm", "fig5_7"), "gpu-region", 32768.0, over("brute", 200.0)),
    t(T_DDM, DDM_BRUTE10, "paper's GRID", ("ddm", "fig5_7"), "gpu-grid", 32768.0, over("brute", 200.0)),
    t(T_DDM, DDM_BRUTE10, "REGION, sliced Phase 3", ("ddm", "fig5_7"), "gpu-region-sliced", 32768.0, over("brute", 200.0)),
    t(T_DDM, DDM_BRUTE100, "paper's REGION", ("ddm", "fig6_8"), "gpu-region", 32768.0, over("brute", 200.0)),
    t(T_DDM, DDM_BRUTE100, "paper's GRID", ("ddm", "fig6_8"), "gpu-grid", 32768.0, over("brute", 200.0)),
    t(T_DDM, DDM_BRUTE100, "REGION, sliced Phase 3", ("ddm", "fig6_8"), "gpu-region-sliced", 32768.0, over("brute", 200.0)),
    t(T_DDM, DDM_SORT10, "paper's GRID", ("ddm", "fig5_7"), "gpu-grid", 32768.0, over("sort", 20.0)),
    t(T_DDM, DDM_SORT10, "REGION, sliced Phase 3", ("ddm", "fig5_7"), "gpu-region-sliced", 32768.0, over("sort", 20.0)),
    t(T_DDM, DDM_SORT10, "GPU sort-based sweep", ("ddm", "fig5_7"), "gpu-sweep", 32768.0, over("sort", 20.0)),
    t(T_DDM, DDM_SORT100, "paper's GRID", ("ddm", "fig6_8"), "gpu-grid", 32768.0, over("sort", 20.0)),
    t(T_DDM, DDM_SORT100, "REGION, sliced Phase 3", ("ddm", "fig6_8"), "gpu-region-sliced", 32768.0, over("sort", 20.0)),
    t(T_DDM, DDM_SORT100, "GPU sort-based sweep", ("ddm", "fig6_8"), "gpu-sweep", 32768.0, over("sort", 20.0)),
    t(T_DDM, DDM_PAR1, "GPU sweep, regions on the device", ("ddm", "scaleup_a1"), "gpu-sweep", 1048576.0, over("sort-par", 10.0)),
    t(T_DDM, DDM_PAR1, "GPU sweep, counting the upload of the regions", ("ddm", "scaleup_a1"), "gpu-sweep+upload", 1048576.0, over("sort-par", 10.0)),
    t(T_DDM, DDM_PAR100, "GPU sweep, regions on the device", ("ddm", "scaleup_a100"), "gpu-sweep", 1048576.0, over("sort-par", 10.0)),
    t(T_DDM, DDM_PAR100, "GPU sweep, counting the upload of the regions", ("ddm", "scaleup_a100"), "gpu-sweep+upload", 1048576.0, over("sort-par", 10.0)),
    // DDM against today's strong CPU methods (Marzolla & D'Angelo's SBM / ITM)
    // on all host cores; "best CPU (all cores)" is the fastest all-core CPU series per seed.
    t(T_DDM_STRONG, STRONG_SBM8, "SBM on all host cores over SBM on one", ("ddm", "scaleup_a1"), "sbm-par", 1048576.0, over("sbm", 8.0)),
    t(T_DDM_STRONG, STRONG_SBM8, "SBM on all host cores over SBM on one, alpha 100", ("ddm", "scaleup_a100"), "sbm-par", 1048576.0, over("sbm", 8.0)),
    t(T_DDM_STRONG, STRONG_SWEEP1, "GPU sweep, regions on the device", ("ddm", "scaleup_a1"), "gpu-sweep", 1048576.0, over("sbm-par", 20.0)),
    t(T_DDM_STRONG, STRONG_SWEEP1, "GPU sweep, counting the upload of the regions", ("ddm", "scaleup_a1"), "gpu-sweep+upload", 1048576.0, over("sbm-par", 20.0)),
    t(T_DDM_STRONG, STRONG_SWEEP1, "GPU sweep over the best CPU series on all cores", ("ddm", "scaleup_a1"), "gpu-sweep", 1048576.0, over("best CPU (all cores)", 20.0)),
    t(T_DDM_STRONG, STRONG_SWEEP100, "GPU sweep, regions on the device", ("ddm", "scaleup_a100"), "gpu-sweep", 1048576.0, over("sbm-par", 20.0)),
    t(T_DDM_STRONG, STRONG_SWEEP100, "GPU sweep, counting the upload of the regions", ("ddm", "scaleup_a100"), "gpu-sweep+upload", 1048576.0, over("sbm-par", 20.0)),
    t(T_DDM_STRONG, STRONG_SWEEP100, "GPU sweep over the best CPU series on all cores", ("ddm", "scaleup_a100"), "gpu-sweep", 1048576.0, over("best CPU (all cores)", 20.0)),
    t(T_DDM_STRONG, STRONG_GRID10, "paper's GRID", ("ddm", "fig5_7"), "gpu-grid", 32768.0, over("sbm-par", 10.0)),
    t(T_DDM_STRONG, STRONG_GRID10, "paper's GRID over the best CPU series on all cores", ("ddm", "fig5_7"), "gpu-grid", 32768.0, over("best CPU (all cores)", 10.0)),
    t(T_DDM_STRONG, STRONG_GRID10, "GPU sort-based sweep", ("ddm", "fig5_7"), "gpu-sweep", 32768.0, over("sbm-par", 10.0)),
    t(T_DDM_STRONG, STRONG_GRID10, "bisect engine (sorted tiles)", ("ddm", "fig5_7"), "gpu-bisect", 32768.0, over("sbm-par", 10.0)),
    t(T_DDM_STRONG, STRONG_GRID10, "bisect engine (sorted tiles) over the best CPU series on all cores", ("ddm", "fig5_7"), "gpu-bisect", 32768.0, over("best CPU (all cores)", 10.0)),
    t(T_DDM_STRONG, STRONG_GRID100, "paper's GRID", ("ddm", "fig6_8"), "gpu-grid", 32768.0, over("sbm-par", 10.0)),
    t(T_DDM_STRONG, STRONG_GRID100, "paper's GRID over the best CPU series on all cores", ("ddm", "fig6_8"), "gpu-grid", 32768.0, over("best CPU (all cores)", 10.0)),
    t(T_DDM_STRONG, STRONG_GRID100, "GPU sort-based sweep", ("ddm", "fig6_8"), "gpu-sweep", 32768.0, over("sbm-par", 10.0)),
    t(T_DDM_STRONG, STRONG_GRID100, "bisect engine (sorted tiles)", ("ddm", "fig6_8"), "gpu-bisect", 32768.0, over("sbm-par", 10.0)),
    t(T_DDM_STRONG, STRONG_GRID100, "bisect engine (sorted tiles) over the best CPU series on all cores", ("ddm", "fig6_8"), "gpu-bisect", 32768.0, over("best CPU (all cores)", 10.0)),
    // DDM ahead of the best published GPU and CPU interval matchers (the peer: Marzolla,
    // Birolo, D'Angelo & Fariselli's Thrust intersection counting, 4.95 ms for 1M
    // intervals on the H100, transfers included), end to end, at every density.
    t(T_DDM_AHEAD, AHEAD_PEER, "binary-search count from host memory (worst degree)", ("ddm", "density"), "gpu-bisect+upload", EVERY_X, Check::AtMost(4.95, "ms")),
    t(T_DDM_AHEAD, AHEAD_PEER, "sort-based sweep from host memory (worst degree)", ("ddm", "density"), "gpu-sweep+upload", EVERY_X, Check::AtMost(4.95, "ms")),
    t(T_DDM_AHEAD, AHEAD_CPU_1D, "binary-search count from host memory (least speedup)", ("ddm", "density"), "gpu-bisect+upload", EVERY_X, over("best CPU (all cores)", 10.0)),
    t(T_DDM_AHEAD, AHEAD_PEER_4M, "binary-search count from host memory (worst degree)", ("ddm", "density_4m"), "gpu-bisect+upload", EVERY_X, Check::AtMost(20.3, "ms")),
    t(T_DDM_AHEAD, AHEAD_PEER_4M, "sort-based sweep from host memory (worst degree)", ("ddm", "density_4m"), "gpu-sweep+upload", EVERY_X, Check::AtMost(20.3, "ms")),
    t(T_DDM_AHEAD, AHEAD_CPU_1D_4M, "binary-search count from host memory (least speedup)", ("ddm", "density_4m"), "gpu-bisect+upload", EVERY_X, over("best CPU (all cores)", 10.0)),
    t(T_DDM_AHEAD, AHEAD_SCALE1, "bisect engine from host memory", ("ddm", "scaleup_a1"), "gpu-bisect+upload", 1048576.0, over("best CPU (all cores)", 10.0)),
    t(T_DDM_AHEAD, AHEAD_SCALE1, "sort-based sweep from host memory", ("ddm", "scaleup_a1"), "gpu-sweep+upload", 1048576.0, over("best CPU (all cores)", 10.0)),
    t(T_DDM_AHEAD, AHEAD_SCALE100, "bisect engine from host memory", ("ddm", "scaleup_a100"), "gpu-bisect+upload", 1048576.0, over("best CPU (all cores)", 10.0)),
    t(T_DDM_AHEAD, AHEAD_SCALE100, "sort-based sweep from host memory", ("ddm", "scaleup_a100"), "gpu-sweep+upload", 1048576.0, over("best CPU (all cores)", 10.0)),
    t(T_DDM_AHEAD, AHEAD_KERNEL1, "bisect engine, regions on the device", ("ddm", "scaleup_a1"), "gpu-bisect", 1048576.0, over("best CPU (all cores)", 30.0)),
    t(T_DDM_AHEAD, AHEAD_KERNEL100, "bisect engine, regions on the device", ("ddm", "scaleup_a100"), "gpu-bisect", 1048576.0, over("best CPU (all cores)", 15.0)),
    t(T_DDM_AHEAD, AHEAD_STEP, "paper's GRID, Figs. 5/7", ("ddm", "fig5_7"), "gpu-grid", 32768.0, over("sbm-par", 15.0)),
    t(T_DDM_AHEAD, AHEAD_STEP, "bisect engine (sorted tiles), Figs. 5/7", ("ddm", "fig5_7"), "gpu-bisect", 32768.0, over("sbm-par", 15.0)),
    t(T_DDM_AHEAD, AHEAD_STEP, "paper's GRID, Figs. 6/8", ("ddm", "fig6_8"), "gpu-grid", 32768.0, over("sbm-par", 15.0)),
    t(T_DDM_AHEAD, AHEAD_STEP, "bisect engine (sorted tiles), Figs. 6/8", ("ddm", "fig6_8"), "gpu-bisect", 32768.0, over("sbm-par", 15.0)),
    t(T_DDM_AHEAD, AHEAD_STEP, "paper's GRID, Figs. 9/11", ("ddm", "fig9_11"), "gpu-grid", 32768.0, over("sbm-par", 15.0)),
    t(T_DDM_AHEAD, AHEAD_STEP, "bisect engine (sorted tiles), Figs. 9/11", ("ddm", "fig9_11"), "gpu-bisect", 32768.0, over("sbm-par", 15.0)),
    t(T_DDM_AHEAD, AHEAD_STEP, "paper's GRID, Figs. 10/12", ("ddm", "fig10_12"), "gpu-grid", 32768.0, over("sbm-par", 15.0)),
    t(T_DDM_AHEAD, AHEAD_STEP, "bisect engine (sorted tiles), Figs. 10/12", ("ddm", "fig10_12"), "gpu-bisect", 32768.0, over("sbm-par", 15.0)),
    t(T_DDM_AHEAD, AHEAD_PAIRS, "bisect engine from host memory, 1-D", ("ddm", "pairs"), "gpu-bisect+upload", 1048576.0, over("sbm-par", 5.0)),
    t(T_DDM_AHEAD, AHEAD_PAIRS, "bisect engine from host memory, 2-D", ("ddm", "pairs_2d"), "gpu-bisect+upload", 1048576.0, over("sbm-par", 5.0)),
    // CCM against a modern content index on all host cores (Table 2 row 1).
    t(T_CCM_STRONG, STRONG_CCM, "batched engine over the index on all cores", ("ccm", "table2"), "gpu batched", 1.0, over("index all cores", 20.0)),
    t(T_CCM_STRONG, STRONG_CCM, "batched engine over the best CPU series on all cores", ("ccm", "table2"), "gpu batched", 1.0, over("best CPU (all cores)", 20.0)),
    // CCM's hybrid CPU index (a value index of the REIN / HEM class and the
    // content index, the cheaper chosen per event) against the content index, one thread
    // each, and on all host cores against its one thread. The dense experiments (beyond
    // the paper: the REIN / HEM model, x = names per event) name the filter count in their
    // series (`F=100k`, `F=1M`); Table 2's rows 1 and 4 are the paper's default scenario,
    // uniform and Zipf names. Each point is its own goal: all of them must hold.
    // CCM's pruning index on the GPU (`gpu index`) against the best CPU series on all
    // host cores, the GPU's time including the copies of the events in and the answers
    // out: the default scenario (Table 2 rows 1 and 4), every workload of the dense
    // experiments, every x of Figs. 6-11 (the least speedup over the sweep), its
    // deployment and its memory.
    t(T_GPU_INDEX, GPU_T2, "pruning index, uniform names", ("ccm", "table2"), "gpu index", 1.0, over(BEST, 10.0)),
    t(T_GPU_INDEX, GPU_T2, "pruning index, Zipf names", ("ccm", "table2"), "gpu index", 4.0, over(BEST, 10.0)),
    t(T_GPU_INDEX, GPU_DENSE, "pruning index, 100k filters, 3-5 names", ("ccm", "dense"), "gpu index F=100k", 4.0, over("best CPU (all cores) F=100k", 10.0)),
    t(T_GPU_INDEX, GPU_DENSE, "pruning index, 100k filters, 10 names", ("ccm", "dense"), "gpu index F=100k", 10.0, over("best CPU (all cores) F=100k", 10.0)),
    t(T_GPU_INDEX, GPU_DENSE, "pruning index, 100k filters, 20 names", ("ccm", "dense"), "gpu index F=100k", 20.0, over("best CPU (all cores) F=100k", 10.0)),
    t(T_GPU_INDEX, GPU_DENSE, "pruning index, 1M filters, 3-5 names", ("ccm", "dense"), "gpu index F=1M", 4.0, over("best CPU (all cores) F=1M", 10.0)),
    t(T_GPU_INDEX, GPU_DENSE, "pruning index, 1M filters, 10 names", ("ccm", "dense"), "gpu index F=1M", 10.0, over("best CPU (all cores) F=1M", 10.0)),
    t(T_GPU_INDEX, GPU_DENSE, "pruning index, 1M filters, 20 names", ("ccm", "dense"), "gpu index F=1M", 20.0, over("best CPU (all cores) F=1M", 10.0)),
    t(T_GPU_INDEX, GPU_DENSE10, "pruning index, 100k filters, 3-5 names", ("ccm", "dense10"), "gpu index F=100k", 4.0, over("best CPU (all cores) F=100k", 10.0)),
    t(T_GPU_INDEX, GPU_DENSE10, "pruning index, 100k filters, 10 names", ("ccm", "dense10"), "gpu index F=100k", 10.0, over("best CPU (all cores) F=100k", 10.0)),
    t(T_GPU_INDEX, GPU_DENSE10, "pruning index, 100k filters, 20 names", ("ccm", "dense10"), "gpu index F=100k", 20.0, over("best CPU (all cores) F=100k", 10.0)),
    t(T_GPU_INDEX, GPU_DENSE10, "pruning index, 1M filters, 3-5 names", ("ccm", "dense10"), "gpu index F=1M", 4.0, over("best CPU (all cores) F=1M", 10.0)),
    t(T_GPU_INDEX, GPU_DENSE10, "pruning index, 1M filters, 10 names", ("ccm", "dense10"), "gpu index F=1M", 10.0, over("best CPU (all cores) F=1M", 10.0)),
    t(T_GPU_INDEX, GPU_DENSE10, "pruning index, 1M filters, 20 names", ("ccm", "dense10"), "gpu index F=1M", 20.0, over("best CPU (all cores) F=1M", 10.0)),
    t(T_GPU_INDEX, GPU_FIGS, "pruning index, Fig. 6 (least over the sweep)", ("ccm", "fig6"), "gpu index", EVERY_X, over(BEST, 5.0)),
    t(T_GPU_INDEX, GPU_FIGS, "pruning index, Fig. 7 (least over the sweep)", ("ccm", "fig7"), "gpu index", EVERY_X, over(BEST, 5.0)),
    t(T_GPU_INDEX, GPU_FIGS, "pruning index, Fig. 8 (least over the sweep)", ("ccm", "fig8"), "gpu index", EVERY_X, over(BEST, 5.0)),
    t(T_GPU_INDEX, GPU_FIGS, "pruning index, Fig. 9 (least over the sweep)", ("ccm", "fig9"), "gpu index", EVERY_X, over(BEST, 5.0)),
    t(T_GPU_INDEX, GPU_FIGS, "pruning index, Fig. 10 (least over the sweep)", ("ccm", "fig10"), "gpu index", EVERY_X, over(BEST, 5.0)),
    t(T_GPU_INDEX, GPU_FIGS, "pruning index, Fig. 11 (least over the sweep)", ("ccm", "fig11"), "gpu index", EVERY_X, over(BEST, 5.0)),
    t(T_GPU_INDEX, GPU_DEPLOY, "pruning index over the hybrid index's build", ("ccm", "table2"), "gpu index", 2.0, over("hybrid", 1.0)),
    t(T_GPU_INDEX, GPU_DEPLOY, "pruning index over the content index's build", ("ccm", "table2"), "gpu index", 2.0, over("index", 1.0)),
    t(T_GPU_INDEX, GPU_MEMORY, "pruning index against the hybrid index", ("ccm", "table2"), "gpu index", 3.0, over("hybrid", 0.5)),
    t(T_GPU_INDEX, GPU_MEMORY, "pruning index against the content index", ("ccm", "table2"), "gpu index", 3.0, over("index", 0.5)),
    t(T_HYBRID, HYBRID_D100K10, "hybrid index, one thread", ("ccm", "dense"), "hybrid F=100k", 10.0, over("index F=100k", 10.0)),
    t(T_HYBRID, HYBRID_D100K20, "hybrid index, one thread", ("ccm", "dense"), "hybrid F=100k", 20.0, over("index F=100k", 10.0)),
    t(T_HYBRID, HYBRID_D1M10, "hybrid index, one thread", ("ccm", "dense"), "hybrid F=1M", 10.0, over("index F=1M", 10.0)),
    t(T_HYBRID, HYBRID_D1M20, "hybrid index, one thread", ("ccm", "dense"), "hybrid F=1M", 20.0, over("index F=1M", 10.0)),
    t(T_HYBRID, HYBRID_T2_1, "hybrid index, one thread", ("ccm", "table2"), "hybrid", 1.0, over("index", 1.0)),
    t(T_HYBRID, HYBRID_T2_4, "hybrid index, one thread", ("ccm", "table2"), "hybrid", 4.0, over("index", 1.0)),
    t(T_HYBRID, HYBRID_D10_100K4, "hybrid index, one thread", ("ccm", "dense10"), "hybrid F=100k", 4.0, over("index F=100k", 1.0)),
    t(T_HYBRID, HYBRID_D10_100K10, "hybrid index, one thread", ("ccm", "dense10"), "hybrid F=100k", 10.0, over("index F=100k", 1.0)),
    t(T_HYBRID, HYBRID_D10_100K20, "hybrid index, one thread", ("ccm", "dense10"), "hybrid F=100k", 20.0, over("index F=100k", 1.0)),
    t(T_HYBRID, HYBRID_D10_1M4, "hybrid index, one thread", ("ccm", "dense10"), "hybrid F=1M", 4.0, over("index F=1M", 1.0)),
    t(T_HYBRID, HYBRID_D10_1M10, "hybrid index, one thread", ("ccm", "dense10"), "hybrid F=1M", 10.0, over("index F=1M", 1.0)),
    t(T_HYBRID, HYBRID_D10_1M20, "hybrid index, one thread", ("ccm", "dense10"), "hybrid F=1M", 20.0, over("index F=1M", 1.0)),
    t(T_HYBRID, HYBRID_FIXED, "hybrid index, one thread", ("ccm", "fixedcost"), "hybrid", 1_000_000.0, Check::AtMost(2.0, "µs")),
    t(T_HYBRID, HYBRID_FIXED, "content index, one thread", ("ccm", "fixedcost"), "index", 1_000_000.0, Check::AtMost(2.0, "µs")),
    t(T_HYBRID, HYBRID_ALL_D4, "hybrid index on all host cores over its one thread", ("ccm", "dense"), "hybrid all cores F=1M", 4.0, over("hybrid F=1M", 12.0)),
    t(T_HYBRID, HYBRID_ALL_D10, "hybrid index on all host cores over its one thread", ("ccm", "dense"), "hybrid all cores F=1M", 10.0, over("hybrid F=1M", 12.0)),
    t(T_HYBRID, HYBRID_ALL_D20, "hybrid index on all host cores over its one thread", ("ccm", "dense"), "hybrid all cores F=1M", 20.0, over("hybrid F=1M", 12.0)),
    t(T_HYBRID, HYBRID_ALL_D10_4, "hybrid index on all host cores over its one thread", ("ccm", "dense10"), "hybrid all cores F=1M", 4.0, over("hybrid F=1M", 12.0)),
    t(T_HYBRID, HYBRID_ALL_D10_10, "hybrid index on all host cores over its one thread", ("ccm", "dense10"), "hybrid all cores F=1M", 10.0, over("hybrid F=1M", 12.0)),
    t(T_HYBRID, HYBRID_ALL_D10_20, "hybrid index on all host cores over its one thread", ("ccm", "dense10"), "hybrid all cores F=1M", 20.0, over("hybrid F=1M", 12.0)),
    t(T_HYBRID, HYBRID_ALL_HEM, "hybrid index on all host cores over its one thread, 3-5 names", ("ccm", "hem"), "hybrid all cores F=1M", 4.0, over("hybrid F=1M", 14.0)),
    t(T_HYBRID, HYBRID_ALL_HEM, "hybrid index on all host cores over its one thread, 10 names", ("ccm", "hem"), "hybrid all cores F=1M", 10.0, over("hybrid F=1M", 14.0)),
    t(T_HYBRID, HYBRID_ALL_HEM, "hybrid index on all host cores over its one thread, 20 names", ("ccm", "hem"), "hybrid all cores F=1M", 20.0, over("hybrid F=1M", 14.0)),
    t(T_HYBRID, HYBRID_ALL_HEM, "hybrid index on all host cores over its one thread, 5-10 Zipf-drawn names",
        ("ccm", "hem"), "hybrid all cores F=1M Zipf", 7.5, over("hybrid F=1M Zipf", 14.0)),
    // Many GPUs: the partitioned engine's throughput over its own on one GPU.
    t(T_MULTI, MULTI_2, "CCM index by interface, Table 2 default", ("ccm", "scaling"), "gpu multi model=table2 F=250k speedup", 2.0, Check::AtLeast(1.8, "x")),
    t(T_MULTI, MULTI_2, "CCM index by filter, Table 2 default", ("ccm", "scaling"), "gpu multi by-filter model=table2 F=250k speedup", 2.0, Check::AtLeast(1.8, "x")),
    t(T_MULTI, MULTI_2, "CCM index on every GPU, events cut, Table 2 default", ("ccm", "scaling"), "gpu multi by-event model=table2 F=250k speedup", 2.0, Check::AtLeast(1.8, "x")),
    t(T_MULTI, MULTI_2, "CCM index, dense 1M filters, 20 names", ("ccm", "scaling"), "gpu multi model=dense F=1M speedup", 2.0, Check::AtLeast(1.8, "x")),
    t(T_MULTI, MULTI_2, "CCM index on every GPU, events cut, dense 1M filters, 20 names", ("ccm", "scaling"), "gpu multi by-event model=dense F=1M speedup", 2.0, Check::AtLeast(1.8, "x")),
    t(T_MULTI, MULTI_4, "CCM index by interface, Table 2 default", ("ccm", "scaling"), "gpu multi model=table2 F=250k speedup", 4.0, Check::AtLeast(3.4, "x")),
    t(T_MULTI, MULTI_4, "CCM index by filter, Table 2 default", ("ccm", "scaling"), "gpu multi by-filter model=table2 F=250k speedup", 4.0, Check::AtLeast(3.4, "x")),
    t(T_MULTI, MULTI_4, "CCM index on every GPU, events cut, Table 2 default", ("ccm", "scaling"), "gpu multi by-event model=table2 F=250k speedup", 4.0, Check::AtLeast(3.4, "x")),
    t(T_MULTI, MULTI_4, "CCM index, dense 1M filters, 20 names", ("ccm", "scaling"), "gpu multi model=dense F=1M speedup", 4.0, Check::AtLeast(3.4, "x")),
    t(T_MULTI, MULTI_4, "CCM index on every GPU, events cut, dense 1M filters, 20 names", ("ccm", "scaling"), "gpu multi by-event model=dense F=1M speedup", 4.0, Check::AtLeast(3.4, "x")),
    t(T_MULTI, MULTI_1, "CCM index by interface, Table 2 default", ("ccm", "scaling"), "gpu multi model=table2 F=250k events/s", 1.0, over("gpu index model=table2 F=250k events/s", 0.95)),
    t(T_MULTI, MULTI_1, "CCM index on every GPU, events cut, Table 2 default",
        ("ccm", "scaling"), "gpu multi by-event model=table2 F=250k events/s", 1.0, over("gpu index model=table2 F=250k events/s", 0.95)),
    t(T_MULTI, MULTI_1, "CCM index, dense 1M filters, 20 names", ("ccm", "scaling"), "gpu multi model=dense F=1M events/s", 1.0, over("gpu index model=dense F=1M events/s", 0.95)),
    t(T_MULTI, MULTI_1, "CCM index on every GPU, events cut, dense 1M filters, 20 names",
        ("ccm", "scaling"), "gpu multi by-event model=dense F=1M events/s", 1.0, over("gpu index model=dense F=1M events/s", 0.95)),
    t(T_MULTI, MULTI_2, "DDM sweep count, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep count regions=1M speedup", 2.0, Check::AtLeast(1.8, "x")),
    t(T_MULTI, MULTI_2, "DDM bisect count, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi bisect count regions=1M speedup", 2.0, Check::AtLeast(1.8, "x")),
    t(T_MULTI, MULTI_2, "DDM sweep pairs to the host, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep pairs regions=1M speedup", 2.0, Check::AtLeast(1.8, "x")),
    t(T_MULTI, MULTI_2, "DDM sweep count, space cut into slabs, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep by-slab count regions=1M speedup", 2.0, Check::AtLeast(1.8, "x")),
    t(T_MULTI, MULTI_2, "DDM bisect count, space cut into slabs, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi bisect by-slab count regions=1M speedup", 2.0, Check::AtLeast(1.8, "x")),
    t(T_MULTI, MULTI_2, "DDM sweep pairs to the host, space cut into slabs, 1M regions, 2-D, degree 100",
        ("ddm", "scaling"), "gpu multi sweep by-slab pairs regions=1M speedup", 2.0, Check::AtLeast(1.8, "x")),
    t(T_MULTI, MULTI_4, "DDM sweep count, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep count regions=1M speedup", 4.0, Check::AtLeast(3.4, "x")),
    t(T_MULTI, MULTI_4, "DDM sweep count, space cut into slabs, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep by-slab count regions=1M speedup", 4.0, Check::AtLeast(3.4, "x")),
    t(T_MULTI, MULTI_4, "DDM bisect count, space cut into slabs, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi bisect by-slab count regions=1M speedup", 4.0, Check::AtLeast(3.4, "x")),
    t(T_MULTI, MULTI_4, "DDM bisect count, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi bisect count regions=1M speedup", 4.0, Check::AtLeast(3.4, "x")),
    t(T_MULTI, MULTI_4, "DDM sweep pairs to the host, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep pairs regions=1M speedup", 4.0, Check::AtLeast(3.4, "x")),
    t(T_MULTI, MULTI_1, "DDM sweep count, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep count regions=1M matchings/s", 1.0, over("gpu sweep count regions=1M matchings/s", 0.95)),
    t(T_MULTI, MULTI_1, "DDM bisect count, 1M regions, 2-D, degree 100",
        ("ddm", "scaling"), "gpu multi bisect count regions=1M matchings/s", 1.0, over("gpu bisect count regions=1M matchings/s", 0.95)),
    t(T_MULTI, MULTI_1, "DDM sweep count, space cut into slabs, 1M regions, 2-D, degree 100",
        ("ddm", "scaling"), "gpu multi sweep by-slab count regions=1M matchings/s", 1.0, over("gpu sweep count regions=1M matchings/s", 0.95)),
    t(T_MULTI, MULTI_2, "XML filter, Fig. 10b: 1000 documents, 2000 queries", ("xml", "scaling"), "gpu multi docs=1000 speedup", 2.0, Check::AtLeast(1.8, "x")),
    t(T_MULTI, MULTI_4, "XML filter, Fig. 10b: 1000 documents, 2000 queries", ("xml", "scaling"), "gpu multi docs=1000 speedup", 4.0, Check::AtLeast(3.4, "x")),
    t(T_MULTI, MULTI_1, "XML filter, Fig. 10b: 1000 documents, 2000 queries", ("xml", "scaling"), "gpu multi docs=1000 MB/s", 1.0, over("gpu filter docs=1000 MB/s", 0.95)),
    t(T_MULTI, MULTI_2, "CLCB batched, Fig. 3a: 1M subscriptions", ("clcb", "scaling"), "gpu multi subs=1M speedup", 2.0, Check::AtLeast(1.8, "x")),
    t(T_MULTI, MULTI_2, "CLCB grid index batched, Fig. 3a: 1M subscriptions", ("clcb", "scaling"), "gpu multi grid subs=1M speedup", 2.0, Check::AtLeast(1.8, "x")),
    t(T_MULTI, MULTI_4, "CLCB batched, Fig. 3a: 1M subscriptions", ("clcb", "scaling"), "gpu multi subs=1M speedup", 4.0, Check::AtLeast(3.4, "x")),
    t(T_MULTI, MULTI_4, "CLCB grid index batched, Fig. 3a: 1M subscriptions", ("clcb", "scaling"), "gpu multi grid subs=1M speedup", 4.0, Check::AtLeast(3.4, "x")),
    t(T_MULTI, MULTI_1, "CLCB batched, Fig. 3a: 1M subscriptions", ("clcb", "scaling"), "gpu multi subs=1M events/s", 1.0, over("gpu batched subs=1M events/s", 0.95)),
    t(T_MULTI, MULTI_1, "CLCB grid index batched, Fig. 3a: 1M subscriptions", ("clcb", "scaling"), "gpu multi grid subs=1M events/s", 1.0, over("gpu grid batched subs=1M events/s", 0.95)),
];

const T_MULTI: &str = "Many GPUs in one host";
const MULTI_1: &str =
    "on one GPU, the multi-device path no slower than the one-GPU engine (within 5%)";
const MULTI_2: &str = "largest workload of each paper: throughput at least 1.8x on 2 GPUs";
const MULTI_4: &str = "largest workload of each paper: throughput at least 3.4x on 4 GPUs";

const T_CCM: &str = "CCM";
const T_CLCB: &str = "CLCB";
const T_PERSIST: &str = "persistent kernels";
const T_CLCB_BEST: &str = "CLCB against today's best CPU method";
const CLCB_BEST_T2: &str =
    "default scenario: GPU batched at least 10x the best CPU on all cores per event";
const CLCB_BEST_FIGS: &str =
    "Figs. 3-4 at 1M subscriptions, every area size and distribution: GPU at least 10x the best CPU on all cores";
const CLCB_BEST_MOVE: &str = "Fig. 5 at 1M subscriptions: one area move on the GPU at most 2 µs";
const CLCB_BEST_MOVE_CPU: &str =
    "Fig. 5 at 1M subscriptions: one area move on the GPU no slower than the CPU grid's";
const CLCB_GRID_T2: &str =
    "default scenario, one thread: the grid index at least 10x the R*-tree with the content check";
const CLCB_GRID_KW: &str =
    "keywords, 1% regions, 1M subscriptions, one thread: the grid index at least 30x the R*-tree";
const CLCB_BEST_KW: &str =
    "keywords at 1M subscriptions: GPU at least 10x the best CPU on all cores";
const T_XML: &str = "XML";
const T_XML_STRONG: &str = "XML against the lazy DFA";
const T_DDM: &str = "DDM";
const T_DDM_STRONG: &str = "DDM against today's CPU methods";
const T_DDM_AHEAD: &str = "DDM ahead of the best published GPU and CPU interval matchers";
const AHEAD_PEER: &str =
    "1-D counting, 1M intervals, every density: best GPU from host memory no slower than the peer's 4.95 ms";
const AHEAD_CPU_1D: &str =
    "1-D counting, 1M intervals, every density: best GPU from host memory at least 10x the best CPU";
const AHEAD_PEER_4M: &str =
    "1-D counting, 4M intervals, every density: best GPU from host memory no slower than the peer's 20.3 ms";
const AHEAD_CPU_1D_4M: &str =
    "1-D counting, 4M intervals, every density: best GPU from host memory at least 10x the best CPU";
const AHEAD_SCALE1: &str =
    "1M regions, alpha 1, counting from host memory: at least 10x the best CPU on all cores";
const AHEAD_SCALE100: &str =
    "1M regions, alpha 100, counting from host memory: at least 10x the best CPU on all cores";
const AHEAD_KERNEL1: &str =
    "1M regions, alpha 1, counting with the regions on the device: at least 30x the best CPU";
const AHEAD_KERNEL100: &str =
    "1M regions, alpha 100, counting with the regions on the device: at least 15x the best CPU";
const AHEAD_STEP: &str =
    "32768 regions per step (Figs. 5-12): best GPU engine at least 15x sbm-par";
const AHEAD_PAIRS: &str = "pairs to the host at 1M regions: at least 5x sbm-par (the bus does not bound it: the pairs' bytes copy in under a millisecond, series `copy of the pairs' bytes`)";
const T_CCM_STRONG: &str = "CCM against a modern CPU index";
const T_HYBRID: &str = "CCM hybrid CPU index";
const T_GPU_INDEX: &str = "CCM pruning index on the GPU";

const BEST: &str = "best CPU (all cores)";
const GPU_T2: &str =
    "default scenario, uniform and Zipf names: GPU index at least 10x the best CPU on all cores";
const GPU_DENSE: &str = "dense model, one interface per filter, every workload: GPU index at least 10x the best CPU on all cores";
const GPU_DENSE10: &str =
    "dense model, 10 interfaces, every workload: GPU index at least 10x the best CPU on all cores";
const GPU_FIGS: &str = "Figs. 6-11, every x: GPU index at least 5x the best CPU on all cores";
const GPU_DEPLOY: &str =
    "deployment (Table 2 row 2): GPU index no slower to build than the CPU index";
const GPU_MEMORY: &str = "memory (Table 2 row 3): GPU index at most 2x the CPU index's";

const CCM_LAT: &str = "default scenario: at most 15 µs per event end to end";
const CCM_SFF: &str = "default scenario: at least 100x the single-threaded SFF baseline";
const CCM_RATE: &str = "batched: at least 1,000,000 events/s (at most 1 µs per event)";
const CCM_MC: &str = "batched: at least 10x SFF on all host cores";
const CCM_MEM: &str = "GPU memory of the default scenario within 2x of the paper's 33.9 MB";
const CLCB_LAT: &str = "default scenario (250k x 10 filters): at most 30 µs per event end to end";
const CLCB_BATCH: &str = "batched: at most 2 µs per event";
const CLCB_UPD: &str = "one area update: at most 3 µs";
const CLCB_UPDS: &str = "batched updates: at least 10M per second (at most 0.1 µs each)";
const CLCB_RTREE_U: &str = "at least 100x rstar at 1M subscriptions, 1 % coverage, uniform";
const CLCB_RTREE_Z: &str = "at least 100x rstar at 1M subscriptions, 1 % coverage, Zipf";
const PERSIST_CCM50: &str =
    "CCM default scenario, persistent: at most 5 µs p50 per event end to end";
const PERSIST_CCM99: &str =
    "CCM default scenario, persistent: at most 8 µs p99 per event end to end";
const PERSIST_CLCB50: &str =
    "CLCB default scenario, persistent: at most 6 µs p50 per event end to end";
const PERSIST_UPD: &str = "CLCB persistent mode: one area update at most 3 µs";
const XML_NFA: &str =
    "at least 10x the single-threaded NFA, 256 queries of 10 nodes, 1 MB document";
const XML_MOON: &str = "moonshot: toward 50x the NFA on one document";
const XML_MC: &str = "at least 5x the NFA on all host cores, 1000 documents of 25 kB, 1000 queries";
const XML_LAZY_PATHS: &str =
    "one core: the lazy DFA at least 10x the NFA at 2048 linear-path queries";
const XML_LAZY_TWIGS: &str =
    "one core: the lazy DFA at least 3x the NFA on the paper's twigs at 1000+ queries (Figs. 7, 9)";
const XML_GPU_BEST: &str =
    "GPU at least 10x the best CPU on all cores (the lazy DFA or the NFA) in Figs. 7-10 at their largest x";
const XML_BIGDOC: &str = "one 100 MB document, 256 queries: GPU at least 3 GB/s";
const DDM_BRUTE10: &str = "at least 200x single-threaded brute force at 32768 regions, RS 10";
const DDM_BRUTE100: &str = "at least 200x single-threaded brute force at 32768 regions, RS 100";
const DDM_SORT10: &str = "at least 20x the single-threaded sort baseline at 32768 regions, RS 10";
const DDM_SORT100: &str = "at least 20x the single-threaded sort baseline at 32768 regions, RS 100";
const DDM_PAR1: &str = "at least 10x sort on all host cores at 1M regions, counting, alpha 1";
const DDM_PAR100: &str = "at least 10x sort on all host cores at 1M regions, counting, alpha 100";
const STRONG_SBM8: &str =
    "strong SBM at least 8x its single thread on 16 cores at 1M regions, counting";
const STRONG_SWEEP1: &str =
    "GPU sweep at least 20x the strong SBM on all host cores at 1M regions, counting, alpha 1";
const STRONG_SWEEP100: &str =
    "GPU sweep at least 20x the strong SBM on all host cores at 1M regions, counting, alpha 100";
const STRONG_GRID10: &str =
    "GPU grid at least 10x the strong SBM on all host cores at 32768 regions per step, RS 10";
const STRONG_GRID100: &str =
    "GPU grid at least 10x the strong SBM on all host cores at 32768 regions per step, RS 100";
const STRONG_CCM: &str =
    "default scenario: GPU batched at least 20x the modern index on all host cores";
const HYBRID_FIXED: &str =
    "per-event fixed cost with 1M interfaces, an event that matches nothing: at most 2 µs (one thread)";
const HYBRID_D100K10: &str =
    "dense model, 100k filters, 10 names per event: hybrid at least 10x the content index";
const HYBRID_D100K20: &str =
    "dense model, 100k filters, 20 names per event: hybrid at least 10x the content index";
const HYBRID_D1M10: &str =
    "dense model, 1M filters, 10 names per event: hybrid at least 10x the content index";
const HYBRID_D1M20: &str =
    "dense model, 1M filters, 20 names per event: hybrid at least 10x the content index";
const HYBRID_T2_1: &str = "default scenario: hybrid never slower than the content index";
const HYBRID_T2_4: &str =
    "default scenario, Zipf names: hybrid never slower than the content index";
const HYBRID_D10_100K4: &str =
    "dense model, 10 interfaces, 100k filters, 3-5 names per event: hybrid never slower than the content index";
const HYBRID_D10_100K10: &str =
    "dense model, 10 interfaces, 100k filters, 10 names per event: hybrid never slower than the content index";
const HYBRID_D10_100K20: &str =
    "dense model, 10 interfaces, 100k filters, 20 names per event: hybrid never slower than the content index";
const HYBRID_D10_1M4: &str =
    "dense model, 10 interfaces, 1M filters, 3-5 names per event: hybrid never slower than the content index";
const HYBRID_D10_1M10: &str =
    "dense model, 10 interfaces, 1M filters, 10 names per event: hybrid never slower than the content index";
const HYBRID_D10_1M20: &str =
    "dense model, 10 interfaces, 1M filters, 20 names per event: hybrid never slower than the content index";
const HYBRID_ALL_D4: &str =
    "dense model, 1M filters, 3-5 names per event: hybrid on all host cores at least 12x its one thread";
const HYBRID_ALL_D10: &str =
    "dense model, 1M filters, 10 names per event: hybrid on all host cores at least 12x its one thread";
const HYBRID_ALL_D20: &str =
    "dense model, 1M filters, 20 names per event: hybrid on all host cores at least 12x its one thread";
const HYBRID_ALL_D10_4: &str =
    "dense model, 10 interfaces, 1M filters, 3-5 names per event: hybrid on all host cores at least 12x its one thread";
const HYBRID_ALL_D10_10: &str =
    "dense model, 10 interfaces, 1M filters, 10 names per event: hybrid on all host cores at least 12x its one thread";
const HYBRID_ALL_D10_20: &str =
    "dense model, 10 interfaces, 1M filters, 20 names per event: hybrid on all host cores at least 12x its one thread";
const HYBRID_ALL_HEM: &str =
    "HEM suite's dense model (`hem`), 1M filters, every workload: hybrid on all host cores at least 14x its one thread";

/// The outcome of one target on the recorded rows of its experiment.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The measured value (a speedup for [`Check::SpeedupOver`], else in the check's unit)
    /// and whether it holds.
    Measured { value: f64, met: bool },
    /// The experiment, series or x value is not in the recorded CSV.
    NotRecorded,
}

fn row_at<'a>(rows: &'a [Row], series: &str, x: f64) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.series == series && (r.x - x).abs() <= 1e-9 * x.abs().max(1.0))
}

fn mean(rows: &[Row], series: &str, x: f64) -> Option<f64> {
    row_at(rows, series, x).map(|r| r.mean)
}

/// The unit a recorded row is in: `x` for a speedup series (`gpu multi ... speedup`,
/// `A vs B`), a table's `ms / ms / MB / ms` the part of its row number, else the unit in
/// the axis label's parentheses (`time per step (ms)`: `ms`).
pub fn row_unit(r: &Row) -> &str {
    if r.series.ends_with(" speedup") || r.series.contains(" vs ") || r.unit.contains("speedup") {
        return "x";
    }
    r.value_unit()
}

/// A unit's kind and its size in the kind's base unit (`ms`: time, 1e-3 s).
fn scale(unit: &str) -> Option<(&'static str, f64)> {
    Some(match unit {
        "s" => ("time", 1.0),
        "ms" => ("time", 1e-3),
        "µs" | "us" => ("time", 1e-6),
        "ns" => ("time", 1e-9),
        "B" => ("size", 1.0),
        "kB" | "KB" => ("size", 1e3),
        "MB" => ("size", 1e6),
        "GB" => ("size", 1e9),
        "MB/s" => ("rate", 1e6),
        "GB/s" => ("rate", 1e9),
        "x" => ("speedup", 1.0),
        _ => return None,
    })
}

/// `v` in unit `from` expressed in unit `to`, when both are one kind (time, size, rate).
pub fn convert(v: f64, from: &str, to: &str) -> Option<f64> {
    if from == to {
        return Some(v);
    }
    let ((kf, sf), (kt, st)) = (scale(from)?, scale(to)?);
    (kf == kt).then_some(v * sf / st)
}

impl Target {
    /// Evaluates the target on `rows`, the recorded rows of its experiment.
    pub fn evaluate(&self, rows: &[Row], higher_is_better: bool) -> Outcome {
        if self.x.is_nan() {
            // Every recorded x: the worst outcome (for a speedup, the least).
            let mut worst: Option<(f64, bool)> = None;
            for r in rows.iter().filter(|r| r.series == self.series) {
                let at = Target { x: r.x, ..*self };
                if let Outcome::Measured { value, met } = at.evaluate(rows, higher_is_better) {
                    let key = match self.check {
                        Check::AtMost(..) => -value,
                        _ => value,
                    };
                    let old = worst.map(|(v, _)| match self.check {
                        Check::AtMost(..) => -v,
                        _ => v,
                    });
                    if old.is_none_or(|o| key < o) {
                        worst = Some((value, met));
                    }
                }
            }
            return match worst {
                Some((value, met)) => Outcome::Measured { value, met },
                None => Outcome::NotRecorded,
            };
        }
        let Some(row) = row_at(rows, self.series, self.x) else {
            return Outcome::NotRecorded;
        };
        let in_unit = |unit: &str| convert(row.mean, row_unit(row), unit);
        match self.check {
            Check::AtMost(limit, unit) => match in_unit(unit) {
                Some(v) => Outcome::Measured {
                    value: v,
                    met: v <= limit,
                },
                None => Outcome::NotRecorded,
            },
            Check::AtLeast(limit, unit) => match in_unit(unit) {
                Some(v) => Outcome::Measured {
                    value: v,
                    met: v >= limit,
                },
                None => Outcome::NotRecorded,
            },
            Check::SpeedupOver { over, factor } => {
                let Some(b) = mean(rows, over, self.x) else {
                    return Outcome::NotRecorded;
                };
                let v = row.mean;
                let s = if higher_is_better { v / b } else { b / v };
                Outcome::Measured {
                    value: s,
                    met: s >= factor,
                }
            }
        }
    }

    /// The unit the target's value is read in: the limit's, or `x` for a speedup.
    pub fn unit(&self) -> &'static str {
        match self.check {
            Check::AtMost(_, u) | Check::AtLeast(_, u) => u,
            Check::SpeedupOver { .. } => "x",
        }
    }

    /// The threshold in words, in the goal's unit: "≤ 15 µs", "≥ 100x sff".
    pub fn threshold(&self) -> String {
        match self.check {
            Check::AtMost(l, u) => format!("≤ {}", stated(l, u)),
            Check::AtLeast(l, u) => format!("≥ {}", stated(l, u)),
            Check::SpeedupOver { over, factor } => format!("≥ {factor}x {over}"),
        }
    }

    /// A value of this target in words, three significant digits and its unit: `1.60 µs`,
    /// `0.998x`.
    pub fn value_words(&self, v: f64) -> String {
        with_unit(v, self.unit())
    }
}

/// A limit as the goal states it: `15 µs`, `1.8x`.
fn stated(l: f64, unit: &str) -> String {
    if unit == "x" {
        format!("{l}x")
    } else {
        format!("{l} {unit}")
    }
}

/// `v` to three significant digits (trailing zeros kept, so a reader sees the precision)
/// with its unit: `15 µs`, `1.60 µs`, `0.998x`.
fn with_unit(v: f64, unit: &str) -> String {
    let n = sig3(v);
    if unit == "x" {
        format!("{n}x")
    } else {
        format!("{n} {unit}")
    }
}

/// Three significant digits: `0.998`, `1.60`, `15.0`, `1230`.
pub fn sig3(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let mag = v.abs().log10().floor() as i32;
    if mag >= 3 {
        let step = 10f64.powi(mag - 2);
        return format!("{:.0}", (v / step).round() * step);
    }
    let decimals = (2 - mag) as usize;
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(series: &str, x: f64, mean: f64) -> Row {
        Row {
            series: series.into(),
            x,
            mean,
            min: mean,
            max: mean,
            n: 1,
            unit: "time (ms)".into(),
            ..Row::default()
        }
    }

    #[test]
    fn a_target_at_every_x_reads_the_least_speedup_over_the_recorded_points() {
        let rows = [
            row("gpu", 1.0, 1.0),
            row("cpu", 1.0, 9.0),
            row("gpu", 2.0, 1.0),
            row("cpu", 2.0, 4.0),
            row("cpu", 3.0, 1.0),
        ];
        let tg = t("", "", "", ("p", "e"), "gpu", EVERY_X, over("cpu", 5.0));
        assert_eq!(
            tg.evaluate(&rows, false),
            Outcome::Measured {
                value: 4.0,
                met: false
            }
        );
        let none = t("", "", "", ("p", "e"), "gpu2", EVERY_X, over("cpu", 5.0));
        assert_eq!(none.evaluate(&rows, false), Outcome::NotRecorded);
    }

    #[test]
    fn speedup_targets_divide_the_right_way_for_times_and_throughputs() {
        let rows = [row("gpu", 1.0, 2.0), row("cpu", 1.0, 300.0)];
        let tg = t("", "", "", ("p", "e"), "gpu", 1.0, over("cpu", 100.0));
        assert_eq!(
            tg.evaluate(&rows, false),
            Outcome::Measured {
                value: 150.0,
                met: true
            }
        );
        let Outcome::Measured { value, met } = tg.evaluate(&rows, true) else {
            panic!("recorded")
        };
        assert!((value - 2.0 / 300.0).abs() < 1e-12 && !met);
    }

    #[test]
    fn limits_are_read_in_the_goals_unit_and_missing_points_are_reported_as_such() {
        // 0.02 ms recorded against a goal of at most 15 µs: 20 µs, missed.
        let rows = [row("gpu", 1.0, 0.02)];
        let at_most = t(
            "",
            "",
            "",
            ("p", "e"),
            "gpu",
            1.0,
            Check::AtMost(15.0, "µs"),
        );
        let Outcome::Measured { value, met } = at_most.evaluate(&rows, false) else {
            panic!("recorded")
        };
        assert!((value - 20.0).abs() < 1e-9 && !met, "{value}");
        assert_eq!(at_most.value_words(value), "20.0 µs");
        assert_eq!(at_most.threshold(), "≤ 15 µs");
        // A unit of another kind cannot be read as the goal's.
        let bytes = t("", "", "", ("p", "e"), "gpu", 1.0, Check::AtMost(1.0, "MB"));
        assert_eq!(bytes.evaluate(&rows, false), Outcome::NotRecorded);
        let elsewhere = t("", "", "", ("p", "e"), "gpu", 2.0, Check::AtMost(1.0, "ms"));
        assert_eq!(elsewhere.evaluate(&rows, false), Outcome::NotRecorded);
        let no_base = t("", "", "", ("p", "e"), "gpu", 1.0, over("cpu", 1.0));
        assert_eq!(no_base.evaluate(&rows, false), Outcome::NotRecorded);
    }

    #[test]
    fn a_tables_row_takes_its_own_unit_and_speedups_read_as_x() {
        let mut r = row("gpu", 3.0, 40.0);
        r.unit = "ms / ms / MB / ms".into();
        assert_eq!(row_unit(&r), "MB");
        r.x = 1.0;
        assert_eq!(row_unit(&r), "ms");
        let s = row("gpu multi F=1M speedup", 2.0, 1.9);
        assert_eq!(row_unit(&s), "x");
        assert_eq!(convert(3000.0, "MB/s", "GB/s"), Some(3.0));
        assert_eq!(convert(1.0, "ms", "MB"), None);
        assert_eq!(sig3(0.99812), "0.998");
        assert_eq!(sig3(1.6), "1.60");
        assert_eq!(sig3(1234.4), "1230");
        assert_eq!(sig3(14274.0), "14300");
    }

    #[test]
    fn every_target_names_an_existing_experiment_in_a_unit_it_can_be_read_in() {
        let exps = crate::runner::all_experiments();
        for tg in TARGETS {
            let exp = exps
                .iter()
                .find(|e| e.paper.name() == tg.paper && e.id == tg.experiment);
            let Some(exp) = exp else {
                panic!("{}/{}: no such experiment", tg.paper, tg.experiment)
            };
            if matches!(tg.check, Check::SpeedupOver { .. }) {
                continue;
            }
            let probe = Row {
                series: tg.series.into(),
                x: if tg.x.is_nan() { 1.0 } else { tg.x },
                unit: exp.y_label.into(),
                ..Row::default()
            };
            assert!(
                convert(1.0, row_unit(&probe), tg.unit()).is_some(),
                "{}/{} `{}`: recorded in `{}`, the goal in `{}`",
                tg.paper,
                tg.experiment,
                tg.series,
                row_unit(&probe),
                tg.unit()
            );
        }
    }
}
