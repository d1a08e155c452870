//! A runtime on each embedded store issues unique, increasing ids and releases its slot at shutdown.

use cosid::store::{LeaseStore, SqliteStore};
use cosid::{Runtime, State};
use std::collections::HashSet;
use std::sync::Arc;

#[test]
fn memory_runtime_issues_increasing_ids() {
    let rt = Runtime::builder()
        .store("memory:")
        .namespace("smoke")
        .build()
        .unwrap();
    let mut last = 0;
    for _ in 0..100_000 {
        let id = rt.next_id().unwrap().as_u64();
        assert!(id > last, "{id} after {last}");
        last = id;
    }
    let status = rt.status();
    assert_eq!(status.state, State::Active);
    assert_eq!(status.slot, 0);
    assert!(status.last_issued_ms.is_some());
}

#[test]
fn sqlite_runtimes_get_distinct_slots_and_release() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("leases.db").display());
    let a = Runtime::builder()
        .store(&url)
        .namespace("smoke")
        .build()
        .unwrap();
    let b = Runtime::builder()
        .store(&url)
        .namespace("smoke")
        .build()
        .unwrap();
    assert_ne!(a.status().slot, b.status().slot);
    let mut seen = HashSet::new();
    for _ in 0..10_000 {
        assert!(seen.insert(a.next_id().unwrap()));
        assert!(seen.insert(b.next_id().unwrap()));
    }
    let slot = a.status().slot;
    let last = a.shutdown().expect("a issued ids");
    assert!(a.next_id().is_err());
    let store = SqliteStore::open(
        &dir.path().join("leases.db"),
        Arc::new(cosid::clock::SystemClock),
    )
    .unwrap();
    let ns = cosid::lease::Namespace::new("smoke").unwrap();
    let inspection = futures_lite(store.inspect(&ns)).unwrap();
    let rec = inspection.slots.iter().find(|r| r.slot == slot).unwrap();
    assert!(rec.owner.is_none());
    assert_eq!(rec.next_floor, last);
}

fn futures_lite<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn the_javascript_safe_layout_gets_as_many_slot_bits_as_it_has() {
    let rt = Runtime::builder()
        .store("memory:")
        .layout(cosid::Layout::js_safe())
        .build()
        .unwrap();
    let id = rt.next_id().unwrap().as_u64();
    assert!(id < 1 << 53, "{id} is not an exact JavaScript number");
    let cfg = cosid::Config::default()
        .with_vars(|k| (k == "COSID_LAYOUT").then(|| "js-safe".to_owned()))
        .unwrap();
    assert_eq!(cfg.bits, 5);
    let explicit = Runtime::builder()
        .store("memory:")
        .bits(6)
        .layout(cosid::Layout::js_safe())
        .build();
    assert_eq!(
        explicit.unwrap_err().code(),
        "CONFIG",
        "explicit bits above the layout's are refused"
    );
}
