//! The `http://` and `https://` store: a client of `cosid serve`, the lease API that fronts any other store.
//!
//! The server keeps no lease state: every call is one request, answered by one call on the store behind it, so
//! the guarantees are that store's. Every request is safe to repeat (a repeated acquire by the same incarnation
//! finds its own lease, a repeated renewal extends the same window, a repeated release finds the slot released
//! and answers `LeaseLost`, which a releasing holder ignores), so a request lost in a load balancer or a
//! restarted server costs a retry, never a duplicate. An answer the client cannot read (a proxy's error page, a
//! reset connection, a timeout) is `Unavailable`: retried by the keeper, bounded by the lease window.
//!
//! `http://[:TOKEN@]host:port[/prefix][?token=TOKEN]`: the token, if any, is sent as `Authorization: Bearer`.
//! `https://` checks the server's certificate against the system's roots (and `SSL_CERT_FILE`, `SSL_CERT_DIR`), as
//! the Redis store's `rediss://` does; no bundled copy of the web's roots (71 KB of every package).

pub mod wire;

use super::{redacted, scrub, Inspection, LeaseStore, StoreError};
use crate::lease::{
    AcquireRequest, Acquired, Namespace, NamespaceConfig, NamespaceRecord, SlotLease,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;

const KIND: &str = "http";

/// How long a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a whole request may take (the keeper bounds each call by its lease window as well).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The header that names the `cosid serve` instances a request has passed through, comma-separated, so that a
/// chain of servers that loops back on itself (a server whose store is its own address) is refused at its first
/// turn instead of recursing.
pub const VIA_HEADER: &str = "cosid-serve-via";

/// The instance id of the `cosid serve` of this process, if it is one: sent in [`VIA_HEADER`] on every request.
static SERVE_INSTANCE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

tokio::task_local! {
    /// The [`VIA_HEADER`] of the request a `cosid serve` handler is answering: its calls on an `http://` store
    /// pass it on, with the server's own instance id added.
    pub static VIA: String;
}

/// Names this process as the `cosid serve` instance `id` in the requests of every `http://` store it opens.
pub fn set_serve_instance(id: String) {
    let _ = SERVE_INSTANCE.set(id);
}

/// The [`VIA_HEADER`] value of a request made now: the chain being answered, then this server.
fn via() -> Option<String> {
    let incoming = VIA.try_with(Clone::clone).ok().filter(|v| !v.is_empty());
    match (incoming, SERVE_INSTANCE.get()) {
        (Some(chain), Some(me)) => Some(format!("{chain},{me}")),
        (Some(chain), None) => Some(chain),
        (None, Some(me)) => Some(me.clone()),
        (None, None) => None,
    }
}

/// What `cosid serve` keeps in its store for the incarnation of a client's lease: a one-way function of it (SHA-256
/// with a domain prefix, cut to a v4 UUID). The incarnation is the holder's secret; whatever the server shows is
/// sealed, and presented again it is sealed again and matches nothing, so only the holder can renew or release
/// its lease. The function is fixed, so every replica in front of one store seals alike.
pub fn sealed_incarnation(incarnation: &uuid::Uuid) -> uuid::Uuid {
    use sha2::Digest;
    let digest = sha2::Sha256::new()
        .chain_update(b"cosid serve lease incarnation v1\0")
        .chain_update(incarnation.as_bytes())
        .finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// A lease store behind `cosid serve`.
#[derive(Clone)]
pub struct HttpStore {
    client: reqwest::Client,
    /// The base URL, without user-info or token, ending without `/`.
    base: url::Url,
    token: Option<String>,
    /// The URL as given, for messages.
    shown: String,
}

impl std::fmt::Debug for HttpStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpStore")
            .field("url", &self.shown)
            .finish_non_exhaustive()
    }
}

impl HttpStore {
    /// A client of the server at `url` (`http://` or `https://`). Opens no connection.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let invalid = |reason: String| StoreError::InvalidUrl {
            url: redacted(url),
            reason: scrub(&reason, url),
        };
        let mut base = url::Url::parse(url).map_err(|e| invalid(e.to_string()))?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none_or(str::is_empty) {
            return Err(invalid(
                "expected http://host:port or https://host:port".into(),
            ));
        }
        let mut token = base
            .query_pairs()
            .find(|(k, _)| k == "token")
            .map(|(_, v)| v.into_owned());
        if token.is_none() {
            if let Some(p) = base.password() {
                token = Some(
                    percent_encoding::percent_decode_str(p)
                        .decode_utf8_lossy()
                        .into_owned(),
                );
            }
        }
        if let Some((k, _)) = base.query_pairs().find(|(k, _)| k != "token") {
            return Err(invalid(format!("unknown parameter {k:?}; expected token")));
        }
        let _ = base.set_password(None);
        let _ = base.set_username("");
        base.set_query(None);
        base.set_fragment(None);
        let path = base.path().trim_end_matches('/').to_owned();
        base.set_path(&path);
        // Installs the ring provider if no provider is installed yet (the other TLS stores do the same).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .user_agent(concat!("cosid/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| invalid(e.to_string()))?;
        Ok(Self {
            client,
            base,
            token,
            shown: redacted(url),
        })
    }

    /// `base/v1/<segments...>`, each segment percent-encoded (a namespace name may hold `/`, `%`, `?`, ...).
    fn endpoint(&self, segments: &[&str]) -> url::Url {
        let mut u = self.base.clone();
        {
            let mut path = u.path_segments_mut().expect("http URLs have a path");
            path.pop_if_empty().push("v1");
            for s in segments {
                path.push(s);
            }
        }
        u
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        segments: &[&str],
        body: Option<&impl Serialize>,
    ) -> Result<T, StoreError> {
        let unavailable = |what: String| StoreError::Unavailable {
            store: KIND,
            source: what.into(),
        };
        let url = self.endpoint(segments);
        let mut request = self.client.request(method, url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(via) = via() {
            request = request.header(VIA_HEADER, via);
        }
        if let Some(body) = body {
            let json = serde_json::to_vec(body).map_err(|e| StoreError::Generic {
                store: KIND,
                source: e.into(),
            })?;
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(json);
        }
        let response = request
            .send()
            .await
            .map_err(|e| unavailable(self.describe(&e)))?;
        let status = response.status().as_u16();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| unavailable(self.describe(&e)))?;
        if (200..300).contains(&status) {
            return serde_json::from_slice(&bytes).map_err(|e| StoreError::Generic {
                store: KIND,
                source: format!(
                    "the server at {} answered with an unreadable body: {e}",
                    self.shown
                )
                .into(),
            });
        }
        match serde_json::from_slice::<wire::ErrorBody>(&bytes) {
            Ok(body) => Err(body.error.into_store_error(status)),
            // Not an answer of the lease API: a proxy or load balancer in between, or the wrong server.
            Err(_) => {
                let text: String = String::from_utf8_lossy(&bytes).chars().take(200).collect();
                let what = format!("HTTP {status} from {}: {}", self.shown, text.trim());
                if matches!(status, 408 | 429 | 502 | 503 | 504) {
                    Err(unavailable(what))
                } else {
                    Err(StoreError::Generic {
                        store: KIND,
                        source: what.into(),
                    })
                }
            }
        }
    }

    fn describe(&self, e: &reqwest::Error) -> String {
        // reqwest's message names the URL (without the token, which travels in a header); the chain says why.
        let mut out = format!("{} ({})", self.shown, e);
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            out.push_str(": ");
            out.push_str(&s.to_string());
            source = s.source();
        }
        out
    }
}

#[async_trait::async_trait]
impl LeaseStore for HttpStore {
    fn kind(&self) -> &'static str {
        KIND
    }

    async fn init(&self) -> Result<(), StoreError> {
        let _: serde_json::Value = self
            .call(
                reqwest::Method::POST,
                &["init"],
                Some(&serde_json::json!({})),
            )
            .await?;
        Ok(())
    }

    async fn acquire(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        request: &AcquireRequest,
    ) -> Result<Acquired, StoreError> {
        let body = wire::AcquireBody::of(config, request);
        let got: wire::AcquiredBody = self
            .call(
                reqwest::Method::POST,
                &["namespaces", namespace.as_str(), "acquire"],
                Some(&body),
            )
            .await?;
        got.decode().map_err(|e| self.unreadable(e))
    }

    async fn renew(
        &self,
        lease: &SlotLease,
        ttl_ms: u64,
        tolerance_ms: u64,
    ) -> Result<SlotLease, StoreError> {
        let body = wire::RenewBody {
            lease: wire::Lease::of(lease),
            ttl_ms,
            tolerance_ms,
        };
        let got: wire::Lease = self
            .call(
                reqwest::Method::POST,
                &["namespaces", lease.namespace.as_str(), "renew"],
                Some(&body),
            )
            .await?;
        got.decode().map_err(|e| self.unreadable(e))
    }

    async fn release(&self, lease: &SlotLease, last_issued: Option<u64>) -> Result<(), StoreError> {
        let body = wire::ReleaseBody {
            lease: wire::Lease::of(lease),
            last_issued,
        };
        let _: serde_json::Value = self
            .call(
                reqwest::Method::POST,
                &["namespaces", lease.namespace.as_str(), "release"],
                Some(&body),
            )
            .await?;
        Ok(())
    }

    async fn inspect(&self, namespace: &Namespace) -> Result<Inspection, StoreError> {
        let got: wire::InspectionBody = self
            .call(
                reqwest::Method::GET,
                &["namespaces", namespace.as_str(), "slots"],
                None::<&()>,
            )
            .await?;
        got.decode().map_err(|e| self.unreadable(e))
    }

    async fn raise_not_before(
        &self,
        namespace: &Namespace,
        config: &NamespaceConfig,
        not_before: u64,
    ) -> Result<NamespaceRecord, StoreError> {
        let body = wire::NotBeforeBody {
            config: wire::Config::of(config),
            not_before,
        };
        let got: wire::Record = self
            .call(
                reqwest::Method::POST,
                &["namespaces", namespace.as_str(), "not_before"],
                Some(&body),
            )
            .await?;
        got.decode().map_err(|e| self.unreadable(e))
    }
}

impl HttpStore {
    fn unreadable(&self, detail: String) -> StoreError {
        StoreError::Corrupt {
            store: KIND,
            what: format!("an answer of {}", self.shown),
            detail,
        }
    }
}
