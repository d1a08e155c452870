//! The Jepsen-style report of a run.

use super::analyze::BUCKET_MS;
use super::{Analysis, RunLogs};
use cosid::{Id, Layout};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The Jepsen-style report of one run.
pub fn report(dir: &Path, logs: &RunLogs, a: &Analysis) -> String {
    let info = &logs.info;
    let mut s = String::new();
    let span_s = |k: &str| info.num::<u64>(k).unwrap_or(0);
    let measured = span_s("measure_to").saturating_sub(span_s("measure_from")) as f64 / 1000.0;
    let _ = writeln!(s, "run {}", dir.display());
    let _ = writeln!(
        s,
        "  store {}, seed {}, {} workers on {} slots, ttl {} ms, tolerance {} ms, appendfsync {}, {:.1} s measured",
        info.get("store").unwrap_or("redis"),
        info.get("seed").unwrap_or("?"),
        info.get("workers").unwrap_or("?"),
        1u64 << info.num::<u8>("bits").unwrap_or(0),
        info.get("ttl_ms").unwrap_or("?"),
        info.get("tolerance_ms").unwrap_or("?"),
        info.get("appendfsync").unwrap_or("-"),
        measured
    );
    let _ = writeln!(
        s,
        "  slots at the end: {}",
        info.get("final_slots").unwrap_or("?")
    );
    if let Some(proxy) = info.get("proxy") {
        let _ = writeln!(s, "  serve replicas: {proxy}");
    }
    let _ = writeln!(s, "faults");
    for (k, v) in &a.faults {
        let failed = a
            .faults_failed
            .get(k)
            .map_or(String::new(), |n| format!(" ({n} failed to inject)"));
        let _ = writeln!(s, "  {k:<26} {v:>6}{failed}");
    }
    for (k, v) in a
        .faults_failed
        .iter()
        .filter(|(k, _)| !a.faults.contains_key(*k))
    {
        let _ = writeln!(s, "  {k:<26} {:>6} ({v} failed to inject)", 0);
    }
    let _ = writeln!(s, "ids");
    let _ = writeln!(s, "  attempted          {:>9}", a.attempted);
    let _ = writeln!(s, "  acknowledged       {:>9}", a.acknowledged);
    let _ = writeln!(
        s,
        "  duplicated         {:>9}   must be 0",
        a.duplicate_copies
    );
    let _ = writeln!(s, "  outside a window   {:>9}   must be 0", a.strays.len());
    let _ = writeln!(
        s,
        "  overlapping windows{:>9}   must be 0",
        a.overlaps.len()
    );
    let _ = writeln!(
        s,
        "  store regressions  {:>9}   must be 0 on a durable store (the runtime's alarm)",
        a.regressions()
    );
    if a.expected_alarms > 0 {
        let _ = writeln!(
            s,
            "  file-replaced alarms{:>8}   expected: the store saw the injected file replacement",
            a.expected_alarms
        );
    }
    for d in a.duplicates.iter().take(5) {
        let _ = writeln!(
            s,
            "    duplicate {} ({}) acknowledged by {}",
            d.id,
            Layout::millis()
                .to_friendly(Id::from_u64(d.id))
                .unwrap_or_default(),
            d.holders.join(", ")
        );
    }
    for x in a.strays.iter().take(5) {
        let _ = writeln!(
            s,
            "    stray {} by {}: slot {}, ts {}",
            x.id, x.holder, x.slot, x.ts
        );
    }
    for o in a.overlaps.iter().take(5) {
        let _ = writeln!(
            s,
            "    overlap on slot {}: {} and {}",
            o.slot, o.first, o.second
        );
    }
    for r in &a.restores {
        let _ = writeln!(
            s,
            "  restore of a copy {} ms old at +{:.1} s: {} duplicated, {} alarms before the next restore",
            r.age_ms,
            r.at.saturating_sub(info.num::<u64>("measure_from").unwrap_or(r.at)) as f64 / 1000.0,
            r.duplicates,
            r.alarms
        );
    }
    let _ = writeln!(s, "refused id calls (by error code)");
    for (k, v) in &a.refused {
        let _ = writeln!(s, "  {k:<22} {v:>9}");
    }
    let _ = writeln!(
        s,
        "start-ups refused (a worker waiting for a free slot, or for the store): {}",
        if a.start_refused.is_empty() {
            "none".to_owned()
        } else {
            a.start_refused
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    let _ = writeln!(s, "runtime events");
    for (k, v) in a.events.iter().filter(|(k, _)| {
        !matches!(
            k.as_str(),
            "STATS" | "START" | "BUILT" | "BUILD_FAILED" | "EXIT" | "SHUTDOWN"
        )
    }) {
        let _ = writeln!(s, "  {k:<22} {v:>9}");
    }
    let _ = writeln!(s, "  worker incarnations    {:>9}", a.incarnations);
    let mut outcomes: BTreeMap<&str, u64> = BTreeMap::new();
    for z in &a.zombies {
        *outcomes.entry(z.outcome).or_default() += 1;
    }
    let _ = writeln!(
        s,
        "zombie resumes: {} (then {}); {} other pauses ended with the lease still valid or none held",
        a.zombies.len(),
        outcomes.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", "),
        a.harmless_pauses
    );
    for z in &a.zombies {
        let refused: Vec<String> = z.refused.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(
            s,
            "  {} slot {} resumed {} ms after expiry: {}; refused calls: {}; ids past the old ceiling: {}",
            z.holder,
            z.slot,
            z.late_by_ms,
            z.outcome,
            if refused.is_empty() { "none".into() } else { refused.join(", ") },
            z.past_ceiling
        );
    }
    let _ = writeln!(
        s,
        "availability (an id acknowledged in each {BUCKET_MS} ms)"
    );
    for av in &a.availability {
        let _ = writeln!(
            s,
            "  slot {}   {:5.1} %   longest gap {:.1} s at +{:.1} s",
            av.slot,
            av.fraction * 100.0,
            av.longest_gap.0 as f64 / 1000.0,
            av.longest_gap.1 as f64 / 1000.0
        );
    }
    let _ = writeln!(
        s,
        "  longest gap with no id acknowledged on any slot: {:.1} s at +{:.1} s{}",
        a.longest_gap.0 as f64 / 1000.0,
        a.longest_gap.1 as f64 / 1000.0,
        if a.longest_gap_faults.is_empty() {
            String::new()
        } else {
            format!(
                " (faults just before or during it: {})",
                a.longest_gap_faults.join(", ")
            )
        }
    );
    if a.sanity.is_empty() {
        let _ = writeln!(s, "checker sanity: ok (planted-fault self-test passed, every log decoded, {} ids checked)", a.acknowledged);
    } else {
        let _ = writeln!(s, "checker sanity: FAILED");
        for p in a.sanity.iter().take(20) {
            let _ = writeln!(s, "  {p}");
        }
    }
    s
}
