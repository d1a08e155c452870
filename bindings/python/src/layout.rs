//! `cosid.Layout`: how an id's 63 bits split into timestamp, slot and sequence, and the pure conversions on it.

use crate::args;
use crate::errors::{error, from_core};
use cosid::{Id, Layout, Tick};
use pyo3::prelude::*;

/// How an id's 63 usable bits are split: `0 | timestamp | slot | sequence`, with the timestamp counted in ticks
/// (milliseconds or seconds) since an epoch.
///
/// Use a preset (``Layout.millis()``, the default; ``Layout.seconds()``; ``Layout.js_safe()``, 53 bits) or build
/// one: ``Layout(epoch_ms=..., tick="millisecond", timestamp_bits=41, slot_bits=10, sequence_bits=12)``. An
/// invalid layout raises ``cosid.LayoutError``.
#[pyclass(module = "cosid", name = "Layout", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct PyLayout {
    pub(crate) inner: Layout,
}

fn tick_name(t: Tick) -> &'static str {
    match t {
        Tick::Millisecond => "millisecond",
        Tick::Second => "second",
    }
}

#[pymethods]
impl PyLayout {
    #[new]
    #[pyo3(signature = (*, epoch_ms = Layout::DEFAULT_EPOCH_MS as i128, tick = "millisecond", timestamp_bits = 41, slot_bits = 10, sequence_bits = 12))]
    fn new(
        py: Python<'_>,
        epoch_ms: i128,
        tick: &str,
        timestamp_bits: i64,
        slot_bits: i64,
        sequence_bits: i64,
    ) -> PyResult<Self> {
        let range = |field: &str, value: String, expected: &str| {
            error(
                py,
                "LAYOUT",
                format!("invalid {field} = {value}: expected {expected}"),
            )
        };
        let epoch_ms = u64::try_from(epoch_ms).map_err(|_| {
            range(
                "epoch_ms",
                epoch_ms.to_string(),
                "Unix milliseconds, 0 or more",
            )
        })?;
        let bits = |field: &str, v: i64| {
            u8::try_from(v).map_err(|_| range(field, v.to_string(), "1 to 61 bits"))
        };
        let (timestamp_bits, slot_bits, sequence_bits) = (
            bits("timestamp_bits", timestamp_bits)?,
            bits("slot_bits", slot_bits)?,
            bits("sequence_bits", sequence_bits)?,
        );
        let tick = match tick {
            "millisecond" | "ms" | "millis" => Tick::Millisecond,
            "second" | "s" | "seconds" => Tick::Second,
            other => {
                return Err(error(
                    py,
                    "LAYOUT",
                    format!("invalid tick {other:?}: expected \"millisecond\" or \"second\""),
                ))
            }
        };
        Layout::new(epoch_ms, tick, timestamp_bits, slot_bits, sequence_bits)
            .map(|inner| PyLayout { inner })
            .map_err(|e| from_core(py, &cosid::Error::Layout(e)))
    }

    /// The default layout: 41 bits of millisecond ticks from 2019-12-24T16:00:00Z, 10 bits of slot, 12 of
    /// sequence (4,096,000 ids per second per slot).
    #[staticmethod]
    fn millis() -> Self {
        PyLayout {
            inner: Layout::millis(),
        }
    }

    /// 31 bits of second ticks, 10 bits of slot, 22 of sequence.
    #[staticmethod]
    fn seconds() -> Self {
        PyLayout {
            inner: Layout::seconds(),
        }
    }

    /// 53 bits in all, so every id is an exact JavaScript number: 41 bits of millisecond ticks, 5 of slot, 7 of
    /// sequence.
    #[staticmethod]
    fn js_safe() -> Self {
        PyLayout {
            inner: Layout::js_safe(),
        }
    }

    /// A preset by name: ``"millis"``, ``"seconds"`` or ``"js-safe"`` (as ``COSID_LAYOUT`` takes them).
    #[staticmethod]
    fn named(py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<Self> {
        args::layout(py, name).map(|inner| PyLayout { inner })
    }

    /// Unix milliseconds at the start of tick 0.
    #[getter]
    fn epoch_ms(&self) -> u64 {
        self.inner.epoch_ms()
    }

    /// ``"millisecond"`` or ``"second"``.
    #[getter]
    fn tick(&self) -> &'static str {
        tick_name(self.inner.tick())
    }

    /// Width of the timestamp field in bits.
    #[getter]
    fn timestamp_bits(&self) -> u8 {
        self.inner.timestamp_bits()
    }

    /// Width of the slot field in bits.
    #[getter]
    fn slot_bits(&self) -> u8 {
        self.inner.slot_bits()
    }

    /// Width of the sequence field in bits.
    #[getter]
    fn sequence_bits(&self) -> u8 {
        self.inner.sequence_bits()
    }

    /// The most ids one slot can issue per second.
    #[getter]
    fn cap_per_second(&self) -> u64 {
        self.inner.cap_per_second()
    }

    /// Builds an id from its fields (tick since the epoch, slot, sequence); each is checked against the layout.
    fn compose(&self, py: Python<'_>, tick: u64, slot: u64, sequence: u64) -> PyResult<u64> {
        self.inner
            .compose(tick, slot, sequence)
            .map(Id::as_u64)
            .map_err(|e| from_core(py, &cosid::Error::Id(e)))
    }

    /// The fields of an id: ``(tick, timestamp_ms, slot, sequence)``. Raises ``InvalidIdError`` for an id this
    /// layout cannot have made.
    fn decompose(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<(u64, u64, u64, u64)> {
        let parts = self
            .inner
            .decompose(Id::from_u64(args::id(py, id)?))
            .map_err(|e| from_core(py, &cosid::Error::Id(e)))?;
        Ok((parts.tick, parts.timestamp_ms, parts.slot, parts.sequence))
    }

    fn __repr__(&self) -> String {
        let l = &self.inner;
        format!(
            "cosid.Layout(epoch_ms={}, tick={:?}, timestamp_bits={}, slot_bits={}, sequence_bits={})",
            l.epoch_ms(),
            tick_name(l.tick()),
            l.timestamp_bits(),
            l.slot_bits(),
            l.sequence_bits()
        )
    }
}
