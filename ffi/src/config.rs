//! `cosid_config`: settings by key and value, mapped onto `cosid::Config`.

use crate::error::FfiError;
use crate::event::{cosid_event_callback, listener, Listener};
use crate::guard::{self, check_out, read_str, try_ref};
use crate::ids::{cosid_layout, read_layout};
use crate::result::cosid_result;
use cosid_core::config::{parse_duration, parse_layout};
use cosid_core::Config;
use std::ffi::{c_char, c_void};
use std::time::Duration;

/// What a child of `fork()` does with a runtime its parent started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnFork {
    /// The child acquires a slot of its own, with a new incarnation, on its first call.
    Reacquire,
    /// The child's calls fail with `COSID_RESULT_FORKED` until it re-initializes.
    Error,
}

impl OnFork {
    fn parse(setting: &str, v: &str) -> Result<OnFork, FfiError> {
        match v {
            "reacquire" => Ok(OnFork::Reacquire),
            "error" => Ok(OnFork::Error),
            _ => Err(cosid_core::ConfigError::new(setting, v, "reacquire or error").into()),
        }
    }
}

/// Everything a runtime is started from; cloned into each runtime holder so that a forked child can start its
/// own with the same settings.
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) config: Config,
    pub(crate) on_fork: OnFork,
    pub(crate) listeners: Vec<Listener>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("config", &self.config)
            .field("on_fork", &self.on_fork)
            .field("listeners", &self.listeners.len())
            .finish()
    }
}

impl Settings {
    /// The `COSID_*` environment, plus `COSID_ON_FORK`.
    pub(crate) fn from_env() -> Result<Settings, FfiError> {
        let on_fork = match std::env::var("COSID_ON_FORK") {
            Ok(v) if !v.is_empty() => OnFork::parse("COSID_ON_FORK", &v)?,
            _ => OnFork::Reacquire,
        };
        Ok(Settings {
            config: Config::from_env()?,
            on_fork,
            listeners: Vec::new(),
        })
    }
}

/// Settings for a runtime, set by key and value. Create it with `cosid_config_new` (defaults) or
/// `cosid_config_from_env` (the `COSID_*` environment variables), change it with `cosid_config_set`,
/// `cosid_config_set_layout` and `cosid_config_subscribe`, use it with `cosid_runtime_new` or `cosid_init`
/// (which copy it: free it whenever you like), and release it with `cosid_config_free`.
///
/// Thread safety: not synchronized. It may move between threads, but calls on one config must not overlap when
/// any of them changes it.
#[derive(Debug)]
pub struct cosid_config {
    pub(crate) settings: Settings,
}

impl cosid_config {
    fn set(&mut self, key: &str, value: &str) -> Result<(), FfiError> {
        let c = &mut self.settings.config;
        let d = Config::default();
        let empty = value.is_empty();
        match key {
            "store" => {
                c.store = if empty {
                    None
                } else {
                    cosid_core::store::StoreUrl::parse(value).map_err(cosid_core::Error::from)?;
                    Some(value.to_owned())
                }
            }
            "namespace" => {
                let v = if empty { d.namespace } else { value.to_owned() };
                cosid_core::lease::Namespace::new(v.clone()).map_err(cosid_core::Error::from)?;
                c.namespace = v;
            }
            "layout" => {
                c.layout = if empty {
                    d.layout
                } else {
                    parse_layout(key, value)
                        .map_err(|e| FfiError::new(cosid_result::Layout, e.to_string()))?
                }
            }
            "ttl" => c.ttl = duration(key, value, d.ttl)?,
            "tolerance" => c.tolerance = duration(key, value, d.tolerance)?,
            "acquire_timeout" => {
                c.acquire_timeout = if empty {
                    None
                } else {
                    Some(parse_duration(key, value)?)
                }
            }
            "max_wait" => c.waits.window = duration(key, value, d.waits.window)?,
            "backwards_wait" => c.waits.backwards = duration(key, value, d.waits.backwards)?,
            "bits" => {
                c.bits = if empty {
                    d.bits
                } else {
                    number(key, value, "a whole number from 1 to 63")?
                }
            }
            "owner_key" => c.owner_key = (!empty).then(|| value.to_owned()),
            "preferred_slot" => {
                c.preferred_slot = if empty {
                    None
                } else {
                    Some(number(key, value, "a slot number (0 or more)")?)
                }
            }
            "on_fork" => {
                self.settings.on_fork = if empty {
                    OnFork::Reacquire
                } else {
                    OnFork::parse(key, value)?
                }
            }
            _ => {
                return Err(FfiError::new(
                    cosid_result::UnknownKey,
                    format!(
                        "unknown configuration key {key:?}: expected one of {}",
                        KEYS.join(", ")
                    ),
                ))
            }
        }
        Ok(())
    }
}

/// The keys `cosid_config_set` knows.
const KEYS: &[&str] = &[
    "store",
    "namespace",
    "layout",
    "ttl",
    "tolerance",
    "bits",
    "owner_key",
    "preferred_slot",
    "acquire_timeout",
    "max_wait",
    "backwards_wait",
    "on_fork",
];

fn duration(key: &str, value: &str, default: Duration) -> Result<Duration, FfiError> {
    if value.is_empty() {
        Ok(default)
    } else {
        Ok(parse_duration(key, value)?)
    }
}

fn number<T: std::str::FromStr>(key: &str, value: &str, expected: &str) -> Result<T, FfiError> {
    // Canonical decimal only: `+3`, ` 3` and `03` are refused rather than guessed at.
    let canonical = !value.is_empty()
        && value.bytes().all(|b| b.is_ascii_digit())
        && !(value.len() > 1 && value.starts_with('0'));
    match value.parse() {
        Ok(v) if canonical => Ok(v),
        _ => Err(cosid_core::ConfigError::new(key, value, expected).into()),
    }
}

/// Creates a config with the defaults (embedded SQLite store in the user's state directory, namespace
/// `"default"`, layout `"millis"`, ttl 30s, tolerance 1s, 10 slot bits, owner key `host:pid`, fork policy
/// `reacquire`) and writes it into `*out`. Free it with `cosid_config_free`.
///
/// Errors: `COSID_RESULT_NULL_POINTER`.
///
/// Thread safety: may be called from any thread.
///
/// # Safety
///
/// `out` points to a writable `cosid_config *`.
#[no_mangle]
pub unsafe extern "C" fn cosid_config_new(out: *mut *mut cosid_config) -> cosid_result {
    guard::call(|| {
        let out = check_out(out, "out")?;
        let cfg = Box::new(cosid_config {
            settings: Settings {
                config: Config::default(),
                on_fork: OnFork::Reacquire,
                listeners: Vec::new(),
            },
        });
        // SAFETY: `out` is not NULL and the caller passes a writable pointer-sized slot.
        unsafe { out.write(Box::into_raw(cfg)) };
        Ok(())
    })
}

/// Creates a config from the `COSID_*` environment variables (as `cosid_next_id` does on first use:
/// `COSID_STORE`, `COSID_NAMESPACE`, `COSID_LAYOUT`, `COSID_TTL`, `COSID_TOLERANCE`, `COSID_BITS`,
/// `COSID_OWNER_KEY`, `COSID_PREFERRED_SLOT`, `COSID_ACQUIRE_TIMEOUT`, `COSID_MAX_WAIT`, `COSID_BACKWARDS_WAIT`,
/// `COSID_ON_FORK`) over the defaults, and writes it into `*out`. Free it with `cosid_config_free`.
///
/// Errors: `COSID_RESULT_NULL_POINTER`; `COSID_RESULT_CONFIG` naming the variable whose value is invalid.
///
/// Thread safety: may be called from any thread (it reads the environment: do not change the environment
/// at the same time).
///
/// # Safety
///
/// `out` points to a writable `cosid_config *`.
#[no_mangle]
pub unsafe extern "C" fn cosid_config_from_env(out: *mut *mut cosid_config) -> cosid_result {
    guard::call(|| {
        let out = check_out(out, "out")?;
        let cfg = Box::new(cosid_config {
            settings: Settings::from_env()?,
        });
        // SAFETY: `out` is not NULL and the caller passes a writable pointer-sized slot.
        unsafe { out.write(Box::into_raw(cfg)) };
        Ok(())
    })
}

/// Sets one setting from text. Keys and values:
///
/// - `store`: a store URL (`sqlite:///var/lib/cosid/leases.db`, `memory:`, `redis://host:6379/0`, ...);
/// - `namespace`: the namespace name;
/// - `layout`: `millis`, `seconds` or `js-safe` (or use `cosid_config_set_layout` for a custom one);
/// - `ttl`, `tolerance`, `acquire_timeout`, `max_wait`, `backwards_wait`: a duration with a unit (`30s`,
///   `500ms`, `2m`);
/// - `bits`: slot bits of the namespace (1 up to the layout's slot bits);
/// - `owner_key`: the owner key (default `host:pid`);
/// - `preferred_slot`: a slot to take if it is free;
/// - `on_fork`: `reacquire` (a forked child takes a slot of its own on first use) or `error` (its calls fail
///   with `COSID_RESULT_FORKED` until it re-initializes). On the `memory:` store a child always gets `error`.
///
/// An empty value restores the key's default. Settings are checked against each other when a runtime starts.
/// On error the config is unchanged.
///
/// Errors: `COSID_RESULT_NULL_POINTER`, `COSID_RESULT_INVALID_UTF8`, `COSID_RESULT_STRING_TOO_LONG`,
/// `COSID_RESULT_UNKNOWN_KEY`, `COSID_RESULT_CONFIG` (the value is invalid for the key; `cosid_last_error` names
/// it and what was expected), `COSID_RESULT_LAYOUT` (an unknown layout name).
///
/// Thread safety: changes `config`: no other call may use it at the same time.
///
/// # Safety
///
/// `config` is a live config from `cosid_config_new` or `cosid_config_from_env`; `key` and `value` are
/// NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn cosid_config_set(
    config: *mut cosid_config,
    key: *const c_char,
    value: *const c_char,
) -> cosid_result {
    guard::call(|| {
        let config = check_out(config, "config")?;
        // SAFETY: the caller's contract.
        let key = unsafe { read_str(key, "key") }?;
        // SAFETY: the caller's contract.
        let value = unsafe { read_str(value, "value") }?;
        // SAFETY: `config` is not NULL and is a live config that no other call uses now (the caller's contract).
        unsafe { &mut *config }.set(key, value)
    })
}

/// Sets a custom layout (see `cosid_layout`), checked now.
///
/// Errors: `COSID_RESULT_NULL_POINTER`, `COSID_RESULT_LAYOUT`. On error the config is unchanged.
///
/// Thread safety: changes `config`: no other call may use it at the same time.
///
/// # Safety
///
/// `config` is a live config; `layout` points to a readable `cosid_layout`.
#[no_mangle]
pub unsafe extern "C" fn cosid_config_set_layout(
    config: *mut cosid_config,
    layout: *const cosid_layout,
) -> cosid_result {
    guard::call(|| {
        let config = check_out(config, "config")?;
        // SAFETY: the caller's contract.
        let layout = unsafe { read_layout(layout, "layout") }?;
        // SAFETY: `config` is not NULL and is a live config that no other call uses now (the caller's contract).
        unsafe { &mut *config }.settings.config.layout = layout;
        Ok(())
    })
}

/// Adds an event callback to the config: every runtime started from it calls `callback(userdata, event)` for
/// each of its events from the very start (so it also sees the first `COSID_EVENT_KIND_ACQUIRED`). See
/// `cosid_event_callback` for the rules the callback must follow.
///
/// Errors: `COSID_RESULT_NULL_POINTER` (`config` or `callback`; `userdata` may be NULL).
///
/// Thread safety: changes `config`: no other call may use it at the same time. The callback is called from
/// background threads.
///
/// # Safety
///
/// `config` is a live config; `callback` follows the rules of `cosid_event_callback`; `userdata` stays valid for
/// as long as any runtime started from this config lives.
#[no_mangle]
pub unsafe extern "C" fn cosid_config_subscribe(
    config: *mut cosid_config,
    callback: cosid_event_callback,
    userdata: *mut c_void,
) -> cosid_result {
    guard::call(|| {
        let config = check_out(config, "config")?;
        let callback = callback.ok_or_else(|| FfiError::null("callback"))?;
        // SAFETY: `config` is not NULL and is a live config that no other call uses now (the caller's contract).
        let config = unsafe { &mut *config };
        // SAFETY: the caller promises the callback's rules and userdata's lifetime.
        let listener = unsafe { listener(callback, userdata) };
        config.settings.listeners.push(listener);
        Ok(())
    })
}

/// Releases a config. NULL is a no-op. Runtimes started from it are not affected (they hold a copy).
///
/// Thread safety: no other call may use `config` at the same time or after.
///
/// # Safety
///
/// `config` is NULL or a live config from `cosid_config_new` or `cosid_config_from_env`, not freed before.
#[no_mangle]
pub unsafe extern "C" fn cosid_config_free(config: *mut cosid_config) {
    let _ = guard::call(|| {
        if !config.is_null() {
            // SAFETY: a live config made by `Box::into_raw` in this module, given back once (the caller's
            // contract).
            drop(unsafe { Box::from_raw(config) });
        }
        Ok(())
    });
}

/// Reads a caller's config.
///
/// # Safety
///
/// `p` is NULL or a live config that no call changes for `'a`.
pub(crate) unsafe fn read_config<'a>(
    p: *const cosid_config,
    name: &str,
) -> Result<&'a Settings, FfiError> {
    // SAFETY: the caller's contract.
    Ok(&unsafe { try_ref(p, name) }?.settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> cosid_config {
        cosid_config {
            settings: Settings {
                config: Config::default(),
                on_fork: OnFork::Reacquire,
                listeners: Vec::new(),
            },
        }
    }

    #[test]
    fn every_key_sets_its_field_and_empty_restores_the_default() {
        let mut c = cfg();
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
            c.set(k, v).unwrap();
        }
        let s = &c.settings;
        assert_eq!(s.config.store.as_deref(), Some("memory:"));
        assert_eq!(s.config.namespace, "orders");
        assert_eq!(s.config.layout, cosid_core::Layout::seconds());
        assert_eq!(s.config.ttl, Duration::from_secs(5));
        assert_eq!(s.config.tolerance, Duration::from_millis(200));
        assert_eq!(s.config.bits, 4);
        assert_eq!(s.config.owner_key.as_deref(), Some("me"));
        assert_eq!(s.config.preferred_slot, Some(3));
        assert_eq!(s.config.acquire_timeout, Some(Duration::from_secs(1)));
        assert_eq!(s.config.waits.window, Duration::from_millis(100));
        assert_eq!(s.config.waits.backwards, Duration::from_millis(10));
        assert_eq!(s.on_fork, OnFork::Error);
        for k in KEYS {
            c.set(k, "").unwrap();
        }
        let d = Config::default();
        let s = &c.settings;
        assert_eq!(
            (
                s.config.store.clone(),
                s.config.namespace.clone(),
                s.config.layout,
                s.config.ttl,
                s.config.bits
            ),
            (d.store, d.namespace, d.layout, d.ttl, d.bits)
        );
        assert_eq!(
            (s.config.owner_key.clone(), s.config.preferred_slot),
            (None, None)
        );
        assert_eq!(s.on_fork, OnFork::Reacquire);
    }

    #[test]
    fn bad_values_name_the_key_and_leave_the_config_unchanged() {
        let mut c = cfg();
        for (k, v, code) in [
            ("ttl", "soon", cosid_result::Config),
            ("bits", "+3", cosid_result::Config),
            ("bits", "03", cosid_result::Config),
            ("bits", "300", cosid_result::Config),
            ("preferred_slot", "-1", cosid_result::Config),
            ("store", "ftp://x", cosid_result::Config),
            ("namespace", "tab\there", cosid_result::Config),
            ("layout", "nanos", cosid_result::Layout),
            ("on_fork", "ignore", cosid_result::Config),
            ("colour", "blue", cosid_result::UnknownKey),
        ] {
            let e = c.set(k, v).unwrap_err();
            assert_eq!(e.code, code, "{k}={v}: {}", e.message);
            assert!(
                e.message.contains(k) || e.message.contains(v),
                "{k}={v}: {}",
                e.message
            );
        }
        let d = Config::default();
        assert_eq!(
            (c.settings.config.ttl, c.settings.config.bits),
            (d.ttl, d.bits)
        );
    }
}
