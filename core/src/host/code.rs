//! One list of error codes for every language: a stable upper-case name (Python's `code`, Node's `err.code`, the
//! CLI's `[CODE]`) and the number C returns (`COSID_RESULT_*`), derived from the core's errors by one `match`.
//!
//! The enum is matched exhaustively by every binding: a new code does not compile until each language maps it.

use crate::error::Error as CoreError;
use crate::store::StoreError;

/// Why a call failed, the same in every language. Numbers are grouped in ranges by who has to act and are never
/// renumbered or reused: 1xxx the caller passed something unusable; 2xxx a setting, layout or id is invalid; 3xxx
/// the lease or the runtime cannot issue now; 4xxx the store failed; 9xxx a bug in cosid.
///
/// Some codes only arise at a language boundary (`NULL_POINTER`, `INVALID_UTF8`, `BUFFER_TOO_SMALL`,
/// `STRING_TOO_LONG`, `PANIC`): they are here so that C's result enum is this enum, with nothing of its own.
///
/// Deliberately not `#[non_exhaustive]`: bindings match it exhaustively, so a new code breaks their build until
/// they map it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// A required pointer argument was NULL.
    NullPointer = 1000,
    /// A string argument is not valid UTF-8.
    InvalidUtf8 = 1001,
    /// An argument is out of its documented range.
    InvalidArgument = 1002,
    /// The caller's buffer is too small.
    BufferTooSmall = 1003,
    /// A settings key that does not exist.
    UnknownKey = 1004,
    /// A string argument is longer than the boundary accepts.
    StringTooLong = 1005,
    /// The runtime is running: settings can no longer change (shut it down first).
    AlreadyInitialized = 1006,
    /// A call made from inside one of the runtime's own event callbacks, which it would have to wait for.
    Reentrant = 1007,
    /// A setting is invalid, or the settings contradict each other.
    Config = 2000,
    /// A layout is invalid.
    Layout = 2001,
    /// An id does not fit the layout, or text is not the canonical form of an id.
    InvalidId = 2002,
    /// The lease was lost; ids fail until a new slot is acquired in the background.
    SlotLost = 3000,
    /// The clock is past the lease window's ceiling and no renewal came in time.
    WindowClosed = 3001,
    /// The host clock is still behind the lease window's floor after waiting.
    BeforeWindow = 3002,
    /// The wall clock stepped back further than the generator waits for.
    ClockMovedBackwards = 3003,
    /// Every slot of the namespace is held.
    Exhausted = 3004,
    /// The namespace is recorded in the store with other settings.
    NamespaceMismatch = 3005,
    /// The runtime was shut down.
    Closed = 3006,
    /// This process is a fork of the runtime's owner and cannot take a slot of its own (fork policy `error`, or a
    /// store that cannot give a child another slot: `memory:`, `manual:`, `static:` without a state file).
    Forked = 3007,
    /// The store could not be reached, or did not answer in time.
    StoreUnavailable = 4000,
    /// A record in the store breaks the protocol's invariants.
    CorruptRecord = 4001,
    /// The store reported another error.
    Store = 4002,
    /// A static slot's state file is locked by another process, corrupt, or cannot be written.
    StateFile = 4003,
    /// The store lost or rolled back writes.
    StoreRegression = 4004,
    /// A bug in cosid: a panic was caught at a language boundary.
    Panic = 9000,
    /// A bug in cosid: an internal invariant failed.
    Internal = 9001,
}

impl ErrorCode {
    /// Every code, in number order.
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::NullPointer,
        ErrorCode::InvalidUtf8,
        ErrorCode::InvalidArgument,
        ErrorCode::BufferTooSmall,
        ErrorCode::UnknownKey,
        ErrorCode::StringTooLong,
        ErrorCode::AlreadyInitialized,
        ErrorCode::Reentrant,
        ErrorCode::Config,
        ErrorCode::Layout,
        ErrorCode::InvalidId,
        ErrorCode::SlotLost,
        ErrorCode::WindowClosed,
        ErrorCode::BeforeWindow,
        ErrorCode::ClockMovedBackwards,
        ErrorCode::Exhausted,
        ErrorCode::NamespaceMismatch,
        ErrorCode::Closed,
        ErrorCode::Forked,
        ErrorCode::StoreUnavailable,
        ErrorCode::CorruptRecord,
        ErrorCode::Store,
        ErrorCode::StateFile,
        ErrorCode::StoreRegression,
        ErrorCode::Panic,
        ErrorCode::Internal,
    ];

    /// The number C returns for it (`COSID_RESULT_*`).
    pub const fn number(self) -> u32 {
        self as u32
    }

    /// The code with number `n`.
    pub fn from_number(n: u32) -> Option<ErrorCode> {
        Self::ALL.iter().copied().find(|c| c.number() == n)
    }

    /// The code with this stable name.
    pub fn from_name(name: &str) -> Option<ErrorCode> {
        Self::ALL.iter().copied().find(|c| c.name() == name)
    }

    /// The stable upper-case name (`"SLOT_LOST"`), the same in every language.
    pub const fn name(self) -> &'static str {
        match self {
            ErrorCode::NullPointer => "NULL_POINTER",
            ErrorCode::InvalidUtf8 => "INVALID_UTF8",
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::BufferTooSmall => "BUFFER_TOO_SMALL",
            ErrorCode::UnknownKey => "UNKNOWN_KEY",
            ErrorCode::StringTooLong => "STRING_TOO_LONG",
            ErrorCode::AlreadyInitialized => "ALREADY_INITIALIZED",
            ErrorCode::Reentrant => "REENTRANT",
            ErrorCode::Config => "CONFIG",
            ErrorCode::Layout => "LAYOUT",
            ErrorCode::InvalidId => "INVALID_ID",
            ErrorCode::SlotLost => "SLOT_LOST",
            ErrorCode::WindowClosed => "WINDOW_CLOSED",
            ErrorCode::BeforeWindow => "BEFORE_WINDOW",
            ErrorCode::ClockMovedBackwards => "CLOCK_MOVED_BACKWARDS",
            ErrorCode::Exhausted => "EXHAUSTED",
            ErrorCode::NamespaceMismatch => "NAMESPACE_MISMATCH",
            ErrorCode::Closed => "CLOSED",
            ErrorCode::Forked => "FORKED",
            ErrorCode::StoreUnavailable => "STORE_UNAVAILABLE",
            ErrorCode::CorruptRecord => "CORRUPT_RECORD",
            ErrorCode::Store => "STORE",
            ErrorCode::StateFile => "STATE_FILE",
            ErrorCode::StoreRegression => "STORE_REGRESSION",
            ErrorCode::Panic => "PANIC",
            ErrorCode::Internal => "INTERNAL",
        }
    }

    /// One sentence on what the code means.
    pub const fn summary(self) -> &'static str {
        match self {
            ErrorCode::NullPointer => "a required pointer argument was NULL",
            ErrorCode::InvalidUtf8 => "a string argument is not valid UTF-8",
            ErrorCode::InvalidArgument => "an argument is out of its documented range",
            ErrorCode::BufferTooSmall => {
                "the buffer is too small; the needed length was written to the length out-parameter"
            }
            ErrorCode::UnknownKey => "unknown configuration key",
            ErrorCode::StringTooLong => "a string argument is too long",
            ErrorCode::AlreadyInitialized => "the runtime is already running",
            ErrorCode::Reentrant => "called from one of the runtime's own event callbacks",
            ErrorCode::Config => "invalid configuration",
            ErrorCode::Layout => "invalid id layout",
            ErrorCode::InvalidId => "invalid id, or text that is not the canonical form of an id",
            ErrorCode::SlotLost => {
                "the slot was lost (a lease: a new slot is being acquired; a static slot: its state file is gone)"
            }
            ErrorCode::WindowClosed => "the lease window is closed: the clock passed its ceiling",
            ErrorCode::BeforeWindow => "the host clock has not reached the lease window yet",
            ErrorCode::ClockMovedBackwards => "the clock moved backwards too far",
            ErrorCode::Exhausted => "every slot of the namespace is held",
            ErrorCode::NamespaceMismatch => "the namespace is recorded with other settings",
            ErrorCode::Closed => "the runtime was shut down",
            ErrorCode::Forked => "this process was forked from the runtime's owner; re-initialize",
            ErrorCode::StoreUnavailable => "the store is unavailable",
            ErrorCode::CorruptRecord => "a store record is corrupt",
            ErrorCode::Store => "the store reported an error",
            ErrorCode::StateFile => "the static slot's state file is locked, corrupt or unwritable",
            ErrorCode::StoreRegression => "the store lost or rolled back writes",
            ErrorCode::Panic => "internal error: a panic was caught (a bug in cosid)",
            ErrorCode::Internal => "internal error (a bug in cosid)",
        }
    }

    /// The code of a core error. Exhaustive on purpose: a new error variant does not compile until it has a code.
    pub fn of(e: &CoreError) -> ErrorCode {
        match e {
            CoreError::SlotLost { .. } | CoreError::StateFileLost { .. } => ErrorCode::SlotLost,
            CoreError::WindowClosed { .. } => ErrorCode::WindowClosed,
            CoreError::BeforeWindow { .. } => ErrorCode::BeforeWindow,
            CoreError::ClockMovedBackwards { .. } => ErrorCode::ClockMovedBackwards,
            CoreError::Closed { .. } => ErrorCode::Closed,
            CoreError::Store(s) => Self::of_store(s),
            CoreError::Config(_) | CoreError::Namespace(_) => ErrorCode::Config,
            CoreError::Layout(_) => ErrorCode::Layout,
            CoreError::Id(_) => ErrorCode::InvalidId,
            CoreError::StateFile { .. } => ErrorCode::StateFile,
        }
    }

    /// The code of a store error (exhaustive, as [`of`](Self::of)).
    pub fn of_store(e: &StoreError) -> ErrorCode {
        match e {
            StoreError::Unavailable { .. } => ErrorCode::StoreUnavailable,
            StoreError::Exhausted { .. } => ErrorCode::Exhausted,
            StoreError::LeaseLost { .. } => ErrorCode::SlotLost,
            StoreError::NamespaceMismatch { .. } => ErrorCode::NamespaceMismatch,
            StoreError::Corrupt { .. } => ErrorCode::CorruptRecord,
            StoreError::InvalidUrl { .. }
            | StoreError::InvalidSettings { .. }
            | StoreError::UnsafeFile { .. } => ErrorCode::Config,
            StoreError::Regression { .. } => ErrorCode::StoreRegression,
            StoreError::NotBeforeLowered { .. } | StoreError::Generic { .. } => ErrorCode::Store,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed host call: its code, and a message that names what was wrong and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HostError {
    /// Why, as every language names it.
    pub code: ErrorCode,
    /// The detail.
    pub message: String,
}

impl HostError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl From<CoreError> for HostError {
    #[cold]
    fn from(e: CoreError) -> Self {
        HostError::new(ErrorCode::of(&e), e.to_string())
    }
}

impl From<crate::ConfigError> for HostError {
    #[cold]
    fn from(e: crate::ConfigError) -> Self {
        CoreError::from(e).into()
    }
}

impl From<StoreError> for HostError {
    #[cold]
    fn from(e: StoreError) -> Self {
        CoreError::from(e).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_names_are_distinct_and_round_trip() {
        let mut numbers = std::collections::HashSet::new();
        let mut names = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            assert!(numbers.insert(c.number()), "{c:?} repeats a number");
            assert!(names.insert(c.name()), "{c:?} repeats a name");
            assert_eq!(ErrorCode::from_number(c.number()), Some(*c));
            assert_eq!(ErrorCode::from_name(c.name()), Some(*c));
        }
        assert!(ErrorCode::ALL
            .windows(2)
            .all(|w| w[0].number() < w[1].number()));
    }

    #[test]
    fn state_file_and_regression_have_codes_of_their_own() {
        let e = CoreError::StateFile {
            path: "/x".into(),
            detail: "locked".into(),
        };
        assert_eq!(ErrorCode::of(&e), ErrorCode::StateFile);
        let e = CoreError::from(StoreError::Regression {
            store: "sqlite",
            what: "slot 1".into(),
            detail: "fence went back".into(),
        });
        assert_eq!(ErrorCode::of(&e), ErrorCode::StoreRegression);
    }
}
