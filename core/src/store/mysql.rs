//! MySQL and MariaDB (`mysql://`, `mariadb://`): leases in two InnoDB tables.
//!
//! Each operation is one transaction. It first locks the namespace row: acquisition and `raise_not_before` take it
//! exclusively (`INSERT ... ON DUPLICATE KEY UPDATE` creates it if absent and locks it in one step, so concurrent
//! first users do not deadlock on a lock upgrade), renewal and release take it shared and lock only their slot row.
//! Rows are read with locking reads, which always see the latest committed version, then the rules of
//! [`protocol`] decide and one slot row is written. The store clock is the database clock
//! (`UNIX_TIMESTAMP(NOW(3))`, in UTC), read once the namespace lock is held. Every value goes through bind
//! parameters.
//!
//! A deadlock or lock-wait timeout rolls the whole transaction back; it is retried a few times, then reported as
//! [`StoreError::Unavailable`].

use super::{sql_view, BoxError, Finding, Inspection, LeaseStore, StoreError};
use crate::lease::{
    layout_text, protocol, AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord,
    Owner, SlotLease, SlotRecord,
};
use mysql_async::prelude::{FromValue, Queryable};
use mysql_async::{
    DriverError, IsolationLevel, Opts, OptsBuilder, Pool, Row, Transaction, TxOpts, Value,
};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::OnceCell;

const KIND: &str = "mysql";

/// How long one operation (all its retries included) may take before it is reported as unavailable.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(10);
/// How many times a transaction rolled back by a deadlock or lock-wait timeout is tried again.
const DEADLOCK_RETRIES: u32 = 8;

const CREATE_NAMESPACE: &str = "CREATE TABLE IF NOT EXISTS cosid_namespace (
    name         VARCHAR(384) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    bits         BIGINT NOT NULL,
    tolerance_ms BIGINT NOT NULL,
    not_before   BIGINT NOT NULL,
    layout       VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL,
    lowest_unused BIGINT NULL,
    PRIMARY KEY (name)
) ENGINE = InnoDB";

const CREATE_SLOT: &str = "CREATE TABLE IF NOT EXISTS cosid_slot (
    namespace      VARCHAR(384) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    slot           BIGINT NOT NULL,
    owner_key      TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    incarnation    VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
    last_owner_key TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    fence          BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    floor          BIGINT NOT NULL,
    ceiling        BIGINT NOT NULL,
    next_floor     BIGINT NOT NULL,
    held_until     BIGINT AS (CASE WHEN incarnation IS NULL THEN NULL ELSE expires_at END) VIRTUAL,
    PRIMARY KEY (namespace, slot),
    INDEX cosid_slot_owner (namespace, owner_key(255)),
    INDEX cosid_slot_last_owner (namespace, last_owner_key(255)),
    INDEX cosid_slot_released (namespace, incarnation),
    INDEX cosid_slot_held (namespace, held_until)
) ENGINE = InnoDB";

/// What tables made by earlier versions lack, each added when missing: columns (the layout; `lowest_unused`;
/// `held_until`, a lease's expiry while it has a holder, so that held leases can be indexed by expiry) and the
/// acquire's indexes (each for one part of [`CANDIDATES_SQL`]).
const UPGRADES: &[(&str, &str)] = &[
    (
        "layout",
        "ALTER TABLE cosid_namespace ADD COLUMN layout VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL",
    ),
    (
        "lowest_unused",
        "ALTER TABLE cosid_namespace ADD COLUMN lowest_unused BIGINT NULL",
    ),
    (
        "held_until",
        "ALTER TABLE cosid_slot ADD COLUMN held_until BIGINT
         AS (CASE WHEN incarnation IS NULL THEN NULL ELSE expires_at END) VIRTUAL",
    ),
    (
        "cosid_slot_owner",
        "CREATE INDEX cosid_slot_owner ON cosid_slot (namespace, owner_key(255))",
    ),
    (
        "cosid_slot_last_owner",
        "CREATE INDEX cosid_slot_last_owner ON cosid_slot (namespace, last_owner_key(255))",
    ),
    (
        "cosid_slot_released",
        "CREATE INDEX cosid_slot_released ON cosid_slot (namespace, incarnation)",
    ),
    (
        "cosid_slot_held",
        "CREATE INDEX cosid_slot_held ON cosid_slot (namespace, held_until)",
    ),
];

/// The rows a [`protocol::View`] needs, each part through an index: the owner key's, the last owner key's, the
/// preferred and the hinted unused slot's, the lowest released and lowest expired rows (and of each the lowest
/// whose `next_floor` is at most now + tolerance), and the held row that expires first.
const CANDIDATES_SQL: &str = include_str!("mysql/candidates.sql");

/// The lowest slot from a given one on that has no row: that slot itself, or the first slot after a run of rows
/// starting there. Parameters: namespace, from, from, namespace, from.
const FIRST_UNUSED_SQL: &str = "
SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM cosid_slot WHERE namespace = ? AND slot = ?) THEN ?
ELSE (SELECT s.slot + 1 FROM cosid_slot s WHERE s.namespace = ? AND s.slot >= ?
      AND NOT EXISTS (SELECT 1 FROM cosid_slot t WHERE t.namespace = s.namespace AND t.slot = s.slot + 1)
      ORDER BY s.slot LIMIT 1) END";

const SLOT_COLUMNS: &str =
    "slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling, next_floor";

/// Leases in a MySQL or MariaDB database. Cloning is cheap and shares the connection pool.
///
/// Opening does not connect: the first operation does, and creates the tables if they are missing (so does
/// [`LeaseStore::init`]). The URL is a `mysql_async` URL (`mysql://user:password@host:port/database?options`);
/// `mariadb://` is accepted as a synonym. `?require_ssl=true` connects with TLS (rustls) and verifies the server's
/// certificate against the Mozilla roots; without it the connection is plaintext.
#[derive(Clone)]
pub struct MysqlStore {
    pool: Pool,
    /// `host:port/database`, for messages: the URL without its credentials.
    address: String,
    schema: std::sync::Arc<OnceCell<()>>,
}

impl std::fmt::Debug for MysqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The pool's options hold the password: never print them.
        f.debug_struct("MysqlStore")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

/// One step of a transaction, given the open transaction.
type Step<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

#[derive(Debug, thiserror::Error)]
#[error("no answer within {0:?}")]
struct TimedOut(Duration);

/// A client error with the server it came from (the client's own messages do not say).
#[derive(Debug, thiserror::Error)]
#[error("{address}: {error}")]
struct At {
    address: String,
    error: BoxError,
}

fn unavailable(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Unavailable {
        store: KIND,
        source: Box::new(e),
    }
}

/// Server error codes that mean "try again": the transaction was rolled back or the server is going away.
const RETRYABLE_CODES: &[u16] = &[
    1205, // ER_LOCK_WAIT_TIMEOUT
    1213, // ER_LOCK_DEADLOCK
    1040, // ER_CON_COUNT_ERROR (too many connections)
    1053, // ER_SERVER_SHUTDOWN
    1290, // ER_OPTION_PREVENTS_STATEMENT (--read-only, e.g. during a failover)
    1927, // ER_CONNECTION_KILLED (MariaDB)
    3100, // ER_ERROR_ON_MODIFYING_GTID_EXECUTED_TABLE / replication hiccups (MySQL)
];

/// Maps a client error: network and transient server errors are `Unavailable`, the rest `Generic`.
fn db(e: mysql_async::Error) -> StoreError {
    let retryable = match &e {
        mysql_async::Error::Io(_) => true,
        // The connection broke; the other driver errors are answers (no TLS on the server, an unknown
        // authentication plugin, ...) that waiting will not change.
        mysql_async::Error::Driver(d) => matches!(
            d,
            DriverError::ConnectionClosed
                | DriverError::PoolDisconnected
                | DriverError::PacketOutOfOrder
                | DriverError::UnexpectedPacket { .. }
                | DriverError::BadCompressedPacketHeader
        ),
        mysql_async::Error::Server(s) => RETRYABLE_CODES.contains(&s.code),
        mysql_async::Error::Other(_) | mysql_async::Error::Url(_) => false,
    };
    if retryable {
        unavailable(e)
    } else {
        StoreError::Generic {
            store: KIND,
            source: Box::new(e),
        }
    }
}

/// Whether `e` rolled the transaction back and running it again may succeed.
fn is_rollback(e: &StoreError) -> bool {
    let StoreError::Unavailable { source, .. } = e else {
        return false;
    };
    matches!(
        source.downcast_ref::<mysql_async::Error>(),
        Some(mysql_async::Error::Server(s)) if s.code == 1213 || s.code == 1205
    )
}

fn corrupt(namespace: &Namespace, what: &str, detail: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        store: KIND,
        what: format!("{what} of namespace {namespace}"),
        detail: detail.into(),
    }
}

fn i64_of(v: u64) -> i64 {
    // Every stored time is a Unix millisecond or a fence: far below 2^63.
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Takes column `index` of `row` as a `T`, or says which field of which record could not be read.
fn take<T: FromValue>(
    row: &mut Row,
    index: usize,
    ns: &Namespace,
    what: &str,
    field: &str,
) -> Result<T, StoreError> {
    match row.take_opt::<T, usize>(index) {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(corrupt(
            ns,
            what,
            format!("{field} has an unexpected value {:?}", e.0),
        )),
        None => Err(corrupt(ns, what, format!("{field} is missing"))),
    }
}

fn take_u64(
    row: &mut Row,
    index: usize,
    ns: &Namespace,
    what: &str,
    field: &str,
) -> Result<u64, StoreError> {
    let v: i64 = take(row, index, ns, what, field)?;
    u64::try_from(v).map_err(|_| corrupt(ns, what, format!("{field} is negative ({v})")))
}

impl MysqlStore {
    /// Prepares a pool for `url` (`mysql://` or `mariadb://`). Does not connect.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let invalid = |reason: String| StoreError::InvalidUrl {
            url: super::url::redacted(url),
            reason: super::url::scrub(&reason, url),
        };
        let normalized = match url.split_once("://") {
            Some(("mysql", rest)) | Some(("mariadb", rest)) => format!("mysql://{rest}"),
            _ => {
                return Err(invalid(
                    "expected mysql://user:password@host:port/database".into(),
                ))
            }
        };
        let opts = Opts::from_url(&normalized).map_err(|e| invalid(e.to_string()))?;
        if opts.ssl_opts().is_some() {
            // rustls needs a process-wide crypto provider; keep one another part of the program installed.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        if opts.db_name().is_none_or(str::is_empty) {
            return Err(invalid(
                "no database named: expected mysql://user:password@host:port/database".into(),
            ));
        }
        let address = format!(
            "{}:{}/{}",
            opts.ip_or_hostname(),
            opts.tcp_port(),
            opts.db_name().unwrap_or_default()
        );
        let opts = OptsBuilder::from_opts(opts).setup(vec![
            // Times come from UNIX_TIMESTAMP(NOW(3)); in UTC no local time is ambiguous.
            "SET time_zone = '+00:00'",
            // A lock wait ends in an orderly, retried error well within the operation timeout.
            "SET SESSION innodb_lock_wait_timeout = 5",
        ]);
        Ok(Self {
            pool: Pool::new(opts),
            address,
            schema: Default::default(),
        })
    }

    /// Creates the tables if they are missing, once per store.
    async fn ensure_schema(&self) -> Result<(), StoreError> {
        self.schema
            .get_or_try_init(|| async {
                let mut conn = self.pool.get_conn().await.map_err(db)?;
                // Look before creating, so that a user without the CREATE privilege can use existing tables.
                let present: Vec<Row> = conn
                    .exec(
                        "SELECT table_name FROM information_schema.tables
                         WHERE table_schema = DATABASE() AND table_name IN ('cosid_namespace', 'cosid_slot')",
                        (),
                    )
                    .await
                    .map_err(db)?;
                if present.len() < 2 {
                    create_schema(&mut conn).await?;
                }
                upgrade_schema(&mut conn).await
            })
            .await
            .map(|_| ())
    }

    /// Runs `step` in one transaction (READ COMMITTED: locking reads see the latest committed rows) and commits
    /// it if it returns `Ok`. Retries deadlocks; gives up after [`OPERATION_TIMEOUT`].
    async fn transaction<T: Send>(
        &self,
        read_only: bool,
        step: impl for<'a> Fn(&'a mut Transaction<'static>) -> Step<'a, T> + Send + Sync,
    ) -> Result<T, StoreError> {
        let run = async {
            self.ensure_schema().await?;
            let mut opts = TxOpts::new();
            opts.with_isolation_level(if read_only {
                IsolationLevel::RepeatableRead
            } else {
                IsolationLevel::ReadCommitted
            })
            .with_consistent_snapshot(read_only)
            .with_readonly(Some(read_only));
            let mut attempt = 0;
            loop {
                attempt += 1;
                let mut tx = self
                    .pool
                    .start_transaction(opts.clone())
                    .await
                    .map_err(db)?;
                let outcome = match step(&mut tx).await {
                    Ok(value) => tx.commit().await.map(|()| value).map_err(db),
                    Err(e) => {
                        // A failed rollback leaves the connection to the pool, which rolls it back.
                        let _ = tx.rollback().await;
                        Err(e)
                    }
                };
                match outcome {
                    Err(e) if is_rollback(&e) && attempt <= DEADLOCK_RETRIES => {
                        let pause = rand::random_range(1..=5u64 << attempt.min(4));
                        tokio::time::sleep(Duration::from_millis(pause)).await;
                    }
                    other => return other,
                }
            }
        };
        self.bounded(run).await
    }

    /// Runs one operation: bounded by [`OPERATION_TIMEOUT`], and its failures name the server.
    async fn bounded<T>(
        &self,
        run: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let at = |error| At {
            address: self.address.clone(),
            error,
        };
        match tokio::time::timeout(OPERATION_TIMEOUT, run).await {
            Err(_) => Err(unavailable(at(Box::new(TimedOut(OPERATION_TIMEOUT))))),
            Ok(Err(StoreError::Unavailable { store, source })) => Err(StoreError::Unavailable {
                store,
                source: Box::new(at(source)),
            }),
            Ok(Err(StoreError::Generic { store, source })) => Err(StoreError::Generic {
                store,
                source: Box::new(at(source)),
            }),
            Ok(other) => other,
        }
    }

    /// Closes the pool's connections.
    pub async fn close(self) -> Result<(), StoreError> {
        self.pool.disconnect().await.map_err(db)
    }
}

async fn create_schema(conn: &mut impl Queryable) -> Result<(), StoreError> {
    conn.query_drop(CREATE_NAMESPACE).await.map_err(db)?;
    conn.query_drop(CREATE_SLOT).await.map_err(db)?;
    upgrade_schema(conn).await
}

/// Adds what [`UPGRADES`] lists and the tables lack. Looks first, so a user without the ALTER privilege can use
/// tables that have it all; two processes adding the same thing at once is harmless, the second one's "duplicate
/// column" or "duplicate key name" is taken as done.
async fn upgrade_schema(conn: &mut impl Queryable) -> Result<(), StoreError> {
    let present: Vec<String> = conn
        .query(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE()
             AND table_name IN ('cosid_namespace', 'cosid_slot')
             UNION SELECT index_name FROM information_schema.statistics WHERE table_schema = DATABASE()
             AND table_name = 'cosid_slot'",
        )
        .await
        .map_err(db)?;
    for (name, sql) in UPGRADES {
        if present.iter().any(|p| p.eq_ignore_ascii_case(name)) {
            continue;
        }
        match conn.query_drop(*sql).await {
            // ER_DUP_FIELDNAME, ER_DUP_KEYNAME: another process added it first.
            Err(mysql_async::Error::Server(e)) if e.code == 1060 || e.code == 1061 => {}
            other => other.map_err(db)?,
        }
    }
    Ok(())
}

/// The database clock, in Unix milliseconds.
async fn store_now(tx: &mut Transaction<'static>) -> Result<u64, StoreError> {
    let row: Option<Row> = tx
        .query_first("SELECT CAST(ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)")
        .await
        .map_err(db)?;
    let value = row
        .and_then(|mut r| r.take_opt::<i64, usize>(0))
        .and_then(Result::ok)
        .and_then(|v| u64::try_from(v).ok());
    value.ok_or_else(|| StoreError::Generic {
        store: KIND,
        source: "the server did not return the time for UNIX_TIMESTAMP(NOW(3))".into(),
    })
}

/// Reads the namespace row with the given lock clause (`FOR UPDATE`, `LOCK IN SHARE MODE`, or none).
async fn read_namespace(
    tx: &mut Transaction<'static>,
    ns: &Namespace,
    lock: &str,
) -> Result<Option<NamespaceRecord>, StoreError> {
    Ok(read_hinted_namespace(tx, ns, lock).await?.map(|(r, _)| r))
}

/// [`read_namespace`] with the row's `lowest_unused` hint (`None` when unset or unreadable: a hint).
async fn read_hinted_namespace(
    tx: &mut Transaction<'static>,
    ns: &Namespace,
    lock: &str,
) -> Result<Option<(NamespaceRecord, Option<i64>)>, StoreError> {
    let row: Option<Row> = tx
        .exec_first(
            format!(
                "SELECT bits, tolerance_ms, not_before, layout, lowest_unused FROM cosid_namespace
                 WHERE name = ? {lock}"
            ),
            (ns.encoded(),),
        )
        .await
        .map_err(db)?;
    let Some(mut row) = row else {
        return Ok(None);
    };
    let what = "the namespace record";
    let bits: i64 = take(&mut row, 0, ns, what, "bits")?;
    let bits = u8::try_from(bits)
        .ok()
        .filter(|b| (1..=31).contains(b))
        .ok_or_else(|| corrupt(ns, what, format!("bits {bits} is not 1 to 31")))?;
    let hint = row
        .take_opt::<Option<i64>, usize>(4)
        .and_then(Result::ok)
        .flatten();
    let record = NamespaceRecord {
        bits,
        tolerance_ms: take_u64(&mut row, 1, ns, what, "tolerance_ms")?,
        not_before: take_u64(&mut row, 2, ns, what, "not_before")?,
        layout: take::<Option<String>>(&mut row, 3, ns, what, "layout")?
            .map(|l| layout_text::decode(&l))
            .transpose()
            .map_err(|e| corrupt(ns, what, e))?,
    };
    Ok(Some((record, hint)))
}

/// Creates the namespace row with `config` if it is absent, and locks it exclusively either way. Returns the record
/// and its `lowest_unused` hint.
async fn lock_namespace(
    tx: &mut Transaction<'static>,
    ns: &Namespace,
    config: &NamespaceConfig,
) -> Result<(NamespaceRecord, Option<i64>), StoreError> {
    tx.exec_drop(
        "INSERT INTO cosid_namespace (name, bits, tolerance_ms, not_before, layout) VALUES (?, ?, ?, 0, ?)
         ON DUPLICATE KEY UPDATE name = name",
        (
            ns.encoded(),
            config.bits,
            i64_of(config.tolerance_ms),
            layout_text::encode(&config.layout),
        ),
    )
    .await
    .map_err(db)?;
    read_hinted_namespace(tx, ns, "FOR UPDATE")
        .await?
        .ok_or_else(|| {
            corrupt(
                ns,
                "the namespace record",
                "missing right after it was written",
            )
        })
}

fn decode_slot(ns: &Namespace, mut row: Row) -> Result<SlotRecord, StoreError> {
    let slot: i64 = take(&mut row, 0, ns, "a slot record", "slot")?;
    let what = format!("slot {slot}");
    let what = what.as_str();
    let slot = u32::try_from(slot).map_err(|_| corrupt(ns, what, "slot number out of range"))?;
    let key: Option<String> = take(&mut row, 1, ns, what, "owner_key")?;
    let incarnation: Option<String> = take(&mut row, 2, ns, what, "incarnation")?;
    let last_owner_key: Option<String> = take(&mut row, 3, ns, what, "last_owner_key")?;
    let owner = Owner::from_stored(key, incarnation).map_err(|d| corrupt(ns, what, d))?;
    Ok(SlotRecord {
        slot,
        owner,
        last_owner_key,
        fence: take_u64(&mut row, 4, ns, what, "fence")?,
        expires_at: take_u64(&mut row, 5, ns, what, "expires_at")?,
        floor: take_u64(&mut row, 6, ns, what, "floor")?,
        ceiling: take_u64(&mut row, 7, ns, what, "ceiling")?,
        next_floor: take_u64(&mut row, 8, ns, what, "next_floor")?,
    })
}

async fn read_slots(
    tx: &mut Transaction<'static>,
    ns: &Namespace,
    lock: &str,
) -> Result<Vec<SlotRecord>, StoreError> {
    let rows: Vec<Row> = tx
        .exec(
            format!(
                "SELECT {SLOT_COLUMNS} FROM cosid_slot WHERE namespace = ? ORDER BY slot {lock}"
            ),
            (ns.encoded(),),
        )
        .await
        .map_err(db)?;
    rows.into_iter().map(|row| decode_slot(ns, row)).collect()
}

/// The candidate rows of an acquisition ([`CANDIDATES_SQL`]), one per slot, not yet validated.
async fn read_candidates(
    tx: &mut Transaction<'static>,
    ns: &Namespace,
    record: &NamespaceRecord,
    request: &AcquireRequest,
    hint: Option<i64>,
    now: u64,
) -> Result<Vec<SlotRecord>, StoreError> {
    let name = Value::from(ns.encoded());
    let key = Value::from(request.owner.key.as_str());
    let soon = Value::from(i64_of(now.saturating_add(record.tolerance_ms)));
    let now = Value::from(i64_of(now));
    let params = vec![
        name.clone(),
        key.clone(),
        name.clone(),
        key,
        name.clone(),
        Value::from(request.preferred_slot.map_or(-1, i64::from)),
        Value::from(hint.unwrap_or(-1)),
        name.clone(),
        name.clone(),
        soon.clone(),
        name.clone(),
        now.clone(),
        name.clone(),
        now,
        soon,
        name,
    ];
    let rows: Vec<Row> = tx.exec(CANDIDATES_SQL, params).await.map_err(db)?;
    let records = rows
        .into_iter()
        .map(|row| decode_slot(ns, row))
        .collect::<Result<_, _>>()?;
    Ok(sql_view::candidates(records))
}

/// The lowest slot from `from` on without a row ([`FIRST_UNUSED_SQL`]), as a view's `lowest_unused`.
async fn first_unused(
    tx: &mut Transaction<'static>,
    ns: &Namespace,
    bits: u8,
    from: u32,
) -> Result<Option<u32>, StoreError> {
    if u64::from(from) >= 1u64 << bits {
        return Ok(None);
    }
    let from = i64::from(from);
    let first: Option<i64> = tx
        .exec_first(
            FIRST_UNUSED_SQL,
            (ns.encoded(), from, from, ns.encoded(), from),
        )
        .await
        .map_err(db)?;
    let first = first.ok_or_else(|| StoreError::Generic {
        store: KIND,
        source: "the server returned no row for the first unused slot".into(),
    })?;
    Ok(sql_view::unused_below(first, bits))
}

async fn read_slot(
    tx: &mut Transaction<'static>,
    ns: &Namespace,
    slot: u32,
) -> Result<Option<SlotRecord>, StoreError> {
    let row: Option<Row> = tx
        .exec_first(
            format!(
                "SELECT {SLOT_COLUMNS} FROM cosid_slot WHERE namespace = ? AND slot = ? FOR UPDATE"
            ),
            (ns.encoded(), slot),
        )
        .await
        .map_err(db)?;
    row.map(|row| decode_slot(ns, row)).transpose()
}

async fn write_slot(
    tx: &mut Transaction<'static>,
    ns: &Namespace,
    r: &SlotRecord,
) -> Result<(), StoreError> {
    let changing = [
        Value::from(r.owner.as_ref().map(|o| o.key.as_str())),
        Value::from(r.owner.as_ref().map(|o| o.incarnation.to_string())),
        Value::from(r.last_owner_key.as_deref()),
        Value::from(i64_of(r.fence)),
        Value::from(i64_of(r.expires_at)),
        Value::from(i64_of(r.floor)),
        Value::from(i64_of(r.ceiling)),
        Value::from(i64_of(r.next_floor)),
    ];
    let mut params = vec![Value::from(ns.encoded()), Value::from(r.slot)];
    params.extend(changing.iter().cloned());
    params.extend(changing);
    tx.exec_drop(
        format!(
            "INSERT INTO cosid_slot (namespace, {SLOT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON DUPLICATE KEY UPDATE owner_key = ?, incarnation = ?, last_owner_key = ?, fence = ?,
                 expires_at = ?, floor = ?, ceiling = ?, next_floor = ?"
        ),
        params,
    )
    .await
    .map_err(db)
}

/// Locks a lease's namespace (shared) and slot (exclusive), reads the slot and validates it.
async fn read_checked(
    tx: &mut Transaction<'static>,
    lease: &SlotLease,
) -> Result<Option<SlotRecord>, StoreError> {
    let ns = &lease.namespace;
    let stored = read_namespace(tx, ns, "LOCK IN SHARE MODE").await?;
    let bits = protocol::held_namespace(KIND, lease, stored)?.bits;
    let record = read_slot(tx, ns, lease.slot).await?;
    if let Some(r) = &record {
        protocol::validate(KIND, ns, r, bits)?;
    }
    Ok(record)
}

async fn acquire_in(
    tx: &mut Transaction<'static>,
    ns: Namespace,
    config: NamespaceConfig,
    request: AcquireRequest,
) -> Result<Acquired, StoreError> {
    let (stored, hint) = lock_namespace(tx, &ns, &config).await?;
    let record = protocol::check_namespace(&ns, Some(stored), &config)?;
    if record != stored {
        update_namespace(tx, &ns, &record).await?;
    }
    let now = store_now(tx).await?;
    // The namespace row's lock keeps every other writer of its slots out (renewals and releases lock it shared):
    // plain reads see the latest rows.
    let mut slots = read_candidates(tx, &ns, &record, &request, hint, now).await?;
    for s in &slots {
        protocol::validate(KIND, &ns, s, record.bits)?;
    }
    let hinted = sql_view::hinted(hint, &slots, record.bits);
    let mut lowest_unused = match hinted {
        Some(unused) => unused,
        None => {
            // No hint yet (a namespace from an earlier version, or reset after a hand edit), or a stale one:
            // decide on every row, as before, and keep the hint from there on.
            slots = read_slots(tx, &ns, "").await?;
            for s in &slots {
                protocol::validate(KIND, &ns, s, record.bits)?;
            }
            protocol::lowest_unused(&slots, record.bits)
        }
    };
    // A hint that says every slot has a row would refuse: check it first (rows deleted by hand leave it so).
    if sql_view::must_check(hinted, &ns, &record, &slots, &request, now) {
        lowest_unused = first_unused(tx, &ns, record.bits, 0).await?;
        sql_view::warn_rebuilt(&ns, hint, lowest_unused);
    }
    let view = protocol::View {
        records: &slots,
        lowest_unused,
    };
    let grant = protocol::acquire_in(&ns, &record, &view, &request, now)?;
    let mut unused = lowest_unused;
    if let Some(w) = &grant.write {
        write_slot(tx, &ns, w).await?;
        if let Some(from) = sql_view::advanced(&view, w.slot) {
            unused = first_unused(tx, &ns, record.bits, from).await?;
        }
    }
    let keep = sql_view::stored(unused, record.bits);
    if hint != Some(keep) {
        tx.exec_drop(
            "UPDATE cosid_namespace SET lowest_unused = ? WHERE name = ?",
            (keep, ns.encoded()),
        )
        .await
        .map_err(db)?;
    }
    Ok(grant.acquired)
}

async fn renew_in(
    tx: &mut Transaction<'static>,
    lease: SlotLease,
    ttl_ms: u64,
    tolerance_ms: u64,
) -> Result<SlotLease, StoreError> {
    let current = read_checked(tx, &lease).await?;
    let now = store_now(tx).await?;
    let (record, renewed) =
        protocol::renew(KIND, current.as_ref(), &lease, ttl_ms, tolerance_ms, now)?;
    write_slot(tx, &lease.namespace, &record).await?;
    Ok(renewed)
}

async fn release_in(
    tx: &mut Transaction<'static>,
    lease: SlotLease,
    last_issued: Option<u64>,
) -> Result<(), StoreError> {
    let current = read_checked(tx, &lease).await?;
    let record = protocol::release(KIND, current.as_ref(), &lease, last_issued)?;
    write_slot(tx, &lease.namespace, &record).await
}

async fn inspect_in(
    tx: &mut Transaction<'static>,
    ns: Namespace,
) -> Result<Inspection, StoreError> {
    Ok(Inspection {
        namespace: read_namespace(tx, &ns, "").await?,
        slots: read_slots(tx, &ns, "").await?,
        store_now: store_now(tx).await?,
    })
}

async fn raise_not_before_in(
    tx: &mut Transaction<'static>,
    ns: Namespace,
    config: NamespaceConfig,
    not_before: u64,
) -> Result<NamespaceRecord, StoreError> {
    let (stored, _) = lock_namespace(tx, &ns, &config).await?;
    let record = protocol::raise_not_before(&ns, Some(stored), &config, not_before)?;
    update_namespace(tx, &ns, &record).await?;
    Ok(record)
}

/// Writes the parts of a namespace record that may change: `not_before`, and the layout of an old record.
async fn update_namespace(
    tx: &mut Transaction<'static>,
    ns: &Namespace,
    record: &NamespaceRecord,
) -> Result<(), StoreError> {
    tx.exec_drop(
        "UPDATE cosid_namespace SET not_before = ?, layout = ? WHERE name = ?",
        (
            i64_of(record.not_before),
            record.layout.as_ref().map(layout_text::encode),
            ns.encoded(),
        ),
    )
    .await
    .map_err(db)
}

#[async_trait::async_trait]
impl LeaseStore for MysqlStore {
    fn kind(&self) -> &'static str {
        KIND
    }

    async fn init(&self) -> Result<(), StoreError> {
        self.bounded(async {
            let mut conn = self.pool.get_conn().await.map_err(db)?;
            create_schema(&mut conn).await
        })
        .await
    }

    /// `innodb_flush_log_at_trx_commit` other than 1 loses the last second of commits in a crash; with the
    /// binary log on, `sync_binlog` other than 1 lets a replica promoted after a crash miss them. Without the
    /// binary log, `sync_binlog` changes nothing and is not reported.
    async fn durability(&self) -> Result<Vec<Finding>, StoreError> {
        self.bounded(async {
            let mut conn = self.pool.get_conn().await.map_err(db)?;
            let row: Option<(String, String, String)> = conn
                .query_first(
                    "SELECT CAST(@@innodb_flush_log_at_trx_commit AS CHAR), CAST(@@sync_binlog AS CHAR), \
                     CAST(@@log_bin AS CHAR)",
                )
                .await
                .map_err(db)?;
            let Some((flush, sync_binlog, log_bin)) = row else {
                return Ok(Vec::new());
            };
            let mut findings = Vec::new();
            let mut check = |setting: &str, value: String| {
                if value != "1" {
                    findings.push(Finding {
                        store: KIND,
                        setting: setting.to_string(),
                        value,
                        expected: "1".to_string(),
                    });
                }
            };
            check("innodb_flush_log_at_trx_commit", flush);
            if log_bin == "1" {
                check("sync_binlog", sync_binlog);
            }
            Ok(findings)
        })
        .await
    }

    async fn acquire(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        request: &AcquireRequest,
    ) -> Result<Acquired, StoreError> {
        self.transaction(false, |tx| {
            Box::pin(acquire_in(tx, namespace.clone(), *config, request.clone()))
        })
        .await
    }

    async fn renew(
        &self,
        lease: &SlotLease,
        ttl_ms: u64,
        tolerance_ms: u64,
    ) -> Result<SlotLease, StoreError> {
        self.transaction(false, |tx| {
            Box::pin(renew_in(tx, lease.clone(), ttl_ms, tolerance_ms))
        })
        .await
    }

    async fn release(&self, lease: &SlotLease, last_issued: Option<u64>) -> Result<(), StoreError> {
        self.transaction(false, |tx| {
            Box::pin(release_in(tx, lease.clone(), last_issued))
        })
        .await
    }

    async fn inspect(&self, namespace: &Namespace) -> Result<Inspection, StoreError> {
        self.transaction(true, |tx| Box::pin(inspect_in(tx, namespace.clone())))
            .await
    }

    async fn raise_not_before(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        not_before: u64,
    ) -> Result<NamespaceRecord, StoreError> {
        self.transaction(false, |tx| {
            Box::pin(raise_not_before_in(
                tx,
                namespace.clone(),
                *config,
                not_before,
            ))
        })
        .await
    }
}
