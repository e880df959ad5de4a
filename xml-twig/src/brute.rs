//! A brute-force tree matcher: the oracle the engines and the NFA baseline are tested
//! against. It shares nothing with either: it rebuilds the element tree from the events
//! and checks the definition of a twig match directly.
//!
//! A document matches a query when there is a mapping `h` from query nodes to elements
//! such that every node's test accepts its element's tag, a `/` node's element is a
//! child of its parent node's element, a `//` node's element is a proper descendant of
//! it, and the first step's element is the root element (`/`) or any element (`//`).
//! Distinct query nodes may map to the same element (XPath predicates are existential).

use crate::model::{Axis, Document, Matches, ProfileSet, Twig};

/// The element tree of a document.
pub struct Tree {
    tag: Vec<u16>,
    children: Vec<Vec<usize>>,
    /// Preorder number of the last element of each element's subtree.
    last: Vec<usize>,
    root: Option<usize>,
}

impl Tree {
    /// Elements are numbered in preorder (document order of their start tags).
    pub fn new(doc: &Document) -> Self {
        let mut t = Tree {
            tag: Vec::new(),
            children: Vec::new(),
            last: Vec::new(),
            root: None,
        };
        let mut open: Vec<usize> = Vec::new();
        for e in &doc.events {
            if e.is_open() {
                let id = t.tag.len();
                t.tag.push(e.tag());
                t.children.push(Vec::new());
                t.last.push(id);
                match open.last() {
                    Some(&p) => t.children[p].push(id),
                    None => t.root = t.root.or(Some(id)),
                }
                open.push(id);
            } else if let Some(id) = open.pop() {
                t.last[id] = t.tag.len() - 1;
            }
        }
        t
    }

    /// Whether `twig` embeds in this tree.
    pub fn matches(&self, twig: &Twig) -> bool {
        let n = self.tag.len();
        // memo[node * n + element]: 0 unknown, 1 no, 2 yes.
        let mut memo = vec![0u8; twig.nodes.len() * n];
        let Some(root) = self.root else { return false };
        match twig.nodes[0].axis {
            Axis::Child => self.embeds(twig, 0, root, &mut memo),
            Axis::Descendant => (0..n).any(|e| self.embeds(twig, 0, e, &mut memo)),
        }
    }

    /// Whether the sub-twig rooted at query node `q` embeds with `q` at element `e`.
    fn embeds(&self, twig: &Twig, q: usize, e: usize, memo: &mut [u8]) -> bool {
        let n = self.tag.len();
        match memo[q * n + e] {
            1 => return false,
            2 => return true,
            _ => {}
        }
        let ok = twig.accepts(q, self.tag[e])
            && twig.nodes[q].children.iter().all(|&c| {
                let c = c as usize;
                match twig.nodes[c].axis {
                    Axis::Child => self.children[e]
                        .iter()
                        .any(|&k| self.embeds(twig, c, k, memo)),
                    Axis::Descendant => {
                        (e + 1..=self.last[e]).any(|k| self.embeds(twig, c, k, memo))
                    }
                }
            });
        memo[q * n + e] = if ok { 2 } else { 1 };
        ok
    }
}

/// The ids of the queries of `profiles` that `doc` matches, ascending.
pub fn filter(profiles: &ProfileSet, doc: &Document) -> Matches {
    let tree = Tree::new(doc);
    let mut out: Matches = profiles
        .twigs
        .iter()
        .zip(&profiles.ids)
        .filter(|(t, _)| tree.matches(t))
        .map(|(_, &id)| id)
        .collect();
    out.sort_unstable();
    out
}
