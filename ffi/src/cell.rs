//! `RuntimeCell`: holds the runtime behind a handle or the process-wide one, starts it on first use, and replaces
//! it in a child of `fork()`.
//!
//! The hot path is two atomic loads and a compare: `current` (a runtime that is never freed while the cell lives)
//! and the fork `generation` it was built in, against the process's. Everything else (starting, shutting down,
//! reacting to a fork) runs under a [`ForkLock`], which a fork cannot leave held.
//!
//! Fork: a child process inherits the cell with its parent's runtime, whose keeper thread did not survive the fork
//! and whose lease is the parent's. The child sees that the cell's generation is not its own, retires that runtime
//! without touching it (it is never used, shut down or dropped in the child: see [`Drop`]), and either starts a
//! runtime of its own from the same settings (a new owner incarnation, another slot) or, with `on_fork = error`,
//! fails with `COSID_RESULT_FORKED` until it re-initializes.

use crate::config::{OnFork, Settings};
use crate::error::FfiError;
use crate::event::Listener;
use crate::fork::{self, ForkLock};
use crate::result::cosid_result;
use cosid_core::store::StoreUrl;
use cosid_core::{Builder, Runtime};
use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// What the cell is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No runtime yet: the next call starts one.
    Fresh,
    /// `current` issues ids.
    Running,
    /// Shut down: `current` (if any) is sealed.
    Closed,
    /// Inherited from a parent with `on_fork = error`, or on a store that lives in the parent's memory: calls
    /// fail until re-initialized.
    Forked(&'static str),
}

struct Retired {
    generation: u64,
    runtime: Box<Runtime>,
}

struct Slow {
    state: State,
    /// What to start from; `None` (the process-wide runtime only) reads the environment at the first start.
    settings: Option<Settings>,
    /// Listeners added after the start, given again to a runtime that replaces this one after a fork.
    listeners: Vec<Listener>,
    /// Runtimes that were current once. Kept (not freed) while the cell lives: a thread may still be using one.
    retired: Vec<Retired>,
}

/// A runtime holder. See the module's documentation.
pub(crate) struct RuntimeCell {
    /// The runtime, from `Box::into_raw`; NULL before the first start. Stays valid while the cell lives.
    current: AtomicPtr<Runtime>,
    /// The fork generation `current` belongs to; 0 before the first start.
    generation: AtomicU64,
    slow: ForkLock<Slow>,
}

thread_local! {
    /// The cell whose runtime this thread is starting, to refuse re-entrant calls from event callbacks (which
    /// would otherwise wait for themselves).
    static STARTING: Cell<*const RuntimeCell> = const { Cell::new(ptr::null()) };
}

impl std::fmt::Debug for RuntimeCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeCell")
            .field("current", &self.current.load(Ordering::Relaxed))
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl RuntimeCell {
    /// A cell that starts from `settings`, or from the environment when `None`.
    pub(crate) const fn new(settings: Option<Settings>) -> Self {
        Self {
            current: AtomicPtr::new(ptr::null_mut()),
            generation: AtomicU64::new(0),
            slow: ForkLock::new(Slow {
                state: State::Fresh,
                settings,
                listeners: Vec::new(),
                retired: Vec::new(),
            }),
        }
    }

    /// The runtime to issue from, starting it if this is the first use (in this process).
    #[inline(always)]
    pub(crate) fn get(&self) -> Result<&Runtime, FfiError> {
        match self.get_fast() {
            Some(rt) => Ok(rt),
            None => self.get_slow(),
        }
    }

    /// The runtime, if it is running in this process: two loads and a compare.
    #[inline(always)]
    pub(crate) fn get_fast(&self) -> Option<&Runtime> {
        // Generation first: it is stored after `current`, so a matching generation means `current` is this
        // process's runtime (or a later one).
        let generation = self.generation.load(Ordering::Acquire);
        let p = self.current.load(Ordering::Acquire);
        if generation == fork::generation() && !p.is_null() {
            // SAFETY: `p` came from `Box::into_raw` and is freed only when the cell is dropped, which the caller's
            // contract forbids while any other call uses it.
            return Some(unsafe { &*p });
        }
        None
    }

    #[cold]
    #[inline(never)]
    fn get_slow(&self) -> Result<&Runtime, FfiError> {
        self.refuse_reentry()?;
        let mut slow = self.slow.lock();
        self.adopt_fork(&mut slow);
        let p = self.current.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: as in `get`.
            return Ok(unsafe { &*p });
        }
        match slow.state {
            State::Fresh => self.start(&mut slow),
            State::Closed => Err(FfiError::new(
                cosid_result::Closed,
                "the runtime was shut down: start a new one (cosid_init, or a new cosid_runtime)",
            )),
            State::Forked(why) => Err(FfiError::new(cosid_result::Forked, why)),
            State::Running => Err(FfiError::new(
                cosid_result::Internal,
                "a running cell has no runtime",
            )),
        }
    }

    /// In a child of `fork()`, retires the parent's runtime and applies the fork policy. Needs the lock.
    fn adopt_fork(&self, slow: &mut Slow) {
        let now = fork::generation();
        let generation = self.generation.load(Ordering::Relaxed);
        if generation == now {
            return;
        }
        let old = self.current.swap(ptr::null_mut(), Ordering::AcqRel);
        if !old.is_null() {
            slow.retired.push(Retired {
                generation,
                // SAFETY: `old` came from `Box::into_raw` and was current; the list now owns it.
                runtime: unsafe { Box::from_raw(old) },
            });
        }
        if slow.state == State::Running {
            let settings = slow.settings.as_ref();
            let policy = settings.map_or(OnFork::Reacquire, |s| s.on_fork);
            let in_memory = settings
                .and_then(|s| s.config.store.as_deref())
                .map(StoreUrl::parse);
            slow.state = if matches!(in_memory, Some(Ok(StoreUrl::Memory))) {
                // A new `memory:` store in the child would know nothing of the parent's leases and hand out its
                // slots again: duplicates. Never re-acquire on it.
                State::Forked(FORKED_MEMORY)
            } else {
                match policy {
                    OnFork::Reacquire => State::Fresh,
                    OnFork::Error => State::Forked(FORKED_POLICY),
                }
            };
        }
        self.generation.store(now, Ordering::Release);
    }

    fn refuse_reentry(&self) -> Result<(), FfiError> {
        if ptr::eq(STARTING.with(Cell::get), self) {
            return Err(FfiError::new(
                cosid_result::InvalidArgument,
                "called from an event callback of the runtime that is starting: wait for the start to return",
            ));
        }
        Ok(())
    }

    /// Starts a runtime and makes it current. Needs the lock.
    fn start(&self, slow: &mut Slow) -> Result<&Runtime, FfiError> {
        fork::register();
        let settings = match &slow.settings {
            Some(s) => s.clone(),
            None => {
                let s = Settings::from_env()?;
                slow.settings = Some(s.clone());
                s
            }
        };
        let mut builder = Builder::with_config(settings.config.clone());
        for l in settings.listeners.iter().chain(&slow.listeners) {
            let l = l.clone();
            builder = builder.subscribe(move |e| l(e));
        }
        struct Starting;
        impl Drop for Starting {
            fn drop(&mut self) {
                STARTING.with(|s| s.set(ptr::null()));
            }
        }
        STARTING.with(|s| s.set(self as *const _));
        let built = {
            let _starting = Starting;
            builder.build()
        };
        let p = Box::into_raw(Box::new(built?));
        let old = self.current.swap(p, Ordering::AcqRel);
        if !old.is_null() {
            slow.retired.push(Retired {
                generation: fork::generation(),
                // SAFETY: `old` came from `Box::into_raw` and was current; the list now owns it.
                runtime: unsafe { Box::from_raw(old) },
            });
        }
        self.generation.store(fork::generation(), Ordering::Release);
        slow.state = State::Running;
        // SAFETY: just made from a Box, kept until the cell is dropped.
        Ok(unsafe { &*p })
    }

    /// Starts the runtime from `settings` now; refused while one is running in this process.
    pub(crate) fn init(&self, settings: Settings) -> Result<(), FfiError> {
        self.refuse_reentry()?;
        let mut slow = self.slow.lock();
        self.adopt_fork(&mut slow);
        if slow.state == State::Running {
            return Err(FfiError::new(
                cosid_result::AlreadyInitialized,
                "the process-wide runtime is already running: call cosid_init before the first id, or \
                 cosid_shutdown first",
            ));
        }
        // Retire the sealed runtime first: calls from now on wait for the new one instead of reading the old.
        let old = self.current.swap(ptr::null_mut(), Ordering::AcqRel);
        if !old.is_null() {
            slow.retired.push(Retired {
                generation: fork::generation(),
                // SAFETY: `old` came from `Box::into_raw` and was current; the list now owns it.
                runtime: unsafe { Box::from_raw(old) },
            });
        }
        let (old_state, old_settings) = (slow.state, slow.settings.replace(settings));
        slow.state = State::Fresh;
        match self.start(&mut slow) {
            Ok(_) => Ok(()),
            Err(e) => {
                // As before the call: a failed `cosid_init` does not turn into a lazy start later.
                slow.state = old_state;
                slow.settings = old_settings;
                Err(e)
            }
        }
    }

    /// Seals the runtime, releases its slot and stops its thread; later calls fail with `COSID_RESULT_CLOSED`.
    /// In a child of `fork()`, leaves the parent's runtime and lease alone. Idempotent.
    pub(crate) fn shutdown(&self) -> Result<(), FfiError> {
        self.refuse_reentry()?;
        let running = {
            let mut slow = self.slow.lock();
            self.adopt_fork(&mut slow);
            let was = slow.state;
            slow.state = State::Closed;
            if was == State::Running {
                self.current.load(Ordering::Acquire)
            } else {
                ptr::null_mut()
            }
        };
        if !running.is_null() {
            // Outside the lock: the keeper's last events reach callbacks, which may call into this cell.
            // SAFETY: as in `get`; the runtime stays current (sealed) so that status still reads it.
            unsafe { &*running }.shutdown();
        }
        Ok(())
    }

    /// For `atexit`: shuts down a runtime of this process; does nothing in a child that never used its own.
    pub(crate) fn shutdown_at_exit(&self) {
        if self.generation.load(Ordering::Acquire) == fork::generation() {
            let _ = self.shutdown();
        }
    }

    /// Adds a listener to the running runtime and to any that replaces it after a fork.
    pub(crate) fn subscribe(&self, listener: Listener) -> Result<(), FfiError> {
        self.refuse_reentry()?;
        let mut slow = self.slow.lock();
        self.adopt_fork(&mut slow);
        slow.listeners.push(listener.clone());
        let p = self.current.load(Ordering::Acquire);
        if slow.state == State::Running && !p.is_null() {
            // SAFETY: as in `get`.
            unsafe { &*p }.subscribe(move |e| listener(e));
        }
        Ok(())
    }
}

const FORKED_POLICY: &str =
    "this process is a fork of the runtime's owner and the fork policy is `error`: \
     re-initialize (cosid_init, or a new cosid_runtime) to get a slot of its own";

const FORKED_MEMORY: &str = "this process is a fork of the runtime's owner, whose store is `memory:`, which lives in \
     the parent process only: a new one here would hand out the parent's slots again. Use a shared store \
     (sqlite://, redis://, ...) to issue ids in forked children";

impl Drop for RuntimeCell {
    fn drop(&mut self) {
        let now = fork::generation();
        let generation = *self.generation.get_mut();
        let current = std::mem::replace(self.current.get_mut(), ptr::null_mut());
        let slow = self.slow.get_mut();
        if !current.is_null() {
            slow.retired.push(Retired {
                generation,
                // SAFETY: `current` came from `Box::into_raw`; nothing else holds it now that the cell is dropped.
                runtime: unsafe { Box::from_raw(current) },
            });
        }
        for r in slow.retired.drain(..) {
            if r.generation == now {
                // Ours: dropping shuts it down (seal, release, join), if that has not happened yet.
                drop(r.runtime);
            } else {
                // A parent's: its keeper thread does not exist here and its lease is not ours.
                (*r.runtime).abandon_after_fork();
            }
        }
    }
}
