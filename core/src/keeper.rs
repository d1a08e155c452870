//! The keeper: one background task per runtime that renews the lease, replaces it when it is lost, and releases
//! it at shutdown. It is the only writer of the generator's window.

use crate::clock::Clock;
use crate::event::Event;
use crate::generator::{Generator, Window};
use crate::lease::{AcquireRequest, Acquired, Namespace, NamespaceConfig, Owner, SlotLease};
use crate::store::{LeaseStore, StoreError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::watch;

/// The least and first retry delay after a failed store call.
const MIN_BACKOFF: Duration = Duration::from_millis(100);

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
    /// For every slot this runtime held: the highest fence and ceiling the store ever granted it. A later grant
    /// of the same slot below them means the store lost writes.
    seen: Mutex<HashMap<u32, (u64, u64)>>,
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
            seen: Mutex::default(),
            listeners: Mutex::default(),
            store_kind,
        }
    }

    pub(crate) fn subscribe(&self, listener: Listener) {
        lock(&self.listeners).push(listener);
    }

    pub(crate) fn emit(&self, event: Event) {
        tracing::debug!(%event, "cosid event");
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
        let mut seen = lock(&self.seen);
        let entry = seen
            .entry(lease.slot)
            .or_insert((lease.fence, lease.ceiling));
        *entry = (entry.0.max(lease.fence), entry.1.max(lease.ceiling));
        drop(seen);
        *lock(&self.lease) = (lease.clone(), state);
    }

    /// The highest ceiling the store ever granted this runtime, on any slot.
    fn highest_ceiling(&self) -> u64 {
        lock(&self.seen)
            .values()
            .map(|&(_, c)| c)
            .max()
            .unwrap_or(0)
    }

    /// Whether `lease`, a new grant, may be used; if not, what went backwards.
    ///
    /// A grant below what this runtime saw of its slot before (a fence not above the one it held, a floor below
    /// its ceiling) is evidence that the store lost writes. A grant whose floor is at or above every ceiling this
    /// runtime was ever granted is safe for all it issued whatever its fence: that is what a recovery (a raised
    /// `not_before`) produces, and taking it ends the recovery in one acquisition. Its slot's history starts over
    /// from it, so a later loss is measured against the new grant.
    fn check_grant(&self, lease: &SlotLease) -> Result<(), String> {
        let highest = self.highest_ceiling();
        let mut seen = lock(&self.seen);
        let Some(&(fence, ceiling)) = seen.get(&lease.slot) else {
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
            seen.insert(lease.slot, (lease.fence, lease.ceiling));
            return Ok(());
        }
        Err(evidence)
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

impl Keeper {
    fn ttl(&self) -> Duration {
        Duration::from_millis(self.request.ttl_ms)
    }

    /// Acquires a slot, retrying exhaustion and an unreachable store until `timeout`.
    pub(crate) async fn acquire(&self, timeout: Duration) -> Result<Acquired, StoreError> {
        // Checked: a deadline past `Instant`'s range is no deadline (the settings' ranges keep it far from that).
        let deadline = tokio::time::Instant::now().checked_add(timeout);
        let mut backoff = MIN_BACKOFF;
        loop {
            let err = match self
                .store
                .acquire(&self.namespace, &self.ns_config, &self.request)
                .await
            {
                Ok(a) => return Ok(a),
                Err(e) => e,
            };
            // Not `clamp`: below a 300 ms ttl, ttl/3 is under MIN_BACKOFF and `clamp` would panic.
            let wait = match &err {
                StoreError::Exhausted {
                    earliest_expiry,
                    store_now,
                    ..
                } => Duration::from_millis(earliest_expiry.saturating_sub(*store_now) + 1)
                    .min(self.ttl() / 3)
                    .max(MIN_BACKOFF),
                e if e.is_retryable() => backoff,
                _ => return Err(err),
            };
            backoff = (backoff * 2).min(self.ttl() / 6).max(MIN_BACKOFF);
            if deadline.is_none_or(|d| {
                tokio::time::Instant::now()
                    .checked_add(wait)
                    .is_none_or(|t| t > d)
            }) {
                return Err(err);
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// Binds the generator to a granted lease and tells the listeners.
    pub(crate) fn install(&self, shared: &Shared, acquired: &Acquired) {
        let lease = &acquired.lease;
        shared.generator.bind(Window {
            slot: lease.slot,
            floor_ms: lease.floor,
            ceiling_ms: lease.ceiling,
        });
        shared.set(lease, State::Active);
        if let Some(other_slot) = acquired.duplicate_owner_key {
            shared.emit(Event::DuplicateOwnerKey {
                key: lease.owner.key.clone(),
                other_slot,
            });
        }
        shared.emit(Event::Acquired {
            slot: lease.slot,
            fence: lease.fence,
            floor_ms: lease.floor,
            ceiling_ms: lease.ceiling,
            expires_at_ms: lease.expires_at,
        });
        self.check_skew(shared, lease.store_now);
    }

    fn check_skew(&self, shared: &Shared, store_now: u64) {
        let local = self.clock.now_ms();
        if local.abs_diff(store_now) > self.ns_config.tolerance_ms / 2 {
            shared.emit(Event::ClockSkew {
                local_ms: local,
                store_ms: store_now,
            });
        }
    }

    /// Renews until `stop` says so; then seals the generator and releases the lease with its last timestamp,
    /// which it returns (`None` if the lease was lost, or nothing was issued).
    pub(crate) async fn run(
        self,
        shared: Arc<Shared>,
        mut stop: watch::Receiver<bool>,
    ) -> Option<u64> {
        let period = self.ttl() / 3;
        let mut wait = period;
        let mut backoff = MIN_BACKOFF;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.changed() => break,
            }
            let lease = shared.current_lease();
            // A store that hangs must neither stall shutdown nor outlast the lease: bound each renewal.
            let renewal = tokio::time::timeout(
                period,
                self.store
                    .renew(&lease, self.request.ttl_ms, self.ns_config.tolerance_ms),
            );
            let outcome = tokio::select! {
                r = renewal => r.unwrap_or_else(|_| Err(StoreError::Unavailable {
                    store: self.store.kind(),
                    source: format!("no answer to a renewal within {} ms", period.as_millis()).into(),
                })),
                _ = stop.changed() => break,
            };
            match outcome {
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
                    // Stop issuing first; then give the damaged lease back with the ceiling this runtime knows
                    // was used, so its slot's next_floor is above it again and it is not returned to us as ours.
                    shared.generator.invalidate();
                    self.give_back(&renewed, lease.ceiling.max(renewed.ceiling))
                        .await;
                    if !self
                        .lost_writes(&shared, lease.slot, detail, &mut stop)
                        .await
                    {
                        return None;
                    }
                    wait = period;
                    backoff = MIN_BACKOFF;
                }
                Err(e @ StoreError::Regression { .. }) => {
                    if !self
                        .lost_writes(&shared, lease.slot, e.to_string(), &mut stop)
                        .await
                    {
                        return None;
                    }
                    wait = period;
                    backoff = MIN_BACKOFF;
                }
                Ok(renewed) => {
                    shared.generator.extend(renewed.ceiling);
                    shared.set(&renewed, State::Active);
                    shared.emit(Event::Renewed {
                        slot: renewed.slot,
                        ceiling_ms: renewed.ceiling,
                        expires_at_ms: renewed.expires_at,
                    });
                    self.check_skew(&shared, renewed.store_now);
                    wait = period;
                    backoff = MIN_BACKOFF;
                }
                Err(e @ (StoreError::LeaseLost { .. } | StoreError::Corrupt { .. })) => {
                    // There is no switch to keep issuing on a lost lease: close first, then look for a new one.
                    shared.generator.invalidate();
                    shared.set_state(State::Reacquiring);
                    shared.emit(Event::SlotLost {
                        slot: lease.slot,
                        reason: e.to_string(),
                    });
                    if !self.reacquire(&shared, &mut stop).await {
                        return None;
                    }
                    wait = period;
                    backoff = MIN_BACKOFF;
                }
                Err(e) => {
                    shared.set_state(State::Renewing);
                    shared.emit(Event::RenewFailed {
                        slot: lease.slot,
                        error: e.to_string(),
                        retry_in_ms: backoff.as_millis() as u64,
                    });
                    wait = backoff;
                    backoff = (backoff * 2).min(self.ttl() / 6).max(MIN_BACKOFF);
                }
            }
        }
        self.release(&shared).await
    }

    /// The store lost writes under this runtime's lease: stops issuing at once, raises the alarm, makes the
    /// namespace safe to grant from again, then acquires a new slot. Returns false on shutdown.
    async fn lost_writes(
        &self,
        shared: &Shared,
        slot: u32,
        detail: String,
        stop: &mut watch::Receiver<bool>,
    ) -> bool {
        shared.generator.invalidate();
        shared.set_state(State::Reacquiring);
        self.alarm(shared, slot, detail);
        self.recover(shared, stop).await && self.reacquire(shared, stop).await
    }

    /// Releases a lease this runtime will not issue on, handing over `ceiling` as its last timestamp (release
    /// caps it at the lease's ceiling). Bounded; a failure only leaves the slot to expire.
    async fn give_back(&self, lease: &SlotLease, ceiling: u64) {
        match tokio::time::timeout(self.ttl(), self.store.release(lease, Some(ceiling))).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %e, slot = lease.slot, "cosid: could not give back a refused slot")
            }
            Err(_) => tracing::warn!(
                slot = lease.slot,
                "cosid: giving back a refused slot timed out"
            ),
        }
    }

    fn alarm(&self, shared: &Shared, slot: u32, detail: String) {
        tracing::error!(slot, %detail, "cosid: the store lost writes; not issuing until the namespace is safe again");
        shared.emit(Event::StoreRegression { slot, detail });
    }

    /// After lost writes, raises the namespace's `not_before` past every window that could have been granted
    /// before the loss, so that no grant made from the damaged records can reach back into one: the store's time
    /// plus ttl and tolerance bounds every window granted or renewed until now (by runtimes with this ttl), and
    /// the highest ceiling this runtime was granted bounds its own. Every grant's floor is at least `not_before`,
    /// whether its slot record survived, was recreated, or never existed. Retries until done; false on shutdown.
    async fn recover(&self, shared: &Shared, stop: &mut watch::Receiver<bool>) -> bool {
        let mut backoff = MIN_BACKOFF;
        loop {
            let attempt = async {
                let inspection = self.store.inspect(&self.namespace).await?;
                let bound = inspection
                    .store_now
                    .saturating_add(self.request.ttl_ms)
                    .saturating_add(self.ns_config.tolerance_ms)
                    .max(shared.highest_ceiling());
                match self
                    .store
                    .raise_not_before(&self.namespace, &self.ns_config, bound)
                    .await
                {
                    // Already higher: someone recovered first, which is as good.
                    Ok(_) | Err(StoreError::NotBeforeLowered { .. }) => Ok(bound),
                    Err(e) => Err(e),
                }
            };
            let bounded = tokio::time::timeout(self.ttl(), attempt);
            let result = tokio::select! {
                r = bounded => r.unwrap_or_else(|_| Err(StoreError::Unavailable {
                    store: self.store.kind(),
                    source: format!("no answer to the recovery within {} ms", self.ttl().as_millis()).into(),
                })),
                _ = stop.changed() => return self.closed(shared),
            };
            match result {
                Ok(bound) => {
                    tracing::warn!(
                        not_before = bound,
                        "cosid: raised the namespace's not_before after lost writes"
                    );
                    return true;
                }
                Err(e) => shared.emit(Event::RenewFailed {
                    slot: shared.current_lease().slot,
                    error: format!("raising not_before after lost writes: {e}"),
                    retry_in_ms: backoff.as_millis() as u64,
                }),
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = stop.changed() => return self.closed(shared),
            }
            backoff = (backoff * 2).min(self.ttl() / 6).max(MIN_BACKOFF);
        }
    }

    fn closed(&self, shared: &Shared) -> bool {
        shared.generator.seal();
        shared.set_state(State::Closed);
        false
    }

    /// Acquires a new slot after a loss, until it succeeds or shutdown is asked. Returns false on shutdown.
    async fn reacquire(&self, shared: &Shared, stop: &mut watch::Receiver<bool>) -> bool {
        let mut backoff = MIN_BACKOFF;
        loop {
            tokio::select! {
                r = self.acquire(self.ttl()) => match r {
                    Ok(acquired) => match shared.check_grant(&acquired.lease) {
                        Ok(()) => {
                            self.install(shared, &acquired);
                            return true;
                        }
                        Err(detail) => {
                            // Never issue on it; give it back with the ceiling this runtime knows was used, which
                            // lifts the slot's next_floor above every timestamp issued on it. Then recover.
                            let lease = &acquired.lease;
                            self.alarm(shared, lease.slot, detail);
                            self.give_back(lease, shared.highest_ceiling()).await;
                            // After the recovery, the next grant's floor is past every ceiling seen: it is taken.
                            if !self.recover(shared, stop).await {
                                return false;
                            }
                        }
                    },
                    Err(e @ StoreError::Regression { .. }) => {
                        self.alarm(shared, shared.current_lease().slot, e.to_string());
                        if !self.recover(shared, stop).await {
                            return false;
                        }
                    }
                    Err(e) => {
                        shared.emit(Event::RenewFailed {
                            slot: shared.current_lease().slot,
                            error: e.to_string(),
                            retry_in_ms: backoff.as_millis() as u64,
                        });
                    }
                },
                _ = stop.changed() => return self.closed(shared),
            }
            // Every way round the loop backs off, so a store that keeps answering the same cannot spin the keeper.
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = stop.changed() => return self.closed(shared),
            }
            backoff = (backoff * 2).min(self.ttl() / 6).max(MIN_BACKOFF);
        }
    }

    /// Seals the generator, then releases the lease with the exact last timestamp, which it returns.
    async fn release(&self, shared: &Shared) -> Option<u64> {
        let was_closed = shared.generator.is_closed();
        let last = shared.generator.seal();
        let lease = shared.current_lease();
        shared.set_state(State::Closed);
        if was_closed {
            // Lost (or never bound): the lease is not ours to release.
            return None;
        }
        match tokio::time::timeout(self.ttl(), self.store.release(&lease, last)).await {
            Ok(Ok(())) => shared.emit(Event::Released {
                slot: lease.slot,
                last_issued_ms: last,
            }),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, slot = lease.slot, "cosid: release failed; the slot frees itself at expiry")
            }
            Err(_) => tracing::warn!(
                slot = lease.slot,
                "cosid: release timed out; the slot frees itself at expiry"
            ),
        }
        last
    }
}
