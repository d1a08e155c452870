//! `cosid._cosid`: the native half of the Python package `cosid` (PyO3).
//!
//! The Python package re-exports the hot functions (`next_id`, `next_ids`) as they are, so a call costs one
//! native call: no Python frame in between. Everything that may wait (starting a runtime, store I/O, a used-up
//! sequence, a renewal) runs with the GIL released; the fast path of `next_id` does not release it, because
//! releasing it costs more than the id.

mod args;
mod errors;
mod events;
mod layout;
mod process;
mod runtime;

use crate::args::Settings;
use crate::errors::from_core;
use crate::layout::PyLayout;
use cosid::{Id, Status};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// A list of Python ints.
pub(crate) fn id_list<'py>(py: Python<'py>, ids: &[Id]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, ids.iter().map(|id| id.as_u64()))
}

static ARRAY_TYPE: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();

/// An `array.array('Q')` of the ids: two memory copies instead of one int object per id.
pub(crate) fn id_array<'py>(py: Python<'py>, ids: &[Id]) -> PyResult<Bound<'py, PyAny>> {
    let array = ARRAY_TYPE
        .get_or_try_init(py, || {
            py.import("array")
                .and_then(|m| m.getattr("array"))
                .map(Bound::unbind)
        })?
        .bind(py);
    let mut bytes = Vec::with_capacity(ids.len() * 8);
    for id in ids {
        bytes.extend_from_slice(&id.as_u64().to_ne_bytes());
    }
    array.call1(("Q", pyo3::types::PyBytes::new(py, &bytes)))
}

/// A status as a dict of plain values (`cosid.Status` is built from it in Python).
pub(crate) fn status_dict<'py>(py: Python<'py>, s: &Status) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("namespace", &s.namespace)?;
    d.set_item("store", s.store)?;
    d.set_item("owner_key", &s.owner.key)?;
    d.set_item("incarnation", s.owner.incarnation.to_string())?;
    d.set_item("slot", s.slot)?;
    d.set_item("fence", s.fence)?;
    d.set_item("floor_ms", s.floor_ms)?;
    d.set_item("ceiling_ms", s.ceiling_ms)?;
    d.set_item("expires_at_ms", s.expires_at_ms)?;
    d.set_item("store_now_ms", s.store_now_ms)?;
    d.set_item("last_issued_ms", s.last_issued_ms)?;
    let state = match s.state {
        cosid::State::Active => "ACTIVE",
        cosid::State::Renewing => "RENEWING",
        cosid::State::Reacquiring => "REACQUIRING",
        cosid::State::Closed => "CLOSED",
        _ => "UNKNOWN",
    };
    d.set_item("state", state)?;
    d.set_item("pid", std::process::id())?;
    Ok(d)
}

/// Runs the body of an entry point: a Rust panic becomes ``cosid.PanicError`` (code ``PANIC``, a ``CosidError``)
/// instead of PyO3's ``PanicException``, which derives from ``BaseException`` and escapes ``except Exception``.
#[inline(always)]
pub(crate) fn guard<T>(py: Python<'_>, body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    // AssertUnwindSafe: what a panic can leave half-done is behind the core's own locks, which recover.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(payload) => Err(panicked(py, payload)),
    }
}

#[cold]
#[inline(never)]
fn panicked(py: Python<'_>, payload: Box<dyn std::any::Any + Send>) -> PyErr {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned());
    // Dropping the payload could itself panic; leak it instead.
    std::mem::forget(payload);
    errors::error(
        py,
        "PANIC",
        format!("caught a panic (a bug in cosid, please report it): {what}"),
    )
}

/// `n` ids from `holder`, with the GIL released.
pub(crate) fn fill(py: Python<'_>, holder: &cosid::host::Holder, n: usize) -> PyResult<Vec<Id>> {
    process::detached(py, holder, |h| {
        let mut ids = vec![Id::from_u64(0); n];
        h.fill(&mut ids).map(|()| ids)
    })
}

/// `n` ids from the process-wide runtime, with the GIL released.
fn fill_global(py: Python<'_>, n: usize) -> PyResult<Vec<Id>> {
    process::on_global(py, |h| {
        let mut ids = vec![Id::from_u64(0); n];
        h.fill(&mut ids).map(|()| ids)
    })
}

/// `cosid.next_id()` as the interpreter calls it (`METH_NOARGS`), without PyO3's trampoline: the fast path is the
/// holder's `try_next_id` and one int, the slow path (start, wait, error) goes through PyO3 as any other function.
/// About a tenth of the call; see docs/performance.md.
///
/// # Safety
///
/// Called by the interpreter, with the GIL held.
unsafe extern "C" fn next_id(
    _module: *mut ffi::PyObject,
    _no_args: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // No panic may unwind into the interpreter; the slow path reports one as an exception.
    if let Ok(Some(id)) = std::panic::catch_unwind(|| process::global().try_next_id()) {
        // SAFETY: the GIL is held (the interpreter called us).
        return unsafe { ffi::PyLong_FromUnsignedLongLong(id.as_u64()) };
    }
    next_id_slow()
}

#[cold]
#[inline(never)]
fn next_id_slow() -> *mut ffi::PyObject {
    slow_id(|py| process::on_global(py, cosid::host::Holder::next_id))
}

/// The slow path of a plain C function that returns an id: `call` with the GIL, guarded; its error is left set
/// as the exception (and NULL returned).
pub(crate) fn slow_id(call: impl FnOnce(Python<'_>) -> PyResult<Id>) -> *mut ffi::PyObject {
    Python::attach(|py| match guard(py, || call(py)) {
        Ok(id) => id
            .as_u64()
            .into_pyobject(py)
            .map_or(std::ptr::null_mut(), |o| o.into_ptr()),
        Err(e) => {
            e.restore(py);
            std::ptr::null_mut()
        }
    })
}

/// A method table entry of a plain function ([`next_id`], `Runtime.next_id`): Python keeps a pointer to it for
/// the function's life.
pub(crate) struct MethodDef(pub(crate) ffi::PyMethodDef);

// SAFETY: the entry is never written after it is built; its pointers are to static strings and a function.
unsafe impl Sync for MethodDef {}

static NEXT_ID: MethodDef = MethodDef(ffi::PyMethodDef {
    ml_name: c"next_id".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer { PyCFunction: next_id },
    ml_flags: ffi::METH_NOARGS,
    ml_doc: c"next_id()\n--\n\nIssues one id from the process-wide runtime, starting it on first use from \
``cosid.configure()`` or the\n``COSID_*`` environment. Safe from any number of threads, and in forked children \
(each gets its own slot)."
        .as_ptr(),
});

/// Adds [`next_id`] to the module `m`.
fn add_next_id(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    // SAFETY: `NEXT_ID` is static and never written (CPython only reads the entry); the module is alive.
    let f = unsafe {
        let def = std::ptr::addr_of!(NEXT_ID.0).cast_mut();
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyCFunction_NewEx(def, m.as_ptr(), m.name()?.as_ptr()),
        )?
    };
    m.add("next_id", f)
}

/// ``n`` ids (``0 <= n <= 10_000_000``) from the process-wide runtime, in increasing order, as a list of ints.
/// One call reserves up to a whole millisecond's sequence at once.
#[pyfunction]
fn next_ids<'py>(py: Python<'py>, n: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    guard(py, || {
        let ids = fill_global(py, args::count(n)?)?;
        id_list(py, &ids)
    })
}

/// Like ``next_ids``, as an ``array.array('Q')``: cheaper per id for large batches (no int object per id).
#[pyfunction]
fn next_ids_array<'py>(py: Python<'py>, n: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    guard(py, || {
        let ids = fill_global(py, args::count(n)?)?;
        id_array(py, &ids)
    })
}

/// Sets the process-wide runtime's settings (see ``cosid.configure``).
#[pyfunction]
#[pyo3(signature = (*, store = None, namespace = None, layout = None, ttl = None, tolerance = None, bits = None, owner_key = None, preferred_slot = None, slots = None, acquire_timeout = None, max_wait = None, backwards_wait = None, on_fork = None))]
#[allow(clippy::too_many_arguments)]
fn configure<'py>(
    py: Python<'py>,
    store: Option<Bound<'py, PyAny>>,
    namespace: Option<Bound<'py, PyAny>>,
    layout: Option<Bound<'py, PyAny>>,
    ttl: Option<Bound<'py, PyAny>>,
    tolerance: Option<Bound<'py, PyAny>>,
    bits: Option<Bound<'py, PyAny>>,
    owner_key: Option<Bound<'py, PyAny>>,
    preferred_slot: Option<Bound<'py, PyAny>>,
    slots: Option<Bound<'py, PyAny>>,
    acquire_timeout: Option<Bound<'py, PyAny>>,
    max_wait: Option<Bound<'py, PyAny>>,
    backwards_wait: Option<Bound<'py, PyAny>>,
    on_fork: Option<Bound<'py, PyAny>>,
) -> PyResult<()> {
    guard(py, || {
        let settings = Settings {
            store,
            namespace,
            layout,
            ttl,
            tolerance,
            bits,
            owner_key,
            preferred_slot,
            slots,
            acquire_timeout,
            max_wait,
            backwards_wait,
            on_fork,
        }
        .host(py)?;
        process::configure(py, settings)
    })
}

/// Shuts the process-wide runtime down (see ``cosid.shutdown``).
#[pyfunction]
fn shutdown(py: Python<'_>) -> PyResult<Option<u64>> {
    guard(py, || {
        process::detached(py, process::global(), cosid::host::Holder::shutdown)
    })
}

/// The process-wide runtime's status as a dict, starting it if needed.
#[pyfunction]
fn _status<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    guard(py, || {
        let status = process::on_global(py, cosid::host::Holder::status)?;
        status_dict(py, &status)
    })
}

/// The layout the process-wide runtime uses (from ``configure()``, else ``COSID_LAYOUT``, else millis).
#[pyfunction]
fn default_layout(py: Python<'_>) -> PyResult<PyLayout> {
    guard(py, || {
        let holder = process::global();
        let layout = if holder.is_running() {
            holder.layout()
        } else {
            holder.settings().map(|s| s.config().layout)
        };
        layout
            .map(|inner| PyLayout { inner })
            .map_err(|e| errors::from_host(py, &e))
    })
}

fn layout_or_default(py: Python<'_>, layout: Option<&Bound<'_, PyAny>>) -> PyResult<cosid::Layout> {
    match layout {
        Some(l) if !l.is_none() => args::layout(py, l),
        _ => default_layout(py).map(|l| l.inner),
    }
}

/// ``(timestamp_ms, slot, sequence)`` of an id (``cosid.parse`` wraps it).
#[pyfunction]
#[pyo3(signature = (id, layout = None))]
fn _decompose(
    py: Python<'_>,
    id: &Bound<'_, PyAny>,
    layout: Option<&Bound<'_, PyAny>>,
) -> PyResult<(u64, u64, u64)> {
    let id = Id::from_u64(args::id(py, id)?);
    let parts = layout_or_default(py, layout)?
        .decompose(id)
        .map_err(|e| from_core(py, &cosid::Error::Id(e)))?;
    Ok((parts.timestamp_ms, parts.slot, parts.sequence))
}

/// The friendly form of an id, ``yyyyMMddHHmmssSSS-slot-sequence`` (UTC).
#[pyfunction]
#[pyo3(signature = (id, layout = None))]
fn to_friendly(
    py: Python<'_>,
    id: &Bound<'_, PyAny>,
    layout: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let id = Id::from_u64(args::id(py, id)?);
    layout_or_default(py, layout)?
        .to_friendly(id)
        .map_err(|e| from_core(py, &cosid::Error::Id(e)))
}

/// Reads the friendly form strictly (only what ``to_friendly`` writes).
#[pyfunction]
#[pyo3(signature = (text, layout = None))]
fn from_friendly(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    layout: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let text = args::text("text", text)?;
    layout_or_default(py, layout)?
        .parse_friendly(&text)
        .map(Id::as_u64)
        .map_err(|e| from_core(py, &cosid::Error::Id(e)))
}

/// The base-62 form of an id: exactly 11 characters of ``0-9A-Za-z``, sorting like the id.
#[pyfunction]
fn to_base62(py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(Id::from_u64(args::id(py, id)?).to_base62())
}

/// Reads the base-62 form strictly (11 characters, at most ``LygHa16AHYF``).
#[pyfunction]
fn from_base62(py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<u64> {
    let text = args::text("text", text)?;
    Id::from_base62(&text)
        .map(Id::as_u64)
        .map_err(|e| from_core(py, &cosid::Error::Id(e)))
}

/// For ``os.register_at_fork(before=...)``: no store I/O may be in flight across the fork.
#[pyfunction]
fn _fork_prepare(py: Python<'_>) {
    // Waits (bounded) for store calls in flight on other threads: none of them needs the GIL.
    py.detach(process::fork_prepare);
}

/// For ``os.register_at_fork(after_in_parent=...)``.
#[pyfunction]
fn _fork_parent() {
    process::fork_parent();
}

/// For ``os.register_at_fork(after_in_child=...)``.
#[pyfunction]
fn _after_fork_in_child() {
    process::fork_child();
}

/// The Python exception for one core error variant (for the tests of the error mapping).
#[pyfunction]
fn _sample_error(py: Python<'_>, variant: &str) -> PyResult<Py<PyAny>> {
    Ok(errors::sample(py, variant)?.into_value(py).into_any())
}

/// For ``atexit``.
#[pyfunction]
fn _at_exit(py: Python<'_>) {
    process::at_exit(py);
}

/// Panics inside the guard of an entry point (for the tests of ``PanicError``): no path of cosid panics on
/// purpose.
#[pyfunction]
fn _panic_for_test(py: Python<'_>) -> PyResult<()> {
    guard(py, || panic!("probe: sync"))
}

#[pymodule(gil_used = true)]
fn _cosid(m: &Bound<'_, PyModule>) -> PyResult<()> {
    process::install_fork_handler();
    // Every event of every runtime, process-wide or explicit, reaches the "cosid" logger at its level; but for
    // renewals (DEBUG, every ttl/3 of every runtime): taking the GIL that often from every keeper thread made
    // forked children hang (tests/test_fork_storm.py after tests/test_fork.py). `on_event` still sees them.
    cosid::host::set_log(Some(std::sync::Arc::new(|e| {
        if e.level() >= cosid::EventLevel::Info {
            events::deliver(events::Target::Log, e)
        }
    })));
    // The process-wide callbacks (cosid.on_event) see every event of every runtime the global holder starts; with
    // none registered, a delivery returns before it takes the GIL.
    process::global()
        .subscribe(std::sync::Arc::new(|e| {
            events::deliver(events::Target::Process, e)
        }))
        .map_err(|e| errors::from_host(m.py(), &e))?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MAX_BATCH", args::MAX_BATCH)?;
    // The stores this module carries, as Status.store names them: a tuple, as it never changes.
    m.add(
        "STORES",
        pyo3::types::PyTuple::new(m.py(), cosid::store::built())?,
    )?;
    m.add_class::<PyLayout>()?;
    m.add_class::<runtime::PyRuntime>()?;
    m.add_function(wrap_pyfunction!(runtime::_bind_next_id, m)?)?;
    add_next_id(m)?;
    m.add_function(wrap_pyfunction!(next_ids, m)?)?;
    m.add_function(wrap_pyfunction!(next_ids_array, m)?)?;
    m.add_function(wrap_pyfunction!(configure, m)?)?;
    m.add_function(wrap_pyfunction!(shutdown, m)?)?;
    m.add_function(wrap_pyfunction!(_status, m)?)?;
    m.add_function(wrap_pyfunction!(default_layout, m)?)?;
    m.add_function(wrap_pyfunction!(_decompose, m)?)?;
    m.add_function(wrap_pyfunction!(to_friendly, m)?)?;
    m.add_function(wrap_pyfunction!(from_friendly, m)?)?;
    m.add_function(wrap_pyfunction!(to_base62, m)?)?;
    m.add_function(wrap_pyfunction!(from_base62, m)?)?;
    m.add_function(wrap_pyfunction!(events::_process_callbacks, m)?)?;
    m.add_function(wrap_pyfunction!(_fork_prepare, m)?)?;
    m.add_function(wrap_pyfunction!(_fork_parent, m)?)?;
    m.add_function(wrap_pyfunction!(_after_fork_in_child, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(_at_exit, m)?)?;
    m.add_function(wrap_pyfunction!(_sample_error, m)?)?;
    Ok(())
}
