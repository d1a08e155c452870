//! The one source of time. Nothing else in the crate reads the wall clock.

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of Unix time in milliseconds.
///
/// Clocks decide availability only (when a lease expires, when a holder may start); uniqueness never depends on
/// them. Implementations must be cheap: the generator reads the clock once per id.
pub trait Clock: Send + Sync + Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;

    /// Waits for about `d` (zero: a brief pause before reading the clock again). A manual clock advances itself
    /// instead, so tests never wait for real.
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// The host's wall clock.
///
/// Reading `SystemTime` costs tens of nanoseconds, more than the rest of an id. This clock reads it once, then
/// extrapolates with the CPU's monotonic counter (`quanta`), and re-reads the wall clock every few milliseconds
/// so that a stepped wall clock is seen quickly. Safety does not depend on it: every id is checked against its
/// window whatever the clock says.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl SystemClock {
    /// The wall clock read directly, in nanoseconds (0 before 1970).
    fn wall_ns() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    }
}

impl Clock for SystemClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        fast::now_ms()
    }

    /// Sleeps for `d`; a zero duration spins once, for the sub-millisecond wait for the next tick.
    fn sleep(&self, d: Duration) {
        if d.is_zero() {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(d);
        }
    }
}

mod fast {
    //! Wall-clock milliseconds from a calibrated monotonic counter: one counter read and two relaxed atomic
    //! loads per call, against a system call's worth for `SystemTime::now()`.
    use super::SystemClock;
    use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
    use std::sync::OnceLock;

    /// How often (in counter nanoseconds) the wall clock is read again, so a stepped clock is seen promptly.
    const RECALIBRATE_NS: u64 = 2_000_000;

    static START: OnceLock<quanta::Instant> = OnceLock::new();
    /// Wall nanoseconds minus counter nanoseconds at the last calibration. One word, so never torn.
    static OFFSET_NS: AtomicI64 = AtomicI64::new(0);
    /// Counter nanoseconds after which the next read recalibrates.
    static DEADLINE_NS: AtomicU64 = AtomicU64::new(0);

    #[inline]
    pub(super) fn now_ms() -> u64 {
        let start = START.get_or_init(quanta::Instant::now);
        let counter_ns = quanta::Instant::now().duration_since(*start).as_nanos() as u64;
        if counter_ns >= DEADLINE_NS.load(Ordering::Relaxed) {
            return recalibrate(counter_ns);
        }
        let wall_ns = counter_ns as i64 + OFFSET_NS.load(Ordering::Relaxed);
        (wall_ns.max(0) as u64) / 1_000_000
    }

    #[cold]
    #[inline(never)]
    fn recalibrate(counter_ns: u64) -> u64 {
        let wall_ns = SystemClock::wall_ns();
        OFFSET_NS.store(wall_ns as i64 - counter_ns as i64, Ordering::Relaxed);
        DEADLINE_NS.store(counter_ns + RECALIBRATE_NS, Ordering::Relaxed);
        wall_ns / 1_000_000
    }
}

/// A clock that moves only when told to: for tests and simulations.
///
/// `sleep` advances it by the requested duration, so code that waits makes progress without real time passing.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock that reads `now_ms` until moved.
    pub fn new(now_ms: u64) -> Self {
        Self {
            now: Arc::new(AtomicU64::new(now_ms)),
        }
    }

    /// Sets the time, forwards or backwards.
    pub fn set(&self, now_ms: u64) {
        self.now.store(now_ms, Ordering::SeqCst);
    }

    /// Moves the time forwards by `ms`.
    pub fn advance(&self, ms: u64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    fn sleep(&self, d: Duration) {
        self.advance((d.as_millis() as u64).max(1));
        std::thread::yield_now();
    }
}
