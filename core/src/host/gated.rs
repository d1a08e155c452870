//! A store whose every call holds the fork gate ([`super::fork`]), so that `fork()` never copies a store call in
//! flight. A wrapper, so neither the keeper nor any store needs to know.

use super::fork;
use crate::lease::{
    AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord, SlotLease,
};
use crate::store::{Finding, Inspection, LeaseStore, StoreError};
use std::sync::Arc;

/// `inner`, with the fork gate held around each call.
#[derive(Debug)]
pub struct GatedStore {
    inner: Arc<dyn LeaseStore>,
    /// A store in a file of this host (SQLite): a fork waits longer for its calls (see [`fork::prepare`]).
    file: bool,
}

impl GatedStore {
    /// Wraps `inner`.
    pub fn wrap(inner: Arc<dyn LeaseStore>) -> Arc<dyn LeaseStore> {
        let file = inner.kind() == "sqlite";
        Arc::new(GatedStore { inner, file })
    }

    fn enter(&self) -> fork::Pass {
        if self.file {
            fork::enter_file()
        } else {
            fork::enter()
        }
    }
}

#[async_trait::async_trait]
impl LeaseStore for GatedStore {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    async fn init(&self) -> Result<(), StoreError> {
        let _pass = self.enter();
        self.inner.init().await
    }

    async fn durability(&self) -> Result<Vec<Finding>, StoreError> {
        let _pass = self.enter();
        self.inner.durability().await
    }

    async fn acquire(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        request: &AcquireRequest,
    ) -> Result<Acquired, StoreError> {
        let _pass = self.enter();
        self.inner.acquire(namespace, config, request).await
    }

    async fn renew(
        &self,
        lease: &SlotLease,
        ttl_ms: u64,
        tolerance_ms: u64,
    ) -> Result<SlotLease, StoreError> {
        let _pass = self.enter();
        self.inner.renew(lease, ttl_ms, tolerance_ms).await
    }

    async fn release(&self, lease: &SlotLease, last_issued: Option<u64>) -> Result<(), StoreError> {
        let _pass = self.enter();
        self.inner.release(lease, last_issued).await
    }

    async fn inspect(&self, namespace: &Namespace) -> Result<Inspection, StoreError> {
        let _pass = self.enter();
        self.inner.inspect(namespace).await
    }

    async fn raise_not_before(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        not_before: u64,
    ) -> Result<NamespaceRecord, StoreError> {
        let _pass = self.enter();
        self.inner
            .raise_not_before(namespace, config, not_before)
            .await
    }
}
