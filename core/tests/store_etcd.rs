//! The etcd v3 store against a real server: the conformance suite, then what is particular to this store.
//!
//! Set `COSID_TEST_ETCD_URL` (`eval "$(bash .ci/services/etcd.sh)"` starts a server and sets it); without it the
//! tests that need a server print why they are skipped. etcd has no clock, so the store clock is the caller's:
//! here a manual clock, which the suite moves instead of waiting.
#![cfg(feature = "etcd")]

#[path = "targets/etcd.rs"]
mod target;

#[path = "targets/hints.rs"]
mod hints;

use cosid::conformance;

use cosid::clock::{Clock, ManualClock};
use cosid::lease::{AcquireRequest, Namespace, NamespaceConfig, Owner};
use cosid::store::{EtcdStore, LeaseStore, StoreError, StoreUrl};
use std::sync::Arc;
use target::{
    client, endpoints, forget_index, on_host_clock, put_indexed, put_raw, target, SCRIPT, URL_VAR,
};

conformance::conformance_tests!(target());

conformance::runtime_tests! {
    kind: "etcd",
    url: conformance::server_url(URL_VAR, SCRIPT),
    target: on_host_clock,
    // Port 1 on loopback: nothing listens there.
    unreachable: "etcd://127.0.0.1:1",
    shown: "127.0.0.1:1",
}

// ---------------------------------------------------------------------------------------------------------------
// What is particular to etcd.

const CONFIG: NamespaceConfig = NamespaceConfig {
    bits: 5,
    tolerance_ms: 1_000,
    layout: cosid::Layout::millis(),
};
const T0: u64 = 1_700_000_000_000;

/// A namespace no earlier run used, so tests can share one cluster.
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

async fn store(url: &str, clock: &ManualClock) -> EtcdStore {
    let store = EtcdStore::open(&endpoints(url), Arc::new(clock.clone()))
        .await
        .unwrap();
    store.init().await.unwrap();
    store
}

#[tokio::test]
async fn refuses_bad_endpoints() {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(T0));
    for bad in [
        vec!["127.0.0.1".to_owned()],
        vec!["127.0.0.1:notaport".to_owned()],
        vec![":2379".to_owned()],
        vec!["a:2379".to_owned(), "u:p@b:2379".to_owned()],
        vec![],
    ] {
        match EtcdStore::open(&bad, clock.clone()).await {
            Err(StoreError::InvalidUrl { reason, .. }) => assert!(!reason.is_empty()),
            other => panic!("{bad:?}: expected InvalidUrl, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_unreachable_cluster_is_unavailable_and_the_password_is_never_printed() {
    let clock = ManualClock::new(T0);
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    let store = EtcdStore::open(&["root:s3cret-pw@127.0.0.1:1".to_owned()], Arc::new(clock))
        .await
        .unwrap();
    assert!(!format!("{store:?}").contains("s3cret-pw"), "{store:?}");
    let err = store
        .acquire(&fresh("down"), &CONFIG, &request("a"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Unavailable { store: "etcd", .. }),
        "{err:?}"
    );
    assert!(!err.to_string().contains("s3cret-pw"), "{err}");
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
    assert_eq!(store.kind(), "etcd");
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
    // Past the expiry on the caller's clock, another owner takes the slot over, above the old ceiling.
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
async fn records_are_json_under_the_namespace_prefix_and_carry_no_ttl() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let store = store(&url, &clock).await;
    let ns = Namespace::new(format!("a/b {{x}}:é-{}", uuid::Uuid::new_v4().simple())).unwrap();
    store.acquire(&ns, &CONFIG, &request("a")).await.unwrap();
    let mut client = etcd_client::Client::connect(endpoints(&url), None)
        .await
        .unwrap();
    let prefix = format!("cosid/{}/", ns.encoded());
    let got = client
        .get(
            prefix.as_str(),
            Some(etcd_client::GetOptions::new().with_prefix()),
        )
        .await
        .unwrap();
    let keys: Vec<String> = got
        .kvs()
        .iter()
        .map(|kv| kv.key_str().unwrap().to_owned())
        .filter(|k| !k.starts_with(&format!("{prefix}i/")))
        .collect();
    assert_eq!(keys, [format!("{prefix}ns"), format!("{prefix}slot/0")]);
    // Beside them, the acquire index: owner `a` (hex 61) holds slot 0 until its expiry; slot 1 is the lowest
    // unused.
    let index: Vec<(String, String)> = got
        .kvs()
        .iter()
        .filter_map(|kv| {
            let k = kv.key_str().unwrap().strip_prefix(&format!("{prefix}i/"))?;
            Some((k.to_owned(), kv.value_str().unwrap().to_owned()))
        })
        .collect();
    let expiry = T0 + 30_000;
    assert_eq!(
        index,
        [
            (format!("held/{expiry:020}/0000000000"), String::new()),
            ("hw".to_owned(), "1".to_owned()),
            ("l/61/0000000000".to_owned(), String::new()),
            ("o/61/0000000000".to_owned(), String::new()),
            ("v".to_owned(), "1".to_owned()),
        ]
    );
    for kv in got.kvs() {
        assert_eq!(
            kv.lease(),
            0,
            "{} has a lease: expiry must be data, not a TTL",
            kv.key_str().unwrap()
        );
        if kv.key_str().unwrap().starts_with(&format!("{prefix}i/")) {
            continue;
        }
        let value: serde_json::Value = serde_json::from_slice(kv.value()).unwrap();
        assert!(value.is_object(), "{value}");
    }
    // The encoded name holds no `/`: no other namespace's prefix can contain this one's keys.
    assert!(!ns.encoded().contains('/'));
}

#[tokio::test]
async fn undecodable_values_and_stray_keys_are_corrupt_never_absent() {
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
        ("unexpected key", "slot/03", good("1")),
        ("unexpected key", "stray", good("1")),
        (
            "bits 0 is not 1 to 31",
            "ns",
            r#"{"bits":0,"tolerance_ms":1000,"not_before":0}"#.to_owned(),
        ),
    ];
    for (expected, key, value) in cases {
        let ns = fresh("corrupt");
        store
            .acquire(&ns, &CONFIG, &request("first"))
            .await
            .unwrap();
        put_raw(&url, &ns, key, value.as_bytes()).await;
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
                    store: "etcd",
                    detail,
                    ..
                } => {
                    assert!(
                        detail.contains(expected),
                        "{key} = {value}: expected {expected:?}, got {err}"
                    )
                }
                other => panic!("{key} = {value}: expected Corrupt ({expected}), got {other:?}"),
            }
        }
    }
}

/// An etcd of the test's own, with authentication on, on free ports of 127.0.0.1; stopped when dropped.
struct OwnEtcd {
    child: std::process::Child,
    client_port: u16,
    _dir: tempfile::TempDir,
}

impl OwnEtcd {
    /// Two distinct free ports (both held until both are chosen, so they cannot be the same).
    fn free_ports() -> (u16, u16) {
        let bind = || std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let (a, b) = (bind(), bind());
        (
            a.local_addr().unwrap().port(),
            b.local_addr().unwrap().port(),
        )
    }

    /// Starts it with user `root` (password `root-pw`) and authentication enabled; `None` without the binaries.
    fn start_with_auth(test: &str) -> Option<OwnEtcd> {
        let have = |bin: &str, arg: &str| {
            std::process::Command::new(bin)
                .env("ETCDCTL_API", "3")
                .arg(arg)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !have("etcd", "--version") || !have("etcdctl", "version") {
            eprintln!("skipped {test}: etcd or etcdctl is not on PATH (bash .ci/services/etcd.sh installs them)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let (client_port, peer_port) = Self::free_ports();
        let client = format!("http://127.0.0.1:{client_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let child = std::process::Command::new("etcd")
            .args(["--name", "auth", "--data-dir"])
            .arg(dir.path().join("data"))
            .args([
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
            ])
            .args([
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
            ])
            .args(["--initial-cluster", &format!("auth={peer}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let server = OwnEtcd {
            child,
            client_port,
            _dir: dir,
        };
        let ctl = |args: &[&str]| {
            std::process::Command::new("etcdctl")
                .env("ETCDCTL_API", "3")
                .arg(format!("--endpoints=127.0.0.1:{client_port}"))
                .args(args)
                .output()
                .unwrap()
        };
        let ready = (0..200).any(|_| {
            let up = ctl(&["endpoint", "health"]).status.success();
            if !up {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            up
        });
        assert!(ready, "the test's own etcd did not answer within 10 s");
        for args in [
            &["user", "add", "root:root-pw"][..],
            &["user", "grant-role", "root", "root"][..],
            &["auth", "enable"][..],
        ] {
            let out = ctl(args);
            assert!(out.status.success(), "etcdctl {args:?}: {out:?}");
        }
        Some(server)
    }
}

impl Drop for OwnEtcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn user_and_password_come_from_the_url() {
    let Some(server) = OwnEtcd::start_with_auth("user_and_password_come_from_the_url") else {
        return;
    };
    let port = server.client_port;
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(T0));
    // Percent-encoded like any URL's credentials.
    let good = format!("etcd://root:root%2Dpw@127.0.0.1:{port}");
    let store = cosid::store::open(&StoreUrl::parse(&good).unwrap(), clock.clone())
        .await
        .unwrap();
    let got = store
        .acquire(&fresh("auth"), &CONFIG, &request("a"))
        .await
        .unwrap_or_else(|e| panic!("{good}: {e}"));
    assert_eq!(got.lease.slot, 0);
    // Wrong or missing credentials are an answer, not an outage: not retried for the whole acquire timeout.
    for bad in [
        format!("root:wrong-pw@127.0.0.1:{port}"),
        format!("127.0.0.1:{port}"),
    ] {
        let err = EtcdStore::open(std::slice::from_ref(&bad), clock.clone())
            .await
            .unwrap()
            .acquire(&fresh("auth"), &CONFIG, &request("a"))
            .await
            .unwrap_err();
        assert!(!err.is_retryable(), "{bad}: {err:?}");
        assert!(!err.to_string().contains("wrong-pw"), "{err}");
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The acquire index: a hint that must never change a decision.

/// The same random calls on a namespace that keeps its index and on one whose index is deleted before every call
/// (so each of its acquires builds it again from every record).
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
/// each: the store's answer is the protocol's decision on every record. The written index has every expired lease
/// still under `held`, so the acquire sweeps them first.
#[tokio::test]
async fn acquires_on_the_index_decide_as_the_protocol_on_every_record() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let t = on_host_clock(url.clone()).await;
    let mut case = 0;
    hints::hinted_acquires_decide_as_the_protocol_on_every_row(
        t.store.clone(),
        300,
        // 32 slots: more free entries than an acquire reads at first.
        5,
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

/// Entries that their records contradict (left by a hand edit, or by a client of an earlier version writing a
/// record without its index keys) are repaired, and never make an acquire take a held slot or give one owner two.
#[tokio::test]
async fn index_entries_that_records_contradict_are_repaired() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let store = store(&url, &clock).await;
    let ns = fresh("etcd-stale-index");
    let owner_a = request("a");
    let a = store.acquire(&ns, &CONFIG, &owner_a).await.unwrap().lease;
    let b = store
        .acquire(&ns, &CONFIG, &request("b"))
        .await
        .unwrap()
        .lease;
    assert_eq!((a.slot, b.slot), (0, 1));
    let mut c = client(&url).await;
    let root = format!("cosid/{}/i/", ns.encoded());
    // Slot 0 listed as free while `a` holds it; `hw` back at 1, which `b` holds; an owner entry for `c` on slot 1.
    c.put(format!("{root}free/0000000000"), "", None)
        .await
        .unwrap();
    c.put(format!("{root}hw"), "1", None).await.unwrap();
    c.put(format!("{root}o/63/0000000001"), "", None)
        .await
        .unwrap();
    let got = store
        .acquire(&ns, &CONFIG, &request("c"))
        .await
        .unwrap()
        .lease;
    assert_eq!((got.slot, got.fence), (2, 1), "slots 0 and 1 are held");
    let index: Vec<String> = c
        .get(
            root.as_str(),
            Some(etcd_client::GetOptions::new().with_prefix()),
        )
        .await
        .unwrap()
        .kvs()
        .iter()
        .map(|kv| {
            format!(
                "{}={}",
                &kv.key_str().unwrap()[root.len()..],
                kv.value_str().unwrap()
            )
        })
        .collect();
    for gone in ["free/0000000000=", "o/63/0000000001="] {
        assert!(!index.contains(&gone.to_owned()), "{index:?}");
    }
    assert!(index.contains(&"hw=3".to_owned()), "{index:?}");
    assert!(index.contains(&"o/63/0000000002=".to_owned()), "{index:?}");
    // `a` asking again gets its own slot back, not a second one.
    let again = store.acquire(&ns, &CONFIG, &owner_a).await.unwrap().lease;
    assert_eq!((again.slot, again.fence), (a.slot, a.fence));
}

/// Two acquisitions by one owner at once (a retry racing the first attempt) end with one slot, not two: the
/// write compares that no record of the owner's key appeared since the read.
#[tokio::test]
async fn one_owner_acquiring_twice_at_once_holds_one_slot() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let t = on_host_clock(url.clone()).await;
    for round in 0..20 {
        let ns = fresh("etcd-same-owner");
        let req = request(&format!("twice-{round}"));
        let (x, y) = tokio::join!(
            t.store.acquire(&ns, &CONFIG, &req),
            t.store.acquire(&ns, &CONFIG, &req)
        );
        let (x, y) = (x.unwrap().lease, y.unwrap().lease);
        assert_eq!((x.slot, x.fence), (y.slot, y.fence), "round {round}");
        let held = t.store.inspect(&ns).await.unwrap().slots;
        assert_eq!(held.len(), 1, "round {round}: {held:?}");
    }
}

/// The lowest free slot that can start within the tolerance is found past the first page of free entries: here
/// slots 0 to 9 were released with floors ten minutes ahead (a holder's clock ran ahead), slot 20 with a floor in
/// the past, and every other slot is held.
#[tokio::test]
async fn the_lowest_ready_free_slot_is_found_past_the_first_page_of_free_entries() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let clock = ManualClock::new(T0);
    let store = store(&url, &clock).await;
    let ns = fresh("etcd-free-pages");
    let rows: Vec<cosid::lease::SlotRecord> = (0..32)
        .map(|slot| {
            let released = slot < 10 || slot == 20;
            let next_floor = match slot {
                20 => T0 - 1_000,
                s if s < 10 => T0 + 600_000,
                _ => T0 + 31_000,
            };
            cosid::lease::SlotRecord {
                slot,
                owner: (!released).then(|| Owner::new(format!("h{slot}"))),
                last_owner_key: Some(format!("h{slot}")),
                fence: 1,
                expires_at: T0 + 30_000,
                floor: T0 - 60_000,
                ceiling: next_floor.min(T0 + 31_000),
                next_floor,
            }
        })
        .collect();
    put_indexed(&url, &ns, &rows, None).await;
    let got = store
        .acquire(&ns, &CONFIG, &request("new"))
        .await
        .unwrap()
        .lease;
    assert_eq!(got.slot, 20, "{got:?}");
}

/// 64 owners acquiring at once on one namespace (most lose races and retry, picking past the lowest unused slot):
/// every one gets a slot, no two the same, and the index covers every record afterwards (a later acquire by each
/// owner finds its own slot through it).
#[tokio::test]
async fn owners_acquiring_at_once_get_distinct_slots_and_stay_indexed() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let t = on_host_clock(url.clone()).await;
    let ns = fresh("etcd-storm");
    let config = NamespaceConfig { bits: 8, ..CONFIG };
    let requests: Vec<AcquireRequest> = (0..64).map(|i| request(&format!("s{i}"))).collect();
    let tasks: Vec<_> = requests
        .iter()
        .map(|r| {
            let (store, ns, r) = (t.store.clone(), ns.clone(), r.clone());
            tokio::spawn(async move { store.acquire(&ns, &config, &r).await })
        })
        .collect();
    let mut got = Vec::new();
    for task in tasks {
        got.push(task.await.unwrap());
    }
    let mut slots: Vec<u32> = got.iter().map(|g| g.as_ref().unwrap().lease.slot).collect();
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(slots.len(), 64, "{slots:?}");
    for (r, g) in requests.iter().zip(&got) {
        let again = t.store.acquire(&ns, &config, r).await.unwrap().lease;
        let first = &g.as_ref().unwrap().lease;
        assert_eq!((again.slot, again.fence), (first.slot, first.fence));
    }
    let records = t.store.inspect(&ns).await.unwrap().slots;
    assert_eq!(records.len(), 64);
}

/// An index whose `hw` says every slot has a record and whose free entries are gone (as records deleted by hand
/// leave it) is checked against every record before a refusal, and rebuilt: it used to refuse every start for good.
#[tokio::test]
async fn an_index_that_says_no_slot_is_free_is_checked_before_a_refusal() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let t = on_host_clock(url.clone()).await;
    hints::a_hint_that_says_no_slot_is_unused_is_checked(
        t.store.clone(),
        "etcd-hint-full",
        |ns| async move {
            let mut client = client(&url).await;
            let root = format!("cosid/{}/i/", ns.encoded());
            client.put(format!("{root}hw"), "none", None).await.unwrap();
            client
                .delete(
                    format!("{root}free/"),
                    Some(etcd_client::DeleteOptions::new().with_prefix()),
                )
                .await
                .unwrap();
        },
    )
    .await;
}
