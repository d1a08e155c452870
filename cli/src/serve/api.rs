//! The routes of the lease API: `/v1/...`, JSON in and out, every store error as its wire form.
// The error of these helpers is the HTTP answer itself, made once per refused request: boxing it buys nothing.
#![allow(clippy::result_large_err)]

use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{MatchedPath, Path, Query, Request, State as Shared};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
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
use std::time::{Duration, Instant};

use super::auth::{Tokens, Verdict};
use super::capability;
use super::conn::Peer;
use super::limit::Limits;
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
    /// The rate limits of every client.
    pub limits: Limits,
    /// What a request may ask for.
    pub bounds: Bounds,
    /// This server's instance id, in the `cosid-serve-via` chain of the requests it makes to an `http://` store.
    pub instance: String,
}

/// Bounds on what requests may ask for.
#[derive(Debug, Clone)]
pub struct Bounds {
    /// Farthest a `not_before` may be set past the store's clock (ms).
    pub max_not_before_ahead_ms: u64,
    /// Namespaces `/v1/ids` serves at once.
    pub max_id_namespaces: usize,
    /// A `/v1/ids` runtime idle for that long is stopped.
    pub id_idle: Duration,
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
    /// How much it matters (`INFO`, `WARN`, `ERROR`).
    pub level: &'static str,
    /// What happened, in words (`slot 3 acquired (fence 7), window until ...`).
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
            level: event.level().name(),
            detail: super::dashboard::words(event),
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
            let rt = cell
                .runtime
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(rt) = rt {
                rt.shutdown();
            }
        }
    }

    /// Stops the `/v1/ids` runtimes that have issued nothing for [`Bounds::id_idle`], releasing their slots.
    pub fn stop_idle(&self) {
        let idle: Vec<(String, RuntimeCell)> = {
            let mut map = self.runtimes.lock().unwrap_or_else(|e| e.into_inner());
            let names: Vec<String> = map
                .iter()
                // Under the map's lock, a cell no request holds (requests clone it under this lock) stays so.
                .filter(|(_, cell)| {
                    Arc::strong_count(cell) == 1 && cell.idle() >= self.bounds.id_idle
                })
                .map(|(n, _)| n.clone())
                .collect();
            names
                .into_iter()
                .filter_map(|n| map.remove(&n).map(|c| (n, c)))
                .collect()
        };
        for (name, cell) in idle {
            let rt = cell
                .runtime
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(rt) = rt {
                tracing::info!(namespace = %name, "the /ids runtime of the namespace is idle: stopped, its slot released");
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
                let rt = match cell.runtime.try_lock() {
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

/// The runtime of one namespace of `/v1/ids`, once started, and when it was last used.
#[derive(Debug)]
pub struct IdRuntime {
    pub runtime: Mutex<Option<Arc<Runtime>>>,
    started: Instant,
    last_used_ms: std::sync::atomic::AtomicU64,
}

impl Default for IdRuntime {
    fn default() -> Self {
        Self {
            runtime: Mutex::default(),
            started: Instant::now(),
            last_used_ms: Default::default(),
        }
    }
}

impl IdRuntime {
    fn touch(&self) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_used_ms
            .store(now, std::sync::atomic::Ordering::Relaxed);
    }

    fn idle(&self) -> Duration {
        let last = self.last_used_ms.load(std::sync::atomic::Ordering::Relaxed);
        self.started
            .elapsed()
            .saturating_sub(Duration::from_millis(last))
    }
}

/// A namespace's [`IdRuntime`].
pub type RuntimeCell = Arc<IdRuntime>;

/// The route templates, as metrics and logs name them.
const ROUTES: [&str; 14] = [
    "/v1/store",
    "/v1/init",
    "/v1/namespaces/{ns}",
    "/v1/namespaces/{ns}/acquire",
    "/v1/namespaces/{ns}/renew",
    "/v1/namespaces/{ns}/release",
    "/v1/namespaces/{ns}/slots",
    "/v1/namespaces/{ns}/not_before",
    "/v1/namespaces/{ns}/ids",
    "/metrics",
    "/dashboard",
    "/v1/dashboard",
    "/healthz",
    "/readyz",
];

const RENEW_ROUTE: &str = "/v1/namespaces/{ns}/renew";

/// The lease API, behind [`front`] (loop check, limits, the body read, the access log and request metrics).
pub fn router(state: S, max_body: usize, body_timeout: Duration) -> Router {
    let front_state = Front {
        state: state.clone(),
        max_body,
        body_timeout,
    };
    let mut router = Router::new();
    for route in ROUTES {
        router = match route {
            "/v1/store" => router.route(route, get(store_info)),
            "/v1/init" => router.route(route, post(init)),
            "/v1/namespaces/{ns}" => router.route(route, get(read_namespace).put(create_namespace)),
            "/v1/namespaces/{ns}/acquire" => router.route(route, post(acquire)),
            "/v1/namespaces/{ns}/renew" => router.route(route, post(renew)),
            "/v1/namespaces/{ns}/release" => router.route(route, post(release)),
            "/v1/namespaces/{ns}/slots" => router.route(route, get(slots)),
            "/v1/namespaces/{ns}/not_before" => router.route(route, post(not_before)),
            "/v1/namespaces/{ns}/ids" => router.route(route, get(ids)),
            "/metrics" => router.route(route, get(metrics)),
            "/dashboard" => router.route(route, get(dashboard)),
            "/v1/dashboard" => router.route(route, get(dashboard_data)),
            "/healthz" => router.route(route, get(|| async { "ok\n" })),
            "/readyz" => router.route(route, get(readyz)),
            _ => unreachable!("every route of ROUTES has a handler"),
        };
    }
    router
        .fallback(|| async {
            refused(
                StatusCode::NOT_FOUND,
                "no such path; see docs/serve.md".into(),
            )
        })
        .method_not_allowed_fallback(|| async {
            refused(
                StatusCode::METHOD_NOT_ALLOWED,
                "this path does not take that method; see docs/serve.md".into(),
            )
        })
        .layer(axum::middleware::from_fn_with_state(front_state, front))
        .with_state(state)
}

#[derive(Clone)]
struct Front {
    state: S,
    max_body: usize,
    body_timeout: Duration,
}

/// The code of an error answer, for [`front`]'s metrics.
#[derive(Debug, Clone)]
struct Code(String);

/// Every request passes here: a chain of servers that loops back is refused; the client (its token, or its
/// address) is identified and charged to its own rate limits; the body is read whole within `--body-timeout` and
/// `--max-body`; the handler runs with the request's `cosid-serve-via` chain for the calls it makes on an
/// `http://` store; then one access-log line and the request's metrics.
async fn front(Shared(f): Shared<Front>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let state = &f.state;
    let route: &'static str = req
        .extensions()
        .get::<MatchedPath>()
        .and_then(|m| ROUTES.iter().find(|r| **r == m.as_str()).copied())
        .unwrap_or("other");
    let peer = req
        .extensions()
        .get::<Peer>()
        .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |p| p.0.ip());
    let identity = state.tokens.identify(
        req.headers()
            .get(axum::http::header::AUTHORIZATION)
            .map(HeaderValue::as_bytes),
    );
    let method = req.method().clone();
    let via = req
        .headers()
        .get(cosid::store::http::VIA_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let response = 'answer: {
        let chain: Vec<&str> = via.split(',').filter(|v| !v.is_empty()).collect();
        if chain.contains(&state.instance.as_str()) || chain.len() > 16 {
            break 'answer refused(
                StatusCode::LOOP_DETECTED,
                "the request loops back to a cosid serve it passed through: a server's store leads back to it".into(),
            );
        }
        // Liveness probes are never limited: they cost nothing and a load balancer must always get an answer.
        if route != "/healthz" {
            if let Err(refusal) = state.limits.charge(&identity, peer, route == RENEW_ROUTE) {
                state.metrics.limited(refusal.reason());
                let mut r = refused(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate limit reached; retry later".into(),
                );
                r.headers_mut()
                    .insert("retry-after", HeaderValue::from_static("1"));
                break 'answer r;
            }
        }
        let (parts, body) = req.into_parts();
        let declared = parts
            .headers
            .get(axum::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > f.max_body as u64) {
            break 'answer too_large(f.max_body);
        }
        let bytes = match tokio::time::timeout(
            f.body_timeout,
            axum::body::to_bytes(body, f.max_body),
        )
        .await
        {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => {
                let limit = std::error::Error::source(&e)
                    .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
                break 'answer if limit {
                    too_large(f.max_body)
                } else {
                    refused(
                        StatusCode::BAD_REQUEST,
                        format!("cannot read the request body: {e}"),
                    )
                };
            }
            Err(_) => {
                break 'answer refused(
                    StatusCode::REQUEST_TIMEOUT,
                    format!(
                        "the request body did not arrive within {} ms (--body-timeout)",
                        f.body_timeout.as_millis()
                    ),
                )
            }
        };
        let req = Request::from_parts(parts, Body::from(bytes));
        cosid::store::http::VIA
            .scope(via.clone(), next.run(req))
            .await
    };
    let status = response.status().as_u16();
    let seconds = started.elapsed().as_secs_f64();
    state.metrics.request(route, status, seconds);
    if let Some(Code(code)) = response.extensions().get::<Code>() {
        state.metrics.error(code);
    }
    tracing::info!(
        method = %method,
        route,
        status,
        duration_ms = (seconds * 1000.0 * 1000.0).round() / 1000.0,
        client = state.tokens.name(&identity),
        peer = %peer,
        "request"
    );
    response
}

fn too_large(max: usize) -> Response {
    refused(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the request body is larger than {max} bytes (--max-body)"),
    )
}

/// A JSON answer; never cached (ids and leases are each for one caller).
fn json(status: StatusCode, value: &impl Serialize) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    (
        status,
        [
            (axum::http::header::CONTENT_TYPE, "application/json"),
            (axum::http::header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

/// The code of a request refused before the store, by its status.
fn refusal_code(status: StatusCode) -> &'static str {
    match status {
        StatusCode::UNAUTHORIZED => "UNAUTHORIZED",
        StatusCode::FORBIDDEN => "FORBIDDEN",
        StatusCode::NOT_FOUND => "NOT_FOUND",
        StatusCode::METHOD_NOT_ALLOWED => "METHOD_NOT_ALLOWED",
        StatusCode::REQUEST_TIMEOUT => "REQUEST_TIMEOUT",
        StatusCode::PAYLOAD_TOO_LARGE => "PAYLOAD_TOO_LARGE",
        StatusCode::TOO_MANY_REQUESTS => "RATE_LIMITED",
        StatusCode::LOOP_DETECTED => wire::LOOP,
        StatusCode::SERVICE_UNAVAILABLE => "UNAVAILABLE",
        StatusCode::INTERNAL_SERVER_ERROR => "INTERNAL",
        _ => "BAD_REQUEST",
    }
}

/// A request refused before it reached the store: the error body with the code of `status`.
pub fn refused(status: StatusCode, message: String) -> Response {
    let code = refusal_code(status);
    let mut r = json(
        status,
        &wire::ErrorBody {
            error: wire::WireError::BadRequest {
                message: message.clone(),
                code: code.to_owned(),
            },
            message,
            code: code.to_owned(),
        },
    );
    r.extensions_mut().insert(Code(code.to_owned()));
    r
}

/// The answer for a store error: its status and wire form.
fn failed(e: &StoreError) -> Response {
    let status = StatusCode::from_u16(wire::status(e)).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = wire::ErrorBody::of(e);
    if status.is_server_error() {
        tracing::warn!(code = %body.code, error = %body.message, "store error");
    }
    let code = body.code.clone();
    let mut r = json(status, &body);
    r.extensions_mut().insert(Code(code));
    r
}

fn answer<T: Serialize>(r: Result<T, StoreError>) -> Response {
    match r {
        Ok(v) => json(StatusCode::OK, &v),
        Err(e) => failed(&e),
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
    let mut response = refused(status, message.into());
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            axum::http::header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer"),
        );
    }
    Err(response)
}

/// The namespace of the path, if the request may use it.
fn namespace(
    state: &State,
    headers: &HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Result<Namespace, Response> {
    let Path(name) = path.map_err(|e| {
        refused(
            StatusCode::BAD_REQUEST,
            format!("invalid path: {}", e.body_text()),
        )
    })?;
    authorize(state, headers, Some(&name))?;
    let ns = Namespace::new(name).map_err(|e| refused(StatusCode::BAD_REQUEST, e.to_string()))?;
    state.metrics.watch(ns.as_str());
    Ok(ns)
}

/// The request body as JSON.
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

/// `value` (ms) of the field `what`, if it is at most the longest of `range`. Only the longest matters: a short
/// ttl harms no one but its holder (and a renewal never shortens a lease), where a long one would hold a slot, or
/// a window, for good.
fn at_most(what: &str, value: u64, range: cosid::config::DurationRange) -> Result<(), Response> {
    let max = u64::try_from(range.max.as_millis()).unwrap_or(u64::MAX);
    if value <= max {
        Ok(())
    } else {
        Err(refused(
            StatusCode::BAD_REQUEST,
            format!(
                "{what} = {value}; expected at most {max} ({})",
                humantime_ms(max)
            ),
        ))
    }
}

fn humantime_ms(ms: u64) -> String {
    match ms {
        ms if ms % 86_400_000 == 0 => format!("{} days", ms / 86_400_000),
        ms if ms % 1000 == 0 => format!("{} s", ms / 1000),
        ms => format!("{ms} ms"),
    }
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
    answer(state.store.init().await.map(|()| serde_json::json!({})))
}

/// An acquisition: the store keeps the owner's incarnation sealed (`capability`), and the answer gives the
/// client its own back.
async fn acquire(
    Shared(state): Shared<S>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Response {
    let ns = tried!(namespace(&state, &headers, path));
    let req: wire::AcquireBody = tried!(body(&bytes));
    let (config, request) = tried!(decoded(req.decode()));
    tried!(at_most("ttl_ms", request.ttl_ms, cosid::config::TTL_RANGE));
    let acquired = state
        .store
        .acquire(&ns, &config, &capability::seal_request(&request))
        .await;
    state.metrics.acquisition(match &acquired {
        Ok(_) => "ok",
        Err(e) => ErrorCode::of_store(e).name(),
    });
    answer(
        acquired.map(|a| wire::AcquiredBody::of(&capability::unseal_acquired(a, &request.owner))),
    )
}

async fn renew(
    Shared(state): Shared<S>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Response {
    let ns = tried!(namespace(&state, &headers, path));
    let req: wire::RenewBody = tried!(body(&bytes));
    let lease = tried!(lease_of(&ns, &req.lease));
    tried!(at_most("ttl_ms", req.ttl_ms, cosid::config::TTL_RANGE));
    tried!(at_most(
        "tolerance_ms",
        req.tolerance_ms,
        cosid::config::TOLERANCE_RANGE
    ));
    let started = Instant::now();
    let renewed = state
        .store
        .renew(
            &capability::seal_lease(&lease),
            req.ttl_ms,
            req.tolerance_ms,
        )
        .await;
    let seconds = started.elapsed().as_secs_f64();
    match &renewed {
        Ok(_) => state.metrics.renewal("ok", Some(seconds)),
        Err(e) => state
            .metrics
            .renewal(ErrorCode::of_store(e).name(), Some(seconds)),
    }
    answer(renewed.map(|l| wire::Lease::of(&capability::unseal_lease(l, &lease.owner))))
}

async fn release(
    Shared(state): Shared<S>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Response {
    let ns = tried!(namespace(&state, &headers, path));
    let req: wire::ReleaseBody = tried!(body(&bytes));
    let lease = tried!(lease_of(&ns, &req.lease));
    answer(
        state
            .store
            .release(&capability::seal_lease(&lease), req.last_issued)
            .await
            .map(|()| serde_json::json!({})),
    )
}

async fn slots(
    Shared(state): Shared<S>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Response {
    let ns = tried!(namespace(&state, &headers, path));
    answer(
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
    path: Result<Path<String>, PathRejection>,
) -> Response {
    let ns = tried!(namespace(&state, &headers, path));
    answer(state.store.inspect(&ns).await.map(|i| {
        serde_json::json!({
            "namespace": ns.as_str(),
            "record": i.namespace.as_ref().map(wire::Record::of),
            "store_now": i.store_now,
        })
    }))
}

/// Records the namespace with the settings of the body (`{"config": ...}`), or checks them against the record.
async fn create_namespace(
    Shared(state): Shared<S>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Response {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Create {
        config: wire::Config,
    }
    let ns = tried!(namespace(&state, &headers, path));
    let req: Create = tried!(body(&bytes));
    let config = tried!(decoded(req.config.decode()));
    answer(
        state
            .store
            .raise_not_before(&ns, &config, 0)
            .await
            .map(|r| wire::Record::of(&r)),
    )
}

/// Raises `not_before`, at most `--max-not-before-ahead` past the store's clock: further would refuse every
/// start of the namespace until then, with no way back.
async fn not_before(
    Shared(state): Shared<S>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Response {
    let ns = tried!(namespace(&state, &headers, path));
    let req: wire::NotBeforeBody = tried!(body(&bytes));
    let config = tried!(decoded(req.config.decode()));
    let store_now = match state.store.inspect(&ns).await {
        Ok(i) => i.store_now,
        Err(e) => return failed(&e),
    };
    let limit = store_now.saturating_add(state.bounds.max_not_before_ahead_ms);
    if req.not_before > limit {
        return refused(
            StatusCode::BAD_REQUEST,
            format!(
                "not_before = {}; expected at most {limit} (the store's clock {store_now} plus --max-not-before-ahead)",
                req.not_before
            ),
        );
    }
    answer(
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
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<IdsQuery>, QueryRejection>,
) -> Response {
    let ns = tried!(namespace(&state, &headers, path));
    let n = match query {
        Ok(Query(q)) => q.n,
        Err(e) => {
            return refused(
                StatusCode::BAD_REQUEST,
                format!("{}; expected n = 1 to {}", e.body_text(), state.max_ids),
            )
        }
    };
    if n == 0 || n > state.max_ids {
        return refused(
            StatusCode::BAD_REQUEST,
            format!("n = {n}; expected 1 to {}", state.max_ids),
        );
    }
    let worker = state.clone();
    let name = ns.as_str().to_owned();
    let issued = tokio::task::spawn_blocking(move || -> Result<Vec<cosid::Id>, IdsError> {
        let rt = runtime(&worker, &name)?;
        Ok(rt.next_ids(n)?)
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
        Ok(Err(IdsError::Full)) => refused(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "this server already serves ids for {} namespaces (--max-id-namespaces); retry later",
                state.bounds.max_id_namespaces
            ),
        ),
        Ok(Err(IdsError::Id(e))) => id_failed(&e),
        Err(e) => refused(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

enum IdsError {
    /// Every `/ids` runtime the server may run is running.
    Full,
    Id(cosid::Error),
}

impl From<cosid::Error> for IdsError {
    fn from(e: cosid::Error) -> Self {
        IdsError::Id(e)
    }
}

fn id_failed(e: &cosid::Error) -> Response {
    if let cosid::Error::Store(e) = e {
        return failed(e);
    }
    let code = ErrorCode::of(e);
    let mut r = json(
        StatusCode::SERVICE_UNAVAILABLE,
        &serde_json::json!({
            "error": { "kind": "id", "code": code.name(), "message": e.to_string() },
            "message": e.to_string(),
            "code": code.name(),
        }),
    );
    r.extensions_mut().insert(Code(code.name().to_owned()));
    r
}

/// The runtime of `namespace`, started (and its slot acquired) on first use.
fn runtime(state: &Arc<State>, namespace: &str) -> Result<Arc<Runtime>, IdsError> {
    let cell = {
        let mut map = state.runtimes.lock().unwrap_or_else(|e| e.into_inner());
        if !map.contains_key(namespace) && map.len() >= state.bounds.max_id_namespaces {
            return Err(IdsError::Full);
        }
        map.entry(namespace.to_owned()).or_default().clone()
    };
    cell.touch();
    // Only this namespace's requests wait while its runtime acquires a slot.
    let mut slot = cell.runtime.lock().unwrap_or_else(|e| e.into_inner());
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
        .build();
    match rt {
        Ok(rt) => {
            let rt = Arc::new(rt);
            *slot = Some(rt.clone());
            Ok(rt)
        }
        Err(e) => {
            // A start that failed leaves no runtime: the namespace's place is given back.
            drop(slot);
            drop_cell(state, namespace);
            Err(IdsError::Id(e))
        }
    }
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
        Err(e) => {
            tracing::warn!(error = %e, "not ready: the store does not answer");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("store {}: {e}\n", state.shown),
            )
                .into_response()
        }
    }
}

/// The dashboard page: no data in it, so it is served without a token; its script fetches `/v1/dashboard` with the
/// token the person enters.
async fn dashboard() -> Response {
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let policy = super::dashboard::policy(&nonce);
    (
        StatusCode::OK,
        [
            (axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (axum::http::header::CACHE_CONTROL, "no-store"),
            (axum::http::header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (axum::http::header::REFERRER_POLICY, "no-referrer"),
            (axum::http::header::CONTENT_SECURITY_POLICY, policy.as_str()),
        ],
        super::dashboard::page(&nonce),
    )
        .into_response()
}

/// Namespaces one `/v1/dashboard` request may name in `?ns=`.
const DASHBOARD_ASKED: usize = 32;

/// What the dashboard shows, as JSON: the namespaces of `?ns=` (each needs the token to open it: 403 otherwise), and
/// those this server watches or serves ids for that the token opens.
async fn dashboard_data(
    Shared(state): Shared<S>,
    headers: HeaderMap,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Response {
    let header = headers
        .get(axum::http::header::AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    if state.tokens.check(header, None) == Verdict::Unauthenticated {
        tried!(authorize(&state, &headers, None));
    }
    let mut names: Vec<String> = Vec::new();
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if k == "ns" && !v.is_empty() && !names.iter().any(|n| *n == v) {
            names.push(v.into_owned());
        }
    }
    if names.len() > DASHBOARD_ASKED {
        return refused(
            StatusCode::BAD_REQUEST,
            format!(
                "{} namespaces in ?ns=; expected at most {DASHBOARD_ASKED}",
                names.len()
            ),
        );
    }
    for name in &names {
        tried!(authorize(&state, &headers, Some(name)));
    }
    let opens = |ns: &str| state.tokens.check(header, Some(ns)) == Verdict::Allowed;
    let mut seen: Vec<String> = state.metrics.watched();
    seen.extend(state.held().into_keys());
    seen.sort();
    seen.dedup();
    let more: Vec<String> = seen
        .into_iter()
        .filter(|n| !names.contains(n) && opens(n))
        .collect();
    names.extend(more);
    let scope = super::dashboard::Scope {
        whole: state.tokens.check(header, None) == Verdict::Allowed,
        opens: &opens,
    };
    let data = super::dashboard::data(&state, &names, &scope).await;
    json(StatusCode::OK, &data)
}

/// Forgets the cell of `namespace` if no runtime was made in it.
fn drop_cell(state: &State, namespace: &str) {
    let mut map = state.runtimes.lock().unwrap_or_else(|e| e.into_inner());
    let empty = map
        .get(namespace)
        .is_some_and(|c| c.runtime.try_lock().map(|r| r.is_none()).unwrap_or(false));
    if empty {
        map.remove(namespace);
    }
}

/// Every few seconds: forgets the rate-limit buckets that are full again, stops idle `/ids` runtimes, and reads
/// the slots of the namespaces the server has served, for `/metrics` and the dashboard.
pub async fn housekeeping(state: S) {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        state.limits.forget_idle();
        let s = state.clone();
        let _ = tokio::task::spawn_blocking(move || s.stop_idle()).await;
        for name in state.metrics.watched() {
            let Ok(ns) = Namespace::new(name.clone()) else {
                continue;
            };
            if let Ok(i) = state.store.inspect(&ns).await {
                let held = i
                    .slots
                    .iter()
                    .filter(|r| r.owner.is_some() && r.expires_at >= i.store_now)
                    .count() as u64;
                let capacity = i.namespace.as_ref().map_or(0, |r| 1u64 << r.bits);
                state
                    .metrics
                    .occupancy(&name, super::metrics::Occupancy { capacity, held });
            }
        }
    }
}
