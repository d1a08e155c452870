//! Events to C callbacks: `cosid_event`, its kind, and the callback type.

use cosid_core::Event;
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
    /// The store's record of a slot went backwards (the store lost writes); the slot is refused. `slot`,
    /// `detail`.
    StoreRegression = 8,
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
}

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
        let (c_event, _detail) = to_c(event);
        // SAFETY: the subscriber promised that `callback` may be called with its `userdata` from this thread, and
        // the event (with its `detail` string) outlives the call.
        unsafe { callback(ud.0, &c_event) };
    })
}

/// The C form of an event, and the string its `detail` points into (keep it alive while the event is used).
fn to_c(event: &Event) -> (cosid_event, CString) {
    let mut e = cosid_event {
        kind: cosid_event_kind::Unknown,
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
    };
    let mut detail = String::new();
    match event {
        Event::Acquired {
            slot,
            fence,
            floor_ms,
            ceiling_ms,
            expires_at_ms,
        } => {
            e.kind = cosid_event_kind::Acquired;
            e.name = c"ACQUIRED".as_ptr();
            (e.slot, e.fence, e.floor_ms, e.ceiling_ms, e.expires_at_ms) =
                (*slot, *fence, *floor_ms, *ceiling_ms, *expires_at_ms);
        }
        Event::Renewed {
            slot,
            ceiling_ms,
            expires_at_ms,
        } => {
            e.kind = cosid_event_kind::Renewed;
            e.name = c"RENEWED".as_ptr();
            (e.slot, e.ceiling_ms, e.expires_at_ms) = (*slot, *ceiling_ms, *expires_at_ms);
        }
        Event::RenewFailed {
            slot,
            error,
            retry_in_ms,
        } => {
            e.kind = cosid_event_kind::RenewFailed;
            e.name = c"RENEW_FAILED".as_ptr();
            (e.slot, e.retry_in_ms) = (*slot, *retry_in_ms);
            detail.clone_from(error);
        }
        Event::SlotLost { slot, reason } => {
            e.kind = cosid_event_kind::SlotLost;
            e.name = c"SLOT_LOST".as_ptr();
            e.slot = *slot;
            detail.clone_from(reason);
        }
        Event::Released {
            slot,
            last_issued_ms,
        } => {
            e.kind = cosid_event_kind::Released;
            e.name = c"RELEASED".as_ptr();
            e.slot = *slot;
            e.has_last_issued = last_issued_ms.is_some();
            e.last_issued_ms = last_issued_ms.unwrap_or(0);
        }
        Event::DuplicateOwnerKey { key, other_slot } => {
            e.kind = cosid_event_kind::DuplicateOwnerKey;
            e.name = c"DUPLICATE_OWNER_KEY".as_ptr();
            e.other_slot = *other_slot;
            detail.clone_from(key);
        }
        Event::ClockSkew { local_ms, store_ms } => {
            e.kind = cosid_event_kind::ClockSkew;
            e.name = c"CLOCK_SKEW".as_ptr();
            (e.local_ms, e.store_ms) = (*local_ms, *store_ms);
        }
        Event::StoreRegression { slot, detail: d } => {
            e.kind = cosid_event_kind::StoreRegression;
            e.name = c"STORE_REGRESSION".as_ptr();
            e.slot = *slot;
            detail.clone_from(d);
        }
        other => detail = other.to_string(),
    }
    let detail = CString::new(detail.replace('\0', "\u{FFFD}")).unwrap_or_default();
    e.detail = detail.as_ptr();
    (e, detail)
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
        let (e, d) = to_c(&Event::SlotLost {
            slot: 2,
            reason: "fence moved\0on".into(),
        });
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
    }
}
