//! The `cosid` binary end to end: each test runs it as a user would, on its own SQLite file in a temporary folder.

use cosid::{Id, Layout};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temporary folder with a store in it, and a way to run `cosid` on it.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("a temporary folder"),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn db(&self) -> PathBuf {
        self.path().join("leases.db")
    }

    fn store_url(&self) -> String {
        format!("sqlite://{}", self.db().display())
    }

    /// `cosid` with none of the caller's `COSID_*` settings, its state directory inside the sandbox, and no store.
    fn bare(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cosid"));
        for (name, _) in cosid::config::ENV_VARS {
            cmd.env_remove(name);
        }
        cmd.env("XDG_STATE_HOME", self.path().join("state"));
        cmd.env("HOME", self.path().join("home"));
        cmd
    }

    /// `cosid` on this sandbox's store.
    fn cosid(&self) -> Command {
        let mut cmd = self.bare();
        cmd.env("COSID_STORE", self.store_url());
        cmd
    }
}

/// Runs `cmd` with `args` and returns its output; panics with both streams if the exit status is not `code`.
fn run(mut cmd: Command, args: &[&str], code: i32) -> Output {
    let out = cmd.args(args).output().expect("cosid runs");
    assert_eq!(
        out.status.code(),
        Some(code),
        "cosid {args:?}\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).expect("UTF-8 output")
}

fn lines(out: &Output) -> Vec<String> {
    stdout(out).lines().map(str::to_owned).collect()
}

fn json(out: &Output) -> Value {
    serde_json::from_str(&stdout(out)).expect("one JSON object")
}

fn decimal_ids(out: &Output) -> Vec<u64> {
    lines(out)
        .iter()
        .map(|l| {
            l.parse()
                .unwrap_or_else(|_| panic!("not a decimal id: {l:?}"))
        })
        .collect()
}

fn assert_increasing(ids: &[u64]) {
    for pair in ids.windows(2) {
        assert!(
            pair[0] < pair[1],
            "ids not increasing: {} then {}",
            pair[0],
            pair[1]
        );
    }
}

#[test]
fn next_prints_unique_increasing_decimal_ids() {
    let s = Sandbox::new();
    let ids = decimal_ids(&run(s.cosid(), &["next", "-n", "5"], 0));
    assert_eq!(ids.len(), 5);
    assert_increasing(&ids);
    assert!(
        s.db().exists(),
        "the store file named by COSID_STORE is created"
    );
    // Every id is one of the default layout's, issued now-ish (after 2024).
    for id in &ids {
        let parts = Layout::millis().decompose(Id::from_u64(*id)).unwrap();
        assert!(parts.timestamp_ms > 1_704_067_200_000, "{parts:?}");
    }
    // A second run hands out later ids: the released window's last timestamp is the next floor.
    let later = decimal_ids(&run(s.cosid(), &["next", "-n", "3"], 0));
    assert!(later[0] > ids[4], "{later:?} after {ids:?}");
}

#[test]
fn next_defaults_to_a_store_in_the_state_directory() {
    let s = Sandbox::new();
    let db = s.path().join("state").join("cosid").join("leases.db");
    assert!(!db.exists());
    let ids = decimal_ids(&run(s.bare(), &["next", "-n", "5"], 0));
    assert_eq!(ids.len(), 5);
    assert_increasing(&ids);
    assert!(db.exists(), "no default store at {}", db.display());
    let leases = json(&run(s.bare(), &["leases", "--json"], 0));
    assert_eq!(leases["store"], format!("sqlite://{}", db.display()));
    assert_eq!(leases["slots"].as_array().unwrap().len(), 1);
}

#[test]
fn friendly_and_base62_round_trip_through_parse() {
    let s = Sandbox::new();
    let layout = Layout::millis();
    for (format, field) in [
        ("friendly", "friendly"),
        ("base62", "base62"),
        ("dec", "decimal"),
    ] {
        let printed = lines(&run(s.cosid(), &["next", "-n", "3", "--format", format], 0));
        assert_eq!(printed.len(), 3, "{printed:?}");
        let mut decimals = Vec::new();
        for text in &printed {
            let parsed = json(&run(s.cosid(), &["parse", "--json", text], 0));
            assert_eq!(parsed["form"], field, "{parsed}");
            assert_eq!(parsed[field], text.as_str(), "{parsed}");
            let decimal: u64 = parsed["decimal"].as_str().unwrap().parse().unwrap();
            let id = Id::from_u64(decimal);
            // The other forms agree with the library's, and read back to the same id through the command.
            assert_eq!(parsed["friendly"], layout.to_friendly(id).unwrap());
            assert_eq!(parsed["base62"], id.to_base62());
            let parts = layout.decompose(id).unwrap();
            assert_eq!(parsed["unix_ms"], parts.timestamp_ms);
            assert_eq!(parsed["slot"], parts.slot);
            assert_eq!(parsed["sequence"], parts.sequence);
            for other in ["friendly", "base62", "decimal"] {
                let again = json(&run(
                    s.cosid(),
                    &["parse", "--json", parsed[other].as_str().unwrap()],
                    0,
                ));
                assert_eq!(again["decimal"], parsed["decimal"], "{other}: {again}");
                assert_eq!(again["form"], other);
            }
            decimals.push(decimal);
        }
        assert_increasing(&decimals);
    }
}

#[test]
fn parse_prints_fields_and_names_the_form() {
    let s = Sandbox::new();
    let layout = Layout::millis();
    let id = layout.compose(130_000_000_000, 3, 7).unwrap();
    let out = stdout(&run(
        s.cosid(),
        &["parse", &layout.to_friendly(id).unwrap()],
        0,
    ));
    assert!(out.contains("read as    friendly"), "{out}");
    assert!(out.contains(&format!("decimal    {id}")), "{out}");
    assert!(
        out.contains(&format!("base62     {}", id.to_base62())),
        "{out}"
    );
    assert!(out.contains("timestamp  2024-02-06T07:06:40.000Z"), "{out}");
    assert!(out.contains("unix_ms    1707203200000"), "{out}");
    assert!(out.contains("slot       3\n"), "{out}");
    assert!(out.contains("sequence   7\n"), "{out}");
    // The layout comes from --layout or COSID_LAYOUT.
    let seconds = Layout::seconds().compose(1, 2, 3).unwrap().to_string();
    let out = json(&run(
        s.cosid(),
        &["--layout", "seconds", "parse", "--json", &seconds],
        0,
    ));
    assert_eq!(out["friendly"], "20191224160001000-2-3");
    let mut env = s.cosid();
    env.env("COSID_LAYOUT", "seconds");
    assert_eq!(
        json(&run(env, &["parse", "--json", &seconds], 0))["friendly"],
        "20191224160001000-2-3"
    );
}

#[test]
fn parse_rejects_malformed_input_with_status_2() {
    let s = Sandbox::new();
    let good = Layout::millis().compose(1_000, 1, 1).unwrap();
    let bad = [
        String::new(),
        "-1".into(),
        "+42".into(),
        "042".into(),
        " 42".into(),
        "42 ".into(),
        "٤٢".into(),
        "18446744073709551616".into(),
        "9223372036854775808".into(),   // sign bit set
        "zzzzzzzzzzz".into(),           // base-62 overflow
        "0000000001".into(),            // base-62 too short, decimal leading zero
        "20191324160001000-1-1".into(), // month 13
        "20191224160001000-01-1".into(),
        "20191224160001000-1024-1".into(), // slot past 10 bits
        "20191224160001000-1-1-1".into(),
        format!("{good}."),
    ];
    for input in &bad {
        let out = run(s.cosid(), &["parse", input], 2);
        let err = stderr(&out);
        assert!(
            err.starts_with("cosid: error: [INVALID_ID] "),
            "{input:?}: {err}"
        );
        assert!(
            err.contains(&format!("{input:?}")),
            "names the input {input:?}: {err}"
        );
        assert!(
            err.contains("as decimal:")
                && err.contains("as friendly:")
                && err.contains("as base62:"),
            "{err}"
        );
        assert!(stdout(&out).is_empty());
    }
    // A form forced with --as is the only one tried.
    let out = run(
        s.cosid(),
        &[
            "parse",
            "--as",
            "dec",
            &Layout::millis().to_friendly(good).unwrap(),
        ],
        2,
    );
    let err = stderr(&out);
    assert!(
        err.contains("as decimal:") && !err.contains("as friendly:"),
        "{err}"
    );
    // A second-tick id must start its tick.
    run(
        s.cosid(),
        &["--layout", "seconds", "parse", "20191224160001500-1-1"],
        2,
    );
}

#[test]
fn leases_shows_the_slot_next_released() {
    let s = Sandbox::new();
    let mut next = s.cosid();
    next.env("COSID_OWNER_KEY", "cli-test-owner");
    let ids = decimal_ids(&run(next, &["next", "-n", "5"], 0));
    let last = Layout::millis().decompose(Id::from_u64(ids[4])).unwrap();

    let leases = json(&run(s.cosid(), &["leases", "--json"], 0));
    assert_eq!(leases["namespace"], "default");
    assert_eq!(leases["store"], s.store_url());
    assert_eq!(leases["record"]["bits"], 10);
    assert_eq!(leases["record"]["tolerance_ms"], 1000);
    assert_eq!(leases["record"]["not_before"], 0);
    assert!(leases["store_now"].as_u64().unwrap() >= last.timestamp_ms);
    let slots = leases["slots"].as_array().unwrap();
    assert_eq!(slots.len(), 1, "{leases}");
    let slot = &slots[0];
    assert_eq!(slot["slot"], last.slot);
    assert_eq!(slot["state"], "free");
    assert_eq!(slot["owner_key"], Value::Null);
    assert_eq!(slot["incarnation"], Value::Null);
    assert_eq!(slot["last_owner_key"], "cli-test-owner");
    assert_eq!(slot["ttl_left_ms"], Value::Null);
    assert_eq!(
        slot["next_floor"], last.timestamp_ms,
        "the release hands on the last id's millisecond: {slot}"
    );
    assert!(slot["floor"].as_u64().unwrap() < last.timestamp_ms);
    assert!(slot["ceiling"].as_u64().unwrap() >= last.timestamp_ms);

    let text = stdout(&run(s.cosid(), &["leases"], 0));
    assert!(
        text.contains(&format!("store      {}", s.store_url())),
        "{text}"
    );
    assert!(
        text.contains(
            "namespace  \"default\": bits 10 (1024 slots), tolerance 1000 ms, not_before 0"
        ),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with(&format!("{}  ", last.slot)))
        .unwrap_or_else(|| panic!("no row for slot {}: {text}", last.slot));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[1], "free", "{row}");
    assert_eq!(cells[2], "-", "owner key: {row}");
    assert_eq!(cells[7], last.timestamp_ms.to_string(), "next_floor: {row}");
    assert_eq!(cells.last(), Some(&"cli-test-owner"), "{row}");
}

#[test]
fn leases_on_an_unused_namespace_says_so() {
    let s = Sandbox::new();
    let leases = json(&run(
        s.cosid(),
        &["--namespace", "fresh", "leases", "--json"],
        0,
    ));
    assert_eq!(leases["record"], Value::Null);
    assert_eq!(leases["slots"], serde_json::json!([]));
    let text = stdout(&run(s.cosid(), &["--namespace", "fresh", "leases"], 0));
    assert!(text.contains("no record yet"), "{text}");
}

#[test]
fn status_prints_the_lease_then_releases_it() {
    let s = Sandbox::new();
    let status = json(&run(
        s.cosid(),
        &["--owner-key", "status-owner", "status", "--json"],
        0,
    ));
    assert_eq!(status["namespace"], "default");
    assert_eq!(status["store"], "sqlite");
    assert_eq!(status["store_url"], s.store_url());
    assert_eq!(status["owner_key"], "status-owner");
    assert_eq!(status["state"], "active");
    assert_eq!(status["slot"], 0);
    let (floor, ceiling) = (
        status["floor"].as_u64().unwrap(),
        status["ceiling"].as_u64().unwrap(),
    );
    let (expires, now) = (
        status["expires_at"].as_u64().unwrap(),
        status["store_now"].as_u64().unwrap(),
    );
    assert!(
        floor < ceiling && now < expires && expires < ceiling,
        "{status}"
    );
    assert_eq!(
        ceiling - expires,
        1000,
        "ceiling = expiry + tolerance: {status}"
    );

    let leases = json(&run(s.cosid(), &["leases", "--json"], 0));
    let slot = &leases["slots"][0];
    assert_eq!(slot["state"], "free", "released on exit: {leases}");
    assert_eq!(slot["last_owner_key"], "status-owner");
    assert_eq!(slot["incarnation"], Value::Null);

    let text = stdout(&run(s.cosid(), &["--preferred-slot", "5", "status"], 0));
    for line in [
        "slot        5\n",
        "state       active\n",
        "store       sqlite (",
        "released slot 5 on exit",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
}

#[test]
fn a_bad_store_url_is_a_usage_error_naming_the_url() {
    let s = Sandbox::new();
    for command in [&["next"][..], &["status"], &["leases"], &["init"]] {
        let mut args = vec!["--store", "ftp://nowhere/x"];
        args.extend_from_slice(command);
        let err = stderr(&run(s.bare(), &args, 2));
        assert!(err.starts_with("cosid: error: [CONFIG] "), "{err}");
        assert!(err.contains("\"ftp://nowhere/x\""), "{err}");
    }
    let mut env = s.bare();
    env.env("COSID_STORE", "sqlite:");
    let err = stderr(&run(env, &["next"], 2));
    assert!(
        err.contains("\"sqlite:\"") && err.contains("file path"),
        "{err}"
    );
}

#[test]
fn an_unusable_store_is_a_runtime_error_naming_the_store() {
    let s = Sandbox::new();
    // A folder that cannot be created: its parent is a file.
    std::fs::write(s.path().join("file"), b"").unwrap();
    let url = format!(
        "sqlite://{}",
        s.path().join("file").join("leases.db").display()
    );
    for command in ["next", "leases"] {
        let err = stderr(&run(s.bare(), &["--store", &url, command], 1));
        assert!(
            err.starts_with("cosid: error: [STORE_UNAVAILABLE] "),
            "{err}"
        );
        assert!(err.contains(&url), "{err}");
    }
}

#[test]
fn bad_settings_are_usage_errors_naming_the_flag_or_variable() {
    let s = Sandbox::new();
    let err = stderr(&run(s.cosid(), &["--ttl", "5", "next"], 2));
    assert!(
        err.starts_with("cosid: error: [CONFIG] invalid --ttl = \"5\""),
        "{err}"
    );
    let err = stderr(&run(s.cosid(), &["next", "--bits", "x"], 2));
    assert!(err.contains("invalid --bits = \"x\""), "{err}");
    let mut env = s.cosid();
    env.env("COSID_TTL", "5");
    let err = stderr(&run(env, &["next"], 2));
    assert!(err.contains("invalid COSID_TTL = \"5\""), "{err}");
    let err = stderr(&run(s.cosid(), &["--layout", "nanos", "parse", "1"], 2));
    assert!(
        err.contains("invalid --layout = \"nanos\": millis, seconds or js-safe"),
        "{err}"
    );
    let err = stderr(&run(s.cosid(), &["--namespace", "", "next"], 2));
    assert!(err.contains("invalid --namespace = \"\""), "{err}");
    let err = stderr(&run(s.cosid(), &["--bits", "11", "next"], 2));
    assert!(err.contains("invalid bits = \"11\""), "{err}");
    // Usage errors from the parser itself: status 2 as well.
    run(s.cosid(), &["next", "-n", "many"], 2);
    run(s.cosid(), &["next", "--format", "hex"], 2);
    run(s.cosid(), &["nope"], 2);
    run(s.cosid(), &[], 2);
    assert!(!s.db().exists(), "no store is opened for bad settings");
}

#[test]
fn a_flag_overrides_its_variable() {
    let s = Sandbox::new();
    let mut cmd = s.cosid();
    cmd.env("COSID_NAMESPACE", "from-env")
        .env("COSID_BITS", "3");
    let status = json(&run(
        cmd,
        &["--namespace", "from-flag", "status", "--json"],
        0,
    ));
    assert_eq!(status["namespace"], "from-flag");
    let leases = json(&run(
        s.cosid(),
        &["--namespace", "from-flag", "leases", "--json"],
        0,
    ));
    assert_eq!(
        leases["record"]["bits"], 3,
        "COSID_BITS still applies: {leases}"
    );
}

#[test]
fn init_creates_the_schema_and_says_so() {
    let s = Sandbox::new();
    let out = stdout(&run(s.cosid(), &["init"], 0));
    assert!(
        out.contains(&format!("created the sqlite database {}", s.db().display())),
        "{out}"
    );
    assert!(out.contains("no record yet"), "{out}");
    assert!(s.db().exists());
    run(s.cosid(), &["next"], 0);
    let out = stdout(&run(s.cosid(), &["init"], 0));
    assert!(out.contains("exists; its schema is in place"), "{out}");
    assert!(
        out.contains("recorded with bits 10, tolerance 1000 ms, not_before 0; 1 slot records"),
        "{out}"
    );
}

#[test]
fn help_lists_the_environment_variables() {
    let s = Sandbox::new();
    for args in [
        &["--help"][..],
        &["next", "--help"],
        &["leases", "-h"],
        &["help", "parse"],
    ] {
        let out = stdout(&run(s.bare(), args, 0));
        for (name, _) in cosid::config::ENV_VARS {
            assert!(
                out.contains(name),
                "{args:?} does not mention {name}:\n{out}"
            );
        }
    }
}

#[test]
fn next_200000_ids_are_all_unique() {
    let s = Sandbox::new();
    let ids = decimal_ids(&run(s.cosid(), &["next", "-n", "200000"], 0));
    assert_eq!(ids.len(), 200_000);
    assert_increasing(&ids);
    let unique: HashSet<u64> = ids.iter().copied().collect();
    assert_eq!(unique.len(), 200_000);
    let out = run(s.cosid(), &["next", "-n", "20000", "--format", "base62"], 0);
    let texts = lines(&out);
    assert_eq!(texts.iter().collect::<HashSet<_>>().len(), 20_000);
    assert!(
        texts.windows(2).all(|w| w[0] < w[1]),
        "base-62 text sorts like the ids"
    );
}
