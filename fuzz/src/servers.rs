//! Lease records in Redis' and etcd's raw forms, planted with each server's own client and read back through the
//! public `LeaseStore` calls. Redis decodes its records in the Lua scripts on the server (`v1;fence;...` strings
//! and the namespace hash's fields); etcd's are JSON documents decoded in Rust. Each target does nothing when its
//! server's URL variable (`COSID_TEST_REDIS_URL`, `COSID_TEST_ETCD_URL`) is unset.

use crate::records::{run_ops, runtime, Op, NOW};
use arbitrary::{Arbitrary, Unstructured};
use cosid::clock::ManualClock;
use cosid::lease::Namespace;
use cosid::store::{EtcdStore, RedisStore, StoreUrl};
use std::sync::Arc;

/// Text for a field: usually well formed, sometimes anything.
#[derive(Arbitrary, Debug)]
enum Field {
    Number(u64),
    Small(u8),
    Negative(i64),
    Text(String),
    Bytes(Vec<u8>),
    Missing,
}

impl Field {
    fn bytes(&self) -> Option<Vec<u8>> {
        match self {
            Field::Number(n) => Some(n.to_string().into_bytes()),
            Field::Small(n) => Some(n.to_string().into_bytes()),
            Field::Negative(n) => Some(n.to_string().into_bytes()),
            Field::Text(s) => Some(s.clone().into_bytes()),
            Field::Bytes(b) => Some(b.clone()),
            Field::Missing => None,
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes().unwrap_or_default()).into_owned()
    }
}

/// An owner key as the Redis record writes it (`-`, or `<length>:<bytes>`), with a length that may lie.
#[derive(Arbitrary, Debug)]
enum Key {
    Absent,
    Exact(String),
    Lying(u16, String),
}

impl Key {
    fn encode(&self) -> String {
        match self {
            Key::Absent => "-".into(),
            Key::Exact(s) => format!("{}:{s}", s.len()),
            Key::Lying(n, s) => format!("{n}:{s}"),
        }
    }
}

/// A record the protocol could have written (slot, fence, expiry, window, owner), before any damage.
#[derive(Arbitrary, Debug)]
struct Plausible {
    fence: u8,
    expires_in: i16,
    floor: u16,
    width: u16,
    slack: u16,
    owner: Option<u8>,
    last_owner: Option<u8>,
}

impl Plausible {
    /// `(fence, expires_at, floor, ceiling, next_floor)`.
    fn numbers(&self) -> [u64; 5] {
        let floor = NOW - 100_000 + u64::from(self.floor);
        let ceiling = floor + u64::from(self.width);
        [
            u64::from(self.fence).max(1),
            NOW.saturating_add_signed(i64::from(self.expires_in)),
            floor,
            ceiling,
            ceiling + u64::from(self.slack),
        ]
    }
}

#[derive(Arbitrary, Debug)]
#[allow(clippy::large_enum_variant)] // A few hundred bytes per input: boxing buys nothing here.
enum RedisSlot {
    Plausible(Plausible),
    Raw(Vec<u8>),
    Record {
        version: Option<String>,
        numbers: [Field; 5],
        incarnation: Option<u128>,
        raw_incarnation: Field,
        owner: Key,
        last_owner: Key,
    },
}

impl RedisSlot {
    fn encode(&self) -> Vec<u8> {
        match self {
            RedisSlot::Plausible(p) => {
                let [fence, expires, floor, ceiling, next_floor] = p.numbers();
                let key = |k: Option<u8>| match k {
                    Some(n) => {
                        let key = crate::records::owner(n).key;
                        format!("{}:{key}", key.len())
                    }
                    None => "-".into(),
                };
                let incarnation = p.owner.map_or("-".into(), |n| {
                    crate::records::owner(n).incarnation.to_string()
                });
                format!(
                    "v1;{fence};{expires};{floor};{ceiling};{next_floor};{incarnation};{}{}",
                    key(p.owner),
                    key(p.last_owner)
                )
                .into_bytes()
            }
            RedisSlot::Raw(b) => b.clone(),
            RedisSlot::Record {
                version,
                numbers,
                incarnation,
                raw_incarnation,
                owner,
                last_owner,
            } => {
                let mut s = version.clone().unwrap_or_else(|| "v1".into());
                for n in numbers {
                    s.push(';');
                    s.push_str(&n.text());
                }
                s.push(';');
                match incarnation {
                    Some(u) => s.push_str(&uuid::Uuid::from_u128(*u).to_string()),
                    None => s.push_str(&raw_incarnation.text()),
                }
                s.push(';');
                s.push_str(&owner.encode());
                s.push_str(&last_owner.encode());
                s.into_bytes()
            }
        }
    }
}

#[derive(Arbitrary, Debug)]
enum RedisNamespace {
    Absent,
    Valid {
        bits: u8,
        tolerance_ms: u16,
        not_before: u32,
    },
    Fields {
        bits: Field,
        tolerance_ms: Field,
        not_before: Field,
        extra: Option<(String, Field)>,
    },
}

#[derive(Arbitrary, Debug)]
struct RedisInput {
    namespace: RedisNamespace,
    /// Slot records under a field named by a small number, or by anything.
    slots: Vec<(Result<u8, Field>, RedisSlot)>,
    ops: Vec<Op>,
}

struct Redis {
    client: redis::Client,
    store: Arc<RedisStore>,
    ns: Namespace,
    runtime: tokio::runtime::Runtime,
}

thread_local! {
    static REDIS: Option<Redis> = std::env::var("COSID_TEST_REDIS_URL").ok().filter(|u| !u.is_empty()).map(|url| {
        Redis {
            client: redis::Client::open(url.as_str()).expect("COSID_TEST_REDIS_URL is a Redis URL"),
            store: Arc::new(RedisStore::open(&url).expect("open the Redis store")),
            ns: Namespace::new(format!("fuzz-{}", std::process::id())).expect("valid name"),
            runtime: runtime(),
        }
    });
}

/// Arbitrary namespace and slot hashes in Redis, read back through the Redis store.
pub fn redis_records(data: &[u8]) {
    let Ok(input) = RedisInput::arbitrary(&mut Unstructured::new(data)) else {
        return;
    };
    REDIS.with(|r| {
        let Some(r) = r else { return };
        r.runtime.block_on(async {
            let mut conn = r
                .client
                .get_multiplexed_async_connection()
                .await
                .expect("connect to COSID_TEST_REDIS_URL");
            let ns_key = RedisStore::namespace_key(&r.ns);
            let slots_key = RedisStore::slots_key(&r.ns);
            let mut pipe = redis::pipe();
            // Records planted by hand, so the acquire index goes with the old ones (it is rebuilt from these).
            pipe.del(&ns_key)
                .del(&slots_key)
                .del(&RedisStore::index_keys(&r.ns));
            let mut ns_fields: Vec<(String, Vec<u8>)> = Vec::new();
            match &input.namespace {
                RedisNamespace::Absent => {}
                RedisNamespace::Valid {
                    bits,
                    tolerance_ms,
                    not_before,
                } => {
                    ns_fields.push(("bits".into(), (bits % 8 + 1).to_string().into_bytes()));
                    ns_fields.push(("tolerance_ms".into(), tolerance_ms.to_string().into_bytes()));
                    ns_fields.push(("not_before".into(), not_before.to_string().into_bytes()));
                }
                RedisNamespace::Fields {
                    bits,
                    tolerance_ms,
                    not_before,
                    extra,
                } => {
                    for (name, f) in [
                        ("bits", bits),
                        ("tolerance_ms", tolerance_ms),
                        ("not_before", not_before),
                    ] {
                        if let Some(v) = f.bytes() {
                            ns_fields.push((name.into(), v));
                        }
                    }
                    if let Some((name, f)) = extra {
                        ns_fields.push((name.clone(), f.bytes().unwrap_or_default()));
                    }
                }
            }
            for (name, v) in &ns_fields {
                pipe.hset(&ns_key, name, v);
            }
            for (field, slot) in input.slots.iter().take(8) {
                let field = match field {
                    Ok(n) => (n % 8).to_string(),
                    Err(f) => f.text(),
                };
                pipe.hset(&slots_key, field, slot.encode());
            }
            let () = pipe
                .query_async(&mut conn)
                .await
                .expect("plant the records in Redis");
            run_ops(r.store.as_ref(), &r.ns, &input.ops, &|_| {}).await;
        });
    });
}

/// A JSON value for a field: usually of the right type, sometimes not.
#[derive(Arbitrary, Debug)]
enum Json {
    Absent,
    Null,
    Number(u64),
    Small(u8),
    Negative(i64),
    Float(f64),
    Text(String),
    Bool(bool),
    Uuid(u128),
    Array,
    Object,
}

impl Json {
    fn value(&self) -> Option<String> {
        Some(match self {
            Json::Absent => return None,
            Json::Null => "null".into(),
            Json::Number(n) => n.to_string(),
            Json::Small(n) => n.to_string(),
            Json::Negative(n) => n.to_string(),
            Json::Float(f) if f.is_finite() => format!("{f:?}"),
            Json::Float(_) => "1e999".into(),
            Json::Text(s) => format!("{s:?}"),
            Json::Bool(b) => b.to_string(),
            Json::Uuid(u) => format!("\"{}\"", uuid::Uuid::from_u128(*u)),
            Json::Array => "[1,2]".into(),
            Json::Object => "{}".into(),
        })
    }
}

fn object(fields: &[(&str, &Json)]) -> Vec<u8> {
    let body: Vec<String> = fields
        .iter()
        .filter_map(|(k, v)| v.value().map(|v| format!("{k:?}:{v}")))
        .collect();
    format!("{{{}}}", body.join(",")).into_bytes()
}

#[derive(Arbitrary, Debug)]
enum EtcdValue {
    ValidNamespace {
        bits: u8,
        tolerance_ms: u16,
        not_before: u32,
    },
    Plausible(Plausible),
    Raw(Vec<u8>),
    Namespace([Json; 3]),
    Slot {
        owner: Option<[Json; 2]>,
        owner_field: Json,
        fields: [Json; 6],
    },
}

impl EtcdValue {
    fn encode(&self) -> Vec<u8> {
        match self {
            EtcdValue::ValidNamespace {
                bits,
                tolerance_ms,
                not_before,
            } => format!(
                "{{\"bits\":{},\"tolerance_ms\":{tolerance_ms},\"not_before\":{not_before}}}",
                bits % 8 + 1
            )
            .into_bytes(),
            EtcdValue::Plausible(p) => {
                let [fence, expires, floor, ceiling, next_floor] = p.numbers();
                let owner = p.owner.map_or("null".into(), |n| {
                    let o = crate::records::owner(n);
                    format!(
                        "{{\"key\":{:?},\"incarnation\":\"{}\"}}",
                        o.key, o.incarnation
                    )
                });
                let last = p.last_owner.map_or("null".into(), |n| {
                    format!("{:?}", crate::records::owner(n).key)
                });
                format!(
                    "{{\"owner\":{owner},\"last_owner_key\":{last},\"fence\":{fence},\"expires_at\":{expires},\
                     \"floor\":{floor},\"ceiling\":{ceiling},\"next_floor\":{next_floor}}}"
                )
                .into_bytes()
            }
            EtcdValue::Raw(b) => b.clone(),
            EtcdValue::Namespace([b, t, n]) => {
                object(&[("bits", b), ("tolerance_ms", t), ("not_before", n)])
            }
            EtcdValue::Slot {
                owner,
                owner_field,
                fields,
            } => {
                let owner_json = owner.as_ref().map(|[k, i]| {
                    String::from_utf8(object(&[("key", k), ("incarnation", i)])).expect("utf-8")
                });
                let owner_text = match (&owner_json, owner_field.value()) {
                    (Some(o), _) => Some(o.clone()),
                    (None, v) => v,
                };
                let names = [
                    "last_owner_key",
                    "fence",
                    "expires_at",
                    "floor",
                    "ceiling",
                    "next_floor",
                ];
                let mut body: Vec<String> = names
                    .iter()
                    .zip(fields)
                    .filter_map(|(k, v)| v.value().map(|v| format!("{k:?}:{v}")))
                    .collect();
                if let Some(o) = owner_text {
                    body.push(format!("\"owner\":{o}"));
                }
                format!("{{{}}}", body.join(",")).into_bytes()
            }
        }
    }
}

#[derive(Arbitrary, Debug)]
enum EtcdKey {
    Namespace,
    Slot(u8),
    /// Any text after the namespace's prefix (`slot/07`, `other`, ...).
    Other(String),
}

#[derive(Arbitrary, Debug)]
struct EtcdInput {
    keys: Vec<(EtcdKey, EtcdValue)>,
    ops: Vec<Op>,
}

struct Etcd {
    client: etcd_client::Client,
    store: Arc<EtcdStore>,
    ns: Namespace,
    clock: ManualClock,
    runtime: tokio::runtime::Runtime,
}

thread_local! {
    static ETCD: Option<Etcd> = std::env::var("COSID_TEST_ETCD_URL").ok().filter(|u| !u.is_empty()).map(|url| {
        let Ok(StoreUrl::Etcd(endpoints)) = StoreUrl::parse(&url) else {
            panic!("COSID_TEST_ETCD_URL is not an etcd:// URL: {url:?}");
        };
        let runtime = runtime();
        let clock = ManualClock::new(NOW);
        let (client, store) = runtime.block_on(async {
            let client = etcd_client::Client::connect(&endpoints, None).await.expect("connect to etcd");
            let store = EtcdStore::open(&endpoints, Arc::new(clock.clone())).await.expect("open the etcd store");
            (client, store)
        });
        Etcd {
            client,
            store: Arc::new(store),
            ns: Namespace::new(format!("fuzz-{}", std::process::id())).expect("valid name"),
            clock,
            runtime,
        }
    });
}

/// Arbitrary JSON (and non-JSON) values under a namespace's etcd keys, read back through the etcd store.
pub fn etcd_records(data: &[u8]) {
    let Ok(input) = EtcdInput::arbitrary(&mut Unstructured::new(data)) else {
        return;
    };
    ETCD.with(|e| {
        let Some(e) = e else { return };
        e.clock.set(NOW);
        e.runtime.block_on(async {
            let mut kv = e.client.kv_client();
            // The store's key layout: `cosid/<encoded name>/ns` and `cosid/<encoded name>/slot/<n>`.
            let prefix = format!("cosid/{}/", e.ns.encoded());
            kv.delete(
                prefix.as_str(),
                Some(etcd_client::DeleteOptions::new().with_prefix()),
            )
            .await
            .expect("clear the namespace in etcd");
            for (key, value) in input.keys.iter().take(8) {
                let key = match key {
                    EtcdKey::Namespace => format!("{prefix}ns"),
                    EtcdKey::Slot(n) => format!("{prefix}slot/{}", n % 8),
                    EtcdKey::Other(s) => format!("{prefix}{s}"),
                };
                kv.put(key, value.encode(), None)
                    .await
                    .expect("plant a record in etcd");
            }
            run_ops(e.store.as_ref(), &e.ns, &input.ops, &|ms| e.clock.set(ms)).await;
        });
    });
}
