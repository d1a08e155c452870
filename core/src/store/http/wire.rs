//! The JSON wire format of the lease API (`cosid serve`) and its `http://` store: one definition that the server
//! and the client share, so that every value and every store error crosses the wire and comes back as it was.
//!
//! Times are store-clock milliseconds since the Unix epoch, as everywhere in cosid; layouts are their stored text
//! (`v1;epoch_ms;tick_ms;timestamp_bits;slot_bits;sequence_bits`); incarnations are UUIDs. `docs/serve.md`
//! lists the paths and bodies.

use crate::lease::{
    layout_text, AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord, Owner,
    SlotLease, SlotRecord,
};
use crate::store::{Inspection, StoreError};
use serde::{Deserialize, Serialize};

/// The version prefix of every path.
pub const PREFIX: &str = "/v1";

/// Namespace settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Slot bits.
    pub bits: u8,
    /// Tolerance (ms).
    pub tolerance_ms: u64,
    /// The layout's stored text.
    pub layout: String,
}

/// A holder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireOwner {
    /// The logical key.
    pub key: String,
    /// The incarnation (UUID).
    pub incarnation: String,
}

/// A granted lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lease {
    /// The namespace name.
    pub namespace: String,
    /// The slot.
    pub slot: u32,
    /// The holder.
    pub owner: WireOwner,
    /// The fence.
    pub fence: u64,
    /// The expiry.
    pub expires_at: u64,
    /// The window's floor (excluded).
    pub floor: u64,
    /// The window's ceiling (included).
    pub ceiling: u64,
    /// The store's clock when it answered.
    pub store_now: u64,
}

/// A slot record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slot {
    /// The slot.
    pub slot: u32,
    /// The holder, if any.
    pub owner: Option<WireOwner>,
    /// The last holder's key.
    pub last_owner_key: Option<String>,
    /// The fence.
    pub fence: u64,
    /// The expiry.
    pub expires_at: u64,
    /// The floor.
    pub floor: u64,
    /// The ceiling.
    pub ceiling: u64,
    /// The next holder's floor.
    pub next_floor: u64,
}

/// A namespace record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// Slot bits.
    pub bits: u8,
    /// Tolerance (ms).
    pub tolerance_ms: u64,
    /// The namespace's `not_before`.
    pub not_before: u64,
    /// The layout's stored text, if recorded.
    pub layout: Option<String>,
}

/// `POST /v1/namespaces/{ns}/acquire`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcquireBody {
    /// The namespace settings.
    pub config: Config,
    /// Who asks.
    pub owner: WireOwner,
    /// Lease length (ms).
    pub ttl_ms: u64,
    /// A slot to take if free.
    #[serde(default)]
    pub preferred_slot: Option<u32>,
}

/// The answer to an acquire.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcquiredBody {
    /// The lease.
    pub lease: Lease,
    /// Another live lease of the same key, if any.
    pub duplicate_owner_key: Option<u32>,
}

/// `POST /v1/namespaces/{ns}/renew`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenewBody {
    /// The lease held.
    pub lease: Lease,
    /// New lease length (ms).
    pub ttl_ms: u64,
    /// The namespace tolerance (ms).
    pub tolerance_ms: u64,
}

/// `POST /v1/namespaces/{ns}/release`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseBody {
    /// The lease held.
    pub lease: Lease,
    /// The last timestamp issued on it, if any.
    pub last_issued: Option<u64>,
}

/// `GET /v1/namespaces/{ns}/slots`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InspectionBody {
    /// The namespace record, if any.
    pub namespace: Option<Record>,
    /// Every slot record.
    pub slots: Vec<Slot>,
    /// The store's clock.
    pub store_now: u64,
}

/// `POST /v1/namespaces/{ns}/not_before`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotBeforeBody {
    /// Settings for a namespace that is new.
    pub config: Config,
    /// The new `not_before`.
    pub not_before: u64,
}

/// The body of every failed request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error, by kind with its fields.
    pub error: WireError,
    /// The error as a person reads it.
    #[serde(default)]
    pub message: String,
    /// The error's stable code, as every binding names it (`LEASE_LOST`, `STORE_UNAVAILABLE`, ...), or for a
    /// request refused before the store, what refused it (`BAD_REQUEST`, `UNAUTHORIZED`, `RATE_LIMITED`, ...).
    #[serde(default)]
    pub code: String,
}

/// A [`StoreError`] on the wire: one variant per kind, with every field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum WireError {
    Unavailable {
        store: String,
        message: String,
    },
    Exhausted {
        namespace: String,
        slots: u64,
        earliest_expiry: u64,
        store_now: u64,
    },
    LeaseLost {
        namespace: String,
        slot: u32,
        reason: String,
    },
    NamespaceMismatch {
        namespace: String,
        field: String,
        stored: u64,
        requested: u64,
    },
    Corrupt {
        store: String,
        what: String,
        detail: String,
    },
    InvalidUrl {
        url: String,
        reason: String,
    },
    InvalidSettings {
        detail: String,
    },
    NotBeforeLowered {
        namespace: String,
        stored: u64,
        requested: u64,
    },
    Regression {
        store: String,
        what: String,
        detail: String,
    },
    UnsafeFile {
        store: String,
        path: String,
        reason: String,
    },
    Generic {
        store: String,
        message: String,
    },
    /// A request the server refused before it reached the store (bad JSON, bad namespace name, no token, too
    /// large, too many). Comes back as `Generic`, or `Unavailable` for 429.
    BadRequest {
        message: String,
        /// What refused it (`BAD_REQUEST`, `NOT_FOUND`, `RATE_LIMITED`, `LOOP`, ...).
        #[serde(default)]
        code: String,
    },
}

/// The code of a request refused because the chain of `cosid serve` instances it passed through loops back on
/// itself (a server whose store is itself, or a chain of servers that comes back to one).
pub const LOOP: &str = "LOOP";

/// The store kinds an error may name; any other name comes back as `"http"`.
const STORES: &[&str] = &[
    "sqlite", "memory", "redis", "postgres", "mysql", "etcd", "http",
];

/// The settings a `NamespaceMismatch` may name.
const FIELDS: &[&str] = &[
    "bits",
    "tolerance_ms",
    "layout epoch_ms",
    "layout tick_ms",
    "layout timestamp_bits",
    "layout slot_bits",
    "layout sequence_bits",
];

fn interned(name: &str, known: &[&'static str], other: &'static str) -> &'static str {
    known.iter().find(|k| **k == name).copied().unwrap_or(other)
}

/// The HTTP status of a store error. A status alone never decides the error: the body does.
pub fn status(e: &StoreError) -> u16 {
    match e {
        StoreError::Unavailable { .. } => 503,
        StoreError::Exhausted { .. } => 409,
        StoreError::LeaseLost { .. } => 410,
        StoreError::NamespaceMismatch { .. } => 409,
        StoreError::NotBeforeLowered { .. } => 409,
        StoreError::InvalidSettings { .. } | StoreError::InvalidUrl { .. } => 422,
        StoreError::Regression { .. } => 500,
        StoreError::Corrupt { .. } | StoreError::UnsafeFile { .. } | StoreError::Generic { .. } => {
            500
        }
    }
}

impl From<&StoreError> for WireError {
    fn from(e: &StoreError) -> Self {
        match e {
            StoreError::Unavailable { store, source } => WireError::Unavailable {
                store: (*store).to_owned(),
                message: source.to_string(),
            },
            StoreError::Exhausted {
                namespace,
                slots,
                earliest_expiry,
                store_now,
            } => WireError::Exhausted {
                namespace: namespace.clone(),
                slots: *slots,
                earliest_expiry: *earliest_expiry,
                store_now: *store_now,
            },
            StoreError::LeaseLost {
                namespace,
                slot,
                reason,
            } => WireError::LeaseLost {
                namespace: namespace.clone(),
                slot: *slot,
                reason: reason.clone(),
            },
            StoreError::NamespaceMismatch {
                namespace,
                field,
                stored,
                requested,
            } => WireError::NamespaceMismatch {
                namespace: namespace.clone(),
                field: (*field).to_owned(),
                stored: *stored,
                requested: *requested,
            },
            StoreError::Corrupt {
                store,
                what,
                detail,
            } => WireError::Corrupt {
                store: (*store).to_owned(),
                what: what.clone(),
                detail: detail.clone(),
            },
            StoreError::InvalidUrl { url, reason } => WireError::InvalidUrl {
                url: url.clone(),
                reason: reason.clone(),
            },
            StoreError::InvalidSettings { detail } => WireError::InvalidSettings {
                detail: detail.clone(),
            },
            StoreError::NotBeforeLowered {
                namespace,
                stored,
                requested,
            } => WireError::NotBeforeLowered {
                namespace: namespace.clone(),
                stored: *stored,
                requested: *requested,
            },
            StoreError::Regression {
                store,
                what,
                detail,
            } => WireError::Regression {
                store: (*store).to_owned(),
                what: what.clone(),
                detail: detail.clone(),
            },
            StoreError::UnsafeFile {
                store,
                path,
                reason,
            } => WireError::UnsafeFile {
                store: (*store).to_owned(),
                path: path.display().to_string(),
                reason: reason.clone(),
            },
            StoreError::Generic { store, source } => WireError::Generic {
                store: (*store).to_owned(),
                message: source.to_string(),
            },
        }
    }
}

impl WireError {
    /// The store error this stands for; `status` is the HTTP status it came with.
    pub fn into_store_error(self, status: u16) -> StoreError {
        let store = |s: &str| interned(s, STORES, "http");
        match self {
            WireError::Unavailable { store: s, message } => StoreError::Unavailable {
                store: store(&s),
                source: message.into(),
            },
            WireError::Exhausted {
                namespace,
                slots,
                earliest_expiry,
                store_now,
            } => StoreError::Exhausted {
                namespace,
                slots,
                earliest_expiry,
                store_now,
            },
            WireError::LeaseLost {
                namespace,
                slot,
                reason,
            } => StoreError::LeaseLost {
                namespace,
                slot,
                reason,
            },
            WireError::NamespaceMismatch {
                namespace,
                field,
                stored,
                requested,
            } => StoreError::NamespaceMismatch {
                namespace,
                field: interned(&field, FIELDS, "setting"),
                stored,
                requested,
            },
            WireError::Corrupt {
                store: s,
                what,
                detail,
            } => StoreError::Corrupt {
                store: store(&s),
                what,
                detail,
            },
            WireError::InvalidUrl { url, reason } => StoreError::InvalidUrl { url, reason },
            WireError::InvalidSettings { detail } => StoreError::InvalidSettings { detail },
            WireError::NotBeforeLowered {
                namespace,
                stored,
                requested,
            } => StoreError::NotBeforeLowered {
                namespace,
                stored,
                requested,
            },
            WireError::Regression {
                store: s,
                what,
                detail,
            } => StoreError::Regression {
                store: store(&s),
                what,
                detail,
            },
            WireError::UnsafeFile {
                store: s,
                path,
                reason,
            } => StoreError::UnsafeFile {
                store: store(&s),
                path: path.into(),
                reason,
            },
            WireError::Generic { store: s, message } => StoreError::Generic {
                store: store(&s),
                source: message.into(),
            },
            WireError::BadRequest { message, code } if code == LOOP => {
                StoreError::InvalidSettings {
                    detail: format!("HTTP {status}: {message}"),
                }
            }
            WireError::BadRequest { message, .. } if status == 429 || status == 503 => {
                StoreError::Unavailable {
                    store: "http",
                    source: format!("HTTP {status}: {message}").into(),
                }
            }
            WireError::BadRequest { message, .. } => StoreError::Generic {
                store: "http",
                source: format!("HTTP {status}: {message}").into(),
            },
        }
    }
}

impl ErrorBody {
    /// The body of `e`.
    pub fn of(e: &StoreError) -> Self {
        Self {
            error: e.into(),
            message: e.to_string(),
            code: crate::host::ErrorCode::of_store(e).name().to_owned(),
        }
    }
}

fn bad(what: &str, detail: impl std::fmt::Display) -> String {
    format!("{what}: {detail}")
}

impl Config {
    /// The wire form.
    pub fn of(c: &NamespaceConfig) -> Self {
        Self {
            bits: c.bits,
            tolerance_ms: c.tolerance_ms,
            layout: layout_text::encode(&c.layout),
        }
    }

    /// The settings, or why the body is not valid.
    pub fn decode(&self) -> Result<NamespaceConfig, String> {
        Ok(NamespaceConfig {
            bits: self.bits,
            tolerance_ms: self.tolerance_ms,
            layout: layout_text::decode(&self.layout)?,
        })
    }
}

impl WireOwner {
    /// The wire form.
    pub fn of(o: &Owner) -> Self {
        Self {
            key: o.key.clone(),
            incarnation: o.incarnation.to_string(),
        }
    }

    /// The owner, or why the body is not valid.
    pub fn decode(&self) -> Result<Owner, String> {
        Ok(Owner {
            key: self.key.clone(),
            incarnation: self
                .incarnation
                .parse()
                .map_err(|e| bad("incarnation", e))?,
        })
    }
}

impl Lease {
    /// The wire form.
    pub fn of(l: &SlotLease) -> Self {
        Self {
            namespace: l.namespace.as_str().to_owned(),
            slot: l.slot,
            owner: WireOwner::of(&l.owner),
            fence: l.fence,
            expires_at: l.expires_at,
            floor: l.floor,
            ceiling: l.ceiling,
            store_now: l.store_now,
        }
    }

    /// The lease, or why the body is not valid.
    pub fn decode(&self) -> Result<SlotLease, String> {
        Ok(SlotLease {
            namespace: Namespace::new(self.namespace.clone()).map_err(|e| bad("namespace", e))?,
            slot: self.slot,
            owner: self.owner.decode()?,
            fence: self.fence,
            expires_at: self.expires_at,
            floor: self.floor,
            ceiling: self.ceiling,
            store_now: self.store_now,
        })
    }
}

impl Slot {
    /// The wire form.
    pub fn of(r: &SlotRecord) -> Self {
        Self {
            slot: r.slot,
            owner: r.owner.as_ref().map(WireOwner::of),
            last_owner_key: r.last_owner_key.clone(),
            fence: r.fence,
            expires_at: r.expires_at,
            floor: r.floor,
            ceiling: r.ceiling,
            next_floor: r.next_floor,
        }
    }

    /// The record, or why the body is not valid.
    pub fn decode(&self) -> Result<SlotRecord, String> {
        Ok(SlotRecord {
            slot: self.slot,
            owner: self.owner.as_ref().map(WireOwner::decode).transpose()?,
            last_owner_key: self.last_owner_key.clone(),
            fence: self.fence,
            expires_at: self.expires_at,
            floor: self.floor,
            ceiling: self.ceiling,
            next_floor: self.next_floor,
        })
    }
}

impl Record {
    /// The wire form.
    pub fn of(r: &NamespaceRecord) -> Self {
        Self {
            bits: r.bits,
            tolerance_ms: r.tolerance_ms,
            not_before: r.not_before,
            layout: r.layout.as_ref().map(layout_text::encode),
        }
    }

    /// The record, or why the body is not valid.
    pub fn decode(&self) -> Result<NamespaceRecord, String> {
        Ok(NamespaceRecord {
            bits: self.bits,
            tolerance_ms: self.tolerance_ms,
            not_before: self.not_before,
            layout: self
                .layout
                .as_deref()
                .map(layout_text::decode)
                .transpose()?,
        })
    }
}

impl AcquireBody {
    /// The wire form.
    pub fn of(config: &NamespaceConfig, request: &AcquireRequest) -> Self {
        Self {
            config: Config::of(config),
            owner: WireOwner::of(&request.owner),
            ttl_ms: request.ttl_ms,
            preferred_slot: request.preferred_slot,
        }
    }

    /// The settings and request, or why the body is not valid.
    pub fn decode(&self) -> Result<(NamespaceConfig, AcquireRequest), String> {
        Ok((
            self.config.decode()?,
            AcquireRequest {
                owner: self.owner.decode()?,
                ttl_ms: self.ttl_ms,
                preferred_slot: self.preferred_slot,
            },
        ))
    }
}

impl AcquiredBody {
    /// The wire form.
    pub fn of(a: &Acquired) -> Self {
        Self {
            lease: Lease::of(&a.lease),
            duplicate_owner_key: a.duplicate_owner_key,
        }
    }

    /// The acquisition, or why the body is not valid.
    pub fn decode(&self) -> Result<Acquired, String> {
        Ok(Acquired {
            lease: self.lease.decode()?,
            duplicate_owner_key: self.duplicate_owner_key,
        })
    }
}

impl InspectionBody {
    /// The wire form.
    pub fn of(i: &Inspection) -> Self {
        Self {
            namespace: i.namespace.as_ref().map(Record::of),
            slots: i.slots.iter().map(Slot::of).collect(),
            store_now: i.store_now,
        }
    }

    /// The inspection, or why the body is not valid.
    pub fn decode(&self) -> Result<Inspection, String> {
        Ok(Inspection {
            namespace: self.namespace.as_ref().map(Record::decode).transpose()?,
            slots: self
                .slots
                .iter()
                .map(Slot::decode)
                .collect::<Result<_, _>>()?,
            store_now: self.store_now,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of store error comes back from the wire as it went in: same kind, fields and message.
    #[test]
    fn every_store_error_round_trips() {
        let all = vec![
            StoreError::Unavailable {
                store: "redis",
                source: "connection refused".into(),
            },
            StoreError::Exhausted {
                namespace: "n".into(),
                slots: 32,
                earliest_expiry: 7,
                store_now: 5,
            },
            StoreError::LeaseLost {
                namespace: "n".into(),
                slot: 3,
                reason: "fence 4".into(),
            },
            StoreError::NamespaceMismatch {
                namespace: "n".into(),
                field: "layout tick_ms",
                stored: 1,
                requested: 1000,
            },
            StoreError::Corrupt {
                store: "postgres",
                what: "slot 1".into(),
                detail: "x".into(),
            },
            StoreError::InvalidUrl {
                url: "u".into(),
                reason: "r".into(),
            },
            StoreError::InvalidSettings { detail: "d".into() },
            StoreError::NotBeforeLowered {
                namespace: "n".into(),
                stored: 9,
                requested: 8,
            },
            StoreError::Regression {
                store: "sqlite",
                what: "slot 0".into(),
                detail: "gone".into(),
            },
            StoreError::UnsafeFile {
                store: "sqlite",
                path: "/a/b".into(),
                reason: "hard link".into(),
            },
            StoreError::Generic {
                store: "etcd",
                source: "boom".into(),
            },
        ];
        for e in all {
            let body = serde_json::to_string(&ErrorBody::of(&e)).unwrap();
            let back: ErrorBody = serde_json::from_str(&body).unwrap();
            let again = back.error.clone().into_store_error(status(&e));
            assert_eq!(format!("{e:?}"), format!("{again:?}"), "{body}");
            assert_eq!(e.to_string(), again.to_string());
            assert_eq!(e.is_retryable(), again.is_retryable());
            assert_eq!(back.message, e.to_string());
        }
    }
}
