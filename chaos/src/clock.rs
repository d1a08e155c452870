//! The worker's clock hook: the host clock plus an offset the nemesis sets, so one process's clock can be shifted
//! by milliseconds to an hour, either way, without touching the host's (which Redis, the other workers and the
//! checker share).

use cosid::clock::{Clock, SystemClock};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// [`SystemClock`] shifted by an offset that can change at any time.
#[derive(Debug, Default)]
pub struct OffsetClock {
    offset_ms: AtomicI64,
}

impl OffsetClock {
    /// A clock with no offset.
    pub fn new() -> Self {
        Self::default()
    }

    /// Shifts the clock to `offset_ms` from the host's (negative: behind).
    pub fn set_offset(&self, offset_ms: i64) {
        self.offset_ms.store(offset_ms, Ordering::SeqCst);
    }

    fn shifted(base: u64, offset: i64) -> u64 {
        base.saturating_add_signed(offset)
    }
}

impl Clock for OffsetClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        Self::shifted(SystemClock.now_ms(), self.offset_ms.load(Ordering::Relaxed))
    }

    fn sleep(&self, d: Duration) {
        SystemClock.sleep(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_shifts_both_ways_and_saturates() {
        assert_eq!(OffsetClock::shifted(1_000, 250), 1_250);
        assert_eq!(OffsetClock::shifted(1_000, -250), 750);
        assert_eq!(OffsetClock::shifted(1_000, -5_000), 0);
        let c = OffsetClock::new();
        let before = SystemClock.now_ms();
        c.set_offset(-3_600_000);
        let shifted = c.now_ms();
        assert!(shifted + 3_600_000 >= before && shifted + 3_600_000 <= before + 60_000);
    }
}
