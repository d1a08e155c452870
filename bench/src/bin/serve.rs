//! What one `cosid serve` holds, and what a flood from one client costs the others: a real server process (the
//! release `cosid` beside this binary) in front of a store (a temporary SQLite file, or `--store URL`), driven
//! through the `http://` store. Prints figures; asserts nothing.
//!
//!     cargo build --release -p cosid-cli && cargo run --release -p cosid-bench --bin cosid-serve-bench
//!     cosid-serve-bench [--quick] [--store URL] [--seconds S] [--clients N]
//!
//! 1. acquire: N clients, each acquiring (a new owner each time) then releasing, for S seconds: requests/s, p50,
//!    p99 of the acquire;
//! 2. renew: N clients, each renewing its own lease in a loop: renewals/s, p50, p99;
//! 3. flood: one holder renewing every 20 ms while another client floods the server (a) with requests whose token
//!    is unknown, (b) with `/slots` reads under a valid token of its own, as fast as 32 connections go: the
//!    holder's p50 and p99 beside the same holder alone, and how many of the flood's requests were refused.

use cosid::lease::{AcquireRequest, Namespace, NamespaceConfig, Owner};
use cosid::store::{HttpStore, LeaseStore};
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONFIG: NamespaceConfig = NamespaceConfig {
    bits: 16,
    tolerance_ms: 1_000,
    layout: cosid::Layout::millis(),
};

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(store: &str, extra: &[&str]) -> Server {
    let exe = std::env::current_exe().expect("the bench's path");
    let cosid = exe.with_file_name("cosid");
    let mut child = Command::new(&cosid)
        .args(["serve", "--listen", "127.0.0.1:0", "--log-format", "json"])
        .args(extra)
        .env("COSID_STORE", store)
        // The access log of every request would cost more than some requests: warnings only.
        .env("COSID_SERVE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start {} ({e}): cargo build --release -p cosid-cli",
                cosid.display()
            )
        });
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split("listening on ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address from cosid serve: {line:?}"))
        .to_owned();
    Server { child, url }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn report(what: &str, mut times: Vec<Duration>, seconds: f64) {
    times.sort_unstable();
    println!(
        "{what:<44} {:>8.0}/s  p50 {:>7.2} ms  p99 {:>7.2} ms  ({} requests)",
        times.len() as f64 / seconds,
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        times.len()
    );
}

fn request(owner: Owner) -> AcquireRequest {
    AcquireRequest {
        owner,
        ttl_ms: 60_000,
        preferred_slot: None,
    }
}

async fn acquire_release(url: &str, clients: usize, seconds: f64) -> Vec<Duration> {
    let ns = Namespace::new(format!("bench-acquire-{}", uuid::Uuid::new_v4())).unwrap();
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let store = HttpStore::open(url).unwrap();
            let ns = ns.clone();
            tokio::spawn(async move {
                let mut times = Vec::new();
                while Instant::now() < until {
                    let t = Instant::now();
                    let got = store
                        .acquire(&ns, &CONFIG, &request(Owner::new(format!("c{c}"))))
                        .await;
                    times.push(t.elapsed());
                    if let Ok(a) = got {
                        let _ = store.release(&a.lease, None).await;
                    }
                }
                times
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all
}

async fn renewals(url: &str, clients: usize, seconds: f64, pause: Duration) -> Vec<Duration> {
    let ns = Namespace::new(format!("bench-renew-{}", uuid::Uuid::new_v4())).unwrap();
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let store = HttpStore::open(url).unwrap();
            let ns = ns.clone();
            tokio::spawn(async move {
                let lease = store
                    .acquire(&ns, &CONFIG, &request(Owner::new(format!("r{c}"))))
                    .await
                    .expect("acquire")
                    .lease;
                let mut times = Vec::new();
                while Instant::now() < until {
                    let t = Instant::now();
                    store
                        .renew(&lease, 60_000, CONFIG.tolerance_ms)
                        .await
                        .expect("renew");
                    times.push(t.elapsed());
                    if !pause.is_zero() {
                        tokio::time::sleep(pause).await;
                    }
                }
                let _ = store.release(&lease, None).await;
                times
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all
}

/// Floods `url` from 32 connections until `stop`; (requests, refused with 429).
async fn flood(url: String, stop: Arc<AtomicBool>) -> (u64, u64) {
    let sent = Arc::new(AtomicU64::new(0));
    let limited = Arc::new(AtomicU64::new(0));
    let ns = Namespace::new("bench-flood").unwrap();
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let (store, stop, sent, limited, ns) = (
                HttpStore::open(&url).unwrap(),
                stop.clone(),
                sent.clone(),
                limited.clone(),
                ns.clone(),
            );
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let r = store.inspect(&ns).await;
                    sent.fetch_add(1, Ordering::Relaxed);
                    if r.is_err_and(|e| e.to_string().contains("429")) {
                        limited.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    (
        sent.load(Ordering::Relaxed),
        limited.load(Ordering::Relaxed),
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut quick = false;
    let mut store = None;
    let mut seconds = 5.0;
    let mut clients = 16;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--store" => store = args.next(),
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .expect("--seconds S")
            }
            "--clients" => {
                clients = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .expect("--clients N")
            }
            other => panic!("unknown argument {other:?}; see the module doc"),
        }
    }
    if quick {
        seconds = 1.0;
        clients = 4;
    }
    let dir = std::env::temp_dir().join(format!("cosid-serve-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = store.unwrap_or_else(|| format!("sqlite://{}", dir.join("leases.db").display()));
    let tokens = dir.join("tokens");
    std::fs::write(
        &tokens,
        "holder-token-0123456789\nflooder-token-0123456789\n",
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let shown = cosid::store::redacted(&store);
    println!("cosid serve in front of {shown}; {clients} clients, {seconds} s per figure");
    let server = start(&store, &["--rate-limit", "0"]);
    rt.block_on(async {
        let times = acquire_release(&server.url, clients, seconds).await;
        report("acquire (then release)", times, seconds);
        let times = renewals(&server.url, clients, seconds, Duration::ZERO).await;
        report("renew", times, seconds);
    });
    drop(server);

    // The flood: one server with tokens and the default limits; the holder renews every 20 ms.
    let server = start(&store, &["--token-file", tokens.to_str().unwrap()]);
    let holder = format!("{}?token=holder-token-0123456789", server.url);
    rt.block_on(async {
        let alone = renewals(&holder, 1, seconds, Duration::from_millis(20)).await;
        report("holder renewing every 20 ms, alone", alone, seconds);
        for (what, flooder) in [
            (
                "unknown token",
                format!("{}?token=wrong-token-0123456789", server.url),
            ),
            (
                "its own token",
                format!("{}?token=flooder-token-0123456789", server.url),
            ),
        ] {
            let stop = Arc::new(AtomicBool::new(false));
            let flooding = tokio::spawn(flood(flooder, stop.clone()));
            let times = renewals(&holder, 1, seconds, Duration::from_millis(20)).await;
            stop.store(true, Ordering::Relaxed);
            let (sent, limited) = flooding.await.unwrap();
            report(&format!("holder, with a flood ({what})"), times, seconds);
            println!(
                "{:<44} {:>8.0}/s sent, {:.0} % refused (429)",
                format!("  the flood ({what})"),
                sent as f64 / seconds,
                100.0 * limited as f64 / sent.max(1) as f64
            );
        }
    });
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
