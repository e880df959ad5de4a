//! SFF "with location": the CLCB paper's first approach (§4.1, item 1; Table 2, second
//! and third lines) — location encoded in the content, matched by a traditional counting
//! matcher, the SFF-like one of [`crate::sff`].
//!
//! SFF has no spatial operator, so the encoding is the one its operators allow: every
//! event gets two numeric attributes, its `x` and `y`; every filter gets four order
//! constraints, `x >= cx - r`, `x <= cx + r`, `y >= cy - r`, `y <= cy + r` (its area's
//! bounding box, widened by a few ULPs; a rectangle's own corners, its exact test). These go through SFF's own index (sorted values,
//! binary search) and counters like any other constraint; since every filter constrains
//! the same two names, each event bumps the counters of about half of all filters per
//! bound, which is exactly the effect the paper measures (SFF 8.6x slower with
//! location). A filter whose counter reaches its size (content + 4) is then checked
//! with the model's exact point-in-circle test, so the answers are the model's.
//!
//! Per-subscription pruning as SFF's per-interface pruning: once a subscription
//! matched, its other filters are skipped.
//!
//! Updates: SFF has no primitive to change a filter; like SFF 1.9.5 in the paper
//! ("completely re-creates all indexes after each update") [`SffLocation::move_area`]
//! rebuilds the whole index.

use crate::matcher::BatchNames;
use crate::sff::{ByName, Counters, FilterIdx, NameIndex, Probe, Sff, SffError};
use clcb::batch::EventBatch;
use clcb::model::{
    Area, AreaUpdate, Circle, Event, Location, ModelError, Op, SubscriptionId, Subscriptions, Value,
};

/// The circle a rectangle's filter is tested against after its bounds: it holds every
/// point (`dx*dx + dy*dy` is never NaN for finite `dx`, `dy`, and `<= ∞`).
const ANYWHERE: Circle = Circle {
    center: Location { x: 0.0, y: 0.0 },
    sq_radius: f32::INFINITY,
};

/// The SFF-like matcher over content plus location-as-constraints.
pub struct SffLocation {
    by_name: ByName,
    /// `x` and `y` bound constraints (SFF indexes them like any numeric name).
    x: NameIndex,
    y: NameIndex,
    /// Per filter: (constraints including the 4 bounds, dense subscription index).
    filters: Vec<(u32, u32)>,
    /// Per filter: its exact circle (the 12-byte circle, as before rectangles); a
    /// rectangle's is [`ANYWHERE`], since its four bound constraints are its exact test.
    areas: Vec<Circle>,
    ids: Vec<SubscriptionId>,
}

/// Per-thread scratch memory.
pub struct Scratch {
    counters: Counters,
    matched: Vec<bool>,
}

impl SffLocation {
    /// Builds the index of `subs`.
    ///
    /// ```
    /// use baselines::{rtree::RTreeMatcher, sff_location::SffLocation};
    /// use clcb::workload::{Params, Workload};
    /// let params = Params {
    ///     events: 20,
    ///     subscriptions: 200,
    ///     names: 10,
    ///     area_percent: 10.0,
    ///     selectivity_percent: 50.0,
    ///     ..Params::default()
    /// };
    /// let w = Workload::new(params, 2);
    /// let subs = w.subscriptions();
    /// let sff = SffLocation::build(&subs);
    /// let rtree = RTreeMatcher::build(&subs);
    /// for e in w.events() {
    ///     assert_eq!(sff.match_event(&e), rtree.match_event(&e, &subs));
    /// }
    /// ```
    pub fn build(subs: &Subscriptions) -> SffLocation {
        let mut m = SffLocation {
            by_name: ByName::default(),
            x: NameIndex::default(),
            y: NameIndex::default(),
            filters: Vec::with_capacity(subs.filter_count()),
            areas: Vec::with_capacity(subs.filter_count()),
            ids: subs.as_slice().iter().map(|s| s.id).collect(),
        };
        for (fid, sub, f) in subs.filters() {
            let fi: FilterIdx = fid.0;
            for c in &f.constraints {
                m.by_name.entry(&c.name).insert(c.op, &c.value, fi);
            }
            let (lo_x, hi_x, lo_y, hi_y, circle) = match f.area {
                Area::Circle {
                    center: c,
                    sq_radius,
                } => {
                    let a = Circle {
                        center: c,
                        sq_radius,
                    };
                    let r = a.radius();
                    let pad = (r + c.x.abs().max(c.y.abs())) * 1e-6 + f32::MIN_POSITIVE;
                    (
                        c.x - r - pad,
                        c.x + r + pad,
                        c.y - r - pad,
                        c.y + r + pad,
                        a,
                    )
                }
                // A rectangle's four comparisons are its exact test.
                Area::Rect { lo, hi } => (lo.x, hi.x, lo.y, hi.y, ANYWHERE),
            };
            m.x.insert(Op::Ge, &Value::Float(lo_x as f64), fi);
            m.x.insert(Op::Le, &Value::Float(hi_x as f64), fi);
            m.y.insert(Op::Ge, &Value::Float(lo_y as f64), fi);
            m.y.insert(Op::Le, &Value::Float(hi_y as f64), fi);
            m.filters.push((f.constraints.len() as u32 + 4, sub as u32));
            m.areas.push(circle);
        }
        m.by_name.finish();
        m.x.finish();
        m.y.finish();
        m
    }

    /// Fresh scratch memory for [`SffLocation::match_indices_with`].
    pub fn scratch(&self) -> Scratch {
        Scratch {
            counters: Counters::new(self.filters.len()),
            matched: vec![false; self.ids.len()],
        }
    }

    /// The dense indices of the subscriptions matching `e`, ascending.
    pub fn match_indices_with(&self, e: &Event, scratch: &mut Scratch) -> Vec<u32> {
        self.match_probes(e.loc, self.by_name.heap_probes(e.attributes()), scratch)
    }

    /// The names of `batch` in this matcher's numbering, for
    /// [`SffLocation::match_in_batch_with`] (once per batch).
    pub fn batch_names(&self, batch: &EventBatch) -> BatchNames {
        self.by_name.batch_names(batch.content().names())
    }

    /// [`SffLocation::match_indices_with`] for event `i` of `batch`, read in place: its
    /// location from the batch's columns, its names through `names` (no hashing; made
    /// again when they are not this batch's), its values from their records.
    pub fn match_in_batch_with(
        &self,
        batch: &EventBatch,
        names: &BatchNames,
        i: usize,
        scratch: &mut Scratch,
    ) -> Vec<u32> {
        let mut fresh = None;
        let probes = self
            .by_name
            .batch_probes(batch.content(), names, i, &mut fresh);
        self.match_probes(batch.loc(i), probes, scratch)
    }

    /// The dense indices of the subscriptions matching the event at `loc` with the
    /// attributes of `probes` (per attribute whose name some constraint has: the
    /// name's number and the value), ascending.
    fn match_probes<'a>(
        &self,
        loc: Location,
        probes: impl Iterator<Item = (u32, Probe<'a>)>,
        scratch: &mut Scratch,
    ) -> Vec<u32> {
        if scratch.matched.len() != self.ids.len() {
            *scratch = self.scratch();
        }
        let Scratch { counters, matched } = scratch;
        counters.next_event();
        matched.iter_mut().for_each(|m| *m = false);
        let mut out = Vec::new();
        let mut visit = |f: FilterIdx| {
            let (size, sub) = self.filters[f as usize];
            if matched[sub as usize] {
                return;
            }
            if counters.bump(f) == size && self.areas[f as usize].contains(loc) {
                matched[sub as usize] = true;
                out.push(sub);
            }
        };
        self.x
            .for_each_satisfied(&Value::Float(loc.x as f64), &mut visit);
        self.y
            .for_each_satisfied(&Value::Float(loc.y as f64), &mut visit);
        for (k, value) in probes {
            self.by_name.index(k).for_each_probe(value, &mut visit);
        }
        out.sort_unstable();
        out
    }

    /// [`SffLocation::match_indices_with`] with fresh scratch memory.
    pub fn match_indices(&self, e: &Event) -> Vec<u32> {
        self.match_indices_with(e, &mut self.scratch())
    }

    /// The ids of the subscriptions matching `e`, ascending.
    pub fn match_event(&self, e: &Event) -> Vec<SubscriptionId> {
        self.match_indices(e)
            .into_iter()
            .map(|i| self.ids[i as usize])
            .collect()
    }

    /// Moves a filter's area in `subs` and rebuilds the index from it (SFF has no update).
    pub fn move_area(
        &mut self,
        u: &AreaUpdate,
        subs: &mut Subscriptions,
    ) -> Result<(), ModelError> {
        subs.apply(u)?;
        *self = SffLocation::build(subs);
        Ok(())
    }
}

/// The content of `subs` as CCM subscriptions (each filter one subscription of the
/// interface numbered like its subscription): Table 2's "without location" workload for
/// [`Sff`]. Filters without content constraints are left out (CCM refuses them).
pub fn content_only(subs: &Subscriptions) -> Vec<ccm::model::Subscription> {
    subs.as_slice()
        .iter()
        .flat_map(|s| {
            s.filters
                .iter()
                .filter(|f| !f.constraints.is_empty())
                .map(move |f| ccm::model::Subscription {
                    interface: ccm::model::InterfaceId(s.id.0),
                    filter: ccm::model::Filter {
                        constraints: f.constraints.clone(),
                    },
                })
        })
        .collect()
}

/// [`Sff`] over [`content_only`].
pub fn content_sff(subs: &Subscriptions) -> Result<Sff, SffError> {
    Sff::build(&content_only(subs))
}
