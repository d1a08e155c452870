//! Runtime events to Python callbacks.
//!
//! Listeners run on the runtime's keeper thread (and, for the first `ACQUIRED`, on the thread that starts the
//! runtime). Each delivery attaches to the interpreter, turns the event into `(name, fields)` and hands it to
//! `cosid._events`, which calls the callbacks and logs (never propagates) what they raise.

use cosid::Event;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

static EVENTS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn fields<'py>(py: Python<'py>, event: &Event) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match event {
        Event::Acquired {
            slot,
            fence,
            floor_ms,
            ceiling_ms,
            expires_at_ms,
        } => {
            d.set_item("slot", slot)?;
            d.set_item("fence", fence)?;
            d.set_item("floor_ms", floor_ms)?;
            d.set_item("ceiling_ms", ceiling_ms)?;
            d.set_item("expires_at_ms", expires_at_ms)?;
        }
        Event::Renewed {
            slot,
            ceiling_ms,
            expires_at_ms,
        } => {
            d.set_item("slot", slot)?;
            d.set_item("ceiling_ms", ceiling_ms)?;
            d.set_item("expires_at_ms", expires_at_ms)?;
        }
        Event::RenewFailed {
            slot,
            error,
            retry_in_ms,
        } => {
            d.set_item("slot", slot)?;
            d.set_item("error", error)?;
            d.set_item("retry_in_ms", retry_in_ms)?;
        }
        Event::SlotLost { slot, reason } => {
            d.set_item("slot", slot)?;
            d.set_item("reason", reason)?;
        }
        Event::Released {
            slot,
            last_issued_ms,
        } => {
            d.set_item("slot", slot)?;
            d.set_item("last_issued_ms", last_issued_ms)?;
        }
        Event::DuplicateOwnerKey { key, other_slot } => {
            d.set_item("key", key)?;
            d.set_item("other_slot", other_slot)?;
        }
        Event::ClockSkew { local_ms, store_ms } => {
            d.set_item("local_ms", local_ms)?;
            d.set_item("store_ms", store_ms)?;
        }
        Event::StoreRegression { slot, detail } => {
            d.set_item("slot", slot)?;
            d.set_item("detail", detail)?;
        }
        other => {
            // An event added to the core later: still delivered, with its debug form.
            d.set_item("detail", format!("{other:?}"))?;
        }
    }
    Ok(d)
}

/// Where an event goes: the process-wide callbacks, or one callback of an explicit runtime.
pub(crate) enum Target<'a> {
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
