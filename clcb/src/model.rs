//! The location-aware interaction model of §2: events carry content (CCM's typed
//! attributes, reused from [`ccm::model`]) and a location; a [`Filter`] is a conjunction
//! of content constraints plus an area of relevance (a circle, §2 and footnote 2, or,
//! beyond the paper, an axis-aligned rectangle); a
//! [`Subscription`] is a disjunction of filters. A subscription `s` matches an event `e`
//! iff `∃k: loc(e) ∈ area(f_k) ∧ matches(e, f_k)`.
//!
//! Content typing is CCM's ([`ccm::model`]): numbers `=` `!=` `<` `>` `<=` `>=`, strings
//! `=` `!=` `prefix` `suffix` `substr`; integers and floats compare exactly; a type
//! mismatch or an absent attribute leaves a constraint unsatisfied.
//!
//! Geometry (the one definition every engine uses): a location is two `f32`s (CUDA's
//! `float2`); an area stores its centre and its *squared* radius (`SqDist`, §4.3), computed
//! once as `r * r` in `f32`; a point is inside iff `dx*dx + dy*dy <= r²`, evaluated in
//! `f32` in exactly that order (Algorithm 1, lines 14–16). A rectangle stores its two
//! corners and holds a point iff `lo.x <= x <= hi.x` and `lo.y <= y <= hi.y` (no
//! rounding at all). The border belongs to the area.
//!
//! Unlike CCM, a CLCB filter may have no content constraint: it is then a pure location
//! filter, matched by its area alone (the `Loc` kernel completes it itself).
//!
//! The model holds no matching logic beyond [`Area::contains`]; the engines and the
//! baselines each evaluate content on their own.

pub use ccm::model::{Attribute, Constraint, Op, Value};
use rayon::iter::{IndexedParallelIterator, IntoParallelRefIterator, ParallelIterator};
use rayon::slice::ParallelSliceMut;
use std::fmt;

/// What makes a model object ill formed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    Content(#[from] ccm::model::ModelError),
    #[error("coordinate {what} = {value} is not a finite number")]
    NotFinite { what: &'static str, value: f64 },
    #[error("radius {0} is negative")]
    NegativeRadius(f64),
    #[error("rectangle {0:?} is inverted (x0 > x1 or y0 > y1)")]
    InvertedRectangle([f64; 4]),
    #[error(
        "a filter has {0} constraints; at most {MAX_CONSTRAINTS} fit the one-byte counters of §4.3"
    )]
    TooManyConstraints(usize),
    #[error("filter {0} does not exist (there are {1} filters)")]
    NoSuchFilter(u32, usize),
    #[error("subscription {0} does not exist (there are {1} subscriptions)")]
    NoSuchSubscription(u32, usize),
}

/// Most content constraints per filter: `FCount` keeps one byte per run (§4.3), which
/// counts the area plus the constraints, so at most 254 constraints.
pub const MAX_CONSTRAINTS: usize = 254;

/// A location in the plane (§2: Cartesian coordinates; CUDA `float2`).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Location {
    pub x: f32,
    pub y: f32,
}

impl Location {
    /// A checked location: both coordinates finite once rounded to `f32`.
    pub fn new(x: f64, y: f64) -> Result<Self, ModelError> {
        Ok(Location {
            x: finite32("x", x)?,
            y: finite32("y", y)?,
        })
    }
}

fn finite32(what: &'static str, v: f64) -> Result<f32, ModelError> {
    let f = v as f32;
    if f.is_finite() {
        Ok(f)
    } else {
        Err(ModelError::NotFinite { what, value: v })
    }
}

/// A circle as the paper's GPU stores it (`FPos`, `SqDist`), the circle form of [`Area`]
/// on its own: 12 bytes, what an engine that keeps its circles apart from its rectangles
/// stores per circle (the R*-tree, SFF), so that circles cost what they did before
/// rectangles.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Circle {
    pub center: Location,
    pub sq_radius: f32,
}

impl Circle {
    /// The radius (`sqrt` of the stored square).
    pub fn radius(&self) -> f32 {
        self.sq_radius.sqrt()
    }

    /// `p ∈ circle`: `dx*dx + dy*dy <= r²` in `f32` (Algorithm 1, lines 14–16), the
    /// circle's test of [`Area::contains`].
    #[inline]
    pub fn contains(&self, p: Location) -> bool {
        let dx = p.x - self.center.x;
        let dy = p.y - self.center.y;
        let sq_dist_x = dx * dx;
        let sq_dist_y = dy * dy;
        sq_dist_x + sq_dist_y <= self.sq_radius
    }
}

/// A filter's area of relevance (§2): a circle, stored as the paper's GPU stores it,
/// centre (`FPos`) and squared radius (`SqDist`); or, beyond the paper, an axis-aligned
/// rectangle (the regions of spatio-textual publish-subscribe, as FAST indexes them),
/// stored as its two corners and tested exactly: `lo.x <= x <= hi.x` and
/// `lo.y <= y <= hi.y`, no arithmetic, so every engine agrees to the bit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Area {
    Circle { center: Location, sq_radius: f32 },
    Rect { lo: Location, hi: Location },
}

impl Default for Area {
    fn default() -> Self {
        Area::Circle {
            center: Location::default(),
            sq_radius: 0.0,
        }
    }
}

impl Area {
    /// The circle of centre `(x, y)` and radius `r`; the squared radius is `r * r` in `f32`.
    pub fn circle(x: f64, y: f64, r: f64) -> Result<Self, ModelError> {
        if r < 0.0 {
            return Err(ModelError::NegativeRadius(r));
        }
        let r = finite32("radius", r)?;
        let sq = r * r;
        if !sq.is_finite() {
            return Err(ModelError::NotFinite {
                what: "radius²",
                value: f64::from(r) * f64::from(r),
            });
        }
        Ok(Area::Circle {
            center: Location::new(x, y)?,
            sq_radius: sq,
        })
    }

    /// The circle of centre `center` and squared radius `sq_radius` as given (the
    /// generators' form; a negative or NaN square holds no point).
    pub fn circle_sq(center: Location, sq_radius: f32) -> Self {
        Area::Circle { center, sq_radius }
    }

    /// The rectangle `[x0, x1] × [y0, y1]`, borders included: corners rounded to `f32`,
    /// finite, `x0 <= x1` and `y0 <= y1` (a zero width or height is a segment or a point).
    pub fn rect(x0: f64, y0: f64, x1: f64, y1: f64) -> Result<Self, ModelError> {
        let (lo, hi) = (Location::new(x0, y0)?, Location::new(x1, y1)?);
        if lo.x > hi.x || lo.y > hi.y {
            return Err(ModelError::InvertedRectangle([x0, y0, x1, y1]));
        }
        Ok(Area::Rect { lo, hi })
    }

    /// The circle, if this is one.
    #[inline]
    pub fn as_circle(&self) -> Option<Circle> {
        match *self {
            Area::Circle { center, sq_radius } => Some(Circle { center, sq_radius }),
            Area::Rect { .. } => None,
        }
    }

    /// Whether this is a rectangle.
    pub fn is_rect(&self) -> bool {
        matches!(self, Area::Rect { .. })
    }

    /// A circle's centre, a rectangle's centre (in `f64`, exact).
    pub fn center(&self) -> (f64, f64) {
        match *self {
            Area::Circle { center, .. } => (f64::from(center.x), f64::from(center.y)),
            Area::Rect { lo, hi } => (
                (f64::from(lo.x) + f64::from(hi.x)) / 2.0,
                (f64::from(lo.y) + f64::from(hi.y)) / 2.0,
            ),
        }
    }

    /// A circle's radius (`sqrt` of the stored square, 0 for a negative one); half a
    /// rectangle's longer side: what sizes a grid's cells.
    pub fn radius(&self) -> f32 {
        match *self {
            Area::Circle { sq_radius, .. } => sq_radius.max(0.0).sqrt(),
            Area::Rect { lo, hi } => {
                ((f64::from(hi.x) - f64::from(lo.x)).max(f64::from(hi.y) - f64::from(lo.y)) / 2.0)
                    as f32
            }
        }
    }

    /// The bounding box `[x0, y0, x1, y1]` in `f64`: a circle's from its radius (not
    /// widened against rounding: see the indexes), a rectangle's its corners.
    pub fn bounds(&self) -> [f64; 4] {
        match *self {
            Area::Circle { center, .. } => {
                let r = f64::from(self.radius());
                let (x, y) = (f64::from(center.x), f64::from(center.y));
                [x - r, y - r, x + r, y + r]
            }
            Area::Rect { lo, hi } => [
                f64::from(lo.x),
                f64::from(lo.y),
                f64::from(hi.x),
                f64::from(hi.y),
            ],
        }
    }

    /// `p ∈ area`. A circle: `dx*dx + dy*dy <= r²` in `f32` (Algorithm 1, lines 14–16);
    /// a rectangle: `lo <= p <= hi` on both axes.
    #[inline]
    pub fn contains(&self, p: Location) -> bool {
        match *self {
            Area::Circle { center, sq_radius } => Circle { center, sq_radius }.contains(p),
            Area::Rect { lo, hi } => lo.x <= p.x && p.x <= hi.x && lo.y <= p.y && p.y <= hi.y,
        }
    }

    /// The same area moved so that its centre (a rectangle: its low corner) is `to` (§5:
    /// a move copies position and size).
    pub fn moved_to(&self, to: Location) -> Area {
        match *self {
            Area::Circle { sq_radius, .. } => Area::Circle {
                center: to,
                sq_radius,
            },
            Area::Rect { lo, hi } => Area::Rect {
                lo: to,
                hi: Location {
                    x: to.x + (hi.x - lo.x),
                    y: to.y + (hi.y - lo.y),
                },
            },
        }
    }
}

/// A filter (§2): a conjunction of content constraints and an area of relevance.
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    pub constraints: Vec<Constraint>,
    pub area: Area,
}

impl Filter {
    /// A checked filter: each constraint well formed, at most [`MAX_CONSTRAINTS`].
    pub fn new(constraints: Vec<Constraint>, area: Area) -> Result<Self, ModelError> {
        let f = Filter { constraints, area };
        f.validate()?;
        Ok(f)
    }

    /// Checks what [`Filter::new`] checks.
    pub fn validate(&self) -> Result<(), ModelError> {
        if self.constraints.len() > MAX_CONSTRAINTS {
            return Err(ModelError::TooManyConstraints(self.constraints.len()));
        }
        for c in &self.constraints {
            c.validate()?;
        }
        Ok(())
    }
}

/// A subscription's id, as users write it; engines use dense indices internally.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SubscriptionId(pub u32);

impl fmt::Display for SubscriptionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A subscription (§2): a disjunction of filters, each with its own area.
#[derive(Clone, Debug, PartialEq)]
pub struct Subscription {
    pub id: SubscriptionId,
    pub filters: Vec<Filter>,
}

/// A filter's position in a [`Subscriptions`] set: subscriptions in order, each one's
/// filters in order. Area updates name filters this way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FilterId(pub u32);

/// Moves the area of relevance of one filter (§5, Fig. 5).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AreaUpdate {
    pub filter: FilterId,
    pub area: Area,
}

/// An event (§2): content attributes (CCM's event) and the location where it happened.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Event {
    pub loc: Location,
    pub content: ccm::model::Event,
}

impl Event {
    pub fn attributes(&self) -> &[Attribute] {
        self.content.attributes()
    }
}

/// The installed subscriptions, in ascending id order, with their filters numbered
/// ([`FilterId`]) in that order. Subscription `i` (a dense index) has filters
/// `filter_start(i)..filter_start(i + 1)`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Subscriptions {
    subs: Vec<Subscription>,
    /// `starts[i]`: first filter of subscription `i`; `starts[len]` = number of filters.
    starts: Vec<u32>,
}

impl Subscriptions {
    /// Sorts by id and merges subscriptions sharing an id (their filters concatenated in
    /// the order given).
    /// A file of one line per filter, the lines of a subscription together and in id
    /// order (as `clcb generate` writes them), is merged in one pass; any other order is
    /// first sorted by id on all cores (stably, so the filters stay in the order given).
    pub fn new(subs: impl IntoIterator<Item = Subscription>) -> Self {
        let mut subs: Vec<Subscription> = subs.into_iter().collect();
        if subs.windows(2).any(|w| w[0].id > w[1].id) {
            subs.par_sort_by_key(|s| s.id);
        }
        if subs.windows(2).all(|w| w[0].id != w[1].id) {
            return Self::from_sorted(subs);
        }
        // Each run of one id merged on all cores (in order); the lines' emptied
        // subscriptions freed off this path.
        let merged: Vec<Subscription> = subs
            .par_chunk_by_mut(|a, b| a.id == b.id)
            .map(|run| {
                let n = run.iter().map(|s| s.filters.len()).sum();
                let mut filters = Vec::with_capacity(n);
                for s in run.iter_mut() {
                    filters.append(&mut s.filters);
                }
                Subscription {
                    id: run[0].id,
                    filters,
                }
            })
            .collect();
        rayon::spawn(move || drop(subs));
        Self::from_sorted(merged)
    }

    /// Takes subscriptions already in strictly ascending id order (the generator's);
    /// falls back to [`Subscriptions::new`] otherwise.
    pub fn from_sorted(subs: Vec<Subscription>) -> Self {
        if subs.windows(2).any(|w| w[0].id >= w[1].id) {
            return Self::new(subs);
        }
        let mut starts = Vec::with_capacity(subs.len() + 1);
        let mut n = 0u32;
        for s in &subs {
            starts.push(n);
            n += s.filters.len() as u32;
        }
        starts.push(n);
        Subscriptions { subs, starts }
    }

    pub fn as_slice(&self) -> &[Subscription] {
        &self.subs
    }

    pub fn len(&self) -> usize {
        self.subs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.subs.is_empty()
    }

    /// Total number of filters.
    pub fn filter_count(&self) -> usize {
        *self.starts.last().unwrap_or(&0) as usize
    }

    /// First filter of subscription index `i` (`i == len()` gives the filter count).
    pub fn filter_start(&self, i: usize) -> FilterId {
        FilterId(self.starts[i])
    }

    /// Every filter with its id and its subscription's dense index.
    pub fn filters(&self) -> impl Iterator<Item = (FilterId, usize, &Filter)> + '_ {
        self.subs.iter().enumerate().flat_map(move |(i, s)| {
            let first = self.starts[i];
            s.filters
                .iter()
                .enumerate()
                .map(move |(k, f)| (FilterId(first + k as u32), i, f))
        })
    }

    /// Every filter (in [`FilterId`] order) with its subscription's dense index, gathered
    /// on all cores: what the index builds read by filter number.
    pub fn filters_by_id(&self) -> Vec<(usize, &Filter)> {
        self.subs
            .par_iter()
            .enumerate()
            .flat_map_iter(|(s, sub)| sub.filters.iter().map(move |f| (s, f)))
            .collect()
    }

    /// The subscription index holding filter `f`, and `f`'s position in it.
    pub fn locate(&self, f: FilterId) -> Result<(usize, usize), ModelError> {
        if f.0 as usize >= self.filter_count() {
            return Err(ModelError::NoSuchFilter(f.0, self.filter_count()));
        }
        let i = self.starts.partition_point(|&s| s <= f.0) - 1;
        Ok((i, (f.0 - self.starts[i]) as usize))
    }

    pub fn filter(&self, f: FilterId) -> Result<&Filter, ModelError> {
        let (i, k) = self.locate(f)?;
        Ok(&self.subs[i].filters[k])
    }

    /// Moves a filter's area (the model side of [`AreaUpdate`]).
    pub fn apply(&mut self, u: &AreaUpdate) -> Result<(), ModelError> {
        let (i, k) = self.locate(u.filter)?;
        self.subs[i].filters[k].area = u.area;
        Ok(())
    }

    /// Dense index -> the user's id.
    pub fn id(&self, i: usize) -> SubscriptionId {
        self.subs[i].id
    }

    /// The first `n` subscriptions (the generator's workloads are prefix-closed, so a
    /// sweep over subscription counts reuses one generated set).
    pub fn prefix(&self, n: usize) -> Subscriptions {
        Subscriptions::from_sorted(self.subs[..n.min(self.subs.len())].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn area_border_belongs_to_the_area() {
        let a = Area::circle(0.0, 0.0, 2.0).unwrap();
        assert!(a.contains(Location { x: 2.0, y: 0.0 }));
        assert!(a.contains(Location { x: 0.0, y: -2.0 }));
        assert!(!a.contains(Location { x: 2.0, y: 0.01 }));
        let dot = Area::circle(1.0, 1.0, 0.0).unwrap();
        assert!(dot.contains(Location { x: 1.0, y: 1.0 }));
        assert!(!dot.contains(Location {
            x: 1.0,
            y: 1.000001
        }));
    }

    #[test]
    fn rectangles_hold_their_borders_and_nothing_past_them() {
        let r = Area::rect(-1.0, 2.0, 3.0, 2.0).unwrap();
        assert!(r.contains(Location { x: -1.0, y: 2.0 }));
        assert!(r.contains(Location { x: 3.0, y: 2.0 }));
        assert!(!r.contains(Location { x: 3.0001, y: 2.0 }));
        assert!(!r.contains(Location { x: 0.0, y: 2.0001 }));
        assert_eq!(r.bounds(), [-1.0, 2.0, 3.0, 2.0]);
        assert_eq!(r.radius(), 2.0);
        assert!(matches!(
            Area::rect(1.0, 0.0, 0.0, 1.0),
            Err(ModelError::InvertedRectangle(_))
        ));
        assert!(Area::rect(0.0, 0.0, 1e300, 1.0).is_err());
        assert!(Area::rect(0.0, f64::NAN, 1.0, 1.0).is_err());
        let huge = Area::rect(-3e38, -3e38, 3e38, 3e38).unwrap();
        assert!(huge.contains(Location { x: 1e38, y: -1e38 }));
    }

    #[test]
    fn area_rejects_negative_and_infinite_values() {
        assert!(matches!(
            Area::circle(0.0, 0.0, -1.0),
            Err(ModelError::NegativeRadius(_))
        ));
        assert!(Area::circle(f64::INFINITY, 0.0, 1.0).is_err());
        assert!(Area::circle(0.0, 1e300, 1.0).is_err());
        assert!(Area::circle(0.0, 0.0, 1e30).is_err(), "r² overflows f32");
    }

    /// A file's order (a subscription's lines together, ids ascending) merges each run
    /// of one id into one subscription, its filters in the lines' order.
    #[test]
    fn runs_of_one_id_in_id_order_merge_into_one_subscription_each() {
        let f = |x: f64| Filter::new(vec![], Area::circle(x, 0.0, 1.0).unwrap()).unwrap();
        let line = |id, x| Subscription {
            id: SubscriptionId(id),
            filters: vec![f(x)],
        };
        let set = Subscriptions::new([
            line(1, 1.0),
            line(1, 2.0),
            line(4, 3.0),
            line(4, 4.0),
            line(4, 5.0),
        ]);
        assert_eq!(set.len(), 2);
        assert_eq!(
            (set.id(0), set.id(1)),
            (SubscriptionId(1), SubscriptionId(4))
        );
        let xs: Vec<f64> = (0..5)
            .map(|i| set.filter(FilterId(i)).unwrap().area.center().0)
            .collect();
        assert_eq!(xs, [1.0, 2.0, 3.0, 4.0, 5.0]);
    }

    /// Many runs (merged in parts on all cores), of lengths 1 to 4, keep their ids and
    /// their filters' order, and a file with no repeated id is taken as it is.
    #[test]
    fn many_runs_merge_in_order_on_all_cores() {
        let f = |x: f64| Filter::new(vec![], Area::circle(x, 0.0, 1.0).unwrap()).unwrap();
        let mut lines = Vec::new();
        for id in 0..20_000u32 {
            for _ in 0..=id % 4 {
                lines.push(Subscription {
                    id: SubscriptionId(id),
                    filters: vec![f(lines.len() as f64)],
                });
            }
        }
        let n = lines.len();
        let set = Subscriptions::new(lines);
        assert_eq!(set.len(), 20_000);
        assert_eq!(set.filter_count(), n);
        assert!((0..20_000).all(|i| set.id(i) == SubscriptionId(i as u32)));
        assert!((0..20_000).all(|i| set.as_slice()[i].filters.len() == i % 4 + 1));
        let xs: Vec<f64> = (0..n as u32)
            .map(|i| set.filter(FilterId(i)).unwrap().area.center().0)
            .collect();
        assert!(xs.iter().enumerate().all(|(i, &x)| x == i as f64));
        let distinct = Subscriptions::new((0..5).map(|id| Subscription {
            id: SubscriptionId(id),
            filters: vec![f(id as f64)],
        }));
        assert_eq!((distinct.len(), distinct.filter_count()), (5, 5));
    }

    #[test]
    fn subscriptions_merge_ids_and_number_filters_in_order() {
        let a = Area::circle(0.0, 0.0, 1.0).unwrap();
        let f = |x: f64| Filter::new(vec![], Area::circle(x, 0.0, 1.0).unwrap()).unwrap();
        let set = Subscriptions::new([
            Subscription {
                id: SubscriptionId(9),
                filters: vec![f(1.0)],
            },
            Subscription {
                id: SubscriptionId(2),
                filters: vec![f(2.0), f(3.0)],
            },
            Subscription {
                id: SubscriptionId(9),
                filters: vec![f(4.0)],
            },
        ]);
        assert_eq!(set.len(), 2);
        assert_eq!(set.filter_count(), 4);
        assert_eq!(set.id(0), SubscriptionId(2));
        assert_eq!(set.locate(FilterId(3)).unwrap(), (1, 1));
        assert_eq!(set.filter(FilterId(2)).unwrap().area.center(), (1.0, 0.0));
        assert!(set.locate(FilterId(4)).is_err());
        let mut moved = set.clone();
        moved
            .apply(&AreaUpdate {
                filter: FilterId(0),
                area: a,
            })
            .unwrap();
        assert_eq!(moved.filter(FilterId(0)).unwrap().area, a);
    }
}
