//! The Redis store against real servers.
//!
//! - The conformance suite and the Redis-specific checks run on the server in `COSID_TEST_REDIS_URL`
//!   (`eval "$(bash .ci/services/redis.sh)"` starts one); without it they print why they are skipped.
//! - The tests that restart a server, or need particular settings, start their own `redis-server` on a free port of
//!   127.0.0.1 in a temporary folder; without `redis-server` on `PATH` they print why they are skipped.
#![cfg(feature = "redis")]

#[path = "targets/hints.rs"]
mod hints;
#[path = "targets/redis.rs"]
mod target;

use cosid::conformance;

use conformance::{fresh, Recorder, CONFIG, LONG_TTL_MS};
use cosid::generator::Waits;
use cosid::lease::{AcquireRequest, Namespace, Owner};
use cosid::store::{LeaseStore, RedisStore, StoreError, StoreUrl};
use cosid::{Event, Runtime};
use redis::AsyncCommands;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use target::{connect, namespace_key, slots_key, target, Redis, SCRIPT, URL_VAR};

// ---------------------------------------------------------------------------------------------------------------
// The conformance suite.

conformance::conformance_tests!(target());

async fn connect_owned(url: String) -> Redis {
    connect(&url).await
}

conformance::runtime_tests! {
    kind: "redis",
    url: conformance::server_url(URL_VAR, SCRIPT),
    target: connect_owned,
    // Port 1 on loopback: nothing listens there.
    unreachable: "redis://127.0.0.1:1/0",
    shown: "127.0.0.1:1/0",
}

// ---------------------------------------------------------------------------------------------------------------
// Redis-specific checks on the shared server.

fn owner_request(key: &str) -> AcquireRequest {
    conformance::request(&Owner::new(key), LONG_TTL_MS)
}

#[tokio::test]
async fn records_that_do_not_decode_are_refused_never_read_as_absent() {
    let Some(t) = target().await else { return };
    let inc = uuid::Uuid::new_v4();
    let good = format!("v1;3;1700000000000;1;1700000001000;1700000001000;{inc};5:other5:other");
    // (label, slot field, value, what the refusal says)
    let slot_cases: Vec<(&str, &str, String, &str)> = vec![
        ("garbage", "1", "garbage".into(), "is not v1;"),
        (
            "other-version",
            "1",
            good.replacen("v1;", "v2;", 1),
            "is not v1;",
        ),
        (
            "missing-field",
            "1",
            "v1;3;1700000000000;1;1700000001000;-;-".into(),
            "is not v1;",
        ),
        (
            "text-fence",
            "1",
            good.replacen(";3;", ";abc;", 1),
            "fence \"abc\" is not a whole number",
        ),
        (
            "empty-floor",
            "1",
            good.replacen(";1;", ";;", 1),
            "floor \"\" is not a whole number",
        ),
        (
            "negative",
            "1",
            good.replacen(";3;", ";-3;", 1),
            "is not a whole number",
        ),
        (
            "decimal",
            "1",
            good.replacen(";1;", ";1.5;", 1),
            "is not a whole number",
        ),
        (
            "hex",
            "1",
            good.replacen(";1;", ";0x1;", 1),
            "is not a whole number",
        ),
        (
            "past-2^53",
            "1",
            good.replacen(";3;", ";9007199254740993;", 1),
            "below 2^53",
        ),
        (
            "bad-uuid",
            "1",
            good.replace(&inc.to_string(), "not-a-uuid"),
            "is not a UUID",
        ),
        (
            "key-without-incarnation",
            "1",
            good.replace(&inc.to_string(), ""),
            "both set or both empty",
        ),
        (
            "incarnation-without-key",
            "1",
            good.replace("5:other5:other", "-5:other"),
            "both set or both empty",
        ),
        (
            "short-key",
            "1",
            good.replace("5:other5:other", "9:other-"),
            "neither - nor",
        ),
        ("trailing-bytes", "1", format!("{good}x"), "past their end"),
        (
            "leading-zero-slot",
            "01",
            good.clone(),
            "is not a slot number",
        ),
        ("text-slot", "one", good.clone(), "is not a slot number"),
    ];
    for (label, field, value, detail) in slot_cases {
        let ns = fresh(label);
        conformance::acquire(&t, &ns, &Owner::new("a"), LONG_TTL_MS).await;
        let mut raw = t.raw.clone();
        let _: () = raw.hset(slots_key(&ns), field, &value).await.unwrap();
        conformance::assert_corrupt(
            t.store.acquire(&ns, &CONFIG, &owner_request("b")).await,
            detail,
            &format!("{label}: acquire"),
        );
        conformance::assert_corrupt(
            t.store.inspect(&ns).await,
            detail,
            &format!("{label}: inspect"),
        );
    }
    // The encoding itself round-trips: the good value reads back as the record it describes.
    let ns = fresh("good");
    conformance::acquire(&t, &ns, &Owner::new("a"), LONG_TTL_MS).await;
    let mut raw = t.raw.clone();
    let _: () = raw.hset(slots_key(&ns), "1", &good).await.unwrap();
    let back = conformance::record(&t, &ns, 1).await;
    assert_eq!(
        (
            back.fence,
            back.floor,
            back.owner.map(|o| (o.key, o.incarnation)),
            back.last_owner_key
        ),
        (
            3,
            1,
            Some(("other".to_string(), inc)),
            Some("other".to_string())
        )
    );
    let ns_cases: [(&str, &str, &str, &str); 4] = [
        ("bits-99", "bits", "99", "bits 99 is not 1 to 31"),
        ("bits-0", "bits", "0", "bits 0 is not 1 to 31"),
        (
            "tolerance-text",
            "tolerance_ms",
            "soon",
            "is not a whole number",
        ),
        ("unknown-ns-field", "owner", "me", "unknown field"),
    ];
    for (label, field, value, detail) in ns_cases {
        let ns = fresh(label);
        let lease = conformance::acquire(&t, &ns, &Owner::new("a"), LONG_TTL_MS)
            .await
            .lease;
        let mut raw = t.raw.clone();
        let _: () = raw.hset(namespace_key(&ns), field, value).await.unwrap();
        conformance::assert_corrupt(
            t.store.acquire(&ns, &CONFIG, &owner_request("b")).await,
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
    }
    // A namespace record that vanished while a lease is held: lost writes, not recreated.
    let ns = fresh("ns-gone");
    let lease = conformance::acquire(&t, &ns, &Owner::new("a"), LONG_TTL_MS)
        .await
        .lease;
    let mut raw = t.raw.clone();
    let _: () = raw.del(namespace_key(&ns)).await.unwrap();
    conformance::assert_regression(
        t.store
            .renew(&lease, LONG_TTL_MS, CONFIG.tolerance_ms)
            .await,
        "the record of namespace",
        "renew",
    );
    let exists: bool = raw.exists(namespace_key(&ns)).await.unwrap();
    assert!(!exists, "a refused renewal writes nothing");
}

#[tokio::test]
async fn keys_share_a_hash_tag_and_never_get_a_ttl() {
    let Some(t) = target().await else { return };
    let ns = Namespace::new(format!("ttl {{x}}:{}", uuid::Uuid::new_v4())).unwrap();
    assert_eq!(RedisStore::namespace_key(&ns), namespace_key(&ns));
    assert_eq!(RedisStore::slots_key(&ns), slots_key(&ns));
    let a = conformance::acquire(&t, &ns, &Owner::new("a"), LONG_TTL_MS)
        .await
        .lease;
    t.store
        .renew(&a, LONG_TTL_MS, CONFIG.tolerance_ms)
        .await
        .unwrap();
    t.store.release(&a, None).await.unwrap();
    t.store
        .raise_not_before(&ns, &CONFIG, a.ceiling)
        .await
        .unwrap();
    let mut raw = t.raw.clone();
    for key in [namespace_key(&ns), slots_key(&ns)] {
        let ttl: i64 = raw.pttl(&key).await.unwrap();
        assert_eq!(ttl, -1, "{key} must exist with no TTL (PTTL -1), got {ttl}");
    }
    // Both keys hash on the encoded name alone: the text between the first `{` and the next `}`.
    for key in [namespace_key(&ns), slots_key(&ns)] {
        let tag = &key[key.find('{').unwrap() + 1..];
        assert_eq!(&tag[..tag.find('}').unwrap()], ns.encoded(), "{key}");
    }
}

#[tokio::test]
async fn scripts_are_loaded_again_after_a_script_flush() {
    let Some(t) = target().await else { return };
    let ns = fresh("noscript");
    conformance::acquire(&t, &ns, &Owner::new("a"), LONG_TTL_MS).await;
    let mut raw = t.raw.clone();
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut raw)
        .await
        .unwrap();
    let b = conformance::acquire(&t, &ns, &Owner::new("b"), LONG_TTL_MS)
        .await
        .lease;
    assert_eq!(
        b.slot, 1,
        "EVALSHA failed with NOSCRIPT, the script was loaded again and ran"
    );
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
    assert_eq!(store.kind(), "redis");
    store.init().await.unwrap();
    let got = store
        .acquire(&fresh("url"), &CONFIG, &owner_request("a"))
        .await
        .unwrap();
    assert_eq!(got.lease.slot, 0);
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable_and_the_password_is_never_printed() {
    let port = free_port();
    let store = RedisStore::open(&format!("redis://cosid:s3cret-pw@127.0.0.1:{port}/0")).unwrap();
    assert!(!format!("{store:?}").contains("s3cret-pw"));
    let err = store
        .acquire(&fresh("down"), &CONFIG, &owner_request("a"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Unavailable { store: "redis", .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    assert!(!text.contains("s3cret-pw"), "{text}");
}

#[tokio::test]
async fn urls_that_do_not_parse_are_refused() {
    for bad in [
        "redis://127.0.0.1:notaport/0",
        "redis://127.0.0.1:6379/notadb",
    ] {
        match RedisStore::open(bad) {
            Err(StoreError::InvalidUrl { url, reason }) => {
                assert_eq!(url, bad);
                assert!(!reason.is_empty());
            }
            other => panic!("{bad}: expected InvalidUrl, got {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The acquire index: a hint that must never change a decision.

/// The same random calls on an indexed namespace and on one whose index is deleted before every call.
#[tokio::test]
async fn acquires_through_the_index_decide_as_reading_every_record_does() {
    let Some(t) = target().await else { return };
    let raw = t.raw.clone();
    hints::hints_never_change_a_decision(t.store.clone(), move |full| {
        let mut raw = raw.clone();
        async move {
            let _: () = raw.del(&RedisStore::index_keys(&full)).await.unwrap();
        }
    })
    .await;
}

/// An index that lies (it files a held slot as free) is caught by the record it names: the acquire takes another
/// slot, and the index is rebuilt from the records.
#[tokio::test]
async fn an_index_that_files_a_held_slot_as_free_is_caught_and_rebuilt() {
    let Some(t) = target().await else { return };
    let ns = fresh("index-lie");
    let mut raw = t.raw.clone();
    let first = t
        .store
        .acquire(&ns, &CONFIG, &owner_request("a"))
        .await
        .unwrap();
    assert_eq!(first.lease.slot, 0);
    let [index, free, held] = RedisStore::index_keys(&ns);
    let _: () = raw.zrem(&held, "0").await.unwrap();
    let _: () = raw.zadd(&free, "0", 0).await.unwrap();
    let second = t
        .store
        .acquire(&ns, &CONFIG, &owner_request("b"))
        .await
        .unwrap();
    assert_eq!(second.lease.slot, 1, "slot 0 is held by a");
    let held_now: Vec<String> = raw.zrange(&held, 0, -1).await.unwrap();
    assert_eq!(
        held_now,
        ["0", "1"],
        "the index was rebuilt from the records"
    );
    let free_now: Vec<String> = raw.zrange(&free, 0, -1).await.unwrap();
    assert!(free_now.is_empty(), "{free_now:?}");
    let n: u64 = raw.hget(&index, "n").await.unwrap();
    assert_eq!(n, 2);
}

/// An index whose every field is garbage is never trusted and never stops a call: renewals and releases go on, and
/// the next acquire rebuilds it from the records.
#[tokio::test]
async fn an_index_of_garbage_is_rebuilt_and_never_fails_a_call() {
    let Some(t) = target().await else { return };
    let ns = fresh("index-garbage");
    let mut raw = t.raw.clone();
    let a = t
        .store
        .acquire(&ns, &CONFIG, &owner_request("a"))
        .await
        .unwrap();
    let b = t
        .store
        .acquire(&ns, &CONFIG, &owner_request("b"))
        .await
        .unwrap();
    let [index, free, held] = RedisStore::index_keys(&ns);
    let _: () = raw.del(&[&index, &free, &held]).await.unwrap();
    let _: () = raw
        .hset_multiple(
            &index,
            &[
                ("v", "1"),
                ("n", "x"),
                ("hw", "-"),
                ("o:a", "7 z 9"),
                ("l:c", "banana"),
            ],
        )
        .await
        .unwrap();
    let _: () = raw.zadd(&free, "not a slot", 0).await.unwrap();
    let _: () = raw.zadd(&held, "neither", 0).await.unwrap();
    t.store
        .renew(&a.lease, LONG_TTL_MS, CONFIG.tolerance_ms)
        .await
        .unwrap();
    t.store.release(&b.lease, None).await.unwrap();
    let c = t
        .store
        .acquire(&ns, &CONFIG, &owner_request("c"))
        .await
        .unwrap();
    assert_eq!(c.lease.slot, 1, "b's released slot is the lowest free one");
    let n: String = raw.hget(&index, "n").await.unwrap();
    assert_eq!(n, "2");
    let free_now: Vec<String> = raw.zrange(&free, 0, -1).await.unwrap();
    assert!(free_now.is_empty(), "{free_now:?}");
    let held_now: Vec<String> = raw.zrange(&held, 0, -1).await.unwrap();
    assert_eq!(held_now, ["0", "1"]);
}

/// A namespace written before the index (here: whose index was deleted) gets one at its next acquire, and renewals
/// and releases keep it in step.
#[tokio::test]
async fn a_namespace_without_an_index_gets_one_and_every_write_keeps_it() {
    let Some(t) = target().await else { return };
    let ns = fresh("index-new");
    let mut raw = t.raw.clone();
    let [index, free, held] = RedisStore::index_keys(&ns);
    let mut leases = Vec::new();
    for key in ["a", "b", "c"] {
        leases.push(
            t.store
                .acquire(&ns, &CONFIG, &owner_request(key))
                .await
                .unwrap()
                .lease,
        );
    }
    let _: () = raw.del(&[&index, &free, &held]).await.unwrap();
    // A renewal and a release without an index leave it absent.
    t.store
        .renew(&leases[0], LONG_TTL_MS, CONFIG.tolerance_ms)
        .await
        .unwrap();
    t.store.release(&leases[1], None).await.unwrap();
    let exists: bool = raw.exists(&index).await.unwrap();
    assert!(!exists);
    // The next acquire builds it: b's released slot 1 is the lowest free one.
    let d = t
        .store
        .acquire(&ns, &CONFIG, &owner_request("d"))
        .await
        .unwrap();
    assert_eq!(d.lease.slot, 1);
    let fields: std::collections::HashMap<String, String> = raw.hgetall(&index).await.unwrap();
    assert_eq!(fields["n"], "3");
    assert_eq!(fields["hw"], "3");
    assert_eq!(fields["o:a"], "0");
    assert_eq!(fields["o:d"], "1");
    assert_eq!(fields["l:d"], "1");
    assert!(!fields.contains_key("o:b"), "b released: {fields:?}");
    assert!(
        !fields.contains_key("l:b"),
        "b's last slot is d's now: {fields:?}"
    );
    let held_now: Vec<String> = raw.zrange(&held, 0, -1).await.unwrap();
    assert_eq!(held_now.len(), 3, "{held_now:?}");
    // A release files the slot under free, and the next acquire finds it there.
    t.store.release(&d.lease, None).await.unwrap();
    let free_now: Vec<String> = raw.zrange(&free, 0, -1).await.unwrap();
    assert_eq!(free_now, ["1"]);
    let e = t
        .store
        .acquire(&ns, &CONFIG, &owner_request("e"))
        .await
        .unwrap();
    assert_eq!(e.lease.slot, 1);
}

/// How many times the server ran `command` (from scripts too) since its statistics were last reset.
async fn command_calls(raw: &mut redis::aio::MultiplexedConnection, command: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(raw)
        .await
        .unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

/// An acquire reads a handful of records however large the namespace: with 4,096 slots (12 bits) all held but one
/// released, it finds that one with a few `HGET`s and reads the slots hash whole only when it has no index.
/// Counted with the server's own command statistics, on a server of the test's own.
#[tokio::test]
async fn an_acquire_reads_a_handful_of_records_however_many_slots_the_namespace_has() {
    let test = "an_acquire_reads_a_handful_of_records_however_many_slots_the_namespace_has";
    let Some(server) = OwnRedis::start(test, &[]) else {
        return;
    };
    let t = connect(&server.url()).await;
    let mut raw = t.raw.clone();
    let ns = fresh("index-cost");
    let config = cosid::lease::NamespaceConfig { bits: 12, ..CONFIG };
    let mut leases = Vec::new();
    for i in 0..4_096 {
        let got = t
            .store
            .acquire(&ns, &config, &owner_request(&format!("h{i}")))
            .await
            .unwrap();
        assert_eq!(got.lease.slot, i);
        leases.push(got.lease);
    }
    t.store.release(&leases[3_000], None).await.unwrap();

    let reset = |mut raw: redis::aio::MultiplexedConnection| async move {
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(&mut raw)
            .await
            .unwrap();
    };
    reset(raw.clone()).await;
    let got = t
        .store
        .acquire(&ns, &config, &owner_request("late"))
        .await
        .unwrap();
    assert_eq!(got.lease.slot, 3_000);
    let (whole, single) = (
        command_calls(&mut raw, "hgetall").await,
        command_calls(&mut raw, "hget").await,
    );
    assert_eq!(whole, 1, "only the namespace record is read whole");
    assert!(single <= 16, "{single} HGETs for one acquire");
    let full: bool = t
        .store
        .acquire(&ns, &config, &owner_request("more"))
        .await
        .is_err();
    assert!(full, "every slot is held");

    // Without its index the acquire reads every record once, and leaves an index behind.
    t.store.release(&got.lease, None).await.unwrap();
    let _: () = raw.del(&RedisStore::index_keys(&ns)).await.unwrap();
    reset(raw.clone()).await;
    let again = t
        .store
        .acquire(&ns, &config, &owner_request("later"))
        .await
        .unwrap();
    assert_eq!(again.lease.slot, 3_000);
    // The namespace record, every slot to decide, every slot to rebuild the index.
    assert_eq!(command_calls(&mut raw, "hgetall").await, 3);
    let n: u64 = raw
        .hget(&RedisStore::index_keys(&ns)[0], "n")
        .await
        .unwrap();
    assert_eq!(n, 4_096);
}

// ---------------------------------------------------------------------------------------------------------------
// Servers of the test's own.

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A `redis-server` child on 127.0.0.1, killed when dropped.
struct OwnRedis {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
    args: Vec<String>,
}

impl OwnRedis {
    /// Starts a server with `args`, or prints why the test is skipped.
    fn start(test: &str, args: &[&str]) -> Option<OwnRedis> {
        let found = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            eprintln!("skipped {test}: redis-server is not on PATH (apt-get install redis-server)");
            return None;
        }
        let mut server = OwnRedis {
            child: None,
            port: free_port(),
            dir: tempfile::tempdir().unwrap(),
            args: args.iter().map(|s| s.to_string()).collect(),
        };
        server.launch();
        Some(server)
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    fn launch(&mut self) {
        let log = std::fs::File::create(self.dir.path().join("redis.log")).unwrap();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .arg("--dir")
            .arg(self.dir.path())
            .args(["--save", "", "--daemonize", "no"])
            .args(&self.args)
            .stdout(log)
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        // Bounded wait for the first reply (PONG, or NOAUTH when a password is set).
        for _ in 0..200 {
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
                let mut buf = [0u8; 64];
                if s.write_all(b"PING\r\n").is_ok() && s.read(&mut buf).is_ok_and(|n| n > 0) {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let log = std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default();
        panic!(
            "redis-server on port {} did not answer within 5 s:\n{log}",
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

    /// Starts it again on the same port and folder (the append-only file is read back).
    fn restart(&mut self) {
        self.kill();
        self.launch();
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
    }
}

#[tokio::test]
async fn settings_warnings_name_each_unsafe_setting() {
    let Some(unsafe_server) = OwnRedis::start(
        "settings_warnings_name_each_unsafe_setting",
        &[
            "--appendonly",
            "no",
            "--appendfsync",
            "everysec",
            "--maxmemory-policy",
            "allkeys-lru",
        ],
    ) else {
        return;
    };
    let warnings = RedisStore::open(&unsafe_server.url())
        .unwrap()
        .settings_warnings()
        .await
        .unwrap();
    let text = warnings.join("\n");
    assert_eq!(warnings.len(), 3, "{text}");
    for needle in [
        "appendonly = no",
        "appendfsync = everysec",
        "maxmemory-policy = allkeys-lru",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in {text}");
    }
    let safe = OwnRedis::start(
        "settings_warnings_name_each_unsafe_setting",
        &[
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--maxmemory-policy",
            "noeviction",
        ],
    )
    .unwrap();
    let warnings = RedisStore::open(&safe.url())
        .unwrap()
        .settings_warnings()
        .await
        .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[tokio::test]
async fn user_and_password_come_from_the_url() {
    let Some(server) = OwnRedis::start(
        "user_and_password_come_from_the_url",
        &[
            "--requirepass",
            "default-pw",
            "--user",
            "cosid",
            "on",
            ">cosid-pw",
            "~*",
            "&*",
            "+@all",
        ],
    ) else {
        return;
    };
    let port = server.port;
    for good in [
        format!("redis://cosid:cosid-pw@127.0.0.1:{port}/0"),
        format!("redis://:default-pw@127.0.0.1:{port}/0"),
    ] {
        let store = RedisStore::open(&good).unwrap();
        let got = store
            .acquire(&fresh("auth"), &CONFIG, &owner_request("a"))
            .await
            .unwrap_or_else(|e| panic!("{good}: {e}"));
        assert_eq!(got.lease.slot, 0);
    }
    // Wrong credentials are an answer, not an outage: not retried for the whole acquire timeout.
    for bad in [
        format!("redis://cosid:wrong-pw@127.0.0.1:{port}/0"),
        format!("redis://127.0.0.1:{port}/0"),
    ] {
        let err = RedisStore::open(&bad)
            .unwrap()
            .acquire(&fresh("auth"), &CONFIG, &owner_request("a"))
            .await
            .unwrap_err();
        assert!(!err.is_retryable(), "{bad}: {err:?}");
        assert!(!err.to_string().contains("cosid-pw"), "{err}");
    }
}

impl conformance::Restartable for OwnRedis {
    fn url(&self) -> String {
        OwnRedis::url(self)
    }

    fn kill(&mut self) {
        OwnRedis::kill(self)
    }

    fn restart(&mut self) {
        OwnRedis::restart(self)
    }
}

#[test]
fn a_redis_restart_fails_renewals_then_resumes_and_no_id_passes_a_ceiling() {
    let test = "a_redis_restart_fails_renewals_then_resumes_and_no_id_passes_a_ceiling";
    let Some(mut server) =
        OwnRedis::start(test, &["--appendonly", "yes", "--appendfsync", "always"])
    else {
        return;
    };
    let ttl = Duration::from_millis(1_200);
    let ttl_ms = ttl.as_millis() as u64;
    let events =
        conformance::a_server_restart_fails_renewals_then_resumes_and_no_id_passes_a_ceiling(
            &mut server,
            ttl,
        );
    // The keeper's back-off while Redis was down.
    let retries: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            Event::RenewFailed { retry_in_ms, .. } => Some(*retry_in_ms),
            _ => None,
        })
        .collect();
    // Each retry waits between half its back-off and all of it (jitter); the back-off starts at 100 ms and
    // doubles up to ttl/6.
    assert!(
        retries.first().is_some_and(|r| (50..=100).contains(r)),
        "the first retry comes within 50 to 100 ms: {retries:?}"
    );
    assert!(
        retries.iter().all(|&r| (50..=ttl_ms / 6).contains(&r)),
        "back-off is capped at ttl/6: {retries:?}"
    );
    assert!(
        retries.iter().any(|&r| r > 100),
        "back-off grew past its start: {retries:?}"
    );
}

#[test]
fn a_store_that_comes_up_during_the_acquire_timeout_is_used() {
    let test = "a_store_that_comes_up_during_the_acquire_timeout_is_used";
    let Some(mut server) = OwnRedis::start(test, &[]) else {
        return;
    };
    server.kill();
    let url = server.url();
    let starter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        server.launch();
        server
    });
    let rt = Runtime::builder()
        .store(url)
        .namespace("late-start")
        .ttl(Duration::from_millis(900))
        .acquire_timeout(Duration::from_secs(10))
        .build()
        .expect("the acquire loop retries an unreachable store until the timeout");
    rt.next_id().unwrap();
    rt.shutdown();
    drop(starter.join().unwrap());
}

/// Runs `openssl` with `args` (split at spaces) in `dir`; false when it is missing or fails.
fn openssl(dir: &std::path::Path, args: &str) -> bool {
    Command::new("openssl")
        .args(args.split(' '))
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn rediss_connects_over_tls_and_checks_the_certificate() {
    let test = "rediss_connects_over_tls_and_checks_the_certificate";
    let certs = tempfile::tempdir().unwrap();
    let dir = certs.path();
    let made = [
        "req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=cosid-test-CA",
        "req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.crt -days 1 -subj /CN=another-CA",
        "req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1",
    ]
    .iter()
    .all(|args| openssl(dir, args))
        && std::fs::write(dir.join("ext"), "subjectAltName=IP:127.0.0.1\n").is_ok()
        && openssl(
            dir,
            "x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 1 -extfile ext",
        );
    if !made {
        eprintln!("skipped {test}: openssl cannot make a test certificate");
        return;
    }
    let tls_port = free_port().to_string();
    let file = |name: &str| dir.join(name).display().to_string();
    let Some(server) = OwnRedis::start(
        test,
        &[
            "--tls-port",
            &tls_port,
            "--tls-cert-file",
            &file("server.crt"),
            "--tls-key-file",
            &file("server.key"),
            "--tls-ca-cert-file",
            &file("ca.crt"),
            "--tls-auth-clients",
            "no",
        ],
    ) else {
        return;
    };
    let url = format!("rediss://127.0.0.1:{tls_port}/0");
    // The trusted roots are read from SSL_CERT_FILE, which is process-wide: each try runs in a child process, one
    // trusting the server's CA, one trusting another CA only.
    let run = |ca: Option<String>| {
        let mut child = Command::new(std::env::current_exe().unwrap());
        child
            .args(["tls_child", "--exact", "--nocapture", "--test-threads", "1"])
            .env("COSID_TLS_CHILD_URL", &url)
            .env_remove("SSL_CERT_DIR");
        match ca {
            Some(ca) => child.env("SSL_CERT_FILE", ca),
            None => child.env("SSL_CERT_FILE", file("other-ca.crt")),
        };
        let out = child.output().unwrap();
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
    };
    let trusted = run(Some(file("ca.crt")));
    assert!(trusted.contains("tls-child: acquired slot 0"), "{trusted}");
    let untrusted = run(None);
    assert!(
        untrusted.contains("tls-child: refused:") && untrusted.contains("certificate"),
        "a server certificate from a CA the client does not trust is refused: {untrusted}"
    );
    drop(server);
}

/// The child of `rediss_connects_over_tls_and_checks_the_certificate`: does nothing unless that test runs it.
#[test]
fn tls_child() {
    let Ok(url) = std::env::var("COSID_TLS_CHILD_URL") else {
        return;
    };
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = RedisStore::open(&url).unwrap();
    match tokio.block_on(store.acquire(&fresh("tls"), &CONFIG, &owner_request("a"))) {
        Ok(got) => println!("tls-child: acquired slot {}", got.lease.slot),
        Err(e) => println!("tls-child: refused: {e}"),
    }
}

/// Redis restarted empty (or flushed, or failed over to an empty replica) under two live holders: each one's next
/// renewal finds its records gone, which is certain evidence of lost writes. Before anything is granted again the
/// namespace's `not_before` is raised past every window granted before the loss, so a holder that takes the other's
/// slot (its record gone too) cannot issue a timestamp the other may still be issuing. Both keep issuing; no id
/// repeats; the alarm is raised.
#[test]
fn lost_data_under_two_holders_raises_the_alarm_and_repeats_no_id() {
    let test = "lost_data_under_two_holders_raises_the_alarm_and_repeats_no_id";
    let Some(server) = OwnRedis::start(test, &["--appendonly", "yes", "--appendfsync", "always"])
    else {
        return;
    };
    let ttl = Duration::from_millis(1_500);
    let namespace = format!("lost-{}", uuid::Uuid::new_v4());
    let build = |events: &Recorder| {
        Runtime::builder()
            .store(server.url())
            .namespace(namespace.clone())
            .ttl(ttl)
            .tolerance(Duration::from_millis(200))
            .bits(4)
            .waits(Waits {
                backwards: Duration::from_millis(500),
                window: Duration::from_millis(20),
            })
            .subscribe(events.listener())
            .build()
            .unwrap()
    };
    let (a_events, b_events) = (Recorder::default(), Recorder::default());
    let a = Arc::new(build(&a_events));
    // B renews half a period after A: flushed right after A's renewal, B (on slot 1) finds the loss first and,
    // without the recovery, would take slot 0 from its floor 0 while A still issues on it.
    std::thread::sleep(ttl / 6);
    let b = Arc::new(build(&b_events));
    assert_eq!((a.status().slot, b.status().slot), (0, 1));

    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let issue = |rt: Arc<Runtime>| {
        let stop = stop.clone();
        let ids = Arc::new(std::sync::Mutex::new(Vec::new()));
        let out = ids.clone();
        let thread = std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match rt.next_id() {
                    Ok(id) => out.lock().unwrap().push(id.as_u64()),
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        (thread, ids)
    };
    let (a_thread, a_ids) = issue(a.clone());
    let (b_thread, b_ids) = issue(b.clone());
    let count = |ids: &std::sync::Mutex<Vec<u64>>| ids.lock().unwrap().len();

    // Flush right after one of A's renewals.
    let renewals = |events: &Recorder| {
        events
            .all()
            .iter()
            .filter(|e| matches!(e, Event::Renewed { .. }))
            .count()
    };
    let seen = renewals(&a_events);
    let deadline = Instant::now() + Duration::from_secs(10);
    while renewals(&a_events) == seen {
        assert!(Instant::now() < deadline, "A never renewed");
        std::thread::sleep(Duration::from_millis(2));
    }
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_connection().unwrap();
    let _: () = redis::cmd("FLUSHALL").query(&mut conn).unwrap();

    // Both see the loss, recover, and issue again on a new window.
    let recovered = |events: &Recorder| {
        let all = events.all();
        all.iter()
            .position(|e| matches!(e, Event::StoreRegression { .. }))
            .is_some_and(|i| all[i..].iter().any(|e| matches!(e, Event::Acquired { .. })))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(recovered(&a_events) && recovered(&b_events)) {
        assert!(
            Instant::now() < deadline,
            "no StoreRegression then Acquired on both within 30 s:\nA: {:#?}\nB: {:#?}",
            a_events.all(),
            b_events.all()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let both issue on their new windows (their floors lie up to ttl + tolerance ahead).
    let (a_before, b_before) = (count(&a_ids), count(&b_ids));
    let deadline = Instant::now() + Duration::from_secs(30);
    while count(&a_ids) < a_before + 1_000 || count(&b_ids) < b_before + 1_000 {
        assert!(Instant::now() < deadline, "not issuing again within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    a_thread.join().unwrap();
    b_thread.join().unwrap();
    let (a_ids, b_ids) = (a_ids.lock().unwrap().clone(), b_ids.lock().unwrap().clone());
    let mut all = std::collections::HashSet::new();
    let total = a_ids.len() + b_ids.len();
    let repeated = a_ids
        .iter()
        .chain(&b_ids)
        .filter(|id| !all.insert(**id))
        .count();
    assert_eq!(
        repeated, 0,
        "{repeated} of {total} ids repeated across the two holders"
    );
    assert!(!a_ids.is_empty() && !b_ids.is_empty());
    a.shutdown();
    b.shutdown();
}

/// The `STORE_UNSAFE` events a runtime on `url` gives its listeners by the end of its start.
fn unsafe_events_at_start(url: &str) -> Vec<Event> {
    let events = Recorder::default();
    let rt = Runtime::builder()
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
fn a_runtime_on_a_server_that_fsyncs_every_second_reports_it_as_an_event() {
    let test = "a_runtime_on_a_server_that_fsyncs_every_second_reports_it_as_an_event";
    let Some(server) = OwnRedis::start(test, &["--appendonly", "yes", "--appendfsync", "everysec"])
    else {
        return;
    };
    let found = unsafe_events_at_start(&server.url());
    assert_eq!(
        found,
        vec![Event::StoreUnsafe {
            store: "redis".into(),
            setting: "appendfsync".into(),
            value: "everysec".into(),
            expected: "always".into(),
        }]
    );
}

#[test]
fn a_runtime_on_a_safe_server_reports_no_unsafe_setting() {
    let Some(url) = conformance::server_url(URL_VAR, SCRIPT) else {
        return;
    };
    let found = unsafe_events_at_start(&url);
    assert!(found.is_empty(), "{found:?}");
}

/// An index whose `hw` says every slot has a record and whose `free` set is gone (as records deleted by hand leave
/// it) is checked against every record before a refusal, and rebuilt: it used to refuse every start for good.
#[tokio::test]
async fn an_index_that_says_no_slot_is_free_is_checked_before_a_refusal() {
    let Some(t) = target().await else { return };
    let raw = t.raw.clone();
    hints::a_hint_that_says_no_slot_is_unused_is_checked(
        t.store.clone(),
        "redis-hint-full",
        |ns| async move {
            let mut raw = raw;
            let [index, free, _] = RedisStore::index_keys(&ns);
            let _: () = raw.hset(&index, "hw", "8").await.unwrap();
            let _: () = raw.del(&free).await.unwrap();
        },
    )
    .await;
}
