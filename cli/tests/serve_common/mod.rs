//! A real `cosid serve` process for the tests: started on 127.0.0.1 on a free port, stopped with SIGTERM on drop.
#![allow(dead_code)]

use cosid::conformance::Target;
use cosid::lease::{Namespace, NamespaceRecord, Owner, SlotRecord};
use cosid::store::{HttpStore, LeaseStore};
use std::future::Future;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

/// A running `cosid serve`.
pub struct Serve {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    store: String,
    listen: String,
    extra: Vec<String>,
    /// Where its stderr (the log) goes, if not to the test's stderr.
    log: Option<std::path::PathBuf>,
}

impl Serve {
    /// Starts `cosid serve` in front of `store` with `extra` flags.
    pub fn start(store: &str, extra: &[&str]) -> Serve {
        Self::start_on(
            store,
            "127.0.0.1:0",
            extra.iter().map(|s| s.to_string()).collect(),
        )
    }

    /// As [`start`](Self::start), with the server's log (stderr) written to `log`.
    pub fn start_logged(store: &str, extra: &[&str], log: &std::path::Path) -> Serve {
        Self::start_full(
            store,
            "127.0.0.1:0",
            extra.iter().map(|s| s.to_string()).collect(),
            Some(log.to_owned()),
        )
    }

    fn start_on(store: &str, listen: &str, extra: Vec<String>) -> Serve {
        Self::start_full(store, listen, extra, None)
    }

    fn start_full(
        store: &str,
        listen: &str,
        extra: Vec<String>,
        log: Option<std::path::PathBuf>,
    ) -> Serve {
        let stderr = match &log {
            Some(path) => Stdio::from(std::fs::File::create(path).unwrap()),
            None => Stdio::inherit(),
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_cosid"))
            .arg("serve")
            .args(["--listen", listen])
            .args(&extra)
            .env("COSID_STORE", store)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("cosid serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .split("listening on ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("cosid serve did not print its address: {line:?}"))
            .to_owned();
        let listen = addr.rsplit('/').next().unwrap().to_owned();
        Serve {
            child,
            url: addr,
            store: store.to_owned(),
            listen,
            extra,
            log,
        }
    }

    /// Stops the server (SIGTERM) and waits for it; returns its exit status.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.child.wait().unwrap()
    }

    /// Kills the server (SIGKILL): nothing is released.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stops the server and starts it again on the same address and settings.
    pub fn restart(&mut self) {
        self.stop();
        *self = Self::start_full(
            &self.store,
            &self.listen,
            self.extra.clone(),
            self.log.clone(),
        );
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A store's conformance target behind a `cosid serve` of its own: the suite's store is the `http://` store on the
/// server, and raw records are written by the inner target, with the store's own client, behind the server's back.
/// The inner target's own store is never used, so the server is the only lease holder; its clock is the server's,
/// never a manual one.
pub struct Proxied<T> {
    store: Arc<HttpStore>,
    // Dropped before the inner target, which may own the server's data (an SQLite file).
    _serve: Serve,
    inner: T,
}

impl<T: Target> Proxied<T> {
    /// Starts `cosid serve` in front of `store_url`, the store `inner` writes raw records into.
    pub fn start(store_url: &str, inner: T) -> Proxied<T> {
        let serve = Serve::start(store_url, &[]);
        Proxied {
            store: Arc::new(HttpStore::open(&serve.url).unwrap()),
            _serve: serve,
            inner,
        }
    }
}

impl<T: Target> Target for Proxied<T> {
    fn store(&self) -> Arc<dyn LeaseStore> {
        self.store.clone()
    }

    fn put_raw(
        &self,
        namespace: &Namespace,
        record: &SlotRecord,
    ) -> impl Future<Output = ()> + Send {
        self.inner.put_raw(namespace, record)
    }

    fn put_old_namespace(
        &self,
        namespace: &Namespace,
        record: &NamespaceRecord,
    ) -> impl Future<Output = ()> + Send {
        self.inner.put_old_namespace(namespace, record)
    }

    fn stored_owner(&self, owner: &Owner) -> Owner {
        Owner {
            key: owner.key.clone(),
            incarnation: cosid::store::http::sealed_incarnation(&owner.incarnation),
        }
    }
}
