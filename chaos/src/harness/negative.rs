//! The negative control: copy the store's data, kill a lease holder, put the copy back while the workers run.

use super::{Heal, Run};
use crate::logs::{wall_ms, Line};
use crate::nemesis::Kind;
use crate::redis_server::Stop;
use std::io;
use std::time::{Duration, Instant};

/// The negative control's plan, repeated while the round lasts: copy the data, kill a lease holder, put the copy
/// back some seconds later.
#[derive(Debug, Clone, Copy)]
pub(super) enum Rollback {
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

impl Run<'_> {
    /// One step of the negative control's cycle.
    pub(super) fn roll_back(
        &mut self,
        rb: Rollback,
        now: Instant,
        end: Instant,
    ) -> io::Result<Rollback> {
        Ok(match rb {
            Rollback::Waiting { copy_at } if now >= copy_at => {
                // Older than a lease (ttl + tolerance) plus the time a waiting worker needs to take over the slot
                // of the holder killed right after the copy: the lost writes then include a change of owner.
                let age = self.nemesis.range_ms(6_000..=10_000);
                if now + age + Duration::from_secs(3) > end {
                    return Ok(Rollback::Done);
                }
                if !self.snapshot() {
                    // No copy (the store was down: a crash fault's restart pending): nothing to put back; try
                    // again shortly rather than restore a copy that is not there.
                    return Ok(Rollback::Waiting {
                        copy_at: now + Duration::from_millis(500),
                    });
                }
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

    /// Copies the store's data; whether there is a copy to put back.
    fn snapshot(&mut self) -> bool {
        let to = self.s.dir.join("snapshot");
        let r = if let Some(ensemble) = self.zookeeper.as_mut() {
            ensemble.snapshot(&to)
        } else {
            match (
                &self.redis,
                &self.sqlite,
                self.postgres.as_mut(),
                self.etcd.as_mut(),
            ) {
                (Some(redis), _, _, _) => redis.snapshot(&to),
                (_, Some(file), _, _) => file.snapshot(&to),
                (_, _, Some(pg), _) => pg.snapshot(&to),
                (_, _, _, Some(cluster)) => cluster.snapshot(&to),
                (None, None, None, None) => Err(io::Error::other("no store")),
            }
        };
        match r {
            Ok(()) => {
                self.note(Line::new(wall_ms(), "SNAPSHOT"));
                true
            }
            Err(e) => {
                // The store is down (a crash fault's restart pending, or the nemesis killing it right now): the
                // cycle copies again 500 ms later, so this is no failure of the run. A control whose copies all
                // fail restores nothing and shows it by catching nothing.
                self.note(Line::new(wall_ms(), "SNAPSHOT_DEFERRED").reason(e));
                false
            }
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

    /// The failover that loses the last writes. Redis: crash it, put the older copy back, start it. SQLite: write
    /// the older copy back into the live file, in place.
    fn restore(&mut self, age: Duration) -> io::Result<()> {
        let from = self.s.dir.join("snapshot");
        if self.etcd.is_some() {
            // Every member crashed at once, and the cluster started again on the older copies of all three data
            // folders (a restore of old disk images or VM snapshots): every write since the copy is gone. A
            // pending member start, resume or partition heal is done here instead.
            self.heals.retain(|(_, h)| {
                !matches!(
                    h,
                    Heal::EtcdStart { .. } | Heal::EtcdCont { .. } | Heal::EtcdUnpartition { .. }
                )
            });
            let cluster = self.etcd()?;
            cluster.heal_partition();
            cluster.stop(Stop::Kill);
            match self.etcd()?.restore(&from) {
                Ok(()) => self.note(Line::new(wall_ms(), "RESTORE").field("age", age.as_millis())),
                Err(e) => self.note(Line::new(wall_ms(), "RESTORE_FAILED").reason(&e)),
            }
            return self.etcd()?.start().or_else(|e| {
                self.note(Line::new(wall_ms(), "RESTART_FAILED").reason(&e));
                std::thread::sleep(Duration::from_secs(1));
                self.etcd()?.start()
            });
        }
        if self.zookeeper.is_some() {
            // Every server crashed at once, and the ensemble started again on the older copies of all three data
            // folders (snapshots, transaction logs, epochs and myid: old disk images or VM snapshots restored):
            // every write since the copy is gone. A pending start, resume or partition heal is done here instead.
            self.heals.retain(|(_, h)| {
                !matches!(
                    h,
                    Heal::ZookeeperStart { .. }
                        | Heal::ZookeeperCont { .. }
                        | Heal::ZookeeperUnpartition { .. }
                )
            });
            let ensemble = self.zookeeper()?;
            ensemble.heal_partition();
            ensemble.stop(Stop::Kill);
            match self.zookeeper()?.restore(&from) {
                Ok(()) => self.note(Line::new(wall_ms(), "RESTORE").field("age", age.as_millis())),
                Err(e) => self.note(Line::new(wall_ms(), "RESTORE_FAILED").reason(&e)),
            }
            return self.zookeeper()?.start().or_else(|e| {
                self.note(Line::new(wall_ms(), "RESTART_FAILED").reason(&e));
                std::thread::sleep(Duration::from_secs(1));
                self.zookeeper()?.start()
            });
        }
        if self.postgres.is_some() {
            // A crash-restart or a pause may be pending: the restore ends both.
            self.heals
                .retain(|(_, h)| !matches!(h, Heal::PostgresStart | Heal::PostgresCont));
            self.postgres()?.stop(Stop::Kill)?;
            match self.postgres()?.restore(&from) {
                Ok(()) => self.note(Line::new(wall_ms(), "RESTORE").field("age", age.as_millis())),
                Err(e) => self.note(Line::new(wall_ms(), "RESTORE_FAILED").reason(&e)),
            }
            return self.postgres()?.start().or_else(|e| {
                self.note(Line::new(wall_ms(), "RESTART_FAILED").reason(&e));
                std::thread::sleep(Duration::from_secs(1));
                self.postgres()?.start()
            });
        }
        if self.redis.is_none() {
            let r = match &self.sqlite {
                Some(file) => file.restore(&from),
                None => Err(io::Error::other("no store")),
            };
            match r {
                Ok(()) => self.note(Line::new(wall_ms(), "RESTORE").field("age", age.as_millis())),
                Err(e) => self.note(Line::new(wall_ms(), "RESTORE_FAILED").reason(&e)),
            }
            return Ok(());
        }
        // A restart fault may have Redis down right now: its pending start is done here instead.
        self.heals.retain(|(_, h)| *h != Heal::RedisStart);
        self.redis()?.stop(Stop::Kill)?;
        match self.redis()?.restore(&from) {
            Ok(()) => self.note(Line::new(wall_ms(), "RESTORE").field("age", age.as_millis())),
            Err(e) => self.note(Line::new(wall_ms(), "RESTORE_FAILED").reason(&e)),
        }
        self.redis()?.start().or_else(|e| {
            self.note(Line::new(wall_ms(), "RESTART_FAILED").reason(&e));
            std::thread::sleep(Duration::from_secs(1));
            self.redis()?.start()
        })
    }
}
