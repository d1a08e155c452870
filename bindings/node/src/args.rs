//! Reading JavaScript arguments: ids (bigint, number or decimal string), counts, and the options object.
//!
//! The wrong type is a `TypeError` that names the argument, what it accepts and what it got; the right type with
//! a wrong value is the core's error for that value (`INVALID_ID`, `CONFIG`, `LAYOUT`).

use crate::errors::{coded, invalid, range_error, type_error, OrThrow, Thrown};
use cosid::config::parse_layout;
use cosid::host::{self, Kind, Settings, Value};
use cosid::{Id, Layout, Tick};
use napi::bindgen_prelude::{BigInt, FromNapiValue, Object, Unknown};
use napi::{Env, ValueType};
use std::time::Duration;

/// The largest id that is still an exact JavaScript number, 2^53 - 1.
pub const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The most ids one `nextIds(n)` call returns: at the default layout's cap this is about a quarter of a second
/// of ids, so one call never holds the event loop for long.
pub const MAX_BATCH: u32 = 1 << 20;

const LAYOUT_FIELDS: &[&str] = &["epoch", "tick", "timestampBits", "slotBits", "sequenceBits"];

/// `v` as `T`, the Rust type of its JavaScript type. Every caller has just read `v.get_type()` and pairs it with
/// the matching `T`: `f64` for a number, `String` for a string, `bool`, `BigInt`, `Object`.
fn read<T: FromNapiValue>(v: &Unknown) -> Result<T, Thrown> {
    // SAFETY: `cast` requires `T` to match the value's type, which every caller checked (see above); a mismatch
    // would still only be a failed napi conversion, reported as an error.
    unsafe { v.cast::<T>() }.or_throw()
}

/// `typeof v`, with `null` for null, for messages.
pub fn type_name(v: &Unknown) -> &'static str {
    match v.get_type() {
        Ok(ValueType::Undefined) => "undefined",
        Ok(ValueType::Null) => "null",
        Ok(ValueType::Boolean) => "boolean",
        Ok(ValueType::Number) => "number",
        Ok(ValueType::String) => "string",
        Ok(ValueType::Symbol) => "symbol",
        Ok(ValueType::Object) => "object",
        Ok(ValueType::Function) => "function",
        Ok(ValueType::BigInt) => "bigint",
        _ => "an unknown type",
    }
}

/// `got number 1.5`, `got string "abc"`, `got object`: what a message says about a value.
fn got(v: &Unknown) -> String {
    let name = type_name(v);
    match v.get_type() {
        Ok(ValueType::Number) => match read::<f64>(v) {
            Ok(n) => format!("got number {}", js_number(n)),
            Err(_) => format!("got {name}"),
        },
        Ok(ValueType::String) => match read::<String>(v) {
            Ok(s) if s.chars().count() <= 40 => format!("got string {s:?}"),
            Ok(s) => format!("got string {:?}...", s.chars().take(40).collect::<String>()),
            Err(_) => format!("got {name}"),
        },
        Ok(ValueType::Boolean) => match read::<bool>(v) {
            Ok(b) => format!("got boolean {b}"),
            Err(_) => format!("got {name}"),
        },
        _ => format!("got {name}"),
    }
}

/// A number written as JavaScript writes it (`1.5`, `30`, `NaN`, `Infinity`).
fn js_number(n: f64) -> String {
    if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        n.to_string()
    }
}

fn is_nullish(v: &Unknown) -> bool {
    matches!(v.get_type(), Ok(ValueType::Undefined | ValueType::Null))
}

/// An id given as a bigint, a safe-integer number or a canonical decimal string.
pub fn id(env: &Env, what: &str, v: &Unknown) -> Result<Id, Thrown> {
    match v.get_type().or_throw()? {
        ValueType::BigInt => {
            let b = read::<BigInt>(v)?;
            let (negative, value, lossless) = b.get_u64();
            if negative && (value != 0 || b.words.len() > 1) {
                return Err(coded(
                    "INVALID_ID",
                    format!("{what} is a negative bigint: expected 0n to 2n ** 64n - 1n"),
                ));
            }
            if !lossless && !negative {
                return Err(coded(
                    "INVALID_ID",
                    format!("{what} overflows 64 bits: expected at most 18446744073709551615n"),
                ));
            }
            Ok(Id::from_u64(if negative { 0 } else { value }))
        }
        ValueType::Number => {
            let n = read::<f64>(v)?;
            if n.fract() != 0.0 || !(0.0..=MAX_SAFE_INTEGER).contains(&n) {
                return Err(coded(
                    "INVALID_ID",
                    format!(
                        "{what} = {} is not an id: a number id must be a whole number from 0 to \
                         Number.MAX_SAFE_INTEGER; pass larger ids as a bigint or a decimal string",
                        js_number(n)
                    ),
                ));
            }
            Ok(Id::from_u64(n as u64))
        }
        ValueType::String => {
            let s = read::<String>(v)?;
            Id::parse_decimal(&s).or_throw()
        }
        _ => Err(type_error(
            env,
            &format!(
                "{what} must be a bigint, a number or a decimal string, {}",
                got(v)
            ),
        )),
    }
}

/// A string argument.
pub fn string(env: &Env, what: &str, v: &Unknown) -> Result<String, Thrown> {
    if v.get_type().or_throw()? != ValueType::String {
        return Err(type_error(
            env,
            &format!("{what} must be a string, {}", got(v)),
        ));
    }
    read::<String>(v)
}

/// How many ids to make: a whole number from 0 to [`MAX_BATCH`].
pub fn count(env: &Env, v: &Unknown) -> Result<usize, Thrown> {
    if v.get_type().or_throw()? != ValueType::Number {
        return Err(type_error(env, &format!("n must be a number, {}", got(v))));
    }
    let n = read::<f64>(v)?;
    if n.fract() != 0.0 || !(0.0..=f64::from(MAX_BATCH)).contains(&n) {
        return Err(range_error(
            env,
            &format!(
                "n must be a whole number from 0 to {MAX_BATCH}, got {}",
                js_number(n)
            ),
        ));
    }
    Ok(n as usize)
}

/// The settings of `configure()` and `Runtime.create()`: the environment's, overridden by `options`, each option
/// handed to the core's one settings table ([`cosid::host::Settings`]) by its camelCase name. Node converts types
/// only: a string is read by the table's parser, a number is milliseconds for a duration, a whole number for a
/// count or slot; a layout may also be an object.
pub fn settings(env: &Env, options: Option<&Unknown>) -> Result<Settings, Thrown> {
    let mut settings = Settings::from_env().or_throw()?;
    let Some(options) = options.filter(|v| !is_nullish(v)) else {
        settings.validate().or_throw()?;
        return Ok(settings);
    };
    let obj = object(env, "options", options)?;
    for key in Object::keys(&obj).or_throw()? {
        let Some(setting) = host::setting(&key).filter(|s| s.js == key) else {
            let names: Vec<_> = host::SETTINGS.iter().map(|s| s.js).collect();
            return Err(invalid(
                "option",
                key,
                format!("one of {}", names.join(", ")),
            ));
        };
        let Some(v) = obj
            .get::<Unknown>(&key)
            .or_throw()?
            .filter(|v| !is_nullish(v))
        else {
            continue;
        };
        let what = format!("options.{key}");
        let is_string = v.get_type().or_throw()? == ValueType::String;
        let text = if is_string {
            Some(read::<String>(&v)?)
        } else {
            None
        };
        let value = match (setting.kind, &text) {
            (_, Some(t)) => Value::Text(t),
            (Kind::Layout, None) => Value::Layout(layout(env, &what, &v)?),
            (Kind::Duration, None) => Value::Duration(duration(env, setting.key, &v)?),
            (Kind::Number | Kind::Slot, None) => {
                Value::Number(integer(env, setting.key, &v, u64::from(u32::MAX))?)
            }
            (Kind::Store | Kind::Text | Kind::OnFork, None) => {
                return Err(type_error(
                    env,
                    &format!("{what} must be a string, {}", got(&v)),
                ))
            }
        };
        settings.set_value(setting.key, value).or_throw()?;
    }
    settings.validate().or_throw()?;
    Ok(settings)
}

fn object<'a>(env: &Env, what: &str, v: &Unknown<'a>) -> Result<Object<'a>, Thrown> {
    if v.get_type().or_throw()? != ValueType::Object {
        return Err(type_error(
            env,
            &format!("{what} must be an object, {}", got(v)),
        ));
    }
    read::<Object>(v)
}

/// A duration given as a number of milliseconds (a string goes to the settings table's parser).
fn duration(env: &Env, setting: &str, v: &Unknown) -> Result<Duration, Thrown> {
    if v.get_type().or_throw()? != ValueType::Number {
        return Err(type_error(
            env,
            &format!(
                "options.{setting} must be a number of milliseconds or a duration string like '30s', {}",
                got(v)
            ),
        ));
    }
    let n = read::<f64>(v)?;
    if n.fract() != 0.0 || !(0.0..=MAX_SAFE_INTEGER).contains(&n) {
        return Err(invalid(
            setting,
            js_number(n),
            "a whole, non-negative number of milliseconds or a string like '30s'",
        ));
    }
    Ok(Duration::from_millis(n as u64))
}

/// A whole number from 0 to `max`.
fn integer(env: &Env, setting: &str, v: &Unknown, max: u64) -> Result<u64, Thrown> {
    if v.get_type().or_throw()? != ValueType::Number {
        return Err(type_error(
            env,
            &format!("options.{setting} must be a number, {}", got(v)),
        ));
    }
    let n = read::<f64>(v)?;
    if n.fract() != 0.0 || !(0.0..=max as f64).contains(&n) {
        return Err(invalid(
            setting,
            js_number(n),
            format!("a whole number from 0 to {max}"),
        ));
    }
    Ok(n as u64)
}

/// A layout: a name (`'millis'`, `'seconds'`, `'js-safe'`) or
/// `{ epoch, tick: 'millisecond' | 'second', timestampBits, slotBits, sequenceBits }`.
pub fn layout(env: &Env, what: &str, v: &Unknown) -> Result<Layout, Thrown> {
    match v.get_type().or_throw()? {
        ValueType::String => {
            let s = read::<String>(v)?;
            parse_layout("layout", &s).or_throw()
        }
        ValueType::Object => {
            let obj = object(env, what, v)?;
            for key in Object::keys(&obj).or_throw()? {
                if !LAYOUT_FIELDS.contains(&key.as_str()) {
                    return Err(invalid(
                        "layout field",
                        key,
                        format!("one of {}", LAYOUT_FIELDS.join(", ")),
                    ));
                }
            }
            let get = |key: &str| -> Result<Option<Unknown>, Thrown> {
                Ok(obj
                    .get::<Unknown>(key)
                    .or_throw()?
                    .filter(|v| !is_nullish(v)))
            };
            let tick = match get("tick")? {
                None => Tick::Millisecond,
                Some(t) => match string(env, &format!("{what}.tick"), &t)?.as_str() {
                    "millisecond" | "millis" | "ms" => Tick::Millisecond,
                    "second" | "seconds" | "s" => Tick::Second,
                    other => {
                        return Err(invalid("layout.tick", other, "'millisecond' or 'second'"))
                    }
                },
            };
            let preset = match tick {
                Tick::Millisecond => Layout::millis(),
                Tick::Second => Layout::seconds(),
            };
            let field = |key: &str, default: u64, max: u64| -> Result<u64, Thrown> {
                match get(key)? {
                    None => Ok(default),
                    Some(f) => integer(env, &format!("layout.{key}"), &f, max),
                }
            };
            let epoch = field("epoch", preset.epoch_ms(), Layout::MAX_UNIX_MS)?;
            let ts = field("timestampBits", preset.timestamp_bits().into(), 63)?;
            let slot = field("slotBits", preset.slot_bits().into(), 63)?;
            let seq = field("sequenceBits", preset.sequence_bits().into(), 63)?;
            Layout::new(epoch, tick, ts as u8, slot as u8, seq as u8).or_throw()
        }
        _ => Err(type_error(
            env,
            &format!(
                "{what} must be 'millis', 'seconds', 'js-safe' or a layout object, {}",
                got(v)
            ),
        )),
    }
}
