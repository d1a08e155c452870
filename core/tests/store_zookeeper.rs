//! The ZooKeeper store against real servers.
//!
//! - The conformance suite and the ZooKeeper-specific checks run on the server in `COSID_TEST_ZOOKEEPER_URL`
//!   (`eval "$(bash .ci/services/zookeeper.sh)"` starts one); without it they print why they are skipped. ZooKeeper
//!   has no clock the store reads, so the store clock is the caller's: here a manual clock, which the suite moves
//!   instead of waiting.
//! - The tests that restart a server or turn on authentication start their own ZooKeeper (Debian's `zookeeper`
//!   package) on a free port of 127.0.0.1 in a temporary folder; without it they print why they are skipped.
#![cfg(feature = "zookeeper")]

#[path = "targets/zookeeper.rs"]
mod target;

#[path = "targets/hints.rs"]
mod hints;

use cosid::conformance;

use cosid::clock::{Clock, ManualClock};
use cosid::lease::{AcquireRequest, Namespace, NamespaceConfig, Owner};
use cosid::store::{LeaseStore, StoreError, StoreUrl, ZookeeperStore};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use target::{
    forget_index, hosts, index_entries_of, index_of, namespace_dir, on_host_clock, put_indexed,
    put_raw, target, SCRIPT, URL_VAR,
};
use zookeeper_client::Client;

const JAR: &str = "/usr/share/java/zookeeper.jar";

conformance::conformance_tests!(target());

conformance::runtime_tests! {
    kind: "zookeeper",
    url: conformance::server_url(URL_VAR, SCRIPT),
    target: on_host_clock,
    // Port 1 on loopback: nothing listens there.
    unreachable: "zookeeper://127.0.0.1:1",
    shown: "127.0.0.1:1",
}

// ---------------------------------------------------------------------------------------------------------------
// What is particular to ZooKeeper.

const CONFIG: NamespaceConfig = NamespaceConfig {
    bits: 5,
    tolerance_ms: 1_000,
    layout: cosid::Layout::millis(),
};
const T0: u64 = 1_700_000_000_000;

/// A namespace no earlier run used, so tests can share one server.
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

async fn store(url: &str, clock: &ManualClock) -> ZookeeperStore {
    let store = ZookeeperStore::open(url, Arc::new(clock.clone())).unwrap();
    store.init().await.unwrap();
    store
}

#[test]
fn refuses_bad_urls() {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(T0));
    for bad in [
        "zookeeper://127.0.0.1",
        "zookeeper://127.0.0.1:notaport",
        "zookeeper://:2181",
        "zookeeper://a:2181,,b:2181",
        "zookeeper://a:2181/x//y",
        "zookeeper://a:2181/x/../y",
        "zookeeper://a:2181/x?y=1",
        "zookeeper://nopassword@a:2181",
        "zookeeper://",
    ] {
        match ZookeeperStore::open(bad, clock.clone()) {
            Err(StoreError::InvalidUrl { reason, .. }) => assert!(!reason.is_empty()),
            other => panic!("{bad}: expected InvalidUrl, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_unreachable_ensemble_is_unavailable_and_the_password_is_never_printed() {
    let clock = ManualClock::new(T0);
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    let url = "zookeeper://ids:s3cret-pw@127.0.0.1:1/apps";
    let store = ZookeeperStore::open(url, Arc::new(clock)).unwrap();
    assert!(!format!("{store:?}").contains("s3cret-pw"), "{store:?}");
    let parsed = StoreUrl::parse(url).unwrap();
    assert_eq!(parsed.to_string(), "zookeeper://ids:***@127.0.0.1:1/apps");
    let err = store
        .acquire(&fresh("down"), &CONFIG, &request("a"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Unavailable {
                store: "zookeeper",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!err.to_string().contains("s3cret-pw"), "{err}");
    assert!(!format!("{err:?}").contains("s3cret-pw"), "{err:?}");
}

#[tokio::test]
async fn opens_through_a_store_url() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let store = cosid::store::open(&StoreUrl::parse(&url).unwrap(), Arc::new(clock))
        .await
        .unwrap();
    assert_eq!(store.kind(), "zookeeper");
    store.init().await.unwrap();
    let got = store
        .acquire(&fresh("open"), &CONFIG, &request("a"))
        .await
        .unwrap();
    assert_eq!(got.lease.slot, 0);
}

#[tokio::test]
async fn the_store_clock_is_the_callers_clock() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let store = store(&url, &clock).await;
    let ns = fresh("clock");
    let a = store
        .acquire(&ns, &CONFIG, &request("a"))
        .await
        .unwrap()
        .lease;
    assert_eq!(
        (a.store_now, a.expires_at, a.ceiling),
        (T0, T0 + 30_000, T0 + 31_000)
    );
    clock.advance(30_001);
    let b = store
        .acquire(&ns, &CONFIG, &request("b"))
        .await
        .unwrap()
        .lease;
    assert_eq!((b.slot, b.fence, b.floor), (0, 2, a.ceiling));
    assert_eq!(store.inspect(&ns).await.unwrap().store_now, T0 + 30_001);
}

#[tokio::test]
async fn records_are_persistent_json_znodes_under_the_namespace() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let store = store(&url, &clock).await;
    let ns = Namespace::new(format!("a/b {{x}}:é.-{}", uuid::Uuid::new_v4().simple())).unwrap();
    store.acquire(&ns, &CONFIG, &request("a")).await.unwrap();
    let client = Client::connect(&hosts(&url)).await.unwrap();
    let dir = namespace_dir(&ns);
    let mut names = client.list_children(&dir).await.unwrap();
    names.sort();
    assert_eq!(names, ["ns", "slot"]);
    assert_eq!(
        client.list_children(&format!("{dir}/slot")).await.unwrap(),
        ["0"]
    );
    for path in [format!("{dir}/ns"), format!("{dir}/slot/0")] {
        let (data, stat) = client.get_data(&path).await.unwrap();
        assert_eq!(
            stat.ephemeral_owner, 0,
            "{path} is ephemeral: a lease must outlive the session that took it"
        );
        let value: serde_json::Value = serde_json::from_slice(&data).unwrap();
        assert!(value.is_object(), "{value}");
    }
    // The encoded name holds no `/`: no other namespace's znodes can be under this one's.
    assert!(!ns.encoded().contains('/'));
}

#[tokio::test]
async fn a_lease_outlives_its_session_and_expires_by_the_protocol() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let ns = fresh("session");
    let first = store(&url, &clock).await;
    let a = first
        .acquire(&ns, &CONFIG, &request("a"))
        .await
        .unwrap()
        .lease;
    // The holder's process goes away: its session with it.
    drop(first);
    let second = store(&url, &clock).await;
    let b = second
        .acquire(&ns, &CONFIG, &request("b"))
        .await
        .unwrap()
        .lease;
    assert_ne!(
        b.slot, a.slot,
        "the lease of a closed session was taken while live"
    );
    // Past its expiry, by the protocol's clock, the slot is free again.
    clock.advance(30_001);
    let c = second
        .acquire(
            &ns,
            &CONFIG,
            &AcquireRequest {
                preferred_slot: Some(a.slot),
                ..request("c")
            },
        )
        .await
        .unwrap()
        .lease;
    assert_eq!((c.slot, c.fence), (a.slot, a.fence + 1));
}

#[tokio::test]
async fn a_chroot_holds_every_znode() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let chroot = format!("/cosid-test-{}/ids", uuid::Uuid::new_v4().simple());
    let clock = ManualClock::new(T0);
    let store = store(&format!("zookeeper://{}{chroot}", hosts(&url)), &clock).await;
    let ns = fresh("chroot");
    store.acquire(&ns, &CONFIG, &request("a")).await.unwrap();
    let client = Client::connect(&hosts(&url)).await.unwrap();
    let path = format!("{chroot}/cosid/{}/slot/0", ns.encoded());
    assert!(client.check_stat(&path).await.unwrap().is_some(), "{path}");
    assert!(client
        .check_stat(&format!("{}/ns", namespace_dir(&ns)))
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn undecodable_values_and_stray_znodes_are_corrupt_never_absent() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let store = store(&url, &clock).await;
    let inc = uuid::Uuid::new_v4();
    let good = |fence: &str| {
        format!(
            r#"{{"owner":{{"key":"k","incarnation":"{inc}"}},"last_owner_key":"k","fence":{fence},"expires_at":20,"floor":10,"ceiling":20,"next_floor":20}}"#
        )
    };
    let cases: Vec<(&str, &str, String)> = vec![
        ("not JSON", "slot/3", "{\"owner\": nul".to_owned()),
        ("expected a JSON object", "slot/3", "[1, 2]".to_owned()),
        (
            "fence is missing",
            "slot/3",
            good("0").replace(r#""fence":0,"#, ""),
        ),
        ("expected a non-negative integer", "slot/3", good("-1")),
        (
            "not a UUID",
            "slot/3",
            good("1").replace(&inc.to_string(), "nope"),
        ),
        (
            "floor 10 is above ceiling 5",
            "slot/3",
            good("1").replace(r#""ceiling":20"#, r#""ceiling":5"#),
        ),
        ("not below 2^5", "slot/32", good("1")),
        ("unexpected znode", "slot/03", good("1")),
        ("unexpected znode", "stray", good("1")),
        (
            "bits 0 is not 1 to 31",
            "ns",
            r#"{"bits":0,"tolerance_ms":1000,"not_before":0}"#.to_owned(),
        ),
    ];
    for (expected, node, value) in cases {
        let ns = fresh("corrupt");
        store
            .acquire(&ns, &CONFIG, &request("first"))
            .await
            .unwrap();
        put_raw(&url, &ns, node, value.as_bytes()).await;
        let mut errors = vec![store
            .acquire(&ns, &CONFIG, &request("a"))
            .await
            .unwrap_err()];
        // `inspect` (for `cosid leases`) shows records that break the rules but refuses what it cannot decode.
        let undecodable = !expected.starts_with("floor") && !expected.starts_with("not below");
        if undecodable {
            errors.push(store.inspect(&ns).await.unwrap_err());
        }
        for err in errors {
            match &err {
                StoreError::Corrupt {
                    store: "zookeeper",
                    detail,
                    ..
                } => assert!(
                    detail.contains(expected),
                    "{node} = {value}: expected {expected:?}, got {err}"
                ),
                other => panic!("{node} = {value}: expected Corrupt ({expected}), got {other:?}"),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// A ZooKeeper of the test's own.

/// A standalone ZooKeeper on a free port of 127.0.0.1 in a temporary folder; killed when dropped.
struct OwnZookeeper {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
}

impl OwnZookeeper {
    /// Starts one; `None` (after saying why) without Java or Debian's `zookeeper` package.
    fn start(test: &str) -> Option<OwnZookeeper> {
        let java = Command::new("java")
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !java || !std::path::Path::new(JAR).exists() {
            eprintln!("skipped {test}: java or {JAR} is missing (bash {SCRIPT} installs them)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = format!(
            "tickTime=500\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
             admin.enableServer=false\n4lw.commands.whitelist=srvr\n",
            dir.path().join("data").display()
        );
        std::fs::write(dir.path().join("zoo.cfg"), config).unwrap();
        let mut server = OwnZookeeper {
            child: None,
            port,
            dir,
        };
        server.launch();
        Some(server)
    }

    fn url(&self) -> String {
        format!("zookeeper://127.0.0.1:{}", self.port)
    }

    fn serving(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        let mut reply = String::new();
        s.write_all(b"srvr").is_ok()
            && s.read_to_string(&mut reply).is_ok()
            && reply.contains("Mode: ")
    }

    /// Starts the server on its port and folder (the data folder is read back), and waits until it serves.
    fn launch(&mut self) {
        let log = std::fs::File::create(self.dir.path().join("zookeeper.log")).unwrap();
        let child = Command::new("java")
            .args(["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .arg("-cp")
            .arg(JAR)
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(self.dir.path().join("zoo.cfg"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        for _ in 0..300 {
            if self.serving() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log =
            std::fs::read_to_string(self.dir.path().join("zookeeper.log")).unwrap_or_default();
        panic!(
            "ZooKeeper on port {} did not serve within 15 s:\n{log}",
            self.port
        );
    }

    /// Kills the server at once, as a crash would.
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl OwnZookeeper {
    /// Stops (`SIGSTOP`) or resumes (`SIGCONT`) the server: a hung server, which still accepts connections.
    fn pause(&self, stopped: bool) {
        let pid = self.child.as_ref().expect("running").id().to_string();
        let signal = if stopped { "-STOP" } else { "-CONT" };
        assert!(Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap()
            .success());
    }
}

impl Drop for OwnZookeeper {
    fn drop(&mut self) {
        self.kill();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn digest_credentials_come_from_the_url_and_guard_the_znodes() {
    let test = "digest_credentials_come_from_the_url_and_guard_the_znodes";
    let Some(server) = tokio::task::block_in_place(|| OwnZookeeper::start(test)) else {
        return;
    };
    let port = server.port;
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(T0));
    let ns = fresh("auth");
    // Percent-encoded like any URL's credentials.
    let good = format!("zookeeper://ids:ids%2Dpw@127.0.0.1:{port}/apps");
    let store = cosid::store::open(&StoreUrl::parse(&good).unwrap(), clock.clone())
        .await
        .unwrap();
    let got = store
        .acquire(&ns, &CONFIG, &request("a"))
        .await
        .unwrap_or_else(|e| panic!("{good}: {e}"));
    assert_eq!(got.lease.slot, 0);
    // The znodes are the user's alone: another password, or none, can neither read nor write them, and that is
    // an answer, not an outage (not retried for the whole acquire timeout).
    for bad in [
        format!("zookeeper://ids:wrong-pw@127.0.0.1:{port}/apps"),
        format!("zookeeper://127.0.0.1:{port}/apps"),
    ] {
        let other = ZookeeperStore::open(&bad, clock.clone()).unwrap();
        for err in [
            other
                .acquire(&ns, &CONFIG, &request("b"))
                .await
                .unwrap_err(),
            other.inspect(&ns).await.unwrap_err(),
        ] {
            assert!(!err.is_retryable(), "{bad}: {err:?}");
            assert!(err.to_string().contains("not authorized"), "{bad}: {err}");
            assert!(!err.to_string().contains("wrong-pw"), "{err}");
        }
    }
    drop(server);
}

/// A server that hangs mid-session: the client fails the request in flight with its own "no response from
/// connection" error, which is an outage to retry (another server of the ensemble may answer), not a store error
/// that ends a start at once. Found by the chaos harness's ZooKeeper partition.
#[tokio::test(flavor = "multi_thread")]
async fn a_hung_server_is_unavailable_and_retried() {
    let test = "a_hung_server_is_unavailable_and_retried";
    let Some(server) = tokio::task::block_in_place(|| OwnZookeeper::start(test)) else {
        return;
    };
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(T0));
    let ns = fresh("hung");
    let store = cosid::store::open(&StoreUrl::parse(&server.url()).unwrap(), clock)
        .await
        .unwrap();
    store.acquire(&ns, &CONFIG, &request("a")).await.unwrap();
    server.pause(true);
    let err = store.inspect(&ns).await.unwrap_err();
    server.pause(false);
    assert!(err.is_retryable(), "an outage, to retry: {err:?}");
    drop(server);
}

/// `raise_not_before` on a new namespace makes its znodes without any slot; the first acquirer then uses them.
#[tokio::test]
async fn a_namespace_made_by_raise_not_before_is_usable_by_the_first_acquirer() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let store = store(&url, &clock).await;
    let ns = fresh("raised");
    let raised = store
        .raise_not_before(&ns, &CONFIG, T0 + 5_000)
        .await
        .unwrap();
    assert_eq!(raised.not_before, T0 + 5_000);
    let got = store
        .acquire(&ns, &CONFIG, &request("a"))
        .await
        .unwrap()
        .lease;
    assert!(got.floor >= T0 + 5_000, "{got:?}");
}

// ---------------------------------------------------------------------------------------------------------------
// The keeper against a ZooKeeper that is killed and started again.

impl conformance::Restartable for OwnZookeeper {
    fn url(&self) -> String {
        OwnZookeeper::url(self)
    }

    fn kill(&mut self) {
        OwnZookeeper::kill(self)
    }

    fn restart(&mut self) {
        OwnZookeeper::kill(self);
        self.launch();
    }
}

#[test]
fn a_zookeeper_restart_fails_renewals_then_resumes_and_no_id_passes_a_ceiling() {
    let test = "a_zookeeper_restart_fails_renewals_then_resumes_and_no_id_passes_a_ceiling";
    let Some(mut server) = OwnZookeeper::start(test) else {
        return;
    };
    conformance::a_server_restart_fails_renewals_then_resumes_and_no_id_passes_a_ceiling(
        &mut server,
        Duration::from_millis(1_500),
    );
}

/// One owner acquiring through two sessions at once, each preferring another slot, ends with one slot: the second
/// acquisition's write fails on the owner's guard the first one wrote, and its retry finds the slot it holds. (Were
/// acquisitions only checked on the slot they write, both would commit, and the owner would hold two slots.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_acquisitions_by_one_owner_never_take_two_slots() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let (a, b) = (
        Arc::new(store(&url, &clock).await),
        Arc::new(store(&url, &clock).await),
    );
    for round in 0..40 {
        let ns = fresh("same-owner");
        // The namespace exists (with slot 0 held), so that neither acquisition has a znode to create but its slot.
        a.acquire(&ns, &CONFIG, &request("other")).await.unwrap();
        let owner = Owner::new("one");
        let asking = |store: Arc<ZookeeperStore>, slot: u32| {
            let (ns, owner) = (ns.clone(), owner.clone());
            tokio::spawn(async move {
                let req = AcquireRequest {
                    owner,
                    ttl_ms: 30_000,
                    preferred_slot: Some(slot),
                };
                store.acquire(&ns, &CONFIG, &req).await.unwrap().lease.slot
            })
        };
        let (x, y) = (asking(a.clone(), 1), asking(b.clone(), 2));
        let (x, y) = (x.await.unwrap(), y.await.unwrap());
        assert_eq!(
            x, y,
            "round {round}: one owner was granted slots {x} and {y}"
        );
        let held = a.inspect(&ns).await.unwrap().slots.len();
        assert_eq!(held, 2, "round {round}: {held} slot records for two owners");
    }
}

/// Acquisitions by different owners write their slot and their owner's guard, nothing every acquisition writes:
/// a storm of them on one namespace conflicts only where two choose the same slot (or owner keys share a guard),
/// instead of all taking turns on one znode. The `slot` znode, which acquisitions of earlier versions bumped, keeps
/// its version; each owner's guard (outside the namespace's znode, whose children earlier versions check) was
/// written once per acquisition.
#[tokio::test]
async fn acquisitions_write_only_their_slot_and_their_owners_guard() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let store = store(&url, &clock).await;
    let ns = fresh("disjoint");
    let owners = ["a", "b", "c", "d"];
    for key in owners {
        store.acquire(&ns, &CONFIG, &request(key)).await.unwrap();
    }
    let client = Client::connect(&hosts(&url)).await.unwrap();
    let dir = namespace_dir(&ns);
    let (_, slot_znode) = client.get_data(&format!("{dir}/slot")).await.unwrap();
    assert_eq!(
        slot_znode.version, 0,
        "an acquisition wrote the `slot` znode: acquisitions of different slots would conflict"
    );
    let guards = client.list_children(&format!("{dir}.guard")).await.unwrap();
    assert_eq!(guards.len(), owners.len(), "{guards:?}");
    for guard in &guards {
        let (_, stat) = client
            .get_data(&format!("{dir}.guard/{guard}"))
            .await
            .unwrap();
        assert_eq!(stat.version, 0, "guard {guard} written more than once");
    }
    let mut names = client.list_children(&dir).await.unwrap();
    names.sort();
    assert_eq!(names, ["ns", "slot"], "no new child under the namespace");
}

// ---------------------------------------------------------------------------------------------------------------
// The acquire index: a hint that must never change a decision.

/// The same random calls on a namespace that keeps its index and on one whose index is deleted before every call
/// (so each of its acquires reads every record, and builds the index again).
#[tokio::test]
async fn acquires_on_the_index_decide_as_reading_every_record_does() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let t = on_host_clock(url.clone()).await;
    hints::hints_never_change_a_decision(t.store.clone(), move |full| {
        let url = url.clone();
        async move { forget_index(&url, &full).await }
    })
    .await;
}

/// Random namespaces written with an index (half of them with none, which the acquire builds), then one acquire
/// each: the store's answer is the protocol's decision on every record. 512 slots: free entries in several ranges,
/// expired leases in several buckets.
#[tokio::test]
async fn acquires_on_the_index_decide_as_the_protocol_on_every_record() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let t = on_host_clock(url.clone()).await;
    for (bits, cases) in [(5, 120), (9, 6)] {
        let mut case = 0;
        let url = url.clone();
        hints::hinted_acquires_decide_as_the_protocol_on_every_row(
            t.store.clone(),
            cases,
            bits,
            move |ns, rows, unused| {
                let url = url.clone();
                case += 1;
                let build = case % 2 == 0;
                async move {
                    put_indexed(&url, &ns, &rows, unused).await;
                    if build {
                        forget_index(&url, &ns).await;
                    }
                }
            },
        )
        .await;
    }
}

/// Entries that their records contradict (left by a hand edit, or a client of an earlier version) never make an
/// acquire take a held slot or give one owner two: each entry is checked against its record.
#[tokio::test]
async fn index_entries_that_records_contradict_are_passed_over() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let store = store(&url, &clock).await;
    let ns = fresh("zk-stale-index");
    let owner_a = request("a");
    let a = store.acquire(&ns, &CONFIG, &owner_a).await.unwrap().lease;
    let b = store
        .acquire(&ns, &CONFIG, &request("b"))
        .await
        .unwrap()
        .lease;
    assert_eq!((a.slot, b.slot), (0, 1));
    let client = Client::connect(&hosts(&url)).await.unwrap();
    let root = target::index_root(&ns);
    let options =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    // Slot 0 listed as free while `a` holds it; `hw` back at 1, which `b` holds; an owner entry for `c` on slot 1;
    // slot 1 listed as expired long ago.
    for path in [
        format!("{root}/free/0/0"),
        format!("{root}/k/63/1"),
        format!("{root}/held/{}/{}-1", (T0 - 60_000) >> 8, T0 - 60_000),
    ] {
        client
            .mkdir(&path[..path.rfind('/').unwrap()], &options)
            .await
            .unwrap();
        client.create(&path, b"", &options).await.unwrap();
    }
    client
        .set_data(&format!("{root}/hw"), b"1", None)
        .await
        .unwrap();
    let got = store
        .acquire(&ns, &CONFIG, &request("c"))
        .await
        .unwrap()
        .lease;
    assert_eq!((got.slot, got.fence), (2, 1), "slots 0 and 1 are held");
    let (_, hw) = index_of(&url, &ns).await;
    assert_eq!(hw, "3");
    // `a` asking again gets its own slot back, not a second one.
    let again = store.acquire(&ns, &CONFIG, &owner_a).await.unwrap().lease;
    assert_eq!((again.slot, again.fence), (a.slot, a.fence));
}

/// The lowest free slot that can start within the tolerance is found past the first range of free entries and
/// past the first page of them: here slots 0 to 199 are held, 200 to 299 released with floors ten minutes ahead (a
/// holder's clock ran ahead), 300 released with a floor in the past, 301 to 319 held, and slot 310's lease
/// expired.
#[tokio::test]
async fn the_lowest_ready_free_slot_is_found_past_the_first_range_of_free_entries() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let store = store(&url, &clock).await;
    let config = NamespaceConfig { bits: 9, ..CONFIG };
    for (ready_slot, expected) in [(Some(300), 300), (None, 310)] {
        let ns = fresh("zk-free-pages");
        store.raise_not_before(&ns, &config, 0).await.unwrap();
        let rows: Vec<cosid::lease::SlotRecord> = (0..320)
            .map(|slot| {
                let released = (200..300).contains(&slot) || Some(slot) == ready_slot;
                // An expired lease's next floor is its ceiling, the tolerance past its expiry.
                let (expires_at, next_floor) = match slot {
                    310 => (T0 - 5_000, T0 - 4_000),
                    s if Some(s) == ready_slot => (T0 + 30_000, T0 - 1_000),
                    s if released && s < 300 => (T0 + 30_000, T0 + 600_000),
                    _ => (T0 + 30_000, T0 + 31_000),
                };
                cosid::lease::SlotRecord {
                    slot,
                    owner: (!released).then(|| Owner::new(format!("h{slot}"))),
                    last_owner_key: Some(format!("h{slot}")),
                    fence: 1,
                    expires_at,
                    floor: T0 - 60_000,
                    ceiling: next_floor.min(expires_at + 1_000),
                    next_floor,
                }
            })
            .collect();
        put_indexed(&url, &ns, &rows, Some(320)).await;
        let got = store
            .acquire(&ns, &config, &request("new"))
            .await
            .unwrap()
            .lease;
        assert_eq!(got.slot, expected, "{got:?}");
    }
}

/// 64 owners acquiring at once on one namespace (most lose races and retry, picking past the lowest unused slot),
/// then renewing and half of them releasing: every one gets a slot, no two the same, and the index is exactly the
/// entries of the records afterwards.
#[tokio::test]
async fn owners_acquiring_at_once_get_distinct_slots_and_the_index_stays_exact() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let t = on_host_clock(url.clone()).await;
    let store = t.store.clone();
    let ns = fresh("zk-storm");
    let config = NamespaceConfig { bits: 8, ..CONFIG };
    let requests: Vec<AcquireRequest> = (0..64).map(|i| request(&format!("s{i}"))).collect();
    let leases: Vec<cosid::lease::SlotLease> = futures_join(
        requests
            .iter()
            .map(|r| {
                let store = store.clone();
                let ns = ns.clone();
                let r = r.clone();
                tokio::spawn(async move { store.acquire(&ns, &config, &r).await.unwrap().lease })
            })
            .collect(),
    )
    .await;
    let mut slots: Vec<u32> = leases.iter().map(|l| l.slot).collect();
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(slots.len(), 64, "{slots:?}");
    for (i, lease) in leases.iter().enumerate() {
        if i % 2 == 0 {
            store.release(lease, None).await.unwrap();
        } else {
            store
                .renew(lease, 30_000, config.tolerance_ms)
                .await
                .unwrap();
        }
    }
    let records = store.inspect(&ns).await.unwrap().slots;
    let (entries, hw) = index_of(&url, &ns).await;
    assert_eq!(entries, index_entries_of(&records));
    let unused = cosid::lease::protocol::lowest_unused(&records, config.bits).unwrap();
    assert!(
        hw.parse::<u32>().unwrap() <= unused,
        "hw {hw}, lowest unused {unused}"
    );
    // Each renewing owner finds its own slot through the index.
    for (i, lease) in leases.iter().enumerate().filter(|(i, _)| i % 2 == 1) {
        let again = store
            .acquire(&ns, &config, &requests[i])
            .await
            .unwrap()
            .lease;
        assert_eq!((again.slot, again.fence), (lease.slot, lease.fence));
    }
}

async fn futures_join<T: Send + 'static>(tasks: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

/// A namespace written before the index (its records and no `.idx`) is indexed by its first acquisition, in the
/// same `multi` as its grant; a renewal that read no index and meets one built since fails its write, reads again
/// and writes its entries.
#[tokio::test]
async fn a_namespace_without_an_index_is_indexed_by_its_first_acquisition() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let store = store(&url, &clock).await;
    let ns = fresh("zk-build");
    let a = store
        .acquire(&ns, &CONFIG, &request("a"))
        .await
        .unwrap()
        .lease;
    forget_index(&url, &ns).await;
    // Without an index, a renewal writes no entry.
    let a = store.renew(&a, 30_000, CONFIG.tolerance_ms).await.unwrap();
    let b = store
        .acquire(&ns, &CONFIG, &request("b"))
        .await
        .unwrap()
        .lease;
    assert_eq!(b.slot, 1);
    let records = store.inspect(&ns).await.unwrap().slots;
    let (entries, hw) = index_of(&url, &ns).await;
    assert_eq!(entries, index_entries_of(&records));
    assert_eq!(hw, "2");
    clock.advance(1_000);
    store.renew(&a, 30_000, CONFIG.tolerance_ms).await.unwrap();
    store.release(&b, None).await.unwrap();
    let records = store.inspect(&ns).await.unwrap().slots;
    assert_eq!(index_of(&url, &ns).await.0, index_entries_of(&records));
}

/// A namespace of more records than one `multi` can index (1,024), written without an index, is read in full and
/// stays without one: its acquisition bumps the `slot` znode (so that a build racing it would fail), and its
/// renewals and releases write no entry.
#[tokio::test]
async fn a_namespace_too_large_to_index_in_one_multi_is_read_in_full() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let store = store(&url, &clock).await;
    let config = NamespaceConfig { bits: 11, ..CONFIG };
    let ns = fresh("zk-too-large");
    store.raise_not_before(&ns, &config, 0).await.unwrap();
    let rows: Vec<cosid::lease::SlotRecord> = (0..1_100)
        .map(|slot| cosid::lease::SlotRecord {
            slot,
            owner: Some(Owner::new(format!("h{slot}"))),
            last_owner_key: Some(format!("h{slot}")),
            fence: 1,
            expires_at: T0 + 30_000,
            floor: T0 - 60_000,
            ceiling: T0 + 31_000,
            next_floor: T0 + 31_000,
        })
        .collect();
    target::put_records(&url, &ns, &rows).await;
    let client = Client::connect(&hosts(&url)).await.unwrap();
    let slots = format!("{}/slot", namespace_dir(&ns));
    let (_, before) = client.get_data(&slots).await.unwrap();
    let got = store
        .acquire(&ns, &config, &request("new"))
        .await
        .unwrap()
        .lease;
    assert_eq!(got.slot, 1_100);
    let (_, after) = client.get_data(&slots).await.unwrap();
    assert_eq!(after.version, before.version + 1);
    let root = target::index_root(&ns);
    assert!(
        client.check_stat(&root).await.unwrap().is_none(),
        "no index"
    );
    let renewed = store
        .renew(&got, 30_000, config.tolerance_ms)
        .await
        .unwrap();
    store.release(&renewed, None).await.unwrap();
    assert!(
        client.check_stat(&root).await.unwrap().is_none(),
        "no index"
    );
    let records = store.inspect(&ns).await.unwrap().slots;
    assert_eq!(records.len(), 1_101);
    assert_eq!(records[1_100].owner, None);
}

/// A renewal goes through an index that is not as it expects (an entry it deletes already gone, one it creates
/// already there, the container it writes into deleted): a damaged index must not cost a lease. Afterwards the
/// index is the records' entries again.
#[tokio::test]
async fn renewals_go_through_an_index_that_is_not_as_expected() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let store = store(&url, &clock).await;
    let ns = fresh("zk-damaged-index");
    let a = store
        .acquire(&ns, &CONFIG, &request("a"))
        .await
        .unwrap()
        .lease;
    let client = Client::connect(&hosts(&url)).await.unwrap();
    let root = target::index_root(&ns);
    let options =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    let held = |expires_at: u64| format!("{root}/held/{}/{expires_at}-0", expires_at >> 8);
    // The entry the renewal deletes is gone, and the one it creates is already there.
    client.delete(&held(a.expires_at), None).await.unwrap();
    clock.advance(1_000);
    let next = T0 + 1_000 + 30_000;
    client
        .mkdir(&held(next)[..held(next).rfind('/').unwrap()], &options)
        .await
        .unwrap();
    client.create(&held(next), b"", &options).await.unwrap();
    let a = store.renew(&a, 30_000, CONFIG.tolerance_ms).await.unwrap();
    assert_eq!(a.expires_at, next);
    let records = store.inspect(&ns).await.unwrap().slots;
    assert_eq!(index_of(&url, &ns).await.0, index_entries_of(&records));
    // Every held entry and its container gone: the renewal makes the container it writes into.
    target::delete_all(&client, &format!("{root}/held")).await;
    client
        .create(&format!("{root}/held"), b"", &options)
        .await
        .unwrap();
    clock.advance(60_000);
    let a = store.renew(&a, 30_000, CONFIG.tolerance_ms).await.unwrap();
    let records = store.inspect(&ns).await.unwrap().slots;
    assert_eq!(index_of(&url, &ns).await.0, index_entries_of(&records));
    store.release(&a, None).await.unwrap();
    let records = store.inspect(&ns).await.unwrap().slots;
    assert_eq!(index_of(&url, &ns).await.0, index_entries_of(&records));
}
