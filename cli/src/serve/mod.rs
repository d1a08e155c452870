//! `cosid serve`: the lease API over HTTP, in front of any lease store.
//!
//! The server holds no lease state: each request is one call on the store behind it, so several servers behind a
//! load balancer are as safe as one. `docs/serve.md` describes the paths and the wire format
//! (`cosid::store::http::wire`, shared with the `http://` store).

mod api;
mod auth;
mod capability;
mod conn;
mod dashboard;
mod limit;
mod log;
mod metrics;
mod tls;

use crate::failure::Failure;
use cosid::Config;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// A duration flag (`10s`, `500ms`, `5m`).
fn duration(v: &str) -> Result<Duration, String> {
    cosid::config::parse_duration("duration", v).map_err(|e| e.to_string())
}

/// Options of `cosid serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on (port 0: any free port; the address is printed)
    #[arg(
        long,
        value_name = "ADDR",
        env = "COSID_SERVE_LISTEN",
        default_value = "127.0.0.1:7468"
    )]
    listen: SocketAddr,

    /// Largest request body accepted, in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 64 * 1024)]
    max_body: usize,

    /// Bearer tokens, one `TOKEN [NAMESPACE]` a line (COSID_SERVE_TOKEN adds one for every namespace)
    #[arg(long, value_name = "PATH", env = "COSID_SERVE_TOKEN_FILE")]
    token_file: Option<std::path::PathBuf>,

    /// Requests per second per client (a token, or an address when no token is configured) and kind (renewals
    /// have a bucket of their own); past it, 429. 0: no limit
    #[arg(long, value_name = "N", default_value_t = 1000)]
    rate_limit: u32,

    /// Requests per second per address whose token is unknown (401s); past it, 429. 0: no limit
    #[arg(long, value_name = "N", default_value_t = 20)]
    auth_failure_limit: u32,

    /// Connections open at once, in all; past it, new connections are closed at once
    #[arg(long, value_name = "N", default_value_t = 1024)]
    max_connections: usize,

    /// Connections open at once from one client address (0: no cap; raise it behind a load balancer)
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_connections_per_client: usize,

    /// Time a client has to send a request's headers (and to finish a TLS handshake); a connection that sends
    /// nothing for that long between requests is closed too
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration)]
    header_timeout: Duration,

    /// Time a client has to send a request's body
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration)]
    body_timeout: Duration,

    /// A connection that moves no byte for that long is closed, whatever it is doing
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = duration)]
    idle_timeout: Duration,

    /// Farthest a `not_before` may be set past the store's clock
    #[arg(long, value_name = "DURATION", default_value = "1d", value_parser = duration)]
    max_not_before_ahead: Duration,

    /// Namespaces that GET /v1/namespaces/{ns}/ids serves at once (each holds a runtime and a slot)
    #[arg(long, value_name = "N", default_value_t = 64)]
    max_id_namespaces: usize,

    /// A runtime of GET .../ids that has issued nothing for that long is stopped, and its slot released
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = duration)]
    id_idle_timeout: Duration,

    /// Log lines as `text` or `json` (one object a line), on stderr
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    log_format: String,

    /// Serve HTTPS with this PEM certificate chain (with --tls-key)
    #[arg(long, value_name = "PATH", requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,

    /// The PEM private key of --tls-cert
    #[arg(long, value_name = "PATH", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,

    /// Largest `n` of one GET /v1/namespaces/{ns}/ids
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    max_ids: usize,
}

/// Opens the store and serves until SIGINT or SIGTERM.
pub fn run(args: &Args, config: &Config) -> Result<(), Failure> {
    log::init(&args.log_format);
    let (url, shown) = crate::settings::store_url(config)?;
    if url == cosid::store::StoreUrl::Memory {
        // Leases in the server's memory would be lost with it, and each replica would have its own.
        return Err(Failure::usage(
            "CONFIG",
            "cosid serve keeps no leases of its own: put it in front of a durable store (sqlite://, redis://, ...), not memory:",
        ));
    }
    if args.max_connections == 0 || args.max_id_namespaces == 0 {
        return Err(Failure::usage(
            "CONFIG",
            "--max-connections and --max-id-namespaces must be at least 1",
        ));
    }
    // Names this server in the requests it makes to an `http://` store, so a chain that comes back to it is
    // refused at once.
    let instance = uuid::Uuid::new_v4().simple().to_string();
    cosid::store::http::set_serve_instance(instance.clone());
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime("RUNTIME", format!("cannot start an async runtime: {e}")))?;
    tokio.block_on(async {
        let store = cosid::store::open(&url, config.clock.clone())
            .await
            .map_err(|e| Failure::from(cosid::Error::from(e)).context(&format!("store {shown}")))?;
        let tokens = auth::Tokens::load(
            args.token_file.as_deref(),
            std::env::var("COSID_SERVE_TOKEN").ok(),
        )
        .map_err(|e| Failure::usage("CONFIG", e))?;
        let state = Arc::new(api::State {
            store,
            shown: shown.clone(),
            tokens,
            metrics: Arc::default(),
            config: config.clone(),
            runtimes: Default::default(),
            max_ids: args.max_ids,
            events: Default::default(),
            limits: limit::Limits::new(args.rate_limit, args.auth_failure_limit),
            bounds: api::Bounds {
                max_not_before_ahead_ms: u64::try_from(args.max_not_before_ahead.as_millis())
                    .unwrap_or(u64::MAX),
                max_id_namespaces: args.max_id_namespaces,
                id_idle: args.id_idle_timeout,
            },
            instance,
        });
        let app = api::router(state.clone(), args.max_body, args.body_timeout);
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .map_err(|e| {
                Failure::runtime("LISTEN", format!("cannot listen on {}: {e}", args.listen))
            })?;
        let local = listener.local_addr()?;
        let tls = match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => {
                Some(tls::acceptor(cert, key).map_err(|e| Failure::usage("CONFIG", e))?)
            }
            _ => None,
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        // The one line on stdout: tests and scripts read the address from it.
        println!("cosid serve: listening on {scheme}://{local} (store {shown})");
        tracing::info!(
            address = %format!("{scheme}://{local}"),
            store = %shown,
            version = env!("CARGO_PKG_VERSION"),
            tokens = state.tokens.count(),
            rate_limit = args.rate_limit,
            auth_failure_limit = args.auth_failure_limit,
            max_connections = args.max_connections,
            max_connections_per_client = args.max_connections_per_client,
            header_timeout = %humantime(args.header_timeout),
            body_timeout = %humantime(args.body_timeout),
            idle_timeout = %humantime(args.idle_timeout),
            max_body = args.max_body,
            max_ids = args.max_ids,
            max_id_namespaces = args.max_id_namespaces,
            id_idle_timeout = %humantime(args.id_idle_timeout),
            max_not_before_ahead = %humantime(args.max_not_before_ahead),
            "cosid serve started"
        );
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(None::<String>);
        tokio::spawn(api::housekeeping(state.clone()));
        if matches!(url, cosid::store::StoreUrl::Http(_)) {
            tokio::spawn(refuse_a_loop(state.clone(), stop_tx.clone()));
        }
        let limits = conn::Limits {
            max_connections: args.max_connections,
            max_per_address: args.max_connections_per_client,
            header_timeout: args.header_timeout,
            idle_timeout: args.idle_timeout,
        };
        let mut stopped = stop_rx.clone();
        let stop = async move {
            tokio::select! {
                () = shutdown_signal() => {}
                _ = stopped.changed() => {}
            }
        };
        conn::serve(listener, tls, app, limits, state.metrics.clone(), stop).await;
        // The slots of the runtimes of /v1/ids go back to the store, each with its last timestamp.
        let _ = tokio::task::spawn_blocking({
            let state = state.clone();
            move || state.release_all()
        })
        .await;
        let failure = stop_rx.borrow().clone();
        match failure {
            Some(message) => Err(Failure::usage("CONFIG", message)),
            None => {
                tracing::info!("cosid serve stopped");
                Ok(())
            }
        }
    })
}

fn humantime(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

/// Stops the server when its `http://` store leads back to it (itself, or a chain of servers that comes back to
/// it): every request would be refused with `LOOP` anyway.
async fn refuse_a_loop(state: Arc<api::State>, stop: tokio::sync::watch::Sender<Option<String>>) {
    let probe = cosid::lease::Namespace::new("cosid-readyz").expect("a valid name");
    for _ in 0..50 {
        match state.store.inspect(&probe).await {
            Err(cosid::store::StoreError::InvalidSettings { detail })
                if detail.contains("loops back") =>
            {
                let message = format!(
                    "the store {} leads back to this server: {detail}",
                    state.shown
                );
                tracing::error!("{message}");
                let _ = stop.send(Some(message));
                return;
            }
            Err(cosid::store::StoreError::Unavailable { .. }) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            _ => return,
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}
