//! The bit layout of an id: epoch, tick length and field widths, and the pure compose/decompose on it.

use std::fmt;

use super::error::{IdError, LayoutError};
use super::text::Id;

/// Tick length of a layout: the unit of the timestamp field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tick {
    /// One tick per millisecond.
    Millisecond,
    /// One tick per second (1000 ms).
    Second,
}

impl Tick {
    /// Length of one tick in milliseconds: 1 or 1000.
    ///
    /// ```
    /// use cosid::Tick;
    /// assert_eq!(Tick::Millisecond.millis(), 1);
    /// assert_eq!(Tick::Second.millis(), 1000);
    /// ```
    #[inline]
    #[must_use]
    pub const fn millis(self) -> u64 {
        match self {
            Tick::Millisecond => 1,
            Tick::Second => 1000,
        }
    }
}

impl fmt::Display for Tick {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Tick::Millisecond => "millisecond",
            Tick::Second => "second",
        })
    }
}

/// The fields of an id, as [`Layout::decompose`] returns them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// Ticks since the layout's epoch.
    pub tick: u64,
    /// Unix milliseconds at the start of the tick.
    pub timestamp_ms: u64,
    /// The slot that issued the id.
    pub slot: u64,
    /// The sequence number within the tick.
    pub sequence: u64,
}

/// How an id's 63 usable bits are split: `0 | timestamp | slot | sequence`, from the most significant bit down,
/// with the timestamp counted in ticks since an epoch.
///
/// A `Layout` is always valid: [`Layout::new`] checks it, and the presets are valid by construction. Its
/// invariants, which the rest of the crate relies on:
///
/// - every width is at least 1 bit and the total at most 63, so the sign bit of every id is 0;
/// - the epoch is a multiple of the tick length, so for second ticks every tick starts on a whole Unix second;
/// - the end of the last tick is at most [`Layout::MAX_UNIX_MS`] (2^53 - 1): every timestamp a layout can
///   produce fits `u64`, `i64` and a JavaScript number exactly, and no arithmetic on it overflows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    epoch_ms: u64,
    tick: Tick,
    timestamp_bits: u8,
    slot_bits: u8,
    sequence_bits: u8,
}

impl Default for Layout {
    /// The millisecond layout, [`Layout::millis`].
    fn default() -> Self {
        Layout::millis()
    }
}

impl Layout {
    /// The default epoch, 2019-12-24T16:00:00Z, in Unix milliseconds (the epoch of `CosId`).
    pub const DEFAULT_EPOCH_MS: u64 = 1_577_203_200_000;
    /// The widest a layout may be: 63 bits, keeping the sign bit 0.
    pub const MAX_TOTAL_BITS: u8 = 63;
    /// The last Unix millisecond any layout may reach, 2^53 - 1 (about year 287396).
    pub const MAX_UNIX_MS: u64 = (1 << 53) - 1;

    /// The default layout: 41 bits of millisecond ticks (about 69 years from 2019-12-24T16:00:00Z, to 2089),
    /// 10 bits of slot, 12 bits of sequence.
    ///
    /// ```
    /// let l = cosid::Layout::millis();
    /// assert_eq!((l.timestamp_bits(), l.slot_bits(), l.sequence_bits()), (41, 10, 12));
    /// assert_eq!(l.cap_per_second(), 4_096_000);
    /// ```
    #[must_use]
    pub const fn millis() -> Layout {
        Layout {
            epoch_ms: Self::DEFAULT_EPOCH_MS,
            tick: Tick::Millisecond,
            timestamp_bits: 41,
            slot_bits: 10,
            sequence_bits: 12,
        }
    }

    /// A second-tick layout: 31 bits of second ticks (about 68 years), 10 bits of slot, 22 bits of sequence,
    /// same epoch as [`Layout::millis`].
    #[must_use]
    pub const fn seconds() -> Layout {
        Layout {
            epoch_ms: Self::DEFAULT_EPOCH_MS,
            tick: Tick::Second,
            timestamp_bits: 31,
            slot_bits: 10,
            sequence_bits: 22,
        }
    }

    /// A JavaScript-safe layout, 53 bits in all so that every id is an exact JavaScript number: 41 bits of
    /// millisecond ticks, 5 bits of slot (32 slots), 7 bits of sequence (128 ids per millisecond per slot),
    /// same epoch as [`Layout::millis`].
    ///
    /// ```
    /// let l = cosid::Layout::js_safe();
    /// assert_eq!(l.total_bits(), 53);
    /// ```
    #[must_use]
    pub const fn js_safe() -> Layout {
        Layout {
            epoch_ms: Self::DEFAULT_EPOCH_MS,
            tick: Tick::Millisecond,
            timestamp_bits: 41,
            slot_bits: 5,
            sequence_bits: 7,
        }
    }

    /// Builds a custom layout and checks it.
    ///
    /// # Errors
    ///
    /// A width of 0 ([`LayoutError::ZeroWidth`]), more than 63 bits in all ([`LayoutError::TooWide`]),
    /// an epoch past [`Layout::MAX_UNIX_MS`] ([`LayoutError::EpochOutOfRange`]) or not on a tick boundary
    /// ([`LayoutError::EpochNotTickAligned`]), and a timestamp field whose last tick ends past
    /// [`Layout::MAX_UNIX_MS`] ([`LayoutError::SpanTooLong`]).
    ///
    /// ```
    /// use cosid::{Layout, LayoutError, Tick};
    /// let l = Layout::new(1_700_000_000_000, Tick::Second, 32, 8, 20)?;
    /// assert_eq!(l.max_slot(), 255);
    /// assert!(matches!(
    ///     Layout::new(0, Tick::Millisecond, 41, 0, 12),
    ///     Err(LayoutError::ZeroWidth { field: "slot" })
    /// ));
    /// # Ok::<(), LayoutError>(())
    /// ```
    pub const fn new(
        epoch_ms: u64,
        tick: Tick,
        timestamp_bits: u8,
        slot_bits: u8,
        sequence_bits: u8,
    ) -> Result<Layout, LayoutError> {
        if timestamp_bits == 0 {
            return Err(LayoutError::ZeroWidth { field: "timestamp" });
        }
        if slot_bits == 0 {
            return Err(LayoutError::ZeroWidth { field: "slot" });
        }
        if sequence_bits == 0 {
            return Err(LayoutError::ZeroWidth { field: "sequence" });
        }
        let total = timestamp_bits as u32 + slot_bits as u32 + sequence_bits as u32;
        if total > Self::MAX_TOTAL_BITS as u32 {
            return Err(LayoutError::TooWide {
                total,
                max: Self::MAX_TOTAL_BITS as u32,
            });
        }
        if epoch_ms > Self::MAX_UNIX_MS {
            return Err(LayoutError::EpochOutOfRange {
                epoch_ms,
                max: Self::MAX_UNIX_MS,
            });
        }
        if !epoch_ms.is_multiple_of(tick.millis()) {
            return Err(LayoutError::EpochNotTickAligned { epoch_ms, tick });
        }
        // Each width is at most 61 here, so the span fits u128 with room to spare.
        if !span_fits(epoch_ms, tick, timestamp_bits) {
            let mut max_timestamp_bits = timestamp_bits;
            while max_timestamp_bits > 0 && !span_fits(epoch_ms, tick, max_timestamp_bits) {
                max_timestamp_bits -= 1;
            }
            return Err(LayoutError::SpanTooLong {
                epoch_ms,
                tick,
                timestamp_bits,
                max_timestamp_bits,
            });
        }
        Ok(Layout {
            epoch_ms,
            tick,
            timestamp_bits,
            slot_bits,
            sequence_bits,
        })
    }

    /// The epoch: Unix milliseconds at the start of tick 0.
    #[inline]
    #[must_use]
    pub const fn epoch_ms(&self) -> u64 {
        self.epoch_ms
    }

    /// The tick length.
    #[inline]
    #[must_use]
    pub const fn tick(&self) -> Tick {
        self.tick
    }

    /// Width of the timestamp field in bits.
    #[inline]
    #[must_use]
    pub const fn timestamp_bits(&self) -> u8 {
        self.timestamp_bits
    }

    /// Width of the slot field in bits.
    #[inline]
    #[must_use]
    pub const fn slot_bits(&self) -> u8 {
        self.slot_bits
    }

    /// Width of the sequence field in bits.
    #[inline]
    #[must_use]
    pub const fn sequence_bits(&self) -> u8 {
        self.sequence_bits
    }

    /// Width of the whole id in bits (at most 63): every id of the layout is below `2^total_bits`.
    #[inline]
    #[must_use]
    pub const fn total_bits(&self) -> u8 {
        self.timestamp_bits + self.slot_bits + self.sequence_bits
    }

    /// The largest slot: `2^slot_bits - 1`.
    #[inline]
    #[must_use]
    pub const fn max_slot(&self) -> u64 {
        mask(self.slot_bits)
    }

    /// The largest sequence number: `2^sequence_bits - 1`.
    #[inline]
    #[must_use]
    pub const fn max_sequence(&self) -> u64 {
        mask(self.sequence_bits)
    }

    /// The largest tick: `2^timestamp_bits - 1`.
    #[inline]
    #[must_use]
    pub const fn max_tick(&self) -> u64 {
        mask(self.timestamp_bits)
    }

    /// The most ids one slot can issue in one second: `(max_sequence + 1) * ticks per second`
    /// (saturating at `u64::MAX`).
    ///
    /// ```
    /// assert_eq!(cosid::Layout::millis().cap_per_second(), 4_096_000);
    /// assert_eq!(cosid::Layout::seconds().cap_per_second(), 4_194_304);
    /// ```
    #[must_use]
    pub fn cap_per_second(&self) -> u64 {
        (self.max_sequence() + 1).saturating_mul(1000 / self.tick.millis())
    }

    /// The tick that Unix millisecond `unix_ms` falls in (floor division), or `None` if it is before the epoch
    /// or past the last tick.
    ///
    /// ```
    /// let l = cosid::Layout::seconds();
    /// assert_eq!(l.tick_at(l.epoch_ms() + 1999), Some(1));
    /// assert_eq!(l.tick_at(l.epoch_ms() - 1), None);
    /// ```
    #[inline]
    #[must_use]
    pub fn tick_at(&self, unix_ms: u64) -> Option<u64> {
        let since = unix_ms.checked_sub(self.epoch_ms)?;
        // Division by the constant 1000 compiles to a multiply; the millisecond case needs none.
        let tick = match self.tick {
            Tick::Millisecond => since,
            Tick::Second => since / 1000,
        };
        if tick > self.max_tick() {
            None
        } else {
            Some(tick)
        }
    }

    /// First Unix millisecond of `tick`. Exact for `tick <= max_tick()`; larger ticks saturate at `u64::MAX`.
    #[inline]
    #[must_use]
    pub fn tick_start_ms(&self, tick: u64) -> u64 {
        tick.saturating_mul(self.tick.millis())
            .saturating_add(self.epoch_ms)
    }

    /// Last Unix millisecond of `tick` (`tick_start_ms(tick) + tick.millis() - 1`). Exact for
    /// `tick <= max_tick()`; larger ticks saturate at `u64::MAX`.
    #[inline]
    #[must_use]
    pub fn tick_end_ms(&self, tick: u64) -> u64 {
        self.tick_start_ms(tick)
            .saturating_add(self.tick.millis() - 1)
    }

    /// Builds an id from its fields, checking each against the layout.
    ///
    /// # Errors
    ///
    /// [`IdError::OutOfRange`] naming the field if `tick > max_tick()`, `slot > max_slot()` or
    /// `sequence > max_sequence()`.
    ///
    /// ```
    /// use cosid::{Layout, Parts};
    /// let l = Layout::millis();
    /// let id = l.compose(1_000, 3, 7)?;
    /// assert_eq!(id.as_u64(), (1_000 << 22) | (3 << 12) | 7);
    /// assert_eq!(
    ///     l.decompose(id)?,
    ///     Parts { tick: 1_000, timestamp_ms: l.epoch_ms() + 1_000, slot: 3, sequence: 7 }
    /// );
    /// assert!(l.compose(0, 1024, 0).is_err());
    /// # Ok::<(), cosid::IdError>(())
    /// ```
    #[inline]
    pub fn compose(&self, tick: u64, slot: u64, sequence: u64) -> Result<Id, IdError> {
        check_range("tick", tick, self.max_tick())?;
        check_range("slot", slot, self.max_slot())?;
        check_range("sequence", sequence, self.max_sequence())?;
        Ok(self.compose_unchecked(tick, slot, sequence))
    }

    /// Builds an id from fields the caller has already checked, for the hot path.
    ///
    /// The caller guarantees `tick <= max_tick()`, `slot <= max_slot()` and `sequence <= max_sequence()`;
    /// debug builds assert it. Out-of-range fields give a wrong id (bits spill into the next field), never
    /// undefined behaviour.
    #[inline]
    #[must_use]
    pub fn compose_unchecked(&self, tick: u64, slot: u64, sequence: u64) -> Id {
        debug_assert!(tick <= self.max_tick(), "tick out of range");
        debug_assert!(slot <= self.max_slot(), "slot out of range");
        debug_assert!(sequence <= self.max_sequence(), "sequence out of range");
        Id::from_u64(
            (tick << (self.slot_bits + self.sequence_bits))
                | (slot << self.sequence_bits)
                | sequence,
        )
    }

    /// Splits an id into its fields.
    ///
    /// # Errors
    ///
    /// [`IdError::SignBitSet`] if bit 63 is set and [`IdError::BeyondLayout`] if any bit at or above
    /// `total_bits()` is set: such a value was not made by this layout.
    ///
    /// ```
    /// use cosid::{Id, Layout};
    /// let l = Layout::millis();
    /// let p = l.decompose(Id::from_u64(7_000_000_000_000_000))?;
    /// assert_eq!(l.compose(p.tick, p.slot, p.sequence)?.as_u64(), 7_000_000_000_000_000);
    /// assert!(l.decompose(Id::from_u64(u64::MAX)).is_err());
    /// # Ok::<(), cosid::IdError>(())
    /// ```
    #[inline]
    pub fn decompose(&self, id: Id) -> Result<Parts, IdError> {
        let v = id.as_u64();
        if v >> 63 != 0 {
            return Err(IdError::SignBitSet { id: v });
        }
        let total = self.total_bits();
        if v >> total != 0 {
            return Err(IdError::BeyondLayout {
                id: v,
                total_bits: total,
            });
        }
        let tick = v >> (self.slot_bits + self.sequence_bits);
        Ok(Parts {
            tick,
            timestamp_ms: self.tick_start_ms(tick),
            slot: (v >> self.sequence_bits) & self.max_slot(),
            sequence: v & self.max_sequence(),
        })
    }
}

/// `2^bits - 1`, for `bits <= 63`.
#[inline]
const fn mask(bits: u8) -> u64 {
    (1u64 << bits) - 1
}

/// Whether the last tick of a `timestamp_bits` wide field ends at or before [`Layout::MAX_UNIX_MS`].
const fn span_fits(epoch_ms: u64, tick: Tick, timestamp_bits: u8) -> bool {
    let ticks = 1u128 << timestamp_bits;
    let end = epoch_ms as u128 + ticks * tick.millis() as u128 - 1;
    end <= Layout::MAX_UNIX_MS as u128
}

#[inline]
fn check_range(part: &'static str, value: u64, max: u64) -> Result<(), IdError> {
    if value > max {
        Err(IdError::OutOfRange { part, value, max })
    } else {
        Ok(())
    }
}
