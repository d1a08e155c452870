//! What every export goes through: panics caught, pointers checked, strings read with a bound, text written into
//! caller buffers.

use crate::error::{set_last_error, FfiError};
use crate::result::cosid_result;
use crate::COSID_MAX_STRING_LEN;
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs the body of an export: `Ok` is `COSID_RESULT_OK`; an error is recorded for `cosid_last_error` and its
/// code returned; a panic becomes `COSID_RESULT_PANIC` and never crosses into C.
#[inline(always)]
pub(crate) fn call(body: impl FnOnce() -> Result<(), FfiError>) -> cosid_result {
    // AssertUnwindSafe: after a panic the caller gets PANIC and every handle stays in a state its own code
    // tolerates (state behind locks is replaced whole, atomics are never half-written).
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => cosid_result::Ok,
        Ok(Err(e)) => fail(e),
        Err(payload) => panicked(payload),
    }
}

/// The hot path of an export: `fast` returns `true` when it did the whole job, else `slow` (a cold, complete
/// version of the call, itself guarded) runs. Keeps the error plumbing out of the common case.
#[inline(always)]
pub(crate) fn call_fast(
    fast: impl FnOnce() -> bool,
    slow: impl FnOnce() -> cosid_result,
) -> cosid_result {
    match catch_unwind(AssertUnwindSafe(fast)) {
        Ok(true) => cosid_result::Ok,
        Ok(false) => slow(),
        Err(payload) => panicked(payload),
    }
}

/// As [`call`], but the failure is not recorded (for `cosid_last_error` itself).
pub(crate) fn call_quiet(body: impl FnOnce() -> Result<(), FfiError>) -> cosid_result {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => cosid_result::Ok,
        Ok(Err(e)) => e.code,
        Err(_) => cosid_result::Panic,
    }
}

#[cold]
#[inline(never)]
fn fail(e: FfiError) -> cosid_result {
    set_last_error(e.code, &e.message);
    e.code
}

#[cold]
#[inline(never)]
fn panicked(payload: Box<dyn std::any::Any + Send>) -> cosid_result {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned());
    set_last_error(
        cosid_result::Panic,
        &format!("caught a panic (a bug in cosid): {what}"),
    );
    // Dropping the payload could itself panic; leak it instead.
    std::mem::forget(payload);
    cosid_result::Panic
}

/// A shared reference to `*p`, or `NULL_POINTER` naming the argument.
///
/// # Safety
///
/// `p` is NULL or points to a live, properly aligned `T` that nothing mutates for `'a`.
#[inline(always)]
pub(crate) unsafe fn try_ref<'a, T>(p: *const T, name: &str) -> Result<&'a T, FfiError> {
    // SAFETY: the caller's contract; NULL is handled by `as_ref`.
    match unsafe { p.as_ref() } {
        Some(r) => Ok(r),
        None => Err(FfiError::null(name)),
    }
}

/// Checks an out-parameter: `NULL_POINTER` naming it if it is NULL.
#[inline(always)]
pub(crate) fn check_out<T>(p: *mut T, name: &str) -> Result<*mut T, FfiError> {
    if p.is_null() {
        Err(FfiError::null(name))
    } else {
        Ok(p)
    }
}

/// Reads a NUL-terminated UTF-8 string of at most [`COSID_MAX_STRING_LEN`] bytes.
///
/// # Safety
///
/// `p` is NULL or points to readable memory that holds a NUL within its first `COSID_MAX_STRING_LEN + 1` bytes or
/// is at least that long, and stays unchanged for `'a`.
pub(crate) unsafe fn read_str<'a>(p: *const c_char, name: &str) -> Result<&'a str, FfiError> {
    if p.is_null() {
        return Err(FfiError::null(name));
    }
    // SAFETY: `p` is not NULL, and the caller guarantees the bytes up to the NUL or the bound are readable;
    // strnlen reads no further than either.
    let len = unsafe { libc::strnlen(p, COSID_MAX_STRING_LEN + 1) };
    if len > COSID_MAX_STRING_LEN {
        return Err(FfiError::new(
            cosid_result::StringTooLong,
            format!("`{name}` is longer than {COSID_MAX_STRING_LEN} bytes: expected a shorter NUL-terminated string"),
        ));
    }
    // SAFETY: `len` bytes from `p` are readable (strnlen found the NUL at `len`), and the caller keeps them
    // unchanged for 'a.
    let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) };
    std::str::from_utf8(bytes).map_err(|e| {
        FfiError::new(
            cosid_result::InvalidUtf8,
            format!(
                "`{name}` is not valid UTF-8 (invalid byte 0x{:02x} at offset {}): expected UTF-8 text",
                bytes[e.valid_up_to()],
                e.valid_up_to()
            ),
        )
    })
}

/// Copies `text` and a NUL into `buf` (`buf_len` bytes) and its length into `*out_len`. When `buf` is too small,
/// writes only `*out_len` (the text's length) and returns `BUFFER_TOO_SMALL`.
pub(crate) fn write_text(
    text: &str,
    buf: *mut c_char,
    buf_len: usize,
    out_len: *mut usize,
) -> Result<(), FfiError> {
    let buf = check_out(buf, "buf")?;
    let out_len = check_out(out_len, "out_len")?;
    if text.len() >= buf_len {
        // SAFETY: `out_len` is not NULL, and the caller passes a writable `size_t`.
        unsafe { out_len.write(text.len()) };
        return Err(FfiError::new(
            cosid_result::BufferTooSmall,
            format!(
                "the buffer holds {buf_len} bytes: expected at least {} (the text and its NUL)",
                text.len() + 1
            ),
        ));
    }
    // SAFETY: `buf` is not NULL and the caller guarantees `buf_len` writable bytes; we write `text.len() + 1 <=
    // buf_len` of them. The source is a Rust string, which cannot overlap the caller's buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), text.len());
        buf.add(text.len()).write(0);
        out_len.write(text.len());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last_error() -> String {
        let mut buf = [0 as c_char; 256];
        let mut len = 0usize;
        let r = crate::error::cosid_last_error(buf.as_mut_ptr(), buf.len(), &mut len);
        assert_eq!(r, cosid_result::Ok);
        // SAFETY: `cosid_last_error` wrote `len` bytes and a NUL.
        unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_becomes_the_panic_code_with_its_message() {
        assert_eq!(call(|| panic!("boom {}", 42)), cosid_result::Panic);
        assert!(last_error().contains("boom 42"), "{}", last_error());
        assert_eq!(call(|| std::panic::panic_any(7u8)), cosid_result::Panic);
        assert!(last_error().contains("without a message"));
        assert_eq!(
            call_fast(|| panic!("fast"), || cosid_result::Internal),
            cosid_result::Panic
        );
        assert!(last_error().contains("fast"));
        assert_eq!(call_quiet(|| panic!("quiet")), cosid_result::Panic);
        assert!(
            last_error().contains("fast"),
            "call_quiet leaves the detail alone"
        );
    }

    #[test]
    fn errors_are_recorded_and_ok_is_ok() {
        assert_eq!(call(|| Ok(())), cosid_result::Ok);
        assert_eq!(
            call(|| Err(FfiError::null("thing"))),
            cosid_result::NullPointer
        );
        assert_eq!(
            last_error(),
            "NULL_POINTER: `thing` is NULL: expected a valid pointer"
        );
        assert_eq!(
            call_fast(|| false, || cosid_result::Closed),
            cosid_result::Closed
        );
    }

    #[test]
    fn strings_are_bounded_and_checked() {
        let ok = c"hello";
        // SAFETY: a NUL-terminated literal.
        assert_eq!(unsafe { read_str(ok.as_ptr(), "s") }.unwrap(), "hello");
        let long = vec![b'a'; COSID_MAX_STRING_LEN + 1]; // no NUL within the bound
                                                         // SAFETY: `long` has COSID_MAX_STRING_LEN + 1 readable bytes, which is all strnlen may read.
        let e = unsafe { read_str(long.as_ptr().cast(), "s") }.unwrap_err();
        assert_eq!(e.code, cosid_result::StringTooLong);
        let bad = c"a\xffb";
        // SAFETY: a NUL-terminated literal.
        let e = unsafe { read_str(bad.as_ptr(), "s") }.unwrap_err();
        assert_eq!(e.code, cosid_result::InvalidUtf8);
        assert!(e.message.contains("0xff at offset 1"), "{}", e.message);
    }
}
