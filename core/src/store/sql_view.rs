//! What the SQL stores (SQLite, PostgreSQL, MySQL) share for an acquire whose cost does not grow with the
//! namespace: instead of every row, one query fetches the candidate rows a [`View`] needs (the rows with the
//! owner's key or last key, the preferred slot's, the lowest free rows, the held row that expires first), each
//! through an index, and the namespace row keeps `lowest_unused`, the lowest slot without a row.
//!
//! `lowest_unused` is a hint. A value whose slot has a row (written by a version that did not keep it, or by hand)
//! is found in the same query and recomputed by a query that walks the rows; a value above the true one (rows
//! deleted by hand) can only make an acquire pass over a slot never used, except a value that says every slot has
//! a row: that one would refuse, so before a refusal it is checked by the walk from slot 0 ([`must_check`]). The
//! choice itself is
//! [`crate::lease::protocol::acquire_in`], the same decision as on every row.

use crate::lease::protocol::{self, View};
use crate::lease::{AcquireRequest, Namespace, NamespaceRecord, SlotRecord};
use crate::store::StoreError;

/// The rows an acquire's candidate query returned, one per slot (a row may match several parts of the query).
pub(super) fn candidates(mut records: Vec<SlotRecord>) -> Vec<SlotRecord> {
    records.sort_by_key(|r| r.slot);
    records.dedup_by_key(|r| r.slot);
    records
}

/// The namespace row's `lowest_unused` as a [`View`]'s, or `None` when it must be recomputed: absent, not a
/// slot number, or a slot that has a row among `records` (which hold the hinted slot's row if it has one).
pub(super) fn hinted(hint: Option<i64>, records: &[SlotRecord], bits: u8) -> Option<Option<u32>> {
    let hint = u64::try_from(hint?).ok()?;
    if hint >= 1u64 << bits {
        return Some(None);
    }
    let slot = u32::try_from(hint).ok()?;
    (!records.iter().any(|r| r.slot == slot)).then_some(Some(slot))
}

/// Whether the hint must be checked against the rows before the acquire decides: it says every slot has a row
/// (`hinted` is `Some(None)`), and the decision on it would be `Exhausted`. A hint left at `2^bits` after rows
/// were deleted by hand used to refuse every start for good.
pub(super) fn must_check(
    hinted: Option<Option<u32>>,
    namespace: &Namespace,
    record: &NamespaceRecord,
    records: &[SlotRecord],
    request: &AcquireRequest,
    now: u64,
) -> bool {
    hinted == Some(None)
        && matches!(
            protocol::acquire_in(
                namespace,
                record,
                &View {
                    records,
                    lowest_unused: None,
                },
                request,
                now,
            ),
            Err(StoreError::Exhausted { .. })
        )
}

/// Logs a hint found to say "every slot has a row" when one had none: [`must_check`] caught it.
pub(super) fn warn_rebuilt(namespace: &Namespace, hint: Option<i64>, lowest_unused: Option<u32>) {
    if let Some(slot) = lowest_unused {
        tracing::warn!(namespace = %namespace, hint = ?hint, lowest_unused = slot,
            "cosid: the lowest_unused hint said every slot has a row, which is not so; it is set right");
    }
}

/// A slot number found by the stores' "first slot without a row from here" query, as a [`View`]'s
/// `lowest_unused`: `None` past the namespace's last slot.
pub(super) fn unused_below(first_unused: i64, bits: u8) -> Option<u32> {
    u64::try_from(first_unused)
        .ok()
        .filter(|&s| s < 1u64 << bits)
        .and_then(|s| u32::try_from(s).ok())
}

/// What the namespace row's `lowest_unused` is set to: the slot, or `2^bits` when every slot has a row.
pub(super) fn stored(lowest_unused: Option<u32>, bits: u8) -> i64 {
    lowest_unused.map_or(1i64 << bits, i64::from)
}

/// The slot from which `lowest_unused` must be looked for again after `granted` was written: the slot after it
/// when it was the lowest unused one (every slot below it has a row), else `None` (unchanged).
pub(super) fn advanced(view: &View<'_>, granted: u32) -> Option<u32> {
    (view.lowest_unused == Some(granted)).then(|| granted.saturating_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(slot: u32) -> SlotRecord {
        SlotRecord {
            slot,
            owner: None,
            last_owner_key: None,
            fence: 1,
            expires_at: 0,
            floor: 0,
            ceiling: 0,
            next_floor: 0,
        }
    }

    #[test]
    fn a_hint_is_used_only_when_its_slot_has_no_row() {
        assert_eq!(hinted(Some(2), &[at(0), at(1)], 3), Some(Some(2)));
        assert_eq!(hinted(Some(1), &[at(0), at(1)], 3), None);
        assert_eq!(hinted(Some(8), &[at(0)], 3), Some(None));
        assert_eq!(hinted(Some(-1), &[], 3), None);
        assert_eq!(hinted(None, &[], 3), None);
    }

    #[test]
    fn stored_values_read_back() {
        assert_eq!(unused_below(stored(None, 3), 3), None);
        assert_eq!(unused_below(stored(Some(5), 3), 3), Some(5));
        assert_eq!(unused_below(-4, 3), None);
        assert_eq!(candidates(vec![at(3), at(1), at(3)]).len(), 2);
    }
}
