//! The conformance target of the ZooKeeper store on the server in `COSID_TEST_ZOOKEEPER_URL`, with raw writes
//! through a client of its own. Shared by core's store test and the CLI's tests of `cosid serve` in front of
//! ZooKeeper.
#![allow(dead_code)]

// The CLI's test of `cosid serve` loads the etcd and ZooKeeper targets, and so this module, into one crate.
#[allow(clippy::duplicate_mod)]
#[path = "json.rs"]
mod json;

use cosid::clock::Clock;
use cosid::conformance;
use cosid::lease::Namespace;
use cosid::store::ZookeeperStore;
use std::sync::Arc;
use zookeeper_client::{Acls, Client, CreateMode};

pub const URL_VAR: &str = "COSID_TEST_ZOOKEEPER_URL";
pub const SCRIPT: &str = ".ci/services/zookeeper.sh";

pub type Zookeeper = json::JsonTarget<ZookeeperStore>;

impl json::JsonStore for ZookeeperStore {
    async fn open_on(url: &str, clock: Arc<dyn Clock>) -> ZookeeperStore {
        ZookeeperStore::open(url, clock).unwrap()
    }

    /// A plain write, as `zkCli.sh set` would do it.
    async fn put_value(url: &str, namespace: &Namespace, node: &str, value: &[u8]) {
        put_raw(url, namespace, node, value).await;
    }
}

/// A target on the server in `COSID_TEST_ZOOKEEPER_URL` on a manual store clock, or `None` (saying why) when it
/// is unset.
pub async fn target() -> Option<Zookeeper> {
    let url = conformance::server_url(URL_VAR, SCRIPT)?;
    Some(json::on_manual_clock(url).await)
}

/// A target on the host clock, as a runtime's store runs.
pub async fn on_host_clock(url: String) -> Zookeeper {
    json::on_host_clock(url).await
}

/// `host:port[,...]` of a `zookeeper://` URL without credentials or chroot.
pub fn hosts(url: &str) -> String {
    let rest = url
        .strip_prefix("zookeeper://")
        .expect("a zookeeper:// URL");
    let authority = rest.split_once('/').map_or(rest, |(a, _)| a);
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, h)| h)
        .to_owned()
}

/// The znode paths, spelled out here rather than taken from the store, so the test pins the layout.
pub fn namespace_dir(namespace: &Namespace) -> String {
    format!("/cosid/{}", namespace.encoded())
}

/// Writes `value` at `node` (relative to the namespace's znode) with a client of its own, bypassing the store:
/// creates it (and its parents) when missing.
pub async fn put_raw(url: &str, namespace: &Namespace, node: &str, value: &[u8]) {
    let client = Client::connect(&hosts(url)).await.unwrap();
    let path = format!("{}/{node}", namespace_dir(namespace));
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    match client.set_data(&path, value, None).await {
        Ok(_) => {}
        Err(zookeeper_client::Error::NoNode) => {
            let parent = &path[..path.rfind('/').unwrap()];
            client.mkdir(parent, &options).await.unwrap();
            client.create(&path, value, &options).await.unwrap();
        }
        Err(e) => panic!("put {path}: {e}"),
    }
}
