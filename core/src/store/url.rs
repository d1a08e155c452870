//! Store URLs (`COSID_STORE`): which store to open, and where.

use super::{LeaseStore, MemoryStore, StoreError};
use crate::clock::Clock;
use std::path::PathBuf;
use std::sync::Arc;

/// A parsed store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreUrl {
    /// `memory:`: leases in this process only.
    Memory,
    /// `sqlite:///absolute/path.db` or `sqlite:relative/path.db`; the default store.
    Sqlite(PathBuf),
    /// `redis://` or `rediss://`.
    Redis(String),
    /// `postgres://` or `postgresql://`.
    Postgres(String),
    /// `mysql://` or `mariadb://`.
    Mysql(String),
    /// `etcd://host:port[,host:port...]`.
    Etcd(Vec<String>),
}

impl StoreUrl {
    /// Parses `url`. The scheme decides the store.
    pub fn parse(url: &str) -> Result<Self, StoreError> {
        let invalid = |reason: &str| StoreError::InvalidUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let (scheme, rest) = url.split_once(':').ok_or_else(|| {
            invalid("expected SCHEME:..., e.g. sqlite:///var/lib/cosid/leases.db")
        })?;
        match scheme {
            "memory" if rest.is_empty() || rest == "//" => Ok(StoreUrl::Memory),
            "memory" => Err(invalid("memory takes no path: use `memory:`")),
            "sqlite" => {
                let path = rest.strip_prefix("//").unwrap_or(rest);
                let path = path.split_once('?').map_or(path, |(p, _)| p);
                if path.is_empty() {
                    return Err(invalid("expected a file path, e.g. sqlite:///var/lib/cosid/leases.db"));
                }
                Ok(StoreUrl::Sqlite(PathBuf::from(path)))
            }
            "redis" | "rediss" => Ok(StoreUrl::Redis(checked(url, rest)?)),
            "postgres" | "postgresql" => Ok(StoreUrl::Postgres(checked(url, rest)?)),
            "mysql" | "mariadb" => Ok(StoreUrl::Mysql(checked(url, rest)?)),
            "etcd" => {
                let hosts = rest.strip_prefix("//").ok_or_else(|| invalid("expected etcd://host:port[,host:port]"))?;
                let hosts: Vec<String> = hosts
                    .trim_end_matches('/')
                    .split(',')
                    .map(str::to_owned)
                    .collect();
                if hosts.iter().any(|h| h.is_empty() || !h.contains(':')) {
                    return Err(invalid("expected etcd://host:port[,host:port]"));
                }
                Ok(StoreUrl::Etcd(hosts))
            }
            other => Err(invalid(&format!(
                "unknown scheme {other:?}; expected sqlite, memory, redis, rediss, postgres, mysql or etcd"
            ))),
        }
    }

    /// The default store: an SQLite file in the user's state directory
    /// (`$XDG_STATE_HOME/cosid/leases.db`, else `~/.local/state/cosid/leases.db`).
    pub fn default_sqlite() -> Result<Self, StoreError> {
        let dir = dirs::state_dir().ok_or_else(|| StoreError::InvalidUrl {
            url: String::new(),
            reason: "no state directory: set XDG_STATE_HOME or HOME, or COSID_STORE".into(),
        })?;
        Ok(StoreUrl::Sqlite(dir.join("cosid").join("leases.db")))
    }
}

impl std::fmt::Display for StoreUrl {
    /// The URL as it was given, with any password replaced by `***` (paths of SQLite files as `sqlite://PATH`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreUrl::Memory => f.write_str("memory:"),
            StoreUrl::Sqlite(path) => write!(f, "sqlite://{}", path.display()),
            StoreUrl::Redis(u) | StoreUrl::Postgres(u) | StoreUrl::Mysql(u) => {
                f.write_str(&redacted(u))
            }
            StoreUrl::Etcd(hosts) => write!(f, "etcd://{}", hosts.join(",")),
        }
    }
}

/// `url` with its password replaced by `***`, for messages and logs. Works on URLs that do not parse, too.
pub fn redacted(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let authority_end = url[start..].find('/').map_or(url.len(), |i| start + i);
    let Some(at) = url[start..authority_end].rfind('@').map(|i| start + i) else {
        return url.to_owned();
    };
    match url[start..at].find(':') {
        Some(colon) => format!("{}:***{}", &url[..start + colon], &url[at..]),
        None => url.to_owned(),
    }
}

fn checked(url: &str, rest: &str) -> Result<String, StoreError> {
    let parsed = ::url::Url::parse(url).map_err(|e| StoreError::InvalidUrl {
        url: url.to_owned(),
        reason: e.to_string(),
    })?;
    if !rest.starts_with("//") || parsed.host_str().is_none_or(str::is_empty) {
        return Err(StoreError::InvalidUrl {
            url: url.to_owned(),
            reason: "expected SCHEME://host[:port]/...".into(),
        });
    }
    Ok(url.to_owned())
}

/// Opens the store a URL names. `clock` is the host clock, used by stores that have no clock of their own.
pub async fn open(
    url: &StoreUrl,
    clock: Arc<dyn Clock>,
) -> Result<Arc<dyn LeaseStore>, StoreError> {
    // Unused when every store is compiled in.
    #[allow(unused_variables)]
    let not_built = |store: &str, feature: &str| StoreError::InvalidUrl {
        url: url.to_string(),
        reason: format!("the {store} store is not compiled in (cargo feature `{feature}`)"),
    };
    match url {
        StoreUrl::Memory => Ok(Arc::new(MemoryStore::new(clock))),
        #[cfg(feature = "sqlite")]
        StoreUrl::Sqlite(path) => Ok(Arc::new(super::SqliteStore::open(path, clock)?)),
        #[cfg(not(feature = "sqlite"))]
        StoreUrl::Sqlite(_) => Err(not_built("sqlite", "sqlite")),
        #[cfg(feature = "redis")]
        StoreUrl::Redis(url) => Ok(Arc::new(super::RedisStore::open(url)?)),
        #[cfg(not(feature = "redis"))]
        StoreUrl::Redis(_) => Err(not_built("redis", "redis")),
        #[cfg(feature = "postgres")]
        StoreUrl::Postgres(url) => Ok(Arc::new(super::PostgresStore::open(url)?)),
        #[cfg(not(feature = "postgres"))]
        StoreUrl::Postgres(_) => Err(not_built("postgres", "postgres")),
        #[cfg(feature = "mysql")]
        StoreUrl::Mysql(url) => Ok(Arc::new(super::MysqlStore::open(url).await?)),
        #[cfg(not(feature = "mysql"))]
        StoreUrl::Mysql(_) => Err(not_built("mysql", "mysql")),
        #[cfg(feature = "etcd")]
        StoreUrl::Etcd(hosts) => Ok(Arc::new(super::EtcdStore::open(hosts, clock).await?)),
        #[cfg(not(feature = "etcd"))]
        StoreUrl::Etcd(_) => Err(not_built("etcd", "etcd")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_scheme() {
        assert_eq!(StoreUrl::parse("memory:").unwrap(), StoreUrl::Memory);
        assert_eq!(
            StoreUrl::parse("sqlite:///var/lib/x.db").unwrap(),
            StoreUrl::Sqlite("/var/lib/x.db".into())
        );
        assert_eq!(
            StoreUrl::parse("sqlite:x.db").unwrap(),
            StoreUrl::Sqlite("x.db".into())
        );
        assert!(matches!(
            StoreUrl::parse("redis://127.0.0.1:6379/0").unwrap(),
            StoreUrl::Redis(_)
        ));
        assert!(matches!(
            StoreUrl::parse("postgres://u:p@localhost/db").unwrap(),
            StoreUrl::Postgres(_)
        ));
        assert_eq!(
            StoreUrl::parse("etcd://a:2379,b:2379").unwrap(),
            StoreUrl::Etcd(vec!["a:2379".into(), "b:2379".into()])
        );
    }

    #[test]
    fn display_hides_passwords() {
        let url = StoreUrl::parse("postgres://cosid:secret@db:5432/ids").unwrap();
        assert_eq!(url.to_string(), "postgres://cosid:***@db:5432/ids");
        let url = StoreUrl::parse("redis://127.0.0.1:6379/0").unwrap();
        assert_eq!(url.to_string(), "redis://127.0.0.1:6379/0");
    }

    #[test]
    fn refuses_bad_urls() {
        for bad in [
            "",
            "nope",
            "ftp://x",
            "sqlite:",
            "sqlite://",
            "redis:x",
            "redis://",
            "etcd://",
            "etcd://a",
            "memory:/x",
        ] {
            assert!(
                matches!(StoreUrl::parse(bad), Err(StoreError::InvalidUrl { .. })),
                "{bad}"
            );
        }
    }
}
