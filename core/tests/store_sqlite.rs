//! The conformance suite on the SQLite store (a fresh file per case), on a manual store clock.
#![cfg(feature = "sqlite")]

#[path = "targets/sqlite.rs"]
mod target;

use cosid::clock::ManualClock;
use cosid::conformance;
use cosid::lease::Namespace;
use cosid::store::{LeaseStore, SqliteStore};
use std::sync::Arc;
use target::target;

conformance::conformance_tests!(target());

/// A file made before namespace records kept the layout (no `layout` column) is migrated when opened: its records
/// read as "no layout yet", the first writer records its layout, and another layout is refused from then on.
#[tokio::test]
async fn a_file_without_the_layout_column_is_migrated_and_upgraded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let ns = Namespace::new("old").unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE cosid_namespace (
                 name TEXT PRIMARY KEY, bits INTEGER NOT NULL, tolerance_ms INTEGER NOT NULL,
                 not_before INTEGER NOT NULL);
             CREATE TABLE cosid_slot (
                 namespace TEXT NOT NULL, slot INTEGER NOT NULL, owner_key TEXT, incarnation TEXT,
                 last_owner_key TEXT, fence INTEGER NOT NULL, expires_at INTEGER NOT NULL, floor INTEGER NOT NULL,
                 ceiling INTEGER NOT NULL, next_floor INTEGER NOT NULL, PRIMARY KEY (namespace, slot));",
        )
        .unwrap();
        conn.execute(
            "INSERT INTO cosid_namespace VALUES (?1, 5, 1000, 42)",
            [ns.encoded()],
        )
        .unwrap();
    }
    let clock = ManualClock::new(conformance::T0);
    let store = SqliteStore::open(&path, Arc::new(clock)).unwrap();
    // A second open of the migrated file adds nothing twice.
    drop(SqliteStore::open(&path, Arc::new(ManualClock::new(conformance::T0))).unwrap());
    let before = store.inspect(&ns).await.unwrap().namespace.unwrap();
    assert_eq!((before.not_before, before.layout), (42, None));
    let owner = cosid::lease::Owner::new("a");
    let lease = store
        .acquire(
            &ns,
            &conformance::CONFIG,
            &conformance::request(&owner, 1_000),
        )
        .await
        .unwrap()
        .lease;
    assert_eq!(lease.floor, 42);
    let after = store.inspect(&ns).await.unwrap().namespace.unwrap();
    assert_eq!(after.layout, Some(conformance::CONFIG.layout));
    let seconds = cosid::lease::NamespaceConfig {
        layout: cosid::Layout::seconds(),
        ..conformance::CONFIG
    };
    let refused = store
        .acquire(&ns, &seconds, &conformance::request(&owner, 1_000))
        .await;
    assert!(
        matches!(
            refused,
            Err(cosid::store::StoreError::NamespaceMismatch {
                field: "layout tick_ms",
                stored: 1,
                requested: 1000,
                ..
            })
        ),
        "{refused:?}"
    );
}
