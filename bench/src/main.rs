//! cosid's issuing figures beside its Rust peers, in one run: prints figures, asserts nothing.
//!
//! `cargo run --release -p cosid-bench [-- --quick]` (scripts/bench.sh adds C, Python and Node).
//!
//! - per call: median ns per id of bursts of 1,024 ids, each started right after a millisecond edge, for
//!   `Runtime::next_id`, `Runtime::fill`, ferroid's `AtomicSnowflakeGenerator` and `Uuid::now_v7()`; the bursts of
//!   all contenders are interleaved round by round, so they share the machine's state, and the ratios are taken
//!   within the run;
//! - sustained: ids/s of one runtime with `slots = k` on one thread (`next_id`, and `fill` in batches of 4,096),
//!   against k × the layout's cap and UUIDv7 on the same thread; and of back-to-back calls on k threads, for k
//!   runtimes (one slot each) and for UUIDv7;
//! - the clock: what the cached clock costs when nothing is issued (its ticker parks).

use cosid::clock::{ticker_state, Clock, SystemClock, TickerState};
use cosid::{Id, Runtime};
use ferroid::generator::AtomicSnowflakeGenerator;
use ferroid::id::SnowflakeTwitterId;
use ferroid::time::{MonotonicClock, TWITTER_EPOCH};
use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const BURST: usize = 1_024;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 40 } else { 200 };
    let sustain = Duration::from_millis(if quick { 200 } else { 1_000 });
    cosid_bench::machine();

    let rt = Runtime::builder()
        .store("memory:")
        .namespace("bench")
        .build()
        .expect("a runtime on the memory store");
    let cap = rt.layout().cap_per_second() as f64;
    let ferroid: AtomicSnowflakeGenerator<SnowflakeTwitterId, MonotonicClock> =
        AtomicSnowflakeGenerator::new(1, MonotonicClock::with_epoch(TWITTER_EPOCH));
    let mut buf = vec![Id::from_u64(0); BURST];

    // Warm up every contender (cosid's clock ticker, ferroid's, the page of the buffer).
    for _ in 0..10 {
        at_millisecond_edge();
        for _ in 0..BURST {
            black_box(rt.next_id().unwrap());
            black_box(ferroid.next_id(|_| std::thread::yield_now()));
            black_box(uuid::Uuid::now_v7());
        }
    }

    let names = [
        "cosid Runtime::next_id",
        "cosid Runtime::fill (per id)",
        "ferroid AtomicSnowflakeGenerator",
        "uuid Uuid::now_v7()",
    ];
    let mut per: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); names.len()];
    for _ in 0..rounds {
        per[0].push(burst(|| {
            for _ in 0..BURST {
                black_box(rt.next_id().unwrap());
            }
        }));
        per[1].push(burst(|| {
            rt.fill(&mut buf).unwrap();
            black_box(&buf);
        }));
        per[2].push(burst(|| {
            for _ in 0..BURST {
                black_box(ferroid.next_id(|_| std::thread::yield_now()));
            }
        }));
        per[3].push(burst(|| {
            for _ in 0..BURST {
                black_box(uuid::Uuid::now_v7());
            }
        }));
    }
    let medians: Vec<f64> = per.iter_mut().map(|v| median(v)).collect();
    println!();
    println!(
        "Rust, per call: median of {rounds} bursts of {BURST} ids, each right after a millisecond edge"
    );
    println!("{:36} {:>8} {:>16}", "what", "ns/id", "÷ cosid next_id");
    for (name, m) in names.iter().zip(&medians) {
        println!("{name:36} {m:8.2} {:16.2}", m / medians[0]);
    }
    let clock = clock_costs();
    println!(
        "clock reads: cached {:.2} ns, SystemClock::now_ms {:.2} ns, SystemTime::now {:.2} ns",
        clock.0, clock.1, clock.2
    );

    println!();
    println!(
        "Sustained, one runtime with slots = k, one thread, back-to-back for {:.1} s (cap {cap:.0} ids/s per slot)",
        sustain.as_secs_f64()
    );
    println!(
        "{:4} {:>16} {:>9} {:>16} {:>9} {:>16} {:>12}",
        "k", "next_id ids/s", "÷ k×cap", "fill ids/s", "÷ k×cap", "UUIDv7 ids/s", "next÷UUIDv7"
    );
    let v7 = threads(1, sustain, |_| {
        || {
            black_box(uuid::Uuid::now_v7());
        }
    });
    for k in [1u32, 2, 4, 8] {
        let rt = Runtime::builder()
            .store("memory:")
            .namespace(format!("bench-slots-{k}"))
            .slots(k)
            .build()
            .expect("a runtime");
        let next = threads(1, sustain, |_| {
            let rt = &rt;
            move || {
                black_box(rt.next_id().unwrap());
            }
        });
        let mut batch = vec![Id::from_u64(0); 4_096];
        let start = Instant::now();
        let mut filled = 0u64;
        while start.elapsed() < sustain {
            rt.fill(&mut batch).unwrap();
            black_box(&batch);
            filled += batch.len() as u64;
        }
        let fill = filled as f64 / start.elapsed().as_secs_f64();
        let kcap = f64::from(k) * cap;
        println!(
            "{k:<4} {next:16.0} {:9.2} {fill:16.0} {:9.2} {v7:16.0} {:12.2}",
            next / kcap,
            fill / kcap,
            next / v7
        );
        rt.shutdown();
    }

    println!();
    println!(
        "Sustained, back-to-back calls for {:.1} s on k threads (layout cap {cap:.0} ids/s per slot)",
        sustain.as_secs_f64()
    );
    println!(
        "{:4} {:>16} {:>9} {:>16} {:>12}",
        "k", "cosid ids/s", "÷ k×cap", "UUIDv7 ids/s", "cosid÷UUIDv7"
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for k in [1usize, 2, 4] {
        let runtimes: Vec<Runtime> = (0..k)
            .map(|i| {
                Runtime::builder()
                    .store("memory:")
                    .namespace(format!("bench-k{k}-{i}"))
                    .build()
                    .expect("a runtime")
            })
            .collect();
        let cosid = threads(k, sustain, |i| {
            let rt = &runtimes[i];
            move || {
                black_box(rt.next_id().unwrap());
            }
        });
        let v7 = threads(k, sustain, |_| {
            || {
                black_box(uuid::Uuid::now_v7());
            }
        });
        println!(
            "{k:<4} {cosid:16.0} {:9.2} {v7:16.0} {:12.2}{}",
            cosid / (k as f64 * cap),
            cosid / v7,
            if k > cores {
                "  (more threads than cores)"
            } else {
                ""
            }
        );
    }
    println!(
        "  k runtimes in one process, one slot and one thread each: what k slots can give at most."
    );

    // Idle: once ids stop, the clock's ticker parks (no wake-ups) within about IDLE_TICKS ticks.
    rt.next_id().unwrap();
    let idle_from = Instant::now();
    let parked = loop {
        if ticker_state() == TickerState::Parked {
            break Some(idle_from.elapsed());
        }
        if idle_from.elapsed() > Duration::from_secs(5) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    match parked {
        Some(d) => println!(
            "\nidle: the clock's ticker parked {:.0} ms after the last id; 0 wake-ups/s from then on",
            d.as_secs_f64() * 1e3
        ),
        None => println!("\nidle: the clock's ticker did not park within 5 s ({:?})", ticker_state()),
    }
    rt.shutdown();
}

/// Runs `f` once right after a millisecond edge; returns ns per id.
fn burst(f: impl FnOnce()) -> f64 {
    at_millisecond_edge();
    let t = Instant::now();
    f();
    t.elapsed().as_nanos() as f64 / BURST as f64
}

/// Sleeps most of a millisecond, then spins until the wall clock's millisecond changes.
fn at_millisecond_edge() {
    std::thread::sleep(Duration::from_micros(700));
    let ms = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis()
    };
    let start = ms();
    while ms() == start {
        std::hint::spin_loop();
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Total calls per second of `k` threads each calling its `make(i)()` back to back for `d`.
fn threads<F: FnMut() + Send>(k: usize, d: Duration, make: impl Fn(usize) -> F + Sync) -> f64 {
    let start = Instant::now();
    let counts: Vec<u64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..k)
            .map(|i| {
                let mut f = make(i);
                s.spawn(move || {
                    let mut n = 0u64;
                    loop {
                        for _ in 0..1_024 {
                            f();
                        }
                        n += 1_024;
                        if start.elapsed() >= d {
                            return n;
                        }
                    }
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    counts.iter().sum::<u64>() as f64 / start.elapsed().as_secs_f64()
}

/// ns per read: the generator's cached clock, the clock it reads on its slow path, and `SystemTime::now()`.
fn clock_costs() -> (f64, f64, f64) {
    let n = 1_000_000u32;
    let clock = SystemClock;
    let time = |f: &dyn Fn()| {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        t.elapsed().as_nanos() as f64 / f64::from(n)
    };
    let cached = time(&|| {
        black_box(clock.cached_ms());
    });
    let now = time(&|| {
        black_box(clock.now_ms());
    });
    let sys = time(&|| {
        black_box(SystemTime::now());
    });
    (cached, now, sys)
}
