//! The conformance target of the stores that keep each record as a JSON value at a key of the namespace (etcd,
//! ZooKeeper), on a store clock of the caller's, with raw writes through a client of the test's own. The records
//! are spelled out here rather than taken from the stores, so the tests pin the format.

use cosid::clock::{Clock, ManualClock, SystemClock};
use cosid::conformance::{self, Target};
use cosid::lease::{Namespace, NamespaceRecord, SlotRecord};
use cosid::store::LeaseStore;
use std::future::Future;
use std::sync::Arc;

/// A store that keeps JSON values at keys.
pub trait JsonStore: LeaseStore + Sized + 'static {
    /// Opens the store on `url`.
    fn open_on(url: &str, clock: Arc<dyn Clock>) -> impl Future<Output = Self> + Send;

    /// Writes `value` at `key` (relative to the namespace's key) with a client of its own, bypassing the store, as
    /// the store's own command line tool would.
    fn put_value(
        url: &str,
        namespace: &Namespace,
        key: &str,
        value: &[u8],
    ) -> impl Future<Output = ()> + Send;
}

pub struct JsonTarget<S> {
    /// The store's clock: manual for the conformance suite, `None` (the host clock) for the runtime cases.
    pub clock: Option<ManualClock>,
    pub store: Arc<S>,
    pub url: String,
}

impl<S: JsonStore> Target for JsonTarget<S> {
    fn store(&self) -> Arc<dyn LeaseStore> {
        self.store.clone()
    }

    /// A plain write of the record as JSON.
    async fn put_raw(&self, namespace: &Namespace, r: &SlotRecord) {
        let owner = r
            .owner
            .as_ref()
            .map(|o| serde_json::json!({ "key": o.key, "incarnation": o.incarnation.to_string() }));
        let value = serde_json::json!({
            "owner": owner,
            "last_owner_key": r.last_owner_key,
            "fence": r.fence,
            "expires_at": r.expires_at,
            "floor": r.floor,
            "ceiling": r.ceiling,
            "next_floor": r.next_floor,
        });
        let key = format!("slot/{}", r.slot);
        S::put_value(&self.url, namespace, &key, value.to_string().as_bytes()).await;
    }

    /// The record as versions before layouts were recorded wrote it: no `layout` field.
    async fn put_old_namespace(&self, namespace: &Namespace, r: &NamespaceRecord) {
        let value = serde_json::json!({
            "bits": r.bits,
            "tolerance_ms": r.tolerance_ms,
            "not_before": r.not_before,
        });
        S::put_value(&self.url, namespace, "ns", value.to_string().as_bytes()).await;
    }

    fn manual_clock(&self) -> Option<&ManualClock> {
        self.clock.as_ref()
    }
}

/// A target on `url` on a manual store clock.
pub async fn on_manual_clock<S: JsonStore>(url: String) -> JsonTarget<S> {
    let clock = ManualClock::new(conformance::T0);
    JsonTarget {
        store: Arc::new(S::open_on(&url, Arc::new(clock.clone())).await),
        clock: Some(clock),
        url,
    }
}

/// A target on the host clock, as a runtime's store runs.
pub async fn on_host_clock<S: JsonStore>(url: String) -> JsonTarget<S> {
    JsonTarget {
        store: Arc::new(S::open_on(&url, Arc::new(SystemClock)).await),
        clock: None,
        url,
    }
}
