//! The conformance target of the SQLite store: a fresh file per case, on a manual store clock, and raw writes with
//! a connection of its own. Shared by core's store test and the CLI's tests of `cosid serve` in front of SQLite.
#![allow(dead_code)]

use cosid::clock::ManualClock;
use cosid::conformance;
use cosid::lease::{Namespace, NamespaceRecord, SlotRecord};
use cosid::store::{LeaseStore, SqliteStore};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub struct Sqlite {
    pub clock: ManualClock,
    pub store: Arc<SqliteStore>,
    /// The database file.
    pub path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Sqlite {
    /// The store URL of the file.
    pub fn url(&self) -> String {
        format!("sqlite://{}", self.path.display())
    }
}

impl conformance::Target for Sqlite {
    fn store(&self) -> Arc<dyn LeaseStore> {
        self.store.clone()
    }

    /// A plain SQL upsert on a second connection, as a hand edit would do it.
    async fn put_raw(&self, namespace: &Namespace, r: &SlotRecord) {
        put_raw_at(&self.path, namespace, r);
    }

    async fn put_old_namespace(&self, namespace: &Namespace, r: &NamespaceRecord) {
        connection(&self.path)
            .execute(
                "INSERT OR REPLACE INTO cosid_namespace (name, bits, tolerance_ms, not_before) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![
                    namespace.encoded(),
                    r.bits,
                    r.tolerance_ms as i64,
                    r.not_before as i64
                ],
            )
            .unwrap();
    }

    fn manual_clock(&self) -> Option<&ManualClock> {
        Some(&self.clock)
    }
}

/// A fresh file in a temporary folder of its own (removed when the target is dropped), with the tables made.
pub async fn target() -> Option<Sqlite> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leases.db");
    let clock = ManualClock::new(conformance::T0);
    let store = Arc::new(SqliteStore::open(&path, Arc::new(clock.clone())).unwrap());
    Some(Sqlite {
        clock,
        store,
        path,
        _dir: dir,
    })
}

fn connection(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn
}

/// Writes `r` into slot `r.slot` of `namespace` in the file at `path` as it is, with a connection of its own and
/// none of the store's checks; then resets the namespace's `lowest_unused`, as docs/stores.md says to after a hand
/// edit.
pub fn put_raw_at(path: &Path, namespace: &Namespace, r: &SlotRecord) {
    let conn = connection(path);
    upsert(&conn, namespace, r);
    conn.execute(
        "UPDATE cosid_namespace SET lowest_unused = NULL WHERE name = ?1",
        [namespace.encoded()],
    )
    .unwrap();
}

/// Writes `rows` and sets `lowest_unused` as the store keeps it (`2^bits` when every slot has a row).
pub fn put_hinted_at(
    path: &Path,
    namespace: &Namespace,
    rows: &[SlotRecord],
    unused: Option<u32>,
    bits: u8,
) {
    let conn = connection(path);
    for r in rows {
        upsert(&conn, namespace, r);
    }
    conn.execute(
        "UPDATE cosid_namespace SET lowest_unused = ?2 WHERE name = ?1",
        rusqlite::params![namespace.encoded(), unused.map_or(1i64 << bits, i64::from)],
    )
    .unwrap();
}

/// A connection of the test's own to the file at `path`.
pub fn raw_at(path: &Path) -> rusqlite::Connection {
    connection(path)
}

fn upsert(conn: &rusqlite::Connection, namespace: &Namespace, r: &SlotRecord) {
    conn.execute(
            "INSERT OR REPLACE INTO cosid_slot (namespace, slot, owner_key, incarnation, last_owner_key, fence,
             expires_at, floor, ceiling, next_floor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            rusqlite::params![
                namespace.encoded(),
                r.slot,
                r.owner.as_ref().map(|o| o.key.clone()),
                r.owner.as_ref().map(|o| o.incarnation.to_string()),
                r.last_owner_key,
                r.fence as i64,
                r.expires_at as i64,
                r.floor as i64,
                r.ceiling as i64,
                r.next_floor as i64,
            ],
        )
        .unwrap();
}
