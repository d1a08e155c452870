//! The part of an etcd v3 client that the store uses, over etcd's JSON gateway: `POST /v3/kv/txn`, `/v3/kv/range`
//! and `/v3/auth/authenticate` on the client port (served by every etcd from 3.4 on, unless started with
//! `--enable-grpc-gateway=false`), HTTP/1.1 through `reqwest`.
//!
//! The gateway speaks the gRPC API's messages as JSON: bytes in base64, 64-bit integers as strings (numbers are
//! accepted too), enums by name, zero values left out of replies. Its errors are a JSON body with the gRPC status
//! code and message, which [`Error::GRpcStatus`] carries, so the store classifies them as it would a gRPC status.
//!
//! Requests go to one endpoint at a time, starting from the one that answered last; a request that gets no
//! answer (a transport error, a timeout) or an "unavailable" answer moves on to the next. With credentials, the
//! client authenticates for a token, sends it with every request, and authenticates again (once) when etcd says
//! the token is no longer valid. Neither the password nor the token ever appears in an error.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The gRPC status code UNAVAILABLE: the member cannot serve (no leader, stopping): another one may.
const UNAVAILABLE: i32 = 14;

/// An error of a request to etcd.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// No answer: no connection, a connection lost, a timeout, an unreadable transfer.
    #[error("no answer from etcd: {0}")]
    Transport(String),
    /// etcd's answer: a gRPC status, as the gateway's error body carries it.
    #[error("etcd answered {}: {}", code_name(.0.code), .0.message)]
    GRpcStatus(Status),
    /// An HTTP error whose body is not the gateway's (a proxy in between, or not an etcd client port).
    #[error("HTTP {status} from etcd: {body}")]
    Http { status: u16, body: String },
    /// A reply past the size limit.
    #[error("etcd's reply is larger than the limit of {0} bytes")]
    TooLarge(usize),
    /// A reply that is not what the gateway sends.
    #[error("etcd's reply cannot be read: {0}")]
    Decode(String),
    /// The client could not be set up.
    #[error("the etcd client cannot be set up: {0}")]
    Setup(String),
}

/// A gRPC status from the gateway.
#[derive(Debug)]
pub(crate) struct Status {
    code: i32,
    message: String,
}

impl Status {
    pub(crate) fn code(&self) -> i32 {
        self.code
    }

    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// etcd no longer accepts the token sent (expired, or the member restarted): authenticate again.
    fn is_stale_token(&self) -> bool {
        ["invalid auth token", "token expired", "token is expired"]
            .iter()
            .any(|m| self.message.contains(m))
    }
}

fn code_name(code: i32) -> String {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    match usize::try_from(code).ok().and_then(|c| NAMES.get(c)) {
        Some(name) => format!("{name} ({code})"),
        None => format!("status {code}"),
    }
}

impl Error {
    /// Whether another endpoint may answer where this one did not.
    fn try_another(&self) -> bool {
        match self {
            Error::Transport(_) => true,
            Error::GRpcStatus(s) => s.code == UNAVAILABLE,
            Error::Http { status, .. } => matches!(status, 502..=504),
            _ => false,
        }
    }
}

/// How the client connects: credentials, timeouts, and whether requests need a leader.
#[derive(Clone, Default)]
pub(crate) struct ConnectOptions {
    user: Option<(String, String)>,
    connect_timeout: Option<Duration>,
    timeout: Option<Duration>,
    require_leader: bool,
}

impl ConnectOptions {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn with_user(mut self, name: String, password: String) -> Self {
        self.user = Some((name, password));
        self
    }

    pub(crate) fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// How long one request (its reply read in full) may take.
    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Requests fail as unavailable on a member that has no leader, instead of answering from its own data.
    pub(crate) fn with_require_leader(mut self, require: bool) -> Self {
        self.require_leader = require;
        self
    }
}

/// A client of an etcd cluster. Cloning shares its connections and its token.
#[derive(Clone)]
pub(crate) struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    /// `http://host:port`, one per member.
    endpoints: Vec<String>,
    user: Option<(String, String)>,
    require_leader: bool,
    token: Mutex<Option<String>>,
    /// The endpoint to try first: the one that answered last (or the one after one that failed).
    next: AtomicUsize,
}

impl Client {
    /// A client of the members at `endpoints` (`host:port`); authenticates first when `options` hold credentials.
    pub(crate) async fn connect(
        endpoints: &[String],
        options: Option<ConnectOptions>,
    ) -> Result<Self, Error> {
        let options = options.unwrap_or_default();
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("cosid/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            // Plain HTTP only: no certificate store to load.
            .tls_built_in_root_certs(false);
        if let Some(t) = options.connect_timeout {
            builder = builder.connect_timeout(t);
        }
        if let Some(t) = options.timeout {
            builder = builder.timeout(t);
        }
        let http = builder.build().map_err(|e| Error::Setup(describe(&e)))?;
        if endpoints.is_empty() {
            return Err(Error::Setup("no endpoint".into()));
        }
        let client = Client {
            inner: Arc::new(Inner {
                http,
                endpoints: endpoints.iter().map(|e| format!("http://{e}")).collect(),
                user: options.user,
                require_leader: options.require_leader,
                token: Mutex::new(None),
                next: AtomicUsize::new(0),
            }),
        };
        if client.inner.user.is_some() {
            client.authenticate().await?;
        }
        Ok(client)
    }

    /// The key-value API, with replies of at most [`usize::MAX`] bytes until told otherwise.
    pub(crate) fn kv_client(&self) -> KvClient {
        KvClient {
            client: self.clone(),
            max_reply: usize::MAX,
        }
    }

    /// Gets a token for the credentials and keeps it for the requests that follow.
    async fn authenticate(&self) -> Result<(), Error> {
        #[derive(Deserialize)]
        struct Reply {
            #[serde(default)]
            token: String,
        }
        let Some((name, password)) = &self.inner.user else {
            return Ok(());
        };
        let body = json!({ "name": name, "password": password });
        let reply: Reply = self
            .post("/v3/auth/authenticate", &body, None, 1 << 20)
            .await?;
        *self.inner.token.lock().unwrap_or_else(|e| e.into_inner()) =
            (!reply.token.is_empty()).then_some(reply.token);
        Ok(())
    }

    fn token(&self) -> Option<String> {
        self.inner
            .token
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Posts `body` to `path` with the token, authenticating again once if etcd no longer accepts it.
    async fn call<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &Value,
        max_reply: usize,
    ) -> Result<T, Error> {
        let token = self.token();
        match self.post(path, body, token.as_deref(), max_reply).await {
            Err(Error::GRpcStatus(s)) if self.inner.user.is_some() && s.is_stale_token() => {
                self.authenticate().await?;
                let token = self.token();
                self.post(path, body, token.as_deref(), max_reply).await
            }
            other => other,
        }
    }

    /// Posts `body` to `path` on one endpoint after another, from the one that answered last, until one answers.
    async fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &Value,
        token: Option<&str>,
        max_reply: usize,
    ) -> Result<T, Error> {
        let body = serde_json::to_vec(body).map_err(|e| Error::Setup(e.to_string()))?;
        let n = self.inner.endpoints.len();
        let first = self.inner.next.load(Ordering::Relaxed) % n;
        let mut failed = None;
        for i in 0..n {
            let at = (first + i) % n;
            match self.post_to(at, path, &body, token, max_reply).await {
                Err(e) if e.try_another() => {
                    // Later requests start past it (unless another request found it answering meanwhile).
                    let _ = self.inner.next.compare_exchange(
                        at,
                        (at + 1) % n,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    );
                    failed = Some(e);
                }
                answered => {
                    self.inner.next.store(at, Ordering::Relaxed);
                    let reply = answered?;
                    return serde_json::from_slice(&reply)
                        .map_err(|e| Error::Decode(e.to_string()));
                }
            }
        }
        Err(failed.unwrap_or_else(|| Error::Setup("no endpoint".into())))
    }

    /// Posts `body` to `path` on endpoint `at`: the reply's body, or the error it carries.
    async fn post_to(
        &self,
        at: usize,
        path: &str,
        body: &[u8],
        token: Option<&str>,
        max_reply: usize,
    ) -> Result<Vec<u8>, Error> {
        let url = format!("{}{path}", self.inner.endpoints[at]);
        let mut request = self
            .inner
            .http
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(token) = token {
            request = request.header(reqwest::header::AUTHORIZATION, token);
        }
        if self.inner.require_leader {
            // gRPC metadata through the gateway: etcd refuses the request on a member with no leader.
            request = request.header("grpc-metadata-hasleader", "true");
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| Error::Transport(describe(&e)))?;
        let status = response.status().as_u16();
        if response
            .content_length()
            .is_some_and(|len| len > max_reply as u64)
        {
            return Err(Error::TooLarge(max_reply));
        }
        let mut reply = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| Error::Transport(describe(&e)))?
        {
            if reply.len() + chunk.len() > max_reply {
                return Err(Error::TooLarge(max_reply));
            }
            reply.extend_from_slice(&chunk);
        }
        if (200..300).contains(&status) {
            return Ok(reply);
        }
        #[derive(Deserialize)]
        struct ErrorBody {
            code: i32,
            #[serde(default)]
            message: String,
            #[serde(default)]
            error: String,
        }
        match serde_json::from_slice::<ErrorBody>(&reply) {
            Ok(e) => Err(Error::GRpcStatus(Status {
                code: e.code,
                message: if e.message.is_empty() {
                    e.error
                } else {
                    e.message
                },
            })),
            Err(_) => {
                let text: String = String::from_utf8_lossy(&reply).chars().take(200).collect();
                Err(Error::Http {
                    status,
                    body: text.trim().to_owned(),
                })
            }
        }
    }
}

/// A reqwest error with its causes (its own message names the URL, which holds no credentials).
fn describe(e: &reqwest::Error) -> String {
    let mut out = e.to_string();
    if e.is_timeout() {
        out.push_str(" (timed out)");
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// The key-value API of a [`Client`].
#[derive(Clone)]
pub(crate) struct KvClient {
    client: Client,
    max_reply: usize,
}

impl KvClient {
    /// Refuses replies larger than `limit` bytes.
    pub(crate) fn max_decoding_message_size(mut self, limit: usize) -> Self {
        self.max_reply = limit;
        self
    }

    /// A range read.
    pub(crate) async fn get(
        &self,
        key: impl Into<Vec<u8>>,
        options: Option<GetOptions>,
    ) -> Result<GetResponse, Error> {
        let request = options.unwrap_or_default().request(key.into());
        self.client
            .call("/v3/kv/range", &request, self.max_reply)
            .await
    }

    /// A transaction.
    pub(crate) async fn txn(&self, txn: Txn) -> Result<TxnResponse, Error> {
        let request = json!({
            "compare": txn.compare.iter().map(Compare::request).collect::<Vec<_>>(),
            "success": txn.success.into_iter().map(TxnOp::request).collect::<Vec<_>>(),
        });
        self.client
            .call("/v3/kv/txn", &request, self.max_reply)
            .await
    }
}

fn b64(bytes: &[u8]) -> Value {
    Value::String(STANDARD.encode(bytes))
}

/// The first key after every key that begins with `key` (`[0]`, every key, when there is none).
pub(crate) fn prefix_end(key: &[u8]) -> Vec<u8> {
    let mut end = key.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// Where a range ends.
#[derive(Clone, Debug, Default)]
enum RangeEnd {
    /// The key alone.
    #[default]
    Key,
    /// Every key that begins with the key.
    Prefix,
    /// Every key from the key up to this one (excluded).
    Until(Vec<u8>),
}

impl RangeEnd {
    /// The request's `key` and `range_end` for `key`.
    fn apply(&self, key: Vec<u8>, request: &mut Map<String, Value>) {
        let (key, end) = match self {
            RangeEnd::Key => (key, None),
            // etcd's spelling of every key: from `\0` to `\0`.
            RangeEnd::Prefix if key.is_empty() => (vec![0], Some(vec![0])),
            RangeEnd::Prefix => {
                let end = prefix_end(&key);
                (key, Some(end))
            }
            RangeEnd::Until(end) => (key, Some(end.clone())),
        };
        request.insert("key".into(), b64(&key));
        if let Some(end) = end {
            request.insert("range_end".into(), b64(&end));
        }
    }
}

/// What a range read reads.
#[derive(Clone, Debug, Default)]
pub(crate) struct GetOptions {
    end: RangeEnd,
    limit: i64,
    revision: i64,
    keys_only: bool,
    count_only: bool,
}

impl GetOptions {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Every key that begins with the key.
    pub(crate) fn with_prefix(mut self) -> Self {
        self.end = RangeEnd::Prefix;
        self
    }

    /// Every key from the key up to `end` (excluded).
    pub(crate) fn with_range(mut self, end: impl Into<Vec<u8>>) -> Self {
        self.end = RangeEnd::Until(end.into());
        self
    }

    /// At most `limit` keys (0: no limit).
    pub(crate) fn with_limit(mut self, limit: i64) -> Self {
        self.limit = limit;
        self
    }

    /// As of `revision` (0: the newest).
    pub(crate) fn with_revision(mut self, revision: i64) -> Self {
        self.revision = revision;
        self
    }

    pub(crate) fn with_keys_only(mut self) -> Self {
        self.keys_only = true;
        self
    }

    pub(crate) fn with_count_only(mut self) -> Self {
        self.count_only = true;
        self
    }

    /// A `RangeRequest` for `key`.
    fn request(&self, key: Vec<u8>) -> Value {
        let mut request = Map::new();
        self.end.apply(key, &mut request);
        if self.limit != 0 {
            request.insert("limit".into(), self.limit.to_string().into());
        }
        if self.revision != 0 {
            request.insert("revision".into(), self.revision.to_string().into());
        }
        if self.keys_only {
            request.insert("keys_only".into(), true.into());
        }
        if self.count_only {
            request.insert("count_only".into(), true.into());
        }
        Value::Object(request)
    }
}

/// What a delete deletes.
#[derive(Clone, Debug, Default)]
pub(crate) struct DeleteOptions {
    end: RangeEnd,
}

impl DeleteOptions {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Every key from the key up to `end` (excluded).
    pub(crate) fn with_range(mut self, end: impl Into<Vec<u8>>) -> Self {
        self.end = RangeEnd::Until(end.into());
        self
    }
}

/// Options of a put: none are used.
pub(crate) enum PutOptions {}

/// How a compare compares.
#[derive(Clone, Copy, Debug)]
pub(crate) enum CompareOp {
    Equal,
    Greater,
    Less,
}

#[derive(Clone, Copy, Debug)]
enum Target {
    Version,
    Mod,
}

/// One condition of a transaction: a key's version or mod revision against a number.
#[derive(Clone, Debug)]
pub(crate) struct Compare {
    key: Vec<u8>,
    end: RangeEnd,
    target: Target,
    op: CompareOp,
    number: i64,
}

impl Compare {
    /// The mod revision of `key` (of every key in its range) against `revision`.
    pub(crate) fn mod_revision(key: impl Into<Vec<u8>>, op: CompareOp, revision: i64) -> Self {
        Self {
            key: key.into(),
            end: RangeEnd::Key,
            target: Target::Mod,
            op,
            number: revision,
        }
    }

    /// The version of `key` (0: absent) against `version`.
    pub(crate) fn version(key: impl Into<Vec<u8>>, op: CompareOp, version: i64) -> Self {
        Self {
            key: key.into(),
            end: RangeEnd::Key,
            target: Target::Version,
            op,
            number: version,
        }
    }

    /// Compares every key that begins with the key.
    pub(crate) fn with_prefix(mut self) -> Self {
        self.end = RangeEnd::Prefix;
        self
    }

    fn request(&self) -> Value {
        let mut request = Map::new();
        self.end.apply(self.key.clone(), &mut request);
        let result = match self.op {
            CompareOp::Equal => "EQUAL",
            CompareOp::Greater => "GREATER",
            CompareOp::Less => "LESS",
        };
        let (target, field) = match self.target {
            Target::Version => ("VERSION", "version"),
            Target::Mod => ("MOD", "mod_revision"),
        };
        request.insert("result".into(), result.into());
        request.insert("target".into(), target.into());
        request.insert(field.into(), self.number.to_string().into());
        Value::Object(request)
    }
}

/// One operation of a transaction.
#[derive(Clone, Debug)]
pub(crate) enum TxnOp {
    Get(Vec<u8>, GetOptions),
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>, DeleteOptions),
}

impl TxnOp {
    pub(crate) fn get(key: impl Into<Vec<u8>>, options: Option<GetOptions>) -> Self {
        TxnOp::Get(key.into(), options.unwrap_or_default())
    }

    pub(crate) fn put(
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        options: Option<PutOptions>,
    ) -> Self {
        if let Some(never) = options {
            match never {}
        }
        TxnOp::Put(key.into(), value.into())
    }

    pub(crate) fn delete(key: impl Into<Vec<u8>>, options: Option<DeleteOptions>) -> Self {
        TxnOp::Delete(key.into(), options.unwrap_or_default())
    }

    fn request(self) -> Value {
        match self {
            TxnOp::Get(key, options) => json!({ "request_range": options.request(key) }),
            TxnOp::Put(key, value) => {
                json!({ "request_put": { "key": b64(&key), "value": b64(&value) } })
            }
            TxnOp::Delete(key, options) => {
                let mut request = Map::new();
                options.end.apply(key, &mut request);
                json!({ "request_delete_range": request })
            }
        }
    }
}

/// A transaction: its operations run if every compare holds.
#[derive(Clone, Debug, Default)]
pub(crate) struct Txn {
    compare: Vec<Compare>,
    success: Vec<TxnOp>,
}

impl Txn {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn when(mut self, compares: Vec<Compare>) -> Self {
        self.compare = compares;
        self
    }

    pub(crate) fn and_then(mut self, ops: Vec<TxnOp>) -> Self {
        self.success = ops;
        self
    }
}

/// A 64-bit integer of a reply: a string, as the gateway writes it, or a number.
fn int<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Int {
        Number(i64),
        Text(String),
    }
    match Int::deserialize(d)? {
        Int::Number(n) => Ok(n),
        Int::Text(s) => s.parse().map_err(D::Error::custom),
    }
}

/// Bytes of a reply: base64.
fn bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    let text = String::deserialize(d)?;
    STANDARD.decode(text).map_err(D::Error::custom)
}

/// The header of a reply.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ResponseHeader {
    #[serde(deserialize_with = "int")]
    revision: i64,
}

impl ResponseHeader {
    /// The store's revision when the request was served.
    pub(crate) fn revision(&self) -> i64 {
        self.revision
    }
}

/// A key with its value and mod revision.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct KeyValue {
    #[serde(deserialize_with = "bytes")]
    key: Vec<u8>,
    #[serde(deserialize_with = "bytes")]
    value: Vec<u8>,
    #[serde(deserialize_with = "int")]
    mod_revision: i64,
}

impl KeyValue {
    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    pub(crate) fn value(&self) -> &[u8] {
        &self.value
    }

    pub(crate) fn mod_revision(&self) -> i64 {
        self.mod_revision
    }
}

/// The answer to a range read.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct GetResponse {
    header: Option<ResponseHeader>,
    kvs: Vec<KeyValue>,
    more: bool,
}

impl GetResponse {
    pub(crate) fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    pub(crate) fn kvs(&self) -> &[KeyValue] {
        &self.kvs
    }

    /// Whether keys past the limit were left out.
    pub(crate) fn more(&self) -> bool {
        self.more
    }
}

/// The answer to one operation of a transaction.
#[derive(Debug)]
pub(crate) enum TxnOpResponse {
    Get(GetResponse),
    /// A put's or a delete's.
    Other,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ResponseOp {
    response_range: Option<GetResponse>,
}

/// The answer to a transaction.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TxnResponse {
    header: Option<ResponseHeader>,
    succeeded: bool,
    responses: Vec<ResponseOp>,
}

impl TxnResponse {
    pub(crate) fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    /// Whether every compare held (and so the operations ran).
    pub(crate) fn succeeded(&self) -> bool {
        self.succeeded
    }

    /// The answers of the operations, in order.
    pub(crate) fn op_responses(self) -> Vec<TxnOpResponse> {
        self.responses
            .into_iter()
            .map(|r| match r.response_range {
                Some(get) => TxnOpResponse::Get(get),
                None => TxnOpResponse::Other,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_the_gateways_json() {
        let txn = Txn::new()
            .when(vec![
                Compare::mod_revision("a/", CompareOp::Less, 8).with_prefix(),
                Compare::version(&b"k"[..], CompareOp::Equal, 0),
            ])
            .and_then(vec![
                TxnOp::get(
                    "p/",
                    Some(
                        GetOptions::new()
                            .with_prefix()
                            .with_limit(4)
                            .with_revision(7)
                            .with_keys_only(),
                    ),
                ),
                TxnOp::put("k", "", None),
                TxnOp::delete("a", Some(DeleteOptions::new().with_range("b"))),
            ]);
        let got = json!({
            "compare": txn.compare.iter().map(Compare::request).collect::<Vec<_>>(),
            "success": txn.success.into_iter().map(TxnOp::request).collect::<Vec<_>>(),
        });
        let want = json!({
            "compare": [
                {"key": "YS8=", "range_end": "YTA=", "result": "LESS", "target": "MOD", "mod_revision": "8"},
                {"key": "aw==", "result": "EQUAL", "target": "VERSION", "version": "0"},
            ],
            "success": [
                {"request_range": {"key": "cC8=", "range_end": "cDA=", "limit": "4", "revision": "7", "keys_only": true}},
                {"request_put": {"key": "aw==", "value": ""}},
                {"request_delete_range": {"key": "YQ==", "range_end": "Yg=="}},
            ],
        });
        assert_eq!(got, want);
        assert_eq!(
            GetOptions::new().with_prefix().request(Vec::new()),
            json!({"key": "AA==", "range_end": "AA=="})
        );
        assert_eq!(prefix_end(b"a\xff\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff"), vec![0]);
    }

    #[test]
    fn replies_read_strings_or_numbers_and_omitted_zeros() {
        let reply = r#"{"header":{"cluster_id":"1","revision":"30803","raft_term":"4"},"succeeded":true,
            "responses":[{"response_put":{"header":{"revision":"30803"}}},
            {"response_range":{"header":{"revision":"30803"},"kvs":[{"key":"enovYQ==","create_revision":"30803",
            "mod_revision":30803,"version":"1"}],"count":"1","more":true}},{"response_range":{}}]}"#;
        let resp: TxnResponse = serde_json::from_str(reply).unwrap();
        assert!(resp.succeeded());
        assert_eq!(resp.header().map(|h| h.revision()), Some(30803));
        let ops = resp.op_responses();
        assert!(matches!(ops[0], TxnOpResponse::Other));
        let TxnOpResponse::Get(get) = &ops[1] else {
            panic!("{ops:?}")
        };
        assert_eq!(get.kvs()[0].key(), b"zz/a");
        assert_eq!(get.kvs()[0].value(), b"");
        assert_eq!(get.kvs()[0].mod_revision(), 30803);
        assert!(get.more());
        let TxnOpResponse::Get(empty) = &ops[2] else {
            panic!("{ops:?}")
        };
        assert!(empty.kvs().is_empty() && !empty.more());
        // A failed transaction leaves `succeeded` out.
        let failed: TxnResponse = serde_json::from_str(r#"{"header":{"revision":"3"}}"#).unwrap();
        assert!(!failed.succeeded());
    }
}
