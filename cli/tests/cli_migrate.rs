//! `cosid migrate` end to end: the old machine-id layout is written into the real Redis of
//! `COSID_TEST_REDIS_URL` (started by `.ci/services/redis.sh`), and the migration writes into an SQLite store in
//! a temporary folder. Without the variable, each test says why it is skipped.
#![cfg(feature = "redis")]

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Output};

fn redis_url() -> Option<String> {
    let url = std::env::var("COSID_TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty());
    if url.is_none() {
        println!("skipped: set COSID_TEST_REDIS_URL to run this test against a real server");
    }
    url
}

/// Sends one command to the Redis of `url` in its own protocol (the CLI has no Redis client of its own) and
/// returns the first line of the answer.
fn redis(url: &str, args: &[&str]) -> String {
    let rest = url.split_once("://").expect("redis://...").1;
    let (auth, rest) = match rest.rsplit_once('@') {
        Some((auth, rest)) => (Some(auth), rest),
        None => (None, rest),
    };
    let (host, db) = rest.split_once('/').unwrap_or((rest, "0"));
    let mut conn = TcpStream::connect(host).expect("redis reachable");
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut send = |args: &[&str]| {
        let mut out = format!("*{}\r\n", args.len());
        for a in args {
            out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        conn.write_all(out.as_bytes()).unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(!line.starts_with('-'), "redis {args:?}: {line}");
        line
    };
    if let Some(auth) = auth {
        match auth.split_once(':') {
            Some(("", pass)) => send(&["AUTH", pass]),
            Some((user, pass)) => send(&["AUTH", user, pass]),
            None => send(&["AUTH", auth]),
        };
    }
    let db = db.split('?').next().unwrap_or("0");
    if !db.is_empty() {
        send(&["SELECT", db]);
    }
    send(args)
}

fn unique(prefix: &str) -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    format!("{prefix}-{}-{}", t.as_nanos(), std::process::id())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn cosid(dir: &tempfile::TempDir, args: &[&str], code: i32) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cosid"));
    for (name, _) in cosid::config::ENV_VARS {
        cmd.env_remove(name);
    }
    let out = cmd
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .env("HOME", dir.path().join("home"))
        .env(
            "COSID_STORE",
            format!("sqlite://{}", dir.path().join("leases.db").display()),
        )
        .args(args)
        .output()
        .expect("cosid runs");
    assert_eq!(
        out.status.code(),
        Some(code),
        "cosid {args:?}\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The namespace record's `not_before` as `cosid leases` shows it, `None` if there is no record.
fn not_before(dir: &tempfile::TempDir, namespace: &str) -> Option<u64> {
    let out = cosid(dir, &["leases", "--json", "--namespace", namespace], 0);
    let leases: Value = serde_json::from_slice(&out.stdout).unwrap();
    leases["record"]["not_before"].as_u64()
}

#[test]
fn an_unknown_stamp_is_refused_until_the_operator_says_when_the_old_deployment_stopped() {
    let Some(url) = redis_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let old = unique("old");
    // CosId 1.8.x writes `machineId|0` when it distributes a machine id and never updates it.
    let itc = format!("cosid:{{{old}}}:itc_idx");
    redis(&url, &["HSET", &itc, "10.0.0.9:8080", "7|0"]);
    let known = now_ms() - 60_000;
    redis(
        &url,
        &["HSET", &itc, "10.0.0.1:8080", &format!("3|{known}")],
    );

    // Read as 1970, this used to raise not_before to 5 minutes past the Unix epoch and succeed.
    let out = cosid(
        &dir,
        &["migrate", "--from", &url, "--old-namespace", &old],
        2,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("machine 7") && err.contains("10.0.0.9:8080") && err.contains("--not-before"),
        "{err}"
    );
    assert_eq!(not_before(&dir, &old), None, "nothing written");

    // The operator knows when the old deployment stopped.
    let stopped = now_ms() + 30_000;
    let out = cosid(
        &dir,
        &[
            "migrate",
            "--from",
            &url,
            "--old-namespace",
            &old,
            "--not-before",
            &stopped.to_string(),
            "--safe-guard",
            "1s",
        ],
        0,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("--not-before {stopped}")), "{text}");
    // The new namespace is the old one's name: no --namespace was given.
    assert_eq!(not_before(&dir, &old), Some(stopped));
    assert_eq!(not_before(&dir, "default"), None);

    // RFC 3339 works too; a time before the old epoch is refused.
    let out = cosid(
        &dir,
        &[
            "migrate",
            "--from",
            &url,
            "--old-namespace",
            &old,
            "--not-before",
            "2019-01-01T00:00:00Z",
            "--dry-run",
        ],
        2,
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not_before"),
        "{out:?}"
    );
    redis(&url, &["DEL", &itc]);
}

#[test]
fn the_new_namespace_is_the_old_one_unless_given() {
    let Some(url) = redis_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let old = unique("ns");
    let revert = format!("cosid:{{{old}}}:revert");
    let last = now_ms() - 1_000;
    redis(&url, &["HSET", &revert, "4", &last.to_string()]);
    let args = [
        "migrate",
        "--from",
        url.as_str(),
        "--old-namespace",
        old.as_str(),
        "--safe-guard",
        "1s",
    ];
    cosid(&dir, &args, 0);
    assert_eq!(not_before(&dir, &old), Some(last + 1_000));
    assert_eq!(not_before(&dir, "default"), None);

    let other = unique("new");
    let mut with_namespace = args.to_vec();
    with_namespace.extend(["--namespace", other.as_str()]);
    cosid(&dir, &with_namespace, 0);
    assert_eq!(not_before(&dir, &other), Some(last + 1_000));
    redis(&url, &["DEL", &revert]);
}

#[test]
fn json_reports_the_machines_the_plan_and_what_was_written() {
    let Some(url) = redis_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let old = unique("old-json");
    let itc = format!("cosid:{{{old}}}:itc_idx");
    let known = now_ms() - 60_000;
    redis(
        &url,
        &["HSET", &itc, "10.0.0.1:8080", &format!("3|{known}")],
    );
    let args = ["migrate", "--from", &url, "--old-namespace", &old, "--json"];
    let out = cosid(&dir, &[&args[..], &["--dry-run"]].concat(), 0);
    // The warning about trusting the stamps is in the object: stderr holds only an error object.
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dry: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(
        dry["warnings"][0]
            .as_str()
            .unwrap()
            .contains("--not-before"),
        "{dry}"
    );
    assert_eq!(dry["dry_run"], true, "{dry}");
    assert_eq!(dry["written"], false);
    assert_eq!(dry["machines"][0]["machine_id"], 3);
    assert_eq!(dry["machines"][0]["last_timestamp_ms"], known);
    assert_eq!(dry["target"]["namespace"], old.as_str());
    let not_before_planned = dry["not_before"].as_u64().expect("not_before");
    assert!(not_before_planned > known);
    assert_eq!(not_before(&dir, &old), None, "nothing written");

    let done: Value =
        serde_json::from_slice(&cosid(&dir, &args, 0).stdout).expect("one JSON object");
    assert_eq!(done["written"], true, "{done}");
    assert_eq!(done["record"]["not_before"], not_before_planned);
    assert_eq!(not_before(&dir, &old), Some(not_before_planned));
}
