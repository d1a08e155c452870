//! The PostgreSQL store against a real server: set `COSID_TEST_POSTGRES_URL`
//! (`eval "$(bash .ci/services/postgres.sh)"` starts one); without it the tests that need a server print why they
//! are skipped.
#![cfg(feature = "postgres")]

#[path = "targets/hints.rs"]
mod hints;
#[path = "targets/postgres.rs"]
mod target;

use cosid::conformance;

use conformance::{fresh, CONFIG, LONG_TTL_MS};
use cosid::lease::Owner;
use cosid::store::{LeaseStore, PostgresStore, StoreError, StoreUrl};
use std::sync::Arc;
use target::{connect, raw_client, target, Postgres, SCRIPT, URL_VAR};

/// The store's query for an acquisition's candidate rows.
const CANDIDATES_SQL: &str = include_str!("../src/store/sql_view/candidates.sql");

fn request(key: &str) -> cosid::lease::AcquireRequest {
    cosid::lease::AcquireRequest {
        owner: Owner::new(key),
        ttl_ms: LONG_TTL_MS,
        preferred_slot: None,
    }
}

conformance::conformance_tests!(target());

async fn connect_owned(url: String) -> Postgres {
    connect(&url).await
}

conformance::runtime_tests! {
    kind: "postgres",
    url: conformance::server_url(URL_VAR, SCRIPT),
    target: connect_owned,
    // Port 1 on loopback: nothing listens there.
    unreachable: "postgres://cosid:cosid@127.0.0.1:1/cosid_test",
    shown: "127.0.0.1:1/cosid_test",
}

// ---------------------------------------------------------------------------------------------------------------
// PostgreSQL-specific checks.

/// `url` with `-c name=value` server options for the session.
fn with_options(url: &str, options: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    let encoded: String = options
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("{url}{sep}options={encoded}")
}

#[tokio::test]
async fn rows_that_do_not_decode_are_refused_never_read_as_absent() {
    let Some(t) = target().await else { return };
    let slot_cases = [
        (
            "bad-uuid",
            "UPDATE cosid_slot SET incarnation = 'not-a-uuid'",
            "is not a UUID",
        ),
        (
            "no-incarnation",
            "UPDATE cosid_slot SET incarnation = NULL",
            "both set or both empty",
        ),
        (
            "no-key",
            "UPDATE cosid_slot SET owner_key = NULL",
            "both set or both empty",
        ),
        (
            "negative-fence",
            "UPDATE cosid_slot SET fence = -1",
            "fence is negative",
        ),
        (
            "negative-floor",
            "UPDATE cosid_slot SET floor = -5",
            "floor is negative",
        ),
    ];
    for (label, update, detail) in slot_cases {
        let ns = fresh(label);
        let lease = conformance::acquire(&t, &ns, &Owner::new("a"), LONG_TTL_MS)
            .await
            .lease;
        t.raw
            .execute(&format!("{update} WHERE namespace = $1"), &[&ns.encoded()])
            .await
            .unwrap();
        let b = conformance::request(&Owner::new("b"), LONG_TTL_MS);
        conformance::assert_corrupt(
            t.store.acquire(&ns, &CONFIG, &b).await,
            detail,
            &format!("{label}: acquire"),
        );
        conformance::assert_corrupt(
            t.store
                .renew(&lease, LONG_TTL_MS, CONFIG.tolerance_ms)
                .await,
            detail,
            &format!("{label}: renew"),
        );
        conformance::assert_corrupt(
            t.store.inspect(&ns).await,
            detail,
            &format!("{label}: inspect"),
        );
    }
    let ns_cases = [
        (
            "bits-99",
            "UPDATE cosid_namespace SET bits = 99",
            "bits 99 is not 1 to 31",
        ),
        (
            "bits-0",
            "UPDATE cosid_namespace SET bits = 0",
            "bits 0 is not 1 to 31",
        ),
        (
            "negative-tolerance",
            "UPDATE cosid_namespace SET tolerance_ms = -1",
            "tolerance_ms is negative",
        ),
    ];
    for (label, update, detail) in ns_cases {
        let ns = fresh(label);
        let lease = conformance::acquire(&t, &ns, &Owner::new("a"), LONG_TTL_MS)
            .await
            .lease;
        t.raw
            .execute(&format!("{update} WHERE name = $1"), &[&ns.encoded()])
            .await
            .unwrap();
        conformance::assert_corrupt(
            t.store
                .renew(&lease, LONG_TTL_MS, CONFIG.tolerance_ms)
                .await,
            detail,
            &format!("{label}: renew"),
        );
        conformance::assert_corrupt(
            t.store.release(&lease, None).await,
            detail,
            &format!("{label}: release"),
        );
    }
    // A namespace row deleted under a held lease: written before any slot and never deleted, so lost writes.
    let ns = fresh("gone");
    let lease = conformance::acquire(&t, &ns, &Owner::new("a"), LONG_TTL_MS)
        .await
        .lease;
    t.raw
        .execute(
            "DELETE FROM cosid_namespace WHERE name = $1",
            &[&ns.encoded()],
        )
        .await
        .unwrap();
    conformance::assert_regression(
        t.store
            .renew(&lease, LONG_TTL_MS, CONFIG.tolerance_ms)
            .await,
        "the record of namespace",
        "gone: renew",
    );
    conformance::assert_regression(
        t.store.release(&lease, None).await,
        "the record of namespace",
        "gone: release",
    );
}

#[tokio::test]
async fn the_schema_is_made_on_first_use_or_by_init_even_by_many_at_once() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let raw = raw_client(&url).await;
    let tables = |schema: String| {
        let raw = &raw;
        async move {
            let n: i64 = raw
                .query_one(
                    "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1
                     AND table_name IN ('cosid_namespace', 'cosid_slot')",
                    &[&schema],
                )
                .await
                .unwrap()
                .get(0);
            n
        }
    };
    let schemas: Vec<String> = (0..2)
        .map(|i| format!("cosid_test_{i}_{}", uuid::Uuid::new_v4().simple()))
        .collect();
    for s in &schemas {
        raw.batch_execute(&format!("CREATE SCHEMA {s}"))
            .await
            .unwrap();
    }
    // First use: an acquire in an empty schema creates the tables.
    let first = PostgresStore::open(&with_options(
        &url,
        &format!("-c search_path={}", schemas[0]),
    ))
    .unwrap();
    assert_eq!(tables(schemas[0].clone()).await, 0);
    let got = first
        .acquire(
            &fresh("schema"),
            &CONFIG,
            &conformance::request(&Owner::new("a"), LONG_TTL_MS),
        )
        .await
        .unwrap();
    assert_eq!(got.lease.slot, 0);
    assert_eq!(tables(schemas[0].clone()).await, 2);
    // `cosid init`, from eight stores at once: the advisory lock keeps CREATE TABLE from racing with itself.
    let scoped = with_options(&url, &format!("-c search_path={}", schemas[1]));
    let inits: Vec<_> = (0..8)
        .map(|_| {
            let scoped = scoped.clone();
            tokio::spawn(async move { PostgresStore::open(&scoped).unwrap().init().await })
        })
        .collect();
    for i in inits {
        i.await.unwrap().expect("concurrent init");
    }
    assert_eq!(tables(schemas[1].clone()).await, 2);
    for s in &schemas {
        raw.batch_execute(&format!("DROP SCHEMA {s} CASCADE"))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn opens_through_store_urls_with_either_scheme() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    for url in [url.clone(), url.replacen("postgres://", "postgresql://", 1)] {
        let store = cosid::store::open(
            &StoreUrl::parse(&url).unwrap(),
            Arc::new(cosid::clock::SystemClock),
        )
        .await
        .unwrap();
        assert_eq!(store.kind(), "postgres");
        let got = store
            .acquire(
                &fresh("url"),
                &CONFIG,
                &conformance::request(&Owner::new("a"), LONG_TTL_MS),
            )
            .await
            .unwrap();
        assert_eq!(got.lease.slot, 0);
    }
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable_and_the_password_is_never_printed() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let store = PostgresStore::open(&format!(
        "postgres://cosid:s3cret-pw@127.0.0.1:{port}/cosid"
    ))
    .unwrap();
    assert!(!format!("{store:?}").contains("s3cret-pw"));
    let err = store
        .acquire(
            &fresh("down"),
            &CONFIG,
            &conformance::request(&Owner::new("a"), LONG_TTL_MS),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Unavailable {
                store: "postgres",
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    assert!(!text.contains("s3cret-pw"), "{text}");
}

#[tokio::test]
async fn wrong_credentials_are_an_answer_not_an_outage() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let mut config: tokio_postgres::Config = url.parse().unwrap();
    config.password("wrong-pw");
    let host = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        #[cfg(unix)]
        tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
    };
    let bad = format!(
        "postgres://{}:wrong-pw@{host}:{}/{}",
        config.get_user().unwrap(),
        config.get_ports()[0],
        config.get_dbname().unwrap()
    );
    let err = PostgresStore::open(&bad)
        .unwrap()
        .acquire(
            &fresh("auth"),
            &CONFIG,
            &conformance::request(&Owner::new("a"), LONG_TTL_MS),
        )
        .await
        .unwrap_err();
    assert!(!err.is_retryable(), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("28P01") || text.contains("password"),
        "{text}"
    );
    assert!(!text.contains("wrong-pw"), "{text}");
}

#[tokio::test]
async fn settings_warnings_name_an_unsafe_synchronous_commit() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let safe = PostgresStore::open(&url)
        .unwrap()
        .settings_warnings()
        .await
        .unwrap();
    assert!(
        safe.is_empty(),
        "the test server runs with synchronous_commit on: {safe:?}"
    );
    let unsafe_url = with_options(&url, "-c synchronous_commit=off");
    let warnings = PostgresStore::open(&unsafe_url)
        .unwrap()
        .settings_warnings()
        .await
        .unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("synchronous_commit = off"),
        "{warnings:?}"
    );
}

/// The `STORE_UNSAFE` events a runtime on `url` gives its listeners by the end of its start.
fn unsafe_events_at_start(url: &str) -> Vec<cosid::Event> {
    let events = conformance::Recorder::default();
    let rt = cosid::Runtime::builder()
        .store(url)
        .namespace(format!("durability-{}", uuid::Uuid::new_v4()))
        .subscribe(events.listener())
        .build()
        .unwrap();
    rt.shutdown();
    events
        .all()
        .into_iter()
        .filter(|e| e.name() == "STORE_UNSAFE")
        .collect()
}

#[test]
fn a_runtime_whose_sessions_commit_asynchronously_reports_it_as_an_event() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    assert!(
        unsafe_events_at_start(&url).is_empty(),
        "the test server runs with synchronous_commit on"
    );
    // A session setting, as a role or database default (`ALTER ROLE ... SET synchronous_commit = off`) would give
    // every session of the pool.
    let found = unsafe_events_at_start(&with_options(&url, "-c synchronous_commit=off"));
    assert_eq!(
        found,
        vec![cosid::Event::StoreUnsafe {
            store: "postgres".into(),
            setting: "synchronous_commit".into(),
            value: "off".into(),
            expected: "on".into(),
        }]
    );
}

// ---------------------------------------------------------------------------------------------------------------
// The acquire's candidate rows and `lowest_unused`: hints that must never change a decision.

/// The same random calls on a namespace that keeps `lowest_unused` and on one whose `lowest_unused` is reset
/// before every call (so each of its acquires reads every row).
#[tokio::test]
async fn acquires_on_candidate_rows_decide_as_reading_every_row_does() {
    let Some(t) = target().await else { return };
    let raw = Arc::new(t.raw);
    hints::hints_never_change_a_decision(t.store.clone(), move |full| {
        let raw = raw.clone();
        async move {
            raw.execute(
                "UPDATE cosid_namespace SET lowest_unused = NULL WHERE name = $1",
                &[&full.encoded()],
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
    let t = Arc::new(t);
    let raw = t.clone();
    hints::hinted_acquires_decide_as_the_protocol_on_every_row(
        t.store.clone(),
        300,
        3,
        move |ns, rows, unused| {
            let raw = raw.clone();
            async move { raw.put_hinted(&ns, &rows, unused, 3).await }
        },
    )
    .await;
}

/// A `lowest_unused` that names a slot with a row (written by a version that did not keep it) is caught: the
/// acquire reads every row, takes the true lowest unused slot, and sets `lowest_unused` right.
#[tokio::test]
async fn a_lowest_unused_that_names_a_used_slot_is_caught_and_set_right() {
    let Some(t) = target().await else { return };
    let ns = fresh("pg-hint-stale");
    let store = t.store.clone();
    let a = store
        .acquire(&ns, &CONFIG, &request("a"))
        .await
        .unwrap()
        .lease;
    let b = store
        .acquire(&ns, &CONFIG, &request("b"))
        .await
        .unwrap()
        .lease;
    assert_eq!((a.slot, b.slot), (0, 1));
    assert_eq!(lowest_unused(&t.raw, &ns).await, Some(2));
    t.raw
        .execute(
            "UPDATE cosid_namespace SET lowest_unused = 1 WHERE name = $1",
            &[&ns.encoded()],
        )
        .await
        .unwrap();
    let c = store
        .acquire(&ns, &CONFIG, &request("c"))
        .await
        .unwrap()
        .lease;
    assert_eq!((c.slot, c.fence), (2, 1), "slot 1 is held by b");
    assert_eq!(lowest_unused(&t.raw, &ns).await, Some(3));
}

async fn lowest_unused(raw: &tokio_postgres::Client, ns: &cosid::lease::Namespace) -> Option<i64> {
    raw.query_one(
        "SELECT lowest_unused FROM cosid_namespace WHERE name = $1",
        &[&ns.encoded()],
    )
    .await
    .unwrap()
    .get(0)
}

/// Each part of the candidate query reads through an index: run in a namespace of 2,048 rows, its plan has no
/// sequential scan of `cosid_slot` and its index scans pass over almost no rows (an index that does not fit a
/// part shows as an index scan that filters the namespace's rows one by one).
#[tokio::test]
async fn the_candidate_query_reads_through_indexes() {
    let Some(t) = target().await else { return };
    let ns = fresh("pg-plan");
    t.store
        .acquire(&ns, &CONFIG, &request("first"))
        .await
        .unwrap();
    t.raw
        .execute(
            "INSERT INTO cosid_slot (namespace, slot, owner_key, incarnation, last_owner_key, fence, expires_at,
             floor, ceiling, next_floor)
             SELECT $1, s, 'k' || s, '00000000-0000-4000-8000-000000000000', 'k' || s, 1, 9e15, 0, 9e15, 9e15
             FROM generate_series(1, 2047) AS s",
            &[&ns.encoded()],
        )
        .await
        .unwrap();
    t.raw.execute("ANALYZE cosid_slot", &[]).await.unwrap();
    // Both the plan made for the parameters and the generic plan a prepared statement switches to after a few runs.
    for mode in ["force_custom_plan", "force_generic_plan"] {
        // A prepared statement, as the store's cached ones are (an EXPLAIN is planned with its parameters).
        t.raw
            .batch_execute(&format!(
                "SET plan_cache_mode = {mode};
                 PREPARE candidates (text, text, int8, int8, int8, int8) AS {CANDIDATES_SQL}"
            ))
            .await
            .unwrap();
        let explain = format!(
            "EXPLAIN (ANALYZE, COSTS OFF) EXECUTE candidates('{}', 'k7', 5, 2048, 1, 2)",
            ns.encoded()
        );
        let plan: Vec<String> = t
            .raw
            .simple_query(&explain)
            .await
            .unwrap()
            .into_iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                _ => None,
            })
            .collect();
        t.raw.batch_execute("DEALLOCATE candidates").await.unwrap();
        let plan = plan.join("\n");
        assert!(!plan.contains("Seq Scan"), "{mode}: {plan}");
        let passed_over: u64 = plan
            .lines()
            .filter_map(|l| l.trim().strip_prefix("Rows Removed by Filter: "))
            .map(|n| n.parse::<u64>().unwrap())
            .sum();
        assert!(
            passed_over < 64,
            "{mode}: {passed_over} rows passed over:\n{plan}"
        );
    }
    t.raw.batch_execute("RESET plan_cache_mode").await.unwrap();
}

/// A `lowest_unused` that says every slot has a row (as rows deleted by hand leave it) is checked before a refusal
/// and set right: it used to refuse every start for good.
#[tokio::test]
async fn a_lowest_unused_that_says_the_namespace_is_full_is_checked_before_a_refusal() {
    let Some(t) = target().await else { return };
    let raw = &t.raw;
    hints::a_hint_that_says_no_slot_is_unused_is_checked(
        t.store.clone(),
        "pg-hint-full",
        |ns| async move {
            raw.execute(
                "UPDATE cosid_namespace SET lowest_unused = 8 WHERE name = $1",
                &[&ns.encoded()],
            )
            .await
            .unwrap();
        },
    )
    .await;
}
