//! Events from a runtime's keeper, delivered to JavaScript callbacks.
//!
//! The keeper calls its listeners on its own thread. Each JavaScript callback sits behind a weak (unref'd)
//! threadsafe function, called in non-blocking mode: the keeper never waits for JavaScript, and a subscription
//! never keeps the process alive. A callback whose thread has gone (a worker that exited) is dropped at the next
//! event.

use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Something a runtime's keeper did or saw. `type` names it; the other fields are those of that type.
#[napi(object, object_from_js = false)]
#[derive(Debug, Clone)]
pub struct CosidEvent {
    /// What happened.
    #[napi(
        js_name = "type",
        ts_type = "'ACQUIRED' | 'RENEWED' | 'RENEW_FAILED' | 'SLOT_LOST' | 'RELEASED' | 'DUPLICATE_OWNER_KEY' | 'CLOCK_SKEW' | 'STORE_REGRESSION'"
    )]
    pub kind: String,
    /// A one-line description.
    pub message: String,
    /// The slot (every type but `CLOCK_SKEW`).
    pub slot: Option<u32>,
    /// The lease's fence (`ACQUIRED`).
    pub fence: Option<f64>,
    /// Window floor, store ms (`ACQUIRED`).
    pub floor_ms: Option<f64>,
    /// Window ceiling, store ms (`ACQUIRED`, `RENEWED`).
    pub ceiling_ms: Option<f64>,
    /// Lease expiry, store ms (`ACQUIRED`, `RENEWED`).
    pub expires_at_ms: Option<f64>,
    /// The last millisecond used, handed to the next holder (`RELEASED`; absent if no id was issued).
    pub last_issued_ms: Option<f64>,
    /// What went wrong (`RENEW_FAILED`).
    pub error: Option<String>,
    /// When the next try is, in ms (`RENEW_FAILED`).
    pub retry_in_ms: Option<f64>,
    /// Why (`SLOT_LOST`), or what went backwards (`STORE_REGRESSION`).
    pub reason: Option<String>,
    /// The shared owner key (`DUPLICATE_OWNER_KEY`).
    pub key: Option<String>,
    /// The other instance's slot (`DUPLICATE_OWNER_KEY`).
    pub other_slot: Option<u32>,
    /// This host's clock, ms (`CLOCK_SKEW`).
    pub local_ms: Option<f64>,
    /// The store's clock, ms (`CLOCK_SKEW`).
    pub store_ms: Option<f64>,
}

impl CosidEvent {
    fn new(event: &cosid::Event) -> Self {
        let ms = |v: u64| Some(v as f64);
        let mut e = CosidEvent {
            kind: event.name().to_owned(),
            message: event.to_string(),
            slot: None,
            fence: None,
            floor_ms: None,
            ceiling_ms: None,
            expires_at_ms: None,
            last_issued_ms: None,
            error: None,
            retry_in_ms: None,
            reason: None,
            key: None,
            other_slot: None,
            local_ms: None,
            store_ms: None,
        };
        match event {
            cosid::Event::Acquired {
                slot,
                fence,
                floor_ms,
                ceiling_ms,
                expires_at_ms,
            } => {
                e.slot = Some(*slot);
                e.fence = ms(*fence);
                e.floor_ms = ms(*floor_ms);
                e.ceiling_ms = ms(*ceiling_ms);
                e.expires_at_ms = ms(*expires_at_ms);
            }
            cosid::Event::Renewed {
                slot,
                ceiling_ms,
                expires_at_ms,
            } => {
                e.slot = Some(*slot);
                e.ceiling_ms = ms(*ceiling_ms);
                e.expires_at_ms = ms(*expires_at_ms);
            }
            cosid::Event::RenewFailed {
                slot,
                error,
                retry_in_ms,
            } => {
                e.slot = Some(*slot);
                e.error = Some(error.clone());
                e.retry_in_ms = ms(*retry_in_ms);
            }
            cosid::Event::SlotLost { slot, reason } => {
                e.slot = Some(*slot);
                e.reason = Some(reason.clone());
            }
            cosid::Event::Released {
                slot,
                last_issued_ms,
            } => {
                e.slot = Some(*slot);
                e.last_issued_ms = last_issued_ms.map(|v| v as f64);
            }
            cosid::Event::DuplicateOwnerKey { key, other_slot } => {
                e.key = Some(key.clone());
                e.other_slot = Some(*other_slot);
            }
            cosid::Event::ClockSkew { local_ms, store_ms } => {
                e.local_ms = ms(*local_ms);
                e.store_ms = ms(*store_ms);
            }
            cosid::Event::StoreRegression { slot, detail } => {
                e.slot = Some(*slot);
                e.reason = Some(detail.clone());
            }
            // A newer core's event: type and message still say what it is.
            _ => {}
        }
        e
    }
}

/// A weak, non-blocking threadsafe function taking one event.
type Callback = ThreadsafeFunction<CosidEvent, (), CosidEvent, Status, false, true>;

/// The JavaScript callbacks of one runtime.
#[derive(Default)]
pub struct Subscribers {
    next: AtomicU64,
    list: Mutex<Vec<(u64, Callback)>>,
}

impl std::fmt::Debug for Subscribers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscribers")
            .field("count", &self.lock().len())
            .finish()
    }
}

impl Subscribers {
    fn lock(&self) -> MutexGuard<'_, Vec<(u64, Callback)>> {
        // The list is only pushed to and filtered: a poisoned lock still holds a consistent list.
        self.list.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `callback`; returns its id for [`remove`](Self::remove).
    pub fn add(&self, callback: &Function<CosidEvent, ()>) -> napi::Result<u64> {
        let tsfn = callback
            .build_threadsafe_function::<CosidEvent>()
            .weak::<true>()
            .callee_handled::<false>()
            .build()?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().push((id, tsfn));
        Ok(id)
    }

    /// Removes the callback `id`; later events do not reach it.
    pub fn remove(&self, id: u64) {
        let removed: Vec<_> = {
            let mut list = self.lock();
            let (gone, kept) = std::mem::take(&mut *list)
                .into_iter()
                .partition(|(i, _)| *i == id);
            *list = kept;
            gone
        };
        // Released outside the lock.
        drop(removed);
    }

    /// Queues `event` for every callback, without waiting; forgets callbacks whose thread has gone.
    pub fn dispatch(&self, event: &cosid::Event) {
        let event = CosidEvent::new(event);
        let mut gone = Vec::new();
        let mut list = self.lock();
        let mut i = 0;
        while i < list.len() {
            let cb = &list[i].1;
            let status = cb.call(event.clone(), ThreadsafeFunctionCallMode::NonBlocking);
            if status == Status::Closing || cb.aborted() {
                gone.push(list.remove(i));
            } else {
                i += 1;
            }
        }
        drop(list);
        // Released outside the lock.
        drop(gone);
    }

    /// A listener for [`cosid::Runtime::subscribe`] that dispatches to these callbacks.
    pub fn listener(self: &Arc<Self>) -> impl Fn(&cosid::Event) + Send + Sync + 'static {
        let subs = Arc::downgrade(self);
        move |event| {
            if let Some(subs) = subs.upgrade() {
                subs.dispatch(event);
            }
        }
    }
}
