//! The id newtype and its layout-free text forms: canonical decimal and fixed-width base-62.

use std::fmt;
use std::str::FromStr;

use super::error::IdError;

/// A cosid id: a 64-bit value whose fields a [`Layout`](super::Layout) gives meaning to.
///
/// `Display` writes it in decimal; `FromStr` reads the canonical decimal form only (see [`Id::parse_decimal`]).
/// Ids order as their integers do, which is time order for ids of one layout.
///
/// ```
/// use cosid::Id;
/// let id: Id = "123456789".parse()?;
/// assert_eq!(id.to_string(), "123456789");
/// assert_eq!(u64::from(id), 123_456_789);
/// # Ok::<(), cosid::IdError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Id(u64);

/// Digits of the base-62 form, in ASCII order so that the fixed-width text sorts like the number.
const BASE62_ALPHABET: &[u8; 62] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// Length of the base-62 form: 62^11 > 2^64 > 62^10.
const BASE62_LEN: usize = 11;
/// `u64::MAX` in base 62.
const BASE62_MAX: &str = "LygHa16AHYF";
const BASE62_EXPECTED: &str = "a base-62 digit (0-9, A-Z, a-z)";
const DECIMAL_EXPECTED: &str = "an ASCII digit 0-9";

impl Id {
    /// The id with integer value `v`.
    #[inline]
    #[must_use]
    pub const fn from_u64(v: u64) -> Id {
        Id(v)
    }

    /// The integer value of the id.
    #[inline]
    #[must_use]
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// The base-62 form: exactly 11 characters of `0-9A-Za-z`, zero-padded, so that the text sorts like the id.
    ///
    /// ```
    /// use cosid::Id;
    /// assert_eq!(Id::from_u64(0).to_base62(), "00000000000");
    /// assert_eq!(Id::from_u64(61).to_base62(), "0000000000z");
    /// assert_eq!(Id::from_u64(u64::MAX).to_base62(), "LygHa16AHYF");
    /// assert_eq!(Id::from_base62("0000000000z")?, Id::from_u64(61));
    /// # Ok::<(), cosid::IdError>(())
    /// ```
    #[must_use]
    pub fn to_base62(self) -> String {
        let mut out = [0u8; BASE62_LEN];
        self.write_base62(&mut out);
        out.iter().map(|&b| char::from(b)).collect()
    }

    /// Writes the base-62 form into `out` without allocating; every byte written is ASCII.
    #[inline]
    pub fn write_base62(self, out: &mut [u8; 11]) {
        let mut v = self.0;
        for slot in out.iter_mut().rev() {
            *slot = BASE62_ALPHABET[(v % 62) as usize];
            v /= 62;
        }
    }

    /// Reads the base-62 form: exactly 11 characters of `0-9A-Za-z`, at most `LygHa16AHYF` (`u64::MAX`).
    ///
    /// # Errors
    ///
    /// [`IdError::Empty`], [`IdError::InvalidCharacter`] (anything outside the alphabet, checked first),
    /// [`IdError::WrongLength`], [`IdError::Overflow`].
    ///
    /// ```
    /// use cosid::{Id, IdError};
    /// assert_eq!(Id::from_base62("00000000010")?.as_u64(), 62);
    /// assert!(matches!(Id::from_base62("0000000010"), Err(IdError::WrongLength { .. })));
    /// assert!(matches!(Id::from_base62("zzzzzzzzzzz"), Err(IdError::Overflow { .. })));
    /// # Ok::<(), IdError>(())
    /// ```
    pub fn from_base62(s: &str) -> Result<Id, IdError> {
        const PART: &str = "base-62 id";
        if s.is_empty() {
            return Err(IdError::Empty {
                part: PART,
                expected: "11 base-62 digits (0-9, A-Z, a-z)",
            });
        }
        if let Some((position, found)) = s.char_indices().find(|&(_, c)| base62_digit(c).is_none())
        {
            return Err(IdError::InvalidCharacter {
                part: PART,
                position,
                found,
                expected: BASE62_EXPECTED,
            });
        }
        // All ASCII from here, so bytes are characters.
        if s.len() != BASE62_LEN {
            return Err(IdError::WrongLength {
                part: PART,
                expected: BASE62_LEN,
                found: s.len(),
            });
        }
        let mut v: u64 = 0;
        for c in s.chars() {
            let d = base62_digit(c).unwrap_or(0);
            v = v
                .checked_mul(62)
                .and_then(|v| v.checked_add(d))
                .ok_or(IdError::Overflow {
                    part: PART,
                    max: BASE62_MAX,
                })?;
        }
        Ok(Id(v))
    }

    /// Reads the canonical decimal form, as [`Display`](fmt::Display) writes it: ASCII digits only, no sign, no
    /// whitespace, no leading zeros (`"0"` itself is fine), at most `18446744073709551615`.
    ///
    /// # Errors
    ///
    /// [`IdError::Empty`], [`IdError::InvalidCharacter`] (a sign, a space, `'٣'`, ...: checked first),
    /// [`IdError::LeadingZero`], [`IdError::Overflow`].
    ///
    /// ```
    /// use cosid::{Id, IdError};
    /// assert_eq!(Id::parse_decimal("42")?, Id::from_u64(42));
    /// assert!(matches!(Id::parse_decimal("+42"), Err(IdError::InvalidCharacter { found: '+', .. })));
    /// assert!(matches!(Id::parse_decimal("042"), Err(IdError::LeadingZero { .. })));
    /// assert!(matches!(Id::parse_decimal("18446744073709551616"), Err(IdError::Overflow { .. })));
    /// # Ok::<(), IdError>(())
    /// ```
    pub fn parse_decimal(s: &str) -> Result<Id, IdError> {
        parse_canonical_u64(s, "decimal id", 0).map(Id)
    }
}

/// Reads a canonical unsigned decimal; `offset` is where `s` starts in the whole input, for error positions.
pub(crate) fn parse_canonical_u64(
    s: &str,
    part: &'static str,
    offset: usize,
) -> Result<u64, IdError> {
    if s.is_empty() {
        return Err(IdError::Empty {
            part,
            expected: "a decimal number without sign or leading zeros",
        });
    }
    if let Some((position, found)) = s.char_indices().find(|&(_, c)| !c.is_ascii_digit()) {
        return Err(IdError::InvalidCharacter {
            part,
            position: offset + position,
            found,
            expected: DECIMAL_EXPECTED,
        });
    }
    if s.len() > 1 && s.starts_with('0') {
        return Err(IdError::LeadingZero {
            part,
            found: s.to_owned(),
        });
    }
    let mut v: u64 = 0;
    for b in s.bytes() {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or(IdError::Overflow {
                part,
                max: "18446744073709551615",
            })?;
    }
    Ok(v)
}

/// The value of a base-62 digit, or `None` for any other character.
#[inline]
fn base62_digit(c: char) -> Option<u64> {
    let v = match c {
        '0'..='9' => c as u32 - '0' as u32,
        'A'..='Z' => c as u32 - 'A' as u32 + 10,
        'a'..='z' => c as u32 - 'a' as u32 + 36,
        _ => return None,
    };
    Some(u64::from(v))
}

impl fmt::Display for Id {
    /// The decimal form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl FromStr for Id {
    type Err = IdError;

    /// Strict decimal, see [`Id::parse_decimal`].
    fn from_str(s: &str) -> Result<Id, IdError> {
        Id::parse_decimal(s)
    }
}

impl From<u64> for Id {
    fn from(v: u64) -> Id {
        Id(v)
    }
}

impl From<Id> for u64 {
    fn from(id: Id) -> u64 {
        id.0
    }
}
