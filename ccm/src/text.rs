//! Beyond the paper: a JSON Lines stream read in windows of whole lines of text, each
//! window cut into lines by the tasks that parse it.
//!
//! [`LineReader`] hands out a window already cut into lines: the stream's bytes are
//! copied into the window by one thread, then every line is found and listed before any
//! is parsed. Here a window is only its bytes ([`TextWindow`]): a range of the file's
//! map when the stream is a regular file (no copy; each window's pages are let go once
//! it is parsed, so the resident set holds a few windows, not the file), else a buffer
//! read from the stream. [`parse_lines_in_parts`] cuts the window into parts of bytes,
//! one a task; each task finds its own first and last line (a line belongs to the part
//! its first byte is in), parses its lines as it finds them, and counts them; the line
//! numbers of the bad ones are then known from the counts of the parts before. So no
//! thread walks every byte of the stream, and each byte is read once, by the task that
//! parses it.
//!
//! A window of at least [`BLOCK_LINES`] lines is cut by bytes, sized from the mean line
//! so far: it holds about as many lines as asked. A smaller one (`--window 1`, lines
//! answered as they come) holds exactly as many lines that are not blank, as
//! [`LineReader::read_window`]'s do.
//!
//! A file that is cut short while it is mapped makes the process fail with `SIGBUS`, as
//! any program reading a mapped file does (ripgrep, for one); a file appended to is read
//! as long as it was when opened.
//!
//! ```
//! use ccm::text::{parse_lines_in_parts, TextReader, TextWindow};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut r = TextReader::from_reader("e.jsonl", &b"a\n\nbad\nc"[..]);
//! let mut w = TextWindow::default();
//! r.read_window(10, &mut w)?;
//! let p = parse_lines_in_parts(w.bytes(), 1, |_| Vec::new(), |v: &mut Vec<u8>, l, _| {
//!     if l == b"bad" { Err("bad line") } else { v.push(l[0]); Ok(()) }
//! });
//! assert_eq!(p.parts.concat(), b"ac");
//! assert_eq!(p.lines, 4);
//! // The bad line: the second line that is not blank, line 3 of the stream.
//! assert_eq!(p.bad, [(1, 3, "bad line")]);
//! # Ok(()) }
//! ```

use crate::io::{display_path, IoError, LineReader, RawLines, BLOCK_LINES};
use rayon::prelude::*;
use std::io::BufRead;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bytes per part when a window is parsed on all cores: at least four parts a thread,
/// of [`PART_MIN`] to [`PART_MAX`] bytes.
const PART_MAX: usize = 256 << 10;
/// Fewest bytes of a part (a smaller window is one part, parsed on the calling thread).
const PART_MIN: usize = 16 << 10;

/// Bytes sampled at a window's start to learn the mean line (the size of the next one).
const SAMPLE: usize = 64 << 10;

/// A window of a stream: whole lines of text (the last of the stream may lack its
/// `\n`), blank ones included. Reused from window to window: a buffer keeps its
/// capacity.
#[derive(Default)]
pub struct TextWindow {
    text: Text,
}

#[derive(Default)]
enum Text {
    /// Read from the stream.
    #[default]
    None,
    Owned(Vec<u8>),
    /// A range of a regular file's map.
    Mapped(Arc<memmap2::Mmap>, Range<usize>),
}

impl TextWindow {
    /// The window's bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.text {
            Text::None => &[],
            Text::Owned(v) => v,
            Text::Mapped(map, r) => &map[r.clone()],
        }
    }

    /// Bytes in the window.
    pub fn len(&self) -> usize {
        self.bytes().len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes().is_empty()
    }

    /// Empties the window, keeping its buffer; a mapped window's pages are let go (those
    /// wholly before its end: the page it ends in is the next window's too).
    pub fn clear(&mut self) {
        match &mut self.text {
            Text::None => {}
            Text::Owned(v) => v.clear(),
            Text::Mapped(map, r) => {
                let page = page_size();
                let (from, to) = (r.start / page * page, r.end / page * page);
                if to > from {
                    // SAFETY: the map is private and read-only, so its pages hold the
                    // file's bytes and nothing else: let go, they would read back the
                    // same bytes from the file. And none is read again: windows are
                    // handed out in order, each beginning where the last ended, so the
                    // pages wholly before this window's end belong to it and the windows
                    // before, all parsed (the last page, shared with the next window, is
                    // kept).
                    let _ = unsafe {
                        map.unchecked_advise_range(
                            memmap2::UncheckedAdvice::DontNeed,
                            from,
                            to - from,
                        )
                    };
                }
                self.text = Text::None;
            }
        }
    }

    /// The window's buffer, emptied, for a window read from a stream.
    fn buffer(&mut self) -> &mut Vec<u8> {
        if !matches!(self.text, Text::Owned(_)) {
            self.clear();
            self.text = Text::Owned(Vec::new());
        }
        match &mut self.text {
            Text::Owned(v) => {
                v.clear();
                v
            }
            _ => unreachable!("made a buffer above"),
        }
    }
}

impl Drop for TextWindow {
    fn drop(&mut self) {
        self.clear();
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// Reads a stream in [`TextWindow`]s; see the [module documentation](self).
pub struct TextReader {
    file: PathBuf,
    source: Source,
    /// Mean bytes per line so far (the size of the next large window).
    line_bytes: usize,
}

enum Source {
    /// A regular file's map and where the next window begins.
    Mapped(Arc<memmap2::Mmap>, usize),
    /// Any other stream (a pipe, a terminal).
    Read(LineReader<Box<dyn BufRead + Send>>, RawLines),
}

impl TextReader {
    /// Opens `path` (`-`: standard input): mapped when it is a regular file that is not
    /// empty (standard input too, from where it stands), else read.
    pub fn open(path: &Path) -> Result<TextReader, IoError> {
        let file = display_path(path);
        let reader: Box<dyn BufRead + Send> = if path.as_os_str() == crate::io::STDIN {
            use std::os::fd::AsFd as _;
            let dup = std::io::stdin().as_fd().try_clone_to_owned();
            if let Some(source) = dup.ok().and_then(|fd| mapped(&mut std::fs::File::from(fd))) {
                return Ok(TextReader::mapped(file, source));
            }
            crate::io::open_input(path)?
        } else {
            let mut f = std::fs::File::open(path).map_err(|source| IoError::Read {
                file: file.clone(),
                source,
            })?;
            if let Some(source) = mapped(&mut f) {
                return Ok(TextReader::mapped(file, source));
            }
            // The file opened once: a named pipe closed and opened again would lose what
            // its writer had written.
            Box::new(std::io::BufReader::with_capacity(1 << 20, f))
        };
        Ok(TextReader::from_reader(file, reader))
    }

    fn mapped(file: PathBuf, source: Source) -> TextReader {
        TextReader {
            file,
            source,
            line_bytes: 64,
        }
    }

    /// A reader of `reader` (never mapped), named `file` in errors.
    pub fn from_reader(file: impl Into<PathBuf>, reader: impl BufRead + Send + 'static) -> Self {
        let file = file.into();
        let reader: Box<dyn BufRead + Send> = Box::new(reader);
        TextReader {
            source: Source::Read(LineReader::new(file.clone(), reader), RawLines::default()),
            file,
            line_bytes: 64,
        }
    }

    /// The stream's name in errors.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Whether the stream is read from a map of the file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.source, Source::Mapped(..))
    }

    /// Replaces the window in `out` by the next lines of the stream: exactly `max` (at
    /// least 1) that are not blank when `max` is below [`BLOCK_LINES`], else about `max`
    /// (cut by bytes at a line end); `out` is empty at the end of the stream.
    pub fn read_window(&mut self, max: usize, out: &mut TextWindow) -> Result<(), IoError> {
        let max = max.max(1);
        let want = max.saturating_mul(self.line_bytes).clamp(PART_MAX, 1 << 28);
        match &mut self.source {
            Source::Mapped(map, pos) => {
                out.clear();
                let rest = &map[*pos..];
                let len = if max < BLOCK_LINES {
                    lines_end(rest, max)
                } else if want >= rest.len() {
                    rest.len()
                } else {
                    memchr::memchr(b'\n', &rest[want - 1..]).map_or(rest.len(), |i| want + i)
                };
                out.text = Text::Mapped(Arc::clone(map), *pos..*pos + len);
                *pos += len;
            }
            Source::Read(lines, raw) => {
                if max < BLOCK_LINES {
                    lines.read_window(max, raw)?;
                    raw.swap_text(out.buffer());
                } else {
                    lines.read_text(want, out.buffer())?;
                }
            }
        }
        let sample = &out.bytes()[..out.len().min(SAMPLE)];
        let n = memchr::memchr_iter(b'\n', sample).count();
        if let Some(mean) = sample.len().checked_div(n) {
            self.line_bytes = mean.max(1);
        }
        Ok(())
    }
}

/// The map of `f` from where it stands, if it is a regular file with bytes left.
fn mapped(f: &mut std::fs::File) -> Option<Source> {
    use std::io::Seek as _;
    let meta = f.metadata().ok()?;
    let at = f.stream_position().ok()? as usize;
    if !meta.is_file() || meta.len() as usize <= at {
        return None;
    }
    // SAFETY: the map is private and read only; this process never writes the file. A
    // file another process cuts short while it is read makes the process fail (SIGBUS),
    // as the module documentation says.
    let map = unsafe { memmap2::Mmap::map(&*f) }.ok()?;
    let _ = map.advise(memmap2::Advice::Sequential);
    let at = at.min(map.len());
    Some(Source::Mapped(Arc::new(map), at))
}

/// Bytes of `text`'s first `max` lines that are not blank (the blank ones among them
/// included), or all of `text` when it has fewer.
fn lines_end(text: &[u8], max: usize) -> usize {
    let (mut start, mut n) = (0, 0);
    for end in memchr::memchr_iter(b'\n', text) {
        if !is_blank(&text[start..end]) {
            n += 1;
            if n == max {
                return end + 1;
            }
        }
        start = end + 1;
    }
    text.len()
}

/// Whether a line is blank: spaces, tabs, a `\r` only (counted, not parsed).
#[inline]
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// A window's lines parsed by [`parse_lines_in_parts`].
#[derive(Debug)]
pub struct Parsed<B, E> {
    /// Each part's container, in order.
    pub parts: Vec<B>,
    /// Each bad line: its place among the window's lines that are not blank (from 0),
    /// its line number in the stream, and its error; ascending.
    pub bad: Vec<(usize, usize, E)>,
    /// Lines in the window, blank ones included.
    pub lines: usize,
}

/// Parses the lines of `text` (whole lines, the first numbered `first_line`) on all
/// cores, in parts of bytes each cut into lines by the task that parses it, each into a
/// container of its own (`new(the part's bytes)`, whole lines):
/// `parse(container, line, first)` parses a line that is not blank (without its `\n`;
/// `first`: it is line 1 of the stream) into it, or gives its error. A bad line does not
/// stop the others.
pub fn parse_lines_in_parts<B: Send, E: Send>(
    text: &[u8],
    first_line: usize,
    new: impl Fn(&[u8]) -> B + Sync,
    parse: impl Fn(&mut B, &[u8], bool) -> Result<(), E> + Sync,
) -> Parsed<B, E> {
    parse_parts(text, first_line, new, |container, part, first, lines| {
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', part) {
            let first = first && lines.lines == 0;
            lines.line(&part[start..end], |l| parse(container, l, first));
            start = end + 1;
        }
        if start < part.len() {
            let first = first && lines.lines == 0;
            lines.line(&part[start..], |l| parse(container, l, first));
        }
    })
}

/// A part's lines as its task scans them ([`parse_parts`]): how many, how many not
/// blank, and the bad ones.
pub struct PartLines<E> {
    /// Lines so far, blank ones included.
    pub lines: usize,
    /// Lines so far that are not blank.
    pub kept: usize,
    /// Each bad line: its place among the part's lines that are not blank, its place
    /// among all of them, its error.
    bad: Vec<(usize, usize, E)>,
}

impl<E> PartLines<E> {
    /// Counts a line that was parsed (not blank, good).
    #[inline(always)]
    pub fn good(&mut self) {
        self.lines += 1;
        self.kept += 1;
    }

    /// Counts `line` (without its `\n`): blank, or parsed by `parse` (good or bad).
    #[inline]
    pub fn line(&mut self, line: &[u8], parse: impl FnOnce(&[u8]) -> Result<(), E>) {
        if !is_blank(line) {
            if let Err(e) = parse(line) {
                self.bad.push((self.kept, self.lines, e));
            }
            self.kept += 1;
        }
        self.lines += 1;
    }
}

/// [`parse_lines_in_parts`] with each part's scan in the caller's hands:
/// `scan(container, part, first, lines)` reads every line of `part` (whole lines; `first`:
/// the part begins the stream, its first line is line 1) into `container`, counting each
/// in `lines` (a scanner may parse a line before it knows where it ends, and cut it only
/// when its fast path gives up).
pub fn parse_parts<B: Send, E: Send>(
    text: &[u8],
    first_line: usize,
    new: impl Fn(&[u8]) -> B + Sync,
    scan: impl Fn(&mut B, &[u8], bool, &mut PartLines<E>) + Sync,
) -> Parsed<B, E> {
    let threads = rayon::current_num_threads();
    let part = (text.len() / (4 * threads)).clamp(PART_MIN, PART_MAX);
    let n = text.len().div_ceil(part).max(1);
    // A part's first line: the one after the line its nominal start falls in the middle of.
    let start_of = |k: usize| -> usize {
        let at = k * part;
        if k == 0 {
            0
        } else if at >= text.len() {
            text.len()
        } else {
            memchr::memchr(b'\n', &text[at - 1..]).map_or(text.len(), |i| at + i)
        }
    };
    let run = |k: usize| -> (B, PartLines<E>) {
        let (a, b) = (start_of(k), start_of(k + 1));
        let mut container = new(&text[a..b]);
        let mut lines = PartLines {
            lines: 0,
            kept: 0,
            bad: Vec::new(),
        };
        scan(
            &mut container,
            &text[a..b],
            k == 0 && first_line == 1,
            &mut lines,
        );
        (container, lines)
    };
    let parts: Vec<_> = if n == 1 {
        vec![run(0)]
    } else {
        (0..n).into_par_iter().map(run).collect()
    };
    let mut out = Parsed {
        parts: Vec::with_capacity(parts.len()),
        bad: Vec::new(),
        lines: 0,
    };
    let mut kept_before = 0;
    for (container, lines) in parts {
        out.parts.push(container);
        out.bad.extend(
            lines
                .bad
                .into_iter()
                .map(|(i, l, e)| (kept_before + i, first_line + out.lines + l, e)),
        );
        out.lines += lines.lines;
        kept_before += lines.kept;
    }
    out
}

/// A scan of one part's lines for [`parse_parts`]: each line read by `fast` straight from
/// the part's bytes at its start (it gives the bytes the line took, its `\n` included,
/// or `None` where it gives up, leaving its container as it was); a line it gives up on
/// (and line 1 of the stream, which may begin with a byte-order mark) is cut at its
/// `\n` and handed to `checked` (`first`: it is line 1), which parses it or words its
/// error. The events parsers' scan: no line cut first, no pass to check UTF-8.
#[inline(always)]
pub fn scan_lines<B, E>(
    container: &mut B,
    part: &[u8],
    first: bool,
    lines: &mut PartLines<E>,
    mut fast: impl FnMut(&mut B, &[u8]) -> Option<usize>,
    mut checked: impl FnMut(&mut B, &[u8], bool) -> Result<(), E>,
) {
    let mut at = 0;
    while at < part.len() {
        let first = first && lines.lines == 0;
        if !first {
            if let Some(n) = fast(container, &part[at..]) {
                lines.good();
                at += n;
                continue;
            }
        }
        let end = memchr::memchr(b'\n', &part[at..]).map_or(part.len(), |i| at + i);
        lines.line(&part[at..end], |raw| checked(container, raw, first));
        at = end + 1;
    }
}

/// Containers a stream's parser keeps from window to window (their arrays keep their
/// memory: a window parsed into fresh memory spent a fifth of its time in the kernel,
/// clearing the pages): the parts' ([`parse_lines_in_parts`]) and the windows' given back
/// once matched. One per kind of container, in a `static` (ccm's and clcb's events).
pub struct Spares<B> {
    parts: std::sync::Mutex<Vec<B>>,
    windows: std::sync::Mutex<Vec<B>>,
}

/// Most parts' containers kept (a window of 64 MiB has 256 parts).
const SPARE_PARTS_MAX: usize = 256;
/// Most windows' containers kept.
const SPARE_WINDOWS_MAX: usize = 8;

impl<B: Default> Spares<B> {
    /// None kept yet.
    pub const fn new() -> Spares<B> {
        Spares {
            parts: std::sync::Mutex::new(Vec::new()),
            windows: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn lock(pool: &std::sync::Mutex<Vec<B>>) -> std::sync::MutexGuard<'_, Vec<B>> {
        pool.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A part's container: a kept one, emptied by `reset`, else `fresh()`.
    pub fn part(&self, reset: impl FnOnce(&mut B), fresh: impl FnOnce() -> B) -> B {
        match Spares::lock(&self.parts).pop() {
            Some(mut b) => {
                reset(&mut b);
                b
            }
            None => fresh(),
        }
    }

    /// The window's container from its parts' (in order): the one part's itself, or a
    /// kept window's container (else a new one) that `concat` fills with the parts, which
    /// are then kept for the next window's parts.
    pub fn window(&self, mut parts: Vec<B>, concat: impl FnOnce(&mut B, &[B])) -> B {
        if parts.len() == 1 {
            return parts.pop().unwrap_or_default();
        }
        let mut window = Spares::lock(&self.windows).pop().unwrap_or_default();
        concat(&mut window, &parts);
        let mut kept = Spares::lock(&self.parts);
        let room = SPARE_PARTS_MAX.saturating_sub(kept.len());
        kept.extend(parts.into_iter().take(room));
        window
    }

    /// Gives a window's container back once its events are matched: a later window is
    /// parsed into its memory (a few are kept; the others freed).
    pub fn recycle(&self, window: B) {
        let mut kept = Spares::lock(&self.windows);
        if kept.len() < SPARE_WINDOWS_MAX {
            kept.push(window);
        }
    }
}

/// A batch that a stream's parser empties and fills again window after window, from
/// nothing or from the last window's names and strings ([`Spares::seeded_part`]).
pub trait Refill {
    /// Empties it, its dictionaries too, keeping its memory.
    fn reset(&mut self);
    /// Empties it, keeping its memory, its dictionaries made copies of `seed`'s.
    fn reset_to(&mut self, seed: &crate::batch::Seed);
}

impl<B: Default + Refill> Spares<B> {
    /// A part's batch begun from `seed` (from nothing when `None`): a kept one, else
    /// `fresh()`.
    pub fn seeded_part(&self, seed: Option<&crate::batch::Seed>, fresh: impl FnOnce() -> B) -> B {
        let reset = |b: &mut B| match seed {
            Some(seed) => b.reset_to(seed),
            None => b.reset(),
        };
        self.part(reset, || {
            let mut b = fresh();
            reset(&mut b);
            b
        })
    }
}

impl<B: Default> Default for Spares<B> {
    fn default() -> Spares<B> {
        Spares::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    /// Every line once, in order, with its number, whatever the parts: the lines a
    /// parser sees over windows of every size, read from a map and from a stream, are
    /// the file's lines that are not blank.
    #[test]
    fn parts_and_windows_see_every_line_once_in_order() {
        let mut text = String::new();
        for i in 0..40_000 {
            match i % 7 {
                0 => text.push_str("  \r\n"),
                3 => text.push_str(&format!(
                    "{i} with a longer tail {}\r\n",
                    "x".repeat(i % 90)
                )),
                _ => text.push_str(&format!("{i}\n")),
            }
        }
        text.push_str("last");
        let want: Vec<(usize, String)> = text
            .split('\n')
            .enumerate()
            .filter(|(_, l)| !is_blank(l.as_bytes()))
            .map(|(i, l)| (i + 1, l.to_string()))
            .collect();
        let mut f = tempfile();
        f.0.write_all(text.as_bytes()).unwrap();
        for window in [1, 3, 4095, 4096, 10_000, 1 << 20] {
            for mapped in [true, false] {
                let mut r = if mapped {
                    TextReader::open(&f.1).unwrap()
                } else {
                    let bytes = text.clone().into_bytes();
                    TextReader::from_reader("t", std::io::Cursor::new(bytes))
                };
                assert_eq!(r.is_mapped(), mapped);
                let mut w = TextWindow::default();
                let (mut seen, mut line) = (Vec::new(), 1);
                loop {
                    r.read_window(window, &mut w).unwrap();
                    if w.is_empty() {
                        break;
                    }
                    // Every line reported bad: each comes back with its number.
                    let p = parse_lines_in_parts(
                        w.bytes(),
                        line,
                        |_| (),
                        |_, l, _| Err(String::from_utf8(l.to_vec()).unwrap()),
                    );
                    if window < BLOCK_LINES {
                        assert!(p.bad.len() == window || seen.len() + p.bad.len() == want.len());
                    }
                    for (i, (k, _, _)) in p.bad.iter().enumerate() {
                        assert_eq!(*k, i, "places among the window's lines");
                    }
                    seen.extend(p.bad.into_iter().map(|(_, n, l)| (n, l)));
                    line += p.lines;
                }
                assert_eq!(seen, want, "window {window}, mapped {mapped}");
            }
        }
    }

    /// A file in the temporary directory, removed when dropped.
    struct TempFile(std::fs::File, PathBuf);

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.1);
        }
    }

    fn tempfile() -> TempFile {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "ccm-text-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        TempFile(std::fs::File::create(&p).unwrap(), p)
    }
}
