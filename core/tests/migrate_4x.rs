//! Migration from CosId 4.x: the old layouts are built in real servers, the migration lifts the new namespace's
//! `not_before` past them, and the first new id is later than every old timestamp plus the safe-guard.
//!
//! Runs against the servers in `COSID_TEST_REDIS_URL`, `COSID_TEST_POSTGRES_URL`, `COSID_TEST_MYSQL_URL` (the
//! `.ci/services/*.sh` scripts start them); without one, its test says why it is skipped.
#![cfg(any(feature = "redis", feature = "postgres", feature = "mysql"))]

use cosid::clock::{Clock, SystemClock};
use cosid::generator::Waits;
use cosid::lease::{Namespace, NamespaceConfig};
use cosid::migrate::{self, OldMachine};
use cosid::store::{open, LeaseStore, StoreError, StoreUrl};
use cosid::Runtime;
use std::sync::Arc;
use std::time::Duration;

const SAFE_GUARD: Duration = Duration::from_millis(700);
const CONFIG: NamespaceConfig = NamespaceConfig {
    bits: 10,
    tolerance_ms: 1_000,
    layout: cosid::Layout::millis(),
};

fn url(var: &str) -> Option<String> {
    let url = std::env::var(var).ok().filter(|u| !u.is_empty());
    if url.is_none() {
        println!("skipped: set {var} to run this test against a real server");
    }
    url
}

fn options(not_before_ms: Option<u64>) -> migrate::Options {
    migrate::Options {
        safe_guard: SAFE_GUARD,
        not_before_ms,
    }
}

/// A stamp of `0` (CosId 1.8.x's `machineId|0`, or a row never stamped) is unknown: refused, naming the machine
/// and instance, until the operator gives a time; then `not_before` is at least that time.
fn refuses_the_zero_stamp(machines: Vec<OldMachine>, machine_id: u64, instance: &str) {
    let err = migrate::plan(machines.clone(), &options(None)).unwrap_err();
    match &err {
        migrate::MigrateError::UnknownStamps { machines } => {
            assert_eq!(machines.len(), 1, "{err}");
            assert_eq!(machines[0].machine_id, machine_id);
            assert_eq!(machines[0].last_timestamp_ms, 0);
        }
        other => panic!("not UnknownStamps: {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains(&format!("machine {machine_id}")) && text.contains(instance),
        "{text}"
    );
    let stopped = SystemClock.now_ms() + 60_000;
    let plan = migrate::plan(machines, &options(Some(stopped))).unwrap();
    assert_eq!(plan.not_before, stopped);
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// Old timestamps slightly in the future, so that only a working migration keeps the first new id above them.
fn old_timestamps() -> (u64, u64, u64) {
    let now = SystemClock.now_ms();
    (now + 100, now + 400, now - 60_000)
}

/// Applies the migration to `store` for a new namespace and checks the first id of a runtime on it.
async fn migrate_and_check(store: Arc<dyn LeaseStore>, machines: Vec<OldMachine>, latest: u64) {
    assert_eq!(machines.len(), 3, "{machines:?}");
    let plan = migrate::plan(machines, &options(None)).unwrap();
    assert_eq!(plan.latest_ms, Some(latest));
    assert_eq!(plan.not_before, latest + SAFE_GUARD.as_millis() as u64);
    let ns = Namespace::new(unique("migrated")).unwrap();
    let record = migrate::apply(store.as_ref(), &ns, &CONFIG, &plan)
        .await
        .unwrap();
    assert_eq!(record.not_before, plan.not_before);
    // Never lowered.
    let mut lower = plan.clone();
    lower.not_before -= 1;
    let err = migrate::apply(store.as_ref(), &ns, &CONFIG, &lower)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotBeforeLowered { .. }), "{err}");

    let not_before = plan.not_before;
    let first = tokio::task::spawn_blocking(move || {
        let rt = Runtime::builder()
            .store_instance(store)
            .namespace(ns.as_str())
            .waits(Waits {
                window: Duration::from_secs(5),
                ..Waits::default()
            })
            .build()
            .unwrap();
        assert!(rt.status().floor_ms >= not_before);
        let id = rt.next_id().unwrap();
        rt.layout().decompose(id).unwrap().timestamp_ms
    })
    .await
    .unwrap();
    assert!(
        first > not_before,
        "first new id at {first}, not after not_before {not_before}"
    );
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn from_the_old_redis_layout() {
    use redis::AsyncCommands;
    let Some(url) = url("COSID_TEST_REDIS_URL") else {
        return;
    };
    let old_ns = unique("old{ns}");
    let (t1, t2, t3) = old_timestamps();
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let itc = format!("cosid:{{{old_ns}}}:itc_idx");
    let revert = format!("cosid:{{{old_ns}}}:revert");
    let _: () = conn
        .hset(&itc, "10.0.0.1:8080", format!("3|{t1}"))
        .await
        .unwrap();
    let _: () = conn
        .hset(&itc, "10.0.0.2:8080", format!("4|{t3}"))
        .await
        .unwrap();
    let _: () = conn.hset(&revert, "7", t2.to_string()).await.unwrap();
    let machines = migrate::read_redis(&url, &old_ns).await.unwrap();
    let store = open(&StoreUrl::parse(&url).unwrap(), Arc::new(SystemClock))
        .await
        .unwrap();
    migrate_and_check(store, machines, t2).await;

    // CosId 1.8.x's stamp, written at distribution and never updated.
    let _: () = conn.hset(&itc, "10.0.0.4:8080", "9|0").await.unwrap();
    let machines = migrate::read_redis(&url, &old_ns).await.unwrap();
    refuses_the_zero_stamp(machines, 9, "10.0.0.4:8080");
    let _: () = conn.hdel(&itc, "10.0.0.4:8080").await.unwrap();

    // A damaged entry is an error, never skipped.
    let _: () = conn.hset(&itc, "10.0.0.3:8080", "oops").await.unwrap();
    assert!(matches!(
        migrate::read_redis(&url, &old_ns).await,
        Err(StoreError::Corrupt { .. })
    ));
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn from_the_old_postgres_table() {
    let Some(url) = url("COSID_TEST_POSTGRES_URL") else {
        return;
    };
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    // CosId 4.x's table, as its JDBC machine-id distributor creates it.
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS cosid_machine (
                name            VARCHAR(100) NOT NULL,
                namespace       VARCHAR(100) NOT NULL,
                machine_id      INTEGER      NOT NULL DEFAULT 0,
                last_timestamp  BIGINT       NOT NULL DEFAULT 0,
                instance_id     VARCHAR(100) NOT NULL DEFAULT '',
                distribute_time BIGINT       NOT NULL DEFAULT 0,
                revert_time     BIGINT       NOT NULL DEFAULT 0,
                CONSTRAINT cosid_machine_pk PRIMARY KEY (name)
            )",
        )
        .await
        .unwrap();
    let old_ns = unique("old.ns");
    let (t1, t2, t3) = old_timestamps();
    for (machine, ts, instance) in [
        (1, t1, "10.0.0.1:8080"),
        (2, t2, "10.0.0.2:8080"),
        (3, t3, ""),
    ] {
        client
            .execute(
                "INSERT INTO cosid_machine (name, namespace, machine_id, last_timestamp, instance_id) VALUES ($1, $2, $3, $4, $5)",
                &[&format!("{old_ns}.{machine}"), &old_ns, &machine, &(ts as i64), &instance],
            )
            .await
            .unwrap();
    }
    let machines = migrate::read_postgres(&url, &old_ns).await.unwrap();
    let store = open(&StoreUrl::parse(&url).unwrap(), Arc::new(SystemClock))
        .await
        .unwrap();
    migrate_and_check(store, machines, t2).await;

    // A row whose stamp was never written keeps the column's default, 0.
    client
        .execute(
            "INSERT INTO cosid_machine (name, namespace, machine_id, instance_id) VALUES ($1, $2, 9, '10.0.0.4:8080')",
            &[&format!("{old_ns}.9"), &old_ns],
        )
        .await
        .unwrap();
    let machines = migrate::read_postgres(&url, &old_ns).await.unwrap();
    refuses_the_zero_stamp(machines, 9, "10.0.0.4:8080");
}

#[cfg(feature = "mysql")]
#[tokio::test]
async fn from_the_old_mysql_table() {
    use mysql_async::prelude::Queryable;
    let Some(url) = url("COSID_TEST_MYSQL_URL") else {
        return;
    };
    let mut conn = mysql_async::Conn::new(mysql_async::Opts::from_url(&url).unwrap())
        .await
        .unwrap();
    conn.query_drop(
        "CREATE TABLE IF NOT EXISTS cosid_machine (
            name            VARCHAR(100) NOT NULL COMMENT '{namespace}.{machine_id}',
            namespace       VARCHAR(100) NOT NULL,
            machine_id      INTEGER      NOT NULL DEFAULT 0,
            last_timestamp  BIGINT       NOT NULL DEFAULT 0,
            instance_id     VARCHAR(100) NOT NULL DEFAULT '',
            distribute_time BIGINT       NOT NULL DEFAULT 0,
            revert_time     BIGINT       NOT NULL DEFAULT 0,
            CONSTRAINT cosid_machine_pk PRIMARY KEY (name)
        ) ENGINE = InnoDB",
    )
    .await
    .unwrap();
    let old_ns = unique("old ns");
    let (t1, t2, t3) = old_timestamps();
    for (machine, ts, instance) in [
        (1, t1, "10.0.0.1:8080"),
        (2, t2, "10.0.0.2:8080"),
        (3, t3, ""),
    ] {
        conn.exec_drop(
            "INSERT INTO cosid_machine (name, namespace, machine_id, last_timestamp, instance_id) VALUES (?, ?, ?, ?, ?)",
            (format!("{old_ns}.{machine}"), &old_ns, machine, ts as i64, instance),
        )
        .await
        .unwrap();
    }
    let machines = migrate::read_mysql(&url, &old_ns).await.unwrap();
    let store = open(&StoreUrl::parse(&url).unwrap(), Arc::new(SystemClock))
        .await
        .unwrap();
    migrate_and_check(store, machines, t2).await;

    // A row whose stamp was never written keeps the column's default, 0.
    conn.exec_drop(
        "INSERT INTO cosid_machine (name, namespace, machine_id, instance_id) VALUES (?, ?, 9, '10.0.0.4:8080')",
        (format!("{old_ns}.9"), &old_ns),
    )
    .await
    .unwrap();
    let machines = migrate::read_mysql(&url, &old_ns).await.unwrap();
    refuses_the_zero_stamp(machines, 9, "10.0.0.4:8080");
}
