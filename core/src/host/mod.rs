//! The host layer: what every language's binding shares, so that each keeps only its type conversions and its
//! fork hook ("policy in core, hook in the binding"). `docs/design.md` ("The host layer") is the overview.
//!
//! - [`Settings`]: one table of settings ([`SETTINGS`]: key, variable, kind, default, meaning), set by text
//!   ([`Settings::set`]) or from the environment ([`Settings::from_env`]), with slot bits that follow the layout.
//! - [`StoreValue`]: one parser for every store value, `static:`, `static:ordinal` and `manual:` included, and
//!   what a forked child may do on each ([`ForkRule`]).
//! - [`ErrorCode`]: one exhaustive list of error codes with their stable names and C numbers; [`HostError`] is
//!   a code with its message.
//! - [`Holder`]: a runtime with one lifecycle (lazy start, configure before start, shutdown, fork, re-entry);
//!   [`global`] is the process-wide one.
//! - [`set_log`]: one process-wide listener that sees every event of every runtime a [`Holder`] starts: how a
//!   binding bridges events to its language's logging (Python's `logging`, C's log callback).
//! - [`fork`]: the fork generation and the gate that keeps store I/O out of `fork()`; a binding registers
//!   [`fork::prepare`], [`fork::after_fork_in_parent`] and [`fork::after_fork_in_child`] with its fork hook.
//!
//! ```
//! use cosid::host::{Holder, Settings};
//! let mut settings = Settings::from_env()?;
//! settings.set("store", "memory:")?;
//! settings.set("layout", "js-safe")?; // slot bits follow: 5
//! let holder = Holder::new(settings);
//! let id = holder.next_id()?;
//! assert_eq!(holder.layout()?.decompose(id)?.slot, u64::from(holder.status()?.slot));
//! holder.shutdown()?;
//! assert_eq!(holder.next_id().unwrap_err().code, cosid::host::ErrorCode::Closed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod code;
pub mod fork;
pub(crate) mod gated;
mod holder;
mod settings;
mod store_value;

pub use code::{ErrorCode, HostError};
pub use holder::set_log;
pub use holder::Holder;
pub use settings::{setting, Kind, Listener, OnFork, Setting, Settings, Value, SETTINGS};
pub use store_value::{ForkRule, StoreValue};

/// The process-wide runtime of this copy of the library: started from the `COSID_*` environment on first use,
/// unless configured first.
pub fn global() -> &'static Holder {
    static GLOBAL: Holder = Holder::from_env();
    &GLOBAL
}
