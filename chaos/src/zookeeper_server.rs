//! A private 3-server ZooKeeper ensemble for a run: Debian's `zookeeper` (3.8, `/usr/share/java/zookeeper.jar`, run
//! with `java ... QuorumPeerMain zoo.cfg` as `.ci/services/zookeeper.sh` runs a standalone one), one server on each
//! of 127.0.0.2, 127.0.0.3 and 127.0.0.4 (free client, quorum and election ports; configuration, `myid` and data
//! folders in the run folder), each the harness's child in a process group of its own. Nothing here touches a
//! ZooKeeper on 127.0.0.1.
//!
//! Settings: `tickTime=500` (as the service script: elections and a lost leader are noticed within a second or
//! two; `syncLimit=5` ticks), `forceSync` left on (the default: a write is acknowledged once a quorum has it on
//! disk), small JVMs (`-Xmx128m`, the serial collector, the client compiler, no perf data file).
//!
//! Partitions work as for etcd (see `etcd_server.rs`): an nftables table of the harness's own drops every packet
//! to or from the member's address, and every packet of the connections the member opened itself (a follower's
//! connection to the leader and the election connections leave from 127.0.0.1, so, as root, each server runs under
//! a uid of its own and a table kept for the whole run marks each connection with the uid that opened it). Without
//! `nft` or root, a partition is emulated by `SIGSTOP` of the member, and the run says so.

use crate::etcd_server::{copy_tree, free_port_on, nft, nft_usable, PartitionMethod, ADDRESSES};
use crate::redis_server::Stop;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::fs;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's server jar; its manifest names the libraries it needs.
const JAR: &str = "/usr/share/java/zookeeper.jar";

/// A logging backend for the servers' logs (from `libslf4j-java` and `liblog4j1.2-java`, which Debian's
/// `libzookeeper-java` depends on); without them the servers run silent.
const LOG_JARS: [&str; 2] = [
    "/usr/share/java/slf4j-log4j12.jar",
    "/usr/share/java/log4j-1.2.jar",
];

/// The first of the uids the servers run under when the harness is root (one each; no user entry is needed). Not
/// the etcd members' uids, so two harnesses on one host never mark each other's connections.
const FIRST_UID: u32 = 64_240;

/// How long a start (of the ensemble: until a leader serves with a follower) may take.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long one `srvr` question to one server may take.
const STATUS_TIMEOUT: Duration = Duration::from_millis(1_500);

fn other(msg: String) -> io::Error {
    io::Error::other(msg)
}

#[derive(Debug)]
struct Member {
    name: String,
    ip: &'static str,
    client: u16,
    quorum: u16,
    election: u16,
    uid: Option<u32>,
    child: Option<Child>,
    paused: bool,
    partitioned: bool,
}

/// What a server says of itself (`srvr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Leader,
    Follower,
    /// Anything else that serves (observer, standalone): never in this ensemble.
    Other,
}

/// The ensemble. Dropping it kills every server and removes the packet filter's tables.
#[derive(Debug)]
pub struct ZookeeperEnsemble {
    dir: PathBuf,
    members: Vec<Member>,
    method: PartitionMethod,
}

/// Asks `ip:port` a four-letter command and returns the whole reply.
fn four_letter(ip: &str, port: u16, command: &str) -> io::Result<String> {
    let ip: IpAddr = ip.parse().map_err(|e| other(format!("{ip}: {e}")))?;
    let mut s = TcpStream::connect_timeout(&SocketAddr::new(ip, port), STATUS_TIMEOUT)?;
    s.set_read_timeout(Some(STATUS_TIMEOUT))?;
    s.set_write_timeout(Some(STATUS_TIMEOUT))?;
    s.write_all(command.as_bytes())?;
    let deadline = Instant::now() + STATUS_TIMEOUT;
    let mut reply = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf)? {
            0 => break,
            n => reply.extend_from_slice(&buf[..n]),
        }
        if Instant::now() >= deadline {
            return Err(other(format!(
                "no whole `{command}` reply within {STATUS_TIMEOUT:?}"
            )));
        }
    }
    Ok(String::from_utf8_lossy(&reply).into_owned())
}

/// Reads the mode out of a `srvr` reply; a server that does not serve says so instead.
fn parse_mode(reply: &str) -> io::Result<Mode> {
    let mode = reply
        .lines()
        .find_map(|l| l.strip_prefix("Mode: "))
        .ok_or_else(|| other(format!("not serving: {}", reply.trim())))?;
    Ok(match mode.trim() {
        "leader" => Mode::Leader,
        "follower" => Mode::Follower,
        _ => Mode::Other,
    })
}

impl ZookeeperEnsemble {
    /// An ensemble with its configuration and data in `dir/m0..m2`, not started.
    pub fn new(dir: &Path) -> io::Result<Self> {
        fs::create_dir_all(dir)?;
        let method = if nft_usable() {
            PartitionMethod::Nft(format!("cosid_chaos_zk_{}", std::process::id()))
        } else {
            PartitionMethod::Sigstop
        };
        let mut members = Vec::new();
        for (i, ip) in ADDRESSES.into_iter().enumerate() {
            let uid = matches!(method, PartitionMethod::Nft(_)).then_some(FIRST_UID + i as u32);
            members.push(Member {
                name: format!("m{i}"),
                ip,
                client: free_port_on(ip)?,
                quorum: free_port_on(ip)?,
                election: free_port_on(ip)?,
                uid,
                child: None,
                paused: false,
                partitioned: false,
            });
        }
        // Only the loggers named here say more than warnings: the servers' state changes (LOOKING, LEADING,
        // FOLLOWING), elections, and sessions established or refused (a client that has seen a newer zxid than
        // the server's, after the negative control's restore), which is what a reader of a run's logs wants.
        fs::write(
            dir.join("log4j.properties"),
            "log4j.rootLogger=WARN, CONSOLE\n\
             log4j.logger.org.apache.zookeeper.server.quorum.QuorumPeer=INFO\n\
             log4j.logger.org.apache.zookeeper.server.quorum.FastLeaderElection=INFO\n\
             log4j.logger.org.apache.zookeeper.server.ZooKeeperServer=INFO\n\
             log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\n\
             log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n\
             log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p %c{1}: %m%n\n",
        )?;
        let servers: String = members
            .iter()
            .enumerate()
            .map(|(i, m)| format!("server.{}={}:{}:{}\n", i + 1, m.ip, m.quorum, m.election))
            .collect();
        let this = Self {
            dir: dir.to_owned(),
            members,
            method,
        };
        for (i, m) in this.members.iter().enumerate() {
            let home = dir.join(&m.name);
            let data = this.data(i);
            fs::create_dir_all(&data)?;
            fs::write(data.join("myid"), format!("{}\n", i + 1))?;
            // forceSync stays on (the default): the claim needs every acknowledged write on a quorum's disks.
            // preAllocSize (KB) only keeps the transaction logs, copied by the negative control, small.
            fs::write(
                home.join("zoo.cfg"),
                format!(
                    "tickTime=500\n\
                     initLimit=10\n\
                     syncLimit=5\n\
                     dataDir={data}\n\
                     clientPort={client}\n\
                     clientPortAddress={ip}\n\
                     maxClientCnxns=0\n\
                     admin.enableServer=false\n\
                     4lw.commands.whitelist=srvr\n\
                     preAllocSize=4096\n\
                     {servers}",
                    data = data.display(),
                    client = m.client,
                    ip = m.ip,
                ),
            )?;
            if let Some(uid) = m.uid {
                for p in [home.clone(), data.clone(), data.join("myid")] {
                    std::os::unix::fs::chown(&p, Some(uid), Some(uid))?;
                }
            }
        }
        if let PartitionMethod::Nft(table) = &this.method {
            // Every connection a server opens carries its uid as conntrack mark, both ways, from the start.
            let rules: String = this
                .members
                .iter()
                .filter_map(|m| m.uid)
                .map(|u| format!("    ct state new meta skuid {u} ct mark set {u}\n"))
                .collect();
            nft(&format!(
                "table inet {table}_mark {{\n  chain out {{\n    type filter hook output priority -10; policy accept;\n{rules}  }}\n}}\n"
            ))?;
        }
        Ok(this)
    }

    /// How partitions are made in this run.
    pub fn partition_method(&self) -> &PartitionMethod {
        &self.method
    }

    /// The URL workers use: every server.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("{}:{}", m.ip, m.client))
            .collect();
        format!("zookeeper://{}", hosts.join(","))
    }

    /// How many servers.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    fn data(&self, i: usize) -> PathBuf {
        self.dir.join(format!("m{i}")).join("data")
    }

    /// Starts every server that is not running, then waits until a leader serves with a follower.
    pub fn start(&mut self) -> io::Result<()> {
        for i in 0..self.members.len() {
            if self.members[i].child.is_none() {
                self.start_member(i)?;
            }
        }
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if self.leader().is_ok() {
                return Ok(());
            }
            for m in &mut self.members {
                if let Some(c) = m.child.as_mut() {
                    if let Some(status) = c.try_wait()? {
                        m.child = None;
                        return Err(other(format!(
                            "ZooKeeper server {} exited at start ({status}); see {}",
                            m.name,
                            self.dir.join(format!("{}.log", m.name)).display()
                        )));
                    }
                }
            }
            if Instant::now() >= deadline {
                return Err(other(format!(
                    "the ZooKeeper ensemble had no leader within {START_TIMEOUT:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Starts server `i` on its configuration and data folder.
    pub fn start_member(&mut self, i: usize) -> io::Result<()> {
        if self.members[i].child.is_some() {
            return Err(other(format!(
                "ZooKeeper server {} is already running",
                self.members[i].name
            )));
        }
        if !Path::new(JAR).exists() {
            return Err(other(format!(
                "no {JAR}: install Debian's zookeeper (apt-get install --no-install-recommends zookeeper)"
            )));
        }
        let m = &self.members[i];
        let home = self.dir.join(&m.name);
        let log = fs::File::options()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("{}.log", m.name)))?;
        let mut classpath = vec![JAR.to_owned()];
        if LOG_JARS.iter().all(|j| Path::new(j).exists()) {
            classpath.extend(LOG_JARS.iter().map(|j| (*j).to_owned()));
        }
        let mut cmd = Command::new("java");
        // A small heap, the serial collector and the client compiler: three servers start within two seconds
        // and stay small beside the workers; no perf data file in /tmp (a uid without a user entry).
        cmd.args([
            "-Xms16m",
            "-Xmx128m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-XX:-UsePerfData",
        ])
        .arg(format!(
            "-Dlog4j.configuration=file:{}",
            self.dir.join("log4j.properties").display()
        ))
        .arg("-cp")
        .arg(classpath.join(":"))
        .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
        .arg(home.join("zoo.cfg"))
        .current_dir(&home)
        // Its own process group: a fault reaches the server alone, and Ctrl-C only the harness.
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
        if let Some(uid) = m.uid {
            cmd.uid(uid).gid(uid).env("HOME", &home);
        }
        let child = cmd.spawn().map_err(|e| {
            other(format!(
                "cannot start java (install Debian's zookeeper): {e}"
            ))
        })?;
        let m = &mut self.members[i];
        m.child = Some(child);
        m.paused = false;
        Ok(())
    }

    fn pid(&self, i: usize) -> Option<Pid> {
        self.members[i]
            .child
            .as_ref()
            .map(|c| Pid::from_raw(c.id() as i32))
    }

    /// Whether server `i` runs, is not stopped and not partitioned (a fault can target it, a question reach it).
    pub fn healthy(&self, i: usize) -> bool {
        let m = &self.members[i];
        m.child.is_some() && !m.paused && !m.partitioned
    }

    /// Whether server `i` runs.
    pub fn running(&self, i: usize) -> bool {
        self.members[i].child.is_some()
    }

    /// Stops server `i` (`Kill`: `SIGKILL`, a crash; `Term`: `SIGTERM`) and waits for it to exit.
    pub fn stop_member(&mut self, i: usize, how: Stop) -> io::Result<()> {
        let Some(pgid) = self.pid(i) else {
            return Ok(());
        };
        let _ = killpg(pgid, Signal::SIGCONT);
        self.members[i].paused = false;
        let sig = match how {
            Stop::Term => Signal::SIGTERM,
            Stop::Kill => Signal::SIGKILL,
        };
        let _ = killpg(pgid, sig);
        let mut child = self.members[i].child.take().expect("checked above");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if child.try_wait()?.is_some() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let _ = killpg(pgid, Signal::SIGKILL);
                let _ = child.wait();
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops every server.
    pub fn stop(&mut self, how: Stop) {
        for i in 0..self.members.len() {
            let _ = self.stop_member(i, how);
        }
    }

    /// `SIGSTOP` (or, `false`, `SIGCONT`) server `i`: a server that hangs.
    pub fn pause(&mut self, i: usize, stopped: bool) -> io::Result<()> {
        let Some(pgid) = self.pid(i) else {
            return Err(other(format!(
                "ZooKeeper server {} is not running",
                self.members[i].name
            )));
        };
        let sig = if stopped {
            Signal::SIGSTOP
        } else {
            Signal::SIGCONT
        };
        killpg(pgid, sig).map_err(|e| other(format!("kill -{sig} -{pgid}: {e}")))?;
        self.members[i].paused = stopped;
        Ok(())
    }

    /// Cuts server `i` off (or, `false`, heals it): its loopback traffic dropped by the packet filter, or, where
    /// none can be used, the server stopped with `SIGSTOP`.
    pub fn partition(&mut self, i: usize, cut: bool) -> io::Result<()> {
        match self.method.clone() {
            PartitionMethod::Nft(table) => {
                if cut {
                    let m = &self.members[i];
                    let uid = m.uid.expect("servers run under their own uid with nft");
                    nft(&format!(
                        "table inet {table} {{\n  chain out {{\n    type filter hook output priority 0; policy accept;\n    ip saddr {ip} drop\n    ip daddr {ip} drop\n    ct mark {uid} drop\n    meta skuid {uid} drop\n  }}\n}}\n",
                        ip = m.ip
                    ))?;
                } else {
                    nft(&format!("delete table inet {table}\n"))?;
                }
            }
            PartitionMethod::Sigstop => {
                if self.members[i].child.is_some() {
                    self.pause(i, cut)?;
                }
            }
        }
        self.members[i].partitioned = cut;
        Ok(())
    }

    /// Whether a server is partitioned now.
    pub fn partitioned(&self) -> Option<usize> {
        self.members.iter().position(|m| m.partitioned)
    }

    /// Cuts every client connection to every server (`ss -K`): the workers' sessions lose their connection at once.
    pub fn kill_client_connections(&self) -> io::Result<usize> {
        let mut killed = 0;
        for m in &self.members {
            let out = Command::new("ss")
                .args(["-K", "-t", "-H", "-n"])
                .arg(format!("dst {}", m.ip))
                .arg(format!("dport = :{}", m.client))
                .output()
                .map_err(|e| other(format!("cannot run ss: {e}")))?;
            if !out.status.success() {
                return Err(other(format!(
                    "ss -K: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            killed += String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| !l.trim().is_empty())
                .count();
        }
        Ok(killed)
    }

    /// Server `i`'s mode, from its `srvr` reply (an error when it does not answer or does not serve).
    pub fn mode(&self, i: usize) -> io::Result<Mode> {
        let m = &self.members[i];
        parse_mode(&four_letter(m.ip, m.client, "srvr")?)
    }

    /// The server that leads now: the one healthy server that says `leader`, with at least one healthy server
    /// saying `follower` (a leader that has lost its quorum may still say `leader` for a tick or two).
    pub fn leader(&self) -> io::Result<usize> {
        let modes: Vec<(usize, Mode)> = (0..self.members.len())
            .filter(|&i| self.healthy(i))
            .filter_map(|i| self.mode(i).ok().map(|m| (i, m)))
            .collect();
        let leaders: Vec<usize> = modes
            .iter()
            .filter(|(_, m)| *m == Mode::Leader)
            .map(|(i, _)| *i)
            .collect();
        let followers = modes.iter().filter(|(_, m)| *m == Mode::Follower).count();
        match (leaders.as_slice(), followers) {
            ([l], 1..) => Ok(*l),
            ([], _) => Err(other("no server answers as the leader".into())),
            ([_], 0) => Err(other("the leader has no follower".into())),
            _ => Err(other(format!("several servers say leader: {leaders:?}"))),
        }
    }

    /// Copies every server's data folder (snapshots, transaction logs, epochs, `myid`) into `to/m0..m2`, with
    /// every server stopped meanwhile (`SIGSTOP`), so the copy is the image a crash of the whole ensemble at that
    /// instant would leave.
    pub fn snapshot(&mut self, to: &Path) -> io::Result<()> {
        if to.exists() {
            fs::remove_dir_all(to)?;
        }
        fs::create_dir_all(to)?;
        let stopped: Vec<usize> = (0..self.members.len())
            .filter(|&i| self.running(i) && !self.members[i].paused)
            .collect();
        let mut r = Ok(());
        for &i in &stopped {
            if r.is_ok() {
                r = self.pause(i, true);
            }
        }
        for i in 0..self.members.len() {
            if r.is_ok() && self.data(i).exists() {
                r = copy_tree(&self.data(i), &to.join(format!("m{i}")));
            }
        }
        // Every server stopped here runs again, whatever failed.
        for &i in &stopped {
            let resumed = self.pause(i, false);
            if r.is_ok() {
                r = resumed;
            }
        }
        r
    }

    /// Replaces every server's data folder with the copy made by [`snapshot`](Self::snapshot). Every server must
    /// be stopped.
    pub fn restore(&self, from: &Path) -> io::Result<()> {
        if self.members.iter().any(|m| m.child.is_some()) {
            return Err(other("restore needs every server stopped".into()));
        }
        for i in 0..self.members.len() {
            let data = self.data(i);
            if data.exists() {
                fs::remove_dir_all(&data)?;
            }
            copy_tree(&from.join(format!("m{i}")), &data)?;
        }
        Ok(())
    }

    /// Heals a partition, if any (the end of a run, a restore).
    pub fn heal_partition(&mut self) {
        if let Some(i) = self.partitioned() {
            let _ = self.partition(i, false);
        }
    }
}

impl Drop for ZookeeperEnsemble {
    fn drop(&mut self) {
        if let PartitionMethod::Nft(table) = &self.method {
            if self.members.iter().any(|m| m.partitioned) {
                let _ = nft(&format!("delete table inet {table}\n"));
            }
            let _ = nft(&format!("delete table inet {table}_mark\n"));
        }
        self.stop(Stop::Kill);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usable() -> bool {
        Path::new(JAR).exists() && Command::new("java").arg("-version").output().is_ok()
    }

    fn new_leader(c: &ZookeeperEnsemble, old: usize) -> usize {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match c.leader() {
                Ok(l) if l != old => return l,
                _ => assert!(Instant::now() < deadline, "no new leader within 30 s"),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    #[test]
    fn a_srvr_reply_gives_the_mode() {
        let reply = "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nZxid: 0x100000000\nMode: leader\nNode count: 5\n";
        assert_eq!(parse_mode(reply).unwrap(), Mode::Leader);
        assert_eq!(
            parse_mode(&reply.replace("leader", "follower")).unwrap(),
            Mode::Follower
        );
        assert!(parse_mode("This ZooKeeper instance is not currently serving requests\n").is_err());
    }

    /// Needs Java and Debian's `zookeeper` (`.ci/chaos.sh` installs it). A killed leader is replaced, and comes
    /// back as a follower on its own data.
    #[test]
    fn a_killed_leader_is_replaced_and_rejoins() {
        if !usable() {
            eprintln!("skipped: needs `java` and {JAR}");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut c = ZookeeperEnsemble::new(dir.path()).unwrap();
        c.start().unwrap();
        assert!(c.url().starts_with("zookeeper://127.0.0.2:"));
        let old = c.leader().unwrap();
        c.stop_member(old, Stop::Kill).unwrap();
        let new = new_leader(&c, old);
        assert_ne!(new, old);
        c.start_member(old).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while c.mode(old).ok() != Some(Mode::Follower) {
            assert!(
                Instant::now() < deadline,
                "the restarted server never followed"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(dir.path().join("m0/data/version-2").exists());
        c.stop(Stop::Kill);
    }

    /// Needs `nft` and root as well. A cut-off leader loses its followers (its own connections to them are cut
    /// too), the others elect one of themselves, and the healed server serves again.
    #[test]
    fn a_partitioned_leader_is_cut_off_and_the_others_elect_another() {
        if !usable() || !nft_usable() {
            eprintln!("skipped: needs `java`, {JAR}, `nft` and root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut c = ZookeeperEnsemble::new(dir.path()).unwrap();
        assert!(matches!(c.partition_method(), PartitionMethod::Nft(_)));
        c.start().unwrap();
        let old = c.leader().unwrap();
        c.partition(old, true).unwrap();
        let new = new_leader(&c, old);
        assert_ne!(new, old);
        assert!(c.mode(old).is_err(), "the partitioned server still answers");
        c.partition(old, false).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while c.mode(old).ok() != Some(Mode::Follower) {
            assert!(
                Instant::now() < deadline,
                "the healed server never followed again"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        c.stop(Stop::Kill);
    }
}
