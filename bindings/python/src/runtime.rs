//! `cosid.Runtime`: an explicit runtime with its own settings and lease, closed by `shutdown()` or a `with`
//! block. (The Python class `cosid.Runtime` subclasses this one to add `status()`, `on_event()` and parsing.)

use crate::args::{self, Settings};
use crate::errors::from_core;
use crate::events::{deliver, Target};
use crate::layout::PyLayout;
use crate::process::{self, Cell};
use cosid::{Builder, Id, Runtime};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[pyclass(module = "cosid._cosid", name = "Runtime", subclass, frozen)]
pub(crate) struct PyRuntime {
    cell: Arc<Cell>,
}

impl PyRuntime {
    fn runtime(&self, py: Python<'_>) -> PyResult<Arc<Runtime>> {
        process::check_fork(py);
        if self.cell.pid != std::process::id() {
            self.cell.abandon();
        }
        self.cell
            .runtime
            .load_full()
            .ok_or_else(|| self.cell.closed_error(py))
    }
}

#[pymethods]
impl PyRuntime {
    #[new]
    #[pyo3(signature = (*, store = None, namespace = None, layout = None, ttl = None, tolerance = None, bits = None, owner_key = None, preferred_slot = None, acquire_timeout = None, max_wait = None, backwards_wait = None))]
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
        acquire_timeout: Option<Bound<'py, PyAny>>,
        max_wait: Option<Bound<'py, PyAny>>,
        backwards_wait: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Self> {
        let config = Settings {
            store,
            namespace,
            layout,
            ttl,
            tolerance,
            bits,
            owner_key,
            preferred_slot,
            acquire_timeout,
            max_wait,
            backwards_wait,
        }
        .config(py)?;
        let layout = config.layout;
        let rt = py
            .detach(move || Builder::with_config(config).build())
            .map_err(|e| from_core(py, &e))?;
        let cell = Arc::new(Cell {
            runtime: arc_swap::ArcSwapOption::from_pointee(rt),
            layout,
            pid: std::process::id(),
            forked: AtomicBool::new(false),
        });
        process::register(py, &cell);
        Ok(PyRuntime { cell })
    }

    /// Issues one id. Waits (with the GIL released) when the current millisecond's sequence is used up or the
    /// lease window needs a renewal; raises a ``CosidError`` subclass when it cannot issue.
    fn next_id(&self, py: Python<'_>) -> PyResult<u64> {
        if !process::forked() {
            if let Some(rt) = self.cell.runtime.load().as_deref() {
                if let Some(id) = rt.try_next_id() {
                    return Ok(id.as_u64());
                }
            }
        }
        let rt = self.runtime(py)?;
        py.detach(|| rt.next_id())
            .map(Id::as_u64)
            .map_err(|e| from_core(py, &e))
    }

    /// ``n`` ids (``0 <= n <= 10_000_000``), in increasing order, as a list of ints.
    fn next_ids<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let n = args::count(n)?;
        let rt = self.runtime(py)?;
        let ids = py
            .detach(|| rt.next_ids(n))
            .map_err(|e| from_core(py, &e))?;
        crate::id_list(py, &ids)
    }

    /// Like ``next_ids``, as an ``array.array('Q')``.
    fn next_ids_array<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = args::count(n)?;
        let rt = self.runtime(py)?;
        let ids = py
            .detach(|| rt.next_ids(n))
            .map_err(|e| from_core(py, &e))?;
        crate::id_array(py, &ids)
    }

    /// Seals the runtime (no id is returned after this starts), releases its slot with the exact last timestamp
    /// and stops its thread. Returns that timestamp (Unix ms), or ``None`` if no id was issued or it was already
    /// closed. Calling it again does nothing.
    fn shutdown(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        process::not_on_keeper("Runtime.shutdown()")?;
        if self.cell.pid != std::process::id() {
            self.cell.abandon();
            return Ok(None);
        }
        Ok(self
            .cell
            .runtime
            .swap(None)
            .and_then(|rt| process::shutdown(py, rt)))
    }

    /// Whether the runtime was shut down (or abandoned in a forked child).
    #[getter]
    fn closed(&self) -> bool {
        self.cell.runtime.load().is_none() || self.cell.pid != std::process::id()
    }

    /// The layout of this runtime's ids.
    #[getter]
    fn layout(&self) -> PyLayout {
        PyLayout {
            inner: self.cell.layout,
        }
    }

    /// The lease and state now, as a dict (``cosid.Runtime.status()`` wraps it in ``cosid.Status``).
    fn _status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let rt = self.runtime(py)?;
        crate::status_dict(py, &rt.status())
    }

    /// Calls ``callback(event)`` for every later event of this runtime (on its keeper thread).
    fn _subscribe(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        let rt = self.runtime(py)?;
        rt.subscribe(move |e| deliver(Target::Callback(&callback), e));
        Ok(())
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
        let Some(rt) = self.cell.runtime.swap(None) else {
            return;
        };
        if self.cell.pid != std::process::id() {
            self.cell.runtime.store(Some(rt));
            self.cell.abandon();
            return;
        }
        if std::thread::current().name() == Some("cosid-keeper") {
            // Dropped from an event callback: shutting down here would join this very thread, so another thread
            // does it once the callback has returned.
            let _ = std::thread::Builder::new()
                .name("cosid-shutdown".into())
                .spawn(move || rt.shutdown());
            return;
        }
        Python::attach(|py| {
            process::shutdown(py, rt);
        });
    }
}
