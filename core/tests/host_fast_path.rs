//! The holder's fast path keeps, per thread, the runtime it last issued from (`Holder::try_next_id`). What that
//! cache must never do: issue from another holder's runtime (a holder freed and another made at the same
//! address), from a runtime the holder replaced, or keep a dropped holder's runtime (and its lease) alive.

use cosid::host::{Holder, Settings};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

fn settings(store: &str, ns: &str) -> Settings {
    let mut s = Settings::new();
    s.set("store", store).unwrap();
    s.set("namespace", ns).unwrap();
    s
}

fn slot_of(h: &Holder, id: cosid::Id) -> u64 {
    h.layout().unwrap().decompose(id).unwrap().slot
}

#[test]
fn a_holder_made_after_another_is_freed_never_issues_from_the_freed_ones_runtime() {
    for round in 0..50u64 {
        // Boxed and freed in turn: the allocator tends to give the second the first one's address.
        let first = Box::new(Holder::new(settings("manual:3", "fast-a")));
        let id = first.next_id().unwrap();
        assert_eq!(slot_of(&first, id), 3);
        drop(first);
        let second = Box::new(Holder::new(settings("manual:9", "fast-b")));
        let id = second.next_id().unwrap();
        assert_eq!(
            slot_of(&second, id),
            9,
            "round {round}: an id from the freed holder's runtime"
        );
        let id = second.try_next_id().unwrap();
        assert_eq!(slot_of(&second, id), 9, "round {round}");
        if let Some(id) = second.try_next_id_leaf() {
            assert_eq!(slot_of(&second, id), 9, "round {round}: the leaf path");
        }
    }
}

#[test]
fn the_leaf_path_issues_from_the_pinned_runtime_only() {
    let h = Holder::new(settings("manual:5", "fast-leaf"));
    h.next_id().unwrap();
    // The clock's cache is fresh right after an id, but the ticker may be probing it: a few tries.
    let id = (0..100)
        .find_map(|_| {
            let id = h.try_next_id_leaf();
            if id.is_none() {
                h.next_id().unwrap(); // reads the clock and refreshes the cache
            }
            id
        })
        .expect("the leaf path never issued from the holder's first runtime");
    assert_eq!(slot_of(&h, id), 5);
    h.shutdown().unwrap();
    assert!(h.try_next_id_leaf().is_none(), "issued after shutdown");
    h.configure(settings("manual:7", "fast-leaf")).unwrap();
    h.next_id().unwrap();
    for _ in 0..100 {
        if let Some(id) = h.try_next_id_leaf() {
            assert_eq!(
                slot_of(&h, id),
                7,
                "the leaf path issued from the replaced runtime"
            );
        }
    }
    // Several slots: the leaf path declines (the holder's other paths spread ids over the slots).
    let mut two = settings("memory:", "fast-leaf-k");
    two.set("slots", "2").unwrap();
    let k = Holder::new(two);
    k.next_id().unwrap();
    assert!(k.try_next_id_leaf().is_none());
}

#[test]
fn a_holder_configured_again_issues_from_its_new_runtime_on_every_thread() {
    let h = Arc::new(Holder::new(settings("manual:4", "fast-c")));
    let (go, wait) = mpsc::channel::<()>();
    let (slots_tx, slots) = mpsc::channel::<u64>();
    let worker = {
        let h = h.clone();
        std::thread::spawn(move || {
            for () in wait {
                let id = h.next_id().unwrap();
                slots_tx.send(slot_of(&h, id)).unwrap();
            }
        })
    };
    go.send(()).unwrap();
    assert_eq!(slots.recv().unwrap(), 4);
    assert_eq!(slot_of(&h, h.next_id().unwrap()), 4);
    h.shutdown().unwrap();
    assert!(h.try_next_id().is_none(), "issued after shutdown");
    assert!(h.try_next_id_leaf().is_none(), "issued after shutdown");
    h.configure(settings("manual:6", "fast-c")).unwrap();
    assert_eq!(slot_of(&h, h.next_id().unwrap()), 6);
    // The worker's cache still names the first runtime.
    go.send(()).unwrap();
    assert_eq!(
        slots.recv().unwrap(),
        6,
        "the worker issued from the replaced runtime"
    );
    drop(go);
    worker.join().unwrap();
}

#[test]
fn dropping_a_holder_releases_its_slot_while_another_threads_cache_holds_its_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", dir.path().join("leases.db").display());
    let released = Arc::new(AtomicUsize::new(0));
    let h = Arc::new(Holder::new(settings(&store, "fast-d")));
    {
        let released = released.clone();
        h.subscribe(Arc::new(move |e: &cosid::Event| {
            if e.name() == "RELEASED" {
                released.fetch_add(1, Ordering::SeqCst);
            }
        }))
        .unwrap();
    }
    // Another thread issues (so its cache holds the runtime) and stays alive.
    let (done_tx, done) = mpsc::channel::<()>();
    let (issued_tx, issued) = mpsc::channel::<()>();
    let worker = {
        let h = h.clone();
        std::thread::spawn(move || {
            h.next_id().unwrap();
            h.next_id().unwrap();
            drop(h);
            issued_tx.send(()).unwrap();
            let _ = done.recv();
        })
    };
    issued.recv().unwrap();
    let h = Arc::try_unwrap(h).expect("the only holder reference left");
    drop(h);
    assert_eq!(
        released.load(Ordering::SeqCst),
        1,
        "the dropped holder's runtime did not release its slot"
    );
    done_tx.send(()).unwrap();
    worker.join().unwrap();
}
