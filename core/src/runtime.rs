//! The runtime: one per process and namespace. It owns the store, the keeper's thread and the generator.

use crate::config::Config;
use crate::error::ConfigError;
use crate::error::Error;
use crate::event::Event;
use crate::generator::Generator;
use crate::host::StoreValue;
use crate::id::{Id, Layout};
use crate::keeper::{Keeper, Listener, Shared, Status};
use crate::lease::{AcquireRequest, Namespace, NamespaceConfig, Owner};
use crate::static_slot::StaticKeeper;
use crate::store::{self, LeaseStore, StoreUrl};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::watch;

/// Issues lease-safe ids for one namespace, renewing its lease in the background.
///
/// `Runtime` is `Send + Sync`: share it (by reference or in an `Arc`) between any number of threads. Dropping it
/// shuts it down, as [`shutdown`](Runtime::shutdown) does.
///
/// Inside a tokio runtime (`#[tokio::main]`), [`Builder::build`] and [`Runtime::from_env`] work too: they start on
/// a thread of their own, blocking the calling task meanwhile. In async code prefer
/// [`Builder::build_async`] and [`Runtime::shutdown_async`], which keep the executor's threads free.
///
/// ```
/// let rt = cosid::Runtime::builder().store("memory:").namespace("doc").build()?;
/// let a = rt.next_id()?;
/// let b = rt.next_id()?;
/// assert!(b > a);
/// let parts = rt.layout().decompose(a)?;
/// assert_eq!(parts.slot, u64::from(rt.status().slot));
/// # Ok::<(), cosid::Error>(())
/// ```
///
/// With [`slots`](Builder::slots) above 1 it leases that many slots, each with its own window and generator (a
/// *lane*), all renewed by the one keeper thread: an id comes from the lane that issued the last one while its
/// tick has sequence numbers left, then from the next lane, so the slots' capacity adds up. Ids stay unique and
/// ordered by tick; within one tick, ids of two slots are not in call order.
#[derive(Debug)]
pub struct Runtime {
    /// One per leased slot, in slot order; never empty. The first lane is the one `status` reports.
    lanes: Box<[Arc<Shared>]>,
    /// The lane the last id came from: where the next call starts (always 0 with one lane).
    current: AtomicUsize,
    keeper: Mutex<Option<KeeperThread>>,
}

/// The keeper's loop, lease or static, run on its own thread.
type KeeperTask = Pin<Box<dyn Future<Output = Option<u64>> + Send>>;

#[derive(Debug)]
struct KeeperThread {
    stop: watch::Sender<bool>,
    thread: JoinHandle<Option<u64>>,
}

impl Runtime {
    /// A builder on the default configuration (not the environment: see [`Builder::from_env`]).
    pub fn builder() -> Builder {
        Builder {
            config: Config::default(),
            store: None,
            listeners: Listeners::default(),
        }
    }

    /// A runtime configured from the `COSID_*` environment variables. Works inside a tokio runtime too (see
    /// [`Builder::build`]).
    pub fn from_env() -> Result<Runtime, Error> {
        Builder::from_env()?.build()
    }

    /// Issues one id. Waits (bounded) when the sequence of the current tick is used up, when the host clock is
    /// behind the window's floor or past its ceiling, or when the clock stepped back a little.
    #[inline]
    pub fn next_id(&self) -> Result<Id, Error> {
        let current = self.current.load(Ordering::Relaxed);
        match self.lanes[current].generator.try_next_id() {
            Some(id) => Ok(id),
            None => self.next_id_slow(current),
        }
    }

    /// The other lanes' fast paths, in turn after `current`; then a wait on the first lane that still holds its
    /// lease (a lane that lost its lease is reacquiring: its error is returned only when every lane has one).
    #[cold]
    fn next_id_slow(&self, current: usize) -> Result<Id, Error> {
        if let Some(id) = self.try_other_lanes(current) {
            return Ok(id);
        }
        let (i, lane) = self
            .lanes
            .iter()
            .enumerate()
            .find(|(_, lane)| !lane.generator.is_closed())
            .unwrap_or((0, &self.lanes[0]));
        let id = lane.generator.next_id()?;
        self.current.store(i, Ordering::Relaxed);
        Ok(id)
    }

    /// An id from the first lane after `current` (in turn) that has one without a wait; it becomes current.
    #[cold]
    #[inline(never)]
    fn try_other_lanes(&self, current: usize) -> Option<Id> {
        let k = self.lanes.len();
        (1..k).map(|d| (current + d) % k).find_map(|i| {
            let id = self.lanes[i].generator.try_next_id()?;
            self.current.store(i, Ordering::Relaxed);
            Some(id)
        })
    }

    /// The only lane, with one slot.
    pub(crate) fn single_lane(&self) -> Option<Arc<Shared>> {
        match &*self.lanes {
            [lane] => Some(lane.clone()),
            _ => None,
        }
    }

    /// Issues one id if that needs neither a wait nor an error; `None` means "call
    /// [`next_id`](Self::next_id)", which may wait or return the error. For bindings that release a lock (Python's
    /// GIL) only around calls that may wait.
    ///
    /// ```
    /// let rt = cosid::Runtime::builder().store("memory:").namespace("doc-try").build()?;
    /// let id = match rt.try_next_id() {
    ///     Some(id) => id,
    ///     None => rt.next_id()?, // may wait: release your lock around this call
    /// };
    /// assert_eq!(rt.layout().decompose(id)?.slot, u64::from(rt.status().slot));
    /// # Ok::<(), cosid::Error>(())
    /// ```
    #[inline(always)]
    pub fn try_next_id(&self) -> Option<Id> {
        let current = self.current.load(Ordering::Relaxed);
        match self.lanes[current].generator.try_next_id() {
            Some(id) => Some(id),
            None => self.try_other_lanes(current),
        }
    }

    /// Fills `out` with ids. On error, discard `out`.
    pub fn fill(&self, out: &mut [Id]) -> Result<(), Error> {
        if let [lane] = &*self.lanes {
            return lane.generator.fill(out);
        }
        let mut i = 0;
        while i < out.len() {
            for lane in self.lanes.iter() {
                i += lane.generator.try_fill(&mut out[i..]);
            }
            if i < out.len() {
                out[i] = self.next_id_slow(self.current.load(Ordering::Relaxed))?;
                i += 1;
            }
        }
        Ok(())
    }

    /// `n` ids in a new vector.
    pub fn next_ids(&self, n: usize) -> Result<Vec<Id>, Error> {
        let mut v = vec![Id::from_u64(0); n];
        self.fill(&mut v)?;
        Ok(v)
    }

    /// The layout of this runtime's ids.
    pub fn layout(&self) -> &Layout {
        self.lanes[0].generator.layout()
    }

    /// The slot, fence, window, expiry and state now (of the first slot, with [`slots`](Builder::slots) above 1:
    /// see [`statuses`](Self::statuses)).
    pub fn status(&self) -> Status {
        self.lanes[0].status()
    }

    /// The status of every slot this runtime leases, the first one first.
    pub fn statuses(&self) -> Vec<Status> {
        self.lanes.iter().map(|lane| lane.status()).collect()
    }

    /// Calls `listener` with every later [`Event`], on the keeper's thread. A panicking listener is ignored.
    pub fn subscribe(&self, listener: impl Fn(&Event) + Send + Sync + 'static) {
        let listener: Listener = Arc::new(listener);
        for lane in self.lanes.iter() {
            lane.subscribe(listener.clone());
        }
    }

    /// Ordered shutdown: seals the generator (no id is returned after this starts), releases the slot with the
    /// exact last timestamp, and stops the keeper. Returns that timestamp: `None` if nothing was issued on the
    /// current lease, or it was lost. Later calls return `None`.
    pub fn shutdown(&self) -> Option<u64> {
        let keeper = self
            .keeper
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        let _ = keeper.stop.send(true);
        match keeper.thread.join() {
            Ok(last) => last,
            Err(_) => {
                tracing::error!("cosid: the keeper thread panicked");
                // Nothing can be issued any more, whatever the keeper did: seal (again) for the exact last value.
                self.seal_all()
            }
        }
    }

    /// Seals every lane; the latest last timestamp among them.
    fn seal_all(&self) -> Option<u64> {
        self.lanes
            .iter()
            .filter_map(|lane| lane.generator.seal())
            .max()
    }

    /// [`shutdown`](Self::shutdown) for async code: the wait for the keeper's last release runs on tokio's blocking
    /// pool, not on the executor's thread. Dropping a `Runtime` in async code is safe too, but blocks the task for
    /// that release (bounded by the ttl).
    pub async fn shutdown_async(&self) -> Option<u64> {
        let keeper = self
            .keeper
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        let _ = keeper.stop.send(true);
        match tokio::task::spawn_blocking(move || keeper.thread.join()).await {
            Ok(Ok(last)) => last,
            _ => {
                tracing::error!("cosid: the keeper thread panicked");
                self.seal_all()
            }
        }
    }

    /// For a child process after `fork()`: closes this runtime without touching the store or the keeper's thread
    /// (neither exists in the child), so no id is ever issued on the parent's lease. The parent keeps its lease.
    pub fn abandon_after_fork(self) {
        for lane in self.lanes.iter() {
            lane.generator.seal_forked();
        }
        crate::clock::after_fork_in_child();
        // The keeper thread is the parent's; joining it here would wait forever.
        if let Some(k) = self.keeper.lock().unwrap_or_else(|e| e.into_inner()).take() {
            std::mem::forget(k);
        }
        // No drop (it would shut down, releasing the parent's lease): each lane's state is forgotten, as the
        // parent's threads may still hold it, but the list of lanes is the child's own and is freed, so that a
        // leak checker in the child sees only the parent's memory.
        let mut this = std::mem::ManuallyDrop::new(self);
        for lane in Vec::from(std::mem::take(&mut this.lanes)) {
            std::mem::forget(lane);
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Configures and starts a [`Runtime`].
#[derive(Debug)]
pub struct Builder {
    config: Config,
    store: Option<Arc<dyn LeaseStore>>,
    listeners: Listeners,
}

/// Listeners given to the builder: subscribed before the first lease is installed, so they see its events.
#[derive(Default)]
struct Listeners(Vec<Listener>);

impl std::fmt::Debug for Listeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} listener(s)", self.0.len())
    }
}

impl Builder {
    /// A builder on the `COSID_*` environment variables.
    pub fn from_env() -> Result<Builder, Error> {
        Ok(Builder {
            config: Config::from_env()?,
            store: None,
            listeners: Listeners::default(),
        })
    }

    /// A builder on `config`.
    pub fn with_config(config: Config) -> Builder {
        Builder {
            config,
            store: None,
            listeners: Listeners::default(),
        }
    }

    /// The store URL (`sqlite:///path`, `memory:`, `redis://...`).
    pub fn store(mut self, url: impl Into<String>) -> Self {
        self.config.store = Some(url.into());
        self
    }

    /// An already opened store (shared by several runtimes, or a test's).
    pub fn store_instance(mut self, store: Arc<dyn LeaseStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The namespace name.
    pub fn namespace(mut self, name: impl Into<String>) -> Self {
        self.config.namespace = name.into();
        self
    }

    /// The id layout. Slot bits still at their default (10) follow a layout with fewer slot bits.
    pub fn layout(mut self, layout: Layout) -> Self {
        if self.config.bits == crate::config::DEFAULT_BITS {
            self.config.bits = self.config.bits.min(layout.slot_bits());
        }
        self.config.layout = layout;
        self
    }

    /// The lease length (default 30 s).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.config.ttl = ttl;
        self
    }

    /// How far past expiry a holder may issue (default 1 s).
    pub fn tolerance(mut self, tolerance: Duration) -> Self {
        self.config.tolerance = tolerance;
        self
    }

    /// Slot bits of the namespace (default 10).
    pub fn bits(mut self, bits: u8) -> Self {
        self.config.bits = bits;
        self
    }

    /// The owner key (default `host:pid`).
    pub fn owner_key(mut self, key: impl Into<String>) -> Self {
        self.config.owner_key = Some(key.into());
        self
    }

    /// A slot to take if it is free.
    pub fn preferred_slot(mut self, slot: u32) -> Self {
        self.config.preferred_slot = Some(slot);
        self
    }

    /// How many slots to lease (default 1, at most [`MAX_SLOTS`](crate::config::MAX_SLOTS) and `2^bits`): past
    /// one slot's cap (4,096,000 ids/s with the default layout), `next_id` and the batch calls take ids from the
    /// next slot while the first one's tick is spent. Each slot is one lease more for the store to renew.
    ///
    /// ```
    /// let rt = cosid::Runtime::builder().store("memory:").namespace("doc-slots").slots(2).build()?;
    /// let slots: Vec<u32> = rt.statuses().iter().map(|s| s.slot).collect();
    /// assert_eq!(slots, [0, 1]);
    /// # Ok::<(), cosid::Error>(())
    /// ```
    pub fn slots(mut self, slots: u32) -> Self {
        self.config.slots = slots;
        self
    }

    /// How long start-up retries (default: the ttl).
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.config.acquire_timeout = Some(timeout);
        self
    }

    /// The clock (tests inject a manual one).
    pub fn clock(mut self, clock: Arc<dyn crate::clock::Clock>) -> Self {
        self.config.clock = clock;
        self
    }

    /// How long id calls wait before they error.
    pub fn waits(mut self, waits: crate::generator::Waits) -> Self {
        self.config.waits = waits;
        self
    }

    /// Calls `listener` with every [`Event`] from the start: unlike [`Runtime::subscribe`], it also sees the
    /// first `Acquired`, and a `DuplicateOwnerKey` or `ClockSkew` found at start-up.
    pub fn subscribe(mut self, listener: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        self.listeners.0.push(Arc::new(listener));
        self
    }

    /// The configuration so far.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Opens the store, acquires a slot (retrying for the acquire timeout), and starts the keeper.
    ///
    /// Blocks until then. Called inside a tokio runtime (where blocking on a runtime of our own would panic with
    /// "Cannot start a runtime from within a runtime"), it does the start on a thread of its own and waits for it;
    /// async code should prefer [`build_async`](Self::build_async).
    pub fn build(self) -> Result<Runtime, Error> {
        if tokio::runtime::Handle::try_current().is_err() {
            return self.build_here();
        }
        let start = std::thread::Builder::new()
            .name("cosid-start".into())
            .spawn(move || self.build_here())
            .map_err(runtime_error)?;
        start
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }

    /// [`build`](Self::build) for async code: the start (store connection, slot acquisition with its retries)
    /// runs on tokio's blocking pool, so it neither panics nor holds an executor thread.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let rt = cosid::Runtime::builder().store("memory:").namespace("doc-async").build_async().await?;
    /// let id = rt.next_id()?;
    /// assert_eq!(rt.layout().decompose(id)?.slot, u64::from(rt.status().slot));
    /// rt.shutdown_async().await;
    /// # Ok::<(), cosid::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn build_async(self) -> Result<Runtime, Error> {
        if tokio::runtime::Handle::try_current().is_err() {
            // Polled by another executor: no blocking pool to use.
            return self.build_here();
        }
        match tokio::task::spawn_blocking(move || self.build_here()).await {
            Ok(built) => built,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(runtime_error(e)),
        }
    }

    /// The start itself, on a thread that is not inside a tokio runtime: it blocks on (and may drop) a
    /// current-thread runtime of its own.
    fn build_here(self) -> Result<Runtime, Error> {
        let config = self.config;
        config.validate()?;
        // A runtime started in a forked child must not read the parent's frozen cached time.
        crate::clock::check_fork();
        let namespace = Namespace::new(config.namespace.clone())?;
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name("cosid-keeper")
            .build()
            .map_err(runtime_error)?;
        let owner = Owner::new(config.owner_key());
        let generator = Generator::new(config.layout, config.clock.clone(), config.waits);
        let (stop, stopped) = watch::channel(false);
        // One parser for every store value, the one every language's settings use (host::StoreValue).
        let (static_spec, lease_url) = match (&self.store, &config.store) {
            (Some(_), _) => (None, None),
            (None, Some(text)) => match StoreValue::parse(text)? {
                StoreValue::Static(spec) => (Some(spec), None),
                StoreValue::Lease(url) => (None, Some(url)),
            },
            (None, None) => (None, Some(StoreUrl::default_sqlite()?)),
        };
        let (lanes, task): (Vec<Arc<Shared>>, KeeperTask) = if let Some(spec) = static_spec {
            if u64::from(spec.slot) >= 1u64 << config.bits {
                return Err(ConfigError::new(
                    "slot",
                    spec.slot.to_string(),
                    format!("a slot below 2^bits = {}", 1u64 << config.bits),
                )
                .into());
            }
            if config.slots > 1 {
                return Err(ConfigError::new(
                    "slots",
                    config.slots.to_string(),
                    "1 with a static slot (static:, manual:): such a store names one slot",
                )
                .into());
            }
            let kind = if spec.manual { "manual" } else { "static" };
            let (keeper, lease) = StaticKeeper::start(
                spec,
                namespace,
                owner,
                config.clock.clone(),
                config.acquire_timeout(),
            )?;
            let shared = Arc::new(Shared::new(generator, lease.clone(), kind));
            for listener in &self.listeners.0 {
                shared.subscribe(listener.clone());
            }
            shared.generator.bind(StaticKeeper::window(&lease));
            shared.emit(Event::Acquired {
                slot: lease.slot,
                fence: lease.fence,
                floor_ms: lease.floor,
                ceiling_ms: lease.ceiling,
                expires_at_ms: lease.expires_at,
            });
            let task = Box::pin(keeper.run(shared.clone(), stopped));
            (vec![shared], task)
        } else {
            let store = match self.store {
                Some(s) => s,
                None => {
                    let url = match lease_url {
                        Some(u) => u,
                        None => StoreUrl::default_sqlite()?,
                    };
                    // Opening is store I/O too: no fork() may copy it half done (see host::fork).
                    let _pass = match url {
                        StoreUrl::Sqlite(_) => crate::host::fork::enter_file(),
                        _ => crate::host::fork::enter(),
                    };
                    tokio.block_on(store::open(&url, config.clock.clone()))?
                }
            };
            let store = crate::host::gated::GatedStore::wrap(store);
            let keeper = Keeper {
                store: store.clone(),
                namespace,
                ns_config: NamespaceConfig {
                    bits: config.bits,
                    tolerance_ms: config.tolerance.as_millis() as u64,
                    layout: config.layout,
                },
                request: AcquireRequest {
                    owner,
                    ttl_ms: config.ttl.as_millis() as u64,
                    preferred_slot: config.preferred_slot,
                },
                clock: config.clock.clone(),
            };
            let acquired = tokio.block_on(keeper.acquire(config.acquire_timeout()))?;
            let findings = tokio.block_on(durability(&*store, config.ttl));
            let shared = Arc::new(Shared::new(generator, acquired.lease.clone(), store.kind()));
            for listener in &self.listeners.0 {
                shared.subscribe(listener.clone());
            }
            for finding in findings {
                shared.emit(finding.into());
            }
            keeper.install(&shared, &acquired);
            let mut lanes = vec![(keeper.clone(), shared)];
            // More slots (`slots`): one lane each, under an owner key of its own (`KEY#1`, `KEY#2`, ...), so that
            // the lanes are not duplicate owners of one key and each finds its own slot again after a restart.
            for i in 1..config.slots {
                let lane = Keeper {
                    request: AcquireRequest {
                        owner: Owner::new(format!("{}#{i}", keeper.request.owner.key)),
                        preferred_slot: config.preferred_slot.map(|p| {
                            ((u64::from(p) + u64::from(i)) % (1u64 << config.bits)) as u32
                        }),
                        ..keeper.request.clone()
                    },
                    ..keeper.clone()
                };
                match tokio.block_on(lane.acquire(config.acquire_timeout())) {
                    Ok(acquired) => {
                        let generator =
                            Generator::new(config.layout, config.clock.clone(), config.waits);
                        let shared =
                            Arc::new(Shared::new(generator, acquired.lease.clone(), store.kind()));
                        for listener in &self.listeners.0 {
                            shared.subscribe(listener.clone());
                        }
                        lane.install(&shared, &acquired);
                        lanes.push((lane, shared));
                    }
                    Err(e) => {
                        // All or nothing: release the slots taken so far.
                        let _ = stop.send(true);
                        tokio.block_on(run_lanes(lanes, stopped));
                        return Err(e.into());
                    }
                }
            }
            // In slot order, so that `status` (the first lane) and `statuses` read the same on every start.
            lanes.sort_by_key(|(_, shared)| shared.current_lease().slot);
            let shared = lanes.iter().map(|(_, shared)| shared.clone()).collect();
            let task = Box::pin(run_lanes(lanes, stopped));
            (shared, task)
        };
        let thread = std::thread::Builder::new()
            .name("cosid-keeper".into())
            .spawn(move || tokio.block_on(task))
            .map_err(runtime_error)?;
        Ok(Runtime {
            lanes: lanes.into_boxed_slice(),
            current: AtomicUsize::new(0),
            keeper: Mutex::new(Some(KeeperThread { stop, thread })),
        })
    }
}

/// Runs every lane's keeper until `stop`; returns the latest last timestamp among them.
async fn run_lanes(
    mut lanes: Vec<(Keeper, Arc<Shared>)>,
    stop: watch::Receiver<bool>,
) -> Option<u64> {
    if lanes.len() == 1 {
        let (keeper, shared) = lanes.pop().expect("one lane");
        return keeper.run(shared, stop).await;
    }
    let tasks: Vec<_> = lanes
        .into_iter()
        .map(|(keeper, shared)| {
            let task = tokio::spawn(keeper.run(shared.clone(), stop.clone()));
            (shared, task)
        })
        .collect();
    let mut last = None;
    for (shared, task) in tasks {
        let lane_last = match task.await {
            Ok(lane_last) => lane_last,
            Err(_) => {
                tracing::error!("cosid: a keeper task panicked");
                shared.generator.seal()
            }
        };
        last = last.max(lane_last);
    }
    last
}

/// The store's unsafe settings, asked once at start (after the first lease, so the store is known to answer).
/// Best effort: a store that cannot tell within `bound` does not hold up the start, and is logged.
async fn durability(store: &dyn LeaseStore, bound: Duration) -> Vec<crate::store::Finding> {
    match tokio::time::timeout(bound, store.durability()).await {
        Ok(Ok(findings)) => findings,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "cosid: could not read the store's durability settings");
            Vec::new()
        }
        Err(_) => {
            tracing::debug!("cosid: reading the store's durability settings timed out");
            Vec::new()
        }
    }
}

/// A failure to start a thread or a tokio runtime.
fn runtime_error(e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::Store(crate::store::StoreError::Generic {
        store: "runtime",
        source: Box::new(e),
    })
}
