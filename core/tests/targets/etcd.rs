//! The conformance target of the etcd store on the cluster in `COSID_TEST_ETCD_URL`, with raw writes through a
//! client of its own. Shared by core's store test and the CLI's tests of `cosid serve` in front of etcd.
#![allow(dead_code)]

// The CLI's test of `cosid serve` loads the etcd and ZooKeeper targets, and so this module, into one crate.
#[allow(clippy::duplicate_mod)]
#[path = "json.rs"]
mod json;

use cosid::clock::Clock;
use cosid::conformance;
use cosid::lease::{Namespace, SlotRecord};
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

/// Puts `value` at `key` (relative to the namespace's prefix) with a client of its own, bypassing the store, and
/// deletes the namespace's acquire index, as docs/stores.md says to after editing records by hand.
pub async fn put_raw(url: &str, namespace: &Namespace, key: &str, value: &[u8]) {
    let mut client = client(url).await;
    let key = format!("cosid/{}/{key}", namespace.encoded());
    client.put(key, value, None).await.unwrap();
    forget_index(url, namespace).await;
}

pub async fn client(url: &str) -> etcd_client::Client {
    etcd_client::Client::connect(endpoints(url), None)
        .await
        .unwrap()
}

/// Deletes the namespace's acquire index (`i/`): its next acquire builds it again from every record.
pub async fn forget_index(url: &str, namespace: &Namespace) {
    let root = format!("cosid/{}/i/", namespace.encoded());
    client(url)
        .await
        .delete(root, Some(etcd_client::DeleteOptions::new().with_prefix()))
        .await
        .unwrap();
}

/// Writes `rows` and an acquire index that covers them, as a client of this version that had never swept would
/// have left it: every record with an owner under `held` (expired or not), the others under `free`, and `hw` =
/// `unused`. The keys are spelled out here, so the test pins the index's format.
pub async fn put_indexed(
    url: &str,
    namespace: &Namespace,
    rows: &[SlotRecord],
    unused: Option<u32>,
) {
    let mut client = client(url).await;
    let prefix = format!("cosid/{}/", namespace.encoded());
    let hex = |k: &str| k.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    let mut puts: Vec<(String, String)> = vec![
        ("i/v".into(), "1".into()),
        (
            "i/hw".into(),
            unused.map_or("none".into(), |s| s.to_string()),
        ),
    ];
    for r in rows {
        let value = serde_json::json!({
            "owner": r.owner.as_ref().map(|o| serde_json::json!({
                "key": o.key, "incarnation": o.incarnation.to_string(),
            })),
            "last_owner_key": r.last_owner_key,
            "fence": r.fence,
            "expires_at": r.expires_at,
            "floor": r.floor,
            "ceiling": r.ceiling,
            "next_floor": r.next_floor,
        });
        puts.push((format!("slot/{}", r.slot), value.to_string()));
        match &r.owner {
            Some(o) => {
                puts.push((format!("i/o/{}/{:010}", hex(&o.key), r.slot), String::new()));
                puts.push((
                    format!("i/held/{:020}/{:010}", r.expires_at, r.slot),
                    String::new(),
                ));
            }
            None => puts.push((format!("i/free/{:010}", r.slot), String::new())),
        }
        if let Some(last) = &r.last_owner_key {
            puts.push((format!("i/l/{}/{:010}", hex(last), r.slot), String::new()));
        }
    }
    for (key, value) in puts {
        client
            .put(format!("{prefix}{key}"), value, None)
            .await
            .unwrap();
    }
}

pub fn endpoints(url: &str) -> Vec<String> {
    match StoreUrl::parse(url).unwrap() {
        StoreUrl::Etcd(hosts) => hosts,
        other => panic!("COSID_TEST_ETCD_URL is not an etcd:// URL: {other:?}"),
    }
}
