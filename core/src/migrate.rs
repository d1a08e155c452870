//! Migration from the machine-id design (CosId 4.x, DESIGN §7).
//!
//! 4.x gave each instance a machine id and kept, per machine, the last timestamp it used. To switch a namespace
//! to leases without repeating an old id, the new namespace's `not_before` (the floor of every new window) must lie
//! past every timestamp the old deployment used, plus the old safe-guard duration for bindings that may still be
//! live. This module reads the old state from its two layouts and computes that value:
//!
//! - Redis: hash `cosid:{ns}:itc_idx` maps an instance id to `"machineId|lastTimestamp"`, hash `cosid:{ns}:revert`
//!   maps a machine id to its last timestamp;
//! - SQL: table `cosid_machine (namespace, machine_id, last_timestamp, instance_id)`.
//!
//! Old timestamps are Unix milliseconds. A value too small to be one (below 10^11, before 1973) is read as Unix
//! seconds, the larger, and so the safer, of the two readings.
//!
//! A timestamp before the old layout's epoch ([`OLD_EPOCH_MS`]) was never an id's time: CosId 1.8.x writes
//! `"machineId|0"` when it distributes a machine id and never updates it, so a crashed or live instance leaves
//! only `0`. Such a stamp is unknown, not old, and the plan refuses it unless the operator says when the old
//! deployment stopped ([`Options::not_before_ms`]).

use crate::error::{ConfigError, Error};
use crate::lease::{Namespace, NamespaceConfig, NamespaceRecord};
use crate::store::{LeaseStore, StoreError};
use std::time::Duration;

/// The default safe-guard of the machine-id design.
pub const DEFAULT_SAFE_GUARD: Duration = Duration::from_secs(5 * 60);

/// The epoch of the old design's ids (2019-12-24T16:00:00Z): no old id has an earlier time, so an earlier stamp
/// is a placeholder, not a last timestamp.
pub const OLD_EPOCH_MS: u64 = crate::id::Layout::DEFAULT_EPOCH_MS;

/// How to turn what was found into a `not_before`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Added to the latest known stamp for bindings that may still be live.
    pub safe_guard: Duration,
    /// What the operator knows: no old id is later than this (Unix ms), for example when the old deployment
    /// stopped. With it, unknown stamps are accepted and `not_before` is at least this value.
    pub not_before_ms: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            safe_guard: DEFAULT_SAFE_GUARD,
            not_before_ms: None,
        }
    }
}

/// Why no plan could be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MigrateError {
    /// Nothing was found: migrating from an empty or misnamed old namespace is almost certainly a mistake.
    #[error("no machine records found in the old namespace: check --from and --old-namespace")]
    NoMachines,
    /// Some machines carry a stamp that is not a time the old deployment used.
    #[error(
        "the old deployment's last timestamp is unknown for {}: a stamp before the old epoch ({OLD_EPOCH_MS} ms) \
         is a placeholder (CosId 1.8.x writes `machineId|0` and never updates it), so its ids may be of any time; \
         stop every old instance, then give --not-before TIME (when the old deployment stopped)",
        describe(.machines)
    )]
    UnknownStamps {
        /// The machines whose stamp is before the old epoch.
        machines: Vec<OldMachine>,
    },
    /// The operator's `not_before` is itself before the old epoch.
    #[error("invalid not_before = {not_before_ms} ms: at or after the old epoch ({OLD_EPOCH_MS} ms, 2019-12-24T16:00:00Z)")]
    NotBeforeTooEarly {
        /// The value given.
        not_before_ms: u64,
    },
}

fn describe(machines: &[OldMachine]) -> String {
    machines
        .iter()
        .map(|m| {
            let instance = m
                .instance_id
                .as_deref()
                .map(|i| format!(" of instance {i:?}"))
                .unwrap_or_default();
            format!(
                "machine {}{instance} (stamp {}, {})",
                m.machine_id, m.last_timestamp_ms, m.source
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl From<MigrateError> for Error {
    fn from(e: MigrateError) -> Self {
        let setting = match &e {
            MigrateError::NotBeforeTooEarly { .. } => "not_before",
            _ => "old namespace",
        };
        let value = match &e {
            MigrateError::NoMachines => "(no machines found)".to_owned(),
            MigrateError::UnknownStamps { machines } => describe(machines),
            MigrateError::NotBeforeTooEarly { not_before_ms } => not_before_ms.to_string(),
        };
        ConfigError::new(setting, value, e.to_string()).into()
    }
}

/// One machine's last timestamp as the old deployment recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OldMachine {
    /// Where it was found (`redis itc_idx`, `redis revert`, `sql`).
    pub source: &'static str,
    /// The machine id.
    pub machine_id: u64,
    /// The instance that held it, if recorded.
    pub instance_id: Option<String>,
    /// Its last timestamp, Unix ms.
    pub last_timestamp_ms: u64,
}

/// What a migration writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Every machine found.
    pub machines: Vec<OldMachine>,
    /// The latest known timestamp found (stamps before the old epoch are not known ones), if any.
    pub latest_ms: Option<u64>,
    /// The safe-guard added for bindings that may still be live.
    pub safe_guard: Duration,
    /// The operator's bound ([`Options::not_before_ms`]), if given.
    pub operator_not_before_ms: Option<u64>,
    /// The `not_before` to write: `latest + safe_guard`, and at least the operator's bound.
    pub not_before: u64,
}

/// Computes the plan for `machines`. Fails when nothing was found, and when a stamp is unknown (before the old
/// epoch) and the operator gave no `not_before`.
pub fn plan(machines: Vec<OldMachine>, options: &Options) -> Result<Plan, MigrateError> {
    if machines.is_empty() {
        return Err(MigrateError::NoMachines);
    }
    if let Some(t) = options.not_before_ms.filter(|t| *t < OLD_EPOCH_MS) {
        return Err(MigrateError::NotBeforeTooEarly { not_before_ms: t });
    }
    let unknown: Vec<OldMachine> = machines
        .iter()
        .filter(|m| m.last_timestamp_ms < OLD_EPOCH_MS)
        .cloned()
        .collect();
    if !unknown.is_empty() && options.not_before_ms.is_none() {
        return Err(MigrateError::UnknownStamps { machines: unknown });
    }
    let latest_ms = machines
        .iter()
        .map(|m| m.last_timestamp_ms)
        .filter(|t| *t >= OLD_EPOCH_MS)
        .max();
    let safe_guard_ms = u64::try_from(options.safe_guard.as_millis()).unwrap_or(u64::MAX);
    let known = latest_ms.map_or(0, |l| l.saturating_add(safe_guard_ms));
    Ok(Plan {
        machines,
        latest_ms,
        safe_guard: options.safe_guard,
        operator_not_before_ms: options.not_before_ms,
        not_before: known.max(options.not_before_ms.unwrap_or(0)),
    })
}

/// Writes the plan's `not_before` into a lease store's namespace; refuses to lower an existing one.
pub async fn apply(
    store: &dyn LeaseStore,
    namespace: &Namespace,
    config: &NamespaceConfig,
    plan: &Plan,
) -> Result<NamespaceRecord, StoreError> {
    store
        .raise_not_before(namespace, config, plan.not_before)
        .await
}

/// Parses a time given by an operator (`--not-before`): RFC 3339 (`2026-12-01T21:00:00Z`) or Unix milliseconds.
pub fn parse_time(setting: &str, v: &str) -> Result<u64, ConfigError> {
    let expected = "a time as RFC 3339 (2026-12-01T21:00:00Z) or Unix milliseconds";
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        return v
            .parse()
            .map_err(|_| ConfigError::new(setting, v, expected));
    }
    humantime::parse_rfc3339_weak(v)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| u64::try_from(d.as_millis()).ok())
        .ok_or_else(|| ConfigError::new(setting, v, expected))
}

/// Reads an old timestamp (decimal text), in ms.
pub fn parse_timestamp(text: &str) -> Option<u64> {
    let v: u64 = text.trim().parse().ok()?;
    Some(if v < 100_000_000_000 {
        v.saturating_mul(1000)
    } else {
        v
    })
}

fn corrupt(source: &'static str, what: &str, value: &str) -> StoreError {
    StoreError::Corrupt {
        store: source,
        what: what.to_owned(),
        detail: format!("cannot read {value:?} as the old design's data"),
    }
}

/// Parses one `itc_idx` entry: instance id -> `"machineId|lastTimestamp"`.
pub fn parse_itc_entry(instance: &str, value: &str) -> Result<OldMachine, StoreError> {
    let bad = || {
        corrupt(
            "redis",
            &format!("itc_idx entry of instance {instance:?}"),
            value,
        )
    };
    let (machine, ts) = value.split_once('|').ok_or_else(bad)?;
    Ok(OldMachine {
        source: "redis itc_idx",
        machine_id: machine.trim().parse().map_err(|_| bad())?,
        instance_id: Some(instance.to_owned()),
        last_timestamp_ms: parse_timestamp(ts).ok_or_else(bad)?,
    })
}

/// Parses one `revert` entry: machine id -> last timestamp.
pub fn parse_revert_entry(machine: &str, value: &str) -> Result<OldMachine, StoreError> {
    let bad = || {
        corrupt(
            "redis",
            &format!("revert entry of machine {machine:?}"),
            value,
        )
    };
    Ok(OldMachine {
        source: "redis revert",
        machine_id: machine.trim().parse().map_err(|_| bad())?,
        instance_id: None,
        last_timestamp_ms: parse_timestamp(value).ok_or_else(bad)?,
    })
}

/// Reads the old Redis layout of namespace `old_ns`.
#[cfg(feature = "redis")]
pub async fn read_redis(url: &str, old_ns: &str) -> Result<Vec<OldMachine>, StoreError> {
    use std::collections::HashMap;
    let unavailable = |e: redis::RedisError| StoreError::Unavailable {
        store: "redis",
        source: Box::new(e),
    };
    let client = redis::Client::open(url).map_err(|e| StoreError::InvalidUrl {
        url: crate::store::redacted(url),
        reason: crate::store::scrub(&e.to_string(), url),
    })?;
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .map_err(unavailable)?;
    let itc: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(format!("cosid:{{{old_ns}}}:itc_idx"))
        .query_async(&mut conn)
        .await
        .map_err(unavailable)?;
    let revert: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(format!("cosid:{{{old_ns}}}:revert"))
        .query_async(&mut conn)
        .await
        .map_err(unavailable)?;
    let mut out = Vec::new();
    for (k, v) in &itc {
        out.push(parse_itc_entry(k, v)?);
    }
    for (k, v) in &revert {
        out.push(parse_revert_entry(k, v)?);
    }
    out.sort_by_key(|m| (m.machine_id, m.last_timestamp_ms));
    Ok(out)
}

/// Reads the old `cosid_machine` table of PostgreSQL for namespace `old_ns`.
#[cfg(feature = "postgres")]
pub async fn read_postgres(url: &str, old_ns: &str) -> Result<Vec<OldMachine>, StoreError> {
    let unavailable = |e: tokio_postgres::Error| StoreError::Unavailable {
        store: "postgres",
        source: Box::new(e),
    };
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(unavailable)?;
    let task = tokio::spawn(connection);
    let rows = client
        .query(
            "SELECT machine_id::BIGINT, last_timestamp::BIGINT, instance_id::TEXT FROM cosid_machine WHERE namespace = $1",
            &[&old_ns],
        )
        .await
        .map_err(unavailable);
    task.abort();
    rows?
        .iter()
        .map(|r| {
            sql_machine(
                r.get::<_, i64>(0),
                r.get::<_, i64>(1),
                r.get::<_, Option<String>>(2),
            )
        })
        .collect()
}

/// Reads the old `cosid_machine` table of MySQL/MariaDB for namespace `old_ns`.
#[cfg(feature = "mysql")]
pub async fn read_mysql(url: &str, old_ns: &str) -> Result<Vec<OldMachine>, StoreError> {
    use mysql_async::prelude::Queryable;
    let unavailable = |e: mysql_async::Error| StoreError::Unavailable {
        store: "mysql",
        source: Box::new(e),
    };
    let opts = mysql_async::Opts::from_url(url).map_err(|e| StoreError::InvalidUrl {
        url: crate::store::redacted(url),
        reason: crate::store::scrub(&e.to_string(), url),
    })?;
    let mut conn = mysql_async::Conn::new(opts).await.map_err(unavailable)?;
    let rows: Vec<(i64, i64, Option<String>)> = conn
        .exec(
            "SELECT CAST(machine_id AS SIGNED), CAST(last_timestamp AS SIGNED), CAST(instance_id AS CHAR) \
             FROM cosid_machine WHERE namespace = ?",
            (old_ns,),
        )
        .await
        .map_err(unavailable)?;
    let _ = conn.disconnect().await;
    rows.into_iter()
        .map(|(m, t, i)| sql_machine(m, t, i))
        .collect()
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
fn sql_machine(machine: i64, ts: i64, instance: Option<String>) -> Result<OldMachine, StoreError> {
    let bad = || {
        corrupt(
            "sql",
            &format!("cosid_machine row of machine {machine}"),
            &ts.to_string(),
        )
    };
    Ok(OldMachine {
        source: "sql",
        machine_id: u64::try_from(machine).map_err(|_| bad())?,
        instance_id: instance,
        last_timestamp_ms: parse_timestamp(&ts.to_string()).ok_or_else(bad)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_old_entries_and_plans_past_the_latest() {
        let a = parse_itc_entry("10.0.0.1:8080", "3|1764460000000").unwrap();
        assert_eq!((a.machine_id, a.last_timestamp_ms), (3, 1_764_460_000_000));
        let b = parse_revert_entry("4", "1764460005000").unwrap();
        let secs = parse_revert_entry("5", "1764460001").unwrap();
        assert_eq!(
            secs.last_timestamp_ms, 1_764_460_001_000,
            "seconds read as the larger value"
        );
        let p = plan(vec![a, b, secs], &Options::default()).unwrap();
        assert_eq!(p.not_before, 1_764_460_005_000 + 300_000);
        assert!(parse_itc_entry("x", "3-1764460000000").is_err());
        assert!(parse_itc_entry("x", "a|1").is_err());
        assert!(parse_revert_entry("x", "1").is_err());
        assert_eq!(
            plan(Vec::new(), &Options::default()),
            Err(MigrateError::NoMachines)
        );
    }

    #[test]
    fn parses_operator_times() {
        assert_eq!(
            parse_time("t", "2026-12-01T21:00:00Z").unwrap(),
            1_796_158_800_000
        );
        assert_eq!(parse_time("t", "1796158800000").unwrap(), 1_796_158_800_000);
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "99999999999999999999999",
        ] {
            let e = parse_time("--not-before", bad).unwrap_err();
            assert_eq!(e.setting, "--not-before", "{bad}");
        }
    }

    #[test]
    fn a_stamp_before_the_old_epoch_is_unknown_not_old() {
        // CosId 1.8.x: `machineId|0` written at distribution and never updated.
        let zero = parse_itc_entry("10.0.0.9:8080", "7|0").unwrap();
        let known = parse_revert_entry("4", "1764460005000").unwrap();
        let err = plan(vec![known.clone(), zero.clone()], &Options::default()).unwrap_err();
        assert_eq!(
            err,
            MigrateError::UnknownStamps {
                machines: vec![zero.clone()]
            }
        );
        let text = err.to_string();
        assert!(
            text.contains("machine 7") && text.contains("10.0.0.9:8080"),
            "{text}"
        );
        assert_eq!(Error::from(err).code(), "CONFIG");
        // Just before the epoch is as unknown as 0.
        let early = parse_revert_entry("5", &(OLD_EPOCH_MS - 1).to_string()).unwrap();
        assert!(plan(vec![early], &Options::default()).is_err());

        // The operator's bound makes it plannable, and is a floor of its own.
        let stopped = 1_764_470_000_000;
        let options = Options {
            not_before_ms: Some(stopped),
            ..Options::default()
        };
        let p = plan(vec![known.clone(), zero.clone()], &options).unwrap();
        assert_eq!(p.latest_ms, Some(1_764_460_005_000));
        assert_eq!(p.not_before, stopped);
        // A known stamp plus the safe-guard past the operator's bound still wins.
        let late = parse_revert_entry("6", "1764469900000").unwrap();
        let p = plan(vec![late, zero.clone()], &options).unwrap();
        assert_eq!(p.not_before, 1_764_469_900_000 + 300_000);
        // Only unknown stamps: the operator's bound alone.
        let p = plan(vec![zero.clone()], &options).unwrap();
        assert_eq!((p.latest_ms, p.not_before), (None, stopped));
        // A bound before the epoch is no bound.
        let options = Options {
            not_before_ms: Some(0),
            ..Options::default()
        };
        assert_eq!(
            plan(vec![zero], &options),
            Err(MigrateError::NotBeforeTooEarly { not_before_ms: 0 })
        );
    }
}
