//! Runtime events to Python callbacks.
//!
//! Listeners run on the runtime's keeper thread (and, for the first `ACQUIRED`, on the thread that starts the
//! runtime). Each delivery attaches to the interpreter, turns the event into `(name, fields)` and hands it to
//! `cosid._events`, which calls the callbacks and logs (never propagates) what they raise. Every event of every
//! runtime also goes to the `"cosid"` logger of the `logging` module at its level (the core's table).

use cosid::{Event, EventField};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

static EVENTS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn fields<'py>(py: Python<'py>, event: &Event) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, value) in event.fields() {
        match value {
            EventField::U64(v) => d.set_item(name, v)?,
            EventField::Text(t) => d.set_item(name, t)?,
        }
    }
    if let Event::Released {
        last_issued_ms: None,
        ..
    } = event
    {
        d.set_item("last_issued_ms", py.None())?;
    }
    Ok(d)
}

/// Where an event goes: the `"cosid"` logger, the process-wide callbacks, or one callback of an explicit
/// runtime.
pub(crate) enum Target<'a> {
    Log,
    Process,
    Callback(&'a Py<PyAny>),
}

/// Delivers `event`. Never raises and never panics into the keeper: errors end in `sys.unraisablehook`.
pub(crate) fn deliver(target: Target<'_>, event: &Event) {
    Python::attach(|py| {
        let run = || -> PyResult<()> {
            let module = EVENTS_MODULE
                .get_or_try_init(py, || py.import("cosid._events").map(Bound::unbind))?
                .bind(py);
            let fields = fields(py, event)?;
            match target {
                Target::Log => {
                    let level = event.level().name();
                    module.call_method1("_log", (level, event.name(), event.message(), fields))?;
                }
                Target::Process => {
                    module.call_method1("_deliver_process", (event.name(), fields))?;
                }
                Target::Callback(cb) => {
                    module.call_method1("_deliver", (cb.bind(py), event.name(), fields))?;
                }
            }
            Ok(())
        };
        if let Err(e) = run() {
            e.write_unraisable(py, None);
        }
    });
}
