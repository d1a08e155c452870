//! Text forms of ids: decimal, base-62 and friendly.

use cosid::{Id, IdError, Layout, Tick};
use proptest::prelude::*;

fn id(v: u64) -> Id {
    Id::from_u64(v)
}

// ---- decimal ----

#[test]
fn decimal_accepts_canonical_forms() {
    assert_eq!(Id::parse_decimal("0"), Ok(id(0)));
    assert_eq!(Id::parse_decimal("7"), Ok(id(7)));
    assert_eq!(Id::parse_decimal("18446744073709551615"), Ok(id(u64::MAX)));
    assert_eq!("123".parse::<Id>(), Ok(id(123)));
    assert_eq!(id(u64::MAX).to_string(), "18446744073709551615");
    assert_eq!(u64::from(id(5)), 5);
    assert_eq!(Id::from(5u64), id(5));
}

#[test]
fn decimal_rejects_non_canonical_forms() {
    let invalid = |s: &str, at: usize, c: char| {
        let err = Id::parse_decimal(s).unwrap_err();
        assert!(
            matches!(err, IdError::InvalidCharacter { position, found, .. } if position == at && found == c),
            "{s:?}: {err:?}"
        );
    };
    invalid("+1", 0, '+');
    invalid("-1", 0, '-');
    invalid(" 1", 0, ' ');
    invalid("1 ", 1, ' ');
    invalid("1\n", 1, '\n');
    invalid("1_000", 1, '_');
    invalid("0x10", 1, 'x');
    invalid("1.0", 1, '.');
    invalid("\u{663}", 0, '\u{663}'); // ARABIC-INDIC DIGIT THREE
    invalid("1\u{FF11}", 1, '\u{FF11}'); // FULLWIDTH DIGIT ONE
    invalid("\u{1D7CF}", 0, '\u{1D7CF}'); // MATHEMATICAL BOLD DIGIT ONE
    invalid("12\u{663}4", 2, '\u{663}');

    assert!(matches!(Id::parse_decimal(""), Err(IdError::Empty { .. })));
    for s in ["00", "01", "007", "018446744073709551615"] {
        assert!(
            matches!(Id::parse_decimal(s), Err(IdError::LeadingZero { .. })),
            "{s:?}"
        );
    }
    for s in [
        "18446744073709551616",
        "18446744073709551620",
        "99999999999999999999",
        "100000000000000000000000",
    ] {
        assert!(
            matches!(Id::parse_decimal(s), Err(IdError::Overflow { .. })),
            "{s:?}"
        );
    }
    assert!("-0".parse::<Id>().is_err());
}

#[test]
fn decimal_errors_name_the_value() {
    let msg = Id::parse_decimal("12a").unwrap_err().to_string();
    assert!(
        msg.contains("'a'") && msg.contains("byte 2") && msg.contains("0-9"),
        "{msg}"
    );
    let msg = Id::parse_decimal("0012").unwrap_err().to_string();
    assert!(msg.contains("\"0012\""), "{msg}");
    let msg = Id::parse_decimal("18446744073709551616")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("18446744073709551615"), "{msg}");
}

// ---- base-62 ----

#[test]
fn base62_known_values() {
    assert_eq!(id(0).to_base62(), "00000000000");
    assert_eq!(id(1).to_base62(), "00000000001");
    assert_eq!(id(10).to_base62(), "0000000000A");
    assert_eq!(id(36).to_base62(), "0000000000a");
    assert_eq!(id(61).to_base62(), "0000000000z");
    assert_eq!(id(62).to_base62(), "00000000010");
    assert_eq!(id(u64::MAX).to_base62(), "LygHa16AHYF");
    assert_eq!(Id::from_base62("LygHa16AHYF"), Ok(id(u64::MAX)));
    assert_eq!(Id::from_base62("00000000000"), Ok(id(0)));
    let mut buf = [0u8; 11];
    id(62).write_base62(&mut buf);
    assert_eq!(&buf, b"00000000010");
}

#[test]
fn base62_rejects_malformed_text() {
    assert!(matches!(Id::from_base62(""), Err(IdError::Empty { .. })));
    for s in ["0000000000", "000000000000", "1", "LygHa16AHYF0"] {
        assert!(
            matches!(Id::from_base62(s), Err(IdError::WrongLength { expected: 11, found, .. }) if found == s.len()),
            "{s:?}"
        );
    }
    // Just past u64::MAX, and the largest 11-digit text.
    for s in ["LygHa16AHYG", "LygHa16AHZ0", "zzzzzzzzzzz", "M0000000000"] {
        assert!(
            matches!(Id::from_base62(s), Err(IdError::Overflow { .. })),
            "{s:?}"
        );
    }
    for (s, at, c) in [
        ("0000000000-", 10, '-'),
        ("+0000000001", 0, '+'),
        (" 0000000001", 0, ' '),
        ("00000_00001", 5, '_'),
        ("0000000000\u{e9}", 10, '\u{e9}'),
        ("\u{663}0000000000", 0, '\u{663}'),
    ] {
        let err = Id::from_base62(s).unwrap_err();
        assert!(
            matches!(err, IdError::InvalidCharacter { position, found, .. } if position == at && found == c),
            "{s:?}: {err:?}"
        );
    }
    let msg = Id::from_base62("zzzzzzzzzzz").unwrap_err().to_string();
    assert!(msg.contains("LygHa16AHYF"), "{msg}");
    let msg = Id::from_base62("0000000000").unwrap_err().to_string();
    assert!(msg.contains("10") && msg.contains("11"), "{msg}");
}

// ---- friendly ----

#[test]
fn friendly_known_values() {
    let m = Layout::millis();
    assert_eq!(
        m.to_friendly(m.compose(0, 0, 0).unwrap()).unwrap(),
        "20191224160000000-0-0"
    );
    let top = m
        .compose(m.max_tick(), m.max_slot(), m.max_sequence())
        .unwrap();
    let text = m.to_friendly(top).unwrap();
    assert_eq!(text, "20890830074735551-1023-4095");
    assert_eq!(m.parse_friendly(&text), Ok(top));

    let s = Layout::seconds();
    let id = s.compose(86_400, 12, 4_000_000).unwrap();
    assert_eq!(s.to_friendly(id).unwrap(), "20191225160000000-12-4000000");
    assert_eq!(s.parse_friendly("20191225160000000-12-4000000"), Ok(id));

    // A leap day is a real date.
    let j = Layout::js_safe();
    let id = j.parse_friendly("20240229235959999-31-127").unwrap();
    assert_eq!(j.to_friendly(id).unwrap(), "20240229235959999-31-127");
}

#[test]
fn friendly_rejects_ids_of_another_layout() {
    let j = Layout::js_safe();
    assert!(matches!(
        j.to_friendly(id(1 << 53)),
        Err(IdError::BeyondLayout { .. })
    ));
    assert!(matches!(
        j.to_friendly(id(u64::MAX)),
        Err(IdError::SignBitSet { .. })
    ));
}

#[test]
fn friendly_past_year_9999_is_not_representable() {
    let l = Layout::new(0, Tick::Millisecond, 52, 5, 6).unwrap();
    let late = l.compose(l.max_tick(), 0, 0).unwrap();
    assert!(matches!(
        l.to_friendly(late),
        Err(IdError::NotRepresentable { .. })
    ));
    let last = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z
    let ok = l.compose(last, 1, 2).unwrap();
    assert_eq!(l.to_friendly(ok).unwrap(), "99991231235959999-1-2");
    assert_eq!(l.parse_friendly("99991231235959999-1-2"), Ok(ok));
    assert!(l.to_friendly(l.compose(last + 1, 0, 0).unwrap()).is_err());
}

#[test]
fn friendly_rejects_malformed_text() {
    let m = Layout::millis();
    let s = Layout::seconds();
    let err = |l: &Layout, text: &str| l.parse_friendly(text).unwrap_err();

    assert!(matches!(err(&m, ""), IdError::Empty { .. }));
    // Structure.
    for text in [
        "20200101000000000",
        "20200101000000000-1",
        "20200101000000000-1-2-3",
        "-20200101000000000-1-2",
    ] {
        assert!(
            matches!(err(&m, text), IdError::WrongPartCount { .. }),
            "{text:?}"
        );
    }
    assert!(matches!(
        err(&m, "20200101000000000--1-2"),
        IdError::WrongPartCount { found: 4 }
    ));
    assert!(matches!(
        err(&m, "20200101000000000--2"),
        IdError::Empty { part: "slot", .. }
    ));
    assert!(matches!(
        err(&m, "20200101000000000-2-"),
        IdError::Empty {
            part: "sequence",
            ..
        }
    ));
    // Widths of the timestamp.
    assert!(matches!(
        err(&m, "2020010100000000-1-2"),
        IdError::WrongLength {
            expected: 17,
            found: 16,
            ..
        }
    ));
    assert!(matches!(
        err(&m, "202001010000000000-1-2"),
        IdError::WrongLength {
            expected: 17,
            found: 18,
            ..
        }
    ));
    // Characters.
    for (text, at, c) in [
        ("+20200101000000000-1-2", 0, '+'),
        ("20200101T00000000-1-2", 8, 'T'),
        ("2020010100000000\u{663}-1-2", 16, '\u{663}'),
        ("20200101000000000-+1-2", 18, '+'),
        ("20200101000000000-1-+2", 20, '+'),
        ("20200101000000000-1-2 ", 21, ' '),
        ("20200101000000000- 1-2", 18, ' '),
        ("20200101000000000-\u{663}-2", 18, '\u{663}'),
        ("20200101000000000-1-\u{FF12}", 20, '\u{FF12}'),
    ] {
        let e = err(&m, text);
        assert!(
            matches!(e, IdError::InvalidCharacter { position, found, .. } if position == at && found == c),
            "{text:?}: {e:?}"
        );
    }
    // A dash inside the timestamp makes a fourth part.
    assert!(matches!(
        err(&m, "2020-0101000000000-1-2"),
        IdError::WrongPartCount { found: 4 }
    ));
    // Canonical decimals for slot and sequence.
    assert!(matches!(
        err(&m, "20200101000000000-01-2"),
        IdError::LeadingZero { part: "slot", .. }
    ));
    assert!(matches!(
        err(&m, "20200101000000000-1-00"),
        IdError::LeadingZero {
            part: "sequence",
            ..
        }
    ));
    assert!(m.parse_friendly("20200101000000000-0-0").is_ok());
    assert!(matches!(
        err(&m, "20200101000000000-1-18446744073709551616"),
        IdError::Overflow {
            part: "sequence",
            ..
        }
    ));
    // Ranges.
    assert_eq!(
        err(&m, "20200101000000000-1024-0"),
        IdError::OutOfRange {
            part: "slot",
            value: 1024,
            max: 1023
        }
    );
    assert_eq!(
        err(&m, "20200101000000000-0-4096"),
        IdError::OutOfRange {
            part: "sequence",
            value: 4096,
            max: 4095
        }
    );
    assert!(matches!(
        err(&m, "20191224155959999-0-0"),
        IdError::TimestampOutOfRange { .. }
    ));
    assert!(matches!(
        err(&m, "19700101000000000-0-0"),
        IdError::TimestampOutOfRange { .. }
    ));
    assert!(matches!(
        err(&m, "00010101000000000-0-0"),
        IdError::TimestampOutOfRange { .. }
    ));
    assert!(matches!(
        err(&m, "20890830074735552-0-0"),
        IdError::TimestampOutOfRange { .. }
    ));
    assert!(m.parse_friendly("20890830074735551-0-0").is_ok());
    // Tick boundaries.
    assert!(matches!(
        err(&s, "20200101000000001-0-0"),
        IdError::NotTickBoundary {
            tick: Tick::Second,
            ..
        }
    ));
    assert!(s.parse_friendly("20200101000000000-0-0").is_ok());
}

#[test]
fn friendly_rejects_impossible_dates() {
    let m = Layout::millis();
    for (text, component) in [
        ("20201301000000000-0-0", "month"),
        ("20200001000000000-0-0", "month"),
        ("20200100000000000-0-0", "day"),
        ("20200132000000000-0-0", "day"),
        ("20230229000000000-0-0", "day"),
        ("21000229000000000-0-0", "day"),
        ("20200431000000000-0-0", "day"),
        ("20200101240000000-0-0", "hour"),
        ("20200101006000000-0-0", "minute"),
        ("20200101000060000-0-0", "second"),
    ] {
        let e = m.parse_friendly(text).unwrap_err();
        match &e {
            IdError::InvalidDate {
                found,
                component: c,
            } => {
                assert_eq!(found, &text[..17]);
                assert_eq!(*c, component, "{text:?}");
            }
            other => panic!("{text:?}: {other:?}"),
        }
        let msg = e.to_string();
        assert!(
            msg.contains(&text[..17]) && msg.contains(component),
            "{msg}"
        );
    }
    assert!(m.parse_friendly("20240229000000000-0-0").is_ok());
    let from_1970 = Layout::new(0, Tick::Second, 40, 1, 1).unwrap();
    assert!(from_1970.parse_friendly("20000229000000000-0-0").is_ok());
    assert!(matches!(
        from_1970.parse_friendly("19000229000000000-0-0"),
        Err(IdError::InvalidDate {
            component: "day",
            ..
        })
    ));
}

// ---- properties ----

fn any_layout() -> impl Strategy<Value = Layout> {
    let tick = prop_oneof![Just(Tick::Millisecond), Just(Tick::Second)];
    (tick, 0u64..(1 << 44), 1u8..=52, 1u8..=20, 1u8..=20).prop_filter_map(
        "invalid layout",
        |(tick, epoch, ts, slot, seq)| {
            let epoch = epoch - epoch % tick.millis();
            (1..=ts)
                .rev()
                .find_map(|ts| Layout::new(epoch, tick, ts, slot, seq).ok())
        },
    )
}

fn layout_and_id() -> impl Strategy<Value = (Layout, Id)> {
    prop_oneof![
        Just(Layout::millis()),
        Just(Layout::seconds()),
        Just(Layout::js_safe()),
        any_layout(),
    ]
    .prop_flat_map(|l| {
        let mask = (1u64 << l.total_bits()) - 1;
        (
            Just(l),
            prop_oneof![Just(0), Just(mask), any::<u64>()]
                .prop_map(move |v| Id::from_u64(v & mask)),
        )
    })
}

proptest! {
    #[test]
    fn decimal_round_trip(v in any::<u64>()) {
        let text = id(v).to_string();
        prop_assert_eq!(Id::parse_decimal(&text), Ok(id(v)));
        prop_assert_eq!(text.parse::<Id>(), Ok(id(v)));
        prop_assert_eq!(&text, &v.to_string());
    }

    #[test]
    fn decimal_rejects_padded_or_signed(v in any::<u64>(), pad in 1usize..4, sign in prop_oneof![Just("+"), Just("-"), Just(" ")]) {
        let text = v.to_string();
        let padded = "0".repeat(pad) + &text;
        let signed = sign.to_owned() + &text;
        let trailing = text.clone() + sign;
        prop_assert!(Id::parse_decimal(&padded).is_err());
        prop_assert!(Id::parse_decimal(&signed).is_err());
        prop_assert!(Id::parse_decimal(&trailing).is_err());
    }

    #[test]
    fn decimal_rejects_every_value_past_u64(extra in 1u128..=(u128::MAX - u128::from(u64::MAX))) {
        let v = u128::from(u64::MAX) + extra;
        let is_overflow = matches!(Id::parse_decimal(&v.to_string()), Err(IdError::Overflow { .. }));
        prop_assert!(is_overflow);
    }

    #[test]
    fn decimal_matches_std_on_any_text(s in "[-+ 0-9a\u{663}]{0,22}") {
        // Whatever std reads as a u64 with its canonical spelling, we read the same; the rest we refuse.
        let ours = Id::parse_decimal(&s).ok().map(Id::as_u64);
        let canonical = s.parse::<u64>().ok().filter(|v| v.to_string() == s);
        prop_assert_eq!(ours, canonical);
    }

    #[test]
    fn base62_round_trip(v in any::<u64>()) {
        let text = id(v).to_base62();
        prop_assert_eq!(text.len(), 11);
        prop_assert!(text.bytes().all(|b| b.is_ascii_alphanumeric()));
        prop_assert_eq!(Id::from_base62(&text), Ok(id(v)));
        let mut buf = [0u8; 11];
        id(v).write_base62(&mut buf);
        prop_assert_eq!(&buf[..], text.as_bytes());
    }

    #[test]
    fn base62_sorts_like_the_number(a in any::<u64>(), b in any::<u64>()) {
        prop_assert_eq!(id(a).to_base62().cmp(&id(b).to_base62()), a.cmp(&b));
    }

    #[test]
    fn base62_accepts_exactly_11_digits_up_to_u64_max(s in "[0-9A-Za-z]{0,13}") {
        let value = s.chars().try_fold(0u128, |acc, c| {
            let d = c.to_digit(36).map(|d| if c.is_ascii_lowercase() { d + 26 } else { d })?;
            acc.checked_mul(62)?.checked_add(u128::from(d))
        });
        let expected = value
            .filter(|_| s.len() == 11)
            .and_then(|v| u64::try_from(v).ok());
        prop_assert_eq!(Id::from_base62(&s).ok().map(Id::as_u64), expected);
    }

    #[test]
    fn friendly_round_trip((layout, id) in layout_and_id()) {
        let parts = layout.decompose(id).unwrap();
        match layout.to_friendly(id) {
            Ok(text) => {
                prop_assert_eq!(layout.parse_friendly(&text), Ok(id));
                let mut fields = text.split('-');
                prop_assert_eq!(fields.next().map(str::len), Some(17));
                let (slot, sequence) = (parts.slot.to_string(), parts.sequence.to_string());
                prop_assert_eq!(fields.next(), Some(slot.as_str()));
                prop_assert_eq!(fields.next(), Some(sequence.as_str()));
            }
            Err(e) => {
                prop_assert!(parts.timestamp_ms > 253_402_300_799_999, "{:?}", e);
            }
        }
    }

    #[test]
    fn friendly_rejects_any_one_character_change((layout, id) in layout_and_id(), at in any::<prop::sample::Index>(), c in "[^0-9]") {
        // Replacing a digit with a non-digit, or a '-' with anything else, must never parse to the same id.
        if let Ok(text) = layout.to_friendly(id) {
            let i = at.index(text.len());
            let mut changed: String = text.clone();
            changed.replace_range(i..=i, &c);
            if changed != text {
                prop_assert_ne!(layout.parse_friendly(&changed), Ok(id));
            }
        }
    }
}
