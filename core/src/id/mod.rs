//! Ids and their layouts: the pure part of cosid, with no clock, store or I/O.
//!
//! An id is `0 | timestamp | slot | sequence` in 64 bits; a [`Layout`] says how wide each field is, where time
//! starts and how long a tick is. [`Layout::compose`] and [`Layout::decompose`] convert between an [`Id`] and
//! its [`Parts`]; [`Id`] has a canonical decimal and a base-62 text form, and [`Layout::to_friendly`] /
//! [`Layout::parse_friendly`] a readable `yyyyMMddHHmmssSSS-slot-sequence` form.
//!
//! ```
//! use cosid::{Id, Layout};
//! let layout = Layout::default();
//! let id = layout.compose(42, 1, 0)?;
//! let parts = layout.decompose(id)?;
//! assert_eq!((parts.tick, parts.slot, parts.sequence), (42, 1, 0));
//! assert_eq!(Id::from_base62(&id.to_base62())?, id);
//! assert_eq!(layout.parse_friendly(&layout.to_friendly(id)?)?, id);
//! # Ok::<(), cosid::IdError>(())
//! ```

mod error;
mod friendly;
mod layout;
mod text;

pub use error::{IdError, LayoutError};
pub use layout::{Layout, Parts, Tick};
pub use text::Id;
