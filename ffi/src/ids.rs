//! Layouts and ids without a runtime: compose, decompose, and the friendly, base-62 and decimal text forms.

use crate::error::FfiError;
use crate::guard::{self, check_out, read_str, try_ref, write_text};
use crate::result::cosid_result;
use cosid_core::{Id, Layout, Tick};
use std::ffi::c_char;

/// Length of the base-62 form of an id: always 11 characters (a buffer of `COSID_BASE62_LEN + 1` bytes holds it
/// and its NUL).
pub const COSID_BASE62_LEN: usize = 11;

/// The longest friendly form of an id (`yyyyMMddHHmmssSSS-slot-sequence`), without the NUL: a buffer of
/// `COSID_FRIENDLY_MAX_LEN + 1` bytes holds any of them.
pub const COSID_FRIENDLY_MAX_LEN: usize = 59; // 17 + '-' + 20 + '-' + 20

/// `tick_ms` of a layout with millisecond ticks.
pub const COSID_TICK_MILLISECOND: u32 = 1;

/// `tick_ms` of a layout with second ticks.
pub const COSID_TICK_SECOND: u32 = 1000;

/// How an id's 63 usable bits are split: `0 | timestamp | slot | sequence` from the most significant bit down,
/// the timestamp counted in ticks since `epoch_ms`. A plain value: copy it freely. Every function that takes one
/// checks it (each width at least 1, at most 63 in all, the epoch on a tick boundary, the last tick before
/// 2^53 ms) and fails with `COSID_RESULT_LAYOUT` otherwise.
///
/// Get the presets with `cosid_layout_named`, a runtime's with `cosid_runtime_layout`.
///
/// Thread safety: a plain value; share or copy it between threads as any struct.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct cosid_layout {
    /// Unix milliseconds at the start of tick 0 (the default epoch is 1577203200000, 2019-12-24T16:00:00Z).
    pub epoch_ms: u64,
    /// Length of a tick in milliseconds: `COSID_TICK_MILLISECOND` (1) or `COSID_TICK_SECOND` (1000).
    pub tick_ms: u32,
    /// Width of the timestamp field in bits.
    pub timestamp_bits: u8,
    /// Width of the slot field in bits.
    pub slot_bits: u8,
    /// Width of the sequence field in bits.
    pub sequence_bits: u8,
}

impl From<&Layout> for cosid_layout {
    fn from(l: &Layout) -> Self {
        cosid_layout {
            epoch_ms: l.epoch_ms(),
            tick_ms: l.tick().millis() as u32,
            timestamp_bits: l.timestamp_bits(),
            slot_bits: l.slot_bits(),
            sequence_bits: l.sequence_bits(),
        }
    }
}

impl cosid_layout {
    /// The checked layout.
    pub(crate) fn checked(&self) -> Result<Layout, FfiError> {
        let l = self;
        let tick = match l.tick_ms {
            COSID_TICK_MILLISECOND => Tick::Millisecond,
            COSID_TICK_SECOND => Tick::Second,
            other => {
                return Err(FfiError::new(
                    cosid_result::Layout,
                    format!("tick_ms = {other}: expected 1 (millisecond) or 1000 (second)"),
                ))
            }
        };
        Ok(Layout::new(
            l.epoch_ms,
            tick,
            l.timestamp_bits,
            l.slot_bits,
            l.sequence_bits,
        )?)
    }
}

/// Reads and checks a caller's layout.
///
/// # Safety
///
/// `p` is NULL or points to a readable `cosid_layout`.
pub(crate) unsafe fn read_layout(p: *const cosid_layout, name: &str) -> Result<Layout, FfiError> {
    // SAFETY: the caller's contract.
    unsafe { try_ref(p, name) }?.checked()
}

/// The fields of an id, as `cosid_decompose` writes them.
///
/// Thread safety: a plain value.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct cosid_parts {
    /// Ticks since the layout's epoch.
    pub tick: u64,
    /// Unix milliseconds at the start of the tick.
    pub timestamp_ms: u64,
    /// The slot that issued the id.
    pub slot: u64,
    /// The sequence number within the tick.
    pub sequence: u64,
}

/// Writes the preset layout called `name` into `*out`: `"millis"` (the default: 41 bits of millisecond ticks, 10
/// of slot, 12 of sequence), `"seconds"` (31, 10, 22 with second ticks) or `"js-safe"` (41, 5, 7: 53 bits in all,
/// exact as a JavaScript number).
///
/// Errors: `COSID_RESULT_NULL_POINTER`, `COSID_RESULT_INVALID_UTF8`, `COSID_RESULT_STRING_TOO_LONG`, and
/// `COSID_RESULT_LAYOUT` for an unknown name.
///
/// Thread safety: may be called from any thread.
///
/// # Safety
///
/// `name` is a NUL-terminated string; `out` points to writable memory for a `cosid_layout`.
#[no_mangle]
pub unsafe extern "C" fn cosid_layout_named(
    name: *const c_char,
    out: *mut cosid_layout,
) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        let name = unsafe { read_str(name, "name") }?;
        let out = check_out(out, "out")?;
        let layout = cosid_core::config::parse_layout("layout", name)
            .map_err(|e| FfiError::new(cosid_result::Layout, e.to_string()))?;
        // SAFETY: `out` is not NULL and the caller passes writable memory for a `cosid_layout`.
        unsafe { out.write(cosid_layout::from(&layout)) };
        Ok(())
    })
}

/// Checks a layout: `COSID_RESULT_OK` if every function accepts it, else `COSID_RESULT_LAYOUT` with the reason in
/// `cosid_last_error`.
///
/// Thread safety: may be called from any thread.
///
/// # Safety
///
/// `layout` points to a readable `cosid_layout`.
#[no_mangle]
pub unsafe extern "C" fn cosid_layout_check(layout: *const cosid_layout) -> cosid_result {
    // SAFETY: the caller's contract.
    guard::call(|| unsafe { read_layout(layout, "layout") }.map(drop))
}

/// Writes into `*out` the most ids one slot of `layout` can issue in one second (4096000 for `"millis"`): the
/// cap that `cosid_next_id` approaches under sustained load.
///
/// Errors: `COSID_RESULT_NULL_POINTER`, `COSID_RESULT_LAYOUT`.
///
/// Thread safety: may be called from any thread.
///
/// # Safety
///
/// `layout` points to a readable `cosid_layout`; `out` to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn cosid_layout_cap_per_second(
    layout: *const cosid_layout,
    out: *mut u64,
) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        let layout = unsafe { read_layout(layout, "layout") }?;
        let out = check_out(out, "out")?;
        // SAFETY: `out` is not NULL and the caller passes a writable `uint64_t`.
        unsafe { out.write(layout.cap_per_second()) };
        Ok(())
    })
}

/// Builds an id from its fields and writes it into `*out_id`.
///
/// Errors: `COSID_RESULT_NULL_POINTER`, `COSID_RESULT_LAYOUT`, and `COSID_RESULT_INVALID_ID` when a field is out
/// of the layout's range (`cosid_last_error` names it).
///
/// Thread safety: may be called from any thread.
///
/// # Safety
///
/// `layout` points to a readable `cosid_layout`; `out_id` to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn cosid_compose(
    layout: *const cosid_layout,
    tick: u64,
    slot: u64,
    sequence: u64,
    out_id: *mut u64,
) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        let layout = unsafe { read_layout(layout, "layout") }?;
        let out_id = check_out(out_id, "out_id")?;
        let id = layout.compose(tick, slot, sequence)?;
        // SAFETY: `out_id` is not NULL and the caller passes a writable `uint64_t`.
        unsafe { out_id.write(id.as_u64()) };
        Ok(())
    })
}

/// Splits `id` into its fields and writes them into `*out`.
///
/// Errors: `COSID_RESULT_NULL_POINTER`, `COSID_RESULT_LAYOUT`, and `COSID_RESULT_INVALID_ID` when `id` has bits
/// set that the layout does not use (the sign bit, or bits above its total width).
///
/// Thread safety: may be called from any thread.
///
/// # Safety
///
/// `layout` points to a readable `cosid_layout`; `out` to writable memory for a `cosid_parts`.
#[no_mangle]
pub unsafe extern "C" fn cosid_decompose(
    layout: *const cosid_layout,
    id: u64,
    out: *mut cosid_parts,
) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        let layout = unsafe { read_layout(layout, "layout") }?;
        let out = check_out(out, "out")?;
        let p = layout.decompose(Id::from_u64(id))?;
        // SAFETY: `out` is not NULL and the caller passes writable memory for a `cosid_parts`.
        unsafe {
            out.write(cosid_parts {
                tick: p.tick,
                timestamp_ms: p.timestamp_ms,
                slot: p.slot,
                sequence: p.sequence,
            })
        };
        Ok(())
    })
}

/// Writes the friendly form of `id` (`yyyyMMddHHmmssSSS-slot-sequence`, the UTC start of its tick, then slot and
/// sequence in decimal) into `buf` with a NUL, and its length without the NUL into `*out_len`. A buffer of
/// `COSID_FRIENDLY_MAX_LEN + 1` bytes always suffices.
///
/// Errors: `COSID_RESULT_NULL_POINTER`, `COSID_RESULT_LAYOUT`, `COSID_RESULT_INVALID_ID` (an id the layout did
/// not make), and `COSID_RESULT_BUFFER_TOO_SMALL`, which writes only `*out_len` (the text's length: `*out_len + 1`
/// bytes are needed).
///
/// Thread safety: may be called from any thread.
///
/// # Safety
///
/// `layout` points to a readable `cosid_layout`; `buf` to `buf_len` writable bytes; `out_len` to a writable
/// `size_t`.
#[no_mangle]
pub unsafe extern "C" fn cosid_id_to_friendly(
    layout: *const cosid_layout,
    id: u64,
    buf: *mut c_char,
    buf_len: usize,
    out_len: *mut usize,
) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        let layout = unsafe { read_layout(layout, "layout") }?;
        check_out(buf, "buf")?;
        check_out(out_len, "out_len")?;
        let text = layout.to_friendly(Id::from_u64(id))?;
        write_text(&text, buf, buf_len, out_len)
    })
}

/// Reads the friendly form strictly (only what `cosid_id_to_friendly` writes) and writes the id into `*out_id`.
///
/// Errors: `COSID_RESULT_NULL_POINTER`, `COSID_RESULT_INVALID_UTF8`, `COSID_RESULT_STRING_TOO_LONG`,
/// `COSID_RESULT_LAYOUT`, and `COSID_RESULT_INVALID_ID` with the reason (a bad date, a leading zero, a field out
/// of range, ...) in `cosid_last_error`.
///
/// Thread safety: may be called from any thread.
///
/// # Safety
///
/// `layout` points to a readable `cosid_layout`; `text` is a NUL-terminated string; `out_id` points to a
/// writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn cosid_id_from_friendly(
    layout: *const cosid_layout,
    text: *const c_char,
    out_id: *mut u64,
) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        let layout = unsafe { read_layout(layout, "layout") }?;
        // SAFETY: the caller's contract.
        let text = unsafe { read_str(text, "text") }?;
        let out_id = check_out(out_id, "out_id")?;
        let id = layout.parse_friendly(text)?;
        // SAFETY: `out_id` is not NULL and the caller passes a writable `uint64_t`.
        unsafe { out_id.write(id.as_u64()) };
        Ok(())
    })
}

/// Writes the base-62 form of `id` (exactly `COSID_BASE62_LEN` characters of `0-9A-Za-z`, zero-padded, so the text
/// sorts like the number) into `buf` with a NUL, and its length into `*out_len`.
///
/// Errors: `COSID_RESULT_NULL_POINTER`, and `COSID_RESULT_BUFFER_TOO_SMALL` (below `COSID_BASE62_LEN + 1` bytes),
/// which writes only `*out_len`.
///
/// Thread safety: may be called from any thread.
///
/// # Safety
///
/// `buf` points to `buf_len` writable bytes; `out_len` to a writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn cosid_id_to_base62(
    id: u64,
    buf: *mut c_char,
    buf_len: usize,
    out_len: *mut usize,
) -> cosid_result {
    guard::call(|| {
        let mut text = [0u8; COSID_BASE62_LEN];
        Id::from_u64(id).write_base62(&mut text);
        // The alphabet is ASCII.
        let text = std::str::from_utf8(&text)
            .map_err(|_| FfiError::new(cosid_result::Internal, "base-62 text is not ASCII"))?;
        write_text(text, buf, buf_len, out_len)
    })
}

/// Reads the base-62 form strictly (exactly 11 characters of `0-9A-Za-z`, at most `LygHa16AHYF`) and writes the
/// id into `*out_id`.
///
/// Errors: `COSID_RESULT_NULL_POINTER`, `COSID_RESULT_INVALID_UTF8`, `COSID_RESULT_STRING_TOO_LONG`,
/// `COSID_RESULT_INVALID_ID`.
///
/// Thread safety: may be called from any thread.
///
/// # Safety
///
/// `text` is a NUL-terminated string; `out_id` points to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn cosid_id_from_base62(
    text: *const c_char,
    out_id: *mut u64,
) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        let text = unsafe { read_str(text, "text") }?;
        let out_id = check_out(out_id, "out_id")?;
        let id = Id::from_base62(text)?;
        // SAFETY: `out_id` is not NULL and the caller passes a writable `uint64_t`.
        unsafe { out_id.write(id.as_u64()) };
        Ok(())
    })
}

/// Reads the canonical decimal form strictly (ASCII digits only: no sign, no space, no leading zero, at most
/// 18446744073709551615) and writes the id into `*out_id`.
///
/// Errors: `COSID_RESULT_NULL_POINTER`, `COSID_RESULT_INVALID_UTF8`, `COSID_RESULT_STRING_TOO_LONG`,
/// `COSID_RESULT_INVALID_ID`.
///
/// Thread safety: may be called from any thread.
///
/// # Safety
///
/// `text` is a NUL-terminated string; `out_id` points to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn cosid_id_from_decimal(
    text: *const c_char,
    out_id: *mut u64,
) -> cosid_result {
    guard::call(|| {
        // SAFETY: the caller's contract.
        let text = unsafe { read_str(text, "text") }?;
        let out_id = check_out(out_id, "out_id")?;
        let id = Id::parse_decimal(text)?;
        // SAFETY: `out_id` is not NULL and the caller passes a writable `uint64_t`.
        unsafe { out_id.write(id.as_u64()) };
        Ok(())
    })
}
