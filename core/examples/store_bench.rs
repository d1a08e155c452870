//! Store benchmark: prints, per store URL, the latency of acquire, renew and release (p50, p99), operations per
//! second with 8 concurrent clients, and the time from `Runtime` start to the first id. It asserts nothing.
//!
//! ```text
//! eval "$(bash .ci/services/redis.sh)"; eval "$(bash .ci/services/postgres.sh)"
//! cargo run --release -p cosid --example store_bench --features redis,postgres -- \
//!     memory: sqlite:///tmp/cosid-bench.db "$COSID_TEST_REDIS_URL" "$COSID_TEST_POSTGRES_URL"
//! ```
//!
//! Each run uses fresh namespaces, so it can be pointed at a shared server; it leaves their records behind.
//! Settings (environment): `COSID_BENCH_OPS` (sequential operations per measurement, default 300),
//! `COSID_BENCH_SECONDS` (length of each concurrent phase, default 2).

use cosid::clock::SystemClock;
use cosid::lease::{AcquireRequest, Namespace, NamespaceConfig, Owner};
use cosid::store::{LeaseStore, StoreUrl};
use cosid::Runtime;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONFIG: NamespaceConfig = NamespaceConfig {
    bits: 10,
    tolerance_ms: 1_000,
    layout: cosid::Layout::millis(),
};
const TTL_MS: u64 = 30_000;
const CLIENTS: usize = 8;
const FIRST_ID_RUNS: usize = 7;

type Failure = Box<dyn std::error::Error>;

fn main() {
    let urls: Vec<String> = std::env::args().skip(1).collect();
    if urls.is_empty() || urls.iter().any(|u| u == "-h" || u == "--help") {
        eprintln!("usage: store_bench STORE_URL... (memory:, sqlite:///path, redis://..., postgres://...)");
        std::process::exit(2);
    }
    let ops = env_number("COSID_BENCH_OPS", 300);
    let seconds = env_number("COSID_BENCH_SECONDS", 2);
    println!(
        "{:<44} {:>17} {:>17} {:>17} {:>13} {:>15} {:>17}",
        "store",
        "acquire p50/p99",
        "renew p50/p99",
        "release p50/p99",
        "renew/s (8)",
        "acq+rel/s (8)",
        "first id p50/max"
    );
    let mut failed = false;
    for url in &urls {
        match bench(url, ops as usize, Duration::from_secs(seconds)) {
            Ok(row) => println!("{row}"),
            Err(e) => {
                failed = true;
                println!("{:<44} failed: {e}", redacted(url));
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v.parse().unwrap_or_else(|_| {
            eprintln!("{name}={v:?} is not a whole number; using {default}");
            default
        }),
        Err(_) => default,
    }
}

fn bench(url: &str, ops: usize, phase: Duration) -> Result<String, Failure> {
    let parsed = StoreUrl::parse(url)?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()?;
    let (acquire, renew, release, renews_per_s, cycles_per_s) = tokio.block_on(async {
        let open = || cosid::store::open(&parsed, Arc::new(SystemClock));
        let store = open().await?;
        store.init().await?;
        let ns = fresh("latency");

        let mut acquire = Vec::with_capacity(ops);
        let mut leases = Vec::with_capacity(ops);
        for i in 0..ops.min(1 << CONFIG.bits) {
            let request = request(format!("bench-{i}"));
            let started = Instant::now();
            let got = store.acquire(&ns, &CONFIG, &request).await?;
            acquire.push(started.elapsed());
            leases.push(got.lease);
        }
        let mut renew = Vec::with_capacity(leases.len());
        for lease in &leases {
            let started = Instant::now();
            store.renew(lease, TTL_MS, CONFIG.tolerance_ms).await?;
            renew.push(started.elapsed());
        }
        let mut release = Vec::with_capacity(leases.len());
        for lease in &leases {
            let started = Instant::now();
            store.release(lease, Some(lease.floor + 1)).await?;
            release.push(started.elapsed());
        }

        // 8 clients, each with a store of its own (its own connection), as 8 processes would have.
        let mut clients = Vec::new();
        for _ in 0..CLIENTS {
            clients.push(open().await?);
        }
        let renews_per_s = concurrent(&clients, phase, fresh("renew"), Phase::Renew).await?;
        // A store whose conditional writes are not atomic (FerretDB 1.x for MongoDB) fails here: say so on its line,
        // and keep the other figures.
        let cycles_per_s = concurrent(&clients, phase, fresh("cycle"), Phase::AcquireRelease)
            .await
            .map_err(|e| e.to_string());
        Ok::<_, Failure>((acquire, renew, release, renews_per_s, cycles_per_s))
    })?;
    drop(tokio);

    let mut first_id = Vec::new();
    for _ in 0..FIRST_ID_RUNS {
        let name = format!("bench-start-{}", uuid::Uuid::new_v4());
        let started = Instant::now();
        let rt = Runtime::builder().store(url).namespace(name).build()?;
        rt.next_id()?;
        first_id.push(started.elapsed());
        rt.shutdown();
    }
    first_id.sort();

    let (cycles, cycles_failure) = match cycles_per_s {
        Ok(n) => (format!("{n:.0}"), String::new()),
        Err(e) => (
            "failed".to_owned(),
            format!("\n    acquire+release with 8 clients failed: {e}"),
        ),
    };
    Ok(format!(
        "{:<44} {:>17} {:>17} {:>17} {:>13.0} {:>15} {:>17}{cycles_failure}",
        redacted(url),
        p50_p99(acquire),
        p50_p99(renew),
        p50_p99(release),
        renews_per_s,
        cycles,
        format!(
            "{}/{}",
            ms(first_id[first_id.len() / 2]),
            ms(*first_id.last().unwrap())
        ),
    ))
}

#[derive(Clone, Copy)]
enum Phase {
    /// Each client renews its own lease, again and again.
    Renew,
    /// Each client acquires a slot and releases it, again and again, all in one namespace.
    AcquireRelease,
}

/// Operations per second over all clients, running `phase` for `length`.
async fn concurrent(
    clients: &[Arc<dyn LeaseStore>],
    length: Duration,
    ns: Namespace,
    phase: Phase,
) -> Result<f64, Failure> {
    let started = Instant::now();
    let deadline = started + length;
    let tasks: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, store)| {
            let store = store.clone();
            let ns = ns.clone();
            tokio::spawn(async move {
                let request = request(format!("client-{i}"));
                let mut done = 0u64;
                match phase {
                    Phase::Renew => {
                        let lease = store.acquire(&ns, &CONFIG, &request).await?.lease;
                        while Instant::now() < deadline {
                            store.renew(&lease, TTL_MS, CONFIG.tolerance_ms).await?;
                            done += 1;
                        }
                    }
                    Phase::AcquireRelease => {
                        while Instant::now() < deadline {
                            let lease = store.acquire(&ns, &CONFIG, &request).await?.lease;
                            store.release(&lease, None).await?;
                            done += 2;
                        }
                    }
                }
                Ok::<_, cosid::store::StoreError>(done)
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await??;
    }
    Ok(total as f64 / started.elapsed().as_secs_f64())
}

fn fresh(label: &str) -> Namespace {
    Namespace::new(format!("bench-{label}-{}", uuid::Uuid::new_v4())).expect("a valid name")
}

fn request(key: String) -> AcquireRequest {
    AcquireRequest {
        owner: Owner::new(key),
        ttl_ms: TTL_MS,
        preferred_slot: None,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

/// `p50/p99 ms` of `samples`.
fn p50_p99(mut samples: Vec<Duration>) -> String {
    if samples.is_empty() {
        return "-".into();
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    format!("{}/{} ms", ms(at(0.50)), ms(at(0.99)))
}

/// `url` without its password.
fn redacted(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let end = url[start..].find('/').map_or(url.len(), |i| start + i);
    match url[start..end].rfind('@').map(|i| start + i) {
        Some(at) => match url[start..at].find(':') {
            Some(colon) => format!("{}:***{}", &url[..start + colon], &url[at..]),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}
