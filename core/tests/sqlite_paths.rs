//! One SQLite database reached the ways deployments reach it: through a hard link, through the file alone
//! bind-mounted (as `docker run -v /host/leases.db:/state/leases.db` does), and deleted or replaced under a live
//! holder. Real processes on real files: the test re-executes its own binary as the child (`child`, doing nothing
//! unless `COSID_SP_CHILD` is set), which issues ids into a file until it is killed.

use cosid::clock::SystemClock;
use cosid::store::SqliteStore;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "COSID_SP_CHILD";
/// Every wait for a condition gives up (and fails the test) after this: the machine may be loaded.
const PATIENCE: Duration = Duration::from_secs(60);

/// The child's role: start a runtime from the environment, write every id (u64 little-endian) to the file named
/// by `COSID_SP_CHILD`, flushing every few milliseconds, and print every event. Exits 3 if the runtime is refused.
#[test]
fn child() {
    let Some(out) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let rt = match cosid::Builder::from_env().and_then(|b| {
        b.subscribe(|e: &cosid::Event| eprintln!("event: {} {e}", e.name()))
            .build()
    }) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("refused: [{}] {e}", e.code());
            std::process::exit(3);
        }
    };
    let mut w = BufWriter::new(File::create(out).unwrap());
    let mut flushed = Instant::now();
    loop {
        // Bursts of 50 ids a millisecond at most: enough for two holders of one slot to collide within a
        // millisecond, few enough that the files stay small.
        for _ in 0..50 {
            match rt.next_id() {
                Ok(id) => w.write_all(&id.as_u64().to_le_bytes()).unwrap(),
                // Between a lost lease and the next one: keep asking.
                Err(_) => break,
            }
        }
        std::thread::sleep(Duration::from_millis(1));
        if flushed.elapsed() > Duration::from_millis(2) {
            w.flush().unwrap();
            flushed = Instant::now();
        }
    }
}

/// A child process, killed when dropped so a failing test leaves none behind.
struct Proc {
    name: &'static str,
    child: Child,
    out: PathBuf,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    fn log(&self) -> String {
        std::fs::read_to_string(self.out.with_extension("log")).unwrap_or_default()
    }

    fn ids(&self) -> Vec<u64> {
        let bytes = std::fs::read(&self.out).unwrap_or_default();
        bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    /// How many ids the child has written so far.
    fn count(&self) -> usize {
        std::fs::metadata(&self.out).map_or(0, |m| m.len() as usize / 8)
    }

    /// Waits until the child has written at least `n` ids.
    fn wait_for_ids(&mut self, n: usize) {
        let deadline = Instant::now() + PATIENCE;
        while self.count() < n {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("{} exited ({status}):\n{}", self.name, self.log());
            }
            assert!(
                Instant::now() < deadline,
                "{} wrote fewer than {n} ids:\n{}",
                self.name,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for the child to be refused; returns its messages. Fails if it issues an id instead.
    fn expect_refused(&mut self, others: &[&Proc]) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert_eq!(status.code(), Some(3), "{}:\n{}", self.name, self.log());
                return self.log();
            }
            if self.count() > 0 || Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let mut all: Vec<&Proc> = others.to_vec();
                all.push(self);
                panic!(
                    "{} was not refused and issued {} ids; {}",
                    self.name,
                    self.ids().len(),
                    duplicates(&all)
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Starts a child on the database at `db`. `wrap` runs it under another command (the bind-mount case).
fn spawn(name: &'static str, dir: &Path, db: &Path, wrap: &[&str]) -> Proc {
    let out = dir.join(format!("ids-{name}"));
    let log = File::create(out.with_extension("log")).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut cmd = match wrap.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    cmd.args(["child", "--exact", "--nocapture", "--test-threads=1"]);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("COSID_") {
            cmd.env_remove(name);
        }
    }
    cmd.env(CHILD_ENV, &out)
        .env("COSID_STORE", format!("sqlite://{}", db.display()))
        .env("COSID_NAMESPACE", "paths")
        .env("COSID_BITS", "3")
        .env("COSID_TTL", "2s")
        .env("COSID_TOLERANCE", "200ms")
        .env("COSID_ACQUIRE_TIMEOUT", "60s")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    Proc {
        name,
        child: cmd.spawn().unwrap(),
        out,
    }
}

/// The ids issued by more than one of `procs` (or twice by one), described.
fn duplicates(procs: &[&Proc]) -> String {
    let mut seen: HashMap<u64, &str> = HashMap::new();
    let mut repeated = 0usize;
    let mut example = None;
    let mut total = 0usize;
    for p in procs {
        for id in p.ids() {
            total += 1;
            if let Some(first) = seen.insert(id, p.name) {
                repeated += 1;
                example.get_or_insert((id, first, p.name));
            }
        }
    }
    format!("{repeated} of {total} ids repeated (first: {example:?})")
}

fn assert_unique(procs: &[&Proc]) {
    let report = duplicates(procs);
    assert!(report.starts_with("0 of"), "{report}");
    println!("{report}");
}

/// Two names of one file: each name would get its own WAL, so a process on the second name is refused.
#[cfg(unix)]
#[test]
fn a_database_with_a_second_hard_link_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("leases.db");
    let mut a = spawn("a", dir.path(), &db, &[]);
    a.wait_for_ids(1_000);
    std::fs::hard_link(&db, dir.path().join("other-name.db")).unwrap();
    let mut b = spawn("b", dir.path(), &dir.path().join("other-name.db"), &[]);
    let log = b.expect_refused(&[&a]);
    assert!(
        log.contains("[CONFIG]") && log.contains("hard links"),
        "{log}"
    );
    a.wait_for_ids(a.count() + 1_000);
    assert_unique(&[&a, &b]);
}

/// Whether this machine lets the test bind-mount a file in a private mount namespace (root, `unshare`).
fn can_bind_mount(dir: &Path) -> bool {
    let (src, dst) = (dir.join("probe-src"), dir.join("probe-dst"));
    std::fs::write(&src, "").unwrap();
    std::fs::write(&dst, "").unwrap();
    Command::new("unshare")
        .args(["-m", "mount", "--bind"])
        .args([&src, &dst])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The file alone bind-mounted elsewhere (same inode, another folder, so another `-wal`): the process inside the
/// mount is refused.
#[cfg(target_os = "linux")]
#[test]
fn a_database_file_mounted_alone_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    if !can_bind_mount(dir.path()) {
        println!("skipped: this machine does not allow `unshare -m mount --bind` (needs root)");
        return;
    }
    let db = dir.path().join("leases.db");
    let mut a = spawn("a", dir.path(), &db, &[]);
    a.wait_for_ids(1_000);
    std::fs::create_dir(dir.path().join("container")).unwrap();
    let inside = dir.path().join("container/leases.db");
    std::fs::write(&inside, "").unwrap();
    let (db_s, inside_s) = (db.to_str().unwrap(), inside.to_str().unwrap());
    let wrap = [
        "unshare",
        "-m",
        "sh",
        "-c",
        r#"mount --bind "$1" "$2" && shift 2 && exec "$@""#,
        "sh",
        db_s,
        inside_s,
    ];
    let mut b = spawn("b", dir.path(), &inside, &wrap);
    let log = b.expect_refused(&[&a]);
    assert!(log.contains("[CONFIG]") && log.contains("mounted"), "{log}");
    assert_unique(&[&a, &b]);
}

/// How the file goes away under the live holder.
enum Loss {
    /// `rm leases.db*`: the database and its WAL files.
    Deleted,
    /// Another database renamed over it (a restored backup, a fresh `cosid init` elsewhere).
    Replaced,
}

/// The old holder must stop at its next call (the path names another file: its leases are gone from the store's
/// view), and a process started on the new file right away must not issue until the old holder's windows have
/// ended: no id repeats.
fn lose_the_file_under_a_live_holder(loss: Loss) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("leases.db");
    let mut a = spawn("a", dir.path(), &db, &[]);
    a.wait_for_ids(1_000);
    match loss {
        Loss::Deleted => {
            for suffix in ["", "-wal", "-shm"] {
                let mut p = db.clone().into_os_string();
                p.push(suffix);
                let _ = std::fs::remove_file(p);
            }
        }
        Loss::Replaced => {
            let fresh = dir.path().join("fresh.db");
            drop(SqliteStore::open(&fresh, Arc::new(SystemClock)).unwrap());
            std::fs::rename(&fresh, &db).unwrap();
        }
    }
    let mut b = spawn("b", dir.path(), &db, &[]);
    let deadline = Instant::now() + PATIENCE;
    // The store reports the loss as a regression: the keeper stops issuing on the lease and raises the alarm.
    let saw_loss = |log: &str| {
        ["event: SLOT_LOST", "event: STORE_REGRESSION"]
            .iter()
            .any(|e| log.contains(e))
    };
    while !saw_loss(&a.log()) {
        assert!(
            Instant::now() < deadline,
            "the old holder did not see that its file is gone; {}\n--- a ---\n{}\n--- b ---\n{}",
            duplicates(&[&a, &b]),
            a.log(),
            b.log()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    b.wait_for_ids(1_000);
    // Both issue on the new file for a while (the old holder on a new lease, once its old window has ended).
    let (na, nb) = (a.count(), b.count());
    a.wait_for_ids(na + 1_000);
    b.wait_for_ids(nb + 1_000);
    for p in [&a, &b] {
        let events = p.log();
        let events = events
            .lines()
            .filter(|l| !l.contains("RENEWED") && !l.contains("CLOCK_SKEW"));
        println!(
            "--- {} ---\n{}",
            p.name,
            events.collect::<Vec<_>>().join("\n")
        );
    }
    assert_unique(&[&a, &b]);
}

#[cfg(unix)]
#[test]
fn a_database_deleted_under_a_live_holder_stops_it_and_holds_off_the_next() {
    lose_the_file_under_a_live_holder(Loss::Deleted);
}

#[cfg(unix)]
#[test]
fn a_database_replaced_under_a_live_holder_stops_it_and_holds_off_the_next() {
    lose_the_file_under_a_live_holder(Loss::Replaced);
}

/// A hard link made, then another file renamed over the first name: the old file has one name again (the link),
/// but the live holder still has it open through the first name, with its WAL beside that name. A process started
/// on the link would read the file without that WAL (an old view of the leases) and take a held slot. It is refused
/// while any process has the file open through another path.
#[cfg(unix)]
#[test]
fn a_database_left_with_only_a_link_after_a_replace_is_refused_while_held() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("leases.db");
    let link = dir.path().join("other-name.db");
    let mut a = spawn("a", dir.path(), &db, &[]);
    a.wait_for_ids(1_000);
    std::fs::hard_link(&db, &link).unwrap();
    let fresh = dir.path().join("fresh.db");
    drop(SqliteStore::open(&fresh, Arc::new(SystemClock)).unwrap());
    std::fs::rename(&fresh, &db).unwrap();
    let mut b = spawn("b", dir.path(), &link, &[]);
    let log = b.expect_refused(&[&a]);
    assert!(
        log.contains("[CONFIG]") && log.contains("another path"),
        "{log}"
    );
    assert_unique(&[&a, &b]);
}
