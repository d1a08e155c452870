//! `cosid_result`: what every export returns. Codes are grouped in ranges by who has to act, and never renumbered:
//! a code, once released, keeps its number and meaning; new codes take new numbers in their range.

use std::ffi::{c_char, CStr};

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
    /// This process was forked from the runtime's owner, and the runtime's fork policy is `error` or its store is
    /// `memory:` (which lives in the parent only): re-initialize (`cosid_init`, or a new `cosid_runtime`).
    Forked = 3007,

    /// The store could not be reached, or did not answer in time.
    StoreUnavailable = 4000,
    /// A record in the store breaks the protocol's invariants; it is refused, never treated as absent.
    CorruptRecord = 4001,
    /// The store reported another error.
    Store = 4002,

    /// A bug in cosid: a panic was caught at the C boundary. The detail is in `cosid_last_error`.
    Panic = 9000,
    /// A bug in cosid: an internal invariant failed.
    Internal = 9001,
}

impl cosid_result {
    /// Every code, for lookups by number.
    pub(crate) const ALL: [cosid_result; 24] = [
        cosid_result::Ok,
        cosid_result::NullPointer,
        cosid_result::InvalidUtf8,
        cosid_result::InvalidArgument,
        cosid_result::BufferTooSmall,
        cosid_result::UnknownKey,
        cosid_result::StringTooLong,
        cosid_result::AlreadyInitialized,
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
        cosid_result::Panic,
        cosid_result::Internal,
    ];

    /// The code with number `n`, if there is one.
    pub(crate) fn from_u32(n: u32) -> Option<cosid_result> {
        Self::ALL.iter().copied().find(|c| *c as u32 == n)
    }

    /// The code for one of the core's stable error names ([`cosid_core::Error::code`]).
    pub(crate) fn from_core_code(code: &str) -> cosid_result {
        match code {
            "SLOT_LOST" => cosid_result::SlotLost,
            "WINDOW_CLOSED" => cosid_result::WindowClosed,
            "BEFORE_WINDOW" => cosid_result::BeforeWindow,
            "CLOCK_MOVED_BACKWARDS" => cosid_result::ClockMovedBackwards,
            "CLOSED" => cosid_result::Closed,
            "FORKED" => cosid_result::Forked,
            "EXHAUSTED" => cosid_result::Exhausted,
            "NAMESPACE_MISMATCH" => cosid_result::NamespaceMismatch,
            "CORRUPT_RECORD" => cosid_result::CorruptRecord,
            "CONFIG" => cosid_result::Config,
            "LAYOUT" => cosid_result::Layout,
            "INVALID_ID" => cosid_result::InvalidId,
            "STORE_UNAVAILABLE" => cosid_result::StoreUnavailable,
            "STORE" => cosid_result::Store,
            // A name this version does not know yet: a newer core than the ABI. Still an error, never OK.
            _ => cosid_result::Internal,
        }
    }

    /// The stable upper-case name, the same in every binding.
    pub(crate) fn name(self) -> &'static CStr {
        match self {
            cosid_result::Ok => c"OK",
            cosid_result::NullPointer => c"NULL_POINTER",
            cosid_result::InvalidUtf8 => c"INVALID_UTF8",
            cosid_result::InvalidArgument => c"INVALID_ARGUMENT",
            cosid_result::BufferTooSmall => c"BUFFER_TOO_SMALL",
            cosid_result::UnknownKey => c"UNKNOWN_KEY",
            cosid_result::StringTooLong => c"STRING_TOO_LONG",
            cosid_result::AlreadyInitialized => c"ALREADY_INITIALIZED",
            cosid_result::Config => c"CONFIG",
            cosid_result::Layout => c"LAYOUT",
            cosid_result::InvalidId => c"INVALID_ID",
            cosid_result::SlotLost => c"SLOT_LOST",
            cosid_result::WindowClosed => c"WINDOW_CLOSED",
            cosid_result::BeforeWindow => c"BEFORE_WINDOW",
            cosid_result::ClockMovedBackwards => c"CLOCK_MOVED_BACKWARDS",
            cosid_result::Exhausted => c"EXHAUSTED",
            cosid_result::NamespaceMismatch => c"NAMESPACE_MISMATCH",
            cosid_result::Closed => c"CLOSED",
            cosid_result::Forked => c"FORKED",
            cosid_result::StoreUnavailable => c"STORE_UNAVAILABLE",
            cosid_result::CorruptRecord => c"CORRUPT_RECORD",
            cosid_result::Store => c"STORE",
            cosid_result::Panic => c"PANIC",
            cosid_result::Internal => c"INTERNAL",
        }
    }

    /// One sentence on what the code means.
    pub(crate) fn message(self) -> &'static CStr {
        match self {
            cosid_result::Ok => c"success",
            cosid_result::NullPointer => c"a required pointer argument was NULL",
            cosid_result::InvalidUtf8 => c"a string argument is not valid UTF-8",
            cosid_result::InvalidArgument => c"an argument is out of its documented range",
            cosid_result::BufferTooSmall => {
                c"the buffer is too small; the needed length was written to the length out-parameter"
            }
            cosid_result::UnknownKey => c"unknown configuration key",
            cosid_result::StringTooLong => c"a string argument is longer than COSID_MAX_STRING_LEN bytes",
            cosid_result::AlreadyInitialized => c"the process-wide runtime is already running",
            cosid_result::Config => c"invalid configuration",
            cosid_result::Layout => c"invalid id layout",
            cosid_result::InvalidId => c"invalid id, or text that is not the canonical form of an id",
            cosid_result::SlotLost => c"the lease was lost; a new slot is being acquired",
            cosid_result::WindowClosed => c"the lease window is closed: the clock passed its ceiling",
            cosid_result::BeforeWindow => c"the host clock has not reached the lease window yet",
            cosid_result::ClockMovedBackwards => c"the clock moved backwards too far",
            cosid_result::Exhausted => c"every slot of the namespace is held",
            cosid_result::NamespaceMismatch => c"the namespace is recorded with other settings",
            cosid_result::Closed => c"the runtime was shut down",
            cosid_result::Forked => c"this process was forked from the runtime's owner; re-initialize",
            cosid_result::StoreUnavailable => c"the store is unavailable",
            cosid_result::CorruptRecord => c"a store record is corrupt",
            cosid_result::Store => c"the store reported an error",
            cosid_result::Panic => c"internal error: a panic was caught (a bug in cosid)",
            cosid_result::Internal => c"internal error (a bug in cosid)",
        }
    }
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
    fn core_names_map_to_their_codes() {
        for c in cosid_result::ALL {
            let name = c.name().to_str().unwrap();
            if c != cosid_result::Ok
                && ![
                    "NULL_POINTER",
                    "INVALID_UTF8",
                    "INVALID_ARGUMENT",
                    "BUFFER_TOO_SMALL",
                    "UNKNOWN_KEY",
                    "STRING_TOO_LONG",
                    "ALREADY_INITIALIZED",
                    "PANIC",
                    "INTERNAL",
                ]
                .contains(&name)
            {
                assert_eq!(cosid_result::from_core_code(name), c, "{name}");
            }
        }
        assert_eq!(
            cosid_result::from_core_code("SOMETHING_NEW"),
            cosid_result::Internal
        );
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
            (cosid_result::Panic, 9000),
            (cosid_result::Internal, 9001),
        ];
        for (c, n) in fixed {
            assert_eq!(c as u32, n, "{c:?}");
        }
    }
}
