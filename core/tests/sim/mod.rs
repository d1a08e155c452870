//! A deterministic simulation of many holders sharing the slots of one namespace through a store, with clocks,
//! pauses, crashes and a network that all misbehave. See `docs/simulation.md`.
//!
//! One seed drives everything: the same seed replays the same run, step for step. Time is global simulated
//! milliseconds; the store's clock and each holder's wall clock are global time plus an offset that jumps. Holders
//! use the real `cosid::generator::Generator` and the real keeper's decisions, `cosid::keeper::machine`; this
//! module is their shell, as `core/src/keeper.rs` is in a runtime: it carries the machine's store calls over the
//! simulated network, its sleeps on global time, and its window changes to the generator.

pub mod checker;
pub mod clock;
pub mod store;

pub use checker::Kind;
use checker::{Checker, Violation};
use clock::{CallEvent, SimClock, Trap};
use cosid::generator::{Generator, Waits, Window};
use cosid::keeper::machine::{self, Action, Input, Machine, Now};
use cosid::lease::{AcquireRequest, Acquired, Namespace, NamespaceConfig, Owner, SlotLease};
use cosid::store::StoreError;
use cosid::{Error, Id, Layout, Tick};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;
use store::{Failure, SimStore, Variant};
use uuid::Uuid;

pub use store::Variant as ProtocolVariant;

/// Global time at the start of every run.
const START: u64 = 1_700_000_000_000;
const HOLDERS: usize = 6;
const BITS: u8 = 1;
const HOUR: u64 = 3_600_000;

/// Time constants of one run, in milliseconds. Millisecond runs and second-tick runs differ in scale.
#[derive(Debug, Clone, Copy)]
struct Params {
    layout: Layout,
    ttl: u64,
    tolerance: u64,
    /// How long a request waits for its reply before the keeper gives up on it.
    timeout: u64,
    /// Typical time between two steps.
    step: u64,
}

impl Params {
    fn for_seed(seed: u64) -> Self {
        if seed % 5 == 4 {
            Params {
                layout: Layout::new(Layout::DEFAULT_EPOCH_MS, Tick::Second, 31, BITS, 6).unwrap(),
                ttl: 5_000,
                tolerance: 3_000,
                timeout: 1_000,
                step: 40,
            }
        } else {
            Params {
                layout: Layout::new(Layout::DEFAULT_EPOCH_MS, Tick::Millisecond, 41, BITS, 2)
                    .unwrap(),
                ttl: 1_000,
                tolerance: 200,
                timeout: 250,
                step: 6,
            }
        }
    }
}

/// How one run is set up.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    pub variant: Variant,
    pub steps: usize,
    /// Keep a readable log of every event (slower; for replaying a failing seed).
    pub trace: bool,
}

/// What happened in a run, for the totals printed by the test.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub ids: u64,
    pub leases: u64,
    pub takeovers: u64,
    pub renewals: u64,
    pub releases: u64,
    pub calls: u64,
    pub errors: [u64; 5],
    pub crashes: u64,
    pub shutdowns: u64,
    pub pauses: u64,
    pub mid_call_pauses: u64,
    pub clock_jumps: u64,
    pub store_jumps: u64,
    pub partitions: u64,
    pub lost_messages: u64,
    pub duplicated_messages: u64,
    pub late_messages: u64,
    pub stale_replies: u64,
    /// Holders that resumed from a pause after their lease expired in the store.
    pub zombies: u64,
    /// Calls those zombies made while still bound to the expired lease.
    pub zombie_calls: u64,
    /// Ids such calls got back (safe only because they lie inside the old window).
    pub zombie_ids: u64,
    /// Calls frozen between the clock read and the return whose lease expired meanwhile.
    pub zombie_mid_call: u64,
    /// Of those, the ones that still returned an id when they resumed.
    pub zombie_mid_call_ids: u64,
    /// Ids below an earlier id of the same process, issued in a later window (another slot or lease).
    pub new_window_earlier: u64,
    /// Calls made with a cached clock that differed from the holder's wall clock (lagging, or ahead after a jump).
    pub lagging_cache_calls: u64,
}

impl Stats {
    pub fn add(&mut self, o: &Stats) {
        macro_rules! sum {
            ($($f:ident),*) => { $( self.$f += o.$f; )* };
        }
        sum!(
            ids,
            leases,
            takeovers,
            renewals,
            releases,
            calls,
            crashes,
            shutdowns,
            pauses,
            mid_call_pauses,
            clock_jumps,
            store_jumps,
            partitions,
            lost_messages,
            duplicated_messages,
            late_messages,
            stale_replies,
            zombies,
            lagging_cache_calls,
            zombie_calls,
            zombie_ids,
            zombie_mid_call,
            zombie_mid_call_ids,
            new_window_earlier
        );
        for (a, b) in self.errors.iter_mut().zip(o.errors) {
            *a += b;
        }
    }
}

pub const ERROR_NAMES: [&str; 5] = [
    "WindowClosed",
    "BeforeWindow",
    "ClockMovedBackwards",
    "SlotLost",
    "Closed",
];

/// The result of one run.
#[derive(Debug)]
pub struct Outcome {
    pub violations: Vec<Violation>,
    pub stats: Stats,
    pub trace: Vec<String>,
}

impl Outcome {
    pub fn has(&self, kind: Kind) -> bool {
        self.violations.iter().any(|v| v.kind == kind)
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Messages.

#[derive(Debug, Clone)]
enum Op {
    Acquire(AcquireRequest),
    Renew(SlotLease),
    Release(SlotLease, Option<u64>),
    Inspect,
    RaiseNotBefore(u64),
}

#[derive(Debug, Clone)]
enum Answer {
    Acquired(Result<Acquired, Failure>),
    Renewed(Result<SlotLease, Failure>),
    Released(Result<(), Failure>),
    Inspected(u64),
    Raised(Result<(), Failure>),
}

#[derive(Debug, Clone)]
enum Body {
    Request { op: Op },
    Reply { answer: Answer },
}

#[derive(Debug, Clone)]
struct Msg {
    /// Global time of delivery.
    at: u64,
    /// Tie-break, in order of sending.
    seq: u64,
    holder: usize,
    incarnation: Uuid,
    req: u64,
    body: Body,
}

// ---------------------------------------------------------------------------------------------------------------
// Holders.

/// A store call of the keeper's.
#[derive(Debug, Clone, Copy)]
enum CallKind {
    Acquire,
    Renew,
    Release,
    Inspect,
    Raise,
}

impl CallKind {
    /// The machine's input for this call failing with `error`.
    fn failed(self, error: StoreError) -> Input {
        match self {
            CallKind::Acquire => Input::Acquired(Err(error)),
            CallKind::Renew => Input::Renewed(Err(error)),
            CallKind::Release => Input::Released(Err(error)),
            CallKind::Inspect => Input::Inspected(Err(error)),
            CallKind::Raise => Input::RaisedNotBefore(Err(error)),
        }
    }
}

/// What the keeper's machine waits for.
#[derive(Debug)]
enum Waiting {
    /// A store call: the request's id, its kind, the slot it is about (for errors), and when the keeper gives up
    /// on it.
    Call {
        req: u64,
        kind: CallKind,
        slot: u32,
        deadline: u64,
    },
    /// A sleep, until this global time.
    Sleep(u64),
    /// Nothing: the machine is done.
    Nothing,
}
#[derive(Debug)]
struct Process {
    owner: Owner,
    generator: Arc<Generator>,
    machine: Machine,
    waiting: Waiting,
    /// The lease the generator is bound to (as the runtime's status shows it), if any.
    bound: Option<SlotLease>,
    /// Set on resuming from a pause past the lease's expiry: the lease it is still bound to.
    zombie: Option<(u32, u64)>,
}

#[derive(Debug)]
struct Holder {
    key: String,
    preferred: Option<u32>,
    clock: Arc<SimClock>,
    /// Wall clock = global time + offset.
    offset: i64,
    process: Option<Process>,
    restart_at: u64,
    /// Until when the holder's issuing thread is frozen (global time).
    paused_until: u64,
    /// Until when its keeper is frozen too (a whole-process pause).
    keeper_paused_until: u64,
    /// A call is frozen inside the generator (see `issue_with_trap`).
    in_call: bool,
    /// Until when every message to or from it is lost.
    partitioned_until: u64,
}

impl Holder {
    fn wall(&self, global: u64) -> u64 {
        global.saturating_add_signed(self.offset)
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The world.

struct World {
    seed: u64,
    p: Params,
    rng: StdRng,
    /// Drives the holders' cached clocks: a stream of its own, so the rest of a seed's run is what it was.
    cache_rng: StdRng,
    now: u64,
    store: SimStore,
    net: Vec<Msg>,
    msg_seq: u64,
    next_req: u64,
    holders: Vec<Holder>,
    checker: Checker,
    stats: Stats,
    trapped: bool,
    trace: Option<Vec<String>>,
}

/// Runs one seed.
pub fn run(seed: u64, setup: Setup) -> Outcome {
    let p = Params::for_seed(seed);
    let namespace = Namespace::new("sim").unwrap();
    let config = NamespaceConfig {
        bits: BITS,
        tolerance_ms: p.tolerance,
        layout: p.layout,
    };
    let mut rng = StdRng::seed_from_u64(seed);
    let holders = (0..HOLDERS)
        .map(|i| Holder {
            // Holders 4 and 5 share a key: a copied configuration.
            key: format!("host-{}", i.min(4)),
            preferred: (i % 3 == 0).then_some((i / 3) as u32),
            clock: Arc::new(SimClock::default()),
            offset: if i == 0 {
                0
            } else {
                rng.random_range(-(p.tolerance as i64)..=p.tolerance as i64)
            },
            process: None,
            restart_at: rng.random_range(0..p.ttl),
            paused_until: 0,
            keeper_paused_until: 0,
            in_call: false,
            partitioned_until: 0,
        })
        .collect();
    let mut world = World {
        seed,
        p,
        rng,
        cache_rng: StdRng::seed_from_u64(seed ^ 0xC0C0_CAC4_E000_0001),
        now: START,
        store: SimStore::new(setup.variant, namespace, config, p.ttl),
        net: Vec::new(),
        msg_seq: 0,
        next_req: 0,
        holders,
        checker: Checker::new(p.layout),
        stats: Stats::default(),
        trapped: false,
        trace: setup.trace.then(Vec::new),
    };
    world.log(|| format!("seed {seed}: {p:?}"));
    for _ in 0..setup.steps {
        world.step();
    }
    world.checker.finish();
    world.stats.ids = world.checker.ids() as u64;
    world.stats.leases = world.checker.leases() as u64;
    world.stats.new_window_earlier = world.checker.new_window_earlier;
    Outcome {
        violations: std::mem::take(&mut world.checker.violations),
        stats: world.stats,
        trace: world.trace.take().unwrap_or_default(),
    }
}

impl World {
    fn log(&mut self, line: impl FnOnce() -> String) {
        if let Some(t) = self.trace.as_mut() {
            let line = line();
            t.push(format!("[{} +{}] {line}", self.seed, self.now - START));
        }
    }

    /// One step: time passes, due messages arrive, timers fire, and one random thing happens.
    fn step(&mut self) {
        let dt = if self.rng.random_bool(0.05) {
            self.rng.random_range(0..self.p.ttl / 2)
        } else {
            self.rng.random_range(0..=2 * self.p.step)
        };
        self.now += dt;
        self.deliver();
        for h in 0..self.holders.len() {
            self.wake(h);
            self.keeper_timers(h);
        }
        self.random_event();
    }

    /// Runs steps until global time reaches `until` (used while one call is frozen).
    fn run_until(&mut self, until: u64) {
        while self.now < until {
            self.step();
        }
    }

    // -- the network ------------------------------------------------------------------------------------------

    fn send(&mut self, holder: usize, incarnation: Uuid, req: u64, body: Body) {
        let h = &self.holders[holder];
        if h.partitioned_until > self.now || self.rng.random_bool(0.03) {
            self.stats.lost_messages += 1;
            return;
        }
        let copies = if self.rng.random_bool(0.03) {
            self.stats.duplicated_messages += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let roll: f64 = self.rng.random();
            let delay = if roll < 0.85 {
                self.rng.random_range(0..=5)
            } else if roll < 0.95 {
                self.rng.random_range(5..100)
            } else {
                self.stats.late_messages += 1;
                self.rng.random_range(100..3 * self.p.ttl)
            };
            self.msg_seq += 1;
            self.net.push(Msg {
                at: self.now + delay,
                seq: self.msg_seq,
                holder,
                incarnation,
                req,
                body: body.clone(),
            });
        }
    }

    fn deliver(&mut self) {
        loop {
            let due = self
                .net
                .iter()
                .enumerate()
                .filter(|(_, m)| m.at <= self.now)
                .min_by_key(|(_, m)| (m.at, m.seq))
                .map(|(i, _)| i);
            let Some(i) = due else { break };
            let msg = self.net.swap_remove(i);
            match msg.body.clone() {
                Body::Request { op } => self.apply(msg, op),
                Body::Reply { answer } => {
                    let h = &self.holders[msg.holder];
                    if h.keeper_paused_until > self.now {
                        // A frozen process reads its socket when it wakes up.
                        let at = h.keeper_paused_until;
                        self.net.push(Msg { at, ..msg });
                    } else if h.partitioned_until > self.now {
                        self.stats.lost_messages += 1;
                    } else {
                        self.on_answer(msg.holder, msg.incarnation, msg.req, answer);
                    }
                }
            }
        }
    }

    /// The store applies one request atomically and answers.
    fn apply(&mut self, msg: Msg, op: Op) {
        let now = self.store.now(self.now);
        let answer = match op {
            Op::Acquire(request) => {
                let r = self.store.acquire(&request, now);
                if let Ok((acquired, Some(change))) = &r {
                    if change.before.as_ref().is_some_and(|b| b.owner.is_some()) {
                        self.stats.takeovers += 1;
                    }
                    self.checker.on_grant(msg.holder, change);
                    let l = &acquired.lease;
                    self.log(|| {
                        format!(
                            "store: grant slot {} fence {} ({}, {}] exp {} to holder {} req {}",
                            l.slot, l.fence, l.floor, l.ceiling, l.expires_at, msg.holder, msg.req
                        )
                    });
                }
                Answer::Acquired(r.map(|(a, _)| a))
            }
            Op::Renew(lease) => {
                let r = self.store.renew(&lease, now);
                if let Ok((renewed, change)) = &r {
                    self.stats.renewals += 1;
                    self.checker.on_renew(change);
                    let (slot, fence, ceiling) = (renewed.slot, renewed.fence, renewed.ceiling);
                    self.log(|| {
                        format!(
                            "store: renew slot {slot} fence {fence} to {ceiling} (holder {})",
                            msg.holder
                        )
                    });
                }
                Answer::Renewed(r.map(|(l, _)| l))
            }
            Op::Release(lease, last) => {
                let r = self.store.release(&lease, last);
                if let Ok(change) = &r {
                    self.stats.releases += 1;
                    self.checker.on_release(change);
                    let next_floor = change.after.next_floor;
                    self.log(|| {
                        format!(
                            "store: release slot {} fence {} last {last:?} -> next_floor {next_floor} (holder {})",
                            lease.slot, lease.fence, msg.holder
                        )
                    });
                }
                Answer::Released(r.map(|_| ()))
            }
            Op::Inspect => Answer::Inspected(now),
            Op::RaiseNotBefore(bound) => {
                let r = self.store.raise_not_before(bound);
                self.log(|| format!("store: raise not_before to {bound}: {r:?}"));
                Answer::Raised(r)
            }
        };
        let (holder, incarnation, req) = (msg.holder, msg.incarnation, msg.req);
        self.send(holder, incarnation, req, Body::Reply { answer });
    }

    // -- the keeper: a shell around the real machine ---------------------------------------------------------

    /// The keeper's settings, with the jitter seeded from the incarnation as the runtime seeds it (the
    /// incarnations come from the simulation's seed, so the jitter replays with it).
    fn keeper_config(&self, incarnation: uuid::Uuid) -> machine::Config {
        machine::Config {
            ttl_ms: self.p.ttl,
            tolerance_ms: self.p.tolerance,
            jitter_seed: incarnation.as_u64_pair().0 | 1,
        }
    }

    /// The keeper's time: monotonic timers on global time, as tokio's are, and the holder's wall clock.
    fn keeper_now(&self, h: usize) -> Now {
        Now {
            mono_ms: self.now,
            wall_ms: self.holders[h].wall(self.now),
        }
    }

    fn request(&mut self, h: usize, op: Op) -> u64 {
        self.next_req += 1;
        let req = self.next_req;
        let incarnation = self.holders[h].process.as_ref().unwrap().owner.incarnation;
        self.send(h, incarnation, req, Body::Request { op });
        req
    }

    /// Timers (monotonic: global time, as tokio's timers are): a sleep that is over, or a call not answered in
    /// time, which the keeper gives up on as `Unavailable` (the machine bounds its calls; an acquisition is
    /// bounded by the network timeout of the store's driver).
    fn keeper_timers(&mut self, h: usize) {
        let now = self.now;
        let holder = &self.holders[h];
        if holder.keeper_paused_until > now {
            return;
        }
        let Some(process) = holder.process.as_ref() else {
            return;
        };
        let input = match process.waiting {
            Waiting::Sleep(t) if t <= now => Input::TimerFired,
            Waiting::Call { kind, deadline, .. } if deadline <= now => {
                kind.failed(StoreError::Unavailable {
                    store: "sim",
                    source: "no answer in time".into(),
                })
            }
            _ => return,
        };
        self.feed(h, input);
    }

    /// Feeds one input to holder `h`'s machine and carries out the actions.
    fn feed(&mut self, h: usize, input: Input) {
        let now = self.keeper_now(h);
        let process = self.holders[h].process.as_mut().unwrap();
        process.waiting = Waiting::Nothing;
        let actions = process.machine.handle(now, input);
        self.carry_out(h, actions);
    }

    fn carry_out(&mut self, h: usize, actions: Vec<Action>) {
        let mut queue: std::collections::VecDeque<Action> = actions.into();
        while let Some(action) = queue.pop_front() {
            let ttl = self.p.ttl;
            let timeout = self.p.timeout;
            let now = self.now;
            let keeper_now = self.keeper_now(h);
            let process = self.holders[h].process.as_mut().unwrap();
            let incarnation = process.owner.incarnation;
            let slot = process.machine.lease().map_or(0, |l| l.slot);
            let (op, kind, bound) = match action {
                Action::Acquire => {
                    let op = Op::Acquire(AcquireRequest {
                        owner: process.owner.clone(),
                        ttl_ms: ttl,
                        preferred_slot: self.holders[h].preferred,
                    });
                    (op, CallKind::Acquire, timeout)
                }
                Action::Renew { lease, timeout_ms } => {
                    (Op::Renew(lease), CallKind::Renew, timeout_ms)
                }
                Action::Release {
                    lease,
                    last,
                    timeout_ms,
                } => (Op::Release(lease, last), CallKind::Release, timeout_ms),
                Action::Inspect { timeout_ms } => (Op::Inspect, CallKind::Inspect, timeout_ms),
                Action::RaiseNotBefore { bound, timeout_ms } => {
                    (Op::RaiseNotBefore(bound), CallKind::Raise, timeout_ms)
                }
                Action::SleepUntil(t) => {
                    process.waiting = Waiting::Sleep(t);
                    continue;
                }
                Action::Bind(lease) => {
                    assert!(
                        process.generator.is_closed(),
                        "binding a generator that is still open"
                    );
                    process.generator.bind(Window {
                        slot: lease.slot,
                        floor_ms: lease.floor,
                        ceiling_ms: lease.ceiling,
                    });
                    self.checker.on_window(
                        incarnation,
                        lease.slot,
                        lease.fence,
                        lease.floor,
                        lease.ceiling,
                    );
                    self.log(|| {
                        format!(
                            "holder {h}: bound slot {} fence {} ({}, {}]",
                            lease.slot, lease.fence, lease.floor, lease.ceiling
                        )
                    });
                    continue;
                }
                Action::Extend(lease) => {
                    process.generator.extend(lease.ceiling);
                    self.checker.on_window(
                        incarnation,
                        lease.slot,
                        lease.fence,
                        lease.floor,
                        lease.ceiling,
                    );
                    continue;
                }
                Action::Invalidate => {
                    process.generator.invalidate();
                    continue;
                }
                Action::Seal => {
                    let was_closed = process.generator.is_closed();
                    let last = process.generator.seal();
                    let actions = process
                        .machine
                        .handle(keeper_now, Input::Sealed { was_closed, last });
                    queue.extend(actions);
                    continue;
                }
                Action::SetLease(lease, _) => {
                    process.bound = Some(lease);
                    continue;
                }
                Action::SetState(state) => {
                    if !matches!(state, cosid::State::Active | cosid::State::Renewing) {
                        process.bound = None;
                    }
                    continue;
                }
                Action::Emit(event) => {
                    self.log(|| format!("holder {h}: event {event}"));
                    continue;
                }
                Action::Log(_, line) => {
                    self.log(|| format!("holder {h}: {line}"));
                    continue;
                }
                Action::Started(Ok(acquired)) => {
                    // As the runtime does: install the first lease, then run the keeper from it.
                    let incarnation = acquired.lease.owner.incarnation;
                    let config = self.keeper_config(incarnation);
                    let now = self.keeper_now(h);
                    let (running, first) = Machine::running(config, now, acquired.lease.clone());
                    self.holders[h].process.as_mut().unwrap().machine = running;
                    queue.extend(Machine::install(config, now, &acquired));
                    queue.extend(first);
                    continue;
                }
                Action::Started(Err(e)) => {
                    // The runtime's build fails with the error; the application tries again later.
                    let restart = self.rng.random_range(0..2 * ttl);
                    let holder = &mut self.holders[h];
                    holder.process = None;
                    holder.restart_at = now + restart;
                    self.log(|| format!("holder {h}: start failed: {e}"));
                    return;
                }
                Action::Finished(_) => {
                    process.waiting = Waiting::Nothing;
                    continue;
                }
            };
            let req = self.request(h, op);
            let process = self.holders[h].process.as_mut().unwrap();
            process.waiting = Waiting::Call {
                req,
                kind,
                slot,
                deadline: now + bound,
            };
        }
    }

    fn on_answer(&mut self, h: usize, incarnation: Uuid, req: u64, answer: Answer) {
        let Some(process) = self.holders[h].process.as_mut() else {
            return;
        };
        if process.owner.incarnation != incarnation {
            return; // An answer to a process that died.
        }
        let Waiting::Call {
            req: awaited, slot, ..
        } = process.waiting
        else {
            self.stats.stale_replies += 1;
            return;
        };
        if awaited != req {
            // The keeper awaits one call at a time; a late answer to an abandoned one is dropped.
            self.stats.stale_replies += 1;
            return;
        }
        let input = match answer {
            Answer::Acquired(r) => Input::Acquired(r.map_err(|f| f.into_error(slot))),
            Answer::Renewed(r) => Input::Renewed(r.map_err(|f| f.into_error(slot))),
            Answer::Released(r) => Input::Released(r.map_err(|f| f.into_error(slot))),
            Answer::Inspected(store_now) => Input::Inspected(Ok(store_now)),
            Answer::Raised(r) => Input::RaisedNotBefore(r.map_err(|f| f.into_error(slot))),
        };
        self.feed(h, input);
    }

    // -- lifecycle --------------------------------------------------------------------------------------------

    /// Restarts a holder that is down, and notices one whose pause ended.
    fn wake(&mut self, h: usize) {
        let now = self.now;
        let holder = &mut self.holders[h];
        if holder.in_call {
            return;
        }
        if holder.process.is_none() && holder.restart_at <= now && holder.keeper_paused_until <= now
        {
            let bytes: [u8; 16] = self.rng.random();
            let owner = Owner {
                key: holder.key.clone(),
                incarnation: uuid::Builder::from_random_bytes(bytes).into_uuid(),
            };
            let generator = Generator::new(
                self.p.layout,
                holder.clock.clone(),
                Waits {
                    backwards: Duration::from_millis(self.p.ttl / 5),
                    window: Duration::from_millis(self.p.step * 4),
                },
            );
            // As `Runtime::build`: the first acquisition, bounded by the acquire timeout (a ttl by default).
            let (machine, actions) = Machine::start(
                self.keeper_config(owner.incarnation),
                self.keeper_now(h),
                self.p.ttl,
            );
            let holder = &mut self.holders[h];
            holder.process = Some(Process {
                owner,
                generator: Arc::new(generator),
                machine,
                waiting: Waiting::Nothing,
                bound: None,
                zombie: None,
            });
            self.log(|| format!("holder {h}: started"));
            self.carry_out(h, actions);
            return;
        }
        if holder.paused_until != 0 && holder.paused_until <= now {
            holder.paused_until = 0;
            holder.keeper_paused_until = 0;
            self.resumed(h);
        }
    }

    /// A pause ended: is the holder now a zombie (its lease expired in the store meanwhile)?
    fn resumed(&mut self, h: usize) -> bool {
        let store_now = self.store.now(self.now);
        let Some(process) = self.holders[h].process.as_mut() else {
            return false;
        };
        let Some(lease) = &process.bound else {
            return false;
        };
        if self.store.is_live(lease, store_now) {
            return false;
        }
        process.zombie = Some((lease.slot, lease.fence));
        self.stats.zombies += 1;
        let (slot, fence) = (lease.slot, lease.fence);
        self.log(|| format!("holder {h}: resumed as a zombie on slot {slot} fence {fence}"));
        true
    }

    fn crash(&mut self, h: usize) {
        let restart = self.rng.random_range(0..2 * self.p.ttl);
        let holder = &mut self.holders[h];
        if holder.process.take().is_some() {
            holder.restart_at = self.now + restart;
            holder.paused_until = 0;
            holder.keeper_paused_until = 0;
            self.stats.crashes += 1;
            self.log(|| format!("holder {h}: crashed"));
        }
    }

    /// Ordered shutdown, as `Runtime::shutdown`: the keeper's machine seals, then releases with the exact last
    /// timestamp. The process exits once the release is sent (its answer changes nothing).
    fn shutdown(&mut self, h: usize) {
        let restart = self.rng.random_range(0..2 * self.p.ttl);
        let holder = &self.holders[h];
        if holder.keeper_paused_until > self.now {
            return;
        }
        let Some(process) = holder.process.as_ref() else {
            return;
        };
        if !process.machine.interruptible() {
            // The keeper finishes the call it is in first (as the runtime's does); shutdown comes later.
            return;
        }
        self.log(|| format!("holder {h}: shutdown"));
        self.feed(h, Input::Shutdown);
        let holder = &mut self.holders[h];
        if holder.process.take().is_some() {
            holder.restart_at = self.now + restart;
            holder.paused_until = 0;
            self.stats.shutdowns += 1;
        }
    }

    // -- issuing ----------------------------------------------------------------------------------------------

    fn is_bound(&self, h: usize) -> bool {
        self.holders[h]
            .process
            .as_ref()
            .is_some_and(|p| p.bound.is_some())
    }

    fn can_issue(&self, h: usize) -> bool {
        let holder = &self.holders[h];
        holder.process.is_some() && holder.paused_until <= self.now && !holder.in_call
    }

    /// A burst of calls by holder `h`.
    fn issue(&mut self, h: usize) {
        let calls = self.rng.random_range(1..=10);
        for _ in 0..calls {
            if !self.can_issue(h) {
                return;
            }
            // The holder keeps issuing while time passes, so its ids spread over consecutive ticks.
            if self.rng.random_bool(0.5) {
                self.now += (self.p.step / 6).max(1);
                self.deliver();
                // An answer may have ended the process (a start that failed).
                if !self.can_issue(h) {
                    return;
                }
            }
            if !self.trapped && self.rng.random_bool(0.01) {
                self.issue_with_trap(h);
                continue;
            }
            let holder = &self.holders[h];
            let process = holder.process.as_ref().unwrap();
            let incarnation = process.owner.incarnation;
            let generator = process.generator.clone();
            holder.clock.set(holder.wall(self.now));
            self.move_cache(h);
            let zombie = self.zombie_call(h);
            let roll: f64 = self.rng.random();
            let results: Vec<Result<Id, Error>> = if roll < 0.7 {
                vec![generator.next_id()]
            } else if roll < 0.85 {
                vec![generator
                    .try_next_id()
                    .map_or_else(|| generator.next_id(), Ok)]
            } else {
                let mut out = vec![Id::from_u64(0); self.rng.random_range(1..=5)];
                match generator.fill(&mut out) {
                    Ok(()) => out.into_iter().map(Ok).collect(),
                    Err(e) => vec![Err(e)],
                }
            };
            self.now += self.holders[h].clock.take_slept();
            let refused = results.iter().any(Result::is_err);
            for r in results {
                self.record(h, incarnation, r, zombie);
            }
            if refused {
                // A caller that is refused backs off for a while.
                return;
            }
        }
    }

    /// Whether this call is a zombie's (counted once per pause).
    fn zombie_call(&mut self, h: usize) -> bool {
        let process = self.holders[h].process.as_mut().unwrap();
        let bound = process.bound.as_ref().map(|l| (l.slot, l.fence));
        match process.zombie.take() {
            Some(z) if Some(z) == bound => {
                self.stats.zombie_calls += 1;
                true
            }
            _ => false,
        }
    }

    fn record(&mut self, h: usize, incarnation: Uuid, result: Result<Id, Error>, zombie: bool) {
        self.stats.calls += 1;
        match result {
            Ok(id) => {
                if zombie {
                    self.stats.zombie_ids += 1;
                }
                self.checker.on_id(h, incarnation, id);
            }
            Err(e) => {
                let i = match e {
                    Error::WindowClosed { .. } => 0,
                    Error::BeforeWindow { .. } => 1,
                    Error::ClockMovedBackwards { .. } => 2,
                    Error::SlotLost { .. } => 3,
                    Error::Closed { .. } => 4,
                    other => return self.checker.unexpected(h, other.to_string()),
                };
                self.stats.errors[i] += 1;
            }
        }
    }

    /// One call frozen right after a clock read (inside `next_id`, before the window check's result is returned),
    /// for a random time during which the rest of the world runs on.
    fn issue_with_trap(&mut self, h: usize) {
        let pause = if self.rng.random_bool(0.6) {
            self.rng.random_range(self.p.ttl..4 * self.p.ttl)
        } else {
            self.rng.random_range(1..self.p.ttl)
        };
        // A whole-process freeze (SIGSTOP, VM) stops the keeper too; a thread-level stall does not.
        let whole_process = self.rng.random_bool(0.7);
        let reads_before = self.rng.random_range(0..3);
        let holder = &self.holders[h];
        let process = holder.process.as_ref().unwrap();
        let incarnation = process.owner.incarnation;
        let generator = process.generator.clone();
        let clock = holder.clock.clone();
        let lease = process.bound.clone();
        clock.set(holder.wall(self.now));
        self.move_cache(h);
        let zombie = self.zombie_call(h);

        let (events, from_call) = mpsc::channel();
        let (resume, resumed) = mpsc::channel();
        clock.arm(Trap {
            reads_before,
            paused: events.clone(),
            resume: resumed,
        });
        let call = std::thread::spawn(move || {
            let r = generator.next_id();
            events.send(CallEvent::Done(r)).unwrap();
        });
        let result = match from_call.recv().unwrap() {
            CallEvent::Done(r) => {
                clock.disarm();
                self.now += clock.take_slept();
                r
            }
            CallEvent::Paused => {
                self.stats.mid_call_pauses += 1;
                self.now += clock.take_slept();
                let until = self.now + pause;
                {
                    let holder = &mut self.holders[h];
                    holder.in_call = true;
                    holder.paused_until = until;
                    if whole_process {
                        holder.keeper_paused_until = until;
                    }
                }
                self.log(|| format!("holder {h}: frozen inside next_id for {pause} ms (whole process: {whole_process})"));
                self.trapped = true;
                self.run_until(until);
                self.trapped = false;
                let expired = lease
                    .as_ref()
                    .is_some_and(|l| !self.store.is_live(l, self.store.now(self.now)));
                let holder = &mut self.holders[h];
                holder.in_call = false;
                holder.paused_until = 0;
                holder.keeper_paused_until = 0;
                clock.set(holder.wall(self.now));
                resume.send(()).unwrap();
                let r = match from_call.recv().unwrap() {
                    CallEvent::Done(r) => r,
                    CallEvent::Paused => unreachable!("the trap springs once"),
                };
                self.now += clock.take_slept();
                if expired {
                    self.stats.zombie_mid_call += 1;
                    if r.is_ok() {
                        self.stats.zombie_mid_call_ids += 1;
                    }
                }
                let outcome = format!("{r:?}");
                self.log(|| {
                    format!(
                        "holder {h}: resumed inside next_id (lease expired: {expired}): {outcome}"
                    )
                });
                r
            }
        };
        call.join().unwrap();
        self.record(h, incarnation, result, zombie);
    }

    // -- faults -----------------------------------------------------------------------------------------------

    fn random_event(&mut self) {
        let h = self.rng.random_range(0..self.holders.len());
        let roll: f64 = self.rng.random();
        if roll < 0.80 {
            // Mostly a holder that has a window: that is where ids come from, and where they could collide.
            let bound: Vec<usize> = (0..self.holders.len())
                .filter(|&i| self.can_issue(i) && self.is_bound(i))
                .collect();
            let h = if !bound.is_empty() && self.rng.random_bool(0.75) {
                bound[self.rng.random_range(0..bound.len())]
            } else {
                h
            };
            self.issue(h);
        } else if roll < 0.83 {
            self.pause(h);
        } else if roll < 0.86 {
            self.jump_clock(h);
        } else if roll < 0.88 {
            // NTP brings the clock back near the truth.
            let tolerance = self.p.tolerance as i64;
            self.holders[h].offset = self.rng.random_range(-tolerance..=tolerance);
        } else if roll < 0.895 {
            if !self.holders[h].in_call {
                self.crash(h);
            }
        } else if roll < 0.91 {
            self.shutdown(h);
        } else if roll < 0.92 {
            let d = self.rng.random_range(100..3 * self.p.ttl);
            self.holders[h].partitioned_until = self.now + d;
            self.stats.partitions += 1;
            self.log(|| format!("holder {h}: partitioned for {d} ms"));
        } else if roll < 0.925 {
            self.jump_store_clock();
        }
    }

    fn pause(&mut self, h: usize) {
        let holder = &self.holders[h];
        if holder.process.is_none() || holder.in_call || holder.paused_until > self.now {
            return;
        }
        let d = if self.rng.random_bool(0.7) {
            self.rng.random_range(self.p.ttl..5 * self.p.ttl)
        } else {
            self.rng.random_range(1..self.p.ttl)
        };
        let whole_process = self.rng.random_bool(0.8);
        let holder = &mut self.holders[h];
        holder.paused_until = self.now + d;
        if whole_process {
            holder.keeper_paused_until = self.now + d;
        }
        self.stats.pauses += 1;
        self.log(|| format!("holder {h}: paused for {d} ms (whole process: {whole_process})"));
    }

    /// Before a call: the holder's cached clock is refreshed (a ticker that keeps up), left as it was (a ticker
    /// that lags or stopped: across clock jumps, pauses and lease changes), or marked stale (a parked ticker).
    fn move_cache(&mut self, h: usize) {
        let clock = &self.holders[h].clock;
        let wall = self.holders[h].wall(self.now);
        let roll: f64 = self.cache_rng.random();
        if roll < 0.5 {
            clock.set_cached(wall);
        } else if roll < 0.8 {
            if clock.cached() != 0 && clock.cached() != wall {
                self.stats.lagging_cache_calls += 1;
            }
        } else {
            clock.set_cached(0);
        }
    }

    /// A step of the holder's wall clock: milliseconds, seconds or hours, either way.
    fn jump_clock(&mut self, h: usize) {
        let magnitude = match self.rng.random_range(0..10) {
            0..=4 => self.rng.random_range(1..50),
            5..=8 => self.rng.random_range(50..5_000),
            _ => self.rng.random_range(HOUR / 2..3 * HOUR),
        } as i64;
        let sign = if self.rng.random_bool(0.5) { 1 } else { -1 };
        let holder = &mut self.holders[h];
        holder.offset = (holder.offset + sign * magnitude).clamp(-4 * HOUR as i64, 4 * HOUR as i64);
        let offset = holder.offset;
        self.stats.clock_jumps += 1;
        self.log(|| format!("holder {h}: wall clock offset now {offset} ms"));
    }

    /// The store's clock jumps (a failover, NTP): leases expire earlier or later.
    fn jump_store_clock(&mut self) {
        let offset = match self.rng.random_range(0..10) {
            0..=5 => self.store.offset + self.rng.random_range(-2_000..2_000),
            6..=7 => 0,
            _ => self.rng.random_range(-(HOUR as i64)..HOUR as i64),
        };
        self.store.offset = offset;
        self.stats.store_jumps += 1;
        self.log(|| format!("store: clock offset now {offset} ms"));
    }
}
