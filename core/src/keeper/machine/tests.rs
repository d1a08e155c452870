//! Sequences of inputs through the keeper's machine, with no runtime, store or clock: each test is a script of
//! what the store answers and when, and the actions the keeper must take.

use super::*;
use crate::lease::{Namespace, Owner};
use uuid::Uuid;

/// No jitter: the scripts below expect exact times. `jitter_*` tests seed it.
const CONFIG: Config = Config {
    ttl_ms: 3_000,
    tolerance_ms: 1_000,
    jitter_seed: 0,
};

fn at(mono_ms: u64) -> Now {
    Now {
        mono_ms,
        // The wall clock stays with the store's (`lease`'s `store_now`): no skew unless a test makes one.
        wall_ms: 1_000_000,
    }
}

fn lease(slot: u32, fence: u64, floor: u64, ceiling: u64) -> SlotLease {
    SlotLease {
        namespace: Namespace::new("test").unwrap(),
        slot,
        owner: Owner {
            key: "host".into(),
            incarnation: Uuid::nil(),
        },
        fence,
        expires_at: ceiling,
        floor,
        ceiling,
        store_now: 1_000_000,
    }
}

fn grant(l: SlotLease) -> Input {
    Input::Acquired(Ok(Acquired {
        lease: l,
        duplicate_owner_key: None,
    }))
}

fn unavailable() -> StoreError {
    StoreError::Unavailable {
        store: "test",
        source: "connection refused".into(),
    }
}

fn lost(slot: u32) -> StoreError {
    StoreError::LeaseLost {
        namespace: "test".into(),
        slot,
        reason: "taken over".into(),
    }
}

/// A machine holding slot 0, fence 1, window (1000, 5000], installed at time 0.
fn holding() -> Machine {
    let (m, actions) = Machine::running(CONFIG, at(0), lease(0, 1, 1_000, 5_000));
    assert!(
        matches!(actions[..], [Action::SleepUntil(1_000)]),
        "{actions:?}"
    );
    m
}

fn sleeps(actions: &[Action]) -> Vec<u64> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::SleepUntil(t) => Some(*t),
            _ => None,
        })
        .collect()
}

fn events(actions: &[Action]) -> Vec<&Event> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Emit(e) => Some(e),
            _ => None,
        })
        .collect()
}

#[test]
fn a_failed_renewal_is_retried_with_doubling_back_off_until_one_succeeds() {
    let mut m = holding();
    let a = m.handle(at(1_000), Input::TimerFired);
    assert!(
        matches!(&a[..], [Action::Renew { lease, timeout_ms: 1_000 }] if lease.fence == 1),
        "{a:?}"
    );
    let mut now = 1_010;
    let mut delays = Vec::new();
    for _ in 0..5 {
        let a = m.handle(at(now), Input::Renewed(Err(unavailable())));
        assert!(matches!(a[0], Action::SetState(State::Renewing)), "{a:?}");
        let retry_in = match events(&a)[..] {
            [Event::RenewFailed { retry_in_ms, .. }] => *retry_in_ms,
            ref other => panic!("{other:?}"),
        };
        assert_eq!(sleeps(&a), [now + retry_in]);
        delays.push(retry_in);
        now += retry_in;
        let a = m.handle(at(now), Input::TimerFired);
        assert!(matches!(a[..], [Action::Renew { .. }]), "{a:?}");
        now += 10;
    }
    // 100 ms, doubling, up to ttl/6.
    assert_eq!(delays, [100, 200, 400, 500, 500]);
    let a = m.handle(at(now), Input::Renewed(Ok(lease(0, 1, 1_000, 9_000))));
    assert!(
        matches!(&a[0], Action::Extend(l) if l.ceiling == 9_000),
        "{a:?}"
    );
    assert!(
        matches!(&a[1], Action::SetLease(l, State::Active) if l.ceiling == 9_000),
        "{a:?}"
    );
    assert!(matches!(
        events(&a)[..],
        [Event::Renewed {
            ceiling_ms: 9_000,
            ..
        }]
    ));
    assert_eq!(sleeps(&a), [now + 1_000]);
    // The back-off starts over after a success.
    m.handle(at(now + 1_000), Input::TimerFired);
    let a = m.handle(at(now + 1_010), Input::Renewed(Err(unavailable())));
    assert_eq!(sleeps(&a), [now + 1_110]);
}

#[test]
fn a_lost_lease_closes_the_generator_before_anything_else_then_a_new_slot_is_bound() {
    let mut m = holding();
    m.handle(at(1_000), Input::TimerFired);
    let a = m.handle(at(1_005), Input::Renewed(Err(lost(0))));
    assert!(matches!(a[0], Action::Invalidate), "{a:?}");
    assert!(
        matches!(a[1], Action::SetState(State::Reacquiring)),
        "{a:?}"
    );
    assert!(matches!(events(&a)[..], [Event::SlotLost { slot: 0, .. }]));
    assert!(matches!(a.last(), Some(Action::Acquire)), "{a:?}");
    // Unreachable store: retried with back-off inside the acquisition.
    let a = m.handle(at(1_010), Input::Acquired(Err(unavailable())));
    assert_eq!(sleeps(&a), [1_110]);
    let a = m.handle(at(1_110), Input::TimerFired);
    assert!(matches!(a[..], [Action::Acquire]), "{a:?}");
    let a = m.handle(at(1_120), grant(lease(1, 4, 6_000, 9_000)));
    assert!(matches!(&a[0], Action::Bind(l) if l.slot == 1), "{a:?}");
    assert!(matches!(
        events(&a)[..],
        [Event::Acquired {
            slot: 1,
            fence: 4,
            ..
        }]
    ));
    assert_eq!(sleeps(&a), [2_120]);
    let a = m.handle(at(2_120), Input::TimerFired);
    assert!(matches!(&a[..], [Action::Renew { lease, .. }] if lease.slot == 1));
}

#[test]
fn an_exhausted_namespace_is_retried_after_its_earliest_expiry_and_the_start_gives_up_at_its_deadline(
) {
    let (mut m, a) = Machine::start(CONFIG, at(0), 2_000);
    assert!(matches!(a[..], [Action::Acquire]));
    let exhausted = |earliest_expiry, store_now| StoreError::Exhausted {
        namespace: "test".into(),
        slots: 2,
        earliest_expiry,
        store_now,
    };
    // Between 100 ms and ttl/3.
    let a = m.handle(at(10), Input::Acquired(Err(exhausted(1_500, 1_000))));
    assert_eq!(sleeps(&a), [511]);
    m.handle(at(511), Input::TimerFired);
    let a = m.handle(at(520), Input::Acquired(Err(exhausted(10_000, 1_000))));
    assert_eq!(sleeps(&a), [1_520]);
    m.handle(at(1_520), Input::TimerFired);
    let a = m.handle(at(1_530), Input::Acquired(Err(exhausted(1_000, 1_000))));
    assert_eq!(sleeps(&a), [1_630]);
    m.handle(at(1_630), Input::TimerFired);
    // The next wait would pass the deadline: the start fails with the store's error.
    let a = m.handle(at(1_950), Input::Acquired(Err(unavailable())));
    assert!(
        matches!(
            &a[..],
            [Action::Started(Err(StoreError::Unavailable { .. }))]
        ),
        "{a:?}"
    );
    // A store that refuses for good fails the start at once.
    let (mut m, _) = Machine::start(CONFIG, at(0), 60_000);
    let a = m.handle(
        at(5),
        Input::Acquired(Err(StoreError::InvalidSettings {
            detail: "bits".into(),
        })),
    );
    assert!(matches!(
        &a[..],
        [Action::Started(Err(StoreError::InvalidSettings { .. }))]
    ));
}

#[test]
fn a_ttl_below_the_minimum_back_off_never_panics() {
    let config = Config {
        ttl_ms: 150,
        tolerance_ms: 50,
        jitter_seed: 0,
    };
    let (mut m, _) = Machine::running(config, at(0), lease(0, 1, 0, 200));
    m.handle(at(50), Input::TimerFired);
    let a = m.handle(at(55), Input::Renewed(Err(unavailable())));
    assert_eq!(sleeps(&a), [155]);
    m.handle(at(155), Input::TimerFired);
    let a = m.handle(at(160), Input::Renewed(Err(unavailable())));
    assert_eq!(sleeps(&a), [260]);
}

#[test]
fn a_renewal_that_goes_backwards_raises_the_alarm_gives_the_lease_back_and_recovers_before_acquiring(
) {
    let mut m = holding();
    m.handle(at(1_000), Input::TimerFired);
    // The store answers with a lower ceiling: its record went backwards.
    let a = m.handle(at(1_005), Input::Renewed(Ok(lease(0, 1, 1_000, 4_000))));
    assert!(matches!(a[0], Action::Invalidate), "{a:?}");
    assert!(
        matches!(&a[1], Action::Release { lease, last: Some(5_000), .. } if lease.ceiling == 4_000),
        "the give-back hands over the ceiling this runtime knows was used: {a:?}"
    );
    // Shutdown during the give-back waits for it.
    assert!(!m.interruptible());
    let a = m.handle(at(1_010), Input::Released(Ok(())));
    assert!(matches!(
        events(&a)[..],
        [Event::StoreRegression { slot: 0, .. }]
    ));
    assert!(
        matches!(a.last(), Some(Action::Inspect { timeout_ms: 3_000 })),
        "{a:?}"
    );
    // The store's clock is far behind this runtime's ceiling: the bound is the ceiling.
    let a = m.handle(at(1_020), Input::Inspected(Ok(100)));
    assert!(
        matches!(
            a[..],
            [Action::RaiseNotBefore {
                bound: 5_000,
                timeout_ms: 2_990
            }]
        ),
        "{a:?}"
    );
    // A failed raise is retried from the inspection.
    let a = m.handle(at(1_030), Input::RaisedNotBefore(Err(unavailable())));
    assert!(matches!(
        events(&a)[..],
        [Event::RenewFailed {
            retry_in_ms: 100,
            ..
        }]
    ));
    assert_eq!(sleeps(&a), [1_130]);
    let a = m.handle(at(1_130), Input::TimerFired);
    assert!(matches!(a[..], [Action::Inspect { .. }]));
    let a = m.handle(at(1_140), Input::Inspected(Ok(4_000)));
    assert!(
        matches!(a[..], [Action::RaiseNotBefore { bound: 8_000, .. }]),
        "{a:?}"
    );
    // Someone raised it higher first: as good.
    let a = m.handle(
        at(1_150),
        Input::RaisedNotBefore(Err(StoreError::NotBeforeLowered {
            namespace: "test".into(),
            stored: 9_000,
            requested: 8_000,
        })),
    );
    assert!(matches!(a.last(), Some(Action::Acquire)), "{a:?}");
    // The same slot again with a fence not above the old one, but a floor past every ceiling held: taken.
    let a = m.handle(at(1_160), grant(lease(0, 1, 9_000, 12_000)));
    assert!(
        matches!(&a[0], Action::Bind(l) if l.floor == 9_000),
        "{a:?}"
    );
}

#[test]
fn a_grant_below_what_this_runtime_held_is_given_back_and_never_bound() {
    let mut m = holding();
    m.handle(at(1_000), Input::TimerFired);
    m.handle(at(1_005), Input::Renewed(Err(lost(0))));
    // Slot 0 again, fence 2 but floor 3000 below the ceiling 5000 this runtime held.
    let a = m.handle(at(1_010), grant(lease(0, 2, 3_000, 7_000)));
    assert!(!a.iter().any(|a| matches!(a, Action::Bind(_))), "{a:?}");
    assert!(matches!(
        events(&a)[..],
        [Event::StoreRegression { slot: 0, .. }]
    ));
    assert!(
        matches!(a.last(), Some(Action::Release { lease, last: Some(5_000), .. }) if lease.fence == 2),
        "{a:?}"
    );
    let a = m.handle(at(1_020), Input::Released(Ok(())));
    assert!(matches!(a[..], [Action::Inspect { .. }]), "{a:?}");
    m.handle(at(1_030), Input::Inspected(Ok(1_000)));
    // After the recovery, the replacement loop backs off before acquiring again.
    let a = m.handle(at(1_040), Input::RaisedNotBefore(Ok(())));
    assert_eq!(sleeps(&a), [1_140]);
    let a = m.handle(at(1_140), Input::TimerFired);
    assert!(matches!(a[..], [Action::Acquire]));
    let a = m.handle(at(1_150), grant(lease(0, 3, 6_000, 9_000)));
    assert!(matches!(&a[0], Action::Bind(l) if l.fence == 3), "{a:?}");
}

#[test]
fn a_regression_reported_by_the_store_on_renewal_recovers_then_acquires() {
    let mut m = holding();
    m.handle(at(1_000), Input::TimerFired);
    let a = m.handle(
        at(1_005),
        Input::Renewed(Err(StoreError::Regression {
            store: "test",
            what: "slot 0".into(),
            detail: "fence went down".into(),
        })),
    );
    assert!(matches!(a[0], Action::Invalidate), "{a:?}");
    assert!(matches!(
        events(&a)[..],
        [Event::StoreRegression { slot: 0, .. }]
    ));
    assert!(matches!(a.last(), Some(Action::Inspect { .. })), "{a:?}");
}

#[test]
fn shutdown_during_a_renewal_seals_then_releases_with_the_last_timestamp() {
    let mut m = holding();
    m.handle(at(1_000), Input::TimerFired);
    assert!(m.interruptible());
    let a = m.handle(at(1_001), Input::Shutdown);
    assert!(matches!(a[..], [Action::Seal]), "{a:?}");
    // The renewal's answer, had it come, is no longer awaited.
    assert!(m.handle(at(1_002), Input::Renewed(Err(lost(0)))).is_empty());
    let a = m.handle(
        at(1_003),
        Input::Sealed {
            was_closed: false,
            last: Some(4_200),
        },
    );
    assert!(matches!(a[0], Action::SetState(State::Closed)), "{a:?}");
    assert!(matches!(&a[1], Action::Release { lease, last: Some(4_200), .. } if lease.fence == 1));
    let a = m.handle(at(1_010), Input::Released(Ok(())));
    assert!(matches!(
        events(&a)[..],
        [Event::Released {
            slot: 0,
            last_issued_ms: Some(4_200)
        }]
    ));
    assert!(matches!(a.last(), Some(Action::Finished(Some(4_200)))));
    assert!(m.is_done());
}

#[test]
fn shutdown_while_replacing_a_lost_lease_releases_nothing() {
    let mut m = holding();
    m.handle(at(1_000), Input::TimerFired);
    m.handle(at(1_005), Input::Renewed(Err(lost(0))));
    let a = m.handle(at(1_006), Input::Shutdown);
    assert!(matches!(a[..], [Action::Seal]), "{a:?}");
    let a = m.handle(
        at(1_007),
        Input::Sealed {
            was_closed: true,
            last: None,
        },
    );
    assert!(
        matches!(
            a[..],
            [Action::SetState(State::Closed), Action::Finished(None)]
        ),
        "{a:?}"
    );
}

#[test]
fn a_store_clock_far_from_the_local_one_is_reported_as_skew() {
    let mut m = holding();
    m.handle(at(1_000), Input::TimerFired);
    let mut renewed = lease(0, 1, 1_000, 9_000);
    renewed.store_now = 1_000_000 + 501;
    let a = m.handle(at(1_000), Input::Renewed(Ok(renewed)));
    assert!(events(&a)
        .iter()
        .any(|e| matches!(e, Event::ClockSkew { .. })));
}

/// The renewal time of a machine installed at 0 with `seed`, and of its next `n - 1` renewals.
fn renewal_times(seed: u64, n: usize) -> Vec<u64> {
    let config = Config {
        jitter_seed: seed,
        ..CONFIG
    };
    let (mut m, actions) = Machine::running(config, at(0), lease(0, 1, 1_000, 5_000));
    let mut times = sleeps(&actions);
    while times.len() < n {
        let t = *times.last().unwrap();
        m.handle(at(t), Input::TimerFired);
        let a = m.handle(at(t), Input::Renewed(Ok(lease(0, 1, 1_000, 5_000 + t))));
        let next = sleeps(&a);
        assert_eq!(next.len(), 1, "{a:?}");
        times.extend(next);
    }
    times
}

#[test]
fn jitter_spreads_the_renewals_of_a_fleet_started_together() {
    // 64 runtimes installed at the same instant: without jitter they would renew together for ever.
    let fleets: Vec<Vec<u64>> = (1..=64u64)
        .map(|i| renewal_times(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1, 10))
        .collect();
    for times in &fleets {
        // Each period is ttl/3 (1,000 ms), give or take a tenth.
        let mut last = 0;
        for &t in times {
            assert!((900..=1_100).contains(&(t - last)), "{times:?}");
            last = t;
        }
    }
    // By the tenth renewal the 64 are spread over hundreds of milliseconds, with few at any one instant.
    let tenth: Vec<u64> = fleets.iter().map(|t| t[9]).collect();
    let spread = tenth.iter().max().unwrap() - tenth.iter().min().unwrap();
    assert!(
        spread >= 200,
        "renewals still bunched within {spread} ms: {tenth:?}"
    );
    let mut distinct = tenth.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(
        distinct.len() >= 48,
        "{} distinct instants of 64",
        distinct.len()
    );
    // Without jitter, exactly ttl/3 apart, all in step.
    assert_eq!(renewal_times(0, 3), [1_000, 2_000, 3_000]);
}

#[test]
fn jitter_keeps_retries_between_half_the_back_off_and_all_of_it() {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 1..=32u64 {
        let config = Config {
            jitter_seed: seed.wrapping_mul(0x2545_F491_4F6C_DD1D),
            ..CONFIG
        };
        let (mut m, first) = Machine::running(config, at(0), lease(0, 1, 1_000, 5_000));
        let mut now = sleeps(&first)[0];
        m.handle(at(now), Input::TimerFired);
        let mut backoff = MIN_BACKOFF_MS;
        for _ in 0..4 {
            let a = m.handle(at(now), Input::Renewed(Err(unavailable())));
            let retry_in = match events(&a)[..] {
                [Event::RenewFailed { retry_in_ms, .. }] => *retry_in_ms,
                ref other => panic!("{other:?}"),
            };
            assert!(
                (backoff / 2..=backoff).contains(&retry_in),
                "retry in {retry_in} ms for a back-off of {backoff}"
            );
            assert_eq!(
                sleeps(&a),
                [now + retry_in],
                "the event tells the real delay"
            );
            seen.insert(retry_in);
            now += retry_in;
            m.handle(at(now), Input::TimerFired);
            backoff = double(backoff, CONFIG.ttl_ms);
        }
    }
    assert!(seen.len() > 16, "retry delays barely vary: {seen:?}");
}
