//! `cosid doctor`: checks a store as a user would before deploying on it: it answers, its server keeps what it
//! commits, its clock agrees with this host's, the namespace's record fits this process's settings, and a slot is
//! free.

use super::{describe_layout, namespace, OpenStore};
use crate::failure::Failure;
use crate::show::{rfc3339, seconds};
use cosid::lease::{protocol, Namespace, NamespaceConfig};
use cosid::store::{Inspection, StoreUrl};
use cosid::Config;
use std::io::Write;
use std::time::{Duration, Instant};

/// How long the store's durability settings may take to read, as the runtime bounds it at start.
const DURABILITY_BOUND: Duration = Duration::from_secs(5);

/// Options of `cosid doctor`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object: {"ok": bool, "checks": [{"name", "status": "ok"|"warn"|"fail"|"skipped", ...}]}
    #[arg(long)]
    json: bool,
}

/// How a check came out. A warning is worth reading but does not fail the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ok,
    Warn,
    Fail,
    Skipped,
}

impl Outcome {
    fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Warn => "warn",
            Outcome::Fail => "fail",
            Outcome::Skipped => "skipped",
        }
    }

    fn mark(self) -> &'static str {
        match self {
            Outcome::Ok => "✓",
            Outcome::Warn => "!",
            Outcome::Fail => "✗",
            Outcome::Skipped => "-",
        }
    }
}

/// One check: its name, outcome, what it found in words, and the same as data for `--json`.
struct Check {
    name: &'static str,
    outcome: Outcome,
    detail: String,
    data: serde_json::Value,
}

fn check(name: &'static str, outcome: Outcome, detail: String, data: serde_json::Value) -> Check {
    Check {
        name,
        outcome,
        detail,
        data,
    }
}

/// The checks after `reachable`, skipped when the store did not answer.
const AFTER_REACHABLE: [&str; 4] = ["durability", "clock", "namespace", "slots"];

/// Runs every check, prints them, and fails (status 1) when one failed.
pub fn run(args: &Args, config: &Config) -> Result<(), Failure> {
    let ns = namespace(config)?;
    let (url, shown) = crate::settings::store_url(config)?;
    let mut checks = Vec::new();
    match reach(config, &ns, &url)? {
        Reached::No(c) => {
            checks.push(c);
            for name in AFTER_REACHABLE {
                let detail = "the store did not answer".to_owned();
                checks.push(check(name, Outcome::Skipped, detail, serde_json::json!({})));
            }
        }
        Reached::Yes {
            check: c,
            open,
            seen,
            local_ms,
            round_trip,
        } => {
            checks.push(c);
            checks.push(durability(&open));
            checks.push(clock(config, seen.store_now, local_ms, round_trip));
            checks.push(namespace_record(config, &ns, &seen, local_ms));
            checks.push(slots(config, &seen));
        }
    }
    let failed = checks.iter().filter(|c| c.outcome == Outcome::Fail).count();
    let mut out = std::io::stdout().lock();
    if args.json {
        let value = serde_json::json!({
            "store": shown,
            "namespace": ns.as_str(),
            "ok": failed == 0,
            "checks": checks.iter().map(|c| {
                let mut v = serde_json::json!({
                    "name": c.name,
                    "status": c.outcome.name(),
                    "detail": c.detail,
                });
                if let (Some(v), Some(data)) = (v.as_object_mut(), c.data.as_object()) {
                    v.extend(data.clone());
                }
                v
            }).collect::<Vec<_>>(),
        });
        writeln!(out, "{value}")?;
    } else {
        writeln!(
            out,
            "cosid doctor: store {shown}, namespace {:?}",
            ns.as_str()
        )?;
        for c in &checks {
            writeln!(out, "{} {:<11} {}", c.outcome.mark(), c.name, c.detail)?;
        }
    }
    out.flush()?;
    if failed > 0 {
        return Err(Failure::runtime(
            "CHECK_FAILED",
            format!(
                "{failed} of {} checks failed on store {shown}",
                checks.len()
            ),
        ));
    }
    Ok(())
}

enum Reached {
    No(Check),
    Yes {
        check: Check,
        open: Box<OpenStore>,
        seen: Inspection,
        /// This host's clock halfway through the store's answer.
        local_ms: u64,
        round_trip: Duration,
    },
}

/// Opens the store and reads the namespace, timed. A bad store URL is the caller's error (status 2), not a check.
fn reach(config: &Config, ns: &Namespace, url: &StoreUrl) -> Result<Reached, Failure> {
    if let StoreUrl::Sqlite(path) = url {
        // Opening an SQLite store creates its file: a check must not.
        if !path.exists() {
            let detail = format!(
                "{} does not exist: `cosid init` (or the first runtime) creates it",
                path.display()
            );
            return Ok(Reached::No(check(
                "reachable",
                Outcome::Fail,
                detail,
                serde_json::json!({}),
            )));
        }
    }
    let started = Instant::now();
    let open = match OpenStore::open(config) {
        Ok(open) => open,
        Err(f) if f.is_usage() => return Err(f),
        Err(f) => {
            let detail = format!("cannot open the store: {f}");
            return Ok(Reached::No(check(
                "reachable",
                Outcome::Fail,
                detail,
                serde_json::json!({}),
            )));
        }
    };
    let opened = started.elapsed();
    let before_ms = config.clock.now_ms();
    let asked = Instant::now();
    let seen = match open.call(open.store.inspect(ns)) {
        Ok(seen) => seen,
        Err(f) => {
            let detail = format!("the store opened but did not answer a read: {f}");
            return Ok(Reached::No(check(
                "reachable",
                Outcome::Fail,
                detail,
                serde_json::json!({}),
            )));
        }
    };
    let round_trip = asked.elapsed();
    let after_ms = config.clock.now_ms();
    let local_ms = before_ms + after_ms.saturating_sub(before_ms) / 2;
    let detail = format!(
        "{} store answered a read in {} ms (opened in {} ms)",
        open.store.kind(),
        round_trip.as_millis(),
        opened.as_millis()
    );
    let data = serde_json::json!({
        "store_kind": open.store.kind(),
        "open_ms": millis(opened),
        "read_ms": millis(round_trip),
    });
    // A memory store answers, but only this process: nothing deployed could share it.
    let outcome = if matches!(url, StoreUrl::Memory) {
        Outcome::Warn
    } else {
        Outcome::Ok
    };
    let detail = match outcome {
        Outcome::Warn => {
            format!("{detail}; it lives only as long as one process, which it is not shared with")
        }
        _ => detail,
    };
    Ok(Reached::Yes {
        check: check("reachable", outcome, detail, data),
        open: Box::new(open),
        seen,
        local_ms,
        round_trip,
    })
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The server settings that let the store lose a committed lease: the check a runtime makes at start (and reports
/// as `STORE_UNSAFE`), through the same `LeaseStore::durability`.
fn durability(open: &OpenStore) -> Check {
    let asked = open.call(async {
        match tokio::time::timeout(DURABILITY_BOUND, open.store.durability()).await {
            Ok(found) => found.map(Some),
            Err(_) => Ok(None),
        }
    });
    match asked {
        Ok(Some(findings)) if findings.is_empty() => check(
            "durability",
            Outcome::Ok,
            "no server setting that can lose a committed lease".to_owned(),
            serde_json::json!({"unsafe_settings": []}),
        ),
        Ok(Some(findings)) => {
            let detail = findings
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            let data = serde_json::json!({
                "unsafe_settings": findings.iter().map(|f| serde_json::json!({
                    "setting": f.setting,
                    "value": f.value,
                    "expected": f.expected,
                })).collect::<Vec<_>>(),
            });
            check("durability", Outcome::Fail, detail, data)
        }
        Ok(None) => check(
            "durability",
            Outcome::Warn,
            format!(
                "the store did not show its settings within {} s",
                DURABILITY_BOUND.as_secs()
            ),
            serde_json::json!({}),
        ),
        Err(f) => check(
            "durability",
            Outcome::Warn,
            format!("cannot read the store's settings: {f}"),
            serde_json::json!({}),
        ),
    }
}

/// The store's clock against this host's. A runtime refuses a reply whose clock differs by more than half the
/// tolerance (`CLOCK_SKEW`); the reading is uncertain by half the round trip.
fn clock(config: &Config, store_now: u64, local_ms: u64, round_trip: Duration) -> Check {
    let skew = i128::from(store_now) - i128::from(local_ms);
    let bound = config.tolerance.as_millis() / 2;
    let within = skew.unsigned_abs() <= bound;
    let detail = format!(
        "store clock {} is {} from this host's (± {} ms); a runtime refuses more than {}",
        rfc3339(store_now),
        seconds(skew),
        round_trip.as_millis() / 2,
        seconds(i128::try_from(bound).unwrap_or(i128::MAX)),
    );
    let data = serde_json::json!({
        "store_now": store_now,
        "local_now": local_ms,
        "skew_ms": i64::try_from(skew).unwrap_or(i64::MAX),
        "uncertainty_ms": millis(round_trip) / 2,
        "max_skew_ms": u64::try_from(bound).unwrap_or(u64::MAX),
    });
    let outcome = if within { Outcome::Ok } else { Outcome::Fail };
    check("clock", outcome, detail, data)
}

/// The namespace's record against this process's settings, by the rule every store applies on acquire.
fn namespace_record(config: &Config, ns: &Namespace, seen: &Inspection, local_ms: u64) -> Check {
    let ours = NamespaceConfig {
        bits: config.bits,
        tolerance_ms: u64::try_from(config.tolerance.as_millis()).unwrap_or(u64::MAX),
        layout: config.layout,
    };
    let Some(record) = seen.namespace else {
        let detail = format!(
            "no record yet: the first runtime records bits {}, tolerance {} ms, layout {}",
            ours.bits,
            ours.tolerance_ms,
            describe_layout(&ours.layout)
        );
        return check(
            "namespace",
            Outcome::Ok,
            detail,
            serde_json::json!({"record": null}),
        );
    };
    let data = serde_json::json!({
        "record": {
            "bits": record.bits,
            "tolerance_ms": record.tolerance_ms,
            "not_before": record.not_before,
            "layout": record.layout.as_ref().map(describe_layout),
        },
    });
    if let Err(e) = protocol::check_namespace(ns, Some(record), &ours) {
        let detail = format!("{e}: this process could not acquire a slot");
        return check("namespace", Outcome::Fail, detail, data);
    }
    let recorded = format!(
        "bits {}, tolerance {} ms, not_before {}",
        record.bits, record.tolerance_ms, record.not_before
    );
    if record.not_before > local_ms {
        let detail = format!(
            "{recorded}: not_before is {} ahead of this host's clock; ids wait until then",
            seconds(i128::from(record.not_before) - i128::from(local_ms))
        );
        return check("namespace", Outcome::Warn, detail, data);
    }
    let detail = format!("{recorded}: the settings of this process match");
    check("namespace", Outcome::Ok, detail, data)
}

/// Slots held against the 2^bits the namespace has, and the ones this process needs.
fn slots(config: &Config, seen: &Inspection) -> Check {
    let bits = seen.namespace.as_ref().map_or(config.bits, |r| r.bits);
    let total = 1u64 << bits;
    let held = seen
        .slots
        .iter()
        .filter(|r| r.is_held_at(seen.store_now))
        .count() as u64;
    let free = total.saturating_sub(held);
    let needed = u64::from(config.slots);
    let detail = format!("{held} of {total} slots held, {free} free; this process needs {needed}");
    let data = serde_json::json!({"held": held, "total": total, "free": free, "needed": needed});
    let outcome = if free < needed {
        Outcome::Fail
    } else if free * 10 < total {
        Outcome::Warn
    } else {
        Outcome::Ok
    };
    check("slots", outcome, detail, data)
}
