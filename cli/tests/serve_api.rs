//! The parts of `cosid serve` beyond the lease API, on a real server in front of SQLite: ids, tokens, limits,
//! health, metrics, and the release of its slots on SIGTERM. Raw requests go through `curl` (skipped without it).

mod serve_common;

use cosid::lease::Namespace;
use cosid::store::{HttpStore, LeaseStore, StoreError};
use serve_common::Serve;
use std::process::Command;

/// `curl` a path; the body, then the status on the last line. `None` without curl.
fn curl(url: &str, args: &[&str]) -> Option<(String, u16)> {
    let out = Command::new("curl")
        .args(["-s", "-o", "-", "-w", "\n%{http_code}"])
        .args(args)
        .arg(url)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, status) = text.rsplit_once('\n').unwrap();
    Some((body.to_owned(), status.trim().parse().unwrap()))
}

fn sqlite(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}", dir.path().join("l.db").display())
}

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// GET /v1/namespaces/{ns}/ids issues distinct increasing ids from one slot of the namespace; SIGTERM releases it.
#[test]
fn ids_come_from_one_runtime_per_namespace_and_its_slot_is_released_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut serve = Serve::start(&sqlite(&dir), &[]);
    let Some((body, status)) = curl(
        &format!("{}/v1/namespaces/orders/ids?n=100", serve.url),
        &[],
    ) else {
        eprintln!("skipped: curl is not installed");
        return;
    };
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut ids: Vec<u64> = v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 100);
    let (second, _) = curl(&format!("{}/v1/namespaces/orders/ids?n=5", serve.url), &[]).unwrap();
    let v: serde_json::Value = serde_json::from_str(&second).unwrap();
    ids.extend(
        v["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().parse::<u64>().unwrap()),
    );
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids strictly increase");
    let (_, status) = curl(&format!("{}/v1/namespaces/orders/ids?n=0", serve.url), &[]).unwrap();
    assert_eq!(status, 400);

    let (metrics, _) = curl(&format!("{}/metrics", serve.url), &[]).unwrap();
    assert!(
        metrics.contains("cosid_serve_ids_issued_total{namespace=\"orders\"} 105"),
        "{metrics}"
    );
    assert!(
        metrics.contains("cosid_serve_slots_held{namespace=\"orders\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("cosid_serve_errors_total{code=\"BAD_REQUEST\"}")
            || metrics.contains("# TYPE cosid_serve_errors_total counter")
    );

    // Held while the server runs; released (no owner) once it stopped on SIGTERM.
    let store = HttpStore::open(&serve.url).unwrap();
    let ns = Namespace::new("orders").unwrap();
    let held = block(store.inspect(&ns)).unwrap();
    assert!(held.slots.iter().any(|r| r.owner.is_some()));
    assert!(serve.stop().success());
    let after = Serve::start(&sqlite(&dir), &[]);
    let store = HttpStore::open(&after.url).unwrap();
    let seen = block(store.inspect(&ns)).unwrap();
    assert!(!seen.slots.is_empty());
    assert!(
        seen.slots.iter().all(|r| r.owner.is_none()),
        "the slot was released at shutdown: {seen:?}"
    );
    // The next holder starts past the last id issued.
    let last = *ids.last().unwrap();
    let (body, _) = curl(&format!("{}/v1/namespaces/orders/ids?n=1", after.url), &[]).unwrap();
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let next: u64 = v["ids"][0].as_str().unwrap().parse().unwrap();
    assert!(next > last, "{next} > {last}");
    drop(after);

    // The control: a server killed with SIGKILL releases nothing, and the check above sees it.
    let mut killed = Serve::start(&sqlite(&dir), &[]);
    curl(&format!("{}/v1/namespaces/killed/ids", killed.url), &[]).unwrap();
    killed.kill();
    let after = Serve::start(&sqlite(&dir), &[]);
    let seen = block(
        HttpStore::open(&after.url)
            .unwrap()
            .inspect(&Namespace::new("killed").unwrap()),
    )
    .unwrap();
    assert!(seen.slots.iter().any(|r| r.owner.is_some()), "{seen:?}");
}

/// With tokens configured, a request needs one, and a namespace token opens its namespace only. The `http://`
/// store sends the token of its URL.
#[test]
fn tokens_guard_every_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(
        &tokens,
        "admin-token-0123456789\norders-token-0123456789 orders\n",
    )
    .unwrap();
    let serve = Serve::start(&sqlite(&dir), &["--token-file", tokens.to_str().unwrap()]);
    let url = &serve.url;
    let Some((_, status)) = curl(&format!("{url}/v1/namespaces/orders/ids"), &[]) else {
        eprintln!("skipped: curl is not installed");
        return;
    };
    assert_eq!(status, 401);
    let bearer = |t: &str| format!("authorization: Bearer {t}");
    let h = bearer("orders-token-0123456789");
    let (_, status) = curl(&format!("{url}/v1/namespaces/orders/ids"), &["-H", &h]).unwrap();
    assert_eq!(status, 200);
    let (_, status) = curl(&format!("{url}/v1/namespaces/users/ids"), &["-H", &h]).unwrap();
    assert_eq!(status, 403);
    let (_, status) = curl(&format!("{url}/metrics"), &["-H", &h]).unwrap();
    assert_eq!(status, 403);
    let admin = bearer("admin-token-0123456789");
    let (_, status) = curl(&format!("{url}/metrics"), &["-H", &admin]).unwrap();
    assert_eq!(status, 200);
    let (body, status) = curl(&format!("{url}/healthz"), &[]).unwrap();
    assert_eq!((body.as_str(), status), ("ok\n", 200));
    let (_, status) = curl(&format!("{url}/readyz"), &[]).unwrap();
    assert_eq!(status, 200);

    let ns = Namespace::new("users").unwrap();
    let without = HttpStore::open(url).unwrap();
    let refused = block(without.inspect(&ns));
    assert!(
        matches!(&refused, Err(StoreError::Generic { store: "http", .. }) if refused.as_ref().unwrap_err().to_string().contains("401")),
        "{refused:?}"
    );
    let with = HttpStore::open(&format!("{url}?token=admin-token-0123456789")).unwrap();
    block(with.inspect(&ns)).unwrap();
    let userinfo = url.replace("http://", "http://:admin-token-0123456789@");
    block(HttpStore::open(&userinfo).unwrap().inspect(&ns)).unwrap();
    assert!(!format!("{with:?}").contains("admin-token"));
}

/// Past the rate limit the server answers 429, which the `http://` store reads as "unavailable, retry".
#[test]
fn past_the_rate_limit_requests_are_retryable() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&sqlite(&dir), &["--rate-limit", "2"]);
    let store = HttpStore::open(&serve.url).unwrap();
    let ns = Namespace::new("limited").unwrap();
    let results: Vec<_> = block(async {
        let mut out = Vec::new();
        for _ in 0..10 {
            out.push(store.inspect(&ns).await);
        }
        out
    });
    let limited: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        !limited.is_empty(),
        "10 requests at once pass a limit of 2 a second"
    );
    assert!(
        limited
            .iter()
            .all(|e| e.is_retryable() && e.to_string().contains("429")),
        "{limited:?}"
    );
}

/// Runs `openssl` with `args` (split at spaces) in `dir`; false when it is missing or fails.
fn openssl(dir: &std::path::Path, args: &str) -> bool {
    Command::new("openssl")
        .args(args.split(' '))
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `--tls-cert/--tls-key` serve HTTPS; the `https://` store (here through `cosid leases`) checks the server's
/// certificate against its roots (`SSL_CERT_FILE`) and refuses one from a CA it does not trust.
#[test]
fn https_serves_with_the_given_certificate_and_clients_check_it() {
    let certs = tempfile::tempdir().unwrap();
    let dir = certs.path();
    let made = [
        "req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=cosid-test-CA",
        "req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.crt -days 1 -subj /CN=another-CA",
        "req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1",
    ]
    .iter()
    .all(|args| openssl(dir, args))
        && std::fs::write(dir.join("ext"), "subjectAltName=IP:127.0.0.1\n").is_ok()
        && openssl(
            dir,
            "x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 1 -extfile ext",
        );
    if !made {
        eprintln!("skipped: openssl cannot make a test certificate");
        return;
    }
    let file = |name: &str| dir.join(name).display().to_string();
    let data = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        &sqlite(&data),
        &[
            "--tls-cert",
            &file("server.crt"),
            "--tls-key",
            &file("server.key"),
        ],
    );
    assert!(serve.url.starts_with("https://"), "{}", serve.url);
    let leases = |ca: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_cosid"))
            .args(["leases", "--json"])
            .env("COSID_STORE", &serve.url)
            .env("COSID_NAMESPACE", "tls")
            .env("SSL_CERT_FILE", file(ca))
            .env_remove("SSL_CERT_DIR")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (ok, text) = leases("ca.crt");
    assert!(ok && text.contains(r#""store_kind":"http""#), "{text}");
    let (ok, text) = leases("other-ca.crt");
    assert!(!ok && text.to_lowercase().contains("certificate"), "{text}");
}

/// The first `/v1/ids` request of a namespace waits for a slot; meanwhile other namespaces and `/metrics` answer.
/// (Its one slot, with `--bits 1`, both are held by other runtimes; the request waits out its acquire timeout.)
#[test]
fn a_namespace_waiting_for_a_slot_holds_up_no_other_request() {
    let dir = tempfile::tempdir().unwrap();
    let mut serve = Serve::start(&sqlite(&dir), &["--bits", "1", "--acquire-timeout", "20s"]);
    let store = sqlite(&dir);
    let hold = |_: usize| {
        cosid::Runtime::builder()
            .store(store.as_str())
            .namespace("full")
            .bits(1)
            .build()
            .unwrap()
    };
    let held: Vec<_> = (0..2).map(hold).collect();
    let url = serve.url.clone();
    let waiting =
        std::thread::spawn(move || curl(&format!("{url}/v1/namespaces/full/ids?n=1"), &[]));
    // Give the waiting request time to reach the server and start its acquisition.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let Some((body, status)) = curl(&format!("{}/v1/namespaces/other/ids?n=3", serve.url), &[])
    else {
        eprintln!("skipped: curl is not installed");
        return;
    };
    assert_eq!(status, 200, "{body}");
    let (metrics, status) = curl(&format!("{}/metrics", serve.url), &[]).unwrap();
    assert_eq!(status, 200, "{metrics}");
    assert!(
        !waiting.is_finished(),
        "the request on the full namespace answered before the others were served: {:?}",
        waiting.join()
    );
    drop(held);
    let (body, status) = waiting.join().unwrap().unwrap();
    assert_eq!(status, 200, "{body}");
    serve.stop();
}
