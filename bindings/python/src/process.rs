//! The Python side of the core's host layer ([`cosid::host`]): the process-wide runtime is
//! [`cosid::host::global`], each `cosid.Runtime` a [`Holder`]; their lifecycle, fork policy and re-entry rules are
//! the core's. What stays here is Python's: the GIL, released around every call that may wait; the fork hooks
//! (`pthread_atfork` runs the core's three at every `fork()`, Python's or C's, and closes the event deliveries'
//! gate; `os.register_at_fork` calls [`fork_prepare`], [`fork_parent`] and [`fork_child`] too); and the exit
//! hook.

use crate::errors::from_host;
use crate::events;
use cosid::host::{self, Holder, HostError, Settings};
use pyo3::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// Counts `configure()` calls on the process-wide runtime: odd while one is replacing the runtime. A call that
/// meets `CLOSED` because a `configure()` shut the old runtime down meanwhile tries again on the new one.
static RECONFIGURE: AtomicU64 = AtomicU64::new(0);

/// Every explicit `cosid.Runtime` still alive, to shut down at exit.
static REGISTRY: Mutex<Vec<Weak<Holder>>> = Mutex::new(Vec::new());

/// The process-wide runtime.
#[inline]
pub(crate) fn global() -> &'static Holder {
    host::global()
}

/// Runs `call` on `holder` with the GIL released (it may wait for the store, a renewal or the clock), and turns
/// its error into the Python exception.
pub(crate) fn detached<T: Send>(
    py: Python<'_>,
    holder: &Holder,
    call: impl FnOnce(&Holder) -> Result<T, HostError> + Send,
) -> PyResult<T> {
    py.detach(|| call(holder)).map_err(|e| from_host(py, &e))
}

/// `call` on the process-wide runtime with the GIL released, tried again when a concurrent `configure()` closed
/// the runtime it met (a replacement, not a shutdown).
pub(crate) fn on_global<T: Send>(
    py: Python<'_>,
    call: impl Fn(&Holder) -> Result<T, HostError> + Send + Sync,
) -> PyResult<T> {
    py.detach(|| loop {
        let seq = RECONFIGURE.load(Ordering::Acquire);
        match call(global()) {
            Err(e)
                if e.code == host::ErrorCode::Closed
                    && (seq & 1 == 1 || RECONFIGURE.load(Ordering::Acquire) != seq) =>
            {
                std::thread::yield_now();
            }
            other => return other,
        }
    })
    .map_err(|e| from_host(py, &e))
}

/// Replaces the settings of the process-wide runtime. Python's `configure()` keeps its promise of replacing a
/// running runtime: that one is shut down first (its slot released), then the new settings wait for the next id.
pub(crate) fn configure(py: Python<'_>, settings: Settings) -> PyResult<()> {
    RECONFIGURE.fetch_add(1, Ordering::AcqRel);
    let result = detached(py, global(), move |h| {
        if h.is_running() {
            h.shutdown()?;
        }
        h.configure(settings)
    });
    RECONFIGURE.fetch_add(1, Ordering::AcqRel);
    result
}

/// Registers an explicit runtime, so that the exit hook reaches it.
pub(crate) fn register(holder: &Arc<Holder>) {
    let mut reg = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    reg.retain(|w| w.strong_count() > 0);
    reg.push(Arc::downgrade(holder));
}

/// `os.register_at_fork(before=...)`: no store I/O of any runtime may be in flight across the fork.
pub(crate) fn fork_prepare() {
    host::fork::prepare();
}

/// `os.register_at_fork(after_in_parent=...)`.
pub(crate) fn fork_parent() {
    host::fork::after_fork_in_parent();
}

/// `os.register_at_fork(after_in_child=...)`: a new fork generation, so that every holder copied from the parent
/// retires the parent's runtime at its next call and applies the fork policy (a slot of its own, or `FORKED`).
pub(crate) fn fork_child() {
    host::fork::after_fork_in_child();
}

extern "C" fn prepare_c_fork() {
    // No panic may unwind into libc's fork(). Deliveries first: one in flight may make a store call, which the
    // closed store gate would hold up.
    let _ = std::panic::catch_unwind(|| {
        events::prepare_fork();
        host::fork::prepare();
    });
}

extern "C" fn parent_after_c_fork() {
    let _ = std::panic::catch_unwind(|| {
        host::fork::after_fork_in_parent();
        events::after_fork(false);
    });
}

extern "C" fn child_after_c_fork() {
    // Plain atomics only, as a fork handler in a child of a threaded process must.
    let _ = std::panic::catch_unwind(|| {
        host::fork::after_fork_in_child();
        events::after_fork(true);
    });
}

/// Registers the fork policy's three hooks with `pthread_atfork`, once per process, so that every `fork()` runs
/// them, Python's or C's: uWSGI's prefork (without `--py-call-uwsgi-fork-hooks`), a C extension, `ctypes`. Python's
/// `os.register_at_fork` hooks run them too around `os.fork()` (with the GIL released while the store calls in
/// flight end); running them twice changes nothing.
pub(crate) fn install_fork_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `pthread_atfork` only records the function pointers; the three are plain `extern "C"` functions
        // with no captured state that stay valid for the life of the process (the extension module is never
        // unloaded) and catch every panic; the child's does only atomic stores, which are async-signal-safe in a
        // forked child.
        let rc = unsafe {
            libc::pthread_atfork(
                Some(prepare_c_fork),
                Some(parent_after_c_fork),
                Some(child_after_c_fork),
            )
        };
        if rc != 0 {
            tracing::warn!(
                rc,
                "cosid: pthread_atfork failed; fork safety relies on os.register_at_fork alone"
            );
        }
    });
}

/// The `atexit` hook: shuts down the process-wide runtime and every explicit one this process started, so their
/// slots are released with their exact last timestamps. Later calls raise `CLOSED`.
pub(crate) fn at_exit(py: Python<'_>) {
    let holders: Vec<Arc<Holder>> = {
        let mut reg = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
        reg.drain(..).filter_map(|w| w.upgrade()).collect()
    };
    py.detach(move || {
        global().shutdown_at_exit();
        for h in holders {
            h.shutdown_at_exit();
        }
    });
}
