//! The embedded default store: one SQLite file shared by every process on the host.
//!
//! Each operation is one `BEGIN IMMEDIATE` transaction, which takes the database's write lock before it reads, so
//! the read-decide-write of [`protocol`] is atomic across processes. The file runs in WAL mode with
//! `synchronous = FULL`, so a committed lease survives a crash of the process or the host. The store clock is the
//! host clock.

use super::{Inspection, LeaseStore, StoreError};
use crate::clock::Clock;
use crate::lease::{
    layout_text, protocol, AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord,
    Owner, SlotLease, SlotRecord,
};
use rusqlite::{params, Connection, OptionalExtension, Row, Transaction, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const KIND: &str = "sqlite";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS cosid_namespace (
    name         TEXT PRIMARY KEY,
    bits         INTEGER NOT NULL,
    tolerance_ms INTEGER NOT NULL,
    not_before   INTEGER NOT NULL,
    layout       TEXT
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

/// Leases in an SQLite database file.
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    conn: Mutex<Connection>,
    clock: Arc<dyn Clock>,
}

fn unavailable(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Unavailable {
        store: KIND,
        source: Box::new(e),
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, and its parent folder.
    pub fn open(path: &Path, clock: Arc<dyn Clock>) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(unavailable)?;
        }
        let mut conn = Connection::open(path).map_err(unavailable)?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(unavailable)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(unavailable)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(unavailable)?;
        conn.execute_batch(SCHEMA).map_err(unavailable)?;
        add_layout_column(&mut conn)?;
        Ok(Self {
            path: path.to_owned(),
            conn: Mutex::new(conn),
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
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(unavailable)?;
        // Read the clock once the write lock is held, so times follow the order of the transactions.
        let now = self.clock.now_ms();
        let out = f(&tx, now)?;
        tx.commit().map_err(unavailable)?;
        Ok(out)
    }
}

/// Files made before namespace records kept the layout lack its column: add it, in a write transaction so that
/// two processes opening one old file at once do not both try. Their records read as "no layout yet".
fn add_layout_column(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(unavailable)?;
    let has_layout: bool = tx
        .query_row(
            "SELECT COUNT(*) FROM pragma_table_info('cosid_namespace') WHERE name = 'layout'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(unavailable)?
        > 0;
    if !has_layout {
        tx.execute("ALTER TABLE cosid_namespace ADD COLUMN layout TEXT", [])
            .map_err(unavailable)?;
    }
    tx.commit().map_err(unavailable)
}

fn corrupt(namespace: &Namespace, what: &str, detail: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        store: KIND,
        what: format!("{what} of namespace {namespace}"),
        detail: detail.into(),
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
        .map_err(|e| corrupt(ns, "the namespace record", e.to_string()))?;
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
        .map_err(|e| corrupt(ns, "a slot record", e.to_string()))?;
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
        .map_err(|e| corrupt(ns, &format!("slot {slot}"), e.to_string()))?;
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
            let slots = read_slots(tx, namespace)?;
            for s in &slots {
                protocol::validate(KIND, namespace, s, record.bits)?;
            }
            let grant = protocol::acquire(namespace, &record, &slots, request, now)?;
            if let Some(w) = &grant.write {
                write_slot(tx, namespace, w)?;
            }
            Ok(grant.acquired)
        })
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
