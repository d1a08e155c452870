//! The keeper against a store that fails: renewal back-off, issuing up to the ceiling and no further, recovery
//! when the store heals, and start-up retries of an exhausted or unreachable namespace.
//!
//! The faults come from `Faulty`, a wrapper that passes every call to a real store (memory or SQLite) unless it
//! is told to fail that kind of call with `StoreError::Unavailable`, and counts the calls.

use cosid::clock::{Clock, ManualClock, SystemClock};
use cosid::generator::Waits;
use cosid::lease::{
    AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord, SlotLease,
};
use cosid::store::{Inspection, LeaseStore, MemoryStore, SqliteStore, StoreError};
use cosid::{Error, Event, Id, Layout, Runtime, State};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a test waits for an event before it declares the keeper hung.
const HANG: Duration = Duration::from_secs(20);
/// A fixed store time for tests on a manual clock (2023-11-14).
const T0: u64 = 1_700_000_000_000;

/// A real store that fails the calls it is told to fail.
#[derive(Debug)]
struct Faulty {
    inner: Arc<dyn LeaseStore>,
    fail_acquire: AtomicBool,
    fail_renew: AtomicBool,
    acquires: AtomicUsize,
    renewals: AtomicUsize,
}

impl Faulty {
    fn new(inner: Arc<dyn LeaseStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            fail_acquire: AtomicBool::new(false),
            fail_renew: AtomicBool::new(false),
            acquires: AtomicUsize::new(0),
            renewals: AtomicUsize::new(0),
        })
    }

    fn fault(&self, flag: &AtomicBool) -> Result<(), StoreError> {
        if flag.load(Ordering::SeqCst) {
            Err(StoreError::Unavailable {
                store: "faulty",
                source: "injected fault: the store is unreachable".into(),
            })
        } else {
            Ok(())
        }
    }
}

#[async_trait::async_trait]
impl LeaseStore for Faulty {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    async fn acquire(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        request: &AcquireRequest,
    ) -> Result<Acquired, StoreError> {
        self.acquires.fetch_add(1, Ordering::SeqCst);
        self.fault(&self.fail_acquire)?;
        self.inner.acquire(namespace, config, request).await
    }

    async fn renew(
        &self,
        lease: &SlotLease,
        ttl_ms: u64,
        tolerance_ms: u64,
    ) -> Result<SlotLease, StoreError> {
        self.renewals.fetch_add(1, Ordering::SeqCst);
        self.fault(&self.fail_renew)?;
        self.inner.renew(lease, ttl_ms, tolerance_ms).await
    }

    async fn release(&self, lease: &SlotLease, last_issued: Option<u64>) -> Result<(), StoreError> {
        self.inner.release(lease, last_issued).await
    }

    async fn inspect(&self, namespace: &Namespace) -> Result<Inspection, StoreError> {
        self.inner.inspect(namespace).await
    }

    async fn raise_not_before(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        not_before: u64,
    ) -> Result<NamespaceRecord, StoreError> {
        self.inner
            .raise_not_before(namespace, config, not_before)
            .await
    }
}

/// Every event a runtime delivered, in order.
#[derive(Clone, Default)]
struct Events(Arc<(Mutex<Vec<Event>>, Condvar)>);

impl Events {
    fn listener(&self) -> impl Fn(&Event) + Send + Sync + 'static {
        let me = self.clone();
        move |e| {
            me.0 .0.lock().unwrap().push(e.clone());
            me.0 .1.notify_all();
        }
    }

    /// Waits until `done` holds for the events so far; returns them.
    fn wait_for(&self, what: &str, done: impl Fn(&[Event]) -> bool) -> Vec<Event> {
        let deadline = Instant::now() + HANG;
        let mut events = self.0 .0.lock().unwrap();
        while !done(&events) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "no {what} within {HANG:?}; events: {events:#?}"
            );
            events = self.0 .1.wait_timeout(events, left).unwrap().0;
        }
        events.clone()
    }
}

fn count(events: &[Event], name: &str) -> usize {
    events.iter().filter(|e| e.name() == name).count()
}

/// Polls `done` until it holds (for conditions that no event announces).
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + HANG;
    while !done() {
        assert!(Instant::now() < deadline, "no {what} within {HANG:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn timestamp(id: Id) -> u64 {
    Layout::millis().decompose(id).unwrap().timestamp_ms
}

/// Renewals fail from the start; the ttl is 1.8 s, so renewal is due at about 600 ms and the back-off is capped at
/// ttl/6 = 300 ms, a cap that plain doubling from 100 ms never lands on.
fn renewal_backs_off_then_recovers(inner: Arc<dyn LeaseStore>, clock: ManualClock) {
    let store = Faulty::new(inner);
    store.fail_renew.store(true, Ordering::SeqCst);
    let events = Events::default();
    let rt = Runtime::builder()
        .store_instance(store.clone())
        .namespace("backoff")
        .ttl(Duration::from_millis(1_800))
        .tolerance(Duration::from_millis(200))
        .clock(Arc::new(clock.clone()))
        .waits(Waits {
            backwards: Duration::from_millis(50),
            window: Duration::from_millis(50),
        })
        .subscribe(events.listener())
        .build()
        .unwrap();
    let slot = rt.status().slot;
    let mut last = rt.next_id().unwrap();

    let seen = events.wait_for("5 failed renewals", |e| count(e, "RENEW_FAILED") >= 5);
    let retries: Vec<u64> = seen
        .iter()
        .filter_map(|e| match e {
            Event::RenewFailed {
                slot: s,
                error,
                retry_in_ms,
            } => {
                assert_eq!(*s, slot);
                assert!(error.contains("injected fault"), "{error}");
                Some(*retry_in_ms)
            }
            _ => None,
        })
        .collect();
    // Each retry waits between half the back-off and all of it (jitter), the back-off doubling from 100 ms up to
    // its cap.
    for (retry, backoff) in retries[..5].iter().zip([100, 200, 300, 300, 300]) {
        assert!(
            (backoff / 2..=backoff).contains(retry),
            "a retry in {retry} ms for a back-off of {backoff}: {seen:#?}"
        );
    }
    assert_eq!(count(&seen, "RENEWED"), 0);
    assert!(store.renewals.load(Ordering::SeqCst) >= 5);
    let status = rt.status();
    assert_eq!(status.state, State::Renewing);

    // Without renewals, ids still come up to the ceiling, and not one millisecond past it.
    let ceiling = status.ceiling_ms;
    assert_eq!(ceiling, status.expires_at_ms + 200);
    let id = rt.next_id().unwrap();
    assert!(id > last);
    last = id;
    clock.set(ceiling);
    let id = rt.next_id().unwrap();
    assert_eq!(timestamp(id), ceiling);
    assert!(id > last);
    last = id;
    clock.set(ceiling + 1);
    let err = rt.next_id().unwrap_err();
    assert_eq!(err.code(), "WINDOW_CLOSED", "{err:?}");
    match err {
        Error::WindowClosed {
            ceiling_ms, now_ms, ..
        } => {
            assert_eq!(ceiling_ms, ceiling);
            assert!(now_ms > ceiling);
        }
        other => panic!("expected WindowClosed, got {other:?}"),
    }
    assert!(rt.next_ids(3).is_err());

    // The store heals: the next retry renews (a renewal after expiry succeeds while nobody took the slot).
    store.fail_renew.store(false, Ordering::SeqCst);
    let seen = events.wait_for("a renewal", |e| count(e, "RENEWED") >= 1);
    let Some(&Event::Renewed {
        slot: s,
        ceiling_ms,
        ..
    }) = seen.iter().find(|e| e.name() == "RENEWED")
    else {
        unreachable!()
    };
    assert_eq!(s, slot);
    assert!(ceiling_ms > ceiling);
    assert_eq!(count(&seen, "SLOT_LOST"), 0);
    let status = rt.status();
    assert_eq!(status.state, State::Active);
    assert_eq!(status.slot, slot);
    for id in rt.next_ids(10_000).unwrap() {
        assert!(id > last, "{id} after {last}");
        last = id;
    }
    // The back-off starts again from 100 ms (a retry within 50 to 100 ms) after a success.
    store.fail_renew.store(true, Ordering::SeqCst);
    let seen = events.wait_for("a new failure", |e| {
        e.iter()
            .skip_while(|e| e.name() != "RENEWED")
            .any(|e| e.name() == "RENEW_FAILED")
    });
    let retry = seen
        .iter()
        .skip_while(|e| e.name() != "RENEWED")
        .find_map(|e| match e {
            Event::RenewFailed { retry_in_ms, .. } => Some(*retry_in_ms),
            _ => None,
        });
    assert!(retry.is_some_and(|r| (50..=100).contains(&r)), "{retry:?}");
    store.fail_renew.store(false, Ordering::SeqCst);
    assert!(rt.shutdown().is_some());
}

#[test]
fn renewal_backs_off_then_recovers_on_memory() {
    let clock = ManualClock::new(T0);
    renewal_backs_off_then_recovers(Arc::new(MemoryStore::new(Arc::new(clock.clone()))), clock);
}

#[test]
fn renewal_backs_off_then_recovers_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let store = SqliteStore::open(&dir.path().join("leases.db"), Arc::new(clock.clone())).unwrap();
    renewal_backs_off_then_recovers(Arc::new(store), clock);
}

/// A namespace of 2 slots, both held by live runtimes. Their leases are long, so that a slow renewal on a busy
/// machine cannot free a slot; the contender's short ttl keeps its retries frequent (at most ttl/3 apart).
fn full_namespace(store: &Arc<dyn LeaseStore>) -> (Runtime, Runtime) {
    let holder = |key: &str| {
        Runtime::builder()
            .store_instance(store.clone())
            .namespace("full")
            .bits(1)
            .ttl(Duration::from_secs(10))
            .tolerance(Duration::from_millis(100))
            .owner_key(key)
            .build()
            .unwrap()
    };
    (holder("h1"), holder("h2"))
}

fn contender(store: Arc<Faulty>, timeout: Duration) -> Result<Runtime, Error> {
    Runtime::builder()
        .store_instance(store)
        .namespace("full")
        .bits(1)
        .ttl(Duration::from_millis(600))
        .tolerance(Duration::from_millis(100))
        .owner_key("c")
        .acquire_timeout(timeout)
        .build()
}

#[test]
fn startup_retries_an_exhausted_namespace_then_fails() {
    let inner: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new(Arc::new(SystemClock)));
    let (h1, h2) = full_namespace(&inner);
    let store = Faulty::new(inner);
    let err = contender(store.clone(), Duration::from_secs(1)).unwrap_err();
    assert_eq!(err.code(), "EXHAUSTED", "{err:?}");
    match &err {
        Error::Store(StoreError::Exhausted {
            namespace,
            slots,
            earliest_expiry,
            store_now,
        }) => {
            assert_eq!((namespace.as_str(), *slots), ("full", 2));
            assert!(earliest_expiry >= store_now, "both leases are live");
        }
        other => panic!("expected Exhausted, got {other:?}"),
    }
    let tries = store.acquires.load(Ordering::SeqCst);
    assert!(
        tries >= 2,
        "start-up tried {tries} time(s), expected retries"
    );
    // The holders were not disturbed.
    assert_eq!(h1.status().state, State::Active);
    assert_eq!(h2.status().state, State::Active);
    h1.next_id().unwrap();
    h2.next_id().unwrap();
}

#[test]
fn startup_on_an_exhausted_namespace_with_a_short_ttl_fails_without_panicking() {
    // ttl/3 (50 ms) is below the least retry delay (100 ms): the wait must still be a valid duration.
    let inner: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new(Arc::new(SystemClock)));
    let (_h1, _h2) = full_namespace(&inner);
    let store = Faulty::new(inner);
    let err = Runtime::builder()
        .store_instance(store.clone())
        .namespace("full")
        .bits(1)
        .ttl(Duration::from_millis(150))
        .tolerance(Duration::from_millis(100))
        .acquire_timeout(Duration::from_millis(500))
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "EXHAUSTED", "{err:?}");
    assert!(store.acquires.load(Ordering::SeqCst) >= 2);
}

#[test]
fn startup_succeeds_when_a_slot_frees_within_the_timeout() {
    let inner: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new(Arc::new(SystemClock)));
    let (h1, h2) = full_namespace(&inner);
    let store = Faulty::new(inner);
    let started = {
        let store = store.clone();
        std::thread::spawn(move || contender(store, Duration::from_secs(10)))
    };
    wait_until("a first refused acquire", || {
        store.acquires.load(Ordering::SeqCst) >= 1
    });
    let h1_id = h1.next_id().unwrap();
    let h1_slot = h1.status().slot;
    let h1_last = h1.shutdown().unwrap();
    let c = started
        .join()
        .unwrap()
        .expect("a slot freed within the timeout");
    assert!(store.acquires.load(Ordering::SeqCst) >= 2);
    let status = c.status();
    assert_eq!(status.slot, h1_slot);
    assert_eq!(status.floor_ms, h1_last);
    assert!(c.next_id().unwrap() > h1_id);
    h2.next_id().unwrap();
}

#[test]
fn startup_retries_an_unreachable_store_until_it_answers() {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let store = Faulty::new(Arc::new(MemoryStore::new(clock)));
    store.fail_acquire.store(true, Ordering::SeqCst);
    let err = contender(store.clone(), Duration::from_millis(600)).unwrap_err();
    assert_eq!(err.code(), "STORE_UNAVAILABLE", "{err:?}");
    assert!(store.acquires.load(Ordering::SeqCst) >= 2);

    let started = {
        let store = store.clone();
        std::thread::spawn(move || contender(store, Duration::from_secs(10)))
    };
    let before = store.acquires.load(Ordering::SeqCst);
    wait_until("a refused acquire", || {
        store.acquires.load(Ordering::SeqCst) > before
    });
    store.fail_acquire.store(false, Ordering::SeqCst);
    let c = started.join().unwrap().expect("the store answered in time");
    assert_eq!(c.status().state, State::Active);
    c.next_id().unwrap();
}
