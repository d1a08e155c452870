//! `cosid serve`: the lease API over HTTP, in front of any lease store.
//!
//! The server holds no lease state: each request is one call on the store behind it, so several servers behind a
//! load balancer are as safe as one. `docs/serve.md` describes the paths and the wire format
//! (`cosid::store::http::wire`, shared with the `http://` store).

mod api;
mod auth;
mod dashboard;
mod metrics;
mod tls;

use crate::failure::Failure;
use cosid::Config;
use std::net::SocketAddr;
use std::sync::Arc;

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

    /// Requests per second served, over all clients (0: no limit); past it, 429
    #[arg(long, value_name = "N", default_value_t = 0)]
    rate_limit: u32,

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
    let (url, shown) = crate::settings::store_url(config)?;
    if url == cosid::store::StoreUrl::Memory {
        // Leases in the server's memory would be lost with it, and each replica would have its own.
        return Err(Failure::usage(
            "CONFIG",
            "cosid serve keeps no leases of its own: put it in front of a durable store (sqlite://, redis://, ...), not memory:",
        ));
    }
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
        });
        let mut app = api::router(state.clone(), args.max_body);
        if args.rate_limit > 0 {
            let bucket = Arc::new(limit::Bucket::new(args.rate_limit));
            app = app.layer(axum::middleware::from_fn(move |req, next| {
                limit::limited(bucket.clone(), req, next)
            }));
        }
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .map_err(|e| {
                Failure::runtime("LISTEN", format!("cannot listen on {}: {e}", args.listen))
            })?;
        let local = listener.local_addr()?;
        match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => {
                let acceptor = tls::acceptor(cert, key).map_err(|e| Failure::usage("CONFIG", e))?;
                // The one line on stdout: tests and scripts read the address from it.
                println!("cosid serve: listening on https://{local} (store {shown})");
                axum::serve(tls::TlsListener::new(listener, acceptor)?, app)
                    .with_graceful_shutdown(shutdown_signal())
                    .await?;
            }
            _ => {
                println!("cosid serve: listening on http://{local} (store {shown})");
                axum::serve(listener, app)
                    .with_graceful_shutdown(shutdown_signal())
                    .await?;
            }
        }
        // The slots of the runtimes of /v1/ids go back to the store, each with its last timestamp.
        let _ = tokio::task::spawn_blocking(move || state.release_all()).await;
        eprintln!("cosid serve: stopped");
        Ok(())
    })
}

mod limit {
    //! A token bucket over all requests (`--rate-limit`).

    use axum::extract::Request;
    use axum::middleware::Next;
    use axum::response::Response;
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    /// `rate` tokens a second, as many at most.
    #[derive(Debug)]
    pub struct Bucket {
        rate: f64,
        state: Mutex<(f64, Instant)>,
    }

    impl Bucket {
        pub fn new(rate: u32) -> Self {
            Self {
                rate: f64::from(rate),
                state: Mutex::new((f64::from(rate), Instant::now())),
            }
        }

        fn take(&self) -> bool {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            s.0 = (s.0 + now.duration_since(s.1).as_secs_f64() * self.rate).min(self.rate);
            s.1 = now;
            if s.0 >= 1.0 {
                s.0 -= 1.0;
                true
            } else {
                false
            }
        }
    }

    pub async fn limited(bucket: Arc<Bucket>, req: Request, next: Next) -> Response {
        if bucket.take() {
            next.run(req).await
        } else {
            let mut r = super::api::refused(
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                "rate limit reached; retry later".into(),
            );
            r.headers_mut()
                .insert("retry-after", axum::http::HeaderValue::from_static("1"));
            r
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
