//! ZooKeeper (`zookeeper://[user:password@]host:port[,host:port...][/chroot]`): leases as znodes, changed by
//! multi-operation transactions that check znode versions.
//!
//! Every znode this store writes lies under `<chroot>/cosid`. A namespace is the znode `cosid/<encoded name>` with
//! two kinds of children: `ns` holds the namespace record and `slot/<n>` each slot record (both as JSON, the same
//! documents as the etcd store's); `slot` itself holds nothing (acquisitions of earlier versions bumped its data
//! version). Beside it, `cosid/<encoded name>.guard/<g>` are the owner guards: empty znodes, at most [`GUARDS`],
//! each written by every acquisition of the owner keys that hash to it. The encoded name has no `/` and no `.`,
//! so no namespace's znodes are another's.
//!
//! Each operation reads what its decision depends on, applies the rules of [`protocol`], and writes with one
//! `multi` that succeeds only if nothing it read has changed (a `check` or a conditional `setData` on the version it
//! read; a `create` where the znode was absent):
//!
//! - acquisition reads the namespace record, its owner's guard, then the records its acquire index names
//!   ([`index`]; every record when the namespace has no index, which it then builds); it writes the slot it grants
//!   at the version it read (or creates it) with the slot's index entries, and the guard at the version it read: two acquisitions of one slot, or
//!   of one owner key (whose record would have been the other's answer), cannot both commit; acquisitions of
//!   different slots by different owners do not conflict. A try after a lost race takes, as its preferred slot,
//!   one of the slots as good as the lowest at random, so that clients started together spread out instead of
//!   all retrying on one slot (as the etcd store does);
//! - renewal and release check the namespace record and write their slot at the version they read, with its index
//!   entries (or, on a namespace without an index, only while it still has none);
//! - `raise_not_before` writes the namespace record at the version it read (or creates it).
//!
//! A ZooKeeper server may answer reads from a state behind the leader's. Every decision is therefore confirmed
//! by the leader: a write checks the versions it read, an acquisition that finds the slot already held by its
//! owner writes nothing but still commits a `multi` of checks, and a new session `sync`s before its first read
//! (so that a new session never reads a state older than what an earlier session of this store wrote).
//!
//! A failed check means another writer got there first: the operation reads again and retries, a bounded number of
//! times with a small jittered pause. No znode is ephemeral and none has a TTL: a lease outlives the session that
//! took it, and it expires when the protocol says so (its `expires_at`, on the store clock), whatever happens to
//! the session. A client whose session expires opens a new one on its next operation.
//!
//! The store clock is the caller's [`Clock`], as with etcd: ZooKeeper has no call that returns the server's time.
//! The `mtime` of a znode is the leader's clock when it wrote it, but only a write returns a fresh one, so reading
//! it would cost every operation an extra quorum write, and the clock behind it changes with the leader. Safety
//! does not depend on the clock; availability (when a lease expires) depends on the hosts' clocks agreeing within
//! `tolerance`.

mod acquire;
mod index;

use super::common::{self, Try};
use super::{Inspection, LeaseStore, StoreError};
use crate::clock::Clock;
use crate::lease::{
    protocol, AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord, SlotLease,
    SlotRecord,
};
use std::sync::Arc;
use std::time::Duration;
use zookeeper_client::{
    Acls, Client, CreateMode, CreateOptions, Error as ZkError, MultiReadResult, MultiWriteError,
};

const KIND: &str = "zookeeper";

/// How long connecting to one server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The session timeout asked for (the server bounds it by its `minSessionTimeout`/`maxSessionTimeout`). Leases do
/// not depend on it: it only decides how long a disconnected client keeps its session.
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Leases in a ZooKeeper ensemble; the store clock is the given clock. Cloning shares the session.
///
/// Opening does not connect: the first operation does.
#[derive(Clone)]
pub struct ZookeeperStore {
    /// `host:port[,host:port...]`, as the client takes it.
    hosts: String,
    /// `<chroot>/cosid`: the parent of every namespace's znode.
    root: String,
    /// `user:password` for the `digest` scheme; znodes are then created readable and writable by that user only.
    digest: Option<String>,
    client: Arc<tokio::sync::Mutex<Option<Client>>>,
    clock: Arc<dyn Clock>,
}

/// Maps a client error: a lost connection or session, a server that is not serving or throttles, is
/// `Unavailable`; the rest (authorization, bad arguments) is `Generic`.
fn zk_err(e: ZkError) -> StoreError {
    use ZkError as E;
    let retryable = matches!(
        e,
        E::ConnectionLoss
            | E::SessionExpired
            | E::SessionMoved
            | E::Timeout
            | E::NoHosts
            | E::ClientClosed
            | E::Throttled
            | E::NotReadOnly
    ) || connection_failure(&e);
    common::client_error(KIND, e, retryable)
}

/// The client's own errors for a connection that failed under a request: "no response from connection in N ms"
/// from a hung or cut-off server, and the socket's I/O errors. It reports them as `Custom`, not as
/// `ConnectionLoss`; they are outages (another server of the ensemble may answer), to retry like one.
fn connection_failure(e: &ZkError) -> bool {
    if !matches!(e, ZkError::Custom(_)) {
        return false;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.is::<std::io::Error>() {
            return true;
        }
        source = s.source();
    }
    e.to_string().starts_with("no response from connection")
}

fn corrupt(namespace: &Namespace, what: &str, detail: impl Into<String>) -> StoreError {
    common::corrupt(KIND, namespace, what, detail)
}

use super::json_record::{encode_namespace, encode_slot, parse_slot};

fn decode_namespace(ns: &Namespace, raw: &[u8]) -> Result<NamespaceRecord, StoreError> {
    super::json_record::decode_namespace(KIND, ns, raw)
}

fn decode_slot(ns: &Namespace, slot: u32, raw: &[u8]) -> Result<SlotRecord, StoreError> {
    super::json_record::decode_slot(KIND, ns, slot, raw)
}

/// The znodes of one namespace.
struct Paths {
    /// `<root>/<encoded>`.
    dir: String,
    /// `<dir>/ns`.
    namespace: String,
    /// `<dir>/slot`.
    slots: String,
    /// `<root>/<encoded>.guard`: the owner guards (a `.` is never part of an encoded name, so this is no
    /// namespace's znode; and it lies outside `dir`, whose children clients of earlier versions check).
    guards: String,
    /// `<root>/<encoded>.idx`: the acquire index.
    index: index::IndexPaths,
}

impl Paths {
    fn slot(&self, slot: u32) -> String {
        format!("{}/{slot}", self.slots)
    }

    /// The guard that every acquisition by owner key `key` writes: one of [`GUARDS`], by a hash of the key that
    /// every version of this store computes alike.
    fn guard(&self, key: &str) -> String {
        format!("{}/{}", self.guards, guard_of(key))
    }
}

/// How many owner guards a namespace has at most. Two acquisitions by the same owner key always write the same
/// guard, so they cannot both commit on one read; acquisitions by different keys share one with odds 1 in
/// `GUARDS`, and then merely take turns.
const GUARDS: u32 = 256;

/// The guard of owner key `key`: FNV-1a of its bytes, modulo [`GUARDS`] (stable across builds and platforms,
/// which the standard library's hasher does not promise).
fn guard_of(key: &str) -> u32 {
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    (hash % u64::from(GUARDS)) as u32
}

/// A namespace's znodes as read: each with the data version the read saw.
#[derive(Debug, Default)]
struct Snapshot {
    dir_exists: bool,
    namespace: Option<(NamespaceRecord, i32)>,
    /// The version of the `slot` znode, if it exists.
    slots_version: Option<i32>,
    /// Whether the owner guards' parent exists, and the version of the guard read (if one was, and it exists).
    guards_exist: bool,
    guard_version: Option<i32>,
    slots: Vec<(SlotRecord, i32)>,
}

impl std::fmt::Debug for ZookeeperStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The digest holds the password: never print it.
        f.debug_struct("ZookeeperStore")
            .field("hosts", &self.hosts)
            .field("root", &self.root)
            .field("digest", &self.digest.as_ref().map(|_| "***"))
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

/// A read's answer for a znode's data: `None` if it does not exist.
fn data(result: MultiReadResult) -> Result<Option<(Vec<u8>, i32)>, StoreError> {
    match result {
        MultiReadResult::Data { data, stat } => Ok(Some((data, stat.version))),
        MultiReadResult::Error {
            err: ZkError::NoNode,
        } => Ok(None),
        MultiReadResult::Error { err } => Err(zk_err(err)),
        other => Err(unexpected(format!("{other:?}"))),
    }
}

/// A read's answer for a znode's children: `None` if it does not exist.
fn children(result: MultiReadResult) -> Result<Option<Vec<String>>, StoreError> {
    match result {
        MultiReadResult::Children { children } => Ok(Some(children)),
        MultiReadResult::Error {
            err: ZkError::NoNode,
        } => Ok(None),
        MultiReadResult::Error { err } => Err(zk_err(err)),
        other => Err(unexpected(format!("{other:?}"))),
    }
}

fn unexpected(detail: String) -> StoreError {
    StoreError::Generic {
        store: KIND,
        source: format!("unexpected answer to a read: {detail}").into(),
    }
}

/// The answers of a multi-read, exactly `N` of them.
async fn read<const N: usize>(
    client: &Client,
    ops: impl FnOnce(&mut zookeeper_client::MultiReader<'_>) -> Result<(), ZkError>,
) -> Result<[MultiReadResult; N], StoreError> {
    let mut reader = client.new_multi_reader();
    ops(&mut reader).map_err(zk_err)?;
    let results = reader.commit().await.map_err(zk_err)?;
    <[MultiReadResult; N]>::try_from(results)
        .map_err(|r| unexpected(format!("{} answers to a read of {N} znodes", r.len())))
}

/// The data (with its version) of each of `data`, then the children of each of `lists`, in one multi-read; `None`
/// for a znode that does not exist.
#[allow(clippy::type_complexity)]
async fn read_list(
    client: &Client,
    data_of: &[String],
    lists: &[String],
) -> Result<(Vec<Option<(Vec<u8>, i32)>>, Vec<Option<Vec<String>>>), StoreError> {
    if data_of.is_empty() && lists.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut reader = client.new_multi_reader();
    for p in data_of {
        reader.add_get_data(p).map_err(zk_err)?;
    }
    for p in lists {
        reader.add_get_children(p).map_err(zk_err)?;
    }
    let mut results = reader.commit().await.map_err(zk_err)?;
    if results.len() != data_of.len() + lists.len() {
        return Err(unexpected(format!(
            "{} answers to a read of {} znodes",
            results.len(),
            data_of.len() + lists.len()
        )));
    }
    let listed = results.split_off(data_of.len());
    let data = results.into_iter().map(data).collect::<Result<_, _>>()?;
    let children = listed.into_iter().map(children).collect::<Result<_, _>>()?;
    Ok((data, children))
}

/// One write of a `multi`.
#[derive(Debug, Clone)]
enum Op {
    Check(String, i32),
    /// A persistent znode, or a container (the index's parents of entries).
    Create {
        path: String,
        data: Vec<u8>,
        container: bool,
    },
    Set(String, Vec<u8>, Option<i32>),
    Delete(String),
}

/// A write of a `multi`, and whether it is one of the index's (see [`ZookeeperStore::commit_ops`]).
#[derive(Debug, Clone)]
struct Write {
    op: Op,
    index: bool,
}

impl Write {
    fn check(path: &str, version: i32) -> Self {
        Self {
            op: Op::Check(path.to_owned(), version),
            index: false,
        }
    }

    fn create(path: &str, data: &[u8]) -> Self {
        Self {
            op: Op::Create {
                path: path.to_owned(),
                data: data.to_vec(),
                container: false,
            },
            index: false,
        }
    }

    fn set(path: &str, data: &[u8], version: Option<i32>) -> Self {
        Self {
            op: Op::Set(path.to_owned(), data.to_vec(), version),
            index: false,
        }
    }

    /// `data` at `path`: at `version` if the znode was read, else a create.
    fn put(path: &str, data: &[u8], version: Option<i32>) -> Self {
        match version {
            Some(v) => Self::set(path, data, Some(v)),
            None => Self::create(path, data),
        }
    }

    fn entry_create(path: &str) -> Self {
        Self {
            index: true,
            ..Self::create(path, b"")
        }
    }

    fn entry_delete(path: &str) -> Self {
        Self {
            op: Op::Delete(path.to_owned()),
            index: true,
        }
    }
}

impl ZookeeperStore {
    /// Prepares a client for a `zookeeper://[user:password@]host:port[,host:port...][/chroot]` URL; the store clock
    /// is `clock`. Does not connect.
    pub fn open(url: &str, clock: Arc<dyn Clock>) -> Result<Self, StoreError> {
        let invalid = |reason: String| StoreError::InvalidUrl {
            url: super::url::redacted(url),
            reason: super::url::scrub(&reason, url),
        };
        let usage = "expected zookeeper://[user:password@]host:port[,host:port][/chroot]";
        let rest = url
            .strip_prefix("zookeeper://")
            .ok_or_else(|| invalid(usage.into()))?;
        if rest.contains(['?', '#']) {
            return Err(invalid(format!(
                "no query or fragment is accepted: {usage}"
            )));
        }
        let (authority, chroot) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        let (digest, hosts) = match authority.rsplit_once('@') {
            Some((userinfo, hosts)) => {
                let decode = |s: &str| {
                    percent_encoding::percent_decode_str(s)
                        .decode_utf8()
                        .map(|s| s.into_owned())
                        .map_err(|_| {
                            invalid("the credentials are not UTF-8 once percent-decoded".into())
                        })
                };
                let (user, password) = userinfo
                    .split_once(':')
                    .ok_or_else(|| invalid("credentials are user:password".into()))?;
                let (user, password) = (decode(user)?, decode(password)?);
                if user.is_empty() || user.contains(':') {
                    return Err(invalid("the user is empty or holds a `:`".into()));
                }
                (Some(format!("{user}:{password}")), hosts)
            }
            None => (None, authority),
        };
        for host in hosts.split(',') {
            let valid = host
                .rsplit_once(':')
                .is_some_and(|(h, port)| !h.is_empty() && port.parse::<u16>().is_ok());
            if !valid {
                return Err(invalid(format!(
                    "server {host:?} is not host:port ({usage})"
                )));
            }
        }
        let chroot = chroot.trim_end_matches('/');
        let valid_chroot = chroot.is_empty()
            || chroot[1..]
                .split('/')
                .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains(char::is_control));
        if !valid_chroot {
            return Err(invalid(format!(
                "chroot {chroot:?} is not an absolute ZooKeeper path"
            )));
        }
        Ok(Self {
            hosts: hosts.to_owned(),
            root: format!("{chroot}/cosid"),
            digest,
            client: Arc::default(),
            clock,
        })
    }

    /// The ACLs of every znode this store creates: the URL's user only when it names one, else anyone.
    fn create_options(&self) -> CreateOptions<'static> {
        let acls = if self.digest.is_some() {
            Acls::creator_all()
        } else {
            Acls::anyone_all()
        };
        CreateMode::Persistent.with_acls(acls)
    }

    /// The options of the index's containers: as [`Self::create_options`], but deleted by the server once their
    /// last child goes.
    fn container_options(&self) -> CreateOptions<'static> {
        let acls = if self.digest.is_some() {
            Acls::creator_all()
        } else {
            Acls::anyone_all()
        };
        CreateMode::Container.with_acls(acls)
    }

    /// Commits `ops` as one `multi`: `false` when a write that is not an index entry's failed its check (another
    /// writer got there first). An index entry's write that fails because the index is not as this write
    /// expected is adjusted and the `multi` sent again: an entry already there or already gone is left out, and a
    /// missing container is created first; when the index itself is gone (deleted by hand), its writes are left
    /// out.
    async fn commit_ops(&self, client: &Client, mut ops: Vec<Write>) -> Result<bool, StoreError> {
        let persistent = self.create_options();
        let container = self.container_options();
        for _ in 0..ops.len() * 2 + 4 {
            let mut multi = client.new_multi_writer();
            for w in &ops {
                match &w.op {
                    Op::Check(p, v) => multi.add_check_version(p, *v),
                    Op::Create {
                        path,
                        data,
                        container: c,
                    } => multi.add_create(path, data, if *c { &container } else { &persistent }),
                    Op::Set(p, d, v) => multi.add_set_data(p, d, *v),
                    Op::Delete(p) => multi.add_delete(p, None),
                }
                .map_err(zk_err)?;
            }
            let (at, source) = match multi.commit().await {
                Ok(_) => return Ok(true),
                Err(MultiWriteError::OperationFailed { index, source }) => (index, source),
                Err(e) => return Err(zk_err(e.into())),
            };
            let Some(failed) = ops.get(at).filter(|w| w.index) else {
                return match source {
                    ZkError::BadVersion | ZkError::NodeExists | ZkError::NoNode => Ok(false),
                    e => Err(zk_err(e)),
                };
            };
            match (&failed.op, source) {
                (Op::Create { .. }, ZkError::NodeExists)
                | (Op::Delete(_) | Op::Set(..), ZkError::NoNode) => {
                    ops.remove(at);
                }
                (
                    Op::Create {
                        path,
                        container: false,
                        ..
                    },
                    ZkError::NoNode,
                ) => {
                    let parent = index::parent(path).to_owned();
                    ops.insert(
                        at,
                        Write {
                            op: Op::Create {
                                path: parent,
                                data: Vec::new(),
                                container: true,
                            },
                            index: true,
                        },
                    );
                }
                (Op::Create { .. }, ZkError::NoNode) => ops.retain(|w| !w.index),
                (_, e) => return Err(zk_err(e)),
            }
        }
        Ok(false)
    }

    fn paths(&self, ns: &Namespace) -> Paths {
        let dir = format!("{}/{}", self.root, ns.encoded());
        Paths {
            namespace: format!("{dir}/ns"),
            slots: format!("{dir}/slot"),
            guards: format!("{dir}.guard"),
            index: index::IndexPaths::new(format!("{dir}.idx")),
            dir,
        }
    }

    /// The session's client, opening a session (and creating the root znode) first when there is none or the last
    /// one ended (expired, closed).
    async fn client(&self) -> Result<Client, StoreError> {
        let mut cached = self.client.lock().await;
        if let Some(client) = cached.as_ref() {
            if !client.state().is_terminated() {
                return Ok(client.clone());
            }
        }
        let mut connector = Client::connector()
            .with_session_timeout(SESSION_TIMEOUT)
            .with_connection_timeout(CONNECT_TIMEOUT)
            .with_fail_eagerly();
        if let Some(digest) = &self.digest {
            connector = connector.with_auth("digest", digest.as_bytes());
        }
        let client = connector.connect(&self.hosts).await.map_err(zk_err)?;
        client
            .mkdir(&self.root, &self.create_options())
            .await
            .map_err(zk_err)?;
        // A new session may land on a server behind the leader (an older session's writes not applied yet): bring
        // it up to the leader's state first. From then on, the session reads its own writes, also after moving
        // to another server.
        client.sync(&self.root).await.map_err(zk_err)?;
        *cached = Some(client.clone());
        Ok(client)
    }

    /// Runs `attempt` until it is done, reading again after a raced write (see [`common::retrying`]).
    async fn retrying<T, F, Fut>(&self, ns: &Namespace, attempt: F) -> Result<T, StoreError>
    where
        F: FnMut(Client) -> Fut + Send,
        Fut: std::future::Future<Output = Result<Try<T>, StoreError>> + Send,
        T: Send,
    {
        let servers = self.hosts.clone();
        common::retrying(KIND, &servers, ns, || self.client(), attempt).await
    }

    /// Runs one operation: bounded in time, and its failures name the ensemble.
    async fn bounded<T>(
        &self,
        run: impl std::future::Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        common::bounded(KIND, &self.hosts.clone(), run).await
    }

    /// Reads every znode of the namespace, and the guard of owner key `owner` if given (before the slots: an
    /// acquisition by that key committed after this read writes the guard, and one committed before it is in the
    /// slots read). `Raced` when a slot went away between the listing and its read.
    async fn read_all(
        &self,
        client: &Client,
        ns: &Namespace,
        owner: Option<&str>,
    ) -> Result<Try<Snapshot>, StoreError> {
        let paths = self.paths(ns);
        let guard = paths.guard(owner.unwrap_or_default());
        let [namespace, slots, slot_names, dir_names, guards, guard] = read::<6>(client, |r| {
            r.add_get_data(&paths.namespace)?;
            r.add_get_data(&paths.slots)?;
            r.add_get_children(&paths.slots)?;
            r.add_get_children(&paths.dir)?;
            r.add_get_data(&paths.guards)?;
            r.add_get_data(if owner.is_some() {
                &guard
            } else {
                &paths.guards
            })
        })
        .await?;
        let mut snapshot = Snapshot {
            namespace: data(namespace)?
                .map(|(raw, v)| decode_namespace(ns, &raw).map(|r| (r, v)))
                .transpose()?,
            slots_version: data(slots)?.map(|(_, v)| v),
            guards_exist: data(guards)?.is_some(),
            guard_version: data(guard)?.map(|(_, v)| v).filter(|_| owner.is_some()),
            ..Snapshot::default()
        };
        let slot_names = children(slot_names)?.unwrap_or_default();
        if let Some(names) = children(dir_names)? {
            snapshot.dir_exists = true;
            if let Some(stray) = names.iter().find(|n| *n != "ns" && *n != "slot") {
                return Err(stray_znode(ns, &format!("{}/{stray}", paths.dir)));
            }
        }
        let mut numbers = Vec::with_capacity(slot_names.len());
        for name in &slot_names {
            let slot = parse_slot(name)
                .ok_or_else(|| stray_znode(ns, &format!("{}/{name}", paths.slots)))?;
            numbers.push(slot);
        }
        if numbers.is_empty() {
            return Ok(Try::Done(snapshot));
        }
        let mut reader = client.new_multi_reader();
        for slot in &numbers {
            reader.add_get_data(&paths.slot(*slot)).map_err(zk_err)?;
        }
        let results = reader.commit().await.map_err(zk_err)?;
        if results.len() != numbers.len() {
            return Err(unexpected(format!(
                "{} answers to a read of {} slots",
                results.len(),
                numbers.len()
            )));
        }
        for (slot, result) in numbers.into_iter().zip(results) {
            let Some((raw, version)) = data(result)? else {
                return Ok(Try::Raced);
            };
            snapshot.slots.push((decode_slot(ns, slot, &raw)?, version));
        }
        snapshot.slots.sort_by_key(|(r, _)| r.slot);
        Ok(Try::Done(snapshot))
    }

    /// Reads a lease's namespace record and slot, and validates the slot against the namespace's bits; and whether
    /// the namespace has an acquire index.
    #[allow(clippy::type_complexity)]
    async fn read_checked(
        &self,
        client: &Client,
        lease: &SlotLease,
    ) -> Result<((NamespaceRecord, i32), Option<(SlotRecord, i32)>, bool), StoreError> {
        let ns = &lease.namespace;
        let paths = self.paths(ns);
        let [namespace, slot, index] = read::<3>(client, |r| {
            r.add_get_data(&paths.namespace)?;
            r.add_get_data(&paths.slot(lease.slot))?;
            r.add_get_data(&paths.index.root)
        })
        .await?;
        let Some((raw, ns_version)) = data(namespace)? else {
            return Err(protocol::namespace_missing(KIND, lease));
        };
        let namespace = decode_namespace(ns, &raw)?;
        let record = data(slot)?
            .map(|(raw, v)| decode_slot(ns, lease.slot, &raw).map(|r| (r, v)))
            .transpose()?;
        if let Some((r, _)) = &record {
            protocol::validate(KIND, ns, r, namespace.bits)?;
        }
        let indexed = data(index)?.is_some();
        Ok(((namespace, ns_version), record, indexed))
    }

    /// Writes a lease's slot if the namespace record and the slot are as they were read (`current`), with its
    /// index entries when the namespace has an index (`indexed`), else only while it still has none.
    async fn write_lease_slot(
        &self,
        client: &Client,
        lease: &SlotLease,
        namespace_version: i32,
        current: Option<&(SlotRecord, i32)>,
        indexed: bool,
        record: &SlotRecord,
    ) -> Result<bool, StoreError> {
        let paths = self.paths(&lease.namespace);
        let mut ops = vec![
            Write::check(&paths.namespace, namespace_version),
            Write::put(
                &paths.slot(lease.slot),
                &encode_slot(record),
                current.map(|(_, v)| *v),
            ),
        ];
        if indexed {
            let (gone, made) = index::reindex(&paths.index, current.map(|(r, _)| r), record);
            ops.extend(gone.iter().map(|e| Write::entry_delete(e)));
            ops.extend(made.iter().map(|e| Write::entry_create(e)));
        } else {
            ops.extend(acquire::no_index(&paths));
        }
        self.commit_ops(client, ops).await
    }
}

fn stray_znode(ns: &Namespace, path: &str) -> StoreError {
    corrupt(
        ns,
        "the namespace's znodes",
        format!("unexpected znode {path:?}"),
    )
}

#[async_trait::async_trait]
impl LeaseStore for ZookeeperStore {
    fn kind(&self) -> &'static str {
        KIND
    }

    /// Creates the root znode (`<chroot>/cosid`) if it is missing, which also checks that the ensemble answers.
    async fn init(&self) -> Result<(), StoreError> {
        self.bounded(async {
            let client = self.client().await?;
            client
                .mkdir(&self.root, &self.create_options())
                .await
                .map_err(zk_err)
        })
        .await
    }

    async fn acquire(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        request: &AcquireRequest,
    ) -> Result<Acquired, StoreError> {
        let tries = &std::sync::atomic::AtomicU32::new(0);
        self.retrying(namespace, |client| async move {
            let raced = tries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.acquire_step(&client, namespace, config, request, raced)
                .await
        })
        .await
    }

    async fn renew(
        &self,
        lease: &SlotLease,
        ttl_ms: u64,
        tolerance_ms: u64,
    ) -> Result<SlotLease, StoreError> {
        self.retrying(&lease.namespace, |client| async move {
            let ((_, ns_version), current, indexed) = self.read_checked(&client, lease).await?;
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
                if self
                    .write_lease_slot(
                        &client,
                        lease,
                        ns_version,
                        current.as_ref(),
                        indexed,
                        &record,
                    )
                    .await?
                {
                    Try::Done(renewed)
                } else {
                    Try::Raced
                },
            )
        })
        .await
    }

    async fn release(&self, lease: &SlotLease, last_issued: Option<u64>) -> Result<(), StoreError> {
        self.retrying(&lease.namespace, |client| async move {
            let ((_, ns_version), current, indexed) = self.read_checked(&client, lease).await?;
            let record =
                protocol::release(KIND, current.as_ref().map(|(r, _)| r), lease, last_issued)?;
            Ok(
                if self
                    .write_lease_slot(
                        &client,
                        lease,
                        ns_version,
                        current.as_ref(),
                        indexed,
                        &record,
                    )
                    .await?
                {
                    Try::Done(())
                } else {
                    Try::Raced
                },
            )
        })
        .await
    }

    async fn inspect(&self, namespace: &Namespace) -> Result<Inspection, StoreError> {
        self.retrying(namespace, |client| async move {
            Ok(match self.read_all(&client, namespace, None).await? {
                Try::Done(snapshot) => Try::Done(Inspection {
                    namespace: snapshot.namespace.map(|(r, _)| r),
                    slots: snapshot.slots.into_iter().map(|(r, _)| r).collect(),
                    store_now: self.clock.now_ms(),
                }),
                Try::Raced => Try::Raced,
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
        self.retrying(namespace, |client| async move {
            let paths = self.paths(namespace);
            let [stored, dir, slots] = read::<3>(&client, |r| {
                r.add_get_data(&paths.namespace)?;
                r.add_get_data(&paths.dir)?;
                r.add_get_data(&paths.slots)
            })
            .await?;
            let stored = data(stored)?
                .map(|(raw, v)| decode_namespace(namespace, &raw).map(|r| (r, v)))
                .transpose()?;
            let (dir_exists, slots_exist) = (data(dir)?.is_some(), data(slots)?.is_some());
            let ns_version = stored.as_ref().map(|(_, v)| *v);
            let record =
                protocol::raise_not_before(namespace, stored.map(|(r, _)| r), config, not_before)?;
            let mut ops = Vec::new();
            if !dir_exists {
                ops.push(Write::create(&paths.dir, b""));
            }
            if !slots_exist {
                ops.push(Write::create(&paths.slots, b""));
            }
            ops.push(Write::put(
                &paths.namespace,
                &encode_namespace(&record),
                ns_version,
            ));
            Ok(if self.commit_ops(&client, ops).await? {
                Try::Done(record)
            } else {
                Try::Raced
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every version of this store must map an owner key to the same guard, or two versions acquiring for one key
    /// at once would not conflict: these values are FNV-1a's, and must never change.
    #[test]
    fn guards_are_fnv1a_of_the_key_and_never_change() {
        assert_eq!(guard_of(""), (0xcbf2_9ce4_8422_2325u64 % 256) as u32);
        assert_eq!(guard_of("a"), (0xaf63_dc4c_8601_ec8cu64 % 256) as u32);
        assert_eq!(guard_of("foobar"), (0x8594_4171_f739_67e8u64 % 256) as u32);
        assert!((0..1000).all(|i| guard_of(&format!("host:{i}")) < GUARDS));
    }
}
