//! Beyond the paper: one flat batch of CLCB events, the currency between input and
//! engines: the content as CCM's flat batch ([`ccm::batch::EventBatch`]: names and
//! strings interned once, a 16-byte attribute record per attribute, where each event
//! starts) and the locations as two columns, `x` and `y`.
//!
//! An engine reads it as it lies: it translates the two dictionaries once per call (a
//! name's id to its own row, a string's id to its own), then walks plain arrays; the
//! paper's engine lays each launch's events out for the device in one tight loop over
//! them, on all cores, with no look-up per attribute, and the cell index
//! ([`crate::cells`]) copies each launch's columns as they are and lays them out on the
//! device. A `Vec<`[`Event`]`>` stays the
//! convenience at the API's edge, converted once ([`EventBatch::from_events`],
//! [`EventBatch::to_events`]).
//!
//! ```
//! use ccm::batch::ValueRef;
//! use clcb::batch::EventBatch;
//! use clcb::{Event, Location};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut b = EventBatch::new();
//! let kw = b.intern_name("rain");
//! b.push(kw, ValueRef::Str("rain"))?;
//! b.push_named("temp", ValueRef::Int(31))?;
//! b.end_event(Location::new(3.0, 4.0)?)?;
//! assert_eq!(b.len(), 1);
//! assert_eq!(b.loc(0), Location { x: 3.0, y: 4.0 });
//! let e = Event {
//!     loc: Location::new(3.0, 4.0)?,
//!     content: ccm::Event::from_pairs([
//!         ("rain", ccm::Value::Str("rain".into())),
//!         ("temp", ccm::Value::Int(31)),
//!     ])?,
//! };
//! assert_eq!(b.event(0), e);
//! assert_eq!(EventBatch::from_events(&[e.clone()]).to_events(), vec![e]);
//! # Ok(()) }
//! ```

use crate::model::{Event, Location, ModelError};
use ccm::batch::{Attr, ValueRef};
use rayon::prelude::*;
use std::ops::Range;

/// CLCB events as flat arrays; see the [module documentation](self).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventBatch {
    content: ccm::batch::EventBatch,
    x: Vec<f32>,
    y: Vec<f32>,
}

impl EventBatch {
    /// An empty batch.
    pub fn new() -> EventBatch {
        EventBatch::default()
    }

    /// An empty batch with room for `events` events of `attrs` attributes in all.
    pub fn with_capacity(events: usize, attrs: usize) -> EventBatch {
        EventBatch {
            content: ccm::batch::EventBatch::with_capacity(events, attrs),
            x: Vec::with_capacity(events),
            y: Vec::with_capacity(events),
        }
    }

    /// The batch of `events`, built on all cores (parts of a few thousand events each,
    /// then merged in order).
    pub fn from_events(events: &[Event]) -> EventBatch {
        const PART: usize = 4096;
        let attrs = |es: &[Event]| es.iter().map(|e| e.attributes().len()).sum();
        if events.len() <= PART {
            let mut b = EventBatch::with_capacity(events.len(), attrs(events));
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

    /// The events of `parts`, in order, as one batch, merged on all cores (see
    /// [`ccm::batch::EventBatch::concat`]).
    pub fn concat(parts: &[EventBatch]) -> EventBatch {
        let content: Vec<&ccm::batch::EventBatch> = parts.iter().map(|p| &p.content).collect();
        EventBatch {
            content: ccm::batch::EventBatch::concat(&content),
            x: parts.iter().map(|p| &p.x[..]).collect::<Vec<_>>().concat(),
            y: parts.iter().map(|p| &p.y[..]).collect::<Vec<_>>().concat(),
        }
    }

    /// [`EventBatch::concat`] into this batch, emptied first ([`EventBatch::reset`]):
    /// its arrays' memory reused (see [`ccm::batch::EventBatch::concat_into`]).
    pub fn concat_into(&mut self, parts: &[EventBatch]) {
        self.concat_seeded_into(parts, None);
    }

    /// [`EventBatch::concat_into`] of parts that each began from `seed`
    /// ([`EventBatch::reset_to`]; see [`ccm::batch::EventBatch::concat_seeded_into`]).
    pub fn concat_seeded_into(&mut self, parts: &[EventBatch], seed: Option<&ccm::batch::Seed>) {
        let content: Vec<&ccm::batch::EventBatch> = parts.iter().map(|p| &p.content).collect();
        self.content.concat_seeded_into(&content, seed);
        let events = parts.iter().map(|p| p.len()).sum();
        self.x.clear();
        self.y.clear();
        self.x.reserve(events);
        self.y.reserve(events);
        for p in parts {
            self.x.extend_from_slice(&p.x);
            self.y.extend_from_slice(&p.y);
        }
    }

    /// Number of (complete) events.
    #[inline]
    pub fn len(&self) -> usize {
        self.x.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// Attributes of all complete events.
    #[inline]
    pub fn total_attrs(&self) -> usize {
        self.content.total_attrs()
    }

    /// The content: names, strings, attributes, where each event starts.
    #[inline]
    pub fn content(&self) -> &ccm::batch::EventBatch {
        &self.content
    }

    /// Every event's `x`, in order.
    #[inline]
    pub fn xs(&self) -> &[f32] {
        &self.x
    }

    /// Every event's `y`, in order.
    #[inline]
    pub fn ys(&self) -> &[f32] {
        &self.y
    }

    /// Event `i`'s location.
    #[inline]
    pub fn loc(&self, i: usize) -> Location {
        Location {
            x: self.x[i],
            y: self.y[i],
        }
    }

    /// Event `i`'s attributes.
    #[inline]
    pub fn attrs_of(&self, i: usize) -> &[Attr] {
        self.content.attrs_of(i)
    }

    /// Where the attributes of `events` lie in the content's attributes.
    #[inline]
    pub fn attr_range(&self, events: Range<usize>) -> Range<usize> {
        self.content.attr_range(events)
    }

    /// The id of `name`, numbering it if it is new (for [`EventBatch::push`]).
    #[inline]
    pub fn intern_name(&mut self, name: &str) -> u32 {
        self.content.intern_name(name)
    }

    /// Adds an attribute to the event being pushed (see
    /// [`ccm::batch::EventBatch::push`]); a NaN is refused.
    #[inline]
    pub fn push(&mut self, name: u32, value: ValueRef<'_>) -> Result<(), ModelError> {
        Ok(self.content.push(name, value)?)
    }

    /// [`EventBatch::push`] by name.
    pub fn push_named(&mut self, name: &str, value: ValueRef<'_>) -> Result<(), ModelError> {
        Ok(self.content.push_named(name, value)?)
    }

    /// Ends the event being pushed, at `loc`: it becomes event `len()`. An event with
    /// two attributes of one name is refused and its attributes dropped.
    pub fn end_event(&mut self, loc: Location) -> Result<(), ModelError> {
        self.content.end_event()?;
        self.x.push(loc.x);
        self.y.push(loc.y);
        Ok(())
    }

    /// [`EventBatch::end_event`] of an event whose attributes were read by
    /// [`ccm::flat_json::LineScan::object`], its names `distinct` as the scan says
    /// ([`ccm::batch::EventBatch::end_scanned_event`]).
    #[inline]
    pub fn end_scanned_event(&mut self, loc: Location, distinct: bool) -> Result<(), ModelError> {
        self.content.end_scanned_event(distinct)?;
        self.x.push(loc.x);
        self.y.push(loc.y);
        Ok(())
    }

    /// The content, to push an event's attributes into (the parsers' fast path).
    pub(crate) fn content_mut(&mut self) -> &mut ccm::batch::EventBatch {
        &mut self.content
    }

    /// Drops the attributes pushed since the last complete event.
    pub fn abandon_event(&mut self) {
        self.content.abandon_event();
    }

    /// Adds a (checked) event.
    pub fn push_event(&mut self, e: &Event) {
        self.content.push_event(&e.content);
        self.x.push(e.loc.x);
        self.y.push(e.loc.y);
    }

    /// Appends `other`'s events (its names and strings renumbered into this batch's
    /// dictionaries).
    pub fn append(&mut self, other: &EventBatch) {
        self.content.append(&other.content);
        self.x.extend_from_slice(&other.x);
        self.y.extend_from_slice(&other.y);
    }

    /// Removes every event, keeping the names' dictionary and the memory (see
    /// [`ccm::batch::EventBatch::clear`]).
    pub fn clear(&mut self) {
        self.content.clear();
        self.x.clear();
        self.y.clear();
    }

    /// Removes every event, keeping the arrays' memory, the dictionaries made copies of
    /// `seed`'s (see [`ccm::batch::EventBatch::reset_to`]).
    pub fn reset_to(&mut self, seed: &ccm::batch::Seed) {
        self.content.reset_to(seed);
        self.x.clear();
        self.y.clear();
    }

    /// Removes every event and both dictionaries, keeping the arrays' memory (see
    /// [`ccm::batch::EventBatch::reset`]).
    pub fn reset(&mut self) {
        self.content.reset();
        self.x.clear();
        self.y.clear();
    }

    /// Event `i` as a heap [`Event`].
    pub fn event(&self, i: usize) -> Event {
        Event {
            loc: self.loc(i),
            content: self.content.event(i),
        }
    }

    /// Every event as a heap [`Event`], on all cores.
    pub fn to_events(&self) -> Vec<Event> {
        (0..self.len())
            .into_par_iter()
            .map(|i| self.event(i))
            .collect()
    }

    /// The events `range` as a batch of their own (their names and strings renumbered).
    pub fn slice(&self, range: Range<usize>) -> EventBatch {
        let mut b = EventBatch::with_capacity(range.len(), self.attr_range(range.clone()).len());
        for i in range {
            b.push_event(&self.event(i));
        }
        b
    }

    /// The batch's events one after another, `n` times over (a stream for timing).
    pub fn repeated(&self, n: usize) -> EventBatch {
        let mut b = EventBatch::with_capacity(n, 0);
        if self.is_empty() {
            return b;
        }
        let whole = n / self.len();
        for _ in 0..whole {
            b.append(self);
        }
        b.append(&self.slice(0..n - whole * self.len()));
        b
    }

    /// Bytes on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.content.heap_bytes() + (self.x.capacity() + self.y.capacity()) * 4
    }
}

impl ccm::text::Refill for EventBatch {
    fn reset(&mut self) {
        EventBatch::reset(self);
    }
    fn reset_to(&mut self, seed: &ccm::batch::Seed) {
        EventBatch::reset_to(self, seed);
    }
}

/// A name's row for every name id of a batch's dictionary ([`ccm::batch::Dictionary`]):
/// the engine's own look-up, made once per call; [`UNKNOWN`] where the engine has no
/// row (no constraint reads the name).
pub fn translate(names: &ccm::batch::Dictionary, row: impl Fn(&str) -> Option<u32>) -> Vec<u32> {
    names.iter().map(|n| row(n).unwrap_or(UNKNOWN)).collect()
}

/// [`translate`]'s row of a name no constraint reads.
pub const UNKNOWN: u32 = u32::MAX;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{Params, Workload};

    #[test]
    fn events_round_trip_through_a_batch_built_in_parts() {
        let w = Workload::new(
            Params {
                events: 9000,
                subscriptions: 1,
                ..Params::default()
            },
            4,
        );
        let events = w.events();
        let b = EventBatch::from_events(&events);
        assert_eq!(b.len(), 9000);
        assert_eq!(b.to_events(), events);
        assert_eq!(b.event(8999), events[8999]);
        assert_eq!(b.xs()[17], events[17].loc.x);
        assert_eq!(b.ys()[17], events[17].loc.y);
        // A repeated stream and a slice hold the same events.
        let s = b.slice(10..20);
        assert_eq!(s.to_events(), events[10..20].to_vec());
        let r = s.repeated(25);
        assert_eq!(r.len(), 25);
        assert_eq!(r.event(24), events[14]);
    }

    #[test]
    fn a_refused_event_leaves_no_location_behind() {
        let mut b = EventBatch::new();
        b.push_named("a", ValueRef::Int(1)).unwrap();
        b.push_named("a", ValueRef::Int(2)).unwrap();
        assert!(b.end_event(Location::default()).is_err());
        assert!(b.is_empty() && b.xs().is_empty());
        b.push_named("b", ValueRef::Float(0.5)).unwrap();
        b.end_event(Location { x: 1.0, y: 2.0 }).unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(b.attrs_of(0).len(), 1);
        let rows = translate(b.content().names(), |n| (n == "b").then_some(7));
        assert_eq!(rows, vec![UNKNOWN, 7]);
    }
}
