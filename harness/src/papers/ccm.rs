//! The ccm paper's experiments (Margara & Cugola, DEBS 2011, §5: Table 2 and Figs.
//! 5–11), and two beyond it, `dense` and `dense10`. The `ccm match` / `ccm generate`
//! subcommands are in `users::ccm`.
//!
//! Series: `gpu` (the paper's mode: one event per launch, in-kernel reset, end to end:
//! encode, copy in, kernel, copy out), `gpu batched` (beyond the paper: the filter-major
//! batched kernel over a stream of events, per event), `gpu index` (beyond the paper:
//! the pruning index [`ccm::GpuIndex`], filters partitioned by their rarest names on the
//! device, over the same stream, per event, events encoded on all cores, copied in and
//! answers copied out included; Table 2 rows 2 and 3: its build and device bytes), `gpu grouped` (Table 2: constraints
//! grouped by type, operator and value), `gpu inline` (Table 2 and Fig. 5, beyond the
//! paper: table `Input` passed in the launch parameters, no copy in), `gpu latency`
//! (Table 2 and Fig. 5, beyond the paper: `Input` in the launch parameters and the
//! matched interfaces written by the kernel into mapped host memory: one launch and one
//! synchronisation per event, nothing copied), `gpu persistent` (Table 2 and the
//! `latency` / `inflight` experiments, beyond the paper: the persistent kernel fed
//! through a ring in mapped host memory, no launch per event; the GPU busy-waits while
//! it runs), `emu` (the same
//! kernels on the host emulator, quick mode), `sff` (the SFF-like matcher, one core) and
//! `sff all cores` (one event per core), and `index` / `index all cores`, a
//! modern content index on one core and on all cores ([`baselines::content_index`]:
//! pivot-partitioned after OpIndex / BE-Tree, exactly SFF's answers), `hybrid` /
//! `hybrid all cores`, the hybrid index on one core and on all cores
//! ([`baselines::hybrid_index`]: a value index of the REIN / HEM class, the content
//! index and, where every filter is integer bounds, the HEM-class bit index, the
//! cheapest chosen per event), `bits` / `bits all cores` (the `hem` experiment only: the
//! bit index alone, [`baselines::bit_index`]), with `best CPU (all cores)`, per seed the
//! fastest of the all-core CPU series (`sff all cores`, `index all cores`, `hybrid all
//! cores`, `bits all cores`; Table 2, Figs. 6-11 and the dense experiments); Table 2's rows 2 and 3 give
//! each index's build time and size. The indexes read the workload's flat batch of
//! events ([`ccm::batch::EventBatch`], what the GPU engines take) in place; beside them,
//! `hybrid (heap events)` is the hybrid index on one core over the same events as heap
//! `Event`s (timed by turns with the others, so that a run shows what reading the batch
//! gains or loses), and `batch build (all cores)` the time to build the batch of the
//! timed stream from heap events on all cores, per event (what parsing into the batch
//! costs; in no engine's time). SFF reads the batch too (names numbered once per batch); its
//! reference answers come from heap events. Every answer of every kernel engine and CPU index is
//! checked against SFF's on every event of every workload (SFF on all cores gives the
//! reference answers; a mismatch fails the run). Single-core SFF and the indexes on one
//! core are timed on a bounded prefix of the events at large scale (at least 20 events,
//! then within a budget of 1.5 s; the two indexes by turns of up to 4096 events over the
//! same stream, so that a slow stretch of the machine falls on both), the indexes on all cores
//! on a stream of at most 65,536 events that the one-core rate says fits the same budget,
//! so that an experiment stays within about two minutes on the GPU machine.
//!
//! The dense experiments (beyond the paper) run the dense model of the REIN / HEM
//! literature ([`ccm::workload::DenseParams`]: 20 numeric names, 1-5 range predicates per
//! filter) at x = names carried per event (4: 3 to 5, 10, 20) and 100k and 1M filters,
//! the second factor, named in every series (`hybrid F=1M`, `gpu batched F=100k`); in
//! quick mode 2k and 20k filters. `dense` gives each filter its own interface (answers
//! per subscription, as in the REIN / HEM papers), `dense10` ten interfaces. The batched
//! kernel keeps an events x interfaces flag matrix: its events per launch are capped so
//! that the matrix stays within 1 GB (268 events per launch at 1M interfaces), and there
//! it is timed in rounds of the workload's events within the budget; the per-event
//! kernels, which copy one flag per interface back per event, on a prefix of the events
//! within the budget.

use crate::experiment::{Ctx, EngineKind, Experiment, Paper};
use anyhow::Context as _;
use baselines::bit_index::BitIndex;
use baselines::content_index::ContentIndex;
use baselines::hybrid_index::HybridIndex;
use baselines::sff::Sff;
use baselines::Matcher;
use ccm::batch::EventBatch;
use ccm::workload::{generate, generate_dense, DenseParams, NameDist, Params, Workload};
use ccm::{
    Attribute, Ccm, Config, Event, GpuIndex, IndexConfig, InterfaceId, MultiAnswers, MultiIndex,
    Partition, Reset,
};
use gpu_kernels::Device;
use std::sync::Arc;
use std::time::Instant;

#[path = "hem.rs"]
mod hem;

/// The paper's tables and figures.
pub fn experiments() -> Vec<Experiment> {
    let e = |id, title, x_label, y_label, log_x, baseline, paper_says, run| Experiment {
        paper: Paper::Ccm,
        id,
        title,
        x_label,
        y_label,
        log_x,
        log_y: true,
        higher_is_better: false,
        baseline,
        paper_says,
        run,
    };
    let ms = "processing time per event (ms)";
    vec![
        e(
            "table2",
            "Table 2: processing time (x = 1), deployment time (x = 2, ms), data-structure size (x = 3, MB), processing time with Zipf names (x = 4), default scenario",
            "row (1: time, 2: deployment, 3: size, 4: Zipf time)",
            "ms / ms / MB / ms",
            false,
            Some("sff"),
            "CCM 0.144 ms vs SFF 1.035 ms (7.2x); deployment 527.5 vs 992.3 ms; 33.9 MB GPU vs 42.4 MB CPU; Zipf 2.06 vs 14.68 ms",
            table2,
        ),
        e(
            "fig5",
            "Fig. 5: CCM processing time split (copy in, kernel, copy out), x = 1: Memset variant, x = 2: in-kernel reset, x = 3: in-kernel reset with Input in the launch \
                parameters, x = 4: and the output in mapped host memory (3 and 4 beyond the paper)",
            "variant (1: Memset, 2: Kernel, 3: + inline Input, 4: + mapped output)",
            "time per event (ms)",
            false,
            None,
            "Memset: copy in 0.075 ms, kernel 0.125 ms; Kernel: copy in 0.009 ms, kernel 0.13 ms (about 30% faster overall)",
            fig5,
        ),
        e(
            "latency",
            "Per-event latency distribution, default scenario (beyond the paper): end to end (event written by the host to answer read by the host) over 100k events for the \
                paper's pipeline (gpu: copy in, kernel, copy back), the one-launch mapped path (gpu latency) and the persistent kernel (gpu persistent), one event at a time",
            "percentile",
            "latency per event (µs)",
            false,
            None,
            "the paper reports means only: 0.144 ms per event in the default scenario (Table 2)",
            latency,
        ),
        e(
            "inflight",
            "Persistent kernel under load, default scenario (beyond the paper): throughput (series '... events/s') and p99 end-to-end latency (series '... p99 us') as the events \
                in flight in the ring grow",
            "events in flight",
            "events/s, and p99 latency (µs)",
            true,
            None,
            "not in the paper (one event at a time)",
            inflight,
        ),
        e("fig6", "Fig. 6: processing time vs attributes per event", "attributes per event (average)", ms, false, Some("sff"), "speedup grows with attributes: 10x at 9 attributes", fig6),
        e("fig7", "Fig. 7: processing time vs constraints per filter", "constraints per filter (average)", ms, false, Some("sff"), "SFF faster at 1-2 constraints; speedup above 10x at 9", fig7),
        e("fig8", "Fig. 8: processing time vs filters per interface", "filters per interface", ms, true, Some("sff"), "SFF faster below 1000 filters; speedup above 13x at 250,000", fig8),
        e("fig9", "Fig. 9: processing time vs number of interfaces", "interfaces", ms, false, Some("sff"), "speedup from 7x (10 interfaces) to more than 13x (100)", fig9),
        e("fig10", "Fig. 10: processing time vs number of names", "names", ms, true, Some("sff"), "speedup rises from 10 to 30 names, then falls; 2x at 1000 names", fig10),
        e("fig11", "Fig. 11: processing time vs share of numerical constraints", "numerical constraints (%)", ms, false, Some("sff"), "speedup grows linearly with the share of \
            numerical constraints", fig11),
        e("dense", DENSE_TITLE, DENSE_X, ms, false, Some("index"), DENSE_SAYS, dense),
        e("dense10", DENSE10_TITLE, DENSE_X, ms, false, Some("index"), DENSE_SAYS, dense10),
        hem::experiment(),
        e("fixedcost", FIXEDCOST_TITLE, "interfaces (one filter each)", ms, true, Some("index"), "not in the paper; our target: at most 2 µs per event at 1M interfaces (the \
            content index once scanned every interface's flag per event)", fixedcost),
        Experiment {
            log_y: false,
            higher_is_better: true,
            ..e("scaling", SCALING_TITLE, "GPUs", "events/s, and speedup over one GPU (x)", true, None, "not in the paper (one GPU)", scaling)
        },
    ]
}

const SCALING_TITLE: &str = "Many GPUs in one host (beyond the paper): throughput of the pruning index partitioned over the GPUs (gpu multi: filters cut by interface; gpu multi \
    by-filter: by filter count; gpu multi by-event: the index on every GPU, the events cut) against the number of GPUs, at Table 2's default scenario and the dense model's \
    heaviest point (1M filters, 20 names per event), and at 4x their filters; answers checked against the one-GPU index";

const DENSE_TITLE: &str = "REIN/HEM dense model, one interface per filter (beyond the paper): processing time vs names per event (20 numeric names, 1-5 range predicates per \
    filter), 100k and 1M filters (F=); the batched kernel's events per launch capped to keep its events x interfaces flags within 1 GB";
const DENSE10_TITLE: &str = "REIN/HEM dense model, 10 interfaces (beyond the paper): processing time vs names per event (20 numeric names, 1-5 range predicates per filter), 100k and 1M filters (F=)";
const FIXEDCOST_TITLE: &str = "Per-event fixed cost (beyond the paper): Table 1's filters, each its own interface, against events whose names no filter uses (nothing to match: \
    what an event costs whatever the matching), 10k to 1M interfaces";
const DENSE_X: &str = "names per event (of 20; 4: 3 to 5)";
const DENSE_SAYS: &str = "not in the paper: REIN/HEM model (Shi & Qian, DASFAA 2022)";

// ---------------------------------------------------------------------------------
// Sizes and engines.

/// The paper's default scenario, or a small one for quick mode (filters / 500, fewer
/// events: the emulator runs every GPU lane on the host).
fn base(quick: bool) -> Params {
    if quick {
        Params {
            events: 12,
            filters_per_interface: (45, 55),
            ..Params::default()
        }
    } else {
        Params::default()
    }
}

/// Filters per interface for a sweep value `x` (±10% as in Table 1), scaled in quick mode.
fn filters(x: usize, quick: bool) -> (usize, usize) {
    let x = if quick { (x / 500).max(2) } else { x };
    (x - x / 10, x + x / 10)
}

/// `(x - 1, x + 1)` clipped at 1: the min-max range with average `x`.
fn around(x: usize) -> (usize, usize) {
    if x <= 1 {
        (1, 1)
    } else {
        (x - 1, x + 1)
    }
}

/// Events streamed through the batched kernel at full scale (the workload's events,
/// repeated), so that the throughput is that of a stream, not of one short burst.
const BATCH_STREAM: usize = 65_536;
/// Wall-clock budget for timing single-core SFF at one point of one seed.
const SFF_BUDGET_S: f64 = 1.5;

struct Engines {
    /// The GPU to open (for its kernels or its index).
    gpu: Option<usize>,
    /// The emulator runs (its kernels or its index).
    emu: bool,
    /// The paper's and the batched kernels: on the GPU, on the emulator.
    kernels: [bool; 2],
    /// The pruning index: on the GPU, on the emulator.
    index_on: [bool; 2],
    sff: bool,
    index: bool,
    hybrid: bool,
    /// The bit index alone (series `bits`; the `hem` experiment only, where it indexes
    /// every filter).
    bits: bool,
}

impl Engines {
    fn of(ctx: &Ctx) -> Engines {
        let kernels = [
            ctx.wants("gpu", EngineKind::Gpu),
            ctx.wants("emu", EngineKind::Emu),
        ];
        let index_on = [
            ctx.wants("gpu-index", EngineKind::Gpu),
            ctx.wants("emu-index", EngineKind::Emu),
        ];
        Engines {
            gpu: if kernels[0] || index_on[0] {
                ctx.gpu_ordinal
            } else {
                None
            },
            emu: kernels[1] || index_on[1],
            kernels,
            index_on,
            sff: ctx.wants("sff", EngineKind::Cpu),
            index: ctx.wants("index", EngineKind::Cpu),
            hybrid: ctx.wants("hybrid", EngineKind::Cpu),
            bits: false,
        }
    }

    /// Whether the paper's and the batched kernels run on the device of series prefix
    /// `name` (`gpu` or `emu`).
    fn kernels_on(&self, name: &str) -> bool {
        self.kernels[(name != "gpu") as usize]
    }

    /// Whether the pruning index runs on the device of series prefix `name`.
    fn index_on(&self, name: &str) -> bool {
        self.index_on[(name != "gpu") as usize]
    }

    /// The devices the paper's kernels run on (experiments of the paper's kernels only).
    fn kernel_devices(&self) -> anyhow::Result<Vec<(&'static str, Device, Config)>> {
        let mut v = self.devices()?;
        v.retain(|(name, _, _)| self.kernels_on(name));
        Ok(v)
    }

    /// The devices the kernels or the index run on: (series prefix, device, launch
    /// config).
    fn devices(&self) -> anyhow::Result<Vec<(&'static str, Device, Config)>> {
        let mut v = Vec::new();
        if let Some(o) = self.gpu {
            v.push((
                "gpu",
                Device::gpu(o, ccm::PTX).context("opening the GPU")?,
                Config::default(),
            ));
        }
        if self.emu {
            // Smaller blocks on the emulator (fewer OS threads per block); same kernels.
            let cfg = Config {
                block: 64,
                batch_events: 64,
                batch_chunk: 16,
                ..Config::default()
            };
            v.push(("emu", Device::emulator(), cfg));
        }
        Ok(v)
    }
}

fn workload(ctx: &Ctx, p: &Params, seed: u64) -> anyhow::Result<Workload> {
    ctx.step(&format!(
        "seed {seed}: generating {} interfaces x {:?} filters",
        p.interfaces, p.filters_per_interface
    ));
    generate(p, seed).context("workload parameters")
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Where the measurements of one workload land: the x value, the second factor of every
/// series name (empty, or `F=1M` in the dense experiments) and the workload's label for
/// progress and errors.
struct At<'a> {
    x: f64,
    factor: &'a str,
    label: &'a str,
}

impl At<'_> {
    /// The series `name` at this point: `name`, or `name F=1M` with a second factor.
    fn series(&self, name: &str) -> String {
        if self.factor.is_empty() {
            name.to_string()
        } else {
            format!("{name} {}", self.factor)
        }
    }

    /// Records one sample of the series `name` at this point.
    fn record(&self, ctx: &mut Ctx, name: &str, value: f64) {
        ctx.record(&self.series(name), self.x, value);
    }

    /// Checks `other`'s answers against `reference`'s on this point's workload.
    fn check<T: PartialEq + std::fmt::Debug>(
        &self,
        ctx: &Ctx,
        reference: (&str, &[T]),
        other: (&str, &[T]),
    ) -> anyhow::Result<()> {
        ctx.check(
            self.label,
            (&self.series(reference.0), reference.1),
            (&self.series(other.0), other.1),
        )
    }
}

/// The reference answers (SFF on all cores), for every event.
fn reference(sff: &Sff, events: &[Event]) -> Vec<Vec<InterfaceId>> {
    sff.match_parallel(events)
}

/// Events a one-core matcher is timed on at least, at full size (then until its budget).
const MIN_TIMED: usize = 20;

/// Times single-core SFF on a prefix of the workload's batch that fits [`SFF_BUDGET_S`]
/// (at least [`MIN_TIMED`] events, all of them in quick mode), and SFF on all cores on
/// all of it (the batch read in place, as the indexes read it; `truth`, the reference,
/// from heap events); returns the all-core time per event (ms).
fn time_sff(
    ctx: &mut Ctx,
    sff: &Sff,
    w: &Workload,
    truth: &[Vec<InterfaceId>],
    at: &At,
) -> anyhow::Result<f64> {
    let batch = &w.batch;
    let mut scratch = sff.scratch();
    let t0 = Instant::now();
    let names = sff.batch_names(batch);
    let mut got = Vec::new();
    for i in 0..batch.len() {
        got.push(sff.match_in_batch_with(batch, &names, i, &mut scratch));
        if !ctx.quick && got.len() >= MIN_TIMED && t0.elapsed().as_secs_f64() > SFF_BUDGET_S {
            break;
        }
    }
    let ms = ms_since(t0) / got.len().max(1) as f64;
    at.check(ctx, ("sff all cores", &truth[..got.len()]), ("sff", &got))?;
    at.record(ctx, "sff", ms);
    let t0 = Instant::now();
    let par = sff.match_batch_parallel(batch);
    let all = ms_since(t0) / batch.len().max(1) as f64;
    at.record(ctx, "sff all cores", all);
    at.check(ctx, ("sff", truth), ("sff all cores", &par))?;
    Ok(all)
}

/// The series of the fastest CPU matcher on all cores at each point.
pub const BEST_CPU: &str = "best CPU (all cores)";

/// Events the indexes are timed on per point at most (the workload's, repeated): their
/// runs are otherwise too short to time.
const INDEX_STREAM: usize = 65_536;

/// One CPU index built for a workload: its series name, build ms, heap MB, and the
/// index itself (boxed behind its matcher so that indexes of different types are timed
/// by the same code). Its series read the workload's batch ([`Workload::batch`]) in
/// place; the one-core series of an index on heap events ([`BuiltIndex::on_heap_events`])
/// has no all-core series and no deployment of its own.
struct BuiltIndex {
    name: &'static str,
    deploy_ms: f64,
    heap_mb: f64,
    one: OneCore,
    all: Option<AllCores>,
}

/// An index answering events `from .. from + slots.len()` of the stream of the
/// workload's events cycled (stream event `i` is event `i % len`) on the calling thread,
/// with its own scratch, each answer replacing the one in its slot: the slot's previous
/// answer is freed as the new one arrives, and the allocator hands its memory to the
/// next answer at once. Kept instead (a pass's answers all held for its check), every
/// answer took fresh memory, and zeroing the fresh pages was a third of the hybrid's
/// one-core time at 1M filters of the `hem` model with 20 names an event (about 22,000
/// ids an answer), falling unevenly on its two series: the batch read 1.065x the heap
/// events' time, the pages' zeroing 192 against 167 of 564 and 532 samples (2-core
/// machine, one seed).
type OneCore = Box<dyn FnMut(&Workload, usize, &mut [Vec<InterfaceId>])>;
/// An index answering a batch of events on all cores into the answers given
/// ([`Matcher::match_batch_parallel_into`]).
type AllCores = Box<dyn Fn(&EventBatch, &mut Vec<Vec<InterfaceId>>)>;

impl BuiltIndex {
    /// `ix`, built in `deploy_ms`, timed as the series `name` (one core; `"{name} all
    /// cores"` on all cores) from the workload's batch: on one core each turn translates
    /// the batch's names once ([`Matcher::batch_names`], as a call on a batch does) and
    /// reads its events in place; on all cores [`Matcher::match_batch_parallel_into`].
    fn of<I>(name: &'static str, ix: Arc<I>, deploy_ms: f64) -> BuiltIndex
    where
        I: Matcher + Send + Sync + 'static,
        I::Scratch: 'static,
    {
        let scratch = Matcher::scratch(&*ix);
        Self::with_scratch(name, ix, deploy_ms, scratch)
    }

    /// [`BuiltIndex::of`] with the scratch given.
    fn with_scratch<I>(
        name: &'static str,
        ix: Arc<I>,
        deploy_ms: f64,
        mut scratch: I::Scratch,
    ) -> BuiltIndex
    where
        I: Matcher + Send + Sync + 'static,
        I::Scratch: 'static,
    {
        let heap_mb = Matcher::heap_bytes(&*ix) as f64 / 1e6;
        let for_one = ix.clone();
        BuiltIndex {
            name,
            deploy_ms,
            heap_mb,
            one: Box::new(move |w, from, slots| {
                let b = &w.batch;
                let names = for_one.batch_names(b);
                let n = slots.len();
                for (slot, i) in slots.iter_mut().zip(cycled(b.len(), from, n)) {
                    *slot = for_one.match_in_batch_with(b, &names, i, &mut scratch);
                }
            }),
            all: Some(Box::new(move |batch, out| {
                ix.match_batch_parallel_into(batch, out)
            })),
        }
    }

    /// `ix` timed on one core on the workload's heap events ([`Workload::events`]) as the
    /// series `name`, beside its series on the batch, so that a run shows what reading
    /// the batch gains or loses; `scratch` a clone of the batch series' (see
    /// [`build_indexes`]).
    fn on_heap_events<I>(name: &'static str, ix: Arc<I>, mut scratch: I::Scratch) -> BuiltIndex
    where
        I: Matcher + Send + Sync + 'static,
        I::Scratch: 'static,
    {
        BuiltIndex {
            name,
            deploy_ms: 0.0,
            heap_mb: 0.0,
            one: Box::new(move |w, from, slots| {
                let n = slots.len();
                for (slot, i) in slots.iter_mut().zip(cycled(w.events.len(), from, n)) {
                    *slot = ix.match_event_with(&w.events[i], &mut scratch);
                }
            }),
            all: None,
        }
    }
}

/// The indices of stream events `from .. from + n` in a workload of `len` events cycled
/// (none when it has none), counted without a division per event.
fn cycled(len: usize, from: usize, n: usize) -> impl Iterator<Item = usize> {
    let n = if len == 0 { 0 } else { n };
    let mut i = if len == 0 { 0 } else { from % len };
    (0..n).map(move |_| {
        let at = i;
        i += 1;
        if i == len {
            i = 0;
        }
        at
    })
}

/// The series of the hybrid index on one core over the workload's heap events
/// ([`BuiltIndex::on_heap_events`]), beside `hybrid` over the batch.
const HYBRID_HEAP: &str = "hybrid (heap events)";

/// The series of the time to build the batch of the timed stream from heap events
/// ([`EventBatch::from_events`], all cores), per event: the parsing side's share.
const BATCH_BUILD: &str = "batch build (all cores)";

/// Builds the CPU indexes wanted (each timed: its deployment): the content index
/// ([`ContentIndex`], series `index`) and the hybrid index ([`HybridIndex`], series
/// `hybrid`, and [`HYBRID_HEAP`] on one core: the same index on heap events). With
/// both, the hybrid is built over the content index
/// ([`HybridIndex::with_content`]), so that where it chooses the name index it runs the
/// very same filters at the same addresses as the `index` series, and the two series
/// differ by the hybrid's choice, not by where the allocator put two copies of one index
/// (Table 2, where the hybrid runs the name index's own function on every event: two
/// copies read 0.992x to 1.01x of each other from run to run). Its deployment is then
/// the two builds one after the other ([`HybridIndex::build`], used when it is wanted
/// alone, builds them at once on two threads).
fn build_indexes(
    ctx: &mut Ctx,
    engines: &Engines,
    w: &Workload,
    label: &str,
) -> anyhow::Result<Vec<BuiltIndex>> {
    let mut built = Vec::new();
    let mut content = None;
    if engines.index {
        ctx.step(&format!("{label}: index"));
        let t0 = Instant::now();
        let ix = Arc::new(ContentIndex::build(&w.subscriptions)?);
        let ms = ms_since(t0);
        built.push(BuiltIndex::of("index", ix.clone(), ms));
        content = Some((ix, ms));
    }
    if engines.hybrid {
        ctx.step(&format!("{label}: hybrid"));
        let t0 = Instant::now();
        let (ix, ms) = match content {
            Some((content, content_ms)) => {
                let ix = HybridIndex::with_content(content, &w.subscriptions)?;
                (ix, content_ms + ms_since(t0))
            }
            None => (HybridIndex::build(&w.subscriptions)?, ms_since(t0)),
        };
        let ix = Arc::new(ix);
        // The two series' scratches start alike: they draw the same pseudo-random
        // numbers, so they time and explore at the same events of the stream.
        let scratch = Matcher::scratch(&*ix);
        let twin = scratch.clone();
        built.push(BuiltIndex::with_scratch("hybrid", ix.clone(), ms, scratch));
        built.push(BuiltIndex::on_heap_events(HYBRID_HEAP, ix, twin));
    }
    if engines.bits {
        ctx.step(&format!("{label}: bits"));
        let t0 = Instant::now();
        // Only where it indexes every filter (integer bounds); elsewhere no series.
        if let Ok(ix) = BitIndex::build(&w.subscriptions) {
            built.push(BuiltIndex::of("bits", Arc::new(ix), ms_since(t0)));
        }
    }
    Ok(built)
}

/// Most events of one turn of [`time_one_core_by_turns`].
const TURN_EVENTS: usize = 4096;

/// Events of the first turn of [`time_one_core_by_turns`]; a turn doubles the next one's
/// events while it took less than an eighth of [`SFF_BUDGET_S`] (on the dense workloads
/// one event may cost the content index 11 ms: 4096 of them would be 45 s a turn).
const FIRST_TURN_EVENTS: usize = 16;

/// [`time_one_core_by_turns`] also stops once the slowest index has spent this many
/// [`SFF_BUDGET_S`] (the others then have fewer events timed, each of the same events).
const SLOWEST_BUDGETS: f64 = 4.0;

/// Times the built indexes on one core over a stream of the workload's events, after an
/// untimed warm-up of each ([`warm_up`]), by turns: each takes the same events in turn
/// (the order alternating from turn to turn; [`FIRST_TURN_EVENTS`] at first, doubling
/// up to [`TURN_EVENTS`] while turns are short), so that a slow stretch of the machine
/// (another tenant, a frequency change) falls on all of them alike instead of on
/// whichever ran then. Before its turn each index answers an eighth as many other
/// events untimed ([`warm_events`]), so that its turn finds the caches as a stream of
/// its own would: with the order reversed from turn to turn, an index inside the order
/// follows a different one in each turn while those at its ends follow themselves
/// every other turn, and the hybrid's batch series, second of three, found the content
/// index's data in the caches in one turn of two, while its heap events' series, last,
/// always followed the hybrid. Fig. 10 at 10 names, the content index and the hybrid's
/// two series (2-core machine, 3 seeds a run): the batch read 1.015-1.034x the heap
/// events' time (1.032x in the H200 recording of 2026-11-29), 0.979x with the two
/// series swapped, 0.990-1.001x with these runs (at most 8 events of them:
/// 0.997-1.020x); the hybrid's two series alone, 0.976-0.996x. Each answer goes into
/// a slot kept from turn to turn ([`OneCore`]) and is checked after its turn, off the
/// clock. A pass stops at the end of the stream ([`INDEX_STREAM`] events; the
/// workload's in quick mode), or once every index has answered [`MIN_TIMED`] events
/// and spent [`SFF_BUDGET_S`] (or the slowest [`SLOWEST_BUDGETS`] of them). Where a
/// pass over the whole stream is short, the stream is passed again, up to
/// [`super::MAX_PASSES`] times within [`PASSES_BUDGETS`], and each index's time is its
/// least over the passes: a hiccup of a few tens of milliseconds that falls on one
/// index's turn (Table 2, one seed of three: the same name index read 2.13 µs alone and
/// 2.64 µs inside the hybrid, 1.37 and 1.35 µs on another seed) is then not its time. Checks every answer of every pass against
/// `truth`, records each index's `name`, returns each one's ms per event.
fn time_one_core_by_turns(
    ctx: &mut Ctx,
    built: &mut [BuiltIndex],
    w: &Workload,
    truth: &[Vec<InterfaceId>],
    at: &At,
) -> anyhow::Result<Vec<f64>> {
    let (stream_len, min) = if ctx.quick {
        (w.events.len(), w.events.len())
    } else {
        (INDEX_STREAM.max(w.events.len()), MIN_TIMED)
    };
    let n = built.len();
    warm_up(built, w);
    // Per index, the least ms per event over the passes, and the time spent in all.
    let mut best = vec![f64::INFINITY; n];
    let mut total = vec![0.0f64; n];
    let mut passes = 0;
    let mut slots = vec![Vec::new(); n];
    loop {
        let pass = one_pass_by_turns(ctx, built, w, truth, at, (stream_len, min), &mut slots)?;
        passes += 1;
        for i in 0..n {
            best[i] = best[i].min(pass.spent[i] * 1e3 / pass.done.max(1) as f64);
            total[i] += pass.spent[i];
        }
        let slowest = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        let whole = pass.done == stream_len;
        if !another_pass(
            ctx.quick,
            whole,
            passes,
            slowest(&total),
            slowest(&pass.spent),
        ) {
            break;
        }
    }
    for (b, ms) in built.iter().zip(&best) {
        at.record(ctx, b.name, *ms);
    }
    Ok(best)
}

/// Events of [`warm_up`] per index at most.
const WARM_UP_EVENTS: usize = 256;

/// Seconds of [`warm_up`] per index at most (past its first [`FIRST_TURN_EVENTS`]).
const WARM_UP_S: f64 = 0.4;

/// Runs each built index, untimed, on the workload's first events ([`WARM_UP_EVENTS`], or
/// fewer once it has spent [`WARM_UP_S`]), before [`time_one_core_by_turns`] times them.
/// The hybrid index learns which of its indexes to run from its first runs of each, slow
/// ones included (its name index alone may take 20 ms an event at 1M filters of the
/// dense model), and its two series (batch and heap events) share that learning: timed,
/// those first runs fell on whichever series ran first, the batch, which counts where
/// one pass fills the budget and no least over passes drops it (1M filters).
fn warm_up(built: &mut [BuiltIndex], w: &Workload) {
    let len = w.events.len().min(WARM_UP_EVENTS);
    let mut sink = vec![Vec::new(); FIRST_TURN_EVENTS];
    for b in built.iter_mut() {
        let t0 = Instant::now();
        let mut done = 0;
        while done < len && (done < FIRST_TURN_EVENTS || t0.elapsed().as_secs_f64() < WARM_UP_S) {
            let k = FIRST_TURN_EVENTS.min(len - done);
            (b.one)(w, done, &mut sink[..k]);
            done += k;
        }
    }
}

/// Events an index answers untimed just before its timed turn of `len` events in
/// [`one_pass_by_turns`]: an eighth of the turn, at least 1.
fn warm_events(len: usize) -> usize {
    (len / 8).max(1)
}

/// One pass of [`time_one_core_by_turns`]: each index's seconds and the events each
/// answered.
struct Pass {
    spent: Vec<f64>,
    done: usize,
}

/// [`time_one_core_by_turns`] starts another pass only while the slowest index's time in
/// all passes, the next included (as long as its last), stays within this many
/// [`SFF_BUDGET_S`].
const PASSES_BUDGETS: f64 = 2.0;

/// Whether the timings by passes ([`time_one_core_by_turns`], [`time_all_cores`],
/// [`time_gpu_index`]) pass over the stream again ([`super::another_pass`], within
/// [`PASSES_BUDGETS`] times [`SFF_BUDGET_S`]; `spent_s` of the slowest series).
fn another_pass(quick: bool, whole: bool, passes: usize, spent_s: f64, last_s: f64) -> bool {
    super::another_pass(
        quick,
        whole,
        passes,
        (spent_s, last_s),
        PASSES_BUDGETS * SFF_BUDGET_S,
    )
}

/// The stream's events by turns, once (see [`time_one_core_by_turns`]); each turn's
/// answers are checked against `truth` after it, off the clock, in `slots` (per index,
/// kept from pass to pass: [`OneCore`]).
fn one_pass_by_turns(
    ctx: &Ctx,
    built: &mut [BuiltIndex],
    w: &Workload,
    truth: &[Vec<InterfaceId>],
    at: &At,
    (stream_len, min): (usize, usize),
    slots: &mut [Vec<Vec<InterfaceId>>],
) -> anyhow::Result<Pass> {
    let n = built.len();
    let mut spent = vec![0.0f64; n];
    let mut done = 0usize;
    let mut turn = 0usize;
    let mut turn_events = FIRST_TURN_EVENTS;
    let mut sink = vec![Vec::new(); warm_events(TURN_EVENTS)];
    while done < stream_len {
        let len = turn_events.min(stream_len - done);
        let mut longest = 0.0f64;
        for k in 0..n {
            let i = if turn.is_multiple_of(2) { k } else { n - 1 - k };
            let b = &mut built[i];
            // Untimed, on events half the workload away (not the turn's own: an event
            // answered twice in a row finds its data in the caches), so that the turn
            // finds the index's data in the caches as a stream of its own would leave
            // them, whichever index ran before it.
            (b.one)(w, done + w.events.len() / 2, &mut sink[..warm_events(len)]);
            if slots[i].len() < len {
                // Slots new to this turn get an untimed answer first (events half the
                // workload away, as above), so that the timed turn replaces answers, its
                // memory reused as a stream's later windows reuse theirs, instead of
                // touching fresh pages: a turn doubles, so half its slots would be new.
                let had = slots[i].len();
                slots[i].resize_with(len, Vec::new);
                (b.one)(w, done + had + w.events.len() / 2, &mut slots[i][had..len]);
            }
            let t0 = Instant::now();
            (b.one)(w, done, &mut slots[i][..len]);
            let took = t0.elapsed().as_secs_f64();
            spent[i] += took;
            longest = longest.max(took);
        }
        let want: Vec<&Vec<InterfaceId>> =
            cycled(truth.len(), done, len).map(|j| &truth[j]).collect();
        for (b, got) in built.iter().zip(slots.iter()) {
            let got: Vec<&Vec<InterfaceId>> = got[..len].iter().collect();
            at.check(ctx, ("sff", &want), (b.name, &got))?;
        }
        done += len;
        turn += 1;
        if longest < SFF_BUDGET_S / 8.0 {
            turn_events = (turn_events * 2).min(TURN_EVENTS);
        }
        let slowest = spent.iter().copied().fold(0.0, f64::max);
        if done >= min
            && (spent.iter().all(|&s| s > SFF_BUDGET_S) || slowest > SLOWEST_BUDGETS * SFF_BUDGET_S)
        {
            break;
        }
    }
    Ok(Pass { spent, done })
}

/// Times a built index on all cores over a stream of the workload's events (its batch
/// cycled, [`EventBatch::cycled`], made before the clock starts): the stream,
/// or as much of it as the one-core rate `one` (ms per event) says fits [`SFF_BUDGET_S`]
/// on every thread, at least the workload's events (so that every event is checked); in
/// quick mode the workload's events. As [`time_one_core_by_turns`], it passes over the
/// stream again while that is short and keeps the least time per event (so that the
/// two series of an index, and their ratio, are measured alike). Checks every answer of
/// every pass, records `"{name} all cores"`, returns its ms per event.
fn time_all_cores(
    ctx: &mut Ctx,
    b: &BuiltIndex,
    one: f64,
    w: &Workload,
    truth: &[Vec<InterfaceId>],
    at: &At,
) -> anyhow::Result<f64> {
    let stream_len = INDEX_STREAM.max(w.events.len());
    let n = if ctx.quick {
        w.events.len()
    } else {
        let threads = rayon::current_num_threads().max(1) as f64;
        let fits = SFF_BUDGET_S * 1e3 / one.max(1e-9) * threads;
        (fits.min(stream_len as f64) as usize).max(w.events.len())
    };
    let all_cores = b.all.as_ref().context("an index with no all-core series")?;
    let stream = w.batch.cycled(n);
    let want: Vec<Vec<InterfaceId>> = truth.iter().cycle().take(n).cloned().collect();
    let series = format!("{} all cores", b.name);
    // As on one core: passes while short, the least time per event.
    let (mut all, mut total, mut passes) = (f64::INFINITY, 0.0, 0);
    // Kept from pass to pass, as a stream's answers would be: a pass's answers take
    // the memory of the one before (the first pass's take fresh memory).
    let mut got = Vec::new();
    if !ctx.quick {
        // One untimed pass first. Its answers take fresh memory, whose first touch (page
        // faults on every thread at once) a stream pays once, not in every window: where
        // answers run to thousands of ids (the dense model at 1M filters) it made a
        // pass half as slow again, and a pass that fills the budget is the only one.
        all_cores(&stream, &mut got);
    }
    loop {
        let t0 = Instant::now();
        all_cores(&stream, &mut got);
        let took = t0.elapsed().as_secs_f64();
        at.check(ctx, ("sff", &want), (&series, &got))?;
        all = all.min(took * 1e3 / n.max(1) as f64);
        total += took;
        passes += 1;
        if !another_pass(ctx.quick, true, passes, total, took) {
            break;
        }
    }
    at.record(ctx, &series, all);
    Ok(all)
}

/// Times building the batch of a stream of the workload's events from heap events
/// ([`EventBatch::from_events`], all cores), the stream as [`time_all_cores`] takes it at
/// most (the workload's events in quick mode), passing again while short and keeping
/// the least time per event; checks the batch against the workload's, records
/// [`BATCH_BUILD`].
fn time_batch_build(ctx: &mut Ctx, w: &Workload, at: &At) -> anyhow::Result<()> {
    let n = if ctx.quick {
        w.events.len()
    } else {
        INDEX_STREAM.max(w.events.len())
    };
    let events: Vec<Event> = w.events.iter().cycle().take(n).cloned().collect();
    let (mut best, mut total, mut passes) = (f64::INFINITY, 0.0, 0);
    loop {
        let t0 = Instant::now();
        let batch = EventBatch::from_events(&events);
        let took = t0.elapsed().as_secs_f64();
        anyhow::ensure!(
            passes > 0 || batch == w.batch.cycled(n),
            "{}: the batch built from the heap events differs from the workload's",
            at.label
        );
        best = best.min(took * 1e3 / n.max(1) as f64);
        total += took;
        passes += 1;
        if !another_pass(ctx.quick, true, passes, total, took) {
            break;
        }
    }
    at.record(ctx, BATCH_BUILD, best);
    Ok(())
}

/// An index's deployment as [`time_cpus`] returns it: (series, build ms, heap MB).
type Built = (&'static str, f64, f64);

/// Times the CPU matchers wanted at one point: SFF (one core, all cores; on heap events),
/// the content index and the hybrid index (both built, then timed from the workload's
/// batch on one core by turns over the same stream, with the hybrid on heap events
/// beside them, then each on all cores), the batch's build ([`BATCH_BUILD`]), then
/// [`BEST_CPU`], the fastest of the all-core series; returns each index's deployment.
fn time_cpus(
    ctx: &mut Ctx,
    engines: &Engines,
    sff: &Sff,
    w: &Workload,
    truth: &[Vec<InterfaceId>],
    at: &At,
) -> anyhow::Result<Vec<Built>> {
    let mut best = f64::INFINITY;
    if engines.sff {
        best = time_sff(ctx, sff, w, truth, at)?;
    }
    let mut indexes = build_indexes(ctx, engines, w, at.label)?;
    let mut built = Vec::new();
    if !indexes.is_empty() {
        let one = time_one_core_by_turns(ctx, &mut indexes, w, truth, at)?;
        for (b, one) in indexes.iter().zip(one) {
            if b.all.is_some() {
                best = best.min(time_all_cores(ctx, b, one, w, truth, at)?);
                built.push((b.name, b.deploy_ms, b.heap_mb));
            }
        }
        time_batch_build(ctx, w, at)?;
    }
    if best.is_finite() {
        at.record(ctx, BEST_CPU, best);
    }
    Ok(built)
}

/// The per-event budget of the kernels in the dense experiments in quick mode (on the
/// emulator an event of 20k filters takes seconds; the batched kernel checks them all).
const QUICK_BUDGET_S: f64 = 0.5;

/// Most bytes of the batched kernel's events x interfaces flags (one `u32` each) per
/// launch: its events per launch are capped so that the matrix stays within this (it
/// matters with one interface per filter: 268 events per launch at 1M interfaces).
const BATCH_FLAG_BYTES: usize = 1 << 30;

/// `cfg` with its batched kernel's events per launch capped by [`BATCH_FLAG_BYTES`] for
/// the interfaces of `w`.
fn capped(cfg: &Config, w: &Workload) -> Config {
    let interfaces = w
        .subscriptions
        .iter()
        .map(|s| s.interface.0 as usize + 1)
        .max()
        .unwrap_or(1);
    let cap = (BATCH_FLAG_BYTES / (4 * interfaces)).max(1);
    Config {
        batch_events: cfg.batch_events.min(cap),
        ..cfg.clone()
    }
}

/// Times the kernels on each device: per event (the paper's mode) and batched (over a
/// stream of the workload's events), checking every answer.
///
/// `bounded` (the dense experiments, where one event may cost milliseconds): per event, a
/// prefix of the events that fits [`SFF_BUDGET_S`] (at least [`MIN_TIMED`]; in quick mode,
/// on the emulator, [`QUICK_BUDGET_S`] and at least one); batched on the GPU, the stream in rounds of the workload's events (or of one
/// launch's, if more), until the stream or the budget is spent. Otherwise every event
/// per event, and the whole stream in one call.
fn time_kernels(
    ctx: &mut Ctx,
    engines: &Engines,
    devices: &[(&'static str, Device, Config)],
    w: &Workload,
    truth: &[Vec<InterfaceId>],
    at: &At,
    bounded: bool,
) -> anyhow::Result<()> {
    for (name, dev, cfg) in devices {
        if engines.kernels_on(name) {
            let cfg = capped(cfg, w);
            let per_launch = cfg.batch_events;
            let mut ccm = Ccm::new(dev, &w.subscriptions, cfg)?;
            let warm = if ctx.quick { 0 } else { 10 };
            for e in w.events.iter().take(warm) {
                ccm.match_event(e)?;
            }
            let (min, budget) = if ctx.quick {
                (1, QUICK_BUDGET_S)
            } else {
                (MIN_TIMED, SFF_BUDGET_S)
            };
            let t0 = Instant::now();
            let mut got = Vec::with_capacity(w.events.len());
            for e in &w.events {
                got.push(ccm.match_event(e)?);
                if bounded && got.len() >= min && t0.elapsed().as_secs_f64() > budget {
                    break;
                }
            }
            let ms = ms_since(t0) / got.len().max(1) as f64;
            at.check(ctx, ("sff", &truth[..got.len()]), (name, &got))?;
            at.record(ctx, name, ms);
            // The batched kernel on a stream drawn from the workload's batch (repeated to
            // `BATCH_STREAM` on the GPU at full size), built before the timing.
            let stream = if ctx.quick || !dev.is_gpu() {
                w.batch.clone()
            } else {
                w.batch.cycled(BATCH_STREAM.max(w.events.len()))
            };
            ccm.match_range(&w.batch, 0..warm.min(w.events.len()))?;
            let round = if bounded {
                w.events.len().max(per_launch).max(1)
            } else {
                stream.len().max(1)
            };
            let t0 = Instant::now();
            let mut got = Vec::with_capacity(stream.len());
            for start in (0..stream.len()).step_by(round) {
                got.extend(ccm.match_range(&stream, start..(start + round).min(stream.len()))?);
                if t0.elapsed().as_secs_f64() > SFF_BUDGET_S {
                    break;
                }
            }
            let ms = ms_since(t0) / got.len().max(1) as f64;
            let series = format!("{name} batched");
            let want: Vec<Vec<InterfaceId>> =
                truth.iter().cycle().take(got.len()).cloned().collect();
            at.check(ctx, ("sff", &want), (&series, &got))?;
            at.record(ctx, &series, ms);
        }
        if engines.index_on(name) {
            time_gpu_index(ctx, name, dev, w, truth, at, bounded)?;
        }
    }
    Ok(())
}

/// Times the pruning index (`{name} index`) on a stream drawn from the workload's batch
/// ([`Workload::batch`], the events the CPU engines are timed on) as the batched kernel
/// is timed (the workload's events repeated to [`BATCH_STREAM`] on the GPU at full
/// size; whole stream in one call, or rounds of the workload's events within the budget
/// when `bounded`), checking every answer; while a pass over the stream is short,
/// passes again and keeps the least time per event, as the CPU indexes are timed
/// ([`time_one_core_by_turns`]).
fn time_gpu_index(
    ctx: &mut Ctx,
    name: &str,
    dev: &Device,
    w: &Workload,
    truth: &[Vec<InterfaceId>],
    at: &At,
    bounded: bool,
) -> anyhow::Result<()> {
    let mut index = GpuIndex::new(dev, &w.subscriptions, IndexConfig::for_device(dev))?;
    // On the GPU, a stream of at least four full launches (the workload's events
    // repeated), so that the time is the pipeline's steady state, not its start. The
    // stream is one batch, with the workload's dictionaries; it is built before the
    // timing, as the workload's batch is.
    let events = if ctx.quick || !dev.is_gpu() {
        w.events.len()
    } else {
        BATCH_STREAM
            .max(w.events.len())
            .max(4 * index.launch_events())
    };
    let stream = w.batch.cycled(events);
    let len = stream.len();
    // Rounds of at least four launches, so that staging overlaps the device's work.
    let round = if bounded {
        w.events.len().max(4 * index.launch_events())
    } else {
        len
    }
    .clamp(1, len.max(1));
    // Each round is matched into the same answers (as a stream would be: their
    // page-locked areas are reused) and its answers kept for the check outside the
    // timed calls. Warmed with a round, so that the timed stream runs in the steady
    // state of a stream: staging areas and answer areas at their size (page-locked
    // memory is slow to allocate), as the CPU indexes' caches are warm from their
    // one-core pass.
    let mut answers = ccm::Answers::default();
    let warm = if ctx.quick { 0 } else { round };
    index.match_range_into(&stream, 0..warm.min(len), &mut answers)?;
    index.take_timing();
    let series = format!("{name} index");
    // As the CPU indexes are timed: passes over the stream while a pass is short (and
    // was not cut by the budget), the least time per event; every answer checked.
    let (mut ms, mut all_passes, mut passes, mut total, mut n) = (f64::INFINITY, 0.0, 0, 0, 0);
    loop {
        let mut got: Vec<Vec<InterfaceId>> = Vec::with_capacity(len);
        let mut spent = std::time::Duration::ZERO;
        // Each pass as a new batch's: its dictionaries translated once (the warm round
        // or the last pass left them on the device), as the CPU indexes' pass reads them.
        index.forget_dictionaries();
        for start in (0..len).step_by(round) {
            let t0 = Instant::now();
            index.match_range_into(&stream, start..(start + round).min(len), &mut answers)?;
            spent += t0.elapsed();
            total += answers.total();
            got.extend(answers.iter().map(|a| a.to_vec()));
            if spent.as_secs_f64() > SFF_BUDGET_S {
                break;
            }
        }
        let want: Vec<Vec<InterfaceId>> = truth.iter().cycle().take(got.len()).cloned().collect();
        at.check(ctx, ("sff", &want), (&series, &got))?;
        let pass = spent.as_secs_f64();
        ms = ms.min(pass * 1e3 / got.len().max(1) as f64);
        n += got.len();
        all_passes += pass;
        passes += 1;
        if !another_pass(ctx.quick, got.len() == len, passes, all_passes, pass) {
            break;
        }
    }
    // The time split, for tuning (GPU_MATCH_INDEX_SPLIT=1): one line per workload.
    let split = index.take_timing();
    if std::env::var_os("GPU_MATCH_INDEX_SPLIT").is_some() {
        let ns = |d: std::time::Duration| d.as_secs_f64() * 1e9 / split.events.max(1) as f64;
        eprintln!(
            "index split {}: dictionaries {:.2} stage {:.2} copy in {:.2} kernels {:.2} answers {:.2} ns/event (host clock); device kernels {:.2} \
                (encoding {:.2}, walk {:.2}, dense {:.2}, lists {:.2}) ns/event (device clock); staging not hidden {:.2} ns/event \
                ({} events, {} launches, {} with staging grown, {} on the value cells alone, {} of them in name order, {:.1} answers/event)",
            at.label,
            ns(split.dictionaries),
            ns(split.stage),
            ns(split.copy_in),
            ns(split.kernels),
            ns(split.answers),
            ns(split.device),
            ns(split.device_encode),
            ns(split.device_walk),
            ns(split.device_dense),
            ns(split.device_lists),
            ns(split.waited),
            split.events,
            split.launches,
            split.staging_grown,
            split.cells_launches,
            split.sorted_launches,
            total as f64 / n.max(1) as f64,
        );
    }
    at.record(ctx, &series, ms);
    Ok(())
}

/// Builds SFF for the reference answers of `w`, then times and checks every wanted CPU
/// matcher and kernel engine on `w` at `at`; returns each index's deployment.
fn measure(
    ctx: &mut Ctx,
    engines: &Engines,
    devices: &[(&'static str, Device, Config)],
    w: &Workload,
    at: &At,
    bounded: bool,
) -> anyhow::Result<Vec<Built>> {
    ctx.step(&format!("{}: SFF", at.label));
    let sff = Sff::build(&w.subscriptions)?;
    let truth = reference(&sff, &w.events);
    let built = time_cpus(ctx, engines, &sff, w, &truth, at)?;
    drop(sff);
    ctx.step(&format!("{}: kernels", at.label));
    time_kernels(ctx, engines, devices, w, &truth, at, bounded)?;
    Ok(built)
}

/// One point of a sweep: generate, deploy, time and check every engine.
fn point(ctx: &mut Ctx, p: &Params, x: f64) -> anyhow::Result<()> {
    let engines = Engines::of(ctx);
    let devices = engines.devices()?;
    for seed in ctx.seeds.clone() {
        let w = workload(ctx, p, seed)?;
        let label = format!("x = {x}, seed {seed}");
        let at = At {
            x,
            factor: "",
            label: &label,
        };
        measure(ctx, &engines, &devices, &w, &at, false)?;
    }
    Ok(())
}

/// Progress steps per workload: generating, SFF, the two indexes, the kernels.
const STEPS_PER_WORKLOAD: usize = 5;

fn sweep(
    ctx: &mut Ctx,
    xs: &[usize],
    make: impl Fn(usize, Params) -> Params,
) -> anyhow::Result<()> {
    ctx.set_steps((xs.len() * ctx.seeds.len() * STEPS_PER_WORKLOAD) as u64);
    for &x in xs {
        let p = make(x, base(ctx.quick));
        point(ctx, &p, x as f64)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// The experiments.

fn table2(ctx: &mut Ctx) -> anyhow::Result<()> {
    let engines = Engines::of(ctx);
    let devices = engines.devices()?;
    ctx.set_steps((ctx.seeds.len() * 2 * STEPS_PER_WORKLOAD) as u64);
    for (row, dist) in [(1.0, NameDist::Uniform), (4.0, NameDist::Zipf(1.0))] {
        let p = Params {
            name_dist: dist,
            ..base(ctx.quick)
        };
        for seed in ctx.seeds.clone() {
            let w = workload(ctx, &p, seed)?;
            let label = format!("table 2 row {row}, seed {seed}");
            let at = At {
                x: row,
                factor: "",
                label: &label,
            };
            ctx.step(&format!("{label}: SFF"));
            let t0 = Instant::now();
            let sff = Sff::build(&w.subscriptions)?;
            let sff_deploy = ms_since(t0);
            let truth = reference(&sff, &w.events);
            let built = time_cpus(ctx, &engines, &sff, &w, &truth, &at)?;
            if engines.sff && row == 1.0 {
                ctx.record("sff", 2.0, sff_deploy);
                ctx.record("sff", 3.0, sff.heap_bytes() as f64 / 1e6);
            }
            if row == 1.0 {
                for (series, deploy, mb) in built {
                    ctx.record(series, 2.0, deploy);
                    ctx.record(series, 3.0, mb);
                }
            }
            drop(sff);
            ctx.step(&format!("{label}: kernels"));
            for (name, dev, cfg) in &devices {
                if row == 1.0 && engines.index_on(name) {
                    let t0 = Instant::now();
                    let index = GpuIndex::new(dev, &w.subscriptions, IndexConfig::for_device(dev))?;
                    dev.synchronize()?;
                    let series = format!("{name} index");
                    ctx.record(&series, 2.0, ms_since(t0));
                    ctx.record(&series, 3.0, index.device_bytes() as f64 / 1e6);
                }
                if !engines.kernels_on(name) {
                    continue;
                }
                if row == 1.0 {
                    let t0 = Instant::now();
                    let ccm = Ccm::new(dev, &w.subscriptions, cfg.clone())?;
                    dev.synchronize()?;
                    ctx.record(name, 2.0, ms_since(t0));
                    ctx.record(name, 3.0, ccm.device_bytes() as f64 / 1e6);
                    drop(ccm);
                    let batched = Config {
                        batch_tables: true,
                        ..cfg.clone()
                    };
                    let ccm = Ccm::new(dev, &w.subscriptions, batched)?;
                    ctx.record(
                        &format!("{name} batched"),
                        3.0,
                        ccm.device_bytes() as f64 / 1e6,
                    );
                }
                // Grouping (§4.2, Table 2's discussion of the Zipf case), and (beyond the
                // paper) `Input` passed in the launch parameters, then also the output
                // written into mapped host memory (the low-latency path).
                let variants = [
                    (
                        "grouped",
                        Config {
                            grouping: true,
                            ..cfg.clone()
                        },
                    ),
                    (
                        "inline",
                        Config {
                            inline_events: true,
                            ..cfg.clone()
                        },
                    ),
                    (
                        "latency",
                        Config {
                            inline_events: true,
                            mapped_output: true,
                            ..cfg.clone()
                        },
                    ),
                    // Beyond the paper: the persistent kernel fed through a ring in
                    // mapped host memory, one event at a time.
                    (
                        "persistent",
                        Config {
                            persistent: true,
                            ..cfg.clone()
                        },
                    ),
                ];
                for (variant, vcfg) in variants {
                    let mut ccm = Ccm::new(dev, &w.subscriptions, vcfg)?;
                    let warm = if ctx.quick { 0 } else { 10 };
                    for e in w.events.iter().take(warm) {
                        ccm.match_event(e)?;
                    }
                    let t0 = Instant::now();
                    let got = w
                        .events
                        .iter()
                        .map(|e| ccm.match_event(e))
                        .collect::<Result<Vec<_>, _>>()?;
                    let ms = ms_since(t0) / w.events.len().max(1) as f64;
                    let series = format!("{name} {variant}");
                    ctx.check(&label, ("sff", &truth), (&series, &got))?;
                    ctx.record(&series, row, ms);
                }
            }
            time_kernels(ctx, &engines, &devices, &w, &truth, &at, false)?;
        }
    }
    Ok(())
}

fn fig5(ctx: &mut Ctx) -> anyhow::Result<()> {
    let engines = Engines::of(ctx);
    let devices = engines.kernel_devices()?;
    ctx.set_steps((ctx.seeds.len() * 2) as u64);
    let p = base(ctx.quick);
    for seed in ctx.seeds.clone() {
        let w = workload(ctx, &p, seed)?;
        let sff = Sff::build(&w.subscriptions)?;
        let truth = reference(&sff, &w.events);
        drop(sff);
        ctx.step(&format!("seed {seed}: kernels"));
        for (name, dev, cfg) in &devices {
            for (x, reset, inline_events, mapped_output) in [
                (1.0, Reset::Memset, false, false),
                (2.0, Reset::InKernel, false, false),
                (3.0, Reset::InKernel, true, false),
                (4.0, Reset::InKernel, true, true),
            ] {
                let mut ccm = Ccm::new(
                    dev,
                    &w.subscriptions,
                    Config {
                        reset,
                        inline_events,
                        mapped_output,
                        ..cfg.clone()
                    },
                )?;
                let warm = if ctx.quick { 0 } else { 10 };
                for e in w.events.iter().take(warm) {
                    ccm.match_event(e)?;
                }
                let (mut cin, mut k, mut cout) = (0.0, 0.0, 0.0);
                let mut got = Vec::new();
                for e in &w.events {
                    let (m, t) = ccm.match_event_timed(e)?;
                    cin += t.copy_in_ms;
                    k += t.kernel_ms;
                    cout += t.copy_out_ms;
                    got.push(m);
                }
                ctx.check(
                    &format!("fig 5 x = {x}, seed {seed}"),
                    ("sff", &truth),
                    (name, &got),
                )?;
                let n = w.events.len().max(1) as f64;
                ctx.record(&format!("{name} copy in"), x, cin / n);
                ctx.record(&format!("{name} kernel"), x, k / n);
                ctx.record(&format!("{name} copy out"), x, cout / n);
                ctx.record(&format!("{name} total"), x, (cin + k + cout) / n);
            }
        }
    }
    Ok(())
}

/// Events of the latency experiments: 100k at full size (fewer on the emulator).
fn latency_events(quick: bool) -> usize {
    if quick {
        40
    } else {
        100_000
    }
}

/// The `q`-th percentile (nearest rank) of ascending `sorted`.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Records p50, p99 and p99.9 of `lat` (µs) as series `series` at x = the percentile.
fn record_percentiles(ctx: &mut Ctx, series: &str, lat: &mut [f64]) {
    lat.sort_by(f64::total_cmp);
    for q in [50.0, 99.0, 99.9] {
        ctx.record(series, q, percentile(lat, q));
    }
}

/// Per-event end-to-end latency (µs) of 100k events, one at a time, for the paper's
/// pipeline, the one-launch mapped path and the persistent kernel; every answer checked
/// against SFF.
fn latency(ctx: &mut Ctx) -> anyhow::Result<()> {
    let engines = Engines::of(ctx);
    let devices = engines.kernel_devices()?;
    ctx.set_steps((ctx.seeds.len() * 2) as u64);
    let p = Params {
        events: latency_events(ctx.quick),
        ..base(ctx.quick)
    };
    for seed in ctx.seeds.clone() {
        let w = workload(ctx, &p, seed)?;
        let label = format!("latency, seed {seed}");
        let sff = Sff::build(&w.subscriptions)?;
        let truth = reference(&sff, &w.events);
        drop(sff);
        ctx.step(&format!("{label}: kernels"));
        for (name, dev, cfg) in &devices {
            let paths = [
                ("", cfg.clone()),
                (
                    " latency",
                    Config {
                        inline_events: true,
                        mapped_output: true,
                        ..cfg.clone()
                    },
                ),
                (
                    " persistent",
                    Config {
                        persistent: true,
                        ..cfg.clone()
                    },
                ),
            ];
            for (suffix, pcfg) in paths {
                let series = format!("{name}{suffix}");
                let persistent = pcfg.persistent;
                let mut ccm = Ccm::new(dev, &w.subscriptions, pcfg)?;
                let warm = if ctx.quick { 0 } else { 100 };
                for e in w.events.iter().take(warm) {
                    ccm.match_event(e)?;
                }
                let mut lat = Vec::with_capacity(w.events.len());
                let got = if persistent {
                    ccm.match_pipelined(&w.events, 1, Some(&mut lat))?
                } else {
                    let mut got = Vec::with_capacity(w.events.len());
                    for e in &w.events {
                        let t0 = Instant::now();
                        got.push(ccm.match_event(e)?);
                        lat.push(t0.elapsed().as_secs_f64() * 1e6);
                    }
                    got
                };
                ctx.check(&label, ("sff", &truth), (&series, &got))?;
                record_percentiles(ctx, &series, &mut lat);
            }
        }
    }
    Ok(())
}

/// The persistent kernel with 1 to 32 events in flight: events/s and p99 end-to-end
/// latency (µs) over 100k events; every answer checked against SFF.
fn inflight(ctx: &mut Ctx) -> anyhow::Result<()> {
    let engines = Engines::of(ctx);
    let devices = engines.kernel_devices()?;
    ctx.set_steps((ctx.seeds.len() * 2) as u64);
    let p = Params {
        events: latency_events(ctx.quick),
        ..base(ctx.quick)
    };
    for seed in ctx.seeds.clone() {
        let w = workload(ctx, &p, seed)?;
        let label = format!("in flight, seed {seed}");
        let sff = Sff::build(&w.subscriptions)?;
        let truth = reference(&sff, &w.events);
        drop(sff);
        ctx.step(&format!("{label}: kernels"));
        for (name, dev, cfg) in &devices {
            let mut ccm = Ccm::new(
                dev,
                &w.subscriptions,
                Config {
                    persistent: true,
                    persistent_slots: 32,
                    ..cfg.clone()
                },
            )?;
            let warm = if ctx.quick { 0 } else { 100 };
            ccm.match_pipelined(&w.events[..warm.min(w.events.len())], 32, None)?;
            for depth in [1usize, 2, 4, 8, 16, 32] {
                let mut lat = Vec::with_capacity(w.events.len());
                let t0 = Instant::now();
                let got = ccm.match_pipelined(&w.events, depth, Some(&mut lat))?;
                let secs = t0.elapsed().as_secs_f64();
                let series = format!("{name} persistent");
                ctx.check(
                    &format!("{label}, {depth} in flight"),
                    ("sff", &truth),
                    (&series, &got),
                )?;
                lat.sort_by(f64::total_cmp);
                let x = depth as f64;
                ctx.record(
                    &format!("{series} events/s"),
                    x,
                    w.events.len() as f64 / secs.max(1e-9),
                );
                ctx.record(&format!("{series} p99 us"), x, percentile(&lat, 99.0));
            }
        }
    }
    Ok(())
}

fn fig6(ctx: &mut Ctx) -> anyhow::Result<()> {
    let xs: &[usize] = if ctx.quick {
        &[2, 5, 9]
    } else {
        &[2, 3, 4, 5, 7, 9]
    };
    sweep(ctx, xs, |x, p| Params {
        attrs_per_event: around(x),
        ..p
    })
}

fn fig7(ctx: &mut Ctx) -> anyhow::Result<()> {
    let xs: &[usize] = if ctx.quick {
        &[1, 4, 9]
    } else {
        &[1, 2, 3, 5, 7, 9]
    };
    sweep(ctx, xs, |x, p| Params {
        constraints_per_filter: around(x),
        ..p
    })
}

fn fig8(ctx: &mut Ctx) -> anyhow::Result<()> {
    let quick = ctx.quick;
    let xs: &[usize] = if quick {
        &[1_000, 25_000, 50_000]
    } else {
        &[250, 1_000, 2_500, 10_000, 25_000, 100_000, 250_000]
    };
    sweep(ctx, xs, move |x, p| Params {
        filters_per_interface: filters(x, quick),
        ..p
    })
}

fn fig9(ctx: &mut Ctx) -> anyhow::Result<()> {
    let xs: &[usize] = if ctx.quick {
        &[10, 30]
    } else {
        &[10, 25, 50, 100]
    };
    sweep(ctx, xs, |x, p| Params { interfaces: x, ..p })
}

fn fig10(ctx: &mut Ctx) -> anyhow::Result<()> {
    let xs: &[usize] = if ctx.quick {
        &[10, 100, 1000]
    } else {
        &[10, 30, 100, 300, 1000]
    };
    sweep(ctx, xs, |x, p| Params { names: x, ..p })
}

fn fig11(ctx: &mut Ctx) -> anyhow::Result<()> {
    let xs: &[usize] = if ctx.quick {
        &[0, 50, 100]
    } else {
        &[0, 25, 50, 75, 100]
    };
    sweep(ctx, xs, |x, p| Params {
        numeric_share: x as f64 / 100.0,
        ..p
    })
}

/// Filters (the second factor) and events of the dense experiments: 100k and 1M filters,
/// 1000 events; in quick mode 2k and 20k filters, 8 events.
fn dense_sizes(quick: bool) -> (&'static [usize], usize) {
    if quick {
        (&[2_000, 20_000], 8)
    } else {
        (&[100_000, 1_000_000], 1000)
    }
}

/// The second factor of the dense experiments' series: `F=100k` for 100,000 filters.
fn filters_factor(filters: usize) -> String {
    format!("F={}", crate::plot::fmt_num(filters as f64))
}

/// The x values of the dense experiments, names carried per event: 4 (3 to 5), 10, 20.
const DENSE_XS: [usize; 3] = [4, 10, 20];

/// Names per event, min-max, at `x`: 3-5 at x = 4, else exactly `x`.
fn dense_names(x: usize) -> (usize, usize) {
    if x == 4 {
        (3, 5)
    } else {
        (x, x)
    }
}

/// `default`, or (at full scale) the counts listed in the environment variable `var`
/// (comma-separated, e.g. `GPU_MATCH_DENSE_SIZES=1000000` and `GPU_MATCH_DENSE_XS=4` to
/// measure one point of the dense experiments on a short GPU session).
fn listed(var: &str, quick: bool, default: &[usize]) -> anyhow::Result<Vec<usize>> {
    let Some(v) = std::env::var_os(var).filter(|_| !quick) else {
        return Ok(default.to_vec());
    };
    let v = v.to_string_lossy();
    v.split(',')
        .map(|n| {
            n.trim()
                .parse::<usize>()
                .with_context(|| format!("{var}: `{n}` is not a count"))
        })
        .collect()
}

/// The dense model (REIN / HEM, [`DenseParams`]) at each x and filter count, filters to
/// interfaces as `interfaces` says; series carry the filter count as `F=100k`.
fn dense_sweep(ctx: &mut Ctx, interfaces: Option<usize>) -> anyhow::Result<()> {
    let engines = Engines::of(ctx);
    let devices = engines.devices()?;
    let (filters, events) = dense_sizes(ctx.quick);
    let filters = listed("GPU_MATCH_DENSE_SIZES", ctx.quick, filters)?;
    let xs = listed("GPU_MATCH_DENSE_XS", ctx.quick, &DENSE_XS)?;
    ctx.set_steps((filters.len() * xs.len() * ctx.seeds.len() * STEPS_PER_WORKLOAD) as u64);
    for &f in &filters {
        let factor = filters_factor(f);
        for &x in &xs {
            let p = DenseParams {
                events,
                filters: f,
                interfaces,
                names_per_event: dense_names(x),
                ..DenseParams::default()
            };
            for seed in ctx.seeds.clone() {
                ctx.step(&format!(
                    "seed {seed}: generating {f} dense filters, {x} names per event"
                ));
                let w = generate_dense(&p, seed).context("dense workload parameters")?;
                let label = format!("dense {factor}, x = {x}, seed {seed}");
                let at = At {
                    x: x as f64,
                    factor: &factor,
                    label: &label,
                };
                measure(ctx, &engines, &devices, &w, &at, true)?;
            }
        }
    }
    Ok(())
}

fn dense(ctx: &mut Ctx) -> anyhow::Result<()> {
    dense_sweep(ctx, None)
}

fn dense10(ctx: &mut Ctx) -> anyhow::Result<()> {
    dense_sweep(ctx, Some(10))
}

/// Interfaces of the [`fixedcost`] experiment (one filter each).
const FIXEDCOST_XS: [usize; 3] = [10_000, 100_000, 1_000_000];

/// What an event costs when it carries no name any filter uses: Table 1's filters, one
/// per interface (the answers are per subscription, as in the REIN/HEM model), and the
/// model's events with every name replaced by one outside the filters' names, so every
/// answer is empty and whatever time an engine takes is its fixed cost per event (an
/// engine that scans every interface per event pays it here in full).
fn fixedcost(ctx: &mut Ctx) -> anyhow::Result<()> {
    let engines = Engines::of(ctx);
    let devices = engines.devices()?;
    let xs: Vec<usize> = if ctx.quick {
        vec![100, 1_000]
    } else {
        FIXEDCOST_XS.to_vec()
    };
    ctx.set_steps((xs.len() * ctx.seeds.len() * STEPS_PER_WORKLOAD) as u64);
    for &x in &xs {
        let p = Params {
            interfaces: x,
            filters_per_interface: (1, 1),
            ..base(ctx.quick)
        };
        for seed in ctx.seeds.clone() {
            let mut w = workload(ctx, &p, seed)?;
            w.events = w
                .events
                .iter()
                .map(|e| {
                    let attrs = e
                        .attributes()
                        .iter()
                        .enumerate()
                        .map(|(i, a)| Attribute {
                            name: format!("unused name {i}"),
                            value: a.value.clone(),
                        })
                        .collect();
                    Event::new(attrs)
                })
                .collect::<Result<_, _>>()
                .context("renamed events")?;
            // The batch holds the same events (the engines that take it match these).
            w.batch = EventBatch::from_events(&w.events);
            let label = format!("fixedcost x = {x}, seed {seed}");
            let at = At {
                x: x as f64,
                factor: "",
                label: &label,
            };
            measure(ctx, &engines, &devices, &w, &at, true)?;
        }
    }
    Ok(())
}

/// The scaling experiment's workloads: (second factor, workload) for Table 2's default
/// scenario and the dense model at 20 names per event and 1M filters, each at 1x and
/// 4x its filters. Quick (the emulator, several devices at once): 10 interfaces of 18 to
/// 22 filters and 500 dense filters, 8 events.
fn scaling_workloads(quick: bool, seed: u64) -> anyhow::Result<Vec<(String, Workload)>> {
    let mut v = Vec::new();
    let t2 = if quick {
        Params {
            events: 8,
            filters_per_interface: (18, 22),
            ..Params::default()
        }
    } else {
        Params::default()
    };
    for times in [1, 4] {
        let (lo, hi) = t2.filters_per_interface;
        let p = Params {
            filters_per_interface: (lo * times, hi * times),
            ..t2.clone()
        };
        let f = p.interfaces * (lo + hi) / 2 * times;
        let w = generate(&p, seed).context("workload parameters")?;
        v.push((format!("model=table2 {}", filters_factor(f)), w));
    }
    let (filters, events) = if quick { (500, 8) } else { (1_000_000, 1000) };
    for f in [filters, 4 * filters] {
        let p = DenseParams {
            events,
            filters: f,
            names_per_event: dense_names(20),
            ..DenseParams::default()
        };
        let w = generate_dense(&p, seed).context("dense workload parameters")?;
        v.push((format!("model=dense {}", filters_factor(f)), w));
    }
    Ok(v)
}

/// The events of a timed stream: the workload's batch, repeated to [`BATCH_STREAM`] at
/// full size.
fn scaling_stream(quick: bool, w: &Workload) -> EventBatch {
    w.batch
        .cycled(if quick { w.events.len() } else { BATCH_STREAM })
}

/// Answers expected over the first `n` events of a stream of `truth`'s events repeated.
fn stream_total(truth: &[Vec<InterfaceId>], n: usize) -> usize {
    truth.iter().cycle().take(n).map(Vec::len).sum()
}

fn scaling(ctx: &mut Ctx) -> anyhow::Result<()> {
    use super::scaling::{rate, Scale};
    let Some(scale) = Scale::of(ctx) else {
        return Ok(());
    };
    // Per seed: four workloads, each once on one device, then table2's three cuts and the
    // dense model's two on every device count.
    ctx.set_steps((ctx.seeds.len() * (4 + 2 * (3 + 2) * scale.counts.len())) as u64);
    for seed in ctx.seeds.clone() {
        ctx.step(&format!("seed {seed}: generating the workloads"));
        for (factor, w) in scaling_workloads(ctx.quick, seed)? {
            let label = format!("scaling {factor}, seed {seed}");
            let stream = scaling_stream(ctx.quick, &w);
            // `rate` times rounds of a slice: the stream's event positions, whose rounds
            // are the ranges of the batch matched.
            let at: Vec<usize> = (0..stream.len()).collect();
            let range = |part: &[usize]| part.first().map_or(0..0, |&s| s..s + part.len());
            // The one-GPU index: the reference answers and the throughput to match.
            ctx.step(&format!("{label}: one-device index"));
            let one = scale.open(1, ccm::PTX)?;
            let dev = one.get(0).context("a device")?;
            let cfg = IndexConfig::for_device(dev);
            let mut ix = GpuIndex::new(dev, &w.subscriptions, cfg)?;
            let truth = ix.match_batch(&w.batch)?.to_vecs();
            let round = w.events.len().max(4 * ix.launch_events());
            let mut answers = ccm::Answers::default();
            let (r, n, total) = rate(ctx.quick, &at, round, |part| {
                let t0 = Instant::now();
                ix.match_range_into(&stream, range(part), &mut answers)?;
                Ok((t0.elapsed(), answers.total()))
            })?;
            anyhow::ensure!(
                total == stream_total(&truth, n),
                "{label}: the one-device index answered {total} interfaces over the stream, {} expected",
                stream_total(&truth, n)
            );
            ctx.record(&format!("{} index {factor} events/s", scale.prefix), 1.0, r);
            drop(answers);
            drop(ix);
            drop(one);
            // Table 2's interfaces hold 25k filters each: cutting by filter is measured
            // too; the dense model's hold one, where the two cuts are the same. Cutting
            // the events instead (the index on every device) on both.
            let partitions: &[(&str, Partition)] = if factor.starts_with("model=table2") {
                &[
                    ("multi", Partition::Interfaces),
                    ("multi by-filter", Partition::Filters),
                    ("multi by-event", Partition::Events),
                ]
            } else {
                &[
                    ("multi", Partition::Interfaces),
                    ("multi by-event", Partition::Events),
                ]
            };
            for &(engine, partition) in partitions {
                let mut on_one = 0.0;
                for &k in &scale.counts {
                    ctx.step(&format!("{label}: {engine} on {k} devices"));
                    let devs = scale.open(k, ccm::PTX)?;
                    let mut mx =
                        MultiIndex::with_partition(&devs, &w.subscriptions, cfg, partition)?;
                    let series = format!("{} {engine} {factor} ({k} devices)", scale.prefix);
                    // Cut by events, a round is shared out: each device gets four launches.
                    let per_round = match partition {
                        Partition::Events => k,
                        _ => 1,
                    };
                    let round = w.events.len().max(4 * mx.launch_events() * per_round);
                    let mut answers = MultiAnswers::default();
                    let (r, n, total) = rate(ctx.quick, &at, round, |part| {
                        let t0 = Instant::now();
                        mx.match_range_into(&stream, range(part), &mut answers)?;
                        Ok((t0.elapsed(), answers.total()))
                    })?;
                    // Quick: the stream is the workload's events, one round, whose
                    // answers are these; else the workload's events once more.
                    if !ctx.quick {
                        mx.match_batch_into(&w.batch, &mut answers)?;
                    }
                    let got = answers.to_vecs();
                    ctx.check(&label, ("one-device index", &truth), (&series, &got))?;
                    anyhow::ensure!(
                        total == stream_total(&truth, n),
                        "{series} answered {total} interfaces over the stream, {} expected",
                        stream_total(&truth, n)
                    );
                    if k == 1 {
                        on_one = r;
                    }
                    scale.record(ctx, engine, &factor, "events/s", k, r, on_one);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a GPU, `scaling` runs the partitioned index on 1, 2 and 4 emulated
    /// devices at quick sizes, every answer checked against the one-device index, and
    /// records no speedup (emulator times mean nothing).
    #[test]
    fn scaling_runs_on_emulated_devices_and_checks_every_answer() {
        // 4 workloads x 3 device counts by interface and by event, and table2's two
        // by filter.
        super::super::scaling::testing::check_emulated_run(
            experiments(),
            2 * 4 * 3 + 2 * 3,
            &[
                "emu multi model=dense F=2k events/s",
                "emu multi by-filter model=table2 F=800 events/s",
                "emu multi by-event model=table2 F=800 events/s",
            ],
            "emu index model=table2 F=200 events/s",
        );
    }

    #[test]
    fn table2_and_the_sweeps_record_the_indexes_and_the_best_cpu_series_in_quick_mode() {
        for exp in experiments()
            .into_iter()
            .filter(|e| matches!(e.id, "table2" | "fig6" | "dense" | "dense10"))
        {
            let names = ["sff", "index", "hybrid"].map(String::from).to_vec();
            let mut ctx = Ctx::new(
                true,
                vec![1],
                Some(names),
                None,
                std::sync::Arc::new(indicatif::ProgressBar::hidden()),
            );
            (exp.run)(&mut ctx).unwrap_or_else(|e| panic!("{}: {e:#}", exp.id));
            let factors: Vec<String> = if exp.id.starts_with("dense") {
                dense_sizes(true)
                    .0
                    .iter()
                    .map(|&f| filters_factor(f))
                    .collect()
            } else {
                vec![String::new()]
            };
            let engines = ["sff all cores", "index", "index all cores", "hybrid"];
            let more = ["hybrid all cores", HYBRID_HEAP, BATCH_BUILD, BEST_CPU];
            for factor in &factors {
                for engine in engines.iter().chain(&more) {
                    let series = At {
                        x: 0.0,
                        factor,
                        label: "",
                    }
                    .series(engine);
                    assert!(
                        ctx.samples.iter().any(|s| s.series == series),
                        "{}: {series} recorded",
                        exp.id
                    );
                }
            }
            if exp.id == "table2" {
                for (engine, row) in [("index", 2.0), ("hybrid", 2.0), ("hybrid", 3.0)] {
                    assert!(
                        ctx.samples.iter().any(|s| s.series == engine && s.x == row),
                        "table2: {engine} row {row}"
                    );
                }
            }
        }
    }

    /// `--engines emu-index` runs the pruning index on the emulator alone: Table 2 records
    /// its time (rows 1 and 4), build and size (rows 2 and 3), checked against SFF, and
    /// none of the paper's kernels.
    #[test]
    fn the_pruning_index_runs_alone_on_the_emulator_and_fills_table_2() {
        let exp = experiments()
            .into_iter()
            .find(|e| e.id == "table2")
            .expect("table2");
        let mut ctx = Ctx::new(
            true,
            vec![1],
            Some(vec!["emu-index".to_string()]),
            None,
            std::sync::Arc::new(indicatif::ProgressBar::hidden()),
        );
        (exp.run)(&mut ctx).unwrap_or_else(|e| panic!("table2: {e:#}"));
        for row in [1.0, 2.0, 3.0, 4.0] {
            assert!(
                ctx.samples
                    .iter()
                    .any(|s| s.series == "emu index" && s.x == row),
                "emu index row {row}"
            );
        }
        assert!(
            ctx.samples.iter().all(|s| s.series == "emu index"),
            "only the index ran: {:?}",
            ctx.samples.iter().map(|s| &s.series).collect::<Vec<_>>()
        );
    }

    /// The targets read the dense experiments' full-size points by their series names.
    #[test]
    fn the_dense_targets_name_series_the_full_size_dense_experiments_record() {
        let factors: Vec<String> = dense_sizes(false)
            .0
            .iter()
            .map(|&f| filters_factor(f))
            .collect();
        assert_eq!(factors, ["F=100k", "F=1M"]);
        for tg in crate::targets::TARGETS
            .iter()
            .filter(|t| t.experiment.starts_with("dense"))
        {
            assert!(DENSE_XS.contains(&(tg.x as usize)), "{}", tg.series);
            assert!(
                factors
                    .iter()
                    .any(|f| tg.series.ends_with(&format!(" {f}"))),
                "{}",
                tg.series
            );
        }
    }
}
