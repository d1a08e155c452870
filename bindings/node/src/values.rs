//! The objects JavaScript gets back (parts of an id, a layout, a status), and the raw conversions the hot path
//! uses: a `BigUint64Array` filled in place and a decimal string without a heap allocation.

use crate::errors::{OrThrow, Thrown};
use cosid::host::Holder;
use cosid::{Id, Layout, Status};
use napi::bindgen_prelude::{ToNapiValue, TypeName};
use napi::{sys, Env, ValueType};
use napi_derive::napi;
use std::ptr;

/// A JavaScript `Date` at a number of Unix milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct Date(pub f64);

impl TypeName for Date {
    fn type_name() -> &'static str {
        "Date"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for Date {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let mut out = ptr::null_mut();
        // SAFETY: `env` is the live environment of the call that converts this value.
        check(
            unsafe { sys::napi_create_date(env, val.0, &mut out) },
            "create a Date",
        )?;
        Ok(out)
    }
}

/// A value already made with the raw API.
#[derive(Debug, Clone, Copy)]
pub struct Raw(sys::napi_value);

impl Raw {
    /// Wraps a value made in this call.
    pub fn of(value: sys::napi_value) -> Raw {
        Raw(value)
    }
}

impl TypeName for Raw {
    fn type_name() -> &'static str {
        "object"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for Raw {
    // The value was made in the same call, on the same environment, and is still in its handle scope.
    unsafe fn to_napi_value(_: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        Ok(val.0)
    }
}

fn check(status: sys::napi_status, what: &str) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(
            napi::Status::from(status),
            format!("failed to {what}"),
        ))
    }
}

/// The fields of an id.
#[napi(object, object_from_js = false)]
#[derive(Debug, Clone, Copy)]
pub struct IdParts {
    /// The start of the id's tick.
    #[napi(ts_type = "Date")]
    pub timestamp: Date,
    /// The same, in Unix milliseconds.
    pub timestamp_ms: f64,
    /// Ticks since the layout's epoch.
    pub tick: f64,
    /// The slot that issued the id.
    pub slot: f64,
    /// The sequence number within the tick.
    pub sequence: f64,
}

impl IdParts {
    /// The parts of `id` in `layout`.
    pub fn of(layout: &Layout, id: Id) -> Result<IdParts, Thrown> {
        let p = layout.decompose(id).or_throw()?;
        Ok(IdParts {
            timestamp: Date(p.timestamp_ms as f64),
            timestamp_ms: p.timestamp_ms as f64,
            tick: p.tick as f64,
            // Exact for every field up to 53 bits wide (every preset's are far narrower).
            slot: p.slot as f64,
            sequence: p.sequence as f64,
        })
    }
}

/// How a layout splits an id.
#[napi(object, object_from_js = false)]
#[derive(Debug, Clone)]
pub struct LayoutInfo {
    /// Unix milliseconds at the start of tick 0.
    pub epoch_ms: f64,
    /// The tick length.
    #[napi(ts_type = "'millisecond' | 'second'")]
    pub tick: String,
    /// Width of the timestamp field.
    pub timestamp_bits: u32,
    /// Width of the slot field.
    pub slot_bits: u32,
    /// Width of the sequence field.
    pub sequence_bits: u32,
    /// The three widths together.
    pub total_bits: u32,
    /// Ids one slot can issue per second.
    pub cap_per_second: f64,
    /// Whether every id is an exact JavaScript number (at most 53 bits): `nextIdNumber()` works.
    pub js_safe: bool,
}

impl LayoutInfo {
    /// The description of `layout`.
    pub fn of(layout: &Layout) -> LayoutInfo {
        LayoutInfo {
            epoch_ms: layout.epoch_ms() as f64,
            tick: layout.tick().to_string(),
            timestamp_bits: layout.timestamp_bits().into(),
            slot_bits: layout.slot_bits().into(),
            sequence_bits: layout.sequence_bits().into(),
            total_bits: layout.total_bits().into(),
            cap_per_second: layout.cap_per_second() as f64,
            js_safe: layout.total_bits() <= 53,
        }
    }
}

/// A runtime's lease and state at one moment. Times are Unix milliseconds on the store's clock.
#[napi(object, object_from_js = false, js_name = "Status")]
#[derive(Debug, Clone)]
pub struct StatusInfo {
    /// The namespace.
    pub namespace: String,
    /// The store kind (`'sqlite'`, `'memory'`, `'redis'`, ...).
    pub store: String,
    /// This runtime's owner key.
    pub owner_key: String,
    /// This runtime's incarnation (a UUID, new for every start).
    pub incarnation: String,
    /// The slot.
    pub slot: u32,
    /// The lease's fence.
    pub fence: f64,
    /// Window floor (excluded).
    pub floor_ms: f64,
    /// Window ceiling (included).
    pub ceiling_ms: f64,
    /// Lease expiry.
    pub expires_at_ms: f64,
    /// The store's clock at its last reply.
    pub store_now_ms: f64,
    /// The last millisecond used by an id of this window; absent before the first id.
    pub last_issued_ms: Option<f64>,
    /// What the runtime is doing.
    #[napi(ts_type = "'ACTIVE' | 'RENEWING' | 'REACQUIRING' | 'CLOSED'")]
    pub state: String,
}

impl StatusInfo {
    /// A runtime's status.
    pub fn of(s: Status) -> StatusInfo {
        StatusInfo {
            namespace: s.namespace,
            store: s.store.to_owned(),
            owner_key: s.owner.key,
            incarnation: s.owner.incarnation.to_string(),
            slot: s.slot,
            fence: s.fence as f64,
            floor_ms: s.floor_ms as f64,
            ceiling_ms: s.ceiling_ms as f64,
            expires_at_ms: s.expires_at_ms as f64,
            store_now_ms: s.store_now_ms as f64,
            last_issued_ms: s.last_issued_ms.map(|v| v as f64),
            state: match s.state {
                cosid::State::Active => "ACTIVE",
                cosid::State::Renewing => "RENEWING",
                cosid::State::Reacquiring => "REACQUIRING",
                cosid::State::Closed => "CLOSED",
                _ => "UNKNOWN",
            }
            .to_owned(),
        }
    }
}

/// `n` ids of `rt` in a new `BigUint64Array`, written straight into its buffer.
pub fn ids_array(env: &Env, rt: &Holder, n: usize) -> Result<Raw, Thrown> {
    let mut data: *mut std::ffi::c_void = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    // SAFETY: `env` is this call's environment; the out-pointers are valid locals.
    check(
        unsafe { sys::napi_create_arraybuffer(env.raw(), n * 8, &mut data, &mut buffer) },
        "allocate an ArrayBuffer for the ids",
    )
    .or_throw()?;
    if n > 0 {
        if data.is_null() || !data.cast::<Id>().is_aligned() {
            // V8 aligns every backing store; should one ever not be, go through a vector.
            let mut ids = vec![Id::from_u64(0); n];
            rt.fill(&mut ids).or_throw()?;
            // SAFETY: `data` holds `n * 8` bytes that only this call can reach (no JavaScript runs until it
            // returns), and `ids` holds `n` ids of 8 bytes; byte copies need no alignment.
            unsafe {
                ptr::copy_nonoverlapping(ids.as_ptr().cast::<u8>(), data.cast::<u8>(), n * 8)
            };
        } else {
            // SAFETY: `data` is an aligned, zeroed allocation of `n * 8` bytes owned by `buffer`, which the
            // handle scope keeps alive through this call, and no JavaScript runs (nothing can detach or read
            // it) until the call returns. `Id` is a `repr(transparent)` `u64`, valid for every bit pattern.
            let out = unsafe { std::slice::from_raw_parts_mut(data.cast::<Id>(), n) };
            rt.fill(out).or_throw()?;
        }
    }
    let mut array = ptr::null_mut();
    // SAFETY: `buffer` is the ArrayBuffer made above, exactly `n` 8-byte elements long.
    check(
        unsafe {
            sys::napi_create_typedarray(
                env.raw(),
                sys::TypedarrayType::biguint64_array,
                n,
                buffer,
                0,
                &mut array,
            )
        },
        "create a BigUint64Array",
    )
    .or_throw()?;
    Ok(Raw(array))
}

/// `n` ids from `rt` as an array of decimal strings: for JSON, which has no `bigint`.
pub fn id_strings(env: &Env, rt: &Holder, n: usize) -> Result<Raw, Thrown> {
    let mut ids = vec![Id::from_u64(0); n];
    rt.fill(&mut ids).or_throw()?;
    let mut array = ptr::null_mut();
    // SAFETY: `env` is this call's environment; the out-pointer is a valid local.
    check(
        unsafe { sys::napi_create_array_with_length(env.raw(), n, &mut array) },
        "create an array",
    )
    .or_throw()?;
    for (i, id) in ids.iter().enumerate() {
        let Raw(text) = decimal_string(env, *id)?;
        // SAFETY: `array` is the array made above and `text` a string of this call's scope; `i < n <= 2^20`
        // fits a u32.
        check(
            unsafe { sys::napi_set_element(env.raw(), array, i as u32, text) },
            "set an array element",
        )
        .or_throw()?;
    }
    Ok(Raw(array))
}

/// The decimal form of `id` as a JavaScript string, formatted on the stack.
pub fn decimal_string(env: &Env, id: Id) -> Result<Raw, Thrown> {
    let mut buf = [0u8; 20];
    let mut v = id.as_u64();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let digits = &buf[i..];
    let mut out = ptr::null_mut();
    // SAFETY: `digits` is ASCII (so valid Latin-1) and its length is passed with it.
    check(
        unsafe {
            sys::napi_create_string_latin1(
                env.raw(),
                digits.as_ptr().cast(),
                digits.len() as isize,
                &mut out,
            )
        },
        "create a string",
    )
    .or_throw()?;
    Ok(Raw(out))
}
