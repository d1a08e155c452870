//! Node.js bindings for cosid: lease-safe, time-ordered 64-bit ids.
//!
//! `nextId()` and its siblings are plain exported functions on a process-wide runtime (a Rust static, so every
//! `worker_threads` worker shares it and its lease), started on first use from `configure()` or the `COSID_*`
//! environment. `Runtime` gives explicit control. See `docs/node.md`.

mod args;
mod errors;
mod events;
mod fast;
mod global;
mod guard;
mod runtime;
mod values;

use crate::errors::{coded, from_host, type_error, OrThrow, Thrown};
use crate::events::{CosidEvent, Subscribers};
use crate::guard::{call, Guarded, Job};
use crate::values::{ids_array, IdParts, LayoutInfo, Raw, StatusInfo};
use cosid::host::Holder;
use cosid::{Id, Layout};
use napi::bindgen_prelude::{AsyncTask, Function, JsValue, Unknown};
use napi::{Env, ValueType};
use napi_derive::napi;
use std::sync::Arc;

#[doc(hidden)]
pub use guard::probe;
pub use runtime::Runtime;

/// The next id of the process-wide runtime, as a `bigint`. Starts the runtime (acquiring a slot, which blocks)
/// on first use: `await ready()` first to keep that off the event loop.
#[napi]
pub fn next_id() -> Result<u64, Thrown> {
    call(|| match global::holder().next_id() {
        Ok(id) => Ok(id.as_u64()),
        Err(e) => Err(from_host(e)),
    })
}

/// The next id as a decimal string: ids pass 2^53, so this is the form for JSON.
#[napi(ts_return_type = "string")]
pub fn next_id_string(env: Env) -> Result<Raw, Thrown> {
    call(|| {
        let id = global::holder().next_id().or_throw()?;
        values::decimal_string(&env, id)
    })
}

/// The next id as a `number`. Only for a layout of at most 53 bits (`layout: 'js-safe'`), whose ids are all
/// exact numbers; any other layout throws `LAYOUT`.
#[napi]
pub fn next_id_number() -> Result<f64, Thrown> {
    call(|| id_number(global::holder()))
}

/// `n` ids (0 to 1048576) in one `BigUint64Array`, in increasing order.
#[napi(ts_args_type = "n: number", ts_return_type = "BigUint64Array")]
pub fn next_ids(env: Env, n: Unknown) -> Result<Raw, Thrown> {
    call(|| {
        let n = args::count(&env, &n)?;
        ids_array(&env, global::holder(), n)
    })
}

/// `n` ids (0 to 1048576) as decimal strings, in increasing order: for `JSON.stringify`, which throws on a
/// `bigint`.
#[napi(ts_args_type = "n: number", ts_return_type = "string[]")]
pub fn next_id_strings(env: Env, n: Unknown) -> Result<Raw, Thrown> {
    call(|| {
        let n = args::count(&env, &n)?;
        values::id_strings(&env, global::holder(), n)
    })
}

/// Every error `code` cosid throws (the core's names), for `CosidError`'s `instanceof` (index.js).
#[doc(hidden)]
#[napi(js_name = "__errorCodes", skip_typescript)]
pub fn error_codes() -> Result<Vec<&'static str>, Thrown> {
    call(|| {
        Ok(cosid::host::ErrorCode::ALL
            .iter()
            .map(|c| c.name())
            .collect())
    })
}

pub(crate) fn id_number(rt: &Holder) -> Result<f64, Thrown> {
    let layout = rt.layout().or_throw()?;
    if layout.total_bits() > 53 {
        return Err(coded(
            "LAYOUT",
            format!(
                "nextIdNumber() needs a layout of at most 53 bits (layout: 'js-safe'); this layout is {} bits \
                 wide: use nextId() for a bigint or nextIdString() for a string",
                layout.total_bits()
            ),
        ));
    }
    Ok(rt.next_id().or_throw()?.as_u64() as f64)
}

/// Settings for the process-wide runtime, over the `COSID_*` environment: call it before the first id (or after
/// `shutdown()`, to start again). Throws `ALREADY_INITIALIZED` while the runtime runs, `CONFIG` for any invalid
/// setting.
#[napi(ts_args_type = "options?: Options")]
pub fn configure(env: Env, options: Option<Unknown>) -> Result<(), Thrown> {
    call(|| global::configure(args::settings(&env, options.as_ref())?))
}

/// Starts the process-wide runtime off the event loop (acquiring its slot on a worker thread). Resolves when
/// ids can be issued; rejects with the start's error (`EXHAUSTED`, `STORE_UNAVAILABLE`, `CONFIG`, ...).
#[napi(ts_return_type = "Promise<void>")]
pub fn ready() -> Result<AsyncTask<Guarded<Ready>>, Thrown> {
    call(|| Ok(AsyncTask::new(Guarded(Ready))))
}

#[doc(hidden)]
#[derive(Debug)]
pub struct Ready;

impl Job for Ready {
    type Output = ();
    type JsValue = ();

    fn compute(&mut self) -> Result<(), Thrown> {
        global::holder().runtime().map(drop).or_throw()
    }

    fn resolve(&mut self, _: &Env, (): ()) -> Result<(), Thrown> {
        Ok(())
    }
}

/// The process-wide runtime's lease and state (state `'CLOSED'` after `shutdown()`), or `null` if it has not
/// started.
#[napi]
pub fn status() -> Result<Option<StatusInfo>, Thrown> {
    call(|| {
        if !global::has_status() {
            return Ok(None);
        }
        Ok(Some(StatusInfo::of(global::holder().status().or_throw()?)))
    })
}

/// How ids are laid out: the given layout's (a name or a layout object), or else the process-wide runtime's
/// (once started) or the one it will start with.
#[napi(ts_args_type = "layout?: 'millis' | 'seconds' | 'js-safe' | LayoutSpec")]
pub fn layout(env: Env, layout: Option<Unknown>) -> Result<LayoutInfo, Thrown> {
    call(|| Ok(LayoutInfo::of(&layout_arg(&env, layout.as_ref())?)))
}

fn layout_arg(env: &Env, layout: Option<&Unknown>) -> Result<Layout, Thrown> {
    match layout {
        Some(v) if !matches!(v.get_type(), Ok(ValueType::Undefined)) => {
            args::layout(env, "layout", v)
        }
        _ => global::layout().or_throw(),
    }
}

/// Calls `callback` with every later event of the process-wide runtime (whether or not it has started yet),
/// on this thread's event loop, without ever blocking the runtime or keeping the process alive. The first
/// callback also receives the events that came before it (the first 32). Returns a function that unsubscribes.
#[napi(
    ts_args_type = "callback: (event: CosidEvent) => void",
    ts_return_type = "() => void"
)]
pub fn on_event(env: Env, callback: Unknown) -> Result<Raw, Thrown> {
    call(|| {
        global::subscribe_events()?;
        subscribe(&env, &global::EVENTS, &callback)
    })
}

pub(crate) fn subscribe(
    env: &Env,
    subs: &Arc<Subscribers>,
    callback: &Unknown,
) -> Result<Raw, Thrown> {
    if callback.get_type().or_throw()? != ValueType::Function {
        return Err(type_error(
            env,
            &format!(
                "callback must be a function, got {}",
                args::type_name(callback)
            ),
        ));
    }
    // SAFETY: the value was just checked to be a function.
    let function = unsafe { callback.cast::<Function<CosidEvent, ()>>() }.or_throw()?;
    let id = subs.add(&function).or_throw()?;
    let subs = Arc::downgrade(subs);
    let off = env
        .create_function_from_closure::<(), (), _>("unsubscribe", move |cx| {
            guard::closure(cx.env, || {
                if let Some(subs) = subs.upgrade() {
                    subs.remove(id);
                }
                Ok(())
            })
        })
        .or_throw()?;
    Ok(Raw::of(off.raw()))
}

/// Closes the process-wide runtime off the event loop: seals it (no id is issued once this starts), then
/// releases its slot. Resolves to the last millisecond used, or `null`. Later id calls throw `CLOSED` until
/// `configure()` is called again (the rule of every language).
#[napi(ts_return_type = "Promise<number | null>")]
pub fn shutdown() -> Result<AsyncTask<Guarded<Shutdown>>, Thrown> {
    call(|| Ok(AsyncTask::new(Guarded(Shutdown))))
}

#[doc(hidden)]
#[derive(Debug)]
pub struct Shutdown;

impl Job for Shutdown {
    type Output = Option<f64>;
    type JsValue = Option<f64>;

    fn compute(&mut self) -> Result<Option<f64>, Thrown> {
        global::shutdown()
    }

    fn resolve(&mut self, _: &Env, output: Option<f64>) -> Result<Option<f64>, Thrown> {
        Ok(output)
    }
}

/// `shutdown()`, blocking.
#[napi]
pub fn shutdown_sync() -> Result<Option<f64>, Thrown> {
    call(global::shutdown)
}

/// The stores this addon carries, as `status().store` names them: `['memory', 'sqlite', 'http', 'redis',
/// 'postgres']` in the released package. A store URL of any other store throws `CONFIG`, saying how to reach it
/// (through `cosid serve`, or a build with its feature).
#[napi]
pub fn stores() -> Result<Vec<&'static str>, Thrown> {
    call(|| Ok(cosid::store::built()))
}

/// Closes the process-wide runtime and every `Runtime` of this process that is still open, releasing their
/// slots. The package calls it when the main thread's process exits.
#[napi]
pub fn close_all() -> Result<(), Thrown> {
    call(|| {
        global::close_all();
        Ok(())
    })
}

/// The fields of an id: when (`timestamp`, the start of its tick), which slot and which sequence. `id` is a
/// bigint, a number or a decimal string; `layout` defaults to the process-wide runtime's.
#[napi(
    ts_args_type = "id: bigint | number | string, layout?: 'millis' | 'seconds' | 'js-safe' | LayoutSpec",
    ts_return_type = "IdParts"
)]
pub fn parse(env: Env, id: Unknown, layout: Option<Unknown>) -> Result<IdParts, Thrown> {
    call(|| {
        let id = args::id(&env, "id", &id)?;
        IdParts::of(&layout_arg(&env, layout.as_ref())?, id)
    })
}

/// The friendly form `yyyyMMddHHmmssSSS-slot-sequence` (UTC) of an id.
#[napi(
    ts_args_type = "id: bigint | number | string, layout?: 'millis' | 'seconds' | 'js-safe' | LayoutSpec"
)]
pub fn to_friendly(env: Env, id: Unknown, layout: Option<Unknown>) -> Result<String, Thrown> {
    call(|| {
        let id = args::id(&env, "id", &id)?;
        layout_arg(&env, layout.as_ref())?
            .to_friendly(id)
            .or_throw()
    })
}

/// The id of a friendly form; anything but the canonical form throws `INVALID_ID`.
#[napi(ts_args_type = "text: string, layout?: 'millis' | 'seconds' | 'js-safe' | LayoutSpec")]
pub fn from_friendly(env: Env, text: Unknown, layout: Option<Unknown>) -> Result<u64, Thrown> {
    call(|| {
        let text = args::string(&env, "text", &text)?;
        let layout = layout_arg(&env, layout.as_ref())?;
        Ok(layout.parse_friendly(&text).or_throw()?.as_u64())
    })
}

/// The base-62 form of an id: 11 characters of `0-9A-Za-z` that sort like the id.
#[napi(ts_args_type = "id: bigint | number | string")]
pub fn to_base62(env: Env, id: Unknown) -> Result<String, Thrown> {
    call(|| Ok(args::id(&env, "id", &id)?.to_base62()))
}

/// The id of a base-62 form; anything but exactly 11 base-62 digits at most `LygHa16AHYF` throws `INVALID_ID`.
#[napi(ts_args_type = "text: string")]
pub fn from_base62(env: Env, text: Unknown) -> Result<u64, Thrown> {
    call(|| {
        let text = args::string(&env, "text", &text)?;
        Ok(Id::from_base62(&text).or_throw()?.as_u64())
    })
}

/// The options of `configure()` and `Runtime.create()`. Each overrides its `COSID_*` variable.
#[napi(object, object_to_js = false, object_from_js = false)]
#[derive(Debug)]
pub struct Options {
    /// Store: `'sqlite:///path/leases.db'`, `'memory:'`, `'redis://...'`, `'postgres://...'`, `'mysql://...'`,
    /// `'etcd://host:port'`, `'zookeeper://host:port'`, `'mongodb://host:port/db'`, or a slot without a store: `'static:3?state_file=/path'`, `'static:ordinal'`,
    /// `'manual:3'` (`COSID_STORE`; default: an SQLite file in the user's state directory).
    pub store: Option<String>,
    /// Namespace name (`COSID_NAMESPACE`; default `'default'`).
    pub namespace: Option<String>,
    /// Id layout (`COSID_LAYOUT`; default `'millis'`).
    #[napi(ts_type = "'millis' | 'seconds' | 'js-safe' | LayoutSpec")]
    pub layout: Option<String>,
    /// Lease length: milliseconds, or a string like `'30s'` (`COSID_TTL`; default 30 s).
    #[napi(ts_type = "number | string")]
    pub ttl: Option<String>,
    /// How far past expiry a holder may issue (`COSID_TOLERANCE`; default 1 s).
    #[napi(ts_type = "number | string")]
    pub tolerance: Option<String>,
    /// Slot bits of the namespace (`COSID_BITS`; default 10, or the layout's slot bits if fewer).
    pub bits: Option<u32>,
    /// Owner key (`COSID_OWNER_KEY`; default `host:pid`).
    pub owner_key: Option<String>,
    /// A slot to take if it is free, or `'ordinal'` for a StatefulSet's ordinal (`COSID_PREFERRED_SLOT`).
    #[napi(ts_type = "number | 'ordinal'")]
    pub preferred_slot: Option<String>,
    /// How many slots to lease, 1 to 64 (`COSID_SLOTS`; default 1): each issues up to 4,096,000 ids/s
    /// (`'millis'`), and ids come from the next slot while one's millisecond is spent.
    pub slots: Option<u32>,
    /// How long the start retries an exhausted namespace or unreachable store (`COSID_ACQUIRE_TIMEOUT`;
    /// default: the ttl).
    #[napi(ts_type = "number | string")]
    pub acquire_timeout: Option<String>,
    /// How long an id call waits for a renewal or for the clock to pass the window's floor (`COSID_MAX_WAIT`;
    /// default 2 s).
    #[napi(ts_type = "number | string")]
    pub max_wait: Option<String>,
    /// How far back a stepped clock is waited out (`COSID_BACKWARDS_WAIT`; default 500 ms).
    #[napi(ts_type = "number | string")]
    pub backwards_wait: Option<String>,
    /// What a forked child does (`COSID_ON_FORK`; default `'reacquire'`). Node does not fork, but the setting is
    /// the same in every language.
    #[napi(ts_type = "'reacquire' | 'error'")]
    pub on_fork: Option<String>,
}

/// A custom layout: `0 | timestamp | slot | sequence`, at most 63 bits. Missing fields take the `'millis'`
/// preset's values (the `'seconds'` preset's for `tick: 'second'`).
#[napi(object, object_to_js = false, object_from_js = false)]
#[derive(Debug)]
pub struct LayoutSpec {
    /// Unix milliseconds at the start of tick 0 (default 1577203200000, 2019-12-24T16:00:00Z).
    pub epoch: Option<f64>,
    /// Tick length (default `'millisecond'`).
    #[napi(ts_type = "'millisecond' | 'second'")]
    pub tick: Option<String>,
    /// Width of the timestamp field.
    pub timestamp_bits: Option<u32>,
    /// Width of the slot field.
    pub slot_bits: Option<u32>,
    /// Width of the sequence field.
    pub sequence_bits: Option<u32>,
}
