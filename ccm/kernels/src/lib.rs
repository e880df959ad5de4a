//! The kernels of CCM (Margara & Cugola, DEBS 2011, §4), written once for the GPU and
//! the host emulator.
//!
//! - [`ccm_match()`]: Algorithm 1 (§4.2), the constraint evaluation and counting kernel,
//!   with the in-kernel reset of the idle copy of `Count` and `Interfaces` (§4.3);
//! - [`ccm_match_inline()`]: the same, with table `Input` in the launch parameters (beyond
//!   the paper: no host-to-device copy per event);
//! - [`ccm_match_mapped()`], [`ccm_match_inline_mapped()`]: the same two, also writing the
//!   matched interfaces as a compact list into page-locked host memory mapped into the
//!   device (beyond the paper: no copy back, one launch and one synchronisation per event);
//! - [`ccm_match_batch()`]: beyond the paper, many events per launch: one thread per
//!   filter, name signatures to skip filters whose names are not all in the event;
//! - [`ccm_persistent()`]: beyond the paper, Algorithm 1 in a persistent kernel
//!   ([`gpu_kernels::persist`]): launched once, it matches the events the host writes
//!   into a ring in mapped host memory, answering each in mapped host memory (no launch,
//!   no copy, no synchronisation per event);
//! - [`batch::ccm_encode_batch()`]: beyond the paper, a flat batch of events (names and
//!   strings interned, as the host holds it) encoded on the device for the batched
//!   kernels (the pruning index's in [`index`]);
//! - [`cells::ccm_index_cells()`]: beyond the paper, the pruning index's value cells for
//!   dense events (bitsets of failing filters per name and cell, HEM class), with their
//!   answer lists made from their counts per slice of filters
//!   ([`cells::ccm_cells_spans()`], [`cells::ccm_cells_lists()`]).
//!
//! The device tables ([`DevConstraint`], [`DevAttr`], [`DevEvent`]) are `#[repr(C)]` and
//! shared with the host crate's `layout` module, which documents the encodings.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

pub mod batch;
pub mod cells;
pub mod index;

use gpu_kernels::prelude::*;
use gpu_kernels::{DevPtr, DevPtrMut, KernelStruct};

/// `Type` of a value (Fig. 2a): integer, float, string.
pub const TY_INT: u16 = 0;
pub const TY_FLOAT: u16 = 1;
pub const TY_STR: u16 = 2;

/// `Op` codes, in the order of `ccm::model::Op::ALL`.
pub const OP_EQ: u16 = 0;
pub const OP_NE: u16 = 1;
pub const OP_LT: u16 = 2;
pub const OP_GT: u16 = 3;
pub const OP_LE: u16 = 4;
pub const OP_GE: u16 = 5;
pub const OP_PREFIX: u16 = 6;
pub const OP_SUFFIX: u16 = 7;
pub const OP_SUBSTR: u16 = 8;

/// `str_id` of an event string that no constraint has as its value: equal to none.
pub const NO_STR: u32 = u32::MAX;

/// One element of table `Constraints` (Fig. 2a): `Op`, `Type`, `Val`, `FilterId`.
///
/// `val` holds an `Int`'s `i64` bits, a `Float`'s `f64` bits, or, for a string, its byte
/// offset in the constraint string pool; `str_id` is the string's interned id and
/// `str_len` its length in bytes. In the batch kernel's filter-major table `key` is the
/// constraint's name (its row in `Constraints`); in the per-name rows it is `FilterId`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct DevConstraint {
    pub key: u32,
    pub op: u16,
    pub ty: u16,
    pub val: u64,
    pub str_id: u32,
    pub str_len: u32,
}

/// One row of table `Input` (§4.2): an event attribute, with `RowId` (the row of its
/// name in `Constraints`), `Type` and `Val` encoded as in [`DevConstraint`] (a string's
/// `val` is its offset in the event string bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct DevAttr {
    pub row_id: u32,
    pub ty: u32,
    pub val: u64,
    pub str_id: u32,
    pub str_len: u32,
}

/// One event of a batch: its attributes `attrs[start .. start + len]` and the signature
/// of its names (bit `row % 64` set for each attribute's row).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct DevEvent {
    pub sig: u64,
    pub start: u32,
    pub len: u32,
}

/// Exact order of integer `i` against float `x` (no NaN): -1, 0 or 1.
#[inline]
fn cmp_int_float(i: i64, x: f64) -> i32 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if x >= TWO_63 {
        return -1;
    }
    if x < -TWO_63 {
        return 1;
    }
    // -2^63 <= x < 2^63: its integer part w is an exact i64, x - w an exact fraction.
    let w = x as i64;
    if i < w {
        return -1;
    }
    if i > w {
        return 1;
    }
    let frac = x - w as f64;
    if frac > 0.0 {
        -1
    } else if frac < 0.0 {
        1
    } else {
        0
    }
}

/// Exact numeric order of the attribute's number against the constraint's.
#[inline]
fn cmp_num(aty: u16, a: u64, cty: u16, c: u64) -> i32 {
    match (aty == TY_INT, cty == TY_INT) {
        (true, true) => {
            let (a, c) = (a as i64, c as i64);
            (a > c) as i32 - (a < c) as i32
        }
        (false, false) => {
            let (a, c) = (f64::from_bits(a), f64::from_bits(c));
            (a > c) as i32 - (a < c) as i32
        }
        (true, false) => cmp_int_float(a as i64, f64::from_bits(c)),
        (false, true) => -cmp_int_float(c as i64, f64::from_bits(a)),
    }
}

/// `n` bytes at `a` equal `n` bytes at `b`.
///
/// # Safety
/// `a` and `b` are readable for `n` bytes.
#[inline]
unsafe fn bytes_eq(a: *const u8, b: *const u8, n: u32) -> bool {
    let mut k = 0usize;
    while k < n as usize {
        if *a.add(k) != *b.add(k) {
            return false;
        }
        k += 1;
    }
    true
}

/// The paper's `sat` (footnote 2 of §4.2): whether attribute `(aty, aval, astr_id,
/// alen)`, whose string bytes start at `abytes`, satisfies constraint `c`, whose string
/// bytes live in `cpool`. A type mismatch (number vs string) is unsatisfied.
///
/// # Safety
/// `abytes` is readable for the attribute's string length, `cpool` for the constraint's
/// string (offset and length as the host built them).
#[inline]
unsafe fn sat(
    c: &DevConstraint,
    aty: u16,
    aval: u64,
    astr_id: u32,
    alen: u32,
    abytes: *const u8,
    cpool: *const u8,
) -> bool {
    let a_is_str = aty == TY_STR;
    if (c.ty == TY_STR) != a_is_str {
        return false;
    }
    if a_is_str {
        let cb = cpool.add(c.val as usize);
        match c.op {
            OP_EQ => astr_id == c.str_id,
            OP_NE => astr_id != c.str_id,
            OP_PREFIX => alen >= c.str_len && bytes_eq(abytes, cb, c.str_len),
            OP_SUFFIX => {
                alen >= c.str_len
                    && bytes_eq(abytes.add((alen - c.str_len) as usize), cb, c.str_len)
            }
            OP_SUBSTR => {
                if c.str_len > alen {
                    return false;
                }
                let mut s = 0u32;
                while s + c.str_len <= alen {
                    if bytes_eq(abytes.add(s as usize), cb, c.str_len) {
                        return true;
                    }
                    s += 1;
                }
                false
            }
            _ => false,
        }
    } else {
        let o = cmp_num(aty, aval, c.ty, c.val);
        match c.op {
            OP_EQ => o == 0,
            OP_NE => o != 0,
            OP_LT => o < 0,
            OP_GT => o > 0,
            OP_LE => o <= 0,
            OP_GE => o >= 0,
            _ => false,
        }
    }
}

/// `sat` of constraint `c` for the batch attribute `at`, whose string (if any) starts at
/// byte `at.val` of `ebytes`.
///
/// # Safety
/// As [`sat`]: `at`'s string lies in `ebytes`, `c`'s in `cpool`.
#[inline(always)]
unsafe fn sat_attr(
    c: &DevConstraint,
    at: &DevAttr,
    ebytes: DevPtr<'static, u8>,
    cpool: *const u8,
) -> bool {
    let ab = if at.ty as u16 == TY_STR {
        ebytes.add(at.val as usize)
    } else {
        ebytes.ptr()
    };
    sat(c, at.ty as u16, at.val, at.str_id, at.str_len, ab, cpool)
}

/// Whether the batch event `ev` (attributes `attrs[ev.start ..][.. ev.len]`, strings in
/// `ebytes`) satisfies every constraint `constraints[first..end]`: each constraint's
/// attribute is found by its name row among the event's (a few per event), then `sat`
/// decides; an absent attribute fails.
///
/// # Safety
/// Every index the host wrote is in range; the strings lie in `ebytes` and `cpool`.
#[inline(always)]
unsafe fn satisfies_all(
    constraints: DevPtr<'static, DevConstraint>,
    first: u32,
    end: u32,
    ev: &DevEvent,
    attrs: DevPtr<'static, DevAttr>,
    ebytes: DevPtr<'static, u8>,
    cpool: *const u8,
) -> bool {
    let mut c = first;
    while c < end {
        let con = constraints.read(c as usize);
        let mut found = false;
        let mut a = 0;
        while a < ev.len {
            let at = attrs.read((ev.start + a) as usize);
            if at.row_id == con.key {
                found = sat_attr(&con, &at, ebytes, cpool);
                break;
            }
            a += 1;
        }
        if !found {
            return false;
        }
        c += 1;
    }
    true
}

/// Attributes and string bytes per attribute that [`ccm_match_inline()`] takes.
pub const INLINE_ATTRS: usize = 5;
pub const INLINE_BYTES: u32 = 16;

/// The filter-major tables of [`ccm_match_batch()`] (beyond the paper): `FConstraints`
/// (each filter's constraints in a row, `key` = the constraint's name row) from
/// `FilterStart[f]`, `SizeF[f]` (0 = a free slot), `FilterSig[f]` (bit `row % 64` of each
/// constraint's name), `InterfaceId[f]` and the string pool; `n_filters` slots, answers
/// over `n_interfaces` interfaces.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FilterMajorTables<'a> {
    pub fconstraints: DevPtr<'a, DevConstraint>,
    pub filter_start: DevPtr<'a, u32>,
    pub size_f: DevPtr<'a, u32>,
    pub filter_sig: DevPtr<'a, u64>,
    pub filter_iface: DevPtr<'a, u32>,
    pub cpool: DevPtr<'a, u8>,
    pub n_filters: u32,
    pub n_interfaces: u32,
}

// SAFETY: `#[repr(C)]`; device pointers and integers; `Host<'a>` differs only in the
// lifetime.
unsafe impl KernelStruct for FilterMajorTables<'static> {
    type Host<'a> = FilterMajorTables<'a>;
}

/// A batch of encoded events for [`ccm_match_batch()`]: `n_events` events (signature,
/// first attribute, attributes), their attributes and string bytes; `chunk` events per
/// block row.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EventBatch<'a> {
    pub events: DevPtr<'a, DevEvent>,
    pub attrs: DevPtr<'a, DevAttr>,
    pub ebytes: DevPtr<'a, u8>,
    pub n_events: u32,
    pub chunk: u32,
}

// SAFETY: `#[repr(C)]`; device pointers and integers; `Host<'a>` differs only in the
// lifetime.
unsafe impl KernelStruct for EventBatch<'static> {
    type Host<'a> = EventBatch<'a>;
}

/// The per-event kernels' parameters that are not the event (§4.1-§4.3): tables
/// `Constraints` (with `RowStart`, `SizeC` and the string pool), `SizeF`,
/// `InterfaceId`, the copies of `Count` and `Interfaces` in use, and the idle copies the
/// launch resets when `reset != 0`. One parameter struct in the kernel's parameter space
/// (constant bank), read there as the positional scalars it replaces were.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MatchTables<'a> {
    pub constraints: DevPtr<'a, DevConstraint>,
    pub row_start: DevPtr<'a, u32>,
    pub size_c: DevPtr<'a, u32>,
    pub cpool: DevPtr<'a, u8>,
    pub size_f: DevPtr<'a, u32>,
    pub filter_iface: DevPtr<'a, u32>,
    pub count: DevPtrMut<'a, u32>,
    pub interfaces: DevPtrMut<'a, u32>,
    pub reset_count: DevPtrMut<'a, u32>,
    pub reset_interfaces: DevPtrMut<'a, u32>,
    pub reset: u32,
    pub n_filters: u32,
    pub n_interfaces: u32,
}

// SAFETY: `#[repr(C)]`; device pointers and `u32`s only; `Host<'a>` differs only in the
// lifetime.
unsafe impl KernelStruct for MatchTables<'static> {
    type Host<'a> = MatchTables<'a>;
}

/// One attribute of table `Input` in the launch parameters ([`ccm_match_inline()`]):
/// `a` = `RowId | Type << 32`, `v` = `Val`, `s` = `str_id | str_len << 32`, `b`, `c` =
/// its string's bytes (little-endian), `r` = `RowStart[RowId] | SizeC[RowId] << 32`
/// (read by [`ccm_match_inline_mapped()`] only).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InlineAttr {
    pub a: u64,
    pub v: u64,
    pub s: u64,
    pub b: u64,
    pub c: u64,
    pub r: u64,
}

/// Table `Input` of one event in the launch parameters: up to [`INLINE_ATTRS`]
/// attributes (the rest zero).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InlineEvent {
    pub attrs: [InlineAttr; INLINE_ATTRS],
}

// SAFETY: `#[repr(C)]`, `u64`s only, no pointers.
unsafe impl KernelStruct for InlineEvent {
    type Host<'a> = InlineEvent;
}

impl InlineEvent {
    /// Attribute `blockIdx.y` (the last one for any larger index), read with constant
    /// indices so that it stays in the parameter space (a dynamic index would copy the
    /// struct to local memory).
    #[inline(always)]
    fn attr(&self, y: u32) -> InlineAttr {
        match y {
            0 => self.attrs[0],
            1 => self.attrs[1],
            2 => self.attrs[2],
            3 => self.attrs[3],
            _ => self.attrs[4],
        }
    }
}

/// §4.3: this thread's grid-stride share of zeroing the idle copies of `Count` and
/// `Interfaces` (adjacent threads write adjacent words).
#[inline]
unsafe fn reset_idle(
    reset_count: *mut u32,
    reset_interfaces: *mut u32,
    n_filters: u32,
    n_interfaces: u32,
) {
    let stride = grid_dim_x() * grid_dim_y() * block_dim_x();
    let first = (block_idx_y() * grid_dim_x() + block_idx_x()) * block_dim_x() + thread_idx_x();
    let mut i = first;
    while i < n_filters {
        *reset_count.add(i as usize) = 0;
        i += stride;
    }
    let mut i = first;
    while i < n_interfaces {
        *reset_interfaces.add(i as usize) = 0;
        i += stride;
    }
}

/// No interface (see `count_row`).
pub const NO_IFACE: u32 = u32::MAX;

/// Lines 1 and 8-21 of Algorithm 1 for the calling thread, `attr` being `shInput` and
/// `abytes` its string bytes: thread `x` of the row stops past `SizeC[RowId]`, reads
/// `Constraints[RowId][x]`, evaluates `sat`, increments `Count[FilterId]` and, when it
/// completes the filter, returns `InterfaceId` for the caller to mark (lines 22-23);
/// else [`NO_IFACE`]. `EAGER` as in [`count_constraint`].
///
/// # Safety
/// The table pointers are the launch's (`MatchTables`: every row, constraint, filter
/// and interface index the host wrote is in range), `attr` and `abytes` the staged
/// attribute.
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn count_row<const EAGER: bool>(
    attr: &DevAttr,
    abytes: *const u8,
    constraints: *const DevConstraint,
    row_start: *const u32,
    size_c: *const u32,
    cpool: *const u8,
    size_f: *const u32,
    filter_iface: *const u32,
    count: *mut u32,
) -> u32 {
    // Lines 1, 8-11.
    let x = block_idx_x() * block_dim_x() + thread_idx_x();
    let row = attr.row_id as usize;
    if x >= *size_c.add(row) {
        return NO_IFACE;
    }
    // Line 12: this thread's constraint, into registers.
    let c = *constraints.add((*row_start.add(row) + x) as usize);
    count_constraint::<EAGER>(&c, attr, abytes, cpool, size_f, filter_iface, count)
}

/// Lines 13-21 of Algorithm 1 for constraint `c`: evaluates `sat`, increments
/// `Count[FilterId]` and returns `InterfaceId` when this increment completes the filter
/// (else [`NO_IFACE`]). The paper's order (`EAGER = false`) reads `SizeF` after the
/// increment; `EAGER` (the low-latency kernels, beyond the paper) issues the reads of
/// `SizeF` and `InterfaceId` before it, so that the three memory accesses overlap
/// instead of following one another (the tables do not change during a launch).
///
/// # Safety
/// As [`count_row`]: `x` is a constraint of the attribute's row.
#[inline]
unsafe fn count_constraint<const EAGER: bool>(
    c: &DevConstraint,
    attr: &DevAttr,
    abytes: *const u8,
    cpool: *const u8,
    size_f: *const u32,
    filter_iface: *const u32,
    count: *mut u32,
) -> u32 {
    // Lines 13-17.
    if !sat(
        c,
        attr.ty as u16,
        attr.val,
        attr.str_id,
        attr.str_len,
        abytes,
        cpool,
    ) {
        return NO_IFACE;
    }
    // Lines 18-21.
    let f = c.key as usize;
    if EAGER {
        let need = *size_f.add(f);
        let iface = *filter_iface.add(f);
        let old = atomic_add(count.add(f), 1);
        return if old + 1 == need { iface } else { NO_IFACE };
    }
    let old = atomic_add(count.add(f), 1);
    if old + 1 == *size_f.add(f) {
        *filter_iface.add(f)
    } else {
        NO_IFACE
    }
}

/// Lines 22-23: marks `interfaces[i]` (an atomic OR of 1, see [`ccm_match`]).
///
/// # Safety
/// `interfaces` holds every interface id below `n_interfaces` (`i` is one, or
/// [`NO_IFACE`], which is not marked).
#[inline]
unsafe fn mark(i: u32, interfaces: *mut u32) {
    if i != NO_IFACE {
        atomic_or(interfaces.add(i as usize), 1);
    }
}

/// Lines 22-23 with the mapped output: the thread that marks `interfaces[i]` first
/// (the atomic OR finds 0) takes the next entry of the list (`atomicAdd` on the device
/// counter `tally`) and stores `seq << 32 | i` there, in host memory. Each interface
/// is listed once per event, so the list has at most `n_interfaces` entries.
///
/// # Safety
/// As [`mark`]; `out` (mapped host memory) holds `n_interfaces` entries and `tally`
/// is the launch's list counter.
#[inline]
unsafe fn mark_mapped(i: u32, interfaces: *mut u32, tally: *mut u32, out: *mut u64, seq: u32) {
    if i != NO_IFACE && atomic_or(interfaces.add(i as usize), 1) == 0 {
        let k = atomic_add(tally, 1);
        *out.add(k as usize) = (seq as u64) << 32 | i as u64;
    }
}

/// The mapped kernels' resets: §4.3's idle copies of `Count` and `Interfaces` when
/// `reset != 0` ([`reset_idle`]), and always the idle list counter `reset_tally` (by the
/// grid's first thread).
///
/// # Safety
/// The idle copies hold `n_filters` and `n_interfaces` words; `reset_tally` is a word.
#[inline]
unsafe fn reset_mapped(
    reset: u32,
    reset_count: *mut u32,
    reset_interfaces: *mut u32,
    n_filters: u32,
    n_interfaces: u32,
    reset_tally: *mut u32,
) {
    if reset != 0 {
        reset_idle(reset_count, reset_interfaces, n_filters, n_interfaces);
    }
    if block_idx_x() == 0 && block_idx_y() == 0 && thread_idx_x() == 0 {
        *reset_tally = 0;
    }
}

/// Lines 3-7 with table `Input` in global memory: thread 0 copies `input[blockIdx.y]` to
/// shared memory (`shInput`), the block its string bytes when they fit `sh_str_cap`.
/// Returns the attribute and where its string bytes are.
///
/// # Safety
/// `input` holds one attribute per `blockIdx.y`, `ebytes` its string bytes; the
/// block's dynamic shared memory has room for `shInput` and `sh_str_cap` bytes.
#[inline]
unsafe fn stage_copied(
    input: *const DevAttr,
    ebytes: *const u8,
    sh_str_cap: u32,
) -> (DevAttr, *const u8) {
    let tid = thread_idx_x();
    let sh_input = dynamic_shared::<DevAttr>();
    let sh_bytes = (sh_input as *mut u8).add(32);
    let in_y = input.add(block_idx_y() as usize);
    let alen = (*in_y).str_len;
    let in_shared = (*in_y).ty as u16 == TY_STR && alen <= sh_str_cap;
    if tid == 0 {
        *sh_input = *in_y;
    }
    if in_shared {
        let src = ebytes.add((*in_y).val as usize);
        let mut k = tid;
        while k < alen {
            *sh_bytes.add(k as usize) = *src.add(k as usize);
            k += block_dim_x();
        }
    }
    sync_threads();
    let attr = *sh_input;
    let abytes = if in_shared {
        sh_bytes as *const u8
    } else if attr.ty as u16 == TY_STR {
        ebytes.add(attr.val as usize)
    } else {
        ebytes // unused: numbers carry no bytes
    };
    (attr, abytes)
}

/// Lines 3-7 with table `Input` in the launch parameters: thread 0 writes attribute
/// `w` ([`InlineAttr`]) to shared memory, then its 16 string bytes. Returns the
/// attribute and its string bytes.
///
/// # Safety
/// The block's dynamic shared memory has room for `shInput` and 16 bytes.
#[inline]
unsafe fn stage_inline(w: InlineAttr) -> (DevAttr, *const u8) {
    let sh_input = dynamic_shared::<DevAttr>();
    let sh_bytes = (sh_input as *mut u8).add(32);
    if thread_idx_x() == 0 {
        let InlineAttr { a, v, s, b, c, .. } = w;
        *sh_input = DevAttr {
            row_id: a as u32,
            ty: (a >> 32) as u32,
            val: v,
            str_id: s as u32,
            str_len: (s >> 32) as u32,
        };
        *(sh_bytes as *mut u64) = b;
        *(sh_bytes as *mut u64).add(1) = c;
    }
    sync_threads();
    (*sh_input, sh_bytes)
}

kernel! {
    /// Algorithm 1 of §4.2 (constraint evaluation and counting), with the in-kernel reset
    /// of §4.3.
    ///
    /// Grid: `blockIdx.y` = the event attribute (row `y` of table `Input`), `blockIdx.x`
    /// and `threadIdx.x` = the constraint `x` of that attribute's row of `Constraints`;
    /// the grid covers the longest selected row. Dynamic shared memory: `shInput` (one
    /// [`DevAttr`], 24 bytes padded to 32) then up to `sh_str_cap` bytes of the
    /// attribute's string, which the block copies there when it fits (else it is read
    /// from global memory).
    ///
    /// Thread `(x, y)`: (reset) when `reset != 0`, zeroes its grid-stride share of the idle
    /// copies `reset_count[0..n_filters]` and `reset_interfaces[0..n_interfaces]`, adjacent
    /// threads writing adjacent words; (lines 4-7) thread 0 copies `input[y]` to shared
    /// memory; (9-11) stops when `x >= SizeC[RowId]`; (12) reads `Constraints[RowId][x]`
    /// (global, coalesced); (15) evaluates `sat`; (19) `atomicInc`s `count[FilterId]`
    /// (global); (20-22) the thread that brings the count to `SizeF` marks
    /// `interfaces[InterfaceId]` (global; an atomic OR of 1, the paper's plain store of
    /// the same value made race-free for the host emulator).
    pub fn ccm_match(t: MatchTables<'static>, input: *const DevAttr, ebytes: *const u8, sh_str_cap: u32) {
        if t.reset != 0 {
            reset_idle(t.reset_count.ptr(), t.reset_interfaces.ptr(), t.n_filters, t.n_interfaces);
        }
        let (attr, abytes) = stage_copied(input, ebytes, sh_str_cap);
        let i = count_row::<false>(
            &attr, abytes, t.constraints.ptr(), t.row_start.ptr(), t.size_c.ptr(), t.cpool.ptr(),
            t.size_f.ptr(), t.filter_iface.ptr(), t.count.ptr(),
        );
        mark(i, t.interfaces.ptr());
    }

    /// Algorithm 1 as [`ccm_match`], with table `Input` passed in the launch's parameters
    /// instead of a copy to global memory (beyond the paper: one host-to-device copy
    /// less per event). Up to [`INLINE_ATTRS`] attributes, strings up to
    /// [`INLINE_BYTES`] bytes, each an [`InlineAttr`] of `ev`.
    ///
    /// Thread `(x, y)`: resets as [`ccm_match`]; thread 0 writes attribute `y` from the
    /// parameters to shared memory (`shInput`, then its 16 bytes); then lines 8-23.
    pub fn ccm_match_inline(t: MatchTables<'static>, ev: InlineEvent) {
        if t.reset != 0 {
            reset_idle(t.reset_count.ptr(), t.reset_interfaces.ptr(), t.n_filters, t.n_interfaces);
        }
        let (attr, abytes) = stage_inline(ev.attr(block_idx_y()));
        let i = count_row::<false>(
            &attr, abytes, t.constraints.ptr(), t.row_start.ptr(), t.size_c.ptr(), t.cpool.ptr(),
            t.size_f.ptr(), t.filter_iface.ptr(), t.count.ptr(),
        );
        mark(i, t.interfaces.ptr());
    }

    /// [`ccm_match`] with the mapped output (beyond the paper): besides marking the device
    /// copy of `Interfaces` (which, reset in the kernel as in §4.3, makes each interface
    /// listed once), the thread that first marks interface `i` appends `seq << 32 | i` to
    /// `out`, page-locked host memory mapped into the device, at the index it takes from
    /// the device counter `tally`. The grid's first thread zeroes the idle counter
    /// `reset_tally`. The host, after one synchronisation, reads `out` from the start
    /// while an entry carries this event's `seq`: no copy back, and no reset of `out`.
    /// `SizeF` and `InterfaceId` are read before the increment of `Count` (see
    /// [`count_constraint`]).
    pub fn ccm_match_mapped(
        t: MatchTables<'static>,
        input: *const DevAttr,
        ebytes: *const u8,
        sh_str_cap: u32,
        out: *mut u64,
        tally: *mut u32,
        reset_tally: *mut u32,
        seq: u32,
    ) {
        reset_mapped(t.reset, t.reset_count.ptr(), t.reset_interfaces.ptr(), t.n_filters, t.n_interfaces, reset_tally);
        let (attr, abytes) = stage_copied(input, ebytes, sh_str_cap);
        let i = count_row::<true>(
            &attr, abytes, t.constraints.ptr(), t.row_start.ptr(), t.size_c.ptr(), t.cpool.ptr(),
            t.size_f.ptr(), t.filter_iface.ptr(), t.count.ptr(),
        );
        mark_mapped(i, t.interfaces.ptr(), tally, out, seq);
    }

    /// [`ccm_match_inline`] with the mapped output of [`ccm_match_mapped`] (beyond the
    /// paper): nothing is copied in or out, one launch and one synchronisation per event.
    /// Each attribute also carries `r` = `RowStart[RowId] | SizeC[RowId] << 32` (the
    /// host knows both), which saves each thread the dependent reads of `RowStart` and
    /// `SizeC`; `row_start` and `size_c` are not read. `SizeF` and `InterfaceId` are read
    /// before the increment of `Count` (see [`count_constraint`]).
    pub fn ccm_match_inline_mapped(
        t: MatchTables<'static>,
        ev: InlineEvent,
        out: *mut u64,
        tally: *mut u32,
        reset_tally: *mut u32,
        seq: u32,
    ) {
        reset_mapped(t.reset, t.reset_count.ptr(), t.reset_interfaces.ptr(), t.n_filters, t.n_interfaces, reset_tally);
        let w = ev.attr(block_idx_y());
        let (attr, abytes) = stage_inline(w);
        // Lines 8-12 with the row's place and length from the parameters.
        let r = w.r;
        let x = block_idx_x() * block_dim_x() + thread_idx_x();
        if x >= (r >> 32) as u32 {
            return;
        }
        let c = *t.constraints.add((r as u32 + x) as usize);
        let i = count_constraint::<true>(&c, &attr, abytes, t.cpool.ptr(), t.size_f.ptr(), t.filter_iface.ptr(), t.count.ptr());
        mark_mapped(i, t.interfaces.ptr(), tally, out, seq);
    }

    /// Batched matching (beyond the paper): events `[blockIdx.y * chunk, ..)` of the
    /// batch `b` against every filter of `t` ([`FilterMajorTables`]), one thread per
    /// filter slot. Dynamic shared memory: the chunk's event signatures (`chunk` u64s),
    /// loaded by the block's threads.
    ///
    /// Thread `f`: for each event `e` of the chunk whose names include all of the
    /// filter's (signature test, exact for <= 64 names, a pre-filter above), unless its
    /// interface already matched `e`: finds each constraint's attribute among `e`'s
    /// (global `attrs`, a few per event), evaluates `sat`, and on a full match sets
    /// `out[e * n_interfaces + InterfaceId]` (global). Counters are not needed: a thread
    /// sees the whole filter.
    pub fn ccm_match_batch(t: FilterMajorTables<'static>, b: EventBatch<'static>, out: *mut u32) {
        let tid = thread_idx_x();
        let first = block_idx_y() * b.chunk;
        let last = if first + b.chunk < b.n_events { first + b.chunk } else { b.n_events };
        let sh_sig = dynamic_shared::<u64>();
        let mut k = tid;
        while first + k < last {
            *sh_sig.add(k as usize) = b.events.read((first + k) as usize).sig;
            k += block_dim_x();
        }
        sync_threads();
        let f = (block_idx_x() * block_dim_x() + tid) as usize;
        if f >= t.n_filters as usize {
            return;
        }
        let size = t.size_f.read(f);
        if size == 0 {
            return;
        }
        let fsig = t.filter_sig.read(f);
        let iface = t.filter_iface.read(f);
        let fc = t.filter_start.read(f) as usize;
        let mut e = first;
        while e < last {
            let esig = *sh_sig.add((e - first) as usize);
            let slot = out.add((e * t.n_interfaces + iface) as usize);
            // Per-interface pruning (an atomic read: other threads may be setting it).
            if fsig & !esig == 0 && atomic_or(slot, 0) == 0 {
                let ev = b.events.read(e as usize);
                let (first, end) = (fc as u32, fc as u32 + size);
                if satisfies_all(t.fconstraints, first, end, &ev, b.attrs, b.ebytes, t.cpool.ptr()) {
                    atomic_or(slot, 1);
                }
            }
            e += 1;
        }
    }
}

/// Most interfaces for which [`ccm_persistent()`]'s answering block scans `Interfaces`
/// for the round's tag; above, matching threads append to a list instead.
pub const PERSIST_SCAN_MAX: u32 = 4096;
/// Where the answering block's list of interfaces starts in its shared memory past the
/// ring's (`u32` words, after the counter).
pub const PERSIST_SCAN_LIST_AT: usize = 4;
/// Dynamic shared memory [`ccm_persistent()`] needs beyond the ring's: the answering
/// block's counter and list of at most [`PERSIST_SCAN_MAX`] interfaces.
pub const PERSIST_SHARED_EXTRA: u32 = 4 * (PERSIST_SCAN_LIST_AT as u32 + PERSIST_SCAN_MAX);

/// Request kind of [`ccm_persistent()`]: match one event.
pub const PERSIST_EVENT: u32 = 1;
/// Words of one attribute in a [`ccm_persistent()`] request.
pub const PERSIST_ATTR_WORDS: usize = 5;

kernel! {
    /// Beyond the paper: Algorithm 1 (§4.2) as a persistent kernel. The first seven
    /// parameters are the ring's ([`gpu_kernels::persist`]); the grid is one block per
    /// SM, resident for the kernel's life, and each event is one round of
    /// [`gpu_kernels::persist::serve`].
    ///
    /// A request ([`PERSIST_EVENT`]) is table `Input` with the rows' places, staged by
    /// the ring in shared memory: word 0 = `n_attrs | total << 32`; then per attribute
    /// ([`PERSIST_ATTR_WORDS`] words) `RowId | Type << 32`, `Val` (a string's: its byte
    /// offset in the request's string bytes), `str_id | str_len << 32`, `RowStart[RowId]
    /// | SizeC[RowId] << 32`, and `first`, the attribute's first item in the flattened
    /// space of the event's `total` (attribute, constraint) pairs (the prefix sum of the
    /// rows' lengths); then the string bytes.
    ///
    /// Instead of §4.3's reset of an idle copy (which writes every filter's counter per
    /// event), `Count` and `Interfaces` hold 64-bit words tagged with the round: round
    /// `r` uses the tag `t = (r + 1) << 32`, and a word below `t` is stale, i.e. zero.
    /// Counting a satisfied constraint of filter `f` is `atomicMax(Count[f], t | 1)`:
    /// on a stale word it sets this round's count to 1 and is all; on a current one it
    /// changes nothing, and `atomicAdd(Count[f], 1)` follows, whose low half plus one is
    /// the count (one atomic round trip on the path of a filter's first constraint
    /// instead of two); marking interface `i` is
    /// `atomicMax(Interfaces[i], t)`. With at most [`PERSIST_SCAN_MAX`] interfaces that
    /// is all: the answering block lists the interfaces whose word is at least `t`
    /// (slots from a counter, in a list in shared memory past the ring's:
    /// [`PERSIST_SHARED_EXTRA`] bytes) and answers two ids to a word. With more, the
    /// thread that finds the word below `t` marked it first and appends `i` to a list (`atomicAdd` on `tally[r % 2]`, `list[(r % 2) *
    /// n_interfaces ..]`), which the answering block copies. Nothing is reset but the
    /// idle list counter (global thread 0 zeroes `tally[1 - r % 2]`); the host restarts
    /// the kernel before the tags wrap.
    ///
    /// Every thread, for its grid-stride share of the `total` pairs (item `i` belongs
    /// to the attribute `k` with `first_k <= i < first_k + SizeC`, found by walking
    /// forward: a thread's items ascend): reads `Constraints[RowStart + x]` (global),
    /// evaluates `sat` against the attribute in shared memory, counts (above) and, when
    /// its increment completes the filter (`SizeF`, read before it), marks
    /// `InterfaceId`. Block 0 answers into the response slot in mapped
    /// host memory, the interfaces as `u32`s; status = their number.
    pub fn ccm_persistent(
        req: *const u64,
        resp: *mut u64,
        ctl: *mut u32,
        bcast: *mut u64,
        slots: u32,
        req_words: u32,
        resp_words: u32,
        constraints: *const DevConstraint,
        cpool: *const u8,
        size_f: *const u32,
        filter_iface: *const u32,
        count: *mut u64,
        interfaces: *mut u64,
        tally: *mut u32,
        list: *mut u32,
        n_interfaces: u32,
    ) {
        let ring = gpu_kernels::persist::DeviceRing { req, resp, ctl, bcast, slots, req_words, resp_words };
        let ni = n_interfaces as usize;
        gpu_kernels::persist::serve(
            &ring,
            dynamic_shared::<u64>(),
            |r| {
                let p = (r.round % 2) as usize;
                let gid = global_id_x();
                if gid == 0 {
                    *tally.add(1 - p) = 0;
                }
                if r.kind != PERSIST_EVENT {
                    return;
                }
                let tag = (r.round as u64 + 1) << 32;
                let stride = grid_dim_x() * block_dim_x();
                let w = r.words;
                let n_attrs = *w as u32;
                let total = (*w >> 32) as u32;
                let attrs = w.add(1);
                let ebytes = w.add(1 + PERSIST_ATTR_WORDS * n_attrs as usize) as *const u8;
                let list_p = list.add(p * ni);
                let mut k = 0usize;
                let mut i = gid;
                while i < total {
                    while k + 1 < n_attrs as usize
                        && (*attrs.add((k + 1) * PERSIST_ATTR_WORDS + 4)) as u32 <= i
                    {
                        k += 1;
                    }
                    let a = attrs.add(k * PERSIST_ATTR_WORDS);
                    let (w0, val, w2, place, first) = (*a, *a.add(1), *a.add(2), *a.add(3), *a.add(4) as u32);
                    let attr = DevAttr {
                        row_id: w0 as u32,
                        ty: (w0 >> 32) as u32,
                        val,
                        str_id: w2 as u32,
                        str_len: (w2 >> 32) as u32,
                    };
                    let c = *constraints.add((place as u32 + (i - first)) as usize);
                    let abytes = if attr.ty as u16 == TY_STR { ebytes.add(val as usize) } else { ebytes };
                    if sat(&c, attr.ty as u16, attr.val, attr.str_id, attr.str_len, abytes, cpool) {
                        let f = c.key as usize;
                        let need = *size_f.add(f);
                        let iface = *filter_iface.add(f);
                        // The round's first count is the max itself (one atomic on the
                        // path instead of two); later ones add.
                        let old = atomic_max_u64(count.add(f), tag | 1);
                        let n = if old < tag {
                            1
                        } else {
                            (atomic_add_u64(count.add(f), 1) as u32).wrapping_add(1)
                        };
                        if n == need && iface < n_interfaces {
                            // Few interfaces: the answering block finds the tagged ones
                            // (nothing more on this thread's path). Many: a list.
                            let first = atomic_max_u64(interfaces.add(iface as usize), tag) < tag;
                            if n_interfaces > PERSIST_SCAN_MAX && first {
                                let at = atomic_add(tally.add(p), 1);
                                if at < n_interfaces {
                                    volatile_store_u32(list_p.add(at as usize), iface);
                                }
                            }
                        }
                    }
                    i += stride;
                }
            },
            |r, out| {
                if r.kind != PERSIST_EVENT {
                    return (0, 0);
                }
                let p = (r.round % 2) as usize;
                if n_interfaces <= PERSIST_SCAN_MAX {
                    // Every interface whose word carries this round's tag, in the order
                    // the block's threads take slots (a counter and the list in shared
                    // memory), then two ids to an answer word.
                    let tag = (r.round as u64 + 1) << 32;
                    let taken = dynamic_shared::<u8>()
                        .add(gpu_kernels::persist::shared_bytes(req_words) as usize)
                        as *mut u32;
                    let ids = taken.add(PERSIST_SCAN_LIST_AT);
                    if thread_idx_x() == 0 {
                        *taken = 0;
                    }
                    sync_threads();
                    let mut j = thread_idx_x();
                    while j < n_interfaces {
                        if volatile_load_u64(interfaces.add(j as usize)) >= tag {
                            // SAFETY: at most one slot per interface: `at < n_interfaces
                            // <= PERSIST_SCAN_MAX`, the list's room in shared memory.
                            let at = atomic_add(taken, 1);
                            *ids.add(at as usize) = j;
                        }
                        j += block_dim_x();
                    }
                    sync_threads();
                    let m = *taken;
                    // SAFETY: `m <= n_interfaces <= PERSIST_SCAN_MAX` ids in shared memory.
                    return (m, out.put_u32s(ids, m));
                }
                // More than `n_interfaces` would be a bug: the host reports it; the copy
                // stays within the list and the slot.
                let m = volatile_load_u32(tally.add(p));
                let n_out = if m < n_interfaces { m } else { n_interfaces };
                // SAFETY: the round's list holds `n_interfaces >= n_out` entries.
                (m, out.put_u32s(list.add(p * ni), n_out))
            },
        );
    }
}
