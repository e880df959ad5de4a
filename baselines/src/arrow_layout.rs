//! Apache Arrow's columnar layout for the flat batch, against the batch's own: a look,
//! measured, at whether the CCM indexes would read Arrow's layout as fast as
//! [`ccm::batch::EventBatch`]'s one 16-byte record per attribute (name, type, value).
//! Test code only: the indexes' matching logic is generic over [`Attrs`], so each layout
//! gets the very same compiled loops and differs only in how an attribute is read.
//!
//! Two columnar forms of the same events:
//! - [`ArrowColumns`]: as Arrow lays out a list of structs `{name: dictionary key, value:
//!   dense union <int64, float64, dictionary key>}`: a column of name keys, a column of
//!   type ids (`i8`), a column of offsets into the union's child of that type, and one
//!   child array per type, so a value is three reads from three arrays;
//! - [`PlainColumns`]: three plain columns (name, type, the value's 8 bytes), columnar
//!   without the union's indirection, the most a columnar layout can offer here.
//!
//! `cargo test --release -p baselines --lib arrow_layout_timed -- --ignored --nocapture`
//! times them on one core (docs/ccm.md, "The batch's layout and Apache Arrow's", has the
//! numbers).

use crate::compiled::{batch_slots, AttrValue, Attrs, Names};
use crate::matcher::BatchNames;
use crate::sff::Num;
use ccm::batch::{EventBatch, TY_FLOAT, TY_INT};

/// The union's type ids, in the order of its children.
const INT: i8 = 0;
const FLOAT: i8 = 1;
const STR: i8 = 2;

/// A batch's attributes in Arrow's layout (module docs); the strings stay in the
/// batch's dictionary, as Arrow's dictionary-encoded strings keep theirs.
struct ArrowColumns {
    names: Vec<u32>,
    type_ids: Vec<i8>,
    offsets: Vec<i32>,
    ints: Vec<i64>,
    floats: Vec<f64>,
    strs: Vec<u32>,
}

impl ArrowColumns {
    fn of(batch: &EventBatch) -> ArrowColumns {
        let mut c = ArrowColumns {
            names: Vec::new(),
            type_ids: Vec::new(),
            offsets: Vec::new(),
            ints: Vec::new(),
            floats: Vec::new(),
            strs: Vec::new(),
        };
        for a in batch.attrs() {
            c.names.push(a.name);
            let (ty, at) = match a.ty {
                TY_INT => (INT, push(&mut c.ints, a.val as i64)),
                TY_FLOAT => (FLOAT, push(&mut c.floats, f64::from_bits(a.val))),
                _ => (STR, push(&mut c.strs, a.val as u32)),
            };
            c.type_ids.push(ty);
            c.offsets.push(at);
        }
        c
    }
}

/// Appends `v`, giving its offset.
fn push<T>(column: &mut Vec<T>, v: T) -> i32 {
    column.push(v);
    column.len() as i32 - 1
}

/// A batch's attributes as three plain columns (module docs).
struct PlainColumns {
    names: Vec<u32>,
    tys: Vec<u32>,
    vals: Vec<u64>,
}

impl PlainColumns {
    fn of(batch: &EventBatch) -> PlainColumns {
        let a = batch.attrs();
        PlainColumns {
            names: a.iter().map(|a| a.name).collect(),
            tys: a.iter().map(|a| a.ty).collect(),
            vals: a.iter().map(|a| a.val).collect(),
        }
    }
}

/// What both columnar forms share for one event: its attributes' range in the columns,
/// the batch's strings and the batch's names in the index's numbering.
struct Event<'a, C> {
    cols: &'a C,
    begin: usize,
    end: usize,
    spans: &'a [(u32, u32)],
    arena: &'a [u8],
    ids: &'a [u32],
}

// By hand: a derive would ask `C: Copy`, where only the reference is copied.
impl<C> Clone for Event<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for Event<'_, C> {}

impl<'a, C> Event<'a, C> {
    fn new(cols: &'a C, batch: &'a EventBatch, names: &'a BatchNames, i: usize) -> Self {
        let starts = batch.starts();
        Event {
            cols,
            begin: starts[i] as usize,
            end: starts[i + 1] as usize,
            spans: batch.strings().spans(),
            arena: batch.strings().arena(),
            ids: &names.ids,
        }
    }
}

/// A value as a columnar form holds it: a number, or a string's id in the batch's strings.
enum Cell {
    Num(Num),
    Str(u32),
}

/// What a columnar form gives an [`Event`]: the column of name keys, and the value of
/// attribute `j` (of the whole batch).
trait Columns {
    fn names(&self) -> &[u32];
    fn cell(&self, j: usize) -> Cell;
}

impl Columns for ArrowColumns {
    #[inline(always)]
    fn names(&self) -> &[u32] {
        &self.names
    }

    /// Three reads: the type id, the offset, the child's entry.
    #[inline(always)]
    fn cell(&self, j: usize) -> Cell {
        let at = self.offsets[j] as usize;
        match self.type_ids[j] {
            INT => Cell::Num(Num::Int(self.ints[at])),
            FLOAT => Cell::Num(Num::Float(self.floats[at])),
            _ => Cell::Str(self.strs[at]),
        }
    }
}

impl Columns for PlainColumns {
    #[inline(always)]
    fn names(&self) -> &[u32] {
        &self.names
    }

    /// Two reads: the type, the value's 8 bytes.
    #[inline(always)]
    fn cell(&self, j: usize) -> Cell {
        let v = self.vals[j];
        match self.tys[j] {
            TY_INT => Cell::Num(Num::Int(v as i64)),
            TY_FLOAT => Cell::Num(Num::Float(f64::from_bits(v))),
            _ => Cell::Str(v as u32),
        }
    }
}

impl<C: Columns> Attrs for Event<'_, C> {
    #[inline(always)]
    fn count(&self) -> usize {
        self.end - self.begin
    }

    #[inline(always)]
    fn value(&self, k: usize) -> AttrValue<'_> {
        match self.cols.cell(self.begin + k) {
            Cell::Num(n) => AttrValue::Num(n),
            Cell::Str(id) => {
                let (at, len) = self.spans[id as usize];
                AttrValue::Str(&self.arena[at as usize..(at + len) as usize])
            }
        }
    }

    /// An array read per attribute (the batch's names in the index's numbering).
    #[inline]
    fn slots(&self, _: &Names, slot: &mut [u32], ids: &mut Vec<u32>) {
        let names = &self.cols.names()[self.begin..self.end];
        batch_slots(names.iter().copied(), self.ids, slot, ids);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiled::BatchAttrs;
    use crate::content_index::ContentIndex;
    use crate::hybrid_index::HybridIndex;
    use crate::Matcher;
    use ccm::workload::{generate, generate_dense, DenseParams, Params, Workload};
    use ccm::InterfaceId;
    use std::time::Instant;

    /// Every answer of `ix` read through `read` (one of the three layouts), event by
    /// event on one core.
    fn answers<F>(w: &Workload, mut read: F) -> Vec<Vec<InterfaceId>>
    where
        F: FnMut(usize) -> Vec<InterfaceId>,
    {
        (0..w.batch.len()).map(&mut read).collect()
    }

    /// The three layouts of `w`'s batch through the content index and the hybrid:
    /// `(layout, index, answers per event)`.
    fn all_layouts(w: &Workload) -> Vec<(&'static str, &'static str, Vec<Vec<InterfaceId>>)> {
        let content = ContentIndex::build(&w.subscriptions).expect("valid subscriptions");
        let hybrid = HybridIndex::build(&w.subscriptions).expect("valid subscriptions");
        let b = &w.batch;
        let (arrow, plain) = (ArrowColumns::of(b), PlainColumns::of(b));
        let mut out = Vec::new();
        let names = content.batch_names(b);
        let mut s = content.scratch();
        out.push((
            "batch",
            "content",
            answers(w, |i| {
                content.match_attrs_with(BatchAttrs::new(b, &names, i), &mut s)
            }),
        ));
        out.push((
            "arrow",
            "content",
            answers(w, |i| {
                content.match_attrs_with(Event::new(&arrow, b, &names, i), &mut s)
            }),
        ));
        out.push((
            "plain",
            "content",
            answers(w, |i| {
                content.match_attrs_with(Event::new(&plain, b, &names, i), &mut s)
            }),
        ));
        let names = hybrid.batch_names(b);
        let mut s = hybrid.scratch();
        out.push((
            "batch",
            "hybrid",
            answers(w, |i| {
                hybrid.choose(BatchAttrs::new(b, &names, i), &mut s).0
            }),
        ));
        out.push((
            "arrow",
            "hybrid",
            answers(w, |i| {
                hybrid.choose(Event::new(&arrow, b, &names, i), &mut s).0
            }),
        ));
        out.push((
            "plain",
            "hybrid",
            answers(w, |i| {
                hybrid.choose(Event::new(&plain, b, &names, i), &mut s).0
            }),
        ));
        out
    }

    #[test]
    fn arrows_layout_and_plain_columns_answer_as_the_batch_does() {
        // Table 1's model (strings and numbers, few names an event; few names and
        // values so that events match) and the dense model (integers, many names).
        let table1 = Params {
            events: 150,
            interfaces: 40,
            constraints_per_filter: (1, 3),
            filters_per_interface: (3, 8),
            names: 8,
            values: 5,
            ..Params::default()
        };
        let dense = DenseParams {
            events: 150,
            filters: 3000,
            names_per_event: (8, 20),
            ..DenseParams::default()
        };
        for w in [
            generate(&table1, 5).expect("valid parameters"),
            generate_dense(&dense, 6).expect("valid parameters"),
        ] {
            let got = all_layouts(&w);
            let sizes: Vec<usize> = got[0].2.iter().map(Vec::len).collect();
            let (least, most) = (sizes.iter().min(), sizes.iter().max());
            assert!(least < most, "answers of several sizes: {sizes:?}");
            for (layout, index, answers) in &got {
                let want = &got
                    .iter()
                    .find(|g| g.0 == "batch" && g.1 == *index)
                    .expect("the batch's answers through every index")
                    .2;
                let first = answers.iter().zip(want).position(|(a, b)| a != b);
                assert_eq!(
                    first, None,
                    "{layout} through the {index} index: first event differing"
                );
            }
        }
    }

    /// Least time per event (ns) of `passes` passes over `w`'s events through layout
    /// `layout` of `read` (0 the batch, 1 Arrow's, 2 plain columns).
    fn least_ns(
        w: &Workload,
        passes: usize,
        layout: usize,
        read: &mut impl FnMut(usize, usize) -> usize,
    ) -> f64 {
        let n = w.batch.len();
        let mut least = f64::INFINITY;
        let mut sink = 0;
        for _ in 0..passes {
            let t0 = Instant::now();
            for i in 0..n {
                sink += read(layout, i);
            }
            least = least.min(t0.elapsed().as_secs_f64() * 1e9 / n as f64);
        }
        std::hint::black_box(sink);
        least
    }

    /// The three layouts timed by turns (7 turns of `passes` passes each), the least of
    /// each printed after `label`.
    fn by_turns(
        label: &str,
        w: &Workload,
        passes: usize,
        mut read: impl FnMut(usize, usize) -> usize,
    ) {
        let mut best = [f64::INFINITY; 3];
        for _ in 0..7 {
            for (layout, b) in best.iter_mut().enumerate() {
                *b = b.min(least_ns(w, passes, layout, &mut read));
            }
        }
        println!(
            "{label}, ns an event: batch {:.1}, arrow {:.1} ({:.3}x), plain columns {:.1} ({:.3}x)",
            best[0],
            best[1],
            best[1] / best[0],
            best[2],
            best[2] / best[0]
        );
    }

    /// One core, the three layouts by turns, on Table 2's default scenario (content
    /// index) and the dense model (hybrid).
    #[test]
    #[ignore = "a measurement: run with --release --ignored --nocapture"]
    fn arrow_layout_timed_against_the_batch() {
        let table2 = generate(&Params::default(), 1).expect("valid parameters");
        let content = ContentIndex::build(&table2.subscriptions).expect("valid subscriptions");
        let b = &table2.batch;
        let (arrow, plain) = (ArrowColumns::of(b), PlainColumns::of(b));
        let names = content.batch_names(b);
        let mut s = content.scratch();
        by_turns("Table 2, content index", &table2, 50, |layout, i| {
            let out = match layout {
                0 => content.match_attrs_with(BatchAttrs::new(b, &names, i), &mut s),
                1 => content.match_attrs_with(Event::new(&arrow, b, &names, i), &mut s),
                _ => content.match_attrs_with(Event::new(&plain, b, &names, i), &mut s),
            };
            out.len()
        });
        for x in [4, 10, 20] {
            let p = DenseParams {
                events: 1000,
                names_per_event: if x == 4 { (3, 5) } else { (x, x) },
                ..DenseParams::default()
            };
            let dense = generate_dense(&p, 1).expect("valid parameters");
            let hybrid = HybridIndex::build(&dense.subscriptions).expect("valid subscriptions");
            let b = &dense.batch;
            let (arrow, plain) = (ArrowColumns::of(b), PlainColumns::of(b));
            let names = hybrid.batch_names(b);
            let mut s = hybrid.scratch();
            let label = format!("dense 100k filters, x={x}, hybrid");
            by_turns(&label, &dense, 10, |layout, i| {
                let out = match layout {
                    0 => hybrid.choose(BatchAttrs::new(b, &names, i), &mut s),
                    1 => hybrid.choose(Event::new(&arrow, b, &names, i), &mut s),
                    _ => hybrid.choose(Event::new(&plain, b, &names, i), &mut s),
                };
                out.0.len()
            });
        }
    }
}
