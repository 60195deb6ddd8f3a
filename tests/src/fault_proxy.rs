//! A fault layer between a component and the real kube-apiserver (issue 26): an HTTP proxy,
//! behind a TLS front of a throwaway CA, that forwards every request to the API server as it
//! came (the caller's own bearer token included) and streams the answer back (watches too), until
//! a test asks for a fault:
//!
//! - [`Fault::Throttle`]: `429 Too Many Requests` with `Retry-After` (and the Status body the API
//!   server sends, `details.retryAfterSeconds`);
//! - [`Fault::Unavailable`]: `503 Service Unavailable`, as an API server going away answers;
//! - [`Fault::Reset`]: the connection dropped without an answer;
//! - [`Fault::Hold`]: the request kept, unanswered, until [`FaultProxy::release`], then sent on
//!   (a write delayed in flight: sent on even if its client gave up or died meanwhile);
//! - [`Fault::DropEvents`]: the events of the watches it picks dropped on the way (the watch
//!   stays open and never says so; once the fault is cleared, a watch that lost events ends,
//!   as a connection that lost bytes breaks, and the client resumes from what it last saw);
//!
//! each for the requests a [`Matcher`] picks, while it is set. [`FaultProxy::cut_streams`] ends
//! every open response (watches) at once. Every request is logged with when, what and the
//! status it got, so a test can count what a component sent during and after a fault.

use crate::front::{Front, TestCa};
use crate::testenv::TestEnv;
use anyhow::{Context as _, Result};
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use futures::StreamExt as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// What the proxy does to the requests a [`Matcher`] picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `429` with `Retry-After: seconds`.
    Throttle {
        /// The seconds the client is asked to wait.
        retry_after: u32,
    },
    /// `503` (no `Retry-After`).
    Unavailable,
    /// No answer: the connection is dropped.
    Reset,
    /// Kept until [`FaultProxy::release`], then forwarded.
    Hold,
    /// The watch events of the streams picked are dropped while this is set.
    DropEvents,
}

/// Which requests a fault applies to: by method and by a part of the path.
#[derive(Debug, Clone, Default)]
pub struct Matcher {
    /// Only this method (any when `None`).
    pub method: Option<Method>,
    /// Only paths containing this (any when empty).
    pub path_contains: String,
}

impl Matcher {
    /// Every request.
    pub fn all() -> Matcher {
        Matcher::default()
    }

    /// Requests of `method` whose path contains `part`.
    pub fn of(method: Method, part: &str) -> Matcher {
        Matcher {
            method: Some(method),
            path_contains: part.to_owned(),
        }
    }

    fn picks(&self, method: &Method, path: &str) -> bool {
        self.method.as_ref().is_none_or(|m| m == method) && path.contains(&self.path_contains)
    }
}

/// One request the proxy saw.
#[derive(Debug, Clone)]
pub struct Seen {
    /// When it arrived.
    pub at: Instant,
    /// Its method.
    pub method: Method,
    /// Its path and query.
    pub path: String,
    /// The status it got (0: dropped, or the API server did not answer).
    pub status: u16,
    /// Whether a fault answered it.
    pub faulted: bool,
}

#[derive(Default)]
struct Shared {
    fault: Mutex<Option<(Fault, Matcher)>>,
    seen: Mutex<Vec<Seen>>,
    streams: Mutex<CancellationToken>,
    /// Bumped by each release: a held request goes on once it changed.
    gate: tokio::sync::watch::Sender<u64>,
    held: std::sync::atomic::AtomicUsize,
    dropped: std::sync::atomic::AtomicUsize,
}

impl Shared {
    /// The fault set for `(method, path)`, if any.
    fn fault_for(&self, method: &Method, path: &str) -> Option<Fault> {
        self.fault
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .filter(|(_, m)| m.picks(method, path))
            .map(|(f, _)| *f)
    }
}

struct Proxy {
    upstream: String,
    http: reqwest::Client,
    shared: Arc<Shared>,
}

/// The proxy, listening with TLS on loopback.
pub struct FaultProxy {
    front: Option<Front>,
    server: tokio::task::JoinHandle<()>,
    shared: Arc<Shared>,
    ca: TestCa,
}

impl std::fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultProxy")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

impl FaultProxy {
    /// A proxy in front of `env`'s API server.
    pub async fn start(env: &TestEnv) -> Result<FaultProxy> {
        let ca_file = env
            .var("TESTENV_CA_FILE")
            .context("the control plane's env names no TESTENV_CA_FILE")?;
        let upstream_ca = reqwest::Certificate::from_pem(&std::fs::read(ca_file)?)?;
        let http = reqwest::Client::builder()
            .add_root_certificate(upstream_ca)
            .build()
            .context("the proxy's client of the API server")?;
        let shared = Arc::new(Shared::default());
        let proxy = Arc::new(Proxy {
            upstream: env.server.trim_end_matches('/').to_owned(),
            http,
            shared: shared.clone(),
        });
        let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let plain = listener.local_addr()?;
        let app = axum::Router::new().fallback(forward).with_state(proxy);
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let ca = TestCa::new("orrery fault proxy CA (this test only)")?;
        let front = Front::tls(
            SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0)),
            plain,
            &ca,
        )
        .await?;
        Ok(FaultProxy {
            front: Some(front),
            server,
            shared,
            ca,
        })
    }

    /// Its URL (`https://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        self.front
            .as_ref()
            .map(|f| format!("https://{}", f.addr()))
            .unwrap_or_default()
    }

    /// Its CA, for a client's root certificates.
    pub fn ca(&self) -> &TestCa {
        &self.ca
    }

    /// `config` pointed at the proxy (its credentials kept).
    pub fn config_for(&self, mut config: kube::Config) -> Result<kube::Config> {
        config.cluster_url = self.url().parse()?;
        config.root_cert = Some(vec![self.ca.der().to_vec()]);
        config.tls_server_name = None;
        Ok(config)
    }

    /// Applies `fault` to the requests `matcher` picks, from now on.
    pub fn set(&self, fault: Fault, matcher: Matcher) {
        *self.shared.fault.lock().unwrap_or_else(|e| e.into_inner()) = Some((fault, matcher));
    }

    /// Forwards everything again.
    pub fn clear(&self) {
        *self.shared.fault.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Clears the fault and lets every held request go on.
    pub fn release(&self) {
        self.clear();
        self.shared.gate.send_modify(|epoch| *epoch += 1);
    }

    /// How many requests are held now.
    pub fn held(&self) -> usize {
        self.shared.held.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many watch events were dropped so far.
    pub fn dropped(&self) -> usize {
        self.shared
            .dropped
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Ends every response still streaming (watches), as a proxy dropping long connections does.
    pub fn cut_streams(&self) {
        let mut token = self
            .shared
            .streams
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        token.cancel();
        *token = CancellationToken::new();
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How many of the requests seen after the first `since` were `method` requests whose
    /// path contains `part` and were answered `status` (e.g. the status writes of a run
    /// refused `409`).
    pub fn answered(&self, since: usize, method: &Method, part: &str, status: u16) -> usize {
        self.seen()
            .iter()
            .skip(since)
            .filter(|s| s.method == *method && s.path.contains(part) && s.status == status)
            .count()
    }

    /// Stops listening.
    pub async fn stop(mut self) {
        if let Some(front) = self.front.take() {
            front.stop().await;
        }
        self.server.abort();
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn record(shared: &Shared, seen: Seen) {
    shared
        .seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(seen);
}

/// The Status body the API server sends with a refusal.
fn status_body(code: u16, reason: &str, message: &str, retry_after: Option<u32>) -> String {
    let mut status = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code,
    });
    if let Some(seconds) = retry_after {
        status["details"] = serde_json::json!({"retryAfterSeconds": seconds});
    }
    status.to_string()
}

async fn forward(State(proxy): State<Arc<Proxy>>, request: Request<Body>) -> Response<Body> {
    // On a task of its own: a request that reached the proxy goes on to the API server even if
    // its client gives up or dies meanwhile, as a write already on the wire is not taken back
    // by its sender's end (a held write of a leader that lost its Lease, fault 3).
    tokio::spawn(forward_now(proxy, request))
        .await
        .unwrap_or_else(|_| bad_gateway())
}

async fn forward_now(proxy: Arc<Proxy>, request: Request<Body>) -> Response<Body> {
    let method = request.method().clone();
    let path = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "/".to_owned());
    let at = Instant::now();
    let fault = proxy.shared.fault_for(&method, &path);
    // The whole request is read before it is held: it was sent.
    let headers = request.headers().clone();
    let body = match axum::body::to_bytes(request.into_body(), 16 << 20).await {
        Ok(b) => b,
        Err(_) => return bad_gateway(),
    };
    if fault == Some(Fault::Hold) {
        let mut gate = proxy.shared.gate.subscribe();
        gate.borrow_and_update();
        let held = &proxy.shared.held;
        held.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _ = gate.changed().await;
        held.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
    if let Some(fault) = fault.filter(|f| !matches!(f, Fault::Hold | Fault::DropEvents)) {
        let (code, response) = match fault {
            Fault::Throttle { retry_after } => {
                let mut response = Response::new(Body::from(status_body(
                    429,
                    "TooManyRequests",
                    "the fault proxy throttles this request",
                    Some(retry_after),
                )));
                *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
                (429, response)
            }
            Fault::Unavailable => {
                let mut response = Response::new(Body::from(status_body(
                    503,
                    "ServiceUnavailable",
                    "the fault proxy says the API server is unavailable",
                    None,
                )));
                *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                (503, response)
            }
            Fault::Reset => {
                record(
                    &proxy.shared,
                    Seen {
                        at,
                        method,
                        path,
                        status: 0,
                        faulted: true,
                    },
                );
                // A body that fails at once: hyper drops the connection without an answer.
                let failing = futures::stream::once(async {
                    Err::<axum::body::Bytes, std::io::Error>(std::io::Error::other("reset"))
                });
                return Response::new(Body::from_stream(failing));
            }
            Fault::Hold | Fault::DropEvents => return bad_gateway(),
        };
        let mut response = response;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        record(
            &proxy.shared,
            Seen {
                at,
                method,
                path,
                status: code,
                faulted: true,
            },
        );
        return response;
    }

    let mut upstream = proxy
        .http
        .request(method.clone(), format!("{}{path}", proxy.upstream))
        .body(body);
    for (name, value) in passed(&headers) {
        upstream = upstream.header(name, value);
    }
    let answer = upstream.send().await;
    let answer = match answer {
        Ok(a) => a,
        Err(_) => {
            record(
                &proxy.shared,
                Seen {
                    at,
                    method,
                    path,
                    status: 0,
                    faulted: false,
                },
            );
            return bad_gateway();
        }
    };
    let status = answer.status();
    record(
        &proxy.shared,
        Seen {
            at,
            method: method.clone(),
            path: path.clone(),
            status: status.as_u16(),
            faulted: false,
        },
    );
    let mut response = Response::builder().status(status.as_u16());
    for (name, value) in passed(answer.headers()) {
        response = response.header(name, value);
    }
    let cut = proxy
        .shared
        .streams
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let stream = answer
        .bytes_stream()
        .map(|chunk| chunk.map_err(std::io::Error::other))
        .take_until(async move { cut.cancelled().await });
    let body = if path.contains("watch=true") || path.contains("watch=1") {
        Body::from_stream(events_filtered(stream, proxy.shared.clone(), method, path))
    } else {
        Body::from_stream(stream)
    };
    response.body(body).unwrap_or_else(|_| bad_gateway())
}

/// A watch stream, event by event (one JSON object per line), with the events dropped while a
/// [`Fault::DropEvents`] picks the watch: it stays open and says nothing. A stream that lost
/// events ends when the fault is cleared instead of going on with later ones, as a connection
/// that lost bytes breaks (TCP never delivers later bytes without earlier ones): the client
/// resumes from the last version it saw, and the API server sends the lost events again.
fn events_filtered(
    stream: impl futures::Stream<Item = std::io::Result<axum::body::Bytes>> + Send + 'static,
    shared: Arc<Shared>,
    method: Method,
    path: String,
) -> impl futures::Stream<Item = std::io::Result<axum::body::Bytes>> + Send + 'static {
    let mut pending: Vec<u8> = Vec::new();
    let mut lost = false;
    stream.scan((), move |(), chunk| {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => return futures::future::ready(Some(Err(e))),
        };
        pending.extend_from_slice(&chunk);
        let mut out = Vec::new();
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            if shared.fault_for(&method, &path) == Some(Fault::DropEvents) {
                lost = true;
                shared
                    .dropped
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            } else if lost {
                return futures::future::ready(None);
            } else {
                out.extend_from_slice(&line);
            }
        }
        futures::future::ready(Some(Ok(axum::body::Bytes::from(out))))
    })
}

/// The headers passed through (hop-by-hop ones and the length, which the new framing sets,
/// left out).
fn passed(headers: &HeaderMap) -> Vec<(header::HeaderName, HeaderValue)> {
    headers
        .iter()
        .filter(|(name, _)| {
            !matches!(
                name.as_str(),
                "host"
                    | "connection"
                    | "content-length"
                    | "transfer-encoding"
                    | "keep-alive"
                    | "upgrade"
                    | "proxy-connection"
                    | "te"
                    | "trailer"
            )
        })
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect()
}

fn bad_gateway() -> Response<Body> {
    let mut response = Response::new(Body::from("the fault proxy could not reach the API server"));
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    response
}
