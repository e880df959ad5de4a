//! Model -> the flat tables of Fig. 2 (§4.1), kept on the host and mirrored on the device
//! by the engine.
//!
//! - `Names` (host only): attribute name -> row of `Constraints`;
//! - `Constraints` with `SizeC`: one row per name, row `r` stored contiguously at
//!   `row_start[r]` with room for `row_cap[r]` constraints (slack so that adding a
//!   subscription writes one row element, not the table); element = [`DevConstraint`]
//!   with `key` = `FilterId`;
//! - `Filters`: per filter slot `SizeF` (0 = free slot), `InterfaceId` (dense index); the
//!   `Count` column lives on the device only;
//! - `Interfaces`: user ids <-> dense indices;
//! - string pool: the bytes of every distinct constraint string, each with an interned
//!   id. **String encoding (exact for any input):** `=` / `!=` compare interned ids (the
//!   host looks an event's string up in the same dictionary; a string no constraint has
//!   gets [`NO_STR`], equal to no constraint); `prefix` / `suffix` / `substr` compare the
//!   bytes (constraint bytes in the pool, event bytes in the launch's input). No
//!   truncation, no hashing collisions.
//! - for the batched kernel, the filter-major table: each filter's constraints
//!   contiguous (`key` = the name's row) plus a 64-bit name signature per filter.
//!
//! Grouping (§4.2, optional): each row sorted by (type, operator, value) when the table
//! is laid out; rows grown by later additions keep their new elements at the end until
//! the next full layout.

use crate::hash::ShortKeyMap;
use crate::model::{Event, InterfaceId, ModelError, Op, Subscription, Value};
use ccm_kernels::{DevAttr, DevConstraint, DevEvent, NO_STR, TY_FLOAT, TY_INT, TY_STR};
use rayon::prelude::*;
use std::collections::HashMap;

/// Why a subscription or event cannot be laid out.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LayoutError {
    /// The model error is part of the message (and not also the error's source, so that
    /// a chain of causes prints it once).
    #[error("subscription {index}: {error}")]
    Model { index: usize, error: ModelError },
    #[error("limit exceeded: {what}: {have} > {max}")]
    Limit {
        what: &'static str,
        have: u64,
        max: u64,
    },
    #[error("no subscription with id {0}")]
    UnknownSubscription(u32),
}

/// Handle of a deployed subscription (its filter slot), for [`crate::Ccm::remove`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubId(pub u32);

/// One row of `Constraints`: the constraints of one name.
#[derive(Clone, Debug, Default)]
pub struct Row {
    pub start: u32,
    pub cap: u32,
    pub items: Vec<DevConstraint>,
}

/// What changed since the device copy was last brought up to date.
#[derive(Clone, Debug, Default)]
pub struct Dirty {
    /// Everything moved (a full layout): re-upload all.
    pub full: bool,
    pub rows: Vec<u32>,
    pub filters: Vec<u32>,
    /// The pool and the filter-major table grew from these lengths.
    pub pool_from: usize,
    pub fc_from: usize,
}

/// Events per part of the parallel encodings ([`Tables::encode_into`]): small enough
/// that a launch of the pruning index (16384 events) makes several parts per core, so
/// that work stealing evens out a core that is busy with something else (a thread
/// waiting on the device).
pub const ENCODE_PART: usize = 256;

/// A hint to load the cache line at `p` (no effect off x86-64).
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it never faults and reads nothing the program sees,
    // whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The room of a batch's encoding ([`Tables::encode_room`]): per part of
/// [`ENCODE_PART`] events, its events, attributes and string bytes.
#[derive(Clone, Debug, Default)]
pub struct EncodeRoom(Vec<(usize, usize, usize)>);

impl EncodeRoom {
    /// Events, attributes and string bytes of the whole batch.
    pub fn total(&self) -> (usize, usize, usize) {
        self.0
            .iter()
            .fold((0, 0, 0), |x, y| (x.0 + y.0, x.1 + y.1, x.2 + y.2))
    }
}

/// A part's string bytes outgrew their room in a [`Tables::slotted_room`]:
/// [`Tables::encode_into`] left the batch incomplete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BytesOverflow {
    /// The most string bytes a part needed.
    pub most: usize,
}

/// Room of a part: events, attributes, string bytes.
fn part_room(events: &[Event]) -> (usize, usize, usize) {
    let (mut a, mut b) = (0, 0);
    for e in events {
        for at in e.attributes() {
            a += 1;
            if let Value::Str(s) = &at.value {
                b += s.len();
            }
        }
    }
    (events.len(), a, b)
}

/// A batch of events encoded for the batched kernels: per event its signature and
/// attributes (`evs`), the attributes (`row_id` = the name's row) and string bytes
/// (with gaps where attributes of names no constraint has were left out).
#[derive(Clone, Debug, Default)]
pub struct EncodedBatch {
    pub evs: Vec<DevEvent>,
    pub attrs: Vec<DevAttr>,
    pub bytes: Vec<u8>,
}

/// The host copy of every table of Fig. 2.
#[derive(Clone, Debug, Default)]
pub struct Tables {
    pub names: ShortKeyMap<u32>,
    pub rows: Vec<Row>,
    /// Capacity of the `Constraints` array (sum of the rows' capacities plus free room).
    pub table_cap: u32,
    pub size_f: Vec<u32>,
    pub filter_iface: Vec<u32>,
    /// Filter-major copy for the batched kernel: `fconstraints[filter_start[f] ..]`.
    pub filter_start: Vec<u32>,
    pub filter_sig: Vec<u64>,
    pub fconstraints: Vec<DevConstraint>,
    /// Where each filter's constraints sit in `rows`: (row, index); built when first
    /// needed (a removal), since a layout of many subscriptions rarely needs it.
    positions: Vec<Vec<(u32, u32)>>,
    /// Whether `positions` is up to date (kept so by [`Tables::add`] once built).
    positions_built: bool,
    free: Vec<u32>,
    pub iface_ids: Vec<InterfaceId>,
    iface_index: HashMap<InterfaceId, u32>,
    pub pool: Vec<u8>,
    dict: ShortKeyMap<(u32, u32)>,
    pub grouping: bool,
    pub dirty: Dirty,
}

/// Lays out subscriptions pushed one window after another (filter slot `i` = the `i`-th
/// pushed): [`TablesBuilder::finish`] gives the tables [`Tables::build`] gives for all of
/// them at once, without a caller holding all the subscriptions at once (a large file
/// is parsed and laid out window by window).
#[derive(Debug)]
pub struct TablesBuilder {
    t: Tables,
    next: usize,
}

impl TablesBuilder {
    /// Adds the next subscriptions (an error names a subscription by its position in
    /// everything pushed, from 0; after an error the builder is to be dropped: which of
    /// the window's subscriptions were placed is not said).
    ///
    /// On all cores, each filter is checked and each constraint encoded with the names
    /// and strings the tables already know; then, in order, the names and strings new in
    /// this window are numbered (as [`Tables::build`] numbers them: by first use) and
    /// each filter is placed.
    pub fn push(&mut self, subs: &[Subscription]) -> Result<(), LayoutError> {
        let t = &self.t;
        let first = self.next;
        let parts: Vec<Result<Vec<Looked>, LayoutError>> = subs
            .par_chunks(LAYOUT_PART)
            .enumerate()
            .map(|(p, chunk)| {
                let mut out = Vec::with_capacity(chunk.len() * 4);
                for (k, s) in chunk.iter().enumerate() {
                    s.filter.validate().map_err(|error| LayoutError::Model {
                        index: first + p * LAYOUT_PART + k,
                        error,
                    })?;
                    out.extend(s.filter.constraints.iter().map(|c| t.look_up(c)));
                }
                Ok(out)
            })
            .collect();
        let parts = parts.into_iter().collect::<Result<Vec<_>, _>>()?;
        let mut looked = parts.iter().flatten();
        let mut last_iface = None;
        for s in subs {
            self.t.place(s, &mut looked, &mut last_iface)?;
            self.next += 1;
        }
        Ok(())
    }

    /// Subscriptions pushed so far.
    pub fn len(&self) -> usize {
        self.next
    }

    pub fn is_empty(&self) -> bool {
        self.next == 0
    }

    /// The tables of everything pushed.
    pub fn finish(mut self) -> Result<Tables, LayoutError> {
        self.t.relayout()?;
        Ok(self.t)
    }
}

const MAX: u64 = u32::MAX as u64 - 1;

/// Subscriptions per part of [`TablesBuilder::push`]'s work on all cores.
const LAYOUT_PART: usize = 512;

/// A name or string the tables did not know when a constraint was looked up.
const MISS: u32 = u32::MAX;

/// A constraint encoded on all cores before it is placed ([`Tables::look_up`]): its
/// encoding (`key` unset) with the name's row, [`MISS`] for a name then unknown, and
/// whether its string was then unknown (its id and offset unset).
#[derive(Clone, Copy)]
struct Looked {
    dc: DevConstraint,
    row: u32,
    str_miss: bool,
}

fn limit(what: &'static str, have: usize) -> Result<u32, LayoutError> {
    if have as u64 > MAX {
        Err(LayoutError::Limit {
            what,
            have: have as u64,
            max: MAX,
        })
    } else {
        Ok(have as u32)
    }
}

/// Grouping key (§4.2): type, operator, value.
fn group_key(c: &DevConstraint) -> (u16, u16, u64, u32) {
    (c.ty, c.op, c.val, c.str_id)
}

fn op_code(op: Op) -> u16 {
    Op::ALL.iter().position(|&o| o == op).expect("in ALL") as u16
}

impl Tables {
    /// Lays out `subs` (filter slot `i` = subscription `i`).
    /// (On all cores: see [`TablesBuilder::push`].)
    pub fn build(subs: &[Subscription], grouping: bool) -> Result<Tables, LayoutError> {
        let mut b = Tables::builder(grouping);
        b.push(subs)?;
        b.finish()
    }

    /// A builder of the tables of subscriptions given in windows (see [`TablesBuilder`]).
    pub fn builder(grouping: bool) -> TablesBuilder {
        TablesBuilder {
            t: Tables {
                grouping,
                ..Tables::default()
            },
            next: 0,
        }
    }

    /// Number of filter slots (live and free).
    pub fn filter_slots(&self) -> usize {
        self.size_f.len()
    }

    /// Number of live filters.
    pub fn live_filters(&self) -> usize {
        self.size_f.len() - self.free.len()
    }

    /// The longest row.
    pub fn max_row(&self) -> u32 {
        self.rows
            .iter()
            .map(|r| r.items.len() as u32)
            .max()
            .unwrap_or(0)
    }

    /// The interned id of `s` among the constraints' strings, if a constraint has it
    /// (an event's string without one is [`NO_STR`], equal to none).
    pub fn str_id(&self, s: &str) -> Option<u32> {
        self.dict.get(s.as_bytes()).map(|v| v.0)
    }

    fn intern(&mut self, s: &str) -> Result<(u32, u32), LayoutError> {
        if let Some(v) = self.dict.get(s.as_bytes()) {
            return Ok(v);
        }
        let id = limit("distinct constraint strings", self.dict.len())?;
        let off = limit("bytes of constraint strings", self.pool.len() + s.len())? - s.len() as u32;
        self.pool.extend_from_slice(s.as_bytes());
        self.dict.insert(s.as_bytes(), (id, off));
        Ok((id, off))
    }

    fn encode(&mut self, op: Op, v: &Value, key: u32) -> Result<DevConstraint, LayoutError> {
        let interned = match v {
            Value::Str(s) => self.intern(s)?,
            _ => (0, 0),
        };
        Ok(encode_value(op, v, key, interned))
    }

    /// `c` encoded with what the tables know now (see [`Looked`]).
    fn look_up(&self, c: &crate::model::Constraint) -> Looked {
        let row = self.names.get(c.name.as_bytes()).unwrap_or(MISS);
        let (interned, str_miss) = match &c.value {
            Value::Str(s) => match self.dict.get(s.as_bytes()) {
                Some(v) => (v, false),
                None => ((0, 0), true),
            },
            _ => ((0, 0), false),
        };
        Looked {
            dc: encode_value(c.op, &c.value, 0, interned),
            row,
            str_miss,
        }
    }

    /// The row of name `name`, a new one if no constraint had it.
    fn row_of(&mut self, name: &str) -> Result<u32, LayoutError> {
        if let Some(r) = self.names.get(name.as_bytes()) {
            return Ok(r);
        }
        let r = limit("names", self.rows.len())?;
        self.names.insert(name.as_bytes(), r);
        self.rows.push(Row::default());
        Ok(r)
    }

    /// The dense index of interface `id`, a new one if it is new; `last`: the previous
    /// subscription's (a file's filters of one interface usually come together).
    fn iface_of(
        &mut self,
        id: InterfaceId,
        last: &mut Option<(InterfaceId, u32)>,
    ) -> Result<u32, LayoutError> {
        if let Some((l, i)) = *last {
            if l == id {
                return Ok(i);
            }
        }
        let next = limit("interfaces", self.iface_ids.len())?;
        let i = *self.iface_index.entry(id).or_insert(next);
        if i == next {
            self.iface_ids.push(id);
        }
        *last = Some((id, i));
        Ok(i)
    }

    /// Places subscription `s` (checked) in a new filter slot, its constraints' encodings
    /// taken from `looked` (one per constraint, in order): names and strings then
    /// unknown are numbered now. No removal happened (no free slot), and `positions`
    /// and `dirty` are left to the layout that follows.
    fn place<'a>(
        &mut self,
        s: &Subscription,
        looked: &mut impl Iterator<Item = &'a Looked>,
        last_iface: &mut Option<(InterfaceId, u32)>,
    ) -> Result<(), LayoutError> {
        debug_assert!(self.free.is_empty() && !self.positions_built);
        let size = limit("constraints in one filter", s.filter.constraints.len())?;
        let iface = self.iface_of(s.interface, last_iface)?;
        let f = limit("filters", self.size_f.len())?;
        let fc_start = limit("constraints (filter-major)", self.fconstraints.len())?;
        let mut sig = 0u64;
        for c in &s.filter.constraints {
            let l = looked.next().expect("one encoding per constraint");
            let row = match l.row {
                MISS => self.row_of(&c.name)?,
                r => r,
            };
            let mut dc = l.dc;
            if let (true, Value::Str(v)) = (l.str_miss, &c.value) {
                let (id, off) = self.intern(v)?;
                dc.val = off as u64;
                dc.str_id = id;
            }
            dc.key = f;
            self.rows[row as usize].items.push(dc);
            self.fconstraints.push(DevConstraint { key: row, ..dc });
            sig |= 1u64 << (row % 64);
        }
        self.size_f.push(size);
        self.filter_iface.push(iface);
        self.filter_start.push(fc_start);
        self.filter_sig.push(sig);
        Ok(())
    }

    /// Builds `positions` if a layout left it out.
    fn ensure_positions(&mut self) {
        if self.positions_built {
            return;
        }
        self.positions = vec![Vec::new(); self.size_f.len()];
        for (row, r) in self.rows.iter().enumerate() {
            for (idx, c) in r.items.iter().enumerate() {
                self.positions[c.key as usize].push((row as u32, idx as u32));
            }
        }
        self.positions_built = true;
    }
}

/// The encoding of constraint `op v` (`interned`: the string's id and pool offset).
fn encode_value(op: Op, v: &Value, key: u32, (id, off): (u32, u32)) -> DevConstraint {
    let op = op_code(op);
    match v {
        Value::Int(i) => DevConstraint {
            key,
            op,
            ty: TY_INT,
            val: *i as u64,
            str_id: 0,
            str_len: 0,
        },
        Value::Float(x) => DevConstraint {
            key,
            op,
            ty: TY_FLOAT,
            val: x.to_bits(),
            str_id: 0,
            str_len: 0,
        },
        Value::Str(s) => DevConstraint {
            key,
            op,
            ty: TY_STR,
            val: off as u64,
            str_id: id,
            str_len: s.len() as u32,
        },
    }
}

impl Tables {
    fn add_inner(&mut self, s: &Subscription, index: usize) -> Result<SubId, LayoutError> {
        s.filter
            .validate()
            .map_err(|error| LayoutError::Model { index, error })?;
        let size = limit("constraints in one filter", s.filter.constraints.len())?;
        let next_iface = limit("interfaces", self.iface_ids.len())?;
        let iface = *self.iface_index.entry(s.interface).or_insert(next_iface);
        if iface == next_iface {
            self.iface_ids.push(s.interface);
        }
        let f = match self.free.pop() {
            Some(f) => f,
            None => {
                let f = limit("filters", self.size_f.len())?;
                self.size_f.push(0);
                self.filter_iface.push(0);
                self.filter_start.push(0);
                self.filter_sig.push(0);
                self.positions.push(Vec::new());
                f
            }
        };
        let fc_start = limit("constraints (filter-major)", self.fconstraints.len())?;
        let mut sig = 0u64;
        for c in &s.filter.constraints {
            let row = self.row_of(&c.name)?;
            let dc = self.encode(c.op, &c.value, f)?;
            let r = &mut self.rows[row as usize];
            let idx = r.items.len() as u32;
            r.items.push(dc);
            self.positions[f as usize].push((row, idx));
            self.fconstraints.push(DevConstraint { key: row, ..dc });
            sig |= 1u64 << (row % 64);
            self.dirty.rows.push(row);
        }
        self.size_f[f as usize] = size;
        self.filter_iface[f as usize] = iface;
        self.filter_start[f as usize] = fc_start;
        self.filter_sig[f as usize] = sig;
        self.dirty.filters.push(f);
        Ok(SubId(f))
    }

    /// Adds one subscription; lays the table out again when a row outgrew its room.
    pub fn add(&mut self, s: &Subscription) -> Result<SubId, LayoutError> {
        self.ensure_positions();
        let id = self.add_inner(s, 0)?;
        let outgrown = self.rows.iter().any(|r| r.items.len() as u32 > r.cap);
        let used: u64 = self.rows.iter().map(|r| r.cap as u64).sum();
        if outgrown || used > self.table_cap as u64 {
            self.relayout()?;
        }
        Ok(id)
    }

    /// Removes a subscription: its constraints leave their rows (the row's last element
    /// moves into the hole), its slot is freed (`SizeF` = 0).
    pub fn remove(&mut self, id: SubId) -> Result<(), LayoutError> {
        let f = id.0 as usize;
        if f >= self.size_f.len() || self.size_f[f] == 0 {
            return Err(LayoutError::UnknownSubscription(id.0));
        }
        self.ensure_positions();
        let mut pos = std::mem::take(&mut self.positions[f]);
        // Highest index first, so that a swap never moves one of this filter's own
        // constraints into a hole already filled.
        pos.sort_unstable_by(|a, b| b.cmp(a));
        for (row, idx) in pos {
            let r = &mut self.rows[row as usize];
            r.items.swap_remove(idx as usize);
            if let Some(moved) = r.items.get(idx as usize) {
                let old = r.items.len() as u32;
                let p = self.positions[moved.key as usize]
                    .iter_mut()
                    .find(|p| **p == (row, old))
                    .expect("moved constraint is listed");
                *p = (row, idx);
            }
            self.dirty.rows.push(row);
        }
        self.size_f[f] = 0;
        self.filter_sig[f] = 0;
        self.free.push(f as u32);
        self.dirty.filters.push(f as u32);
        Ok(())
    }

    /// Assigns every row fresh room (an eighth more than its length, plus 4), applies
    /// grouping (rows sorted on all cores), compacts the filter-major table (when a
    /// removal left a hole), and marks everything dirty. `positions` is left to be
    /// built when needed.
    fn relayout(&mut self) -> Result<(), LayoutError> {
        let mut start = 0u64;
        for r in &mut self.rows {
            let len = r.items.len() as u64;
            r.start = start as u32;
            r.cap = (len + len / 8 + 4).min(MAX) as u32;
            start += r.cap as u64;
        }
        if self.grouping {
            self.rows
                .par_iter_mut()
                .for_each(|r| r.items.sort_by_key(group_key));
        }
        self.table_cap = limit("constraints table size", (start + start / 16 + 64) as usize)?;
        self.positions = Vec::new();
        self.positions_built = false;
        // Compact the filter-major table (free slots leave their constraints behind).
        // Filters placed one after another with no removal are compact already.
        let compact = self.free.is_empty()
            && (0..self.size_f.len()).all(|f| {
                let end = self
                    .filter_start
                    .get(f + 1)
                    .map_or(self.fconstraints.len(), |&e| e as usize);
                self.filter_start[f] as usize + self.size_f[f] as usize == end
            })
            && self.filter_start.first().is_none_or(|&s| s == 0);
        if !compact {
            let mut fc = Vec::with_capacity(self.fconstraints.len());
            for f in 0..self.size_f.len() {
                let (s, n) = (self.filter_start[f] as usize, self.size_f[f] as usize);
                self.filter_start[f] = fc.len() as u32;
                fc.extend_from_slice(&self.fconstraints[s..s + n]);
            }
            self.fconstraints = fc;
        }
        self.dirty = Dirty {
            full: true,
            ..Dirty::default()
        };
        Ok(())
    }

    /// The `Constraints` array as the device holds it (rows at their starts, padded).
    pub fn constraints_array(&self) -> Vec<DevConstraint> {
        let mut a = vec![DevConstraint::default(); self.table_cap as usize];
        for r in &self.rows {
            a[r.start as usize..r.start as usize + r.items.len()].copy_from_slice(&r.items);
        }
        a
    }

    pub fn row_start(&self) -> Vec<u32> {
        self.rows.iter().map(|r| r.start).collect()
    }

    pub fn size_c(&self) -> Vec<u32> {
        self.rows.iter().map(|r| r.items.len() as u32).collect()
    }

    /// Encodes `e` as rows of table `Input` (§4.2), appending string bytes to `bytes`.
    /// Attributes whose name no constraint uses are left out (no row to select).
    pub fn encode_event(&self, e: &Event, input: &mut Vec<DevAttr>, bytes: &mut Vec<u8>) -> u64 {
        let mut sig = 0u64;
        for a in e.attributes() {
            if let Some(at) = self.encode_attr(a, bytes.len() as u64) {
                sig |= 1u64 << (at.row_id % 64);
                if let Value::Str(s) = &a.value {
                    bytes.extend_from_slice(s.as_bytes());
                }
                input.push(at);
            }
        }
        sig
    }

    /// Attribute `a` as a row of `Input`, its string (if any) to be placed at byte `off`;
    /// `None` when no constraint has its name.
    #[inline]
    fn encode_attr(&self, a: &crate::model::Attribute, off: u64) -> Option<DevAttr> {
        let row = self.names.get(a.name.as_bytes())?;
        Some(match &a.value {
            Value::Int(i) => DevAttr {
                row_id: row,
                ty: TY_INT as u32,
                val: *i as u64,
                str_id: 0,
                str_len: 0,
            },
            Value::Float(x) => DevAttr {
                row_id: row,
                ty: TY_FLOAT as u32,
                val: x.to_bits(),
                str_id: 0,
                str_len: 0,
            },
            Value::Str(s) => DevAttr {
                row_id: row,
                ty: TY_STR as u32,
                val: off,
                str_id: self.dict.get(s.as_bytes()).map_or(NO_STR, |v| v.0),
                str_len: s.len() as u32,
            },
        })
    }

    /// Room [`Tables::encode_into`] needs for `events`, per part of [`ENCODE_PART`]
    /// events, counting every attribute and string (those of unknown names leave gaps).
    /// Reads every attribute (the string lengths): a pass over the events' heap memory.
    pub fn encode_room(events: &[Event]) -> EncodeRoom {
        EncodeRoom(events.par_chunks(ENCODE_PART).map(part_room).collect())
    }

    /// Room for `events` with each part's string bytes in a slot of `part_bytes`: the
    /// events' attribute counts only, which the events hold in place, so that, unlike
    /// [`Tables::encode_room`], it reads none of their heap memory (on the GPU
    /// machine's host the room pass was a quarter of the pruning index's encoding).
    /// [`Tables::encode_into`] reports a part whose strings outgrow their slot.
    pub fn slotted_room(events: &[Event], part_bytes: usize) -> EncodeRoom {
        EncodeRoom(
            events
                .par_chunks(ENCODE_PART)
                .map(|c| {
                    let attrs = c.iter().map(|e| e.attributes().len()).sum();
                    (c.len(), attrs, part_bytes)
                })
                .collect(),
        )
    }

    /// The string bytes' slot per part ([`Tables::slotted_room`]) for events like those
    /// of an encoding whose parts took at most `most`: a quarter more and a cache line.
    /// (A part that outgrows its slot costs its batch a second encoding, in the exact
    /// room; none did in `index_pipeline`'s launches of Table 1's default scenario on
    /// the H100 machine.)
    pub fn part_slot(most: usize) -> usize {
        (most + most / 4 + 64).next_multiple_of(64)
    }

    /// Encodes `events` for the batched kernels straight into `evs`, `attrs` and `bytes`
    /// (at least `room.total()` long, `room` being [`Tables::encode_room`] or
    /// [`Tables::slotted_room`] of `events`), in parallel (rayon) over parts of
    /// [`ENCODE_PART`] events, each part writing from its place in the room (no
    /// intermediate copy). Returns the most string bytes a part took, or
    /// [`BytesOverflow`] when a part's strings did not fit its room (never with
    /// [`Tables::encode_room`]'s; the encoding is then incomplete).
    pub fn encode_into(
        &self,
        events: &[Event],
        room: &EncodeRoom,
        mut evs: &mut [DevEvent],
        mut attrs: &mut [DevAttr],
        mut bytes: &mut [u8],
    ) -> Result<usize, BytesOverflow> {
        let rooms = &room.0;
        let mut jobs = Vec::with_capacity(rooms.len());
        let (mut a0, mut b0) = (0usize, 0usize);
        for (c, r) in events.chunks(ENCODE_PART).zip(rooms) {
            let (e, er) = std::mem::take(&mut evs).split_at_mut(r.0);
            let (a, ar) = std::mem::take(&mut attrs).split_at_mut(r.1);
            let (b, br) = std::mem::take(&mut bytes).split_at_mut(r.2);
            (evs, attrs, bytes) = (er, ar, br);
            jobs.push((c, e, a, b, a0, b0));
            a0 += r.1;
            b0 += r.2;
        }
        let (most, fits) = jobs
            .into_par_iter()
            .map(|(c, e, a, b, a0, b0)| {
                let need = self.encode_part(c, e, a, b, a0, b0);
                (need, need <= b.len())
            })
            .reduce(|| (0, true), |x, y| (x.0.max(y.0), x.1 && y.1));
        if fits {
            Ok(most)
        } else {
            Err(BytesOverflow { most })
        }
    }

    /// Encodes one part's events `c` into its room: `e` its events, `a` its attributes
    /// (the batch's from `a0`), `b` its string bytes (the batch's from `b0`). Returns
    /// the string bytes the part needs (more than `b.len()` when they did not fit: the
    /// strings past the room are then left out).
    fn encode_part(
        &self,
        c: &[Event],
        e: &mut [DevEvent],
        a: &mut [DevAttr],
        b: &mut [u8],
        a0: usize,
        b0: usize,
    ) -> usize {
        let (mut na, mut nb) = (0usize, 0usize);
        for (i, (ev, slot)) in c.iter().zip(e.iter_mut()).enumerate() {
            // Events are scattered over the heap (each name and string its own
            // allocation): start loading the next ones' while this one is encoded.
            if let Some(next) = c.get(i + 8) {
                prefetch(next.attributes().as_ptr());
            }
            if let Some(next) = c.get(i + 4) {
                for at in next.attributes() {
                    prefetch(at.name.as_ptr());
                    if let Value::Str(s) = &at.value {
                        prefetch(s.as_ptr());
                    }
                }
            }
            let start = na;
            let mut sig = 0u64;
            for at in ev.attributes() {
                if let Some(d) = self.encode_attr(at, (b0 + nb) as u64) {
                    sig |= 1u64 << (d.row_id % 64);
                    if let Value::Str(s) = &at.value {
                        if let Some(to) = b.get_mut(nb..nb + s.len()) {
                            to.copy_from_slice(s.as_bytes());
                        }
                        nb += s.len();
                    }
                    a[na] = d;
                    na += 1;
                }
            }
            *slot = DevEvent {
                sig,
                start: (a0 + start) as u32,
                len: (na - start) as u32,
            };
        }
        nb
    }

    /// Encodes a batch of events for the batched kernel.
    pub fn encode_batch(
        &self,
        events: &[Event],
        evs: &mut Vec<DevEvent>,
        attrs: &mut Vec<DevAttr>,
        bytes: &mut Vec<u8>,
    ) {
        for e in events {
            let start = attrs.len() as u32;
            let sig = self.encode_event(e, attrs, bytes);
            evs.push(DevEvent {
                sig,
                start,
                len: attrs.len() as u32 - start,
            });
        }
    }

    /// Encodes a batch for the batched kernels, in parallel ([`Tables::encode_into`]).
    pub fn encode_batch_parallel(&self, events: &[Event]) -> EncodedBatch {
        let room = Tables::encode_room(events);
        let (n, a, b) = room.total();
        let mut all = EncodedBatch {
            evs: vec![DevEvent::default(); n],
            attrs: vec![DevAttr::default(); a],
            bytes: vec![0; b],
        };
        self.encode_into(events, &room, &mut all.evs, &mut all.attrs, &mut all.bytes)
            .expect("the exact room holds every part's strings");
        all
    }

    /// Bytes of the paper's tables on the device (Constraints, row_start, SizeC, pool,
    /// SizeF, InterfaceId, two Count copies, two Interfaces copies).
    pub fn device_bytes_paper(&self) -> usize {
        let c = std::mem::size_of::<DevConstraint>();
        self.table_cap as usize * c
            + self.rows.len() * 8
            + self.pool.len()
            + self.size_f.len() * 4 * 4
            + self.iface_ids.len() * 4 * 2
    }

    /// Extra device bytes of the batched kernel's filter-major tables.
    pub fn device_bytes_batch(&self) -> usize {
        self.fconstraints.len() * std::mem::size_of::<DevConstraint>() + self.size_f.len() * 12
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Constraint, Filter};

    fn sub(i: u32, cs: &[(&str, Op, Value)]) -> Subscription {
        Subscription {
            interface: InterfaceId(i),
            filter: Filter {
                constraints: cs
                    .iter()
                    .map(|(n, o, v)| Constraint::new(*n, *o, v.clone()).unwrap())
                    .collect(),
            },
        }
    }

    #[test]
    fn rows_group_constraints_by_name_and_sizes_match() {
        let t = Tables::build(
            &[
                sub(
                    5,
                    &[
                        ("a", Op::Eq, Value::Int(1)),
                        ("b", Op::Prefix, Value::Str("x".into())),
                    ],
                ),
                sub(9, &[("a", Op::Lt, Value::Float(2.5))]),
            ],
            false,
        )
        .unwrap();
        assert_eq!(t.size_c(), vec![2, 1]);
        assert_eq!(t.size_f, vec![2, 1]);
        assert_eq!(t.filter_iface, vec![0, 1]);
        assert_eq!(t.iface_ids, vec![InterfaceId(5), InterfaceId(9)]);
        let arr = t.constraints_array();
        assert_eq!(arr[t.rows[0].start as usize + 1].key, 1);
        assert_eq!(&t.pool, b"x");
    }

    #[test]
    fn remove_moves_last_row_element_into_hole_and_frees_slot() {
        let mut t = Tables::build(
            &[
                sub(0, &[("a", Op::Eq, Value::Int(1))]),
                sub(0, &[("a", Op::Eq, Value::Int(2))]),
                sub(1, &[("a", Op::Eq, Value::Int(3))]),
            ],
            false,
        )
        .unwrap();
        t.remove(SubId(0)).unwrap();
        assert_eq!(
            t.rows[0].items.iter().map(|c| c.key).collect::<Vec<_>>(),
            vec![2, 1]
        );
        assert_eq!(t.remove(SubId(0)), Err(LayoutError::UnknownSubscription(0)));
        let id = t.add(&sub(2, &[("b", Op::Ne, Value::Int(0))])).unwrap();
        assert_eq!(id, SubId(0), "free slot reused");
        t.remove(SubId(2)).unwrap();
        assert_eq!(
            t.rows[0].items.iter().map(|c| c.key).collect::<Vec<_>>(),
            vec![1]
        );
    }

    #[test]
    fn a_builder_fed_in_windows_lays_out_what_build_lays_out() {
        let p = crate::workload::Params {
            events: 1,
            interfaces: 4,
            filters_per_interface: (30, 50),
            names: 7,
            ..Default::default()
        };
        let w = crate::workload::generate(&p, 3).unwrap();
        for grouping in [false, true] {
            let all = Tables::build(&w.subscriptions, grouping).unwrap();
            let mut b = Tables::builder(grouping);
            for window in w.subscriptions.chunks(17) {
                b.push(window).unwrap();
            }
            assert_eq!(b.len(), w.subscriptions.len());
            let t = b.finish().unwrap();
            assert_eq!(t.constraints_array(), all.constraints_array());
            assert_eq!(t.row_start(), all.row_start());
            assert_eq!(t.size_c(), all.size_c());
            assert_eq!(
                (&t.size_f, &t.filter_iface, &t.filter_start, &t.filter_sig),
                (
                    &all.size_f,
                    &all.filter_iface,
                    &all.filter_start,
                    &all.filter_sig
                )
            );
            assert_eq!(t.fconstraints, all.fconstraints);
            assert_eq!((&t.iface_ids, &t.pool), (&all.iface_ids, &all.pool));
        }
        // An error names the subscription by its position in everything pushed.
        let mut b = Tables::builder(false);
        b.push(&w.subscriptions[..5]).unwrap();
        let bad = Subscription {
            interface: InterfaceId(1),
            filter: Filter {
                constraints: vec![],
            },
        };
        let e = b.push(&[bad]).unwrap_err();
        assert!(matches!(e, LayoutError::Model { index: 5, .. }), "{e}");
    }

    #[test]
    fn the_layout_on_all_cores_places_what_adding_one_by_one_places() {
        let p = crate::workload::Params {
            events: 1,
            interfaces: 5,
            filters_per_interface: (300, 500),
            names: 40,
            ..Default::default()
        };
        let w = crate::workload::generate(&p, 11).unwrap();
        assert!(
            w.subscriptions.len() > 2 * LAYOUT_PART,
            "several parts a window"
        );
        // One by one: the serial path of `add` (names and strings numbered by first use).
        let mut one = Tables::default();
        for s in &w.subscriptions {
            one.add(s).unwrap();
        }
        one.relayout().unwrap();
        for window in [w.subscriptions.len(), 700] {
            let mut b = Tables::builder(false);
            for c in w.subscriptions.chunks(window) {
                b.push(c).unwrap();
            }
            let t = b.finish().unwrap();
            let items = |t: &Tables| t.rows.iter().map(|r| r.items.clone()).collect::<Vec<_>>();
            assert_eq!(items(&t), items(&one));
            assert_eq!(t.constraints_array(), one.constraints_array());
            assert_eq!(
                (&t.size_f, &t.filter_iface, &t.filter_start, &t.filter_sig),
                (
                    &one.size_f,
                    &one.filter_iface,
                    &one.filter_start,
                    &one.filter_sig
                )
            );
            assert_eq!(t.fconstraints, one.fconstraints);
            assert_eq!((&t.iface_ids, &t.pool), (&one.iface_ids, &one.pool));
            assert!(!t.pool.is_empty(), "the workload has strings");
        }
        // A bad filter in a later part is named by its place in everything pushed.
        let mut subs = w.subscriptions.clone();
        subs[LAYOUT_PART + 3].filter.constraints.clear();
        let e = Tables::build(&subs, false).unwrap_err();
        assert!(
            matches!(e, LayoutError::Model { index, .. } if index == LAYOUT_PART + 3),
            "{e}"
        );
        // Removing from a layout builds the positions it left out.
        let mut t = Tables::build(&w.subscriptions, false).unwrap();
        t.remove(SubId(7)).unwrap();
        one.remove(SubId(7)).unwrap();
        assert_eq!(t.size_c(), one.size_c());
        assert_eq!(t.rows[0].items, one.rows[0].items);
    }

    /// An attribute as encoded: (row, type, value or its string's bytes, string id).
    type Decoded = (u32, u32, Vec<u8>, u32);

    /// Each event's attributes as encoded ([`Decoded`]), so that two encodings with
    /// different placements compare.
    fn decoded(evs: &[DevEvent], attrs: &[DevAttr], bytes: &[u8]) -> Vec<Vec<Decoded>> {
        evs.iter()
            .map(|e| {
                attrs[e.start as usize..(e.start + e.len) as usize]
                    .iter()
                    .map(|a| {
                        let v = if a.ty == TY_STR as u32 {
                            bytes[a.val as usize..a.val as usize + a.str_len as usize].to_vec()
                        } else {
                            a.val.to_le_bytes().to_vec()
                        };
                        (a.row_id, a.ty, v, a.str_id)
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn the_slotted_room_encodes_what_the_exact_room_does_and_reports_a_slot_outgrown() {
        let p = crate::workload::Params {
            events: 2000,
            interfaces: 4,
            filters_per_interface: (30, 50),
            names: 7,
            ..Default::default()
        };
        let w = crate::workload::generate(&p, 5).unwrap();
        let t = Tables::build(&w.subscriptions, false).unwrap();
        let encode = |room: &EncodeRoom| {
            let (n, a, b) = room.total();
            let mut out = (
                vec![DevEvent::default(); n],
                vec![DevAttr::default(); a],
                vec![0u8; b],
            );
            let r = t.encode_into(&w.events, room, &mut out.0, &mut out.1, &mut out.2);
            (r, out)
        };
        let (most, exact) = encode(&Tables::encode_room(&w.events));
        let most = most.expect("the exact room never overflows");
        assert!(most > 0, "the workload has strings");
        let want = decoded(&exact.0, &exact.1, &exact.2);
        // A slot of exactly the most a part took holds every part.
        let (r, slotted) = encode(&Tables::slotted_room(&w.events, most));
        assert_eq!(r, Ok(most));
        assert_eq!(decoded(&slotted.0, &slotted.1, &slotted.2), want);
        // One byte less: the largest part outgrows it, and says how much it needed.
        let (r, _) = encode(&Tables::slotted_room(&w.events, most - 1));
        assert_eq!(r, Err(BytesOverflow { most }));
    }
}
