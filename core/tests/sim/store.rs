//! The simulated store: slot records in memory, a clock of its own, and the rules of `cosid::lease::protocol`
//! applied in one atomic step per request, exactly as the real stores do. A deliberately broken variant of the
//! rules proves that the checker catches a protocol that is wrong.

use cosid::lease::{
    protocol, AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord, SlotLease,
    SlotRecord,
};
use cosid::store::StoreError;
use std::collections::BTreeMap;

const KIND: &str = "sim";

/// Which rules the store applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `cosid::lease::protocol`, with every record validated before use.
    Real,
    /// Broken on purpose: an acquisition sets `next_floor = expires_at` instead of the ceiling, so the next
    /// holder's floor lies below the tolerance the current holder may still issue in.
    FloorFromExpiry,
    /// Broken on purpose: a release is applied whatever the fence and incarnation, so a late release from an old
    /// holder lowers the floor under the current one.
    ReleaseIgnoresFence,
}

/// A store's answer, as it travels back over the network (store errors are not `Clone`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    Exhausted {
        earliest_expiry: u64,
        store_now: u64,
    },
    Lost(String),
    Corrupt(String),
    Regression(String),
    NotBeforeLowered {
        stored: u64,
        requested: u64,
    },
    Other(String),
}

impl Failure {
    /// The store error this answer stands for, as the keeper's machine is fed it.
    pub fn into_error(self, slot: u32) -> StoreError {
        match self {
            Failure::Exhausted {
                earliest_expiry,
                store_now,
            } => StoreError::Exhausted {
                namespace: "sim".into(),
                slots: 2,
                earliest_expiry,
                store_now,
            },
            Failure::Lost(reason) => StoreError::LeaseLost {
                namespace: "sim".into(),
                slot,
                reason,
            },
            Failure::Corrupt(detail) => StoreError::Corrupt {
                store: KIND,
                what: format!("slot {slot}"),
                detail,
            },
            Failure::Regression(detail) => StoreError::Regression {
                store: KIND,
                what: format!("slot {slot}"),
                detail,
            },
            Failure::NotBeforeLowered { stored, requested } => StoreError::NotBeforeLowered {
                namespace: "sim".into(),
                stored,
                requested,
            },
            Failure::Other(detail) => StoreError::Unavailable {
                store: KIND,
                source: detail.into(),
            },
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Exhausted {
                earliest_expiry,
                store_now,
                ..
            } => Failure::Exhausted {
                earliest_expiry,
                store_now,
            },
            StoreError::LeaseLost { reason, .. } => Failure::Lost(reason),
            StoreError::Corrupt { detail, .. } => Failure::Corrupt(detail),
            StoreError::Regression { detail, .. } => Failure::Regression(detail),
            StoreError::NotBeforeLowered {
                stored, requested, ..
            } => Failure::NotBeforeLowered { stored, requested },
            other => Failure::Other(other.to_string()),
        }
    }
}

/// What one applied request changed: the record before and after.
#[derive(Debug, Clone)]
pub struct Change {
    pub before: Option<SlotRecord>,
    pub after: SlotRecord,
}

#[derive(Debug)]
pub struct SimStore {
    pub variant: Variant,
    /// Store clock = global time + offset.
    pub offset: i64,
    namespace: Namespace,
    config: NamespaceConfig,
    record: Option<NamespaceRecord>,
    pub slots: BTreeMap<u32, SlotRecord>,
    ttl_ms: u64,
}

impl SimStore {
    pub fn new(
        variant: Variant,
        namespace: Namespace,
        config: NamespaceConfig,
        ttl_ms: u64,
    ) -> Self {
        Self {
            variant,
            offset: 0,
            namespace,
            config,
            record: None,
            slots: BTreeMap::new(),
            ttl_ms,
        }
    }

    pub fn now(&self, global: u64) -> u64 {
        global.saturating_add_signed(self.offset)
    }

    fn validated(&self, record: &SlotRecord) -> Result<(), StoreError> {
        if self.variant == Variant::Real {
            protocol::validate(KIND, &self.namespace, record, self.config.bits)?;
        }
        Ok(())
    }

    pub fn acquire(
        &mut self,
        request: &AcquireRequest,
        now: u64,
    ) -> Result<(Acquired, Option<Change>), Failure> {
        let ns = protocol::check_namespace(&self.namespace, self.record, &self.config)?;
        let slots: Vec<SlotRecord> = self.slots.values().cloned().collect();
        for r in &slots {
            self.validated(r)?;
        }
        let mut grant = protocol::acquire(&self.namespace, &ns, &slots, request, now)?;
        self.record = Some(ns);
        if self.variant == Variant::FloorFromExpiry {
            if let Some(w) = grant.write.as_mut() {
                w.next_floor = w.expires_at.max(w.floor);
            }
        }
        let change = grant.write.map(|after| {
            let before = self.slots.insert(after.slot, after.clone());
            Change { before, after }
        });
        Ok((grant.acquired, change))
    }

    pub fn renew(&mut self, lease: &SlotLease, now: u64) -> Result<(SlotLease, Change), Failure> {
        let current = self.slots.get(&lease.slot).cloned();
        if let Some(r) = &current {
            self.validated(r)?;
        }
        let (after, renewed) = protocol::renew(
            KIND,
            current.as_ref(),
            lease,
            self.ttl_ms,
            self.config.tolerance_ms,
            now,
        )?;
        self.slots.insert(after.slot, after.clone());
        Ok((
            renewed,
            Change {
                before: current,
                after,
            },
        ))
    }

    pub fn release(
        &mut self,
        lease: &SlotLease,
        last_issued: Option<u64>,
    ) -> Result<Change, Failure> {
        let current = self.slots.get(&lease.slot).cloned();
        if let Some(r) = &current {
            self.validated(r)?;
        }
        let after = match (self.variant, &current) {
            (Variant::ReleaseIgnoresFence, Some(r)) if r.owner.is_some() => {
                // Pretend the lease matches: the bug under test.
                let as_if_current = SlotLease {
                    owner: r.owner.clone().unwrap(),
                    fence: r.fence,
                    ..lease.clone()
                };
                protocol::release(KIND, current.as_ref(), &as_if_current, last_issued)?
            }
            _ => protocol::release(KIND, current.as_ref(), lease, last_issued)?,
        };
        self.slots.insert(after.slot, after.clone());
        Ok(Change {
            before: current,
            after,
        })
    }

    /// Raises the namespace's `not_before`, as a keeper recovering from lost writes asks (never lowers it).
    pub fn raise_not_before(&mut self, bound: u64) -> Result<(), Failure> {
        let mut ns = protocol::check_namespace(&self.namespace, self.record, &self.config)?;
        if ns.not_before > bound {
            return Err(Failure::NotBeforeLowered {
                stored: ns.not_before,
                requested: bound,
            });
        }
        ns.not_before = bound;
        self.record = Some(ns);
        Ok(())
    }

    /// Whether `lease` is still the live holder of its slot at store time `now`.
    pub fn is_live(&self, lease: &SlotLease, now: u64) -> bool {
        self.slots.get(&lease.slot).is_some_and(|r| {
            r.is_owned_by(&lease.owner) && r.fence == lease.fence && r.expires_at >= now
        })
    }
}
