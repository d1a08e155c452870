//! The keeper through a `Runtime`: renewal, a lease lost and replaced, ordered shutdown handing the last
//! timestamp to the next holder, clock skew, duplicate owner keys and event delivery.
//!
//! Leases are short (a few hundred ms) so renewals happen within the test; every wait on the keeper is a wait
//! for an event (with a generous deadline that only catches a hang), never an assertion about elapsed time.

use cosid::clock::{Clock, ManualClock, SystemClock};
use cosid::lease::{Namespace, Owner, SlotRecord};
use cosid::store::{LeaseStore, MemoryStore, SqliteStore};
use cosid::{Error, Event, Id, Layout, Runtime, State};
use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a test waits for an event before it declares the keeper hung.
const HANG: Duration = Duration::from_secs(20);
/// A fixed store time for tests on a manual clock (2023-11-14).
const T0: u64 = 1_700_000_000_000;

/// Every event a runtime delivered, in order.
#[derive(Clone, Default)]
struct Events(Arc<(Mutex<Vec<Event>>, Condvar)>);

impl Events {
    fn listener(&self) -> impl Fn(&Event) + Send + Sync + 'static {
        let me = self.clone();
        move |e| {
            me.0 .0.lock().unwrap().push(e.clone());
            me.0 .1.notify_all();
        }
    }

    fn all(&self) -> Vec<Event> {
        self.0 .0.lock().unwrap().clone()
    }

    /// Waits until `done` holds for the events so far; returns them.
    fn wait_for(&self, what: &str, done: impl Fn(&[Event]) -> bool) -> Vec<Event> {
        let deadline = Instant::now() + HANG;
        let mut events = self.0 .0.lock().unwrap();
        while !done(&events) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "no {what} within {HANG:?}; events: {events:#?}"
            );
            events = self.0 .1.wait_timeout(events, left).unwrap().0;
        }
        events.clone()
    }
}

fn count(events: &[Event], name: &str) -> usize {
    events.iter().filter(|e| e.name() == name).count()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

fn memory(clock: Arc<dyn Clock>) -> Arc<dyn LeaseStore> {
    Arc::new(MemoryStore::new(clock))
}

fn sqlite(dir: &tempfile::TempDir, clock: Arc<dyn Clock>) -> Arc<dyn LeaseStore> {
    Arc::new(SqliteStore::open(&dir.path().join("leases.db"), clock).unwrap())
}

fn ids(rt: &Runtime, n: usize) -> Vec<u64> {
    (0..n).map(|_| rt.next_id().unwrap().as_u64()).collect()
}

fn timestamp(id: u64) -> u64 {
    Layout::millis()
        .decompose(Id::from_u64(id))
        .unwrap()
        .timestamp_ms
}

fn slot_of(id: u64) -> u64 {
    Layout::millis().decompose(Id::from_u64(id)).unwrap().slot
}

fn renewal_extends_the_lease(store: Arc<dyn LeaseStore>) {
    let events = Events::default();
    let rt = Runtime::builder()
        .store_instance(store)
        .namespace("renewal")
        .ttl(Duration::from_millis(300))
        .tolerance(Duration::from_millis(100))
        .subscribe(events.listener())
        .build()
        .unwrap();
    let first = rt.status();
    assert_eq!(first.state, State::Active);
    assert_eq!(first.ceiling_ms, first.expires_at_ms + 100);
    // A builder's subscriber sees the first lease.
    assert_eq!(
        events.all().first(),
        Some(&Event::Acquired {
            slot: first.slot,
            fence: first.fence,
            floor_ms: first.floor_ms,
            ceiling_ms: first.ceiling_ms,
            expires_at_ms: first.expires_at_ms,
        })
    );
    let before = ids(&rt, 1_000);

    // Renewals come every ttl/3 = 100 ms; four of them span more than one ttl, so the first lease would have
    // expired by then without them.
    let seen = events.wait_for("4 renewals", |e| count(e, "RENEWED") >= 4);
    let renewals: Vec<(u32, u64, u64)> = seen
        .iter()
        .filter_map(|e| match *e {
            Event::Renewed {
                slot,
                ceiling_ms,
                expires_at_ms,
            } => Some((slot, ceiling_ms, expires_at_ms)),
            _ => None,
        })
        .collect();
    for pair in renewals.windows(2) {
        assert!(pair[1].2 >= pair[0].2, "expiry went back: {renewals:?}");
    }
    for &(slot, ceiling, expires) in &renewals {
        assert_eq!(slot, first.slot);
        assert_eq!(ceiling, expires + 100, "ceiling = expires_at + tolerance");
    }
    let last = renewals.last().unwrap();
    assert!(
        last.2 > first.expires_at_ms,
        "renewals did not extend the lease: {renewals:?}, first {first:?}"
    );

    let now = rt.status();
    assert_eq!(now.state, State::Active);
    assert_eq!(
        (now.slot, now.fence),
        (first.slot, first.fence),
        "renewal keeps the fence"
    );
    assert!(now.expires_at_ms >= last.2 && now.expires_at_ms > first.expires_at_ms);
    assert!(now.ceiling_ms > first.ceiling_ms);
    assert_eq!(now.floor_ms, first.floor_ms);

    // Ids keep coming across the renewals, increasing, on the same slot.
    let after = ids(&rt, 1_000);
    assert!(after[0] > *before.last().unwrap());
    assert!(after.windows(2).all(|w| w[1] > w[0]));
    assert!(after.iter().all(|&id| slot_of(id) == u64::from(first.slot)));
    assert_eq!(count(&events.all(), "RENEW_FAILED"), 0);
}

#[test]
fn renewal_extends_the_lease_on_memory() {
    renewal_extends_the_lease(memory(Arc::new(SystemClock)));
}

#[test]
fn renewal_extends_the_lease_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    renewal_extends_the_lease(sqlite(&dir, Arc::new(SystemClock)));
}

#[test]
fn lost_lease_fails_fast_then_a_new_slot_is_acquired() {
    let store = MemoryStore::new(Arc::new(SystemClock));
    let ns = Namespace::new("lost").unwrap();
    let build = |key: &str, events: &Events| {
        Runtime::builder()
            .store_instance(Arc::new(store.clone()))
            .namespace("lost")
            .bits(1)
            // Long enough that b's lease cannot lapse on a busy machine while r waits for a slot.
            .ttl(Duration::from_millis(900))
            .tolerance(Duration::from_millis(100))
            .owner_key(key)
            .subscribe(events.listener())
            .build()
            .unwrap()
    };
    let r_events = Events::default();
    let r = build("r", &r_events);
    let b = build("b", &Events::default());
    assert_eq!((r.status().slot, b.status().slot), (0, 1));
    let r_old = ids(&r, 5_000);

    // Someone takes slot 0 behind r's back, for a minute: the namespace (2 slots) is then exhausted.
    let now = SystemClock.now_ms();
    let stored = block_on(store.inspect(&ns)).unwrap();
    let rec = stored.slots.iter().find(|s| s.slot == 0).unwrap();
    let intruder = Owner::new("intruder");
    store.put_raw(
        &ns,
        SlotRecord {
            slot: 0,
            owner: Some(intruder.clone()),
            last_owner_key: Some("intruder".into()),
            fence: rec.fence + 1,
            expires_at: now + 60_000,
            floor: rec.next_floor,
            ceiling: now + 60_100,
            next_floor: now + 60_100,
        },
    );

    let seen = r_events.wait_for("SlotLost", |e| count(e, "SLOT_LOST") == 1);
    let Some(Event::SlotLost { slot, reason }) = seen.iter().find(|e| e.name() == "SLOT_LOST")
    else {
        unreachable!()
    };
    assert_eq!(*slot, 0);
    assert!(reason.contains("intruder"), "{reason}");
    // No free slot: r stays without a lease, and every id call fails at once.
    let err = r.next_id().unwrap_err();
    assert!(matches!(err, Error::SlotLost { slot: 0 }), "{err:?}");
    assert_eq!(err.code(), "SLOT_LOST");
    assert!(r.next_ids(10).is_err());
    assert_eq!(r.status().state, State::Reacquiring);

    // b stops cleanly; r takes its slot, starting after b's last id.
    let b_ids = ids(&b, 5_000);
    let b_last = b.shutdown().unwrap();
    assert_eq!(b_last, timestamp(*b_ids.last().unwrap()));
    let seen = r_events.wait_for("a new lease", |e| {
        e.iter()
            .skip_while(|e| e.name() != "SLOT_LOST")
            .any(|e| e.name() == "ACQUIRED")
    });
    let acquired = seen
        .iter()
        .skip_while(|e| e.name() != "SLOT_LOST")
        .find(|e| e.name() == "ACQUIRED")
        .unwrap();
    let Event::Acquired { slot, floor_ms, .. } = *acquired else {
        unreachable!()
    };
    assert_eq!((slot, floor_ms), (1, b_last));
    let status = r.status();
    assert_eq!(status.state, State::Active);
    assert_eq!((status.slot, status.floor_ms), (1, b_last));

    let r_new = ids(&r, 5_000);
    assert!(r_new[0] > *b_ids.last().unwrap());
    assert!(timestamp(r_new[0]) > b_last);
    assert!(r_new.iter().all(|&id| slot_of(id) == 1));
    let mut all = HashSet::new();
    for id in r_old.iter().chain(&b_ids).chain(&r_new) {
        assert!(all.insert(*id), "id {id} issued twice");
    }
}

fn shutdown_hands_over(
    a_store: Arc<dyn LeaseStore>,
    b_store: Arc<dyn LeaseStore>,
    clock: ManualClock,
) {
    let a_events = Events::default();
    let build = |store: Arc<dyn LeaseStore>, events: &Events, preferred: Option<u32>| {
        let mut b = Runtime::builder()
            .store_instance(store)
            .namespace("handover")
            .ttl(Duration::from_millis(300))
            .tolerance(Duration::from_millis(100))
            .clock(Arc::new(clock.clone()))
            .subscribe(events.listener());
        if let Some(slot) = preferred {
            b = b.preferred_slot(slot);
        }
        b.build().unwrap()
    };
    // A filler on slot 0, so that A's slot is not simply the lowest one.
    let filler = build(a_store.clone(), &Events::default(), None);
    let a = build(a_store, &a_events, None);
    let a_slot = a.status().slot;
    assert_ne!(a_slot, filler.status().slot);
    // 10,000 ids use up the sequence of a few milliseconds: the manual clock moves on as the generator waits.
    let a_ids = ids(&a, 10_000);
    let a_last_id = *a_ids.last().unwrap();
    let last = a.shutdown().expect("A issued ids");
    assert_eq!(last, timestamp(a_last_id), "the exact last millisecond");
    assert!(last > T0, "the sequence ran over into later milliseconds");
    assert_eq!(a.shutdown(), None);
    let err = a.next_id().unwrap_err();
    assert_eq!(err.code(), "CLOSED", "{err:?}");
    assert_eq!(a.status().state, State::Closed);
    assert_eq!(
        a_events.all().last(),
        Some(&Event::Released {
            slot: a_slot,
            last_issued_ms: Some(last),
        })
    );

    // The next holder's clock is behind the last id: it must wait for the floor, not repeat A's timestamps.
    clock.set(last - 300);
    let b = build(b_store, &Events::default(), Some(a_slot));
    let status = b.status();
    assert_eq!(status.slot, a_slot);
    assert_eq!(status.floor_ms, last, "the floor is A's exact last ms");
    assert_eq!(status.fence, 3, "acquire, release and acquire again");
    let first = b.next_id().unwrap().as_u64();
    assert!(first > a_last_id, "{first} <= {a_last_id}");
    assert!(timestamp(first) > last);
    assert_eq!(slot_of(first), u64::from(a_slot));
    b.shutdown();
    filler.shutdown();
}

#[test]
fn shutdown_hands_the_last_timestamp_to_the_next_holder_on_memory() {
    let clock = ManualClock::new(T0);
    let store = memory(Arc::new(clock.clone()));
    shutdown_hands_over(store.clone(), store, clock);
}

#[test]
fn shutdown_hands_the_last_timestamp_to_the_next_holder_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    // Two connections to one file, as two processes would have.
    let a = sqlite(&dir, Arc::new(clock.clone()));
    let b = sqlite(&dir, Arc::new(clock.clone()));
    shutdown_hands_over(a, b, clock);
}

#[test]
fn shutdown_without_ids_reports_none_and_hands_over_the_floor() {
    let clock = ManualClock::new(T0);
    let store = memory(Arc::new(clock.clone()));
    let events = Events::default();
    let build = |events: &Events| {
        Runtime::builder()
            .store_instance(store.clone())
            .namespace("idle")
            .ttl(Duration::from_millis(300))
            .tolerance(Duration::from_millis(100))
            .clock(Arc::new(clock.clone()))
            .subscribe(events.listener())
            .build()
            .unwrap()
    };
    // A slot never used has floor 0, below the epoch: that must not read as "an id at the epoch".
    let a = build(&events);
    assert_eq!(a.status().floor_ms, 0);
    assert_eq!(a.status().last_issued_ms, None);
    assert_eq!(a.shutdown(), None);
    assert_eq!(
        events.all().last(),
        Some(&Event::Released {
            slot: 0,
            last_issued_ms: None
        })
    );
    let b = build(&Events::default());
    assert_eq!(
        b.status().floor_ms,
        0,
        "an idle holder hands over its floor"
    );
    let id = b.next_id().unwrap();
    assert_eq!(timestamp(id.as_u64()), T0);
    assert_eq!(b.status().last_issued_ms, Some(T0));
    assert_eq!(b.shutdown(), Some(T0));
}

/// Keeps the test output readable: the panics of this file's panicking listeners are expected.
fn quiet_listener_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = info.payload().downcast_ref::<&str>().copied();
            if !msg.is_some_and(|m| m.contains("listener that panics")) {
                default(info);
            }
        }));
    });
}

#[test]
fn events_reach_every_subscriber_even_past_a_panicking_one() {
    quiet_listener_panics();
    let early = Events::default();
    let rt = Runtime::builder()
        .store("memory:")
        .namespace("events")
        .ttl(Duration::from_millis(150))
        .tolerance(Duration::from_millis(50))
        .subscribe(|_: &Event| panic!("a listener that panics"))
        .subscribe(early.listener())
        .build()
        .unwrap();
    let late = Events::default();
    rt.subscribe(|_: &Event| panic!("another listener that panics"));
    rt.subscribe(late.listener());
    late.wait_for("2 renewals", |e| count(e, "RENEWED") >= 2);
    let slot = rt.status().slot;
    rt.shutdown();
    let early = early.all();
    let late = late.all();
    assert_eq!(early[0].name(), "ACQUIRED");
    assert!(late.iter().all(|e| e.name() != "ACQUIRED"));
    // Both saw the same events since `late` subscribed, ending with the release.
    assert!(early.ends_with(&late), "early {early:#?}\nlate {late:#?}");
    assert!(
        matches!(
            late.last(),
            Some(Event::Released { slot: s, last_issued_ms: None }) if *s == slot
        ),
        "{late:#?}"
    );
}

/// A runtime whose clock reads `offset` ms off the store's; returns its events once `done` holds for them.
fn events_with_offset(offset: i64, done: impl Fn(&[Event]) -> bool) -> Vec<Event> {
    let store_clock = ManualClock::new(T0);
    let local = ManualClock::new(T0.checked_add_signed(offset).unwrap());
    let events = Events::default();
    let rt = Runtime::builder()
        .store_instance(memory(Arc::new(store_clock)))
        .namespace("skew")
        .ttl(Duration::from_millis(150))
        .tolerance(Duration::from_millis(200))
        .clock(Arc::new(local))
        .subscribe(events.listener())
        .build()
        .unwrap();
    rt.next_id().unwrap();
    let seen = events.wait_for("the expected events", done);
    rt.shutdown();
    seen
}

#[test]
fn clock_skew_above_half_the_tolerance_is_reported() {
    for offset in [150, -150, 101, -101] {
        // One at the start, then one per renewal.
        let events = events_with_offset(offset, |e| count(e, "CLOCK_SKEW") >= 3);
        assert!(count(&events, "RENEWED") >= 2);
        let skews: Vec<(u64, u64)> = events
            .iter()
            .filter_map(|e| match *e {
                Event::ClockSkew { local_ms, store_ms } => Some((local_ms, store_ms)),
                _ => None,
            })
            .collect();
        for (local, store) in skews {
            assert_eq!(store, T0);
            assert_eq!(local, T0.checked_add_signed(offset).unwrap());
        }
    }
}

#[test]
fn clock_skew_within_half_the_tolerance_is_not_reported() {
    for offset in [100, -100, 0] {
        // The checks at the start and after the first two renewals come before the third renewal's event.
        let events = events_with_offset(offset, |e| count(e, "RENEWED") >= 3);
        assert_eq!(
            count(&events, "CLOCK_SKEW"),
            0,
            "offset {offset}: {events:#?}"
        );
    }
}

#[test]
fn duplicate_owner_key_is_reported_and_another_slot_taken() {
    let store = memory(Arc::new(SystemClock));
    let build = |events: &Events| {
        Runtime::builder()
            .store_instance(store.clone())
            .namespace("dup")
            .owner_key("web-1")
            .ttl(Duration::from_millis(300))
            .tolerance(Duration::from_millis(100))
            .subscribe(events.listener())
            .build()
            .unwrap()
    };
    let first_events = Events::default();
    let first = build(&first_events);
    let second_events = Events::default();
    let second = build(&second_events);
    let (s1, s2) = (first.status().slot, second.status().slot);
    assert_ne!(s1, s2);
    let events = second_events.all();
    assert_eq!(
        events[0],
        Event::DuplicateOwnerKey {
            key: "web-1".into(),
            other_slot: s1,
        }
    );
    assert_eq!(events[1].name(), "ACQUIRED");
    assert_eq!(count(&first_events.all(), "DUPLICATE_OWNER_KEY"), 0);
    assert_eq!(first.status().owner.key, second.status().owner.key);
    assert_ne!(
        first.status().owner.incarnation,
        second.status().owner.incarnation
    );

    // Both keep renewing their own slots: neither takes the other's lease.
    second_events.wait_for("2 renewals", |e| count(e, "RENEWED") >= 2);
    assert_eq!(count(&first_events.all(), "SLOT_LOST"), 0);
    assert_eq!(count(&second_events.all(), "SLOT_LOST"), 0);
    let mut seen = HashSet::new();
    for _ in 0..5_000 {
        assert!(seen.insert(first.next_id().unwrap()));
        assert!(seen.insert(second.next_id().unwrap()));
    }
}
