//! The conformance target of the etcd store on the cluster in `COSID_TEST_ETCD_URL`, with raw writes through a
//! client of its own. Shared by core's store test and the CLI's tests of `cosid serve` in front of etcd.
#![allow(dead_code)]

// The CLI's test of `cosid serve` loads the etcd and ZooKeeper targets, and so this module, into one crate.
#[allow(clippy::duplicate_mod)]
#[path = "json.rs"]
mod json;

use cosid::clock::Clock;
use cosid::conformance;
use cosid::lease::Namespace;
use cosid::store::{EtcdStore, StoreUrl};
use std::sync::Arc;

pub const URL_VAR: &str = "COSID_TEST_ETCD_URL";
pub const SCRIPT: &str = ".ci/services/etcd.sh";

pub type Etcd = json::JsonTarget<EtcdStore>;

impl json::JsonStore for EtcdStore {
    async fn open_on(url: &str, clock: Arc<dyn Clock>) -> EtcdStore {
        EtcdStore::open(&endpoints(url), clock).await.unwrap()
    }

    /// A plain `put`, as `etcdctl put` would do it.
    async fn put_value(url: &str, namespace: &Namespace, key: &str, value: &[u8]) {
        put_raw(url, namespace, key, value).await;
    }
}

/// A target on the cluster in `COSID_TEST_ETCD_URL` on a manual store clock, or `None` (saying why) when it is
/// unset.
pub async fn target() -> Option<Etcd> {
    let url = conformance::server_url(URL_VAR, SCRIPT)?;
    Some(json::on_manual_clock(url).await)
}

/// A target on the host clock, as a runtime's store runs.
pub async fn on_host_clock(url: String) -> Etcd {
    json::on_host_clock(url).await
}

/// Puts `value` at `key` (relative to the namespace's prefix) with a client of its own, bypassing the store.
pub async fn put_raw(url: &str, namespace: &Namespace, key: &str, value: &[u8]) {
    let mut client = etcd_client::Client::connect(endpoints(url), None)
        .await
        .unwrap();
    let key = format!("cosid/{}/{key}", namespace.encoded());
    client.put(key, value, None).await.unwrap();
}

pub fn endpoints(url: &str) -> Vec<String> {
    match StoreUrl::parse(url).unwrap() {
        StoreUrl::Etcd(hosts) => hosts,
        other => panic!("COSID_TEST_ETCD_URL is not an etcd:// URL: {other:?}"),
    }
}
