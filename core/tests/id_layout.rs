//! Layouts, compose and decompose.

use cosid::{Id, IdError, Layout, LayoutError, Parts, Tick};
use proptest::prelude::*;

const EPOCH: u64 = 1_577_203_200_000;

#[test]
fn presets_are_what_they_say() {
    let m = Layout::millis();
    assert_eq!(Layout::default(), m);
    assert_eq!(Layout::new(EPOCH, Tick::Millisecond, 41, 10, 12), Ok(m));
    assert_eq!(m.epoch_ms(), EPOCH);
    assert_eq!(m.tick(), Tick::Millisecond);
    assert_eq!(m.total_bits(), 63);
    assert_eq!(m.max_slot(), 1023);
    assert_eq!(m.max_sequence(), 4095);
    assert_eq!(m.max_tick(), (1 << 41) - 1);
    assert_eq!(m.cap_per_second(), 4_096_000);

    let s = Layout::seconds();
    assert_eq!(Layout::new(EPOCH, Tick::Second, 31, 10, 22), Ok(s));
    assert_eq!(s.total_bits(), 63);
    assert_eq!(s.max_sequence(), (1 << 22) - 1);
    assert_eq!(s.cap_per_second(), 1 << 22);

    let j = Layout::js_safe();
    assert_eq!(Layout::new(EPOCH, Tick::Millisecond, 41, 5, 7), Ok(j));
    assert_eq!(j.total_bits(), 53);
    assert_eq!(j.max_slot(), 31);
    assert_eq!(j.cap_per_second(), 128_000);
    // Its largest id is an exact JavaScript number.
    let top = j
        .compose(j.max_tick(), j.max_slot(), j.max_sequence())
        .unwrap();
    assert_eq!(top.as_u64(), (1 << 53) - 1);
}

#[test]
fn tick_lengths() {
    assert_eq!(Tick::Millisecond.millis(), 1);
    assert_eq!(Tick::Second.millis(), 1000);
    assert_eq!(Tick::Second.to_string(), "second");
}

#[test]
fn new_rejects_zero_widths() {
    for (ts, slot, seq, field) in [
        (0, 10, 12, "timestamp"),
        (41, 0, 12, "slot"),
        (41, 10, 0, "sequence"),
    ] {
        let err = Layout::new(EPOCH, Tick::Millisecond, ts, slot, seq).unwrap_err();
        assert_eq!(err, LayoutError::ZeroWidth { field });
        assert!(err.to_string().contains(field), "{err}");
    }
}

#[test]
fn new_rejects_more_than_63_bits() {
    let err = Layout::new(EPOCH, Tick::Millisecond, 41, 10, 13).unwrap_err();
    assert_eq!(err, LayoutError::TooWide { total: 64, max: 63 });
    assert!(err.to_string().contains("64"), "{err}");
    // u8 widths must not wrap around when summed.
    assert_eq!(
        Layout::new(EPOCH, Tick::Millisecond, 255, 255, 255),
        Err(LayoutError::TooWide {
            total: 765,
            max: 63
        })
    );
    assert!(Layout::new(0, Tick::Millisecond, 1, 1, 61).is_ok());
    assert!(Layout::new(0, Tick::Millisecond, 1, 61, 1).is_ok());
}

#[test]
fn new_checks_the_epoch() {
    let max = Layout::MAX_UNIX_MS;
    assert_eq!(
        Layout::new(max + 1, Tick::Millisecond, 1, 1, 1),
        Err(LayoutError::EpochOutOfRange {
            epoch_ms: max + 1,
            max
        })
    );
    assert!(matches!(
        Layout::new(u64::MAX, Tick::Second, 1, 1, 1),
        Err(LayoutError::EpochOutOfRange { .. })
    ));
    let err = Layout::new(EPOCH + 1, Tick::Second, 31, 10, 22).unwrap_err();
    assert_eq!(
        err,
        LayoutError::EpochNotTickAligned {
            epoch_ms: EPOCH + 1,
            tick: Tick::Second
        }
    );
    assert!(err.to_string().contains("1577203200001"), "{err}");
    // Any millisecond is a millisecond tick boundary.
    assert!(Layout::new(EPOCH + 1, Tick::Millisecond, 41, 10, 12).is_ok());
    assert!(Layout::new(0, Tick::Second, 31, 10, 22).is_ok());
}

#[test]
fn new_bounds_the_span() {
    // From epoch 0, 53 bits of milliseconds end exactly at 2^53 - 1.
    let l = Layout::new(0, Tick::Millisecond, 53, 5, 5).unwrap();
    assert_eq!(l.tick_end_ms(l.max_tick()), Layout::MAX_UNIX_MS);
    assert_eq!(
        Layout::new(1, Tick::Millisecond, 53, 5, 5),
        Err(LayoutError::SpanTooLong {
            epoch_ms: 1,
            tick: Tick::Millisecond,
            timestamp_bits: 53,
            max_timestamp_bits: 52
        })
    );
    assert_eq!(
        Layout::new(EPOCH, Tick::Second, 61, 1, 1),
        Err(LayoutError::SpanTooLong {
            epoch_ms: EPOCH,
            tick: Tick::Second,
            timestamp_bits: 61,
            max_timestamp_bits: 43
        })
    );
    assert!(Layout::new(EPOCH, Tick::Second, 43, 1, 1).is_ok());
    assert!(Layout::new(EPOCH, Tick::Second, 44, 1, 1).is_err());
}

#[test]
fn layout_errors_say_what_was_expected() {
    let err = Layout::new(EPOCH, Tick::Second, 50, 1, 1).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("50") && msg.contains("at most 43"), "{msg}");
}

#[test]
fn tick_at_floors_and_bounds() {
    let m = Layout::millis();
    assert_eq!(m.tick_at(EPOCH), Some(0));
    assert_eq!(m.tick_at(EPOCH - 1), None);
    assert_eq!(m.tick_at(0), None);
    assert_eq!(m.tick_at(EPOCH + 12_345), Some(12_345));
    assert_eq!(m.tick_at(EPOCH + m.max_tick()), Some(m.max_tick()));
    assert_eq!(m.tick_at(EPOCH + m.max_tick() + 1), None);
    assert_eq!(m.tick_at(u64::MAX), None);

    let s = Layout::seconds();
    assert_eq!(s.tick_at(EPOCH + 999), Some(0));
    assert_eq!(s.tick_at(EPOCH + 1000), Some(1));
    assert_eq!(s.tick_start_ms(1), EPOCH + 1000);
    assert_eq!(s.tick_end_ms(1), EPOCH + 1999);
    let last = s.max_tick();
    assert_eq!(s.tick_at(s.tick_end_ms(last)), Some(last));
    assert_eq!(s.tick_at(s.tick_end_ms(last) + 1), None);
    assert_eq!(m.tick_start_ms(7), m.tick_end_ms(7));
    // Past the layout, the arithmetic saturates instead of wrapping.
    assert_eq!(s.tick_start_ms(u64::MAX), u64::MAX);
    assert_eq!(s.tick_end_ms(u64::MAX), u64::MAX);
}

#[test]
fn compose_puts_fields_in_place() {
    let m = Layout::millis();
    let id = m.compose(1, 2, 3).unwrap();
    assert_eq!(id.as_u64(), (1 << 22) | (2 << 12) | 3);
    let top = m
        .compose(m.max_tick(), m.max_slot(), m.max_sequence())
        .unwrap();
    assert_eq!(top.as_u64(), i64::MAX as u64);
    assert_eq!(m.compose(0, 0, 0).unwrap(), Id::from_u64(0));
    assert_eq!(m.compose_unchecked(1, 2, 3), id);
}

#[test]
fn compose_rejects_out_of_range_fields() {
    let m = Layout::millis();
    assert_eq!(
        m.compose(1 << 41, 0, 0),
        Err(IdError::OutOfRange {
            part: "tick",
            value: 1 << 41,
            max: (1 << 41) - 1
        })
    );
    assert_eq!(
        m.compose(0, 1024, 0),
        Err(IdError::OutOfRange {
            part: "slot",
            value: 1024,
            max: 1023
        })
    );
    let err = m.compose(0, 0, 4096).unwrap_err();
    assert_eq!(
        err,
        IdError::OutOfRange {
            part: "sequence",
            value: 4096,
            max: 4095
        }
    );
    let msg = err.to_string();
    assert!(
        msg.contains("sequence") && msg.contains("4096") && msg.contains("4095"),
        "{msg}"
    );
}

#[test]
fn decompose_rejects_foreign_bits() {
    let m = Layout::millis();
    assert_eq!(
        m.decompose(Id::from_u64(1 << 63)),
        Err(IdError::SignBitSet { id: 1 << 63 })
    );
    let j = Layout::js_safe();
    assert_eq!(
        j.decompose(Id::from_u64(1 << 53)),
        Err(IdError::BeyondLayout {
            id: 1 << 53,
            total_bits: 53
        })
    );
    assert!(j.decompose(Id::from_u64((1 << 53) - 1)).is_ok());
    assert_eq!(
        m.decompose(Id::from_u64(0)),
        Ok(Parts {
            tick: 0,
            timestamp_ms: EPOCH,
            slot: 0,
            sequence: 0
        })
    );
}

#[test]
#[should_panic(expected = "slot out of range")]
#[cfg(debug_assertions)]
fn compose_unchecked_asserts_in_debug() {
    let _ = Layout::millis().compose_unchecked(0, 1024, 0);
}

/// Any layout `Layout::new` accepts, leaning towards the edges (1-bit fields, 63-bit totals, late epochs).
fn any_layout() -> impl Strategy<Value = Layout> {
    let tick = prop_oneof![Just(Tick::Millisecond), Just(Tick::Second)];
    let epoch = prop_oneof![
        Just(0u64),
        Just(EPOCH),
        0u64..(1u64 << 45),
        0u64..=Layout::MAX_UNIX_MS,
    ];
    (tick, epoch, 1u8..=61)
        .prop_flat_map(|(tick, epoch, ts)| {
            let epoch = epoch - epoch % tick.millis();
            (Just(tick), Just(epoch), Just(ts), 1u8..=(62 - ts))
        })
        .prop_flat_map(|(tick, epoch, ts, slot)| {
            let seq_max = 63 - ts - slot;
            (
                Just(tick),
                Just(epoch),
                Just(ts),
                Just(slot),
                prop_oneof![Just(seq_max), 1u8..=seq_max],
            )
        })
        .prop_filter_map("span too long", |(tick, epoch, ts, slot, seq)| {
            // Shrink the timestamp field until it fits, so that few cases are thrown away.
            (1..=ts)
                .rev()
                .find_map(|ts| Layout::new(epoch, tick, ts, slot, seq).ok())
        })
}

/// A valid (tick, slot, sequence) triple for `layout`, with the extremes likely.
fn fields(layout: Layout) -> impl Strategy<Value = (u64, u64, u64)> {
    fn field(max: u64) -> BoxedStrategy<u64> {
        prop_oneof![Just(0), Just(max), 0..=max].boxed()
    }
    (
        field(layout.max_tick()),
        field(layout.max_slot()),
        field(layout.max_sequence()),
    )
}

fn layout_and_fields() -> impl Strategy<Value = (Layout, (u64, u64, u64))> {
    prop_oneof![
        Just(Layout::millis()),
        Just(Layout::seconds()),
        Just(Layout::js_safe()),
        any_layout(),
    ]
    .prop_flat_map(|l| (Just(l), fields(l)))
}

proptest! {
    #[test]
    fn compose_decompose_round_trip((layout, (tick, slot, sequence)) in layout_and_fields()) {
        let id = layout.compose(tick, slot, sequence).unwrap();
        prop_assert_eq!(id, layout.compose_unchecked(tick, slot, sequence));
        prop_assert!(id.as_u64() < 1 << layout.total_bits());
        let parts = layout.decompose(id).unwrap();
        prop_assert_eq!(parts, Parts { tick, timestamp_ms: layout.tick_start_ms(tick), slot, sequence });
        prop_assert_eq!(layout.tick_at(parts.timestamp_ms), Some(tick));
        prop_assert_eq!(layout.tick_at(layout.tick_end_ms(tick)), Some(tick));
    }

    #[test]
    fn decompose_compose_round_trip(layout in any_layout(), raw in any::<u64>()) {
        let v = raw & ((1u64 << layout.total_bits()) - 1);
        let parts = layout.decompose(Id::from_u64(v)).unwrap();
        prop_assert_eq!(layout.compose(parts.tick, parts.slot, parts.sequence).unwrap().as_u64(), v);
        // A value with any higher bit set is not of this layout.
        let beyond = v | (raw | 1 << 62) & !((1u64 << layout.total_bits()) - 1);
        if beyond != v {
            prop_assert!(layout.decompose(Id::from_u64(beyond)).is_err());
        }
    }

    #[test]
    fn ids_sort_by_time_then_slot_then_sequence(
        (layout, a) in layout_and_fields(),
        b_seed in any::<(u64, u64, u64)>(),
    ) {
        let b = (b_seed.0 % (layout.max_tick() + 1), b_seed.1 % (layout.max_slot() + 1), b_seed.2 % (layout.max_sequence() + 1));
        let ia = layout.compose(a.0, a.1, a.2).unwrap();
        let ib = layout.compose(b.0, b.1, b.2).unwrap();
        prop_assert_eq!(ia.cmp(&ib), a.cmp(&b));
    }

    #[test]
    fn out_of_range_fields_are_rejected(layout in any_layout(), extra in 1u64..1000) {
        let part = |r: Result<Id, IdError>| match r {
            Err(IdError::OutOfRange { part, .. }) => Some(part),
            _ => None,
        };
        prop_assert_eq!(part(layout.compose(layout.max_tick() + extra, 0, 0)), Some("tick"));
        prop_assert_eq!(part(layout.compose(0, layout.max_slot() + extra, 0)), Some("slot"));
        prop_assert_eq!(part(layout.compose(0, 0, layout.max_sequence() + extra)), Some("sequence"));
    }

    #[test]
    fn valid_layouts_keep_their_invariants(layout in any_layout()) {
        prop_assert!(layout.total_bits() <= 63);
        prop_assert_eq!(layout.epoch_ms() % layout.tick().millis(), 0);
        prop_assert!(layout.tick_end_ms(layout.max_tick()) <= Layout::MAX_UNIX_MS);
        prop_assert_eq!(
            Layout::new(layout.epoch_ms(), layout.tick(), layout.timestamp_bits(), layout.slot_bits(), layout.sequence_bits()),
            Ok(layout)
        );
        prop_assert_eq!(layout.tick_at(layout.epoch_ms()), Some(0));
    }

    #[test]
    fn new_accepts_exactly_the_documented_layouts(
        epoch in prop_oneof![0u64..(1 << 44), any::<u64>()],
        second in any::<bool>(),
        ts in 0u8..70, slot in 0u8..70, seq in 0u8..70,
    ) {
        let tick = if second { Tick::Second } else { Tick::Millisecond };
        let valid = ts > 0 && slot > 0 && seq > 0
            && u32::from(ts) + u32::from(slot) + u32::from(seq) <= 63
            && epoch % tick.millis() == 0
            && u128::from(epoch) + (1u128 << ts) * u128::from(tick.millis()) - 1 <= u128::from(Layout::MAX_UNIX_MS);
        prop_assert_eq!(Layout::new(epoch, tick, ts, slot, seq).is_ok(), valid);
    }
}
