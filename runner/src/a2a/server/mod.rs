//! Our own A2A 1.0 server: an axum router serving an [`AgentHandler`]'s card at
//! `/.well-known/agent-card.json` and the JSON-RPC binding (spec §9) at a configurable path,
//! with `SendStreamingMessage` and `SubscribeToTask` as SSE.
//!
//! What it enforces, in order: the bearer token (when configured; the card stays public), a JSON
//! `Content-Type`, the body size, JSON-RPC 2.0 framing (no batches; `id` a string, an integer or
//! null), the method name (1.0 names only), then `A2A-Version` (header, or the `A2A-Version`
//! query parameter; missing means 0.3, which is refused with -32009), then the params.
//! JSON-RPC errors are answered with HTTP 200, as the official SDKs do.

pub(crate) mod envelope;
mod follow;
mod handler;
mod methods;
mod reply;
mod send;
mod store;

pub use handler::{AgentHandler, AgentReply, AgentRequest};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Uri, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Router, middleware};
use futures::StreamExt;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::a2a::types::{
    A2aErrorCode, AGENT_CARD_PATH, JsonRpcError, JsonRpcResponse, version_is_supported,
};
use envelope::{bearer_matches, content_type_is_json, parse_envelope, requested_version};
use reply::Outcome;
use store::TaskStore;

/// How the server is mounted and what it accepts.
#[derive(Clone, Debug)]
pub struct A2aServerConfig {
    /// Path of the JSON-RPC endpoint (the card's interface URL must point here).
    pub rpc_path: String,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// When set, every JSON-RPC request must carry `Authorization: Bearer <token>`.
    pub bearer_token: Option<String>,
    /// Tasks kept in memory; the oldest are forgotten first.
    pub max_tasks: usize,
    /// Host names the `Host` header may carry (any port); empty accepts any. The default is
    /// the loopback names (`127.0.0.1`, `localhost`, `::1`), so a DNS-rebinding page cannot
    /// reach a server on loopback (403); a server reached under another name lists it.
    pub allowed_hosts: Vec<String>,
}

impl Default for A2aServerConfig {
    fn default() -> Self {
        A2aServerConfig {
            rpc_path: "/".to_owned(),
            max_body_bytes: 64 * 1024,
            bearer_token: None,
            max_tasks: 1024,
            allowed_hosts: ["127.0.0.1", "localhost", "::1"].map(String::from).to_vec(),
        }
    }
}

pub(crate) struct ServerState {
    pub(crate) handler: Arc<dyn AgentHandler>,
    pub(crate) config: A2aServerConfig,
    pub(crate) tasks: TaskStore,
    pub(crate) tracker: TaskTracker,
    pub(crate) shutdown: CancellationToken,
}

/// An A2A server for one agent. Clone the [`A2aServer::router`] into an axum app; call
/// [`A2aServer::shutdown`] to end streams and wait for in-flight work.
pub struct A2aServer {
    state: Arc<ServerState>,
}

impl std::fmt::Debug for A2aServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aServer")
            .field("agent", &self.state.handler.card().name)
            .field("rpc_path", &self.state.config.rpc_path)
            .finish_non_exhaustive()
    }
}

impl A2aServer {
    /// A server for this agent.
    pub fn new(handler: Arc<dyn AgentHandler>, config: A2aServerConfig) -> Self {
        let tasks = TaskStore::new(config.max_tasks);
        A2aServer {
            state: Arc::new(ServerState {
                handler,
                config,
                tasks,
                tracker: TaskTracker::new(),
                shutdown: CancellationToken::new(),
            }),
        }
    }

    /// The routes: the card and the JSON-RPC endpoint.
    pub fn router(&self) -> Router {
        Router::new()
            .route(AGENT_CARD_PATH, get(serve_card))
            .route(&self.state.config.rpc_path, post(serve_rpc))
            .layer(middleware::from_fn_with_state(
                self.state.clone(),
                check_host,
            ))
            .with_state(self.state.clone())
    }

    /// Ends open streams, fails work still running and waits for it to finish.
    pub async fn shutdown(&self) {
        self.state.shutdown.cancel();
        self.state.tracker.close();
        self.state.tracker.wait().await;
    }
}

/// Refuses requests whose `Host` (or HTTP/2 authority) is not an allowed host name.
async fn check_host(
    State(state): State<Arc<ServerState>>,
    request: axum::extract::Request,
    next: middleware::Next,
) -> Response {
    let allowed = &state.config.allowed_hosts;
    if allowed.is_empty() {
        return next.run(request).await;
    }
    let from_header = request.headers().get(header::HOST).map(|value| {
        let authority = value
            .to_str()
            .ok()?
            .parse::<axum::http::uri::Authority>()
            .ok()?;
        Some(authority.host().to_owned())
    });
    let authority = match from_header {
        Some(host) => host,
        None => request.uri().authority().map(|a| a.host().to_owned()),
    };
    let host = authority.map(|h| h.trim_matches(['[', ']']).to_ascii_lowercase());
    let ok = host.as_deref().is_some_and(|h| {
        allowed
            .iter()
            .any(|a| a.trim_matches(['[', ']']).eq_ignore_ascii_case(h))
    });
    if ok {
        return next.run(request).await;
    }
    let err = JsonRpcError::new(
        A2aErrorCode::InvalidRequest,
        format!(
            "Invalid Host header: {} is not served here",
            host.as_deref().unwrap_or("(none)")
        ),
    );
    transport_error(StatusCode::FORBIDDEN, err)
}

async fn serve_card(State(state): State<Arc<ServerState>>, headers: HeaderMap) -> Response {
    let body = match serde_json::to_vec(state.handler.card()) {
        Ok(body) => body,
        Err(e) => {
            tracing::error!(error = %e, "the agent card does not serialise");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let etag = format!("W/\"{}\"", hex::encode(Sha256::digest(&body)));
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let etag_header = (header::ETAG, etag);
    if matches {
        return (StatusCode::NOT_MODIFIED, [etag_header]).into_response();
    }
    (
        [
            (header::CONTENT_TYPE, "application/json".to_owned()),
            etag_header,
        ],
        body,
    )
        .into_response()
}

async fn serve_rpc(
    State(state): State<Arc<ServerState>>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Some(expected) = &state.config.bearer_token
        && !bearer_matches(&headers, expected)
    {
        let err = JsonRpcError::new(
            A2aErrorCode::InvalidRequest,
            "missing or wrong bearer token: send `Authorization: Bearer <token>`",
        );
        let mut response = transport_error(StatusCode::UNAUTHORIZED, err);
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    if !content_type_is_json(&headers) {
        let err = JsonRpcError::new(
            A2aErrorCode::InvalidRequest,
            "Content-Type must be application/json",
        );
        return transport_error(StatusCode::UNSUPPORTED_MEDIA_TYPE, err);
    }
    let limit = state.config.max_body_bytes;
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(_) => {
            let err = JsonRpcError::new(
                A2aErrorCode::InvalidRequest,
                format!("the request body is larger than {limit} bytes"),
            );
            return transport_error(StatusCode::PAYLOAD_TOO_LARGE, err);
        }
    };
    let (id, method, params) = match parse_envelope(&bytes) {
        Ok(parts) => parts,
        Err((id, err)) => return json_response(JsonRpcResponse::failure(id, err)),
    };
    let version = requested_version(&headers, &uri);
    if !version_is_supported(&version) {
        let err = JsonRpcError::version_not_supported(&version);
        return json_response(JsonRpcResponse::failure(id, err));
    }
    match methods::dispatch(&state, method, params).await {
        Ok(Outcome::Result(result)) => json_response(JsonRpcResponse::success(id, result)),
        Ok(Outcome::Stream(events)) => {
            let events = events.map(move |event| {
                Event::default().json_data(JsonRpcResponse::success(id.clone(), event))
            });
            (
                [
                    (header::CACHE_CONTROL, "no-store"),
                    (HeaderName::from_static("x-accel-buffering"), "no"),
                ],
                Sse::new(events).keep_alive(KeepAlive::default()),
            )
                .into_response()
        }
        Err(err) => json_response(JsonRpcResponse::failure(id, err)),
    }
}

fn json_response(body: JsonRpcResponse<Value>) -> Response {
    (StatusCode::OK, axum::Json(body)).into_response()
}

fn transport_error(status: StatusCode, err: JsonRpcError) -> Response {
    (
        status,
        axum::Json(JsonRpcResponse::<Value>::failure(None, err)),
    )
        .into_response()
}
