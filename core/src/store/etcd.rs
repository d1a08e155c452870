//! etcd v3 (`etcd://host:port[,host:port...]`): leases as keys, changed by transactions that compare revisions.
//!
//! A namespace's records live under one prefix, `cosid/<encoded name>/`: the namespace record at `ns` and each
//! slot at `slot/<n>`, as JSON. The encoded name has no `/`, so no namespace's prefix is a prefix of another's.
//!
//! Each operation reads what its decision depends on (at one revision), applies the rules of [`protocol`], and
//! writes with one transaction that succeeds only if nothing it read has changed:
//!
//! - acquisition reads the acquire index (`i/`, see [`index`]) and the few records it names, at one revision, and
//!   compares the namespace record, the index's state, the slot it writes, and that no record of the same owner
//!   key appeared since (so one owner never gets two slots at once). While a namespace's index is being built it
//!   reads every record instead and compares that no record changed since the read;
//! - renewal and release compare the mod revision of the namespace record and of their slot;
//! - every write of a slot record writes that record's index keys with it.
//! - `raise_not_before` compares the namespace record (or that it is still absent).
//!
//! A failed compare means another writer got there first: the operation reads again and retries, a bounded number
//! of times with a small jittered pause. No key has a lease (TTL): expiry is data, decided by the protocol.
//!
//! The client speaks etcd's JSON gateway on the client port (the `wire` module): the gRPC API's messages over
//! HTTP/1.1.
//!
//! etcd has no clock of its own that clients can read, so the store clock is the caller's [`Clock`]. Safety does
//! not depend on it; availability (when a lease expires) depends on the hosts' clocks agreeing within `tolerance`.

use super::common::{self, Try};
use super::{Inspection, LeaseStore, StoreError};
use crate::clock::Clock;
use crate::lease::{
    protocol, AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord, SlotLease,
    SlotRecord,
};
use std::collections::BTreeMap;
use wire::{
    Client, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, GetResponse, KeyValue,
    KvClient, Txn, TxnOp, TxnOpResponse,
};

mod index;
mod wire;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OnceCell;

const KIND: &str = "etcd";

/// The root of every key this store writes.
const ROOT: &str = "cosid/";
/// How long one request to etcd may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest reply a range over one namespace may be (2^bits records of a few hundred bytes).
const MAX_REPLY_BYTES: usize = 256 << 20;

/// Leases in an etcd v3 cluster; the store clock is the given clock. Cloning shares the connection.
///
/// Opening does not connect: the first operation does. Endpoints are `host:port`; the first may carry
/// `user:password@` for etcd's authentication.
#[derive(Clone)]
pub struct EtcdStore {
    endpoints: Vec<String>,
    options: ConnectOptions,
    client: Arc<OnceCell<Client>>,
    clock: Arc<dyn Clock>,
}

/// gRPC status codes that mean "try again" (numbers from the gRPC spec).
const RETRYABLE_GRPC_CODES: &[i32] = &[
    1,  // CANCELLED
    2,  // UNKNOWN
    4,  // DEADLINE_EXCEEDED
    8,  // RESOURCE_EXHAUSTED
    10, // ABORTED
    13, // INTERNAL
    14, // UNAVAILABLE
];

/// Maps a client error: transport failures (timeouts among them), HTTP 5xx with no status of etcd's, and transient
/// statuses are `Unavailable`, the rest `Generic`.
fn etcd_err(e: wire::Error) -> StoreError {
    use wire::Error as E;
    let retryable = match &e {
        E::Transport(_) => true,
        E::Http { status, .. } => *status >= 500,
        E::GRpcStatus(s) => {
            RETRYABLE_GRPC_CODES.contains(&s.code())
                // An acquisition reads the records at the revision of its index read: a compaction in between
                // makes that revision unreadable, and reading again is the answer.
                || (s.code() == 11 && s.message().contains("compacted")) // OUT_OF_RANGE
        }
        _ => false,
    };
    common::client_error(KIND, e, retryable)
}

fn corrupt(namespace: &Namespace, what: &str, detail: impl Into<String>) -> StoreError {
    common::corrupt(KIND, namespace, what, detail)
}

/// `cosid/<encoded>/`: every key of the namespace, and no key of any other.
pub(crate) fn prefix(ns: &Namespace) -> String {
    format!("{ROOT}{}/", ns.encoded())
}

fn namespace_key(ns: &Namespace) -> String {
    format!("{}ns", prefix(ns))
}

fn slot_key(ns: &Namespace, slot: u32) -> String {
    format!("{}slot/{slot}", prefix(ns))
}

use super::json_record::{encode_namespace, encode_slot, parse_slot};

fn decode_namespace(ns: &Namespace, raw: &[u8]) -> Result<NamespaceRecord, StoreError> {
    super::json_record::decode_namespace(KIND, ns, raw)
}

fn decode_slot(ns: &Namespace, slot: u32, raw: &[u8]) -> Result<SlotRecord, StoreError> {
    super::json_record::decode_slot(KIND, ns, slot, raw)
}

/// A namespace's records as read at one revision.
#[derive(Debug, Default)]
struct Snapshot {
    /// The revision of the read.
    revision: i64,
    namespace: Option<(NamespaceRecord, i64)>,
    /// Slot records with their mod revisions.
    slots: Vec<(SlotRecord, i64)>,
}

fn decode_all(ns: &Namespace, kvs: &[KeyValue], revision: i64) -> Result<Snapshot, StoreError> {
    let prefix = prefix(ns);
    let mut snapshot = Snapshot {
        revision,
        ..Snapshot::default()
    };
    for kv in kvs {
        let rest = kv.key().strip_prefix(prefix.as_bytes()).unwrap_or(kv.key());
        let rest = String::from_utf8_lossy(rest);
        if rest.starts_with("i/") {
            // The acquire index: not records.
            continue;
        }
        if rest == "ns" {
            snapshot.namespace = Some((decode_namespace(ns, kv.value())?, kv.mod_revision()));
        } else if let Some(slot) = rest.strip_prefix("slot/").and_then(parse_slot) {
            snapshot
                .slots
                .push((decode_slot(ns, slot, kv.value())?, kv.mod_revision()));
        } else {
            return Err(corrupt(
                ns,
                "the namespace's keys",
                format!(
                    "unexpected key {:?} under {prefix:?}",
                    String::from_utf8_lossy(kv.key())
                ),
            ));
        }
    }
    snapshot.slots.sort_by_key(|(r, _)| r.slot);
    Ok(snapshot)
}

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The options hold the password: never print them.
        f.debug_struct("EtcdStore")
            .field("endpoints", &self.endpoints)
            .field("connected", &self.client.initialized())
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

/// A compare that holds while `key` is as it was read: same mod revision, or still absent.
fn unchanged(key: &str, mod_revision: Option<i64>) -> Compare {
    match mod_revision {
        Some(rev) => Compare::mod_revision(key, CompareOp::Equal, rev),
        None => Compare::version(key, CompareOp::Equal, 0),
    }
}

impl EtcdStore {
    /// Prepares a client for `endpoints` (`host:port`, the first optionally `user:password@host:port`); the store
    /// clock is `clock`. Does not connect.
    pub async fn open(endpoints: &[String], clock: Arc<dyn Clock>) -> Result<Self, StoreError> {
        let given = format!("etcd://{}", endpoints.join(","));
        let invalid = |reason: String| StoreError::InvalidUrl {
            url: super::url::redacted(&given),
            reason: super::url::scrub(&reason, &given),
        };
        let mut options = ConnectOptions::new()
            .with_connect_timeout(REQUEST_TIMEOUT)
            .with_timeout(REQUEST_TIMEOUT)
            .with_require_leader(true);
        let mut hosts = Vec::with_capacity(endpoints.len());
        for (i, endpoint) in endpoints.iter().enumerate() {
            let host = match endpoint.rsplit_once('@') {
                Some((userinfo, host)) if i == 0 => {
                    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                    let decode = |s: &str| {
                        percent_encoding::percent_decode_str(s)
                            .decode_utf8()
                            .map(|s| s.into_owned())
                            .map_err(|_| invalid("the credentials are not UTF-8 once percent-decoded".into()))
                    };
                    options = options.with_user(decode(user)?, decode(password)?);
                    host
                }
                Some(_) => {
                    return Err(invalid(format!(
                        "credentials are accepted on the first endpoint only, found them in endpoint {}",
                        i + 1
                    )))
                }
                None => endpoint.as_str(),
            };
            let valid = host
                .rsplit_once(':')
                .is_some_and(|(h, port)| !h.is_empty() && port.parse::<u16>().is_ok());
            if !valid {
                return Err(invalid(format!("endpoint {host:?} is not host:port")));
            }
            hosts.push(host.to_owned());
        }
        if hosts.is_empty() {
            return Err(invalid(
                "no endpoint: expected etcd://host:port[,host:port]".into(),
            ));
        }
        Ok(Self {
            endpoints: hosts,
            options,
            client: Arc::default(),
            clock,
        })
    }

    /// A KV client, connecting first if no connection was made yet.
    async fn kv(&self) -> Result<KvClient, StoreError> {
        let client = self
            .client
            .get_or_try_init(|| Client::connect(&self.endpoints, Some(self.options.clone())))
            .await
            .map_err(etcd_err)?;
        Ok(client
            .kv_client()
            .max_decoding_message_size(MAX_REPLY_BYTES))
    }

    /// Runs `attempt` until it is done, reading again after a raced write (see [`common::retrying`]).
    async fn retrying<T, F, Fut>(&self, ns: &Namespace, attempt: F) -> Result<T, StoreError>
    where
        F: FnMut(KvClient) -> Fut + Send,
        Fut: std::future::Future<Output = Result<Try<T>, StoreError>> + Send,
        T: Send,
    {
        let servers = self.endpoints.join(",");
        common::retrying(KIND, &servers, ns, || self.kv(), attempt).await
    }

    /// Runs one operation: bounded in time, and its failures name the cluster.
    async fn bounded<T>(
        &self,
        run: impl std::future::Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        common::bounded(KIND, &self.endpoints.join(","), run).await
    }
}

/// Reads every record of the namespace at one revision.
async fn read_all(kv: &mut KvClient, ns: &Namespace) -> Result<Snapshot, StoreError> {
    let resp = kv
        .get(prefix(ns), Some(GetOptions::new().with_prefix()))
        .await
        .map_err(etcd_err)?;
    let revision = resp.header().map_or(0, |h| h.revision());
    decode_all(ns, resp.kvs(), revision)
}

/// Runs `gets` as one transaction, so at one revision: their answers in order, and that revision.
async fn read_many(
    kv: &mut KvClient,
    gets: Vec<TxnOp>,
) -> Result<(Vec<GetResponse>, i64), StoreError> {
    let asked = gets.len();
    let resp = kv.txn(Txn::new().and_then(gets)).await.map_err(etcd_err)?;
    let revision = resp.header().map_or(0, |h| h.revision());
    let answers: Vec<GetResponse> = resp
        .op_responses()
        .into_iter()
        .filter_map(|op| match op {
            TxnOpResponse::Get(get) => Some(get),
            _ => None,
        })
        .collect();
    if answers.len() != asked {
        return Err(StoreError::Generic {
            store: KIND,
            source: format!(
                "expected {asked} answers to a read of {asked} keys, got {}",
                answers.len()
            )
            .into(),
        });
    }
    Ok((answers, revision))
}

/// Reads the namespace record and one slot at one revision.
async fn read_slot(
    kv: &mut KvClient,
    ns: &Namespace,
    slot: u32,
) -> Result<(Option<(NamespaceRecord, i64)>, Option<(SlotRecord, i64)>), StoreError> {
    let gets = vec![
        TxnOp::get(namespace_key(ns), None),
        TxnOp::get(slot_key(ns, slot), None),
    ];
    let (answers, _) = read_many(kv, gets).await?;
    let namespace = answers[0]
        .kvs()
        .first()
        .map(|kv| decode_namespace(ns, kv.value()).map(|r| (r, kv.mod_revision())))
        .transpose()?;
    let record = answers[1]
        .kvs()
        .first()
        .map(|kv| decode_slot(ns, slot, kv.value()).map(|r| (r, kv.mod_revision())))
        .transpose()?;
    Ok((namespace, record))
}

/// Reads a lease's namespace and slot, and validates the slot against the namespace's bits.
async fn read_checked(
    kv: &mut KvClient,
    lease: &SlotLease,
) -> Result<((NamespaceRecord, i64), Option<(SlotRecord, i64)>), StoreError> {
    let ns = &lease.namespace;
    let (namespace, record) = read_slot(kv, ns, lease.slot).await?;
    let Some(namespace) = namespace else {
        return Err(protocol::namespace_missing(KIND, lease));
    };
    if let Some((r, _)) = &record {
        protocol::validate(KIND, ns, r, namespace.0.bits)?;
    }
    Ok((namespace, record))
}

/// Commits `puts` if `compares` still hold.
async fn commit(
    kv: &mut KvClient,
    compares: Vec<Compare>,
    puts: Vec<(String, Vec<u8>)>,
) -> Result<bool, StoreError> {
    let ops: Vec<TxnOp> = puts
        .into_iter()
        .map(|(k, v)| TxnOp::put(k, v, None))
        .collect();
    let resp = kv
        .txn(Txn::new().when(compares).and_then(ops))
        .await
        .map_err(etcd_err)?;
    Ok(resp.succeeded())
}

/// Writes one slot of a lease, and its index keys, if the namespace record and the slot are as they were read
/// (`current`).
async fn write_lease_slot(
    kv: &mut KvClient,
    lease: &SlotLease,
    namespace_revision: i64,
    current: Option<&(SlotRecord, i64)>,
    record: &SlotRecord,
) -> Result<bool, StoreError> {
    let ns = &lease.namespace;
    let key = slot_key(ns, lease.slot);
    let compares = vec![
        unchanged(&namespace_key(ns), Some(namespace_revision)),
        unchanged(&key, current.map(|(_, rev)| *rev)),
    ];
    let mut ops = vec![TxnOp::put(key, encode_slot(record), None)];
    ops.extend(index::reindex(ns, current.map(|(r, _)| r), record));
    commit_ops(kv, compares, ops).await
}

/// Runs `ops` if `compares` still hold.
async fn commit_ops(
    kv: &mut KvClient,
    compares: Vec<Compare>,
    ops: Vec<TxnOp>,
) -> Result<bool, StoreError> {
    let resp = kv
        .txn(Txn::new().when(compares).and_then(ops))
        .await
        .map_err(etcd_err)?;
    Ok(resp.succeeded())
}

/// How many times one acquisition attempt may sweep, repair or build the index before it counts as raced.
const STEPS: usize = 64;
/// How many expired leases one transaction moves from `held` to `free`.
const SWEEP: i64 = 32;
/// How many free entries an acquisition reads at a time.
const FREE_PAGE: i64 = 4;
/// How many slots past `hw` an acquisition reads, to move `hw` past them when it takes that slot.
const HW_AHEAD: u32 = 4;
/// How many slots a walk past an overtaken `hw` reads at a time.
const HW_WALK: u32 = 64;
/// How long a client building a namespace's index holds it before another may take the build over.
const BUILD_MS: u64 = 60_000;
/// How many records one transaction of a build indexes (three keys each, within etcd's default of 128 writes).
const BUILD_CHUNK: usize = 32;

/// What one step of an acquisition ends with.
enum Step {
    Done(Acquired),
    /// The write's compares failed: pause, then read again.
    Raced,
    /// The index was changed (swept, repaired, built): read again at once.
    Again,
}

/// The first record of a get, decoded, with its mod revision.
fn slot_answer(
    ns: &Namespace,
    slot: u32,
    get: &GetResponse,
) -> Result<Option<(SlotRecord, i64)>, StoreError> {
    get.kvs()
        .first()
        .map(|kv| decode_slot(ns, slot, kv.value()).map(|r| (r, kv.mod_revision())))
        .transpose()
}

/// A range read of every key beginning with `key`, at `revision` (0: the newest).
fn range(key: &str, limit: i64, revision: i64) -> TxnOp {
    TxnOp::get(
        key,
        Some(
            GetOptions::new()
                .with_prefix()
                .with_limit(limit)
                .with_revision(revision),
        ),
    )
}

/// Reads `slots`' records at `revision`, validated against `bits`.
async fn read_records(
    kv: &mut KvClient,
    ns: &Namespace,
    slots: &[u32],
    revision: i64,
    bits: u8,
) -> Result<BTreeMap<u32, (SlotRecord, i64)>, StoreError> {
    let gets = slots
        .iter()
        .map(|&s| {
            TxnOp::get(
                slot_key(ns, s),
                Some(GetOptions::new().with_revision(revision)),
            )
        })
        .collect();
    let (answers, _) = read_many(kv, gets).await?;
    let mut records = BTreeMap::new();
    for (&slot, get) in slots.iter().zip(&answers) {
        if let Some((r, rev)) = slot_answer(ns, slot, get)? {
            protocol::validate(KIND, ns, &r, bits)?;
            records.insert(slot, (r, rev));
        }
    }
    Ok(records)
}

/// The slots named by the entries of a range read.
fn entry_slots(get: &GetResponse) -> Vec<(String, u32)> {
    get.kvs()
        .iter()
        .filter_map(|kv| {
            index::slot_of(kv.key()).map(|s| (String::from_utf8_lossy(kv.key()).into_owned(), s))
        })
        .collect()
}

/// One attempt at an acquisition on the index: read it and the records it names at one revision, keep it right
/// (sweep expired leases, repair an entry a record contradicts, build it for a namespace that has none), decide by
/// [`protocol::acquire_in`], and write the granted slot with its index keys.
async fn acquire_step(
    kv: &mut KvClient,
    namespace: &Namespace,
    config: &NamespaceConfig,
    request: &AcquireRequest,
    now: u64,
    raced: u32,
) -> Result<Step, StoreError> {
    let key = &request.owner.key;
    let (probe, revision) = read_many(
        kv,
        vec![
            TxnOp::get(namespace_key(namespace), None),
            TxnOp::get(index::state(namespace), None),
            TxnOp::get(index::hw(namespace), None),
            range(&index::owner_dir(namespace, key), 0, 0),
            range(&index::last_dir(namespace, key), 0, 0),
            range(&index::free_dir(namespace), FREE_PAGE, 0),
            TxnOp::get(
                index::held_dir(namespace),
                Some(
                    GetOptions::new()
                        .with_range(index::held(namespace, now, 0))
                        .with_limit(SWEEP)
                        .with_keys_only(),
                ),
            ),
        ],
    )
    .await?;
    let state = probe[1].kvs().first();
    match state.map(|kv| kv.value()) {
        Some(v) if v == index::READY.as_bytes() => {}
        Some(v) if building_until(v).is_some_and(|until| until > now) => {
            // Another client is building the index: decide on every record meanwhile.
            return acquire_reading_every_record(kv, namespace, config, request, now).await;
        }
        _ => {
            build_index(kv, namespace, now, state.map(|kv| kv.mod_revision())).await?;
            return Ok(Step::Again);
        }
    }
    let state_rev = state.map_or(0, |kv| kv.mod_revision());
    if !probe[6].kvs().is_empty() {
        sweep(kv, namespace, probe[6].kvs()).await?;
        return Ok(Step::Again);
    }

    let stored = probe[0]
        .kvs()
        .first()
        .map(|kv| decode_namespace(namespace, kv.value()).map(|r| (r, kv.mod_revision())))
        .transpose()?;
    let record = protocol::check_namespace(namespace, stored.map(|(r, _)| r), config)?;
    let count = 1u64 << record.bits;
    let in_range = |s: u32| u64::from(s) < count;
    let hw_entry = probe[2].kvs().first();
    let hw = match hw_entry.map(|kv| kv.value()) {
        Some(b"none") => None,
        Some(v) => std::str::from_utf8(v)
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
            .filter(|&s| in_range(s)),
        None => Some(0),
    };
    let hw_rev = hw_entry.map(|kv| kv.mod_revision());
    let owned = entry_slots(&probe[3]);
    let sticky = entry_slots(&probe[4]);
    let mut free = entry_slots(&probe[5]);
    let mut more_free = probe[5].more();

    let mut wanted: Vec<u32> = owned
        .iter()
        .chain(&sticky)
        .chain(&free)
        .map(|(_, s)| *s)
        .chain(request.preferred_slot.filter(|&s| in_range(s)))
        .chain(
            hw.into_iter()
                .flat_map(|h| (h..=h.saturating_add(HW_AHEAD)).filter(|&s| in_range(s))),
        )
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut records = read_records(kv, namespace, &wanted, revision, record.bits).await?;

    // Every entry read must agree with its record; one that does not is repaired, then everything is read again.
    let is_free = |r: &SlotRecord| r.owner.is_none() || r.expires_at < now;
    let stale = owned
        .iter()
        .find(|(_, s)| {
            records
                .get(s)
                .is_none_or(|(r, _)| r.owner.as_ref().is_none_or(|o| &o.key != key))
        })
        .or_else(|| {
            sticky.iter().find(|(_, s)| {
                records
                    .get(s)
                    .is_none_or(|(r, _)| r.last_owner_key.as_ref() != Some(key))
            })
        })
        .or_else(|| {
            free.iter()
                .find(|(_, s)| records.get(s).is_none_or(|(r, _)| !is_free(r)))
        });
    if let Some((bad, slot)) = stale {
        repair(kv, namespace, bad, *slot, records.get(slot), now).await?;
        return Ok(Step::Again);
    }
    // `hw` is the lowest slot with no record as its last writer saw it: slots just past it may have been taken since
    // (by acquisitions that picked past it after a lost race, a preferred slot, a client of an earlier version).
    // The lowest unused slot is the first slot from `hw` on that has no record: among those already read, else
    // found by reading keys further on. Only the acquisition that takes it writes `hw`, so walking past an
    // overtaken `hw` writes nothing that others would race on.
    let unused = match hw {
        Some(h) => match (h..=h.saturating_add(HW_AHEAD))
            .filter(|&s| in_range(s))
            .find(|s| !records.contains_key(s))
        {
            Some(s) => Some(s),
            None => {
                first_unused(
                    kv,
                    namespace,
                    h.saturating_add(HW_AHEAD + 1),
                    count,
                    revision,
                )
                .await?
            }
        },
        None => None,
    };
    // After a lost race, one more slot past it: one with no record, at random in a window that widens with each
    // lost race.
    let pick = match unused {
        Some(u) if raced > 0 => {
            let window = common::spread_window(raced);
            let past: Vec<u32> = (u.saturating_add(1)..u.saturating_add(window))
                .filter(|&s| in_range(s) && !records.contains_key(&s))
                .collect();
            let free_ones = never_used_among(kv, namespace, &past, revision).await?;
            (!free_ones.is_empty()).then(|| free_ones[rand::random_range(0..free_ones.len())])
        }
        _ => None,
    };

    // The lowest free record that can start within the tolerance may lie past the first page of free entries.
    let soon = now.saturating_add(record.tolerance_ms);
    let ready = |r: &SlotRecord| r.next_floor.max(record.not_before) <= soon;
    while more_free
        && record.not_before <= soon
        && !free.iter().any(|(_, s)| ready(&records[s].0))
        && free
            .last()
            .is_some_and(|(_, s)| unused.is_none_or(|h| *s < h))
    {
        let after = format!("{}\0", free.last().map_or("", |(k, _)| k));
        let (page, _) = read_many(
            kv,
            vec![TxnOp::get(
                after,
                Some(
                    GetOptions::new()
                        .with_range(index::prefix_end(&index::free_dir(namespace)))
                        .with_limit(64)
                        .with_revision(revision),
                ),
            )],
        )
        .await?;
        more_free = page[0].more();
        let next = entry_slots(&page[0]);
        if next.is_empty() {
            break;
        }
        let slots: Vec<u32> = next.iter().map(|(_, s)| *s).collect();
        let read = read_records(kv, namespace, &slots, revision, record.bits).await?;
        if let Some((bad, slot)) = next
            .iter()
            .find(|(_, s)| read.get(s).is_none_or(|(r, _)| !is_free(r)))
        {
            repair(kv, namespace, bad, *slot, read.get(slot), now).await?;
            return Ok(Step::Again);
        }
        records.extend(read);
        free = next;
    }

    let mut view: Vec<SlotRecord> = records.values().map(|(r, _)| r.clone()).collect();
    let decided = protocol::acquire_in(
        namespace,
        &record,
        &protocol::View {
            records: &view,
            lowest_unused: unused,
        },
        request,
        now,
    );
    let grant = match decided {
        Err(StoreError::Exhausted { .. }) => {
            // Exhausted names the earliest expiry: the first held entry's record decides it.
            let (first, _) =
                read_many(kv, vec![range(&index::held_dir(namespace), 1, revision)]).await?;
            if let Some(kv_entry) = first[0].kvs().first() {
                let entry = String::from_utf8_lossy(kv_entry.key()).into_owned();
                let slot = index::slot_of(kv_entry.key()).unwrap_or(0);
                let read = read_records(kv, namespace, &[slot], revision, record.bits).await?;
                let agrees = read.get(&slot).is_some_and(|(r, _)| {
                    r.owner.is_some()
                        && Some(r.expires_at) == index::expiry_of(namespace, kv_entry.key())
                });
                if !agrees {
                    repair(kv, namespace, &entry, slot, read.get(&slot), now).await?;
                    return Ok(Step::Again);
                }
                view.extend(read.into_values().map(|(r, _)| r));
            }
            let decided = protocol::acquire_in(
                namespace,
                &record,
                &protocol::View {
                    records: &view,
                    lowest_unused: unused,
                },
                request,
                now,
            );
            match decided {
                Err(exhausted @ StoreError::Exhausted { .. }) => {
                    // The index says no slot is unused or free: check that against every record before refusing
                    // (`hw` at `none` and free entries gone, as after records deleted by hand, refused for good).
                    // When it lied, rebuild it and decide again on the rebuilt one.
                    let snapshot = read_all(kv, namespace).await?;
                    let slots: Vec<SlotRecord> =
                        snapshot.slots.iter().map(|(r, _)| r.clone()).collect();
                    for r in &slots {
                        protocol::validate(KIND, namespace, r, record.bits)?;
                    }
                    if protocol::acquire(namespace, &record, &slots, request, now).is_err() {
                        return Err(exhausted);
                    }
                    tracing::warn!(namespace = %namespace,
                        "cosid: the etcd acquire index said no slot is free, which the records deny; it is rebuilt");
                    build_index(kv, namespace, now, Some(state_rev)).await?;
                    return Ok(Step::Again);
                }
                other => other?,
            }
        }
        other => other?,
    };
    let grant = match &grant.write {
        Some(w) if raced > 0 && request.preferred_slot.is_none() => {
            let ready_free: Vec<u32> = free
                .iter()
                .map(|(_, s)| *s)
                .filter(|s| {
                    let r = &records[s].0;
                    ready(r) && r.last_owner_key.as_ref() != Some(key)
                })
                .collect();
            let never_used = unused
                .into_iter()
                .chain(pick)
                .filter(|s| !records.contains_key(s));
            match common::spread(w.slot, ready_free.into_iter().chain(never_used).collect()) {
                Some(other) => {
                    let request = AcquireRequest {
                        preferred_slot: Some(other),
                        ..request.clone()
                    };
                    let view = protocol::View {
                        records: &view,
                        lowest_unused: unused,
                    };
                    protocol::acquire_in(namespace, &record, &view, &request, now)?
                }
                None => grant,
            }
        }
        _ => grant,
    };
    let Some(w) = &grant.write else {
        return Ok(Step::Done(grant.acquired));
    };

    let old = records.get(&w.slot);
    let mut compares = vec![
        unchanged(&namespace_key(namespace), stored.map(|(_, rev)| rev)),
        Compare::mod_revision(index::state(namespace), CompareOp::Equal, state_rev),
        unchanged(&slot_key(namespace, w.slot), old.map(|(_, rev)| *rev)),
        // A record of this owner key written since the read (a concurrent acquisition of the same owner) would
        // have been its answer.
        Compare::mod_revision(
            index::owner_dir(namespace, key),
            CompareOp::Less,
            revision + 1,
        )
        .with_prefix(),
    ];
    let mut ops = Vec::new();
    if stored.map(|(r, _)| r) != Some(record) {
        ops.push(TxnOp::put(
            namespace_key(namespace),
            encode_namespace(&record),
            None,
        ));
    }
    ops.push(TxnOp::put(
        slot_key(namespace, w.slot),
        encode_slot(w),
        None,
    ));
    ops.extend(index::reindex(namespace, old.map(|(r, _)| r), w));
    if unused == Some(w.slot) {
        let next = (w.slot + 1..=w.slot.saturating_add(HW_AHEAD))
            .find(|s| !records.contains_key(s))
            .unwrap_or(w.slot.saturating_add(HW_AHEAD + 1));
        let next = if in_range(next) {
            next.to_string()
        } else {
            "none".to_owned()
        };
        compares.push(unchanged(&index::hw(namespace), hw_rev));
        ops.push(TxnOp::put(index::hw(namespace), next, None));
    }
    Ok(if commit_ops(kv, compares, ops).await? {
        Step::Done(grant.acquired)
    } else {
        Step::Raced
    })
}

/// The deadline of a build in progress, from the index's state.
fn building_until(state: &[u8]) -> Option<u64> {
    std::str::from_utf8(state)
        .ok()?
        .strip_prefix("building ")?
        .parse()
        .ok()
}

/// An acquisition deciding on every record, while another client builds the index: it compares that no record
/// changed since its read, and writes the granted slot's index keys (which the build relies on).
async fn acquire_reading_every_record(
    kv: &mut KvClient,
    namespace: &Namespace,
    config: &NamespaceConfig,
    request: &AcquireRequest,
    now: u64,
) -> Result<Step, StoreError> {
    let snapshot = read_all(kv, namespace).await?;
    let stored = snapshot.namespace;
    let record = protocol::check_namespace(namespace, stored.map(|(r, _)| r), config)?;
    for (s, _) in &snapshot.slots {
        protocol::validate(KIND, namespace, s, record.bits)?;
    }
    let slots: Vec<SlotRecord> = snapshot.slots.iter().map(|(r, _)| r.clone()).collect();
    let grant = protocol::acquire(namespace, &record, &slots, request, now)?;
    let Some(w) = &grant.write else {
        return Ok(Step::Done(grant.acquired));
    };
    let old = snapshot.slots.iter().find(|(r, _)| r.slot == w.slot);
    let compares = vec![
        unchanged(&namespace_key(namespace), stored.map(|(_, rev)| rev)),
        Compare::mod_revision(
            format!("{}slot/", prefix(namespace)),
            CompareOp::Less,
            snapshot.revision + 1,
        )
        .with_prefix(),
    ];
    let mut ops = Vec::new();
    if stored.map(|(r, _)| r) != Some(record) {
        ops.push(TxnOp::put(
            namespace_key(namespace),
            encode_namespace(&record),
            None,
        ));
    }
    ops.push(TxnOp::put(
        slot_key(namespace, w.slot),
        encode_slot(w),
        None,
    ));
    ops.extend(index::reindex(namespace, old.map(|(r, _)| r), w));
    Ok(if commit_ops(kv, compares, ops).await? {
        Step::Done(grant.acquired)
    } else {
        Step::Raced
    })
}

/// Moves expired leases from `held` to `free`, each only if its entry is still there (a renewal or a release
/// replaces it).
async fn sweep(kv: &mut KvClient, ns: &Namespace, expired: &[KeyValue]) -> Result<(), StoreError> {
    let mut compares = Vec::new();
    let mut deletes = Vec::new();
    let mut puts = Vec::new();
    for entry in expired {
        let Some(slot) = index::slot_of(entry.key()) else {
            continue;
        };
        compares.push(Compare::version(entry.key(), CompareOp::Greater, 0));
        deletes.push(TxnOp::delete(entry.key(), None));
        puts.push(index::free(ns, slot));
    }
    puts.sort();
    puts.dedup();
    let ops = deletes
        .into_iter()
        .chain(puts.into_iter().map(|k| TxnOp::put(k, "", None)))
        .collect();
    commit_ops(kv, compares, ops).await?;
    Ok(())
}

/// Replaces `bad`, an entry that slot `slot`'s record (`current`, as read) contradicts, by the record's entries.
async fn repair(
    kv: &mut KvClient,
    ns: &Namespace,
    bad: &str,
    slot: u32,
    current: Option<&(SlotRecord, i64)>,
    now: u64,
) -> Result<(), StoreError> {
    let keep = current.map_or_else(Vec::new, |(r, _)| {
        index::entries(ns, r, r.owner.is_some() && r.expires_at < now)
    });
    let mut ops: Vec<TxnOp> = keep
        .iter()
        .map(|k| TxnOp::put(k.as_str(), "", None))
        .collect();
    if !keep.iter().any(|k| k == bad) {
        ops.push(TxnOp::delete(bad, None));
    }
    let compares = vec![unchanged(&slot_key(ns, slot), current.map(|(_, rev)| *rev))];
    commit_ops(kv, compares, ops).await?;
    Ok(())
}

/// The lowest slot from `from` on that has no record at `revision` (reading their keys, [`HW_WALK`] at a time), or
/// `None` when every one has a record: the walk past an `hw` that slots taken since have overtaken. The acquisition
/// that takes the slot found writes `hw` past it.
async fn first_unused(
    kv: &mut KvClient,
    ns: &Namespace,
    from: u32,
    count: u64,
    revision: i64,
) -> Result<Option<u32>, StoreError> {
    let mut start = u64::from(from);
    while start < count {
        let slots: Vec<u32> = (start..count.min(start + u64::from(HW_WALK)))
            .map(|s| s as u32)
            .collect();
        if let Some(&s) = never_used_among(kv, ns, &slots, revision).await?.first() {
            return Ok(Some(s));
        }
        start += u64::from(HW_WALK);
    }
    Ok(None)
}

/// Those of `slots` that have no record at `revision` (reading keys only).
async fn never_used_among(
    kv: &mut KvClient,
    ns: &Namespace,
    slots: &[u32],
    revision: i64,
) -> Result<Vec<u32>, StoreError> {
    let mut unused = Vec::new();
    // etcd refuses a transaction of more than 128 operations (`--max-txn-ops`).
    for chunk in slots.chunks(HW_WALK as usize) {
        let gets = chunk
            .iter()
            .map(|&s| {
                let options = GetOptions::new().with_keys_only().with_revision(revision);
                TxnOp::get(slot_key(ns, s), Some(options))
            })
            .collect();
        let (answers, _) = read_many(kv, gets).await?;
        unused.extend(
            chunk
                .iter()
                .zip(&answers)
                .filter(|(_, a)| a.kvs().is_empty())
                .map(|(s, _)| *s),
        );
    }
    Ok(unused)
}

/// Builds the index of a namespace that has none (or whose build was left past its deadline): claims the build,
/// clears what index keys there were, writes every record's entries in transactions that each hold only while
/// those records are unchanged (a record written meanwhile got its entries from its writer), then `hw` and the
/// state. Returns without building if another client claimed it first.
async fn build_index(
    kv: &mut KvClient,
    ns: &Namespace,
    now: u64,
    state_rev: Option<i64>,
) -> Result<(), StoreError> {
    let root = index::root(ns);
    let state = index::state(ns);
    let claim = Txn::new()
        .when(vec![unchanged(&state, state_rev)])
        .and_then(vec![
            TxnOp::delete(
                root.as_str(),
                Some(DeleteOptions::new().with_range(state.as_str())),
            ),
            TxnOp::delete(
                format!("{state}\0"),
                Some(DeleteOptions::new().with_range(index::prefix_end(&root))),
            ),
            TxnOp::put(
                state.as_str(),
                format!("building {}", now.saturating_add(BUILD_MS)),
                None,
            ),
        ]);
    let claimed = kv.txn(claim).await.map_err(etcd_err)?;
    if !claimed.succeeded() {
        return Ok(());
    }
    let claimed_rev = claimed.header().map_or(0, |h| h.revision());
    let ours = || Compare::mod_revision(state.as_str(), CompareOp::Equal, claimed_rev);

    let snapshot = read_all(kv, ns).await?;
    let bits = snapshot
        .namespace
        .map_or(protocol::MAX_BITS, |(r, _)| r.bits);
    for (r, _) in &snapshot.slots {
        protocol::validate(KIND, ns, r, bits)?;
    }
    for chunk in snapshot.slots.chunks(BUILD_CHUNK) {
        let mut current: Vec<(SlotRecord, i64)> = chunk.to_vec();
        let mut tries = 0;
        loop {
            let compares = current
                .iter()
                .map(|(r, rev)| unchanged(&slot_key(ns, r.slot), Some(*rev)))
                .chain([ours()])
                .collect();
            let ops = current
                .iter()
                .flat_map(|(r, _)| index::entries(ns, r, r.owner.is_some() && r.expires_at < now))
                .map(|k| TxnOp::put(k, "", None))
                .collect();
            if commit_ops(kv, compares, ops).await? {
                break;
            }
            tries += 1;
            if tries == 8 {
                // Busy records, or the build was taken over: whoever holds it finishes (or takes it over later).
                return Ok(());
            }
            let slots: Vec<u32> = current.iter().map(|(r, _)| r.slot).collect();
            current = read_records(kv, ns, &slots, 0, bits)
                .await?
                .into_values()
                .collect();
        }
    }
    let slots: Vec<SlotRecord> = snapshot.slots.into_iter().map(|(r, _)| r).collect();
    let hw = protocol::lowest_unused(&slots, bits).map_or("none".to_owned(), |s| s.to_string());
    commit_ops(
        kv,
        vec![ours()],
        vec![
            TxnOp::put(index::hw(ns), hw, None),
            TxnOp::put(state.as_str(), index::READY, None),
        ],
    )
    .await?;
    Ok(())
}

#[async_trait::async_trait]
impl LeaseStore for EtcdStore {
    fn kind(&self) -> &'static str {
        KIND
    }

    /// etcd needs no schema; this checks that the cluster answers.
    async fn init(&self) -> Result<(), StoreError> {
        let run = async {
            let kv = self.kv().await?;
            kv.get(
                ROOT,
                Some(GetOptions::new().with_prefix().with_count_only()),
            )
            .await
            .map_err(etcd_err)?;
            Ok(())
        };
        self.bounded(run).await
    }

    async fn acquire(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        request: &AcquireRequest,
    ) -> Result<Acquired, StoreError> {
        let raced = &std::sync::atomic::AtomicU32::new(0);
        self.retrying(namespace, |mut kv| async move {
            let lost = raced.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // Sweeps, repairs and a build each change the index and read again, a bounded number of times.
            for _ in 0..STEPS {
                let now = self.clock.now_ms();
                match acquire_step(&mut kv, namespace, config, request, now, lost).await? {
                    Step::Done(acquired) => return Ok(Try::Done(acquired)),
                    Step::Raced => return Ok(Try::Raced),
                    Step::Again => {}
                }
            }
            Ok(Try::Raced)
        })
        .await
    }

    async fn renew(
        &self,
        lease: &SlotLease,
        ttl_ms: u64,
        tolerance_ms: u64,
    ) -> Result<SlotLease, StoreError> {
        self.retrying(&lease.namespace, |mut kv| async move {
            let ((_, ns_rev), current) = read_checked(&mut kv, lease).await?;
            let now = self.clock.now_ms();
            let (record, renewed) = protocol::renew(
                KIND,
                current.as_ref().map(|(r, _)| r),
                lease,
                ttl_ms,
                tolerance_ms,
                now,
            )?;
            Ok(
                if write_lease_slot(&mut kv, lease, ns_rev, current.as_ref(), &record).await? {
                    Try::Done(renewed)
                } else {
                    Try::Raced
                },
            )
        })
        .await
    }

    async fn release(&self, lease: &SlotLease, last_issued: Option<u64>) -> Result<(), StoreError> {
        self.retrying(&lease.namespace, |mut kv| async move {
            let ((_, ns_rev), current) = read_checked(&mut kv, lease).await?;
            let record =
                protocol::release(KIND, current.as_ref().map(|(r, _)| r), lease, last_issued)?;
            Ok(
                if write_lease_slot(&mut kv, lease, ns_rev, current.as_ref(), &record).await? {
                    Try::Done(())
                } else {
                    Try::Raced
                },
            )
        })
        .await
    }

    async fn inspect(&self, namespace: &Namespace) -> Result<Inspection, StoreError> {
        self.retrying(namespace, |mut kv| async move {
            let snapshot = read_all(&mut kv, namespace).await?;
            Ok(Try::Done(Inspection {
                namespace: snapshot.namespace.map(|(r, _)| r),
                slots: snapshot.slots.into_iter().map(|(r, _)| r).collect(),
                store_now: self.clock.now_ms(),
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
        self.retrying(namespace, |mut kv| async move {
            let key = namespace_key(namespace);
            let resp = kv.get(key.as_str(), None).await.map_err(etcd_err)?;
            let stored = resp
                .kvs()
                .first()
                .map(|kv| decode_namespace(namespace, kv.value()).map(|r| (r, kv.mod_revision())))
                .transpose()?;
            let record =
                protocol::raise_not_before(namespace, stored.map(|(r, _)| r), config, not_before)?;
            let compares = vec![unchanged(&key, stored.map(|(_, rev)| rev))];
            let puts = vec![(key.clone(), encode_namespace(&record))];
            Ok(if commit(&mut kv, compares, puts).await? {
                Try::Done(record)
            } else {
                Try::Raced
            })
        })
        .await
    }
}
