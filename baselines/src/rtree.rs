//! R*-tree peer of CLCB (Cugola & Margara, Middleware 2012, §5 "Limitation of
//! location-based filtering algorithms"), on the `rstar` crate.
//!
//! The paper indexes filters' areas of relevance in libspatialindex's R*-tree (Beckmann
//! et al. 1990) and answers one point query per event; its Figs. 3–4 time the
//! *location-only* query, Fig. 5 the area update (remove + insert). We do the same with
//! `rstar`'s R*-tree:
//! - each filter's circle is an [`IndexedArea`] whose envelope is the circle's bounding
//!   box (widened by a few ULPs so that `f32` rounding can never drop a point that the
//!   exact test accepts), and whose `contains_point` is the model's exact test
//!   ([`clcb::model::Area::contains`]);
//! - beyond the paper, each filter's rectangle is an [`IndexedRect`] in a second tree,
//!   the rectangle its own envelope and its test; the circles' tree, records and test
//!   are those of a circles-only tree, and the second tree is queried only when it
//!   holds a rectangle;
//! - a point query walks the tree as `rstar`'s `locate_all_at_point` does (children
//!   where a node's box holds the point, leaves by their exact test), written out here
//!   (`for_each_at`) so that it compiles into each caller alike: rstar's iterator, no
//!   longer inlined once a second tree type existed, cost the circles' queries 12-17 %
//!   more instructions (callgrind, `fig4a` at 20k subscriptions); written out, 9-14 %
//!   fewer than with the iterator before rectangles;
//! - [`RTreeMatcher::locate`] is the paper's R-Tree series (location only: the
//!   subscriptions with a filter whose area holds the event);
//! - [`RTreeMatcher::match_event`] adds the content check on the candidates (every
//!   constraint of the filter against the event's attributes, CCM's typing), the
//!   location + content variant that is the oracle for the GPU engine;
//! - [`RTreeMatcher::move_area`] is an update: remove the old circle, insert the new one.
//!
//! Node size: libspatialindex's default R*-tree capacity is 100 entries per node; rstar
//! defaults to 6. The paper tuned its tree ("preliminary tests to determine the most
//! convenient parameters") without giving the result; we use 8–32 entries per node
//! ([`Params`]), between the two (the criterion bench `rtree` measures queries and
//! updates at the paper's scale).
//!
//! The tree holds areas only; the content of each filter is read from the
//! [`Subscriptions`] passed to [`RTreeMatcher::match_event`] (areas move, content does
//! not), so the tree costs no copy of the constraints.

use crate::sff::{cmp_num, Num};
use clcb::model::{
    Area, AreaUpdate, Circle, Constraint, Event, Location, ModelError, Op, Subscription,
    SubscriptionId, Subscriptions, Value,
};
use rstar::{Envelope, ParentNode, PointDistance, RTree, RTreeNode, RTreeObject, AABB};
use std::cmp::Ordering;

/// R*-tree node sizes (see the module docs).
pub struct Params;

impl rstar::RTreeParams for Params {
    const MIN_SIZE: usize = 8;
    const MAX_SIZE: usize = 32;
    const REINSERTION_COUNT: usize = 6;
    type DefaultInsertionStrategy = rstar::RStarInsertionStrategy;
}

/// One filter's circle in the tree (rectangles are in a tree of their own,
/// [`IndexedRect`], so that a circle's record and test are the circles-only ones).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexedArea {
    /// The filter's [`FilterId`](clcb::model::FilterId).
    pub filter: u32,
    /// Dense index of its subscription, and its position there.
    pub sub: u32,
    pub k: u32,
    pub area: Circle,
    envelope: AABB<[f32; 2]>,
}

impl IndexedArea {
    fn new(filter: u32, sub: u32, k: u32, area: Circle) -> Self {
        let r = area.radius();
        let (x, y) = (area.center.x, area.center.y);
        // Widen by a relative 2^-20 so that no rounding of dx*dx + dy*dy <= r² in f32
        // can put an accepted point outside the box.
        let pad = (r + x.abs().max(y.abs())) * 1e-6 + f32::MIN_POSITIVE;
        let envelope = AABB::from_corners([x - r - pad, y - r - pad], [x + r + pad, y + r + pad]);
        IndexedArea {
            filter,
            sub,
            k,
            area,
            envelope,
        }
    }
}

impl RTreeObject for IndexedArea {
    type Envelope = AABB<[f32; 2]>;
    fn envelope(&self) -> Self::Envelope {
        self.envelope
    }
}

impl PointDistance for IndexedArea {
    /// Squared distance from `p` to the disc (0 inside).
    fn distance_2(&self, p: &[f32; 2]) -> f32 {
        let dx = p[0] - self.area.center.x;
        let dy = p[1] - self.area.center.y;
        let d = (dx * dx + dy * dy).sqrt() - self.area.radius();
        if d <= 0.0 {
            0.0
        } else {
            d * d
        }
    }

    /// The model's exact test.
    fn contains_point(&self, p: &[f32; 2]) -> bool {
        self.area.contains(Location { x: p[0], y: p[1] })
    }
}

/// One filter's rectangle in the tree of rectangles: the rectangle is its own box, and
/// the box's test (borders included, no rounding) is the model's exact test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexedRect {
    /// The filter's [`FilterId`](clcb::model::FilterId).
    pub filter: u32,
    /// Dense index of its subscription, and its position there.
    pub sub: u32,
    pub k: u32,
    envelope: AABB<[f32; 2]>,
}

impl RTreeObject for IndexedRect {
    type Envelope = AABB<[f32; 2]>;
    fn envelope(&self) -> Self::Envelope {
        self.envelope
    }
}

impl PointDistance for IndexedRect {
    /// Squared distance from `p` to the rectangle (0 inside).
    fn distance_2(&self, p: &[f32; 2]) -> f32 {
        self.envelope.distance_2(p)
    }

    /// The model's exact test (`lo <= p <= hi` on both axes).
    fn contains_point(&self, p: &[f32; 2]) -> bool {
        self.envelope.contains_point(p)
    }
}

/// A filter's record in one of the two trees.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Indexed {
    Circle(IndexedArea),
    Rect(IndexedRect),
}

impl Indexed {
    fn new(filter: u32, sub: u32, k: u32, area: Area) -> Self {
        match area {
            Area::Circle { center, sq_radius } => Indexed::Circle(IndexedArea::new(
                filter,
                sub,
                k,
                Circle { center, sq_radius },
            )),
            Area::Rect { lo, hi } => Indexed::Rect(IndexedRect {
                filter,
                sub,
                k,
                envelope: AABB::from_corners([lo.x, lo.y], [hi.x, hi.y]),
            }),
        }
    }
}

/// The R*-tree matcher.
pub struct RTreeMatcher {
    /// The circles (every filter of a circles-only workload).
    tree: RTree<IndexedArea, Params>,
    /// The rectangles (empty without them: a query then costs a check of its root).
    rects: RTree<IndexedRect, Params>,
    /// Current tree object of each filter (to remove it on a move).
    current: Vec<Indexed>,
    ids: Vec<SubscriptionId>,
}

impl RTreeMatcher {
    /// Bulk-loads the areas of every filter of `subs`.
    ///
    /// ```
    /// use baselines::rtree::RTreeMatcher;
    /// use clcb::{Area, AreaUpdate, Event, Filter, FilterId, Location};
    /// use clcb::{Subscription, SubscriptionId, Subscriptions};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut subs = Subscriptions::new([Subscription {
    ///     id: SubscriptionId(4),
    ///     filters: vec![Filter::new(vec![], Area::circle(0.0, 0.0, 1.0)?)?],
    /// }]);
    /// let mut rtree = RTreeMatcher::build(&subs);
    /// let e = Event { loc: Location::new(5.0, 5.0)?, ..Event::default() };
    /// assert_eq!(rtree.match_event(&e, &subs), vec![]);
    /// // A move updates the tree; the subscriptions (read for content) follow it.
    /// let u = AreaUpdate { filter: FilterId(0), area: Area::circle(5.0, 4.5, 1.0)? };
    /// rtree.move_area(&u)?;
    /// subs.apply(&u)?;
    /// assert_eq!(rtree.match_event(&e, &subs), vec![SubscriptionId(4)]);
    /// # Ok(()) }
    /// ```
    pub fn build(subs: &Subscriptions) -> RTreeMatcher {
        let current: Vec<Indexed> =
            subs.as_slice()
                .iter()
                .enumerate()
                .flat_map(|(i, s)| {
                    let first = subs.filter_start(i).0;
                    s.filters.iter().enumerate().map(move |(k, f)| {
                        Indexed::new(first + k as u32, i as u32, k as u32, f.area)
                    })
                })
                .collect();
        let (mut circles, mut rects) = (Vec::new(), Vec::new());
        for &x in &current {
            match x {
                Indexed::Circle(c) => circles.push(c),
                Indexed::Rect(r) => rects.push(r),
            }
        }
        RTreeMatcher {
            tree: RTree::bulk_load_with_params(circles),
            rects: RTree::bulk_load_with_params(rects),
            current,
            ids: subs.as_slice().iter().map(|s| s.id).collect(),
        }
    }

    /// Number of filters indexed.
    pub fn filters(&self) -> usize {
        self.current.len()
    }

    /// Location only (the paper's R-Tree series): the dense indices of the subscriptions
    /// with some filter whose area holds `loc`, ascending.
    pub fn locate_indices(&self, loc: Location) -> Vec<u32> {
        let p = [loc.x, loc.y];
        let mut out: Vec<u32> = Vec::new();
        for_each_at(&self.tree, &p, &mut |a: &IndexedArea| out.push(a.sub));
        if self.rects.size() > 0 {
            for_each_at(&self.rects, &p, &mut |a: &IndexedRect| out.push(a.sub));
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// [`RTreeMatcher::locate_indices`] as subscription ids.
    pub fn locate(&self, loc: Location) -> Vec<SubscriptionId> {
        self.locate_indices(loc)
            .into_iter()
            .map(|i| self.ids[i as usize])
            .collect()
    }

    /// Location + content: the dense indices of the subscriptions matching `e`,
    /// ascending. `subs` must be the set the tree was built from (areas may have moved
    /// since; the tree's own areas are used).
    pub fn match_indices(&self, e: &Event, subs: &Subscriptions) -> Vec<u32> {
        let all = subs.as_slice();
        let mut out: Vec<u32> = Vec::new();
        let p = [e.loc.x, e.loc.y];
        for_each_at(&self.tree, &p, &mut |a: &IndexedArea| {
            if out.last() == Some(&a.sub) {
                return;
            }
            let f = &all[a.sub as usize].filters[a.k as usize];
            if f.constraints.iter().all(|c| holds(c, e)) {
                out.push(a.sub);
            }
        });
        if self.rects.size() > 0 {
            self.match_rects(e, all, &mut out);
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The rectangles' part of [`RTreeMatcher::match_indices`], appended to `out`; out
    /// of line, so that the circles' loop keeps the code it had before rectangles.
    #[inline(never)]
    fn match_rects(&self, e: &Event, all: &[Subscription], out: &mut Vec<u32>) {
        for_each_at(&self.rects, &[e.loc.x, e.loc.y], &mut |a: &IndexedRect| {
            if out.last() == Some(&a.sub) {
                return;
            }
            let f = &all[a.sub as usize].filters[a.k as usize];
            if f.constraints.iter().all(|c| holds(c, e)) {
                out.push(a.sub);
            }
        });
    }

    /// [`RTreeMatcher::match_indices`] as subscription ids.
    pub fn match_event(&self, e: &Event, subs: &Subscriptions) -> Vec<SubscriptionId> {
        self.match_indices(e, subs)
            .into_iter()
            .map(|i| self.ids[i as usize])
            .collect()
    }

    /// Moves a filter's area: remove the old circle, insert the new one (§5, Fig. 5).
    pub fn move_area(&mut self, u: &AreaUpdate) -> Result<(), ModelError> {
        let f = u.filter.0 as usize;
        let old = *self
            .current
            .get(f)
            .ok_or(ModelError::NoSuchFilter(u.filter.0, self.current.len()))?;
        let (filter, sub, k) = match old {
            Indexed::Circle(a) => {
                let removed = self.tree.remove(&a);
                debug_assert!(removed.is_some(), "filter {f} missing from the tree");
                (a.filter, a.sub, a.k)
            }
            Indexed::Rect(r) => {
                let removed = self.rects.remove(&r);
                debug_assert!(removed.is_some(), "filter {f} missing from the tree");
                (r.filter, r.sub, r.k)
            }
        };
        let new = Indexed::new(filter, sub, k, u.area);
        match new {
            Indexed::Circle(a) => self.tree.insert(a),
            Indexed::Rect(r) => self.rects.insert(r),
        }
        self.current[f] = new;
        Ok(())
    }
}

/// Calls `hit` on each object of `tree` whose test holds `p`: rstar's point location
/// (`locate_all_at_point`: a node's children where its box holds `p`, a leaf where its
/// own test does), depth first, written out so that each tree's query is compiled here,
/// in its caller, the same for the circles' tree whether or not the rectangles' exists.
#[inline(always)]
fn for_each_at<T>(tree: &RTree<T, Params>, p: &[f32; 2], hit: &mut impl FnMut(&T))
where
    T: PointDistance<Envelope = AABB<[f32; 2]>>,
{
    fn visit<T, F>(node: &ParentNode<T>, p: &[f32; 2], hit: &mut F)
    where
        T: PointDistance<Envelope = AABB<[f32; 2]>>,
        F: FnMut(&T),
    {
        for child in node.children() {
            match child {
                RTreeNode::Leaf(t) => {
                    if t.contains_point(p) {
                        hit(t);
                    }
                }
                RTreeNode::Parent(n) => {
                    if n.envelope().contains_point(p) {
                        visit(n, p, hit);
                    }
                }
            }
        }
    }
    let root = tree.root();
    if root.envelope().contains_point(p) {
        visit(root, p, hit);
    }
}

/// Does the event's attribute of `c`'s name satisfy `c` (CCM's typing: numbers compare
/// exactly across integer and float, strings byte-wise, type mismatch or absence fails)?
pub fn holds(c: &Constraint, e: &Event) -> bool {
    let Some(v) = e.content.get(&c.name) else {
        return false;
    };
    match (&c.value, v) {
        (Value::Str(want), Value::Str(got)) => {
            let (w, g) = (want.as_bytes(), got.as_bytes());
            match c.op {
                Op::Eq => g == w,
                Op::Ne => g != w,
                Op::Prefix => g.starts_with(w),
                Op::Suffix => g.ends_with(w),
                Op::Substr => w.is_empty() || g.windows(w.len()).any(|x| x == w),
                _ => false,
            }
        }
        (want, got) => {
            let (Some(w), Some(g)) = (Num::of(want), Num::of(got)) else {
                return false;
            };
            let ord = cmp_num(g, w);
            match c.op {
                Op::Eq => ord == Ordering::Equal,
                Op::Ne => ord != Ordering::Equal,
                Op::Lt => ord == Ordering::Less,
                Op::Gt => ord == Ordering::Greater,
                Op::Le => ord != Ordering::Greater,
                Op::Ge => ord != Ordering::Less,
                _ => false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_circles_record_is_as_small_as_before_rectangles() {
        // The circles' tree holds what it held when every area was a circle: a 12-byte
        // circle in a 40-byte record (rectangles live in their own tree).
        assert_eq!(std::mem::size_of::<Circle>(), 12);
        assert_eq!(std::mem::size_of::<IndexedArea>(), 40);
    }

    #[test]
    fn a_move_carries_a_filter_between_the_two_trees() {
        let subs = Subscriptions::new([clcb::model::Subscription {
            id: SubscriptionId(7),
            filters: vec![
                clcb::model::Filter::new(vec![], Area::circle(0.0, 0.0, 1.0).unwrap()).unwrap(),
            ],
        }]);
        let mut t = RTreeMatcher::build(&subs);
        let at = |x: f64, y: f64| Location::new(x, y).unwrap();
        assert_eq!(t.locate(at(0.5, 0.5)), vec![SubscriptionId(7)]);
        let to = |area: Area| AreaUpdate {
            filter: clcb::model::FilterId(0),
            area,
        };
        t.move_area(&to(Area::rect(10.0, 10.0, 14.0, 11.0).unwrap()))
            .unwrap();
        assert_eq!((t.tree.size(), t.rects.size()), (0, 1));
        assert!(t.locate(at(0.5, 0.5)).is_empty());
        // Borders included, nothing past them.
        assert_eq!(t.locate(at(14.0, 10.0)), vec![SubscriptionId(7)]);
        assert!(t.locate(at(14.001, 10.0)).is_empty());
        t.move_area(&to(Area::circle(-5.0, 0.0, 2.0).unwrap()))
            .unwrap();
        assert_eq!((t.tree.size(), t.rects.size()), (1, 0));
        assert_eq!(t.locate(at(-3.0, 0.0)), vec![SubscriptionId(7)]);
        assert!(t.locate(at(12.0, 10.5)).is_empty());
    }
}
