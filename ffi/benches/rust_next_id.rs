//! The Rust API's figures for the C benchmark (`tests/c/bench.sh` runs both): `Runtime::next_id` in bursts of
//! 1,000 ids below the cap, and sustained as a percent of the cap, measured as `tests/c/bench.c` measures the C
//! API; the holder's fast path (what the C exports call), and ferroid's `AtomicSnowflakeGenerator` (the fastest
//! Rust peer, a clock cached by a ticker thread) the same way, inlined in the loop and behind a C call (what a C
//! program using ferroid would pay: an out-pointer, a result code, a call it cannot inline, as
//! `cosid_next_id(&id)`). Prints figures, asserts nothing.
//!
//! `cargo bench -p cosid-ffi --bench rust_next_id [-- SECONDS]`

use cosid_core::host::{Holder, Settings};
use cosid_core::Runtime;
use ferroid::generator::AtomicSnowflakeGenerator;
use ferroid::id::SnowflakeTwitterId;
use ferroid::time::{MonotonicClock, TWITTER_EPOCH};
use std::hint::black_box;
use std::time::{Duration, Instant};

const BURST: u32 = 1_000;

/// A process-wide ferroid generator, as a C API over ferroid would keep one.
static FERROID: std::sync::OnceLock<AtomicSnowflakeGenerator<SnowflakeTwitterId, MonotonicClock>> =
    std::sync::OnceLock::new();

/// ferroid behind `cosid_next_id`'s signature: the id through `out`, 0 on success.
#[inline(never)]
extern "C" fn ferroid_next_id(out: *mut u64) -> i32 {
    let Some(generator) = FERROID.get() else {
        return -1;
    };
    let id = generator.next_id(|_| std::thread::yield_now());
    // SAFETY: the caller passes a valid, writable pointer (the benchmark's own local).
    unsafe { *out = id.to_raw() };
    0
}

fn main() {
    let seconds: f64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .filter(|s: &f64| *s > 0.0)
        .unwrap_or(2.0);
    let bursts = if seconds < 1.0 { 200 } else { 2_000 };
    let rt = Runtime::builder()
        .store("memory:")
        .namespace("bench")
        .build()
        .expect("a runtime on the memory store");
    let cap = rt.layout().cap_per_second() as f64;
    println!("Rust layout cap: {cap:.0} ids/s per slot");

    bursts_of("Runtime::next_id", bursts, || rt.next_id().expect("an id"));
    // The host layer's fast path, which the C exports (and Python's `next_id`) call: the fork-generation check and
    // the holder's current runtime, then the same generator.
    let mut settings = Settings::new();
    settings.set("store", "memory:").expect("memory store");
    settings
        .set("namespace", "bench-holder")
        .expect("namespace");
    let holder = Holder::new(settings);
    holder.next_id().expect("the holder starts");
    bursts_of("Holder::try_next_id", bursts, || {
        holder
            .try_next_id()
            .or_else(|| holder.next_id().ok())
            .expect("an id")
    });
    let ferroid: AtomicSnowflakeGenerator<SnowflakeTwitterId, MonotonicClock> =
        AtomicSnowflakeGenerator::new(1, MonotonicClock::with_epoch(TWITTER_EPOCH));
    bursts_of("ferroid (Rust peer)", bursts, || {
        ferroid.next_id(|_| std::thread::yield_now())
    });
    FERROID
        .set(AtomicSnowflakeGenerator::new(
            1,
            MonotonicClock::with_epoch(TWITTER_EPOCH),
        ))
        .ok()
        .expect("set once");
    // Called through a pointer the compiler cannot see through, as a call into a shared library is.
    let call: extern "C" fn(*mut u64) -> i32 = black_box(ferroid_next_id);
    bursts_of("ferroid via a C call", bursts, || {
        let mut id = 0u64;
        let rc = call(&mut id);
        (rc, id)
    });

    let start = Instant::now();
    let end = Duration::from_secs_f64(seconds);
    let mut n = 0u64;
    let mut el = Duration::ZERO;
    while el < end {
        for _ in 0..4096 {
            black_box(rt.next_id().expect("an id"));
        }
        n += 4096;
        el = start.elapsed();
    }
    let rate = n as f64 / el.as_secs_f64();
    println!(
        "Rust {:<22} sustained       : {rate:12.0} ids/s = {:6.2}% of cap, {:6.1} ns/id",
        "Runtime::next_id",
        100.0 * rate / cap,
        1e9 / rate
    );
}

/// Bursts of 1,000 ids, each right after a millisecond edge: prints the mean and the median ns per id.
fn bursts_of<T>(name: &str, bursts: usize, mut next: impl FnMut() -> T) {
    let mut per_id = Vec::with_capacity(bursts);
    let mut total = Duration::ZERO;
    for _ in 0..bursts {
        std::thread::sleep(Duration::from_micros(1_100));
        let t = Instant::now();
        for _ in 0..BURST {
            black_box(next());
        }
        let el = t.elapsed();
        per_id.push(el.as_nanos() as f64 / f64::from(BURST));
        total += el;
    }
    per_id.sort_by(f64::total_cmp);
    println!(
        "Rust {name:<22} burst (1,000 ids): {:6.2} ns/id mean, {:6.2} median",
        total.as_nanos() as f64 / (bursts as f64 * f64::from(BURST)),
        per_id[bursts / 2]
    );
}
