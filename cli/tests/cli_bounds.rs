//! Duration settings out of range are usage errors naming the setting, never a crash.

use std::process::Command;

fn cosid(vars: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cosid"));
    for (name, _) in cosid::config::ENV_VARS {
        cmd.env_remove(name);
    }
    cmd.env("XDG_STATE_HOME", dir.path().join("state"))
        .env("HOME", dir.path().join("home"))
        .env("COSID_STORE", "memory:");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.args(args).output().expect("cosid runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_huge_duration_is_a_usage_error_not_a_panic() {
    // This used to panic ("overflow when adding duration to instant") and exit 101.
    let (code, err) = cosid(&[("COSID_ACQUIRE_TIMEOUT", "500000000000y")], &["next"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("COSID_ACQUIRE_TIMEOUT")
            && err.contains("500000000000y")
            && err.contains("1day"),
        "{err}"
    );
    let (code, err) = cosid(&[], &["next", "--acquire-timeout", "500000000000y"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--acquire-timeout"), "{err}");
    for var in [
        "COSID_TTL",
        "COSID_TOLERANCE",
        "COSID_MAX_WAIT",
        "COSID_BACKWARDS_WAIT",
    ] {
        let (code, err) = cosid(&[(var, "500000000000y")], &["next"]);
        assert_eq!(code, Some(2), "{var}: {err}");
        assert!(err.contains(var), "{err}");
    }
    let (code, err) = cosid(
        &[("COSID_STORE", "static:1?ahead=500000000000y")],
        &["next"],
    );
    assert_ne!(code, Some(101), "{err}");
    assert!(err.contains("ahead"), "{err}");
}

#[test]
fn a_truncated_duration_is_refused() {
    // 1500us used to become 1ms without a word.
    let (code, err) = cosid(&[("COSID_MAX_WAIT", "1500us")], &["next"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("milliseconds"), "{err}");
}

#[test]
fn a_not_before_far_in_the_future_is_refused_before_anything_is_read() {
    // not_before is never lowered: a year typed for a day would stop the namespace until then. The store URL
    // points nowhere, so a refusal that came after reading it would be a connection error instead.
    let (code, err) = cosid(
        &[],
        &[
            "migrate",
            "--from",
            "redis://127.0.0.1:1/0",
            "--old-namespace",
            "orders",
            "--not-before",
            "2099-01-01T00:00:00Z",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--not-before") && err.contains("more than a day from now"),
        "{err}"
    );
}
