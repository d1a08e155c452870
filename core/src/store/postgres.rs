//! Leases in PostgreSQL: each operation one transaction that locks its namespace's row first.
//!
//! Every writer starts with `SELECT ... FROM cosid_namespace WHERE name = $1 FOR UPDATE` (after inserting the row
//! if it is new), so the operations on one namespace run one after another while other namespaces go on in
//! parallel. Inside the lock it reads the slots and the store clock (`clock_timestamp()`, the database server's
//! clock), applies [`protocol`], and writes the one row that changed. Every value travels as a bind parameter.
//!
//! The schema (`cosid_namespace`, `cosid_slot`) is created by [`LeaseStore::init`] (`cosid init`) or on first use.
//! Safety needs committed writes to survive a crash and a failover: `synchronous_commit` on (the default), and
//! synchronous replicas for a failover (see `docs/stores.md`). TLS is not built in: connect over a trusted network
//! or a local socket, or through a TLS-terminating proxy.

use super::{sql_view, BoxError, Finding, Inspection, LeaseStore, StoreError};
use crate::lease::{
    layout_text, protocol, AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord,
    Owner, SlotLease, SlotRecord,
};
use deadpool_postgres::{
    Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Transaction,
};
use std::ops::AsyncFnOnce;
use std::time::Duration;
use tokio_postgres::{IsolationLevel, NoTls, Row};

const KIND: &str = "postgres";

/// How long a connection attempt may take, unless the URL says (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one operation may take before the store counts as unavailable and its connection is dropped.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections kept by one store; operations on one namespace wait for each other on its row lock anyway.
const POOL_SIZE: usize = 16;

/// Serializes schema creation between processes: `CREATE TABLE IF NOT EXISTS` races with itself.
const SCHEMA_LOCK: i64 = 0x636f_7369_6400; // "cosid\0"

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS cosid_namespace (
    name         TEXT PRIMARY KEY,
    bits         BIGINT NOT NULL,
    tolerance_ms BIGINT NOT NULL,
    not_before   BIGINT NOT NULL,
    layout       TEXT,
    lowest_unused BIGINT
);
CREATE TABLE IF NOT EXISTS cosid_slot (
    namespace      TEXT NOT NULL,
    slot           BIGINT NOT NULL,
    owner_key      TEXT,
    incarnation    TEXT,
    last_owner_key TEXT,
    fence          BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    floor          BIGINT NOT NULL,
    ceiling        BIGINT NOT NULL,
    next_floor     BIGINT NOT NULL,
    PRIMARY KEY (namespace, slot)
);
";

/// What tables made by earlier versions lack: the layout and `lowest_unused` columns and the acquire's indexes
/// (each for one part of [`CANDIDATES_SQL`]).
const UPGRADE_SQL: &str = "
ALTER TABLE cosid_namespace ADD COLUMN IF NOT EXISTS layout TEXT;
ALTER TABLE cosid_namespace ADD COLUMN IF NOT EXISTS lowest_unused BIGINT;
CREATE INDEX IF NOT EXISTS cosid_slot_owner ON cosid_slot (namespace, owner_key);
CREATE INDEX IF NOT EXISTS cosid_slot_last_owner ON cosid_slot (namespace, last_owner_key);
CREATE INDEX IF NOT EXISTS cosid_slot_released ON cosid_slot (namespace, slot) WHERE owner_key IS NULL;
CREATE INDEX IF NOT EXISTS cosid_slot_held ON cosid_slot (namespace, expires_at) WHERE owner_key IS NOT NULL;
";

const EXISTS_SQL: &str =
    "SELECT to_regclass('cosid_namespace') IS NOT NULL AND to_regclass('cosid_slot') IS NOT NULL";

const NOW_SQL: &str = "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::int8";

/// Whether [`UPGRADE_SQL`] has run (it runs in one transaction, so its last index stands for all of it).
const UPGRADED_SQL: &str = "SELECT to_regclass('cosid_slot_held') IS NOT NULL";

const INSERT_NAMESPACE_SQL: &str =
    "INSERT INTO cosid_namespace (name, bits, tolerance_ms, not_before, layout)
     VALUES ($1, $2, $3, 0, $4) ON CONFLICT (name) DO NOTHING";

const LOCK_NAMESPACE_SQL: &str = "SELECT bits, tolerance_ms, not_before, layout, lowest_unused
     FROM cosid_namespace WHERE name = $1 FOR UPDATE";

const UPDATE_UNUSED_SQL: &str = "UPDATE cosid_namespace SET lowest_unused = $2 WHERE name = $1";

const READ_NAMESPACE_SQL: &str =
    "SELECT bits, tolerance_ms, not_before, layout FROM cosid_namespace WHERE name = $1";

const UPDATE_NAMESPACE_SQL: &str =
    "UPDATE cosid_namespace SET not_before = $2, layout = $3 WHERE name = $1";

const SLOTS_SQL: &str =
    "SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
     next_floor FROM cosid_slot WHERE namespace = $1 ORDER BY slot";

const SLOT_SQL: &str =
    "SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
     next_floor FROM cosid_slot WHERE namespace = $1 AND slot = $2";

/// The rows a [`protocol::View`] needs, each part through an index: the owner key's, the last owner key's, the
/// preferred and the hinted unused slot's ($3, $4; -1 for none), the lowest released and lowest expired rows (and
/// of each the lowest whose `next_floor` is at most $6, now + tolerance; $5 is now), and the held row that expires
/// first.
const CANDIDATES_SQL: &str = include_str!("sql_view/candidates.sql");

/// The lowest slot from $2 on that has no row: $2 itself, or the first slot after a run of rows starting there.
const FIRST_UNUSED_SQL: &str = "
SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM cosid_slot WHERE namespace = $1 AND slot = $2::int8) THEN $2::int8
ELSE (SELECT s.slot + 1 FROM cosid_slot s WHERE s.namespace = $1 AND s.slot >= $2::int8
      AND NOT EXISTS (SELECT 1 FROM cosid_slot t WHERE t.namespace = $1 AND t.slot = s.slot + 1)
      ORDER BY s.slot LIMIT 1) END";

const WRITE_SLOT_SQL: &str = "INSERT INTO cosid_slot (namespace, slot, owner_key, incarnation, last_owner_key,
     fence, expires_at, floor, ceiling, next_floor) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (namespace, slot) DO UPDATE SET owner_key = EXCLUDED.owner_key,
     incarnation = EXCLUDED.incarnation, last_owner_key = EXCLUDED.last_owner_key, fence = EXCLUDED.fence,
     expires_at = EXCLUDED.expires_at, floor = EXCLUDED.floor, ceiling = EXCLUDED.ceiling,
     next_floor = EXCLUDED.next_floor";

/// Leases in a PostgreSQL database (`postgres://user:password@host:port/dbname`, or any libpq-style URL that
/// `tokio-postgres` accepts).
///
/// Opening does not connect: connections are made on use, up to a pool of 16, so a server that is down at
/// start-up is retried by the runtime's acquire loop like any other unavailable store.
///
/// ```no_run
/// # async fn demo() -> Result<(), cosid::store::StoreError> {
/// use cosid::store::{LeaseStore, PostgresStore};
/// let store = PostgresStore::open("postgres://cosid:secret@127.0.0.1:5432/cosid")?;
/// store.init().await?; // creates the tables; the first operation would too
/// # Ok(()) }
/// ```
pub struct PostgresStore {
    pool: Pool,
    /// Host, port and database, without credentials, for messages.
    target: String,
    schema: tokio::sync::OnceCell<()>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

fn corrupt(ns: &Namespace, what: &str, detail: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        store: KIND,
        what: format!("{what} of namespace {ns}"),
        detail: detail.into(),
    }
}

fn u64_of(v: i64, ns: &Namespace, what: &str, field: &str) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| corrupt(ns, what, format!("{field} is negative ({v})")))
}

fn i64_of(v: u64) -> i64 {
    // Every stored time is a Unix millisecond or a fence: far below 2^63.
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// `e` with its causes, since `tokio_postgres::Error` alone often says only "db error" or "error connecting".
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    if let Some(db) = e
        .downcast_ref::<tokio_postgres::Error>()
        .and_then(tokio_postgres::Error::as_db_error)
    {
        return format!(
            "{}: {} (SQLSTATE {})",
            db.severity(),
            db.message(),
            db.code().code()
        );
    }
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = s.source();
    }
    text
}

impl PostgresStore {
    /// Parses `url`. Does not connect.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let invalid = |reason: String| StoreError::InvalidUrl {
            url: super::url::redacted(url),
            reason: super::url::scrub(&reason, url),
        };
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| invalid(describe(&e)))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let target = format!(
            "{}/{}",
            config
                .get_hosts()
                .iter()
                .map(|h| match h {
                    tokio_postgres::config::Host::Tcp(h) => h.clone(),
                    #[cfg(unix)]
                    tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
                })
                .zip(config.get_ports().iter().chain(std::iter::repeat(&5432)))
                .map(|(h, p)| format!("{h}:{p}"))
                .collect::<Vec<_>>()
                .join(","),
            config.get_dbname().unwrap_or("")
        );
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .build()
            .map_err(|e| invalid(e.to_string()))?;
        Ok(Self {
            pool,
            target,
            schema: tokio::sync::OnceCell::new(),
        })
    }

    fn db_error(&self, e: &tokio_postgres::Error) -> StoreError {
        // Connection trouble, a server shutting down or starting, too many connections, a serialization failure
        // or deadlock, and a read-only server (a failover in progress) are worth retrying; the rest is not.
        let retryable = match e.as_db_error() {
            None => true,
            Some(db) => {
                let code = db.code().code();
                ["08", "53", "57P"].iter().any(|c| code.starts_with(c))
                    || ["40001", "40P01", "25006"].contains(&code)
            }
        };
        let source: BoxError = format!("{} (at {})", describe(e), self.target).into();
        if retryable {
            StoreError::Unavailable {
                store: KIND,
                source,
            }
        } else {
            StoreError::Generic {
                store: KIND,
                source,
            }
        }
    }

    fn pool_error(&self, e: PoolError) -> StoreError {
        match e {
            PoolError::Backend(e) => self.db_error(&e),
            other => StoreError::Unavailable {
                store: KIND,
                source: format!("connection pool: {other} (at {})", self.target).into(),
            },
        }
    }

    async fn client(&self) -> Result<Object, StoreError> {
        let client = self.pool.get().await.map_err(|e| self.pool_error(e))?;
        Ok(client)
    }

    /// Creates the tables once per store (and per process), under an advisory lock.
    async fn ensure_schema(&self) -> Result<(), StoreError> {
        self.schema
            .get_or_try_init(|| async {
                let mut client = self.client().await?;
                // Tables made by `cosid init` under another role need no CREATE privilege from this one.
                let exists: bool = client
                    .query_one(EXISTS_SQL, &[])
                    .await
                    .and_then(|row| row.try_get(0))
                    .map_err(|e| self.db_error(&e))?;
                let upgraded = exists
                    && client
                        .query_one(UPGRADED_SQL, &[])
                        .await
                        .and_then(|row| row.try_get(0))
                        .map_err(|e| self.db_error(&e))?;
                if !exists || !upgraded {
                    let tx = client.transaction().await.map_err(|e| self.db_error(&e))?;
                    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
                        .await
                        .map_err(|e| self.db_error(&e))?;
                    tx.batch_execute(SCHEMA)
                        .await
                        .map_err(|e| self.db_error(&e))?;
                    tx.batch_execute(UPGRADE_SQL)
                        .await
                        .map_err(|e| self.db_error(&e))?;
                    tx.commit().await.map_err(|e| self.db_error(&e))?;
                }
                drop(client);
                for finding in self.findings().await? {
                    tracing::debug!(store = %self.target, "cosid: {finding}");
                }
                Ok(())
            })
            .await
            .map(|_| ())
    }

    /// What the server's settings leave of the safety claim: one line per setting that lets a committed lease be
    /// lost in a crash (`synchronous_commit = off`, `fsync = off`).
    pub async fn settings_warnings(&self) -> Result<Vec<String>, StoreError> {
        let findings = self.findings().await?;
        Ok(findings.iter().map(ToString::to_string).collect())
    }

    /// The settings as a pooled session sees them: a role or database setting (`ALTER ROLE ... SET`) or an
    /// `options=-c ...` in the URL applies to every session of the pool, so what one session shows is what the
    /// leases get.
    async fn findings(&self) -> Result<Vec<Finding>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "SELECT current_setting('synchronous_commit'), current_setting('fsync')",
                &[],
            )
            .await
            .map_err(|e| self.db_error(&e))?;
        let mut findings = Vec::new();
        for (i, name) in ["synchronous_commit", "fsync"].into_iter().enumerate() {
            let value: String = row.try_get(i).map_err(|e| self.db_error(&e))?;
            // `local` and `remote_write` still flush the local WAL before the commit returns; only `off` does not.
            if value == "off" {
                findings.push(Finding {
                    store: KIND,
                    setting: name.to_string(),
                    value,
                    expected: "on".to_string(),
                });
            }
        }
        Ok(findings)
    }

    /// Runs `f` in one transaction on a pooled connection and commits if it returns `Ok`. A connection that does
    /// not answer within the operation timeout is dropped, not returned to the pool.
    async fn transaction<T>(
        &self,
        read_only: bool,
        f: impl AsyncFnOnce(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.ensure_schema().await?;
        let mut client = self.client().await?;
        let work = async {
            let builder = client.build_transaction();
            let builder = if read_only {
                builder
                    .isolation_level(IsolationLevel::RepeatableRead)
                    .read_only(true)
            } else {
                builder
            };
            let tx = builder.start().await.map_err(|e| self.db_error(&e))?;
            let out = f(&tx).await?;
            tx.commit().await.map_err(|e| self.db_error(&e))?;
            Ok(out)
        };
        match tokio::time::timeout(OPERATION_TIMEOUT, work).await {
            Ok(r) => r,
            Err(_) => {
                // The connection may be stuck mid-transaction: close it rather than hand it to the next caller.
                drop(Object::take(client));
                Err(StoreError::Unavailable {
                    store: KIND,
                    source: format!(
                        "no answer within {} s (at {})",
                        OPERATION_TIMEOUT.as_secs(),
                        self.target
                    )
                    .into(),
                })
            }
        }
    }
}

async fn store_now(store: &PostgresStore, tx: &Transaction<'_>) -> Result<u64, StoreError> {
    let stmt = tx
        .prepare_cached(NOW_SQL)
        .await
        .map_err(|e| store.db_error(&e))?;
    let row = tx
        .query_one(&stmt, &[])
        .await
        .map_err(|e| store.db_error(&e))?;
    let ms: i64 = row.try_get(0).map_err(|e| store.db_error(&e))?;
    u64::try_from(ms).map_err(|_| StoreError::Generic {
        store: KIND,
        source: format!("the database clock reads {ms} ms, before 1970").into(),
    })
}

fn decode_namespace(ns: &Namespace, row: &Row) -> Result<NamespaceRecord, StoreError> {
    let what = "the namespace record";
    let get = |i: usize, field: &str| -> Result<u64, StoreError> {
        let v: i64 = row
            .try_get(i)
            .map_err(|e| corrupt(ns, what, format!("{field}: {}", describe(&e))))?;
        u64_of(v, ns, what, field)
    };
    let bits = get(0, "bits")?;
    let bits = u8::try_from(bits)
        .ok()
        .filter(|b| (1..=31).contains(b))
        .ok_or_else(|| corrupt(ns, what, format!("bits {bits} is not 1 to 31")))?;
    let layout: Option<String> = row
        .try_get(3)
        .map_err(|e| corrupt(ns, what, format!("layout: {}", describe(&e))))?;
    Ok(NamespaceRecord {
        bits,
        tolerance_ms: get(1, "tolerance_ms")?,
        not_before: get(2, "not_before")?,
        layout: layout
            .map(|l| layout_text::decode(&l))
            .transpose()
            .map_err(|e| corrupt(ns, what, e))?,
    })
}

fn decode_slot(ns: &Namespace, row: &Row) -> Result<SlotRecord, StoreError> {
    let slot: i64 = row
        .try_get(0)
        .map_err(|e| corrupt(ns, "a slot record", describe(&e)))?;
    let what = format!("slot {slot}");
    let int = |i: usize, field: &str| -> Result<u64, StoreError> {
        let v: i64 = row
            .try_get(i)
            .map_err(|e| corrupt(ns, &what, format!("{field}: {}", describe(&e))))?;
        u64_of(v, ns, &what, field)
    };
    let text = |i: usize, field: &str| -> Result<Option<String>, StoreError> {
        row.try_get(i)
            .map_err(|e| corrupt(ns, &what, format!("{field}: {}", describe(&e))))
    };
    let slot = u32::try_from(slot).map_err(|_| corrupt(ns, &what, "slot number out of range"))?;
    let owner = Owner::from_stored(text(1, "owner_key")?, text(2, "incarnation")?)
        .map_err(|d| corrupt(ns, &what, d))?;
    Ok(SlotRecord {
        slot,
        owner,
        last_owner_key: text(3, "last_owner_key")?,
        fence: int(4, "fence")?,
        expires_at: int(5, "expires_at")?,
        floor: int(6, "floor")?,
        ceiling: int(7, "ceiling")?,
        next_floor: int(8, "next_floor")?,
    })
}

async fn read_slots(
    store: &PostgresStore,
    tx: &Transaction<'_>,
    ns: &Namespace,
) -> Result<Vec<SlotRecord>, StoreError> {
    let stmt = tx
        .prepare_cached(SLOTS_SQL)
        .await
        .map_err(|e| store.db_error(&e))?;
    let rows = tx
        .query(&stmt, &[&ns.encoded()])
        .await
        .map_err(|e| store.db_error(&e))?;
    rows.iter().map(|r| decode_slot(ns, r)).collect()
}

async fn write_slot(
    store: &PostgresStore,
    tx: &Transaction<'_>,
    ns: &Namespace,
    r: &SlotRecord,
) -> Result<(), StoreError> {
    let stmt = tx
        .prepare_cached(WRITE_SLOT_SQL)
        .await
        .map_err(|e| store.db_error(&e))?;
    tx.execute(
        &stmt,
        &[
            &ns.encoded(),
            &i64::from(r.slot),
            &r.owner.as_ref().map(|o| o.key.as_str()),
            &r.owner.as_ref().map(|o| o.incarnation.to_string()),
            &r.last_owner_key,
            &i64_of(r.fence),
            &i64_of(r.expires_at),
            &i64_of(r.floor),
            &i64_of(r.ceiling),
            &i64_of(r.next_floor),
        ],
    )
    .await
    .map_err(|e| store.db_error(&e))?;
    Ok(())
}

/// The candidate rows of an acquisition ([`CANDIDATES_SQL`]), one per slot, not yet validated.
async fn read_candidates(
    store: &PostgresStore,
    tx: &Transaction<'_>,
    ns: &Namespace,
    record: &NamespaceRecord,
    request: &AcquireRequest,
    hint: Option<i64>,
    now: u64,
) -> Result<Vec<SlotRecord>, StoreError> {
    let stmt = tx
        .prepare_cached(CANDIDATES_SQL)
        .await
        .map_err(|e| store.db_error(&e))?;
    let preferred = request.preferred_slot.map_or(-1, i64::from);
    let rows = tx
        .query(
            &stmt,
            &[
                &ns.encoded(),
                &request.owner.key,
                &preferred,
                &hint.unwrap_or(-1),
                &i64_of(now),
                &i64_of(now.saturating_add(record.tolerance_ms)),
            ],
        )
        .await
        .map_err(|e| store.db_error(&e))?;
    let records = rows
        .iter()
        .map(|r| decode_slot(ns, r))
        .collect::<Result<_, _>>()?;
    Ok(sql_view::candidates(records))
}

/// The lowest slot from `from` on without a row ([`FIRST_UNUSED_SQL`]), as a view's `lowest_unused`.
async fn first_unused(
    store: &PostgresStore,
    tx: &Transaction<'_>,
    ns: &Namespace,
    bits: u8,
    from: u32,
) -> Result<Option<u32>, StoreError> {
    if u64::from(from) >= 1u64 << bits {
        return Ok(None);
    }
    let stmt = tx
        .prepare_cached(FIRST_UNUSED_SQL)
        .await
        .map_err(|e| store.db_error(&e))?;
    let row = tx
        .query_one(&stmt, &[&ns.encoded(), &i64::from(from)])
        .await
        .map_err(|e| store.db_error(&e))?;
    let first: i64 = row.try_get(0).map_err(|e| store.db_error(&e))?;
    Ok(sql_view::unused_below(first, bits))
}

/// Inserts the namespace row with `config` if it is new, then locks it: every writer of the namespace waits here.
/// A new row holds `config` and `not_before = 0`, which is what `check_namespace` makes of a new namespace.
/// Returns the record and its `lowest_unused` hint.
async fn lock_new_or_stored(
    store: &PostgresStore,
    tx: &Transaction<'_>,
    ns: &Namespace,
    config: &NamespaceConfig,
) -> Result<(NamespaceRecord, Option<i64>), StoreError> {
    let insert = tx
        .prepare_cached(INSERT_NAMESPACE_SQL)
        .await
        .map_err(|e| store.db_error(&e))?;
    tx.execute(
        &insert,
        &[
            &ns.encoded(),
            &i64::from(config.bits),
            &i64_of(config.tolerance_ms),
            &layout_text::encode(&config.layout),
        ],
    )
    .await
    .map_err(|e| store.db_error(&e))?;
    lock_namespace(store, tx, ns).await?.ok_or_else(|| {
        corrupt(
            ns,
            "the namespace record",
            "missing right after it was inserted",
        )
    })
}

/// Writes the parts of a namespace record that may change: `not_before`, and the layout of an old record.
async fn update_namespace(
    store: &PostgresStore,
    tx: &Transaction<'_>,
    ns: &Namespace,
    record: &NamespaceRecord,
) -> Result<(), StoreError> {
    let stmt = tx
        .prepare_cached(UPDATE_NAMESPACE_SQL)
        .await
        .map_err(|e| store.db_error(&e))?;
    tx.execute(
        &stmt,
        &[
            &ns.encoded(),
            &i64_of(record.not_before),
            &record.layout.as_ref().map(layout_text::encode),
        ],
    )
    .await
    .map_err(|e| store.db_error(&e))?;
    Ok(())
}

/// Locks the namespace row and reads it, with its `lowest_unused` hint (`None` when unset or unreadable: a hint).
async fn lock_namespace(
    store: &PostgresStore,
    tx: &Transaction<'_>,
    ns: &Namespace,
) -> Result<Option<(NamespaceRecord, Option<i64>)>, StoreError> {
    let stmt = tx
        .prepare_cached(LOCK_NAMESPACE_SQL)
        .await
        .map_err(|e| store.db_error(&e))?;
    let row = tx
        .query_opt(&stmt, &[&ns.encoded()])
        .await
        .map_err(|e| store.db_error(&e))?;
    row.map(|r| Ok((decode_namespace(ns, &r)?, r.try_get(4).ok().flatten())))
        .transpose()
}

/// Locks a held lease's namespace and reads its slot, validated, with the store clock.
async fn read_held(
    store: &PostgresStore,
    tx: &Transaction<'_>,
    lease: &SlotLease,
) -> Result<(Option<SlotRecord>, u64), StoreError> {
    let ns = &lease.namespace;
    let stored = lock_namespace(store, tx, ns)
        .await?
        .map(|(record, _)| record);
    let bits = protocol::held_namespace(KIND, lease, stored)?.bits;
    let stmt = tx
        .prepare_cached(SLOT_SQL)
        .await
        .map_err(|e| store.db_error(&e))?;
    let slot = i64::from(lease.slot);
    let encoded = ns.encoded();
    let (row, now) = tokio::try_join!(
        async {
            tx.query_opt(&stmt, &[&encoded, &slot])
                .await
                .map_err(|e| store.db_error(&e))
        },
        store_now(store, tx)
    )?;
    let record = row.map(|r| decode_slot(ns, &r)).transpose()?;
    if let Some(r) = &record {
        protocol::validate(KIND, ns, r, bits)?;
    }
    Ok((record, now))
}

#[async_trait::async_trait]
impl LeaseStore for PostgresStore {
    fn kind(&self) -> &'static str {
        KIND
    }

    async fn durability(&self) -> Result<Vec<Finding>, StoreError> {
        self.findings().await
    }

    /// Creates `cosid_namespace` and `cosid_slot` if they do not exist.
    async fn init(&self) -> Result<(), StoreError> {
        self.ensure_schema().await
    }

    async fn acquire(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        request: &AcquireRequest,
    ) -> Result<Acquired, StoreError> {
        self.transaction(false, async |tx| {
            let (stored, hint) = lock_new_or_stored(self, tx, namespace, config).await?;
            let record = protocol::check_namespace(namespace, Some(stored), config)?;
            if record != stored {
                update_namespace(self, tx, namespace, &record).await?;
            }
            // The clock is read once the lock is held, so times follow the order of the transactions.
            let now = store_now(self, tx).await?;
            let mut slots =
                read_candidates(self, tx, namespace, &record, request, hint, now).await?;
            for s in &slots {
                protocol::validate(KIND, namespace, s, record.bits)?;
            }
            let hinted = sql_view::hinted(hint, &slots, record.bits);
            let mut lowest_unused = match hinted {
                Some(unused) => unused,
                None => {
                    // No hint yet (a namespace from an earlier version, or reset after a hand edit), or a stale
                    // one: decide on every row, as before, and keep the hint from there on.
                    slots = read_slots(self, tx, namespace).await?;
                    for s in &slots {
                        protocol::validate(KIND, namespace, s, record.bits)?;
                    }
                    protocol::lowest_unused(&slots, record.bits)
                }
            };
            // A hint that says every slot has a row would refuse: check it first (rows deleted by hand leave it so).
            if sql_view::must_check(hinted, namespace, &record, &slots, request, now) {
                lowest_unused = first_unused(self, tx, namespace, record.bits, 0).await?;
                sql_view::warn_rebuilt(namespace, hint, lowest_unused);
            }
            let view = protocol::View {
                records: &slots,
                lowest_unused,
            };
            let grant = protocol::acquire_in(namespace, &record, &view, request, now)?;
            let mut unused = lowest_unused;
            if let Some(w) = &grant.write {
                write_slot(self, tx, namespace, w).await?;
                if let Some(from) = sql_view::advanced(&view, w.slot) {
                    unused = first_unused(self, tx, namespace, record.bits, from).await?;
                }
            }
            let keep = sql_view::stored(unused, record.bits);
            if hint != Some(keep) {
                let stmt = tx
                    .prepare_cached(UPDATE_UNUSED_SQL)
                    .await
                    .map_err(|e| self.db_error(&e))?;
                tx.execute(&stmt, &[&namespace.encoded(), &keep])
                    .await
                    .map_err(|e| self.db_error(&e))?;
            }
            Ok(grant.acquired)
        })
        .await
    }

    async fn renew(
        &self,
        lease: &SlotLease,
        ttl_ms: u64,
        tolerance_ms: u64,
    ) -> Result<SlotLease, StoreError> {
        self.transaction(false, async |tx| {
            let (current, now) = read_held(self, tx, lease).await?;
            let (record, renewed) =
                protocol::renew(KIND, current.as_ref(), lease, ttl_ms, tolerance_ms, now)?;
            write_slot(self, tx, &lease.namespace, &record).await?;
            Ok(renewed)
        })
        .await
    }

    async fn release(&self, lease: &SlotLease, last_issued: Option<u64>) -> Result<(), StoreError> {
        self.transaction(false, async |tx| {
            let (current, _) = read_held(self, tx, lease).await?;
            let record = protocol::release(KIND, current.as_ref(), lease, last_issued)?;
            write_slot(self, tx, &lease.namespace, &record).await
        })
        .await
    }

    async fn inspect(&self, namespace: &Namespace) -> Result<Inspection, StoreError> {
        self.transaction(true, async |tx| {
            let stmt = tx
                .prepare_cached(READ_NAMESPACE_SQL)
                .await
                .map_err(|e| self.db_error(&e))?;
            let encoded = namespace.encoded();
            let (row, slots, now) = tokio::try_join!(
                async {
                    tx.query_opt(&stmt, &[&encoded])
                        .await
                        .map_err(|e| self.db_error(&e))
                },
                read_slots(self, tx, namespace),
                store_now(self, tx)
            )?;
            Ok(Inspection {
                namespace: row.map(|r| decode_namespace(namespace, &r)).transpose()?,
                slots,
                store_now: now,
            })
        })
        .await
    }

    async fn raise_not_before(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        not_before: u64,
    ) -> Result<NamespaceRecord, StoreError> {
        self.transaction(false, async |tx| {
            let (stored, _) = lock_new_or_stored(self, tx, namespace, config).await?;
            let record = protocol::raise_not_before(namespace, Some(stored), config, not_before)?;
            update_namespace(self, tx, namespace, &record).await?;
            Ok(record)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_without_connecting_and_passwords_kept_out_of_messages() {
        let store = PostgresStore::open("postgres://cosid:secret@127.0.0.1:5999/cosid").unwrap();
        let shown = format!("{store:?}");
        assert!(shown.contains("127.0.0.1:5999/cosid"), "{shown}");
        assert!(!shown.contains("secret"), "{shown}");
        match PostgresStore::open("postgres://cosid:secret@127.0.0.1:notaport/cosid") {
            Err(StoreError::InvalidUrl { url, reason }) => {
                assert!(!url.contains("secret"), "{url}");
                assert!(!reason.is_empty());
            }
            other => panic!("expected InvalidUrl, got {other:?}"),
        }
    }
}
