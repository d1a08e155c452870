//! Many OS processes on one SQLite file: every id unique, while processes start, stop cleanly and are killed
//! with SIGKILL.
//!
//! The test re-executes its own binary as the child (`child_main`, selected with `--exact`, and doing nothing
//! unless `COSID_MP_CHILD` is set). Eight lanes each run three children one after the other, so eight processes
//! run at once on a namespace of eight slots (`bits = 3`): a child that follows a killed one must wait for the
//! killed lease to expire (ttl 2 s) and start above its ceiling. Each child writes every id it got, as u64
//! little-endian, to its own file, flushing every few milliseconds; an id counts once it is in the file. Killed
//! children lose their unflushed tail, which is fine: an id that was never handed on cannot collide.
//!
//! The same run with `slots = 2` (each child leases two slots, on a namespace of sixteen): ids unique, and
//! increasing per slot within each child (across its two slots, a child's ids are ordered by tick only).
//!
//! Which children are killed, and when, comes from a seed printed at the start; set `COSID_MP_SEED` to replay it.

use cosid::lease::Namespace;
use cosid::store::{LeaseStore, SqliteStore};
use cosid::{Event, Id, Layout};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "COSID_MP_CHILD";
const SEED_ENV: &str = "COSID_MP_SEED";
const NAMESPACE: &str = "multiprocess";
const LANES: usize = 8;
const PER_LANE: usize = 3;
const KILLED: usize = 9;
/// Every child that stops cleanly has written at least this many ids.
const MIN_IDS: u64 = 100_000;
/// The whole run is stopped (and the test failed) past this.
const DEADLINE: Duration = Duration::from_secs(120);

/// One child process of the plan.
#[derive(Debug, Clone)]
struct Plan {
    index: usize,
    lane: usize,
    /// Delay after the lane's previous child ended (or after the start, for the first).
    start_after: Duration,
    /// `Some`: SIGKILL this long after the spawn. `None`: the child stops itself after `lifetime`.
    kill_after: Option<Duration>,
    lifetime: Duration,
    seed: u64,
}

fn plan(seed: u64) -> Vec<Plan> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut killed = [false; LANES * PER_LANE];
    killed[..KILLED].iter_mut().for_each(|k| *k = true);
    killed.shuffle(&mut rng);
    (0..LANES * PER_LANE)
        .map(|index| Plan {
            index,
            lane: index % LANES,
            start_after: Duration::from_millis(if index < LANES {
                rng.random_range(0..500)
            } else {
                rng.random_range(0..200)
            }),
            kill_after: killed[index].then(|| Duration::from_millis(rng.random_range(150..1_800))),
            lifetime: Duration::from_millis(rng.random_range(800..2_000)),
            seed: rng.random(),
        })
        .collect()
}

struct Running {
    plan: Plan,
    child: Child,
    spawned: Instant,
}

/// What one child left behind.
#[derive(Debug)]
struct Outcome {
    plan: Plan,
    started: Instant,
    ended: Instant,
    killed: bool,
}

fn out_path(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("ids-{index:02}.bin"))
}

fn log_path(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("child-{index:02}.log"))
}

/// The runtime's `slots` setting, and the namespace's slot bits that give each of the `LANES` children that many.
#[derive(Debug, Clone, Copy)]
struct Shape {
    slots: u32,
    bits: u8,
}

fn spawn(dir: &Path, db: &Path, p: &Plan, shape: Shape) -> Child {
    let log = File::create(log_path(dir, p.index)).unwrap();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["child_main", "--exact", "--nocapture", "--test-threads=1"]);
    // Only this test's settings: none inherited from the caller's environment.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("COSID_") {
            cmd.env_remove(name);
        }
    }
    cmd.env(CHILD_ENV, "1")
        .env("COSID_MP_OUT", out_path(dir, p.index))
        .env("COSID_MP_MIN_IDS", MIN_IDS.to_string())
        .env("COSID_MP_LIFETIME_MS", p.lifetime.as_millis().to_string())
        .env("COSID_MP_CHILD_SEED", p.seed.to_string())
        .env("COSID_STORE", format!("sqlite://{}", db.display()))
        .env("COSID_NAMESPACE", NAMESPACE)
        .env("COSID_BITS", shape.bits.to_string())
        .env("COSID_SLOTS", shape.slots.to_string())
        .env("COSID_TTL", "2s")
        .env("COSID_TOLERANCE", "200ms")
        // A child after a killed one may wait a whole ttl for the killed lease to expire.
        .env("COSID_ACQUIRE_TIMEOUT", "30s")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    cmd.spawn().unwrap()
}

fn logs(dir: &Path, outcomes: &[Outcome]) -> String {
    outcomes
        .iter()
        .map(|o| {
            let log = std::fs::read_to_string(log_path(dir, o.plan.index)).unwrap_or_default();
            format!("--- child {} ({:?}) ---\n{log}", o.plan.index, o.plan)
        })
        .collect()
}

/// Runs the plan: each lane's children one after another, killing the ones planned to be killed.
fn run(dir: &Path, db: &Path, plans: &[Plan], shape: Shape) -> Vec<Outcome> {
    let t0 = Instant::now();
    let mut queues: Vec<Vec<Plan>> = (0..LANES)
        .map(|lane| {
            let mut q: Vec<Plan> = plans.iter().filter(|p| p.lane == lane).cloned().collect();
            q.reverse();
            q
        })
        .collect();
    let mut running: Vec<Option<Running>> = (0..LANES).map(|_| None).collect();
    let mut lane_free_since = [t0; LANES];
    let mut outcomes = Vec::new();
    loop {
        let now = Instant::now();
        if now - t0 > DEADLINE {
            for r in running.iter_mut().flatten() {
                let _ = r.child.kill();
                let _ = r.child.wait();
            }
            panic!("the run took over {DEADLINE:?}\n{}", logs(dir, &outcomes));
        }
        for lane in 0..LANES {
            match &mut running[lane] {
                Some(r) => {
                    let due = r.plan.kill_after.is_some_and(|k| now >= r.spawned + k);
                    if due {
                        r.child.kill().unwrap();
                    }
                    let status = if due {
                        Some(r.child.wait().unwrap())
                    } else {
                        r.child.try_wait().unwrap()
                    };
                    if let Some(status) = status {
                        let r = running[lane].take().unwrap();
                        let outcome = Outcome {
                            plan: r.plan,
                            started: r.spawned,
                            ended: Instant::now(),
                            killed: due,
                        };
                        if !due && !status.success() {
                            let index = outcome.plan.index;
                            outcomes.push(outcome);
                            for r in running.iter_mut().flatten() {
                                let _ = r.child.kill();
                                let _ = r.child.wait();
                            }
                            panic!(
                                "child {index} failed with {status}\n{}",
                                logs(dir, &outcomes)
                            );
                        }
                        outcomes.push(outcome);
                        lane_free_since[lane] = Instant::now();
                    }
                }
                None => {
                    if let Some(next) = queues[lane].last() {
                        if now >= lane_free_since[lane] + next.start_after {
                            let p = queues[lane].pop().unwrap();
                            let child = spawn(dir, db, &p, shape);
                            running[lane] = Some(Running {
                                plan: p,
                                child,
                                spawned: Instant::now(),
                            });
                        }
                    }
                }
            }
        }
        if running.iter().all(Option::is_none) && queues.iter().all(Vec::is_empty) {
            return outcomes;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The ids a child wrote. A killed child may have been stopped in the middle of a write: its partial last record
/// is dropped. A child that stopped cleanly must have written whole records only.
fn read_ids(path: &Path, killed: bool) -> Vec<u64> {
    let bytes = std::fs::read(path).unwrap_or_default();
    let whole = bytes.len() - bytes.len() % 8;
    assert!(
        killed || whole == bytes.len(),
        "{}: {} bytes is not whole ids",
        path.display(),
        bytes.len()
    );
    bytes[..whole]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Whether `ids` (one child's, in the order it got them) increase on each slot.
fn increasing_per_slot(ids: &[u64], layout: &Layout) -> Result<(), (u64, u64)> {
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    for &id in ids {
        let slot = layout.decompose(Id::from_u64(id)).unwrap().slot;
        match last.insert(slot, id) {
            Some(before) if before >= id => return Err((before, id)),
            _ => {}
        }
    }
    Ok(())
}

#[test]
fn multiprocess_sqlite_ids_are_unique() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    multiprocess(Shape { slots: 1, bits: 3 });
}

#[test]
fn multiprocess_sqlite_ids_are_unique_with_two_slots_each() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    multiprocess(Shape { slots: 2, bits: 4 });
}

fn multiprocess(shape: Shape) {
    let seed = match std::env::var(SEED_ENV) {
        Ok(s) => s.parse().expect("COSID_MP_SEED is a u64"),
        Err(_) => rand::random(),
    };
    println!("multiprocess seed {seed} (replay with {SEED_ENV}={seed})");
    let plans = plan(seed);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("leases.db");
    let t0 = Instant::now();
    let outcomes = run(dir.path(), &db, &plans, shape);
    println!("{} children ran in {:?}", outcomes.len(), t0.elapsed());
    let fail = |msg: String| -> ! { panic!("seed {seed}: {msg}\n{}", logs(dir.path(), &outcomes)) };

    let layout = Layout::millis();
    let parts = |id: u64| layout.decompose(Id::from_u64(id)).unwrap();
    // Per slot: every id issued on it, and which children held it.
    let mut by_slot: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    let mut holders: BTreeMap<u64, BTreeSet<usize>> = BTreeMap::new();
    let mut total = 0usize;
    let mut on_several_slots = 0;
    for o in &outcomes {
        let ids = read_ids(&out_path(dir.path(), o.plan.index), o.killed);
        let slots: BTreeSet<u64> = ids.iter().map(|&id| parts(id).slot).collect();
        if slots.len() > 1 {
            on_several_slots += 1;
        }
        if let Err((before, after)) = increasing_per_slot(&ids, &layout) {
            fail(format!(
                "child {} wrote {after} after {before}: not increasing on their slot",
                o.plan.index
            ));
        }
        if !o.killed && (ids.len() as u64) < MIN_IDS {
            fail(format!(
                "child {} stopped cleanly after {} ids, fewer than {MIN_IDS}",
                o.plan.index,
                ids.len()
            ));
        }
        println!(
            "child {:2} lane {} {:>8} ids, {:>5} ms, {}",
            o.plan.index,
            o.plan.lane,
            ids.len(),
            (o.ended - o.started).as_millis(),
            if o.killed { "killed" } else { "clean stop" }
        );
        total += ids.len();
        for id in ids {
            let slot = parts(id).slot;
            by_slot.entry(slot).or_default().push(id);
            holders.entry(slot).or_default().insert(o.plan.index);
        }
    }

    // Every id unique. Each child's ids are already sorted, so this sort merges a few runs per slot.
    for (slot, ids) in &mut by_slot {
        ids.sort();
        if let Some(w) = ids.windows(2).find(|w| w[1] == w[0]) {
            let who: Vec<usize> = outcomes
                .iter()
                .filter(|o| read_ids(&out_path(dir.path(), o.plan.index), o.killed).contains(&w[0]))
                .map(|o| o.plan.index)
                .collect();
            fail(format!(
                "id {} ({:?}) on slot {slot} was issued twice, by children {who:?}",
                w[0],
                parts(w[0])
            ));
        }
    }
    println!("{total} ids, all unique; holders per slot: {holders:?}");
    println!("{on_several_slots} children issued on more than one slot");
    assert!(
        shape.slots == 1 || on_several_slots > 0,
        "with {} slots each, no child's ids came from more than one slot",
        shape.slots
    );
    assert!(
        holders.values().any(|h| h.len() >= 2),
        "no slot was used by more than one child: {holders:?}"
    );
    let reused_after_kill = outcomes
        .iter()
        .filter(|o| o.killed)
        .filter(|k| {
            holders.values().any(|h| {
                h.contains(&k.plan.index)
                    && outcomes
                        .iter()
                        .any(|o| h.contains(&o.plan.index) && o.started > k.ended)
            })
        })
        .count();
    println!("{reused_after_kill} killed children's slots were taken by later children");

    // The store agrees: no id on a slot lies beyond what the slot hands its next holder.
    let store = SqliteStore::open(&db, Arc::new(cosid::clock::SystemClock)).unwrap();
    let inspection = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(store.inspect(&Namespace::new(NAMESPACE).unwrap()))
        .unwrap();
    for (slot, ids) in &by_slot {
        let record = inspection
            .slots
            .iter()
            .find(|r| u64::from(r.slot) == *slot)
            .unwrap_or_else(|| fail(format!("slot {slot} has ids but no record")));
        let last_ms = parts(*ids.last().unwrap()).timestamp_ms;
        if last_ms > record.next_floor {
            fail(format!(
                "slot {slot}: an id at {last_ms} ms lies past next_floor {} ({record:?})",
                record.next_floor
            ));
        }
    }
}

/// The child's role; does nothing unless `COSID_MP_CHILD` is set.
#[test]
fn child_main() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"));
    let out = PathBuf::from(var("COSID_MP_OUT"));
    let min_ids: u64 = var("COSID_MP_MIN_IDS").parse().unwrap();
    let lifetime = Duration::from_millis(var("COSID_MP_LIFETIME_MS").parse().unwrap());
    let mut rng = StdRng::seed_from_u64(var("COSID_MP_CHILD_SEED").parse().unwrap());

    let events = Arc::new(AtomicUsize::new(0));
    let lost = Arc::new(AtomicUsize::new(0));
    let rt = {
        let (events, lost) = (events.clone(), lost.clone());
        cosid::Builder::from_env()
            .unwrap()
            .subscribe(move |e: &Event| {
                events.fetch_add(1, Ordering::Relaxed);
                if e.name() == "SLOT_LOST" {
                    lost.fetch_add(1, Ordering::Relaxed);
                }
                eprintln!("event: {e}");
            })
            .build()
            .expect("the runtime starts")
    };
    let started = Instant::now();
    let mut file = BufWriter::with_capacity(64 * 1024, File::create(&out).unwrap());
    let mut flushed = Instant::now();
    let mut written = 0u64;
    let mut errors = 0u64;
    // Increasing on each slot (one slot unless COSID_SLOTS says more).
    let layout = Layout::millis();
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    let mut check = |id: &Id| {
        let slot = layout.decompose(*id).unwrap().slot;
        let before = last.insert(slot, id.as_u64()).unwrap_or(0);
        assert!(id.as_u64() > before, "{id} after {before} on slot {slot}");
    };
    // With several slots, batches past one tick's 4,096 ids, so that the calls move on to the next slot.
    let slots: usize = std::env::var("COSID_SLOTS").map_or(1, |v| v.parse().unwrap());
    let mut batch = vec![Id::from_u64(0); if slots > 1 { 10_000 } else { 400 }];
    while written < min_ids || started.elapsed() < lifetime {
        let n = rng.random_range(1..=batch.len());
        // A quarter of the time the batch call, else one id at a time.
        let got: Result<&[Id], cosid::Error> = if rng.random_ratio(1, 4) {
            rt.fill(&mut batch[..n]).map(|()| &batch[..n])
        } else {
            let mut k = 0;
            let mut res = Ok(());
            while k < n {
                match rt.next_id() {
                    Ok(id) => {
                        batch[k] = id;
                        k += 1;
                    }
                    Err(e) => {
                        res = Err(e);
                        break;
                    }
                }
            }
            // The ids got before an error are real ids: keep them.
            match res {
                Ok(()) => Ok(&batch[..n]),
                Err(e) => {
                    for id in &batch[..k] {
                        check(id);
                        file.write_all(&id.as_u64().to_le_bytes()).unwrap();
                        written += 1;
                    }
                    Err(e)
                }
            }
        };
        match got {
            Ok(ids) => {
                for id in ids {
                    check(id);
                    file.write_all(&id.as_u64().to_le_bytes()).unwrap();
                }
                written += ids.len() as u64;
            }
            Err(e) => {
                errors += 1;
                if errors <= 20 {
                    eprintln!("id call failed ({}): {e}", e.code());
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        if flushed.elapsed() >= Duration::from_millis(10) {
            file.flush().unwrap();
            flushed = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    file.flush().unwrap();
    let slots: Vec<u32> = rt.statuses().iter().map(|s| s.slot).collect();
    let released = rt.shutdown();
    eprintln!(
        "child done: {written} ids, {errors} failed calls, {} events, {} slot(s) lost, slots {slots:?}, last {released:?}",
        events.load(Ordering::Relaxed),
        lost.load(Ordering::Relaxed),
    );
}
