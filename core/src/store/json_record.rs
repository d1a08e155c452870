//! The JSON form of the namespace and slot records, for the stores that keep each record as one value (etcd,
#![cfg_attr(not(any(feature = "etcd", feature = "zookeeper")), allow(dead_code))]
//! ZooKeeper) or one document (MongoDB, through its relaxed extended JSON): one encoder and one strict decoder, so
//! these stores read and refuse exactly the same records.

use super::StoreError;
use crate::lease::{layout_text, protocol, Namespace, NamespaceRecord, Owner, SlotRecord};
use serde_json::{json, Map, Value};

fn corrupt(
    store: &'static str,
    namespace: &Namespace,
    what: &str,
    detail: impl Into<String>,
) -> StoreError {
    StoreError::Corrupt {
        store,
        what: format!("{what} of namespace {namespace}"),
        detail: detail.into(),
    }
}

pub(super) fn encode_namespace(r: &NamespaceRecord) -> Vec<u8> {
    namespace_value(r).to_string().into_bytes()
}

/// The namespace record as a JSON object.
pub(super) fn namespace_value(r: &NamespaceRecord) -> Value {
    json!({
        "bits": r.bits,
        "tolerance_ms": r.tolerance_ms,
        "not_before": r.not_before,
        "layout": r.layout.as_ref().map(layout_text::encode),
    })
}

pub(super) fn encode_slot(r: &SlotRecord) -> Vec<u8> {
    slot_value(r).to_string().into_bytes()
}

/// The slot record as a JSON object (without its slot number, which the key or node name holds).
pub(super) fn slot_value(r: &SlotRecord) -> Value {
    let owner = r
        .owner
        .as_ref()
        .map(|o| json!({ "key": o.key, "incarnation": o.incarnation.to_string() }));
    json!({
        "owner": owner,
        "last_owner_key": r.last_owner_key,
        "fence": r.fence,
        "expires_at": r.expires_at,
        "floor": r.floor,
        "ceiling": r.ceiling,
        "next_floor": r.next_floor,
    })
}

/// Parses a stored value as JSON.
fn parse(store: &'static str, ns: &Namespace, what: &str, raw: &[u8]) -> Result<Value, StoreError> {
    serde_json::from_slice::<Value>(raw).map_err(|e| {
        corrupt(
            store,
            ns,
            what,
            format!("not JSON ({e}): {:?}", String::from_utf8_lossy(raw)),
        )
    })
}

/// A stored value that must be a JSON object.
fn object(
    store: &'static str,
    ns: &Namespace,
    what: &str,
    value: Value,
) -> Result<Map<String, Value>, StoreError> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(corrupt(
            store,
            ns,
            what,
            format!("expected a JSON object, found {other}"),
        )),
    }
}

fn number(
    store: &'static str,
    ns: &Namespace,
    what: &str,
    map: &Map<String, Value>,
    field: &str,
) -> Result<u64, StoreError> {
    match map.get(field) {
        Some(v) => v.as_u64().ok_or_else(|| {
            corrupt(
                store,
                ns,
                what,
                format!("{field} is {v}; expected a non-negative integer"),
            )
        }),
        None => Err(corrupt(store, ns, what, format!("{field} is missing"))),
    }
}

/// A string or null; the field must be present.
fn text(
    store: &'static str,
    ns: &Namespace,
    what: &str,
    map: &Map<String, Value>,
    field: &str,
) -> Result<Option<String>, StoreError> {
    match map.get(field) {
        Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(corrupt(
            store,
            ns,
            what,
            format!("{field} is {v}; expected a string or null"),
        )),
        None => Err(corrupt(store, ns, what, format!("{field} is missing"))),
    }
}

pub(super) fn decode_namespace(
    store: &'static str,
    ns: &Namespace,
    raw: &[u8],
) -> Result<NamespaceRecord, StoreError> {
    let what = "the namespace record";
    namespace_from_value(store, ns, parse(store, ns, what, raw)?)
}

/// The namespace record from a JSON object; fields other than the record's are refused only by the caller.
pub(super) fn namespace_from_value(
    store: &'static str,
    ns: &Namespace,
    value: Value,
) -> Result<NamespaceRecord, StoreError> {
    let what = "the namespace record";
    let map = object(store, ns, what, value)?;
    let bits = number(store, ns, what, &map, "bits")?;
    let bits = u8::try_from(bits)
        .ok()
        .filter(|b| (1..=protocol::MAX_BITS).contains(b))
        .ok_or_else(|| {
            corrupt(
                store,
                ns,
                what,
                format!("bits {bits} is not 1 to {}", protocol::MAX_BITS),
            )
        })?;
    Ok(NamespaceRecord {
        bits,
        tolerance_ms: number(store, ns, what, &map, "tolerance_ms")?,
        not_before: number(store, ns, what, &map, "not_before")?,
        // Absent from records written before layouts were recorded.
        layout: match map.get("layout") {
            None => None,
            Some(_) => text(store, ns, what, &map, "layout")?,
        }
        .map(|l| layout_text::decode(&l))
        .transpose()
        .map_err(|e| corrupt(store, ns, what, e))?,
    })
}

pub(super) fn decode_slot(
    store: &'static str,
    ns: &Namespace,
    slot: u32,
    raw: &[u8],
) -> Result<SlotRecord, StoreError> {
    let value = parse(store, ns, &format!("slot {slot}"), raw)?;
    slot_from_value(store, ns, slot, value)
}

/// Slot `slot`'s record from a JSON object.
pub(super) fn slot_from_value(
    store: &'static str,
    ns: &Namespace,
    slot: u32,
    value: Value,
) -> Result<SlotRecord, StoreError> {
    let what = format!("slot {slot}");
    let what = what.as_str();
    let map = object(store, ns, what, value)?;
    let owner = match map.get("owner") {
        None => return Err(corrupt(store, ns, what, "owner is missing")),
        Some(Value::Null) => None,
        Some(Value::Object(o)) => {
            let key = text(store, ns, what, o, "key")?
                .ok_or_else(|| corrupt(store, ns, what, "owner key is null"))?;
            let inc = text(store, ns, what, o, "incarnation")?
                .ok_or_else(|| corrupt(store, ns, what, "owner incarnation is null"))?;
            let incarnation = inc.parse().map_err(|_| {
                corrupt(
                    store,
                    ns,
                    what,
                    format!("incarnation {inc:?} is not a UUID"),
                )
            })?;
            Some(Owner { key, incarnation })
        }
        Some(v) => {
            return Err(corrupt(
                store,
                ns,
                what,
                format!("owner is {v}; expected an object or null"),
            ))
        }
    };
    Ok(SlotRecord {
        slot,
        owner,
        last_owner_key: text(store, ns, what, &map, "last_owner_key")?,
        fence: number(store, ns, what, &map, "fence")?,
        expires_at: number(store, ns, what, &map, "expires_at")?,
        floor: number(store, ns, what, &map, "floor")?,
        ceiling: number(store, ns, what, &map, "ceiling")?,
        next_floor: number(store, ns, what, &map, "next_floor")?,
    })
}

/// A slot number as written in a key or node name: canonical decimal, so that `7` and `07` cannot both exist.
pub(super) fn parse_slot(s: &str) -> Option<u32> {
    s.parse::<u32>().ok().filter(|n| n.to_string() == s)
}
