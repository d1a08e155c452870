//! The embedded default store: one SQLite file shared by every process on the host.
//!
//! Each operation is one `BEGIN IMMEDIATE` transaction, which takes the database's write lock before it reads, so
//! the read-decide-write of [`protocol`] is atomic across processes. The file runs in WAL mode with
//! `synchronous = FULL`, so a committed lease survives a crash of the process or the host. The store clock is the
//! host clock.
//!
//! The WAL and its index sit beside the path as spelled (`PATH-wal`, `PATH-shm`), so the store refuses a file it
//! could reach through a second path, and checks at every call that the path still names the file it has open.

use super::{sql_view, Inspection, LeaseStore, StoreError};
use crate::clock::Clock;
use crate::file_identity::{self, FileId};
use crate::lease::{
    layout_text, protocol, AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord,
    Owner, SlotLease, SlotRecord,
};
use holders::Holders;
use rusqlite::{params, Connection, OptionalExtension, Row, Transaction, TransactionBehavior};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod holders;

const KIND: &str = "sqlite";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS cosid_namespace (
    name         TEXT PRIMARY KEY,
    bits         INTEGER NOT NULL,
    tolerance_ms INTEGER NOT NULL,
    not_before   INTEGER NOT NULL,
    layout       TEXT,
    lowest_unused INTEGER
);
CREATE TABLE IF NOT EXISTS cosid_slot (
    namespace      TEXT NOT NULL,
    slot           INTEGER NOT NULL,
    owner_key      TEXT,
    incarnation    TEXT,
    last_owner_key TEXT,
    fence          INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    floor          INTEGER NOT NULL,
    ceiling        INTEGER NOT NULL,
    next_floor     INTEGER NOT NULL,
    PRIMARY KEY (namespace, slot)
);
";

/// The acquire's indexes, each for one part of [`CANDIDATES_SQL`] (the same as PostgreSQL's).
const INDEXES: &str = "
CREATE INDEX IF NOT EXISTS cosid_slot_owner ON cosid_slot (namespace, owner_key);
CREATE INDEX IF NOT EXISTS cosid_slot_last_owner ON cosid_slot (namespace, last_owner_key);
CREATE INDEX IF NOT EXISTS cosid_slot_released ON cosid_slot (namespace, slot) WHERE owner_key IS NULL;
CREATE INDEX IF NOT EXISTS cosid_slot_held ON cosid_slot (namespace, expires_at) WHERE owner_key IS NOT NULL;
";

/// The rows a [`protocol::View`] needs: PostgreSQL's query, its `$n` parameters written `?n`.
static CANDIDATES_SQL: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| include_str!("sql_view/candidates.sql").replace('$', "?"));

/// The lowest slot from ?2 on that has no row: ?2 itself, or the first slot after a run of rows starting there.
const FIRST_UNUSED_SQL: &str = "
SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM cosid_slot WHERE namespace = ?1 AND slot = ?2) THEN ?2
ELSE (SELECT s.slot + 1 FROM cosid_slot s WHERE s.namespace = ?1 AND s.slot >= ?2
      AND NOT EXISTS (SELECT 1 FROM cosid_slot t WHERE t.namespace = ?1 AND t.slot = s.slot + 1)
      ORDER BY s.slot LIMIT 1) END";

/// Leases in an SQLite database file.
#[derive(Debug)]
pub struct SqliteStore {
    /// The path as configured, for messages.
    path: PathBuf,
    /// The file it names once symbolic links are followed (SQLite names its WAL after this).
    real: PathBuf,
    state: Mutex<OpenState>,
    clock: Arc<dyn Clock>,
}

#[derive(Debug)]
struct OpenState {
    /// The open database; `None` after its file was found replaced, until a call opens the path's new file.
    db: Option<Db>,
    /// Holders locks on files found replaced, each kept until the clock passes the ceiling beside it.
    retired: Vec<((File, holders::Claim), u64)>,
    /// The highest ceiling of any lease this store granted or extended: no id of this process lies past it.
    ceiling: u64,
}

/// A connection, the identity of the file it has open, and this process's share of its holders lock.
#[derive(Debug)]
struct Db {
    /// Dropped first: the claim on the file below must outlive the connection (see `Holders::claim_file`).
    conn: Connection,
    file: FileId,
    holders: File,
    claim: holders::Claim,
}

fn unavailable(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Unavailable {
        store: KIND,
        source: Box::new(e),
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`. Its folder must exist, except for the default file
    /// ([`super::StoreUrl::default_sqlite`]), whose folders are created (mode 0700).
    ///
    /// Refuses a file that can also be reached through another path (a hard link, or the file alone mounted
    /// here): WAL mode keeps its lock and index in `PATH-wal` and `PATH-shm` beside the path as spelled, so
    /// processes on two paths of one file would not see each other's leases.
    ///
    /// Refuses in a process forked while another thread of its parent was inside an SQLite call (one that outlasted
    /// the fork hook's wait, see `host::fork`): SQLite's process-wide state (its table of open files and the locks
    /// it believes it holds) was copied mid-call, and a connection of the child's own would share it.
    pub fn open(path: &Path, clock: Arc<dyn Clock>) -> Result<Self, StoreError> {
        if crate::host::fork::forked_mid_file_call() {
            return Err(StoreError::UnsafeFile {
                store: KIND,
                path: path.to_owned(),
                reason: format!(
                    "this process was forked while its parent was inside an SQLite call for over {} s, so SQLite's \
                     state in it was copied mid-call and cannot be used safely; start the process with exec, or \
                     fork while no store call is in flight",
                    crate::host::fork::FILE_CALL_WAIT.as_secs()
                ),
            });
        }
        // The default file's folders are cosid's own choice, made here; a path the user named must have its folder.
        let default = super::StoreUrl::default_sqlite()
            .ok()
            .is_some_and(|u| u == super::StoreUrl::Sqlite(path.to_owned()));
        let folders = if default {
            file_identity::Folders::Create
        } else {
            file_identity::Folders::MustExist
        };
        // A missing folder is the store not being there (yet: a volume mounted later), not a bad setting.
        let real = file_identity::resolve(path, folders).map_err(unavailable)?;
        // Waiting for the holders of a replaced file is not a reason to fail here: the calls retry.
        let db = Db::open(path, &real)
            .map_err(|e| name_missing_files(&real, e))?
            .inspect_err(
                |why| tracing::warn!(%why, "cosid: the SQLite database cannot be used yet"),
            )
            .ok();
        Ok(Self {
            path: path.to_owned(),
            real,
            state: Mutex::new(OpenState {
                db,
                retired: Vec::new(),
                ceiling: 0,
            }),
            clock,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` in one write transaction; commits if it returns `Ok`.
    fn write<T>(
        &self,
        f: impl FnOnce(&Transaction<'_>, u64) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.write_in(f)
            .map_err(|e| name_missing_files(&self.real, e))
    }

    fn write_in<T>(
        &self,
        f: impl FnOnce(&Transaction<'_>, u64) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = self.clock.now_ms();
        state.retired.retain(|(_, until)| now <= *until);
        let db = match state.db.take() {
            Some(db) => db,
            None => Db::open(&self.path, &self.real)?
                .map_err(|why| unavailable(std::io::Error::other(why)))?,
        };
        // The leases live in the file the connection has open. If the path names another file now (deleted and
        // made again, or replaced by a rename), a new process on the path sees none of them: the leases this
        // process holds are gone from the store's view. Refuse; keep the old file's holders lock until every
        // window granted here has ended, so no process grants in the new file before; open the new file on a
        // later call. (Closing a connection to a moved file neither checkpoints nor deletes the WAL now named by
        // the path.)
        match self.check_same_file(db.file) {
            Ok(()) => {}
            Err(e @ StoreError::Regression { .. }) => {
                let until = state.ceiling;
                state.retired.push(((db.holders, db.claim), until));
                return Err(e);
            }
            Err(e) => {
                state.db = Some(db);
                return Err(e);
            }
        }
        let db = state.db.insert(db);
        let tx = db
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(unavailable)?;
        // Read the clock once the write lock is held, so times follow the order of the transactions.
        let now = self.clock.now_ms();
        let out = f(&tx, now)?;
        tx.commit().map_err(unavailable)?;
        Ok(out)
    }

    /// Notes a granted or extended window: a file found replaced keeps its holders lock until past it.
    fn granted_until(&self, ceiling: u64) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.ceiling = state.ceiling.max(ceiling);
    }

    /// Whether the path still names the file the connection has open.
    fn check_same_file(&self, open: FileId) -> Result<(), StoreError> {
        let regression = |detail: String| StoreError::Regression {
            store: KIND,
            what: format!("database file {}", self.path.display()),
            detail,
        };
        match std::fs::metadata(&self.real) {
            Ok(meta) if FileId::of(&meta) == open => Ok(()),
            Ok(meta) => Err(regression(format!(
                "the path now names another file ({}, was {open}): the file was replaced while this process held \
                 a lease in it, so every lease in it is gone",
                FileId::of(&meta)
            ))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(regression(format!(
                "{} was deleted while this process held a lease in it, so every lease in it is gone",
                self.real.display()
            ))),
            Err(e) => Err(unavailable(e)),
        }
    }
}

impl Db {
    /// Opens the database at `real` (resolved from `shown`), refusing a file with a second path. `Ok(Err(why))`
    /// while processes still hold leases in a file the path named before: try again later.
    fn open(shown: &Path, real: &Path) -> Result<Result<Db, String>, StoreError> {
        let refuse = |reason: String| {
            StoreError::UnsafeFile {
            store: KIND,
            path: shown.to_owned(),
            reason: format!(
                "{reason}; processes on the two paths would each keep their own WAL and take the same slot. Give \
                 the database one path (a symbolic link is fine) and mount its folder, not the file"
            ),
        }
        };
        let holders = match Holders::join(real)? {
            Ok(holders) => holders,
            Err(why) => return Ok(Err(why)),
        };
        let before = match std::fs::metadata(real) {
            Ok(meta) => {
                if let Some(why) = file_identity::second_name(real, &meta) {
                    return Err(refuse(why));
                }
                Some(FileId::of(&meta))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(unavailable(e)),
        };
        let claim = holders.claim_file(real)?;
        let mut conn = Connection::open(real).map_err(unavailable)?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(unavailable)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(unavailable)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(unavailable)?;
        conn.execute_batch(SCHEMA).map_err(unavailable)?;
        upgrade_schema(&mut conn)?;
        // The file SQLite opened is the one the path names after the open, unless it was swapped during the open.
        let meta = std::fs::metadata(real).map_err(unavailable)?;
        let file = FileId::of(&meta);
        if before.is_some_and(|b| b != file) {
            return Err(unavailable(std::io::Error::other(format!(
                "{} was replaced while it was being opened",
                real.display()
            ))));
        }
        if let Some(why) = file_identity::second_name(real, &meta) {
            return Err(refuse(why));
        }
        match holders.settle(real, file)? {
            Ok(holders) => Ok(Ok(Db {
                conn,
                file,
                holders,
                claim,
            })),
            Err(why) => {
                drop(conn);
                drop(claim);
                Ok(Err(why))
            }
        }
    }
}

/// Files made by earlier versions lack the namespace record's layout (their records read as "no layout yet") and
/// `lowest_unused` columns, and the acquire's indexes: add them, in a write transaction so that two processes
/// opening one old file at once do not both try.
fn upgrade_schema(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(unavailable)?;
    for column in ["layout", "lowest_unused"] {
        let present: bool = tx
            .query_row(
                "SELECT COUNT(*) FROM pragma_table_info('cosid_namespace') WHERE name = ?1",
                [column],
                |r| r.get::<_, i64>(0),
            )
            .map_err(unavailable)?
            > 0;
        if !present {
            let kind = if column == "layout" {
                "TEXT"
            } else {
                "INTEGER"
            };
            tx.execute(
                &format!("ALTER TABLE cosid_namespace ADD COLUMN {column} {kind}"),
                [],
            )
            .map_err(unavailable)?;
        }
    }
    tx.execute_batch(INDEXES).map_err(unavailable)?;
    tx.commit().map_err(unavailable)
}

fn corrupt(namespace: &Namespace, what: &str, detail: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        store: KIND,
        what: format!("{what} of namespace {namespace}"),
        detail: detail.into(),
    }
}

/// A failed read of a row: a value of the wrong type is a corrupt record; SQLite failing to read (a disk I/O error,
/// a file deleted under it) is the store's trouble, never the record's.
fn row_error(namespace: &Namespace, what: &str, e: rusqlite::Error) -> StoreError {
    match e {
        rusqlite::Error::SqliteFailure(..) => unavailable(e),
        e => corrupt(namespace, what, e.to_string()),
    }
}

/// An SQLite I/O error names the files it may come from: SQLite reports only "disk I/O error". While a process has
/// the database open in WAL mode, `-wal` and `-shm` exist; one deleted or replaced under it (a cleanup of the
/// folder, a hand) makes the next reader fail so (a short read: the index names frames the new WAL lacks), and the
/// commits it held that were not yet copied into the database are lost.
fn name_missing_files(real: &Path, e: StoreError) -> StoreError {
    let StoreError::Unavailable { store, source } = e else {
        return e;
    };
    let io_error = match source.downcast_ref::<rusqlite::Error>() {
        Some(rusqlite::Error::SqliteFailure(f, _)) => {
            (f.code == rusqlite::ErrorCode::SystemIoFailure).then_some(f.extended_code)
        }
        _ => None,
    };
    let Some(code) = io_error else {
        return StoreError::Unavailable { store, source };
    };
    let state = |suffix: &str| {
        let mut p = real.as_os_str().to_owned();
        p.push(suffix);
        let p = PathBuf::from(p);
        match std::fs::metadata(&p) {
            Ok(m) => format!("{} ({} bytes)", p.display(), m.len()),
            Err(_) => format!("{} (missing)", p.display()),
        }
    };
    StoreError::Unavailable {
        store,
        source: Box::new(std::io::Error::other(format!(
            "{source} (SQLite code {code}) on {}; its WAL is {}, its index {}: a WAL or index deleted or replaced \
             while the database was open fails so, and loses the commits not yet copied into the database; stop \
             every process on it, check the leases (cosid leases), and raise not_before past any id they could \
             have covered",
            real.display(),
            state("-wal"),
            state("-shm")
        ))),
    }
}

fn u64_of(v: i64, namespace: &Namespace, field: &str) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| corrupt(namespace, field, format!("{field} is negative ({v})")))
}

fn i64_of(v: u64) -> i64 {
    // Every stored time is a Unix millisecond or a fence: far below 2^63.
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn read_namespace(
    tx: &Transaction<'_>,
    ns: &Namespace,
) -> Result<Option<NamespaceRecord>, StoreError> {
    let row = tx
        .query_row(
            "SELECT bits, tolerance_ms, not_before, layout FROM cosid_namespace WHERE name = ?1",
            params![ns.encoded()],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Option<String>>(3)?,
                ))
            },
        )
        .optional()
        .map_err(|e| row_error(ns, "the namespace record", e))?;
    let Some((bits, tolerance, not_before, layout)) = row else {
        return Ok(None);
    };
    let bits = u8::try_from(bits)
        .ok()
        .filter(|b| (1..=31).contains(b))
        .ok_or_else(|| {
            corrupt(
                ns,
                "the namespace record",
                format!("bits {bits} is not 1 to 31"),
            )
        })?;
    Ok(Some(NamespaceRecord {
        bits,
        tolerance_ms: u64_of(tolerance, ns, "tolerance_ms")?,
        not_before: u64_of(not_before, ns, "not_before")?,
        layout: layout
            .map(|l| layout_text::decode(&l))
            .transpose()
            .map_err(|e| corrupt(ns, "the namespace record", e))?,
    }))
}

fn write_namespace(
    tx: &Transaction<'_>,
    ns: &Namespace,
    r: &NamespaceRecord,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO cosid_namespace (name, bits, tolerance_ms, not_before, layout)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (name) DO UPDATE SET bits = ?2, tolerance_ms = ?3, not_before = ?4, layout = ?5",
        params![
            ns.encoded(),
            r.bits,
            i64_of(r.tolerance_ms),
            i64_of(r.not_before),
            r.layout.as_ref().map(layout_text::encode)
        ],
    )
    .map_err(unavailable)?;
    Ok(())
}

const SLOT_COLUMNS: &str =
    "slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling, next_floor";

type RawSlot = (
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    i64,
    i64,
    i64,
    i64,
);

fn raw_slot(r: &Row<'_>) -> rusqlite::Result<RawSlot> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        r.get(8)?,
    ))
}

fn decode_slot(ns: &Namespace, raw: RawSlot) -> Result<SlotRecord, StoreError> {
    let (slot, key, incarnation, last_owner_key, fence, expires_at, floor, ceiling, next_floor) =
        raw;
    let what = format!("slot {slot}");
    let slot = u32::try_from(slot).map_err(|_| corrupt(ns, &what, "slot number out of range"))?;
    let owner = Owner::from_stored(key, incarnation).map_err(|d| corrupt(ns, &what, d))?;
    Ok(SlotRecord {
        slot,
        owner,
        last_owner_key,
        fence: u64_of(fence, ns, "fence")?,
        expires_at: u64_of(expires_at, ns, "expires_at")?,
        floor: u64_of(floor, ns, "floor")?,
        ceiling: u64_of(ceiling, ns, "ceiling")?,
        next_floor: u64_of(next_floor, ns, "next_floor")?,
    })
}

fn read_slots(tx: &Transaction<'_>, ns: &Namespace) -> Result<Vec<SlotRecord>, StoreError> {
    let mut stmt = tx
        .prepare_cached(&format!(
            "SELECT {SLOT_COLUMNS} FROM cosid_slot WHERE namespace = ?1 ORDER BY slot"
        ))
        .map_err(unavailable)?;
    let rows = stmt
        .query_map(params![ns.encoded()], raw_slot)
        .map_err(unavailable)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| row_error(ns, "a slot record", e))?;
    rows.into_iter().map(|raw| decode_slot(ns, raw)).collect()
}

fn read_slot(
    tx: &Transaction<'_>,
    ns: &Namespace,
    slot: u32,
) -> Result<Option<SlotRecord>, StoreError> {
    let raw = tx
        .query_row(
            &format!("SELECT {SLOT_COLUMNS} FROM cosid_slot WHERE namespace = ?1 AND slot = ?2"),
            params![ns.encoded(), slot],
            raw_slot,
        )
        .optional()
        .map_err(|e| row_error(ns, &format!("slot {slot}"), e))?;
    raw.map(|raw| decode_slot(ns, raw)).transpose()
}

fn write_slot(tx: &Transaction<'_>, ns: &Namespace, r: &SlotRecord) -> Result<(), StoreError> {
    tx.execute(
        &format!(
            "INSERT OR REPLACE INTO cosid_slot (namespace, {SLOT_COLUMNS})
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
        ),
        params![
            ns.encoded(),
            r.slot,
            r.owner.as_ref().map(|o| o.key.as_str()),
            r.owner.as_ref().map(|o| o.incarnation.to_string()),
            r.last_owner_key,
            i64_of(r.fence),
            i64_of(r.expires_at),
            i64_of(r.floor),
            i64_of(r.ceiling),
            i64_of(r.next_floor),
        ],
    )
    .map_err(unavailable)?;
    Ok(())
}

/// The namespace row's `lowest_unused` hint (`None` when unset or unreadable: a hint).
fn read_hint(tx: &Transaction<'_>, ns: &Namespace) -> Option<i64> {
    tx.query_row(
        "SELECT lowest_unused FROM cosid_namespace WHERE name = ?1",
        params![ns.encoded()],
        |r| r.get::<_, Option<i64>>(0),
    )
    .ok()
    .flatten()
}

/// The candidate rows of an acquisition ([`CANDIDATES_SQL`]), one per slot, not yet validated.
fn read_candidates(
    tx: &Transaction<'_>,
    ns: &Namespace,
    record: &NamespaceRecord,
    request: &AcquireRequest,
    hint: Option<i64>,
    now: u64,
) -> Result<Vec<SlotRecord>, StoreError> {
    let mut stmt = tx.prepare_cached(&CANDIDATES_SQL).map_err(unavailable)?;
    let rows = stmt
        .query_map(
            params![
                ns.encoded(),
                request.owner.key,
                request.preferred_slot.map_or(-1, i64::from),
                hint.unwrap_or(-1),
                i64_of(now),
                i64_of(now.saturating_add(record.tolerance_ms)),
            ],
            raw_slot,
        )
        .map_err(unavailable)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| row_error(ns, "a slot record", e))?;
    let records = rows
        .into_iter()
        .map(|raw| decode_slot(ns, raw))
        .collect::<Result<_, _>>()?;
    Ok(sql_view::candidates(records))
}

/// The lowest slot from `from` on without a row ([`FIRST_UNUSED_SQL`]), as a view's `lowest_unused`.
fn first_unused(
    tx: &Transaction<'_>,
    ns: &Namespace,
    bits: u8,
    from: u32,
) -> Result<Option<u32>, StoreError> {
    if u64::from(from) >= 1u64 << bits {
        return Ok(None);
    }
    let first: i64 = tx
        .query_row(FIRST_UNUSED_SQL, params![ns.encoded(), from], |r| r.get(0))
        .map_err(unavailable)?;
    Ok(sql_view::unused_below(first, bits))
}

/// Reads one slot of a lease's namespace and validates it against the namespace's bits.
fn read_checked(tx: &Transaction<'_>, lease: &SlotLease) -> Result<Option<SlotRecord>, StoreError> {
    let ns = &lease.namespace;
    let bits = protocol::held_namespace(KIND, lease, read_namespace(tx, ns)?)?.bits;
    let record = read_slot(tx, ns, lease.slot)?;
    if let Some(r) = &record {
        protocol::validate(KIND, ns, r, bits)?;
    }
    Ok(record)
}

#[async_trait::async_trait]
impl LeaseStore for SqliteStore {
    fn kind(&self) -> &'static str {
        KIND
    }

    async fn acquire(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        request: &AcquireRequest,
    ) -> Result<Acquired, StoreError> {
        self.write(|tx, now| {
            let stored = read_namespace(tx, namespace)?;
            let record = protocol::check_namespace(namespace, stored, config)?;
            if stored != Some(record) {
                write_namespace(tx, namespace, &record)?;
            }
            let hint = read_hint(tx, namespace);
            let mut slots = read_candidates(tx, namespace, &record, request, hint, now)?;
            for s in &slots {
                protocol::validate(KIND, namespace, s, record.bits)?;
            }
            let hinted = sql_view::hinted(hint, &slots, record.bits);
            let mut lowest_unused = match hinted {
                Some(unused) => unused,
                None => {
                    // No hint yet (a file from an earlier version, or reset after a hand edit), or a stale one:
                    // decide on every row, as before, and keep the hint from there on.
                    slots = read_slots(tx, namespace)?;
                    for s in &slots {
                        protocol::validate(KIND, namespace, s, record.bits)?;
                    }
                    protocol::lowest_unused(&slots, record.bits)
                }
            };
            // A hint that says every slot has a row would refuse: check it first (rows deleted by hand leave it so).
            if sql_view::must_check(hinted, namespace, &record, &slots, request, now) {
                lowest_unused = first_unused(tx, namespace, record.bits, 0)?;
                sql_view::warn_rebuilt(namespace, hint, lowest_unused);
            }
            let view = protocol::View {
                records: &slots,
                lowest_unused,
            };
            let grant = protocol::acquire_in(namespace, &record, &view, request, now)?;
            let mut unused = lowest_unused;
            if let Some(w) = &grant.write {
                write_slot(tx, namespace, w)?;
                if let Some(from) = sql_view::advanced(&view, w.slot) {
                    unused = first_unused(tx, namespace, record.bits, from)?;
                }
            }
            let keep = sql_view::stored(unused, record.bits);
            if hint != Some(keep) {
                tx.execute(
                    "UPDATE cosid_namespace SET lowest_unused = ?2 WHERE name = ?1",
                    params![namespace.encoded(), keep],
                )
                .map_err(unavailable)?;
            }
            Ok(grant.acquired)
        })
        .inspect(|a| self.granted_until(a.lease.ceiling))
    }

    async fn renew(
        &self,
        lease: &SlotLease,
        ttl_ms: u64,
        tolerance_ms: u64,
    ) -> Result<SlotLease, StoreError> {
        self.write(|tx, now| {
            let current = read_checked(tx, lease)?;
            let (record, renewed) =
                protocol::renew(KIND, current.as_ref(), lease, ttl_ms, tolerance_ms, now)?;
            write_slot(tx, &lease.namespace, &record)?;
            Ok(renewed)
        })
        .inspect(|r| self.granted_until(r.ceiling))
    }

    async fn release(&self, lease: &SlotLease, last_issued: Option<u64>) -> Result<(), StoreError> {
        self.write(|tx, _| {
            let current = read_checked(tx, lease)?;
            let record = protocol::release(KIND, current.as_ref(), lease, last_issued)?;
            write_slot(tx, &lease.namespace, &record)
        })
    }

    async fn inspect(&self, namespace: &Namespace) -> Result<Inspection, StoreError> {
        self.write(|tx, now| {
            Ok(Inspection {
                namespace: read_namespace(tx, namespace)?,
                slots: read_slots(tx, namespace)?,
                store_now: now,
            })
        })
    }

    async fn raise_not_before(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        not_before: u64,
    ) -> Result<NamespaceRecord, StoreError> {
        self.write(|tx, _| {
            let stored = read_namespace(tx, namespace)?;
            let record = protocol::raise_not_before(namespace, stored, config, not_before)?;
            write_namespace(tx, namespace, &record)?;
            Ok(record)
        })
    }
}
