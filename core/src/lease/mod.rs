//! The lease model: who holds which slot of a namespace, for which window of time.
//!
//! A lease is the exclusive right to issue timestamps in `(floor, ceiling]` on one slot of one namespace. The rules
//! that keep windows on a slot disjoint live in [`protocol`]; every store applies them in one atomic step.

pub mod layout_text;
mod namespace;
pub mod protocol;

pub use namespace::{Namespace, NamespaceError};

use crate::id::Layout;
use uuid::Uuid;

/// Who holds a lease: a logical key (`host:pid` by default) and a random incarnation per runtime start.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner {
    /// The logical identity, stable across restarts of the same instance.
    pub key: String,
    /// A fresh UUID v4 for each runtime: two processes never share one.
    pub incarnation: Uuid,
}

impl Owner {
    /// An owner with `key` and a new random incarnation.
    pub fn new(key: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            incarnation: Uuid::new_v4(),
        }
    }

    /// An owner read back from a store's key and incarnation fields: both set, or both empty (no owner). Anything
    /// else is refused with a description for the store's `Corrupt` error.
    pub fn from_stored(
        key: Option<String>,
        incarnation: Option<String>,
    ) -> Result<Option<Owner>, String> {
        match (key, incarnation) {
            (None, None) => Ok(None),
            (Some(key), Some(inc)) => match inc.parse() {
                Ok(incarnation) => Ok(Some(Owner { key, incarnation })),
                Err(_) => Err(format!("incarnation {inc:?} is not a UUID")),
            },
            _ => Err("owner key and incarnation must be both set or both empty".into()),
        }
    }
}

/// The settings every instance of a namespace must agree on. They are recorded by the first instance; an
/// instance with other values is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamespaceConfig {
    /// Slot bits: the namespace has `2^bits` slots.
    pub bits: u8,
    /// How far past its expiry (store milliseconds) a holder may still issue.
    pub tolerance_ms: u64,
    /// The id layout: two layouts in one namespace can repeat ids.
    pub layout: Layout,
}

/// The stored namespace record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamespaceRecord {
    /// Slot bits ("limit").
    pub bits: u8,
    /// Tolerance in milliseconds.
    pub tolerance_ms: u64,
    /// Floor of every slot that was never used, and a lower bound for every new window (written by migration,
    /// and by a runtime recovering from lost store data).
    pub not_before: u64,
    /// The id layout; `None` in a record written before layouts were recorded (the next writer records it).
    pub layout: Option<Layout>,
}

/// A granted lease, as the holder sees it. All times are store-clock milliseconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotLease {
    /// The namespace the slot belongs to.
    pub namespace: Namespace,
    /// The slot number, below `2^bits`.
    pub slot: u32,
    /// The holder.
    pub owner: Owner,
    /// Grows by one on every change of ownership; renewals keep it.
    pub fence: u64,
    /// When someone else may take the slot.
    pub expires_at: u64,
    /// Excluded lower bound of the window.
    pub floor: u64,
    /// Included upper bound of the window: `max(expires_at + tolerance, floor)`.
    pub ceiling: u64,
    /// The store's clock when it answered.
    pub store_now: u64,
}

/// One slot as a store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotRecord {
    /// The slot number.
    pub slot: u32,
    /// The holder, or `None` once released.
    pub owner: Option<Owner>,
    /// The key of the last holder, kept after release so the same instance gets its slot back ("sticky").
    pub last_owner_key: Option<String>,
    /// Grows by one on every change of ownership.
    pub fence: u64,
    /// Expiry of the current (or last) lease.
    pub expires_at: u64,
    /// Floor of the current (or last) window.
    pub floor: u64,
    /// Ceiling of the current (or last) window.
    pub ceiling: u64,
    /// The largest timestamp any holder of this slot could still have used: the next holder's floor.
    pub next_floor: u64,
}

impl SlotRecord {
    /// Whether a live holder has this slot at store time `now`.
    pub fn is_held_at(&self, now: u64) -> bool {
        self.owner.is_some() && self.expires_at >= now
    }

    /// Whether `owner` (key and incarnation) is the recorded holder.
    pub fn is_owned_by(&self, owner: &Owner) -> bool {
        self.owner.as_ref() == Some(owner)
    }

    /// The lease this record grants its holder, if it has one.
    pub fn lease(&self, namespace: &Namespace, store_now: u64) -> Option<SlotLease> {
        self.owner.as_ref().map(|owner| SlotLease {
            namespace: namespace.clone(),
            slot: self.slot,
            owner: owner.clone(),
            fence: self.fence,
            expires_at: self.expires_at,
            floor: self.floor,
            ceiling: self.ceiling,
            store_now,
        })
    }
}

/// What an acquirer asks for.
#[derive(Debug, Clone)]
pub struct AcquireRequest {
    /// Who asks.
    pub owner: Owner,
    /// Lease length in store milliseconds.
    pub ttl_ms: u64,
    /// A slot to take if it is free (a StatefulSet ordinal, say).
    pub preferred_slot: Option<u32>,
}

/// A successful acquisition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acquired {
    /// The granted lease.
    pub lease: SlotLease,
    /// Another live lease with the same owner key but another incarnation, if any: its slot.
    pub duplicate_owner_key: Option<u32>,
}
