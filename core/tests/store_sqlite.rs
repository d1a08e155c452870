//! The conformance suite on the SQLite store (a fresh file per case), on a manual store clock.
#![cfg(feature = "sqlite")]

mod conformance;

use cosid::clock::ManualClock;
use cosid::lease::{Namespace, SlotRecord};
use cosid::store::{LeaseStore, SqliteStore};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

struct Sqlite {
    clock: ManualClock,
    store: Arc<SqliteStore>,
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl conformance::Target for Sqlite {
    fn store(&self) -> Arc<dyn LeaseStore> {
        self.store.clone()
    }

    /// A plain SQL upsert on a second connection, as a hand edit would do it.
    async fn put_raw(&self, namespace: &Namespace, r: &SlotRecord) {
        let conn = rusqlite::Connection::open(&self.path).unwrap();
        conn.busy_timeout(Duration::from_secs(10)).unwrap();
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

    fn manual_clock(&self) -> Option<&ManualClock> {
        Some(&self.clock)
    }
}

async fn target() -> Option<Sqlite> {
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

conformance::conformance_tests!(target());
