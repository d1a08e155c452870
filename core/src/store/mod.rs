//! Lease stores: where leases live. One trait, one implementation per store, each behind a cargo feature.
//!
//! Every operation is one atomic step in the store that applies the rules of [`crate::lease::protocol`].

#[cfg(any(feature = "etcd", feature = "zookeeper", feature = "mongodb"))]
mod common;
#[cfg(feature = "etcd")]
mod etcd;
#[cfg(feature = "http")]
pub mod http;
#[cfg(any(feature = "etcd", feature = "zookeeper", feature = "mongodb"))]
mod json_record;
mod memory;
#[cfg(feature = "mongodb")]
mod mongodb;
#[cfg(feature = "mysql")]
mod mysql;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
mod sql_view;
#[cfg(feature = "sqlite")]
mod sqlite;
mod url;
#[cfg(feature = "zookeeper")]
mod zookeeper;

pub use self::url::{open, redacted, scrub, StoreUrl};
#[cfg(feature = "etcd")]
pub use etcd::EtcdStore;
#[cfg(feature = "http")]
pub use http::HttpStore;
pub use memory::MemoryStore;
#[cfg(feature = "mongodb")]
pub use mongodb::MongoStore;
#[cfg(feature = "mysql")]
pub use mysql::MysqlStore;
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
#[cfg(feature = "redis")]
pub use redis::RedisStore;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
#[cfg(feature = "zookeeper")]
pub use zookeeper::ZookeeperStore;

use crate::lease::{
    AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord, SlotLease, SlotRecord,
};

/// Every store cosid has, as [`Status::store`](crate::Status) names it, in the order the docs list them.
pub const ALL: &[&str] = &[
    "memory",
    "sqlite",
    "http",
    "redis",
    "postgres",
    "mysql",
    "etcd",
    "zookeeper",
    "mongodb",
];

/// The stores this build carries (each behind a cargo feature; `memory` is always in), as [`Status::store`]
/// names them. A URL of any other store fails with a configuration error that says how to reach it: through
/// `cosid serve` (the `http://` store, when this build has it) or by building with its feature. The released
/// packages carry the same set (`docs/install.md` says which and why).
///
/// [`Status::store`]: crate::Status
pub fn built() -> Vec<&'static str> {
    IN_THIS_BUILD
        .iter()
        .filter(|(_, built)| *built)
        .map(|(store, _)| *store)
        .collect()
}

/// Whether this build carries the store that [`Status::store`](crate::Status) names `store`.
pub fn is_built(store: &str) -> bool {
    IN_THIS_BUILD.iter().any(|&(s, built)| built && s == store)
}

/// Each store of [`ALL`], in its order, and whether this build has its feature.
const IN_THIS_BUILD: [(&str, bool); 9] = [
    ("memory", true),
    ("sqlite", cfg!(feature = "sqlite")),
    ("http", cfg!(feature = "http")),
    ("redis", cfg!(feature = "redis")),
    ("postgres", cfg!(feature = "postgres")),
    ("mysql", cfg!(feature = "mysql")),
    ("etcd", cfg!(feature = "etcd")),
    ("zookeeper", cfg!(feature = "zookeeper")),
    ("mongodb", cfg!(feature = "mongodb")),
];

use std::fmt::Debug;

/// A boxed error from a store's client library.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What went wrong in a store. `Unavailable` is worth retrying; the others are answers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store could not be reached or did not answer: retry later.
    #[error("{store} store is unavailable: {source}")]
    Unavailable {
        /// Which store.
        store: &'static str,
        /// The client's error.
        #[source]
        source: BoxError,
    },
    /// Every slot of the namespace is held.
    #[error("namespace {namespace:?} is exhausted: all {slots} slots are held; the earliest lease expires at {earliest_expiry} (store time now {store_now})")]
    Exhausted {
        /// The namespace.
        namespace: String,
        /// How many slots it has.
        slots: u64,
        /// The earliest expiry among the holders (store ms).
        earliest_expiry: u64,
        /// The store's clock (ms).
        store_now: u64,
    },
    /// The lease is no longer this holder's: its fence or incarnation no longer match.
    #[error("lease on slot {slot} of namespace {namespace:?} is lost: {reason}")]
    LeaseLost {
        /// The namespace.
        namespace: String,
        /// The slot.
        slot: u32,
        /// What the store holds instead.
        reason: String,
    },
    /// The namespace is recorded with other settings than this instance's.
    #[error("namespace {namespace:?} is recorded with {field} = {stored}, but this instance is configured with {requested}")]
    NamespaceMismatch {
        /// The namespace.
        namespace: String,
        /// Which setting differs (`bits` or `tolerance_ms`).
        field: &'static str,
        /// The recorded value.
        stored: u64,
        /// This instance's value.
        requested: u64,
    },
    /// A stored record breaks the protocol's invariants or cannot be decoded. Never read as "absent".
    #[error("corrupt {store} record for {what}: {detail}")]
    Corrupt {
        /// Which store.
        store: &'static str,
        /// Which record.
        what: String,
        /// What is wrong with it.
        detail: String,
    },
    /// A store URL that does not parse or names no store compiled in.
    #[error("invalid store URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The caller's namespace settings are out of range (a store refuses them before touching anything).
    #[error("invalid namespace settings: {detail}")]
    InvalidSettings {
        /// What is out of range, and what was expected.
        detail: String,
    },
    /// Lowering a recorded `not_before` was refused.
    #[error("namespace {namespace:?} already has not_before = {stored}; refusing to lower it to {requested}")]
    NotBeforeLowered {
        /// The namespace.
        namespace: String,
        /// The recorded value.
        stored: u64,
        /// The value asked for.
        requested: u64,
    },
    /// The store has certainly lost or rolled back writes (a record missing while held, a fence or ceiling below
    /// one it granted, its file replaced under a live holder). Ids issued under the old records may be issued
    /// again unless the namespace's `not_before` is raised past them first: the keeper treats it as an alarm.
    #[error("{store} store lost writes ({what}): {detail}")]
    Regression {
        /// Which store.
        store: &'static str,
        /// Which record or file.
        what: String,
        /// What was seen.
        detail: String,
    },
    /// The store's file can also be reached through another path that its locks and journal would not cover (a
    /// hard link, or the file alone mounted into a container): two processes on the two paths could hold the same
    /// slot, so the file is refused.
    #[error("{store} store refuses {path:?}: {reason}")]
    UnsafeFile {
        /// Which store.
        store: &'static str,
        /// The file as configured.
        path: std::path::PathBuf,
        /// Which other path there is, and what to do instead.
        reason: String,
    },
    /// Anything else the store reported.
    #[error("{store} store: {source}")]
    Generic {
        /// Which store.
        store: &'static str,
        /// The client's error.
        #[source]
        source: BoxError,
    },
}

impl StoreError {
    /// Whether trying again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Unavailable { .. })
    }
}

/// A store of slot leases.
///
/// Implementations must be linearizable and durable for the safety claim to hold (see `docs/stores.md`): a store
/// that loses or rolls back a slot's `next_floor` can cause duplicates.
#[async_trait::async_trait]
pub trait LeaseStore: Send + Sync + Debug {
    /// A short name for messages (`"sqlite"`, `"redis"`, ...).
    fn kind(&self) -> &'static str;

    /// Creates the schema if needed (`cosid init`). Stores that need none return `Ok`.
    async fn init(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// The server settings that let this store lose or roll back a committed write, which the safety claim
    /// rules out (see `docs/stores.md`). Empty when all is well, and for stores with no such settings. Settings
    /// the server does not show to this user are skipped, not reported.
    async fn durability(&self) -> Result<Vec<Finding>, StoreError> {
        Ok(Vec::new())
    }

    /// Checks (or records) the namespace settings, then chooses a slot and grants a lease, atomically.
    async fn acquire(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        request: &AcquireRequest,
    ) -> Result<Acquired, StoreError>;

    /// Extends `lease` if its incarnation and fence still match.
    async fn renew(
        &self,
        lease: &SlotLease,
        ttl_ms: u64,
        tolerance_ms: u64,
    ) -> Result<SlotLease, StoreError>;

    /// Gives `lease` back, handing `last_issued` to the next holder.
    async fn release(&self, lease: &SlotLease, last_issued: Option<u64>) -> Result<(), StoreError>;

    /// The namespace record and every stored slot record (for `cosid leases`), with the store's clock.
    async fn inspect(&self, namespace: &Namespace) -> Result<Inspection, StoreError>;

    /// Raises the namespace's `not_before` (migration). Refuses to lower it. Creates the record with `config`
    /// when the namespace is new.
    async fn raise_not_before(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        not_before: u64,
    ) -> Result<NamespaceRecord, StoreError>;
}

/// A server setting that leaves the store unable to keep the safety claim: a committed lease may be lost in a
/// crash, a failover or an eviction, and a slot handed out twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The store kind (`"redis"`, `"postgres"`, ...).
    pub store: &'static str,
    /// The setting's name as the server spells it (`appendfsync`).
    pub setting: String,
    /// Its value on the server (`everysec`).
    pub value: String,
    /// The value the safety claim needs (`always`).
    pub expected: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the {} server has {} = {}; the lease safety claim needs {} = {} (see docs/stores.md)",
            self.store, self.setting, self.value, self.setting, self.expected
        )
    }
}

/// A namespace as a store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// The namespace record, if the namespace was ever used.
    pub namespace: Option<NamespaceRecord>,
    /// Slot records, by slot number.
    pub slots: Vec<SlotRecord>,
    /// The store's clock (ms).
    pub store_now: u64,
}
