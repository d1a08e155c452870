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

impl Drop for PyRuntime {
    fn drop(&mut self) {
        // Through the holder, which in a forked child retires the parent's runtime without touching its lease
        // (dropping that runtime here would release the parent's slot).
        let holder = self.holder.clone();
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
}
