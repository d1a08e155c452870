//! Which database file the live processes have open, so that a new process does not grant leases in a file that
//! replaced the one they hold leases in.
//!
//! Deleting the database or renaming another file over it leaves every live process on the old file: a process
//! started afterwards makes or opens the new file, finds no leases, and would grant slot 0 from floor 0 while the
//! old holders keep issuing. The old holders see the change at their next call (the path no longer names their
//! file); until their windows have ended, the new file must not grant.
//!
//! Every process with the database open holds a shared `flock` on `.NAME.cosid-holders` beside it, which records
//! the device and inode of the database file. A process that finds the lock free (alone) records the file it has
//! open; one that finds it shared checks that the others recorded the same file, and otherwise refuses (the store
//! is unavailable: the caller retries). A process that sees its file replaced keeps its lock until the ceiling of
//! every lease it was granted has passed, then lets go. The name starts with a dot so that `rm leases.db*` leaves
//! it. If it is deleted too, the protection is gone, but the old holders still stop at their next call.

use super::unavailable;
use crate::file_identity::FileId;
use crate::store::StoreError;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `.NAME.cosid-holders` beside the database `NAME`.
fn holders_path(db: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(db.file_name().unwrap_or_default());
    name.push(".cosid-holders");
    db.with_file_name(name)
}

/// The holders lock of one database, taken before the database is opened.
#[derive(Debug)]
pub(super) struct Holders {
    lock: File,
    path: PathBuf,
    /// Whether this process holds it exclusively: nobody else has the database open.
    alone: bool,
}

impl Holders {
    /// Joins the holders of `db`. `Ok(Err(why))`, before SQLite touches anything, when others hold leases in a
    /// file the path no longer names: try again later.
    pub(super) fn join(db: &Path) -> Result<Result<Holders, String>, StoreError> {
        let path = holders_path(db);
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io_error(&path, "cannot open", e))?;
        match lock.try_lock() {
            Ok(()) => {
                return Ok(Ok(Holders {
                    lock,
                    path,
                    alone: true,
                }))
            }
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => return Err(io_error(&path, "cannot lock", e)),
        }
        // Others have it: wait (briefly, bounded) for one that is alone to finish writing the record.
        // (As long as SQLite may wait for its own locks while opening.)
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match lock.try_lock_shared() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(TryLockError::WouldBlock) => {
                    let e = std::io::Error::other("another process holds it exclusively");
                    return Err(io_error(&path, "cannot lock", e));
                }
                Err(TryLockError::Error(e)) => return Err(io_error(&path, "cannot lock", e)),
            }
        }
        let holders = Holders {
            lock,
            path,
            alone: false,
        };
        let current = match std::fs::metadata(db) {
            Ok(meta) => Some(FileId::of(&meta)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(unavailable(e)),
        };
        Ok(holders.check(db, current)?.map(|()| holders))
    }

    /// Checks, with a shared lock held (so the record cannot change), that the others' record names `current`.
    fn check(&self, db: &Path, current: Option<FileId>) -> Result<Result<(), String>, StoreError> {
        let mut theirs = String::new();
        (&self.lock)
            .seek(SeekFrom::Start(0))
            .and_then(|_| (&self.lock).read_to_string(&mut theirs))
            .map_err(|e| io_error(&self.path, "cannot read", e))?;
        let ours = current.map_or_else(|| "no file".to_owned(), |f| f.to_string());
        if theirs != ours {
            return Ok(Err(format!(
                "{} was replaced or deleted while other processes held leases in the old file ({theirs}; the \
                 path now names {ours}): no lease is granted in it until their windows have ended",
                db.display()
            )));
        }
        Ok(Ok(()))
    }

    /// Records the database file that was opened (if this process is alone; else checks that the others
    /// recorded it) and keeps a shared lock; the lock lasts while the returned file is open.
    pub(super) fn settle(
        self,
        db: &Path,
        opened: FileId,
    ) -> Result<Result<File, String>, StoreError> {
        if !self.alone {
            return Ok(self.check(db, Some(opened))?.map(|()| self.lock));
        }
        let Holders { mut lock, path, .. } = self;
        lock.set_len(0)
            .and_then(|()| lock.seek(SeekFrom::Start(0)))
            .and_then(|_| lock.write_all(opened.to_string().as_bytes()))
            .map_err(|e| io_error(&path, "cannot write", e))?;
        // Converting to shared lets the others in; the record is written before.
        lock.lock_shared()
            .map_err(|e| io_error(&path, "cannot lock", e))?;
        Ok(Ok(lock))
    }
}

impl Holders {
    /// Takes this process's share of the lock on the database file itself (its inode, whatever path reaches
    /// it), before SQLite opens it. The holders lock beside the path sees only processes on that path: a process
    /// alone on its path while others hold the same file open through another one (a hard link left as the only
    /// name after a file was renamed over the first, the file bind-mounted alone) would read it without their WAL
    /// and take a held slot. Refused then, with the path named. The claim lasts while the returned guard lives.
    pub(super) fn claim_file(&self, db: &Path) -> Result<Claim, StoreError> {
        #[cfg(unix)]
        {
            claim_file(db, self.alone)
        }
        #[cfg(not(unix))]
        {
            let _ = db;
            Ok(Claim)
        }
    }
}

/// This process's share of the lock on one database file; the last one of a file lets go of it.
#[derive(Debug)]
pub(super) struct Claim(#[cfg(unix)] FileId);

/// The database files this process has open for the locks on their inodes, with how many stores use each. One
/// descriptor per file, closed only when no store of this process has the file open: closing any descriptor of
/// a file drops every POSIX lock the process holds on it, SQLite's included.
#[cfg(unix)]
static CLAIMED: std::sync::Mutex<Vec<(FileId, File, usize)>> = std::sync::Mutex::new(Vec::new());

#[cfg(unix)]
impl Drop for Claim {
    fn drop(&mut self) {
        let mut claimed = CLAIMED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = claimed.iter().position(|(id, _, _)| *id == self.0) {
            claimed[i].2 -= 1;
            if claimed[i].2 == 0 {
                claimed.swap_remove(i);
            }
        }
    }
}

#[cfg(unix)]
fn claim_file(db: &Path, alone: bool) -> Result<Claim, StoreError> {
    let mut claimed = CLAIMED.lock().unwrap_or_else(|e| e.into_inner());
    let take = |id: FileId, file: Option<File>, claimed: &mut Vec<(FileId, File, usize)>| {
        match claimed.iter_mut().find(|(known, _, _)| *known == id) {
            Some(entry) => {
                entry.2 += 1;
                // A second descriptor of a file in use here must not be closed either: keep it with the first.
                if let Some(f) = file {
                    std::mem::forget(f);
                }
            }
            None => claimed.push((id, file.expect("a new file comes with its descriptor"), 1)),
        }
        Claim(id)
    };
    if let Ok(meta) = std::fs::metadata(db) {
        let id = FileId::of(&meta);
        if claimed.iter().any(|(known, _, _)| *known == id) {
            return Ok(take(id, None, &mut claimed));
        }
    }
    // Not open in this process (under the lock, no other thread opens it now): a descriptor of our own may
    // still be closed below without touching a connection's locks.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(db)
        .map_err(|e| io_error(db, "cannot open", e))?;
    let id = FileId::of(&file.metadata().map_err(unavailable)?);
    if claimed.iter().any(|(known, _, _)| *known == id) {
        // Renamed into place since the look above: in use here already.
        return Ok(take(id, Some(file), &mut claimed));
    }
    if alone {
        // Nobody else is on this path. Anyone holding the file is on another one.
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(StoreError::UnsafeFile {
                    store: super::KIND,
                    path: db.to_owned(),
                    reason: format!(
                        "another process has this database file ({id}) open through another path (a hard link, \
                         perhaps left as its only name after another file was renamed over the first, or the file \
                         mounted alone); processes on two paths would each keep their own WAL and take the same \
                         slot. Use the path the others use"
                    ),
                })
            }
            Err(TryLockError::Error(e)) => return Err(io_error(db, "cannot lock", e)),
        }
    }
    file.lock_shared()
        .map_err(|e| io_error(db, "cannot lock", e))?;
    Ok(take(id, Some(file), &mut claimed))
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> StoreError {
    unavailable(std::io::Error::new(
        e.kind(),
        format!("{what} {}: {e}", path.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holders_file_is_hidden_beside_the_database() {
        assert_eq!(
            holders_path(Path::new("/var/lib/cosid/leases.db")),
            Path::new("/var/lib/cosid/.leases.db.cosid-holders")
        );
    }
}
