//! The harness: starts Redis and the workers, lets the nemesis loose, stops everything in order, and leaves the
//! logs for the checker.

use crate::logs::{self, wall_ms, Line, LineWriter, RunInfo};
use crate::nemesis::{Fault, Kind, Nemesis};
use crate::redis_server::{RedisServer, Stop};
use cosid::lease::Namespace;
use cosid::store::{LeaseStore, RedisStore};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
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
    /// The negative control: `appendfsync everysec` and an older copy of the data restored during the run.
    pub negative: bool,
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
}

/// The negative control's plan, repeated while the round lasts: copy the data, kill a lease holder, put the copy
/// back some seconds later.
#[derive(Debug, Clone, Copy)]
enum Rollback {
    /// The next copy is taken at this time.
    Waiting { copy_at: Instant },
    /// A copy was taken; it is put back at `restore_at`. `killed`: the holder was killed (retried until then).
    Copied {
        copied_at: Instant,
        restore_at: Instant,
        killed: bool,
        next_try: Instant,
    },
    /// No time left in the round for another cycle.
    Done,
}

struct Run<'a> {
    s: &'a Settings,
    exe: PathBuf,
    namespace: String,
    redis: RedisServer,
    workers: Vec<Worker>,
    nemesis: Nemesis,
    log: LineWriter,
    heals: Vec<(Instant, Heal)>,
    incarnations: Vec<usize>,
}

fn signal(child: &Child, sig: Signal) -> io::Result<()> {
    kill(Pid::from_raw(child.id() as i32), sig)
        .map_err(|e| io::Error::other(format!("kill -{sig} {}: {e}", child.id())))
}

/// Runs the harness; returns the run folder with its logs and `run.txt`.
pub fn run(s: &Settings) -> io::Result<PathBuf> {
    std::fs::create_dir_all(logs::workers_dir(&s.dir))?;
    let fsync = if s.negative { "everysec" } else { "always" };
    let mut redis = RedisServer::new(&s.dir.join("redis"), fsync)?;
    redis.start()?;
    let namespace = format!("chaos-{}", s.seed);
    let mut info = RunInfo::default();
    info.set("seed", s.seed);
    info.set("negative", s.negative);
    info.set("appendfsync", fsync);
    info.set("workers", s.workers);
    info.set("bits", s.bits);
    info.set("ttl_ms", s.ttl.as_millis());
    info.set("tolerance_ms", s.tolerance.as_millis());
    info.set("duration_ms", s.duration.as_millis());
    info.set("namespace", &namespace);
    info.set("redis_url", redis.url());
    info.set("started_at", wall_ms());
    info.save(&s.dir)?;

    let mut run = Run {
        s,
        exe: std::env::current_exe()?,
        namespace,
        redis,
        workers: Vec::new(),
        nemesis: Nemesis::new(s.seed, s.ttl, s.workers),
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
    let _ = run.redis.stop(Stop::Term);
    info.set("measure_to", measure_to);
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
        let mut child = Command::new(&self.exe)
            .arg("worker")
            .args(["--url", &self.redis.url()])
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
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()?;
        let stdin = child.stdin.take();
        self.note(
            Line::new(wall_ms(), "SPAWN")
                .field("worker", index)
                .field("inc", incarnation)
                .field("pid", child.id()),
        );
        Ok(Worker {
            index,
            incarnation,
            child,
            stdin,
            stopped: false,
            shifted: false,
        })
    }

    /// The slots held now, as `slot:fence:owner` words, from the store itself.
    fn inspect(&self) -> Result<String, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let store = RedisStore::open(&self.redis.url()).map_err(|e| e.to_string())?;
        let ns = Namespace::new(self.namespace.clone()).map_err(|e| e.to_string())?;
        let inspection = rt
            .block_on(async {
                tokio::time::timeout(Duration::from_secs(3), store.inspect(&ns)).await
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
        while Instant::now() < deadline {
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

    /// Restarts a worker that exited by itself (it never should: that is reported).
    fn supervise(&mut self) {
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
        while Instant::now() < end {
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
                let fault = self.nemesis.next(|kind, w| match kind {
                    Kind::Pause => !workers[w].stopped,
                    Kind::ClockAhead | Kind::ClockBehind => !workers[w].shifted,
                    _ => true,
                });
                self.inject(fault);
                next_fault = Instant::now() + self.nemesis.interval();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// One step of the negative control's cycle.
    fn roll_back(&mut self, rb: Rollback, now: Instant, end: Instant) -> io::Result<Rollback> {
        Ok(match rb {
            Rollback::Waiting { copy_at } if now >= copy_at => {
                // Older than a lease (ttl + tolerance) plus the time a waiting worker needs to take over the slot
                // of the holder killed right after the copy: the lost writes then include a change of owner.
                let age = self.nemesis.range_ms(6_000..=10_000);
                if now + age + Duration::from_secs(3) > end {
                    return Ok(Rollback::Done);
                }
                self.snapshot();
                Rollback::Copied {
                    copied_at: now,
                    restore_at: now + age,
                    killed: self.kill_a_holder(),
                    next_try: now + Duration::from_millis(500),
                }
            }
            Rollback::Copied {
                copied_at,
                restore_at,
                killed,
                next_try,
            } => {
                if now >= restore_at {
                    self.restore(now - copied_at)?;
                    Rollback::Waiting {
                        copy_at: now + self.nemesis.range_ms(2_000..=4_000),
                    }
                } else if !killed && now >= next_try && now + Duration::from_secs(5) < restore_at {
                    // Redis was down (a restart fault): find the holder again.
                    Rollback::Copied {
                        copied_at,
                        restore_at,
                        killed: self.kill_a_holder(),
                        next_try: now + Duration::from_millis(500),
                    }
                } else {
                    rb
                }
            }
            other => other,
        })
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

    fn inject(&mut self, f: Fault) {
        let now = wall_ms();
        let mut line = Line::new(now, "FAULT").field("kind", f.kind);
        if let Some(w) = f.worker {
            let i = self.position(w);
            line = line
                .field("worker", w)
                .field("inc", self.workers[i].incarnation);
        }
        let result = match f.kind {
            Kind::Pause => {
                let i = self.position(f.worker.expect("worker fault"));
                line = line.field("duration", f.duration.as_millis());
                let r = signal(&self.workers[i].child, Signal::SIGSTOP);
                if r.is_ok() {
                    self.workers[i].stopped = true;
                    let (worker, incarnation) =
                        (self.workers[i].index, self.workers[i].incarnation);
                    self.heals.push((
                        Instant::now() + f.duration,
                        Heal::Cont {
                            worker,
                            incarnation,
                        },
                    ));
                }
                r
            }
            Kind::Kill => self.kill_and_restart(f.worker.expect("worker fault")),
            Kind::ClockAhead | Kind::ClockBehind => {
                let w = f.worker.expect("worker fault");
                line = line
                    .field("offset", f.offset_ms)
                    .field("duration", f.duration.as_millis());
                let r = self.send(w, &format!("offset {}\n", f.offset_ms));
                if r.is_ok() {
                    let i = self.position(w);
                    self.workers[i].shifted = true;
                    let incarnation = self.workers[i].incarnation;
                    self.heals.push((
                        Instant::now() + f.duration,
                        Heal::ClockReset {
                            worker: w,
                            incarnation,
                        },
                    ));
                }
                r
            }
            Kind::RedisTerm | Kind::RedisKill => {
                line = line.field("downtime", f.duration.as_millis());
                let how = if f.kind == Kind::RedisTerm {
                    Stop::Term
                } else {
                    Stop::Kill
                };
                let r = self.redis.stop(how);
                if r.is_ok() {
                    self.heals
                        .push((Instant::now() + f.duration, Heal::RedisStart));
                }
                r
            }
            Kind::ClientPause => {
                line = line.field("duration", f.duration.as_millis());
                let r = self.redis.pause_clients(f.duration.as_millis() as u64);
                if r.is_ok() {
                    self.heals
                        .push((Instant::now() + f.duration, Heal::PauseEnd));
                }
                r
            }
            Kind::DropConnections => self.redis.kill_clients().map(|n| {
                line = line.clone().field("dropped", n);
            }),
        };
        match result {
            Ok(()) => self.note(line),
            Err(e) => self.note(
                Line::new(now, "FAULT_FAILED")
                    .field("kind", f.kind)
                    .reason(e),
            ),
        }
    }

    fn kill_and_restart(&mut self, worker: usize) -> io::Result<()> {
        let i = self.position(worker);
        signal(&self.workers[i].child, Signal::SIGKILL)?;
        self.workers[i].child.wait()?;
        let inc = self.workers[i].incarnation;
        // A pending SIGCONT or clock reset was for the dead process.
        self.heals.retain(|(_, h)| match h {
            Heal::Cont {
                worker: w,
                incarnation,
            }
            | Heal::ClockReset {
                worker: w,
                incarnation,
            } => !(*w == worker && *incarnation == inc),
            _ => true,
        });
        let fresh = self.spawn(worker)?;
        self.workers[i] = fresh;
        Ok(())
    }

    fn heal(&mut self, h: Heal) {
        let now = wall_ms();
        let (line, result) = match h {
            Heal::Cont {
                worker,
                incarnation,
            } => {
                let i = self.position(worker);
                let r = if self.workers[i].incarnation == incarnation {
                    self.workers[i].stopped = false;
                    signal(&self.workers[i].child, Signal::SIGCONT)
                } else {
                    Ok(())
                };
                (
                    Line::new(now, "HEAL")
                        .field("kind", "sigcont")
                        .field("worker", worker)
                        .field("inc", incarnation),
                    r,
                )
            }
            Heal::ClockReset {
                worker,
                incarnation,
            } => {
                let i = self.position(worker);
                let r = if self.workers[i].incarnation == incarnation {
                    self.workers[i].shifted = false;
                    self.send(worker, "offset 0\n")
                } else {
                    Ok(())
                };
                (
                    Line::new(now, "HEAL")
                        .field("kind", "clock-reset")
                        .field("worker", worker)
                        .field("inc", incarnation),
                    r,
                )
            }
            Heal::RedisStart => {
                let r = self.redis.start();
                if r.is_err() {
                    // Never leave the store down for the rest of the run: try again shortly.
                    self.heals
                        .push((Instant::now() + Duration::from_secs(1), Heal::RedisStart));
                }
                (Line::new(now, "HEAL").field("kind", "redis-start"), r)
            }
            Heal::PauseEnd => (
                Line::new(now, "HEAL").field("kind", "client-unpause"),
                Ok(()),
            ),
        };
        match result {
            Ok(()) => self.note(line),
            Err(e) => self.note(line.reason(format!("failed: {e}"))),
        }
    }

    /// Undoes every pending fault at once (the end of the run).
    fn heal_all(&mut self) {
        // A failed Redis start schedules itself again: a few passes, a second apart.
        for _ in 0..5 {
            let pending: Vec<Heal> = self.heals.drain(..).map(|(_, h)| h).collect();
            if pending.is_empty() {
                break;
            }
            for h in pending {
                self.heal(h);
            }
            if !self.heals.is_empty() {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        let _ = self.redis.unpause_clients();
    }

    fn snapshot(&mut self) {
        let to = self.s.dir.join("snapshot");
        match self.redis.snapshot(&to) {
            Ok(()) => self.note(Line::new(wall_ms(), "SNAPSHOT")),
            Err(e) => self.note(Line::new(wall_ms(), "SNAPSHOT_FAILED").reason(e)),
        }
    }

    /// The negative control's own fault, right after the copy is taken: `SIGKILL` the holder of a slot, so a
    /// waiting worker takes the slot over before the copy is put back. A copy that lost only renewals of the same
    /// holders is mostly harmless (each holder renews in place at once); one that lost a change of owner is the
    /// failover that must be caught.
    fn kill_a_holder(&mut self) -> bool {
        let holders: Vec<usize> = match self.inspect() {
            Ok(state) => state
                .split(',')
                .filter_map(|w| w.rsplit_once(":chaos-w")?.1.parse().ok())
                .filter(|&w| w < self.workers.len())
                .collect(),
            Err(e) => {
                self.note(
                    Line::new(wall_ms(), "FAULT_FAILED")
                        .field("kind", Kind::Kill)
                        .reason(e),
                );
                return false;
            }
        };
        if holders.is_empty() {
            self.note(
                Line::new(wall_ms(), "FAULT_FAILED")
                    .field("kind", Kind::Kill)
                    .reason("no slot is held: no holder to kill"),
            );
            return false;
        }
        let pick = self
            .nemesis
            .range_ms(0..=holders.len() as u64 - 1)
            .as_millis() as usize;
        let w = holders[pick];
        let inc = self.workers[self.position(w)].incarnation;
        let line = Line::new(wall_ms(), "FAULT")
            .field("kind", Kind::Kill)
            .field("worker", w)
            .field("inc", inc)
            .reason("negative control: a lease holder, right after the copy");
        match self.kill_and_restart(w) {
            Ok(()) => {
                self.note(line);
                true
            }
            Err(e) => {
                self.note(
                    Line::new(wall_ms(), "FAULT_FAILED")
                        .field("kind", Kind::Kill)
                        .reason(e),
                );
                false
            }
        }
    }

    /// The failover that loses the last writes: crash Redis, put the older copy back, start it.
    fn restore(&mut self, age: Duration) -> io::Result<()> {
        // A restart fault may have Redis down right now: its pending start is done here instead.
        self.heals.retain(|(_, h)| *h != Heal::RedisStart);
        self.redis.stop(Stop::Kill)?;
        let from = self.s.dir.join("snapshot");
        match self.redis.restore(&from) {
            Ok(()) => self.note(Line::new(wall_ms(), "RESTORE").field("age", age.as_millis())),
            Err(e) => self.note(Line::new(wall_ms(), "RESTORE_FAILED").reason(&e)),
        }
        self.redis.start().or_else(|e| {
            self.note(Line::new(wall_ms(), "RESTART_FAILED").reason(&e));
            std::thread::sleep(Duration::from_secs(1));
            self.redis.start()
        })
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
