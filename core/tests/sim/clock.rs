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
    slept: AtomicU64,
    trap: Mutex<Option<Trap>>,
}

impl SimClock {
    pub fn set(&self, now_ms: u64) {
        self.now.store(now_ms, Ordering::SeqCst);
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

    fn sleep(&self, d: Duration) {
        let ms = (d.as_millis() as u64).max(1);
        self.now.fetch_add(ms, Ordering::SeqCst);
        self.slept.fetch_add(ms, Ordering::SeqCst);
    }
}
