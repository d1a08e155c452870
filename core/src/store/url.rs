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

/// `url` with every part that could hold a secret replaced by `***`, for messages, logs and Debug output. The one
/// redaction of cosid: every store URL shown anywhere goes through it. Works on URLs that do not parse, and on
/// values that are not URLs at all (a duration, a layout name), which it leaves alone. Default-deny: only what is
/// known to be harmless is shown.
///
/// - The user-info ends at the last `@` after the scheme. Its password (after its first `:`) is hidden:
///   `redis://app:***@host`. If the user-info holds a `/`, `?` or `#` (an unencoded character in a password, or an
///   `@` in a query or fragment), where the password ends cannot be told: everything after the scheme is hidden
///   (`redis://***`).
/// - Every query value whose parameter is not known to be harmless (a short list: `sslmode`, `replicaSet`, `w`,
///   `state_file`, ...) is hidden (`?digest=***`), and so is a parameter with no `=`.
/// - The fragment is hidden (`#***`): no store reads one, so it can only be a cut-off password.
/// - A value with no scheme (`rediss//app:pw@host`, a typo) and an `@` after a `:` is hidden from that `:` on.
pub fn redacted(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut last = 0;
    for r in hidden(url) {
        out.push_str(&url[last..r.start]);
        out.push_str("***");
        last = r.end;
    }
    out.push_str(&url[last..]);
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

/// The end of `text`'s scheme (the index of its `:`), if it starts with one (RFC 3986: a letter, then letters,
/// digits, `+`, `-`, `.`).
fn scheme_end(text: &str) -> Option<usize> {
    let colon = text.find(':')?;
    let scheme = &text[..colon];
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(colon)
}

/// The byte ranges of `text` that [`redacted`] hides, in order and disjoint.
fn hidden(text: &str) -> Vec<std::ops::Range<usize>> {
    let Some(colon) = scheme_end(text) else {
        // No scheme: a typo in one (`rediss//app:pw@host`) took the user-info's `:` for the scheme's.
        return match text.find(':') {
            Some(c) if text[c..].contains('@') => std::iter::once(c + 1..text.len()).collect(),
            _ => query_and_fragment(text, 0),
        };
    };
    let after = &text[colon + 1..];
    let start = colon + 1 + if after.starts_with("//") { 2 } else { 0 };
    let rest = &text[start..];
    let Some(at) = rest.rfind('@') else {
        return query_and_fragment(text, start);
    };
    let info = &rest[..at];
    if info.contains(['/', '?', '#']) || start == text.len() {
        return std::iter::once(start..text.len()).collect();
    }
    let mut out = Vec::new();
    if let Some(c) = info.find(':') {
        out.push(start + c + 1..start + at);
    }
    out.extend(query_and_fragment(text, start + at + 1));
    out
}

/// Query parameters whose values are shown: they name things and set modes, never hold credentials.
const HARMLESS: &[&str] = &[
    "ahead",
    "appname",
    "application_name",
    "authmechanism",
    "authsource",
    "connect_timeout",
    "connecttimeoutms",
    "database",
    "db",
    "dbname",
    "directconnection",
    "journal",
    "maxpoolsize",
    "minpoolsize",
    "readpreference",
    "replicaset",
    "retrywrites",
    "serverselectiontimeoutms",
    "sockettimeoutms",
    "ssl",
    "sslmode",
    "state_file",
    "target_session_attrs",
    "timeout",
    "tls",
    "user",
    "username",
    "w",
];

/// The hidden ranges of the query and fragment of `text`, looked for from `from`: each value of a parameter not
/// in [`HARMLESS`], each parameter without a value, and the fragment.
fn query_and_fragment(text: &str, from: usize) -> Vec<std::ops::Range<usize>> {
    let hash = text[from..].find('#').map(|i| from + i);
    let end = hash.unwrap_or(text.len());
    let mut out = Vec::new();
    if let Some(q) = text[from..end].find('?').map(|i| from + i) {
        let mut pos = q + 1;
        for pair in text[q + 1..end].split(['&', ';']) {
            match pair.split_once('=') {
                Some((name, value))
                    if !value.is_empty()
                        && !HARMLESS.contains(&name.to_ascii_lowercase().as_str()) =>
                {
                    let start = pos + name.len() + 1;
                    out.push(start..start + value.len());
                }
                Some(_) => {}
                None if !pair.is_empty() => out.push(pos..pos + pair.len()),
                None => {}
            }
            pos += pair.len() + 1;
        }
    }
    if let Some(h) = hash.filter(|&h| h + 1 < text.len()) {
        out.push(h + 1..text.len());
    }
    out
}

/// Every secret in `url`, as written and percent-decoded (a driver may quote either): each hidden part, and the
/// pieces of one between the characters a driver may split it at.
fn secrets(url: &str) -> Vec<String> {
    let mut raw: Vec<&str> = Vec::new();
    for r in hidden(url) {
        let part = &url[r];
        raw.push(part);
        raw.extend(
            part.split(['@', '/', '?', '#', '&', '=', ':', ','])
                .filter(|p| p.len() >= 4),
        );
    }
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

/// Why a store this build lacks cannot be opened, and the two ways to reach it.
#[allow(dead_code)] // unused when every store is compiled in
fn not_built_reason(store: &str, feature: &str) -> String {
    let via_serve = if cfg!(feature = "http") {
        "through `cosid serve` (run it with this store, and give the clients its `http://` URL), or "
    } else {
        ""
    };
    format!(
        "the {store} store is not in this build, which has {}: reach it {via_serve}with a build that has it \
         (cargo feature `{feature}`; docs/install.md says how for each language)",
        super::built().join(", ")
    )
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
        reason: not_built_reason(store, feature),
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
    fn the_stores_built_are_the_features_compiled_in() {
        let built = super::super::built();
        assert_eq!(built[0], "memory");
        assert_eq!(built.contains(&"sqlite"), cfg!(feature = "sqlite"));
        assert_eq!(built.contains(&"redis"), cfg!(feature = "redis"));
        assert_eq!(built.contains(&"mongodb"), cfg!(feature = "mongodb"));
        assert!(built.iter().all(|s| super::super::ALL.contains(s)));
        let names: Vec<&str> = super::super::IN_THIS_BUILD
            .iter()
            .map(|(s, _)| *s)
            .collect();
        assert_eq!(names, super::super::ALL);
        assert!(!super::super::is_built("oracle"));
    }

    #[test]
    fn a_store_not_built_says_how_to_reach_it() {
        let reason = not_built_reason("mysql", "mysql");
        assert!(
            reason.contains("the mysql store is not in this build, which has memory"),
            "{reason}"
        );
        assert!(reason.contains("cargo feature `mysql`"), "{reason}");
        assert_eq!(
            reason.contains("cosid serve"),
            cfg!(feature = "http"),
            "{reason}"
        );
    }

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
        // An unencoded `@` and `#` together; secrets in query parameters no list names; a fragment.
        (
            "redis://app:pa@ss#Hunter2pw@127.0.0.1:1/0",
            &["Hunter2pw", "pa@ss"],
        ),
        (
            "redis://app:pa@ss:99999#Hunter2pw@127.0.0.1:1/0",
            &["Hunter2pw", "pa@ss"],
        ),
        (
            "zookeeper://127.0.0.1:2181/apps?digest=ids:Hunter2pw",
            &["Hunter2pw"],
        ),
        ("redis://127.0.0.1:1/0?client_id=Hunter2pw", &["Hunter2pw"]),
        ("postgres://db/ids#Hunter2pw", &["Hunter2pw"]),
        (
            "mongodb://ids:pa@ss#Hunter2pw@127.0.0.1:27017/ids",
            &["Hunter2pw", "pa@ss"],
        ),
        (
            "etcd://root:pa@ss#Hunter2pw@127.0.0.1:2379,",
            &["Hunter2pw", "pa@ss"],
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
            // An `@` outside the user-info: where a password would end cannot be told.
            ("postgres://db/x?user=me@corp", "postgres://***"),
            (
                "postgres://db/x?user=me&sslmode=require",
                "postgres://db/x?user=me&sslmode=require",
            ),
            (
                "zookeeper://a:2181/apps?digest=ids:pw",
                "zookeeper://a:2181/apps?digest=***",
            ),
            (
                "redis://a:1/0?client_name=x#frag",
                "redis://a:1/0?client_name=***#***",
            ),
            ("redis://app:pa@ss#pw@a:1/0", "redis://***"),
            ("js-safe", "js-safe"),
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
