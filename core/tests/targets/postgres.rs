//! The conformance target of the PostgreSQL store on the server in `COSID_TEST_POSTGRES_URL`, with raw writes
//! through a connection of its own. Shared by core's store test and the CLI's tests of `cosid serve` in front of
//! PostgreSQL.
#![allow(dead_code)]

use cosid::conformance::{self, Target};
use cosid::lease::{Namespace, NamespaceRecord, SlotRecord};
use cosid::store::{LeaseStore, PostgresStore};
use std::sync::Arc;
use tokio_postgres::NoTls;

pub const URL_VAR: &str = "COSID_TEST_POSTGRES_URL";
pub const SCRIPT: &str = ".ci/services/postgres.sh";

pub struct Postgres {
    pub store: Arc<PostgresStore>,
    pub raw: tokio_postgres::Client,
}

impl Target for Postgres {
    fn store(&self) -> Arc<dyn LeaseStore> {
        self.store.clone()
    }

    /// A plain SQL upsert on a connection of the test's own, as a hand edit would do it, followed by what
    /// docs/stores.md tells an operator to do after one: reset the namespace's `lowest_unused`, so the next acquire
    /// reads every row.
    async fn put_raw(&self, ns: &Namespace, r: &SlotRecord) {
        self.raw
            .execute(
                "UPDATE cosid_namespace SET lowest_unused = NULL WHERE name = $1",
                &[&ns.encoded()],
            )
            .await
            .unwrap();
        self.upsert(ns, r).await;
    }

    async fn put_old_namespace(&self, ns: &Namespace, r: &NamespaceRecord) {
        self.raw
            .execute(
                "INSERT INTO cosid_namespace (name, bits, tolerance_ms, not_before) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (name) DO UPDATE SET bits = $2, tolerance_ms = $3, not_before = $4, layout = NULL",
                &[
                    &ns.encoded(),
                    &i64::from(r.bits),
                    &(r.tolerance_ms as i64),
                    &(r.not_before as i64),
                ],
            )
            .await
            .unwrap();
    }
}

impl Postgres {
    /// Upserts `r` with plain SQL, touching nothing else.
    pub async fn upsert(&self, ns: &Namespace, r: &SlotRecord) {
        self.raw
            .execute(
                "INSERT INTO cosid_slot (namespace, slot, owner_key, incarnation, last_owner_key, fence, expires_at,
                 floor, ceiling, next_floor) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                 ON CONFLICT (namespace, slot) DO UPDATE SET owner_key = $3, incarnation = $4,
                 last_owner_key = $5, fence = $6, expires_at = $7, floor = $8, ceiling = $9, next_floor = $10",
                &[
                    &ns.encoded(),
                    &i64::from(r.slot),
                    &r.owner.as_ref().map(|o| o.key.clone()),
                    &r.owner.as_ref().map(|o| o.incarnation.to_string()),
                    &r.last_owner_key,
                    &(r.fence as i64),
                    &(r.expires_at as i64),
                    &(r.floor as i64),
                    &(r.ceiling as i64),
                    &(r.next_floor as i64),
                ],
            )
            .await
            .unwrap();
    }

    /// Writes `rows` and sets `lowest_unused` as the store keeps it (`2^bits` when every slot has a row).
    pub async fn put_hinted(
        &self,
        ns: &Namespace,
        rows: &[SlotRecord],
        unused: Option<u32>,
        bits: u8,
    ) {
        for r in rows {
            self.upsert(ns, r).await;
        }
        let hint = unused.map_or(1i64 << bits, i64::from);
        self.raw
            .execute(
                "UPDATE cosid_namespace SET lowest_unused = $2 WHERE name = $1",
                &[&ns.encoded(), &hint],
            )
            .await
            .unwrap();
    }
}

pub async fn raw_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot reach {url}: {e}"));
    tokio::spawn(connection);
    client
}

/// A target on `url`, with the tables made.
pub async fn connect(url: &str) -> Postgres {
    let store = Arc::new(PostgresStore::open(url).unwrap());
    store.init().await.unwrap();
    Postgres {
        store,
        raw: raw_client(url).await,
    }
}

/// A target on the server in `COSID_TEST_POSTGRES_URL`, or `None` (saying why) when it is unset.
pub async fn target() -> Option<Postgres> {
    let url = conformance::server_url(URL_VAR, SCRIPT)?;
    Some(connect(&url).await)
}
