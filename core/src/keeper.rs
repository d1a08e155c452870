//! The keeper: one background task per runtime that renews the lease, replaces it when it is lost, and releases
//! it at shutdown. It is the only writer of the generator's window.

//!
//! Its decisions are the state machine in [`machine`]; this module is the shell that carries out its actions
//! (store calls, timers, the generator's window, events) and feeds it what happens.

pub mod machine;

use crate::clock::Clock;
use crate::event::Event;
use crate::generator::{Generator, Window};
use crate::lease::{AcquireRequest, Acquired, Namespace, NamespaceConfig, Owner, SlotLease};
use crate::store::{LeaseStore, StoreError};
use machine::{Action, Input, Level, Machine, Now};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// What the runtime is doing, as [`Status`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum State {
    /// Issuing, with a current lease.
    Active,
    /// Issuing, but the last renewal failed; retrying.
    Renewing,
    /// The lease was lost; acquiring a new slot. Id calls fail with `SlotLost`.
    Reacquiring,
    /// Shut down.
    Closed,
}

/// A listener for [`Event`]s, called on the keeper's thread.
pub type Listener = Arc<dyn Fn(&Event) + Send + Sync>;

/// A runtime's lease and state at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The namespace.
    pub namespace: String,
    /// The store kind (`sqlite`, `redis`, ...).
    pub store: &'static str,
    /// This runtime's owner key and incarnation.
    pub owner: Owner,
    /// The slot.
    pub slot: u32,
    /// The lease's fence.
    pub fence: u64,
    /// Window floor (excluded, store ms).
    pub floor_ms: u64,
    /// Window ceiling (included, store ms).
    pub ceiling_ms: u64,
    /// Lease expiry (store ms).
    pub expires_at_ms: u64,
    /// The store's clock at the last reply (ms).
    pub store_now_ms: u64,
    /// The last millisecond used by an id of this window, if any.
    pub last_issued_ms: Option<u64>,
    /// What the runtime is doing.
    pub state: State,
}

/// The state the keeper shares with the runtime's callers. The hot path touches only `generator`.
pub(crate) struct Shared {
    pub(crate) generator: Generator,
    lease: Mutex<(SlotLease, State)>,
    listeners: Mutex<Vec<Listener>>,
    pub(crate) store_kind: &'static str,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("generator", &self.generator)
            .field("lease", &self.lease)
            .field("listeners", &lock(&self.listeners).len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // State behind these locks is replaced whole, never left half-written: a poisoned lock is still consistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub(crate) fn new(generator: Generator, lease: SlotLease, store_kind: &'static str) -> Self {
        Self {
            generator,
            lease: Mutex::new((lease, State::Active)),
            listeners: Mutex::default(),
            store_kind,
        }
    }

    pub(crate) fn subscribe(&self, listener: Listener) {
        lock(&self.listeners).push(listener);
    }

    pub(crate) fn emit(&self, event: Event) {
        // At the event's level, with its fields (see `Event::level`).
        event.log();
        let listeners = lock(&self.listeners).clone();
        for l in listeners {
            // A listener that panics must not take the keeper down with it.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l(&event)));
        }
    }

    pub(crate) fn status(&self) -> Status {
        let (lease, state) = lock(&self.lease).clone();
        let snap = self.generator.snapshot();
        Status {
            namespace: lease.namespace.to_string(),
            store: self.store_kind,
            owner: lease.owner.clone(),
            slot: lease.slot,
            fence: lease.fence,
            floor_ms: lease.floor,
            ceiling_ms: lease.ceiling,
            expires_at_ms: lease.expires_at,
            store_now_ms: lease.store_now,
            last_issued_ms: if snap.slot == lease.slot {
                snap.last_issued_ms
            } else {
                None
            },
            state,
        }
    }

    pub(crate) fn set(&self, lease: &SlotLease, state: State) {
        *lock(&self.lease) = (lease.clone(), state);
    }

    pub(crate) fn set_state(&self, state: State) {
        lock(&self.lease).1 = state;
    }

    pub(crate) fn current_lease(&self) -> SlotLease {
        lock(&self.lease).0.clone()
    }
}

/// Everything the keeper needs to talk to the store.
#[derive(Debug, Clone)]
pub(crate) struct Keeper {
    pub(crate) store: Arc<dyn LeaseStore>,
    pub(crate) namespace: Namespace,
    pub(crate) ns_config: NamespaceConfig,
    pub(crate) request: AcquireRequest,
    pub(crate) clock: Arc<dyn Clock>,
}

/// How the shell's run of the machine ended.
enum Ended {
    Started(Result<Acquired, StoreError>),
    Finished(Option<u64>),
}

impl Keeper {
    fn config(&self) -> machine::Config {
        machine::Config {
            ttl_ms: self.request.ttl_ms,
            tolerance_ms: self.ns_config.tolerance_ms,
            // The incarnation is random (UUID v4): each runtime's jitter its own. Never 0 (no jitter).
            jitter_seed: (self.request.owner.incarnation.as_u64_pair().0) | 1,
        }
    }

    fn now(&self, origin: Instant) -> Now {
        Now {
            mono_ms: u64::try_from(origin.elapsed().as_millis()).unwrap_or(u64::MAX),
            wall_ms: self.clock.now_ms(),
        }
    }

    /// Acquires a slot, retrying exhaustion and an unreachable store until `timeout`.
    pub(crate) async fn acquire(&self, timeout: Duration) -> Result<Acquired, StoreError> {
        let origin = Instant::now();
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let (machine, actions) = Machine::start(self.config(), self.now(origin), timeout_ms);
        match self.drive(machine, actions, None, None, origin).await {
            Ended::Started(r) => r,
            Ended::Finished(_) => unreachable!("the first acquisition ends with Started"),
        }
    }

    /// Binds the generator to a granted lease and tells the listeners.
    pub(crate) fn install(&self, shared: &Shared, acquired: &Acquired) {
        let now = Now {
            mono_ms: 0,
            wall_ms: self.clock.now_ms(),
        };
        for action in Machine::install(self.config(), now, acquired) {
            self.apply(Some(shared), action);
        }
    }

    /// Renews until `stop` says so; then seals the generator and releases the lease with its last timestamp,
    /// which it returns (`None` if the lease was lost, or nothing was issued).
    pub(crate) async fn run(
        self,
        shared: Arc<Shared>,
        mut stop: watch::Receiver<bool>,
    ) -> Option<u64> {
        let origin = Instant::now();
        let (machine, actions) =
            Machine::running(self.config(), self.now(origin), shared.current_lease());
        match self
            .drive(machine, actions, Some(&shared), Some(&mut stop), origin)
            .await
        {
            Ended::Finished(last) => last,
            Ended::Started(_) => unreachable!("a running machine ends with Finished"),
        }
    }

    /// Carries out the machine's actions and feeds it their outcomes until it is done.
    async fn drive(
        &self,
        mut machine: Machine,
        mut actions: Vec<Action>,
        shared: Option<&Shared>,
        mut stop: Option<&mut watch::Receiver<bool>>,
        origin: Instant,
    ) -> Ended {
        loop {
            let mut pending = None;
            for action in actions {
                match action {
                    Action::Started(r) => return Ended::Started(r),
                    Action::Finished(last) => return Ended::Finished(last),
                    Action::Seal => {
                        let generator = &shared.expect("a running keeper").generator;
                        let was_closed = generator.is_closed();
                        let last = generator.seal();
                        pending = Some(Pending::Ready(Input::Sealed { was_closed, last }));
                    }
                    Action::Acquire
                    | Action::Renew { .. }
                    | Action::Release { .. }
                    | Action::Inspect { .. }
                    | Action::RaiseNotBefore { .. }
                    | Action::SleepUntil(_) => pending = Some(Pending::Call(action)),
                    other => self.apply(shared, other),
                }
            }
            let Some(pending) = pending else {
                unreachable!("the machine always waits for something until it is done")
            };
            let input = match pending {
                Pending::Ready(input) => input,
                Pending::Call(call) => {
                    let interruptible = machine.interruptible();
                    match stop.as_deref_mut() {
                        Some(rx) if interruptible => {
                            tokio::select! {
                                input = self.call(call, origin) => input,
                                _ = rx.changed() => {
                                    // Delivered once: a dropped sender would answer `changed` at once for ever.
                                    stop = None;
                                    Input::Shutdown
                                }
                            }
                        }
                        _ => self.call(call, origin).await,
                    }
                }
            };
            actions = machine.handle(self.now(origin), input);
        }
    }

    /// Carries out an action that needs no answer.
    fn apply(&self, shared: Option<&Shared>, action: Action) {
        let Some(shared) = shared else {
            debug_assert!(false, "{action:?} before the keeper runs");
            return;
        };
        match action {
            Action::Bind(lease) => shared.generator.bind(Window {
                slot: lease.slot,
                floor_ms: lease.floor,
                ceiling_ms: lease.ceiling,
            }),
            Action::Extend(lease) => shared.generator.extend(lease.ceiling),
            Action::Invalidate => {
                shared.generator.invalidate();
            }
            Action::SetLease(lease, state) => shared.set(&lease, state),
            Action::SetState(state) => shared.set_state(state),
            Action::Emit(event) => shared.emit(event),
            Action::Log(Level::Warn, message) => tracing::warn!("{message}"),
            Action::Log(Level::Error, message) => tracing::error!("{message}"),
            other => unreachable!("{other:?} is not carried out here"),
        }
    }

    /// Makes one store call or sleep and returns its outcome as the machine's input.
    async fn call(&self, call: Action, origin: Instant) -> Input {
        match call {
            Action::Acquire => Input::Acquired(
                self.store
                    .acquire(&self.namespace, &self.ns_config, &self.request)
                    .await,
            ),
            Action::Renew { lease, timeout_ms } => Input::Renewed(
                self.bounded(
                    timeout_ms,
                    "a renewal",
                    self.store
                        .renew(&lease, self.request.ttl_ms, self.ns_config.tolerance_ms),
                )
                .await,
            ),
            Action::Release {
                lease,
                last,
                timeout_ms,
            } => Input::Released(
                self.bounded(timeout_ms, "a release", self.store.release(&lease, last))
                    .await,
            ),
            Action::Inspect { timeout_ms } => Input::Inspected(
                self.bounded(timeout_ms, "the recovery", async {
                    Ok(self.store.inspect(&self.namespace).await?.store_now)
                })
                .await,
            ),
            Action::RaiseNotBefore { bound, timeout_ms } => Input::RaisedNotBefore(
                self.bounded(timeout_ms, "the recovery", async {
                    self.store
                        .raise_not_before(&self.namespace, &self.ns_config, bound)
                        .await
                        .map(|_| ())
                })
                .await,
            ),
            Action::SleepUntil(t) => {
                tokio::time::sleep_until(origin + Duration::from_millis(t)).await;
                Input::TimerFired
            }
            other => unreachable!("{other:?} is not a call"),
        }
    }

    /// Bounds a store call: no answer within `timeout_ms` is an `Unavailable` error.
    async fn bounded<T>(
        &self,
        timeout_ms: u64,
        what: &str,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        tokio::time::timeout(Duration::from_millis(timeout_ms), call)
            .await
            .unwrap_or_else(|_| {
                Err(StoreError::Unavailable {
                    store: self.store.kind(),
                    source: format!("no answer to {what} within {timeout_ms} ms").into(),
                })
            })
    }
}

/// What the shell waits for next.
enum Pending {
    Ready(Input),
    Call(Action),
}
