//! `Runtime`: a runtime under the caller's control, for a second namespace, a test, or an explicit lifetime.
//!
//! A method call through napi-rs unwraps `this`, checks its type tag and registers a borrow of it on every call
//! (about 200 ns), so `nextId` is also an own property of each runtime, made with the raw API (`crate::fast`).
//! The other methods keep napi-rs's path.

use crate::errors::{coded, from_host, OrThrow, Thrown};
use crate::events::Subscribers;
use crate::guard::{call, Guarded, Job};
use crate::values::{ids_array, IdParts, LayoutInfo, Raw, StatusInfo};
use crate::{args, global};
use cosid::host::{Holder, Settings};
use napi::bindgen_prelude::ObjectFinalize;
use napi::bindgen_prelude::{AsyncTask, JavaScriptClassExt, Unknown};
use napi::Env;
use napi_derive::napi;
use std::sync::Arc;

/// A runtime with its own lease: `const rt = await Runtime.create({ namespace: 'orders' })`, then
/// `rt.nextId()`, and `await rt.close()` to release the slot.
#[napi(custom_finalize)]
#[derive(Debug)]
pub struct Runtime {
    inner: Arc<Holder>,
    layout: cosid::Layout,
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
    pub fn create(
        env: Env,
        options: Option<Unknown>,
    ) -> Result<AsyncTask<Guarded<CreateRuntime>>, Thrown> {
        call(|| {
            let settings = args::settings(&env, options.as_ref())?;
            Ok(AsyncTask::new(Guarded(CreateRuntime { settings })))
        })
    }

    /// The next id, as a `bigint`.
    #[napi]
    pub fn next_id(&self) -> Result<u64, Thrown> {
        call(|| {
            self.inner
                .next_id()
                .map(|id| id.as_u64())
                .map_err(from_host)
        })
    }

    /// The next id as a decimal string.
    #[napi(ts_return_type = "string")]
    pub fn next_id_string(&self, env: Env) -> Result<Raw, Thrown> {
        call(|| {
            let id = self.inner.next_id().or_throw()?;
            crate::values::decimal_string(&env, id)
        })
    }

    /// `n` ids (0 to 1048576) as decimal strings, in increasing order: for `JSON.stringify`, which throws on a
    /// `bigint`.
    #[napi(ts_args_type = "n: number", ts_return_type = "string[]")]
    pub fn next_id_strings(&self, env: Env, n: Unknown) -> Result<Raw, Thrown> {
        call(|| {
            let n = args::count(&env, &n)?;
            crate::values::id_strings(&env, &self.inner, n)
        })
    }

    /// The next id as a `number`; only for a layout of at most 53 bits (`'js-safe'`), else throws `LAYOUT`.
    #[napi]
    pub fn next_id_number(&self) -> Result<f64, Thrown> {
        call(|| crate::id_number(&self.inner))
    }

    /// `n` ids (0 to 1048576) in one `BigUint64Array`, in increasing order.
    #[napi(ts_args_type = "n: number", ts_return_type = "BigUint64Array")]
    pub fn next_ids(&self, env: Env, n: Unknown) -> Result<Raw, Thrown> {
        call(|| {
            let n = args::count(&env, &n)?;
            ids_array(&env, &self.inner, n)
        })
    }

    /// The lease and state now.
    #[napi(ts_return_type = "Status")]
    pub fn status(&self) -> Result<StatusInfo, Thrown> {
        call(|| Ok(StatusInfo::of(self.inner.status().or_throw()?)))
    }

    /// How this runtime lays out its ids.
    #[napi]
    pub fn layout(&self) -> Result<LayoutInfo, Thrown> {
        call(|| Ok(LayoutInfo::of(&self.layout)))
    }

    /// The fields of an id of this runtime's layout.
    #[napi(ts_args_type = "id: bigint | number | string")]
    pub fn parse(&self, env: Env, id: Unknown) -> Result<IdParts, Thrown> {
        call(|| IdParts::of(&self.layout, args::id(&env, "id", &id)?))
    }

    /// The friendly form `yyyyMMddHHmmssSSS-slot-sequence` of an id of this runtime's layout.
    #[napi(ts_args_type = "id: bigint | number | string")]
    pub fn to_friendly(&self, env: Env, id: Unknown) -> Result<String, Thrown> {
        call(|| {
            let id = args::id(&env, "id", &id)?;
            self.layout.to_friendly(id).or_throw()
        })
    }

    /// The id of a friendly form of this runtime's layout.
    #[napi(ts_args_type = "text: string")]
    pub fn from_friendly(&self, env: Env, text: Unknown) -> Result<u64, Thrown> {
        call(|| {
            let text = args::string(&env, "text", &text)?;
            Ok(self.layout.parse_friendly(&text).or_throw()?.as_u64())
        })
    }

    /// Calls `callback` with every later event of this runtime, on this thread's event loop, never blocking the
    /// runtime or keeping the process alive. The first callback also receives the events of the start
    /// (`ACQUIRED`, a `STORE_UNSAFE` warning), which come before it can be added. Returns a function that
    /// unsubscribes.
    #[napi(
        ts_args_type = "callback: (event: CosidEvent) => void",
        ts_return_type = "() => void"
    )]
    pub fn on_event(&self, env: Env, callback: Unknown) -> Result<Raw, Thrown> {
        call(|| crate::subscribe(&env, &self.events, &callback))
    }

    /// Closes the runtime off the event loop: seals it (no id is issued once this starts), then releases its
    /// slot. Resolves to the last millisecond used, or `null` (also when already closed). Later id calls throw
    /// `CLOSED`.
    #[napi(ts_return_type = "Promise<number | null>")]
    pub fn close(&self) -> Result<AsyncTask<Guarded<CloseRuntime>>, Thrown> {
        call(|| {
            Ok(AsyncTask::new(Guarded(CloseRuntime {
                inner: self.inner.clone(),
            })))
        })
    }

    /// `close()`, blocking.
    #[napi]
    pub fn close_sync(&self) -> Result<Option<f64>, Thrown> {
        call(|| Ok(self.inner.shutdown().or_throw()?.map(|ms| ms as f64)))
    }
}

impl ObjectFinalize for Runtime {
    /// Dropped by the garbage collector: the last reference to a runtime nobody closed shuts it down here, and
    /// that too must not unwind into Node.
    fn finalize(self, _: Env) -> napi::Result<()> {
        call(|| {
            drop(self);
            Ok(())
        })
        .map_err(|e| napi::Error::new(napi::Status::GenericFailure, e.reason))
    }
}

#[doc(hidden)]
#[derive(Debug)]
pub struct CreateRuntime {
    settings: Settings,
}

impl Job for CreateRuntime {
    type Output = (Arc<Holder>, cosid::Layout, Arc<Subscribers>);
    type JsValue = Raw;

    fn compute(&mut self) -> Result<Self::Output, Thrown> {
        let holder = Arc::new(Holder::new(self.settings.clone()));
        let events = Arc::new(Subscribers::default());
        holder.subscribe(Arc::new(events.listener())).or_throw()?;
        // Started here, off the event loop: a full namespace or an unreachable store rejects the promise.
        let layout = *holder.runtime().or_throw()?.layout();
        global::register(&holder);
        Ok((holder, layout, events))
    }

    fn resolve(&mut self, env: &Env, (inner, layout, events): Self::Output) -> Result<Raw, Thrown> {
        let holder = inner.clone();
        let instance = Runtime {
            inner,
            layout,
            events,
        }
        .into_instance(env)
        .map_err(|e| coded("PANIC", e.reason))?;
        crate::fast::own_functions(env, instance.value, &holder, &layout)?;
        Ok(Raw::of(instance.value))
    }
}

#[doc(hidden)]
#[derive(Debug)]
pub struct CloseRuntime {
    inner: Arc<Holder>,
}

impl Job for CloseRuntime {
    type Output = Option<f64>;
    type JsValue = Option<f64>;

    fn compute(&mut self) -> Result<Option<f64>, Thrown> {
        Ok(self.inner.shutdown().or_throw()?.map(|ms| ms as f64))
    }

    fn resolve(&mut self, _: &Env, output: Option<f64>) -> Result<Option<f64>, Thrown> {
        Ok(output)
    }
}
