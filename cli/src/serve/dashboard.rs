//! `GET /dashboard?ns=NAME&ns=...`: one server-rendered page of the namespaces asked for (and those of the server's
//! own `/ids` runtimes): each slot's state, holder, fence, window and time to expiry, and the latest events of the
//! server's runtimes. It reloads itself every 2 s.

use super::api::State;
use cosid::lease::Namespace;
use std::fmt::Write;

/// `s` safe in HTML text and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The latest events of the server's own runtimes (of `/v1/ids`), newest first.
fn recent_events(state: &State, out: &mut String) {
    let events: Vec<_> = state
        .events
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .rev()
        .cloned()
        .collect();
    out.push_str("<h2>recent events of this server's runtimes</h2>\n");
    if events.is_empty() {
        out.push_str("<p>none yet</p>\n");
        return;
    }
    out.push_str("<table class=\"events\"><tr><th>time (UTC)</th><th>namespace</th><th>event</th><th>detail</th></tr>\n");
    for e in events {
        let at = crate::show::rfc3339(e.at_ms);
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"detail\">{}</td></tr>",
            esc(&at),
            esc(&e.namespace),
            e.name,
            esc(&e.detail)
        );
    }
    out.push_str("</table>\n");
}

/// The page for `names` (each already authorized).
pub async fn render(state: &State, names: &[String]) -> String {
    let mut out = String::from(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"2\">\
         <title>cosid serve</title><style>body{font-family:sans-serif;margin:1.5em}\
         table{border-collapse:collapse;margin-bottom:1.5em}td,th{border:1px solid #ccc;padding:.25em .6em;\
         text-align:right}th{background:#eee}.events td{text-align:left}.detail{font-family:monospace;font-size:85%}.held{color:#070}.expired{color:#a60}.free{color:#777}</style>\
         </head><body>\n",
    );
    let _ = writeln!(
        out,
        "<h1>cosid serve</h1><p>store {}</p>",
        esc(&state.shown)
    );
    if names.is_empty() {
        out.push_str("<p>No namespace: add <code>?ns=NAME</code> to the address.</p>\n");
    }
    for name in names {
        let _ = writeln!(out, "<h2>namespace {}</h2>", esc(name));
        let Ok(ns) = Namespace::new(name.clone()) else {
            out.push_str("<p>not a valid namespace name</p>\n");
            continue;
        };
        let seen = match state.store.inspect(&ns).await {
            Ok(s) => s,
            Err(e) => {
                let _ = writeln!(out, "<p class=\"error\">{}</p>", esc(&e.to_string()));
                continue;
            }
        };
        let now = seen.store_now;
        match seen.namespace {
            None => out.push_str("<p>no record yet</p>\n"),
            Some(r) => {
                let _ = writeln!(
                    out,
                    "<p>{} slots, tolerance {} ms, not_before {}</p>",
                    1u64 << r.bits,
                    r.tolerance_ms,
                    r.not_before
                );
            }
        }
        out.push_str(
            "<table><tr><th>slot</th><th>state</th><th>holder</th><th>fence</th><th>window (floor, ceiling]</th>\
             <th>expires in</th></tr>\n",
        );
        for r in &seen.slots {
            let state = if r.owner.is_none() {
                "free"
            } else if r.is_held_at(now) {
                "held"
            } else {
                "expired"
            };
            let holder = r.owner.as_ref().map_or_else(
                || format!("({})", r.last_owner_key.as_deref().unwrap_or("-")),
                |o| o.key.clone(),
            );
            let expires = if state == "held" {
                format!("{:.1} s", (r.expires_at - now) as f64 / 1000.0)
            } else {
                "-".to_owned()
            };
            let _ = writeln!(
                out,
                "<tr class=\"{state}\"><td>{}</td><td>{state}</td><td>{}</td><td>{}</td><td>({}, {}]</td><td>{}</td></tr>",
                r.slot,
                esc(&holder),
                r.fence,
                r.floor,
                r.ceiling,
                expires
            );
        }
        out.push_str("</table>\n");
    }
    recent_events(state, &mut out);
    out.push_str("</body></html>\n");
    out
}
