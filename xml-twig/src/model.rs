//! The paper's nouns: twig queries (§3.1, Fig. 1), the tag dictionary and the encoded
//! open/close event stream of a document (§4.1, Table 1).
//!
//! A [`Query`] is a twig: a tree of [`QueryNode`]s, each a step with an [`Axis`] to its
//! parent (`/` or `//`) and a [`NodeTest`] (a tag name or `*`). Node 0 is the query's
//! first step; its parent is the *dummy root* `$` of §3.1, which stands for the document
//! node (so `/a` requires the root element to be `a`, and `//a` finds `a` anywhere).
//!
//! Engines never see tag names: [`ProfileSet::compile`] numbers every tag name used by
//! the queries in a [`TagDict`] (ids from 1; id 0 is "a tag no query names", which only
//! `*` matches), and a document becomes a [`Document`]: a sequence of [`Event`]s.

use std::collections::HashMap;
use std::fmt;

/// The relationship between a query node and its prefix (parent) node (§3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    /// `/`: parent-child.
    Child,
    /// `//`: ancestor-descendant (a proper descendant of the parent's element).
    Descendant,
}

/// What a query node's element must be called (Fig. 1's `TagName`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeTest {
    /// Exactly this tag name.
    Name(String),
    /// `*`: any element.
    Wildcard,
}

/// One step of a twig query.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct QueryNode {
    pub axis: Axis,
    pub test: NodeTest,
    /// The prefix node (§3.2); `None` for node 0, whose prefix is the dummy root.
    pub parent: Option<usize>,
    /// Children in the order they were written (predicates first, then the path's next step).
    pub children: Vec<usize>,
}

/// A twig query (§3.1): `nodes[0]` is the first step, every other node's parent has a
/// smaller index (the parser numbers nodes in the order of the query text).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Query {
    pub nodes: Vec<QueryNode>,
}

impl Query {
    /// Number of query nodes, not counting the dummy root (the paper's `L` minus one).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// A query always has at least one step.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Number of split nodes: nodes with two or more children (§3.3).
    pub fn split_nodes(&self) -> usize {
        self.nodes.iter().filter(|n| n.children.len() >= 2).count()
    }

    /// Appends a node under `parent` (or as the first step) and returns its index.
    pub fn push(&mut self, parent: Option<usize>, axis: Axis, test: NodeTest) -> usize {
        let id = self.nodes.len();
        self.nodes.push(QueryNode {
            axis,
            test,
            parent,
            children: Vec::new(),
        });
        if let Some(p) = parent {
            self.nodes[p].children.push(id);
        }
        id
    }

    /// The same twig with its nodes renumbered in the order the query text lists them
    /// (the parser's numbering), so that `parse(q.to_string()) == q.canonical()`.
    pub fn canonical(&self) -> Query {
        let mut out = Query {
            nodes: Vec::with_capacity(self.nodes.len()),
        };
        if self.nodes.is_empty() {
            return out;
        }
        // Depth-first, children in order: the text order of `Display`.
        let mut todo = vec![(0usize, None::<usize>)];
        while let Some((n, parent)) = todo.pop() {
            let node = &self.nodes[n];
            let id = out.push(parent, node.axis, node.test.clone());
            for &c in node.children.iter().rev() {
                todo.push((c, Some(id)));
            }
        }
        out
    }
}

/// Writes the query back in the paper's grammar; parsing the text gives an equal twig
/// (when its predicates nest at most [`crate::io::MAX_PREDICATE_DEPTH`] deep, as those of
/// every parsed query do). Iterative (an explicit stack): a twig can be deeper than the thread's stack (a path
/// of 100,000 steps parses).
impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        enum Item {
            /// A node and whether it starts a predicate.
            Step(usize, bool),
            Text(&'static str),
        }
        let mut todo = if self.nodes.is_empty() {
            Vec::new()
        } else {
            vec![Item::Step(0, false)]
        };
        while let Some(item) = todo.pop() {
            let (id, in_predicate) = match item {
                Item::Text(t) => {
                    f.write_str(t)?;
                    continue;
                }
                Item::Step(id, p) => (id, p),
            };
            let n = &self.nodes[id];
            match (n.axis, in_predicate) {
                (Axis::Child, true) => {}
                (Axis::Child, false) => f.write_str("/")?,
                (Axis::Descendant, true) => f.write_str(".//")?,
                (Axis::Descendant, false) => f.write_str("//")?,
            }
            match &n.test {
                NodeTest::Name(s) => f.write_str(s)?,
                NodeTest::Wildcard => f.write_str("*")?,
            }
            // All children but the last are predicates; the last continues the path.
            // Pushed in reverse: the stack pops them in text order.
            if let Some((last, preds)) = n.children.split_last() {
                todo.push(Item::Step(*last, false));
                for &p in preds.iter().rev() {
                    todo.push(Item::Text("]"));
                    todo.push(Item::Step(p, true));
                    todo.push(Item::Text("["));
                }
            }
        }
        Ok(())
    }
}

/// The users' queries, each with its id (0-based line number of the query file).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuerySet {
    pub queries: Vec<Query>,
    /// `ids[i]` is the id reported for `queries[i]`.
    pub ids: Vec<u32>,
}

impl QuerySet {
    /// Queries numbered 0, 1, 2, ...
    pub fn from_queries(queries: Vec<Query>) -> Self {
        let ids = (0..queries.len() as u32).collect();
        QuerySet { queries, ids }
    }
    pub fn len(&self) -> usize {
        self.queries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }
}

/// Largest tag id of the paper's 1-byte events (Table 1: 7 bits of tag id).
pub const NARROW_MAX_TAG: u16 = 0x7f;
/// Largest tag id of the wide (2-byte) events this crate adds for query sets naming
/// more than 127 distinct tags (15 bits of tag id).
pub const WIDE_MAX_TAG: u16 = 0x7fff;
/// Tag id of every element name no query mentions (only `*` matches it).
pub const OTHER_TAG: u16 = 0;

/// Tag names used by a query set, numbered from 1 (§4.1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TagDict {
    /// Name (its bytes) -> id, hashed by foldhash (every tag of a parsed document is
    /// looked up here).
    ids: HashMap<Box<[u8]>, u16, foldhash::fast::FixedState>,
    names: Vec<String>,
}

impl TagDict {
    /// The id of `name`, or [`OTHER_TAG`] when no query names it.
    pub fn id(&self, name: &[u8]) -> u16 {
        // Names are inserted as UTF-8: bytes that are not never match one.
        self.ids.get(name).copied().unwrap_or(OTHER_TAG)
    }
    /// Adds `name` (if new) and returns its id; `None` past [`WIDE_MAX_TAG`] names.
    pub fn insert(&mut self, name: &str) -> Option<u16> {
        if let Some(&id) = self.ids.get(name.as_bytes()) {
            return Some(id);
        }
        if self.names.len() >= WIDE_MAX_TAG as usize {
            return None;
        }
        self.names.push(name.to_string());
        let id = self.names.len() as u16;
        self.ids.insert(name.as_bytes().into(), id);
        Some(id)
    }
    /// The name of tag id `id` (`None` for [`OTHER_TAG`]).
    pub fn name(&self, id: u16) -> Option<&str> {
        (id as usize)
            .checked_sub(1)
            .and_then(|i| self.names.get(i))
            .map(String::as_str)
    }
    /// Number of named tags.
    pub fn len(&self) -> usize {
        self.names.len()
    }
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
    /// True when every id fits the paper's 7-bit tag field (Table 1).
    pub fn is_narrow(&self) -> bool {
        self.names.len() <= NARROW_MAX_TAG as usize
    }
}

/// One open or close event (§3.1, Table 1), kept on the host in the wide form:
/// bit 15 set for close (pop), bits 0..15 the tag id. Transparent over its `u16`, so a
/// document's events go to the device as they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct Event(pub u16);

impl Event {
    pub const CLOSE_BIT: u16 = 0x8000;
    pub fn open(tag: u16) -> Self {
        Event(tag & WIDE_MAX_TAG)
    }
    pub fn close(tag: u16) -> Self {
        Event(Self::CLOSE_BIT | (tag & WIDE_MAX_TAG))
    }
    pub fn is_open(self) -> bool {
        self.0 & Self::CLOSE_BIT == 0
    }
    pub fn tag(self) -> u16 {
        self.0 & WIDE_MAX_TAG
    }
    /// The paper's 1-byte encoding (Table 1): bit 7 close, bits 0..7 tag id. Only for
    /// tags up to [`NARROW_MAX_TAG`].
    pub fn narrow(self) -> u8 {
        ((self.0 >> 8) & 0x80) as u8 | (self.tag() as u8 & 0x7f)
    }
    /// The event of a 1-byte entry ([`Self::narrow`]'s inverse).
    pub fn from_narrow(b: u8) -> Self {
        Event((b as u16 & 0x80) << 8 | (b as u16 & 0x7f))
    }
}

/// A document reduced to its open/close events (§4.1): what every engine filters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Document {
    pub events: Vec<Event>,
    /// Depth of the deepest element (the root element has depth 1).
    pub max_depth: u32,
    /// Size of the XML text it came from, in bytes (for MB/s throughputs).
    pub bytes: usize,
}

impl Document {
    /// Builds a document from well-nested events, computing its depth. `None` when the
    /// events are not well nested (a close without an open, a close of another tag,
    /// or elements left open).
    pub fn from_events(events: Vec<Event>, bytes: usize) -> Option<Self> {
        let mut stack: Vec<u16> = Vec::new();
        let mut max_depth = 0u32;
        for e in &events {
            if e.is_open() {
                stack.push(e.tag());
                max_depth = max_depth.max(stack.len() as u32);
            } else if stack.pop() != Some(e.tag()) {
                return None;
            }
        }
        stack.is_empty().then_some(Document {
            events,
            max_depth,
            bytes,
        })
    }
}

/// A query node with its tag resolved to an id: what engines compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwigNode {
    pub axis: Axis,
    /// `None` for `*`.
    pub tag: Option<u16>,
    pub parent: Option<u32>,
    pub children: Vec<u32>,
}

/// A compiled query: same shape as [`Query`], tags as ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Twig {
    pub nodes: Vec<TwigNode>,
}

impl Twig {
    /// Whether query node `n` accepts an element with tag id `tag`.
    #[inline]
    pub fn accepts(&self, n: usize, tag: u16) -> bool {
        match self.nodes[n].tag {
            None => true,
            Some(t) => t == tag,
        }
    }
}

/// A query set compiled against one tag dictionary: the input of every engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileSet {
    pub dict: TagDict,
    pub twigs: Vec<Twig>,
    /// `ids[i]` is the user-visible id of `twigs[i]`.
    pub ids: Vec<u32>,
}

impl ProfileSet {
    /// Numbers the queries' tag names and resolves every node's tag.
    pub fn compile(set: &QuerySet) -> Result<Self, crate::XmlError> {
        let mut dict = TagDict::default();
        let mut twigs = Vec::with_capacity(set.queries.len());
        for q in &set.queries {
            let mut nodes = Vec::with_capacity(q.nodes.len());
            for n in &q.nodes {
                let tag = match &n.test {
                    NodeTest::Wildcard => None,
                    NodeTest::Name(s) => {
                        Some(dict.insert(s).ok_or(crate::XmlError::TooManyTags {
                            max: WIDE_MAX_TAG as usize,
                        })?)
                    }
                };
                nodes.push(TwigNode {
                    axis: n.axis,
                    tag,
                    parent: n.parent.map(|p| p as u32),
                    children: n.children.iter().map(|&c| c as u32).collect(),
                });
            }
            twigs.push(Twig { nodes });
        }
        Ok(ProfileSet {
            dict,
            twigs,
            ids: set.ids.clone(),
        })
    }

    pub fn len(&self) -> usize {
        self.twigs.len()
    }
    pub fn is_empty(&self) -> bool {
        self.twigs.is_empty()
    }
}

/// What a filter answers for one document: the ids of the matching queries, ascending.
pub type Matches = Vec<u32>;
