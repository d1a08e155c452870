//! The one door every call from JavaScript goes through.
//!
//! A Rust panic that unwinds into Node is not an exception: napi-rs's `extern "C"` trampolines cannot unwind, so
//! the whole process aborts (SIGABRT) and no `try/catch` can help. Every entry point of the addon (exported
//! functions, methods, the closures it hands to JavaScript, both halves of every async task, finalizers) runs its
//! body through [`call`] (or [`Guarded`] for async work), which turns a panic into an `Error` with code `'PANIC'`
//! (a bug in cosid, reported instead of taking the host down). `test/guard.test.js` checks that every `#[napi]`
//! function of `src/` does.

use crate::errors::{coded, rejection, Thrown};
use napi::{Env, Task};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `body`; a panic becomes an `Error` with code `'PANIC'`.
#[inline(always)]
pub fn call<T>(body: impl FnOnce() -> Result<T, Thrown>) -> Result<T, Thrown> {
    // AssertUnwindSafe: what a panic can leave half-done sits behind locks that are recovered from poisoning
    // (state replaced whole) or in the core runtime, whose calls after a panic fail cleanly.
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(payload) => Err(panicked(payload)),
    }
}

#[cold]
#[inline(never)]
fn panicked(payload: Box<dyn std::any::Any + Send>) -> Thrown {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned());
    // Dropping the payload could itself panic; leak it instead.
    std::mem::forget(payload);
    coded(
        "PANIC",
        format!("caught a panic (a bug in cosid, please report it): {what}"),
    )
}

/// [`call`] for a closure handed to JavaScript (`create_function_from_closure`), whose error type cannot carry a
/// `code`: the error is thrown here, with its code, and napi-rs told to leave it pending.
pub fn closure<T>(env: &Env, body: impl FnOnce() -> Result<T, Thrown>) -> napi::Result<T> {
    call(body).map_err(|e| {
        let reason = e.reason.clone();
        // SAFETY: `env` is the environment of the JavaScript call this closure is running for.
        unsafe { napi::JsError::from(e).throw_into(env.raw()) };
        napi::Error::new(napi::Status::PendingException, reason)
    })
}

/// Async work in two halves, each run through [`call`] by [`Guarded`]: `compute` on a libuv worker thread,
/// `resolve` back on the JavaScript thread.
pub trait Job: Send + Sized {
    /// What `compute` hands to `resolve`.
    type Output: Send + 'static;
    /// What the promise resolves to.
    type JsValue: napi::bindgen_prelude::ToNapiValue + napi::bindgen_prelude::TypeName;

    /// The blocking part, off the event loop.
    fn compute(&mut self) -> Result<Self::Output, Thrown>;

    /// Back on the event loop: the promise's value.
    fn resolve(&mut self, env: &Env, output: Self::Output) -> Result<Self::JsValue, Thrown>;
}

/// A [`Job`] as a napi-rs task whose both halves are guarded; a failure of either (a panic included) rejects the
/// promise with its `Error` and `code`.
#[derive(Debug)]
pub struct Guarded<J>(pub J);

impl<J: Job> Task for Guarded<J> {
    type Output = Result<J::Output, Thrown>;
    type JsValue = J::JsValue;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(call(|| self.0.compute()))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        call(|| self.0.resolve(&env, output?)).map_err(|e| rejection(&env, e))
    }
}

/// A test-only way into each kind of entry point, for `test/guard.test.js`: no path of cosid itself panics on
/// purpose, and the one that did (an overflowing duration) is fixed, so the guard's test needs its own.
pub mod probe {
    use super::{call, Job};
    use crate::errors::Thrown;
    use crate::values::Raw;
    use napi::bindgen_prelude::{AsyncTask, JsValue};
    use napi::Env;
    use napi_derive::napi;

    /// Panics inside a guarded call: `'sync'` here, `'callback'` in the function it returns when that is
    /// called. Anything else returns `undefined`.
    #[napi(js_name = "__panicForTest", skip_typescript)]
    pub fn panic_for_test(env: Env, at: String) -> Result<Option<Raw>, Thrown> {
        call(|| match at.as_str() {
            "sync" => panic!("probe: sync"),
            "callback" => {
                let f = env
                    .create_function_from_closure::<(), (), _>("probe", |cx| {
                        super::closure(cx.env, || -> Result<(), Thrown> {
                            panic!("probe: callback")
                        })
                    })
                    .map_err(|e| crate::errors::coded("PANIC", e.reason))?;
                Ok(Some(Raw::of(f.raw())))
            }
            _ => Ok(None),
        })
    }

    /// A promise whose `'compute'` (worker thread) or `'resolve'` (event loop) half panics.
    #[napi(js_name = "__panicAsyncForTest", skip_typescript)]
    pub fn panic_async_for_test(at: String) -> Result<AsyncTask<super::Guarded<Probe>>, Thrown> {
        call(|| Ok(AsyncTask::new(super::Guarded(Probe(at)))))
    }

    #[doc(hidden)]
    #[derive(Debug)]
    pub struct Probe(String);

    impl Job for Probe {
        type Output = ();
        type JsValue = ();

        fn compute(&mut self) -> Result<(), Thrown> {
            if self.0 == "compute" {
                panic!("probe: compute");
            }
            Ok(())
        }

        fn resolve(&mut self, _: &Env, _: ()) -> Result<(), Thrown> {
            if self.0 == "resolve" {
                panic!("probe: resolve");
            }
            Ok(())
        }
    }
}
