//! Rate limits per client (`--rate-limit`, `--auth-failure-limit`).
//!
//! A client is a token, or an address where no token is configured. Each client has two buckets: one for the
//! renewals of its leases and one for everything else, so a client's own flood of acquisitions or `/ids` never
//! starves its renewals, and no client's flood touches another's buckets. A request whose token is unknown is
//! charged to a bucket of its address alone, after authentication, so a flood of 401s costs its sender only.

use super::auth::Identity;
use governor::{DefaultKeyedRateLimiter, Quota};
use std::net::IpAddr;
use std::num::NonZeroU32;

/// What a request is charged to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    client: Client,
    renewal: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Client {
    Token(usize),
    Addr(IpAddr),
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The client's own bucket is empty.
    Client,
    /// The address's bucket of requests without a known token is empty.
    Unauthenticated,
}

impl Refusal {
    /// The label of `cosid_serve_limited_total{reason}`.
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Client => "client_rate",
            Refusal::Unauthenticated => "unauthenticated_rate",
        }
    }
}

/// The buckets of every client.
#[derive(Debug)]
pub struct Limits {
    clients: Option<DefaultKeyedRateLimiter<Key>>,
    unauthenticated: Option<DefaultKeyedRateLimiter<IpAddr>>,
}

impl Limits {
    /// `per_client` requests a second per client and kind (0: no limit), `per_failing_address` requests a second
    /// per address whose token is unknown (0: no limit).
    pub fn new(per_client: u32, per_failing_address: u32) -> Self {
        Self {
            clients: NonZeroU32::new(per_client)
                .map(|n| governor::RateLimiter::keyed(Quota::per_second(n))),
            unauthenticated: NonZeroU32::new(per_failing_address)
                .map(|n| governor::RateLimiter::keyed(Quota::per_second(n))),
        }
    }

    /// Charges one request of `identity` from `addr`; `renewal` for `POST .../renew`.
    pub fn charge(&self, identity: &Identity, addr: IpAddr, renewal: bool) -> Result<(), Refusal> {
        match identity {
            Identity::Unknown => match &self.unauthenticated {
                Some(l) => l.check_key(&addr).map_err(|_| Refusal::Unauthenticated),
                None => Ok(()),
            },
            Identity::Open | Identity::Token(_) => {
                let Some(l) = &self.clients else {
                    return Ok(());
                };
                let client = match identity {
                    Identity::Token(i) => Client::Token(*i),
                    _ => Client::Addr(addr),
                };
                l.check_key(&Key { client, renewal })
                    .map_err(|_| Refusal::Client)
            }
        }
    }

    /// Forgets the buckets that are full again (called now and then, so a scan of addresses cannot grow them
    /// without bound).
    pub fn forget_idle(&self) {
        if let Some(l) = &self.clients {
            l.retain_recent();
            l.shrink_to_fit();
        }
        if let Some(l) = &self.unauthenticated {
            l.retain_recent();
            l.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_and_kind_has_its_own_bucket() {
        let l = Limits::new(2, 1);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let token = Identity::Token(0);
        assert!(l.charge(&token, a, false).is_ok());
        assert!(l.charge(&token, a, false).is_ok());
        assert_eq!(
            l.charge(&token, b, false),
            Err(Refusal::Client),
            "a token is one client wherever it comes from"
        );
        assert!(
            l.charge(&token, a, true).is_ok(),
            "renewals have a bucket of their own"
        );
        assert!(
            l.charge(&Identity::Token(1), a, false).is_ok(),
            "another token is another client"
        );
        assert!(l.charge(&Identity::Unknown, a, false).is_ok());
        assert_eq!(
            l.charge(&Identity::Unknown, a, false),
            Err(Refusal::Unauthenticated)
        );
        assert!(
            l.charge(&Identity::Unknown, b, false).is_ok(),
            "per address"
        );
        assert!(
            l.charge(&Identity::Open, b, false).is_ok(),
            "failures are charged apart"
        );
        let off = Limits::new(0, 0);
        for _ in 0..100 {
            assert!(off.charge(&Identity::Unknown, a, false).is_ok());
            assert!(off.charge(&Identity::Open, a, true).is_ok());
        }
    }
}
