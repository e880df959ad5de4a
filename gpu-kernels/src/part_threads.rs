//! Long-lived host threads, outside rayon's pool, that run the parts of a multi-device
//! call ([`run_parts`], behind [`par_each_on`](crate::multi::par_each_on)).
//!
//! Why not rayon's pool: a device's part whose engine runs parallel loops of its own on
//! the pool (encoding events, copying answers) waits inside them as a pool thread, and
//! a waiting pool thread runs other queued tasks, another device's part among them, to
//! its end: the parts then run one after another (CCM's index cut by interface over 4
//! GPUs read 1.02x one GPU's throughput with its parts as pool tasks, 3.74x with a
//! thread of its own per part). Why not a thread spawned per call: 55-130 µs a call on
//! 2x H100 (`ddm-region`'s `multi_split`).
//!
//! Here a thread, once spawned, waits for its next part between calls: it spins for
//! [`spin_window`] after each part (a stream of calls, such as a count every 250 µs on
//! 4 GPUs, finds it awake), then parks. A call takes idle threads (spawning one only when
//! none is idle, so that concurrent and nested calls each get their own) and hands them
//! back once its parts have ended; the caller runs the first part itself, then spins
//! (the same window, then parks) until the others have ended. Waking a parked thread is
//! a system call and a scheduler's round trip on each side; the parts of a short call
//! paid it twice (the worker woken, then the caller). A part's parallel loops run on
//! rayon's pool from outside it, where waiting never runs another part.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// A part, its lifetime erased ([`run_parts`] waits for it).
type Task = Box<dyn FnOnce() + Send + 'static>;

/// How long a part's thread, and a caller waiting for its parts, spin before they park:
/// on a host of at least [`SPIN_MIN_CORES`] cores, 1 ms; else none (on a few cores a
/// spinning thread takes a core from the parts themselves).
fn spin_window() -> Duration {
    static WINDOW: OnceLock<Duration> = OnceLock::new();
    *WINDOW.get_or_init(|| {
        let cores = thread::available_parallelism().map_or(1, |n| n.get());
        if cores >= SPIN_MIN_CORES {
            Duration::from_millis(1)
        } else {
            Duration::ZERO
        }
    })
}

/// Fewest host cores on which waiting threads spin ([`spin_window`]).
const SPIN_MIN_CORES: usize = 8;

/// Waits until `ready()` holds: spins for `window`, then parks (woken by
/// [`Thread::unpark`] from whoever makes it hold; a spurious wake-up only re-checks).
fn wait_until(window: Duration, ready: impl Fn() -> bool) {
    let start = Instant::now();
    let mut spins = 0u32;
    while !ready() {
        spins = spins.wrapping_add(1);
        if window.is_zero() || (spins.is_multiple_of(64) && start.elapsed() >= window) {
            thread::park();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Where a parked or spinning thread finds its next part.
struct Slot {
    /// The part and how long to spin after it, set before `ready`.
    task: Mutex<Option<(Task, Duration)>>,
    ready: AtomicBool,
}

/// A waiting thread: its slot, and the thread to unpark.
struct Worker {
    slot: Arc<Slot>,
    thread: Thread,
}

impl Worker {
    /// Hands the thread `task`; it spins for `window` after it.
    fn give(&self, task: Task, window: Duration) {
        *self.slot.task.lock().unwrap_or_else(|e| e.into_inner()) = Some((task, window));
        self.slot.ready.store(true, Ordering::Release);
        // (No system call when the thread is spinning: it only sets its token.)
        self.thread.unpark();
    }
}

/// Threads waiting between calls.
static IDLE: Mutex<Vec<Worker>> = Mutex::new(Vec::new());

/// An idle thread, or a new one; `None` when the system refuses a new thread.
fn take_worker() -> Option<Worker> {
    if let Some(w) = IDLE.lock().unwrap_or_else(|e| e.into_inner()).pop() {
        return Some(w);
    }
    let slot = Arc::new(Slot {
        task: Mutex::new(None),
        ready: AtomicBool::new(false),
    });
    let inbox = Arc::clone(&slot);
    let handle = thread::Builder::new()
        .name("gpu-part".into())
        .spawn(move || {
            let mut window = Duration::ZERO;
            loop {
                wait_until(window, || inbox.ready.load(Ordering::Acquire));
                inbox.ready.store(false, Ordering::Relaxed);
                let next = inbox.task.lock().unwrap_or_else(|e| e.into_inner()).take();
                if let Some((task, w)) = next {
                    // A task catches its own part's panic (below); the thread outlives it.
                    task();
                    window = w;
                }
            }
        })
        .ok()?;
    Some(Worker {
        slot,
        thread: handle.thread().clone(),
    })
}

/// Runs `f(i)` once for every `i < n`, all at once: part 0 on the calling thread, the
/// others each on a thread of its own outside rayon's pool (in turn on the caller when
/// the system refuses a thread). Returns every part's result, or its panic, in order,
/// once every part has ended.
pub(crate) fn run_parts<R: Send>(
    n: usize,
    f: &(dyn Fn(usize) -> R + Sync),
) -> Vec<thread::Result<R>> {
    run_parts_spinning(n, f, spin_window())
}

/// [`run_parts`], its threads and the caller spinning for `window` before they park.
fn run_parts_spinning<R: Send>(
    n: usize,
    f: &(dyn Fn(usize) -> R + Sync),
    window: Duration,
) -> Vec<thread::Result<R>> {
    let call = |i: usize| catch_unwind(AssertUnwindSafe(|| f(i)));
    if n <= 1 {
        return (0..n).map(call).collect();
    }
    let out: Vec<Mutex<Option<thread::Result<R>>>> = (0..n).map(|_| Mutex::new(None)).collect();
    // Parts handed out and not yet ended.
    let running = AtomicUsize::new(0);
    let caller = thread::current();
    let mut taken = Vec::with_capacity(n - 1);
    let mut on_caller = vec![0];
    for i in 1..n {
        let Some(w) = take_worker() else {
            on_caller.push(i);
            continue;
        };
        running.fetch_add(1, Ordering::Relaxed);
        let (out, running, caller) = (&out, &running, caller.clone());
        let task: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
            let r = catch_unwind(AssertUnwindSafe(|| f(i)));
            *out[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            // The task's last use of anything borrowed: the caller may return once
            // `running` reaches 0. `caller` is the task's own handle.
            if running.fetch_sub(1, Ordering::AcqRel) == 1 {
                caller.unpark();
            }
        });
        // SAFETY: only the lifetime is erased. `task` borrows `f`, `out` and `running`
        // (and its result type may borrow what `f` does); this function does not return
        // before every task it handed out has ended: it waits below until `running`,
        // counted up before each hand-out and down as each task's last use of anything
        // borrowed, is 0. A worker runs every task it is given (a part's panic is
        // caught inside the task), so none is dropped unrun.
        let task: Task =
            unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Task>(task) };
        w.give(task, window);
        taken.push(w);
    }
    for &i in &on_caller {
        *out[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(call(i));
    }
    wait_until(window, || running.load(Ordering::Acquire) == 0);
    IDLE.lock().unwrap_or_else(|e| e.into_inner()).extend(taken);
    out.into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_else(|| Err(Box::new("a part's thread ended without its result")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The waits of both kinds: parking at once (a host of few cores), and spinning
    /// first.
    const WINDOWS: [Duration; 2] = [Duration::ZERO, Duration::from_millis(1)];

    #[test]
    fn every_part_runs_once_at_once_on_threads_outside_rayons_pool() {
        for (n, window) in [0, 1, 2, 5]
            .into_iter()
            .flat_map(|n| WINDOWS.map(|w| (n, w)))
        {
            let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            let running = AtomicUsize::new(0);
            let r = run_parts_spinning(
                n,
                &|i| {
                    hits[i].fetch_add(1, Ordering::Relaxed);
                    // All parts are up at once: each waits for the others.
                    running.fetch_add(1, Ordering::SeqCst);
                    let t = std::time::Instant::now();
                    while running.load(Ordering::SeqCst) < n
                        && t.elapsed() < Duration::from_secs(10)
                    {
                        std::hint::spin_loop();
                    }
                    (
                        i * 10,
                        rayon::current_thread_index(),
                        running.load(Ordering::SeqCst),
                    )
                },
                window,
            );
            assert!(
                hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                "{n} parts"
            );
            for (i, r) in r.into_iter().enumerate() {
                let (v, pool_thread, seen) = r.expect("no panic");
                assert_eq!((v, pool_thread, seen), (i * 10, None, n), "part {i} of {n}");
            }
        }
    }

    #[test]
    fn a_parts_panic_is_returned_and_its_thread_serves_the_next_call() {
        let r = run_parts(3, &|i| if i == 2 { panic!("part two") } else { i });
        assert_eq!(*r[0].as_ref().unwrap(), 0);
        assert_eq!(*r[1].as_ref().unwrap(), 1);
        assert!(r[2].is_err());
        let again = run_parts(3, &|i| i + 1);
        assert_eq!(
            again.into_iter().map(|r| r.unwrap()).collect::<Vec<_>>(),
            [1, 2, 3]
        );
    }

    #[test]
    fn calls_back_to_back_find_every_result_whether_threads_spin_or_park() {
        // A stream of short calls (the threads still spinning from the last one, or
        // parked between them): every call returns every part's own result.
        for window in WINDOWS {
            for call in 0..200usize {
                let r = run_parts_spinning(4, &|i| call * 4 + i, window);
                let got: Vec<usize> = r.into_iter().map(|r| r.expect("no panic")).collect();
                assert_eq!(got, (0..4).map(|i| call * 4 + i).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn a_part_waiting_in_a_parallel_loop_never_runs_another_part() {
        // Each part runs a rayon loop; no part's thread ever runs a second part.
        let ran_on: Vec<Mutex<Option<thread::ThreadId>>> =
            (0..4).map(|_| Mutex::new(None)).collect();
        let r = run_parts(4, &|i| {
            *ran_on[i].lock().unwrap() = Some(thread::current().id());
            use rayon::prelude::*;
            (0..10_000u64).into_par_iter().map(|x| x % 7).sum::<u64>()
        });
        assert!(r.iter().all(|r| r.is_ok()));
        let mut ids: Vec<_> = ran_on.iter().map(|m| m.lock().unwrap().unwrap()).collect();
        ids.sort_by_key(|id| format!("{id:?}"));
        ids.dedup();
        assert_eq!(ids.len(), 4, "four parts on four threads");
    }
}
