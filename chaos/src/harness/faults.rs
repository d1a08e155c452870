//! Injecting the nemesis' faults, and undoing them.

use super::{signal, Heal, Run};
use crate::etcd_server::EtcdCluster;
use crate::logs::{wall_ms, Line};
use crate::nemesis::{Fault, Kind};
use crate::postgres_server::PostgresServer;
use crate::redis_server::{RedisServer, Stop};
use crate::serve_replicas::ServeReplicas;
use crate::zookeeper_server::ZookeeperEnsemble;
use nix::sys::signal::Signal;
use std::io;
use std::time::{Duration, Instant};

impl Run<'_> {
    pub(super) fn inject(&mut self, f: Fault) {
        let now = wall_ms();
        let mut line = Line::new(now, "FAULT").field("kind", f.kind);
        if let Some(w) = f.worker {
            let i = self.position(w);
            line = line
                .field("worker", w)
                .field("inc", self.workers[i].incarnation);
        }
        let result =
            match f.kind {
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
                    let r = self.redis().and_then(|r| r.stop(how));
                    if r.is_ok() {
                        self.heals
                            .push((Instant::now() + f.duration, Heal::RedisStart));
                    }
                    r
                }
                Kind::ClientPause => {
                    line = line.field("duration", f.duration.as_millis());
                    let ms = f.duration.as_millis() as u64;
                    let r = self.redis().and_then(|r| r.pause_clients(ms));
                    if r.is_ok() {
                        self.heals
                            .push((Instant::now() + f.duration, Heal::PauseEnd));
                    }
                    r
                }
                Kind::DropConnections => self.redis().and_then(|r| r.kill_clients()).map(|n| {
                    line = line.clone().field("dropped", n);
                }),
                Kind::FileLink => {
                    let w = f.worker.expect("worker fault");
                    line = line.field("duration", f.duration.as_millis());
                    let r = self.link_and_restart(w);
                    if r.is_ok() {
                        self.heals
                            .push((Instant::now() + f.duration, Heal::LinkEnd { worker: w }));
                    }
                    r
                }
                Kind::PostgresKill => {
                    line = line.field("downtime", f.duration.as_millis());
                    self.heals.retain(|(_, h)| *h != Heal::PostgresCont);
                    let r = self.postgres().and_then(|p| p.stop(Stop::Kill));
                    if r.is_ok() {
                        self.heals
                            .push((Instant::now() + f.duration, Heal::PostgresStart));
                    }
                    r
                }
                Kind::PostgresPause => {
                    line = line.field("duration", f.duration.as_millis());
                    let r = self.postgres().and_then(|p| p.pause(true));
                    if r.is_ok() {
                        self.heals
                            .push((Instant::now() + f.duration, Heal::PostgresCont));
                    }
                    r
                }
                Kind::TerminateBackends => self
                    .postgres()
                    .and_then(|p| p.terminate_backends())
                    .map(|n| {
                        line = line.clone().field("dropped", n);
                    }),
                Kind::EtcdLeaderKill => {
                    line = line.field("downtime", f.duration.as_millis());
                    self.etcd()
                        .and_then(|c| {
                            let m = c.leader()?;
                            c.stop_member(m, Stop::Kill)?;
                            Ok(m)
                        })
                        .map(|m| {
                            line = line.clone().field("member", m);
                            self.heals
                                .push((Instant::now() + f.duration, Heal::EtcdStart { member: m }));
                        })
                }
                Kind::EtcdLeaderPause => {
                    line = line.field("duration", f.duration.as_millis());
                    self.etcd()
                        .and_then(|c| {
                            let m = c.leader()?;
                            c.pause(m, true)?;
                            Ok(m)
                        })
                        .map(|m| {
                            line = line.clone().field("member", m);
                            self.heals
                                .push((Instant::now() + f.duration, Heal::EtcdCont { member: m }));
                        })
                }
                Kind::EtcdPartition => {
                    line = line.field("duration", f.duration.as_millis());
                    // Any member, the leader as often as the others.
                    let m = self.nemesis.range_ms(0..=2).as_millis() as usize;
                    self.etcd()
                        .and_then(|c| {
                            // The leader, when the roll says 0 and it can be found; else the member rolled.
                            let m = if m == 0 { c.leader().unwrap_or(m) } else { m };
                            c.partition(m, true)?;
                            Ok(m)
                        })
                        .map(|m| {
                            line = line.clone().field("member", m);
                            self.heals.push((
                                Instant::now() + f.duration,
                                Heal::EtcdUnpartition { member: m },
                            ));
                        })
                }
                Kind::EtcdDropConnections => self
                    .etcd()
                    .and_then(|c| c.kill_client_connections())
                    .map(|n| {
                        line = line.clone().field("dropped", n);
                    }),
                Kind::ZookeeperLeaderKill => {
                    line = line.field("downtime", f.duration.as_millis());
                    self.zookeeper()
                        .and_then(|c| {
                            let m = c.leader()?;
                            c.stop_member(m, Stop::Kill)?;
                            Ok(m)
                        })
                        .map(|m| {
                            line = line.clone().field("member", m);
                            self.heals.push((
                                Instant::now() + f.duration,
                                Heal::ZookeeperStart { member: m },
                            ));
                        })
                }
                Kind::ZookeeperLeaderPause => {
                    line = line.field("duration", f.duration.as_millis());
                    self.zookeeper()
                        .and_then(|c| {
                            let m = c.leader()?;
                            c.pause(m, true)?;
                            Ok(m)
                        })
                        .map(|m| {
                            line = line.clone().field("member", m);
                            self.heals.push((
                                Instant::now() + f.duration,
                                Heal::ZookeeperCont { member: m },
                            ));
                        })
                }
                Kind::ZookeeperPartition => {
                    line = line.field("duration", f.duration.as_millis());
                    // Any server, the leader as often as the others (as for etcd).
                    let m = self.nemesis.range_ms(0..=2).as_millis() as usize;
                    self.zookeeper()
                        .and_then(|c| {
                            let m = if m == 0 { c.leader().unwrap_or(m) } else { m };
                            c.partition(m, true)?;
                            Ok(m)
                        })
                        .map(|m| {
                            line = line.clone().field("member", m);
                            self.heals.push((
                                Instant::now() + f.duration,
                                Heal::ZookeeperUnpartition { member: m },
                            ));
                        })
                }
                Kind::ZookeeperDropConnections => self
                    .zookeeper()
                    .and_then(|c| c.kill_client_connections())
                    .map(|n| {
                        line = line.clone().field("dropped", n);
                    }),
                Kind::ServeKill => {
                    line = line.field("downtime", f.duration.as_millis());
                    let r = self.pick_replica();
                    line = line.field("replica", r);
                    let res = self.serve().and_then(|x| x.stop_replica(r, Stop::Kill));
                    if res.is_ok() {
                        self.heals
                            .push((Instant::now() + f.duration, Heal::ServeStart { replica: r }));
                    }
                    res
                }
                Kind::ServePause => {
                    line = line.field("duration", f.duration.as_millis());
                    let r = self.pick_replica();
                    line = line.field("replica", r);
                    let res = self.serve().and_then(|x| x.pause(r, true));
                    if res.is_ok() {
                        self.heals
                            .push((Instant::now() + f.duration, Heal::ServeCont { replica: r }));
                    }
                    res
                }
                Kind::ServeRestartAll => {
                    line = line.field("downtime", f.duration.as_millis());
                    self.serve()
                        .and_then(|x| {
                            for r in 0..x.len() {
                                x.stop_replica(r, Stop::Term)?;
                            }
                            Ok(x.len())
                        })
                        .map(|n| {
                            for r in 0..n {
                                self.heals.push((
                                    Instant::now() + f.duration,
                                    Heal::ServeStart { replica: r },
                                ));
                            }
                        })
                }
                Kind::ServeDropConnections => self.serve().map(|x| x.drop_connections()).map(|n| {
                    line = line.clone().field("dropped", n);
                }),
                Kind::FileReplace => match &self.sqlite {
                    Some(file) => file.replace(),
                    None => Err(io::Error::other("file-replace needs an SQLite run")),
                },
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

    /// The Redis server, for a Redis fault.
    pub(super) fn redis(&mut self) -> io::Result<&mut RedisServer> {
        self.redis
            .as_mut()
            .ok_or_else(|| io::Error::other("a Redis fault in a run on another store"))
    }

    /// The etcd cluster, for an etcd fault.
    pub(super) fn etcd(&mut self) -> io::Result<&mut EtcdCluster> {
        self.etcd
            .as_mut()
            .ok_or_else(|| io::Error::other("an etcd fault in a run on another store"))
    }

    /// The ZooKeeper ensemble, for a ZooKeeper fault.
    pub(super) fn zookeeper(&mut self) -> io::Result<&mut ZookeeperEnsemble> {
        self.zookeeper
            .as_mut()
            .ok_or_else(|| io::Error::other("a ZooKeeper fault in a run on another store"))
    }

    /// The `cosid serve` replicas, for a serve fault.
    pub(super) fn serve(&mut self) -> io::Result<&mut ServeReplicas> {
        self.serve
            .as_mut()
            .ok_or_else(|| io::Error::other("a serve fault in a run on another store"))
    }

    /// A replica, from the nemesis' RNG.
    fn pick_replica(&mut self) -> usize {
        let n = self.serve.as_ref().map_or(1, ServeReplicas::len) as u64;
        self.nemesis.range_ms(0..=n - 1).as_millis() as usize
    }

    /// The PostgreSQL server, for a PostgreSQL fault.
    pub(super) fn postgres(&mut self) -> io::Result<&mut PostgresServer> {
        self.postgres
            .as_mut()
            .ok_or_else(|| io::Error::other("a PostgreSQL fault in a run on another store"))
    }

    /// Gives the database file a second name, and restarts `worker` through it. The store must refuse the second
    /// name (two names, two WALs: each would see only its own leases); a worker that opened the file through its
    /// first name before the link appeared keeps working.
    fn link_and_restart(&mut self, worker: usize) -> io::Result<()> {
        let Some(file) = &self.sqlite else {
            return Err(io::Error::other("file-hard-link needs an SQLite run"));
        };
        if self.via_link.iter().any(|&v| v) {
            return Err(io::Error::other("a second name is already in use"));
        }
        file.link()?;
        self.via_link[worker] = true;
        self.kill_and_restart(worker)
    }

    pub(super) fn kill_and_restart(&mut self, worker: usize) -> io::Result<()> {
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

    pub(super) fn heal(&mut self, h: Heal) {
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
                let r = self.redis().and_then(|r| r.start());
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
            Heal::PostgresStart => {
                let r = self.postgres().and_then(|p| p.start());
                if r.is_err() {
                    // Never leave the store down for the rest of the run: try again shortly.
                    self.heals
                        .push((Instant::now() + Duration::from_secs(1), Heal::PostgresStart));
                }
                (Line::new(now, "HEAL").field("kind", "postgres-start"), r)
            }
            Heal::EtcdStart { member } => {
                let r = self.etcd().and_then(|c| c.start_member(member));
                if r.is_err() {
                    // Never leave a member down for the rest of the run: try again shortly.
                    self.heals.push((
                        Instant::now() + Duration::from_secs(1),
                        Heal::EtcdStart { member },
                    ));
                }
                (
                    Line::new(now, "HEAL")
                        .field("kind", "etcd-start")
                        .field("member", member),
                    r,
                )
            }
            Heal::EtcdCont { member } => (
                Line::new(now, "HEAL")
                    .field("kind", "etcd-sigcont")
                    .field("member", member),
                self.etcd().and_then(|c| c.pause(member, false)),
            ),
            Heal::EtcdUnpartition { member } => (
                Line::new(now, "HEAL")
                    .field("kind", "etcd-unpartition")
                    .field("member", member),
                self.etcd().and_then(|c| c.partition(member, false)),
            ),
            Heal::ZookeeperStart { member } => {
                let r = self.zookeeper().and_then(|c| c.start_member(member));
                if r.is_err() {
                    // Never leave a server down for the rest of the run: try again shortly.
                    self.heals.push((
                        Instant::now() + Duration::from_secs(1),
                        Heal::ZookeeperStart { member },
                    ));
                }
                (
                    Line::new(now, "HEAL")
                        .field("kind", "zookeeper-start")
                        .field("member", member),
                    r,
                )
            }
            Heal::ZookeeperCont { member } => (
                Line::new(now, "HEAL")
                    .field("kind", "zookeeper-sigcont")
                    .field("member", member),
                self.zookeeper().and_then(|c| c.pause(member, false)),
            ),
            Heal::ZookeeperUnpartition { member } => (
                Line::new(now, "HEAL")
                    .field("kind", "zookeeper-unpartition")
                    .field("member", member),
                self.zookeeper().and_then(|c| c.partition(member, false)),
            ),
            Heal::ServeStart { replica } => {
                let r = self.serve().and_then(|x| x.start_replica(replica));
                if r.is_err() {
                    // Never leave a replica down for the rest of the run: try again shortly.
                    self.heals.push((
                        Instant::now() + Duration::from_secs(1),
                        Heal::ServeStart { replica },
                    ));
                }
                (
                    Line::new(now, "HEAL")
                        .field("kind", "serve-start")
                        .field("replica", replica),
                    r,
                )
            }
            Heal::ServeCont { replica } => (
                Line::new(now, "HEAL")
                    .field("kind", "serve-sigcont")
                    .field("replica", replica),
                self.serve().and_then(|x| x.pause(replica, false)),
            ),
            Heal::PostgresCont => (
                Line::new(now, "HEAL").field("kind", "postgres-sigcont"),
                self.postgres().and_then(|p| p.pause(false)),
            ),
            Heal::LinkEnd { worker } => {
                // The worker on the second name is killed (the checker reads it as killed: its logs may be torn)
                // and started again on the first name once the link is gone.
                let i = self.position(worker);
                let inc = self.workers[i].incarnation;
                let r = match &self.sqlite {
                    Some(file) => file.unlink(),
                    None => Ok(()),
                };
                self.via_link[worker] = false;
                let r = r.and_then(|()| self.kill_and_restart(worker));
                (
                    Line::new(now, "HEAL")
                        .field("kind", "link-end")
                        .field("worker", worker)
                        .field("inc", inc),
                    r,
                )
            }
        };
        match result {
            Ok(()) => self.note(line),
            Err(e) => self.note(line.reason(format!("failed: {e}"))),
        }
    }

    /// Undoes every pending fault at once (the end of the run).
    pub(super) fn heal_all(&mut self) {
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
        if let Some(redis) = &self.redis {
            let _ = redis.unpause_clients();
        }
    }
}
