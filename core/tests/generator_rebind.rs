//! A generator that loses its lease and is bound to a window on another slot keeps its ids growing, even when the
//! clock stepped back in between (DESIGN §2: a process never issues a smaller timestamp than before).

use cosid::clock::ManualClock;
use cosid::generator::{Generator, Waits, Window};
use cosid::Layout;
use std::sync::Arc;

const T: u64 = 1_764_460_000_000;

#[test]
fn ids_keep_growing_across_a_new_slot_and_a_clock_stepped_back() {
    let clock = ManualClock::new(T);
    let g = Generator::new(Layout::millis(), Arc::new(clock.clone()), Waits::default());
    g.bind(Window {
        slot: 5,
        floor_ms: T - 1_000,
        ceiling_ms: T + 30_000,
    });
    let mut last = g.next_id().unwrap();
    for _ in 0..10 {
        let id = g.next_id().unwrap();
        assert!(id > last);
        last = id;
    }
    assert!(g.invalidate().is_some());
    // The new window on slot 0 starts far below the last tick, and the clock went back 10 s.
    clock.set(T - 10_000);
    g.bind(Window {
        slot: 0,
        floor_ms: T - 20_000,
        ceiling_ms: T + 30_000,
    });
    // Never a smaller timestamp than before (DESIGN §2): the stepped-back clock is an error past the threshold...
    let err = g.next_id().unwrap_err();
    assert_eq!(err.code(), "CLOCK_MOVED_BACKWARDS", "{err}");
    // ...and once the clock is back past the last tick, ids continue above the old ones, on the new slot.
    clock.set(T + 5);
    let next = g.next_id().unwrap();
    assert!(next > last, "{next} after {last}");
    let parts = g.layout().decompose(next).unwrap();
    assert_eq!(parts.slot, 0);
    assert!(parts.timestamp_ms > T);
}
