//! Users' files -> model: the twig query language (Fig. 1 plus the relative
//! predicate forms below) and XML documents -> open/close events (§4.1) with quick-xml.
//!
//! Query grammar (whitespace between tokens is allowed):
//!
//! ```text
//! Query     ::= Step+                      the first step starts with '/' or '//'
//! Step      ::= Axis NameTest Predicate*
//! Axis      ::= '/' | '//'
//! NameTest  ::= Name | '*'                 Name: XML name characters
//! Predicate ::= '[' RelPath ']'
//! RelPath   ::= RelStart NameTest Predicate* Step*
//! RelStart  ::= '' | '/' | './' | '//' | './/'
//! ```
//!
//! Predicates nest at most [`MAX_PREDICATE_DEPTH`] deep (`/a[b[c]]` nests 2 deep): the
//! parser descends into a predicate by recursion, and a deeper line is a syntax error
//! rather than a stack overflow.
//!
//! Inside a predicate, `x`, `/x` and `./x` name a child of the predicate's context node and
//! `//x`, `.//x` a descendant. A predicate and the path's next step are both
//! children of the step they follow: `/a[b]/c` is the twig `a` with children `b` and `c`.
//!
//! Documents: element start/end tags become open/close events; attributes, text,
//! comments, processing instructions, CDATA, the prolog and the DOCTYPE are ignored. An
//! empty element `<x/>` is an open and a close. A document must have exactly one root
//! element and be well nested. Encodings (XML 1.0 §4.3.3, Appendix F): UTF-8 (with or
//! without a byte-order mark), UTF-16 LE and BE, and the encodings of the WHATWG Encoding
//! Standard named by the XML declaration (ISO-8859-1, windows-1252, Shift_JIS, ...) are
//! decoded to UTF-8 before parsing; any other encoding is an error naming it.

use crate::model::{Axis, Document, Event, NodeTest, Query, QuerySet, TagDict};
use crate::XmlError;
use encoding_rs::{DecoderResult, Encoding, REPLACEMENT, UTF_16BE, UTF_16LE, UTF_8};
use quick_xml::events::Event as XEvent;
use quick_xml::Reader;
use std::borrow::Cow;

/// Deepest predicate nesting a query may have (`/a[b[c]]` has 2). Each level is a few
/// frames of the recursive-descent parser; 256 levels stay far below any thread's stack,
/// also under AddressSanitizer. Every other pass over a twig is iterative.
pub const MAX_PREDICATE_DEPTH: usize = 256;

/// A syntax error inside one query: 1-based column and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuerySyntaxError {
    pub column: usize,
    pub what: String,
}

/// Parses one twig query.
pub fn parse_query(text: &str) -> Result<Query, QuerySyntaxError> {
    let mut p = Parser {
        s: text.chars().collect(),
        i: 0,
        depth: 0,
        q: Query { nodes: Vec::new() },
    };
    p.ws();
    if p.i >= p.s.len() {
        return Err(p.err("empty query: expected '/' or '//'"));
    }
    if p.peek() != Some('/') {
        return Err(p.err(&format!(
            "expected '/' or '//' to start the query, found {}",
            p.found()
        )));
    }
    p.path(None, false)?;
    p.ws();
    if p.i < p.s.len() {
        return Err(p.err(&format!("unexpected {} after the query", p.found())));
    }
    Ok(p.q)
}

/// Parses a query file: one query per line, ids are 0-based line numbers. Blank lines
/// and lines starting with `#` are skipped (their ids are simply unused). The first
/// syntax error fails the whole file, naming `file`, line and column.
///
/// ```
/// use xml_twig::io::parse_query_file;
/// # fn main() -> Result<(), xml_twig::XmlError> {
/// let text = "# DBLP queries\n//article[author]/title\n/dblp//year\n";
/// let set = parse_query_file("q.txt", text)?;
/// assert_eq!(set.ids, vec![1, 2]); // the comment line keeps id 0 unused
/// let err = parse_query_file("q.txt", "/a\n/b[c\n").unwrap_err();
/// assert!(err.to_string().starts_with("q.txt:2:"), "{err}");
/// # Ok(()) }
/// ```
pub fn parse_query_file(file: &str, text: &str) -> Result<QuerySet, XmlError> {
    // A UTF-8 byte-order mark is not part of the first query.
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut set = QuerySet::default();
    for (line_no, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let q = parse_query(line).map_err(|e| XmlError::QuerySyntax {
            file: file.to_string(),
            line: line_no + 1,
            column: e.column,
            what: e.what,
        })?;
        set.queries.push(q);
        set.ids.push(line_no as u32);
    }
    Ok(set)
}

struct Parser {
    s: Vec<char>,
    i: usize,
    /// Predicates open around the current position.
    depth: usize,
    q: Query,
}

fn is_name_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == ':'
}
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | ':' | '-' | '.')
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }
    fn peek_at(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }
    fn ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.i += 1;
        }
    }
    fn found(&self) -> String {
        match self.peek() {
            Some(c) => format!("'{c}'"),
            None => "the end of the line".to_string(),
        }
    }
    fn err(&self, what: &str) -> QuerySyntaxError {
        QuerySyntaxError {
            column: self.i + 1,
            what: what.to_string(),
        }
    }

    /// `Axis`: `/` or `//` (the caller checked that a '/' is next).
    fn axis(&mut self) -> Axis {
        self.i += 1;
        if self.peek() == Some('/') {
            self.i += 1;
            Axis::Descendant
        } else {
            Axis::Child
        }
    }

    fn name_test(&mut self) -> Result<NodeTest, QuerySyntaxError> {
        self.ws();
        match self.peek() {
            Some('*') => {
                self.i += 1;
                Ok(NodeTest::Wildcard)
            }
            Some(c) if is_name_start(c) => {
                let start = self.i;
                while self.peek().is_some_and(is_name_char) {
                    self.i += 1;
                }
                Ok(NodeTest::Name(self.s[start..self.i].iter().collect()))
            }
            _ => Err(self.err(&format!(
                "expected a tag name or '*', found {}",
                self.found()
            ))),
        }
    }

    /// One step after its axis: name test and predicates; returns the new node.
    fn step(&mut self, parent: Option<usize>, axis: Axis) -> Result<usize, QuerySyntaxError> {
        let test = self.name_test()?;
        let id = self.q.push(parent, axis, test);
        loop {
            self.ws();
            if self.peek() != Some('[') {
                return Ok(id);
            }
            if self.depth >= MAX_PREDICATE_DEPTH {
                return Err(self.err(&format!(
                    "predicate nesting deeper than {MAX_PREDICATE_DEPTH}"
                )));
            }
            self.i += 1;
            self.ws();
            self.depth += 1;
            self.rel_path(id)?;
            self.depth -= 1;
            self.ws();
            if self.peek() != Some(']') {
                return Err(self.err(&format!(
                    "expected ']' to close the predicate, found {}",
                    self.found()
                )));
            }
            self.i += 1;
        }
    }

    /// `Step+` below `parent`; `first_relative` lets the first step omit its axis.
    fn path(
        &mut self,
        mut parent: Option<usize>,
        first_relative: bool,
    ) -> Result<(), QuerySyntaxError> {
        let mut first = true;
        loop {
            self.ws();
            let axis = if self.peek() == Some('/') {
                self.axis()
            } else if first && first_relative {
                Axis::Child
            } else {
                return Ok(());
            };
            parent = Some(self.step(parent, axis)?);
            first = false;
        }
    }

    /// `RelPath` inside a predicate whose context node is `ctx`.
    fn rel_path(&mut self, ctx: usize) -> Result<(), QuerySyntaxError> {
        if self.peek() == Some('.') && self.peek_at(1) == Some('/') {
            self.i += 1; // "./x" and ".//x" read as "/x" and "//x"
        } else if self.peek() == Some('.') {
            return Err(self.err("expected './' or './/' after '.'"));
        }
        if self.peek() == Some(']') {
            return Err(self.err("empty predicate"));
        }
        self.path(Some(ctx), true)
    }
}

/// Reads one XML document into events, numbering tags with `dict` (names no query uses
/// become [`crate::model::OTHER_TAG`]). `file` names the document in errors. The
/// document is first decoded to UTF-8 from its encoding (see `decode`: UTF-8, UTF-16,
/// the WHATWG encodings; anything else is an error, never a silent non-match) and its
/// DOCTYPE is skipped.
///
/// ```
/// use xml_twig::{io, Event, ProfileSet};
/// # fn main() -> Result<(), xml_twig::XmlError> {
/// let profiles = ProfileSet::compile(&io::parse_query_file("q.txt", "/a/b\n")?)?;
/// let a = profiles.dict.id(b"a");
/// let doc = io::parse_document("d.xml", b"<a>text<zz/></a>", &profiles.dict)?;
/// // <zz> is named by no query: it becomes the OTHER tag; text is not an event.
/// let other = xml_twig::model::OTHER_TAG;
/// let events = [Event::open(a), Event::open(other), Event::close(other), Event::close(a)];
/// assert_eq!(doc.events, events);
/// let err = io::parse_document("d.xml", b"<a>\n<b></a>", &profiles.dict).unwrap_err();
/// assert!(err.to_string().starts_with("d.xml:2:"), "{err}");
/// # Ok(()) }
/// ```
pub fn parse_document(file: &str, xml: &[u8], dict: &TagDict) -> Result<Document, XmlError> {
    parse_document_in_parts(file, xml, dict, 1)
}

/// Text (after decoding) from which [`parse_document_parallel`] cuts a document into
/// parts.
pub const PARALLEL_PARSE_BYTES: usize = 1 << 20;

/// The shortest part [`parse_document_parallel`] cuts.
const PART_BYTES: usize = 1 << 18;

/// [`parse_document`] on all cores (rayon's pool) for a long document: the same
/// document, or the same error (`file:line:column` and words), as the one-thread
/// parser. A document of [`PARALLEL_PARSE_BYTES`] or more is cut into parts of at
/// least 256 KiB ([`parse_document_in_parts`]), a few per thread.
pub fn parse_document_parallel(
    file: &str,
    xml: &[u8],
    dict: &TagDict,
) -> Result<Document, XmlError> {
    let threads = rayon::current_num_threads();
    let parts = if xml.len() < PARALLEL_PARSE_BYTES || threads < 2 {
        1
    } else {
        (4 * threads).min(xml.len() / PART_BYTES).max(1)
    };
    parse_document_in_parts(file, xml, dict, parts)
}

/// [`parse_document`] with the decoded text cut into `parts` parts (1: the one-thread
/// parser) parsed side by side on rayon's pool, then joined. Each cut is just before a
/// start or end tag's `<`, the element boundaries the segment engines cut events at;
/// found by a scan forward from evenly spread offsets. A part is parsed without the
/// elements opened before it: an end tag with no open element in its part is kept (by
/// name) for the join, and so are the elements still open at its end. The join pops
/// and pushes those names in order (each end tag must name the element it closes),
/// counts the elements opened at depth 0 (one root element) and adds the parts' depths.
/// A cut that fell inside a comment, CDATA section or processing instruction leaves
/// its part unterminated, a syntax error there. Whenever a part fails or the join
/// finds anything amiss, the one-thread parser parses the text again, so that errors
/// (and their positions) are its own: the parts only ever speed up a good document.
pub fn parse_document_in_parts(
    file: &str,
    xml: &[u8],
    dict: &TagDict,
    parts: usize,
) -> Result<Document, XmlError> {
    let err_at = |text: &[u8], pos: usize, what: String| {
        let (line, column) = line_col(text, pos);
        XmlError::Xml {
            file: file.to_string(),
            line,
            column,
            what,
        }
    };
    let input_bytes = xml.len();
    let mut text = decode(xml, &err_at)?;
    blank_doctype(&mut text, &err_at)?;
    let xml = text.as_bytes();
    if parts > 1 {
        if let Some(doc) = parse_parts(xml, dict, parts, input_bytes) {
            return Ok(doc);
        }
    }
    let mut reader = Reader::from_reader(xml);
    reader.config_mut().check_end_names = true;
    let mut events = Vec::with_capacity(xml.len() / 8);
    let mut depth = 0u32;
    let mut max_depth = 0u32;
    let mut roots = 0u32;
    let err = |pos: u64, what: String| err_at(xml, pos as usize, what);
    loop {
        let ev = match reader.read_event() {
            Ok(ev) => ev,
            Err(e) => return Err(err(reader.error_position(), e.to_string())),
        };
        match ev {
            XEvent::Start(e) | XEvent::Empty(e) if depth == 0 && roots == 1 => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                let at = reader.buffer_position().saturating_sub(e.len() as u64 + 2);
                return Err(err(
                    at,
                    format!("second root element <{name}>: a document has one root element"),
                ));
            }
            XEvent::Start(e) => {
                events.push(Event::open(dict.id(e.name().as_ref())));
                if depth == 0 {
                    roots += 1;
                }
                depth += 1;
                max_depth = max_depth.max(depth);
            }
            XEvent::Empty(e) => {
                let tag = dict.id(e.name().as_ref());
                events.push(Event::open(tag));
                events.push(Event::close(tag));
                if depth == 0 {
                    roots += 1;
                }
                max_depth = max_depth.max(depth + 1);
            }
            XEvent::End(e) => {
                events.push(Event::close(dict.id(e.name().as_ref())));
                depth -= 1;
            }
            XEvent::Eof => break,
            _ => {}
        }
    }
    if depth != 0 {
        return Err(err(
            xml.len() as u64,
            format!("{depth} element(s) not closed at the end of the document"),
        ));
    }
    if roots == 0 {
        return Err(err(xml.len() as u64, "no root element".to_string()));
    }
    Ok(Document {
        events,
        max_depth,
        bytes: input_bytes,
    })
}

/// `xml` (decoded text) cut into `parts` and parsed side by side, then joined
/// ([`parse_document_in_parts`]); `None` when a part fails or the join finds the
/// document ill formed.
fn parse_parts(xml: &[u8], dict: &TagDict, parts: usize, input_bytes: usize) -> Option<Document> {
    use rayon::prelude::*;
    let cuts = cut_points(xml, parts);
    let parsed: Vec<Option<Part<'_>>> = cuts
        .par_windows(2)
        .map(|w| parse_part(&xml[w[0]..w[1]], dict))
        .collect();
    let mut stack: Vec<&[u8]> = Vec::new();
    let (mut roots, mut max_depth, mut total) = (0u32, 0i64, 0usize);
    for part in &parsed {
        let part = part.as_ref()?;
        let depth = stack.len() as i64;
        for &name in &part.closes {
            if stack.pop()? != name {
                return None;
            }
        }
        if depth + part.min_rel == 0 {
            roots += part.starts_at_min;
        }
        max_depth = max_depth.max(depth + part.max_rel);
        stack.extend_from_slice(&part.opens);
        total += part.events.len();
    }
    if !stack.is_empty() || roots != 1 {
        return None;
    }
    let mut events = Vec::with_capacity(total);
    for part in parsed.into_iter().flatten() {
        events.extend_from_slice(&part.events);
    }
    Some(Document {
        events,
        max_depth: max_depth as u32,
        bytes: input_bytes,
    })
}

/// One part of a document parsed on its own ([`parse_part`]).
struct Part<'a> {
    events: Vec<Event>,
    /// Names of the end tags that close elements opened before the part, in order.
    closes: Vec<&'a [u8]>,
    /// Names of the elements still open at the part's end, outermost first.
    opens: Vec<&'a [u8]>,
    /// Lowest and highest depth reached, relative to the part's start (an empty
    /// element counts one deeper, as in [`parse_document`]).
    min_rel: i64,
    max_rel: i64,
    /// Elements opened at the lowest depth (after it was last lowered): at depth 0 of
    /// the document when the part starts `-min_rel` deep.
    starts_at_min: u32,
}

/// Parses one part; `None` on a syntax error or an end tag naming another element than
/// the one it closes in the part.
fn parse_part<'a>(xml: &'a [u8], dict: &TagDict) -> Option<Part<'a>> {
    let mut reader = Reader::from_reader(xml);
    // End tags are matched here and in the join (the elements they close may lie in
    // earlier parts).
    reader.config_mut().check_end_names = false;
    reader.config_mut().allow_unmatched_ends = true;
    let mut p = Part {
        events: Vec::with_capacity(xml.len() / 8),
        closes: Vec::new(),
        opens: Vec::new(),
        min_rel: 0,
        max_rel: 0,
        starts_at_min: 0,
    };
    let mut rel = 0i64;
    loop {
        match reader.read_event().ok()? {
            XEvent::Start(e) => {
                let name = in_text(xml, e.name().into_inner())?;
                p.starts_at_min += (rel == p.min_rel) as u32;
                p.events.push(Event::open(dict.id(name)));
                p.opens.push(name);
                rel += 1;
                p.max_rel = p.max_rel.max(rel);
            }
            XEvent::Empty(e) => {
                let tag = dict.id(e.name().as_ref());
                p.starts_at_min += (rel == p.min_rel) as u32;
                p.events.push(Event::open(tag));
                p.events.push(Event::close(tag));
                p.max_rel = p.max_rel.max(rel + 1);
            }
            XEvent::End(e) => {
                let name = in_text(xml, e.name().into_inner())?;
                p.events.push(Event::close(dict.id(name)));
                match p.opens.pop() {
                    Some(open) if open != name => return None,
                    Some(_) => {}
                    None => p.closes.push(name),
                }
                rel -= 1;
                if rel < p.min_rel {
                    p.min_rel = rel;
                    p.starts_at_min = 0;
                }
            }
            XEvent::Eof => return Some(p),
            _ => {}
        }
    }
}

/// `name` (a tag name an event borrowed from `xml`) as a slice of `xml` itself, to keep
/// past the event; `None` should it lie elsewhere.
fn in_text<'a>(xml: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let at = (name.as_ptr() as usize).checked_sub(xml.as_ptr() as usize)?;
    xml.get(at..at + name.len())
}

/// `parts + 1` offsets (fewer when parts would be empty) cutting `xml` into parts:
/// 0, then from each of `parts - 1` evenly spread offsets the next `<` that starts a
/// start or end tag (a name's first byte or `/` follows it), then the end.
fn cut_points(xml: &[u8], parts: usize) -> Vec<usize> {
    let n = xml.len();
    let mut cuts = vec![0];
    for i in 1..parts {
        let from = (i * n / parts).max(*cuts.last().unwrap_or(&0) + 1);
        let at = (from..n).find(|&j| {
            xml[j] == b'<'
                && xml.get(j + 1).is_some_and(|&c| {
                    c == b'/' || c == b'_' || c == b':' || c.is_ascii_alphabetic() || c >= 0x80
                })
        });
        match at {
            Some(at) => cuts.push(at),
            None => break,
        }
    }
    cuts.push(n);
    cuts.dedup();
    cuts
}

/// The document as UTF-8 text: decoded from its encoding (XML 1.0 §4.3.3 and Appendix
/// F: a byte-order mark, else the first bytes, else the XML declaration's `encoding`),
/// the byte-order mark removed. UTF-8 (the default) is checked and borrowed; UTF-16 LE
/// and BE (with a byte-order mark, or detected from `<?`) and every encoding of the
/// WHATWG Encoding Standard (ISO-8859-x, windows-125x, KOI8, Shift_JIS, EUC-JP, GBK,
/// Big5, ...: what `encoding_rs`, quick-xml's decoder, reads) are decoded; UTF-32,
/// EBCDIC and unknown labels are refused at line 1, column 1, naming the encoding:
/// a document is never read in the wrong encoding (tag names would silently not match).
fn decode<'a>(
    xml: &'a [u8],
    err: &dyn Fn(&[u8], usize, String) -> XmlError,
) -> Result<Cow<'a, str>, XmlError> {
    let refuse = |what: String| err(b"", 0, what);
    let (encoding, body): (&'static Encoding, &[u8]) = match xml {
        [0x00, 0x00, 0xFE, 0xFF, ..] | [0xFF, 0xFE, 0x00, 0x00, ..] => return Err(refuse(
            "UTF-32 (byte-order mark) is not supported: convert the document to UTF-8 or UTF-16"
                .into(),
        )),
        [0xEF, 0xBB, 0xBF, rest @ ..] => (UTF_8, rest),
        [0xFF, 0xFE, rest @ ..] => (UTF_16LE, rest),
        [0xFE, 0xFF, rest @ ..] => (UTF_16BE, rest),
        [0x3C, 0x00, 0x3F, 0x00, ..] => (UTF_16LE, xml),
        [0x00, 0x3C, 0x00, 0x3F, ..] => (UTF_16BE, xml),
        [0x00, 0x00, 0x00, 0x3C, ..] | [0x3C, 0x00, 0x00, 0x00, ..] => {
            return Err(refuse(
                "UTF-32 is not supported: convert the document to UTF-8 or UTF-16".into(),
            ))
        }
        [0x4C, 0x6F, 0xA7, 0x94, ..] => {
            return Err(refuse(
                "EBCDIC is not supported: convert the document to UTF-8".into(),
            ))
        }
        _ => match declared_encoding(xml) {
            None => (UTF_8, xml),
            Some(label) => match Encoding::for_label(label.as_bytes()) {
                Some(e) if e == UTF_16LE || e == UTF_16BE => {
                    return Err(refuse(format!(
                        "the XML declaration says encoding=\"{label}\", but the document has \
                         no UTF-16 byte-order mark and its first bytes are not UTF-16"
                    )))
                }
                Some(e) if e != REPLACEMENT => (e, xml),
                _ => {
                    return Err(refuse(format!(
                        "encoding \"{label}\" (from the XML declaration) is not supported: \
                         UTF-8, UTF-16 and the encodings of the WHATWG Encoding Standard \
                         (ISO-8859-x, windows-125x, Shift_JIS, EUC-JP, GBK, Big5, ...) are"
                    )))
                }
            },
        },
    };
    if encoding == UTF_8 {
        return match std::str::from_utf8(body) {
            Ok(s) => Ok(Cow::Borrowed(s)),
            Err(e) => Err(err(body, e.valid_up_to(), "not valid UTF-8".into())),
        };
    }
    // An ASCII-compatible encoding (ISO-8859-x, windows-125x, Shift_JIS, ...) decodes
    // ASCII bytes to themselves: a body all ASCII, checked on all cores, is its own text
    // (a document that declares ISO-8859-1 and uses entities for the rest is not copied
    // and decoded on one thread).
    if encoding.is_ascii_compatible() && is_ascii_on_all_cores(body) {
        // SAFETY: every byte of `body` is below 0x80 (checked just above): ASCII, which
        // is valid UTF-8.
        return Ok(Cow::Borrowed(unsafe {
            std::str::from_utf8_unchecked(body)
        }));
    }
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let cap = decoder
        .max_utf8_buffer_length_without_replacement(body.len())
        .unwrap_or(body.len().saturating_mul(3));
    let mut text = String::with_capacity(cap);
    let (result, _) = decoder.decode_to_string_without_replacement(body, &mut text, true);
    match result {
        DecoderResult::InputEmpty => Ok(Cow::Owned(text)),
        DecoderResult::Malformed(..) => Err(err(
            text.as_bytes(),
            text.len(),
            format!("not valid {}", encoding.name()),
        )),
        // The buffer was sized for the worst case; should it be short, say so.
        DecoderResult::OutputFull => Err(refuse(format!(
            "the document could not be decoded from {}",
            encoding.name()
        ))),
    }
}

/// Whether every byte of `bytes` is ASCII, checked by parts of a megabyte on rayon's pool.
fn is_ascii_on_all_cores(bytes: &[u8]) -> bool {
    use rayon::prelude::*;
    bytes.par_chunks(1 << 20).all(<[u8]>::is_ascii)
}

/// The `encoding` of an XML declaration at the very start of an ASCII-compatible
/// document (`<?xml version="1.0" encoding="ISO-8859-1"?>`), if there is one.
fn declared_encoding(xml: &[u8]) -> Option<String> {
    let head = xml.strip_prefix(b"<?xml")?;
    if !head.first().is_some_and(u8::is_ascii_whitespace) {
        return None;
    }
    let end = head.windows(2).position(|w| w == b"?>")?;
    let decl = &head[..end];
    let at = decl.windows(8).position(|w| w == b"encoding")?;
    let rest = decl[at + 8..].trim_ascii_start().strip_prefix(b"=")?;
    let rest = rest.trim_ascii_start();
    let quote = *rest.first().filter(|q| **q == b'"' || **q == b'\'')?;
    let close = rest[1..].iter().position(|&b| b == quote)?;
    Some(String::from_utf8_lossy(&rest[1..1 + close]).into_owned())
}

/// Blanks the document type declaration of the prolog (spaces, line ends kept, so
/// positions do not move): the DOCTYPE is ignored, and quick-xml 0.37 miscounts a `>`
/// inside a comment, processing instruction or literal of the internal subset
/// (`<!DOCTYPE r [<!-- > -->]>`). The subset is scanned as XML 1.0 §2.8 says: quoted
/// literals, comments and processing instructions are skipped whole; the first `]` outside
/// them ends the subset and the next `>` the declaration. An unterminated DOCTYPE is an
/// error at its `<`.
fn blank_doctype(
    text: &mut Cow<'_, str>,
    err: &dyn Fn(&[u8], usize, String) -> XmlError,
) -> Result<(), XmlError> {
    let b = text.as_bytes();
    let find = |from: usize, pat: &[u8]| {
        b.get(from..)
            .and_then(|s| s.windows(pat.len()).position(|w| w == pat))
            .map(|p| from + p)
    };
    // The prolog: white space, the XML declaration, comments and processing instructions.
    let mut i = 0;
    loop {
        while b.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        if b[i..].starts_with(b"<?") {
            match find(i + 2, b"?>") {
                Some(e) => i = e + 2,
                None => return Ok(()),
            }
        } else if b[i..].starts_with(b"<!--") {
            match find(i + 4, b"-->") {
                Some(e) => i = e + 3,
                None => return Ok(()),
            }
        } else {
            break;
        }
    }
    if !b[i..].starts_with(b"<!DOCTYPE") {
        return Ok(());
    }
    let start = i;
    let unclosed = || err(b, start, "the DOCTYPE declaration is not closed".into());
    let mut j = start + 9;
    let mut subset = false;
    let end = loop {
        let Some(&c) = b.get(j) else {
            return Err(unclosed());
        };
        j = match c {
            b'"' | b'\'' => match b[j + 1..].iter().position(|&x| x == c) {
                Some(p) => j + 1 + p + 1,
                None => return Err(unclosed()),
            },
            b'[' if !subset => {
                subset = true;
                j + 1
            }
            b']' if subset => {
                subset = false;
                j + 1
            }
            b'>' if !subset => break j + 1,
            b'<' if subset && b[j..].starts_with(b"<!--") => match find(j + 4, b"-->") {
                Some(e) => e + 3,
                None => return Err(unclosed()),
            },
            b'<' if subset && b[j..].starts_with(b"<?") => match find(j + 2, b"?>") {
                Some(e) => e + 2,
                None => return Err(unclosed()),
            },
            _ => j + 1,
        };
    };
    // One space per character (line ends kept): lines and columns (in characters) of
    // what follows stay those of the document.
    let blanked: String = text[start..end]
        .chars()
        .map(|c| if c == '\n' || c == '\r' { c } else { ' ' })
        .collect::<String>();
    let mut s = std::mem::take(text).into_owned();
    s.replace_range(start..end, &blanked);
    *text = Cow::Owned(s);
    Ok(())
}

/// 1-based line and column (in characters) of byte offset `pos`.
fn line_col(text: &[u8], pos: usize) -> (usize, usize) {
    let pos = pos.min(text.len());
    let before = &text[..pos];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (line, column)
}

/// Files from this size on are mapped by [`read_file`], not read (a smaller one is read:
/// a map costs more system calls than it saves).
pub const MAP_BYTES: u64 = 1 << 20;

/// A file's bytes as [`read_file`] gives them: mapped, or read into memory.
pub enum FileBytes {
    /// A regular file of at least [`MAP_BYTES`], mapped read-only: nothing copied, no
    /// fresh memory cleared for it.
    Mapped(memmap2::Mmap),
    /// A smaller file, standard input, a pipe or a device.
    Read(Vec<u8>),
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m) => m,
            FileBytes::Read(v) => v,
        }
    }
}

impl FileBytes {
    /// The bytes as a vector (a copy of a mapped file).
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            FileBytes::Mapped(m) => m.to_vec(),
            FileBytes::Read(v) => v,
        }
    }
}

/// Reads a file, naming it in the error; `-` reads standard input (named `<stdin>`). A
/// regular file of at least [`MAP_BYTES`] is mapped instead of read.
pub fn read_file(path: &str) -> Result<FileBytes, XmlError> {
    let io = |file: &str| {
        let file = file.to_string();
        move |source| XmlError::Io { file, source }
    };
    if path == "-" {
        let mut v = Vec::new();
        return std::io::Read::read_to_end(&mut std::io::stdin(), &mut v)
            .map(|_| FileBytes::Read(v))
            .map_err(io("<stdin>"));
    }
    let file = std::fs::File::open(path).map_err(io(path))?;
    let meta = file.metadata().map_err(io(path))?;
    if meta.is_file() && meta.len() >= MAP_BYTES {
        // SAFETY: the map is read-only and only read, for as long as the parse that
        // takes it. Another process that changed the file meanwhile would change what
        // is parsed (as a read racing its writer would), and one that truncated it
        // would make the read fault, as for any program that maps its input (ripgrep's
        // choice too).
        let map = unsafe { memmap2::MmapOptions::new().populate().map(&file) };
        return map.map(FileBytes::Mapped).map_err(io(path));
    }
    let mut v = Vec::with_capacity(meta.len() as usize);
    std::io::Read::read_to_end(&mut &file, &mut v).map_err(io(path))?;
    Ok(FileBytes::Read(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_and_issue_examples_parse_to_the_expected_twigs() {
        let q = parse_query("/dblp/article[author][.//year]//title").unwrap();
        assert_eq!(q.len(), 5);
        assert_eq!(q.nodes[1].children, vec![2, 3, 4]);
        assert_eq!(q.nodes[3].axis, Axis::Descendant);
        assert_eq!(q.nodes[4].axis, Axis::Descendant);
        assert_eq!(q.to_string(), "/dblp/article[author][.//year]//title");
        let q = parse_query("/a//c[//d]/e").unwrap();
        assert_eq!(q.to_string(), "/a//c[.//d]/e");
        let q = parse_query("//*[./b/c[d]][/e]").unwrap();
        assert_eq!(q.to_string(), "//*[b/c/d]/e");
        assert_eq!(q.nodes[0].test, NodeTest::Wildcard);
    }

    #[test]
    fn predicate_child_forms_are_equivalent() {
        let a = parse_query("/a[b]").unwrap();
        assert_eq!(parse_query("/a[/b]").unwrap(), a);
        assert_eq!(parse_query("/a[./b]").unwrap(), a);
        assert_eq!(parse_query(" /a [ b ] ").unwrap(), a);
        let d = parse_query("/a[//b]").unwrap();
        assert_eq!(parse_query("/a[.//b]").unwrap(), d);
        assert_eq!(d.nodes[1].axis, Axis::Descendant);
    }

    #[test]
    fn syntax_errors_name_the_column() {
        let e = parse_query("a/b").unwrap_err();
        assert_eq!(e.column, 1);
        let e = parse_query("/a[b").unwrap_err();
        assert_eq!(e.column, 5);
        assert!(e.what.contains("']'"), "{}", e.what);
        let e = parse_query("/a/").unwrap_err();
        assert_eq!(e.column, 4);
        let e = parse_query("/a[]").unwrap_err();
        assert_eq!(e.column, 4);
        let e = parse_query("/a]").unwrap_err();
        assert_eq!(e.column, 3);
        let e = parse_query("///a").unwrap_err();
        assert_eq!(e.column, 3);
    }

    #[test]
    fn query_file_errors_name_file_line_and_column() {
        let e = parse_query_file("q.txt", "/a\n\n/b[c\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "q.txt:3:5: expected ']' to close the predicate, found the end of the line"
        );
        let set = parse_query_file("q.txt", "/a\n\n# comment\n//b\n").unwrap();
        assert_eq!(set.ids, vec![0, 3]);
    }

    /// `/a` and `depth` predicates nested in one another: `/a[a[a...]]`.
    fn nested(depth: usize) -> String {
        format!("/a{}{}", "[a".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn predicate_nesting_deeper_than_the_limit_is_a_syntax_error_naming_line_and_column() {
        // fuzz/regressions/xml_query-1.bin: 10,000 levels overflowed the stack.
        let text = format!("/a\n{}\n", nested(10_000));
        let e = parse_query_file("q.txt", &text).unwrap_err();
        let XmlError::QuerySyntax { line, column, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!(*line, 2);
        // The '[' that opens level MAX_PREDICATE_DEPTH + 1, after "/a" and "[a" x 256.
        assert_eq!(*column, 3 + 2 * MAX_PREDICATE_DEPTH);
        assert_eq!(
            e.to_string(),
            format!("q.txt:2:{column}: predicate nesting deeper than {MAX_PREDICATE_DEPTH}")
        );
        let e = parse_query(&nested(MAX_PREDICATE_DEPTH + 1)).unwrap_err();
        assert_eq!(e.column, 3 + 2 * MAX_PREDICATE_DEPTH);
        // Closed and reopened predicates do not add up.
        let wide = format!(
            "/a{}",
            format!("[{}]", nested(MAX_PREDICATE_DEPTH - 1)).repeat(3)
        );
        assert_eq!(
            parse_query(&wide).unwrap().len(),
            1 + 3 * MAX_PREDICATE_DEPTH
        );
    }

    #[test]
    fn predicates_nested_to_the_limit_parse_print_and_match_on_a_small_stack() {
        // The parser, Display, compile and the brute-force matcher on a thread with half
        // the stack of a test thread (2 MB).
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(|| {
                // `/a[a[a...]/b]/b`: every `a` has a predicate and a next step, so that
                // Display prints the predicates nested as they were written.
                let d = MAX_PREDICATE_DEPTH;
                let text = format!("/a{}{}", "[a".repeat(d), "]/b".repeat(d));
                let q = parse_query(&text).unwrap();
                assert_eq!(q.len(), 1 + 2 * d);
                assert_eq!(q.to_string(), text);
                assert_eq!(parse_query(&q.to_string()).unwrap(), q);
                let set = crate::model::QuerySet::from_queries(vec![q]);
                let profiles = crate::model::ProfileSet::compile(&set).unwrap();
                let deep = format!("{}{}", "<a><b/>".repeat(300), "</a>".repeat(300));
                let doc = parse_document("d.xml", deep.as_bytes(), &profiles.dict).unwrap();
                assert_eq!(crate::brute::filter(&profiles, &doc), vec![0]);
                let shallow = format!("{}{}", "<a><b/>".repeat(200), "</a>".repeat(200));
                let doc = parse_document("d.xml", shallow.as_bytes(), &profiles.dict).unwrap();
                assert_eq!(crate::brute::filter(&profiles, &doc), Vec::<u32>::new());
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn twigs_deeper_than_the_stack_print_and_match_without_recursion() {
        // A path needs no predicate to be deep: Display and the brute-force matcher walk
        // twigs with explicit stacks (the matcher's old recursion went one frame per
        // level of query and document both).
        std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(|| {
                let steps = 4000;
                let text = "/a".repeat(steps);
                let q = parse_query(&text).unwrap();
                assert_eq!(q.to_string(), text);
                let set = crate::model::QuerySet::from_queries(vec![q]);
                let profiles = crate::model::ProfileSet::compile(&set).unwrap();
                let doc = |depth: usize| {
                    let events = (0..depth)
                        .map(|_| Event::open(1))
                        .chain((0..depth).map(|_| Event::close(1)))
                        .collect();
                    crate::model::Document::from_events(events, 0).unwrap()
                };
                assert_eq!(crate::brute::filter(&profiles, &doc(steps)), vec![0]);
                assert_eq!(
                    crate::brute::filter(&profiles, &doc(steps - 1)),
                    Vec::<u32>::new()
                );
                let long = parse_query(&"/a".repeat(100_000)).unwrap();
                assert_eq!(long.to_string().len(), 200_000);
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn queries_over_a_blocks_1024_columns_are_still_reported_as_too_large() {
        // 1024 nodes need 1025 columns (with the dummy root): QueryTooLarge, not a
        // syntax error, whether the nodes are steps or nested predicates.
        let path = "/a".repeat(1024);
        let branches = format!(
            "/a{}",
            format!("[{}]", nested(254)).repeat(4) + &"/a".repeat(3)
        );
        for (text, nodes) in [(path, 1024), (branches, 1 + 4 * 255 + 3)] {
            let set = parse_query_file("q.txt", &format!("/b\n{text}\n")).unwrap();
            assert_eq!(set.queries[1].len(), nodes);
            let profiles = crate::model::ProfileSet::compile(&set).unwrap();
            let e = crate::layout::pack(&profiles, 1024).unwrap_err();
            assert!(
                matches!(e, XmlError::QueryTooLarge { id: 1, columns, max: 1024 } if columns == nodes + 1),
                "{e}"
            );
        }
        let fits = parse_query_file("q.txt", &"/a".repeat(1023)).unwrap();
        let profiles = crate::model::ProfileSet::compile(&fits).unwrap();
        assert_eq!(crate::layout::pack(&profiles, 1024).unwrap().blocks, 1);
    }

    #[test]
    fn documents_become_open_close_events_ignoring_everything_else() {
        let mut dict = TagDict::default();
        let a = dict.insert("a").unwrap();
        let b = dict.insert("b").unwrap();
        let xml = br#"<?xml version="1.0"?><!-- c --><a x="1">text<b/><?pi x?><c><b>t</b></c></a>"#;
        let d = parse_document("d.xml", xml, &dict).unwrap();
        let o = crate::model::OTHER_TAG;
        assert_eq!(
            d.events,
            vec![
                Event::open(a),
                Event::open(b),
                Event::close(b),
                Event::open(o),
                Event::open(b),
                Event::close(b),
                Event::close(o),
                Event::close(a)
            ]
        );
        assert_eq!(d.max_depth, 3);
    }

    #[test]
    fn malformed_documents_report_line_and_column() {
        let dict = TagDict::default();
        let e = parse_document("d.xml", b"<a>\n  <b></c>\n</a>", &dict).unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("d.xml:2:"), "{s}");
        let e = parse_document("d.xml", b"<a><b></b>", &dict).unwrap_err();
        assert!(e.to_string().contains("not closed"), "{e}");
        let e = parse_document("d.xml", b"<a/><b/>", &dict).unwrap_err();
        assert!(e.to_string().contains("second root"), "{e}");
        let e = parse_document("d.xml", b"  ", &dict).unwrap_err();
        assert!(e.to_string().contains("no root"), "{e}");
    }

    /// Each of `docs` parsed in 2 to 64 parts gives what the one-thread parser gives:
    /// the same document, or the same error (file, line, column and words).
    fn parts_agree(dict: &TagDict, docs: &[Vec<u8>]) {
        for (i, xml) in docs.iter().enumerate() {
            let one = parse_document("d.xml", xml, dict).map_err(|e| e.to_string());
            for parts in [2, 3, 7, 64] {
                let cut = parse_document_in_parts("d.xml", xml, dict, parts);
                assert_eq!(
                    cut.map_err(|e| e.to_string()),
                    one,
                    "document {i} in {parts} parts: {}",
                    String::from_utf8_lossy(&xml[..xml.len().min(200)])
                );
            }
        }
    }

    #[test]
    fn a_document_parsed_in_parts_equals_the_one_thread_parse() {
        let mut g = crate::workload::DblpGenerator::new(3);
        let dict = dict_of(&["dblp", "article", "author", "title", "year"]);
        let docs: Vec<Vec<u8>> = (0..3).map(|_| g.document(60_000).into_bytes()).collect();
        let cuts = cut_points(&docs[0], 7);
        assert_eq!(cuts.len(), 8, "cut into 7 parts");
        assert!(cuts[1..7].iter().all(|&c| docs[0][c] == b'<'));
        parts_agree(&dict, &docs);
        // The parts themselves joined (not the one-thread parser after a failure).
        let joined = parse_parts(&docs[0], &dict, 7, docs[0].len()).expect("the parts join");
        assert_eq!(joined, parse_document("d.xml", &docs[0], &dict).unwrap());
        let doc = parse_document_in_parts("d.xml", &docs[0], &dict, 7).unwrap();
        assert!(doc.events.len() > 1000 && doc.max_depth >= 3);
    }

    #[test]
    fn tags_inside_comments_cdata_and_instructions_at_the_cuts_parse_as_one_thread_does() {
        // Markup-looking text everywhere a cut may fall: the parts whose cut lands
        // inside one fail, and the one-thread parser runs.
        let dict = dict_of(&["r", "a", "b"]);
        let mut body = String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE r [<!-- <a> -->]>\n<r>");
        for i in 0..300 {
            match i % 5 {
                0 => body.push_str("<a><!-- <b></a> --></a>"),
                1 => body.push_str("<b><![CDATA[</b><a>]]></b>"),
                2 => body.push_str("<?pi <a></r> ?><a x='1'/>"),
                3 => body.push_str("<a>\n  <b>text &amp; more</b>\n</a>"),
                _ => body.push_str("<b/>"),
            }
        }
        body.push_str("</r>\n<!-- end <r> -->\n");
        parts_agree(&dict, &[body.into_bytes()]);
    }

    #[test]
    fn broken_documents_in_parts_fail_as_the_one_thread_parser_does() {
        let mut g = crate::workload::DblpGenerator::new(9);
        let dict = dict_of(&["dblp", "article", "author", "title"]);
        let good = g.document(20_000).into_bytes();
        let mut broken: Vec<Vec<u8>> = Vec::new();
        // Cut short anywhere, a tag's `>` or `<` lost, an end tag renamed or dropped,
        // an end tag with no element, a second root, garbage.
        for k in 1..12 {
            let at = k * good.len() / 12;
            broken.push(good[..at].to_vec());
            let mut v = good.clone();
            if let Some(j) = v[at..].iter().position(|&b| b == b'>') {
                v.remove(at + j);
            }
            broken.push(v);
            let mut v = good.clone();
            if let Some(j) = v[at..].iter().position(|&b| b == b'<') {
                v.remove(at + j);
            }
            broken.push(v);
            let mut v = good.clone();
            if let Some(j) = v[at..].windows(2).position(|w| w == b"</") {
                v[at + j + 2] = b'z';
            }
            broken.push(v);
            let mut v = good.clone();
            if let Some(j) = v[at..].windows(2).position(|w| w == b"</") {
                let end = v[at + j..].iter().position(|&b| b == b'>').unwrap_or(0);
                v.drain(at + j..=at + j + end);
            }
            broken.push(v);
            let mut v = good.clone();
            v.splice(at..at, b"</zz>".iter().copied());
            broken.push(v);
            let mut v = good.clone();
            v.splice(at..at, b"\x01<&".iter().copied());
            broken.push(v);
        }
        let mut two = good.clone();
        two.extend_from_slice(b"<dblp></dblp>");
        broken.push(two);
        // Most are errors (a lost `>` can merge text into a tag and still parse).
        let errors = broken
            .iter()
            .filter(|b| parse_document("d.xml", b, &dict).is_err())
            .count();
        assert!(
            errors * 4 >= broken.len() * 3,
            "{errors} of {} broken",
            broken.len()
        );
        parts_agree(&dict, &broken);
    }

    fn dict_of(names: &[&str]) -> TagDict {
        let mut d = TagDict::default();
        for n in names {
            d.insert(n).unwrap();
        }
        d
    }

    fn utf16(text: &str, big_endian: bool, bom: bool) -> Vec<u8> {
        let mut v = Vec::new();
        let units = (if bom { "\u{FEFF}" } else { "" })
            .encode_utf16()
            .chain(text.encode_utf16());
        for u in units {
            v.extend_from_slice(&if big_endian {
                u.to_be_bytes()
            } else {
                u.to_le_bytes()
            });
        }
        v
    }

    #[test]
    fn utf16_documents_with_a_byte_order_mark_or_a_utf16_declaration_parse_like_utf8() {
        let dict = dict_of(&["r", "b", "ß"]);
        let body = "\n<r><b/><ß/></r>";
        let text = format!("<?xml version=\"1.0\" encoding=\"UTF-16\"?>{body}");
        let want = parse_document("d.xml", body.as_bytes(), &dict).unwrap();
        assert_eq!(want.events.len(), 6);
        assert!(want
            .events
            .iter()
            .all(|e| e.tag() != crate::model::OTHER_TAG));
        for (be, bom) in [(false, true), (true, true), (false, false), (true, false)] {
            let d = parse_document("d.xml", &utf16(&text, be, bom), &dict)
                .unwrap_or_else(|e| panic!("big endian {be}, bom {bom}: {e}"));
            assert_eq!(d.events, want.events, "big endian {be}, bom {bom}");
        }
    }

    #[test]
    fn latin1_documents_match_non_ascii_tag_names() {
        let dict = dict_of(&["r", "Straße"]);
        let body = b"<r><Stra\xDFe/></r>"; // ß in ISO-8859-1
        let mut xml = b"<?xml version='1.0' encoding='ISO-8859-1'?>".to_vec();
        xml.extend_from_slice(body);
        let d = parse_document("d.xml", &xml, &dict).unwrap();
        let strasse = dict.id("Straße".as_bytes());
        assert_eq!(d.events[1], Event::open(strasse));
        // The same bytes without the declaration are not UTF-8: an error, not a non-match.
        let e = parse_document("d.xml", body, &dict)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "d.xml:1:9: not valid UTF-8");
    }

    #[test]
    fn a_large_file_is_mapped_a_small_one_read_and_both_give_its_bytes() {
        let dir = std::env::temp_dir().join(format!("xml-read-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (len, mapped) in [(MAP_BYTES as usize + 7, true), (100, false)] {
            let path = dir.join(format!("f{len}.xml"));
            let bytes: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            std::fs::write(&path, &bytes).unwrap();
            let got = read_file(path.to_str().unwrap()).unwrap();
            assert_eq!(matches!(got, FileBytes::Mapped(_)), mapped, "{len} bytes");
            assert_eq!(&got[..], &bytes[..], "{len} bytes");
        }
        let e = read_file(dir.join("missing.xml").to_str().unwrap())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("missing.xml"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_all_ascii_document_in_an_ascii_compatible_encoding_is_read_in_place() {
        let dict = dict_of(&["r", "a"]);
        let body = "<r><a>x &#223; y</a><a/></r>";
        let utf8 = parse_document("d.xml", body.as_bytes(), &dict).unwrap();
        let err = |_: &[u8], _: usize, what: String| XmlError::Xml {
            file: "d.xml".into(),
            line: 1,
            column: 1,
            what,
        };
        for label in ["ISO-8859-1", "windows-1252", "Shift_JIS"] {
            let xml = format!("<?xml version='1.0' encoding='{label}'?>{body}");
            let text = decode(xml.as_bytes(), &err).unwrap();
            assert!(matches!(text, Cow::Borrowed(_)), "{label}: not copied");
            let d = parse_document("d.xml", xml.as_bytes(), &dict).unwrap();
            assert_eq!(d.events, utf8.events, "{label}");
        }
        // One byte past ASCII and the document is decoded (0xE9: é in ISO-8859-1).
        let xml = b"<?xml version='1.0' encoding='ISO-8859-1'?><r>\xE9</r>";
        let text = decode(xml, &err).unwrap();
        assert!(matches!(text, Cow::Owned(_)), "decoded");
        assert!(text.contains('é'));
    }

    #[test]
    fn unsupported_encodings_are_refused_naming_them() {
        let dict = TagDict::default();
        let e = parse_document(
            "d.xml",
            b"<?xml version=\"1.0\" encoding=\"EBCDIC-FR\"?><r/>",
            &dict,
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("d.xml:1:1: encoding \"EBCDIC-FR\""), "{e}");
        assert!(e.contains("not supported"), "{e}");
        let utf32: Vec<u8> = "<r/>".bytes().flat_map(|b| [b, 0, 0, 0]).collect();
        let e = parse_document("d.xml", &utf32, &dict)
            .unwrap_err()
            .to_string();
        assert!(e.contains("UTF-32"), "{e}");
        let e = parse_document(
            "d.xml",
            b"<?xml version=\"1.0\" encoding=\"UTF-16\"?><r/>",
            &dict,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("UTF-16"), "{e}");
    }

    #[test]
    fn a_utf8_byte_order_mark_is_skipped() {
        let dict = dict_of(&["r"]);
        let d = parse_document("d.xml", b"\xEF\xBB\xBF<r/>", &dict).unwrap();
        assert_eq!(d.events.len(), 2);
    }

    #[test]
    fn a_doctype_whose_subset_holds_a_gt_in_a_comment_pi_or_literal_parses() {
        let dict = dict_of(&["r"]);
        for xml in [
            "<!DOCTYPE r [<!-- > --><!ELEMENT r ANY>]><r/>",
            "<?xml version=\"1.0\"?>\n<!-- c -->\n<!DOCTYPE r [\n<?pi > ?>\n<!ENTITY e \"a>]b\">\n<!ATTLIST r a CDATA '>'>\n]>\n<r/>",
            "<!DOCTYPE r SYSTEM \"r>.dtd\"><r/>",
            "<!DOCTYPE r PUBLIC '-//x//y' 'z.dtd' [ ]  ><r/>",
        ] {
            let d = parse_document("d.xml", xml.as_bytes(), &dict)
                .unwrap_or_else(|e| panic!("{xml}: {e}"));
            assert_eq!(d.events.len(), 2, "{xml}");
        }
        // Lines after the DOCTYPE keep their numbers in errors.
        let e = parse_document("d.xml", b"<!DOCTYPE r [\n<!-- > -->\n]>\n<r></s>", &dict)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("d.xml:4:"), "{e}");
        let e = parse_document("d.xml", b"\n<!DOCTYPE r [<!-- > --><r/>", &dict)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "d.xml:2:1: the DOCTYPE declaration is not closed");
    }

    #[test]
    fn a_byte_order_mark_before_the_query_file_is_skipped() {
        let set = parse_query_file("q.txt", "\u{FEFF}/a\n").unwrap();
        assert_eq!(set.len(), 1);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]
        /// Any bytes after any of the prefixes the decoder and the DOCTYPE scanner look
        /// at: an answer or an error naming a position inside the document, never a panic.
        #[test]
        fn decoding_and_doctype_scanning_never_panic(
            prefix in proptest::sample::select(vec![
                &b""[..], b"\xEF\xBB\xBF", b"\xFF\xFE", b"\xFE\xFF", b"<\0?\0", b"\0<\0?",
                b"<?xml version='1.0' encoding='", b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>",
                b"<!DOCTYPE r [", b"<!DOCTYPE r [<!--", b"<!DOCTYPE r '", b"<?xml ?><!-- -->\n<!DOCTYPE",
            ]),
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            tail in proptest::sample::select(vec![&b""[..], b"]>", b"-->]><r/>", b"'>", b"\"?><r/>", b"<r/>"]),
        ) {
            let mut xml = prefix.to_vec();
            xml.extend_from_slice(&body);
            xml.extend_from_slice(tail);
            let dict = TagDict::default();
            if let Err(XmlError::Xml { line, column, .. }) = parse_document("d", &xml, &dict) {
                proptest::prop_assert!(line >= 1 && column >= 1);
                proptest::prop_assert!(line <= xml.len() + 1);
            }
        }
    }
}
