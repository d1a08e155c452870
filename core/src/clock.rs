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

    /// A cheaper reading for the generator's fast path, which may lag [`now_ms`](Self::now_ms) by a bounded
    /// amount (never run ahead of it). The generator still checks every id against its window, and reads
    /// `now_ms` when this value cannot give an id (a spent tick, a tick outside the window). Default: `now_ms`.
    fn cached_ms(&self) -> u64 {
        self.now_ms()
    }

    /// Whether [`cached_ms`](Self::cached_ms) is the process-wide cache of [`SystemClock`], which the generator
    /// then reads inline.
    fn is_system(&self) -> bool {
        false
    }

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

    #[inline]
    fn cached_ms(&self) -> u64 {
        cache::now_ms()
    }

    fn is_system(&self) -> bool {
        true
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

/// [`SystemClock`]'s cached reading, inline: what the generator's fast path reads.
#[inline(always)]
pub(crate) fn system_cached_ms() -> u64 {
    cache::now_ms()
}

/// The system clock's cached reading, `None` when stale (then [`system_cached_ms`] reads the clock and wakes
/// the ticker).
#[inline(always)]
pub(crate) fn system_cached_ms_if_fresh() -> Option<u64> {
    cache::fresh_ms()
}

/// For a child process after `fork()`: forgets the parent's cached time (its ticker thread does not exist here),
/// so the next id reads the clock and starts a ticker of the child's own. Async-signal-safe: atomic stores only.
/// The host layer's fork hook runs it; without the hook, a runtime started in the child notices the new process
/// id and does the same.
pub fn after_fork_in_child() {
    cache::after_fork_in_child();
}

/// Resets the cached time if this process is a fork of the one whose ticker filled it.
pub(crate) fn check_fork() {
    cache::check_fork();
}

/// What the clock's ticker thread is doing, for tests and diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TickerState {
    /// Not started in this process (or this is a forked child that has not issued since the fork).
    None,
    /// Refreshing the cached time every [`TICK_PERIOD`].
    Running,
    /// Parked after ids stopped: no wake-ups until the next id.
    Parked,
    /// The thread could not be started: every id reads the clock itself.
    Disabled,
}

/// How often the ticker refreshes the cached time while ids are being issued.
pub const TICK_PERIOD: std::time::Duration = std::time::Duration::from_millis(1);

/// After this many refreshes the ticker checks whether the cache is still read, and parks if not.
pub const IDLE_TICKS: u32 = 100;

/// The ticker's state now.
pub fn ticker_state() -> TickerState {
    cache::state()
}

mod cache {
    //! The cached wall-clock milliseconds: one relaxed load per id while a ticker thread refreshes it.
    //!
    //! `MS` is 0 when stale: the reader then reads the clock itself, stores the value, and wakes the ticker (or
    //! starts it). The ticker refreshes `MS` every [`TICK_PERIOD`]; every [`IDLE_TICKS`] it sets `MS` to 0 and
    //! looks one period later: still 0 means nobody issued an id in that period, and it parks. So the cache is
    //! never trusted when no ticker is refreshing it: non-zero `MS` implies a live ticker (or a reader that is
    //! about to wake one), and a forked child starts with `MS` = 0.
    use super::{fast, TickerState, IDLE_TICKS, TICK_PERIOD};
    use arc_swap::ArcSwapOption;
    use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
    use std::sync::Arc;
    use std::thread::Thread;

    const NONE: u8 = 0;
    const RUNNING: u8 = 1;
    const PARKED: u8 = 2;
    const DISABLED: u8 = 3;

    static MS: AtomicU64 = AtomicU64::new(0);
    static STATE: AtomicU8 = AtomicU8::new(NONE);
    static TICKER: ArcSwapOption<Thread> = ArcSwapOption::const_empty();
    /// The process that started the ticker (0: none yet).
    static PID: AtomicU32 = AtomicU32::new(0);

    #[inline(always)]
    pub(super) fn now_ms() -> u64 {
        let v = MS.load(Ordering::Relaxed);
        if v != 0 {
            v
        } else {
            refresh()
        }
    }

    #[inline(always)]
    pub(super) fn fresh_ms() -> Option<u64> {
        match MS.load(Ordering::Relaxed) {
            0 => None,
            v => Some(v),
        }
    }

    #[cold]
    #[inline(never)]
    fn refresh() -> u64 {
        let now = fast::now_ms();
        check_fork();
        if STATE.load(Ordering::SeqCst) == DISABLED {
            return now;
        }
        MS.store(now, Ordering::SeqCst);
        match STATE.swap(RUNNING, Ordering::SeqCst) {
            PARKED => {
                if let Some(t) = TICKER.load_full() {
                    t.unpark();
                }
            }
            NONE => start(),
            DISABLED => {
                STATE.store(DISABLED, Ordering::SeqCst);
                MS.store(0, Ordering::SeqCst);
            }
            _ => {}
        }
        now
    }

    /// Starts the ticker (the caller won the `NONE` to `RUNNING` swap). If no thread can be started, the cache
    /// is disabled and every id reads the clock.
    fn start() {
        PID.store(std::process::id(), Ordering::SeqCst);
        let spawned = std::thread::Builder::new()
            .name("cosid-clock".into())
            .spawn(run);
        if spawned.is_err() {
            STATE.store(DISABLED, Ordering::SeqCst);
            MS.store(0, Ordering::SeqCst);
        }
    }

    fn run() {
        TICKER.store(Some(Arc::new(std::thread::current())));
        loop {
            for _ in 0..IDLE_TICKS {
                MS.store(fast::now_ms(), Ordering::Release);
                std::thread::sleep(TICK_PERIOD);
            }
            // Probe: a reader that issues during the next period finds the cache stale and refreshes it.
            MS.store(0, Ordering::SeqCst);
            std::thread::sleep(TICK_PERIOD);
            if MS.load(Ordering::SeqCst) != 0 {
                continue;
            }
            STATE.store(PARKED, Ordering::SeqCst);
            // A reader that stored before it saw PARKED: it will not unpark us, so look again.
            if MS.load(Ordering::SeqCst) != 0 {
                STATE.store(RUNNING, Ordering::SeqCst);
                continue;
            }
            while STATE.load(Ordering::SeqCst) == PARKED {
                std::thread::park();
            }
        }
    }

    pub(super) fn state() -> TickerState {
        match STATE.load(Ordering::SeqCst) {
            NONE => TickerState::None,
            RUNNING => TickerState::Running,
            PARKED => TickerState::Parked,
            _ => TickerState::Disabled,
        }
    }

    pub(super) fn after_fork_in_child() {
        MS.store(0, Ordering::SeqCst);
        if STATE.load(Ordering::SeqCst) != DISABLED {
            STATE.store(NONE, Ordering::SeqCst);
        }
    }

    /// Resets the cache if this process is not the one that started the ticker: a child forked without the
    /// host layer's fork hook (a plain Rust program). Runs where it is cheap: at runtime start and on a stale read.
    pub(super) fn check_fork() {
        let started_in = PID.load(Ordering::SeqCst);
        if started_in != 0 && started_in != std::process::id() {
            after_fork_in_child();
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
///
/// Its cached reading ([`Clock::cached_ms`]) follows `now_ms` unless a test pins it with
/// [`set_cached`](Self::set_cached), to play a ticker that lags or stopped.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
    cached: Arc<AtomicU64>,
}

/// `cached` value: follow `now`.
const FOLLOW: u64 = u64::MAX;

impl Default for ManualClock {
    fn default() -> Self {
        Self::new(0)
    }
}

impl ManualClock {
    /// A clock that reads `now_ms` until moved.
    pub fn new(now_ms: u64) -> Self {
        Self {
            now: Arc::new(AtomicU64::new(now_ms)),
            cached: Arc::new(AtomicU64::new(FOLLOW)),
        }
    }

    /// Pins the cached reading at `ms` whatever the time (0: stale, so the cached reading is the time itself).
    pub fn set_cached(&self, ms: u64) {
        self.cached.store(ms, Ordering::SeqCst);
    }

    /// Lets the cached reading follow the time again.
    pub fn follow(&self) {
        self.cached.store(FOLLOW, Ordering::SeqCst);
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

    fn cached_ms(&self) -> u64 {
        match self.cached.load(Ordering::SeqCst) {
            0 | FOLLOW => self.now_ms(),
            pinned => pinned,
        }
    }

    fn sleep(&self, d: Duration) {
        self.advance((d.as_millis() as u64).max(1));
        std::thread::yield_now();
    }
}
