//! `cosid leases`: every slot record of a namespace, as the store holds it.

use super::{namespace, OpenStore};
use crate::failure::Failure;
use crate::show::{diff, rfc3339, seconds, table};
use cosid::lease::SlotRecord;
use cosid::Config;
use std::io::Write;

/// Options of `cosid leases`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object
    #[arg(long)]
    json: bool,
}

/// Whether a slot has a live holder at store time `now`.
fn state(record: &SlotRecord, now: u64) -> &'static str {
    if record.owner.is_none() {
        "free"
    } else if record.is_held_at(now) {
        "held"
    } else {
        "expired"
    }
}

/// Reads the namespace from the store and prints it.
pub fn run(args: &Args, config: &Config) -> Result<(), Failure> {
    let ns = namespace(config)?;
    let open = OpenStore::open(config)?;
    let seen = open.call(open.store.inspect(&ns))?;
    let now = seen.store_now;
    let mut out = std::io::stdout().lock();
    if args.json {
        let slots: Vec<_> = seen
            .slots
            .iter()
            .map(|r| {
                serde_json::json!({
                    "slot": r.slot,
                    "state": state(r, now),
                    "owner_key": r.owner.as_ref().map(|o| o.key.clone()),
                    "incarnation": r.owner.as_ref().map(|o| o.incarnation.to_string()),
                    "last_owner_key": r.last_owner_key,
                    "fence": r.fence,
                    "floor": r.floor,
                    "ceiling": r.ceiling,
                    "next_floor": r.next_floor,
                    "expires_at": r.expires_at,
                    "ttl_left_ms": (state(r, now) == "held").then(|| r.expires_at - now),
                })
            })
            .collect();
        let value = serde_json::json!({
            "store": open.shown,
            "store_kind": open.store.kind(),
            "namespace": ns.as_str(),
            "store_now": now,
            "record": seen.namespace.map(|r| serde_json::json!({
                "bits": r.bits,
                "tolerance_ms": r.tolerance_ms,
                "not_before": r.not_before,
            })),
            "slots": slots,
        });
        writeln!(out, "{value}")?;
        return Ok(());
    }

    writeln!(out, "store      {}", open.shown)?;
    writeln!(out, "clock      {now} ({})", rfc3339(now))?;
    match seen.namespace {
        None => writeln!(
            out,
            "namespace  {:?}: no record yet (the first runtime writes it)",
            ns.as_str()
        )?,
        Some(r) => writeln!(
            out,
            "namespace  {:?}: bits {} ({} slots), tolerance {} ms, not_before {}",
            ns.as_str(),
            r.bits,
            1u64 << r.bits,
            r.tolerance_ms,
            r.not_before
        )?,
    }
    if seen.slots.is_empty() {
        writeln!(out, "no slot has been leased")?;
        return Ok(());
    }
    writeln!(out)?;
    let dash = || "-".to_owned();
    let mut rows = vec![[
        "SLOT",
        "STATE",
        "OWNER_KEY",
        "INCARNATION",
        "FENCE",
        "FLOOR",
        "CEILING",
        "NEXT_FLOOR",
        "EXPIRES_AT",
        "TTL_LEFT",
        "LAST_OWNER_KEY",
    ]
    .map(str::to_owned)
    .to_vec()];
    for r in &seen.slots {
        let state = state(r, now);
        rows.push(vec![
            r.slot.to_string(),
            state.to_owned(),
            r.owner.as_ref().map_or_else(dash, |o| o.key.clone()),
            r.owner
                .as_ref()
                .map_or_else(dash, |o| o.incarnation.to_string()),
            r.fence.to_string(),
            r.floor.to_string(),
            r.ceiling.to_string(),
            r.next_floor.to_string(),
            rfc3339(r.expires_at),
            if state == "held" {
                seconds(diff(r.expires_at, now))
            } else {
                dash()
            },
            r.last_owner_key.clone().unwrap_or_else(dash),
        ]);
    }
    write!(out, "{}", table(&rows))?;
    Ok(())
}
