//! Reading Python arguments strictly: a wrong type is a `TypeError`, a wrong value a `ValueError` subclass
//! (`ConfigError`, `InvalidIdError`), and every message names the argument, the value and what was expected.

use crate::errors::{config, error, wrong_type};
use crate::layout::PyLayout;
use cosid::{Config, Layout};
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
    pub acquire_timeout: Option<Bound<'py, PyAny>>,
    pub max_wait: Option<Bound<'py, PyAny>>,
    pub backwards_wait: Option<Bound<'py, PyAny>>,
}

impl Settings<'_> {
    /// The `COSID_*` environment overridden by the arguments given, checked as the runtime will check it, and
    /// with the store URL and namespace name parsed, so that a bad setting fails here rather than at first use.
    pub(crate) fn config(&self, py: Python<'_>) -> PyResult<Config> {
        let mut c = Config::from_env().map_err(|e| error(py, "CONFIG", e.to_string()))?;
        if let Some(v) = &self.store {
            let url = text("store", v)?;
            cosid::store::StoreUrl::parse(&url)
                .map_err(|e| crate::errors::from_core(py, &cosid::Error::Store(e)))?;
            c.store = Some(url);
        }
        if let Some(v) = &self.namespace {
            c.namespace = text("namespace", v)?;
        }
        if let Some(v) = &self.layout {
            c.layout = layout(py, v)?;
        }
        if let Some(v) = &self.ttl {
            c.ttl = duration(py, "ttl", v)?;
        }
        if let Some(v) = &self.tolerance {
            c.tolerance = duration(py, "tolerance", v)?;
        }
        if let Some(v) = &self.bits {
            c.bits = whole(py, "bits", v, "1 to the layout's slot bits")?;
        }
        if let Some(v) = &self.owner_key {
            c.owner_key = Some(text("owner_key", v)?);
        }
        if let Some(v) = &self.preferred_slot {
            c.preferred_slot = Some(whole(py, "preferred_slot", v, "a slot below 2^bits")?);
        }
        if let Some(v) = &self.acquire_timeout {
            c.acquire_timeout = Some(duration(py, "acquire_timeout", v)?);
        }
        if let Some(v) = &self.max_wait {
            c.waits.window = duration(py, "max_wait", v)?;
        }
        if let Some(v) = &self.backwards_wait {
            c.waits.backwards = duration(py, "backwards_wait", v)?;
        }
        c.validate()
            .map_err(|e| error(py, "CONFIG", e.to_string()))?;
        cosid::lease::Namespace::new(c.namespace.clone())
            .map_err(|e| crate::errors::from_core(py, &cosid::Error::Namespace(e)))?;
        Ok(c)
    }
}
