//! Slots without a store: static with a state file, StatefulSet ordinals, manual; crash loops and clocks set back
//! across restarts.

use cosid::clock::{Clock, ManualClock};
use cosid::static_slot::{raise_state_file, StateFile};
use cosid::{Error, Event, Runtime};
use std::collections::HashSet;
use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const START: u64 = 1_764_460_000_000;

fn static_url(path: &Path, slot: u32, ahead: &str) -> String {
    format!("static:{slot}?state_file={}&ahead={ahead}", path.display())
}

fn runtime(url: &str, clock: &ManualClock) -> Result<Runtime, Error> {
    Runtime::builder()
        .store(url)
        .namespace("static")
        .clock(Arc::new(clock.clone()))
        .acquire_timeout(Duration::from_secs(30))
        .build()
}

/// Writes a state file whose ceiling is just behind `START`, as a deployment that ran before leaves it: a start on
/// it needs no wait (a missing file makes the first start wait `ahead`, see `a_new_state_file_waits_ahead`).
fn provisioned(path: &Path, slot: u32) -> &Path {
    raise_state_file(path, slot, START - 1).unwrap();
    path
}

fn file_ceiling(path: &Path) -> u64 {
    let mut text = String::new();
    std::fs::File::open(path)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let field = text
        .split_whitespace()
        .find(|f| f.starts_with("ceiling="))
        .unwrap();
    field["ceiling=".len()..].parse().unwrap()
}

#[test]
fn writes_the_ceiling_before_the_first_id_and_never_passes_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state");
    let clock = ManualClock::new(START);
    let rt = runtime(&static_url(provisioned(&path, 3), 3, "10s"), &clock).unwrap();
    assert_eq!(
        file_ceiling(&path),
        START + 10_000,
        "ceiling written at start"
    );
    let status = rt.status();
    assert_eq!((status.slot, status.store), (3, "static"));
    let id = rt.next_id().unwrap();
    assert_eq!(rt.layout().decompose(id).unwrap().slot, 3);
    // Time jumps past the durable ceiling: an id is refused until the keeper has written the next ceiling, and no
    // id is ever past the ceiling on disk.
    clock.set(START + 10_001);
    match rt.next_id() {
        Ok(id) => {
            let ts = rt.layout().decompose(id).unwrap().timestamp_ms;
            assert!(ts <= file_ceiling(&path), "{ts} past the durable ceiling");
        }
        Err(e) => assert!(matches!(e, Error::WindowClosed { .. }), "{e}"),
    }
    let last = rt.shutdown().unwrap();
    assert_eq!(
        file_ceiling(&path),
        last,
        "clean shutdown records the exact last timestamp"
    );
}

#[test]
fn restart_floor_is_the_recorded_ceiling_even_with_the_clock_set_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state");
    let clock = ManualClock::new(START);
    let url = static_url(provisioned(&path, 1), 1, "10s");
    let mut seen = HashSet::new();
    let rt = runtime(&url, &clock).unwrap();
    for _ in 0..5_000 {
        assert!(seen.insert(rt.next_id().unwrap()));
    }
    // A crash leaves the file at now + ahead (the crash loop below does it for real, with SIGKILL).
    drop(rt);
    raise_state_file(&path, 1, START + 10_000).unwrap();
    let ceiling = file_ceiling(&path);

    // The clock goes back 5 s: the restart waits (bounded) until it passes the recorded ceiling.
    clock.set(START - 5_000);
    let rt = runtime(&url, &clock).unwrap();
    assert!(rt.status().floor_ms >= ceiling);
    for _ in 0..5_000 {
        let id = rt.next_id().unwrap();
        assert!(seen.insert(id), "{id} repeated after a restart");
        assert!(rt.layout().decompose(id).unwrap().timestamp_ms > ceiling);
    }
    drop(rt);

    // The clock goes back an hour: the restart refuses rather than repeat.
    clock.set(START - 3_600_000);
    let err = runtime(&url, &clock).unwrap_err();
    assert!(matches!(err, Error::BeforeWindow { .. }), "{err}");
}

#[test]
fn a_second_process_on_the_same_state_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state");
    let clock = ManualClock::new(START);
    let url = static_url(&path, 0, "10s");
    let rt = runtime(&url, &clock).unwrap();
    let err = runtime(&url, &clock).unwrap_err();
    assert_eq!(err.code(), "STATE_FILE", "{err}");
    assert!(err.to_string().contains("another process"), "{err}");
    drop(rt);
    runtime(&url, &clock).expect("the lock is released at shutdown");
}

#[test]
fn a_corrupt_or_truncated_state_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state");
    let clock = ManualClock::new(START);
    let url = static_url(&path, 0, "10s");
    drop(runtime(&url, &clock).unwrap());
    let good = std::fs::read(&path).unwrap();
    for bad in [
        &good[..good.len() / 2],
        &good[..1],
        b"cosid-state 1 slot=0 ceiling=5\n",
    ] {
        std::fs::write(&path, bad).unwrap();
        let err = runtime(&url, &clock).unwrap_err();
        assert_eq!(err.code(), "STATE_FILE", "{err}");
    }
    // An empty file is a new one (a start that crashed before its first write makes one): no record, so the start
    // waits `ahead` past the clock, as for a missing file.
    std::fs::write(&path, b"").unwrap();
    let before = clock.now_ms();
    let rt = runtime(&url, &clock).unwrap();
    assert!(rt.status().floor_ms >= before + 10_000, "{:?}", rt.status());
}

/// A new state file (none yet, or one deleted under a holder) starts `ahead` past the clock: a holder of a deleted
/// file never issued past the ceiling it last wrote, at most `ahead` past the clock.
#[test]
fn a_new_state_file_waits_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state");
    let clock = ManualClock::new(START);
    let rt = runtime(&static_url(&path, 2, "3s"), &clock).unwrap();
    assert_eq!(rt.status().floor_ms, START + 3_000);
    assert!(clock.now_ms() > START + 3_000, "the start did not wait");
    let id = rt.next_id().unwrap();
    assert!(rt.layout().decompose(id).unwrap().timestamp_ms > START + 3_000);
}

/// Records are written in place at one length, and readable by earlier versions' reader (padding inside the
/// checksum, numbers as before).
#[test]
fn records_are_one_length_and_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state");
    let clock = ManualClock::new(START);
    let rt = runtime(&static_url(&path, 7, "1s"), &clock).unwrap();
    let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let first = ino(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.len(), 80, "{text:?}");
    assert!(
        text.starts_with("cosid-state 1 slot=7 ceiling="),
        "{text:?}"
    );
    let _ = rt.next_id().unwrap();
    rt.shutdown().unwrap();
    assert_eq!(
        ino(&path),
        first,
        "the state file was replaced, not written in place"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap().len(), 80);
}

#[test]
fn migration_raises_the_state_file_and_refuses_to_lower_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state");
    let clock = ManualClock::new(START);
    raise_state_file(&path, 2, START + 60_000).unwrap();
    clock.set(START + 50_000);
    let rt = runtime(&static_url(&path, 2, "10s"), &clock).unwrap();
    let id = rt.next_id().unwrap();
    assert!(rt.layout().decompose(id).unwrap().timestamp_ms > START + 60_000);
    assert!(
        raise_state_file(&path, 2, START).is_err(),
        "locked while running"
    );
    drop(rt);
    assert!(raise_state_file(&path, 2, START).is_err(), "never lowered");
    let (_f, rec) = StateFile::open(&path).unwrap();
    assert!(rec.unwrap().ceiling_ms > START + 60_000);
}

#[test]
fn ordinal_slots_and_manual_slots() {
    let clock = ManualClock::new(START);
    let cfg = cosid::Config::default()
        .with_vars(|k| match k {
            "COSID_STORE" => Some("memory:".into()),
            "COSID_PREFERRED_SLOT" => Some("ordinal".into()),
            "HOSTNAME" => Some("order-service-3".into()),
            _ => None,
        })
        .unwrap();
    assert_eq!(cfg.preferred_slot, Some(3));
    let rt = cosid::Builder::with_config(cfg)
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    assert_eq!(rt.status().slot, 3);
    let bad = cosid::Config::default().with_vars(|k| match k {
        "COSID_PREFERRED_SLOT" => Some("ordinal".into()),
        "HOSTNAME" => Some("laptop".into()),
        _ => None,
    });
    assert!(bad.is_err());

    let rt = runtime("manual:5", &clock).unwrap();
    assert_eq!((rt.status().slot, rt.status().store), (5, "manual"));
    rt.next_id().unwrap();
    let err = runtime("manual:4096", &clock).unwrap_err();
    assert_eq!(err.code(), "CONFIG", "{err}");
}

#[test]
fn the_keeper_writes_the_next_ceiling_ahead_of_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state");
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let rt = Runtime::builder()
        .store(static_url(&path, 0, "300ms"))
        .subscribe(move |e| seen.lock().unwrap().push(e.clone()))
        .build()
        .unwrap();
    let first = file_ceiling(&path);
    // Issue for a while across several renewals: no id ever passes the durable ceiling.
    let deadline = std::time::Instant::now() + Duration::from_millis(900);
    let mut n = 0;
    while std::time::Instant::now() < deadline {
        let id = rt.next_id().unwrap();
        let ts = rt.layout().decompose(id).unwrap().timestamp_ms;
        assert!(
            ts <= file_ceiling(&path),
            "id at {ts} past the durable ceiling"
        );
        n += 1;
    }
    assert!(n > 0);
    assert!(file_ceiling(&path) > first, "the ceiling moved ahead");
    let renewed = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, Event::Renewed { .. }))
        .count();
    assert!(renewed >= 2, "renewed {renewed} times");
}

/// Child role for the crash loop: issue ids into a file until killed.
#[test]
fn crash_loop_child() {
    let Ok(out) = std::env::var("COSID_STATIC_CHILD_OUT") else {
        return;
    };
    let url = std::env::var("COSID_STATIC_CHILD_URL").unwrap();
    // Paced children write a few megabytes rather than a gigabyte while they run for seconds.
    let paced = std::env::var_os("COSID_STATIC_CHILD_PACED").is_some();
    let rt = match Runtime::builder()
        .store(url)
        .acquire_timeout(Duration::from_secs(5))
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("child could not start: {e}");
            std::process::exit(3);
        }
    };
    let mut w = BufWriter::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(out)
            .unwrap(),
    );
    loop {
        let id = match rt.next_id() {
            Ok(id) => id.as_u64(),
            Err(e) => {
                w.flush().unwrap();
                eprintln!("child stopped issuing: {} {e}", e.code());
                std::process::exit(4);
            }
        };
        w.write_all(&id.to_le_bytes()).unwrap();
        if id % 64 == 0 {
            w.flush().unwrap();
            if paced {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

#[test]
fn crash_loop_with_sigkill_never_repeats_an_id() {
    let seed: u64 = std::env::var("COSID_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| cosid::clock::SystemClock.now_ms());
    println!("crash loop seed {seed} (replay with COSID_CRASH_SEED={seed})");
    let mut rng = seed;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let url = static_url(&state, 1, "200ms");
    let exe = std::env::current_exe().unwrap();
    let mut files = Vec::new();
    // Even rounds are killed during start-up (the state file's write included), odd rounds while issuing: each
    // odd round waits, bounded, for the child's first ids before a random delay, so a loaded machine that starts
    // processes slowly still exercises both.
    let mut killed_while_issuing = 0;
    let started = std::time::Instant::now();
    let mut round = 0;
    while round < 12 || (killed_while_issuing < 6 && started.elapsed() < Duration::from_secs(60)) {
        let out = dir.path().join(format!("ids-{round}"));
        let mut child = std::process::Command::new(&exe)
            .args([
                "--exact",
                "crash_loop_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("COSID_STATIC_CHILD_OUT", &out)
            .env("COSID_STATIC_CHILD_URL", &url)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        if round % 2 == 0 {
            std::thread::sleep(Duration::from_millis(next() % 150));
        } else {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            let written = || std::fs::metadata(&out).map_or(0, |m| m.len());
            while written() < 8 * 64 && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(next() % 200));
            if written() > 0 {
                killed_while_issuing += 1;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        files.push(out);
        round += 1;
    }
    let mut seen = HashSet::new();
    let mut total = 0;
    for f in &files {
        let Ok(bytes) = std::fs::read(f) else {
            continue;
        };
        for chunk in bytes.chunks_exact(8) {
            let id = u64::from_le_bytes(chunk.try_into().unwrap());
            assert!(
                seen.insert(id),
                "id {id} repeated across restarts (seed {seed})"
            );
            total += 1;
        }
    }
    println!(
        "{total} ids over {} restarts ({killed_while_issuing} killed while issuing), all unique",
        files.len()
    );
    assert!(
        killed_while_issuing >= 6,
        "only {killed_while_issuing} children were killed while issuing"
    );
    assert!(total >= 1_000, "too few ids to mean anything: {total}");
}

/// A clock set back an hour while the keeper waits, then corrected: the keeper notices within its bounded sleep
/// (a quarter of `ahead`, at most a second) and writes the next ceiling, instead of sleeping out the hour it
/// computed from the stepped clock.
#[test]
fn a_clock_set_back_and_corrected_does_not_stall_the_keeper() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state");
    let clock = ManualClock::new(START);
    let rt = runtime(&static_url(provisioned(&path, 0), 0, "400ms"), &clock).unwrap();
    assert_eq!(file_ceiling(&path), START + 400);
    rt.next_id().unwrap();
    clock.set(START - 3_600_000);
    // Long enough for the keeper to wake (after ahead/2 = 200 ms) and see the stepped clock.
    std::thread::sleep(Duration::from_millis(1_500));
    clock.set(START + 390);
    // Wait on the window the runtime publishes, not on the file: the keeper writes the file first and publishes
    // after, so a reader of the file alone can run ahead of the generator.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while rt.status().ceiling_ms <= START + 400 {
        assert!(
            std::time::Instant::now() < deadline,
            "the keeper did not extend the ceiling {} after the clock was corrected",
            START + 400
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let published = rt.status().ceiling_ms;
    assert!(
        file_ceiling(&path) >= published,
        "published {published} past the durable ceiling {}",
        file_ceiling(&path)
    );
    clock.set(START + 500);
    let id = rt.next_id().unwrap();
    assert!(rt.layout().decompose(id).unwrap().timestamp_ms > START + 400);
}

/// A child process killed when dropped, so a failing test leaves none behind.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `crash_loop_child` on `url`, writing its ids to `out` and its messages to `out.log`.
fn spawn_static_child(url: &str, out: &Path) -> KillOnDrop {
    let log = std::fs::File::create(out.with_extension("log")).unwrap();
    std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_loop_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("COSID_STATIC_CHILD_OUT", out)
        .env("COSID_STATIC_CHILD_URL", url)
        .env("COSID_STATIC_CHILD_PACED", "1")
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .map(KillOnDrop)
        .unwrap()
}

/// Waits (bounded) until a child has written ids.
fn wait_for_ids(child: &mut KillOnDrop, out: &Path) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(out).map_or(0, |m| m.len()) < 8 * 64 {
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!(
                "the first child exited ({status}): {}",
                std::fs::read_to_string(out.with_extension("log")).unwrap_or_default()
            );
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the first child wrote no ids"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits (bounded) for a child that must refuse to start; returns its messages.
fn expect_refused(child: &mut KillOnDrop, out: &Path) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            let log = std::fs::read_to_string(out.with_extension("log")).unwrap_or_default();
            assert_eq!(status.code(), Some(3), "the second child: {log}");
            return log;
        }
        if std::time::Instant::now() > deadline {
            let ids = std::fs::metadata(out).map_or(0, |m| m.len() / 8);
            panic!("a second process ran on the same state file ({ids} ids written)");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A state file reached through a symbolic link: the first write goes to the link's target and leaves the link a
/// link, and a second process on the target's own path is refused, since both take the target's lock.
#[cfg(unix)]
#[test]
fn a_state_file_through_a_symlink_is_one_file_and_stays_linked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("persistent")).unwrap();
    let target = dir.path().join("persistent/state");
    let link = dir.path().join("state");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out_a = dir.path().join("ids-a");
    let mut a = spawn_static_child(&static_url(&link, 1, "2s"), &out_a);
    wait_for_ids(&mut a, &out_a);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the durable write replaced the symbolic link with a file"
    );
    let ceiling = file_ceiling(&target);
    assert!(ceiling > START, "the target holds the ceiling ({ceiling})");
    let out_b = dir.path().join("ids-b");
    let mut b = spawn_static_child(&static_url(&target, 1, "2s"), &out_b);
    let log = expect_refused(&mut b, &out_b);
    drop(a);
    assert!(log.contains("another process"), "{log}");
}

/// A state file with a second hard link: a second process on the other name is refused, since a lock beside one
/// name cannot see the other.
#[cfg(unix)]
#[test]
fn a_state_file_with_a_hard_link_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state");
    let other = dir.path().join("other-name");
    let out_a = dir.path().join("ids-a");
    let mut a = spawn_static_child(&static_url(&path, 1, "2s"), &out_a);
    wait_for_ids(&mut a, &out_a);
    std::fs::hard_link(&path, &other).unwrap();
    let out_b = dir.path().join("ids-b");
    let mut b = spawn_static_child(&static_url(&other, 1, "2s"), &out_b);
    let log = expect_refused(&mut b, &out_b);
    drop(a);
    // The lock is on the file itself, which both names reach: the second process is refused by it.
    assert!(log.contains("another process"), "{log}");
}

/// What a test deletes under a live holder of a state file.
#[derive(Debug, Clone, Copy)]
enum Deleted {
    /// `PATH.lock`, the lock file earlier versions relied on.
    LockFile,
    /// The state file (and the lock file, if there is one), as a cleanup of old files would.
    StateFile,
    /// The state file's whole folder, as a cleanup of a temporary folder would.
    Folder,
}

/// The ids a child wrote, flushed or not.
fn ids_of(out: &Path) -> Vec<u64> {
    std::fs::read(out)
        .unwrap_or_default()
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Deletes `what` under a live holder A, then starts B on the same state file path: A and B never issue the same
/// id. A lock file deleted changes nothing (B is refused); a state file or folder deleted stops A (it can no
/// longer record its ceiling where a new process would read it), and B, which finds no state file, starts past
/// every ceiling A could have written.
fn delete_under_a_live_holder(what: Deleted) {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("state-dir");
    let path = folder.join("state");
    let url = static_url(&path, 1, "2s");
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let out_a = logs.join("ids-a");
    let mut a = spawn_static_child(&url, &out_a);
    wait_for_ids(&mut a, &out_a);
    let lock = folder.join("state.lock");
    match what {
        Deleted::LockFile => std::fs::remove_file(&lock).unwrap(),
        Deleted::StateFile => {
            std::fs::remove_file(&path).unwrap();
            let _ = std::fs::remove_file(&lock);
        }
        Deleted::Folder => std::fs::remove_dir_all(&folder).unwrap(),
    }
    let out_b = logs.join("ids-b");
    let mut b = spawn_static_child(&url, &out_b);
    // Let both run (or stop) for longer than `ahead`, so a holder that kept issuing would overlap the other.
    let deadline = std::time::Instant::now() + Duration::from_secs(6);
    while std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let a_status = a.0.try_wait().unwrap();
    let b_status = b.0.try_wait().unwrap();
    drop(a);
    drop(b);
    let log_a = std::fs::read_to_string(out_a.with_extension("log")).unwrap_or_default();
    let log_b = std::fs::read_to_string(out_b.with_extension("log")).unwrap_or_default();
    let ids_a = ids_of(&out_a);
    let ids_b = ids_of(&out_b);
    let set_a: HashSet<u64> = ids_a.iter().copied().collect();
    let repeated = ids_b.iter().filter(|id| set_a.contains(id)).count();
    let layout = cosid::Layout::default();
    let last_a = ids_a
        .iter()
        .map(|&id| layout.decompose(cosid::Id::from(id)).unwrap().timestamp_ms)
        .max();
    let first_b = ids_b
        .iter()
        .map(|&id| layout.decompose(cosid::Id::from(id)).unwrap().timestamp_ms)
        .min();
    assert_eq!(
        repeated,
        0,
        "{what:?} deleted: {repeated} ids repeated; A issued until {last_a:?}, B from {first_b:?} \
         ({} and {} ids); A: {a_status:?} {log_a}; B: {b_status:?} {log_b}",
        ids_a.len(),
        ids_b.len()
    );
    if let (Some(last_a), Some(first_b)) = (last_a, first_b) {
        assert!(
            last_a < first_b,
            "{what:?} deleted: A issued until {last_a}, B from {first_b}"
        );
    }
    match what {
        Deleted::LockFile => {
            assert_eq!(b_status.and_then(|s| s.code()), Some(3), "B ran: {log_b}");
            assert!(log_b.contains("another process"), "{log_b}");
            assert!(a_status.is_none(), "A stopped: {log_a}");
        }
        Deleted::StateFile | Deleted::Folder => {
            assert_eq!(
                a_status.and_then(|s| s.code()),
                Some(4),
                "A kept issuing: {log_a}"
            );
            assert!(log_a.contains("SLOT_LOST"), "{log_a}");
            assert!(!ids_b.is_empty(), "B issued nothing: {b_status:?} {log_b}");
        }
    }
}

#[cfg(unix)]
#[test]
fn a_lock_file_deleted_under_a_live_holder_lets_no_second_process_in() {
    delete_under_a_live_holder(Deleted::LockFile);
}

#[cfg(unix)]
#[test]
fn a_state_file_deleted_under_a_live_holder_stops_it_before_another_starts() {
    delete_under_a_live_holder(Deleted::StateFile);
}

#[cfg(unix)]
#[test]
fn a_state_folder_deleted_under_a_live_holder_stops_it_before_another_starts() {
    delete_under_a_live_holder(Deleted::Folder);
}

/// A state path that is a folder is refused as a folder, not as a file with several names.
#[test]
fn a_state_path_that_is_a_folder_is_named_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state");
    std::fs::create_dir(&path).unwrap();
    let clock = ManualClock::new(START);
    let err = runtime(&static_url(&path, 1, "1s"), &clock).unwrap_err();
    assert_eq!(err.code(), "STATE_FILE", "{err}");
    assert!(err.to_string().contains("is a folder, not a file"), "{err}");
}

/// A state file replaced under a live holder (another file renamed over it): the holder notices within a nap and
/// stops issuing, with the reason in its `SlotLost` event.
#[test]
fn a_state_file_replaced_under_a_live_holder_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state");
    let clock = ManualClock::new(START);
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let rt = Runtime::builder()
        .store(static_url(provisioned(&path, 4), 4, "2s"))
        .namespace("static")
        .clock(Arc::new(clock.clone()))
        .subscribe(move |e| seen.lock().unwrap().push(e.clone()))
        .build()
        .unwrap();
    rt.next_id().unwrap();
    let copy = dir.path().join("copy");
    std::fs::copy(&path, &copy).unwrap();
    std::fs::rename(&copy, &path).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let err = loop {
        match rt.next_id() {
            Err(e) => break e,
            Ok(_) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "still issuing on a replaced state file"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    assert_eq!(err.code(), "SLOT_LOST", "{err}");
    // Not the lease's "a new slot is being acquired": a static holder takes no other slot.
    assert!(
        matches!(err, cosid::Error::StateFileLost { slot: 4 }),
        "{err:?}"
    );
    assert!(err.to_string().contains("state file"), "{err}");
    let reasons: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::SlotLost { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("STATE_FILE:") && r.contains("another file")),
        "{reasons:?}"
    );
}
