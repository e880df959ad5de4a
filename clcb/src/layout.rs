//! Model -> the flat device tables of §4.3, Fig. 2 (built on the host, uploaded once).
//!
//! Per filter (index = [`FilterId`](crate::model::FilterId), contiguous so that thread
//! `id` of the `Loc` kernel reads element `id` of each, coalesced):
//! - `FPos` (`float2`) and `SqDist` (`f32`): the area, kept apart so that a move copies
//!   8 + 4 bytes and nothing else; beyond the paper, a rectangle is its low corner in
//!   `FPos`, a negative `SqDist` ([`clcb_kernels::RECT_SQ`]: the circle's test holds no
//!   point) and its high corner in `AreaHi` (`float2`, read only for rectangles;
//!   [`device_area`]);
//! - `BF`: a 32-bit Bloom filter of the filter's constraint names (one bit per name, the
//!   bit chosen by hashing the name's row, [`bloom_bit`]);
//! - `SizeF` and the subscription index (CCM's `Filters` table, `InterfaceId` column
//!   becoming a subscription index);
//! - `FCount` (allocated by the engine).
//!
//! Content (CCM's Fig. 2a): the `Names` map (host) gives each constraint name a row of
//! `Constraints`; rows are stored one after the other (`row_start`, `SizeC`), each
//! element an `(Op, Type, Val, FilterId)` [`DevConstraint`]; string values live in one
//! byte pool. For the batched mode (beyond the paper) the same constraints are also laid
//! out filter-major (`fcons_start`, `fcons`), each tagged with its name's row.
//!
//! The event side (Fig. 2b) is [`Tables::encode_event`]: `InputBF`, `InputPos` and
//! `Attrs` in one run of words, so that one copy moves the whole input (step S1).
//! Attributes whose name no constraint uses are left out: no constraint can read them.
//!
//! Beyond the paper, a flat batch of events ([`crate::batch::EventBatch`]) is laid out
//! the same way, word for word, by [`Tables::plan_batch`] and [`Tables::write_batch`]:
//! the batch's names translated to rows once per call ([`Tables::batch_rows`]), then one
//! tight loop over its flat arrays per event (no look-up, no pointer but the strings'
//! arena), on all cores.

use crate::batch::{translate, EventBatch, UNKNOWN};
use crate::model::{Area, Event, Subscriptions, Value};
use ccm::batch::TY_STR;
use ccm::hash::ShortKeyMap;
use clcb_kernels::{
    str_bits, DevAttr, DevConstraint, Float2, InputHeader, ATTR_WORDS, HEADER_WORDS, KIND_FLOAT,
    KIND_INT, KIND_STR, OP_EQ, OP_GE, OP_GT, OP_LE, OP_LT, OP_NE, OP_PREFIX, OP_SUBSTR, OP_SUFFIX,
};
use rayon::prelude::*;
use std::collections::HashMap;
use std::ops::Range;

// A batch's type tags are the kernels' value kinds: an attribute's tag is its kind.
const _: () = assert!(
    ccm::batch::TY_INT == KIND_INT && ccm::batch::TY_FLOAT == KIND_FLOAT && TY_STR == KIND_STR
);

/// Filters per part of [`Tables::build`]'s work on all cores.
const BUILD_PART: usize = 4096;

/// Events of a batch laid out by one task of [`Tables::plan_batch`] and
/// [`Tables::write_batch`].
const BATCH_TASK: usize = 256;

/// A pointer into a vector that the parts of [`Tables::name_major`] write at disjoint
/// places from several threads.
struct SharedOut(*mut DevConstraint);

// SAFETY: the threads sharing it write disjoint elements (see `Tables::name_major`).
unsafe impl Sync for SharedOut {}

/// The Bloom-filter bit of the name of row `row` (Fibonacci hashing to 0..32).
pub fn bloom_bit(row: u32) -> u32 {
    1u32 << (row.wrapping_mul(0x9E37_79B9) >> 27)
}

/// The device code of an operator.
pub fn op_code(op: crate::model::Op) -> u32 {
    use crate::model::Op::*;
    match op {
        Eq => OP_EQ,
        Ne => OP_NE,
        Lt => OP_LT,
        Gt => OP_GT,
        Le => OP_LE,
        Ge => OP_GE,
        Prefix => OP_PREFIX,
        Suffix => OP_SUFFIX,
        Substr => OP_SUBSTR,
    }
}

/// Kind and bits of a value; strings are appended to `pool` (bits = [`str_bits`] of
/// their offset from `base` and length). Offsets and lengths must fit 32 bits
/// ([`Tables::build`] and the engine check the pools' sizes).
fn encode_value(v: &Value, pool: &mut Vec<u8>, base: usize) -> (u32, u64) {
    match v {
        Value::Int(i) => (KIND_INT, *i as u64),
        Value::Float(x) => (KIND_FLOAT, x.to_bits()),
        Value::Str(s) => {
            let off = base + pool.len();
            pool.extend_from_slice(s.as_bytes());
            (KIND_STR, str_bits(off as u32, s.len() as u32))
        }
    }
}

/// An area as the device tables hold it: `FPos`, `SqDist` and `AreaHi` (see the
/// module's docs).
pub fn device_area(a: &Area) -> (Float2, f32, Float2) {
    match *a {
        Area::Circle { center, sq_radius } => (
            Float2 {
                x: center.x,
                y: center.y,
            },
            sq_radius,
            Float2::default(),
        ),
        Area::Rect { lo, hi } => (
            Float2 { x: lo.x, y: lo.y },
            clcb_kernels::RECT_SQ,
            Float2 { x: hi.x, y: hi.y },
        ),
    }
}

/// The host copy of every persistent device table of Fig. 2a.
#[derive(Clone, Debug, Default)]
pub struct Tables {
    /// CCM's `Names`: constraint name -> row of `Constraints`.
    pub names: HashMap<String, u32>,
    /// The same map for the per-event look-ups of [`Tables::encode_into`] (a name known
    /// by its length and two words read from its ends, [`ccm::hash::ShortKeyMap`]).
    pub name_rows: ShortKeyMap<u32>,
    /// Number of subscriptions (`k`, the length of `SubsBV`).
    pub subscriptions: usize,
    pub fpos: Vec<Float2>,
    pub sq_dist: Vec<f32>,
    /// `AreaHi`: a rectangle's high corner (zero for a circle).
    pub area_hi: Vec<Float2>,
    pub bf: Vec<u32>,
    pub size_f: Vec<u32>,
    /// Subscription index of each filter.
    pub filter_sub: Vec<u32>,
    /// `Constraints`, row after row (name-major), `tag` = filter.
    pub constraints: Vec<DevConstraint>,
    pub row_start: Vec<u32>,
    /// `SizeC`: the length of each row.
    pub size_c: Vec<u32>,
    /// The same constraints filter-major (batched mode), `tag` = name row.
    pub fcons: Vec<DevConstraint>,
    /// `fcons_start[f]..fcons_start[f + 1]`: filter `f`'s constraints in `fcons`.
    pub fcons_start: Vec<u32>,
    /// String values of constraints.
    pub cstrings: Vec<u8>,
}

impl Tables {
    /// Lays out `subs` (§4.3). Linear in the number of constraints, on all cores: the
    /// names' rows numbered in order of first appearance (each part's new names found in
    /// parallel, then merged in order); the per-filter tables; the filter-major
    /// constraints and their strings written in parts of consecutive filters straight
    /// into their places (each part's place counted first); then `Constraints`, the
    /// same constraints name-major, by a counting sort whose parts each write their own
    /// places of every row. The tables a pass over the filters in order makes.
    pub fn build(subs: &Subscriptions) -> Tables {
        Self::build_with(subs, true)
    }

    /// [`Tables::build`] without what only the paper's kernels read: the name-major
    /// `Constraints` (`constraints`, `row_start`) and the areas (`fpos`, `sq_dist`,
    /// `area_hi`) are left empty. The names' rows, the filter-major constraints and
    /// their strings, `size_f`, `size_c`, `bf` and `filter_sub` are
    /// [`Tables::build`]'s.
    pub fn build_filter_major(subs: &Subscriptions) -> Tables {
        Self::build_with(subs, false)
    }

    /// What the cell index ([`crate::cells`]) reads of [`Tables::build_filter_major`],
    /// of subscriptions held as columns: their constraints, strings and names' numbers
    /// are already the filter-major tables, so they are moved in as they are, with each
    /// filter's subscription; the counts the cell index does not read (`size_f`,
    /// `size_c`, `bf`: two passes over every constraint) are left empty. Gives the
    /// tables, the filters' areas and the subscriptions' ids.
    pub fn from_columns(
        cols: crate::columns::SubscriptionColumns,
    ) -> (Tables, Vec<Area>, Vec<crate::model::SubscriptionId>) {
        let c = cols.into_parts();
        let mut t = Tables {
            subscriptions: c.ids.len(),
            ..Tables::default()
        };
        for (row, name) in c.names.into_iter().enumerate() {
            t.name_rows.insert(name.as_bytes(), row as u32);
            t.names.insert(name, row as u32);
        }
        t.filter_sub = c.filter_sub;
        t.fcons_start = c.cons_start;
        t.fcons = c.cons;
        t.cstrings = c.strings;
        (t, c.area, c.ids)
    }

    fn build_with(subs: &Subscriptions, paper: bool) -> Tables {
        let filters = subs.filters_by_id();
        let n = filters.len();
        let mut t = Tables {
            subscriptions: subs.len(),
            ..Tables::default()
        };
        // Names' rows in order of first appearance.
        let parts: Vec<Vec<&str>> = filters
            .par_chunks(BUILD_PART)
            .map(|part| {
                let mut seen: ShortKeyMap<u32> = ShortKeyMap::default();
                let mut order = Vec::new();
                for c in part.iter().flat_map(|(_, f)| &f.constraints) {
                    if seen.get(c.name.as_bytes()).is_none() {
                        seen.insert(c.name.as_bytes(), 0);
                        order.push(c.name.as_str());
                    }
                }
                order
            })
            .collect();
        for name in parts.into_iter().flatten() {
            if t.name_rows.get(name.as_bytes()).is_none() {
                let row = t.names.len() as u32;
                t.names.insert(name.to_string(), row);
                t.name_rows.insert(name.as_bytes(), row);
            }
        }
        let rows = t.names.len();
        let name_rows = &t.name_rows;
        let row_of = |name: &str| name_rows.get(name.as_bytes()).expect("numbered above");
        // Per filter: area, counts, subscription.
        if paper {
            let areas: Vec<(Float2, f32, Float2)> = filters
                .par_iter()
                .map(|(_, f)| device_area(&f.area))
                .collect();
            t.fpos = areas.par_iter().map(|a| a.0).collect();
            t.sq_dist = areas.par_iter().map(|a| a.1).collect();
            t.area_hi = areas.par_iter().map(|a| a.2).collect();
        }
        t.size_f = filters
            .par_iter()
            .map(|(_, f)| f.constraints.len() as u32)
            .collect();
        t.filter_sub = filters.par_iter().map(|&(s, _)| s as u32).collect();
        t.fcons_start = Vec::with_capacity(n + 1);
        let mut at = 0u32;
        for &len in &t.size_f {
            t.fcons_start.push(at);
            at += len;
        }
        t.fcons_start.push(at);
        // Per part of consecutive filters: its string bytes and its constraints per row
        // (counted on all cores), then its places (running sums in part order).
        let counts: Vec<(usize, Vec<u32>)> = filters
            .par_chunks(BUILD_PART)
            .map(|part| {
                let (mut bytes, mut per_row) = (0usize, vec![0u32; rows]);
                for c in part.iter().flat_map(|(_, f)| &f.constraints) {
                    per_row[row_of(&c.name) as usize] += 1;
                    if let Value::Str(v) = &c.value {
                        bytes += v.len();
                    }
                }
                (bytes, per_row)
            })
            .collect();
        let mut string_at = Vec::with_capacity(counts.len() + 1);
        string_at.push(0usize);
        for (bytes, _) in &counts {
            string_at.push(string_at.last().expect("pushed") + bytes);
        }
        t.size_c = vec![0u32; rows];
        for (_, per_row) in &counts {
            t.size_c.iter_mut().zip(per_row).for_each(|(a, b)| *a += b);
        }
        // The filter-major constraints and their strings, each part into its own run
        // of both, and each filter's Bloom filter.
        let mut fcons = Vec::with_capacity(at as usize);
        fcons.par_extend(rayon::iter::repeat_n(DevConstraint::default(), at as usize));
        let mut cstrings = vec![0u8; *string_at.last().expect("pushed")];
        let mut runs = Vec::with_capacity(counts.len());
        let (mut cons_left, mut bytes_left) = (&mut fcons[..], &mut cstrings[..]);
        for (p, part) in filters.chunks(BUILD_PART).enumerate() {
            let first = p * BUILD_PART;
            let ncons = (t.fcons_start[first + part.len()] - t.fcons_start[first]) as usize;
            let (c, cr) = cons_left.split_at_mut(ncons);
            let (b, br) = bytes_left.split_at_mut(string_at[p + 1] - string_at[p]);
            runs.push((part, c, (string_at[p], b)));
            (cons_left, bytes_left) = (cr, br);
        }
        let bf: Vec<Vec<u32>> = runs
            .into_par_iter()
            .map(|(part, cons, (base, bytes))| {
                let mut bf = Vec::with_capacity(part.len());
                let (mut k, mut pool) = (0usize, 0usize);
                for (_, f) in part {
                    let mut b = 0u32;
                    for c in &f.constraints {
                        let row = row_of(&c.name);
                        b |= bloom_bit(row);
                        let (kind, bits) = match &c.value {
                            Value::Str(v) => {
                                bytes[pool..pool + v.len()].copy_from_slice(v.as_bytes());
                                let off = (base + pool) as u32;
                                pool += v.len();
                                (KIND_STR, str_bits(off, v.len() as u32))
                            }
                            v => encode_value(v, &mut Vec::new(), 0),
                        };
                        cons[k] = DevConstraint {
                            op: op_code(c.op) as u16,
                            kind: kind as u16,
                            tag: row,
                            bits,
                        };
                        k += 1;
                    }
                    bf.push(b);
                }
                bf
            })
            .collect();
        t.bf = bf.into_iter().flatten().collect();
        t.fcons = fcons;
        t.cstrings = cstrings;
        if paper {
            t.name_major(&counts);
        }
        t
    }

    /// `Constraints` from the filter-major constraints (a counting sort by row, each
    /// row's in filter order), `counts` being each part's constraints per row (parts of
    /// [`BUILD_PART`] consecutive filters): each part writes its own places of every
    /// row, on all cores.
    fn name_major(&mut self, counts: &[(usize, Vec<u32>)]) {
        let rows = self.size_c.len();
        self.row_start = Vec::with_capacity(rows);
        let mut next = 0u32;
        for &len in &self.size_c {
            self.row_start.push(next);
            next += len;
        }
        // Where each part's constraints of each row go.
        let mut fill = self.row_start.clone();
        let places: Vec<Vec<u32>> = counts
            .iter()
            .map(|(_, per_row)| {
                let here = fill.clone();
                fill.iter_mut().zip(per_row).for_each(|(a, b)| *a += b);
                here
            })
            .collect();
        let mut out = Vec::with_capacity(self.fcons.len());
        out.par_extend(rayon::iter::repeat_n(
            DevConstraint::default(),
            self.fcons.len(),
        ));
        let dst = SharedOut(out.as_mut_ptr());
        let (fcons, starts, len) = (&self.fcons, &self.fcons_start, out.len());
        places
            .into_par_iter()
            .enumerate()
            .for_each(|(p, mut place)| {
                let dst = &dst;
                let filters = p * BUILD_PART..((p + 1) * BUILD_PART).min(starts.len() - 1);
                for f in filters {
                    for k in starts[f]..starts[f + 1] {
                        let mut c = fcons[k as usize];
                        let at = place[c.tag as usize] as usize;
                        place[c.tag as usize] += 1;
                        c.tag = f as u32;
                        assert!(at < len);
                        // SAFETY: `at < len`, inside `out`, which outlives this loop and
                        // is not otherwise touched during it; the parts' places are
                        // disjoint (part `p`'s run of row `r` is `per_row[r]` places
                        // from the parts' running sum), so no two threads write one
                        // element.
                        unsafe { dst.0.add(at).write(c) };
                    }
                }
            });
        self.constraints = out;
    }
    /// Number of filters (`n`).
    pub fn filters(&self) -> usize {
        self.fpos.len()
    }

    /// The longest `Constraints` row among the rows `attrs` read (the `Cont` grid's width).
    pub fn longest_row(&self, attrs: &[DevAttr]) -> u32 {
        attrs
            .iter()
            .map(|a| self.size_c[a.row as usize])
            .max()
            .unwrap_or(0)
    }

    /// Appends the event's device input (Fig. 2b) to `out` as 32-bit words: the
    /// [`InputHeader`] (`InputBF`, `InputPos`), the `Attrs` of names that have a row,
    /// then their string bytes (offsets relative to the event's first word), padded to a
    /// multiple of 4 words ([`Tables::encode_into`]). Returns the number of attributes
    /// written.
    pub fn encode_event(&self, e: &Event, out: &mut Vec<u32>) -> u32 {
        let start = out.len();
        out.resize(start + Self::encode_bound(e), 0);
        let (words, n_attrs) = self.encode_into(e, &mut out[start..]);
        out.truncate(start + words);
        n_attrs
    }

    /// The most words [`Tables::encode_into`] writes for `e` (every attribute kept).
    pub fn encode_bound(e: &Event) -> usize {
        let strings: usize = e
            .attributes()
            .iter()
            .map(|a| match &a.value {
                Value::Str(s) => s.len(),
                _ => 0,
            })
            .sum();
        (HEADER_WORDS + ATTR_WORDS * e.attributes().len() + strings.div_ceil(4)).next_multiple_of(4)
    }

    /// Writes the event's device input (the layout of [`Tables::encode_event`]) at the
    /// start of `out`, which must hold [`Tables::encode_bound`] words; one look-up per
    /// attribute, no allocation for events of up to 32 attributes. Returns the words
    /// written (a multiple of 4, the rest of `out` untouched) and the attributes.
    pub fn encode_into(&self, e: &Event, out: &mut [u32]) -> (usize, u32) {
        let attrs = e.attributes();
        // The rows of the known names, in the event's order (`u32::MAX`: unknown).
        let mut small = [u32::MAX; 32];
        let mut large = Vec::new();
        let rows: &mut [u32] = if attrs.len() <= small.len() {
            &mut small[..attrs.len()]
        } else {
            large.resize(attrs.len(), u32::MAX);
            &mut large
        };
        let mut bf = 0u32;
        let mut n = 0usize;
        for (a, r) in attrs.iter().zip(rows.iter_mut()) {
            if let Some(row) = self.name_rows.get(a.name.as_bytes()) {
                bf |= bloom_bit(row);
                *r = row;
                n += 1;
            }
        }
        let bytes_at = (HEADER_WORDS + ATTR_WORDS * n) * 4;
        let mut pool = bytes_at;
        let mut i = 0;
        for (a, &row) in attrs.iter().zip(rows.iter()) {
            if row == u32::MAX {
                continue;
            }
            let (kind, bits) = match &a.value {
                Value::Int(v) => (KIND_INT, *v as u64),
                Value::Float(x) => (KIND_FLOAT, x.to_bits()),
                Value::Str(s) => {
                    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut *out);
                    bytes[pool..pool + s.len()].copy_from_slice(s.as_bytes());
                    let bits = str_bits(pool as u32, s.len() as u32);
                    pool += s.len();
                    (KIND_STR, bits)
                }
            };
            let at = HEADER_WORDS + ATTR_WORDS * i;
            out[at..at + ATTR_WORDS].copy_from_slice(bytemuck::cast_slice(&[DevAttr {
                row,
                kind,
                bits,
            }]));
            i += 1;
        }
        // Whole 16-byte units, so that the next event of a batch starts aligned for the
        // 8-byte values of its `Attrs`; the padding zeroed.
        let words = pool.div_ceil(16) * 4;
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut *out);
        bytes[pool..words * 4].fill(0);
        let head = InputHeader {
            bf,
            pos: Float2 {
                x: e.loc.x,
                y: e.loc.y,
            },
            n_attrs: n as u32,
        };
        out[..HEADER_WORDS].copy_from_slice(bytemuck::cast_slice(&[head]));
        (words, n as u32)
    }

    /// The row of each name of `b`'s dictionary ([`UNKNOWN`]: no constraint reads it):
    /// the one look-up per name of a call over a batch.
    pub fn batch_rows(&self, b: &EventBatch) -> Vec<u32> {
        translate(b.content().names(), |n| self.name_rows.get(n.as_bytes()))
    }

    /// Words event `i` of `b` takes when laid out ([`Tables::write_batch_event`]);
    /// `rows` from [`Tables::batch_rows`].
    #[inline]
    pub fn batch_event_words(b: &EventBatch, rows: &[u32], i: usize) -> usize {
        let spans = b.content().strings().spans();
        let (mut n, mut bytes) = (0usize, 0usize);
        for a in b.attrs_of(i) {
            if rows[a.name as usize] != UNKNOWN {
                n += 1;
                if a.ty == TY_STR {
                    bytes += spans[a.val as usize].1 as usize;
                }
            }
        }
        ((HEADER_WORDS + ATTR_WORDS * n) * 4 + bytes).div_ceil(16) * 4
    }

    /// Writes event `i` of `b` (the layout of [`Tables::encode_event`], word for word)
    /// over the whole of `out`, which holds [`Tables::batch_event_words`] words; returns
    /// its attributes. One pass over its attributes and the strings' arena.
    #[inline]
    pub fn write_batch_event(b: &EventBatch, rows: &[u32], i: usize, out: &mut [u32]) -> u32 {
        let strings = b.content().strings();
        let (spans, arena) = (strings.spans(), strings.arena());
        let attrs = b.attrs_of(i);
        let n = attrs
            .iter()
            .filter(|a| rows[a.name as usize] != UNKNOWN)
            .count();
        let mut pool = (HEADER_WORDS + ATTR_WORDS * n) * 4;
        let mut bf = 0u32;
        let mut at = HEADER_WORDS;
        for a in attrs {
            let row = rows[a.name as usize];
            if row == UNKNOWN {
                continue;
            }
            bf |= bloom_bit(row);
            let bits = if a.ty == TY_STR {
                let (o, len) = spans[a.val as usize];
                let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut *out);
                bytes[pool..pool + len as usize]
                    .copy_from_slice(&arena[o as usize..(o + len) as usize]);
                let bits = str_bits(pool as u32, len);
                pool += len as usize;
                bits
            } else {
                a.val
            };
            let attr = DevAttr {
                row,
                kind: a.ty,
                bits,
            };
            out[at..at + ATTR_WORDS].copy_from_slice(bytemuck::cast_slice(&[attr]));
            at += ATTR_WORDS;
        }
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut *out);
        bytes[pool..].fill(0);
        let head = InputHeader {
            bf,
            pos: Float2 {
                x: b.xs()[i],
                y: b.ys()[i],
            },
            n_attrs: n as u32,
        };
        out[..HEADER_WORDS].copy_from_slice(bytemuck::cast_slice(&[head]));
        n as u32
    }

    /// Where each of the events `range` of `b` will lie, laid out one after another from
    /// word `base`: `offsets` becomes `range.len() + 1` words, event `range.start + k` at
    /// `offsets[k]`, the end last. On all cores (tasks of `BATCH_TASK` events).
    /// Returns the end (the offsets are only meaningful when it is below `u32::MAX`).
    pub fn plan_batch(
        b: &EventBatch,
        rows: &[u32],
        range: Range<usize>,
        base: usize,
        offsets: &mut Vec<u32>,
    ) -> usize {
        let m = range.len();
        offsets.clear();
        offsets.resize(m + 1, 0);
        // Each task's sizes, as offsets from its first event, and its total ...
        let totals: Vec<usize> = offsets[..m]
            .par_chunks_mut(BATCH_TASK)
            .enumerate()
            .map(|(t, part)| {
                let first = range.start + t * BATCH_TASK;
                let mut at = 0usize;
                for (k, o) in part.iter_mut().enumerate() {
                    *o = at as u32;
                    at += Self::batch_event_words(b, rows, first + k);
                }
                at
            })
            .collect();
        // ... then each task's start, added to its offsets.
        let mut starts = Vec::with_capacity(totals.len());
        let mut at = base;
        for t in &totals {
            starts.push(at);
            at += t;
        }
        offsets[m] = at as u32;
        offsets[..m]
            .par_chunks_mut(BATCH_TASK)
            .zip(starts)
            .for_each(|(part, s)| part.iter_mut().for_each(|o| *o += s as u32));
        at
    }

    /// Lays the events `range` of `b` out into `out` where `offsets` (from
    /// [`Tables::plan_batch`]) puts them, on all cores; the words before `offsets[0]`
    /// are left as they are.
    pub fn write_batch(
        b: &EventBatch,
        rows: &[u32],
        range: Range<usize>,
        offsets: &[u32],
        out: &mut [u32],
    ) {
        let m = range.len();
        let mut rest = &mut out[offsets[0] as usize..offsets[m] as usize];
        let mut tasks = Vec::with_capacity(m.div_ceil(BATCH_TASK));
        for t in (0..m).step_by(BATCH_TASK) {
            let end = (t + BATCH_TASK).min(m);
            let (here, r) = rest.split_at_mut((offsets[end] - offsets[t]) as usize);
            tasks.push((t, end, here));
            rest = r;
        }
        tasks.into_par_iter().for_each(|(t, end, mut here)| {
            for k in t..end {
                let len = (offsets[k + 1] - offsets[k]) as usize;
                let (event, r) = here.split_at_mut(len);
                Self::write_batch_event(b, rows, range.start + k, event);
                here = r;
            }
        });
    }

    /// The attributes of an event encoded at `words` (for the `Cont` grid).
    pub fn attrs_of(words: &[u32]) -> &[DevAttr] {
        let head: &InputHeader = bytemuck::from_bytes(bytemuck::cast_slice(&words[..HEADER_WORDS]));
        let n = head.n_attrs as usize;
        bytemuck::cast_slice(&words[HEADER_WORDS..HEADER_WORDS + ATTR_WORDS * n])
    }
}

/// The circle that [`Grid`] files an area by: a circle itself; a rectangle (`SqDist`
/// negative, `AreaHi` = `hi`) its centre, rounded to `f32`, and the square of its
/// distance to the farthest corner, computed in `f64` and widened by a relative 2^-20
/// (the grid keeps its own margin for the `f32` tests on top).
pub fn enclosing(pos: Float2, sq: f32, hi: Float2) -> (Float2, f32) {
    if sq >= 0.0 {
        return (pos, sq);
    }
    let (x0, y0, x1, y1) = (
        f64::from(pos.x),
        f64::from(pos.y),
        f64::from(hi.x),
        f64::from(hi.y),
    );
    let c = Float2 {
        x: ((x0 + x1) / 2.0) as f32,
        y: ((y0 + y1) / 2.0) as f32,
    };
    let (cx, cy) = (f64::from(c.x), f64::from(c.y));
    let dx = (cx - x0).abs().max((x1 - cx).abs());
    let dy = (cy - y0).abs().max((y1 - cy).abs());
    let r2 = (dx * dx + dy * dy) * (1.0 + 1e-6);
    (c, (r2 as f32).min(f32::MAX))
}

/// Beyond the paper: a uniform grid over the filters' centres, so that an event needs to
/// look only at the filters of the 3x3 cells around it (plus a short list of filters
/// kept outside the grid).
///
/// The cell side is at least the radius of every filter in the grid (the 99th
/// percentile of the radii, widened by a small margin for `f32` rounding), so a filter
/// whose area holds an event has its centre in the event's cell or a neighbour.
/// Coordinates outside the grid clamp to its border cells, which keeps that true.
/// Filters with larger radii, and filters moved out of their cell after the build, are
/// on the *outside* list that every event scans. `cell_filters` lists the grid's members
/// cell after cell (`cell_start`), then the outside list.
#[derive(Clone, Debug, Default)]
pub struct Grid {
    pub origin: [f64; 2],
    /// Cell side.
    pub cell: f64,
    /// Cells per side.
    pub side: u32,
    /// The largest radius a grid member may have.
    pub max_radius: f64,
    /// `cell_start[c]..cell_start[c + 1]`: members of cell `c` in `cell_filters`.
    pub cell_start: Vec<u32>,
    /// Members cell after cell, then the outside list.
    pub cell_filters: Vec<u32>,
    /// Each filter's cell, or [`Grid::OUTSIDE`].
    pub home: Vec<u32>,
}

impl Grid {
    /// `home` of a filter on the outside list.
    pub const OUTSIDE: u32 = u32::MAX;
    /// Most cells per side.
    pub const MAX_SIDE: u32 = 1024;

    /// Builds the grid of the filters at `fpos` with squared radii `sq_dist` (a
    /// rectangle, `AreaHi` in `area_hi`, by its enclosing circle, [`enclosing`]).
    pub fn build(fpos: &[Float2], sq_dist: &[f32], area_hi: &[Float2]) -> Grid {
        let circles: Vec<(Float2, f32)> = (0..fpos.len())
            .map(|f| enclosing(fpos[f], sq_dist[f], area_hi[f]))
            .collect();
        let fpos: Vec<Float2> = circles.iter().map(|c| c.0).collect();
        let sq_dist: Vec<f32> = circles.iter().map(|c| c.1).collect();
        let (fpos, sq_dist) = (&fpos[..], &sq_dist[..]);
        let n = fpos.len();
        if n == 0 {
            return Grid {
                cell: 1.0,
                side: 1,
                cell_start: vec![0, 0],
                ..Grid::default()
            };
        }
        let mut radii: Vec<f32> = sq_dist.iter().map(|&q| q.sqrt()).collect();
        let k = (n * 99 / 100).min(n - 1);
        let r99 = f64::from(*radii.select_nth_unstable_by(k, f32::total_cmp).1);
        let (mut lo, mut hi) = ([f64::MAX; 2], [f64::MIN; 2]);
        for p in fpos {
            for (d, v) in [f64::from(p.x), f64::from(p.y)].into_iter().enumerate() {
                lo[d] = lo[d].min(v);
                hi[d] = hi[d].max(v);
            }
        }
        let extent = (hi[0] - lo[0]).max(hi[1] - lo[1]).max(f64::MIN_POSITIVE);
        let scale = lo.iter().chain(&hi).fold(extent, |m, v| m.max(v.abs()));
        let max_radius = r99;
        // Margin: an f32 area test may accept points a few ULPs beyond the radius.
        let min_cell = max_radius * (1.0 + 1e-3) + scale * 1e-5;
        let side = ((extent / min_cell).ceil() as u32).clamp(1, Self::MAX_SIDE);
        let cell = (extent / side as f64).max(min_cell);
        let mut g = Grid {
            origin: lo,
            cell,
            side,
            max_radius,
            cell_start: vec![0; (side * side) as usize + 1],
            cell_filters: vec![0; n],
            home: vec![Self::OUTSIDE; n],
        };
        for f in 0..n {
            if f64::from(sq_dist[f]) <= max_radius * max_radius {
                g.home[f] = g.cell_of(fpos[f].x, fpos[f].y);
            }
        }
        for &h in &g.home {
            if h != Self::OUTSIDE {
                g.cell_start[h as usize + 1] += 1;
            }
        }
        for c in 0..(side * side) as usize {
            g.cell_start[c + 1] += g.cell_start[c];
        }
        let mut fill = g.cell_start.clone();
        let mut outside = g.members();
        for f in 0..n {
            let h = g.home[f];
            let at = if h == Self::OUTSIDE {
                outside += 1;
                outside - 1
            } else {
                fill[h as usize] += 1;
                fill[h as usize] as usize - 1
            };
            g.cell_filters[at] = f as u32;
        }
        g
    }

    /// Number of grid members (the outside list starts here in `cell_filters`).
    pub fn members(&self) -> usize {
        *self.cell_start.last().unwrap_or(&0) as usize
    }

    /// The cell of a point, clamped to the grid.
    pub fn cell_of(&self, x: f32, y: f32) -> u32 {
        let c = |v: f32, d: usize| {
            let i = ((f64::from(v) - self.origin[d]) / self.cell).floor();
            i.clamp(0.0, (self.side - 1) as f64) as u32
        };
        c(y, 1) * self.side + c(x, 0)
    }

    /// Whether a filter moved to `pos` with squared radius `sq` (a rectangle: `AreaHi`
    /// `hi`) still belongs in the grid cell it is listed in.
    pub fn still_fits(&self, f: usize, pos: Float2, sq: f32, hi: Float2) -> bool {
        let (pos, sq) = enclosing(pos, sq, hi);
        let h = self.home[f];
        h != Self::OUTSIDE
            && f64::from(sq) <= self.max_radius * self.max_radius
            && self.cell_of(pos.x, pos.y) == h
    }

    /// The ranges of `cell_filters` an event at `p` must look at: the three rows of the
    /// 3x3 cells around it (empty where off the grid); the outside list comes after.
    pub fn ranges(&self, x: f32, y: f32) -> [(u32, u32); 3] {
        let c = self.cell_of(x, y);
        let (cx, cy) = (c % self.side, c / self.side);
        let (x0, x1) = (cx.saturating_sub(1), (cx + 1).min(self.side - 1));
        let mut out = [(0, 0); 3];
        for (i, dy) in [-1i64, 0, 1].into_iter().enumerate() {
            let row = cy as i64 + dy;
            if row >= 0 && row < self.side as i64 {
                let base = row as u32 * self.side;
                out[i] = (
                    self.cell_start[(base + x0) as usize],
                    self.cell_start[(base + x1) as usize + 1],
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Area, Constraint, Filter, Location, Op, Subscription, SubscriptionId};

    fn c(name: &str, op: Op, v: Value) -> Constraint {
        Constraint::new(name, op, v).unwrap()
    }

    #[test]
    fn constraints_table_groups_rows_by_name_and_keeps_filter_ids() {
        let area = Area::circle(1.0, 2.0, 3.0).unwrap();
        let subs = Subscriptions::new([
            Subscription {
                id: SubscriptionId(5),
                filters: vec![
                    Filter::new(
                        vec![
                            c("a", Op::Eq, Value::Int(1)),
                            c("b", Op::Prefix, Value::Str("xy".into())),
                        ],
                        area,
                    )
                    .unwrap(),
                    Filter::new(vec![c("b", Op::Eq, Value::Str("q".into()))], area).unwrap(),
                ],
            },
            Subscription {
                id: SubscriptionId(7),
                filters: vec![Filter::new(vec![], area).unwrap()],
            },
        ]);
        let t = Tables::build(&subs);
        assert_eq!(t.filters(), 3);
        assert_eq!(t.size_c, vec![1, 2]);
        assert_eq!(t.row_start, vec![0, 1]);
        assert_eq!(
            t.constraints.iter().map(|c| c.tag).collect::<Vec<_>>(),
            vec![0, 0, 1]
        );
        assert_eq!(t.size_f, vec![2, 1, 0]);
        assert_eq!(t.filter_sub, vec![0, 0, 1]);
        assert_eq!(t.bf[2], 0);
        assert_eq!(t.bf[0], bloom_bit(0) | bloom_bit(1));
        assert_eq!(t.sq_dist[0], 9.0);
        assert_eq!(t.fcons_start, vec![0, 2, 3, 3]);
        assert_eq!(&t.cstrings, b"xyq");
    }

    /// The tables as one pass over the filters in order lays them out (the build before
    /// it ran on all cores): rows numbered as names first appear, strings appended as
    /// met.
    fn sequential_build(subs: &Subscriptions) -> Tables {
        let mut t = Tables {
            subscriptions: subs.len(),
            ..Tables::default()
        };
        for (_, sub, f) in subs.filters() {
            let (pos, sq, hi) = device_area(&f.area);
            t.fpos.push(pos);
            t.sq_dist.push(sq);
            t.area_hi.push(hi);
            t.size_f.push(f.constraints.len() as u32);
            t.filter_sub.push(sub as u32);
            t.fcons_start.push(t.fcons.len() as u32);
            let mut bf = 0u32;
            for c in &f.constraints {
                let next = t.names.len() as u32;
                let row = *t.names.entry(c.name.clone()).or_insert(next);
                if row as usize == t.size_c.len() {
                    t.size_c.push(0);
                }
                t.size_c[row as usize] += 1;
                bf |= bloom_bit(row);
                let (kind, bits) = encode_value(&c.value, &mut t.cstrings, 0);
                t.fcons.push(DevConstraint {
                    op: op_code(c.op) as u16,
                    kind: kind as u16,
                    tag: row,
                    bits,
                });
            }
            t.bf.push(bf);
        }
        t.fcons_start.push(t.fcons.len() as u32);
        t
    }

    #[test]
    fn the_tables_built_on_all_cores_are_the_sequential_builds() {
        use crate::keywords::{KeywordParams, KeywordWorkload};
        use crate::workload::Workload;
        let t2 = crate::workload::Params {
            subscriptions: 900,
            events: 0,
            ..Default::default()
        };
        let kw = KeywordParams {
            subscriptions: 9_000,
            events: 0,
            ..Default::default()
        };
        for subs in [
            Workload::new(t2, 1).subscriptions(),
            KeywordWorkload::new(kw, 1).subscriptions(),
        ] {
            assert!(subs.filter_count() > 2 * BUILD_PART, "several parts");
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(4)
                .build()
                .unwrap();
            let t = pool.install(|| Tables::build(&subs));
            let want = sequential_build(&subs);
            assert_eq!(t.names, want.names);
            assert_eq!((&t.fpos, &t.sq_dist), (&want.fpos, &want.sq_dist));
            assert_eq!(
                (&t.bf, &t.size_f, &t.filter_sub),
                (&want.bf, &want.size_f, &want.filter_sub)
            );
            assert_eq!((&t.fcons, &t.fcons_start), (&want.fcons, &want.fcons_start));
            assert_eq!((&t.cstrings, &t.size_c), (&want.cstrings, &want.size_c));
            for (name, &row) in &t.names {
                assert_eq!(t.name_rows.get(name.as_bytes()), Some(row));
            }
            // Name-major: each row's constraints in filter order (a sequential counting
            // sort of the filter-major ones).
            let mut at = 0;
            for (row, &len) in t.size_c.iter().enumerate() {
                assert_eq!(t.row_start[row], at);
                at += len;
            }
            let mut fill = t.row_start.clone();
            let mut constraints = vec![DevConstraint::default(); want.fcons.len()];
            for f in 0..subs.filter_count() {
                for k in want.fcons_start[f]..want.fcons_start[f + 1] {
                    let c = want.fcons[k as usize];
                    let row = c.tag as usize;
                    constraints[fill[row] as usize] = DevConstraint { tag: f as u32, ..c };
                    fill[row] += 1;
                }
            }
            assert_eq!(t.constraints, constraints);
            // The cell index's tables: the same, less the paper's own.
            let fm = pool.install(|| Tables::build_filter_major(&subs));
            assert_eq!(fm.names, want.names);
            assert_eq!(
                (&fm.fcons, &fm.fcons_start),
                (&want.fcons, &want.fcons_start)
            );
            assert_eq!((&fm.cstrings, &fm.size_c), (&want.cstrings, &want.size_c));
            assert_eq!(
                (&fm.bf, &fm.size_f, &fm.filter_sub),
                (&want.bf, &want.size_f, &want.filter_sub)
            );
            assert!(fm.constraints.is_empty() && fm.fpos.is_empty());
            // The same tables from the subscriptions' columns.
            let cols = crate::columns::SubscriptionColumns::from_subscriptions(&subs).unwrap();
            let (fc, area, ids) = pool.install(|| Tables::from_columns(cols.clone()));
            assert_eq!(
                area,
                subs.filters().map(|(_, _, f)| f.area).collect::<Vec<_>>()
            );
            assert_eq!(
                ids,
                subs.as_slice().iter().map(|s| s.id).collect::<Vec<_>>()
            );
            assert_eq!(fc.names, want.names);
            assert_eq!(
                (&fc.fcons, &fc.fcons_start),
                (&want.fcons, &want.fcons_start)
            );
            assert_eq!(
                (&fc.cstrings, &fc.filter_sub),
                (&want.cstrings, &want.filter_sub)
            );
            // Less the counts the cell index does not read.
            assert!(fc.bf.is_empty() && fc.size_f.is_empty() && fc.size_c.is_empty());
            assert_eq!(fc.subscriptions, want.subscriptions);
            for (name, &row) in &fc.names {
                assert_eq!(fc.name_rows.get(name.as_bytes()), Some(row));
            }
        }
    }

    #[test]
    fn event_encoding_drops_unknown_names_and_points_strings_past_attrs() {
        let area = Area::circle(0.0, 0.0, 1.0).unwrap();
        let subs = Subscriptions::new([Subscription {
            id: SubscriptionId(1),
            filters: vec![
                Filter::new(vec![c("s", Op::Eq, Value::Str("hello".into()))], area).unwrap(),
            ],
        }]);
        let t = Tables::build(&subs);
        let content = ccm::model::Event::from_pairs([
            ("zz", Value::Int(3)),
            ("s", Value::Str("hello".into())),
        ])
        .unwrap();
        let e = Event {
            loc: Location { x: 0.5, y: 0.25 },
            content,
        };
        let mut words = Vec::new();
        assert_eq!(t.encode_event(&e, &mut words), 1);
        let attrs = Tables::attrs_of(&words);
        assert_eq!(attrs.len(), 1);
        assert_eq!(attrs[0].kind, KIND_STR);
        let bytes: &[u8] = bytemuck::cast_slice(&words);
        let off = attrs[0].bits as u32 as usize;
        assert_eq!(attrs[0].bits >> 32, 5);
        assert_eq!(&bytes[off..off + 5], b"hello");
        assert_eq!(words.len(), 12); // 4 + 4 + 2 string words, padded to 12
    }
}

#[cfg(test)]
mod batch_tests {
    use super::*;
    use crate::keywords::{KeywordParams, KeywordWorkload};
    use crate::workload::{Params, Workload};

    /// A batch is laid out word for word as its heap events are, one event at a time
    /// ([`Tables::encode_event`]), with the offsets where each starts: integers (Table
    /// 2), strings (keywords: words no filter has are dropped), names no filter reads.
    #[test]
    fn a_batch_is_laid_out_as_its_heap_events() {
        let t2 = Workload::new(
            Params {
                subscriptions: 2,
                events: 700,
                ..Params::default()
            },
            2,
        );
        let kw = KeywordWorkload::new(
            KeywordParams {
                subscriptions: 300,
                events: 700,
                vocabulary: 400,
                ..Default::default()
            },
            2,
        );
        for (subs, events) in [
            (t2.subscriptions(), t2.events()),
            (kw.subscriptions(), kw.events()),
        ] {
            let t = Tables::build(&subs);
            let b = EventBatch::from_events(&events);
            let rows = t.batch_rows(&b);
            assert!(rows.contains(&UNKNOWN) && rows.iter().any(|&r| r != UNKNOWN));
            let (mut offsets, base) = (Vec::new(), 5);
            let range = 3..events.len();
            let total = Tables::plan_batch(&b, &rows, range.clone(), base, &mut offsets);
            let mut out = vec![u32::MAX; total];
            Tables::write_batch(&b, &rows, range.clone(), &offsets, &mut out);
            assert!(
                out[..base].iter().all(|&w| w == u32::MAX),
                "words before the first untouched"
            );
            let mut want = Vec::new();
            for (k, e) in events[range].iter().enumerate() {
                assert_eq!(offsets[k] as usize, base + want.len());
                t.encode_event(e, &mut want);
            }
            assert_eq!(&out[base..], &want[..]);
        }
    }
}

#[cfg(test)]
mod grid_tests {
    use super::*;
    use clcb_kernels::{Candidates, CellRange};

    /// `Candidates::slot` (the grid kernels' walk over an event's four ranges, written
    /// with constant indices) takes candidate `t` to the slot the ranges, taken one after
    /// another, hold at position `t`, and past the last to `u32::MAX`; empty ranges are
    /// skipped.
    #[test]
    fn candidate_slots_walk_the_four_ranges_in_order() {
        let shapes = [
            [(0, 3), (10, 10), (20, 22), (100, 101)],
            [(5, 5), (5, 5), (5, 5), (7, 9)],
            [(0, 0), (0, 0), (0, 0), (0, 0)],
            [(1, 4), (4, 6), (50, 53), (60, 60)],
        ];
        for shape in shapes {
            let c = Candidates {
                ranges: shape.map(|(lo, hi)| CellRange { lo, hi }),
            };
            let want: Vec<u32> = shape.iter().flat_map(|&(lo, hi)| lo..hi).collect();
            assert_eq!(c.total() as usize, want.len());
            for t in 0..want.len() as u32 + 3 {
                let expect = want.get(t as usize).copied().unwrap_or(u32::MAX);
                assert_eq!(c.slot(t), expect, "candidate {t} of {shape:?}");
            }
        }
    }

    #[test]
    fn grid_ranges_hold_every_filter_whose_area_holds_the_point() {
        let fpos: Vec<Float2> = (0..400)
            .map(|i| Float2 {
                x: (i % 20) as f32 * 3.1,
                y: (i / 20) as f32 * 2.7,
            })
            .collect();
        let mut sq: Vec<f32> = (0..400).map(|i| ((i % 7) as f32 * 0.5).powi(2)).collect();
        sq[5] = 1e4; // one big filter: outside
        let g = Grid::build(&fpos, &sq, &vec![Float2::default(); fpos.len()]);
        assert_eq!(g.home[5], Grid::OUTSIDE);
        assert_eq!(g.members(), 399);
        for px in -5..70 {
            for py in -5..60 {
                let (x, y) = (px as f32 * 0.9, py as f32 * 0.9);
                let mut seen: Vec<u32> = g
                    .ranges(x, y)
                    .iter()
                    .flat_map(|&(a, b)| g.cell_filters[a as usize..b as usize].to_vec())
                    .collect();
                seen.extend(&g.cell_filters[g.members()..]);
                for f in 0..400 {
                    let (dx, dy) = (x - fpos[f].x, y - fpos[f].y);
                    if dx * dx + dy * dy <= sq[f] {
                        assert!(
                            seen.contains(&(f as u32)),
                            "filter {f} missed at ({x}, {y})"
                        );
                    }
                }
            }
        }
    }
}
