//! A spatio-textual workload beyond the paper: the keyword workload on which FAST
//! (Mahmood, Aly et al., "FAST: frequency-aware indexing for spatio-textual data
//! streams", ICDE 2018) and the other spatio-textual publish-subscribe indexes are
//! measured, in CLCB's model.
//!
//! A subscription is one filter: a region covering [`KeywordParams::area_percent`]
//! of a square world (centre uniform) and 1-3 distinct keywords; the region is a circle,
//! or, with [`Region::Rect`], an axis-aligned rectangle of the same area whose aspect
//! ratio (width / height) is drawn log-uniform in `[1/a, a]` (FAST's range queries are
//! rectangles); an event is a point
//! (uniform) and 3-8 distinct keywords. Keywords are drawn from a vocabulary of
//! [`KeywordParams::vocabulary`] words with Zipf frequencies (exponent 1). A filter
//! matches when the event's point is in its region and the event carries each of its
//! keywords.
//!
//! Keywords as CLCB content: keyword `w` is an attribute named `w` whose value is the
//! string `w` on the event, and the string equality `w = "w"` in a filter (an event
//! carries each name at most once, so a keyword is a name; the equality makes it a
//! content test every engine evaluates, and the key a content index can look up).
//!
//! Determinism as in [`crate::workload`]: subscription `i` and event `j` each draw from
//! their own ChaCha stream of the seed, so a workload of 100k subscriptions is the first
//! 100k of one of 1M.

use crate::batch::EventBatch;
use crate::model::{
    Area, Constraint, Event, Filter, Location, Op, Subscription, SubscriptionId, Subscriptions,
    Value,
};
use ccm::batch::ValueRef;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::Distribution;
use rayon::prelude::*;

/// The keyword workload's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct KeywordParams {
    /// Number of subscriptions (one filter each).
    pub subscriptions: usize,
    /// Number of events.
    pub events: usize,
    /// Area of each region, in percent of the world (0.01 or 1).
    pub area_percent: f64,
    /// Words in the vocabulary (10 000).
    pub vocabulary: usize,
    /// Zipf exponent of the words' frequencies (1).
    pub zipf: f64,
    /// Keywords per filter, min-max (1-3).
    pub keywords_per_filter: (usize, usize),
    /// Keywords per event, min-max (3-8).
    pub keywords_per_event: (usize, usize),
    /// Side of the square world (10 000 length units, as [`crate::workload::Params`]).
    pub world_side: f64,
    /// The regions' shape (circles).
    pub region: Region,
}

/// The shape of the keyword workload's regions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Region {
    /// Circles of radius [`KeywordWorkload::radius`].
    Circle,
    /// Rectangles of the circles' area, aspect ratio log-uniform in
    /// `[1 / max_aspect, max_aspect]`.
    Rect { max_aspect: f64 },
}

impl Default for KeywordParams {
    fn default() -> Self {
        KeywordParams {
            subscriptions: 100_000,
            events: 1000,
            area_percent: 0.01,
            vocabulary: 10_000,
            zipf: 1.0,
            keywords_per_filter: (1, 3),
            keywords_per_event: (3, 8),
            world_side: 10_000.0,
            region: Region::Circle,
        }
    }
}

const SUBS: u64 = 0x6u64 << 56;
const EVENTS: u64 = 0x7u64 << 56;

/// The keyword workload of a [`KeywordParams`] and a seed.
#[derive(Clone, Debug)]
pub struct KeywordWorkload {
    pub params: KeywordParams,
    pub seed: u64,
}

impl KeywordWorkload {
    /// ```
    /// use clcb::keywords::{KeywordParams, KeywordWorkload};
    /// let w = KeywordWorkload::new(KeywordParams { subscriptions: 50, events: 5, ..Default::default() }, 1);
    /// let subs = w.subscriptions();
    /// assert_eq!(subs.filter_count(), 50);
    /// let e = w.event(0);
    /// assert!((3..=8).contains(&e.attributes().len()));
    /// ```
    pub fn new(params: KeywordParams, seed: u64) -> KeywordWorkload {
        KeywordWorkload { params, seed }
    }

    /// The word of rank `r` (0: the most frequent).
    pub fn word(r: usize) -> String {
        format!("w{r}")
    }

    /// `k` distinct words drawn by Zipf frequency.
    fn words(&self, k: usize, rng: &mut ChaCha8Rng) -> Vec<usize> {
        let n = self.params.vocabulary.max(1);
        let zipf = rand_distr::Zipf::new(n as u64, self.params.zipf).expect("n >= 1 and s > 0");
        let mut out: Vec<usize> = Vec::with_capacity(k);
        while out.len() < k.min(n) {
            let r = (zipf.sample(rng) as usize).clamp(1, n) - 1;
            if !out.contains(&r) {
                out.push(r);
            }
        }
        out
    }

    fn point(&self, rng: &mut ChaCha8Rng) -> Location {
        let side = self.params.world_side;
        Location {
            x: (rng.gen::<f64>() * side) as f32,
            y: (rng.gen::<f64>() * side) as f32,
        }
    }

    /// The radius of a region covering [`KeywordParams::area_percent`] of the world.
    pub fn radius(&self) -> f64 {
        self.params.world_side * (self.params.area_percent / 100.0 / std::f64::consts::PI).sqrt()
    }

    /// Subscription `i` (its id is `i`).
    pub fn subscription(&self, i: usize) -> Subscription {
        let mut rng = rng(self.seed, SUBS, i as u64);
        let (lo, hi) = self.params.keywords_per_filter;
        let k = rng.gen_range(lo..=hi.max(lo));
        let constraints = self
            .words(k, &mut rng)
            .into_iter()
            .map(|r| {
                let w = Self::word(r);
                Constraint {
                    name: w.clone(),
                    op: Op::Eq,
                    value: Value::Str(w),
                }
            })
            .collect();
        let r = self.radius() as f32;
        let center = self.point(&mut rng);
        let area = match self.params.region {
            Region::Circle => Area::circle_sq(center, r * r),
            Region::Rect { max_aspect } => {
                // Width w and height h of area A = w * h, w / h = aspect (f64, then each
                // corner rounded to f32: monotone, so lo <= hi).
                let a = self.params.world_side.powi(2) * self.params.area_percent / 100.0;
                let l = max_aspect.max(1.0).ln();
                let aspect = if l > 0.0 {
                    rng.gen_range(-l..=l).exp()
                } else {
                    1.0
                };
                let (hw, hh) = ((a * aspect).sqrt() / 2.0, (a / aspect).sqrt() / 2.0);
                let (x, y) = (f64::from(center.x), f64::from(center.y));
                Area::Rect {
                    lo: Location {
                        x: (x - hw) as f32,
                        y: (y - hh) as f32,
                    },
                    hi: Location {
                        x: (x + hw) as f32,
                        y: (y + hh) as f32,
                    },
                }
            }
        };
        Subscription {
            id: SubscriptionId(i as u32),
            filters: vec![Filter { constraints, area }],
        }
    }

    /// All subscriptions (in parallel).
    pub fn subscriptions(&self) -> Subscriptions {
        Subscriptions::from_sorted(
            (0..self.params.subscriptions)
                .into_par_iter()
                .map(|i| self.subscription(i))
                .collect(),
        )
    }

    /// Event `j`.
    pub fn event(&self, j: usize) -> Event {
        let (words, loc) = self.draw_event(j);
        let attrs: Vec<(String, Value)> = words
            .into_iter()
            .map(|r| (Self::word(r), Value::Str(Self::word(r))))
            .collect();
        Event {
            loc,
            content: ccm::model::Event::from_pairs(attrs).expect("distinct words"),
        }
    }

    /// Event `j`'s words (ranks) and location.
    fn draw_event(&self, j: usize) -> (Vec<usize>, Location) {
        let mut rng = rng(self.seed, EVENTS, j as u64);
        let (lo, hi) = self.params.keywords_per_event;
        let k = rng.gen_range(lo..=hi.max(lo));
        let words = self.words(k, &mut rng);
        (words, self.point(&mut rng))
    }

    /// All events (in parallel).
    pub fn events(&self) -> Vec<Event> {
        (0..self.params.events)
            .into_par_iter()
            .map(|j| self.event(j))
            .collect()
    }

    /// All events as one flat batch (the same events as [`KeywordWorkload::events`],
    /// drawn straight into it on all cores: no heap event).
    pub fn event_batch(&self) -> EventBatch {
        let js: Vec<usize> = (0..self.params.events).collect();
        let parts: Vec<EventBatch> = js
            .par_chunks(4096)
            .map(|js| {
                let hi = self.params.keywords_per_event.1;
                let mut b = EventBatch::with_capacity(js.len(), js.len() * hi);
                let mut word = String::new();
                for &j in js {
                    let (words, loc) = self.draw_event(j);
                    for r in words {
                        use std::fmt::Write as _;
                        word.clear();
                        write!(word, "w{r}").expect("a String takes any write");
                        let id = b.intern_name(&word);
                        b.push(id, ValueRef::Str(&word)).expect("a string");
                    }
                    b.end_event(loc).expect("distinct words");
                }
                b
            })
            .collect();
        crate::workload::join(parts)
    }
}

fn rng(seed: u64, salt: u64, stream: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed ^ salt);
    r.set_stream(stream);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_batch_holds_the_same_events_as_the_heap() {
        let w = KeywordWorkload::new(
            KeywordParams {
                subscriptions: 1,
                events: 9000,
                ..KeywordParams::default()
            },
            5,
        );
        assert_eq!(w.event_batch().to_events(), w.events());
    }

    #[test]
    fn rectangles_cover_the_circles_area_with_bounded_aspect() {
        let params = KeywordParams {
            subscriptions: 2000,
            events: 0,
            area_percent: 1.0,
            ..KeywordParams::default()
        };
        let circles = KeywordWorkload::new(params.clone(), 3);
        let rects = KeywordWorkload::new(
            KeywordParams {
                region: Region::Rect { max_aspect: 4.0 },
                ..params
            },
            3,
        );
        let (mut wide, mut tall) = (0, 0);
        for i in 0..2000 {
            let (c, r) = (circles.subscription(i), rects.subscription(i));
            // Same keywords and centres (the rectangle's drawn after them).
            assert_eq!(c.filters[0].constraints, r.filters[0].constraints);
            let [x0, y0, x1, y1] = r.filters[0].area.bounds();
            let (cx, cy) = c.filters[0].area.center();
            assert!(((x0 + x1) / 2.0 - cx).abs() < 1e-3 && ((y0 + y1) / 2.0 - cy).abs() < 1e-3);
            let (w, h) = (x1 - x0, y1 - y0);
            assert!((w * h / 1e6 - 1.0).abs() < 1e-3, "area {}", w * h);
            assert!((0.2499..=4.0001).contains(&(w / h)), "aspect {}", w / h);
            wide += usize::from(w > 2.0 * h);
            tall += usize::from(h > 2.0 * w);
        }
        assert!(wide > 200 && tall > 200, "{wide} wide, {tall} tall");
    }
}
