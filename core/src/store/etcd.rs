//! etcd v3 (`etcd://host:port[,host:port...]`): leases as keys, changed by transactions that compare revisions.
//!
//! A namespace's records live under one prefix, `cosid/<encoded name>/`: the namespace record at `ns` and each
//! slot at `slot/<n>`, as JSON. The encoded name has no `/`, so no namespace's prefix is a prefix of another's.
//!
//! Each operation reads what its decision depends on (at one revision), applies the rules of [`protocol`], and
//! writes with one transaction that succeeds only if nothing it read has changed:
//!
//! - acquisition reads the whole prefix and compares that no key under it was modified after the read's revision
//!   (this also catches keys created since, so the choice of slot is made on the state the write lands on);
//! - renewal and release compare the mod revision of the namespace record and of their slot;
//! - `raise_not_before` compares the namespace record (or that it is still absent).
//!
//! A failed compare means another writer got there first: the operation reads again and retries, a bounded number
//! of times with a small jittered pause. No key has a lease (TTL): expiry is data, decided by the protocol.
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
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, KeyValue, KvClient, Txn, TxnOp,
    TxnOpResponse,
};
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

/// Maps a client error: transport failures and transient statuses are `Unavailable`, the rest `Generic`.
fn etcd_err(e: etcd_client::Error) -> StoreError {
    use etcd_client::Error as E;
    let retryable = match &e {
        E::TransportError(_) | E::IoError(_) | E::EndpointError(_) => true,
        E::GRpcStatus(s) => RETRYABLE_GRPC_CODES.contains(&(s.code() as i32)),
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

/// Reads the namespace record and one slot at one revision.
async fn read_slot(
    kv: &mut KvClient,
    ns: &Namespace,
    slot: u32,
) -> Result<(Option<(NamespaceRecord, i64)>, Option<(SlotRecord, i64)>), StoreError> {
    let txn = Txn::new().and_then([
        TxnOp::get(namespace_key(ns), None),
        TxnOp::get(slot_key(ns, slot), None),
    ]);
    let resp = kv.txn(txn).await.map_err(etcd_err)?;
    let mut found = Vec::with_capacity(2);
    for op in resp.op_responses() {
        if let TxnOpResponse::Get(get) = op {
            found.push(get.kvs().first().cloned());
        }
    }
    let [namespace, record] =
        <[Option<KeyValue>; 2]>::try_from(found).map_err(|found| StoreError::Generic {
            store: KIND,
            source: format!(
                "expected 2 answers to a read of 2 keys, got {}",
                found.len()
            )
            .into(),
        })?;
    let namespace = namespace
        .map(|kv| decode_namespace(ns, kv.value()).map(|r| (r, kv.mod_revision())))
        .transpose()?;
    let record = record
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

/// Writes one slot of a lease if the namespace record and the slot are as they were read.
async fn write_lease_slot(
    kv: &mut KvClient,
    lease: &SlotLease,
    namespace_revision: i64,
    slot_revision: Option<i64>,
    record: &SlotRecord,
) -> Result<bool, StoreError> {
    let ns = &lease.namespace;
    let key = slot_key(ns, lease.slot);
    let compares = vec![
        unchanged(&namespace_key(ns), Some(namespace_revision)),
        unchanged(&key, slot_revision),
    ];
    commit(kv, compares, vec![(key, encode_slot(record))]).await
}

#[async_trait::async_trait]
impl LeaseStore for EtcdStore {
    fn kind(&self) -> &'static str {
        KIND
    }

    /// etcd needs no schema; this checks that the cluster answers.
    async fn init(&self) -> Result<(), StoreError> {
        let run = async {
            let mut kv = self.kv().await?;
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
        self.retrying(namespace, |mut kv| async move {
            let snapshot = read_all(&mut kv, namespace).await?;
            let stored = snapshot.namespace.map(|(r, _)| r);
            let record = protocol::check_namespace(namespace, stored, config)?;
            let slots: Vec<SlotRecord> = snapshot.slots.into_iter().map(|(r, _)| r).collect();
            for s in &slots {
                protocol::validate(KIND, namespace, s, record.bits)?;
            }
            let now = self.clock.now_ms();
            let grant = protocol::acquire(namespace, &record, &slots, request, now)?;
            let mut puts = Vec::new();
            if stored != Some(record) {
                puts.push((namespace_key(namespace), encode_namespace(&record)));
            }
            if let Some(w) = &grant.write {
                puts.push((slot_key(namespace, w.slot), encode_slot(w)));
            }
            if puts.is_empty() {
                return Ok(Try::Done(grant.acquired));
            }
            // Nothing under the prefix may have been written since the read: no key changed or appeared.
            let compares = vec![Compare::mod_revision(
                prefix(namespace),
                CompareOp::Less,
                snapshot.revision + 1,
            )
            .with_prefix()];
            Ok(if commit(&mut kv, compares, puts).await? {
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
            let slot_rev = current.map(|(_, rev)| rev);
            Ok(
                if write_lease_slot(&mut kv, lease, ns_rev, slot_rev, &record).await? {
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
            let slot_rev = current.map(|(_, rev)| rev);
            Ok(
                if write_lease_slot(&mut kv, lease, ns_rev, slot_rev, &record).await? {
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
