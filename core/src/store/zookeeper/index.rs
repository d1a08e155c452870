//! ZooKeeper's acquire index: znodes beside a namespace's records that let an acquisition read a handful of records
//! instead of every one, so its cost does not grow with the namespace.
//!
//! Under `<root>/<encoded name>.idx` (beside the namespace's znode, like the owner guards), whose data is `1`:
//!
//! - `hw`: the lowest slot with no record (a hint: an acquisition that finds a record there walks past it), or
//!   `none` when every slot has one;
//! - `k/<hex key>/<slot>`: the slots whose record has that owner key or that last owner key;
//! - `held/<bucket>/<expires_at>-<slot>`: every record with an owner, by expiry (`bucket` is `expires_at` in
//!   steps of [`BUCKET_SHIFT`] bits of milliseconds, so an acquisition lists the few buckets that may hold an
//!   expired lease, not every entry);
//! - `free/<range>/<slot>`: every record without an owner (released), by slot (`range` is the slot in steps of
//!   [`RANGE_SHIFT`] bits).
//!
//! Every entry is an empty znode. `k/<hex key>`, `held/<bucket>` and `free/<range>` are containers: the server
//! deletes them once their last entry goes, so they do not pile up with keys and times gone by.
//!
//! A namespace's index is made with its first record, or built from every record in one `multi` by the first
//! acquisition on a namespace that has none (made before the index, or whose index was deleted by hand): that
//! `multi` checks that no record changed and none appeared since its read. Every later write of a record writes
//! its entries in the same `multi` ([`reindex`]). The index is a hint: an acquisition reads the records it names,
//! decides on those records, and reads every record when the hint leaves it nothing to take.

use crate::lease::SlotRecord;

/// Held entries are grouped by `expires_at >> BUCKET_SHIFT` (256 ms): a ttl of 30 s spans about 120 buckets.
pub(super) const BUCKET_SHIFT: u32 = 8;
/// Free entries are grouped by `slot >> RANGE_SHIFT` (128 slots).
pub(super) const RANGE_SHIFT: u32 = 7;

/// The data of the index's root once it covers every record.
pub(super) const READY: &[u8] = b"1";

/// The znodes of one namespace's index.
#[derive(Debug, Clone)]
pub(super) struct IndexPaths {
    /// `<root>/<encoded>.idx`.
    pub root: String,
}

impl IndexPaths {
    pub fn new(root: String) -> Self {
        Self { root }
    }

    pub fn hw(&self) -> String {
        format!("{}/hw", self.root)
    }

    pub fn keys(&self) -> String {
        format!("{}/k", self.root)
    }

    pub fn held(&self) -> String {
        format!("{}/held", self.root)
    }

    pub fn free(&self) -> String {
        format!("{}/free", self.root)
    }

    /// The container of the slots of owner key `key`.
    pub fn key_dir(&self, key: &str) -> String {
        format!("{}/{}", self.keys(), hex(key))
    }

    pub fn bucket(&self, bucket: u64) -> String {
        format!("{}/{bucket}", self.held())
    }

    pub fn range(&self, range: u32) -> String {
        format!("{}/{range}", self.free())
    }

    /// The persistent znodes every index has, parents first.
    pub fn skeleton(&self) -> [String; 5] {
        [
            self.root.clone(),
            self.hw(),
            self.keys(),
            self.held(),
            self.free(),
        ]
    }

    /// The entries of record `r`.
    pub fn entries(&self, r: &SlotRecord) -> Vec<String> {
        let mut keys: Vec<&str> = r
            .owner
            .as_ref()
            .map(|o| o.key.as_str())
            .into_iter()
            .chain(r.last_owner_key.as_deref())
            .collect();
        keys.dedup();
        let mut entries: Vec<String> = keys
            .into_iter()
            .map(|k| format!("{}/{}", self.key_dir(k), r.slot))
            .collect();
        entries.push(match r.owner {
            Some(_) => format!(
                "{}/{}-{}",
                self.bucket(r.expires_at >> BUCKET_SHIFT),
                r.expires_at,
                r.slot
            ),
            None => format!("{}/{}", self.range(r.slot >> RANGE_SHIFT), r.slot),
        });
        entries
    }
}

/// The container an entry lies in.
pub(super) fn parent(entry: &str) -> &str {
    entry.rsplit_once('/').map_or(entry, |(p, _)| p)
}

fn hex(key: &str) -> String {
    key.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The expiry and slot a held entry's name (`<expires_at>-<slot>`) gives.
pub(super) fn held_entry(name: &str) -> Option<(u64, u32)> {
    let (expires_at, slot) = name.split_once('-')?;
    Some((expires_at.parse().ok()?, slot.parse().ok()?))
}

/// The entries to delete and to create when record `old` (as read, if there was one) is replaced by `new`.
pub(super) fn reindex(
    paths: &IndexPaths,
    old: Option<&SlotRecord>,
    new: &SlotRecord,
) -> (Vec<String>, Vec<String>) {
    let creates = paths.entries(new);
    let deletes = old.map(|old| paths.entries(old)).unwrap_or_default();
    let gone = deletes
        .iter()
        .filter(|k| !creates.contains(k))
        .cloned()
        .collect();
    let made = creates
        .iter()
        .filter(|k| !deletes.contains(k))
        .cloned()
        .collect();
    (gone, made)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::Owner;

    fn paths() -> IndexPaths {
        IndexPaths::new("/cosid/n.idx".into())
    }

    fn held(slot: u32, key: &str, last: Option<&str>, expires_at: u64) -> SlotRecord {
        SlotRecord {
            slot,
            owner: Some(Owner::new(key)),
            last_owner_key: last.map(str::to_owned),
            fence: 2,
            expires_at,
            floor: 1,
            ceiling: 2,
            next_floor: 2,
        }
    }

    #[test]
    fn entries_name_keys_expiry_and_slot() {
        let p = paths();
        let r = held(300, "a/b", Some("a/b"), 1_000);
        assert_eq!(
            p.entries(&r),
            [
                "/cosid/n.idx/k/612f62/300".to_owned(),
                format!("/cosid/n.idx/held/{}/1000-300", 1_000u64 >> BUCKET_SHIFT),
            ]
        );
        let other = held(3, "x", Some("y"), 5);
        assert_eq!(p.entries(&other).len(), 3, "{:?}", p.entries(&other));
        let released = SlotRecord {
            owner: None,
            ..r.clone()
        };
        assert_eq!(
            p.entries(&released),
            [
                "/cosid/n.idx/k/612f62/300".to_owned(),
                format!("/cosid/n.idx/free/{}/300", 300 >> RANGE_SHIFT),
            ]
        );
        assert_eq!(held_entry("1000-300"), Some((1_000, 300)));
        assert_eq!(held_entry("1000"), None);
        assert_eq!(parent("/a/b/c"), "/a/b");
    }

    #[test]
    fn reindex_moves_only_what_changed() {
        let p = paths();
        let r = held(4, "k", Some("k"), 50_000);
        let renewed = SlotRecord {
            expires_at: 80_000,
            ..r.clone()
        };
        let (gone, made) = reindex(&p, Some(&r), &renewed);
        assert_eq!(gone, [p.entries(&r)[1].clone()]);
        assert_eq!(made, [p.entries(&renewed)[1].clone()]);
        let (gone, made) = reindex(&p, None, &r);
        assert!(gone.is_empty());
        assert_eq!(made, p.entries(&r));
        let taken = held(4, "j", Some("j"), 90_000);
        let (gone, made) = reindex(&p, Some(&r), &taken);
        assert_eq!(gone, p.entries(&r));
        assert_eq!(made, p.entries(&taken));
        assert_eq!(reindex(&p, Some(&r), &r), (vec![], vec![]));
    }
}
