//! The friendly text form of an id, `yyyyMMddHHmmssSSS-slot-sequence`, which needs a layout to read or write.

use std::fmt::Write as _;

use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time};

use super::error::IdError;
use super::layout::Layout;
use super::text::{parse_canonical_u64, Id};

/// Digits in the timestamp part: `yyyyMMddHHmmssSSS`.
const TIMESTAMP_LEN: usize = 17;
const PART: &str = "friendly id";

impl Layout {
    /// The friendly form of an id: the start of its tick as a UTC `yyyyMMddHHmmssSSS`, then `-slot-sequence` in
    /// decimal without padding.
    ///
    /// # Errors
    ///
    /// As [`Layout::decompose`] for an id the layout did not make; [`IdError::NotRepresentable`] for a timestamp
    /// past year 9999 (possible only with very wide custom timestamp fields).
    ///
    /// ```
    /// use cosid::Layout;
    /// let l = Layout::millis();
    /// let id = l.compose(1_234, 5, 67)?;
    /// assert_eq!(l.to_friendly(id)?, "20191224160001234-5-67");
    /// assert_eq!(l.parse_friendly("20191224160001234-5-67")?, id);
    /// # Ok::<(), cosid::IdError>(())
    /// ```
    pub fn to_friendly(&self, id: Id) -> Result<String, IdError> {
        let parts = self.decompose(id)?;
        let ts = parts.timestamp_ms;
        // The year must have four digits. Checked here, not left to `time`: with its `large-dates` feature (which
        // another crate of the build may turn on) it represents years past 9999.
        let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ts) * 1_000_000)
            .ok()
            .filter(|at| (0..=9999).contains(&at.year()))
            .ok_or(IdError::NotRepresentable { timestamp_ms: ts })?;
        let mut out = String::with_capacity(TIMESTAMP_LEN + 2 + 2 * 20);
        // Writing to a String cannot fail.
        let _ = write!(
            out,
            "{:04}{:02}{:02}{:02}{:02}{:02}{:03}-{}-{}",
            at.year(),
            u8::from(at.month()),
            at.day(),
            at.hour(),
            at.minute(),
            at.second(),
            at.millisecond(),
            parts.slot,
            parts.sequence,
        );
        Ok(out)
    }

    /// Reads the friendly form strictly, accepting only what [`Layout::to_friendly`] writes: a 17-digit UTC
    /// timestamp that is a real date-time and starts a tick of this layout (for second ticks the milliseconds
    /// are `000`), then a slot and a sequence in canonical decimal (no sign, no leading zeros, `0` allowed),
    /// each within the layout's range. ASCII digits only; no whitespace.
    ///
    /// # Errors
    ///
    /// [`IdError::Empty`], [`IdError::WrongPartCount`], [`IdError::InvalidCharacter`], [`IdError::WrongLength`]
    /// (timestamp not 17 digits), [`IdError::InvalidDate`], [`IdError::LeadingZero`], [`IdError::Overflow`],
    /// [`IdError::TimestampOutOfRange`], [`IdError::NotTickBoundary`], [`IdError::OutOfRange`] (slot or sequence).
    ///
    /// ```
    /// use cosid::{IdError, Layout};
    /// let l = Layout::seconds();
    /// let id = l.parse_friendly("20240229120000000-3-0")?;
    /// assert_eq!(l.to_friendly(id)?, "20240229120000000-3-0");
    /// assert!(matches!(l.parse_friendly("20240229120000500-3-0"), Err(IdError::NotTickBoundary { .. })));
    /// assert!(matches!(l.parse_friendly("20231301120000000-3-0"), Err(IdError::InvalidDate { .. })));
    /// assert!(matches!(l.parse_friendly("20240229120000000-03-0"), Err(IdError::LeadingZero { .. })));
    /// # Ok::<(), IdError>(())
    /// ```
    pub fn parse_friendly(&self, s: &str) -> Result<Id, IdError> {
        if s.is_empty() {
            return Err(IdError::Empty {
                part: PART,
                expected: "yyyyMMddHHmmssSSS-slot-sequence",
            });
        }
        let mut fields = s.split('-');
        let (Some(stamp), Some(slot), Some(sequence), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(IdError::WrongPartCount {
                found: s.split('-').count(),
            });
        };
        let timestamp = parse_timestamp(stamp)?;
        let slot_offset = stamp.len() + 1;
        let sequence_offset = slot_offset + slot.len() + 1;
        let slot = parse_canonical_u64(slot, "slot", slot_offset)?;
        let sequence = parse_canonical_u64(sequence, "sequence", sequence_offset)?;

        let first_ms = self.epoch_ms();
        let last_ms = self.tick_start_ms(self.max_tick());
        // Before 1970 is out of range for every layout, even one whose epoch is 0.
        let timestamp_ms = u64::try_from(timestamp).unwrap_or(0);
        if timestamp < 0 || timestamp_ms < first_ms || timestamp_ms > last_ms {
            return Err(IdError::TimestampOutOfRange {
                timestamp_ms,
                first_ms,
                last_ms,
            });
        }
        let since = timestamp_ms - first_ms;
        let tick_ms = self.tick().millis();
        if !since.is_multiple_of(tick_ms) {
            return Err(IdError::NotTickBoundary {
                timestamp_ms,
                tick: self.tick(),
            });
        }
        self.compose(since / tick_ms, slot, sequence)
    }
}

/// Reads `yyyyMMddHHmmssSSS` as UTC into Unix milliseconds (negative before 1970).
fn parse_timestamp(stamp: &str) -> Result<i128, IdError> {
    if let Some((position, found)) = stamp.char_indices().find(|&(_, c)| !c.is_ascii_digit()) {
        return Err(IdError::InvalidCharacter {
            part: PART,
            position,
            found,
            expected: "an ASCII digit 0-9 in the timestamp yyyyMMddHHmmssSSS",
        });
    }
    // All ASCII digits from here, so bytes are characters.
    if stamp.len() != TIMESTAMP_LEN {
        return Err(IdError::WrongLength {
            part: "friendly timestamp",
            expected: TIMESTAMP_LEN,
            found: stamp.len(),
        });
    }
    let b = stamp.as_bytes();
    let digit = |i: usize| b[i] - b'0';
    let two = |i: usize| digit(i) * 10 + digit(i + 1);
    let year = i32::from(two(0)) * 100 + i32::from(two(2));
    let milli = u16::from(digit(14)) * 100 + u16::from(two(15));
    let invalid = |e: time::error::ComponentRange| IdError::InvalidDate {
        found: stamp.to_owned(),
        component: e.name(),
    };
    let month = Month::try_from(two(4)).map_err(invalid)?;
    let date = Date::from_calendar_date(year, month, two(6)).map_err(invalid)?;
    let time = Time::from_hms_milli(two(8), two(10), two(12), milli).map_err(invalid)?;
    let nanos = PrimitiveDateTime::new(date, time)
        .assume_utc()
        .unix_timestamp_nanos();
    Ok(nanos.div_euclid(1_000_000))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::Tick;

    /// Found by the `id_text` fuzz target: dates before 1970 read as 1970-01-01 under an epoch-0 layout.
    #[test]
    fn dates_before_1970_are_out_of_range_even_for_an_epoch_0_layout() {
        let l = Layout::new(0, Tick::Millisecond, 43, 10, 10).unwrap();
        for text in ["19300101000000000-0-0", "19691231235959999-0-0"] {
            assert!(
                matches!(
                    l.parse_friendly(text),
                    Err(IdError::TimestampOutOfRange {
                        timestamp_ms: 0,
                        ..
                    })
                ),
                "{text}: {:?}",
                l.parse_friendly(text)
            );
        }
        assert_eq!(
            l.parse_friendly("19700101000000000-0-0"),
            Ok(Id::from_u64(0))
        );
    }
}
