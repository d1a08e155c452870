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
    /// gone): the store lost writes. The slot is refused.
    StoreRegression {
        /// The slot.
        slot: u32,
        /// What went backwards.
        detail: String,
    },
}

impl Event {
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
        }
    }
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {self:?}", self.name())
    }
}
