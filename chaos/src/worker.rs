//! A worker process: one cosid runtime on the store under test (its URL), issuing ids at a modest rate and logging every id and
//! every lease window before it counts.
//!
//! Control arrives on standard input, one command a line: `offset <ms>` shifts the worker's clock (the nemesis'
//! clock fault), `stop` (or the end of input, when the harness is gone) shuts the runtime down in order.

use crate::clock::OffsetClock;
use crate::logs::{encode_id, wall_ms, Line, LineWriter};
use cosid::{Event, Layout, Runtime};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What a worker runs with.
#[derive(Debug, Clone)]
pub struct WorkerArgs {
    /// The store URL (`redis://...`, `sqlite:///...`).
    pub url: String,
    /// The namespace.
    pub namespace: String,
    /// Slot bits of the namespace.
    pub bits: u8,
    /// Lease length.
    pub ttl: Duration,
    /// How far past expiry a holder may issue.
    pub tolerance: Duration,
    /// The worker's number (its owner key is `chaos-w<number>`, the same across restarts).
    pub worker: usize,
    /// Where the ids go.
    pub ids: PathBuf,
    /// Where the events go.
    pub events: PathBuf,
    /// Ids per batch.
    pub batch: usize,
    /// Pause between batches.
    pub pause: Duration,
}

/// How long an id waits for the event that grants its window before it is written anyway (and then flagged by
/// the checker if no such window exists). The generator installs a window a moment before the keeper reports it.
const WINDOW_EVENT_WAIT: Duration = Duration::from_secs(1);

/// How often the worker writes its counters.
const STATS_EVERY: Duration = Duration::from_millis(500);

/// The windows this incarnation has logged: (slot, floor, ceiling).
#[derive(Debug, Default)]
struct Windows {
    list: Mutex<Vec<(u32, u64, u64)>>,
    changed: Condvar,
}

impl Windows {
    fn lock(&self) -> MutexGuard<'_, Vec<(u32, u64, u64)>> {
        self.list.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn covers(list: &[(u32, u64, u64)], slot: u32, ts: u64) -> bool {
        list.iter()
            .rev()
            .any(|&(s, floor, ceiling)| s == slot && floor < ts && ts <= ceiling)
    }

    /// Waits until every `(slot, ts)` lies in a logged window, or until `limit`.
    fn wait_for(&self, wanted: &[(u32, u64)], limit: Duration) {
        let deadline = Instant::now() + limit;
        let mut list = self.lock();
        for &(slot, ts) in wanted {
            while !Self::covers(&list, slot, ts) {
                let now = Instant::now();
                if now >= deadline {
                    return;
                }
                list = self
                    .changed
                    .wait_timeout(list, deadline - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
    }
}

/// The events file, shared by the keeper's thread (events), the control thread and the main loop.
#[derive(Debug, Clone)]
struct Events(Arc<Mutex<LineWriter>>);

impl Events {
    fn write(&self, line: Line) {
        let mut w = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = w.write(&line) {
            // The log is the point of the worker: without it nothing it does can be checked.
            eprintln!("cosid-chaos worker: cannot write the events log: {e}");
            std::process::exit(3);
        }
    }
}

fn event_line(e: &Event) -> Line {
    let at = wall_ms();
    match e {
        Event::Acquired {
            slot,
            fence,
            floor_ms,
            ceiling_ms,
            expires_at_ms,
        } => Line::new(at, "ACQUIRED")
            .field("slot", slot)
            .field("fence", fence)
            .field("floor", floor_ms)
            .field("ceiling", ceiling_ms)
            .field("expires", expires_at_ms),
        Event::Renewed {
            slot,
            ceiling_ms,
            expires_at_ms,
        } => Line::new(at, "RENEWED")
            .field("slot", slot)
            .field("ceiling", ceiling_ms)
            .field("expires", expires_at_ms),
        Event::RenewFailed {
            slot,
            error,
            retry_in_ms,
        } => Line::new(at, "RENEW_FAILED")
            .field("slot", slot)
            .field("retry_in", retry_in_ms)
            .reason(error),
        Event::SlotLost { slot, reason } => Line::new(at, "SLOT_LOST")
            .field("slot", slot)
            .reason(reason),
        Event::Released {
            slot,
            last_issued_ms,
        } => Line::new(at, "RELEASED").field("slot", slot).field(
            "last",
            last_issued_ms.map_or_else(|| "none".to_owned(), |v| v.to_string()),
        ),
        Event::DuplicateOwnerKey { key, other_slot } => Line::new(at, "DUPLICATE_OWNER_KEY")
            .field("other_slot", other_slot)
            .reason(key),
        Event::ClockSkew { local_ms, store_ms } => Line::new(at, "CLOCK_SKEW")
            .field("local", local_ms)
            .field("store", store_ms),
        Event::StoreRegression { slot, detail } => Line::new(at, "STORE_REGRESSION")
            .field("slot", slot)
            .reason(detail),
        other => Line::new(at, "OTHER_EVENT").reason(other),
    }
}

/// Counters the worker reports in `STATS` lines.
#[derive(Debug, Default)]
struct Stats {
    attempted: u64,
    acked: u64,
    /// Refused id calls, by error code.
    errors: BTreeMap<&'static str, u64>,
    /// Failed start-ups (no free slot, store down), by error code.
    build_errors: BTreeMap<&'static str, u64>,
}

impl Stats {
    fn line(&self) -> Line {
        let mut l = Line::new(wall_ms(), "STATS")
            .field("attempted", self.attempted)
            .field("acked", self.acked);
        for (code, n) in &self.errors {
            l = l.field(&format!("err.{code}"), n);
        }
        for (code, n) in &self.build_errors {
            l = l.field(&format!("build_err.{code}"), n);
        }
        l
    }
}

/// Runs a worker until `stop` arrives on standard input. Returns the process exit code.
pub fn run(args: WorkerArgs) -> i32 {
    let events = match LineWriter::create(&args.events) {
        Ok(w) => Events(Arc::new(Mutex::new(w))),
        Err(e) => {
            eprintln!(
                "cosid-chaos worker: cannot create {}: {e}",
                args.events.display()
            );
            return 3;
        }
    };
    let mut ids = match File::options().create(true).append(true).open(&args.ids) {
        Ok(f) => f,
        Err(e) => {
            eprintln!(
                "cosid-chaos worker: cannot create {}: {e}",
                args.ids.display()
            );
            return 3;
        }
    };
    events.write(
        Line::new(wall_ms(), "START")
            .field("pid", std::process::id())
            .field("worker", args.worker),
    );

    let clock = Arc::new(OffsetClock::new());
    let stop = Arc::new(AtomicBool::new(false));
    spawn_control(clock.clone(), stop.clone(), events.clone());

    let windows = Arc::new(Windows::default());
    let layout = Layout::millis();
    let mut stats = Stats::default();
    let mut last_stats = Instant::now();
    let mut runtime: Option<Runtime> = None;
    let mut buf = Vec::with_capacity(args.batch * crate::logs::ID_RECORD);
    let mut batch: Vec<(u64, u32, u64)> = Vec::with_capacity(args.batch);

    while !stop.load(Ordering::SeqCst) {
        if last_stats.elapsed() >= STATS_EVERY {
            events.write(stats.line());
            last_stats = Instant::now();
        }
        let Some(rt) = runtime.as_ref() else {
            match build(&args, clock.clone(), events.clone(), windows.clone()) {
                Ok(rt) => {
                    events.write(
                        Line::new(wall_ms(), "BUILT")
                            .field("incarnation", rt.status().owner.incarnation),
                    );
                    runtime = Some(rt);
                }
                Err(e) => {
                    // Every slot is held (half the workers wait here), the store is down, or (SQLite) the file is
                    // refused or held off: try again. The first error of each other code is logged with its text.
                    let n = stats.build_errors.entry(e.code()).or_default();
                    *n += 1;
                    if *n == 1 && e.code() != "EXHAUSTED" {
                        events.write(
                            Line::new(wall_ms(), "BUILD_FAILED")
                                .field("code", e.code())
                                .reason(&e),
                        );
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            continue;
        };

        batch.clear();
        for _ in 0..args.batch {
            stats.attempted += 1;
            match rt.next_id() {
                Ok(id) => match layout.decompose(id) {
                    Ok(p) => batch.push((id.as_u64(), p.slot as u32, p.timestamp_ms)),
                    Err(_) => batch.push((id.as_u64(), u32::MAX, 0)),
                },
                Err(e) => {
                    *stats.errors.entry(e.code()).or_default() += 1;
                    break;
                }
            }
        }
        if !batch.is_empty() {
            let wanted: Vec<(u32, u64)> = batch.iter().map(|&(_, s, t)| (s, t)).collect();
            windows.wait_for(&wanted, WINDOW_EVENT_WAIT);
            buf.clear();
            let at = wall_ms();
            for &(id, _, _) in &batch {
                encode_id(id, at, &mut buf);
            }
            if let Err(e) = ids.write_all(&buf) {
                eprintln!("cosid-chaos worker: cannot write the ids log: {e}");
                return 3;
            }
            stats.acked += batch.len() as u64;
        }
        std::thread::sleep(args.pause);
    }

    if let Some(rt) = runtime.take() {
        let last = rt.shutdown();
        events.write(Line::new(wall_ms(), "SHUTDOWN").field(
            "last",
            last.map_or_else(|| "none".to_owned(), |v| v.to_string()),
        ));
    }
    events.write(stats.line());
    events.write(Line::new(wall_ms(), "EXIT"));
    0
}

fn build(
    args: &WorkerArgs,
    clock: Arc<OffsetClock>,
    events: Events,
    windows: Arc<Windows>,
) -> Result<Runtime, cosid::Error> {
    Runtime::builder()
        .store(args.url.clone())
        .namespace(args.namespace.clone())
        .bits(args.bits)
        .ttl(args.ttl)
        .tolerance(args.tolerance)
        .owner_key(format!("chaos-w{}", args.worker))
        .acquire_timeout(Duration::from_secs(2))
        .clock(clock)
        .subscribe(move |e| {
            // Log first, then let waiting ids through: an id is written only after its window is on disk.
            events.write(event_line(e));
            let mut list = windows.lock();
            match e {
                Event::Acquired {
                    slot,
                    floor_ms,
                    ceiling_ms,
                    ..
                } => list.push((*slot, *floor_ms, *ceiling_ms)),
                Event::Renewed {
                    slot, ceiling_ms, ..
                } => {
                    if let Some(w) = list.iter_mut().rev().find(|w| w.0 == *slot) {
                        w.2 = w.2.max(*ceiling_ms);
                    }
                }
                _ => return,
            }
            drop(list);
            windows.changed.notify_all();
        })
        .build()
}

/// Reads control lines from standard input on a thread of its own.
fn spawn_control(clock: Arc<OffsetClock>, stop: Arc<AtomicBool>, events: Events) {
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            let mut words = line.split_ascii_whitespace();
            match (words.next(), words.next().map(str::parse::<i64>)) {
                (Some("offset"), Some(Ok(ms))) => {
                    clock.set_offset(ms);
                    events.write(Line::new(wall_ms(), "OFFSET").field("ms", ms));
                }
                (Some("stop"), _) => break,
                _ => events.write(Line::new(wall_ms(), "BAD_CONTROL").reason(&line)),
            }
        }
        stop.store(true, Ordering::SeqCst);
    });
}
