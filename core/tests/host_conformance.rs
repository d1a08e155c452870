//! The Rust driver of the cross-language conformance table (`tests/conformance/cases.txt`), on
//! `cosid::host::Holder`. A fork's child is played in this process (`fork::after_fork_in_child`, what a binding's
//! fork hook runs), which is why this binary has one test: the fork generation is process-wide. The C driver
//! forks for real.

#[path = "../../tests/conformance/cases.rs"]
mod cases;

use cosid::host::{fork, ErrorCode, Holder, HostError, Settings};
use std::path::Path;

/// The outcome's code, and every form of its error as Rust shows it (Display and Debug).
fn outcome<T>(r: Result<T, HostError>) -> (String, String) {
    match r {
        Ok(_) => ("OK".to_owned(), String::new()),
        Err(e) => (e.code.name().to_owned(), format!("{e} {e:?}")),
    }
}

#[test]
fn every_case_of_the_table() {
    let table = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance/cases.txt");
    let cases = cases::read(&table);
    assert!(cases.len() >= 20, "{} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let dir = tempfile::tempdir().unwrap();
        let dir_text = dir.path().display().to_string();
        let mut settings = Settings::new();
        let mut set_error = None;
        for (key, value) in &case.set {
            if let Err(e) = settings.set(key, &value.replace("{dir}", &dir_text)) {
                set_error.get_or_insert(e);
            }
        }
        let holder = Holder::new(settings);
        for (action, expect) in &case.steps {
            let (got, shown) = match action.as_str() {
                "start" => match set_error.take() {
                    Some(e) => outcome::<()>(Err(e)),
                    None => outcome(holder.runtime()),
                },
                "next_id" => outcome(holder.next_id()),
                "shutdown" => outcome(holder.shutdown()),
                "slot" => match holder.status() {
                    Ok(s) => (s.slot.to_string(), String::new()),
                    e => outcome(e),
                },
                "fork_next_id" => {
                    let parent_slot = holder.status().map(|s| s.slot);
                    fork::prepare();
                    fork::after_fork_in_child();
                    match holder.next_id() {
                        Ok(_) if holder.status().map(|s| s.slot) != parent_slot => {
                            ("OK_OTHER_SLOT".into(), String::new())
                        }
                        Ok(_) => ("OK_SAME_SLOT".into(), String::new()),
                        e => outcome(e),
                    }
                }
                other => panic!("unknown action {other}"),
            };
            if &got != expect {
                failures.push(format!(
                    "{}: {action}: expected {expect}, got {got}",
                    case.name
                ));
            }
            failures.extend(case.leaks(action, &shown));
        }
        failures.extend(case.leaks("the holder's Debug", &format!("{holder:?}")));
        let _ = holder.shutdown();
    }
    assert!(ErrorCode::from_name("FORKED").is_some());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
