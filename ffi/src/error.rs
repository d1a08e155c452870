//! Errors at the boundary: a code for the caller's `switch`, and a sentence kept per thread for
//! `cosid_last_error`.

use crate::guard::{self, write_text};
use crate::result::cosid_result;
use cosid_core::host::HostError;
use std::cell::RefCell;
use std::ffi::c_char;

/// A failed call: its code and the detail that `cosid_last_error` hands out.
#[derive(Debug)]
pub(crate) struct FfiError {
    pub(crate) code: cosid_result,
    pub(crate) message: String,
}

impl FfiError {
    pub(crate) fn new(code: cosid_result, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn null(name: &str) -> Self {
        Self::new(
            cosid_result::NullPointer,
            format!("`{name}` is NULL: expected a valid pointer"),
        )
    }
}

impl From<HostError> for FfiError {
    #[cold]
    fn from(e: HostError) -> Self {
        FfiError::new(e.code.into(), e.message)
    }
}

impl From<cosid_core::Error> for FfiError {
    #[cold]
    fn from(e: cosid_core::Error) -> Self {
        HostError::from(e).into()
    }
}

impl From<cosid_core::ConfigError> for FfiError {
    #[cold]
    fn from(e: cosid_core::ConfigError) -> Self {
        FfiError::new(cosid_result::Config, e.to_string())
    }
}

impl From<cosid_core::LayoutError> for FfiError {
    #[cold]
    fn from(e: cosid_core::LayoutError) -> Self {
        FfiError::new(cosid_result::Layout, e.to_string())
    }
}

impl From<cosid_core::IdError> for FfiError {
    #[cold]
    fn from(e: cosid_core::IdError) -> Self {
        FfiError::new(cosid_result::InvalidId, e.to_string())
    }
}

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Records the detail of a failure on this thread.
#[cold]
pub(crate) fn set_last_error(code: cosid_result, message: &str) {
    let name = code.name().to_string_lossy();
    // A thread being torn down has no thread-locals left; the code alone still reaches the caller.
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut s) = slot.try_borrow_mut() {
            s.clear();
            s.push_str(&name);
            s.push_str(": ");
            // Interior NULs would cut the C string short: show them instead.
            s.extend(
                message
                    .chars()
                    .map(|c| if c == '\0' { '\u{FFFD}' } else { c }),
            );
        }
    });
}

/// Copies the detail of the last failed call on this thread (`"CONFIG: invalid ttl = \"abc\": a duration ..."`)
/// into `buf` as a NUL-terminated string, and its length without the NUL into `*out_len`. The detail stays until
/// the next failure on this thread; a call that succeeds does not clear it. With no failure yet it is `""`.
///
/// If `buf_len` is too small for the text and its NUL, returns `COSID_RESULT_BUFFER_TOO_SMALL`, writes nothing to
/// `buf`, and sets `*out_len` to the length of the text (so `*out_len + 1` bytes are needed).
///
/// Errors: `COSID_RESULT_NULL_POINTER` if `buf` or `out_len` is NULL (this call does not replace the stored
/// detail on its own failure).
///
/// Thread safety: may be called from any thread; each thread reads its own detail.
#[no_mangle]
pub extern "C" fn cosid_last_error(
    buf: *mut c_char,
    buf_len: usize,
    out_len: *mut usize,
) -> cosid_result {
    guard::call_quiet(|| {
        LAST_ERROR.with(|slot| {
            let text = slot.borrow().clone();
            write_text(&text, buf, buf_len, out_len)
        })
    })
}
