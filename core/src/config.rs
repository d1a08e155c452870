//! Runtime settings: defaults, a builder, and the `COSID_*` environment variables.

use crate::clock::{Clock, SystemClock};
use crate::error::ConfigError;
use crate::generator::Waits;
use crate::id::Layout;
use std::sync::Arc;
use std::time::Duration;

/// Every setting of a [`Runtime`](crate::Runtime). Start from [`Config::default`] or [`Config::from_env`].
#[derive(Debug, Clone)]
pub struct Config {
    /// Store URL; `None` is the embedded SQLite file in the user's state directory.
    pub store: Option<String>,
    /// Namespace name.
    pub namespace: String,
    /// Id layout.
    pub layout: Layout,
    /// Lease length.
    pub ttl: Duration,
    /// How far past expiry a holder may issue; recorded per namespace.
    pub tolerance: Duration,
    /// Slot bits of the namespace; at most the layout's slot bits.
    pub bits: u8,
    /// Owner key; `None` is `host:pid`.
    pub owner_key: Option<String>,
    /// A slot to take if free.
    pub preferred_slot: Option<u32>,
    /// How long start-up retries an exhausted or unreachable store; `None` is the ttl.
    pub acquire_timeout: Option<Duration>,
    /// How long an id call waits before it errors.
    pub waits: Waits,
    /// The clock (the system clock unless a test injects one).
    pub clock: Arc<dyn Clock>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            store: None,
            namespace: "default".into(),
            layout: Layout::millis(),
            ttl: Duration::from_secs(30),
            tolerance: Duration::from_secs(1),
            bits: DEFAULT_BITS,
            owner_key: None,
            preferred_slot: None,
            acquire_timeout: None,
            waits: Waits::default(),
            clock: Arc::new(SystemClock),
        }
    }
}

/// Slot bits of a namespace unless configured (fewer when the layout has fewer slot bits).
pub const DEFAULT_BITS: u8 = 10;

/// The environment variables [`Config::from_env`] reads, with what each sets.
pub const ENV_VARS: &[(&str, &str)] = &[
    (
        "COSID_STORE",
        "store URL (sqlite:///path, memory:, redis://, postgres://, mysql://, etcd://)",
    ),
    ("COSID_NAMESPACE", "namespace name (default `default`)"),
    ("COSID_LAYOUT", "millis (default), seconds or js-safe"),
    ("COSID_TTL", "lease length, e.g. 30s (default)"),
    (
        "COSID_TOLERANCE",
        "how far past expiry a holder may issue, e.g. 1s (default)",
    ),
    ("COSID_BITS", "slot bits of the namespace (default 10)"),
    ("COSID_OWNER_KEY", "owner key (default host:pid)"),
    (
        "COSID_PREFERRED_SLOT",
        "slot to take if free, or `ordinal` for the StatefulSet ordinal in HOSTNAME",
    ),
    (
        "COSID_ACQUIRE_TIMEOUT",
        "how long start-up retries (default: the ttl)",
    ),
    (
        "COSID_MAX_WAIT",
        "how long an id call waits for a renewal or the floor (default 2s)",
    ),
    (
        "COSID_BACKWARDS_WAIT",
        "how far back a stepped clock is waited out (default 500ms)",
    ),
];

impl Config {
    /// Defaults overridden by the `COSID_*` variables of this process's environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::default().with_vars(|name| std::env::var(name).ok())
    }

    /// Defaults overridden by variables looked up with `var` (the environment, or a test's map).
    pub fn with_vars(mut self, var: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| var(name).filter(|v| !v.is_empty());
        if let Some(v) = get("COSID_STORE") {
            self.store = Some(v);
        }
        if let Some(v) = get("COSID_NAMESPACE") {
            self.namespace = v;
        }
        if let Some(v) = get("COSID_LAYOUT") {
            self.layout = parse_layout("COSID_LAYOUT", &v)?;
        }
        if let Some(v) = get("COSID_TTL") {
            self.ttl = parse_duration("COSID_TTL", &v)?;
        }
        if let Some(v) = get("COSID_TOLERANCE") {
            self.tolerance = parse_duration("COSID_TOLERANCE", &v)?;
        }
        match get("COSID_BITS") {
            Some(v) => self.bits = parse_number("COSID_BITS", &v)?,
            // The default 10 bits, or the layout's slot bits if it has fewer (the JavaScript-safe layout has 5).
            None => self.bits = self.bits.min(self.layout.slot_bits()),
        }
        if let Some(v) = get("COSID_OWNER_KEY") {
            self.owner_key = Some(v);
        }
        if let Some(v) = get("COSID_PREFERRED_SLOT") {
            self.preferred_slot = Some(if v == "ordinal" {
                // A StatefulSet pod's ordinal, from the end of its host name.
                let host = var("HOSTNAME")
                    .filter(|h| !h.is_empty())
                    .unwrap_or_else(crate::static_slot::hostname);
                crate::static_slot::ordinal_of(&host)?
            } else {
                parse_number("COSID_PREFERRED_SLOT", &v)?
            });
        }
        if let Some(v) = get("COSID_ACQUIRE_TIMEOUT") {
            self.acquire_timeout = Some(parse_duration("COSID_ACQUIRE_TIMEOUT", &v)?);
        }
        if let Some(v) = get("COSID_MAX_WAIT") {
            self.waits.window = parse_duration("COSID_MAX_WAIT", &v)?;
        }
        if let Some(v) = get("COSID_BACKWARDS_WAIT") {
            self.waits.backwards = parse_duration("COSID_BACKWARDS_WAIT", &v)?;
        }
        Ok(self)
    }

    /// Checks the settings against each other.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let ms = |d: Duration| d.as_millis().to_string();
        if self.ttl < Duration::from_millis(30) || self.ttl > Duration::from_secs(24 * 3600) {
            return Err(ConfigError::new(
                "ttl",
                ms(self.ttl) + "ms",
                "between 30ms and 24h",
            ));
        }
        if self.tolerance > self.ttl * 10 {
            return Err(ConfigError::new(
                "tolerance",
                ms(self.tolerance) + "ms",
                format!("at most 10 times the ttl ({}ms)", ms(self.ttl)),
            ));
        }
        if self.bits == 0 || self.bits > self.layout.slot_bits() {
            return Err(ConfigError::new(
                "bits",
                self.bits.to_string(),
                format!("1 to the layout's slot bits ({})", self.layout.slot_bits()),
            ));
        }
        if let Some(slot) = self.preferred_slot {
            if u64::from(slot) >= 1u64 << self.bits {
                return Err(ConfigError::new(
                    "preferred_slot",
                    slot.to_string(),
                    format!("a slot below 2^bits = {}", 1u64 << self.bits),
                ));
            }
        }
        if let Some(key) = &self.owner_key {
            if key.is_empty() || key.len() > 256 || key.chars().any(char::is_control) {
                return Err(ConfigError::new(
                    "owner_key",
                    key.clone(),
                    "1 to 256 bytes of printable text",
                ));
            }
        }
        Ok(())
    }

    /// The owner key: the configured one, or `host:pid`.
    pub fn owner_key(&self) -> String {
        self.owner_key.clone().unwrap_or_else(|| {
            format!(
                "{}:{}",
                gethostname::gethostname().to_string_lossy(),
                std::process::id()
            )
        })
    }

    /// How long start-up retries.
    pub fn acquire_timeout(&self) -> Duration {
        self.acquire_timeout.unwrap_or(self.ttl)
    }
}

/// Parses a named layout.
pub fn parse_layout(setting: &str, v: &str) -> Result<Layout, ConfigError> {
    match v {
        "millis" | "ms" | "millisecond" => Ok(Layout::millis()),
        "seconds" | "s" | "second" => Ok(Layout::seconds()),
        "js-safe" | "js_safe" | "javascript" => Ok(Layout::js_safe()),
        _ => Err(ConfigError::new(setting, v, "millis, seconds or js-safe")),
    }
}

/// Parses a duration with a unit (`30s`, `500ms`, `2m`).
pub fn parse_duration(setting: &str, v: &str) -> Result<Duration, ConfigError> {
    humantime::parse_duration(v).map_err(|e| {
        ConfigError::new(
            setting,
            v,
            format!("a duration with a unit, like 30s or 500ms ({e})"),
        )
    })
}

pub(crate) fn parse_number<T: std::str::FromStr>(setting: &str, v: &str) -> Result<T, ConfigError> {
    v.parse()
        .map_err(|_| ConfigError::new(setting, v, "a non-negative whole number in range"))
}
