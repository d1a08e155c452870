//! `cosid.Runtime`: an explicit runtime with its own settings and lease, closed by `shutdown()` or a `with`
//! block. (The Python class `cosid.Runtime` subclasses this one to add `status()`, `on_event()` and parsing.)
//!
//! It is a [`Holder`] of the core's host layer, so it follows the same lifecycle as the process-wide runtime: in a
//! forked child it never issues on its parent's slot (it takes one of its own, or raises `FORKED` on a store that
//! cannot give it one), and after `shutdown()` its calls raise `CLOSED`.

use crate::args::{self, Settings};
use crate::events::{deliver, Target};
use crate::layout::PyLayout;
use crate::process::{self, detached};
use cosid::host::Holder;
use cosid::Id;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::sync::Arc;

#[pyclass(module = "cosid._cosid", name = "Runtime", subclass, frozen)]
pub(crate) struct PyRuntime {
    holder: Arc<Holder>,
    layout: cosid::Layout,
}

#[pymethods]
impl PyRuntime {
    #[new]
    #[pyo3(signature = (*, store = None, namespace = None, layout = None, ttl = None, tolerance = None, bits = None, owner_key = None, preferred_slot = None, slots = None, acquire_timeout = None, max_wait = None, backwards_wait = None, on_fork = None))]
    #[allow(clippy::too_many_arguments)]
    fn new<'py>(
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
    ) -> PyResult<Self> {
        crate::guard(py, || {
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
            let layout = settings.config().layout;
            let holder = Arc::new(Holder::new(settings));
            // Started now: a full namespace or an unreachable store fails here, not at the first id.
            detached(py, &holder, |h| h.runtime().map(drop))?;
            process::register(&holder);
            Ok(PyRuntime { holder, layout })
        })
    }

    /// Issues one id. Waits (with the GIL released) when the current millisecond's sequence is used up or the
    /// lease window needs a renewal; raises a ``CosidError`` subclass when it cannot issue.
    fn next_id(&self, py: Python<'_>) -> PyResult<u64> {
        crate::guard(py, || {
            if let Some(id) = self.holder.try_next_id() {
                return Ok(id.as_u64());
            }
            detached(py, &self.holder, Holder::next_id).map(Id::as_u64)
        })
    }

    /// ``n`` ids (``0 <= n <= 10_000_000``), in increasing order, as a list of ints.
    fn next_ids<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        crate::guard(py, || {
            let ids = crate::fill(py, &self.holder, args::count(n)?)?;
            crate::id_list(py, &ids)
        })
    }

    /// Like ``next_ids``, as an ``array.array('Q')``.
    fn next_ids_array<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::guard(py, || {
            let ids = crate::fill(py, &self.holder, args::count(n)?)?;
            crate::id_array(py, &ids)
        })
    }

    /// Seals the runtime (no id is returned after this starts), releases its slot with the exact last timestamp
    /// and stops its thread. Returns that timestamp (Unix ms), or ``None`` if no id was issued or it was already
    /// closed. Calling it again does nothing; later id calls raise ``ClosedError``.
    fn shutdown(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        crate::guard(py, || detached(py, &self.holder, Holder::shutdown))
    }

    /// Whether the runtime cannot issue ids in this process now (shut down, or copied into a forked child that
    /// has not started its own).
    #[getter]
    fn closed(&self) -> bool {
        !self.holder.is_running()
    }

    /// The layout of this runtime's ids.
    #[getter]
    fn layout(&self) -> PyLayout {
        PyLayout { inner: self.layout }
    }

    /// The lease and state now, as a dict (``cosid.Runtime.status()`` wraps it in ``cosid.Status``).
    fn _status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::guard(py, || {
            let status = detached(py, &self.holder, Holder::status)?;
            crate::status_dict(py, &status)
        })
    }

    /// Calls ``callback(event)`` for every later event of this runtime (on its keeper thread), and of the runtime
    /// that replaces it in a forked child.
    fn _subscribe(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        crate::guard(py, || {
            let callback = Arc::new(callback);
            detached(py, &self.holder, move |h| {
                h.subscribe(Arc::new(move |e| deliver(Target::Callback(&callback), e)))
            })
        })
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.shutdown(py)?;
        Ok(false)
    }
}

/// `rt.next_id` as the interpreter calls it: a plain `METH_NOARGS` function whose `self` is a capsule holding the
/// runtime's holder, made for each `cosid.Runtime` by its `__init__` (the `_bind_next_id` below) and stored in the
/// instance's `__dict__`, where it shadows the method. PyO3's method trampoline (its GIL count, its panic frame,
/// the type check of `self`) was a fifth of the call. The fast path is the holder's `try_next_id` and one int;
/// the slow path is the method's own. Like a bound method, a function kept past its `Runtime` object keeps the
/// runtime running: the last of the two to go shuts it down (`release`).
#[pyfunction]
pub(crate) fn _bind_next_id<'py>(rt: &Bound<'py, PyRuntime>) -> PyResult<Bound<'py, PyAny>> {
    let py = rt.py();
    crate::guard(py, || {
        let holder = Arc::into_raw(rt.get().holder.clone()).cast_mut().cast();
        // SAFETY: `holder` is a leaked `Arc<Holder>` that the capsule's destructor releases; the name is static.
        let capsule = unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                pyo3::ffi::PyCapsule_New(holder, CAPSULE.as_ptr(), Some(release_holder)),
            )
        };
        let capsule = match capsule {
            Ok(c) => c,
            Err(e) => {
                // SAFETY: no capsule took it.
                drop(unsafe { Arc::from_raw(holder.cast::<Holder>()) });
                return Err(e);
            }
        };
        // SAFETY: `NEXT_ID` is static and never written; the capsule is alive (the function takes a reference).
        unsafe {
            let def = std::ptr::addr_of!(NEXT_ID.0).cast_mut();
            Bound::from_owned_ptr_or_err(
                py,
                pyo3::ffi::PyCFunction_NewEx(def, capsule.as_ptr(), std::ptr::null_mut()),
            )
        }
    })
}

const CAPSULE: &std::ffi::CStr = c"cosid.Runtime.holder";

static NEXT_ID: crate::MethodDef = crate::MethodDef(pyo3::ffi::PyMethodDef {
    ml_name: c"next_id".as_ptr(),
    ml_meth: pyo3::ffi::PyMethodDefPointer { PyCFunction: next_id },
    ml_flags: pyo3::ffi::METH_NOARGS,
    ml_doc: c"next_id()\n--\n\nIssues one id. Waits (with the GIL released) when the current millisecond's \
sequence is used up or the\nlease window needs a renewal; raises a ``CosidError`` subclass when it cannot issue."
        .as_ptr(),
});

/// The function `_bind_next_id` makes.
///
/// # Safety
///
/// Called by the interpreter, with the GIL held, `capsule` being the function's `self`.
unsafe extern "C" fn next_id(
    capsule: *mut pyo3::ffi::PyObject,
    _no_args: *mut pyo3::ffi::PyObject,
) -> *mut pyo3::ffi::PyObject {
    // SAFETY: the GIL is held; a capsule of another name (never ours) sets an exception and returns NULL.
    let holder = unsafe { pyo3::ffi::PyCapsule_GetPointer(capsule, CAPSULE.as_ptr()) };
    if holder.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the capsule holds a leaked `Arc<Holder>` until its destructor, after the function's last call.
    let holder = unsafe { &*holder.cast::<Holder>() };
    // No panic may unwind into the interpreter; the slow path reports one as an exception.
    if let Ok(Some(id)) =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| holder.try_next_id()))
    {
        // SAFETY: the GIL is held (the interpreter called us).
        return unsafe { pyo3::ffi::PyLong_FromUnsignedLongLong(id.as_u64()) };
    }
    next_id_slow(holder)
}

#[cold]
#[inline(never)]
fn next_id_slow(holder: &Holder) -> *mut pyo3::ffi::PyObject {
    crate::slow_id(|py| detached(py, holder, Holder::next_id))
}

/// The capsule's destructor: releases its holder reference, shutting the runtime down if it was the last.
unsafe extern "C" fn release_holder(capsule: *mut pyo3::ffi::PyObject) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: `capsule` is ours (the interpreter destroys it once), holding a leaked `Arc<Holder>`.
        let holder = unsafe { pyo3::ffi::PyCapsule_GetPointer(capsule, CAPSULE.as_ptr()) };
        if !holder.is_null() {
            // SAFETY: as above.
            release(unsafe { Arc::from_raw(holder.cast::<Holder>()) }, 1);
        }
    });
}

impl Drop for PyRuntime {
    fn drop(&mut self) {
        // Two references here: this one and the clone.
        release(self.holder.clone(), 2);
    }
}

/// Shuts a runtime's holder down when its last Python-side owner goes: the `Runtime` object, or a `next_id`
/// function kept past it (as a bound method keeps its object). `mine` is how many of the references are the
/// caller's. Owners go with the GIL held, so two of them never decide at once.
fn release(holder: Arc<Holder>, mine: usize) {
    if Arc::strong_count(&holder) > mine {
        return;
    }
    // Through the holder, which in a forked child retires the parent's runtime without touching its lease
    // (dropping that runtime here would release the parent's slot).
    let shutdown = move || drop(holder.shutdown());
    if std::thread::current().name() == Some("cosid-keeper") {
        // Dropped from an event callback: shutting down here would join this very thread, so another thread
        // does it once the callback has returned.
        let _ = std::thread::Builder::new()
            .name("cosid-shutdown".into())
            .spawn(shutdown);
        return;
    }
    Python::attach(|py| py.detach(shutdown));
}
