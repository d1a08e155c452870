//! The store-regression alarm: a runtime that is granted a slot it held before, with a fence or floor below what
//! it saw, refuses that grant (never issues on it), gives the slot back with the ceiling it knows was used, and
//! only issues again on a window above it.

use cosid::clock::SystemClock;
use cosid::lease::Namespace;
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
