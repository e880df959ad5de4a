//! Engine names as `clap::ValueEnum`s: a misspelt `--engine` or `--engines` name is a
//! usage error (exit code 2) that lists the names, instead of being ignored or checked by
//! hand in each paper module.

use clap::ValueEnum;

/// The name clap parses and prints for a value of a [`ValueEnum`].
pub fn name<E: ValueEnum>(e: &E) -> String {
    e.to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

/// `harness ccm match --engine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CcmEngine {
    /// The paper's kernels on the GPU (batched over each window).
    Gpu,
    /// The same kernels on the host SIMT emulator (slow: for checking).
    Emu,
    /// The pruning index on the GPU (beyond the paper: filters partitioned by their
    /// rarest names, a warp per event over its partitions; the fastest GPU engine).
    GpuIndex,
    /// The pruning index on the host SIMT emulator (slow: for checking).
    EmuIndex,
    /// The SFF-like CPU matcher (all cores).
    Sff,
    /// The content index: pivot-partitioned after OpIndex / BE-Tree (CPU, all cores).
    Index,
    /// The hybrid index: a value index (REIN / HEM class), the content index and, for
    /// integer bounds, the bit index (HEM class), the cheapest chosen per event; the
    /// strongest CPU engine (CPU, all cores).
    Hybrid,
}

/// `harness clcb match --engine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ClcbEngine {
    /// The paper's kernels on the GPU.
    Gpu,
    /// The same kernels on the host SIMT emulator (slow: for checking).
    Emu,
    /// SFF with a location check (CPU, all cores).
    Sff,
    /// An R*-tree of the areas, then the content check (CPU, all cores).
    Rtree,
    /// The grid index: a uniform grid of the areas with a content index per cell
    /// (after FAST, ICDE 2018); the strongest CPU engine (CPU, all cores).
    Grid,
    /// The cell index on the GPU (beyond the paper): the grid index's cells with
    /// content keys, a warp per event of a batch.
    GpuCells,
    /// The cell index on the host SIMT emulator (slow: for checking).
    EmuCells,
}

/// `harness xml filter --engine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum XmlEngine {
    /// The stack kernels on the GPU (the kernel chosen per query set); a document long
    /// enough to fill the GPU alone (524,288 events) in segments, as gpu-seg.
    Gpu,
    /// The paper's block kernel on the GPU.
    GpuBlock,
    /// Document segments on the GPU (one long document over many blocks).
    GpuSeg,
    /// The stack kernels on the host SIMT emulator (slow: for checking).
    Emu,
    /// The YFilter-like NFA (CPU).
    Yfilter,
    /// The lazy DFA with a memoized twig join (XMLTK, XPush): the strongest CPU filter.
    LazyDfa,
    /// The lazy DFA's automaton walked on the GPU: learned on the CPU from the first
    /// documents and grown ahead along their tag grammar, then uploaded; the documents
    /// it cannot finish go to the lazy DFA on the CPU.
    GpuDfa,
}

/// `harness ddm match --engine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DdmEngine {
    /// The paper's region-based approach on the GPU.
    GpuRegion,
    /// The region-based approach with its phase 3 sliced over block rows.
    GpuRegionSliced,
    /// The paper's grid-based approach on the GPU.
    GpuGrid,
    /// Sort and sweep on the GPU (beyond the paper).
    GpuSweep,
    /// Counting by binary search over sorted end points on the GPU (1-D), the sweep of
    /// the dimension with the fewest sampled overlaps (beyond the paper).
    GpuBisect,
    /// `gpu-region` on the host SIMT emulator.
    EmuRegion,
    /// `gpu-region-sliced` on the host SIMT emulator.
    EmuRegionSliced,
    /// `gpu-grid` on the host SIMT emulator.
    EmuGrid,
    /// `gpu-sweep` on the host SIMT emulator.
    EmuSweep,
    /// `gpu-bisect` on the host SIMT emulator.
    EmuBisect,
    /// Every pair tested (CPU).
    Brute,
    /// A grid of cells (CPU).
    Grid,
    /// Sort and sweep (CPU).
    Sort,
    /// Marzolla & D'Angelo's parallel sort-based matching (CPU).
    Sbm,
    /// Marzolla & D'Angelo's interval-tree matching (CPU).
    Itm,
    /// Counting by binary search over sorted end points (CPU; Marzolla et al. 2024).
    Bisect,
}

/// `harness run --engines`: every engine name an experiment asks [`crate::experiment::Ctx::wants`]
/// about. An experiment that adds an engine adds its name here (a test checks that
/// every name asked about is listed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RunEngine {
    /// ccm, clcb, xml: the kernels on the GPU.
    Gpu,
    /// xml: the block kernel on the GPU.
    GpuBlock,
    /// xml: document segments on the GPU.
    GpuSeg,
    /// ccm, clcb, xml: the kernels on the host emulator.
    Emu,
    /// ccm: the pruning index on the GPU.
    GpuIndex,
    /// ccm: the pruning index on the host emulator.
    EmuIndex,
    /// scaling experiments: the partitioned engines over several GPUs (`--devices`).
    GpuMulti,
    /// scaling experiments: the partitioned engines over several emulated devices.
    EmuMulti,
    /// clcb: the cell index (the grid index's cells with content keys) on the GPU.
    GpuCells,
    /// clcb: the cell index on the host emulator.
    EmuCells,
    /// xml: document segments on the host emulator.
    EmuSeg,
    /// xml: the lazy DFA's warm path on the GPU (a warp per document, or per segment of
    /// one cut between its root's children; documents the automaton grown ahead cannot
    /// finish go to the lazy DFA on all cores).
    GpuDfa,
    /// xml: the lazy DFA's warm path on the host emulator.
    EmuDfa,
    /// ccm, clcb: the SFF-like CPU matcher.
    Sff,
    /// ccm: the content index (pivot-partitioned, after OpIndex), one core and all cores.
    Index,
    /// ccm: the hybrid index (value index, content index and, where it indexes every
    /// filter, the bit index, chosen per event), one core and all cores.
    Hybrid,
    /// ccm `hem`: the bit index alone (HEM class, integer bounds only), one core and all
    /// cores.
    Bits,
    /// clcb: the R*-tree CPU matcher (one core; with the content check also all cores).
    Rtree,
    /// xml: the YFilter-like NFA, one core.
    Yfilter,
    /// xml: the NFA over all cores.
    YfilterMc,
    /// xml: the lazy DFA with a memoized twig join (XMLTK, XPush), one core.
    LazyDfa,
    /// xml: the lazy DFA over all cores (documents in parallel).
    LazyDfaMc,
    /// xml: the same from a cache grown ahead of the stream (every path of the training
    /// documents' tag grammar), the automaton `gpu-dfa` walks.
    LazyDfaAheadMc,
    /// ddm: region-based on the GPU.
    GpuRegion,
    /// ddm: region-based, phase 3 sliced, on the GPU.
    GpuRegionSliced,
    /// ddm: grid-based on the GPU.
    GpuGrid,
    /// ddm: sort and sweep on the GPU.
    GpuSweep,
    /// ddm: counting by binary search (1-D), sweep of the sparsest dimension, on the GPU.
    GpuBisect,
    /// ddm: region-based on the emulator.
    EmuRegion,
    /// ddm: region-based, phase 3 sliced, on the emulator.
    EmuRegionSliced,
    /// ddm: grid-based on the emulator.
    EmuGrid,
    /// ddm: sort and sweep on the emulator.
    EmuSweep,
    /// ddm: the bisect engine on the emulator.
    EmuBisect,
    /// ddm: brute force, one core.
    Brute,
    /// ddm: brute force, all cores.
    BrutePar,
    /// ddm: grid, one core; clcb: the grid index (a content index per cell), one core
    /// and all cores.
    Grid,
    /// ddm: grid, all cores.
    GridPar,
    /// ddm: sort and sweep, one core.
    Sort,
    /// ddm: sort and sweep, all cores.
    SortPar,
    /// ddm: Marzolla & D'Angelo's parallel sort-based matching, one core.
    Sbm,
    /// ddm: the same on all cores.
    SbmPar,
    /// ddm: Marzolla & D'Angelo's interval-tree matching, one core.
    Itm,
    /// ddm: the same on all cores.
    ItmPar,
    /// ddm: counting by binary search over sorted end points, one core.
    Bisect,
    /// ddm: the same on all cores.
    BisectPar,
}

impl RunEngine {
    /// Whether `name` is one of the names.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn known(name: &str) -> bool {
        RunEngine::from_str(name, false).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_kebab_case_names_the_experiments_and_commands_use() {
        assert_eq!(name(&XmlEngine::GpuBlock), "gpu-block");
        assert_eq!(name(&DdmEngine::EmuRegionSliced), "emu-region-sliced");
        assert_eq!(name(&RunEngine::YfilterMc), "yfilter-mc");
        assert!(RunEngine::known("sort-par"));
        assert!(!RunEngine::known("bogus"));
    }

    #[test]
    fn every_command_engine_is_also_a_run_engine() {
        let all = CcmEngine::value_variants()
            .iter()
            .map(name)
            .chain(ClcbEngine::value_variants().iter().map(name))
            .chain(XmlEngine::value_variants().iter().map(name))
            .chain(DdmEngine::value_variants().iter().map(name));
        for n in all {
            assert!(RunEngine::known(&n), "{n}");
        }
    }
}
