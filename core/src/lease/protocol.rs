//! The lease rules of DESIGN §3 as pure functions over records.
//!
//! Every store runs these (or, for Redis, a Lua transcription of them) inside one atomic step: it reads the
//! namespace's records, calls a function here, and writes back the one record it returns. Keeping the rules in one
//! place is what lets the simulation and the conformance suite speak for every store at once.

use super::{
    layout_text, AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord, SlotLease,
    SlotRecord,
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
/// Returns the record to keep: the stored one, a new one for a new namespace, or the stored one with this
/// instance's layout for a record written before layouts were recorded. A store writes it back whenever it differs
/// from what it read.
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
            layout: Some(config.layout),
        });
    };
    let mismatch = |field: &'static str, stored: u64, requested: u64| {
        Err(StoreError::NamespaceMismatch {
            namespace: namespace.to_string(),
            field,
            stored,
            requested,
        })
    };
    if stored.bits != config.bits {
        return mismatch("bits", u64::from(stored.bits), u64::from(config.bits));
    }
    if stored.tolerance_ms != config.tolerance_ms {
        return mismatch("tolerance_ms", stored.tolerance_ms, config.tolerance_ms);
    }
    let Some(layout) = stored.layout else {
        // Recorded before layouts were: the first writer that knows its layout records it.
        return Ok(NamespaceRecord {
            layout: Some(config.layout),
            ..stored
        });
    };
    let theirs = layout_text::fields(&layout);
    let ours = layout_text::fields(&config.layout);
    if let Some(((field, was), (_, asked))) = theirs.into_iter().zip(ours).find(|(a, b)| a.1 != b.1)
    {
        return mismatch(field, was, asked);
    }
    Ok(stored)
}

/// The namespace record of a held lease. Its absence is certain evidence that the store lost writes: the record
/// is written before any slot of the namespace is granted and never deleted.
pub fn held_namespace(
    store: &'static str,
    lease: &SlotLease,
    stored: Option<NamespaceRecord>,
) -> Result<NamespaceRecord, StoreError> {
    stored.ok_or_else(|| namespace_missing(store, lease))
}

/// The `Regression` for a namespace record found missing while `lease` is held on it.
pub fn namespace_missing(store: &'static str, lease: &SlotLease) -> StoreError {
    StoreError::Regression {
        store,
        what: format!("the record of namespace {}", lease.namespace),
        detail: format!(
            "missing while slot {} is held with fence {} and ceiling {}",
            lease.slot, lease.fence, lease.ceiling
        ),
    }
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

/// Chooses a slot and grants a lease on it at store time `now`, deciding on every record of the namespace.
///
/// `slots` holds the stored records of the namespace (slots never used have none), each already
/// [validated](validate). Preference: the slot this exact owner already holds (returned unchanged); the preferred
/// slot if free; a free slot whose last owner had the same key; the lowest free slot; else `Exhausted`. A slot
/// whose floor lies in the future is passed over while a free slot can start sooner: the preferred and sticky
/// slots while their floor is more than a lease (`ttl_ms`) away, the lowest free slot while its floor is more
/// than the tolerance away.
pub fn acquire(
    namespace: &Namespace,
    ns: &NamespaceRecord,
    slots: &[SlotRecord],
    request: &AcquireRequest,
    now: u64,
) -> Result<Grant, StoreError> {
    let view = View {
        records: slots,
        lowest_unused: lowest_unused(slots, ns.bits),
    };
    acquire_in(namespace, ns, &view, request, now)
}

/// The lowest slot below `2^bits` that none of `slots` is for.
pub fn lowest_unused(slots: &[SlotRecord], bits: u8) -> Option<u32> {
    let mut used: Vec<u32> = slots.iter().map(|r| r.slot).collect();
    used.sort_unstable();
    used.dedup();
    let gap = used
        .iter()
        .enumerate()
        .find(|&(i, &s)| u64::from(s) != i as u64)
        .map_or(used.len() as u64, |(i, _)| i as u64);
    (gap < 1u64 << bits).then_some(gap as u32)
}

/// What an acquisition decides on: some records of a namespace and where its never-used slots begin.
///
/// A store that reads every record passes them all (what [`acquire`] does). A store that reads fewer must pass,
/// each validated, at least: every record whose owner key or last owner key is the request's; the record of the
/// preferred slot and of `lowest_unused`, if they have one; the lowest-numbered free record (released, or
/// expired before `now`), and the lowest-numbered free one whose `next_floor` is at most `now + tolerance`; and the
/// held record that expires first. The decision is then the one [`acquire`] makes on every record. A
/// `lowest_unused` that has a record, or is not the lowest slot without one, is a stale hint: [`acquire_in`]
/// refuses the first (so a grant never overwrites a record it did not read), and the second can only make it
/// pass over a slot never used.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// Records of the namespace, validated, at most one per slot, in any order.
    pub records: &'a [SlotRecord],
    /// The lowest slot that has no record, or `None` when every slot has one.
    pub lowest_unused: Option<u32>,
}

/// [`acquire`] deciding on a [`View`] of the namespace instead of every record. Fails with `Corrupt` when the
/// view's `lowest_unused` has a record: the store's hint is stale and must be recomputed.
pub fn acquire_in(
    namespace: &Namespace,
    ns: &NamespaceRecord,
    view: &View<'_>,
    request: &AcquireRequest,
    now: u64,
) -> Result<Grant, StoreError> {
    let slots = view.records;
    let owner = &request.owner;
    let count = 1u64 << ns.bits;
    let record_of = |slot: u32| slots.iter().find(|r| r.slot == slot);
    if let Some(s) = view.lowest_unused {
        if record_of(s).is_some() {
            return Err(StoreError::Corrupt {
                store: "protocol",
                what: format!("the lowest unused slot of namespace {namespace}"),
                detail: format!("slot {s} has a record"),
            });
        }
    }
    let duplicate_owner_key = slots
        .iter()
        .filter(|r| r.is_held_at(now))
        .filter(|r| {
            r.owner
                .as_ref()
                .is_some_and(|o| o.key == owner.key && o.incarnation != owner.incarnation)
        })
        .map(|r| r.slot)
        .min();

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

    let is_free = |slot: u32| record_of(slot).is_none_or(|r| !r.is_held_at(now));
    // A slot whose floor is far in the future (released by a holder whose clock ran ahead, say) makes its next
    // holder wait until then. The lowest free slot is looked for first among slots that can start within the
    // tolerance (an expired lease's floor is its ceiling, `tolerance` past its expiry); the preferred and the
    // sticky slot keep their rank while their floor is less than a lease away (a restart on a clock a little
    // behind the last one waits that little). Only when none is found does the order of DESIGN §3 apply to every
    // free slot, whatever its floor.
    let floor_of = |slot: u32| {
        record_of(slot)
            .map_or(0, |r| r.next_floor)
            .max(ns.not_before)
    };
    let soon = now.saturating_add(ns.tolerance_ms);
    let near = |s: u32| floor_of(s) <= now.saturating_add(request.ttl_ms).max(soon);
    let past = |s: u32| floor_of(s) <= soon;
    let any = |_: u32| true;
    let preferred = |ready: &dyn Fn(u32) -> bool| {
        request
            .preferred_slot
            .filter(|&s| u64::from(s) < count && is_free(s) && ready(s))
    };
    let sticky = |ready: &dyn Fn(u32) -> bool| {
        slots
            .iter()
            .filter(|r| r.last_owner_key.as_deref() == Some(&owner.key))
            .map(|r| r.slot)
            .filter(|&s| is_free(s) && ready(s))
            .min()
    };
    // The lowest free slot is the lower of the lowest free record and the lowest slot never used. A slot never
    // used has `not_before` for its floor, which is past whenever the past ones are looked for, so it is ready.
    let lowest = |ready: &dyn Fn(u32) -> bool| {
        let record = slots
            .iter()
            .map(|r| r.slot)
            .filter(|&s| u64::from(s) < count && is_free(s) && ready(s))
            .min();
        record.into_iter().chain(view.lowest_unused).min()
    };
    let chosen = preferred(&near)
        .or_else(|| sticky(&near))
        .or_else(|| (ns.not_before <= soon).then(|| lowest(&past)).flatten())
        .or_else(|| preferred(&any))
        .or_else(|| sticky(&any))
        .or_else(|| lowest(&any));

    let Some(slot) = chosen else {
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
    store: &'static str,
    record: Option<&SlotRecord>,
    lease: &SlotLease,
    ttl_ms: u64,
    tolerance_ms: u64,
    now: u64,
) -> Result<(SlotRecord, SlotLease), StoreError> {
    let record = matching(store, record, lease)?;
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
    store: &'static str,
    record: Option<&SlotRecord>,
    lease: &SlotLease,
    last_issued: Option<u64>,
) -> Result<SlotRecord, StoreError> {
    let record = matching(store, record, lease)?;
    let handed = last_issued.map_or(record.floor, |l| l.min(record.ceiling));
    Ok(SlotRecord {
        owner: None,
        fence: record.fence + 1,
        next_floor: record.floor.max(handed),
        ..record.clone()
    })
}

/// The record, if it is still this lease's: same incarnation and fence.
///
/// A record that no later protocol step could have made from the one that granted `lease` is certain evidence
/// that the store lost writes, and is reported as a `Regression`, not as an ordinary lost lease: the slot record
/// missing, a fence below the lease's, the lease's own fence under another owner (every change of owner raises
/// the fence), or at the lease's fence a floor other than the lease's or a ceiling or `next_floor` below its
/// ceiling (only the holder's own release can lower them, and it raises the fence).
fn matching<'a>(
    store: &'static str,
    record: Option<&'a SlotRecord>,
    lease: &SlotLease,
) -> Result<&'a SlotRecord, StoreError> {
    let regression = |detail: String| StoreError::Regression {
        store,
        what: format!("slot {} of namespace {}", lease.slot, lease.namespace),
        detail,
    };
    let lost = |reason: String| StoreError::LeaseLost {
        namespace: lease.namespace.to_string(),
        slot: lease.slot,
        reason,
    };
    let Some(record) = record else {
        return Err(regression(format!(
            "the slot has no record, but a lease with fence {} and ceiling {} is held on it",
            lease.fence, lease.ceiling
        )));
    };
    let mine = record.is_owned_by(&lease.owner);
    if record.fence < lease.fence || (record.fence == lease.fence && !mine) {
        return Err(regression(format!(
            "fence is {} in the store ({}), but a lease with fence {} is held on it",
            record.fence,
            record
                .owner
                .as_ref()
                .map_or_else(|| "released".to_owned(), |o| format!("held by {}", o.key)),
            lease.fence
        )));
    }
    // Past this lease's fence the holder's own release may have lowered `next_floor` to its last timestamp.
    if record.fence == lease.fence
        && (record.floor != lease.floor
            || record.ceiling < lease.ceiling
            || record.next_floor < lease.ceiling)
    {
        return Err(regression(format!(
            "the store has floor {}, ceiling {}, next_floor {} at fence {}, below the lease's floor {}, ceiling {} at fence {}",
            record.floor, record.ceiling, record.next_floor, record.fence, lease.floor, lease.ceiling, lease.fence
        )));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::Owner;
    use proptest::prelude::*;
    use uuid::Uuid;

    const KEYS: [&str; 3] = ["a", "b", "c"];
    const NOW: u64 = 1_000;

    fn incarnation(i: u8) -> Uuid {
        Uuid::from_u128(u128::from(i) + 1)
    }

    /// A record that `validate` accepts, around `NOW`: held or expired or released, floors before or after now.
    fn record() -> impl Strategy<Value = SlotRecord> {
        (
            proptest::option::of((0..KEYS.len(), 0u8..3)),
            proptest::option::of(0..KEYS.len()),
            1u64..5,
            900u64..1_100,
            800u64..1_400,
            0u64..300,
            0u64..300,
        )
            .prop_map(|(owner, last, fence, expires_at, floor, span, extra)| {
                let ceiling = floor + span;
                SlotRecord {
                    slot: 0,
                    owner: owner.map(|(k, i)| Owner {
                        key: KEYS[k].into(),
                        incarnation: incarnation(i),
                    }),
                    last_owner_key: last.map(|k| KEYS[k].into()),
                    fence,
                    expires_at,
                    floor,
                    ceiling,
                    next_floor: ceiling + extra,
                }
            })
    }

    /// A namespace of `2^bits` slots, some with records, and a request.
    fn case() -> impl Strategy<Value = (NamespaceRecord, Vec<SlotRecord>, AcquireRequest)> {
        (1u8..6).prop_flat_map(|bits| {
            let count = 1usize << bits;
            (
                Just(bits),
                proptest::collection::vec(proptest::option::of(record()), count),
                0u64..1_300,
                0u64..200,
                0..KEYS.len(),
                0u8..3,
                proptest::option::of(0u32..40),
                1u64..400,
            )
                .prop_map(
                    |(
                        bits,
                        records,
                        not_before,
                        tolerance_ms,
                        key,
                        inc,
                        preferred_slot,
                        ttl_ms,
                    )| {
                        let slots = records
                            .into_iter()
                            .enumerate()
                            .filter_map(|(s, r)| {
                                r.map(|r| SlotRecord {
                                    slot: s as u32,
                                    ..r
                                })
                            })
                            .collect();
                        let ns = NamespaceRecord {
                            bits,
                            tolerance_ms,
                            not_before,
                            layout: None,
                        };
                        let request = AcquireRequest {
                            owner: Owner {
                                key: KEYS[key].into(),
                                incarnation: incarnation(inc),
                            },
                            ttl_ms,
                            preferred_slot,
                        };
                        (ns, slots, request)
                    },
                )
        })
    }

    /// What a store that fetches candidates with indexed queries passes (the records [`View`] requires, and only
    /// those), as the SQL stores do.
    fn candidates(
        ns: &NamespaceRecord,
        slots: &[SlotRecord],
        request: &AcquireRequest,
    ) -> Vec<SlotRecord> {
        let key = Some(request.owner.key.as_str());
        let unused = lowest_unused(slots, ns.bits);
        let free = |r: &&SlotRecord| !r.is_held_at(NOW);
        let soon = NOW + ns.tolerance_ms;
        let mut picked: Vec<&SlotRecord> = slots
            .iter()
            .filter(|r| {
                r.owner.as_ref().map(|o| o.key.as_str()) == key
                    || r.last_owner_key.as_deref() == key
                    || Some(r.slot) == request.preferred_slot
                    || Some(r.slot) == unused
            })
            .collect();
        picked.extend(slots.iter().filter(free).min_by_key(|r| r.slot));
        picked.extend(
            slots
                .iter()
                .filter(free)
                .filter(|r| r.next_floor <= soon)
                .min_by_key(|r| r.slot),
        );
        picked.extend(
            slots
                .iter()
                .filter(|r| r.is_held_at(NOW))
                .min_by_key(|r| r.expires_at),
        );
        picked.sort_by_key(|r| r.slot);
        picked.dedup_by_key(|r| r.slot);
        picked.into_iter().cloned().collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4_000))]

        /// Deciding on the candidates an indexed store fetches gives what deciding on every record gives.
        #[test]
        fn a_view_of_candidates_decides_as_every_record_does((ns, slots, request) in case()) {
            let namespace = Namespace::new("n").unwrap();
            let every = acquire(&namespace, &ns, &slots, &request, NOW);
            let records = candidates(&ns, &slots, &request);
            let view = View { records: &records, lowest_unused: lowest_unused(&slots, ns.bits) };
            let decided = acquire_in(&namespace, &ns, &view, &request, NOW);
            prop_assert_eq!(format!("{decided:?}"), format!("{every:?}"));
        }
    }

    #[test]
    fn lowest_unused_is_the_first_gap() {
        let at = |slot| SlotRecord {
            slot,
            owner: None,
            last_owner_key: None,
            fence: 1,
            expires_at: 0,
            floor: 0,
            ceiling: 0,
            next_floor: 0,
        };
        assert_eq!(lowest_unused(&[], 2), Some(0));
        assert_eq!(lowest_unused(&[at(1), at(0), at(3)], 2), Some(2));
        assert_eq!(lowest_unused(&[at(0), at(1), at(2), at(3)], 2), None);
        assert_eq!(lowest_unused(&[at(0), at(2)], 1), Some(1));
    }

    #[test]
    fn a_lowest_unused_slot_that_has_a_record_is_refused() {
        let namespace = Namespace::new("n").unwrap();
        let ns = NamespaceRecord {
            bits: 2,
            tolerance_ms: 10,
            not_before: 0,
            layout: None,
        };
        let taken = SlotRecord {
            slot: 0,
            owner: Some(Owner::new("x")),
            last_owner_key: Some("x".into()),
            fence: 1,
            expires_at: NOW + 100,
            floor: 0,
            ceiling: NOW + 110,
            next_floor: NOW + 110,
        };
        let request = AcquireRequest {
            owner: Owner::new("y"),
            ttl_ms: 100,
            preferred_slot: None,
        };
        let records = [taken];
        let view = View {
            records: &records,
            lowest_unused: Some(0),
        };
        let refused = acquire_in(&namespace, &ns, &view, &request, NOW);
        assert!(
            matches!(refused, Err(StoreError::Corrupt { .. })),
            "{refused:?}"
        );
    }
}
