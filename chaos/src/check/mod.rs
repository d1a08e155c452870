//! The checker: reads a run's logs and says, Jepsen-style, what happened and whether the claim held.
//!
//! The claim: no id is acknowledged twice, and every acknowledged id lies in a window that the store granted to
//! the process that issued it. The checker also counts the faults, finds the zombie resumes (a worker resumed
//! from `SIGSTOP` after its lease expired) and what they did next, and measures availability.
//!
//! The analysis ([`analyze`]) is a pure function of the parsed logs, so it is tested on planted data, and
//! [`self_test`] runs that same test before every real check: a checker that cannot see a planted duplicate
//! fails the run instead of passing it.

mod analyze;
mod report;
mod selftest;
mod zombies;

pub use analyze::{analyze, Analysis};
pub use report::report;
pub use selftest::self_test;

use crate::logs::{self, Line, RunInfo};
use std::collections::BTreeMap;
use std::path::Path;

/// A window the store granted: `(floor, ceiling]` on a slot, with the fence of its lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The slot.
    pub slot: u32,
    /// The lease's fence.
    pub fence: u64,
    /// Excluded lower bound (store ms).
    pub floor: u64,
    /// Included upper bound, raised by renewals (store ms).
    pub ceiling: u64,
    /// The last timestamp handed to the next holder on release, if released: the window as the next holder
    /// may see it ends there.
    pub released_at: Option<u64>,
    /// When the worker logged the grant (wall ms).
    pub granted: u64,
}

impl Window {
    pub(crate) fn covers(&self, slot: u32, ts: u64) -> bool {
        self.slot == slot && self.floor < ts && ts <= self.ceiling
    }

    /// The part of the window no other holder may share: cut at the last issued timestamp if it was released.
    pub(crate) fn exclusive_ceiling(&self) -> u64 {
        match self.released_at {
            Some(last) => self.floor.max(last.min(self.ceiling)),
            None => self.ceiling,
        }
    }
}

/// One worker process (a restart is a new incarnation, and a new holder), as its logs tell it.
#[derive(Debug, Clone, Default)]
pub struct Incarnation {
    /// Worker number.
    pub worker: usize,
    /// Incarnation number of that worker (1, 2, ...).
    pub inc: usize,
    /// Acknowledged ids with their acknowledgment time (wall ms).
    pub ids: Vec<(u64, u64)>,
    /// Every event line, in order.
    pub events: Vec<Line>,
    /// Bytes of a torn last id record.
    pub torn_id_bytes: usize,
    /// A torn last event line.
    pub torn_event_line: bool,
    /// Event lines that did not parse.
    pub bad_lines: Vec<String>,
}

impl Incarnation {
    /// `w<worker>.<inc>`.
    pub fn name(&self) -> String {
        logs::stem(self.worker, self.inc)
    }

    /// The windows this incarnation was granted, from its `ACQUIRED`, `RENEWED` and `RELEASED` lines.
    pub fn windows(&self) -> Result<Vec<Window>, String> {
        let mut out: Vec<Window> = Vec::new();
        for l in &self.events {
            match l.name.as_str() {
                "ACQUIRED" => {
                    let w = Window {
                        slot: l.num("slot")?,
                        fence: l.num("fence")?,
                        floor: l.num("floor")?,
                        ceiling: l.num("ceiling")?,
                        released_at: None,
                        granted: l.at,
                    };
                    // An idempotent retry returns the same lease: one window.
                    match out
                        .iter_mut()
                        .find(|o| o.slot == w.slot && o.fence == w.fence)
                    {
                        Some(o) => o.ceiling = o.ceiling.max(w.ceiling),
                        None => out.push(w),
                    }
                }
                "RENEWED" => {
                    let slot: u32 = l.num("slot")?;
                    let ceiling: u64 = l.num("ceiling")?;
                    match out.iter_mut().rev().find(|w| w.slot == slot) {
                        Some(w) => w.ceiling = w.ceiling.max(ceiling),
                        None => {
                            return Err(format!(
                                "{}: RENEWED slot {slot} before any ACQUIRED",
                                self.name()
                            ))
                        }
                    }
                }
                "RELEASED" => {
                    let slot: u32 = l.num("slot")?;
                    let last = match l.get("last") {
                        Some("none") | None => None,
                        Some(_) => Some(l.num::<u64>("last")?),
                    };
                    if let Some(w) = out.iter_mut().rev().find(|w| w.slot == slot) {
                        w.released_at = Some(last.unwrap_or(w.floor));
                    }
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// The last `STATS` line's counters.
    pub fn stats(&self) -> BTreeMap<String, u64> {
        self.events
            .iter()
            .rev()
            .find(|l| l.name == "STATS")
            .map(|l| {
                l.fields
                    .iter()
                    .filter_map(|(k, v)| v.parse().ok().map(|n| (k.clone(), n)))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Everything the checker reads.
#[derive(Debug, Clone, Default)]
pub struct RunLogs {
    /// `run.txt`.
    pub info: RunInfo,
    /// `nemesis.log`.
    pub nemesis: Vec<Line>,
    /// Every worker incarnation.
    pub incarnations: Vec<Incarnation>,
    /// Lines of `nemesis.log` that did not parse.
    pub bad_lines: Vec<String>,
}

/// Reads a run folder.
pub fn load(dir: &Path) -> Result<RunLogs, String> {
    let info = RunInfo::load(dir).map_err(|e| format!("{}: {e}", dir.join("run.txt").display()))?;
    let mut logs = RunLogs {
        info,
        ..RunLogs::default()
    };
    let nemesis = dir.join("nemesis.log");
    let (lines, _) =
        logs::read_lines(&nemesis).map_err(|e| format!("{}: {e}", nemesis.display()))?;
    for l in lines {
        match l {
            Ok(l) => logs.nemesis.push(l),
            Err(e) => logs.bad_lines.push(e.to_string()),
        }
    }
    let wdir = logs::workers_dir(dir);
    let mut stems: Vec<(usize, usize)> = Vec::new();
    for entry in std::fs::read_dir(&wdir).map_err(|e| format!("{}: {e}", wdir.display()))? {
        let name = entry.map_err(|e| e.to_string())?.file_name();
        let name = name.to_string_lossy();
        if let Some(stem) = name.strip_suffix(".events") {
            let parsed = stem
                .strip_prefix('w')
                .and_then(|s| s.split_once('.'))
                .and_then(|(w, i)| Some((w.parse().ok()?, i.parse().ok()?)));
            match parsed {
                Some(p) => stems.push(p),
                None => return Err(format!("unexpected file {name} in {}", wdir.display())),
            }
        }
    }
    stems.sort();
    for (worker, inc) in stems {
        let stem = logs::stem(worker, inc);
        let mut incarnation = Incarnation {
            worker,
            inc,
            ..Incarnation::default()
        };
        let events = wdir.join(format!("{stem}.events"));
        let (lines, torn) =
            logs::read_lines(&events).map_err(|e| format!("{}: {e}", events.display()))?;
        incarnation.torn_event_line = torn > 0;
        for l in lines {
            match l {
                Ok(l) => incarnation.events.push(l),
                Err(e) => incarnation.bad_lines.push(e.to_string()),
            }
        }
        let ids = wdir.join(format!("{stem}.ids"));
        if ids.exists() {
            let (records, torn) =
                logs::read_ids(&ids).map_err(|e| format!("{}: {e}", ids.display()))?;
            incarnation.ids = records;
            incarnation.torn_id_bytes = torn;
        }
        logs.incarnations.push(incarnation);
    }
    Ok(logs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_window_may_be_followed_inside_its_granted_ceiling() {
        let w = Window {
            slot: 0,
            fence: 1,
            floor: 100,
            ceiling: 500,
            released_at: Some(200),
            granted: 0,
        };
        assert_eq!(w.exclusive_ceiling(), 200);
        let unused = Window {
            released_at: Some(50),
            ..w.clone()
        };
        assert_eq!(unused.exclusive_ceiling(), 100);
    }

    #[test]
    fn renewals_extend_the_latest_window_of_their_slot() {
        let inc = Incarnation {
            worker: 0,
            inc: 1,
            events: [
                "1 ACQUIRED slot=0 fence=3 floor=10 ceiling=20 expires=15",
                "2 RENEWED slot=0 ceiling=30 expires=25",
                "3 SLOT_LOST slot=0 reason=gone",
                "4 ACQUIRED slot=1 fence=7 floor=40 ceiling=50 expires=45",
                "5 ACQUIRED slot=1 fence=7 floor=40 ceiling=50 expires=45",
                "6 RENEWED slot=1 ceiling=60 expires=55",
                "7 RELEASED slot=1 last=52",
            ]
            .iter()
            .map(|l| Line::parse(l).unwrap())
            .collect(),
            ..Incarnation::default()
        };
        let w = inc.windows().unwrap();
        assert_eq!(w.len(), 2);
        assert_eq!((w[0].floor, w[0].ceiling, w[0].released_at), (10, 30, None));
        assert_eq!(
            (w[1].floor, w[1].ceiling, w[1].released_at),
            (40, 60, Some(52))
        );
    }
}
