//! What the stores that write optimistically share (etcd, ZooKeeper, MongoDB): each operation reads, decides by
//! [`crate::lease::protocol`], and writes only if nothing it read has changed; when something has, it reads
//! again. This module holds that loop, its bounds, and the wrapping that names the server an error came from, so
//! a store is its own I/O and nothing else.

use super::{BoxError, StoreError};
use crate::lease::Namespace;
#[cfg(any(feature = "zookeeper", feature = "mongodb"))]
use crate::lease::{NamespaceRecord, SlotRecord};
use std::future::Future;
use std::time::Duration;

/// How long one operation (all its retries included) may take before it is reported as unavailable.
pub(super) const OPERATION_TIMEOUT: Duration = Duration::from_secs(10);
/// How many times an operation whose conditional write failed reads again and retries.
pub(super) const MAX_TRIES: u32 = 64;

/// What one attempt of an operation ends with.
pub(super) enum Try<T> {
    Done(T),
    /// A conditional write failed (another writer got there first), or a record came or went between two reads:
    /// read again.
    Raced,
}

/// A client error with the servers it came from (the clients' own messages do not always say).
#[derive(Debug, thiserror::Error)]
#[error("{at}: {error}")]
struct At {
    at: String,
    error: BoxError,
}

#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
    #[error("the conditional write failed {0} times in a row: other writers keep changing namespace {1:?}")]
    Contended(u32, String),
}

/// `e` as `Unavailable`: worth retrying.
pub(super) fn unavailable(
    store: &'static str,
    e: impl std::error::Error + Send + Sync + 'static,
) -> StoreError {
    StoreError::Unavailable {
        store,
        source: Box::new(e),
    }
}

/// A client's error as the store reports it: `Unavailable` when `retryable` (no server, a lost connection, ...),
/// else `Generic` (an answer: authorization, bad arguments).
pub(super) fn client_error(
    store: &'static str,
    e: impl std::error::Error + Send + Sync + 'static,
    retryable: bool,
) -> StoreError {
    if retryable {
        unavailable(store, e)
    } else {
        StoreError::Generic {
            store,
            source: Box::new(e),
        }
    }
}

/// A record of `namespace` that breaks the protocol's invariants or does not decode.
pub(super) fn corrupt(
    store: &'static str,
    namespace: &Namespace,
    what: &str,
    detail: impl Into<String>,
) -> StoreError {
    StoreError::Corrupt {
        store,
        what: format!("{what} of namespace {namespace}"),
        detail: detail.into(),
    }
}

/// Runs `attempt` with a fresh `connection()` until it is done, pausing a random time after each raced attempt
/// (up to 2^n ms after the n-th, at most about a second: a thousand clients started at once must spread out, or
/// each round of them wastes a consensus write per loser); gives up after [`MAX_TRIES`] attempts as unavailable.
/// Bounded as [`bounded`] says.
pub(super) async fn retrying<C, T, G, GFut, F, Fut>(
    store: &'static str,
    servers: &str,
    namespace: &Namespace,
    mut connection: G,
    mut attempt: F,
) -> Result<T, StoreError>
where
    G: FnMut() -> GFut + Send,
    GFut: Future<Output = Result<C, StoreError>> + Send,
    F: FnMut(C) -> Fut + Send,
    Fut: Future<Output = Result<Try<T>, StoreError>> + Send,
    T: Send,
{
    let run = async {
        for tries in 1..=MAX_TRIES {
            match attempt(connection().await?).await? {
                Try::Done(value) => return Ok(value),
                Try::Raced => {
                    let pause = rand::random_range(0..=(1u64 << tries.min(10)));
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                }
            }
        }
        Err(unavailable(
            store,
            Failure::Contended(MAX_TRIES, namespace.to_string()),
        ))
    };
    bounded(store, servers, run).await
}

/// Runs one operation within [`OPERATION_TIMEOUT`] (after which it is unavailable); its unavailable and generic
/// failures name `servers` (with no password: callers pass what may be shown).
pub(super) async fn bounded<T>(
    store: &'static str,
    servers: &str,
    run: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    let at = |error| At {
        at: servers.to_owned(),
        error,
    };
    match tokio::time::timeout(OPERATION_TIMEOUT, run).await {
        Err(_) => Err(unavailable(
            store,
            at(Box::new(Failure::TimedOut(OPERATION_TIMEOUT))),
        )),
        Ok(Err(StoreError::Unavailable { store, source })) => Err(StoreError::Unavailable {
            store,
            source: Box::new(at(source)),
        }),
        Ok(Err(StoreError::Generic { store, source })) => Err(StoreError::Generic {
            store,
            source: Box::new(at(source)),
        }),
        Ok(other) => other,
    }
}

/// The widest window past the lowest never-used slot in which an acquisition that keeps losing races picks one
/// (see [`spread`]).
#[cfg(any(feature = "etcd", feature = "zookeeper", feature = "mongodb"))]
const SPREAD: u32 = 128;

/// How far past the lowest never-used slot an acquisition that lost `raced` races in a row looks for another: a
/// window that widens with each lost race, up to [`SPREAD`].
#[cfg(any(feature = "etcd", feature = "zookeeper", feature = "mongodb"))]
pub(super) fn spread_window(raced: u32) -> u32 {
    (32u32 << raced.min(5)).min(SPREAD)
}

/// After a lost race, another slot as good as `chosen`, picked at random, or `None` to keep `chosen`.
///
/// Clients that start at once all choose the same lowest free slot, and with optimistic writes only one of them
/// wins each round: a thousand of them take a thousand rounds, each re-reading. When `chosen` is one of `equals`
/// (the free slots that can start within the tolerance and are not the caller's sticky slot, and never-used slots
/// within [`spread_window`] of the lowest one), a client that already lost a race picks one of the others
/// instead, as the preferred slot of its request: the protocol still decides, and a client that never lost a race
/// (every call when there is no contention) takes the lowest, as the protocol orders.
#[cfg(any(feature = "etcd", feature = "zookeeper", feature = "mongodb"))]
pub(super) fn spread(chosen: u32, mut equals: Vec<u32>) -> Option<u32> {
    if !equals.contains(&chosen) {
        return None;
    }
    equals.retain(|&s| s != chosen);
    equals.sort_unstable();
    equals.dedup();
    (!equals.is_empty()).then(|| equals[rand::random_range(0..equals.len())])
}

/// The slots as good as the lowest free one, for [`spread`]: among `slots` (records of the namespace), the free
/// ones that can start within the tolerance and whose last owner had another key (the owner's own sticky slot
/// keeps its rank), then `never_used` (see [`never_used`]).
#[cfg(any(feature = "zookeeper", feature = "mongodb"))]
pub(super) fn as_good(
    ns: &NamespaceRecord,
    slots: &[SlotRecord],
    key: &str,
    now: u64,
    never_used: Vec<u32>,
) -> Vec<u32> {
    let soon = now.saturating_add(ns.tolerance_ms);
    let free = slots
        .iter()
        .filter(|r| !r.is_held_at(now) && r.next_floor.max(ns.not_before) <= soon)
        .filter(|r| r.last_owner_key.as_deref() != Some(key))
        .map(|r| r.slot);
    free.chain(never_used).collect()
}

/// The never-used slots in the [`spread_window`] past the lowest one, `lowest_unused`, after `raced` lost races:
/// those of the namespace's `bits` for which `used` (which says true of a slot it does not know) is false.
#[cfg(any(feature = "zookeeper", feature = "mongodb"))]
pub(super) fn never_used(
    bits: u8,
    lowest_unused: Option<u32>,
    raced: u32,
    used: impl Fn(u32) -> bool,
) -> Vec<u32> {
    let count = 1u64 << bits;
    lowest_unused
        .into_iter()
        .flat_map(|u| u..u.saturating_add(spread_window(raced)))
        .filter(|&s| u64::from(s) < count && !used(s))
        .collect()
}

#[cfg(all(test, any(feature = "zookeeper", feature = "mongodb")))]
mod tests {
    use super::*;
    use crate::lease::Owner;

    const NOW: u64 = 1_700_000_000_000;

    fn record(
        slot: u32,
        owner: Option<&str>,
        last: &str,
        expires_at: u64,
        next_floor: u64,
    ) -> SlotRecord {
        SlotRecord {
            slot,
            owner: owner.map(Owner::new),
            last_owner_key: Some(last.to_owned()),
            fence: 1,
            expires_at,
            floor: 0,
            ceiling: next_floor,
            next_floor,
        }
    }

    /// After a lost race an acquisition may move to a free slot that can start now or a never-used one near the
    /// lowest; never to a held slot, one whose floor is far ahead, or away from its own sticky slot.
    #[test]
    fn slots_as_good_are_free_ready_and_not_sticky() {
        let ns = NamespaceRecord {
            bits: 4,
            tolerance_ms: 1_000,
            not_before: 0,
            layout: None,
        };
        let slots = [
            record(0, Some("other"), "other", NOW + 10_000, NOW + 11_000),
            record(1, None, "me", NOW - 5_000, NOW - 4_000),
            record(2, None, "x", NOW - 5_000, NOW),
            record(3, None, "y", NOW - 5_000, NOW + 60_000),
            record(5, Some("z"), "z", NOW - 1, NOW + 999),
        ];
        let unused = crate::lease::protocol::lowest_unused(&slots, ns.bits);
        assert_eq!(unused, Some(4));
        let never = never_used(ns.bits, unused, 1, |s| {
            slots.binary_search_by_key(&s, |r| r.slot).is_ok()
        });
        let good = as_good(&ns, &slots, "me", NOW, never);
        // Slot 5's lease expired (its holder is gone), and its floor is within the tolerance.
        let mut expected = vec![2, 5, 4];
        expected.extend(6..16);
        assert_eq!(good, expected);
        for _ in 0..100 {
            let other = spread(2, good.clone()).expect("equals to choose from");
            assert!(other != 2 && good.contains(&other), "{other}");
        }
        assert_eq!(
            spread(1, good.clone()),
            None,
            "the sticky slot keeps its rank"
        );
        assert_eq!(spread(0, vec![0]), None, "nothing else as good");
    }
}
