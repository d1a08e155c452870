//! The C ABI of cosid: `libcosid.so` / `libcosid.a`, described by `include/cosid.h` (generated from this crate by
//! cbindgen; `cargo test -p cosid-ffi --test header` fails when the committed header is stale).
//!
//! Conventions, after rustls-ffi:
//!
//! - every export returns a [`cosid_result`] (or a value that cannot fail), catches panics
//!   ([`cosid_result::Panic`]), checks every pointer for NULL, and writes its out-parameters only on success;
//! - handles ([`cosid_config`], [`cosid_runtime`]) are opaque, created by `_new` functions and released by
//!   `_free` functions, for which NULL is a no-op;
//! - the detail of the last failure on a thread is read with [`cosid_last_error`].
//!
//! All of the crate's `unsafe` code lives in this crate, each block with the reason it is sound.

#![allow(non_camel_case_types)]

mod config;
mod error;
mod event;
mod fork;
mod global;
mod guard;
mod ids;
mod result;
mod runtime;

pub use config::*;
pub use error::cosid_last_error;
pub use event::{
    cosid_event, cosid_event_callback, cosid_event_kind, cosid_log_callback, cosid_log_level,
    cosid_log_params, cosid_set_log_callback,
};
pub use global::*;
pub use ids::*;
pub use result::{cosid_result, cosid_result_message, cosid_result_name};
pub use runtime::*;

use std::ffi::c_char;

/// The longest string, in bytes without the terminating NUL, that any function accepts. Longer strings give
/// `COSID_RESULT_STRING_TOO_LONG`.
pub const COSID_MAX_STRING_LEN: usize = 4096;

/// The library's version, `"MAJOR.MINOR.PATCH"`, as a static NUL-terminated string. Compare it with
/// `COSID_VERSION` to check that the header matches the library loaded at run time.
///
/// Thread safety: may be called from any thread. Never fails; never returns NULL.
#[no_mangle]
pub extern "C" fn cosid_version() -> *const c_char {
    VERSION.as_ptr()
}

/// The stores this library carries, as a static NUL-terminated list of their names (as the other languages' status
/// gives them) separated by commas: `"memory,sqlite,http,redis,postgres"` in the released library. A store URL of
/// any other store fails with `COSID_RESULT_CONFIG`, whose message says how to reach it (through `cosid serve`, or
/// a build with its cargo feature).
///
/// Thread safety: may be called from any thread. Never fails; never returns NULL.
#[no_mangle]
pub extern "C" fn cosid_stores() -> *const c_char {
    static STORES: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();
    STORES
        .get_or_init(|| {
            std::ffi::CString::new(cosid_core::store::built().join(",")).unwrap_or_default()
        })
        .as_ptr()
}

const VERSION: &std::ffi::CStr = match std::ffi::CStr::from_bytes_with_nul(
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
) {
    Ok(v) => v,
    Err(_) => panic!("the crate version contains a NUL byte"),
};
