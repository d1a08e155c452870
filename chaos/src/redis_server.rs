//! A `redis-server` the harness owns: started on 127.0.0.1 with a data folder of its own, stopped with `SIGTERM`
//! or `SIGKILL`, restarted on the same port and data, paused, its connections dropped, its data copied and
//! restored.

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::fs;
use std::io;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a start may take before it counts as failed.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// How long a `SIGTERM` shutdown may take before the server is killed.
const TERM_TIMEOUT: Duration = Duration::from_secs(10);

/// A Redis server process and its data.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    appendfsync: &'static str,
    child: Option<Child>,
    starts: u32,
}

/// How a server is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// `SIGTERM`: Redis flushes its AOF and exits.
    Term,
    /// `SIGKILL`: a crash.
    Kill,
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn other(msg: String) -> io::Error {
    io::Error::other(msg)
}

impl RedisServer {
    /// A server on a free port with its data in `dir`, not started yet. `appendfsync` is `always` (the setting the
    /// safety claim needs) or `everysec` (the negative control's).
    pub fn new(dir: &Path, appendfsync: &'static str) -> io::Result<Self> {
        fs::create_dir_all(dir)?;
        Ok(Self {
            port: free_port()?,
            dir: dir.to_owned(),
            appendfsync,
            child: None,
            starts: 0,
        })
    }

    /// The URL workers connect to.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Starts the server and waits until it answers `PING` (its AOF loaded).
    pub fn start(&mut self) -> io::Result<()> {
        if self.child.is_some() {
            return Err(other("redis-server is already running".into()));
        }
        let log = fs::File::options()
            .create(true)
            .append(true)
            .open(self.dir.join("redis.log"))?;
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port"])
            .arg(self.port.to_string())
            .arg("--dir")
            .arg(&self.dir)
            .args(["--appendonly", "yes", "--appendfsync", self.appendfsync])
            .args(["--maxmemory-policy", "noeviction", "--save", ""])
            // No background rewrite: the data folder then changes only by appends, so a copy of it is consistent.
            .args(["--auto-aof-rewrite-percentage", "0"])
            .args(["--daemonize", "no", "--protected-mode", "yes"])
            // Out of the terminal's process group: Ctrl-C goes to the harness, which stops the server itself.
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| other(format!("cannot start redis-server (is it installed?): {e}")))?;
        self.child = Some(child);
        self.starts += 1;
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if self.ping().is_ok() {
                return Ok(());
            }
            if let Some(c) = self.child.as_mut() {
                if let Some(status) = c.try_wait()? {
                    self.child = None;
                    return Err(other(format!(
                        "redis-server exited at start ({status}); see {}",
                        self.dir.join("redis.log").display()
                    )));
                }
            }
            if Instant::now() >= deadline {
                return Err(other(format!(
                    "redis-server on port {} did not answer within {START_TIMEOUT:?}",
                    self.port
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the server and waits for it to exit. A `SIGTERM` that takes too long ends in a `SIGKILL`.
    pub fn stop(&mut self, how: Stop) -> io::Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let pid = Pid::from_raw(child.id() as i32);
        let sig = match how {
            Stop::Term => Signal::SIGTERM,
            Stop::Kill => Signal::SIGKILL,
        };
        // A server stopped by SIGSTOP would never act on SIGTERM; the harness never stops Redis, but be sure.
        let _ = kill(pid, Signal::SIGCONT);
        kill(pid, sig).map_err(|e| other(format!("kill -{sig} redis-server: {e}")))?;
        let deadline = Instant::now() + TERM_TIMEOUT;
        loop {
            if child.try_wait()?.is_some() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let _ = kill(pid, Signal::SIGKILL);
                child.wait()?;
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A plain connection with short timeouts, for the harness's own commands.
    fn connection(&self) -> io::Result<redis::Connection> {
        let client = redis::Client::open(self.url()).map_err(|e| other(e.to_string()))?;
        let conn = client
            .get_connection_with_timeout(Duration::from_secs(1))
            .map_err(|e| other(format!("connect to redis: {e}")))?;
        conn.set_read_timeout(Some(Duration::from_secs(2)))
            .map_err(|e| other(e.to_string()))?;
        conn.set_write_timeout(Some(Duration::from_secs(2)))
            .map_err(|e| other(e.to_string()))?;
        Ok(conn)
    }

    fn command(&self, args: &[&str]) -> io::Result<redis::Value> {
        let mut conn = self.connection()?;
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        cmd.query::<redis::Value>(&mut conn)
            .map_err(|e| other(format!("redis {}: {e}", args.join(" "))))
    }

    /// `PING`.
    pub fn ping(&self) -> io::Result<()> {
        self.command(&["PING"]).map(|_| ())
    }

    /// `CLIENT PAUSE <ms> ALL`: every client's commands wait until the pause ends.
    pub fn pause_clients(&self, ms: u64) -> io::Result<()> {
        self.command(&["CLIENT", "PAUSE", &ms.to_string(), "ALL"])
            .map(|_| ())
    }

    /// `CLIENT UNPAUSE`.
    pub fn unpause_clients(&self) -> io::Result<()> {
        self.command(&["CLIENT", "UNPAUSE"]).map(|_| ())
    }

    /// `CLIENT KILL TYPE normal`: drops every client connection but the harness's own. Returns how many.
    pub fn kill_clients(&self) -> io::Result<i64> {
        match self.command(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"])? {
            redis::Value::Int(n) => Ok(n),
            v => Err(other(format!("CLIENT KILL answered {v:?}"))),
        }
    }

    /// Copies the data folder's AOF files into `to` (replacing what is there): an older copy to restore later.
    pub fn snapshot(&self, to: &Path) -> io::Result<()> {
        if to.exists() {
            fs::remove_dir_all(to)?;
        }
        copy_dir(&self.dir.join("appendonlydir"), &to.join("appendonlydir"))
    }

    /// Replaces the data folder's AOF files with a copy made by [`snapshot`](Self::snapshot). The server must be
    /// stopped.
    pub fn restore(&self, from: &Path) -> io::Result<()> {
        if self.child.is_some() {
            return Err(other("restore needs the server stopped".into()));
        }
        let aof = self.dir.join("appendonlydir");
        if aof.exists() {
            fs::remove_dir_all(&aof)?;
        }
        copy_dir(&from.join("appendonlydir"), &aof)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.stop(Stop::Kill);
    }
}

fn copy_dir(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}
