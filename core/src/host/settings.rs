//! The one settings table: every setting's key, environment variable, kind, default and meaning, with one parser
//! per kind. C's `cosid_config_set`, the CLI's flags, Python's keyword arguments and Node's options are adapters
//! over [`Settings::set`] / [`Settings::set_value`]; [`Settings::from_env`] reads the same table.
//!
//! Values are parsed by `crate::config`'s parsers, so a bound added there holds in every language.

use super::code::{ErrorCode, HostError};
use super::store_value::StoreValue;
use crate::config::{parse_duration, parse_layout, parse_number, Config, DEFAULT_BITS};
use crate::error::ConfigError;
use crate::event::Event;
use crate::id::Layout;
use std::sync::Arc;
use std::time::Duration;

/// What a forked child does with a runtime its parent started, when the store allows a child a slot of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFork {
    /// The child acquires a slot of its own, with a new incarnation, on its first call (the default).
    #[default]
    Reacquire,
    /// The child's calls fail with `FORKED` until it re-initializes.
    Error,
}

/// What kind of value a setting takes, and so which parser reads its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A store value ([`StoreValue`]).
    Store,
    /// Free text (a namespace name, an owner key).
    Text,
    /// A layout name (`millis`, `seconds`, `js-safe`), or a [`Layout`] through [`Value::Layout`].
    Layout,
    /// A duration with a unit (`30s`, `500ms`), or a [`Duration`] through [`Value::Duration`].
    Duration,
    /// A whole number in canonical decimal, or [`Value::Number`].
    Number,
    /// A slot number or `ordinal`.
    Slot,
    /// `reacquire` or `error`.
    OnFork,
}

/// One row of [`SETTINGS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The key (`cosid_config_set`, Python's keyword argument).
    pub key: &'static str,
    /// The key in camelCase (Node's option).
    pub js: &'static str,
    /// The environment variable.
    pub env: &'static str,
    /// The kind of value.
    pub kind: Kind,
    /// The default, as a person reads it.
    pub default: &'static str,
    /// What it sets.
    pub doc: &'static str,
}

impl Setting {
    /// The command-line flag (`--owner-key`).
    pub fn flag(&self) -> String {
        format!("--{}", self.key.replace('_', "-"))
    }
}

/// Every setting, in the order the documentation lists them.
pub const SETTINGS: &[Setting] = &[
    Setting {
        key: "store",
        js: "store",
        env: "COSID_STORE",
        kind: Kind::Store,
        default: "the SQLite file $XDG_STATE_HOME/cosid/leases.db",
        doc: "store: sqlite:///path, memory:, redis://, postgres://, mysql://, etcd://, zookeeper://, mongodb://, http://, \
              static:SLOT[?state_file=PATH&ahead=DURATION], static:ordinal, manual:SLOT",
    },
    Setting {
        key: "namespace",
        js: "namespace",
        env: "COSID_NAMESPACE",
        kind: Kind::Text,
        default: "default",
        doc: "namespace name",
    },
    Setting {
        key: "layout",
        js: "layout",
        env: "COSID_LAYOUT",
        kind: Kind::Layout,
        default: "millis",
        doc: "id layout: millis, seconds or js-safe",
    },
    Setting {
        key: "ttl",
        js: "ttl",
        env: "COSID_TTL",
        kind: Kind::Duration,
        default: "30s",
        doc: "lease length",
    },
    Setting {
        key: "tolerance",
        js: "tolerance",
        env: "COSID_TOLERANCE",
        kind: Kind::Duration,
        default: "1s",
        doc: "how far past expiry a holder may issue",
    },
    Setting {
        key: "bits",
        js: "bits",
        env: "COSID_BITS",
        kind: Kind::Number,
        default: "10, or the layout's slot bits if fewer",
        doc: "slot bits of the namespace",
    },
    Setting {
        key: "owner_key",
        js: "ownerKey",
        env: "COSID_OWNER_KEY",
        kind: Kind::Text,
        default: "host:pid",
        doc: "owner key of this process's lease",
    },
    Setting {
        key: "preferred_slot",
        js: "preferredSlot",
        env: "COSID_PREFERRED_SLOT",
        kind: Kind::Slot,
        default: "none",
        doc: "slot to take if free, or `ordinal` for the StatefulSet ordinal in HOSTNAME",
    },
    Setting {
        key: "slots",
        js: "slots",
        env: "COSID_SLOTS",
        kind: Kind::Number,
        default: "1",
        doc: "how many slots this process leases, 1 to 64: throughput past one slot's cap",
    },
    Setting {
        key: "acquire_timeout",
        js: "acquireTimeout",
        env: "COSID_ACQUIRE_TIMEOUT",
        kind: Kind::Duration,
        default: "the ttl",
        doc: "how long start-up retries an exhausted or unreachable store",
    },
    Setting {
        key: "max_wait",
        js: "maxWait",
        env: "COSID_MAX_WAIT",
        kind: Kind::Duration,
        default: "2s",
        doc: "how long an id call waits for a renewal or the floor",
    },
    Setting {
        key: "backwards_wait",
        js: "backwardsWait",
        env: "COSID_BACKWARDS_WAIT",
        kind: Kind::Duration,
        default: "500ms",
        doc: "how far back a stepped clock is waited out",
    },
    Setting {
        key: "on_fork",
        js: "onFork",
        env: "COSID_ON_FORK",
        kind: Kind::OnFork,
        default: "reacquire",
        doc: "what a forked child does: reacquire (a slot of its own) or error (FORKED until re-initialized)",
    },
];

/// The setting with this key (snake_case, or Node's camelCase).
pub fn setting(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key || s.js == key)
}

/// A value for [`Settings::set_value`]: text for any setting, or a typed value for the settings of its kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// Back to the default.
    Unset,
    /// Text, read by the setting's parser. Empty text is [`Value::Unset`].
    Text(&'a str),
    /// A duration ([`Kind::Duration`]).
    Duration(Duration),
    /// A whole number ([`Kind::Number`], [`Kind::Slot`]).
    Number(u64),
    /// A layout ([`Kind::Layout`]).
    Layout(Layout),
}

/// An event listener.
pub type Listener = Arc<dyn Fn(&Event) + Send + Sync>;

/// Everything a host runtime starts from: the core's [`Config`], whether slot bits were set (else they follow the
/// layout), the fork policy, and the listeners that see every event from the start.
#[derive(Clone, Default)]
pub struct Settings {
    config: Config,
    bits_set: bool,
    on_fork: OnFork,
    listeners: Vec<Listener>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("config", &self.config)
            .field("bits_set", &self.bits_set)
            .field("on_fork", &self.on_fork)
            .field("listeners", &self.listeners.len())
            .finish()
    }
}

impl Settings {
    /// The defaults.
    pub fn new() -> Settings {
        Settings::default()
    }

    /// The defaults overridden by this process's `COSID_*` variables. An error names the variable.
    pub fn from_env() -> Result<Settings, HostError> {
        Self::with_vars(|name| std::env::var(name).ok())
    }

    /// The defaults overridden by the variables `var` finds (the environment, a test's map, or the CLI's flags
    /// that fall back to the environment). Empty values count as unset. An error names the variable.
    pub fn with_vars(var: impl Fn(&str) -> Option<String>) -> Result<Settings, HostError> {
        let mut s = Settings::new();
        let hostname = || {
            var("HOSTNAME")
                .filter(|h| !h.is_empty())
                .unwrap_or_else(crate::static_slot::hostname)
        };
        for setting in SETTINGS {
            if let Some(v) = var(setting.env).filter(|v| !v.is_empty()) {
                s.apply(setting, setting.env, Value::Text(&v), &hostname)?;
            }
        }
        Ok(s)
    }

    /// Sets `key` from text; empty text restores the default. On error nothing changes: `UNKNOWN_KEY` for a key
    /// not in [`SETTINGS`], `CONFIG` (or `LAYOUT` for a layout name) naming the key, the value and what was
    /// expected.
    pub fn set(&mut self, key: &str, text: &str) -> Result<(), HostError> {
        self.set_value(key, Value::Text(text))
    }

    /// Sets `key` from a typed or text value; as [`set`](Self::set).
    pub fn set_value(&mut self, key: &str, value: Value<'_>) -> Result<(), HostError> {
        self.set_value_as(key, value, None)
    }

    /// As [`set_value`](Self::set_value), with errors naming the value as the caller knows it (`--ttl`,
    /// `ownerKey`) instead of by its key.
    pub fn set_value_as(
        &mut self,
        key: &str,
        value: Value<'_>,
        name: Option<&str>,
    ) -> Result<(), HostError> {
        let setting = setting(key).ok_or_else(|| {
            HostError::new(
                ErrorCode::UnknownKey,
                format!(
                    "unknown configuration key {key:?}: expected one of {}",
                    SETTINGS
                        .iter()
                        .map(|s| s.key)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        self.apply(
            setting,
            name.unwrap_or(setting.key),
            value,
            &crate::static_slot::hostname,
        )
    }

    /// Sets a custom layout (`cosid_config_set_layout`, a Python `cosid.Layout`).
    pub fn set_layout(&mut self, layout: Layout) {
        self.config.layout = layout;
    }

    /// Adds a listener that every runtime started from these settings calls from its very start.
    pub fn subscribe(&mut self, listener: Listener) {
        self.listeners.push(listener);
    }

    /// The listeners.
    pub fn listeners(&self) -> &[Listener] {
        &self.listeners
    }

    /// The fork policy.
    pub fn on_fork(&self) -> OnFork {
        self.on_fork
    }

    /// The core configuration these settings start a runtime with. Slot bits not set follow the layout: 10, or
    /// the layout's slot bits if it has fewer (the JavaScript-safe layout has 5).
    pub fn config(&self) -> Config {
        let mut c = self.config.clone();
        if !self.bits_set {
            c.bits = DEFAULT_BITS.min(c.layout.slot_bits());
        }
        c
    }

    /// The clock (tests inject a manual one).
    pub fn set_clock(&mut self, clock: Arc<dyn crate::clock::Clock>) {
        self.config.clock = clock;
    }

    /// The store value, parsed (`None`: the default SQLite file).
    pub fn store(&self) -> Result<Option<StoreValue>, HostError> {
        match &self.config.store {
            Some(text) => Ok(Some(StoreValue::parse(text)?)),
            None => Ok(None),
        }
    }

    /// Checks the settings against each other (as a start does).
    pub fn validate(&self) -> Result<(), HostError> {
        self.store()?;
        self.config().validate()?;
        Ok(())
    }

    fn apply(
        &mut self,
        setting: &Setting,
        name: &str,
        value: Value<'_>,
        hostname: &dyn Fn() -> String,
    ) -> Result<(), HostError> {
        let value = match value {
            Value::Text("") => Value::Unset,
            v => v,
        };
        let wrong = |expected: &str| -> HostError {
            let shown = match value {
                Value::Unset => String::new(),
                Value::Text(t) => t.to_owned(),
                Value::Duration(d) => format!("{d:?}"),
                Value::Number(n) => n.to_string(),
                Value::Layout(l) => format!("{l:?}"),
            };
            ConfigError::new(name, shown, expected).into()
        };
        let d = Config::default();
        let c = &mut self.config;
        match (setting.kind, value) {
            (Kind::Store, Value::Unset) => c.store = None,
            (Kind::Store, Value::Text(t)) => {
                StoreValue::parse_on(t, &hostname()).map_err(|e| {
                    // Name the setting as the caller spelled it.
                    let mut e = HostError::from(e);
                    if !e.message.contains(name) {
                        e.message = format!("{name}: {}", e.message);
                    }
                    e
                })?;
                c.store = Some(t.to_owned());
            }
            (Kind::Text, v) => {
                let text = match v {
                    Value::Unset => None,
                    Value::Text(t) => Some(t.to_owned()),
                    _ => return Err(wrong("text")),
                };
                match setting.key {
                    "namespace" => {
                        let ns = text.unwrap_or(d.namespace);
                        crate::lease::Namespace::new(ns.clone()).map_err(crate::Error::from)?;
                        c.namespace = ns;
                    }
                    _ => c.owner_key = text,
                }
            }
            (Kind::Layout, Value::Unset) => c.layout = d.layout,
            (Kind::Layout, Value::Layout(l)) => c.layout = l,
            (Kind::Layout, Value::Text(t)) => {
                c.layout = parse_layout(name, t)
                    .map_err(|e| HostError::new(ErrorCode::Layout, ConfigError::to_string(&e)))?
            }
            (Kind::Duration, v) => {
                let parsed = match v {
                    Value::Unset => None,
                    Value::Duration(d) => Some(d),
                    Value::Text(t) => Some(match crate::config::duration_range(setting.key) {
                        Some(range) => crate::config::parse_duration_in(name, t, range)?,
                        None => parse_duration(name, t)?,
                    }),
                    _ => return Err(wrong("a duration with a unit, like 30s or 500ms")),
                };
                match setting.key {
                    "ttl" => c.ttl = parsed.unwrap_or(d.ttl),
                    "tolerance" => c.tolerance = parsed.unwrap_or(d.tolerance),
                    "acquire_timeout" => c.acquire_timeout = parsed,
                    "max_wait" => c.waits.window = parsed.unwrap_or(d.waits.window),
                    _ => c.waits.backwards = parsed.unwrap_or(d.waits.backwards),
                }
            }
            (Kind::Number, Value::Unset) if setting.key == "slots" => c.slots = d.slots,
            (Kind::Number, v) if setting.key == "slots" => {
                c.slots = match v {
                    Value::Number(n) => u32::try_from(n).map_err(|_| wrong(SLOTS_EXPECTED))?,
                    Value::Text(t) => number(name, t, SLOTS_EXPECTED)?,
                    _ => return Err(wrong(SLOTS_EXPECTED)),
                };
            }
            (Kind::Number, Value::Unset) => {
                c.bits = d.bits;
                self.bits_set = false;
            }
            (Kind::Number, v) => {
                let bits: u8 = match v {
                    Value::Number(n) => u8::try_from(n).map_err(|_| wrong(BITS_EXPECTED))?,
                    Value::Text(t) => number(name, t, BITS_EXPECTED)?,
                    _ => return Err(wrong(BITS_EXPECTED)),
                };
                c.bits = bits;
                self.bits_set = true;
            }
            (Kind::Slot, v) => {
                c.preferred_slot = match v {
                    Value::Unset => None,
                    Value::Text("ordinal") => Some(crate::static_slot::ordinal_of(&hostname())?),
                    Value::Text(t) => Some(number(name, t, SLOT_EXPECTED)?),
                    Value::Number(n) => Some(u32::try_from(n).map_err(|_| wrong(SLOT_EXPECTED))?),
                    _ => return Err(wrong(SLOT_EXPECTED)),
                }
            }
            (Kind::OnFork, v) => {
                self.on_fork = match v {
                    Value::Unset => OnFork::Reacquire,
                    Value::Text("reacquire") => OnFork::Reacquire,
                    Value::Text("error") => OnFork::Error,
                    _ => return Err(wrong("reacquire or error")),
                }
            }
            (_, _) => return Err(wrong(kind_expected(setting.kind))),
        }
        Ok(())
    }
}

const BITS_EXPECTED: &str = "a whole number from 1 to the layout's slot bits";
const SLOTS_EXPECTED: &str = "a whole number from 1 to 64";
const SLOT_EXPECTED: &str = "a slot number (0 or more) or `ordinal`";

fn kind_expected(kind: Kind) -> &'static str {
    match kind {
        Kind::Store => "a store URL",
        Kind::Text => "text",
        Kind::Layout => "millis, seconds or js-safe",
        Kind::Duration => "a duration with a unit, like 30s or 500ms",
        Kind::Number => BITS_EXPECTED,
        Kind::Slot => SLOT_EXPECTED,
        Kind::OnFork => "reacquire or error",
    }
}

/// A whole number in canonical decimal: `+3`, ` 3` and `03` are refused rather than guessed at.
fn number<T: std::str::FromStr>(name: &str, text: &str, expected: &str) -> Result<T, HostError> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && !(text.len() > 1 && text.starts_with('0'));
    if !canonical {
        return Err(ConfigError::new(name, text, expected).into());
    }
    Ok(parse_number(name, text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_sets_its_field_and_empty_restores_the_default() {
        let mut s = Settings::new();
        for (k, v) in [
            ("store", "memory:"),
            ("namespace", "orders"),
            ("layout", "seconds"),
            ("ttl", "5s"),
            ("tolerance", "200ms"),
            ("bits", "4"),
            ("owner_key", "me"),
            ("preferred_slot", "3"),
            ("acquire_timeout", "1s"),
            ("max_wait", "100ms"),
            ("backwards_wait", "10ms"),
            ("on_fork", "error"),
        ] {
            s.set(k, v).unwrap();
        }
        let c = s.config();
        assert_eq!(c.store.as_deref(), Some("memory:"));
        assert_eq!(c.namespace, "orders");
        assert_eq!(c.layout, Layout::seconds());
        assert_eq!(c.ttl, Duration::from_secs(5));
        assert_eq!(c.tolerance, Duration::from_millis(200));
        assert_eq!(c.bits, 4);
        assert_eq!(c.owner_key.as_deref(), Some("me"));
        assert_eq!(c.preferred_slot, Some(3));
        assert_eq!(c.acquire_timeout, Some(Duration::from_secs(1)));
        assert_eq!(c.waits.window, Duration::from_millis(100));
        assert_eq!(c.waits.backwards, Duration::from_millis(10));
        assert_eq!(s.on_fork(), OnFork::Error);
        for setting in SETTINGS {
            s.set(setting.key, "").unwrap();
        }
        let (c, d) = (s.config(), Config::default());
        assert_eq!(
            (c.store, c.namespace, c.layout, c.ttl, c.bits, c.owner_key),
            (d.store, d.namespace, d.layout, d.ttl, d.bits, d.owner_key)
        );
        assert_eq!(s.on_fork(), OnFork::Reacquire);
    }

    #[test]
    fn bits_follow_the_layout_unless_set() {
        let mut s = Settings::new();
        s.set("layout", "js-safe").unwrap();
        assert_eq!(s.config().bits, 5);
        s.set("bits", "3").unwrap();
        assert_eq!(s.config().bits, 3);
        s.set("bits", "").unwrap();
        assert_eq!(s.config().bits, 5);
        let env =
            Settings::with_vars(|v| (v == "COSID_LAYOUT").then(|| "js-safe".to_owned())).unwrap();
        assert_eq!(env.config().bits, 5);
        env.validate().unwrap();
        let explicit = Settings::with_vars(|v| match v {
            "COSID_LAYOUT" => Some("js-safe".to_owned()),
            "COSID_BITS" => Some("10".to_owned()),
            _ => None,
        })
        .unwrap();
        assert_eq!(explicit.validate().unwrap_err().code, ErrorCode::Config);
    }

    #[test]
    fn static_manual_and_ordinal_are_store_values() {
        let mut s = Settings::new();
        for v in [
            "static:3?state_file=/tmp/cosid-x&ahead=2s",
            "manual:5",
            "static:4",
        ] {
            s.set("store", v).unwrap();
            assert_eq!(s.config().store.as_deref(), Some(v));
        }
        let env = Settings::with_vars(|v| match v {
            "COSID_STORE" => Some("static:ordinal".to_owned()),
            "HOSTNAME" => Some("orders-2".to_owned()),
            _ => None,
        });
        env.unwrap();
    }

    #[test]
    fn bad_values_name_the_key_and_leave_the_settings_unchanged() {
        let mut s = Settings::new();
        for (k, v, code) in [
            ("ttl", "soon", ErrorCode::Config),
            ("bits", "+3", ErrorCode::Config),
            ("bits", "03", ErrorCode::Config),
            ("bits", "300", ErrorCode::Config),
            ("preferred_slot", "-1", ErrorCode::Config),
            ("store", "ftp://x", ErrorCode::Config),
            ("store", "static:x", ErrorCode::Config),
            ("namespace", "tab\there", ErrorCode::Config),
            ("layout", "nanos", ErrorCode::Layout),
            ("on_fork", "ignore", ErrorCode::Config),
            ("colour", "blue", ErrorCode::UnknownKey),
        ] {
            let e = s.set(k, v).unwrap_err();
            assert_eq!(e.code, code, "{k}={v}: {}", e.message);
            assert!(
                e.message.contains(k) || e.message.contains(v),
                "{k}={v}: {}",
                e.message
            );
        }
        let (c, d) = (s.config(), Config::default());
        assert_eq!((c.ttl, c.bits, c.store), (d.ttl, d.bits, d.store));
    }

    #[test]
    fn env_errors_name_the_variable_and_typed_values_work() {
        let e = Settings::with_vars(|v| (v == "COSID_TTL").then(|| "soon".to_owned())).unwrap_err();
        assert!(e.message.contains("COSID_TTL"), "{}", e.message);
        let mut s = Settings::new();
        s.set_value("ttl", Value::Duration(Duration::from_secs(3)))
            .unwrap();
        s.set_value("preferredSlot", Value::Number(2)).unwrap();
        s.set_value("layout", Value::Layout(Layout::js_safe()))
            .unwrap();
        let c = s.config();
        assert_eq!(
            (c.ttl, c.preferred_slot, c.bits),
            (Duration::from_secs(3), Some(2), 5)
        );
        assert_eq!(
            s.set_value("ttl", Value::Number(3)).unwrap_err().code,
            ErrorCode::Config
        );
    }
}
