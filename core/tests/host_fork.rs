//! The host layer's fork rules, with the child's side played in this process: `after_fork_in_child()` is what a
//! binding's fork hook runs in a real child (the C library's fork tests and the conformance drivers fork for
//! real). One test only: the fork generation is process-wide.

use cosid::host::{fork, ErrorCode, Holder, Settings};

fn settings(store: &str, ns: &str) -> Settings {
    let mut s = Settings::new();
    s.set("store", store).unwrap();
    s.set("namespace", ns).unwrap();
    s.set("ttl", "1s").unwrap();
    s
}

#[test]
fn a_child_never_issues_on_a_slot_it_did_not_acquire() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("leases.db").display());
    let state = dir.path().join("state");
    let stat = format!("static:2?state_file={}", state.display());
    let cases: Vec<(&str, String, Option<ErrorCode>)> = vec![
        ("memory", "memory:".into(), Some(ErrorCode::Forked)),
        ("manual", "manual:3".into(), Some(ErrorCode::Forked)),
        (
            "static without a state file",
            "static:4".into(),
            Some(ErrorCode::Forked),
        ),
        // The parent holds the state file's lock: the child cannot take the slot.
        ("static with a state file", stat, Some(ErrorCode::StateFile)),
        ("sqlite", db.clone(), None),
    ];
    let holders: Vec<(&str, Holder, u32)> = cases
        .iter()
        .map(|(name, store, _)| {
            let h = Holder::new(settings(store, "fork"));
            h.next_id().unwrap();
            let slot = h.status().unwrap().slot;
            (*name, h, slot)
        })
        .collect();
    let mut policy = settings(&db, "fork-policy");
    policy.set("on_fork", "error").unwrap();
    let by_policy = Holder::new(policy);
    by_policy.next_id().unwrap();

    fork::prepare();
    fork::after_fork_in_child();

    for ((name, h, parent_slot), (_, _, expected)) in holders.iter().zip(&cases) {
        assert!(
            h.try_next_id().is_none(),
            "{name}: the fast path issued after a fork"
        );
        assert!(
            h.try_next_id_leaf().is_none(),
            "{name}: the leaf path issued after a fork"
        );
        match expected {
            Some(code) => {
                let e = h.next_id().unwrap_err();
                assert_eq!(e.code, *code, "{name}: {}", e.message);
                // It stays so.
                assert_eq!(h.next_id().unwrap_err().code, *code, "{name}");
            }
            None => {
                h.next_id().unwrap();
                let child = h.status().unwrap();
                assert_ne!(
                    child.slot, *parent_slot,
                    "{name}: the child took its parent's slot"
                );
            }
        }
    }
    let e = by_policy.next_id().unwrap_err();
    assert_eq!(e.code, ErrorCode::Forked);
    assert!(e.message.contains("policy"), "{}", e.message);
    // Configured again, a child that got FORKED starts a runtime of its own.
    by_policy.configure(settings(&db, "fork-policy")).unwrap();
    by_policy.next_id().unwrap();
    by_policy.shutdown().unwrap();
    for (_, h, _) in &holders {
        h.shutdown().unwrap();
    }
    // A holder copied from a parent is dropped without touching the parent's runtime (no join, no release).
    let copied = Holder::new(settings(&db, "fork-drop"));
    copied.next_id().unwrap();
    fork::prepare();
    fork::after_fork_in_child();
    drop(copied);
}
