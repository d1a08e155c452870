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
    // ZooKeeper (digest credentials).
    (
        "zookeeper://ids:Zq7XkWv9Jp@127.0.0.1:1/apps",
        &["Zq7XkWv9Jp"],
    ),
    // MongoDB, several hosts.
    (
        "mongodb://ids:Zq7XkWv9Jp@127.0.0.1:1,127.0.0.2:1/ids",
        &["Zq7XkWv9Jp"],
    ),
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
    // Every run: (what, the URL it plants, the store URL given, whether by --store, the arguments).
    let mut jobs: Vec<(String, &str, &str, bool, Vec<&str>)> = Vec::new();
    for (url, _) in PLANTED {
        for args in commands {
            for flag in [false, true] {
                let what = format!(
                    "cosid {args:?} with {url} ({})",
                    if flag { "--store" } else { "COSID_STORE" }
                );
                jobs.push((what, url, url, flag, args.to_vec()));
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
            jobs.push((format!("cosid {args:?}"), url, "memory:", false, args));
        }
    }
    // Most runs wait out a connection that fails (MongoDB's for seconds): 16 at a time, so the waits overlap.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let runs = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..16 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((what, planted, url, flag, args)) = jobs.get(i) else {
                    break;
                };
                let text = printed(url, *flag, args);
                runs.lock().unwrap().push((what.clone(), *planted, text));
            });
        }
    });
    let runs = runs.into_inner().unwrap();
    assert_eq!(runs.len(), jobs.len());
    for (url, secrets) in PLANTED {
        let mine: Vec<_> = runs.iter().filter(|(_, p, _)| p == url).collect();
        for (what, _, text) in &mine {
            for secret in *secrets {
                assert!(!text.contains(secret), "{what} printed {secret:?}:\n{text}");
            }
        }
        // And it did print something about the store, so the search was not of an empty page.
        assert!(
            mine.iter().any(|(_, _, t)| t.contains("***")),
            "{url}: {mine:?}"
        );
    }
}

/// On a store that works, the commands that show the store (`status`, `leases`, `init`) show it redacted too.
#[cfg(feature = "redis")]
#[test]
fn a_working_store_is_shown_redacted() {
    let Some(base) = std::env::var("COSID_TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        println!("skipped: set COSID_TEST_REDIS_URL to run this test against a real server");
        return;
    };
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}token=Zq7XkWv9Jp");
    let namespace = format!(
        "secrets-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let mut shown = false;
    for args in [
        &["init"][..],
        &["next", "-n", "3"],
        &["status"],
        &["leases"],
        &["leases", "--json"],
    ] {
        let mut full = vec!["--namespace", namespace.as_str()];
        full.extend_from_slice(args);
        let text = printed(&url, false, &full);
        assert!(
            !text.contains("Zq7XkWv9Jp"),
            "cosid {args:?} printed the token:\n{text}"
        );
        assert!(!text.contains("error"), "cosid {args:?} failed:\n{text}");
        shown |= text.contains("token=***");
    }
    assert!(shown, "no command showed the store");
}
