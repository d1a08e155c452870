//! [`Holder`]: a runtime with the one lifecycle every language shares.
//!
//! - **Lazy start**: the first id call starts the runtime from the configured [`Settings`], else from the
//!   `COSID_*` environment (read once, at that start). A failed start is not remembered: the next call tries again.
//! - **Configure before start**: [`configure`](Holder::configure) and [`init`](Holder::init) are refused with
//!   `ALREADY_INITIALIZED` while a runtime is running.
//! - **Shutdown**: seals the runtime, releases its slot, stops its thread. Afterwards id calls fail with `CLOSED`
//!   until the holder is configured again ([`configure`](Holder::configure) or [`init`](Holder::init)); status
//!   still reads the last lease. Never a silent restart: a shutdown is how a process says "no more ids" (at exit,
//!   from a signal handler), and a new lease taken after it would outlive the exit hooks that release leases.
//! - **Fork**: a holder copied into a child of `fork()` (seen through [`fork::generation`]) retires its parent's
//!   runtime without touching it (no store call, no join, no release), then follows DESIGN §5: on a store that
//!   can give the child a slot of its own, and fork policy `reacquire`, the child's first call starts a runtime
//!   with a new incarnation; otherwise its calls fail with `FORKED` until it is configured again.
//! - **Re-entry**: a call from inside one of this holder's own event callbacks (which run on the runtime's thread,
//!   or on the starting thread for the first events) fails with `REENTRANT`, naming the call and the event: an id
//!   call may have to wait for that very thread, and a shutdown would join it.
//!
//! The hot path is a load of the generation and of the epoch, the runtime (the holder's first one, pinned for its
//! life; a later one from a per-thread cache) and the generator's lock-free `try_next_id`. Everything else runs under a lock that a fork cannot leave held (a lock word tagged with the
//! fork generation: one held by a parent's thread, which does not exist in the child, is free there).

use super::code::{ErrorCode, HostError};
use super::fork;
use super::settings::{Listener, OnFork, Settings};
use super::store_value::ForkRule;
use crate::event::Event;
use crate::id::{Id, Layout};
use crate::keeper::{Shared, Status};
use crate::runtime::{Builder, Runtime};
use arc_swap::ArcSwapOption;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The process-wide log listener (see [`set_log`]).
static LOG: ArcSwapOption<Listener> = ArcSwapOption::const_empty();

/// Sets (or, with `None`, removes) the one process-wide listener that sees every event of every runtime a
/// [`Holder`] starts, from its very start, before the runtime's own listeners: how a binding bridges events to its
/// language's logging at each event's [`level`](crate::Event::level). It runs on the runtime's thread (the first
/// events on the starting thread) as any listener does; a call back into that holder from it fails with
/// `REENTRANT`. Takes effect at the next event.
pub fn set_log(listener: Option<Listener>) {
    LOG.store(listener.map(Arc::new));
}

/// What the holder is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// No runtime: the next id call starts one.
    Fresh,
    /// `current` issues ids.
    Running,
    /// Shut down: calls fail with `CLOSED` until configured again.
    Closed,
    /// A fork's child that cannot take a slot of its own: calls fail with `FORKED` until configured again.
    Forked(String),
}

#[derive(Clone)]
struct Slow {
    state: State,
    /// What to start from; `None` reads the environment at the first start.
    settings: Option<Settings>,
    /// Listeners added with [`Holder::subscribe`], given again to a runtime that replaces this one.
    listeners: Vec<Listener>,
}

/// A runtime holder: the process-wide runtime of a language binding, or one explicit runtime object (C's
/// `cosid_runtime`, Python's `cosid.Runtime`). See the module documentation for its lifecycle.
///
/// `Holder` is `Send + Sync`; every method may be called from any number of threads at once.
pub struct Holder {
    /// The fork generation `current` belongs to; 0 before the first start.
    generation: AtomicU64,
    current: ArcSwapOption<Runtime>,
    /// `current`'s epoch: unique in the process (from [`NEXT_EPOCH`]), 0 for none. Changed after `current`.
    epoch: AtomicU64,
    /// The first runtime this holder started, kept (sealed once shut down) for the holder's life: while it is
    /// `current`, the fast path reads it with plain loads, no thread-local and no arc-swap (see `try_next_id`).
    pinned: OnceLock<Pinned>,
    /// 0 when free, `generation << 1 | 1` while a thread of that generation holds it.
    lock: AtomicU64,
    /// Replaced whole, only under `lock`; `None` is a fresh holder that reads the environment.
    slow: ArcSwapOption<Slow>,
}

impl std::fmt::Debug for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Holder")
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .field("state", &self.slow.load().as_ref().map(|s| s.state.clone()))
            .finish_non_exhaustive()
    }
}

thread_local! {
    /// The holder whose event callback this thread is running (its address), and the event's name.
    static IN_CALLBACK: Cell<(usize, &'static str)> = const { Cell::new((0, "")) };
    /// The runtime this thread last issued from through a holder's fast path, with its epoch and the fork
    /// generation it was cached in. Reading it costs a thread-local access and a compare, where loading
    /// `Holder::current` costs arc-swap's protocol (about 8 ns a call): see `try_next_id`.
    static FAST: RefCell<Option<Cached>> = const { RefCell::new(None) };
}

/// [`Holder::pinned`]: a runtime with its epoch and the fork generation it was started in.
struct Pinned {
    epoch: u64,
    generation: u64,
    runtime: Arc<Runtime>,
    /// The runtime's only lane, with one slot: the export's first attempt reads its generator one load sooner.
    lane: Option<Arc<Shared>>,
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if self.generation != fork::generation() {
            // A parent's runtime, copied into a forked child: never dropped here (see `abandon`).
            std::mem::forget(self.runtime.clone());
            std::mem::forget(self.lane.clone());
        }
    }
}

/// An entry of [`FAST`].
struct Cached {
    epoch: u64,
    generation: u64,
    runtime: Arc<Runtime>,
}

impl Drop for Cached {
    fn drop(&mut self) {
        if self.generation != fork::generation() {
            // A parent's runtime, copied into a forked child: never dropped here (see `abandon`).
            std::mem::forget(self.runtime.clone());
        }
    }
}

/// The next runtime epoch: every runtime a holder installs gets its own, so a cached entry never matches another
/// holder's runtime, nor a later runtime of the same holder.
static NEXT_EPOCH: AtomicU64 = AtomicU64::new(1);

impl Default for Holder {
    fn default() -> Self {
        Self::from_env()
    }
}

impl Holder {
    /// A holder that starts from the `COSID_*` environment at its first use (the process-wide runtime).
    pub const fn from_env() -> Holder {
        Holder {
            generation: AtomicU64::new(0),
            current: ArcSwapOption::const_empty(),
            epoch: AtomicU64::new(0),
            pinned: OnceLock::new(),
            lock: AtomicU64::new(0),
            slow: ArcSwapOption::const_empty(),
        }
    }

    /// A holder that starts from `settings` at its first use.
    pub fn new(settings: Settings) -> Holder {
        let h = Holder::from_env();
        h.slow.store(Some(Arc::new(Slow {
            state: State::Fresh,
            settings: Some(settings),
            listeners: Vec::new(),
        })));
        h
    }

    /// Issues one id, starting the runtime on first use.
    #[inline]
    pub fn next_id(&self) -> Result<Id, HostError> {
        if let Some(id) = self.try_next_id() {
            return Ok(id);
        }
        self.next_id_slow()
    }

    #[cold]
    #[inline(never)]
    fn next_id_slow(&self) -> Result<Id, HostError> {
        self.refuse_reentry("next_id")?;
        Ok(self.runtime()?.next_id()?)
    }

    /// Issues one id if the runtime is running in this process and needs neither a wait nor an error: two atomic
    /// loads and the generator's fast path. `None` means "call [`next_id`](Self::next_id)" (for bindings that
    /// release a lock, such as Python's GIL, only around calls that may wait).
    ///
    /// The runtime is the pinned one when its epoch is the holder's (the holder's first runtime: no thread-local
    /// access), else this thread's cache when its epoch is the holder's; the first call on a thread (or after the
    /// holder starts another runtime) loads `current` and caches it.
    #[inline(always)]
    pub fn try_next_id(&self) -> Option<Id> {
        if self.generation.load(Ordering::Acquire) != fork::generation() {
            return None;
        }
        let epoch = self.epoch.load(Ordering::Acquire);
        // The common case, one runtime for the holder's life: no thread-local access (in a shared library, a call
        // to `__tls_get_addr`). `pinned` is set before the epoch that names it is published.
        if let Some(p) = self.pinned.get() {
            if p.epoch == epoch {
                return match &p.lane {
                    Some(lane) => lane.generator.try_next_id(),
                    None => p.runtime.try_next_id(),
                };
            }
        }
        let cached = FAST.try_with(|fast| match fast.try_borrow() {
            Ok(fast) => match fast.as_ref() {
                Some(c) if c.epoch == epoch => Some(c.runtime.try_next_id()),
                _ => None,
            },
            Err(_) => None,
        });
        match cached {
            Ok(Some(id)) => id,
            _ => self.try_next_id_caching(epoch),
        }
    }

    /// [`try_next_id`](Self::try_next_id) that calls no function, for an export's first attempt (which then needs
    /// no stack frame, and its loads start one level sooner): only the pinned runtime with one slot, only on the
    /// system clock while its cached reading is fresh. `None` means "call `try_next_id`". The window check is the
    /// generator's, as on every path.
    #[inline(always)]
    pub fn try_next_id_leaf(&self) -> Option<Id> {
        if self.generation.load(Ordering::Acquire) != fork::generation() {
            return None;
        }
        let p = self.pinned.get()?;
        if p.epoch != self.epoch.load(Ordering::Acquire) {
            return None;
        }
        p.lane.as_ref()?.generator.try_next_id_leaf()
    }

    /// [`try_next_id`](Self::try_next_id) through `current`, caching it for this thread.
    #[cold]
    #[inline(never)]
    fn try_next_id_caching(&self, epoch: u64) -> Option<Id> {
        let runtime = self.current.load_full()?;
        // `current` is changed before `epoch`: the same epoch after the load means `runtime` is at least as new
        // as the epoch (a newer one is replaced at the next call, when the epoch has moved on).
        if epoch != 0 && self.epoch.load(Ordering::Acquire) == epoch {
            let entry = Cached {
                epoch,
                generation: fork::generation(),
                runtime: runtime.clone(),
            };
            let _ = FAST.try_with(|fast| {
                let old = match fast.try_borrow_mut() {
                    Ok(mut fast) => fast.replace(entry),
                    Err(_) => None,
                };
                // Outside the borrow: dropping the last reference to a runtime shuts it down.
                drop(old);
            });
        }
        runtime.try_next_id()
    }

    /// Fills `out` with ids, starting the runtime on first use. On error, discard `out`.
    pub fn fill(&self, out: &mut [Id]) -> Result<(), HostError> {
        self.refuse_reentry("next_ids")?;
        Ok(self.runtime()?.fill(out)?)
    }

    /// The runtime's status, starting it on first use. After shutdown, the last lease (state `Closed`).
    pub fn status(&self) -> Result<Status, HostError> {
        Ok(self.readable("status")?.status())
    }

    /// The layout of the runtime's ids, starting it on first use.
    pub fn layout(&self) -> Result<Layout, HostError> {
        Ok(*self.readable("layout")?.layout())
    }

    /// The runtime itself, started on first use (for what the holder does not wrap). Do not keep it across a
    /// `fork()`: a child must never drop its parent's runtime (dropping shuts it down and joins its thread).
    pub fn runtime(&self) -> Result<Arc<Runtime>, HostError> {
        if self.generation.load(Ordering::Acquire) == fork::generation() {
            if let Some(rt) = self.current.load_full() {
                if self.state() == Some(State::Running) {
                    return Ok(rt);
                }
            }
        }
        self.refuse_reentry("start")?;
        let _lock = self.lock();
        self.adopt_fork();
        let slow = self.slow_now();
        match &slow.state {
            State::Running => self.current.load_full().ok_or_else(|| {
                HostError::new(ErrorCode::Internal, "a running holder has no runtime")
            }),
            State::Fresh => self.start(&slow),
            State::Closed => Err(HostError::new(
                ErrorCode::Closed,
                "the runtime was shut down: configure it again to start a new one",
            )),
            State::Forked(why) => Err(HostError::new(ErrorCode::Forked, why.clone())),
        }
    }

    /// Status and layout read the current runtime, even sealed; they start one only when there is none.
    fn readable(&self, call: &'static str) -> Result<Arc<Runtime>, HostError> {
        if self.generation.load(Ordering::Acquire) == fork::generation() {
            if let Some(rt) = self.current.load_full() {
                if matches!(self.state(), Some(State::Running | State::Closed)) {
                    return Ok(rt);
                }
            }
        }
        self.refuse_reentry(call)?;
        self.runtime()
    }

    /// Whether a runtime is running in this process now.
    pub fn is_running(&self) -> bool {
        self.generation.load(Ordering::Acquire) == fork::generation()
            && self.state() == Some(State::Running)
    }

    /// The settings the holder starts (or started) with: the configured ones, else the environment's.
    pub fn settings(&self) -> Result<Settings, HostError> {
        match self.slow.load().as_ref().and_then(|s| s.settings.clone()) {
            Some(s) => Ok(s),
            None => Settings::from_env(),
        }
    }

    /// Sets what the next start uses. Refused with `ALREADY_INITIALIZED` while a runtime is running; after a
    /// shutdown or a `FORKED`, it makes the holder startable again.
    pub fn configure(&self, settings: Settings) -> Result<(), HostError> {
        self.refuse_reentry("configure")?;
        settings.validate()?;
        let _lock = self.lock();
        self.adopt_fork();
        let slow = self.slow_now();
        if slow.state == State::Running {
            return Err(already_running());
        }
        self.slow.store(Some(Arc::new(Slow {
            state: State::Fresh,
            settings: Some(settings),
            listeners: slow.listeners.clone(),
        })));
        Ok(())
    }

    /// Starts a runtime from `settings` now (blocking while the slot is acquired). Refused with
    /// `ALREADY_INITIALIZED` while one is running. On failure the holder is as before the call.
    pub fn init(&self, settings: Settings) -> Result<(), HostError> {
        self.refuse_reentry("init")?;
        let _lock = self.lock();
        self.adopt_fork();
        let before = self.slow_now();
        if before.state == State::Running {
            return Err(already_running());
        }
        let fresh = Slow {
            state: State::Fresh,
            settings: Some(settings),
            listeners: before.listeners.clone(),
        };
        match self.start(&fresh) {
            Ok(_) => Ok(()),
            Err(e) => {
                self.slow.store(Some(before));
                Err(e)
            }
        }
    }

    /// Ordered shutdown: seals the runtime (no id is returned after this starts), releases its slot with the
    /// exact last timestamp, stops its thread. Returns that timestamp (`None` if nothing was issued on the current
    /// lease). Later id calls fail with `CLOSED` until the holder is configured again. Idempotent; in a forked
    /// child it leaves the parent's runtime and lease alone.
    pub fn shutdown(&self) -> Result<Option<u64>, HostError> {
        self.refuse_reentry("shutdown")?;
        let running = {
            let _lock = self.lock();
            self.adopt_fork();
            let slow = self.slow_now();
            let running = (slow.state == State::Running)
                .then(|| self.current.load_full())
                .flatten();
            let mut closed = (*slow).clone();
            closed.state = State::Closed;
            self.slow.store(Some(Arc::new(closed)));
            running
        };
        // Outside the lock: the last events reach callbacks, and other threads see CLOSED meanwhile.
        Ok(running.and_then(|rt| rt.shutdown()))
    }

    /// For an exit hook: shuts down a runtime this process started; does nothing in a child that never started
    /// its own, nor from an event callback.
    pub fn shutdown_at_exit(&self) {
        if self.generation.load(Ordering::Acquire) == fork::generation() {
            let _ = self.shutdown();
        }
    }

    /// Calls `listener` with every later event of the running runtime, and every event of the runtimes that
    /// replace it (after a fork, or a re-initialization).
    pub fn subscribe(&self, listener: Listener) -> Result<(), HostError> {
        self.refuse_reentry("subscribe")?;
        let _lock = self.lock();
        self.adopt_fork();
        let slow = self.slow_now();
        let mut next = (*slow).clone();
        next.listeners.push(listener.clone());
        self.slow.store(Some(Arc::new(next)));
        if slow.state == State::Running {
            if let Some(rt) = self.current.load_full() {
                let wrapped = self.wrap(listener);
                rt.subscribe(move |e| wrapped(e));
            }
        }
        Ok(())
    }

    fn state(&self) -> Option<State> {
        self.slow.load().as_ref().map(|s| s.state.clone())
    }

    fn slow_now(&self) -> Arc<Slow> {
        self.slow.load_full().unwrap_or_else(|| {
            Arc::new(Slow {
                state: State::Fresh,
                settings: None,
                listeners: Vec::new(),
            })
        })
    }

    /// In a child of `fork()`, retires the parent's runtime and applies the fork policy. Needs the lock.
    fn adopt_fork(&self) {
        let now = fork::generation();
        if self.generation.load(Ordering::Acquire) == now {
            return;
        }
        self.epoch.store(0, Ordering::Release);
        if let Some(old) = self.current.swap(None) {
            abandon(old);
        }
        let slow = self.slow_now();
        if slow.state == State::Running {
            let mut next = (*slow).clone();
            next.state = match slow.settings.as_ref().map(child_rule) {
                Some(Err(why)) => State::Forked(why),
                _ => State::Fresh,
            };
            self.slow.store(Some(Arc::new(next)));
        }
        self.generation.store(now, Ordering::Release);
    }

    /// Starts a runtime from `slow` (reading the environment if it has no settings) and makes it current. Needs
    /// the lock.
    fn start(&self, slow: &Slow) -> Result<Arc<Runtime>, HostError> {
        let settings = match &slow.settings {
            Some(s) => s.clone(),
            None => Settings::from_env()?,
        };
        // Remember the settings even if the start fails: the environment is read once.
        let mut next = slow.clone();
        next.settings = Some(settings.clone());
        self.slow.store(Some(Arc::new(next.clone())));
        settings.validate()?;
        let mut builder = Builder::with_config(settings.config());
        let log: Listener = Arc::new(|e: &Event| {
            if let Some(log) = LOG.load_full() {
                log(e)
            }
        });
        for l in std::iter::once(&log)
            .chain(settings.listeners())
            .chain(&slow.listeners)
        {
            let wrapped = self.wrap(l.clone());
            builder = builder.subscribe(move |e| wrapped(e));
        }
        let rt = Arc::new(builder.build()?);
        if let Some(old) = self.current.swap(Some(rt.clone())) {
            // A sealed runtime of this process: dropping it (when its last user does) is harmless.
            drop(old);
        }
        let epoch = NEXT_EPOCH.fetch_add(1, Ordering::Relaxed);
        // Only the holder's first runtime is pinned: a later one (after a shutdown and a configure, or in a
        // forked child) goes through the threads' caches instead.
        let _ = self.pinned.set(Pinned {
            epoch,
            generation: fork::generation(),
            runtime: rt.clone(),
            lane: rt.single_lane(),
        });
        self.epoch.store(epoch, Ordering::Release);
        self.generation.store(fork::generation(), Ordering::Release);
        next.state = State::Running;
        self.slow.store(Some(Arc::new(next)));
        Ok(rt)
    }

    /// `listener`, marking this thread as inside one of this holder's callbacks while it runs.
    fn wrap(&self, listener: Listener) -> impl Fn(&Event) + Send + Sync + 'static {
        let me = self as *const Holder as usize;
        move |e: &Event| {
            struct Restore((usize, &'static str));
            impl Drop for Restore {
                fn drop(&mut self) {
                    IN_CALLBACK.with(|c| c.set(self.0));
                }
            }
            let _restore = Restore(IN_CALLBACK.with(|c| c.replace((me, e.name()))));
            listener(e)
        }
    }

    fn refuse_reentry(&self, call: &str) -> Result<(), HostError> {
        let (holder, event) = IN_CALLBACK.with(Cell::get);
        if holder == self as *const Holder as usize {
            return Err(HostError::new(
                ErrorCode::Reentrant,
                format!(
                    "{call} was called from an event callback ({event}) of this same runtime: the callback runs \
                     on the runtime's own thread (or its start), which {call} would have to wait for. Call it \
                     from another thread"
                ),
            ));
        }
        Ok(())
    }

    /// The holder's lock; one held by a thread of an earlier fork generation is free.
    fn lock(&self) -> LockGuard<'_> {
        let me = (fork::generation() << 1) | 1;
        let mut spins = 0u32;
        loop {
            let w = self.lock.load(Ordering::Relaxed);
            if w != me
                && self
                    .lock
                    .compare_exchange(w, me, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return LockGuard { word: &self.lock };
            }
            spins += 1;
            if spins < 64 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

impl Drop for Holder {
    /// Shuts down a runtime of this process (as dropping a `Runtime` does); a parent's runtime, copied into a
    /// forked child, is abandoned instead: its lease and its thread are the parent's.
    fn drop(&mut self) {
        *self.epoch.get_mut() = 0;
        if let Some(rt) = self.current.swap(None) {
            if *self.generation.get_mut() == fork::generation() {
                // Shut down now, not when the last reference goes: threads' caches of the fast path may hold
                // one until their next call.
                rt.shutdown();
                drop(rt);
            } else {
                abandon(rt);
            }
        }
    }
}

struct LockGuard<'a> {
    word: &'a AtomicU64,
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        self.word.store(0, Ordering::Release);
    }
}

fn already_running() -> HostError {
    HostError::new(
        ErrorCode::AlreadyInitialized,
        "the runtime is already running: configure it before the first id, or shut it down first",
    )
}

/// What a forked child may do with settings its parent started from: `Err` is the reason it gets `FORKED`.
fn child_rule(settings: &Settings) -> Result<(), String> {
    let store = settings.store().ok().flatten();
    if let Some(ForkRule::Refuse(why)) = store.as_ref().map(|s| s.fork_rule()) {
        return Err(format!(
            "this process is a fork of the runtime's owner, and {why}"
        ));
    }
    if settings.on_fork() == OnFork::Error {
        return Err("this process is a fork of the runtime's owner and the fork policy is `error`: configure \
                    the runtime again to get a slot of its own"
            .into());
    }
    Ok(())
}

/// In a forked child: makes sure `rt` never issues an id and is never dropped (dropping would release the
/// parent's lease and join a thread that does not exist here).
fn abandon(rt: Arc<Runtime>) {
    match Arc::try_unwrap(rt) {
        Ok(rt) => rt.abandon_after_fork(),
        // Someone else holds a reference (a binding's, or a parent's thread that does not exist here): it must
        // never reach zero in this process.
        Err(rt) => {
            // Seal it through a shared reference is not possible; forgetting keeps it from ever being dropped.
            // (A thread's cache of the fast path may hold it too: see `Cached`.) The clock's cached time is the
            // parent's, as `abandon_after_fork` would have reset it.
            crate::clock::after_fork_in_child();
            std::mem::forget(rt)
        }
    }
}
