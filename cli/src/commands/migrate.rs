//! `cosid migrate`: lift a namespace (or a static slot's state file) past every timestamp a machine-id (CosId 1.x, 2.x)
//! deployment used, so that no old id can be repeated.

use super::{namespace, OpenStore};
use crate::failure::Failure;
use crate::show::rfc3339;
use cosid::lease::{NamespaceConfig, NamespaceRecord};
use cosid::migrate::{self, OldMachine, Plan};
use cosid::static_slot::{self, StaticSpec};
use cosid::Config;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Options of `cosid migrate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where the old deployment kept its state: redis://..., postgres://... or mysql://...
    #[arg(long, value_name = "URL")]
    from: String,
    /// The old deployment's namespace; also the new one unless --namespace (or COSID_NAMESPACE) is given
    #[arg(long, value_name = "NAME")]
    old_namespace: String,
    /// Added for bindings that may still be live (the old safe-guard duration)
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = duration)]
    safe_guard: Duration,
    /// No old id is later than TIME (RFC 3339, e.g. 2026-12-01T21:00:00Z, or Unix ms): when the stopped old
    /// deployment issued its last id. Needed when an old stamp is unknown (CosId 1.8.x's `machineId|0`)
    #[arg(long, value_name = "TIME", value_parser = time_ms)]
    not_before: Option<u64>,
    /// Write a static slot's state file instead of the store's namespace record (default: the state file of a
    /// static: COSID_STORE)
    #[arg(long, value_name = "PATH")]
    state_file: Option<PathBuf>,
    /// Print what would be written, and write nothing
    #[arg(long)]
    dry_run: bool,
    /// Print one JSON object: the machines found, not_before, the target, and whether it was written
    #[arg(long)]
    json: bool,
}

fn duration(v: &str) -> Result<Duration, String> {
    cosid::config::parse_duration_in("--safe-guard", v, cosid::config::SAFE_GUARD_RANGE)
        .map_err(|e| e.to_string())
}

fn time_ms(v: &str) -> Result<u64, String> {
    migrate::parse_time("--not-before", v).map_err(|e| e.to_string())
}

/// Reads the old state, computes `not_before`, and writes it (unless `--dry-run`).
///
/// `namespace_given` says whether the new namespace was configured (flag or variable); if not, the new
/// namespace is the old one's name, so that a forgotten `--namespace` does not migrate into `default`.
pub fn run(args: &Args, config: &Config, namespace_given: bool) -> Result<(), Failure> {
    if let Some(t) = args.not_before {
        refuse_far_future(t)?;
    }
    let mut config = config.clone();
    if !namespace_given {
        config.namespace = args.old_namespace.clone();
    }
    let config = &config;
    let machines = read_old(&args.from, &args.old_namespace)?;
    let options = migrate::Options {
        safe_guard: args.safe_guard,
        not_before_ms: args.not_before,
    };
    let plan = migrate::plan(machines, &options).map_err(cosid::Error::from)?;
    if args.not_before.is_none() && !args.json {
        // Under --json it is in the object: stderr holds only an error object.
        eprintln!("cosid migrate: warning: {TRUST_WARNING}");
    }
    let mut stdout = std::io::stdout().lock();
    let mut sink = std::io::sink();
    // Under --json the lines are not printed: the object at the end says it all.
    let out: &mut dyn Write = if args.json { &mut sink } else { &mut stdout };
    for m in &plan.machines {
        writeln!(
            out,
            "found   machine {:>5}  last {} ({})  {}{}",
            m.machine_id,
            m.last_timestamp_ms,
            rfc3339(m.last_timestamp_ms),
            m.source,
            m.instance_id
                .as_deref()
                .map(|i| format!(" instance {i}"))
                .unwrap_or_default()
        )?;
    }
    let known = match plan.latest_ms {
        Some(latest) => format!(
            "latest {latest} + safe-guard {} ms",
            plan.safe_guard.as_millis()
        ),
        None => "no known stamp".to_owned(),
    };
    match plan.operator_not_before_ms {
        Some(given) => writeln!(
            out,
            "not_before = max({known}, --not-before {given}) = {} ({})",
            plan.not_before,
            rfc3339(plan.not_before)
        )?,
        None => writeln!(
            out,
            "not_before = {known} = {} ({})",
            plan.not_before,
            rfc3339(plan.not_before)
        )?,
    }
    let hostname = static_slot::hostname();
    let static_target = match (&args.state_file, &config.store) {
        (Some(path), _) => {
            let slot = match config.store.as_deref().and_then(|u| StaticSpec::parse(u, &hostname)) {
                Some(spec) => spec.map_err(cosid::Error::from)?.slot,
                None => 0,
            };
            Some((path.clone(), slot))
        }
        (None, Some(url)) => match StaticSpec::parse(url, &hostname).transpose().map_err(cosid::Error::from)? {
            Some(StaticSpec { state_file: Some(path), slot, .. }) => Some((path, slot)),
            Some(_) => {
                return Err(Failure::usage(
                    "CONFIG",
                    "a static slot without a state_file has nothing to migrate into: add ?state_file=PATH",
                ))
            }
            None => None,
        },
        (None, None) => None,
    };
    if args.dry_run {
        if args.json {
            return print_json(args, config, &plan, static_target.as_ref(), None);
        }
        match &static_target {
            Some((path, _)) => writeln!(
                out,
                "dry run: would raise the state file {} to {}",
                path.display(),
                plan.not_before
            )?,
            None => writeln!(
                out,
                "dry run: would raise not_before of namespace {:?} to {}",
                config.namespace, plan.not_before
            )?,
        }
        return Ok(());
    }
    let written = match &static_target {
        Some((path, slot)) => {
            static_slot::raise_state_file(path, *slot, plan.not_before)?;
            writeln!(
                out,
                "raised the state file {} to {}",
                path.display(),
                plan.not_before
            )?;
            None
        }
        None => Some(write_namespace(out, config, &plan)?),
    };
    if args.json {
        return print_json(args, config, &plan, static_target.as_ref(), Some(written));
    }
    Ok(())
}

/// The outcome as one JSON object. `written` is `None` for a dry run, else what was written into: `Some(None)`
/// for a state file, `Some(Some((store, record)))` for a namespace record.
fn print_json(
    args: &Args,
    config: &Config,
    plan: &Plan,
    static_target: Option<&(PathBuf, u32)>,
    written: Option<Option<(String, NamespaceRecord)>>,
) -> Result<(), Failure> {
    let machines: Vec<_> = plan
        .machines
        .iter()
        .map(|m| {
            serde_json::json!({
                "machine_id": m.machine_id,
                "last_timestamp_ms": m.last_timestamp_ms,
                "source": m.source,
                "instance_id": m.instance_id,
            })
        })
        .collect();
    let target = match static_target {
        Some((path, slot)) => serde_json::json!({"state_file": path, "slot": slot}),
        None => serde_json::json!({"namespace": config.namespace}),
    };
    let record = written.as_ref().and_then(|w| w.as_ref()).map(|(store, r)| {
        serde_json::json!({
            "store": store,
            "bits": r.bits,
            "tolerance_ms": r.tolerance_ms,
            "not_before": r.not_before,
        })
    });
    let value = serde_json::json!({
        "machines": machines,
        "latest_ms": plan.latest_ms,
        "safe_guard_ms": u64::try_from(plan.safe_guard.as_millis()).unwrap_or(u64::MAX),
        "operator_not_before_ms": plan.operator_not_before_ms,
        "not_before": plan.not_before,
        "target": target,
        "dry_run": args.dry_run,
        "written": written.is_some(),
        "record": record,
        "warnings": if args.not_before.is_none() { vec![TRUST_WARNING] } else { vec![] },
    });
    writeln!(std::io::stdout().lock(), "{value}")?;
    Ok(())
}

/// Said when no `--not-before` is given. A stamp can look like a time and still be older than the machine's last
/// id: CosId 1.x writes a re-taken machine id's old stop time and never updates it. Nothing in the store tells the
/// versions apart.
const TRUST_WARNING: &str = "trusting each machine's stamp as its last time; this holds for CosId 2.x, whose guard \
     updates it, but not for 1.x, which never does: if any old instance ran CosId 1.x, stop them all and give \
     --not-before TIME (when the last one stopped)";

/// How far past now `--not-before` may lie: `not_before` is never lowered, so a typo (a year for a day) would
/// stop every slot of the namespace until that time.
const NOT_BEFORE_MAX_AHEAD_MS: u64 = 24 * 3600 * 1000;

fn refuse_far_future(not_before_ms: u64) -> Result<(), Failure> {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    if not_before_ms > now_ms.saturating_add(NOT_BEFORE_MAX_AHEAD_MS) {
        return Err(Failure::usage(
            "CONFIG",
            format!(
                "invalid --not-before = {not_before_ms} ({}): more than a day from now ({}); not_before is never \
                 lowered, so a time that far ahead would stop every slot of the namespace until then",
                rfc3339(not_before_ms),
                rfc3339(now_ms)
            ),
        ));
    }
    Ok(())
}

fn write_namespace(
    out: &mut dyn Write,
    config: &Config,
    plan: &Plan,
) -> Result<(String, NamespaceRecord), Failure> {
    let ns = namespace(config)?;
    let open = OpenStore::open(config)?;
    let ns_config = NamespaceConfig {
        bits: config.bits,
        tolerance_ms: config.tolerance.as_millis() as u64,
        layout: config.layout,
    };
    let record = open.call(migrate::apply(open.store.as_ref(), &ns, &ns_config, plan))?;
    writeln!(
        out,
        "raised not_before of namespace {:?} in {} to {} (bits {}, tolerance {} ms)",
        ns.as_str(),
        open.shown,
        record.not_before,
        record.bits,
        record.tolerance_ms
    )?;
    Ok((open.shown.clone(), record))
}

// Which arms exist depends on the store features; without them the fallback arms are all that is left.
#[allow(unused_variables, unreachable_patterns)]
fn read_old(url: &str, old_ns: &str) -> Result<Vec<OldMachine>, Failure> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime("RUNTIME", format!("cannot start an async runtime: {e}")))?;
    let scheme = url.split_once("://").map_or("", |(s, _)| s);
    // The URL is shown with its secrets replaced: it is an error message, and may end up in a log.
    let shown = cosid::store::redacted(url);
    let failed = |e: cosid::store::StoreError| {
        Failure::from(cosid::Error::from(e)).context(&format!("reading {shown}"))
    };
    match scheme {
        #[cfg(feature = "redis")]
        "redis" | "rediss" => tokio.block_on(migrate::read_redis(url, old_ns)).map_err(failed),
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => tokio.block_on(migrate::read_postgres(url, old_ns)).map_err(failed),
        #[cfg(feature = "mysql")]
        "mysql" | "mariadb" => tokio.block_on(migrate::read_mysql(url, old_ns)).map_err(failed),
        "redis" | "rediss" | "postgres" | "postgresql" | "mysql" | "mariadb" => {
            Err(Failure::usage(
                "CONFIG",
                format!("reading {scheme} needs the `{scheme}` feature: cargo install --path cli --features stores"),
            ))
        }
        _ => Err(Failure::usage(
            "CONFIG",
            format!("--from {shown:?}: expected a redis://, postgres:// or mysql:// URL of the old deployment"),
        )),
    }
}
