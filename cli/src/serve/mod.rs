//! `cosid serve`: the lease API over HTTP, in front of any lease store.
//!
//! The server holds no lease state: each request is one call on the store behind it, so several servers behind a
//! load balancer are as safe as one. `docs/serve.md` describes the paths and the wire format
//! (`cosid::store::http::wire`, shared with the `http://` store).

mod api;

use crate::failure::Failure;
use cosid::Config;
use std::net::SocketAddr;
use std::sync::Arc;

/// Options of `cosid serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on (port 0: any free port; the address is printed)
    #[arg(long, value_name = "ADDR", env = "COSID_SERVE_LISTEN", default_value = "127.0.0.1:7468")]
    listen: SocketAddr,

    /// Largest request body accepted, in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 64 * 1024)]
    max_body: usize,
}

/// Opens the store and serves until SIGINT or SIGTERM.
pub fn run(args: &Args, config: &Config) -> Result<(), Failure> {
    let (url, shown) = crate::settings::store_url(config)?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime("RUNTIME", format!("cannot start an async runtime: {e}")))?;
    tokio.block_on(async {
        let store = cosid::store::open(&url, config.clock.clone())
            .await
            .map_err(|e| Failure::from(cosid::Error::from(e)).context(&format!("store {shown}")))?;
        let state = Arc::new(api::State {
            store,
            shown: shown.clone(),
        });
        let app = api::router(state, args.max_body);
        let listener = tokio::net::TcpListener::bind(args.listen).await.map_err(|e| {
            Failure::runtime("LISTEN", format!("cannot listen on {}: {e}", args.listen))
        })?;
        let local = listener.local_addr()?;
        // The one line on stdout: tests and scripts read the address from it.
        println!("cosid serve: listening on http://{local} (store {shown})");
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown_signal())
            .await?;
        eprintln!("cosid serve: stopped");
        Ok(())
    })
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
