//! Users' files -> model (JSON Lines), with errors that name the file, the line (1-based),
//! the column where the JSON parser knows it, and what is wrong. Nothing is skipped.
//!
//! - subscriptions, one filter per line:
//!   `{"subscription": 7, "filter": [["n1", "=", "a"]], "area": [x, y, r]}`
//!   (lines with the same `subscription` form one subscription, filters in file order);
//!   `area` is a circle `[x, y, r]` (three numbers) or an axis-aligned rectangle
//!   `[x_min, y_min, x_max, y_max]` (four numbers, borders included);
//! - events, one per line: `{"loc": [x, y], "attrs": {"n1": "a"}}` (`attrs` may be left
//!   out: an event of location only).
//!
//! A UTF-8 byte-order mark before the first line is accepted; `-` is standard input.
//! An events stream is read in windows of its text ([`ccm::text`]: a range of the file's
//! map, no copy) and parsed on all cores straight into flat batches
//! ([`parse_events_text`]: each task cuts its own part into lines); windows already cut
//! into lines ([`LineReader`]) are parsed into a batch ([`parse_events_batch`]) or one
//! result per line ([`parse_events_window`]).
//!
//! Values: JSON integers that fit an `i64` are integers, other numbers floats, strings
//! strings (CCM's typing). An empty `filter` array is a pure location filter.

use crate::columns::{Part, SubscriptionColumns};
use crate::model::{
    Area, Constraint, Event, Filter, Location, Op, Subscription, SubscriptionId, Value,
};
pub use ccm::io::{display_path, LineReader, RawLines, STDIN};
use rayon::prelude::*;
use serde::de::{Deserializer, MapAccess, Visitor};
use std::fmt;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// A loader error.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    #[error("{file}: cannot read")]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}{}: {what}", column.map(|c| format!(":{c}")).unwrap_or_default())]
    Bad {
        file: PathBuf,
        line: usize,
        column: Option<usize>,
        what: String,
    },
    /// Several bad lines, all found in one pass: the first
    /// [`MAX_REPORTED`](ccm::io::MAX_REPORTED), one a line of the message, then how many
    /// there were in all.
    #[error("{}", ccm::io::many_message(errors, *total))]
    Lines { errors: Vec<IoError>, total: usize },
}

/// A JSON object's members in order, duplicate keys kept (so that they can be refused).
struct Members(Vec<(String, serde_json::Value)>);

impl<'de> serde::Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut out = Vec::new();
                while let Some(kv) = map.next_entry::<String, serde_json::Value>()? {
                    out.push(kv);
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// A line's problem: the column where known, and what is wrong.
type LineError = (Option<usize>, String);

/// The members of the top-level object.
fn members(line: &str) -> Result<Vec<(String, serde_json::Value)>, LineError> {
    serde_json::from_str::<Members>(line)
        .map(|m| m.0)
        .map_err(json_error)
}

/// A line serde_json refused: the column from 1, serde_json's cause without its own
/// "at line 1 column N" (see [`ccm::io::json_line_error`]).
fn json_error(e: serde_json::Error) -> LineError {
    let (column, cause) = ccm::io::json_line_error(&e);
    (Some(column), format!("invalid JSON object: {cause}"))
}

/// Picks the keys `names` out of `m`, refusing unknown and repeated keys.
fn take_keys<const N: usize>(
    m: Vec<(String, serde_json::Value)>,
    names: [&str; N],
) -> Result<[Option<serde_json::Value>; N], String> {
    let mut slots: [Option<serde_json::Value>; N] = std::array::from_fn(|_| None);
    for (k, v) in m {
        let Some(i) = names.iter().position(|n| *n == k) else {
            return Err(format!(
                "unknown key `{k}` (expected {})",
                names.map(|n| format!("`{n}`")).join(", ")
            ));
        };
        if slots[i].is_some() {
            return Err(format!("key `{k}` appears twice"));
        }
        slots[i] = Some(v);
    }
    Ok(slots)
}

fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn value(v: &serde_json::Value) -> Result<Value, String> {
    match v {
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Ok(Value::Int(i)),
            None if n.is_u64() => Err(format!(
                "integer {n} does not fit in a signed 64-bit integer"
            )),
            None => n
                .as_f64()
                .map(Value::Float)
                .ok_or_else(|| format!("number {n} is not representable")),
        },
        serde_json::Value::String(s) => Ok(Value::Str(s.clone())),
        other => Err(format!(
            "expected a number or a string, found {}",
            kind(other)
        )),
    }
}

/// `[a, b, ...]` of exactly `n` numbers.
fn numbers(v: &serde_json::Value, key: &str, n: usize, shape: &str) -> Result<Vec<f64>, String> {
    let arr = v
        .as_array()
        .filter(|a| a.len() == n)
        .ok_or_else(|| format!("`{key}` must be {shape}, found {v}"))?;
    arr.iter()
        .map(|x| {
            x.as_f64()
                .ok_or_else(|| format!("`{key}` must be {shape}, found {v}"))
        })
        .collect()
}

/// The area of `[x, y, r]` (a circle) or `[x_min, y_min, x_max, y_max]` (a rectangle).
fn area_of(v: &[f64]) -> Result<Area, crate::model::ModelError> {
    match *v {
        [x0, y0, x1, y1] => Area::rect(x0, y0, x1, y1),
        [x, y, r] => Area::circle(x, y, r),
        _ => unreachable!("callers pass three or four numbers"),
    }
}

/// Parses one subscriptions line.
pub fn subscription_from_line(line: &str) -> Result<Subscription, LineError> {
    match fast_subscription(line) {
        Some(s) => Ok(s),
        None => slow_subscription(line),
    }
}

/// A subscriptions line through `serde_json::Value`s: every line, every error worded.
fn slow_subscription(line: &str) -> Result<Subscription, LineError> {
    let m = members(line)?;
    let [id, filter, area] =
        take_keys(m, ["subscription", "filter", "area"]).map_err(|e| (None, e))?;
    let plain = |e: String| (None, e);
    let id = id.ok_or_else(|| plain("missing key `subscription`".into()))?;
    let id = id
        .as_u64()
        .and_then(|i| u32::try_from(i).ok())
        .ok_or_else(|| {
            plain(format!(
                "`subscription` must be an integer in 0..=4294967295, found {id}"
            ))
        })?;
    let filter = filter.ok_or_else(|| plain("missing key `filter`".into()))?;
    let items = filter.as_array().ok_or_else(|| {
        plain(format!(
            "`filter` must be an array, found {}",
            kind(&filter)
        ))
    })?;
    let mut constraints = Vec::with_capacity(items.len());
    for (j, c) in items.iter().enumerate() {
        let t = c.as_array().filter(|a| a.len() == 3).ok_or_else(|| {
            plain(format!(
                "constraint {} must be a [name, operator, value] array, found {c}",
                j + 1
            ))
        })?;
        let name = t[0]
            .as_str()
            .ok_or_else(|| plain(format!("constraint {}: the name must be a string", j + 1)))?;
        let op_text = t[1].as_str().ok_or_else(|| {
            plain(format!(
                "constraint {}: the operator must be a string",
                j + 1
            ))
        })?;
        let op = Op::parse(op_text).ok_or_else(|| {
            plain(format!(
                "constraint {}: unknown operator `{op_text}` (expected = != < > <= >= prefix suffix substr)",
                j + 1
            ))
        })?;
        let v = value(&t[2]).map_err(|e| plain(format!("constraint {}: {e}", j + 1)))?;
        constraints.push(
            Constraint::new(name, op, v)
                .map_err(|e| plain(format!("constraint {}: {e}", j + 1)))?,
        );
    }
    let area = area.ok_or_else(|| plain("missing key `area`".into()))?;
    let shape = "[x, y, radius] or [x_min, y_min, x_max, y_max]";
    let n = area
        .as_array()
        .map_or(3, |a| if a.len() == 4 { 4 } else { 3 });
    let v = numbers(&area, "area", n, shape).map_err(plain)?;
    let area = area_of(&v).map_err(|e| plain(format!("`area`: {e}")))?;
    let f = Filter::new(constraints, area).map_err(|e| plain(e.to_string()))?;
    Ok(Subscription {
        id: SubscriptionId(id),
        filters: vec![f],
    })
}

/// A well-formed subscriptions line read byte by byte straight into the model (no
/// `serde_json::Value`s; the filter through [`ccm::flat_json::Reader::constraints`]);
/// `None` for anything else, which [`subscription_from_line`]'s `serde_json::Value` path
/// then parses and, for a bad line, words the error of (so both paths accept the same
/// lines).
fn fast_subscription(line: &str) -> Option<Subscription> {
    let mut r = ccm::flat_json::Reader::new(line);
    let mut filter = None;
    let (id, area) = fast_fields(&mut r, |r| {
        filter = Some(r.constraints()?);
        Some(())
    })?;
    let f = Filter::new(filter?, area).ok()?;
    Some(Subscription {
        id: SubscriptionId(id),
        filters: vec![f],
    })
}

/// A subscriptions line's object on the fast path, whole: its `"subscription"` id, its
/// `"area"`, and its `"filter"` read by `filter` (each key once, in any order, and no
/// other); `None` for anything else. Both fast readers, into the model and into
/// columns, read a line by it.
fn fast_fields(
    r: &mut ccm::flat_json::Reader,
    mut filter: impl FnMut(&mut ccm::flat_json::Reader) -> Option<()>,
) -> Option<(u32, Area)> {
    r.eat(b'{')?;
    let (mut id, mut filtered, mut area) = (None, false, None);
    loop {
        match r.string()? {
            "subscription" if id.is_none() => {
                r.eat(b':')?;
                id = Some(r.id()?);
            }
            "filter" if !filtered => {
                r.eat(b':')?;
                filter(r)?;
                filtered = true;
            }
            "area" if area.is_none() => {
                r.eat(b':')?;
                area = Some(fast_area(r)?);
            }
            _ => return None,
        }
        if r.next_or_end(b'}')? {
            break;
        }
    }
    r.at_end().then_some(())?;
    filtered.then_some(())?;
    Some((id?, area?))
}

/// An `"area"`'s value on the fast path: `[x, y, radius]` or `[x_min, y_min, x_max,
/// y_max]`; `None` for anything else (the slow path then words the error).
fn fast_area(r: &mut ccm::flat_json::Reader) -> Option<Area> {
    r.eat(b'[')?;
    let (mut v, mut n) = ([0.0; 4], 0);
    loop {
        *v.get_mut(n)? = r.float()?;
        n += 1;
        if r.next_or_end(b']')? {
            break;
        }
    }
    area_of(v.get(..n).filter(|v| v.len() >= 3)?).ok()
}

/// [`fast_subscription`] straight into one more filter of `part` (no heap object per
/// filter, constraint, name or string); `None` (the part as it was, but for the names
/// it knows) for anything else, which [`slow_subscription`] then parses and words.
fn fast_subscription_into(line: &str, part: &mut Part) -> Option<()> {
    let mut r = ccm::flat_json::Reader::new(line);
    let read = fast_fields(&mut r, |r| constraints_into(r, part));
    match read {
        Some((id, area)) => {
            part.end_filter(id, area);
            Some(())
        }
        None => {
            part.abandon_filter();
            None
        }
    }
}

/// A filter's constraints, `[[name, operator, value], ...]`, pushed into `part` as they
/// are read ([`ccm::flat_json::Reader::constraints`]'s form and checks).
fn constraints_into(r: &mut ccm::flat_json::Reader, part: &mut Part) -> Option<()> {
    r.eat(b'[')?;
    if r.peek()? == b']' {
        return r.eat(b']');
    }
    loop {
        r.eat(b'[')?;
        let name = r.string()?;
        r.eat(b',')?;
        let op = Op::parse(r.string()?)?;
        r.eat(b',')?;
        let value = r.scalar()?;
        r.eat(b']')?;
        part.push_constraint(name, op, value)?;
        if r.next_or_end(b']')? {
            return Some(());
        }
    }
}

/// An events line: `loc` as a JSON value, `attrs` with its members in order and
/// duplicates kept (a plain JSON map would keep only the last of two equal names).
struct EventLine {
    loc: Option<serde_json::Value>,
    attrs: Option<Members>,
    error: Option<String>,
}

impl<'de> serde::Deserialize<'de> for EventLine {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = EventLine;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EventLine, A::Error> {
                let mut line = EventLine {
                    loc: None,
                    attrs: None,
                    error: None,
                };
                while let Some(k) = map.next_key::<String>()? {
                    let repeated = match k.as_str() {
                        "loc" => line.loc.replace(map.next_value()?).is_some(),
                        "attrs" => line.attrs.replace(map.next_value()?).is_some(),
                        _ => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                            line.error.get_or_insert(format!(
                                "unknown key `{k}` (expected `loc`, `attrs`)"
                            ));
                            false
                        }
                    };
                    if repeated {
                        line.error.get_or_insert(format!("key `{k}` appears twice"));
                    }
                }
                Ok(line)
            }
        }
        d.deserialize_map(V)
    }
}

/// Parses one events line.
pub fn event_from_line(line: &str) -> Result<Event, LineError> {
    let parsed: EventLine = serde_json::from_str(line).map_err(json_error)?;
    let plain = |e: String| (None, e);
    if let Some(e) = parsed.error {
        return Err(plain(e));
    }
    let loc = parsed
        .loc
        .ok_or_else(|| plain("missing key `loc`".into()))?;
    let xy = numbers(&loc, "loc", 2, "[x, y], two numbers").map_err(plain)?;
    let loc = Location::new(xy[0], xy[1]).map_err(|e| plain(format!("`loc`: {e}")))?;
    // An event of location only (no `attrs`) has no attributes: it matches the filters
    // without constraints whose area holds it.
    let attrs = parsed.attrs.map(|a| a.0).unwrap_or_default();
    let mut list = Vec::with_capacity(attrs.len());
    for (name, v) in &attrs {
        let v = value(v).map_err(|e| plain(format!("attribute `{name}`: {e}")))?;
        list.push((name.clone(), v));
    }
    let content = ccm::model::Event::from_pairs(list).map_err(|e| plain(e.to_string()))?;
    Ok(Event { loc, content })
}

/// A line's problem as a loader error.
fn at(file: &Path, line: usize, (column, what): LineError) -> IoError {
    IoError::Bad {
        file: file.to_path_buf(),
        line,
        column,
        what,
    }
}

/// The same error, of this crate (the loaders' errors are alike).
fn from_ccm(e: ccm::io::IoError) -> IoError {
    match e {
        ccm::io::IoError::Bad {
            file,
            line,
            column,
            what,
        } => IoError::Bad {
            file,
            line,
            column,
            what,
        },
        ccm::io::IoError::Read { file, source } => IoError::Read { file, source },
        ccm::io::IoError::Lines { errors, total } => IoError::Lines {
            errors: errors.into_iter().map(from_ccm).collect(),
            total,
        },
    }
}

/// The text of a raw line ([`ccm::io::line_text`]: UTF-8, a byte-order mark on line 1,
/// `\r`, blank lines).
fn text<'a>(file: &Path, line_no: usize, raw: &'a [u8]) -> Result<&'a str, IoError> {
    ccm::io::line_text(file, line_no, raw).map_err(from_ccm)
}

/// Parses line `line_no` of an events stream `file` (raw bytes without the line end).
pub fn parse_event(file: &Path, line_no: usize, raw: &[u8]) -> Result<Event, IoError> {
    event_from_line(text(file, line_no, raw)?).map_err(|e| at(file, line_no, e))
}

/// Parses line `line_no` of a subscriptions stream `file`.
pub fn parse_subscription(
    file: &Path,
    line_no: usize,
    raw: &[u8],
) -> Result<Subscription, IoError> {
    subscription_from_line(text(file, line_no, raw)?).map_err(|e| at(file, line_no, e))
}

/// A window of an events stream parsed into one batch: its good lines' events, in
/// order, and each bad line's place in the window (from 0) with its error, ascending.
#[derive(Debug, Default)]
pub struct EventsWindow {
    pub batch: crate::batch::EventBatch,
    pub bad: Vec<(usize, IoError)>,
}

/// Parses every line of a window of an events stream on all cores straight into one
/// [`crate::batch::EventBatch`] (no heap object per event on the common path: a line
/// `{"loc": [x, y], "attrs": {...}}` of plain scalars is read byte by byte, through
/// [`ccm::flat_json`]); any other line goes through [`event_from_line`], which words its
/// errors. A bad line is reported as [`parse_event`] reports it and left out.
pub fn parse_events_batch(file: &Path, lines: &RawLines) -> EventsWindow {
    use crate::batch::EventBatch;
    let (batches, bad) = ccm::io::parse_in_parts(
        lines,
        |n| EventBatch::with_capacity(n, 8 * n),
        |batch, i| {
            let line_no = lines.line_no(i);
            let line = text(file, line_no, lines.raw(i))?;
            if fast_event_into(line, batch).is_none() {
                let e = event_from_line(line).map_err(|e| at(file, line_no, e))?;
                batch.push_event(&e);
            }
            Ok(())
        },
    );
    EventsWindow {
        batch: EventBatch::concat(&batches),
        bad,
    }
}

/// Parses a window of an events stream given as its text (whole lines, the first
/// numbered `first_line`: a [`ccm::text::TextWindow`], a range of the file's map) on all
/// cores straight into one [`crate::batch::EventBatch`], each task cutting its own part
/// of the bytes into lines ([`ccm::text::parse_lines_in_parts`]: no thread walks the
/// whole window before the parsing); gives the window's lines, blank ones included,
/// beside it. Lines are read as [`parse_events_batch`] reads them, and a bad line is
/// reported as it reports it, its place counted among the lines that are not blank. The
/// parts' batches, and the window's once given back ([`recycle_batch`]), are reused for
/// the next windows.
///
/// ```
/// use clcb::io::parse_events_text;
/// let text = b"{\"loc\": [1, 2], \"attrs\": {\"a\": 1}}\n\n{\"loc\": [1]}\n{\"loc\": [3, 4]}";
/// let (w, lines) = parse_events_text("events.jsonl".as_ref(), text, 7);
/// assert_eq!((w.batch.len(), lines), (2, 4));
/// assert_eq!(w.bad.len(), 1);
/// assert_eq!(w.bad[0].0, 1);
/// assert!(w.bad[0].1.to_string().starts_with("events.jsonl:9"));
/// ```
pub fn parse_events_text(file: &Path, text: &[u8], first_line: usize) -> (EventsWindow, usize) {
    // The whole window handed to the pool as one job (its steps on all cores, called
    // from a thread of its own: see `ccm::io::parse_events_text`); a window of a part or
    // less (a few lines, `--window 1`) is parsed on the calling thread whatever it does,
    // without waking the pool.
    if text.len() < SMALL_WINDOW {
        parse_text_on_pool(file, text, first_line)
    } else {
        rayon::scope(|_| parse_text_on_pool(file, text, first_line))
    }
}

/// Bytes below which [`parse_events_text`] parses on the calling thread: the least part
/// [`ccm::text::parse_lines_in_parts`] cuts (a window this small is one part).
const SMALL_WINDOW: usize = 16 << 10;

/// [`parse_events_text`], on a thread of the pool. Each part is scanned line after line
/// straight from its bytes ([`located_line_into`]: no line cut first, no pass to check
/// UTF-8), into a batch begun from the last window's names and strings (so that the
/// parts are joined without renumbering); a line the scan does not take is cut at its
/// `\n` and takes the checked path of [`parse_events_batch`] (the same words for the
/// same errors).
fn parse_text_on_pool(file: &Path, text: &[u8], first_line: usize) -> (EventsWindow, usize) {
    use crate::batch::EventBatch;
    let seed = SEED.current();
    let p = ccm::text::parse_parts(
        text,
        first_line,
        |part| {
            // About 100 bytes and 4 attributes an event in Table 1's scenarios; the
            // vectors grow past it.
            SPARES.seeded_part(seed.as_deref(), || {
                EventBatch::with_capacity(part.len() / 96, part.len() / 24)
            })
        },
        |batch, part, first, lines| {
            ccm::text::scan_lines(
                batch,
                part,
                first,
                lines,
                located_line_into,
                |batch, raw, first| {
                    let line =
                        ccm::io::line_str(raw, first).map_err(|(c, what)| (c, what.to_string()))?;
                    if fast_event_into(line, batch).is_none() {
                        batch.push_event(&event_from_line(line)?);
                    }
                    Ok(())
                },
            )
        },
    );
    let bad = p
        .bad
        .into_iter()
        .map(|(i, line, e)| (i, at(file, line, e)))
        .collect();
    let batch = SPARES.window(p.parts, |w, parts| {
        w.concat_seeded_into(parts, seed.as_deref())
    });
    SEED.hand_on(batch.content());
    (EventsWindow { batch, bad }, p.lines)
}

/// The names and strings of the last window parsed by [`parse_events_text`], which the
/// next window's parts begin from.
static SEED: ccm::batch::SeedSlot = ccm::batch::SeedSlot::new();

/// The parts' and windows' batches of [`parse_events_text`] kept for the next window
/// (ccm's [`ccm::text::Spares`], as its events parser keeps its own).
static SPARES: ccm::text::Spares<crate::batch::EventBatch> = ccm::text::Spares::new();

/// Gives a window's batch of [`parse_events_text`] back, done with, for a later window
/// to be parsed into (its memory reused).
pub fn recycle_batch(batch: crate::batch::EventBatch) {
    SPARES.recycle(batch);
}

/// The common events line, `{"loc": [x, y], "attrs": {...}}` (keys in any order, `attrs`
/// optional) with plain scalars, read straight into one more event of `batch`
/// ([`located_line_into`] of its bytes); `None` (the batch as it was) for anything else,
/// a refused event included, which [`event_from_line`] then parses and words.
fn fast_event_into(line: &str, batch: &mut crate::batch::EventBatch) -> Option<()> {
    located_line_into(batch, line.as_bytes()).map(|_| ())
}

/// The common events line (see [`fast_event_into`]) at the start of `text` (a window's
/// bytes from a line's start, not checked for UTF-8), read into one more event of
/// `batch` in one pass by [`ccm::flat_json::LineScan`]: the bytes the line takes, its
/// `\n` included (or all of `text`, when the line ends it); `None` (the batch as it
/// was) for a line of another form or a refused event, which the caller then cuts and
/// parses by the checked path, which words the errors.
#[inline]
fn located_line_into(batch: &mut crate::batch::EventBatch, text: &[u8]) -> Option<usize> {
    let mut s = ccm::flat_json::LineScan::new(text);
    let read = (|| {
        s.eat(b'{')?;
        // The location, and whether the attributes' names are known distinct (once read).
        let (mut loc, mut distinct) = (None, None);
        loop {
            match s.key()? {
                b"loc" if loc.is_none() => {
                    s.eat(b':')?;
                    s.eat(b'[')?;
                    let x = s.float()?;
                    s.eat(b',')?;
                    let y = s.float()?;
                    s.eat(b']')?;
                    loc = Some((x, y));
                }
                b"attrs" if distinct.is_none() => {
                    s.eat(b':')?;
                    distinct = Some(s.object(batch.content_mut())?);
                }
                _ => return None,
            }
            match s.peek()? {
                b',' => s.eat(b',')?,
                b'}' => {
                    s.eat(b'}')?;
                    break;
                }
                _ => return None,
            }
        }
        let (x, y) = loc?;
        let end = s.line_end()?;
        Some((Location::new(x, y).ok()?, distinct.unwrap_or(true), end))
    })();
    match read {
        Some((loc, distinct, end)) if batch.end_scanned_event(loc, distinct).is_ok() => Some(end),
        _ => {
            batch.abandon_event();
            None
        }
    }
}

/// Parses every line of a window of an events stream, in parallel: one result per line,
/// in order (a bad line does not stop the others).
pub fn parse_events_window(file: &Path, lines: &RawLines) -> Vec<Result<Event, IoError>> {
    (0..lines.len())
        .into_par_iter()
        .with_min_len(256)
        .map(|i| parse_event(file, lines.line_no(i), lines.raw(i)))
        .collect()
}

impl ccm::io::LoadError for IoError {
    fn read(e: ccm::io::IoError) -> Self {
        from_ccm(e)
    }
    fn lines(errors: Vec<Self>, total: usize) -> Self {
        IoError::Lines { errors, total }
    }
}

/// Parses a subscriptions stream (`file` names it in errors).
///
/// ```
/// use clcb::io::{parse_events, parse_subscriptions};
/// use clcb::{Subscriptions, SubscriptionId};
/// use std::path::Path;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let text = r#"{"subscription": 7, "filter": [["n1", "=", "a"]], "area": [0, 0, 5]}
/// {"subscription": 7, "filter": [], "area": [100, 100, 1]}
/// {"subscription": 2, "filter": [["n2", ">", 3]], "area": [0, 0, 50]}"#;
/// let subs = Subscriptions::new(parse_subscriptions(Path::new("subs.jsonl"), text.as_bytes())?);
/// assert_eq!(subs.len(), 2);
/// assert_eq!(subs.id(0), SubscriptionId(2)); // ascending ids
/// assert_eq!(subs.as_slice()[1].filters.len(), 2);
///
/// let events = r#"{"loc": [1, 2], "attrs": {"n1": "a", "n2": 4}}"#;
/// let events = parse_events(Path::new("events.jsonl"), events.as_bytes())?;
/// assert_eq!(events[0].attributes().len(), 2);
/// let bad = r#"{"loc": [1], "attrs": {}}"#;
/// let err = parse_events(Path::new("events.jsonl"), bad.as_bytes()).unwrap_err();
/// assert!(err.to_string().starts_with("events.jsonl:1"));
/// # Ok(()) }
/// ```
pub fn parse_subscriptions(
    file: &Path,
    reader: impl BufRead + Send,
) -> Result<Vec<Subscription>, IoError> {
    ccm::io::load_lines(file, reader, parse_subscription)
}

/// Parses an events stream.
pub fn parse_events(file: &Path, reader: impl BufRead + Send) -> Result<Vec<Event>, IoError> {
    ccm::io::load_lines(file, reader, parse_event)
}

/// Opens `path`, standard input for `-` ([`ccm::io::open_input`]).
pub fn open_input(path: &Path) -> Result<Box<dyn BufRead + Send>, IoError> {
    ccm::io::open_input(path).map_err(from_ccm)
}

/// Loads a subscriptions file; `-` is standard input.
pub fn load_subscriptions(path: &Path) -> Result<Vec<Subscription>, IoError> {
    parse_subscriptions(&display_path(path), open_input(path)?)
}

/// Loads an events file; `-` is standard input.
pub fn load_events(path: &Path) -> Result<Vec<Event>, IoError> {
    parse_events(&display_path(path), open_input(path)?)
}

/// Where [`load_subscription_columns_timed`]'s time went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadTiming {
    /// Opening (a map of a regular file) or reading (standard input, a pipe) the bytes.
    pub read: std::time::Duration,
    /// Every line parsed into parts of columns, on all cores.
    pub parse: std::time::Duration,
    /// The parts joined into one set of columns ([`SubscriptionColumns::join`]).
    pub join: std::time::Duration,
}

/// Loads a subscriptions file as columns ([`SubscriptionColumns`]; `-`: standard input):
/// what [`load_subscriptions`] reads, with the same errors, and no heap object per
/// subscription, filter or constraint.
pub fn load_subscription_columns(path: &Path) -> Result<SubscriptionColumns, IoError> {
    load_subscription_columns_timed(path).map(|(c, _)| c)
}

/// [`load_subscription_columns`], with where its time went. A regular file is mapped,
/// its pages read in place from the page cache (a read would copy them into fresh
/// memory that the kernel first zeroes); standard input, a pipe or a device is read
/// whole. The bytes are then cut into chunks at line ends and every chunk parsed on
/// all cores ([`parse_subscription_columns`]).
pub fn load_subscription_columns_timed(
    path: &Path,
) -> Result<(SubscriptionColumns, LoadTiming), IoError> {
    let t = std::time::Instant::now();
    let name = display_path(path);
    let read = |source| IoError::Read {
        file: name.clone(),
        source,
    };
    let file = if path.as_os_str() == STDIN {
        None
    } else {
        Some(std::fs::File::open(path).map_err(read)?)
    };
    if let Some(f) = &file {
        if f.metadata().map_err(read)?.is_file() {
            // SAFETY: the map is read-only and lives until the parse returns; its bytes
            // are only read. Another process that changed the file meanwhile would change
            // what is parsed (as a read racing its writer would), and one that truncated
            // it would make the read fault, as for any program that maps its input
            // (ripgrep's choice too).
            let map = unsafe { memmap2::Mmap::map(f) }.map_err(read)?;
            let opened = t.elapsed();
            let (cols, mut timing) = parse_subscription_columns_timed(&name, &map)?;
            timing.read = opened;
            // Unmapping a large map costs; left to the pool, off the load's path.
            rayon::spawn(move || drop(map));
            return Ok((cols, timing));
        }
    }
    let mut bytes = Vec::new();
    match &file {
        Some(f) => std::io::Read::read_to_end(&mut &*f, &mut bytes),
        None => std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes),
    }
    .map_err(read)?;
    let took = t.elapsed();
    let (cols, mut timing) = parse_subscription_columns_timed(&name, &bytes)?;
    timing.read = took;
    Ok((cols, timing))
}

/// Parses a whole subscriptions stream `text` (`file` names it in errors) into columns:
/// cut into chunks at line ends, each chunk parsed on its own thread into a
/// [`Part`] (the common line read byte by byte straight into it, any other through
/// the `serde_json::Value` path that words errors), then the parts joined. Every bad
/// line is found; they are the error, as [`parse_subscriptions`] gives it.
pub fn parse_subscription_columns(
    file: &Path,
    text: &[u8],
) -> Result<SubscriptionColumns, IoError> {
    parse_subscription_columns_timed(file, text).map(|(c, _)| c)
}

/// Bytes per chunk of [`parse_subscription_columns`] at most.
const CHUNK_BYTES: usize = 1 << 20;

/// A chunk's parse: its part, its lines (blank ones included), and its bad lines'
/// places (line index in the chunk, from 0) and problems.
type ChunkParse = (Part, usize, Vec<(usize, LineError)>);

fn parse_subscription_columns_timed(
    file: &Path,
    text: &[u8],
) -> Result<(SubscriptionColumns, LoadTiming), IoError> {
    let t = std::time::Instant::now();
    let chunk =
        (text.len() / (4 * rayon::current_num_threads().max(1))).clamp(64 << 10, CHUNK_BYTES);
    let mut cuts = vec![0usize];
    while let Some(&last) = cuts.last() {
        if last >= text.len() {
            break;
        }
        let at = last + chunk;
        cuts.push(
            match text.get(at..).and_then(|t| memchr::memchr(b'\n', t)) {
                Some(i) => at + i + 1,
                None => text.len(),
            },
        );
    }
    let parsed: Vec<ChunkParse> = cuts
        .par_windows(2)
        .map(|w| parse_chunk(file, &text[w[0]..w[1]], w[0] == 0))
        .collect();
    let parse = t.elapsed();
    // Bad lines in file order, numbered from the chunks' line counts.
    let mut bad = ccm::io::BadLines::default();
    let mut first_line = 1usize;
    let mut parts = Vec::with_capacity(parsed.len());
    for (part, lines, errors) in parsed {
        for (i, e) in errors {
            bad.push(at(file, first_line + i, e));
        }
        first_line += lines;
        parts.push(part);
    }
    if let Err(e) = bad.finish(|errors, total| IoError::Lines { errors, total }) {
        rayon::spawn(move || drop(parts));
        return Err(e);
    }
    let cols = SubscriptionColumns::join(parts).map_err(|e| IoError::Bad {
        file: file.to_path_buf(),
        line: first_line.saturating_sub(1),
        column: None,
        what: e.to_string(),
    })?;
    let join = t.elapsed() - parse;
    Ok((
        cols,
        LoadTiming {
            read: std::time::Duration::ZERO,
            parse,
            join,
        },
    ))
}

/// Parses one chunk of whole lines (the last may lack its line end); `first` when it
/// begins the stream (its first line may start with a byte-order mark).
fn parse_chunk(file: &Path, text: &[u8], first: bool) -> ChunkParse {
    // Room for a filter per line and five constraints each (Table 1's most): a chunk's
    // columns are new memory that the kernel zeroes where it is touched, so room is
    // sized from the lines counted, not from the bytes (which overshot it nearly twice),
    // and not grown by doubling (each growth a copy into more new memory).
    let lines = memchr::memchr_iter(b'\n', text).count() + 1;
    let mut part = Part::with_capacity(lines, 5 * lines);
    let mut errors = Vec::new();
    let (mut start, mut i) = (0usize, 0usize);
    let ends = memchr::memchr_iter(b'\n', text)
        .chain((text.last() != Some(&b'\n') && !text.is_empty()).then_some(text.len()));
    for end in ends {
        let raw = &text[start..end];
        start = end + 1;
        let line = i;
        i += 1;
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // `line_text` reads the line number only to know line 1 (a byte-order mark).
        let number = if first && line == 0 { 1 } else { 2 };
        let text = match ccm::io::line_text(file, number, raw) {
            Ok(t) => t,
            Err(ccm::io::IoError::Bad { column, what, .. }) => {
                errors.push((line, (column, what)));
                continue;
            }
            Err(e) => {
                errors.push((line, (None, e.to_string())));
                continue;
            }
        };
        if fast_subscription_into(text, &mut part).is_none() {
            match slow_subscription(text) {
                Ok(s) => part.push_subscription(&s),
                Err(e) => errors.push((line, e)),
            }
        }
    }
    (part, i, errors)
}

fn value_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Int(i) => (*i).into(),
        Value::Float(x) => serde_json::Number::from_f64(*x)
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        Value::Str(s) => s.clone().into(),
    }
}

/// Writes subscriptions in the file format (one line per filter).
pub fn write_subscriptions(
    mut w: impl std::io::Write,
    subs: &[Subscription],
) -> std::io::Result<()> {
    for s in subs {
        for f in &s.filters {
            let filter: Vec<serde_json::Value> = f
                .constraints
                .iter()
                .map(|c| serde_json::json!([c.name, c.op.symbol(), value_json(&c.value)]))
                .collect();
            let a = f.area;
            let line = serde_json::json!({
                "subscription": s.id.0,
                "filter": filter,
                "area": match a {
                    Area::Circle { center, .. } => serde_json::json!([center.x, center.y, a.radius()]),
                    Area::Rect { lo, hi } => serde_json::json!([lo.x, lo.y, hi.x, hi.y]),
                },
            });
            writeln!(w, "{line}")?;
        }
    }
    Ok(())
}

/// Writes events in the file format.
pub fn write_events(mut w: impl std::io::Write, events: &[Event]) -> std::io::Result<()> {
    for e in events {
        // Attributes in the event's order (a JSON map would sort them).
        let attrs: Vec<String> = e
            .attributes()
            .iter()
            .map(|a| {
                format!(
                    "{}:{}",
                    serde_json::Value::from(a.name.as_str()),
                    value_json(&a.value)
                )
            })
            .collect();
        let loc = serde_json::json!([e.loc.x, e.loc.y]);
        writeln!(w, "{{\"loc\":{loc},\"attrs\":{{{}}}}}", attrs.join(","))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Subscriptions;

    fn subs(text: &str) -> Result<Vec<Subscription>, IoError> {
        parse_subscriptions(Path::new("s.jsonl"), text.as_bytes())
    }

    fn events(text: &str) -> Result<Vec<Event>, IoError> {
        parse_events(Path::new("e.jsonl"), text.as_bytes())
    }

    #[test]
    fn parses_the_format_examples() {
        let s = subs(
            "{\"subscription\": 7, \"filter\": [[\"n1\", \"=\", \"a\"]], \"area\": [1, 2, 3]}\n",
        )
        .unwrap();
        assert_eq!(s[0].id, SubscriptionId(7));
        assert_eq!(s[0].filters[0].area, Area::circle(1.0, 2.0, 3.0).unwrap());
        assert_eq!(s[0].filters[0].constraints[0].value, Value::Str("a".into()));
        let r =
            subs("{\"subscription\": 7, \"filter\": [], \"area\": [10, 20, 60, 25]}\n").unwrap();
        assert_eq!(
            r[0].filters[0].area,
            Area::rect(10.0, 20.0, 60.0, 25.0).unwrap()
        );
        let e = events("{\"loc\": [1.5, 2], \"attrs\": {\"n1\": \"a\", \"n2\": 3}}\n").unwrap();
        assert_eq!(e[0].loc, Location { x: 1.5, y: 2.0 });
        assert_eq!(e[0].content.get("n2"), Some(&Value::Int(3)));
    }

    #[test]
    fn the_fast_subscription_path_reads_what_the_value_path_reads_and_declines_the_rest() {
        let w = crate::workload::Workload::new(
            crate::workload::Params {
                subscriptions: 50,
                ..crate::workload::Params::default()
            },
            5,
        );
        let mut buf = Vec::new();
        let subs: Vec<Subscription> = (0..50).map(|i| w.subscription(i)).collect();
        write_subscriptions(&mut buf, &subs).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        let odd = [
            r#"{"subscription": 1, "filter": [], "area": [1, 2.5, 3]}"#,
            " {\"area\": [0, 0, 1e2], \"subscription\": 4294967295, \"filter\": [[\"a\", \"prefix\", \"xé\"]]}\t",
            r#"{"subscription": 2, "filter": [["k", "=", "v"]], "area": [-1, 2.5, 3, 2.5]}"#,
        ];
        lines.extend(odd);
        for line in &lines {
            let fast = fast_subscription(line).unwrap_or_else(|| panic!("declined: {line}"));
            assert_eq!(Ok(fast), slow_subscription(line), "{line}");
        }
        // An escape leaves the fast path; the value path reads it.
        let escaped =
            r#"{"subscription": 1, "filter": [["a", "prefix", "x\"y"]], "area": [0, 0, 1]}"#;
        assert!(fast_subscription(escaped).is_none());
        assert!(subscription_from_line(escaped).is_ok());
        for line in [
            r#"{"subscription": 1, "filter": [], "area": [1, 2, 3], "x": 1}"#,
            r#"{"subscription": 1, "subscription": 2, "filter": [], "area": [1, 2, 3]}"#,
            r#"{"subscription": -1, "filter": [], "area": [1, 2, 3]}"#,
            r#"{"subscription": 1, "filter": [["a", "<", "s"]], "area": [1, 2, 3]}"#,
            r#"{"subscription": 1, "filter": [], "area": [1, 2, -3]}"#,
            r#"{"subscription": 1, "filter": [], "area": [1, 2]}"#,
            r#"{"subscription": 1, "filter": [], "area": [3, 2, 1, 4]}"#,
            r#"{"subscription": 1, "filter": [], "area": [1, 2, 3, 4, 5]}"#,
            r#"{"subscription": 1, "filter": [], "area": [1, 2, 3, 1e300]}"#,
            r#"{"subscription": 1, "filter": []}"#,
        ] {
            assert!(fast_subscription(line).is_none(), "{line}");
            assert!(slow_subscription(line).is_err(), "{line}");
        }
    }

    /// Pseudo-random subscriptions lines of every form either path meets: half of them
    /// well-formed, then as often as not a byte deleted, inserted or the line cut.
    fn random_subscription_lines(count: usize) -> Vec<String> {
        let mut next = ccm::io::test_lines::xorshift(0x2545_f491_4f6c_dd1d);
        let nums = [
            "0",
            "-1",
            "2.5",
            "1e3",
            "-0",
            "01",
            "4294967296",
            "1234567890123456789",
            "1e400",
            "\"1\"",
            "null",
        ];
        let scalars = [
            "7",
            "-3",
            "1.5",
            "18446744073709551615",
            "\"a\"",
            "\"a\\\"b\"",
            "\"\\u00e9\"",
            "true",
        ];
        let ops = ["=", "!=", "<", ">=", "prefix", "substr", "~", "\\u003d"];
        let keys_any = ["subscription", "filter", "area", "x"];
        let mut lines = Vec::with_capacity(count);
        for _ in 0..count {
            // Half the lines well-formed (each key once, valid constraints and area).
            let good = next(2) == 0;
            let mut keys = vec!["subscription", "filter", "area"];
            if good {
                keys.rotate_left(next(3));
            } else {
                keys = (0..2 + next(3))
                    .map(|_| keys_any[next(keys_any.len())])
                    .collect();
            }
            let mut fields = Vec::new();
            for k in keys {
                let v = match k {
                    "filter" => {
                        let cs: Vec<String> = (0..next(4))
                            .map(|_| {
                                let name =
                                    ["n1", "é", "\\u0061", ""][next(if good { 2 } else { 4 })];
                                let (op, v) = if good {
                                    [
                                        ("=", "7"),
                                        ("<", "1.5"),
                                        ("prefix", "\"a\""),
                                        ("!=", "\"é\""),
                                    ][next(4)]
                                } else {
                                    (ops[next(ops.len())], scalars[next(scalars.len())])
                                };
                                format!("[\"{name}\", \"{op}\", {v}]")
                            })
                            .collect();
                        format!("[{}]", cs.join(", "))
                    }
                    "area" => {
                        let n = if good {
                            [3, 4][next(2)]
                        } else {
                            [3, 4, 3, 4, 2, 5][next(6)]
                        };
                        let v: Vec<&str> = (0..n)
                            .map(|i| match (good, i) {
                                (true, 0 | 1) => ["-1", "2.5", "10", "-0"][next(4)],
                                (true, _) => ["20", "1e2"][next(2)],
                                _ if next(3) == 0 => nums[next(nums.len())],
                                _ => ["1", "2.5", "10"][next(3)],
                            })
                            .collect();
                        format!("[{}]", v.join(", "))
                    }
                    _ if good => ["0", "7", "4294967295"][next(3)].to_string(),
                    _ => nums[next(nums.len())].to_string(),
                };
                fields.push(format!("\"{k}\": {v}"));
            }
            let mut line = format!("{{{}}}", fields.join(", "));
            let inserts = ['[', ']', '{', '}', ',', ':', '"', ' ', '0', '-'];
            ccm::io::test_lines::damage(&mut line, &mut next, &inserts);
            lines.push(line);
        }
        lines
    }

    /// The byte-level fast path gives, for every line, exactly what the serde_json path
    /// alone gives (the same subscription or the same error), on pseudo-random lines of
    /// every form either path meets, then as often as not a byte deleted, inserted or the
    /// line cut.
    #[test]
    fn subscriptions_lines_parse_as_the_serde_path_parses_them_random_and_malformed() {
        let (mut fast, mut bad) = (0, 0);
        for line in random_subscription_lines(20_000) {
            let got = subscription_from_line(&line);
            let want = slow_subscription(&line);
            assert_eq!(got, want, "{line}");
            fast += fast_subscription(&line).is_some() as usize;
            bad += want.is_err() as usize;
        }
        // Both kinds are exercised.
        assert!(fast > 500 && bad > 5000, "{fast} fast, {bad} bad");
    }

    /// The columns' loader reads every line as the model's loader reads it: the same
    /// filters (as columns) or the same error, line by line, on the random lines; the
    /// columns' fast path takes the lines the model's fast path takes.
    #[test]
    fn subscription_columns_load_as_the_model_loader_loads_random_and_malformed_lines() {
        let (mut fast, mut bad) = (0, 0);
        for line in random_subscription_lines(20_000) {
            let got = parse_subscription_columns(Path::new("s.jsonl"), line.as_bytes());
            let want = subs(&line);
            match (&got, &want) {
                (Ok(c), Ok(m)) => {
                    let m = SubscriptionColumns::from_subscriptions(&Subscriptions::new(m.clone()));
                    assert_eq!(c, &m.unwrap(), "{line}");
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{line}"),
                _ => panic!("{line}: {got:?} against {want:?}"),
            }
            let mut part = Part::default();
            let into = fast_subscription_into(&line, &mut part).is_some();
            assert_eq!(into, fast_subscription(&line).is_some(), "{line}");
            fast += into as usize;
            bad += want.is_err() as usize;
        }
        assert!(fast > 500 && bad > 5000, "{fast} fast, {bad} bad");
    }

    /// A file of many chunks: the columns are the model's, and its bad lines are the
    /// model loader's errors, numbered as the file's lines (blank lines, `\r\n` and a
    /// byte-order mark included).
    #[test]
    fn subscription_columns_of_a_file_of_many_chunks_number_its_lines() {
        let w = crate::workload::Workload::new(
            crate::workload::Params {
                subscriptions: 3000,
                filters_per_subscription: 3,
                ..crate::workload::Params::default()
            },
            9,
        );
        let mut buf = Vec::new();
        write_subscriptions(&mut buf, w.subscriptions().as_slice()).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        // Out of order, blank lines, a `\r\n` line end, a byte-order mark.
        lines.swap(10, 5000);
        lines.insert(7, String::new());
        lines.insert(4000, "  \t".into());
        lines[20].push('\r');
        lines[0].insert(0, '\u{FEFF}');
        let good = lines.join("\n");
        assert!(good.len() > 4 * (64 << 10), "several chunks");
        let cols = parse_subscription_columns(Path::new("s.jsonl"), good.as_bytes()).unwrap();
        let model = Subscriptions::new(subs(&good).unwrap());
        assert_eq!(
            cols,
            SubscriptionColumns::from_subscriptions(&model).unwrap()
        );
        assert_eq!(cols.to_subscriptions(), model);
        for bad_at in [
            [3usize, 4, 5000].as_slice(),
            &[8900],
            &(100..130).collect::<Vec<_>>(),
        ] {
            let mut ls = lines.clone();
            for &i in bad_at {
                ls[i] = format!("{{\"subscription\": 1, \"filter\": [], \"area\": [0, 0, -{i}]}}");
            }
            ls[bad_at[0] + 1].push_str(" x");
            let text = ls.join("\n");
            let got = parse_subscription_columns(Path::new("s.jsonl"), text.as_bytes());
            let want = subs(&text);
            assert_eq!(got.unwrap_err().to_string(), want.unwrap_err().to_string());
        }
    }

    #[test]
    fn a_window_parsed_into_a_batch_gives_the_events_and_errors_of_the_line_parser() {
        let kinds = [
            r#"{"loc": [1.5, 2], "attrs": {"a": 1, "b": "x", "c": -2.5e1}}"#,
            r#"{"attrs": {"k": "v"}, "loc": [3, 4]}"#,
            r#"{"loc": [0, 0]}"#,
            r#" { "loc" : [ 7 , 8.25 ] , "attrs" : { } } "#,
            r#"{"loc": [1, 2], "attrs": {"a": 1, "a": 2}}"#,
            r#"{"loc": [1, 2], "attrs": {"a": null}}"#,
            r#"{"loc": [1], "attrs": {}}"#,
            r#"{"loc": [1e300, 2]}"#,
            r#"{"attrs": {"a": 1}}"#,
            r#"{"loc": [1, 2], "loc": [3, 4]}"#,
            r#"{"loc": [1, 2], "x": 1}"#,
            r#"{"loc": [1, 2], "attrs": {"s": "a\u00e9"}}"#,
            r#"{"loc": [1, 2]} 3"#,
            r#"[1, 2]"#,
        ];
        let text: String = (0..9000)
            .map(|i| format!("{}\n", kinds[i % kinds.len()]))
            .collect();
        let mut r = LineReader::new("e", text.as_bytes());
        let mut w = RawLines::default();
        r.read_window(usize::MAX, &mut w).unwrap();
        let want = parse_events_window(r.file(), &w);
        let got = parse_events_batch(r.file(), &w);
        let good: Vec<Event> = want
            .iter()
            .filter_map(|x| x.as_ref().ok().cloned())
            .collect();
        assert_eq!(got.batch.to_events(), good);
        let bad: Vec<(usize, String)> = want
            .iter()
            .enumerate()
            .filter_map(|(i, x)| x.as_ref().err().map(|e| (i, e.to_string())))
            .collect();
        let got_bad: Vec<(usize, String)> =
            got.bad.iter().map(|(i, e)| (*i, e.to_string())).collect();
        assert_eq!(got_bad, bad);
        assert!(!bad.is_empty() && !good.is_empty());
        // The common lines take the fast path.
        let mut b = crate::batch::EventBatch::new();
        for line in &kinds[..4] {
            assert!(fast_event_into(line, &mut b).is_some(), "{line}");
        }
        for line in &kinds[4..] {
            assert!(fast_event_into(line, &mut b).is_none(), "{line}");
        }
        assert_eq!(b.len(), 4);
    }

    /// The text path of a stream (windows of its bytes, each cut into lines by the
    /// parsing tasks, their batches reused) gives, window after window, the events and
    /// the errors (lines numbered in the stream) of the line path, over windows of every
    /// size, with blank lines, `\r` line ends, a byte-order mark, a line that is not
    /// UTF-8 (its part taking the checked path) and no final line end.
    #[test]
    fn a_streams_text_windows_parse_as_its_line_windows() {
        let kinds: [&[u8]; 9] = [
            br#"{"loc": [1.5, 2], "attrs": {"a": 1, "b": "x", "c": -2.5e1}}"#,
            b"",
            br#"{"attrs": {"k": "v"}, "loc": [3, 4]}"#,
            b"{\"loc\": [0, 0]}\r",
            br#"{"loc": [1], "attrs": {}}"#,
            b"  \t",
            b"{\"loc\": [1, 2], \"attrs\": {\"s\": \"a\xff\"}}",
            br#"{"loc": [1, 2], "x": 1}"#,
            br#"{"loc": [5, 6], "attrs": {"n": 9}}"#,
        ];
        let mut text = b"\xEF\xBB\xBF".to_vec();
        for i in 0..9000 {
            text.extend_from_slice(kinds[i % kinds.len()]);
            text.push(b'\n');
        }
        text.extend_from_slice(kinds[0]);
        let file = Path::new("e");
        /// A window's good events and its errors' places and messages.
        type Parsed = (Vec<Event>, Vec<(usize, String)>);
        // The line path: every window's good events and its errors, in the stream.
        let collect = |batch: &crate::batch::EventBatch, bad: &[(usize, IoError)]| -> Parsed {
            let bad: Vec<(usize, String)> = bad.iter().map(|(i, e)| (*i, e.to_string())).collect();
            (batch.to_events(), bad)
        };
        for window in [1, 7, 4096, 5000, 1 << 20] {
            let mut lines = LineReader::new(file, &text[..]);
            let mut raw = RawLines::default();
            let mut want = Vec::new();
            loop {
                lines.read_window(window, &mut raw).unwrap();
                if raw.is_empty() {
                    break;
                }
                let w = parse_events_batch(file, &raw);
                want.push(collect(&w.batch, &w.bad));
            }
            let mut r =
                ccm::text::TextReader::from_reader(file, std::io::Cursor::new(text.clone()));
            let mut w = ccm::text::TextWindow::default();
            let (mut got, mut line) = (Vec::new(), 1);
            loop {
                r.read_window(window, &mut w).unwrap();
                if w.is_empty() {
                    break;
                }
                let (p, n) = parse_events_text(file, w.bytes(), line);
                line += n;
                got.push(collect(&p.batch, &p.bad));
                recycle_batch(p.batch);
            }
            assert_eq!(line, 9002, "window {window}: the stream's lines");
            let flat = |v: Vec<Parsed>| {
                let (mut events, mut bad) = (Vec::new(), Vec::new());
                for (e, b) in v {
                    bad.extend(b.into_iter().map(|(_, m)| m));
                    events.extend(e);
                }
                (events, bad)
            };
            if window < ccm::io::BLOCK_LINES {
                assert_eq!(got, want, "window {window}");
            }
            let (got, want) = (flat(got), flat(want));
            assert_eq!(got, want, "window {window}");
            assert!(got.1.iter().any(|m| m.contains("UTF-8")) && got.0.len() > 4000);
        }
    }

    #[test]
    fn an_event_of_location_only_has_no_attributes() {
        let e = events("{\"loc\": [1, 2]}\n\n").unwrap();
        assert_eq!(e.len(), 1);
        assert!(e[0].attributes().is_empty());
    }

    #[test]
    fn errors_name_file_line_and_problem() {
        let ok = "{\"subscription\": 1, \"filter\": [], \"area\": [0, 0, 1]}";
        let cases = [
            (
                format!("{ok}\n{{\"subscription\": 1, \"filter\": [], \"area\": [0, 0]}}"),
                "s.jsonl:2: `area` must be",
            ),
            (
                "{\"subscription\": -1, \"filter\": [], \"area\": [0,0,1]}".into(),
                "s.jsonl:1: `subscription` must be",
            ),
            (
                "{\"subscription\": 1, \"filter\": [[\"a\", \"<\", \"x\"]], \"area\": [0,0,1]}"
                    .into(),
                "constraint 1: operator `<`",
            ),
            (
                "{\"subscription\": 1, \"filter\": [[\"a\", \"~\", 1]], \"area\": [0,0,1]}".into(),
                "unknown operator `~`",
            ),
            (
                "{\"subscription\": 1, \"filter\": [], \"area\": [3,0,1,1]}".into(),
                "s.jsonl:1: `area`: rectangle [3.0, 0.0, 1.0, 1.0] is inverted",
            ),
            (
                "{\"subscription\": 1, \"filter\": [], \"area\": [0,0,-1]}".into(),
                "radius -1 is negative",
            ),
            (
                "{\"subscription\": 1, \"filter\": [], \"area\": [0,0,1], \"x\": 1}".into(),
                "unknown key `x`",
            ),
            ("{\"subscription\": 1, \"filter\": []".into(), "s.jsonl:1:"),
        ];
        for (text, want) in cases {
            let e = subs(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} lacks {want:?}");
        }
        let e = events("{\"loc\": [0, 0], \"attrs\": {\"a\": 1, \"a\": 2}}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("e.jsonl:1: attribute `a` appears twice"), "{e}");
        let e = events("{\"loc\": [0, 0], \"attrs\": {\"a\": [1]}}")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("attribute `a`: expected a number or a string"),
            "{e}"
        );
        let e = events("{\"loc\": [0, \"y\"], \"attrs\": {}}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`loc` must be [x, y]"), "{e}");
    }

    #[test]
    fn json_errors_name_the_file_line_and_a_column_from_1_without_serdes_position() {
        // `[` alone is fuzz/regressions/clcb_jsonl-1.bin: serde_json says column 0 for an
        // error before the first byte, and its own "at line 1 column N" for every line.
        let sub_ok = "{\"subscription\": 1, \"filter\": [], \"area\": [0, 0, 1]}";
        let ev_ok = "{\"loc\": [0, 0], \"attrs\": {}}";
        for bad in [
            "[",
            "[1, 2]",
            "\"a\"",
            "1",
            "{\"a\": }",
            "x",
            "{\"loc\": [0, 0]",
        ] {
            for (file, ok, result) in [
                (
                    "s.jsonl",
                    sub_ok,
                    subs(&format!("{sub_ok}\n{bad}\n")).map(|_| ()),
                ),
                (
                    "e.jsonl",
                    ev_ok,
                    events(&format!("{ev_ok}\n{bad}\n")).map(|_| ()),
                ),
            ] {
                assert!(!ok.is_empty());
                let err = result.unwrap_err();
                let msg = err.to_string();
                let IoError::Bad {
                    line,
                    column: Some(c),
                    what,
                    ..
                } = &err
                else {
                    panic!("{bad}: {msg}")
                };
                assert_eq!(*line, 2, "{bad}: {msg}");
                assert!(*c >= 1 && *c <= bad.len() + 1, "{bad}: column {c}: {msg}");
                assert!(
                    msg.starts_with(&format!("{file}:2:{c}: invalid JSON object: ")),
                    "{msg}"
                );
                assert!(!what.contains("at line"), "{bad}: {msg}");
                assert!(!what.contains("column"), "{bad}: {msg}");
            }
        }
        let msg = subs("[\n").unwrap_err().to_string();
        assert_eq!(
            msg,
            "s.jsonl:1:1: invalid JSON object: invalid type: sequence, expected a JSON object"
        );
    }

    #[test]
    fn a_byte_order_mark_before_the_first_line_is_accepted() {
        let s =
            subs("\u{FEFF}{\"subscription\": 7, \"filter\": [], \"area\": [1, 2, 3]}\n").unwrap();
        assert_eq!(s[0].id, SubscriptionId(7));
        let e = events("\u{FEFF}{\"loc\": [1, 2], \"attrs\": {}}\r\n").unwrap();
        assert_eq!(e[0].loc, Location { x: 1.0, y: 2.0 });
    }

    #[test]
    fn written_files_read_back_equal() {
        let text = "{\"subscription\":3,\"filter\":[[\"t\",\">=\",2.5],[\"s\",\"prefix\",\"ab\"]],\"area\":[1.0,2.0,4.0]}\n\
                    {\"subscription\":3,\"filter\":[],\"area\":[-0.1,2.0,4.5,2.0]}\n";
        let s = subs(text).unwrap();
        let mut out = Vec::new();
        write_subscriptions(&mut out, &s).unwrap();
        assert_eq!(subs(std::str::from_utf8(&out).unwrap()).unwrap(), s);
        let e = events("{\"loc\":[0.5,-1.0],\"attrs\":{\"t\":3,\"s\":\"abc\"}}\n").unwrap();
        let mut out = Vec::new();
        write_events(&mut out, &e).unwrap();
        assert_eq!(events(std::str::from_utf8(&out).unwrap()).unwrap(), e);
    }
}
