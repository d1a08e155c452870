//! The harness: starts the store (a private Redis, an SQLite file, a private PostgreSQL, etcd cluster or ZooKeeper
//! ensemble, or `cosid serve` replicas in front of an SQLite file) and the workers, lets the nemesis loose, stops
//! everything in order, and leaves the logs for the checker.

mod faults;
mod negative;

use crate::etcd_server::{EtcdCluster, PartitionMethod};
use crate::logs::{self, wall_ms, Line, LineWriter, RunInfo};
use crate::nemesis::{Kind, Nemesis};
use crate::postgres_server::PostgresServer;
use crate::redis_server::{RedisServer, Stop};
use crate::serve_replicas::ServeReplicas;
use crate::store::{SqliteFile, Store};
use crate::zookeeper_server::ZookeeperEnsemble;
use cosid::clock::SystemClock;
use cosid::lease::Namespace;
use cosid::store::StoreUrl;
use negative::Rollback;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::io::{self, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Everything a run (or one negative-control round) needs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where the logs go (created).
    pub dir: PathBuf,
    /// How long the nemesis runs.
    pub duration: Duration,
    /// The nemesis' seed.
    pub seed: u64,
    /// Worker processes.
    pub workers: usize,
    /// Slot bits of the namespace.
    pub bits: u8,
    /// Lease length.
    pub ttl: Duration,
    /// Tolerance.
    pub tolerance: Duration,
    /// Ids per batch, per worker.
    pub batch: usize,
    /// Pause between a worker's batches.
    pub pause: Duration,
    /// The negative control: an older copy of the data restored during the run (Redis: with `appendfsync
    /// everysec`).
    pub negative: bool,
    /// The store under test.
    pub store: Store,
}

/// A worker process as the harness tracks it.
#[derive(Debug)]
struct Worker {
    index: usize,
    incarnation: usize,
    child: Child,
    stdin: Option<ChildStdin>,
    stopped: bool,
    shifted: bool,
}

/// Something the nemesis undoes later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Heal {
    /// `SIGCONT` this incarnation.
    Cont { worker: usize, incarnation: usize },
    /// Set this incarnation's clock offset back to 0.
    ClockReset { worker: usize, incarnation: usize },
    /// Start Redis again after a restart's downtime.
    RedisStart,
    /// The end of a `CLIENT PAUSE` (for the log: Redis ends it by itself).
    PauseEnd,
    /// SQLite: remove the database's second name, and restart the worker that used it on the first.
    LinkEnd { worker: usize },
    /// PostgreSQL: start the server again after a crash's downtime.
    PostgresStart,
    /// PostgreSQL: `SIGCONT` the server.
    PostgresCont,
    /// etcd: start this member again after a crash's downtime.
    EtcdStart { member: usize },
    /// etcd: `SIGCONT` this member.
    EtcdCont { member: usize },
    /// etcd: end this member's partition.
    EtcdUnpartition { member: usize },
    /// ZooKeeper: start this server again after a crash's downtime.
    ZookeeperStart { member: usize },
    /// ZooKeeper: `SIGCONT` this server.
    ZookeeperCont { member: usize },
    /// ZooKeeper: end this server's partition.
    ZookeeperUnpartition { member: usize },
    /// `cosid serve`: start this replica again after a crash's downtime.
    ServeStart { replica: usize },
    /// `cosid serve`: `SIGCONT` this replica.
    ServeCont { replica: usize },
}

struct Run<'a> {
    s: &'a Settings,
    exe: PathBuf,
    namespace: String,
    /// The Redis server (Redis runs only).
    redis: Option<RedisServer>,
    /// The database file (SQLite runs only).
    sqlite: Option<SqliteFile>,
    /// The PostgreSQL server (PostgreSQL runs only).
    postgres: Option<PostgresServer>,
    /// The etcd cluster (etcd runs only).
    etcd: Option<EtcdCluster>,
    /// The ZooKeeper ensemble (ZooKeeper runs only).
    zookeeper: Option<ZookeeperEnsemble>,
    /// The `cosid serve` replicas and their proxy (serve runs only; their store is `sqlite`).
    serve: Option<ServeReplicas>,
    /// Workers started through the database's second name (the hard-link fault), by index.
    via_link: Vec<bool>,
    workers: Vec<Worker>,
    nemesis: Nemesis,
    log: LineWriter,
    heals: Vec<(Instant, Heal)>,
    incarnations: Vec<usize>,
}

/// Set by `SIGINT` or `SIGTERM`: the run ends early, in order. A second `SIGINT` exits at once.
static INTERRUPTED: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();

/// Makes `SIGINT` and `SIGTERM` end the run in order (heal, stop the workers, stop Redis, check) instead of
/// leaving worker and Redis processes behind.
pub fn handle_interrupts() -> io::Result<()> {
    let flag = INTERRUPTED.get_or_init(Arc::default).clone();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // The first signal sets the flag; a second SIGINT, with the flag already set, exits with status 130.
        signal_hook::flag::register_conditional_shutdown(sig, 130, flag.clone())?;
        signal_hook::flag::register(sig, flag.clone())?;
    }
    Ok(())
}

/// Whether the run was interrupted.
pub fn interrupted() -> bool {
    INTERRUPTED.get().is_some_and(|f| f.load(Ordering::SeqCst))
}

fn signal(child: &Child, sig: Signal) -> io::Result<()> {
    kill(Pid::from_raw(child.id() as i32), sig)
        .map_err(|e| io::Error::other(format!("kill -{sig} {}: {e}", child.id())))
}

/// Runs the harness; returns the run folder with its logs and `run.txt`.
pub fn run(s: &Settings) -> io::Result<PathBuf> {
    std::fs::create_dir_all(logs::workers_dir(&s.dir))?;
    let namespace = format!("chaos-{}", s.seed);
    let mut info = RunInfo::default();
    info.set("store", s.store.name());
    let (mut redis, mut sqlite, mut postgres, mut etcd, mut zookeeper, mut serve) =
        (None, None, None, None, None, None);
    let url = match s.store {
        Store::Redis => {
            let fsync = if s.negative { "everysec" } else { "always" };
            let mut server = RedisServer::new(&s.dir.join("redis"), fsync)?;
            server.start()?;
            info.set("appendfsync", fsync);
            redis.insert(server).url()
        }
        Store::Sqlite => sqlite
            .insert(SqliteFile::create(&s.dir.join("sqlite"))?)
            .url(),
        Store::Postgres => {
            let mut server = PostgresServer::new(&s.dir.join("postgres"))?;
            server.start()?;
            postgres.insert(server).url()
        }
        Store::Etcd => {
            let mut cluster = EtcdCluster::new(&s.dir.join("etcd"), &format!("chaos-{}", s.seed))?;
            cluster.start()?;
            info.set(
                "partition",
                match cluster.partition_method() {
                    PartitionMethod::Nft(_) => "nftables",
                    PartitionMethod::Sigstop => "sigstop",
                },
            );
            etcd.insert(cluster).url()
        }
        Store::Zookeeper => {
            let mut ensemble = ZookeeperEnsemble::new(&s.dir.join("zookeeper"))?;
            ensemble.start()?;
            info.set(
                "partition",
                match ensemble.partition_method() {
                    PartitionMethod::Nft(_) => "nftables",
                    PartitionMethod::Sigstop => "sigstop",
                },
            );
            zookeeper.insert(ensemble).url()
        }
        Store::Serve => {
            let file = sqlite.insert(SqliteFile::create(&s.dir.join("sqlite"))?);
            let replicas = ServeReplicas::start(&s.dir.join("serve"), &file.url(), SERVE_REPLICAS)?;
            info.set("replicas", replicas.len());
            info.set("behind", file.url());
            serve.insert(replicas).url()
        }
    };
    info.set("seed", s.seed);
    info.set("negative", s.negative);
    info.set("workers", s.workers);
    info.set("bits", s.bits);
    info.set("ttl_ms", s.ttl.as_millis());
    info.set("tolerance_ms", s.tolerance.as_millis());
    info.set("duration_ms", s.duration.as_millis());
    info.set("namespace", &namespace);
    info.set("store_url", &url);
    info.set("started_at", wall_ms());
    info.save(&s.dir)?;

    let mut run = Run {
        s,
        exe: std::env::current_exe()?,
        namespace,
        redis,
        sqlite,
        postgres,
        etcd,
        zookeeper,
        serve,
        via_link: vec![false; s.workers],
        workers: Vec::new(),
        nemesis: Nemesis::new(s.seed, s.ttl, s.workers, s.store.run_kinds(s.negative)),
        log: LineWriter::create(&s.dir.join("nemesis.log"))?,
        heals: Vec::new(),
        incarnations: vec![0; s.workers],
    };
    for w in 0..s.workers {
        let worker = run.spawn(w)?;
        run.workers.push(worker);
    }
    let warm = run.warm_up();
    info.set("warm_up_ok", warm);
    info.set("measure_from", wall_ms());
    info.save(&s.dir)?;

    let result = run.nemesis_loop();
    let measure_to = wall_ms();
    run.heal_all();
    run.stop_workers();
    let final_state = run.inspect();
    if let Some(redis) = run.redis.as_mut() {
        let _ = redis.stop(Stop::Term);
    }
    if let Some(pg) = run.postgres.as_mut() {
        let _ = pg.stop(Stop::Term);
    }
    if let Some(cluster) = run.etcd.as_mut() {
        cluster.heal_partition();
        cluster.stop(Stop::Term);
        // The checker reads the workers' and the nemesis' logs only: the data folders and the negative control's
        // copy of them (hundreds of MB) go.
        if let Err(e) = cluster.discard_data() {
            eprintln!("cosid-chaos: cannot remove the etcd data folders: {e}");
        }
        let _ = std::fs::remove_dir_all(s.dir.join("snapshot"));
    }
    if let Some(ensemble) = run.zookeeper.as_mut() {
        // The data folders stay (a few MB: snapshots and transaction logs, preallocated 4 MB a server).
        ensemble.heal_partition();
        ensemble.stop(Stop::Term);
    }
    if let Some(replicas) = run.serve.as_mut() {
        replicas.stop();
        info.set("proxy", replicas.summary());
    }
    info.set("measure_to", measure_to);
    info.set("interrupted", interrupted());
    info.set("ended_at", wall_ms());
    info.set(
        "final_slots",
        final_state.unwrap_or_else(|e| format!("unknown ({e})")),
    );
    info.save(&s.dir)?;
    result?;
    Ok(s.dir.clone())
}

impl Run<'_> {
    fn note(&mut self, line: Line) {
        if let Err(e) = self.log.write(&line) {
            eprintln!("cosid-chaos: cannot write nemesis.log: {e}");
        }
    }

    fn spawn(&mut self, index: usize) -> io::Result<Worker> {
        self.incarnations[index] += 1;
        let incarnation = self.incarnations[index];
        let dir = logs::workers_dir(&self.s.dir);
        let stem = logs::stem(index, incarnation);
        let stderr = std::fs::File::create(dir.join(format!("{stem}.stderr")))?;
        let url = match &self.sqlite {
            Some(file) if self.via_link[index] => SqliteFile::url_of(&file.link_path()),
            _ => self.url(),
        };
        let mut child = Command::new(&self.exe)
            .arg("worker")
            .args(["--url", &url])
            .args(["--namespace", &self.namespace])
            .args(["--bits", &self.s.bits.to_string()])
            .args(["--ttl-ms", &self.s.ttl.as_millis().to_string()])
            .args(["--tolerance-ms", &self.s.tolerance.as_millis().to_string()])
            .args(["--worker", &index.to_string()])
            .arg("--ids")
            .arg(dir.join(format!("{stem}.ids")))
            .arg("--events")
            .arg(dir.join(format!("{stem}.events")))
            .args(["--batch", &self.s.batch.to_string()])
            .args(["--pause-ms", &self.s.pause.as_millis().to_string()])
            // A process group of its own: a terminal's Ctrl-C reaches the harness, which stops the workers in
            // order, rather than killing them mid-write.
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()?;
        let stdin = child.stdin.take();
        let mut line = Line::new(wall_ms(), "SPAWN")
            .field("worker", index)
            .field("inc", incarnation)
            .field("pid", child.id());
        if self.via_link[index] {
            line = line.field("via", "hard-link");
        }
        self.note(line);
        Ok(Worker {
            index,
            incarnation,
            child,
            stdin,
            stopped: false,
            shifted: false,
        })
    }

    /// The store URL the workers use (the database's first name, for SQLite; the proxy, for serve).
    fn url(&self) -> String {
        if let Some(replicas) = &self.serve {
            return replicas.url();
        }
        if let Some(ensemble) = &self.zookeeper {
            return ensemble.url();
        }
        match (&self.redis, &self.sqlite, &self.postgres, &self.etcd) {
            (Some(redis), _, _, _) => redis.url(),
            (_, Some(file), _, _) => file.url(),
            (_, _, Some(pg), _) => pg.url(),
            (_, _, _, Some(cluster)) => cluster.url(),
            (None, None, None, None) => unreachable!("every run has a store"),
        }
    }

    /// The slots held now, as `slot:fence:owner` words, from the store itself.
    fn inspect(&self) -> Result<String, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        // Serve runs: the file behind the replicas, read directly, whichever replica is down.
        let url = match (&self.serve, &self.sqlite) {
            (Some(_), Some(file)) => file.url(),
            _ => self.url(),
        };
        let url = StoreUrl::parse(&url).map_err(|e| e.to_string())?;
        let ns = Namespace::new(self.namespace.clone()).map_err(|e| e.to_string())?;
        let inspection = rt
            .block_on(async {
                tokio::time::timeout(Duration::from_secs(3), async {
                    let store = cosid::store::open(&url, Arc::new(SystemClock)).await?;
                    store.inspect(&ns).await
                })
                .await
            })
            .map_err(|_| "inspect timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        Ok(inspection
            .slots
            .iter()
            .map(|r| {
                let held = r.is_held_at(inspection.store_now);
                format!(
                    "{}:fence={}:next_floor={}:{}",
                    r.slot,
                    r.fence,
                    r.next_floor,
                    match (&r.owner, held) {
                        (Some(o), true) => o.key.clone(),
                        (Some(_), false) => "expired".to_owned(),
                        (None, _) => "free".to_owned(),
                    }
                )
            })
            .collect::<Vec<_>>()
            .join(","))
    }

    /// Waits (up to 30 s) until every slot is held, so the measured part of the run starts with ids flowing.
    fn warm_up(&mut self) -> bool {
        let slots = 1usize << self.s.bits;
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && !interrupted() {
            if let Ok(state) = self.inspect() {
                let held = state.split(',').filter(|w| w.contains("chaos-w")).count();
                if held >= slots {
                    self.note(Line::new(wall_ms(), "WARM").reason(&state));
                    return true;
                }
            }
            self.supervise();
            std::thread::sleep(Duration::from_millis(200));
        }
        self.note(Line::new(wall_ms(), "WARM_TIMEOUT"));
        false
    }

    /// Restarts a worker that exited by itself (it never should: that is reported), and a `cosid serve` replica
    /// that did.
    fn supervise(&mut self) {
        let replicas = self.serve.as_ref().map_or(0, ServeReplicas::len);
        for r in 0..replicas {
            let Some(status) = self.serve.as_mut().and_then(|x| x.exited(r)) else {
                continue;
            };
            let started = self.serve.as_mut().map(|x| x.start_replica(r));
            let reason = match started {
                Some(Err(e)) => format!("{status}; restart failed: {e}"),
                _ => format!("{status}; started again"),
            };
            self.note(
                Line::new(wall_ms(), "SERVE_EXIT")
                    .field("replica", r)
                    .reason(reason),
            );
        }
        for i in 0..self.workers.len() {
            let status = match self.workers[i].child.try_wait() {
                Ok(Some(status)) => status,
                _ => continue,
            };
            let (index, inc) = (self.workers[i].index, self.workers[i].incarnation);
            self.note(
                Line::new(wall_ms(), "UNEXPECTED_EXIT")
                    .field("worker", index)
                    .field("inc", inc)
                    .reason(status),
            );
            match self.spawn(index) {
                Ok(w) => self.workers[i] = w,
                Err(e) => eprintln!("cosid-chaos: cannot restart worker {index}: {e}"),
            }
        }
    }

    fn nemesis_loop(&mut self) -> io::Result<()> {
        let start = Instant::now();
        let end = start + self.s.duration;
        let mut next_fault = start + self.nemesis.interval();
        let mut rollback = if self.s.negative {
            Rollback::Waiting {
                copy_at: start + self.nemesis.range_ms(1_000..=3_000),
            }
        } else {
            Rollback::Done
        };
        while Instant::now() < end && !interrupted() {
            self.supervise();
            let now = Instant::now();
            let due: Vec<Heal> = self
                .heals
                .iter()
                .filter(|(at, _)| *at <= now)
                .map(|(_, h)| *h)
                .collect();
            self.heals.retain(|(at, _)| *at > now);
            for h in due {
                self.heal(h);
            }
            rollback = self.roll_back(rollback, now, end)?;
            if now >= next_fault {
                let workers = &self.workers;
                let linked = self.via_link.iter().any(|&v| v);
                // One member out at a time: a 3-member cluster keeps its majority through one failure.
                let cluster_whole = self
                    .etcd
                    .as_ref()
                    .is_some_and(|c| (0..c.len()).all(|m| c.healthy(m)));
                // One replica out at a time (and none while all restart): there is always one to answer.
                let replicas_whole = self
                    .serve
                    .as_ref()
                    .is_some_and(|r| (0..r.len()).all(|i| r.healthy(i)));
                let ensemble_whole = self
                    .zookeeper
                    .as_ref()
                    .is_some_and(|c| (0..c.len()).all(|m| c.healthy(m)));
                let fault = self.nemesis.next(|kind, w| match (kind, w) {
                    (Kind::Pause, Some(w)) => !workers[w].stopped,
                    (Kind::ClockAhead | Kind::ClockBehind, Some(w)) => !workers[w].shifted,
                    // One second name at a time, and no file renamed over a file that has one: the second name
                    // would then be the old file's only name, and a worker on it would see the old file through a
                    // WAL of its own while the old holders still issue (found by this harness; see
                    // docs/reliability.md). Each file fault alone is what the store claims to handle.
                    (Kind::FileLink | Kind::FileReplace, _) => !linked,
                    (Kind::EtcdLeaderKill | Kind::EtcdLeaderPause | Kind::EtcdPartition, _) => {
                        cluster_whole
                    }
                    (
                        Kind::ZookeeperLeaderKill
                        | Kind::ZookeeperLeaderPause
                        | Kind::ZookeeperPartition,
                        _,
                    ) => ensemble_whole,
                    (Kind::ServeKill | Kind::ServePause | Kind::ServeRestartAll, _) => {
                        replicas_whole
                    }
                    _ => true,
                });
                self.inject(fault);
                next_fault = Instant::now() + self.nemesis.interval();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    fn position(&self, worker: usize) -> usize {
        self.workers
            .iter()
            .position(|w| w.index == worker)
            .expect("every worker index is tracked")
    }

    fn send(&mut self, worker: usize, text: &str) -> io::Result<()> {
        let i = self.position(worker);
        match self.workers[i].stdin.as_mut() {
            Some(stdin) => stdin.write_all(text.as_bytes()),
            None => Err(io::Error::other("the worker's input is closed")),
        }
    }

    /// Asks every worker to stop (it releases its slot), then kills those that do not within 10 s.
    fn stop_workers(&mut self) {
        for w in &mut self.workers {
            let _ = signal(&w.child, Signal::SIGCONT);
            if let Some(mut stdin) = w.stdin.take() {
                let _ = stdin.write_all(b"stop\n");
            }
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut lines = Vec::new();
        for w in &mut self.workers {
            loop {
                match w.child.try_wait() {
                    Ok(Some(status)) => {
                        lines.push(
                            Line::new(wall_ms(), "EXITED")
                                .field("worker", w.index)
                                .field("inc", w.incarnation)
                                .field("code", status.code().unwrap_or(-1)),
                        );
                        break;
                    }
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(20))
                    }
                    _ => {
                        let _ = signal(&w.child, Signal::SIGKILL);
                        let _ = w.child.wait();
                        lines.push(
                            Line::new(wall_ms(), "STOP_TIMEOUT")
                                .field("worker", w.index)
                                .field("inc", w.incarnation),
                        );
                        break;
                    }
                }
            }
        }
        for l in lines {
            self.note(l);
        }
    }
}

/// `cosid serve` replicas in front of the store, in serve runs.
const SERVE_REPLICAS: usize = 3;

impl Drop for Run<'_> {
    fn drop(&mut self) {
        for w in &mut self.workers {
            if let Ok(None) = w.child.try_wait() {
                let _ = signal(&w.child, Signal::SIGKILL);
                let _ = w.child.wait();
            }
        }
    }
}

/// A fresh run folder under `base`: `<base>/<label>-<wall ms>`.
pub fn fresh_dir(base: &Path, label: &str) -> PathBuf {
    base.join(format!("{label}-{}", wall_ms()))
}
