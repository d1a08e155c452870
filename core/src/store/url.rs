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
    /// `http://` or `https://`: a `cosid serve` in front of another store.
    Http(String),
    /// `zookeeper://[user:password@]host:port[,host:port...][/chroot]`.
    Zookeeper(String),
    /// `mongodb://[user:password@]host[:port][,host[:port]...][/database][?options]`.
    Mongodb(String),
}

impl StoreUrl {
    /// Parses `url`. The scheme decides the store.
    pub fn parse(url: &str) -> Result<Self, StoreError> {
        let invalid = |reason: &str| StoreError::InvalidUrl {
            url: redacted(url),
            reason: scrub(reason, url),
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
            "http" | "https" => Ok(StoreUrl::Http(checked(url, rest)?)),
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
            "zookeeper" => {
                let hosts = rest
                    .strip_prefix("//")
                    .map(|r| r.split_once('/').map_or(r, |(h, _)| h))
                    .map(|h| h.rsplit_once('@').map_or(h, |(_, h)| h))
                    .ok_or_else(|| invalid("expected zookeeper://host:port[,host:port][/chroot]"))?;
                if hosts.split(',').any(|h| h.is_empty() || !h.contains(':')) {
                    return Err(invalid("expected zookeeper://host:port[,host:port][/chroot]"));
                }
                Ok(StoreUrl::Zookeeper(url.to_owned()))
            }
            "mongodb" => {
                let usage = "expected mongodb://[user:password@]host[:port][,host[:port]...][/database][?options]";
                let authority = rest
                    .strip_prefix("//")
                    .map(|r| r.split(['/', '?']).next().unwrap_or(""))
                    .map(|a| a.rsplit_once('@').map_or(a, |(_, h)| h))
                    .ok_or_else(|| invalid(usage))?;
                if authority.split(',').any(str::is_empty) {
                    return Err(invalid(usage));
                }
                Ok(StoreUrl::Mongodb(url.to_owned()))
            }
            "mongodb+srv" => Err(invalid(
                "mongodb+srv:// (a DNS seed list) is not supported: list the hosts, \
                 mongodb://host1:27017,host2:27017/?replicaSet=NAME",
            )),
            other => Err(invalid(&format!(
                "unknown scheme {other:?}; expected sqlite, memory, redis, rediss, postgres, mysql, etcd, zookeeper, mongodb, http or https"
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
            StoreUrl::Redis(u)
            | StoreUrl::Postgres(u)
            | StoreUrl::Mysql(u)
            | StoreUrl::Zookeeper(u)
            | StoreUrl::Mongodb(u)
            | StoreUrl::Http(u) => f.write_str(&redacted(u)),
            StoreUrl::Etcd(hosts) => f.write_str(&redacted(&format!("etcd://{}", hosts.join(",")))),
        }
    }
}

/// `url` with every secret in it replaced by `***`, for messages, logs and Debug output. The one redaction of
/// cosid: every store URL shown anywhere goes through it. Works on URLs that do not parse, too.
///
/// - The password of the user-info (`redis://app:***@host`, `etcd://user:***@host:2379`). When the authority
///   (up to the first `/`, `?` or `#`) has no `@` but the rest of the URL has, an unencoded character cut the
///   password short: everything from the first `:` after the scheme to the last `@` is taken as the password,
///   shown too little rather than too much.
/// - The value of each query parameter whose name suggests a secret (`password`, `pass`, `pwd`, `token`,
///   `secret`, `auth`, `key`, `credential`, any case): `?password=***`.
pub fn redacted(url: &str) -> String {
    let Some((at, password)) = password_span(url) else {
        return redact_query(url);
    };
    let mut out = String::with_capacity(url.len());
    out.push_str(&url[..password.start]);
    out.push_str("***");
    out.push_str(&redact_query(&url[at..]));
    out
}

/// `text` (an error message about `url`, perhaps from a driver) with every secret of `url` replaced by `***`, in
/// case the driver quoted it.
pub fn scrub(text: &str, url: &str) -> String {
    let mut out = text.replace(url, &redacted(url));
    let mut secrets = secrets(url);
    // Longest first, so that a secret containing another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for secret in secrets {
        out = out.replace(&secret, "***");
    }
    out
}

/// Where the user-info ends (its `@`) and where its password lies, if it has one.
fn password_span(url: &str) -> Option<(usize, std::ops::Range<usize>)> {
    let (start, typo) = match url.find("://") {
        Some(i) => (i + 3, false),
        None => (url.find(':')? + 1, true),
    };
    let rest = &url[start..];
    let authority = rest.find(['/', '?', '#']).map_or(rest, |i| &rest[..i]);
    let at = match authority.rfind('@') {
        // A well-formed user-info: it ends at the authority's last `@`.
        Some(at) => at,
        // None in the authority, but an `@` further on: an unencoded `/`, `?` or `#` in the password cut the
        // authority short (`redis://app:12?x@host` even parses, as port 12 and a query). Take it as user-info: at
        // worst a URL with an `@` in its query and a port is shown with too much hidden.
        None => rest.rfind('@')?,
    };
    match rest[..at].find(':') {
        Some(colon) => Some((start + at, start + colon + 1..start + at)),
        // No `://` and no `:` left before the `@`: a typo in the scheme (`rediss//app:s3cret@host`) took the
        // user-info's `:` for the scheme's. Everything after it up to the `@` may be the password.
        None if typo => Some((start + at, start..start + at)),
        None => None,
    }
}

/// Whether a query parameter's name suggests its value is a secret.
fn secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "pass",
        "pwd",
        "token",
        "secret",
        "auth",
        "key",
        "credential",
    ]
    .iter()
    .any(|s| name.contains(s))
}

/// The query parameters of `text` (from its first `?`) whose name suggests a secret, each as the byte range of
/// its value.
fn secret_values(text: &str) -> Vec<std::ops::Range<usize>> {
    let Some(q) = text.find('?') else {
        return Vec::new();
    };
    let end = text[q..].find('#').map_or(text.len(), |i| q + i);
    let mut out = Vec::new();
    let mut pos = q + 1;
    for pair in text[q + 1..end].split(['&', ';']) {
        if let Some((name, value)) = pair.split_once('=') {
            if secret_name(name) && !value.is_empty() {
                let start = pos + name.len() + 1;
                out.push(start..start + value.len());
            }
        }
        pos += pair.len() + 1;
    }
    out
}

fn redact_query(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for value in secret_values(text) {
        out.push_str(&text[last..value.start]);
        out.push_str("***");
        last = value.end;
    }
    out.push_str(&text[last..]);
    out
}

/// Every secret in `url`, as written and percent-decoded (a driver may quote either).
fn secrets(url: &str) -> Vec<String> {
    let mut raw: Vec<&str> = Vec::new();
    if let Some((_, password)) = password_span(url) {
        raw.push(&url[password]);
    }
    raw.extend(secret_values(url).into_iter().map(|r| &url[r]));
    let mut out = Vec::new();
    for s in raw.into_iter().filter(|s| !s.is_empty()) {
        out.push(s.to_owned());
        let decoded = percent_decoded(s);
        if decoded != s && !decoded.is_empty() {
            out.push(decoded);
        }
    }
    out
}

/// `s` with its `%XX` escapes decoded (lossy: for finding a secret in a message, not for using it).
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn checked(url: &str, rest: &str) -> Result<String, StoreError> {
    let parsed = ::url::Url::parse(url).map_err(|e| StoreError::InvalidUrl {
        url: redacted(url),
        reason: scrub(&e.to_string(), url),
    })?;
    if !rest.starts_with("//") || parsed.host_str().is_none_or(str::is_empty) {
        return Err(StoreError::InvalidUrl {
            url: redacted(url),
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
        #[cfg(feature = "http")]
        StoreUrl::Http(url) => Ok(Arc::new(super::HttpStore::open(url)?)),
        #[cfg(not(feature = "http"))]
        StoreUrl::Http(_) => Err(not_built("http", "http")),
        #[cfg(feature = "zookeeper")]
        StoreUrl::Zookeeper(url) => Ok(Arc::new(super::ZookeeperStore::open(url, clock)?)),
        #[cfg(not(feature = "zookeeper"))]
        StoreUrl::Zookeeper(_) => Err(not_built("zookeeper", "zookeeper")),
        #[cfg(feature = "mongodb")]
        StoreUrl::Mongodb(url) => Ok(Arc::new(super::MongoStore::open(url).await?)),
        #[cfg(not(feature = "mongodb"))]
        StoreUrl::Mongodb(_) => Err(not_built("mongodb", "mongodb")),
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
            StoreUrl::parse("http://127.0.0.1:8080").unwrap(),
            StoreUrl::Http("http://127.0.0.1:8080".into())
        );
        assert!(matches!(
            StoreUrl::parse("https://ids.example/x?token=t").unwrap(),
            StoreUrl::Http(_)
        ));
        assert_eq!(
            StoreUrl::parse("etcd://a:2379,b:2379").unwrap(),
            StoreUrl::Etcd(vec!["a:2379".into(), "b:2379".into()])
        );
        assert_eq!(
            StoreUrl::parse("zookeeper://a:2181,b:2181/apps/ids").unwrap(),
            StoreUrl::Zookeeper("zookeeper://a:2181,b:2181/apps/ids".into())
        );
        assert_eq!(
            StoreUrl::parse("mongodb://a:27017,b/ids?replicaSet=rs0").unwrap(),
            StoreUrl::Mongodb("mongodb://a:27017,b/ids?replicaSet=rs0".into())
        );
    }

    #[test]
    fn display_hides_passwords() {
        let url = StoreUrl::parse("postgres://cosid:secret@db:5432/ids").unwrap();
        assert_eq!(url.to_string(), "postgres://cosid:***@db:5432/ids");
        let url = StoreUrl::parse("redis://127.0.0.1:6379/0").unwrap();
        assert_eq!(url.to_string(), "redis://127.0.0.1:6379/0");
    }

    /// Every form a password takes in a store URL, with the fragments of it that must never be shown.
    const PLANTED: &[(&str, &[&str])] = &[
        ("redis://app:Hunter2pw@127.0.0.1:1/0", &["Hunter2pw"]),
        ("rediss://:Hunter2pw@cache.example:6380", &["Hunter2pw"]),
        (
            "postgres://app:Hunter%40pw@db:5432/ids",
            &["Hunter%40pw", "Hunter@pw"],
        ),
        (
            "postgres://db:5432/ids?user=app&password=Hunter2pw",
            &["Hunter2pw"],
        ),
        (
            "postgresql://db/ids?sslmode=require&PASSWORD=Hunter2pw&x=1",
            &["Hunter2pw"],
        ),
        ("mysql://app@db/ids?pass=Hunter2pw", &["Hunter2pw"]),
        ("redis://db:1/0?token=Hunter2pw", &["Hunter2pw"]),
        ("http://127.0.0.1:8080?token=Hunter2pw", &["Hunter2pw"]),
        ("https://:Hunter2pw@ids.example:443/lease", &["Hunter2pw"]),
        (
            "etcd://root:Hunter2pw@127.0.0.1:2379,127.0.0.2:2379",
            &["Hunter2pw"],
        ),
        // Unparsable: unencoded `@`, `#`, `/`, `?` in the password; a typo in the scheme.
        (
            "redis://app:Hun@ter2pw@127.0.0.1:1/0",
            &["Hun@ter2pw", "ter2pw"],
        ),
        (
            "redis://app:Hun#ter2pw@127.0.0.1:1/0",
            &["Hun#ter2pw", "ter2pw"],
        ),
        (
            "postgres://app:Hun/ter2pw@db/ids",
            &["Hun/ter2pw", "ter2pw"],
        ),
        ("redis://app:12?ter2pw@db:1/0", &["12?ter2pw", "ter2pw"]),
        ("rdis://app:Hunter2pw@127.0.0.1:1/0", &["Hunter2pw"]),
        ("redis:/app:Hunter2pw@127.0.0.1:1/0", &["Hunter2pw"]),
        // The scheme's `:` forgotten: the user-info's is taken for it.
        ("rediss//app:Hunter2pw@127.0.0.1:1/0", &["Hunter2pw"]),
        (
            "etcd://root:Hun@ter2pw@127.0.0.1:2379",
            &["Hun@ter2pw", "ter2pw"],
        ),
        (
            "zookeeper://ids:Hunter2pw@127.0.0.1:2181,127.0.0.2:2181/apps",
            &["Hunter2pw"],
        ),
        (
            "zookeeper://ids:Hun/ter2pw@127.0.0.1:2181",
            &["Hun/ter2pw", "ter2pw"],
        ),
        (
            "mongodb://ids:Hunter2pw@127.0.0.1:27017,127.0.0.2:27017/ids?replicaSet=rs0",
            &["Hunter2pw"],
        ),
        (
            "mongodb+srv://ids:Hunter2pw@cluster.example",
            &["Hunter2pw"],
        ),
    ];

    fn assert_hidden(shown: &str, url: &str, secrets: &[&str]) {
        for s in secrets {
            assert!(!shown.contains(s), "{s:?} of {url:?} shown in: {shown}");
        }
    }

    #[test]
    fn redaction_hides_every_form_of_password() {
        for (url, secrets) in PLANTED {
            let shown = redacted(url);
            assert_hidden(&shown, url, secrets);
            assert!(shown.contains("***"), "{url} -> {shown}");
            // The error and every form of it, when the URL is refused.
            if let Err(e) = StoreUrl::parse(url) {
                assert_hidden(&e.to_string(), url, secrets);
                assert_hidden(&format!("{e:?}"), url, secrets);
                let e = crate::Error::from(e);
                assert_hidden(&e.to_string(), url, secrets);
                assert_hidden(&format!("{e:?}"), url, secrets);
            } else {
                let parsed = StoreUrl::parse(url).unwrap();
                assert_hidden(&parsed.to_string(), url, secrets);
            }
            // A driver that quotes the URL, encoded or not.
            let quoted = format!("cannot parse {url}: bad secret {}", secrets[0]);
            assert_hidden(&scrub(&quoted, url), url, secrets);
            // Settings and configurations.
            let config = crate::Config {
                store: Some((*url).to_owned()),
                ..crate::Config::default()
            };
            assert_hidden(&format!("{config:?}"), url, secrets);
            let builder = crate::Builder::with_config(config);
            assert_hidden(&format!("{builder:?}"), url, secrets);
            let e = crate::ConfigError::new("COSID_STORE", *url, "a store URL");
            assert_hidden(&e.to_string(), url, secrets);
            assert_hidden(&format!("{e:?}"), url, secrets);
        }
    }

    #[test]
    fn redaction_keeps_what_is_not_secret() {
        for (url, shown) in [
            ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
            ("redis://app:pw@h:1/0", "redis://app:***@h:1/0"),
            (
                "etcd://root:pw@a:2379,b:2379",
                "etcd://root:***@a:2379,b:2379",
            ),
            (
                "postgres://u:pw@db/x?sslmode=require&password=pw",
                "postgres://u:***@db/x?sslmode=require&password=***",
            ),
            (
                "postgres://db/x?user=me@corp",
                "postgres://db/x?user=me@corp",
            ),
            (
                "sqlite:///var/lib/cosid/leases.db",
                "sqlite:///var/lib/cosid/leases.db",
            ),
            (
                "zookeeper://ids:pw@a:2181,b:2181/apps/ids",
                "zookeeper://ids:***@a:2181,b:2181/apps/ids",
            ),
            ("zookeeper://a:2181/apps", "zookeeper://a:2181/apps"),
            (
                "mongodb://ids:pw@a:27017,b:27017/ids?w=majority",
                "mongodb://ids:***@a:27017,b:27017/ids?w=majority",
            ),
            ("memory:", "memory:"),
            (
                "static:3?state_file=/var/lib/s",
                "static:3?state_file=/var/lib/s",
            ),
            ("30s", "30s"),
        ] {
            assert_eq!(redacted(url), shown, "{url}");
        }
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
            "http://",
            "https:x",
            "zookeeper://",
            "zookeeper://a/x",
            "mongodb://",
            "mongodb://a,,b/x",
            "mongodb:a",
            "mongodb+srv://cluster.example/x",
            "memory:/x",
        ] {
            assert!(
                matches!(StoreUrl::parse(bad), Err(StoreError::InvalidUrl { .. })),
                "{bad}"
            );
        }
    }
}
