//! CLCB's GPU kernels (Cugola & Margara, "High-Performance Location-Aware
//! Publish-Subscribe on GPUs", Middleware 2012, §4), written once for the GPU (`nvptx64`)
//! and the host SIMT emulator.
//!
//! | kernel | paper | one thread per | reads | writes |
//! | --- | --- | --- | --- | --- |
//! | [`loc()`] | Alg. 1 `Loc`, steps S1a + S1b | filter | `BF`, `FPos`, `SqDist`, `InputBF`, `InputPos` | `FCount` (one byte per run), `SubsCount` |
//! | [`cont()`] | CCM's Alg. 1, step S2 | constraint of one event attribute's row | `Constraints`, `SizeC`, `FCount`, `Attrs` | `FCount` (atomic), `SubsBV` |
//! | [`zip()`] | Alg. 1 `Zip`, step S2a | subscription | `SubsBV` | `SubsBV` (reset), `Subs`, `SubsCount` |
//! | [`move_area()`] | §5 area update, one | (one thread) | its arguments | `FPos`, `SqDist` |
//! | [`move_areas()`] | §5 area update, batched | area update | the updates | `FPos`, `SqDist` |
//! | [`match_batch()`] | beyond the paper: many events per pass over the filters | filter | `BF`, `FPos`, `SqDist`, the constraints, the batch | (1) |
//! | [`grid_batch()`] | beyond the paper: the grid index for a batch | candidate filter near one event of the batch | (2) | (1) |
//! | [`zip_batch()`] | beyond the paper: `Zip` of a batch | 32-subscription word of one event | the bit vectors | (event, subscription) pairs |
//! | [`grid_match()`] | beyond the paper: grid-indexed matching | candidate filter near the event | the filter's tables and constraints | `SubsBV`, `Subs` |
//! | [`grid_reset()`] | beyond the paper: reset after [`grid_match()`] | matched subscription | `Subs` | `SubsBV`, the next counter |
//! | [`match_latency()`] | beyond the paper: S1a + S1b + content in one launch, nothing copied | filter | (3) | (4) |
//! | [`grid_latency()`] | beyond the paper: [`grid_match()`] in one launch | candidate filter near the event | (3), the candidate list | (4) |
//! | [`move_areas_packed()`] | beyond the paper: [`move_areas()`] with the packed areas | area update | the updates | `Areas`, `FPos`, `SqDist` |
//! | [`unpack_areas()`] | beyond the paper: `FPos`, `SqDist` from the packed areas | filter | `Areas` | `FPos`, `SqDist` |
//! | [`clcb_persistent()`] | beyond the paper: [`match_latency()`] as a persistent kernel (5) | filter (grid-stride) | (6) | (7) |
//!
//! (1) per-event subscription bit vectors, the pair count (zeroed). (2) the event, the
//! candidate list, the filter's tables and constraints. (3) `BF`, `Areas` ([`PackedArea`]),
//! a header in the launch parameters, the event in mapped host memory (blocks with a hit).
//! (4) `SubsSeq`, the list in mapped host memory, the counters. (5) fed through a ring in
//! mapped host memory; area moves and subscription switches travel through the same ring.
//! (6) the request (shared), `BF`, `Areas`, the filter's constraints, `SubsOff`.
//! (7) `SubsSeq`, the list, `Areas`, `SubsOff`, the answer in mapped host memory.
//!
//!
//! Module [`cells`]: the cell index (beyond the paper), the grid with content keys inside
//! its cells: [`cells::cells_match()`], a warp per event of a batch, and
//! [`cells::cells_write()`], which applies the host's changes after area moves.
//!
//! Device tables shared with the host are `#[repr(C)]` and `bytemuck::Pod` on the host.
//! The kernels beyond the paper take the filter tables as one `#[repr(C)]` parameter
//! struct, [`Filters`], and their per-event or per-batch inputs as [`Candidates`],
//! [`LatencyEvent`] and [`Batch`]: by value, in the kernel's parameter space, like the
//! positional parameters they replace. Mapped host memory is never in a struct: it
//! stays a parameter of its own (`input`, `out`), so that the launch knows the kernel
//! uses it.
//! All of them live in global memory; only [`cont()`] (the event attribute, `shInput` in
//! CCM), [`match_batch()`] (the batch's event headers) and the low-latency kernels (the
//! event) use shared memory; the low-latency kernels also read the event from, and
//! write their results into, page-locked host memory mapped into the device.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
// Every unsafe operation of a helper sits in an `unsafe` block that says, in its
// `// SAFETY:` comment, which bound or host guarantee keeps it in range.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

use gpu_kernels::prelude::*;
use gpu_kernels::{DevPtr, DevPtrMut, KernelStruct};

pub mod cells;

/// A 2-D point, CUDA's `float2`: an element of `FPos` (§4.3) and `InputPos`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct Float2 {
    pub x: f32,
    pub y: f32,
}

/// The fixed part of an event on the device (§4.3, Fig. 2b): `InputBF`, `InputPos`, and
/// how many `Attrs` follow it. An encoded event is a run of 32-bit words: this header
/// (4 words), then `n_attrs` [`DevAttr`]s (4 words each), then the bytes of the
/// attributes' string values.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct InputHeader {
    /// `InputBF`: 32-bit Bloom filter of the event's attribute names.
    pub bf: u32,
    /// `InputPos`: the event's location.
    pub pos: Float2,
    /// Number of entries of `Attrs` after the header.
    pub n_attrs: u32,
}

/// Words of an [`InputHeader`].
pub const HEADER_WORDS: usize = 4;
/// Words of a [`DevAttr`].
pub const ATTR_WORDS: usize = 4;

/// Value kinds of [`DevAttr::kind`] and [`DevConstraint::kind`].
pub const KIND_INT: u32 = 0;
/// A 64-bit float (`bits` = `f64::to_bits`).
pub const KIND_FLOAT: u32 = 1;
/// A string (`bits` = byte offset, `len` = byte length).
pub const KIND_STR: u32 = 2;

/// Operators of [`DevConstraint::op`], as CCM's `Op` column (§4.1 of the CCM paper).
pub const OP_EQ: u32 = 0;
pub const OP_NE: u32 = 1;
pub const OP_LT: u32 = 2;
pub const OP_GT: u32 = 3;
pub const OP_LE: u32 = 4;
pub const OP_GE: u32 = 5;
pub const OP_PREFIX: u32 = 6;
pub const OP_SUFFIX: u32 = 7;
pub const OP_SUBSTR: u32 = 8;

/// One attribute of the event under processing (an element of `Attrs`, Fig. 2b).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct DevAttr {
    /// Row of the `Constraints` table of the attribute's name (CCM's `Names` map, on the host).
    pub row: u32,
    /// [`KIND_INT`], [`KIND_FLOAT`] or [`KIND_STR`].
    pub kind: u32,
    /// The value: `i64` or `f64` bits, or a string's [`str_bits`] (byte offset from the
    /// start of the encoded event, and length).
    pub bits: u64,
}

/// One element of CCM's `Constraints` table: `Op`, `Type`, `Val`, `FilterId`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct DevConstraint {
    /// `OP_*`.
    pub op: u16,
    /// `KIND_*`.
    pub kind: u16,
    /// In the name-major table of [`cont()`]: the filter (`FilterId`). In the filter-major
    /// table of [`match_batch()`]: the `Constraints` row of the constraint's name.
    pub tag: u32,
    /// The value: `i64` or `f64` bits, or a string's [`str_bits`] in the constraint
    /// string pool. 16 bytes in all.
    pub bits: u64,
}

/// The `bits` of a string value: byte offset in the low 32 bits, length in the high 32.
#[inline(always)]
pub fn str_bits(offset: u32, len: u32) -> u64 {
    u64::from(offset) | (u64::from(len) << 32)
}

/// One area update (§5, Fig. 5): filter `filter` moves to `pos` with squared radius
/// `sq_dist` (a rectangle: low corner `pos`, [`RECT_SQ`], high corner `hi`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct AreaMove {
    pub filter: u32,
    pub pos: Float2,
    pub sq_dist: f32,
    /// `AreaHi` (a rectangle's high corner; unread for a circle).
    pub hi: Float2,
}

/// Beyond the paper: one filter's area as one 16-byte record, `FPos[f]` and `SqDist[f]`
/// side by side (the paper keeps them in two tables, Fig. 2a), so that moving an area is
/// one copy of 16 bytes. The low-latency kernels read this table; the paper's tables are
/// refreshed from it ([`unpack_areas()`]) before a kernel that reads them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct PackedArea {
    pub pos: Float2,
    pub sq_dist: f32,
    pub _pad: u32,
}

/// `SqDist` of a rectangle (beyond the paper): negative, so that the circle's test
/// ([`in_area`]) holds no point; `FPos` is its low corner and `AreaHi` its high one
/// ([`in_rect`]).
pub const RECT_SQ: f32 = -1.0;

/// Beyond the paper: is `p` inside the rectangle of corners `lo` and `hi` (borders
/// included)? Comparisons only, no rounding.
#[inline(always)]
pub fn in_rect(p: Float2, lo: Float2, hi: Float2) -> bool {
    lo.x <= p.x && p.x <= hi.x && lo.y <= p.y && p.y <= hi.y
}

/// Step S1b for either form of area: the circle's test ([`in_area`]) first, exactly as
/// without rectangles; only where it fails and `sq` is negative ([`RECT_SQ`], which no
/// point passes as a circle) the rectangle of low corner `c` and high corner `hi()`
/// (`AreaHi`, read only then). A circle pays one comparison on a miss.
#[inline(always)]
pub fn in_area_or_rect(p: Float2, c: Float2, sq: f32, hi: impl FnOnce() -> Float2) -> bool {
    in_area(p, c, sq) || (sq < 0.0 && in_rect(p, c, hi()))
}

/// Step S1b in a launch that says whether any area may be a rectangle (`rects`,
/// beyond the paper): zero, the circle's test alone ([`in_area`]), as before
/// rectangles (one flag for the launch, not a test of each area's `SqDist` on every
/// miss); else [`in_area_or_rect`] (`hi()`, `AreaHi`, read only for a rectangle). The
/// paper's kernel [`loc()`] and the kernels beyond it ([`Filters::rects`]) all test
/// areas through it.
#[inline(always)]
pub fn in_area_of_launch(
    rects: u32,
    p: Float2,
    c: Float2,
    sq: f32,
    hi: impl FnOnce() -> Float2,
) -> bool {
    if rects == 0 {
        in_area(p, c, sq)
    } else {
        in_area_or_rect(p, c, sq, hi)
    }
}

/// Step S1b's test, the one every engine uses: is `p` inside the circle of centre `c`
/// and squared radius `sq`? Computed exactly as Algorithm 1, lines 14–16, in `f32`.
#[inline(always)]
pub fn in_area(p: Float2, c: Float2, sq: f32) -> bool {
    let dx = p.x - c.x;
    let dy = p.y - c.y;
    let sq_dist_x = dx * dx;
    let sq_dist_y = dy * dy;
    sq_dist_x + sq_dist_y <= sq
}

/// `includes(InputBF, BF[id])` of Algorithm 1, line 9: every name bit of the filter is
/// set in the event's Bloom filter (one bit-wise and plus a comparison, footnote 4).
#[inline(always)]
pub fn bf_includes(input_bf: u32, filter_bf: u32) -> bool {
    filter_bf & !input_bf == 0
}

/// Bytes `[p, p + n)` equal bytes `[q, q + n)`.
///
/// # Safety
/// `p` and `q` must each point at `n` readable bytes.
#[inline(always)]
unsafe fn bytes_eq(p: *const u8, q: *const u8, n: u32) -> bool {
    let mut i = 0usize;
    while i < n as usize {
        // SAFETY: `i < n`, and `p` and `q` point at `n` readable bytes each (this fn's
        // contract).
        if unsafe { *p.add(i) != *q.add(i) } {
            return false;
        }
        i += 1;
    }
    true
}

#[inline(always)]
fn cmp_i64(a: i64, b: i64) -> i32 {
    if a < b {
        -1
    } else if a > b {
        1
    } else {
        0
    }
}

/// Exact comparison of an integer with a (non-NaN) float, without the rounding of
/// `a as f64` (`2^53 + 1` is greater than `2^53` as a float): -1, 0 or 1.
#[inline(always)]
pub fn cmp_int_float(a: i64, v: f64) -> i32 {
    if v >= 9_223_372_036_854_775_808.0 {
        return -1;
    }
    if v < -9_223_372_036_854_775_808.0 {
        return 1;
    }
    // `v` is within i64's range: its integer part is exact as an i64, and that integer
    // part is exact back as an f64 (|v| < 2^53, or v is already an integer).
    let whole = v as i64;
    let ord = cmp_i64(a, whole);
    if ord != 0 {
        return ord;
    }
    let w = whole as f64;
    if w < v {
        -1
    } else if w > v {
        1
    } else {
        0
    }
}

/// CCM's `sat` (its footnote 2): is the constraint satisfied by the attribute value?
///
/// Numbers compare exactly (integers with floats too, as `ccm::model` says); strings
/// compare byte-wise; a number against a string (either way) is never satisfied, nor is
/// an operator that does not apply to the type.
///
/// # Safety
/// When both are strings, `cstr` must hold the constraint's string bytes where `c.bits`
/// says (offset, length) and `astr` the attribute's where `a_bits` says.
#[inline(always)]
pub unsafe fn sat(
    c: &DevConstraint,
    cstr: *const u8,
    a_kind: u32,
    a_bits: u64,
    astr: *const u8,
) -> bool {
    let c_kind = c.kind as u32;
    let c_is_str = c_kind == KIND_STR;
    let a_is_str = a_kind == KIND_STR;
    if c_is_str != a_is_str {
        return false;
    }
    if c_is_str {
        let (c_len, a_len) = ((c.bits >> 32) as u32, (a_bits >> 32) as u32);
        // SAFETY: both values are strings: the constraint's `c_len` bytes start at offset
        // `c.bits` of `cstr` and the attribute's `a_len` bytes at offset `a_bits` of
        // `astr` (this fn's contract). Every comparison below reads `c_len` bytes of the
        // constraint's and `c_len` bytes of the attribute's starting at most
        // `a_len - c_len` bytes in (each arm checks `c_len <= a_len` first, or compares
        // only equal lengths): all inside the two strings.
        unsafe {
            let cv = cstr.add(c.bits as u32 as usize);
            let av = astr.add(a_bits as u32 as usize);
            return match c.op as u32 {
                OP_EQ => c_len == a_len && bytes_eq(cv, av, c_len),
                OP_NE => !(c_len == a_len && bytes_eq(cv, av, c_len)),
                OP_PREFIX => c_len <= a_len && bytes_eq(cv, av, c_len),
                OP_SUFFIX => {
                    c_len <= a_len && bytes_eq(cv, av.add((a_len - c_len) as usize), c_len)
                }
                OP_SUBSTR => {
                    if c_len > a_len {
                        return false;
                    }
                    let mut start = 0u32;
                    while start + c_len <= a_len {
                        if bytes_eq(cv, av.add(start as usize), c_len) {
                            return true;
                        }
                        start += 1;
                    }
                    false
                }
                _ => false,
            };
        }
    }
    // -1: attribute < constraint value, 0: equal, 1: greater, 2: unordered.
    let ord: i32 = if c_kind == KIND_INT && a_kind == KIND_INT {
        cmp_i64(a_bits as i64, c.bits as i64)
    } else if a_kind == KIND_INT {
        cmp_int_float(a_bits as i64, f64::from_bits(c.bits))
    } else if c_kind == KIND_INT {
        -cmp_int_float(c.bits as i64, f64::from_bits(a_bits))
    } else {
        let a = f64::from_bits(a_bits);
        let v = f64::from_bits(c.bits);
        if a < v {
            -1
        } else if a > v {
            1
        } else if a == v {
            0
        } else {
            2
        }
    };
    match c.op as u32 {
        OP_EQ => ord == 0,
        OP_NE => ord != 0,
        OP_LT => ord == -1,
        OP_GT => ord == 1,
        OP_LE => ord == -1 || ord == 0,
        OP_GE => ord == 1 || ord == 0,
        _ => false,
    }
}

/// Byte `run` (0..4) of a packed `FCount` word: the counter of run `run` (§4.3,
/// "Reducing memory accesses").
#[inline(always)]
pub fn run_byte(word: u32, run: u32) -> u32 {
    (word >> (8 * run)) & 0xff
}

kernel! {
    /// Algorithm 1, `Loc`: steps S1a (Bloom-filter pre-filtering of names) and S1b (area
    /// of relevance), one thread per filter.
    ///
    /// Thread `id` reads `BF[id]` and, when the names may match, `FPos[id]` and
    /// `SqDist[id]`, all coalesced across the warp; `InputBF` and `InputPos` are read by
    /// every thread (cached). It writes its filter's `FCount` counter of run `run`
    /// (byte `run` of `FCount[id]`): at run 0 the whole word is written (0 or 1), which
    /// resets the three other bytes; at runs 1–3 only a matching filter writes its byte
    /// (the others are still 0 from run 0), so `FCount` is reset once every four events.
    /// Thread 0 resets `SubsCount` (`subs_out[0]`). A filter without content constraints
    /// (`SizeF[id] == 0`, which the paper's workloads never have) is complete once its
    /// area holds the event: the thread marks its subscription in `SubsBV` itself.
    pub fn loc(
        input: *const u32,
        n: u32,
        run: u32,
        bf: *const u32,
        fpos: *const Float2,
        sq_dist: *const f32,
        area_hi: *const Float2,
        rects: u32,
        size_f: *const u32,
        filter_sub: *const u32,
        fcount: *mut u32,
        subs_bv: *mut u32,
        subs_out: *mut u32,
    ) {
        let id = global_id_x();
        if id >= n {
            return;
        }
        if id == 0 {
            *subs_out = 0; // SubsCount = 0
        }
        let i = id as usize;
        let head = *(input as *const InputHeader);
        let mut hit = bf_includes(head.bf, *bf.add(i));
        if hit {
            hit = in_area_of_launch(rects, head.pos, *fpos.add(i), *sq_dist.add(i), || {
                *area_hi.add(i)
            });
        }
        if run == 0 {
            *fcount.add(i) = hit as u32;
        } else if hit {
            *(fcount as *mut u8).add(4 * i + run as usize) = 1;
        }
        if hit && *size_f.add(i) == 0 {
            *subs_bv.add(*filter_sub.add(i) as usize) = 1;
        }
    }
}

kernel! {
    /// CCM's Algorithm 1 (constraint evaluation and counting, step S2), as modified by
    /// CLCB (§4.3): one row of blocks per event attribute (`blockIdx.y`), one thread per
    /// constraint of that attribute's row of `Constraints`.
    ///
    /// Thread 0 of each block copies the attribute into shared memory (`shInput`);
    /// after the barrier, thread `x` reads constraint `x` of the row (coalesced), then
    /// its filter's `FCount` byte of run `run`: 0 means the `Loc` kernel discarded the
    /// filter (names or area), and the thread stops. Otherwise it evaluates the
    /// constraint and, when satisfied, atomically increments the byte; the thread that
    /// brings it to `SizeF + 1` (the area counts as one constraint) sets the filter's
    /// subscription in `SubsBV`.
    pub fn cont(
        input: *const u32,
        run: u32,
        constraints: *const DevConstraint,
        row_start: *const u32,
        size_c: *const u32,
        cstrings: *const u8,
        size_f: *const u32,
        filter_sub: *const u32,
        fcount: *mut u32,
        subs_bv: *mut u32,
    ) {
        let sh_input = dynamic_shared::<DevAttr>();
        let y = block_idx_y() as usize;
        if thread_idx_x() == 0 {
            *sh_input = *(input.add(HEADER_WORDS + ATTR_WORDS * y) as *const DevAttr);
        }
        sync_threads();
        let attr = *sh_input;
        let x = global_id_x();
        if x >= *size_c.add(attr.row as usize) {
            return;
        }
        let c = *constraints.add((*row_start.add(attr.row as usize) + x) as usize);
        let f = c.tag as usize;
        let counter = fcount.add(f);
        if run_byte(*counter, run) == 0 {
            return;
        }
        if !sat(&c, cstrings, attr.kind, attr.bits, input as *const u8) {
            return;
        }
        let old = atomic_add(counter, 1u32 << (8 * run));
        if run_byte(old, run) + 1 == *size_f.add(f) + 1 {
            *subs_bv.add(*filter_sub.add(f) as usize) = 1;
        }
    }
}

kernel! {
    /// Algorithm 1, `Zip` (step S2a): one thread per subscription. Thread `id` reads
    /// `SubsBV[id]`; when set, it resets it for the next event and appends `id` to `Subs`
    /// at the slot `atomicAdd(SubsCount, 1)` returns. `subs_out[0]` is `SubsCount` and
    /// `subs_out[1..]` is `Subs`, so that one copy brings both back (step S3*).
    pub fn zip(k: u32, subs_bv: *mut u32, subs_out: *mut u32) {
        let id = global_id_x();
        if id >= k {
            return;
        }
        let slot = subs_bv.add(id as usize);
        if *slot != 0 {
            *slot = 0;
            let position = atomic_add(subs_out, 1);
            *subs_out.add(1 + position as usize) = id;
        }
    }
}

kernel! {
    /// Area updates in bulk (§5, Fig. 5): one thread per update; thread `t` copies the new
    /// position and squared radius of `updates[t]` into `FPos` and `SqDist`. Nothing else
    /// changes: no index to rebuild. (Beyond the paper: a rectangle's `AreaHi` too;
    /// `AreaHi` is one unread word until the engine holds a rectangle.)
    pub fn move_areas(
        count: u32,
        updates: *const AreaMove,
        fpos: *mut Float2,
        sq_dist: *mut f32,
        area_hi: *mut Float2,
    ) {
        let t = global_id_x();
        if t >= count {
            return;
        }
        let u = *updates.add(t as usize);
        *fpos.add(u.filter as usize) = u.pos;
        *sq_dist.add(u.filter as usize) = u.sq_dist;
        if u.sq_dist < 0.0 {
            *area_hi.add(u.filter as usize) = u.hi;
        }
    }
}

kernel! {
    /// Beyond the paper: area updates in bulk with the packed table ([`PackedArea`]):
    /// one thread per update; thread `t` writes `updates[t]` into `areas`, `FPos`,
    /// `SqDist` and, for a rectangle, `AreaHi` (all stay in step for the filters it
    /// moves).
    pub fn move_areas_packed(
        count: u32,
        updates: *const AreaMove,
        areas: *mut PackedArea,
        fpos: *mut Float2,
        sq_dist: *mut f32,
        area_hi: *mut Float2,
    ) {
        let t = global_id_x();
        if t >= count {
            return;
        }
        let u = *updates.add(t as usize);
        let f = u.filter as usize;
        *areas.add(f) = PackedArea { pos: u.pos, sq_dist: u.sq_dist, _pad: 0 };
        *fpos.add(f) = u.pos;
        *sq_dist.add(f) = u.sq_dist;
        if u.sq_dist < 0.0 {
            *area_hi.add(f) = u.hi;
        }
    }
}

kernel! {
    /// Beyond the paper: refreshes the paper's `FPos` and `SqDist` from the packed table
    /// after single moves wrote only the latter; one thread per filter, coalesced reads
    /// of `areas` and writes of both tables.
    pub fn unpack_areas(n: u32, areas: *const PackedArea, fpos: *mut Float2, sq_dist: *mut f32) {
        let f = global_id_x();
        if f >= n {
            return;
        }
        let a = *areas.add(f as usize);
        *fpos.add(f as usize) = a.pos;
        *sq_dist.add(f as usize) = a.sq_dist;
    }
}

kernel! {
    /// One area update with the update in the launch's arguments (no copy at all): a
    /// single thread writes `FPos[filter]` and `SqDist[filter]` (and, for a rectangle,
    /// `AreaHi[filter]` = `(hx, hy)`).
    pub fn move_area(
        filter: u32,
        x: f32,
        y: f32,
        sq: f32,
        hx: f32,
        hy: f32,
        fpos: *mut Float2,
        sq_dist: *mut f32,
        area_hi: *mut Float2,
    ) {
        if global_id_x() != 0 {
            return;
        }
        *fpos.add(filter as usize) = Float2 { x, y };
        *sq_dist.add(filter as usize) = sq;
        if sq < 0.0 {
            *area_hi.add(filter as usize) = Float2 { x: hx, y: hy };
        }
    }
}

/// Do all constraints `fcons[first..last]` (filter-major, `tag` = name row) hold for
/// the encoded event at `event` with `n_attrs` attributes? A constraint whose name the
/// event lacks does not hold. Read by one thread: its filter's constraints, the event's
/// `Attrs` (global memory, cached: every thread of the launch reads the same event).
///
/// # Safety
/// `fcons` must hold the constraints `first..last`, `cstrings` their string bytes, and
/// `event` an encoded event with `n_attrs` attributes (and its string bytes).
#[inline(always)]
pub unsafe fn filter_holds(
    fcons: *const DevConstraint,
    first: usize,
    last: usize,
    cstrings: *const u8,
    event: *const u32,
    n_attrs: u32,
) -> bool {
    // SAFETY: the event's `Attrs` follow its `HEADER_WORDS`-word header and its string
    // bytes lie at their offsets from its first word (the encoding, this fn's contract).
    unsafe {
        let attrs = event.add(HEADER_WORDS) as *const DevAttr;
        filter_holds_with(
            fcons,
            first,
            last,
            cstrings,
            attrs,
            n_attrs,
            event as *const u8,
        )
    }
}

/// [`filter_holds`] with the event's `Attrs` at `attrs` and its string values' offsets
/// counted from `bytes` (the encoding of a batch on the device, whose strings stay in
/// the batch's arena, `clcb_kernels::cells::cells_match`).
///
/// # Safety
/// `fcons` must hold the constraints `first..last`, `cstrings` their string bytes,
/// `attrs` `n_attrs` attributes, and `bytes` every string value's bytes at its offset.
#[inline(always)]
pub unsafe fn filter_holds_with(
    fcons: *const DevConstraint,
    first: usize,
    last: usize,
    cstrings: *const u8,
    attrs: *const DevAttr,
    n_attrs: u32,
    bytes: *const u8,
) -> bool {
    let mut k = first;
    while k < last {
        // SAFETY: `first <= k < last`, constraints `fcons` holds (this fn's contract).
        let con = unsafe { *fcons.add(k) };
        let mut held = false;
        let mut a = 0u32;
        while a < n_attrs {
            // SAFETY: `a < n_attrs`, the event's attribute count (this fn's contract).
            let at = unsafe { *attrs.add(a as usize) };
            if at.row == con.tag {
                // SAFETY: `con`'s string lies in `cstrings` and `at`'s at its offset from
                // `bytes` (this fn's contract).
                held = unsafe { sat(&con, cstrings, at.kind, at.bits, bytes) };
                break;
            }
            a += 1;
        }
        if !held {
            return false;
        }
        k += 1;
    }
    true
}

/// Beyond the paper: the filter tables that the kernels beyond the paper
/// ([`match_batch()`], [`grid_batch()`], [`grid_match()`], [`match_latency()`],
/// [`grid_latency()`]) read, as one parameter struct in the kernel's parameter space (the
/// constant bank, read there as the positional pointers it replaces were). Fig. 2a's
/// `BF`, `FPos` and `SqDist`; `Areas`, the same areas packed ([`PackedArea`]); each
/// filter's own constraints, filter-major; its subscription; and the grid index's
/// `cell_filters`.
///
/// `areas` is read by the low-latency kernels only and `cell_filters` by the grid
/// kernels only: the host may leave them [`DevPtr::null`] where the engine has no
/// such table (no low-latency state, no grid), and then launches none of those
/// kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Filters<'a> {
    /// `BF`: each filter's Bloom filter of its constraints' names (S1a).
    pub bf: DevPtr<'a, u32>,
    /// `FPos`: each filter's centre of its area of relevance (S1b).
    pub fpos: DevPtr<'a, Float2>,
    /// `SqDist`: each filter's squared radius of its area of relevance (S1b); negative
    /// ([`RECT_SQ`]) for a rectangle.
    pub sq_dist: DevPtr<'a, f32>,
    /// `AreaHi`: a rectangle's high corner (`FPos` its low one), read only for
    /// rectangles; always current (every move writes it).
    pub area_hi: DevPtr<'a, Float2>,
    /// `Areas`: `FPos` and `SqDist` side by side, one [`PackedArea`] per filter.
    pub areas: DevPtr<'a, PackedArea>,
    /// Filter `f`'s constraints are `fcons[fcons_start[f]..fcons_start[f + 1]]`
    /// (`n + 1` entries).
    pub fcons_start: DevPtr<'a, u32>,
    /// The constraints, filter-major, each tagged with its name's row.
    pub fcons: DevPtr<'a, DevConstraint>,
    /// The string values of the constraints.
    pub cstrings: DevPtr<'a, u8>,
    /// Each filter's subscription (a dense index below the subscription count).
    pub filter_sub: DevPtr<'a, u32>,
    /// The grid index: filter indices by cell, then the list of filters kept outside
    /// the grid ([`Candidates`] say which slots an event reads).
    pub cell_filters: DevPtr<'a, u32>,
    /// Number of filters.
    pub n: u32,
    /// Nonzero when some filter may be a rectangle (`AreaHi` holds every filter's);
    /// zero: every area is a circle and the kernels run the circle's test alone
    /// ([`in_area`]), as before rectangles (one flag for the launch, not a test of each
    /// filter's `SqDist` on every miss).
    pub rects: u32,
}

// SAFETY: `#[repr(C)]`; device pointers and `u32`s only; `Host<'a>` differs only in
// the lifetime.
unsafe impl KernelStruct for Filters<'static> {
    type Host<'a> = Filters<'a>;
}

impl Filters<'_> {
    /// S1b for filter `f` from `FPos`, `SqDist` and (a rectangle) `AreaHi`.
    ///
    /// # Safety
    /// The struct's pointers must hold the host's tables and `f < n`.
    #[inline(always)]
    unsafe fn area_holds(&self, f: usize, p: Float2) -> bool {
        // SAFETY: `f < n`, the tables' length (this fn's contract).
        unsafe {
            self.packed_holds(
                f,
                p,
                PackedArea {
                    pos: self.fpos.read(f),
                    sq_dist: self.sq_dist.read(f),
                    _pad: 0,
                },
            )
        }
    }

    /// S1b for filter `f` whose `FPos` and `SqDist` are `a`, as the engine's areas
    /// ask ([`Filters::rects`], [`in_area_of_launch`]; `AreaHi[f]` read only for a
    /// rectangle).
    ///
    /// # Safety
    /// As [`Filters::area_holds`].
    #[inline(always)]
    unsafe fn packed_holds(&self, f: usize, p: Float2, a: PackedArea) -> bool {
        // SAFETY: `f < n`, the tables' length (this fn's contract).
        in_area_of_launch(self.rects, p, a.pos, a.sq_dist, || unsafe {
            self.area_hi.read(f)
        })
    }

    /// Do filter `f`'s own constraints ([`filter_holds`], filter-major table) hold for
    /// the encoded event at `event` with `n_attrs` attributes?
    ///
    /// # Safety
    /// The struct's pointers must hold the host's tables, `f < n`, and `event` must be
    /// an encoded event with `n_attrs` attributes.
    #[inline(always)]
    unsafe fn holds(&self, f: usize, event: *const u32, n_attrs: u32) -> bool {
        // SAFETY: `f < n` (this fn's contract) and `fcons_start` has `n + 1` entries.
        let (first, last) = unsafe {
            (
                self.fcons_start.read(f) as usize,
                self.fcons_start.read(f + 1) as usize,
            )
        };
        // SAFETY: the host's `fcons_start` holds offsets into `fcons`, whose strings
        // are in `cstrings`; `event` as this fn's contract says.
        unsafe {
            filter_holds(
                self.fcons.ptr(),
                first,
                last,
                self.cstrings.ptr(),
                event,
                n_attrs,
            )
        }
    }
}

/// Beyond the paper: one range `[lo, hi)` of slots of the grid index's `cell_filters`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct CellRange {
    pub lo: u32,
    pub hi: u32,
}

impl CellRange {
    /// Its number of slots (none when `hi <= lo`).
    #[inline(always)]
    pub fn len(&self) -> u32 {
        self.hi.saturating_sub(self.lo)
    }

    /// Whether it holds no slot.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Beyond the paper: one event's candidates in the grid index, the filters listed in
/// four ranges of `cell_filters`: the three rows of the 3x3 grid cells around the
/// event, and the list of filters kept outside the grid. The host chooses them so that
/// every filter whose area can hold the event is among them. Candidate `t` is slot `t`
/// of the four ranges taken one after another ([`Candidates::slot`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct Candidates {
    pub ranges: [CellRange; 4],
}

// SAFETY: `#[repr(C)]`, `u32`s only, no pointers.
unsafe impl KernelStruct for Candidates {
    type Host<'a> = Candidates;
}

impl Candidates {
    /// The `cell_filters` slot of candidate `t`, or `u32::MAX` past the last one. The
    /// ranges are read with constant indices, so that a parameter struct stays in the
    /// parameter space (a dynamic index would copy it to local memory).
    #[inline(always)]
    pub fn slot(&self, t: u32) -> u32 {
        let mut t = t;
        let s = next_slot(&mut t, self.ranges[0]);
        if s != u32::MAX {
            return s;
        }
        let s = next_slot(&mut t, self.ranges[1]);
        if s != u32::MAX {
            return s;
        }
        let s = next_slot(&mut t, self.ranges[2]);
        if s != u32::MAX {
            return s;
        }
        next_slot(&mut t, self.ranges[3])
    }

    /// How many candidates there are (the threads a launch over them needs).
    pub fn total(&self) -> u32 {
        self.ranges.iter().map(CellRange::len).sum()
    }
}

/// Candidate `t` in range `r`: its slot, or `u32::MAX` with `t` made relative to the
/// next range.
#[inline(always)]
fn next_slot(t: &mut u32, r: CellRange) -> u32 {
    if *t < r.len() {
        r.lo + *t
    } else {
        *t -= r.len();
        u32::MAX
    }
}

/// Beyond the paper: a batch of events in global memory and where its matches go, for
/// [`match_batch()`] and [`grid_batch()`] (then [`zip_batch()`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Batch<'a> {
    /// The encoded events, one after another.
    pub inputs: DevPtr<'a, u32>,
    /// Where each event starts in `inputs` (in words).
    pub event_word: DevPtr<'a, u32>,
    /// Each event's [`Candidates`] ([`grid_batch()`] only).
    pub candidates: DevPtr<'a, Candidates>,
    /// Per event, a bit vector of `words` words: bit `s` for subscription `s`.
    pub subs_bits: DevPtrMut<'a, u32>,
    /// The pair count `out[0]` (zeroed by the launch for [`zip_batch()`]), then the pairs.
    pub out: DevPtrMut<'a, u32>,
    /// Events in the batch ([`match_batch()`]; [`grid_batch()`] has one row of blocks per
    /// event).
    pub n_events: u32,
    /// Words of each event's bit vector.
    pub words: u32,
}

// SAFETY: `#[repr(C)]`; device pointers and `u32`s only; `Host<'a>` differs only in
// the lifetime.
unsafe impl KernelStruct for Batch<'static> {
    type Host<'a> = Batch<'a>;
}

/// Beyond the paper: the event of one launch of [`match_latency()`] or [`grid_latency()`],
/// except its `Attrs` and strings (in mapped host memory), and the device state of its
/// claims: the header (`InputBF`, `InputPos`, number of `Attrs`), the length of the
/// encoded event, its number, `SubsSeq`, and the list's counters.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LatencyEvent<'a> {
    /// `InputBF`, `InputPos` and the number of `Attrs`.
    pub head: InputHeader,
    /// Words of the encoded event (at most [`LATENCY_MAX_WORDS`]).
    pub words: u32,
    /// The event's number (from 1; `SubsSeq` holds 0 for "never").
    pub seq: u32,
    /// `SubsSeq`: the number of the last event that claimed each subscription.
    pub subs_seq: DevPtrMut<'a, u32>,
    /// The list counter of this event (one word).
    pub tally: DevPtrMut<'a, u32>,
    /// The list counter of the next event, which the launch zeroes (one word).
    pub idle_tally: DevPtrMut<'a, u32>,
}

// SAFETY: `#[repr(C)]`; a `#[repr(C)]` header of `u32`s and `f32`s, `u32`s and device
// pointers only; `Host<'a>` differs only in the lifetime.
unsafe impl KernelStruct for LatencyEvent<'static> {
    type Host<'a> = LatencyEvent<'a>;
}

/// Most events of a batch ([`match_batch()`] keeps their headers in shared memory).
pub const MAX_BATCH: u32 = 1024;

/// Shared-memory copy of one batch event's header and where its attributes start.
#[repr(C)]
#[derive(Clone, Copy)]
struct BatchEvent {
    bf: u32,
    pos: Float2,
    n_attrs: u32,
    word: u32,
    _pad: [u32; 3],
}

/// Four event Bloom filters, read from shared memory with one 16-byte load.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct Bf4([u32; 4]);

/// Bytes of [`match_batch()`]'s dynamic shared memory for `n_events` events: the events'
/// `InputBF`s (a multiple of four), then their `BatchEvent`s (each event's `InputPos`,
/// attribute count and first word: 32 bytes).
pub const fn batch_shared_bytes(n_events: u32) -> u32 {
    4 * n_events.next_multiple_of(4) + 32 * n_events
}

kernel! {
    /// Beyond the paper: matches a batch of `n_events` events in one pass over the
    /// filters, one thread per filter.
    ///
    /// The block first copies the batch's event headers into shared memory
    /// ([`batch_shared_bytes`]): the `InputBF`s side by side (padded to a multiple of
    /// four), then each event's `InputPos`, attribute count and where its `Attrs` start in
    /// `b.inputs` (from `b.event_word`). Global thread 0 zeroes the pair count `b.out[0]`
    /// that [`zip_batch()`] then fills. Thread `id` reads its filter's `BF`, `FPos` and
    /// `SqDist` once (coalesced) and walks the events four at a time: one 16-byte
    /// (broadcast) read of four Bloom filters, four independent S1a tests, so that most
    /// events cost a quarter of a shared-memory round trip. For every event passing S1a
    /// and S1b it checks the filter's own constraints
    /// (`fcons[fcons_start[id]..fcons_start[id + 1]]`, filter-major, each tagged with its
    /// name's row) against the event's attributes; a filter holding all of them sets its
    /// subscription's bit in the event's bit vector (`b.subs_bits[e * b.words ..]`,
    /// atomic or).
    pub fn match_batch(t: Filters<'static>, b: Batch<'static>) {
        let (n_events, words, inputs) = (b.n_events, b.words, b.inputs.ptr());
        let padded = n_events.next_multiple_of(4);
        let bfs = dynamic_shared::<u32>();
        let events = bfs.add(padded as usize) as *mut BatchEvent;
        let mut e = thread_idx_x();
        while e < padded {
            if e < n_events {
                let w = b.event_word.read(e as usize);
                let h = *(inputs.add(w as usize) as *const InputHeader);
                *bfs.add(e as usize) = h.bf;
                *events.add(e as usize) =
                    BatchEvent { bf: h.bf, pos: h.pos, n_attrs: h.n_attrs, word: w, _pad: [0; 3] };
            } else {
                *bfs.add(e as usize) = 0;
            }
            e += block_dim_x();
        }
        sync_threads();
        let id = global_id_x();
        if id == 0 {
            b.out.write(0, 0);
        }
        if id >= t.n {
            return;
        }
        let i = id as usize;
        let fbf = t.bf.read(i);
        let area = PackedArea { pos: t.fpos.read(i), sq_dist: t.sq_dist.read(i), _pad: 0 };
        let first = t.fcons_start.read(i) as usize;
        let last = t.fcons_start.read(i + 1) as usize;
        let sub = t.filter_sub.read(i);
        let mut e = 0u32;
        while e < n_events {
            // The Bloom filters alone first: most events stop here.
            let q = *(bfs.add(e as usize) as *const Bf4);
            let mut k = 0u32;
            while k < 4 {
                let ek = e + k;
                if ek < n_events && bf_includes(q.0[k as usize], fbf) {
                    let ev = *events.add(ek as usize);
                    if t.packed_holds(i, ev.pos, area) {
                        let event = inputs.add(ev.word as usize);
                        if filter_holds(t.fcons.ptr(), first, last, t.cstrings.ptr(), event, ev.n_attrs) {
                            atomic_or(
                                b.subs_bits.add((ek * words + sub / 32) as usize),
                                1u32 << (sub % 32),
                            );
                        }
                    }
                }
                k += 1;
            }
            e += 4;
        }
    }
}

kernel! {
    /// Beyond the paper: the grid index for a batch of events, one row of blocks per
    /// event (`blockIdx.y` = `e`), one thread per candidate of that event: the filters
    /// listed in the event's [`Candidates`] (`b.candidates[e]`, chosen by the host as for
    /// [`grid_match()`]); threads past the event's candidates stop at once. Thread `id`
    /// takes the `id`-th candidate `f`, reads the event's header from `b.inputs` (at
    /// `b.event_word[e]`; the same words for the whole row, cached), checks S1a and S1b
    /// on `BF[f]`, `FPos[f]`, `SqDist[f]`, then the filter's own constraints
    /// ([`filter_holds`], filter-major table), and a filter holding all of them sets its
    /// subscription's bit in the event's bit vector (`b.subs_bits[e * b.words ..]`,
    /// atomic or) for [`zip_batch()`]. Thread 0 of the launch zeroes the pair count
    /// `b.out[0]`. A filter listed twice (moved out of its cell) sets the same bit twice:
    /// harmless.
    pub fn grid_batch(t: Filters<'static>, b: Batch<'static>) {
        let e = block_idx_y();
        let id = global_id_x();
        if e == 0 && id == 0 {
            b.out.write(0, 0);
        }
        let slot = (*b.candidates.add(e as usize)).slot(id);
        if slot == u32::MAX {
            return;
        }
        let f = t.cell_filters.read(slot as usize) as usize;
        let w = b.event_word.read(e as usize);
        let event = b.inputs.add(w as usize);
        let h = *(event as *const InputHeader);
        if !bf_includes(h.bf, t.bf.read(f)) || !t.area_holds(f, h.pos) {
            return;
        }
        if !t.holds(f, event, h.n_attrs) {
            return;
        }
        let s = t.filter_sub.read(f);
        atomic_or(b.subs_bits.add((e * b.words + s / 32) as usize), 1u32 << (s % 32));
    }
}

kernel! {
    /// Beyond the paper: `Zip` of a batch. One thread per 32-subscription word of one
    /// event's bit vector (`blockIdx.y` = event). A non-zero word is reset, and its
    /// subscriptions are appended as (event, subscription) pairs to `out[1..]`, reserving
    /// their slots with one `atomicAdd` on the pair count `out[0]`; pairs past `cap` are
    /// counted but not written (the host then grows the buffer and runs the batch again).
    pub fn zip_batch(words: u32, subs_bits: *mut u32, out: *mut u32, cap: u32) {
        let w = global_id_x();
        if w >= words {
            return;
        }
        let e = block_idx_y();
        let slot = subs_bits.add((e * words + w) as usize);
        let mut bits = *slot;
        if bits == 0 {
            return;
        }
        *slot = 0;
        let mut pos = atomic_add(out, bits.count_ones());
        while bits != 0 {
            let b = bits.trailing_zeros();
            bits &= bits - 1;
            if pos < cap {
                *out.add(1 + 2 * pos as usize) = e;
                *out.add(2 + 2 * pos as usize) = w * 32 + b;
            }
            pos += 1;
        }
    }
}

kernel! {
    /// Beyond the paper: the grid-indexed pipeline, step 1 of 2. Instead of one thread per
    /// filter, one thread per *candidate*: the filters listed in the four ranges of
    /// `cell_filters` of `c` ([`Candidates`]: the three rows of the 3x3 grid cells around
    /// the event, and the list of filters kept outside the grid), chosen by the host so
    /// that every filter whose area can hold the event is among them. Thread `id` takes
    /// the `id`-th candidate `f`, checks S1a and S1b as `Loc` does, then the filter's own
    /// constraints ([`filter_holds`], filter-major table) instead of `Cont`'s counting. A
    /// matching filter claims its subscription with `atomicExch(SubsBV[s], 1)`; the first
    /// claimer appends `s` to `Subs` at `atomicAdd(count)`, so no `Zip` over all
    /// subscriptions is needed. A filter listed twice (moved out of its cell) claims
    /// nothing twice.
    pub fn grid_match(
        t: Filters<'static>,
        c: Candidates,
        input: *const u32,
        subs_bv: *mut u32,
        count: *mut u32,
        subs: *mut u32,
    ) {
        let slot = c.slot(global_id_x());
        if slot == u32::MAX {
            return;
        }
        let f = t.cell_filters.read(slot as usize) as usize;
        let head = *(input as *const InputHeader);
        if !bf_includes(head.bf, t.bf.read(f)) || !t.area_holds(f, head.pos) {
            return;
        }
        if !t.holds(f, input, head.n_attrs) {
            return;
        }
        let s = t.filter_sub.read(f);
        if atomic_exch(subs_bv.add(s as usize), 1) == 0 {
            let position = atomic_add(count, 1);
            *subs.add(position as usize) = s;
        }
    }
}

kernel! {
    /// Beyond the paper: the grid-indexed pipeline, step 2 of 2, one thread per possible
    /// match (`bound` >= the count). Thread `i < *count` resets `SubsBV` of the `i`-th
    /// matched subscription for the next event; thread 0 zeroes the *other* counter, the
    /// one the next event uses (CCM §4.3's duplicated structures: the counter of this
    /// event stays for the host to read).
    pub fn grid_reset(bound: u32, count: *const u32, next_count: *mut u32, subs: *const u32, subs_bv: *mut u32) {
        let i = global_id_x();
        if i >= bound {
            return;
        }
        if i == 0 {
            *next_count = 0;
        }
        if i < *count {
            *subs_bv.add(*subs.add(i as usize) as usize) = 0;
        }
    }
}

/// Beyond the paper, the low-latency path: most words of an encoded event that
/// [`match_latency()`] and [`grid_latency()`] stage in shared memory (48 KiB, the default
/// limit, less the block's flag); longer events take the copying paths.
pub const LATENCY_MAX_WORDS: u32 = 12_000;

/// Beyond the paper, the common tail of [`match_latency()`] and [`grid_latency()`], run by
/// every thread of the block (it holds barriers). `hit` says the thread's filter `f`
/// passed S1a and S1b.
///
/// Dynamic shared memory: word 0 is the block's flag, the encoded event (`ev.words`
/// words) starts at word 4 (16-byte aligned, like the device copy of the paper's path).
/// A block where no thread hit stops after the second barrier without touching
/// `input`; in a block with a hit, its threads copy the event from `input` (page-locked
/// host memory mapped into the device: one round trip over the bus per block that needs
/// it, not one per thread) into shared memory. Each hitting thread then checks its
/// filter's own constraints ([`filter_holds`], filter-major table) against that copy,
/// and a filter holding all of them claims its subscription with
/// `atomicExch(SubsSeq[s], seq)`: the one claimer that sees an older event number
/// appends `seq << 32 | s` to the list `out` (mapped host memory) at
/// `atomicAdd(tally, 1)`. `SubsSeq` holds event numbers instead of `SubsBV`'s flags, so
/// nothing is reset between events.
///
/// # Safety
/// `t` must hold the host's tables and `ev` the launch's `SubsSeq` and counter; `f < n`
/// when `hit`; `input` must hold the encoded event (`ev.words <=`
/// [`LATENCY_MAX_WORDS`] words, with `ev.head.n_attrs` attributes), the block's dynamic
/// shared memory `16 + 4 * ev.words` bytes at least, and `out` one entry per
/// subscription.
#[inline(always)]
unsafe fn latency_claim(
    hit: bool,
    f: usize,
    t: &Filters,
    ev: &LatencyEvent,
    input: *const u32,
    out: *mut u64,
) {
    let sh = dynamic_shared::<u32>();
    // SAFETY: the block's flag is word 0 of the dynamic shared memory (16 bytes at
    // least, this fn's contract): written by thread 0 before the first barrier and read
    // after the second; between them every hitting thread stores the same value, 1.
    unsafe {
        if thread_idx_x() == 0 {
            *sh = 0;
        }
        sync_threads();
        if hit {
            *sh = 1;
        }
        sync_threads();
        if *sh == 0 {
            return; // the whole block: no filter of it holds the event's names and place
        }
    }
    // SAFETY: the shared memory holds 4 + `ev.words` words and `input` the `ev.words`
    // words of the event (this fn's contract); each thread copies its own words.
    let staged = unsafe {
        let staged = sh.add(4);
        let mut w = thread_idx_x();
        while w < ev.words {
            *staged.add(w as usize) = *input.add(w as usize);
            w += block_dim_x();
        }
        sync_threads();
        staged
    };
    if !hit {
        return;
    }
    // SAFETY: `f < n` for a hit (this fn's contract); the staged copy is the whole
    // encoded event with `ev.head.n_attrs` attributes.
    if !unsafe { t.holds(f, staged, ev.head.n_attrs) } {
        return;
    }
    // SAFETY: `f < n`; the host's `filter_sub` holds subscriptions below the count of
    // `SubsSeq` (one word each), and `out` has one entry per subscription: each
    // subscription is listed once per event (the one claimer that sees an older
    // number), so `position` stays below the subscription count. `SubsSeq` and `tally`
    // are written through atomics only.
    unsafe {
        let s = t.filter_sub.read(f);
        if atomic_exch(ev.subs_seq.add(s as usize), ev.seq) != ev.seq {
            let position = atomic_add(ev.tally.ptr(), 1);
            *out.add(position as usize) = (u64::from(ev.seq) << 32) | u64::from(s);
        }
    }
}

kernel! {
    /// Beyond the paper: the low-latency per-event path over every filter, one launch
    /// and nothing copied. `Loc`'s steps S1a and S1b and the content check in one
    /// kernel, one thread per filter, as [`match_batch()`] does for a batch of one.
    ///
    /// The event's `InputBF` and `InputPos` come in the launch parameters (`ev.head`);
    /// its `Attrs` and strings stay in mapped host memory (`input`, `ev.words` words)
    /// until a block needs them. Thread `id` reads `BF[id]` and, when the names may
    /// match, its [`PackedArea`] (`FPos[id]` and `SqDist[id]` in one 16-byte read), then
    /// runs [`latency_claim`]. Global thread 0 zeroes `ev.idle_tally`, the list counter
    /// the next event uses (CCM §4.3's duplicated structures). No `FCount`, no `Zip`.
    pub fn match_latency(t: Filters<'static>, ev: LatencyEvent<'static>, input: *const u32, out: *mut u64) {
        let id = global_id_x();
        if id == 0 {
            ev.idle_tally.write(0, 0);
        }
        let i = id as usize;
        let hit = id < t.n && bf_includes(ev.head.bf, t.bf.read(i)) && {
            t.packed_holds(i, ev.head.pos, t.areas.read(i))
        };
        latency_claim(hit, i, &t, &ev, input, out);
    }
}

kernel! {
    /// Beyond the paper: the low-latency path of the grid index, one launch and nothing
    /// copied. One thread per candidate of `c` as [`grid_match()`], the event's header in
    /// the launch parameters and the rest in mapped host memory, then
    /// [`latency_claim`]; global thread 0 zeroes `ev.idle_tally`. `SubsSeq` replaces
    /// `grid_reset`.
    pub fn grid_latency(
        t: Filters<'static>,
        c: Candidates,
        ev: LatencyEvent<'static>,
        input: *const u32,
        out: *mut u64,
    ) {
        let id = global_id_x();
        if id == 0 {
            ev.idle_tally.write(0, 0);
        }
        let slot = c.slot(id);
        let mut f = 0usize;
        let mut hit = false;
        if slot != u32::MAX {
            f = t.cell_filters.read(slot as usize) as usize;
            hit = bf_includes(ev.head.bf, t.bf.read(f)) && {
                t.packed_holds(f, ev.head.pos, t.areas.read(f))
            };
        }
        latency_claim(hit, f, &t, &ev, input, out);
    }
}

/// Request kinds of [`clcb_persistent()`]: match an event over every filter (payload: the
/// encoded event's 32-bit words, two per 64-bit word, as the host's
/// `Tables::encode_event` writes them).
pub const PERSIST_EVENT: u32 = 1;
/// Move one area (payload: `filter`, `x | y << 32` (f32 bits), `SqDist` (f32 bits), the
/// slot of the grid's outside list the filter joins, or `u32::MAX`, and `AreaHi` as
/// `x | y << 32`).
pub const PERSIST_AREA: u32 = 2;
/// Switch one subscription on or off (payload: `subscription`, `1` on / `0` off).
pub const PERSIST_SUBS: u32 = 3;
/// Match an event over the grid's candidates (payload: the four candidate ranges of
/// `cell_filters`, `lo | hi << 32` each, then the event as for [`PERSIST_EVENT`]).
pub const PERSIST_EVENT_GRID: u32 = 4;
/// Words of a [`PERSIST_EVENT_GRID`] request before the event.
pub const PERSIST_GRID_WORDS: usize = 4;
/// Grid strides of `BF` words each thread of [`clcb_persistent()`] loads before testing
/// them (loads in flight per thread, over every filter).
pub const PERSIST_UNROLL: usize = 8;

/// The persistent kernel's test of filter `f` against the event `ev` (staged in shared
/// memory) and the claim of its subscription, as [`latency_claim`] without the staging:
/// `BF`, then the area (`Areas`, volatile loads: moves change it between rounds), then
/// the filter's constraints; a holding filter claims its switched-on subscription `s`
/// with `atomicExch(SubsSeq[s], seq)`, the one claimer seeing an older number appending
/// `s` to `list` at `atomicAdd(tally, 1)` (at most `k` entries).
///
/// # Safety
/// The pointers must hold the tables (`bf`, `areas`, `fcons_start`, `filter_sub`: `n`
/// filters, `fcons_start` one more; `subs_off` and `subs_seq`: `k` subscriptions, at
/// least every one `filter_sub` names), `f < n`, `ev` the staged event with `n_attrs`
/// attributes, `tally` a word, and `list` room for `k` entries.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn persist_filter(
    f: usize,
    ev: *const u32,
    in_bf: u32,
    pos: Float2,
    n_attrs: u32,
    bf: *const u32,
    areas: *const PackedArea,
    area_hi: *const Float2,
    fcons_start: *const u32,
    fcons: *const DevConstraint,
    cstrings: *const u8,
    filter_sub: *const u32,
    subs_off: *const u32,
    seq: u32,
    subs_seq: *mut u32,
    tally: *mut u32,
    list: *mut u32,
    k: u32,
) {
    // SAFETY: `f < n`, the length of `BF` (this fn's contract).
    if !bf_includes(in_bf, unsafe { *bf.add(f) }) {
        return;
    }
    // SAFETY: this fn's contract is the callee's.
    unsafe {
        persist_filter_area(
            f,
            ev,
            pos,
            n_attrs,
            areas,
            area_hi,
            fcons_start,
            fcons,
            cstrings,
            filter_sub,
            subs_off,
            seq,
            subs_seq,
            tally,
            list,
            k,
        )
    };
}

/// [`persist_filter`] past the `BF` test.
///
/// # Safety
/// As [`persist_filter`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn persist_filter_area(
    f: usize,
    ev: *const u32,
    pos: Float2,
    n_attrs: u32,
    areas: *const PackedArea,
    area_hi: *const Float2,
    fcons_start: *const u32,
    fcons: *const DevConstraint,
    cstrings: *const u8,
    filter_sub: *const u32,
    subs_off: *const u32,
    seq: u32,
    subs_seq: *mut u32,
    tally: *mut u32,
    list: *mut u32,
    k: u32,
) {
    // SAFETY: `f < n`, the length of `Areas` (this fn's contract); a [`PackedArea`] is
    // two 8-byte words, 16-byte aligned.
    let (xy, sq_word) = unsafe {
        let a = areas.add(f) as *const u64;
        (volatile_load_u64(a), volatile_load_u64(a.add(1)))
    };
    let sq = f32::from_bits(sq_word as u32);
    let c = Float2 {
        x: f32::from_bits(xy as u32),
        y: f32::from_bits((xy >> 32) as u32),
    };
    // SAFETY: `f < n`, the length of `AreaHi` (this fn's contract); a `Float2` is two
    // 4-byte words.
    let hi = || unsafe {
        let w = area_hi.add(f) as *const u32;
        Float2 {
            x: f32::from_bits(volatile_load_u32(w)),
            y: f32::from_bits(volatile_load_u32(w.add(1))),
        }
    };
    if !in_area_or_rect(pos, c, sq, hi) {
        return;
    }
    // SAFETY: `f < n` and `fcons_start` has `n + 1` entries (this fn's contract).
    let (first, last) = unsafe {
        (
            *fcons_start.add(f) as usize,
            *fcons_start.add(f + 1) as usize,
        )
    };
    // SAFETY: the host's `fcons_start` holds offsets into `fcons`, whose strings are in
    // `cstrings`; `ev` is the staged event with `n_attrs` attributes (this fn's
    // contract).
    if !unsafe { filter_holds(fcons, first, last, cstrings, ev, n_attrs) } {
        return;
    }
    // SAFETY: `f < n`; `s` is a subscription `subs_off` and `subs_seq` hold (this fn's
    // contract), `SubsSeq` and `tally` are written through atomics only, and the store
    // into `list` is guarded by `at < k`, its length.
    unsafe {
        let s = *filter_sub.add(f);
        if volatile_load_u32(subs_off.add(s as usize)) == 0
            && atomic_exch(subs_seq.add(s as usize), seq) != seq
        {
            let at = atomic_add(tally, 1);
            if at < k {
                volatile_store_u32(list.add(at as usize), s);
            }
        }
    }
}

kernel! {
    /// Beyond the paper: the low-latency matching of [`match_latency()`] and
    /// [`grid_latency()`] (S1a, S1b and the filter's content in one thread) as a
    /// persistent kernel: the first seven parameters are the ring's
    /// ([`gpu_kernels::persist`]); one block per SM, resident for the kernel's life; each
    /// request is one round of [`gpu_kernels::persist::serve`], so area moves and
    /// subscription switches take effect exactly between the events submitted before
    /// and after them.
    ///
    /// Round `r` of any kind, `p = r % 2`: global thread 0 zeroes the list counter of the
    /// next round, `tally[1 - p]` (round `r - 1`, which used it, is complete).
    ///
    /// [`PERSIST_EVENT`], `seq = r + 1`: every thread runs [`persist_filter`] for its
    /// grid-stride share of the `n` filters, against the event staged by the ring in
    /// shared memory, appending to `list[p * k ..]` and `tally[p]`.
    /// [`PERSIST_EVENT_GRID`]: the same over its grid-stride share of the candidates
    /// listed by the request's four ranges of `cell_filters` (volatile loads: the
    /// outside list grows between rounds). Block 0 (the answering block) copies the list
    /// (volatile loads) into the response slot in mapped host memory; status = its
    /// length.
    ///
    /// [`PERSIST_AREA`]: global thread 0 writes `Areas[filter]` (16 bytes) and, when the
    /// filter left its grid cell, appends it to the outside list (`cell_filters[slot]`).
    /// [`PERSIST_SUBS`]: global thread 0 writes `SubsOff[subscription]`. Both answer
    /// with status 0 and no payload. Plain stores suffice: the next round starts after
    /// this one is complete (a fence and the ring's broadcast in between).
    pub fn clcb_persistent(
        req: *const u64,
        resp: *mut u64,
        ctl: *mut u32,
        bcast: *mut u64,
        slots: u32,
        req_words: u32,
        resp_words: u32,
        n: u32,
        k: u32,
        bf: *const u32,
        areas: *mut PackedArea,
        area_hi: *mut Float2,
        fcons_start: *const u32,
        fcons: *const DevConstraint,
        cstrings: *const u8,
        filter_sub: *const u32,
        subs_off: *mut u32,
        subs_seq: *mut u32,
        tally: *mut u32,
        list: *mut u32,
        cell_filters: *mut u32,
        cell_capacity: u32,
    ) {
        let ring = gpu_kernels::persist::DeviceRing { req, resp, ctl, bcast, slots, req_words, resp_words };
        let kk = k as usize;
        gpu_kernels::persist::serve(
            &ring,
            dynamic_shared::<u64>(),
            |r| {
                let gid = global_id_x();
                let w = r.words;
                let p = (r.round % 2) as usize;
                if gid == 0 {
                    *tally.add(1 - p) = 0;
                }
                if r.kind == PERSIST_AREA {
                    if gid == 0 && r.len >= 5 && (*w as u32) < n {
                        let xy = *w.add(1);
                        *areas.add(*w as usize) = PackedArea {
                            pos: Float2 { x: f32::from_bits(xy as u32), y: f32::from_bits((xy >> 32) as u32) },
                            sq_dist: f32::from_bits(*w.add(2) as u32),
                            _pad: 0,
                        };
                        let hxy = *w.add(4);
                        *area_hi.add(*w as usize) =
                            Float2 { x: f32::from_bits(hxy as u32), y: f32::from_bits((hxy >> 32) as u32) };
                        let slot = *w.add(3) as u32;
                        if slot < cell_capacity {
                            volatile_store_u32(cell_filters.add(slot as usize), *w as u32);
                        }
                    }
                    return;
                }
                if r.kind == PERSIST_SUBS {
                    if gid == 0 && r.len >= 2 && (*w as u32) < k {
                        *subs_off.add(*w as usize) = (*w.add(1) == 0) as u32;
                    }
                    return;
                }
                let grid = r.kind == PERSIST_EVENT_GRID;
                if !(r.kind == PERSIST_EVENT || grid && r.len >= PERSIST_GRID_WORDS as u32) {
                    return;
                }
                let seq = r.round.wrapping_add(1);
                let ev = if grid { w.add(PERSIST_GRID_WORDS) } else { w } as *const u32;
                let in_bf = *ev;
                let pos = Float2 { x: f32::from_bits(*ev.add(1)), y: f32::from_bits(*ev.add(2)) };
                let n_attrs = *ev.add(3);
                let stride = grid_dim_x() * block_dim_x();
                let (tally_p, list_p) = (tally.add(p), list.add(p * kk));
                if !grid {
                    // Every filter, [`PERSIST_UNROLL`] grid strides at a time: the `BF`
                    // words of a group are loaded before any is tested, so that a thread
                    // has that many loads in flight instead of one.
                    let mut base = gid;
                    while base < n {
                        // Branch-free loads (an index past the end reads the last word,
                        // masked out), so that all of them issue before the first test.
                        let mut hits = 0u32;
                        let mut u = 0;
                        while u < PERSIST_UNROLL {
                            let f = base as u64 + (u as u64) * stride as u64;
                            let inside = f < n as u64;
                            let at = if inside { f } else { n as u64 - 1 };
                            let word = *bf.add(at as usize);
                            hits |= ((inside & bf_includes(in_bf, word)) as u32) << u;
                            u += 1;
                        }
                        while hits != 0 {
                            let u = hits.trailing_zeros();
                            hits &= hits - 1;
                            let f = base as usize + u as usize * stride as usize;
                            persist_filter_area(
                                f, ev, pos, n_attrs, areas, area_hi, fcons_start, fcons, cstrings,
                                filter_sub, subs_off, seq, subs_seq, tally_p, list_p, k,
                            );
                        }
                        base = base.saturating_add(stride.saturating_mul(PERSIST_UNROLL as u32));
                    }
                    return;
                }
                // The candidates: the request's four ranges of `cell_filters`.
                let range = |i: usize| {
                    let lh = *w.add(i);
                    CellRange { lo: lh as u32, hi: (lh >> 32) as u32 }
                };
                let c = Candidates { ranges: [range(0), range(1), range(2), range(3)] };
                let total = c.total();
                let mut t = gid;
                while t < total {
                    let slot = c.slot(t);
                    if slot < cell_capacity {
                        let f = volatile_load_u32(cell_filters.add(slot as usize));
                        if f < n {
                            persist_filter(
                                f as usize, ev, in_bf, pos, n_attrs, bf, areas, area_hi,
                                fcons_start, fcons, cstrings, filter_sub, subs_off, seq, subs_seq,
                                tally_p, list_p, k,
                            );
                        }
                    }
                    t += stride;
                }
            },
            |r, out| {
                if r.kind != PERSIST_EVENT && r.kind != PERSIST_EVENT_GRID {
                    return (0, 0);
                }
                let p = (r.round % 2) as usize;
                // More than `k` would be a bug: the host reports it (status > k); the
                // copy stays within the list and the slot.
                let m = volatile_load_u32(tally.add(p));
                let n_out = if m < k { m } else { k };
                // Two subscription ids to an answer word.
                // SAFETY: the round's list holds `k >= n_out` entries from `p * k`.
                (m, unsafe { out.put_u32s(list.add(p * kk), n_out) })
            },
        );
    }
}
