//! The dashboard of `cosid serve` on a real server in front of SQLite: the page holds no data and opens without a
//! token; `GET /v1/dashboard` needs the token of every namespace it shows and tells slots, holders and events in
//! words. Raw requests go through `curl` (skipped without it). `.ci/dashboard.sh` reads the page in a browser.

mod serve_common;

use serve_common::Serve;
use std::process::Command;

/// `curl` a path; the headers, the body and the status. `None` without curl.
fn curl(url: &str, args: &[&str]) -> Option<(String, String, u16)> {
    let out = Command::new("curl")
        .args(["-s", "-D", "-", "-o", "-", "-w", "\n%{http_code}"])
        .args(args)
        .arg(url)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (rest, status) = text.rsplit_once('\n').unwrap();
    let (head, body) = rest.split_once("\r\n\r\n").unwrap_or((rest, ""));
    Some((
        head.to_lowercase(),
        body.to_owned(),
        status.trim().parse().unwrap(),
    ))
}

fn sqlite(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}", dir.path().join("l.db").display())
}

const ADMIN: &str = "admin-token-0123456789";
const ORDERS: &str = "orders-token-0123456789";

fn bearer(t: &str) -> String {
    format!("authorization: Bearer {t}")
}

/// A server with tokens on, whose own runtimes hold a slot in `orders` and in `users`.
fn server(dir: &tempfile::TempDir) -> Option<Serve> {
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("{ADMIN}\n{ORDERS} orders\n")).unwrap();
    let serve = Serve::start(&sqlite(dir), &["--token-file", tokens.to_str().unwrap()]);
    for ns in ["orders", "users"] {
        let (_, body, status) = curl(
            &format!("{}/v1/namespaces/{ns}/ids?n=3", serve.url),
            &["-H", &bearer(ADMIN)],
        )?;
        assert_eq!(status, 200, "{body}");
    }
    Some(serve)
}

/// The page answers without a token, carries no data of any namespace, and locks itself down: its own script and
/// style only, never cached.
#[test]
fn the_page_opens_without_a_token_and_holds_no_data() {
    let dir = tempfile::tempdir().unwrap();
    let Some(serve) = server(&dir) else {
        eprintln!("skipped: curl is not installed");
        return;
    };
    let (head, page, status) = curl(&format!("{}/dashboard?ns=orders", serve.url), &[]).unwrap();
    assert_eq!(status, 200, "{page}");
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(head.contains("cache-control: no-store"), "{head}");
    let csp = head
        .lines()
        .find(|l| l.starts_with("content-security-policy:"))
        .unwrap_or_else(|| panic!("no Content-Security-Policy: {head}"));
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'nonce-"),
        "{csp}"
    );
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .and_then(|r| r.split('\'').next())
        .unwrap();
    assert!(
        page.contains(&format!("<script nonce=\"{nonce}\">")),
        "the page's script carries the header's nonce"
    );
    let store = dir.path().display().to_string();
    for data in ["orders", "users", "ACQUIRED", store.as_str()] {
        assert!(
            !page.contains(data),
            "the page holds no data ({data}): {page}"
        );
    }
    assert!(page.contains("Authorization") && page.contains("sessionStorage"));
    // A second load has another nonce.
    let (again, _, _) = curl(&format!("{}/dashboard", serve.url), &[]).unwrap();
    assert!(!again.contains(nonce), "{again}");
}

/// The data needs a token (401 without, 403 for a namespace the token does not open), and shows only what the
/// token opens: slots used of 2^bits, the held slots with their holders and windows in UTC, events in words.
#[test]
fn the_data_needs_the_token_of_each_namespace_and_tells_slots_and_events_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let Some(serve) = server(&dir) else {
        eprintln!("skipped: curl is not installed");
        return;
    };
    let url = &serve.url;
    let (head, body, status) = curl(&format!("{url}/v1/dashboard"), &[]).unwrap();
    assert_eq!(status, 401, "{body}");
    assert!(head.contains("www-authenticate: bearer"), "{head}");
    let (_, body, status) = curl(
        &format!("{url}/v1/dashboard"),
        &["-H", &bearer("not-a-token-0123456789")],
    )
    .unwrap();
    assert_eq!(status, 401, "{body}");
    let (_, body, status) = curl(
        &format!("{url}/v1/dashboard?ns=users"),
        &["-H", &bearer(ORDERS)],
    )
    .unwrap();
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("FORBIDDEN"), "{body}");

    // The orders token: orders only (users is served here too, but not shown), and no server-wide counters.
    let (head, body, status) =
        curl(&format!("{url}/v1/dashboard"), &["-H", &bearer(ORDERS)]).unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(head.contains("cache-control: no-store"), "{head}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> = v["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["orders"], "{body}");
    assert!(!body.contains("users"), "{body}");
    assert!(v["history"].is_null() && v["clients"].is_null(), "{body}");
    let orders = &v["namespaces"][0];
    let bits = orders["record"]["bits"].as_u64().unwrap();
    assert_eq!(orders["capacity"].as_u64(), Some(1 << bits), "{orders}");
    assert_eq!(orders["used"].as_u64(), Some(1), "{orders}");
    assert_eq!(orders["served_here"], true);
    assert_eq!(
        orders["summary"]["free"].as_u64(),
        Some((1 << bits) - 1),
        "{orders}"
    );
    let slots = orders["slots"].as_array().unwrap();
    assert_eq!(slots.len(), 1, "only the held slot is listed: {orders}");
    let held = &slots[0];
    assert_eq!(held["state"], "held");
    assert_eq!(held["fence"], 1);
    assert!(!held["holder"].as_str().unwrap().is_empty(), "{held}");
    let expires = held["expires_at_ms"].as_u64().unwrap();
    let now = orders["store_now_ms"].as_u64().unwrap();
    assert!(expires > now, "{held}");
    assert!(
        held["floor"].is_null(),
        "a first window has no floor: {held}"
    );
    for t in ["ceiling", "expires_at"] {
        let s = held[t].as_str().unwrap();
        assert!(
            s.len() == 24 && s.ends_with('Z') && s.as_bytes()[10] == b'T',
            "{t} in UTC: {s}"
        );
    }
    let events = v["events"].as_array().unwrap();
    assert!(
        events.iter().all(|e| e["namespace"] == "orders"),
        "{events:?}"
    );
    let acquired = events
        .iter()
        .find(|e| e["name"] == "ACQUIRED")
        .unwrap_or_else(|| panic!("no acquisition: {events:?}"));
    let text = acquired["text"].as_str().unwrap();
    assert!(
        text.starts_with("slot 0 acquired (fence 1), window until 20") && text.ends_with('Z'),
        "in words: {text}"
    );
    assert!(
        !text.contains('{') && !text.contains("ceiling_ms"),
        "no debug text: {text}"
    );
    assert_eq!(acquired["level"], "INFO");

    // A client of the API takes a slot (counted among the clients' acquisitions); the admin token sees every
    // namespace, the one asked first, and the counters of the last 10 minutes.
    let client = cosid::Runtime::builder()
        .store(format!("{url}?token={ADMIN}").as_str())
        .namespace("clients")
        .build()
        .unwrap();
    let (_, body, status) = curl(
        &format!("{url}/v1/dashboard?ns=users&ns=users"),
        &["-H", &bearer(ADMIN)],
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> = v["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["users", "clients", "orders"], "{body}");
    let clients = &v["namespaces"][1];
    assert_eq!(clients["served_here"], false, "{clients}");
    assert_eq!(clients["used"], 1, "{clients}");
    assert_eq!(clients["slots"][0]["state"], "held", "{clients}");
    let steps = v["history"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 60, "{body}");
    let acquired: u64 = steps.iter().map(|s| s["acquired"].as_u64().unwrap()).sum();
    assert_eq!(acquired, 1, "the client's acquisition is counted: {body}");
    let told = v["clients"].as_array().unwrap();
    assert!(
        told.iter()
            .any(|c| c["text"].as_str().unwrap().contains("acquired")),
        "{told:?}"
    );
    drop(client);

    // A namespace never used: asked for, shown without a record.
    let (_, body, status) = curl(
        &format!("{url}/v1/dashboard?ns=fresh"),
        &["-H", &bearer(ADMIN)],
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["namespaces"][0]["name"], "fresh");
    assert!(v["namespaces"][0]["record"].is_null(), "{body}");
}

/// With no token configured, the data is served to anyone.
#[test]
fn without_tokens_the_data_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&sqlite(&dir), &[]);
    let Some((_, body, status)) = curl(&format!("{}/v1/namespaces/a/ids", serve.url), &[]) else {
        eprintln!("skipped: curl is not installed");
        return;
    };
    assert_eq!(status, 200, "{body}");
    let (_, body, status) = curl(&format!("{}/v1/dashboard", serve.url), &[]).unwrap();
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["namespaces"][0]["name"], "a", "{body}");
    assert_eq!(v["namespaces"][0]["used"], 1, "{body}");
}
