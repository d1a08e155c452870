//! The dashboard: `GET /dashboard` is a page with no data in it (so a browser opens it with no token), whose script
//! asks for a token once when the server needs one, keeps it in the tab's `sessionStorage` (never in a URL), and
//! every 2 s fetches `GET /v1/dashboard?ns=...` with `Authorization: Bearer`: per namespace the slots used of
//! 2^bits, the holders and their windows, the latest events of the server's `/ids` runtimes in words, what clients
//! did through the API over the last 10 minutes, and the chart of it.
//!
//! A token may also be handed in the fragment (`/dashboard#token=...`: browsers never send a fragment, so no server
//! or proxy logs it); the script stores it and removes it from the address at once.

use super::api::State;
use super::metrics::{Occupancy, Step, HISTORY_STEPS, HISTORY_STEP_S};
use crate::show::rfc3339;
use cosid::lease::Namespace;
use serde_json::{json, Value};

/// Held slots listed per namespace; past that the page says how many more there are.
const HELD_LISTED: usize = 200;
/// Expired or released slots listed per namespace, the most recently used first.
const RECENT_LISTED: usize = 12;
/// Steps of clients' activity told in words.
const CLIENT_STEPS_TOLD: usize = 10;

/// `ms` for a person: `850 ms`, `12 s`, `4 min 5 s`, `3 h 20 min`, `12 days`.
pub fn human_ms(ms: u64) -> String {
    let s = ms / 1000;
    match ms {
        0..1000 => format!("{ms} ms"),
        1000..60_000 => format!("{s} s"),
        60_000..3_600_000 => format!("{} min {} s", s / 60, s % 60),
        3_600_000..172_800_000 => format!("{} h {} min", s / 3600, s / 60 % 60),
        _ => format!("{} days", s / 86_400),
    }
}

/// A runtime's event in words, for a person (`slot 3 acquired (fence 7), window until ...`).
pub fn words(event: &cosid::Event) -> String {
    use cosid::Event as E;
    match event {
        E::Acquired {
            slot,
            fence,
            ceiling_ms,
            ..
        } => format!(
            "slot {slot} acquired (fence {fence}), window until {}",
            rfc3339(*ceiling_ms)
        ),
        E::Renewed {
            slot, ceiling_ms, ..
        } => format!("slot {slot} renewed, window until {}", rfc3339(*ceiling_ms)),
        E::RenewFailed {
            slot,
            error,
            retry_in_ms,
        } => format!(
            "renewal of slot {slot} failed: {error}; retrying in {}, ids still issued up to the window's end",
            human_ms(*retry_in_ms)
        ),
        E::SlotLost { slot, reason } => {
            format!("slot {slot} lost: {reason}; no ids until a new slot is acquired")
        }
        E::Released {
            slot,
            last_issued_ms,
        } => match last_issued_ms {
            Some(ms) => format!("slot {slot} released, last id at {}", rfc3339(*ms)),
            None => format!("slot {slot} released, no id issued"),
        },
        E::DuplicateOwnerKey { key, other_slot } => format!(
            "another live instance (slot {other_slot}) has owner key \"{key}\": took another slot"
        ),
        E::ClockSkew { local_ms, store_ms } => format!(
            "this host's clock is {} {} the store's",
            human_ms(local_ms.abs_diff(*store_ms)),
            if local_ms > store_ms {
                "ahead of"
            } else {
                "behind"
            }
        ),
        E::StoreRegression { slot, detail } => format!(
            "the store lost writes on slot {slot} ({detail}); no ids until the namespace is safe again"
        ),
        E::StoreUnsafe {
            store,
            setting,
            value,
            expected,
        } => format!(
            "the {store} server has {setting} = {value}; the safety claim needs {setting} = {expected}"
        ),
        other => other
            .message()
            .trim_start_matches("cosid: ")
            .to_owned(),
    }
}

/// What the token of a request opens.
pub struct Scope<'a> {
    /// Every namespace (server-wide counters are shown).
    pub whole: bool,
    /// Whether it opens a namespace.
    pub opens: &'a (dyn Fn(&str) -> bool + Sync),
}

/// The body of `GET /v1/dashboard` for `names` (each already authorized).
pub async fn data(state: &State, names: &[String], scope: &Scope<'_>) -> Value {
    let own = state.held();
    let cached = state.metrics.occupancies();
    let mut namespaces = Vec::with_capacity(names.len());
    for name in names {
        let here = own.contains_key(name);
        namespaces.push(namespace(state, name, here, cached.get(name)).await);
    }
    let events: Vec<Value> = state
        .events
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .rev()
        .filter(|e| (scope.opens)(&e.namespace))
        .map(|e| {
            json!({
                "at": rfc3339(e.at_ms),
                "at_ms": e.at_ms,
                "namespace": e.namespace,
                "name": e.name,
                "level": e.level,
                "text": e.detail,
            })
        })
        .collect();
    let now_ms = cosid::clock::Clock::now_ms(&cosid::clock::SystemClock);
    // The counters of clients count every namespace: only a token for the whole server sees them.
    let (history, clients) = if scope.whole {
        let steps = steps(&state.metrics.history(), now_ms / 1000);
        let told = told(&steps);
        (
            json!({ "step_s": HISTORY_STEP_S, "steps": steps }),
            json!(told),
        )
    } else {
        (Value::Null, Value::Null)
    };
    json!({
        "store": state.shown,
        "now": rfc3339(now_ms),
        "namespaces": namespaces,
        "events": events,
        "history": history,
        "clients": clients,
    })
}

/// The last [`HISTORY_STEPS`] steps up to the one of `now_s`, quiet ones included.
fn steps(history: &[Step], now_s: u64) -> Vec<Step> {
    let last = now_s - now_s % HISTORY_STEP_S;
    (0..HISTORY_STEPS as u64)
        .rev()
        .filter_map(|back| last.checked_sub(back * HISTORY_STEP_S))
        .map(|at| {
            history
                .iter()
                .find(|s| s.at == at)
                .copied()
                .unwrap_or(Step {
                    at,
                    ..Step::default()
                })
        })
        .collect()
}

/// Clients' activity in words, newest step first: `12:40:10–12:40:20 UTC: 3 acquired, 1 refused, 12 renewed`.
fn told(steps: &[Step]) -> Vec<Value> {
    let count = |n: u64, what: &str| (n > 0).then(|| format!("{n} {what}"));
    steps
        .iter()
        .rev()
        .filter_map(|s| {
            let parts: Vec<String> = [
                count(s.acquired, "acquired"),
                count(s.refused, "refused"),
                count(s.renewed, "renewed"),
                count(s.lost, "lost"),
            ]
            .into_iter()
            .flatten()
            .collect();
            (!parts.is_empty()).then(|| {
                json!({
                    "at": rfc3339(s.at * 1000),
                    "until": rfc3339((s.at + HISTORY_STEP_S) * 1000),
                    "text": parts.join(", "),
                    "level": if s.lost > 0 || s.refused > 0 { "WARN" } else { "INFO" },
                })
            })
        })
        .take(CLIENT_STEPS_TOLD)
        .collect()
}

/// One namespace as the store shows it now: held slots, the most recently used others, and a summary of the rest.
/// `cached` is what the server's housekeeping last read, shown when the store does not answer now.
async fn namespace(
    state: &State,
    name: &str,
    served_here: bool,
    cached: Option<&Occupancy>,
) -> Value {
    let base = json!({ "name": name, "served_here": served_here });
    let with = |mut v: Value, extra: Value| {
        if let (Some(v), Value::Object(extra)) = (v.as_object_mut(), extra) {
            v.extend(extra);
        }
        v
    };
    let Ok(ns) = Namespace::new(name.to_owned()) else {
        return with(base, json!({ "error": "not a valid namespace name" }));
    };
    let seen = match state.store.inspect(&ns).await {
        Ok(s) => s,
        Err(e) => {
            let last = cached
                .filter(|o| o.capacity > 0)
                .map(|o| json!({ "used": o.held, "capacity": o.capacity }));
            return with(
                base,
                json!({ "error": format!("the store does not answer: {e}"), "last_seen": last }),
            );
        }
    };
    let now = seen.store_now;
    let Some(record) = seen.namespace else {
        return with(
            base,
            json!({ "store_now_ms": now, "record": null, "slots": [], "summary": null }),
        );
    };
    let capacity = 1u64 << record.bits;
    let row = |r: &cosid::lease::SlotRecord, state: &str| {
        // The owner key only: the incarnation is the holder's capability and never shown.
        let holder = match &r.owner {
            Some(o) => o.key.clone(),
            None => r.last_owner_key.clone().unwrap_or_default(),
        };
        json!({
            "slot": r.slot,
            "state": state,
            "holder": holder,
            "fence": r.fence,
            // 0: the slot's first window, which starts with the namespace's epoch.
            "floor": (r.floor > 0).then(|| rfc3339(r.floor)),
            "ceiling": rfc3339(r.ceiling),
            "expires_at": rfc3339(r.expires_at),
            "expires_at_ms": r.expires_at,
        })
    };
    let (mut held, mut others): (Vec<_>, Vec<_>) =
        seen.slots.iter().partition(|r| r.is_held_at(now));
    held.sort_by_key(|r| r.slot);
    others.sort_by_key(|r| std::cmp::Reverse(r.expires_at));
    let expired = others.iter().filter(|r| r.owner.is_some()).count() as u64;
    let released = others.len() as u64 - expired;
    let mut slots: Vec<Value> = held
        .iter()
        .take(HELD_LISTED)
        .map(|r| row(r, "held"))
        .collect();
    slots.extend(others.iter().take(RECENT_LISTED).map(|r| {
        row(
            r,
            if r.owner.is_some() {
                "expired"
            } else {
                "released"
            },
        )
    }));
    let used = held.len() as u64;
    with(
        base,
        json!({
            "store_now_ms": now,
            "store_now": rfc3339(now),
            "record": {
                "bits": record.bits,
                "tolerance": human_ms(record.tolerance_ms),
                "not_before": (record.not_before > 0).then(|| rfc3339(record.not_before)),
            },
            "capacity": capacity,
            "used": used,
            "slots": slots,
            "summary": {
                "free": capacity.saturating_sub(used),
                "expired": expired,
                "released": released,
                "never_used": capacity.saturating_sub(seen.slots.len() as u64),
                "held_not_listed": held.len().saturating_sub(HELD_LISTED),
                "others_not_listed": others.len().saturating_sub(RECENT_LISTED),
            },
        }),
    )
}

/// The page, with the nonce that lets its own style and script run and nothing else.
pub fn page(nonce: &str) -> String {
    SHELL.replace("{NONCE}", nonce)
}

/// The `Content-Security-Policy` of [`page`]: its own inline style and script (by nonce), fetches to this server,
/// nothing else.
pub fn policy(nonce: &str) -> String {
    format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; \
         img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
}

const SHELL: &str = r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>cosid serve</title>
<style nonce="{NONCE}">
:root{--fg:#1d2330;--muted:#667085;--line:#e4e7ec;--bg:#f4f5f7;--card:#fff;--ok:#12805c;--warn:#b54708;--err:#c01048;--acc:#2e6bd3}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg)}
header{display:flex;align-items:center;gap:1em;padding:.65em 1.5em;background:#1d2330;color:#fff}
header h1{font-size:1.1em;margin:0;font-weight:600}
#store{color:#c5cbd6;font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.85em}
#status{margin-left:auto;font-size:.85em;padding:.15em .7em;border-radius:1em;background:#475467}
#status.ok{background:var(--ok)}#status.stale{background:var(--warn)}#status.down{background:var(--err)}
main{padding:1em 1.5em;max-width:1280px}
body.stale #data{opacity:.55}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:.9em 1.2em;margin-bottom:1em}
.card h2{margin:0 0 .35em;font-size:1.1em;font-weight:600}
.head{display:flex;align-items:baseline;gap:.2em;margin-bottom:.35em}.head h2{margin:0}
.card h3{margin:0 0 .5em;font-size:.95em;font-weight:600;color:var(--muted)}
.tag{font-size:.75em;font-weight:500;color:var(--acc);border:1px solid var(--acc);border-radius:1em;padding:0 .55em;margin-left:.6em}
.usage{display:flex;align-items:center;gap:1em}.usage b{font-size:1.05em;white-space:nowrap}
.bar{flex:1;height:12px;background:#eef0f3;border-radius:6px;overflow:hidden;max-width:520px}
.bar>div{height:100%;background:var(--acc);min-width:2px}
.meta,.muted{color:var(--muted)}.meta{font-size:.9em;margin:.3em 0}
table{border-collapse:collapse;width:100%;margin-top:.5em;font-size:.92em}
th,td{text-align:left;padding:.3em .6em;border-bottom:1px solid var(--line);white-space:nowrap}
th{color:var(--muted);font-weight:500}td.num{text-align:right;font-variant-numeric:tabular-nums}
.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.95em}
.pill{display:inline-block;border-radius:1em;padding:0 .6em;font-size:.85em}
tr.held .pill{background:#d1fadf;color:#05603a}tr.expired .pill{background:#fef0c7;color:#93370d}tr.released .pill{background:#f2f4f7;color:#475467}
td.soon{color:var(--warn);font-weight:600}
.grid{display:grid;grid-template-columns:minmax(0,1.1fr) minmax(0,1fr);gap:1em}
ul.events{list-style:none;padding:0;margin:0;max-height:18em;overflow:auto}
ul.events li{padding:.25em 0;border-bottom:1px solid var(--line)}
ul.events time{color:var(--muted);font-variant-numeric:tabular-nums;margin-right:.6em}
ul.events .ns{font-weight:600;margin-right:.4em}
.WARN{color:var(--warn)}.ERROR{color:var(--err)}
.error{color:var(--err)}
#problem{background:#fef3f2;border:1px solid #fecdca;color:#912018;border-radius:8px;padding:.6em 1em;margin-bottom:1em}
#login{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:1em 1.2em;margin-bottom:1em;max-width:560px}
#login input{font:inherit;padding:.3em .5em;width:22em;margin:0 .5em}
button{font:inherit;padding:.3em .9em;border-radius:6px;border:1px solid #98a2b3;background:#fff;cursor:pointer}
#forget{margin-left:.5em;font-size:.8em;padding:.05em .6em;background:transparent;color:#c5cbd6;border-color:#667085}
svg text{font-size:11px;fill:#667085}
.legend{font-size:.85em;color:var(--muted)}.legend i{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin:0 .3em 0 .8em;vertical-align:-1px}
.acq{background:#2e6bd3}.ref{background:#d92d20}
@media (max-width:900px){.grid{grid-template-columns:1fr}}
</style></head>
<body>
<header><h1>cosid serve</h1><span id="store"></span><button id="forget" hidden>forget token</button><span id="status">loading</span></header>
<main>
<form id="login" hidden><b>This server needs a token.</b><p id="why" class="muted"></p>
<label>Token<input id="token" type="password" autocomplete="off" spellcheck="false"></label><button type="submit">Open</button>
<p class="muted">Kept in this tab only (sessionStorage), sent as <code>Authorization: Bearer</code>, never in an address.</p></form>
<div id="problem" hidden></div>
<div id="data">
<div id="namespaces"></div>
<div class="grid">
<section class="card"><h2>Acquisitions and refusals through the API</h2><div id="chart"></div></section>
<section class="card"><h2>Clients, last 10 minutes</h2><ul id="clients" class="events"></ul></section>
</div>
<section class="card"><h2>Events of this server's /ids runtimes</h2><ul id="events" class="events"></ul></section>
</div>
</main>
<script nonce="{NONCE}">
"use strict";
(function () {
  var KEY = "cosid-serve-token";
  // A token handed in the fragment (never sent to a server, so in no log) is kept for this tab and taken out of
  // the address at once.
  if (location.hash.indexOf("#token=") === 0) {
    try { sessionStorage.setItem(KEY, decodeURIComponent(location.hash.slice(7))); } catch (e) {}
    history.replaceState(null, "", location.pathname + location.search);
  }
  function $(id) { return document.getElementById(id); }
  function token() { try { return sessionStorage.getItem(KEY); } catch (e) { return null; } }
  // Every value goes into the page as text (append of a string, textContent): nothing of the data is parsed as HTML.
  function el(tag, cls) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (var k in attrs) e.setAttribute(k, String(attrs[k]));
    return e;
  }
  function human(ms) {
    var s = Math.floor(Math.abs(ms) / 1000);
    if (s < 60) return s + " s";
    var m = Math.floor(s / 60);
    if (m < 60) return m + " min " + (s % 60) + " s";
    var h = Math.floor(m / 60);
    if (h < 48) return h + " h " + (m % 60) + " min";
    return Math.floor(h / 24) + " days";
  }
  // "2026-12-06T12:40:01.000Z" -> "2026-12-06 12:40:01Z"; a second time of the same day without its date.
  function utc(iso, sameDayAs) {
    if (!iso) return "start";
    var d = iso.slice(0, 10), t = iso.slice(11, 19) + "Z";
    return sameDayAs && sameDayAs.slice(0, 10) === d ? t : d + " " + t;
  }
  var skew = 0;          // the store's clock minus this browser's, at the last answer
  var lastOk = 0, failing = null, waitingForToken = false, timer = null;

  function expiry(td) {
    var left = Number(td.dataset.exp) - (Date.now() + skew);
    td.textContent = left >= 0 ? "expires in " + human(left) : "expired " + human(left) + " ago";
    td.className = left >= 0 && left < 5000 ? "soon" : "";
  }
  function tick() {
    var tds = document.querySelectorAll("td[data-exp]");
    for (var i = 0; i < tds.length; i++) expiry(tds[i]);
    var s = $("status"), age = Math.round((Date.now() - lastOk) / 1000);
    document.body.classList.toggle("stale", !!failing || (lastOk > 0 && age > 6));
    if (waitingForToken) { s.className = "down"; s.textContent = "needs a token"; }
    else if (failing) { s.className = "down"; s.textContent = failing + (lastOk ? " · data from " + human(Date.now() - lastOk) + " ago" : ""); }
    else if (!lastOk) { s.className = ""; s.textContent = "loading"; }
    else if (age > 6) { s.className = "stale"; s.textContent = "stale · data from " + human(Date.now() - lastOk) + " ago"; }
    else { s.className = "ok"; s.textContent = "live · updated " + new Date(lastOk).toISOString().slice(11, 19) + " UTC"; }
    $("forget").hidden = !token();
    $("data").hidden = waitingForToken && !lastOk;
  }

  function slotRow(r) {
    var tr = el("tr", r.state);
    tr.append(el("td", "num", r.slot), el("td", null, el("span", "pill", r.state)), el("td", "mono", r.holder || "—"),
      el("td", "num", r.fence), el("td", "mono", utc(r.floor) + " → " + utc(r.ceiling, r.floor)));
    var exp = el("td");
    if (r.state === "held") { exp.dataset.exp = r.expires_at_ms; expiry(exp); }
    else exp.append(r.state === "expired" ? "expired at " + utc(r.expires_at) : "—");
    tr.append(exp);
    return tr;
  }
  function namespace(n) {
    var sec = el("section", "card ns");
    var head = el("div", "head", el("h2", null, "namespace " + n.name));
    if (n.served_here) head.append(el("span", "tag", "this server issues ids here (/ids)"));
    sec.append(head);
    if (n.error) {
      sec.append(el("p", "error", n.error));
      if (n.last_seen) sec.append(el("p", "muted", "Last seen (up to 5 s before): " + n.last_seen.used + " of " + n.last_seen.capacity + " slots used."));
      return sec;
    }
    if (!n.record) { sec.append(el("p", "muted", "no record yet: no client has used this namespace")); return sec; }
    var pct = n.capacity ? 100 * n.used / n.capacity : 0;
    var bar = el("div", "bar"), fill = el("div");
    fill.style.width = Math.min(100, pct) + "%";
    bar.append(fill);
    sec.append(el("div", "usage", el("b", null, n.used + " of " + n.capacity + " slots used"), bar,
      el("span", "muted", (pct < 1 && n.used ? pct.toFixed(2) : Math.round(pct)) + " %")));
    var s = n.summary;
    var rest = [s.free + " free"];
    if (s.never_used) rest.push(s.never_used + " never used");
    if (s.expired) rest.push(s.expired + " expired");
    if (s.released) rest.push(s.released + " released");
    var meta = "bits " + n.record.bits + " · tolerance " + n.record.tolerance + " · store clock " + utc(n.store_now);
    if (n.record.not_before) meta += " · not before " + utc(n.record.not_before);
    sec.append(el("p", "meta", rest.join(", ") + " · " + meta));
    if (n.slots.length) {
      var t = el("table");
      var head = el("tr");
      ["slot", "state", "holder (owner key)", "fence", "window (UTC, floor → ceiling]", "expiry"].forEach(function (c) { head.append(el("th", null, c)); });
      t.append(head);
      n.slots.forEach(function (r) { t.append(slotRow(r)); });
      sec.append(t);
    }
    var more = [];
    if (s.held_not_listed) more.push(s.held_not_listed + " more held slots");
    if (s.others_not_listed) more.push(s.others_not_listed + " older expired or released slots");
    if (more.length) sec.append(el("p", "muted", "Not listed: " + more.join(", ") + "."));
    return sec;
  }
  function chart(h) {
    var box = $("chart");
    box.replaceChildren();
    if (!h) { box.append(el("p", "muted", "Needs a token that opens every namespace.")); return; }
    var W = 600, H = 150, L = 34, B = 20, T = 8, steps = h.steps, n = steps.length;
    var max = 1;
    steps.forEach(function (s) { max = Math.max(max, s.acquired, s.refused); });
    var g = svg("svg", { viewBox: "0 0 " + W + " " + H, width: "100%", role: "img", "aria-label": "acquisitions and refusals per " + h.step_s + " s" });
    var bw = (W - L) / n, y = function (v) { return H - B - (H - B - T) * v / max; };
    [0, max].forEach(function (v) {
      g.append(svg("line", { x1: L, x2: W, y1: y(v), y2: y(v), stroke: "#e4e7ec" }));
      var t = svg("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end" }); t.textContent = v; g.append(t);
    });
    steps.forEach(function (s, i) {
      var x = L + i * bw;
      [["acquired", "#2e6bd3", 0], ["refused", "#d92d20", 1]].forEach(function (k) {
        var v = s[k[0]]; if (!v) return;
        var r = svg("rect", { x: x + 1 + k[2] * (bw - 2) / 2, y: y(v), width: Math.max(1, (bw - 2) / 2), height: H - B - y(v), fill: k[1] });
        var tt = svg("title", {}); tt.textContent = new Date(s.at * 1000).toISOString().slice(11, 19) + " UTC: " + v + " " + k[0]; r.append(tt);
        g.append(r);
      });
    });
    [[0, (n * h.step_s / 60) + " min ago", "start"], [n, "now", "end"]].forEach(function (a) {
      var t = svg("text", { x: L + a[0] * bw, y: H - 5, "text-anchor": a[2] }); t.textContent = a[1]; g.append(t);
    });
    box.append(g, el("div", "legend", el("i", "acq"), "acquired", el("i", "ref"), "refused", "  · per " + h.step_s + " s"));
  }
  function events(list, items, empty, text) {
    list.replaceChildren();
    if (!items || !items.length) { list.append(el("li", "muted", empty)); return; }
    items.forEach(function (e) { list.append(text(e)); });
  }
  function render(d) {
    $("store").textContent = "store " + d.store;
    var box = $("namespaces");
    box.replaceChildren();
    if (!d.namespaces.length) box.append(el("section", "card muted", "No namespace yet: add ?ns=NAME to the address, or serve ids through /v1/namespaces/NAME/ids."));
    d.namespaces.forEach(function (n) { box.append(namespace(n)); });
    chart(d.history);
    events($("clients"), d.clients, d.clients ? "no acquisition, refusal, renewal or loss through the API in the last 10 minutes" : "needs a token that opens every namespace",
      function (e) { return el("li", e.level, el("time", null, utc(e.at) + "–" + utc(e.until, e.at)), e.text); });
    events($("events"), d.events, "none yet", function (e) {
      return el("li", e.level, el("time", null, utc(e.at)), el("span", "ns", e.namespace), e.text);
    });
  }

  function problem(text) { var p = $("problem"); p.hidden = !text; p.textContent = text || ""; }
  function ask(why) {
    waitingForToken = true;
    $("login").hidden = false;
    $("why").textContent = why;
    $("token").focus();
  }
  function load() {
    clearTimeout(timer);
    var headers = { "Accept": "application/json" }, t = token();
    if (t) headers["Authorization"] = "Bearer " + t;
    fetch("v1/dashboard" + location.search, { headers: headers, cache: "no-store", credentials: "omit" })
      .then(function (r) {
        return r.json().catch(function () { return null; }).then(function (body) {
          var message = body && body.message ? body.message : "HTTP " + r.status;
          if (r.status === 401) { failing = null; ask(t ? "The token was refused." : ""); tick(); return; }
          if (r.status === 403) { failing = null; ask("This token does not open every namespace asked for: " + message + "."); tick(); return; }
          if (!r.ok || !body) { failing = "error: " + message; problem("The server answered " + r.status + ": " + message); }
          else {
            var now = Date.now();
            failing = null; lastOk = now; waitingForToken = false; $("login").hidden = true; problem(null);
            var first = body.namespaces.find(function (n) { return n.store_now_ms; });
            if (first) skew = first.store_now_ms - now;
            render(body);
          }
          tick();
          timer = setTimeout(load, 2000);
        });
      }, function () {
        failing = "server unreachable"; problem("The server does not answer; retrying every 2 s."); tick();
        timer = setTimeout(load, 2000);
      });
  }
  $("login").addEventListener("submit", function (ev) {
    ev.preventDefault();
    try { sessionStorage.setItem(KEY, $("token").value.trim()); } catch (e) {}
    $("token").value = "";
    load();
  });
  $("forget").addEventListener("click", function () {
    try { sessionStorage.removeItem(KEY); } catch (e) {}
    load();
  });
  setInterval(tick, 1000);
  load();
})();
</script>
</body></html>
"##;
