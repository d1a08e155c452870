//! `cosid serve` under abuse, against a real server process: one client's flood never starves another's renewals,
//! half-sent and idle connections are closed, connections are capped, every refusal is the JSON error body with
//! its code, `/ids` runtimes are bounded and stopped when idle, a server whose store leads back to it refuses to
//! run, and operators get a log line per request and metrics by route. Raw requests go through `curl` or a TCP
//! socket; each test failed on the server before these limits.

mod serve_common;

use cosid::lease::{AcquireRequest, Namespace, NamespaceConfig, Owner};
use cosid::store::{HttpStore, LeaseStore};
use serve_common::Serve;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

const CONFIG: NamespaceConfig = NamespaceConfig {
    bits: 4,
    tolerance_ms: 1_000,
    layout: cosid::Layout::millis(),
};

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

/// `curl` a path; the body, then the status, then the headers. `None` without curl.
fn curl(url: &str, args: &[&str]) -> Option<(String, u16, String)> {
    let dir = tempfile::tempdir().ok()?;
    let headers = dir.path().join("h");
    let out = Command::new("curl")
        .args(["-s", "-o", "-", "-w", "\n%{http_code}", "-D"])
        .arg(&headers)
        .args(args)
        .arg(url)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, status) = text.rsplit_once('\n').unwrap();
    let headers = std::fs::read_to_string(&headers).unwrap_or_default();
    Some((
        body.to_owned(),
        status.trim().parse().unwrap(),
        headers.to_lowercase(),
    ))
}

fn host_port(url: &str) -> String {
    url.trim_start_matches("http://").to_owned()
}

/// A flood of requests with a wrong token, from the same address as a real holder, is charged to that address's
/// bucket of failures: the holder's renewals (with its token) all pass, and the flood gets 429s.
#[test]
fn a_flood_of_bad_tokens_never_starves_a_holders_renewals() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "holder-token-0123456789\n").unwrap();
    let serve = Serve::start(
        &sqlite(&dir),
        &[
            "--token-file",
            tokens.to_str().unwrap(),
            "--rate-limit",
            "50",
            "--auth-failure-limit",
            "5",
        ],
    );
    let holder = HttpStore::open(&format!("{}?token=holder-token-0123456789", serve.url)).unwrap();
    let ns = Namespace::new("flooded").unwrap();
    let lease = block(holder.acquire(
        &ns,
        &CONFIG,
        &AcquireRequest {
            owner: Owner::new("holder"),
            ttl_ms: 60_000,
            preferred_slot: None,
        },
    ))
    .unwrap()
    .lease;
    let flooder = HttpStore::open(&format!("{}?token=wrong-token-0123456789", serve.url)).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (flood, renewals) = std::thread::scope(|s| {
        let flood = s.spawn(|| {
            let mut limited = 0;
            let mut total = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let r = block(flooder.inspect(&ns));
                total += 1;
                if r.is_err_and(|e| e.to_string().contains("429")) {
                    limited += 1;
                }
            }
            (limited, total)
        });
        let mut renewed = Vec::new();
        for _ in 0..40 {
            renewed.push(block(holder.renew(&lease, 60_000, CONFIG.tolerance_ms)).map(|_| ()));
            std::thread::sleep(Duration::from_millis(25));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (flood.join().unwrap(), renewed)
    });
    let failed: Vec<_> = renewals.iter().filter(|r| r.is_err()).collect();
    assert!(
        failed.is_empty(),
        "renewals failed under the flood: {failed:?}"
    );
    assert!(
        flood.0 > 0 && flood.0 * 2 > flood.1,
        "the flood is limited: {} of {} answered 429",
        flood.0,
        flood.1
    );
}

/// Reads from `stream` until the server closes it; how long that took.
fn closed_within(mut stream: TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Some(started.elapsed()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return Some(started.elapsed())
            }
            Err(_) => return None,
        }
    }
}

/// Half-sent requests are closed after `--header-timeout`, silent connections too; the connection cap closes what
/// is past it at once, and `/healthz` answers again as soon as a connection is free.
#[test]
fn half_sent_and_idle_connections_are_closed_and_connections_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        &sqlite(&dir),
        &[
            "--header-timeout",
            "1s",
            "--idle-timeout",
            "2s",
            "--max-connections",
            "8",
        ],
    );
    let addr = host_port(&serve.url);
    // Half a request: its headers never end.
    let mut half = TcpStream::connect(&addr).unwrap();
    half.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .unwrap();
    let took = closed_within(half, Duration::from_secs(10));
    assert!(
        took.is_some_and(|t| t < Duration::from_secs(5)),
        "a half-sent request is closed after the header timeout: {took:?}"
    );
    // Nothing at all.
    let silent = TcpStream::connect(&addr).unwrap();
    let took = closed_within(silent, Duration::from_secs(10));
    assert!(
        took.is_some_and(|t| t < Duration::from_secs(5)),
        "a silent connection is closed: {took:?}"
    );
    // Eight connections held open: the ninth is closed at once.
    let held: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                .unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let ninth = TcpStream::connect(&addr).unwrap();
    let took = closed_within(ninth, Duration::from_secs(10));
    assert!(
        took.is_some_and(|t| t < Duration::from_millis(900)),
        "past --max-connections a connection is closed at once: {took:?}"
    );
    drop(held);
    let started = Instant::now();
    let answered = loop {
        if let Some((body, 200, _)) = curl(&format!("{}/healthz", serve.url), &["-m", "2"]) {
            break Some(body);
        }
        if started.elapsed() > Duration::from_secs(10) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(answered.as_deref(), Some("ok\n"));
    let (metrics, _, _) = curl(&format!("{}/metrics", serve.url), &[]).unwrap();
    assert!(
        metrics.contains("cosid_serve_connections_refused_total{reason=\"max_connections\"}"),
        "{metrics}"
    );
}

/// Every refusal is the JSON error body with a code, whatever refused it: the router (404, 405), the path's
/// percent-decoding, the query, the body's size; `/ids` answers are never cached; `bearer` is the Bearer scheme.
#[test]
fn every_refusal_is_the_json_error_body_with_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&sqlite(&dir), &["--max-body", "100"]);
    let url = &serve.url;
    let Some(_) = curl(&format!("{url}/healthz"), &[]) else {
        eprintln!("skipped: curl is not installed");
        return;
    };
    let big = format!("{{\"x\": \"{}\"}}", "a".repeat(200));
    let cases: Vec<(String, Vec<&str>, u16, &str)> = vec![
        (format!("{url}/nowhere"), vec![], 404, "NOT_FOUND"),
        (
            format!("{url}/v1/namespaces/a/acquire"),
            vec![],
            405,
            "METHOD_NOT_ALLOWED",
        ),
        (
            format!("{url}/v1/namespaces/%ff/ids"),
            vec![],
            400,
            "BAD_REQUEST",
        ),
        (
            format!("{url}/v1/namespaces/a/ids?n=-1"),
            vec![],
            400,
            "BAD_REQUEST",
        ),
        (
            format!("{url}/v1/namespaces/a/ids?n=abc"),
            vec![],
            400,
            "BAD_REQUEST",
        ),
        (
            format!("{url}/v1/namespaces/a/acquire"),
            vec![
                "-X",
                "POST",
                "-H",
                "content-type: application/json",
                "-d",
                &big,
            ],
            413,
            "PAYLOAD_TOO_LARGE",
        ),
        (
            format!("{url}/v1/namespaces/a/acquire"),
            vec!["-X", "POST", "-d", "{"],
            400,
            "BAD_REQUEST",
        ),
    ];
    for (target, args, status, code) in &cases {
        let (body, got, headers) = curl(target, args).unwrap();
        assert_eq!(got, *status, "{target}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{target}: not JSON ({e}): {body}"));
        assert_eq!(v["code"], *code, "{target}: {body}");
        assert_eq!(v["error"]["kind"], "bad_request", "{target}: {body}");
        assert!(
            v["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{body}"
        );
        assert!(headers.contains("application/json"), "{headers}");
    }
    let (_, status, headers) = curl(&format!("{url}/v1/namespaces/a/ids?n=2"), &[]).unwrap();
    assert_eq!(status, 200);
    assert!(headers.contains("cache-control: no-store"), "{headers}");
}

/// With tokens, the scheme's case does not matter (RFC 9110), and the token never reaches the log; each request
/// has one access-log line with its route template, status, duration and the token's name.
#[test]
fn one_access_log_line_per_request_names_the_token_never_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "# comment\nsecret-token-0123456789 orders\n").unwrap();
    let log = dir.path().join("serve.log");
    let mut serve = Serve::start_logged(
        &sqlite(&dir),
        &[
            "--token-file",
            tokens.to_str().unwrap(),
            "--log-format",
            "json",
        ],
        &log,
    );
    let url = serve.url.clone();
    let Some((_, status, _)) = curl(
        &format!("{url}/v1/namespaces/orders/ids?n=2"),
        &["-H", "authorization: bearer secret-token-0123456789"],
    ) else {
        eprintln!("skipped: curl is not installed");
        return;
    };
    assert_eq!(status, 200, "bearer in lower case");
    let (_, status, _) = curl(
        &format!("{url}/v1/namespaces/orders/ids?n=2"),
        &["-H", "authorization: Bearer wrong-token-0123456789"],
    )
    .unwrap();
    assert_eq!(status, 401);
    serve.stop();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains("secret-token"),
        "the token is logged: {text}"
    );
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    assert!(
        lines[0]["message"] == "cosid serve started" && lines[0]["store"].is_string(),
        "{text}"
    );
    let access: Vec<_> = lines.iter().filter(|l| l["message"] == "request").collect();
    assert_eq!(access.len(), 2, "{text}");
    assert_eq!(access[0]["route"], "/v1/namespaces/{ns}/ids");
    assert_eq!(access[0]["status"], 200);
    assert_eq!(access[0]["client"], "file:2");
    assert!(access[0]["duration_ms"].is_number());
    assert_eq!(access[1]["status"], 401);
    assert_eq!(access[1]["client"], "unauthenticated");
}

/// `/metrics` has the build, requests by route template and status (refusals too), the API's latency, and the
/// slots of the namespaces served as the store shows them; `promtool check metrics` takes it when installed.
#[test]
fn metrics_count_requests_by_route_and_show_every_clients_leases() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&sqlite(&dir), &[]);
    let store = HttpStore::open(&serve.url).unwrap();
    let ns = Namespace::new("watched").unwrap();
    for i in 0..3 {
        block(store.acquire(
            &ns,
            &CONFIG,
            &AcquireRequest {
                owner: Owner::new(format!("client-{i}")),
                ttl_ms: 60_000,
                preferred_slot: None,
            },
        ))
        .unwrap();
    }
    let Some(_) = curl(&format!("{}/nowhere", serve.url), &[]) else {
        eprintln!("skipped: curl is not installed");
        return;
    };
    // The slots are read from the store every 5 s.
    let started = Instant::now();
    let text = loop {
        let (text, _, _) = curl(&format!("{}/metrics", serve.url), &[]).unwrap();
        if text.contains("cosid_serve_namespace_slots{namespace=\"watched\",state=\"held\"} 3")
            || started.elapsed() > Duration::from_secs(15)
        {
            break text;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    for needle in [
        "cosid_serve_build_info{version=\"",
        "cosid_serve_requests_total{route=\"/v1/namespaces/{ns}/acquire\",code=\"200\"} 3",
        "cosid_serve_requests_total{route=\"other\",code=\"404\"} 1",
        "cosid_serve_request_duration_seconds_bucket{route=\"/v1/namespaces/{ns}/acquire\",le=\"+Inf\"} 3",
        "cosid_serve_acquisitions_total{outcome=\"ok\"} 3",
        "cosid_serve_errors_total{code=\"NOT_FOUND\"} 1",
        "cosid_serve_namespace_slots{namespace=\"watched\",state=\"held\"} 3",
        "cosid_serve_namespace_slots{namespace=\"watched\",state=\"free\"} 13",
        "cosid_serve_namespace_capacity{namespace=\"watched\"} 16",
    ] {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
    let Ok(mut promtool) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    else {
        assert!(
            std::env::var_os("COSID_REQUIRE_PROMTOOL").is_none(),
            "COSID_REQUIRE_PROMTOOL is set, but promtool is not installed"
        );
        eprintln!("promtool is not installed: the text format is not checked by it");
        return;
    };
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = promtool.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `/ids` serves at most `--max-id-namespaces` namespaces at once; a runtime idle for `--id-idle-timeout` is
/// stopped and its slot released, which makes room for another namespace.
#[test]
fn ids_runtimes_are_bounded_and_stopped_when_idle() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        &sqlite(&dir),
        &["--max-id-namespaces", "2", "--id-idle-timeout", "1s"],
    );
    let url = &serve.url;
    let Some((_, status, _)) = curl(&format!("{url}/v1/namespaces/one/ids"), &[]) else {
        eprintln!("skipped: curl is not installed");
        return;
    };
    assert_eq!(status, 200);
    let (_, status, _) = curl(&format!("{url}/v1/namespaces/two/ids"), &[]).unwrap();
    assert_eq!(status, 200);
    let (body, status, _) = curl(&format!("{url}/v1/namespaces/three/ids"), &[]).unwrap();
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("--max-id-namespaces"), "{body}");
    // Idle past 1 s, checked every 5 s: both stopped, their slots released.
    let store = HttpStore::open(url).unwrap();
    let started = Instant::now();
    let released = loop {
        let held = block(store.inspect(&Namespace::new("one").unwrap()))
            .unwrap()
            .slots
            .iter()
            .filter(|r| r.owner.is_some())
            .count();
        if held == 0 {
            break true;
        }
        if started.elapsed() > Duration::from_secs(15) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(released, "the idle runtime's slot is released");
    let (body, status, _) = curl(&format!("{url}/v1/namespaces/three/ids"), &[]).unwrap();
    assert_eq!(status, 200, "{body}");
}

/// A server whose store is its own address refuses to run (exit status 2, CONFIG), instead of recursing into
/// itself.
#[test]
fn a_server_whose_store_is_itself_refuses_to_run() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cosid"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .env("COSID_STORE", format!("http://127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(2), "{err}");
    assert!(err.contains("leads back to this server"), "{err}");
}
