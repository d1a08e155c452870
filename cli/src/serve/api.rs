//! The routes of the lease API: `/v1/...`, JSON in and out, every store error as its wire form.

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State as Shared};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use cosid::lease::Namespace;
use cosid::store::http::wire;
use cosid::store::{LeaseStore, StoreError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::Arc;

/// What every request shares: the store, and nothing about leases.
#[derive(Debug)]
pub struct State {
    pub store: Arc<dyn LeaseStore>,
    /// The store URL as a person should see it.
    pub shown: String,
}

type S = Arc<State>;

/// The lease API.
pub fn router(state: S, max_body: usize) -> Router {
    Router::new()
        .route("/v1/store", get(store_info))
        .route("/v1/init", post(init))
        .route("/v1/namespaces/{ns}", get(read_namespace).put(create_namespace))
        .route("/v1/namespaces/{ns}/acquire", post(acquire))
        .route("/v1/namespaces/{ns}/renew", post(renew))
        .route("/v1/namespaces/{ns}/release", post(release))
        .route("/v1/namespaces/{ns}/slots", get(slots))
        .route("/v1/namespaces/{ns}/not_before", post(not_before))
        .fallback(|| async { refused(StatusCode::NOT_FOUND, "no such path; see docs/serve.md".into()) })
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(state)
}

/// A JSON answer.
fn json(status: StatusCode, value: &impl Serialize) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    (status, [(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response()
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
fn failed(e: &StoreError) -> Response {
    let status = StatusCode::from_u16(wire::status(e)).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json(status, &wire::ErrorBody::of(e))
}

fn answer<T: Serialize>(r: Result<T, StoreError>) -> Response {
    match r {
        Ok(v) => json(StatusCode::OK, &v),
        Err(e) => failed(&e),
    }
}

fn namespace(name: String) -> Result<Namespace, Response> {
    Namespace::new(name).map_err(|e| refused(StatusCode::BAD_REQUEST, e.to_string()))
}

fn body<T: DeserializeOwned>(bytes: &Bytes) -> Result<T, Response> {
    serde_json::from_slice(bytes)
        .map_err(|e| refused(StatusCode::BAD_REQUEST, format!("invalid request body: {e}")))
}

fn decoded<T>(r: Result<T, String>) -> Result<T, Response> {
    r.map_err(|e| refused(StatusCode::BAD_REQUEST, format!("invalid request body: {e}")))
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

async fn store_info(Shared(state): Shared<S>) -> Response {
    json(
        StatusCode::OK,
        &serde_json::json!({ "kind": state.store.kind(), "store": state.shown, "api": "v1" }),
    )
}

async fn init(Shared(state): Shared<S>) -> Response {
    answer(state.store.init().await.map(|()| serde_json::json!({})))
}

async fn acquire(Shared(state): Shared<S>, Path(ns): Path<String>, bytes: Bytes) -> Response {
    let ns = tried!(namespace(ns));
    let req: wire::AcquireBody = tried!(body(&bytes));
    let (config, request) = tried!(decoded(req.decode()));
    answer(
        state
            .store
            .acquire(&ns, &config, &request)
            .await
            .map(|a| wire::AcquiredBody::of(&a)),
    )
}

async fn renew(Shared(state): Shared<S>, Path(ns): Path<String>, bytes: Bytes) -> Response {
    let ns = tried!(namespace(ns));
    let req: wire::RenewBody = tried!(body(&bytes));
    let lease = tried!(lease_of(&ns, &req.lease));
    answer(
        state
            .store
            .renew(&lease, req.ttl_ms, req.tolerance_ms)
            .await
            .map(|l| wire::Lease::of(&l)),
    )
}

async fn release(Shared(state): Shared<S>, Path(ns): Path<String>, bytes: Bytes) -> Response {
    let ns = tried!(namespace(ns));
    let req: wire::ReleaseBody = tried!(body(&bytes));
    let lease = tried!(lease_of(&ns, &req.lease));
    answer(
        state
            .store
            .release(&lease, req.last_issued)
            .await
            .map(|()| serde_json::json!({})),
    )
}

async fn slots(Shared(state): Shared<S>, Path(ns): Path<String>) -> Response {
    let ns = tried!(namespace(ns));
    answer(
        state
            .store
            .inspect(&ns)
            .await
            .map(|i| wire::InspectionBody::of(&i)),
    )
}

/// The namespace record and the store's clock (`record` is null for a namespace never used).
async fn read_namespace(Shared(state): Shared<S>, Path(ns): Path<String>) -> Response {
    let ns = tried!(namespace(ns));
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
    Path(ns): Path<String>,
    bytes: Bytes,
) -> Response {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Create {
        config: wire::Config,
    }
    let ns = tried!(namespace(ns));
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

async fn not_before(Shared(state): Shared<S>, Path(ns): Path<String>, bytes: Bytes) -> Response {
    let ns = tried!(namespace(ns));
    let req: wire::NotBeforeBody = tried!(body(&bytes));
    let config = tried!(decoded(req.config.decode()));
    answer(
        state
            .store
            .raise_not_before(&ns, &config, req.not_before)
            .await
            .map(|r| wire::Record::of(&r)),
    )
}
