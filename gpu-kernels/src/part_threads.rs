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
//! Here a thread, once spawned, parks on its channel between parts. A call takes idle
//! threads (spawning one only when none is idle, so that concurrent and nested calls
//! each get their own) and hands them back once its parts have ended; the caller runs
//! the first part itself. A part's parallel loops run on rayon's pool from outside it,
//! where waiting never runs another part.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Mutex};
use std::thread;

/// A part, its lifetime erased ([`run_parts`] waits for it).
type Task = Box<dyn FnOnce() + Send + 'static>;

/// A parked thread: where to send it its next part.
struct Worker {
    tasks: mpsc::Sender<Task>,
}

/// Threads parked between calls.
static IDLE: Mutex<Vec<Worker>> = Mutex::new(Vec::new());

/// An idle thread, or a new one; `None` when the system refuses a new thread.
fn take_worker() -> Option<Worker> {
    if let Some(w) = IDLE.lock().unwrap_or_else(|e| e.into_inner()).pop() {
        return Some(w);
    }
    let (tasks, inbox) = mpsc::channel::<Task>();
    thread::Builder::new()
        .name("gpu-part".into())
        .spawn(move || {
            // A task catches its own part's panic (below); the thread outlives it.
            while let Ok(task) = inbox.recv() {
                task();
            }
        })
        .ok()?;
    Some(Worker { tasks })
}

/// Runs `f(i)` once for every `i < n`, all at once: part 0 on the calling thread, the
/// others each on a thread of its own outside rayon's pool (in turn on the caller when
/// the system refuses a thread). Returns every part's result, or its panic, in order,
/// once every part has ended.
pub(crate) fn run_parts<R: Send>(
    n: usize,
    f: &(dyn Fn(usize) -> R + Sync),
) -> Vec<thread::Result<R>> {
    let call = |i: usize| catch_unwind(AssertUnwindSafe(|| f(i)));
    if n <= 1 {
        return (0..n).map(call).collect();
    }
    let (done, results) = mpsc::channel::<(usize, thread::Result<R>)>();
    let mut taken = Vec::with_capacity(n - 1);
    let mut on_caller = vec![0];
    for i in 1..n {
        let done = done.clone();
        let task: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
            let r = catch_unwind(AssertUnwindSafe(|| f(i)));
            // The task's last use of anything borrowed: `f` has returned.
            let _ = done.send((i, r));
        });
        // SAFETY: only the lifetime is erased. `task` borrows `f` (and its result type
        // may borrow what `f` does); this function does not return before every task
        // it handed out has ended: it waits below until each has sent its result or
        // been dropped unrun (every `done` sender is then gone). A task touches nothing
        // borrowed after its send.
        let task: Task =
            unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Task>(task) };
        match take_worker() {
            Some(w) => match w.tasks.send(task) {
                Ok(()) => taken.push(w),
                // The thread is gone (never, short of an abort): the part runs here.
                Err(mpsc::SendError(task)) => {
                    drop(task);
                    on_caller.push(i);
                }
            },
            None => on_caller.push(i),
        }
    }
    drop(done);
    let mut out: Vec<Option<thread::Result<R>>> = (0..n).map(|_| None).collect();
    for i in on_caller {
        out[i] = Some(call(i));
    }
    // Every handed-out task sends exactly once (its part's panic is caught), so this
    // ends when the last part does.
    while let Ok((i, r)) = results.recv() {
        out[i] = Some(r);
    }
    IDLE.lock().unwrap_or_else(|e| e.into_inner()).extend(taken);
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Box::new("a part's thread ended without its result"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn every_part_runs_once_at_once_on_threads_outside_rayons_pool() {
        for n in [0, 1, 2, 5] {
            let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            let running = AtomicUsize::new(0);
            let r = run_parts(n, &|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
                // All parts are up at once: each waits for the others.
                running.fetch_add(1, Ordering::SeqCst);
                let t = std::time::Instant::now();
                while running.load(Ordering::SeqCst) < n && t.elapsed() < Duration::from_secs(10) {
                    std::hint::spin_loop();
                }
                (
                    i * 10,
                    rayon::current_thread_index(),
                    running.load(Ordering::SeqCst),
                )
            });
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
