//! `slots = k`: one runtime leasing several slots. Its capacity per tick is k times one slot's, every id lies on a
//! slot it holds and inside that slot's window, the start is all or nothing, and shutdown releases every slot.
//! (The multi-process case with two slots each is in multiprocess_sqlite.rs.)

use cosid::clock::ManualClock;
use cosid::lease::Namespace;
use cosid::store::{LeaseStore, MemoryStore};
use cosid::{Error, Id, Layout, Runtime};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

const NOW: u64 = 1_800_000_000_000;

fn on(store: &Arc<MemoryStore>, clock: &Arc<ManualClock>, ns: &str) -> cosid::Builder {
    Runtime::builder()
        .store_instance(store.clone())
        .clock(clock.clone())
        .namespace(ns)
        .bits(4)
}

fn memory() -> (Arc<MemoryStore>, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(NOW));
    (Arc::new(MemoryStore::new(clock.clone())), clock)
}

/// Every id on one of the runtime's slots, inside that slot's window; the slots each id came from.
fn check_windows(rt: &Runtime, ids: &[Id]) -> HashSet<u64> {
    let layout = Layout::millis();
    let statuses = rt.statuses();
    let mut used = HashSet::new();
    for id in ids {
        let parts = layout.decompose(*id).unwrap();
        let status = statuses
            .iter()
            .find(|s| u64::from(s.slot) == parts.slot)
            .unwrap_or_else(|| {
                panic!(
                    "{id} is on slot {}, which the runtime does not hold",
                    parts.slot
                )
            });
        assert!(
            status.floor_ms < parts.timestamp_ms && parts.timestamp_ms <= status.ceiling_ms,
            "{id} at {} ms lies outside slot {}'s window ({}, {}]",
            parts.timestamp_ms,
            status.slot,
            status.floor_ms,
            status.ceiling_ms
        );
        used.insert(parts.slot);
    }
    used
}

#[test]
fn three_slots_issue_three_ticks_worth_of_ids_in_one_millisecond() {
    let (store, clock) = memory();
    let rt = on(&store, &clock, "three").slots(3).build().unwrap();
    let slots: Vec<u32> = rt.statuses().iter().map(|s| s.slot).collect();
    assert_eq!(slots, [0, 1, 2]);
    let per_tick = Layout::millis().max_sequence() as usize + 1;

    // The clock stands still: one slot alone would issue 4,096 ids and then wait for the next millisecond.
    let mut ids = Vec::new();
    while let Some(id) = rt.try_next_id() {
        ids.push(id);
    }
    assert_eq!(
        ids.len(),
        3 * per_tick,
        "three slots' sequences in one tick"
    );
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len());
    assert_eq!(check_windows(&rt, &ids).len(), 3);

    // The batch call likewise, in the next millisecond.
    clock.advance(1);
    let mut batch = vec![Id::from_u64(0); 3 * per_tick];
    rt.fill(&mut batch).unwrap();
    assert!(rt.try_next_id().is_none(), "every slot's tick is spent");
    assert_eq!(check_windows(&rt, &batch).len(), 3);
    let all: HashSet<Id> = ids.iter().chain(&batch).copied().collect();
    assert_eq!(all.len(), 6 * per_tick);
    // Ordered by tick across slots, increasing on each slot.
    assert!(batch
        .iter()
        .all(|b| ids.iter().all(|a| a.as_u64() >> 22 < b.as_u64() >> 22)));
}

#[test]
fn a_batch_larger_than_the_slots_tick_waits_for_the_next_tick() {
    let (store, clock) = memory();
    let rt = on(&store, &clock, "batch").slots(2).build().unwrap();
    let per_tick = Layout::millis().max_sequence() as usize + 1;
    // The manual clock moves on when the generator sleeps for the next tick.
    let mut batch = vec![Id::from_u64(0); 5 * per_tick];
    rt.fill(&mut batch).unwrap();
    assert_eq!(batch.iter().collect::<HashSet<_>>().len(), batch.len());
    assert_eq!(check_windows(&rt, &batch).len(), 2);
}

#[test]
fn shutdown_releases_every_slot_and_a_restart_takes_them_again() {
    let (store, clock) = memory();
    let rt = on(&store, &clock, "restart")
        .owner_key("worker-a")
        .slots(3)
        .build()
        .unwrap();
    let owners: Vec<String> = rt.statuses().iter().map(|s| s.owner.key.clone()).collect();
    assert_eq!(owners, ["worker-a", "worker-a#1", "worker-a#2"]);
    let mut ids = Vec::new();
    while let Some(id) = rt.try_next_id() {
        ids.push(id);
    }
    let last = rt.shutdown().expect("ids were issued");
    assert_eq!(last, NOW, "the last millisecond used");
    assert!(matches!(rt.next_id(), Err(Error::Closed { .. })));

    let inspection = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(store.inspect(&Namespace::new("restart").unwrap()))
        .unwrap();
    for r in inspection.slots.iter().filter(|r| r.slot < 3) {
        assert!(r.owner.is_none(), "slot {} still held: {r:?}", r.slot);
        assert_eq!(
            r.next_floor, NOW,
            "slot {} hands on the last timestamp",
            r.slot
        );
    }

    // The same owner key finds the same three slots (sticky), and starts past every id issued on them.
    clock.advance(1);
    let again = on(&store, &clock, "restart")
        .owner_key("worker-a")
        .slots(3)
        .build()
        .unwrap();
    let slots: Vec<u32> = again.statuses().iter().map(|s| s.slot).collect();
    assert_eq!(slots, [0, 1, 2]);
    let max = ids.iter().max().unwrap();
    for _ in 0..3 * 4096 {
        let id = again.try_next_id().expect("a fresh tick");
        assert!(id.as_u64() >> 22 > max.as_u64() >> 22);
    }
}

#[test]
fn the_start_is_all_or_nothing() {
    let (store, clock) = memory();
    let holder = on(&store, &clock, "full").bits(1).build().unwrap();
    assert_eq!(holder.status().slot, 0);
    // Two slots asked for, one free: no runtime, and the free slot is released again.
    let err = on(&store, &clock, "full")
        .bits(1)
        .slots(2)
        .acquire_timeout(Duration::from_millis(200))
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "EXHAUSTED", "{err}");
    let other = on(&store, &clock, "full")
        .bits(1)
        .acquire_timeout(Duration::from_millis(200))
        .build()
        .expect("the slot the failed start took is free again");
    assert_eq!(other.status().slot, 1);
}

#[test]
fn slots_out_of_range_are_config_errors() {
    let (store, clock) = memory();
    for (bits, slots) in [(4, 0), (4, 17), (10, 65)] {
        let err = on(&store, &clock, "range")
            .bits(bits)
            .slots(slots)
            .build()
            .unwrap_err();
        assert_eq!(err.code(), "CONFIG", "{err}");
        assert!(err.to_string().contains("slots"), "{err}");
    }
    let err = Runtime::builder()
        .store("static:3")
        .slots(2)
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "CONFIG", "{err}");
}

#[test]
fn a_slot_lost_by_one_lane_leaves_the_others_issuing_and_is_taken_again() {
    let clock: Arc<dyn cosid::clock::Clock> = Arc::new(cosid::clock::SystemClock);
    let store = Arc::new(MemoryStore::new(clock.clone()));
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = events.clone();
    let rt = Runtime::builder()
        .store_instance(store.clone())
        .namespace("lost")
        .bits(4)
        .slots(2)
        .ttl(Duration::from_millis(300))
        .tolerance(Duration::from_millis(100))
        .subscribe(move |e: &cosid::Event| seen.lock().unwrap().push(e.name().to_owned()))
        .build()
        .unwrap();
    let second = rt.statuses()[1].clone();
    // Somebody else releases the second lane's lease (a hand edit, a bad migration): its renewal finds it gone.
    let lease = cosid::lease::SlotLease {
        namespace: Namespace::new("lost").unwrap(),
        slot: second.slot,
        owner: second.owner.clone(),
        fence: second.fence,
        expires_at: second.expires_at_ms,
        floor: second.floor_ms,
        ceiling: second.ceiling_ms,
        store_now: second.store_now_ms,
    };
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(store.release(&lease, None))
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut ids = HashSet::new();
    loop {
        // The first lane keeps issuing whatever the second one does.
        for _ in 0..100 {
            assert!(ids.insert(rt.next_id().expect("the first lane issues")));
        }
        let now = rt.statuses();
        if now[1].fence > second.fence && now[1].state == cosid::State::Active {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the second lane did not come back: {now:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let names = events.lock().unwrap().clone();
    assert!(names.iter().any(|n| n == "SLOT_LOST"), "{names:?}");
    // Both lanes issue again, on two distinct slots.
    let slots: HashSet<u32> = rt.statuses().iter().map(|s| s.slot).collect();
    assert_eq!(slots.len(), 2);
}
