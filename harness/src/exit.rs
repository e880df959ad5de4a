//! Leaving a process that opened a GPU without waiting for the driver's teardown.
//!
//! A process that created a GPU context spends a tenth of a second or more in its exit:
//! the kernel releases the driver's files, the context and the page-locked memory. On an
//! H200's host (`scripts/gpu-exit-probe.sh`, a bare context and 1 GB of device memory)
//! that took 0.10-0.13 s after the last line of output, 0.3 s with 1 GB page-locked and
//! 0.7-1.0 s with 4 GB, alike whether the process returned from `main`, called `_exit`
//! or destroyed its context first. The user's command is done by then: its output is
//! complete and its exit code known.
//!
//! So [`exit`] leaves that release to a child: the process flushes its output and starts
//! a child that shares its memory and its table of open files (`clone` with `CLONE_VM`
//! and `CLONE_FILES`), then exits at once. The child waits for its parent to be gone,
//! closes every file but the driver's (a reader of the output sees its end), and exits:
//! the kernel releases the context in the child's time, not the command's. `ccm match` on
//! 1M events (H200): the exit took 0.13-0.14 s, its last thread in the driver's release
//! (`rcu_barrier`); with the child, 0.002-0.017 s. A forked child (a copy of the table)
//! left it at 0.11 s, one sharing only the memory at 0.05-0.14 s. A process whose GPU was
//! still opening on another thread (`xml filter --engine gpu-dfa` on a short stream, done
//! on the CPU first) had no context yet and exited as usual, waiting for the driver: its
//! exit took 0.10-0.14 s; with the child, 0.02-0.08 s. So the child is started once the
//! process has called into the driver at all. A process that never did, or one with a
//! CUDA tool attached (compute-sanitizer, Nsight), exits as usual.

use std::io::Write;
use std::process::ExitCode;

/// Ends the process with `code`: at once when it called into the GPU driver (the driver's
/// teardown left to a child, see the module's doc), else by returning the code to `main`'s
/// caller.
pub fn exit(code: u8) -> ExitCode {
    // A CUDA tool attached (compute-sanitizer, Nsight) reports from the process's exit
    // handlers: those must run.
    let tool = std::env::var_os("CUDA_INJECTION64_PATH").is_some();
    if gpu_kernels::Device::gpu_driver_called() && !tool {
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        leave_teardown_to_child(code);
    }
    ExitCode::from(code)
}

/// The descriptors that are not the driver's (`/dev/nvidia*`): read before the clone,
/// since the child may only call functions that neither allocate nor lock.
fn files_but_the_drivers() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return vec![0, 1, 2];
    };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let fd: i32 = e.file_name().to_str()?.parse().ok()?;
        let target = std::fs::read_link(e.path()).ok()?;
        (!target.starts_with("/dev/nvidia")).then_some(fd)
    })
    .collect()
}

/// What the child needs: whom to outlive and which descriptors to close.
struct Hold {
    parent: libc::pid_t,
    close: Vec<i32>,
}

/// The child's whole life: wait for the parent to be gone, close the files that are not
/// the driver's (a reader of the command's output sees its end now; nothing of the parent
/// still runs to use them), exit.
extern "C" fn hold_until_parent_exits(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the leaked `Hold` of `leave_teardown_to_child`, never freed or
    // written after the clone; the child reads it and calls only getppid, usleep, close
    // and _exit, which neither allocate nor take a lock.
    unsafe {
        let hold = &*(arg as *const Hold);
        while libc::getppid() == hold.parent {
            libc::usleep(500);
        }
        for &fd in &hold.close {
            libc::close(fd);
        }
        libc::_exit(0)
    }
}

/// Starts a child that outlives this process holding its files and memory (the driver's
/// files, the page-locked areas), then exits with `code`; returns only if the child could
/// not be started (the caller then exits as usual).
fn leave_teardown_to_child(code: u8) {
    let hold: &'static Hold = Box::leak(Box::new(Hold {
        // SAFETY: getpid has no precondition.
        parent: unsafe { libc::getpid() },
        close: files_but_the_drivers(),
    }));
    let arg = hold as *const Hold as *mut libc::c_void;
    const STACK: usize = 64 * 1024;
    let stack: &'static mut [u128] = Vec::leak(vec![0u128; STACK / 16]);
    // SAFETY: the child shares this process's memory and descriptor table (CLONE_VM,
    // CLONE_FILES: the parent's exit then releases neither) and runs
    // `hold_until_parent_exits` on its own leaked, 16-byte aligned stack (its top passed:
    // the stack grows down); it touches only `hold`, leaked and read-only.
    let pid = unsafe {
        let top = stack.as_mut_ptr().add(stack.len()) as *mut libc::c_void;
        let flags = libc::CLONE_VM | libc::CLONE_FILES | libc::SIGCHLD;
        libc::clone(hold_until_parent_exits, top, flags, arg)
    };
    if pid > 0 {
        // SAFETY: output was flushed by the caller; `_exit` skips only the C library's
        // exit handlers (the driver's teardown, which the child's exit does instead).
        unsafe { libc::_exit(i32::from(code)) }
    }
}
