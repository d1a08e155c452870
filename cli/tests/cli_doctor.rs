//! `cosid doctor` on an SQLite store in a temporary folder, as a user would run it before deploying; on Redis
//! at `COSID_TEST_REDIS_URL` (skipped when unset) and on a redis-server of the test's own that fsyncs every second.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// `cosid` with none of the caller's settings, on the store `url`.
fn cosid(dir: &Path, url: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cosid"));
    for (name, _) in cosid::config::ENV_VARS {
        cmd.env_remove(name);
    }
    cmd.env("XDG_STATE_HOME", dir.join("state"))
        .env("HOME", dir.join("home"))
        .env("COSID_STORE", url)
        .args(args)
        .output()
        .expect("cosid runs")
}

fn sqlite(dir: &Path) -> String {
    format!("sqlite://{}", dir.join("leases.db").display())
}

/// `cosid doctor --json` with `extra` flags: its exit status and report.
fn doctor(dir: &Path, url: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["doctor", "--json"];
    args.extend(extra);
    let out = cosid(dir, url, &args);
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let report = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{e}: {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().expect("an exit status"), report)
}

/// The status of the check `name` in a report.
fn status<'a>(report: &'a Value, name: &str) -> &'a str {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report}"))["status"]
        .as_str()
        .expect("a status")
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == name)
        .expect("the check")
}

#[test]
fn a_good_store_passes_every_check_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite(dir.path());
    assert!(cosid(dir.path(), &url, &["init"]).status.success());
    let out = cosid(dir.path(), &url, &["doctor"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    for name in ["reachable", "durability", "clock", "namespace", "slots"] {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no line for {name}:\n{text}"));
        assert!(line.starts_with('✓'), "{line}");
    }
    let (code, report) = doctor(dir.path(), &url, &[]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["ok"], true);
    assert_eq!(report["namespace"], "default");
    let clock = check(&report, "clock");
    assert!(clock["skew_ms"].as_i64().unwrap().abs() <= 500, "{clock}");
    let slots = check(&report, "slots");
    assert_eq!(
        (slots["held"].as_u64(), slots["total"].as_u64()),
        (Some(0), Some(1024))
    );
}

#[test]
fn a_namespace_recorded_with_other_settings_fails_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite(dir.path());
    assert!(cosid(dir.path(), &url, &["next", "--bits", "4"])
        .status
        .success());
    let (code, report) = doctor(dir.path(), &url, &[]);
    assert_eq!(code, 1, "this process has bits 10, the record 4: {report}");
    assert_eq!(report["ok"], false);
    assert_eq!(status(&report, "namespace"), "fail");
    let detail = check(&report, "namespace")["detail"].as_str().unwrap();
    assert!(detail.contains("bits"), "{detail}");
    assert_eq!(check(&report, "namespace")["record"]["bits"], 4);
    let (code, report) = doctor(dir.path(), &url, &["--bits", "4"]);
    assert_eq!(code, 0, "{report}");
    let (code, report) = doctor(dir.path(), &url, &["--bits", "4", "--tolerance", "2s"]);
    assert_eq!((code, status(&report, "namespace")), (1, "fail"));
    // Another namespace of the same store has no record: fine.
    let (code, report) = doctor(dir.path(), &url, &["--namespace", "other"]);
    assert_eq!((code, status(&report, "namespace")), (0, "ok"), "{report}");
}

#[test]
fn a_namespace_with_no_free_slot_fails() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite(dir.path());
    // The namespace is recorded with bits 1: two slots, fewer than this process takes.
    assert!(cosid(dir.path(), &url, &["next", "--bits", "1"])
        .status
        .success());
    let (code, report) = doctor(dir.path(), &url, &["--bits", "1", "--slots", "3"]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(status(&report, "slots"), "fail");
    assert_eq!(check(&report, "slots")["total"], 2);
    assert_eq!(check(&report, "slots")["needed"], 3);
}

#[test]
fn a_store_that_does_not_answer_fails_and_skips_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    // A missing SQLite file is not created by a check.
    let url = sqlite(dir.path());
    let (code, report) = doctor(dir.path(), &url, &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(status(&report, "reachable"), "fail");
    for name in ["durability", "clock", "namespace", "slots"] {
        assert_eq!(status(&report, name), "skipped");
    }
    assert!(!dir.path().join("leases.db").exists());
    // A bad URL is the caller's mistake, as for every command: status 2, no report.
    let out = cosid(dir.path(), "bogus://x", &["doctor"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[cfg(feature = "redis")]
#[test]
fn redis_at_cosid_test_redis_url() {
    let Some(url) = std::env::var("COSID_TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        println!("skipped: set COSID_TEST_REDIS_URL to run cosid doctor against Redis");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ns = format!("cli-doctor-{}", std::process::id());
    let (_, report) = doctor(dir.path(), &url, &["--namespace", &ns]);
    assert_eq!(status(&report, "reachable"), "ok", "{report}");
    assert_eq!(status(&report, "clock"), "ok", "{report}");
    assert_eq!(status(&report, "namespace"), "ok", "{report}");
    assert_eq!(status(&report, "slots"), "ok", "{report}");
}

#[cfg(feature = "redis")]
#[test]
fn redis_that_fsyncs_every_second_fails_durability() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let Ok(child) = Command::new("redis-server")
        .args([
            "--bind",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--save",
            "",
        ])
        .args(["--appendonly", "yes", "--appendfsync", "everysec"])
        .arg("--dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
    else {
        println!("skipped: no redis-server to start");
        return;
    };
    struct Server(std::process::Child);
    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _server = Server(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "redis-server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let url = format!("redis://127.0.0.1:{port}/0");
    let (code, report) = doctor(dir.path(), &url, &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(status(&report, "durability"), "fail");
    let found = &check(&report, "durability")["unsafe_settings"][0];
    assert_eq!(
        (found["setting"].as_str(), found["value"].as_str()),
        (Some("appendfsync"), Some("everysec"))
    );
    assert_eq!(status(&report, "reachable"), "ok");
    // Under --json, init and status put the finding in their object, and stderr stays empty.
    let init = cosid(dir.path(), &url, &["init", "--json"]);
    assert!(init.status.success() && init.stderr.is_empty(), "{init:?}");
    let init: Value = serde_json::from_slice(&init.stdout).unwrap();
    assert_eq!(
        init["unsafe_settings"][0]["setting"], "appendfsync",
        "{init}"
    );
    let status = cosid(dir.path(), &url, &["status", "--json"]);
    assert!(
        status.status.success() && status.stderr.is_empty(),
        "{status:?}"
    );
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    let warning = status["warnings"][0].as_str().unwrap_or_default();
    assert!(warning.contains("appendfsync = everysec"), "{status}");
}
