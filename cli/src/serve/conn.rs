//! The connections of `cosid serve`: an accept loop with a connection cap (in all and per client address), hyper's
//! HTTP/1 server with its header-read timeout, a TLS handshake bounded by the same timeout, and an idle timeout
//! (no byte read or written for that long closes the connection). A client that opens connections and sends
//! nothing, or half a request, holds them for the header timeout at most and never more than its share.

use super::metrics::Metrics;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

/// The limits of connections (`--max-connections`, `--max-connections-per-client`, `--header-timeout`,
/// `--idle-timeout`).
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_connections: usize,
    /// 0: no cap per address.
    pub max_per_address: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
}

/// The address of the client of a request (a request extension).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// How long the requests in flight may take to finish once a shutdown begins.
const DRAIN: Duration = Duration::from_secs(30);

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Serves `app` on `listener` until `shutdown` resolves, then lets the requests in flight finish (for [`DRAIN`] at
/// most).
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    app: Router,
    limits: Limits,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()>,
) {
    let total = Arc::new(Semaphore::new(limits.max_connections));
    let per_address: Arc<Mutex<HashMap<IpAddr, usize>>> = Arc::default();
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors, say: wait rather than spin.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = total.clone().try_acquire_owned() else {
            metrics.connection_refused("max_connections");
            tracing::warn!(client = %peer.ip(), "connection refused: --max-connections reached");
            continue;
        };
        let Some(share) = Share::take(&per_address, peer.ip(), limits.max_per_address) else {
            metrics.connection_refused("max_connections_per_client");
            tracing::warn!(client = %peer.ip(), "connection refused: --max-connections-per-client reached");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (app, tls, http, watcher, limits) = (
            app.clone(),
            tls.clone(),
            http.clone(),
            graceful.watcher(),
            limits.clone(),
        );
        tokio::spawn(async move {
            let _held = (permit, share);
            let io: Box<dyn Io> = match tls {
                Some(acceptor) => {
                    match tokio::time::timeout(limits.header_timeout, acceptor.accept(stream)).await
                    {
                        Ok(Ok(s)) => Box::new(s),
                        _ => return,
                    }
                }
                None => Box::new(stream),
            };
            let activity = Arc::new(Activity::new());
            let io = Watched {
                inner: io,
                activity: activity.clone(),
            };
            let service = hyper::service::service_fn(
                move |mut req: hyper::Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(Peer(peer));
                    app.clone().oneshot(req.map(axum::body::Body::new))
                },
            );
            let conn = watcher.watch(http.serve_connection(TokioIo::new(io), service));
            tokio::pin!(conn);
            let check = (limits.idle_timeout / 4).max(Duration::from_millis(50));
            loop {
                tokio::select! {
                    _ = &mut conn => break,
                    () = tokio::time::sleep(check) => {
                        if activity.idle() >= limits.idle_timeout {
                            // Dropping the connection closes it.
                            tracing::debug!(client = %peer, "idle connection closed");
                            break;
                        }
                    }
                }
            }
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(DRAIN, graceful.shutdown()).await;
}

/// A client address's count of open connections, given back on drop.
struct Share {
    counts: Arc<Mutex<HashMap<IpAddr, usize>>>,
    addr: IpAddr,
}

impl Share {
    fn take(
        counts: &Arc<Mutex<HashMap<IpAddr, usize>>>,
        addr: IpAddr,
        max: usize,
    ) -> Option<Share> {
        let mut map = counts.lock().unwrap_or_else(|e| e.into_inner());
        let n = map.entry(addr).or_insert(0);
        if max != 0 && *n >= max {
            return None;
        }
        *n += 1;
        Some(Share {
            counts: counts.clone(),
            addr,
        })
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut map = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get_mut(&self.addr) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.addr);
            }
        }
    }
}

/// When a connection last moved a byte.
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(now, Ordering::Relaxed);
    }

    fn idle(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }
}

/// A connection's I/O that notes each byte moved in its [`Activity`].
struct Watched {
    inner: Box<dyn Io>,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
