//! The store conformance suite through a real `cosid serve` in front of every store, with the `http://` store: one
//! module per store, each with a server of its own per case. Raw records are written behind the server's back by
//! the store's own conformance target, shared with core's store tests (core/tests/targets). The network stores run
//! on the servers in `COSID_TEST_<STORE>_URL` (the scripts in .ci/services start them); without one, its cases
//! print why they are skipped.

mod serve_common;

use cosid::conformance;
use serve_common::Proxied;

// Each store's module has the path core/tests/targets, so its `target` module is the store's file there.

/// A fresh SQLite file per case.
#[path = "../../core/tests/targets"]
mod sqlite {
    use super::{conformance, Proxied};

    #[path = "sqlite.rs"]
    mod target;

    async fn proxied() -> Option<Proxied<target::Sqlite>> {
        let inner = target::target().await?;
        Some(Proxied::start(&inner.url(), inner))
    }

    conformance::conformance_tests!(proxied());
}

/// For each store, a module `$store` that runs the suite behind a server in front of the store in the target's
/// `URL_VAR`, with the raw writes of the target `$inner` makes on that URL (`$url`), from
/// core/tests/targets/`$file`.
macro_rules! behind_serve {
    ($(($feature:literal, $store:ident, $file:literal): |$url:ident| $inner:expr;)+) => {$(
        #[cfg(feature = $feature)]
        #[path = "../../core/tests/targets"]
        mod $store {
            use super::{conformance, Proxied};

            #[path = $file]
            mod target;

            async fn proxied() -> Option<Proxied<impl conformance::Target>> {
                let $url = conformance::server_url(target::URL_VAR, target::SCRIPT)?;
                Some(Proxied::start(&$url, $inner))
            }

            conformance::conformance_tests!(proxied());
        }
    )+};
}

behind_serve! {
    ("redis", redis, "redis.rs"): |url| target::connect(&url).await;
    ("postgres", postgres, "postgres.rs"): |url| target::connect(&url).await;
    ("mysql", mysql, "mysql.rs"): |url| target::connect(url.clone()).await;
    // etcd and ZooKeeper have no clock: the server's store runs on the host clock, as the inner target's does.
    ("etcd", etcd, "etcd.rs"): |url| target::on_host_clock(url.clone()).await;
    ("zookeeper", zookeeper, "zookeeper.rs"): |url| target::on_host_clock(url.clone()).await;
    ("mongodb", mongodb, "mongodb.rs"): |url| target::connect(&url).await;
}
