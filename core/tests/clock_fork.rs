//! A forked child must not read its parent's cached time: the ticker thread that refreshed it does not exist in
//! the child, so the value is frozen at the fork. A runtime started in the child, with no fork hook registered (a
//! plain Rust program), notices the new process and reads the clock itself.
#![cfg(unix)]

use cosid::clock::{ticker_state, Clock, SystemClock, TickerState};
use cosid::Runtime;
use std::time::Duration;

#[test]
fn a_runtime_started_in_a_forked_child_does_not_read_the_parents_frozen_cached_time() {
    let parent = Runtime::builder()
        .store("memory:")
        .namespace("fork-parent")
        .build()
        .unwrap();
    // Issue until the parent's ticker runs and fills the cache.
    while ticker_state() != TickerState::Running {
        parent.next_id().unwrap();
    }
    parent.next_id().unwrap();
    // SAFETY: the child only sleeps, starts a runtime (its own threads), compares two clock readings and exits
    // with _exit, never returning into the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // Let real time move well past whatever the parent's cache held at the fork.
        std::thread::sleep(Duration::from_millis(20));
        let code = {
            let rt = Runtime::builder()
                .store("memory:")
                .namespace("fork-child")
                .build();
            match rt {
                Err(_) => 3,
                Ok(rt) => {
                    let before = SystemClock.now_ms();
                    let cached = SystemClock.cached_ms();
                    let id = rt.next_id();
                    std::mem::forget(rt);
                    match id {
                        Err(_) => 4,
                        Ok(_) if cached < before => 1,
                        Ok(_) => 0,
                    }
                }
            }
        };
        // SAFETY: ends the child without running the parent's destructors or the harness.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(waited, pid);
    assert!(libc::WIFEXITED(status), "the child did not exit: {status}");
    match libc::WEXITSTATUS(status) {
        0 => {}
        1 => panic!("the child read the parent's frozen cached time"),
        c => panic!("the child failed: {c}"),
    }
    parent.shutdown();
}
