//! `cosid init` and `cosid status` warn about a store setting that breaks the safety claim, on the PostgreSQL
//! server in `COSID_TEST_POSTGRES_URL` (`.ci/services/postgres.sh` starts one); skipped with a printed reason
//! when it is unset.
#![cfg(feature = "postgres")]

use std::process::{Command, Output};

fn cosid(url: &str, namespace: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cosid"));
    for (name, _) in cosid::config::ENV_VARS {
        cmd.env_remove(name);
    }
    let out = cmd
        .env("COSID_STORE", url)
        .env("COSID_NAMESPACE", namespace)
        .args(args)
        .output()
        .expect("cosid runs");
    assert!(
        out.status.success(),
        "cosid {args:?}\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn init_and_status_warn_of_asynchronous_commits_and_only_then() {
    let Some(url) = std::env::var("COSID_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        println!("skipped: set COSID_TEST_POSTGRES_URL to run cosid against PostgreSQL");
        return;
    };
    let ns = format!(
        "cli-durability-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    for command in ["init", "status"] {
        let safe = stderr(&cosid(&url, &ns, &[command]));
        assert!(!safe.contains("warning"), "cosid {command}: {safe}");
    }
    // Every session of this URL commits without waiting for the WAL flush, as a role or database setting would.
    let sep = if url.contains('?') { '&' } else { '?' };
    let unsafe_url = format!("{url}{sep}options=-c%20synchronous_commit%3Doff");
    for command in ["init", "status"] {
        let text = stderr(&cosid(&unsafe_url, &ns, &[command]));
        assert!(
            text.contains("warning: the postgres server has synchronous_commit = off; the lease safety claim needs synchronous_commit = on"),
            "cosid {command}: {text}"
        );
    }
}
