//! The process-wide runtime behind `nextId()`, and the registry of every runtime this process started.
//!
//! The process-wide runtime is the core's [`cosid::host::global`]: its lifecycle (lazy start, configure before
//! start, closed after shutdown until configured again) and its re-entry rules are the same in every language.
//! The addon is loaded once per process (every `worker_threads` worker gets the same library), so all threads
//! share it and its lease. `cluster` workers and child processes are other processes, each with its own runtime.

use crate::errors::{OrThrow, Thrown};
use crate::events::Subscribers;
use cosid::host::{self, Holder, HostError, Settings};
use cosid::Layout;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Once, Weak};

/// Set when `shutdown()` closed a running process-wide runtime (whose last status `status()` still shows),
/// cleared by `configure()`.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Callbacks of `onEvent()`, kept across starts.
pub static EVENTS: LazyLock<Arc<Subscribers>> = LazyLock::new(Default::default);

/// Every explicit `Runtime` started in this process, for `closeAll()` at exit.
static LIVE: Mutex<Vec<Weak<Holder>>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // What these locks guard is replaced whole: a poisoned lock still holds consistent data.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The process-wide runtime's holder.
#[inline]
pub fn holder() -> &'static Holder {
    host::global()
}

/// Subscribes the `onEvent()` callbacks to the process-wide runtime, once: the holder passes them to every
/// runtime it starts, the start-up events included.
pub fn subscribe_events() -> Result<(), Thrown> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        let listener = EVENTS.listener();
        result = holder().subscribe(Arc::new(listener)).or_throw();
    });
    result
}

/// Stores the settings for the next start: `ALREADY_INITIALIZED` while the runtime runs (shut it down first).
pub fn configure(settings: Settings) -> Result<(), Thrown> {
    holder().configure(settings).or_throw()?;
    CLOSED.store(false, Ordering::Release);
    Ok(())
}

/// Whether the process-wide runtime has a status to show: running, or closed by `shutdown()`.
pub fn has_status() -> bool {
    holder().is_running() || CLOSED.load(Ordering::Acquire)
}

/// The layout of the process-wide runtime's ids: its own once started, else the one it will start with.
pub fn layout() -> Result<Layout, HostError> {
    let h = holder();
    if h.is_running() {
        h.layout()
    } else {
        h.settings().map(|s| s.config().layout)
    }
}

/// Closes the process-wide runtime; the last millisecond used.
pub fn shutdown() -> Result<Option<f64>, Thrown> {
    if holder().is_running() {
        CLOSED.store(true, Ordering::Release);
    }
    Ok(holder().shutdown().or_throw()?.map(|ms| ms as f64))
}

/// Records an explicit runtime for [`close_all`]; forgets those already dropped.
pub fn register(rt: &Arc<Holder>) {
    let mut live = lock(&LIVE);
    live.retain(|w| w.strong_count() > 0);
    live.push(Arc::downgrade(rt));
}

/// Closes the process-wide runtime and every explicit runtime still open, releasing their slots.
pub fn close_all() {
    let live: Vec<_> = std::mem::take(&mut *lock(&LIVE));
    for rt in live.iter().filter_map(Weak::upgrade) {
        rt.shutdown_at_exit();
    }
    holder().shutdown_at_exit();
}
