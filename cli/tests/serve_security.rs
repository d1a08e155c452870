//! `cosid serve` as a security boundary, against a real server process (each test failed before the server kept
//! leases as capabilities and bounded its requests): a lease is its holder's alone (no other
//! client can renew, release or re-acquire it, whatever it reads from the server), and the requests it takes are
//! bounded (ttl, `not_before`).

mod serve_common;

use cosid::lease::{AcquireRequest, Namespace, NamespaceConfig, Owner, SlotLease};
use cosid::store::{HttpStore, LeaseStore, StoreError};
use serve_common::Serve;

const CONFIG: NamespaceConfig = NamespaceConfig {
    bits: 4,
    tolerance_ms: 1_000,
    layout: cosid::Layout::millis(),
};

fn sqlite(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}", dir.path().join("l.db").display())
}

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn request(owner: &Owner, ttl_ms: u64) -> AcquireRequest {
    AcquireRequest {
        owner: owner.clone(),
        ttl_ms,
        preferred_slot: None,
    }
}

/// Everything another client can learn of a holder's lease through the server: the record `/slots` shows, made
/// into a lease as a forger would.
fn forged_from_slots(store: &HttpStore, ns: &Namespace, slot: u32) -> SlotLease {
    let seen = block(store.inspect(ns)).unwrap();
    let r = seen.slots.iter().find(|r| r.slot == slot).unwrap();
    SlotLease {
        namespace: ns.clone(),
        slot,
        owner: r.owner.clone().expect("the slot is held"),
        fence: r.fence,
        expires_at: r.expires_at,
        floor: r.floor,
        ceiling: r.ceiling,
        store_now: seen.store_now,
    }
}

/// A client that reads another holder's lease from `/slots` cannot release it (which would let the next holder
/// start at its floor while the real holder keeps issuing: repeated ids), renew it, or take it over with the
/// acquisition that a holder's own retry uses. Each forged call is refused as `LEASE_LOST` and changes nothing.
#[test]
fn another_client_cannot_release_renew_or_reacquire_a_lease_it_can_read() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&sqlite(&dir), &[]);
    let holder = HttpStore::open(&serve.url).unwrap();
    let forger = HttpStore::open(&serve.url).unwrap();
    let ns = Namespace::new("guarded").unwrap();
    let owner = Owner::new("holder");
    let held = block(holder.acquire(&ns, &CONFIG, &request(&owner, 60_000)))
        .unwrap()
        .lease;
    assert_eq!(held.owner, owner, "the holder gets its own owner back");

    let forged = forged_from_slots(&forger, &ns, held.slot);
    assert_ne!(
        forged.owner.incarnation, owner.incarnation,
        "/slots never shows the secret a holder renews with"
    );
    let before = block(forger.inspect(&ns)).unwrap().slots;

    // Refused as the protocol refuses a lease that is not the record's: `LEASE_LOST`, or, since the forged lease
    // carries the record's own fence, the alarm of a store that lost a write (never taken as the holder's).
    let refused = |r: &Result<_, StoreError>| {
        matches!(
            r,
            Err(StoreError::LeaseLost { .. } | StoreError::Regression { .. })
        )
    };
    let released = block(forger.release(&forged, Some(forged.floor)));
    assert!(
        refused(&released),
        "a forged release is refused: {released:?}"
    );
    let renewed = block(forger.renew(&forged, 86_400_000, CONFIG.tolerance_ms)).map(|_| ());
    assert!(
        refused(&renewed),
        "a forged renewal is refused: {renewed:?}"
    );
    // The idempotent retry of an acquisition (same key and incarnation) with what /slots shows.
    let retried = block(forger.acquire(&ns, &CONFIG, &request(&forged.owner, 60_000))).unwrap();
    assert_ne!(
        retried.lease.slot, held.slot,
        "an acquisition with what /slots shows never returns the holder's lease"
    );
    let after = block(forger.inspect(&ns)).unwrap().slots;
    assert_eq!(
        after.iter().find(|r| r.slot == held.slot),
        before.iter().find(|r| r.slot == held.slot),
        "the holder's record is unchanged"
    );

    // The holder itself renews and releases as before; the next holder of its slot starts past its window.
    let renewed = block(holder.renew(&held, 60_000, CONFIG.tolerance_ms)).unwrap();
    assert_eq!((renewed.slot, renewed.fence), (held.slot, held.fence));
    assert_eq!(renewed.owner, owner);
    block(holder.release(&renewed, Some(renewed.floor + 5))).unwrap();
    let next = block(forger.acquire(
        &ns,
        &CONFIG,
        &AcquireRequest {
            preferred_slot: Some(held.slot),
            ..request(&Owner::new("next"), 60_000)
        },
    ))
    .unwrap()
    .lease;
    assert_eq!(next.slot, held.slot);
    assert_eq!(next.floor, renewed.floor + 5);
}

/// The end-to-end form: a holder issuing ids through the server, a forger releasing its lease with the floor as
/// its last timestamp, and a second holder started after it (the lowest free slot: the first's, if the forged
/// release freed it). Both issue at once for a while; no id may repeat.
#[test]
fn a_forged_release_under_a_live_holder_repeats_no_id() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&sqlite(&dir), &[]);
    let start = |key: &str| {
        cosid::Runtime::builder()
            .store(&serve.url)
            .namespace("victim")
            .owner_key(key)
            .bits(1)
            .build()
            .unwrap()
    };
    let first = start("first");
    first.next_id().unwrap();
    let slot = first.status().slot;
    let forger = HttpStore::open(&serve.url).unwrap();
    let ns = Namespace::new("victim").unwrap();
    let forged = forged_from_slots(&forger, &ns, slot);
    let _ = block(forger.release(&forged, Some(forged.floor)));
    let second = start("second");
    let issue = |rt: &cosid::Runtime| {
        let until = std::time::Instant::now() + std::time::Duration::from_millis(300);
        let mut ids = Vec::new();
        while std::time::Instant::now() < until {
            ids.extend(rt.next_ids(64).unwrap());
        }
        ids
    };
    let mut ids = std::thread::scope(|s| {
        let a = s.spawn(|| issue(&first));
        let b = s.spawn(|| issue(&second));
        let mut ids = a.join().unwrap();
        ids.extend(b.join().unwrap());
        ids
    });
    let total = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(
        total - ids.len(),
        0,
        "repeated ids of {total} (slots {} and {})",
        first.status().slot,
        second.status().slot
    );
    first.shutdown();
    second.shutdown();
}

/// `ttl_ms` and `not_before` are bounded: a request that would hold a slot for good, or refuse every start of a
/// namespace for centuries, is a 400 that changes nothing.
#[test]
fn ttl_and_not_before_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&sqlite(&dir), &[]);
    let store = HttpStore::open(&serve.url).unwrap();
    let ns = Namespace::new("bounded").unwrap();
    let owner = Owner::new("a");
    let huge = block(store.acquire(&ns, &CONFIG, &request(&owner, u64::MAX)));
    assert!(
        matches!(&huge, Err(e) if e.to_string().contains("ttl")),
        "{huge:?}"
    );
    let held = block(store.acquire(&ns, &CONFIG, &request(&owner, 30_000)))
        .unwrap()
        .lease;
    let renewed = block(store.renew(&held, u64::MAX, CONFIG.tolerance_ms));
    assert!(
        matches!(&renewed, Err(e) if e.to_string().contains("ttl")),
        "{renewed:?}"
    );
    let far = block(store.raise_not_before(&ns, &CONFIG, 9_007_199_254_740_000));
    assert!(
        matches!(&far, Err(e) if e.to_string().contains("not_before")),
        "{far:?}"
    );
    let record = block(store.inspect(&ns)).unwrap().namespace.unwrap();
    assert_eq!(record.not_before, 0, "nothing changed");
    let near = held.store_now + 60_000;
    let raised = block(store.raise_not_before(&ns, &CONFIG, near)).unwrap();
    assert_eq!(raised.not_before, near, "a near not_before is taken");
}
