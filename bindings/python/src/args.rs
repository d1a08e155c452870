//! Reading Python arguments strictly: a wrong type is a `TypeError`, a wrong value a `ValueError` subclass
//! (`ConfigError`, `InvalidIdError`), and every message names the argument, the value and what was expected.

use crate::errors::{config, error, from_host, wrong_type};
use crate::layout::PyLayout;
use cosid::Layout;
use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString};
use std::time::Duration;

/// The most ids one `next_ids` call returns: 80 MB of ids, about 2.5 s of a slot's capacity. More would risk an
/// allocation failure, which aborts the process instead of raising.
pub(crate) const MAX_BATCH: usize = 10_000_000;

/// An id: an `int` (or an object with `__index__`) in `0..2^64`. Not `bool`.
pub(crate) fn id(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if v.is_instance_of::<PyBool>() {
        return Err(wrong_type("id", "an int", v));
    }
    match v.extract::<u64>() {
        Ok(id) => Ok(id),
        Err(e) if e.is_instance_of::<PyOverflowError>(py) => Err(error(
            py,
            "INVALID_ID",
            format!("id {v} is out of range: expected an integer from 0 to 2^63 - 1"),
        )),
        Err(_) => Err(wrong_type("id", "an int", v)),
    }
}

/// A count of ids for `next_ids`: an int in `0..=MAX_BATCH`.
pub(crate) fn count(v: &Bound<'_, PyAny>) -> PyResult<usize> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(wrong_type("n", "an int", v));
    }
    match v.extract::<i64>() {
        Ok(n) if (0..=MAX_BATCH as i64).contains(&n) => Ok(n as usize),
        _ => Err(PyValueError::new_err(format!(
            "n = {v} is out of range: expected 0 to {MAX_BATCH} ids per call"
        ))),
    }
}

/// A text argument.
pub(crate) fn text(name: &str, v: &Bound<'_, PyAny>) -> PyResult<String> {
    v.cast::<PyString>()
        .map_err(|_| wrong_type(name, "a str", v))?
        .to_cow()
        .map(|s| s.into_owned())
}

/// A whole number setting (`bits`, `preferred_slot`): an int within `T`'s range, else `ConfigError`.
fn whole<T: TryFrom<i128> + Copy>(
    py: Python<'_>,
    name: &str,
    v: &Bound<'_, PyAny>,
    expected: &str,
) -> PyResult<T> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(wrong_type(name, "an int", v));
    }
    v.extract::<i128>()
        .ok()
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| config(py, name, v, expected))
}

/// A duration: seconds as an int or float (`0.5`), a string with a unit (`"30s"`, `"500ms"`), or a
/// `datetime.timedelta`. Negative, infinite and NaN durations are refused.
pub(crate) fn duration(py: Python<'_>, name: &str, v: &Bound<'_, PyAny>) -> PyResult<Duration> {
    if v.is_instance_of::<PyBool>() {
        return Err(wrong_type(
            name,
            "seconds (int or float), a str like \"30s\" or a timedelta",
            v,
        ));
    }
    let seconds = if let Ok(s) = v.cast::<PyString>() {
        let s = s.to_cow()?;
        return cosid::config::parse_duration(name, &s)
            .map_err(|e| error(py, "CONFIG", e.to_string()));
    } else if v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>() {
        v.extract::<f64>()?
    } else if v.is_instance(&py.import("datetime")?.getattr("timedelta")?)? {
        v.call_method0("total_seconds")?.extract::<f64>()?
    } else {
        return Err(wrong_type(
            name,
            "seconds (int or float), a str like \"30s\" or a timedelta",
            v,
        ));
    };
    if !seconds.is_finite() || !(0.0..=1e9).contains(&seconds) {
        return Err(config(
            py,
            name,
            v,
            "a finite, non-negative number of seconds",
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// A layout: a name (`"millis"`, `"seconds"`, `"js-safe"`) or a `cosid.Layout`.
pub(crate) fn layout(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<Layout> {
    if let Ok(l) = v.cast::<PyLayout>() {
        return Ok(l.get().inner);
    }
    if let Ok(s) = v.cast::<PyString>() {
        return cosid::config::parse_layout("layout", &s.to_cow()?)
            .map_err(|e| error(py, "CONFIG", e.to_string()));
    }
    Err(wrong_type(
        "layout",
        "a str (\"millis\", \"seconds\", \"js-safe\") or a cosid.Layout",
        v,
    ))
}

/// The keyword arguments of `configure()` and `Runtime()`; `None` leaves a setting as the environment has it.
/// Each is handed to the core's one settings table ([`cosid::host::Settings`]): Python only converts its types.
#[derive(Default)]
pub(crate) struct Settings<'py> {
    pub store: Option<Bound<'py, PyAny>>,
    pub namespace: Option<Bound<'py, PyAny>>,
    pub layout: Option<Bound<'py, PyAny>>,
    pub ttl: Option<Bound<'py, PyAny>>,
    pub tolerance: Option<Bound<'py, PyAny>>,
    pub bits: Option<Bound<'py, PyAny>>,
    pub owner_key: Option<Bound<'py, PyAny>>,
    pub preferred_slot: Option<Bound<'py, PyAny>>,
    pub slots: Option<Bound<'py, PyAny>>,
    pub acquire_timeout: Option<Bound<'py, PyAny>>,
    pub max_wait: Option<Bound<'py, PyAny>>,
    pub backwards_wait: Option<Bound<'py, PyAny>>,
    pub on_fork: Option<Bound<'py, PyAny>>,
}

impl Settings<'_> {
    /// The `COSID_*` environment overridden by the arguments given, checked as a start will check it, so that a
    /// bad setting fails here rather than at first use.
    pub(crate) fn host(&self, py: Python<'_>) -> PyResult<cosid::host::Settings> {
        use cosid::host::Value;
        let mut s = cosid::host::Settings::from_env().map_err(|e| from_host(py, &e))?;
        let mut set =
            |key: &str, value: Value<'_>| s.set_value(key, value).map_err(|e| from_host(py, &e));
        for (key, v) in [
            ("store", &self.store),
            ("namespace", &self.namespace),
            ("owner_key", &self.owner_key),
            ("on_fork", &self.on_fork),
        ] {
            if let Some(v) = v {
                set(key, Value::Text(&text(key, v)?))?;
            }
        }
        if let Some(v) = &self.layout {
            match v.cast::<PyString>() {
                Ok(name) => set("layout", Value::Text(&name.to_cow()?))?,
                Err(_) => set("layout", Value::Layout(layout(py, v)?))?,
            }
        }
        for (key, v) in [
            ("ttl", &self.ttl),
            ("tolerance", &self.tolerance),
            ("acquire_timeout", &self.acquire_timeout),
            ("max_wait", &self.max_wait),
            ("backwards_wait", &self.backwards_wait),
        ] {
            if let Some(v) = v {
                set(key, Value::Duration(duration(py, key, v)?))?;
            }
        }
        // Whole numbers as ints, or as text for the table's parser (`"ordinal"` for the slot).
        for (key, v, expected) in [
            ("bits", &self.bits, "1 to the layout's slot bits"),
            (
                "preferred_slot",
                &self.preferred_slot,
                "a slot below 2^bits, or \"ordinal\"",
            ),
            ("slots", &self.slots, "1 to 64"),
        ] {
            if let Some(v) = v {
                match v.cast::<PyString>() {
                    Ok(t) => set(key, Value::Text(&t.to_cow()?))?,
                    Err(_) => set(key, Value::Number(whole(py, key, v, expected)?))?,
                }
            }
        }
        s.validate().map_err(|e| from_host(py, &e))?;
        Ok(s)
    }
}
