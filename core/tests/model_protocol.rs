//! Exhaustive model check of the lease protocol (DESIGN §2 and §3) with `stateright`.
//!
//! The store's side of the model calls the real rules, `cosid::lease::protocol::{acquire, renew, release}`, over
//! real `SlotRecord`s; the holders' side transcribes what the keeper and generator do (issue only inside the window
//! and never below the last timestamp, seal and release with the exact last timestamp) and checks every grant for
//! regression with the keeper's own `cosid::keeper::machine::History`. Every state reachable within the bounds
//! below is visited.
//!
//! The holders are not the whole keeper machine (which the simulation drives): the model lets a holder send a
//! renewal or an acquisition at any moment, any number of times, which covers every schedule the machine's timers
//! and back-off can produce, and keeps the state small enough to explore exhaustively (the machine's times and
//! back-off values would multiply it). What the model does not cover is the recovery after lost writes (raising
//! `not_before`): its store never loses writes, so a refused grant only sends the holder back to acquiring.
//!
//! What the adversary controls:
//!
//! - **2 holders, 1 slot, restarts**: each holder may crash at any moment and come back once as a new incarnation
//!   (same owner key, new UUID); the messages of the dead incarnation stay in flight.
//! - **Non-monotone clocks**: the store reads its clock afresh on every operation and may see any value of
//!   `0..=NOW_MAX`, forwards or backwards; a holder reads its clock afresh for every id and may see any value, so it
//!   issues any timestamp its window allows. A process paused for any time is a holder that takes no step while
//!   the store's clock runs ahead.
//! - **The network** is a multiset of at most `NET_CAP` messages: any message may be delivered (in any order),
//!   duplicated or dropped, requests and replies alike.
//!
//! Properties (`always`): no duplicate id, windows granted on the slot disjoint, the fence only grows, `next_floor`
//! covers every issued timestamp, and every record the store writes passes `protocol::validate`. Sanity
//! (`sometimes`, must be reachable or the model is vacuous): a paused holder issues after another took its slot
//! over, a restarted holder issues, and a release hands a timestamp to the next holder.
//!
//! Broken variants (next_floor = expires_at in acquire, release without the fence and incarnation check, a holder
//! that releases without its last timestamp, a keeper without the regression check) must each be caught: the test
//! asserts a counterexample and prints it, one line per state.
//!
//! Two reductions keep the check exhaustive and short (about 1.6 million distinct states): the holders are
//! interchangeable, so states that differ only by swapping them are explored once; and a holder that issues at `t`
//! marks every timestamp between its last one and `t` as issued (it may have issued each on the way), so the
//! model keeps one bit per timestamp instead of the history of every binding. The bounds are the constants below;
//! `cargo test -p cosid --test model_protocol -- --nocapture` prints the state counts.

use cosid::keeper::machine::History;
use cosid::lease::protocol;
use cosid::lease::{AcquireRequest, Namespace, NamespaceRecord, Owner, SlotLease, SlotRecord};
use stateright::{Checker, HasDiscoveries, Model, Path, Property};
use std::fmt;
use std::time::Instant;
use uuid::Uuid;

/// Lease length and tolerance, in store milliseconds.
const TTL: u64 = 1;
const TOL: u64 = 1;
/// The store's clock reads `0..=NOW_MAX`.
const NOW_MAX: u8 = 2;
/// Holders (owner keys), and restarts allowed to each.
const HOLDERS: usize = 2;
const RESTARTS: u8 = 1;
/// Messages in flight at most.
const NET_CAP: usize = 2;
/// States whose record fence passes this are not explored further (each change of ownership adds one).
const FENCE_MAX: u8 = 4;

/// The protocol as shipped, or with one deliberate bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// The real rules and the real keeper.
    Shipped,
    /// Acquire writes `next_floor = expires_at` instead of the ceiling: the tolerance is not covered.
    NextFloorIsExpiry,
    /// Release applies to whoever holds the slot, without the fence and incarnation check.
    ReleaseWithoutFenceCheck,
    /// The holder releases with no last timestamp (as if the seal lost it).
    ReleaseWithoutLast,
    /// The keeper installs any grant it receives, without comparing it with what it held before.
    NoRegressionCheck,
}

/// A holder's incarnation: `holder * (RESTARTS + 1) + restart`.
type Inc = u8;

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
struct Lease {
    inc: Inc,
    fence: u8,
    floor: u8,
    ceiling: u8,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
enum Msg {
    Acquire {
        inc: Inc,
    },
    Renew {
        inc: Inc,
        fence: u8,
    },
    Release {
        inc: Inc,
        fence: u8,
        last: Option<u8>,
    },
    Granted {
        lease: Lease,
    },
    Renewed {
        lease: Lease,
    },
    Lost {
        inc: Inc,
        fence: u8,
    },
    Refused {
        inc: Inc,
    },
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Idle,
    Acquiring,
    Holding { lease: Lease, last: Option<u8> },
    Sealed,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
struct Holder {
    inc: Inc,
    restarts: u8,
    phase: Phase,
    /// The keeper's memory of the slot: the highest fence and ceiling it was granted.
    seen: Option<(u8, u8)>,
}

/// The slot's record, as the store keeps it.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
struct Rec {
    owner: Option<Inc>,
    last_owner: Option<u8>,
    fence: u8,
    expires: u8,
    floor: u8,
    ceiling: u8,
    next_floor: u8,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
struct State {
    holders: [Holder; HOLDERS],
    record: Option<Rec>,
    /// In-flight messages, sorted: a multiset.
    net: Vec<Msg>,
    /// Bit `t` is set once an id was issued at timestamp `t`. Each binding of a generator to a window issues
    /// strictly growing timestamps (another id at its last timestamp only takes the next sequence number), so an id
    /// at a timestamp whose bit is already set repeats an id of another binding.
    used: u16,
    // What the properties read, set by the steps that break them.
    duplicate: bool,
    overlap: bool,
    fence_went_back: bool,
    invalid_record: bool,
    // Sanity: what the model must be able to reach.
    zombie_issued: bool,
    restarted_issued: bool,
    handed_over: bool,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
enum Action {
    /// A holder asks for the slot.
    SendAcquire(usize),
    /// A holder asks to extend its lease.
    SendRenew(usize),
    /// A holder's clock reads `t` and it issues an id at `t`.
    Issue(usize, u8),
    /// Shutdown: seal, then release with the exact last timestamp.
    Shutdown(usize),
    /// The process dies and comes back as a new incarnation.
    Restart(usize),
    /// The store handles a request with its clock reading `now`.
    Store(Msg, u8),
    /// A reply reaches its holder.
    Deliver(Msg),
    Duplicate(Msg),
    Drop(Msg),
}

struct ProtocolModel {
    variant: Variant,
    namespace: Namespace,
    ns: NamespaceRecord,
    /// The owner of each incarnation.
    owners: Vec<Owner>,
}

impl ProtocolModel {
    fn new(variant: Variant) -> Self {
        Self {
            variant,
            namespace: Namespace::new("model").unwrap(),
            // 0 bits: one slot.
            ns: NamespaceRecord {
                bits: 0,
                tolerance_ms: TOL,
                not_before: 0,
                layout: None,
            },
            owners: (0..HOLDERS as u8 * (RESTARTS + 1))
                .map(|inc| Owner {
                    key: format!("holder-{}", inc / (RESTARTS + 1)),
                    incarnation: Uuid::from_u128(u128::from(inc) + 1),
                })
                .collect(),
        }
    }

    fn owner(&self, inc: Inc) -> Owner {
        self.owners[usize::from(inc)].clone()
    }

    fn inc_of(owner: &Owner) -> Inc {
        Inc::try_from(owner.incarnation.as_u128() - 1).expect("model incarnation")
    }

    fn record(&self, r: &Rec) -> SlotRecord {
        SlotRecord {
            slot: 0,
            owner: r.owner.map(|inc| self.owner(inc)),
            last_owner_key: r.last_owner.map(|h| self.owner(h * (RESTARTS + 1)).key),
            fence: r.fence.into(),
            expires_at: r.expires.into(),
            floor: r.floor.into(),
            ceiling: r.ceiling.into(),
            next_floor: r.next_floor.into(),
        }
    }

    fn rec(r: &SlotRecord) -> Rec {
        Rec {
            owner: r.owner.as_ref().map(Self::inc_of),
            last_owner: r.last_owner_key.as_ref().map(|k| {
                k.strip_prefix("holder-")
                    .and_then(|h| h.parse().ok())
                    .expect("model owner key")
            }),
            fence: small(r.fence),
            expires: small(r.expires_at),
            floor: small(r.floor),
            ceiling: small(r.ceiling),
            next_floor: small(r.next_floor),
        }
    }

    fn slot_lease(&self, l: &Lease) -> SlotLease {
        SlotLease {
            namespace: self.namespace.clone(),
            slot: 0,
            owner: self.owner(l.inc),
            fence: l.fence.into(),
            // The store reads the owner and the fence of a lease it renews or releases, and at a matching fence
            // its floor and ceiling (see `held_lease`).
            expires_at: 0,
            floor: l.floor.into(),
            ceiling: l.ceiling.into(),
            store_now: 0,
        }
    }

    /// The lease a renewal or release of `(inc, fence)` stands for. Messages carry only the owner and fence (a
    /// smaller state space); the store in this model never loses writes, so at a matching fence the holder's floor
    /// and ceiling are the record's floor and (renewals only raise it) at most its ceiling: take the record's.
    fn held_lease(&self, current: Option<&SlotRecord>, inc: Inc, fence: u8) -> SlotLease {
        let mut l = self.slot_lease(&Lease {
            inc,
            fence,
            floor: 0,
            ceiling: 0,
        });
        if let Some(r) = current.filter(|r| r.fence == l.fence && r.is_owned_by(&l.owner)) {
            l.floor = r.floor;
            l.ceiling = r.ceiling;
        }
        l
    }

    fn lease(l: &SlotLease) -> Lease {
        Lease {
            inc: Self::inc_of(&l.owner),
            fence: small(l.fence),
            floor: small(l.floor),
            ceiling: small(l.ceiling),
        }
    }

    /// A runtime's grant history, as the keeper keeps it, from the holder's compact copy.
    fn history(&self, seen: Option<(u8, u8)>) -> History {
        let mut history = History::default();
        if let Some((fence, ceiling)) = seen {
            history.note(&self.slot_lease(&Lease {
                inc: 0,
                fence,
                floor: 0,
                ceiling,
            }));
        }
        history
    }

    fn seen(history: &History) -> Option<(u8, u8)> {
        history.slot(0).map(|(f, c)| (small(f), small(c)))
    }

    /// Writes the slot record, keeping the history the properties read.
    fn write(&self, s: &mut State, record: &SlotRecord) {
        let new = Self::rec(record);
        if s.record.is_some_and(|old| new.fence < old.fence) {
            s.fence_went_back = true;
        }
        if protocol::validate("model", &self.namespace, record, self.ns.bits).is_err() {
            s.invalid_record = true;
        }
        s.record = Some(new);
    }

    /// The store handles a request at store time `now`.
    fn store(&self, s: &mut State, msg: Msg, now: u8) {
        let current = s.record.as_ref().map(|r| self.record(r));
        match msg {
            Msg::Acquire { inc } => {
                let request = AcquireRequest {
                    owner: self.owner(inc),
                    ttl_ms: TTL,
                    preferred_slot: None,
                };
                let slots: Vec<SlotRecord> = current.into_iter().collect();
                match protocol::acquire(&self.namespace, &self.ns, &slots, &request, now.into()) {
                    Ok(grant) => {
                        if let Some(mut w) = grant.write {
                            if self.variant == Variant::NextFloorIsExpiry {
                                w.next_floor = w.expires_at;
                            }
                            // The window before this one ends at its ceiling, or where its release cut it.
                            if let Some(prev) = s.record {
                                let end = if prev.owner.is_some() {
                                    prev.ceiling
                                } else {
                                    prev.next_floor
                                };
                                if small(w.floor) < end {
                                    s.overlap = true;
                                }
                            }
                            self.write(s, &w);
                        }
                        send(
                            s,
                            Msg::Granted {
                                lease: Self::lease(&grant.acquired.lease),
                            },
                        );
                    }
                    Err(_) => send(s, Msg::Refused { inc }),
                }
            }
            Msg::Renew { inc, fence } => {
                let l = self.held_lease(current.as_ref(), inc, fence);
                match protocol::renew("model", current.as_ref(), &l, TTL, TOL, now.into()) {
                    Ok((record, renewed)) => {
                        self.write(s, &record);
                        send(
                            s,
                            Msg::Renewed {
                                lease: Self::lease(&renewed),
                            },
                        );
                    }
                    Err(_) => send(s, Msg::Lost { inc, fence }),
                }
            }
            Msg::Release { inc, fence, last } => {
                let mut l = self.held_lease(current.as_ref(), inc, fence);
                if self.variant == Variant::ReleaseWithoutFenceCheck {
                    // The bug: whoever holds the slot now is released on this request's word.
                    if let Some(r) = current.as_ref().filter(|r| r.owner.is_some()) {
                        l.owner = r.owner.clone().unwrap();
                        l.fence = r.fence;
                        l.floor = r.floor;
                        l.ceiling = r.ceiling;
                    }
                }
                if let Ok(record) =
                    protocol::release("model", current.as_ref(), &l, last.map(u64::from))
                {
                    self.write(s, &record);
                    s.handed_over |= last.is_some();
                }
            }
            _ => unreachable!("only requests reach the store"),
        }
    }

    /// A reply reaches its holder (if that incarnation is still alive).
    fn deliver(&self, s: &mut State, msg: Msg) {
        let inc = match msg {
            Msg::Granted { lease } | Msg::Renewed { lease } => lease.inc,
            Msg::Lost { inc, .. } | Msg::Refused { inc } => inc,
            _ => unreachable!("only replies reach holders"),
        };
        let Some(h) = s.holders.iter().position(|h| h.inc == inc) else {
            return; // That process is gone.
        };
        let mut holder = s.holders[h];
        match (msg, holder.phase) {
            (Msg::Granted { lease }, Phase::Acquiring) => {
                // The keeper's regression check, the real one (`keeper::machine::History`): a grant below what
                // this runtime held is refused and given back with the highest ceiling it held.
                let mut history = self.history(holder.seen);
                let granted = self.slot_lease(&lease);
                let regressed = self.variant != Variant::NoRegressionCheck
                    && history.check_grant(&granted).is_err();
                if regressed {
                    send(
                        s,
                        Msg::Release {
                            inc,
                            fence: lease.fence,
                            last: Some(small(history.highest_ceiling())),
                        },
                    );
                    holder.phase = Phase::Idle;
                } else {
                    history.note(&granted);
                    holder.phase = Phase::Holding { lease, last: None };
                    holder.seen = Self::seen(&history);
                }
            }
            (Msg::Renewed { lease: r }, Phase::Holding { lease, last })
                if r.fence == lease.fence && r.floor == lease.floor =>
            {
                // The generator's ceiling only grows. (A reply of an older renewal of this binding is harmless.)
                let lease = Lease {
                    ceiling: lease.ceiling.max(r.ceiling),
                    ..lease
                };
                holder.phase = Phase::Holding { lease, last };
                let mut history = self.history(holder.seen);
                history.note(&self.slot_lease(&r));
                holder.seen = Self::seen(&history);
            }
            (Msg::Lost { fence, .. }, Phase::Holding { lease, .. }) if fence == lease.fence => {
                // No switch to keep issuing on a lost lease: close, then look for a new one.
                holder.phase = Phase::Idle;
            }
            (Msg::Refused { .. }, Phase::Acquiring) => holder.phase = Phase::Idle,
            // A reply to an earlier request, which no caller waits for any more.
            _ => {}
        }
        s.holders[h] = holder;
    }
}

/// The same state with the two holders' names swapped: holders are interchangeable, so the checker explores one
/// of each pair (symmetry reduction).
fn representative(s: &State) -> State {
    let other = |inc: Inc| (1 - inc / (RESTARTS + 1)) * (RESTARTS + 1) + inc % (RESTARTS + 1);
    let swap_msg = |m: Msg| match m {
        Msg::Acquire { inc } => Msg::Acquire { inc: other(inc) },
        Msg::Renew { inc, fence } => Msg::Renew {
            inc: other(inc),
            fence,
        },
        Msg::Release { inc, fence, last } => Msg::Release {
            inc: other(inc),
            fence,
            last,
        },
        Msg::Granted { lease } => Msg::Granted {
            lease: Lease {
                inc: other(lease.inc),
                ..lease
            },
        },
        Msg::Renewed { lease } => Msg::Renewed {
            lease: Lease {
                inc: other(lease.inc),
                ..lease
            },
        },
        Msg::Lost { inc, fence } => Msg::Lost {
            inc: other(inc),
            fence,
        },
        Msg::Refused { inc } => Msg::Refused { inc: other(inc) },
    };
    let swap_holder = |h: Holder| Holder {
        inc: other(h.inc),
        phase: match h.phase {
            Phase::Holding { lease, last } => Phase::Holding {
                lease: Lease {
                    inc: other(lease.inc),
                    ..lease
                },
                last,
            },
            p => p,
        },
        ..h
    };
    let mut net: Vec<Msg> = s.net.iter().map(|&m| swap_msg(m)).collect();
    net.sort_unstable();
    let swapped = State {
        holders: [swap_holder(s.holders[1]), swap_holder(s.holders[0])],
        record: s.record.map(|r| Rec {
            owner: r.owner.map(other),
            last_owner: r.last_owner.map(|h| 1 - h),
            ..r
        }),
        net,
        ..s.clone()
    };
    swapped.min(s.clone())
}

fn small(v: u64) -> u8 {
    u8::try_from(v).expect("model values stay small")
}

/// Puts a message on the network; a full network loses it.
fn send(s: &mut State, msg: Msg) {
    if s.net.len() < NET_CAP {
        let i = s.net.binary_search(&msg).unwrap_or_else(|i| i);
        s.net.insert(i, msg);
    }
}

fn take(s: &mut State, msg: Msg) {
    let i = s.net.binary_search(&msg).expect("message in flight");
    s.net.remove(i);
}

fn is_request(m: &Msg) -> bool {
    matches!(
        m,
        Msg::Acquire { .. } | Msg::Renew { .. } | Msg::Release { .. }
    )
}

impl Model for ProtocolModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let holder = |h: usize| Holder {
            inc: Inc::try_from(h).unwrap() * (RESTARTS + 1),
            restarts: 0,
            phase: Phase::Idle,
            seen: None,
        };
        vec![State {
            holders: [holder(0), holder(1)],
            record: None,
            net: Vec::new(),
            used: 0,
            duplicate: false,
            overlap: false,
            fence_went_back: false,
            invalid_record: false,
            zombie_issued: false,
            restarted_issued: false,
            handed_over: false,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        let room = s.net.len() < NET_CAP;
        for (h, holder) in s.holders.iter().enumerate() {
            match holder.phase {
                Phase::Idle if room => actions.push(Action::SendAcquire(h)),
                Phase::Holding { lease, last } => {
                    if room {
                        actions.push(Action::SendRenew(h));
                    }
                    let lo = (lease.floor + 1).max(last.map_or(0, |l| l + 1));
                    for t in lo..=lease.ceiling {
                        actions.push(Action::Issue(h, t));
                    }
                    actions.push(Action::Shutdown(h));
                }
                _ => {}
            }
            if holder.restarts < RESTARTS {
                actions.push(Action::Restart(h));
            }
        }
        let mut previous = None;
        for &m in &s.net {
            if previous == Some(m) {
                continue;
            }
            previous = Some(m);
            match m {
                Msg::Acquire { .. } | Msg::Renew { .. } => {
                    for now in 0..=NOW_MAX {
                        actions.push(Action::Store(m, now));
                    }
                }
                Msg::Release { .. } => actions.push(Action::Store(m, 0)),
                _ => actions.push(Action::Deliver(m)),
            }
            if room {
                actions.push(Action::Duplicate(m));
            }
            actions.push(Action::Drop(m));
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        match action {
            Action::SendAcquire(h) => {
                s.holders[h].phase = Phase::Acquiring;
                let inc = s.holders[h].inc;
                send(&mut s, Msg::Acquire { inc });
            }
            Action::SendRenew(h) => {
                let Phase::Holding { lease, .. } = s.holders[h].phase else {
                    return None;
                };
                let inc = s.holders[h].inc;
                send(
                    &mut s,
                    Msg::Renew {
                        inc,
                        fence: lease.fence,
                    },
                );
            }
            Action::Issue(h, t) => {
                let inc = s.holders[h].inc;
                let Phase::Holding { lease, last } = s.holders[h].phase else {
                    return None;
                };
                if s.record
                    .is_some_and(|r| r.fence != lease.fence && r.owner.is_some_and(|o| o != inc))
                {
                    s.zombie_issued = true;
                }
                if !inc.is_multiple_of(RESTARTS + 1) {
                    s.restarted_issued = true;
                }
                // Every timestamp from the last one up to `t` may have been issued on the way: mark them all.
                let from = lease.floor.max(last.unwrap_or(0)) + 1;
                let range: u16 = (from..=t).fold(0, |m, x| m | 1 << x);
                if s.used & range != 0 {
                    s.duplicate = true;
                }
                s.used |= range;
                s.holders[h].phase = Phase::Holding {
                    lease,
                    last: Some(t),
                };
            }
            Action::Shutdown(h) => {
                let Phase::Holding { lease, last } = s.holders[h].phase else {
                    return None;
                };
                s.holders[h].phase = Phase::Sealed;
                let last = if self.variant == Variant::ReleaseWithoutLast {
                    None
                } else {
                    last
                };
                let inc = s.holders[h].inc;
                send(
                    &mut s,
                    Msg::Release {
                        inc,
                        fence: lease.fence,
                        last,
                    },
                );
            }
            Action::Restart(h) => {
                let holder = &mut s.holders[h];
                *holder = Holder {
                    inc: holder.inc + 1,
                    restarts: holder.restarts + 1,
                    phase: Phase::Idle,
                    seen: None,
                };
            }
            Action::Store(m, now) => {
                take(&mut s, m);
                debug_assert!(is_request(&m));
                self.store(&mut s, m, now);
            }
            Action::Deliver(m) => {
                take(&mut s, m);
                self.deliver(&mut s, m);
            }
            Action::Duplicate(m) => send(&mut s, m),
            Action::Drop(m) => take(&mut s, m),
        }
        Some(s)
    }

    fn within_boundary(&self, s: &State) -> bool {
        s.record.is_none_or(|r| r.fence <= FENCE_MAX)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("no duplicate id", |_, s: &State| !s.duplicate),
            Property::always("windows disjoint", |_, s: &State| !s.overlap),
            Property::always("fence only grows", |_, s: &State| !s.fence_went_back),
            Property::always(
                "next_floor covers every issued timestamp",
                |_, s: &State| {
                    let top = u16::BITS - s.used.leading_zeros(); // one past the highest issued timestamp
                    s.used == 0 || s.record.is_some_and(|r| top <= u32::from(r.next_floor) + 1)
                },
            ),
            Property::always("records valid", |_, s: &State| !s.invalid_record),
            Property::sometimes("a paused holder issues after a takeover", |_, s: &State| {
                s.zombie_issued
            }),
            Property::sometimes("a restarted holder issues", |_, s: &State| {
                s.restarted_issued
            }),
            Property::sometimes("a release hands its last timestamp over", |_, s: &State| {
                s.handed_over
            }),
        ]
    }
}

const SAFETY: [&str; 5] = [
    "no duplicate id",
    "windows disjoint",
    "fence only grows",
    "next_floor covers every issued timestamp",
    "records valid",
];

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.record {
            Some(r) => write!(
                f,
                "record{{owner {:?} fence {} expires {} window ({}, {}] next_floor {}}}",
                r.owner, r.fence, r.expires, r.floor, r.ceiling, r.next_floor
            )?,
            None => write!(f, "record{{none}}")?,
        }
        for h in &self.holders {
            write!(f, " | inc {}: ", h.inc)?;
            match h.phase {
                Phase::Holding { lease, last } => write!(
                    f,
                    "holds fence {} ({}, {}] last {:?}",
                    lease.fence, lease.floor, lease.ceiling, last
                )?,
                p => write!(f, "{p:?}")?,
            }
        }
        let used: Vec<u32> = (0..16).filter(|t| self.used & (1 << t) != 0).collect();
        write!(f, " | issued at {used:?} | in flight {:?}", self.net)
    }
}

fn print_path(property: &str, path: Path<State, Action>) {
    let steps = path.into_vec();
    println!("counterexample to {property:?}, {} steps:", steps.len() - 1);
    for (state, action) in steps {
        println!("    {state}");
        if let Some(a) = action {
            println!("  -> {a:?}");
        }
    }
}

/// A bound on the states visited, far above what the model reaches, so that a change that blows the state space up
/// fails here instead of eating the machine's memory.
const STATE_LIMIT: usize = 20_000_000;

fn report(variant: Variant, checker: &impl Checker<ProtocolModel>, started: Instant) {
    println!(
        "{variant:?}: {} states visited ({} unique), depth {}, {:.1?}",
        checker.state_count(),
        checker.unique_state_count(),
        checker.max_depth(),
        started.elapsed()
    );
}

#[test]
fn the_shipped_protocol_keeps_every_property_in_every_reachable_state() {
    let started = Instant::now();
    // Depth first, with symmetry reduction: every reachable state up to swapping the two holders.
    let checker = ProtocolModel::new(Variant::Shipped)
        .checker()
        .symmetry_fn(representative)
        .target_state_count(STATE_LIMIT)
        .spawn_dfs()
        .join();
    report(Variant::Shipped, &checker, started);
    assert!(
        checker.state_count() < STATE_LIMIT,
        "the state space was not exhausted within {STATE_LIMIT} states"
    );
    let mut failed = Vec::new();
    for property in SAFETY {
        if let Some(path) = checker.discovery(property) {
            print_path(property, path);
            failed.push(property);
        }
    }
    assert!(failed.is_empty(), "properties violated: {failed:?}");
    for sanity in [
        "a paused holder issues after a takeover",
        "a restarted holder issues",
        "a release hands its last timestamp over",
    ] {
        assert!(
            checker.discovery(sanity).is_some(),
            "{sanity:?} is never reached: the model does not explore what it claims"
        );
    }
}

/// Checks a broken variant: each property in `caught` must have a counterexample, which is printed.
fn assert_caught(variant: Variant, caught: &[&'static str]) {
    let started = Instant::now();
    // Breadth first, for the shortest counterexample; stops once each expected one is found.
    let checker = ProtocolModel::new(variant)
        .checker()
        .finish_when(HasDiscoveries::AllOf(caught.iter().copied().collect()))
        .target_state_count(STATE_LIMIT)
        .spawn_bfs()
        .join();
    report(variant, &checker, started);
    for &property in caught {
        let path = checker
            .discovery(property)
            .unwrap_or_else(|| panic!("{variant:?}: no counterexample to {property:?}"));
        println!("{variant:?}:");
        print_path(property, path);
    }
}

#[test]
fn next_floor_at_expiry_instead_of_the_ceiling_repeats_ids() {
    assert_caught(
        Variant::NextFloorIsExpiry,
        &["no duplicate id", "windows disjoint"],
    );
}

#[test]
fn release_without_the_fence_check_repeats_ids() {
    assert_caught(
        Variant::ReleaseWithoutFenceCheck,
        &[
            "no duplicate id",
            "next_floor covers every issued timestamp",
        ],
    );
}

#[test]
fn release_without_the_last_timestamp_repeats_ids() {
    assert_caught(
        Variant::ReleaseWithoutLast,
        &[
            "no duplicate id",
            "next_floor covers every issued timestamp",
        ],
    );
}

#[test]
fn a_keeper_without_the_regression_check_repeats_ids_on_a_replayed_grant() {
    assert_caught(Variant::NoRegressionCheck, &["no duplicate id"]);
}
