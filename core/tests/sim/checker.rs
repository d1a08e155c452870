//! The checker: it watches every write the store makes and every id a holder gets back, and reports each breach of
//! the safety rule.

use super::store::Change;
use cosid::{Id, Layout};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// The same id was returned twice.
    Duplicate,
    /// An id's tick does not lie wholly inside a window its holder was given on its slot.
    OutsideWindow,
    /// Two windows granted on one slot overlap.
    Overlap,
    /// An id lies past the last timestamp its holder handed over when it released the lease.
    PastRelease,
    /// A holder issued a timestamp below one it had issued before, on the same lease.
    Backwards,
    /// A call failed in a way the generator never should.
    UnexpectedError,
}

#[derive(Debug, Clone)]
pub struct Violation {
    pub kind: Kind,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.detail)
    }
}

/// A lease as the store granted it.
#[derive(Debug, Clone)]
struct Granted {
    holder: usize,
    incarnation: Uuid,
    floor: u64,
    /// The largest ceiling the store ever granted on it.
    ceiling: u64,
    /// `next_floor` as left by its release, if it was released.
    handed: Option<u64>,
}

impl Granted {
    /// Where the window ends for the next holder: the handed value after a release, else the ceiling.
    fn end(&self) -> u64 {
        self.handed.unwrap_or(self.ceiling)
    }
}

/// One returned id, for the end-of-run checks.
#[derive(Debug, Clone, Copy)]
struct Issued {
    holder: usize,
    id: u64,
    slot: u32,
    fence: u64,
    last_ms: u64,
}

#[derive(Debug)]
pub struct Checker {
    layout: Layout,
    /// Every lease the store granted, by `(slot, fence)`.
    granted: BTreeMap<(u32, u64), Granted>,
    /// The windows each incarnation was told about, by `(incarnation, slot, fence)`: `(floor, max ceiling)`.
    received: BTreeMap<(Uuid, u32, u64), (u64, u64)>,
    ids: HashMap<u64, (usize, Uuid)>,
    issued: Vec<Issued>,
    /// Last returned `(slot, fence, id)` per incarnation.
    last: HashMap<Uuid, (u32, u64, u64)>,
    pub violations: Vec<Violation>,
    /// Ids whose tick is below the previous id of the same incarnation, issued in a later window.
    pub new_window_earlier: u64,
}

impl Checker {
    pub fn new(layout: Layout) -> Self {
        Self {
            layout,
            granted: BTreeMap::new(),
            received: BTreeMap::new(),
            ids: HashMap::new(),
            issued: Vec::new(),
            last: HashMap::new(),
            violations: Vec::new(),
            new_window_earlier: 0,
        }
    }

    fn violation(&mut self, kind: Kind, detail: String) {
        self.violations.push(Violation { kind, detail });
    }

    /// The store granted a new lease (a write with a new owner or fence).
    pub fn on_grant(&mut self, holder: usize, change: &Change) {
        let r = &change.after;
        let owner = r.owner.as_ref().expect("a grant has an owner");
        for ((slot, fence), g) in self.granted.range((r.slot, 0)..(r.slot, u64::MAX)) {
            if r.floor < g.end() {
                let detail = format!(
                    "slot {slot}: new window ({}, {}] of holder {holder} (fence {}) overlaps ({}, {}] of holder {} \
                     (fence {fence}, handed {:?})",
                    r.floor, r.ceiling, r.fence, g.floor, g.ceiling, g.holder, g.handed
                );
                self.violations.push(Violation {
                    kind: Kind::Overlap,
                    detail,
                });
            }
        }
        self.granted.insert(
            (r.slot, r.fence),
            Granted {
                holder,
                incarnation: owner.incarnation,
                floor: r.floor,
                ceiling: r.ceiling,
                handed: None,
            },
        );
    }

    /// The store applied a renewal.
    pub fn on_renew(&mut self, change: &Change) {
        let r = &change.after;
        if let Some(g) = self.granted.get_mut(&(r.slot, r.fence)) {
            g.ceiling = g.ceiling.max(r.ceiling);
        }
        let later: Vec<String> = self
            .granted
            .range((r.slot, r.fence + 1)..(r.slot, u64::MAX))
            .filter(|(_, g)| g.floor < r.ceiling)
            .map(|((_, f), g)| format!("fence {f} floor {}", g.floor))
            .collect();
        for l in later {
            self.violation(
                Kind::Overlap,
                format!(
                    "slot {}: renewal of fence {} to ceiling {} reaches into the later window {l}",
                    r.slot, r.fence, r.ceiling
                ),
            );
        }
    }

    /// The store applied a release.
    pub fn on_release(&mut self, change: &Change) {
        if let Some(before) = &change.before {
            if let Some(g) = self.granted.get_mut(&(before.slot, before.fence)) {
                g.handed = Some(change.after.next_floor);
            }
        }
    }

    /// A holder was told about a window (acquire reply: bind; renew reply: extend).
    pub fn on_window(
        &mut self,
        incarnation: Uuid,
        slot: u32,
        fence: u64,
        floor: u64,
        ceiling: u64,
    ) {
        let w = self
            .received
            .entry((incarnation, slot, fence))
            .or_insert((floor, ceiling));
        w.1 = w.1.max(ceiling);
    }

    /// A call of holder `holder` (incarnation `incarnation`) returned `id`.
    pub fn on_id(&mut self, holder: usize, incarnation: Uuid, id: Id) {
        let v = id.as_u64();
        let parts = match self.layout.decompose(id) {
            Ok(p) => p,
            Err(e) => {
                return self.violation(
                    Kind::OutsideWindow,
                    format!("id {v} does not decompose: {e}"),
                )
            }
        };
        let slot = parts.slot as u32;
        let first_ms = parts.timestamp_ms;
        let last_ms = self.layout.tick_end_ms(parts.tick);
        if let Some((other, other_inc)) = self.ids.insert(v, (holder, incarnation)) {
            self.violation(
                Kind::Duplicate,
                format!(
                    "id {v} (slot {slot}, tick {}, sequence {}) returned to holder {holder} ({incarnation}) and \
                     before to holder {other} ({other_inc})",
                    parts.tick, parts.sequence
                ),
            );
        }
        let window = self
            .received
            .range((incarnation, slot, 0)..=(incarnation, slot, u64::MAX))
            .find(|(_, (floor, ceiling))| *floor < first_ms && last_ms <= *ceiling)
            .map(|((_, _, fence), _)| *fence);
        let Some(fence) = window else {
            let known: Vec<_> = self
                .received
                .range((incarnation, slot, 0)..=(incarnation, slot, u64::MAX))
                .map(|((_, _, f), w)| (*f, *w))
                .collect();
            return self.violation(
                Kind::OutsideWindow,
                format!(
                    "id {v} of holder {holder}: ms {first_ms}..={last_ms} on slot {slot} lies in none of its windows \
                     {known:?}"
                ),
            );
        };
        if let Some((last_slot, last_fence, last_id)) =
            self.last.insert(incarnation, (slot, fence, v))
        {
            if (last_slot, last_fence) == (slot, fence) && v <= last_id {
                self.violation(
                    Kind::Backwards,
                    format!(
                        "holder {holder}: id {v} after {last_id} on slot {slot}, fence {fence}"
                    ),
                );
            } else if (last_slot, last_fence) != (slot, fence)
                && self.layout.decompose(Id::from_u64(last_id)).unwrap().tick > parts.tick
            {
                // Allowed (another window, so no collision), but worth knowing how often time order breaks.
                self.new_window_earlier += 1;
            }
        }
        self.issued.push(Issued {
            holder,
            id: v,
            slot,
            fence,
            last_ms,
        });
    }

    pub fn unexpected(&mut self, holder: usize, what: String) {
        self.violation(Kind::UnexpectedError, format!("holder {holder}: {what}"));
    }

    /// Checks that need the whole run: no id lies past what its lease handed over at release.
    pub fn finish(&mut self) {
        let mut found = Vec::new();
        for i in &self.issued {
            if let Some(g) = self.granted.get(&(i.slot, i.fence)) {
                if let Some(handed) = g.handed {
                    if i.last_ms > handed {
                        found.push(format!(
                            "id {} of holder {} ({}) ends at ms {} on slot {}, past the {handed} its lease (fence {}) \
                             handed over",
                            i.id, i.holder, g.incarnation, i.last_ms, i.slot, i.fence
                        ));
                    }
                }
            }
        }
        for f in found {
            self.violation(Kind::PastRelease, f);
        }
    }

    pub fn ids(&self) -> usize {
        self.ids.len()
    }

    pub fn leases(&self) -> usize {
        self.granted.len()
    }
}
