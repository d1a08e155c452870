//! The id layout as a namespace record stores it: one line of text that every store keeps as it is.
//!
//! `v1;<epoch_ms>;<tick_ms>;<timestamp_bits>;<slot_bits>;<sequence_bits>`, all in decimal. Two runtimes with
//! different layouts in one namespace can repeat ids (the same number decodes to another time, slot and sequence
//! under each), so the record keeps the whole layout and every store compares it field by field.

use crate::id::{Layout, Tick};

/// The stored text of `layout`.
///
/// ```
/// use cosid::lease::layout_text;
/// assert_eq!(layout_text::encode(&cosid::Layout::millis()), "v1;1577203200000;1;41;10;12");
/// ```
pub fn encode(layout: &Layout) -> String {
    format!(
        "v1;{};{};{};{};{}",
        layout.epoch_ms(),
        layout.tick().millis(),
        layout.timestamp_bits(),
        layout.slot_bits(),
        layout.sequence_bits()
    )
}

/// The layout of a stored text, or why it is not one (for the store's `Corrupt` error).
pub fn decode(text: &str) -> Result<Layout, String> {
    let bad = || {
        format!("layout {text:?} is not v1;epoch_ms;tick_ms;timestamp_bits;slot_bits;sequence_bits")
    };
    let mut parts = text.split(';');
    if parts.next() != Some("v1") {
        return Err(bad());
    }
    let numbers: Vec<u64> = parts
        .map(|p| {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            p.parse().ok()
        })
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    let [epoch_ms, tick_ms, timestamp_bits, slot_bits, sequence_bits] = numbers[..] else {
        return Err(bad());
    };
    let tick = match tick_ms {
        1 => Tick::Millisecond,
        1000 => Tick::Second,
        other => {
            return Err(format!(
                "layout {text:?} has tick {other} ms; expected 1 or 1000"
            ))
        }
    };
    let width = |n: u64| u8::try_from(n).map_err(|_| bad());
    Layout::new(
        epoch_ms,
        tick,
        width(timestamp_bits)?,
        width(slot_bits)?,
        width(sequence_bits)?,
    )
    .map_err(|e| format!("layout {text:?} is not a valid layout: {e}"))
}

/// The fields of a layout by the names a `NamespaceMismatch` error gives them, in the order they are compared.
pub(crate) fn fields(layout: &Layout) -> [(&'static str, u64); 5] {
    [
        ("layout epoch_ms", layout.epoch_ms()),
        ("layout tick_ms", layout.tick().millis()),
        ("layout timestamp_bits", u64::from(layout.timestamp_bits())),
        ("layout slot_bits", u64::from(layout.slot_bits())),
        ("layout sequence_bits", u64::from(layout.sequence_bits())),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_garbage() {
        for l in [Layout::millis(), Layout::seconds(), Layout::js_safe()] {
            assert_eq!(decode(&encode(&l)), Ok(l));
        }
        for bad in [
            "",
            "v2;1;1;41;10;12",
            "v1;1577203200000;1;41;10",
            "v1;1577203200000;1;41;10;12;1",
            "v1;1577203200000;7;41;10;12",
            "v1;1577203200000;1;41;0;12",
            "v1;-1;1;41;10;12",
            "v1;1577203200000;1;300;10;12",
        ] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
    }
}
