//! A `Runtime` built, used and dropped inside a tokio runtime, as a Rust service does under `#[tokio::main]`:
//! no panic ("Cannot start a runtime from within a runtime"), on the memory and SQLite stores, and a store that
//! cannot be opened or reached is an error.

use cosid::{Builder, Error, Runtime};
use std::time::Duration;

fn memory(namespace: &str) -> Builder {
    Runtime::builder().store("memory:").namespace(namespace)
}

fn sqlite(dir: &tempfile::TempDir) -> Builder {
    Runtime::builder()
        .store(format!(
            "sqlite://{}",
            dir.path().join("leases.db").display()
        ))
        .namespace("in-tokio")
}

/// Issues a few ids and checks they are increasing and on the runtime's slot.
fn issue(rt: &Runtime) {
    let ids = rt.next_ids(100).unwrap();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let slot = rt.layout().decompose(ids[0]).unwrap().slot;
    assert_eq!(slot, u64::from(rt.status().slot));
}

/// A store that can never be opened: a database file under a regular file.
fn unopenable(dir: &tempfile::TempDir) -> Builder {
    let file = dir.path().join("not-a-folder");
    std::fs::write(&file, b"x").unwrap();
    Runtime::builder()
        .store(format!("sqlite://{}", file.join("leases.db").display()))
        .acquire_timeout(Duration::from_millis(300))
}

/// Everything a service does in `main`, in async code.
async fn service() {
    let dir = tempfile::tempdir().unwrap();
    // The blocking builder, as most code calls it.
    let rt = memory("blocking").build().unwrap();
    issue(&rt);
    drop(rt);
    let rt = sqlite(&dir).build().unwrap();
    issue(&rt);
    assert!(rt.shutdown().is_some());
    drop(rt);
    // The async builder and shutdown.
    let rt = memory("async").build_async().await.unwrap();
    issue(&rt);
    assert!(rt.shutdown_async().await.is_some());
    let rt = sqlite(&dir).build_async().await.unwrap();
    issue(&rt);
    drop(rt);
    // A store that cannot be opened is an error, in both builders.
    let err = unopenable(&dir).build().unwrap_err();
    assert!(matches!(err, Error::Store(_)), "{err}");
    let err = unopenable(&dir).build_async().await.unwrap_err();
    assert!(matches!(err, Error::Store(_)), "{err}");
    // A bad setting too.
    let err = memory("bad").ttl(Duration::MAX).build().unwrap_err();
    assert_eq!(err.code(), "CONFIG");
}

#[test]
fn under_a_tokio_main_multi_thread_runtime() {
    // What `#[tokio::main]` expands to.
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(service());
}

#[test]
fn under_a_tokio_main_current_thread_runtime() {
    // `#[tokio::main(flavor = "current_thread")]`.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(service());
}

#[tokio::test(flavor = "multi_thread")]
async fn under_tokio_test_multi_thread() {
    service().await;
}

#[tokio::test]
async fn under_tokio_test_current_thread() {
    service().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn from_a_spawned_task() {
    let rt = tokio::spawn(async { memory("spawned").build_async().await.unwrap() })
        .await
        .unwrap();
    issue(&rt);
    tokio::spawn(async move { drop(rt) }).await.unwrap();
}

/// `Runtime::from_env()` inside `#[tokio::main]`, in a child process of this test (so that no test here shares
/// a changed environment).
#[test]
fn from_env_under_a_tokio_main() {
    if std::env::var_os("COSID_TOKIO_CHILD").is_some() {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let rt = Runtime::from_env().unwrap();
                assert_eq!(rt.status().slot, 0);
                issue(&rt);
                let rt = Builder::from_env().unwrap().build_async().await.unwrap();
                issue(&rt);
            });
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "from_env_under_a_tokio_main", "--nocapture"])
        .env("COSID_TOKIO_CHILD", "1")
        .env("COSID_STORE", "memory:")
        .env("COSID_NAMESPACE", "from-env")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
}

/// A network store that cannot be reached is an error after the acquire timeout, not a panic.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_store_is_an_error() {
    let unreachable = || {
        Runtime::builder()
            .store("redis://127.0.0.1:1/0")
            .acquire_timeout(Duration::from_millis(300))
    };
    let err = unreachable().build().unwrap_err();
    assert_eq!(err.code(), "STORE_UNAVAILABLE", "{err}");
    let err = unreachable().build_async().await.unwrap_err();
    assert_eq!(err.code(), "STORE_UNAVAILABLE", "{err}");
}
