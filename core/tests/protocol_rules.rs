//! The lease rules of DESIGN §3 and every row of the clock table of DESIGN §2, on a manual clock, over every
//! embedded store: each test is written once and run on the in-memory store and on an SQLite file.

/// The raw writes of the SQLite store's conformance target.
#[cfg(feature = "sqlite")]
#[path = "targets/sqlite.rs"]
mod sqlite_target;

use cosid::clock::{Clock, ManualClock};
use cosid::generator::{Generator, Waits, Window};
use cosid::lease::{
    AcquireRequest, Acquired, Namespace, NamespaceConfig, Owner, SlotLease, SlotRecord,
};
use cosid::store::{LeaseStore, MemoryStore, StoreError};
use cosid::{Error, Event, Id, Layout, Runtime};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Store time at the start of every test (2023-11-14).
const T0: u64 = 1_700_000_000_000;
const TTL: u64 = 10_000;
const TOL: u64 = 1_000;
const HOUR: u64 = 3_600_000;
const NS: &str = "rules";

// ---------------------------------------------------------------------------------------------------------------
// Fixtures: one store of each kind, on a manual store clock.

enum Raw {
    Memory(MemoryStore),
    #[cfg(feature = "sqlite")]
    Sqlite(std::path::PathBuf),
}

struct Fixture {
    name: &'static str,
    /// The store's clock.
    clock: ManualClock,
    store: Arc<dyn LeaseStore>,
    raw: Raw,
    ns: Namespace,
    bits: u8,
    tokio: tokio::runtime::Runtime,
    _dir: Option<tempfile::TempDir>,
}

/// Names the store in the output of a failing test.
struct StoreContext(&'static str);

impl Drop for StoreContext {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("(this failure is on the {} store)", self.0);
        }
    }
}

fn fixtures(bits: u8) -> Vec<Fixture> {
    let tokio = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    let ns = Namespace::new(NS).unwrap();
    let clock = ManualClock::new(T0);
    let memory = MemoryStore::new(Arc::new(clock.clone()));
    #[allow(unused_mut)]
    let mut all = vec![Fixture {
        name: "memory",
        clock,
        store: Arc::new(memory.clone()),
        raw: Raw::Memory(memory),
        ns: ns.clone(),
        bits,
        tokio: tokio(),
        _dir: None,
    }];
    #[cfg(feature = "sqlite")]
    {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("leases.db");
        let clock = ManualClock::new(T0);
        let store = cosid::store::SqliteStore::open(&path, Arc::new(clock.clone())).unwrap();
        all.push(Fixture {
            name: "sqlite",
            clock,
            store: Arc::new(store),
            raw: Raw::Sqlite(path),
            ns,
            bits,
            tokio: tokio(),
            _dir: Some(dir),
        });
    }
    all
}

/// Runs `test` once per store, on a fresh namespace with `2^bits` slots.
fn each_store(bits: u8, test: impl Fn(&Fixture)) {
    for f in fixtures(bits) {
        let _context = StoreContext(f.name);
        test(&f);
    }
}

impl Fixture {
    fn config(&self) -> NamespaceConfig {
        NamespaceConfig {
            bits: self.bits,
            tolerance_ms: TOL,
            layout: cosid::Layout::millis(),
        }
    }

    fn acquire(&self, owner: &Owner, preferred: Option<u32>) -> Result<Acquired, StoreError> {
        self.acquire_with(owner, preferred, self.config())
    }

    fn acquire_with(
        &self,
        owner: &Owner,
        preferred: Option<u32>,
        config: NamespaceConfig,
    ) -> Result<Acquired, StoreError> {
        let request = AcquireRequest {
            owner: owner.clone(),
            ttl_ms: TTL,
            preferred_slot: preferred,
        };
        self.tokio
            .block_on(self.store.acquire(&self.ns, &config, &request))
    }

    fn lease(&self, owner: &Owner) -> SlotLease {
        self.acquire(owner, None).unwrap().lease
    }

    fn renew(&self, lease: &SlotLease) -> Result<SlotLease, StoreError> {
        self.tokio.block_on(self.store.renew(lease, TTL, TOL))
    }

    fn release(&self, lease: &SlotLease, last: Option<u64>) -> Result<(), StoreError> {
        self.tokio.block_on(self.store.release(lease, last))
    }

    fn raise_not_before(&self, not_before: u64) -> Result<(), StoreError> {
        self.tokio
            .block_on(
                self.store
                    .raise_not_before(&self.ns, &self.config(), not_before),
            )
            .map(|_| ())
    }

    fn record(&self, slot: u32) -> SlotRecord {
        self.tokio
            .block_on(self.store.inspect(&self.ns))
            .unwrap()
            .slots
            .into_iter()
            .find(|r| r.slot == slot)
            .unwrap_or_else(|| panic!("slot {slot} has no record"))
    }

    fn records(&self) -> Vec<SlotRecord> {
        self.tokio
            .block_on(self.store.inspect(&self.ns))
            .unwrap()
            .slots
    }

    /// Writes `record` as it is, past every check of the store.
    fn put_raw(&self, r: &SlotRecord) {
        match &self.raw {
            Raw::Memory(m) => m.put_raw(&self.ns, r.clone()),
            #[cfg(feature = "sqlite")]
            Raw::Sqlite(path) => sqlite_target::put_raw_at(path, &self.ns, r),
        }
    }

    /// Runs raw SQL on the SQLite file; `false` for the memory store.
    #[allow(unused_variables)]
    fn sql(&self, sql: &str) -> bool {
        match &self.raw {
            Raw::Memory(_) => false,
            #[cfg(feature = "sqlite")]
            Raw::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).unwrap();
                conn.execute_batch(sql).unwrap();
                true
            }
        }
    }
}

fn owner(key: &str) -> Owner {
    Owner::new(key)
}

fn is_lost(r: Result<impl std::fmt::Debug, StoreError>) -> bool {
    matches!(r, Err(StoreError::LeaseLost { .. }))
}

fn assert_lost<T: std::fmt::Debug>(r: Result<T, StoreError>, what: &str) {
    match r {
        Err(StoreError::LeaseLost { .. }) => {}
        other => panic!("{what}: expected LeaseLost, got {other:?}"),
    }
}

fn assert_regression<T: std::fmt::Debug>(r: Result<T, StoreError>, what: &str) {
    match r {
        Err(StoreError::Regression { .. }) => {}
        other => panic!("{what}: expected a Regression error, got {other:?}"),
    }
}

fn assert_corrupt<T: std::fmt::Debug>(r: Result<T, StoreError>, what: &str) {
    match r {
        Err(StoreError::Corrupt { .. }) => {}
        other => panic!("{what}: expected a Corrupt error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Acquire, renew, release.

#[test]
fn acquire_sets_fence_floor_expiry_ceiling_and_next_floor() {
    each_store(1, |f| {
        let a = owner("a");
        let got = f.acquire(&a, None).unwrap();
        assert_eq!(got.duplicate_owner_key, None);
        let l = &got.lease;
        assert_eq!((l.slot, l.fence, l.floor), (0, 1, 0));
        assert_eq!(l.expires_at, T0 + TTL);
        assert_eq!(l.ceiling, T0 + TTL + TOL);
        assert_eq!(l.store_now, T0);
        assert_eq!(l.owner, a);
        assert_eq!(l.namespace, f.ns);
        let r = f.record(0);
        assert_eq!(r.owner.as_ref(), Some(&a));
        assert_eq!(r.last_owner_key.as_deref(), Some("a"));
        assert_eq!((r.fence, r.floor, r.ceiling), (1, 0, T0 + TTL + TOL));
        assert_eq!(r.next_floor, r.ceiling);

        // A later holder's floor is the slot's next_floor; its fence grows by one.
        f.release(l, Some(T0 + 5)).unwrap();
        f.clock.set(T0 + 100);
        let b = f.lease(&owner("b"));
        assert_eq!((b.slot, b.fence, b.floor), (0, 3, T0 + 5));
        assert_eq!(b.expires_at, T0 + 100 + TTL);
        assert_eq!(b.ceiling, T0 + 100 + TTL + TOL);
        assert_eq!(f.record(0).next_floor, b.ceiling);

        // A floor beyond expires_at + tolerance becomes the ceiling too: the window is empty, never inverted.
        f.raise_not_before(T0 + HOUR).unwrap();
        let c = f.lease(&owner("c"));
        assert_eq!(c.slot, 1);
        assert_eq!((c.floor, c.ceiling), (T0 + HOUR, T0 + HOUR));
        assert_eq!(f.record(1).next_floor, T0 + HOUR);
    });
}

#[test]
fn renew_takes_the_max_keeps_the_fence_and_a_replay_succeeds() {
    each_store(1, |f| {
        let first = f.lease(&owner("a"));
        f.clock.set(T0 + 3_000);
        let renewed = f.renew(&first).unwrap();
        assert_eq!(renewed.fence, first.fence);
        assert_eq!(renewed.floor, first.floor);
        assert_eq!(renewed.expires_at, T0 + 3_000 + TTL);
        assert_eq!(renewed.ceiling, T0 + 3_000 + TTL + TOL);
        assert_eq!(renewed.store_now, T0 + 3_000);
        assert_eq!(f.record(0).next_floor, renewed.ceiling);

        // The store clock steps back: expiry and ceiling never shrink.
        f.clock.set(T0 + 1_000);
        let back = f.renew(&renewed).unwrap();
        assert_eq!(back.expires_at, renewed.expires_at);
        assert_eq!(back.ceiling, renewed.ceiling);
        assert_eq!(f.record(0).next_floor, renewed.ceiling);

        // A replayed (older) renewal request succeeds: the fence did not change, and nothing shrinks.
        let replay = f.renew(&first).unwrap();
        assert_eq!(replay.fence, first.fence);
        assert_eq!(replay.expires_at, renewed.expires_at);
        assert_eq!(replay.ceiling, renewed.ceiling);
        let again = f.renew(&first).unwrap();
        assert_eq!(again, replay);
    });
}

#[test]
fn renewal_after_expiry_succeeds_while_nobody_took_the_slot() {
    each_store(1, |f| {
        let lease = f.lease(&owner("a"));
        f.clock.set(T0 + 3 * TTL);
        assert!(f.record(0).expires_at < f.clock.now_ms());
        let renewed = f.renew(&lease).unwrap();
        assert_eq!(renewed.fence, lease.fence);
        assert_eq!(renewed.floor, lease.floor);
        assert_eq!(renewed.expires_at, T0 + 4 * TTL);
        assert_eq!(renewed.ceiling, T0 + 4 * TTL + TOL);
    });
}

#[test]
fn release_hands_over_max_of_floor_and_last_issued_capped_at_the_ceiling() {
    each_store(1, |f| {
        f.raise_not_before(T0 - 50_000).unwrap();
        // (last issued, expected next_floor as a function of the lease)
        type Expect = fn(&SlotLease) -> u64;
        let cases: [(&str, Expect, Expect); 6] = [
            ("nothing issued", |_| u64::MAX, |l| l.floor),
            ("below the floor", |l| l.floor - 1, |l| l.floor),
            ("at the floor", |l| l.floor, |l| l.floor),
            ("inside the window", |l| l.floor + 7, |l| l.floor + 7),
            ("at the ceiling", |l| l.ceiling, |l| l.ceiling),
            ("past the ceiling", |l| l.ceiling + 99, |l| l.ceiling),
        ];
        let mut previous_next_floor = T0 - 50_000;
        for (i, (what, last_of, expect)) in cases.iter().enumerate() {
            let key = format!("k{i}");
            let lease = f.lease(&owner(&key));
            assert_eq!(lease.slot, 0, "{what}");
            assert_eq!(lease.floor, previous_next_floor, "{what}: floor");
            let last = Some(last_of(&lease)).filter(|&l| l != u64::MAX);
            f.release(&lease, last).unwrap();
            let r = f.record(0);
            assert_eq!(r.owner, None, "{what}");
            assert_eq!(r.last_owner_key.as_deref(), Some(key.as_str()), "{what}");
            assert_eq!(r.fence, lease.fence + 1, "{what}: fence");
            assert_eq!(r.next_floor, expect(&lease), "{what}: next_floor");
            previous_next_floor = r.next_floor;
            // Past the handed-over floor, so slot 0 stays the lowest slot that can start now.
            f.clock
                .set(f.clock.now_ms().max(previous_next_floor) + 1_000);
        }
    });
}

#[test]
fn stale_renewal_and_release_after_a_takeover_are_rejected() {
    each_store(1, |f| {
        let a = f.lease(&owner("a"));
        f.clock.set(a.expires_at + 1);
        let b = f.lease(&owner("b"));
        assert_eq!((b.slot, b.fence, b.floor), (0, 2, a.ceiling));
        let before = f.record(0);
        assert_lost(f.renew(&a), "renewal by the old holder");
        assert_lost(
            f.release(&a, Some(a.floor + 1)),
            "release by the old holder",
        );
        assert_eq!(f.record(0), before, "a rejected call changed the record");

        // A replayed release, and a renewal after the release, are rejected too.
        f.release(&b, None).unwrap();
        assert_lost(f.release(&b, None), "a replayed release");
        assert_lost(f.renew(&b), "a renewal after release");

        // Same incarnation, newer fence: the old lease is still stale.
        let c_owner = owner("c");
        let c1 = f.lease(&c_owner);
        f.release(&c1, None).unwrap();
        let c2 = f.lease(&c_owner);
        assert_eq!(c2.fence, c1.fence + 2);
        match f.renew(&c1) {
            Err(StoreError::LeaseLost { reason, .. }) => {
                assert!(
                    reason.contains(&c2.fence.to_string())
                        && reason.contains(&c1.fence.to_string()),
                    "{reason}"
                )
            }
            other => panic!("expected LeaseLost, got {other:?}"),
        }
        assert!(f.renew(&c2).is_ok());
    });
}

#[test]
fn acquire_is_idempotent_per_key_and_incarnation() {
    each_store(1, |f| {
        let a = owner("a");
        let first = f.lease(&a);
        let record = f.record(0);
        f.clock.advance(500);
        let again = f.acquire(&a, Some(1)).unwrap();
        assert_eq!(again.duplicate_owner_key, None);
        let l = &again.lease;
        assert_eq!(
            (l.slot, l.fence, l.floor, l.expires_at, l.ceiling),
            (
                first.slot,
                first.fence,
                first.floor,
                first.expires_at,
                first.ceiling
            )
        );
        assert_eq!(l.store_now, T0 + 500);
        assert_eq!(
            f.record(0),
            record,
            "an idempotent retry wrote to the store"
        );
        assert_eq!(f.records().len(), 1);

        // Even after expiry, as long as nobody took the slot, the retry returns the same lease.
        f.clock.set(first.expires_at + 5_000);
        let late = f.acquire(&a, None).unwrap().lease;
        assert_eq!((late.slot, late.fence), (first.slot, first.fence));
        assert_eq!(f.record(0), record);
    });
}

// ---------------------------------------------------------------------------------------------------------------
// Slot choice.

#[test]
fn slot_choice_prefers_the_slot_already_held() {
    each_store(2, |f| {
        let a = owner("a");
        let held = f.acquire(&a, Some(2)).unwrap().lease;
        assert_eq!(held.slot, 2);
        let again = f.acquire(&a, Some(3)).unwrap().lease;
        assert_eq!((again.slot, again.fence), (2, held.fence));
    });
}

#[test]
fn slot_choice_takes_the_preferred_slot_if_free() {
    each_store(2, |f| {
        assert_eq!(f.acquire(&owner("a"), Some(2)).unwrap().lease.slot, 2);
        // Held: the lowest free slot instead.
        assert_eq!(f.acquire(&owner("b"), Some(2)).unwrap().lease.slot, 0);
        // Out of range for 4 slots: ignored.
        assert_eq!(f.acquire(&owner("c"), Some(9)).unwrap().lease.slot, 1);
        // An expired lease counts as free.
        f.clock.set(T0 + TTL + 1);
        assert_eq!(f.acquire(&owner("d"), Some(2)).unwrap().lease.slot, 2);
    });
}

#[test]
fn slot_choice_is_sticky_before_lowest_and_after_preferred() {
    each_store(2, |f| {
        let a = f.lease(&owner("ka"));
        let b = f.lease(&owner("kb"));
        let c = f.lease(&owner("kc"));
        assert_eq!((a.slot, b.slot, c.slot), (0, 1, 2));
        f.release(&a, None).unwrap();
        f.release(&b, None).unwrap();
        // Slot 0 is the lowest free, but kb's new incarnation gets its old slot 1 back.
        assert_eq!(f.lease(&owner("kb")).slot, 1);
        // The preferred slot beats the sticky one.
        assert_eq!(f.acquire(&owner("ka"), Some(3)).unwrap().lease.slot, 3);
        // An expired (never released) slot is sticky too.
        f.clock.set(T0 + TTL + 1);
        assert_eq!(f.lease(&owner("kc")).slot, 2);
        // A new key gets the lowest free slot.
        assert_eq!(f.lease(&owner("new")).slot, 0);
    });
}

#[test]
fn slot_choice_takes_the_lowest_free_slot_counting_expired_leases() {
    each_store(2, |f| {
        let mut leases = Vec::new();
        for (i, key) in ["a", "b", "c", "d"].iter().enumerate() {
            f.clock.set(T0 + 1_000 * i as u64);
            leases.push(f.lease(&owner(key)));
        }
        assert_eq!(
            leases.iter().map(|l| l.slot).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        f.clock.set(T0 + 5_000);
        for i in [0, 1, 3] {
            f.renew(&leases[i]).unwrap();
        }
        f.clock.set(leases[2].expires_at + 1);
        let e = f.lease(&owner("e"));
        assert_eq!((e.slot, e.floor), (2, leases[2].ceiling));
    });
}

#[test]
fn exhaustion_reports_the_earliest_expiry() {
    each_store(2, |f| {
        let mut expiries = Vec::new();
        for (i, key) in ["a", "b", "c", "d"].iter().enumerate() {
            f.clock.set(T0 + [3_000, 1_000, 4_000, 2_000][i]);
            expiries.push(f.lease(&owner(key)).expires_at);
        }
        f.clock.set(T0 + 5_000);
        match f.acquire(&owner("e"), None) {
            Err(StoreError::Exhausted {
                slots,
                earliest_expiry,
                store_now,
                ..
            }) => {
                assert_eq!(slots, 4);
                assert_eq!(earliest_expiry, T0 + 1_000 + TTL);
                assert_eq!(earliest_expiry, *expiries.iter().min().unwrap());
                assert_eq!(store_now, T0 + 5_000);
            }
            other => panic!("expected Exhausted, got {other:?}"),
        }
        // Once that lease expires, its slot is the one taken.
        f.clock.set(T0 + 1_000 + TTL + 1);
        assert_eq!(f.lease(&owner("e")).slot, 1);
    });
}

#[test]
fn a_duplicate_owner_key_is_never_taken_over_and_is_reported() {
    each_store(1, |f| {
        let first = owner("same");
        let second = owner("same");
        let a = f.acquire(&first, None).unwrap();
        assert_eq!(a.duplicate_owner_key, None);
        // The preferred slot is the other instance's: it is not taken over.
        let b = f.acquire(&second, Some(0)).unwrap();
        assert_eq!(b.lease.slot, 1);
        assert_eq!(b.duplicate_owner_key, Some(0));
        assert_eq!(f.record(0).owner.as_ref(), Some(&first));
        assert!(f.renew(&a.lease).is_ok());
        // A third instance with the key finds both slots held by live leases.
        assert!(matches!(
            f.acquire(&owner("same"), None),
            Err(StoreError::Exhausted { .. })
        ));
        // Once the first expires, a new instance takes slot 0 and names the other live one.
        f.clock.set(a.lease.expires_at + 1);
        f.renew(&b.lease).unwrap();
        let c = f.acquire(&owner("same"), None).unwrap();
        assert_eq!(c.lease.slot, 0);
        assert_eq!(c.duplicate_owner_key, Some(1));
    });
}

#[test]
fn a_duplicate_owner_key_reaches_the_runtime_subscriber() {
    let clock = ManualClock::new(T0);
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new(Arc::new(clock.clone())));
    let build = |events: Arc<Mutex<Vec<Event>>>| {
        Runtime::builder()
            .store_instance(store.clone())
            .clock(Arc::new(clock.clone()))
            .namespace("dup")
            .owner_key("host:1")
            .ttl(Duration::from_secs(3_600))
            .subscribe(move |e| events.lock().unwrap().push(e.clone()))
            .build()
            .unwrap()
    };
    let first_events = Arc::new(Mutex::new(Vec::new()));
    let second_events = Arc::new(Mutex::new(Vec::new()));
    let first = build(first_events.clone());
    let second = build(second_events.clone());
    assert_ne!(first.status().slot, second.status().slot);
    let events = second_events.lock().unwrap().clone();
    assert!(
        events.contains(&Event::DuplicateOwnerKey {
            key: "host:1".into(),
            other_slot: first.status().slot
        }),
        "{events:?}"
    );
    assert!(!first_events
        .lock()
        .unwrap()
        .iter()
        .any(|e| matches!(e, Event::DuplicateOwnerKey { .. })));
}

// ---------------------------------------------------------------------------------------------------------------
// The namespace record.

#[test]
fn a_namespace_mismatch_is_refused_naming_both_values() {
    each_store(2, |f| {
        f.lease(&owner("a"));
        let cases = [
            (
                "bits",
                2,
                3,
                NamespaceConfig {
                    bits: 3,
                    tolerance_ms: TOL,
                    layout: cosid::Layout::millis(),
                },
            ),
            (
                "tolerance_ms",
                TOL,
                2_500,
                NamespaceConfig {
                    bits: 2,
                    tolerance_ms: 2_500,
                    layout: cosid::Layout::millis(),
                },
            ),
        ];
        for (field, stored, requested, config) in cases {
            let err = f.acquire_with(&owner("b"), None, config).unwrap_err();
            let message = err.to_string();
            match err {
                StoreError::NamespaceMismatch {
                    field: fd,
                    stored: s,
                    requested: r,
                    namespace,
                } => {
                    assert_eq!((fd, s, r), (field, stored, requested));
                    assert_eq!(namespace, NS);
                }
                other => panic!("expected NamespaceMismatch, got {other:?}"),
            }
            assert!(
                message.contains(&format!("{field} = {stored}"))
                    && message.contains(&requested.to_string()),
                "{message}"
            );
        }
        // Nothing was granted to the refused instances.
        assert_eq!(f.records().len(), 1);
    });
}

#[test]
fn not_before_is_the_floor_of_never_used_slots_and_never_goes_down() {
    each_store(1, |f| {
        let nb = T0 + 60_000;
        f.raise_not_before(nb).unwrap();
        let a = f.lease(&owner("a"));
        assert_eq!((a.slot, a.floor), (0, nb));
        assert_eq!(a.ceiling, nb.max(T0 + TTL + TOL));
        assert!(matches!(
            f.raise_not_before(nb - 1),
            Err(StoreError::NotBeforeLowered { stored, requested, .. }) if stored == nb && requested == nb - 1
        ));
        // The window (nb, nb] is empty: a generator bound to it issues nothing, before or after not_before.
        let host = ManualClock::new(T0);
        let generator = Generator::new(Layout::millis(), Arc::new(host.clone()), Waits::default());
        bind(&generator, &a);
        match generator.next_id() {
            Err(Error::BeforeWindow { floor_ms, .. }) => assert_eq!(floor_ms, nb),
            other => panic!("expected BeforeWindow, got {other:?}"),
        }
        host.set(nb + 1);
        assert!(matches!(
            generator.next_id(),
            Err(Error::WindowClosed { .. })
        ));
        // Renewed once the store reaches not_before, it issues just above it.
        f.clock.set(nb);
        let renewed = f.renew(&a).unwrap();
        assert_eq!((renewed.floor, renewed.ceiling), (nb, nb + TTL + TOL));
        generator.extend(renewed.ceiling);
        host.set(nb + 1);
        assert_eq!(
            ms_of(&Layout::millis(), generator.next_id().unwrap()),
            nb + 1
        );
    });
}

// ---------------------------------------------------------------------------------------------------------------
// Corrupt records.

fn valid_record(owner: &Owner) -> SlotRecord {
    SlotRecord {
        slot: 0,
        owner: Some(owner.clone()),
        last_owner_key: Some(owner.key.clone()),
        fence: 4,
        expires_at: T0 + TTL,
        floor: T0 - 100,
        ceiling: T0 + TTL + TOL,
        next_floor: T0 + TTL + TOL,
    }
}

/// A holder whose clock ran an hour ahead released slot 0 with a floor an hour away: later acquirers take the
/// other free slot, and slot 0 only when nothing else is free (it is still the only safe floor for it).
#[test]
fn a_slot_released_an_hour_ahead_is_taken_only_when_no_other_is_free() {
    each_store(1, |f| {
        let fast = owner("fast");
        let first = f.lease(&fast);
        assert_eq!(first.slot, 0);
        let hour = 3_600_000;
        let poisoned = SlotRecord {
            slot: 0,
            owner: None,
            last_owner_key: Some(fast.key.clone()),
            fence: first.fence + 1,
            expires_at: T0 + hour,
            floor: first.floor,
            ceiling: T0 + hour + TOL,
            next_floor: T0 + hour + TOL,
        };
        f.put_raw(&poisoned);
        let b = f.lease(&owner("b"));
        assert_eq!(
            (b.slot, b.floor),
            (1, 0),
            "the free slot that can start now"
        );
        let c = f.lease(&owner("c"));
        assert_eq!(
            (c.slot, c.floor),
            (0, T0 + hour + TOL),
            "the slot an hour ahead, once it is the only one free, with its floor"
        );
    });
}

#[test]
fn corrupt_records_are_refused_never_read_as_absent() {
    type Corrupt = fn(&mut SlotRecord);
    let corruptions: [(&str, Corrupt); 6] = [
        ("floor above ceiling", |r| r.floor = r.ceiling + 1),
        ("fence 0", |r| r.fence = 0),
        ("next_floor below the holder's ceiling", |r| {
            r.next_floor = r.ceiling - 1
        }),
        ("next_floor below floor (released)", |r| {
            r.owner = None;
            r.next_floor = r.floor - 1;
        }),
        ("slot beyond 2^bits", |r| r.slot = 2),
        ("slot far beyond 2^bits", |r| r.slot = 1 << 20),
    ];
    for (what, corrupt) in corruptions {
        each_store(1, |f| {
            let a = owner("a");
            let lease = f.lease(&a);
            let mut bad = valid_record(&a);
            f.put_raw(&bad);
            // The valid record is accepted as it is, by the lease it stands for.
            let lease = SlotLease {
                fence: 4,
                floor: bad.floor,
                ceiling: bad.ceiling,
                ..lease
            };
            assert!(f.renew(&lease).is_ok(), "{what}: the valid record");
            corrupt(&mut bad);
            f.put_raw(&bad);
            assert_corrupt(f.acquire(&owner("b"), None), what);
            if bad.slot == 0 {
                assert_corrupt(f.renew(&lease), what);
                assert_corrupt(f.release(&lease, None), what);
            }
            let stored = f
                .records()
                .into_iter()
                .find(|r| r.slot == bad.slot)
                .unwrap();
            assert_eq!(stored, bad, "{what}: the refused record was overwritten");
        });
    }
}

#[test]
fn undecodable_sqlite_rows_are_refused() {
    let cases = [
        (
            "an incarnation that is not a UUID",
            "UPDATE cosid_slot SET incarnation = 'not-a-uuid'",
        ),
        (
            "an owner key without an incarnation",
            "UPDATE cosid_slot SET incarnation = NULL",
        ),
        ("a negative fence", "UPDATE cosid_slot SET fence = -1"),
        ("a negative floor", "UPDATE cosid_slot SET floor = -5"),
        ("a text ceiling", "UPDATE cosid_slot SET ceiling = 'soon'"),
        ("bits 0", "UPDATE cosid_namespace SET bits = 0"),
        ("bits 99", "UPDATE cosid_namespace SET bits = 99"),
        ("a missing namespace record", "DELETE FROM cosid_namespace"),
    ];
    let ran = AtomicU64::new(0);
    for (what, sql) in cases {
        each_store(1, |f| {
            let lease = f.lease(&owner("a"));
            if !f.sql(sql) {
                return;
            }
            ran.fetch_add(1, Ordering::Relaxed);
            if what == "a missing namespace record" {
                // Written before any slot and never deleted: its absence under a held lease is lost writes.
                assert_regression(f.renew(&lease), what);
                assert_regression(f.release(&lease, None), what);
            } else {
                assert_corrupt(f.renew(&lease), what);
                assert_corrupt(f.release(&lease, None), what);
                assert_corrupt(f.acquire(&owner("b"), None), what);
            }
        });
    }
    if cfg!(feature = "sqlite") {
        assert_eq!(ran.into_inner(), cases.len() as u64);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// DESIGN §2: what clocks can do, and what the holder does about it.

fn bind(generator: &Generator, lease: &SlotLease) {
    generator.bind(Window {
        slot: lease.slot,
        floor_ms: lease.floor,
        ceiling_ms: lease.ceiling,
    });
}

fn ms_of(layout: &Layout, id: Id) -> u64 {
    layout.decompose(id).unwrap().timestamp_ms
}

fn host_generator(host: &ManualClock) -> Generator {
    Generator::new(Layout::millis(), Arc::new(host.clone()), Waits::default())
}

#[test]
fn host_clock_ahead_of_the_store_reaches_the_ceiling_waits_then_issues_after_renewal() {
    each_store(1, |f| {
        let layout = Layout::millis();
        // The host runs 5 s ahead of the store, more than the 1 s tolerance.
        let host = ManualClock::new(T0 + 5_000);
        let generator = host_generator(&host);
        let lease = f.lease(&owner("a"));
        bind(&generator, &lease);
        assert_eq!(ms_of(&layout, generator.next_id().unwrap()), T0 + 5_000);
        host.set(lease.ceiling);
        assert_eq!(ms_of(&layout, generator.next_id().unwrap()), lease.ceiling);
        host.set(lease.ceiling + 1);
        match generator.next_id() {
            Err(Error::WindowClosed {
                ceiling_ms,
                now_ms,
                waited_ms,
            }) => {
                assert_eq!(ceiling_ms, lease.ceiling);
                assert!(now_ms > ceiling_ms);
                assert!(waited_ms >= Waits::default().window.as_millis() as u64);
            }
            other => panic!("expected WindowClosed, got {other:?}"),
        }
        // The keeper's renewal comes in: issuing resumes, still inside the (new) window.
        f.clock.set(T0 + 7_000);
        let renewed = f.renew(&lease).unwrap();
        assert!(renewed.ceiling > host.now_ms());
        generator.extend(renewed.ceiling);
        let t = ms_of(&layout, generator.next_id().unwrap());
        assert!(t > lease.ceiling && t <= renewed.ceiling, "{t}");
        host.set(renewed.ceiling + 1);
        assert!(matches!(
            generator.next_id(),
            Err(Error::WindowClosed { .. })
        ));
    });
}

#[test]
fn host_clock_behind_the_store_waits_to_pass_the_floor() {
    each_store(1, |f| {
        let layout = Layout::millis();
        let a_host = ManualClock::new(T0);
        let a = host_generator(&a_host);
        let a_lease = f.lease(&owner("a"));
        bind(&a, &a_lease);
        a_host.set(a_lease.ceiling);
        let a_last = ms_of(&layout, a.next_id().unwrap());
        // a crashes; its lease expires; b, whose clock runs 5 s behind the store, takes the slot.
        f.clock.set(a_lease.expires_at + 1);
        let b_lease = f.lease(&owner("b"));
        assert_eq!((b_lease.slot, b_lease.floor), (0, a_lease.ceiling));
        let b_host = ManualClock::new(f.clock.now_ms() - 5_000);
        // A 2 s bound is not enough to pass the floor.
        let b = host_generator(&b_host);
        bind(&b, &b_lease);
        match b.next_id() {
            Err(Error::BeforeWindow {
                floor_ms,
                now_ms,
                waited_ms,
            }) => {
                assert_eq!(floor_ms, b_lease.floor);
                assert!(now_ms <= floor_ms);
                assert!(waited_ms >= 2_000);
            }
            other => panic!("expected BeforeWindow, got {other:?}"),
        }
        // With a longer bound it waits and issues just past the floor.
        b_host.set(f.clock.now_ms() - 5_000);
        let patient = Generator::new(
            layout,
            Arc::new(b_host.clone()),
            Waits {
                window: Duration::from_secs(10),
                ..Waits::default()
            },
        );
        bind(&patient, &b_lease);
        let t = ms_of(&layout, patient.next_id().unwrap());
        assert!(t > b_lease.floor && t <= b_lease.floor + 10, "{t}");
        assert!(t > a_last);
    });
}

#[test]
fn store_clock_jumps_only_grow_floors_and_ceilings() {
    each_store(1, |f| {
        let layout = Layout::millis();
        let host = ManualClock::new(T0);
        let gen_a = Generator::new(layout, Arc::new(host.clone()), no_waiting());
        let gen_b = Generator::new(layout, Arc::new(host.clone()), no_waiting());
        let a = f.lease(&owner("a"));
        bind(&gen_a, &a);
        // The store fails over to a clock an hour ahead: a's lease expires early and b takes the slot.
        f.clock.set(T0 + HOUR);
        let b = f.lease(&owner("b"));
        assert_eq!((b.slot, b.floor), (0, a.ceiling));
        assert!(b.ceiling > a.ceiling);
        assert_lost(f.renew(&a), "a's renewal after the jump");
        bind(&gen_b, &b);
        // Both hosts still read the old time: a (unaware) issues up to its ceiling, b waits to pass its floor.
        let mut seen = HashSet::new();
        let (mut from_a, mut from_b) = (0, 0);
        for t in (T0..=a.ceiling + 2_000).step_by(250) {
            host.set(t);
            if let Ok(id) = gen_a.next_id() {
                assert!(ms_of(&layout, id) <= a.ceiling);
                assert!(seen.insert(id));
                from_a += 1;
            }
            if let Ok(id) = gen_b.next_id() {
                assert!(ms_of(&layout, id) > a.ceiling);
                assert!(seen.insert(id));
                from_b += 1;
            }
        }
        assert!(from_a > 0 && from_b > 0, "{from_a} {from_b}");

        // The store clock steps back by two hours: b's expiry and ceiling never shrink.
        f.clock.set(T0 - HOUR);
        let renewed = f.renew(&b).unwrap();
        assert_eq!(
            (renewed.expires_at, renewed.ceiling),
            (b.expires_at, b.ceiling)
        );
        // The slot is still b's: another holder gets the other slot.
        let c = f.lease(&owner("c"));
        assert_eq!(c.slot, 1);
        // b releases having issued up to some point; the next floor on slot 0 is never below it, whatever the clock.
        let b_last = gen_b.seal().unwrap();
        f.release(&renewed, Some(b_last)).unwrap();
        let d = f.lease(&owner("d"));
        assert_eq!((d.slot, d.floor), (0, b_last));
        assert!(d.ceiling >= d.floor);
        assert!(d.floor >= a.ceiling);
    });
}

fn no_waiting() -> Waits {
    Waits {
        window: Duration::ZERO,
        ..Waits::default()
    }
}

#[test]
fn a_process_paused_past_expiry_refuses_its_timestamps() {
    each_store(1, |f| {
        let layout = Layout::millis();
        let host = ManualClock::new(T0);
        let a = host_generator(&host);
        let a_lease = f.lease(&owner("a"));
        bind(&a, &a_lease);
        host.set(T0 + 10);
        let before = a.next_id().unwrap();
        // a is frozen for three ttls; meanwhile b takes the slot.
        host.advance(3 * TTL);
        f.clock.advance(3 * TTL);
        let b_lease = f.lease(&owner("b"));
        assert_eq!((b_lease.slot, b_lease.floor), (0, a_lease.ceiling));
        // a wakes up: its clock is past its ceiling, so it refuses rather than issue.
        assert!(
            matches!(a.next_id(), Err(Error::WindowClosed { ceiling_ms, .. }) if ceiling_ms == a_lease.ceiling)
        );
        assert!(matches!(
            a.fill(&mut [Id::from_u64(0); 3]),
            Err(Error::WindowClosed { .. })
        ));
        // Its keeper then learns the lease is gone; every call fails fast.
        assert_lost(f.renew(&a_lease), "renewal after the pause");
        a.invalidate();
        assert!(matches!(a.next_id(), Err(Error::SlotLost { slot: 0 })));
        let b = host_generator(&host);
        bind(&b, &b_lease);
        let after = b.next_id().unwrap();
        assert!(ms_of(&layout, after) > ms_of(&layout, before));
        assert!(ms_of(&layout, after) > a_lease.ceiling);
    });
}

fn manual_runtime(clock: &ManualClock, store: Arc<dyn LeaseStore>, ns: &str) -> Runtime {
    Runtime::builder()
        .store_instance(store)
        .clock(Arc::new(clock.clone()))
        .namespace(ns)
        .bits(1)
        .ttl(Duration::from_secs(3_600))
        .build()
        .unwrap()
}

#[test]
fn a_runtime_paused_past_expiry_refuses_and_the_next_holder_starts_above_its_ceiling() {
    let clock = ManualClock::new(T0);
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new(Arc::new(clock.clone())));
    let first = manual_runtime(&clock, store.clone(), "pause");
    let id = first.next_id().unwrap();
    let ceiling = first.status().ceiling_ms;
    clock.advance(3 * HOUR);
    match first.next_id() {
        Err(Error::WindowClosed { ceiling_ms, .. }) => assert_eq!(ceiling_ms, ceiling),
        other => panic!("expected WindowClosed, got {other:?}"),
    }
    let second = manual_runtime(&clock, store, "pause");
    assert_eq!(second.status().slot, first.status().slot);
    assert_eq!(second.status().floor_ms, ceiling);
    let next = second.next_id().unwrap();
    assert!(ms_of(second.layout(), next) > ceiling);
    assert!(next > id);
}

#[test]
fn wall_clock_stepped_back_keeps_issuing_from_the_last_tick_then_waits_then_errors() {
    let clock = ManualClock::new(T0);
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new(Arc::new(clock.clone())));
    let rt = manual_runtime(&clock, store, "backwards");
    let layout = *rt.layout();
    let first = rt.next_id().unwrap();
    assert_eq!(ms_of(&layout, first), T0);
    // Back by 100 ms: the sequence of tick T0 is used up first, then the call waits for tick T0 + 1.
    clock.set(T0 - 100);
    let mut last = first;
    for _ in 0..layout.max_sequence() {
        let id = rt.next_id().unwrap();
        assert_eq!(ms_of(&layout, id), T0);
        assert!(id > last);
        last = id;
    }
    let waited = rt.next_id().unwrap();
    assert_eq!(ms_of(&layout, waited), T0 + 1);
    assert!(
        clock.now_ms() > T0,
        "the wait did not let the clock catch up"
    );
    // Back by 600 ms, beyond the 500 ms bound: still issues while tick T0 + 1 has sequence left, then errors.
    clock.set(T0 + 1 - 600);
    for _ in 0..layout.max_sequence() {
        assert_eq!(ms_of(&layout, rt.next_id().unwrap()), T0 + 1);
    }
    match rt.next_id() {
        Err(Error::ClockMovedBackwards {
            behind_ms,
            threshold_ms,
        }) => {
            assert_eq!(threshold_ms, 500);
            assert_eq!(behind_ms, 601);
        }
        other => panic!("expected ClockMovedBackwards, got {other:?}"),
    }
    // The clock comes back: issuing resumes above everything issued.
    clock.set(T0 + 50);
    let resumed = rt.next_id().unwrap();
    assert_eq!(ms_of(&layout, resumed), T0 + 50);
    assert!(resumed > last);
}

// ---------------------------------------------------------------------------------------------------------------
// Coarse ticks and sealing.

/// DESIGN §2: tick `T` of length `L` may be issued only if `floor < T*L` and `(T+1)*L - 1 <= ceiling`, times
/// counted from the layout's epoch.
fn tick_allowed(layout: &Layout, tick: u64, floor: u64, ceiling: u64) -> bool {
    let l = layout.tick().millis();
    let start = layout.epoch_ms() + tick * l;
    floor < start && start + l - 1 <= ceiling
}

#[test]
fn coarse_ticks_issue_only_ticks_that_lie_wholly_inside_the_window() {
    let mut total = 0;
    for layout in [Layout::seconds(), Layout::millis()] {
        let e = layout.epoch_ms();
        let l = layout.tick().millis();
        for floor in [
            e + 10 * l - 1,
            e + 10 * l,
            e + 10 * l + 1,
            e + 10 * l + l / 2,
        ] {
            for ceiling in [e + 13 * l - 2, e + 13 * l - 1, e + 13 * l, e + 14 * l - 2] {
                let mut issued = Vec::new();
                for now in (e + 8 * l..e + 16 * l).step_by((l / 4).max(1) as usize) {
                    let clock = ManualClock::new(now);
                    let g = Generator::new(layout, Arc::new(clock), no_waiting());
                    g.bind(Window {
                        slot: 3,
                        floor_ms: floor,
                        ceiling_ms: ceiling,
                    });
                    let now_tick = layout.tick_at(now).unwrap();
                    let allowed = tick_allowed(&layout, now_tick, floor, ceiling);
                    match g.next_id() {
                        Ok(id) => {
                            let parts = layout.decompose(id).unwrap();
                            assert!(
                                allowed && parts.tick == now_tick,
                                "{layout:?}: window ({floor}, {ceiling}] issued tick {} at {now}",
                                parts.tick
                            );
                            // Sealing reports the last millisecond of that tick.
                            assert_eq!(g.seal(), Some(layout.tick_end_ms(now_tick)));
                            issued.push(now_tick);
                        }
                        Err(Error::BeforeWindow { .. } | Error::WindowClosed { .. }) => assert!(
                            !allowed,
                            "{layout:?}: window ({floor}, {ceiling}] refused allowed tick {now_tick} at {now}"
                        ),
                        Err(other) => panic!("unexpected {other}"),
                    }
                }
                total += issued.len();
            }
        }
    }
    assert!(total > 100, "only {total} ids issued in the sweep");
}

#[test]
fn a_coarse_tick_release_hands_over_the_ticks_last_millisecond() {
    each_store(1, |f| {
        let layout = Layout::seconds();
        let host = ManualClock::new(T0 + 250);
        let a = Generator::new(layout, Arc::new(host.clone()), Waits::default());
        let lease = f.lease(&owner("a"));
        bind(&a, &lease);
        let id = a.next_id().unwrap();
        let tick = layout.decompose(id).unwrap().tick;
        let last = a.seal().unwrap();
        assert_eq!(last, layout.tick_end_ms(tick));
        assert!(last > T0 + 250 && last <= lease.ceiling);
        f.release(&lease, Some(last)).unwrap();
        assert_eq!(f.record(0).next_floor, last);
        // The next holder on the same host cannot issue in that second again.
        let b_lease = f.lease(&owner("b"));
        assert_eq!(b_lease.floor, last);
        let b = Generator::new(layout, Arc::new(host.clone()), Waits::default());
        bind(&b, &b_lease);
        let next = b.next_id().unwrap();
        assert!(layout.decompose(next).unwrap().tick > tick);
        assert!(next > id);
    });
}

#[test]
fn after_seal_returns_no_thread_returns_an_id() {
    for round in 0..20 {
        let layout = Layout::millis();
        let clock = ManualClock::new(T0);
        let generator = Arc::new(Generator::new(
            layout,
            Arc::new(clock.clone()),
            Waits::default(),
        ));
        generator.bind(Window {
            slot: 1,
            floor_ms: T0 - 1,
            ceiling_ms: T0 + HOUR,
        });
        let sealed = Arc::new(AtomicBool::new(false));
        let issued = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (generator, sealed, issued) =
                    (generator.clone(), sealed.clone(), issued.clone());
                std::thread::spawn(move || {
                    let mut ids = Vec::new();
                    let mut batch = [Id::from_u64(0); 7];
                    loop {
                        let started_after_seal = sealed.load(Ordering::SeqCst);
                        batch.fill(Id::from_u64(0));
                        let result = if t == 3 {
                            generator.fill(&mut batch).map(|()| batch.to_vec())
                        } else {
                            generator.next_id().map(|id| vec![id])
                        };
                        match result {
                            Ok(got) => {
                                assert!(
                                    !started_after_seal,
                                    "an id was returned by a call made after the seal"
                                );
                                issued.fetch_add(got.len() as u64, Ordering::Relaxed);
                                ids.extend(got);
                            }
                            Err(Error::Closed { .. }) => {
                                // A batch cut short by the seal: its ids were reserved before the seal and are
                                // discarded by the caller, but they count for the exactness of the last timestamp.
                                let reserved = batch.iter().copied().filter(|id| id.as_u64() != 0);
                                return (ids, reserved.collect::<Vec<_>>());
                            }
                            Err(other) => panic!("unexpected {other}"),
                        }
                    }
                })
            })
            .collect();
        while issued.load(Ordering::Relaxed) < 5_000 {
            std::thread::yield_now();
        }
        let last = generator.seal().expect("ids were issued");
        sealed.store(true, Ordering::SeqCst);
        let mut all = HashSet::new();
        let mut max_ms = 0;
        for t in threads {
            let (returned, discarded) = t.join().unwrap();
            for id in returned {
                assert!(all.insert(id), "round {round}: {id} issued twice");
                let ms = layout.tick_end_ms(layout.decompose(id).unwrap().tick);
                assert!(
                    ms <= last,
                    "round {round}: {id} at {ms} ms, after the sealed last {last}"
                );
                max_ms = max_ms.max(ms);
            }
            for id in discarded {
                assert!(all.insert(id), "round {round}: {id} issued twice");
                max_ms = max_ms.max(layout.tick_end_ms(layout.decompose(id).unwrap().tick));
            }
        }
        assert_eq!(
            max_ms, last,
            "round {round}: the seal's last timestamp is not exact"
        );
        assert!(generator.next_id().is_err());
        assert_eq!(generator.seal(), Some(last));
    }
}

#[test]
fn stale_calls_never_touch_a_newer_lease() {
    // The runtime-level promise behind the simulation: a stale renew or release never changes the new holder's
    // record, on any store.
    each_store(1, |f| {
        let a = f.lease(&owner("a"));
        f.clock.set(a.expires_at + 1);
        let b = f.lease(&owner("b"));
        for _ in 0..3 {
            assert!(is_lost(f.renew(&a)));
            assert!(is_lost(f.release(&a, Some(a.floor))));
        }
        let r = f.record(0);
        assert_eq!(r.owner, Some(b.owner.clone()));
        assert_eq!(
            (r.fence, r.floor, r.next_floor),
            (b.fence, b.floor, b.ceiling)
        );
    });
}

#[test]
fn namespace_bits_out_of_range_are_refused_before_anything_is_written() {
    use cosid::lease::protocol;
    let ns = cosid::lease::Namespace::new("bits").unwrap();
    for bits in [0u8, 32, 63, 64, 200] {
        let config = cosid::lease::NamespaceConfig {
            bits,
            tolerance_ms: 1_000,
            layout: cosid::Layout::millis(),
        };
        let err = protocol::check_namespace(&ns, None, &config).unwrap_err();
        assert!(
            matches!(err, cosid::store::StoreError::InvalidSettings { .. }),
            "{bits}: {err}"
        );
        assert!(err.to_string().contains(&format!("bits = {bits}")), "{err}");
    }
    for bits in [1u8, 10, 31] {
        let config = cosid::lease::NamespaceConfig {
            bits,
            tolerance_ms: 1_000,
            layout: cosid::Layout::millis(),
        };
        assert_eq!(
            protocol::check_namespace(&ns, None, &config).unwrap().bits,
            bits
        );
    }
}
