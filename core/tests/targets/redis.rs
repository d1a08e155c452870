//! The conformance target of the Redis store on the server in `COSID_TEST_REDIS_URL`, with raw writes through a
//! connection of its own. Shared by core's store test and the CLI's tests of `cosid serve` in front of Redis.
#![allow(dead_code)]

use cosid::conformance::{self, Target};
use cosid::lease::{Namespace, NamespaceRecord, SlotRecord};
use cosid::store::{LeaseStore, RedisStore};
use redis::AsyncCommands;
use std::sync::Arc;

pub const URL_VAR: &str = "COSID_TEST_REDIS_URL";
pub const SCRIPT: &str = ".ci/services/redis.sh";

pub struct Redis {
    pub store: Arc<RedisStore>,
    pub raw: redis::aio::MultiplexedConnection,
}

/// The slots hash of a namespace, spelled out here rather than taken from the store, so the test pins the layout.
pub fn slots_key(ns: &Namespace) -> String {
    format!("cosid:{{{}}}:slots", ns.encoded())
}

pub fn namespace_key(ns: &Namespace) -> String {
    format!("cosid:{{{}}}:ns", ns.encoded())
}

impl Target for Redis {
    fn store(&self) -> Arc<dyn LeaseStore> {
        self.store.clone()
    }

    /// One `HSET` of the record in the store's raw form, with no check. An edit by hand: it deletes the acquire
    /// index (as docs/stores.md tells an operator to), which the next acquire rebuilds from the records.
    async fn put_raw(&self, ns: &Namespace, r: &SlotRecord) {
        let mut conn = self.raw.clone();
        let _: () = conn
            .hset(slots_key(ns), r.slot.to_string(), encode(r))
            .await
            .unwrap();
        let _: () = conn.del(&RedisStore::index_keys(ns)).await.unwrap();
    }

    /// The hash as versions before layouts were recorded wrote it: three fields.
    async fn put_old_namespace(&self, ns: &Namespace, r: &NamespaceRecord) {
        let mut conn = self.raw.clone();
        let key = RedisStore::namespace_key(ns);
        let _: () = conn.del(&key).await.unwrap();
        let _: () = conn
            .hset_multiple(
                &key,
                &[
                    ("bits", r.bits.to_string()),
                    ("tolerance_ms", r.tolerance_ms.to_string()),
                    ("not_before", r.not_before.to_string()),
                ],
            )
            .await
            .unwrap();
    }
}

/// A slot record as the store keeps it, written out here rather than taken from the store, so the test pins the
/// format: `v1;fence;expires_at;floor;ceiling;next_floor;incarnation;<owner key><last owner key>`, each key `-` or
/// `<length>:<bytes>`.
pub fn encode(r: &SlotRecord) -> String {
    let key = |k: Option<&str>| k.map_or("-".to_string(), |k| format!("{}:{k}", k.len()));
    format!(
        "v1;{};{};{};{};{};{};{}{}",
        r.fence,
        r.expires_at,
        r.floor,
        r.ceiling,
        r.next_floor,
        r.owner
            .as_ref()
            .map_or(String::new(), |o| o.incarnation.to_string()),
        key(r.owner.as_ref().map(|o| o.key.as_str())),
        key(r.last_owner_key.as_deref()),
    )
}

pub async fn connect(url: &str) -> Redis {
    let raw = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("cannot reach {url}: {e}"));
    Redis {
        store: Arc::new(RedisStore::open(url).unwrap()),
        raw,
    }
}

/// A target on the server in `COSID_TEST_REDIS_URL`, or `None` (saying why) when it is unset.
pub async fn target() -> Option<Redis> {
    let url = conformance::server_url(URL_VAR, SCRIPT)?;
    Some(connect(&url).await)
}
