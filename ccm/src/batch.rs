//! Beyond the paper: one flat batch of events, the currency between input and engines.
//!
//! A `Vec<Event>` holds every attribute's name and every string behind a pointer of its
//! own; an engine that reads it chases two or three pointers per attribute and hashes
//! every name. An [`EventBatch`] holds the same events in four arrays:
//! - `starts`: per event, where its attributes begin (one more entry than events);
//! - `attrs`: per attribute an [`Attr`] of 16 bytes: the name's id, the type, and the
//!   value (an integer's bits, a float's bits, or a string's id);
//! - the names' [`Dictionary`]: each distinct name once, numbered in order of first
//!   appearance;
//! - the strings' [`Dictionary`]: each distinct string value once, its bytes in one
//!   arena.
//!
//! So an engine translates the dictionaries once per batch (a name's id to its own row,
//! a string's id to its own), not once per attribute, and then reads plain arrays: the
//! GPU engines copy them as they are, the CPU engines index tables by them. An
//! attribute's three fields are kept together rather than in three columns (Apache
//! Arrow's struct-of-arrays layout): every engine reads all three of an attribute at
//! once, and one 16-byte record is one cache line's quarter instead of three scattered
//! reads.
//!
//! The batch is filled by the workload generators ([`crate::workload`]), by the parsers
//! of users' files ([`crate::io`]), or from heap events ([`EventBatch::from_events`]);
//! [`EventBatch::to_events`] gives them back. A batch checks what [`Event::new`]
//! checks: distinct names within an event, no NaN.
//!
//! ```
//! use ccm::batch::{EventBatch, ValueRef};
//! use ccm::{Event, Value};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut b = EventBatch::new();
//! let price = b.intern_name("price");
//! b.push(price, ValueRef::Int(12))?;
//! b.push_named("sym", ValueRef::Str("ACME"))?;
//! b.end_event()?;
//! let e = Event::from_pairs([("price", Value::Int(12)), ("sym", Value::Str("ACME".into()))])?;
//! assert_eq!(b.to_events(), vec![e]);
//! assert_eq!(b.len(), 1);
//! assert_eq!(b.value(&b.attrs_of(0)[1]), ValueRef::Str("ACME"));
//! # Ok(()) }
//! ```

use crate::hash::{FastHasher, ShortKeyMap};
use crate::model::{Attribute, Event, ModelError, Value};
use rayon::prelude::*;
use std::borrow::Borrow;
use std::hash::Hasher;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Type tag of an integer attribute ([`Attr::ty`]); the kernels' tags.
pub const TY_INT: u32 = ccm_kernels::TY_INT as u32;
/// Type tag of a float attribute.
pub const TY_FLOAT: u32 = ccm_kernels::TY_FLOAT as u32;
/// Type tag of a string attribute.
pub const TY_STR: u32 = ccm_kernels::TY_STR as u32;

/// One attribute of a batch: its name's id in [`EventBatch::names`], its type
/// ([`TY_INT`], [`TY_FLOAT`], [`TY_STR`]) and its value: an integer's two's-complement
/// bits, a float's IEEE bits, or a string's id in [`EventBatch::strings`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Attr {
    pub name: u32,
    pub ty: u32,
    pub val: u64,
}

/// A value read from a batch, borrowing its string.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueRef<'a> {
    Int(i64),
    Float(f64),
    Str(&'a str),
}

impl<'a> ValueRef<'a> {
    /// The owned value.
    pub fn to_value(self) -> Value {
        match self {
            ValueRef::Int(i) => Value::Int(i),
            ValueRef::Float(x) => Value::Float(x),
            ValueRef::Str(s) => Value::Str(s.to_string()),
        }
    }
}

impl<'a> From<&'a Value> for ValueRef<'a> {
    fn from(v: &'a Value) -> Self {
        match v {
            Value::Int(i) => ValueRef::Int(*i),
            Value::Float(x) => ValueRef::Float(*x),
            Value::Str(s) => ValueRef::Str(s),
        }
    }
}

/// Distinct strings, numbered from 0 in order of first appearance, their bytes laid end
/// to end in one arena.
///
/// Its look-up map is built on the first look-up ([`Dictionary::intern`],
/// [`Dictionary::get`]): a dictionary merged from parts ([`Dictionary::merge`]) is read
/// by id by every engine, and building a map of every string of a window on one thread
/// would bound a stream parsed on all cores.
#[derive(Clone, Debug, Default)]
pub struct Dictionary {
    map: OnceLock<ShortKeyMap<u32>>,
    /// Per id: offset and length in `bytes`.
    spans: Vec<(u32, u32)>,
    bytes: Vec<u8>,
    /// Ids of strings of at most 15 bytes by their two words ([`short_key`]),
    /// direct-mapped (a slot holds the last string seen there):
    /// [`Dictionary::intern_short`]. Empty until its first use.
    words: Vec<(u64, u64, u32)>,
}

/// Slots of [`Dictionary::intern_short`]'s cache: `1 << WORD_BITS` (12 KiB), in sets of
/// two (a string whose slot another takes is still found in the other).
const WORD_BITS: u32 = 9;
const WORD_SLOTS: usize = 1 << WORD_BITS;

/// A slot of that cache that holds no string: no key has a length byte above 15.
const NO_WORD: u64 = u64::MAX;

/// The key of a string of at most 15 bytes for [`Dictionary::intern_short`]: its first
/// eight bytes as a little-endian word (zero-padded), and its next seven so with its
/// length in the top byte (so two strings share a key only if they are equal); `None`
/// for a longer string. A string of at most 7 bytes has the key `(word_key, 0)` less
/// its length, which is in the second word: `(bytes, len << 56)`.
#[inline(always)]
pub fn short_key(s: &[u8]) -> Option<(u64, u64)> {
    if s.len() > 15 {
        return None;
    }
    let mut w = [0u8; 16];
    w[..s.len()].copy_from_slice(s);
    let a = u64::from_le_bytes(w[..8].try_into().expect("8 bytes"));
    let b = u64::from_le_bytes(w[8..].try_into().expect("8 bytes"));
    Some((a, b | (s.len() as u64) << 56))
}

/// The key of a string of at most 7 bytes for [`Dictionary::intern_word`]: its bytes as
/// a little-endian word, its length in the top byte (so two strings share a key only if
/// they are equal); `None` for a longer string.
#[inline(always)]
pub fn word_key(s: &[u8]) -> Option<u64> {
    if s.len() > 7 {
        return None;
    }
    let mut w = [0u8; 8];
    w[..s.len()].copy_from_slice(s);
    Some(u64::from_le_bytes(w) | (s.len() as u64) << 56)
}

/// Below this many strings in all, [`Dictionary::merge`] interns them on one thread
/// (about a tenth of a millisecond): a window of a stream parsed in 64 parts, each with
/// its own dictionaries of a hundred names and as many strings, merges them faster so
/// than through the five rounds of the parallel merge, each a round of the pool's
/// threads.
const MERGE_ON_ONE_THREAD: usize = 16_384;

impl Dictionary {
    /// The id of `s`, numbering it if it is new.
    #[inline]
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(id) = self.map.get_mut().and_then(|map| map.get(s.as_bytes())) {
            return id;
        }
        self.intern_new(s)
    }

    /// [`Dictionary::intern`] of a string the map does not hold, or of any before the
    /// map is built (out of line: the look-up above is the common case).
    #[inline(never)]
    fn intern_new(&mut self, s: &str) -> u32 {
        if self.map.get_mut().is_none() {
            let built = self.built_map();
            let _ = self.map.set(built);
        }
        let map = self.map.get_mut().expect("the look-up map was built above");
        if let Some(id) = map.get(s.as_bytes()) {
            return id;
        }
        let id = self.spans.len() as u32;
        self.spans.push((self.bytes.len() as u32, s.len() as u32));
        self.bytes.extend_from_slice(s.as_bytes());
        map.insert(s.as_bytes(), id);
        id
    }

    /// [`Dictionary::intern`] of a string of at most 7 bytes given with its key
    /// ([`word_key`]: the caller may have it in hand, as the events' fast reader has):
    /// [`Dictionary::intern_short`].
    #[inline(always)]
    pub fn intern_word(&mut self, key: u64, s: &str) -> u32 {
        debug_assert_eq!(word_key(s.as_bytes()), Some(key));
        const LEN: u64 = 0xff << 56;
        self.intern_short((key & !LEN, key & LEN), s)
    }

    /// [`Dictionary::intern`] of a string of at most 15 bytes given with its key
    /// ([`short_key`]: the events' scanner has it in hand, from the two words it read
    /// after the quote): one look-up in a small cache of keys (two ways), else
    /// `intern`.
    #[inline(always)]
    pub fn intern_short(&mut self, key: (u64, u64), s: &str) -> u32 {
        debug_assert_eq!(short_key(s.as_bytes()), Some(key));
        match self.cached_short(key) {
            Some(id) => id,
            None => self.intern_short_slow(key, s),
        }
    }

    /// The id of the string of at most 15 bytes whose key ([`short_key`]) is `key`, if
    /// the cache of [`Dictionary::intern_short`] holds it (two ways compared).
    #[inline(always)]
    pub fn cached_short(&self, key: (u64, u64)) -> Option<u32> {
        let slot = slot_of_key(key);
        let &[(a0, b0, id0), (a1, b1, id1)] = self.words.get(slot..slot + 2)? else {
            return None;
        };
        // Both ways compared, the id picked without a branch: which way holds a string
        // is as good as random, a branch on it often mispredicted.
        let (first, second) = ((a0, b0) == key, (a1, b1) == key);
        (first | second).then_some(if first { id0 } else { id1 })
    }

    #[inline(never)]
    fn intern_short_slow(&mut self, key: (u64, u64), s: &str) -> u32 {
        let id = self.intern(s);
        self.cache_key(key, id);
        id
    }

    /// Puts `key` first in its set of the cache, the one there second.
    fn cache_key(&mut self, key: (u64, u64), id: u32) {
        if self.words.is_empty() {
            self.words = vec![(0, NO_WORD, 0); WORD_SLOTS];
        }
        let slot = slot_of_key(key);
        self.words[slot + 1] = self.words[slot];
        self.words[slot] = (key.0, key.1, id);
    }

    /// The id of `s`, if it has one.
    #[inline]
    pub fn get(&self, s: &str) -> Option<u32> {
        self.map.get_or_init(|| self.built_map()).get(s.as_bytes())
    }

    /// The look-up map of the strings held.
    fn built_map(&self) -> ShortKeyMap<u32> {
        let mut map = ShortKeyMap::default();
        for (id, s) in self.iter().enumerate() {
            map.insert(s.as_bytes(), id as u32);
        }
        map
    }

    /// The dictionaries `parts` merged as interning their strings one after another
    /// would number them (each distinct string once, in order of first appearance), and
    /// per part, the merged id of each of its ids. On all cores: each part's strings are
    /// bucketed by hash into shards; each shard, on a thread of its own, finds the first
    /// appearance of each of its strings (walking the parts in order); then each part
    /// numbers its first appearances after the earlier parts' and lays their bytes into
    /// the merged arena.
    ///
    /// ```
    /// use ccm::batch::Dictionary;
    /// let (mut a, mut b) = (Dictionary::default(), Dictionary::default());
    /// a.intern("x");
    /// a.intern("y");
    /// b.intern("z");
    /// b.intern("x");
    /// let (merged, ids) = Dictionary::merge(&[&a, &b]);
    /// assert_eq!(merged.iter().collect::<Vec<_>>(), ["x", "y", "z"]);
    /// assert_eq!(ids, [vec![0, 1], vec![2, 0]]);
    /// ```
    pub fn merge(parts: &[&Dictionary]) -> (Dictionary, Vec<Vec<u32>>) {
        let total: usize = parts.iter().map(|d| d.len()).sum();
        let threads = rayon::current_num_threads();
        if total < MERGE_ON_ONE_THREAD || threads == 1 {
            let mut merged = Dictionary::default();
            let ids = parts
                .iter()
                .map(|p| p.iter().map(|s| merged.intern(s)).collect())
                .collect();
            return (merged, ids);
        }
        let shards = (4 * threads).next_power_of_two();
        // Per part, its ids bucketed by shard: `(offsets, ids)`, shard k's ids at
        // `ids[offsets[k]..offsets[k + 1]]`, ascending.
        let buckets: Vec<(Vec<u32>, Vec<u32>)> = parts
            .par_iter()
            .map(|p| {
                let shard: Vec<u32> = p.iter().map(|s| shard_of(s, shards)).collect();
                let mut offsets = vec![0u32; shards + 1];
                for &k in &shard {
                    offsets[k as usize + 1] += 1;
                }
                for k in 0..shards {
                    offsets[k + 1] += offsets[k];
                }
                let mut next = offsets.clone();
                let mut ids = vec![0u32; shard.len()];
                for (i, &k) in shard.iter().enumerate() {
                    ids[next[k as usize] as usize] = i as u32;
                    next[k as usize] += 1;
                }
                (offsets, ids)
            })
            .collect();
        // Per part and id, its string's first appearance: `part << 32 | id`.
        let first: Vec<Vec<AtomicU64>> = parts
            .iter()
            .map(|p| (0..p.len()).map(|_| AtomicU64::new(0)).collect())
            .collect();
        (0..shards).into_par_iter().for_each(|k| {
            let mut seen = ShortKeyMap::<u64>::default();
            for (pi, (p, (offsets, ids))) in parts.iter().zip(&buckets).enumerate() {
                for &i in &ids[offsets[k] as usize..offsets[k + 1] as usize] {
                    let key = p.str_of(i).as_bytes();
                    let here = (pi as u64) << 32 | i as u64;
                    let at = seen.get(key).unwrap_or_else(|| {
                        seen.insert(key, here);
                        here
                    });
                    first[pi][i as usize].store(at, Ordering::Relaxed);
                }
            }
        });
        let is_first = |pi: usize, i: usize| {
            first[pi][i].load(Ordering::Relaxed) == ((pi as u64) << 32 | i as u64)
        };
        // Per part, its first appearances and their bytes; then where each part's go.
        let counts: Vec<(usize, usize)> = parts
            .par_iter()
            .enumerate()
            .map(|(pi, p)| {
                (0..p.len())
                    .filter(|&i| is_first(pi, i))
                    .fold((0, 0), |(n, b), i| (n + 1, b + p.spans[i].1 as usize))
            })
            .collect();
        let (new, new_bytes) = counts.iter().fold((0, 0), |(n, b), c| (n + c.0, b + c.1));
        let mut merged = Dictionary {
            map: OnceLock::new(),
            spans: vec![(0, 0); new],
            bytes: vec![0; new_bytes],
            words: Vec::new(),
        };
        let mut jobs = Vec::with_capacity(parts.len());
        let (mut spans, mut bytes): (&mut [(u32, u32)], &mut [u8]) =
            (&mut merged.spans, &mut merged.bytes);
        let (mut id_base, mut byte_base) = (0usize, 0usize);
        for (pi, &(n, b)) in counts.iter().enumerate() {
            let (my_spans, rest) = spans.split_at_mut(n);
            spans = rest;
            let (my_bytes, rest) = bytes.split_at_mut(b);
            bytes = rest;
            jobs.push((pi, id_base, byte_base, my_spans, my_bytes));
            id_base += n;
            byte_base += b;
        }
        // Per part and id, its merged id if it is a first appearance.
        let own: Vec<Vec<u32>> = jobs
            .into_par_iter()
            .map(|(pi, id_base, byte_base, my_spans, my_bytes)| {
                let p = parts[pi];
                let mut own = vec![u32::MAX; p.len()];
                let (mut n, mut b) = (0usize, 0usize);
                for (i, slot) in own.iter_mut().enumerate() {
                    if is_first(pi, i) {
                        let s = p.str_of(i as u32).as_bytes();
                        my_spans[n] = ((byte_base + b) as u32, s.len() as u32);
                        my_bytes[b..b + s.len()].copy_from_slice(s);
                        *slot = (id_base + n) as u32;
                        n += 1;
                        b += s.len();
                    }
                }
                own
            })
            .collect();
        let ids = (0..parts.len())
            .into_par_iter()
            .map(|pi| {
                first[pi]
                    .iter()
                    .map(|f| {
                        let f = f.load(Ordering::Relaxed);
                        own[(f >> 32) as usize][(f & 0xffff_ffff) as usize]
                    })
                    .collect()
            })
            .collect();
        (merged, ids)
    }

    /// The dictionaries `parts` merged as [`Dictionary::merge`] merges them, when every
    /// part begins with the same `seeded` strings (each was made from one seed,
    /// [`Dictionary::copy_from`]): the seed's strings keep their ids, and only the
    /// parts' own strings after them are interned, one part after another. A window
    /// whose strings are all known from the window before merges so at once, where a
    /// merge interns every part's strings on the window's thread, the others idle.
    fn merge_seeded(parts: &[&Dictionary], seeded: usize) -> (Dictionary, Vec<Vec<u32>>) {
        let Some(first) = parts.first() else {
            return (Dictionary::default(), Vec::new());
        };
        debug_assert!(parts
            .iter()
            .all(|p| p.len() >= seeded && p.spans[..seeded] == first.spans[..seeded]));
        let bytes = first.spans[..seeded]
            .last()
            .map_or(0, |&(o, n)| (o + n) as usize);
        let mut merged = Dictionary {
            map: OnceLock::new(),
            spans: first.spans[..seeded].to_vec(),
            bytes: first.bytes[..bytes].to_vec(),
            words: Vec::new(),
        };
        let ids = parts
            .iter()
            .map(|p| {
                (0..seeded as u32)
                    .chain((seeded..p.len()).map(|i| merged.intern(p.str_of(i as u32))))
                    .collect()
            })
            .collect();
        (merged, ids)
    }

    /// Makes this dictionary a copy of `seed` (its strings, look-up map and cache of
    /// keys), reusing its memory.
    pub fn copy_from(&mut self, seed: &Dictionary) {
        self.spans.clone_from(&seed.spans);
        self.bytes.clone_from(&seed.bytes);
        self.words.clone_from(&seed.words);
        match (seed.map.get(), self.map.get_mut()) {
            (Some(from), Some(map)) => map.clone_from(from),
            (Some(from), None) => {
                let _ = self.map.set(from.clone());
            }
            (None, _) => self.map = OnceLock::new(),
        }
    }

    /// Builds the look-up map and fills the cache of keys with every string of at most
    /// 15 bytes: a dictionary copied into many ([`Dictionary::copy_from`]) finds its
    /// strings in each at once.
    pub fn warm(&mut self) {
        let _ = self.get("");
        for id in 0..self.len() as u32 {
            let (o, n) = self.spans[id as usize];
            let b = &self.bytes[o as usize..(o + n) as usize];
            if let Some(key) = short_key(b) {
                self.cache_key(key, id);
            }
        }
    }

    /// Forgets every string, keeping the memory (the look-up map's too, once built):
    /// a dictionary refilled window after window neither allocates nor grows its map
    /// again.
    pub fn clear(&mut self) {
        self.spans.clear();
        self.bytes.clear();
        self.words.fill((0, NO_WORD, 0));
        if let Some(map) = self.map.get_mut() {
            map.clear();
        }
    }

    /// The string of `id` (which this dictionary gave).
    #[inline]
    pub fn str_of(&self, id: u32) -> &str {
        let (o, n) = self.spans[id as usize];
        let b = &self.bytes[o as usize..(o + n) as usize];
        // SAFETY: the arena holds only whole `&str`s ([`Dictionary::intern`]), and a span
        // covers exactly one of them, so its bytes are UTF-8.
        unsafe { std::str::from_utf8_unchecked(b) }
    }

    /// Per id, the string's offset and length in [`Dictionary::arena`].
    pub fn spans(&self) -> &[(u32, u32)] {
        &self.spans
    }

    /// Every string's bytes, end to end.
    pub fn arena(&self) -> &[u8] {
        &self.bytes
    }

    /// Number of distinct strings.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Every string, by id.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.spans.len() as u32).map(|i| self.str_of(i))
    }

    /// Bytes on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.map.get().map_or(0, ShortKeyMap::heap_bytes)
            + self.spans.capacity() * 8
            + self.bytes.capacity()
            + self.words.capacity() * std::mem::size_of::<(u64, u64, u32)>()
    }
}

/// The slot of a key ([`short_key`]) in [`Dictionary::intern_short`]'s cache.
#[inline(always)]
fn slot_of_key(key: (u64, u64)) -> usize {
    let h = (key.0 ^ key.1.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> (64 - WORD_BITS)) as usize & !1
}

/// The shard of `s` among `shards` (a power of two), by its hash.
fn shard_of(s: &str, shards: usize) -> u32 {
    let mut h = FastHasher::default();
    h.write(s.as_bytes());
    (h.finish() >> 40) as u32 & (shards as u32 - 1)
}

/// Events as flat arrays; see the [module documentation](self).
#[derive(Clone, Debug)]
pub struct EventBatch {
    names: Dictionary,
    strings: Dictionary,
    /// `starts[i] .. starts[i + 1]`: event `i`'s attributes; the last entry is where the
    /// event being pushed begins.
    starts: Vec<u32>,
    attrs: Vec<Attr>,
}

impl Default for EventBatch {
    fn default() -> Self {
        EventBatch::new()
    }
}

impl PartialEq for EventBatch {
    /// Equal when they hold the same events (whatever their dictionaries' numbering).
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && (0..self.len()).all(|i| {
                let (a, b) = (self.attrs_of(i), other.attrs_of(i));
                a.len() == b.len()
                    && a.iter().zip(b).all(|(x, y)| {
                        self.name_of(x) == other.name_of(y) && self.value(x) == other.value(y)
                    })
            })
    }
}

impl EventBatch {
    /// An empty batch.
    pub fn new() -> EventBatch {
        EventBatch::with_capacity(0, 0)
    }

    /// An empty batch with room for `events` events of `attrs` attributes in all.
    pub fn with_capacity(events: usize, attrs: usize) -> EventBatch {
        let mut starts = Vec::with_capacity(events + 1);
        starts.push(0);
        EventBatch {
            names: Dictionary::default(),
            strings: Dictionary::default(),
            starts,
            attrs: Vec::with_capacity(attrs),
        }
    }

    /// The batch of `events`, built on all cores (parts of a few thousand events each,
    /// then appended in order).
    pub fn from_events(events: &[Event]) -> EventBatch {
        const PART: usize = 4096;
        if events.len() <= PART {
            let mut b = EventBatch::with_capacity(events.len(), attrs_of(events));
            for e in events {
                b.push_event(e);
            }
            return b;
        }
        let parts: Vec<EventBatch> = events
            .par_chunks(PART)
            .map(EventBatch::from_events)
            .collect();
        EventBatch::concat(&parts)
    }

    /// The events of `parts`, in order, as one batch: their dictionaries merged (one
    /// after another, each distinct name and string once), then their attributes
    /// renumbered on all cores, each part into its own place. How a batch parsed or
    /// built in parts on all cores becomes one.
    pub fn concat<B: Borrow<EventBatch> + Sync>(parts: &[B]) -> EventBatch {
        let mut b = EventBatch::new();
        b.concat_into(parts);
        b
    }

    /// [`EventBatch::concat`] into this batch, emptied first ([`EventBatch::reset`]):
    /// its arrays' memory reused (a stream's windows, one after another, then write
    /// into memory already theirs instead of pages the kernel must first clear).
    pub fn concat_into<B: Borrow<EventBatch> + Sync>(&mut self, parts: &[B]) {
        self.concat_seeded_into(parts, None);
    }

    /// [`EventBatch::concat_into`] of parts that each began from `seed`
    /// ([`EventBatch::reset_to`]; `None`: from nothing): the seed's names and strings
    /// keep their ids, and a part that added none of its own has its attributes copied
    /// as they are.
    pub fn concat_seeded_into<B: Borrow<EventBatch> + Sync>(
        &mut self,
        parts: &[B],
        seed: Option<&Seed>,
    ) {
        let parts: Vec<&EventBatch> = parts.iter().map(Borrow::borrow).collect();
        let events: usize = parts.iter().map(|p| p.len()).sum();
        let attrs: usize = parts.iter().map(|p| p.total_attrs()).sum();
        let b = self;
        b.reset();
        b.starts.reserve(events);
        b.attrs.reserve(attrs);
        // Each part's names and strings in the merged numbering (the two side by side:
        // a window's are merged on one thread each, see `MERGE_ON_ONE_THREAD`).
        let merge = |dicts: Vec<&Dictionary>, seeded: Option<usize>| match seeded {
            Some(n) => Dictionary::merge_seeded(&dicts, n),
            None => Dictionary::merge(&dicts),
        };
        let seeded = seed.map(|s| (s.names.len(), s.strings.len()));
        let ((names, name_ids), (strings, string_ids)) = rayon::join(
            || {
                merge(
                    parts.iter().map(|p| &p.names).collect(),
                    seeded.map(|s| s.0),
                )
            },
            || {
                merge(
                    parts.iter().map(|p| &p.strings).collect(),
                    seeded.map(|s| s.1),
                )
            },
        );
        (b.names, b.strings) = (names, strings);
        let maps: Vec<(Vec<u32>, Vec<u32>)> = name_ids.into_iter().zip(string_ids).collect();
        // Each part's starts and attributes written straight into their place (not
        // zeroed first: a pass over the whole window on this thread).
        let mut rest = &mut b.attrs.spare_capacity_mut()[..attrs];
        let mut starts = &mut b.starts.spare_capacity_mut()[..events];
        let mut jobs = Vec::with_capacity(parts.len());
        let mut base = 0u32;
        for (p, m) in parts.iter().zip(&maps) {
            let (mine, tail) = rest.split_at_mut(p.total_attrs());
            rest = tail;
            let (my_starts, tail) = starts.split_at_mut(p.len());
            starts = tail;
            jobs.push((p, m, mine, my_starts, base));
            base += p.total_attrs() as u32;
        }
        jobs.into_par_iter()
            .for_each(|(p, (names, strings), out, starts, base)| {
                for (o, &s) in starts.iter_mut().zip(&p.starts[1..]) {
                    o.write(base + s);
                }
                // Only the seed's names and strings: their ids are the merged ones.
                let same = seeded.is_some_and(|(n, s)| p.names.len() == n && p.strings.len() == s);
                if same {
                    // SAFETY: `out` is as long as the part's attributes (its slice of the
                    // window's, above), and `MaybeUninit<Attr>` has `Attr`'s layout.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            p.attrs().as_ptr(),
                            out.as_mut_ptr().cast::<Attr>(),
                            out.len(),
                        )
                    };
                    return;
                }
                for (o, a) in out.iter_mut().zip(p.attrs()) {
                    o.write(renumbered(a, names, strings));
                }
            });
        // SAFETY: the capacities are at least `attrs` and `1 + events` (`reserve` above
        // on vectors of none and of one), and the parts' slices cover the first `attrs`
        // and the `events` after the first slots exactly (their lengths sum to them),
        // each slot written once by the loop above (a part's slices are as long as its
        // attributes and its events).
        unsafe {
            b.starts.set_len(1 + events);
            b.attrs.set_len(attrs);
        }
    }

    /// Number of (complete) events.
    #[inline]
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Attributes of all complete events.
    #[inline]
    pub fn total_attrs(&self) -> usize {
        self.starts[self.len()] as usize
    }

    /// Event `i`'s attributes.
    #[inline]
    pub fn attrs_of(&self, i: usize) -> &[Attr] {
        &self.attrs[self.starts[i] as usize..self.starts[i + 1] as usize]
    }

    /// Where the attributes of `events` lie in [`EventBatch::attrs`].
    #[inline]
    pub fn attr_range(&self, events: Range<usize>) -> Range<usize> {
        self.starts[events.start] as usize..self.starts[events.end] as usize
    }

    /// Every complete event's attributes, event after event.
    #[inline]
    pub fn attrs(&self) -> &[Attr] {
        &self.attrs[..self.total_attrs()]
    }

    /// Per event, where its attributes begin in [`EventBatch::attrs`], then their
    /// total: `len() + 1` entries.
    #[inline]
    pub fn starts(&self) -> &[u32] {
        &self.starts
    }

    /// The names' dictionary: [`Attr::name`] is an id in it.
    #[inline]
    pub fn names(&self) -> &Dictionary {
        &self.names
    }

    /// The strings' dictionary: a string attribute's [`Attr::val`] is an id in it.
    #[inline]
    pub fn strings(&self) -> &Dictionary {
        &self.strings
    }

    /// The name of `a`.
    #[inline]
    pub fn name_of(&self, a: &Attr) -> &str {
        self.names.str_of(a.name)
    }

    /// The value of `a`.
    #[inline]
    pub fn value(&self, a: &Attr) -> ValueRef<'_> {
        match a.ty {
            TY_INT => ValueRef::Int(a.val as i64),
            TY_FLOAT => ValueRef::Float(f64::from_bits(a.val)),
            _ => ValueRef::Str(self.strings.str_of(a.val as u32)),
        }
    }

    /// The id of `name`, numbering it if it is new (for [`EventBatch::push`]).
    #[inline]
    pub fn intern_name(&mut self, name: &str) -> u32 {
        self.names.intern(name)
    }

    /// [`EventBatch::intern_name`] of a name of at most 7 bytes given with its key
    /// ([`word_key`]), by [`Dictionary::intern_word`].
    #[inline(always)]
    pub(crate) fn intern_name_word(&mut self, key: u64, name: &str) -> u32 {
        self.names.intern_word(key, name)
    }

    /// Adds an attribute to the event being pushed; `name` is an id from
    /// [`EventBatch::intern_name`]. A NaN is refused (and nothing added).
    #[inline]
    pub fn push(&mut self, name: u32, value: ValueRef<'_>) -> Result<(), ModelError> {
        let (ty, val) = match value {
            ValueRef::Int(i) => (TY_INT, i as u64),
            ValueRef::Float(x) => {
                if x.is_nan() {
                    return Err(ModelError::NaN {
                        name: self.names.str_of(name).to_string(),
                    });
                }
                (TY_FLOAT, x.to_bits())
            }
            ValueRef::Str(s) => (TY_STR, self.strings.intern(s) as u64),
        };
        self.attrs.push(Attr { name, ty, val });
        Ok(())
    }

    /// Adds an attribute already made (its name and string ids from this batch's
    /// dictionaries, not a NaN) to the event being pushed: the events' scanner's push.
    #[inline(always)]
    pub(crate) fn push_attr(&mut self, a: Attr) {
        self.attrs.push(a);
    }

    /// The names' and the strings' dictionaries, to intern into.
    #[inline(always)]
    pub(crate) fn dictionaries_mut(&mut self) -> (&mut Dictionary, &mut Dictionary) {
        (&mut self.names, &mut self.strings)
    }

    /// [`EventBatch::push`] by name.
    pub fn push_named(&mut self, name: &str, value: ValueRef<'_>) -> Result<(), ModelError> {
        let id = self.intern_name(name);
        self.push(id, value)
    }

    /// Ends the event being pushed: it becomes event `len()`. An event with two
    /// attributes of one name is refused and its attributes dropped (the batch is as it
    /// was before the event's first push).
    pub fn end_event(&mut self) -> Result<(), ModelError> {
        let from = self.starts[self.len()] as usize;
        if let Some(name) = repeated_name(&self.attrs[from..]) {
            let name = self.names.str_of(name).to_string();
            self.attrs.truncate(from);
            return Err(ModelError::DuplicateAttribute { name });
        }
        self.starts.push(self.attrs.len() as u32);
        Ok(())
    }

    /// [`EventBatch::end_event`] of an event whose names the caller knows to be
    /// distinct (the fast reader, [`crate::flat_json`], sees them as it reads).
    #[inline]
    pub(crate) fn end_distinct_event(&mut self) {
        self.starts.push(self.attrs.len() as u32);
    }

    /// Ends an event read by [`crate::flat_json::LineScan::object`]: known `distinct`
    /// (as the scan says), it is ended without the check of its names, else by
    /// [`EventBatch::end_event`].
    #[inline]
    pub fn end_scanned_event(&mut self, distinct: bool) -> Result<(), ModelError> {
        if distinct {
            self.end_distinct_event();
            return Ok(());
        }
        self.end_event()
    }

    /// Drops the attributes pushed since the last complete event.
    pub fn abandon_event(&mut self) {
        let from = self.starts[self.len()] as usize;
        self.attrs.truncate(from);
    }

    /// Adds a (checked) event.
    pub fn push_event(&mut self, e: &Event) {
        for a in e.attributes() {
            let id = self.intern_name(&a.name);
            let (ty, val) = match &a.value {
                Value::Int(i) => (TY_INT, *i as u64),
                Value::Float(x) => (TY_FLOAT, x.to_bits()),
                Value::Str(s) => (TY_STR, self.strings.intern(s) as u64),
            };
            self.attrs.push(Attr { name: id, ty, val });
        }
        self.starts.push(self.attrs.len() as u32);
    }

    /// Appends `other`'s events, renumbering its names and strings into this batch's
    /// dictionaries (a pass over `other`'s dictionaries, then one over its attributes).
    pub fn append(&mut self, other: &EventBatch) {
        let names: Vec<u32> = other.names.iter().map(|n| self.names.intern(n)).collect();
        let strings: Vec<u32> = other
            .strings
            .iter()
            .map(|s| self.strings.intern(s))
            .collect();
        self.abandon_event();
        let base = self.attrs.len() as u32;
        self.attrs.extend(
            other
                .attrs()
                .iter()
                .map(|a| renumbered(a, &names, &strings)),
        );
        self.starts
            .extend(other.starts[1..].iter().map(|&s| base + s));
    }

    /// A batch of `n` events: this one's, repeated end to end as often as needed (with
    /// its dictionaries, so the same ids): a long stream drawn from a workload's events.
    /// Empty when this batch is. Panics when the attributes would pass `u32::MAX`.
    pub fn cycled(&self, n: usize) -> EventBatch {
        let mut b = EventBatch {
            names: self.names.clone(),
            strings: self.strings.clone(),
            starts: Vec::with_capacity(n + 1),
            attrs: Vec::new(),
        };
        b.starts.push(0);
        while !self.is_empty() && b.len() < n {
            let take = (n - b.len()).min(self.len());
            let base = b.attrs.len() as u32;
            base.checked_add(self.starts[take])
                .expect("at most u32::MAX attributes");
            b.attrs
                .extend_from_slice(&self.attrs[self.attr_range(0..take)]);
            b.starts
                .extend(self.starts[1..=take].iter().map(|&s| base + s));
        }
        b
    }

    /// Removes every event, keeping the names' dictionary (its ids stay valid, so an
    /// engine's translation of them can be kept) and the memory; the strings'
    /// dictionary is emptied (a stream of windows whose strings are mostly new would
    /// otherwise grow it without end).
    pub fn clear(&mut self) {
        self.starts.truncate(1);
        self.attrs.clear();
        self.strings = Dictionary::default();
    }

    /// The batch's two dictionaries (warmed: [`Dictionary::warm`]), for batches to
    /// begin from ([`EventBatch::reset_to`]).
    pub fn seed(&self) -> Seed {
        let mut seed = Seed {
            names: self.names.clone(),
            strings: self.strings.clone(),
        };
        seed.names.warm();
        seed.strings.warm();
        seed
    }

    /// Removes every event, keeping the arrays' memory, and makes the dictionaries
    /// copies of `seed`'s: the batch is as [`EventBatch::new`] makes it after
    /// interning the seed's names and strings.
    pub fn reset_to(&mut self, seed: &Seed) {
        self.starts.truncate(1);
        self.attrs.clear();
        self.names.copy_from(&seed.names);
        self.strings.copy_from(&seed.strings);
    }

    /// Removes every event and both dictionaries, keeping the arrays' memory: the batch
    /// is as [`EventBatch::new`] makes it, with room.
    pub fn reset(&mut self) {
        self.starts.truncate(1);
        self.attrs.clear();
        self.names.clear();
        self.strings.clear();
    }

    /// Event `i` as a heap [`Event`].
    pub fn event(&self, i: usize) -> Event {
        let attrs = self
            .attrs_of(i)
            .iter()
            .map(|a| Attribute {
                name: self.name_of(a).to_string(),
                value: self.value(a).to_value(),
            })
            .collect();
        Event::new(attrs).expect("a batch holds only checked events")
    }

    /// Every event as a heap [`Event`], on all cores.
    pub fn to_events(&self) -> Vec<Event> {
        (0..self.len())
            .into_par_iter()
            .map(|i| self.event(i))
            .collect()
    }

    /// Bytes on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.names.heap_bytes()
            + self.strings.heap_bytes()
            + self.starts.capacity() * 4
            + self.attrs.capacity() * std::mem::size_of::<Attr>()
    }
}

impl crate::text::Refill for EventBatch {
    fn reset(&mut self) {
        EventBatch::reset(self);
    }
    fn reset_to(&mut self, seed: &Seed) {
        EventBatch::reset_to(self, seed);
    }
}

/// A batch's names and strings, that the batches of a stream's next window begin from
/// ([`EventBatch::seed`], [`EventBatch::reset_to`]): the parts of a window parsed on all
/// cores then number the strings they share alike, and are joined with no merge of
/// their dictionaries nor renumbering of their attributes
/// ([`EventBatch::concat_seeded_into`]).
#[derive(Clone, Debug, Default)]
pub struct Seed {
    names: Dictionary,
    strings: Dictionary,
}

impl Seed {
    /// Names and strings in all.
    pub fn len(&self) -> usize {
        self.names.len() + self.strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The seed ([`Seed`]) a stream's parser hands from a window to the next, in a `static`
/// (one per kind of stream): the last window's names and strings, when they are few (a
/// stream whose strings are mostly new would otherwise carry them from window to window).
pub struct SeedSlot(std::sync::Mutex<Option<std::sync::Arc<Seed>>>);

/// Most names and strings a window hands on to the next ([`SeedSlot::hand_on`]).
const SEED_MAX: usize = 4096;

impl SeedSlot {
    /// No seed yet.
    pub const fn new() -> SeedSlot {
        SeedSlot(std::sync::Mutex::new(None))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<std::sync::Arc<Seed>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The seed the next window's parts begin from, if any.
    pub fn current(&self) -> Option<std::sync::Arc<Seed>> {
        self.lock().clone()
    }

    /// Makes `window`'s names and strings the next window's seed, when they are at most
    /// `SEED_MAX`; else the next window begins from nothing.
    pub fn hand_on(&self, window: &EventBatch) {
        let next = (window.names().len() + window.strings().len() <= SEED_MAX)
            .then(|| std::sync::Arc::new(window.seed()));
        *self.lock() = next;
    }
}

impl Default for SeedSlot {
    fn default() -> SeedSlot {
        SeedSlot::new()
    }
}

/// `a` with its name and string renumbered by `names` and `strings`.
#[inline]
fn renumbered(a: &Attr, names: &[u32], strings: &[u32]) -> Attr {
    Attr {
        name: names[a.name as usize],
        ty: a.ty,
        val: if a.ty == TY_STR {
            strings[a.val as usize] as u64
        } else {
            a.val
        },
    }
}

/// Attributes of `events`.
fn attrs_of(events: &[Event]) -> usize {
    events.iter().map(|e| e.len()).sum()
}

/// A name two of `attrs` share, if any.
fn repeated_name(attrs: &[Attr]) -> Option<u32> {
    if attrs.len() <= 16 {
        for (i, a) in attrs.iter().enumerate() {
            if attrs[..i].iter().any(|b| b.name == a.name) {
                return Some(a.name);
            }
        }
        return None;
    }
    let mut names: Vec<u32> = attrs.iter().map(|a| a.name).collect();
    names.sort_unstable();
    names.windows(2).find(|w| w[0] == w[1]).map(|w| w[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{generate, Params};

    /// Merging dictionaries on all cores numbers every string as interning them one
    /// after another does: each distinct string once, in order of first appearance,
    /// with each part's ids mapped to the merged ones (long strings and the empty one
    /// included; enough strings that the merge runs on all cores).
    #[test]
    fn a_merge_numbers_strings_as_interning_them_in_order_does() {
        for threads in [1, 2, 5] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a pool");
            let parts: Vec<Dictionary> = (0..7u64)
                .map(|p| {
                    let mut d = Dictionary::default();
                    for i in 0..(900 + 37 * p) {
                        // Strings shared between parts, and some of over 16 bytes.
                        let k = (i * 7919 + p * 104_729) % 3000;
                        let s = if k % 5 == 0 {
                            format!("a long string number {k}")
                        } else {
                            format!("s{k}")
                        };
                        d.intern(if k == 17 { "" } else { &s });
                    }
                    d
                })
                .collect();
            let refs: Vec<&Dictionary> = parts.iter().collect();
            let (merged, ids) = pool.install(|| Dictionary::merge(&refs));
            let mut want = Dictionary::default();
            let want_ids: Vec<Vec<u32>> = parts
                .iter()
                .map(|p| p.iter().map(|s| want.intern(s)).collect())
                .collect();
            assert_eq!(
                merged.iter().collect::<Vec<_>>(),
                want.iter().collect::<Vec<_>>(),
                "{threads} threads"
            );
            assert_eq!(ids, want_ids, "{threads} threads");
            let mut merged = merged;
            assert_eq!(merged.get("s1"), want.get("s1"));
            let n = merged.len() as u32;
            assert_eq!(merged.intern("a string no part has"), n);
        }
    }

    /// Interning by key ([`Dictionary::intern_word`], [`Dictionary::intern_short`])
    /// gives the ids `intern` gives: for every length up to 15 (the empty string and
    /// multi-byte characters included), for more strings than the cache has slots (so
    /// that strings share slots), after strings interned without their key, and after a
    /// clear.
    #[test]
    fn interning_by_word_gives_the_ids_interning_gives() {
        let strings: Vec<String> = (0..3000u32)
            .map(|i| match i % 6 {
                0 => format!("{}", i % 9_999_999),
                1 => format!("é{}", i % 99_999),
                2 => "abcdefg"[..(i % 8) as usize].to_string(),
                3 => "abcdefghijklmnop"[..(i % 16) as usize].to_string(),
                4 => format!("é{}", i * 7919),
                _ => format!("n{}", i % 500),
            })
            .collect();
        let mut d = Dictionary::default();
        for round in 0..2 {
            let mut want = Dictionary::default();
            d.intern("a longer string, interned as it is");
            want.intern("a longer string, interned as it is");
            for (i, s) in strings.iter().chain(strings.iter().rev()).enumerate() {
                let id = match word_key(s.as_bytes()) {
                    Some(key) if i % 2 == 0 => d.intern_word(key, s),
                    _ => d.intern_short(short_key(s.as_bytes()).expect("at most 15 bytes"), s),
                };
                assert_eq!(id, want.intern(s), "{s:?}, round {round}");
            }
            assert_eq!(
                d.iter().collect::<Vec<_>>(),
                want.iter().collect::<Vec<_>>()
            );
            d.clear();
        }
        assert_eq!(word_key(b"12345678"), None);
        assert_eq!(short_key(b"0123456789abcdef"), None);
        assert_ne!(short_key(b"12345678"), short_key(b"12345678\0"));
        assert_ne!(word_key(b"a"), word_key(b"a\0"));
    }

    /// A cleared dictionary (its map kept) knows none of its old strings, numbers the
    /// next from 0 again, and finds them, short and long.
    #[test]
    fn a_cleared_dictionary_forgets_its_strings() {
        let mut d = Dictionary::default();
        for i in 0..100 {
            d.intern(&format!("old string {i}"));
            d.intern(&format!("o{i}"));
        }
        d.clear();
        assert!(d.is_empty() && d.arena().is_empty());
        assert_eq!(d.get("o1"), None);
        assert_eq!(d.get("old string 1"), None);
        assert_eq!(d.intern("o2"), 0);
        assert_eq!(d.intern("a long new string"), 1);
        assert_eq!(d.intern("o2"), 0);
        assert_eq!(d.get("a long new string"), Some(1));
        assert_eq!(d.iter().collect::<Vec<_>>(), ["o2", "a long new string"]);
    }

    fn small() -> Vec<Event> {
        let p = Params {
            events: 10_000,
            interfaces: 2,
            filters_per_interface: (1, 2),
            ..Params::default()
        };
        generate(&p, 3).expect("valid").events
    }

    #[test]
    fn events_round_trip_through_a_batch_built_in_parts() {
        let events = small();
        let b = EventBatch::from_events(&events);
        assert_eq!(b.len(), events.len());
        assert_eq!(b.to_events(), events);
        // The parts' dictionaries were merged: each name once.
        let mut names: Vec<&str> = b.names().iter().collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), b.names().len());
    }

    #[test]
    fn a_repeated_name_or_a_nan_is_refused_and_the_batch_left_as_it_was() {
        let mut b = EventBatch::new();
        b.push_named("a", ValueRef::Int(1)).unwrap();
        b.end_event().unwrap();
        b.push_named("x", ValueRef::Float(1.5)).unwrap();
        b.push_named("x", ValueRef::Str("s")).unwrap();
        assert!(matches!(
            b.end_event(),
            Err(ModelError::DuplicateAttribute { name }) if name == "x"
        ));
        assert!(matches!(
            b.push_named("y", ValueRef::Float(f64::NAN)),
            Err(ModelError::NaN { .. })
        ));
        b.end_event().unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b.total_attrs(), 1);
        assert!(b.attrs_of(1).is_empty());
    }

    #[test]
    fn a_cycled_batch_repeats_the_events_with_the_same_ids() {
        let events = small();
        let b = EventBatch::from_events(&events[..7]);
        for n in [0, 3, 7, 15, 100] {
            let c = b.cycled(n);
            assert_eq!(c.len(), n);
            let want: Vec<Event> = events[..7].iter().cycle().take(n).cloned().collect();
            assert_eq!(c.to_events(), want);
            // The same ids, not renumbered.
            for i in 0..n {
                assert_eq!(c.attrs_of(i), b.attrs_of(i % 7));
            }
        }
        assert!(EventBatch::new().cycled(5).is_empty());
    }

    /// Parts begun from a seed ([`EventBatch::reset_to`]) and joined by
    /// [`EventBatch::concat_seeded_into`] hold the events that joining them as they are
    /// gives, whether a part adds names and strings of its own or none (its attributes
    /// then copied as they are); the seed's keep their ids; and the seed's copies find
    /// its strings, short and long.
    #[test]
    fn parts_begun_from_a_seed_join_into_the_same_events() {
        let mut window = EventBatch::new();
        for s in ["a", "a string longer than fifteen bytes", "b"] {
            window.push_named("n", ValueRef::Str(s)).unwrap();
            window.push_named("x", ValueRef::Int(1)).unwrap();
            window.end_event().unwrap();
        }
        let seed = window.seed();
        assert_eq!(seed.len(), 2 + 3);
        let lines: [&[(&str, ValueRef)]; 4] = [
            &[("n", ValueRef::Str("b")), ("x", ValueRef::Int(2))],
            &[("x", ValueRef::Str("a string longer than fifteen bytes"))],
            &[("new", ValueRef::Str("c")), ("n", ValueRef::Str("a"))],
            &[("n", ValueRef::Str("a new string longer than fifteen bytes"))],
        ];
        // Parts of known names and strings only, and parts with their own.
        for own in [vec![0, 1], vec![2, 0, 3], vec![1, 3, 3, 0, 2]] {
            let parts: Vec<EventBatch> = own
                .iter()
                .map(|&k| {
                    let mut p = EventBatch::new();
                    p.reset_to(&seed);
                    for _ in 0..3 {
                        for (name, v) in lines[k] {
                            p.push_named(name, *v).unwrap();
                        }
                        p.end_event().unwrap();
                    }
                    p
                })
                .collect();
            let mut joined = EventBatch::new();
            joined.concat_seeded_into(&parts, Some(&seed));
            let want: Vec<Event> = parts.iter().flat_map(|p| p.to_events()).collect();
            assert_eq!(joined.to_events(), want, "{own:?}");
            assert_eq!(joined, EventBatch::concat(&parts), "{own:?}");
            for (i, s) in window.strings().iter().enumerate() {
                assert_eq!(joined.strings().get(s), Some(i as u32), "{s}");
            }
            let names: Vec<&str> = joined.names().iter().collect();
            assert_eq!(&names[..2], ["n", "x"]);
        }
    }

    #[test]
    fn appending_renumbers_names_and_strings_and_clear_keeps_the_names() {
        let mut a = EventBatch::new();
        a.push_named("p", ValueRef::Str("one")).unwrap();
        a.end_event().unwrap();
        let mut b = EventBatch::new();
        b.push_named("q", ValueRef::Int(-4)).unwrap();
        b.push_named("p", ValueRef::Str("two")).unwrap();
        b.end_event().unwrap();
        let mut all = a.clone();
        all.append(&b);
        let mut expect = a.to_events();
        expect.extend(b.to_events());
        assert_eq!(all.to_events(), expect);
        assert_eq!(
            EventBatch::concat(&[a.clone(), b.clone()]).to_events(),
            expect
        );
        let p = all.names().get("p").unwrap();
        all.clear();
        assert!(all.is_empty() && all.strings().is_empty());
        assert_eq!(all.names().get("p"), Some(p));
    }
}
