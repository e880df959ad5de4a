//! The lazy DFA's warm path on the GPU (beyond the paper): a batch of documents, one warp
//! per unit (a document, or a segment of one cut between its root's children), each
//! walking its events through a frozen copy of the automaton that the CPU filter
//! (`baselines::lazy_dfa`, after XMLTK: Green et al., TODS 2004) built lazily, with its
//! word-parallel twig join.
//!
//! The paper's kernels give a thread to every query node and step all of them at every
//! event, so their work grows with the queries. Here an event costs what it costs the
//! CPU's lazy DFA once warm: an open is one transition load; a close ORs its element's
//! memoized leaf bundle into the parent's accumulator and, where the element received
//! reports, joins them a word at a time. The warp's lanes share the words of a join or
//! a bundle; the walk itself (the same loads on every lane, broadcast) is sequential
//! per unit, and units run side by side. A segment starts under its document's root
//! (the root's open replayed) and never closes it: what it reports to the root is ORed
//! into the document's `roots` row, and [`close_roots()`] closes each cut root once every
//! segment has run. Only the root is open across a cut, so that is the whole hand-over.
//!
//! The automaton is frozen: a transition the CPU never built ([`NO_STATE`]) stops the
//! unit and marks its document [`MISSED`] (one deeper than [`MAX_DEPTH`]: [`TOO_DEEP`]),
//! and the host filters it on the CPU, where the lazy DFA builds what was missing: the
//! lazy construction stays on the CPU, the warm path runs here.
//!
//! [`walk_dfa()`] is the walk alone, for an automaton whose leaf bundles never report to
//! an accumulator (linear paths): its stack in registers across the lanes.
//!
//! Accumulators are 32-bit words here (the CPU's are 64-bit; bit numbers are the same:
//! bit `b` of the accumulator is bit `b % 32` of word `b / 32`). Each warp owns
//! `depth_cap` accumulators of `width` words, one per stack level: level `d` holds the
//! accumulator of the element open at depth `d` once it received a report (copied from
//! the template then). They live in global memory (the L1 caches them; the engine's
//! default) or in shared memory when a block's fit and the host asks
//! ([`DfaParams::acc_shared`]).

use core::mem::MaybeUninit;
use gpu_kernels::prelude::*;
use gpu_kernels::{DevPtr, DevPtrMut, KernelStruct};

/// A transition the CPU has not built.
pub const NO_STATE: u32 = u32::MAX;
/// A join node whose satisfaction matches its query (no child bit to set): `jout`'s slot.
pub const NO_SLOT: u32 = u32::MAX;
/// Flag of a unit's document (`unit_doc`): the unit is a segment of it, its events
/// those of `unit_start`'s range strictly inside the document's root.
pub const SEGMENT: u32 = 1 << 31;
/// The DFA state every document starts in.
pub const START_STATE: u32 = 1;
/// Deepest stack a warp keeps (its levels' "has an accumulator" flags are one `u64`).
pub const MAX_DEPTH: u32 = 64;

/// `status` of a document the warp filtered to its end.
pub const DONE: u32 = 0;
/// `status` of a document that took a transition the automaton lacks.
pub const MISSED: u32 = 1;
/// `status` of a document deeper than the stack.
pub const TOO_DEEP: u32 = 2;

/// Close bit of a (wide) event.
const CLOSE_BIT: u32 = 0x8000;

/// Tags below this are remembered per open element once a child of that tag has
/// applied its leaf bundle there: the bundle is the transition's (parent's state, tag),
/// so a later sibling of the same tag adds nothing (the CPU filter remembers every
/// bundle's last parent).
const TAG_BITS: u32 = 64;

/// Sparse words of a leaf bundle each lane ORs per round: their loads issued together,
/// then the atomic ORs.
const UNROLL: u32 = 4;

/// Words of a dense leaf bundle each lane loads per part; a round is three parts, their
/// loads issued before any OR: 24 words a lane cover an accumulator of 768 words in one
/// round (a bundle spans most of the accumulator on the paper's twigs: 567 of 578 words
/// at 2048 twigs of 10 nodes). Eight words a part stay in registers (LLVM unrolls the
/// part's loops; a part of 12 or more went to local memory).
const PART: u32 = 8;

/// Words of a state's active mask each lane loads per round of a join (8 a lane cover
/// 256 words: the mean span is 246 at 2048 twigs of 10 nodes).
const JOIN_ROUND: u32 = 8;

/// The frozen automaton, a batch of documents and the outputs of [`filter_dfa()`].
/// Spans are `(start, len)` pairs into the sparse word arrays.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DfaParams<'a> {
    /// Wide events of the batch (bit 15: close; bits 0..15: tag), read when
    /// `narrow_events` is 0.
    pub events: DevPtr<'a, u16>,
    /// The same events in the paper's 1-byte form (bit 7: close; bits 0..7: tag), read
    /// when `narrow_events` is 1: half the bytes to upload where every tag id is below 128.
    pub events8: DevPtr<'a, u8>,
    /// Document `d`'s events are `events[doc_start[d]..doc_start[d + 1]]`; its first
    /// is its root's open.
    pub doc_start: DevPtr<'a, u32>,
    /// Unit `u` (a warp's work: a whole document, or a segment of one, cut between its
    /// root's children) is `events[unit_start[u]..unit_start[u + 1]]` of document
    /// `unit_doc[u] & !SEGMENT`; a segment ([`SEGMENT`] set) steps only the events
    /// inside the root (the units tile the batch: the first segment's range starts at
    /// the root's open, the last one's ends with its close).
    pub unit_start: DevPtr<'a, u32>,
    pub unit_doc: DevPtr<'a, u32>,
    /// [`close_roots()`]: the documents cut into segments.
    pub split: DevPtr<'a, u32>,
    /// `trans[state * tags + tag]`: the next state, or [`NO_STATE`].
    pub trans: DevPtr<'a, u32>,
    /// `leaf[state * tags + tag]`: the leaf bundle of that transition (0: none).
    pub leaf: DevPtr<'a, u32>,
    /// Per bundle, 4 words: its words for the parent's accumulator (span), the queries
    /// it matches (span into `tops`).
    pub bundles: DevPtr<'a, u32>,
    /// Per state, 4 words: its active join nodes (span: words of plane 0's numbering)
    /// and the `//` child bits it passes up (span: words of the accumulator).
    pub masks: DevPtr<'a, u32>,
    /// Sparse words: word index and bits.
    pub sparse_word: DevPtr<'a, u32>,
    pub sparse_bits: DevPtr<'a, u32>,
    /// Internal query numbers matched by bundles.
    pub tops: DevPtr<'a, u32>,
    /// When `dense_bundles`: bundle `b`'s words for the parent's accumulator in full,
    /// `width` words from `b * width` (the sparse span is not read then).
    pub bundle_words: DevPtr<'a, u32>,
    /// Per join node, 2 words: its child bit in the parent's accumulator (or
    /// [`NO_SLOT`]) and its query.
    pub jout: DevPtr<'a, u32>,
    /// Per plane, 2 words: its first word in the accumulator and how many join nodes it
    /// numbers.
    pub planes: DevPtr<'a, u32>,
    /// The empty accumulator (`width` words).
    pub template: DevPtr<'a, u32>,
    /// `depth_cap * width` words of accumulators per warp of the launch (unused when
    /// `acc_shared`).
    pub accs: DevPtrMut<'a, u32>,
    /// `width` words per document of the batch: what the segments of a document cut
    /// into segments report to its root (zero before the launch).
    pub roots: DevPtrMut<'a, u32>,
    /// Per document: 1 once a segment reported to its root (zero before the launch).
    pub root_has: DevPtrMut<'a, u32>,
    /// `words_per_doc` words per document of the batch: bit `q` of a document's row,
    /// internal query `q` matched (zero before the launch).
    pub matched: DevPtrMut<'a, u32>,
    /// Per document of the batch: [`DONE`] (zero before the launch), [`MISSED`] or
    /// [`TOO_DEEP`].
    pub status: DevPtrMut<'a, u32>,
    /// Units of this launch ([`filter_dfa()`]), or documents in `split` ([`close_roots()`]).
    pub n_units: u32,
    pub tags: u32,
    pub n_planes: u32,
    pub width: u32,
    /// Stack levels per document (at most [`MAX_DEPTH`]).
    pub depth_cap: u32,
    pub words_per_doc: u32,
    /// 1: each warp's accumulators in the block's dynamic shared memory
    /// (`blockDim.x / 32 * depth_cap * width` words); 0: in `accs`.
    pub acc_shared: u32,
    /// 1: leaf bundles are ORed from `bundle_words` (coalesced, no word index), 0: from
    /// their sparse spans.
    pub dense_bundles: u32,
    /// 1: the events are `events8`'s bytes; 0: `events`' wide words.
    pub narrow_events: u32,
    /// [`walk_dfa()`] only. 1: the units are planned on the device (`device_unit`):
    /// `unit_start` and `unit_doc` are not read, `unit_base`, `children_start` and
    /// `children` are; 0: the host's plan.
    pub plan_on_device: u32,
    /// Documents of the batch (read by the device's plan).
    pub n_docs: u32,
    /// Device plan: document `d`'s units are `unit_base[d]..unit_base[d + 1]`
    /// (`n_docs + 1` entries, strictly ascending from 0).
    pub unit_base: DevPtr<'a, u32>,
    /// Device plan: document `d`'s points between its root's children (offsets into
    /// its own events, ascending) are `children[children_start[d]..children_start[d + 1]]`.
    pub children_start: DevPtr<'a, u32>,
    pub children: DevPtr<'a, u32>,
    /// [`compact_rows()`]: internal query number -> query id.
    pub ids: DevPtr<'a, u32>,
    /// [`compact_rows()`]' output: word 0 counts the ids written (zero before the
    /// launch); then per document its first id and its count ([`HANDED_BACK`] for a
    /// document not filtered to its end); then the ids, each document's together.
    pub answers: DevPtrMut<'a, u32>,
    /// 1: a query's bit is set in a row only when a load shows it unset (one load at
    /// the L2 instead of one atomic where many units of a document report the same
    /// queries); 0: always by an atomic OR. The answers are the same.
    pub check_bits: u32,
}

/// [`compact_rows()`]' count of a document that was not filtered to its end.
pub const HANDED_BACK: u32 = u32::MAX;

// SAFETY: `#[repr(C)]`; the fields are device pointers and integers; `Host<'a>` differs
// only in the lifetime.
unsafe impl KernelStruct for DfaParams<'static> {
    type Host<'a> = DfaParams<'a>;
}

/// Bytes of accumulators a launch of `n_warps` warps needs.
pub const fn accumulator_bytes(n_warps: u32, depth_cap: u32, width: u32) -> u64 {
    n_warps as u64 * depth_cap as u64 * width as u64 * 4
}

kernel! {
    /// The lazy DFA's filter over a batch (module docs): warp `w` of block `b` filters
    /// unit `b * (blockDim.x / 32) + w` (a document, or a segment of one).
    ///
    /// Per event, every lane of the warp does the same walk (the loads are broadcast; the
    /// events come 32 at a time, a lane loading each and a shuffle handing it round):
    ///
    /// - open `t`: `to = trans[state * tags + t]` (a name no query uses is tag 0); push
    ///   `(to, leaf[..])`, no accumulator yet;
    /// - close of the element at depth `d` (XMLTK's pop, then the CPU filter's
    ///   `close_top`): if it received reports, its join: each lane takes words of its
    ///   state's active mask, ANDs the accumulator's planes, and for each join node
    ///   satisfied sets its child bit in the parent's accumulator (or matches its query);
    ///   then the `//` bits the parent's state passes up. Then its leaf bundle: the
    ///   words ORed into the parent's accumulator, the queries matched. A parent gets its
    ///   accumulator (the template, lanes copying words) at its first report.
    ///
    /// A segment starts under its document's root (the root's open replayed: one
    /// transition) and ends there; at its end its reports to the root are ORed into the
    /// document's `roots` row (atomically: the segments of a document run side by side),
    /// and [`close_roots`] closes the root once all have run.
    ///
    /// Memory: the tables in global memory (read only, cached), each unit's events
    /// once, its accumulators (`depth_cap * width` words of shared memory, or of `accs`,
    /// touched only by its warp, `__syncwarp` between a write and a read by another
    /// lane), its document's row of `matched`, `roots` row and `root_has` (atomic OR:
    /// lanes and segments may set bits of one word) and `status` (atomic max, lane 0).
    pub fn filter_dfa(p: DfaParams<'static>) {
        let wpb = block_dim_x() / WARP_SIZE;
        let unit = block_idx_x() * wpb + warp_id();
        if unit >= p.n_units {
            return;
        }
        dfa_unit(&p, unit);
    }

    /// [`filter_dfa`] for an automaton whose leaf bundles report nothing to an
    /// accumulator (every bundle's words empty: linear paths, whose matches are all
    /// leaf steps): no element ever gets an accumulator, so no join runs and no `//`
    /// report passes up, and a close only matches its leaf bundle's queries. Warp `w` of
    /// block `b` walks unit `b * (blockDim.x / 32) + w`; its stack lives in registers
    /// across the lanes (level `d` in lane `d % 32`, read by a shuffle), not in local
    /// memory, and the kernel keeps few registers, so many more warps walk side by side
    /// than [`filter_dfa`]'s (whose join and bundle rounds hold 128 registers a thread).
    /// The first segment of a cut document matches its root's leaf bundle (the walk of
    /// a whole document does at the root's close): no [`close_roots`] follows.
    ///
    /// Memory: the transitions, leaf bundles and their queries (read only), each unit's
    /// events once, its document's row of `matched` (atomic OR) and `status` (atomic max,
    /// lane 0); no accumulators, `roots` or `root_has`.
    ///
    /// With [`DfaParams::plan_on_device`], the warp finds its unit itself
    /// ([`device_unit`]): the host sends each document's unit count (as `unit_base`)
    /// and the points between its root's children, not a list of units.
    pub fn walk_dfa(p: DfaParams<'static>) {
        let wpb = block_dim_x() / WARP_SIZE;
        let unit = block_idx_x() * wpb + warp_id();
        if unit == 0 && lane_id() == 0 {
            zero_answer_count(&p);
        }
        if unit >= p.n_units {
            return;
        }
        let (doc, begin, end, segment) = if p.plan_on_device != 0 {
            device_unit(&p, unit)
        } else {
            let raw = p.unit_doc.read(unit as usize);
            let (begin, end) = (p.unit_start.read(unit as usize), p.unit_start.read(unit as usize + 1));
            (raw & !SEGMENT, begin, end, raw & SEGMENT != 0)
        };
        walk_unit(&p, doc, begin, end, segment);
    }

    /// [`walk_dfa`] with a thread per unit instead of a warp, on the device's plan
    /// ([`DfaParams::plan_on_device`] must be 1): thread `t` of the launch walks unit
    /// `t`. The walk is the same sequence of loads whichever lane runs it, so a warp
    /// that walks one unit issues every instruction 32 times over; here the 32 lanes
    /// walk 32 units side by side (their branches diverge where one opens and another
    /// closes), and a batch cut into many short units (one or a few of a root's
    /// children each) is walked in the time of its longest unit's chain of loads. Each
    /// thread keeps its stack in local memory (the levels it reaches stay in the L1).
    ///
    /// Memory: as [`walk_dfa`]'s.
    pub fn walk_dfa_lanes(p: DfaParams<'static>) {
        let unit = block_idx_x() * block_dim_x() + thread_idx_x();
        if unit == 0 {
            zero_answer_count(&p);
        }
        if unit >= p.n_units {
            return;
        }
        let (doc, begin, end, segment) = unit_range(&p, unit, search_one);
        walk_lane(&p, doc, begin, end, segment);
    }

    /// The rows of `matched` as lists of query ids, once the walk has run: warp `w` of
    /// block `b` takes document `b * (blockDim.x / 32) + w` (of `n_docs`); lane `l`
    /// counts the bits of its share of the row's words (a contiguous run, so that the
    /// lanes' order is the words'), a [`warp_scan`] places each lane's ids, lane 0 takes
    /// the document's place in `answers` with one atomic add, and every lane writes its
    /// ids (`ids[q]` for bit `q`) in ascending bit order. The host then copies each
    /// document's ids as they lie instead of decoding bits. A document whose status is
    /// not [`DONE`] gets the count [`HANDED_BACK`] and no ids.
    ///
    /// Memory: reads `matched`, `status`, `ids`; writes `answers` (its count word
    /// atomically).
    pub fn compact_rows(p: DfaParams<'static>) {
        let wpb = block_dim_x() / WARP_SIZE;
        let doc = block_idx_x() * wpb + warp_id();
        if doc >= p.n_docs {
            return;
        }
        compact_row(&p, doc);
    }

    /// The close of the root of every document cut into segments, once [`filter_dfa`]
    /// has run them all: warp `w` of block `b` takes document `split[b * (blockDim.x /
    /// 32) + w]`, replays its root's open, gives the root the accumulator its segments
    /// reported (`roots`, over the template) and closes it as a walk closes an element
    /// (its join, its leaf bundle).
    ///
    /// Memory: as [`filter_dfa`]'s, two levels of accumulators per warp; reads the
    /// document's `roots` row and `root_has`.
    pub fn close_roots(p: DfaParams<'static>) {
        let wpb = block_dim_x() / WARP_SIZE;
        let i = block_idx_x() * wpb + warp_id();
        if i >= p.n_units {
            return;
        }
        close_root(&p, p.split.read(i as usize));
    }
}

/// Lane `lane` copies its share of the template into the accumulator at `acc`.
///
/// # Safety
/// `acc` points to `p.width` words (shared or global) that no other lane reads or writes
/// until the warp's next `sync_warp`, other than at this lane's own words.
#[inline(always)]
unsafe fn init_acc(p: &DfaParams<'static>, acc: *mut u32, lane: u32) {
    let mut w = lane;
    while w < p.width {
        store(acc, w as usize, p.template.read(w as usize));
        w += WARP_SIZE;
    }
}

/// Sets bit `bit` of the bit array at `base`, atomically (lanes may share a word).
///
/// # Safety
/// `base` points to at least `bit / 32 + 1` words, valid for the launch.
#[inline(always)]
unsafe fn set_bit(base: *mut u32, bit: u32) {
    atomic_or(base.add((bit / 32) as usize), 1 << (bit % 32));
}

/// Planes whose `(first word, join nodes)` a warp holds in registers (the join's inner
/// loop reads them for every word); a set of more planes reads the rest from `planes`.
const PLANES_HELD: usize = 12;

/// The first [`PLANES_HELD`] planes' bounds, loaded once per warp.
struct Planes {
    off: [u32; PLANES_HELD],
    bits: [u32; PLANES_HELD],
}

impl Planes {
    /// # Safety
    /// `p.planes` holds `p.n_planes` pairs.
    #[inline(always)]
    unsafe fn load(p: &DfaParams<'static>) -> Self {
        let mut pl = Planes {
            off: [0; PLANES_HELD],
            bits: [0; PLANES_HELD],
        };
        for m in 0..PLANES_HELD {
            if (m as u32) < p.n_planes {
                pl.off[m] = p.planes.read(2 * m);
                pl.bits[m] = p.planes.read(2 * m + 1);
            }
        }
        pl
    }
}

/// Sparse words `k`, `k + 32`, .. (`N` of them) of the span `(start, len)`: their word
/// indices and bits, loaded together (0 past the span's end).
///
/// # Safety
/// `(start, len)` is a span of `p.sparse_word` and `p.sparse_bits`.
#[inline(always)]
unsafe fn load_sparse<const N: usize>(
    p: &DfaParams<'static>,
    start: u32,
    len: u32,
    k: u32,
) -> ([u32; N], [u32; N]) {
    let mut w = [0u32; N];
    let mut v = [0u32; N];
    for u in 0..N {
        let at = k + u as u32 * WARP_SIZE;
        if at < len {
            w[u] = p.sparse_word.read((start + at) as usize);
            v[u] = p.sparse_bits.read((start + at) as usize);
        }
    }
    (w, v)
}

/// A part of a dense leaf bundle's round: the words `at`, `at + 32`, .. ([`PART`] of
/// them) of bundle row `from`, and of the template when `with_template`, each 0 past the
/// accumulator's width.
///
/// # Safety
/// `p.bundle_words` holds `width` words per bundle and `from` is a bundle's row start.
#[inline(always)]
unsafe fn load_part(
    p: &DfaParams<'static>,
    from: usize,
    at: u32,
    with_template: bool,
) -> ([u32; PART as usize], [u32; PART as usize]) {
    let mut v = [0u32; PART as usize];
    let mut t = [0u32; PART as usize];
    for u in 0..PART as usize {
        let w = at + u as u32 * WARP_SIZE;
        if w < p.width {
            v[u] = p.bundle_words.read(from + w as usize);
            if with_template {
                t[u] = p.template.read(w as usize);
            }
        }
    }
    (v, t)
}

/// ORs a part loaded by [`load_part`] into the accumulator at `acc` (the template's words
/// with it when `with_template`: the accumulator's first report).
///
/// # Safety
/// `acc` points to `p.width` words that no other lane touches at this lane's words
/// (`at`, `at + 32`, ..) until the warp's next `sync_warp`.
#[inline(always)]
unsafe fn or_part(
    p: &DfaParams<'static>,
    acc: *mut u32,
    at: u32,
    (v, t): ([u32; PART as usize], [u32; PART as usize]),
    with_template: bool,
) {
    for u in 0..PART as usize {
        let w = (at + u as u32 * WARP_SIZE) as usize;
        if w < p.width as usize {
            if with_template {
                store(acc, w, t[u] | v[u]);
            } else if v[u] != 0 {
                store(acc, w, load(acc, w) | v[u]);
            }
        }
    }
}

/// Closes the element whose accumulator is at `acc` (the CPU filter's `close_top`):
/// if it received reports (`own_has`), its twig join into the parent's accumulator at
/// `pacc` (or the queries it matches) and the `//` bits the parent's state passes up;
/// then, when `bundle` is not 0, its leaf bundle. `parent_has` says whether the parent
/// has its accumulator (copied from the template at its first report, here); the
/// whole warp calls it.
///
/// Written for latency (one warp per scheduler on a batch of a few hundred documents,
/// so every dependent load is paid in full): a leaf bundle's words are loaded in one
/// round per lane (3 [`PART`]s of words each) before any is ORed, together with the
/// template's words when the parent has no accumulator yet, and a join loads
/// [`JOIN_ROUND`] of its active words per lane before testing them against the planes,
/// whose bounds the warp holds in registers.
///
/// # Safety
/// `acc` and `pacc` point to `p.width` words each that only this warp touches, `row`
/// to the document's row of `matched`, `own_state` and `up_state` are DFA states and
/// `bundle` a leaf bundle of the tables (`DfaTables::check`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn close_element(
    p: &DfaParams<'static>,
    planes: &Planes,
    acc: *mut u32,
    pacc: *mut u32,
    own_state: u32,
    up_state: u32,
    own_has: bool,
    parent_has: &mut bool,
    bundle: u32,
    row: *mut u32,
    lane: u32,
) {
    let width = p.width as usize;
    if own_has {
        // The twig join of an element that received reports.
        if !*parent_has {
            init_acc(p, pacc, lane);
            *parent_has = true;
        }
        sync_warp();
        let own = own_state as usize * 4;
        let (s0, n0) = (p.masks.read(own), p.masks.read(own + 1));
        let mut k = lane;
        while k < n0 {
            // This lane's next words of the state's active mask, loaded together.
            let (mut wv, mut bv) = load_sparse::<{ JOIN_ROUND as usize }>(p, s0, n0, k);
            for _ in 0..JOIN_ROUND {
                // Take the round's first word and shift the rest down: fixed indices
                // keep the round in registers.
                let (w, mut s) = (wv[0], bv[0]);
                for u in 1..JOIN_ROUND as usize {
                    wv[u - 1] = wv[u];
                    bv[u - 1] = bv[u];
                }
                if s == 0 {
                    continue; // past the mask's end, or no node in this word
                }
                s &= load(acc, w as usize);
                // Planes 1.. (a node of fewer children has ones there in the template);
                // a plane numbering none of these nodes ends the scan.
                let mut ended = false;
                for m in 1..PLANES_HELD {
                    if m as u32 >= p.n_planes || s == 0 || planes.bits[m] <= 32 * w {
                        ended = true;
                        break;
                    }
                    s &= load(acc, (planes.off[m] + w) as usize);
                }
                let mut m = PLANES_HELD;
                while !ended && (m as u32) < p.n_planes && s != 0 {
                    if p.planes.read(2 * m + 1) <= 32 * w {
                        break;
                    }
                    s &= load(acc, (p.planes.read(2 * m) + w) as usize);
                    m += 1;
                }
                while s != 0 {
                    let j = (w * 32 + s.trailing_zeros()) as usize;
                    s &= s - 1;
                    let slot = p.jout.read(2 * j);
                    if slot == NO_SLOT {
                        set_bit(row, p.jout.read(2 * j + 1));
                    } else {
                        set_bit(pacc, slot);
                    }
                }
            }
            k += JOIN_ROUND * WARP_SIZE;
        }
        let up = up_state as usize * 4;
        let (s1, n1) = (p.masks.read(up + 2), p.masks.read(up + 3));
        let mut k = lane;
        while k < n1 {
            let w = p.sparse_word.read((s1 + k) as usize);
            let v = p.sparse_bits.read((s1 + k) as usize) & load(acc, w as usize);
            if v != 0 {
                atomic_or(pacc.add(w as usize), v);
            }
            k += WARP_SIZE;
        }
        sync_warp();
    }
    if bundle == 0 {
        return;
    }
    let b = bundle as usize * 4;
    let (ds, dn) = (p.bundles.read(b), p.bundles.read(b + 1));
    let (ts, tn) = (p.bundles.read(b + 2), p.bundles.read(b + 3));
    let new_parent = !*parent_has;
    if p.dense_bundles != 0 {
        // Lane `l` owns words `l`, `l + 32`, ...: a round's loads (the bundle's words,
        // and the template's for a parent without an accumulator yet) are issued before
        // the header is needed, then plain stores; a part past the width is skipped.
        let from = bundle as usize * width;
        let step = PART * WARP_SIZE;
        let mut w0 = 0u32;
        while w0 < p.width {
            let a = load_part(p, from, w0 + lane, new_parent);
            let two = w0 + step < p.width;
            let three = w0 + 2 * step < p.width;
            let b = if two {
                load_part(p, from, w0 + step + lane, new_parent)
            } else {
                Default::default()
            };
            let c = if three {
                load_part(p, from, w0 + 2 * step + lane, new_parent)
            } else {
                Default::default()
            };
            if dn > 0 {
                or_part(p, pacc, w0 + lane, a, new_parent);
                if two {
                    or_part(p, pacc, w0 + step + lane, b, new_parent);
                }
                if three {
                    or_part(p, pacc, w0 + 2 * step + lane, c, new_parent);
                }
            }
            w0 += 3 * step;
        }
        if dn > 0 {
            *parent_has = true;
        }
    } else if dn > 0 {
        if new_parent {
            init_acc(p, pacc, lane);
            *parent_has = true;
            sync_warp();
        }
        let mut k = lane;
        while k < dn {
            let (w, v) = load_sparse::<{ UNROLL as usize }>(p, ds, dn, k);
            for (&w, &v) in w.iter().zip(&v) {
                if v != 0 {
                    atomic_or(pacc.add(w as usize), v);
                }
            }
            k += UNROLL * WARP_SIZE;
        }
    }
    let mut k = lane;
    while k < tn {
        set_bit(row, p.tops.read((ts + k) as usize));
        k += WARP_SIZE;
    }
    sync_warp();
}

/// A warp's per-level values (a stack of at most [`MAX_DEPTH`] levels, in local memory),
/// left unset at the warp's start (zeroing them cost a byte-wise loop of some 1,300
/// stores a warp, a quarter of a short segment's work): a level is set when its
/// element is pushed, before any read.
struct Levels<T: Copy>([MaybeUninit<T>; MAX_DEPTH as usize]);

impl<T: Copy> Levels<T> {
    #[inline(always)]
    fn new() -> Self {
        Levels([MaybeUninit::uninit(); MAX_DEPTH as usize])
    }

    #[inline(always)]
    fn set(&mut self, d: usize, v: T) {
        self.0[d] = MaybeUninit::new(v);
    }

    /// # Safety
    /// Level `d` was set.
    #[inline(always)]
    unsafe fn get(&self, d: usize) -> T {
        self.0[d].assume_init()
    }
}

/// The calling warp's accumulators: `depth_cap` levels of `width` words, in its block's
/// shared memory or in `accs` at the warp's place `slot` in the launch.
///
/// # Safety
/// The launch's shared memory or `accs` holds them ([`DfaParams::acc_shared`]).
#[inline(always)]
unsafe fn warp_accs(p: &DfaParams<'static>, slot: u32) -> *mut u32 {
    let own_levels = p.depth_cap as usize * p.width as usize;
    if p.acc_shared != 0 {
        dynamic_shared::<u32>().add(warp_id() as usize * own_levels)
    } else {
        p.accs.ptr().add(slot as usize * own_levels)
    }
}

/// Marks document `doc` as not filtered here (`why`: [`MISSED`] or [`TOO_DEEP`]).
///
/// # Safety
/// `doc` is a document of the batch.
#[inline(always)]
unsafe fn give_back(p: &DfaParams<'static>, doc: u32, why: u32, lane: u32) {
    if lane == 0 {
        atomic_max(p.status.ptr().add(doc as usize), why);
    }
}

/// Event `i` of the batch in the wide form (bit 15: close), from whichever width the
/// host uploaded.
///
/// # Safety
/// `i` is an event of the batch.
#[inline(always)]
unsafe fn event_at(p: &DfaParams<'static>, i: usize) -> u32 {
    if p.narrow_events != 0 {
        let b = p.events8.read(i) as u32;
        (b & 0x80) << 8 | (b & 0x7f)
    } else {
        p.events.read(i) as u32
    }
}

/// The tag of wide event `ev` as the tables number it (a name no query uses is 0).
#[inline(always)]
fn tag_of_event(p: &DfaParams<'static>, ev: u32) -> u32 {
    let tag = ev & (CLOSE_BIT - 1);
    if tag >= p.tags {
        0 // a name no query uses: only `*` and `//` see it
    } else {
        tag
    }
}

/// The open of the root whose event is `events[first]` replayed from the start state:
/// its tag, its transition's index and the state it reaches, or `None` where the
/// automaton lacks that transition.
///
/// # Safety
/// `first` is an event of the batch.
#[inline(always)]
unsafe fn root_open(p: &DfaParams<'static>, first: u32) -> Option<(u32, usize, u32)> {
    let tag = tag_of_event(p, event_at(p, first as usize));
    let at = (START_STATE * p.tags + tag) as usize;
    let to = p.trans.read(at);
    (to != NO_STATE).then_some((tag, at, to))
}

/// Unit `unit`'s walk by the calling warp ([`filter_dfa`]'s docs).
///
/// # Safety
/// `p` holds a launch's parameters as the host engine builds them (every table index
/// checked by `DfaTables::check`, `depth_cap <= MAX_DEPTH`, the accumulators sized for
/// the block or the launch, a segment's events strictly inside its document's root),
/// `unit < p.n_units`, and no other warp filters `unit`.
#[inline(always)]
unsafe fn dfa_unit(p: &DfaParams<'static>, unit: u32) {
    let lane = lane_id();
    let width = p.width as usize;
    let accs = warp_accs(p, unit);
    let raw = p.unit_doc.read(unit as usize);
    let doc = raw & !SEGMENT;
    let row = p.matched.ptr().add(doc as usize * p.words_per_doc as usize);
    let mut begin = p.unit_start.read(unit as usize);
    let mut end = p.unit_start.read(unit as usize + 1);
    let first = p.doc_start.read(doc as usize);
    if raw & SEGMENT != 0 {
        begin = begin.max(first + 1);
        end = end.min(p.doc_start.read(doc as usize + 1) - 1);
    }
    let planes = Planes::load(p);
    let mut state = Levels::<u32>::new();
    let mut bundle = Levels::<u32>::new();
    // The tag of the element open at each depth, and the tags of its children whose
    // leaf bundles it received.
    let mut tag_of = Levels::<u32>::new();
    let mut applied = Levels::<u64>::new();
    // Bit d: the element open at depth d has an accumulator.
    let mut has: u64 = 0;
    state.set(0, START_STATE);
    applied.set(0, 0);
    // The state of the element open at depth `d` (`state[d]`, held in a register).
    let mut cur = START_STATE;
    let mut d = 0usize;
    // A segment starts under its document's root, which it never closes.
    let floor = if raw & SEGMENT != 0 {
        let Some((tag, at, to)) = root_open(p, first) else {
            give_back(p, doc, MISSED, lane);
            return;
        };
        d = 1;
        cur = to;
        state.set(1, to);
        bundle.set(1, p.leaf.read(at));
        tag_of.set(1, tag);
        applied.set(1, 0);
        1
    } else {
        0
    };
    let mut i = begin;
    // The events a window of 32 at a time, one per lane (one coalesced load), each
    // handed round by a shuffle when its turn comes.
    let mut window = 0u32;
    while i < end {
        let at = (i - begin) % WARP_SIZE;
        if at == 0 {
            let j = i + lane;
            window = if j < end { event_at(p, j as usize) } else { 0 };
        }
        let ev = shfl(window, at);
        i += 1;
        if ev & CLOSE_BIT == 0 {
            let tag = tag_of_event(p, ev);
            let at = (cur * p.tags + tag) as usize;
            let to = p.trans.read(at);
            let leaf = p.leaf.read(at);
            if to == NO_STATE || d + 1 >= p.depth_cap as usize {
                give_back(p, doc, if to == NO_STATE { MISSED } else { TOO_DEEP }, lane);
                return;
            }
            d += 1;
            cur = to;
            state.set(d, to);
            bundle.set(d, leaf);
            has &= !(1u64 << d);
            tag_of.set(d, tag);
            applied.set(d, 0);
            continue;
        }
        if d <= floor {
            continue; // unbalanced close: ignored (documents are checked when parsed)
        }
        let up_state = state.get(d - 1);
        let t = tag_of.get(d);
        let bit = if t < TAG_BITS { 1u64 << t } else { 0 };
        let id = bundle.get(d);
        let seen = applied.get(d - 1);
        let fresh = id != 0 && seen & bit == 0;
        applied.set(d - 1, seen | bit);
        let mut parent_has = has >> (d - 1) & 1 == 1;
        close_element(
            p,
            &planes,
            accs.add(d * width),
            accs.add((d - 1) * width),
            cur,
            up_state,
            has >> d & 1 == 1,
            &mut parent_has,
            if fresh { id } else { 0 },
            row,
            lane,
        );
        if parent_has {
            has |= 1u64 << (d - 1);
        }
        d -= 1;
        cur = up_state;
    }
    if floor == 1 && has >> 1 & 1 == 1 {
        // A segment's reports to its document's root, for `close_roots`.
        let acc = accs.add(width);
        let to = p.roots.ptr().add(doc as usize * width);
        let mut w = lane;
        while w < p.width {
            let v = load(acc, w as usize);
            if v != 0 {
                atomic_or(to.add(w as usize), v);
            }
            w += WARP_SIZE;
        }
        if lane == 0 {
            atomic_or(p.root_has.ptr().add(doc as usize), 1);
        }
    }
}

/// The close of document `doc`'s root by the calling warp ([`close_roots`]'s docs).
///
/// # Safety
/// As [`dfa_unit`]'s, for a document whose segments [`filter_dfa`] has run (two levels of
/// accumulators for the warp).
#[inline(always)]
unsafe fn close_root(p: &DfaParams<'static>, doc: u32) {
    let lane = lane_id();
    if p.status.read(doc as usize) != DONE {
        return;
    }
    let width = p.width as usize;
    let accs = warp_accs(p, warp_id() + block_idx_x() * (block_dim_x() / WARP_SIZE));
    let row = p.matched.ptr().add(doc as usize * p.words_per_doc as usize);
    let first = p.doc_start.read(doc as usize);
    let Some((_, at, to)) = root_open(p, first) else {
        give_back(p, doc, MISSED, lane);
        return;
    };
    let own_has = p.root_has.read(doc as usize) != 0;
    let acc = accs.add(width);
    if own_has {
        let from = p.roots.ptr().add(doc as usize * width);
        let mut w = lane;
        while w < p.width {
            store(
                acc,
                w as usize,
                p.template.read(w as usize) | load(from, w as usize),
            );
            w += WARP_SIZE;
        }
    }
    let mut parent_has = false;
    close_element(
        p,
        &Planes::load(p),
        acc,
        accs,
        to,
        START_STATE,
        own_has,
        &mut parent_has,
        p.leaf.read(at),
        row,
        lane,
    );
}

/// A warp's per-level values held in registers across its lanes: level `d` (below
/// [`MAX_DEPTH`]) in lane `d % 32` of word `d / 32`. Every lane asks for the same level
/// (the walk is the same on every lane), and a read is a shuffle from the lane that holds
/// it.
#[derive(Clone, Copy)]
struct LaneLevels {
    lo: u32,
    hi: u32,
}

impl LaneLevels {
    #[inline(always)]
    fn new() -> Self {
        LaneLevels { lo: 0, hi: 0 }
    }

    /// Sets level `d` to `v` (the whole warp calls it with the same `d` and `v`).
    #[inline(always)]
    fn set(&mut self, d: usize, v: u32, lane: u32) {
        if d as u32 % WARP_SIZE == lane {
            if d < WARP_SIZE as usize {
                self.lo = v;
            } else {
                self.hi = v;
            }
        }
    }

    /// Level `d` (the whole warp calls it, with the same `d`).
    #[inline(always)]
    fn get(&self, d: usize) -> u32 {
        let word = if d < WARP_SIZE as usize {
            self.lo
        } else {
            self.hi
        };
        shfl(word, d as u32 % WARP_SIZE)
    }
}

/// Zeroes [`compact_rows`]' count of ids, when it runs after the walk (`answers` not
/// null): the walk's first thread does it, so that the host zeroes no output but the
/// rows and the status. Nothing else of `answers` needs zeroing: every document's
/// place and count is written, and the host reads the ids up to the count.
///
/// # Safety
/// `answers` is null or holds at least one word; one thread of the launch calls it.
#[inline(always)]
unsafe fn zero_answer_count(p: &DfaParams<'static>) {
    if p.answers.addr() != 0 {
        p.answers.write(0, 0);
    }
}

/// Sets bit `bit` of the row at `row` (atomically: units and lanes share its words),
/// unless `check` and a load (at the L2, not a cached copy) shows it set already.
///
/// # Safety
/// As [`set_bit`]'s.
#[inline(always)]
unsafe fn set_bit_once(row: *mut u32, bit: u32, check: bool) {
    let w = row.add((bit / 32) as usize);
    let m = 1 << (bit % 32);
    if check && volatile_load_u32(w) & m != 0 {
        return;
    }
    atomic_or(w, m);
}

/// Matches the queries of leaf bundle `bundle` in the document's `row` (lanes share
/// them).
///
/// # Safety
/// `bundle` is a leaf bundle of the tables and `row` the document's row of `matched`.
#[inline(always)]
unsafe fn match_tops(p: &DfaParams<'static>, bundle: u32, row: *mut u32, lane: u32) {
    let b = bundle as usize * 4;
    let (ts, tn) = (p.bundles.read(b + 2), p.bundles.read(b + 3));
    let mut k = lane;
    while k < tn {
        set_bit_once(row, p.tops.read((ts + k) as usize), p.check_bits != 0);
        k += WARP_SIZE;
    }
}

/// Unit `unit` of the device's plan ([`DfaParams::plan_on_device`]): its document `d`
/// (the last whose `unit_base` is at or below `unit`), and, as the `j`-th of the `u`
/// units of a document of `n` events, its range: the whole document when `u` is 1,
/// else from the first point between the root's children at or past `j * n / u` (the
/// document's start for `j` 0) to the first at or past `(j + 1) * n / u` (its end for
/// the last), a segment. Consecutive units share their cut, so a document's units tile
/// it; a unit whose two targets find the same point is empty. The whole warp calls it
/// (its searches vote with [`ballot`]); returns `(document, begin, end, segment)`.
///
/// # Safety
/// `p` holds the device plan as the host engine builds it: `unit_base` strictly
/// ascending from 0 over `n_docs + 1` entries, `unit < unit_base[n_docs]`, a document
/// of more than one unit with at least one point, every point inside its document.
#[inline(always)]
unsafe fn device_unit(p: &DfaParams<'static>, unit: u32) -> (u32, u32, u32, bool) {
    unit_range(p, unit, count_below)
}

/// [`device_unit`] with `search` finding the first index at or past a key (by the
/// warp's votes, or by one thread).
///
/// # Safety
/// As [`device_unit`]'s; `search(arr, lo, hi, key)` reads only `arr[lo..hi)`.
#[inline(always)]
unsafe fn unit_range(
    p: &DfaParams<'static>,
    unit: u32,
    search: unsafe fn(DevPtr<'static, u32>, u32, u32, u32) -> u32,
) -> (u32, u32, u32, bool) {
    let doc = search(p.unit_base, 0, p.n_docs + 1, unit + 1) - 1;
    let base = p.unit_base.read(doc as usize);
    let u = p.unit_base.read(doc as usize + 1) - base;
    let j = unit - base;
    let a = p.doc_start.read(doc as usize);
    let n = p.doc_start.read(doc as usize + 1) - a;
    if u <= 1 {
        return (doc, a, a + n, false);
    }
    let (c0, c1) = (
        p.children_start.read(doc as usize),
        p.children_start.read(doc as usize + 1),
    );
    let cut = |k: u32| -> u32 {
        if k == 0 {
            return 0;
        }
        if k >= u {
            return n;
        }
        let t = (k as u64 * n as u64 / u as u64) as u32;
        let i = search(p.children, c0, c1, t);
        if i < c1 {
            p.children.read(i as usize)
        } else {
            n - 1 // past the last point: the root's close
        }
    };
    (doc, a + cut(j), a + cut(j + 1), true)
}

/// `lo` plus how many of `arr[lo..hi)` (ascending) are below `key`: the first index
/// at or past `key`. The whole warp calls it with the same arguments: each round the
/// lanes load 32 samples spread over the range and vote ([`ballot`]), so a range of
/// `n` takes about `log32(n)` dependent loads, not `log2(n)`.
///
/// # Safety
/// `arr[lo..hi)` lies in the buffer `arr` was made from.
#[inline(always)]
unsafe fn count_below(arr: DevPtr<'static, u32>, lo: u32, hi: u32, key: u32) -> u32 {
    let lane = lane_id();
    let (mut lo, mut hi) = (lo, hi);
    while hi - lo > WARP_SIZE {
        let step = (hi - lo).div_ceil(WARP_SIZE);
        let i = lo + lane * step;
        let below = i < hi && arr.read(i as usize) < key;
        // The samples below are a prefix of the lanes (the array ascends).
        let k = ballot(below).count_ones();
        if k == 0 {
            return lo;
        }
        // Everything up to sample k - 1 is below; sample k (if any) is not.
        let next = lo + k * step;
        lo += (k - 1) * step + 1;
        hi = hi.min(next);
    }
    let i = lo + lane;
    let below = i < hi && arr.read(i as usize) < key;
    lo + ballot(below).count_ones()
}

/// Document `doc`'s row as ids in `answers` ([`compact_rows`]' docs).
///
/// # Safety
/// `doc < p.n_docs`; `matched`, `status` and `ids` hold the batch's rows, statuses and
/// `words_per_doc * 32` ids at least; `answers` has room for `1 + 2 * n_docs` words and
/// every id of the batch after them.
#[inline(always)]
unsafe fn compact_row(p: &DfaParams<'static>, doc: u32) {
    let lane = lane_id();
    let slot = p.answers.ptr().add(1 + 2 * doc as usize);
    if p.status.read(doc as usize) != DONE {
        if lane == 0 {
            store(slot, 0, 0);
            store(slot, 1, HANDED_BACK);
        }
        return;
    }
    let words = p.words_per_doc;
    let row = doc as usize * words as usize;
    // Lane `l` owns words `l * share .. (l + 1) * share` of the row.
    let share = words.div_ceil(WARP_SIZE);
    let (w0, w1) = ((lane * share).min(words), ((lane + 1) * share).min(words));
    let mut mine = 0;
    for w in w0..w1 {
        mine += p.matched.read(row + w as usize).count_ones();
    }
    let (before, total) = warp_scan(mine);
    let mut base = 0;
    if lane == 0 {
        base = atomic_add(p.answers.ptr(), total);
        store(slot, 0, base);
        store(slot, 1, total);
    }
    let base = shfl(base, 0);
    let out = p
        .answers
        .ptr()
        .add(1 + 2 * p.n_docs as usize + (base + before) as usize);
    let mut k = 0;
    for w in w0..w1 {
        let mut bits = p.matched.read(row + w as usize);
        while bits != 0 {
            let q = w * 32 + bits.trailing_zeros();
            store(out, k, p.ids.read(q as usize));
            k += 1;
            bits &= bits - 1;
        }
    }
}

/// [`count_below`] by one thread: a binary search.
///
/// # Safety
/// `arr[lo..hi)` lies in the buffer `arr` was made from.
#[inline(always)]
unsafe fn search_one(arr: DevPtr<'static, u32>, lo: u32, hi: u32, key: u32) -> u32 {
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if arr.read(mid as usize) < key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The walk of one unit by the calling thread alone ([`walk_dfa_lanes`]): [`walk_unit`]
/// with its levels in the thread's own arrays instead of across the warp's lanes.
///
/// # Safety
/// As [`walk_unit`]'s.
#[inline(always)]
unsafe fn walk_lane(p: &DfaParams<'static>, doc: u32, begin: u32, end: u32, segment: bool) {
    let row = p.matched.ptr().add(doc as usize * p.words_per_doc as usize);
    let (mut begin, mut end) = (begin, end);
    let first = p.doc_start.read(doc as usize);
    let opens_root = begin == first;
    if segment {
        begin = begin.max(first + 1);
        end = end.min(p.doc_start.read(doc as usize + 1) - 1);
    }
    // Per level: the state, the leaf bundle, the tag, and the tags of the children
    // whose leaf bundles the element received.
    let mut state = Levels::<u32>::new();
    let mut bundle = Levels::<u32>::new();
    let mut tag_of = Levels::<u32>::new();
    let mut applied = Levels::<u64>::new();
    state.set(0, START_STATE);
    applied.set(0, 0);
    let mut cur = START_STATE;
    let mut d = 0usize;
    let floor = if segment {
        let Some((tag, at, to)) = root_open(p, first) else {
            atomic_max(p.status.ptr().add(doc as usize), MISSED);
            return;
        };
        let leaf = p.leaf.read(at);
        if opens_root && leaf != 0 {
            match_tops_one(p, leaf, row);
        }
        d = 1;
        cur = to;
        state.set(1, to);
        bundle.set(1, leaf);
        tag_of.set(1, tag);
        applied.set(1, 0);
        1
    } else {
        0
    };
    let mut i = begin;
    while i < end {
        let ev = event_at(p, i as usize);
        i += 1;
        if ev & CLOSE_BIT == 0 {
            let tag = tag_of_event(p, ev);
            let at = (cur * p.tags + tag) as usize;
            let to = p.trans.read(at);
            if to == NO_STATE || d + 1 >= p.depth_cap as usize {
                let why = if to == NO_STATE { MISSED } else { TOO_DEEP };
                atomic_max(p.status.ptr().add(doc as usize), why);
                return;
            }
            d += 1;
            cur = to;
            state.set(d, to);
            bundle.set(d, p.leaf.read(at));
            tag_of.set(d, tag);
            applied.set(d, 0);
            continue;
        }
        if d <= floor {
            continue; // unbalanced close: ignored (documents are checked when parsed)
        }
        // SAFETY: levels `floor..=d` were set when their elements were pushed.
        let (id, t, seen) = (bundle.get(d), tag_of.get(d), applied.get(d - 1));
        // Tags past 64 are not remembered: their bundles are matched at every close.
        let bit = if t < 64 { 1u64 << t } else { 0 };
        if id != 0 && seen & bit == 0 {
            match_tops_one(p, id, row);
        }
        applied.set(d - 1, seen | bit);
        d -= 1;
        cur = state.get(d);
    }
}

/// [`match_tops`] by one thread: every query of leaf bundle `bundle` set in `row`.
/// With [`DfaParams::check_bits`], [`CHECK_ROUND`] queries at a time: their numbers
/// loaded together, then their row words (issued back to back, so one round trip to
/// the L2 a round, not one a query), then an atomic OR for each bit not yet set.
///
/// # Safety
/// As [`match_tops`]'s.
#[inline(always)]
unsafe fn match_tops_one(p: &DfaParams<'static>, bundle: u32, row: *mut u32) {
    let b = bundle as usize * 4;
    let (ts, tn) = (p.bundles.read(b + 2), p.bundles.read(b + 3));
    if p.check_bits == 0 {
        for k in 0..tn {
            set_bit(row, p.tops.read((ts + k) as usize));
        }
        return;
    }
    const R: usize = CHECK_ROUND as usize;
    let mut k = 0;
    while k < tn {
        let mut q = [0u32; R];
        let mut seen = [u32::MAX; R];
        for (u, qu) in q.iter_mut().enumerate() {
            if k + (u as u32) < tn {
                *qu = p.tops.read((ts + k) as usize + u);
            }
        }
        for (u, (su, &qu)) in seen.iter_mut().zip(&q).enumerate() {
            if k + (u as u32) < tn {
                *su = volatile_load_u32(row.add((qu / 32) as usize));
            }
        }
        for (&su, &qu) in seen.iter().zip(&q) {
            let m = 1 << (qu % 32);
            if su & m == 0 {
                atomic_or(row.add((qu / 32) as usize), m);
            }
        }
        k += CHECK_ROUND;
    }
}

/// Queries of a leaf bundle [`match_tops_one`] checks per round.
const CHECK_ROUND: u32 = 4;

/// The walk of one unit by the calling warp ([`walk_dfa`]'s docs): [`dfa_unit`] without
/// accumulators. Its events are `begin..end` of document `doc`; a `segment` steps only
/// those inside the root.
///
/// # Safety
/// As [`dfa_unit`]'s, for tables whose leaf bundles have no accumulator words.
#[inline(always)]
unsafe fn walk_unit(p: &DfaParams<'static>, doc: u32, begin: u32, end: u32, segment: bool) {
    let lane = lane_id();
    let row = p.matched.ptr().add(doc as usize * p.words_per_doc as usize);
    let (mut begin, mut end) = (begin, end);
    let first = p.doc_start.read(doc as usize);
    let opens_root = begin == first;
    if segment {
        begin = begin.max(first + 1);
        end = end.min(p.doc_start.read(doc as usize + 1) - 1);
    }
    // The state, leaf bundle and tag of the element open at each depth, and the tags
    // of its children whose leaf bundles it received (two words).
    let mut state = LaneLevels::new();
    let mut bundle = LaneLevels::new();
    let mut tag_of = LaneLevels::new();
    let mut applied_lo = LaneLevels::new();
    let mut applied_hi = LaneLevels::new();
    state.set(0, START_STATE, lane);
    let mut cur = START_STATE;
    let mut d = 0usize;
    // A segment starts under its document's root, which it never closes.
    let floor = if segment {
        let Some((tag, at, to)) = root_open(p, first) else {
            give_back(p, doc, MISSED, lane);
            return;
        };
        let leaf = p.leaf.read(at);
        if opens_root && leaf != 0 {
            // The root's own queries, matched once per document.
            match_tops(p, leaf, row, lane);
        }
        d = 1;
        cur = to;
        state.set(1, to, lane);
        bundle.set(1, leaf, lane);
        tag_of.set(1, tag, lane);
        applied_lo.set(1, 0, lane);
        applied_hi.set(1, 0, lane);
        1
    } else {
        0
    };
    let mut i = begin;
    let mut window = 0u32;
    while i < end {
        let at = (i - begin) % WARP_SIZE;
        if at == 0 {
            let j = i + lane;
            window = if j < end { event_at(p, j as usize) } else { 0 };
        }
        let ev = shfl(window, at);
        i += 1;
        if ev & CLOSE_BIT == 0 {
            let tag = tag_of_event(p, ev);
            let at = (cur * p.tags + tag) as usize;
            let to = p.trans.read(at);
            let leaf = p.leaf.read(at);
            if to == NO_STATE || d + 1 >= p.depth_cap as usize {
                give_back(p, doc, if to == NO_STATE { MISSED } else { TOO_DEEP }, lane);
                return;
            }
            d += 1;
            cur = to;
            state.set(d, to, lane);
            bundle.set(d, leaf, lane);
            tag_of.set(d, tag, lane);
            applied_lo.set(d, 0, lane);
            applied_hi.set(d, 0, lane);
            continue;
        }
        if d <= floor {
            continue; // unbalanced close: ignored (documents are checked when parsed)
        }
        let up_state = state.get(d - 1);
        let t = tag_of.get(d);
        let id = bundle.get(d);
        let (lo, hi) = (applied_lo.get(d - 1), applied_hi.get(d - 1));
        // The tag's bit among the parent's children seen (tags past 64 are not
        // remembered: their bundles are matched at every close).
        let (bit_lo, bit_hi) = match t {
            0..32 => (1u32 << t, 0),
            32..64 => (0, 1u32 << (t - 32)),
            _ => (0, 0),
        };
        let fresh = id != 0 && lo & bit_lo == 0 && hi & bit_hi == 0;
        applied_lo.set(d - 1, lo | bit_lo, lane);
        applied_hi.set(d - 1, hi | bit_hi, lane);
        if fresh {
            match_tops(p, id, row, lane);
        }
        d -= 1;
        cur = up_state;
    }
}
