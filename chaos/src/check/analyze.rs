//! The analysis: a pure function from parsed logs to what happened.

use super::zombies::Zombie;
use super::{RunLogs, Window};
use crate::nemesis::Kind;
use crate::store::Store;
use cosid::{Id, Layout};
use std::collections::BTreeMap;

/// The fewest acknowledged ids a run must have for its "no duplicate" to mean anything.
pub const MIN_ACKED: u64 = 1_000;

/// Availability is measured in buckets of this many ms: a slot is available in a bucket if an id on it was
/// acknowledged then (workers issue every few ms while they can).
pub const BUCKET_MS: u64 = 100;

/// A duplicated id and who acknowledged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// The id.
    pub id: u64,
    /// The incarnations that acknowledged it (one name per copy).
    pub holders: Vec<String>,
    /// When the last copy was acknowledged (wall ms).
    pub last_ack: u64,
}

/// One restore of an older copy of the store's data (the negative control), and what followed it before the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restore {
    /// When (wall ms).
    pub at: u64,
    /// How old the copy was (ms).
    pub age_ms: u64,
    /// Duplicated ids whose last copy was acknowledged after this restore and before the next.
    pub duplicates: u64,
    /// `StoreRegression` events in the same time.
    pub alarms: u64,
}

impl Restore {
    /// Whether this restore's lost writes were seen.
    pub fn detected(&self) -> bool {
        self.duplicates > 0 || self.alarms > 0
    }
}

/// What the SQLite store says when the database file was deleted or replaced under a holder: the alarm the
/// file-replace fault must raise (docs/stores.md). Such an alarm, after such a fault, is expected, not lost writes.
const FILE_REPLACED_ALARMS: [&str; 2] = [
    "now names another file",
    "was deleted while this process held",
];

/// An id outside every window its holder was granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stray {
    /// The id.
    pub id: u64,
    /// Its holder.
    pub holder: String,
    /// Its slot and timestamp.
    pub slot: u32,
    /// Timestamp (ms).
    pub ts: u64,
}

/// Two windows on one slot, of different leases, that share time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// The slot.
    pub slot: u32,
    /// `holder fence (floor, ceiling]` of each.
    pub first: String,
    /// The other.
    pub second: String,
}

/// The availability of one slot.
#[derive(Debug, Clone, PartialEq)]
pub struct Availability {
    /// The slot.
    pub slot: u32,
    /// Fraction of the measured time in which an id on it was acknowledged.
    pub fraction: f64,
    /// Longest time with no id acknowledged on it (ms), and when it started (ms after the measure start).
    pub longest_gap: (u64, u64),
}

/// What the checker found.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    /// Id calls made (at least: a worker killed between two `STATS` lines undercounts).
    pub attempted: u64,
    /// Ids in the logs.
    pub acknowledged: u64,
    /// Ids acknowledged more than once.
    pub duplicates: Vec<Duplicate>,
    /// Extra copies in all (an id acknowledged 3 times counts 2).
    pub duplicate_copies: u64,
    /// Ids outside a window granted to their holder.
    pub strays: Vec<Stray>,
    /// Overlapping windows of different leases.
    pub overlaps: Vec<Overlap>,
    /// The negative control's restores.
    pub restores: Vec<Restore>,
    /// Event counts over all incarnations, by name.
    pub events: BTreeMap<String, u64>,
    /// `STORE_REGRESSION` alarms that report the file-replace fault the nemesis injected (SQLite): expected, and
    /// not counted as regressions.
    pub expected_alarms: u64,
    /// Refused id calls, by error code.
    pub refused: BTreeMap<String, u64>,
    /// Start-ups that found no slot (all held) or no store, by error code: the waiting workers.
    pub start_refused: BTreeMap<String, u64>,
    /// Faults injected, by kind name (plus `restore` for the negative control).
    pub faults: BTreeMap<String, u64>,
    /// Faults that could not be injected, by kind name.
    pub faults_failed: BTreeMap<String, u64>,
    /// Zombie resumes.
    pub zombies: Vec<Zombie>,
    /// `SIGSTOP`s that ended while the lease was still valid, or with no lease held.
    pub harmless_pauses: u64,
    /// Per slot.
    pub availability: Vec<Availability>,
    /// Longest time with no id acknowledged on any slot (ms), and when it started (ms after the measure start).
    pub longest_gap: (u64, u64),
    /// What the nemesis did around the longest gap.
    pub longest_gap_faults: Vec<String>,
    /// Worker incarnations.
    pub incarnations: usize,
    /// Problems with the checker's input or its own working: any of them makes the result meaningless.
    pub sanity: Vec<String>,
}

impl Analysis {
    /// Duplicates + strays + overlaps + store-regression alarms: everything that must be 0 on a sound store.
    pub fn violations(&self) -> u64 {
        self.duplicate_copies
            + self.strays.len() as u64
            + self.overlaps.len() as u64
            + self.regressions()
    }

    /// `STORE_REGRESSION` events, but those that report an injected file replacement.
    pub fn regressions(&self) -> u64 {
        self.events
            .get("STORE_REGRESSION")
            .copied()
            .unwrap_or(0)
            .saturating_sub(self.expected_alarms)
    }

    /// Whether the negative control saw the lost writes: duplicates, or the runtime's own alarm.
    pub fn detected(&self) -> bool {
        self.duplicate_copies > 0 || self.regressions() > 0
    }
}

/// Analyzes parsed logs. `layout` decodes the ids.
pub fn analyze(logs: &RunLogs, layout: &Layout) -> Analysis {
    let mut a = Analysis {
        incarnations: logs.incarnations.len(),
        ..Analysis::default()
    };
    let info = &logs.info;
    let bits: u8 = info.num("bits").unwrap_or_else(|e| {
        a.sanity.push(e);
        1
    });
    let mut times = [0u64; 4];
    for (t, key) in times
        .iter_mut()
        .zip(["started_at", "measure_from", "measure_to", "ended_at"])
    {
        match info.num(key) {
            Ok(v) => *t = v,
            Err(e) => a.sanity.push(format!("{e} (did the run finish?)")),
        }
    }
    let [started, from, to, ended] = times;
    let negative = info.get("negative") == Some("true");
    let store = Store::from_name(info.get("store")).unwrap_or_else(|| {
        a.sanity
            .push(format!("run.txt: unknown store {:?}", info.get("store")));
        Store::Redis
    });
    // When the database file was replaced (SQLite): windows granted after a replacement are in another file, whose
    // first grant starts from its own (empty) records; they are compared with each other, not with the old file's.
    let replaced_at: Vec<u64> = logs
        .nemesis
        .iter()
        .filter(|l| l.name == "FAULT" && l.get("kind") == Some(Kind::FileReplace.name()))
        .map(|l| l.at)
        .collect();
    let generation = |at: u64| replaced_at.iter().filter(|&&r| r <= at).count();
    // The alarms the file-replace fault explains: the store's own "the file was replaced" after such a fault, and
    // any later alarm of a runtime that has seen a replacement (in a newer file, which starts its fences again, a
    // grant repeats a fence the runtime held in an older one).
    let expected: std::collections::BTreeSet<(usize, usize)> = logs
        .incarnations
        .iter()
        .enumerate()
        .flat_map(|(h, inc)| {
            let mut saw = false;
            let mut out = Vec::new();
            for (k, l) in inc.events.iter().enumerate() {
                if l.name != "STORE_REGRESSION" {
                    continue;
                }
                if !replaced_at.iter().any(|&r| r <= l.at) {
                    continue;
                }
                let says_replaced = l
                    .reason
                    .as_deref()
                    .is_some_and(|r| FILE_REPLACED_ALARMS.iter().any(|m| r.contains(m)));
                if says_replaced {
                    saw = true;
                    out.push((h, k));
                } else if saw {
                    // Its history spans the files: a grant in a newer one may repeat a fence it held in an older
                    // one, whichever replacement it last saw (a runtime kept through two replacements).
                    out.push((h, k));
                }
            }
            out
        })
        .collect();
    a.expected_alarms = expected.len() as u64;
    for b in &logs.bad_lines {
        a.sanity.push(format!("nemesis.log: {b}"));
    }

    // Faults, and which incarnations were killed (their logs may be torn).
    let mut killed: Vec<(usize, usize)> = Vec::new();
    let mut redis_down_since: Option<u64> = None;
    for l in &logs.nemesis {
        let kind = l.get("kind").unwrap_or("?").to_owned();
        if l.name == "FAULT" && (kind == Kind::RedisTerm.name() || kind == Kind::RedisKill.name()) {
            redis_down_since = Some(l.at);
        }
        if (l.name == "HEAL" && kind == "redis-start" && l.reason.is_none()) || l.name == "RESTORE"
        {
            redis_down_since = None;
        }
        match l.name.as_str() {
            "FAULT" => {
                *a.faults.entry(kind.clone()).or_default() += 1;
                // The hard-link fault restarts its worker through the link, and kills it again at its end.
                if kind == Kind::Kill.name() || kind == Kind::FileLink.name() {
                    if let (Ok(w), Ok(i)) = (l.num("worker"), l.num("inc")) {
                        killed.push((w, i));
                    }
                }
            }
            "HEAL" if kind == "link-end" => {
                if let (Ok(w), Ok(i)) = (l.num("worker"), l.num("inc")) {
                    killed.push((w, i));
                }
            }
            "FAULT_FAILED" => *a.faults_failed.entry(kind).or_default() += 1,
            "RESTORE" => *a.faults.entry("restore".into()).or_default() += 1,
            "UNEXPECTED_EXIT" => a.sanity.push(format!(
                "worker {} incarnation {} exited by itself: {}",
                l.get("worker").unwrap_or("?"),
                l.get("inc").unwrap_or("?"),
                l.reason.as_deref().unwrap_or("")
            )),
            "STOP_TIMEOUT" => a.sanity.push(format!(
                "worker {} incarnation {} did not stop within 10 s of being asked",
                l.get("worker").unwrap_or("?"),
                l.get("inc").unwrap_or("?")
            )),
            "WARM_TIMEOUT" => a
                .sanity
                .push("not every slot was held within 30 s of the start".into()),
            "SNAPSHOT_FAILED" | "RESTORE_FAILED" => {
                a.sanity
                    .push(format!("{}: {}", l.name, l.reason.as_deref().unwrap_or("")))
            }
            _ => {}
        }
    }

    if let Some(at) = redis_down_since {
        a.sanity.push(format!(
            "Redis was stopped at {at} and never started again: the rest of the run tested nothing"
        ));
    }

    // Windows, and the checks on every id.
    let mut all: Vec<(u64, u32, u64)> = Vec::new();
    let mut windows: Vec<(usize, Window)> = Vec::new();
    let mut acks_by_slot: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    let mut ids_by_slot: BTreeMap<u32, u64> = BTreeMap::new();
    for (h, inc) in logs.incarnations.iter().enumerate() {
        let name = inc.name();
        for b in &inc.bad_lines {
            a.sanity.push(b.clone());
        }
        let was_killed = killed.contains(&(inc.worker, inc.inc));
        if (inc.torn_event_line || inc.torn_id_bytes > 0) && !was_killed {
            a.sanity.push(format!(
                "{name}: a torn log, but the process was never killed"
            ));
        }
        if !inc.events.iter().any(|l| l.name == "START") {
            a.sanity.push(format!("{name}: no START line"));
        }
        for l in &inc.events {
            *a.events.entry(l.name.clone()).or_default() += 1;
        }
        let stats = inc.stats();
        let counted = stats.get("acked").copied().unwrap_or(0);
        if counted > inc.ids.len() as u64 {
            a.sanity.push(format!(
                "{name}: the worker counted {counted} acknowledged ids but its log holds {}",
                inc.ids.len()
            ));
        }
        a.attempted += stats
            .get("attempted")
            .copied()
            .unwrap_or(0)
            .max(inc.ids.len() as u64);
        for (k, v) in &stats {
            if let Some(code) = k.strip_prefix("err.") {
                *a.refused.entry(code.to_owned()).or_default() += v;
            }
            if let Some(code) = k.strip_prefix("build_err.") {
                *a.start_refused.entry(code.to_owned()).or_default() += v;
            }
        }
        let wins = match inc.windows() {
            Ok(w) => w,
            Err(e) => {
                a.sanity.push(e);
                Vec::new()
            }
        };
        for w in &wins {
            if w.floor > w.ceiling {
                a.sanity.push(format!(
                    "{name}: window with floor {} above ceiling {}",
                    w.floor, w.ceiling
                ));
            }
        }
        let mut bad_ack_time = 0u64;
        for &(id, at) in &inc.ids {
            a.acknowledged += 1;
            all.push((id, h as u32, at));
            if at < started || at > ended.saturating_add(1_000) {
                bad_ack_time += 1;
            }
            let Ok(p) = layout.decompose(Id::from_u64(id)) else {
                a.sanity
                    .push(format!("{name}: id {id} does not decode with the layout"));
                continue;
            };
            let slot = p.slot as u32;
            if u64::from(slot) >= 1u64 << bits {
                a.sanity.push(format!(
                    "{name}: id {id} has slot {slot}, not below 2^{bits}"
                ));
            }
            *ids_by_slot.entry(slot).or_default() += 1;
            acks_by_slot.entry(slot).or_default().push(at);
            if !wins.iter().any(|w| w.covers(slot, p.timestamp_ms)) {
                a.strays.push(Stray {
                    id,
                    holder: name.clone(),
                    slot,
                    ts: p.timestamp_ms,
                });
            }
        }
        if bad_ack_time > 0 {
            a.sanity.push(format!(
                "{name}: {bad_ack_time} ids acknowledged outside the run's time ({started}..{ended})"
            ));
        }
        windows.extend(wins.into_iter().map(|w| (h, w)));
    }

    // Duplicates.
    all.sort_unstable();
    let mut i = 0;
    while i < all.len() {
        let mut j = i + 1;
        while j < all.len() && all[j].0 == all[i].0 {
            j += 1;
        }
        if j - i > 1 {
            a.duplicate_copies += (j - i - 1) as u64;
            a.duplicates.push(Duplicate {
                id: all[i].0,
                holders: all[i..j]
                    .iter()
                    .map(|&(_, h, _)| logs.incarnations[h as usize].name())
                    .collect(),
                last_ack: all[i..j].iter().map(|&(_, _, at)| at).max().unwrap_or(0),
            });
        }
        i = j;
    }

    // The negative control's restores, and what each was followed by.
    let restores: Vec<(u64, u64)> = logs
        .nemesis
        .iter()
        .filter(|l| l.name == "RESTORE")
        .map(|l| (l.at, l.num("age").unwrap_or(0)))
        .collect();
    let alarms: Vec<u64> = logs
        .incarnations
        .iter()
        .enumerate()
        .flat_map(|(h, inc)| inc.events.iter().enumerate().map(move |(k, l)| (h, k, l)))
        .filter(|&(h, k, l)| l.name == "STORE_REGRESSION" && !expected.contains(&(h, k)))
        .map(|(_, _, l)| l.at)
        .collect();
    for (k, &(at, age_ms)) in restores.iter().enumerate() {
        let until = restores.get(k + 1).map_or(u64::MAX, |r| r.0);
        let within = |t: u64| t >= at && t < until;
        a.restores.push(Restore {
            at,
            age_ms,
            duplicates: a
                .duplicates
                .iter()
                .filter(|d| within(d.last_ack))
                .map(|d| d.holders.len() as u64 - 1)
                .sum(),
            alarms: alarms.iter().filter(|&&t| within(t)).count() as u64,
        });
    }

    // Overlapping windows of different leases on one slot.
    windows.sort_by_key(|(_, w)| (w.slot, w.floor, w.fence));
    for (k, (h1, w1)) in windows.iter().enumerate() {
        for (h2, w2) in &windows[k + 1..] {
            // Sorted by floor: once one starts at or past this window's end, every later one does. (A window cut
            // by its release may be followed by one that starts inside its granted ceiling: that is the protocol.)
            if w2.slot != w1.slot || w2.floor >= w1.exclusive_ceiling() {
                break;
            }
            if w2.floor >= w2.exclusive_ceiling() || (h1 == h2 && w1.fence == w2.fence) {
                continue; // an empty window shares nothing
            }
            if generation(w1.granted) != generation(w2.granted) {
                continue; // two database files (a replaced SQLite file): duplicates would show their overlap
            }
            let show = |h: usize, w: &Window| {
                format!(
                    "{} fence {} ({}, {}]",
                    logs.incarnations[h].name(),
                    w.fence,
                    w.floor,
                    w.exclusive_ceiling()
                )
            };
            a.overlaps.push(Overlap {
                slot: w1.slot,
                first: show(*h1, w1),
                second: show(*h2, w2),
            });
        }
    }

    // Zombie resumes.
    super::zombies::zombies(logs, &mut a);

    // Availability and gaps.
    let slots = 1u32 << bits.min(16);
    let span = to.saturating_sub(from).max(1);
    let buckets = span.div_ceil(BUCKET_MS);
    let mut every: Vec<u64> = Vec::new();
    for slot in 0..slots {
        let mut acks: Vec<u64> = acks_by_slot
            .get(&slot)
            .map(|v| {
                v.iter()
                    .copied()
                    .filter(|&t| t >= from && t <= to)
                    .collect()
            })
            .unwrap_or_default();
        acks.sort_unstable();
        acks.dedup();
        let mut filled = acks
            .iter()
            .map(|t| (t - from) / BUCKET_MS)
            .collect::<Vec<_>>();
        filled.dedup();
        a.availability.push(Availability {
            slot,
            fraction: filled.len() as f64 / buckets as f64,
            longest_gap: longest_gap(&acks, from, to),
        });
        every.extend(acks);
        if ids_by_slot.get(&slot).copied().unwrap_or(0) == 0 {
            a.sanity
                .push(format!("no id was ever acknowledged on slot {slot}"));
        }
        if !windows.iter().any(|(_, w)| w.slot == slot) {
            a.sanity
                .push(format!("no window was ever granted on slot {slot}"));
        }
    }
    every.sort_unstable();
    every.dedup();
    a.longest_gap = longest_gap(&every, from, to);
    let (gap, gap_start) = a.longest_gap;
    let (lo, hi) = (from + gap_start, from + gap_start + gap);
    a.longest_gap_faults = logs
        .nemesis
        .iter()
        .filter(|l| {
            matches!(l.name.as_str(), "FAULT" | "RESTORE") && l.at + 5_000 >= lo && l.at <= hi
        })
        .map(|l| {
            format!(
                "{} at +{:.1} s",
                l.get("kind").unwrap_or(&l.name.to_ascii_lowercase()),
                l.at.saturating_sub(from) as f64 / 1000.0
            )
        })
        .collect();

    // The run must have done something for its zeros to mean anything.
    if a.acknowledged < MIN_ACKED {
        a.sanity.push(format!(
            "only {} ids were acknowledged; at least {MIN_ACKED} are needed for the result to mean anything",
            a.acknowledged
        ));
    }
    if info.get("interrupted") == Some("true") {
        a.sanity
            .push("the run was interrupted (SIGINT or SIGTERM) before its end".into());
    }
    if info.get("warm_up_ok") == Some("false") {
        a.sanity
            .push("the warm-up did not see every slot held".into());
    }
    if negative {
        if !logs.nemesis.iter().any(|l| l.name == "RESTORE") {
            a.sanity.push(
                "the negative control never restored an older copy of the store's data".into(),
            );
        }
    } else {
        let injected: u64 = a.faults.values().sum();
        if injected >= 2 * store.kinds().len() as u64 {
            for &k in store.kinds() {
                if !a.faults.contains_key(k.name()) {
                    a.sanity.push(format!(
                        "the nemesis never injected {k}, in {injected} faults"
                    ));
                }
            }
        }
    }
    a
}

/// The longest stretch of `[from, to]` with no time in `sorted`: (length, start offset from `from`).
fn longest_gap(sorted: &[u64], from: u64, to: u64) -> (u64, u64) {
    let mut best = (0, 0);
    let mut prev = from;
    for &t in sorted.iter().chain(std::iter::once(&to)) {
        if t.saturating_sub(prev) > best.0 {
            best = (t - prev, prev - from);
        }
        prev = prev.max(t);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_include_both_edges() {
        assert_eq!(longest_gap(&[], 100, 600), (500, 0));
        assert_eq!(longest_gap(&[150, 160, 400], 100, 450), (240, 60));
        assert_eq!(longest_gap(&[110, 440], 100, 1_000), (560, 340));
    }
}
