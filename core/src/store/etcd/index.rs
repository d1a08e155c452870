//! etcd's acquire index: keys beside a namespace's records that let an acquisition read a handful of records
//! instead of every one, so its cost does not grow with the namespace.
//!
//! Under `<prefix>i/`, each an empty value:
//!
//! - `v`: the index's state. `1` when it covers every record; `building <deadline ms>` while one client builds it
//!   (others read every record until then, or take the build over after the deadline); absent for a namespace
//!   written before the index (or whose index was deleted by hand), which the next acquisition builds.
//! - `hw`: the lowest slot with no record (a hint: an acquisition that finds a record there walks past it), or
//!   `none` when every slot has one.
//! - `o/<hex owner key>/<slot>` and `l/<hex key>/<slot>`: the slots whose record has that owner key, or that last
//!   owner key.
//! - `held/<expires_at>/<slot>` and `free/<slot>`: every record is in one of them. `held` while it has an owner,
//!   ordered by expiry; `free` once released, or once an acquisition found it expired and moved it ("swept").
//!
//! Numbers are zero-padded so that etcd's key order is their order. Every write of a slot record writes the index
//! keys of that record in the same transaction ([`reindex`]), whatever state the index is in, so a build that runs
//! beside other writers ends up covering their records too. The index is a hint: an acquisition reads the records
//! it names, checks each against its entry, and repairs an entry the record contradicts.

use super::prefix;
use super::wire::TxnOp;
use crate::lease::{Namespace, SlotRecord};

/// The value of `v` once the index covers every record.
pub(super) const READY: &str = "1";

/// Every index key of the namespace begins with this.
pub(super) fn root(ns: &Namespace) -> String {
    format!("{}i/", prefix(ns))
}

/// The first key after every key that begins with `key`.
pub(super) fn prefix_end(key: &str) -> Vec<u8> {
    super::wire::prefix_end(key.as_bytes())
}

pub(super) fn state(ns: &Namespace) -> String {
    format!("{}v", root(ns))
}

pub(super) fn hw(ns: &Namespace) -> String {
    format!("{}hw", root(ns))
}

pub(super) fn free_dir(ns: &Namespace) -> String {
    format!("{}free/", root(ns))
}

pub(super) fn free(ns: &Namespace, slot: u32) -> String {
    format!("{}{slot:010}", free_dir(ns))
}

pub(super) fn held_dir(ns: &Namespace) -> String {
    format!("{}held/", root(ns))
}

/// The held entry of `slot` expiring at `expires_at`; `held(ns, now, 0)` bounds the leases expired before `now`.
pub(super) fn held(ns: &Namespace, expires_at: u64, slot: u32) -> String {
    format!("{}{expires_at:020}/{slot:010}", held_dir(ns))
}

fn hex(key: &str) -> String {
    key.bytes().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn owner_dir(ns: &Namespace, key: &str) -> String {
    format!("{}o/{}/", root(ns), hex(key))
}

pub(super) fn last_dir(ns: &Namespace, key: &str) -> String {
    format!("{}l/{}/", root(ns), hex(key))
}

/// The slot an entry names: its last ten characters.
pub(super) fn slot_of(key: &[u8]) -> Option<u32> {
    let tail = key.get(key.len().checked_sub(10)?..)?;
    std::str::from_utf8(tail).ok()?.parse().ok()
}

/// The expiry a held entry names.
pub(super) fn expiry_of(ns: &Namespace, key: &[u8]) -> Option<u64> {
    let rest = key.strip_prefix(held_dir(ns).as_bytes())?;
    std::str::from_utf8(rest.get(..20)?).ok()?.parse().ok()
}

/// The entries of record `r`: in `free` when `swept` or released, else in `held`.
pub(super) fn entries(ns: &Namespace, r: &SlotRecord, swept: bool) -> Vec<String> {
    let mut keys = Vec::with_capacity(3);
    match &r.owner {
        Some(o) => {
            keys.push(format!("{}{:010}", owner_dir(ns, &o.key), r.slot));
            keys.push(if swept {
                free(ns, r.slot)
            } else {
                held(ns, r.expires_at, r.slot)
            });
        }
        None => keys.push(free(ns, r.slot)),
    }
    if let Some(last) = &r.last_owner_key {
        keys.push(format!("{}{:010}", last_dir(ns, last), r.slot));
    }
    keys
}

/// The index writes that go with replacing `old` (the record as read, if there was one) by `new`: the entries
/// `old` may have (in either place) that `new` has not are deleted, and `new`'s are put, in `held` if it has an
/// owner. No key appears twice (etcd refuses a transaction that names one twice).
pub(super) fn reindex(ns: &Namespace, old: Option<&SlotRecord>, new: &SlotRecord) -> Vec<TxnOp> {
    let (deletes, puts) = reindex_keys(ns, old, new);
    deletes
        .into_iter()
        .map(|k| TxnOp::delete(k, None))
        .chain(puts.into_iter().map(|k| TxnOp::put(k, "", None)))
        .collect()
}

/// The keys [`reindex`] deletes, and those it puts.
fn reindex_keys(
    ns: &Namespace,
    old: Option<&SlotRecord>,
    new: &SlotRecord,
) -> (Vec<String>, Vec<String>) {
    let puts = entries(ns, new, false);
    let mut deletes: Vec<String> = old
        .map(|old| [entries(ns, old, false), entries(ns, old, true)].concat())
        .unwrap_or_default();
    deletes.sort();
    deletes.dedup();
    deletes.retain(|k| !puts.contains(k));
    (deletes, puts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::Owner;

    fn ns() -> Namespace {
        Namespace::new("n").unwrap()
    }

    #[test]
    fn numbers_sort_as_keys_and_read_back() {
        let ns = ns();
        assert!(free(&ns, 9) < free(&ns, 10));
        assert!(held(&ns, 999, 7) < held(&ns, 1_000, 3));
        assert!(held(&ns, 1_000, 9) < held(&ns, 1_001, 0));
        assert_eq!(slot_of(held(&ns, 1_000, 3).as_bytes()), Some(3));
        assert_eq!(
            slot_of(free(&ns, u32::MAX >> 1).as_bytes()),
            Some(u32::MAX >> 1)
        );
        assert_eq!(expiry_of(&ns, held(&ns, 1_000, 3).as_bytes()), Some(1_000));
        assert_eq!(prefix_end("a/"), b"a0".to_vec());
        // Owner keys are hex: a key with a slash cannot reach another key's entries.
        assert_eq!(owner_dir(&ns, "a/b"), format!("{}o/612f62/", root(&ns)));
    }

    #[test]
    fn reindex_never_names_a_key_twice() {
        let ns = ns();
        let held_record = SlotRecord {
            slot: 4,
            owner: Some(Owner::new("k")),
            last_owner_key: Some("k".into()),
            fence: 2,
            expires_at: 50,
            floor: 1,
            ceiling: 2,
            next_floor: 2,
        };
        let released = SlotRecord {
            owner: None,
            ..held_record.clone()
        };
        let renewed = SlotRecord {
            expires_at: 80,
            ..held_record.clone()
        };
        for (old, new) in [
            (None, &held_record),
            (Some(&held_record), &renewed),
            (Some(&held_record), &released),
            (Some(&released), &held_record),
            (Some(&held_record), &held_record),
        ] {
            let (deletes, puts) = reindex_keys(&ns, old, new);
            let mut keys = [deletes.clone(), puts.clone()].concat();
            let n = keys.len();
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), n, "{deletes:?} {puts:?}");
            assert_eq!(puts, entries(&ns, new, false));
            // Whatever place the old record had, its entries that the new one lacks go.
            if let Some(old) = old {
                for k in [entries(&ns, old, false), entries(&ns, old, true)].concat() {
                    assert!(deletes.contains(&k) || puts.contains(&k), "{k}");
                }
            }
        }
    }
}
