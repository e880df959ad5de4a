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

/// Algorithm 1 for one (query group, document) pair; the kernels below only pick the
/// event width. Thread `t` owns stack column `t` of block `blockIdx.x`'s query group.
///
/// Memory: reads `personalities[blockIdx.x * W + t]` once (global, coalesced, kept in
/// registers); all threads stage the document's events `events[doc_start[y]..]` into
/// shared memory chunk by chunk (coalesced); the merged stack lives in shared memory;
/// only root columns write to global memory, once, at the end (`atomicOr` of one bit
/// into `matches[y * words_per_doc + result_index / 32]`).
#[inline(always)]
unsafe fn filter_document<E: EventWord>(
    personalities: *const Personality,
    result_index: *const u32,
    events: *const E,
    doc_start: *const u32,
    depth_cap: u32,
    matches: *mut u32,
    words_per_doc: u32,
) {
    unsafe {
        let w = block_dim_x();
        let t = thread_idx_x();
        let col = (block_idx_x() * w + t) as usize;
        let doc = block_idx_y();
        let me = *personalities.add(col);
        let used = me.has(Personality::USED);
        let root = me.has(Personality::IS_ROOT);
        let desc_axis = me.has(Personality::PREFIX_DESC);
        let wildcard = me.has(Personality::WILDCARD);
        let my_tag = me.tag();
        let prefix = me.prefix() as usize;
        let first = me.first_child() as usize;
        let last = first + me.num_children() as usize;

        let stack = dynamic_shared::<u8>();
        let chunk = stack.add(stack_bytes(depth_cap, w) as usize) as *mut E;
        let ws = w as usize;
        let tu = t as usize;

        // Level 0 is the document node: only dummy roots are matched there (§3.2).
        *stack.add(tu) = if root { PUSH_CHILD | PUSH_DESC } else { 0 };

        let start = *doc_start.add(doc as usize);
        let end = *doc_start.add(doc as usize + 1);
        let mut level: usize = 0;
        let cap = depth_cap as usize;
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
                    // Push event (Alg. 1 lines 3-11, Fig. 5).
                    level += 1;
                    if used && level < cap {
                        let below = *stack.add((level - 1) * ws + tu);
                        let entry = if root {
                            PUSH_DESC
                        } else {
                            let pe = *stack.add((level - 1) * ws + prefix);
                            let tag_ok = wildcard || ev.tag() == my_tag;
                            let need = if desc_axis { PUSH_DESC } else { PUSH_CHILD };
                            let matched = tag_ok && pe & need != 0;
                            let mut e = if matched { PUSH_CHILD } else { 0 };
                            if matched || below & PUSH_DESC != 0 {
                                e |= PUSH_DESC;
                            }
                            e
                        };
                        // The pop half starts at its default, 0 (§3.3).
                        *stack.add(level * ws + tu) = entry;
                    }
                } else {
                    // Pop event (Alg. 1 lines 12-23, Fig. 6).
                    if used && !root && level >= 1 && level < cap {
                        let e = *stack.add(level * ws + tu);
                        // Matched here: the path up to this node (push), and every
                        // child's childrenMatch entry (leaves have none).
                        let mut s = e & PUSH_CHILD != 0;
                        let mut c = first;
                        while s && c < last {
                            s = *stack.add(level * ws + c) & (POP_CHILD | POP_DESC) != 0;
                            c += 1;
                        }
                        // Report to the level below: diagonally for `/`, and carried
                        // downwards from descendants for `//`.
                        let report = if desc_axis {
                            if s || e & POP_DESC != 0 {
                                POP_DESC
                            } else {
                                0
                            }
                        } else if s {
                            POP_CHILD
                        } else {
                            0
                        };
                        if report != 0 {
                            let below = stack.add((level - 1) * ws + tu);
                            *below |= report;
                        }
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
        // The last event's pop bits are visible to the roots (and an empty document's
        // level 0 is initialised) before they are read.
        sync_threads();
        // The dummy root reports the whole twig (§3.3): all its children matched.
        if used && root {
            let mut s = true;
            let mut c = first;
            while s && c < last {
                s = *stack.add(c) & (POP_CHILD | POP_DESC) != 0;
                c += 1;
            }
            if s {
                let q = *result_index.add(col);
                let word = matches.add((doc * words_per_doc + q / 32) as usize);
                atomic_or(word, 1 << (q % 32));
            }
        }
    }
}

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
        filter_document::<u8>(personalities, result_index, events, doc_start, depth_cap, matches, words_per_doc);
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
        filter_document::<u16>(personalities, result_index, events, doc_start, depth_cap, matches, words_per_doc);
    }
}
