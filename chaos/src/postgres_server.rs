//! A private PostgreSQL server for a run: `initdb` into the run folder, `postgres` in the foreground as the
//! harness's child (its own process group, so a fault reaches the postmaster and every backend), on a free port of
//! 127.0.0.1. Debian's `postgresql` package provides the binaries (`/usr/lib/postgresql/<version>/bin`).

use crate::redis_server::{free_port, Stop};
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use std::fs;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a start (crash recovery included) may take before it is an error.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a fast shutdown may take before the server is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// The server. Dropping it kills it.
#[derive(Debug)]
pub struct PostgresServer {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    /// The `postgres` user's uid and gid when the harness runs as root (the server refuses to run as root).
    owner: Option<(u32, u32)>,
    child: Option<Child>,
    paused: bool,
}

fn other(msg: String) -> io::Error {
    io::Error::other(msg)
}

/// The newest `/usr/lib/postgresql/<version>/bin` that has `initdb`.
fn find_bin() -> io::Result<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| {
            other(format!(
                "no /usr/lib/postgresql ({e}): install Debian's postgresql package"
            ))
        })?
        .filter_map(|e| {
            let e = e.ok()?;
            let version: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, b)| b).ok_or_else(|| {
        other("no /usr/lib/postgresql/*/bin/initdb: install Debian's postgresql package".into())
    })
}

fn id_of(flag: &str) -> io::Result<u32> {
    let out = Command::new("id").args([flag, "postgres"]).output()?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| other(format!("no `postgres` user (id {flag} postgres failed)")))
}

impl PostgresServer {
    /// `initdb` a cluster in `dir/data` (superuser `cosid`, trust authentication on 127.0.0.1 only), not started.
    pub fn new(dir: &Path) -> io::Result<Self> {
        let bin = find_bin()?;
        fs::create_dir_all(dir)?;
        let owner = if nix::unistd::geteuid().is_root() {
            let ids = (id_of("-u")?, id_of("-g")?);
            std::os::unix::fs::chown(dir, Some(ids.0), Some(ids.1))?;
            Some(ids)
        } else {
            None
        };
        let this = Self {
            bin,
            dir: dir.to_owned(),
            port: free_port()?,
            owner,
            child: None,
            paused: false,
        };
        let out = this
            .command("initdb")
            .arg("-D")
            .arg(this.data())
            .args([
                "-U",
                "cosid",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-instructions",
            ])
            .output()?;
        if !out.status.success() {
            return Err(other(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(this)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// A command for one of the server's binaries, run as the `postgres` user when the harness is root.
    fn command(&self, name: &str) -> Command {
        let mut c = Command::new(self.bin.join(name));
        if let Some((uid, gid)) = self.owner {
            c.uid(uid).gid(gid);
        }
        c.current_dir(&self.dir);
        c
    }

    /// The URL workers connect to.
    pub fn url(&self) -> String {
        format!("postgres://cosid@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the server and waits until it answers a query (crash recovery done).
    pub fn start(&mut self) -> io::Result<()> {
        if self.child.is_some() {
            return Err(other("postgres is already running".into()));
        }
        let log = fs::File::options()
            .create(true)
            .append(true)
            .open(self.dir.join("postgres.log"))?;
        let child = self
            .command("postgres")
            .arg("-D")
            .arg(self.data())
            .args(["-p", &self.port.to_string()])
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "unix_socket_directories=",
            ])
            // Durable commits: the positive run's claim needs them.
            .args(["-c", "fsync=on", "-c", "synchronous_commit=on"])
            .args(["-c", "max_connections=60", "-c", "shared_buffers=16MB"])
            // Its own process group: a fault reaches the postmaster and every backend, and Ctrl-C only the harness.
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| other(format!("cannot start postgres: {e}")))?;
        self.child = Some(child);
        self.paused = false;
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if self.query("select 1").is_ok() {
                return Ok(());
            }
            if let Some(c) = self.child.as_mut() {
                if let Some(status) = c.try_wait()? {
                    self.child = None;
                    return Err(other(format!(
                        "postgres exited at start ({status}); see {}",
                        self.dir.join("postgres.log").display()
                    )));
                }
            }
            if Instant::now() >= deadline {
                return Err(other(format!(
                    "postgres on port {} did not answer within {START_TIMEOUT:?}",
                    self.port
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn group(&self) -> Option<Pid> {
        self.child.as_ref().map(|c| Pid::from_raw(c.id() as i32))
    }

    /// Stops the server: `Term` is a fast shutdown (`SIGINT`), `Kill` a crash of the postmaster and every backend
    /// (`SIGKILL` to the process group). Waits until every process of the group is gone, so a restart finds its
    /// shared memory free.
    pub fn stop(&mut self, how: Stop) -> io::Result<()> {
        let Some(pgid) = self.group() else {
            return Ok(());
        };
        let _ = killpg(pgid, Signal::SIGCONT);
        self.paused = false;
        match how {
            Stop::Term => {
                let _ = kill(pgid, Signal::SIGINT);
            }
            Stop::Kill => {
                let _ = killpg(pgid, Signal::SIGKILL);
            }
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        let mut child = self.child.take().expect("checked above");
        loop {
            let exited = child.try_wait()?.is_some();
            // Backends outlive a killed postmaster for a moment; the group is gone when no process is left in it.
            if exited && killpg(pgid, None).is_err() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let _ = killpg(pgid, Signal::SIGKILL);
                let _ = child.wait();
                std::thread::sleep(Duration::from_millis(200));
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `SIGSTOP` (or, `false`, `SIGCONT`) to the postmaster and every backend: a server that hangs.
    pub fn pause(&mut self, stopped: bool) -> io::Result<()> {
        let Some(pgid) = self.group() else {
            return Err(other("postgres is not running".into()));
        };
        let sig = if stopped {
            Signal::SIGSTOP
        } else {
            Signal::SIGCONT
        };
        killpg(pgid, sig).map_err(|e| other(format!("kill -{sig} -{pgid}: {e}")))?;
        self.paused = stopped;
        Ok(())
    }

    /// Runs one SQL statement with `psql`; returns its output.
    fn query(&self, sql: &str) -> io::Result<String> {
        let out = self
            .command("psql")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", "cosid", "-d", "postgres", "-X", "-A", "-t", "-c", sql])
            .env("PGCONNECT_TIMEOUT", "2")
            .stdin(Stdio::null())
            .output()?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        } else {
            Err(other(format!(
                "psql: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    }

    /// `pg_terminate_backend` on every client connection but this one: every worker's connection cut at once.
    pub fn terminate_backends(&self) -> io::Result<i64> {
        let n = self.query(
            "select count(pg_terminate_backend(pid)) from pg_stat_activity \
             where backend_type = 'client backend' and pid <> pg_backend_pid()",
        )?;
        n.parse()
            .map_err(|_| other(format!("pg_terminate_backend answered {n:?}")))
    }

    /// Copies the data folder into `to`, with every server process stopped meanwhile (`SIGSTOP`), so the copy is
    /// the image a crash at that instant would leave: the restore starts with crash recovery.
    pub fn snapshot(&mut self, to: &Path) -> io::Result<()> {
        if to.exists() {
            fs::remove_dir_all(to)?;
        }
        let was_paused = self.paused;
        if !was_paused {
            self.pause(true)?;
        }
        let r = copy_tree(&self.data(), to);
        if !was_paused {
            self.pause(false)?;
        }
        r
    }

    /// Replaces the data folder with a copy made by [`snapshot`](Self::snapshot). The server must be stopped.
    pub fn restore(&self, from: &Path) -> io::Result<()> {
        if self.child.is_some() {
            return Err(other("restore needs the server stopped".into()));
        }
        let data = self.data();
        if data.exists() {
            fs::remove_dir_all(&data)?;
        }
        copy_tree(from, &data)
    }
}

/// `cp -a`: ownership and modes kept (the server checks its data folder's).
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
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

impl Drop for PostgresServer {
    fn drop(&mut self) {
        let _ = self.stop(Stop::Kill);
    }
}
