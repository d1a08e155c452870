//! The store conformance suite through a real `cosid serve` in front of the Redis server in
//! `COSID_TEST_REDIS_URL` (`eval "$(bash .ci/services/redis.sh)"` starts one); without it the cases print why they
//! are skipped.
#![cfg(feature = "redis")]

use cosid::conformance;
mod serve_common;

use cosid::lease::{Namespace, NamespaceRecord, SlotRecord};
use cosid::store::{HttpStore, LeaseStore, RedisStore};
use redis::AsyncCommands;
use serve_common::Serve;
use std::sync::Arc;

struct Proxied {
    store: Arc<HttpStore>,
    raw: redis::aio::MultiplexedConnection,
    _serve: Serve,
}

/// The slots hash of a namespace, as the Redis store lays it out.
fn slots_key(ns: &Namespace) -> String {
    format!("cosid:{{{}}}:slots", ns.encoded())
}

/// A slot record in the Redis store's raw form.
fn encode(r: &SlotRecord) -> String {
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

impl conformance::Target for Proxied {
    fn store(&self) -> Arc<dyn LeaseStore> {
        self.store.clone()
    }

    async fn put_raw(&self, ns: &Namespace, r: &SlotRecord) {
        let mut conn = self.raw.clone();
        let _: () = conn
            .hset(slots_key(ns), r.slot.to_string(), encode(r))
            .await
            .unwrap();
    }

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

async fn target() -> Option<Proxied> {
    let url = conformance::server_url("COSID_TEST_REDIS_URL", ".ci/services/redis.sh")?;
    let raw = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("cannot reach {url}: {e}"));
    let serve = Serve::start(&url, &[]);
    Some(Proxied {
        store: Arc::new(HttpStore::open(&serve.url).unwrap()),
        raw,
        _serve: serve,
    })
}

conformance::conformance_tests!(target());
