//! The keeper's decisions as a state machine, with no I/O: no store, no timers, no clock reads.
//!
//! The keeper (`keeper.rs`) is a thin async shell around it, and the deterministic simulation drives the same
//! machine, so what the simulation checks is what ships. The shell feeds [`Input`]s (a timer fired, a store call
//! returned, shutdown was asked) with the time they happen at, and carries out the [`Action`]s returned, in order:
//! store calls, generator window changes, events, and sleeps. Every store call it is asked to make is answered by
//! exactly one input, unless shutdown interrupts it ([`Machine::interruptible`]); at most one call or sleep is
//! pending at a time.

use crate::event::Event;
use crate::keeper::State;
use crate::lease::{Acquired, SlotLease};
use crate::store::StoreError;
use std::collections::BTreeMap;

/// The least and first retry delay after a failed store call (ms).
pub const MIN_BACKOFF_MS: u64 = 100;

/// The moment an input happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// Monotonic time (ms, any origin): every sleep and deadline is on this clock.
    pub mono_ms: u64,
    /// The wall clock (ms since the Unix epoch), compared with the store's to warn of skew.
    pub wall_ms: u64,
}

/// The keeper's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Lease length (ms).
    pub ttl_ms: u64,
    /// The namespace's clock tolerance (ms).
    pub tolerance_ms: u64,
    /// Seeds the jitter of the renewal period and of every retry delay, so that runtimes started together (a
    /// fleet rolled out at once, every holder after a store outage) spread their calls out instead of calling the
    /// store in lock-step. Each runtime its own (the keeper uses its incarnation); 0 for none: renewals exactly
    /// every ttl/3, retries exactly at the back-off.
    pub jitter_seed: u64,
}

/// Something that happened, fed to [`Machine::handle`].
#[derive(Debug)]
pub enum Input {
    /// The sleep asked for by the last [`Action::SleepUntil`] is over.
    TimerFired,
    /// The answer to [`Action::Acquire`].
    Acquired(Result<Acquired, StoreError>),
    /// The answer to [`Action::Renew`] (a timeout is an error).
    Renewed(Result<SlotLease, StoreError>),
    /// The answer to [`Action::Release`].
    Released(Result<(), StoreError>),
    /// The answer to [`Action::Inspect`]: the store's clock.
    Inspected(Result<u64, StoreError>),
    /// The answer to [`Action::RaiseNotBefore`].
    RaisedNotBefore(Result<(), StoreError>),
    /// Shutdown was asked.
    Shutdown,
    /// The answer to [`Action::Seal`]: whether the generator was already closed, and the last timestamp.
    Sealed {
        /// The generator was closed before the seal (lost lease, or never bound).
        was_closed: bool,
        /// The last timestamp the seal returned.
        last: Option<u64>,
    },
}

/// Log severity of an [`Action::Log`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Something the operator may want to know.
    Warn,
    /// Something is wrong with the store.
    Error,
}

/// What the shell must do.
#[derive(Debug)]
pub enum Action {
    /// Call `store.acquire` (unbounded: the acquisition's deadline is the machine's).
    Acquire,
    /// Call `store.renew(lease)`; no answer within `timeout_ms` is an `Unavailable` error.
    Renew {
        /// The lease to renew.
        lease: SlotLease,
        /// Bound on the call.
        timeout_ms: u64,
    },
    /// Call `store.release(lease, last)`; answered by [`Input::Released`].
    Release {
        /// The lease to release.
        lease: SlotLease,
        /// Its last timestamp (release caps it at the lease's ceiling).
        last: Option<u64>,
        /// Bound on the call.
        timeout_ms: u64,
    },
    /// Call `store.inspect` and answer with the store's clock.
    Inspect {
        /// Bound on the call.
        timeout_ms: u64,
    },
    /// Call `store.raise_not_before(bound)`; `NotBeforeLowered` counts as done.
    RaiseNotBefore {
        /// The new `not_before`.
        bound: u64,
        /// Bound on the call.
        timeout_ms: u64,
    },
    /// Bind the generator to the lease's window.
    Bind(SlotLease),
    /// Raise the generator's ceiling to this renewed lease's.
    Extend(SlotLease),
    /// Close the generator at once: nothing more is issued on the current window.
    Invalidate,
    /// Seal the generator and answer with [`Input::Sealed`].
    Seal,
    /// Record the current lease and state (for `status`).
    SetLease(SlotLease, State),
    /// Record the state only.
    SetState(State),
    /// Tell the listeners.
    Emit(Event),
    /// Log a line.
    Log(Level, String),
    /// Wake the machine with [`Input::TimerFired`] at this monotonic time.
    SleepUntil(u64),
    /// The first acquisition is over: the lease to start with, or why there is none.
    Started(Result<Acquired, StoreError>),
    /// The keeper is done; the last timestamp released (`None` if the lease was lost or nothing was issued).
    Finished(Option<u64>),
}

/// One acquisition, retried until a deadline (the acquire timeout at start, ttl when a lost lease is replaced).
#[derive(Debug, Clone, Copy)]
struct Acquiring {
    deadline: Option<u64>,
    backoff: u64,
    /// Sleeping before the next attempt (else awaiting the store).
    sleeping: bool,
}

/// What follows a recovery (or the give-back that leads to one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Then {
    /// Acquire a new slot (the lease's loss was found while renewing).
    Reacquire,
    /// Back to the replacement loop's back-off (a refused grant or a `Regression` while acquiring).
    ReacquireBackoff { outer: u64 },
}

#[derive(Debug)]
enum Phase {
    /// The first acquisition.
    Starting(Acquiring),
    /// The first acquisition ended; the shell installs the lease and starts the run with [`Machine::running`].
    Started,
    /// Holding the lease: sleeping until the next renewal (`backoff` is the next retry delay).
    Holding { backoff: u64 },
    /// A renewal is awaited.
    Renewing { backoff: u64 },
    /// A refused lease is being given back; then a recovery.
    GivingBack {
        slot: u32,
        detail: Option<String>,
        then: Then,
    },
    /// Raising `not_before` after lost writes; `deadline` bounds one attempt (inspect then raise).
    Recovering {
        backoff: u64,
        deadline: u64,
        step: Recovery,
        then: Then,
    },
    /// Replacing a lost lease: `outer` is the back-off between acquisitions.
    Reacquiring {
        outer: u64,
        acquiring: Acquiring,
        outer_sleep: bool,
    },
    /// Waiting for the seal; `release` if the lease is to be released.
    Closing { release: bool },
    /// The last release is awaited.
    Releasing { last: Option<u64> },
    /// Finished.
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recovery {
    Inspecting,
    Raising { bound: u64 },
    Sleeping,
}

/// The keeper's state machine. See the module documentation.
#[derive(Debug)]
pub struct Machine {
    config: Config,
    /// The lease held (or last held, while replacing it).
    lease: Option<SlotLease>,
    /// What the store granted this runtime before.
    seen: History,
    phase: Phase,
    /// Shutdown was asked during a call that is not interrupted (a give-back): acted on when it returns.
    stopping: bool,
    /// The jitter's generator state (splitmix64); 0 for no jitter.
    rng: u64,
}

/// The renewal period varies by up to this fraction (in tenths) of ttl/3 either way: on average ttl/3, so the
/// store's load is unchanged, and two runtimes in step drift apart within a few renewals.
const PERIOD_JITTER_TENTHS: u64 = 1;

fn double(backoff: u64, ttl_ms: u64) -> u64 {
    // Not `clamp`: below a 600 ms ttl, ttl/6 is under the minimum and `clamp` would panic.
    backoff
        .saturating_mul(2)
        .min(ttl_ms / 6)
        .max(MIN_BACKOFF_MS)
}

impl Machine {
    /// A machine for the first acquisition, retried until `timeout_ms` from `now`. Returns its first actions.
    pub fn start(config: Config, now: Now, timeout_ms: u64) -> (Self, Vec<Action>) {
        let mut m = Self {
            config,
            lease: None,
            seen: History::default(),
            phase: Phase::Started,
            stopping: false,
            rng: config.jitter_seed,
        };
        m.phase = Phase::Starting(Acquiring {
            deadline: now.mono_ms.checked_add(timeout_ms),
            backoff: MIN_BACKOFF_MS,
            sleeping: false,
        });
        (m, vec![Action::Acquire])
    }

    /// The actions that put a granted lease to use: bind the generator, record the lease, tell the listeners.
    /// For the first lease, the shell carries them out itself before [`running`](Self::running).
    pub fn install(config: Config, now: Now, acquired: &Acquired) -> Vec<Action> {
        let lease = &acquired.lease;
        let mut out = vec![
            Action::Bind(lease.clone()),
            Action::SetLease(lease.clone(), State::Active),
        ];
        if let Some(other_slot) = acquired.duplicate_owner_key {
            out.push(Action::Emit(Event::DuplicateOwnerKey {
                key: lease.owner.key.clone(),
                other_slot,
            }));
        }
        out.push(Action::Emit(Event::Acquired {
            slot: lease.slot,
            fence: lease.fence,
            floor_ms: lease.floor,
            ceiling_ms: lease.ceiling,
            expires_at_ms: lease.expires_at,
        }));
        out.extend(skew(config, now, lease.store_now));
        out
    }

    /// A machine holding `lease`, installed at `now`. Returns its first action: sleep until the first renewal.
    pub fn running(config: Config, now: Now, lease: SlotLease) -> (Self, Vec<Action>) {
        let mut m = Self {
            config,
            lease: None,
            seen: History::default(),
            phase: Phase::Started,
            stopping: false,
            rng: config.jitter_seed,
        };
        m.note(&lease);
        m.lease = Some(lease);
        let out = m.hold(now);
        (m, out)
    }

    /// Whether shutdown interrupts what is pending now (a sleep or a call whose answer is not needed). If not, the
    /// shell lets it finish and delivers [`Input::Shutdown`] afterwards (or at once: the machine remembers it).
    pub fn interruptible(&self) -> bool {
        !matches!(
            self.phase,
            Phase::Starting(_) | Phase::GivingBack { .. } | Phase::Releasing { .. } | Phase::Done
        )
    }

    /// Whether the machine is finished.
    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done | Phase::Started)
    }

    /// The lease held (or last held).
    pub fn lease(&self) -> Option<&SlotLease> {
        self.lease.as_ref()
    }

    /// The time to the next renewal: ttl/3, give or take a tenth (jittered).
    fn period(&mut self) -> u64 {
        let base = self.config.ttl_ms / 3;
        if self.rng == 0 {
            return base;
        }
        let spread = base * PERIOD_JITTER_TENTHS / 10;
        base - spread + self.random_below(2 * spread + 1)
    }

    /// A retry delay for a back-off of `backoff`: between half of it and all of it ("equal jitter"), so that the
    /// runtimes that failed together do not retry together.
    fn retry_delay(&mut self, backoff: u64) -> u64 {
        let half = backoff / 2;
        backoff - self.random_below(half + 1)
    }

    /// Uniform in `0..n` (0 without jitter, or for `n` of 0 or 1).
    fn random_below(&mut self, n: u64) -> u64 {
        if self.rng == 0 || n <= 1 {
            return 0;
        }
        // splitmix64: one add and three mixes, no state beyond one word; ample for spreading timers.
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        if self.rng == 0 {
            // The state wrapped to 0, which means "no jitter": step past it.
            self.rng = 1;
        }
        z % n
    }

    fn slot(&self) -> u32 {
        self.lease.as_ref().map_or(0, |l| l.slot)
    }

    fn note(&mut self, lease: &SlotLease) {
        self.seen.note(lease);
    }

    fn highest_ceiling(&self) -> u64 {
        self.seen.highest_ceiling()
    }

    fn check_grant(&mut self, lease: &SlotLease) -> Result<(), String> {
        self.seen.check_grant(lease)
    }

    /// Feeds one input at `now`; returns what to do, in order.
    pub fn handle(&mut self, now: Now, input: Input) -> Vec<Action> {
        let mut out = Vec::new();
        let phase = std::mem::replace(&mut self.phase, Phase::Done);
        match (phase, input) {
            (phase @ (Phase::GivingBack { .. } | Phase::Starting(_)), Input::Shutdown) => {
                self.stopping = true;
                self.phase = phase;
            }
            (Phase::Holding { .. } | Phase::Renewing { .. }, Input::Shutdown) => {
                self.close(true, &mut out)
            }
            (Phase::Recovering { .. } | Phase::Reacquiring { .. }, Input::Shutdown) => {
                self.close(false, &mut out)
            }
            (phase, Input::Shutdown) => self.phase = phase,

            (Phase::Starting(a), Input::Acquired(r)) => match r {
                Ok(acquired) => {
                    self.lease = Some(acquired.lease.clone());
                    self.phase = Phase::Started;
                    out.push(Action::Started(Ok(acquired)));
                }
                Err(e) => self.acquire_failed(now, a, e, Ctx::Start, &mut out),
            },
            (Phase::Starting(a), Input::TimerFired) if a.sleeping => {
                self.phase = Phase::Starting(Acquiring {
                    sleeping: false,
                    ..a
                });
                out.push(Action::Acquire);
            }

            (Phase::Holding { backoff }, Input::TimerFired) => {
                let lease = self.lease.clone().expect("holding a lease");
                self.phase = Phase::Renewing { backoff };
                out.push(Action::Renew {
                    lease,
                    // A store that hangs must neither stall shutdown nor outlast the lease: bound each renewal.
                    timeout_ms: self.config.ttl_ms / 3,
                });
            }
            (Phase::Renewing { backoff }, Input::Renewed(r)) => {
                self.renewed(now, backoff, r, &mut out)
            }

            (Phase::GivingBack { slot, detail, then }, Input::Released(r)) => {
                if let Err(e) = r {
                    out.push(Action::Log(
                        Level::Warn,
                        format!("cosid: could not give back refused slot {slot}: {e}"),
                    ));
                }
                match detail {
                    // A renewal went backwards: now the alarm, and the recovery.
                    Some(detail) => self.lost_writes(now, slot, detail, &mut out),
                    None => self.recover(now, then, &mut out),
                }
            }

            (
                Phase::Recovering {
                    backoff,
                    deadline,
                    step,
                    then,
                },
                input,
            ) => self.recovering(now, backoff, deadline, step, then, input, &mut out),

            (
                Phase::Reacquiring {
                    outer,
                    acquiring,
                    outer_sleep,
                },
                input,
            ) => self.reacquiring(now, outer, acquiring, outer_sleep, input, &mut out),

            (Phase::Closing { release }, Input::Sealed { was_closed, last }) => {
                out.push(Action::SetState(State::Closed));
                match (&self.lease, release && !was_closed) {
                    (Some(lease), true) => {
                        out.push(Action::Release {
                            lease: lease.clone(),
                            last,
                            timeout_ms: self.config.ttl_ms,
                        });
                        self.phase = Phase::Releasing { last };
                    }
                    // Lost (or never bound): the lease is not ours to release.
                    _ => self.finish(None, &mut out),
                }
            }
            (Phase::Releasing { last }, Input::Released(r)) => {
                match r {
                    Ok(()) => out.push(Action::Emit(Event::Released {
                        slot: self.slot(),
                        last_issued_ms: last,
                    })),
                    Err(e) => out.push(Action::Log(
                        Level::Warn,
                        format!(
                            "cosid: release of slot {} failed; it frees itself at expiry: {e}",
                            self.slot()
                        ),
                    )),
                }
                self.finish(last, &mut out);
            }
            // Anything else answers nothing pending (a stale answer, a timer that was overtaken): ignored.
            (phase, _) => self.phase = phase,
        }
        out
    }

    fn finish(&mut self, last: Option<u64>, out: &mut Vec<Action>) {
        self.phase = Phase::Done;
        out.push(Action::Finished(last));
    }

    /// Shutdown: seal, then (if `release`) release with the exact last timestamp the seal returns.
    fn close(&mut self, release: bool, out: &mut Vec<Action>) {
        self.phase = Phase::Closing { release };
        out.push(Action::Seal);
    }

    /// Sleeps until the next renewal, a period from now, with the back-off reset.
    fn hold(&mut self, now: Now) -> Vec<Action> {
        self.phase = Phase::Holding {
            backoff: MIN_BACKOFF_MS,
        };
        let period = self.period();
        vec![Action::SleepUntil(now.mono_ms.saturating_add(period))]
    }

    fn renewed(
        &mut self,
        now: Now,
        backoff: u64,
        r: Result<SlotLease, StoreError>,
        out: &mut Vec<Action>,
    ) {
        let lease = self.lease.clone().expect("renewing a lease");
        match r {
            Ok(renewed)
                if renewed.fence != lease.fence
                    || renewed.floor != lease.floor
                    || renewed.ceiling < lease.ceiling =>
            {
                // A renewal can only keep the fence and floor and raise the ceiling: anything else means the
                // store's record went backwards under this lease.
                let detail = format!(
                    "renewal returned fence {}, floor {}, ceiling {} for a lease with fence {}, floor {}, ceiling {}",
                    renewed.fence, renewed.floor, renewed.ceiling, lease.fence, lease.floor, lease.ceiling
                );
                // Stop issuing first; then give the damaged lease back with the ceiling this runtime knows was
                // used, so its slot's next_floor is above it again and it is not returned to us as ours.
                out.push(Action::Invalidate);
                out.push(Action::Release {
                    last: Some(lease.ceiling.max(renewed.ceiling)),
                    lease: renewed,
                    timeout_ms: self.config.ttl_ms,
                });
                self.phase = Phase::GivingBack {
                    slot: lease.slot,
                    detail: Some(detail),
                    then: Then::Reacquire,
                };
            }
            Err(e @ StoreError::Regression { .. }) => {
                self.lost_writes(now, lease.slot, e.to_string(), out)
            }
            Ok(renewed) => {
                out.push(Action::Extend(renewed.clone()));
                out.push(Action::SetLease(renewed.clone(), State::Active));
                out.push(Action::Emit(Event::Renewed {
                    slot: renewed.slot,
                    ceiling_ms: renewed.ceiling,
                    expires_at_ms: renewed.expires_at,
                }));
                out.extend(skew(self.config, now, renewed.store_now));
                self.note(&renewed);
                self.lease = Some(renewed);
                out.extend(self.hold(now));
            }
            Err(e @ (StoreError::LeaseLost { .. } | StoreError::Corrupt { .. })) => {
                // There is no switch to keep issuing on a lost lease: close first, then look for a new one.
                out.push(Action::Invalidate);
                out.push(Action::SetState(State::Reacquiring));
                out.push(Action::Emit(Event::SlotLost {
                    slot: lease.slot,
                    reason: e.to_string(),
                }));
                self.reacquire(now, MIN_BACKOFF_MS, out);
            }
            Err(e) => {
                let delay = self.retry_delay(backoff);
                out.push(Action::SetState(State::Renewing));
                out.push(Action::Emit(Event::RenewFailed {
                    slot: lease.slot,
                    error: e.to_string(),
                    retry_in_ms: delay,
                }));
                out.push(Action::SleepUntil(now.mono_ms.saturating_add(delay)));
                self.phase = Phase::Holding {
                    backoff: double(backoff, self.config.ttl_ms),
                };
            }
        }
    }

    /// The store lost writes under this runtime's lease: stops issuing at once, raises the alarm, makes the
    /// namespace safe to grant from again, then acquires a new slot.
    fn lost_writes(&mut self, now: Now, slot: u32, detail: String, out: &mut Vec<Action>) {
        out.push(Action::Invalidate);
        out.push(Action::SetState(State::Reacquiring));
        alarm(slot, detail, out);
        self.recover(now, Then::Reacquire, out);
    }

    /// After lost writes, raises the namespace's `not_before` past every window that could have been granted
    /// before the loss, so that no grant made from the damaged records can reach back into one: the store's time
    /// plus ttl and tolerance bounds every window granted or renewed until now (by runtimes with this ttl), and
    /// the highest ceiling this runtime was granted bounds its own. Every grant's floor is at least `not_before`,
    /// whether its slot record survived, was recreated, or never existed. Retries until done.
    fn recover(&mut self, now: Now, then: Then, out: &mut Vec<Action>) {
        self.attempt_recovery(now, MIN_BACKOFF_MS, then, out);
    }

    fn attempt_recovery(&mut self, now: Now, backoff: u64, then: Then, out: &mut Vec<Action>) {
        if self.stopping {
            return self.close(false, out);
        }
        // One attempt (inspect, then raise) is bounded by a ttl.
        self.phase = Phase::Recovering {
            backoff,
            deadline: now.mono_ms.saturating_add(self.config.ttl_ms),
            step: Recovery::Inspecting,
            then,
        };
        out.push(Action::Inspect {
            timeout_ms: self.config.ttl_ms,
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn recovering(
        &mut self,
        now: Now,
        backoff: u64,
        deadline: u64,
        step: Recovery,
        then: Then,
        input: Input,
        out: &mut Vec<Action>,
    ) {
        let failed = match (step, input) {
            (Recovery::Inspecting, Input::Inspected(Ok(store_now))) => {
                let bound = store_now
                    .saturating_add(self.config.ttl_ms)
                    .saturating_add(self.config.tolerance_ms)
                    .max(self.highest_ceiling());
                self.phase = Phase::Recovering {
                    backoff,
                    deadline,
                    step: Recovery::Raising { bound },
                    then,
                };
                out.push(Action::RaiseNotBefore {
                    bound,
                    timeout_ms: deadline.saturating_sub(now.mono_ms),
                });
                return;
            }
            (Recovery::Inspecting, Input::Inspected(Err(e))) => e,
            // Already higher: someone recovered first, which is as good.
            (
                Recovery::Raising { bound },
                Input::RaisedNotBefore(Ok(()) | Err(StoreError::NotBeforeLowered { .. })),
            ) => {
                out.push(Action::Log(
                    Level::Warn,
                    format!(
                        "cosid: raised the namespace's not_before to {bound} after lost writes"
                    ),
                ));
                return match then {
                    Then::Reacquire => self.reacquire(now, MIN_BACKOFF_MS, out),
                    Then::ReacquireBackoff { outer } => self.outer_sleep(now, outer, out),
                };
            }
            (Recovery::Raising { .. }, Input::RaisedNotBefore(Err(e))) => e,
            (Recovery::Sleeping, Input::TimerFired) => {
                return self.attempt_recovery(now, double(backoff, self.config.ttl_ms), then, out)
            }
            (step, _) => {
                self.phase = Phase::Recovering {
                    backoff,
                    deadline,
                    step,
                    then,
                };
                return;
            }
        };
        let delay = self.retry_delay(backoff);
        out.push(Action::Emit(Event::RenewFailed {
            slot: self.slot(),
            error: format!("raising not_before after lost writes: {failed}"),
            retry_in_ms: delay,
        }));
        out.push(Action::SleepUntil(now.mono_ms.saturating_add(delay)));
        self.phase = Phase::Recovering {
            backoff,
            deadline,
            step: Recovery::Sleeping,
            then,
        };
    }

    /// Replaces a lost lease: acquisitions bounded by a ttl each, `outer` apart, until one is granted and passes
    /// the regression check, or shutdown.
    fn reacquire(&mut self, now: Now, outer: u64, out: &mut Vec<Action>) {
        if self.stopping {
            return self.close(false, out);
        }
        self.phase = Phase::Reacquiring {
            outer,
            acquiring: Acquiring {
                deadline: now.mono_ms.checked_add(self.config.ttl_ms),
                backoff: MIN_BACKOFF_MS,
                sleeping: false,
            },
            outer_sleep: false,
        };
        out.push(Action::Acquire);
    }

    /// Every way round the replacement loop backs off, so a store that keeps answering the same cannot spin the
    /// keeper.
    fn outer_sleep(&mut self, now: Now, outer: u64, out: &mut Vec<Action>) {
        if self.stopping {
            return self.close(false, out);
        }
        self.phase = Phase::Reacquiring {
            outer,
            acquiring: Acquiring {
                deadline: None,
                backoff: MIN_BACKOFF_MS,
                sleeping: false,
            },
            outer_sleep: true,
        };
        let delay = self.retry_delay(outer);
        out.push(Action::SleepUntil(now.mono_ms.saturating_add(delay)));
    }

    fn reacquiring(
        &mut self,
        now: Now,
        outer: u64,
        acquiring: Acquiring,
        outer_sleep: bool,
        input: Input,
        out: &mut Vec<Action>,
    ) {
        let ttl = self.config.ttl_ms;
        match input {
            Input::TimerFired if outer_sleep => self.reacquire(now, double(outer, ttl), out),
            Input::TimerFired if acquiring.sleeping => {
                self.phase = Phase::Reacquiring {
                    outer,
                    acquiring: Acquiring {
                        sleeping: false,
                        ..acquiring
                    },
                    outer_sleep,
                };
                out.push(Action::Acquire);
            }
            Input::Acquired(Ok(acquired)) if !outer_sleep && !acquiring.sleeping => {
                match self.check_grant(&acquired.lease) {
                    Ok(()) => {
                        out.extend(Self::install(self.config, now, &acquired));
                        self.note(&acquired.lease);
                        self.lease = Some(acquired.lease);
                        out.extend(self.hold(now));
                    }
                    Err(detail) => {
                        // Never issue on it; give it back with the ceiling this runtime knows was used, which
                        // lifts the slot's next_floor above every timestamp issued on it. Then recover: after it,
                        // the next grant's floor is past every ceiling seen, and it is taken.
                        let lease = acquired.lease;
                        alarm(lease.slot, detail, out);
                        self.phase = Phase::GivingBack {
                            slot: lease.slot,
                            detail: None,
                            then: Then::ReacquireBackoff { outer },
                        };
                        out.push(Action::Release {
                            lease,
                            last: Some(self.highest_ceiling()),
                            timeout_ms: ttl,
                        });
                    }
                }
            }
            Input::Acquired(Err(e)) if !outer_sleep && !acquiring.sleeping => {
                self.acquire_failed(now, acquiring, e, Ctx::Replace { outer }, out)
            }
            _ => {
                self.phase = Phase::Reacquiring {
                    outer,
                    acquiring,
                    outer_sleep,
                }
            }
        }
    }

    /// An acquisition attempt failed: retries `Exhausted` after the earliest expiry and other retryable errors
    /// with back-off, until the deadline. Else the acquisition gives up with the error.
    fn acquire_failed(
        &mut self,
        now: Now,
        a: Acquiring,
        err: StoreError,
        ctx: Ctx,
        out: &mut Vec<Action>,
    ) {
        let ttl = self.config.ttl_ms;
        // Not `clamp`: below a 300 ms ttl, ttl/3 is under MIN_BACKOFF and `clamp` would panic.
        let wait = match &err {
            StoreError::Exhausted {
                earliest_expiry,
                store_now,
                ..
            } => Some(
                earliest_expiry
                    .saturating_sub(*store_now)
                    .saturating_add(1)
                    .min(ttl / 3)
                    .max(MIN_BACKOFF_MS),
            ),
            e if e.is_retryable() => Some(a.backoff),
            _ => None,
        };
        // Holders waiting for one expiry (an acquisition storm on a full namespace) or for one store to come back
        // would all call at the same instant: spread them (a wait for an expiry by up to a quarter more).
        let wait = wait.map(|w| match &err {
            StoreError::Exhausted { .. } => w + self.random_below(w / 4 + 1),
            _ => self.retry_delay(w),
        });
        // A deadline past the clock's range is no deadline: give up rather than wait for ever.
        let fits = |w: u64| {
            a.deadline
                .is_some_and(|d| now.mono_ms.checked_add(w).is_some_and(|t| t <= d))
        };
        match wait {
            Some(wait) if fits(wait) => {
                let acquiring = Acquiring {
                    deadline: a.deadline,
                    backoff: double(a.backoff, ttl),
                    sleeping: true,
                };
                self.phase = match ctx {
                    Ctx::Start => Phase::Starting(acquiring),
                    Ctx::Replace { outer } => Phase::Reacquiring {
                        outer,
                        acquiring,
                        outer_sleep: false,
                    },
                };
                out.push(Action::SleepUntil(now.mono_ms.saturating_add(wait)));
            }
            _ => match ctx {
                Ctx::Start => {
                    self.phase = Phase::Started;
                    out.push(Action::Started(Err(err)));
                }
                Ctx::Replace { outer } => match err {
                    e @ StoreError::Regression { .. } => {
                        alarm(self.slot(), e.to_string(), out);
                        self.recover(now, Then::ReacquireBackoff { outer }, out);
                    }
                    e => {
                        out.push(Action::Emit(Event::RenewFailed {
                            slot: self.slot(),
                            error: e.to_string(),
                            retry_in_ms: outer,
                        }));
                        self.outer_sleep(now, outer, out);
                    }
                },
            },
        }
    }
}

/// For every slot a runtime held: the highest fence and ceiling the store ever granted it. A later grant of the
/// same slot below them means the store lost writes. (Public for the model check, which keeps a runtime's history
/// in its own state and asks this type for the verdict on each grant.)
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct History {
    seen: BTreeMap<u32, (u64, u64)>,
}

impl History {
    /// Records a lease granted or renewed: the slot's history keeps the highest fence and ceiling.
    pub fn note(&mut self, lease: &SlotLease) {
        let entry = self
            .seen
            .entry(lease.slot)
            .or_insert((lease.fence, lease.ceiling));
        *entry = (entry.0.max(lease.fence), entry.1.max(lease.ceiling));
    }

    /// The highest fence and ceiling granted on `slot`, if it was ever held.
    pub fn slot(&self, slot: u32) -> Option<(u64, u64)> {
        self.seen.get(&slot).copied()
    }

    /// The highest ceiling the store ever granted this runtime, on any slot.
    pub fn highest_ceiling(&self) -> u64 {
        self.seen.values().map(|&(_, c)| c).max().unwrap_or(0)
    }

    /// Whether `lease`, a new grant, may be used; if not, what went backwards.
    ///
    /// A grant below what this runtime saw of its slot before (a fence not above the one it held, a floor below
    /// its ceiling) is evidence that the store lost writes. A grant whose floor is at or above every ceiling this
    /// runtime was ever granted is safe for all it issued whatever its fence: that is what a recovery (a raised
    /// `not_before`) produces, and taking it ends the recovery in one acquisition. Its slot's history starts over
    /// from it, so a later loss is measured against the new grant.
    pub fn check_grant(&mut self, lease: &SlotLease) -> Result<(), String> {
        let highest = self.highest_ceiling();
        let Some(&(fence, ceiling)) = self.seen.get(&lease.slot) else {
            return Ok(());
        };
        let evidence = if lease.fence <= fence {
            format!(
                "fence {} granted, but this runtime held fence {fence}",
                lease.fence
            )
        } else if lease.floor < ceiling {
            format!(
                "floor {} granted, below the ceiling {ceiling} this runtime held",
                lease.floor
            )
        } else {
            return Ok(());
        };
        if lease.floor >= highest {
            self.seen.insert(lease.slot, (lease.fence, lease.ceiling));
            return Ok(());
        }
        Err(evidence)
    }
}

/// Which acquisition loop an attempt belongs to.
#[derive(Debug, Clone, Copy)]
enum Ctx {
    /// The first acquisition.
    Start,
    /// The replacement of a lost lease, with its back-off between acquisitions.
    Replace { outer: u64 },
}

/// The alarm: a `STORE_REGRESSION` event, which the shell logs at error (see [`Event::level`]).
fn alarm(slot: u32, detail: String, out: &mut Vec<Action>) {
    out.push(Action::Emit(Event::StoreRegression { slot, detail }));
}

/// A `ClockSkew` event if the store's clock and this host's differ by more than half the tolerance.
fn skew(config: Config, now: Now, store_now: u64) -> Option<Action> {
    (now.wall_ms.abs_diff(store_now) > config.tolerance_ms / 2).then_some(Action::Emit(
        Event::ClockSkew {
            local_ms: now.wall_ms,
            store_ms: store_now,
        },
    ))
}

#[cfg(test)]
mod tests;
