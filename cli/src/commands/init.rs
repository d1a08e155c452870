//! `cosid init`: create the store's schema.

use super::{namespace, OpenStore};
use crate::failure::Failure;
use cosid::store::StoreUrl;
use cosid::Config;
use std::io::Write;

/// Options of `cosid init`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object
    #[arg(long)]
    json: bool,
}

/// Opens the store, creates its schema, and says what it found and did.
pub fn run(args: &Args, config: &Config) -> Result<(), Failure> {
    let ns = namespace(config)?;
    // Opening an SQLite store creates its file: look before.
    let file_existed = settings_path(config)?.map(|path| path.exists());
    let open = OpenStore::open(config)?;
    open.call(open.store.init())?;
    let seen = open.call(open.store.inspect(&ns))?;
    // Best effort: a server that will not show its settings to this user is not a reason to fail the init.
    let findings = open.call(open.store.durability()).unwrap_or_default();
    if !args.json {
        // Under --json they are in the object: stderr holds only an error object.
        for finding in &findings {
            super::warn(&finding.clone().into());
        }
    }
    let mut out = std::io::stdout().lock();
    let kind = open.store.kind();
    if args.json {
        let value = serde_json::json!({
            "store": open.shown,
            "store_kind": kind,
            "created": file_existed == Some(false),
            "namespace": ns.as_str(),
            "record": seen.namespace.as_ref().map(|r| serde_json::json!({
                "bits": r.bits,
                "tolerance_ms": r.tolerance_ms,
                "not_before": r.not_before,
            })),
            "slot_records": seen.slots.len(),
            "unsafe_settings": findings.iter().map(|f| serde_json::json!({
                "setting": f.setting,
                "value": f.value,
                "expected": f.expected,
            })).collect::<Vec<_>>(),
        });
        writeln!(out, "{value}")?;
        return Ok(());
    }
    match (&open.url, file_existed) {
        (StoreUrl::Sqlite(path), Some(false)) => writeln!(
            out,
            "created the {kind} database {} and its schema",
            path.display()
        )?,
        (StoreUrl::Sqlite(path), _) => writeln!(
            out,
            "{kind} database {} exists; its schema is in place (missing tables were created)",
            path.display()
        )?,
        (StoreUrl::Memory, _) => writeln!(
            out,
            "the memory store needs no schema; it lives only as long as one process"
        )?,
        _ => writeln!(out, "{kind} store {}: schema in place", open.shown)?,
    }
    match seen.namespace {
        None => writeln!(
            out,
            "namespace {:?} has no record yet: the first runtime records its bits and tolerance",
            ns.as_str()
        )?,
        Some(r) => writeln!(
            out,
            "namespace {:?} is recorded with bits {}, tolerance {} ms, not_before {}; {} slot records",
            ns.as_str(),
            r.bits,
            r.tolerance_ms,
            r.not_before,
            seen.slots.len()
        )?,
    }
    Ok(())
}

fn settings_path(config: &Config) -> Result<Option<std::path::PathBuf>, Failure> {
    Ok(match crate::settings::store_url(config)?.0 {
        StoreUrl::Sqlite(path) => Some(path),
        _ => None,
    })
}
