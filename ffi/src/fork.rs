//! The C library's process hooks: it registers the host layer's fork hooks with `pthread_atfork`, and an
//! `atexit` handler that shuts down the process-wide runtime. The policy (what a child may do, the gate that
//! keeps store I/O out of `fork()`) is the host layer's (`cosid::host::fork`); this is only the hook.

use cosid_core::host::fork;
use std::sync::atomic::{AtomicBool, Ordering};

static REGISTERED: AtomicBool = AtomicBool::new(false);

extern "C" fn prepare() {
    // A panic must not unwind into libc's fork().
    let _ = std::panic::catch_unwind(fork::prepare);
}

extern "C" fn parent() {
    let _ = std::panic::catch_unwind(fork::after_fork_in_parent);
}

extern "C" fn child() {
    // Async-signal-safe: atomic stores only, as a handler in the child of a multi-threaded fork must be.
    let _ = std::panic::catch_unwind(fork::after_fork_in_child);
}

/// Registers the process hooks, once. The library's constructor calls it at load time, before any runtime can
/// exist; runtime holders call it again before starting one, in case a static link dropped the constructor.
pub(crate) fn register() {
    if REGISTERED.load(Ordering::Acquire) || REGISTERED.swap(true, Ordering::AcqRel) {
        return;
    }
    // SAFETY: the three handlers are `extern "C"` functions of this library that live as long as the process
    // (unloading libcosid with live runtimes is unsupported) and catch every panic; the child handler does only
    // atomic stores, which are allowed in a child of a multi-threaded fork.
    let rc = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
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
    let _ = std::panic::catch_unwind(|| cosid_core::host::global().shutdown_at_exit());
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
