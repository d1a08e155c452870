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
/// creates it (and its parents) when missing. Then deletes the namespace's acquire index, as docs/stores.md says
/// to after editing records by hand.
pub async fn put_raw(url: &str, namespace: &Namespace, node: &str, value: &[u8]) {
    put_raw_keeping_index(url, namespace, node, value).await;
    forget_index(url, namespace).await;
}

/// The znode of the namespace's acquire index.
pub fn index_root(namespace: &Namespace) -> String {
    format!("{}.idx", namespace_dir(namespace))
}

/// Deletes the namespace's acquire index (`deleteall <dir>.idx`), so that its next acquisition reads every record
/// and builds it again.
pub async fn forget_index(url: &str, namespace: &Namespace) {
    let client = Client::connect(&hosts(url)).await.unwrap();
    delete_all(&client, &index_root(namespace)).await;
}

/// Deletes `path` and everything under it; nothing when it does not exist.
pub async fn delete_all(client: &Client, path: &str) {
    let mut stack = vec![(path.to_owned(), false)];
    while let Some((p, listed)) = stack.pop() {
        if !listed {
            match client.list_children(&p).await {
                Ok(children) => {
                    stack.push((p.clone(), true));
                    stack.extend(children.into_iter().map(|c| (format!("{p}/{c}"), false)));
                }
                Err(zookeeper_client::Error::NoNode) => {}
                Err(e) => panic!("list {p}: {e}"),
            }
        } else {
            match client.delete(&p, None).await {
                Ok(()) | Err(zookeeper_client::Error::NoNode) => {}
                Err(e) => panic!("delete {p}: {e}"),
            }
        }
    }
}

/// [`put_raw`] leaving the acquire index as it is.
pub async fn put_raw_keeping_index(url: &str, namespace: &Namespace, node: &str, value: &[u8]) {
    let client = Client::connect(&hosts(url)).await.unwrap();
    put_on(&client, namespace, node, value).await;
}

/// [`put_raw_keeping_index`] through `client`.
async fn put_on(client: &Client, namespace: &Namespace, node: &str, value: &[u8]) {
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

/// The entries an index that covers `rows` has, relative to its root: `k/<hex key>/<slot>` for the owner key and
/// the last owner key, `held/<expires_at >> 8>/<expires_at>-<slot>` with an owner, else `free/<slot >> 7>/<slot>`.
/// Spelled out here, so the test pins the index's format.
pub fn index_entries_of(rows: &[cosid::lease::SlotRecord]) -> std::collections::BTreeSet<String> {
    let hex = |k: &str| k.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    let mut entries = std::collections::BTreeSet::new();
    for r in rows {
        for key in r
            .owner
            .as_ref()
            .map(|o| &o.key)
            .into_iter()
            .chain(&r.last_owner_key)
        {
            entries.insert(format!("k/{}/{}", hex(key), r.slot));
        }
        entries.insert(match &r.owner {
            Some(_) => format!("held/{}/{}-{}", r.expires_at >> 8, r.expires_at, r.slot),
            None => format!("free/{}/{}", r.slot >> 7, r.slot),
        });
    }
    entries
}

/// The entries of the namespace's index (the leaves under `k`, `held` and `free`), relative to its root, and `hw`.
pub async fn index_of(
    url: &str,
    namespace: &Namespace,
) -> (std::collections::BTreeSet<String>, String) {
    let client = Client::connect(&hosts(url)).await.unwrap();
    let root = index_root(namespace);
    let mut entries = std::collections::BTreeSet::new();
    for part in ["k", "held", "free"] {
        for dir in client
            .list_children(&format!("{root}/{part}"))
            .await
            .unwrap()
        {
            let children = client
                .list_children(&format!("{root}/{part}/{dir}"))
                .await
                .unwrap_or_default();
            entries.extend(children.into_iter().map(|c| format!("{part}/{dir}/{c}")));
        }
    }
    let (hw, _) = client.get_data(&format!("{root}/hw")).await.unwrap();
    (entries, String::from_utf8(hw).unwrap())
}

/// Writes `rows` with a client of its own, leaving the acquire index as it is.
pub async fn put_records(url: &str, namespace: &Namespace, rows: &[cosid::lease::SlotRecord]) {
    let client = Client::connect(&hosts(url)).await.unwrap();
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
        put_on(
            &client,
            namespace,
            &format!("slot/{}", r.slot),
            value.to_string().as_bytes(),
        )
        .await;
    }
}

/// Writes `rows` and an acquire index that covers them (every record with an owner under `held`, expired or not,
/// the others under `free`, and `hw` = `unused`), with a client of its own.
pub async fn put_indexed(
    url: &str,
    namespace: &Namespace,
    rows: &[cosid::lease::SlotRecord],
    unused: Option<u32>,
) {
    put_records(url, namespace, rows).await;
    let client = Client::connect(&hosts(url)).await.unwrap();
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let root = index_root(namespace);
    delete_all(&client, &root).await;
    client.mkdir(&format!("{root}/k"), &options).await.unwrap();
    for part in ["held", "free"] {
        client
            .create(&format!("{root}/{part}"), b"", &options)
            .await
            .unwrap();
    }
    let hw = unused.map_or("none".to_owned(), |s| s.to_string());
    client
        .create(&format!("{root}/hw"), hw.as_bytes(), &options)
        .await
        .unwrap();
    for entry in index_entries_of(rows) {
        let path = format!("{root}/{entry}");
        client
            .mkdir(&path[..path.rfind('/').unwrap()], &options)
            .await
            .unwrap();
        client.create(&path, b"", &options).await.unwrap();
    }
    client.set_data(&root, b"1", None).await.unwrap();
}
