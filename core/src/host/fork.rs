//! The fork policy's hooks. Each binding registers them with its language's fork hook (C: `pthread_atfork(prepare,
//! after_fork_in_parent, after_fork_in_child)`; Python: `os.register_at_fork` with the same three) and nothing
//! else: the policy is here.
//!
//! - [`generation`] counts the forks this process descends from (bumped by [`after_fork_in_child`]). A holder
//!   records the generation it started its runtime in; a different one means it was copied from a parent, whose
//!   runtime (its keeper thread did not survive the fork, its lease is the parent's) must never issue again.
//! - The gate: no store I/O may be in flight across `fork()`. A child forked while the keeper thread is inside an
//!   SQLite write inherits SQLite's global mutexes locked and hangs, or fails "database is locked", for good. Every
//!   store call of every host runtime holds the gate shared ([`GatedStore`](super::gated::GatedStore));
//!   [`prepare`] closes it and waits (bounded) for the calls in flight; the parent reopens it, the child resets it.
//!
//! Everything here is plain atomics: [`after_fork_in_child`] runs in a child of a multi-threaded process, where
//! only async-signal-safe work is allowed.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Starts at 1 so that 0 can mean "never started".
static GENERATION: AtomicU64 = AtomicU64::new(1);

/// The gate: [`CLOSED`] while a fork is being prepared, plus the number of store calls in flight.
static GATE: AtomicU64 = AtomicU64::new(0);
const CLOSED: u64 = 1 << 63;

/// How long [`prepare`] waits for store calls in flight. A call that takes longer (a network store timing out)
/// is left running: the child never touches its parent's store connections, and SQLite's calls are short.
pub const PREPARE_WAIT: Duration = Duration::from_secs(3);

thread_local! {
    /// Store calls this thread is inside (a fork from inside one must not wait for itself).
    static INSIDE: Cell<u64> = const { Cell::new(0) };
}

/// This process's fork generation.
#[inline(always)]
pub fn generation() -> u64 {
    // Relaxed: it changes only in a fresh child, before the child has a second thread; threads started later see
    // it through the happens-before of thread creation.
    GENERATION.load(Ordering::Relaxed)
}

/// Before `fork()`: closes the gate to new store calls and waits (up to [`PREPARE_WAIT`]) for those in flight.
/// Always follow it with [`after_fork_in_parent`] in the parent and [`after_fork_in_child`] in the child.
pub fn prepare() {
    GATE.fetch_or(CLOSED, Ordering::AcqRel);
    let mine = INSIDE.with(Cell::get);
    let deadline = Instant::now() + PREPARE_WAIT;
    let mut spins = 0u32;
    while (GATE.load(Ordering::Acquire) & !CLOSED) > mine {
        if Instant::now() >= deadline {
            break;
        }
        spins += 1;
        if spins < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// After `fork()`, in the parent: reopens the gate.
pub fn after_fork_in_parent() {
    GATE.fetch_and(!CLOSED, Ordering::AcqRel);
}

/// After `fork()`, in the child: a new generation, and an open gate with no call in flight (the parent's threads
/// do not exist here). Async-signal-safe: two atomic stores.
pub fn after_fork_in_child() {
    GENERATION.fetch_add(1, Ordering::AcqRel);
    GATE.store(0, Ordering::Release);
    INSIDE.with(|i| i.set(0));
    crate::clock::after_fork_in_child();
}

/// A store call in flight: holds the gate shared until dropped.
#[derive(Debug)]
pub(crate) struct Pass {
    /// The generation it was taken in: a pass carried across a fork is not the child's to give back.
    generation: u64,
}

/// Waits while a fork is being prepared, then enters the gate.
pub(crate) fn enter() -> Pass {
    let mut spins = 0u32;
    loop {
        let g = GATE.load(Ordering::Acquire);
        if g & CLOSED == 0
            && GATE
                .compare_exchange_weak(g, g + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            INSIDE.with(|i| i.set(i.get() + 1));
            return Pass {
                generation: generation(),
            };
        }
        // A call from inside another call of this thread passes: prepare does not wait for this thread.
        if g & CLOSED != 0 && INSIDE.with(Cell::get) > 0 {
            GATE.fetch_add(1, Ordering::AcqRel);
            INSIDE.with(|i| i.set(i.get() + 1));
            return Pass {
                generation: generation(),
            };
        }
        spins += 1;
        if spins < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        // In a child the gate was reset under a pass taken before the fork: nothing to give back.
        if self.generation == generation() {
            GATE.fetch_sub(1, Ordering::AcqRel);
            INSIDE.with(|i| i.set(i.get().saturating_sub(1)));
        }
    }
}

/// Store calls in flight now (for tests and diagnostics).
pub fn in_flight() -> u64 {
    GATE.load(Ordering::Acquire) & !CLOSED
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn prepare_waits_for_calls_in_flight_and_blocks_new_ones() {
        let started = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let t = {
            let (started, done) = (started.clone(), done.clone());
            std::thread::spawn(move || {
                let pass = enter();
                started.store(true, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(50));
                done.store(true, Ordering::SeqCst);
                drop(pass);
            })
        };
        while !started.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        prepare();
        // The call in flight finished before prepare returned.
        assert!(done.load(Ordering::SeqCst));
        let entered = Arc::new(AtomicBool::new(false));
        let waiter = {
            let entered = entered.clone();
            std::thread::spawn(move || {
                let _pass = enter();
                entered.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            !entered.load(Ordering::SeqCst),
            "a call entered a closed gate"
        );
        after_fork_in_parent();
        waiter.join().unwrap();
        t.join().unwrap();
        assert!(entered.load(Ordering::SeqCst));
    }
}
