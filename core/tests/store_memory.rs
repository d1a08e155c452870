//! The conformance suite on the in-memory store, on a manual store clock.

use cosid::conformance;

use cosid::clock::ManualClock;
use cosid::lease::{Namespace, NamespaceRecord, SlotRecord};
use cosid::store::{LeaseStore, MemoryStore};
use std::sync::Arc;

struct Memory {
    clock: ManualClock,
    store: MemoryStore,
}

impl conformance::Target for Memory {
    fn store(&self) -> Arc<dyn LeaseStore> {
        Arc::new(self.store.clone())
    }

    async fn put_raw(&self, namespace: &Namespace, record: &SlotRecord) {
        self.store.put_raw(namespace, record.clone());
    }

    async fn put_old_namespace(&self, namespace: &Namespace, record: &NamespaceRecord) {
        self.store.put_raw_namespace(
            namespace,
            NamespaceRecord {
                layout: None,
                ..*record
            },
        );
    }

    fn manual_clock(&self) -> Option<&ManualClock> {
        Some(&self.clock)
    }
}

async fn target() -> Option<Memory> {
    let clock = ManualClock::new(conformance::T0);
    Some(Memory {
        store: MemoryStore::new(Arc::new(clock.clone())),
        clock,
    })
}

conformance::conformance_tests!(target());
