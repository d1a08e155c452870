//! The process-wide runtime behind `cosid.next_id()`, the registry of explicit `cosid.Runtime` objects, and what
//! happens to both at `fork()` and at interpreter exit.
//!
//! Locking rules, because `os.fork()` copies a lock in whatever state another thread left it:
//! - the hot path takes no lock: it loads an `ArcSwapOption` and calls [`Runtime::try_next_id`];
//! - `START` (held, with the GIL released, while a runtime is built) is itself replaced in a forked child, so a
//!   build that was running in another thread of the parent cannot leave the child locked;
//! - `REGISTRY` is locked only while attached to the interpreter and never across a wait, so no thread holds it
//!   while `os.fork()` (which holds the GIL) runs.
//!
//! A runtime is shut down only with the GIL released: shutdown joins the keeper thread, which may be waiting for
//! the GIL to deliver an event.

use crate::errors::{closed, from_core};
use crate::events::{deliver, Target};
use arc_swap::{ArcSwap, ArcSwapOption};
use cosid::{Builder, Config, Runtime};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

/// The process-wide runtime, once started.
static CURRENT: ArcSwapOption<Runtime> = ArcSwapOption::const_empty();
/// Set in a child by a `pthread_atfork` handler on every `fork()`, including those that skip Python's fork hooks
/// (a C extension's, or uWSGI's without `py-call-osafterfork`). The fast paths check it: one relaxed load.
static FORKED: AtomicBool = AtomicBool::new(false);
/// Serializes starting, reconfiguring and shutting down the process-wide runtime. Replaced after fork.
static START: LazyLock<ArcSwap<Mutex<()>>> =
    LazyLock::new(|| ArcSwap::from_pointee(Mutex::new(())));
/// The configuration from `cosid.configure()`; `None` reads the `COSID_*` environment at start.
static CONFIG: ArcSwapOption<Config> = ArcSwapOption::const_empty();
/// Set by the `atexit` hook: no runtime may start after it.
static EXITING: AtomicBool = AtomicBool::new(false);
/// Every explicit `cosid.Runtime` still alive, to abandon at fork and shut down at exit.
static REGISTRY: Mutex<Vec<Weak<Cell>>> = Mutex::new(Vec::new());

/// The name the core gives the keeper thread; shutting down from it would join itself.
const KEEPER_THREAD: &str = "cosid-keeper";

/// Refuses calls that would shut a runtime down from its own keeper thread (from an event callback).
pub(crate) fn not_on_keeper(what: &str) -> PyResult<()> {
    if std::thread::current().name() == Some(KEEPER_THREAD) {
        return Err(PyRuntimeError::new_err(format!(
            "cosid: {what} cannot be called from an event callback (it runs on the runtime's own thread, which \
             it would have to wait for)"
        )));
    }
    Ok(())
}

/// Closes a runtime with the GIL released; returns the last millisecond used.
pub(crate) fn shutdown(py: Python<'_>, rt: Arc<Runtime>) -> Option<u64> {
    py.detach(move || rt.shutdown())
}

/// In a forked child: make sure `rt` never issues an id and is never released (its lease is the parent's).
fn abandon(rt: Arc<Runtime>) {
    match Arc::try_unwrap(rt) {
        Ok(rt) => rt.abandon_after_fork(),
        // A thread of the parent held a reference when it forked. That thread does not exist here; nothing can
        // reach the runtime any more, and it must never be dropped (dropping it would release the parent's lease).
        Err(rt) => std::mem::forget(rt),
    }
}

fn start_lock() -> Arc<Mutex<()>> {
    START.load_full()
}

fn exiting_error(py: Python<'_>) -> PyErr {
    closed(
        py,
        "the interpreter is exiting; cosid runtimes were shut down by the atexit hook",
    )
}

thread_local! {
    /// Set while this thread starts the process-wide runtime (and delivers its first events).
    static STARTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Refuses to reconfigure or shut down the process-wide runtime from the callback of its own start (this thread
/// holds the start lock that those calls take).
fn not_starting(what: &str) -> PyResult<()> {
    if STARTING.with(std::cell::Cell::get) {
        return Err(PyRuntimeError::new_err(format!(
            "cosid: {what} cannot be called from an event callback while the process-wide runtime starts"
        )));
    }
    Ok(())
}

/// The process-wide runtime, started on first use (the GIL is released while it starts).
pub(crate) fn current(py: Python<'_>) -> PyResult<Arc<Runtime>> {
    if let Some(rt) = CURRENT.load_full() {
        return Ok(rt);
    }
    if EXITING.load(Ordering::Acquire) {
        return Err(exiting_error(py));
    }
    if std::thread::current().name() == Some(KEEPER_THREAD) {
        // The start lock may be held by a thread that is waiting for this one (configure() joining its keeper).
        return Err(PyRuntimeError::new_err(
            "cosid: an event callback cannot start the process-wide runtime (it is not running: shut down, \
             reconfigured, or never started); take ids from it outside callbacks",
        ));
    }
    if STARTING.with(std::cell::Cell::get) {
        return Err(PyRuntimeError::new_err(
            "cosid: the process-wide runtime is starting on this thread (this is an event callback for its first \
             ACQUIRED event); it cannot issue ids before it has started",
        ));
    }
    let lock = start_lock();
    let config = CONFIG.load_full();
    let built = py.detach(move || -> Result<Result<Arc<Runtime>, cosid::Error>, ()> {
        let _guard = lock.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(rt) = CURRENT.load_full() {
            return Ok(Ok(rt));
        }
        if EXITING.load(Ordering::Acquire) {
            return Err(());
        }
        // Read the configuration again under the lock: `configure()` may have replaced it meanwhile.
        let config = CONFIG.load_full().or(config);
        let builder = match config {
            Some(c) => Builder::with_config((*c).clone()),
            None => match Builder::from_env() {
                Ok(b) => b,
                Err(e) => return Ok(Err(e)),
            },
        };
        STARTING.with(|s| s.set(true));
        let built = builder.subscribe(|e| deliver(Target::Process, e)).build();
        STARTING.with(|s| s.set(false));
        let rt = match built {
            Ok(rt) => Arc::new(rt),
            Err(e) => return Ok(Err(e)),
        };
        CURRENT.store(Some(rt.clone()));
        Ok(Ok(rt))
    });
    match built {
        Ok(Ok(rt)) => Ok(rt),
        Ok(Err(e)) => Err(from_core(py, &e)),
        Err(()) => Err(exiting_error(py)),
    }
}

/// Whether `rt` is still the process-wide runtime (a call that failed with `CLOSED` on a runtime that was
/// replaced meanwhile tries again on the new one).
pub(crate) fn is_current(rt: &Arc<Runtime>) -> bool {
    CURRENT
        .load()
        .as_ref()
        .is_some_and(|cur| Arc::ptr_eq(cur, rt))
}

/// The process-wide runtime for the fast path, without starting it.
#[inline]
pub(crate) fn loaded() -> arc_swap::Guard<Option<Arc<Runtime>>> {
    CURRENT.load()
}

/// Whether this process forked since the runtimes were last abandoned (the fast paths' check).
#[inline]
pub(crate) fn forked() -> bool {
    FORKED.load(Ordering::Relaxed)
}

/// The slow paths' handling of a fork that Python's fork hooks did not see.
pub(crate) fn check_fork(py: Python<'_>) {
    if FORKED.load(Ordering::Acquire) {
        after_fork_in_child(py);
    }
}

extern "C" fn child_after_fork() {
    // Async-signal-safe: one atomic store, nothing else, as a fork handler must.
    FORKED.store(true, Ordering::SeqCst);
}

/// Registers the `pthread_atfork` child handler, once per process.
pub(crate) fn install_fork_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `pthread_atfork` only records the function pointers; `child_after_fork` is a plain `extern "C"`
        // function with no captured state that stays valid for the life of the process (the extension module is
        // never unloaded), and it does one atomic store, which is async-signal-safe in a forked child.
        let rc = unsafe { libc::pthread_atfork(None, None, Some(child_after_fork)) };
        if rc != 0 {
            tracing::warn!(
                rc,
                "cosid: pthread_atfork failed; fork safety relies on os.register_at_fork alone"
            );
        }
    });
}

/// Replaces the configuration of the process-wide runtime and shuts down the running one (if any), so that the
/// next id comes from a runtime with the new settings.
pub(crate) fn configure(py: Python<'_>, config: Config) -> PyResult<()> {
    not_on_keeper("configure()")?;
    not_starting("configure()")?;
    let lock = start_lock();
    let config = Arc::new(config);
    let old = py.detach(move || {
        let _guard = lock.lock().unwrap_or_else(PoisonError::into_inner);
        CONFIG.store(Some(config));
        let old = CURRENT.swap(None);
        if let Some(rt) = &old {
            rt.shutdown();
        }
        old
    });
    drop(old);
    Ok(())
}

/// The configuration the process-wide runtime starts (or started) with.
pub(crate) fn configured() -> Result<Config, cosid::Error> {
    match CONFIG.load_full() {
        Some(c) => Ok((*c).clone()),
        None => Ok(Config::from_env()?),
    }
}

/// Shuts the process-wide runtime down (seal, release); the next call starts a new one. Returns the last
/// millisecond used, if any id was issued.
pub(crate) fn shutdown_current(py: Python<'_>) -> PyResult<Option<u64>> {
    not_on_keeper("shutdown()")?;
    not_starting("shutdown()")?;
    let lock = start_lock();
    Ok(py.detach(move || {
        let _guard = lock.lock().unwrap_or_else(PoisonError::into_inner);
        CURRENT.swap(None).and_then(|rt| rt.shutdown())
    }))
}

/// What an explicit `cosid.Runtime` holds: its runtime until it is closed or abandoned at fork.
#[derive(Debug)]
pub(crate) struct Cell {
    pub(crate) runtime: ArcSwapOption<Runtime>,
    pub(crate) layout: cosid::Layout,
    pub(crate) pid: u32,
    /// Set when the runtime was abandoned in a forked child (for the error message).
    pub(crate) forked: AtomicBool,
}

/// Registers an explicit runtime, so that fork and exit reach it.
pub(crate) fn register(_py: Python<'_>, cell: &Arc<Cell>) {
    let mut reg = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    reg.retain(|w| w.strong_count() > 0);
    reg.push(Arc::downgrade(cell));
}

impl Cell {
    /// Abandons this cell's runtime in a forked child.
    pub(crate) fn abandon(&self) {
        self.forked.store(true, Ordering::Release);
        if let Some(rt) = self.runtime.swap(None) {
            abandon(rt);
        }
    }

    /// The error for a call on a runtime that is gone.
    pub(crate) fn closed_error(&self, py: Python<'_>) -> PyErr {
        if self.forked.load(Ordering::Acquire) || self.pid != std::process::id() {
            closed(
                py,
                format!(
                    "this cosid.Runtime was created in process {} and this process is a fork of it: its lease \
                     belongs to the parent, so it was abandoned here; create a new cosid.Runtime in the child \
                     (cosid.next_id() does that by itself)",
                    self.pid
                ),
            )
        } else {
            closed(py, "this cosid.Runtime was shut down")
        }
    }
}

/// `os.register_at_fork(after_in_child=...)`: abandon every runtime of the parent (never release: the parent
/// still holds the leases); the process-wide runtime starts again, with a new incarnation and its own slot, on
/// first use.
pub(crate) fn after_fork_in_child(_py: Python<'_>) {
    START.store(Arc::new(Mutex::new(())));
    FORKED.store(false, Ordering::Release);
    if let Some(rt) = CURRENT.swap(None) {
        abandon(rt);
    }
    match REGISTRY.try_lock() {
        Ok(mut reg) => {
            for cell in reg.drain(..).filter_map(|w| w.upgrade()) {
                cell.abandon();
            }
        }
        Err(std::sync::TryLockError::Poisoned(p)) => {
            for cell in p.into_inner().drain(..).filter_map(|w| w.upgrade()) {
                cell.abandon();
            }
        }
        // Unreachable while the registry is only locked with the GIL held (os.fork holds it); each explicit
        // runtime also checks the pid on its slow path.
        Err(std::sync::TryLockError::WouldBlock) => {}
    }
}

/// The `atexit` hook: no new runtime from now on; shut down the process-wide runtime and every explicit one, so
/// their slots are released with their exact last timestamps.
pub(crate) fn at_exit(py: Python<'_>) {
    check_fork(py);
    EXITING.store(true, Ordering::Release);
    let cells: Vec<Arc<Cell>> = {
        let mut reg = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
        reg.drain(..).filter_map(|w| w.upgrade()).collect()
    };
    let runtimes: Vec<Arc<Runtime>> = cells
        .iter()
        .filter(|c| c.pid == std::process::id())
        .filter_map(|c| c.runtime.swap(None))
        .collect();
    let lock = start_lock();
    py.detach(move || {
        let _guard = lock.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(rt) = CURRENT.swap(None) {
            rt.shutdown();
        }
        for rt in runtimes {
            rt.shutdown();
        }
    });
}
