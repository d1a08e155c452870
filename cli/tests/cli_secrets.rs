//! No password is ever printed: a password is planted in every form a store URL carries one, and everything the
//! command prints (help, and the output and errors of every command) is searched for it.

use std::process::Command;

/// Store URLs with a password in each form, and the pieces of it that must never appear.
const PLANTED: &[(&str, &[&str])] = &[
    // User-info.
    ("redis://app:Zq7XkWv9Jp@127.0.0.1:1/0", &["Zq7XkWv9Jp"]),
    ("postgres://app:Zq7XkWv9Jp@127.0.0.1:1/ids", &["Zq7XkWv9Jp"]),
    (
        "mysql://app:Zq7Xk%40Wv9Jp@127.0.0.1:1/ids",
        &["Zq7Xk", "Wv9Jp"],
    ),
    // Query.
    (
        "postgres://127.0.0.1:1/ids?user=app&password=Zq7XkWv9Jp",
        &["Zq7XkWv9Jp"],
    ),
    ("redis://127.0.0.1:1/0?token=Zq7XkWv9Jp", &["Zq7XkWv9Jp"]),
    // etcd.
    ("etcd://root:Zq7XkWv9Jp@127.0.0.1:1", &["Zq7XkWv9Jp"]),
    // Unparsable: unencoded `@`, `#`, `/` in the password, and a typo in the scheme.
    ("redis://app:Zq7Xk@Wv9Jp@127.0.0.1:1/0", &["Zq7Xk", "Wv9Jp"]),
    ("redis://app:Zq7Xk#Wv9Jp@127.0.0.1:1/0", &["Zq7Xk", "Wv9Jp"]),
    (
        "postgres://app:Zq7Xk/Wv9Jp@127.0.0.1:1/ids",
        &["Zq7Xk", "Wv9Jp"],
    ),
    ("rdis://app:Zq7XkWv9Jp@127.0.0.1:1/0", &["Zq7XkWv9Jp"]),
];

/// Runs `cosid` with `COSID_STORE=url` (unless `store_flag`, then `--store url`) and returns all it printed.
fn printed(url: &str, store_flag: bool, args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cosid"));
    for (name, _) in cosid::config::ENV_VARS {
        cmd.env_remove(name);
    }
    cmd.env("XDG_STATE_HOME", dir.path().join("state"))
        .env("HOME", dir.path().join("home"))
        .env("COSID_ACQUIRE_TIMEOUT", "300ms");
    if store_flag {
        cmd.args(["--store", url]);
    } else {
        cmd.env("COSID_STORE", url);
    }
    let out = cmd.args(args).output().expect("cosid runs");
    assert_ne!(
        out.status.code(),
        Some(101),
        "cosid {args:?} panicked: {out:?}"
    );
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn no_command_prints_a_password() {
    let commands: &[&[&str]] = &[
        &["--help"],
        &["next", "--help"],
        &["next"],
        &["status"],
        &["leases"],
        &["leases", "--json"],
        &["init"],
    ];
    for (url, secrets) in PLANTED {
        let mut runs: Vec<(String, String)> = Vec::new();
        for args in commands {
            for flag in [false, true] {
                let what = format!(
                    "cosid {args:?} with {url} ({})",
                    if flag { "--store" } else { "COSID_STORE" }
                );
                runs.push((what, printed(url, flag, args)));
            }
        }
        // `migrate` reads the old deployment from a URL of its own.
        for args in [
            vec!["migrate", "--from", url, "--old-namespace", "old"],
            vec![
                "migrate",
                "--from",
                url,
                "--old-namespace",
                "old",
                "--dry-run",
            ],
        ] {
            let what = format!("cosid {args:?}");
            runs.push((what, printed("memory:", false, &args)));
        }
        for (what, text) in &runs {
            for secret in *secrets {
                assert!(!text.contains(secret), "{what} printed {secret:?}:\n{text}");
            }
        }
        // And it did print something about the store, so the search was not of an empty page.
        assert!(
            runs.iter().any(|(_, t)| t.contains("***")),
            "{url}: {runs:?}"
        );
    }
}
