//! Events to C callbacks: `cosid_event`, its kind, and the callback type.

use cosid_core::{Event, EventLevel};
use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

/// A Rust listener, as the core takes it.
pub(crate) type Listener = Arc<dyn Fn(&Event) + Send + Sync>;

/// What happened, in a `cosid_event`. Numbers are never reused; a newer library may add kinds, so treat an
/// unknown kind as informational.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum cosid_event_kind {
    /// An event this version of the ABI has no kind for; `detail` describes it.
    Unknown = 0,
    /// A lease was granted: `slot`, `fence`, `floor_ms`, `ceiling_ms`, `expires_at_ms`.
    Acquired = 1,
    /// The lease was renewed: `slot`, `ceiling_ms`, `expires_at_ms`.
    Renewed = 2,
    /// A renewal failed and will be retried in `retry_in_ms`; ids are still issued up to the ceiling. `slot`,
    /// `detail` (the error).
    RenewFailed = 3,
    /// The lease was found gone: id calls fail with `COSID_RESULT_SLOT_LOST` until a new slot is acquired. `slot`,
    /// `detail` (why).
    SlotLost = 4,
    /// The lease was given back at shutdown: `slot`, `last_issued_ms` if `has_last_issued`.
    Released = 5,
    /// Another live instance has the same owner key; this one took another slot. `other_slot`, `detail` (the key).
    DuplicateOwnerKey = 6,
    /// The store's clock and this host's differ by more than half the tolerance: `local_ms`, `store_ms`.
    ClockSkew = 7,
    /// The store's record of a slot went backwards (the store lost writes): id calls fail until the runtime has
    /// made the namespace safe again and acquired a new slot. `slot`, `detail`.
    StoreRegression = 8,
    /// The store's server runs with a setting that lets it lose a committed write, which the safety claim rules
    /// out (Redis `appendfsync everysec`, ...); reported once per setting at the runtime's start. `store`,
    /// `setting`, `value`, `expected`.
    StoreUnsafe = 9,
}

/// How much an event matters, in a `cosid_log_params`; the same table in every binding.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum cosid_log_level {
    /// Routine (`RENEWED`).
    Debug = 1,
    /// A step of the lease's life (`ACQUIRED`, `RELEASED`, `DUPLICATE_OWNER_KEY`).
    Info = 2,
    /// Ids still flow, but something needs a person (`RENEW_FAILED`, `CLOCK_SKEW`, `STORE_UNSAFE`).
    Warn = 3,
    /// Ids are refused until the runtime has a safe slot again (`SLOT_LOST`, `STORE_REGRESSION`).
    Error = 4,
}

/// One event of a runtime, as a callback receives it. Fields a kind does not use are 0 (and `detail` is `""`).
///
/// Thread safety: the struct and its `detail` string are valid only during the callback; copy what you keep.
#[repr(C)]
#[derive(Debug)]
pub struct cosid_event {
    /// What happened.
    pub kind: cosid_event_kind,
    /// The slot concerned.
    pub slot: u32,
    /// The lease's fence (`ACQUIRED`).
    pub fence: u64,
    /// Window floor, excluded, in store milliseconds (`ACQUIRED`).
    pub floor_ms: u64,
    /// Window ceiling, included, in store milliseconds (`ACQUIRED`, `RENEWED`).
    pub ceiling_ms: u64,
    /// Lease expiry in store milliseconds (`ACQUIRED`, `RENEWED`).
    pub expires_at_ms: u64,
    /// The last millisecond used, handed to the next holder (`RELEASED`, when `has_last_issued`).
    pub last_issued_ms: u64,
    /// Whether `last_issued_ms` is set.
    pub has_last_issued: bool,
    /// The other instance's slot (`DUPLICATE_OWNER_KEY`).
    pub other_slot: u32,
    /// This host's clock in milliseconds (`CLOCK_SKEW`).
    pub local_ms: u64,
    /// The store's clock in milliseconds (`CLOCK_SKEW`).
    pub store_ms: u64,
    /// When the next try is, in milliseconds (`RENEW_FAILED`).
    pub retry_in_ms: u64,
    /// A NUL-terminated description (the error, the reason, the key); never NULL, `""` when there is none.
    pub detail: *const c_char,
    /// The stable upper-case name of the event (`"SLOT_LOST"`), the same in every binding; never NULL.
    pub name: *const c_char,
    /// The store kind (`STORE_UNSAFE`); never NULL, `""` when unused.
    pub store: *const c_char,
    /// The server setting (`STORE_UNSAFE`); never NULL, `""` when unused.
    pub setting: *const c_char,
    /// Its value on the server (`STORE_UNSAFE`); never NULL, `""` when unused.
    pub value: *const c_char,
    /// The value the safety claim needs (`STORE_UNSAFE`); never NULL, `""` when unused.
    pub expected: *const c_char,
}

/// One log record: an event with its level and a one-line message, as the log callback receives it.
///
/// Thread safety: valid only during the callback; copy what you keep.
#[repr(C)]
#[derive(Debug)]
pub struct cosid_log_params {
    /// How much it matters.
    pub level: cosid_log_level,
    /// A NUL-terminated one-line description for a person (the same words in every binding); never NULL.
    pub message: *const c_char,
    /// The event, with its fields; never NULL.
    pub event: *const cosid_event,
}

/// A log callback: `userdata` as given to `cosid_set_log_callback`, and the record, valid only during the call.
/// The same rules as for `cosid_event_callback` apply: it runs on a runtime's background thread (the first
/// events on the thread that starts it), must return promptly, must not unwind or `longjmp` out, and a call
/// from it into the runtime that logs fails with `COSID_RESULT_REENTRANT` where an event callback's would.
pub type cosid_log_callback =
    Option<unsafe extern "C" fn(userdata: *mut c_void, params: *const cosid_log_params)>;

/// An event callback: `userdata` as given when subscribing, and the event, valid only during the call.
///
/// Rules: it is called from the runtime's background thread, one event at a time and in order; it must return
/// promptly (it holds up lease renewal) and must not unwind or `longjmp` out (no C++ exception may escape it). It
/// must not call into the runtime that calls it: id calls, `shutdown`, `init` and `subscribe` on that runtime fail
/// with `COSID_RESULT_REENTRANT` (an id call may have to wait for the callback's own thread, a shutdown would join
/// it); status and layout work. Every other function, and other runtimes, may be called. The events of a
/// runtime's start (the first `ACQUIRED`, and a `DUPLICATE_OWNER_KEY` or `CLOCK_SKEW` found while starting),
/// which only config subscriptions see, arrive on the thread that starts the runtime, before the start returns.
pub type cosid_event_callback =
    Option<unsafe extern "C" fn(userdata: *mut c_void, event: *const cosid_event)>;

/// The caller's `userdata`, carried to the runtime's thread.
#[derive(Clone, Copy)]
struct UserData(*mut c_void);

// SAFETY: cosid never dereferences the pointer; it only hands it back to the caller's callback, on another
// thread, which the caller allowed by subscribing (documented on `cosid_runtime_subscribe` and
// `cosid_config_subscribe`).
unsafe impl Send for UserData {}
// SAFETY: as above: the pointer is only copied, never used by cosid.
unsafe impl Sync for UserData {}

/// A listener that calls `callback(userdata, event)`.
///
/// # Safety
///
/// `callback` follows the rules of [`cosid_event_callback`] and `userdata` stays valid for as long as the
/// listener may be called.
pub(crate) unsafe fn listener(
    callback: unsafe extern "C" fn(*mut c_void, *const cosid_event),
    userdata: *mut c_void,
) -> Listener {
    let userdata = UserData(userdata);
    Arc::new(move |event: &Event| {
        let ud = userdata;
        let (c_event, _strings) = to_c(event);
        // SAFETY: the subscriber promised that `callback` may be called with its `userdata` from this thread, and
        // the event (with its `detail` string) outlives the call.
        unsafe { callback(ud.0, &c_event) };
    })
}

/// Sets the one process-wide log callback: from then on it receives every event of every runtime of this library
/// (the process-wide one and each `cosid_runtime`, from their start) whose level is at least `min_level` (a
/// `cosid_log_level`), with its level and a one-line message. `STORE_UNSAFE`, `RENEW_FAILED` and `CLOCK_SKEW`
/// come at `COSID_LOG_LEVEL_WARN`, `SLOT_LOST` and `STORE_REGRESSION` at `COSID_LOG_LEVEL_ERROR`. A NULL
/// `callback` removes it. Without a log callback nothing is printed: the library never writes to stdout or
/// stderr.
///
/// Thread safety: may be called from any thread at any time; takes effect at the next event. `userdata` is
/// handed back to `callback` on the runtimes' threads, and must stay valid until the callback is replaced or
/// removed and every runtime that could still log has been shut down. Fails only with `COSID_RESULT_PANIC`.
///
/// # Safety
///
/// `callback`, unless NULL, follows the rules of [`cosid_log_callback`], and `userdata` stays valid for as long
/// as said above.
#[no_mangle]
pub unsafe extern "C" fn cosid_set_log_callback(
    callback: cosid_log_callback,
    userdata: *mut c_void,
    min_level: u32,
) -> crate::cosid_result {
    crate::guard::call(|| {
        let listener: Option<Listener> = callback.map(|callback| {
            let userdata = UserData(userdata);
            Arc::new(move |event: &Event| {
                let level = level(event);
                if (level as u32) < min_level {
                    return;
                }
                let ud = userdata;
                let (c_event, _strings) = to_c(event);
                let message = c_string(event.message());
                let params = cosid_log_params {
                    level,
                    message: message.as_ptr(),
                    event: &c_event,
                };
                // SAFETY: the caller of `cosid_set_log_callback` promised that `callback` may be called with its
                // `userdata` from this thread; the record and its strings outlive the call.
                unsafe { callback(ud.0, &params) };
            }) as Listener
        });
        cosid_core::host::set_log(listener);
        Ok(())
    })
}

/// The C level of an event: the core's table, converted.
fn level(event: &Event) -> cosid_log_level {
    match event.level() {
        EventLevel::Debug => cosid_log_level::Debug,
        EventLevel::Info => cosid_log_level::Info,
        EventLevel::Warn => cosid_log_level::Warn,
        EventLevel::Error => cosid_log_level::Error,
    }
}

/// `text` as a C string, an inner NUL replaced.
fn c_string(text: String) -> CString {
    CString::new(text.replace('\0', "\u{FFFD}")).unwrap_or_default()
}

/// The C form of an event, and the strings its pointers point into (keep them alive while the event is used).
/// The kind is converted from the core's name, the fields from the core's table of fields ([`Event::fields`]).
fn to_c(event: &Event) -> (cosid_event, Vec<CString>) {
    use cosid_core::EventField::{Text, U64};
    let kind = match event.name() {
        "ACQUIRED" => cosid_event_kind::Acquired,
        "RENEWED" => cosid_event_kind::Renewed,
        "RENEW_FAILED" => cosid_event_kind::RenewFailed,
        "SLOT_LOST" => cosid_event_kind::SlotLost,
        "RELEASED" => cosid_event_kind::Released,
        "DUPLICATE_OWNER_KEY" => cosid_event_kind::DuplicateOwnerKey,
        "CLOCK_SKEW" => cosid_event_kind::ClockSkew,
        "STORE_REGRESSION" => cosid_event_kind::StoreRegression,
        "STORE_UNSAFE" => cosid_event_kind::StoreUnsafe,
        _ => cosid_event_kind::Unknown,
    };
    let mut e = cosid_event {
        kind,
        slot: 0,
        fence: 0,
        floor_ms: 0,
        ceiling_ms: 0,
        expires_at_ms: 0,
        last_issued_ms: 0,
        has_last_issued: false,
        other_slot: 0,
        local_ms: 0,
        store_ms: 0,
        retry_in_ms: 0,
        detail: std::ptr::null(),
        name: c"UNKNOWN".as_ptr(),
        store: c"".as_ptr(),
        setting: c"".as_ptr(),
        value: c"".as_ptr(),
        expected: c"".as_ptr(),
    };
    // An event without a text field (or one newer than this ABI) is described by its message.
    let mut detail = match kind {
        cosid_event_kind::StoreUnsafe | cosid_event_kind::Unknown => event.message(),
        _ => String::new(),
    };
    let mut strings = Vec::new();
    for (name, value) in event.fields() {
        match (name, value) {
            ("slot", U64(v)) => e.slot = u32::try_from(v).unwrap_or(u32::MAX),
            ("other_slot", U64(v)) => e.other_slot = u32::try_from(v).unwrap_or(u32::MAX),
            ("last_issued_ms", U64(v)) => (e.has_last_issued, e.last_issued_ms) = (true, v),
            (_, U64(v)) => match name {
                "fence" => e.fence = v,
                "floor_ms" => e.floor_ms = v,
                "ceiling_ms" => e.ceiling_ms = v,
                "expires_at_ms" => e.expires_at_ms = v,
                "retry_in_ms" => e.retry_in_ms = v,
                "local_ms" => e.local_ms = v,
                "store_ms" => e.store_ms = v,
                _ => {}
            },
            ("error" | "reason" | "key" | "detail", Text(t)) => detail = t.to_owned(),
            (_, Text(t)) => {
                let field = match name {
                    "store" => &mut e.store,
                    "setting" => &mut e.setting,
                    "value" => &mut e.value,
                    "expected" => &mut e.expected,
                    _ => continue,
                };
                let text = c_string(t.to_owned());
                // The heap buffer does not move with the `CString`.
                *field = text.as_ptr();
                strings.push(text);
            }
        }
    }
    // The name as a C string, static for the kinds this ABI knows.
    e.name = match kind {
        cosid_event_kind::Acquired => c"ACQUIRED",
        cosid_event_kind::Renewed => c"RENEWED",
        cosid_event_kind::RenewFailed => c"RENEW_FAILED",
        cosid_event_kind::SlotLost => c"SLOT_LOST",
        cosid_event_kind::Released => c"RELEASED",
        cosid_event_kind::DuplicateOwnerKey => c"DUPLICATE_OWNER_KEY",
        cosid_event_kind::ClockSkew => c"CLOCK_SKEW",
        cosid_event_kind::StoreRegression => c"STORE_REGRESSION",
        cosid_event_kind::StoreUnsafe => c"STORE_UNSAFE",
        cosid_event_kind::Unknown => c"UNKNOWN",
    }
    .as_ptr();
    let detail = c_string(detail);
    e.detail = detail.as_ptr();
    strings.insert(0, detail);
    (e, strings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn every_event_keeps_its_fields_and_detail() {
        let (e, _d) = to_c(&Event::Acquired {
            slot: 3,
            fence: 9,
            floor_ms: 10,
            ceiling_ms: 20,
            expires_at_ms: 19,
        });
        assert_eq!(e.kind, cosid_event_kind::Acquired);
        assert_eq!(
            (e.slot, e.fence, e.floor_ms, e.ceiling_ms, e.expires_at_ms),
            (3, 9, 10, 20, 19)
        );
        let (e, strings) = to_c(&Event::SlotLost {
            slot: 2,
            reason: "fence moved\0on".into(),
        });
        let d = &strings[0];
        assert_eq!(e.kind, cosid_event_kind::SlotLost);
        assert_eq!(d.to_str().unwrap(), "fence moved\u{FFFD}on");
        // SAFETY: `d` is alive.
        assert_eq!(unsafe { CStr::from_ptr(e.detail) }, d.as_c_str());
        // SAFETY: a static string.
        assert_eq!(
            unsafe { CStr::from_ptr(e.name) }.to_str().unwrap(),
            "SLOT_LOST"
        );
        let (e, _d) = to_c(&Event::Released {
            slot: 1,
            last_issued_ms: None,
        });
        assert!(!e.has_last_issued);
        let (e, _strings) = to_c(&Event::StoreUnsafe {
            store: "redis".into(),
            setting: "appendfsync".into(),
            value: "everysec".into(),
            expected: "always".into(),
        });
        assert_eq!(e.kind, cosid_event_kind::StoreUnsafe);
        // SAFETY: the strings are alive.
        let text = |p| unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_owned();
        assert_eq!(
            [
                text(e.store),
                text(e.setting),
                text(e.value),
                text(e.expected)
            ],
            ["redis", "appendfsync", "everysec", "always"]
        );
        assert!(text(e.detail).contains("appendfsync = everysec"));
        assert_eq!(
            level(&Event::SlotLost {
                slot: 1,
                reason: String::new()
            }),
            cosid_log_level::Error
        );
    }
}
