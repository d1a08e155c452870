//! Leases in Redis: one Lua script per operation, so each read-decide-write runs atomically on the server.
//!
//! The scripts (`redis/*.lua`) transcribe [`protocol`](crate::lease::protocol) line by line; they are loaded once
//! per connection with `SCRIPT LOAD` and called with `EVALSHA` (loaded again on `NOSCRIPT`, after a restart or a
//! `SCRIPT FLUSH`). The store clock is the server's `TIME`, read inside the script. A namespace lives in two hashes,
//! `cosid:{<encoded name>}:ns` and `cosid:{<encoded name>}:slots`, beside an acquire index (`:index`, `:free`,
//! `:held`, see [`RedisStore::index_keys`]) that lets an acquire read a few records rather than all of them. All
//! share a hash tag, so a Redis Cluster keeps a namespace on one shard; keys reach the scripts only through `KEYS`,
//! and no key ever gets a TTL.
//!
//! Safety needs a server that neither loses nor rolls back a write: `appendonly yes`, `appendfsync always`,
//! `maxmemory-policy noeviction` (see `docs/stores.md`). [`LeaseStore::durability`] checks these with `CONFIG GET`;
//! a runtime reports each one that differs as a `STORE_UNSAFE` event at start.

use super::{BoxError, Finding, Inspection, LeaseStore, StoreError};
use crate::id::Layout;
use crate::lease::{
    layout_text, AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord, Owner,
    SlotLease, SlotRecord,
};
use ::redis::aio::MultiplexedConnection;
use ::redis::{
    AsyncConnectionConfig, Client, ErrorKind, RedisError, Script, ServerErrorKind, Value,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const KIND: &str = "redis";

/// Lua numbers are doubles: every number a script handles stays at or below this.
const MAX_EXACT: u64 = (1 << 53) - 1;

/// How long a connection attempt may take before the store counts as unavailable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a reply may take before the store counts as unavailable.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

/// The settings the safety claim needs, with the value each must have.
const REQUIRED_SETTINGS: [(&str, &str); 3] = [
    ("appendonly", "yes"),
    ("appendfsync", "always"),
    ("maxmemory-policy", "noeviction"),
];

macro_rules! script {
    ($name:literal) => {
        Script::new(concat!(
            include_str!("redis/common.lua"),
            include_str!(concat!("redis/", $name, ".lua"))
        ))
    };
}

struct Scripts {
    acquire: Script,
    renew: Script,
    release: Script,
    inspect: Script,
    raise_not_before: Script,
}

impl Scripts {
    fn new() -> Self {
        Self {
            acquire: script!("acquire"),
            renew: script!("renew"),
            release: script!("release"),
            inspect: script!("inspect"),
            raise_not_before: script!("raise_not_before"),
        }
    }

    fn all(&self) -> [&Script; 5] {
        [
            &self.acquire,
            &self.renew,
            &self.release,
            &self.inspect,
            &self.raise_not_before,
        ]
    }
}

/// Leases in a Redis server (`redis://`, or `rediss://` for TLS; user and password from the URL).
///
/// Opening does not connect: the first operation does, so a server that is down at start-up is retried by the
/// runtime's acquire loop like any other unavailable store. A connection that fails is dropped and made again on
/// the next call. Cloning is not offered: share the store in an `Arc`.
///
/// ```no_run
/// # async fn demo() -> Result<(), cosid::store::StoreError> {
/// use cosid::store::{LeaseStore, RedisStore};
/// let store = RedisStore::open("redis://127.0.0.1:6379/0")?;
/// let ns = cosid::lease::Namespace::new("orders").unwrap();
/// let inspection = store.inspect(&ns).await?;
/// println!("{} slot records, Redis time {}", inspection.slots.len(), inspection.store_now);
/// # Ok(()) }
/// ```
pub struct RedisStore {
    client: Client,
    /// The URL without its password, for messages.
    target: String,
    conn: tokio::sync::Mutex<Option<MultiplexedConnection>>,
    scripts: Scripts,
    settings_checked: AtomicBool,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

fn generic(message: String) -> StoreError {
    StoreError::Generic {
        store: KIND,
        source: message.into(),
    }
}

fn checked_arg(name: &str, v: u64) -> Result<String, StoreError> {
    if v > MAX_EXACT {
        return Err(generic(format!(
            "{name} = {v} is above 2^53 - 1, the largest number the Redis store handles exactly"
        )));
    }
    Ok(v.to_string())
}

impl RedisStore {
    /// Parses `url` (`redis://[user:password@]host[:port][/db]` or `rediss://...`). Does not connect.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        // rustls needs one process-wide crypto provider; a provider installed earlier (by the host) is kept.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = Client::open(url).map_err(|e| StoreError::InvalidUrl {
            url: super::url::redacted(url),
            reason: super::url::scrub(&e.to_string(), url),
        })?;
        Ok(Self {
            client,
            target: super::url::redacted(url),
            conn: tokio::sync::Mutex::new(None),
            scripts: Scripts::new(),
            settings_checked: AtomicBool::new(false),
        })
    }

    /// The hash that holds a namespace's record (`bits`, `tolerance_ms`, `not_before`).
    pub fn namespace_key(namespace: &Namespace) -> String {
        format!("cosid:{{{}}}:ns", namespace.encoded())
    }

    /// The hash that holds a namespace's slot records: field = slot number, value =
    /// `v1;<fence>;<expires_at>;<floor>;<ceiling>;<next_floor>;<incarnation>;<owner key><last owner key>`, each key
    /// `-` when absent or `<length in bytes>:<bytes>`. One field per slot keeps the scan of `acquire` short.
    pub fn slots_key(namespace: &Namespace) -> String {
        format!("cosid:{{{}}}:slots", namespace.encoded())
    }

    /// The acquire index of a namespace (`redis/common.lua` describes it): a hash and two sorted sets that name the
    /// few slot records an acquire needs to read, so its cost does not grow with the namespace. A hint only: every
    /// slot it names is read and checked, and it is rebuilt from the records when they contradict it or when it is
    /// missing (deleting it is always safe).
    pub fn index_keys(namespace: &Namespace) -> [String; 3] {
        let ns = namespace.encoded();
        [
            format!("cosid:{{{ns}}}:index"),
            format!("cosid:{{{ns}}}:free"),
            format!("cosid:{{{ns}}}:held"),
        ]
    }

    /// Maps a client error: connection trouble and a server that is loading, failing over or out of memory are
    /// worth retrying; anything else (authentication, permissions, a script error) is not.
    fn error(&self, e: RedisError) -> StoreError {
        let retryable = e.is_io_error()
            || e.is_connection_refusal()
            || e.is_connection_dropped()
            || e.is_timeout()
            || matches!(
                e.kind(),
                ErrorKind::Server(
                    ServerErrorKind::BusyLoading
                        | ServerErrorKind::TryAgain
                        | ServerErrorKind::ClusterDown
                        | ServerErrorKind::MasterDown
                        | ServerErrorKind::ReadOnly
                )
            )
            || matches!(e.code(), Some("OOM" | "BUSY"));
        let source: BoxError = format!("{e} (at {})", self.target).into();
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

    /// The shared connection, made (and the scripts loaded) on first use or after a failure.
    async fn connection(&self) -> Result<MultiplexedConnection, StoreError> {
        let mut slot = self.conn.lock().await;
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT));
        let mut conn = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| self.error(e))?;
        for script in self.scripts.all() {
            script
                .prepare_invoke()
                .load_async(&mut conn)
                .await
                .map_err(|e| self.error(e))?;
        }
        if !self.settings_checked.swap(true, Ordering::Relaxed) {
            for finding in self.settings_problems(&mut conn).await {
                tracing::debug!(store = %self.target, "cosid: {finding}");
            }
        }
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// Drops the shared connection after a failure that may have broken it.
    async fn forget_connection(&self, e: &RedisError) {
        if e.is_io_error()
            || e.is_connection_dropped()
            || e.is_timeout()
            || e.is_unrecoverable_error()
        {
            *self.conn.lock().await = None;
        }
    }

    /// What the server's settings leave of the safety claim: one line per setting that differs from what
    /// `docs/stores.md` asks for. Settings the server does not show (`CONFIG` not permitted) are skipped.
    pub async fn settings_warnings(&self) -> Result<Vec<String>, StoreError> {
        let findings = self.durability().await?;
        Ok(findings.iter().map(ToString::to_string).collect())
    }

    async fn settings_problems(&self, conn: &mut MultiplexedConnection) -> Vec<Finding> {
        let mut problems = Vec::new();
        for (name, wanted) in REQUIRED_SETTINGS {
            let reply: Result<std::collections::HashMap<String, String>, _> =
                ::redis::cmd("CONFIG")
                    .arg("GET")
                    .arg(name)
                    .query_async(conn)
                    .await;
            match reply {
                Ok(values) => match values.get(name) {
                    Some(v) if v.eq_ignore_ascii_case(wanted) => {}
                    Some(v) => problems.push(Finding {
                        store: KIND,
                        setting: name.to_string(),
                        value: v.clone(),
                        expected: wanted.to_string(),
                    }),
                    None => {}
                },
                Err(e) => {
                    tracing::debug!(store = %self.target, error = %e, "cosid: cannot read Redis setting {name}")
                }
            }
        }
        problems
    }

    /// Runs one script on the namespace's two keys; returns the fields after an `ok`, or the refusal as an error.
    async fn call(
        &self,
        script: &Script,
        op: &str,
        namespace: &Namespace,
        slot: Option<u32>,
        args: &[String],
    ) -> Result<Vec<Value>, StoreError> {
        let mut conn = self.connection().await?;
        let mut invocation = script.prepare_invoke();
        invocation
            .key(Self::namespace_key(namespace))
            .key(Self::slots_key(namespace));
        for key in Self::index_keys(namespace) {
            invocation.key(key);
        }
        for a in args {
            invocation.arg(a);
        }
        let result = invocation.invoke_async::<Value>(&mut conn).await;
        let reply = self.finish(result).await?;
        let unexpected =
            |v: &Value| generic(format!("unexpected reply from the {op} script: {v:?}"));
        let Value::Array(mut fields) = reply else {
            return Err(unexpected(&reply));
        };
        let tag = fields
            .first()
            .and_then(text)
            .ok_or_else(|| unexpected(&Value::Array(fields.clone())))?;
        let reply = Reply {
            op,
            fields: &fields,
        };
        match tag.as_str() {
            "ok" => {
                fields.remove(0);
                Ok(fields)
            }
            "exhausted" => Err(StoreError::Exhausted {
                namespace: namespace.to_string(),
                slots: reply.int(1)?,
                earliest_expiry: reply.int(2)?,
                store_now: reply.int(3)?,
            }),
            "mismatch" => Err(StoreError::NamespaceMismatch {
                namespace: namespace.to_string(),
                field: match reply.text(1)?.as_str() {
                    "bits" => "bits",
                    "tolerance_ms" => "tolerance_ms",
                    "layout epoch_ms" => "layout epoch_ms",
                    "layout tick_ms" => "layout tick_ms",
                    "layout timestamp_bits" => "layout timestamp_bits",
                    "layout slot_bits" => "layout slot_bits",
                    "layout sequence_bits" => "layout sequence_bits",
                    _ => return Err(unexpected(&Value::Array(fields.clone()))),
                },
                stored: reply.int(2)?,
                requested: reply.int(3)?,
            }),
            "lost" => Err(StoreError::LeaseLost {
                namespace: namespace.to_string(),
                slot: slot.unwrap_or_default(),
                reason: reply.text(1)?,
            }),
            "regression" => Err(StoreError::Regression {
                store: KIND,
                what: format!("{} of namespace {namespace}", reply.text(1)?),
                detail: reply.text(2)?,
            }),
            "corrupt" => Err(StoreError::Corrupt {
                store: KIND,
                what: format!("{} of namespace {namespace}", reply.text(1)?),
                detail: reply.text(2)?,
            }),
            "lowered" => Err(StoreError::NotBeforeLowered {
                namespace: namespace.to_string(),
                stored: reply.int(1)?,
                requested: reply.int(2)?,
            }),
            _ => Err(unexpected(&Value::Array(fields.clone()))),
        }
    }

    /// Maps the result of a plain command, dropping the connection if the command broke it.
    async fn finish<T>(&self, result: Result<T, RedisError>) -> Result<T, StoreError> {
        match result {
            Ok(v) => Ok(v),
            Err(e) => {
                self.forget_connection(&e).await;
                Err(self.error(e))
            }
        }
    }
}

/// The fields of a script's reply, read with the operation named in errors.
struct Reply<'a> {
    op: &'a str,
    fields: &'a [Value],
}

impl Reply<'_> {
    fn bad(&self, i: usize, expected: &str) -> StoreError {
        generic(format!(
            "reply field {i} of the {} script is {:?}; expected {expected}",
            self.op,
            self.fields.get(i)
        ))
    }

    fn int(&self, i: usize) -> Result<u64, StoreError> {
        match self.fields.get(i) {
            Some(Value::Int(n)) if *n >= 0 => Ok(*n as u64),
            _ => Err(self.bad(i, "a non-negative integer")),
        }
    }

    fn text(&self, i: usize) -> Result<String, StoreError> {
        self.fields
            .get(i)
            .and_then(text)
            .ok_or_else(|| self.bad(i, "a UTF-8 string"))
    }

    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        match self.fields.get(i) {
            Some(Value::Nil) => Ok(None),
            _ => self.text(i).map(Some),
        }
    }

    fn opt_int(&self, i: usize) -> Result<Option<u64>, StoreError> {
        match self.fields.get(i) {
            Some(Value::Nil) => Ok(None),
            _ => self.int(i).map(Some),
        }
    }

    /// A namespace record's layout: its text, or nil (Lua's `false`) for a record written before layouts were.
    fn layout(&self, namespace: &Namespace, i: usize) -> Result<Option<Layout>, StoreError> {
        match self.fields.get(i) {
            None | Some(Value::Nil) => Ok(None),
            _ => layout_text::decode(&self.text(i)?)
                .map(Some)
                .map_err(|detail| StoreError::Corrupt {
                    store: KIND,
                    what: format!("the namespace record of namespace {namespace}"),
                    detail,
                }),
        }
    }

    fn slot(&self, i: usize) -> Result<u32, StoreError> {
        u32::try_from(self.int(i)?).map_err(|_| self.bad(i, "a slot number below 2^32"))
    }

    fn owner(
        &self,
        namespace: &Namespace,
        slot: u32,
        key: usize,
    ) -> Result<Option<Owner>, StoreError> {
        match (self.opt_text(key)?, self.opt_text(key + 1)?) {
            (None, None) => Ok(None),
            (Some(key), Some(incarnation)) => Ok(Some(Owner {
                key,
                incarnation: incarnation.parse().map_err(|_| StoreError::Corrupt {
                    store: KIND,
                    what: format!("slot {slot} of namespace {namespace}"),
                    detail: format!("incarnation {incarnation:?} is not a UUID"),
                })?,
            })),
            _ => Err(self.bad(key, "an owner key and incarnation, both set or both empty")),
        }
    }

    /// `[slot, key, incarnation, fence, expires_at, floor, ceiling, store_now, duplicate slot]`.
    fn lease(&self, namespace: &Namespace) -> Result<Acquired, StoreError> {
        let slot = self.slot(0)?;
        let owner = self
            .owner(namespace, slot, 1)?
            .ok_or_else(|| self.bad(1, "the holder's key"))?;
        let duplicate_owner_key = self
            .opt_int(8)?
            .map(|s| u32::try_from(s).map_err(|_| self.bad(8, "a slot number")))
            .transpose()?;
        Ok(Acquired {
            lease: SlotLease {
                namespace: namespace.clone(),
                slot,
                owner,
                fence: self.int(3)?,
                expires_at: self.int(4)?,
                floor: self.int(5)?,
                ceiling: self.int(6)?,
                store_now: self.int(7)?,
            },
            duplicate_owner_key,
        })
    }

    /// `[slot, key, incarnation, last_owner_key, fence, expires_at, floor, ceiling, next_floor]`.
    fn slot_record(&self, namespace: &Namespace) -> Result<SlotRecord, StoreError> {
        let slot = self.slot(0)?;
        Ok(SlotRecord {
            slot,
            owner: self.owner(namespace, slot, 1)?,
            last_owner_key: self.opt_text(3)?,
            fence: self.int(4)?,
            expires_at: self.int(5)?,
            floor: self.int(6)?,
            ceiling: self.int(7)?,
            next_floor: self.int(8)?,
        })
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

fn array(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Array(a) => Some(a),
        _ => None,
    }
}

#[async_trait::async_trait]
impl LeaseStore for RedisStore {
    fn kind(&self) -> &'static str {
        KIND
    }

    async fn durability(&self) -> Result<Vec<Finding>, StoreError> {
        let mut conn = self.connection().await?;
        Ok(self.settings_problems(&mut conn).await)
    }

    /// Connects and loads the scripts; Redis needs no schema.
    async fn init(&self) -> Result<(), StoreError> {
        self.connection().await.map(|_| ())
    }

    async fn acquire(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        request: &AcquireRequest,
    ) -> Result<Acquired, StoreError> {
        let args = [
            config.bits.to_string(),
            checked_arg("tolerance_ms", config.tolerance_ms)?,
            request.owner.key.clone(),
            request.owner.incarnation.to_string(),
            checked_arg("ttl_ms", request.ttl_ms)?,
            request
                .preferred_slot
                .map_or_else(String::new, |s| s.to_string()),
            layout_text::encode(&config.layout),
        ];
        let fields = self
            .call(&self.scripts.acquire, "acquire", namespace, None, &args)
            .await?;
        Reply {
            op: "acquire",
            fields: &fields,
        }
        .lease(namespace)
    }

    async fn renew(
        &self,
        lease: &SlotLease,
        ttl_ms: u64,
        tolerance_ms: u64,
    ) -> Result<SlotLease, StoreError> {
        let args = [
            lease.slot.to_string(),
            lease.owner.incarnation.to_string(),
            checked_arg("fence", lease.fence)?,
            checked_arg("ttl_ms", ttl_ms)?,
            checked_arg("tolerance_ms", tolerance_ms)?,
            checked_arg("floor", lease.floor)?,
            checked_arg("ceiling", lease.ceiling)?,
        ];
        let fields = self
            .call(
                &self.scripts.renew,
                "renew",
                &lease.namespace,
                Some(lease.slot),
                &args,
            )
            .await?;
        Reply {
            op: "renew",
            fields: &fields,
        }
        .lease(&lease.namespace)
        .map(|a| a.lease)
    }

    async fn release(&self, lease: &SlotLease, last_issued: Option<u64>) -> Result<(), StoreError> {
        let args = [
            lease.slot.to_string(),
            lease.owner.incarnation.to_string(),
            checked_arg("fence", lease.fence)?,
            // Only min(last_issued, ceiling) is used, and the ceiling is below the bound: clamping changes nothing.
            last_issued.map_or_else(String::new, |l| l.min(MAX_EXACT).to_string()),
            checked_arg("floor", lease.floor)?,
            checked_arg("ceiling", lease.ceiling)?,
        ];
        self.call(
            &self.scripts.release,
            "release",
            &lease.namespace,
            Some(lease.slot),
            &args,
        )
        .await
        .map(|_| ())
    }

    async fn inspect(&self, namespace: &Namespace) -> Result<Inspection, StoreError> {
        let fields = self
            .call(&self.scripts.inspect, "inspect", namespace, None, &[])
            .await?;
        let reply = Reply {
            op: "inspect",
            fields: &fields,
        };
        let store_now = reply.int(0)?;
        let ns = match fields.get(1) {
            Some(Value::Nil) => None,
            Some(v) => {
                let r = Reply {
                    op: "inspect",
                    fields: array(v).ok_or_else(|| reply.bad(1, "the namespace record"))?,
                };
                Some(NamespaceRecord {
                    bits: u8::try_from(r.int(0)?).map_err(|_| r.bad(0, "bits below 256"))?,
                    tolerance_ms: r.int(1)?,
                    not_before: r.int(2)?,
                    layout: r.layout(namespace, 3)?,
                })
            }
            None => return Err(reply.bad(1, "the namespace record")),
        };
        let slots = array(fields.get(2).unwrap_or(&Value::Nil))
            .ok_or_else(|| reply.bad(2, "the slot records"))?
            .iter()
            .map(|v| {
                Reply {
                    op: "inspect",
                    fields: array(v).unwrap_or_default(),
                }
                .slot_record(namespace)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Inspection {
            namespace: ns,
            slots,
            store_now,
        })
    }

    async fn raise_not_before(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        not_before: u64,
    ) -> Result<NamespaceRecord, StoreError> {
        let args = [
            config.bits.to_string(),
            checked_arg("tolerance_ms", config.tolerance_ms)?,
            checked_arg("not_before", not_before)?,
            layout_text::encode(&config.layout),
        ];
        let fields = self
            .call(
                &self.scripts.raise_not_before,
                "raise_not_before",
                namespace,
                None,
                &args,
            )
            .await?;
        let reply = Reply {
            op: "raise_not_before",
            fields: &fields,
        };
        Ok(NamespaceRecord {
            bits: u8::try_from(reply.int(0)?).map_err(|_| reply.bad(0, "bits below 256"))?,
            tolerance_ms: reply.int(1)?,
            not_before: reply.int(2)?,
            layout: reply.layout(namespace, 3)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_share_a_hash_tag_and_never_collide() {
        let a = Namespace::new("a{b}:c").unwrap();
        let b = Namespace::new("a%7Bb%7D%3Ac").unwrap();
        for ns in [&a, &b] {
            let key = RedisStore::namespace_key(ns);
            let tag = &key[key.find('{').unwrap() + 1..key.find('}').unwrap()];
            assert_eq!(tag, ns.encoded());
            assert!(RedisStore::slots_key(ns).contains(&format!("{{{tag}}}")));
            for key in RedisStore::index_keys(ns) {
                assert!(key.contains(&format!("{{{tag}}}")), "{key}");
            }
        }
        assert_ne!(RedisStore::namespace_key(&a), RedisStore::namespace_key(&b));
    }

    #[test]
    fn urls_are_parsed_and_passwords_kept_out_of_messages() {
        assert!(RedisStore::open("redis://127.0.0.1:6379/0").is_ok());
        assert!(RedisStore::open("rediss://user:secret@example.invalid:6380/1").is_ok());
        let store = RedisStore::open("redis://user:secret@127.0.0.1:1/0").unwrap();
        assert!(!format!("{store:?}").contains("secret"));
        match RedisStore::open("redis://user:secret@127.0.0.1:notaport/0") {
            Err(StoreError::InvalidUrl { url, .. }) => assert!(!url.contains("secret"), "{url}"),
            other => panic!("expected InvalidUrl, got {other:?}"),
        }
    }

    #[test]
    fn arguments_past_2_pow_53_are_refused() {
        assert_eq!(
            checked_arg("ttl_ms", MAX_EXACT).unwrap(),
            MAX_EXACT.to_string()
        );
        let err = checked_arg("ttl_ms", MAX_EXACT + 1)
            .unwrap_err()
            .to_string();
        assert!(err.contains("ttl_ms = 9007199254740992"), "{err}");
    }
}
