//! The store conformance suite (cargo feature `conformance`): every case is written once here and run against every
//! store, cosid's own and any other implementation of [`LeaseStore`] (a user's `Arc<dyn LeaseStore>`), as
//! `object_store` exports its integration suite. The cases are public functions named after what they check.
//!
//! # Plugging a store in
//!
//! A store's test file implements [`Target`] and expands [`conformance_tests!`] with an expression that makes a
//! fresh target (or `None`, after printing why the store is skipped). The expansion is one `#[tokio::test]` per case:
//! the test crate needs `tokio` with the `macros` and `rt-multi-thread` features, and `cosid` with `conformance`.
//!
//! ```ignore
//! use cosid::conformance::{self, Target};
//!
//! struct Redis { store: Arc<RedisStore>, raw: redis::Client }
//!
//! impl Target for Redis {
//!     fn store(&self) -> Arc<dyn LeaseStore> { self.store.clone() }
//!     async fn put_raw(&self, namespace: &Namespace, record: &SlotRecord) {
//!         // HSET the record's fields with the store's own raw client, bypassing every check.
//!     }
//! }
//!
//! async fn target() -> Option<Redis> {
//!     let url = conformance::server_url("COSID_TEST_REDIS_URL", ".ci/services/redis.sh")?;
//!     Some(Redis { ... })
//! }
//!
//! conformance::conformance_tests!(target());
//! ```
//!
//! A network store also expands [`runtime_tests!`]: the cases that run a whole `Runtime` on the server (through a
//! store URL, so for cosid's own stores).
//!
//! Each case gets its own namespace, named after the case plus a random UUID, so a store needs no cleanup between
//! cases or runs, and network stores can share one database.
//!
//! # Time
//!
//! Cases that need a lease to expire use a short ttl ([`SHORT_TTL_MS`]) and then wait until the *store's* clock is
//! past the expiry: stores on a manual clock (memory, SQLite) have it moved at once; a server's clock (Redis `TIME`,
//! PostgreSQL `clock_timestamp()`, ...) is polled through `inspect` with real sleeps, so these cases take a few
//! hundred milliseconds on a network store. Nothing asserts on elapsed time.
#![allow(missing_docs)]

use crate::clock::{Clock, ManualClock};
use crate::lease::{
    AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord, Owner, SlotLease,
    SlotRecord,
};
use crate::store::{Inspection, LeaseStore, StoreError};
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The ttl of cases that wait for an expiry: short, so a server's clock passes it quickly.
pub const SHORT_TTL_MS: u64 = 300;

/// The ttl of cases that must not see an expiry.
pub const LONG_TTL_MS: u64 = 120_000;

/// Store time at the start of every case on a manual clock (2023-11-14).
pub const T0: u64 = 1_700_000_000_000;

/// The namespace settings of every case: 32 slots, 1 s tolerance.
pub const CONFIG: NamespaceConfig = NamespaceConfig {
    bits: 5,
    tolerance_ms: 1_000,
    layout: crate::Layout::millis(),
};

/// One store under test.
pub trait Target: Send + Sync + 'static {
    /// The store. Every call may return the same instance.
    fn store(&self) -> Arc<dyn LeaseStore>;

    /// Writes `record` into slot `record.slot` of `namespace` as it is, in the store's own raw form, with the
    /// store's own client (an `HSET`, an SQL `UPDATE`, ...) and none of its checks: the suite uses it to plant
    /// corrupt records.
    fn put_raw(
        &self,
        namespace: &Namespace,
        record: &SlotRecord,
    ) -> impl Future<Output = ()> + Send;

    /// Writes the namespace record as versions that did not record the layout wrote it: `bits`, `tolerance_ms`
    /// and `not_before` of `record`, and no layout at all, with the store's own client.
    fn put_old_namespace(
        &self,
        namespace: &Namespace,
        record: &NamespaceRecord,
    ) -> impl Future<Output = ()> + Send;

    /// The owner as the store keeps it for a client that acquired as `owner`: the same, but for a store behind
    /// `cosid serve`, which keeps a one-way function of the incarnation (a lease is its holder's capability, so
    /// nothing the server shows may be enough to renew or release it).
    fn stored_owner(&self, owner: &Owner) -> Owner {
        owner.clone()
    }

    /// The store's clock, when the test controls it; `None` for a server's clock, which cases wait for in real
    /// time.
    fn manual_clock(&self) -> Option<&ManualClock> {
        None
    }
}

/// The URL in `var`, or `None` after printing why the tests that need it are skipped.
pub fn server_url(var: &str, script: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!(
                "skipped: {var} is not set (eval \"$(bash {script})\" starts a server and sets it)"
            );
            None
        }
    }
}

/// Expands to one `#[tokio::test]` per conformance case, each on a fresh target made by `$make` (an expression of
/// type `impl Future<Output = Option<impl Target>>`; `None` skips the case).
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        $crate::conformance::conformance_tests!(@cases $make;
            first_acquire_sets_fence_floor_expiry_ceiling_and_next_floor,
            inspecting_an_unknown_namespace_finds_nothing,
            acquire_is_idempotent_for_the_same_key_and_incarnation,
            slot_choice_is_held_then_preferred_then_sticky_then_lowest,
            a_live_lease_with_the_same_key_is_never_taken_over,
            thirty_two_concurrent_acquirers_fill_five_bits_and_the_next_is_exhausted,
            an_expired_lease_is_taken_over_with_a_higher_fence_and_floor,
            expiry_is_strictly_after_expires_at,
            renewal_extends_keeps_the_fence_and_a_replay_succeeds,
            renewal_after_expiry_succeeds_while_nobody_took_the_slot,
            stale_renewal_and_release_after_a_takeover_are_lost,
            release_hands_last_issued_to_the_next_holder,
            release_without_ids_or_past_the_ceiling_is_bounded_by_the_window,
            renewal_and_release_after_release_are_lost,
            renewal_and_release_of_a_slot_never_used_are_regressions,
            records_below_a_held_lease_are_regressions_and_left_alone,
            a_free_slot_whose_floor_is_far_ahead_is_taken_last,
            a_namespace_mismatch_is_refused_naming_both_values,
            a_second_layout_in_one_namespace_is_refused_naming_both_values,
            a_namespace_recorded_without_a_layout_is_upgraded_by_the_first_writer,
            corrupt_records_are_refused_and_left_alone,
            raise_not_before_raises_the_floor_of_unused_slots_and_never_lowers,
            names_that_differ_in_special_characters_never_share_records,
            injection_attempts_are_plain_names_and_keys,
        );
    };
    (@cases $make:expr; $($case:ident),+ $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let Some(target) = $make.await else {
                    return;
                };
                $crate::conformance::$case(&target).await;
            }
        )+
    };
}
pub use crate::conformance_tests;

// ---------------------------------------------------------------------------------------------------------------
// Helpers

/// A namespace no other case or run uses.
pub fn fresh(label: &str) -> Namespace {
    Namespace::new(format!("conf-{label}-{}", uuid::Uuid::new_v4())).unwrap()
}

pub fn request(owner: &Owner, ttl_ms: u64) -> AcquireRequest {
    AcquireRequest {
        owner: owner.clone(),
        ttl_ms,
        preferred_slot: None,
    }
}

pub fn preferring(owner: &Owner, slot: u32) -> AcquireRequest {
    AcquireRequest {
        preferred_slot: Some(slot),
        ..request(owner, LONG_TTL_MS)
    }
}

pub async fn acquire(t: &impl Target, ns: &Namespace, owner: &Owner, ttl_ms: u64) -> Acquired {
    t.store()
        .acquire(ns, &CONFIG, &request(owner, ttl_ms))
        .await
        .unwrap_or_else(|e| panic!("acquire by {} in {ns:?}: {e}", owner.key))
}

pub async fn inspect(t: &impl Target, ns: &Namespace) -> Inspection {
    t.store()
        .inspect(ns)
        .await
        .unwrap_or_else(|e| panic!("inspect {ns:?}: {e}"))
}

pub async fn record(t: &impl Target, ns: &Namespace, slot: u32) -> SlotRecord {
    inspect(t, ns)
        .await
        .slots
        .into_iter()
        .find(|r| r.slot == slot)
        .unwrap_or_else(|| panic!("no record for slot {slot} of {ns:?}"))
}

/// Waits until the store's clock is past `t` (store ms): moves a manual clock, or polls a server's clock.
pub async fn wait_past(target: &impl Target, ns: &Namespace, t: u64) {
    if let Some(clock) = target.manual_clock() {
        if clock.now_ms() <= t {
            clock.set(t + 1);
        }
        return;
    }
    // Bounded: a store whose clock does not move 10 s past the expected point is broken, not slow.
    for _ in 0..200 {
        let now = inspect(target, ns).await.store_now;
        if now > t {
            return;
        }
        tokio::time::sleep(Duration::from_millis((t + 1 - now).clamp(5, 50))).await;
    }
    panic!("the store clock did not pass {t} within 10 s of polling");
}

#[track_caller]
pub fn assert_lost<T: std::fmt::Debug>(r: Result<T, StoreError>, slot: u32, what: &str) {
    match r {
        Err(StoreError::LeaseLost {
            slot: s, reason, ..
        }) => {
            assert_eq!(s, slot, "{what}: LeaseLost names slot {s}, expected {slot}");
            assert!(!reason.is_empty(), "{what}: LeaseLost without a reason");
        }
        other => panic!("{what}: expected LeaseLost on slot {slot}, got {other:?}"),
    }
}

/// A `Regression` naming the slot (or the namespace record) in `what`.
#[track_caller]
pub fn assert_regression<T: std::fmt::Debug>(
    r: Result<T, StoreError>,
    what_names: &str,
    what: &str,
) {
    match r {
        Err(StoreError::Regression {
            what: w, detail, ..
        }) => {
            assert!(
                w.contains(what_names),
                "{what}: Regression names {w:?}, expected {what_names:?}"
            );
            assert!(!detail.is_empty(), "{what}: Regression without a detail");
        }
        other => panic!("{what}: expected Regression on {what_names}, got {other:?}"),
    }
}

#[track_caller]
pub fn assert_corrupt<T: std::fmt::Debug>(r: Result<T, StoreError>, detail: &str, what: &str) {
    match r {
        Err(StoreError::Corrupt {
            detail: d, what: w, ..
        }) => {
            assert!(
                d.contains(detail),
                "{what}: Corrupt detail {d:?} does not mention {detail:?} (record {w})"
            )
        }
        other => panic!("{what}: expected Corrupt ({detail}), got {other:?}"),
    }
}

/// The lease's window and expiry as the protocol defines them at store time `store_now`.
fn assert_fresh_window(lease: &SlotLease, ttl_ms: u64, floor: u64) {
    assert_eq!(
        lease.expires_at,
        lease.store_now + ttl_ms,
        "expires_at = now + ttl: {lease:?}"
    );
    assert_eq!(lease.floor, floor, "floor: {lease:?}");
    assert_eq!(
        lease.ceiling,
        (lease.expires_at + CONFIG.tolerance_ms).max(floor),
        "ceiling = max(expires_at + tolerance, floor): {lease:?}"
    );
}

// ---------------------------------------------------------------------------------------------------------------
// Cases: DESIGN §3, one rule (or one row of its tables) each.

pub async fn first_acquire_sets_fence_floor_expiry_ceiling_and_next_floor(t: &impl Target) {
    let ns = fresh("first");
    let a = Owner::new("a");
    let got = acquire(t, &ns, &a, LONG_TTL_MS).await;
    let lease = &got.lease;
    assert_eq!(got.duplicate_owner_key, None);
    assert_eq!(lease.namespace, ns);
    assert_eq!((lease.slot, lease.fence), (0, 1), "{lease:?}");
    assert_eq!(lease.owner, a);
    assert_fresh_window(lease, LONG_TTL_MS, 0);
    assert!(
        lease.store_now > 1_500_000_000_000,
        "store_now is Unix ms: {lease:?}"
    );

    let seen = inspect(t, &ns).await;
    assert_eq!(
        seen.namespace,
        Some(NamespaceRecord {
            bits: CONFIG.bits,
            tolerance_ms: CONFIG.tolerance_ms,
            not_before: 0,
            layout: Some(CONFIG.layout),
        })
    );
    assert_eq!(
        seen.slots,
        vec![SlotRecord {
            slot: 0,
            owner: Some(t.stored_owner(&a)),
            last_owner_key: Some("a".into()),
            fence: 1,
            expires_at: lease.expires_at,
            floor: 0,
            ceiling: lease.ceiling,
            next_floor: lease.ceiling,
        }]
    );
    assert!(seen.store_now >= lease.store_now);
}

pub async fn inspecting_an_unknown_namespace_finds_nothing(t: &impl Target) {
    let seen = inspect(t, &fresh("unknown")).await;
    assert_eq!(seen.namespace, None);
    assert!(seen.slots.is_empty(), "{seen:?}");
    assert!(seen.store_now > 0);
}

pub async fn acquire_is_idempotent_for_the_same_key_and_incarnation(t: &impl Target) {
    let ns = fresh("idempotent");
    let a = Owner::new("a");
    let first = acquire(t, &ns, &a, LONG_TTL_MS).await.lease;
    let retry = acquire(t, &ns, &a, LONG_TTL_MS).await;
    assert_eq!(
        retry.duplicate_owner_key, None,
        "an owner is not its own duplicate"
    );
    let again = retry.lease;
    assert_eq!(
        (
            again.slot,
            again.fence,
            again.expires_at,
            again.floor,
            again.ceiling
        ),
        (
            first.slot,
            first.fence,
            first.expires_at,
            first.floor,
            first.ceiling
        ),
        "a retry returns the same lease, unchanged"
    );
    assert_eq!(record(t, &ns, 0).await.fence, 1, "a retry writes nothing");
    let b = acquire(t, &ns, &Owner::new("b"), LONG_TTL_MS).await.lease;
    assert_eq!(b.slot, 1, "another owner gets another slot");
}

pub async fn slot_choice_is_held_then_preferred_then_sticky_then_lowest(t: &impl Target) {
    let ns = fresh("choice");
    let store = t.store();
    let get = |req: AcquireRequest| {
        let store = store.clone();
        let ns = ns.clone();
        async move { store.acquire(&ns, &CONFIG, &req).await.unwrap().lease }
    };
    // The preferred slot when it is free.
    let p = Owner::new("p");
    assert_eq!(get(preferring(&p, 7)).await.slot, 7);
    // A held preferred slot falls back to the lowest free one; so does one past 2^bits.
    let q = Owner::new("q");
    let q_lease = get(preferring(&q, 7)).await;
    assert_eq!(q_lease.slot, 0);
    let r = Owner::new("r");
    assert_eq!(get(preferring(&r, 40)).await.slot, 1);
    let s1 = Owner::new("sticky");
    let s1_lease = get(request(&s1, LONG_TTL_MS)).await;
    assert_eq!(s1_lease.slot, 2);
    // The slot this exact owner holds comes before its preference.
    assert_eq!(get(preferring(&p, 9)).await.slot, 7);

    // Free slots 0 (last owner q) and 2 (last owner "sticky"): a new incarnation of "sticky" gets 2 back.
    store.release(&q_lease, None).await.unwrap();
    store.release(&s1_lease, None).await.unwrap();
    let s2 = Owner::new("sticky");
    let s2_lease = get(request(&s2, LONG_TTL_MS)).await;
    assert_eq!(s2_lease.slot, 2, "sticky before lowest");
    // Anyone else gets the lowest free slot.
    let u = Owner::new("u");
    assert_eq!(get(request(&u, LONG_TTL_MS)).await.slot, 0, "lowest free");
    // A preferred free slot comes before a sticky one.
    let s3 = Owner::new("sticky");
    store.release(&s2_lease, None).await.unwrap();
    assert_eq!(
        get(preferring(&s3, 20)).await.slot,
        20,
        "preferred before sticky"
    );
}

/// The lease a slot's record grants its holder now.
pub async fn record_lease(t: &impl Target, ns: &Namespace, slot: u32) -> SlotLease {
    let seen = inspect(t, ns).await;
    seen.slots
        .iter()
        .find(|r| r.slot == slot)
        .and_then(|r| r.lease(ns, seen.store_now))
        .unwrap_or_else(|| panic!("slot {slot} of {ns:?} has no holder"))
}

pub async fn a_live_lease_with_the_same_key_is_never_taken_over(t: &impl Target) {
    let ns = fresh("dupkey");
    let first = Owner::new("web-1");
    let a = acquire(t, &ns, &first, LONG_TTL_MS).await;
    let second = Owner::new("web-1");
    let b = acquire(t, &ns, &second, LONG_TTL_MS).await;
    assert_eq!(a.lease.slot, 0);
    assert_eq!(b.lease.slot, 1, "the second incarnation takes another slot");
    assert_eq!(
        b.duplicate_owner_key,
        Some(0),
        "and is told which slot its twin holds"
    );
    t.store()
        .renew(&a.lease, LONG_TTL_MS, CONFIG.tolerance_ms)
        .await
        .expect("the first incarnation keeps its lease");
}

pub async fn thirty_two_concurrent_acquirers_fill_five_bits_and_the_next_is_exhausted(
    t: &impl Target,
) {
    let ns = fresh("exhaust");
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let store = t.store();
            let ns = ns.clone();
            tokio::spawn(async move {
                let owner = Owner::new(format!("worker-{i}"));
                store
                    .acquire(&ns, &CONFIG, &request(&owner, LONG_TTL_MS))
                    .await
                    .unwrap_or_else(|e| panic!("acquirer {i}: {e}"))
                    .lease
            })
        })
        .collect();
    let mut leases = Vec::new();
    for task in tasks {
        leases.push(task.await.unwrap());
    }
    let slots: BTreeSet<u32> = leases.iter().map(|l| l.slot).collect();
    assert_eq!(
        slots,
        (0..32).collect(),
        "32 acquirers, 32 distinct slots 0..31"
    );
    let earliest = leases.iter().map(|l| l.expires_at).min().unwrap();
    match t
        .store()
        .acquire(
            &ns,
            &CONFIG,
            &request(&Owner::new("one-too-many"), LONG_TTL_MS),
        )
        .await
    {
        Err(StoreError::Exhausted {
            namespace,
            slots,
            earliest_expiry,
            store_now,
        }) => {
            assert_eq!(namespace, ns.as_str());
            assert_eq!(slots, 32);
            assert_eq!(
                earliest_expiry, earliest,
                "the earliest expiry among the holders"
            );
            assert!(store_now < earliest_expiry);
        }
        other => panic!("the 33rd acquirer: expected Exhausted, got {other:?}"),
    }
    assert_eq!(
        inspect(t, &ns).await.slots.len(),
        32,
        "exhaustion writes nothing"
    );
}

pub async fn an_expired_lease_is_taken_over_with_a_higher_fence_and_floor(t: &impl Target) {
    let ns = fresh("takeover");
    let a = acquire(t, &ns, &Owner::new("a"), SHORT_TTL_MS).await.lease;
    let b = acquire(t, &ns, &Owner::new("b"), LONG_TTL_MS).await.lease;
    assert_eq!(b.slot, 1, "a live lease is not taken");
    wait_past(t, &ns, a.expires_at).await;
    let c = acquire(t, &ns, &Owner::new("c"), LONG_TTL_MS).await.lease;
    assert_eq!(c.slot, a.slot, "the expired slot is the lowest free one");
    assert_eq!(c.fence, a.fence + 1);
    assert!(c.store_now > a.expires_at);
    assert_fresh_window(&c, LONG_TTL_MS, a.ceiling);
    assert!(c.floor >= a.ceiling, "windows on a slot never overlap");
}

pub async fn expiry_is_strictly_after_expires_at(t: &impl Target) {
    let Some(clock) = t.manual_clock() else {
        eprintln!("skipped: the exact expiry boundary needs a store clock the test controls");
        return;
    };
    let ns = fresh("boundary");
    let a = acquire(t, &ns, &Owner::new("a"), SHORT_TTL_MS).await.lease;
    clock.set(a.expires_at);
    let b = acquire(t, &ns, &Owner::new("b"), LONG_TTL_MS).await.lease;
    assert_eq!(b.slot, 1, "at expires_at the lease is still held");
    clock.set(a.expires_at + 1);
    let c = acquire(t, &ns, &Owner::new("c"), LONG_TTL_MS).await.lease;
    assert_eq!(c.slot, 0, "one millisecond later it is free");
}

pub async fn renewal_extends_keeps_the_fence_and_a_replay_succeeds(t: &impl Target) {
    let ns = fresh("renew");
    let store = t.store();
    let a = acquire(t, &ns, &Owner::new("a"), LONG_TTL_MS).await.lease;
    let renewed = store
        .renew(&a, LONG_TTL_MS, CONFIG.tolerance_ms)
        .await
        .unwrap();
    assert_eq!(
        (renewed.slot, renewed.fence, renewed.floor),
        (a.slot, a.fence, a.floor)
    );
    assert_eq!(
        renewed.expires_at,
        a.expires_at.max(renewed.store_now + LONG_TTL_MS)
    );
    assert_eq!(renewed.ceiling, renewed.expires_at + CONFIG.tolerance_ms);
    // The same renewal again (a reply lost, a retry): accepted, fence unchanged.
    let replayed = store
        .renew(&a, LONG_TTL_MS, CONFIG.tolerance_ms)
        .await
        .unwrap();
    assert_eq!(replayed.fence, a.fence);
    assert!(replayed.expires_at >= renewed.expires_at);
    // A shorter ttl never shortens the lease.
    let shorter = store.renew(&a, 1, CONFIG.tolerance_ms).await.unwrap();
    assert_eq!(
        shorter.expires_at, replayed.expires_at,
        "expires_at = max(expires_at, now + ttl)"
    );
    assert_eq!(shorter.ceiling, replayed.ceiling);
    let r = record(t, &ns, a.slot).await;
    assert_eq!(
        (r.fence, r.expires_at, r.ceiling),
        (a.fence, shorter.expires_at, shorter.ceiling)
    );
    assert_eq!(r.next_floor, r.ceiling, "next_floor follows the ceiling");
}

pub async fn renewal_after_expiry_succeeds_while_nobody_took_the_slot(t: &impl Target) {
    let ns = fresh("late-renew");
    let a = acquire(t, &ns, &Owner::new("a"), SHORT_TTL_MS).await.lease;
    wait_past(t, &ns, a.expires_at).await;
    let renewed = t
        .store()
        .renew(&a, SHORT_TTL_MS, CONFIG.tolerance_ms)
        .await
        .expect("nobody took the slot: the late renewal succeeds");
    assert_eq!(renewed.fence, a.fence);
    assert!(renewed.expires_at > a.expires_at);
    assert_eq!(renewed.expires_at, renewed.store_now + SHORT_TTL_MS);
}

pub async fn stale_renewal_and_release_after_a_takeover_are_lost(t: &impl Target) {
    let ns = fresh("stale");
    let store = t.store();
    let a = acquire(t, &ns, &Owner::new("a"), SHORT_TTL_MS).await.lease;
    wait_past(t, &ns, a.expires_at).await;
    let b = acquire(t, &ns, &Owner::new("b"), LONG_TTL_MS).await.lease;
    assert_eq!(b.slot, a.slot);
    let before = record(t, &ns, a.slot).await;
    assert_lost(
        store.renew(&a, LONG_TTL_MS, CONFIG.tolerance_ms).await,
        a.slot,
        "stale renew",
    );
    assert_lost(
        store.release(&a, Some(a.ceiling)).await,
        a.slot,
        "stale release",
    );
    assert_eq!(
        record(t, &ns, a.slot).await,
        before,
        "rejected calls change nothing"
    );
    store
        .renew(&b, LONG_TTL_MS, CONFIG.tolerance_ms)
        .await
        .expect("the new holder is untouched");
}

pub async fn release_hands_last_issued_to_the_next_holder(t: &impl Target) {
    let ns = fresh("handover");
    let store = t.store();
    let a = acquire(t, &ns, &Owner::new("a"), LONG_TTL_MS).await.lease;
    // An id right after the grant: a floor the next acquirer can start from at once, so the slot stays the lowest.
    let last = a.store_now + 1;
    assert!(last > a.floor);
    store.release(&a, Some(last)).await.unwrap();
    let r = record(t, &ns, a.slot).await;
    assert_eq!(r.owner, None, "released");
    assert_eq!(
        r.last_owner_key.as_deref(),
        Some("a"),
        "the last owner's key stays (sticky)"
    );
    assert_eq!(r.fence, a.fence + 1, "release raises the fence");
    assert_eq!(
        r.next_floor, last,
        "next_floor = max(floor, min(last_issued, ceiling))"
    );
    let b = acquire(t, &ns, &Owner::new("b"), LONG_TTL_MS).await.lease;
    assert_eq!(b.slot, a.slot, "a released slot is free");
    assert_eq!(
        b.floor, last,
        "the next holder starts right after the last issued id"
    );
    assert_eq!(b.fence, a.fence + 2);
}

pub async fn release_without_ids_or_past_the_ceiling_is_bounded_by_the_window(t: &impl Target) {
    let ns = fresh("handover-bounds");
    let store = t.store();
    let a = acquire(t, &ns, &Owner::new("a"), LONG_TTL_MS).await.lease;
    let b = acquire(t, &ns, &Owner::new("b"), LONG_TTL_MS).await.lease;
    store.release(&a, None).await.unwrap();
    assert_eq!(
        record(t, &ns, a.slot).await.next_floor,
        a.floor,
        "nothing issued: the floor"
    );
    store
        .release(&b, Some(b.ceiling + 1_000_000))
        .await
        .unwrap();
    assert_eq!(
        record(t, &ns, b.slot).await.next_floor,
        b.ceiling,
        "capped at the ceiling"
    );
}

pub async fn renewal_and_release_after_release_are_lost(t: &impl Target) {
    let ns = fresh("released");
    let store = t.store();
    let a = acquire(t, &ns, &Owner::new("a"), LONG_TTL_MS).await.lease;
    store.release(&a, None).await.unwrap();
    let before = record(t, &ns, a.slot).await;
    assert_lost(store.release(&a, None).await, a.slot, "second release");
    assert_lost(
        store.renew(&a, LONG_TTL_MS, CONFIG.tolerance_ms).await,
        a.slot,
        "renew after release",
    );
    assert_eq!(record(t, &ns, a.slot).await, before);
}

/// A lease on a slot that has no record can only mean the store lost the record: every grant writes one.
pub async fn renewal_and_release_of_a_slot_never_used_are_regressions(t: &impl Target) {
    let ns = fresh("never-used");
    let store = t.store();
    let a = acquire(t, &ns, &Owner::new("a"), LONG_TTL_MS).await.lease;
    let ghost = SlotLease {
        slot: 3,
        ..a.clone()
    };
    assert_regression(
        store.renew(&ghost, LONG_TTL_MS, CONFIG.tolerance_ms).await,
        "slot 3",
        "renew of slot 3",
    );
    assert_regression(
        store.release(&ghost, None).await,
        "slot 3",
        "release of slot 3",
    );
    assert_eq!(
        inspect(t, &ns).await.slots.len(),
        1,
        "no record appears for slot 3"
    );
}

/// Records that no protocol step could make from the one that granted a held lease (a fence below it, its own
/// fence under another owner or released, its window lowered) mean the store lost or rolled back writes.
pub async fn records_below_a_held_lease_are_regressions_and_left_alone(t: &impl Target) {
    let ns = fresh("below");
    let store = t.store();
    let owner = Owner::new("a");
    let first = acquire(t, &ns, &owner, LONG_TTL_MS).await.lease;
    store.release(&first, Some(first.floor)).await.unwrap();
    let held = acquire(t, &ns, &owner, LONG_TTL_MS).await.lease;
    assert_eq!((held.slot, held.fence), (first.slot, 3));
    let good = record(t, &ns, held.slot).await;
    let other = Owner::new("b");
    let rolled_back: [(&str, SlotRecord); 4] = [
        (
            "an older fence held by another owner",
            SlotRecord {
                owner: Some(other.clone()),
                last_owner_key: Some(other.key.clone()),
                fence: 2,
                ..good.clone()
            },
        ),
        (
            "the lease's own fence, released",
            SlotRecord {
                owner: None,
                ..good.clone()
            },
        ),
        (
            "the lease's own fence under another owner",
            SlotRecord {
                owner: Some(other.clone()),
                ..good.clone()
            },
        ),
        (
            "the lease's window lowered",
            SlotRecord {
                ceiling: held.ceiling - 10,
                next_floor: held.ceiling - 10,
                expires_at: held.expires_at - 10,
                ..good.clone()
            },
        ),
    ];
    for (what, bad) in rolled_back {
        t.put_raw(&ns, &bad).await;
        assert_regression(
            store.renew(&held, LONG_TTL_MS, CONFIG.tolerance_ms).await,
            &format!("slot {}", held.slot),
            what,
        );
        assert_regression(
            store.release(&held, None).await,
            &format!("slot {}", held.slot),
            what,
        );
        assert_eq!(record(t, &ns, held.slot).await, bad, "{what}: left alone");
    }
}

/// A slot released with a floor far ahead (by a holder whose clock ran an hour fast) must not stop every later
/// acquirer while other slots are free: the lowest free slot is one that can start now; the preferred and the
/// sticky slot keep their rank only while their floor is less than a lease away.
pub async fn a_free_slot_whose_floor_is_far_ahead_is_taken_last(t: &impl Target) {
    let ns = fresh("ahead");
    let store = t.store();
    let fast = Owner::new("fast");
    let first = acquire(t, &ns, &fast, LONG_TTL_MS).await.lease;
    assert_eq!(first.slot, 0);
    let now = inspect(t, &ns).await.store_now;
    let hour = 3_600_000;
    let poisoned = SlotRecord {
        slot: 0,
        owner: None,
        last_owner_key: Some(fast.key.clone()),
        fence: first.fence + 1,
        expires_at: now + hour,
        floor: first.floor,
        ceiling: now + hour + CONFIG.tolerance_ms,
        next_floor: now + hour + CONFIG.tolerance_ms,
    };
    t.put_raw(&ns, &poisoned).await;
    // A slot released a little ahead (a restart on a clock slightly behind): still a fine preferred slot.
    let near = SlotRecord {
        slot: 5,
        last_owner_key: Some("near".into()),
        next_floor: now + 1_000,
        ..poisoned.clone()
    };
    let near = SlotRecord {
        floor: near.next_floor,
        ceiling: near.next_floor,
        ..near
    };
    t.put_raw(&ns, &near).await;

    let b = acquire(t, &ns, &Owner::new("b"), LONG_TTL_MS).await.lease;
    assert_eq!(b.slot, 1, "the lowest free slot that can start now");
    assert!(b.floor <= now + LONG_TTL_MS, "{b:?}");
    let c = store
        .acquire(&ns, &CONFIG, &preferring(&Owner::new("c"), 0))
        .await
        .unwrap()
        .lease;
    assert_eq!(c.slot, 2, "a preferred slot an hour ahead is passed over");
    let d = acquire(t, &ns, &fast, LONG_TTL_MS).await.lease;
    assert_eq!(d.slot, 3, "so is a sticky slot an hour ahead");
    let e = store
        .acquire(&ns, &CONFIG, &preferring(&Owner::new("e"), 5))
        .await
        .unwrap()
        .lease;
    assert_eq!(
        (e.slot, e.floor),
        (5, now + 1_000),
        "a preferred slot a second ahead keeps its rank"
    );
    let zero = record(t, &ns, 0).await;
    assert_eq!(zero, poisoned, "the slot an hour ahead was never granted");
}

pub async fn a_namespace_mismatch_is_refused_naming_both_values(t: &impl Target) {
    let ns = fresh("mismatch");
    let store = t.store();
    acquire(t, &ns, &Owner::new("a"), LONG_TTL_MS).await;
    let b = Owner::new("b");
    let more_bits = NamespaceConfig { bits: 6, ..CONFIG };
    let more_tolerance = NamespaceConfig {
        tolerance_ms: 2_000,
        ..CONFIG
    };
    for (config, field, stored, requested) in [
        (more_bits, "bits", 5, 6),
        (more_tolerance, "tolerance_ms", 1_000, 2_000),
    ] {
        let results = [
            store
                .acquire(&ns, &config, &request(&b, LONG_TTL_MS))
                .await
                .map(|_| ()),
            store.raise_not_before(&ns, &config, 1).await.map(|_| ()),
        ];
        for r in results {
            match r {
                Err(e @ StoreError::NamespaceMismatch { .. }) => {
                    let StoreError::NamespaceMismatch {
                        namespace,
                        field: f,
                        stored: s,
                        requested: q,
                    } = &e
                    else {
                        unreachable!()
                    };
                    assert_eq!(
                        (namespace.as_str(), *f, *s, *q),
                        (ns.as_str(), field, stored, requested)
                    );
                    let text = e.to_string();
                    assert!(
                        text.contains(&stored.to_string()) && text.contains(&requested.to_string()),
                        "{text}"
                    );
                }
                other => panic!("{field}: expected NamespaceMismatch, got {other:?}"),
            }
        }
    }
    let seen = inspect(t, &ns).await;
    assert_eq!(seen.slots.len(), 1, "refused instances hold nothing");
    assert_eq!(
        seen.namespace
            .map(|n| (n.bits, n.tolerance_ms, n.not_before)),
        Some((5, 1_000, 0))
    );
}

/// The same number decodes to another time, slot and sequence under another layout: one namespace, one layout.
pub async fn a_second_layout_in_one_namespace_is_refused_naming_both_values(t: &impl Target) {
    let ns = fresh("layouts");
    let store = t.store();
    acquire(t, &ns, &Owner::new("millis"), LONG_TTL_MS).await;
    let seconds = NamespaceConfig {
        layout: crate::Layout::seconds(),
        ..CONFIG
    };
    let other_epoch = NamespaceConfig {
        layout: crate::Layout::new(1_600_000_000_000, crate::Tick::Millisecond, 41, 10, 12)
            .unwrap(),
        ..CONFIG
    };
    let narrower = NamespaceConfig {
        layout: crate::Layout::js_safe(),
        ..CONFIG
    };
    for (config, field, stored, requested) in [
        (seconds, "layout tick_ms", 1, 1_000),
        (
            other_epoch,
            "layout epoch_ms",
            crate::Layout::DEFAULT_EPOCH_MS,
            1_600_000_000_000,
        ),
        (narrower, "layout slot_bits", 10, 5),
    ] {
        let results = [
            store
                .acquire(&ns, &config, &request(&Owner::new("b"), LONG_TTL_MS))
                .await
                .map(|_| ()),
            store.raise_not_before(&ns, &config, 1).await.map(|_| ()),
        ];
        for r in results {
            match r {
                Err(StoreError::NamespaceMismatch {
                    field: f,
                    stored: s,
                    requested: q,
                    ..
                }) => assert_eq!((f, s, q), (field, stored, requested)),
                other => panic!("{field}: expected NamespaceMismatch, got {other:?}"),
            }
        }
    }
    let seen = inspect(t, &ns).await;
    assert_eq!(seen.slots.len(), 1, "refused instances hold nothing");
    assert_eq!(seen.namespace.and_then(|n| n.layout), Some(CONFIG.layout));
}

/// A namespace recorded before layouts were is upgraded, not refused: the first writer records its layout, and
/// from then on another layout is refused.
pub async fn a_namespace_recorded_without_a_layout_is_upgraded_by_the_first_writer(
    t: &impl Target,
) {
    let old = NamespaceRecord {
        bits: CONFIG.bits,
        tolerance_ms: CONFIG.tolerance_ms,
        not_before: 7,
        layout: None,
    };
    let store = t.store();
    let seconds = NamespaceConfig {
        layout: crate::Layout::seconds(),
        ..CONFIG
    };
    // By an acquisition.
    let ns = fresh("old-acquire");
    t.put_old_namespace(&ns, &old).await;
    assert_eq!(inspect(t, &ns).await.namespace, Some(old));
    let a = acquire(t, &ns, &Owner::new("a"), LONG_TTL_MS).await.lease;
    assert_eq!(a.floor, 7, "not_before kept");
    assert_eq!(
        inspect(t, &ns).await.namespace,
        Some(NamespaceRecord {
            layout: Some(CONFIG.layout),
            ..old
        })
    );
    assert!(matches!(
        store
            .acquire(&ns, &seconds, &request(&Owner::new("b"), LONG_TTL_MS))
            .await,
        Err(StoreError::NamespaceMismatch {
            field: "layout tick_ms",
            ..
        })
    ));
    // By a migration.
    let ns = fresh("old-raise");
    t.put_old_namespace(&ns, &old).await;
    let raised = store.raise_not_before(&ns, &seconds, 9).await.unwrap();
    assert_eq!(raised.layout, Some(crate::Layout::seconds()));
    assert_eq!(
        inspect(t, &ns).await.namespace,
        Some(NamespaceRecord {
            not_before: 9,
            layout: Some(crate::Layout::seconds()),
            ..old
        })
    );
}

/// Turns a valid record into a corrupt one.
type Spoil = fn(&mut SlotRecord);

pub async fn corrupt_records_are_refused_and_left_alone(t: &impl Target) {
    let store = t.store();
    let cases: [(&str, Spoil, &str); 4] = [
        (
            "floor-above-ceiling",
            |r| r.floor = r.ceiling + 1,
            "is above ceiling",
        ),
        ("fence-zero", |r| r.fence = 0, "fence is 0"),
        (
            "next-floor-below-ceiling",
            |r| r.next_floor = r.ceiling - 1,
            "below the holder's ceiling",
        ),
        ("slot-out-of-range", |r| r.slot = 40, "not below 2^5"),
    ];
    for (label, spoil, detail) in cases {
        let ns = fresh(label);
        let a = acquire(t, &ns, &Owner::new("a"), LONG_TTL_MS).await.lease;
        // Another holder's record on slot 1 (or 40), spoiled.
        let mut bad = SlotRecord {
            slot: 1,
            owner: Some(Owner::new("other")),
            last_owner_key: Some("other".into()),
            fence: 3,
            expires_at: a.expires_at,
            floor: a.floor + 10,
            ceiling: a.ceiling,
            next_floor: a.ceiling,
        };
        spoil(&mut bad);
        t.put_raw(&ns, &bad).await;
        assert_corrupt(
            store
                .acquire(&ns, &CONFIG, &request(&Owner::new("b"), LONG_TTL_MS))
                .await,
            detail,
            &format!("{label}: acquire"),
        );
        // The holder of the spoiled slot itself is refused too, and the record is left as it is.
        let mut own = record(t, &ns, a.slot).await;
        spoil(&mut own);
        own.slot = a.slot;
        if own.fence == 0 || own.floor > own.ceiling || own.next_floor < own.ceiling {
            t.put_raw(&ns, &own).await;
            assert_corrupt(
                store.renew(&a, LONG_TTL_MS, CONFIG.tolerance_ms).await,
                detail,
                &format!("{label}: renew"),
            );
            assert_corrupt(
                store.release(&a, None).await,
                detail,
                &format!("{label}: release"),
            );
            assert_eq!(
                record(t, &ns, a.slot).await,
                own,
                "{label}: the corrupt record is left alone"
            );
        }
        let kept = inspect(t, &ns).await.slots;
        assert!(
            kept.contains(&bad),
            "{label}: the corrupt record is left alone: {kept:?}"
        );
    }
}

pub async fn raise_not_before_raises_the_floor_of_unused_slots_and_never_lowers(t: &impl Target) {
    let ns = fresh("not-before");
    let store = t.store();
    let far = inspect(t, &ns).await.store_now + 3_600_000;
    let rec = store.raise_not_before(&ns, &CONFIG, far).await.unwrap();
    assert_eq!(
        rec,
        NamespaceRecord {
            bits: CONFIG.bits,
            tolerance_ms: CONFIG.tolerance_ms,
            not_before: far,
            layout: Some(CONFIG.layout),
        },
        "a new namespace is created with the instance's settings"
    );
    let a = acquire(t, &ns, &Owner::new("a"), LONG_TTL_MS).await.lease;
    assert_eq!(a.floor, far, "a never used slot starts at not_before");
    assert_eq!(a.ceiling, far.max(a.expires_at + CONFIG.tolerance_ms));
    assert_eq!(
        store
            .raise_not_before(&ns, &CONFIG, far)
            .await
            .unwrap()
            .not_before,
        far,
        "same value: ok"
    );
    let higher = far + 1_000;
    assert_eq!(
        store
            .raise_not_before(&ns, &CONFIG, higher)
            .await
            .unwrap()
            .not_before,
        higher
    );
    match store.raise_not_before(&ns, &CONFIG, far).await {
        Err(StoreError::NotBeforeLowered {
            namespace,
            stored,
            requested,
        }) => assert_eq!(
            (namespace.as_str(), stored, requested),
            (ns.as_str(), higher, far)
        ),
        other => panic!("lowering not_before: expected NotBeforeLowered, got {other:?}"),
    }
    assert_eq!(inspect(t, &ns).await.namespace.unwrap().not_before, higher);
    let b = acquire(t, &ns, &Owner::new("b"), LONG_TTL_MS).await.lease;
    assert_eq!(b.floor, higher);
    // A released slot starts at max(its next_floor, not_before).
    store.release(&a, None).await.unwrap();
    let c = acquire(t, &ns, &Owner::new("c"), LONG_TTL_MS).await.lease;
    assert_eq!((c.slot, c.floor), (a.slot, a.floor.max(higher)));
}

/// Names that differ only in a character some store treats specially.
pub const LOOKALIKE_SUFFIXES: &[&str] = &[
    "a",
    "a{b}",
    "a}b{",
    "{a}",
    "a:b",
    "a::b",
    "a/b",
    "a.b",
    "a%b",
    "a%25b",
    "a%3Ab",
    "a%7Bb",
    "a b",
    "a'b",
    "a\"b",
    "a`b",
    "a\\b",
    "a_b",
    "a-b",
    "aéb",
    "ae\u{301}b",
    "日本",
    "a*b",
    "a?b",
    "a[b]",
];

pub async fn names_that_differ_in_special_characters_never_share_records(t: &impl Target) {
    let base = format!("iso-{}-", uuid::Uuid::new_v4());
    let names: Vec<Namespace> = LOOKALIKE_SUFFIXES
        .iter()
        .map(|s| Namespace::new(format!("{base}{s}")).unwrap())
        .collect();
    for (i, ns) in names.iter().enumerate() {
        let got = acquire(t, ns, &Owner::new(format!("owner-{i}")), LONG_TTL_MS)
            .await
            .lease;
        assert_eq!(got.slot, 0, "{ns:?} shares slots with an earlier name");
    }
    for (i, ns) in names.iter().enumerate() {
        let seen = inspect(t, ns).await;
        assert!(seen.namespace.is_some(), "{ns:?}");
        let keys: Vec<_> = seen
            .slots
            .iter()
            .map(|r| r.owner.as_ref().map(|o| o.key.clone()))
            .collect();
        assert_eq!(
            keys,
            vec![Some(format!("owner-{i}"))],
            "{ns:?} sees only its own record"
        );
    }
}

/// Names (and owner keys) shaped like SQL, Lua, Redis protocol or shell: they must stay plain data.
pub const HOSTILE_NAMES: &[&str] = &[
    "'; DROP TABLE cosid_slot; --",
    "\"; DROP TABLE cosid_namespace; --",
    "x' OR '1'='1",
    "x'); DELETE FROM cosid_slot; --",
    "]] redis.call('FLUSHALL') --[[",
    "'); redis.call('FLUSHALL'); --",
    "\") return redis.call('FLUSHDB') --",
    "*1 $8 FLUSHALL",
    "cosid:{x}:slots",
    "KEYS[1]",
    "ARGV[1] .. ''",
    "%s%n%d%x",
    "$(rm -rf /) `id`",
    "../../etc/passwd",
    "\\x00\\r\\n",
];

pub async fn injection_attempts_are_plain_names_and_keys(t: &impl Target) {
    let canary = fresh("canary");
    let c = acquire(t, &canary, &Owner::new("canary"), LONG_TTL_MS)
        .await
        .lease;
    let base = format!("inj-{}-", uuid::Uuid::new_v4());
    for hostile in HOSTILE_NAMES {
        let ns = Namespace::new(format!("{base}{hostile}")).unwrap();
        let owner = Owner::new(*hostile);
        let got = acquire(t, &ns, &owner, LONG_TTL_MS).await.lease;
        assert_eq!(got.slot, 0, "{ns:?}");
        let seen = inspect(t, &ns).await;
        assert_eq!(seen.slots.len(), 1, "{ns:?}");
        assert_eq!(
            seen.slots[0].owner,
            Some(t.stored_owner(&owner)),
            "the key is stored as given"
        );
        t.store().release(&got, None).await.unwrap();
    }
    let seen = inspect(t, &canary).await;
    assert_eq!(seen.slots.len(), 1, "the canary namespace is intact");
    t.store()
        .renew(&c, LONG_TTL_MS, CONFIG.tolerance_ms)
        .await
        .expect("the canary's lease is intact");
}

// ---------------------------------------------------------------------------------------------------------------
// Runtime cases: a `Runtime` (keeper and generator) on a store server, run once for every network store.

/// Expands to one `#[test]` per runtime case, for the store of kind `$kind` (as `Status::store` names it).
///
/// - `url`: an expression of type `Option<String>`, the URL a runtime opens (`None` skips the cases that need a
///   server, after printing why);
/// - `target`: a function `fn(String) -> impl Future<Output = impl Target>` making a target on that URL whose store
///   runs on the host clock, as the runtime's does;
/// - `unreachable`: a URL of this store's scheme where nothing listens, and `shown`, the part of it the error must
///   show.
#[allow(unused_macros)] // The memory and SQLite stores have no server for a runtime to open.
#[macro_export]
macro_rules! runtime_tests {
    (
        kind: $kind:literal,
        url: $url:expr,
        target: $target:expr,
        unreachable: $unreachable:literal,
        shown: $shown:literal $(,)?
    ) => {
        $crate::conformance::runtime_tests!(@cases $kind, $url, $target;
            a_runtime_issues_ids_and_hands_its_last_timestamp_over_at_shutdown,
            runtimes_share_a_namespace_and_hand_over_at_release,
            a_record_taken_over_behind_the_runtimes_back_is_lost_and_replaced,
        );

        #[test]
        fn a_store_down_at_start_up_fails_with_a_clear_error_after_the_acquire_timeout() {
            $crate::conformance::a_store_down_at_start_up_fails_with_a_clear_error_after_the_acquire_timeout(
                $kind,
                $unreachable,
                $shown,
            );
        }
    };
    (@cases $kind:literal, $url:expr, $target:expr; $($case:ident),+ $(,)?) => {
        $(
            #[test]
            fn $case() {
                let Some(url) = $url else {
                    return;
                };
                $crate::conformance::$case($kind, &url, $target);
            }
        )+
    };
}
pub use crate::runtime_tests;

/// A tokio runtime for the checks a (synchronous) runtime case makes on the store.
fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Events as a runtime reported them, in order.
#[derive(Clone, Default, Debug)]
pub struct Recorder(Arc<std::sync::Mutex<Vec<crate::Event>>>);

impl Recorder {
    pub fn listener(&self) -> impl Fn(&crate::Event) + Send + Sync + 'static {
        let events = self.0.clone();
        move |e: &crate::Event| events.lock().unwrap().push(e.clone())
    }

    pub fn all(&self) -> Vec<crate::Event> {
        self.0.lock().unwrap().clone()
    }

    /// Waits (bounded) until an event matches.
    pub fn wait_for(&self, what: &str, matches: impl Fn(&crate::Event) -> bool) -> crate::Event {
        for _ in 0..400 {
            if let Some(e) = self.all().into_iter().find(&matches) {
                return e;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("no {what} event within 10 s; events: {:#?}", self.all());
    }
}

pub fn a_runtime_issues_ids_and_hands_its_last_timestamp_over_at_shutdown<T: Target, F>(
    kind: &str,
    url: &str,
    target: impl FnOnce(String) -> F,
) where
    F: Future<Output = T>,
{
    let name = format!("runtime-{}", uuid::Uuid::new_v4());
    let rt = crate::Runtime::builder()
        .store(url)
        .namespace(&name)
        .bits(4)
        .build()
        .unwrap();
    let ids = rt.next_ids(10_000).unwrap();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids strictly increase");
    let status = rt.status();
    assert_eq!((status.store, status.slot, status.fence), (kind, 0, 1));
    let last = rt
        .shutdown()
        .expect("the first shutdown reports the last timestamp");

    let tokio = tokio();
    let t = tokio.block_on(target(url.to_owned()));
    let seen = tokio.block_on(inspect(&t, &Namespace::new(name).unwrap()));
    let slot = &seen.slots[0];
    assert_eq!((slot.owner.as_ref(), slot.fence), (None, 2), "released");
    assert_eq!(
        slot.next_floor, last,
        "the next holder starts after the last id"
    );
}

pub fn runtimes_share_a_namespace_and_hand_over_at_release<T: Target, F>(
    kind: &str,
    url: &str,
    target: impl FnOnce(String) -> F,
) where
    F: Future<Output = T>,
{
    let name = format!("runtime-{}", uuid::Uuid::new_v4());
    let build = || {
        crate::Runtime::builder()
            .store(url)
            .namespace(&name)
            .ttl(Duration::from_secs(5))
            .bits(4)
            .build()
            .unwrap()
    };
    let a = build();
    let b = build();
    assert_ne!(a.status().slot, b.status().slot);
    assert_eq!(a.status().store, kind);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..5_000 {
        assert!(seen.insert(a.next_id().unwrap()));
        assert!(seen.insert(b.next_id().unwrap()));
    }
    let slot = a.status().slot;
    let last = a.shutdown().expect("a issued ids");
    let tokio = tokio();
    let t = tokio.block_on(target(url.to_owned()));
    let record = tokio.block_on(record(&t, &Namespace::new(name.clone()).unwrap(), slot));
    assert_eq!(record.owner, None);
    assert_eq!(
        record.next_floor, last,
        "the release handed the last issued millisecond over"
    );
    b.shutdown();
}

pub fn a_record_taken_over_behind_the_runtimes_back_is_lost_and_replaced<T: Target, F>(
    kind: &str,
    url: &str,
    target: impl FnOnce(String) -> F,
) where
    F: Future<Output = T>,
{
    let ttl = Duration::from_millis(900);
    let tolerance_ms = 300;
    let name = format!("takeover-{}", uuid::Uuid::new_v4());
    let events = Recorder::default();
    let rt = Arc::new(
        crate::Runtime::builder()
            .store(url)
            .namespace(&name)
            .ttl(ttl)
            .tolerance(Duration::from_millis(tolerance_ms))
            .bits(3)
            .subscribe(events.listener())
            .build()
            .unwrap(),
    );
    // Called on the keeper's thread as the loss is reported, before any new slot: ids must fail by then.
    let during_loss = Arc::new(std::sync::Mutex::new(None));
    {
        let weak = Arc::downgrade(&rt);
        let during_loss = during_loss.clone();
        rt.subscribe(move |e| {
            if let (crate::Event::SlotLost { .. }, Some(rt)) = (e, weak.upgrade()) {
                *during_loss.lock().unwrap() = Some(rt.next_id().map_err(|e| e.code()));
            }
        });
    }
    let old = rt.status();
    assert_eq!(old.store, kind);
    let mut ids = rt.next_ids(1_000).unwrap();

    // Another holder's lease, written straight into the store with its own client: fence raised, window above the
    // old one.
    let ns = Namespace::new(name).unwrap();
    let tokio = tokio();
    let t = tokio.block_on(target(url.to_owned()));
    let (planted, read_back) = tokio.block_on(async {
        let seen = inspect(&t, &ns).await;
        let current = seen
            .slots
            .iter()
            .find(|r| r.slot == old.slot)
            .unwrap()
            .clone();
        let expires_at = seen.store_now + 60_000;
        let planted = SlotRecord {
            owner: Some(Owner::new("intruder")),
            last_owner_key: Some("intruder".into()),
            fence: current.fence + 1,
            expires_at,
            floor: current.next_floor,
            ceiling: expires_at + tolerance_ms,
            next_floor: expires_at + tolerance_ms,
            ..current
        };
        t.put_raw(&ns, &planted).await;
        (planted, inspect(&t, &ns).await.slots)
    });

    // Bounded waits: the keeper renews every ttl/3 and then finds the lease gone.
    let lost = events.wait_for("SlotLost", |e| matches!(e, crate::Event::SlotLost { .. }));
    assert!(
        matches!(lost, crate::Event::SlotLost { slot, .. } if slot == old.slot),
        "{lost:?}"
    );
    assert_eq!(
        *during_loss.lock().unwrap(),
        Some(Err("SLOT_LOST")),
        "between the loss and a new slot, id calls fail with SlotLost"
    );
    events.wait_for(
        "a new Acquired",
        |e| matches!(e, crate::Event::Acquired { slot, .. } if *slot != old.slot),
    );
    let now = rt.status();
    assert_ne!(now.slot, old.slot, "the intruder keeps the old slot");
    assert_eq!(now.state, crate::State::Active);
    let losses: Vec<u32> = events
        .all()
        .iter()
        .filter_map(|e| match e {
            crate::Event::SlotLost { slot, .. } => Some(*slot),
            _ => None,
        })
        .collect();
    assert_eq!(losses, vec![old.slot], "one SlotLost, for the old slot");
    let after = rt.next_ids(1_000).unwrap();
    for &id in &after {
        assert_eq!(rt.layout().decompose(id).unwrap().slot, u64::from(now.slot));
    }
    ids.extend(after);
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "no id repeats");
    let kept = tokio.block_on(inspect(&t, &ns)).slots;
    let at_old = |slots: &[SlotRecord]| slots.iter().find(|r| r.slot == old.slot).cloned();
    assert_eq!(
        at_old(&kept),
        Some(planted),
        "the runtime never writes over the intruder's record"
    );
    assert_eq!(
        at_old(&kept),
        at_old(&read_back),
        "the runtime never writes over the intruder's record"
    );
    rt.shutdown();
}

pub fn a_store_down_at_start_up_fails_with_a_clear_error_after_the_acquire_timeout(
    kind: &str,
    unreachable: &str,
    shown: &str,
) {
    let ttl = Duration::from_millis(600);
    let timeout = Duration::from_millis(700);
    let started = std::time::Instant::now();
    let err = crate::Runtime::builder()
        .store(unreachable)
        .namespace("down-at-start")
        .ttl(ttl)
        .acquire_timeout(timeout)
        .build()
        .unwrap_err();
    let waited = started.elapsed();
    assert_eq!(err.code(), "STORE_UNAVAILABLE", "{err}");
    let text = err.to_string();
    assert!(text.contains(kind) && text.contains(shown), "{text}");
    // It retried until the deadline, give or take the last back-off step (at most ttl/6).
    assert!(
        waited + ttl / 6 >= timeout,
        "gave up after {waited:?}, before {timeout:?}"
    );
}

// ---------------------------------------------------------------------------------------------------------------
// A server of the test's own, killed and started again under a live runtime.

/// A store server the test started and can kill and start again on the same data.
pub trait Restartable {
    /// Its store URL.
    fn url(&self) -> String;
    /// Kills it at once, as a crash would.
    fn kill(&mut self);
    /// Starts it again on the same port and data, and waits until it serves.
    fn restart(&mut self);
}

/// A lease window as the events show it: `(floor, ceiling]`, granted at store time `granted_at`.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    pub slot: u32,
    pub floor: u64,
    pub ceiling: u64,
    pub granted_at: u64,
}

/// Every window the events show: each `Acquired`, and each `Renewed` on the floor of the lease it extends.
pub fn windows(events: &[crate::Event], ttl_ms: u64) -> Vec<Seen> {
    use crate::Event;
    let mut out = Vec::new();
    let mut floor = 0;
    for e in events {
        match *e {
            Event::Acquired {
                slot,
                floor_ms,
                ceiling_ms,
                expires_at_ms,
                ..
            } => {
                floor = floor_ms;
                out.push(Seen {
                    slot,
                    floor,
                    ceiling: ceiling_ms,
                    granted_at: expires_at_ms.saturating_sub(ttl_ms),
                });
            }
            Event::Renewed {
                slot,
                ceiling_ms,
                expires_at_ms,
            } => out.push(Seen {
                slot,
                floor,
                ceiling: ceiling_ms,
                granted_at: expires_at_ms.saturating_sub(ttl_ms),
            }),
            _ => {}
        }
    }
    out
}

/// Checks that every id lies in a window the events show, and was issued no earlier than that window was granted
/// (give or take 50 ms of clock difference between this host and the server, which share a machine in the tests):
/// an id issued past a ceiling while the store was down cannot be covered by a renewal granted after it.
pub fn assert_inside_windows(
    layout: &crate::Layout,
    ids: &[crate::Id],
    events: &[crate::Event],
    ttl_ms: u64,
) {
    let seen = windows(events, ttl_ms);
    let slack_ms = 50;
    for &id in ids {
        let parts = layout.decompose(id).unwrap();
        let (t, slot) = (parts.timestamp_ms, parts.slot as u32);
        assert!(
            seen.iter().any(|w| w.slot == slot
                && w.floor < t
                && t <= w.ceiling
                && w.granted_at <= t + slack_ms),
            "id {id} (slot {slot}, timestamp {t}) lies in no window the events show: {seen:#?}"
        );
    }
}

/// A runtime on `server` (ttl `ttl`, 200 ms tolerance) issues ids; the server is killed: renewals fail, ids keep
/// coming up to the ceiling and no further, then id calls fail with `WindowClosed`; the server is started again:
/// renewals resume on the same slot and fence (nobody took it), ids continue strictly increasing, each inside a
/// window granted before it; shutdown releases. Returns the events, for the store's own checks (back-off, ...).
pub fn a_server_restart_fails_renewals_then_resumes_and_no_id_passes_a_ceiling(
    server: &mut impl Restartable,
    ttl: Duration,
) -> Vec<crate::Event> {
    use crate::{Error, Event, State};
    use std::time::Instant;
    let ttl_ms = ttl.as_millis() as u64;
    let events = Recorder::default();
    let rt = crate::Runtime::builder()
        .store(server.url())
        .namespace(format!("restart-{}", uuid::Uuid::new_v4()))
        .ttl(ttl)
        .tolerance(Duration::from_millis(200))
        .bits(4)
        // Id calls past the ceiling give up quickly instead of waiting for a renewal that cannot come.
        .waits(crate::generator::Waits {
            backwards: Duration::from_millis(500),
            window: Duration::from_millis(20),
        })
        .subscribe(events.listener())
        .build()
        .unwrap();
    let first = rt.status();
    let mut ids = Vec::new();
    let until = Instant::now() + Duration::from_millis(300);
    while Instant::now() < until {
        ids.push(rt.next_id().unwrap());
    }

    server.kill();
    events.wait_for("RenewFailed", |e| matches!(e, Event::RenewFailed { .. }));
    // No renewal can succeed now, so this ceiling is final until the server is back.
    let down = rt.status();
    assert_eq!(down.state, State::Renewing);
    let ceiling = down.ceiling_ms;
    let (mut closed, mut issued_while_down) = (0, 0);
    loop {
        let now = crate::clock::SystemClock.now_ms();
        match rt.next_id() {
            Ok(id) => {
                let t = rt.layout().decompose(id).unwrap().timestamp_ms;
                assert!(
                    t <= ceiling,
                    "id {id} at {t} passed the ceiling {ceiling} while the server was down"
                );
                ids.push(id);
                issued_while_down += 1;
            }
            Err(Error::WindowClosed { ceiling_ms, .. }) => {
                assert_eq!(ceiling_ms, ceiling);
                closed += 1;
            }
            Err(e) => panic!("while the server is down: expected ids or WindowClosed, got {e}"),
        }
        if now > ceiling + 300 {
            break;
        }
    }
    assert!(closed > 0, "past the ceiling, id calls must fail");
    assert!(issued_while_down > 0, "before the ceiling, ids keep coming");

    server.restart();
    let mut resumed = false;
    for _ in 0..800 {
        let s = rt.status();
        if s.state == State::Active && s.ceiling_ms > ceiling {
            resumed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(
        resumed,
        "renewals did not resume within 20 s: {:#?}",
        events.all()
    );
    let back = rt.status();
    assert_eq!(
        (back.slot, back.fence),
        (first.slot, first.fence),
        "nobody took the slot: the late renewal kept the lease"
    );
    let until = Instant::now() + Duration::from_millis(200);
    while Instant::now() < until {
        ids.push(rt.next_id().unwrap());
    }
    let all = events.all();
    assert!(
        !all.iter().any(|e| matches!(e, Event::SlotLost { .. })),
        "{all:#?}"
    );
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids strictly increase");
    assert_inside_windows(rt.layout(), &ids, &all, ttl_ms);
    rt.shutdown();
    let all = events.all();
    assert!(all.iter().any(|e| matches!(e, Event::Released { .. })));
    all
}
