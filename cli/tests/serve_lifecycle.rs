//! A runtime on the `http://` store, through a real `cosid serve` (in front of SQLite), across a restart of the
//! server; and the answers the server gives to requests it refuses.

mod serve_common;

use cosid::{Event, Runtime, State};
use serve_common::Serve;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn events() -> (
    Arc<Mutex<Vec<Event>>>,
    impl Fn(&Event) + Send + Sync + 'static,
) {
    let all = Arc::new(Mutex::new(Vec::new()));
    let sink = all.clone();
    (all, move |e: &Event| sink.lock().unwrap().push(e.clone()))
}

/// The server goes away for a while and comes back on the same address: the keeper's renewals fail (store
/// unavailable), then resume on the same slot and fence; ids keep increasing and nothing is lost.
#[test]
fn the_keeper_rides_out_a_restart_of_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut serve = Serve::start(
        &format!("sqlite://{}", dir.path().join("l.db").display()),
        &[],
    );
    let (seen, listener) = events();
    let rt = Runtime::builder()
        .store(serve.url.clone())
        .namespace("restart")
        .ttl(Duration::from_millis(3_000))
        .subscribe(listener)
        .build()
        .unwrap();
    let first = rt.status();
    let mut ids = vec![rt.next_id().unwrap().as_u64()];
    let renewals = |seen: &Mutex<Vec<Event>>| {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|e| matches!(e, Event::Renewed { .. }))
            .count()
    };
    serve.stop();
    // While the server is down, renewals fail.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen
        .lock()
        .unwrap()
        .iter()
        .any(|e| matches!(e, Event::RenewFailed { .. }))
    {
        assert!(
            Instant::now() < deadline,
            "no renewal failed while the server was down"
        );
        if let Ok(id) = rt.next_id() {
            ids.push(id.as_u64());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    serve.restart();
    let before = renewals(&seen);
    let deadline = Instant::now() + Duration::from_secs(15);
    while renewals(&seen) == before || rt.status().state != State::Active {
        assert!(
            Instant::now() < deadline,
            "renewals did not resume: {:#?}",
            seen.lock().unwrap()
        );
        if let Ok(id) = rt.next_id() {
            ids.push(id.as_u64());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let back = rt.status();
    assert_eq!((back.slot, back.fence), (first.slot, first.fence));
    for _ in 0..1000 {
        ids.push(rt.next_id().unwrap().as_u64());
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids strictly increase");
    assert!(!seen
        .lock()
        .unwrap()
        .iter()
        .any(|e| matches!(e, Event::SlotLost { .. })));
    rt.shutdown();
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .any(|e| matches!(e, Event::Released { .. })));
}

/// Two runtimes in one namespace through two servers in front of one file: different slots.
#[test]
fn two_servers_in_front_of_one_store_share_its_slots() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", dir.path().join("l.db").display());
    let (a, b) = (Serve::start(&store, &[]), Serve::start(&store, &[]));
    let build = |url: &str| {
        Runtime::builder()
            .store(url.to_owned())
            .namespace("replicas")
            .build()
            .unwrap()
    };
    let (ra, rb) = (build(&a.url), build(&b.url));
    assert_ne!(ra.status().slot, rb.status().slot);
    ra.shutdown();
    rb.shutdown();
}

/// Requests the server refuses come back as errors of the lease API, never as something else.
#[test]
fn refused_requests_answer_with_the_error_body() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        &format!("sqlite://{}", dir.path().join("l.db").display()),
        &["--max-body", "1024"],
    );
    let post = |path: &str, body: String| {
        let out = std::process::Command::new("curl")
            .args(["-s", "-o", "-", "-w", "\n%{http_code}", "-X", "POST"])
            .args([
                "-H",
                "content-type: application/json",
                "--data-binary",
                &body,
            ])
            .arg(format!("{}{path}", serve.url))
            .output();
        out.ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
    };
    let Some(bad_json) = post("/v1/namespaces/x/acquire", "{".into()) else {
        eprintln!("skipped: curl is not installed");
        return;
    };
    assert!(bad_json.ends_with("\n400"), "{bad_json}");
    assert!(bad_json.contains(r#""kind":"bad_request""#), "{bad_json}");
    let big = post("/v1/namespaces/x/acquire", "x".repeat(4096)).unwrap();
    assert!(big.ends_with("\n413"), "{big}");
    assert!(big.contains(r#""kind":"bad_request""#), "{big}");
    let unknown = post("/v2/nothing", "{}".into()).unwrap();
    assert!(unknown.ends_with("\n404"), "{unknown}");
}
