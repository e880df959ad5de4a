//! The calling thread's CPU time, for the examples that time matchers on a machine
//! shared with other work.

/// The calling thread's CPU time in seconds: on a shared machine, the time other
/// processes hold the core is not counted (their cache interference still is).
pub fn thread_cpu_s() -> f64 {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    /// Linux's `CLOCK_THREAD_CPUTIME_ID`.
    const THREAD_CPUTIME: i32 = 3;
    let mut t = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `clock_gettime` writes one `struct timespec` (two 64-bit fields on 64-bit
    // Linux, as `Timespec`) through the valid pointer it is given, and nothing else.
    let rc = unsafe { clock_gettime(THREAD_CPUTIME, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    t.sec as f64 + t.nsec as f64 * 1e-9
}
