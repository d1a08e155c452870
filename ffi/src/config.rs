//! `cosid_config`: settings by key and value, an adapter over the host layer's settings table (`cosid::host::Settings`).

use crate::error::FfiError;
use crate::event::{cosid_event_callback, listener};
use crate::guard::{self, check_out, read_str, try_ref};
use crate::ids::{cosid_layout, read_layout};
use crate::result::cosid_result;
use cosid_core::host::Settings;
use std::ffi::{c_char, c_void};

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
            settings: Settings::new(),
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
/// - `store`: a store URL (`sqlite:///var/lib/cosid/leases.db`, `memory:`, `redis://host:6379/0`,
///   `postgres://...`, `mysql://...`, `etcd://host:2379`, `zookeeper://host:2181`, `mongodb://host:27017/db`), or a slot without a store:
///   `static:3?state_file=/var/lib/cosid/state&ahead=10s`, `static:ordinal` (the ordinal at the end of
///   `HOSTNAME`), `manual:3`;
/// - `namespace`: the namespace name;
/// - `layout`: `millis`, `seconds` or `js-safe` (or use `cosid_config_set_layout` for a custom one);
/// - `ttl`, `tolerance`, `acquire_timeout`, `max_wait`, `backwards_wait`: a duration with a unit (`30s`,
///   `500ms`, `2m`);
/// - `bits`: slot bits of the namespace (1 up to the layout's slot bits; unset, they follow the layout: 10, or
///   the layout's slot bits if fewer);
/// - `owner_key`: the owner key (default `host:pid`);
/// - `preferred_slot`: a slot to take if it is free, or `ordinal`;
/// - `slots`: how many slots to lease, 1 (default) to 64: ids come from the next slot while one's tick is spent;
/// - `on_fork`: `reacquire` (a forked child takes a slot of its own on first use) or `error` (its calls fail
///   with `COSID_RESULT_FORKED` until it re-initializes). On `memory:`, `manual:` and `static:` without a state
///   file a child always gets `COSID_RESULT_FORKED`: it has no slot of its own to take.
///
/// The keys, variables and parsers are the host layer's table, shared with the CLI, Python and Node.
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
        Ok(unsafe { &mut *config }.settings.set(key, value)?)
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
        unsafe { &mut *config }.settings.set_layout(layout);
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
        config.settings.subscribe(listener);
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

    #[test]
    fn the_setter_is_the_host_table_and_its_codes() {
        let mut c = cosid_config {
            settings: Settings::new(),
        };
        // Through the C entry point, with C strings.
        let set = |c: &mut cosid_config, k: &std::ffi::CStr, v: &std::ffi::CStr| {
            // SAFETY: a live config and NUL-terminated strings.
            unsafe { cosid_config_set(c, k.as_ptr(), v.as_ptr()) }
        };
        assert_eq!(set(&mut c, c"store", c"manual:5"), cosid_result::Ok);
        assert_eq!(set(&mut c, c"layout", c"js-safe"), cosid_result::Ok);
        assert_eq!(c.settings.config().bits, 5);
        assert_eq!(set(&mut c, c"layout", c"nanos"), cosid_result::Layout);
        assert_eq!(set(&mut c, c"bits", c"+3"), cosid_result::Config);
        assert_eq!(set(&mut c, c"colour", c"blue"), cosid_result::UnknownKey);
        assert_eq!(set(&mut c, c"store", c"static:x"), cosid_result::Config);
    }
}
