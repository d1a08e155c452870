//! Turning cosid's errors into the Python exceptions of `cosid._errors`, chosen by [`cosid::Error::code`].
//!
//! The exception classes are plain Python classes (so that `InvalidIdError` can also be a `ValueError`, and the
//! stubs are ordinary Python); this module looks them up once and instantiates the one whose `code` matches.

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

/// `cosid._errors.BY_CODE`: code -> exception class.
static BY_CODE: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

fn by_code(py: Python<'_>) -> PyResult<&Bound<'_, PyDict>> {
    BY_CODE
        .get_or_try_init(py, || {
            let module = py.import("cosid._errors")?;
            let dict = module.getattr("BY_CODE")?.cast_into::<PyDict>()?;
            Ok::<_, PyErr>(dict.unbind())
        })
        .map(|d| d.bind(py))
}

/// The exception for `code` with `message`; a plain `CosidError` (with that code) for a code the Python side does
/// not know yet.
pub(crate) fn error(py: Python<'_>, code: &str, message: impl Into<String>) -> PyErr {
    let message = message.into();
    let build = || -> PyResult<PyErr> {
        let classes = by_code(py)?;
        let class = match classes.get_item(code)? {
            Some(c) => c,
            None => classes
                .get_item("ERROR")?
                .ok_or_else(|| PyRuntimeError::new_err("cosid._errors.BY_CODE has no ERROR"))?,
        };
        let value = class.call1((message.as_str(),))?;
        // Instances carry the code too, so an unknown code still reads right on a plain CosidError.
        value.setattr("code", code)?;
        Ok(PyErr::from_value(value))
    };
    build().unwrap_or_else(|e| e)
}

/// The exception for a core error.
pub(crate) fn from_core(py: Python<'_>, e: &cosid::Error) -> PyErr {
    error(py, e.code(), e.to_string())
}

/// `CLOSED`: the runtime was shut down, abandoned at fork, or the interpreter is exiting.
pub(crate) fn closed(py: Python<'_>, why: impl Into<String>) -> PyErr {
    error(py, "CLOSED", why)
}

/// `CONFIG`: a setting with a wrong value (a `ValueError` too).
pub(crate) fn config(
    py: Python<'_>,
    setting: &str,
    value: impl std::fmt::Display,
    expected: &str,
) -> PyErr {
    error(
        py,
        "CONFIG",
        cosid::ConfigError::new(setting, value.to_string(), expected).to_string(),
    )
}

/// A `TypeError` naming the argument, what it must be and the type it got.
pub(crate) fn wrong_type(name: &str, expected: &str, got: &Bound<'_, PyAny>) -> PyErr {
    let type_name = got
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    PyTypeError::new_err(format!("{name} must be {expected}, not {type_name}"))
}

/// One of each core error, by variant name, as its Python exception: the tests check the mapping of the variants
/// they cannot provoke through a real store (a wall clock stepping back, a generic store error).
pub(crate) fn sample(py: Python<'_>, variant: &str) -> PyResult<PyErr> {
    use cosid::store::StoreError;
    let io = || -> cosid::store::BoxError { Box::new(std::io::Error::other("sample")) };
    let e = match variant {
        "SlotLost" => cosid::Error::SlotLost { slot: 3 },
        "WindowClosed" => cosid::Error::WindowClosed {
            ceiling_ms: 2,
            now_ms: 3,
            waited_ms: 1,
        },
        "BeforeWindow" => cosid::Error::BeforeWindow {
            floor_ms: 3,
            now_ms: 2,
            waited_ms: 1,
        },
        "ClockMovedBackwards" => cosid::Error::ClockMovedBackwards {
            behind_ms: 900,
            threshold_ms: 500,
        },
        "Closed" => cosid::Error::Closed { reason: "sample" },
        "Store.Unavailable" => StoreError::Unavailable {
            store: "sample",
            source: io(),
        }
        .into(),
        "Store.Generic" => StoreError::Generic {
            store: "sample",
            source: io(),
        }
        .into(),
        "Store.Exhausted" => StoreError::Exhausted {
            namespace: "n".into(),
            slots: 2,
            earliest_expiry: 5,
            store_now: 4,
        }
        .into(),
        "Store.NamespaceMismatch" => StoreError::NamespaceMismatch {
            namespace: "n".into(),
            field: "bits",
            stored: 4,
            requested: 5,
        }
        .into(),
        "Store.LeaseLost" => StoreError::LeaseLost {
            namespace: "n".into(),
            slot: 1,
            reason: "sample".into(),
        }
        .into(),
        "Store.Corrupt" => StoreError::Corrupt {
            store: "sample",
            what: "slot 1".into(),
            detail: "floor above ceiling".into(),
        }
        .into(),
        "Store.InvalidUrl" => StoreError::InvalidUrl {
            url: "x".into(),
            reason: "sample".into(),
        }
        .into(),
        "Config" => cosid::ConfigError::new("ttl", "0s", "between 30ms and 24h").into(),
        "Layout" => cosid::Error::Layout(cosid::LayoutError::ZeroWidth { field: "slot" }),
        "Id" => cosid::Error::Id(cosid::IdError::SignBitSet { id: 1 << 63 }),
        "Namespace" => cosid::Error::Namespace(cosid::lease::NamespaceError::Empty),
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "unknown sample error {other:?}"
            )))
        }
    };
    Ok(from_core(py, &e))
}
