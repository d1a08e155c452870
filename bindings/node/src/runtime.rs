//! `Runtime`: a runtime under the caller's control, for a second namespace, a test, or an explicit lifetime.
//!
//! Method calls cost more than the free functions (napi-rs unwraps `this` on every call), so the process-wide
//! `nextId()` stays the fastest path; a `Runtime` is for control, not speed.

use crate::errors::{from_cosid, rejection, OrThrow, Thrown};
use crate::events::Subscribers;
use crate::values::{ids_array, IdParts, LayoutInfo, Raw, StatusInfo};
use crate::{args, global};
use cosid::{Builder, Config};
use napi::bindgen_prelude::{AsyncTask, Unknown};
use napi::{Env, Task};
use napi_derive::napi;
use std::sync::Arc;

/// A runtime with its own lease: `const rt = await Runtime.create({ namespace: 'orders' })`, then
/// `rt.nextId()`, and `await rt.close()` to release the slot.
#[napi]
#[derive(Debug)]
pub struct Runtime {
    inner: Arc<cosid::Runtime>,
    events: Arc<Subscribers>,
}

#[napi]
impl Runtime {
    /// Starts a runtime off the event loop: opens the store and acquires a slot on a worker thread. Options
    /// override the `COSID_*` environment. Rejects with the start's error (`EXHAUSTED`, `CONFIG`, ...).
    #[napi(
        ts_args_type = "options?: Options",
        ts_return_type = "Promise<Runtime>"
    )]
    pub fn create(env: Env, options: Option<Unknown>) -> Result<AsyncTask<CreateRuntime>, Thrown> {
        let config = args::settings(&env, options.as_ref())?;
        args::check(&config).or_throw()?;
        Ok(AsyncTask::new(CreateRuntime { config }))
    }

    /// The next id, as a `bigint`.
    #[napi]
    pub fn next_id(&self) -> Result<u64, Thrown> {
        self.inner
            .next_id()
            .map(|id| id.as_u64())
            .map_err(from_cosid)
    }

    /// The next id as a decimal string.
    #[napi(ts_return_type = "string")]
    pub fn next_id_string(&self, env: Env) -> Result<Raw, Thrown> {
        let id = self.inner.next_id().or_throw()?;
        crate::values::decimal_string(&env, id)
    }

    /// The next id as a `number`; only for a layout of at most 53 bits (`'js-safe'`), else throws `LAYOUT`.
    #[napi]
    pub fn next_id_number(&self) -> Result<f64, Thrown> {
        crate::id_number(&self.inner)
    }

    /// `n` ids (0 to 1048576) in one `BigUint64Array`, in increasing order.
    #[napi(ts_args_type = "n: number", ts_return_type = "BigUint64Array")]
    pub fn next_ids(&self, env: Env, n: Unknown) -> Result<Raw, Thrown> {
        let n = args::count(&env, &n)?;
        ids_array(&env, &self.inner, n)
    }

    /// The lease and state now.
    #[napi(ts_return_type = "Status")]
    pub fn status(&self) -> StatusInfo {
        StatusInfo::of(&self.inner)
    }

    /// How this runtime lays out its ids.
    #[napi]
    pub fn layout(&self) -> LayoutInfo {
        LayoutInfo::of(self.inner.layout())
    }

    /// The fields of an id of this runtime's layout.
    #[napi(ts_args_type = "id: bigint | number | string")]
    pub fn parse(&self, env: Env, id: Unknown) -> Result<IdParts, Thrown> {
        IdParts::of(self.inner.layout(), args::id(&env, "id", &id)?)
    }

    /// The friendly form `yyyyMMddHHmmssSSS-slot-sequence` of an id of this runtime's layout.
    #[napi(ts_args_type = "id: bigint | number | string")]
    pub fn to_friendly(&self, env: Env, id: Unknown) -> Result<String, Thrown> {
        let id = args::id(&env, "id", &id)?;
        self.inner.layout().to_friendly(id).or_throw()
    }

    /// The id of a friendly form of this runtime's layout.
    #[napi(ts_args_type = "text: string")]
    pub fn from_friendly(&self, env: Env, text: Unknown) -> Result<u64, Thrown> {
        let text = args::string(&env, "text", &text)?;
        Ok(self
            .inner
            .layout()
            .parse_friendly(&text)
            .or_throw()?
            .as_u64())
    }

    /// Calls `callback` with every later event of this runtime, on this thread's event loop, never blocking the
    /// runtime or keeping the process alive. Returns a function that unsubscribes.
    #[napi(
        ts_args_type = "callback: (event: CosidEvent) => void",
        ts_return_type = "() => void"
    )]
    pub fn on_event(&self, env: Env, callback: Unknown) -> Result<Raw, Thrown> {
        crate::subscribe(&env, &self.events, &callback)
    }

    /// Closes the runtime off the event loop: seals it (no id is issued once this starts), then releases its
    /// slot. Resolves to the last millisecond used, or `null` (also when already closed). Later id calls throw
    /// `CLOSED`.
    #[napi(ts_return_type = "Promise<number | null>")]
    pub fn close(&self) -> AsyncTask<CloseRuntime> {
        AsyncTask::new(CloseRuntime {
            inner: self.inner.clone(),
        })
    }

    /// `close()`, blocking.
    #[napi]
    pub fn close_sync(&self) -> Option<f64> {
        self.inner.shutdown().map(|ms| ms as f64)
    }
}

#[doc(hidden)]
#[derive(Debug)]
pub struct CreateRuntime {
    config: Config,
}

impl Task for CreateRuntime {
    type Output = Result<(Arc<cosid::Runtime>, Arc<Subscribers>), cosid::Error>;
    type JsValue = Runtime;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(Builder::with_config(self.config.clone()).build().map(|rt| {
            let rt = Arc::new(rt);
            let events = Arc::new(Subscribers::default());
            rt.subscribe(events.listener());
            global::register(&rt);
            (rt, events)
        }))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<Runtime> {
        match output {
            Ok((inner, events)) => Ok(Runtime { inner, events }),
            Err(e) => Err(rejection(&env, from_cosid(e))),
        }
    }
}

#[doc(hidden)]
#[derive(Debug)]
pub struct CloseRuntime {
    inner: Arc<cosid::Runtime>,
}

impl Task for CloseRuntime {
    type Output = Option<f64>;
    type JsValue = Option<f64>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(self.inner.shutdown().map(|ms| ms as f64))
    }

    fn resolve(&mut self, _: Env, output: Self::Output) -> napi::Result<Option<f64>> {
        Ok(output)
    }
}
