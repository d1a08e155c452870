//! The one parser of a store value, for every language: a lease store URL (`sqlite://`, `memory:`, `redis://`,
//! ...), a static slot (`static:3?state_file=..&ahead=..`, `static:ordinal`) or a manual one (`manual:3`).

use crate::error::Error;
use crate::static_slot::{self, StaticSpec};
use crate::store::{StoreError, StoreUrl};

/// What a store value names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreValue {
    /// A lease store.
    Lease(StoreUrl),
    /// A slot without a store: `static:` or `manual:`.
    Static(StaticSpec),
}

/// What a child of `fork()` can do with a runtime of this store (DESIGN §5: a child never issues on a slot it did
/// not acquire itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForkRule {
    /// It can take a slot of its own: a shared lease store, or a static slot guarded by its state file (whose
    /// lock the parent holds, so the child gets `STATE_FILE` rather than the parent's slot).
    Reacquire,
    /// It cannot: `FORKED`, with the reason.
    Refuse(&'static str),
}

impl StoreValue {
    /// Parses `text`; `static:ordinal` reads the ordinal from this host's name (`HOSTNAME`, else the system's).
    pub fn parse(text: &str) -> Result<StoreValue, Error> {
        Self::parse_on(text, &static_slot::hostname())
    }

    /// Parses `text`, reading `static:ordinal` from `hostname`.
    pub fn parse_on(text: &str, hostname: &str) -> Result<StoreValue, Error> {
        match StaticSpec::parse(text, hostname) {
            Some(spec) => Ok(StoreValue::Static(spec?)),
            None => StoreUrl::parse(text).map(StoreValue::Lease).map_err(|e| match e {
                // The URL parser knows lease stores only; the schemes of static slots are this parser's.
                StoreError::InvalidUrl { url, reason } if reason.starts_with("unknown scheme") => {
                    StoreError::InvalidUrl {
                        url,
                        reason: format!("{reason}, or static:SLOT or manual:SLOT for a slot without a store"),
                    }
                    .into()
                }
                other => other.into(),
            }),
        }
    }

    /// The store of an unset value: the embedded SQLite file in the user's state directory.
    pub fn default_store() -> Result<StoreValue, Error> {
        Ok(StoreValue::Lease(StoreUrl::default_sqlite()?))
    }

    /// What a forked child may do.
    pub fn fork_rule(&self) -> ForkRule {
        match self {
            StoreValue::Lease(StoreUrl::Memory) => ForkRule::Refuse(
                "the store is `memory:`, which lives in the parent process only: a new one here would hand out \
                 the parent's slots again. Use a shared store (sqlite://, redis://, ...) to issue ids in forked \
                 children",
            ),
            StoreValue::Lease(StoreUrl::Zookeeper(_)) => ForkRule::Refuse(
                "the store is `zookeeper://`, whose client does its I/O through one process-wide reactor that a \
                 forked child inherits without its thread (and shares its epoll set with the parent): a child \
                 cannot talk to ZooKeeper without disturbing the parent. Start children with `spawn`/`exec`, or \
                 use another shared store to issue ids in forked children",
            ),
            StoreValue::Lease(_) => ForkRule::Reacquire,
            StoreValue::Static(spec) if spec.manual => ForkRule::Refuse(
                "the store is `manual:`, a fixed slot that the parent holds: the child has no slot of its own",
            ),
            StoreValue::Static(spec) if spec.state_file.is_none() => ForkRule::Refuse(
                "the store is `static:` without a state file, a fixed slot that the parent holds: the child has \
                 no slot of its own",
            ),
            StoreValue::Static(_) => ForkRule::Reacquire,
        }
    }

    /// The value as a person may see it (passwords shown as `***`).
    pub fn shown(&self) -> String {
        match self {
            StoreValue::Lease(StoreUrl::Sqlite(path)) if path.is_absolute() => {
                format!("sqlite://{}", path.display())
            }
            StoreValue::Lease(StoreUrl::Sqlite(path)) => format!("sqlite:{}", path.display()),
            StoreValue::Lease(url) => url.to_string(),
            StoreValue::Static(spec) => {
                let mut s = format!(
                    "{}:{}",
                    if spec.manual { "manual" } else { "static" },
                    spec.slot
                );
                if let Some(p) = &spec.state_file {
                    s.push_str(&format!("?state_file={}", p.display()));
                }
                s
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses_to_its_kind() {
        assert_eq!(
            StoreValue::parse_on("memory:", "h").unwrap(),
            StoreValue::Lease(StoreUrl::Memory)
        );
        let s = StoreValue::parse_on("static:3?state_file=/tmp/x&ahead=2s", "h").unwrap();
        match &s {
            StoreValue::Static(spec) => {
                assert_eq!(spec.slot, 3);
                assert!(!spec.manual);
                assert_eq!(spec.ahead, std::time::Duration::from_secs(2));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(s.fork_rule(), ForkRule::Reacquire);
        match StoreValue::parse_on("static:ordinal", "web-7").unwrap() {
            StoreValue::Static(spec) => assert_eq!(spec.slot, 7),
            other => panic!("{other:?}"),
        }
        let m = StoreValue::parse_on("manual:5", "h").unwrap();
        assert!(matches!(m.fork_rule(), ForkRule::Refuse(_)));
        assert!(matches!(
            StoreValue::parse_on("static:4", "h").unwrap().fork_rule(),
            ForkRule::Refuse(_)
        ));
        assert!(matches!(
            StoreValue::parse_on("memory:", "h").unwrap().fork_rule(),
            ForkRule::Refuse(_)
        ));
        assert!(matches!(
            StoreValue::parse_on("zookeeper://127.0.0.1:2181", "h")
                .unwrap()
                .fork_rule(),
            ForkRule::Refuse(_)
        ));
    }

    #[test]
    fn bad_values_are_config_errors() {
        for bad in [
            "static:x",
            "manual:3?state_file=/x",
            "ftp://x",
            "static:ordinal",
        ] {
            let e = StoreValue::parse_on(bad, "no-ordinal-here").unwrap_err();
            assert_eq!(
                crate::host::ErrorCode::of(&e),
                crate::host::ErrorCode::Config,
                "{bad}: {e}"
            );
        }
    }
}
