//! An acquisition: on the acquire index ([`super::index`]) when the namespace has one, else on every record (and
//! then it builds the index in the same `multi` as its grant).

use super::index::{self, BUCKET_SHIFT, RANGE_SHIFT, READY};
use super::{
    common, corrupt, decode_namespace, decode_slot, encode_namespace, encode_slot, parse_slot,
    read_list, Op, Paths, Write, ZookeeperStore, KIND,
};
use crate::lease::{protocol, AcquireRequest, Acquired, Namespace, NamespaceConfig, SlotRecord};
use crate::store::common::Try;
use crate::store::StoreError;
use std::collections::{BTreeMap, BTreeSet};
use zookeeper_client::Client;

/// How many free entries an acquisition reads at a time.
const FREE_PAGE: usize = 4;
/// How many slots past `hw` an acquisition reads, to move `hw` past them when it takes that slot.
const HW_AHEAD: u32 = 4;
/// How many slots a walk past an overtaken `hw` reads at a time.
const HW_WALK: u32 = 64;
/// The most records an acquisition indexes in its `multi` (about 500 bytes of request each, within ZooKeeper's
/// default limit of 1 MB per request). A larger namespace without an index is read in full.
const BUILD_LIMIT: usize = 1024;

/// Records read, each with its data version.
type Records = BTreeMap<u32, (SlotRecord, i32)>;

impl ZookeeperStore {
    /// Reads `slots`' records, validated against `bits`; a slot with no record is absent from the answer.
    async fn read_slots(
        &self,
        client: &Client,
        ns: &Namespace,
        slots: &[u32],
        bits: u8,
    ) -> Result<Records, StoreError> {
        let paths = self.paths(ns);
        let reads: Vec<String> = slots.iter().map(|&s| paths.slot(s)).collect();
        let (answers, _) = read_list(client, &reads, &[]).await?;
        let mut records = Records::new();
        for (&slot, answer) in slots.iter().zip(answers) {
            if let Some((raw, version)) = answer {
                let r = decode_slot(ns, slot, &raw)?;
                protocol::validate(KIND, ns, &r, bits)?;
                records.insert(slot, (r, version));
            }
        }
        Ok(records)
    }

    /// One attempt at an acquisition. On the index: read it and the records it names, decide by
    /// [`protocol::acquire_in`] (on every record when nothing it named is free), and write the granted slot with
    /// its entries.
    pub(super) async fn acquire_step(
        &self,
        client: &Client,
        ns: &Namespace,
        config: &NamespaceConfig,
        request: &AcquireRequest,
        raced: u32,
    ) -> Result<Try<Acquired>, StoreError> {
        let paths = self.paths(ns);
        let idx = &paths.index;
        let key = request.owner.key.as_str();
        // The guard before the owner's entries: an acquisition by this key committed after this read writes the
        // guard, and one committed before it is among the entries.
        let (probe, lists) = read_list(
            client,
            &[
                paths.namespace.clone(),
                idx.root.clone(),
                idx.hw(),
                paths.guards.clone(),
                paths.guard(key),
            ],
            &[idx.key_dir(key), idx.free(), idx.held()],
        )
        .await?;
        let [stored, root, hw, guards, guard] = <[_; 5]>::try_from(probe).expect("five reads");
        if root.is_none() {
            return self
                .acquire_reading_every_record(client, ns, config, request, raced)
                .await;
        }
        let Some((raw, ns_version)) = stored else {
            return Err(corrupt(
                ns,
                "the acquire index",
                format!(
                    "{} exists but the namespace record does not (delete it)",
                    idx.root
                ),
            ));
        };
        let stored = decode_namespace(ns, &raw)?;
        let record = protocol::check_namespace(ns, Some(stored), config)?;
        let count = 1u64 << record.bits;
        let in_range = |s: u32| u64::from(s) < count;
        let hw = match hw {
            Some((v, _)) if v == b"none" => None,
            Some((v, _)) => std::str::from_utf8(&v)
                .ok()
                .and_then(|v| v.parse::<u32>().ok())
                .map_or(Some(0), |s| in_range(s).then_some(s)),
            None => Some(0),
        };
        let guards_exist = guards.is_some();
        let guard_version = guard.map(|(_, v)| v);
        let [owned, ranges, buckets] = <[_; 3]>::try_from(lists).expect("three lists");
        let owned: Vec<u32> = owned
            .unwrap_or_default()
            .iter()
            .filter_map(|n| parse_slot(n))
            .collect();
        let mut ranges: Vec<u32> = ranges
            .unwrap_or_default()
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        ranges.sort_unstable();
        let now = self.clock.now_ms();
        // The buckets that may hold a lease expired before `now`.
        let expiring: Vec<String> = buckets
            .unwrap_or_default()
            .iter()
            .filter_map(|n| n.parse::<u64>().ok())
            .filter(|&b| b.checked_shl(BUCKET_SHIFT).is_some_and(|start| start < now))
            .map(|b| idx.bucket(b))
            .collect();

        // The owner's records, the preferred slot's, those at `hw` and just past it; the expired leases and the
        // first range of free entries.
        let mut wanted: Vec<u32> = owned
            .iter()
            .copied()
            .chain(request.preferred_slot)
            .chain(hw.into_iter().flat_map(|h| h..=h.saturating_add(HW_AHEAD)))
            .filter(|&s| in_range(s))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut listed: Vec<String> = expiring;
        let first_range = ranges.first().map(|&r| idx.range(r));
        listed.extend(first_range.clone());
        let reads: Vec<String> = wanted.iter().map(|&s| paths.slot(s)).collect();
        let (answers, entry_lists) = read_list(client, &reads, &listed).await?;
        let mut records = Records::new();
        for (&slot, answer) in wanted.iter().zip(answers) {
            if let Some((raw, version)) = answer {
                let r = decode_slot(ns, slot, &raw)?;
                protocol::validate(KIND, ns, &r, record.bits)?;
                records.insert(slot, (r, version));
            }
        }
        // Candidates for the lowest free record: every lease expired by its entry, and the free entries of the
        // ranges listed so far (every free entry below the next range's first slot).
        let mut pending = BTreeSet::new();
        let free_listed = usize::from(first_range.is_some());
        for (i, entries) in entry_lists.into_iter().enumerate() {
            let names = entries.unwrap_or_default();
            if first_range.is_some() && i == listed.len() - 1 {
                pending.extend(names.iter().filter_map(|n| parse_slot(n)));
            } else {
                pending.extend(
                    names
                        .iter()
                        .filter_map(|n| index::held_entry(n))
                        .filter(|&(expires_at, _)| expires_at < now)
                        .map(|(_, s)| s),
                );
            }
        }
        pending.retain(|&s| in_range(s));

        // The lowest slot with no record: the first from `hw` on, walking past slots taken since it was written.
        let unused = match hw {
            Some(h) => {
                let mut from = h;
                loop {
                    let end = from.saturating_add(if from == h { HW_AHEAD } else { HW_WALK });
                    let window: Vec<u32> = (from..=end).filter(|&s| in_range(s)).collect();
                    if window.is_empty() {
                        break None;
                    }
                    let unread: Vec<u32> = window
                        .iter()
                        .copied()
                        .filter(|s| !records.contains_key(s) && from != h)
                        .collect();
                    records.extend(self.read_slots(client, ns, &unread, record.bits).await?);
                    if let Some(s) = window.iter().copied().find(|s| !records.contains_key(s)) {
                        break Some(s);
                    }
                    from = end.saturating_add(1);
                }
            }
            None => None,
        };

        // The lowest free record, and the lowest free one that can start within the tolerance, below `unused`.
        let soon = now.saturating_add(record.tolerance_ms);
        let ready = |r: &SlotRecord| r.next_floor.max(record.not_before) <= soon;
        let mut next_range = free_listed;
        let mut free: Vec<u32> = Vec::new();
        loop {
            let found_ready = free.iter().any(|s| ready(&records[s].0));
            if !free.is_empty() && (found_ready || record.not_before > soon) {
                break;
            }
            while next_range < ranges.len()
                && unused
                    .is_none_or(|u| u64::from(ranges[next_range]) << RANGE_SHIFT < u64::from(u))
                && pending
                    .first()
                    .is_none_or(|&p| u64::from(p) >= u64::from(ranges[next_range]) << RANGE_SHIFT)
            {
                let (_, more) = read_list(client, &[], &[idx.range(ranges[next_range])]).await?;
                pending.extend(
                    more.into_iter()
                        .flatten()
                        .flatten()
                        .filter_map(|n| parse_slot(&n))
                        .filter(|&s| in_range(s)),
                );
                next_range += 1;
            }
            let page: Vec<u32> = pending
                .iter()
                .copied()
                .filter(|&s| unused.is_none_or(|u| s < u))
                .take(FREE_PAGE)
                .collect();
            if page.is_empty() {
                break;
            }
            for s in &page {
                pending.remove(s);
            }
            let unread: Vec<u32> = page
                .iter()
                .copied()
                .filter(|s| !records.contains_key(s))
                .collect();
            records.extend(self.read_slots(client, ns, &unread, record.bits).await?);
            free.extend(
                page.iter()
                    .copied()
                    .filter(|s| records.get(s).is_some_and(|(r, _)| !r.is_held_at(now))),
            );
        }

        let mut view: Vec<SlotRecord> = records.values().map(|(r, _)| r.clone()).collect();
        let mut unused = unused;
        let decided = protocol::acquire_in(
            ns,
            &record,
            &protocol::View {
                records: &view,
                lowest_unused: unused,
            },
            request,
            now,
        );
        let grant = match decided {
            Err(StoreError::Exhausted { .. }) => {
                // Nothing the index named is free: decide on every record (which also names the earliest expiry).
                let Try::Done(all) = self.read_all(client, ns, None).await? else {
                    return Ok(Try::Raced);
                };
                records.clear();
                for (r, v) in all.slots {
                    protocol::validate(KIND, ns, &r, record.bits)?;
                    records.insert(r.slot, (r, v));
                }
                view = records.values().map(|(r, _)| r.clone()).collect();
                unused = protocol::lowest_unused(&view, record.bits);
                protocol::acquire_in(
                    ns,
                    &record,
                    &protocol::View {
                        records: &view,
                        lowest_unused: unused,
                    },
                    request,
                    now,
                )?
            }
            other => other?,
        };
        // After a lost race, another slot as good as the lowest (clients started together all choose the lowest,
        // and one of them wins each round): a free one that can start now, or one never used near the lowest.
        let grant = match &grant.write {
            Some(w) if raced > 0 && request.preferred_slot.is_none() => {
                let window: Vec<u32> =
                    common::never_used(record.bits, unused, raced, |s| records.contains_key(&s));
                let taken = self.read_slots(client, ns, &window, record.bits).await?;
                let never_used = window.into_iter().filter(|s| !taken.contains_key(s));
                let as_good: Vec<u32> = free
                    .iter()
                    .copied()
                    .filter(|s| {
                        let r = &records[s].0;
                        ready(r) && r.last_owner_key.as_deref() != Some(key)
                    })
                    .chain(never_used)
                    .collect();
                match common::spread(w.slot, as_good) {
                    Some(other) => {
                        let request = AcquireRequest {
                            preferred_slot: Some(other),
                            ..request.clone()
                        };
                        let view = protocol::View {
                            records: &view,
                            lowest_unused: unused,
                        };
                        protocol::acquire_in(ns, &record, &view, &request, now)?
                    }
                    None => grant,
                }
            }
            _ => grant,
        };

        let namespace_changed = stored != record;
        let Some(w) = &grant.write else {
            // The owner already holds a slot (a retried acquisition). A server may answer reads from a state behind
            // the leader's: confirm through the leader that the records are still as read (and upgrade the
            // namespace record if it needs it).
            let held = grant.acquired.lease.slot;
            let mut ops = vec![if namespace_changed {
                Write::set(
                    &paths.namespace,
                    &encode_namespace(&record),
                    Some(ns_version),
                )
            } else {
                Write::check(&paths.namespace, ns_version)
            }];
            ops.extend(
                records
                    .get(&held)
                    .map(|(_, v)| Write::check(&paths.slot(held), *v)),
            );
            return self.confirm(client, ops, grant.acquired).await;
        };
        let old = records.get(&w.slot);
        let mut ops = vec![if namespace_changed {
            Write::set(
                &paths.namespace,
                &encode_namespace(&record),
                Some(ns_version),
            )
        } else {
            Write::check(&paths.namespace, ns_version)
        }];
        if !guards_exist {
            ops.push(Write::create(&paths.guards, b""));
        }
        ops.push(Write::put(&paths.guard(key), b"", guard_version));
        ops.push(Write::put(
            &paths.slot(w.slot),
            &encode_slot(w),
            old.map(|(_, v)| *v),
        ));
        if unused == Some(w.slot) {
            // Every slot below `hw` has a record: the next one is past the records just read.
            let next = (w.slot.saturating_add(1)..)
                .find(|s| !records.contains_key(s))
                .filter(|&s| in_range(s))
                .map_or_else(|| "none".to_owned(), |s| s.to_string());
            ops.push(Write {
                op: Op::Set(idx.hw(), next.into_bytes(), None),
                index: true,
            });
        }
        let (gone, made) = index::reindex(idx, old.map(|(r, _)| r), w);
        ops.extend(gone.iter().map(|e| Write::entry_delete(e)));
        ops.extend(made.iter().map(|e| Write::entry_create(e)));
        Ok(if self.commit_ops(client, ops).await? {
            Try::Done(grant.acquired)
        } else {
            Try::Raced
        })
    }

    /// Commits `ops`, which only check: `acquired` if nothing changed since the read.
    async fn confirm(
        &self,
        client: &Client,
        ops: Vec<Write>,
        acquired: Acquired,
    ) -> Result<Try<Acquired>, StoreError> {
        Ok(if self.commit_ops(client, ops).await? {
            Try::Done(acquired)
        } else {
            Try::Raced
        })
    }

    /// An acquisition on a namespace with no index: it reads every record and decides by [`protocol::acquire`].
    /// Its `multi` builds the index from every record (up to [`BUILD_LIMIT`]): it checks that no record changed
    /// since the read, and that none appeared (an acquisition that makes a record without an index bumps the
    /// `slot` znode's version). A larger namespace is read in full and stays without an index; its writes then
    /// check that no index was built since their read.
    async fn acquire_reading_every_record(
        &self,
        client: &Client,
        namespace: &Namespace,
        config: &NamespaceConfig,
        request: &AcquireRequest,
        raced: u32,
    ) -> Result<Try<Acquired>, StoreError> {
        let key = request.owner.key.as_str();
        let snapshot = match self.read_all(client, namespace, Some(key)).await? {
            Try::Done(s) => s,
            Try::Raced => return Ok(Try::Raced),
        };
        let stored = snapshot.namespace.as_ref().map(|(r, _)| *r);
        let record = protocol::check_namespace(namespace, stored, config)?;
        let slots: Vec<SlotRecord> = snapshot.slots.iter().map(|(r, _)| r.clone()).collect();
        for s in &slots {
            protocol::validate(KIND, namespace, s, record.bits)?;
        }
        let now = self.clock.now_ms();
        let grant = protocol::acquire(namespace, &record, &slots, request, now)?;
        // After a lost race, another slot as good as the lowest (clients started together all choose the
        // lowest, and one of them wins each round).
        let grant = match &grant.write {
            Some(w) if raced > 0 && request.preferred_slot.is_none() => {
                let never_used = common::never_used(
                    record.bits,
                    protocol::lowest_unused(&slots, record.bits),
                    raced,
                    |s| slots.binary_search_by_key(&s, |r| r.slot).is_ok(),
                );
                match common::spread(
                    w.slot,
                    common::as_good(&record, &slots, key, now, never_used),
                ) {
                    Some(other) => {
                        let request = AcquireRequest {
                            preferred_slot: Some(other),
                            ..request.clone()
                        };
                        protocol::acquire(namespace, &record, &slots, &request, now)?
                    }
                    None => grant,
                }
            }
            _ => grant,
        };
        let namespace_changed = stored != Some(record);
        let paths = self.paths(namespace);
        let Some(w) = grant.write.as_ref() else {
            if !namespace_changed {
                // The owner already holds a slot (a retried acquisition). A server may answer reads from a state
                // behind the leader's: confirm through the leader that the records are still as read.
                let held = grant.acquired.lease.slot;
                let mut ops = Vec::new();
                if let Some((_, v)) = &snapshot.namespace {
                    ops.push(Write::check(&paths.namespace, *v));
                }
                if let Some((_, v)) = snapshot.slots.iter().find(|(r, _)| r.slot == held) {
                    ops.push(Write::check(&paths.slot(held), *v));
                }
                return self.confirm(client, ops, grant.acquired).await;
            }
            let mut ops = vec![Write::put(
                &paths.namespace,
                &encode_namespace(&record),
                snapshot.namespace.as_ref().map(|(_, v)| *v),
            )];
            ops.extend(no_index(&paths));
            return self.confirm(client, ops, grant.acquired).await;
        };
        let mut ops = Vec::new();
        if !snapshot.dir_exists {
            ops.push(Write::create(&paths.dir, b""));
        }
        let ns_version = snapshot.namespace.as_ref().map(|(_, v)| *v);
        ops.push(match ns_version {
            Some(v) if !namespace_changed => Write::check(&paths.namespace, v),
            _ => Write::put(&paths.namespace, &encode_namespace(&record), ns_version),
        });
        if snapshot.slots_version.is_none() {
            ops.push(Write::create(&paths.slots, b""));
        }
        // The owner's guard: a concurrent acquisition by the same owner key (whose record would have been this
        // one's answer) fails here or makes this one fail.
        if !snapshot.guards_exist {
            ops.push(Write::create(&paths.guards, b""));
        }
        ops.push(Write::put(&paths.guard(key), b"", snapshot.guard_version));
        // Only the slot written is checked: acquisitions of other slots, renewals and releases do not conflict
        // with this one.
        let old = snapshot.slots.iter().find(|(r, _)| r.slot == w.slot);
        ops.push(Write::put(
            &paths.slot(w.slot),
            &encode_slot(w),
            old.map(|(_, v)| *v),
        ));
        let mut all: Vec<SlotRecord> = slots.into_iter().filter(|r| r.slot != w.slot).collect();
        all.push(w.clone());
        if all.len() <= BUILD_LIMIT {
            // The index, from every record as this write leaves them; built only if no record changed or
            // appeared since the read.
            for (r, v) in &snapshot.slots {
                if r.slot != w.slot {
                    ops.push(Write::check(&paths.slot(r.slot), *v));
                }
            }
            if let Some(v) = snapshot.slots_version {
                ops.push(Write::check(&paths.slots, v));
            }
            let idx = &paths.index;
            let hw = protocol::lowest_unused(&all, record.bits)
                .map_or_else(|| "none".to_owned(), |s| s.to_string());
            for (i, node) in idx.skeleton().iter().enumerate() {
                let data: &[u8] = match i {
                    0 => READY,
                    1 => hw.as_bytes(),
                    _ => b"",
                };
                ops.push(Write::create(node, data));
            }
            let entries: BTreeSet<String> = all.iter().flat_map(|r| idx.entries(r)).collect();
            let containers: BTreeSet<&str> = entries.iter().map(|e| index::parent(e)).collect();
            for c in containers {
                ops.push(Write {
                    op: Op::Create {
                        path: c.to_owned(),
                        data: Vec::new(),
                        container: true,
                    },
                    index: false,
                });
            }
            ops.extend(entries.iter().map(|e| Write::create(e, b"")));
        } else {
            ops.extend(no_index(&paths));
            // Tells an acquisition building the index since its read that a record may have appeared.
            ops.push(Write::set(&paths.slots, b"", None));
        }
        self.confirm(client, ops, grant.acquired).await
    }
}

/// Writes that succeed only while the namespace has no index (a create and a delete of its root): a write that
/// leaves the index as it is fails once one was built since its read.
pub(super) fn no_index(paths: &Paths) -> [Write; 2] {
    [
        Write::create(&paths.index.root, b""),
        Write {
            op: Op::Delete(paths.index.root.clone()),
            index: false,
        },
    ]
}
