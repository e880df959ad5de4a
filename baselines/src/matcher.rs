//! What CCM's CPU matchers share ([`crate::sff::Sff`], [`crate::content_index`],
//! [`crate::value_index`], [`crate::hybrid_index`]): one event at a time with a thread's
//! scratch memory, and from that one event or many on all cores.

use ccm::model::{Event, InterfaceId};
use rayon::prelude::*;

/// A CCM CPU matcher over a fixed set of subscriptions: it answers an event with the
/// interfaces whose predicate matches it, ascending by id.
pub trait Matcher: Sync {
    /// One matching thread's scratch memory.
    type Scratch: Send;

    /// Fresh scratch memory for [`Matcher::match_event_with`].
    fn scratch(&self) -> Self::Scratch;

    /// The interfaces whose predicate matches `e`, reusing `scratch` (one per thread).
    fn match_event_with(&self, e: &Event, scratch: &mut Self::Scratch) -> Vec<InterfaceId>;

    /// An estimate of the heap bytes of the matcher.
    fn heap_bytes(&self) -> usize;

    /// The interfaces whose predicate matches `e`, ascending by id.
    fn match_event(&self, e: &Event) -> Vec<InterfaceId> {
        self.match_event_with(e, &mut self.scratch())
    }

    /// Matches every event on the threads of the rayon pool it runs in (all cores by
    /// default), one event per thread at a time, each thread with its own scratch.
    fn match_parallel(&self, events: &[Event]) -> Vec<Vec<InterfaceId>> {
        events
            .par_iter()
            .map_init(|| self.scratch(), |s, e| self.match_event_with(e, s))
            .collect()
    }
}
