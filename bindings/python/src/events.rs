//! Runtime events to Python callbacks.
//!
//! Listeners run on the runtime's keeper thread (and, for the first `ACQUIRED`, on the thread that starts the
//! runtime). Each delivery attaches to the interpreter, turns the event into `(name, fields)` and hands it to
//! `cosid._events`, which calls the callbacks and logs (never propagates) what they raise. Events of level INFO and
//! above of every runtime also go to the `"cosid"` logger of the `logging` module at their level (the core's
//! table).
//!
//! Taking the GIL from a thread of cosid is what a fork by C code (uWSGI's prefork, a C extension) cannot survive:
//! a child forked while that thread holds the GIL inherits it held by a thread that does not exist there, and hangs
//! in `take_gil` for ever (no `PyOS_AfterFork_Child` runs to reset it). So a delivery takes the GIL only when
//! something will use the event (the process-wide callbacks are called only while `cosid.on_event` has some), and
//! every delivery passes a gate that the fork's `pthread_atfork` prepare handler ([`prepare_fork`]) closes: it
//! waits for the deliveries in flight when the forking thread does not hold the GIL itself.

use cosid::{Event, EventField};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

static EVENTS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// Whether `cosid.on_event` has callbacks: without, the process-wide subscription never takes the GIL.
static PROCESS_CALLBACKS: AtomicBool = AtomicBool::new(false);

/// The delivery gate: [`CLOSED`] while a fork is being prepared, plus the deliveries in flight (attaching to the
/// interpreter, running Python, or detaching).
static GATE: AtomicU64 = AtomicU64::new(0);
const CLOSED: u64 = 1 << 63;

/// How long [`prepare_fork`] waits for a delivery in flight (a callback that runs longer is left running, and a
/// child forked meanwhile may find the GIL held).
pub(crate) const DELIVERY_WAIT: Duration = Duration::from_secs(10);

thread_local! {
    /// Deliveries this thread is inside (a callback that forks must not wait for itself).
    static INSIDE: Cell<u64> = const { Cell::new(0) };
}

extern "C" {
    // Not in the limited API, but exported by every CPython since 3.4 (the package is CPython-only).
    fn PyGILState_Check() -> std::os::raw::c_int;
}

/// `cosid._events` says whether the process-wide callbacks list is empty, at each change.
#[pyfunction]
pub(crate) fn _process_callbacks(any: bool) {
    PROCESS_CALLBACKS.store(any, Ordering::Release);
}

/// Whether a process-wide delivery has anyone to reach.
pub(crate) fn process_callbacks() -> bool {
    PROCESS_CALLBACKS.load(Ordering::Acquire)
}

/// The `pthread_atfork` prepare handler's part: closes the gate to new deliveries and, unless the forking thread
/// holds the GIL (then no other thread does, and those in flight wait for it: they are not copied into the child),
/// waits for the deliveries in flight, up to [`DELIVERY_WAIT`]. Always followed by [`after_fork`].
pub(crate) fn prepare_fork() {
    GATE.fetch_or(CLOSED, Ordering::SeqCst);
    // SAFETY: reads the calling thread's state; callable without the GIL, from any thread, at any time.
    if unsafe { PyGILState_Check() } == 1 {
        return;
    }
    let mine = INSIDE.with(Cell::get);
    let started = Instant::now();
    while (GATE.load(Ordering::SeqCst) & !CLOSED) > mine && started.elapsed() < DELIVERY_WAIT {
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// After the fork, in the parent (reopens the gate) or the child (no delivery is in flight there: their threads
/// were not copied). Async-signal-safe: atomic stores.
pub(crate) fn after_fork(in_child: bool) {
    if in_child {
        GATE.store(0, Ordering::SeqCst);
        INSIDE.with(|i| i.set(0));
    } else {
        GATE.fetch_and(!CLOSED, Ordering::SeqCst);
    }
}

/// A delivery in flight: counted in the gate until dropped.
struct Pass;

impl Pass {
    fn enter() -> Pass {
        loop {
            let g = GATE.load(Ordering::SeqCst);
            if g & CLOSED == 0 {
                if GATE
                    .compare_exchange_weak(g, g + 1, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    break;
                }
                continue;
            }
            // A callback's own event, delivered from inside a delivery of this thread: the fork waits not for it.
            if INSIDE.with(Cell::get) > 0 {
                GATE.fetch_add(1, Ordering::SeqCst);
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        INSIDE.with(|i| i.set(i.get() + 1));
        Pass
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        GATE.fetch_sub(1, Ordering::SeqCst);
        INSIDE.with(|i| i.set(i.get().saturating_sub(1)));
    }
}

fn fields<'py>(py: Python<'py>, event: &Event) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, value) in event.fields() {
        match value {
            EventField::U64(v) => d.set_item(name, v)?,
            EventField::Text(t) => d.set_item(name, t)?,
        }
    }
    if let Event::Released {
        last_issued_ms: None,
        ..
    } = event
    {
        d.set_item("last_issued_ms", py.None())?;
    }
    Ok(d)
}

/// Where an event goes: the `"cosid"` logger, the process-wide callbacks, or one callback of an explicit
/// runtime.
pub(crate) enum Target<'a> {
    Log,
    Process,
    Callback(&'a Py<PyAny>),
}

/// Delivers `event`. Never raises and never panics into the keeper: errors end in `sys.unraisablehook`.
pub(crate) fn deliver(target: Target<'_>, event: &Event) {
    if matches!(target, Target::Process) && !process_callbacks() {
        return;
    }
    let _pass = Pass::enter();
    Python::attach(|py| {
        let run = || -> PyResult<()> {
            let module = EVENTS_MODULE
                .get_or_try_init(py, || py.import("cosid._events").map(Bound::unbind))?
                .bind(py);
            let fields = fields(py, event)?;
            match target {
                Target::Log => {
                    let level = event.level().name();
                    module.call_method1("_log", (level, event.name(), event.message(), fields))?;
                }
                Target::Process => {
                    module.call_method1("_deliver_process", (event.name(), fields))?;
                }
                Target::Callback(cb) => {
                    module.call_method1("_deliver", (cb.bind(py), event.name(), fields))?;
                }
            }
            Ok(())
        };
        if let Err(e) = run() {
            e.write_unraisable(py, None);
        }
    });
}
