//! The fleet harness: many real holders, each its own owner, against one real store. Prints figures as tables;
//! asserts nothing.
//!
//! ```text
//! cargo run --release -p cosid-bench --features stores --bin cosid-fleet -- --store URL [--store URL...] [--quick]
//! ```
//!
//! Per store:
//!
//! - **storm**: N `Runtime`s (each its own owner key) started at once on one namespace: 1,024 with bits 10 and
//!   4,096 with bits 12 (`--storm N:BITS` to choose; `--quick`: 64 with bits 10). Time until all hold a slot,
//!   acquire (start-to-ready, `build_async`) p50/p99/max, errors by code, then the time to shut all down (each
//!   releases its slot);
//! - **steady**: N holders renewing (`--holders N`, default 64, 1,024 and 16,384; ttl 3 s, so each renews every
//!   second), in namespaces of at most 1,024: renewals per second, the store server's CPU over the measurement
//!   (utime + stime of its process tree in /proc, found by the port it listens on, or `--server-pid`), its CPU cost
//!   per renewal, and how the renewals fall in 100 ms buckets (the busiest bucket against the mean: 1 is evenly
//!   spread, 10 is all at once for a one-second period; at most 64 start at once, so only N = 64 starts in
//!   lock-step). Up to `--max-runtimes` holders (default 4,096) are
//!   `Runtime`s, each with its keeper thread; above that, tokio tasks driving the store API on the keeper's
//!   schedule (acquire, then renew ttl/3 after the last renewal ended), sharing 16 connections; those not holding
//!   a slot `--settle-seconds` (default 300) after the start give up, and the rest are measured;
//! - **namespace size**: one namespace filled with N leases (`--fill N`, default 64, 1,024, 4,096 and 16,384;
//!   `--quick`: 64 and 1,024) through the store API (16 acquires in flight, long ttl), then acquire-and-release
//!   of one more owner 200 times, one at a time: the acquire's p50/p99 at that size. Acquire cost that does not
//!   grow with the namespace shows as a flat p50; the fill rate is printed too. A fill stops after
//!   `--fill-seconds` (default 120) and measures at the size it reached;
//! - **first id**: the `cosid` CLI (`--cosid-bin`, `COSID_BIN`, or a `cosid` beside this binary) run as a process
//!   `--first-id-runs` times: process start to the first id printed (p50/max); without a CLI, a `Runtime` started
//!   in this process.
//!
//! `--phases storm,steady,size,first` runs only the phases named.
//!
//! Each `Runtime` opens its own store (its own connection), as a process does; PostgreSQL and MySQL cap their
//! connections (`max_connections`), so there the runtimes share one store (one pool, as processes behind a
//! pooler would): `--connections K` sets the number of shared stores for any store (0: one each). Every run uses
//! fresh namespaces, so the harness can be pointed at shared servers; it leaves their records behind.

use cosid::clock::SystemClock;
use cosid::lease::{
    AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord, Owner, SlotLease,
};
use cosid::store::{Finding, Inspection, LeaseStore, StoreError, StoreUrl};
use cosid::{Event, Runtime};
use cosid_bench::{millis, quantile};
use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Holders per namespace in the steady phase (bits 10).
const PER_NAMESPACE: usize = 1_024;
/// Shared connections of the task driver.
const TASK_CONNECTIONS: usize = 16;
/// How long a start may retry: a holder not ready by then counts as an error of its code.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(60);
/// Starts in flight at once in the steady phase (the storm starts all at once): the steady phase measures
/// renewals, not a storm. 64 holders or fewer start all at once.
const RAMP: usize = 64;
/// Buckets of the renewal schedule.
const BUCKET: Duration = Duration::from_millis(100);

struct Options {
    stores: Vec<String>,
    storms: Vec<(usize, u8)>,
    steady: Vec<usize>,
    ttl: Duration,
    seconds: f64,
    connections: Option<usize>,
    max_runtimes: usize,
    cosid_bin: Option<PathBuf>,
    first_id_runs: usize,
    server_pids: Vec<u32>,
    fills: Vec<usize>,
    fill_limit: Duration,
    phases: Vec<String>,
    settle_limit: Duration,
}

fn usage() -> ! {
    eprintln!(
        "usage: cosid-fleet --store URL [--store URL...] [--quick] [--storm N:BITS]... [--holders N]... \
         [--ttl-ms MS] [--seconds S] [--connections K] [--max-runtimes N] [--cosid-bin PATH] \
         [--first-id-runs N] [--server-pid PID]... [--fill N]... [--fill-seconds S] \
         [--phases storm,steady,size,first] [--settle-seconds S]"
    );
    std::process::exit(2)
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let mut o = Options {
        stores: Vec::new(),
        storms: Vec::new(),
        steady: Vec::new(),
        ttl: Duration::from_secs(3),
        seconds: if quick { 2.0 } else { 10.0 },
        connections: None,
        max_runtimes: 4_096,
        cosid_bin: std::env::var_os("COSID_BIN")
            .map(PathBuf::from)
            .or_else(|| {
                let beside = std::env::current_exe().ok()?.with_file_name("cosid");
                beside.is_file().then_some(beside)
            }),
        first_id_runs: if quick { 3 } else { 10 },
        server_pids: Vec::new(),
        fills: Vec::new(),
        fill_limit: Duration::from_secs(120),
        settle_limit: Duration::from_secs(300),
        phases: ["storm", "steady", "size", "first"]
            .map(String::from)
            .to_vec(),
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().cloned().unwrap_or_else(|| usage());
        let number = |v: String| v.parse::<u64>().unwrap_or_else(|_| usage());
        match arg.as_str() {
            "--quick" => {}
            "--store" => o.stores.push(value()),
            "--storm" => {
                let v = value();
                let (n, bits) = v.split_once(':').unwrap_or_else(|| usage());
                o.storms.push((
                    number(n.into()) as usize,
                    number(bits.into()).try_into().unwrap_or_else(|_| usage()),
                ));
            }
            "--holders" => o.steady.push(number(value()) as usize),
            "--ttl-ms" => o.ttl = Duration::from_millis(number(value())),
            "--seconds" => o.seconds = value().parse().unwrap_or_else(|_| usage()),
            "--connections" => o.connections = Some(number(value()) as usize),
            "--max-runtimes" => o.max_runtimes = number(value()) as usize,
            "--cosid-bin" => o.cosid_bin = Some(value().into()),
            "--first-id-runs" => o.first_id_runs = number(value()) as usize,
            "--server-pid" => o.server_pids.push(number(value()) as u32),
            "--fill" => o.fills.push(number(value()) as usize),
            "--fill-seconds" => o.fill_limit = Duration::from_secs(number(value())),
            "--phases" => o.phases = value().split(',').map(String::from).collect(),
            "--settle-seconds" => o.settle_limit = Duration::from_secs(number(value())),
            _ => usage(),
        }
    }
    if o.stores.is_empty() {
        usage();
    }
    if o.storms.is_empty() {
        o.storms = if quick {
            vec![(64, 10)]
        } else {
            vec![(1_024, 10), (4_096, 12)]
        };
    }
    if o.fills.is_empty() {
        o.fills = if quick {
            vec![64, 1_024]
        } else {
            vec![64, 1_024, 4_096, 16_384]
        };
    }
    if o.steady.is_empty() {
        o.steady = if quick {
            vec![64]
        } else {
            vec![64, 1_024, 16_384]
        };
    }
    o
}

fn main() {
    let o = options();
    cosid_bench::machine();
    println!(
        "limits: {} threads per user (ulimit -u), {} threads on the host, {} open files",
        limit("Max processes"),
        std::fs::read_to_string("/proc/sys/kernel/threads-max")
            .map_or("?".into(), |s| s.trim().to_owned()),
        limit("Max open files"),
    );
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // `build_async` starts each runtime on the blocking pool: room for every holder of a storm at once.
        .max_blocking_threads(
            o.storms
                .iter()
                .map(|s| s.0)
                .max()
                .unwrap_or(1)
                .max(o.max_runtimes)
                + 64,
        )
        .build()
        .expect("a tokio runtime");
    let mut storms = Vec::new();
    let mut steady = Vec::new();
    let mut first = Vec::new();
    let mut sizes = Vec::new();
    for url in &o.stores {
        let name = cosid::store::redacted(url);
        let stores = match tokio.block_on(Stores::open(url, o.connections)) {
            Ok(s) => s,
            Err(e) => {
                println!("\n{name}: cannot open: {e}");
                continue;
            }
        };
        let server = server_pids(url, &o.server_pids);
        eprintln!(
            "\n== {name} ({}; server pid {})",
            stores.describe(),
            server.as_ref().map_or("n/a".into(), |p| format!("{p:?}"))
        );
        let run = |phase: &str| o.phases.iter().any(|p| p == phase);
        for &(holders, bits) in o.storms.iter().filter(|_| run("storm")) {
            eprintln!("storm: {holders} holders, bits {bits}");
            let row = tokio.block_on(storm(url, &stores, holders, bits));
            eprintln!("| {name} | {row}");
            storms.push(format!("| {name} | {row}"));
        }
        for &holders in o.steady.iter().filter(|_| run("steady")) {
            eprintln!("steady: {holders} holders, ttl {} ms", o.ttl.as_millis());
            let row = if holders <= o.max_runtimes {
                tokio.block_on(steady_runtimes(
                    url,
                    &stores,
                    holders,
                    &o,
                    server.as_deref(),
                ))
            } else {
                tokio.block_on(steady_tasks(url, &stores, holders, &o, server.as_deref()))
            };
            eprintln!("| {name} | {row}");
            steady.push(format!("| {name} | {row}"));
        }
        for &n in o.fills.iter().filter(|_| run("size")) {
            eprintln!("namespace size: {n} leases");
            let row = tokio.block_on(namespace_size(&stores, n, o.fill_limit));
            eprintln!("| {name} | {row}");
            sizes.push(format!("| {name} | {row}"));
        }
        if run("first") {
            eprintln!("first id");
            first.push(format!("| {name} | {} |", first_id(url, &o)));
        }
    }

    println!("\nStorm: N runtimes started at once on one namespace (ttl 30 s); acquire = start to ready (ms)\n");
    println!("| store | holders | bits | connections | all hold a slot | p50 | p99 | max | errors | distinct slots (of runtimes still holding) | all shut down |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    storms.iter().for_each(|r| println!("{r}"));
    println!(
        "\nSteady: N holders renewing every ttl/3 = {} ms, measured over {} s after every holder renewed once\n",
        o.ttl.as_millis() / 3,
        o.seconds
    );
    println!("| store | holders | namespaces | driver | renewals/s | expected/s | server CPU (% of a core) | server CPU µs/renewal | harness CPU (% of a core) | busiest 100 ms ÷ mean | renew p50/p99 ms | errors |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    steady.iter().for_each(|r| println!("{r}"));
    println!(
        "\nNamespace size: one more owner's acquire (then release) in a namespace of N held leases, 200 times (ms)\n"
    );
    println!("| store | leases | bits | fill | fill rate (acquires/s) | acquire p50 | acquire p99 | errors |");
    println!("|---|---|---|---|---|---|---|---|");
    sizes.iter().for_each(|r| println!("{r}"));
    println!("\nFirst id: process start to the first id printed (ms)\n");
    println!("| store | how | runs | p50 | max |");
    println!("|---|---|---|---|---|");
    first.iter().for_each(|r| println!("{r}"));
}

/// A limit of this process from /proc/self/limits (its soft value).
fn limit(name: &str) -> String {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l[name.len()..].split_whitespace().next().map(str::to_owned))
        })
        .unwrap_or_else(|| "?".into())
}

/// How the holders reach the store: each `Runtime` its own store, or K stores shared, and the task driver's.
struct Stores {
    /// Shared by the runtimes (round robin), or empty: each opens its own.
    for_runtimes: Vec<Arc<dyn LeaseStore>>,
    /// Shared by the task driver's holders (round robin).
    for_tasks: Vec<Arc<dyn LeaseStore>>,
}

impl Stores {
    async fn open(url: &str, connections: Option<usize>) -> Result<Stores, StoreError> {
        let parsed = StoreUrl::parse(url)?;
        let open = || cosid::store::open(&parsed, Arc::new(SystemClock));
        let first = open().await?;
        first.init().await?;
        // Servers with a connection cap (and a pool in the store): one store, its pool shared by all.
        let capped = matches!(first.kind(), "postgres" | "mysql");
        let shared = connections.unwrap_or(if capped { 1 } else { 0 });
        let handle = tokio::runtime::Handle::current();
        let mut for_runtimes = Vec::new();
        for i in 0..shared {
            let store = if i == 0 { first.clone() } else { open().await? };
            for_runtimes.push(Arc::new(OnHarness {
                inner: store,
                handle: handle.clone(),
            }) as Arc<dyn LeaseStore>);
        }
        let mut for_tasks = vec![first];
        for _ in 1..connections.unwrap_or(if capped { 1 } else { TASK_CONNECTIONS }) {
            for_tasks.push(open().await?);
        }
        Ok(Stores {
            for_runtimes,
            for_tasks,
        })
    }

    fn describe(&self) -> String {
        match self.for_runtimes.len() {
            0 => "each runtime opens its own store".into(),
            k => format!("runtimes share {k} store(s)"),
        }
    }

    fn connections(&self) -> String {
        match self.for_runtimes.len() {
            0 => "one each".into(),
            k => format!("{k} shared"),
        }
    }

    /// A builder for holder `i` on `namespace`: its own owner key, and its own store unless they are shared.
    fn builder(&self, url: &str, run: &str, i: usize, namespace: &str) -> cosid::Builder {
        let b = Runtime::builder()
            .namespace(namespace)
            .owner_key(format!("fleet-{run}-{i}"))
            .acquire_timeout(ACQUIRE_TIMEOUT);
        match self.for_runtimes.len() {
            0 => b.store(url),
            k => b.store_instance(self.for_runtimes[i % k].clone()),
        }
    }
}

/// A store shared by runtimes on other threads: every call runs on the harness's tokio runtime, where the store's
/// connections live, not on the calling keeper's own runtime.
#[derive(Debug)]
struct OnHarness {
    inner: Arc<dyn LeaseStore>,
    handle: tokio::runtime::Handle,
}

impl OnHarness {
    async fn on<T, Fut>(&self, call: impl FnOnce(Arc<dyn LeaseStore>) -> Fut) -> T
    where
        Fut: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        self.handle
            .spawn(call(self.inner.clone()))
            .await
            .expect("a store call on the harness's runtime")
    }
}

#[async_trait::async_trait]
impl LeaseStore for OnHarness {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    async fn init(&self) -> Result<(), StoreError> {
        self.on(|s| async move { s.init().await }).await
    }
    async fn durability(&self) -> Result<Vec<Finding>, StoreError> {
        self.on(|s| async move { s.durability().await }).await
    }
    async fn acquire(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        request: &AcquireRequest,
    ) -> Result<Acquired, StoreError> {
        let (namespace, config, request) = (namespace.clone(), *config, request.clone());
        self.on(|s| async move { s.acquire(&namespace, &config, &request).await })
            .await
    }
    async fn renew(
        &self,
        lease: &SlotLease,
        ttl_ms: u64,
        tolerance_ms: u64,
    ) -> Result<SlotLease, StoreError> {
        let lease = lease.clone();
        self.on(|s| async move { s.renew(&lease, ttl_ms, tolerance_ms).await })
            .await
    }
    async fn release(&self, lease: &SlotLease, last_issued: Option<u64>) -> Result<(), StoreError> {
        let lease = lease.clone();
        self.on(|s| async move { s.release(&lease, last_issued).await })
            .await
    }
    async fn inspect(&self, namespace: &Namespace) -> Result<Inspection, StoreError> {
        let namespace = namespace.clone();
        self.on(|s| async move { s.inspect(&namespace).await })
            .await
    }
    async fn raise_not_before(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        not_before: u64,
    ) -> Result<NamespaceRecord, StoreError> {
        let (namespace, config) = (namespace.clone(), *config);
        self.on(|s| async move { s.raise_not_before(&namespace, &config, not_before).await })
            .await
    }
}

/// Fills a fresh namespace with `n` leases (16 acquires in flight, ttl 10 min), within `limit`; then one more
/// owner acquires and releases 200 times, one at a time. The row of the namespace-size table.
async fn namespace_size(stores: &Stores, n: usize, limit: Duration) -> String {
    const PROBES: usize = 200;
    const IN_FLIGHT: usize = 16;
    const TTL_MS: u64 = 600_000;
    let bits = (usize::BITS - (n + PROBES).leading_zeros()) as u8;
    let config = NamespaceConfig {
        bits,
        tolerance_ms: 1_000,
        layout: cosid::Layout::millis(),
    };
    let run = fresh("size");
    let ns = Namespace::new(&run).expect("a namespace name");
    let errors = Arc::new(Mutex::new(Errors::default()));
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let deadline = started + limit;
    let workers: Vec<_> = (0..IN_FLIGHT)
        .map(|w| {
            let store = stores.for_tasks[w % stores.for_tasks.len()].clone();
            let (ns, errors, next, run) = (ns.clone(), errors.clone(), next.clone(), run.clone());
            tokio::spawn(async move {
                let mut done = 0usize;
                while Instant::now() < deadline {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let request = AcquireRequest {
                        owner: Owner::new(format!("{run}-{i}")),
                        ttl_ms: TTL_MS,
                        preferred_slot: None,
                    };
                    match store.acquire(&ns, &config, &request).await {
                        Ok(_) => done += 1,
                        Err(e) => errors.lock().unwrap().add(cosid::Error::from(e).code()),
                    }
                }
                done
            })
        })
        .collect();
    let mut filled = 0;
    for w in workers {
        filled += w.await.expect("a fill task");
    }
    let fill_time = started.elapsed();
    let store = stores.for_tasks[0].clone();
    let mut took = Vec::with_capacity(PROBES);
    for i in 0..PROBES {
        let request = AcquireRequest {
            owner: Owner::new(format!("{run}-probe-{i}")),
            ttl_ms: TTL_MS,
            preferred_slot: None,
        };
        let t = Instant::now();
        match store.acquire(&ns, &config, &request).await {
            Ok(got) => {
                took.push(t.elapsed());
                if let Err(e) = store.release(&got.lease, None).await {
                    errors.lock().unwrap().add(cosid::Error::from(e).code());
                }
            }
            Err(e) => errors.lock().unwrap().add(cosid::Error::from(e).code()),
        }
    }
    took.sort();
    let size = if filled == n {
        format!("{n}")
    } else if fill_time >= limit {
        format!("{filled} (of {n}; fill stopped at {} s)", limit.as_secs())
    } else {
        format!("{filled} (of {n}; the rest failed)")
    };
    let q = |p: f64| {
        if took.is_empty() {
            "-".to_string()
        } else {
            millis(quantile(&took, p).unwrap_or_default())
        }
    };
    format!(
        "{size} | {bits} | {:.1} s | {:.0} | {} | {} | {} |",
        fill_time.as_secs_f64(),
        filled as f64 / fill_time.as_secs_f64(),
        q(0.5),
        q(0.99),
        errors.lock().unwrap(),
    )
}

fn fresh(label: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("fleet-{label}-{}", &id[..12])
}

/// Counts by error code (or message), as `CODE ×n, ...`, or `0`.
#[derive(Default)]
struct Errors(BTreeMap<String, u64>);

impl Errors {
    fn add(&mut self, code: impl Into<String>) {
        *self.0.entry(code.into()).or_default() += 1;
    }
}

impl std::fmt::Display for Errors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("0");
        }
        let parts: Vec<String> = self.0.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
        f.write_str(&parts.join(", "))
    }
}

/// Starts `n` runtimes (`builder` makes each one's), released from one barrier, at most `in_flight` at a time. Returns, in order,
/// each one's start-to-ready time and result, and the time until the last was ready.
async fn start_all(
    n: usize,
    in_flight: usize,
    builder: impl Fn(usize) -> cosid::Builder,
) -> (Vec<(Duration, Result<Runtime, cosid::Error>)>, Duration) {
    let go = Arc::new(tokio::sync::Barrier::new(n + 1));
    let gate = Arc::new(tokio::sync::Semaphore::new(in_flight));
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let b = builder(i);
            let (go, gate) = (go.clone(), gate.clone());
            tokio::spawn(async move {
                go.wait().await;
                let _pass = gate.acquire().await.expect("an open gate");
                let started = Instant::now();
                let built = b.build_async().await;
                (started.elapsed(), built, Instant::now())
            })
        })
        .collect();
    go.wait().await;
    let started = Instant::now();
    let mut out = Vec::with_capacity(n);
    let mut last = started;
    for t in tasks {
        let (took, built, done) = t.await.expect("a start task");
        last = last.max(done);
        out.push((took, built));
    }
    (out, last - started)
}

/// Shuts every runtime down at once (each releases its slot); the time it took.
async fn shutdown_all(runtimes: Vec<Runtime>) -> Duration {
    let started = Instant::now();
    let tasks: Vec<_> = runtimes
        .into_iter()
        .map(|rt| {
            tokio::spawn(async move {
                rt.shutdown_async().await;
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    started.elapsed()
}

async fn storm(url: &str, stores: &Stores, holders: usize, bits: u8) -> String {
    let run = fresh("storm");
    let ns = run.clone();
    let base = cosid::Layout::millis();
    let layout = cosid::Layout::new(
        base.epoch_ms(),
        base.tick(),
        base.timestamp_bits(),
        bits,
        base.slot_bits() + base.sequence_bits() - bits,
    )
    .expect("a layout with `bits` slot bits");
    let (results, all) = start_all(holders, holders, |i| {
        stores
            .builder(url, &run, i, &ns)
            .layout(layout)
            .bits(bits)
            .ttl(Duration::from_secs(30))
    })
    .await;
    let mut latencies = Vec::new();
    let mut errors = Errors::default();
    let mut runtimes = Vec::new();
    for (took, built) in results {
        match built {
            Ok(rt) => {
                latencies.push(took);
                runtimes.push(rt);
            }
            Err(e) => {
                // The first message of each code, so an error count can be traced.
                if !errors.0.contains_key(e.code()) {
                    eprintln!("storm: first {}: {e}", e.code());
                }
                errors.add(e.code());
            }
        }
    }
    latencies.sort();
    let statuses: Vec<cosid::Status> = runtimes.iter().map(|rt| rt.status()).collect();
    let distinct = distinct_slots(&statuses);
    let down = shutdown_all(runtimes).await;
    let q = |q| quantile(&latencies, q).map_or("-".into(), millis);
    format!(
        "{holders} | {bits} | {} | {} ms | {} | {} | {} | {errors} | {distinct} | {} ms |",
        stores.connections(),
        millis(all),
        q(0.5),
        q(0.99),
        q(1.0),
        millis(down)
    )
}

/// When renewals happened (since `origin`), and the failures seen, shared by every holder of a steady run.
struct Recorder {
    origin: Instant,
    renewals: Mutex<Vec<Duration>>,
    latencies: Mutex<Vec<Duration>>,
    errors: Mutex<Errors>,
}

impl Recorder {
    fn new() -> Arc<Recorder> {
        Arc::new(Recorder {
            origin: Instant::now(),
            renewals: Mutex::new(Vec::new()),
            latencies: Mutex::new(Vec::new()),
            errors: Mutex::new(Errors::default()),
        })
    }
    fn renewed(&self, latency: Option<Duration>) {
        let at = self.origin.elapsed();
        self.renewals.lock().unwrap().push(at);
        if let Some(l) = latency {
            self.latencies.lock().unwrap().push(l);
        }
    }
    /// Counts a failure under `code`; prints the first message of each code.
    fn failed(&self, code: &str, message: &str) {
        let mut errors = self.errors.lock().unwrap();
        if !errors.0.contains_key(code) {
            eprintln!("  first {code}: {message}");
        }
        errors.add(code);
    }
}

/// The steady phase's figures over `[from, to]` (since the recorder's origin), with the CPU ticks of the server
/// and of this process over it.
struct Window {
    from: Duration,
    to: Duration,
    server_cpu: Option<Duration>,
    harness_cpu: Option<Duration>,
}

/// Waits one renewal period (so every holder has renewed once), then measures for `seconds`.
async fn measure(o: &Options, rec: &Recorder, server: Option<&[u32]>) -> Window {
    tokio::time::sleep(o.ttl / 3 + BUCKET).await;
    let from = rec.origin.elapsed();
    let (server0, harness0) = (server.and_then(cpu_of), cpu_of(&[std::process::id()]));
    tokio::time::sleep(Duration::from_secs_f64(o.seconds)).await;
    let to = rec.origin.elapsed();
    let (server1, harness1) = (server.and_then(cpu_of), cpu_of(&[std::process::id()]));
    Window {
        from,
        to,
        server_cpu: server0.zip(server1).map(|(a, b)| b.saturating_sub(a)),
        harness_cpu: harness0.zip(harness1).map(|(a, b)| b.saturating_sub(a)),
    }
}

/// The table's columns from `renewals/s` on: renewals/s, expected, CPU, spread, latency, errors.
fn steady_columns(o: &Options, holders: usize, rec: &Recorder, w: &Window) -> String {
    let span = (w.to - w.from).as_secs_f64();
    let times: Vec<Duration> = rec
        .renewals
        .lock()
        .unwrap()
        .iter()
        .copied()
        .filter(|t| *t >= w.from && *t < w.to)
        .collect();
    let count = times.len();
    let per_s = count as f64 / span;
    let expected = holders as f64 / (o.ttl / 3).as_secs_f64();
    let mut buckets = vec![0u64; ((w.to - w.from).as_nanos() / BUCKET.as_nanos()).max(1) as usize];
    for t in &times {
        let i = ((*t - w.from).as_nanos() / BUCKET.as_nanos()) as usize;
        if let Some(b) = buckets.get_mut(i) {
            *b += 1;
        }
    }
    let mean = buckets.iter().sum::<u64>() as f64 / buckets.len() as f64;
    let peak = buckets.iter().copied().max().unwrap_or(0) as f64;
    let spread = if mean > 0.0 {
        format!("{:.1}", peak / mean)
    } else {
        "-".into()
    };
    let pct = |cpu: Option<Duration>| {
        cpu.map_or("n/a".into(), |c| {
            format!("{:.1}", c.as_secs_f64() / span * 100.0)
        })
    };
    let per_renewal = match w.server_cpu {
        Some(c) if count > 0 => format!("{:.0}", c.as_secs_f64() * 1e6 / count as f64),
        _ => "n/a".into(),
    };
    let mut latencies = rec.latencies.lock().unwrap().clone();
    latencies.sort();
    let latency = match (quantile(&latencies, 0.5), quantile(&latencies, 0.99)) {
        (Some(a), Some(b)) => format!("{}/{}", millis(a), millis(b)),
        _ => "-".into(),
    };
    let errors = rec.errors.lock().unwrap();
    format!(
        "{per_s:.0} | {expected:.0} | {} | {per_renewal} | {} | {spread} | {latency} | {errors} |",
        pct(w.server_cpu),
        pct(w.harness_cpu),
    )
}

/// Counts a store call's failure by its code (`start CODE`, `renew CODE`).
fn failed(rec: &Recorder, call: &str, e: StoreError) {
    let message = e.to_string();
    rec.failed(
        &format!("{call} {}", cosid::Error::from(e).code()),
        &message,
    );
}

fn namespaces(holders: usize) -> Vec<String> {
    let run = fresh("steady");
    (0..holders.div_ceil(PER_NAMESPACE))
        .map(|i| format!("{run}-{i}"))
        .collect()
}

/// Steady renewals of `holders` `Runtime`s (each its keeper thread), started at once.
async fn steady_runtimes(
    url: &str,
    stores: &Stores,
    holders: usize,
    o: &Options,
    server: Option<&[u32]>,
) -> String {
    let names = namespaces(holders);
    let rec = Recorder::new();
    let (results, _) = start_all(holders, RAMP, |i| {
        let rec = rec.clone();
        stores
            .builder(url, &names[0], i, &names[i / PER_NAMESPACE])
            .ttl(o.ttl)
            .subscribe(move |e| match e {
                Event::Renewed { .. } => rec.renewed(None),
                Event::RenewFailed { error, .. } => rec.failed("RENEW_FAILED", error),
                Event::SlotLost { reason, .. } => rec.failed("SLOT_LOST", reason),
                _ => {}
            })
    })
    .await;
    let mut runtimes = Vec::new();
    for (_, built) in results {
        match built {
            Ok(rt) => runtimes.push(rt),
            Err(e) => rec.failed(&format!("start {}", e.code()), &e.to_string()),
        }
    }
    let w = measure(o, &rec, server).await;
    shutdown_all(runtimes).await;
    format!(
        "{holders} | {} | runtimes ({}) | {}",
        names.len(),
        stores.connections(),
        steady_columns(o, holders, &rec, &w)
    )
}

/// Steady renewals of `holders` tokio tasks on the store API, each on the keeper's schedule.
async fn steady_tasks(
    _url: &str,
    stores: &Stores,
    holders: usize,
    o: &Options,
    server: Option<&[u32]>,
) -> String {
    let names = namespaces(holders);
    let rec = Recorder::new();
    let stop = Arc::new(AtomicBool::new(false));
    let period = o.ttl / 3;
    let ttl_ms = o.ttl.as_millis() as u64;
    let config = NamespaceConfig {
        bits: 10,
        tolerance_ms: 1_000,
        layout: cosid::Layout::millis(),
    };
    let go = Arc::new(tokio::sync::Barrier::new(holders + 1));
    let gate = Arc::new(tokio::sync::Semaphore::new(RAMP));
    // Holders that hold a slot or gave up: the measurement starts when all have, or at the phase's deadline
    // (`--settle-seconds`), when those not yet started give up and the rest are measured.
    let settled = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let cutoff = Arc::new(AtomicBool::new(false));
    let holding = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tasks: Vec<_> = (0..holders)
        .map(|i| {
            let store = stores.for_tasks[i % stores.for_tasks.len()].clone();
            let ns = Namespace::new(names[i / PER_NAMESPACE].clone()).expect("a valid name");
            let (rec, stop, go) = (rec.clone(), stop.clone(), go.clone());
            let (gate, settled) = (gate.clone(), settled.clone());
            let (cutoff, holding) = (cutoff.clone(), holding.clone());
            let request = AcquireRequest {
                owner: Owner::new(format!("fleet-{}-{i}", names[0])),
                ttl_ms,
                preferred_slot: None,
            };
            tokio::spawn(async move {
                go.wait().await;
                let pass = gate.acquire().await.expect("an open gate");
                let deadline = Instant::now() + ACQUIRE_TIMEOUT;
                let acquired = loop {
                    if cutoff.load(Ordering::Relaxed) {
                        break None;
                    }
                    match store.acquire(&ns, &config, &request).await {
                        Ok(a) => break Some(a.lease),
                        Err(e) if e.is_retryable() || matches!(e, StoreError::Exhausted { .. }) => {
                            if Instant::now() > deadline {
                                failed(&rec, "start", e);
                                break None;
                            }
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                        Err(e) => {
                            failed(&rec, "start", e);
                            break None;
                        }
                    }
                };
                drop(pass);
                if acquired.is_some() {
                    holding.fetch_add(1, Ordering::Relaxed);
                }
                settled.fetch_add(1, Ordering::Relaxed);
                let Some(mut lease) = acquired else {
                    return;
                };
                let mut last = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    tokio::time::sleep_until((last + period).into()).await;
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let started = Instant::now();
                    match store.renew(&lease, ttl_ms, config.tolerance_ms).await {
                        Ok(l) => {
                            lease = l;
                            rec.renewed(Some(started.elapsed()));
                        }
                        Err(e) => failed(&rec, "renew", e),
                    }
                    last = Instant::now();
                }
                let _ = store.release(&lease, None).await;
            })
        })
        .collect();
    go.wait().await;
    let settle_deadline = Instant::now() + o.settle_limit;
    while settled.load(Ordering::Relaxed) < holders {
        if Instant::now() >= settle_deadline {
            cutoff.store(true, Ordering::Relaxed);
        }
        tokio::time::sleep(BUCKET).await;
    }
    let held = holding.load(Ordering::Relaxed);
    let w = measure(o, &rec, server).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let started = if held == holders {
        format!("{holders}")
    } else if cutoff.load(Ordering::Relaxed) {
        format!(
            "{held} of {holders} (the rest not started within {} s)",
            o.settle_limit.as_secs()
        )
    } else {
        format!("{held} of {holders}")
    };
    // Renewals expected of the holders that hold a slot.
    format!(
        "{started} | {} | tasks ({} connections) | {}",
        names.len(),
        stores.for_tasks.len(),
        steady_columns(o, held, &rec, &w)
    )
}

/// `how | runs | p50 | max` of the time from start to the first id.
fn first_id(url: &str, o: &Options) -> String {
    let ns = fresh("first");
    let mut times = Vec::new();
    let mut failures = Errors::default();
    let how = match &o.cosid_bin {
        Some(bin) => {
            for _ in 0..o.first_id_runs {
                let started = Instant::now();
                let child = Command::new(bin)
                    .args(["next", "--store", url, "--namespace", &ns])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn();
                let Ok(mut child) = child else {
                    failures.add("spawn");
                    continue;
                };
                let mut line = String::new();
                let read = child
                    .stdout
                    .take()
                    .map(|out| BufReader::new(out).read_line(&mut line));
                let took = started.elapsed();
                let ok = child.wait().is_ok_and(|s| s.success());
                match read {
                    Some(Ok(n)) if n > 0 && ok => times.push(took),
                    _ => failures.add("exit"),
                }
            }
            "`cosid next` process"
        }
        None => {
            for _ in 0..o.first_id_runs {
                let started = Instant::now();
                match Runtime::builder().store(url).namespace(&ns).build() {
                    Ok(rt) => match rt.next_id() {
                        Ok(_) => {
                            times.push(started.elapsed());
                            rt.shutdown();
                        }
                        Err(e) => failures.add(e.code()),
                    },
                    Err(e) => failures.add(e.code()),
                }
            }
            "in-process `Runtime` (no `cosid` CLI found)"
        }
    };
    times.sort();
    let q = |q| quantile(&times, q).map_or("-".into(), millis);
    let failed = if failures.0.is_empty() {
        String::new()
    } else {
        format!(" (failed: {failures})")
    };
    format!("{how} | {}{failed} | {} | {}", times.len(), q(0.5), q(1.0))
}

/// The pids of the store's server: `given`, or the process listening on the URL's port on this host (`ss`).
fn server_pids(url: &str, given: &[u32]) -> Option<Vec<u32>> {
    if !given.is_empty() {
        return Some(given.to_vec());
    }
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?']).next()?;
    let host_port = authority.rsplit('@').next()?.split(',').next()?;
    let (host, port) = match host_port.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (h, p.parse::<u16>().ok()?),
        _ => (
            host_port,
            match scheme {
                "redis" => 6379,
                "postgres" | "postgresql" => 5432,
                "mysql" | "mariadb" => 3306,
                "etcd" => 2379,
                "zookeeper" => 2181,
                "mongodb" => 27017,
                "http" => 80,
                _ => return None,
            },
        ),
    };
    if !matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
        return None;
    }
    let out = Command::new("ss")
        .args(["-ltnpH", &format!("sport = :{port}")])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let pid = text
        .split("pid=")
        .nth(1)?
        .split(|c: char| !c.is_ascii_digit())
        .next()?;
    Some(vec![pid.parse().ok()?])
}

/// CPU time (user + system) of `pids` and every process descended from them, plus what their finished children
/// used (PostgreSQL's backends are processes of their own).
fn cpu_of(pids: &[u32]) -> Option<Duration> {
    let ticks_per_s: f64 = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0);
    // (pid, ppid, utime + stime, cutime + cstime) of every process.
    let mut procs = Vec::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the command name (which may hold spaces), from field 3 (state) on.
        let Some(after) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let f: Vec<u64> = after
            .split_whitespace()
            .skip(1)
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        if f.len() > 14 {
            // f[0] = ppid (field 4), f[10..14] = utime, stime, cutime, cstime (fields 14-17).
            procs.push((pid, f[0] as u32, f[10] + f[11], f[12] + f[13]));
        }
    }
    let mut tree: HashSet<u32> = pids.iter().copied().collect();
    if !procs.iter().any(|p| tree.contains(&p.0)) {
        return None;
    }
    loop {
        let before = tree.len();
        for p in &procs {
            if tree.contains(&p.1) {
                tree.insert(p.0);
            }
        }
        if tree.len() == before {
            break;
        }
    }
    let ticks: u64 = procs
        .iter()
        .filter(|p| tree.contains(&p.0))
        .map(|p| p.2 + if pids.contains(&p.0) { p.3 } else { 0 })
        .sum();
    Some(Duration::from_secs_f64(ticks as f64 / ticks_per_s))
}

/// The distinct slots of the runtimes that still hold a lease (a runtime whose lease was lost while the store was
/// overloaded still reports its old slot, which another may hold now), and a safety check: two runtimes on one slot
/// must have disjoint windows (the protocol starts each holder's window at its predecessor's ceiling), else the
/// figure says so and the harness exits non-zero.
fn distinct_slots(statuses: &[cosid::Status]) -> String {
    use cosid::State;
    let holding: Vec<&cosid::Status> = statuses
        .iter()
        .filter(|s| matches!(s.state, State::Active | State::Renewing))
        .collect();
    let slots: HashSet<u32> = holding.iter().map(|s| s.slot).collect();
    let mut overlapping = 0;
    for (i, a) in statuses.iter().enumerate() {
        for b in &statuses[i + 1..] {
            if a.slot == b.slot && a.floor_ms < b.ceiling_ms && b.floor_ms < a.ceiling_ms {
                eprintln!("storm: slot {} windows overlap: {a:?} and {b:?}", a.slot);
                overlapping += 1;
            }
        }
    }
    if overlapping > 0 {
        eprintln!("storm: {overlapping} pairs of runtimes hold overlapping windows on one slot");
        std::process::exit(3);
    }
    let lost = statuses.len() - holding.len();
    format!(
        "{} of {}{}",
        slots.len(),
        holding.len(),
        if lost > 0 {
            format!(" ({lost} lost their lease)")
        } else {
            String::new()
        }
    )
}
