//! The store conformance suite through a real `cosid serve` in front of an SQLite file, with the `http://` store.

use cosid::conformance;
mod serve_common;

use cosid::lease::{Namespace, NamespaceRecord, SlotRecord};
use cosid::store::{HttpStore, LeaseStore};
use serve_common::Serve;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

struct Proxied {
    store: Arc<HttpStore>,
    path: PathBuf,
    _serve: Serve,
    _dir: tempfile::TempDir,
}

impl conformance::Target for Proxied {
    fn store(&self) -> Arc<dyn LeaseStore> {
        self.store.clone()
    }

    /// A plain SQL upsert into the file behind the server, as a hand edit would do it.
    async fn put_raw(&self, namespace: &Namespace, r: &SlotRecord) {
        let conn = rusqlite::Connection::open(&self.path).unwrap();
        conn.busy_timeout(Duration::from_secs(10)).unwrap();
        conn.execute(
            "INSERT OR REPLACE INTO cosid_slot (namespace, slot, owner_key, incarnation, last_owner_key, fence,
             expires_at, floor, ceiling, next_floor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            rusqlite::params![
                namespace.encoded(),
                r.slot,
                r.owner.as_ref().map(|o| o.key.clone()),
                r.owner.as_ref().map(|o| o.incarnation.to_string()),
                r.last_owner_key,
                r.fence as i64,
                r.expires_at as i64,
                r.floor as i64,
                r.ceiling as i64,
                r.next_floor as i64,
            ],
        )
        .unwrap();
    }

    async fn put_old_namespace(&self, namespace: &Namespace, r: &NamespaceRecord) {
        let conn = rusqlite::Connection::open(&self.path).unwrap();
        conn.busy_timeout(Duration::from_secs(10)).unwrap();
        conn.execute(
            "INSERT OR REPLACE INTO cosid_namespace (name, bits, tolerance_ms, not_before, layout) VALUES (?1, ?2, ?3, ?4, NULL)",
            rusqlite::params![
                namespace.encoded(),
                r.bits,
                r.tolerance_ms as i64,
                r.not_before as i64
            ],
        )
        .unwrap();
    }
}

async fn target() -> Option<Proxied> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leases.db");
    let serve = Serve::start(&format!("sqlite://{}", path.display()), &[]);
    let store = Arc::new(HttpStore::open(&serve.url).unwrap());
    // The server creates the file when it opens the store.
    Some(Proxied {
        store,
        path,
        _serve: serve,
        _dir: dir,
    })
}

conformance::conformance_tests!(target());
