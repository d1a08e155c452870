//! `cosid_runtime`: a runtime handle, for programs that want more than one runtime, their own configuration per
//! runtime, status, or events.

use crate::config::{cosid_config, read_config};
use crate::error::FfiError;
use crate::event::{cosid_event_callback, listener};
use crate::guard::{self, check_out, try_ref};
use crate::ids::cosid_layout;
use crate::result::cosid_result;
use cosid_core::host::Holder;
use cosid_core::{Id, State, Status};
use std::ffi::c_void;

/// A runtime: a leased slot of one namespace, renewed in the background, issuing unique ids. Create it with
/// `cosid_runtime_new`, issue ids with `cosid_runtime_next_id`, end it with `cosid_runtime_shutdown` (releases the
/// slot) and `cosid_runtime_free`.
///
/// After `fork()`, the child's copy of a handle acquires a slot of its own on its first use (fork policy
/// `reacquire`, the default) or fails with `COSID_RESULT_FORKED` (policy `error`, and always on `memory:`,
/// `manual:` and `static:` without a state file, where the child has no slot of its own to take); it never issues
/// an id on a slot it did not acquire itself.
///
/// Thread safety: every function may be called on one handle from any number of threads at once, except
/// `cosid_runtime_free`, which must not overlap any other call on the handle.
#[derive(Debug)]
pub struct cosid_runtime {
    holder: Holder,
}

/// What a runtime is doing, in a `cosid_status`.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum cosid_state {
    /// A state this version of the ABI has no name for.
    Unknown = 0,
    /// Issuing, with a current lease.
    Active = 1,
    /// Issuing, but the last renewal failed; retrying.
    Renewing = 2,
    /// The lease was lost; acquiring a new slot. Id calls fail with `COSID_RESULT_SLOT_LOST`.
    Reacquiring = 3,
    /// Shut down.
    Closed = 4,
}

/// A runtime's lease and state at one moment, written by `cosid_runtime_status` into a struct the caller owns.
/// Times are Unix milliseconds by the store's clock.
///
/// Thread safety: a plain value.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct cosid_status {
    /// The leased slot.
    pub slot: u32,
    /// What the runtime is doing.
    pub state: cosid_state,
    /// The lease's fence: grows with every grant and release of the slot.
    pub fence: u64,
    /// Window floor (excluded): ids of this lease have timestamps above it.
    pub floor_ms: u64,
    /// Window ceiling (included): no id of this lease has a later timestamp.
    pub ceiling_ms: u64,
    /// When the lease expires unless renewed.
    pub expires_at_ms: u64,
    /// The store's clock at its last reply.
    pub store_now_ms: u64,
    /// The last millisecond used by an id of this window, when `has_last_issued`.
    pub last_issued_ms: u64,
    /// Whether any id was issued in this window.
    pub has_last_issued: bool,
}

impl From<&Status> for cosid_status {
    fn from(s: &Status) -> Self {
        cosid_status {
            slot: s.slot,
            state: match s.state {
                State::Active => cosid_state::Active,
                State::Renewing => cosid_state::Renewing,
                State::Reacquiring => cosid_state::Reacquiring,
                State::Closed => cosid_state::Closed,
                _ => cosid_state::Unknown,
            },
            fence: s.fence,
            floor_ms: s.floor_ms,
            ceiling_ms: s.ceiling_ms,
            expires_at_ms: s.expires_at_ms,
            store_now_ms: s.store_now_ms,
            last_issued_ms: s.last_issued_ms.unwrap_or(0),
            has_last_issued: s.last_issued_ms.is_some(),
        }
    }
}

// `fill` copies `Id`s as `u64`s.
const _: () = assert!(std::mem::size_of::<Id>() == std::mem::size_of::<u64>());

/// Ids up to this many are gathered on the stack before they are copied out.
const STACK_IDS: usize = 512;

/// Fills `n` ids into `buf`, writing `buf` only if all of them were issued.
///
/// # Safety
///
/// `buf` is NULL or points to `n` writable `uint64_t`.
pub(crate) unsafe fn fill(rt: &Holder, buf: *mut u64, n: usize) -> Result<(), FfiError> {
    let buf = check_out(buf, "buf")?;
    if n <= STACK_IDS {
        let mut tmp = [Id::from_u64(0); STACK_IDS];
        rt.fill(&mut tmp[..n])?;
        // SAFETY: `buf` has room for `n` ids (the caller's contract); `Id` is `repr(transparent)` over `u64`; a
        // stack array cannot overlap the caller's buffer.
        unsafe { std::ptr::copy_nonoverlapping(tmp.as_ptr().cast::<u64>(), buf, n) };
        return Ok(());
    }
    let mut tmp: Vec<Id> = Vec::new();
    tmp.try_reserve_exact(n).map_err(|_| {
        FfiError::new(
            cosid_result::InvalidArgument,
            format!("n = {n}: cannot buffer that many ids; expected a smaller count"),
        )
    })?;
    tmp.resize(n, Id::from_u64(0));
    rt.fill(&mut tmp)?;
    // SAFETY: as above, for a heap buffer of exactly `n` ids.
    unsafe { std::ptr::copy_nonoverlapping(tmp.as_ptr().cast::<u64>(), buf, n) };
    Ok(())
}

/// Writes `rt`'s status into `out`.
pub(crate) fn write_status(rt: &Holder, out: *mut cosid_status) -> Result<(), FfiError> {
    let out = check_out(out, "out")?;
    let status = cosid_status::from(&rt.status()?);
    // SAFETY: `out` is not NULL and the caller passes writable memory for a `cosid_status`.
    unsafe { out.write(status) };
    Ok(())
}

/// Writes `rt`'s layout into `out`.
pub(crate) fn write_layout(rt: &Holder, out: *mut cosid_layout) -> Result<(), FfiError> {
    let out = check_out(out, "out")?;
    let layout = rt.layout()?;
    // SAFETY: `out` is not NULL and the caller passes writable memory for a `cosid_layout`.
    unsafe { out.write(cosid_layout::from(&layout)) };
    Ok(())
}

/// # Safety
///
/// `rt` is NULL or a live handle.
unsafe fn handle<'a>(rt: *const cosid_runtime) -> Result<&'a cosid_runtime, FfiError> {
    // SAFETY: the caller's contract.
    unsafe { try_ref(rt, "rt") }
}

/// Starts a runtime from `config` (copied: free it whenever you like): opens the store, acquires a slot (retrying
/// an exhausted namespace or an unreachable store for the acquire timeout) and starts the background thread that
/// renews the lease. Writes the handle into `*out`; free it with `cosid_runtime_free`.
///
/// Errors: `COSID_RESULT_NULL_POINTER`; `COSID_RESULT_CONFIG` (settings that contradict each other, a store that
/// is not compiled in); 3xxx (`EXHAUSTED`, `NAMESPACE_MISMATCH`) and 4xxx (store) codes.
///
/// Thread safety: may be called from any thread; blocks while the slot is acquired.
///
/// # Safety
///
/// `config` is a live config that no call changes meanwhile; `out` points to a writable `cosid_runtime *`.
#[no_mangle]
pub unsafe extern "C" fn cosid_runtime_new(
    config: *const cosid_config,
    out: *mut *mut cosid_runtime,
) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        let settings = unsafe { read_config(config, "config") }?.clone();
        let out = check_out(out, "out")?;
        crate::fork::register();
        let rt = Box::new(cosid_runtime {
            holder: Holder::new(settings),
        });
        rt.holder.runtime()?;
        // SAFETY: `out` is not NULL and the caller passes a writable pointer-sized slot.
        unsafe { out.write(Box::into_raw(rt)) };
        Ok(())
    })
}

/// Issues one id into `*out_id`. Lock-free; waits (bounded by the `max_wait` setting) only when the current
/// millisecond's sequence is used up, when the clock is outside the lease window, or when it stepped back a little.
///
/// Errors: `COSID_RESULT_NULL_POINTER`; `COSID_RESULT_CLOSED` after shutdown; `COSID_RESULT_FORKED` in a forked
/// child with fork policy `error`; `SLOT_LOST`, `WINDOW_CLOSED`, `BEFORE_WINDOW`, `CLOCK_MOVED_BACKWARDS`; in a
/// forked child's first call (policy `reacquire`), the errors of `cosid_runtime_new`.
///
/// Thread safety: may be called from any number of threads at once.
///
/// # Safety
///
/// `rt` is a live handle; `out_id` points to a writable `uint64_t`.
/// cbindgen:postfix=COSID_ID_CALL
#[no_mangle]
pub unsafe extern "C" fn cosid_runtime_next_id(
    rt: *const cosid_runtime,
    out_id: *mut u64,
) -> cosid_result {
    guard::call_fast(
        || {
            // SAFETY: the caller's contract: `rt` is NULL or a live handle.
            let handle = unsafe { rt.as_ref() };
            match handle
                .filter(|_| !out_id.is_null())
                .and_then(|h| h.holder.try_next_id())
            {
                Some(id) => {
                    // SAFETY: `out_id` is not NULL and the caller passes a writable `uint64_t`.
                    unsafe { out_id.write(id.as_u64()) };
                    true
                }
                None => false,
            }
        },
        // SAFETY: the caller's contract.
        || unsafe { runtime_next_id_slow(rt, out_id) },
    )
}

/// `cosid_runtime_next_id` when the fast path could not issue: waits, or reports the error.
///
/// # Safety
///
/// As `cosid_runtime_next_id`.
#[cold]
#[inline(never)]
unsafe fn runtime_next_id_slow(rt: *const cosid_runtime, out_id: *mut u64) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        let rt = unsafe { handle(rt) }?;
        let out_id = check_out(out_id, "out_id")?;
        let id = rt.holder.next_id()?;
        // SAFETY: `out_id` is not NULL and the caller passes a writable `uint64_t`.
        unsafe { out_id.write(id.as_u64()) };
        Ok(())
    })
}

/// Issues `n` ids into `buf[0..n]`, in increasing order. On error nothing is written to `buf`.
///
/// Errors: as `cosid_runtime_next_id`; `COSID_RESULT_INVALID_ARGUMENT` if `n` ids cannot be buffered.
///
/// Thread safety: may be called from any number of threads at once.
///
/// # Safety
///
/// `rt` is a live handle; `buf` points to `n` writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn cosid_runtime_next_ids(
    rt: *const cosid_runtime,
    buf: *mut u64,
    n: usize,
) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        let rt = unsafe { handle(rt) }?;
        check_out(buf, "buf")?;
        // SAFETY: the caller's contract.
        unsafe { fill(&rt.holder, buf, n) }
    })
}

/// Writes the runtime's slot, fence, window, expiry, state and last issued millisecond into `*out`. Works after
/// shutdown too (state `COSID_STATE_CLOSED`).
///
/// Errors: `COSID_RESULT_NULL_POINTER`; in a forked child, as `cosid_runtime_next_id`.
///
/// Thread safety: may be called from any number of threads at once.
///
/// # Safety
///
/// `rt` is a live handle; `out` points to writable memory for a `cosid_status`.
#[no_mangle]
pub unsafe extern "C" fn cosid_runtime_status(
    rt: *const cosid_runtime,
    out: *mut cosid_status,
) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        let rt = unsafe { handle(rt) }?;
        check_out(out, "out")?;
        write_status(&rt.holder, out)
    })
}

/// Writes the layout of the runtime's ids into `*out`, for `cosid_decompose` and the text forms.
///
/// Errors: `COSID_RESULT_NULL_POINTER`; in a forked child, as `cosid_runtime_next_id`.
///
/// Thread safety: may be called from any number of threads at once.
///
/// # Safety
///
/// `rt` is a live handle; `out` points to writable memory for a `cosid_layout`.
#[no_mangle]
pub unsafe extern "C" fn cosid_runtime_layout(
    rt: *const cosid_runtime,
    out: *mut cosid_layout,
) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        let rt = unsafe { handle(rt) }?;
        check_out(out, "out")?;
        write_layout(&rt.holder, out)
    })
}

/// Calls `callback(userdata, event)` for every later event of the runtime (renewals, failures, a lost slot, the
/// release at shutdown, ...), from the runtime's background thread, until it is shut down. In a forked child the
/// callback moves to the child's own runtime. To also see the first `ACQUIRED`, subscribe on the config instead
/// (`cosid_config_subscribe`). See `cosid_event_callback` for the rules the callback must follow.
///
/// Errors: `COSID_RESULT_NULL_POINTER` (`rt` or `callback`; `userdata` may be NULL).
///
/// Thread safety: may be called from any number of threads at once.
///
/// # Safety
///
/// `rt` is a live handle; `callback` follows the rules of `cosid_event_callback`; `userdata` stays valid until
/// the runtime is freed.
#[no_mangle]
pub unsafe extern "C" fn cosid_runtime_subscribe(
    rt: *const cosid_runtime,
    callback: cosid_event_callback,
    userdata: *mut c_void,
) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        let rt = unsafe { handle(rt) }?;
        let callback = callback.ok_or_else(|| FfiError::null("callback"))?;
        // SAFETY: the caller promises the callback's rules and userdata's lifetime.
        Ok(rt
            .holder
            .subscribe(unsafe { listener(callback, userdata) })?)
    })
}

/// Ordered shutdown: seals the runtime (no id is returned after this starts), releases the slot with the exact
/// last timestamp (a `RELEASED` event), and stops the background thread. Later id calls fail with
/// `COSID_RESULT_CLOSED`; status still works. Calling it again does nothing. In a forked child that never used the
/// handle, the parent's lease is left alone.
///
/// Errors: `COSID_RESULT_NULL_POINTER`; `COSID_RESULT_REENTRANT` from one of the runtime's own callbacks.
///
/// Thread safety: may be called from any thread, but not from the runtime's own event callback.
///
/// # Safety
///
/// `rt` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn cosid_runtime_shutdown(rt: *const cosid_runtime) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        Ok(unsafe { handle(rt) }?.holder.shutdown().map(drop)?)
    })
}

/// Shuts the runtime down (as `cosid_runtime_shutdown`, if not done yet) and frees the handle. NULL is a no-op.
///
/// Thread safety: must not overlap any other call on `rt`, nor be called from its event callback; `rt` is invalid
/// afterwards.
///
/// # Safety
///
/// `rt` is NULL or a live handle from `cosid_runtime_new`, not freed before.
#[no_mangle]
pub unsafe extern "C" fn cosid_runtime_free(rt: *mut cosid_runtime) {
    let _ = guard::call(|| {
        if !rt.is_null() {
            // SAFETY: a live handle made by `Box::into_raw` in `cosid_runtime_new`, given back once with no other
            // call on it (the caller's contract).
            drop(unsafe { Box::from_raw(rt) });
        }
        Ok(())
    });
}
