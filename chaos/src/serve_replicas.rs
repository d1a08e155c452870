//! `cosid serve` replicas the harness owns, in front of one store (an SQLite file), and a round-robin TCP proxy in
//! front of them: the workers' `http://` store names the proxy, and each new connection goes to the next replica
//! that answers, so a holder's renewals go through whichever replica its connection reaches (a new one after every
//! replica crash, pause timeout or connection cut), as behind a load balancer.

use crate::redis_server::{free_port, Stop};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the first start of a replica may take before it counts as failed.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// How long a `SIGTERM` shutdown (the server drains its requests) may take before the replica is killed.
const TERM_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the proxy waits to connect to one replica before it tries the next.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);

/// The `cosid` binary: `COSID_BIN` (as the other CI scripts take it), else `cosid` beside the harness's own binary
/// (`target/release/cosid` beside `target/release/cosid-chaos`).
pub fn cosid_binary() -> io::Result<PathBuf> {
    if let Some(p) = std::env::var_os("COSID_BIN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe()?;
    let beside = exe.with_file_name("cosid");
    if beside.is_file() {
        Ok(beside)
    } else {
        Err(io::Error::other(format!(
            "no cosid binary at {} (build it with `cargo build -p cosid-cli` in the same profile, or set COSID_BIN)",
            beside.display()
        )))
    }
}

/// One `cosid serve` process on a fixed port.
#[derive(Debug)]
struct Replica {
    port: u16,
    child: Option<Child>,
    paused: bool,
    starts: u32,
}

/// The replicas, their store and the proxy.
#[derive(Debug)]
pub struct ServeReplicas {
    dir: PathBuf,
    cosid: PathBuf,
    store_url: String,
    replicas: Vec<Replica>,
    proxy: Proxy,
}

impl ServeReplicas {
    /// Starts `n` replicas of `cosid serve` on free ports with `store_url` as their store, logs in `dir`, and the
    /// proxy in front of them; returns once every replica accepts connections.
    pub fn start(dir: &Path, store_url: &str, n: usize) -> io::Result<Self> {
        fs::create_dir_all(dir)?;
        let cosid = cosid_binary()?;
        let mut replicas = Vec::with_capacity(n);
        for _ in 0..n {
            replicas.push(Replica {
                port: free_port()?,
                child: None,
                paused: false,
                starts: 0,
            });
        }
        let ports: Vec<u16> = replicas.iter().map(|r| r.port).collect();
        let mut this = Self {
            dir: dir.to_owned(),
            cosid,
            store_url: store_url.to_owned(),
            replicas,
            proxy: Proxy::start(ports)?,
        };
        for r in 0..n {
            this.start_replica(r)?;
        }
        let deadline = Instant::now() + START_TIMEOUT;
        for r in 0..n {
            let addr = this.addr(r);
            while TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT).is_err() {
                if let Some(status) = this.exited(r) {
                    return Err(io::Error::other(format!(
                        "cosid serve replica {r} exited at start ({status}): see {}",
                        this.stderr_path(r).display()
                    )));
                }
                if Instant::now() > deadline {
                    return Err(io::Error::other(format!(
                        "cosid serve replica {r} did not listen on {addr} within {START_TIMEOUT:?}"
                    )));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(this)
    }

    /// The store URL the workers use: the proxy.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.proxy.port)
    }

    /// How many replicas.
    pub fn len(&self) -> usize {
        self.replicas.len()
    }

    /// Whether replica `r` runs and is not stopped.
    pub fn healthy(&self, r: usize) -> bool {
        self.replicas[r].child.is_some() && !self.replicas[r].paused
    }

    fn addr(&self, r: usize) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.replicas[r].port))
    }

    fn stderr_path(&self, r: usize) -> PathBuf {
        self.dir.join(format!("serve-{r}.stderr"))
    }

    /// Starts replica `r` on its port (again, after a stop); does not wait for it to listen.
    pub fn start_replica(&mut self, r: usize) -> io::Result<()> {
        if self.replicas[r].child.is_some() {
            return Err(io::Error::other(format!(
                "cosid serve replica {r} is already running"
            )));
        }
        let append = |p: PathBuf| OpenOptions::new().create(true).append(true).open(p);
        let stdout = append(self.dir.join(format!("serve-{r}.stdout")))?;
        let stderr: File = append(self.stderr_path(r))?;
        let child = Command::new(&self.cosid)
            .arg("serve")
            .args(["--listen", &self.addr(r).to_string()])
            .env("COSID_STORE", &self.store_url)
            // Its own process group: a terminal's Ctrl-C reaches the harness, which stops it in order.
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()?;
        let rep = &mut self.replicas[r];
        rep.child = Some(child);
        rep.paused = false;
        rep.starts += 1;
        Ok(())
    }

    /// Stops replica `r`: `SIGKILL` (a crash), or `SIGTERM` (it drains its requests; killed after
    /// [`TERM_TIMEOUT`]).
    pub fn stop_replica(&mut self, r: usize, how: Stop) -> io::Result<()> {
        let rep = &mut self.replicas[r];
        let Some(mut child) = rep.child.take() else {
            return Ok(());
        };
        let pid = Pid::from_raw(child.id() as i32);
        let sig = match how {
            Stop::Kill => Signal::SIGKILL,
            Stop::Term => Signal::SIGTERM,
        };
        let _ = kill(pid, sig);
        if rep.paused {
            let _ = kill(pid, Signal::SIGCONT);
            rep.paused = false;
        }
        let deadline = Instant::now() + TERM_TIMEOUT;
        loop {
            match child.try_wait()? {
                Some(_) => return Ok(()),
                None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                None => {
                    let _ = kill(pid, Signal::SIGKILL);
                    child.wait()?;
                    return Ok(());
                }
            }
        }
    }

    /// `SIGSTOP` (`true`) or `SIGCONT` (`false`) replica `r`.
    pub fn pause(&mut self, r: usize, stop: bool) -> io::Result<()> {
        let rep = &mut self.replicas[r];
        let Some(child) = &rep.child else {
            return Err(io::Error::other(format!(
                "cosid serve replica {r} is not running"
            )));
        };
        let sig = if stop {
            Signal::SIGSTOP
        } else {
            Signal::SIGCONT
        };
        kill(Pid::from_raw(child.id() as i32), sig)
            .map_err(|e| io::Error::other(format!("kill -{sig} replica {r}: {e}")))?;
        rep.paused = stop;
        Ok(())
    }

    /// The exit status of replica `r` if it exited by itself (it is then marked stopped).
    pub fn exited(&mut self, r: usize) -> Option<String> {
        let rep = &mut self.replicas[r];
        let status = rep.child.as_mut()?.try_wait().ok()??;
        rep.child = None;
        rep.paused = false;
        Some(status.to_string())
    }

    /// Cuts every connection through the proxy (client and replica side); returns how many.
    pub fn drop_connections(&self) -> usize {
        self.proxy.drop_all()
    }

    /// For each replica: the connections the proxy opened to it, its starts, and the renewals it answered with
    /// 200 (from its access log): `r0:connections=N:starts=N:renewals=N,...`.
    pub fn summary(&self) -> String {
        let conns = self.proxy.counts();
        self.replicas
            .iter()
            .enumerate()
            .map(|(r, rep)| {
                let renewals = fs::read_to_string(self.stderr_path(r)).map_or(0, |log| {
                    log.lines()
                        .filter(|l| l.contains("/renew\" status=200"))
                        .count()
                });
                format!(
                    "r{r}:connections={}:starts={}:renewals={renewals}",
                    conns.get(&r).copied().unwrap_or(0),
                    rep.starts
                )
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Stops every replica (`SIGTERM`) and the proxy.
    pub fn stop(&mut self) {
        for r in 0..self.replicas.len() {
            let _ = self.stop_replica(r, Stop::Term);
        }
        self.proxy.stop();
    }
}

impl Drop for ServeReplicas {
    fn drop(&mut self) {
        for r in 0..self.replicas.len() {
            let _ = self.stop_replica(r, Stop::Kill);
        }
        self.proxy.stop();
    }
}

/// What the proxy's threads share.
#[derive(Debug)]
struct Shared {
    upstreams: Vec<u16>,
    next: AtomicUsize,
    stop: AtomicBool,
    ids: AtomicU64,
    /// Open connections, by id: the client's socket and the replica's (for [`Proxy::drop_all`]).
    open: Mutex<BTreeMap<u64, (TcpStream, TcpStream)>>,
    /// Connections opened to each replica.
    counts: Mutex<BTreeMap<usize, u64>>,
}

/// A round-robin TCP proxy on a free port of 127.0.0.1: one thread accepts, two threads copy each connection.
#[derive(Debug)]
struct Proxy {
    port: u16,
    shared: Arc<Shared>,
}

impl Proxy {
    fn start(upstreams: Vec<u16>) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared {
            upstreams,
            next: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            ids: AtomicU64::new(0),
            open: Mutex::default(),
            counts: Mutex::default(),
        });
        let s = shared.clone();
        std::thread::Builder::new()
            .name("proxy-accept".into())
            .spawn(move || {
                for client in listener.incoming() {
                    if s.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let s = s.clone();
                    let _ = std::thread::Builder::new()
                        .name("proxy-conn".into())
                        .spawn(move || forward(&s, client));
                }
            })?;
        Ok(Self { port, shared })
    }

    fn drop_all(&self) -> usize {
        let open = self.shared.open.lock().unwrap_or_else(|e| e.into_inner());
        for (a, b) in open.values() {
            let _ = a.shutdown(Shutdown::Both);
            let _ = b.shutdown(Shutdown::Both);
        }
        open.len()
    }

    fn counts(&self) -> BTreeMap<usize, u64> {
        self.shared
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn stop(&self) {
        if !self.shared.stop.swap(true, Ordering::SeqCst) {
            // Wakes the accepting thread, which then sees the flag.
            let _ = TcpStream::connect_timeout(
                &SocketAddr::from(([127, 0, 0, 1], self.port)),
                CONNECT_TIMEOUT,
            );
            self.drop_all();
        }
    }
}

/// Connects `client` to the next replica that accepts a connection, and copies both ways until either side ends.
fn forward(s: &Shared, client: TcpStream) {
    let n = s.upstreams.len();
    let mut upstream = None;
    for _ in 0..n {
        let r = s.next.fetch_add(1, Ordering::SeqCst) % n;
        let addr = SocketAddr::from(([127, 0, 0, 1], s.upstreams[r]));
        if let Ok(u) = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            upstream = Some((r, u));
            break;
        }
    }
    // No replica accepts (all restarting): the client sees its connection closed, and retries.
    let Some((r, upstream)) = upstream else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    *s.counts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(r)
        .or_default() += 1;
    let (Ok(c2), Ok(u2), Ok(c3), Ok(u3)) = (
        client.try_clone(),
        upstream.try_clone(),
        client.try_clone(),
        upstream.try_clone(),
    ) else {
        return;
    };
    let id = s.ids.fetch_add(1, Ordering::SeqCst);
    s.open
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, (c3, u3));
    let up = std::thread::Builder::new()
        .name("proxy-up".into())
        .spawn(move || {
            let (mut from, mut to) = (c2, u2);
            let _ = io::copy(&mut from, &mut to);
            let _ = to.shutdown(Shutdown::Write);
        });
    let (mut from, mut to) = (&upstream, &client);
    let _ = io::copy(&mut from, &mut to);
    let _ = client.shutdown(Shutdown::Both);
    let _ = upstream.shutdown(Shutdown::Both);
    if let Ok(t) = up {
        let _ = t.join();
    }
    s.open.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
}
