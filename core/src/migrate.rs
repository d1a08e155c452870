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

use crate::error::{ConfigError, Error};
use crate::lease::{Namespace, NamespaceConfig, NamespaceRecord};
use crate::store::{LeaseStore, StoreError};
use std::time::Duration;

/// The default safe-guard of the machine-id design.
pub const DEFAULT_SAFE_GUARD: Duration = Duration::from_secs(5 * 60);

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
    /// The latest timestamp found, if any.
    pub latest_ms: Option<u64>,
    /// The safe-guard added for bindings that may still be live.
    pub safe_guard: Duration,
    /// The `not_before` to write: `latest + safe_guard`.
    pub not_before: u64,
}

/// Computes the plan for `machines`. Fails when nothing was found: migrating from an empty or misnamed old
/// namespace is almost certainly a mistake.
pub fn plan(machines: Vec<OldMachine>, safe_guard: Duration) -> Result<Plan, Error> {
    let latest_ms = machines.iter().map(|m| m.last_timestamp_ms).max();
    let Some(latest) = latest_ms else {
        return Err(ConfigError::new(
            "old namespace",
            "(no machines found)",
            "an old namespace with at least one machine record",
        )
        .into());
    };
    Ok(Plan {
        machines,
        latest_ms,
        safe_guard,
        not_before: latest.saturating_add(safe_guard.as_millis() as u64),
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
        url: url.to_owned(),
        reason: e.to_string(),
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
        url: url.to_owned(),
        reason: e.to_string(),
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
        let p = plan(vec![a, b, secs], DEFAULT_SAFE_GUARD).unwrap();
        assert_eq!(p.not_before, 1_764_460_005_000 + 300_000);
        assert!(parse_itc_entry("x", "3-1764460000000").is_err());
        assert!(parse_itc_entry("x", "a|1").is_err());
        assert!(parse_revert_entry("x", "1").is_err());
        assert!(plan(Vec::new(), DEFAULT_SAFE_GUARD).is_err());
    }
}
