//! The nemesis' choices: which fault next, on whom, for how long. All of it comes from one seeded RNG, so a seed
//! replays the same sequence of decisions (the timing of the processes themselves still varies from run to run).

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::fmt;
use std::time::Duration;

/// A kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `SIGSTOP` a worker, `SIGCONT` it later.
    Pause,
    /// `SIGKILL` a worker and start it again.
    Kill,
    /// Shift a worker's clock ahead.
    ClockAhead,
    /// Shift a worker's clock behind.
    ClockBehind,
    /// Restart Redis with `SIGTERM`.
    RedisTerm,
    /// Restart Redis with `SIGKILL`.
    RedisKill,
    /// `CLIENT PAUSE`.
    ClientPause,
    /// `CLIENT KILL TYPE normal`.
    DropConnections,
    /// SQLite: a hard link to the database file appears, and a worker is restarted through it; both go away later.
    FileLink,
    /// SQLite: a fresh file is renamed over the database file under the live holders.
    FileReplace,
    /// PostgreSQL: `SIGKILL` the postmaster and every backend, start it again.
    PostgresKill,
    /// PostgreSQL: `SIGSTOP` the postmaster and every backend, `SIGCONT` them later.
    PostgresPause,
    /// PostgreSQL: `pg_terminate_backend` on every client connection.
    TerminateBackends,
    /// etcd: `SIGKILL` the leader, start it again.
    EtcdLeaderKill,
    /// etcd: `SIGSTOP` the leader, `SIGCONT` it later.
    EtcdLeaderPause,
    /// etcd: drop a member's loopback traffic (or, with no packet filter, `SIGSTOP` it), heal it later.
    EtcdPartition,
    /// etcd: cut every client connection to every member (`ss -K`).
    EtcdDropConnections,
    /// ZooKeeper: `SIGKILL` the leader, start it again.
    ZookeeperLeaderKill,
    /// ZooKeeper: `SIGSTOP` the leader, `SIGCONT` it later.
    ZookeeperLeaderPause,
    /// ZooKeeper: drop a server's loopback traffic (or, with no packet filter, `SIGSTOP` it), heal it later.
    ZookeeperPartition,
    /// ZooKeeper: cut every client connection to every server (`ss -K`).
    ZookeeperDropConnections,
    /// `cosid serve`: `SIGKILL` a replica, start it again on its port.
    ServeKill,
    /// `cosid serve`: `SIGSTOP` a replica, `SIGCONT` it later.
    ServePause,
    /// `cosid serve`: stop every replica (`SIGTERM`), start them all again.
    ServeRestartAll,
    /// `cosid serve`: cut every connection through the proxy in front of the replicas.
    ServeDropConnections,
}

impl Kind {
    /// Every kind, in report order.
    #[cfg(test)]
    pub const ALL: [Kind; 25] = [
        Kind::Pause,
        Kind::Kill,
        Kind::ClockAhead,
        Kind::ClockBehind,
        Kind::RedisTerm,
        Kind::RedisKill,
        Kind::ClientPause,
        Kind::DropConnections,
        Kind::FileLink,
        Kind::FileReplace,
        Kind::PostgresKill,
        Kind::PostgresPause,
        Kind::TerminateBackends,
        Kind::EtcdLeaderKill,
        Kind::EtcdLeaderPause,
        Kind::EtcdPartition,
        Kind::EtcdDropConnections,
        Kind::ZookeeperLeaderKill,
        Kind::ZookeeperLeaderPause,
        Kind::ZookeeperPartition,
        Kind::ZookeeperDropConnections,
        Kind::ServeKill,
        Kind::ServePause,
        Kind::ServeRestartAll,
        Kind::ServeDropConnections,
    ];

    /// The name used in logs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Pause => "sigstop",
            Kind::Kill => "sigkill",
            Kind::ClockAhead => "clock-ahead",
            Kind::ClockBehind => "clock-behind",
            Kind::RedisTerm => "redis-sigterm",
            Kind::RedisKill => "redis-sigkill",
            Kind::ClientPause => "client-pause",
            Kind::DropConnections => "drop-connections",
            Kind::FileLink => "file-hard-link",
            Kind::FileReplace => "file-replace",
            Kind::PostgresKill => "postgres-sigkill",
            Kind::PostgresPause => "postgres-sigstop",
            Kind::TerminateBackends => "terminate-backends",
            Kind::EtcdLeaderKill => "etcd-leader-sigkill",
            Kind::EtcdLeaderPause => "etcd-leader-sigstop",
            Kind::EtcdPartition => "etcd-partition",
            Kind::EtcdDropConnections => "etcd-drop-connections",
            Kind::ZookeeperLeaderKill => "zookeeper-leader-sigkill",
            Kind::ZookeeperLeaderPause => "zookeeper-leader-sigstop",
            Kind::ZookeeperPartition => "zookeeper-partition",
            Kind::ZookeeperDropConnections => "zookeeper-drop-connections",
            Kind::ServeKill => "serve-replica-sigkill",
            Kind::ServePause => "serve-replica-sigstop",
            Kind::ServeRestartAll => "serve-restart-all",
            Kind::ServeDropConnections => "serve-drop-connections",
        }
    }

    /// Whether the fault targets one worker.
    pub fn targets_worker(self) -> bool {
        matches!(
            self,
            Kind::Pause | Kind::Kill | Kind::ClockAhead | Kind::ClockBehind | Kind::FileLink
        )
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One decision of the nemesis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// What.
    pub kind: Kind,
    /// On which worker (worker faults only).
    pub worker: Option<usize>,
    /// How long it lasts (pauses, clock shifts, Redis downtime), if it lasts.
    pub duration: Duration,
    /// For clock shifts: the offset in ms (signed).
    pub offset_ms: i64,
}

/// The nemesis' random source and its rules.
#[derive(Debug)]
pub struct Nemesis {
    rng: ChaCha8Rng,
    kinds: Vec<Kind>,
    deck: Vec<Kind>,
    ttl: Duration,
    workers: usize,
}

impl Nemesis {
    /// A nemesis for `workers` workers with lease length `ttl`, from `seed`, drawing from `kinds` (the faults
    /// that apply to the store under test).
    pub fn new(seed: u64, ttl: Duration, workers: usize, kinds: &[Kind]) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
            kinds: kinds.to_vec(),
            deck: Vec::new(),
            ttl,
            workers,
        }
    }

    /// The wait before the next fault: 2 to 6 s.
    pub fn interval(&mut self) -> Duration {
        Duration::from_millis(self.rng.random_range(2_000..=6_000))
    }

    /// A number in `range`, from the nemesis' RNG (for the harness's other random choices).
    pub fn range_ms(&mut self, range: std::ops::RangeInclusive<u64>) -> Duration {
        Duration::from_millis(self.rng.random_range(range))
    }

    /// The next fault. Kinds come from a shuffled deck of the store's kinds, so every kind occurs once in every
    /// deck's worth of faults, in a random order. `eligible` says whether a fault can be injected now: a worker fault
    /// on that worker (a worker already stopped is not stopped again), or a store fault (`None`: no file replaced
    /// while it has a second name); a kind that is not eligible (on any worker) is put back and the next one drawn.
    pub fn next(&mut self, eligible: impl Fn(Kind, Option<usize>) -> bool) -> Fault {
        for _ in 0..self.kinds.len() * 2 {
            if self.deck.is_empty() {
                self.deck = self.kinds.clone();
                self.deck.shuffle(&mut self.rng);
            }
            let kind = self.deck.pop().expect("refilled above");
            let worker = if kind.targets_worker() {
                let candidates: Vec<usize> = (0..self.workers)
                    .filter(|&w| eligible(kind, Some(w)))
                    .collect();
                if candidates.is_empty() {
                    // Try it again later in this deck.
                    self.deck.insert(0, kind);
                    continue;
                }
                Some(candidates[self.rng.random_range(0..candidates.len())])
            } else if eligible(kind, None) {
                None
            } else {
                self.deck.insert(0, kind);
                continue;
            };
            return self.shape(kind, worker);
        }
        // Every fault of the deck is blocked (all workers stopped, say): fall back on the store's first eligible
        // fault that needs no worker, else on killing a worker (a stopped one dies as well).
        match self
            .kinds
            .iter()
            .copied()
            .find(|&k| !k.targets_worker() && eligible(k, None))
        {
            Some(k) => self.shape(k, None),
            None => {
                let w = self.rng.random_range(0..self.workers);
                self.shape(Kind::Kill, Some(w))
            }
        }
    }

    fn shape(&mut self, kind: Kind, worker: Option<usize>) -> Fault {
        let ttl = self.ttl.as_millis() as u64;
        let (duration, offset_ms) = match kind {
            // 0.5 to 4 times the ttl.
            Kind::Pause => (self.range_ms(ttl / 2..=ttl * 4), 0),
            Kind::Kill => (Duration::ZERO, 0),
            Kind::ClockAhead | Kind::ClockBehind => {
                // Log-uniform from 1 ms to an hour, so small and huge shifts are equally common.
                let exp: f64 = self.rng.random_range(0.0..=(3_600_000f64).log10());
                let ms = 10f64.powf(exp).round() as i64;
                let held = self.range_ms(2_000..=10_000);
                (held, if kind == Kind::ClockAhead { ms } else { -ms })
            }
            // How long Redis stays down between stop and start.
            Kind::RedisTerm | Kind::RedisKill => (self.range_ms(0..=1_500), 0),
            Kind::ClientPause => (self.range_ms(500..=ttl * 5 / 2), 0),
            Kind::DropConnections
            | Kind::FileReplace
            | Kind::TerminateBackends
            | Kind::EtcdDropConnections
            | Kind::ZookeeperDropConnections
            | Kind::ServeDropConnections => (Duration::ZERO, 0),
            // How long the replica (or every replica) stays down between the stop and the start.
            Kind::ServeKill | Kind::ServeRestartAll => (self.range_ms(0..=1_500), 0),
            // As long as a client pause: a replica that hangs past a lease.
            Kind::ServePause => (self.range_ms(500..=ttl * 5 / 2), 0),
            // How long the server stays down between the crash and the start.
            Kind::PostgresKill => (self.range_ms(0..=1_500), 0),
            // As long as a client pause: a server that hangs past a lease.
            Kind::PostgresPause => (self.range_ms(500..=ttl * 5 / 2), 0),
            // How long the leader stays down between the crash and the start.
            Kind::EtcdLeaderKill | Kind::ZookeeperLeaderKill => (self.range_ms(0..=1_500), 0),
            // As long as a client pause: a leader that hangs past a lease.
            Kind::EtcdLeaderPause | Kind::ZookeeperLeaderPause => {
                (self.range_ms(500..=ttl * 5 / 2), 0)
            }
            // How long the member stays cut off.
            Kind::EtcdPartition | Kind::ZookeeperPartition => (self.range_ms(1_000..=8_000), 0),
            // How long the second name lasts.
            Kind::FileLink => (self.range_ms(2_000..=8_000), 0),
        };
        Fault {
            kind,
            worker,
            duration,
            offset_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::store::Store;

    fn draw(seed: u64, n: usize) -> Vec<Fault> {
        let mut n_ = Nemesis::new(seed, Duration::from_secs(3), 4, Store::Redis.kinds());
        (0..n).map(|_| n_.next(|_, _| true)).collect()
    }

    #[test]
    fn every_kind_belongs_to_a_store() {
        for k in Kind::ALL {
            assert!(
                [
                    Store::Redis,
                    Store::Sqlite,
                    Store::Postgres,
                    Store::Etcd,
                    Store::Zookeeper,
                    Store::Serve,
                ]
                .iter()
                .any(|s| s.kinds().contains(&k)),
                "{k}"
            );
        }
    }

    #[test]
    fn a_seed_replays_the_same_faults() {
        assert_eq!(draw(42, 40), draw(42, 40));
        assert_ne!(draw(42, 40), draw(43, 40));
    }

    #[test]
    fn every_kind_occurs_in_every_deck() {
        let faults = draw(7, 64);
        for chunk in faults.chunks(8) {
            let mut kinds: Vec<Kind> = chunk.iter().map(|f| f.kind).collect();
            kinds.sort();
            assert_eq!(kinds, Store::Redis.kinds().to_vec());
        }
        for store in [
            Store::Sqlite,
            Store::Postgres,
            Store::Etcd,
            Store::Zookeeper,
            Store::Serve,
        ] {
            let k = store.kinds();
            let mut n = Nemesis::new(11, Duration::from_secs(3), 8, k);
            let faults: Vec<Fault> = (0..k.len() * 6).map(|_| n.next(|_, _| true)).collect();
            for chunk in faults.chunks(k.len()) {
                let mut kinds: Vec<Kind> = chunk.iter().map(|f| f.kind).collect();
                kinds.sort();
                let mut want = k.to_vec();
                want.sort();
                assert_eq!(kinds, want, "{store:?}");
            }
        }
    }

    #[test]
    fn faults_stay_within_their_bounds() {
        for f in draw(99, 400) {
            match f.kind {
                Kind::Pause => {
                    assert!(
                        (1_500..=12_000).contains(&(f.duration.as_millis() as u64)),
                        "{f:?}"
                    )
                }
                Kind::ClockAhead => assert!((1..=3_600_000).contains(&f.offset_ms), "{f:?}"),
                Kind::ClockBehind => assert!((-3_600_000..=-1).contains(&f.offset_ms), "{f:?}"),
                _ => assert_eq!(f.offset_ms, 0),
            }
            assert_eq!(f.worker.is_some(), f.kind.targets_worker());
            assert!(f.worker.is_none_or(|w| w < 4));
        }
    }

    #[test]
    fn a_worker_that_is_not_eligible_is_never_chosen() {
        let mut n = Nemesis::new(5, Duration::from_secs(3), 4, Store::Redis.kinds());
        for _ in 0..200 {
            let f = n.next(|k, w| k != Kind::Pause || w == Some(2));
            if f.kind == Kind::Pause {
                assert_eq!(f.worker, Some(2));
            }
        }
        // No worker eligible: a store fault.
        for store in [
            Store::Redis,
            Store::Sqlite,
            Store::Postgres,
            Store::Etcd,
            Store::Zookeeper,
            Store::Serve,
        ] {
            let mut n = Nemesis::new(5, Duration::from_secs(3), 8, store.kinds());
            for _ in 0..50 {
                assert!(!n.next(|_, w| w.is_none()).kind.targets_worker());
            }
        }
        // No file fault while the file has a second name, and, with nothing else eligible, a kill.
        let mut n = Nemesis::new(5, Duration::from_secs(3), 8, Store::Sqlite.kinds());
        for _ in 0..50 {
            let f = n.next(|k, _| !matches!(k, Kind::FileLink | Kind::FileReplace));
            assert!(matches!(f.kind, Kind::Pause | Kind::Kill), "{f:?}");
            assert_eq!(n.next(|_, _| false).kind, Kind::Kill);
        }
    }
}
