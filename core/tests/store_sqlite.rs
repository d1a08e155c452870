//! The conformance suite on the SQLite store (a fresh file per case), on a manual store clock.
#![cfg(feature = "sqlite")]

#[path = "targets/hints.rs"]
mod hints;
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

// ---------------------------------------------------------------------------------------------------------------
// The acquire's candidate rows and `lowest_unused`: hints that must never change a decision.

/// The same random calls (on the system clock, so leases expire) on a namespace that keeps `lowest_unused` and on
/// one whose `lowest_unused` is reset before every call (so each of its acquires reads every row).
#[tokio::test]
async fn acquires_on_candidate_rows_decide_as_reading_every_row_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leases.db");
    let store = Arc::new(SqliteStore::open(&path, Arc::new(cosid::clock::SystemClock)).unwrap());
    let conn = Arc::new(std::sync::Mutex::new(target::raw_at(&path)));
    hints::hints_never_change_a_decision(store, move |full| {
        conn.lock()
            .unwrap()
            .execute(
                "UPDATE cosid_namespace SET lowest_unused = NULL WHERE name = ?1",
                [full.encoded()],
            )
            .unwrap();
        std::future::ready(())
    })
    .await;
}

/// Random namespaces written with their `lowest_unused`, then one acquire each: the store's answer is the protocol's
/// decision on every row.
#[tokio::test]
async fn acquires_on_candidate_rows_decide_as_the_protocol_on_every_row() {
    let t = target().await.unwrap();
    let path = t.path.clone();
    hints::hinted_acquires_decide_as_the_protocol_on_every_row(
        t.store.clone(),
        300,
        3,
        move |ns, rows, unused| {
            target::put_hinted_at(&path, &ns, &rows, unused, 3);
            std::future::ready(())
        },
    )
    .await;
}

/// A `lowest_unused` that names a slot with a row (written by a version that did not keep it) is caught: the
/// acquire reads every row, takes the true lowest unused slot, and sets `lowest_unused` right.
#[tokio::test]
async fn a_lowest_unused_that_names_a_used_slot_is_caught_and_set_right() {
    let t = target().await.unwrap();
    let ns = conformance::fresh("sqlite-hint-stale");
    let take = |key: &str| {
        let owner = cosid::lease::Owner::new(key);
        let store = t.store.clone();
        let ns = ns.clone();
        async move {
            store
                .acquire(
                    &ns,
                    &conformance::CONFIG,
                    &conformance::request(&owner, 60_000),
                )
                .await
                .unwrap()
                .lease
        }
    };
    let (a, b) = (take("a").await, take("b").await);
    assert_eq!((a.slot, b.slot), (0, 1));
    let conn = target::raw_at(&t.path);
    let hint = || -> Option<i64> {
        conn.query_row(
            "SELECT lowest_unused FROM cosid_namespace WHERE name = ?1",
            [ns.encoded()],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(hint(), Some(2));
    conn.execute(
        "UPDATE cosid_namespace SET lowest_unused = 1 WHERE name = ?1",
        [ns.encoded()],
    )
    .unwrap();
    let c = take("c").await;
    assert_eq!((c.slot, c.fence), (2, 1), "slot 1 is held by b");
    assert_eq!(hint(), Some(3));
}

/// The candidate query does not visit the namespace's rows: run in namespaces of 64 and of 4,096 held rows, it
/// takes about the same number of SQLite virtual machine steps (a part that scans would take 64 times more).
#[tokio::test]
async fn the_candidate_query_costs_the_same_in_a_namespace_64_times_larger() {
    let t = target().await.unwrap();
    let conn = target::raw_at(&t.path);
    let query = include_str!("../src/store/sql_view/candidates.sql").replace('$', "?");
    let mut steps = Vec::new();
    for n in [64i64, 4_096] {
        let ns = conformance::fresh(&format!("sqlite-cost-{n}"));
        let config = cosid::lease::NamespaceConfig {
            bits: 13,
            ..conformance::CONFIG
        };
        t.store
            .acquire(
                &ns,
                &config,
                &conformance::request(&cosid::lease::Owner::new("first"), 60_000),
            )
            .await
            .unwrap();
        conn.execute(
            "WITH RECURSIVE s (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ?2)
             INSERT INTO cosid_slot (namespace, slot, owner_key, incarnation, last_owner_key, fence, expires_at,
                 floor, ceiling, next_floor)
             SELECT ?1, n, 'k' || n, '00000000-0000-4000-8000-000000000000', 'k' || n, 1, 9000000000000000, 0,
                 9000000000000000, 9000000000000000 FROM s",
            rusqlite::params![ns.encoded(), n - 1],
        )
        .unwrap();
        conn.execute_batch("ANALYZE").unwrap();
        let mut stmt = conn.prepare(&query).unwrap();
        let rows = stmt
            .query_map(rusqlite::params![ns.encoded(), "k7", 5, n, 1, 2], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap()
            .count();
        assert!(rows >= 2, "k7's row, and the earliest expiry");
        steps.push(stmt.get_status(rusqlite::StatementStatus::VmStep));
    }
    assert!(
        steps[1] < steps[0] * 2,
        "VM steps at 64 and 4,096 rows: {steps:?}"
    );
}

/// A `lowest_unused` that says every slot has a row (as rows deleted by hand leave it) is checked before a refusal
/// and set right: it used to refuse every start for good (`EXHAUSTED ... all 8 slots are held` while 2 were).
#[tokio::test]
async fn a_lowest_unused_that_says_the_namespace_is_full_is_checked_before_a_refusal() {
    let t = target().await.unwrap();
    let path = t.path.clone();
    hints::a_hint_that_says_no_slot_is_unused_is_checked(
        t.store.clone(),
        "sqlite-hint-full",
        |ns| async move {
            target::raw_at(&path)
                .execute(
                    "UPDATE cosid_namespace SET lowest_unused = 8 WHERE name = ?1",
                    [ns.encoded()],
                )
                .unwrap();
        },
    )
    .await;
}

/// A `-wal` file deleted under an open store is reported as the store's file trouble, naming the missing file,
/// never as a corrupt record (which tells an operator to go and edit records).
#[tokio::test]
async fn a_deleted_wal_file_is_named_not_called_a_corrupt_record() {
    let t = target().await.unwrap();
    let ns = conformance::fresh("sqlite-wal-gone");
    let owner = cosid::lease::Owner::new("a");
    let lease = t
        .store
        .acquire(
            &ns,
            &conformance::CONFIG,
            &conformance::request(&owner, 60_000),
        )
        .await
        .unwrap()
        .lease;
    let mut wal = t.path.clone().into_os_string();
    wal.push("-wal");
    std::fs::remove_file(&wal).unwrap();
    let mut errors = Vec::new();
    let other = cosid::lease::Owner::new("b");
    if let Err(e) = t
        .store
        .acquire(
            &ns,
            &conformance::CONFIG,
            &conformance::request(&other, 60_000),
        )
        .await
    {
        errors.push(e);
    }
    if let Err(e) = t.store.renew(&lease, 60_000, 1_000).await {
        errors.push(e);
    }
    // Another process on the file (a new store here) opens it after the deletion.
    let again = SqliteStore::open(&t.path, Arc::new(ManualClock::new(conformance::T0)));
    match again {
        Err(e) => errors.push(e),
        Ok(again) => {
            if let Err(e) = again
                .acquire(
                    &ns,
                    &conformance::CONFIG,
                    &conformance::request(&other, 60_000),
                )
                .await
            {
                errors.push(e);
            }
        }
    }
    for e in &errors {
        eprintln!("seen: {e}");
    }
    assert!(!errors.is_empty(), "nothing noticed the deleted WAL");
    for e in errors {
        let code = cosid::host::ErrorCode::of_store(&e);
        assert_eq!(code.name(), "STORE_UNAVAILABLE", "{e}");
        assert!(e.to_string().contains("-wal"), "{e}");
    }
}
