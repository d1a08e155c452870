//! `cosid-chaos`: the chaos harness of cosid.
//!
//! ```text
//! cosid-chaos run --profile ci              # 60 s of faults against a real Redis, then the checker
//! cosid-chaos run --profile ci --negative   # the negative control: up to 4 rounds, until one is caught
//! cosid-chaos run --store sqlite --profile ci [--negative]   # 8 processes on one SQLite file
//! cosid-chaos run --store etcd --profile ci [--negative]     # a private 3-member etcd cluster
//! cosid-chaos run --store zookeeper --profile ci [--negative]  # a private 3-server ZooKeeper ensemble
//! cosid-chaos run --store serve --profile ci [--negative]  # 3 `cosid serve` replicas in front of one SQLite file
//! cosid-chaos run --profile long            # 30 minutes
//! cosid-chaos run --seed 1234               # replay the nemesis' decisions of an earlier run
//! cosid-chaos check /tmp/cosid-chaos/run-...  # check the logs of an earlier run again
//! ```
//!
//! Exit status: 0 when the claim held (or, with `--negative`, when the control was detected at least once),
//! 1 when it did not, 2 when the harness or the checker's own sanity checks failed.
//!
//! See `docs/reliability.md` for what is claimed, what each fault injects and the figures of the last runs.

mod check;
mod clock;
mod etcd_server;
mod harness;
mod logs;
mod nemesis;
mod postgres_server;
mod redis_server;
mod serve_replicas;
mod store;
mod worker;
mod zookeeper_server;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use store::Store;

#[derive(Debug, Parser)]
#[command(
    name = "cosid-chaos",
    about = "Chaos harness for cosid: a real store (Redis, SQLite, PostgreSQL, etcd, ZooKeeper, or cosid serve replicas in front of SQLite), worker processes, a nemesis and a checker"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Profile {
    /// Redis: 60 s (the negative control: up to 4 rounds of 30 s); SQLite, PostgreSQL, etcd, ZooKeeper, serve:
    /// 45 s (the negative control of each: up to 2 rounds of 30 s). The negative control stops at the first round
    /// that catches the lost writes: CI asks whether the checker can see them, the long profile how often it does.
    Ci,
    /// 30 minutes (the negative control: 20 rounds).
    Long,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Runs the harness, then the checker.
    Run {
        /// The store under test.
        #[arg(long, value_enum, default_value = "redis")]
        store: Store,
        /// Duration and round count presets.
        #[arg(long, value_enum, default_value = "ci")]
        profile: Profile,
        /// How long the nemesis runs (overrides the profile), e.g. `3m`, `30m`; per round with `--negative`.
        #[arg(long, value_parser = humantime::parse_duration)]
        duration: Option<Duration>,
        /// The nemesis' seed; printed by every run, so a run replays with `--seed`.
        #[arg(long, env = "COSID_CHAOS_SEED")]
        seed: Option<u64>,
        /// Runs the negative control instead: an older copy of the data restored while the workers run (Redis:
        /// with `appendfsync everysec`; SQLite, serve: written back into the live file; PostgreSQL, etcd, ZooKeeper:
        /// the servers crashed and started on the copy). It must be caught (duplicates
        /// or the store-regression alarm).
        #[arg(long)]
        negative: bool,
        /// Rounds of the negative control (overrides the profile).
        #[arg(long)]
        rounds: Option<u32>,
        /// Worker processes (default: 8 on SQLite, 4 on the others; at least 4 for the claim the docs make).
        #[arg(long)]
        workers: Option<usize>,
        /// Where the run folders go (default: `cosid-chaos` in the temporary directory).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Checks the logs of an earlier run folder again.
    Check {
        /// The run folder (it holds `run.txt`).
        dir: PathBuf,
    },
    /// One worker process (started by `run`).
    #[command(hide = true)]
    Worker {
        #[arg(long)]
        url: String,
        #[arg(long)]
        namespace: String,
        #[arg(long)]
        bits: u8,
        #[arg(long)]
        ttl_ms: u64,
        #[arg(long)]
        tolerance_ms: u64,
        #[arg(long)]
        worker: usize,
        #[arg(long)]
        ids: PathBuf,
        #[arg(long)]
        events: PathBuf,
        #[arg(long, default_value_t = 8)]
        batch: usize,
        #[arg(long, default_value_t = 5)]
        pause_ms: u64,
    },
}

/// Lease settings of every run: a 2-slot namespace, ttl 3 s, tolerance 250 ms.
const BITS: u8 = 1;
const TTL: Duration = Duration::from_secs(3);
const TOLERANCE: Duration = Duration::from_millis(250);

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Worker {
            url,
            namespace,
            bits,
            ttl_ms,
            tolerance_ms,
            worker,
            ids,
            events,
            batch,
            pause_ms,
        } => {
            let code = worker::run(worker::WorkerArgs {
                url,
                namespace,
                bits,
                ttl: Duration::from_millis(ttl_ms),
                tolerance: Duration::from_millis(tolerance_ms),
                worker,
                ids,
                events,
                batch: batch.max(1),
                pause: Duration::from_millis(pause_ms),
            });
            ExitCode::from(code as u8)
        }
        Command::Check { dir } => check_dir(&dir),
        Command::Run {
            store,
            profile,
            duration,
            seed,
            negative,
            rounds,
            workers,
            out,
        } => {
            if let Err(e) = harness::handle_interrupts() {
                eprintln!("cosid-chaos: cannot handle SIGINT and SIGTERM: {e}");
                return ExitCode::from(2);
            }
            let seed = seed.unwrap_or_else(random_seed);
            let out = out.unwrap_or_else(|| std::env::temp_dir().join("cosid-chaos"));
            let workers = workers.unwrap_or(match store {
                Store::Redis | Store::Postgres | Store::Etcd | Store::Zookeeper | Store::Serve => 4,
                Store::Sqlite => 8,
            });
            if workers < 2 {
                eprintln!("cosid-chaos: --workers {workers}: need at least 2 (4 for the documented claim)");
                return ExitCode::from(2);
            }
            let base = harness::Settings {
                dir: out.clone(),
                duration: Duration::ZERO,
                seed,
                workers,
                ttl: TTL,
                tolerance: TOLERANCE,
                batch: 8,
                pause: Duration::from_millis(5),
                negative,
                store,
                // 8 workers on 2 slots would mostly wait: 4 slots on SQLite.
                bits: match store {
                    Store::Redis
                    | Store::Postgres
                    | Store::Etcd
                    | Store::Zookeeper
                    | Store::Serve => BITS,
                    Store::Sqlite => 2,
                },
            };
            let started = std::time::Instant::now();
            let code = if negative {
                let rounds = rounds.unwrap_or(match (profile, store) {
                    // About 80 % of Redis rounds catch the restore: four all missed is a 1-in-600 chance.
                    (Profile::Ci, Store::Redis) => 4,
                    (Profile::Ci, _) => 2,
                    (Profile::Long, _) => 20,
                });
                let per_round = duration.unwrap_or(Duration::from_secs(30));
                negative_control(base, rounds, per_round, profile)
            } else {
                let duration = duration.unwrap_or(match (profile, store) {
                    (Profile::Ci, Store::Redis) => Duration::from_secs(60),
                    (Profile::Ci, _) => Duration::from_secs(45),
                    (Profile::Long, _) => Duration::from_secs(30 * 60),
                });
                positive(base, duration, profile)
            };
            println!(
                "cosid-chaos: {} run took {:.0} s",
                store.name(),
                started.elapsed().as_secs_f64()
            );
            code
        }
    }
}

fn random_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ (u64::from(std::process::id()) << 32)
}

fn profile_flag(p: Profile) -> &'static str {
    match p {
        Profile::Ci => "ci",
        Profile::Long => "long",
    }
}

fn store_label(store: Store, negative: bool) -> &'static str {
    match (store, negative) {
        (Store::Redis, false) => "Redis with appendfsync always",
        (Store::Redis, true) => "Redis with appendfsync everysec",
        (Store::Sqlite, false) => {
            "one SQLite file (plus a hard link to it and a file renamed over it)"
        }
        (Store::Sqlite, true) => "one SQLite file, the copy written back in place",
        (Store::Postgres, false) => "a private PostgreSQL (fsync, synchronous_commit on)",
        (Store::Postgres, true) => {
            "a private PostgreSQL, crashed and started on the copy of its data folder"
        }
        (Store::Etcd, false) => "a private 3-member etcd cluster (127.0.0.2 to 127.0.0.4)",
        (Store::Etcd, true) => {
            "a private 3-member etcd cluster, crashed and started on the copies of its data folders"
        }
        (Store::Zookeeper, false) => {
            "a private 3-server ZooKeeper ensemble (127.0.0.2 to 127.0.0.4, forceSync on)"
        }
        (Store::Zookeeper, true) => {
            "a private 3-server ZooKeeper ensemble, crashed and started on the copies of its data folders"
        }
        (Store::Serve, false) => {
            "3 cosid serve replicas in front of one SQLite file, reached through a round-robin proxy (http://)"
        }
        (Store::Serve, true) => {
            "3 cosid serve replicas in front of one SQLite file, the copy written back in place"
        }
    }
}

fn positive(mut s: harness::Settings, duration: Duration, profile: Profile) -> ExitCode {
    s.duration = duration;
    s.dir = harness::fresh_dir(&s.dir, "run");
    println!(
        "cosid-chaos: seed {} (replay: cosid-chaos run --store {} --profile {} --duration {} --seed {})",
        s.seed,
        s.store.name(),
        profile_flag(profile),
        humantime::format_duration(duration),
        s.seed
    );
    println!(
        "cosid-chaos: {} workers, {}, nemesis for {}; logs in {}",
        s.workers,
        store_label(s.store, false),
        humantime::format_duration(duration),
        s.dir.display()
    );
    if let Err(e) = harness::run(&s) {
        eprintln!("cosid-chaos: the harness failed: {e}");
        return ExitCode::from(2);
    }
    check_dir(&s.dir)
}

fn check_dir(dir: &std::path::Path) -> ExitCode {
    if let Err(e) = check::self_test() {
        eprintln!("cosid-chaos: the checker's planted-fault self-test failed: {e}");
        return ExitCode::from(2);
    }
    let logs = match check::load(dir) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("cosid-chaos: cannot read the run's logs: {e}");
            return ExitCode::from(2);
        }
    };
    let a = check::analyze(&logs, &cosid::Layout::millis());
    let text = check::report(dir, &logs, &a);
    print!("{text}");
    let _ = std::fs::write(dir.join("report.txt"), &text);
    let negative = logs.info.get("negative") == Some("true");
    if !a.sanity.is_empty() {
        println!("verdict: UNKNOWN (the checker's sanity checks failed)");
        return ExitCode::from(2);
    }
    if negative {
        println!(
            "verdict: {} (negative control: duplicates {}, store-regression alarms {})",
            if a.detected() {
                "DETECTED"
            } else {
                "NOT DETECTED"
            },
            a.duplicate_copies,
            a.regressions()
        );
        return if a.detected() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        };
    }
    if a.violations() == 0 {
        println!("verdict: VALID (no duplicate, every id inside a window granted to its holder)");
        ExitCode::SUCCESS
    } else {
        println!("verdict: INVALID ({} violations)", a.violations());
        ExitCode::from(1)
    }
}

fn negative_control(
    base: harness::Settings,
    rounds: u32,
    per_round: Duration,
    profile: Profile,
) -> ExitCode {
    println!(
        "cosid-chaos: negative control, seed {} (replay: cosid-chaos run --store {} --negative --profile {} --rounds {rounds} --duration {} --seed {})",
        base.seed,
        base.store.name(),
        profile_flag(profile),
        humantime::format_duration(per_round),
        base.seed
    );
    println!(
        "cosid-chaos: {rounds} rounds of {}: {}, an older copy of its data restored mid-round",
        humantime::format_duration(per_round),
        store_label(base.store, true)
    );
    let parent = harness::fresh_dir(&base.dir, "negative");
    let mut detected = 0u32;
    let mut insane = 0u32;
    let mut overlapped = 0u32;
    let (mut restores_total, mut restores_detected) = (0u32, 0u32);
    let mut rows = Vec::new();
    let mut ran = 0u32;
    for r in 0..rounds {
        if harness::interrupted() {
            println!("cosid-chaos: interrupted after {r} rounds");
            return ExitCode::from(2);
        }
        let mut s = base.clone();
        s.seed = base.seed.wrapping_add(u64::from(r));
        s.duration = per_round;
        s.dir = parent.join(format!("round-{r}"));
        if let Err(e) = harness::run(&s) {
            eprintln!("cosid-chaos: round {r}: the harness failed: {e}");
            return ExitCode::from(2);
        }
        if let Err(e) = check::self_test() {
            eprintln!("cosid-chaos: the checker's planted-fault self-test failed: {e}");
            return ExitCode::from(2);
        }
        let logs = match check::load(&s.dir) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("cosid-chaos: round {r}: cannot read the logs: {e}");
                return ExitCode::from(2);
            }
        };
        let a = check::analyze(&logs, &cosid::Layout::millis());
        let _ = std::fs::write(s.dir.join("report.txt"), check::report(&s.dir, &logs, &a));
        let restores: Vec<String> = a
            .restores
            .iter()
            .map(|x| {
                restores_total += 1;
                if x.detected() {
                    restores_detected += 1;
                }
                format!(
                    "{} ms old: {}",
                    x.age_ms,
                    if x.detected() { "caught" } else { "missed" }
                )
            })
            .collect();
        if !a.overlaps.is_empty() {
            overlapped += 1;
        }
        let row = format!(
            "round {r}: seed {:>20}  copies restored {} ({})  acked {:>7}  duplicated {:>5}  alarms {:>3}  overlapping windows {:>3}  out of window {:>5}  -> {}",
            s.seed,
            restores.len(),
            restores.join(", "),
            a.acknowledged,
            a.duplicate_copies,
            a.regressions(),
            a.overlaps.len(),
            a.strays.len(),
            if !a.sanity.is_empty() {
                insane += 1;
                format!("SANITY FAILED: {}", a.sanity.join("; "))
            } else if a.detected() {
                detected += 1;
                "detected".to_owned()
            } else {
                "not detected".to_owned()
            }
        );
        println!("{row}");
        rows.push(row);
        ran += 1;
        if profile == Profile::Ci && detected > 0 && insane == 0 {
            println!("cosid-chaos: caught in round {r}; the CI profile stops at the first round that catches it");
            break;
        }
    }
    let rate = f64::from(detected) / f64::from(ran.max(1));
    let summary = format!(
        "negative control: detected (duplicates or the store-regression alarm) in {detected} of {ran} rounds: \
         detection rate {:.0} %; restores caught: {restores_detected} of {restores_total}; the checker also saw \
         overlapping windows in {overlapped} of {ran} rounds; logs in {}",
        rate * 100.0,
        parent.display()
    );
    println!("{summary}");
    rows.push(summary);
    let _ = std::fs::write(parent.join("summary.txt"), rows.join("\n") + "\n");
    if insane > 0 {
        println!("verdict: UNKNOWN ({insane} rounds failed the checker's sanity checks)");
        ExitCode::from(2)
    } else if detected == 0 {
        println!("verdict: FAILED (the checker never saw the lost writes: it cannot be trusted to see them)");
        ExitCode::from(1)
    } else {
        println!("verdict: OK (the checker sees lost writes)");
        ExitCode::SUCCESS
    }
}
