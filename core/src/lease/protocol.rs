//! The lease rules of DESIGN §3 as pure functions over records.
//!
//! Every store runs these (or, for Redis, a Lua transcription of them) inside one atomic step: it reads the
//! namespace's records, calls a function here, and writes back the one record it returns. Keeping the rules in one
//! place is what lets the simulation and the conformance suite speak for every store at once.

use super::{
    AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord, SlotLease, SlotRecord,
};
use crate::store::StoreError;

/// The most slot bits a namespace may have (every store keeps slot numbers in 32 bits, and some in signed ones).
pub const MAX_BITS: u8 = 31;

/// What an acquisition writes and returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The record to store, or `None` when nothing changed (an idempotent retry).
    pub write: Option<SlotRecord>,
    /// What the acquirer gets.
    pub acquired: Acquired,
}

/// Checks an instance's settings against the stored namespace record, or makes the record for a new namespace.
///
/// Returns the record to keep (the stored one, or the new one to write).
pub fn check_namespace(
    namespace: &Namespace,
    stored: Option<NamespaceRecord>,
    config: &NamespaceConfig,
) -> Result<NamespaceRecord, StoreError> {
    if !(1..=MAX_BITS).contains(&config.bits) {
        return Err(StoreError::InvalidSettings {
            detail: format!("bits = {}; expected 1 to {MAX_BITS}", config.bits),
        });
    }
    let Some(stored) = stored else {
        return Ok(NamespaceRecord {
            bits: config.bits,
            tolerance_ms: config.tolerance_ms,
            not_before: 0,
        });
    };
    if stored.bits != config.bits {
        return Err(StoreError::NamespaceMismatch {
            namespace: namespace.to_string(),
            field: "bits",
            stored: u64::from(stored.bits),
            requested: u64::from(config.bits),
        });
    }
    if stored.tolerance_ms != config.tolerance_ms {
        return Err(StoreError::NamespaceMismatch {
            namespace: namespace.to_string(),
            field: "tolerance_ms",
            stored: stored.tolerance_ms,
            requested: config.tolerance_ms,
        });
    }
    Ok(stored)
}

/// Refuses a record that no sequence of protocol steps can produce: it is never read as "absent".
pub fn validate(
    store: &'static str,
    namespace: &Namespace,
    record: &SlotRecord,
    bits: u8,
) -> Result<(), StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        store,
        what: format!("slot {} of namespace {namespace}", record.slot),
        detail,
    };
    if u64::from(record.slot) >= 1u64 << bits {
        return Err(corrupt(format!(
            "slot {} is not below 2^{bits}",
            record.slot
        )));
    }
    if record.floor > record.ceiling {
        return Err(corrupt(format!(
            "floor {} is above ceiling {}",
            record.floor, record.ceiling
        )));
    }
    if record.owner.is_some() && record.next_floor < record.ceiling {
        return Err(corrupt(format!(
            "next_floor {} is below the holder's ceiling {}",
            record.next_floor, record.ceiling
        )));
    }
    if record.next_floor < record.floor {
        return Err(corrupt(format!(
            "next_floor {} is below floor {}",
            record.next_floor, record.floor
        )));
    }
    if record.fence == 0 {
        return Err(corrupt("fence is 0 on a stored record".into()));
    }
    Ok(())
}

/// Chooses a slot and grants a lease on it at store time `now`.
///
/// `slots` holds the stored records of the namespace (slots never used have none), each already
/// [validated](validate). Preference: the slot this exact owner already holds (returned unchanged); the preferred
/// slot if free; a free slot whose last owner had the same key; the lowest free slot; else `Exhausted`.
pub fn acquire(
    namespace: &Namespace,
    ns: &NamespaceRecord,
    slots: &[SlotRecord],
    request: &AcquireRequest,
    now: u64,
) -> Result<Grant, StoreError> {
    let owner = &request.owner;
    let duplicate_owner_key = slots
        .iter()
        .filter(|r| r.is_held_at(now))
        .find(|r| {
            r.owner
                .as_ref()
                .is_some_and(|o| o.key == owner.key && o.incarnation != owner.incarnation)
        })
        .map(|r| r.slot);

    if let Some(mine) = slots.iter().find(|r| r.is_owned_by(owner)) {
        let lease = mine
            .lease(namespace, now)
            .expect("owned record has an owner");
        return Ok(Grant {
            write: None,
            acquired: Acquired {
                lease,
                duplicate_owner_key,
            },
        });
    }

    let count = 1u64 << ns.bits;
    let record_of = |slot: u32| slots.iter().find(|r| r.slot == slot);
    let is_free = |slot: u32| record_of(slot).is_none_or(|r| !r.is_held_at(now));

    let preferred = request
        .preferred_slot
        .filter(|&s| u64::from(s) < count && is_free(s));
    let sticky = || {
        let mut candidates: Vec<u32> = slots
            .iter()
            .filter(|r| !r.is_held_at(now) && r.last_owner_key.as_deref() == Some(&owner.key))
            .map(|r| r.slot)
            .collect();
        candidates.sort_unstable();
        candidates.first().copied()
    };
    let lowest = || (0..count).map(|s| s as u32).find(|&s| is_free(s));

    let Some(slot) = preferred.or_else(sticky).or_else(lowest) else {
        let earliest_expiry = slots.iter().map(|r| r.expires_at).min().unwrap_or(now);
        return Err(StoreError::Exhausted {
            namespace: namespace.to_string(),
            slots: count,
            earliest_expiry,
            store_now: now,
        });
    };

    let (fence, next_floor) = match record_of(slot) {
        Some(r) => (r.fence, r.next_floor),
        None => (0, 0),
    };
    let floor = next_floor.max(ns.not_before);
    let expires_at = now.saturating_add(request.ttl_ms);
    let ceiling = expires_at.saturating_add(ns.tolerance_ms).max(floor);
    let record = SlotRecord {
        slot,
        owner: Some(owner.clone()),
        last_owner_key: Some(owner.key.clone()),
        fence: fence + 1,
        expires_at,
        floor,
        ceiling,
        next_floor: ceiling,
    };
    let lease = record
        .lease(namespace, now)
        .expect("new record has an owner");
    Ok(Grant {
        write: Some(record),
        acquired: Acquired {
            lease,
            duplicate_owner_key,
        },
    })
}

/// Extends a lease whose incarnation and fence still match the record. A replayed renewal succeeds (the fence is
/// unchanged), and so does a renewal after expiry as long as nobody took the slot.
pub fn renew(
    record: Option<&SlotRecord>,
    lease: &SlotLease,
    ttl_ms: u64,
    tolerance_ms: u64,
    now: u64,
) -> Result<(SlotRecord, SlotLease), StoreError> {
    let record = matching(record, lease)?;
    let mut next = record.clone();
    next.expires_at = record.expires_at.max(now.saturating_add(ttl_ms));
    next.ceiling = next
        .expires_at
        .saturating_add(tolerance_ms)
        .max(record.floor)
        .max(record.ceiling);
    next.next_floor = record.next_floor.max(next.ceiling);
    let lease = next
        .lease(&lease.namespace, now)
        .expect("matching record has an owner");
    Ok((next, lease))
}

/// Gives a lease back, handing the last issued timestamp to the next holder as its floor.
///
/// `last_issued` is the last millisecond the holder used (the last millisecond of its last tick), or `None` if it
/// issued nothing.
pub fn release(
    record: Option<&SlotRecord>,
    lease: &SlotLease,
    last_issued: Option<u64>,
) -> Result<SlotRecord, StoreError> {
    let record = matching(record, lease)?;
    let handed = last_issued.map_or(record.floor, |l| l.min(record.ceiling));
    Ok(SlotRecord {
        owner: None,
        fence: record.fence + 1,
        next_floor: record.floor.max(handed),
        ..record.clone()
    })
}

/// The record, if it is still this lease's: same incarnation and fence.
fn matching<'a>(
    record: Option<&'a SlotRecord>,
    lease: &SlotLease,
) -> Result<&'a SlotRecord, StoreError> {
    let lost = |reason: String| StoreError::LeaseLost {
        namespace: lease.namespace.to_string(),
        slot: lease.slot,
        reason,
    };
    let Some(record) = record else {
        return Err(lost("the slot has no record".into()));
    };
    match &record.owner {
        None => Err(lost(format!(
            "the slot was released (fence {} now, lease fence {})",
            record.fence, lease.fence
        ))),
        Some(o) if o.incarnation != lease.owner.incarnation => Err(lost(format!(
            "the slot is held by {} (incarnation {}) with fence {}",
            o.key, o.incarnation, record.fence
        ))),
        Some(_) if record.fence != lease.fence => Err(lost(format!(
            "fence is {} in the store, {} in the lease",
            record.fence, lease.fence
        ))),
        Some(_) => Ok(record),
    }
}

/// Raises a namespace's `not_before`; creates the record with `config` for a new namespace. Never lowers it.
pub fn raise_not_before(
    namespace: &Namespace,
    stored: Option<NamespaceRecord>,
    config: &NamespaceConfig,
    not_before: u64,
) -> Result<NamespaceRecord, StoreError> {
    let record = check_namespace(namespace, stored, config)?;
    if not_before < record.not_before {
        return Err(StoreError::NotBeforeLowered {
            namespace: namespace.to_string(),
            stored: record.not_before,
            requested: not_before,
        });
    }
    Ok(NamespaceRecord {
        not_before,
        ..record
    })
}
