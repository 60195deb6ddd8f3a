//! A stub model server on `127.0.0.1:0` speaking the OpenAI chat completions, Anthropic
//! Messages and Gemini generateContent wire formats, for testing the runner's providers.
//!
//! Each test programs replies in order ([`StubModel::push`]) or a reply for when the queue is
//! empty ([`StubModel::set_default`]): text, tool calls and usage, errors with a message,
//! 429s, 5xx, delays. The stub records every request (path, headers, JSON body) so tests can
//! assert on what was sent. The wire format is chosen by the path: `…/chat/completions` is
//! OpenAI, `…/v1/messages` Anthropic, `…/models/<model>:generateContent` Gemini.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

mod render;

use render::render;

/// A wire format the stub speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI chat completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini generateContent.
    Gemini,
}

impl Wire {
    /// The wire format a request path belongs to.
    fn of_path(path: &str) -> Option<Self> {
        if path.ends_with("/chat/completions") {
            Some(Self::OpenAi)
        } else if path.ends_with("/v1/messages") {
            Some(Self::Anthropic)
        } else if path.ends_with(":generateContent") {
            Some(Self::Gemini)
        } else {
            None
        }
    }
}

/// A tool call in a programmed reply.
#[derive(Clone, Debug, PartialEq)]
pub struct StubToolCall {
    /// The call id (OpenAI and Anthropic get `call_<n>` / `toolu_<n>` when absent; Gemini sends
    /// none when absent).
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Arguments (a JSON object).
    pub arguments: Value,
}

/// What a programmed reply says.
#[derive(Clone, Debug, PartialEq)]
pub enum StubBody {
    /// A model answer.
    Answer {
        /// Text, if any.
        text: Option<String>,
        /// Tool calls.
        tool_calls: Vec<StubToolCall>,
        /// Input tokens reported.
        input_tokens: u64,
        /// Output tokens reported.
        output_tokens: u64,
    },
    /// An error in the wire format's error shape.
    Error {
        /// HTTP status.
        status: u16,
        /// The message.
        message: String,
        /// A `Retry-After` header value.
        retry_after: Option<String>,
    },
    /// Exactly these bytes, status and headers (for malformed or compressed replies).
    Raw {
        /// HTTP status.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The body.
        body: Vec<u8>,
    },
}

/// One programmed reply.
#[derive(Clone, Debug, PartialEq)]
pub struct StubReply {
    /// The reply.
    pub body: StubBody,
    /// How long the stub waits before answering.
    pub delay: Duration,
}

impl StubReply {
    /// A text answer (usage 0/0 unless set with [`StubReply::usage`]).
    pub fn text(text: &str) -> Self {
        Self {
            body: StubBody::Answer {
                text: Some(text.to_string()),
                tool_calls: Vec::new(),
                input_tokens: 0,
                output_tokens: 0,
            },
            delay: Duration::ZERO,
        }
    }

    /// An answer calling one tool.
    pub fn tool_call(name: &str, arguments: Value) -> Self {
        Self {
            body: StubBody::Answer {
                text: None,
                tool_calls: Vec::new(),
                input_tokens: 0,
                output_tokens: 0,
            },
            delay: Duration::ZERO,
        }
        .and_tool_call(None, name, arguments)
    }

    /// Adds a tool call (with an explicit id, if given).
    pub fn and_tool_call(mut self, id: Option<&str>, name: &str, arguments: Value) -> Self {
        if let StubBody::Answer { tool_calls, .. } = &mut self.body {
            tool_calls.push(StubToolCall {
                id: id.map(str::to_string),
                name: name.to_string(),
                arguments,
            });
        }
        self
    }

    /// Sets the usage an answer reports.
    pub fn usage(mut self, input: u64, output: u64) -> Self {
        if let StubBody::Answer {
            input_tokens,
            output_tokens,
            ..
        } = &mut self.body
        {
            *input_tokens = input;
            *output_tokens = output;
        }
        self
    }

    /// An error with `status` and `message`.
    pub fn error(status: u16, message: &str) -> Self {
        Self {
            body: StubBody::Error {
                status,
                message: message.to_string(),
                retry_after: None,
            },
            delay: Duration::ZERO,
        }
    }

    /// A reply of exactly `body`, `status` and `headers`.
    pub fn raw(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Self {
        Self {
            body: StubBody::Raw {
                status,
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                body: body.to_vec(),
            },
            delay: Duration::ZERO,
        }
    }

    /// A 429 with `Retry-After: 0`.
    pub fn rate_limited() -> Self {
        Self::error(429, "rate limited").retry_after("0")
    }

    /// Sets `Retry-After` on an error.
    pub fn retry_after(mut self, value: &str) -> Self {
        if let StubBody::Error { retry_after, .. } = &mut self.body {
            *retry_after = Some(value.to_string());
        }
        self
    }

    /// Waits `delay` before answering.
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// A request the stub received.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    /// The wire format (by path).
    pub wire: Option<Wire>,
    /// Path and query.
    pub path: String,
    /// Headers (lowercase names; repeated headers joined with `, `).
    pub headers: BTreeMap<String, String>,
    /// The JSON body (`Value::Null` when not JSON).
    pub body: Value,
}

impl RecordedRequest {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

#[derive(Debug, Default)]
struct StubState {
    queue: VecDeque<StubReply>,
    default: Option<StubReply>,
    requests: Vec<RecordedRequest>,
    served: usize,
    recording: bool,
}

type Shared = Arc<Mutex<StubState>>;

fn lock(state: &Shared) -> MutexGuard<'_, StubState> {
    match state.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// The running stub server; stops when dropped.
#[derive(Debug)]
pub struct StubModel {
    addr: SocketAddr,
    state: Shared,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for StubModel {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl StubModel {
    /// Starts a stub on a free loopback port.
    pub async fn start() -> std::io::Result<Self> {
        let state: Shared = Arc::new(Mutex::new(StubState {
            recording: true,
            ..StubState::default()
        }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&state));
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                eprintln!("stub model server stopped: {e}");
            }
        });
        Ok(Self {
            addr,
            state,
            server,
        })
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL for a provider speaking `wire` (OpenAI's includes `/v1`).
    pub fn base_url(&self, wire: Wire) -> String {
        match wire {
            Wire::OpenAi => format!("http://{}/v1", self.addr),
            Wire::Anthropic | Wire::Gemini => format!("http://{}", self.addr),
        }
    }

    /// Queues a reply (replies are served in order).
    pub fn push(&self, reply: StubReply) {
        lock(&self.state).queue.push_back(reply);
    }

    /// The reply served when the queue is empty (without one: a 500 saying nothing is
    /// programmed).
    pub fn set_default(&self, reply: StubReply) {
        lock(&self.state).default = Some(reply);
    }

    /// Turns request recording on or off (off for benchmarks).
    pub fn set_recording(&self, on: bool) {
        lock(&self.state).recording = on;
    }

    /// The requests received so far (while recording).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).requests.clone()
    }

    /// How many requests were received (recorded or not).
    pub fn request_count(&self) -> usize {
        lock(&self.state).served
    }
}

async fn handle(
    State(state): State<Shared>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_string(), |pq| pq.as_str().to_string());
    let wire = Wire::of_path(uri.path());
    let request_body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (reply, number) = {
        let mut s = lock(&state);
        s.served += 1;
        let number = s.served;
        if s.recording {
            let mut recorded = BTreeMap::new();
            for (name, value) in &headers {
                let value = String::from_utf8_lossy(value.as_bytes()).to_string();
                recorded
                    .entry(name.as_str().to_string())
                    .and_modify(|v: &mut String| {
                        v.push_str(", ");
                        v.push_str(&value);
                    })
                    .or_insert(value);
            }
            s.requests.push(RecordedRequest {
                wire,
                path: path.clone(),
                headers: recorded,
                body: request_body.clone(),
            });
        }
        let reply = s.queue.pop_front().or_else(|| s.default.clone());
        (reply, number)
    };
    let Some(wire) = wire else {
        return (
            StatusCode::NOT_FOUND,
            format!("the stub does not serve {path}"),
        )
            .into_response();
    };
    let reply = reply.unwrap_or_else(|| StubReply::error(500, "the stub has no reply programmed"));
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let model = request_body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("stub-model")
        .to_string();
    render(wire, &reply.body, &model, number)
}

/// A provider of the runner speaking `wire` to this stub, with `key` as its API key.
pub fn provider_for(
    stub: &StubModel,
    wire: Wire,
    key: Option<&str>,
    retry: orrery_runner::model::RetryPolicy,
    limits: orrery_runner::model::CallLimits,
) -> Result<Arc<dyn orrery_runner::model::ModelProvider>, orrery_runner::model::ModelError> {
    use orrery_runner::model::{AnthropicProvider, GeminiProvider, HttpCaller, OpenAiProvider};
    use orrery_runner::secrets::SecretValue;
    let client = orrery_runner::model::http::build_client()?;
    let http = HttpCaller::new(client, retry, limits);
    let base = stub.base_url(wire);
    let key = key.map(SecretValue::new);
    Ok(match wire {
        Wire::OpenAi => Arc::new(OpenAiProvider::new(http, Some(&base), key)),
        Wire::Anthropic => Arc::new(AnthropicProvider::new(http, Some(&base), key)),
        Wire::Gemini => Arc::new(GeminiProvider::new(http, Some(&base), key)),
    })
}
