//! Host work in parts that starts at once: a [`Crew`] of rayon's pool threads that the
//! caller gathers *before* it waits for its device, so that they are awake when the
//! device's answers land, and that never makes the caller wait for a thread that has
//! not started.
//!
//! Why: the host side of a small GPU step is tens of microseconds of parallel work
//! (staging a batch, copying pairs out of mapped memory), and rayon's threads sleep
//! while the GPU works. Handed a job from outside the pool, rayon queues it, wakes a
//! thread, which splits it and wakes the next ones, while the caller blocks: measured on
//! the H100 machine's 16 cores, staging 32768 moved regions took 34-51 µs with the
//! threads awake and 84-132 µs after 300 µs idle (`ddm-region`'s `phase1_staging`), more
//! than one thread alone needs for part of it. Here the caller claims parts itself from
//! the first moment and each helper claims parts once it is up; a helper that comes when
//! every part is taken leaves without touching the job. With [`Crew::gather`] called
//! before a device wait, the helpers wake during the wait and spin until the job comes
//! (for at most the time given).
//!
//! ```
//! use gpu_kernels::crew::{claim_map, Crew};
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::time::Duration;
//! // Four pieces of one buffer, each filled once, on the caller and up to 3 pool
//! // threads; the results in the pieces' order.
//! let mut buf = vec![0u64; 100];
//! let sums = claim_map(buf.chunks_mut(25).collect(), 3, |i, piece: &mut [u64]| {
//!     piece.fill(i as u64 + 1);
//!     piece.iter().sum::<u64>()
//! });
//! assert_eq!(sums, vec![25, 50, 75, 100]);
//! assert_eq!(buf[99], 4);
//! // Gathered before a wait (here, a sleep standing for a device's), run after it.
//! let crew = Crew::gather(3, Duration::from_millis(5));
//! std::thread::sleep(Duration::from_micros(100));
//! let parts: Vec<AtomicU64> = (0..8).map(|_| AtomicU64::new(0)).collect();
//! crew.run(parts.len(), |i| parts[i].store(i as u64 + 1, Ordering::Relaxed));
//! assert!(parts.iter().all(|p| p.load(Ordering::Relaxed) > 0));
//! ```

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A crew's state: helpers wait in `WAITING`, work in `RUNNING`, leave in `DISMISSED`.
const WAITING: u8 = 0;
const RUNNING: u8 = 1;
const DISMISSED: u8 = 2;

/// A job as the helpers see it: `parts` and the caller's closure, type- and
/// lifetime-erased.
#[derive(Clone, Copy)]
struct Job {
    parts: usize,
    f: *const (dyn Fn(usize) + Sync),
}

// SAFETY: `f` points to a `Sync` closure, so calling it from any thread is sound; the
// pointer is only dereferenced while the closure is alive (see `Shared::work`).
unsafe impl Send for Job {}

struct Shared {
    state: AtomicU8,
    /// Written once, before `state` becomes `RUNNING`.
    job: Mutex<Option<Job>>,
    /// The next part to claim.
    next: AtomicUsize,
    /// Parts finished (run to their end or panicked).
    done: AtomicUsize,
    /// The first panic of a part, resumed on the caller.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl Shared {
    /// Claims and runs parts until none is left.
    fn work(&self, job: Job) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= job.parts {
                return;
            }
            // SAFETY: part `i < parts` was claimed, and the caller of `Crew::run` does
            // not return (so its closure lives) until `done` counts every part, this one
            // included, which is added only after the call below has returned.
            let f = unsafe { &*job.f };
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(i))) {
                self.panic
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert(p);
            }
            self.done.fetch_add(1, Ordering::Release);
        }
    }
}

/// After spinning this long, a helper lets rayon run the pool's pending jobs between its
/// checks ([`rayon::yield_now`]), so that a crew gathered before a long device wait
/// does not hold back other work given to the pool meanwhile.
const YIELD_AFTER: Duration = Duration::from_micros(50);

/// A helper: spins until the job comes (then works), the crew is dismissed, or `wait`
/// has passed.
fn help(shared: &Shared, wait: Duration) {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        match shared.state.load(Ordering::Acquire) {
            RUNNING => {
                let job = *shared.job.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(job) = job {
                    shared.work(job);
                }
                return;
            }
            DISMISSED => return,
            _ => {}
        }
        std::hint::spin_loop();
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(64) {
            let spun = start.elapsed();
            if spun >= wait {
                return;
            }
            if spun >= YIELD_AFTER {
                rayon::yield_now();
            }
        }
    }
}

/// Threads of rayon's pool gathered to share a job with the caller (module docs).
pub struct Crew {
    shared: Arc<Shared>,
    helpers: usize,
}

impl Crew {
    /// Wakes up to `helpers` threads of rayon's pool (fewer when the pool is smaller;
    /// none when called from inside the pool, whose threads may be busy with the
    /// caller's siblings): each spins until [`Crew::run`] gives it a job, or for at most
    /// `wait`, or until the crew is dropped.
    pub fn gather(helpers: usize, wait: Duration) -> Crew {
        let helpers = if rayon::current_thread_index().is_some() {
            0
        } else {
            helpers.min(rayon::current_num_threads())
        };
        let shared = Arc::new(Shared {
            state: AtomicU8::new(WAITING),
            job: Mutex::new(None),
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            panic: Mutex::new(None),
        });
        if helpers > 0 {
            // One task from the caller (one injection into the pool and one wake-up on
            // the caller's time); it spawns the other helpers from inside the pool.
            let leader = Arc::clone(&shared);
            rayon::spawn(move || {
                for _ in 1..helpers {
                    let shared = Arc::clone(&leader);
                    rayon::spawn(move || help(&shared, wait));
                }
                help(&leader, wait);
            });
        }
        Crew { shared, helpers }
    }

    /// How many helpers were asked for (some may not have come, or gone).
    pub fn helpers(&self) -> usize {
        self.helpers
    }

    /// Runs `f(i)` once for every part `i < parts`, on the calling thread and on the
    /// helpers that are up, and returns when every part has ended. A part's panic is
    /// resumed here once all parts have ended. Without helpers, from inside rayon's
    /// pool, the parts go to the pool as a parallel iterator.
    pub fn run<F: Fn(usize) + Sync>(self, parts: usize, f: F) {
        if self.helpers == 0 {
            if rayon::current_thread_index().is_some() && parts > 1 {
                use rayon::prelude::*;
                (0..parts).into_par_iter().for_each(&f);
            } else {
                (0..parts).for_each(f);
            }
            return;
        }
        let erased: &(dyn Fn(usize) + Sync) = &f;
        // SAFETY: only the lifetime is erased; the pointer is dereferenced by helpers
        // only for a claimed part, and this function waits below until every claimed
        // part has ended, so never after `f` is dropped.
        let erased: &'static (dyn Fn(usize) + Sync) = unsafe { std::mem::transmute(erased) };
        let job = Job { parts, f: erased };
        *self.shared.job.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
        self.shared.state.store(RUNNING, Ordering::Release);
        self.shared.work(job);
        while self.shared.done.load(Ordering::Acquire) < parts {
            std::hint::spin_loop();
        }
        let panic = self
            .shared
            .panic
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(p) = panic {
            resume_unwind(p);
        }
    }
}

impl Crew {
    /// Runs `f(i, item)` once for each of `items` (`i` its place) as [`Crew::run`] does
    /// its parts, and returns the results in the items' order: for parts that own what
    /// they work on, such as the disjoint `&mut` pieces of one buffer.
    pub fn map<T: Send, R: Send>(self, items: Vec<T>, f: impl Fn(usize, T) -> R + Sync) -> Vec<R> {
        // Each slot is claimed by exactly one part (`run` hands every index out once).
        let slots: Vec<Mutex<(Option<T>, Option<R>)>> = items
            .into_iter()
            .map(|item| Mutex::new((Some(item), None)))
            .collect();
        self.run(slots.len(), |i| {
            let mut slot = slots[i].lock().unwrap_or_else(|e| e.into_inner());
            if let Some(item) = slot.0.take() {
                slot.1 = Some(f(i, item));
            }
        });
        slots
            .into_iter()
            .map(|slot| {
                let (_, r) = slot.into_inner().unwrap_or_else(|e| e.into_inner());
                r.expect("`run` returns once every part has ended, without a panic")
            })
            .collect()
    }
}

impl Drop for Crew {
    fn drop(&mut self) {
        // Helpers still waiting leave; those running a job have finished it (`run`
        // waited for every part).
        let _ = self.shared.state.compare_exchange(
            WAITING,
            DISMISSED,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }
}

/// Runs `f(i, item)` once for each of `items` on the calling thread and up to `helpers`
/// threads of rayon's pool as they come ([`Crew::gather`] then [`Crew::map`]); the
/// results in the items' order.
pub fn claim_map<T: Send, R: Send>(
    items: Vec<T>,
    helpers: usize,
    f: impl Fn(usize, T) -> R + Sync,
) -> Vec<R> {
    let helpers = helpers.min(items.len().saturating_sub(1));
    Crew::gather(helpers, Duration::ZERO).map(items, f)
}

/// `src` copied into `dst` (as long) on rayon's pool, `part` elements a task: staging a
/// launch's columns into page-locked memory from inside the pool's work (the CCM index
/// and the cell index, each with the part size its launches were tuned with).
pub fn par_copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T], part: usize) {
    use rayon::prelude::*;
    dst.par_chunks_mut(part)
        .zip(src.par_chunks(part))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn every_part_runs_exactly_once_whatever_the_helpers() {
        for helpers in [0, 1, 3, 64] {
            for parts in [0, 1, 2, 7, 1000] {
                let hits: Vec<AtomicU32> = (0..parts).map(|_| AtomicU32::new(0)).collect();
                let doubled = claim_map((0..parts).collect(), helpers, |i, item: usize| {
                    hits[i].fetch_add(1, Ordering::Relaxed);
                    2 * item
                });
                assert!(
                    hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                    "{parts} parts, {helpers} helpers"
                );
                assert_eq!(doubled, (0..parts).map(|i| 2 * i).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn a_crew_gathered_before_a_wait_still_runs_every_part_after_its_helpers_gave_up() {
        // The helpers' wait (zero) is over long before the job comes: the caller alone.
        let crew = Crew::gather(4, Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        let hits: Vec<AtomicU32> = (0..50).map(|_| AtomicU32::new(0)).collect();
        crew.run(hits.len(), |i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        });
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn a_dropped_crew_dismisses_its_helpers_and_a_part_that_panics_reaches_the_caller() {
        drop(Crew::gather(4, Duration::from_secs(60)));
        let r = std::panic::catch_unwind(|| {
            claim_map((0..16).collect(), 4, |i, _: u32| {
                if i == 5 {
                    panic!("part five");
                }
            })
        });
        let p = r.expect_err("the panic of part 5 is resumed");
        assert_eq!(p.downcast_ref::<&str>(), Some(&"part five"));
    }

    #[test]
    fn a_crew_kept_up_lets_other_pool_work_run() {
        // Every pool thread a helper spinning for a minute: a parallel loop given to the
        // pool meanwhile still runs (the helpers yield to it), long before the minute.
        let crew = Crew::gather(rayon::current_num_threads(), Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(5));
        let t = Instant::now();
        let sum: u64 = {
            use rayon::prelude::*;
            (0..10_000u64).into_par_iter().sum()
        };
        assert_eq!(sum, 49_995_000);
        assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
        drop(crew);
    }

    #[test]
    fn inside_the_pool_the_parts_go_to_the_pool() {
        let hits: Vec<AtomicU32> = (0..100).map(|_| AtomicU32::new(0)).collect();
        rayon::scope(|_| {
            let crew = Crew::gather(8, Duration::from_secs(60));
            assert_eq!(crew.helpers(), 0);
            crew.run(hits.len(), |i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
        });
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    }
}
