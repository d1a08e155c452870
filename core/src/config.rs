//! Runtime settings: defaults, a builder, and the `COSID_*` environment variables.

use crate::clock::{Clock, SystemClock};
use crate::error::ConfigError;
use crate::generator::Waits;
use crate::id::Layout;
use std::sync::Arc;
use std::time::Duration;

/// Every setting of a [`Runtime`](crate::Runtime). Start from [`Config::default`] or [`Config::from_env`].
/// Its `Debug` output shows the store URL redacted.
#[derive(Clone)]
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
    /// How many slots the runtime leases (default 1). Each slot issues up to the layout's cap per second (4,096,000
    /// ids/s with the default layout); `next_id` and the batch calls move to the next slot when one's tick is
    /// spent. See [`MAX_SLOTS`].
    pub slots: u32,
    /// How long start-up retries an exhausted or unreachable store; `None` is the ttl.
    pub acquire_timeout: Option<Duration>,
    /// How long an id call waits before it errors.
    pub waits: Waits,
    /// The clock (the system clock unless a test injects one).
    pub clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("store", &self.store.as_deref().map(crate::store::redacted))
            .field("namespace", &self.namespace)
            .field("layout", &self.layout)
            .field("ttl", &self.ttl)
            .field("tolerance", &self.tolerance)
            .field("bits", &self.bits)
            .field("owner_key", &self.owner_key)
            .field("preferred_slot", &self.preferred_slot)
            .field("slots", &self.slots)
            .field("acquire_timeout", &self.acquire_timeout)
            .field("waits", &self.waits)
            .field("clock", &self.clock)
            .finish()
    }
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
            slots: 1,
            acquire_timeout: None,
            waits: Waits::default(),
            clock: Arc::new(SystemClock),
        }
    }
}

/// Slot bits of a namespace unless configured (fewer when the layout has fewer slot bits).
pub const DEFAULT_BITS: u8 = 10;

/// The most slots one runtime may lease (`slots`): 64 slots of the default layout issue 262 million ids/s, far
/// past what one process can use, and each slot is one more lease for the store to renew.
pub const MAX_SLOTS: u32 = 64;

/// The environment variables [`Config::from_env`] reads, with what each sets.
pub const ENV_VARS: &[(&str, &str)] = &[
    (
        "COSID_STORE",
        "store URL (sqlite:///path, memory:, redis://, postgres://, mysql://, etcd://, zookeeper://, mongodb://, http://)",
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
        "COSID_SLOTS",
        "how many slots this process leases, 1 (default) to 64: throughput past one slot's cap",
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
            self.ttl = parse_duration_in("COSID_TTL", &v, TTL_RANGE)?;
        }
        if let Some(v) = get("COSID_TOLERANCE") {
            self.tolerance = parse_duration_in("COSID_TOLERANCE", &v, TOLERANCE_RANGE)?;
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
        if let Some(v) = get("COSID_SLOTS") {
            self.slots = parse_number("COSID_SLOTS", &v)?;
        }
        if let Some(v) = get("COSID_ACQUIRE_TIMEOUT") {
            self.acquire_timeout = Some(parse_duration_in(
                "COSID_ACQUIRE_TIMEOUT",
                &v,
                ACQUIRE_TIMEOUT_RANGE,
            )?);
        }
        if let Some(v) = get("COSID_MAX_WAIT") {
            self.waits.window = parse_duration_in("COSID_MAX_WAIT", &v, MAX_WAIT_RANGE)?;
        }
        if let Some(v) = get("COSID_BACKWARDS_WAIT") {
            self.waits.backwards =
                parse_duration_in("COSID_BACKWARDS_WAIT", &v, BACKWARDS_WAIT_RANGE)?;
        }
        Ok(self)
    }

    /// Checks the settings against each other.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let ms = |d: Duration| d.as_millis().to_string();
        // The builder takes durations as they are: the same ranges as the parser's, so that no deadline overflows
        // and no value is truncated to whole milliseconds behind the caller's back.
        check_duration("ttl", self.ttl, TTL_RANGE)?;
        check_duration("tolerance", self.tolerance, TOLERANCE_RANGE)?;
        if let Some(t) = self.acquire_timeout {
            check_duration("acquire_timeout", t, ACQUIRE_TIMEOUT_RANGE)?;
        }
        check_duration("max_wait", self.waits.window, MAX_WAIT_RANGE)?;
        check_duration("backwards_wait", self.waits.backwards, BACKWARDS_WAIT_RANGE)?;
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
        if self.slots == 0 || self.slots > MAX_SLOTS || u64::from(self.slots) > 1u64 << self.bits {
            return Err(ConfigError::new(
                "slots",
                self.slots.to_string(),
                format!(
                    "1 to {} (at most {MAX_SLOTS}, and at most 2^bits)",
                    u64::from(MAX_SLOTS).min(1u64 << self.bits)
                ),
            ));
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

/// The range a duration setting accepts, both ends included. Every duration setting has one, so that no
/// deadline computed from it can overflow and no setting is silently truncated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationRange {
    /// The shortest value accepted.
    pub min: Duration,
    /// The longest value accepted.
    pub max: Duration,
}

impl DurationRange {
    const fn ms(min: u64, max: u64) -> Self {
        Self {
            min: Duration::from_millis(min),
            max: Duration::from_millis(max),
        }
    }
}

impl std::fmt::Display for DurationRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} to {}",
            humantime::format_duration(self.min),
            humantime::format_duration(self.max)
        )
    }
}

const SECOND: u64 = 1_000;
const HOUR: u64 = 3_600 * SECOND;
const DAY: u64 = 24 * HOUR;

/// `COSID_TTL`, `ttl`: 30ms to 1 day.
pub const TTL_RANGE: DurationRange = DurationRange::ms(30, DAY);
/// `COSID_TOLERANCE`, `tolerance`: 0 to 1 day (and at most 10 times the ttl).
pub const TOLERANCE_RANGE: DurationRange = DurationRange::ms(0, DAY);
/// `COSID_ACQUIRE_TIMEOUT`, `acquire_timeout`: 0 to 1 day.
pub const ACQUIRE_TIMEOUT_RANGE: DurationRange = DurationRange::ms(0, DAY);
/// `COSID_MAX_WAIT`, `max_wait`: 0 to 1 hour.
pub const MAX_WAIT_RANGE: DurationRange = DurationRange::ms(0, HOUR);
/// `COSID_BACKWARDS_WAIT`, `backwards_wait`: 0 to 1 hour.
pub const BACKWARDS_WAIT_RANGE: DurationRange = DurationRange::ms(0, HOUR);
/// A static slot's `ahead`: 100ms to 1 day.
pub const AHEAD_RANGE: DurationRange = DurationRange::ms(100, DAY);
/// `cosid migrate --safe-guard`: 0 to 30 days.
pub const SAFE_GUARD_RANGE: DurationRange = DurationRange::ms(0, 30 * DAY);

/// The range of the duration setting `key` (`ttl`, `tolerance`, `acquire_timeout`, `max_wait`, `backwards_wait`,
/// `ahead`, `safe_guard`); `None` for any other key.
pub fn duration_range(key: &str) -> Option<DurationRange> {
    Some(match key {
        "ttl" => TTL_RANGE,
        "tolerance" => TOLERANCE_RANGE,
        "acquire_timeout" => ACQUIRE_TIMEOUT_RANGE,
        "max_wait" => MAX_WAIT_RANGE,
        "backwards_wait" => BACKWARDS_WAIT_RANGE,
        "ahead" => AHEAD_RANGE,
        "safe_guard" => SAFE_GUARD_RANGE,
        _ => return None,
    })
}

/// The longest duration [`parse_duration`] returns; settings have tighter [`DurationRange`]s.
const LONGEST: Duration = Duration::from_millis(100 * 365 * DAY);

/// Parses a duration with a unit (`30s`, `500ms`, `2m`) of whole milliseconds, at most 100 years. Settings use
/// [`parse_duration_in`], which also checks their range.
pub fn parse_duration(setting: &str, v: &str) -> Result<Duration, ConfigError> {
    let d = parse_with_unit(setting, v)?;
    if d > LONGEST {
        return Err(ConfigError::new(
            setting,
            v,
            "a duration of at most 100 years",
        ));
    }
    whole_ms(setting, v, d)
}

/// Parses a duration (as [`parse_duration`]) and checks it is within `range`.
pub fn parse_duration_in(
    setting: &str,
    v: &str,
    range: DurationRange,
) -> Result<Duration, ConfigError> {
    let d = parse_with_unit(setting, v)?;
    if d < range.min || d > range.max {
        return Err(ConfigError::new(
            setting,
            v,
            format!("a duration from {range}"),
        ));
    }
    whole_ms(setting, v, d)
}

fn parse_with_unit(setting: &str, v: &str) -> Result<Duration, ConfigError> {
    humantime::parse_duration(v).map_err(|e| {
        ConfigError::new(
            setting,
            v,
            format!("a duration with a unit, like 30s or 500ms ({e})"),
        )
    })
}

fn whole_ms(setting: &str, v: &str, d: Duration) -> Result<Duration, ConfigError> {
    if !d.subsec_nanos().is_multiple_of(1_000_000) {
        // cosid counts whole milliseconds; 1500us would silently become 1ms.
        return Err(ConfigError::new(
            setting,
            v,
            "a whole number of milliseconds (cosid counts in ms)",
        ));
    }
    Ok(d)
}

/// Checks a duration set in code (not parsed) against `range`, and that it is whole milliseconds.
pub fn check_duration(setting: &str, d: Duration, range: DurationRange) -> Result<(), ConfigError> {
    let shown = || format!("{d:?}");
    if d < range.min || d > range.max {
        return Err(ConfigError::new(
            setting,
            shown(),
            format!("a duration from {range}"),
        ));
    }
    if !d.subsec_nanos().is_multiple_of(1_000_000) {
        return Err(ConfigError::new(
            setting,
            shown(),
            "a whole number of milliseconds (cosid counts in ms)",
        ));
    }
    Ok(())
}

pub(crate) fn parse_number<T: std::str::FromStr>(setting: &str, v: &str) -> Result<T, ConfigError> {
    v.parse()
        .map_err(|_| ConfigError::new(setting, v, "a non-negative whole number in range"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Config::default().with_vars(|k| map.get(k).cloned())
    }

    #[test]
    fn every_duration_variable_is_bounded() {
        for var in [
            "COSID_TTL",
            "COSID_TOLERANCE",
            "COSID_ACQUIRE_TIMEOUT",
            "COSID_MAX_WAIT",
            "COSID_BACKWARDS_WAIT",
        ] {
            // Past `Instant`'s range: this used to panic ("overflow when adding duration to instant").
            for huge in ["500000000000y", "200years", "2days", "1000000h"] {
                let e = with(&[(var, huge)]).unwrap_err();
                assert_eq!((e.setting.as_str(), e.value.as_str()), (var, huge));
                assert!(
                    e.expected.contains("duration") && e.expected.contains("to"),
                    "{e}"
                );
            }
            // Sub-millisecond precision used to be dropped without a word.
            let e = with(&[(var, "30500us")]).unwrap_err();
            assert!(e.expected.contains("milliseconds"), "{e}");
        }
        let e = with(&[("COSID_TTL", "10ms")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid COSID_TTL = \"10ms\": a duration from 30ms to 1day"
        );
        let e = with(&[("COSID_MAX_WAIT", "2h")]).unwrap_err();
        assert_eq!(e.expected, "a duration from 0s to 1h");
        let c = with(&[
            ("COSID_TTL", "1d"),
            ("COSID_TOLERANCE", "0s"),
            ("COSID_ACQUIRE_TIMEOUT", "24h"),
            ("COSID_MAX_WAIT", "1h"),
            ("COSID_BACKWARDS_WAIT", "1500ms"),
        ])
        .unwrap();
        assert_eq!(c.ttl, Duration::from_secs(86_400));
        assert_eq!(c.waits.backwards, Duration::from_millis(1_500));
        c.validate().unwrap();
    }

    #[test]
    fn durations_set_in_code_are_checked_too() {
        let mut c = Config {
            acquire_timeout: Some(Duration::MAX),
            ..Config::default()
        };
        assert_eq!(c.validate().unwrap_err().setting, "acquire_timeout");
        c.acquire_timeout = None;
        c.waits.window = Duration::from_secs(u64::MAX);
        assert_eq!(c.validate().unwrap_err().setting, "max_wait");
        c.waits = Waits::default();
        c.waits.backwards = Duration::from_micros(1_500);
        assert!(c.validate().unwrap_err().expected.contains("milliseconds"));
        c.waits = Waits::default();
        c.ttl = Duration::from_secs(2 * 86_400);
        assert_eq!(c.validate().unwrap_err().setting, "ttl");
        c.ttl = Duration::from_secs(30);
        c.tolerance = Duration::from_secs(2 * 86_400);
        assert_eq!(c.validate().unwrap_err().setting, "tolerance");
        c.tolerance = Duration::from_secs(1);
        c.validate().unwrap();
    }

    #[test]
    fn parse_duration_itself_is_bounded() {
        assert!(parse_duration("x", "500000000000y").is_err());
        assert!(parse_duration("x", "101years").is_err());
        assert_eq!(
            parse_duration("x", "90years").unwrap(),
            Duration::from_secs(90 * 31_557_600)
        );
    }
}
