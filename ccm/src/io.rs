//! Users' files -> model: JSON Lines loaders with line-numbered errors.
//!
//! - subscriptions: one filter per line,
//!   `{"interface": 3, "filter": [["temp", ">", 30], ["area", "=", "area1"]]}`;
//! - events: one event per line, `{"temp": 25, "area": "area1"}`.
//!
//! JSON integers become [`Value::Int`] (they must fit in an `i64`), other numbers
//! [`Value::Float`], strings [`Value::Str`]. Every malformed line is an error naming the
//! file, the line (1-based), the column where the JSON parser knows it, and what is
//! wrong; blank lines are skipped (and counted, so line numbers are the file's). A UTF-8 byte-order mark before the
//! first line is accepted; `\r\n` line ends are accepted.
//!
//! A path `-` is standard input ([`open_input`]), named `<stdin>` in errors. Streams are
//! read in windows of lines ([`LineReader`], [`RawLines`]) so that an events stream of
//! any length is read in bounded memory; the lines of a window are parsed in parallel
//! ([`parse_events_window`]), each line to its own result, so a caller can report a bad
//! line and go on with the others; [`parse_events_batch`] parses a window straight into
//! one flat [`EventBatch`] (no heap object per event or attribute), the form the engines
//! take. [`parse_events_text`] does the same for a window given as its text
//! ([`crate::text`]), each task cutting its own part into lines: the path of `ccm match`.

use crate::batch::{EventBatch, ValueRef};
use crate::model::{
    Attribute, Constraint, Event, Filter, InterfaceId, ModelError, Op, Subscription, Value,
};
use rayon::prelude::*;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// A loader error: where (file, line, column) and what. The cause of a read error is its
/// [`std::error::Error::source`], not repeated in the message.
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
    /// Several bad lines, all found in one pass: the first [`MAX_REPORTED`], one a line
    /// of the message, then how many there were in all.
    #[error("{}", many_message(errors, *total))]
    Lines { errors: Vec<IoError>, total: usize },
}

/// Bad lines one error names at most; the rest are counted.
pub const MAX_REPORTED: usize = 20;

/// The message of [`IoError::Lines`] (and its twins in the other crates): each error
/// on a line of its own, then the count.
pub fn many_message<E: std::fmt::Display>(errors: &[E], total: usize) -> String {
    let mut m = String::new();
    for e in errors {
        m.push_str(&format!("{e}\n"));
    }
    m.push_str(&format!("{total} bad line(s)"));
    if total > errors.len() {
        m.push_str(&format!(", the first {} shown", errors.len()));
    }
    m
}

/// Bad lines met while a file is read on: the first [`MAX_REPORTED`] kept in file order,
/// all counted.
#[derive(Debug)]
pub struct BadLines<E> {
    kept: Vec<E>,
    total: usize,
}

impl<E> Default for BadLines<E> {
    fn default() -> Self {
        BadLines {
            kept: Vec::new(),
            total: 0,
        }
    }
}

impl<E> BadLines<E> {
    /// Counts a bad line (kept while fewer than [`MAX_REPORTED`] are).
    pub fn push(&mut self, e: E) {
        self.total += 1;
        if self.kept.len() < MAX_REPORTED {
            self.kept.push(e);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// `Ok` without bad lines; the one bad line's error; or `many(kept, total)`.
    pub fn finish(mut self, many: impl FnOnce(Vec<E>, usize) -> E) -> Result<(), E> {
        match (self.total, self.kept.pop()) {
            (0, _) | (_, None) => Ok(()),
            (1, Some(e)) => Err(e),
            (total, Some(last)) => {
                self.kept.push(last);
                Err(many(self.kept, total))
            }
        }
    }
}

impl IoError {
    fn bad(file: &Path, line: usize, column: Option<usize>, what: impl Into<String>) -> Self {
        IoError::Bad {
            file: file.to_path_buf(),
            line,
            column,
            what: what.into(),
        }
    }

    /// The line of a [`IoError::Bad`] error.
    pub fn line(&self) -> Option<usize> {
        match self {
            IoError::Bad { line, .. } => Some(*line),
            IoError::Lines { errors, .. } => errors.first().and_then(IoError::line),
            IoError::Read { .. } => None,
        }
    }
}

/// The path that means standard input.
pub const STDIN: &str = "-";

/// How errors name `path`: `<stdin>` for `-`, else the path.
pub fn display_path(path: &Path) -> PathBuf {
    if path.as_os_str() == STDIN {
        PathBuf::from("<stdin>")
    } else {
        path.to_path_buf()
    }
}

/// Opens `path` for reading, standard input for `-`, with a 1 MiB buffer.
pub fn open_input(path: &Path) -> Result<Box<dyn BufRead + Send>, IoError> {
    const CAP: usize = 1 << 20;
    if path.as_os_str() == STDIN {
        return Ok(Box::new(std::io::BufReader::with_capacity(
            CAP,
            std::io::stdin(),
        )));
    }
    std::fs::File::open(path)
        .map(|f| Box::new(std::io::BufReader::with_capacity(CAP, f)) as Box<dyn BufRead + Send>)
        .map_err(|source| IoError::Read {
            file: display_path(path),
            source,
        })
}

/// A window of raw lines of a stream (line ends removed), blank lines left out, each
/// with its line number in the stream ([`RawLines::line_no`]). Reused from window to
/// window: its buffers keep their capacity.
#[derive(Debug, Default)]
pub struct RawLines {
    text: Vec<u8>,
    /// Each line's start and end in `text`, and its 1-based line number.
    spans: Vec<(usize, usize, usize)>,
}

impl RawLines {
    /// Lines in the window.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The 1-based line number, in the stream, of line `i` of the window.
    pub fn line_no(&self, i: usize) -> usize {
        self.spans[i].2
    }

    /// Line `i` without its `\n`.
    pub fn raw(&self, i: usize) -> &[u8] {
        let (a, b, _) = self.spans[i];
        &self.text[a..b]
    }

    /// Adds the line `text[start..end]` numbered `line_no`, unless it is blank (spaces,
    /// tabs, a `\r` only): blank lines are counted but not kept.
    fn push(&mut self, start: usize, end: usize, line_no: usize) {
        let blank = |l: &[u8]| l.iter().all(u8::is_ascii_whitespace);
        if !blank(&self.text[start..end]) {
            self.spans.push((start, end, line_no));
        }
    }

    /// Bytes read for this window, line ends included.
    pub fn bytes(&self) -> usize {
        self.text.len()
    }

    /// Swaps the window's bytes (whole lines, blank ones included) with `other`; the
    /// lines are forgotten.
    pub(crate) fn swap_text(&mut self, other: &mut Vec<u8>) {
        std::mem::swap(&mut self.text, other);
        self.spans.clear();
    }
}

/// Reads a stream in windows of lines; see [`RawLines`].
pub struct LineReader<R> {
    file: PathBuf,
    reader: R,
    next_line: usize,
    /// Bytes read from `reader` but not yet handed out (they follow the last window).
    carry: Vec<u8>,
    /// Windows of at least this many lines are read by blocks and split on all cores.
    block_lines: usize,
    /// Bytes per part of a block split on all cores.
    part_bytes: usize,
    /// Mean bytes per line so far (the size of the next block).
    line_bytes: usize,
}

/// Windows of at least this many lines are read a block of bytes at a time and cut into
/// lines on all cores ([`LineReader::read_window`]).
pub const BLOCK_LINES: usize = 4096;

/// Bytes per part when a block is cut into lines on all cores.
const PART_BYTES: usize = 256 << 10;

impl<R: BufRead> LineReader<R> {
    /// A reader of `reader`, named `file` in errors.
    pub fn new(file: impl Into<PathBuf>, reader: R) -> Self {
        LineReader {
            file: file.into(),
            reader,
            next_line: 1,
            carry: Vec::new(),
            block_lines: BLOCK_LINES,
            part_bytes: PART_BYTES,
            line_bytes: 64,
        }
    }

    /// The stream's name in errors.
    pub fn file(&self) -> &Path {
        &self.file
    }

    fn read_error(&self, source: std::io::Error) -> IoError {
        IoError::Read {
            file: self.file.clone(),
            source,
        }
    }

    /// Replaces the window in `out` by the next `max` (at least 1) lines of the stream
    /// that are not blank; `out` is empty at the end of the stream.
    ///
    /// A window of fewer than [`BLOCK_LINES`] lines is read from the reader's buffer a
    /// buffer at a time (memchr for the line ends), copied once per buffer, not line by
    /// line (`read_until` per line): on the GPU machine's 16 cores the reader thread of
    /// `ccm match` read and parsed 1M events of the default scenario in 0.206 s line by
    /// line, 0.128 s by buffers. A larger window is read as one block of bytes (sized
    /// from the lines read so far) and cut into lines on all cores, parts of 256 KiB
    /// each, so that one thread's line splitting does not bound a stream parsed on all
    /// cores; lines beyond `max` wait for the next window.
    pub fn read_window(&mut self, max: usize, out: &mut RawLines) -> Result<(), IoError> {
        out.text.clear();
        out.spans.clear();
        let max = max.max(1);
        if max >= self.block_lines {
            return self.read_block(max, out);
        }
        // Where the line being read began in `out.text`.
        let mut start = 0usize;
        while out.spans.len() < max {
            let from_carry = !self.carry.is_empty();
            let buf = if from_carry {
                &self.carry[..]
            } else {
                match self.reader.fill_buf() {
                    Ok(buf) => buf,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(source) => return Err(self.read_error(source)),
                }
            };
            if buf.is_empty() {
                // The end of the stream: a last line without its `\n`.
                if out.text.len() > start {
                    out.push(start, out.text.len(), self.next_line);
                    self.next_line += 1;
                }
                break;
            }
            let base = out.text.len();
            let mut used = buf.len();
            // The block is copied first, so that a line's blankness can be read there.
            out.text.extend_from_slice(buf);
            for end in memchr::memchr_iter(b'\n', buf) {
                out.push(start, base + end, self.next_line);
                start = base + end + 1;
                self.next_line += 1;
                if out.spans.len() == max {
                    used = end + 1;
                    break;
                }
            }
            out.text.truncate(base + used);
            if from_carry {
                self.carry.drain(..used);
            } else {
                self.reader.consume(used);
            }
        }
        Ok(())
    }

    /// [`LineReader::read_window`] by blocks: the carried bytes and then the reader's
    /// until the block holds about `max` lines (by the mean line so far) or the stream
    /// ends, cut after its last line end; its lines found on all cores; the bytes of
    /// lines past `max` carried to the next window.
    fn read_block(&mut self, max: usize, out: &mut RawLines) -> Result<(), IoError> {
        let want = max
            .saturating_mul(self.line_bytes)
            .clamp(self.part_bytes, 1 << 28);
        self.read_text(want, &mut out.text)?;
        // Parts of at most `part_bytes`, at least four a thread down to 16 KiB.
        let part = (out.text.len() / (4 * rayon::current_num_threads()))
            .max(16 << 10)
            .min(self.part_bytes);
        let lines = split_lines(&out.text, self.next_line, part, &mut out.spans);
        if out.spans.len() > max {
            // The lines past `max`, and any blank ones before them, wait.
            let (start, _, line_no) = out.spans[max];
            let mut rest = out.text[start..].to_vec();
            rest.extend_from_slice(&self.carry);
            self.carry = rest;
            out.text.truncate(start);
            out.spans.truncate(max);
            self.next_line = line_no;
        } else {
            self.next_line += lines;
        }
        if !out.spans.is_empty() {
            self.line_bytes = (out.text.len() / out.spans.len()).max(1);
        }
        Ok(())
    }

    /// Replaces `out` by the next whole lines of the stream, about `want` bytes of them:
    /// the carried bytes and then the reader's until `want` or the end of the stream,
    /// cut after the last line end (a line longer than `want` is read to its end); the
    /// bytes after it carried to the next call. Empty at the end of the stream.
    pub(crate) fn read_text(&mut self, want: usize, out: &mut Vec<u8>) -> Result<(), IoError> {
        out.clear();
        out.append(&mut self.carry);
        // Read straight into the window: a read of at least the reader's buffer, with its
        // buffer empty, bypasses it (one copy of the stream's bytes, not two). Exactly the
        // room needed: the buffer is reused window after window, a few of them in flight.
        let need = want.saturating_sub(out.len());
        out.reserve_exact(need);
        let got = (&mut self.reader)
            .take(need as u64)
            .read_to_end(out)
            .map_err(|e| self.read_error(e))?;
        let eof = got < need;
        // Whole lines only, unless the stream ended.
        let whole = if eof {
            out.len()
        } else {
            match memchr::memrchr(b'\n', out) {
                Some(i) => i + 1,
                // One line longer than the block: read on until its end.
                None => {
                    self.reader
                        .read_until(b'\n', out)
                        .map_err(|e| self.read_error(e))?;
                    out.len()
                }
            }
        };
        self.carry.extend_from_slice(&out[whole..]);
        out.truncate(whole);
        Ok(())
    }
}

/// Cuts `text` (whole lines; the last may lack its `\n`) into its lines on all cores,
/// parts of about `part` bytes cut after a line end: appends the lines that are not
/// blank to `spans`, numbered from `first`, and gives the number of lines, blank ones
/// included.
fn split_lines(
    text: &[u8],
    first: usize,
    part: usize,
    spans: &mut Vec<(usize, usize, usize)>,
) -> usize {
    let mut cuts = vec![0];
    while let Some(&last) = cuts.last() {
        if last >= text.len() {
            break;
        }
        let at = last + part.max(1);
        let next = match text.get(at..).and_then(|t| memchr::memchr(b'\n', t)) {
            Some(i) => at + i + 1,
            None => text.len(),
        };
        cuts.push(next);
    }
    // Per part: its lines (numbered from 0 within the part) and how many lines it has.
    type Part = (Vec<(usize, usize, usize)>, usize);
    let parts: Vec<Part> = cuts
        .par_windows(2)
        .map(|w| {
            let (a, b) = (w[0], w[1]);
            let mut v = Vec::with_capacity((b - a) / 32);
            let (mut start, mut n) = (a, 0);
            let blank = |l: &[u8]| l.iter().all(u8::is_ascii_whitespace);
            for end in memchr::memchr_iter(b'\n', &text[a..b]) {
                let end = a + end;
                if !blank(&text[start..end]) {
                    v.push((start, end, n));
                }
                start = end + 1;
                n += 1;
            }
            if start < b {
                if !blank(&text[start..b]) {
                    v.push((start, b, n));
                }
                n += 1;
            }
            (v, n)
        })
        .collect();
    let mut line = first;
    for (v, n) in parts {
        spans.extend(v.into_iter().map(|(a, b, i)| (a, b, line + i)));
        line += n;
    }
    line - first
}

/// Checks one raw line of a JSON Lines stream and gives its text: valid UTF-8, a
/// byte-order mark skipped on line 1, a final `\r` removed, not blank.
pub fn line_text<'a>(file: &Path, line_no: usize, raw: &'a [u8]) -> Result<&'a str, IoError> {
    line_str(raw, line_no == 1).map_err(|(column, what)| IoError::bad(file, line_no, column, what))
}

/// [`line_text`] of a line whose number is not known yet (`first`: it is line 1): the
/// error as its column and what is wrong.
pub fn line_str(raw: &[u8], first: bool) -> Result<&str, (Option<usize>, &'static str)> {
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let raw = if first {
        raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw)
    } else {
        raw
    };
    let text = std::str::from_utf8(raw).map_err(|e| {
        let ok = std::str::from_utf8(&raw[..e.valid_up_to()]).unwrap_or_default();
        (Some(ok.chars().count() + 1), "not valid UTF-8")
    })?;
    if text.trim().is_empty() {
        return Err((None, "empty line (expected one JSON object per line)"));
    }
    Ok(text)
}

/// Lines per window when a whole file is loaded (parsed in parallel within a window).
const LOAD_WINDOW: usize = 1 << 16;

/// What [`load_lines`] needs of a loader's error type (this crate's, and the other
/// papers' loaders that read JSON Lines with [`LineReader`]).
pub trait LoadError: Send + Sized {
    /// The error of a read that failed.
    fn read(e: IoError) -> Self;
    /// Several bad lines ([`IoError::Lines`] and its twins).
    fn lines(errors: Vec<Self>, total: usize) -> Self;
}

impl LoadError for IoError {
    fn read(e: IoError) -> Self {
        e
    }
    fn lines(errors: Vec<Self>, total: usize) -> Self {
        IoError::Lines { errors, total }
    }
}

/// Parses every line of `reader` with `parse` (in parallel within windows; the next
/// window is read on a thread of its own while one is parsed). A bad line does not stop
/// the reading: every one is found ([`BadLines`]), and they are the error.
pub fn load_lines<T: Send, E: LoadError>(
    file: &Path,
    reader: impl BufRead + Send,
    parse: impl Fn(&Path, usize, &[u8]) -> Result<T, E> + Sync,
) -> Result<Vec<T>, E> {
    let mut lines = LineReader::new(file, reader);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Result<RawLines, IoError>>(1);
    // Windows parsed come back to the reader to be filled again.
    let (back, spare) = std::sync::mpsc::channel::<RawLines>();
    std::thread::scope(|scope| {
        scope.spawn(move || loop {
            let mut window = spare.try_recv().unwrap_or_default();
            let r = lines.read_window(LOAD_WINDOW, &mut window);
            let last = r.is_err() || window.is_empty();
            // A closed channel: the parser stopped (an error); so does the reader.
            if tx.send(r.map(|()| window)).is_err() || last {
                break;
            }
        });
        let mut out = Vec::new();
        let mut bad = BadLines::default();
        for window in rx {
            let window = window.map_err(E::read)?;
            if window.is_empty() {
                break;
            }
            let parsed: Vec<Result<T, E>> = (0..window.len())
                .into_par_iter()
                .with_min_len(256)
                .map(|i| parse(file, window.line_no(i), window.raw(i)))
                .collect();
            let _ = back.send(window);
            for r in parsed {
                match r {
                    Ok(t) if bad.is_empty() => out.push(t),
                    Ok(_) => {}
                    Err(e) => {
                        bad.push(e);
                        out = Vec::new();
                    }
                }
            }
        }
        bad.finish(E::lines)?;
        Ok(out)
    })
}

/// A JSON object as its `(key, value)` pairs in file order, duplicates kept (serde_json's
/// own map would silently keep only the last of two equal keys).
struct Pairs(Vec<(String, serde_json::Value)>);

impl<'de> serde::Deserialize<'de> for Pairs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Pairs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pairs, A::Error> {
                let mut v = Vec::new();
                while let Some(kv) = map.next_entry::<String, serde_json::Value>()? {
                    v.push(kv);
                }
                Ok(Pairs(v))
            }
        }
        d.deserialize_map(V)
    }
}

fn parse_object(
    file: &Path,
    line_no: usize,
    line: &str,
) -> Result<Vec<(String, serde_json::Value)>, IoError> {
    serde_json::from_str::<Pairs>(line)
        .map(|p| p.0)
        .map_err(|e| json_error(file, line_no, &e))
}

fn json_error(file: &Path, line_no: usize, e: &serde_json::Error) -> IoError {
    let (column, cause) = json_line_error(e);
    IoError::bad(
        file,
        line_no,
        Some(column),
        format!("invalid JSON object: {cause}"),
    )
}

/// Where and why serde_json refused one line of a JSON Lines file: the column (from 1)
/// and serde_json's message without its own position. serde_json ends its message in
/// " at line 1 column N" (its own line, not the file's, so it would contradict the
/// file's line from line 2 on) and says column 0 for an error found before it consumed
/// a byte (`[`, `"a"`, `1` where an object is expected): that is column 1. Shared with
/// the clcb loaders.
pub fn json_line_error(e: &serde_json::Error) -> (usize, String) {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let cause = text.strip_suffix(&suffix).unwrap_or(&text);
    (e.column().max(1), cause.to_string())
}

/// Converts a JSON scalar to a [`Value`]: integers that fit in `i64`, other numbers as
/// `f64`, strings.
fn to_value(v: &serde_json::Value) -> Result<Value, String> {
    match v {
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(Value::Int(i))
            } else if n.is_u64() {
                Err(format!(
                    "integer {n} does not fit in a signed 64-bit integer"
                ))
            } else {
                n.as_f64()
                    .map(Value::Float)
                    .ok_or_else(|| format!("number {n} is not representable"))
            }
        }
        serde_json::Value::String(s) => Ok(Value::Str(s.clone())),
        other => Err(format!(
            "expected a number or a string, found {}",
            json_kind(other)
        )),
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn model_err(e: ModelError) -> String {
    e.to_string()
}

/// Parses one subscriptions line (without file context; errors are plain text).
fn subscription_from(pairs: Vec<(String, serde_json::Value)>) -> Result<Subscription, String> {
    let mut interface = None;
    let mut filter = None;
    for (k, v) in pairs {
        let slot = match k.as_str() {
            "interface" => &mut interface,
            "filter" => &mut filter,
            _ => {
                return Err(format!(
                    "unknown key `{k}` (expected `interface` and `filter`)"
                ))
            }
        };
        if slot.is_some() {
            return Err(format!("key `{k}` appears twice"));
        }
        *slot = Some(v);
    }
    let interface = interface.ok_or("missing key `interface`")?;
    let interface = interface
        .as_u64()
        .and_then(|i| u32::try_from(i).ok())
        .ok_or_else(|| {
            format!("`interface` must be an integer in 0..=4294967295, found {interface}")
        })?;
    let filter = filter.ok_or("missing key `filter`")?;
    let items = filter
        .as_array()
        .ok_or_else(|| format!("`filter` must be an array, found {}", json_kind(&filter)))?;
    let mut constraints = Vec::with_capacity(items.len());
    for (j, c) in items.iter().enumerate() {
        let triple = c.as_array().filter(|a| a.len() == 3).ok_or_else(|| {
            format!(
                "constraint {} must be a [name, operator, value] array, found {c}",
                j + 1
            )
        })?;
        let name = triple[0]
            .as_str()
            .ok_or_else(|| format!("constraint {}: the name must be a string", j + 1))?;
        let op_text = triple[1]
            .as_str()
            .ok_or_else(|| format!("constraint {}: the operator must be a string", j + 1))?;
        let op = Op::parse(op_text).ok_or_else(|| {
            format!(
                "constraint {}: unknown operator `{op_text}` (expected one of = != < > <= >= prefix suffix substr)",
                j + 1
            )
        })?;
        let value =
            to_value(&triple[2]).map_err(|e| format!("constraint {}: value: {e}", j + 1))?;
        constraints.push(
            Constraint::new(name, op, value).map_err(|e| format!("constraint {}: {e}", j + 1))?,
        );
    }
    let filter = Filter::new(constraints).map_err(model_err)?;
    Ok(Subscription {
        interface: InterfaceId(interface),
        filter,
    })
}

/// One attribute value of an events line as the JSON parser saw it: a scalar, or the
/// kind of JSON value that is not one (skipped without being built, and refused after
/// the parse with the same words as [`to_value`]).
enum Scalar {
    Value(Value),
    TooBig(u64),
    Not(&'static str),
}

impl<'de> serde::Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar::Value(Value::Int(v)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
                Ok(i64::try_from(v).map_or(Scalar::TooBig(v), |i| Scalar::Value(Value::Int(i))))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar::Value(Value::Float(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar::Value(Value::Str(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Scalar, E> {
                Ok(Scalar::Value(Value::Str(v)))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Scalar, E> {
                Ok(Scalar::Not("a boolean"))
            }
            fn visit_unit<E>(self) -> Result<Scalar, E> {
                Ok(Scalar::Not("null"))
            }
            fn visit_none<E>(self) -> Result<Scalar, E> {
                Ok(Scalar::Not("null"))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Not("an array"))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Not("an object"))
            }
        }
        d.deserialize_any(V)
    }
}

/// An events line's attributes in order, duplicates kept (refused by [`Event::new`]),
/// and the first value that is not a number or a string, worded as [`to_value`] does.
struct EventAttrs {
    attrs: Vec<Attribute>,
    error: Option<String>,
}

impl<'de> serde::Deserialize<'de> for EventAttrs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = EventAttrs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EventAttrs, A::Error> {
                let mut e = EventAttrs {
                    attrs: Vec::with_capacity(map.size_hint().unwrap_or(8)),
                    error: None,
                };
                while let Some((name, v)) = map.next_entry::<String, Scalar>()? {
                    match v {
                        Scalar::Value(value) => e.attrs.push(Attribute { name, value }),
                        Scalar::TooBig(n) => {
                            e.error.get_or_insert_with(|| {
                                format!(
                                    "attribute `{name}`: integer {n} does not fit in a signed 64-bit integer"
                                )
                            });
                        }
                        Scalar::Not(kind) => {
                            e.error.get_or_insert_with(|| {
                                format!(
                                    "attribute `{name}`: expected a number or a string, found {kind}"
                                )
                            });
                        }
                    }
                }
                Ok(e)
            }
        }
        d.deserialize_map(V)
    }
}

/// Parses one events line's text (see [`line_text`]) into an event; errors are plain
/// text with the column where the JSON parser knows it.
pub fn event_from_line(line: &str) -> Result<Event, (Option<usize>, String)> {
    let e = serde_json::from_str::<EventAttrs>(line).map_err(|e| {
        let (column, cause) = json_line_error(&e);
        (Some(column), format!("invalid JSON object: {cause}"))
    })?;
    if let Some(what) = e.error {
        return Err((None, what));
    }
    Event::new(e.attrs).map_err(|e| (None, model_err(e)))
}

/// Parses line `line_no` of an events stream `file` (raw bytes, see [`line_text`]).
pub fn parse_event(file: &Path, line_no: usize, raw: &[u8]) -> Result<Event, IoError> {
    let line = line_text(file, line_no, raw)?;
    event_from_line(line).map_err(|(column, what)| IoError::bad(file, line_no, column, what))
}

/// Parses line `line_no` of a subscriptions stream `file` (raw bytes, see [`line_text`]).
pub fn parse_subscription(
    file: &Path,
    line_no: usize,
    raw: &[u8],
) -> Result<Subscription, IoError> {
    let line = line_text(file, line_no, raw)?;
    if let Some(s) = fast_subscription(line) {
        return Ok(s);
    }
    let pairs = parse_object(file, line_no, line)?;
    subscription_from(pairs).map_err(|w| IoError::bad(file, line_no, None, w))
}

/// A well-formed subscriptions line, read byte by byte straight into the model
/// ([`crate::flat_json::Reader`]: no `serde_json::Value`s, one allocation per name and
/// string); `None` for anything else (escapes, other keys, a key twice, a refused
/// constraint...), which the `serde_json::Value` path then parses and, for a bad line,
/// words the error of (so both paths accept exactly the same lines).
fn fast_subscription(line: &str) -> Option<Subscription> {
    let mut r = crate::flat_json::Reader::new(line);
    r.eat(b'{')?;
    let (mut interface, mut filter) = (None, None);
    loop {
        match r.string()? {
            "interface" if interface.is_none() => {
                r.eat(b':')?;
                interface = Some(r.id()?);
            }
            "filter" if filter.is_none() => {
                r.eat(b':')?;
                filter = Some(r.constraints()?);
            }
            _ => return None,
        }
        if r.next_or_end(b'}')? {
            break;
        }
    }
    r.at_end().then_some(())?;
    Some(Subscription {
        interface: InterfaceId(interface?),
        filter: Filter::new(filter?).ok()?,
    })
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

/// Most lines of a window that one task of [`parse_events_batch`] parses into a batch of
/// its own (the parts are then joined by [`EventBatch::concat`]); a window gets at least
/// four parts a thread down to [`BATCH_PART_MIN`] lines a part, so that a window of a
/// few thousand lines still keeps every core busy.
const BATCH_PART: usize = 2048;

/// Fewest lines of a part of [`parse_events_batch`].
const BATCH_PART_MIN: usize = 64;

/// A window of an events stream parsed into one batch: its good lines' events, in
/// order, and each bad line's place in the window (from 0) with its error, ascending.
#[derive(Debug, Default)]
pub struct EventsWindow {
    pub batch: EventBatch,
    pub bad: Vec<(usize, IoError)>,
}

/// Parses every line of a window of an events stream on all cores straight into one
/// [`EventBatch`]: names and strings interned as they are read, no heap object per
/// event. A bad line is reported as [`parse_event`] reports it and left out; the others
/// are parsed.
///
/// ```
/// use ccm::io::{parse_events_batch, LineReader, RawLines};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let text = "{\"temp\": 25, \"area\": \"a1\"}\n{\"temp\": [1]}\n{\"temp\": 2.5}\n";
/// let mut lines = RawLines::default();
/// LineReader::new("events.jsonl", text.as_bytes()).read_window(100, &mut lines)?;
/// let w = parse_events_batch("events.jsonl".as_ref(), &lines);
/// assert_eq!(w.batch.len(), 2);
/// assert_eq!(w.bad.len(), 1);
/// assert_eq!(w.bad[0].0, 1);
/// assert!(w.bad[0].1.to_string().starts_with("events.jsonl:2"));
/// # Ok(()) }
/// ```
pub fn parse_events_batch(file: &Path, lines: &RawLines) -> EventsWindow {
    let (batches, bad) = parse_in_parts(
        lines,
        |n| EventBatch::with_capacity(n, 8 * n),
        |batch, i| {
            let line_no = lines.line_no(i);
            line_text(file, line_no, lines.raw(i)).and_then(|line| {
                event_into_batch(line, batch)
                    .map_err(|(column, what)| IoError::bad(file, line_no, column, what))
            })
        },
    );
    EventsWindow {
        batch: EventBatch::concat(&batches),
        bad,
    }
}

/// Parses a window of an events stream given as its text (whole lines, the first
/// numbered `first_line`: a [`crate::text::TextWindow`]) on all cores straight into one
/// [`EventBatch`], each task cutting its own part of the bytes into lines
/// ([`crate::text::parse_lines_in_parts`]); gives the window's lines, blank ones
/// included, beside it. Bad lines are reported as [`parse_events_batch`] reports them,
/// their places counted among the lines that are not blank.
///
/// ```
/// use ccm::io::parse_events_text;
/// let text = b"{\"temp\": 25, \"area\": \"a1\"}\n\n{\"temp\": [1]}\n{\"temp\": 2.5}";
/// let (w, lines) = parse_events_text("events.jsonl".as_ref(), text, 7);
/// assert_eq!((w.batch.len(), lines), (2, 4));
/// assert_eq!(w.bad.len(), 1);
/// assert_eq!(w.bad[0].0, 1);
/// assert!(w.bad[0].1.to_string().starts_with("events.jsonl:9"));
/// ```
pub fn parse_events_text(file: &Path, text: &[u8], first_line: usize) -> (EventsWindow, usize) {
    // The whole window handed to the pool as one job: called from a thread of its own (a
    // stream's parser), each of its steps on all cores (the parts, the dictionaries'
    // merge, the renumbering) would otherwise be a job handed in from outside, waking
    // the pool's threads again each time (as the GPU index found of its staging).
    rayon::scope(|_| parse_text_on_pool(file, text, first_line))
}

/// [`parse_events_text`], on a thread of the pool. Each part is scanned line after line
/// by the fast reader, straight from its bytes ([`crate::flat_json::event_line_into_batch`]:
/// no line cut first, no pass to check UTF-8); a line it does not take is cut at its
/// `\n` and takes the checked path of [`parse_events_batch`] (the same words for the same
/// errors).
fn parse_text_on_pool(file: &Path, text: &[u8], first_line: usize) -> (EventsWindow, usize) {
    let seed = SEED.current();
    let p = crate::text::parse_parts(
        text,
        first_line,
        |part| {
            // About 50 bytes and 4 attributes an event in Table 1's scenarios; the
            // vectors grow past it.
            SPARES.seeded_part(seed.as_deref(), || {
                EventBatch::with_capacity(part.len() / 48, part.len() / 12)
            })
        },
        |batch, part, first, lines| {
            crate::text::scan_lines(
                batch,
                part,
                first,
                lines,
                |batch, text| crate::flat_json::event_line_into_batch(text, batch),
                |batch, raw, first| {
                    let line = line_str(raw, first).map_err(|(c, what)| (c, what.to_string()))?;
                    event_into_batch(line, batch)
                },
            )
        },
    );
    let bad = p
        .bad
        .into_iter()
        .map(|(i, line, (column, what))| (i, IoError::bad(file, line, column, what)))
        .collect();
    let batch = SPARES.window(p.parts, |w, parts| {
        w.concat_seeded_into(parts, seed.as_deref())
    });
    SEED.hand_on(&batch);
    (EventsWindow { batch, bad }, p.lines)
}

/// The parts' and windows' batches of [`parse_events_text`] kept for the next window.
static SPARES: crate::text::Spares<EventBatch> = crate::text::Spares::new();

/// The names and strings of the last window parsed by [`parse_events_text`], which the
/// next window's parts begin from.
static SEED: crate::batch::SeedSlot = crate::batch::SeedSlot::new();

/// Gives a window's batch from [`parse_events_text`] back once its events are matched:
/// a later window is parsed into its memory (a few are kept; the others freed).
pub fn recycle_batch(batch: EventBatch) {
    SPARES.recycle(batch);
}

/// Parses a window's lines on all cores in parts (at least four a thread, of
/// `BATCH_PART_MIN` to `BATCH_PART` lines), each part into a container of its own
/// (`new(lines in the part)`): `parse(container, i)` parses line `i` of the window into it
/// or gives that line's error. The parts' containers in order, and every bad line's place
/// in the window with its error, ascending. (The batch parsers of ccm's and clcb's
/// events.)
pub fn parse_in_parts<B: Send, E: Send>(
    lines: &RawLines,
    new: impl Fn(usize) -> B + Sync,
    parse: impl Fn(&mut B, usize) -> Result<(), E> + Sync,
) -> (Vec<B>, Vec<(usize, E)>) {
    let part =
        (lines.len() / (4 * rayon::current_num_threads()).max(1)).clamp(BATCH_PART_MIN, BATCH_PART);
    let starts: Vec<usize> = (0..lines.len()).step_by(part).collect();
    let parts: Vec<(B, Vec<(usize, E)>)> = starts
        .into_par_iter()
        .map(|from| {
            let to = (from + part).min(lines.len());
            let mut container = new(to - from);
            let mut bad = Vec::new();
            for i in from..to {
                if let Err(e) = parse(&mut container, i) {
                    bad.push((i, e));
                }
            }
            (container, bad)
        })
        .collect();
    let (containers, bad): (Vec<B>, Vec<_>) = parts.into_iter().unzip();
    (containers, bad.into_iter().flatten().collect())
}

/// Parses one events line's text (see [`line_text`]) into one more event of `batch`; on
/// an error (worded as [`event_from_line`] words it) the batch is left as it was.
pub fn event_into_batch(line: &str, batch: &mut EventBatch) -> Result<(), (Option<usize>, String)> {
    if let Some(r) = crate::flat_json::event_into_batch(line, batch) {
        return r.map_err(|e| (None, model_err(e)));
    }
    let mut error = None;
    let mut de = serde_json::Deserializer::from_str(line);
    let parsed = EventSeed {
        batch: &mut *batch,
        error: &mut error,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end());
    if let Err(e) = parsed {
        batch.abandon_event();
        let (column, cause) = json_line_error(&e);
        return Err((Some(column), format!("invalid JSON object: {cause}")));
    }
    if let Some(what) = error {
        batch.abandon_event();
        return Err((None, what));
    }
    batch.end_event().map_err(|e| (None, model_err(e)))
}

/// An events line's object, its attributes pushed into a batch as they are read; the
/// first value that is not a number or a string is worded into `error` (and the rest
/// of the line still read, so that a JSON error after it wins, as in [`EventAttrs`]).
struct EventSeed<'b> {
    batch: &'b mut EventBatch,
    error: &'b mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for EventSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EventSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(name) = map.next_key_seed(NameSeed(&mut *self.batch))? {
            let what = map.next_value_seed(ValueSeed {
                batch: &mut *self.batch,
                name,
            })?;
            if let Some(what) = what {
                let name = self.batch.names().str_of(name);
                self.error
                    .get_or_insert_with(|| format!("attribute `{name}`: {what}"));
            }
        }
        Ok(())
    }
}

/// An attribute's name, interned in the batch as it is read.
struct NameSeed<'b>(&'b mut EventBatch);

impl<'de> DeserializeSeed<'de> for NameSeed<'_> {
    type Value = u32;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for NameSeed<'_> {
    type Value = u32;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an attribute name")
    }
    fn visit_str<E>(self, v: &str) -> Result<u32, E> {
        Ok(self.0.intern_name(v))
    }
}

/// An attribute's value, pushed into the batch when it is a number or a string; else
/// what is wrong with it (worded as [`to_value`] words it).
struct ValueSeed<'b> {
    batch: &'b mut EventBatch,
    name: u32,
}

impl ValueSeed<'_> {
    fn push(self, v: ValueRef<'_>) -> Option<String> {
        self.batch.push(self.name, v).err().map(model_err)
    }
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_i64<E>(self, v: i64) -> Result<Option<String>, E> {
        Ok(self.push(ValueRef::Int(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Option<String>, E> {
        Ok(match i64::try_from(v) {
            Ok(i) => self.push(ValueRef::Int(i)),
            Err(_) => Some(format!(
                "integer {v} does not fit in a signed 64-bit integer"
            )),
        })
    }
    fn visit_f64<E>(self, v: f64) -> Result<Option<String>, E> {
        Ok(self.push(ValueRef::Float(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Option<String>, E> {
        Ok(self.push(ValueRef::Str(v)))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Option<String>, E> {
        Ok(Some(not_scalar("a boolean")))
    }
    fn visit_unit<E>(self) -> Result<Option<String>, E> {
        Ok(Some(not_scalar("null")))
    }
    fn visit_none<E>(self) -> Result<Option<String>, E> {
        Ok(Some(not_scalar("null")))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<String>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Some(not_scalar("an array")))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Some(not_scalar("an object")))
    }
}

/// What [`to_value`] says of a JSON value of `kind` that is not a number or a string.
fn not_scalar(kind: &str) -> String {
    format!("expected a number or a string, found {kind}")
}

/// The events line through `serde_json::Value` (the reference of a test).
#[cfg(test)]
fn event_from(pairs: Vec<(String, serde_json::Value)>) -> Result<Event, String> {
    let mut attrs = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        let value = to_value(&v).map_err(|e| format!("attribute `{k}`: {e}"))?;
        attrs.push(Attribute { name: k, value });
    }
    Event::new(attrs).map_err(model_err)
}

/// Parses a subscriptions JSON Lines stream; `file` names it in errors.
///
/// ```
/// use ccm::io::parse_subscriptions;
/// use ccm::{InterfaceId, Op};
/// use std::path::Path;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let text = r#"{"interface": 3, "filter": [["temp", ">", 30], ["area", "=", "area1"]]}
/// {"interface": 4, "filter": [["name", "prefix", "ab"]]}"#;
/// let subs = parse_subscriptions(Path::new("subs.jsonl"), text.as_bytes())?;
/// assert_eq!(subs.len(), 2);
/// assert_eq!(subs[0].interface, InterfaceId(3));
/// assert_eq!(subs[1].filter.constraints[0].op, Op::Prefix);
///
/// // A malformed line is an error naming the file and the line.
/// let bad = "{\"interface\": 1, \"filter\": [[\"x\", \"<\", \"str\"]]}\n";
/// let err = parse_subscriptions(Path::new("subs.jsonl"), bad.as_bytes()).unwrap_err();
/// assert_eq!(err.line(), Some(1));
/// assert!(err.to_string().starts_with("subs.jsonl:1"));
/// # Ok(()) }
/// ```
pub fn parse_subscriptions(
    file: &Path,
    reader: impl BufRead + Send,
) -> Result<Vec<Subscription>, IoError> {
    load_lines(file, reader, parse_subscription)
}

/// Parses an events JSON Lines stream; `file` names it in errors.
///
/// ```
/// use ccm::io::parse_events;
/// use ccm::Value;
/// use std::path::Path;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let text = "{\"temp\": 25, \"area\": \"area1\"}\n{\"temp\": 31.5}\n";
/// let events = parse_events(Path::new("events.jsonl"), text.as_bytes())?;
/// assert_eq!(events[0].get("temp"), Some(&Value::Int(25)));
/// assert_eq!(events[1].get("temp"), Some(&Value::Float(31.5)));
/// # Ok(()) }
/// ```
pub fn parse_events(file: &Path, reader: impl BufRead + Send) -> Result<Vec<Event>, IoError> {
    load_lines(file, reader, parse_event)
}

/// Loads a subscriptions file (one filter per line); `-` is standard input.
pub fn load_subscriptions(path: &Path) -> Result<Vec<Subscription>, IoError> {
    parse_subscriptions(&display_path(path), open_input(path)?)
}

/// Loads an events file (one event per line); `-` is standard input.
pub fn load_events(path: &Path) -> Result<Vec<Event>, IoError> {
    parse_events(&display_path(path), open_input(path)?)
}

fn value_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Int(i) => (*i).into(),
        // Non-finite floats have no JSON spelling (the model never holds NaN); an
        // infinity is written as a string rather than silently changed.
        Value::Float(x) => serde_json::Number::from_f64(*x)
            .map(Into::into)
            .unwrap_or_else(|| x.to_string().into()),
        Value::Str(s) => s.clone().into(),
    }
}

/// Writes subscriptions in the loader's format (one line each).
pub fn write_subscriptions(
    mut w: impl std::io::Write,
    subs: &[Subscription],
) -> std::io::Result<()> {
    for s in subs {
        let filter: Vec<serde_json::Value> = s
            .filter
            .constraints
            .iter()
            .map(|c| serde_json::json!([c.name, c.op.symbol(), value_json(&c.value)]))
            .collect();
        writeln!(
            w,
            "{}",
            serde_json::json!({"interface": s.interface.0, "filter": filter})
        )?;
    }
    Ok(())
}

/// Writes events in the loader's format (one line each, attributes in order).
pub fn write_events(mut w: impl std::io::Write, events: &[Event]) -> std::io::Result<()> {
    for e in events {
        // Written by hand to keep the attributes' order (serde_json's map sorts keys).
        let fields: Vec<String> = e
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
        writeln!(w, "{{{}}}", fields.join(","))?;
    }
    Ok(())
}

/// Pieces of the pseudo-random lines the line readers' tests (this crate's and `clcb`'s)
/// feed both parse paths.
#[doc(hidden)]
pub mod test_lines {
    /// A xorshift64 generator seeded with `x`: each call `next(m)` draws from `0..m`.
    pub fn xorshift(mut x: u64) -> impl FnMut(usize) -> usize {
        move |m: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m as u64) as usize
        }
    }

    /// Damages `line` at a place `next` draws: one time in eight each, the character
    /// there deleted, one of `inserts` inserted, or the line cut there.
    pub fn damage(line: &mut String, next: &mut impl FnMut(usize) -> usize, inserts: &[char]) {
        let at = next(line.len() + 1);
        match next(8) {
            0 if line.is_char_boundary(at) => {
                if let Some(c) = line[at..].chars().next() {
                    line.replace_range(at..at + c.len_utf8(), "");
                }
            }
            1 if line.is_char_boundary(at) => line.insert(at, inserts[next(inserts.len())]),
            2 if line.is_char_boundary(at) => line.truncate(at),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subs(text: &str) -> Result<Vec<Subscription>, IoError> {
        parse_subscriptions(Path::new("subs.jsonl"), text.as_bytes())
    }
    fn events(text: &str) -> Result<Vec<Event>, IoError> {
        parse_events(Path::new("events.jsonl"), text.as_bytes())
    }

    #[test]
    fn loads_the_documented_example() {
        let s = subs(r#"{"interface": 3, "filter": [["temp", ">", 30], ["area", "=", "area1"]]}"#)
            .unwrap();
        assert_eq!(s[0].interface, InterfaceId(3));
        assert_eq!(
            s[0].filter.constraints[0],
            Constraint::new("temp", Op::Gt, Value::Int(30)).unwrap()
        );
        let e = events("{\"temp\": 25, \"area\": \"area1\"}\n{\"x\": 2.5}\n").unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[1].get("x"), Some(&Value::Float(2.5)));
    }

    /// The malformed inputs a user can write: each line must fail with its line number
    /// and a message containing the expected words.
    #[test]
    fn malformed_subscription_lines_name_line_and_problem() {
        let ok = r#"{"interface": 1, "filter": [["a", "=", 1]]}"#;
        let table: &[(&str, &str)] = &[
            (
                r#"{"interface": 1, "filter": [["a", "=", 1]"#,
                "invalid JSON",
            ),
            (
                r#"{"interface": -1, "filter": [["a", "=", 1]]}"#,
                "interface",
            ),
            (
                r#"{"interface": 4294967296, "filter": [["a", "=", 1]]}"#,
                "interface",
            ),
            (
                r#"{"interface": "x", "filter": [["a", "=", 1]]}"#,
                "interface",
            ),
            (r#"{"filter": [["a", "=", 1]]}"#, "missing key `interface`"),
            (r#"{"interface": 1}"#, "missing key `filter`"),
            (
                r#"{"interface": 1, "filter": []}"#,
                "at least one constraint",
            ),
            (
                r#"{"interface": 1, "filter": [["a", "~", 1]]}"#,
                "unknown operator `~`",
            ),
            (
                r#"{"interface": 1, "filter": [["a", "<", "x"]]}"#,
                "does not apply to a string",
            ),
            (
                r#"{"interface": 1, "filter": [["a", "prefix", 3]]}"#,
                "does not apply to a integer",
            ),
            (
                r#"{"interface": 1, "filter": [["a", "=", true]]}"#,
                "boolean",
            ),
            (
                r#"{"interface": 1, "filter": [["a", "="]]}"#,
                "[name, operator, value]",
            ),
            (
                r#"{"interface": 1, "filter": [[1, "=", 1]]}"#,
                "name must be a string",
            ),
            (
                r#"{"interface": 1, "filter": [["a", "=", 1]], "x": 0}"#,
                "unknown key `x`",
            ),
            (
                r#"{"interface": 1, "interface": 2, "filter": [["a", "=", 1]]}"#,
                "twice",
            ),
            (
                r#"{"interface": 1, "filter": [["a", "=", 18446744073709551615]]}"#,
                "does not fit",
            ),
            (r#"[1, 2]"#, "invalid JSON"),
        ];
        for (bad, want) in table {
            let text = format!("{ok}\n{bad}\n{ok}\n");
            let err = subs(&text).expect_err(bad).to_string();
            assert!(err.starts_with("subs.jsonl:2"), "{bad}: {err}");
            assert!(err.contains(want), "{bad}: {err} (wanted {want})");
        }
    }

    #[test]
    fn blank_lines_are_skipped_and_still_counted() {
        let text = "\n{\"a\": 1}\n   \n\r\n{\"a\": 2}\n\n";
        let evs = events(text).unwrap();
        assert_eq!(evs.len(), 2);
        let mut r = LineReader::new("e", text.as_bytes());
        let mut w = RawLines::default();
        r.read_window(10, &mut w).unwrap();
        assert_eq!((w.len(), w.line_no(0), w.line_no(1)), (2, 2, 5));
        let err = events("\n\n{\"a\": 1\n").unwrap_err().to_string();
        assert!(err.starts_with("events.jsonl:3:"), "{err}");
    }

    #[test]
    fn every_bad_line_of_a_file_is_reported() {
        let ok = r#"{"interface": 1, "filter": [["a", "=", 1]]}"#;
        let bad = r#"{"interface": 1, "filter": [["a", "~", 1]]}"#;
        let text = format!("{ok}\n{bad}\n{ok}\n{bad}\n");
        let err = subs(&text).unwrap_err().to_string();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 3, "{err}");
        assert!(lines[0].starts_with("subs.jsonl:2"), "{err}");
        assert!(lines[1].starts_with("subs.jsonl:4"), "{err}");
        assert_eq!(lines[2], "2 bad line(s)");
        let many: String = (0..50).map(|_| format!("{bad}\n")).collect();
        let err = subs(&many).unwrap_err().to_string();
        assert!(err.ends_with("50 bad line(s), the first 20 shown"), "{err}");
    }

    #[test]
    fn malformed_event_lines_name_line_and_problem() {
        let table: &[(&str, &str)] = &[
            (r#"{"a": 1"#, "invalid JSON"),
            (r#"{"a": 1, "a": 2}"#, "appears twice"),
            (r#"{"a": null}"#, "null"),
            (r#"{"a": [1]}"#, "array"),
            (r#"{"a": 1e999}"#, "invalid JSON"),
            (r#""a""#, "invalid JSON"),
        ];
        for (bad, want) in table {
            let err = events(&format!("{{}}\n{bad}\n"))
                .expect_err(bad)
                .to_string();
            assert!(err.starts_with("events.jsonl:2"), "{bad}: {err}");
            assert!(err.contains(want), "{bad}: {err} (wanted {want})");
        }
    }

    #[test]
    fn json_errors_give_a_column_within_the_line() {
        for bad in ["[1, 2]", "[", "{\"a\": }", "x"] {
            let err = events(&format!("{bad}\n")).unwrap_err();
            let IoError::Bad {
                line,
                column: Some(c),
                what,
                ..
            } = &err
            else {
                panic!("{err}")
            };
            assert_eq!(*line, 1);
            assert!(*c >= 1 && *c <= bad.len() + 1, "{bad}: column {c}");
            assert!(!what.contains("at line"), "{what}");
        }
    }

    #[test]
    fn floats_parse_correctly_rounded() {
        // 17 significant digits with a large exponent: the case serde_json's fast float
        // parser can get 1 ulp wrong without `float_roundtrip`.
        for x in [
            2.2250738585072014e-308f64,
            1.7976931348623157e308,
            9.109383701528e-31,
            0.1 + 0.2,
        ] {
            let e = events(&format!("{{\"x\": {x:?}}}\n")).unwrap();
            assert_eq!(e[0].get("x"), Some(&Value::Float(x)));
        }
    }

    #[test]
    fn empty_files_load_as_empty_lists_and_missing_files_are_named() {
        assert!(subs("").unwrap().is_empty());
        assert!(events("").unwrap().is_empty());
        let err = load_events(Path::new("/nonexistent/e.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/e.jsonl"), "{err}");
    }

    #[test]
    fn a_byte_order_mark_before_the_first_line_is_accepted_and_elsewhere_refused() {
        let bom = "\u{FEFF}";
        let s = subs(&format!(
            "{bom}{{\"interface\": 1, \"filter\": [[\"a\", \"=\", 1]]}}\r\n"
        ))
        .unwrap();
        assert_eq!(s[0].interface, InterfaceId(1));
        let e = events(&format!("{bom}{{\"a\": 1}}\n{{\"b\": 2}}\n")).unwrap();
        assert_eq!(e[0].get("a"), Some(&Value::Int(1)));
        let err = events(&format!("{{\"a\": 1}}\n{bom}{{\"b\": 2}}\n")).unwrap_err();
        assert!(err.to_string().starts_with("events.jsonl:2:1:"), "{err}");
    }

    #[test]
    fn invalid_utf8_is_reported_at_its_line_and_column() {
        let err = parse_events(Path::new("e"), &b"{\"a\": 1}\n{\"\xC3\xA9\xFF\": 1}\n"[..])
            .unwrap_err()
            .to_string();
        assert_eq!(err, "e:2:4: not valid UTF-8");
    }

    #[test]
    fn a_window_parses_each_line_on_its_own_so_one_bad_line_spares_the_others() {
        let text = "{\"a\": 1}\n{\"a\": \n{\"b\": \"x\"}\n";
        let mut r = LineReader::new("e", text.as_bytes());
        let mut w = RawLines::default();
        r.read_window(2, &mut w).unwrap();
        assert_eq!((w.len(), w.line_no(0)), (2, 1));
        let got = parse_events_window(r.file(), &w);
        assert!(got[0].is_ok());
        let err = got[1].as_ref().unwrap_err();
        assert_eq!(err.line(), Some(2));
        assert!(err.to_string().starts_with("e:2:"), "{err}");
        r.read_window(2, &mut w).unwrap();
        assert_eq!((w.len(), w.line_no(0)), (1, 3));
        assert_eq!(w.raw(0), b"{\"b\": \"x\"}");
        r.read_window(2, &mut w).unwrap();
        assert!(w.is_empty());
    }

    #[test]
    fn windows_split_lines_exactly_whatever_the_reader_buffer_holds() {
        // Lines of every length across buffers of 1 to 9 bytes, windows of 1 to 4
        // lines, with and without a final line end: the same lines as `str::lines`, less
        // the blank ones, numbered as in the text.
        let lines: Vec<String> = (0..23).map(|i| "x".repeat(i % 7)).collect();
        for final_end in [true, false] {
            let mut text = lines.join("\n");
            if final_end {
                text.push('\n');
            }
            for cap in 1..10 {
                for window in 1..5 {
                    let buf = std::io::BufReader::with_capacity(cap, text.as_bytes());
                    let mut r = LineReader::new("e", buf);
                    let mut w = RawLines::default();
                    let mut got: Vec<(usize, Vec<u8>)> = Vec::new();
                    loop {
                        r.read_window(window, &mut w).unwrap();
                        if w.is_empty() {
                            break;
                        }
                        assert!(w.len() <= window);
                        got.extend((0..w.len()).map(|i| (w.line_no(i), w.raw(i).to_vec())));
                    }
                    let want: Vec<(usize, Vec<u8>)> = text
                        .lines()
                        .enumerate()
                        .filter(|(_, l)| !l.is_empty())
                        .map(|(i, l)| (i + 1, l.as_bytes().to_vec()))
                        .collect();
                    assert_eq!(got, want, "buffer {cap}, window {window}");
                }
            }
        }
    }

    #[test]
    fn windows_read_by_blocks_split_lines_as_the_buffered_reader_does() {
        // Blocks cut into parts of 1 to 6 bytes on all cores, windows of 1 to 5 lines,
        // blank lines (spaces, `\r`) and lines of every length, with and without a
        // final line end: the same lines and numbers as read a buffer at a time.
        let lines: Vec<String> = (0..41)
            .map(|i| match i % 9 {
                0 => String::new(),
                1 => " \r".into(),
                k => "y".repeat(k * (i % 4 + 1)),
            })
            .collect();
        for final_end in [true, false] {
            let mut text = lines.join("\n");
            if final_end {
                text.push('\n');
            }
            let read = |block: bool, part: usize, window: usize| {
                let buf = std::io::BufReader::with_capacity(5, text.as_bytes());
                let mut r = LineReader::new("e", buf);
                if block {
                    r.block_lines = 1;
                    r.part_bytes = part;
                }
                let mut w = RawLines::default();
                let mut got: Vec<(usize, Vec<u8>)> = Vec::new();
                loop {
                    r.read_window(window, &mut w).unwrap();
                    if w.is_empty() {
                        break;
                    }
                    assert!(w.len() <= window);
                    got.extend((0..w.len()).map(|i| (w.line_no(i), w.raw(i).to_vec())));
                }
                got
            };
            let want = read(false, 0, 3);
            assert_eq!(want.len(), 31);
            for part in 1..7 {
                for window in 1..6 {
                    assert_eq!(
                        read(true, part, window),
                        want,
                        "part {part}, window {window}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_read_error_names_the_file_and_leaves_its_cause_to_the_source() {
        let err = load_events(Path::new("/nonexistent/e.jsonl")).unwrap_err();
        assert_eq!(err.to_string(), "/nonexistent/e.jsonl: cannot read");
        let cause = std::error::Error::source(&err)
            .expect("the io error")
            .to_string();
        assert!(cause.contains("No such file"), "{cause}");
    }

    #[test]
    fn the_fast_event_parser_gives_the_values_of_the_json_value_path() {
        let line =
            r#"{"i": -3, "u": 9223372036854775807, "f": 2.5, "e": 1e3, "s": "a\u00e9\"", "z": -0}"#;
        let fast = event_from_line(line).unwrap();
        let slow = event_from(parse_object(Path::new("x"), 1, line).unwrap()).unwrap();
        assert_eq!(fast, slow);
    }

    #[test]
    fn a_window_parsed_into_a_batch_gives_the_events_and_errors_of_the_line_parser() {
        // Good lines of every value type (escapes, unicode, repeated strings), and every
        // kind of bad line, over several parts of the parallel parse.
        let kinds = [
            r#"{"i": -3, "u": 9223372036854775807, "f": 2.5, "s": "a\u00e9\"", "z": -0}"#,
            r#"{"i": -3, "u": 922337203685477580, "f": 2.5, "s": "aé", "z": -0, "e": -1.5E-3}"#,
            "\t{ \"a\" :1 ,\"b\":\"\"  ,\"c\":0.1e+2, \"d\": 123456789012345678}  ",
            r#"{"a": 01}"#,
            r#"{"a": 1.}"#,
            r#"{"a": -}"#,
            r#"{"a": 1e999}"#,
            r#"{"a": -9223372036854775808, "b": -9223372036854775809}"#,
            r#"{"a": 1} x"#,
            r#"{"a": 1,}"#,
            r#"{"a\u0041": "x\ty"}"#,
            r#"{"a": "b", "a": 1.5}"#,
            r#"{"s": "x", "t": "x", "n": 1e3}"#,
            r#"{}"#,
            r#"{"a": 1, "a": 2}"#,
            r#"{"a": null, "b": 1"#,
            r#"{"a": [1], "b": {"c": 1}}"#,
            r#"{"a": 18446744073709551615}"#,
            r#"{"a": true, "a": 1}"#,
            "",
            r#"[1]"#,
        ];
        let text: String = (0..3 * BATCH_PART + 17)
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
    }

    /// The text path (each task cutting its own part into lines) gives what the line
    /// parser gives, line by line: the same events, and the same errors at the same
    /// places with the same line numbers and columns, over many parts and windows, with
    /// blank lines, `\r\n` ends, a byte-order mark on line 1 and bytes that are not
    /// UTF-8 among the lines.
    #[test]
    fn a_window_parsed_from_its_text_gives_the_events_and_errors_of_the_line_parser() {
        let kinds: [&[u8]; 9] = [
            br#"{"i": -3, "u": 9223372036854775807, "f": 2.5, "s": "a\u00e9\"", "z": -0}"#,
            b"\t{ \"a\" :1 ,\"b\":\"\"  ,\"c\":0.1e+2}  \r",
            b"",
            b"  \r",
            br#"{"a": 1, "a": 2}"#,
            b"{\"a\": \"\xff\xfe\"}",
            br#"{"a": null, "b": 1"#,
            br#"{"s": "x", "t": "x", "n": 1e3}"#,
            b"\xc2\xa0",
        ];
        let mut text = b"\xEF\xBB\xBF{\"bom\": 1}\n".to_vec();
        for i in 0..20_000 {
            text.extend_from_slice(kinds[i % kinds.len()]);
            text.push(b'\n');
        }
        text.extend_from_slice(br#"{"last": "no line end"}"#);
        let (good, bad) = by_lines(&text);
        assert!(bad.iter().any(|b| b.1.contains("UTF-8")) && bad.len() > 1000);
        for window in [1000, 5000, 1 << 20] {
            let (events, errors, line) = by_windows(&text, window);
            assert_eq!(events, good, "window {window}");
            assert_eq!(errors, bad, "window {window}");
            assert_eq!(line, text.split(|&c| c == b'\n').count() + 1);
        }
    }

    /// The events and errors (with the indices of the lines that are not blank) of
    /// `text` by the line parser, line by line.
    fn by_lines(text: &[u8]) -> (Vec<Event>, Vec<(usize, String)>) {
        let mut r = LineReader::new("e", text);
        let mut w = RawLines::default();
        r.read_window(usize::MAX, &mut w).unwrap();
        let want = parse_events_window(r.file(), &w);
        let good = want
            .iter()
            .filter_map(|x| x.as_ref().ok().cloned())
            .collect();
        let bad = want
            .iter()
            .enumerate()
            .filter_map(|(i, x)| x.as_ref().err().map(|e| (i, e.to_string())))
            .collect();
        (good, bad)
    }

    /// The same from [`parse_events_text`] over windows of `window` bytes of `text`, and
    /// the line after the last.
    fn by_windows(text: &[u8], window: usize) -> (Vec<Event>, Vec<(usize, String)>, usize) {
        let mut t = crate::text::TextReader::from_reader("e", std::io::Cursor::new(text.to_vec()));
        let mut tw = crate::text::TextWindow::default();
        let (mut events, mut errors, mut line, mut seen) = (Vec::new(), Vec::new(), 1, 0);
        loop {
            t.read_window(window, &mut tw).unwrap();
            if tw.is_empty() {
                break;
            }
            let (got, lines) = parse_events_text(Path::new("e"), tw.bytes(), line);
            events.extend(got.batch.to_events());
            errors.extend(got.bad.iter().map(|(i, e)| (seen + i, e.to_string())));
            seen += got.batch.len() + got.bad.len();
            line += lines;
        }
        (events, errors, line)
    }

    /// The events scanner, reading lines straight from a window's bytes (no line cut
    /// first, no UTF-8 pass), gives what the line parser gives line by line: the same
    /// events and the same errors with the same numbers, over random lines of every form
    /// (names and strings of every length up to 40 bytes, so that the quote falls in
    /// either word the scanner reads or past them, with characters of several bytes,
    /// bytes that are not UTF-8, escapes, control characters; numbers of every kind; a
    /// name twice; whitespace of every kind, `\r` included), damaged one line in eight
    /// each way, in windows of several sizes (so that lines end near a window's end).
    #[test]
    fn the_events_scanner_reads_random_lines_as_the_line_parser_does() {
        let mut next = test_lines::xorshift(0x2545_f491_4f6c_dd1d);
        let pieces: [&[u8]; 12] = [
            b"a",
            b"e\xcc\x81",
            b"\xe2\x82\xac",
            b"\xff",
            b"\xc3",
            b"\\n",
            b"\\u00e9",
            b"\t",
            b"\x01",
            b"\x7f",
            b"z",
            b"0",
        ];
        let scalars = [
            "0",
            "-1",
            "17",
            "-0",
            "01",
            "1.5",
            "-2.5E-3",
            "1e400",
            "123456789012345678",
            "1234567890123456789",
            "1.",
            "-",
            "null",
            "[1]",
            "{}",
            "true",
        ];
        let string = |next: &mut dyn FnMut(usize) -> usize| -> Vec<u8> {
            let len = next(41);
            let odd = next(4) == 0;
            let mut s = b"\"".to_vec();
            while s.len() < len + 1 {
                if odd {
                    s.extend_from_slice(pieces[next(pieces.len())]);
                } else {
                    s.push(b"abcxyz_N9"[next(9)]);
                }
            }
            s.push(b'"');
            s
        };
        let spaces: [&[u8]; 5] = [b"", b"", b" ", b" \t ", b"\r"];
        let mut text = Vec::new();
        for _ in 0..30_000 {
            let mut line = Vec::new();
            line.extend_from_slice(spaces[next(5)]);
            if next(16) == 0 {
                line.extend_from_slice(b"  \r");
            } else {
                line.push(b'{');
                let n = next(6);
                for i in 0..n {
                    line.extend_from_slice(spaces[next(5)]);
                    if next(8) == 0 {
                        line.extend_from_slice(b"\"a\"");
                    } else if next(2) == 0 {
                        line.extend_from_slice(format!("\"n{}\"", next(20)).as_bytes());
                    } else {
                        line.extend(string(&mut next));
                    }
                    line.extend_from_slice(spaces[next(5)]);
                    line.push(b':');
                    line.extend_from_slice(spaces[next(5)]);
                    if next(2) == 0 {
                        line.extend(string(&mut next));
                    } else {
                        line.extend_from_slice(scalars[next(scalars.len())].as_bytes());
                    }
                    line.extend_from_slice(spaces[next(5)]);
                    if i + 1 < n {
                        line.push(b',');
                    }
                }
                line.push(b'}');
                line.extend_from_slice(spaces[next(5)]);
            }
            // Damage: a byte deleted, inserted, or the line cut (bytes, not characters).
            let at = next(line.len() + 1);
            match next(8) {
                0 if at < line.len() => {
                    line.remove(at);
                }
                1 => {
                    let inserts = b"{}[],:\" 0-.e\n";
                    line.insert(at, inserts[next(inserts.len())]);
                }
                2 => line.truncate(at),
                _ => {}
            }
            text.extend_from_slice(&line);
            text.push(b'\n');
        }
        text.extend_from_slice(br#"{"last": "no line end"}"#);
        let (good, bad) = by_lines(&text);
        assert!(
            good.len() > 5000 && bad.len() > 5000,
            "{} {}",
            good.len(),
            bad.len()
        );
        for window in [700, 4096, 1 << 20] {
            let (events, errors, _) = by_windows(&text, window);
            assert_eq!(events, good, "window {window}");
            assert_eq!(errors, bad, "window {window}");
        }
    }

    #[test]
    fn the_fast_subscription_parser_gives_what_the_json_value_path_gives() {
        for line in [
            r#"{"interface": 3, "filter": [["temp", ">", 30], ["area", "=", "area1"]]}"#,
            r#"{"filter": [["t", ">=", -2.5], ["s", "substr", "ab"], ["x", "!=", 1e300]], "interface": 4294967295}"#,
            "\t{ \"interface\" : 0 , \"filter\" : [ [ \"é\", \"prefix\", \"\" ] ] } ",
        ] {
            let fast = fast_subscription(line).expect(line);
            let slow = subscription_from(parse_object(Path::new("x"), 1, line).unwrap()).unwrap();
            assert_eq!(fast, slow, "{line}");
        }
        // Anything unusual leaves the fast path (and the slow path parses it or words the
        // error): escapes, a key twice, a refused constraint...
        for line in [
            r#"{"interface": 1, "filter": [["s", "substr", "a\"b"]]}"#,
            r#"{"interface": 1, "filter": [["\u00e9", "prefix", ""]]}"#,
            r#"{"interface": 1, "interface": 2, "filter": [["a", "=", 1]]}"#,
            r#"{"interface": 1, "filter": [["a", "=", 1, 2]]}"#,
            r#"{"interface": 1, "filter": [["a", "=", null]]}"#,
            r#"{"interface": 1, "filter": [["a", "<", "x"]]}"#,
            r#"{"interface": 1, "filter": []}"#,
            r#"{"interface": 1.0, "filter": [["a", "=", 1]]}"#,
            r#"{"interface": 1, "filter": [["a", "=", 1]], "x": 0}"#,
        ] {
            assert!(fast_subscription(line).is_none(), "{line}");
        }
    }

    /// `n` pseudo-random subscriptions lines: half well-formed (each key once, valid
    /// constraints), half of random pieces of every form either path meets (numbers at
    /// the limits, escapes, unknown operators, keys twice or unknown); then, one line in
    /// eight each, a character deleted, one inserted, or the line cut.
    fn random_lines(n: usize) -> Vec<String> {
        let mut next = test_lines::xorshift(0x9e37_79b9_7f4a_7c15);
        let scalars = [
            "0",
            "-1",
            "7",
            "4294967295",
            "4294967296",
            "1.0",
            "-0",
            "01",
            "1e3",
            "-2.5E-3",
            "123456789012345678",
            "1234567890123456789",
            "18446744073709551615",
            "1e400",
            "\"a\"",
            "\"a\\\"b\"",
            "\"\\u00e9\"",
            "\"\"",
            "\"é\"",
            "null",
            "true",
            "[1]",
        ];
        let ops = [
            "=", "!=", "<", ">", "<=", ">=", "prefix", "suffix", "substr", "~", "\\u003d",
        ];
        let fine = [
            ("=", "7"),
            ("<", "-2.5E-3"),
            (">=", "1e3"),
            ("prefix", "\"a\""),
            ("!=", "\"\""),
            ("substr", "\"é\""),
        ];
        (0..n)
            .map(|_| {
                let good = next(2) == 0;
                let keys: Vec<&str> = match (good, next(2)) {
                    (true, 0) => vec!["interface", "filter"],
                    (true, _) => vec!["filter", "interface"],
                    _ => (0..1 + next(3))
                        .map(|_| ["interface", "filter", "x"][next(3)])
                        .collect(),
                };
                let fields: Vec<String> = keys
                    .iter()
                    .map(|k| {
                        let v = match *k {
                            "filter" => {
                                let cs: Vec<String> = (0..good as usize + next(3))
                                    .map(|_| {
                                        let name = ["a", "n15", "é", "\\u0061", ""]
                                            [next(if good { 3 } else { 5 })];
                                        let (op, v) = if good {
                                            fine[next(fine.len())]
                                        } else {
                                            (ops[next(ops.len())], scalars[next(scalars.len())])
                                        };
                                        format!("[\"{name}\", \"{op}\", {v}]")
                                    })
                                    .collect();
                                format!("[{}]", cs.join([", ", ",", " , "][next(3)]))
                            }
                            _ if good => ["0", "7", "4294967295"][next(3)].to_string(),
                            _ => scalars[next(scalars.len())].to_string(),
                        };
                        format!("\"{k}\": {v}")
                    })
                    .collect();
                let mut line = format!("{{{}}}", fields.join([",", " , ", ",\t"][next(3)]));
                let inserts = ['[', ']', '{', '}', ',', ':', '"', ' ', '0', '-', '.', 'e'];
                test_lines::damage(&mut line, &mut next, &inserts);
                line
            })
            .collect()
    }

    /// The byte-level fast path gives, for every line, exactly what the serde_json path
    /// alone gives: the same subscription, or the same error (file, line, column, words).
    #[test]
    fn subscriptions_lines_parse_as_the_serde_path_parses_them_random_and_malformed() {
        let lines = random_lines(20_000);
        let (mut fast, mut bad) = (0, 0);
        for line in &lines {
            let got =
                parse_subscription(Path::new("s"), 3, line.as_bytes()).map_err(|e| e.to_string());
            let want = line_text(Path::new("s"), 3, line.as_bytes())
                .and_then(|l| parse_object(Path::new("s"), 3, l))
                .and_then(|p| {
                    subscription_from(p).map_err(|w| IoError::bad(Path::new("s"), 3, None, w))
                })
                .map_err(|e| e.to_string());
            assert_eq!(got, want, "{line}");
            fast += fast_subscription(line).is_some() as usize;
            bad += want.is_err() as usize;
        }
        // Both kinds are exercised.
        assert!(fast > 500 && bad > 5000, "{fast} fast, {bad} bad");
    }

    #[test]
    fn writers_round_trip_through_loaders() {
        let s = subs(r#"{"interface": 7, "filter": [["t", ">=", -2.5], ["s", "substr", "a\"b"]]}"#)
            .unwrap();
        let mut buf = Vec::new();
        write_subscriptions(&mut buf, &s).unwrap();
        assert_eq!(parse_subscriptions(Path::new("x"), &buf[..]).unwrap(), s);
        let e = events(r#"{"b": "x", "a": 9007199254740993}"#).unwrap();
        let mut buf = Vec::new();
        write_events(&mut buf, &e).unwrap();
        assert_eq!(parse_events(Path::new("x"), &buf[..]).unwrap(), e);
    }
}
