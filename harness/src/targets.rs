//! The project's speed and memory targets, as data: `harness report` checks each one
//! against the recorded CSVs and prints a "Targets" table (met, missed, or not recorded).
//! A target names the experiment, the series and the x value it is read from, so the
//! number quoted is exactly one of the recorded points, never a hand-copied value.

use crate::results::Row;

/// What a target asks of the recorded mean at (series, x).
#[derive(Clone, Copy, Debug)]
pub enum Check {
    /// The value (in the experiment's unit) must not exceed this.
    AtMost(f64),
    /// The value must reach at least this.
    AtLeast(f64),
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
    t(T_CCM, CCM_LAT, "low-latency path (one launch, mapped memory)", ("ccm", "table2"), "gpu latency", 1.0, Check::AtMost(0.015)),
    t(T_CCM, CCM_LAT, "paper-faithful path (§4: copies, kernel, copy back)", ("ccm", "table2"), "gpu", 1.0, Check::AtMost(0.015)),
    t(T_CCM, CCM_SFF, "per event, low-latency path", ("ccm", "table2"), "gpu latency", 1.0, over("sff", 100.0)),
    t(T_CCM, CCM_SFF, "per event, paper-faithful path", ("ccm", "table2"), "gpu", 1.0, over("sff", 100.0)),
    t(T_CCM, CCM_SFF, "batched: time per event of a batch", ("ccm", "table2"), "gpu batched", 1.0, over("sff", 100.0)),
    t(T_CCM, CCM_RATE, "batched engine", ("ccm", "table2"), "gpu batched", 1.0, Check::AtMost(0.001)),
    t(T_CCM, CCM_MC, "batched engine", ("ccm", "table2"), "gpu batched", 1.0, over("sff all cores", 10.0)),
    t(T_CCM, CCM_MEM, "paper-faithful engine", ("ccm", "table2"), "gpu", 3.0, Check::AtMost(67.8)),
    t(T_CCM, CCM_MEM, "batched engine", ("ccm", "table2"), "gpu batched", 3.0, Check::AtMost(67.8)),
    // CLCB: Table 2 x = 2 is ms per event with location, x = 3 ms per update.
    t(T_CLCB, CLCB_LAT, "paper's Loc/Cont/Zip", ("clcb", "table2"), "gpu", 2.0, Check::AtMost(0.030)),
    t(T_CLCB, CLCB_LAT, "GPU spatial grid", ("clcb", "table2"), "gpu grid", 2.0, Check::AtMost(0.030)),
    t(T_CLCB, CLCB_LAT, "low-latency path, every filter", ("clcb", "table2"), "gpu latency", 2.0, Check::AtMost(0.030)),
    t(T_CLCB, CLCB_LAT, "low-latency path over the grid", ("clcb", "table2"), "gpu grid latency", 2.0, Check::AtMost(0.030)),
    t(T_CLCB, CLCB_BATCH, "batched passes over every filter", ("clcb", "table2"), "gpu batched", 2.0, Check::AtMost(0.002)),
    t(T_CLCB, CLCB_BATCH, "batched over the grid's candidates", ("clcb", "table2"), "gpu grid batched", 2.0, Check::AtMost(0.002)),
    t(T_CLCB, CLCB_UPD, "one launch carrying the update in its arguments", ("clcb", "table2"), "gpu", 3.0, Check::AtMost(0.003)),
    t(T_CLCB, CLCB_UPD, "two copies, no kernel", ("clcb", "table2"), "gpu copies", 3.0, Check::AtMost(0.003)),
    t(T_CLCB, CLCB_UPD, "low-latency mode: one 16-byte copy", ("clcb", "table2"), "gpu latency", 3.0, Check::AtMost(0.003)),
    t(T_CLCB, CLCB_UPDS, "batched updates, 1M subscriptions", ("clcb", "fig5a"), "gpu batched", 1e6, Check::AtMost(0.1)),
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
    t(T_CLCB_BEST, CLCB_BEST_MOVE, "one launch carrying the update, uniform", ("clcb", "fig5a"), "gpu", 1e6, Check::AtMost(2.0)),
    t(T_CLCB_BEST, CLCB_BEST_MOVE, "one launch carrying the update, Zipf", ("clcb", "fig5b"), "gpu", 1e6, Check::AtMost(2.0)),
    t(T_CLCB_BEST, CLCB_BEST_MOVE_CPU, "one launch carrying the update, uniform", ("clcb", "fig5a"), "gpu", 1e6, over("grid", 1.0)),
    t(T_CLCB_BEST, CLCB_BEST_MOVE_CPU, "one launch carrying the update, Zipf", ("clcb", "fig5b"), "gpu", 1e6, over("grid", 1.0)),
    t(T_CLCB_BEST, CLCB_BEST_MOVE_CPU, "low-latency mode: one 16-byte copy, uniform", ("clcb", "fig5a"), "gpu latency", 1e6, over("grid", 1.0)),
    t(T_CLCB_BEST, CLCB_BEST_MOVE, "cell index: tombstones + overflow, one launch per flush, uniform", ("clcb", "fig5a"), "gpu cells", 1e6, Check::AtMost(2.0)),
    t(T_CLCB_BEST, CLCB_BEST_MOVE, "cell index: tombstones + overflow, one launch per flush, Zipf", ("clcb", "fig5b"), "gpu cells", 1e6, Check::AtMost(2.0)),
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
    t(T_PERSIST, PERSIST_CCM50, "persistent kernel, one event at a time", ("ccm", "latency"), "gpu persistent", 50.0, Check::AtMost(5.0)),
    t(T_PERSIST, PERSIST_CCM99, "persistent kernel, one event at a time", ("ccm", "latency"), "gpu persistent", 99.0, Check::AtMost(8.0)),
    t(T_PERSIST, PERSIST_CLCB50, "persistent kernel, one event at a time", ("clcb", "latency"), "gpu persistent", 50.0, Check::AtMost(6.0)),
    t(T_PERSIST, PERSIST_CLCB50, "persistent kernel over the grid index", ("clcb", "latency"), "gpu grid persistent", 50.0, Check::AtMost(6.0)),
    t(T_PERSIST, PERSIST_UPD, "persistent kernel: updates through the ring", ("clcb", "table2"), "gpu persistent", 3.0, Check::AtMost(0.003)),
    t(T_PERSIST, PERSIST_UPD, "persistent kernel over the grid: updates through the ring", ("clcb", "table2"), "gpu grid persistent", 3.0, Check::AtMost(0.003)),
    // XML: Fig. 7 is MB/s (higher is better) over one 1 MB document.
    t(T_XML, XML_NFA, "paper's block kernel (§4.2)", ("xml", "fig7"), "gpu-block L=10", 256.0, over("yfilter L=10", 10.0)),
    t(T_XML, XML_NFA, "warp-synchronous kernel", ("xml", "fig7"), "gpu L=10", 256.0, over("yfilter L=10", 10.0)),
    t(T_XML, XML_NFA, "document segments in parallel", ("xml", "fig7"), "gpu-seg L=10", 256.0, over("yfilter L=10", 10.0)),
    t(T_XML, XML_MOON, "document segments in parallel", ("xml", "fig7"), "gpu-seg L=10", 256.0, over("yfilter L=10", 50.0)),
    t(T_XML, XML_MC, "documents in flight in one launch", ("xml", "fig10b"), "gpu vs yfilter-mc", 1000.0, Check::AtLeast(5.0)),
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
    t(T_XML_STRONG, XML_GPU_BEST, "kernels, Fig. 8 (one 2 MB document, */// 30%)", ("xml", "fig8"), "gpu vs best CPU (all cores) p=30%", 2048.0, Check::AtLeast(10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "document segments, Fig. 8 (one 2 MB document, */// 30%)", ("xml", "fig8"), "gpu-seg vs best CPU (all cores) p=30%", 2048.0, Check::AtLeast(10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "the lazy DFA's warm path in segments, Fig. 7 (one 1 MB document, 10 nodes)", ("xml", "fig7"), "gpu-dfa L=10", 2048.0, over("best CPU (all cores) L=10", 10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "the lazy DFA's warm path in segments, Fig. 8 (one 2 MB document, */// 30%)", ("xml", "fig8"), "gpu-dfa vs best CPU (all cores) p=30%", 2048.0, Check::AtLeast(10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "kernels, Fig. 9 (500 documents, 10 nodes)", ("xml", "fig9"), "gpu L=10", 2048.0, over("best CPU (all cores) L=10", 10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "kernels, Fig. 10a (500 documents)", ("xml", "fig10a"), "gpu vs best CPU (all cores)", 2000.0, Check::AtLeast(10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "kernels, Fig. 10b (1000 documents)", ("xml", "fig10b"), "gpu vs best CPU (all cores)", 2000.0, Check::AtLeast(10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "the lazy DFA's warm path, Fig. 9 (500 documents, 5 nodes)", ("xml", "fig9"), "gpu-dfa L=5", 2048.0, over("best CPU (all cores) L=5", 10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "the lazy DFA's warm path, Fig. 9 (500 documents, 10 nodes)", ("xml", "fig9"), "gpu-dfa L=10", 2048.0, over("best CPU (all cores) L=10", 10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "the lazy DFA's warm path, Fig. 9 (500 documents, 15 nodes)", ("xml", "fig9"), "gpu-dfa L=15", 2048.0, over("best CPU (all cores) L=15", 10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "the lazy DFA's warm path, Fig. 10a (500 documents)", ("xml", "fig10a"), "gpu-dfa vs best CPU (all cores)", 2000.0, Check::AtLeast(10.0)),
    t(T_XML_STRONG, XML_GPU_BEST, "the lazy DFA's warm path, Fig. 10b (1000 documents)", ("xml", "fig10b"), "gpu-dfa vs best CPU (all cores)", 2000.0, Check::AtLeast(10.0)),
    t(T_XML_STRONG, XML_BIGDOC, "document segments in parallel", ("xml", "bigdoc"), "gpu-seg", 100.0, Check::AtLeast(3000.0)),
    t(T_XML_STRONG, XML_BIGDOC, "kernels, the document whole", ("xml", "bigdoc"), "gpu", 100.0, Check::AtLeast(3000.0)),
    t(T_XML_STRONG, XML_BIGDOC, "the lazy DFA's warm path in segments", ("xml", "bigdoc"), "gpu-dfa", 100.0, Check::AtLeast(3000.0)),
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
    t(T_DDM_STRONG, STRONG_SBM8, "SBM on all host cores over SBM on one (16 on the GPU machine)", ("ddm", "scaleup_a1"), "sbm-par", 1048576.0, over("sbm", 8.0)),
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
    t(T_DDM_AHEAD, AHEAD_PEER, "binary-search count from host memory (worst degree)", ("ddm", "density"), "gpu-bisect+upload", EVERY_X, Check::AtMost(4.95)),
    t(T_DDM_AHEAD, AHEAD_PEER, "sort-based sweep from host memory (worst degree)", ("ddm", "density"), "gpu-sweep+upload", EVERY_X, Check::AtMost(4.95)),
    t(T_DDM_AHEAD, AHEAD_CPU_1D, "binary-search count from host memory (least speedup)", ("ddm", "density"), "gpu-bisect+upload", EVERY_X, over("best CPU (all cores)", 10.0)),
    t(T_DDM_AHEAD, AHEAD_PEER_4M, "binary-search count from host memory (worst degree)", ("ddm", "density_4m"), "gpu-bisect+upload", EVERY_X, Check::AtMost(20.3)),
    t(T_DDM_AHEAD, AHEAD_PEER_4M, "sort-based sweep from host memory (worst degree)", ("ddm", "density_4m"), "gpu-sweep+upload", EVERY_X, Check::AtMost(20.3)),
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
    t(T_HYBRID, HYBRID_FIXED, "hybrid index, one thread", ("ccm", "fixedcost"), "hybrid", 1_000_000.0, Check::AtMost(0.002)),
    t(T_HYBRID, HYBRID_FIXED, "content index, one thread", ("ccm", "fixedcost"), "index", 1_000_000.0, Check::AtMost(0.002)),
    t(T_HYBRID, HYBRID_ALL_D4, "hybrid index on all host cores over its one thread", ("ccm", "dense"), "hybrid all cores F=1M", 4.0, over("hybrid F=1M", 12.0)),
    t(T_HYBRID, HYBRID_ALL_D10, "hybrid index on all host cores over its one thread", ("ccm", "dense"), "hybrid all cores F=1M", 10.0, over("hybrid F=1M", 12.0)),
    t(T_HYBRID, HYBRID_ALL_D20, "hybrid index on all host cores over its one thread", ("ccm", "dense"), "hybrid all cores F=1M", 20.0, over("hybrid F=1M", 12.0)),
    t(T_HYBRID, HYBRID_ALL_D10_4, "hybrid index on all host cores over its one thread", ("ccm", "dense10"), "hybrid all cores F=1M", 4.0, over("hybrid F=1M", 12.0)),
    t(T_HYBRID, HYBRID_ALL_D10_10, "hybrid index on all host cores over its one thread", ("ccm", "dense10"), "hybrid all cores F=1M", 10.0, over("hybrid F=1M", 12.0)),
    t(T_HYBRID, HYBRID_ALL_D10_20, "hybrid index on all host cores over its one thread", ("ccm", "dense10"), "hybrid all cores F=1M", 20.0, over("hybrid F=1M", 12.0)),
    // Many GPUs: the partitioned engine's throughput over its own on one GPU.
    t(T_MULTI, MULTI_2, "CCM index by interface, Table 2 default", ("ccm", "scaling"), "gpu multi model=table2 F=250k speedup", 2.0, Check::AtLeast(1.8)),
    t(T_MULTI, MULTI_2, "CCM index by filter, Table 2 default", ("ccm", "scaling"), "gpu multi by-filter model=table2 F=250k speedup", 2.0, Check::AtLeast(1.8)),
    t(T_MULTI, MULTI_2, "CCM index on every GPU, events cut, Table 2 default", ("ccm", "scaling"), "gpu multi by-event model=table2 F=250k speedup", 2.0, Check::AtLeast(1.8)),
    t(T_MULTI, MULTI_2, "CCM index, dense 1M filters, 20 names", ("ccm", "scaling"), "gpu multi model=dense F=1M speedup", 2.0, Check::AtLeast(1.8)),
    t(T_MULTI, MULTI_2, "CCM index on every GPU, events cut, dense 1M filters, 20 names", ("ccm", "scaling"), "gpu multi by-event model=dense F=1M speedup", 2.0, Check::AtLeast(1.8)),
    t(T_MULTI, MULTI_4, "CCM index by interface, Table 2 default", ("ccm", "scaling"), "gpu multi model=table2 F=250k speedup", 4.0, Check::AtLeast(3.4)),
    t(T_MULTI, MULTI_4, "CCM index by filter, Table 2 default", ("ccm", "scaling"), "gpu multi by-filter model=table2 F=250k speedup", 4.0, Check::AtLeast(3.4)),
    t(T_MULTI, MULTI_4, "CCM index on every GPU, events cut, Table 2 default", ("ccm", "scaling"), "gpu multi by-event model=table2 F=250k speedup", 4.0, Check::AtLeast(3.4)),
    t(T_MULTI, MULTI_4, "CCM index, dense 1M filters, 20 names", ("ccm", "scaling"), "gpu multi model=dense F=1M speedup", 4.0, Check::AtLeast(3.4)),
    t(T_MULTI, MULTI_4, "CCM index on every GPU, events cut, dense 1M filters, 20 names", ("ccm", "scaling"), "gpu multi by-event model=dense F=1M speedup", 4.0, Check::AtLeast(3.4)),
    t(T_MULTI, MULTI_1, "CCM index by interface, Table 2 default", ("ccm", "scaling"), "gpu multi model=table2 F=250k events/s", 1.0, over("gpu index model=table2 F=250k events/s", 0.95)),
    t(T_MULTI, MULTI_1, "CCM index on every GPU, events cut, Table 2 default", ("ccm", "scaling"), "gpu multi by-event model=table2 F=250k events/s", 1.0, over("gpu index model=table2 F=250k events/s", 0.95)),
    t(T_MULTI, MULTI_1, "CCM index, dense 1M filters, 20 names", ("ccm", "scaling"), "gpu multi model=dense F=1M events/s", 1.0, over("gpu index model=dense F=1M events/s", 0.95)),
    t(T_MULTI, MULTI_1, "CCM index on every GPU, events cut, dense 1M filters, 20 names", ("ccm", "scaling"), "gpu multi by-event model=dense F=1M events/s", 1.0, over("gpu index model=dense F=1M events/s", 0.95)),
    t(T_MULTI, MULTI_2, "DDM sweep count, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep count regions=1M speedup", 2.0, Check::AtLeast(1.8)),
    t(T_MULTI, MULTI_2, "DDM bisect count, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi bisect count regions=1M speedup", 2.0, Check::AtLeast(1.8)),
    t(T_MULTI, MULTI_2, "DDM sweep pairs to the host, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep pairs regions=1M speedup", 2.0, Check::AtLeast(1.8)),
    t(T_MULTI, MULTI_2, "DDM sweep count, space cut into slabs, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep by-slab count regions=1M speedup", 2.0, Check::AtLeast(1.8)),
    t(T_MULTI, MULTI_2, "DDM bisect count, space cut into slabs, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi bisect by-slab count regions=1M speedup", 2.0, Check::AtLeast(1.8)),
    t(T_MULTI, MULTI_2, "DDM sweep pairs to the host, space cut into slabs, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep by-slab pairs regions=1M speedup", 2.0, Check::AtLeast(1.8)),
    t(T_MULTI, MULTI_4, "DDM sweep count, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep count regions=1M speedup", 4.0, Check::AtLeast(3.4)),
    t(T_MULTI, MULTI_4, "DDM sweep count, space cut into slabs, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep by-slab count regions=1M speedup", 4.0, Check::AtLeast(3.4)),
    t(T_MULTI, MULTI_4, "DDM bisect count, space cut into slabs, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi bisect by-slab count regions=1M speedup", 4.0, Check::AtLeast(3.4)),
    t(T_MULTI, MULTI_4, "DDM bisect count, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi bisect count regions=1M speedup", 4.0, Check::AtLeast(3.4)),
    t(T_MULTI, MULTI_4, "DDM sweep pairs to the host, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep pairs regions=1M speedup", 4.0, Check::AtLeast(3.4)),
    t(T_MULTI, MULTI_1, "DDM sweep count, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep count regions=1M matchings/s", 1.0, over("gpu sweep count regions=1M matchings/s", 0.95)),
    t(T_MULTI, MULTI_1, "DDM bisect count, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi bisect count regions=1M matchings/s", 1.0, over("gpu bisect count regions=1M matchings/s", 0.95)),
    t(T_MULTI, MULTI_1, "DDM sweep count, space cut into slabs, 1M regions, 2-D, degree 100", ("ddm", "scaling"), "gpu multi sweep by-slab count regions=1M matchings/s", 1.0, over("gpu sweep count regions=1M matchings/s", 0.95)),
    t(T_MULTI, MULTI_2, "XML filter, Fig. 10b: 1000 documents, 2000 queries", ("xml", "scaling"), "gpu multi docs=1000 speedup", 2.0, Check::AtLeast(1.8)),
    t(T_MULTI, MULTI_4, "XML filter, Fig. 10b: 1000 documents, 2000 queries", ("xml", "scaling"), "gpu multi docs=1000 speedup", 4.0, Check::AtLeast(3.4)),
    t(T_MULTI, MULTI_1, "XML filter, Fig. 10b: 1000 documents, 2000 queries", ("xml", "scaling"), "gpu multi docs=1000 MB/s", 1.0, over("gpu filter docs=1000 MB/s", 0.95)),
    t(T_MULTI, MULTI_2, "CLCB batched, Fig. 3a: 1M subscriptions", ("clcb", "scaling"), "gpu multi subs=1M speedup", 2.0, Check::AtLeast(1.8)),
    t(T_MULTI, MULTI_2, "CLCB grid index batched, Fig. 3a: 1M subscriptions", ("clcb", "scaling"), "gpu multi grid subs=1M speedup", 2.0, Check::AtLeast(1.8)),
    t(T_MULTI, MULTI_4, "CLCB batched, Fig. 3a: 1M subscriptions", ("clcb", "scaling"), "gpu multi subs=1M speedup", 4.0, Check::AtLeast(3.4)),
    t(T_MULTI, MULTI_4, "CLCB grid index batched, Fig. 3a: 1M subscriptions", ("clcb", "scaling"), "gpu multi grid subs=1M speedup", 4.0, Check::AtLeast(3.4)),
    t(T_MULTI, MULTI_1, "CLCB batched, Fig. 3a: 1M subscriptions", ("clcb", "scaling"), "gpu multi subs=1M events/s", 1.0, over("gpu batched subs=1M events/s", 0.95)),
    t(T_MULTI, MULTI_1, "CLCB grid index batched, Fig. 3a: 1M subscriptions", ("clcb", "scaling"), "gpu multi grid subs=1M events/s", 1.0, over("gpu grid batched subs=1M events/s", 0.95)),
];

/// Why the hybrid index can read slower than the content index by a percent (Table 2's
/// rows): there it runs the content index's own function on every event.
const WHY_SAME_CODE: &str = "Table 2's events (3-5 of 100 names) are all decided by the static bound, so the hybrid calls the content index's very own function on the very same index (the harness builds the hybrid over it) for every event, behind one comparison; what remains is how the two series' scratch memory and call paths land, a percent either way from one build and run to the next (row 1: 1.010x, 0.992x, 0.998x; row 4: 0.999x, 0.997x, 0.999x in the three runs of 2026-11-26 with the shared index, each seed's least over up to 5 passes)";

/// Why the many-GPU goals are missed (2 and 4 GPUs).
const WHY_MULTI: &str = "recorded 2026-11-27 on 4x H100 with 64 host cores (DDM on 4x H200), each device's part on a host thread of its own outside rayon's pool that spins 1 ms for its next part before it sleeps (woken from sleep, a part cost two wake-ups a call: a do-nothing call over 4 devices took 15.5 us, 2.9 us spinning; `ddm-region`'s `multi_split`). DDM, recorded last (4x H200, 64 host cores, 3 seeds): the sorting engines' count waits once (its chunking chosen on the device) and, on a GPU, its ~20 launches are recorded once as a CUDA graph and replayed as one call (`Device::record`); the space cut into slabs counts 1M regions 2.43x faster on 2 GPUs and 3.98x on 4 (bisect; per seed 3.75x to 4.35x), 3.37x and 7.62x at 4M; `multi_split` in the same call: 4 slabs 164.6 us before the recording and 128.0 us with it, one GPU 580 and 556 us; on 4x H100 before the recording (3 seeds) the same cut read 2.22x and 3.18x (2.52x before the count's second wait went); the cut by publications 1.24-1.96x at 1M (every GPU sorts every subscription); XML (3 seeds): 1.94x on 2 GPUs and 3.68x on 4 (3.28x before; `xml-twig`'s `devices_split`: each device's run alone 4.54-4.58 ms, all four at once 4.78 ms, against 20.8 ms for the batch on one GPU); CLCB (2 seeds): batched 1.92x and 3.67x at 1M subscriptions, 3.94x at 4M; the grid index through the partitioned path reads 1.0x on 2 GPUs and 0.90x on 4 (every device's engine encodes every event on the shared host; not profiled); CCM (2 seeds): the dense model at 1M filters 2.12x on 2 GPUs and 3.80x on 4 cut by interface, 2.00x and 3.59x cut by events, 4.96x by interface at 4M; Table 2's default scenario is bound by the host's encoding: cut by events, 2 GPUs drive 45-64M events/s and 4 GPUs 28-30M, against 14-18M on one (4.51x and 2.45x), with pools of 16 and 8 encoding threads a device; encoding alone went 5.7 ns an event on 32 threads and 14 on 64 of this host (`index_pipeline`), one index 59M events/s on a pool of its own of 16 threads and 8.4M on 64, but neither the encoding threads' bound nor driving the one-device call on its pool brought the harness's one-device stream above 18M (not explained: the stream's calls are 65,536 events, a fifth of the example's); cut by interface or by filter every GPU encodes every event (0.21-0.87x)";

/// Why a goal is missed, as measured: (goal, explanation). `harness report` prints the
/// explanation under the Targets summary while the goal reads "no", so that a loss says
/// where and why beside its number. Each one names what the recorded runs and their
/// time splits showed, not a guess.
pub const WHY_MISSED: &[(&str, &str)] = &[
    (GPU_T2, "the host's encoding of the events bounds it (`index_pipeline` on the H100 machine, 2026-11-26, Table 1's default scenario): encoding alone takes 10.1 ns per event on 16 threads (each event's heap-allocated names and strings read once), and in the pipeline 11.5 ns beside the device's 11.3 ns (kernels 8.1-8.9, answers 2.7-3.1), 14.5-15.2 ns per event in all; with a free device the encoding alone would cap this ratio near 7x against 71 ns and 11x against 108 ns of the best CPU. The CPU side differs between GPU machines of this kind: the content index on one core took 0.91 us per event on the first host of 2026-11-26 and 1.28 us on the second, the GPU index 16 ns on both, so this goal read 4.5x on the first and 6.2-6.6x on the later ones; with Zipf names the CPU's work per event is larger and the same pipeline is 18-24x"),
    (GPU_FIGS, "where the CPU needs less than ~0.2 us per event (few filters per interface, many names, few attributes), the GPU index takes 14-20 ns per event: the floor of the host's encoding measured on Table 2 (10 ns per event on 16 cores, encoding alone)"),
    (CCM_LAT, "15.0-15.6 us on the second GPU machine of 2026-11-26, whose host ran the CPU matchers 1.4x slower than the first's (12.9 us there); the launch + sync floor is 9.6 us, the host's encoding of the event and reading its answer the rest"),
    (GPU_DENSE, "at 1M filters the answers themselves (4,000-22,000 ids per event) and the filter-major kernel (every filter for every event) bound it; a GPU form of the value index's bitsets is not built"),
    (HYBRID_T2_1, WHY_SAME_CODE),
    (HYBRID_T2_4, WHY_SAME_CODE),
    (GPU_DENSE10, "events of 10 and 20 names pass the partition walk's dense limit and go to the interface-major kernel (a block per event and interface over the interface's 100,000 filters at 1M, fewest constraints first, stopping at its first match): 96 ns per event at 1M filters and 10 names against 352 ns for the best CPU on all cores (not profiled further); with 3-5 names the walk now stops once all ten interfaces matched (1M filters: 323 -> 40 ns per event, 7.9x; 100k: 16.2x)"),
    (CLCB_BEST_T2, "as for CCM, the host's encoding of the events bounds the cell index: 18-26 ns per event on the 16 cores, beside which the device takes ~1 ns and copying the answers (sorted and deduplicated on the device) 12-15 ns (`cells_split` on the H100 machine, 2026-11-26: 21-31 ns per event on a 16-launch stream); the harness's stream is four launches, whose first encoding and last answers cannot overlap: 36 ns there against 97 ns for the grid on all cores"),
    (CLCB_BEST_FIGS, "small areas: the host's encoding of the events bounds the cell index (2.5x at 0.001% uniform, where the grid on all cores takes 71 ns per event and the cell index 29 ns); at 0.01% uniform and 0.001-0.1% Zipf it is 6.9-8.7x (not split further); at 0.1-1% uniform and 1% Zipf, where the CPU's work grows with the candidates, 10.7-29.7x"),
    (CLCB_BEST_KW, "with 1% regions the cell index is 14.9x (each event's ~265 answers sorted and deduplicated on the device; when the host sorted them from pairs it was 0.9x); with 0.01% the host's encoding bounds it (35-45 ns per event on 16 cores, `cells_split`) against 117 ns for the grid on all cores: 2.6x"),
    (CLCB_BEST_MOVE, "a move updates a host mirror of the cell lists (the CPU grid's algorithm: a binary search per old cell, an append per new one, 3.4-5.7 us per move on this host's 1M-subscription index, memory-latency bound) and reaches the device in one launch per flush; the mirror's update sets the floor (cell index 3.7-5.5 us, the paper's engine's one launch 4.3-4.6 us; only the paper's low-latency mode, a 16-byte copy into its flat filter table, is under 2 us)"),
    (XML_GPU_BEST, "the GPU's stack kernels step a column per query node at every event, so their work grows with the queries, while the lazy DFA's word-parallel join costs the reports an element receives (the stack kernels: 1.9-2.8x it on batches, 0.5-4.2x on one document); the lazy DFA's own automaton walked on the GPU (gpu-dfa, over the cache grown ahead of the stream, each document cut between its root's children into segments of a warp each) meets it on Fig. 7 (one 1 MB document, 2048 twigs: 13.1x, 18.9x and 20.0x at 5, 10 and 15 nodes), Fig. 9 at 5 and 10 nodes (10.1x, 17.1x) and Figs. 10a/10b (11.9x, 13.2x) (H100, 2026-11-27, since the batch's host work shrank: the cuts planned from the points between each root's children found as the batch is encoded, 0.1 ms instead of 1.6, and the answers decoded on all cores, 0.2 ms instead of 1.1-1.5; the kernels take 0.7-1.8 ms of a batch's 1.4-2.7 ms). It misses on Fig. 9 at 15 nodes (6.0x): the cache grown ahead stops at half of its 1 GiB bound (33,761 states in 512 MB) before it covers the training documents' tag grammar, and 45, 35 and 10 of the three seeds' 500 documents need a transition it lacks; the harness finds them by walking their transitions on the host and filters them on the other cores while the GPU runs, but they take the CPU longer than the GPU takes for the whole batch (2.7 ms): each builds the states it needs, and 45 of them took 52 ms on the 2-core development machine; with a 2 GiB bound none of them lacks one and the warm path runs 4.6 GB/s (example, not recorded), but growing 1 GB takes 13 s and copying it to the grown-cache series' 17 workers 3.8 s a run, at every point of the figure. It misses on Fig. 8 (one 2 MB document, 256 twigs: 5.4x, 7.6x and 9.7x at */// 10%, 30% and 50%): the CPU's segments on 16 cores filter it at 1.1-1.9 GB/s, and the GPU's 0.17-0.21 ms are 0.11 ms of kernels (a warp's walk is a chain of round trips to L2, some 360 ns an event, over about 6,000 segments of 32+ events) and 0.06-0.1 ms of fixed costs a call (the upload, zeroing the rows, two reads back, the plan)"),
    (MULTI_2, WHY_MULTI),
    (MULTI_4, WHY_MULTI),
    (MULTI_1, "with one device the partitioned engines are the one-device engine itself, driven on the caller's thread: the same code as the one-device series measured just before it; on the 64-core host of the 4-GPU runs (2026-11-27) XML, DDM, CLCB and CCM's dense model read 1.0x; CCM's Table 2 stream read 0.7x (the one-device series 14.1M and 18.3M events/s, the same path again 10.8-14.8M): the spread of the host-bound Table 2 stream between two runs of one engine on that host (not profiled)"),
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

/// The outcome of one target on the recorded rows of its experiment.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The measured value (a speedup for [`Check::SpeedupOver`]) and whether it holds.
    Measured { value: f64, met: bool },
    /// The experiment, series or x value is not in the recorded CSV.
    NotRecorded,
}

fn mean(rows: &[Row], series: &str, x: f64) -> Option<f64> {
    rows.iter()
        .find(|r| r.series == series && (r.x - x).abs() <= 1e-9 * x.abs().max(1.0))
        .map(|r| r.mean)
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
                        Check::AtMost(_) => -value,
                        _ => value,
                    };
                    let old = worst.map(|(v, _)| match self.check {
                        Check::AtMost(_) => -v,
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
        let Some(v) = mean(rows, self.series, self.x) else {
            return Outcome::NotRecorded;
        };
        match self.check {
            Check::AtMost(limit) => Outcome::Measured {
                value: v,
                met: v <= limit,
            },
            Check::AtLeast(limit) => Outcome::Measured {
                value: v,
                met: v >= limit,
            },
            Check::SpeedupOver { over, factor } => {
                let Some(b) = mean(rows, over, self.x) else {
                    return Outcome::NotRecorded;
                };
                let s = if higher_is_better { v / b } else { b / v };
                Outcome::Measured {
                    value: s,
                    met: s >= factor,
                }
            }
        }
    }

    /// The threshold in words: "<= 0.015", ">= 100x sff".
    pub fn threshold(&self) -> String {
        match self.check {
            Check::AtMost(l) => format!("<= {l}"),
            Check::AtLeast(l) => format!(">= {l}"),
            Check::SpeedupOver { over, factor } => format!(">= {factor}x {over}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_why_missed_note_explains_a_goal_of_the_targets_once() {
        for (i, (goal, why)) in WHY_MISSED.iter().enumerate() {
            assert!(
                TARGETS.iter().any(|t| t.goal == *goal),
                "a note for a goal no target has: {goal}"
            );
            assert!(!why.is_empty() && !why.ends_with('.'), "{goal}: {why}");
            assert!(
                WHY_MISSED[i + 1..].iter().all(|(g, _)| g != goal),
                "two notes for one goal: {goal}"
            );
        }
    }

    fn row(series: &str, x: f64, mean: f64) -> Row {
        Row {
            series: series.into(),
            x,
            mean,
            min: mean,
            max: mean,
            n: 1,
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
    fn limits_and_missing_points_are_reported_as_such() {
        let rows = [row("gpu", 1.0, 0.02)];
        let at_most = t("", "", "", ("p", "e"), "gpu", 1.0, Check::AtMost(0.015));
        assert_eq!(
            at_most.evaluate(&rows, false),
            Outcome::Measured {
                value: 0.02,
                met: false
            }
        );
        let elsewhere = t("", "", "", ("p", "e"), "gpu", 2.0, Check::AtMost(1.0));
        assert_eq!(elsewhere.evaluate(&rows, false), Outcome::NotRecorded);
        let no_base = t("", "", "", ("p", "e"), "gpu", 1.0, over("cpu", 1.0));
        assert_eq!(no_base.evaluate(&rows, false), Outcome::NotRecorded);
    }

    #[test]
    fn every_target_names_an_existing_experiment() {
        let exps = crate::runner::all_experiments();
        for tg in TARGETS {
            assert!(
                exps.iter()
                    .any(|e| e.paper.name() == tg.paper && e.id == tg.experiment),
                "{}/{}",
                tg.paper,
                tg.experiment
            );
        }
    }
}
