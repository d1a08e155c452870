//! The MySQL/MariaDB store against a real server: the conformance suite, then what is particular to this store.
//!
//! Set `COSID_TEST_MYSQL_URL` (`eval "$(bash .ci/services/mariadb.sh)"` starts a server and sets it); without it
//! the tests that need a server print why they are skipped. The store clock is the database's, so the suite's
//! expiry cases wait for it in real time (a few hundred milliseconds).
#![cfg(feature = "mysql")]

#[path = "targets/hints.rs"]
mod hints;
#[path = "targets/mysql.rs"]
mod target;

use cosid::conformance;

use cosid::clock::SystemClock;
use cosid::lease::{AcquireRequest, Namespace, NamespaceConfig, Owner};
use cosid::store::{LeaseStore, MysqlStore, StoreError, StoreUrl};
use mysql_async::prelude::Queryable;
use mysql_async::Value;
use std::sync::Arc;
use target::{connect, put_hinted, put_raw_row, raw, target, SCRIPT, URL_VAR};

conformance::conformance_tests!(target());

conformance::runtime_tests! {
    kind: "mysql",
    url: conformance::server_url(URL_VAR, SCRIPT),
    target: connect,
    // Port 1 on loopback: nothing listens there.
    unreachable: "mysql://cosid:cosid@127.0.0.1:1/cosid_test",
    shown: "127.0.0.1:1/cosid_test",
}

// ---------------------------------------------------------------------------------------------------------------
// What is particular to MySQL and MariaDB.

const CONFIG: NamespaceConfig = NamespaceConfig {
    bits: 5,
    tolerance_ms: 1_000,
    layout: cosid::Layout::millis(),
};

/// A namespace no earlier run used, so tests can share one database.
fn fresh(name: &str) -> Namespace {
    Namespace::new(format!("{name}-{}", uuid::Uuid::new_v4())).unwrap()
}

fn request(key: &str) -> AcquireRequest {
    AcquireRequest {
        owner: Owner::new(key),
        ttl_ms: 30_000,
        preferred_slot: None,
    }
}

async fn store(url: &str) -> MysqlStore {
    let store = MysqlStore::open(url).await.unwrap();
    store.init().await.unwrap();
    store
}

#[tokio::test]
async fn refuses_urls_without_a_database_or_with_another_scheme() {
    for bad in [
        "mysql://u:p@127.0.0.1:3306",
        "mysql://u:p@127.0.0.1:3306/",
        "postgres://x/db",
    ] {
        match MysqlStore::open(bad).await {
            Err(StoreError::InvalidUrl { url, reason }) => {
                // Shown with its password hidden.
                assert_eq!(url, cosid::store::redacted(bad));
                assert!(!url.contains(":p@"), "{url}");
                assert!(!reason.is_empty());
            }
            other => panic!("{bad}: expected InvalidUrl, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable_and_the_password_is_never_printed() {
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    let store = MysqlStore::open("mysql://cosid:s3cret-pw@127.0.0.1:1/cosid_test")
        .await
        .unwrap();
    assert!(!format!("{store:?}").contains("s3cret-pw"), "{store:?}");
    let err = store
        .acquire(&fresh("down"), &CONFIG, &request("a"))
        .await
        .unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert!(
        matches!(err, StoreError::Unavailable { store: "mysql", .. }),
        "{err:?}"
    );
    assert!(!err.to_string().contains("s3cret-pw"), "{err}");
}

#[tokio::test]
async fn opens_through_store_urls_with_either_scheme() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let mariadb = url.replacen("mysql://", "mariadb://", 1);
    for url in [url.clone(), mariadb] {
        let store = cosid::store::open(&StoreUrl::parse(&url).unwrap(), Arc::new(SystemClock))
            .await
            .unwrap();
        assert_eq!(store.kind(), "mysql");
        store.init().await.unwrap();
        let ns = fresh("open");
        let got = store.acquire(&ns, &CONFIG, &request("a")).await.unwrap();
        assert_eq!(got.lease.slot, 0);
    }
}

#[tokio::test]
async fn the_store_clock_is_the_database_clock_in_milliseconds() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let store = store(&url).await;
    let ns = fresh("clock");
    let got = store.acquire(&ns, &CONFIG, &request("a")).await.unwrap();
    let lease = got.lease;
    // Both the server and this test run on this machine: the clocks agree to well within a day, which is all this
    // checks (it catches seconds-for-milliseconds and time-zone mistakes, not skew).
    let host = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(
        lease.store_now.abs_diff(host) < 86_400_000,
        "store {} host {host}",
        lease.store_now
    );
    assert_eq!(lease.expires_at, lease.store_now + 30_000);
    let seen = store.inspect(&ns).await.unwrap();
    assert!(seen.store_now >= lease.store_now);
}

#[tokio::test]
async fn names_differing_only_in_letter_case_never_share_a_row() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let store = store(&url).await;
    // MySQL compares text without regard to case unless told otherwise: the key columns are binary.
    let base = uuid::Uuid::new_v4().simple().to_string();
    let lower = Namespace::new(format!("orders-{base}")).unwrap();
    let upper = Namespace::new(format!("ORDERS-{base}")).unwrap();
    let a = store.acquire(&lower, &CONFIG, &request("a")).await.unwrap();
    let b = store.acquire(&upper, &CONFIG, &request("b")).await.unwrap();
    assert_eq!((a.lease.slot, b.lease.slot), (0, 0));
    let other = NamespaceConfig { bits: 6, ..CONFIG };
    // The upper-case namespace has its own record: other settings there do not touch the lower-case one.
    let c = store
        .acquire(&upper, &other, &request("c"))
        .await
        .unwrap_err();
    assert!(
        matches!(c, StoreError::NamespaceMismatch { field: "bits", .. }),
        "{c:?}"
    );
    assert_eq!(store.inspect(&lower).await.unwrap().slots.len(), 1);
    assert_eq!(store.inspect(&upper).await.unwrap().slots.len(), 1);
}

#[tokio::test]
async fn undecodable_rows_are_corrupt_never_absent() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let store = store(&url).await;
    let row =
        |slot: i64, key: Option<&str>, inc: Option<&str>, fence: i64, floor: i64, ceiling: i64| {
            vec![
                Value::from(slot),
                Value::from(key),
                Value::from(inc),
                Value::from(key),
                Value::from(fence),
                Value::from(ceiling),
                Value::from(floor),
                Value::from(ceiling),
                Value::from(ceiling),
            ]
        };
    let uuid = uuid::Uuid::new_v4().to_string();
    let cases: Vec<(&str, Vec<Value>)> = vec![
        (
            "incarnation",
            row(0, Some("k"), Some("not-a-uuid"), 1, 10, 20),
        ),
        ("both set or both empty", row(0, Some("k"), None, 1, 10, 20)),
        ("negative", row(0, Some("k"), Some(&uuid), -3, 10, 20)),
        ("floor", row(0, Some("k"), Some(&uuid), 1, 30, 20)),
        ("not below 2^5", row(40, Some("k"), Some(&uuid), 1, 10, 20)),
        ("out of range", row(-1, Some("k"), Some(&uuid), 1, 10, 20)),
    ];
    for (expected, values) in cases {
        let ns = fresh("corrupt");
        // The namespace record exists (so only the slot row is bad), and slot 0 is free again.
        let first = store
            .acquire(&ns, &CONFIG, &request("first"))
            .await
            .unwrap();
        store.release(&first.lease, None).await.unwrap();
        put_raw_row(&url, &ns, values).await;
        let err = store
            .acquire(&ns, &CONFIG, &request("a"))
            .await
            .unwrap_err();
        match &err {
            StoreError::Corrupt {
                store: "mysql",
                detail,
                ..
            } => {
                assert!(detail.contains(expected), "{expected}: {err}")
            }
            other => panic!("{expected}: expected Corrupt, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn require_ssl_never_falls_back_to_plaintext() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    // The test server speaks no TLS: a store told to require it must refuse to talk rather than downgrade.
    let sep = if url.contains('?') { '&' } else { '?' };
    let store = MysqlStore::open(&format!("{url}{sep}require_ssl=true"))
        .await
        .unwrap();
    let err = store
        .acquire(&fresh("tls"), &CONFIG, &request("a"))
        .await
        .unwrap_err();
    // An answer, not an outage: a runtime fails at once instead of retrying for its whole acquire timeout.
    assert!(
        matches!(err, StoreError::Generic { store: "mysql", .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("SSL"), "{err}");
}

#[tokio::test]
async fn wrong_credentials_are_an_answer_not_an_outage() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let parsed = url::Url::parse(&url).unwrap();
    let mut bad = parsed.clone();
    bad.set_password(Some("wrong-pw-123")).unwrap();
    let err = MysqlStore::open(bad.as_str())
        .await
        .unwrap()
        .acquire(&fresh("auth"), &CONFIG, &request("a"))
        .await
        .unwrap_err();
    assert!(!err.is_retryable(), "{err:?}");
    assert!(!err.to_string().contains("wrong-pw-123"), "{err}");
}

#[tokio::test]
async fn durability_names_each_setting_that_loses_commits() {
    let Some(t) = target().await else { return };
    let pool = mysql_async::Pool::new(t.url.as_str());
    let mut conn = pool.get_conn().await.unwrap();
    let (flush, sync_binlog, log_bin): (String, String, String) = conn
        .query_first(
            "SELECT CAST(@@innodb_flush_log_at_trx_commit AS CHAR), CAST(@@sync_binlog AS CHAR), \
             CAST(@@log_bin AS CHAR)",
        )
        .await
        .unwrap()
        .unwrap();
    drop(conn);
    pool.disconnect().await.unwrap();
    // The server's global settings are not the test's to change: check what it reports against what it has.
    let mut expected = Vec::new();
    if flush != "1" {
        expected.push(("innodb_flush_log_at_trx_commit".to_string(), flush));
    }
    if log_bin == "1" && sync_binlog != "1" {
        expected.push(("sync_binlog".to_string(), sync_binlog));
    }
    let found: Vec<(String, String)> = t
        .store
        .durability()
        .await
        .unwrap()
        .into_iter()
        .map(|f| {
            assert_eq!((f.store, f.expected.as_str()), ("mysql", "1"), "{f}");
            (f.setting, f.value)
        })
        .collect();
    assert_eq!(found, expected);
}

// ---------------------------------------------------------------------------------------------------------------
// The acquire's candidate rows and `lowest_unused`: hints that must never change a decision.

/// The store's query for an acquisition's candidate rows.
const CANDIDATES_SQL: &str = include_str!("../src/store/mysql/candidates.sql");

/// The same random calls on a namespace that keeps `lowest_unused` and on one whose `lowest_unused` is reset
/// before every call (so each of its acquires reads every row).
#[tokio::test]
async fn acquires_on_candidate_rows_decide_as_reading_every_row_does() {
    let Some(t) = target().await else { return };
    // One connection for every reset: a call must take a few milliseconds (see the check's timing).
    let conn = Arc::new(tokio::sync::Mutex::new(raw(&t.url).await));
    hints::hints_never_change_a_decision(t.store.clone(), move |full| {
        let conn = conn.clone();
        async move {
            conn.lock()
                .await
                .exec_drop(
                    "UPDATE cosid_namespace SET lowest_unused = NULL WHERE name = ?",
                    (full.encoded(),),
                )
                .await
                .unwrap();
        }
    })
    .await;
}

/// Random namespaces written with their `lowest_unused`, then one acquire each: the store's answer is the protocol's
/// decision on every row.
#[tokio::test]
async fn acquires_on_candidate_rows_decide_as_the_protocol_on_every_row() {
    let Some(t) = target().await else { return };
    let url = t.url.clone();
    hints::hinted_acquires_decide_as_the_protocol_on_every_row(
        t.store.clone(),
        300,
        3,
        move |ns, rows, unused| {
            let url = url.clone();
            async move { put_hinted(&url, &ns, &rows, unused, 3).await }
        },
    )
    .await;
}

/// A `lowest_unused` that names a slot with a row (written by a version that did not keep it) is caught: the
/// acquire reads every row, takes the true lowest unused slot, and sets `lowest_unused` right.
#[tokio::test]
async fn a_lowest_unused_that_names_a_used_slot_is_caught_and_set_right() {
    let Some(t) = target().await else { return };
    let ns = fresh("mysql-hint-stale");
    let a = t
        .store
        .acquire(&ns, &CONFIG, &request("a"))
        .await
        .unwrap()
        .lease;
    let b = t
        .store
        .acquire(&ns, &CONFIG, &request("b"))
        .await
        .unwrap()
        .lease;
    assert_eq!((a.slot, b.slot), (0, 1));
    let mut conn = raw(&t.url).await;
    let hint = "SELECT lowest_unused FROM cosid_namespace WHERE name = ?";
    let read: Option<i64> = conn.exec_first(hint, (ns.encoded(),)).await.unwrap();
    assert_eq!(read, Some(2));
    conn.exec_drop(
        "UPDATE cosid_namespace SET lowest_unused = 1 WHERE name = ?",
        (ns.encoded(),),
    )
    .await
    .unwrap();
    let c = t
        .store
        .acquire(&ns, &CONFIG, &request("c"))
        .await
        .unwrap()
        .lease;
    assert_eq!((c.slot, c.fence), (2, 1), "slot 1 is held by b");
    let read: Option<i64> = conn.exec_first(hint, (ns.encoded(),)).await.unwrap();
    assert_eq!(read, Some(3));
    conn.disconnect().await.unwrap();
}

/// Each part of the candidate query reads through an index: run in a namespace of 2,048 rows (with MariaDB's
/// `ANALYZE`, which reports the rows each step read), no step reads more than a handful (an index that does not
/// fit a part shows as a scan of the namespace's rows).
#[tokio::test]
async fn the_candidate_query_reads_through_indexes() {
    let Some(t) = target().await else { return };
    let ns = fresh("mysql-plan");
    t.store
        .acquire(&ns, &CONFIG, &request("first"))
        .await
        .unwrap();
    let mut conn = raw(&t.url).await;
    conn.exec_drop(
        "INSERT INTO cosid_slot (namespace, slot, owner_key, incarnation, last_owner_key, fence, expires_at,
         floor, ceiling, next_floor)
         WITH RECURSIVE s (n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n < 63)
         SELECT ?, a.n * 64 + b.n, CONCAT('k', a.n * 64 + b.n), '00000000-0000-4000-8000-000000000000',
                CONCAT('k', a.n * 64 + b.n), 1, 9000000000000000, 0, 9000000000000000, 9000000000000000
         FROM s a CROSS JOIN s b WHERE a.n * 64 + b.n BETWEEN 1 AND 2047",
        (ns.encoded(),),
    )
    .await
    .unwrap();
    conn.query_drop("ANALYZE TABLE cosid_slot").await.unwrap();
    let name = format!("'{}'", ns.encoded());
    let params = [
        &name, "'k7'", &name, "'k7'", &name, "5", "2048", &name, &name, "2", &name, "1", &name,
        "1", "2", &name,
    ];
    let mut query = String::new();
    let mut parts = CANDIDATES_SQL
        .lines()
        .filter(|l| !l.starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    for p in params {
        let at = parts.find('?').unwrap();
        query.push_str(&parts[..at]);
        query.push_str(p);
        parts = parts[at + 1..].to_string();
    }
    query.push_str(&parts);
    assert!(!query.contains('?'));
    let plan: Vec<mysql_async::Row> = conn.query(format!("ANALYZE {query}")).await.unwrap();
    let mut shown = Vec::new();
    let mut most = 0f64;
    for row in &plan {
        let table: Option<String> = row.get_opt(2).and_then(Result::ok).flatten();
        let kind: Option<String> = row.get_opt(3).and_then(Result::ok).flatten();
        let read: Option<f64> = row.get_opt(9).and_then(Result::ok).flatten();
        shown.push(format!("{table:?} {kind:?} read {read:?}"));
        if table.as_deref() == Some("cosid_slot") {
            most = most.max(read.unwrap_or(0.0));
        }
    }
    let shown = shown.join("\n");
    assert!(shown.contains("cosid_slot"), "{shown}");
    assert!(
        most < 64.0,
        "a part of the query scans the namespace:\n{shown}"
    );
    conn.disconnect().await.unwrap();
}

/// A `lowest_unused` that says every slot has a row (as rows deleted by hand leave it) is checked before a refusal
/// and set right: it used to refuse every start for good.
#[tokio::test]
async fn a_lowest_unused_that_says_the_namespace_is_full_is_checked_before_a_refusal() {
    let Some(t) = target().await else { return };
    let url = t.url.clone();
    hints::a_hint_that_says_no_slot_is_unused_is_checked(
        t.store.clone(),
        "mysql-hint-full",
        |ns| async move {
            raw(&url)
                .await
                .exec_drop(
                    "UPDATE cosid_namespace SET lowest_unused = 8 WHERE name = ?",
                    (ns.encoded(),),
                )
                .await
                .unwrap();
        },
    )
    .await;
}
