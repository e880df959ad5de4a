//! GPU kernels of holistic XML twig filtering (Absalyamov et al., §4), written once for
//! the GPU (`nvptx64`) and the host SIMT emulator.
//!
//! One thread per stack column (query node, §4.2); a thread block holds several queries
//! packed side by side (§4.4), each with a column for its dummy root `$`. Block
//! `(x, y)` of a launch filters query group `x` against document `y` of the batch: the
//! inter-document parallelism of §4.4 as one launch instead of one stream per document.
//!
//! Shared memory of a block (§4.5), `W = blockDim.x` columns:
//!
//! ```text
//! [ merged stack: depth_cap levels x W columns, 1 byte per entry (Table 3) ]
//! [ event chunk: CHUNK events staged from global memory                     ]
//! ```
//!
//! Merged stack entry (Table 3): the push half (bits 7, 6) and the pop half (bits 1, 0).
//!
//! | bit | field | meaning for column `j` at level `l` |
//! | --- | --- | --- |
//! | 7 | push childMatch | the path root..j matches with `j` at the element open at level `l` |
//! | 6 | push descMatch  | ... with `j` at that element or one of its ancestors |
//! | 1 | pop descMatch   | (`//` columns) the sub-twig of `j` matched at a proper descendant of that element |
//! | 0 | pop childMatch  | (`/` columns) the sub-twig of `j` matched at a child of that element |
//!
//! childrenMatch (§4.6): a column reports its pop bit into its own entry one level down,
//! and a split node reads the entries of its children — its children occupy contiguous
//! columns — and ANDs them. Every entry has exactly one writer, so no atomics are needed.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

use gpu_kernels::prelude::*;

pub mod dfa;

/// Events staged in shared memory per round (§4.5: "in small pieces").
pub const CHUNK: u32 = 1024;

/// Push childMatch bit of a merged stack entry (Table 3).
pub const PUSH_CHILD: u8 = 0x80;
/// Push descMatch bit.
pub const PUSH_DESC: u8 = 0x40;
/// Pop descMatch bit (reported by `//` columns).
pub const POP_DESC: u8 = 0x02;
/// Pop childMatch bit (reported by `/` columns).
pub const POP_CHILD: u8 = 0x01;

/// A kernel personality (§4.3, Table 2): everything one thread knows about its column.
///
/// `word` keeps Table 2's layout and uses its 11 padding bits:
///
/// | bits | field |
/// | --- | --- |
/// | 31 | IsLeaf |
/// | 30 | prefix relationship is `//` |
/// | 29 | has children with `/` |
/// | 28 | has children with `//` |
/// | 27..18 | prefix ID (column of the prefix node in the block, 10 bits) |
/// | 17 | the column is a dummy root `$` (padding in the paper) |
/// | 16 | the node test is `*` (padding in the paper) |
/// | 15 | the column is used (padding in the paper; unused lanes only keep pace) |
/// | 14..0 | tag ID (7 bits in the paper; 15 here for the wide encoding) |
///
/// `children` locates the node's childrenMatch entries (§4.6): the first child's column
/// (bits 15..0) and the number of children (bits 31..16).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct Personality {
    pub word: u32,
    pub children: u32,
}

impl Personality {
    pub const IS_LEAF: u32 = 1 << 31;
    pub const PREFIX_DESC: u32 = 1 << 30;
    pub const CHILD_SLASH: u32 = 1 << 29;
    pub const CHILD_DESC: u32 = 1 << 28;
    pub const PREFIX_SHIFT: u32 = 18;
    pub const PREFIX_MASK: u32 = 0x3ff;
    pub const IS_ROOT: u32 = 1 << 17;
    pub const WILDCARD: u32 = 1 << 16;
    pub const USED: u32 = 1 << 15;
    pub const TAG_MASK: u32 = 0x7fff;

    #[inline(always)]
    pub fn has(self, flag: u32) -> bool {
        self.word & flag != 0
    }
    #[inline(always)]
    pub fn prefix(self) -> u32 {
        (self.word >> Self::PREFIX_SHIFT) & Self::PREFIX_MASK
    }
    #[inline(always)]
    pub fn tag(self) -> u32 {
        self.word & Self::TAG_MASK
    }
    #[inline(always)]
    pub fn first_child(self) -> u32 {
        self.children & 0xffff
    }
    #[inline(always)]
    pub fn num_children(self) -> u32 {
        self.children >> 16
    }
}

/// An encoded event word: 1 byte (Table 1: bit 7 close, 7-bit tag) or 2 bytes (bit 15
/// close, 15-bit tag).
pub trait EventWord: Copy {
    fn is_open(self) -> bool;
    fn tag(self) -> u32;
}
impl EventWord for u8 {
    #[inline(always)]
    fn is_open(self) -> bool {
        self & 0x80 == 0
    }
    #[inline(always)]
    fn tag(self) -> u32 {
        (self & 0x7f) as u32
    }
}
impl EventWord for u16 {
    #[inline(always)]
    fn is_open(self) -> bool {
        self & 0x8000 == 0
    }
    #[inline(always)]
    fn tag(self) -> u32 {
        (self & 0x7fff) as u32
    }
}

/// Bytes of dynamic shared memory a launch needs: the merged stack rounded up to 16
/// bytes, then the event chunk.
pub const fn shared_bytes(depth_cap: u32, width: u32, event_bytes: u32) -> u32 {
    stack_bytes(depth_cap, width) + CHUNK * event_bytes
}

/// Bytes of the merged stack, rounded up to 16.
pub const fn stack_bytes(depth_cap: u32, width: u32) -> u32 {
    (depth_cap * width).div_ceil(16) * 16
}

/// What one thread knows about its column, decoded once from its [`Personality`] and
/// kept in registers (§4.5).
#[derive(Clone, Copy)]
struct Column {
    used: bool,
    root: bool,
    desc_axis: bool,
    wildcard: bool,
    tag: u32,
    prefix: usize,
    first: usize,
    last: usize,
    t: usize,
}

impl Column {
    #[inline(always)]
    fn new(me: Personality, t: u32) -> Self {
        let first = me.first_child() as usize;
        Column {
            used: me.has(Personality::USED),
            root: me.has(Personality::IS_ROOT),
            desc_axis: me.has(Personality::PREFIX_DESC),
            wildcard: me.has(Personality::WILDCARD),
            tag: me.tag(),
            prefix: me.prefix() as usize,
            first,
            last: first + me.num_children() as usize,
            t: t as usize,
        }
    }

    /// Push event opening `tag` at `level` (Alg. 1 lines 3-11, Fig. 5): reads the
    /// prefix's and its own entries one level down, writes its own entry at `level`.
    ///
    /// # Safety
    /// `stack` is the block's stack in shared memory, `ws` its row width, `depth_cap`
    /// rows deep; `1 <= level < depth_cap`.
    #[inline(always)]
    unsafe fn push(&self, stack: *mut u8, ws: usize, level: usize, tag: u32) {
        // SAFETY: the caller's contract: `level - 1` and `level` are rows of `stack`.
        unsafe {
            let below = *stack.add((level - 1) * ws + self.t);
            let entry = if self.root {
                PUSH_DESC
            } else {
                let pe = *stack.add((level - 1) * ws + self.prefix);
                let tag_ok = self.wildcard || tag == self.tag;
                let need = if self.desc_axis {
                    PUSH_DESC
                } else {
                    PUSH_CHILD
                };
                let matched = tag_ok && pe & need != 0;
                let mut e = if matched { PUSH_CHILD } else { 0 };
                if matched || below & PUSH_DESC != 0 {
                    e |= PUSH_DESC;
                }
                e
            };
            // The pop half starts at its default, 0 (§3.3).
            *stack.add(level * ws + self.t) = entry;
        }
    }

    /// Whether the node's sub-twig matched at the element closing now: the path up to
    /// the node matched there (`entry`'s push childMatch) and every child's
    /// childrenMatch entry in `row` (this level's row of the stack) is set (§4.6).
    ///
    /// # Safety
    /// `row` is a row of the stack, with this column's children's entries.
    #[inline(always)]
    unsafe fn matched_here(&self, entry: u8, row: *const u8) -> bool {
        let mut s = entry & PUSH_CHILD != 0;
        let mut c = self.first;
        while s && c < self.last {
            s = unsafe { *row.add(c) } & (POP_CHILD | POP_DESC) != 0;
            c += 1;
        }
        s
    }

    /// The pop bit reported one level down (Alg. 1 lines 14-23, Fig. 6): diagonally for
    /// `/`, and carried downwards from descendants for `//`.
    #[inline(always)]
    fn report(&self, entry: u8, s: bool) -> u8 {
        if self.desc_axis {
            if s || entry & POP_DESC != 0 {
                POP_DESC
            } else {
                0
            }
        } else if s {
            POP_CHILD
        } else {
            0
        }
    }

    /// Pop event closing the element at `level`: reads this level's row, ORs its
    /// report into its own entry one level down.
    ///
    /// # Safety
    /// As [`push`](Self::push): `1 <= level < depth_cap`.
    #[inline(always)]
    unsafe fn pop(&self, stack: *mut u8, ws: usize, level: usize) {
        // SAFETY: the caller's contract: `level - 1` and `level` are rows of `stack`.
        unsafe {
            let e = *stack.add(level * ws + self.t);
            let s = self.matched_here(e, stack.add(level * ws));
            let r = self.report(e, s);
            if r != 0 {
                *stack.add((level - 1) * ws + self.t) |= r;
            }
        }
    }

    /// The dummy root's verdict (§3.3): all its children reported into `row` (level 0).
    ///
    /// # Safety
    /// As [`matched_here`](Self::matched_here).
    #[inline(always)]
    unsafe fn root_matched(&self, row: *const u8) -> bool {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.matched_here(PUSH_CHILD, row) }
    }
}

/// Where a segmented run (the document-segment engine) reads each segment's start path
/// and writes its partial stacks; unused (null) for whole documents.
#[derive(Clone, Copy)]
struct Segments {
    /// `path[seg * depth_cap + l]`: tag of the element open at level `l` (1..=depth)
    /// when segment `seg` starts.
    path: *const u16,
    /// Depth at which each segment starts.
    depth: *const u32,
    /// `close_rec[(seg * depth_cap + l) * columns + col]`: the entry of an element
    /// opened before the segment, at the moment the segment closes it.
    close_rec: *mut u8,
    /// `end_rec[...]`: every entry of levels 0..=end depth when the segment ends.
    end_rec: *mut u8,
}

/// Algorithm 1 for one (query group, document or segment) pair; the kernels below only
/// pick the event width and the mode. Thread `t` owns stack column `t` of block
/// `blockIdx.x`'s query group.
///
/// Memory: reads `personalities[blockIdx.x * W + t]` once (global, coalesced, kept in
/// registers); all threads stage the document's events `events[doc_start[y]..]` into
/// shared memory chunk by chunk (coalesced); the merged stack lives in shared memory;
/// whole documents: only root columns write to global memory, once, at the end
/// (`atomicOr` of one bit into `matches[y * words_per_doc + result_index / 32]`);
/// segments: every column writes its partial entries to `close_rec` / `end_rec`.
///
/// # Safety
/// The launch's buffers as its kernels' docs state (`personalities` and
/// `result_index` as built by the host, `doc_start` one entry per document plus one,
/// `matches` `words_per_doc` words per document), the block's dynamic shared memory
/// of [`shared_bytes`] for `depth_cap`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn filter_document<E: EventWord, const SEG: bool>(
    personalities: *const Personality,
    result_index: *const u32,
    events: *const E,
    doc_start: *const u32,
    depth_cap: u32,
    matches: *mut u32,
    words_per_doc: u32,
    seg: Segments,
) {
    // SAFETY: the caller's contract; every index below stays within it (depth below
    // `depth_cap`, columns below the block's width).
    unsafe {
        let w = block_dim_x();
        let t = thread_idx_x();
        let col = (block_idx_x() * w + t) as usize;
        let columns = (grid_dim_x() * w) as usize;
        let doc = block_idx_y();
        let me = Column::new(*personalities.add(col), t);

        let stack = dynamic_shared::<u8>();
        let chunk = stack.add(stack_bytes(depth_cap, w) as usize) as *mut E;
        let ws = w as usize;
        let cap = depth_cap as usize;

        // Level 0 is the document node: only dummy roots are matched there (§3.2).
        *stack.add(me.t) = if me.root { PUSH_CHILD | PUSH_DESC } else { 0 };
        let mut level: usize = 0;
        // Segments: replay the opens of the path open at the segment's start; closes
        // down to `floor` close elements opened before the segment ("foreign").
        let mut floor = 0usize;
        if SEG {
            let d = *seg.depth.add(doc as usize) as usize;
            while level < d && level + 1 < cap {
                sync_threads();
                level += 1;
                if me.used {
                    me.push(
                        stack,
                        ws,
                        level,
                        *seg.path.add(doc as usize * cap + level) as u32,
                    );
                }
            }
            floor = level;
        }

        let start = *doc_start.add(doc as usize);
        let end = *doc_start.add(doc as usize + 1);
        let mut base = start;
        while base < end {
            let len = if end - base < CHUNK {
                end - base
            } else {
                CHUNK
            };
            // The previous chunk is consumed by every thread before it is overwritten.
            sync_threads();
            let mut i = t;
            while i < len {
                *chunk.add(i as usize) = *events.add((base + i) as usize);
                i += w;
            }
            sync_threads();
            let mut k = 0;
            while k < len {
                let ev = *chunk.add(k as usize);
                if ev.is_open() {
                    level += 1;
                    if me.used && level < cap {
                        me.push(stack, ws, level, ev.tag());
                    }
                } else if SEG && level <= floor {
                    // A foreign element closes: its final pop state needs the segments
                    // before this one; record what this segment contributed.
                    if level >= 1 && level < cap {
                        *seg.close_rec
                            .add((doc as usize * cap + level) * columns + col) =
                            *stack.add(level * ws + me.t);
                    }
                    floor = level.saturating_sub(1);
                    level = floor;
                } else {
                    if me.used && !me.root && level >= 1 && level < cap {
                        me.pop(stack, ws, level);
                    }
                    level = level.saturating_sub(1);
                }
                // Every column's entries at this event's levels are written before any
                // column reads them at the next event.
                sync_threads();
                k += 1;
            }
            base += len;
        }
        // The last event's pop bits are visible (and an empty document's level 0 is
        // initialised) before they are read.
        sync_threads();
        if SEG {
            let mut l = 0;
            while l <= level && l < cap {
                *seg.end_rec.add((doc as usize * cap + l) * columns + col) =
                    *stack.add(l * ws + me.t);
                l += 1;
            }
        } else if me.used && me.root && me.root_matched(stack) {
            let q = *result_index.add(col);
            let word = matches.add((doc * words_per_doc + q / 32) as usize);
            atomic_or(word, 1 << (q % 32));
        }
    }
}

const NO_SEGMENTS: Segments = Segments {
    path: core::ptr::null(),
    depth: core::ptr::null(),
    close_rec: core::ptr::null_mut(),
    end_rec: core::ptr::null_mut(),
};

kernel! {
    /// Algorithm 1 (§4.2) on 1-byte events (Table 1): block (x, y) filters query group x
    /// against document y; thread t evaluates stack column t. Shared memory:
    /// `shared_bytes(depth_cap, blockDim.x, 1)`.
    pub fn filter_narrow(
        personalities: *const Personality,
        result_index: *const u32,
        events: *const u8,
        doc_start: *const u32,
        depth_cap: u32,
        matches: *mut u32,
        words_per_doc: u32,
    ) {
        filter_document::<u8, false>(
            personalities, result_index, events, doc_start, depth_cap, matches, words_per_doc, NO_SEGMENTS,
        );
    }

    /// Algorithm 1 on 2-byte events, for query sets naming more than 127 tags. Shared
    /// memory: `shared_bytes(depth_cap, blockDim.x, 2)`.
    pub fn filter_wide(
        personalities: *const Personality,
        result_index: *const u32,
        events: *const u16,
        doc_start: *const u32,
        depth_cap: u32,
        matches: *mut u32,
        words_per_doc: u32,
    ) {
        filter_document::<u16, false>(
            personalities, result_index, events, doc_start, depth_cap, matches, words_per_doc, NO_SEGMENTS,
        );
    }

    /// Document segments, phase 1 (beyond the paper: one document over many blocks): block
    /// (x, y) runs Algorithm 1 for query group x over segment y of one document
    /// (`events[seg_start[y]..seg_start[y + 1]]`), starting from the open path
    /// `path[y * depth_cap ..]` of depth `depth[y]` (replayed as push events). Pop
    /// state is partial at the segment's borders: each column records its entry when a
    /// foreign element closes (`close_rec`) and every entry at the segment's end
    /// (`end_rec`); [`fixup_segments`] composes them. Events are 2 bytes wide.
    pub fn filter_segments(
        personalities: *const Personality,
        events: *const u16,
        seg_start: *const u32,
        path: *const u16,
        depth: *const u32,
        depth_cap: u32,
        close_rec: *mut u8,
        end_rec: *mut u8,
    ) {
        let seg = Segments { path, depth, close_rec, end_rec };
        filter_document::<u16, true>(
            personalities, core::ptr::null(), events, seg_start, depth_cap, core::ptr::null_mut(), 0, seg,
        );
    }

    /// Document segments, phase 2: block x walks the segments of one document in order
    /// for query group x, composing their partial pop states. Thread t keeps column
    /// t's carried pop bits per open level in shared memory (`depth_cap x W` bytes). For
    /// segment k, `seg_info[3k..3k+3]` = (start depth d, lowest level m reached, end
    /// depth e): the foreign elements at levels d down to m+1 close in k — each one's
    /// pop bits are the carry OR'ed with k's `close_rec`, and it reports one level down
    /// exactly as a pop event does — then levels 0..=m take k's `end_rec` pop bits
    /// OR'ed in, and levels m+1..=e (elements opened in k) start from them. At the end
    /// root columns set their query's bit in `matches`.
    pub fn fixup_segments(
        personalities: *const Personality,
        result_index: *const u32,
        seg_info: *const u32,
        segments: u32,
        close_rec: *const u8,
        end_rec: *const u8,
        depth_cap: u32,
        matches: *mut u32,
    ) {
        let w = block_dim_x();
        let t = thread_idx_x();
        let col = (block_idx_x() * w + t) as usize;
        let columns = (grid_dim_x() * w) as usize;
        let me = Column::new(*personalities.add(col), t);
        let carry = dynamic_shared::<u8>();
        let ws = w as usize;
        let cap = depth_cap as usize;
        let mut l = 0;
        while l < cap {
            *carry.add(l * ws + me.t) = 0;
            l += 1;
        }
        let pop_bits = POP_CHILD | POP_DESC;
        let mut k = 0usize;
        while k < segments as usize {
            let d = *seg_info.add(3 * k) as usize;
            let m = *seg_info.add(3 * k + 1) as usize;
            let e = *seg_info.add(3 * k + 2) as usize;
            let mut l = d;
            while l > m && l < cap {
                let rec = *close_rec.add((k * cap + l) * columns + col);
                let mine = carry.add(l * ws + me.t);
                *mine |= rec & pop_bits;
                sync_threads();
                if me.used && !me.root {
                    let entry = (rec & !pop_bits) | *mine;
                    let s = me.matched_here(entry, carry.add(l * ws));
                    let r = me.report(entry, s);
                    *carry.add((l - 1) * ws + me.t) |= r;
                }
                sync_threads();
                l -= 1;
            }
            let mut l = 0;
            while l <= e && l < cap {
                let r = *end_rec.add((k * cap + l) * columns + col) & pop_bits;
                let mine = carry.add(l * ws + me.t);
                if l <= m {
                    *mine |= r;
                } else {
                    *mine = r;
                }
                l += 1;
            }
            sync_threads();
            k += 1;
        }
        sync_threads();
        if me.used && me.root && me.root_matched(carry) {
            let q = *result_index.add(col);
            atomic_or(matches.add((q / 32) as usize), 1 << (q % 32));
        }
    }

    /// Algorithm 1, warp-synchronous (beyond the paper): one warp per query group of
    /// 32 columns (no query straddles a warp), `blockDim.x / 32` groups per block, block
    /// row y = document y. Lanes exchange stack tops through warp shuffles and votes
    /// instead of shared memory and block barriers, so warps never wait for each other:
    ///
    /// - each lane keeps its column's top-of-stack entry in a register (`top`) and
    ///   pushes the older entries to its own column of the shared-memory stack;
    /// - push: the prefix's top arrives by `shfl(top, prefix)` (Fig. 5 reads
    ///   `pushStack[level - 1][prefixID]`);
    /// - pop: one `ballot` of "my pop bit is set" gives every split node its
    ///   childrenMatch entries at once (§4.6: its children are consecutive lanes);
    /// - events: each lane loads one of a window of 32 events (coalesced, a window
    ///   ahead of use); votes give the warp the window's open events and leaves as
    ///   masks, and the window's tags go round the warp once so that each lane holds a
    ///   mask of the events its node test accepts: no step waits for its event;
    /// - leaves: an open event followed at once by its close is a push and a pop in one
    ///   step (a lane sees it from the next lane's event), and a run of sibling leaves
    ///   is one step too (leaves change no push bit, so every leaf of the run sees the
    ///   same prefix tops): on record-oriented XML such as DBLP a record's open, its
    ///   fields and its close take three steps;
    /// - every step is straight-line code: the shuffle, the vote and the stack read are
    ///   all issued, then the step's kind selects push, pop or leaves.
    ///
    /// Memory: global reads of personalities (once) and events (coalesced, 1 byte per
    /// lane per 32 events); shared memory `depth_cap x blockDim.x` bytes, each lane
    /// touching only its own column; roots `atomicOr` one result bit at the end.
    pub fn filter_warp(
        personalities: *const Personality,
        result_index: *const u32,
        events: *const u8,
        doc_start: *const u32,
        depth_cap: u32,
        matches: *mut u32,
        words_per_doc: u32,
    ) {
        warp_document::<u8, false>(
            personalities, result_index, events, doc_start, depth_cap, matches, words_per_doc, NO_SEGMENTS,
        );
    }

    /// [`filter_warp`] on 2-byte events (more than 127 tags).
    pub fn filter_warp_wide(
        personalities: *const Personality,
        result_index: *const u32,
        events: *const u16,
        doc_start: *const u32,
        depth_cap: u32,
        matches: *mut u32,
        words_per_doc: u32,
    ) {
        warp_document::<u16, false>(
            personalities, result_index, events, doc_start, depth_cap, matches, words_per_doc, NO_SEGMENTS,
        );
    }

    /// [`filter_segments`] with the warp-synchronous kernel: one warp per (query group,
    /// segment); records `close_rec` / `end_rec` for [`fixup_segments`] launched with
    /// 32-thread blocks over the same (padded) query groups.
    pub fn filter_segments_warp(
        personalities: *const Personality,
        events: *const u16,
        seg_start: *const u32,
        path: *const u16,
        depth: *const u32,
        depth_cap: u32,
        close_rec: *mut u8,
        end_rec: *mut u8,
    ) {
        let seg = Segments { path, depth, close_rec, end_rec };
        warp_document::<u16, true>(
            personalities, core::ptr::null(), events, seg_start, depth_cap, core::ptr::null_mut(), 0, seg,
        );
    }
}

/// Widening an event word to a shuffle operand and back.
pub trait ShuffleWord: EventWord {
    fn to_u32(self) -> u32;
    fn from_u32(v: u32) -> Self;
}
impl ShuffleWord for u8 {
    #[inline(always)]
    fn to_u32(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn from_u32(v: u32) -> Self {
        v as u8
    }
}
impl ShuffleWord for u16 {
    #[inline(always)]
    fn to_u32(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn from_u32(v: u32) -> Self {
        v as u16
    }
}

/// What one lane of the warp kernel knows about its column, as masks so that a step of
/// Algorithm 1 is straight-line code: no lane takes a branch of its own.
#[derive(Clone, Copy)]
struct WarpLane {
    /// Push childMatch/descMatch bit the prefix's entry must have (Fig. 5): `PUSH_DESC`
    /// for a `//` column, `PUSH_CHILD` for a `/` column, 0 for a dummy root or an unused
    /// lane (which then never match: a root's entry stays `PUSH_DESC` below level 0).
    need: u32,
    tag: u32,
    wildcard: bool,
    prefix: u32,
    /// The pop bit this column reports one level down (Fig. 6), 0 for roots and unused.
    pop_bit: u32,
    /// `POP_DESC` for a `//` column (its descendants' reports carry down), else 0.
    carry: u32,
    /// `pop_bit` when the column has no children (a leaf element can match it), else 0.
    leaf_bit: u32,
    /// The lanes of the column's children (§4.6: consecutive), as a lane mask.
    kids: u32,
}

impl WarpLane {
    #[inline(always)]
    fn new(me: &Column) -> Self {
        let reports = me.used && !me.root;
        let n_kids = (me.last - me.first) as u32;
        let kids = if n_kids > 0 {
            (((1u64 << n_kids) - 1) << (me.first & 31)) as u32
        } else {
            0
        };
        let (need, pop_bit) = match (reports, me.desc_axis) {
            (false, _) => (0, 0),
            (true, true) => (PUSH_DESC as u32, POP_DESC as u32),
            (true, false) => (PUSH_CHILD as u32, POP_CHILD as u32),
        };
        WarpLane {
            need,
            tag: me.tag,
            wildcard: me.wildcard,
            prefix: me.prefix as u32 & 31,
            pop_bit,
            carry: if me.desc_axis { pop_bit } else { 0 },
            leaf_bit: if kids == 0 { pop_bit } else { 0 },
            kids,
        }
    }

    /// Whether an element named `tag` passes the column's node test.
    #[inline(always)]
    fn test(&self, tag: u32) -> bool {
        self.wildcard || tag == self.tag
    }

    /// The new top when an element opens below `top` (Fig. 5), given whether its name
    /// passes the node test and the prefix's top `pe`: childMatch and descMatch when
    /// the column matches, else the descMatch inherited from below. For a leaf (the
    /// element closes at once) the column keeps `top` and, matching with no children to
    /// wait for, ORs its pop bit into it.
    #[inline(always)]
    fn opened(&self, tag_ok: bool, pe: u32, top: u32, leaf: bool) -> u32 {
        let matched = tag_ok && pe & self.need != 0;
        if leaf {
            top | if matched { self.leaf_bit } else { 0 }
        } else if matched {
            (PUSH_CHILD | PUSH_DESC) as u32
        } else {
            top & PUSH_DESC as u32
        }
    }

    /// The new top when `top`'s element closes onto `below` (Fig. 6): the column reports
    /// when its path matched there and all its children did (`reported` is the warp's
    /// vote of set pop bits: childrenMatch of every split node at once, §4.6); a `//`
    /// column also carries its descendants' reports down. The parts that do not need
    /// the vote are computed while it is in flight.
    #[inline(always)]
    fn closed(&self, top: u32, below: u32, reported: u32) -> u32 {
        let kept = below | (top & self.carry);
        let own = if top & PUSH_CHILD as u32 != 0 {
            self.pop_bit
        } else {
            0
        };
        kept | if reported & self.kids == self.kids {
            own
        } else {
            0
        }
    }

    /// Whether all the column's children reported (the dummy root's verdict, §3.3).
    #[inline(always)]
    fn children_matched(&self, reported: u32) -> bool {
        reported & self.kids == self.kids
    }
}

/// The body of [`filter_warp`] and [`filter_segments_warp`]: lane `l` of warp `w` in
/// block (x, y) owns column `l` of query group `x * warps_per_block + w` (personality
/// prefix and children IDs are lane numbers) and filters document (or segment) `y`.
///
/// The warp reads its events 32 at a time (one per lane, the next 32 loaded while these
/// are filtered), and walks them in *steps*: an open event, a close event, or a run of
/// sibling *leaves* — open events whose close follows at once (most elements of
/// record-oriented XML such as DBLP). A leaf is a push and a pop in one: the element has
/// no children, so its pop reads none of the stack and only a column without children
/// can report from it; and it changes no push bit, so the leaves of a run all see the
/// same prefix tops and take one step. Each lane finds whether its event opens a leaf by
/// looking at the next lane's event; votes then give the warp the masks of the window's
/// leaves and open events, from which each step's extent and kind follow.
///
/// # Safety
/// As [`filter_document`], with the shared memory of [`stack_bytes`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn warp_document<E: ShuffleWord, const SEG: bool>(
    personalities: *const Personality,
    result_index: *const u32,
    events: *const E,
    doc_start: *const u32,
    depth_cap: u32,
    matches: *mut u32,
    words_per_doc: u32,
    seg: Segments,
) {
    // SAFETY: the caller's contract; every index below stays within it.
    unsafe {
        let w = block_dim_x();
        let t = thread_idx_x();
        let lane = lane_id();
        let col = (block_idx_x() * w + t) as usize;
        let columns = grid_dim_x() as usize * w as usize;
        let doc = block_idx_y();
        let me = Column::new(*personalities.add(col), lane);
        let wl = WarpLane::new(&me);
        let stack = dynamic_shared::<u8>().add(t as usize);
        let cap = depth_cap;
        let pop_bits = (POP_CHILD | POP_DESC) as u32;
        // This lane's entry at `level` of the shared-memory stack (the top is `top`).
        let entry = |level: u32| stack.add((level * w) as usize);

        // Level 0 (the document node): only dummy roots are matched (§3.2).
        let mut top: u32 = if me.root {
            (PUSH_CHILD | PUSH_DESC) as u32
        } else {
            0
        };
        let mut level: u32 = 0;
        // Push (Fig. 5): the prefix's top arrives by shuffle, our top goes on the stack.
        let open = |top: &mut u32, level: &mut u32, tag: u32| {
            let pe = shfl(*top, wl.prefix);
            if *level < cap {
                *entry(*level) = *top as u8;
            }
            *level += 1;
            *top = wl.opened(wl.test(tag), pe, *top, false);
        };
        // Segments: replay the open path at the segment's start (see `filter_document`).
        let mut floor = 0u32;
        if SEG {
            let d = *seg.depth.add(doc as usize);
            while level < d && level + 1 < cap {
                let tag = *seg.path.add((doc * cap + level + 1) as usize) as u32;
                open(&mut top, &mut level, tag);
            }
            floor = level;
        }
        let start = *doc_start.add(doc as usize);
        let end = *doc_start.add(doc as usize + 1);
        let load = |base: u32| -> u32 {
            if base + lane < end {
                (*events.add((base + lane) as usize)).to_u32()
            } else {
                0
            }
        };
        // Events of this window (`mine`) and the next, loaded one window ahead of use.
        let mut base = start;
        let mut mine = load(base);
        let mut next = load(base + WARP_SIZE);
        // The first event of this window closes a leaf opened by the previous window.
        let mut consumed_first = 0u32;
        while base < end {
            let n = if end - base < WARP_SIZE {
                end - base
            } else {
                WARP_SIZE
            };
            let later = load(base + 2 * WARP_SIZE);
            // The event after mine: the next lane's, or the next window's first.
            let after = shfl_down(mine, 1);
            let next_first = shfl(next, 0);
            let (follow, has_follow) = if lane == WARP_SIZE - 1 {
                (next_first, base + WARP_SIZE < end)
            } else {
                (after, lane + 1 < n)
            };
            let opening = lane < n && E::from_u32(mine).is_open();
            let leaf = opening && has_follow && !E::from_u32(follow).is_open();
            let leaves = ballot(leaf);
            let opens = ballot(opening);
            let valid = if n == WARP_SIZE {
                u32::MAX
            } else {
                (1u32 << n) - 1
            };
            let mut steps = valid & !((leaves << 1) | consumed_first);
            consumed_first = leaves >> 31;
            // Bit j: event j's name passes this column's node test (the window's tags
            // go round the warp once, so no step waits for its event).
            let tag = E::from_u32(mine).tag();
            let mut hits = 0u32;
            let mut j = 0;
            while j < WARP_SIZE {
                hits |= ((shfl(tag, j) == wl.tag) as u32) << j;
                j += 1;
            }
            if wl.wildcard {
                hits = u32::MAX;
            }

            // Walk the steps in order. Consecutive leaves (siblings) are one step: a
            // leaf changes no push bit, so each of them sees the same prefix tops, and
            // the column matches one of them iff its prefix allows it and one name
            // passes the test.
            while steps != 0 {
                let bit = steps & steps.wrapping_neg();
                let others = steps & !leaves;
                let is_leaf = leaves & bit != 0;
                let run = if is_leaf {
                    steps & leaves & (others & others.wrapping_neg()).wrapping_sub(1)
                } else {
                    bit
                };
                steps &= !run;
                let is_open = opens & bit != 0;
                if SEG && !is_open && level <= floor {
                    // A foreign element closes: record this segment's part of its entry.
                    if level >= 1 && level < cap {
                        *seg.close_rec
                            .add((doc * cap + level) as usize * columns + col) = top as u8;
                    }
                    level = level.saturating_sub(1);
                    floor = level;
                    top = if level < cap { *entry(level) as u32 } else { 0 };
                } else {
                    // One step as straight-line code (every lane, whatever the event):
                    // the prefix's top (push, Fig. 5), the vote of pop bits (pop, Fig. 6)
                    // and the entry below are all fetched, then the event picks.
                    let pe = shfl(top, wl.prefix);
                    let reported = ballot(top & pop_bits != 0);
                    let below = level.wrapping_sub(1);
                    let below = if below < cap { *entry(below) as u32 } else { 0 };
                    // Only an open event needs `top` on the stack; for the others the
                    // slot at `level` is dead (a pop leaves it, a leaf never reads it).
                    if level < cap {
                        *entry(level) = top as u8;
                    }
                    // Both outcomes, then a select (no branch for the compiler to keep).
                    let opened = wl.opened(hits & run != 0, pe, top, is_leaf);
                    let closed = wl.closed(top, below, reported);
                    top = if is_open { opened } else { closed };
                    let up = (is_open && !is_leaf) as u32;
                    let down = (!is_open && level > 0) as u32;
                    level = level + up - down;
                }
            }
            mine = next;
            next = later;
            base += n;
        }
        if SEG {
            let mut l = 0;
            while l <= level && l < cap {
                let e = if l == level { top as u8 } else { *entry(l) };
                *seg.end_rec.add((doc * cap + l) as usize * columns + col) = e;
                l += 1;
            }
            return;
        }
        // The dummy root's verdict (§3.3): all its children reported to level 0.
        let reported = ballot(top & pop_bits != 0);
        if me.used && me.root && wl.children_matched(reported) {
            let q = *result_index.add(col);
            atomic_or(
                matches.add((doc * words_per_doc + q / 32) as usize),
                1 << (q % 32),
            );
        }
    }
}
