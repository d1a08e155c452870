//! The routes of the lease API: `/v1/...`, JSON in and out, every store error as its wire form.
// The error of these helpers is the HTTP answer itself, made once per refused request: boxing it buys nothing.
#![allow(clippy::result_large_err)]

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, State as Shared};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use cosid::lease::Namespace;
use cosid::store::http::wire;
use cosid::store::{LeaseStore, StoreError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::auth::{Tokens, Verdict};
use super::metrics::Metrics;
use cosid::host::ErrorCode;
use cosid::{Config, Runtime};

/// What every request shares: the store, and nothing about leases (the runtimes of `/v1/ids` hold theirs in the
/// store like any client).
#[derive(Debug)]
pub struct State {
    pub store: Arc<dyn LeaseStore>,
    /// The store URL as a person should see it.
    pub shown: String,
    pub tokens: Tokens,
    pub metrics: Arc<Metrics>,
    /// The settings of the runtimes of `/v1/ids` (ttl, bits, layout, ...); the namespace is the request's.
    pub config: Config,
    /// One runtime per namespace, made on its first `/v1/ids` request. Each namespace has a cell of its own, so the
    /// first request of one (which waits for a slot) holds up neither the others nor `/metrics`.
    pub runtimes: Mutex<HashMap<String, RuntimeCell>>,
    /// Largest `n` of one `/v1/ids` request.
    pub max_ids: usize,
    /// The latest events of those runtimes, for the dashboard (renewals left out: they come every few seconds).
    pub events: Mutex<std::collections::VecDeque<Recent>>,
}

/// How many events the dashboard keeps.
pub const RECENT_EVENTS: usize = 50;

/// One event of a `/v1/ids` runtime as the dashboard shows it.
#[derive(Debug, Clone)]
pub struct Recent {
    /// When it was seen (Unix ms, this host's clock).
    pub at_ms: u64,
    pub namespace: String,
    /// The event's stable name (`SLOT_LOST`).
    pub name: &'static str,
    /// Its fields.
    pub detail: String,
}

impl State {
    /// Keeps `event` of the runtime of `namespace` among the latest [`RECENT_EVENTS`].
    pub fn record(&self, namespace: &str, event: &cosid::Event) {
        if matches!(event, cosid::Event::Renewed { .. }) {
            return;
        }
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if events.len() == RECENT_EVENTS {
            events.pop_front();
        }
        events.push_back(Recent {
            at_ms: cosid::clock::Clock::now_ms(&cosid::clock::SystemClock),
            namespace: namespace.to_owned(),
            name: event.name(),
            detail: format!("{event:?}"),
        });
    }

    /// Releases the slot of every runtime of `/v1/ids` (graceful shutdown).
    pub fn release_all(&self) {
        let all: Vec<_> = self
            .runtimes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .collect();
        for (_, cell) in all {
            // Waits for a start under way, then stops what it made.
            let rt = cell.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(rt) = rt {
                rt.shutdown();
            }
        }
    }

    /// Slots held by the runtimes of `/v1/ids`, by namespace.
    pub fn held(&self) -> BTreeMap<String, u64> {
        self.runtimes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(|(ns, cell)| {
                // A namespace whose runtime is starting holds nothing yet; one whose start failed has none.
                let rt = match cell.try_lock() {
                    Ok(rt) => rt.clone()?,
                    Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner().clone()?,
                    Err(std::sync::TryLockError::WouldBlock) => return Some((ns.clone(), 0)),
                };
                let active = rt.status().state == cosid::State::Active;
                Some((ns.clone(), u64::from(active)))
            })
            .collect()
    }
}

type S = Arc<State>;

/// The runtime of one namespace of `/v1/ids`, once started.
pub type RuntimeCell = Arc<Mutex<Option<Arc<Runtime>>>>;

/// The lease API.
pub fn router(state: S, max_body: usize) -> Router {
    Router::new()
        .route("/v1/store", get(store_info))
        .route("/v1/init", post(init))
        .route(
            "/v1/namespaces/{ns}",
            get(read_namespace).put(create_namespace),
        )
        .route("/v1/namespaces/{ns}/acquire", post(acquire))
        .route("/v1/namespaces/{ns}/renew", post(renew))
        .route("/v1/namespaces/{ns}/release", post(release))
        .route("/v1/namespaces/{ns}/slots", get(slots))
        .route("/v1/namespaces/{ns}/not_before", post(not_before))
        .route("/v1/namespaces/{ns}/ids", get(ids))
        .route("/metrics", get(metrics))
        .route("/dashboard", get(dashboard))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .fallback(|| async {
            refused(
                StatusCode::NOT_FOUND,
                "no such path; see docs/serve.md".into(),
            )
        })
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(state)
}

/// A JSON answer.
fn json(status: StatusCode, value: &impl Serialize) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// A request refused before it reached the store.
pub fn refused(status: StatusCode, message: String) -> Response {
    json(
        status,
        &wire::ErrorBody {
            error: wire::WireError::BadRequest {
                message: message.clone(),
            },
            message,
        },
    )
}

/// The answer for a store error: its status and wire form.
fn failed(state: &State, e: &StoreError) -> Response {
    state.metrics.error(ErrorCode::of_store(e).name());
    let status = StatusCode::from_u16(wire::status(e)).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json(status, &wire::ErrorBody::of(e))
}

fn answer<T: Serialize>(state: &State, r: Result<T, StoreError>) -> Response {
    match r {
        Ok(v) => json(StatusCode::OK, &v),
        Err(e) => failed(state, &e),
    }
}

/// Whether the request's token opens `namespace` (`None`: the whole server).
fn authorize(state: &State, headers: &HeaderMap, namespace: Option<&str>) -> Result<(), Response> {
    let header = headers
        .get(axum::http::header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    let (status, message) = match state.tokens.check(header, namespace) {
        Verdict::Allowed => return Ok(()),
        Verdict::Unauthenticated => (StatusCode::UNAUTHORIZED, "a valid bearer token is required"),
        Verdict::Forbidden => (
            StatusCode::FORBIDDEN,
            "the token does not open this namespace",
        ),
    };
    state.metrics.error(if status == StatusCode::UNAUTHORIZED {
        "UNAUTHORIZED"
    } else {
        "FORBIDDEN"
    });
    let mut response = refused(status, message.into());
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            axum::http::header::WWW_AUTHENTICATE,
            axum::http::HeaderValue::from_static("Bearer"),
        );
    }
    Err(response)
}

/// The namespace of the path, if the request may use it.
fn namespace(state: &State, headers: &HeaderMap, name: String) -> Result<Namespace, Response> {
    authorize(state, headers, Some(&name))?;
    Namespace::new(name).map_err(|e| refused(StatusCode::BAD_REQUEST, e.to_string()))
}

/// The request body as JSON. A body the server would not read (larger than `--max-body`, say) is refused as the
/// other bad requests are: its status (413) and a JSON error body.
fn body<T: DeserializeOwned>(bytes: &Result<Bytes, BytesRejection>) -> Result<T, Response> {
    let bytes = bytes
        .as_ref()
        .map_err(|e| refused(e.status(), e.body_text()))?;
    serde_json::from_slice(bytes).map_err(|e| {
        refused(
            StatusCode::BAD_REQUEST,
            format!("invalid request body: {e}"),
        )
    })
}

fn decoded<T>(r: Result<T, String>) -> Result<T, Response> {
    r.map_err(|e| {
        refused(
            StatusCode::BAD_REQUEST,
            format!("invalid request body: {e}"),
        )
    })
}

/// The lease of a body, which must be of the namespace of the path.
fn lease_of(ns: &Namespace, lease: &wire::Lease) -> Result<cosid::lease::SlotLease, Response> {
    let lease = decoded(lease.decode())?;
    if lease.namespace != *ns {
        return Err(refused(
            StatusCode::BAD_REQUEST,
            format!(
                "the lease is of namespace {:?}, the path names {:?}",
                lease.namespace.as_str(),
                ns.as_str()
            ),
        ));
    }
    Ok(lease)
}

macro_rules! tried {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(response) => return response,
        }
    };
}

async fn store_info(Shared(state): Shared<S>, headers: HeaderMap) -> Response {
    tried!(authorize(&state, &headers, None));
    json(
        StatusCode::OK,
        &serde_json::json!({ "kind": state.store.kind(), "store": state.shown, "api": "v1" }),
    )
}

async fn init(Shared(state): Shared<S>, headers: HeaderMap) -> Response {
    tried!(authorize(&state, &headers, None));
    answer(
        &state,
        state.store.init().await.map(|()| serde_json::json!({})),
    )
}

async fn acquire(
    Shared(state): Shared<S>,
    headers: HeaderMap,
    Path(ns): Path<String>,
    bytes: Result<Bytes, BytesRejection>,
) -> Response {
    let ns = tried!(namespace(&state, &headers, ns));
    let req: wire::AcquireBody = tried!(body(&bytes));
    let (config, request) = tried!(decoded(req.decode()));
    answer(
        &state,
        state
            .store
            .acquire(&ns, &config, &request)
            .await
            .map(|a| wire::AcquiredBody::of(&a)),
    )
}

async fn renew(
    Shared(state): Shared<S>,
    headers: HeaderMap,
    Path(ns): Path<String>,
    bytes: Result<Bytes, BytesRejection>,
) -> Response {
    let ns = tried!(namespace(&state, &headers, ns));
    let req: wire::RenewBody = tried!(body(&bytes));
    let lease = tried!(lease_of(&ns, &req.lease));
    let started = Instant::now();
    let renewed = state
        .store
        .renew(&lease, req.ttl_ms, req.tolerance_ms)
        .await;
    let seconds = started.elapsed().as_secs_f64();
    match &renewed {
        Ok(_) => state.metrics.renewal("ok", Some(seconds)),
        Err(e) => state
            .metrics
            .renewal(ErrorCode::of_store(e).name(), Some(seconds)),
    }
    answer(&state, renewed.map(|l| wire::Lease::of(&l)))
}

async fn release(
    Shared(state): Shared<S>,
    headers: HeaderMap,
    Path(ns): Path<String>,
    bytes: Result<Bytes, BytesRejection>,
) -> Response {
    let ns = tried!(namespace(&state, &headers, ns));
    let req: wire::ReleaseBody = tried!(body(&bytes));
    let lease = tried!(lease_of(&ns, &req.lease));
    answer(
        &state,
        state
            .store
            .release(&lease, req.last_issued)
            .await
            .map(|()| serde_json::json!({})),
    )
}

async fn slots(Shared(state): Shared<S>, headers: HeaderMap, Path(ns): Path<String>) -> Response {
    let ns = tried!(namespace(&state, &headers, ns));
    answer(
        &state,
        state
            .store
            .inspect(&ns)
            .await
            .map(|i| wire::InspectionBody::of(&i)),
    )
}

/// The namespace record and the store's clock (`record` is null for a namespace never used).
async fn read_namespace(
    Shared(state): Shared<S>,
    headers: HeaderMap,
    Path(ns): Path<String>,
) -> Response {
    let ns = tried!(namespace(&state, &headers, ns));
    answer(
        &state,
        state.store.inspect(&ns).await.map(|i| {
            serde_json::json!({
                "namespace": ns.as_str(),
                "record": i.namespace.as_ref().map(wire::Record::of),
                "store_now": i.store_now,
            })
        }),
    )
}

/// Records the namespace with the settings of the body (`{"config": ...}`), or checks them against the record.
async fn create_namespace(
    Shared(state): Shared<S>,
    headers: HeaderMap,
    Path(ns): Path<String>,
    bytes: Result<Bytes, BytesRejection>,
) -> Response {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Create {
        config: wire::Config,
    }
    let ns = tried!(namespace(&state, &headers, ns));
    let req: Create = tried!(body(&bytes));
    let config = tried!(decoded(req.config.decode()));
    answer(
        &state,
        state
            .store
            .raise_not_before(&ns, &config, 0)
            .await
            .map(|r| wire::Record::of(&r)),
    )
}

async fn not_before(
    Shared(state): Shared<S>,
    headers: HeaderMap,
    Path(ns): Path<String>,
    bytes: Result<Bytes, BytesRejection>,
) -> Response {
    let ns = tried!(namespace(&state, &headers, ns));
    let req: wire::NotBeforeBody = tried!(body(&bytes));
    let config = tried!(decoded(req.config.decode()));
    answer(
        &state,
        state
            .store
            .raise_not_before(&ns, &config, req.not_before)
            .await
            .map(|r| wire::Record::of(&r)),
    )
}

#[derive(serde::Deserialize)]
struct IdsQuery {
    #[serde(default = "one")]
    n: usize,
}

fn one() -> usize {
    1
}

/// `n` ids (as decimal strings: JSON numbers past 2^53 lose digits in many readers) from the server's runtime for
/// the namespace, made on the first request.
async fn ids(
    Shared(state): Shared<S>,
    headers: HeaderMap,
    Path(ns): Path<String>,
    Query(q): Query<IdsQuery>,
) -> Response {
    let ns = tried!(namespace(&state, &headers, ns));
    if q.n == 0 || q.n > state.max_ids {
        return refused(
            StatusCode::BAD_REQUEST,
            format!("n = {}; expected 1 to {}", q.n, state.max_ids),
        );
    }
    let worker = state.clone();
    let name = ns.as_str().to_owned();
    let issued = tokio::task::spawn_blocking(move || -> Result<Vec<cosid::Id>, cosid::Error> {
        let rt = runtime(&worker, &name)?;
        rt.next_ids(q.n)
    })
    .await;
    match issued {
        Ok(Ok(ids)) => {
            state.metrics.ids(ns.as_str(), ids.len() as u64);
            let ids: Vec<String> = ids.iter().map(|i| i.as_u64().to_string()).collect();
            json(
                StatusCode::OK,
                &serde_json::json!({ "namespace": ns.as_str(), "ids": ids }),
            )
        }
        Ok(Err(e)) => id_failed(&state, &e),
        Err(e) => refused(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

fn id_failed(state: &State, e: &cosid::Error) -> Response {
    if let cosid::Error::Store(e) = e {
        return failed(state, e);
    }
    let code = ErrorCode::of(e);
    state.metrics.error(code.name());
    json(
        StatusCode::SERVICE_UNAVAILABLE,
        &serde_json::json!({
            "error": { "kind": "id", "code": code.name(), "message": e.to_string() },
            "message": e.to_string(),
        }),
    )
}

/// The runtime of `namespace`, started (and its slot acquired) on first use.
fn runtime(state: &Arc<State>, namespace: &str) -> Result<Arc<Runtime>, cosid::Error> {
    let cell = state
        .runtimes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(namespace.to_owned())
        .or_default()
        .clone();
    // Only this namespace's requests wait while its runtime acquires a slot.
    let mut slot = cell.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(rt) = &*slot {
        return Ok(rt.clone());
    }
    let metrics = state.metrics.clone();
    // A weak reference: the runtimes live in the state, which must not be kept alive by them.
    let recorder = Arc::downgrade(state);
    let name = namespace.to_owned();
    let rt = cosid::Builder::with_config(state.config.clone())
        .namespace(namespace)
        .store_instance(state.store.clone())
        .subscribe(move |e: &cosid::Event| {
            match e {
                cosid::Event::Renewed { .. } => metrics.renewal("ok", None),
                cosid::Event::RenewFailed { .. } => metrics.renewal("failed", None),
                cosid::Event::SlotLost { .. } => metrics.renewal("lost", None),
                cosid::Event::StoreRegression { .. } => metrics.regression(),
                _ => {}
            }
            if let Some(state) = recorder.upgrade() {
                state.record(&name, e);
            }
        })
        .build()?;
    let rt = Arc::new(rt);
    *slot = Some(rt.clone());
    Ok(rt)
}

async fn metrics(Shared(state): Shared<S>, headers: HeaderMap) -> Response {
    tried!(authorize(&state, &headers, None));
    let text = state.metrics.render(&state.held());
    (
        StatusCode::OK,
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        text,
    )
        .into_response()
}

/// Ready when the store answers a read.
async fn readyz(Shared(state): Shared<S>) -> Response {
    let probe = Namespace::new("cosid-readyz").expect("a valid name");
    match state.store.inspect(&probe).await {
        Ok(_) => (StatusCode::OK, "ready\n").into_response(),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("store {}: {e}\n", state.shown),
        )
            .into_response(),
    }
}

/// The dashboard of the namespaces in `?ns=` (each needs the token to open it) and of the server's runtimes.
async fn dashboard(
    Shared(state): Shared<S>,
    headers: HeaderMap,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Response {
    let mut names: Vec<String> = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(|(k, _)| k == "ns")
        .map(|(_, v)| v.into_owned())
        .collect();
    let mut own: Vec<String> = state.held().into_keys().collect();
    own.retain(|n| !names.contains(n));
    names.extend(own);
    for name in &names {
        tried!(authorize(&state, &headers, Some(name)));
    }
    if names.is_empty() {
        tried!(authorize(&state, &headers, None));
    }
    let page = super::dashboard::render(&state, &names).await;
    (
        StatusCode::OK,
        [(axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8")],
        page,
    )
        .into_response()
}
