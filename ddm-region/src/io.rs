//! Users' regions from CSV files, with errors that name the file, line and column.
//!
//! Format: a header `kind,id,lo0,hi0,lo1,hi1,...` (any number of dimensions from 1),
//! then one region per line: `kind` is `pub` or `sub`, `id` an unsigned integer unique
//! within its kind, bounds unsigned 32-bit integers with `lo <= hi` (half-open ranges).
//! Blank lines and lines starting with `#` are skipped; fields may be padded with spaces.

use crate::model::{Kind, Range, RegionSet};
use std::path::{Path, PathBuf};

/// Bad lines reported by one error at most; the rest are counted.
pub const MAX_REPORTED: usize = 20;

/// One bad line of a regions file: where, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// A problem with a regions file.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The cause is the error's source (printed once by a chain of causes).
    #[error("{path}: cannot read")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// Several bad lines, all found in one pass: the first [`MAX_REPORTED`] in file
    /// order, one per line of the message, and how many there were in all.
    #[error("{}", lines_message(path, lines, *total))]
    Lines {
        path: PathBuf,
        lines: Vec<BadLine>,
        total: usize,
    },
}

fn lines_message(path: &Path, lines: &[BadLine], total: usize) -> String {
    let mut m = String::new();
    for b in lines {
        m.push_str(&format!(
            "{}:{}:{}: {}\n",
            path.display(),
            b.line,
            b.column,
            b.message
        ));
    }
    m.push_str(&format!("{}: {total} bad line(s)", path.display()));
    if total > lines.len() {
        m.push_str(&format!(", the first {} shown", lines.len()));
    }
    m
}

/// Reads a regions file; `-` is standard input (named `<stdin>` in errors).
///
/// A regular file is mapped into memory rather than read into a buffer: its pages come
/// from the page cache as they are, where a read would copy them into fresh memory that
/// the kernel first zeroes. (`ddm match`, 1M regions, 30 MB, 2-core machine: that copy
/// and its zeroing were a third of the load's time.)
pub fn read_regions(path: &Path) -> Result<RegionSet, IoError> {
    let stdin = path.as_os_str() == "-";
    let name = if stdin {
        PathBuf::from("<stdin>")
    } else {
        path.to_path_buf()
    };
    let read = |source| IoError::Read {
        path: name.clone(),
        source,
    };
    let file = if stdin {
        None
    } else {
        Some(std::fs::File::open(path).map_err(read)?)
    };
    if let Some(file) = &file {
        if file.metadata().map_err(read)?.is_file() {
            // SAFETY: the map is read-only and lives until the parse returns; the bytes
            // are only read. Another process that changed the file meanwhile would change
            // what is parsed (as a read racing its writer would), and one that truncated
            // it would make the read fault, as for any program that maps its input
            // (ripgrep's choice too).
            let map = unsafe { memmap2::MmapOptions::new().populate().map(file) };
            return parse_region_bytes(&map.map_err(read)?, &name);
        }
    }
    // Standard input, a pipe or a device: read as a stream.
    let mut t = Vec::new();
    match &file {
        Some(f) => std::io::Read::read_to_end(&mut &*f, &mut t),
        None => std::io::Read::read_to_end(&mut std::io::stdin(), &mut t),
    }
    .map_err(read)?;
    parse_region_bytes(&t, &name)
}

/// Parses the text of a regions file; `path` only names it in errors. A UTF-8
/// byte-order mark before the header is skipped. Every bad line is found in one pass
/// (the error names the first [`MAX_REPORTED`] and counts the rest).
///
/// ```
/// use ddm_region::io::parse_regions;
/// use ddm_region::{Kind, Range};
/// use std::path::Path;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let text = "kind,id,lo0,hi0,lo1,hi1\n\
///             pub,7,0,10,0,10\n\
///             ## a comment\n\
///             sub,3, 5,15, 5,15\n";
/// let set = parse_regions(text, Path::new("regions.csv"))?;
/// assert_eq!(set.dims(), 2);
/// assert_eq!(set.ids(Kind::Subscription), &[3]);
/// assert_eq!(set.region(Kind::Publication, 0), &[Range { lo: 0, hi: 10 }; 2]);
///
/// let bad = "kind,id,lo0,hi0\npub,1,9,2\n"; // lo above hi
/// let err = parse_regions(bad, Path::new("regions.csv")).unwrap_err();
/// assert!(err.to_string().starts_with("regions.csv:2:"), "{err}");
/// # Ok(()) }
/// ```
pub fn parse_regions(text: &str, path: &Path) -> Result<RegionSet, IoError> {
    parse_region_bytes(text.as_bytes(), path)
}

/// Bytes of the body a parallel parser's task takes at least.
const CHUNK: usize = 1 << 20;

/// [`parse_regions`] on the file's bytes: the header on the calling thread, the body cut
/// at line ends into chunks of about a MB that rayon's pool reads twice: once to count
/// each chunk's regions of each kind, so that the columns are allocated once and each
/// chunk's regions have their own slices of them, then to parse into those slices. A
/// row in the plain form the generator writes (`pub,7,0,10`: bare digits, single
/// commas) is read byte by byte straight into its slot (`plain_row`, about 2.5x less
/// CPU than the general rules on 1M 2-D regions); any other row goes through the
/// general rules (`parse_row`), which accept spaces, CRLF and comments and say what is
/// wrong where. The ids are checked for repeats: ids in ascending order cannot repeat,
/// others by sorting a copy.
pub fn parse_region_bytes(bytes: &[u8], path: &Path) -> Result<RegionSet, IoError> {
    use rayon::prelude::*;
    let bytes = bytes.strip_prefix("\u{FEFF}".as_bytes()).unwrap_or(bytes);
    let err = |line: usize, column: usize, message: String| IoError::Parse {
        path: path.to_path_buf(),
        line,
        column,
        message,
    };
    // The header: the first line that is neither blank nor a comment.
    let (mut pos, mut hline) = (0usize, 0usize);
    let header = loop {
        if pos >= bytes.len() {
            return Err(err(
                hline.max(1),
                1,
                "empty file: expected the header `kind,id,lo0,hi0,...`".into(),
            ));
        }
        let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
        hline += 1;
        let line = &bytes[pos..end];
        pos = (end + 1).min(bytes.len());
        if !skipped(line) {
            break std::str::from_utf8(line)
                .map_err(|_| err(hline, 1, "the header is not UTF-8 text".into()))?;
        }
    };
    let names: Vec<(usize, &str)> = fields(header.trim_end_matches('\r'));
    if names.len() < 4 || !names.len().is_multiple_of(2) {
        return Err(err(
            hline,
            1,
            format!(
                "header has {} columns; expected `kind,id,lo0,hi0,...` (2 + 2 per dimension)",
                names.len()
            ),
        ));
    }
    let dims = (names.len() - 2) / 2;
    for (i, &(col, name)) in names.iter().enumerate() {
        let want = match i {
            0 => "kind".to_string(),
            1 => "id".to_string(),
            _ => format!("{}{}", if i % 2 == 0 { "lo" } else { "hi" }, (i - 2) / 2),
        };
        if name != want {
            return Err(err(
                hline,
                col,
                format!("header column {} is `{name}`, expected `{want}`", i + 1),
            ));
        }
    }
    // The body in chunks cut after a line end.
    let body = &bytes[pos..];
    let mut cuts = vec![0usize];
    while let Some(&last) = cuts.last() {
        if last >= body.len() {
            break;
        }
        let want = (last + CHUNK).min(body.len());
        let cut = memchr::memchr(b'\n', &body[want..]).map_or(body.len(), |i| want + i + 1);
        cuts.push(cut);
    }
    let chunk = |i: usize| &body[cuts[i]..cuts[i + 1]];
    let n_chunks = cuts.len() - 1;
    // Pass 1: each chunk's regions of each kind (their kind fields read only).
    let counts: Vec<[usize; 2]> = (0..n_chunks)
        .into_par_iter()
        .map(|i| count_kinds(chunk(i)))
        .collect();
    let total = |k: usize| counts.iter().map(|c| c[k]).sum::<usize>();
    let zero = Range { lo: 0, hi: 0 };
    let mut pubs = (vec![0u64; total(0)], vec![zero; total(0) * dims]);
    let mut subs = (vec![0u64; total(1)], vec![zero; total(1) * dims]);
    // Each chunk's slices of the columns, in file order.
    let mut slices = Vec::with_capacity(n_chunks);
    {
        let (mut pi, mut pr) = (&mut pubs.0[..], &mut pubs.1[..]);
        let (mut si, mut sr) = (&mut subs.0[..], &mut subs.1[..]);
        for c in &counts {
            let (a, rest) = std::mem::take(&mut pi).split_at_mut(c[0]);
            pi = rest;
            let (b, rest) = std::mem::take(&mut pr).split_at_mut(c[0] * dims);
            pr = rest;
            let (x, rest) = std::mem::take(&mut si).split_at_mut(c[1]);
            si = rest;
            let (y, rest) = std::mem::take(&mut sr).split_at_mut(c[1] * dims);
            sr = rest;
            slices.push(Columns {
                ids: [a, x],
                ranges: [b, y],
            });
        }
    }
    // Pass 2: the regions parsed into their slices; the bad lines found.
    let parsed: Vec<Parsed> = slices
        .into_par_iter()
        .enumerate()
        .map(|(i, cols)| parse_chunk(chunk(i), dims, cols))
        .collect();
    // Line numbers: each chunk's first line follows the lines of the chunks before it.
    let mut first = hline + 1;
    let mut bad = Vec::new();
    let mut n_bad = 0;
    for mut p in parsed {
        for b in &mut p.bad {
            b.line += first;
        }
        n_bad += p.bad_count;
        bad.append(&mut p.bad);
        first += p.lines;
    }
    // Repeated ids, found by sorting a copy (their lines looked up only when some are).
    // With bad lines already found (their slots left empty), the file is scanned for
    // repeats directly, to report them too.
    let had_bad = n_bad > 0;
    for (kind, ids) in [(Kind::Publication, &pubs.0), (Kind::Subscription, &subs.0)] {
        if !had_bad {
            // Ids in ascending order (as generators write them) cannot repeat.
            const RUN: usize = 1 << 14;
            let ascending = ids.par_chunks(RUN).enumerate().all(|(k, run)| {
                run.windows(2).all(|w| w[0] < w[1]) && (k == 0 || ids[k * RUN - 1] < run[0])
            });
            if ascending {
                continue;
            }
            let mut sorted = ids.clone();
            sorted.par_sort_unstable();
            if sorted.windows(2).all(|w| w[0] != w[1]) {
                continue;
            }
        }
        let (repeats, n) = repeated_ids(body, dims, kind, hline + 1);
        n_bad += n;
        bad.extend(repeats);
    }
    if n_bad > 0 {
        bad.sort_by_key(|b| (b.line, b.column));
        bad.truncate(MAX_REPORTED);
        if n_bad == 1 {
            let b = bad.remove(0);
            return Err(err(b.line, b.column, b.message));
        }
        return Err(IoError::Lines {
            path: path.to_path_buf(),
            lines: bad,
            total: n_bad,
        });
    }
    RegionSet::from_columns(dims, pubs, subs).map_err(|e| err(hline, 1, e.to_string()))
}

/// A blank line, or a comment (`#` after optional spaces).
fn skipped(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    t.is_empty() || t[0] == b'#'
}

/// One chunk's slices of the columns, by kind: ids, and `dims` ranges per id.
struct Columns<'a> {
    ids: [&'a mut [u64]; 2],
    ranges: [&'a mut [Range]; 2],
}

/// What parsing one chunk found: its bad lines (numbered from the chunk's first line,
/// 0, until the caller adds that line's number), how many, and its lines.
struct Parsed {
    bad: Vec<BadLine>,
    bad_count: usize,
    lines: usize,
}

/// The lines of a chunk (each ending in `\n`, the last one perhaps not) that are
/// neither blank nor comments, each with its text.
fn rows(chunk: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut pos = 0;
    let mut line = 0;
    std::iter::from_fn(move || {
        while pos < chunk.len() {
            let text;
            (text, pos) = line_at(chunk, pos);
            let at = line;
            line += 1;
            if !skipped(text) {
                return Some((at, text));
            }
        }
        None
    })
}

/// The line of `chunk` that begins at `pos`, without its `\n` and a `\r` before it, and
/// where the next line begins.
#[inline]
fn line_at(chunk: &[u8], pos: usize) -> (&[u8], usize) {
    let end = memchr::memchr(b'\n', &chunk[pos..]).map_or(chunk.len(), |i| pos + i);
    let text = &chunk[pos..end];
    (text.strip_suffix(b"\r").unwrap_or(text), end + 1)
}

/// The regions of each kind in a chunk, by the first field of its rows (a row of
/// another kind is a bad line, counted by [`parse_chunk`]). A line that starts with
/// `pub,` or `sub,` is counted by those four bytes; any other goes through [`rows`]'
/// rules, so the counts are those [`parse_chunk`] fills. The lines are cut at the line
/// ends one search finds in turn: [`rows`]' search a line read 1M 2-D regions 5-10%
/// slower on one core.
fn count_kinds(chunk: &[u8]) -> [usize; 2] {
    let mut n = [0; 2];
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', chunk).chain(std::iter::once(chunk.len())) {
        if start >= chunk.len() {
            break;
        }
        let line = &chunk[start..end];
        start = end + 1;
        match plain_kind(line) {
            Some(k) => n[k] += 1,
            None => {
                let text = line.strip_suffix(b"\r").unwrap_or(line);
                if let Some(k) = (!skipped(text)).then(|| kind_of(text)).flatten() {
                    n[k] += 1;
                }
            }
        }
    }
    n
}

/// The kind of a line that starts with `pub,` or `sub,` exactly.
#[inline]
fn plain_kind(line: &[u8]) -> Option<usize> {
    match line.get(..4)? {
        b"pub," => Some(Kind::Publication as usize),
        b"sub," => Some(Kind::Subscription as usize),
        _ => None,
    }
}

/// A row in its plain form, read at byte speed: after `pub,` or `sub,` (checked by
/// [`plain_kind`]), the id and every bound as bare digits (an id of at most 19, a
/// bound of at most 10 and inside `u32`) separated by single commas, each range's lower
/// bound at most its upper, and the line's end (`\n` or the chunk's end) right after
/// the last bound. Returns the id and the bytes the row took with its line end, its
/// ranges written into `ranges`; `None` for any other line (spaces, a carriage return,
/// a comment, a bad value), which [`parse_row`] then reads and, if it is wrong, says
/// where and why.
#[inline]
fn plain_row(text: &[u8], ranges: &mut [Range]) -> Option<(u64, usize)> {
    let mut pos = 4;
    // Bare digits from `pos`, at most `max_digits` of them, then `sep` or the end.
    let mut number = |max_digits: usize, last: bool| -> Option<u64> {
        let begin = pos;
        let mut v: u64 = 0;
        while let Some(&b) = text.get(pos) {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            // Wrapping only past `max_digits`, where the number is refused below.
            v = v.wrapping_mul(10).wrapping_add(u64::from(d));
            pos += 1;
        }
        let digits = pos - begin;
        if digits == 0 || digits > max_digits {
            return None;
        }
        match text.get(pos) {
            Some(b',') if !last => pos += 1,
            Some(b'\n') if last => pos += 1,
            None if last => {}
            _ => return None,
        }
        Some(v)
    };
    let n = ranges.len();
    let id = number(19, n == 0)?;
    for (d, r) in ranges.iter_mut().enumerate() {
        let lo = number(10, false)?;
        let hi = number(10, d + 1 == n)?;
        if lo > hi || hi > u64::from(u32::MAX) {
            return None;
        }
        *r = Range {
            lo: lo as u32,
            hi: hi as u32,
        };
    }
    Some((id, pos))
}

/// The kind of a row by its first field: 0 for `pub`, 1 for `sub` (the order of
/// [`Kind`]), `None` for anything else.
fn kind_of(text: &[u8]) -> Option<usize> {
    match (FieldIter { line: text, pos: 0 }).next().map(|f| f.1) {
        Some(b"pub") => Some(Kind::Publication as usize),
        Some(b"sub") => Some(Kind::Subscription as usize),
        _ => None,
    }
}

/// Parses the rows of one chunk into its slices of the columns.
fn parse_chunk(chunk: &[u8], dims: usize, cols: Columns) -> Parsed {
    let mut p = Parsed {
        bad: Vec::new(),
        bad_count: 0,
        lines: memchr::memchr_iter(b'\n', chunk).count()
            + usize::from(!chunk.is_empty() && !chunk.ends_with(b"\n")),
    };
    let mut next = [0usize; 2];
    let mut ranges = Vec::with_capacity(dims);
    let (mut pos, mut rel) = (0usize, 0usize);
    while pos < chunk.len() {
        let at = rel;
        rel += 1;
        // The plain form first, read straight into the row's slot (a line that is not
        // plain may leave some of it written: the general rules below then write it
        // again, or find the line bad, which fails the whole parse).
        if let Some(k) = plain_kind(&chunk[pos..]) {
            let i = next[k];
            let dest = cols.ranges[k].get_mut(i * dims..(i + 1) * dims);
            if let (Some(slot), Some(dest)) = (cols.ids[k].get_mut(i), dest) {
                if let Some((id, took)) = plain_row(&chunk[pos..], dest) {
                    pos += took;
                    next[k] += 1;
                    *slot = id;
                    continue;
                }
            }
        }
        let text;
        (text, pos) = line_at(chunk, pos);
        if skipped(text) {
            continue;
        }
        // A row of a good kind keeps its slot even when bad: the slots stay in step
        // with pass 1's counts (and a bad row makes the whole parse an error).
        let slot = kind_of(text).map(|k| {
            next[k] += 1;
            (k, next[k] - 1)
        });
        match (parse_row(text, dims, &mut ranges), slot) {
            (Ok((_, id)), Some((k, i))) => {
                if let Some(slot) = cols.ids[k].get_mut(i) {
                    *slot = id;
                    cols.ranges[k][i * dims..(i + 1) * dims].copy_from_slice(&ranges);
                }
            }
            (Ok(_), None) => {}
            (Err((column, message)), _) => {
                p.bad_count += 1;
                if p.bad.len() < MAX_REPORTED {
                    p.bad.push(BadLine {
                        line: at,
                        column,
                        message,
                    });
                }
            }
        }
    }
    p
}

/// One region's line: its kind and id, its ranges into `ranges`; or the (1-based)
/// column and what is wrong there.
fn parse_row(
    line: &[u8],
    dims: usize,
    ranges: &mut Vec<Range>,
) -> Result<(Kind, u64), (usize, String)> {
    let want = 2 + 2 * dims;
    let mut f = FieldIter { line, pos: 0 };
    let mut next = |i: usize| -> Result<(usize, &[u8]), (usize, String)> {
        f.next()
            .ok_or_else(|| (1, format!("{i} fields, the header has {want}")))
    };
    let (kcol, kword) = next(0)?;
    let kind = match kword {
        b"pub" => Kind::Publication,
        b"sub" => Kind::Subscription,
        other => {
            return Err((
                column(line, kcol),
                format!(
                    "kind `{}` is neither `pub` nor `sub`",
                    String::from_utf8_lossy(other)
                ),
            ))
        }
    };
    let (icol, iword) = next(1)?;
    let id = parse_uint(iword, u64::MAX).ok_or_else(|| {
        (
            column(line, icol),
            format!(
                "id `{}` is not an unsigned integer",
                String::from_utf8_lossy(iword)
            ),
        )
    })?;
    ranges.clear();
    for d in 0..dims {
        let mut bound = |i: usize| -> Result<(usize, u32), (usize, String)> {
            let (col, w) = next(i)?;
            let v = parse_uint(w, u32::MAX as u64).ok_or_else(|| {
                (
                    column(line, col),
                    format!(
                        "bound `{}` is not an integer in 0..=4294967295",
                        String::from_utf8_lossy(w)
                    ),
                )
            })?;
            Ok((col, v as u32))
        };
        let (lcol, lo) = bound(2 + 2 * d)?;
        let (_, hi) = bound(3 + 2 * d)?;
        if lo > hi {
            return Err((
                column(line, lcol),
                format!("dimension {d}: lower bound {lo} is above upper bound {hi}"),
            ));
        }
        ranges.push(Range { lo, hi });
    }
    if f.next().is_some() {
        let n = want + 1 + FieldIter { line, pos: 0 }.skip(want + 1).count();
        return Err((1, format!("{n} fields, the header has {want}")));
    }
    Ok((kind, id))
}

/// The comma-separated fields of a line, trimmed of spaces, with their byte offsets.
struct FieldIter<'a> {
    line: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for FieldIter<'a> {
    type Item = (usize, &'a [u8]);
    fn next(&mut self) -> Option<(usize, &'a [u8])> {
        if self.pos > self.line.len() {
            return None;
        }
        let rest = &self.line[self.pos..];
        let len = memchr::memchr(b',', rest).unwrap_or(rest.len());
        let raw = &rest[..len];
        let lead = raw.len() - raw.trim_ascii_start().len();
        let item = (self.pos + lead, raw.trim_ascii());
        self.pos += len + 1;
        Some(item)
    }
}

/// The 1-based column (in characters) of byte `offset` of `line`.
fn column(line: &[u8], offset: usize) -> usize {
    String::from_utf8_lossy(&line[..offset]).chars().count() + 1
}

/// An unsigned decimal integer of at most `max`, digits only.
fn parse_uint(w: &[u8], max: u64) -> Option<u64> {
    if w.is_empty() || w.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in w {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    (v <= max).then_some(v)
}

/// Every line whose id repeats an earlier line's of the same kind (a rare path: taken
/// only when a sort found a repeat), with how many there are; `body`'s lines numbered
/// from `first`.
fn repeated_ids(body: &[u8], dims: usize, kind: Kind, first: usize) -> (Vec<BadLine>, usize) {
    let mut seen = std::collections::HashSet::new();
    let (mut bad, mut n) = (Vec::new(), 0);
    let mut ranges = Vec::with_capacity(dims);
    for (rel, text) in rows(body) {
        let Ok((k, id)) = parse_row(text, dims, &mut ranges) else {
            continue;
        };
        if k == kind && !seen.insert(id) {
            n += 1;
            if bad.len() < MAX_REPORTED {
                let col = FieldIter { line: text, pos: 0 }
                    .nth(1)
                    .map_or(1, |(o, _)| column(text, o));
                bad.push(BadLine {
                    line: first + rel,
                    column: col,
                    message: format!("{} id {id} appears twice", kind.word()),
                });
            }
        }
    }
    (bad, n)
}

/// The comma-separated fields of a header, trimmed, with their 1-based start columns.
fn fields(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0usize;
    for part in line.split(',') {
        let lead = part.len() - part.trim_start().len();
        out.push((line[..start + lead].chars().count() + 1, part.trim()));
        start += part.len() + 1;
    }
    out
}

/// Writes regions in the format [`read_regions`] reads.
pub fn write_regions(set: &RegionSet, out: &mut impl std::io::Write) -> std::io::Result<()> {
    write!(out, "kind,id")?;
    for d in 0..set.dims() {
        write!(out, ",lo{d},hi{d}")?;
    }
    writeln!(out)?;
    for kind in [Kind::Publication, Kind::Subscription] {
        for i in 0..set.len(kind) {
            write!(out, "{},{}", kind.word(), set.ids(kind)[i as usize])?;
            for r in set.region(kind, i) {
                write!(out, ",{},{}", r.lo, r.hi)?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<RegionSet, IoError> {
        parse_regions(s, Path::new("r.csv"))
    }

    /// A file read through its memory map gives what parsing its text gives: the
    /// regions, a bad line's place, an empty file's error; a directory is refused.
    #[test]
    fn a_mapped_file_reads_as_its_text_parses() {
        let dir = std::env::temp_dir().join(format!("ddm-io-map-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases = [
            "kind,id,lo0,hi0\npub,1,0,5\nsub,2,3,9\n",
            "kind,id,lo0,hi0\npub,1,0,5\nsub,2,3,x9\n",
            "",
        ];
        for (i, text) in cases.iter().enumerate() {
            let path = dir.join(format!("r{i}.csv"));
            std::fs::write(&path, text).unwrap();
            let mapped = read_regions(&path).map_err(|e| e.to_string());
            let parsed = parse_regions(text, &path).map_err(|e| e.to_string());
            match (mapped, parsed) {
                (Ok(a), Ok(b)) => {
                    for k in [Kind::Publication, Kind::Subscription] {
                        assert_eq!(a.ids(k), b.ids(k), "case {i}");
                    }
                }
                (Err(a), Err(b)) => assert_eq!(a, b, "case {i}"),
                (a, b) => panic!("case {i}: mapped {a:?}, parsed {b:?}"),
            }
        }
        assert!(read_regions(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn parses_two_dimensional_regions_of_both_kinds() {
        let set =
            parse("kind,id,lo0,hi0,lo1,hi1\npub,7,0,10,5,5\n# note\n\nsub, 3 ,2,4,0,9\n").unwrap();
        assert_eq!(set.dims(), 2);
        assert_eq!(set.ids(Kind::Publication), &[7]);
        assert_eq!(
            set.region(Kind::Subscription, 0),
            &[Range { lo: 2, hi: 4 }, Range { lo: 0, hi: 9 }]
        );
    }

    #[test]
    fn a_byte_order_mark_before_the_header_is_skipped() {
        let set = parse("\u{FEFF}kind,id,lo0,hi0\npub,1,0,10\n").unwrap();
        assert_eq!(set.ids(Kind::Publication), &[1]);
    }

    #[test]
    fn a_missing_file_names_it_and_leaves_the_cause_to_the_source() {
        let e = read_regions(Path::new("/nonexistent/r.csv")).unwrap_err();
        assert_eq!(e.to_string(), "/nonexistent/r.csv: cannot read");
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn bad_rows_name_file_line_and_column() {
        let e = parse("kind,id,lo0,hi0\npub,1,0,10\nsub,2,5,x\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "r.csv:3:9: bound `x` is not an integer in 0..=4294967295"
        );
        let e = parse("kind,id,lo0,hi0\nfoo,1,0,10\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("r.csv:2:1: kind `foo`"), "{e}");
        let e = parse("kind,id,lo0,hi0\npub,1,9,3\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("r.csv:2:7: dimension 0: lower bound 9"),
            "{e}"
        );
        let e = parse("kind,id,lo0,hi0\npub,1,0,3\npub,1,0,3\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("r.csv:3:5: pub id 1 appears twice"), "{e}");
        let e = parse("kind,id,lo0,hi0\npub,1,0\n").unwrap_err().to_string();
        assert!(e.starts_with("r.csv:2:1: 3 fields"), "{e}");
    }

    #[test]
    fn every_bad_line_is_reported_in_one_pass() {
        let e = parse("kind,id,lo0,hi0\npub,1,0,x\n\npub,2,0,3\nsub,1,5\npub, 2,0,1\n")
            .unwrap_err()
            .to_string();
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(
            lines,
            [
                "r.csv:2:9: bound `x` is not an integer in 0..=4294967295",
                "r.csv:5:1: 3 fields, the header has 4",
                "r.csv:6:6: pub id 2 appears twice",
                "r.csv: 3 bad line(s)",
            ]
        );
    }

    #[test]
    fn bad_lines_past_the_reported_ones_are_counted() {
        let mut text = String::from("kind,id,lo0,hi0\n");
        for i in 0..100 {
            text.push_str(&format!("pub,{i},5,1\n"));
        }
        let e = parse(&text).unwrap_err().to_string();
        assert_eq!(e.lines().count(), MAX_REPORTED + 1, "{e}");
        assert!(e.ends_with("100 bad line(s), the first 20 shown"), "{e}");
        assert!(e.starts_with("r.csv:2:7: dimension 0"), "{e}");
    }

    #[test]
    fn a_file_of_many_chunks_keeps_file_order_and_line_numbers() {
        let mut text = String::from("# regions\nkind,id,lo0,hi0\n");
        let n = 3 * CHUNK / 12;
        for i in 0..n {
            let kind = if i % 3 == 0 { "sub" } else { "pub" };
            text.push_str(&format!("{kind},{i},{},{}\n", i % 1000, i % 1000 + 5));
        }
        let set = parse(&text).unwrap();
        assert_eq!(set.n_pub() + set.n_sub(), n as u32);
        let pubs: Vec<u64> = (0..n as u64).filter(|i| i % 3 != 0).collect();
        assert_eq!(set.ids(Kind::Publication), &pubs[..]);
        assert_eq!(set.region(Kind::Subscription, 1), &[Range { lo: 3, hi: 8 }]);
        // A bad line deep in the file is numbered as in the file.
        let bad = n - 8;
        assert_ne!(bad % 3, 0, "a publication's line");
        let text = text.replacen(&format!("pub,{bad},"), &format!("pub,{bad}x,"), 1);
        let e = parse(&text).map(|_| ()).unwrap_err().to_string();
        assert!(e.starts_with(&format!("r.csv:{}:5: id", bad + 3)), "{e}");
    }

    #[test]
    fn plain_rows_and_rows_in_other_forms_read_alike() {
        // The same regions, plain (read at byte speed) and in forms the plain reader
        // hands to the general rules: spaces, CRLF, a comment, a 20-digit id.
        let plain = "kind,id,lo0,hi0,lo1,hi1\n\
                     pub,9999999999999999999,0,4294967295,7,7\n\
                     sub,18446744073709551615,00012,13,0,0\n\
                     pub,3,1,2,3,4";
        let other = "kind,id,lo0,hi0,lo1,hi1\r\n\
                     pub, 9999999999999999999,0,4294967295,7,7\r\n\
                     # between\n\
                     sub,18446744073709551615,00012,13,0,0 \n\
                     \n\
                     pub,3,1,2,3,4\r\n";
        let a = parse(plain).unwrap();
        assert_eq!(a, parse(other).unwrap());
        assert_eq!(a.ids(Kind::Publication), &[9_999_999_999_999_999_999, 3]);
        assert_eq!(a.ids(Kind::Subscription), &[u64::MAX]);
        let r = |lo, hi| Range { lo, hi };
        assert_eq!(a.region(Kind::Publication, 0), &[r(0, u32::MAX), r(7, 7)]);
        assert_eq!(a.region(Kind::Subscription, 0), &[r(12, 13), r(0, 0)]);
        assert_eq!(a.region(Kind::Publication, 1), &[r(1, 2), r(3, 4)]);
        // Values the plain reader refuses are reported by the general rules.
        let e = parse("kind,id,lo0,hi0\npub,1,0,4294967296\n").unwrap_err();
        assert!(
            e.to_string().starts_with("r.csv:2:9: bound `4294967296`"),
            "{e}"
        );
        let e = parse("kind,id,lo0,hi0\npub,18446744073709551616,0,1\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("r.csv:2:5: id `18446744073709551616`"),
            "{e}"
        );
        let e = parse("kind,id,lo0,hi0\npub,1,2,1\n").unwrap_err();
        assert!(e.to_string().starts_with("r.csv:2:7: dimension 0"), "{e}");
        let e = parse("kind,id,lo0,hi0\npub,1,,1\n").unwrap_err();
        assert!(e.to_string().starts_with("r.csv:2:7: bound ``"), "{e}");
        let e = parse("kind,id,lo0,hi0\npub,1,0,1,\n").unwrap_err();
        assert!(e.to_string().starts_with("r.csv:2:1: 5 fields"), "{e}");
    }

    #[test]
    fn ids_in_any_order_are_checked_for_repeats() {
        // Ascending (the quick check), descending and shuffled ids all parse; a repeat
        // among unordered ids is still found.
        for ids in [[1, 2, 3], [3, 2, 1], [2, 3, 1]] {
            let text = format!(
                "kind,id,lo0,hi0\npub,{},0,1\npub,{},0,1\npub,{},0,1\n",
                ids[0], ids[1], ids[2]
            );
            assert_eq!(parse(&text).unwrap().ids(Kind::Publication), &ids);
        }
        let e = parse("kind,id,lo0,hi0\npub,3,0,1\npub,1,0,1\npub,3,0,1\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("r.csv:4:5: pub id 3 appears twice"),
            "{e}"
        );
    }

    #[test]
    fn bad_headers_are_rejected() {
        assert!(parse("").unwrap_err().to_string().contains("empty file"));
        assert!(parse("kind,id,lo0\n")
            .unwrap_err()
            .to_string()
            .contains("3 columns"));
        let e = parse("kind,id,lo0,top0\n").unwrap_err().to_string();
        assert_eq!(e, "r.csv:1:13: header column 4 is `top0`, expected `hi0`");
    }

    #[test]
    fn write_then_read_round_trips() {
        let set = parse("kind,id,lo0,hi0\npub,1,0,3\nsub,9,3,3\n").unwrap();
        let mut buf = Vec::new();
        write_regions(&set, &mut buf).unwrap();
        assert_eq!(parse(std::str::from_utf8(&buf).unwrap()).unwrap(), set);
    }
}
