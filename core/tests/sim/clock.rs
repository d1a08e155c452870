//! A holder's wall clock in the simulation: set by the simulation, advanced by the generator's own waits, and able
//! to freeze the calling thread right after a read (a pause between reading the clock and returning an id).

use cosid::clock::Clock;
use cosid::{Error, Id};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Mutex;
use std::time::Duration;

/// What a thread issuing under a trap tells the simulation.
#[derive(Debug)]
pub enum CallEvent {
    /// The call read the clock and is now frozen until resumed.
    Paused,
    /// The call returned.
    Done(Result<Id, Error>),
}

/// A one-shot trap: after `reads_before` reads pass untouched, the next read freezes its thread.
#[derive(Debug)]
pub struct Trap {
    pub reads_before: u32,
    pub paused: Sender<CallEvent>,
    pub resume: Receiver<()>,
}

/// The simulated wall clock of one holder.
#[derive(Debug, Default)]
pub struct SimClock {
    now: AtomicU64,
    /// The cached reading the generator's fast path sees (a ticker thread's, in a real process); 0: stale, so
    /// the fast path reads `now`. The simulation refreshes it, leaves it lagging, or marks it stale.
    cached: AtomicU64,
    slept: AtomicU64,
    trap: Mutex<Option<Trap>>,
}

impl SimClock {
    pub fn set(&self, now_ms: u64) {
        self.now.store(now_ms, Ordering::SeqCst);
    }

    /// Sets the cached reading (0: stale).
    pub fn set_cached(&self, ms: u64) {
        self.cached.store(ms, Ordering::SeqCst);
    }

    pub fn cached(&self) -> u64 {
        self.cached.load(Ordering::SeqCst)
    }

    /// Milliseconds the generator waited since the last call, which the simulation adds to global time.
    pub fn take_slept(&self) -> u64 {
        self.slept.swap(0, Ordering::SeqCst)
    }

    pub fn arm(&self, trap: Trap) {
        *self.trap.lock().unwrap() = Some(trap);
    }

    pub fn disarm(&self) {
        self.trap.lock().unwrap().take();
    }
}

impl Clock for SimClock {
    fn now_ms(&self) -> u64 {
        let read = self.now.load(Ordering::SeqCst);
        self.after_read(read)
    }

    fn cached_ms(&self) -> u64 {
        match self.cached.load(Ordering::SeqCst) {
            0 => self.now_ms(),
            read => self.after_read(read),
        }
    }

    fn sleep(&self, d: Duration) {
        let ms = (d.as_millis() as u64).max(1);
        self.now.fetch_add(ms, Ordering::SeqCst);
        self.slept.fetch_add(ms, Ordering::SeqCst);
    }
}

impl SimClock {
    /// A clock read (cached or not) that may spring the trap: the thread freezes holding `read`.
    fn after_read(&self, read: u64) -> u64 {
        let sprung = {
            let mut trap = self.trap.lock().unwrap();
            match trap.as_mut() {
                Some(t) if t.reads_before == 0 => trap.take(),
                Some(t) => {
                    t.reads_before -= 1;
                    None
                }
                None => None,
            }
        };
        if let Some(trap) = sprung {
            // The value is read; the thread now freezes before it can use it, for as long as the simulation says.
            trap.paused.send(CallEvent::Paused).unwrap();
            trap.resume.recv().unwrap();
        }
        read
    }
}
