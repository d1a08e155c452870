//! What JavaScript sees when something fails.
//!
//! Failures of cosid itself are `Error` objects whose `code` is the core's stable code ([`cosid::Error::code`]:
//! `'SLOT_LOST'`, `'EXHAUSTED'`, `'WINDOW_CLOSED'`, `'CONFIG'`, `'INVALID_ID'`, ...), the same names the C and
//! Python bindings use, and `'PANIC'` for a Rust panic caught by [`crate::guard`]. An argument of the wrong type
//! is a `TypeError` (code `'ERR_INVALID_ARG_TYPE'`), a number out of range a `RangeError` (code
//! `'ERR_OUT_OF_RANGE'`), as Node's own functions do.

use cosid::host::{ErrorCode, HostError};
use napi::{Env, Status};
use std::borrow::Cow;

/// The `code` of a thrown `Error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Code(Cow<'static, str>);

impl Code {
    /// napi-rs leaves an exception that is already pending alone when it sees this status: the way to throw a
    /// `TypeError` or `RangeError` from a function that returns `Result`.
    const PENDING: Code = Code(Cow::Borrowed("PendingException"));
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<Status> for Code {
    fn from(status: Status) -> Self {
        Code(Cow::Owned(status.as_ref().to_owned()))
    }
}

/// An error on its way to JavaScript.
pub type Thrown = napi::Error<Code>;

/// An `Error` with `code`.
pub fn coded(code: &'static str, message: impl ToString) -> Thrown {
    napi::Error::new(Code(Cow::Borrowed(code)), message)
}

/// The JavaScript form of a core error.
pub fn from_cosid(e: cosid::Error) -> Thrown {
    coded(js_code(ErrorCode::of(&e)), e)
}

/// The JavaScript form of a host-layer error.
pub fn from_host(e: HostError) -> Thrown {
    coded(js_code(e.code), e.message)
}

/// The `code` of each error. Exhaustive on purpose: a code added to the core does not build until Node has
/// decided how to throw it (every one is an `Error` whose `code` is the core's name, as in every language).
fn js_code(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::NullPointer
        | ErrorCode::InvalidUtf8
        | ErrorCode::InvalidArgument
        | ErrorCode::BufferTooSmall
        | ErrorCode::UnknownKey
        | ErrorCode::StringTooLong
        | ErrorCode::AlreadyInitialized
        | ErrorCode::Reentrant
        | ErrorCode::Config
        | ErrorCode::Layout
        | ErrorCode::InvalidId
        | ErrorCode::SlotLost
        | ErrorCode::WindowClosed
        | ErrorCode::BeforeWindow
        | ErrorCode::ClockMovedBackwards
        | ErrorCode::Exhausted
        | ErrorCode::NamespaceMismatch
        | ErrorCode::Closed
        | ErrorCode::Forked
        | ErrorCode::StoreUnavailable
        | ErrorCode::CorruptRecord
        | ErrorCode::Store
        | ErrorCode::StateFile
        | ErrorCode::StoreRegression
        | ErrorCode::Panic
        | ErrorCode::Internal => code.name(),
    }
}

/// An invalid setting, as the core words it (`invalid ttl = "-1": ...`), with code `'CONFIG'`.
pub fn invalid(setting: &str, value: impl Into<String>, expected: impl Into<String>) -> Thrown {
    from_cosid(cosid::ConfigError::new(setting, value, expected).into())
}

/// Throws a `TypeError` now and returns the marker that makes napi-rs leave it pending.
pub fn type_error(env: &Env, message: &str) -> Thrown {
    let _ = env.throw_type_error(message, Some("ERR_INVALID_ARG_TYPE"));
    napi::Error::new(Code::PENDING, message)
}

/// Throws a `RangeError` now and returns the marker that makes napi-rs leave it pending.
pub fn range_error(env: &Env, message: &str) -> Thrown {
    let _ = env.throw_range_error(message, Some("ERR_OUT_OF_RANGE"));
    napi::Error::new(Code::PENDING, message)
}

/// Converts the error of a result into a [`Thrown`].
pub trait OrThrow<T> {
    /// The result with its error converted.
    fn or_throw(self) -> Result<T, Thrown>;
}

impl<T> OrThrow<T> for Result<T, cosid::Error> {
    #[inline]
    fn or_throw(self) -> Result<T, Thrown> {
        self.map_err(from_cosid)
    }
}

impl<T> OrThrow<T> for Result<T, HostError> {
    #[inline]
    fn or_throw(self) -> Result<T, Thrown> {
        self.map_err(from_host)
    }
}

impl<T> OrThrow<T> for Result<T, cosid::IdError> {
    fn or_throw(self) -> Result<T, Thrown> {
        self.map_err(|e| from_cosid(e.into()))
    }
}

impl<T> OrThrow<T> for Result<T, cosid::ConfigError> {
    fn or_throw(self) -> Result<T, Thrown> {
        self.map_err(|e| from_cosid(e.into()))
    }
}

impl<T> OrThrow<T> for Result<T, cosid::LayoutError> {
    fn or_throw(self) -> Result<T, Thrown> {
        self.map_err(|e| from_cosid(e.into()))
    }
}

impl<T> OrThrow<T> for napi::Result<T> {
    fn or_throw(self) -> Result<T, Thrown> {
        self.map_err(|e| {
            let status = e.status;
            napi::Error::new(Code::from(status), e.reason.clone())
        })
    }
}

/// A promise rejection carrying `error` as JavaScript sees it (with its `code`), for an async task's `resolve`,
/// which can only fail with napi-rs's own error type.
pub fn rejection(env: &napi::Env, error: Thrown) -> napi::Error {
    napi::Error::from(napi::JsError::from(error).into_unknown(*env))
}
