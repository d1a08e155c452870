//! Zombie resumes: a worker resumed from `SIGSTOP` after its lease expired, and what it did next.

use super::analyze::Analysis;
use super::RunLogs;
use crate::logs::Line;
use crate::nemesis::Kind;
use cosid::{Id, Layout};
use std::collections::BTreeMap;

/// A worker resumed from `SIGSTOP` after its lease had expired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zombie {
    /// The incarnation.
    pub holder: String,
    /// The slot it held.
    pub slot: u32,
    /// How long after its lease expired it resumed (ms).
    pub late_by_ms: u64,
    /// What happened next: `slot-lost`, `renewed-in-place` (nobody took the slot meanwhile), `killed`,
    /// `nothing` (the run ended first).
    pub outcome: &'static str,
    /// Id calls refused from the pause to 3 s after the resume, by error code.
    pub refused: BTreeMap<String, u64>,
    /// Ids the zombie acknowledged past its old ceiling on that slot before the outcome (only legitimate with
    /// `renewed-in-place`, and then inside the renewed window).
    pub past_ceiling: u64,
}

pub(super) fn zombies(logs: &RunLogs, a: &mut Analysis) {
    let find = |w: usize, i: usize| {
        logs.incarnations
            .iter()
            .position(|x| x.worker == w && x.inc == i)
    };
    for (n, stop) in logs.nemesis.iter().enumerate() {
        if stop.name != "FAULT" || stop.get("kind") != Some(Kind::Pause.name()) {
            continue;
        }
        let (Ok(w), Ok(i)) = (stop.num::<usize>("worker"), stop.num::<usize>("inc")) else {
            continue;
        };
        let Some(h) = find(w, i) else { continue };
        let inc = &logs.incarnations[h];
        let resumed = logs.nemesis[n + 1..].iter().find(|l| {
            l.get("worker") == stop.get("worker")
                && l.get("inc") == stop.get("inc")
                && (l.get("kind") == Some("sigcont") || l.get("kind") == Some(Kind::Kill.name()))
        });
        let Some(resumed) = resumed.filter(|l| l.get("kind") == Some("sigcont")) else {
            continue; // killed while stopped: never resumed
        };
        let (t0, t1) = (stop.at, resumed.at);
        // The lease held when the pause began: the last grant or renewal before it, unless lost since.
        let mut held: Option<(u32, u64, u64)> = None; // slot, expires, ceiling
        for l in inc.events.iter().take_while(|l| l.at <= t0) {
            match l.name.as_str() {
                "ACQUIRED" | "RENEWED" => {
                    if let (Ok(s), Ok(e), Ok(c)) =
                        (l.num("slot"), l.num("expires"), l.num("ceiling"))
                    {
                        held = Some((s, e, c));
                    }
                }
                "SLOT_LOST" | "STORE_REGRESSION" | "RELEASED" => held = None,
                _ => {}
            }
        }
        let Some((slot, expires, ceiling)) = held else {
            a.harmless_pauses += 1;
            continue;
        };
        if t1 <= expires {
            a.harmless_pauses += 1;
            continue;
        }
        let after = inc.events.iter().filter(|l| l.at >= t1);
        let mut outcome = "nothing";
        let mut outcome_at = u64::MAX;
        for l in after {
            let same_slot = l.get("slot").and_then(|s| s.parse::<u32>().ok()) == Some(slot);
            match l.name.as_str() {
                "SLOT_LOST" if same_slot => outcome = "slot-lost",
                "RENEWED" if same_slot => outcome = "renewed-in-place",
                "STORE_REGRESSION" if same_slot => outcome = "store-regression",
                _ => continue,
            }
            outcome_at = l.at;
            break;
        }
        let killed = logs.nemesis[n + 1..].iter().any(|l| {
            l.name == "FAULT"
                && l.get("kind") == Some(Kind::Kill.name())
                && l.get("worker") == stop.get("worker")
                && l.get("inc") == stop.get("inc")
                && l.at < outcome_at
        });
        if outcome == "nothing" && killed {
            outcome = "killed";
        }
        let stats_at = |t: u64, before: bool| {
            let pick = |l: &&Line| l.name == "STATS" && if before { l.at <= t } else { l.at >= t };
            let line = if before {
                inc.events.iter().rev().find(pick)
            } else {
                inc.events.iter().find(pick)
            };
            line.map(|l| {
                l.fields
                    .iter()
                    .filter_map(|(k, v)| {
                        Some((k.strip_prefix("err.")?.to_owned(), v.parse::<u64>().ok()?))
                    })
                    .collect::<BTreeMap<String, u64>>()
            })
            .unwrap_or_default()
        };
        let before = stats_at(t0, true);
        let later = stats_at(t1 + 3_000, false);
        let refused = later
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.saturating_sub(before.get(k).copied().unwrap_or(0)),
                )
            })
            .filter(|(_, v)| *v > 0)
            .collect();
        let layout = Layout::millis();
        let past_ceiling = inc
            .ids
            .iter()
            .filter(|&&(id, at)| {
                at >= t1
                    && at <= outcome_at
                    && layout
                        .decompose(Id::from_u64(id))
                        .is_ok_and(|p| p.slot as u32 == slot && p.timestamp_ms > ceiling)
            })
            .count() as u64;
        a.zombies.push(Zombie {
            holder: inc.name(),
            slot,
            late_by_ms: t1 - expires,
            outcome,
            refused,
            past_ceiling,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[&str]) -> Vec<Line> {
        text.iter().map(|l| Line::parse(l).unwrap()).collect()
    }

    /// One worker paused three times: resumed late (another worker took the slot), resumed late (nobody took
    /// it), and resumed early.
    #[test]
    fn zombie_resumes_are_found_and_classified() {
        let mut info = crate::logs::RunInfo::default();
        info.set("bits", 1);
        let logs = RunLogs {
            info,
            nemesis: lines(&[
                "1000 FAULT kind=sigstop worker=0 inc=1 duration=6000",
                "7000 HEAL kind=sigcont worker=0 inc=1",
                "20000 FAULT kind=sigstop worker=0 inc=1 duration=6000",
                "26000 HEAL kind=sigcont worker=0 inc=1",
                "40000 FAULT kind=sigstop worker=0 inc=1 duration=1500",
                "41500 HEAL kind=sigcont worker=0 inc=1",
                "50000 FAULT kind=sigstop worker=1 inc=1 duration=1500",
                "50100 FAULT kind=sigkill worker=1 inc=1",
            ]),
            incarnations: vec![super::super::Incarnation {
                worker: 0,
                inc: 1,
                events: lines(&[
                    "0 START pid=1",
                    "500 ACQUIRED slot=1 fence=4 floor=0 ceiling=3750 expires=3500",
                    "900 STATS attempted=10 acked=10 err.SLOT_LOST=2",
                    "7050 SLOT_LOST slot=1 reason=gone",
                    "10500 STATS attempted=50 acked=10 err.SLOT_LOST=30",
                    "12000 ACQUIRED slot=0 fence=9 floor=8000 ceiling=15250 expires=15000",
                    "19000 RENEWED slot=0 ceiling=22250 expires=22000",
                    "26100 RENEWED slot=0 ceiling=29350 expires=29100",
                    "39000 RENEWED slot=0 ceiling=42250 expires=42000",
                ]),
                ..Default::default()
            }],
            bad_lines: Vec::new(),
        };
        let mut a = Analysis::default();
        zombies(&logs, &mut a);
        assert_eq!(a.zombies.len(), 2, "{:?}", a.zombies);
        assert_eq!(
            (
                a.zombies[0].slot,
                a.zombies[0].outcome,
                a.zombies[0].late_by_ms
            ),
            (1, "slot-lost", 3_500)
        );
        assert_eq!(a.zombies[0].refused.get("SLOT_LOST"), Some(&28));
        assert_eq!(
            (
                a.zombies[1].slot,
                a.zombies[1].outcome,
                a.zombies[1].late_by_ms
            ),
            (0, "renewed-in-place", 4_000)
        );
        // The early resume, and worker 1 (killed while stopped, and with no logs) are no zombies.
        assert_eq!(a.harmless_pauses, 1);
    }
}
