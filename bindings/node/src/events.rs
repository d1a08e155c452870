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
        ts_type = "'ACQUIRED' | 'RENEWED' | 'RENEW_FAILED' | 'SLOT_LOST' | 'RELEASED' | 'DUPLICATE_OWNER_KEY' | 'CLOCK_SKEW' | 'STORE_REGRESSION' | 'STORE_UNSAFE'"
    )]
    pub kind: String,
    /// How much it matters: `ERROR` (ids refused: `SLOT_LOST`, `STORE_REGRESSION`), `WARN` (ids still flow but
    /// something needs a person: `RENEW_FAILED`, `CLOCK_SKEW`, `STORE_UNSAFE`), `INFO` or `DEBUG`.
    #[napi(ts_type = "'ERROR' | 'WARN' | 'INFO' | 'DEBUG'")]
    pub level: String,
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
    /// The store kind (`STORE_UNSAFE`).
    pub store: Option<String>,
    /// The server setting that lets the store lose a committed write (`STORE_UNSAFE`).
    pub setting: Option<String>,
    /// Its value on the server (`STORE_UNSAFE`).
    pub value: Option<String>,
    /// The value the safety claim needs (`STORE_UNSAFE`).
    pub expected: Option<String>,
}

impl CosidEvent {
    /// Converts the core's event: its level, message and fields (one table, in the core) become this object's.
    fn new(event: &cosid::Event) -> Self {
        use cosid::EventField::{Text, U64};
        let mut e = CosidEvent {
            kind: event.name().to_owned(),
            level: event.level().name().to_owned(),
            message: event.message(),
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
            store: None,
            setting: None,
            value: None,
            expected: None,
        };
        for (name, value) in event.fields() {
            let text = || Some(value.to_string());
            match (name, value) {
                ("slot", U64(v)) => e.slot = u32::try_from(v).ok(),
                ("other_slot", U64(v)) => e.other_slot = u32::try_from(v).ok(),
                (_, U64(v)) => {
                    let field = match name {
                        "fence" => &mut e.fence,
                        "floor_ms" => &mut e.floor_ms,
                        "ceiling_ms" => &mut e.ceiling_ms,
                        "expires_at_ms" => &mut e.expires_at_ms,
                        "last_issued_ms" => &mut e.last_issued_ms,
                        "retry_in_ms" => &mut e.retry_in_ms,
                        "local_ms" => &mut e.local_ms,
                        "store_ms" => &mut e.store_ms,
                        // A newer core's field: `message` still says it.
                        _ => continue,
                    };
                    *field = Some(v as f64);
                }
                (_, Text(_)) => {
                    let field = match name {
                        "error" => &mut e.error,
                        // `STORE_REGRESSION`'s detail is its reason.
                        "reason" | "detail" => &mut e.reason,
                        "key" => &mut e.key,
                        "store" => &mut e.store,
                        "setting" => &mut e.setting,
                        "value" => &mut e.value,
                        "expected" => &mut e.expected,
                        _ => continue,
                    };
                    *field = text();
                }
            }
        }
        e
    }
}

/// A weak, non-blocking threadsafe function taking one event.
type Callback = ThreadsafeFunction<CosidEvent, (), CosidEvent, Status, false, true>;

/// The JavaScript callbacks of one runtime.
///
/// Events that come before the first callback is added (those of the start, `STORE_UNSAFE` among them: a
/// `Runtime` starts before `onEvent` can be called on it) are kept, the first [`BACKLOG`] of them, and handed to
/// the first callback.
#[derive(Default)]
pub struct Subscribers {
    next: AtomicU64,
    list: Mutex<Vec<(u64, Callback)>>,
    /// The events before the first callback.
    backlog: Mutex<Option<Vec<CosidEvent>>>,
}

/// How many events before the first callback are kept for it.
const BACKLOG: usize = 32;

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

    fn backlog(&self) -> MutexGuard<'_, Option<Vec<CosidEvent>>> {
        self.backlog.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `callback`; returns its id for [`remove`](Self::remove).
    pub fn add(&self, callback: &Function<CosidEvent, ()>) -> napi::Result<u64> {
        let tsfn = callback
            .build_threadsafe_function::<CosidEvent>()
            .weak::<true>()
            .callee_handled::<false>()
            .build()?;
        // Under the list's lock, which `dispatch` holds too: no event falls between the backlog and the list.
        let mut list = self.lock();
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if id == 0 {
            for event in self.backlog().take().into_iter().flatten() {
                tsfn.call(event, ThreadsafeFunctionCallMode::NonBlocking);
            }
        }
        list.push((id, tsfn));
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
        if self.next.load(Ordering::Relaxed) == 0 {
            let mut backlog = self.backlog();
            let kept = backlog.get_or_insert_with(Vec::new);
            if kept.len() < BACKLOG {
                kept.push(event.clone());
            }
        }
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
