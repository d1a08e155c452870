//! Generator throughput: prints figures, asserts nothing. Run with
//! `cargo bench -p cosid --bench generator` (add `-- --quick` for a short run).
//!
//! - sustained: one thread issuing as fast as it can for a while, as a percent of the layout's cap
//!   (4,096,000 ids/s for the default layout);
//! - burst: ns per id in bursts of 1,000 ids, spaced so the rate stays below the cap;
//! - contended: two threads issuing at once (ids/s in total, percent of cap);
//! - batch: ns per id of `fill` with a 1,000-id buffer;
//! - clock: ns per read of the system clock the generator uses, and of `SystemTime::now()` for scale.

use cosid::clock::{Clock, SystemClock};
use cosid::{Id, Runtime};
use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime};

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let secs = if quick { 0.5 } else { 2.0 };
    let rt = Runtime::builder()
        .store("memory:")
        .namespace("bench")
        .build()
        .expect("runtime on the memory store");
    let cap = rt.layout().cap_per_second() as f64;
    println!("layout cap: {cap:.0} ids/s per slot");

    clock_cost();

    // Sustained, one thread.
    let (n, el) = run_for(secs, || {
        black_box(rt.next_id().unwrap());
    });
    let rate = n as f64 / el.as_secs_f64();
    println!(
        "sustained 1 thread : {rate:>12.0} ids/s = {:>6.2}% of cap, {:>6.1} ns/id",
        100.0 * rate / cap,
        1e9 / rate
    );

    // Bursts below the cap: 1,000 ids, then wait for the next millisecond.
    let mut total = Duration::ZERO;
    let mut ids = 0u64;
    let bursts = if quick { 200 } else { 2_000 };
    for _ in 0..bursts {
        std::thread::sleep(Duration::from_micros(1_100));
        let t = Instant::now();
        for _ in 0..1_000 {
            black_box(rt.next_id().unwrap());
        }
        total += t.elapsed();
        ids += 1_000;
    }
    println!(
        "burst (1,000 ids)  : {:>6.2} ns/id",
        total.as_nanos() as f64 / ids as f64
    );

    // Two threads contended.
    let start = Instant::now();
    let counts: Vec<u64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    run_for(secs, || {
                        black_box(rt.next_id().unwrap());
                    })
                    .0
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let rate = counts.iter().sum::<u64>() as f64 / start.elapsed().as_secs_f64();
    println!(
        "contended 2 threads: {rate:>12.0} ids/s = {:>6.2}% of cap, {:>6.1} ns/id",
        100.0 * rate / cap,
        1e9 / rate
    );

    // Batch.
    let mut buf = vec![Id::from_u64(0); 1_000];
    let mut total = Duration::ZERO;
    let mut ids = 0u64;
    for _ in 0..bursts {
        std::thread::sleep(Duration::from_micros(1_100));
        let t = Instant::now();
        rt.fill(&mut buf).unwrap();
        total += t.elapsed();
        ids += buf.len() as u64;
        black_box(&buf);
    }
    println!(
        "batch fill(1,000)  : {:>6.2} ns/id",
        total.as_nanos() as f64 / ids as f64
    );
    rt.shutdown();
}

fn clock_cost() {
    let clock = SystemClock;
    let n = 2_000_000;
    let t = Instant::now();
    for _ in 0..n {
        black_box(clock.now_ms());
    }
    let fast = t.elapsed().as_nanos() as f64 / n as f64;
    let t = Instant::now();
    for _ in 0..n {
        black_box(SystemTime::now());
    }
    let sys = t.elapsed().as_nanos() as f64 / n as f64;
    println!("clock: SystemClock {fast:.1} ns/read, SystemTime::now {sys:.1} ns/read");
}

/// Calls `f` until `secs` have passed; returns the count and the time taken.
fn run_for(secs: f64, mut f: impl FnMut()) -> (u64, Duration) {
    let start = Instant::now();
    let limit = Duration::from_secs_f64(secs);
    let mut n = 0u64;
    loop {
        for _ in 0..1_024 {
            f();
        }
        n += 1_024;
        if start.elapsed() >= limit {
            return (n, start.elapsed());
        }
    }
}
