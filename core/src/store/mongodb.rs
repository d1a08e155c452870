//! MongoDB (`mongodb://[user:password@]host[:port][,host[:port]...][/database][?options]`): one document per slot
//! and one per namespace, changed by conditional single-document writes.
//!
//! The documents live in the collection `cosid_leases` of the URL's database (`cosid` when the URL names none).
//! A namespace's record is the document `_id: "ns/<encoded name>"`, each slot's `_id: "slot/<encoded name>/<n>"`.
//! Each document holds the record's fields as the etcd and ZooKeeper stores write them (numbers as 64-bit
//! integers), its encoded namespace name in `ns` (and a slot's number in `slot`), and `rev`, a counter that every
//! write of the document raises. A third document, `_id: "unused/<encoded name>"` (with no `ns`), keeps a hint: a
//! slot below which every slot has a document.
//!
//! An acquisition does not read every document of its namespace, so its cost does not grow with the namespace:
//! it reads the candidates of a [`protocol::View`] in three or four queries, one after another, each served by an index the
//! store creates on first use: the documents of the owner's key (as holder or last holder), the preferred slot's,
//! the lowest free ones, and the next documents from the hint on, up to the lowest slot without one (one read of
//! at most 256 documents unless the hint is far behind); an answer that every slot is held also reads the held
//! document that expires first. The decision is the one [`protocol::acquire`] makes on every document; the
//! acquisition that finds the lowest unused slot above the hint raises the hint (`$max`). `inspect` still reads
//! every document of the namespace.
//!
//! Each operation reads what its decision depends on, applies the rules of [`protocol`], and writes each document
//! it changes with one conditional write: an update whose filter is the `_id` and the `rev` it read (which MongoDB
//! applies atomically on the primary: it matches nothing if another writer got there first), or an insert, which
//! the unique `_id` refuses if the document appeared since the read. A write that matches nothing means another
//! writer got there first: the operation reads again and retries, a bounded number of times with a small jittered
//! pause.
//!
//! - Acquisition writes the namespace record when it creates or upgrades it, then the slot it grants. It does not
//!   lock the other slots or the namespace record it read unchanged: the slot it writes is conditional on the
//!   state its decision was made on, and the other records do not change what that slot may be granted. A
//!   `not_before` raised between its read and its write orders the raise after the acquisition, as it would
//!   have been had the two not overlapped. A try after a lost race takes, as its preferred slot, one of the slots
//!   as good as the lowest at random (see [`common::spread`]). An acquisition that finds the slot already held by its owner writes
//!   that slot's `rev` anyway, so the primary (not a server behind it) confirms the lease.
//! - Renewal and release read the namespace record (its absence while a slot is held is a regression) and write
//!   their slot conditionally.
//!
//! Every write is acknowledged by a majority of the replica set (`w: majority`, a 5 s `wtimeout`) and every read
//! is `readConcern: majority`, unless the URL says otherwise; a URL that weakens the write concern is reported by
//! [`LeaseStore::durability`]. A read never decides alone: a decision read from a server behind the primary, or
//! from a deposed primary, is a write that matches nothing or cannot reach a majority.
//!
//! The store clock is the primary's: the `localTime` of a `hello` answered by the primary, read at the start of
//! each attempt, so that every decision is made on a time no later than the write that carries it.

use super::common::{self, Try};
use super::json_record::{namespace_from_value, namespace_value, slot_from_value, slot_value};
use super::{Finding, Inspection, LeaseStore, StoreError};
use crate::lease::{
    protocol, AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord, SlotLease,
    SlotRecord,
};
use mongodb::bson::{doc, Bson, Document};
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::options::{
    Acknowledgment, ClientOptions, CollectionOptions, ReadConcern, WriteConcern,
};
use mongodb::{Client, Collection, IndexModel};
use std::time::Duration;
use tokio::sync::OnceCell;

const KIND: &str = "mongodb";

/// The collection that holds every record, in the URL's database.
pub const COLLECTION: &str = "cosid_leases";
/// The database when the URL names none.
const DEFAULT_DATABASE: &str = "cosid";
/// How long finding a server to talk to may take, unless the URL says (`serverSelectionTimeoutMS`).
const SERVER_SELECTION_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a majority may take to acknowledge a write before the primary answers that it did not.
const MAJORITY_TIMEOUT: Duration = Duration::from_secs(5);
/// MongoDB's code for a duplicate key.
const DUPLICATE_KEY: i32 = 11000;
/// Server error codes after which the same request may succeed later: a primary stepping down or shutting down,
/// a node not reachable, a write conflict, a time limit (from the server's error codes).
const RETRYABLE_CODES: &[i32] = &[
    6,     // HostUnreachable
    7,     // HostNotFound
    50,    // MaxTimeMSExpired
    64,    // WriteConcernFailed
    89,    // NetworkTimeout
    91,    // ShutdownInProgress
    112,   // WriteConflict
    134,   // ReadConcernMajorityNotAvailableYet
    189,   // PrimarySteppedDown
    262,   // ExceededTimeLimit
    9001,  // SocketException
    10107, // NotWritablePrimary
    11600, // InterruptedAtShutdown
    11602, // InterruptedDueToReplStateChange
    13435, // NotPrimaryNoSecondaryOk
    13436, // NotPrimaryOrSecondary
];

/// Leases in a MongoDB deployment (a replica set, a sharded cluster or a standalone server); the store clock is
/// the primary's. Cloning shares the client.
///
/// Opening parses the URL but does not connect: the first operation does.
#[derive(Clone)]
pub struct MongoStore {
    /// The URL with its password replaced, for messages.
    shown: String,
    options: ClientOptions,
    database: String,
    client: std::sync::Arc<OnceCell<Client>>,
    /// [`UNUSED_WINDOW`] and [`FREE_CANDIDATES`], but for tests.
    window: u32,
    free: i64,
}

impl std::fmt::Debug for MongoStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The options hold the credential: never print them.
        f.debug_struct("MongoStore")
            .field("url", &self.shown)
            .field("database", &self.database)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the server's hello has no localTime: {0}")]
struct NoTime(String);

fn unavailable(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    common::unavailable(KIND, e)
}

/// Whether a client error means "another writer got there first" (a duplicate `_id`).
fn is_duplicate(e: &mongodb::error::Error) -> bool {
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.code == DUPLICATE_KEY,
        ErrorKind::Command(c) => c.code == DUPLICATE_KEY,
        _ => false,
    }
}

/// Maps a client error: no server, a lost connection, a primary that stepped down, a write a majority did not
/// acknowledge in time, is `Unavailable` (the write may or may not have happened: the next attempt reads
/// again); the rest (authentication, bad arguments) is `Generic`.
fn mongo_err(e: mongodb::error::Error) -> StoreError {
    let retryable = e.contains_label("RetryableWriteError")
        || match e.kind.as_ref() {
            ErrorKind::Io(_)
            | ErrorKind::ServerSelection { .. }
            | ErrorKind::ConnectionPoolCleared { .. }
            | ErrorKind::DnsResolve { .. }
            | ErrorKind::Shutdown
            | ErrorKind::Write(WriteFailure::WriteConcernError(_)) => true,
            ErrorKind::Command(c) => RETRYABLE_CODES.contains(&c.code),
            ErrorKind::Write(WriteFailure::WriteError(w)) => RETRYABLE_CODES.contains(&w.code),
            _ => false,
        };
    common::client_error(KIND, e, retryable)
}

fn corrupt(namespace: &Namespace, what: &str, detail: impl Into<String>) -> StoreError {
    common::corrupt(KIND, namespace, what, detail)
}

fn namespace_id(ns: &Namespace) -> String {
    format!("ns/{}", ns.encoded())
}

/// `slot/<encoded>/`: the `_id` of every slot of the namespace starts with it, and no other's.
fn slot_prefix(ns: &Namespace) -> String {
    format!("slot/{}/", ns.encoded())
}

fn slot_id(ns: &Namespace, slot: u32) -> String {
    format!("{}{slot}", slot_prefix(ns))
}

/// `unused/<encoded>`: the document that keeps a namespace's [`UnusedHint`]. It has no `ns` field, so versions
/// that read a namespace's documents by `ns` (and refuse one they do not know) never meet it.
fn unused_id(ns: &Namespace) -> String {
    format!("unused/{}", ns.encoded())
}

/// How many documents each of an acquisition's "lowest free" queries returns: the protocol needs the lowest; the
/// others give a client that lost a race somewhere as good to go (see [`common::spread`]).
const FREE_CANDIDATES: i64 = 8;

/// How many documents one read for the lowest unused slot returns, from the hint on, in slot order. They are
/// read whole and validated: when the hint is current they are the few written above the lowest unused slot
/// (by clients that spread after a lost race, or that asked for a slot).
const UNUSED_WINDOW: u32 = 256;

/// The namespace's `lowest_unused` hint: a slot below which every slot has a document. Slot documents are never
/// deleted, so a value that was true stays true, and it only rises (`$max`, written by the acquisition that finds
/// the first slot without a document above it). A value that is too low costs a longer read; one that is too high
/// (documents deleted by hand) can only make an acquisition pass over a slot never used, and an acquisition that
/// would find the namespace exhausted reads from slot 0 instead.
#[derive(Debug, Clone, Copy, Default)]
struct UnusedHint(u32);

/// A JSON value as BSON: integers as 64-bit integers (the records' numbers are milliseconds and counters, far
/// below 2^63), objects as documents.
fn to_bson(value: serde_json::Value) -> Result<Bson, StoreError> {
    use serde_json::Value;
    Ok(match value {
        Value::Null => Bson::Null,
        Value::Bool(b) => Bson::Boolean(b),
        Value::String(s) => Bson::String(s),
        Value::Number(n) => match n.as_u64().and_then(|n| i64::try_from(n).ok()) {
            Some(n) => Bson::Int64(n),
            None => {
                return Err(StoreError::Generic {
                    store: KIND,
                    source: format!("{n} does not fit a 64-bit signed integer").into(),
                })
            }
        },
        Value::Object(map) => {
            let mut doc = Document::new();
            for (k, v) in map {
                doc.insert(k, to_bson(v)?);
            }
            Bson::Document(doc)
        }
        Value::Array(items) => {
            Bson::Array(items.into_iter().map(to_bson).collect::<Result<_, _>>()?)
        }
    })
}

fn record_document(value: serde_json::Value) -> Result<Document, StoreError> {
    match to_bson(value)? {
        Bson::Document(d) => Ok(d),
        other => Err(StoreError::Generic {
            store: KIND,
            source: format!("a record encoded as {other}, not a document").into(),
        }),
    }
}

/// A stored document with what is not the record (`_id`, `ns`, `slot`, `rev`) taken out, and its `rev`.
fn split_document(
    ns: &Namespace,
    what: &str,
    mut doc: Document,
    slot: Option<u32>,
) -> Result<(serde_json::Value, i64), StoreError> {
    doc.remove("_id");
    match doc.remove("ns") {
        Some(Bson::String(s)) if s == ns.encoded() => {}
        other => {
            return Err(corrupt(
                ns,
                what,
                format!("ns is {other:?}; expected {:?}", ns.encoded()),
            ))
        }
    }
    if let Some(slot) = slot {
        match doc.remove("slot") {
            Some(Bson::Int64(n)) if n == i64::from(slot) => {}
            Some(Bson::Int32(n)) if i64::from(n) == i64::from(slot) => {}
            other => {
                return Err(corrupt(
                    ns,
                    what,
                    format!("slot is {other:?}; expected {slot}"),
                ))
            }
        }
    }
    let rev = match doc.remove("rev") {
        Some(Bson::Int64(n)) if n >= 0 => n,
        Some(Bson::Int32(n)) if n >= 0 => i64::from(n),
        other => {
            return Err(corrupt(
                ns,
                what,
                format!("rev is {other:?}; expected a non-negative integer"),
            ))
        }
    };
    Ok((Bson::Document(doc).into_relaxed_extjson(), rev))
}

/// A namespace's documents as read: each record with the `rev` the read saw.
#[derive(Debug, Default)]
struct Snapshot {
    namespace: Option<(NamespaceRecord, i64)>,
    slots: Vec<(SlotRecord, i64)>,
}

/// The documents an acquisition decides on (see [`MongoStore::read_view`]).
#[derive(Debug)]
struct Candidates {
    /// One per slot, in slot order, each with the `rev` it was read at.
    records: Vec<(SlotRecord, i64)>,
    lowest_unused: Option<u32>,
    /// The slots from `lowest_unused` up to `known` that have a document (the rest of that range has none).
    used: Vec<u32>,
    known: u64,
}

/// One document per slot, in slot order; where two reads saw one at different writes, the later write.
fn one_per_slot(mut records: Vec<(SlotRecord, i64)>) -> Vec<(SlotRecord, i64)> {
    records.sort_by_key(|(r, rev)| (r.slot, std::cmp::Reverse(*rev)));
    records.dedup_by_key(|(r, _)| r.slot);
    records
}

impl Candidates {
    /// Adds documents read since.
    fn add(&mut self, more: Vec<(SlotRecord, i64)>) {
        let mut records = std::mem::take(&mut self.records);
        records.extend(more);
        self.records = one_per_slot(records);
    }

    /// The never-used slots in the spread window past the lowest, of the range read.
    fn never_used(&self, bits: u8, raced: u32) -> Vec<u32> {
        common::never_used(bits, self.lowest_unused, raced, |s| {
            u64::from(s) >= self.known || self.used.binary_search(&s).is_ok()
        })
    }
}

impl MongoStore {
    /// Prepares a client for a `mongodb://` URL (see the module's documentation). Does not connect.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let shown = super::url::redacted(url);
        let invalid = |reason: String| StoreError::InvalidUrl {
            url: shown.clone(),
            reason: super::url::scrub(&reason, url),
        };
        if url.starts_with("mongodb+srv://") {
            return Err(invalid(
                "mongodb+srv:// (DNS seed lists) is not supported: list the hosts, \
                 mongodb://host1:27017,host2:27017/?replicaSet=NAME"
                    .into(),
            ));
        }
        if !url.starts_with("mongodb://") {
            return Err(invalid(
                "expected mongodb://[user:password@]host[:port][,host...][/database][?options]"
                    .into(),
            ));
        }
        let mut options = ClientOptions::parse(url)
            .await
            .map_err(|e| invalid(e.to_string()))?;
        let database = options
            .default_database
            .clone()
            .unwrap_or_else(|| DEFAULT_DATABASE.to_owned());
        options.app_name.get_or_insert_with(|| "cosid".to_owned());
        options
            .server_selection_timeout
            .get_or_insert(SERVER_SELECTION_TIMEOUT);
        options
            .connect_timeout
            .get_or_insert(SERVER_SELECTION_TIMEOUT);
        let concern = options
            .write_concern
            .get_or_insert_with(WriteConcern::default);
        concern.w.get_or_insert(Acknowledgment::Majority);
        concern.w_timeout.get_or_insert(MAJORITY_TIMEOUT);
        options
            .read_concern
            .get_or_insert_with(ReadConcern::majority);
        Ok(Self {
            shown,
            options,
            database,
            client: Default::default(),
            window: UNUSED_WINDOW,
            free: FREE_CANDIDATES,
        })
    }

    /// Reads the documents of `window` slots at a time for the lowest unused slot instead of [`UNUSED_WINDOW`],
    /// and `free` documents in each "lowest free" read instead of [`FREE_CANDIDATES`], so that in a test's small
    /// namespace each document the decision needs is found by the one read meant to find it.
    #[doc(hidden)]
    pub fn with_read_sizes_for_tests(mut self, window: u32, free: i64) -> Self {
        self.window = window.max(1);
        self.free = free.max(1);
        self
    }

    /// The client, made on first use, when the indexes an acquisition reads through are also created (those
    /// missing): the namespace's slots in order, by owner key, by last owner key, and by expiry.
    async fn client(&self) -> Result<&Client, StoreError> {
        self.client
            .get_or_try_init(|| async {
                let client = Client::with_options(self.options.clone()).map_err(mongo_err)?;
                let collection = client
                    .database(&self.database)
                    .collection::<Document>(COLLECTION);
                // One command each: FerretDB 1.x drops the connection when one command names several indexes
                // that exist already.
                for keys in [
                    doc! { "ns": 1, "slot": 1 },
                    doc! { "ns": 1, "owner.key": 1, "slot": 1 },
                    doc! { "ns": 1, "last_owner_key": 1 },
                    doc! { "ns": 1, "expires_at": 1 },
                ] {
                    collection
                        .create_index(IndexModel::builder().keys(keys).build())
                        .await
                        .map_err(mongo_err)?;
                }
                Ok(client)
            })
            .await
    }

    async fn collection(&self) -> Result<Collection<Document>, StoreError> {
        let options = CollectionOptions::builder()
            .write_concern(self.options.write_concern.clone())
            .read_concern(self.options.read_concern.clone())
            .build();
        Ok(self
            .client()
            .await?
            .database(&self.database)
            .collection_with_options(COLLECTION, options))
    }

    /// The primary's clock (ms).
    async fn now(&self) -> Result<u64, StoreError> {
        let reply = self
            .client()
            .await?
            .database(&self.database)
            .run_command(doc! { "hello": 1 })
            .await
            .map_err(mongo_err)?;
        match reply.get("localTime") {
            Some(Bson::DateTime(t)) => u64::try_from(t.timestamp_millis())
                .map_err(|_| unavailable(NoTime(format!("{t} is before 1970")))),
            other => Err(unavailable(NoTime(format!("{other:?}")))),
        }
    }

    /// Runs `attempt` until it is done, reading again after a raced write (see [`common::retrying`]).
    async fn retrying<T, F, Fut>(&self, ns: &Namespace, attempt: F) -> Result<T, StoreError>
    where
        F: FnMut(Collection<Document>) -> Fut + Send,
        Fut: std::future::Future<Output = Result<Try<T>, StoreError>> + Send,
        T: Send,
    {
        let servers = self.shown.clone();
        common::retrying(KIND, &servers, ns, || self.collection(), attempt).await
    }

    /// Runs one operation: bounded in time, and its failures name the deployment.
    async fn bounded<T>(
        &self,
        run: impl std::future::Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        common::bounded(KIND, &self.shown.clone(), run).await
    }

    async fn read_namespace(
        &self,
        c: &Collection<Document>,
        ns: &Namespace,
    ) -> Result<Option<(NamespaceRecord, i64)>, StoreError> {
        let what = "the namespace record";
        let Some(doc) = c
            .find_one(doc! { "_id": namespace_id(ns) })
            .await
            .map_err(mongo_err)?
        else {
            return Ok(None);
        };
        let (value, rev) = split_document(ns, what, doc, None)?;
        Ok(Some((namespace_from_value(KIND, ns, value)?, rev)))
    }

    async fn read_slot(
        &self,
        c: &Collection<Document>,
        ns: &Namespace,
        slot: u32,
    ) -> Result<Option<(SlotRecord, i64)>, StoreError> {
        let Some(doc) = c
            .find_one(doc! { "_id": slot_id(ns, slot) })
            .await
            .map_err(mongo_err)?
        else {
            return Ok(None);
        };
        decode_slot_document(ns, slot, doc).map(Some)
    }

    /// The namespace record and every slot of the namespace: one query on the `ns` index.
    async fn read_all(
        &self,
        c: &Collection<Document>,
        ns: &Namespace,
    ) -> Result<Snapshot, StoreError> {
        let mut cursor = c
            .find(doc! { "ns": ns.encoded() })
            .await
            .map_err(mongo_err)?;
        let (namespace_id, prefix) = (namespace_id(ns), slot_prefix(ns));
        let mut snapshot = Snapshot::default();
        while cursor.advance().await.map_err(mongo_err)? {
            let doc = cursor.deserialize_current().map_err(mongo_err)?;
            let unexpected = |id: &dyn std::fmt::Debug| {
                corrupt(
                    ns,
                    "the namespace's documents",
                    format!("unexpected document {id:?}"),
                )
            };
            let id = match doc.get("_id") {
                Some(Bson::String(id)) => id.clone(),
                other => return Err(unexpected(&other)),
            };
            if id == namespace_id {
                let (value, rev) = split_document(ns, "the namespace record", doc, None)?;
                snapshot.namespace = Some((namespace_from_value(KIND, ns, value)?, rev));
                continue;
            }
            let slot = id
                .strip_prefix(&prefix)
                .and_then(super::json_record::parse_slot)
                .ok_or_else(|| unexpected(&id))?;
            snapshot.slots.push(decode_slot_document(ns, slot, doc)?);
        }
        snapshot.slots.sort_by_key(|(r, _)| r.slot);
        Ok(snapshot)
    }

    /// The slot documents of `ns` that `filter` matches, in `sort` order, at most `limit` of them (0: all).
    async fn find_slots(
        &self,
        c: &Collection<Document>,
        ns: &Namespace,
        mut filter: Document,
        sort: Document,
        limit: i64,
    ) -> Result<Vec<(SlotRecord, i64)>, StoreError> {
        filter.insert("ns", ns.encoded());
        let mut cursor = c
            .find(filter)
            .sort(sort)
            .limit(limit)
            .await
            .map_err(mongo_err)?;
        let prefix = slot_prefix(ns);
        let mut found = Vec::new();
        while cursor.advance().await.map_err(mongo_err)? {
            let doc = cursor.deserialize_current().map_err(mongo_err)?;
            let slot = match doc.get("_id") {
                Some(Bson::String(id)) => id
                    .strip_prefix(&prefix)
                    .and_then(super::json_record::parse_slot),
                _ => None,
            };
            let Some(slot) = slot else {
                return Err(corrupt(
                    ns,
                    "the namespace's documents",
                    format!("unexpected document {:?}", doc.get("_id")),
                ));
            };
            found.push(decode_slot_document(ns, slot, doc)?);
        }
        Ok(found)
    }

    /// The namespace's [`UnusedHint`] (0 when it has none, or one that does not read as a slot number).
    async fn read_hint(
        &self,
        c: &Collection<Document>,
        ns: &Namespace,
    ) -> Result<UnusedHint, StoreError> {
        let doc = c
            .find_one(doc! { "_id": unused_id(ns) })
            .await
            .map_err(mongo_err)?;
        let value = doc.and_then(|d| match d.get("lowest_unused") {
            Some(Bson::Int64(n)) => u32::try_from(*n).ok(),
            Some(Bson::Int32(n)) => u32::try_from(*n).ok(),
            _ => None,
        });
        Ok(UnusedHint(value.unwrap_or(0)))
    }

    /// The lowest slot from `from` on without a document, with the documents read on the way: the next
    /// [`UNUSED_WINDOW`] documents from a slot on, in slot order (one read unless the hint is far behind; a slot
    /// past the namespace's among them is refused when they are validated). Returns the slot (`count` or above
    /// when every slot from `from` on has a document), the documents of the last read, and the slot up to which
    /// that read knows every document.
    async fn first_unused(
        &self,
        c: &Collection<Document>,
        ns: &Namespace,
        from: u32,
        count: u64,
    ) -> Result<(u64, Vec<(SlotRecord, i64)>, u64), StoreError> {
        let mut start = u64::from(from);
        loop {
            let filter = doc! { "slot": { "$gte": start as i64 } };
            let found = self
                .find_slots(c, ns, filter, doc! { "slot": 1 }, i64::from(self.window))
                .await?;
            let run = (start..)
                .zip(found.iter())
                .take_while(|&(s, (r, _))| s == u64::from(r.slot))
                .count() as u64;
            let whole = found.len() < self.window as usize;
            if run < found.len() as u64 || whole || start + run >= count {
                let known = match found.last() {
                    Some((r, _)) if !whole => u64::from(r.slot) + 1,
                    _ => u64::MAX,
                };
                return Ok((start + run, found, known));
            }
            start += run;
        }
    }

    /// What an acquisition decides on (see [`protocol::View`]), read in three or four queries one after another
    /// (sent at once, they made FerretDB stop answering under a storm of acquisitions; docs/performance.md), each
    /// served by the store's indexes (every branch of an `$or` names the namespace): the documents of the owner's
    /// key, as holder or as last holder; the preferred slot's; the lowest free ones (released, or expired before
    /// `now`), among which is the lowest that can start within the tolerance unless all are far ahead (then one
    /// more query reads it); and the documents from `hint` on up to the lowest slot without one
    /// ([`MongoStore::first_unused`]). The held document that expires first matters only to an answer that every
    /// slot is held: [`MongoStore::earliest_expiry`] reads it then.
    async fn read_view(
        &self,
        c: &Collection<Document>,
        ns: &Namespace,
        record: &NamespaceRecord,
        request: &AcquireRequest,
        hint: UnusedHint,
        now: u64,
    ) -> Result<Candidates, StoreError> {
        let key = request.owner.key.as_str();
        let count = 1u64 << record.bits;
        let soon = now.saturating_add(record.tolerance_ms).min(i64::MAX as u64);
        let name = ns.encoded();
        let by_slot = || doc! { "slot": 1 };
        let mine = doc! { "$or": [
            { "ns": &name, "owner.key": key },
            { "ns": &name, "last_owner_key": key },
        ] };
        let free = || {
            doc! { "$or": [
                { "ns": &name, "owner.key": Bson::Null, "slot": { "$gte": 0_i64 } },
                { "ns": &name, "expires_at": { "$lt": now as i64 }, "owner.key": { "$ne": Bson::Null } },
            ] }
        };
        let preferred = async {
            match request.preferred_slot.filter(|&p| u64::from(p) < count) {
                Some(p) => {
                    let filter = doc! { "slot": i64::from(p) };
                    self.find_slots(c, ns, filter, by_slot(), 1).await
                }
                None => Ok(Vec::new()),
            }
        };
        let mine = self.find_slots(c, ns, mine, by_slot(), 0).await?;
        let preferred = preferred.await?;
        let free_lowest = self.find_slots(c, ns, free(), by_slot(), self.free).await?;
        let unused = self.first_unused(c, ns, hint.0, count).await?;
        // The lowest free document that can start within the tolerance: the first such of the lowest free ones
        // read, or, when they were a full read's worth and none can, one more query.
        let ready = |r: &SlotRecord| r.next_floor <= soon;
        let free_ready = if (free_lowest.len() as i64) < self.free
            || free_lowest.iter().any(|(r, _)| ready(r))
        {
            Vec::new()
        } else {
            let mut filter = free();
            filter.insert("next_floor", doc! { "$lte": soon as i64 });
            self.find_slots(c, ns, filter, by_slot(), 1).await?
        };
        let (lowest, window, known) = unused;
        let used = window.iter().map(|(r, _)| r.slot).collect();
        let records: Vec<(SlotRecord, i64)> = [mine, preferred, free_lowest, free_ready, window]
            .into_iter()
            .flatten()
            .collect();
        Ok(Candidates {
            records: one_per_slot(records),
            lowest_unused: (lowest < count).then_some(lowest as u32),
            used,
            known,
        })
    }

    /// The held document of `ns` that expires first (the one an `Exhausted` answer names), if any.
    async fn earliest_expiry(
        &self,
        c: &Collection<Document>,
        ns: &Namespace,
        now: u64,
    ) -> Result<Vec<(SlotRecord, i64)>, StoreError> {
        let held = doc! {
            "slot": { "$gte": 0_i64 },
            "expires_at": { "$gte": now.min(i64::MAX as u64) as i64 },
            "owner.key": { "$ne": Bson::Null },
        };
        self.find_slots(c, ns, held, doc! { "expires_at": 1 }, 1)
            .await
    }

    /// Reads a lease's namespace record and slot, and validates the slot against the namespace's bits.
    async fn read_checked(
        &self,
        c: &Collection<Document>,
        lease: &SlotLease,
    ) -> Result<Option<(SlotRecord, i64)>, StoreError> {
        let ns = &lease.namespace;
        let Some((namespace, _)) = self.read_namespace(c, ns).await? else {
            return Err(protocol::namespace_missing(KIND, lease));
        };
        let record = self.read_slot(c, ns, lease.slot).await?;
        if let Some((r, _)) = &record {
            protocol::validate(KIND, ns, r, namespace.bits)?;
        }
        Ok(record)
    }
}

fn decode_slot_document(
    ns: &Namespace,
    slot: u32,
    doc: Document,
) -> Result<(SlotRecord, i64), StoreError> {
    let (value, rev) = split_document(ns, &format!("slot {slot}"), doc, Some(slot))?;
    Ok((slot_from_value(KIND, ns, slot, value)?, rev))
}

/// Writes `record` (a JSON object) at `id`: an update conditional on `rev` if the document was read, else an
/// insert. `false` when another writer got there first.
async fn put(
    c: &Collection<Document>,
    id: String,
    extra: Document,
    record: serde_json::Value,
    rev: Option<i64>,
) -> Result<bool, StoreError> {
    let mut doc = record_document(record)?;
    doc.extend(extra);
    match rev {
        Some(rev) => {
            doc.insert("rev", rev + 1);
            let result = c
                .update_one(doc! { "_id": &id, "rev": rev }, doc! { "$set": doc })
                .await
                .map_err(mongo_err)?;
            Ok(result.matched_count == 1)
        }
        None => {
            doc.insert("_id", id);
            doc.insert("rev", 1_i64);
            match c.insert_one(doc).await {
                Ok(_) => Ok(true),
                Err(e) if is_duplicate(&e) => Ok(false),
                Err(e) => Err(mongo_err(e)),
            }
        }
    }
}

fn slot_extra(ns: &Namespace, slot: u32) -> Document {
    doc! { "ns": ns.encoded(), "slot": i64::from(slot) }
}

async fn put_slot(
    c: &Collection<Document>,
    ns: &Namespace,
    record: &SlotRecord,
    rev: Option<i64>,
) -> Result<bool, StoreError> {
    put(
        c,
        slot_id(ns, record.slot),
        slot_extra(ns, record.slot),
        slot_value(record),
        rev,
    )
    .await
}

async fn put_namespace(
    c: &Collection<Document>,
    ns: &Namespace,
    record: &NamespaceRecord,
    rev: Option<i64>,
) -> Result<bool, StoreError> {
    put(
        c,
        namespace_id(ns),
        doc! { "ns": ns.encoded() },
        namespace_value(record),
        rev,
    )
    .await
}

#[async_trait::async_trait]
impl LeaseStore for MongoStore {
    fn kind(&self) -> &'static str {
        KIND
    }

    /// Checks that the deployment answers (a `ping`). The collection needs no set-up: the `_id` index is all the
    /// store reads through.
    async fn init(&self) -> Result<(), StoreError> {
        self.bounded(async {
            self.client()
                .await?
                .database(&self.database)
                .run_command(doc! { "ping": 1 })
                .await
                .map_err(mongo_err)?;
            Ok(())
        })
        .await
    }

    /// A write concern weaker than a majority (`w=1`, `journal=false`) lets a failover or a crash lose an
    /// acknowledged lease. FerretDB 1.x applies a conditional update as a read followed by a separate write, so
    /// two writers may both match: it is reported too.
    async fn durability(&self) -> Result<Vec<Finding>, StoreError> {
        let mut findings = Vec::new();
        let concern = self.options.write_concern.clone().unwrap_or_default();
        match &concern.w {
            Some(Acknowledgment::Majority) | None => {}
            Some(other) => findings.push(Finding {
                store: KIND,
                setting: "w".into(),
                value: match other {
                    Acknowledgment::Nodes(n) => n.to_string(),
                    Acknowledgment::Custom(s) => s.clone(),
                    _ => format!("{other:?}"),
                },
                expected: "majority".into(),
            }),
        }
        if concern.journal == Some(false) {
            findings.push(Finding {
                store: KIND,
                setting: "journal".into(),
                value: "false".into(),
                expected: "true".into(),
            });
        }
        let info = self
            .bounded(async {
                self.client()
                    .await?
                    .database(&self.database)
                    .run_command(doc! { "buildInfo": 1 })
                    .await
                    .map_err(mongo_err)
            })
            .await?;
        if let Ok(version) = info.get_str("ferretdbVersion") {
            if version.trim_start_matches('v').starts_with("1.") {
                findings.push(Finding {
                    store: KIND,
                    setting: "server".into(),
                    value: format!("FerretDB {version} (its conditional updates are not atomic)"),
                    expected: "MongoDB".into(),
                });
            }
        }
        Ok(findings)
    }

    async fn acquire(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        request: &AcquireRequest,
    ) -> Result<Acquired, StoreError> {
        let tries = &std::sync::atomic::AtomicU32::new(0);
        self.retrying(namespace, |c| async move {
            let raced = tries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let (now, stored, hint) = tokio::try_join!(
                self.now(),
                self.read_namespace(&c, namespace),
                self.read_hint(&c, namespace),
            )?;
            let ns_rev = stored.as_ref().map(|(_, rev)| *rev);
            let stored = stored.map(|(r, _)| r);
            let record = protocol::check_namespace(namespace, stored, config)?;
            let mut view = self
                .read_view(&c, namespace, &record, request, hint, now)
                .await?;
            let decide = |view: &Candidates, request: &AcquireRequest| {
                let slots: Vec<SlotRecord> = view.records.iter().map(|(r, _)| r.clone()).collect();
                for s in &slots {
                    protocol::validate(KIND, namespace, s, record.bits)?;
                }
                let decided = protocol::View {
                    records: &slots,
                    lowest_unused: view.lowest_unused,
                };
                protocol::acquire_in(namespace, &record, &decided, request, now).map(|g| (g, slots))
            };
            let (grant, slots) = match decide(&view, request) {
                Err(StoreError::Exhausted { .. }) => {
                    // Documents deleted by hand leave the hint too high: before answering that every slot is
                    // held, look for slots without a document from slot 0. The answer names the held document
                    // that expires first: read it too.
                    if hint.0 > 0 {
                        view = self
                            .read_view(&c, namespace, &record, request, UnusedHint(0), now)
                            .await?;
                    }
                    view.add(self.earliest_expiry(&c, namespace, now).await?);
                    decide(&view, request)?
                }
                decided => decided?,
            };
            // After a lost race, another slot as good as the lowest (clients started together all choose the
            // lowest, and one of them wins each round).
            let key = request.owner.key.as_str();
            let grant = match &grant.write {
                Some(w) if raced > 0 && request.preferred_slot.is_none() => {
                    let never_used = view.never_used(record.bits, raced);
                    match common::spread(
                        w.slot,
                        common::as_good(&record, &slots, key, now, never_used),
                    ) {
                        Some(other) => {
                            let request = AcquireRequest {
                                preferred_slot: Some(other),
                                ..request.clone()
                            };
                            decide(&view, &request)?.0
                        }
                        None => grant,
                    }
                }
                _ => grant,
            };
            let rev_of = |slot: u32| {
                view.records
                    .iter()
                    .find(|(r, _)| r.slot == slot)
                    .map(|(_, rev)| *rev)
            };
            if stored != Some(record) && !put_namespace(&c, namespace, &record, ns_rev).await? {
                return Ok(Try::Raced);
            }
            // Every slot below the lowest unused one the read found has a document: the hint rises to it. A
            // hint is not worth failing an acquisition for (a lost write leaves the next read a little longer).
            let rises = view.lowest_unused.map_or(1u64 << record.bits, u64::from);
            let raise_hint = async {
                if rises > u64::from(hint.0) {
                    let _ = c
                        .update_one(
                            doc! { "_id": unused_id(namespace) },
                            doc! { "$max": { "lowest_unused": rises as i64 } },
                        )
                        .upsert(true)
                        .await;
                }
            };
            let write = async {
                match &grant.write {
                    Some(w) => {
                        let written = put_slot(&c, namespace, w, rev_of(w.slot)).await?;
                        if !written && rev_of(w.slot).is_none() {
                            // The insert met a document the read did not see: one created since, or one whose
                            // `ns` does not say this namespace (refused here as corrupt, never taken for absent).
                            self.read_slot(&c, namespace, w.slot).await?;
                        }
                        Ok(written)
                    }
                    None => {
                        // The owner already holds a slot (a retried acquisition): confirm on the primary that it
                        // is still as read, by raising its rev.
                        let held = grant.acquired.lease.slot;
                        match rev_of(held) {
                            Some(rev) => {
                                let result = c
                                    .update_one(
                                        doc! { "_id": slot_id(namespace, held), "rev": rev },
                                        doc! { "$set": { "rev": rev + 1 } },
                                    )
                                    .await
                                    .map_err(mongo_err)?;
                                Ok(result.matched_count == 1)
                            }
                            None => Ok(false),
                        }
                    }
                }
            };
            let ((), written) = tokio::join!(raise_hint, write);
            let written: bool = written?;
            Ok(if written {
                Try::Done(grant.acquired)
            } else {
                Try::Raced
            })
        })
        .await
    }

    async fn renew(
        &self,
        lease: &SlotLease,
        ttl_ms: u64,
        tolerance_ms: u64,
    ) -> Result<SlotLease, StoreError> {
        self.retrying(&lease.namespace, |c| async move {
            let now = self.now().await?;
            let current = self.read_checked(&c, lease).await?;
            let (record, renewed) = protocol::renew(
                KIND,
                current.as_ref().map(|(r, _)| r),
                lease,
                ttl_ms,
                tolerance_ms,
                now,
            )?;
            let rev = current.map(|(_, rev)| rev);
            Ok(if put_slot(&c, &lease.namespace, &record, rev).await? {
                Try::Done(renewed)
            } else {
                Try::Raced
            })
        })
        .await
    }

    async fn release(&self, lease: &SlotLease, last_issued: Option<u64>) -> Result<(), StoreError> {
        self.retrying(&lease.namespace, |c| async move {
            let current = self.read_checked(&c, lease).await?;
            let record =
                protocol::release(KIND, current.as_ref().map(|(r, _)| r), lease, last_issued)?;
            let rev = current.map(|(_, rev)| rev);
            Ok(if put_slot(&c, &lease.namespace, &record, rev).await? {
                Try::Done(())
            } else {
                Try::Raced
            })
        })
        .await
    }

    async fn inspect(&self, namespace: &Namespace) -> Result<Inspection, StoreError> {
        self.retrying(namespace, |c| async move {
            let store_now = self.now().await?;
            let snapshot = self.read_all(&c, namespace).await?;
            Ok(Try::Done(Inspection {
                namespace: snapshot.namespace.map(|(r, _)| r),
                slots: snapshot.slots.into_iter().map(|(r, _)| r).collect(),
                store_now,
            }))
        })
        .await
    }

    async fn raise_not_before(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        not_before: u64,
    ) -> Result<NamespaceRecord, StoreError> {
        self.retrying(namespace, |c| async move {
            let stored = self.read_namespace(&c, namespace).await?;
            let rev = stored.as_ref().map(|(_, rev)| *rev);
            let record =
                protocol::raise_not_before(namespace, stored.map(|(r, _)| r), config, not_before)?;
            Ok(if put_namespace(&c, namespace, &record, rev).await? {
                Try::Done(record)
            } else {
                Try::Raced
            })
        })
        .await
    }
}
