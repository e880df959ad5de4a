//! What CCM's CPU matchers share ([`crate::sff::Sff`], [`crate::content_index`],
//! [`crate::value_index`], [`crate::hybrid_index`]): one event at a time with a thread's
//! scratch memory, and from that one event or many on all cores, from heap events or
//! from a [`ccm::batch::EventBatch`].

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
        per_index_pooled(
            events.len(),
            self.scratch_pool(),
            || self.scratch(),
            |i, s| self.match_event_with(&events[i], s),
        )
    }

    /// Where [`Matcher::match_parallel`] and [`Matcher::match_batch_parallel`] keep their
    /// threads' scratch between calls (none by default: each call makes its own). With a
    /// million interfaces a scratch is megabytes; made afresh, every call pays its page
    /// faults on every thread at once and frees it again (see [`ScratchPool`]).
    fn scratch_pool(&self) -> Option<&ScratchPool<Self::Scratch>> {
        None
    }

    /// The names of `batch` in this matcher's numbering, for
    /// [`Matcher::match_in_batch_with`]: made once per batch (a lookup per name of the
    /// batch, not per attribute), shared by the threads. By default empty (a matcher
    /// that reads heap events needs none).
    fn batch_names(&self, batch: &EventBatch) -> BatchNames {
        let _ = batch;
        BatchNames::default()
    }

    /// The interfaces whose predicate matches event `i` of `batch`, ascending by id,
    /// reusing `scratch`; `names`: what [`Matcher::batch_names`] made of `batch` (one
    /// made for another batch or matcher is detected by its size and made again).
    ///
    /// This default converts the event to a heap [`Event`] first; a matcher that reads
    /// the batch in place overrides it (and [`Matcher::batch_names`]).
    fn match_in_batch_with(
        &self,
        batch: &EventBatch,
        names: &BatchNames,
        i: usize,
        scratch: &mut Self::Scratch,
    ) -> Vec<InterfaceId> {
        let _ = names;
        self.match_event_with(&batch.event(i), scratch)
    }

    /// The answers of every event of `batch`, one after another on this thread.
    fn match_batch(&self, batch: &EventBatch) -> Vec<Vec<InterfaceId>> {
        let names = self.batch_names(batch);
        let mut s = self.scratch();
        (0..batch.len())
            .map(|i| self.match_in_batch_with(batch, &names, i, &mut s))
            .collect()
    }

    /// The answers of every event of `batch` on the threads of the rayon pool it runs in
    /// (all cores by default), as [`Matcher::match_parallel`] does for heap events; the
    /// batch's names are translated once, for every thread.
    fn match_batch_parallel(&self, batch: &EventBatch) -> Vec<Vec<InterfaceId>> {
        let names = self.batch_names(batch);
        per_index_pooled(
            batch.len(),
            self.scratch_pool(),
            || self.scratch(),
            |i, s| self.match_in_batch_with(batch, &names, i, s),
        )
    }

    /// [`Matcher::match_batch_parallel`] into `out` (resized to the batch's events):
    /// event `i`'s answer replaces `out[i]`, whose memory the allocator hands to the next
    /// answer at once. Called again with the same `out`, as a stream's batches would be,
    /// the answers take no fresh memory: collected into new vectors on every call, they
    /// did, and zeroing the fresh pages took a third of the hybrid's time on one core
    /// where answers are long (about 22,000 ids an event at 1M filters of the dense model
    /// with 20 names).
    fn match_batch_parallel_into(&self, batch: &EventBatch, out: &mut Vec<Vec<InterfaceId>>) {
        let names = self.batch_names(batch);
        out.resize_with(batch.len(), Vec::new);
        per_index_pooled_into(
            out,
            self.scratch_pool(),
            || self.scratch(),
            |i, s| self.match_in_batch_with(batch, &names, i, s),
        );
    }
}

/// A batch's names in a matcher's numbering ([`Matcher::batch_names`]): per name id of
/// the batch, the matcher's number for it, or none (a name no subscription uses).
#[derive(Clone, Debug, Default)]
pub struct BatchNames {
    /// Per name id of the batch: the matcher's number, or `compiled::NO_NAME`.
    pub(crate) ids: Vec<u32>,
    /// How many names the matcher numbers (a check that it made these).
    pub(crate) numbered: usize,
}

/// `f` over every item on the threads of the rayon pool it runs in, in order, each
/// thread with one scratch (made by `scratch` the first time the thread needs it) for
/// the whole call: what [`Matcher::match_parallel`] does, for any matcher.
pub fn per_thread<T: Sync, S: Send, R: Send>(
    items: &[T],
    scratch: impl Fn() -> S + Sync,
    f: impl Fn(&T, &mut S) -> R + Sync,
) -> Vec<R> {
    per_index(items.len(), scratch, |i, s| f(&items[i], s))
}

/// [`per_thread`] over the indices `0..n` (the events of a batch).
pub fn per_index<S: Send, R: Send>(
    n: usize,
    scratch: impl Fn() -> S + Sync,
    f: impl Fn(usize, &mut S) -> R + Sync,
) -> Vec<R> {
    per_index_pooled(n, None, scratch, f)
}

/// [`per_index`], each thread's scratch taken from `pool` where it holds one (else made
/// by `scratch`) and given back to it when the call ends.
pub fn per_index_pooled<S: Send, R: Send>(
    n: usize,
    pool: Option<&ScratchPool<S>>,
    scratch: impl Fn() -> S + Sync,
    f: impl Fn(usize, &mut S) -> R + Sync,
) -> Vec<R> {
    let threads = ThreadScratches::new(pool, scratch);
    let answers = (0..n)
        .into_par_iter()
        .map(|i| threads.with(|s| f(i, s)))
        .collect();
    threads.give_back();
    answers
}

/// [`per_index_pooled`] into `out`: item `i`'s result replaces `out[i]`.
pub fn per_index_pooled_into<S: Send, R: Send>(
    out: &mut [R],
    pool: Option<&ScratchPool<S>>,
    scratch: impl Fn() -> S + Sync,
    f: impl Fn(usize, &mut S) -> R + Sync,
) {
    let threads = ThreadScratches::new(pool, scratch);
    out.par_iter_mut()
        .enumerate()
        .for_each(|(i, slot)| *slot = threads.with(|s| f(i, s)));
    threads.give_back();
}

/// One scratch per thread of the rayon pool for the length of a call, taken from a
/// [`ScratchPool`] where it holds one (else made) and given back to it after.
struct ThreadScratches<'a, S, M> {
    slots: Vec<Slot<S>>,
    pool: Option<&'a ScratchPool<S>>,
    scratch: M,
}

impl<'a, S: Send, M: Fn() -> S + Sync> ThreadScratches<'a, S, M> {
    fn new(pool: Option<&'a ScratchPool<S>>, scratch: M) -> Self {
        let slots = (0..rayon::current_num_threads())
            .map(|_| Slot(Mutex::new(None)))
            .collect();
        ThreadScratches {
            slots,
            pool,
            scratch,
        }
    }

    /// `f` with the calling thread's scratch.
    fn with<R>(&self, f: impl FnOnce(&mut S) -> R) -> R {
        let t = rayon::current_thread_index().unwrap_or(0) % self.slots.len();
        // Each thread has its own slot, so the lock is never contended; were it held (a
        // matcher that itself waited on the pool), a fresh scratch serves.
        match self.slots[t].0.try_lock() {
            Ok(mut s) => f(s.get_or_insert_with(|| {
                self.pool
                    .and_then(ScratchPool::take)
                    .unwrap_or_else(&self.scratch)
            })),
            Err(_) => f(&mut (self.scratch)()),
        }
    }

    /// The scratches made or taken, back to the pool.
    fn give_back(self) {
        if let Some(pool) = self.pool {
            pool.give(
                self.slots
                    .into_iter()
                    .filter_map(|s| s.0.into_inner().ok().flatten()),
            );
        }
    }
}

/// Scratch memory kept by a matcher between its calls on all cores
/// ([`Matcher::scratch_pool`]): one per thread that used one, so the next call's
/// threads start warm (no allocation, no page faults, nothing freed in between). It
/// holds at most as many scratches as the pool had threads; a clone starts empty (a
/// scratch belongs to the matcher that made it).
pub struct ScratchPool<S>(Mutex<Vec<S>>);

impl<S> ScratchPool<S> {
    /// A scratch of an earlier call, if one is kept.
    fn take(&self) -> Option<S> {
        self.0.lock().ok()?.pop()
    }

    /// Keeps `scratches` for the next call.
    fn give(&self, scratches: impl Iterator<Item = S>) {
        if let Ok(mut kept) = self.0.lock() {
            kept.extend(scratches);
        }
    }
}

impl<S> Default for ScratchPool<S> {
    fn default() -> Self {
        ScratchPool(Mutex::new(Vec::new()))
    }
}

impl<S> Clone for ScratchPool<S> {
    fn clone(&self) -> Self {
        ScratchPool::default()
    }
}

impl<S> std::fmt::Debug for ScratchPool<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.0.lock().map_or(0, |k| k.len());
        f.debug_struct("ScratchPool").field("kept", &kept).finish()
    }
}

/// One thread's scratch in [`Matcher::match_parallel`], on its own cache lines (the
/// lock is taken per event).
#[repr(align(128))]
struct Slot<S>(Mutex<Option<S>>);
