//! A lease is a capability of its holder.
//!
//! The holder's incarnation (a random UUID v4 its runtime makes at start, 122 random bits) is the secret that
//! proves a request comes from the process that acquired the lease. The server never stores it: the store keeps
//! `sealed(incarnation)`, a one-way function of it, under which every store check (the compare-and-set on fence and
//! incarnation of renew and release, the idempotent retry of acquire) runs. So whatever another client reads
//! through the server (`/slots`, the dashboard, an error naming the holder, the store itself), it learns only the
//! sealed value; presented in a request, that value is sealed again and matches nothing. Only the holder, which
//! knows the incarnation it sent, can renew, release, report `last_issued` for or re-acquire its lease.
//!
//! The function is fixed (SHA-256 with a domain prefix, cut to a UUID): the server keeps no key and no state, so
//! any replica in front of the same store seals alike.

use cosid::lease::{AcquireRequest, Acquired, Owner, SlotLease};
use cosid::store::http::sealed_incarnation as sealed;

fn seal_owner(owner: &Owner) -> Owner {
    Owner {
        key: owner.key.clone(),
        incarnation: sealed(&owner.incarnation),
    }
}

/// The acquisition as the store sees it.
pub fn seal_request(request: &AcquireRequest) -> AcquireRequest {
    AcquireRequest {
        owner: seal_owner(&request.owner),
        ..request.clone()
    }
}

/// A client's lease as the store sees it.
pub fn seal_lease(lease: &SlotLease) -> SlotLease {
    SlotLease {
        owner: seal_owner(&lease.owner),
        ..lease.clone()
    }
}

/// The store's answer to `owner` as that client knows its lease: with its own incarnation.
pub fn unseal_lease(lease: SlotLease, owner: &Owner) -> SlotLease {
    debug_assert_eq!(lease.owner, seal_owner(owner));
    SlotLease {
        owner: owner.clone(),
        ..lease
    }
}

/// [`unseal_lease`] of an acquisition.
pub fn unseal_acquired(acquired: Acquired, owner: &Owner) -> Acquired {
    Acquired {
        lease: unseal_lease(acquired.lease, owner),
        ..acquired
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    #[test]
    fn sealing_is_one_way_and_stable() {
        let secret = Uuid::new_v4();
        let once = sealed(&secret);
        assert_eq!(once, sealed(&secret), "every replica seals alike");
        assert_ne!(once, secret);
        assert_ne!(
            sealed(&once),
            once,
            "a sealed value presented again matches nothing"
        );
        assert_eq!(once.get_version_num(), 4);
    }
}
