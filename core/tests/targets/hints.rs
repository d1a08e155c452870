//! A check shared by the stores whose acquire follows hints kept beside the records (Redis's and etcd's indexes,
//! the SQL stores' `lowest_unused`, MongoDB's lowest-unused lower bound): a hint must never change a decision.
#![allow(dead_code)]

use cosid::conformance::{fresh, CONFIG};
use cosid::lease::{
    protocol, AcquireRequest, Namespace, NamespaceConfig, Owner, SlotLease, SlotRecord,
};
use cosid::store::{LeaseStore, StoreError};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// What a store call answered, with the times left out (two namespaces are called a moment apart).
fn outcome<T>(r: &Result<T, StoreError>, fields: impl Fn(&T) -> String) -> String {
    match r {
        Ok(v) => format!("ok {}", fields(v)),
        Err(e) => format!("{:?}", std::mem::discriminant(e)),
    }
}

/// The same random calls on two namespaces of `store`: one that keeps its acquire hints, and one whose hints
/// `forget` drops before every call, so each of its acquires reads every record (the protocol as written). Every
/// answer must match: slot, fence, duplicate owner key, or the kind of refusal. Eight slots, six owner keys with two
/// incarnations each, preferred slots in and out of range, renewals, releases handing timestamps past the
/// ceiling (a floor ahead of the clock), and `not_before` raised past the tolerance. Leases last 200 ms; rounds of
/// calls start 450 ms apart and stop 150 ms in, so whether a lease has expired never depends on the moment between
/// the two namespaces' calls.
pub async fn hints_never_change_a_decision<F, Fut>(store: Arc<dyn LeaseStore>, mut forget: F)
where
    F: FnMut(Namespace) -> Fut,
    Fut: Future<Output = ()>,
{
    let config = NamespaceConfig { bits: 3, ..CONFIG };
    const TTL: u64 = 200;
    let mut calls = 0;
    for seed in [
        0x9e37_79b9_7f4a_7c15u64,
        0xd1b5_4a32_d192_ed03,
        0x2545_f491_4f6c_dd1d,
    ] {
        let indexed = fresh("hinted");
        let full = fresh("hints-forgotten");
        let mut state = seed;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let owners: Vec<Owner> = (0..12).map(|i| Owner::new(format!("o{}", i % 6))).collect();
        let mut held: Vec<Option<(SlotLease, SlotLease)>> = vec![None; owners.len()];
        for _round in 0..16 {
            let started = std::time::Instant::now();
            for _ in 0..1 + next(12) {
                // Calls stop 150 ms into a round, before any lease granted or renewed in it expires.
                if started.elapsed() > Duration::from_millis(150) {
                    break;
                }
                let o = next(owners.len() as u64) as usize;
                let op = next(20);
                forget(full.clone()).await;
                let (a, b) = match (op, &held[o]) {
                    (0..=10, _) => {
                        let request = AcquireRequest {
                            owner: owners[o].clone(),
                            ttl_ms: TTL,
                            preferred_slot: (next(3) == 0).then(|| next(10) as u32),
                        };
                        let a = store.acquire(&indexed, &config, &request).await;
                        let b = store.acquire(&full, &config, &request).await;
                        let fields = |g: &cosid::lease::Acquired| {
                            format!(
                                "{} {} {:?}",
                                g.lease.slot, g.lease.fence, g.duplicate_owner_key
                            )
                        };
                        let out = (outcome(&a, fields), outcome(&b, fields));
                        if let (Ok(a), Ok(b)) = (a, b) {
                            held[o] = Some((a.lease, b.lease));
                        }
                        out
                    }
                    (11..=14, Some((la, lb))) => {
                        let a = store.renew(la, TTL, config.tolerance_ms).await;
                        let b = store.renew(lb, TTL, config.tolerance_ms).await;
                        let fields = |l: &SlotLease| format!("{} {}", l.slot, l.fence);
                        (outcome(&a, fields), outcome(&b, fields))
                    }
                    (15..=18, Some((la, lb))) => {
                        // None, a timestamp inside the window, or one far past the ceiling.
                        let handed = |l: &SlotLease, pick: u64| match pick {
                            0 => None,
                            1 => Some(l.floor + 1),
                            _ => Some(l.ceiling + 60_000),
                        };
                        let pick = next(3);
                        let a = store.release(la, handed(la, pick)).await;
                        let b = store.release(lb, handed(lb, pick)).await;
                        held[o] = None;
                        (
                            outcome(&a, |_| String::new()),
                            outcome(&b, |_| String::new()),
                        )
                    }
                    (19, _) => {
                        // Past the tolerance until the middle of this round's pause.
                        let wall = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .unwrap()
                            .as_millis() as u64;
                        let not_before = wall + config.tolerance_ms + 225;
                        let a = store.raise_not_before(&indexed, &config, not_before).await;
                        let b = store.raise_not_before(&full, &config, not_before).await;
                        let fields = |r: &cosid::lease::NamespaceRecord| r.not_before.to_string();
                        (outcome(&a, fields), outcome(&b, fields))
                    }
                    _ => continue,
                };
                calls += 1;
                assert_eq!(a, b, "call {calls} (seed {seed:#x}): the hinted namespace answered {a}, a full read {b}");
            }
            tokio::time::sleep(Duration::from_millis(450)).await;
        }
    }
    assert!(calls > 40, "only {calls} calls compared");
}

/// Random namespaces written straight into the store (`write` puts the namespace's rows and sets its hints as the
/// store keeps them: every row through the indexes, the lowest unused slot), then one acquire: its answer must be
/// the protocol's decision on every row. Times are whole seconds and a half away from the store's clock, so the
/// moment between reading the clock and the acquire never changes a decision.
pub async fn hinted_acquires_decide_as_the_protocol_on_every_row<F, Fut>(
    store: Arc<dyn LeaseStore>,
    cases: u32,
    bits: u8,
    mut write: F,
) where
    F: FnMut(Namespace, Vec<SlotRecord>, Option<u32>) -> Fut,
    Fut: Future<Output = ()>,
{
    let config = NamespaceConfig { bits, ..CONFIG };
    let count = 1u32 << config.bits;
    let incarnations: Vec<uuid::Uuid> = (0..3).map(|_| uuid::Uuid::new_v4()).collect();
    let keys = ["k0", "k1", "k2"];
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut checked = 0;
    for case in 0..cases {
        let ns = fresh("hinted-random");
        let now = store.inspect(&ns).await.unwrap().store_now;
        // Whole seconds and a half from now, within spread / 2 seconds.
        let at = |rng: &mut XorShift, spread: u64| {
            now + 500 + 1_000 * rng.below(spread) - 1_000 * (spread / 2)
        };
        let not_before = at(&mut rng, 4).min(now + 1_500);
        store
            .raise_not_before(&ns, &config, not_before)
            .await
            .unwrap();
        // One case in five has every slot held, mostly by other keys: exhausted, or not for this owner. Another
        // has a record on every slot, some free: no slot never used, so only the free records can be taken.
        let full = case % 5 == 0;
        let dense = case % 5 == 1;
        let mut rows = Vec::new();
        for slot in 0..count {
            if !full && !dense && rng.below(4) == 0 {
                continue;
            }
            let owner = (full || rng.below(3) > 0).then(|| Owner {
                key: keys[rng.below(3) as usize].into(),
                incarnation: incarnations[rng.below(3) as usize],
            });
            let floor = at(&mut rng, 16);
            let ceiling = floor + 1_000 * rng.below(4);
            rows.push(SlotRecord {
                slot,
                owner,
                last_owner_key: (rng.below(3) > 0).then(|| keys[rng.below(3) as usize].to_string()),
                fence: 1 + rng.below(5),
                expires_at: if full {
                    now + 500 + 1_000 * rng.below(8)
                } else {
                    at(&mut rng, 16)
                },
                floor,
                ceiling,
                next_floor: ceiling + 1_000 * rng.below(3),
            });
        }
        write(
            ns.clone(),
            rows.clone(),
            protocol::lowest_unused(&rows, config.bits),
        )
        .await;
        let request = AcquireRequest {
            owner: Owner {
                key: keys[rng.below(3) as usize].into(),
                incarnation: incarnations[rng.below(3) as usize],
            },
            ttl_ms: 3_000,
            preferred_slot: (rng.below(3) == 0).then(|| rng.below(u64::from(count) + 2) as u32),
        };
        let ns_record = store.inspect(&ns).await.unwrap().namespace.unwrap();
        let got = store.acquire(&ns, &config, &request).await;
        let store_now = match &got {
            Ok(a) => a.lease.store_now,
            Err(StoreError::Exhausted { store_now, .. }) => *store_now,
            Err(e) => panic!("case {case}: {e}"),
        };
        let expected = protocol::acquire(&ns, &ns_record, &rows, &request, store_now);
        let fields = |g: &cosid::lease::Acquired| {
            format!(
                "{} {} {:?}",
                g.lease.slot, g.lease.fence, g.duplicate_owner_key
            )
        };
        let shown = |r: &Result<cosid::lease::Acquired, StoreError>| match r {
            Err(StoreError::Exhausted {
                earliest_expiry, ..
            }) => format!("exhausted, earliest expiry {earliest_expiry}"),
            r => outcome(r, fields),
        };
        let got = shown(&got);
        let expected = shown(&expected.map(|g| g.acquired));
        assert_eq!(
            got, expected,
            "case {case}: rows {rows:#?}, request {request:?}"
        );
        checked += 1;
    }
    assert_eq!(checked, cases);
}

struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A hint that says no slot is unused (as after records deleted by hand, or the hint itself damaged) must not
/// refuse an acquisition while slots are unused: the acquire checks it against the records before it refuses,
/// and rebuilds it. `corrupt` makes the hint of a namespace of 8 slots, two of them held, say that every slot has
/// a record and none is free; the next acquisitions must take slots 2 and 3, and the one after that (the hint
/// rebuilt) slot 4.
pub async fn a_hint_that_says_no_slot_is_unused_is_checked<F, Fut>(
    store: Arc<dyn LeaseStore>,
    name: &str,
    corrupt: F,
) where
    F: FnOnce(Namespace) -> Fut,
    Fut: Future<Output = ()>,
{
    let config = NamespaceConfig { bits: 3, ..CONFIG };
    let ns = fresh(name);
    let take = |key: &str| {
        let owner = Owner::new(key);
        let store = store.clone();
        let ns = ns.clone();
        async move {
            store
                .acquire(
                    &ns,
                    &config,
                    &AcquireRequest {
                        owner,
                        ttl_ms: 60_000,
                        preferred_slot: None,
                    },
                )
                .await
                .map(|a| a.lease.slot)
        }
    };
    assert_eq!(take("a").await.unwrap(), 0);
    assert_eq!(take("b").await.unwrap(), 1);
    corrupt(ns.clone()).await;
    for (key, slot) in [("c", 2), ("d", 3), ("e", 4)] {
        match take(key).await {
            Ok(s) => assert_eq!(s, slot, "owner {key}"),
            Err(e) => panic!("owner {key} refused while 2 of 8 slots are held: {e}"),
        }
    }
}
