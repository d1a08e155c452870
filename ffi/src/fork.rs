//! Process hooks (`fork()` and `exit()`), and a lock that a fork cannot leave stuck.
//!
//! A `pthread_atfork` child handler bumps [`generation`]. Every runtime holder records the generation it built
//! its runtime in; a holder whose generation differs from the process's was copied from a parent, and its
//! runtime (whose keeper thread did not survive the fork) is the parent's: it must never issue another id.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Bumped in every child of `fork()`, before the child runs any code of its own. Starts at 1 so that 0 can mean
/// "never built".
static GENERATION: AtomicU64 = AtomicU64::new(1);
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// This process's fork generation.
#[inline(always)]
pub(crate) fn generation() -> u64 {
    // Relaxed: the value changes only in a fresh child, before it has a second thread; every thread the child
    // starts later sees it through the happens-before of thread creation.
    GENERATION.load(Ordering::Relaxed)
}

extern "C" fn on_fork_child() {
    // Async-signal-safe: one atomic add, no allocation, no lock.
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Registers the process hooks, once: the fork child handler, and an `atexit` handler that shuts down the
/// process-wide runtime so that a normal exit releases its slot. The library's constructor calls it at load time,
/// before any runtime can exist; runtime holders call it again before starting one, in case a static link dropped
/// the constructor.
pub(crate) fn register() {
    if REGISTERED.load(Ordering::Acquire) || REGISTERED.swap(true, Ordering::AcqRel) {
        return;
    }
    // SAFETY: `on_fork_child` is an `extern "C"` function that lives as long as the process (unloading libcosid
    // with live runtimes is unsupported), and it only does an atomic add, which is allowed in a child of a
    // multi-threaded fork.
    let rc = unsafe { libc::pthread_atfork(None, None, Some(on_fork_child)) };
    if rc != 0 {
        // Only ENOMEM is possible. Without the handler a child would not notice the fork: say so loudly.
        eprintln!(
            "cosid: pthread_atfork failed ({rc}); a forked child could reuse its parent's lease"
        );
    }
    // SAFETY: `at_exit` is an `extern "C"` function of this library that catches every panic.
    if unsafe { libc::atexit(at_exit) } != 0 {
        eprintln!("cosid: atexit failed; the process-wide runtime's slot frees itself at expiry after exit");
    }
}

extern "C" fn at_exit() {
    // A panic must not unwind into libc's exit().
    let _ = std::panic::catch_unwind(crate::global::shutdown_at_exit);
}

/// Runs [`register`] when the library is loaded.
#[used]
#[cfg_attr(target_os = "linux", link_section = ".init_array")]
#[cfg_attr(target_os = "macos", link_section = "__DATA,__mod_init_func")]
static REGISTER_AT_LOAD: extern "C" fn() = {
    extern "C" fn at_load() {
        register();
    }
    at_load
};

/// A mutual-exclusion lock for slow paths that a `fork()` cannot leave held: a lock taken by a thread of an
/// earlier generation (a parent's thread, which does not exist in this child) is free in this one.
///
/// Waiters poll (yield, then sleep 1 ms): it guards only rare, slow work such as starting a runtime.
pub(crate) struct ForkLock<T> {
    /// 0 when free; `generation << 1 | 1` when held by a thread of that generation.
    word: AtomicU64,
    data: UnsafeCell<T>,
}

// SAFETY: the lock gives `&mut T` to one thread at a time, so sharing it is as sound as sending `T`.
unsafe impl<T: Send> Sync for ForkLock<T> {}
// SAFETY: as for `Mutex<T>`.
unsafe impl<T: Send> Send for ForkLock<T> {}

impl<T> ForkLock<T> {
    pub(crate) const fn new(data: T) -> Self {
        Self {
            word: AtomicU64::new(0),
            data: UnsafeCell::new(data),
        }
    }

    /// The data, through exclusive access to the lock itself.
    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    pub(crate) fn lock(&self) -> ForkGuard<'_, T> {
        let me = (generation() << 1) | 1;
        let mut spins = 0u32;
        loop {
            let w = self.word.load(Ordering::Relaxed);
            // Free (0), or held by a thread of an earlier generation: take it. Held by this generation: wait.
            if w != me
                && self
                    .word
                    .compare_exchange(w, me, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return ForkGuard { lock: self };
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

pub(crate) struct ForkGuard<'a, T> {
    lock: &'a ForkLock<T>,
}

impl<T> Deref for ForkGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard is the one holder of the lock.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for ForkGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard is the one holder of the lock.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for ForkGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.word.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_held_by_an_earlier_generation_is_free() {
        let lock = ForkLock::new(0u32);
        // As if a parent's thread held it when the process forked.
        lock.word
            .store(((generation() - 1) << 1) | 1, Ordering::Relaxed);
        *lock.lock() += 1;
        assert_eq!(*lock.lock(), 1);
    }

    #[test]
    fn the_lock_excludes_threads_of_one_generation() {
        let lock = std::sync::Arc::new(ForkLock::new(0u64));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let mut g = lock.lock();
                        let v = *g;
                        std::thread::yield_now();
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*lock.lock(), 800);
    }
}
