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
    ///
    /// Bottom-up over the query nodes, children before their parent, with no recursion
    /// (a twig can be deeper than the thread's stack): `sat[q][e]` says whether the
    /// sub-twig rooted at query node `q` embeds with `q` at element `e`.
    pub fn matches(&self, twig: &Twig) -> bool {
        let n = self.tag.len();
        let Some(root) = self.root else { return false };
        let Some(first) = twig.nodes.first() else {
            return false;
        };
        // Query nodes in breadth-first order from node 0: reversed, children come first.
        let mut order = vec![0usize];
        let mut i = 0;
        while i < order.len() {
            order.extend(twig.nodes[order[i]].children.iter().map(|&c| c as usize));
            i += 1;
        }
        let mut sat = vec![false; twig.nodes.len() * n];
        // For a `//` node `q`, below[q][i]: how many of the elements 0..i (preorder)
        // satisfy `q`, so that the proper descendants of `e`, the elements
        // e+1..=last[e], are one range. Empty for `/` nodes.
        let mut below: Vec<Vec<u32>> = vec![Vec::new(); twig.nodes.len()];
        for &q in order.iter().rev() {
            for e in 0..n {
                let ok = twig.accepts(q, self.tag[e])
                    && twig.nodes[q].children.iter().all(|&c| {
                        let c = c as usize;
                        match twig.nodes[c].axis {
                            Axis::Child => self.children[e].iter().any(|&k| sat[c * n + k]),
                            Axis::Descendant => below[c][self.last[e] + 1] > below[c][e + 1],
                        }
                    });
                sat[q * n + e] = ok;
            }
            if twig.nodes[q].axis == Axis::Descendant {
                let mut b = vec![0u32; n + 1];
                for e in 0..n {
                    b[e + 1] = b[e] + u32::from(sat[q * n + e]);
                }
                below[q] = b;
            }
        }
        match first.axis {
            Axis::Child => sat[root],
            Axis::Descendant => sat[..n].iter().any(|&s| s),
        }
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
