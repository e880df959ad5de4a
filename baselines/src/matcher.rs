//! What CCM's CPU matchers share ([`crate::sff::Sff`], [`crate::content_index`],
//! [`crate::value_index`], [`crate::hybrid_index`]): one event at a time with a thread's
//! scratch memory, and from that one event or many on all cores.

use ccm::batch::EventBatch;
use ccm::model::{Event, InterfaceId};
use rayon::prelude::*;
use std::sync::Mutex;

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
    /// default), one event per thread at a time, each thread with one scratch for the
    /// whole call. (Not one per rayon task, as `map_init` would make: with a million
    /// interfaces a scratch is megabytes, and allocating and freeing it per task costs
    /// page faults and, on many cores, TLB shootdowns that stall every thread.)
    fn match_parallel(&self, events: &[Event]) -> Vec<Vec<InterfaceId>> {
        per_thread(
            events,
            || self.scratch(),
            |e, s| self.match_event_with(e, s),
        )
    }

    /// The answers of every event of `batch`, one after another on this thread.
    ///
    /// This default converts each event to a heap [`Event`] first; a matcher that reads
    /// the batch in place overrides it (and [`Matcher::match_batch_parallel`]).
    fn match_batch(&self, batch: &EventBatch) -> Vec<Vec<InterfaceId>> {
        let mut s = self.scratch();
        (0..batch.len())
            .map(|i| self.match_event_with(&batch.event(i), &mut s))
            .collect()
    }

    /// The answers of every event of `batch` on the threads of the rayon pool it runs in
    /// (all cores by default), as [`Matcher::match_parallel`] does for heap events.
    fn match_batch_parallel(&self, batch: &EventBatch) -> Vec<Vec<InterfaceId>> {
        let idx: Vec<usize> = (0..batch.len()).collect();
        per_thread(
            &idx,
            || self.scratch(),
            |&i, s| self.match_event_with(&batch.event(i), s),
        )
    }
}

/// `f` over every item on the threads of the rayon pool it runs in, in order, each
/// thread with one scratch (made by `scratch` the first time the thread needs it) for
/// the whole call: what [`Matcher::match_parallel`] does, for any matcher.
pub fn per_thread<T: Sync, S: Send, R: Send>(
    items: &[T],
    scratch: impl Fn() -> S + Sync,
    f: impl Fn(&T, &mut S) -> R + Sync,
) -> Vec<R> {
    let slots: Vec<Slot<S>> = (0..rayon::current_num_threads())
        .map(|_| Slot(Mutex::new(None)))
        .collect();
    items
        .par_iter()
        .map(|it| {
            let t = rayon::current_thread_index().unwrap_or(0) % slots.len();
            // Each thread has its own slot, so the lock is never contended; were it
            // held (a matcher that itself waited on the pool), a fresh scratch serves.
            match slots[t].0.try_lock() {
                Ok(mut s) => f(it, s.get_or_insert_with(&scratch)),
                Err(_) => f(it, &mut scratch()),
            }
        })
        .collect()
}

/// One thread's scratch in [`Matcher::match_parallel`], on its own cache lines (the
/// lock is taken per event).
#[repr(align(128))]
struct Slot<S>(Mutex<Option<S>>);
