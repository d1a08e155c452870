//! `fork()` while a runtime's keeper is inside an SQLite call that waits on another process's write lock, with
//! real processes and a real file.
//!
//! SQLite waits up to its busy timeout (10 s) for the write lock; on a loaded machine (many processes sharing the
//! file, slow fsyncs) a call can outlast the fork hook's wait for network calls (3 s). The hook used to fork anyway,
//! so the child got SQLite's process-wide state copied mid-call (the locks it believes this process holds), and a
//! forked child then hung or used a lock it did not hold (one child of 300 hung in the Python fork storm on a
//! loaded machine). Now the hook waits for a file store call to end (up to `FILE_CALL_WAIT`), and a child forked
//! mid-call all the same refuses to open SQLite.
#![cfg(all(unix, feature = "sqlite"))]

use cosid::host::fork;
use cosid::Runtime;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const HOLDER_ENV: &str = "COSID_TEST_HOLD_DB";

/// Another process holds the database's write lock for `hold`; returns once it holds it.
fn hold_write_lock(db: &Path, hold: Duration) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "write_lock_holder",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HOLDER_ENV, db)
        .env("COSID_TEST_HOLD_MS", hold.as_millis().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        match lines.next() {
            Some(Ok(line)) if line.ends_with("locked") => break,
            Some(Ok(_)) => continue,
            other => panic!("the lock holder ended before taking the lock: {other:?}"),
        }
    }
    // The rest of its output, read so that it never writes into a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));
    child
}

/// The holder's role; does nothing unless `COSID_TEST_HOLD_DB` is set.
#[test]
fn write_lock_holder() {
    let Some(db) = std::env::var_os(HOLDER_ENV) else {
        return;
    };
    let hold: u64 = std::env::var("COSID_TEST_HOLD_MS")
        .unwrap()
        .parse()
        .unwrap();
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    println!("locked");
    std::thread::sleep(Duration::from_millis(hold));
    conn.execute_batch("COMMIT").unwrap();
}

/// Waits until the keeper is inside a store call (its next renewal, blocked by the lock).
fn wait_for_a_call_in_flight() {
    let deadline = Instant::now() + Duration::from_secs(10);
    while fork::in_flight() == 0 {
        assert!(Instant::now() < deadline, "the keeper made no store call");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Past SQLite's first attempt: the call is now waiting on the lock.
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        fork::in_flight() > 0,
        "the keeper's call was not held up by the lock"
    );
}

/// Waits for `pid` up to `limit`; kills it past that. Its exit code, or `None` if it had to be killed.
fn wait_child(pid: libc::pid_t, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    loop {
        let mut status = 0;
        // SAFETY: waits for our own child, without blocking.
        let waited = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if waited == pid {
            assert!(libc::WIFEXITED(status), "the child did not exit: {status}");
            return Some(libc::WEXITSTATUS(status));
        }
        if Instant::now() >= deadline {
            // SAFETY: our own child, then reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_fork_waits_for_an_sqlite_call_and_a_child_forked_mid_call_refuses_sqlite() {
    if std::env::var_os(HOLDER_ENV).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("leases.db");
    let url = format!("sqlite://{}", db.display());
    // A short lease: the keeper renews every few hundred milliseconds.
    let rt = Runtime::builder()
        .store(url.clone())
        .namespace("fork-gate")
        .ttl(Duration::from_millis(600))
        .build()
        .unwrap();
    rt.next_id().unwrap();

    // 1. The fork hook waits for the keeper's call, held up longer than the wait for a network call.
    let hold = fork::PREPARE_WAIT + Duration::from_secs(2);
    let mut holder = hold_write_lock(&db, hold);
    wait_for_a_call_in_flight();
    let started = Instant::now();
    fork::prepare();
    let waited = started.elapsed();
    // SAFETY: the child reads an atomic and leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // The parent's counters, as copied: no store call may be in flight.
        let code = if fork::in_flight() == 0 { 0 } else { 1 };
        // SAFETY: ends the child without the parent's destructors or the harness.
        unsafe { libc::_exit(code) };
    }
    fork::after_fork_in_parent();
    let code = wait_child(pid, Duration::from_secs(30));
    assert!(holder.wait().unwrap().success());
    assert_eq!(
        code,
        Some(0),
        "the child was forked with the keeper's SQLite call in flight (the hook waited {waited:?})"
    );

    // 2. A child forked mid-call all the same (no hook here: as past `FILE_CALL_WAIT`) refuses SQLite, with the
    //    reason, instead of using the state copied mid-call.
    let mut holder = hold_write_lock(&db, Duration::from_secs(2));
    wait_for_a_call_in_flight();
    // SAFETY: the child starts a runtime of its own (its own threads) and leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        fork::after_fork_in_child();
        let built = Runtime::builder()
            .store(url.clone())
            .namespace("fork-gate-child")
            .acquire_timeout(Duration::from_secs(5))
            .build();
        let code = match built {
            Err(e)
                if e.to_string()
                    .contains("forked while its parent was inside an SQLite call") =>
            {
                0
            }
            Err(e) => {
                eprintln!("child: another error: {e}");
                2
            }
            Ok(rt) => {
                std::mem::forget(rt);
                1
            }
        };
        // SAFETY: as above.
        unsafe { libc::_exit(code) };
    }
    let code = wait_child(pid, Duration::from_secs(30));
    assert!(holder.wait().unwrap().success());
    match code {
        Some(0) => {}
        Some(1) => panic!("a child forked mid-call opened SQLite"),
        Some(c) => panic!("the child failed otherwise ({c}): see its output above"),
        None => panic!("the child forked mid-call hung"),
    }
    rt.next_id().unwrap();
}
