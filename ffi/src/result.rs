//! `cosid_result`: what every export returns. Codes are grouped in ranges by who has to act, and never renumbered:
//! a code, once released, keeps its number and meaning; new codes take new numbers in their range.

use cosid_core::host::ErrorCode;
use std::ffi::{c_char, CStr, CString};
use std::sync::OnceLock;

/// The outcome of a call: `COSID_RESULT_OK` (0) or the reason it failed. `cosid_result_message` turns a code into
/// a sentence, `cosid_result_name` into the stable upper-case name that the Rust, Python and Node bindings use too,
/// and `cosid_last_error` gives the detail of the last failure on this thread.
///
/// Ranges: 1xxx the caller passed something unusable; 2xxx a setting, layout or id is invalid; 3xxx the lease or
/// the runtime cannot issue now; 4xxx the store failed; 9xxx a bug in cosid. Numbers are never reused or changed.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum cosid_result {
    /// Success.
    Ok = 0,

    /// A required pointer argument was NULL.
    NullPointer = 1000,
    /// A string argument is not valid UTF-8.
    InvalidUtf8 = 1001,
    /// An argument is out of its documented range.
    InvalidArgument = 1002,
    /// The caller's buffer is too small; the needed length was written to the length out-parameter.
    BufferTooSmall = 1003,
    /// `cosid_config_set` was given a key it does not know.
    UnknownKey = 1004,
    /// A string argument is longer than `COSID_MAX_STRING_LEN` bytes.
    StringTooLong = 1005,
    /// `cosid_init` was called while the process-wide runtime is running.
    AlreadyInitialized = 1006,
    /// A call from inside an event callback into the runtime that runs the callback (an id call, a shutdown, ...),
    /// which would have to wait for the callback's own thread.
    Reentrant = 1007,

    /// A setting is invalid, or the settings contradict each other (a store URL that does not parse, a bad
    /// namespace name, a ttl out of range, more slot bits than the layout has, ...).
    Config = 2000,
    /// A layout is invalid (a zero width, more than 63 bits, an epoch not on a tick, ...).
    Layout = 2001,
    /// An id does not fit the layout, or text is not the canonical form of an id.
    InvalidId = 2002,

    /// The lease was lost; ids fail until the runtime has acquired a new slot in the background.
    SlotLost = 3000,
    /// The clock is past the lease window's ceiling and no renewal came in time.
    WindowClosed = 3001,
    /// The host clock is still behind the lease window's floor after waiting.
    BeforeWindow = 3002,
    /// The wall clock stepped back further than the generator waits for.
    ClockMovedBackwards = 3003,
    /// Every slot of the namespace is held, and none freed within the acquire timeout.
    Exhausted = 3004,
    /// The namespace is recorded in the store with other settings (bits or tolerance) than this configuration's.
    NamespaceMismatch = 3005,
    /// The runtime was shut down.
    Closed = 3006,
    /// This process was forked from the runtime's owner and cannot take a slot of its own: the fork policy is
    /// `error`, or the store is `memory:` (which lives in the parent only), `manual:`, or `static:` without a state
    /// file (a fixed slot the parent holds). Re-initialize (`cosid_init`, or a new `cosid_runtime`).
    Forked = 3007,

    /// The store could not be reached, or did not answer in time.
    StoreUnavailable = 4000,
    /// A record in the store breaks the protocol's invariants; it is refused, never treated as absent.
    CorruptRecord = 4001,
    /// The store reported another error.
    Store = 4002,
    /// A static slot's state file is locked by another process (a forked child finds its parent's lock), corrupt,
    /// or cannot be written.
    StateFile = 4003,
    /// The store lost or rolled back writes (a record missing while held, a fence or ceiling gone backwards).
    StoreRegression = 4004,

    /// A bug in cosid: a panic was caught at the C boundary. The detail is in `cosid_last_error`.
    Panic = 9000,
    /// A bug in cosid: an internal invariant failed.
    Internal = 9001,
}

impl cosid_result {
    /// Every code, for lookups by number.
    pub(crate) const ALL: [cosid_result; 27] = [
        cosid_result::Ok,
        cosid_result::NullPointer,
        cosid_result::InvalidUtf8,
        cosid_result::InvalidArgument,
        cosid_result::BufferTooSmall,
        cosid_result::UnknownKey,
        cosid_result::StringTooLong,
        cosid_result::AlreadyInitialized,
        cosid_result::Reentrant,
        cosid_result::Config,
        cosid_result::Layout,
        cosid_result::InvalidId,
        cosid_result::SlotLost,
        cosid_result::WindowClosed,
        cosid_result::BeforeWindow,
        cosid_result::ClockMovedBackwards,
        cosid_result::Exhausted,
        cosid_result::NamespaceMismatch,
        cosid_result::Closed,
        cosid_result::Forked,
        cosid_result::StoreUnavailable,
        cosid_result::CorruptRecord,
        cosid_result::Store,
        cosid_result::StateFile,
        cosid_result::StoreRegression,
        cosid_result::Panic,
        cosid_result::Internal,
    ];

    /// The code with number `n`, if there is one.
    pub(crate) fn from_u32(n: u32) -> Option<cosid_result> {
        Self::ALL.iter().copied().find(|c| *c as u32 == n)
    }

    /// The host layer's code for this result; `None` for `Ok`.
    pub(crate) fn code(self) -> Option<ErrorCode> {
        ErrorCode::from_number(self as u32)
    }

    /// The stable upper-case name, the same in every binding (the host layer's).
    pub(crate) fn name(self) -> &'static CStr {
        match self.code() {
            None => c"OK",
            Some(code) => &texts()[code_index(code)].0,
        }
    }

    /// One sentence on what the code means (the host layer's).
    pub(crate) fn message(self) -> &'static CStr {
        match self.code() {
            None => c"success",
            Some(code) => &texts()[code_index(code)].1,
        }
    }
}

impl From<ErrorCode> for cosid_result {
    /// Exhaustive: a new host code does not compile until the C ABI has a result for it.
    fn from(code: ErrorCode) -> Self {
        match code {
            ErrorCode::NullPointer => cosid_result::NullPointer,
            ErrorCode::InvalidUtf8 => cosid_result::InvalidUtf8,
            ErrorCode::InvalidArgument => cosid_result::InvalidArgument,
            ErrorCode::BufferTooSmall => cosid_result::BufferTooSmall,
            ErrorCode::UnknownKey => cosid_result::UnknownKey,
            ErrorCode::StringTooLong => cosid_result::StringTooLong,
            ErrorCode::AlreadyInitialized => cosid_result::AlreadyInitialized,
            ErrorCode::Reentrant => cosid_result::Reentrant,
            ErrorCode::Config => cosid_result::Config,
            ErrorCode::Layout => cosid_result::Layout,
            ErrorCode::InvalidId => cosid_result::InvalidId,
            ErrorCode::SlotLost => cosid_result::SlotLost,
            ErrorCode::WindowClosed => cosid_result::WindowClosed,
            ErrorCode::BeforeWindow => cosid_result::BeforeWindow,
            ErrorCode::ClockMovedBackwards => cosid_result::ClockMovedBackwards,
            ErrorCode::Exhausted => cosid_result::Exhausted,
            ErrorCode::NamespaceMismatch => cosid_result::NamespaceMismatch,
            ErrorCode::Closed => cosid_result::Closed,
            ErrorCode::Forked => cosid_result::Forked,
            ErrorCode::StoreUnavailable => cosid_result::StoreUnavailable,
            ErrorCode::CorruptRecord => cosid_result::CorruptRecord,
            ErrorCode::Store => cosid_result::Store,
            ErrorCode::StateFile => cosid_result::StateFile,
            ErrorCode::StoreRegression => cosid_result::StoreRegression,
            ErrorCode::Panic => cosid_result::Panic,
            ErrorCode::Internal => cosid_result::Internal,
        }
    }
}

fn code_index(code: ErrorCode) -> usize {
    ErrorCode::ALL.iter().position(|c| *c == code).unwrap_or(0)
}

/// The host layer's names and summaries as NUL-terminated strings, made once, in the order of `ErrorCode::ALL`.
fn texts() -> &'static [(CString, CString)] {
    static TEXTS: OnceLock<Vec<(CString, CString)>> = OnceLock::new();
    TEXTS.get_or_init(|| {
        ErrorCode::ALL
            .iter()
            .map(|c| {
                let text = |s: &str| CString::new(s).unwrap_or_default();
                (text(c.name()), text(c.summary()))
            })
            .collect()
    })
}

/// A static, NUL-terminated sentence describing `result` (a `cosid_result` value; any other number gives
/// `"unknown cosid_result code"`). The string lives as long as the library; do not free it.
///
/// Thread safety: may be called from any thread. Never fails; never returns NULL.
#[no_mangle]
pub extern "C" fn cosid_result_message(result: u32) -> *const c_char {
    match cosid_result::from_u32(result) {
        Some(r) => r.message().as_ptr(),
        None => c"unknown cosid_result code".as_ptr(),
    }
}

/// The stable upper-case name of `result` without the `COSID_RESULT_` prefix (`"SLOT_LOST"`), the same name the
/// Rust, Python and Node bindings use; `"UNKNOWN"` for a number that is not a code. A static NUL-terminated
/// string; do not free it.
///
/// Thread safety: may be called from any thread. Never fails; never returns NULL.
#[no_mangle]
pub extern "C" fn cosid_result_name(result: u32) -> *const c_char {
    match cosid_result::from_u32(result) {
        Some(r) => r.name().as_ptr(),
        None => c"UNKNOWN".as_ptr(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_a_distinct_number_name_and_message() {
        let mut seen = std::collections::HashSet::new();
        for c in cosid_result::ALL.iter() {
            assert!(seen.insert(*c as u32), "{c:?} repeats a number");
            assert_eq!(cosid_result::from_u32(*c as u32), Some(*c));
            assert!(!c.message().to_bytes().is_empty());
        }
        assert_eq!(seen.len(), cosid_result::ALL.len());
    }

    #[test]
    fn every_host_code_is_a_result_with_its_number_and_name() {
        for code in ErrorCode::ALL {
            let r = cosid_result::from(*code);
            assert_eq!(r as u32, code.number(), "{code:?}");
            assert_eq!(r.name().to_str().unwrap(), code.name());
            assert_eq!(r.code(), Some(*code));
        }
        assert_eq!(cosid_result::ALL.len(), ErrorCode::ALL.len() + 1);
        assert_eq!(cosid_result::Ok.name(), c"OK");
    }

    /// The numbers are part of the ABI: this list changes only by appending.
    #[test]
    fn numbers_are_stable() {
        let fixed = [
            (cosid_result::Ok, 0),
            (cosid_result::NullPointer, 1000),
            (cosid_result::InvalidUtf8, 1001),
            (cosid_result::InvalidArgument, 1002),
            (cosid_result::BufferTooSmall, 1003),
            (cosid_result::UnknownKey, 1004),
            (cosid_result::StringTooLong, 1005),
            (cosid_result::AlreadyInitialized, 1006),
            (cosid_result::Reentrant, 1007),
            (cosid_result::Config, 2000),
            (cosid_result::Layout, 2001),
            (cosid_result::InvalidId, 2002),
            (cosid_result::SlotLost, 3000),
            (cosid_result::WindowClosed, 3001),
            (cosid_result::BeforeWindow, 3002),
            (cosid_result::ClockMovedBackwards, 3003),
            (cosid_result::Exhausted, 3004),
            (cosid_result::NamespaceMismatch, 3005),
            (cosid_result::Closed, 3006),
            (cosid_result::Forked, 3007),
            (cosid_result::StoreUnavailable, 4000),
            (cosid_result::CorruptRecord, 4001),
            (cosid_result::Store, 4002),
            (cosid_result::StateFile, 4003),
            (cosid_result::StoreRegression, 4004),
            (cosid_result::Panic, 9000),
            (cosid_result::Internal, 9001),
        ];
        for (c, n) in fixed {
            assert_eq!(c as u32, n, "{c:?}");
        }
    }
}
