//! A small MCP server for tests, written against the wire (not rmcp) so a test controls every
//! byte: streamable HTTP in the 2025-11-25 session model at `/mcp` (it refuses
//! `server/discover` with 400, as server-everything does), a GET event stream for
//! notifications, and the legacy HTTP+SSE transport at `/sse` + `/message`.

use super::{Override, Recorded, bind, record, serve};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// What the fixture serves and what it saw.
#[derive(Debug, Default)]
pub struct McpState {
    /// `tools/list` answers these tools.
    pub tools: Vec<Value>,
    /// `tools/call` of a tool answers this result.
    pub results: BTreeMap<String, Value>,
    /// When set, POSTs to `/mcp` get this instead.
    pub post_override: Option<Override>,
    /// When set, the legacy `endpoint` event names this instead of `/message?…`.
    pub sse_endpoint: Option<String>,
    /// When set, `tools/call` is answered with this id instead of the request's.
    pub call_reply_id: Option<Value>,
    /// When set, `tools/call` is answered with an event stream carrying this message (e.g. a
    /// request of the server's own) before the result.
    pub call_prelude: Option<Value>,
    /// When set, the legacy transport answers `tools/call` with this event data (e.g. a frame
    /// that is not JSON) instead of the result.
    pub legacy_call_data: Option<String>,
    /// When set, every reply says `Connection: close`, so each request connects anew.
    pub close_connections: bool,
    /// When set, `tools/call` is answered with an event stream that carries one event with an
    /// id (so the client may resume it) and ends without the result.
    pub cut_calls: bool,
    /// When set, every `GET /mcp` event stream ends at once.
    pub end_streams_at_once: bool,
}

struct Shared {
    state: Mutex<McpState>,
    log: Mutex<Vec<Recorded>>,
    events: broadcast::Sender<String>,
    /// Cancelled to end the event streams open now.
    ends: Mutex<CancellationToken>,
}

/// A running fixture.
pub struct McpFixture {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
}

impl Drop for McpFixture {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A read-only tool description.
pub fn tool(name: &str, description: &str, annotations: Value) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
        "annotations": annotations
    })
}

/// A text result.
pub fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

impl McpFixture {
    pub async fn start(tools: Vec<Value>, results: BTreeMap<String, Value>) -> Self {
        let (listener, addr) = bind().await;
        let (events, _) = broadcast::channel(64);
        let shared = Arc::new(Shared {
            state: Mutex::new(McpState {
                tools,
                results,
                ..McpState::default()
            }),
            log: Mutex::new(Vec::new()),
            events,
            ends: Mutex::new(CancellationToken::new()),
        });
        let app = axum::Router::new()
            .route("/mcp", post(post_mcp).get(get_stream).delete(delete))
            .route("/sse", get(get_legacy))
            .route("/message", post(post_legacy))
            .layer(axum::middleware::from_fn_with_state(
                shared.clone(),
                |State(s): State<Arc<Shared>>,
                 req: axum::extract::Request,
                 next: axum::middleware::Next| async move {
                    let req = record(req, &s.log).await;
                    let mut response = next.run(req).await;
                    if s.state.lock().unwrap().close_connections {
                        response.headers_mut().insert(
                            axum::http::header::CONNECTION,
                            axum::http::HeaderValue::from_static("close"),
                        );
                    }
                    response
                },
            ))
            .with_state(shared.clone());
        let stop = serve(listener, app);
        McpFixture { addr, shared, stop }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.addr.port())
    }

    pub fn sse_url(&self) -> String {
        format!("http://127.0.0.1:{}/sse", self.addr.port())
    }

    pub fn edit(&self, f: impl FnOnce(&mut McpState)) {
        f(&mut self.shared.state.lock().unwrap());
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.log.lock().unwrap().clone()
    }

    /// JSON-RPC methods of the POSTs received, in order.
    pub fn methods(&self) -> Vec<String> {
        self.requests()
            .iter()
            .filter(|r| r.method == "POST")
            .filter_map(|r| serde_json::from_str::<Value>(&r.body).ok())
            .filter_map(|v| v["method"].as_str().map(str::to_owned))
            .collect()
    }

    /// Ends the event streams open now (the client may reconnect).
    pub fn end_event_streams(&self) {
        let mut ends = self.shared.ends.lock().unwrap();
        ends.cancel();
        *ends = CancellationToken::new();
    }

    /// Sends `notifications/tools/list_changed` on the open event stream(s), once one is open.
    pub async fn announce_list_changed(&self) {
        for _ in 0..200 {
            if self.shared.events.receiver_count() > 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(
            self.shared.events.receiver_count() > 0,
            "the client opened no event stream"
        );
        let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        self.shared.events.send(note.to_string()).unwrap();
    }
}

/// The answer to one JSON-RPC message: `None` for notifications and responses.
fn answer(shared: &Shared, message: &Value) -> Option<(Value, Option<&'static str>)> {
    let id = message.get("id")?.clone();
    let method = message["method"].as_str()?;
    let state = shared.state.lock().unwrap();
    let (result, session) = match method {
        "initialize" => (
            json!({"protocolVersion": "2025-11-25",
                   "capabilities": {"tools": {"listChanged": true}},
                   "serverInfo": {"name": "fixture", "version": "1.0.0"}}),
            Some("fixture-session"),
        ),
        "tools/list" => (json!({"tools": state.tools}), None),
        "tools/call" => {
            let name = message["params"]["name"].as_str().unwrap_or_default();
            let result = state.results.get(name).cloned().unwrap_or_else(|| {
                json!({"content": [{"type": "text", "text": format!("unknown tool {name}")}], "isError": true})
            });
            (result, None)
        }
        "ping" => (json!({}), None),
        other => {
            return Some((
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("no method {other}")}}),
                None,
            ));
        }
    };
    Some((
        json!({"jsonrpc": "2.0", "id": id, "result": result}),
        session,
    ))
}

/// Whether `message` is a `tools/call` request.
fn is_call(message: &Value) -> bool {
    message["method"] == "tools/call" && message.get("id").is_some()
}

async fn post_mcp(State(shared): State<Arc<Shared>>, body: String) -> Response {
    if let Some(o) = shared.state.lock().unwrap().post_override.clone() {
        return o.into_response();
    }
    let message: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    if is_call(&message) {
        let (reply_id, prelude, cut) = {
            let state = shared.state.lock().unwrap();
            (
                state.call_reply_id.clone(),
                state.call_prelude.clone(),
                state.cut_calls,
            )
        };
        if cut {
            let priming = Event::default().id("call-event-1").data("not yet");
            return Sse::new(futures::stream::iter([Ok::<_, Infallible>(priming)])).into_response();
        }
        if let Some(id) = reply_id
            && let Some((mut reply, _)) = answer(&shared, &message)
        {
            reply["id"] = id;
            return ([("content-type", "application/json")], reply.to_string()).into_response();
        }
        if let Some(prelude) = prelude
            && let Some((reply, _)) = answer(&shared, &message)
        {
            let events = [prelude, reply].map(|m| {
                Ok::<_, Infallible>(Event::default().event("message").data(m.to_string()))
            });
            return Sse::new(futures::stream::iter(events)).into_response();
        }
    }
    if message["method"] == "server/discover" {
        let error = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Bad Request: Server not initialized"}});
        return (
            StatusCode::BAD_REQUEST,
            [("content-type", "application/json")],
            error.to_string(),
        )
            .into_response();
    }
    match answer(&shared, &message) {
        None => StatusCode::ACCEPTED.into_response(),
        Some((reply, session)) => {
            let mut headers = HeaderMap::new();
            headers.insert("content-type", "application/json".parse().unwrap());
            if let Some(s) = session {
                headers.insert("mcp-session-id", s.parse().unwrap());
            }
            (headers, reply.to_string()).into_response()
        }
    }
}

fn event_stream(
    rx: broadcast::Receiver<String>,
    first: Vec<Event>,
    end: CancellationToken,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let rest = futures::stream::unfold(rx, |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(m) => return Some((Ok(Event::default().event("message").data(m)), rx)),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Sse::new(
        futures::stream::iter(first.into_iter().map(Ok))
            .chain(rest)
            .take_until(end.cancelled_owned()),
    )
    .keep_alive(KeepAlive::default())
}

async fn get_stream(State(shared): State<Arc<Shared>>) -> Response {
    let end = shared.ends.lock().unwrap().clone();
    if shared.state.lock().unwrap().end_streams_at_once {
        return Sse::new(futures::stream::empty::<Result<Event, Infallible>>()).into_response();
    }
    event_stream(shared.events.subscribe(), Vec::new(), end).into_response()
}

async fn delete() -> StatusCode {
    StatusCode::OK
}

async fn get_legacy(State(shared): State<Arc<Shared>>) -> Response {
    let target = shared.state.lock().unwrap().sse_endpoint.clone();
    let endpoint = Event::default()
        .event("endpoint")
        .data(target.unwrap_or_else(|| "/message?sessionId=fixture".into()));
    let end = shared.ends.lock().unwrap().clone();
    event_stream(shared.events.subscribe(), vec![endpoint], end).into_response()
}

async fn post_legacy(State(shared): State<Arc<Shared>>, body: String) -> StatusCode {
    let message: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let raw = shared.state.lock().unwrap().legacy_call_data.clone();
    if is_call(&message)
        && let Some(raw) = raw
    {
        let _ = shared.events.send(raw);
        return StatusCode::ACCEPTED;
    }
    if let Some((reply, _)) = answer(&shared, &message) {
        let _ = shared.events.send(reply.to_string());
    }
    StatusCode::ACCEPTED
}
