//! The planted-fault self-test of the checker, run before every real check.

use super::{analyze, Incarnation, RunLogs};
use crate::logs::{Line, RunInfo};
use cosid::Layout;

/// The planted-fault self-test: the checker must find exactly the duplicate, the stray id and the overlap put
/// into a small synthetic run, and nothing in its clean twin. Returns what went wrong, if anything.
pub fn self_test() -> Result<(), String> {
    let layout = Layout::millis();
    let id = |ts: u64, slot: u64, seq: u64| {
        layout
            .compose(ts - layout.epoch_ms(), slot, seq)
            .expect("a valid planted id")
            .as_u64()
    };
    let base = 1_800_000_000_000u64;
    let mut info = RunInfo::default();
    info.set("bits", 1);
    info.set("negative", false);
    info.set("started_at", base - 10_000);
    info.set("measure_from", base - 10_000);
    info.set("measure_to", base + 10_000);
    info.set("ended_at", base + 20_000);
    let ev = |t: u64, s: &str| Line::parse(&format!("{t} {s}")).expect("a valid planted line");
    let holder = |worker, lines: Vec<Line>, ids: Vec<(u64, u64)>| Incarnation {
        worker,
        inc: 1,
        ids,
        events: lines,
        ..Incarnation::default()
    };
    let many = |slot: u64, from: u64, n: u64| -> Vec<(u64, u64)> {
        (0..n)
            .map(|k| (id(from + k, slot, 0), base - 10_000 + k * 10))
            .collect()
    };
    // Two clean holders, one per slot, with 2,000 ids between them.
    let a_ids = many(0, base + 1, 1_000);
    let b_ids = many(1, base + 1, 1_000);
    let clean = RunLogs {
        info: info.clone(),
        nemesis: Vec::new(),
        incarnations: vec![
            holder(
                0,
                vec![
                    ev(base - 10_000, "START pid=1"),
                    ev(base - 10_000, "ACQUIRED slot=0 fence=1 floor=0 ceiling=1800000000500 expires=1800000000250"),
                    ev(base - 9_000, "RENEWED slot=0 ceiling=1800000005000 expires=1800000004750"),
                ],
                a_ids.clone(),
            ),
            holder(
                1,
                vec![
                    ev(base - 10_000, "START pid=2"),
                    ev(base - 10_000, "ACQUIRED slot=1 fence=1 floor=0 ceiling=1800000005000 expires=1800000004750"),
                ],
                b_ids.clone(),
            ),
        ],
        bad_lines: Vec::new(),
    };
    let c = analyze(&clean, &layout);
    if c.violations() != 0 || c.acknowledged != 2_000 || !c.sanity.is_empty() {
        return Err(format!(
            "on clean planted logs the checker found {} violations, {} ids and sanity problems {:?}",
            c.violations(),
            c.acknowledged,
            c.sanity
        ));
    }
    // The faulty twin: holder 2 got an overlapping window on slot 0 and repeated one of holder 0's ids; holder
    // 0 also logged an id past its ceiling.
    let mut faulty = clean.clone();
    faulty.incarnations[0]
        .ids
        .push((id(base + 6_000, 0, 0), base));
    faulty.incarnations.push(holder(
        2,
        vec![
            ev(base - 5_000, "START pid=3"),
            ev(base - 5_000, "ACQUIRED slot=0 fence=2 floor=1800000000100 ceiling=1800000003000 expires=1800000002750"),
        ],
        vec![(a_ids[200].0, base)],
    ));
    let f = analyze(&faulty, &layout);
    let found = (f.duplicate_copies, f.strays.len(), f.overlaps.len());
    if found != (1, 1, 1) || f.duplicates[0].id != a_ids[200].0 || f.strays[0].ts != base + 6_000 {
        return Err(format!(
            "on planted faults the checker found (duplicates, strays, overlaps) = {found:?}, expected (1, 1, 1): {:?} {:?}",
            f.duplicates, f.strays
        ));
    }
    sqlite_twins(&clean)
}

/// SQLite's file-replace fault: the store's alarm that reports it is expected (not a regression) only after the
/// fault, and a window in the new file (floor 0 again) is not compared with the old file's windows; anything else
/// still counts.
fn sqlite_twins(clean: &RunLogs) -> Result<(), String> {
    let layout = Layout::millis();
    let base = 1_800_000_000_000u64;
    let ev = |t: u64, s: &str| Line::parse(&format!("{t} {s}")).expect("a valid planted line");
    let replaced =
        "STORE_REGRESSION slot=0 reason=sqlite store regression: the path now names another file";
    let mut logs = clean.clone();
    logs.info.set("store", "sqlite");
    logs.incarnations[0].events.push(ev(base - 7_000, replaced));
    // Its next grant, in the new file, repeats its fence: the runtime's alarm again, explained by the same fault.
    logs.incarnations[0].events.push(ev(
        base - 6_500,
        "STORE_REGRESSION slot=0 reason=fence 1 granted, but this runtime held fence 1",
    ));
    // A third process in the new file, granted slot 0 from floor 0 after the replacement, with no id of its own.
    logs.incarnations.push(Incarnation {
        worker: 2,
        inc: 1,
        events: vec![
            ev(base - 7_500, "START pid=3"),
            ev(
                base - 7_000,
                "ACQUIRED slot=0 fence=1 floor=0 ceiling=1800000009000 expires=1800000008750",
            ),
        ],
        ..Incarnation::default()
    });
    let without_fault = analyze(&logs, &layout);
    logs.nemesis
        .push(ev(base - 8_000, "FAULT kind=file-replace"));
    let with_fault = analyze(&logs, &layout);
    let other = {
        let mut l = logs.clone();
        l.incarnations[1].events.push(ev(
            base - 6_000,
            "STORE_REGRESSION slot=1 reason=fence went backwards",
        ));
        analyze(&l, &layout)
    };
    let got = (
        (without_fault.regressions(), without_fault.overlaps.len()),
        (
            with_fault.regressions(),
            with_fault.expected_alarms,
            with_fault.overlaps.len(),
        ),
        other.regressions(),
    );
    if got != ((2, 1), (0, 2, 0), 1) {
        return Err(format!(
            "on a planted SQLite file replacement the checker found ((alarms, overlaps) without the fault, (alarms, \
             expected alarms, overlaps) with it, alarms with another alarm) = {got:?}, expected ((2, 1), (0, 2, 0), 1)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_self_test_passes() {
        self_test().unwrap();
    }
}
