//! The store-regression alarm: a runtime that is granted a slot it held before, with a fence or floor below what
//! it saw, refuses that grant (never issues on it), gives the slot back with the ceiling it knows was used, and
//! only issues again on a window above it.

use cosid::clock::SystemClock;
use cosid::lease::{Namespace, SlotRecord};
use cosid::store::MemoryStore;
use cosid::{Event, Runtime};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[test]
fn a_store_that_forgets_its_leases_raises_the_alarm_and_is_not_trusted() {
    let store = MemoryStore::new(Arc::new(SystemClock));
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = events.clone();
    let rt = Runtime::builder()
        .store_instance(Arc::new(store.clone()))
        .namespace("regress")
        .bits(1)
        .ttl(Duration::from_millis(300))
        .tolerance(Duration::from_millis(50))
        .subscribe(move |e| log.lock().unwrap().push(e.clone()))
        .build()
        .unwrap();
    let mut before = HashSet::new();
    let until = Instant::now() + Duration::from_millis(350);
    while Instant::now() < until {
        before.insert(rt.next_id().unwrap());
    }
    let held_ceiling = rt.status().ceiling_ms;

    // The store loses every write (a restored backup, a failover to a stale replica).
    store.forget(&Namespace::new("regress").unwrap());

    // The next renewal finds the lease gone; the re-acquisition is granted slot 0 again at fence 1, floor 0.
    // Until then ids still come from the window the runtime really held; wait for the alarm and a new grant.
    let deadline = Instant::now() + Duration::from_secs(5);
    let rebound = || {
        let ev = events.lock().unwrap();
        let alarm = ev
            .iter()
            .position(|e| matches!(e, Event::StoreRegression { .. }));
        alarm.is_some_and(|a| ev[a..].iter().any(|e| matches!(e, Event::Acquired { .. })))
    };
    while !rebound() {
        assert!(
            Instant::now() < deadline,
            "no StoreRegression then Acquired: {:?}",
            events.lock().unwrap()
        );
        if let Ok(id) = rt.next_id() {
            assert!(before.insert(id), "{id} repeated");
        }
    }
    let after: Vec<_> = (0..1_000).map(|_| rt.next_id().unwrap()).collect();
    for id in &after {
        assert!(!before.contains(id), "{id} repeated");
    }
    let status = rt.status();
    assert!(
        status.floor_ms >= held_ceiling,
        "new floor {} below the held ceiling {held_ceiling}",
        status.floor_ms
    );
    for id in &after {
        let ts = rt.layout().decompose(*id).unwrap().timestamp_ms;
        assert!(
            ts > held_ceiling,
            "id at {ts} inside the window this runtime already used (ceiling {held_ceiling})"
        );
    }
}

/// Recovery after lost writes takes one raise of `not_before` and one acquisition, however high the fence the
/// runtime held: a grant whose floor is past every ceiling this runtime was granted is safe whatever its fence, so
/// it is not refused again and again while the store's fence climbs back (fence 201 once cost 101 alarms).
#[test]
fn recovery_takes_one_alarm_and_one_acquisition_whatever_the_old_fence() {
    let store = MemoryStore::new(Arc::new(SystemClock));
    let ns = Namespace::new("regress-fence").unwrap();
    // Slot 0 changed hands 100 times before this runtime starts.
    store.put_raw(
        &ns,
        SlotRecord {
            slot: 0,
            owner: None,
            last_owner_key: Some("before".into()),
            fence: 200,
            expires_at: 0,
            floor: 0,
            ceiling: 0,
            next_floor: 0,
        },
    );
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = events.clone();
    let rt = Runtime::builder()
        .store_instance(Arc::new(store.clone()))
        .namespace("regress-fence")
        .bits(1)
        .ttl(Duration::from_millis(300))
        .tolerance(Duration::from_millis(50))
        .subscribe(move |e| log.lock().unwrap().push(e.clone()))
        .build()
        .unwrap();
    assert_eq!((rt.status().slot, rt.status().fence), (0, 201));
    let mut ids = HashSet::new();
    for _ in 0..1_000 {
        assert!(ids.insert(rt.next_id().unwrap()));
    }

    store.forget(&ns);

    let count =
        |pred: fn(&Event) -> bool| events.lock().unwrap().iter().filter(|e| pred(e)).count();
    let acquired_before = count(|e| matches!(e, Event::Acquired { .. }));
    let deadline = Instant::now() + Duration::from_secs(10);
    // Issue until the runtime issues again on a new window, then for three more renewal periods.
    let mut settled: Option<Instant> = None;
    while settled.is_none_or(|t| t.elapsed() < Duration::from_millis(300)) {
        assert!(
            Instant::now() < deadline,
            "not issuing again within 10 s: {:?}",
            events.lock().unwrap()
        );
        if let Ok(id) = rt.next_id() {
            assert!(ids.insert(id), "{id} repeated");
            if count(|e| matches!(e, Event::StoreRegression { .. })) > 0 {
                settled.get_or_insert_with(Instant::now);
            }
        }
    }
    let alarms = count(|e| matches!(e, Event::StoreRegression { .. }));
    let acquisitions = count(|e| matches!(e, Event::Acquired { .. })) - acquired_before;
    assert_eq!(
        (alarms, acquisitions),
        (1, 1),
        "one alarm and one acquisition: {:?}",
        events.lock().unwrap()
    );
    rt.shutdown();
}
