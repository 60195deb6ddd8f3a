//! The operator's HTTP endpoints (`orrery-operator controller --listen ADDR`, default
//! `0.0.0.0:8080`), for the kubelet's probes and for Prometheus:
//!
//! - `GET /metrics`: the Prometheus text of [`Metrics`].
//! - `GET /healthz`: liveness. `200 ok` while the process serves at all; it never depends on
//!   the cluster, so an apiserver outage does not get every operator pod restarted.
//! - `GET /readyz`: readiness, `200` or `503` with a one-line reason. Ready means *this
//!   process does what its role needs*:
//!   - not yet connected to the cluster (the apiserver has not answered): `503`;
//!   - a standby (another candidate holds the Lease) that reached the cluster and reads the
//!     Lease, so it can take over: `200`;
//!   - the leader (or a process without leader election) once a list of every kind its
//!     controllers watch has succeeded in the watched scope (the CRDs are installed and the
//!     operator's RBAC lets it list them, which is what the controllers' caches start from):
//!     `200`; before that `503`;
//!   - stopping (SIGTERM) or the Lease lost: `503`.
//!
//! [`Health`] holds the readiness the process reports; the process updates it as its role
//! changes.

use crate::metrics::{CONTENT_TYPE, Metrics};
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::watch;

/// Whether the process is ready, and why (or why not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readiness {
    /// `/readyz` answers 200 when true, 503 when false.
    pub ready: bool,
    /// The one-line reason in the body.
    pub reason: String,
}

/// The readiness `/readyz` reports, set by the process as its role changes.
#[derive(Debug)]
pub struct Health {
    state: watch::Sender<Readiness>,
}

impl Default for Health {
    fn default() -> Self {
        Health::new()
    }
}

impl Health {
    /// Not ready: connecting to the cluster.
    pub fn new() -> Health {
        Health {
            state: watch::Sender::new(Readiness {
                ready: false,
                reason: "connecting to the cluster".into(),
            }),
        }
    }

    /// Reports ready, with `reason` (e.g. `leader: controllers running`).
    pub fn ready(&self, reason: impl Into<String>) {
        self.set(true, reason.into());
    }

    /// Reports not ready, with `reason`.
    pub fn not_ready(&self, reason: impl Into<String>) {
        self.set(false, reason.into());
    }

    fn set(&self, ready: bool, reason: String) {
        let next = Readiness { ready, reason };
        self.state.send_if_modified(|now| {
            let changed = *now != next;
            *now = next.clone();
            changed
        });
    }

    /// The readiness now.
    pub fn get(&self) -> Readiness {
        self.state.borrow().clone()
    }
}

#[derive(Clone)]
struct Shared {
    metrics: Arc<Metrics>,
    health: Arc<Health>,
}

/// The router of `/metrics`, `/healthz` and `/readyz`.
pub fn router(metrics: Arc<Metrics>, health: Arc<Health>) -> Router {
    Router::new()
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(Shared { metrics, health })
}

async fn metrics_text(State(shared): State<Shared>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        shared.metrics.encode(),
    )
}

async fn readyz(State(shared): State<Shared>) -> impl IntoResponse {
    let now = shared.health.get();
    let status = if now.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, format!("{}\n", now.reason))
}

/// Serves [`router`] on `listener` until `shutdown` resolves; then it stops accepting and
/// finishes the requests in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(metrics, health))
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn get_path(addr: std::net::SocketAddr, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr)
            .await
            .expect("connect to the test server");
        stream
            .write_all(
                format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
            )
            .await
            .expect("send the request");
        let mut out = String::new();
        stream
            .read_to_string(&mut out)
            .await
            .expect("read the response");
        out
    }

    #[tokio::test]
    async fn readyz_follows_the_readiness_set_and_healthz_and_metrics_answer() {
        let metrics = Arc::new(Metrics::new());
        let health = Arc::new(Health::new());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a free port");
        let addr = listener.local_addr().expect("the bound address");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, metrics.clone(), health.clone(), async {
            let _ = stopped.await;
        }));

        let before = get_path(addr, "/readyz").await;
        assert!(before.starts_with("HTTP/1.1 503"), "{before}");
        assert!(before.ends_with("connecting to the cluster\n"), "{before}");
        health.ready("standby: the Lease is held by op-a");
        let after = get_path(addr, "/readyz").await;
        assert!(after.starts_with("HTTP/1.1 200"), "{after}");
        assert!(
            after.ends_with("standby: the Lease is held by op-a\n"),
            "{after}"
        );

        let live = get_path(addr, "/healthz").await;
        assert!(live.starts_with("HTTP/1.1 200"), "{live}");

        metrics.set_leader(true);
        let text = get_path(addr, "/metrics").await;
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        assert!(
            text.to_ascii_lowercase()
                .contains("content-type: text/plain; version=0.0.4"),
            "{text}"
        );
        assert!(text.contains("\norrery_leader 1\n"), "{text}");

        let _ = stop.send(());
        server
            .await
            .expect("the server task")
            .expect("the server stops cleanly");
    }
}
