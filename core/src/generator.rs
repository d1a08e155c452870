//! The generator: issues ids inside the current lease window, from any number of threads, without locks.
//!
//! All mutable state is one atomic word: the last issued id, plus a `CLOSED` bit. Issuing an id is one
//! compare-and-set of that word, after checking the candidate tick against the window `[lo, hi_end)` (ticks, derived
//! from the lease's `(floor, ceiling]`). Sealing sets the `CLOSED` bit with one atomic `fetch_or`: every id was issued
//! by a compare-and-set that happened before it, so the word it returns holds the exact last id, and no
//! compare-and-set can succeed after it.
//!
//! The keeper only ever raises `hi_end` (renewal) or, with the word closed, installs a new slot and window (after a
//! lost lease). Nothing on the hot path can be held by the keeper's I/O, and nothing sleeps while holding anything.

use crate::clock::Clock;
use crate::error::Error;
use crate::id::{Id, Layout};
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Set in the word when no id may be issued (sealed, or the lease was lost).
const CLOSED: u64 = 1 << 63;

const REASON_NONE: u8 = 0;
const REASON_SEALED: u8 = 1;
const REASON_LOST: u8 = 2;
const REASON_FORKED: u8 = 3;
const REASON_STATE_FILE: u8 = 4;

/// How long a call may wait before it gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waits {
    /// A wall clock stepped back by at most this much is waited out; further back is `ClockMovedBackwards`.
    pub backwards: Duration,
    /// How long to wait for a renewal past the ceiling, or for the host clock to pass the floor.
    pub window: Duration,
}

impl Default for Waits {
    fn default() -> Self {
        Self {
            backwards: Duration::from_millis(500),
            window: Duration::from_millis(2_000),
        }
    }
}

/// A lease window as the generator sees it: a slot and `(floor, ceiling]` in Unix milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The slot.
    pub slot: u32,
    /// Excluded lower bound (Unix ms).
    pub floor_ms: u64,
    /// Included upper bound (Unix ms).
    pub ceiling_ms: u64,
}

/// Issues ids for one binding (slot and window) at a time. Shared by reference between threads.
#[derive(Debug)]
pub struct Generator {
    layout: Layout,
    clock: Arc<dyn Clock>,
    /// The clock is [`SystemClock`](crate::clock::SystemClock): read its cache inline on the fast path.
    system_clock: bool,
    waits: Waits,
    epoch_ms: u64,
    /// Never 0: a division by it needs no check on the hot path.
    tick_ms: NonZeroU64,
    tick_shift: u32,
    slot_shift: u32,
    seq_max: u64,
    /// The tick after the layout's last one: what any later clock reading is capped to.
    tick_cap: u64,
    /// `CLOSED` | the last issued id (or the binding's starting point).
    word: AtomicU64,
    /// First tick allowed by the window.
    lo: AtomicU64,
    /// First tick past the window.
    hi_end: AtomicU64,
    /// The window's floor and ceiling in ms, for messages and status.
    floor_ms: AtomicU64,
    ceiling_ms: AtomicU64,
    reason: AtomicU8,
}

enum Step {
    /// Issue this word.
    Issue(u64),
    /// Wait, then try again.
    Wait(Duration),
    Fail(Error),
}

impl Generator {
    /// A generator that is closed until [`bind`](Self::bind) gives it a window.
    pub fn new(layout: Layout, clock: Arc<dyn Clock>, waits: Waits) -> Self {
        let seq_bits = u32::from(layout.sequence_bits());
        let slot_bits = u32::from(layout.slot_bits());
        Self {
            epoch_ms: layout.epoch_ms(),
            tick_ms: NonZeroU64::new(layout.tick().millis()).unwrap_or(NonZeroU64::MIN),
            tick_shift: seq_bits + slot_bits,
            slot_shift: seq_bits,
            seq_max: layout.max_sequence(),
            tick_cap: layout.max_tick() + 1,
            layout,
            system_clock: clock.is_system(),
            clock,
            waits,
            word: AtomicU64::new(CLOSED),
            lo: AtomicU64::new(1),
            hi_end: AtomicU64::new(0),
            floor_ms: AtomicU64::new(0),
            ceiling_ms: AtomicU64::new(0),
            reason: AtomicU8::new(REASON_LOST),
        }
    }

    /// The layout of the ids.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Issues one id.
    #[inline]
    pub fn next_id(&self) -> Result<Id, Error> {
        match self.try_next_id() {
            Some(id) => Ok(id),
            None => self.next_id_slow(),
        }
    }

    /// Issues one id if that needs neither a wait nor an error: the fast path of [`next_id`](Self::next_id)
    /// alone. `None` means "call `next_id`", which may wait or fail. Bindings use it to release a lock (Python's
    /// GIL) only around calls that may wait.
    #[inline]
    pub fn try_next_id(&self) -> Option<Id> {
        self.try_next_id_at(self.cached_now())
    }

    /// [`try_next_id`](Self::try_next_id) that calls nothing: `None` also when the clock is not the system clock
    /// or its cached reading is stale. For an export's first attempt, so that it needs no stack frame.
    #[inline(always)]
    pub(crate) fn try_next_id_leaf(&self) -> Option<Id> {
        if !self.system_clock {
            return None;
        }
        self.try_next_id_at(crate::clock::system_cached_ms_if_fresh()?)
    }

    #[inline(always)]
    fn try_next_id_at(&self, now_ms: u64) -> Option<Id> {
        let w = self.word.load(Ordering::Acquire);
        if w & CLOSED == 0 {
            let now_tick = self.tick_of(now_ms);
            let last_tick = w >> self.tick_shift;
            let (tick, next) = if now_tick > last_tick {
                (
                    now_tick,
                    (now_tick << self.tick_shift) | (w & self.slot_mask()),
                )
            } else {
                (last_tick, w + 1)
            };
            if (now_tick > last_tick || w & self.seq_max != self.seq_max)
                && tick >= self.lo.load(Ordering::Acquire)
                && tick < self.hi_end.load(Ordering::Acquire)
                && self
                    .word
                    .compare_exchange(w, next, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                return Some(Id::from_u64(next));
            }
        }
        None
    }

    /// Fills `out` with ids, reserving as many as a tick allows in one step. On error, `out` may be partly
    /// written; none of it should be used.
    pub fn fill(&self, out: &mut [Id]) -> Result<(), Error> {
        let mut i = 0;
        while i < out.len() {
            i += self.try_fill(&mut out[i..]);
            if i < out.len() {
                out[i] = self.next_id_slow()?;
                i += 1;
            }
        }
        Ok(())
    }

    /// Fills the start of `out` with as many ids as can be had without a wait or an error, and returns how many:
    /// the fast path of [`fill`](Self::fill) alone. A runtime with several slots fills from each in turn.
    pub fn try_fill(&self, out: &mut [Id]) -> usize {
        let mut i = 0;
        while i < out.len() {
            let Some((first, n)) = self.reserve((out.len() - i) as u64) else {
                break;
            };
            for (j, slot) in out[i..i + n as usize].iter_mut().enumerate() {
                *slot = Id::from_u64(first + j as u64);
            }
            i += n as usize;
        }
        i
    }

    /// Reserves up to `want` consecutive ids of one tick; returns the first and how many.
    fn reserve(&self, want: u64) -> Option<(u64, u64)> {
        let w = self.word.load(Ordering::Acquire);
        if w & CLOSED != 0 {
            return None;
        }
        let now_tick = self.tick_of(self.cached_now());
        let last_tick = w >> self.tick_shift;
        let first = if now_tick > last_tick {
            (now_tick << self.tick_shift) | (w & self.slot_mask())
        } else if w & self.seq_mask() < self.seq_max {
            w + 1
        } else {
            return None;
        };
        let tick = first >> self.tick_shift;
        if tick < self.lo.load(Ordering::Acquire) || tick >= self.hi_end.load(Ordering::Acquire) {
            return None;
        }
        let n = want.min(self.seq_max - (first & self.seq_mask()) + 1);
        let last = first + n - 1;
        self.word
            .compare_exchange(w, last, Ordering::AcqRel, Ordering::Relaxed)
            .ok()
            .map(|_| (first, n))
    }

    #[cold]
    fn next_id_slow(&self) -> Result<Id, Error> {
        let started = self.clock.now_ms();
        loop {
            let w = self.word.load(Ordering::Acquire);
            if w & CLOSED != 0 {
                return Err(self.closed_error(w));
            }
            let now = self.clock.now_ms();
            match self.step(w, now, now.saturating_sub(started)) {
                Step::Issue(next) => {
                    if self
                        .word
                        .compare_exchange(w, next, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                    {
                        return Ok(Id::from_u64(next));
                    }
                }
                Step::Wait(d) => self.clock.sleep(d),
                Step::Fail(e) => return Err(e),
            }
        }
    }

    /// Decides what to do with word `w` at local time `now`, having waited `waited` ms so far.
    fn step(&self, w: u64, now: u64, waited: u64) -> Step {
        let now_tick = self.tick_of(now);
        let last_tick = w >> self.tick_shift;
        let seq = w & self.seq_mask();
        let lo = self.lo.load(Ordering::Acquire);
        let hi_end = self.hi_end.load(Ordering::Acquire);
        let window_ms = self.waits.window.as_millis() as u64;
        let next = if now_tick > last_tick {
            (now_tick << self.tick_shift) | (w & self.slot_mask())
        } else if seq < self.seq_max {
            w + 1
        } else if last_tick < lo {
            // Nothing issued yet and the host clock has not passed the floor.
            return if waited >= window_ms {
                Step::Fail(Error::BeforeWindow {
                    floor_ms: self.floor_ms.load(Ordering::Relaxed),
                    now_ms: now,
                    waited_ms: waited,
                })
            } else {
                Step::Wait(self.until_tick(lo, now).min(Duration::from_millis(10)))
            };
        } else if now_tick == last_tick {
            // Sequence exhausted: the next tick is at most one tick away.
            return Step::Wait(self.until_tick(last_tick + 1, now));
        } else {
            let behind = self.tick_start(last_tick + 1).saturating_sub(now);
            let threshold = self.waits.backwards.as_millis() as u64;
            return if behind > threshold || waited > threshold {
                Step::Fail(Error::ClockMovedBackwards {
                    behind_ms: behind,
                    threshold_ms: threshold,
                })
            } else {
                Step::Wait(Duration::from_millis(behind.min(10)))
            };
        };
        let tick = next >> self.tick_shift;
        if tick >= hi_end {
            return if waited >= window_ms {
                Step::Fail(Error::WindowClosed {
                    ceiling_ms: self.ceiling_ms.load(Ordering::Relaxed),
                    now_ms: now,
                    waited_ms: waited,
                })
            } else {
                Step::Wait(Duration::from_millis(5))
            };
        }
        if tick < lo {
            return if waited >= window_ms {
                Step::Fail(Error::BeforeWindow {
                    floor_ms: self.floor_ms.load(Ordering::Relaxed),
                    now_ms: now,
                    waited_ms: waited,
                })
            } else {
                Step::Wait(self.until_tick(lo, now).min(Duration::from_millis(10)))
            };
        }
        Step::Issue(next)
    }

    /// How long until tick `t` starts; zero means "yield and look again" (the common sub-millisecond case).
    fn until_tick(&self, t: u64, now: u64) -> Duration {
        let ms = self.tick_start(t).saturating_sub(now);
        // Sleeping costs about a tick on most kernels; for the last millisecond, yield instead.
        Duration::from_millis(ms.saturating_sub(1))
    }

    /// Installs a new window on a (possibly new) slot. The generator must be closed, or bound to the same slot
    /// (a window that starts later than anything issued).
    pub fn bind(&self, window: Window) {
        let (lo, hi_end) = self.ticks_of(window);
        self.floor_ms.store(window.floor_ms, Ordering::Relaxed);
        self.ceiling_ms.store(window.ceiling_ms, Ordering::Relaxed);
        self.lo.store(lo, Ordering::Release);
        self.hi_end.store(hi_end, Ordering::Release);
        self.reason.store(REASON_NONE, Ordering::Release);
        // Never start below a tick this generator issued before, on any slot: a process's ids keep growing even
        // when a lost lease is replaced by a window on another slot while the clock stepped back.
        let previous = (self.word.load(Ordering::Acquire) & !CLOSED) >> self.tick_shift;
        let start = (lo.saturating_sub(1).max(previous) << self.tick_shift)
            | (u64::from(window.slot) << self.slot_shift)
            | self.seq_max;
        self.word.store(start, Ordering::Release);
    }

    /// Raises the ceiling after a renewal. A lower ceiling is ignored: ceilings only grow.
    pub fn extend(&self, ceiling_ms: u64) {
        let hi_end = self.hi_end_of(ceiling_ms);
        self.ceiling_ms.fetch_max(ceiling_ms, Ordering::Relaxed);
        self.hi_end.fetch_max(hi_end, Ordering::AcqRel);
    }

    /// Stops issuing because the lease is gone. Returns the last issued timestamp (ms), if any.
    pub fn invalidate(&self) -> Option<u64> {
        self.close(REASON_LOST)
    }

    /// Stops issuing because a static slot's state file is gone (deleted or replaced): ids fail with
    /// [`Error::StateFileLost`] until the shutdown.
    pub fn invalidate_state_file(&self) -> Option<u64> {
        self.close(REASON_STATE_FILE)
    }

    /// Stops issuing for good (shutdown). After it returns no thread can return an id, and the returned value is
    /// the exact last millisecond used (the last millisecond of the last issued tick), or `None` if none.
    pub fn seal(&self) -> Option<u64> {
        self.close(REASON_SEALED)
    }

    /// Stops issuing in a child process after `fork()`: the lease belongs to the parent.
    pub fn seal_forked(&self) {
        self.close(REASON_FORKED);
    }

    fn close(&self, reason: u8) -> Option<u64> {
        // Record the reason first: a reader that sees CLOSED reads a reason at least this new.
        self.reason.store(reason, Ordering::Release);
        let w = self.word.fetch_or(CLOSED, Ordering::AcqRel) & !CLOSED;
        let tick = w >> self.tick_shift;
        (tick >= self.lo.load(Ordering::Acquire)).then(|| self.tick_end(tick))
    }

    /// Whether the generator is closed (sealed, lost or not yet bound).
    pub fn is_closed(&self) -> bool {
        self.word.load(Ordering::Acquire) & CLOSED != 0
    }

    /// The current slot, window and last issued id (raw), for status reports.
    pub fn snapshot(&self) -> Snapshot {
        let w = self.word.load(Ordering::Acquire);
        let id = w & !CLOSED;
        let tick = id >> self.tick_shift;
        Snapshot {
            slot: ((id >> self.slot_shift) & self.layout.max_slot()) as u32,
            floor_ms: self.floor_ms.load(Ordering::Relaxed),
            ceiling_ms: self.ceiling_ms.load(Ordering::Relaxed),
            last_issued_ms: (tick >= self.lo.load(Ordering::Acquire)).then(|| self.tick_end(tick)),
            closed: w & CLOSED != 0,
        }
    }

    fn closed_error(&self, w: u64) -> Error {
        match self.reason.load(Ordering::Acquire) {
            REASON_SEALED => Error::Closed {
                reason: "the runtime was shut down",
            },
            REASON_FORKED => Error::Closed {
                reason: "this process was forked from the runtime's owner; start a new runtime",
            },
            REASON_STATE_FILE => Error::StateFileLost {
                slot: (((w & !CLOSED) >> self.slot_shift) & self.layout.max_slot()) as u32,
            },
            _ => Error::SlotLost {
                slot: (((w & !CLOSED) >> self.slot_shift) & self.layout.max_slot()) as u32,
            },
        }
    }

    /// The fast path's time: the clock's cached reading, which may lag real time but never leads it. The slow
    /// path reads the clock itself.
    #[inline(always)]
    fn cached_now(&self) -> u64 {
        if self.system_clock {
            crate::clock::system_cached_ms()
        } else {
            self.clock.cached_ms()
        }
    }

    #[inline]
    fn tick_of(&self, now_ms: u64) -> u64 {
        let t = now_ms.saturating_sub(self.epoch_ms);
        let tick = if self.tick_ms.get() == 1 {
            t
        } else {
            t / self.tick_ms
        };
        // Past the layout's last tick every time reads as the tick after it, which no window allows: shifted into
        // the word, a larger tick would lose its high bits and wrap to a tick already issued.
        tick.min(self.tick_cap)
    }

    fn tick_start(&self, tick: u64) -> u64 {
        self.epoch_ms + tick * self.tick_ms.get()
    }

    fn tick_end(&self, tick: u64) -> u64 {
        self.tick_start(tick) + self.tick_ms.get() - 1
    }

    /// `[lo, hi_end)` in ticks: tick `T` is allowed iff its first ms is above the floor and its last ms is at most
    /// the ceiling.
    ///
    /// `lo` is at least 1, even for a floor below the epoch (a slot never used has floor 0): a fresh binding's word
    /// holds tick `lo - 1`, which must lie below `lo` to read as "nothing issued" (else a runtime that issued nothing
    /// reports the epoch as its last timestamp). Only the epoch's own first tick is lost.
    fn ticks_of(&self, window: Window) -> (u64, u64) {
        let lo = match window.floor_ms.checked_sub(self.epoch_ms) {
            Some(d) => d / self.tick_ms + 1,
            None => 1,
        };
        // A floor past the layout's last tick allows nothing; capped, `lo - 1` still fits the word's tick field.
        (lo.min(self.tick_cap), self.hi_end_of(window.ceiling_ms))
    }

    fn hi_end_of(&self, ceiling_ms: u64) -> u64 {
        match ceiling_ms.checked_sub(self.epoch_ms) {
            Some(d) => ((d + 1) / self.tick_ms).min(self.tick_cap),
            None => 0,
        }
    }

    /// The sequence bits of a word (the sequence is the lowest field, so its mask is its maximum).
    #[inline]
    fn seq_mask(&self) -> u64 {
        self.seq_max
    }

    #[inline]
    fn slot_mask(&self) -> u64 {
        ((1u64 << self.tick_shift) - 1) & !self.seq_max
    }
}

/// What a generator holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// The bound slot.
    pub slot: u32,
    /// The window's floor (Unix ms, excluded).
    pub floor_ms: u64,
    /// The window's ceiling (Unix ms, included).
    pub ceiling_ms: u64,
    /// The last millisecond of the last issued tick, if any id was issued in this window.
    pub last_issued_ms: Option<u64>,
    /// Whether issuing is stopped.
    pub closed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::id::Tick;

    /// Found by tests/c/fuzz_api.c: with the clock past a layout's last tick, the tick wrapped in the word and the
    /// same id came out twice.
    #[test]
    fn a_clock_past_the_layouts_last_tick_closes_the_window_instead_of_wrapping() {
        let epoch = 1_349_340_157_629;
        let layout = Layout::new(epoch, Tick::Millisecond, 1, 46, 13).unwrap();
        let clock = ManualClock::new(epoch + 450_000_000_001);
        let waits = Waits {
            window: Duration::ZERO,
            ..Waits::default()
        };
        let g = Generator::new(layout, Arc::new(clock), waits);
        g.bind(Window {
            slot: 0,
            floor_ms: 0,
            ceiling_ms: epoch + 900_000_000_000,
        });
        for _ in 0..3 {
            assert!(matches!(g.next_id(), Err(Error::WindowClosed { .. })));
        }
        let mut out = [Id::from_u64(0); 2];
        assert!(g.fill(&mut out).is_err());
    }

    /// A window whose floor lies past the layout's last tick allows no id, and binding it does not wrap the word.
    #[test]
    fn a_floor_past_the_layouts_last_tick_allows_nothing() {
        let layout = Layout::new(0, Tick::Millisecond, 8, 2, 2).unwrap();
        let clock = ManualClock::new(1_000);
        let waits = Waits {
            window: Duration::ZERO,
            backwards: Duration::ZERO,
        };
        let g = Generator::new(layout, Arc::new(clock), waits);
        g.bind(Window {
            slot: 1,
            floor_ms: 10_000,
            ceiling_ms: 20_000,
        });
        assert!(
            !g.is_closed(),
            "binding must not set the CLOSED bit by overflow"
        );
        assert_eq!(g.snapshot().slot, 1);
        assert!(g.next_id().is_err());
    }
}
