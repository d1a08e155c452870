//! What the keeper tells its subscribers. Delivered on the keeper's thread, in order.

/// Something the runtime's keeper did or saw.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A lease was granted.
    Acquired {
        /// The slot.
        slot: u32,
        /// Its fence.
        fence: u64,
        /// Window floor (excluded, store ms).
        floor_ms: u64,
        /// Window ceiling (included, store ms).
        ceiling_ms: u64,
        /// Expiry (store ms).
        expires_at_ms: u64,
    },
    /// A lease was renewed.
    Renewed {
        /// The slot.
        slot: u32,
        /// The new ceiling.
        ceiling_ms: u64,
        /// The new expiry.
        expires_at_ms: u64,
    },
    /// A renewal failed and will be retried; ids are still issued up to the ceiling.
    RenewFailed {
        /// The slot.
        slot: u32,
        /// What went wrong.
        error: String,
        /// When the next try is.
        retry_in_ms: u64,
    },
    /// The lease was found gone: every id call fails with `SlotLost` until a new slot is acquired.
    SlotLost {
        /// The lost slot.
        slot: u32,
        /// Why.
        reason: String,
    },
    /// The lease was given back at shutdown.
    Released {
        /// The slot.
        slot: u32,
        /// The last millisecond used, handed to the next holder.
        last_issued_ms: Option<u64>,
    },
    /// Another live instance has the same owner key (a copied configuration, or a restarted process whose old
    /// lease has not expired yet). This instance took another slot.
    DuplicateOwnerKey {
        /// The shared key.
        key: String,
        /// The other instance's slot.
        other_slot: u32,
    },
    /// The store's clock and this host's differ by more than half the tolerance.
    ClockSkew {
        /// This host's clock (ms).
        local_ms: u64,
        /// The store's clock (ms).
        store_ms: u64,
    },
    /// The store's record of a slot went backwards (fence or `next_floor` lower than seen, or the namespace record
    /// gone): the store lost writes. The runtime stops issuing at once, gives the damaged lease back, raises the
    /// namespace's `not_before` past every window that could have been granted before the loss, then acquires a
    /// slot again (whose floor is above that bound); ids flow again once it has one.
    StoreRegression {
        /// The slot.
        slot: u32,
        /// What went backwards.
        detail: String,
    },
    /// The store's server runs with a setting that lets it lose or roll back a committed write (Redis
    /// `appendfsync everysec`, PostgreSQL `synchronous_commit = off`, ...): the safety claim no longer holds, and
    /// a crash of the server can hand a slot out twice. Emitted once per setting when the runtime starts.
    StoreUnsafe {
        /// The store kind (`"redis"`, `"postgres"`, `"mysql"`).
        store: String,
        /// The setting, as the server names it.
        setting: String,
        /// Its value on the server.
        value: String,
        /// The value the safety claim needs.
        expected: String,
    },
}

/// How much an event matters: what the runtime logs it at, and what each binding bridges it to (Python's
/// `logging`, Node's `level` field, C's log callback). One table, [`Event::level`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Routine (a renewal).
    Debug,
    /// A step of the lease's life (acquired, released, another instance with this owner key).
    Info,
    /// Ids still flow, but something needs a person: a failing store, a drifting clock, an unsafe store setting.
    Warn,
    /// Ids are refused until the runtime has a safe slot again.
    Error,
}

impl Level {
    /// `"DEBUG"`, `"INFO"`, `"WARN"`, `"ERROR"`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        }
    }
}

/// The value of one of an event's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field<'a> {
    /// A number (slot, milliseconds, fence).
    U64(u64),
    /// A text (an error, a setting's name).
    Text(&'a str),
}

impl std::fmt::Display for Field<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Field::U64(v) => write!(f, "{v}"),
            Field::Text(t) => f.write_str(t),
        }
    }
}

impl Event {
    /// How much the event matters, the one place that says so. Errors: ids are refused. Warnings: ids still
    /// flow but something needs a person.
    pub fn level(&self) -> Level {
        match self {
            Event::SlotLost { .. } | Event::StoreRegression { .. } => Level::Error,
            Event::RenewFailed { .. } | Event::ClockSkew { .. } | Event::StoreUnsafe { .. } => {
                Level::Warn
            }
            Event::Acquired { .. } | Event::Released { .. } | Event::DuplicateOwnerKey { .. } => {
                Level::Info
            }
            Event::Renewed { .. } => Level::Debug,
        }
    }

    /// The event's fields by name, the same names in every binding (`slot`, `error`, `setting`, ...); a field
    /// without a value (`last_issued_ms` of a runtime that issued nothing) is left out.
    pub fn fields(&self) -> Vec<(&'static str, Field<'_>)> {
        use Field::{Text, U64};
        match self {
            Event::Acquired {
                slot,
                fence,
                floor_ms,
                ceiling_ms,
                expires_at_ms,
            } => vec![
                ("slot", U64((*slot).into())),
                ("fence", U64(*fence)),
                ("floor_ms", U64(*floor_ms)),
                ("ceiling_ms", U64(*ceiling_ms)),
                ("expires_at_ms", U64(*expires_at_ms)),
            ],
            Event::Renewed {
                slot,
                ceiling_ms,
                expires_at_ms,
            } => vec![
                ("slot", U64((*slot).into())),
                ("ceiling_ms", U64(*ceiling_ms)),
                ("expires_at_ms", U64(*expires_at_ms)),
            ],
            Event::RenewFailed {
                slot,
                error,
                retry_in_ms,
            } => vec![
                ("slot", U64((*slot).into())),
                ("error", Text(error)),
                ("retry_in_ms", U64(*retry_in_ms)),
            ],
            Event::SlotLost { slot, reason } => {
                vec![("slot", U64((*slot).into())), ("reason", Text(reason))]
            }
            Event::Released {
                slot,
                last_issued_ms,
            } => {
                let mut f = vec![("slot", U64((*slot).into()))];
                if let Some(last) = last_issued_ms {
                    f.push(("last_issued_ms", U64(*last)));
                }
                f
            }
            Event::DuplicateOwnerKey { key, other_slot } => vec![
                ("key", Text(key)),
                ("other_slot", U64((*other_slot).into())),
            ],
            Event::ClockSkew { local_ms, store_ms } => {
                vec![("local_ms", U64(*local_ms)), ("store_ms", U64(*store_ms))]
            }
            Event::StoreRegression { slot, detail } => {
                vec![("slot", U64((*slot).into())), ("detail", Text(detail))]
            }
            Event::StoreUnsafe {
                store,
                setting,
                value,
                expected,
            } => vec![
                ("store", Text(store)),
                ("setting", Text(setting)),
                ("value", Text(value)),
                ("expected", Text(expected)),
            ],
        }
    }

    /// A one-line description for a person, the same in every binding's log.
    pub fn message(&self) -> String {
        match self {
            Event::Acquired { slot, .. } => format!("cosid: acquired slot {slot}"),
            Event::Renewed { slot, .. } => format!("cosid: renewed slot {slot}"),
            Event::RenewFailed { slot, error, retry_in_ms } => format!(
                "cosid: could not renew slot {slot} (retry in {retry_in_ms} ms); ids are still issued up to its \
                 ceiling: {error}"
            ),
            Event::SlotLost { slot, reason } => {
                format!("cosid: lost slot {slot}; no ids until a new slot is acquired: {reason}")
            }
            Event::Released { slot, .. } => format!("cosid: released slot {slot}"),
            Event::DuplicateOwnerKey { key, other_slot } => format!(
                "cosid: another live instance (slot {other_slot}) has owner key {key:?}; took another slot"
            ),
            Event::ClockSkew { local_ms, store_ms } => format!(
                "cosid: this host's clock ({local_ms}) and the store's ({store_ms}) differ by more than half the \
                 tolerance"
            ),
            Event::StoreRegression { slot, detail } => format!(
                "cosid: the store lost writes on slot {slot} ({detail}); not issuing until the namespace is safe \
                 again and a new slot is acquired"
            ),
            Event::StoreUnsafe {
                store,
                setting,
                value,
                expected,
            } => format!(
                "cosid: the {store} server has {setting} = {value}; the lease safety claim needs {setting} = \
                 {expected} (see docs/stores.md)"
            ),
        }
    }

    /// Logs the event through `tracing` at its [`level`](Self::level), with its name and fields as structured
    /// fields (`event`, `slot`, `error`, ...) and its [`message`](Self::message).
    pub fn log(&self) {
        macro_rules! at_level {
            ($($fields:tt)*) => {{
                let message = self.message();
                match self.level() {
                    Level::Error => tracing::error!(event = self.name(), $($fields)* "{message}"),
                    Level::Warn => tracing::warn!(event = self.name(), $($fields)* "{message}"),
                    Level::Info => tracing::info!(event = self.name(), $($fields)* "{message}"),
                    Level::Debug => tracing::debug!(event = self.name(), $($fields)* "{message}"),
                }
            }};
        }
        match self {
            Event::Acquired {
                slot,
                fence,
                floor_ms,
                ceiling_ms,
                expires_at_ms,
            } => at_level!(slot, fence, floor_ms, ceiling_ms, expires_at_ms,),
            Event::Renewed {
                slot,
                ceiling_ms,
                expires_at_ms,
            } => at_level!(slot, ceiling_ms, expires_at_ms,),
            Event::RenewFailed {
                slot,
                error,
                retry_in_ms,
            } => at_level!(slot, %error, retry_in_ms,),
            Event::SlotLost { slot, reason } => at_level!(slot, %reason,),
            Event::Released {
                slot,
                last_issued_ms,
            } => at_level!(slot, last_issued_ms = ?last_issued_ms,),
            Event::DuplicateOwnerKey { key, other_slot } => at_level!(%key, other_slot,),
            Event::ClockSkew { local_ms, store_ms } => at_level!(local_ms, store_ms,),
            Event::StoreRegression { slot, detail } => at_level!(slot, %detail,),
            Event::StoreUnsafe {
                store,
                setting,
                value,
                expected,
            } => at_level!(%store, %setting, %value, %expected,),
        }
    }

    /// A stable, upper-case name, the same in every binding (`"SLOT_LOST"`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Event::Acquired { .. } => "ACQUIRED",
            Event::Renewed { .. } => "RENEWED",
            Event::RenewFailed { .. } => "RENEW_FAILED",
            Event::SlotLost { .. } => "SLOT_LOST",
            Event::Released { .. } => "RELEASED",
            Event::DuplicateOwnerKey { .. } => "DUPLICATE_OWNER_KEY",
            Event::ClockSkew { .. } => "CLOCK_SKEW",
            Event::StoreRegression { .. } => "STORE_REGRESSION",
            Event::StoreUnsafe { .. } => "STORE_UNSAFE",
        }
    }
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {self:?}", self.name())
    }
}

impl From<crate::store::Finding> for Event {
    fn from(f: crate::store::Finding) -> Self {
        Event::StoreUnsafe {
            store: f.store.to_string(),
            setting: f.setting,
            value: f.value,
            expected: f.expected,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_that_stop_ids_are_errors_and_those_that_need_a_person_warnings() {
        let cases = [
            (
                Event::SlotLost {
                    slot: 1,
                    reason: "gone".into(),
                },
                Level::Error,
            ),
            (
                Event::StoreRegression {
                    slot: 1,
                    detail: "fence".into(),
                },
                Level::Error,
            ),
            (
                Event::RenewFailed {
                    slot: 1,
                    error: "down".into(),
                    retry_in_ms: 5,
                },
                Level::Warn,
            ),
            (
                Event::ClockSkew {
                    local_ms: 1,
                    store_ms: 9,
                },
                Level::Warn,
            ),
            (
                Event::StoreUnsafe {
                    store: "redis".into(),
                    setting: "appendfsync".into(),
                    value: "everysec".into(),
                    expected: "always".into(),
                },
                Level::Warn,
            ),
            (
                Event::Released {
                    slot: 1,
                    last_issued_ms: None,
                },
                Level::Info,
            ),
            (
                Event::Renewed {
                    slot: 1,
                    ceiling_ms: 2,
                    expires_at_ms: 3,
                },
                Level::Debug,
            ),
        ];
        for (event, level) in cases {
            assert_eq!(event.level(), level, "{event}");
            event.log();
        }
    }
}
