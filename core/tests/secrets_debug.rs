//! A runtime on a store whose URL carries a secret never shows it: not in its `Debug` output, its builder's, its
//! status, nor its events. Runs against the Redis of `COSID_TEST_REDIS_URL` (`.ci/services/redis.sh`).
#![cfg(feature = "redis")]

use cosid::Runtime;
use std::sync::{Arc, Mutex};

#[test]
fn a_runtime_never_shows_its_store_secret() {
    let Some(base) = std::env::var("COSID_TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        println!("skipped: set COSID_TEST_REDIS_URL to run this test against a real server");
        return;
    };
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}token=Zq7XkWv9Jp");
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let builder = Runtime::builder()
        .store(url)
        .namespace(format!("secrets-debug-{}", std::process::id()))
        .subscribe(move |e| seen.lock().unwrap().push(format!("{e:?} {e}")));
    let mut printed = vec![format!("{builder:?}"), format!("{:?}", builder.config())];
    let rt = builder.build().unwrap();
    rt.next_id().unwrap();
    printed.push(format!("{rt:?}"));
    printed.push(format!("{:?}", rt.status()));
    rt.shutdown();
    printed.extend(events.lock().unwrap().iter().cloned());
    for text in &printed {
        assert!(!text.contains("Zq7XkWv9Jp"), "secret shown: {text}");
    }
}
