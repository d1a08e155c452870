//! A store in this process's memory: for tests, single-process tools, and as the reference for the others.

use super::{Inspection, LeaseStore, StoreError};
use crate::clock::Clock;
use crate::lease::{
    protocol, AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord, SlotLease,
    SlotRecord,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

const KIND: &str = "memory";

#[derive(Debug, Default)]
struct Space {
    record: Option<NamespaceRecord>,
    slots: BTreeMap<u32, SlotRecord>,
}

/// Leases held in memory; the store clock is the given clock. Cloning shares the same leases.
///
/// ```
/// use cosid::store::{LeaseStore, MemoryStore};
/// use cosid::clock::ManualClock;
/// let store = MemoryStore::new(std::sync::Arc::new(ManualClock::new(1_000)));
/// assert_eq!(store.kind(), "memory");
/// ```
#[derive(Debug, Clone)]
pub struct MemoryStore {
    clock: Arc<dyn Clock>,
    spaces: Arc<Mutex<HashMap<String, Space>>>,
}

impl MemoryStore {
    /// An empty store on `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            spaces: Arc::default(),
        }
    }

    /// Writes a slot record as it is, without any check: for tests of corrupt or tampered records.
    pub fn put_raw(&self, namespace: &Namespace, record: SlotRecord) {
        self.lock()
            .entry(namespace.encoded().to_owned())
            .or_default()
            .slots
            .insert(record.slot, record);
    }

    /// Writes a namespace record as it is, without any check: for tests of records written by older versions.
    pub fn put_raw_namespace(&self, namespace: &Namespace, record: NamespaceRecord) {
        self.lock()
            .entry(namespace.encoded().to_owned())
            .or_default()
            .record = Some(record);
    }

    /// Removes a namespace and all its slots: for tests of a store that lost its data.
    pub fn forget(&self, namespace: &Namespace) {
        self.lock().remove(namespace.encoded());
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Space>> {
        // A panic while holding the lock cannot leave a half-applied change: each change is one insert.
        self.spaces.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn checked_slots(
    namespace: &Namespace,
    space: &Space,
    bits: u8,
) -> Result<Vec<SlotRecord>, StoreError> {
    space
        .slots
        .values()
        .map(|r| protocol::validate(KIND, namespace, r, bits).map(|()| r.clone()))
        .collect()
}

#[async_trait::async_trait]
impl LeaseStore for MemoryStore {
    fn kind(&self) -> &'static str {
        KIND
    }

    async fn acquire(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        request: &AcquireRequest,
    ) -> Result<Acquired, StoreError> {
        let now = self.clock.now_ms();
        let mut spaces = self.lock();
        let space = spaces.entry(namespace.encoded().to_owned()).or_default();
        let record = protocol::check_namespace(namespace, space.record, config)?;
        let slots = checked_slots(namespace, space, record.bits)?;
        let grant = protocol::acquire(namespace, &record, &slots, request, now)?;
        space.record = Some(record);
        if let Some(w) = grant.write {
            space.slots.insert(w.slot, w);
        }
        Ok(grant.acquired)
    }

    async fn renew(
        &self,
        lease: &SlotLease,
        ttl_ms: u64,
        tolerance_ms: u64,
    ) -> Result<SlotLease, StoreError> {
        let now = self.clock.now_ms();
        let mut spaces = self.lock();
        let space = spaces
            .entry(lease.namespace.encoded().to_owned())
            .or_default();
        let bits = protocol::held_namespace(KIND, lease, space.record)?.bits;
        let current = space.slots.get(&lease.slot);
        if let Some(r) = current {
            protocol::validate(KIND, &lease.namespace, r, bits)?;
        }
        let (record, renewed) = protocol::renew(KIND, current, lease, ttl_ms, tolerance_ms, now)?;
        space.slots.insert(record.slot, record);
        Ok(renewed)
    }

    async fn release(&self, lease: &SlotLease, last_issued: Option<u64>) -> Result<(), StoreError> {
        let mut spaces = self.lock();
        let space = spaces
            .entry(lease.namespace.encoded().to_owned())
            .or_default();
        let bits = protocol::held_namespace(KIND, lease, space.record)?.bits;
        let current = space.slots.get(&lease.slot);
        if let Some(r) = current {
            protocol::validate(KIND, &lease.namespace, r, bits)?;
        }
        let record = protocol::release(KIND, current, lease, last_issued)?;
        space.slots.insert(record.slot, record);
        Ok(())
    }

    async fn inspect(&self, namespace: &Namespace) -> Result<Inspection, StoreError> {
        let now = self.clock.now_ms();
        let spaces = self.lock();
        Ok(match spaces.get(namespace.encoded()) {
            None => Inspection {
                namespace: None,
                slots: Vec::new(),
                store_now: now,
            },
            Some(space) => Inspection {
                namespace: space.record,
                slots: space.slots.values().cloned().collect(),
                store_now: now,
            },
        })
    }

    async fn raise_not_before(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        not_before: u64,
    ) -> Result<NamespaceRecord, StoreError> {
        let mut spaces = self.lock();
        let space = spaces.entry(namespace.encoded().to_owned()).or_default();
        let record = protocol::raise_not_before(namespace, space.record, config, not_before)?;
        space.record = Some(record);
        Ok(record)
    }
}
