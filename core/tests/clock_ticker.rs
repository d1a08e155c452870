//! The cached clock's ticker: it runs while the cache is read, parks once nobody reads it (no wake-ups while
//! idle), and the next read wakes it. The cached value never leads the clock. One test: the ticker is
//! process-wide.

use cosid::clock::{ticker_state, Clock, SystemClock, TickerState};
use std::time::{Duration, Instant};

/// Waits (up to a generous bound, for a loaded machine) until the ticker reaches `want`, reading the cache
/// meanwhile if `reading`.
fn wait_for(want: TickerState, reading: bool) -> bool {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        if reading {
            let cached = SystemClock.cached_ms();
            assert!(
                cached <= SystemClock.now_ms(),
                "the cached clock led the clock"
            );
        }
        if ticker_state() == want {
            return true;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    false
}

#[test]
fn the_ticker_runs_while_read_parks_when_idle_and_wakes_on_the_next_read() {
    assert_eq!(
        ticker_state(),
        TickerState::None,
        "nothing read the cache yet"
    );
    let first = SystemClock.cached_ms();
    assert!(first > 0);
    assert!(wait_for(TickerState::Running, true));
    // Nobody reads: it parks.
    assert!(
        wait_for(TickerState::Parked, false),
        "still {:?}",
        ticker_state()
    );
    // Parked, the cache is stale: a read gets the clock itself, not the last refresh, and wakes the ticker.
    std::thread::sleep(Duration::from_millis(20));
    let before = SystemClock.now_ms();
    assert!(SystemClock.cached_ms() >= before);
    assert!(wait_for(TickerState::Running, false));
}
