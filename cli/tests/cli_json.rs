//! `--json` on every command that prints data, and failures as one JSON object on stderr under `--json`, with the
//! exit statuses of the text form (1 for the store or the runtime, 2 for usage, settings or input).

use serde_json::Value;
use std::process::{Command, Output};

/// `cosid` with none of the caller's settings, on an SQLite file in `dir`.
fn cosid(dir: &tempfile::TempDir, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cosid"));
    for (name, _) in cosid::config::ENV_VARS {
        cmd.env_remove(name);
    }
    cmd.env("XDG_STATE_HOME", dir.path().join("state"))
        .env("HOME", dir.path().join("home"))
        .env(
            "COSID_STORE",
            format!("sqlite://{}", dir.path().join("leases.db").display()),
        )
        .args(args)
        .output()
        .expect("cosid runs")
}

/// The one JSON object on stdout of a successful run.
fn ok_json(dir: &tempfile::TempDir, args: &[&str]) -> Value {
    let out = cosid(dir, args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "cosid {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    assert_eq!(text.lines().count(), 1, "one line: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("cosid {args:?}: {e}: {text}"))
}

/// The error object on stderr of a failed run, with its exit status; stdout must be empty.
fn error_json(dir: &tempfile::TempDir, args: &[&str]) -> (i32, String, String) {
    let out = cosid(dir, args);
    let stderr = String::from_utf8(out.stderr).expect("UTF-8");
    assert!(out.stdout.is_empty(), "cosid {args:?} printed to stdout");
    assert_eq!(stderr.lines().count(), 1, "one line on stderr: {stderr}");
    let value: Value =
        serde_json::from_str(&stderr).unwrap_or_else(|e| panic!("cosid {args:?}: {e}: {stderr}"));
    let error = &value["error"];
    let code = error["code"].as_str().expect("a code").to_owned();
    let message = error["message"].as_str().expect("a message").to_owned();
    assert!(!message.is_empty());
    assert_eq!(value.as_object().map(|o| o.len()), Some(1), "{value}");
    (out.status.code().expect("an exit status"), code, message)
}

#[test]
fn next_prints_its_ids_as_one_object_in_each_form() {
    let dir = tempfile::tempdir().unwrap();
    let v = ok_json(&dir, &["next", "-n", "5000", "--json"]);
    assert_eq!(v["format"], "decimal");
    let ids: Vec<u64> = v["ids"]
        .as_array()
        .expect("ids")
        .iter()
        .map(|id| id.as_str().expect("a string").parse().expect("decimal"))
        .collect();
    assert_eq!(ids.len(), 5000);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "increasing");
    for form in ["friendly", "base62"] {
        let v = ok_json(&dir, &["next", "-n", "3", "--format", form, "--json"]);
        assert_eq!(v["format"], form);
        let ids = v["ids"].as_array().expect("ids");
        assert_eq!(ids.len(), 3);
        // Each one reads back.
        let id = ids[0].as_str().expect("a string");
        let parsed = ok_json(&dir, &["parse", id, "--json"]);
        assert_eq!(parsed["form"], form, "{parsed}");
    }
    let v = ok_json(&dir, &["next", "-n", "0", "--json"]);
    assert_eq!(v["ids"].as_array().map(Vec::len), Some(0));
}

#[test]
fn init_leases_and_status_print_one_object() {
    let dir = tempfile::tempdir().unwrap();
    let init = ok_json(&dir, &["init", "--json"]);
    assert_eq!(init["created"], true, "{init}");
    assert_eq!(init["store_kind"], "sqlite");
    assert_eq!(init["namespace"], "default");
    assert_eq!(init["record"], Value::Null);
    let again = ok_json(&dir, &["init", "--json"]);
    assert_eq!(again["created"], false);
    ok_json(&dir, &["next", "--json"]);
    let init = ok_json(&dir, &["init", "--json"]);
    assert_eq!(init["record"]["bits"], 10, "{init}");
    assert_eq!(init["slot_records"], 1);
    let leases = ok_json(&dir, &["leases", "--json"]);
    assert_eq!(
        leases["slots"].as_array().map(Vec::len),
        Some(1),
        "{leases}"
    );
    let status = ok_json(&dir, &["status", "--json"]);
    assert_eq!(status["released"], true, "{status}");
    let doctor = ok_json(&dir, &["doctor", "--json"]);
    assert_eq!(doctor["ok"], true, "{doctor}");
}

#[test]
fn failures_are_one_object_on_stderr_with_the_same_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    // Bad input: 2, for every command.
    let (status, code, message) = error_json(&dir, &["parse", "nope", "--json"]);
    assert_eq!((status, code.as_str()), (2, "INVALID_ID"));
    assert!(message.contains("\"nope\""), "{message}");
    for command in ["next", "leases", "status", "init", "doctor"] {
        let (status, code, message) = error_json(&dir, &[command, "--ttl", "forever", "--json"]);
        assert_eq!(
            (status, code.as_str()),
            (2, "CONFIG"),
            "{command}: {message}"
        );
        assert!(message.contains("--ttl"), "{command}: {message}");
    }
    let (status, code, _) = error_json(
        &dir,
        &[
            "migrate",
            "--from",
            "ftp://x",
            "--old-namespace",
            "a",
            "--json",
        ],
    );
    assert_eq!((status, code.as_str()), (2, "CONFIG"));
    // What clap refuses: the same object, code USAGE, status 2.
    let (status, code, message) = error_json(&dir, &["next", "--count", "many", "--json"]);
    assert_eq!((status, code.as_str()), (2, "USAGE"));
    assert!(message.contains("many"), "{message}");
    // The store failing: 1 (a file that is not an SQLite database).
    let file = dir.path().join("not-a-db");
    std::fs::write(&file, vec![b'x'; 4096]).unwrap();
    let url = format!("--store=sqlite://{}", file.display());
    for command in ["next", "leases", "status", "init"] {
        let (status, code, message) = error_json(&dir, &[command, &url, "--json"]);
        assert_eq!(status, 1, "{command}: [{code}] {message}");
        assert!(message.contains("not-a-db"), "{command}: {message}");
    }
}

#[test]
fn without_json_failures_stay_text() {
    let dir = tempfile::tempdir().unwrap();
    let out = cosid(&dir, &["parse", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("cosid: error: [INVALID_ID]"), "{stderr}");
    // `--json` after `--` is an operand, not the flag.
    let out = cosid(&dir, &["next", "-n", "x", "--", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!String::from_utf8(out.stderr).unwrap().starts_with('{'));
}
