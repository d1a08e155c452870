//! `nextId()`, `rt.nextId()` and a js-safe runtime's `rt.nextIdNumber()` without napi-rs's wrappers: plain
//! functions made with the raw API.
//!
//! napi-rs's function wrapper costs about 20 ns of the process-wide `nextId()` (its zero-argument path still
//! sets up a call frame of its own), and its method wrapper about 200 ns (it unwraps `this`, checks its type tag
//! and registers a borrow of it on every call). These functions read their holder from the function's data
//! (NULL: the process-wide one), take the holder's fast path and make one `bigint`; anything else (start, wait,
//! error) is the holder's full `next_id`, whose error is thrown with its `code`. No panic leaves them.
//!
//! The `#[napi]` items of the same names stay, for the type declarations and as the documented signature; the
//! module's export hook and `Runtime.create` put these in their place. (A runtime whose layout is wider than 53
//! bits keeps napi-rs's `nextIdNumber`, which throws `LAYOUT`; the process-wide `nextIdNumber()` keeps it too,
//! since `configure()` can change the layout.)

use crate::errors::{coded, from_host, Thrown};
use crate::global;
use crate::guard::call;
use cosid::host::Holder;
use napi::bindgen_prelude::Object;
use napi::{sys, Env, JsValue};
use napi_derive::napi;
use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

/// What a function returns: the id as a `bigint` (`nextId`), or as a `number` (`nextIdNumber`).
#[derive(Clone, Copy)]
enum Form {
    Bigint,
    Number,
}

impl Form {
    fn name(self) -> &'static std::ffi::CStr {
        match self {
            Form::Bigint => c"nextId",
            Form::Number => c"nextIdNumber",
        }
    }
}

/// Replaces the exported `nextId` with the raw function on the process-wide holder.
#[napi(module_exports)]
#[cfg_attr(test, allow(dead_code))] // napi-rs registers it; a test build of the crate has no module
pub fn fast_exports(exports: Object, env: Env) -> napi::Result<()> {
    call(|| define(&env, exports.raw(), ptr::null_mut(), Form::Bigint))
        .map_err(|e| napi::Error::new(napi::Status::GenericFailure, e.reason))
}

/// Defines `nextId` (and, for a layout of at most 53 bits, `nextIdNumber`) on a runtime's `object` as own,
/// non-enumerable properties, each holding a strong reference to `holder` that its finalizer releases (so
/// `const f = rt.nextId` keeps working after `rt` is gone).
pub fn own_functions(
    env: &Env,
    object: sys::napi_value,
    holder: &Arc<Holder>,
    layout: &cosid::Layout,
) -> Result<(), Thrown> {
    let data = || Arc::into_raw(holder.clone()).cast_mut().cast::<c_void>();
    define(env, object, data(), Form::Bigint)?;
    if layout.total_bits() <= 53 {
        define(env, object, data(), Form::Number)?;
    }
    Ok(())
}

/// Makes the function (`data`: NULL, or a leaked `Arc<Holder>` that this takes over) and defines it on
/// `object` under its form's name.
fn define(env: &Env, object: sys::napi_value, data: *mut c_void, form: Form) -> Result<(), Thrown> {
    let name = form.name();
    let callback: unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value =
        match form {
            Form::Bigint => next_id::<true>,
            Form::Number => next_id::<false>,
        };
    let mut function = ptr::null_mut();
    // SAFETY: `env` is the live environment of this call; `data` is NULL or a leaked `Arc<Holder>` that only the
    // finalizer added next releases, and `next_id` reads it only while the function exists.
    let made = unsafe {
        sys::napi_create_function(
            env.raw(),
            name.as_ptr(),
            name.count_bytes() as isize,
            Some(callback),
            data,
            &mut function,
        )
    };
    if made != sys::Status::napi_ok {
        if !data.is_null() {
            // SAFETY: no function holds `data`: release it here.
            drop(unsafe { Arc::from_raw(data.cast::<Holder>()) });
        }
        return Err(coded(
            "PANIC",
            format!("could not create the {name:?} function"),
        ));
    }
    if !data.is_null() {
        // SAFETY: as above; the finalizer runs once, when the function is collected. If it cannot be attached
        // the function keeps its holder reference for the process's life (a leak, never a dangling pointer).
        let finalized = unsafe {
            sys::napi_add_finalizer(
                env.raw(),
                function,
                data,
                Some(release_holder),
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        if finalized != sys::Status::napi_ok {
            return Err(coded(
                "PANIC",
                format!("could not attach the {name:?} function's finalizer"),
            ));
        }
    }
    let property = sys::napi_property_descriptor {
        utf8name: name.as_ptr(),
        name: ptr::null_mut(),
        method: None,
        getter: None,
        setter: None,
        value: function,
        attributes: sys::PropertyAttributes::writable
            | sys::PropertyAttributes::configurable
            | if data.is_null() {
                sys::PropertyAttributes::enumerable
            } else {
                sys::PropertyAttributes::default
            },
        data: ptr::null_mut(),
    };
    // SAFETY: `object` is a live object of this call, `property` is fully initialized.
    let defined = unsafe { sys::napi_define_properties(env.raw(), object, 1, &property) };
    if defined != sys::Status::napi_ok {
        return Err(coded("PANIC", format!("could not define {name:?}")));
    }
    Ok(())
}

/// `nextId()` (`BIGINT`) or `nextIdNumber()`: the holder's fast path and one value, else the full call.
unsafe extern "C" fn next_id<const BIGINT: bool>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let mut data = ptr::null_mut();
    // SAFETY: `info` is this call's; the arguments are not read (a NULL count and vector are allowed).
    let status = unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
            &mut data,
        )
    };
    let id = if status == sys::Status::napi_ok {
        call(|| {
            let holder = if data.is_null() {
                global::holder()
            } else {
                // SAFETY: `data` is the `Arc<Holder>` `own_functions` leaked for this function, alive until its
                // finalizer runs, which is after the function's last call.
                unsafe { &*data.cast::<Holder>() }
            };
            match holder.try_next_id() {
                Some(id) => Ok(id.as_u64()),
                None => holder.next_id().map(|id| id.as_u64()).map_err(from_host),
            }
        })
    } else {
        Err(coded("PANIC", "napi_get_cb_info failed in nextId"))
    };
    let mut out = ptr::null_mut();
    // SAFETY (both): `env` is this call's environment.
    let made = |id: u64, out: &mut sys::napi_value| unsafe {
        if BIGINT {
            sys::napi_create_bigint_uint64(env, id, out)
        } else {
            // Exact: only a runtime of at most 53 bits gets this function.
            sys::napi_create_double(env, id as f64, out)
        }
    };
    match id {
        Ok(id) if made(id, &mut out) == sys::Status::napi_ok => out,
        // A failed value leaves an exception pending.
        Ok(_) => ptr::null_mut(),
        Err(e) => {
            // SAFETY: `env` is this call's environment; the exception stays pending when we return.
            unsafe { napi::JsError::from(e).throw_into(env) };
            ptr::null_mut()
        }
    }
}

/// The finalizer of a runtime's `nextId`: releases its holder reference (the last one shuts the runtime down, as
/// the runtime's own finalizer would).
unsafe extern "C" fn release_holder(_: sys::napi_env, data: *mut c_void, _: *mut c_void) {
    let _ = call(|| {
        // SAFETY: `data` is the reference `own_functions` leaked; the finalizer runs once.
        drop(unsafe { Arc::from_raw(data.cast::<Holder>()) });
        Ok(())
    });
}
