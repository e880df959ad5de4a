//! The paper's workloads (§5), seeded: YFilter-style twig queries over the DBLP schema
//! and DBLP-schema documents.
//!
//! **Documents.** The paper trims the DBLP dataset and generates synthetic documents from
//! the DBLP DTD with ToXgene. [`DblpGenerator`] writes XML text that follows the DTD's
//! element names and nesting: `dblp` holds publication records (`article`,
//! `inproceedings`, ...), each with its fields (`author`, `title`, `year`, ...); `title`
//! holds text with the DTD's recursive inline markup (`sub`, `sup`, `i`, `tt`, which may
//! nest in each other), so documents have recursive tags. Records carry `key`/`mdate`
//! attributes and text as in DBLP. Generation stops at the first record boundary past
//! the requested size, then closes `dblp`.
//!
//! **Queries.** The paper uses YFilter's XPath generator: unique twigs of 5/10/15 nodes
//! with 1/3/6 split points, at most 4 children per split node, and a probability of `*`
//! and of `//` per step. [`QueryGenerator`] grows the twig's shape node by node and
//! picks each node's tag by walking the same schema (a `/` step picks a DTD child of the
//! parent's tag, a `//` step a DTD descendant), then replaces the tag by `*` with the
//! wildcard probability. Where the paper is silent we chose: the first step is `/dblp`,
//! or `//` to a random element with the `//` probability; a split is made exactly as
//! often as needed to reach the requested number of split points; duplicates are
//! regenerated (up to 100 times, then kept).

use crate::model::{Axis, NodeTest, Query};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;

/// Publication records under `dblp`, with their relative frequency in DBLP.
const RECORDS: &[(&str, u32)] = &[
    ("article", 35),
    ("inproceedings", 45),
    ("proceedings", 3),
    ("book", 2),
    ("incollection", 4),
    ("phdthesis", 2),
    ("mastersthesis", 1),
    ("www", 8),
];
/// The DTD's record fields (`%field;`).
const FIELDS: &[&str] = &[
    "author",
    "editor",
    "title",
    "booktitle",
    "pages",
    "year",
    "address",
    "journal",
    "volume",
    "number",
    "month",
    "url",
    "ee",
    "cdrom",
    "cite",
    "publisher",
    "note",
    "crossref",
    "isbn",
    "series",
    "school",
    "chapter",
];
/// The DTD's inline markup inside titles (`%titlecontents;`), recursive.
const INLINE: &[&str] = &["sub", "sup", "i", "tt"];

/// DTD children of an element (empty for text-only elements).
pub fn schema_children(tag: &str) -> Vec<&'static str> {
    if tag == "dblp" {
        RECORDS.iter().map(|r| r.0).collect()
    } else if RECORDS.iter().any(|r| r.0 == tag) {
        FIELDS.to_vec()
    } else if tag == "title" || INLINE.contains(&tag) {
        INLINE.to_vec()
    } else {
        Vec::new()
    }
}

/// Every element name of the schema.
pub fn schema_tags() -> Vec<&'static str> {
    let mut v = vec!["dblp"];
    v.extend(RECORDS.iter().map(|r| r.0));
    v.extend_from_slice(FIELDS);
    v.extend_from_slice(INLINE);
    v
}

/// DTD descendants of an element (at any depth).
fn schema_descendants(tag: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    let mut todo = schema_children(tag);
    while let Some(t) = todo.pop() {
        if !out.contains(&t) {
            out.push(t);
            todo.extend(schema_children(t));
        }
    }
    out
}

/// Query workload parameters (§5's list).
#[derive(Clone, Debug, PartialEq)]
pub struct QueryParams {
    /// Query nodes (5, 10 or 15 in the paper), not counting the dummy root.
    pub length: usize,
    /// Split points (1, 3, 6 for the lengths above).
    pub splits: usize,
    /// Maximum children of a split node (4).
    pub max_children: usize,
    /// Probability of `*` for a step's tag (0.1, 0.3, 0.5).
    pub p_wildcard: f64,
    /// Probability of `//` for a step's axis (0.1, 0.3, 0.5).
    pub p_descendant: f64,
}

impl QueryParams {
    /// The paper's pairing of length and split points, with `*`/`//` probability `p`.
    pub fn paper(length: usize, p: f64) -> Self {
        let splits = match length {
            0..=5 => 1,
            6..=10 => 3,
            _ => 6,
        };
        QueryParams {
            length,
            splits,
            max_children: 4,
            p_wildcard: p,
            p_descendant: p,
        }
    }
}

/// Seeded YFilter-style twig generator over the DBLP schema.
pub struct QueryGenerator {
    rng: ChaCha8Rng,
    params: QueryParams,
}

impl QueryGenerator {
    /// A generator of `params`' twigs, deterministic per `seed`.
    ///
    /// ```
    /// use xml_twig::workload::{QueryGenerator, QueryParams};
    /// let mut g = QueryGenerator::new(QueryParams::paper(10, 0.1), 7);
    /// let queries = g.queries(5);
    /// assert_eq!(queries.len(), 5);
    /// assert!(queries.iter().all(|q| q.len() == 10));
    /// println!("{}", queries[0]); // like /dblp/article[author]//title
    /// ```
    pub fn new(params: QueryParams, seed: u64) -> Self {
        QueryGenerator {
            rng: ChaCha8Rng::seed_from_u64(seed),
            params,
        }
    }

    /// `n` distinct queries.
    pub fn queries(&mut self, n: usize) -> Vec<Query> {
        let mut seen = HashSet::new();
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let mut q = self.query();
            for _ in 0..100 {
                if !seen.contains(&q.to_string()) {
                    break;
                }
                q = self.query();
            }
            seen.insert(q.to_string());
            out.push(q.canonical());
        }
        out
    }

    /// One twig of `params.length` nodes with `params.splits` split nodes (when the
    /// length allows it: a split needs at least one extra node). A shape the schema
    /// cannot complete (every open node's tag is text-only) is drawn again.
    pub fn query(&mut self) -> Query {
        let length = self.params.length.max(1);
        let splits = self.params.splits.min((length - 1) / 2);
        let mut q = self.attempt();
        for _ in 0..100 {
            if q.len() == length && q.split_nodes() == splits {
                break;
            }
            q = self.attempt();
        }
        q
    }

    fn attempt(&mut self) -> Query {
        let p = self.params.clone();
        let length = p.length.max(1);
        let splits = p.splits.min((length - 1) / 2).min(length.saturating_sub(1));
        let mut q = Query { nodes: Vec::new() };
        // The schema tag behind each node (a `*` node still stands for a real element).
        let mut tags: Vec<&'static str> = Vec::new();
        let top_desc = self.rng.gen_bool(p.p_descendant);
        let inner: Vec<&'static str> = schema_tags()
            .into_iter()
            .skip(1)
            .filter(|t| length == 1 || !schema_children(t).is_empty())
            .collect();
        let top = if top_desc {
            *inner.choose(&mut self.rng).unwrap_or(&"article")
        } else {
            "dblp"
        };
        let axis = if top_desc {
            Axis::Descendant
        } else {
            Axis::Child
        };
        let test = self.test(top, top_desc);
        q.push(None, axis, test);
        tags.push(top);
        let mut made_splits = 0usize;
        while q.nodes.len() < length {
            let remaining = length - q.nodes.len();
            let need = splits - made_splits;
            // Nodes that may get another child without breaking the split budget.
            let mut cands: Vec<(usize, bool)> = Vec::new();
            for (i, n) in q.nodes.iter().enumerate() {
                if schema_descendants(tags[i]).is_empty() {
                    continue;
                }
                let k = n.children.len();
                let makes_split = k == 1;
                let ok = match k {
                    0 => need < remaining,
                    1 => made_splits < splits,
                    _ => k < p.max_children.max(2) && need < remaining,
                };
                if ok {
                    cands.push((i, makes_split));
                }
            }
            if cands.is_empty() {
                break;
            }
            // When every remaining node is needed for a split, only splits will do.
            if need >= remaining && cands.iter().any(|c| c.1) {
                cands.retain(|c| c.1);
            }
            let (parent, makes_split) = *cands.choose(&mut self.rng).unwrap_or(&cands[0]);
            let desc = self.rng.gen_bool(p.p_descendant);
            let pool = if desc {
                schema_descendants(tags[parent])
            } else {
                schema_children(tags[parent])
            };
            let pool = if pool.is_empty() {
                schema_descendants(tags[parent])
            } else {
                pool
            };
            let tag = *pool.choose(&mut self.rng).unwrap_or(&"title");
            let test = self.test(tag, false);
            q.push(
                Some(parent),
                if desc { Axis::Descendant } else { Axis::Child },
                test,
            );
            tags.push(tag);
            if makes_split {
                made_splits += 1;
            }
        }
        q
    }

    fn test(&mut self, tag: &str, force_name: bool) -> NodeTest {
        if !force_name && self.rng.gen_bool(self.params.p_wildcard) {
            NodeTest::Wildcard
        } else {
            NodeTest::Name(tag.to_string())
        }
    }
}

const WORDS: &[&str] = &[
    "data", "query", "stream", "xml", "filter", "gpu", "parallel", "index", "tree", "graph",
    "model", "system", "fast", "twig", "path", "join", "cache", "network", "learning", "on", "of",
    "for", "the", "a",
];
const NAMES: &[&str] = &[
    "Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Leslie", "Tony", "Niklaus", "Frances",
];

/// Seeded DBLP-schema document generator.
pub struct DblpGenerator {
    rng: ChaCha8Rng,
    key: u64,
}

impl DblpGenerator {
    /// A generator of DBLP-like documents, deterministic per `seed`.
    ///
    /// ```
    /// use xml_twig::workload::DblpGenerator;
    /// let xml = DblpGenerator::new(1).document(2000);
    /// assert!(xml.contains("<dblp>"));
    /// assert_eq!(xml, DblpGenerator::new(1).document(2000));
    /// ```
    pub fn new(seed: u64) -> Self {
        DblpGenerator {
            rng: ChaCha8Rng::seed_from_u64(seed),
            key: 0,
        }
    }

    /// One document of about `bytes` bytes of XML text (at least one record).
    pub fn document(&mut self, bytes: usize) -> String {
        let mut s = String::with_capacity(bytes + 1024);
        s.push_str("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<dblp>\n");
        let close = "</dblp>\n";
        loop {
            self.record(&mut s);
            if s.len() + close.len() >= bytes {
                break;
            }
        }
        s.push_str(close);
        s
    }

    fn words(&mut self, s: &mut String, lo: usize, hi: usize) {
        let n = self.rng.gen_range(lo..=hi);
        for i in 0..n {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(WORDS.choose(&mut self.rng).unwrap_or(&"x"));
        }
    }

    fn field(&mut self, s: &mut String, tag: &str) {
        s.push('<');
        s.push_str(tag);
        s.push('>');
        match tag {
            "author" | "editor" => {
                s.push_str(NAMES.choose(&mut self.rng).unwrap_or(&"Ada"));
                s.push(' ');
                s.push_str(NAMES.choose(&mut self.rng).unwrap_or(&"Ada"));
            }
            "title" => self.inline(s, 0),
            "year" => s.push_str(&self.rng.gen_range(1970..2014).to_string()),
            "pages" => {
                let a = self.rng.gen_range(1..500);
                s.push_str(&format!("{a}-{}", a + self.rng.gen_range(1..30)));
            }
            "url" | "ee" => {
                s.push_str("db/x/");
                self.words(s, 1, 1);
                s.push_str(".html");
            }
            _ => self.words(s, 1, 3),
        }
        s.push_str("</");
        s.push_str(tag);
        s.push('>');
    }

    /// Title text with the DTD's recursive inline markup.
    fn inline(&mut self, s: &mut String, depth: u32) {
        self.words(s, 1, 4);
        let p = if depth == 0 { 0.25 } else { 0.35 };
        while depth < 6 && self.rng.gen_bool(p) {
            let t = INLINE.choose(&mut self.rng).unwrap_or(&"i");
            s.push(' ');
            s.push('<');
            s.push_str(t);
            s.push('>');
            self.inline(s, depth + 1);
            s.push_str("</");
            s.push_str(t);
            s.push('>');
            if depth > 0 {
                break;
            }
        }
    }

    fn record(&mut self, s: &mut String) {
        let total: u32 = RECORDS.iter().map(|r| r.1).sum();
        let mut pick = self.rng.gen_range(0..total);
        let mut kind = RECORDS[0].0;
        for &(name, w) in RECORDS {
            if pick < w {
                kind = name;
                break;
            }
            pick -= w;
        }
        self.key += 1;
        s.push_str(&format!(
            "<{kind} mdate=\"2013-0{}-1{}\" key=\"x/{}\">",
            self.rng.gen_range(1..10),
            self.rng.gen_range(0..10),
            self.key
        ));
        let authors = self.rng.gen_range(1..=4);
        for _ in 0..authors {
            self.field(s, "author");
        }
        self.field(s, "title");
        let venue = match kind {
            "article" => "journal",
            "phdthesis" | "mastersthesis" => "school",
            "book" | "proceedings" => "publisher",
            _ => "booktitle",
        };
        self.field(s, venue);
        self.field(s, "year");
        for f in FIELDS {
            if !matches!(*f, "author" | "title" | "year") && *f != venue && self.rng.gen_bool(0.12)
            {
                let n = if *f == "cite" {
                    self.rng.gen_range(1..4)
                } else {
                    1
                };
                for _ in 0..n {
                    self.field(s, f);
                }
            }
        }
        s.push_str(&format!("</{kind}>\n"));
    }
}

/// Small random documents and twigs over tags `t0..tN`, for property tests: recursive
/// tags (the same tag nested in itself), `*` and `//` chains and bushy twigs are common
/// by construction.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomParams {
    /// Distinct tag names (`t0`, `t1`, ...).
    pub tags: usize,
    /// Elements per document (at least 1).
    pub elements: usize,
    /// Maximum document depth.
    pub max_depth: usize,
    /// Nodes per query (at least 1).
    pub query_nodes: usize,
    pub p_wildcard: f64,
    pub p_descendant: f64,
    /// Probability that a new query node hangs off a random earlier node (bushy twigs)
    /// rather than the last one (chains).
    pub p_branch: f64,
}

/// Seeded generator of [`RandomParams`] workloads.
pub struct RandomGenerator {
    rng: ChaCha8Rng,
    p: RandomParams,
}

impl RandomGenerator {
    pub fn new(p: RandomParams, seed: u64) -> Self {
        RandomGenerator {
            rng: ChaCha8Rng::seed_from_u64(seed),
            p,
        }
    }

    fn tag(&mut self) -> String {
        format!("t{}", self.rng.gen_range(0..self.p.tags.max(1)))
    }

    /// XML text of one random document.
    pub fn document(&mut self) -> String {
        let mut s = String::new();
        let mut open: Vec<String> = Vec::new();
        let root = self.tag();
        s.push_str(&format!("<{root}>"));
        open.push(root);
        let mut made = 1;
        while made < self.p.elements.max(1) {
            let go_down = open.len() < self.p.max_depth.max(1) && self.rng.gen_bool(0.6);
            if go_down || open.len() == 1 {
                if open.len() >= self.p.max_depth.max(1) {
                    break;
                }
                let t = self.tag();
                if self.rng.gen_bool(0.2) {
                    s.push_str(&format!("<{t}/>"));
                } else {
                    s.push_str(&format!("<{t}>"));
                    open.push(t);
                }
                made += 1;
            } else if let Some(t) = open.pop() {
                s.push_str(&format!("</{t}>"));
            }
        }
        while let Some(t) = open.pop() {
            s.push_str(&format!("</{t}>"));
        }
        s
    }

    /// One random twig.
    pub fn query(&mut self) -> Query {
        let mut q = Query { nodes: Vec::new() };
        for i in 0..self.p.query_nodes.max(1) {
            let parent = if i == 0 {
                None
            } else if self.rng.gen_bool(self.p.p_branch) {
                Some(self.rng.gen_range(0..i))
            } else {
                Some(i - 1)
            };
            let axis = if self.rng.gen_bool(self.p.p_descendant) {
                Axis::Descendant
            } else {
                Axis::Child
            };
            let test = if self.rng.gen_bool(self.p.p_wildcard) {
                NodeTest::Wildcard
            } else {
                NodeTest::Name(self.tag())
            };
            q.push(parent, axis, test);
        }
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{parse_document, parse_query};
    use crate::model::{ProfileSet, QuerySet};

    #[test]
    fn query_generator_makes_the_papers_lengths_and_split_points() {
        for (len, splits) in [(5, 1), (10, 3), (15, 6)] {
            let mut g = QueryGenerator::new(QueryParams::paper(len, 0.3), 42);
            let qs = g.queries(50);
            for q in &qs {
                assert_eq!(q.len(), len, "{q}");
                assert_eq!(q.split_nodes(), splits, "{q}");
                assert!(q.nodes.iter().all(|n| n.children.len() <= 4), "{q}");
                // The text is in the grammar and parses back to the same twig.
                assert_eq!(&parse_query(&q.to_string()).unwrap(), q);
            }
            let distinct: HashSet<String> = qs.iter().map(|q| q.to_string()).collect();
            assert_eq!(distinct.len(), qs.len());
        }
    }

    #[test]
    fn wildcard_and_descendant_probabilities_show_in_the_queries() {
        let count = |p: f64| {
            let qs = QueryGenerator::new(QueryParams::paper(10, p), 1).queries(200);
            let nodes: Vec<_> = qs.iter().flat_map(|q| q.nodes.iter()).collect();
            let stars = nodes
                .iter()
                .filter(|n| n.test == NodeTest::Wildcard)
                .count() as f64;
            let descs = nodes.iter().filter(|n| n.axis == Axis::Descendant).count() as f64;
            (stars / nodes.len() as f64, descs / nodes.len() as f64)
        };
        let (s1, d1) = count(0.1);
        let (s5, d5) = count(0.5);
        assert!(
            (0.05..0.16).contains(&s1) && (0.05..0.16).contains(&d1),
            "{s1} {d1}"
        );
        assert!(
            (0.4..0.6).contains(&s5) && (0.4..0.6).contains(&d5),
            "{s5} {d5}"
        );
    }

    #[test]
    fn generators_are_deterministic_per_seed() {
        assert_eq!(
            DblpGenerator::new(3).document(5000),
            DblpGenerator::new(3).document(5000)
        );
        assert_ne!(
            DblpGenerator::new(3).document(5000),
            DblpGenerator::new(4).document(5000)
        );
        let a = QueryGenerator::new(QueryParams::paper(10, 0.3), 9).queries(20);
        assert_eq!(
            a,
            QueryGenerator::new(QueryParams::paper(10, 0.3), 9).queries(20)
        );
    }

    #[test]
    fn dblp_documents_have_the_requested_size_and_recursive_title_markup() {
        let set = QuerySet::from_queries(vec![parse_query("//title//i//i").unwrap()]);
        let profiles = ProfileSet::compile(&set).unwrap();
        let xml = DblpGenerator::new(5).document(64 * 1024);
        assert!((64 * 1024..70 * 1024).contains(&xml.len()), "{}", xml.len());
        let doc = parse_document("gen.xml", xml.as_bytes(), &profiles.dict).unwrap();
        assert!(
            doc.max_depth >= 5,
            "titles nest inline markup: depth {}",
            doc.max_depth
        );
        assert!(xml.starts_with("<?xml") && xml.contains("<article") && xml.contains("<author>"));
        let small = DblpGenerator::new(5).document(25_000);
        assert!((25_000..27_000).contains(&small.len()), "{}", small.len());
    }
}
