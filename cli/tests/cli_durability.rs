//! `cosid init` and `cosid status` warn about a store setting that breaks the safety claim: on the PostgreSQL
//! server in `COSID_TEST_POSTGRES_URL` (`.ci/services/postgres.sh` starts one), and on a redis-server of the
//! test's own with `appendfsync everysec`; each skipped with a printed reason when it cannot run.
#![cfg(any(feature = "postgres", feature = "redis"))]

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

#[cfg(feature = "postgres")]
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

/// Stops the redis-server this test started.
#[cfg(feature = "redis")]
struct Server(std::process::Child);

#[cfg(feature = "redis")]
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[cfg(feature = "redis")]
#[test]
fn init_and_status_warn_of_a_redis_server_that_fsyncs_every_second() {
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
    for command in ["init", "status"] {
        let text = stderr(&cosid(&url, "cli-durability", &[command]));
        assert!(
            text.contains("warning: the redis server has appendfsync = everysec; the lease safety claim needs appendfsync = always"),
            "cosid {command}: {text}"
        );
    }
}
