//! Errors of the id module: one enum for building a [`Layout`](super::Layout), one for ids and their text forms.

use super::layout::Tick;

/// A layout that cannot be built: [`Layout::new`](super::Layout::new) rejected its epoch, tick or bit widths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// A field has zero bits; every field needs at least one.
    #[error("{field} width is 0 bits: expected at least 1 bit")]
    ZeroWidth {
        /// `"timestamp"`, `"slot"` or `"sequence"`.
        field: &'static str,
    },
    /// The three widths add up to more than 63 bits (the sign bit must stay 0).
    #[error(
        "layout is {total} bits wide (timestamp + slot + sequence): expected at most {max} bits"
    )]
    TooWide {
        /// The sum of the three widths.
        total: u32,
        /// The largest allowed sum, 63.
        max: u32,
    },
    /// The epoch is past the latest epoch a layout may have.
    #[error("epoch {epoch_ms} ms is out of range: expected at most {max} ms (2^53 - 1)")]
    EpochOutOfRange {
        /// The epoch given, in Unix milliseconds.
        epoch_ms: u64,
        /// The largest allowed epoch ([`Layout::MAX_UNIX_MS`](super::Layout::MAX_UNIX_MS)).
        max: u64,
    },
    /// The epoch does not start a tick: for second ticks it must be a whole Unix second.
    #[error("epoch {epoch_ms} ms does not start a {tick} tick: expected a multiple of {} ms", tick.millis())]
    EpochNotTickAligned {
        /// The epoch given, in Unix milliseconds.
        epoch_ms: u64,
        /// The tick of the layout.
        tick: Tick,
    },
    /// The timestamp field reaches past the last Unix millisecond a layout may use.
    #[error(
        "{timestamp_bits} timestamp bits of {tick} ticks from epoch {epoch_ms} ms reach past 2^53 - 1 ms: \
         expected at most {max_timestamp_bits} timestamp bits"
    )]
    SpanTooLong {
        /// The epoch given, in Unix milliseconds.
        epoch_ms: u64,
        /// The tick of the layout.
        tick: Tick,
        /// The timestamp width given.
        timestamp_bits: u8,
        /// The widest timestamp field that fits with this epoch and tick.
        max_timestamp_bits: u8,
    },
}

/// An id that does not fit a layout, or text that is not the canonical form of an id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdError {
    /// The text (or one part of it) is empty.
    #[error("{part} is empty: expected {expected}")]
    Empty {
        /// What was being parsed: `"decimal id"`, `"base-62 id"`, `"friendly id"`, `"slot"`, `"sequence"`.
        part: &'static str,
        /// What the text should look like.
        expected: &'static str,
    },
    /// A character that the form does not allow (a sign, whitespace, a non-ASCII digit, ...).
    #[error("invalid character {found:?} at byte {position} of {part}: expected {expected}")]
    InvalidCharacter {
        /// What was being parsed.
        part: &'static str,
        /// Byte offset of the character in the whole input.
        position: usize,
        /// The character found.
        found: char,
        /// The characters allowed there.
        expected: &'static str,
    },
    /// A decimal number with a leading zero (only `"0"` itself may start with `0`).
    #[error("{part} {found:?} has a leading zero: expected a decimal without leading zeros (\"0\" alone is allowed)")]
    LeadingZero {
        /// What was being parsed.
        part: &'static str,
        /// The number as written.
        found: String,
    },
    /// A number larger than `u64::MAX`.
    #[error("{part} overflows 64 bits: expected at most {max}")]
    Overflow {
        /// What was being parsed.
        part: &'static str,
        /// The largest value the form can hold, in that form.
        max: &'static str,
    },
    /// Text of the wrong length for a fixed-width form.
    #[error("{part} is {found} characters long: expected exactly {expected}")]
    WrongLength {
        /// What was being parsed.
        part: &'static str,
        /// The required length.
        expected: usize,
        /// The length found.
        found: usize,
    },
    /// A friendly id that does not have the three parts `timestamp-slot-sequence`.
    #[error(
        "friendly id has {found} '-'-separated parts: expected 3 (yyyyMMddHHmmssSSS-slot-sequence)"
    )]
    WrongPartCount {
        /// The number of parts found.
        found: usize,
    },
    /// A field value too large for the layout.
    #[error("{part} {value} is out of range: expected at most {max}")]
    OutOfRange {
        /// `"tick"`, `"slot"` or `"sequence"`.
        part: &'static str,
        /// The value given.
        value: u64,
        /// The largest value the layout allows.
        max: u64,
    },
    /// An id with bit 63 set: no cosid id is negative as an `i64`.
    #[error("id {id} has the sign bit set: expected a value below 2^63")]
    SignBitSet {
        /// The id.
        id: u64,
    },
    /// An id with bits set above the layout's total width.
    #[error("id {id} has bits set above the layout's {total_bits} bits: expected a value below 2^{total_bits}")]
    BeyondLayout {
        /// The id.
        id: u64,
        /// The layout's total width.
        total_bits: u8,
    },
    /// A friendly timestamp that is not a real UTC date and time (month 13, February 30, second 60, ...).
    #[error("{found:?} is not a valid date-time: its {component} is out of range; expected a UTC yyyyMMddHHmmssSSS")]
    InvalidDate {
        /// The 17-digit timestamp as written.
        found: String,
        /// The component out of range: `"year"`, `"month"`, `"day"`, `"hour"`, `"minute"`, `"second"`, ...
        component: &'static str,
    },
    /// A friendly timestamp inside a tick rather than at its start (for second ticks: milliseconds not `000`).
    #[error("timestamp {timestamp_ms} ms is not the start of a {tick} tick: expected a multiple of {} ms after the epoch", tick.millis())]
    NotTickBoundary {
        /// The timestamp, in Unix milliseconds.
        timestamp_ms: u64,
        /// The layout's tick.
        tick: Tick,
    },
    /// A friendly timestamp outside the layout's range of ticks.
    #[error(
        "timestamp {timestamp_ms} ms is outside the layout: expected {first_ms}..={last_ms} ms"
    )]
    TimestampOutOfRange {
        /// The timestamp, in Unix milliseconds (0 if it is before 1970).
        timestamp_ms: u64,
        /// The start of the layout's first tick (its epoch).
        first_ms: u64,
        /// The start of the layout's last tick.
        last_ms: u64,
    },
    /// An id whose timestamp is past year 9999, which the friendly form cannot show.
    #[error("timestamp {timestamp_ms} ms is past 9999-12-31T23:59:59.999Z: expected a date with a 4-digit year")]
    NotRepresentable {
        /// The timestamp, in Unix milliseconds.
        timestamp_ms: u64,
    },
}
