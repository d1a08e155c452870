//! The process-wide runtime behind `nextId()`, and the registry of every runtime this process started.
//!
//! The addon is loaded once per process (every `worker_threads` worker gets the same library), so these statics
//! are shared by all threads: workers share one runtime and one lease. `cluster` workers and child processes are
//! other processes, each with its own runtime and slot.

use crate::errors::{coded, OrThrow, Thrown};
use crate::events::Subscribers;
use cosid::{Builder, Config, Error, Layout, Runtime};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, OnceLock, Weak};

/// Started on first use; never replaced (after `shutdown()` it stays closed and id calls fail with `CLOSED`).
static RUNTIME: OnceLock<Arc<Runtime>> = OnceLock::new();

/// The settings `configure()` stored for the start. Held while starting, so one thread starts and the others
/// wait for it.
static CONFIG: Mutex<Option<Config>> = Mutex::new(None);

/// Callbacks of `onEvent()`, kept across the start.
pub static EVENTS: LazyLock<Arc<Subscribers>> = LazyLock::new(Default::default);

/// Every explicit `Runtime` started in this process, for `closeAll()` at exit.
static LIVE: Mutex<Vec<Weak<Runtime>>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // What these locks guard is replaced whole: a poisoned lock still holds consistent data.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The process-wide runtime, started now if it has not been.
#[inline]
pub fn runtime() -> Result<&'static Runtime, Error> {
    match RUNTIME.get() {
        Some(rt) => Ok(rt),
        None => start(),
    }
}

/// The process-wide runtime if it has started.
pub fn started() -> Option<&'static Runtime> {
    RUNTIME.get().map(|rt| &**rt)
}

/// Starts the process-wide runtime from the `configure()` settings, or else from the `COSID_*` environment.
/// Blocks while the lease is acquired; a failed start is not remembered, so the next call tries again.
#[cold]
pub fn start() -> Result<&'static Runtime, Error> {
    let configured = lock(&CONFIG);
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let config = match &*configured {
        Some(c) => c.clone(),
        None => crate::args::env_settings()?,
    };
    // Subscribed before the start, so the callbacks see the start-up events too (ACQUIRED, and a
    // DUPLICATE_OWNER_KEY or CLOCK_SKEW found then).
    let rt = Builder::with_config(config)
        .subscribe(EVENTS.listener())
        .build()?;
    let rt = RUNTIME.get_or_init(|| Arc::new(rt));
    drop(configured);
    Ok(rt)
}

/// Stores the settings for the start. Refused once the runtime has started: its lease and layout are fixed.
pub fn configure(config: Config) -> Result<(), Thrown> {
    let mut configured = lock(&CONFIG);
    if let Some(rt) = RUNTIME.get() {
        let status = rt.status();
        return Err(coded(
            "CONFIG",
            format!(
                "configure() came after the process-wide runtime started (namespace {:?}, slot {}): call it \
                 before the first id or ready(), or use Runtime.create() for a runtime with other settings",
                status.namespace, status.slot
            ),
        ));
    }
    crate::args::check(&config).or_throw()?;
    *configured = Some(config);
    Ok(())
}

/// The settings the process-wide runtime has or will start with.
pub fn config() -> Result<Config, Error> {
    match &*lock(&CONFIG) {
        Some(c) => Ok(c.clone()),
        None => crate::args::env_settings(),
    }
}

/// The layout of the process-wide runtime's ids: its own once started, else the one it will start with.
pub fn layout() -> Result<Layout, Error> {
    match RUNTIME.get() {
        Some(rt) => Ok(*rt.layout()),
        None => Ok(config()?.layout),
    }
}

/// Records an explicit runtime for [`close_all`]; forgets those already dropped.
pub fn register(rt: &Arc<Runtime>) {
    let mut live = lock(&LIVE);
    live.retain(|w| w.strong_count() > 0);
    live.push(Arc::downgrade(rt));
}

/// Closes the process-wide runtime if it started; the last millisecond used.
pub fn shutdown() -> Option<f64> {
    started().and_then(|rt| rt.shutdown()).map(|ms| ms as f64)
}

/// Closes the process-wide runtime and every explicit runtime still open, releasing their slots.
pub fn close_all() {
    let live: Vec<_> = std::mem::take(&mut *lock(&LIVE));
    for rt in live.iter().filter_map(Weak::upgrade) {
        rt.shutdown();
    }
    if let Some(rt) = RUNTIME.get() {
        rt.shutdown();
    }
}
