//! The generator's fast path reads a cached clock that may lag real time (a ticker thread refreshes it). The
//! window check still runs on every id: a cache that is stale, from before the window, past its ceiling, or from
//! a lease that was replaced, never yields an id outside the current window; it only sends the call to the slow
//! path, which reads the clock itself.

use cosid::clock::ManualClock;
use cosid::generator::{Generator, Waits, Window};
use cosid::{Id, Layout, Tick};
use std::sync::Arc;

const T: u64 = 1_764_460_000_000;

fn generator(layout: Layout, clock: &ManualClock) -> Generator {
    Generator::new(layout, Arc::new(clock.clone()), Waits::default())
}

fn ts(layout: &Layout, id: Id) -> u64 {
    layout.decompose(id).unwrap().timestamp_ms
}

#[test]
fn a_cache_from_before_the_floor_never_issues_below_it() {
    let clock = ManualClock::new(T);
    let layout = Layout::millis();
    let g = generator(layout, &clock);
    g.bind(Window {
        slot: 3,
        floor_ms: T - 10,
        ceiling_ms: T + 1_000,
    });
    // A ticker that stopped long ago: its value lies before the window.
    clock.set_cached(T - 5_000);
    assert!(
        g.try_next_id().is_none(),
        "the fast path issued below the floor"
    );
    let id = g.next_id().unwrap();
    assert_eq!(ts(&layout, id), T, "the slow path reads the clock itself");
    // With the word now at T, the stale cache only continues T's sequence.
    let next = g.try_next_id().unwrap();
    assert!(next > id);
    assert_eq!(ts(&layout, next), T);
}

#[test]
fn a_cache_past_the_ceiling_never_issues_above_it() {
    let clock = ManualClock::new(T);
    let layout = Layout::millis();
    let g = generator(layout, &clock);
    g.bind(Window {
        slot: 0,
        floor_ms: T - 10,
        ceiling_ms: T + 100,
    });
    // A cache filled before the wall clock stepped back, now past the ceiling.
    clock.set_cached(T + 500);
    assert!(
        g.try_next_id().is_none(),
        "the fast path issued past the ceiling"
    );
    let mut out = [Id::from_u64(0); 3];
    g.fill(&mut out).unwrap();
    for id in out {
        assert!(ts(&layout, id) <= T + 100);
    }
    assert_eq!(ts(&layout, g.next_id().unwrap()), T);
}

#[test]
fn a_cache_across_a_lease_change_stays_in_the_new_window() {
    let clock = ManualClock::new(T);
    let layout = Layout::millis();
    let g = generator(layout, &clock);
    g.bind(Window {
        slot: 1,
        floor_ms: T - 1_000,
        ceiling_ms: T + 1_000,
    });
    clock.set_cached(T);
    let old = g.next_id().unwrap();
    assert_eq!(ts(&layout, old), T);
    // The lease is lost and replaced by a window on another slot that starts after the cached time.
    g.invalidate();
    clock.set(T + 3_000);
    g.bind(Window {
        slot: 2,
        floor_ms: T + 2_000,
        ceiling_ms: T + 5_000,
    });
    // The cache still holds T (the old window's time): no id may carry it on the new slot.
    assert!(g.try_next_id().is_none());
    for _ in 0..100 {
        let id = g.next_id().unwrap();
        let parts = layout.decompose(id).unwrap();
        assert_eq!(parts.slot, 2);
        assert!(parts.timestamp_ms > T + 2_000, "{parts:?}");
        assert!(id > old);
    }
}

#[test]
fn a_spent_tick_under_a_lagging_cache_reads_the_clock() {
    // 2 sequence bits: 4 ids a tick.
    let layout = Layout::new(Layout::DEFAULT_EPOCH_MS, Tick::Millisecond, 41, 8, 2).unwrap();
    let clock = ManualClock::new(T + 5);
    let g = generator(layout, &clock);
    g.bind(Window {
        slot: 7,
        floor_ms: T - 10,
        ceiling_ms: T + 1_000,
    });
    // The ticker is 5 ms behind.
    clock.set_cached(T);
    let ids: Vec<Id> = (0..12).map(|_| g.next_id().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let stamps: Vec<u64> = ids.iter().map(|&id| ts(&layout, id)).collect();
    // Four on the cached tick, then the real clock's, never past it (the manual clock advances only by waits).
    assert_eq!(&stamps[..4], &[T; 4]);
    assert!(stamps[4..].iter().all(|&s| s > T), "{stamps:?}");
    assert!(stamps.iter().all(|&s| s <= clock_now(&clock)));
}

fn clock_now(clock: &ManualClock) -> u64 {
    use cosid::clock::Clock;
    clock.now_ms()
}
