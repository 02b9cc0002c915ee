//! Accepting HTTP connections within bounds, so no client can hold the server.
//!
//! `axum::serve` waits on every client forever: an idle or half-sent connection
//! holds a descriptor for as long as the client likes (300 of them starve a
//! server with a 256-descriptor limit, before any token is checked), and a
//! graceful shutdown waits for a half-sent request that never completes. Here:
//!
//! - a connection must send a whole request head within [`Limits::header_read`]
//!   of opening, and again of its previous response (idle keep-alive included;
//!   hyper's header-read timer starts when it begins waiting for a head);
//! - at most [`Limits::max_connections`] are served at once; the rest wait in
//!   the kernel's backlog, costing this process no descriptor;
//! - on shutdown the listener closes, every connection is asked to finish its
//!   response and close, and after [`Limits::shutdown_grace`] whatever remains
//!   is dropped. Long-lived responses (the version streams) end on their own
//!   when the shutdown token is cancelled.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The bounds every connection is held to.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time allowed to send a request head, from opening or from the previous response.
    pub header_read: Duration,
    /// Connections served at once.
    pub max_connections: usize,
    /// How long shutdown waits for open connections before dropping them.
    pub shutdown_grace: Duration,
}

/// Descriptors kept free for files, pipes and the blocking pool when the
/// connection cap is derived from the process's descriptor limit.
const RESERVED_DESCRIPTORS: u64 = 64;

impl Limits {
    /// The defaults: 10 s for a request head, 3 s of shutdown grace, and at most
    /// 512 connections — fewer when the descriptor limit is low (half of what
    /// remains after [`RESERVED_DESCRIPTORS`], at least 8).
    pub fn standard() -> Self {
        let nofile = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map(|(soft, _)| soft)
            .unwrap_or(1024);
        let by_fds = (nofile.saturating_sub(RESERVED_DESCRIPTORS) / 2).max(8);
        Self {
            header_read: Duration::from_secs(10),
            max_connections: by_fds.min(512) as usize,
            shutdown_grace: Duration::from_secs(3),
        }
    }
}

/// Serves `router` on `listener` until `shutdown` is cancelled, then closes
/// within `limits.shutdown_grace`.
pub async fn serve(listener: TcpListener, router: Router, limits: Limits, shutdown: CancellationToken) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let conns = TaskTracker::new();
    let closing = CancellationToken::new();
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            _ = shutdown.cancelled() => break,
        };
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors (EMFILE) and the like: wait for some to free up.
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        let (stream, peer) = stream;
        let _ = stream.set_nodelay(true);
        // Each request knows who sent it (the audit log's `from`).
        let service = TowerToHyperService::new(tower::ServiceExt::map_request(
            router.clone(),
            move |mut req: hyper::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(axum::extract::ConnectInfo(peer));
                req
            },
        ));
        let closing = closing.clone();
        conns.spawn(async move {
            let _permit = permit;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new()).header_read_timeout(limits.header_read).keep_alive(true);
            let conn = http.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = closing.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    drop(listener);
    closing.cancel();
    conns.close();
    if tokio::time::timeout(limits.shutdown_grace, conns.wait()).await.is_err() {
        tracing::warn!(
            "{} connection(s) still open {:?} after shutdown began; dropping them",
            conns.len(),
            limits.shutdown_grace
        );
    }
}
