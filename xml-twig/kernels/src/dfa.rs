//! The lazy DFA's warm path on the GPU (beyond the paper): a batch of documents, one warp
//! per document, each walking its events through a frozen copy of the automaton that
//! the CPU filter (`baselines::lazy_dfa`, after XMLTK: Green et al., TODS 2004) built
//! lazily, with its word-parallel twig join.
//!
//! The paper's kernels give a thread to every query node and step all of them at every
//! event, so their work grows with the queries. Here an event costs what it costs the
//! CPU's lazy DFA once warm: an open is one transition load; a close ORs its element's
//! memoized leaf bundle into the parent's accumulator and, where the element received
//! reports, joins them a word at a time. The warp's lanes share the words of a join or
//! a bundle; the walk itself (the same loads on every lane, broadcast) is sequential
//! per document, and documents run side by side, as many as the batch has.
//!
//! The automaton is frozen: a transition the CPU never built ([`NO_STATE`]) stops the
//! document with [`MISSED`] (and one deeper than [`MAX_DEPTH`] with [`TOO_DEEP`]), and
//! the host filters it on the CPU, where the lazy DFA builds what was missing: the lazy
//! construction stays on the CPU, the warm path runs here.
//!
//! Accumulators are 32-bit words here (the CPU's are 64-bit; bit numbers are the same:
//! bit `b` of the accumulator is bit `b % 32` of word `b / 32`). Each document owns
//! `depth_cap` accumulators of `width` words, one per stack level: level `d` holds the
//! accumulator of the element open at depth `d` once it received a report (copied from
//! the template then). They live in shared memory when a block's fit
//! ([`DfaParams::acc_shared`]; a join's reads and a bundle's ORs are then shared-memory
//! accesses), else in global memory.

use gpu_kernels::prelude::*;
use gpu_kernels::{DevPtr, DevPtrMut, KernelStruct};

/// A transition the CPU has not built.
pub const NO_STATE: u32 = u32::MAX;
/// A join node whose satisfaction matches its query (no child bit to set): `jout`'s slot.
pub const NO_SLOT: u32 = u32::MAX;
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

/// The frozen automaton, a batch of documents and the outputs of [`filter_dfa`].
/// Spans are `(start, len)` pairs into the sparse word arrays.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DfaParams<'a> {
    /// Wide events of the batch (bit 15: close; bits 0..15: tag).
    pub events: DevPtr<'a, u16>,
    /// Document `d`'s events are `events[doc_start[d]..doc_start[d + 1]]`.
    pub doc_start: DevPtr<'a, u32>,
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
    /// `n_docs * depth_cap * width` words of accumulators (unused when `acc_shared`).
    pub accs: DevPtrMut<'a, u32>,
    /// `n_docs * words_per_doc`: bit `q` of a document's row, internal query `q` matched.
    pub matched: DevPtrMut<'a, u32>,
    /// Per document: [`DONE`], [`MISSED`] or [`TOO_DEEP`].
    pub status: DevPtrMut<'a, u32>,
    pub n_docs: u32,
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
}

// SAFETY: `#[repr(C)]`; the fields are device pointers and integers; `Host<'a>` differs
// only in the lifetime.
unsafe impl KernelStruct for DfaParams<'static> {
    type Host<'a> = DfaParams<'a>;
}

/// Bytes of accumulators a launch of `n_docs` documents needs.
pub const fn accumulator_bytes(n_docs: u32, depth_cap: u32, width: u32) -> u64 {
    n_docs as u64 * depth_cap as u64 * width as u64 * 4
}

kernel! {
    /// The lazy DFA's filter over a batch (module docs): warp `w` of block `b` filters
    /// document `b * (blockDim.x / 32) + w`.
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
    /// Memory: the tables in global memory (read only, cached), each document's events
    /// once, its accumulators (`depth_cap * width` words of shared memory, or of `accs`,
    /// touched only by its warp, `__syncwarp` between a write and a read by another
    /// lane), its row of
    /// `matched` (atomic OR: lanes may set bits of one word) and its `status` (lane 0).
    pub fn filter_dfa(p: DfaParams<'static>) {
        let wpb = block_dim_x() / WARP_SIZE;
        let doc = block_idx_x() * wpb + warp_id();
        if doc >= p.n_docs {
            return;
        }
        dfa_document(&p, doc);
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

/// Document `doc`'s walk by the calling warp ([`filter_dfa`]'s docs).
///
/// Written for latency (one warp per scheduler on a batch of a few hundred documents,
/// so every dependent load is paid in full): the current state stays in a register, a
/// leaf bundle's words are loaded in one round per lane (3 [`PART`]s of words each) before
/// any is ORed, together with the template's words when the parent has no accumulator
/// yet, and a join loads [`JOIN_ROUND`] of its active words per lane before testing
/// them against the planes, whose bounds the warp holds in registers.
///
/// # Safety
/// `p` holds a launch's parameters as the host engine builds them (every table index
/// checked by `DfaTables::check`, `depth_cap <= MAX_DEPTH`, the accumulators sized for
/// the block or the batch), `doc < p.n_docs`, and no other warp filters `doc`.
#[inline(always)]
unsafe fn dfa_document(p: &DfaParams<'static>, doc: u32) {
    let lane = lane_id();
    let width = p.width as usize;
    let own_levels = p.depth_cap as usize * width;
    let accs: *mut u32 = if p.acc_shared != 0 {
        dynamic_shared::<u32>().add(warp_id() as usize * own_levels)
    } else {
        p.accs.ptr().add(doc as usize * own_levels)
    };
    let row = p.matched.ptr().add(doc as usize * p.words_per_doc as usize);
    let begin = p.doc_start.read(doc as usize);
    let end = p.doc_start.read(doc as usize + 1);
    let mut plane_off = [0u32; PLANES_HELD];
    let mut plane_bits = [0u32; PLANES_HELD];
    for m in 0..PLANES_HELD {
        if (m as u32) < p.n_planes {
            plane_off[m] = p.planes.read(2 * m);
            plane_bits[m] = p.planes.read(2 * m + 1);
        }
    }
    let mut state = [0u32; MAX_DEPTH as usize];
    let mut bundle = [0u32; MAX_DEPTH as usize];
    // The tag of the element open at each depth, and the tags of its children whose
    // leaf bundles it received.
    let mut tag_of = [0u32; MAX_DEPTH as usize];
    let mut applied = [0u64; MAX_DEPTH as usize];
    // Bit d: the element open at depth d has an accumulator.
    let mut has: u64 = 0;
    state[0] = START_STATE;
    // The state of the element open at depth `d` (`state[d]`, held in a register).
    let mut cur = START_STATE;
    let mut d = 0usize;
    let mut i = begin;
    // The events a window of 32 at a time, one per lane (one coalesced load), each
    // handed round by a shuffle when its turn comes.
    let mut window = 0u32;
    while i < end {
        let at = (i - begin) % WARP_SIZE;
        if at == 0 {
            let j = i + lane;
            window = if j < end {
                p.events.read(j as usize) as u32
            } else {
                0
            };
        }
        let ev = shfl(window, at);
        i += 1;
        if ev & CLOSE_BIT == 0 {
            let mut tag = ev & (CLOSE_BIT - 1);
            if tag >= p.tags {
                tag = 0; // a name no query uses: only `*` and `//` see it
            }
            let at = (cur * p.tags + tag) as usize;
            let to = p.trans.read(at);
            let leaf = p.leaf.read(at);
            if to == NO_STATE || d + 1 >= p.depth_cap as usize {
                if lane == 0 {
                    let s = if to == NO_STATE { MISSED } else { TOO_DEEP };
                    store(p.status.ptr(), doc as usize, s);
                }
                return;
            }
            d += 1;
            cur = to;
            state[d] = to;
            bundle[d] = leaf;
            has &= !(1u64 << d);
            tag_of[d] = tag;
            applied[d] = 0;
            continue;
        }
        if d == 0 {
            continue; // unbalanced close: ignored (documents are checked when parsed)
        }
        let up_state = state[d - 1];
        let acc = accs.add(d * width);
        let pacc = accs.add((d - 1) * width);
        if has >> d & 1 == 1 {
            // The twig join of an element that received reports.
            if has >> (d - 1) & 1 == 0 {
                init_acc(p, pacc, lane);
                has |= 1u64 << (d - 1);
            }
            sync_warp();
            let own = cur as usize * 4;
            let (s0, n0) = (p.masks.read(own), p.masks.read(own + 1));
            let mut k = lane;
            while k < n0 {
                // This lane's next words of the state's active mask, loaded together.
                let mut wv = [0u32; JOIN_ROUND as usize];
                let mut bv = [0u32; JOIN_ROUND as usize];
                for u in 0..JOIN_ROUND as usize {
                    let kk = k + u as u32 * WARP_SIZE;
                    if kk < n0 {
                        wv[u] = p.sparse_word.read((s0 + kk) as usize);
                        bv[u] = p.sparse_bits.read((s0 + kk) as usize);
                    }
                }
                for _ in 0..JOIN_ROUND {
                    // Take the round's first word and shift the rest down: fixed
                    // indices keep the round in registers.
                    let (w, mut s) = (wv[0], bv[0]);
                    for u in 1..JOIN_ROUND as usize {
                        wv[u - 1] = wv[u];
                        bv[u - 1] = bv[u];
                    }
                    if s == 0 {
                        continue; // past the mask's end, or no node in this word
                    }
                    s &= load(acc, w as usize);
                    // Planes 1.. (a node of fewer children has ones there in the
                    // template); a plane numbering none of these nodes ends the scan.
                    let mut ended = false;
                    for m in 1..PLANES_HELD {
                        if m as u32 >= p.n_planes || s == 0 || plane_bits[m] <= 32 * w {
                            ended = true;
                            break;
                        }
                        s &= load(acc, (plane_off[m] + w) as usize);
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
        let id = bundle[d];
        let t = tag_of[d];
        let bit = if t < TAG_BITS { 1u64 << t } else { 0 };
        let fresh = id != 0 && applied[d - 1] & bit == 0;
        applied[d - 1] |= bit;
        if fresh {
            let b = id as usize * 4;
            let (ds, dn) = (p.bundles.read(b), p.bundles.read(b + 1));
            let (ts, tn) = (p.bundles.read(b + 2), p.bundles.read(b + 3));
            let new_parent = has >> (d - 1) & 1 == 0;
            if p.dense_bundles != 0 {
                // Lane `l` owns words `l`, `l + 32`, ...: a round's loads (the bundle's
                // words, and the template's for a parent without an accumulator yet)
                // are issued before the header is needed, then plain stores.
                let from = id as usize * width;
                let mut w0 = 0u32;
                while w0 < p.width {
                    let step = PART * WARP_SIZE;
                    let a = load_part(p, from, w0 + lane, new_parent);
                    let b = load_part(p, from, w0 + step + lane, new_parent);
                    let c = load_part(p, from, w0 + 2 * step + lane, new_parent);
                    if dn > 0 {
                        or_part(p, pacc, w0 + lane, a, new_parent);
                        or_part(p, pacc, w0 + step + lane, b, new_parent);
                        or_part(p, pacc, w0 + 2 * step + lane, c, new_parent);
                    }
                    w0 += 3 * step;
                }
                if dn > 0 {
                    has |= 1u64 << (d - 1);
                }
            } else if dn > 0 {
                if new_parent {
                    init_acc(p, pacc, lane);
                    has |= 1u64 << (d - 1);
                    sync_warp();
                }
                let mut k = lane;
                while k < dn {
                    let mut w = [0u32; UNROLL as usize];
                    let mut v = [0u32; UNROLL as usize];
                    for u in 0..UNROLL as usize {
                        let at = k + u as u32 * WARP_SIZE;
                        if at < dn {
                            w[u] = p.sparse_word.read((ds + at) as usize);
                            v[u] = p.sparse_bits.read((ds + at) as usize);
                        }
                    }
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
        d -= 1;
        cur = up_state;
    }
    if lane == 0 {
        store(p.status.ptr(), doc as usize, DONE);
    }
}
