//! The conformance target of the MySQL/MariaDB store on the server in `COSID_TEST_MYSQL_URL`, with raw writes
//! through connections of its own. Shared by core's store test and the CLI's tests of `cosid serve` in front of
//! MySQL/MariaDB.
#![allow(dead_code)]

use cosid::conformance;
use cosid::lease::{Namespace, NamespaceRecord, SlotRecord};
use cosid::store::{LeaseStore, MysqlStore};
use mysql_async::prelude::Queryable;
use mysql_async::Value;
use std::sync::Arc;

pub const URL_VAR: &str = "COSID_TEST_MYSQL_URL";
pub const SCRIPT: &str = ".ci/services/mariadb.sh";

pub struct Mysql {
    pub store: Arc<MysqlStore>,
    pub url: String,
}

impl conformance::Target for Mysql {
    fn store(&self) -> Arc<dyn LeaseStore> {
        self.store.clone()
    }

    /// A plain SQL upsert on a connection of its own, as a hand edit would do it (and what docs/stores.md tells an
    /// operator to do after one: reset the namespace's `lowest_unused`).
    async fn put_raw(&self, namespace: &Namespace, r: &SlotRecord) {
        put_raw_row(
            &self.url,
            namespace,
            vec![
                Value::from(r.slot),
                Value::from(r.owner.as_ref().map(|o| o.key.clone())),
                Value::from(r.owner.as_ref().map(|o| o.incarnation.to_string())),
                Value::from(r.last_owner_key.clone()),
                Value::from(r.fence as i64),
                Value::from(r.expires_at as i64),
                Value::from(r.floor as i64),
                Value::from(r.ceiling as i64),
                Value::from(r.next_floor as i64),
            ],
        )
        .await;
    }

    async fn put_old_namespace(&self, namespace: &Namespace, r: &NamespaceRecord) {
        let mut conn = raw_connection(&self.url).await;
        conn.exec_drop(
            "REPLACE INTO cosid_namespace (name, bits, tolerance_ms, not_before) VALUES (?, ?, ?, ?)",
            (
                namespace.encoded(),
                r.bits,
                r.tolerance_ms as i64,
                r.not_before as i64,
            ),
        )
        .await
        .unwrap();
        conn.disconnect().await.unwrap();
    }
}

/// A connection of the test's own to the database of a `mysql://` or `mariadb://` URL.
async fn raw_connection(url: &str) -> mysql_async::Conn {
    let url = url.replacen("mariadb://", "mysql://", 1);
    mysql_async::Conn::new(mysql_async::Opts::from_url(&url).unwrap())
        .await
        .unwrap()
}

/// Writes a slot row with `values` for the columns `slot, owner_key, incarnation, last_owner_key, fence,
/// expires_at, floor, ceiling, next_floor`, bypassing the store, and resets the namespace's `lowest_unused` as
/// docs/stores.md says to after a hand edit.
pub async fn put_raw_row(url: &str, namespace: &Namespace, values: Vec<Value>) {
    let mut conn = raw_connection(url).await;
    conn.exec_drop(
        "UPDATE cosid_namespace SET lowest_unused = NULL WHERE name = ?",
        (namespace.encoded(),),
    )
    .await
    .unwrap();
    upsert(&mut conn, namespace, values).await;
    conn.disconnect().await.unwrap();
}

/// Writes `rows` and sets `lowest_unused` as the store keeps it (`2^bits` when every slot has a row).
pub async fn put_hinted(
    url: &str,
    namespace: &Namespace,
    rows: &[SlotRecord],
    unused: Option<u32>,
    bits: u8,
) {
    let mut conn = raw_connection(url).await;
    for r in rows {
        upsert(&mut conn, namespace, values_of(r)).await;
    }
    conn.exec_drop(
        "UPDATE cosid_namespace SET lowest_unused = ? WHERE name = ?",
        (unused.map_or(1i64 << bits, i64::from), namespace.encoded()),
    )
    .await
    .unwrap();
    conn.disconnect().await.unwrap();
}

/// A connection of the test's own.
pub async fn raw(url: &str) -> mysql_async::Conn {
    raw_connection(url).await
}

fn values_of(r: &SlotRecord) -> Vec<Value> {
    vec![
        Value::from(r.slot),
        Value::from(r.owner.as_ref().map(|o| o.key.clone())),
        Value::from(r.owner.as_ref().map(|o| o.incarnation.to_string())),
        Value::from(r.last_owner_key.clone()),
        Value::from(r.fence as i64),
        Value::from(r.expires_at as i64),
        Value::from(r.floor as i64),
        Value::from(r.ceiling as i64),
        Value::from(r.next_floor as i64),
    ]
}

async fn upsert(conn: &mut mysql_async::Conn, namespace: &Namespace, values: Vec<Value>) {
    let mut params = vec![Value::from(namespace.encoded())];
    params.extend(values);
    conn.exec_drop(
        "REPLACE INTO cosid_slot (namespace, slot, owner_key, incarnation, last_owner_key, fence, expires_at,
         floor, ceiling, next_floor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        params,
    )
    .await
    .unwrap();
}

pub async fn connect(url: String) -> Mysql {
    let store = Arc::new(MysqlStore::open(&url).await.unwrap());
    Mysql { store, url }
}

/// A target on the server in `COSID_TEST_MYSQL_URL`, or `None` (saying why) when it is unset.
pub async fn target() -> Option<Mysql> {
    let url = conformance::server_url(URL_VAR, SCRIPT)?;
    Some(connect(url).await)
}
