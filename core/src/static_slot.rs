//! Slots without a store (DESIGN §5): a slot the deployment guarantees, kept safe across restarts by a state file.
//!
//! - `static:3?state_file=/var/lib/cosid/state&ahead=10s`: slot 3. Before the first id the runtime writes
//!   `ceiling = now + ahead` to the state file durably (in place: one write of a fixed-length record, fsync), and
//!   never issues past the durable ceiling; when less than `ahead/2` remains, the keeper thread writes the next one.
//!   On restart `floor = max(ceiling in the file, not_before)`; a missing or empty file gives `now + ahead` (a
//!   holder of a deleted file may have written up to that). The lock is on the state file's own inode, so no other
//!   file can vanish under it; the keeper checks that the path still names that inode at every wake-up and write,
//!   and stops issuing when it does not. Symbolic links are followed first (the lock and the writes are on the
//!   file they point to), and a state file with a second name (a hard link, or the file alone mounted) is refused.
//! - `static:ordinal?...`: the slot is the ordinal at the end of `HOSTNAME` (`order-service-3` gives 3).
//! - `manual:3`: a fixed slot and nothing else; nothing protects it (for one instance, or tests).
//!
//! Without a state file a clock set back across a restart can repeat ids: the runtime warns loudly.

use crate::clock::Clock;
use crate::error::{ConfigError, Error};
use crate::event::Event;
use crate::file_identity::{self, FileId};
use crate::generator::Window;
use crate::keeper::{Shared, State};
use crate::lease::{Namespace, Owner, SlotLease};
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Default time a static holder writes ahead of its clock.
pub const DEFAULT_AHEAD: Duration = Duration::from_secs(10);

/// A parsed `static:` or `manual:` store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticSpec {
    /// The slot.
    pub slot: u32,
    /// The state file, if any (`static:` only).
    pub state_file: Option<PathBuf>,
    /// How far ahead of the clock the durable ceiling is written.
    pub ahead: Duration,
    /// Whether this is the unprotected `manual:` mode.
    pub manual: bool,
}

impl StaticSpec {
    /// Parses `static:SLOT[?state_file=PATH&ahead=DURATION]` or `manual:SLOT`; `SLOT` may be `ordinal`, read
    /// from `hostname`. Returns `None` for any other scheme.
    pub fn parse(url: &str, hostname: &str) -> Option<Result<StaticSpec, ConfigError>> {
        let (manual, rest) = if let Some(r) = url.strip_prefix("static:") {
            (false, r)
        } else if let Some(r) = url.strip_prefix("manual:") {
            (true, r)
        } else {
            return None;
        };
        Some(Self::parse_rest(url, manual, rest, hostname))
    }

    fn parse_rest(
        url: &str,
        manual: bool,
        rest: &str,
        hostname: &str,
    ) -> Result<StaticSpec, ConfigError> {
        let bad = |expected: &str| ConfigError::new("COSID_STORE", url, expected);
        let (slot, query) = rest.split_once('?').unwrap_or((rest, ""));
        let slot = match slot {
            "ordinal" => ordinal_of(hostname)?,
            s => s
                .parse::<u32>()
                .ok()
                .filter(|_| !s.starts_with('+') && (s == "0" || !s.starts_with('0')))
                .ok_or_else(|| bad("a slot number or `ordinal` after the scheme, e.g. static:3"))?,
        };
        let mut spec = StaticSpec {
            slot,
            state_file: None,
            ahead: DEFAULT_AHEAD,
            manual,
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match (k, manual) {
                ("state_file", false) if !v.is_empty() => spec.state_file = Some(PathBuf::from(v)),
                ("ahead", false) => {
                    spec.ahead =
                        crate::config::parse_duration_in("ahead", v, crate::config::AHEAD_RANGE)?;
                }
                _ => {
                    return Err(bad(
                        "static: takes state_file=PATH and ahead=DURATION; manual: takes nothing",
                    ))
                }
            }
        }
        Ok(spec)
    }
}

/// The StatefulSet ordinal at the end of a host name: `order-service-3` gives 3.
pub fn ordinal_of(hostname: &str) -> Result<u32, ConfigError> {
    let digits = hostname
        .rsplit_once('-')
        .map(|(_, d)| d)
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| {
            ConfigError::new(
                "HOSTNAME",
                hostname,
                "a StatefulSet pod name ending in -<ordinal>, like order-service-3",
            )
        })?;
    if digits.len() > 1 && digits.starts_with('0') {
        return Err(ConfigError::new(
            "HOSTNAME",
            hostname,
            "an ordinal without leading zeros",
        ));
    }
    digits
        .parse()
        .map_err(|_| ConfigError::new("HOSTNAME", hostname, "an ordinal below 2^32"))
}

/// This host's name: `HOSTNAME` if set, else the system's.
pub fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| gethostname::gethostname().to_string_lossy().into_owned())
}

/// The state file's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateRecord {
    /// The slot it was written for.
    pub slot: u32,
    /// The durable ceiling: no id was issued past it.
    pub ceiling_ms: u64,
}

const MAGIC: &str = "cosid-state 1";

impl StateRecord {
    /// One line of [`RECORD_LEN`] bytes: the body is padded with spaces (inside the checksum, where earlier versions'
    /// readers skip them), so that an in-place write always covers the whole previous record.
    fn encode(&self) -> String {
        let body = format!("{MAGIC} slot={} ceiling={}", self.slot, self.ceiling_ms);
        let body = format!(
            "{body:<width$}",
            width = RECORD_LEN - " crc32=00000000\n".len()
        );
        format!("{body} crc32={:08x}\n", crc32fast::hash(body.as_bytes()))
    }

    fn decode(path: &Path, text: &str) -> Result<StateRecord, Error> {
        let corrupt = |detail: &str| Error::StateFile {
            path: path.to_owned(),
            detail: format!("corrupt or truncated ({detail}); refusing to guess a floor"),
        };
        let line = text
            .strip_suffix('\n')
            .ok_or_else(|| corrupt("no final newline"))?;
        let (body, crc) = line
            .rsplit_once(" crc32=")
            .ok_or_else(|| corrupt("no checksum"))?;
        if format!("{:08x}", crc32fast::hash(body.as_bytes())) != crc {
            return Err(corrupt("checksum mismatch"));
        }
        let rest = body
            .strip_prefix(MAGIC)
            .ok_or_else(|| corrupt("unknown header"))?;
        let mut slot = None;
        let mut ceiling = None;
        for field in rest.split_whitespace() {
            match field.split_once('=') {
                Some(("slot", v)) => slot = v.parse().ok(),
                Some(("ceiling", v)) => ceiling = v.parse().ok(),
                _ => return Err(corrupt("unknown field")),
            }
        }
        match (slot, ceiling) {
            (Some(slot), Some(ceiling_ms)) => Ok(StateRecord { slot, ceiling_ms }),
            _ => Err(corrupt("missing slot or ceiling")),
        }
    }
}

/// A state file held by this process (its lock is released when this is dropped).
///
/// The lock is on the state file's own inode (`flock` on the open file), and every write goes into that inode in
/// place, so nothing can make the lock and the file a new process would read diverge except the path naming another
/// file: which [`StateFile::check`] notices (see docs/design.md, "A static slot's lock is on the state file").
#[derive(Debug)]
pub struct StateFile {
    /// The path as configured, for messages.
    path: PathBuf,
    /// The file it names once symbolic links are followed: the one read, locked and written.
    real: PathBuf,
    /// The state file, open for reading and writing, and locked.
    file: File,
    /// Its identity: the path must keep naming it.
    id: FileId,
    /// `<file>.lock`, which versions before the inode lock relied on: taken as well, so that an old and a new
    /// version on one state file during a rolling upgrade exclude each other. Nothing here depends on it.
    _legacy_lock: File,
}

/// Why a write of the state file failed.
#[derive(Debug)]
pub(crate) enum WriteFailure {
    /// The path no longer names the locked file (deleted, or replaced, with or without its folder): a new process
    /// on the path would not see this one. Permanent.
    Gone(Error),
    /// The write or its fsync failed: worth retrying.
    Io(Error),
}

/// The length every record is written at, so that an in-place write always covers the whole previous one.
const RECORD_LEN: usize = 80;

impl StateFile {
    /// Follows `path`'s symbolic links, opens (creating if needed) the file they end at, locks that file itself and
    /// reads it. The record is `None` if the file is new or empty. Fails if another process holds the lock, if the
    /// file has another name that would lead a process elsewhere (a hard link, or the file alone mounted here), if
    /// the path is a folder, or if it is corrupt.
    pub fn open(path: &Path) -> Result<(StateFile, Option<StateRecord>), Error> {
        let io = |what: &str, e: std::io::Error| Error::StateFile {
            path: path.to_owned(),
            detail: format!("{what}: {e}"),
        };
        let busy = |what: &Path| Error::StateFile {
            path: path.to_owned(),
            detail: format!(
                "another process is running on this state file (the lock on {} is held)",
                what.display()
            ),
        };
        // Every symbolic link to one file meets at one file, and so at one lock.
        let real = file_identity::resolve(path, file_identity::Folders::Create)
            .map_err(|e| io("cannot resolve it or create its folder", e))?;
        // Between the open and the lock the path may come to name another file (an earlier version's rename, a
        // deletion): lock, then check that the path still names the locked file, and start over if not.
        let mut tries = 0;
        let (file, id) = loop {
            tries += 1;
            if let Ok(meta) = std::fs::metadata(&real) {
                if meta.is_dir() {
                    return Err(Error::StateFile {
                        path: path.to_owned(),
                        detail: format!(
                            "{} is a folder, not a file: give the path of a file in it, e.g. {}",
                            real.display(),
                            real.join("state").display()
                        ),
                    });
                }
            }
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&real)
                .map_err(|e| io("cannot open it", e))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => return Err(busy(&real)),
                Err(std::fs::TryLockError::Error(e)) => return Err(io("cannot lock it", e)),
            }
            let id = FileId::of(&file.metadata().map_err(|e| io("cannot read it", e))?);
            match std::fs::metadata(&real) {
                Ok(meta) if FileId::of(&meta) == id => {
                    if let Some(why) = file_identity::second_name(&real, &meta) {
                        return Err(Error::StateFile {
                            path: path.to_owned(),
                            detail: format!(
                                "{why}: another process on the other name would run on the same slot; give the \
                                 state file one name (a symbolic link is fine) and mount its folder, not the file"
                            ),
                        });
                    }
                    break (file, id);
                }
                _ if tries < 8 => continue,
                Ok(_) | Err(_) => {
                    return Err(Error::StateFile {
                        path: path.to_owned(),
                        detail: "the file was replaced or deleted each time it was locked".into(),
                    })
                }
            }
        };
        let legacy_path = lock_path(&real);
        let legacy = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&legacy_path)
            .map_err(|e| io("cannot open the lock file of earlier versions", e))?;
        match legacy.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(busy(&legacy_path)),
            Err(std::fs::TryLockError::Error(e)) => return Err(io("cannot lock it", e)),
        }
        let mut text = String::new();
        (&file)
            .read_to_string(&mut text)
            .map_err(|e| io("cannot read it", e))?;
        // An empty file is a new one (made by this open, or by one that crashed before its first write): it has
        // no record, like a missing file, and the start treats it so (see `StaticKeeper::start`).
        let record = match text.as_str() {
            "" => None,
            text => Some(StateRecord::decode(path, text)?),
        };
        Ok((
            StateFile {
                path: path.to_owned(),
                real,
                file,
                id,
                _legacy_lock: legacy,
            },
            record,
        ))
    }

    /// Whether the path (and the configured path, if it is absolute and spelled otherwise) still names the locked
    /// file. A deleted file, a deleted folder, or a file or folder put in their place all fail: a process started
    /// on the path now would lock another file and run beside this one.
    pub fn check(&self) -> Result<(), Error> {
        let gone = |detail: String| Error::StateFile {
            path: self.path.clone(),
            detail,
        };
        let mut paths = vec![self.real.as_path()];
        if self.path != self.real && self.path.is_absolute() {
            paths.push(self.path.as_path());
        }
        for p in paths {
            match std::fs::metadata(p) {
                Ok(meta) if FileId::of(&meta) == self.id => {}
                Ok(meta) => {
                    return Err(gone(format!(
                        "{} now names another file ({}, was {}): the state file was replaced while this process \
                         held it, so a process started now would run on the same slot; no more ids are issued here",
                        p.display(),
                        FileId::of(&meta),
                        self.id
                    )))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(gone(format!(
                        "{} was deleted (or its folder was) while this process held it, so a process started now \
                         would run on the same slot; no more ids are issued here",
                        p.display()
                    )))
                }
                Err(e) => {
                    return Err(gone(format!(
                        "cannot check that {} is still the locked file ({e}); no more ids are issued here",
                        p.display()
                    )))
                }
            }
        }
        Ok(())
    }

    /// Writes `record` durably into the locked file in place (one write at offset 0 of a fixed-length record,
    /// fsync), then checks that the path still names it.
    pub fn write(&self, record: StateRecord) -> Result<(), Error> {
        self.write_checked(record).map_err(|e| match e {
            WriteFailure::Gone(e) | WriteFailure::Io(e) => e,
        })
    }

    /// [`StateFile::write`], telling a path that names another file now (permanent) from a failed write.
    pub(crate) fn write_checked(&self, record: StateRecord) -> Result<(), WriteFailure> {
        self.check().map_err(WriteFailure::Gone)?;
        write_in_place(&self.file, &record.encode()).map_err(|e| {
            WriteFailure::Io(Error::StateFile {
                path: self.path.clone(),
                detail: format!("cannot write {}: {e}", self.real.display()),
            })
        })?;
        // Deleted while it was written: the ceiling just written is where no new process will read it.
        self.check().map_err(WriteFailure::Gone)
    }

    /// Makes the file's name durable: a file this open created exists after a crash only once its folder is
    /// synced.
    fn sync_folder(&self) -> Result<(), Error> {
        let dir = self
            .real
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::StateFile {
                path: self.path.clone(),
                detail: format!("cannot sync its folder {}: {e}", dir.display()),
            })
    }
}

fn lock_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".lock");
    PathBuf::from(p)
}

/// Writes `text` (a record, [`RECORD_LEN`] bytes) at offset 0, cuts the file after it, and fsyncs. The record is one write of under 100 bytes: a
/// process killed mid-write leaves the old or the new record whole (the page cache takes the write at once); a
/// power loss that tears the sector is caught by the checksum and refused.
fn write_in_place(file: &File, text: &str) -> std::io::Result<()> {
    let bytes = text.as_bytes();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.write_all_at(bytes, 0)?;
    }
    #[cfg(not(unix))]
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = file;
        f.seek(SeekFrom::Start(0))?;
        f.write_all(bytes)?;
    }
    file.set_len(bytes.len() as u64)?;
    file.sync_all()
}

/// Raises the ceiling recorded in a static state file to at least `not_before` (migration). Refuses to lower it.
/// Takes the file's lock, so it fails while a runtime is using the file.
pub fn raise_state_file(path: &Path, slot: u32, not_before: u64) -> Result<StateRecord, Error> {
    let (file, record) = StateFile::open(path)?;
    if record.is_none() {
        file.sync_folder()?;
    }
    if let Some(r) = record {
        if r.ceiling_ms > not_before {
            return Err(Error::StateFile {
                path: path.to_owned(),
                detail: format!(
                    "its ceiling {} is already above {not_before}; refusing to lower it",
                    r.ceiling_ms
                ),
            });
        }
    }
    let record = StateRecord {
        slot,
        ceiling_ms: not_before,
    };
    file.write(record)?;
    Ok(record)
}

/// The longest the static keeper sleeps before reading the clock again: a quarter of `ahead`, at most a second.
fn max_sleep(ahead: Duration) -> Duration {
    (ahead / 4).min(Duration::from_secs(1))
}

/// The keeper of a static slot: keeps the durable ceiling ahead of the clock.
#[derive(Debug)]
pub(crate) struct StaticKeeper {
    pub(crate) spec: StaticSpec,
    pub(crate) file: Option<StateFile>,
    pub(crate) clock: Arc<dyn Clock>,
}

/// Ceiling used when nothing bounds the window (no state file).
const UNBOUNDED: u64 = u64::MAX / 2;

impl StaticKeeper {
    /// Opens the state file and writes the first ceiling; returns the keeper and the first window's lease.
    pub(crate) fn start(
        spec: StaticSpec,
        namespace: Namespace,
        owner: Owner,
        clock: Arc<dyn Clock>,
        mut wait_limit: Duration,
    ) -> Result<(StaticKeeper, SlotLease), Error> {
        let now = clock.now_ms();
        let (file, floor, ceiling) = match &spec.state_file {
            Some(path) => {
                let (file, record) = StateFile::open(path)?;
                if let Some(r) = record.filter(|r| r.slot != spec.slot) {
                    tracing::warn!(path = %path.display(), file_slot = r.slot, slot = spec.slot,
                        "cosid: the state file was written for another slot; using its ceiling as the floor anyway");
                }
                let ahead = spec.ahead.as_millis() as u64;
                let floor = match record {
                    Some(r) => r.ceiling_ms,
                    // No record: a first start, or a state file deleted under a holder that is still running. That
                    // holder stops at its next check, and never issued past the ceiling it last wrote, at most
                    // `ahead` past the clock: start past that, as after a crash.
                    None => {
                        file.sync_folder()?;
                        tracing::info!(path = %path.display(), ahead_ms = ahead,
                            "cosid: new state file: the first id waits `ahead`, past any holder of a deleted one");
                        wait_limit = wait_limit.max(spec.ahead + Duration::from_secs(1));
                        now.saturating_add(ahead)
                    }
                };
                let ceiling = now.max(floor).saturating_add(ahead);
                file.write(StateRecord {
                    slot: spec.slot,
                    ceiling_ms: ceiling,
                })?;
                (Some(file), floor, ceiling)
            }
            None => {
                tracing::warn!(
                    slot = spec.slot,
                    "cosid: UNPROTECTED static slot: without a state_file, a clock set back across a restart can \
                     repeat ids; add ?state_file=PATH in production"
                );
                (None, 0, UNBOUNDED)
            }
        };
        // After a crash the floor may be ahead of the clock by up to `ahead`: wait for it, bounded.
        let started = clock.now_ms();
        while clock.now_ms() <= floor {
            let waited = clock.now_ms().saturating_sub(started);
            if waited > wait_limit.as_millis() as u64 {
                return Err(Error::BeforeWindow {
                    floor_ms: floor,
                    now_ms: clock.now_ms(),
                    waited_ms: waited,
                });
            }
            clock.sleep(Duration::from_millis(
                (floor + 1 - clock.now_ms().min(floor)).min(50),
            ));
        }
        let lease = SlotLease {
            namespace,
            slot: spec.slot,
            owner,
            fence: 0,
            expires_at: ceiling,
            floor,
            ceiling,
            store_now: now,
        };
        Ok((StaticKeeper { spec, file, clock }, lease))
    }

    /// The window of a lease.
    pub(crate) fn window(lease: &SlotLease) -> Window {
        Window {
            slot: lease.slot,
            floor_ms: lease.floor,
            ceiling_ms: lease.ceiling,
        }
    }

    /// Writes the next ceiling whenever less than `ahead/2` remains, until `stop`; then seals and records the
    /// exact last timestamp, so a clean restart can start right after it.
    pub(crate) async fn run(
        self,
        shared: Arc<Shared>,
        mut stop: watch::Receiver<bool>,
    ) -> Option<u64> {
        let Some(file) = &self.file else {
            let _ = stop.changed().await;
            let last = shared.generator.seal();
            shared.set_state(State::Closed);
            return last;
        };
        let ahead = self.spec.ahead.as_millis() as u64;
        let mut backoff = Duration::from_millis(100);
        // The wall clock can step while the keeper sleeps: a wait computed from it may be far too long (the clock
        // set back, then corrected) or too short. Each sleep is bounded, and the clock read again on waking.
        let nap = max_sleep(self.spec.ahead);
        loop {
            let lease = shared.current_lease();
            let due = lease.ceiling.saturating_sub(ahead / 2);
            let left = due.saturating_sub(self.clock.now_ms());
            if left > 0 {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(left).min(nap)) => {}
                    _ = stop.changed() => break,
                }
                // Each wake-up checks that the path still names the locked file, so a holder whose file was
                // deleted stops within a nap, before the next ceiling is due.
                if let Err(e) = file.check() {
                    return self.lost(&shared, stop, &e).await;
                }
                continue;
            }
            let ceiling = self.clock.now_ms().saturating_add(ahead).max(lease.ceiling);
            match file.write_checked(StateRecord {
                slot: self.spec.slot,
                ceiling_ms: ceiling,
            }) {
                Ok(()) => {
                    shared.generator.extend(ceiling);
                    let renewed = SlotLease {
                        ceiling,
                        expires_at: ceiling,
                        store_now: self.clock.now_ms(),
                        ..lease
                    };
                    shared.set(&renewed, State::Active);
                    shared.emit(Event::Renewed {
                        slot: renewed.slot,
                        ceiling_ms: ceiling,
                        expires_at_ms: ceiling,
                    });
                    backoff = Duration::from_millis(100);
                }
                Err(WriteFailure::Gone(e)) => return self.lost(&shared, stop, &e).await,
                Err(WriteFailure::Io(e)) => {
                    shared.set_state(State::Renewing);
                    shared.emit(Event::RenewFailed {
                        slot: lease.slot,
                        error: e.to_string(),
                        retry_in_ms: backoff.as_millis() as u64,
                    });
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = stop.changed() => break,
                    }
                    backoff = (backoff * 2).min(self.spec.ahead / 6);
                }
            }
        }
        let last = shared.generator.seal();
        let lease = shared.current_lease();
        shared.set_state(State::Closed);
        let ceiling = last.unwrap_or(lease.floor).max(lease.floor);
        if let Err(e) = file.write(StateRecord {
            slot: self.spec.slot,
            ceiling_ms: ceiling,
        }) {
            tracing::warn!(error = %e, "cosid: could not record the last timestamp; the next start waits for the old ceiling");
        } else {
            shared.emit(Event::Released {
                slot: lease.slot,
                last_issued_ms: last,
            });
        }
        last
    }

    /// The path no longer names the locked state file: stop issuing at once (ids fail with `SlotLost`), say why,
    /// and wait for the shutdown. Nothing more is written: the file is no longer where a new process reads.
    async fn lost(
        &self,
        shared: &Shared,
        mut stop: watch::Receiver<bool>,
        why: &Error,
    ) -> Option<u64> {
        shared.generator.invalidate_state_file();
        shared.set_state(State::Closed);
        shared.emit(Event::SlotLost {
            slot: self.spec.slot,
            reason: format!("STATE_FILE: {why}"),
        });
        let _ = stop.changed().await;
        let last = shared.generator.seal();
        shared.set_state(State::Closed);
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let s = StaticSpec::parse("static:3?state_file=/x/s&ahead=5s", "h")
            .unwrap()
            .unwrap();
        assert_eq!(s.slot, 3);
        assert_eq!(s.state_file.as_deref(), Some(Path::new("/x/s")));
        assert_eq!(s.ahead, Duration::from_secs(5));
        assert!(!s.manual);
        let s = StaticSpec::parse("manual:0", "h").unwrap().unwrap();
        assert!(s.manual && s.state_file.is_none());
        let s = StaticSpec::parse("static:ordinal", "order-service-12")
            .unwrap()
            .unwrap();
        assert_eq!(s.slot, 12);
        assert!(StaticSpec::parse("sqlite:x", "h").is_none());
        for bad in [
            "static:",
            "static:-1",
            "static:03",
            "static:x",
            "manual:1?state_file=/x",
            "static:1?nope=1",
            "static:1?ahead=1ms",
        ] {
            assert!(StaticSpec::parse(bad, "h").unwrap().is_err(), "{bad}");
        }
    }

    #[test]
    fn ordinals() {
        assert_eq!(ordinal_of("order-service-3").unwrap(), 3);
        assert_eq!(ordinal_of("web-0").unwrap(), 0);
        for bad in [
            "order-service",
            "order-service-",
            "web-03",
            "web-x1",
            "3",
            "web-99999999999",
        ] {
            assert!(ordinal_of(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn state_records_round_trip_and_refuse_damage() {
        let p = Path::new("/s");
        let r = StateRecord {
            slot: 7,
            ceiling_ms: 1_764_000_000_123,
        };
        let text = r.encode();
        assert_eq!(StateRecord::decode(p, &text).unwrap(), r);
        for cut in 0..text.len() {
            assert!(
                StateRecord::decode(p, &text[..cut]).is_err(),
                "truncated at {cut}"
            );
        }
        let flipped = text.replace("123", "124");
        assert!(StateRecord::decode(p, &flipped).is_err());
    }
}
