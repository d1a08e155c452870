//! The CLI driver of the cross-language conformance table (`tests/conformance/cases.txt`): each case's settings
//! become flags (the fork policy, which has none, its variable), `start` and `slot` run `cosid status --json`,
//! `next_id` runs `cosid next`. A process cannot shut down and then ask again, nor fork: a case stops before
//! those steps, and the test says how many it skipped.

#[path = "../../tests/conformance/cases.rs"]
mod cases;

use std::path::Path;
use std::process::Command;

/// `OK`, or the code of `cosid: error: [CODE] ...` (or of the JSON error object under `--json`); the JSON printed;
/// everything printed.
fn run(
    flags: &[String],
    env: &[(String, String)],
    dir: &Path,
    args: &[&str],
) -> (String, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cosid"));
    for s in cosid::host::SETTINGS {
        cmd.env_remove(s.env);
    }
    cmd.env("XDG_STATE_HOME", dir.join("state"))
        .env("HOME", dir.join("home"))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args(flags)
        .args(args);
    let out = cmd.output().expect("cosid runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let all = format!("{stdout}{stderr}");
    if out.status.success() {
        return ("OK".into(), stdout, all);
    }
    // Under --json: `{"error": {"code": "CODE", "message": "..."}}`, its message read back unescaped.
    if let Ok(error) = serde_json::from_str::<serde_json::Value>(&stderr) {
        if let (Some(code), Some(message)) = (
            error["error"]["code"].as_str(),
            error["error"]["message"].as_str(),
        ) {
            return (
                code.to_owned(),
                stdout.clone(),
                format!("{stdout}{message}"),
            );
        }
    }
    let code = stderr
        .split_once("cosid: error: [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(code, _)| code.to_owned())
        .unwrap_or_else(|| format!("NO_CODE({stderr})"));
    (code, stdout, all)
}

#[test]
fn every_case_of_the_table() {
    let table = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance/cases.txt");
    let cases = cases::read(&table);
    let (mut failures, mut skipped, mut steps) = (Vec::new(), 0, 0);
    for case in &cases {
        let dir = tempfile::tempdir().unwrap();
        let dir_text = dir.path().display().to_string();
        let (mut flags, mut env) = (Vec::new(), Vec::new());
        for (key, value) in &case.set {
            let value = value.replace("{dir}", &dir_text);
            let setting = cosid::host::setting(key).expect("a key of the host table");
            if setting.kind == cosid::host::Kind::OnFork {
                env.push((setting.env.to_owned(), value));
            } else {
                flags.push(format!("{}={value}", setting.flag()));
            }
        }
        for (i, (action, expect)) in case.steps.iter().enumerate() {
            let (got, shown) = match action.as_str() {
                "start" => {
                    let (code, _, all) = run(&flags, &env, dir.path(), &["status", "--json"]);
                    (code, all)
                }
                "next_id" => {
                    let (code, _, all) = run(&flags, &env, dir.path(), &["next"]);
                    (code, all)
                }
                "slot" => match run(&flags, &env, dir.path(), &["status", "--json"]) {
                    (ok, json, all) if ok == "OK" => {
                        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
                        (v["slot"].to_string(), all)
                    }
                    (code, _, all) => (code, all),
                },
                _ => {
                    skipped += case.steps.len() - i;
                    break;
                }
            };
            steps += 1;
            if &got != expect {
                failures.push(format!(
                    "{}: {action}: expected {expect}, got {got}",
                    case.name
                ));
            }
            failures.extend(case.leaks(action, &shown));
        }
    }
    println!(
        "{} cases, {steps} steps run, {skipped} skipped (shutdown then call, fork)",
        cases.len()
    );
    assert!(steps >= 30, "{steps} steps");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
