//! The fork policy's hooks. Each binding that can be forked registers them with `pthread_atfork(prepare,
//! after_fork_in_parent, after_fork_in_child)`, which libc runs around every `fork()`, whoever calls it (C; Python,
//! whose module also registers them with `os.register_at_fork`: a fork by C code, as uWSGI's prefork makes, runs no
//! Python hook), and nothing else: the policy is here. Running them twice around one fork changes nothing.
//!
//! - [`generation`] counts the forks this process descends from (bumped by [`after_fork_in_child`]). A holder
//!   records the generation it started its runtime in; a different one means it was copied from a parent, whose
//!   runtime (its keeper thread did not survive the fork, its lease is the parent's) must never issue again.
//! - The gate: no store I/O may be in flight across `fork()`. A child forked while the keeper thread is inside an
//!   SQLite write inherits SQLite's global mutexes locked and hangs, or fails "database is locked", for good. Every
//!   store call of every host runtime holds the gate shared (`GatedStore`, in `host/gated.rs`);
//!   [`prepare`] closes it and waits for the calls in flight; the parent reopens it, the child resets it. A call on
//!   a network store is waited for at most [`PREPARE_WAIT`] (the child never touches its parent's connections); a
//!   call on a file store (SQLite) until it ends, up to [`FILE_CALL_WAIT`]: SQLite's state copied mid-call is
//!   unsafe in the child even on a connection of its own (the process's table of open files and their locks is
//!   shared by every connection). A child forked past that bound anyway is marked ([`forked_mid_file_call`]),
//!   and the SQLite store refuses to open in it.
//!
//! Everything here is plain atomics: [`after_fork_in_child`] runs in a child of a multi-threaded process, where
//! only async-signal-safe work is allowed.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Starts at 1 so that 0 can mean "never started".
static GENERATION: AtomicU64 = AtomicU64::new(1);

/// The gate: [`CLOSED`] while a fork is being prepared, plus the number of store calls in flight.
static GATE: AtomicU64 = AtomicU64::new(0);
const CLOSED: u64 = 1 << 63;

/// Of the calls in flight, those on a file store (SQLite).
static FILE_CALLS: AtomicU64 = AtomicU64::new(0);

/// Set in a child forked while a file store call was in flight (inherited by its own children).
static FORKED_MID_FILE_CALL: AtomicBool = AtomicBool::new(false);

/// How long [`prepare`] waits for network store calls in flight. A call that takes longer (a network store timing
/// out) is left running: the child never touches its parent's store connections.
pub const PREPARE_WAIT: Duration = Duration::from_secs(3);

/// How long [`prepare`] waits for a file store call in flight. An SQLite call waits at most its busy timeout (10 s)
/// for another process's write lock, then writes; on a loaded machine that can exceed [`PREPARE_WAIT`].
pub const FILE_CALL_WAIT: Duration = Duration::from_secs(30);

thread_local! {
    /// Store calls this thread is inside (a fork from inside one must not wait for itself).
    static INSIDE: Cell<u64> = const { Cell::new(0) };
    /// Of those, calls on a file store.
    static INSIDE_FILE: Cell<u64> = const { Cell::new(0) };
}

/// This process's fork generation.
#[inline(always)]
pub fn generation() -> u64 {
    // Relaxed: it changes only in a fresh child, before the child has a second thread; threads started later see
    // it through the happens-before of thread creation.
    GENERATION.load(Ordering::Relaxed)
}

/// Before `fork()`: closes the gate to new store calls and waits for those in flight: network calls up to
/// [`PREPARE_WAIT`], file store calls up to [`FILE_CALL_WAIT`]. Always follow it with [`after_fork_in_parent`] in
/// the parent and [`after_fork_in_child`] in the child.
pub fn prepare() {
    prepare_within(PREPARE_WAIT, FILE_CALL_WAIT);
}

fn prepare_within(network_wait: Duration, file_wait: Duration) {
    GATE.fetch_or(CLOSED, Ordering::AcqRel);
    let mine = INSIDE.with(Cell::get);
    let mine_file = INSIDE_FILE.with(Cell::get);
    let started = Instant::now();
    let mut spins = 0u32;
    while (GATE.load(Ordering::Acquire) & !CLOSED) > mine {
        let waited = started.elapsed();
        let file_calls = FILE_CALLS.load(Ordering::Acquire) > mine_file;
        if waited >= file_wait || (waited >= network_wait && !file_calls) {
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
    if FILE_CALLS.swap(0, Ordering::AcqRel) > INSIDE_FILE.with(Cell::get) {
        FORKED_MID_FILE_CALL.store(true, Ordering::Release);
    }
    GATE.store(0, Ordering::Release);
    INSIDE.with(|i| i.set(0));
    INSIDE_FILE.with(|i| i.set(0));
    crate::clock::after_fork_in_child();
}

/// Whether this process was forked (or descends from one forked) while another thread was inside a file store
/// call that outlasted [`FILE_CALL_WAIT`]: SQLite's process-wide state was copied mid-call, so the SQLite store
/// refuses to open here.
pub fn forked_mid_file_call() -> bool {
    FORKED_MID_FILE_CALL.load(Ordering::Acquire)
}

/// A store call in flight: holds the gate shared until dropped.
#[derive(Debug)]
pub(crate) struct Pass {
    /// The generation it was taken in: a pass carried across a fork is not the child's to give back.
    generation: u64,
    /// A call on a file store.
    file: bool,
}

/// Waits while a fork is being prepared, then enters the gate for a network (or in-process) store call.
pub(crate) fn enter() -> Pass {
    enter_as(false)
}

/// [`enter`] for a call on a file store (SQLite): [`prepare`] waits for it longer.
pub(crate) fn enter_file() -> Pass {
    enter_as(true)
}

fn enter_as(file: bool) -> Pass {
    let mut spins = 0u32;
    loop {
        let g = GATE.load(Ordering::Acquire);
        if g & CLOSED == 0
            && GATE
                .compare_exchange_weak(g, g + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            return Pass::entered(file);
        }
        // A call from inside another call of this thread passes: prepare does not wait for this thread.
        if g & CLOSED != 0 && INSIDE.with(Cell::get) > 0 {
            GATE.fetch_add(1, Ordering::AcqRel);
            return Pass::entered(file);
        }
        spins += 1;
        if spins < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

impl Pass {
    /// Counts a call that has just entered the gate.
    fn entered(file: bool) -> Pass {
        INSIDE.with(|i| i.set(i.get() + 1));
        if file {
            // Counted after the gate: `prepare` sees at least as many calls in the gate as file calls.
            FILE_CALLS.fetch_add(1, Ordering::AcqRel);
            INSIDE_FILE.with(|i| i.set(i.get() + 1));
        }
        Pass {
            generation: generation(),
            file,
        }
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        // In a child the gate was reset under a pass taken before the fork: nothing to give back.
        if self.generation == generation() {
            if self.file {
                FILE_CALLS.fetch_sub(1, Ordering::AcqRel);
                INSIDE_FILE.with(|i| i.set(i.get().saturating_sub(1)));
            }
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

    /// The gate is process-wide: one test at a time.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Holds a pass of the kind asked for on another thread for `hold`; returns once it is held, with a flag set
    /// when it is given back. (Other tests of this binary make store calls too: only this call is looked at.)
    fn call_in_flight(
        file: bool,
        hold: Duration,
    ) -> (std::thread::JoinHandle<()>, Arc<AtomicBool>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let t = std::thread::spawn(move || {
            let pass = if file { enter_file() } else { enter() };
            tx.send(()).unwrap();
            std::thread::sleep(hold);
            flag.store(true, Ordering::SeqCst);
            drop(pass);
        });
        rx.recv().unwrap();
        (t, done)
    }

    #[test]
    fn prepare_waits_past_the_network_bound_for_a_file_store_call_and_not_for_a_network_one() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let hold = Duration::from_millis(400);
        // A network call longer than the network bound is left in flight.
        let (t, done) = call_in_flight(false, hold);
        prepare_within(Duration::from_millis(20), Duration::from_secs(10));
        assert!(
            !done.load(Ordering::SeqCst),
            "prepare waited for a network call past its bound"
        );
        after_fork_in_parent();
        t.join().unwrap();
        // A file store call as long is waited for...
        let (t, done) = call_in_flight(true, hold);
        prepare_within(Duration::from_millis(20), Duration::from_secs(10));
        assert!(
            done.load(Ordering::SeqCst),
            "prepare left a file store call in flight"
        );
        after_fork_in_parent();
        t.join().unwrap();
        // ... up to its own bound.
        let (t, done) = call_in_flight(true, hold);
        prepare_within(Duration::from_millis(20), Duration::from_millis(50));
        assert!(
            !done.load(Ordering::SeqCst),
            "prepare waited for a file store call past its bound"
        );
        after_fork_in_parent();
        t.join().unwrap();
    }

    #[test]
    fn prepare_waits_for_calls_in_flight_and_blocks_new_ones() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
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
