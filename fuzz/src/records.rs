//! Lease records in a store's raw form: arbitrary rows planted in a real SQLite file with SQLite's own client,
//! then read through the public `LeaseStore` calls (`inspect`, `acquire`, `renew`, `release`,
//! `raise_not_before`). The store's row decoding is private, so the target reaches it the way a corrupted file
//! would.

use arbitrary::{Arbitrary, Unstructured};
use cosid::clock::ManualClock;
use cosid::lease::{AcquireRequest, Namespace, NamespaceConfig, Owner, SlotLease, SlotRecord};
use cosid::store::{LeaseStore, SqliteStore};
use rusqlite::types::Value;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

/// A value of any SQLite storage class, biased towards the edges of the integer columns.
#[derive(Arbitrary, Debug, Clone)]
pub(crate) enum Raw {
    Null,
    Small(u8),
    Edge(Edge),
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
    Uuid(u128),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub(crate) enum Edge {
    Zero,
    MinusOne,
    Min,
    Max,
    U32Max,
    TwoPow53,
    Now,
}

pub(crate) const NOW: u64 = 1_700_000_000_000;

impl Raw {
    fn value(&self) -> Value {
        match self {
            Raw::Null => Value::Null,
            Raw::Small(v) => Value::Integer(i64::from(*v)),
            Raw::Edge(e) => Value::Integer(match e {
                Edge::Zero => 0,
                Edge::MinusOne => -1,
                Edge::Min => i64::MIN,
                Edge::Max => i64::MAX,
                Edge::U32Max => i64::from(u32::MAX),
                Edge::TwoPow53 => 1 << 53,
                Edge::Now => NOW as i64,
            }),
            Raw::Int(v) => Value::Integer(*v),
            Raw::Real(v) => Value::Real(*v),
            Raw::Text(s) => Value::Text(s.clone()),
            Raw::Blob(b) => Value::Blob(b.clone()),
            Raw::Uuid(u) => Value::Text(Uuid::from_u128(*u).to_string()),
        }
    }
}

/// What a fuzzed caller does after the rows are planted.
#[derive(Arbitrary, Debug)]
pub(crate) enum Op {
    Inspect,
    /// `bits` is taken modulo 41: 64 and more panic in `protocol::acquire` (a shift overflow, reported), and
    /// 32 to 40 are written by the SQLite store and then refused by its own reader.
    Acquire {
        owner: u8,
        ttl_ms: u32,
        preferred_slot: Option<u32>,
        bits: u8,
        tolerance_ms: u32,
    },
    /// Renews the lease of the last acquire, or one made up from `lease`.
    Renew {
        lease: Option<FakeLease>,
        ttl_ms: u32,
        tolerance_ms: u32,
    },
    Release {
        lease: Option<FakeLease>,
        last_issued: Option<u64>,
    },
    RaiseNotBefore {
        bits: u8,
        tolerance_ms: u32,
        not_before: u64,
    },
    /// Moves the store's clock, forwards or backwards.
    Clock(i32),
}

#[derive(Arbitrary, Debug, Clone)]
pub(crate) struct FakeLease {
    slot: u32,
    owner: u8,
    fence: u64,
}

/// Two owner keys, three incarnations each.
pub(crate) fn owner(n: u8) -> Owner {
    Owner {
        key: format!("fuzz-{}", n % 2),
        incarnation: Uuid::from_u128(u128::from(n % 6) + 1),
    }
}

#[derive(Arbitrary, Debug)]
struct SqliteInput {
    namespace: Option<[Raw; 3]>,
    slots: Vec<[Raw; 9]>,
    ops: Vec<Op>,
}

struct Sqlite {
    _dir: tempfile::TempDir,
    raw: rusqlite::Connection,
    store: Arc<SqliteStore>,
    clock: ManualClock,
    runtime: tokio::runtime::Runtime,
}

thread_local! {
    static SQLITE: Sqlite = {
        let dir = tempfile::tempdir().expect("temporary folder");
        let path = dir.path().join("leases.db");
        let clock = ManualClock::new(NOW);
        let store = Arc::new(SqliteStore::open(&path, Arc::new(clock.clone())).expect("open the store"));
        let raw = rusqlite::Connection::open(&path).expect("open the file with SQLite");
        raw.busy_timeout(std::time::Duration::from_secs(10)).expect("busy timeout");
        Sqlite { _dir: dir, raw, store, clock, runtime: runtime() }
    };
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

pub(crate) fn namespace() -> Namespace {
    Namespace::new("fuzz").expect("valid name")
}

/// Rows of any type in the SQLite store's tables, read back through the store.
pub fn sqlite_records(data: &[u8]) {
    let Ok(input) = SqliteInput::arbitrary(&mut Unstructured::new(data)) else {
        return;
    };
    SQLITE.with(|db| {
        let ns = namespace();
        db.clock.set(NOW);
        db.raw
            .execute_batch("DELETE FROM cosid_namespace; DELETE FROM cosid_slot;")
            .expect("empty the tables");
        if let Some(row) = &input.namespace {
            // A row SQLite refuses (NULL in a NOT NULL column) is simply not planted.
            let _ = db.raw.execute(
                "INSERT INTO cosid_namespace (name, bits, tolerance_ms, not_before) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![ns.encoded(), row[0].value(), row[1].value(), row[2].value()],
            );
        }
        for row in input.slots.iter().take(8) {
            let mut values = vec![Value::Text(ns.encoded().to_owned())];
            values.extend(row.iter().map(Raw::value));
            let _ = db.raw.execute(
                "INSERT OR REPLACE INTO cosid_slot (namespace, slot, owner_key, incarnation, last_owner_key, fence, \
                 expires_at, floor, ceiling, next_floor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                rusqlite::params_from_iter(values),
            );
        }
        db.runtime
            .block_on(run_ops(db.store.as_ref(), &ns, &input.ops, &|ms| {
                db.clock.set(ms)
            }));
    });
}

thread_local! {
    /// Calls made and calls that succeeded on this thread, by kind, so that a run can show it reached past the
    /// decoding (the smoke test prints them).
    static CALLS: [Cell<(u64, u64)>; 4] = const { [const { Cell::new((0, 0)) }; 4] };
}
const KINDS: [&str; 4] = ["inspect", "acquire", "renew", "release"];

fn count(kind: usize, ok: bool) {
    CALLS.with(|c| {
        let (accepted, all) = c[kind].get();
        c[kind].set((accepted + u64::from(ok), all + 1));
    });
}

/// `inspect 12/40, acquire ...`: store calls on this thread that succeeded out of those made, since the last call
/// of this.
pub fn take_stats() -> String {
    CALLS.with(|c| {
        KINDS
            .iter()
            .zip(c)
            .map(|(k, cell)| {
                let (ok, all) = cell.take();
                format!("{k} {ok}/{all}")
            })
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// Runs `ops` against `store`, checking what the protocol promises of every answer that is not an error.
pub(crate) async fn run_ops(
    store: &dyn LeaseStore,
    ns: &Namespace,
    ops: &[Op],
    set_clock: &dyn Fn(u64),
) {
    let mut now = NOW;
    let mut held: Option<SlotLease> = None;
    for op in ops.iter().take(8) {
        match op {
            Op::Inspect => {
                count(0, store.inspect(ns).await.is_ok());
            }
            Op::Acquire {
                owner: o,
                ttl_ms,
                preferred_slot,
                bits,
                tolerance_ms,
            } => {
                let before = store.inspect(ns).await.ok();
                let config = NamespaceConfig {
                    bits: *bits % 41,
                    tolerance_ms: u64::from(*tolerance_ms),
                    layout: cosid::Layout::millis(),
                };
                let request = AcquireRequest {
                    owner: owner(*o),
                    ttl_ms: u64::from(*ttl_ms).max(1),
                    preferred_slot: *preferred_slot,
                };
                let result = store.acquire(ns, &config, &request).await;
                count(1, result.is_ok());
                if let Ok(acquired) = result {
                    let lease = acquired.lease;
                    check_grant(&lease, before.as_ref().map(|i| (&i.slots, i.namespace)));
                    held = Some(lease);
                }
            }
            Op::Renew {
                lease,
                ttl_ms,
                tolerance_ms,
            } => {
                let Some(l) = pick(lease, &held, ns) else {
                    continue;
                };
                let result = store
                    .renew(&l, u64::from(*ttl_ms).max(1), u64::from(*tolerance_ms))
                    .await;
                count(2, result.is_ok());
                if let Ok(renewed) = result {
                    assert_eq!(
                        (renewed.slot, renewed.fence, renewed.floor),
                        (l.slot, l.fence, l.floor)
                    );
                    assert!(
                        renewed.floor <= renewed.ceiling,
                        "renewed window {renewed:?}"
                    );
                    held = Some(renewed);
                }
            }
            Op::Release { lease, last_issued } => {
                let Some(l) = pick(lease, &held, ns) else {
                    continue;
                };
                count(3, store.release(&l, *last_issued).await.is_ok());
            }
            Op::RaiseNotBefore {
                bits,
                tolerance_ms,
                not_before,
            } => {
                let config = NamespaceConfig {
                    bits: *bits % 41,
                    tolerance_ms: u64::from(*tolerance_ms),
                    layout: cosid::Layout::millis(),
                };
                let _ = store.raise_not_before(ns, &config, *not_before).await;
            }
            Op::Clock(delta) => {
                now = now.saturating_add_signed(i64::from(*delta));
                set_clock(now);
            }
        }
    }
}

fn pick(fake: &Option<FakeLease>, held: &Option<SlotLease>, ns: &Namespace) -> Option<SlotLease> {
    match (fake, held) {
        (Some(f), _) => Some(SlotLease {
            namespace: ns.clone(),
            slot: f.slot,
            owner: owner(f.owner),
            fence: f.fence,
            expires_at: NOW,
            floor: 0,
            ceiling: NOW,
            store_now: NOW,
        }),
        (None, Some(l)) => Some(l.clone()),
        (None, None) => None,
    }
}

/// A grant is a window the protocol could have made: above the slot's `next_floor` and the namespace's
/// `not_before` when it is a new grant, never inverted.
fn check_grant(
    lease: &SlotLease,
    before: Option<(&Vec<SlotRecord>, Option<cosid::lease::NamespaceRecord>)>,
) {
    assert!(lease.floor <= lease.ceiling, "granted window {lease:?}");
    assert!(lease.fence >= 1, "granted fence 0: {lease:?}");
    let Some((slots, ns)) = before else {
        return;
    };
    let by_slot: BTreeMap<u32, &SlotRecord> = slots.iter().map(|r| (r.slot, r)).collect();
    let prev = by_slot.get(&lease.slot);
    if prev.is_some_and(|p| p.owner.as_ref() == Some(&lease.owner) && p.fence == lease.fence) {
        return; // An idempotent retry: the stored lease, unchanged.
    }
    if let Some(prev) = prev {
        assert!(
            lease.fence > prev.fence,
            "fence went from {} to {}",
            prev.fence,
            lease.fence
        );
        assert!(
            lease.floor >= prev.next_floor,
            "floor {} below next_floor {}",
            lease.floor,
            prev.next_floor
        );
    }
    if let Some(ns) = ns {
        assert!(
            lease.floor >= ns.not_before,
            "floor {} below not_before {}",
            lease.floor,
            ns.not_before
        );
    }
}
