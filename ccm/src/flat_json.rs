//! The fast path of the events parser: a byte-level reader of one JSON object whose
//! values are all numbers or strings, `{"temp": 25, "area": "a1"}`, pushed straight into
//! an [`EventBatch`].
//!
//! It reads the common form only: strings without escapes or control characters,
//! integers of at most 18 digits, finite floats, JSON's whitespace. Anything else (an
//! escape, a nested value, a malformed line, a float that overflows) makes it give up
//! with [`None`], leaving the batch as it was, and the caller parses the line with
//! serde_json instead ([`crate::io::event_into_batch`]), which gives the same values
//! for the lines this reader accepts and words the errors. Floats go through `str::parse`,
//! correctly rounded as serde_json's `float_roundtrip` parse is.
//!
//! The same pieces read the common form of a subscriptions line's filter,
//! `[["temp", ">", 30], ["area", "=", "a1"]]` ([`Reader::constraints`]), for ccm's and
//! clcb's subscriptions loaders; there too anything else gives `None` and serde_json
//! parses the line and words its error.

use crate::batch::{Attr, Dictionary, EventBatch, ValueRef, TY_FLOAT, TY_INT, TY_STR};
use crate::model::{Constraint, ModelError, Op};

/// Parses `line` (whole: nothing but whitespace after the object) into one more event of
/// `batch`: `None` when the line is not of the form this reader takes (the batch then
/// as it was); else the result of ending the event (a name given twice is an error,
/// worded by the model, and the batch is as it was).
pub fn event_into_batch(line: &str, batch: &mut EventBatch) -> Option<Result<(), ModelError>> {
    let mut r = Reader::new(line);
    let Some(distinct) = r.object_names(batch).filter(|_| r.at_end()) else {
        batch.abandon_event();
        return None;
    };
    if distinct {
        batch.end_distinct_event();
        return Some(Ok(()));
    }
    Some(batch.end_event())
}

/// Reads the events line at the start of `text` (a window's bytes from a line's start,
/// not checked for UTF-8) into one more event of `batch`, when it is of the form this
/// reader takes and names no attribute twice: the bytes the line takes, its `\n`
/// included (or all of `text`, when the line ends it). Else `None`, the batch as it
/// was: the caller cuts the line at its `\n` and parses it by the checked path
/// ([`crate::io::event_into_batch`]), which words the errors.
///
/// One pass over the line's bytes: the line is not cut first, nor checked for UTF-8 as
/// a whole. A line this reader takes is UTF-8 as the checked path requires, since it
/// holds only ASCII outside its strings and each string holding a byte above 0x7f is
/// checked. Whitespace is JSON's but for `\n`, which ends the line: so the line read
/// is the one the checked path would have read. Names and strings of at most 15 bytes
/// are interned by the two words read after their quote
/// ([`crate::batch::Dictionary::intern_short`]).
#[inline]
pub fn event_line_into_batch(text: &[u8], batch: &mut EventBatch) -> Option<usize> {
    let mut s = Scan { b: text, i: 0 };
    let Some(distinct) = s.object(batch) else {
        batch.abandon_event();
        return None;
    };
    let Some(end) = s.line_end() else {
        batch.abandon_event();
        return None;
    };
    if distinct {
        batch.end_distinct_event();
    } else if batch.end_event().is_err() {
        // A name given twice: the checked path words it (the batch is as it was).
        return None;
    }
    Some(end)
}

/// The cursor of [`event_line_into_batch`]: `b[i..]` is what is left of the window.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scan<'_> {
    /// Skips whitespace within the line: spaces, tabs, `\r` (a `\n` ends the line).
    #[inline(always)]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// After the line's last value: whitespace, then its `\n` or the text's end; the
    /// bytes the line took, its `\n` included (`None`: something else follows).
    #[inline(always)]
    fn line_end(&mut self) -> Option<usize> {
        self.ws();
        match self.b.get(self.i) {
            None => Some(self.i),
            Some(b'\n') => Some(self.i + 1),
            Some(_) => None,
        }
    }

    /// The object's attributes pushed into `batch`'s event being pushed, and whether
    /// their names are known distinct (each of its own bit of 64; else the batch checks).
    #[inline(always)]
    fn object(&mut self, batch: &mut EventBatch) -> Option<bool> {
        self.ws();
        if self.b.get(self.i) != Some(&b'{') {
            return None;
        }
        self.i += 1;
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Some(true);
        }
        // The names seen, a bit each (their ids modulo 64), and the bits seen twice.
        let (mut seen, mut shared) = (0u64, 0u64);
        loop {
            if self.b.get(self.i) != Some(&b'"') {
                return None;
            }
            let name = self.interned(batch.dictionaries_mut().0)?;
            // Each `ws` only where the byte expected is not there (no whitespace is the
            // common form).
            if self.b.get(self.i) != Some(&b':') {
                self.ws();
                if self.b.get(self.i) != Some(&b':') {
                    return None;
                }
            }
            self.i += 1;
            if self.b.get(self.i) == Some(&b' ') {
                self.ws();
            }
            // Two names of one bit are not known distinct (the batch checks them).
            let bit = 1u64 << (name & 63);
            shared |= seen & bit;
            seen |= bit;
            let (ty, val) = match *self.b.get(self.i)? {
                b'"' => (TY_STR, self.interned(batch.dictionaries_mut().1)? as u64),
                b'-' | b'0'..=b'9' => {
                    let (v, end) = number_at(self.b, self.i)?;
                    self.i = end;
                    match v {
                        ValueRef::Int(i) => (TY_INT, i as u64),
                        // Finite: no NaN.
                        ValueRef::Float(x) => (TY_FLOAT, x.to_bits()),
                        ValueRef::Str(_) => return None,
                    }
                }
                _ => return None,
            };
            batch.push_attr(Attr { name, ty, val });
            let mut c = *self.b.get(self.i)?;
            if c != b',' && c != b'}' {
                self.ws();
                c = *self.b.get(self.i)?;
            }
            self.i += 1;
            match c {
                b',' => {
                    if self.b.get(self.i) != Some(&b'"') {
                        self.ws();
                    }
                }
                b'}' => return Some(shared == 0),
                _ => return None,
            }
        }
    }

    /// The string at the cursor (its opening quote) interned in `dict`: without escapes
    /// or control characters, UTF-8. One of at most 15 bytes by the two words after
    /// its quote ([`short_string`]), found by them in the dictionary's cache of keys (a
    /// string found there was checked for UTF-8 when it was first interned: the key
    /// determines the bytes); a longer one scanned eight bytes at a time.
    #[inline(always)]
    fn interned(&mut self, dict: &mut Dictionary) -> Option<u32> {
        let from = self.i + 1;
        let Some(w) = self.b.get(from..from + 16) else {
            return self.interned_long(dict);
        };
        let w: &[u8; 16] = w.try_into().expect("16 bytes");
        match short_string(w) {
            Short::Long => self.interned_long(dict),
            Short::Declined => None,
            Short::Key { len, key, ascii } => {
                self.i = from + len + 1;
                if let Some(id) = dict.cached_short(key) {
                    return Some(id);
                }
                let bytes = &self.b[from..from + len];
                let s = if ascii {
                    // SAFETY: every byte is below 0x80: ASCII, UTF-8.
                    unsafe { std::str::from_utf8_unchecked(bytes) }
                } else {
                    std::str::from_utf8(bytes).ok()?
                };
                Some(dict.intern_short(key, s))
            }
        }
    }

    /// [`Scan::interned`] of a string of more than 15 bytes, or near the window's end.
    #[inline(never)]
    fn interned_long(&mut self, dict: &mut Dictionary) -> Option<u32> {
        let from = self.i + 1;
        let end = plain_string_end(self.b, from)?;
        let s = std::str::from_utf8(&self.b[from..end]).ok()?;
        self.i = end + 1;
        Some(match crate::batch::short_key(s.as_bytes()) {
            Some(key) => dict.intern_short(key, s),
            None => dict.intern(s),
        })
    }
}

/// The pieces of [`event_line_into_batch`] for scanners of other line forms that hold an
/// events object (clcb's events, `{"loc": [x, y], "attrs": {...}}`): a cursor over a
/// window's bytes from a line's start, in one pass, the line not cut first nor checked
/// for UTF-8 as a whole (see [`event_line_into_batch`]). Whitespace is JSON's but for
/// `\n`, which ends the line. Each piece gives `None` where the line leaves the common
/// form; the caller then abandons the event and parses the line by its checked path.
pub struct LineScan<'a>(Scan<'a>);

impl<'a> LineScan<'a> {
    /// A cursor at the start of `text` (a line's first byte).
    #[inline(always)]
    pub fn new(text: &'a [u8]) -> Self {
        LineScan(Scan { b: text, i: 0 })
    }

    /// The next byte after whitespace, not consumed.
    #[inline(always)]
    pub fn peek(&mut self) -> Option<u8> {
        self.0.ws();
        self.0.b.get(self.0.i).copied()
    }

    /// Consumes `c` (after whitespace).
    #[inline(always)]
    pub fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.0.i += 1)
    }

    /// A string's bytes (after whitespace), without escapes or control characters: not
    /// checked for UTF-8, so only to be compared with a key the caller knows.
    #[inline(always)]
    pub fn key(&mut self) -> Option<&'a [u8]> {
        if self.peek()? != b'"' {
            return None;
        }
        let from = self.0.i + 1;
        let end = plain_string_end(self.0.b, from)?;
        self.0.i = end + 1;
        Some(&self.0.b[from..end])
    }

    /// A JSON number as a float (after whitespace), as [`Reader::float`] reads it.
    #[inline(always)]
    pub fn float(&mut self) -> Option<f64> {
        if !matches!(self.peek()?, b'-' | b'0'..=b'9') {
            return None;
        }
        let (v, end) = number_at(self.0.b, self.0.i)?;
        self.0.i = end;
        match v {
            ValueRef::Int(i) => Some(i as f64),
            ValueRef::Float(x) => Some(x),
            ValueRef::Str(_) => None,
        }
    }

    /// An object of numbers and strings (after whitespace), each attribute pushed into
    /// `batch`'s event being pushed as it is read (the caller ends or abandons the
    /// event), as [`event_line_into_batch`] reads a line's; whether its names are
    /// known distinct (else [`EventBatch::end_event`] checks them).
    #[inline(always)]
    pub fn object(&mut self, batch: &mut EventBatch) -> Option<bool> {
        self.0.object(batch)
    }

    /// After the line's last value: whitespace, then its `\n` or the text's end; the
    /// bytes the line took, its `\n` included.
    #[inline(always)]
    pub fn line_end(&mut self) -> Option<usize> {
        self.0.line_end()
    }
}

/// What the 16 bytes after a string's opening quote say of it ([`short_string`]).
enum Short {
    /// It ends within them, `len` (at most 15) bytes long, with its key
    /// ([`crate::batch::short_key`]), and whether they are all ASCII.
    Key {
        len: usize,
        key: (u64, u64),
        ascii: bool,
    },
    /// No quote, backslash nor control character among them: a longer string.
    Long,
    /// A backslash or a control character comes before its closing quote.
    Declined,
}

/// The string whose bytes begin `w` (the 16 bytes after its opening quote): where its
/// first quote, backslash or control character (below 0x20) is and which, its bytes
/// before it kept and the others zeroed into its key. On x86-64 by SSE2 (compares, a
/// mask, the kept bytes by a compare with their places), elsewhere by [`specials`] a
/// word at a time.
#[inline(always)]
fn short_string(w: &[u8; 16]) -> Short {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86-64's baseline; the load reads the 16 bytes of `w`
        // (unaligned).
        unsafe {
            let v = _mm_loadu_si128(w.as_ptr().cast());
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let slash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            // A byte is at most 0x1f when the larger of it and 0x1f is 0x1f.
            let below = _mm_set1_epi8(0x1f);
            let control = _mm_cmpeq_epi8(_mm_max_epu8(v, below), below);
            let special =
                _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, slash), control)) as u32;
            if special == 0 {
                return Short::Long;
            }
            let len = special.trailing_zeros();
            if (_mm_movemask_epi8(quote) as u32 >> len) & 1 == 0 {
                return Short::Declined;
            }
            let places = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            let kept = _mm_and_si128(v, _mm_cmpgt_epi8(_mm_set1_epi8(len as i8), places));
            let x = _mm_cvtsi128_si64(kept) as u64;
            let y = _mm_cvtsi128_si64(_mm_unpackhi_epi64(kept, kept)) as u64;
            Short::Key {
                len: len as usize,
                key: (x, y | (len as u64) << 56),
                ascii: _mm_movemask_epi8(kept) == 0,
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        const HIGH: u64 = 0x8080_8080_8080_8080;
        let x = u64::from_le_bytes(w[..8].try_into().expect("8 bytes"));
        let y = u64::from_le_bytes(w[8..].try_into().expect("8 bytes"));
        let len = match (specials(x), specials(y)) {
            (0, 0) => return Short::Long,
            (0, m) => 8 + (m.trailing_zeros() / 8) as usize,
            (m, _) => (m.trailing_zeros() / 8) as usize,
        };
        if w[len] != b'"' {
            return Short::Declined;
        }
        let low = |k: usize| (1u64 << (8 * k)).wrapping_sub(1);
        let first = if len >= 8 { u64::MAX } else { low(len) };
        let (x, y) = (x & first, y & low(len.saturating_sub(8)));
        Short::Key {
            len,
            key: (x, y | (len as u64) << 56),
            ascii: (x | y) & HIGH == 0,
        }
    }
}

/// Eight bytes (little-endian) with the high bit set in the lowest byte that is a quote,
/// a backslash or a control character (below 0x20), if any (bytes above it may be marked
/// too: the lowest mark is exact). The classic tests for a zero byte, `(v - 0x01..) & !v
/// & 0x80..`, and for a byte below `n`, `(v - n..) & !v & 0x80..`, whose lowest mark no
/// borrow reaches.
#[inline(always)]
fn specials(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    zero(x ^ (ONES * b'"' as u64))
        | zero(x ^ (ONES * b'\\' as u64))
        | (x.wrapping_sub(ONES * 0x20) & !x & HIGH)
}

/// The index of the quote that ends a string whose bytes begin at `from` in `b`, if none
/// of them before it is a backslash or a control character (`None` otherwise, or when
/// `b` ends first): eight bytes at a time ([`specials`]), the last few one at a time.
#[inline(always)]
fn plain_string_end(b: &[u8], from: usize) -> Option<usize> {
    let mut j = from;
    loop {
        if let Some(w) = b.get(j..j + 8) {
            let m = specials(u64::from_le_bytes(w.try_into().expect("8 bytes")));
            if m == 0 {
                j += 8;
                continue;
            }
            let k = j + (m.trailing_zeros() / 8) as usize;
            return (b[k] == b'"').then_some(k);
        }
        match *b.get(j)? {
            b'"' => return Some(j),
            c if c < 0x20 || c == b'\\' => return None,
            _ => j += 1,
        }
    }
}

/// A cursor over one line's bytes: the pieces of the fast path, for readers of lines
/// that hold such an object inside another (clcb's events: `{"loc": [x, y], "attrs":
/// {...}}`) and of subscriptions lines. Each piece gives `None` where the line leaves
/// the common form.
pub struct Reader<'a> {
    /// The line's bytes: UTF-8 (the reader is made from a `&str`).
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `line`.
    pub fn new(line: &'a str) -> Self {
        Reader {
            b: line.as_bytes(),
            i: 0,
        }
    }

    /// Whether only whitespace is left.
    pub fn at_end(&mut self) -> bool {
        self.ws();
        self.i == self.b.len()
    }

    /// The next byte after whitespace, not consumed.
    pub fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            // Every byte above the space is not whitespace: one test for most.
            if c > b' ' || !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            self.i += 1;
        }
    }

    /// Consumes `c` (after whitespace).
    #[inline]
    pub fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }

    /// `{ "name": value, ... }`, each attribute pushed into the event being pushed as it
    /// is read (the caller ends or abandons the event).
    pub fn object(&mut self, batch: &mut EventBatch) -> Option<()> {
        self.object_names(batch).map(|_| ())
    }

    /// [`Reader::object`], and whether its names are known to be distinct: all numbered
    /// below 128 (a batch's first names) and none twice, seen in a mask as they are
    /// read (`false`: not known, [`EventBatch::end_event`] checks).
    fn object_names(&mut self, batch: &mut EventBatch) -> Option<bool> {
        self.eat(b'{')?;
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Some(true);
        }
        let (mut seen, mut distinct) = (0u128, true);
        loop {
            let id = self.name(batch)?;
            self.eat(b':')?;
            self.ws();
            if id < 128 {
                let bit = 1u128 << id;
                distinct &= seen & bit == 0;
                seen |= bit;
            } else {
                distinct = false;
            }
            let value = match *self.b.get(self.i)? {
                b'"' => ValueRef::Str(self.string()?),
                b'-' | b'0'..=b'9' => self.number()?,
                _ => return None,
            };
            batch.push(id, value).ok()?;
            self.ws();
            match *self.b.get(self.i)? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(distinct);
                }
                _ => return None,
            }
        }
    }

    /// An attribute's name (a string, after whitespace) interned in `batch`'s names,
    /// one of at most 7 bytes by its key ([`Reader::string_keyed`]): the names of a
    /// batch are few and short, and each is looked up once per event that has it.
    #[inline(always)]
    fn name(&mut self, batch: &mut EventBatch) -> Option<u32> {
        Some(match self.string_keyed()? {
            (name, Some(key)) => batch.intern_name_word(key, name),
            (name, None) => batch.intern_name(name),
        })
    }

    /// [`Reader::string`], with the key of a string of at most 7 bytes
    /// ([`crate::batch::word_key`]), read from the first eight bytes after its quote:
    /// the string is looked up by it as one word
    /// ([`crate::batch::Dictionary::intern_word`]). A longer string (or one near the
    /// line's end) comes without its key.
    #[inline(always)]
    fn string_keyed(&mut self) -> Option<(&'a str, Option<u64>)> {
        self.ws();
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        let from = self.i + 1;
        if let Some(w) = self.b.get(from..from + 8) {
            let x = u64::from_le_bytes(w.try_into().expect("8 bytes"));
            let m = specials(x);
            if m != 0 {
                // The first special byte is byte `k` (0..=7) of the word.
                let k = (m.trailing_zeros() / 8) as usize;
                if self.b[from + k] != b'"' {
                    return None;
                }
                let key = (x & (1u64 << (8 * k)).wrapping_sub(1)) | (k as u64) << 56;
                self.i = from + k + 1;
                // SAFETY: as in `string`: the bytes between two quotes of a UTF-8 line
                // are whole characters.
                let s = unsafe { std::str::from_utf8_unchecked(&self.b[from..from + k]) };
                return Some((s, Some(key)));
            }
        }
        self.string().map(|s| (s, None))
    }

    /// A string without escapes or control characters (after whitespace).
    #[inline(always)]
    pub fn string(&mut self) -> Option<&'a str> {
        self.ws();
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        let from = self.i + 1;
        let end = plain_string_end(self.b, from)?;
        let s = &self.b[from..end];
        self.i = end + 1;
        // SAFETY: the line is UTF-8 (the reader was made from a `&str`), and a quote is
        // no byte of a multi-byte character, so the bytes between two quotes are whole
        // characters: UTF-8 too.
        Some(unsafe { std::str::from_utf8_unchecked(s) })
    }

    /// A number or a string (after whitespace).
    pub fn scalar(&mut self) -> Option<ValueRef<'a>> {
        match self.peek()? {
            b'"' => self.string().map(ValueRef::Str),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// An integer in `0..=u32::MAX` (after whitespace), as a subscription's or an
    /// interface's id.
    pub fn id(&mut self) -> Option<u32> {
        match self.scalar()? {
            ValueRef::Int(i) => u32::try_from(i).ok(),
            _ => None,
        }
    }

    /// After an item of an array or an object: `,` (then `Some(false)`) or `close` (then
    /// `Some(true)`), after whitespace.
    pub fn next_or_end(&mut self, close: u8) -> Option<bool> {
        let c = self.peek()?;
        self.i += 1;
        match c {
            b',' => Some(false),
            c if c == close => Some(true),
            _ => None,
        }
    }

    /// A filter's constraints, `[[name, operator, value], ...]` (possibly empty), each
    /// checked by [`Constraint::new`]: `None` for anything else (another form, an
    /// unknown operator, a refused constraint).
    pub fn constraints(&mut self) -> Option<Vec<Constraint>> {
        self.eat(b'[')?;
        let mut v = Vec::new();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(v);
        }
        loop {
            self.eat(b'[')?;
            let name = self.string()?;
            self.eat(b',')?;
            let op = Op::parse(self.string()?)?;
            self.eat(b',')?;
            let value = self.scalar()?.to_value();
            self.eat(b']')?;
            v.push(Constraint::new(name, op, value).ok()?);
            if self.next_or_end(b']')? {
                // Exactly as long as the filter: a loader holds millions of them.
                if v.len() < v.capacity() {
                    let mut exact = Vec::with_capacity(v.len());
                    exact.append(&mut v);
                    v = exact;
                }
                return Some(v);
            }
        }
    }

    /// A JSON number as a float (an integer converted as serde_json converts it: to the
    /// nearest `f64`), after whitespace.
    pub fn float(&mut self) -> Option<f64> {
        self.ws();
        match *self.b.get(self.i)? {
            b'-' | b'0'..=b'9' => {}
            _ => return None,
        }
        match self.number()? {
            ValueRef::Int(i) => Some(i as f64),
            ValueRef::Float(x) => Some(x),
            ValueRef::Str(_) => None,
        }
    }

    /// A JSON number: an integer of at most 18 digits, or a finite float.
    fn number(&mut self) -> Option<ValueRef<'a>> {
        let (v, end) = number_at(self.b, self.i)?;
        self.i = end;
        Some(v)
    }
}

/// The JSON number at `b[from..]` (its first byte a `-` or a digit): an integer of at
/// most 18 digits, or a finite float; with where it ends.
#[inline(always)]
fn number_at(b: &[u8], from: usize) -> Option<(ValueRef<'static>, usize)> {
    let neg = b[from] == b'-';
    let digits = from + neg as usize;
    // The integer's value as its digits are read (wrapping: used only for at most 18
    // digits, which fit): up to eight at once from a word, then one at a time.
    let (mut v, mut i, mut more) = (0u64, digits, true);
    if let Some(w) = b.get(digits..digits + 8) {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        let n = leading_digits(w);
        v = digits_value(w, n);
        i += n;
        more = n == 8;
    }
    if more {
        (v, i) = more_digits(b, i, v);
    }
    let int_len = i - digits;
    if int_len == 0 || (int_len > 1 && b[digits] == b'0') {
        return None;
    }
    if !matches!(b.get(i), Some(b'.' | b'e' | b'E')) {
        if int_len > 18 {
            return None;
        }
        // serde_json reads `-0` as the float -0.0.
        let v = v as i64;
        return Some((
            match (neg, v) {
                (true, 0) => ValueRef::Float(-0.0),
                (true, v) => ValueRef::Int(-v),
                (false, v) => ValueRef::Int(v),
            },
            i,
        ));
    }
    float_tail(b, from, i, v, int_len)
}

/// The digits at `b[i..]` read one at a time onto `v` (wrapping: the callers use it
/// only for at most 19 digits, which fit): the value and where the digits end.
#[inline(always)]
fn more_digits(b: &[u8], mut i: usize, mut v: u64) -> (u64, usize) {
    while let Some(&c) = b.get(i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(d as u64);
        i += 1;
    }
    (v, i)
}

/// How many of the eight bytes of `w` (little-endian: its first byte lowest) are ASCII
/// digits before the first that is not (8: all of them). A byte is a digit when its high
/// nibble is 3 both as it is and plus 6 (`0x3a..=0x3f` pass the first test only); the
/// carries of the addition begin at a byte that is not a digit, so the lowest one found
/// is exact.
#[inline(always)]
fn leading_digits(w: u64) -> usize {
    const HIGH_NIBBLES: u64 = 0xf0f0_f0f0_f0f0_f0f0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    let not_digit = ((w & HIGH_NIBBLES) ^ THREES)
        | ((w.wrapping_add(0x0606_0606_0606_0606) & HIGH_NIBBLES) ^ THREES);
    (not_digit.trailing_zeros() / 8) as usize
}

/// The value of the first `n` (at most 8) bytes of `w`, ASCII digits, by three
/// multiplications: the digits moved to the word's top (the bytes below, zero, are
/// leading zeros), then pairs, fours and eights of them combined (D. Lemire, *Faster
/// integer parsing*, 2018, on simdjson's `parse_eight_digits_unrolled`).
#[inline(always)]
fn digits_value(w: u64, n: usize) -> u64 {
    if n == 0 {
        return 0;
    }
    let w = (w << (64 - 8 * n as u32)) & 0x0f0f_0f0f_0f0f_0f0f;
    let w = (w.wrapping_mul(10 << 8 | 1)) >> 8 & 0x00ff_00ff_00ff_00ff;
    let w = (w.wrapping_mul(100 << 16 | 1)) >> 16 & 0x0000_ffff_0000_ffff;
    (w.wrapping_mul(10000 << 32 | 1)) >> 32
}

/// `10^0 ..= 10^22`: the powers of ten an `f64` holds exactly.
const EXACT_POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The float whose text begins at `b[from]` and whose integer part ends at `i`, its
/// `int_len` digits' value `int`: its fraction and exponent read, the digits gathered
/// into one integer as they are. When that integer is at most 2^53 and the decimal
/// exponent within ±22 (the common case: a coordinate of up to 16 digits), both are
/// exact `f64`s and one multiplication or division by the power of ten gives the
/// correctly rounded float (Clinger's fast path, W. D. Clinger, *How to Read Floating
/// Point Numbers Accurately*, PLDI 1990); otherwise the whole text is parsed by
/// `str::parse` (correctly rounded too, as serde_json's `float_roundtrip` parse is).
#[inline(never)]
fn float_tail(
    b: &[u8],
    from: usize,
    mut i: usize,
    int: u64,
    int_len: usize,
) -> Option<(ValueRef<'static>, usize)> {
    // The digits' value (wrapping: used only for at most 19 digits, which fit).
    let mut w = int;
    let mut frac = 0usize;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let at = i;
        (w, i) = more_digits(b, i, w);
        frac = i - at;
        if frac == 0 {
            return None;
        }
    }
    let mut exp = 0i64;
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        let neg = match b.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let at = i;
        while let Some(&c) = b.get(i) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            // Past 10^6 the exponent is far out of the fast path's range: kept there.
            exp = (exp * 10 + d as i64).min(1_000_000);
            i += 1;
        }
        if i == at {
            return None;
        }
        if neg {
            exp = -exp;
        }
    }
    let e10 = exp - frac as i64;
    if int_len + frac <= 19 && w <= 1 << 53 && (-22..=22).contains(&e10) {
        let m = w as f64;
        let x = if e10 < 0 {
            m / EXACT_POW10[e10.unsigned_abs() as usize]
        } else {
            m * EXACT_POW10[e10 as usize]
        };
        let x = if b[from] == b'-' { -x } else { x };
        return Some((ValueRef::Float(x), i));
    }
    let text = std::str::from_utf8(&b[from..i]).ok()?;
    let x: f64 = text.parse().ok()?;
    x.is_finite().then_some((ValueRef::Float(x), i))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names of every length, whether the eight bytes after the quote hold them (read as
    /// one word) or not (a long name, a name at the line's end), are the batch's names:
    /// the events read back as serde_json reads the lines.
    #[test]
    fn names_of_every_length_read_back_as_written() {
        let mut b = EventBatch::new();
        let mut want = Vec::new();
        for len in 0..14 {
            let name: String = "nämé_0123456789".chars().take(len).collect();
            for line in [
                format!("{{\"{name}\":1}}"),
                format!("{{\"{name}\": \"v\", \"x{name}\": 2.5}}"),
                format!("{{\"{name}\":\"a long value of the name {name}\"}}"),
            ] {
                assert!(
                    matches!(event_into_batch(&line, &mut b), Some(Ok(()))),
                    "{line}"
                );
                want.push(crate::io::event_from_line(&line).expect("a good line"));
            }
        }
        assert_eq!(b.to_events(), want);
    }

    /// The scan eight bytes at a time ends a string where a byte-by-byte scan does: at
    /// the first quote (the string), or gives up at the first backslash or control
    /// character, wherever it lies among the words and the tail, after bytes of every
    /// kind (high bytes of UTF-8 characters, 0x7f, 0x20).
    #[test]
    fn strings_end_where_a_byte_by_byte_scan_ends_them() {
        let plain = "aé\u{7f} ~zü".chars().cycle();
        for len in 0..40 {
            let body: String = plain.clone().take(len).collect();
            for special in ['"', '\\', '\n', '\u{1f}'] {
                for at in 0..=body.chars().count() {
                    let mut s: String = body.chars().take(at).collect();
                    s.push(special);
                    s.extend(body.chars().skip(at));
                    let line = format!("\"{s}\" tail");
                    let want = match s
                        .find(['"', '\\'])
                        .into_iter()
                        .chain(s.find(|c: char| c < ' '))
                        .min()
                    {
                        Some(k) if s.as_bytes()[k] == b'"' => Some(&s[..k]),
                        _ => None,
                    };
                    assert_eq!(Reader::new(&line).string(), want, "{line:?}");
                }
            }
        }
    }

    /// The common forms are read here (the batch gains the event); the others are left
    /// to serde_json with the batch untouched. (That both paths agree on every line is
    /// checked by the io module's tests.)
    #[test]
    fn takes_flat_objects_of_plain_scalars_and_declines_the_rest() {
        let mut b = EventBatch::new();
        for line in [
            r#"{"temp": 25, "area": "a1", "x": -2.5e3, "y": 0, "z": -0, "w": 0.5}"#,
            " { } ",
            r#"{"é": "ü", "n": 123456789012345678}"#,
            r#"{"a name longer than twenty-four bytes": "and a value longer than twenty-four bytes, é"}"#,
        ] {
            let before = b.len();
            assert!(
                matches!(event_into_batch(line, &mut b), Some(Ok(()))),
                "{line}"
            );
            assert_eq!(b.len(), before + 1);
        }
        assert_eq!(b.value(&b.attrs_of(0)[4]), ValueRef::Float(-0.0));
        assert!(matches!(
            event_into_batch(r#"{"a": 1, "a": 2}"#, &mut b),
            Some(Err(ModelError::DuplicateAttribute { .. }))
        ));
        let attrs = b.total_attrs();
        for line in [
            r#"{"a": "\n"}"#,
            r#"{"a": null}"#,
            r#"{"a": [1]}"#,
            r#"{"a": 1234567890123456789}"#,
            r#"{"a": 1e400}"#,
            r#"{"a": 01}"#,
            r#"{"a": 1} 2"#,
            r#"{"a" 1}"#,
            "{\"a\": \"x\ty\"}",
            "{\"a\": \"twenty-four bytes and more\ty\"}",
            r#"{"a": "twenty-four bytes and more\"y"}"#,
            r#"{"a": "twenty-four bytes and more, unterminated}"#,
            r#"{"a": "short, unterminated}"#,
        ] {
            assert!(event_into_batch(line, &mut b).is_none(), "{line}");
        }
        assert_eq!((b.len(), b.total_attrs()), (4, attrs));
    }
    /// The digits of a word are counted and valued as a byte-by-byte loop does, next to
    /// bytes of every kind (those on either side of the digits, `0x3a..=0x3f`, which
    /// pass half of the test, and high bytes whose additions carry).
    #[test]
    fn words_of_digits_are_read_as_one_digit_at_a_time() {
        let mut next = crate::io::test_lines::xorshift(0x0123_4567_89ab_cdef);
        let others = [
            0x00u8, b'/', b':', b';', b'?', b'.', b'e', b',', b'}', 0xfa, 0xff,
        ];
        for _ in 0..200_000 {
            let mut w = [0u8; 8];
            for c in &mut w {
                *c = match next(3) {
                    0 => others[next(others.len())],
                    _ => b'0' + next(10) as u8,
                };
            }
            let n = w.iter().take_while(|c| c.is_ascii_digit()).count();
            let v = w[..n].iter().fold(0u64, |v, c| v * 10 + (c - b'0') as u64);
            let word = u64::from_le_bytes(w);
            assert_eq!(leading_digits(word), n, "{w:?}");
            assert_eq!(digits_value(word, n), v, "{w:?}");
        }
    }

    /// What the fast reader makes of a JSON number, as a float (`None`: it leaves the
    /// number to serde_json), against serde_json's correctly rounded parse.
    fn fast_and_serde(text: &str) -> (Option<u64>, Option<u64>) {
        let fast = Reader::new(text).float().map(f64::to_bits);
        let serde = serde_json::from_str::<f64>(text).ok().map(f64::to_bits);
        (fast, serde)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        /// Decimal texts of every length (the fast path's 2^53 and 19 digits on either
        /// side, leading zeros, exponents in and far out of its ±22): the fast reader's
        /// float is serde_json's, bit for bit, or left to it (an integer of more than 18
        /// digits, a float past `f64`'s range).
        #[test]
        fn floats_read_as_serde_json_reads_them(
            text in "-?(0|[1-9][0-9]{0,20})(\\.[0-9]{1,24})?([eE][+-]?[0-9]{1,3})?"
        ) {
            let (fast, serde) = fast_and_serde(&text);
            match fast {
                Some(bits) => proptest::prop_assert_eq!(Some(bits), serde, "{}", text),
                None => {
                    let int = !text.contains(['.', 'e', 'E']);
                    let finite = text.parse::<f64>().is_ok_and(f64::is_finite);
                    proptest::prop_assert!(int || !finite, "declined {}", text);
                }
            }
        }

        /// Every `f64` and every `f32` widened (clcb's coordinates), written as serde_json
        /// writes them and in exponent form, reads back as itself.
        #[test]
        fn written_floats_read_back(bits in proptest::num::u64::ANY, small in proptest::num::u32::ANY) {
            for x in [f64::from_bits(bits), f32::from_bits(small) as f64] {
                if !x.is_finite() {
                    continue;
                }
                for text in [serde_json::to_string(&x).expect("finite"), format!("{x:e}")] {
                    let (fast, serde) = fast_and_serde(&text);
                    proptest::prop_assert_eq!(fast, Some(x.to_bits()), "{}", text);
                    proptest::prop_assert_eq!(serde, Some(x.to_bits()), "{}", text);
                }
            }
        }
    }
}
