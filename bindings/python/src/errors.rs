//! Turning cosid's errors into the Python exceptions of `cosid._errors`, chosen by [`cosid::Error::code`].
//!
//! The exception classes are plain Python classes (so that `InvalidIdError` can also be a `ValueError`, and the
//! stubs are ordinary Python); this module looks them up once and instantiates the one whose `code` matches.

use cosid::host::ErrorCode;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// `cosid._errors`, imported once.
static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The class in `cosid._errors` of each code. Exhaustive on purpose: a code added to the core does not compile
/// until Python has decided how to raise it. Codes that only arise at the C boundary raise a plain `CosidError`
/// (still carrying their code).
fn class_name(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::SlotLost => "SlotLostError",
        ErrorCode::WindowClosed => "WindowClosedError",
        ErrorCode::BeforeWindow => "BeforeWindowError",
        ErrorCode::ClockMovedBackwards => "ClockMovedBackwardsError",
        ErrorCode::Closed => "ClosedError",
        ErrorCode::Forked => "ForkedError",
        ErrorCode::Exhausted => "ExhaustedError",
        ErrorCode::NamespaceMismatch => "NamespaceMismatchError",
        ErrorCode::Store => "StoreError",
        ErrorCode::StoreUnavailable => "StoreUnavailableError",
        ErrorCode::CorruptRecord => "CorruptRecordError",
        ErrorCode::StateFile => "StateFileError",
        ErrorCode::StoreRegression => "StoreRegressionError",
        ErrorCode::Config | ErrorCode::UnknownKey => "ConfigError",
        ErrorCode::Layout => "LayoutError",
        ErrorCode::InvalidId => "InvalidIdError",
        ErrorCode::Reentrant => "ReentrantError",
        ErrorCode::AlreadyInitialized => "AlreadyInitializedError",
        ErrorCode::Panic => "PanicError",
        ErrorCode::Internal => "InternalError",
        ErrorCode::NullPointer
        | ErrorCode::InvalidUtf8
        | ErrorCode::InvalidArgument
        | ErrorCode::BufferTooSmall
        | ErrorCode::StringTooLong => "CosidError",
    }
}

/// The exception for `code` (a [`ErrorCode`] name) with `message`; a plain `CosidError` (with that code) for a
/// name that is not a code.
pub(crate) fn error(py: Python<'_>, code: &str, message: impl Into<String>) -> PyErr {
    let message = message.into();
    let build = || -> PyResult<PyErr> {
        let module = MODULE
            .get_or_try_init(py, || py.import("cosid._errors").map(Bound::unbind))?
            .bind(py);
        let class = module.getattr(ErrorCode::from_name(code).map_or("CosidError", class_name))?;
        let value = class.call1((message.as_str(),))?;
        // Instances carry the code too, so a code without a class of its own still reads right.
        value.setattr("code", code)?;
        Ok(PyErr::from_value(value))
    };
    build().unwrap_or_else(|e| e)
}

/// The exception for a core error.
pub(crate) fn from_core(py: Python<'_>, e: &cosid::Error) -> PyErr {
    error(py, cosid::host::ErrorCode::of(e).name(), e.to_string())
}

/// The exception for a host-layer error: the class of its code ([`cosid::host::ErrorCode::name`]).
pub(crate) fn from_host(py: Python<'_>, e: &cosid::host::HostError) -> PyErr {
    error(py, e.code.name(), e.message.as_str())
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
