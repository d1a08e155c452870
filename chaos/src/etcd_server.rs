//! A private 3-member etcd cluster for a run: Debian's `etcd` (package `etcd-server`), one member on each of
//! 127.0.0.2, 127.0.0.3 and 127.0.0.4 (free ports, data folders in the run folder), each the harness's child in a
//! process group of its own. Nothing here touches an etcd on 127.0.0.1.
//!
//! A partition drops a member's loopback traffic with nftables tables of the harness's own (`nft`, as root): every
//! packet to or from the member's address, and every packet of the connections the member opened itself (they
//! leave from 127.0.0.1, so they are told apart by the member's user id: as root, each member runs under a uid of
//! its own, and a table kept for the whole run marks each connection with the uid that opened it). Without `nft` or
//! root, a partition is emulated by `SIGSTOP` of the member, and the run says so.

use crate::redis_server::Stop;
use etcd_client::{Client, ConnectOptions};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::fs;
use std::io::{self, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The members' addresses; never 127.0.0.1, where the shared test server runs. The ZooKeeper ensemble uses them too.
pub(crate) const ADDRESSES: [&str; 3] = ["127.0.0.2", "127.0.0.3", "127.0.0.4"];

/// The first of the uids the members run under when the harness is root (one each; no user entry is needed).
const FIRST_UID: u32 = 64_230;

/// How long a start (of the cluster: until a leader answers) may take.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long one status question to one member may take.
const STATUS_TIMEOUT: Duration = Duration::from_millis(1_500);

fn other(msg: String) -> io::Error {
    io::Error::other(msg)
}

/// How a partition is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionMethod {
    /// An nftables table of this name, dropping the member's traffic.
    Nft(String),
    /// `SIGSTOP` of the member (no packet filter can be used).
    Sigstop,
}

#[derive(Debug)]
struct Member {
    name: String,
    ip: &'static str,
    client: u16,
    peer: u16,
    uid: Option<u32>,
    child: Option<Child>,
    paused: bool,
    partitioned: bool,
}

/// The cluster. Dropping it kills every member and removes the packet filter's table.
#[derive(Debug)]
pub struct EtcdCluster {
    dir: PathBuf,
    token: String,
    members: Vec<Member>,
    method: PartitionMethod,
}

/// A free port on `ip`.
pub(crate) fn free_port_on(ip: &str) -> io::Result<u16> {
    Ok(TcpListener::bind((ip, 0))?.local_addr()?.port())
}

/// Whether `nft` works here (installed, and allowed to change the ruleset).
pub(crate) fn nft_usable() -> bool {
    nix::unistd::geteuid().is_root()
        && Command::new("nft")
            .args(["list", "tables"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

pub(crate) fn nft(script: &str) -> io::Result<()> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| other(format!("cannot run nft: {e}")))?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(script.as_bytes())?;
    let out = child.wait_with_output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(other(format!(
            "nft: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

impl EtcdCluster {
    /// A cluster with its data in `dir/m0..m2`, not started. `token` tells it from any other cluster.
    pub fn new(dir: &Path, token: &str) -> io::Result<Self> {
        fs::create_dir_all(dir)?;
        let method = if nft_usable() {
            PartitionMethod::Nft(format!("cosid_chaos_{}", std::process::id()))
        } else {
            PartitionMethod::Sigstop
        };
        let mut members = Vec::new();
        for (i, ip) in ADDRESSES.into_iter().enumerate() {
            let uid = matches!(method, PartitionMethod::Nft(_)).then_some(FIRST_UID + i as u32);
            let home = dir.join(format!("m{i}"));
            fs::create_dir_all(&home)?;
            if let Some(uid) = uid {
                std::os::unix::fs::chown(&home, Some(uid), Some(uid))?;
            }
            members.push(Member {
                name: format!("m{i}"),
                ip,
                client: free_port_on(ip)?,
                peer: free_port_on(ip)?,
                uid,
                child: None,
                paused: false,
                partitioned: false,
            });
        }
        if let PartitionMethod::Nft(table) = &method {
            // Every connection a member opens carries its uid as conntrack mark, both ways, from the start.
            let rules: String = members
                .iter()
                .filter_map(|m| m.uid)
                .map(|u| format!("    ct state new meta skuid {u} ct mark set {u}\n"))
                .collect();
            nft(&format!(
                "table inet {table}_mark {{\n  chain out {{\n    type filter hook output priority -10; policy accept;\n{rules}  }}\n}}\n"
            ))?;
        }
        Ok(Self {
            dir: dir.to_owned(),
            token: token.to_owned(),
            members,
            method,
        })
    }

    /// How partitions are made in this run.
    pub fn partition_method(&self) -> &PartitionMethod {
        &self.method
    }

    /// The URL workers use: every member.
    pub fn url(&self) -> String {
        format!("etcd://{}", self.endpoints().join(","))
    }

    fn endpoints(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| format!("{}:{}", m.ip, m.client))
            .collect()
    }

    /// How many members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    fn data(&self, i: usize) -> PathBuf {
        self.dir.join(format!("m{i}")).join("data")
    }

    /// Starts every member that is not running, then waits until a leader answers.
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
                            "etcd member {} exited at start ({status}); see {}",
                            m.name,
                            self.dir.join(format!("{}.log", m.name)).display()
                        )));
                    }
                }
            }
            if Instant::now() >= deadline {
                return Err(other(format!(
                    "the etcd cluster had no leader within {START_TIMEOUT:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Starts member `i` (its data folder decides whether it joins as new or restarts).
    pub fn start_member(&mut self, i: usize) -> io::Result<()> {
        if self.members[i].child.is_some() {
            return Err(other(format!(
                "etcd member {} is already running",
                self.members[i].name
            )));
        }
        let initial = self
            .members
            .iter()
            .map(|m| format!("{}=http://{}:{}", m.name, m.ip, m.peer))
            .collect::<Vec<_>>()
            .join(",");
        let m = &self.members[i];
        let log = fs::File::options()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("{}.log", m.name)))?;
        let client = format!("http://{}:{}", m.ip, m.client);
        let peer = format!("http://{}:{}", m.ip, m.peer);
        let mut cmd = Command::new("etcd");
        cmd.args(["--name", &m.name])
            .arg("--data-dir")
            .arg(self.data(i))
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &initial])
            .args(["--initial-cluster-state", "new"])
            .args(["--initial-cluster-token", &self.token])
            // etcd's defaults, written out: a write is committed once a majority has it on disk (fsync on).
            .args(["--heartbeat-interval", "100", "--election-timeout", "1000"])
            .args(["--logger", "zap", "--log-outputs", "stderr"])
            .current_dir(self.dir.join(&m.name))
            // Its own process group: a fault reaches the member alone, and Ctrl-C only the harness.
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        if let Some(uid) = m.uid {
            cmd.uid(uid).gid(uid).env("HOME", self.dir.join(&m.name));
        }
        let child = cmd.spawn().map_err(|e| {
            other(format!(
                "cannot start etcd (install Debian's etcd-server): {e}"
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

    /// Whether member `i` runs, is not stopped and not partitioned (a fault can target it, a question reach it).
    pub fn healthy(&self, i: usize) -> bool {
        let m = &self.members[i];
        m.child.is_some() && !m.paused && !m.partitioned
    }

    /// Whether member `i` runs.
    pub fn running(&self, i: usize) -> bool {
        self.members[i].child.is_some()
    }

    /// Stops member `i` (`Kill`: `SIGKILL`, a crash; `Term`: `SIGTERM`) and waits for it to exit.
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

    /// Stops every member.
    pub fn stop(&mut self, how: Stop) {
        for i in 0..self.members.len() {
            let _ = self.stop_member(i, how);
        }
    }

    /// `SIGSTOP` (or, `false`, `SIGCONT`) member `i`: a member that hangs.
    pub fn pause(&mut self, i: usize, stopped: bool) -> io::Result<()> {
        let Some(pgid) = self.pid(i) else {
            return Err(other(format!(
                "etcd member {} is not running",
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

    /// Cuts member `i` off (or, `false`, heals it): its loopback traffic dropped by the packet filter, or, where
    /// none can be used, the member stopped with `SIGSTOP`.
    pub fn partition(&mut self, i: usize, cut: bool) -> io::Result<()> {
        match self.method.clone() {
            PartitionMethod::Nft(table) => {
                if cut {
                    let m = &self.members[i];
                    let uid = m.uid.expect("members run under their own uid with nft");
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

    /// Whether a member is partitioned now.
    pub fn partitioned(&self) -> Option<usize> {
        self.members.iter().position(|m| m.partitioned)
    }

    /// Cuts every client connection to every member (`ss -K`): the workers' connections, torn down at once.
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

    /// Member `i`'s answer to `Status`: (its id, the leader's id).
    fn status_of(&self, rt: &tokio::runtime::Runtime, i: usize) -> io::Result<(u64, u64)> {
        let ep = self.endpoints().swap_remove(i);
        let status = rt.block_on(async {
            tokio::time::timeout(STATUS_TIMEOUT, async {
                let opts = ConnectOptions::new()
                    .with_connect_timeout(STATUS_TIMEOUT)
                    .with_timeout(STATUS_TIMEOUT);
                let mut c = Client::connect([ep], Some(opts)).await?;
                c.status().await
            })
            .await
        });
        match status {
            Ok(Ok(s)) => match s.header() {
                Some(h) => Ok((h.member_id(), s.leader())),
                None => Err(other("a status without a header".into())),
            },
            Ok(Err(e)) => Err(other(e.to_string())),
            Err(_) => Err(other(format!("no status within {STATUS_TIMEOUT:?}"))),
        }
    }

    /// The leader's id as member `i` sees it (it must answer).
    #[cfg(test)]
    fn leader_seen_by(&self, i: usize) -> io::Result<u64> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        self.status_of(&rt, i).map(|(_, leader)| leader)
    }

    /// The member that is leader now, as the healthy members see it.
    pub fn leader(&self) -> io::Result<usize> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let mut seen = Vec::new();
        for i in 0..self.members.len() {
            if !self.healthy(i) {
                continue;
            }
            if let Ok((id, leader)) = self.status_of(&rt, i) {
                seen.push((i, id, leader));
            }
        }
        seen.iter()
            .find(|(_, id, _)| seen.iter().any(|(_, _, leader)| leader == id && *id != 0))
            .map(|(i, _, _)| *i)
            .ok_or_else(|| other("no member answers as the leader".into()))
    }

    /// Copies every member's data folder into `to/m0..m2`, with every member stopped meanwhile (`SIGSTOP`), so the
    /// copy is the image a crash of the whole cluster at that instant would leave.
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
        // Every member stopped here runs again, whatever failed.
        for &i in &stopped {
            let resumed = self.pause(i, false);
            if r.is_ok() {
                r = resumed;
            }
        }
        r
    }

    /// Replaces every member's data folder with the copy made by [`snapshot`](Self::snapshot). Every member must
    /// be stopped.
    pub fn restore(&self, from: &Path) -> io::Result<()> {
        if self.members.iter().any(|m| m.child.is_some()) {
            return Err(other("restore needs every member stopped".into()));
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

    /// Removes every member's data folder (etcd preallocates 64 MB of WAL a member: a run folder would keep about
    /// 200 MB, and each negative round as much again); the members' logs stay. Every member must be stopped.
    pub fn discard_data(&self) -> io::Result<()> {
        if self.members.iter().any(|m| m.child.is_some()) {
            return Err(other(
                "discarding the data needs every member stopped".into(),
            ));
        }
        for i in 0..self.members.len() {
            let data = self.data(i);
            if data.exists() {
                fs::remove_dir_all(&data)?;
            }
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

/// `cp -a`: ownership and modes kept (etcd wants its data folder private).
pub(crate) fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    let status = Command::new("cp").arg("-a").arg(from).arg(to).status()?;
    if status.success() {
        Ok(())
    } else {
        Err(other(format!(
            "cp -a {} {}: {status}",
            from.display(),
            to.display()
        )))
    }
}

impl Drop for EtcdCluster {
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

    /// Needs Debian's `etcd-server` and, for the packet filter, `nft` and root (`.ci/chaos.sh` has both).
    #[test]
    fn a_partitioned_leader_is_cut_off_and_the_others_elect_another() {
        if Command::new("etcd").arg("--version").output().is_err() || !nft_usable() {
            eprintln!("skipped: needs `etcd`, `nft` and root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut c = EtcdCluster::new(dir.path(), "partition-test").unwrap();
        assert!(matches!(c.partition_method(), PartitionMethod::Nft(_)));
        c.start().unwrap();
        let old = c.leader().unwrap();
        c.partition(old, true).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let new = loop {
            // Asks the two members still reachable; they answer once they have elected one of themselves.
            match c.leader() {
                Ok(l) if l != old => break l,
                _ => assert!(Instant::now() < deadline, "no new leader within 30 s"),
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        assert_ne!(new, old);
        // The cut-off member answers nobody.
        c.members[old].partitioned = false;
        assert!(
            c.leader_seen_by(old).is_err(),
            "the partitioned member still answers"
        );
        c.members[old].partitioned = true;
        c.partition(old, false).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while c.leader_seen_by(old).is_err() {
            assert!(
                Instant::now() < deadline,
                "the healed member never answered again"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        c.stop(Stop::Kill);
    }
}
