//! The process-wide runtime: `cosid_next_id()` with no set-up.

use crate::config::cosid_config;
use crate::config::read_config;
use crate::guard::{self, check_out};
use crate::ids::cosid_layout;
use crate::result::cosid_result;
use crate::runtime::{cosid_status, fill, write_layout, write_status};
use cosid_core::host::{self, Holder};

/// The process-wide runtime (the host layer's): started from the environment on first use unless `cosid_init`
/// configured it.
fn global() -> &'static Holder {
    crate::fork::register();
    host::global()
}

/// Issues one id from the process-wide runtime into `*out_id`.
///
/// The first call in a process starts the runtime from the `COSID_*` environment variables (see
/// `cosid_config_from_env`; with none set, an embedded SQLite store in the user's state directory), unless
/// `cosid_init` started it already: it opens the store and acquires a slot, which can block for up to the acquire
/// timeout. Later calls are lock-free. A normal `exit()` shuts it down and releases the slot (an `atexit` handler);
/// so does `cosid_shutdown`.
///
/// In a child of `fork()` the first call acquires a slot of the child's own, with a new owner incarnation (fork
/// policy `reacquire`, the default), or fails with `COSID_RESULT_FORKED` (policy `error`, `COSID_ON_FORK=error`;
/// and always on `memory:`, which lives in the parent only, and on `manual:` and `static:` without a state file,
/// whose one slot the parent holds) until the child calls `cosid_init`. A child never issues an id on a slot it
/// did not acquire itself.
///
/// Errors: `COSID_RESULT_NULL_POINTER`; `COSID_RESULT_CLOSED` after `cosid_shutdown`; `COSID_RESULT_CONFIG` for an
/// invalid environment variable (named in `cosid_last_error`); while starting, the errors of `cosid_runtime_new`
/// (the next call tries again); then `SLOT_LOST`, `WINDOW_CLOSED`, `BEFORE_WINDOW`, `CLOCK_MOVED_BACKWARDS`.
///
/// Thread safety: may be called from any number of threads at once.
///
/// # Safety
///
/// `out_id` points to a writable `uint64_t`.
/// cbindgen:postfix=COSID_ID_CALL
#[no_mangle]
pub unsafe extern "C" fn cosid_next_id(out_id: *mut u64) -> cosid_result {
    if !out_id.is_null() {
        if let Some(id) = host::global().try_next_id_leaf() {
            // SAFETY: `out_id` is not NULL and the caller passes a writable `uint64_t`.
            unsafe { out_id.write(id.as_u64()) };
            return cosid_result::Ok;
        }
    }
    // SAFETY: the caller's contract.
    unsafe { next_id_full(out_id) }
}

/// # Safety
///
/// As `cosid_next_id`.
#[inline(never)]
unsafe fn next_id_full(out_id: *mut u64) -> cosid_result {
    guard::call_fast(
        || match Some(host::global())
            .filter(|_| !out_id.is_null())
            .and_then(Holder::try_next_id)
        {
            Some(id) => {
                // SAFETY: `out_id` is not NULL and the caller passes a writable `uint64_t`.
                unsafe { out_id.write(id.as_u64()) };
                true
            }
            _ => false,
        },
        // SAFETY: the caller's contract.
        || unsafe { next_id_slow(out_id) },
    )
}

/// `cosid_next_id` when the fast path could not issue: starts the runtime, waits, or reports the error.
///
/// # Safety
///
/// As `cosid_next_id`.
#[cold]
#[inline(never)]
unsafe fn next_id_slow(out_id: *mut u64) -> cosid_result {
    guard::call(|| {
        let out_id = check_out(out_id, "out_id")?;
        let id = global().next_id()?;
        // SAFETY: `out_id` is not NULL and the caller passes a writable `uint64_t`.
        unsafe { out_id.write(id.as_u64()) };
        Ok(())
    })
}

/// Issues `n` ids from the process-wide runtime into `buf[0..n]`, in increasing order; as `cosid_next_id`
/// otherwise. On error nothing is written to `buf`.
///
/// Errors: as `cosid_next_id`; `COSID_RESULT_INVALID_ARGUMENT` if `n` ids cannot be buffered.
///
/// Thread safety: may be called from any number of threads at once.
///
/// # Safety
///
/// `buf` points to `n` writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn cosid_next_ids(buf: *mut u64, n: usize) -> cosid_result {
    guard::call(|| {
        check_out(buf, "buf")?;
        // SAFETY: the caller's contract.
        unsafe { fill(global(), buf, n) }
    })
}

/// Starts the process-wide runtime from `config` (copied: free it whenever you like) instead of the environment.
/// Call it before the first `cosid_next_id`, or after `cosid_shutdown` to start again. Blocks while the slot is
/// acquired.
///
/// Errors: `COSID_RESULT_NULL_POINTER`; `COSID_RESULT_ALREADY_INITIALIZED` while the runtime is running (started by
/// an earlier `cosid_init` or `cosid_next_id`); the errors of `cosid_runtime_new`.
///
/// Thread safety: may be called from any thread; calls that race with the first `cosid_next_id` may find the
/// runtime already started from the environment.
///
/// # Safety
///
/// `config` is a live config that no call changes meanwhile.
#[no_mangle]
pub unsafe extern "C" fn cosid_init(config: *const cosid_config) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        let settings = unsafe { read_config(config, "config") }?.clone();
        Ok(global().init(settings)?)
    })
}

/// Shuts down the process-wide runtime: seals it (no id is returned after this starts), releases the slot with
/// the exact last timestamp, and stops its background thread. Later calls to `cosid_next_id` fail with
/// `COSID_RESULT_CLOSED` until `cosid_init`. Calling it again, or before any id, is harmless. In a forked child it
/// leaves the parent's lease alone. The `atexit` handler calls it at a normal exit.
///
/// Errors: none in normal use (`COSID_RESULT_REENTRANT` from an event callback of the runtime).
///
/// Thread safety: may be called from any thread; ids requested concurrently either succeed before the seal or
/// fail with `COSID_RESULT_CLOSED`.
#[no_mangle]
pub extern "C" fn cosid_shutdown() -> cosid_result {
    guard::call(|| global().shutdown().map(drop).map_err(Into::into))
}

/// Writes the process-wide runtime's status into `*out`, starting the runtime if needed (as `cosid_next_id`).
/// After `cosid_shutdown` it still reports the last lease, with state `COSID_STATE_CLOSED`.
///
/// Errors: as `cosid_next_id`.
///
/// Thread safety: may be called from any number of threads at once.
///
/// # Safety
///
/// `out` points to writable memory for a `cosid_status`.
#[no_mangle]
pub unsafe extern "C" fn cosid_global_status(out: *mut cosid_status) -> cosid_result {
    guard::call(|| {
        check_out(out, "out")?;
        write_status(global(), out)
    })
}

/// Writes the layout of the process-wide runtime's ids into `*out`, starting the runtime if needed.
///
/// Errors: as `cosid_next_id`.
///
/// Thread safety: may be called from any number of threads at once.
///
/// # Safety
///
/// `out` points to writable memory for a `cosid_layout`.
#[no_mangle]
pub unsafe extern "C" fn cosid_global_layout(out: *mut cosid_layout) -> cosid_result {
    guard::call(|| {
        check_out(out, "out")?;
        write_layout(global(), out)
    })
}
