//! Model -> the flat device tables of §4.3, Fig. 2 (built on the host, uploaded once).
//!
//! Per filter (index = [`FilterId`](crate::model::FilterId), contiguous so that thread
//! `id` of the `Loc` kernel reads element `id` of each, coalesced):
//! - `FPos` (`float2`) and `SqDist` (`f32`): the area, kept apart so that a move copies
//!   8 + 4 bytes and nothing else;
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

use crate::model::{Constraint, Event, Subscriptions, Value};
use clcb_kernels::{
    DevAttr, DevConstraint, Float2, InputHeader, ATTR_WORDS, HEADER_WORDS, KIND_FLOAT, KIND_INT,
    KIND_STR, OP_EQ, OP_GE, OP_GT, OP_LE, OP_LT, OP_NE, OP_PREFIX, OP_SUBSTR, OP_SUFFIX,
};
use std::collections::HashMap;

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

/// Kind and bits of a value; strings are appended to `pool` (bits = their offset).
fn encode_value(v: &Value, pool: &mut Vec<u8>, base: usize) -> (u32, u32, u64) {
    match v {
        Value::Int(i) => (KIND_INT, 0, *i as u64),
        Value::Float(x) => (KIND_FLOAT, 0, x.to_bits()),
        Value::Str(s) => {
            let off = base + pool.len();
            pool.extend_from_slice(s.as_bytes());
            (KIND_STR, s.len() as u32, off as u64)
        }
    }
}

/// The host copy of every persistent device table of Fig. 2a.
#[derive(Clone, Debug, Default)]
pub struct Tables {
    /// CCM's `Names`: constraint name -> row of `Constraints`.
    pub names: HashMap<String, u32>,
    /// Number of subscriptions (`k`, the length of `SubsBV`).
    pub subscriptions: usize,
    pub fpos: Vec<Float2>,
    pub sq_dist: Vec<f32>,
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
    /// Lays out `subs` (§4.3). Linear in the number of constraints.
    pub fn build(subs: &Subscriptions) -> Tables {
        let n = subs.filter_count();
        let mut t = Tables {
            subscriptions: subs.len(),
            ..Tables::default()
        };
        t.fpos.reserve(n);
        t.sq_dist.reserve(n);
        t.bf.reserve(n);
        t.size_f.reserve(n);
        t.filter_sub.reserve(n);
        t.fcons_start.reserve(n + 1);
        // Pass 1: rows, per-filter tables, filter-major constraints.
        let mut per_row: Vec<u32> = Vec::new();
        for (_, sub, f) in subs.filters() {
            t.fpos.push(Float2 {
                x: f.area.center.x,
                y: f.area.center.y,
            });
            t.sq_dist.push(f.area.sq_radius);
            t.size_f.push(f.constraints.len() as u32);
            t.filter_sub.push(sub as u32);
            t.fcons_start.push(t.fcons.len() as u32);
            let mut bf = 0u32;
            for c in &f.constraints {
                let row = match t.names.get(&c.name) {
                    Some(&row) => row,
                    None => {
                        let row = t.names.len() as u32;
                        t.names.insert(c.name.clone(), row);
                        row
                    }
                };
                if row as usize == per_row.len() {
                    per_row.push(0);
                }
                per_row[row as usize] += 1;
                bf |= bloom_bit(row);
                let dc = t.device_constraint(c, row);
                t.fcons.push(dc);
            }
            t.bf.push(bf);
        }
        t.fcons_start.push(t.fcons.len() as u32);
        // Pass 2: name-major `Constraints` from the filter-major list (counting sort).
        t.size_c = per_row;
        t.row_start = Vec::with_capacity(t.size_c.len());
        let mut next = 0u32;
        for &len in &t.size_c {
            t.row_start.push(next);
            next += len;
        }
        let mut fill = t.row_start.clone();
        t.constraints = vec![DevConstraint::default(); t.fcons.len()];
        for f in 0..n {
            for k in t.fcons_start[f]..t.fcons_start[f + 1] {
                let mut c = t.fcons[k as usize];
                let row = c.tag as usize;
                c.tag = f as u32;
                t.constraints[fill[row] as usize] = c;
                fill[row] += 1;
            }
        }
        t
    }

    fn device_constraint(&mut self, c: &Constraint, row: u32) -> DevConstraint {
        let (kind, len, bits) = encode_value(&c.value, &mut self.cstrings, 0);
        DevConstraint {
            op: op_code(c.op),
            kind,
            len,
            tag: row,
            bits,
        }
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
    /// multiple of 4 words. Returns
    /// the number of attributes written.
    pub fn encode_event(&self, e: &Event, out: &mut Vec<u32>) -> u32 {
        let start = out.len();
        let mut attrs: Vec<DevAttr> = Vec::with_capacity(e.attributes().len());
        let mut bf = 0u32;
        for a in e.attributes() {
            if let Some(&row) = self.names.get(&a.name) {
                bf |= bloom_bit(row);
                attrs.push(DevAttr {
                    row,
                    ..DevAttr::default()
                });
            }
        }
        let strings_at = (HEADER_WORDS + ATTR_WORDS * attrs.len()) * 4;
        let mut pool = Vec::new();
        let mut i = 0;
        for a in e.attributes() {
            if self.names.contains_key(&a.name) {
                let (kind, len, bits) = encode_value(&a.value, &mut pool, strings_at);
                attrs[i].kind = kind;
                attrs[i].len = len;
                attrs[i].bits = bits;
                i += 1;
            }
        }
        let head = InputHeader {
            bf,
            pos: Float2 {
                x: e.loc.x,
                y: e.loc.y,
            },
            n_attrs: attrs.len() as u32,
        };
        out.extend_from_slice(bytemuck::cast_slice(&[head]));
        out.extend_from_slice(bytemuck::cast_slice(&attrs));
        pool.resize(pool.len().div_ceil(4) * 4, 0);
        out.extend(
            pool.chunks_exact(4)
                .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])),
        );
        // Whole 16-byte units, so that the next event of a batch starts aligned for the
        // 8-byte values of its `Attrs`.
        out.resize(start + (out.len() - start).div_ceil(4) * 4, 0);
        debug_assert_eq!(out[start], bf);
        attrs.len() as u32
    }

    /// The attributes of an event encoded at `words` (for the `Cont` grid).
    pub fn attrs_of(words: &[u32]) -> &[DevAttr] {
        let head: &InputHeader = bytemuck::from_bytes(bytemuck::cast_slice(&words[..HEADER_WORDS]));
        let n = head.n_attrs as usize;
        bytemuck::cast_slice(&words[HEADER_WORDS..HEADER_WORDS + ATTR_WORDS * n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Area, Filter, Location, Op, Subscription, SubscriptionId};

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
        let off = attrs[0].bits as usize;
        assert_eq!(&bytes[off..off + 5], b"hello");
        assert_eq!(words.len(), 12); // 4 + 6 + 2 string words, padded to 12
    }
}
