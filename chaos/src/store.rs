//! The store under test: which one, the faults that apply to it, and, for SQLite, the database file the harness
//! hands to the workers and damages.

use crate::nemesis::Kind;
use clap::ValueEnum;
use cosid::clock::SystemClock;
use cosid::store::SqliteStore;
use rusqlite::{Connection, MAIN_DB};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A store the harness can run against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Store {
    /// A private `redis-server` (appendfsync always; everysec for the negative control).
    Redis,
    /// One SQLite file shared by every worker process.
    Sqlite,
    /// A private PostgreSQL server (`initdb` by the harness).
    Postgres,
    /// A private 3-member etcd cluster (127.0.0.2 to 127.0.0.4).
    Etcd,
    /// A private 3-server ZooKeeper ensemble (127.0.0.2 to 127.0.0.4).
    Zookeeper,
    /// Three `cosid serve` replicas in front of one SQLite file, the workers on the `http://` store through a
    /// round-robin proxy.
    Serve,
}

/// Redis' faults: every worker fault, and every server fault.
const REDIS_KINDS: [Kind; 8] = [
    Kind::Pause,
    Kind::Kill,
    Kind::ClockAhead,
    Kind::ClockBehind,
    Kind::RedisTerm,
    Kind::RedisKill,
    Kind::ClientPause,
    Kind::DropConnections,
];

/// SQLite's faults. No clock shifts: the SQLite store's time is the caller's clock, and every process on one host
/// shares it (docs/stores.md); a shift of one process alone is a fault one host cannot have.
const SQLITE_KINDS: [Kind; 4] = [Kind::Pause, Kind::Kill, Kind::FileLink, Kind::FileReplace];

/// PostgreSQL's faults: every worker fault (the store's time is the server's, as with Redis), and the server's.
const POSTGRES_KINDS: [Kind; 7] = [
    Kind::Pause,
    Kind::Kill,
    Kind::ClockAhead,
    Kind::ClockBehind,
    Kind::PostgresKill,
    Kind::PostgresPause,
    Kind::TerminateBackends,
];

/// etcd's faults: every worker fault (the store's time is each worker's own clock, so a shifted clock is exactly
/// the fault of a host whose clock is off), and the cluster's: its leader crashed or hung, a member cut off, every
/// client connection cut.
const ETCD_KINDS: [Kind; 8] = [
    Kind::Pause,
    Kind::Kill,
    Kind::ClockAhead,
    Kind::ClockBehind,
    Kind::EtcdLeaderKill,
    Kind::EtcdLeaderPause,
    Kind::EtcdPartition,
    Kind::EtcdDropConnections,
];

/// etcd's negative control: [`ETCD_KINDS`] without the clock shifts.
const ETCD_NEGATIVE_KINDS: [Kind; 6] = [
    Kind::Pause,
    Kind::Kill,
    Kind::EtcdLeaderKill,
    Kind::EtcdLeaderPause,
    Kind::EtcdPartition,
    Kind::EtcdDropConnections,
];

/// ZooKeeper's faults: every worker fault (the store's time is each worker's own clock, as with etcd: ZooKeeper has
/// no call that returns the server's time, docs/stores.md; so a shifted clock is exactly the fault of a host whose
/// clock is off), and the ensemble's: its leader crashed or hung, a server cut off, every client connection cut.
const ZOOKEEPER_KINDS: [Kind; 8] = [
    Kind::Pause,
    Kind::Kill,
    Kind::ClockAhead,
    Kind::ClockBehind,
    Kind::ZookeeperLeaderKill,
    Kind::ZookeeperLeaderPause,
    Kind::ZookeeperPartition,
    Kind::ZookeeperDropConnections,
];

/// ZooKeeper's negative control: [`ZOOKEEPER_KINDS`] without the clock shifts (for etcd's reason, below).
const ZOOKEEPER_NEGATIVE_KINDS: [Kind; 6] = [
    Kind::Pause,
    Kind::Kill,
    Kind::ZookeeperLeaderKill,
    Kind::ZookeeperLeaderPause,
    Kind::ZookeeperPartition,
    Kind::ZookeeperDropConnections,
];

/// `cosid serve`'s faults: every worker fault (the store's time is the replicas' clock, as with Redis it is the
/// server's), and the replicas': one crashed and started again on its port, one stopped, all restarted, every
/// connection through the proxy cut.
const SERVE_KINDS: [Kind; 8] = [
    Kind::Pause,
    Kind::Kill,
    Kind::ClockAhead,
    Kind::ClockBehind,
    Kind::ServeKill,
    Kind::ServePause,
    Kind::ServeRestartAll,
    Kind::ServeDropConnections,
];

/// `cosid serve`'s negative control: [`SERVE_KINDS`] without the clock shifts (the control is about lost writes).
const SERVE_NEGATIVE_KINDS: [Kind; 6] = [
    Kind::Pause,
    Kind::Kill,
    Kind::ServeKill,
    Kind::ServePause,
    Kind::ServeRestartAll,
    Kind::ServeDropConnections,
];

impl Store {
    /// The name in logs, `run.txt` and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Store::Redis => "redis",
            Store::Sqlite => "sqlite",
            Store::Postgres => "postgres",
            Store::Etcd => "etcd",
            Store::Zookeeper => "zookeeper",
            Store::Serve => "serve",
        }
    }

    /// Reads a name written by [`name`](Self::name); a run folder without one is a Redis run (older runs).
    pub fn from_name(name: Option<&str>) -> Option<Self> {
        match name {
            None | Some("redis") => Some(Store::Redis),
            Some("sqlite") => Some(Store::Sqlite),
            Some("postgres") => Some(Store::Postgres),
            Some("etcd") => Some(Store::Etcd),
            Some("zookeeper") => Some(Store::Zookeeper),
            Some("serve") => Some(Store::Serve),
            Some(_) => None,
        }
    }

    /// The faults the nemesis draws from for this store.
    pub fn kinds(self) -> &'static [Kind] {
        match self {
            Store::Redis => &REDIS_KINDS,
            Store::Sqlite => &SQLITE_KINDS,
            Store::Postgres => &POSTGRES_KINDS,
            Store::Etcd => &ETCD_KINDS,
            Store::Zookeeper => &ZOOKEEPER_KINDS,
            Store::Serve => &SERVE_KINDS,
        }
    }

    /// The faults of a run: [`kinds`](Self::kinds), but for SQLite's negative control, whose only lost writes
    /// must be the restored copy's (a replaced file raises the alarm by design), so workers are only killed and
    /// stopped there.
    pub fn run_kinds(self, negative: bool) -> &'static [Kind] {
        match (self, negative) {
            (Store::Sqlite, true) => &SQLITE_KINDS[..2],
            // etcd's negative control: no clock shifts. The store's time is the worker's clock there, so a worker
            // that took a slot while its clock ran ahead can wait past the harness's 10 s stop for its window,
            // which fails the round's sanity check (seen once, seed 1796224829833808270); the control is about
            // lost writes.
            (Store::Etcd, true) => &ETCD_NEGATIVE_KINDS,
            // The same holds on ZooKeeper, whose store time is the worker's clock too.
            (Store::Zookeeper, true) => &ZOOKEEPER_NEGATIVE_KINDS,
            (Store::Serve, true) => &SERVE_NEGATIVE_KINDS,
            _ => self.kinds(),
        }
    }
}

/// The database file of an SQLite run, in a folder of its own.
#[derive(Debug)]
pub struct SqliteFile {
    dir: PathBuf,
}

impl SqliteFile {
    /// The file `leases.db` in `dir` (created), made with the store's own schema so the first workers race on
    /// slots, not on creating the file.
    pub fn create(dir: &Path) -> io::Result<Self> {
        fs::create_dir_all(dir)?;
        let this = Self {
            dir: dir.to_owned(),
        };
        drop(
            SqliteStore::open(&this.path(), Arc::new(SystemClock))
                .map_err(|e| io::Error::other(format!("cannot create the database: {e}")))?,
        );
        Ok(this)
    }

    /// The database's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join("leases.db")
    }

    /// The second name the hard-link fault gives the file.
    pub fn link_path(&self) -> PathBuf {
        self.dir.join("leases-link.db")
    }

    /// The store URL of `path`.
    pub fn url_of(path: &Path) -> String {
        format!("sqlite://{}", path.display())
    }

    /// The store URL workers use.
    pub fn url(&self) -> String {
        Self::url_of(&self.path())
    }

    /// Gives the file a second name (a hard link).
    pub fn link(&self) -> io::Result<()> {
        let _ = fs::remove_file(self.link_path());
        fs::hard_link(self.path(), self.link_path())
    }

    /// Removes the second name, and the WAL files SQLite made beside it.
    pub fn unlink(&self) -> io::Result<()> {
        let link = self.link_path();
        for suffix in ["-wal", "-shm"] {
            let mut p = link.clone().into_os_string();
            p.push(suffix);
            let _ = fs::remove_file(p);
        }
        match fs::remove_file(&link) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Renames a fresh, empty database (the store's schema, no leases) over the file, under the live holders: a
    /// restored backup or a `cosid init` elsewhere, copied in while processes run.
    pub fn replace(&self) -> io::Result<()> {
        let fresh = self.dir.join("fresh.db");
        let _ = fs::remove_file(&fresh);
        drop(
            SqliteStore::open(&fresh, Arc::new(SystemClock))
                .map_err(|e| io::Error::other(format!("cannot make a fresh database: {e}")))?,
        );
        fs::rename(&fresh, self.path())
    }

    /// Copies the database (a consistent copy, through SQLite's backup API) into `to`.
    pub fn snapshot(&self, to: &Path) -> io::Result<()> {
        let _ = fs::remove_file(to);
        let src = self.connection()?;
        src.backup(MAIN_DB, to, None)
            .map_err(|e| io::Error::other(format!("backup to {}: {e}", to.display())))
    }

    /// Writes the copy made by [`snapshot`](Self::snapshot) back into the live file, in place (the same inode, so
    /// nothing but the lost writes tells the workers): the negative control's lost writes.
    pub fn restore(&self, from: &Path) -> io::Result<()> {
        let mut dst = self.connection()?;
        dst.restore(MAIN_DB, from, None::<fn(rusqlite::backup::Progress)>)
            .map_err(|e| io::Error::other(format!("restore from {}: {e}", from.display())))
    }

    fn connection(&self) -> io::Result<Connection> {
        let conn = Connection::open(self.path()).map_err(|e| io::Error::other(e.to_string()))?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(conn)
    }
}
