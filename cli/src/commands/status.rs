//! `cosid status`: start a runtime, show its lease, release it.

use crate::failure::Failure;
use crate::show::{diff, rfc3339, seconds};
use cosid::host::Settings;
use cosid::{Event, State, Status};
use std::io::Write;
use std::sync::{Arc, Mutex};

/// Options of `cosid status`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object
    #[arg(long)]
    json: bool,
}

fn state_name(state: State) -> &'static str {
    match state {
        State::Active => "active",
        State::Renewing => "renewing",
        State::Reacquiring => "reacquiring",
        State::Closed => "closed",
        _ => "unknown",
    }
}

/// Starts a runtime on the configuration, prints its status, then shuts it down (releasing the slot).
pub fn run(args: &Args, mut settings: Settings) -> Result<(), Failure> {
    // `STORE_UNSAFE` comes at the start, which only listeners given with the settings see.
    let found: Arc<Mutex<Vec<Event>>> = Arc::default();
    let keep = found.clone();
    settings.subscribe(Arc::new(move |e: &Event| {
        if matches!(e, Event::StoreUnsafe { .. }) {
            keep.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(e.clone());
        }
    }));
    let (rt, shown) = super::start_runtime(settings)?;
    let layout = rt.layout()?;
    let status = rt.status()?;
    rt.shutdown()?;
    let found = std::mem::take(&mut *found.lock().unwrap_or_else(|e| e.into_inner()));
    let mut out = std::io::stdout().lock();
    if args.json {
        // The warnings go in the object: under --json, stderr holds only an error object.
        let mut value = json(&status, &shown);
        value["warnings"] = found.iter().map(|e| e.message()).collect();
        writeln!(out, "{value}")?;
        return Ok(());
    }
    for event in &found {
        super::warn(event);
    }
    let s = &status;
    let at = |ms: u64| format!("{ms} ({})", rfc3339(ms));
    let rows = [
        ("namespace", format!("{:?}", s.namespace)),
        ("store", format!("{} ({shown})", s.store)),
        ("owner", s.owner.key.clone()),
        ("incarnation", s.owner.incarnation.to_string()),
        ("slot", s.slot.to_string()),
        ("fence", s.fence.to_string()),
        ("state", state_name(s.state).to_owned()),
        ("floor", at(s.floor_ms)),
        ("ceiling", at(s.ceiling_ms)),
        (
            "expires_at",
            format!(
                "{}, in {}",
                at(s.expires_at_ms),
                seconds(diff(s.expires_at_ms, s.store_now_ms))
            ),
        ),
        ("store_now", at(s.store_now_ms)),
        ("layout", super::describe_layout(&layout)),
    ];
    for (name, value) in rows {
        writeln!(out, "{name:<12}{value}")?;
    }
    writeln!(out, "released slot {} on exit", s.slot)?;
    Ok(())
}

fn json(s: &Status, shown: &str) -> serde_json::Value {
    serde_json::json!({
        "namespace": s.namespace,
        "store": s.store,
        "store_url": shown,
        "owner_key": s.owner.key,
        "incarnation": s.owner.incarnation.to_string(),
        "slot": s.slot,
        "fence": s.fence,
        "state": state_name(s.state),
        "floor": s.floor_ms,
        "ceiling": s.ceiling_ms,
        "expires_at": s.expires_at_ms,
        "store_now": s.store_now_ms,
        "last_issued": s.last_issued_ms,
        "released": true,
    })
}
