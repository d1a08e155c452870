//! Lease-safe Snowflake ids: unique, time-ordered 64-bit ids for many processes, with no coordination on the hot
//! path.
//!
//! Each [`Runtime`] leases an exclusive time window on a slot from a [store](store::LeaseStore), renews it in the
//! background, and checks every id against the window before returning it. Uniqueness follows from the windows
//! alone; clocks only decide availability. See `docs/design.md` for the invariants.
//!
//! ```
//! let rt = cosid::Runtime::builder().store("memory:").build()?;
//! let id = rt.next_id()?;
//! println!("{id} = {}", rt.layout().to_friendly(id)?);
//! # Ok::<(), cosid::Error>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod clock;
pub mod config;
#[cfg(feature = "conformance")]
pub mod conformance;
mod error;
mod event;
mod file_identity;
pub mod generator;
pub mod host;
pub mod id;
pub mod keeper;
pub mod lease;
pub mod migrate;
mod runtime;
pub mod static_slot;
pub mod store;

pub use config::Config;
pub use error::{ConfigError, Error};
pub use event::{Event, Field as EventField, Level as EventLevel};
pub use id::{Id, IdError, Layout, LayoutError, Parts, Tick};
pub use keeper::{State, Status};
pub use runtime::{Builder, Runtime};
