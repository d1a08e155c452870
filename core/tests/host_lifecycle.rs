//! The host layer's lifecycle (`cosid::host::Holder`): lazy start, configure before start, shutdown and what
//! follows it, re-entry from callbacks. The fork rules are in `host_fork.rs` (they bump the process's fork
//! generation, which every holder of a test binary sees).

use cosid::host::{ErrorCode, Holder, Settings};
use std::sync::{Arc, Mutex};

fn memory(ns: &str) -> Settings {
    let mut s = Settings::new();
    s.set("store", "memory:").unwrap();
    s.set("namespace", ns).unwrap();
    s
}

#[test]
fn lazy_start_then_shutdown_stays_closed_until_configured_again() {
    let h = Holder::new(memory("lazy"));
    assert!(!h.is_running());
    let a = h.next_id().unwrap();
    assert!(h.is_running());
    let b = h.next_id().unwrap();
    assert!(b > a);
    h.shutdown().unwrap();
    assert_eq!(h.next_id().unwrap_err().code, ErrorCode::Closed);
    assert_eq!(h.next_id().unwrap_err().code, ErrorCode::Closed);
    // Status still reads the last lease.
    assert_eq!(h.status().unwrap().state, cosid::State::Closed);
    // Shutting down again is harmless.
    h.shutdown().unwrap();
    h.configure(memory("lazy-2")).unwrap();
    let c = h.next_id().unwrap();
    assert!(h.is_running());
    assert_ne!(c, b);
    h.shutdown().unwrap();
}

#[test]
fn configure_and_init_are_refused_while_running() {
    let h = Holder::new(memory("refused"));
    h.next_id().unwrap();
    assert_eq!(
        h.configure(memory("other")).unwrap_err().code,
        ErrorCode::AlreadyInitialized
    );
    assert_eq!(
        h.init(memory("other")).unwrap_err().code,
        ErrorCode::AlreadyInitialized
    );
    h.shutdown().unwrap();
    h.init(memory("other")).unwrap();
    assert_eq!(h.status().unwrap().namespace, "other");
    h.shutdown().unwrap();
}

#[test]
fn a_failed_start_is_retried_and_a_failed_init_changes_nothing() {
    let mut bad = memory("bad");
    bad.set("bits", "12").unwrap(); // more than the millis layout's 10 slot bits
    let h = Holder::new(bad.clone());
    assert_eq!(h.next_id().unwrap_err().code, ErrorCode::Config);
    assert_eq!(h.next_id().unwrap_err().code, ErrorCode::Config);
    assert_eq!(h.init(bad).unwrap_err().code, ErrorCode::Config);
    h.init(memory("good")).unwrap();
    h.next_id().unwrap();
    h.shutdown().unwrap();
}

#[test]
fn bits_follow_the_layout() {
    let mut s = memory("js");
    s.set("layout", "js-safe").unwrap();
    let h = Holder::new(s);
    let id = h.next_id().unwrap();
    assert!(id.as_u64() < 1 << 53);
    assert_eq!(h.layout().unwrap().slot_bits(), 5);
    h.shutdown().unwrap();
}

#[test]
fn static_and_manual_stores_start() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    for store in [
        format!("static:3?state_file={}&ahead=1s", state.display()),
        "manual:5".to_owned(),
    ] {
        let mut s = Settings::new();
        s.set("store", &store).unwrap();
        let h = Holder::new(s);
        h.next_id().unwrap();
        assert!([3, 5].contains(&h.status().unwrap().slot), "{store}");
        h.shutdown().unwrap();
    }
}

#[test]
fn calls_from_an_event_callback_are_refused_and_say_which() {
    let h = Arc::new(Holder::new(memory("reentry")));
    #[allow(clippy::type_complexity)]
    let seen: Arc<Mutex<Vec<(String, String, Result<(), (ErrorCode, String)>)>>> = Arc::default();
    {
        let (weak, seen) = (Arc::downgrade(&h), seen.clone());
        h.subscribe(Arc::new(move |e| {
            if let Some(h) = weak.upgrade() {
                for (call, r) in [
                    ("next_id", h.next_id().map(drop)),
                    ("shutdown", h.shutdown().map(drop)),
                ] {
                    // Recorded, not asserted here: a panicking listener is ignored by the runtime.
                    let got = r.map_err(|e| (e.code, e.message));
                    seen.lock()
                        .unwrap()
                        .push((call.to_owned(), e.name().to_owned(), got));
                }
            }
        }))
        .unwrap();
    }
    // The first ACQUIRED reaches the callback on the starting thread.
    h.next_id().unwrap();
    h.shutdown().unwrap();
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 2, "{seen:?}");
    for (call, event, got) in seen.iter() {
        let (code, message) = got.clone().unwrap_err();
        assert_eq!(code, ErrorCode::Reentrant, "{call}: {message}");
        assert!(
            message.contains(call.as_str()) && message.contains(event.as_str()),
            "{message}"
        );
    }
}
