//! The crate's errors. Each has a stable [`code`](Error::code) that the C, Python and Node bindings surface as
//! they are (`COSID_RESULT_SLOT_LOST`, `cosid.SlotLostError`, `err.code === 'SLOT_LOST'`).

use crate::id::{IdError, LayoutError};
use crate::lease::NamespaceError;
use crate::store::StoreError;

/// Everything that can go wrong in cosid.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The lease was found gone; ids fail until the keeper has acquired a new slot.
    #[error("the lease on slot {slot} was lost; no id is issued on it any more (a new slot is being acquired)")]
    SlotLost {
        /// The slot that was lost.
        slot: u32,
    },
    /// A static slot's state file was deleted or replaced under its holder: no id is issued on the slot any more,
    /// and no other slot is taken (a static slot is the operator's to assign). Code `SLOT_LOST`, as a lost lease.
    #[error("the state file of static slot {slot} was deleted or replaced; no id is issued on it any more (restart the process once the state file is back in place)")]
    StateFileLost {
        /// The static slot.
        slot: u32,
    },
    /// The clock is past the window's ceiling and no renewal extended it in time.
    #[error("the lease window is closed: the clock reads {now_ms} ms, past the ceiling {ceiling_ms} ms, and no renewal came within {waited_ms} ms")]
    WindowClosed {
        /// The window's ceiling (Unix ms).
        ceiling_ms: u64,
        /// The local clock (Unix ms).
        now_ms: u64,
        /// How long the call waited.
        waited_ms: u64,
    },
    /// The host clock is still behind the window's floor after waiting.
    #[error("the host clock reads {now_ms} ms, not yet past the lease window's floor {floor_ms} ms, after waiting {waited_ms} ms")]
    BeforeWindow {
        /// The window's floor (Unix ms, excluded).
        floor_ms: u64,
        /// The local clock (Unix ms).
        now_ms: u64,
        /// How long the call waited.
        waited_ms: u64,
    },
    /// The wall clock stepped back further than the generator waits for.
    #[error("the clock moved backwards by {behind_ms} ms, more than the {threshold_ms} ms the generator waits for")]
    ClockMovedBackwards {
        /// How far behind the last issued tick the clock is.
        behind_ms: u64,
        /// The configured threshold.
        threshold_ms: u64,
    },
    /// The generator was sealed by shutdown, or the process forked away from its runtime.
    #[error("the generator is closed: {reason}")]
    Closed {
        /// Why.
        reason: &'static str,
    },
    /// The store answered with an error, or could not be reached.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A setting is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A layout is invalid.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// An id or its text form is invalid.
    #[error(transparent)]
    Id(#[from] IdError),
    /// A namespace name is invalid.
    #[error(transparent)]
    Namespace(#[from] NamespaceError),
    /// A static slot's state file is locked by another process, corrupt, or cannot be written.
    #[error("state file {path:?}: {detail}")]
    StateFile {
        /// The state file.
        path: std::path::PathBuf,
        /// What is wrong.
        detail: String,
    },
}

impl Error {
    /// A stable, upper-case name of the failure, the same in every binding (see [`crate::host::ErrorCode`], the
    /// one place that maps errors to codes).
    pub fn code(&self) -> &'static str {
        crate::host::ErrorCode::of(self).name()
    }
}

/// An invalid setting: names the setting, the value given and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {setting} = {value:?}: {expected}")]
pub struct ConfigError {
    /// The setting (`COSID_TTL`, `ttl`, ...).
    pub setting: String,
    /// The value given, with any secret in it (a store URL's password) replaced by `***`.
    pub value: String,
    /// What was expected.
    pub expected: String,
}

impl ConfigError {
    /// A new error for `setting`. The value is redacted: an error is printed and logged, and the value may be a
    /// store URL with a password in it (redaction leaves values without one as they are).
    pub fn new(
        setting: impl Into<String>,
        value: impl Into<String>,
        expected: impl Into<String>,
    ) -> Self {
        Self {
            setting: setting.into(),
            value: crate::store::redacted(&value.into()),
            expected: expected.into(),
        }
    }
}
