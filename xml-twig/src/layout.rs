//! Model -> flat device tables: kernel personalities (§4.3, Table 2), greedy packing of
//! queries into thread blocks (§4.4), and document batches as 1- or 2-byte events
//! (§4.1, Table 1).
//!
//! A query of `L` nodes takes `L + 1` consecutive columns of one block: its dummy root
//! `$`, then its nodes in breadth-first order, so that the children of every node sit
//! in consecutive columns (the childrenMatch entries a split node reads, §4.6).
//! Queries never straddle blocks (§4.2: "twigs are evaluated within a single block").
//! Packing is first-fit decreasing by column count, the simple greedy heuristic the paper
//! mentions without detail.

use crate::model::{Axis, Document, Event, ProfileSet, Twig};
use crate::XmlError;
use gpu_kernels::{Device, GpuError, HostBuffer};
use std::sync::{Arc, Mutex, Weak};
pub use xml_twig_kernels::Personality;

/// Queries packed into blocks of `width` columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockLayout {
    pub width: u32,
    pub blocks: u32,
    /// `blocks * width` personalities; unused columns are all zero.
    pub personalities: Vec<Personality>,
    /// For a root column, the index of its query in the profile set (its result bit).
    pub result_index: Vec<u32>,
    /// `(block, first column)` of each query.
    pub placement: Vec<(u32, u32)>,
}

impl BlockLayout {
    /// Fraction of columns holding a query node or a dummy root.
    pub fn utilization(&self) -> f64 {
        let used = self
            .personalities
            .iter()
            .filter(|p| p.has(Personality::USED))
            .count();
        used as f64 / self.personalities.len().max(1) as f64
    }
}

/// Packs `profiles` into blocks of `width` threads (at most 1024: the 10-bit prefix ID).
pub fn pack(profiles: &ProfileSet, width: u32) -> Result<BlockLayout, XmlError> {
    let w = width.clamp(1, 1024) as usize;
    let mut order: Vec<usize> = (0..profiles.len()).collect();
    order.sort_by_key(|&q| std::cmp::Reverse(profiles.twigs[q].nodes.len()));
    let mut free: Vec<usize> = Vec::new();
    let mut placement = vec![(0u32, 0u32); profiles.len()];
    for q in order {
        let need = profiles.twigs[q].nodes.len() + 1;
        if need > w {
            return Err(XmlError::QueryTooLarge {
                id: profiles.ids[q],
                columns: need,
                max: w,
            });
        }
        let b = match free.iter().position(|&f| f >= need) {
            Some(b) => b,
            None => {
                free.push(w);
                free.len() - 1
            }
        };
        placement[q] = (b as u32, (w - free[b]) as u32);
        free[b] -= need;
    }
    let blocks = free.len();
    let mut personalities = vec![
        Personality {
            word: 0,
            children: 0
        };
        blocks * w
    ];
    let mut result_index = vec![u32::MAX; blocks * w];
    for (q, &(b, c)) in placement.iter().enumerate() {
        let base = b as usize * w;
        write_query(&profiles.twigs[q], c, &mut personalities[base..base + w]);
        result_index[base + c as usize] = q as u32;
    }
    Ok(BlockLayout {
        width: w as u32,
        blocks: blocks as u32,
        personalities,
        result_index,
        placement,
    })
}

/// Writes the personalities of one twig into `block`, root at column `at`.
fn write_query(twig: &Twig, at: u32, block: &mut [Personality]) {
    // Breadth-first order: column of node n is `at + 1 + bfs_position[n]`.
    let mut bfs = vec![0usize];
    let mut i = 0;
    while i < bfs.len() {
        bfs.extend(twig.nodes[bfs[i]].children.iter().map(|&c| c as usize));
        i += 1;
    }
    let mut col = vec![0u32; twig.nodes.len()];
    for (pos, &n) in bfs.iter().enumerate() {
        col[n] = at + 1 + pos as u32;
    }
    let child_flags = |children: &[u32]| {
        children.iter().fold(0, |f, &c| {
            f | match twig.nodes[c as usize].axis {
                Axis::Child => Personality::CHILD_SLASH,
                Axis::Descendant => Personality::CHILD_DESC,
            }
        })
    };
    let children_word = |children: &[u32]| match children.first() {
        Some(&c) => col[c as usize] | ((children.len() as u32) << 16),
        None => 0,
    };
    block[at as usize] = Personality {
        word: Personality::USED | Personality::IS_ROOT | child_flags(&[0]),
        children: col[0] | (1 << 16),
    };
    for (n, node) in twig.nodes.iter().enumerate() {
        let prefix = node.parent.map_or(at, |p| col[p as usize]);
        let mut word =
            Personality::USED | (prefix << Personality::PREFIX_SHIFT) | child_flags(&node.children);
        if node.children.is_empty() {
            word |= Personality::IS_LEAF;
        }
        if node.axis == Axis::Descendant {
            word |= Personality::PREFIX_DESC;
        }
        match node.tag {
            None => word |= Personality::WILDCARD,
            Some(t) => word |= t as u32 & Personality::TAG_MASK,
        }
        block[col[n] as usize] = Personality {
            word,
            children: children_word(&node.children),
        };
    }
}

/// The events of a batch: the paper's 1-byte entries (Table 1), or 2-byte entries for
/// query sets naming more than 127 tags; either kind may live in page-locked host
/// memory ([`Locked`], [`EventBatch::encode_locked`]), which the device copies from
/// at the bus's speed with no staging.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventWords {
    Narrow(Vec<u8>),
    Wide(Vec<u16>),
    Locked(Locked),
}

/// A batch's events as the host reads them, whatever memory holds them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventSlice<'a> {
    Narrow(&'a [u8]),
    Wide(&'a [u16]),
}

impl EventWords {
    /// The events, narrow or wide.
    pub fn as_slice(&self) -> EventSlice<'_> {
        match self {
            EventWords::Narrow(v) => EventSlice::Narrow(v),
            EventWords::Wide(v) => EventSlice::Wide(v),
            EventWords::Locked(l) => {
                let bytes = &l.block.bytes()[..l.at.event_bytes];
                if l.narrow {
                    EventSlice::Narrow(bytes)
                } else {
                    // The block is page-aligned (at least 16-byte aligned on the emulator).
                    EventSlice::Wide(bytemuck::cast_slice(bytes))
                }
            }
        }
    }

    /// The events' bytes, as they are sent to the device.
    pub fn as_bytes(&self) -> &[u8] {
        match self.as_slice() {
            EventSlice::Narrow(v) => v,
            EventSlice::Wide(v) => bytemuck::cast_slice(v),
        }
    }

    /// Whether the events are the 1-byte form.
    pub fn is_narrow(&self) -> bool {
        matches!(self.as_slice(), EventSlice::Narrow(_))
    }

    /// Event `i` (of the batch's events).
    pub fn get(&self, i: usize) -> Event {
        match self.as_slice() {
            EventSlice::Narrow(v) => Event::from_narrow(v[i]),
            EventSlice::Wide(v) => Event(v[i]),
        }
    }
}

/// A batch encoded straight into one block of page-locked host memory
/// ([`EventBatch::encode_locked`]): its events, then, as 4-byte words from the next
/// multiple of 4, the batch's `doc_start`, `children_start` and `children` ([`LockedAt`]),
/// so that one copy sends the device every input the lean walk reads but its plan
/// (`crate::dfa`). The block is shared by the batch's clones; when the last is dropped
/// it goes back to the [`LockedPool`] it came from (if that still exists), else it is
/// freed.
#[derive(Clone)]
pub struct Locked {
    block: Arc<Block>,
    narrow: bool,
    at: LockedAt,
}

/// A page-locked block and the pool it returns to when dropped.
struct Block {
    buf: Option<HostBuffer<u8>>,
    home: Weak<Mutex<Vec<HostBuffer<u8>>>>,
}

impl Block {
    fn bytes(&self) -> &[u8] {
        self.buf.as_ref().map_or(&[], |b| b.as_slice())
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        if let (Some(buf), Some(home)) = (self.buf.take(), self.home.upgrade()) {
            let mut free = home.lock().unwrap_or_else(|p| p.into_inner());
            if free.len() < POOL_BLOCKS {
                free.push(buf);
            }
        }
    }
}

/// Page-locked blocks for batches ([`EventBatch::encode_locked_in`]): a block comes
/// back here when the last batch holding it is dropped, and a batch encoded later
/// takes it again, so that a stream of batches pins host memory (slow: its pages are
/// locked one by one) only while the batches grow. Clones share the pool.
#[derive(Clone, Default)]
pub struct LockedPool {
    free: Arc<Mutex<Vec<HostBuffer<u8>>>>,
}

/// Most blocks a [`LockedPool`] keeps free (more are freed).
const POOL_BLOCKS: usize = 4;

impl LockedPool {
    /// The smallest free block of at least `len` bytes, or a new one (a power of two).
    fn take(&self, dev: &Device, len: usize) -> Result<Block, GpuError> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        let fit = (0..free.len())
            .filter(|&i| free[i].len() >= len)
            .min_by_key(|&i| free[i].len());
        let buf = match fit {
            Some(i) => free.swap_remove(i),
            None => {
                drop(free);
                dev.alloc_host(len.next_power_of_two())?
            }
        };
        Ok(Block {
            buf: Some(buf),
            home: Arc::downgrade(&self.free),
        })
    }

    /// Blocks free in the pool.
    pub fn free_blocks(&self) -> usize {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl Locked {
    /// The block's bytes in use: the events and the words after them.
    pub fn bytes(&self) -> &[u8] {
        &self.block.bytes()[..self.at.end]
    }

    /// Where each part lies in [`Self::bytes`].
    pub fn at(&self) -> LockedAt {
        self.at
    }
}

impl PartialEq for Locked {
    fn eq(&self, other: &Self) -> bool {
        self.narrow == other.narrow && self.bytes() == other.bytes()
    }
}
impl Eq for Locked {}

impl std::fmt::Debug for Locked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Locked")
            .field("narrow", &self.narrow)
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

/// Byte offsets of a [`Locked`] block's parts: the events from 0, then `doc_start`,
/// `children_start` and `children` as 4-byte words; `end` is the block's length in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockedAt {
    pub event_bytes: usize,
    pub doc_start: usize,
    pub children_start: usize,
    pub children: usize,
    pub end: usize,
}

impl LockedAt {
    /// The offsets for `event_bytes` bytes of events, `docs` documents and `points`
    /// points between their roots' children.
    pub fn new(event_bytes: usize, docs: usize, points: usize) -> Self {
        let doc_start = event_bytes.next_multiple_of(4);
        let children_start = doc_start + 4 * (docs + 1);
        let children = children_start + 4 * (docs + 1);
        LockedAt {
            event_bytes,
            doc_start,
            children_start,
            children,
            end: children + 4 * points,
        }
    }
}

/// Where each document starts in a batch's events, and its root's children
/// ([`EventBatch::children_of`]): what every layout of the events shares.
struct Starts {
    doc_start: Vec<u32>,
    children: Vec<u32>,
    children_start: Vec<u32>,
}

impl Starts {
    fn of(docs: &[Document]) -> Self {
        let mut doc_start = Vec::with_capacity(docs.len() + 1);
        doc_start.push(0u32);
        let mut n = 0usize;
        for d in docs {
            n += d.events.len();
            doc_start.push(n as u32);
        }
        let mut children = Vec::new();
        let mut children_start = Vec::with_capacity(docs.len() + 1);
        children_start.push(0u32);
        for d in docs {
            root_children(&d.events, &mut children);
            children_start.push(children.len() as u32);
        }
        Starts {
            doc_start,
            children,
            children_start,
        }
    }
}

/// Appends to `out` the points between the root's children of one document's `events`
/// (offsets after each child's close), or nothing when they are not one root element.
fn root_children(events: &[Event], out: &mut Vec<u32>) {
    let from = out.len();
    let mut depth = 0u32;
    for (i, e) in events.iter().enumerate() {
        if e.is_open() {
            depth += 1;
        } else {
            depth = depth.saturating_sub(1);
            if depth == 1 {
                out.push(i as u32 + 1);
            } else if depth == 0 && i + 1 < events.len() {
                out.truncate(from); // a second root element follows
                return;
            }
        }
    }
}

/// A batch of documents as one event array with per-document offsets (§4.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventBatch {
    pub events: EventWords,
    /// Document `d`'s events are `events[doc_start[d]..doc_start[d + 1]]`.
    pub doc_start: Vec<u32>,
    /// Depth of each document.
    pub depth: Vec<u32>,
    /// Bytes of XML text of the batch (for MB/s).
    pub bytes: usize,
    /// The points between the root's children, each document's ([`Self::children_of`]):
    /// document `d`'s are `children[children_start[d]..children_start[d + 1]]`. Found
    /// with the events' depth as they are laid out, like the depth itself (what a
    /// streaming parser knows as it emits them); only [`Self::encode`] sets them, so
    /// that they always agree with the events.
    children: Vec<u32>,
    children_start: Vec<u32>,
}

impl EventBatch {
    /// Encodes `docs`, 1 byte per event when `narrow`.
    pub fn encode(docs: &[Document], narrow: bool) -> Self {
        let total: usize = docs.iter().map(|d| d.events.len()).sum();
        let events = if narrow {
            let mut v = Vec::with_capacity(total);
            docs.iter()
                .for_each(|d| v.extend(d.events.iter().map(|e| e.narrow())));
            EventWords::Narrow(v)
        } else {
            let mut v = Vec::with_capacity(total);
            docs.iter()
                .for_each(|d| v.extend(d.events.iter().map(|e| e.0)));
            EventWords::Wide(v)
        };
        Self::with_events(events, docs, Starts::of(docs))
    }

    /// [`Self::encode`] straight into page-locked host memory of `dev` ([`Locked`]):
    /// the events are written there from the documents (no second copy), followed by
    /// the batch's `doc_start`, `children_start` and `children`, so that a GPU engine
    /// sends them with one copy and no staging. The block is allocated for this batch
    /// and freed with it ([`Self::encode_locked_in`] reuses blocks).
    pub fn encode_locked(docs: &[Document], narrow: bool, dev: &Device) -> Result<Self, GpuError> {
        Self::encode_locked_in(docs, narrow, dev, &LockedPool::default())
    }

    /// [`Self::encode_locked`] into a block of `pool`'s (one a batch dropped before, or
    /// a new one), which goes back there when this batch (and its clones) is dropped.
    pub fn encode_locked_in(
        docs: &[Document],
        narrow: bool,
        dev: &Device,
        pool: &LockedPool,
    ) -> Result<Self, GpuError> {
        let total: usize = docs.iter().map(|d| d.events.len()).sum();
        let starts = Starts::of(docs);
        let Starts {
            doc_start,
            children,
            children_start,
        } = &starts;
        let size = if narrow { 1 } else { 2 };
        let at = LockedAt::new(total * size, docs.len(), children.len());
        let mut block = pool.take(dev, at.end.max(1))?;
        let buf = block.buf.as_mut().expect("a block taken holds its buffer");
        let bytes = &mut buf.as_mut_slice()[..at.end];
        let (events, words) = bytes.split_at_mut(at.doc_start);
        // The padding after the events (a reused block holds an earlier batch's bytes).
        events[at.event_bytes..].fill(0);
        let mut i = 0;
        for d in docs {
            if narrow {
                for (to, e) in events[i..i + d.events.len()].iter_mut().zip(&d.events) {
                    *to = e.narrow();
                }
            } else {
                for (to, e) in events[i..i + 2 * d.events.len()]
                    .chunks_exact_mut(2)
                    .zip(&d.events)
                {
                    to.copy_from_slice(&e.0.to_ne_bytes());
                }
            }
            i += d.events.len() * size;
        }
        let mut w = 0;
        for part in [doc_start, children_start, children] {
            let b: &[u8] = bytemuck::cast_slice(part);
            words[w..w + b.len()].copy_from_slice(b);
            w += b.len();
        }
        let events = EventWords::Locked(Locked {
            block: Arc::new(block),
            narrow,
            at,
        });
        Ok(Self::with_events(events, docs, starts))
    }

    /// The batch of `docs` whose events, laid out as `events`, start where `starts` says.
    fn with_events(events: EventWords, docs: &[Document], starts: Starts) -> Self {
        EventBatch {
            events,
            doc_start: starts.doc_start,
            depth: docs.iter().map(|d| d.max_depth).collect(),
            bytes: docs.iter().map(|d| d.bytes).sum(),
            children: starts.children,
            children_start: starts.children_start,
        }
    }

    /// Document `d`'s points between its root's children: offsets into its own events,
    /// after each child's close (the last is before the root's close), for cutting it
    /// into segments (`crate::dfa`); none for a document that is not one root element
    /// (or past the last document).
    pub fn children_of(&self, d: usize) -> &[u32] {
        let span = self
            .children_start
            .get(d)
            .zip(self.children_start.get(d + 1));
        span.and_then(|(&a, &b)| self.children.get(a as usize..b as usize))
            .unwrap_or(&[])
    }

    /// Every document's points between its root's children, end to end (document `d`'s
    /// are `children()[children_start()[d]..children_start()[d + 1]]`): for sending
    /// them to the device as they lie.
    pub fn children(&self) -> &[u32] {
        &self.children
    }

    /// Where each document's points start in [`Self::children`] (documents + 1).
    pub fn children_start(&self) -> &[u32] {
        &self.children_start
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.depth.len()
    }
    pub fn is_empty(&self) -> bool {
        self.depth.is_empty()
    }
    /// Number of events.
    pub fn events(&self) -> usize {
        self.doc_start.last().copied().unwrap_or(0) as usize
    }
    pub fn bytes_per_event(&self) -> u32 {
        if self.events.is_narrow() {
            1
        } else {
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::parse_query_file;

    fn profiles(text: &str) -> ProfileSet {
        ProfileSet::compile(&parse_query_file("q.txt", text).unwrap()).unwrap()
    }

    #[test]
    fn personalities_follow_table_2_with_children_in_consecutive_columns() {
        // `/a[b][.//c]/*`: root $, a, then a's children b, c, * in consecutive columns.
        let p = profiles("/a[b][.//c]/*\n");
        let l = pack(&p, 32).unwrap();
        assert_eq!(l.placement, vec![(0, 0)]);
        let col = |i: usize| l.personalities[i];
        assert!(
            col(0).has(Personality::IS_ROOT)
                && col(0).first_child() == 1
                && col(0).num_children() == 1
        );
        let a = col(1);
        assert_eq!(a.prefix(), 0);
        assert!(
            a.has(Personality::CHILD_SLASH)
                && a.has(Personality::CHILD_DESC)
                && !a.has(Personality::IS_LEAF)
        );
        assert_eq!((a.first_child(), a.num_children()), (2, 3));
        assert_eq!(a.tag(), p.dict.id(b"a") as u32);
        let c = col(3);
        assert!(c.has(Personality::PREFIX_DESC) && c.has(Personality::IS_LEAF) && c.prefix() == 1);
        assert!(col(4).has(Personality::WILDCARD));
        assert!(!col(5).has(Personality::USED));
        assert_eq!(l.result_index[0], 0);
    }

    #[test]
    fn greedy_packing_never_splits_a_query_and_fills_blocks_first_fit() {
        // Columns needed: 8, 8, 3, 10, 4 (length + root) in blocks of 16.
        let p = profiles("/a/a/a/a/a/a/a\n/b/b/b/b/b/b/b\n/c/c\n/d/d/d/d/d/d/d/d/d\n/e/e/e\n");
        let l = pack(&p, 16).unwrap();
        // Decreasing: 10 -> block 0 (6 left); 8 -> block 1 (8 left); 8 -> block 1 (full);
        // 4 -> block 0 (2 left); 3 -> a new block 2.
        assert_eq!(l.blocks, 3);
        assert_eq!(l.placement, vec![(1, 0), (1, 8), (2, 0), (0, 0), (0, 10)]);
        for (q, &(b, c)) in l.placement.iter().enumerate() {
            let need = p.twigs[q].nodes.len() as u32 + 1;
            assert!(c + need <= 16, "query {q} fits its block");
            assert_eq!(l.result_index[(b * 16 + c) as usize], q as u32);
        }
        let e = pack(&p, 8).unwrap_err();
        assert!(
            matches!(
                e,
                XmlError::QueryTooLarge {
                    columns: 10,
                    max: 8,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn batches_use_one_byte_events_when_tags_fit_seven_bits() {
        use crate::model::Event;
        let d = Document::from_events(
            vec![
                Event::open(3),
                Event::open(0),
                Event::close(0),
                Event::close(3),
            ],
            10,
        )
        .unwrap();
        let b = EventBatch::encode(&[d.clone(), d.clone()], true);
        assert_eq!(
            b.events,
            EventWords::Narrow(vec![3, 0, 0x80, 0x83, 3, 0, 0x80, 0x83])
        );
        assert_eq!(b.doc_start, vec![0, 4, 8]);
        assert_eq!(b.depth, vec![2, 2]);
        let w = EventBatch::encode(&[d], false);
        assert_eq!(w.events, EventWords::Wide(vec![3, 0, 0x8000, 0x8003]));
        assert!(Document::from_events(vec![Event::open(1), Event::close(2)], 0).is_none());
    }

    #[test]
    fn a_batch_encoded_in_page_locked_memory_holds_what_an_ordinary_one_does() {
        use crate::model::Event;
        let (o, c) = (Event::open, Event::close);
        let docs: Vec<Document> = [
            vec![o(1), o(2), c(2), o(3), o(4), c(4), c(3), c(1)],
            vec![o(300), c(300)],
            // Not one root element: no points between its root's children.
            vec![o(1), o(2), c(2), c(1), o(5), c(5)],
            vec![o(1), o(6), c(6), o(2), c(2), o(2), c(2), c(1)],
        ]
        .into_iter()
        .map(|e| Document::from_events(e, 7).expect("well nested"))
        .collect();
        let dev = Device::emulator();
        for narrow in [true, false] {
            let docs = if narrow { &docs[2..] } else { &docs[..] };
            let heap = EventBatch::encode(docs, narrow);
            let locked = EventBatch::encode_locked(docs, narrow, &dev).expect("emulator memory");
            assert_eq!(
                locked.events.as_slice(),
                heap.events.as_slice(),
                "narrow {narrow}"
            );
            assert_eq!(locked.events.is_narrow(), narrow);
            assert_eq!(
                (&locked.doc_start, &locked.depth, locked.bytes),
                (&heap.doc_start, &heap.depth, heap.bytes)
            );
            assert_eq!(
                (locked.children(), locked.children_start()),
                (heap.children(), heap.children_start())
            );
            assert_eq!(locked.events.get(1), docs[0].events[1]);
            // The block: the events, then the words the lean walk reads, as they lie.
            let EventWords::Locked(l) = &locked.events else {
                panic!("not in page-locked memory")
            };
            let (at, bytes) = (l.at(), l.bytes());
            let words =
                |a: usize, b: usize| -> Vec<u32> { bytemuck::cast_slice(&bytes[a..b]).to_vec() };
            assert_eq!(&bytes[..at.event_bytes], heap.events.as_bytes());
            assert_eq!(words(at.doc_start, at.children_start), heap.doc_start);
            assert_eq!(words(at.children_start, at.children), heap.children_start());
            assert_eq!(words(at.children, at.end), heap.children());
            assert_eq!(at.end, bytes.len());
        }
    }

    #[test]
    fn a_pool_gives_a_dropped_batchs_block_to_the_next_which_holds_only_its_own_bytes() {
        use crate::model::Event;
        let (o, c) = (Event::open, Event::close);
        let doc = |n: u16| {
            let mut e = vec![o(1)];
            for t in 0..n {
                e.extend_from_slice(&[o(2 + t % 5), c(2 + t % 5)]);
            }
            e.push(c(1));
            Document::from_events(e, 3).expect("well nested")
        };
        let (big, small) = (vec![doc(40), doc(7)], vec![doc(2)]);
        let dev = Device::emulator();
        let pool = LockedPool::default();
        let first = EventBatch::encode_locked_in(&big, true, &dev, &pool).expect("emulator memory");
        let at = |b: &EventBatch| match &b.events {
            EventWords::Locked(l) => l.bytes().as_ptr(),
            _ => panic!("not in page-locked memory"),
        };
        let block = at(&first);
        let clone = first.clone();
        drop(first);
        assert_eq!(pool.free_blocks(), 0, "a clone still holds the block");
        drop(clone);
        assert_eq!(pool.free_blocks(), 1);
        // A smaller batch in the same block (6 events: 2 bytes of padding after them):
        // what an ordinary encoding holds, nothing of the batch before.
        let second =
            EventBatch::encode_locked_in(&small, true, &dev, &pool).expect("emulator memory");
        assert_eq!(at(&second), block);
        assert_eq!(pool.free_blocks(), 0);
        let fresh = EventBatch::encode_locked(&small, true, &dev).expect("emulator memory");
        assert_eq!(second, fresh);
        assert_eq!(
            second.events.as_slice(),
            EventBatch::encode(&small, true).events.as_slice()
        );
        // A batch that outlives its pool frees its block.
        drop(pool);
        drop(second);
    }
}
