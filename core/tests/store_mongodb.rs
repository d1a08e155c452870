//! The MongoDB store against a real server that speaks MongoDB's wire protocol.
//!
//! - The conformance suite, the runtime cases and the MongoDB-specific checks run on the server in
//!   `COSID_TEST_MONGODB_URL` (`eval "$(bash .ci/services/ferretdb.sh)"` starts one: FerretDB 1.x over SQLite, as
//!   no MongoDB server is packaged here; docs/stores.md says what that proves); without it they print why they
//!   are skipped. The store clock is the server's.
//! - The restart test starts a FerretDB of its own (the binary in `COSID_FERRETDB_BIN`, which the script sets) on a
//!   free port of 127.0.0.1 in a temporary folder, kills it and starts it again on the same data.
#![cfg(feature = "mongodb")]

#[path = "targets/mongodb.rs"]
mod target;

#[path = "targets/hints.rs"]
mod hints;

use cosid::conformance;

use conformance::CONFIG;
use cosid::lease::{AcquireRequest, Namespace, Owner};
use cosid::store::{LeaseStore, MongoStore, StoreError, StoreUrl};
use mongodb::bson::{doc, Document};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use target::{
    connect, namespace_id, raw_collection, slot_document, slot_id, target, unused_id, Mongo,
    SCRIPT, URL_VAR,
};

conformance::conformance_tests!(target());

async fn connect_owned(url: String) -> Mongo {
    connect(&url).await
}

conformance::runtime_tests! {
    kind: "mongodb",
    url: conformance::server_url(URL_VAR, SCRIPT),
    target: connect_owned,
    // Port 1 on loopback: nothing listens there.
    unreachable: "mongodb://127.0.0.1:1/cosid_test",
    shown: "127.0.0.1:1",
}

// ---------------------------------------------------------------------------------------------------------------
// What is particular to MongoDB.

fn request(key: &str) -> AcquireRequest {
    AcquireRequest {
        owner: Owner::new(key),
        ttl_ms: 30_000,
        preferred_slot: None,
    }
}

#[tokio::test]
async fn refuses_bad_urls_and_names_what_to_write() {
    for (bad, says) in [
        ("mongodb+srv://cluster.example/ids", "list the hosts"),
        ("mongodb://", "expected mongodb://"),
        ("mongodb://a,,b/ids", "expected mongodb://"),
        ("mongodb://a:notaport/ids", ""),
    ] {
        let err = match StoreUrl::parse(bad) {
            Err(e) => e,
            Ok(url) => cosid::store::open(&url, Arc::new(cosid::clock::SystemClock))
                .await
                .unwrap_err(),
        };
        match &err {
            StoreError::InvalidUrl { reason, .. } => {
                assert!(reason.contains(says), "{bad}: {reason}")
            }
            other => panic!("{bad}: expected InvalidUrl, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable_and_the_password_is_never_printed() {
    let url = "mongodb://ids:s3cret-pw@127.0.0.1:1/ids?serverSelectionTimeoutMS=500";
    let store = MongoStore::open(url).await.unwrap();
    assert!(!format!("{store:?}").contains("s3cret-pw"), "{store:?}");
    assert_eq!(
        StoreUrl::parse(url).unwrap().to_string(),
        "mongodb://ids:***@127.0.0.1:1/ids?serverSelectionTimeoutMS=500"
    );
    let ns = conformance::fresh("down");
    let err = store
        .acquire(&ns, &CONFIG, &request("a"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Unavailable {
                store: "mongodb",
                ..
            }
        ),
        "{err:?}"
    );
    for shown in [err.to_string(), format!("{err:?}")] {
        assert!(!shown.contains("s3cret-pw"), "{shown}");
    }
}

#[tokio::test]
async fn opens_through_a_store_url() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let store = cosid::store::open(
        &StoreUrl::parse(&url).unwrap(),
        Arc::new(cosid::clock::SystemClock),
    )
    .await
    .unwrap();
    assert_eq!(store.kind(), "mongodb");
    store.init().await.unwrap();
    let got = store
        .acquire(&conformance::fresh("open"), &CONFIG, &request("a"))
        .await
        .unwrap();
    assert_eq!(got.lease.slot, 0);
}

/// The store clock is the server's: every `store_now` lies between two readings of the server's `localTime`.
#[tokio::test]
async fn the_store_clock_is_the_servers_clock() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let t = connect(&url).await;
    let client = mongodb::Client::with_uri_str(&url).await.unwrap();
    let server_time = || async {
        let reply = client
            .database("admin")
            .run_command(doc! { "hello": 1 })
            .await
            .unwrap();
        reply.get_datetime("localTime").unwrap().timestamp_millis() as u64
    };
    let before = server_time().await;
    let lease = t
        .store
        .acquire(&conformance::fresh("clock"), &CONFIG, &request("a"))
        .await
        .unwrap()
        .lease;
    let after = server_time().await;
    assert!(
        before <= lease.store_now && lease.store_now <= after,
        "store_now {} outside the server's [{before}, {after}]",
        lease.store_now
    );
    assert_eq!(lease.expires_at, lease.store_now + 30_000);
}

#[tokio::test]
async fn records_are_documents_in_one_collection_with_a_rev_raised_by_every_write() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let t = connect(&url).await;
    let ns = Namespace::new(format!("a/b {{x}}:é.-{}", uuid::Uuid::new_v4().simple())).unwrap();
    let lease = t
        .store
        .acquire(&ns, &CONFIG, &request("a"))
        .await
        .unwrap()
        .lease;
    let slot = t
        .raw
        .find_one(doc! { "_id": slot_id(&ns, 0) })
        .await
        .unwrap()
        .expect("slot 0's document");
    assert_eq!(slot.get_str("ns").unwrap(), ns.encoded());
    assert_eq!(slot.get_i64("slot").unwrap(), 0);
    assert_eq!(slot.get_i64("rev").unwrap(), 1);
    assert_eq!(slot.get_i64("fence").unwrap(), lease.fence as i64);
    assert_eq!(slot.get_i64("expires_at").unwrap(), lease.expires_at as i64);
    let owner = slot.get_document("owner").unwrap();
    assert_eq!(owner.get_str("key").unwrap(), "a");
    let namespace = t
        .raw
        .find_one(doc! { "_id": namespace_id(&ns) })
        .await
        .unwrap()
        .expect("the namespace's document");
    assert_eq!(namespace.get_i64("bits").unwrap(), 5);
    assert!(namespace.get_str("layout").is_ok(), "{namespace}");
    t.store.renew(&lease, 30_000, 1_000).await.unwrap();
    let renewed = t
        .raw
        .find_one(doc! { "_id": slot_id(&ns, 0) })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(renewed.get_i64("rev").unwrap(), 2);
    // The encoded name holds no `/`: no other namespace's slot ids lie in this one's range.
    assert!(!ns.encoded().contains('/'));
}

#[tokio::test]
async fn undecodable_documents_and_stray_ids_are_corrupt_never_absent() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let t = connect(&url).await;
    type Edit = fn(&mut Document);
    // (what the error says, the slot planted, whether `inspect` (a query on `ns`) sees it, the edit)
    let cases: Vec<(&str, u32, bool, Edit)> = vec![
        ("fence is 1.5", 3, true, |d| {
            d.insert("fence", 1.5_f64);
        }),
        ("fence is missing", 3, true, |d| {
            d.remove("fence");
        }),
        ("expected a non-negative integer", 3, true, |d| {
            d.insert("floor", -1_i64);
        }),
        ("not a UUID", 3, true, |d| {
            d.insert("owner", doc! { "key": "k", "incarnation": "nope" });
        }),
        ("rev is", 3, true, |d| {
            d.insert("rev", "x");
        }),
        ("slot is", 3, true, |d| {
            d.insert("slot", 4_i64);
        }),
        ("unexpected document", 3, true, |d| {
            let id = d.get_str("_id").unwrap().replace("/3", "/03");
            d.insert("_id", id);
        }),
        // Under another namespace's name, the query on `ns` does not return it; the acquisition that would take
        // slot 1 meets it when it writes, and refuses it.
        ("ns is", 1, false, |d| {
            d.insert("ns", "another");
            d.insert("expires_at", 0_i64);
        }),
    ];
    for (expected, slot, seen, edit) in cases {
        let ns = conformance::fresh("corrupt");
        t.store
            .acquire(&ns, &CONFIG, &request("first"))
            .await
            .unwrap();
        let mut planted = doc! {
            "_id": slot_id(&ns, slot), "ns": ns.encoded(), "slot": i64::from(slot), "rev": 1_i64,
            "owner": doc! { "key": "k", "incarnation": uuid::Uuid::new_v4().to_string() },
            "last_owner_key": "k", "fence": 1_i64, "expires_at": 20_i64, "floor": 10_i64, "ceiling": 20_i64,
            "next_floor": 20_i64,
        };
        edit(&mut planted);
        t.raw.insert_one(planted).await.unwrap();
        let mut errors = vec![t
            .store
            .acquire(&ns, &CONFIG, &request("a"))
            .await
            .unwrap_err()];
        if seen {
            errors.push(t.store.inspect(&ns).await.unwrap_err());
        }
        for err in errors {
            match &err {
                StoreError::Corrupt {
                    store: "mongodb",
                    detail,
                    ..
                } => assert!(
                    detail.contains(expected),
                    "expected {expected:?}, got {err}"
                ),
                other => panic!("expected Corrupt ({expected}), got {other:?}"),
            }
        }
    }
}

/// A write concern weaker than a majority is reported (the keeper turns findings into `StoreUnsafe` events), and
/// so is a FerretDB 1.x server, whose conditional updates are not atomic.
#[tokio::test]
async fn a_weak_write_concern_and_a_ferretdb_server_are_reported() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let sep = if url.contains('?') { '&' } else { '?' };
    let weak = MongoStore::open(&format!("{url}{sep}w=1&journal=false"))
        .await
        .unwrap();
    let findings = weak.durability().await.unwrap();
    let settings: Vec<(&str, &str)> = findings
        .iter()
        .map(|f| (f.setting.as_str(), f.value.as_str()))
        .collect();
    assert!(settings.contains(&("w", "1")), "{findings:?}");
    assert!(settings.contains(&("journal", "false")), "{findings:?}");
    let default = MongoStore::open(&url).await.unwrap();
    let findings = default.durability().await.unwrap();
    assert!(
        findings.iter().all(|f| f.setting == "server"),
        "the default write concern is a majority: {findings:?}"
    );
    let info = raw_collection(&url)
        .await
        .client()
        .database("admin")
        .run_command(doc! { "buildInfo": 1 })
        .await
        .unwrap();
    let ferretdb = info.get_str("ferretdbVersion").is_ok();
    assert_eq!(
        findings
            .iter()
            .any(|f| f.setting == "server" && f.value.contains("FerretDB")),
        ferretdb,
        "{findings:?}"
    );
}

/// `raise_not_before` on a new namespace makes its record; the first acquirer then starts above it.
#[tokio::test]
async fn a_namespace_made_by_raise_not_before_is_usable_by_the_first_acquirer() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let t = connect(&url).await;
    let ns = conformance::fresh("raised");
    let now = cosid::clock::Clock::now_ms(&cosid::clock::SystemClock);
    let raised = t
        .store
        .raise_not_before(&ns, &CONFIG, now + 5_000)
        .await
        .unwrap();
    assert_eq!(raised.not_before, now + 5_000);
    let got = t
        .store
        .acquire(&ns, &CONFIG, &request("a"))
        .await
        .unwrap()
        .lease;
    assert!(got.floor >= now + 5_000, "{got:?}");
}

// ---------------------------------------------------------------------------------------------------------------
// The keeper against a server that is killed and started again.

/// A FerretDB of the test's own on a free port of 127.0.0.1, over SQLite in a temporary folder; killed when
/// dropped.
struct OwnServer {
    child: Option<Child>,
    bin: String,
    port: u16,
    dir: tempfile::TempDir,
}

impl OwnServer {
    /// Starts one; `None` (after saying why) without `COSID_FERRETDB_BIN`.
    fn start(test: &str) -> Option<OwnServer> {
        let Ok(bin) = std::env::var("COSID_FERRETDB_BIN") else {
            eprintln!(
                "skipped {test}: COSID_FERRETDB_BIN is not set (eval \"$(bash {SCRIPT})\" sets it)"
            );
            return None;
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut server = OwnServer {
            child: None,
            bin,
            port,
            dir: tempfile::tempdir().unwrap(),
        };
        server.launch();
        Some(server)
    }

    fn url(&self) -> String {
        format!("mongodb://127.0.0.1:{}/cosid_restart", self.port)
    }

    /// Starts the server on its port and data folder, and waits until it listens.
    fn launch(&mut self) {
        let data = self.dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let log = std::fs::File::create(self.dir.path().join("ferretdb.log")).unwrap();
        let child = Command::new(&self.bin)
            .arg("--handler=sqlite")
            .arg(format!("--sqlite-url=file:{}/", data.display()))
            .arg(format!("--listen-addr=127.0.0.1:{}", self.port))
            .arg("--debug-addr=127.0.0.1:0")
            .arg("--telemetry=disable")
            .arg("--log-level=warn")
            .arg(format!("--state-dir={}", self.dir.path().display()))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("FerretDB on port {} did not listen within 10 s", self.port);
    }

    /// Kills the server at once, as a crash would.
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        self.kill();
    }
}

impl conformance::Restartable for OwnServer {
    fn url(&self) -> String {
        OwnServer::url(self)
    }

    fn kill(&mut self) {
        OwnServer::kill(self)
    }

    fn restart(&mut self) {
        OwnServer::kill(self);
        self.launch();
    }
}

#[test]
fn a_server_restart_fails_renewals_then_resumes_and_no_id_passes_a_ceiling() {
    let test = "a_server_restart_fails_renewals_then_resumes_and_no_id_passes_a_ceiling";
    let Some(mut server) = OwnServer::start(test) else {
        return;
    };
    conformance::a_server_restart_fails_renewals_then_resumes_and_no_id_passes_a_ceiling(
        &mut server,
        Duration::from_millis(1_500),
    );
}

impl OwnServer {
    /// Stops (SIGSTOP) or resumes (SIGCONT) the server: a hung server, whose connections stay open.
    fn pause(&self, stopped: bool) {
        let pid = self.child.as_ref().expect("running").id();
        let signal = if stopped { "-STOP" } else { "-CONT" };
        let status = Command::new("kill")
            .arg(signal)
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal} {pid}");
    }
}

/// Operations that outlive the store's bound (a hung server, or one too slow under a storm) fail as unavailable,
/// and once the server answers again the same store serves the next ones. The store bounds an operation by
/// dropping the driver's future, which the driver's documentation warns may leave its internals inconsistent;
/// this pins that, with more operations dropped than the pool has connections (some mid-request, some waiting for
/// a connection), the store is not left stuck. (When the fleet harness's storms through FerretDB stalled, a fresh
/// client of another process timed out too: that stall was the server's.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_past_the_bound_on_a_hung_server_leave_the_store_usable() {
    let test = "operations_past_the_bound_on_a_hung_server_leave_the_store_usable";
    let Some(server) = OwnServer::start(test) else {
        return;
    };
    let store = Arc::new(MongoStore::open(&server.url()).await.unwrap());
    store.init().await.unwrap();
    let ns = Namespace::new(format!("hung-{}", uuid::Uuid::new_v4())).unwrap();
    store
        .acquire(&ns, &CONFIG, &request("first"))
        .await
        .unwrap();

    server.pause(true);
    // More operations in flight than the driver's pool has connections (10 by default).
    let hung: Vec<_> = (0..24)
        .map(|i| {
            let (store, ns) = (store.clone(), ns.clone());
            tokio::spawn(async move {
                store
                    .acquire(&ns, &CONFIG, &request(&format!("hung-{i}")))
                    .await
            })
        })
        .collect();
    for task in hung {
        let result = task.await.unwrap();
        assert!(
            matches!(result, Err(StoreError::Unavailable { .. })),
            "an operation on a hung server: {result:?}"
        );
    }
    server.pause(false);

    // The server answers again: within a few tries (each bounded), the same store acquires.
    let mut last = None;
    for _ in 0..6 {
        match store.acquire(&ns, &CONFIG, &request("after")).await {
            Ok(acquired) => {
                let held = store.inspect(&ns).await.unwrap();
                assert!(held.slots.iter().any(|r| r.slot == acquired.lease.slot));
                return;
            }
            Err(e) => last = Some(e),
        }
    }
    panic!("the store stayed stuck after the server resumed: {last:?}");
}

// ---------------------------------------------------------------------------------------------------------------
// The acquisition's candidate documents and the lowest-unused hint: they must never change a decision.

/// A store on `url` that reads the documents of two slots at a time for the lowest unused slot, and one in each
/// "lowest free" read, so that in a test's small namespace each document a decision needs is found only by the
/// read meant to find it.
async fn small_window(url: &str) -> Arc<MongoStore> {
    let store = MongoStore::open(url)
        .await
        .unwrap()
        .with_read_sizes_for_tests(2, 1);
    store.init().await.unwrap();
    Arc::new(store)
}

/// The same random calls on a namespace that keeps its hint and on one whose hint is deleted before every call
/// (so each of its acquisitions looks for the lowest unused slot from slot 0).
#[tokio::test]
async fn acquires_on_candidate_documents_decide_as_without_the_hint() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let raw = raw_collection(&url).await;
    hints::hints_never_change_a_decision(small_window(&url).await, move |full| {
        let raw = raw.clone();
        async move {
            raw.delete_one(doc! { "_id": unused_id(&full) })
                .await
                .unwrap();
        }
    })
    .await;
}

/// Random namespaces written straight into the collection (half with their hint, half with none), then one
/// acquisition each: the store's answer is the protocol's decision on every document.
#[tokio::test]
async fn acquires_on_candidate_documents_decide_as_the_protocol_on_every_document() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let raw = raw_collection(&url).await;
    let mut case = 0;
    hints::hinted_acquires_decide_as_the_protocol_on_every_row(
        small_window(&url).await,
        60,
        // 32 slots: far more documents than the candidate reads return.
        5,
        move |ns, rows, unused| {
            let raw = raw.clone();
            case += 1;
            let hinted = case % 2 == 0;
            async move {
                if !rows.is_empty() {
                    raw.insert_many(rows.iter().map(|r| slot_document(&ns, r, 1)))
                        .await
                        .unwrap();
                }
                if hinted {
                    let hint = unused.map_or(1_i64 << 5, i64::from);
                    raw.insert_one(doc! { "_id": unused_id(&ns), "lowest_unused": hint })
                        .await
                        .unwrap();
                }
            }
        },
    )
    .await;
}

/// The hint rises as slots get their first document; a slot document deleted by hand leaves it above a slot
/// without one, and an acquisition that would find every slot held looks again from slot 0 and takes that slot.
#[tokio::test]
async fn a_hint_above_a_deleted_document_never_makes_a_namespace_exhausted() {
    let Some(t) = target().await else { return };
    let config = cosid::lease::NamespaceConfig { bits: 2, ..CONFIG };
    let ns = Namespace::new(format!("mongo-hint-{}", uuid::Uuid::new_v4())).unwrap();
    for (i, key) in ["a", "b", "c", "d"].into_iter().enumerate() {
        let got = t.store.acquire(&ns, &config, &request(key)).await.unwrap();
        assert_eq!(got.lease.slot, i as u32);
    }
    let hint = t
        .raw
        .find_one(doc! { "_id": unused_id(&ns) })
        .await
        .unwrap()
        .expect("a hint document")
        .get_i64("lowest_unused")
        .unwrap();
    assert_eq!(
        hint, 3,
        "every slot below the last one granted has a document"
    );
    t.raw
        .delete_one(doc! { "_id": slot_id(&ns, 2) })
        .await
        .unwrap();
    let e = t.store.acquire(&ns, &config, &request("e")).await.unwrap();
    assert_eq!((e.lease.slot, e.lease.fence), (2, 1));
    assert!(matches!(
        t.store.acquire(&ns, &config, &request("f")).await,
        Err(StoreError::Exhausted { .. })
    ));
}

/// An acquisition reads the documents its decision depends on, not every document of the namespace: one that
/// none of its reads meets (here a spoiled one below the lowest unused slot, held by another key until long after
/// every other lease) does not stop it, as it did when every acquisition read every document.
#[tokio::test]
async fn an_acquisition_reads_its_candidates_not_every_document() {
    let Some(t) = target().await else { return };
    let config = cosid::lease::NamespaceConfig { bits: 10, ..CONFIG };
    let ns = Namespace::new(format!("mongo-candidates-{}", uuid::Uuid::new_v4())).unwrap();
    let mut last = None;
    for i in 0..10 {
        let got = t
            .store
            .acquire(&ns, &config, &request(&format!("k{i}")))
            .await;
        last = Some(got.unwrap().lease);
    }
    let far = last.unwrap().expires_at + 3_600_000;
    let spoiled = cosid::lease::SlotRecord {
        slot: 3,
        owner: Some(Owner::new("other")),
        last_owner_key: Some("other".into()),
        fence: 0,
        expires_at: far,
        floor: 0,
        ceiling: far + 1_000,
        next_floor: far + 1_000,
    };
    conformance::Target::put_raw(&t, &ns, &spoiled).await;
    let b = t.store.acquire(&ns, &config, &request("b")).await.unwrap();
    assert_eq!(b.lease.slot, 10);
}

/// The lowest free slot whose floor is far ahead is not taken while a higher free one can start now, also when
/// the lowest free documents read first are all far ahead (a read of its own finds the one that can start):
/// released slots, and an expired one below a released one that can start.
#[tokio::test]
async fn a_free_slot_that_can_start_now_is_found_past_free_ones_far_ahead() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let store = small_window(&url).await;
    let raw = raw_collection(&url).await;
    let config = cosid::lease::NamespaceConfig { bits: 3, ..CONFIG };
    let probe = Namespace::new(format!("mongo-ready-{}", uuid::Uuid::new_v4())).unwrap();
    let now = store.inspect(&probe).await.unwrap().store_now;
    let hour = now + 3_600_000;
    // (slot, holder, expires_at, next_floor); every slot not named is held by another key.
    let released = |slot, next_floor| (slot, None, now + 600_000, next_floor);
    let expired = |slot, next_floor| (slot, Some("gone"), now - 10_000, next_floor);
    type Free<'a> = Vec<(u32, Option<&'a str>, u64, u64)>;
    let cases: [(&str, Free, u32); 2] = [
        (
            "released",
            vec![released(0, hour), released(1, now - 1_000)],
            1,
        ),
        (
            "expired",
            vec![
                expired(0, hour),
                expired(2, now - 9_000),
                released(5, now - 1_000),
            ],
            2,
        ),
    ];
    for (label, free, expected) in cases {
        let ns = Namespace::new(format!("mongo-ready-{label}-{}", uuid::Uuid::new_v4())).unwrap();
        store.raise_not_before(&ns, &config, 0).await.unwrap();
        let rows = (0..8).map(|slot| {
            let (owner, expires_at, next_floor) = match free.iter().find(|f| f.0 == slot) {
                Some(&(_, owner, expires_at, next_floor)) => (owner, expires_at, next_floor),
                None => (Some("held"), now + 600_000, now + 601_000),
            };
            cosid::lease::SlotRecord {
                slot,
                owner: owner.map(Owner::new),
                last_owner_key: Some(owner.unwrap_or("x").into()),
                fence: 1,
                expires_at,
                floor: next_floor.min(now - 20_000),
                ceiling: next_floor,
                next_floor,
            }
        });
        raw.insert_many(rows.map(|r| slot_document(&ns, &r, 1)))
            .await
            .unwrap();
        let got = store.acquire(&ns, &config, &request("z")).await.unwrap();
        assert_eq!((got.lease.slot, got.lease.fence), (expected, 2), "{label}");
    }
}
