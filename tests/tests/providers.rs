//! The three model providers against the stub server, as one table over their wire formats:
//! OpenAI chat completions, Anthropic Messages and Gemini generateContent. Every behaviour is
//! run for each format (the failure names the format); what differs between the formats (the
//! path, the key header, the body's shape) is in the table. The few behaviours only one format
//! has (Anthropic's and Gemini's `set_response`, Gemini's own call ids) come last.
//!
//! No assertion compares wall-clock durations with a thin margin: a delay that must not be
//! waited for is minutes long, far beyond any bound, and cancels fire once the stub has the
//! request in hand, not after a guessed sleep.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use orrery_runner::model::{
    CallLimits, ChatRequest, ChatResponse, Message, ModelError, ModelProvider, RetryPolicy,
    ToolCall, ToolSpec, Usage,
};
use orrery_tests::stub_model::{RecordedRequest, StubModel, StubReply, Wire, provider_for};
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The API key the tests use; it must never appear in an error.
const KEY: &str = "sk-stub-7f3a9c1e5b";

/// A delay no test may wait out: a reply or a backoff this long means the behaviour broke.
const NEVER: Duration = Duration::from_secs(600);

/// How long a call that must end early (cancelled, timed out) may take at most. Only a call
/// that waits for [`NEVER`] comes near it: the bound turns a hang into a failure and measures
/// nothing finer.
const HANG: Duration = Duration::from_secs(60);

/// What one wire format sends and answers.
struct Format {
    wire: Wire,
    model: &'static str,
    /// The request of a plain call (system prompt, one user message, a 256-token cap): path,
    /// key header and body.
    text_request: fn(&RecordedRequest),
    /// A tool-call round trip: the first reply, the tool declared in the first request, and
    /// the call and its result sent back in the second.
    tool_round_trip: fn(&ChatResponse, &[RecordedRequest], &ToolCall),
    /// How the model answers a labelled request with `answer` (a `{label, answer}` object).
    labelled_reply: fn(&Value) -> StubReply,
    /// The request of a labelled call with the labels `accept` and `revise`.
    labelled_request: fn(&Value),
}

const FORMATS: [Format; 3] = [
    Format {
        wire: Wire::OpenAi,
        model: "gpt-stub",
        text_request: openai_text_request,
        tool_round_trip: openai_tool_round_trip,
        labelled_reply: answer_as_text,
        labelled_request: openai_labelled_request,
    },
    Format {
        wire: Wire::Anthropic,
        model: "claude-stub",
        text_request: anthropic_text_request,
        tool_round_trip: anthropic_tool_round_trip,
        labelled_reply: answer_through_set_response,
        labelled_request: anthropic_labelled_request,
    },
    Format {
        wire: Wire::Gemini,
        model: "gemini-stub",
        text_request: gemini_text_request,
        tool_round_trip: gemini_tool_round_trip,
        labelled_reply: answer_as_text,
        labelled_request: gemini_labelled_request,
    },
];

fn format(wire: Wire) -> &'static Format {
    FORMATS.iter().find(|f| f.wire == wire).unwrap()
}

// ---- OpenAI chat completions ----

fn openai_text_request(sent: &RecordedRequest) {
    assert_eq!(sent.path, "/v1/chat/completions");
    let expected_auth = format!("Bearer {KEY}");
    assert_eq!(sent.header("authorization"), Some(expected_auth.as_str()));
    assert_eq!(sent.body["model"], "gpt-stub");
    assert_eq!(
        sent.body["messages"],
        json!([
            {"role": "system", "content": "You write briefs."},
            {"role": "user", "content": "Kafka consumer lag"}
        ])
    );
    assert_eq!(sent.body["max_completion_tokens"], 256);
}

fn openai_tool_round_trip(first: &ChatResponse, sent: &[RecordedRequest], call: &ToolCall) {
    assert_eq!(first.text, None);
    assert_eq!(
        sent[0].body["tools"],
        json!([{"type": "function", "function": {
            "name": "mcp_docs_search",
            "description": "Search the docs",
            "parameters": search_tool().input_schema
        }}])
    );
    let messages = sent[1].body["messages"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(
        messages[2]["tool_calls"][0]["id"],
        Value::String(call.id.clone())
    );
    let args: Value = serde_json::from_str(
        messages[2]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(args, json!({"query": "lag"}));
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": call.id, "content": "lag doc"})
    );
}

fn openai_labelled_request(body: &Value) {
    let format = &body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(
        format["json_schema"]["schema"]["properties"]["label"]["enum"],
        json!(["accept", "revise"])
    );
    assert_eq!(
        format["json_schema"]["schema"]["required"],
        json!(["label", "answer"])
    );
}

// ---- Anthropic Messages ----

fn anthropic_text_request(sent: &RecordedRequest) {
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.body["model"], "claude-stub");
    assert_eq!(sent.body["system"], "You write briefs.");
    assert_eq!(sent.body["max_tokens"], 256);
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "Kafka consumer lag"}]}])
    );
}

fn anthropic_tool_round_trip(_: &ChatResponse, sent: &[RecordedRequest], call: &ToolCall) {
    assert_eq!(
        sent[0].body["tools"],
        json!([{
            "name": "mcp_docs_search",
            "description": "Search the docs",
            "input_schema": search_tool().input_schema
        }])
    );
    assert!(sent[0].body.get("tool_choice").is_none());
    let messages = sent[1].body["messages"].as_array().unwrap();
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": call.id, "name": "mcp_docs_search", "input": {"query": "lag"}}
        ]})
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call.id, "content": "lag doc", "is_error": false}
        ]})
    );
}

fn anthropic_labelled_request(body: &Value) {
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "set_response"})
    );
    assert_eq!(body["tools"][0]["name"], "set_response");
    assert_eq!(
        body["tools"][0]["input_schema"]["properties"]["label"]["enum"],
        json!(["accept", "revise"])
    );
}

// ---- Gemini generateContent ----

fn gemini_text_request(sent: &RecordedRequest) {
    assert_eq!(sent.path, "/v1beta/models/gemini-stub:generateContent");
    assert_eq!(sent.header("x-goog-api-key"), Some(KEY));
    assert!(!sent.path.contains(KEY), "the key is never in the URL");
    assert_eq!(
        sent.body["systemInstruction"],
        json!({"parts": [{"text": "You write briefs."}]})
    );
    assert_eq!(
        sent.body["contents"],
        json!([{"role": "user", "parts": [{"text": "Kafka consumer lag"}]}])
    );
    assert_eq!(sent.body["generationConfig"]["maxOutputTokens"], 256);
}

fn gemini_tool_round_trip(_: &ChatResponse, sent: &[RecordedRequest], _: &ToolCall) {
    assert_eq!(
        sent[0].body["tools"],
        json!([{"functionDeclarations": [{
            "name": "mcp_docs_search",
            "description": "Search the docs",
            "parametersJsonSchema": search_tool().input_schema
        }]}])
    );
    let contents = sent[1].body["contents"].as_array().unwrap();
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [
            {"functionCall": {"name": "mcp_docs_search", "args": {"query": "lag"}}}
        ]})
    );
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "mcp_docs_search", "response": {"content": "lag doc"}}}
        ]})
    );
}

fn gemini_labelled_request(body: &Value) {
    let config = &body["generationConfig"];
    assert_eq!(config["responseMimeType"], "application/json");
    assert_eq!(
        config["responseSchema"]["properties"]["label"]["enum"],
        json!(["accept", "revise"])
    );
}

// ---- labelled answers ----

/// OpenAI and Gemini answer a labelled request with the JSON as text.
fn answer_as_text(answer: &Value) -> StubReply {
    StubReply::text(&answer.to_string())
}

/// Anthropic answers it by calling the forced `set_response` tool.
fn answer_through_set_response(answer: &Value) -> StubReply {
    StubReply::tool_call("set_response", answer.clone())
}

// ---- helpers ----

/// A retry policy fast enough for tests.
fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        max_retry_after: Duration::from_millis(50),
    }
}

/// A retry policy whose every backoff is [`NEVER`] unless a `Retry-After` cuts it.
fn endless_backoff(max_attempts: u32, max_retry_after: Duration) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        base_delay: NEVER,
        max_delay: NEVER,
        max_retry_after,
    }
}

/// A stub and a provider speaking `wire` to it.
async fn setup(wire: Wire, limits: CallLimits) -> (StubModel, Arc<dyn ModelProvider>) {
    setup_with(wire, Some(KEY), fast_retry(), limits).await
}

async fn setup_with(
    wire: Wire,
    key: Option<&str>,
    retry: RetryPolicy,
    limits: CallLimits,
) -> (StubModel, Arc<dyn ModelProvider>) {
    let stub = StubModel::start().await.unwrap();
    let provider = provider_for(&stub, wire, key, retry, limits).unwrap();
    (stub, provider)
}

/// A plain request from node `writer`.
fn request(model: &str, input: &str) -> ChatRequest {
    ChatRequest {
        node_id: "writer".into(),
        model: model.into(),
        system: Some("You write briefs.".into()),
        messages: vec![Message::User { text: input.into() }],
        tools: Vec::new(),
        labels: None,
        max_output_tokens: Some(256),
    }
}

/// The search tool offered in tool tests.
fn search_tool() -> ToolSpec {
    ToolSpec {
        name: "mcp_docs_search".into(),
        description: "Search the docs".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"]
        }),
    }
}

/// Runs `call`, which must end on its own (see [`HANG`]).
async fn ends<T>(wire: Wire, call: impl Future<Output = T>) -> T {
    tokio::time::timeout(HANG, call)
        .await
        .unwrap_or_else(|_| panic!("{wire:?}: the call waited for a reply or backoff it must not"))
}

/// Runs `call`, cancelling `cancel` once the stub has received `requests` requests and `settle`
/// has passed since (the call is then in flight, or in its backoff), not after a guessed delay.
async fn cancel_once_received<T>(
    stub: &StubModel,
    requests: usize,
    settle: Duration,
    cancel: &CancellationToken,
    call: impl Future<Output = T>,
) -> T {
    let trigger = async {
        while stub.request_count() < requests {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(settle).await;
        cancel.cancel();
        std::future::pending::<()>().await;
    };
    tokio::select! {
        out = call => out,
        () = trigger => unreachable!("the trigger never ends"),
    }
}

// ---- every format ----

#[tokio::test]
async fn a_text_reply_comes_back_with_its_usage_and_the_key_in_the_formats_own_header() {
    for f in &FORMATS {
        let (stub, provider) = setup(f.wire, CallLimits::default()).await;
        stub.push(StubReply::text("Lag is growing.").usage(42, 7));
        let response = provider
            .complete(
                &request(f.model, "Kafka consumer lag"),
                &CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(
            response.text.as_deref(),
            Some("Lag is growing."),
            "{:?}",
            f.wire
        );
        assert!(response.tool_calls.is_empty(), "{:?}", f.wire);
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 42,
                output_tokens: 7
            },
            "{:?}",
            f.wire
        );
        let sent = &stub.requests()[0];
        assert_eq!(
            sent.header("accept-encoding"),
            Some("identity"),
            "{:?}",
            f.wire
        );
        (f.text_request)(sent);
    }
}

#[tokio::test]
async fn a_tool_call_round_trip_sends_the_schema_and_the_result_back() {
    for f in &FORMATS {
        let (stub, provider) = setup(f.wire, CallLimits::default()).await;
        stub.push(StubReply::tool_call("mcp_docs_search", json!({"query": "lag"})).usage(10, 5));
        stub.push(StubReply::text("Found it.").usage(20, 3));
        let mut req = request(f.model, "Kafka consumer lag");
        req.tools = vec![search_tool()];
        let cancel = CancellationToken::new();

        let first = provider.complete(&req, &cancel).await.unwrap();
        assert_eq!(first.tool_calls.len(), 1, "{:?}", f.wire);
        let call = first.tool_calls[0].clone();
        assert_eq!(call.name, "mcp_docs_search");
        assert_eq!(call.arguments, json!({"query": "lag"}));
        assert!(
            !call.id.is_empty(),
            "{:?}: an id, generated when the format gives none",
            f.wire
        );
        assert_eq!(
            first.usage,
            Usage {
                input_tokens: 10,
                output_tokens: 5
            },
            "{:?}",
            f.wire
        );

        req.messages.push(Message::Assistant {
            text: None,
            tool_calls: vec![call.clone()],
        });
        req.messages.push(Message::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: "lag doc".into(),
            is_error: false,
        });
        let second = provider.complete(&req, &cancel).await.unwrap();
        assert_eq!(second.text.as_deref(), Some("Found it."), "{:?}", f.wire);
        (f.tool_round_trip)(&first, &stub.requests(), &call);
    }
}

#[tokio::test]
async fn several_tool_calls_in_one_reply_keep_their_ids() {
    for f in &FORMATS {
        let (stub, provider) = setup(f.wire, CallLimits::default()).await;
        stub.push(StubReply::tool_call("a", json!({})).and_tool_call(
            Some("call_fixed"),
            "b",
            json!({"n": 1}),
        ));
        let response = provider
            .complete(&request(f.model, "x"), &CancellationToken::new())
            .await
            .unwrap();
        let names: Vec<_> = response
            .tool_calls
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(names, ["a", "b"], "{:?}", f.wire);
        assert_eq!(response.tool_calls[1].id, "call_fixed", "{:?}", f.wire);
        assert_ne!(
            response.tool_calls[0].id, response.tool_calls[1].id,
            "{:?}",
            f.wire
        );
    }
}

#[tokio::test]
async fn a_labelled_request_asks_for_a_labelled_answer_and_returns_its_json_as_text() {
    let answer = json!({"label": "revise", "answer": "Needs sources."});
    for f in &FORMATS {
        let (stub, provider) = setup(f.wire, CallLimits::default()).await;
        stub.push((f.labelled_reply)(&answer));
        let mut req = request(f.model, "draft");
        req.labels = Some(vec!["accept".into(), "revise".into()]);
        let response = provider
            .complete(&req, &CancellationToken::new())
            .await
            .unwrap();
        assert!(
            response.tool_calls.is_empty(),
            "{:?}: set_response is not a tool to run",
            f.wire
        );
        let got: Value = serde_json::from_str(response.text.as_deref().unwrap()).unwrap();
        assert_eq!(got, answer, "{:?}", f.wire);
        (f.labelled_request)(&stub.requests()[0].body);
    }
}

#[tokio::test]
async fn a_keyless_local_server_gets_no_key_header() {
    for f in &FORMATS {
        let (stub, provider) = setup_with(f.wire, None, fast_retry(), CallLimits::default()).await;
        stub.push(StubReply::text("hi"));
        provider
            .complete(&request(f.model, "x"), &CancellationToken::new())
            .await
            .unwrap();
        let sent = &stub.requests()[0];
        for header in ["authorization", "x-api-key", "x-goog-api-key"] {
            assert_eq!(sent.header(header), None, "{:?}: {header}", f.wire);
        }
    }
}

#[tokio::test]
async fn a_client_error_is_refused_with_the_message_and_without_the_key() {
    for f in &FORMATS {
        let (stub, provider) = setup(f.wire, CallLimits::default()).await;
        stub.push(StubReply::error(
            400,
            &format!("model nope does not exist (key {KEY})"),
        ));
        let err = provider
            .complete(&request("nope", "x"), &CancellationToken::new())
            .await
            .unwrap_err();
        let text = err.to_string();
        match &err {
            ModelError::Refused { status, message } => {
                assert_eq!(*status, 400);
                assert!(
                    message.contains("model nope does not exist"),
                    "{:?}: {message}",
                    f.wire
                );
            }
            other => panic!("{:?}: expected Refused, got {other:?}", f.wire),
        }
        assert!(!text.contains(KEY), "{:?}: the key leaked: {text}", f.wire);
        assert!(
            !format!("{err:?}").contains(KEY),
            "{:?}: the key leaked in Debug",
            f.wire
        );
        assert_eq!(
            stub.request_count(),
            1,
            "{:?}: a 4xx is not retried",
            f.wire
        );
    }
}

#[tokio::test]
async fn rate_limits_are_retried_until_success() {
    for f in &FORMATS {
        let (stub, provider) = setup(f.wire, CallLimits::default()).await;
        stub.push(StubReply::rate_limited());
        stub.push(StubReply::rate_limited());
        stub.push(StubReply::text("finally").usage(3, 2));
        let response = provider
            .complete(&request(f.model, "x"), &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(response.text.as_deref(), Some("finally"), "{:?}", f.wire);
        assert_eq!(stub.request_count(), 3, "{:?}: two retries", f.wire);
    }
}

#[tokio::test]
async fn endless_rate_limits_exhaust_the_attempts() {
    for f in &FORMATS {
        let (stub, provider) = setup(f.wire, CallLimits::default()).await;
        stub.set_default(StubReply::rate_limited());
        let err = provider
            .complete(&request(f.model, "x"), &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                ModelError::Exhausted {
                    attempts: 4,
                    status: 429
                }
            ),
            "{:?}: {err:?}",
            f.wire
        );
        assert_eq!(stub.request_count(), 4, "{:?}", f.wire);
    }
}

#[tokio::test]
async fn server_errors_are_retried_then_exhausted() {
    for f in &FORMATS {
        let (stub, provider) = setup(f.wire, CallLimits::default()).await;
        stub.push(StubReply::error(503, "overloaded"));
        stub.push(StubReply::text("recovered"));
        let ok = provider
            .complete(&request(f.model, "x"), &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(ok.text.as_deref(), Some("recovered"), "{:?}", f.wire);
        stub.set_default(StubReply::error(500, "broken"));
        let err = provider
            .complete(&request(f.model, "x"), &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                ModelError::Exhausted {
                    attempts: 4,
                    status: 500
                }
            ),
            "{:?}: {err:?}",
            f.wire
        );
        assert_eq!(stub.request_count(), 2 + 4, "{:?}", f.wire);
    }
}

#[tokio::test]
async fn a_reply_slower_than_the_timeout_fails_with_timeout() {
    let limits = CallLimits {
        timeout: Duration::from_secs(1),
        ..CallLimits::default()
    };
    for f in &FORMATS {
        let (stub, provider) = setup(f.wire, limits.clone()).await;
        stub.push(StubReply::text("late").delayed(NEVER));
        let err = ends(
            f.wire,
            provider.complete(&request(f.model, "x"), &CancellationToken::new()),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, ModelError::Timeout(1)),
            "{:?}: {err:?}",
            f.wire
        );
    }
}

#[tokio::test]
async fn a_cancel_mid_call_returns_cancelled_without_waiting_for_the_reply() {
    for f in &FORMATS {
        let (stub, provider) = setup(f.wire, CallLimits::default()).await;
        stub.push(StubReply::text("never").delayed(NEVER));
        let cancel = CancellationToken::new();
        let req = request(f.model, "x");
        let call = provider.complete(&req, &cancel);
        let err = ends(
            f.wire,
            cancel_once_received(&stub, 1, Duration::ZERO, &cancel, call),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, ModelError::Cancelled),
            "{:?}: {err:?}",
            f.wire
        );
        assert_eq!(
            stub.request_count(),
            1,
            "{:?}: the call was in flight",
            f.wire
        );
    }
}

#[tokio::test]
async fn a_cancel_during_a_retry_backoff_returns_cancelled_without_waiting_it_out() {
    for f in &FORMATS {
        let (stub, provider) = setup_with(
            f.wire,
            Some(KEY),
            endless_backoff(4, NEVER),
            CallLimits::default(),
        )
        .await;
        stub.set_default(StubReply::error(503, "busy"));
        let cancel = CancellationToken::new();
        let req = request(f.model, "x");
        let call = provider.complete(&req, &cancel);
        // The 503 comes at once, so 100 ms after it arrived the call sleeps in its backoff; a
        // cancel that came earlier must end the call Cancelled all the same.
        let err = ends(
            f.wire,
            cancel_once_received(&stub, 1, Duration::from_millis(100), &cancel, call),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, ModelError::Cancelled),
            "{:?}: {err:?}",
            f.wire
        );
        assert_eq!(
            stub.request_count(),
            1,
            "{:?}: cancelled in the backoff, before a retry",
            f.wire
        );
    }
}

#[tokio::test]
async fn retry_after_replaces_the_backoff_up_to_a_cap() {
    for f in &FORMATS {
        let (stub, provider) = setup_with(
            f.wire,
            Some(KEY),
            endless_backoff(3, Duration::from_millis(300)),
            CallLimits::default(),
        )
        .await;
        stub.push(StubReply::rate_limited().retry_after("0.1"));
        stub.push(StubReply::rate_limited().retry_after("3600"));
        stub.push(StubReply::text("ok"));
        let started = Instant::now();
        // The backoff alone would wait NEVER, and the second Retry-After an hour: ending at all
        // shows both were replaced, by 0.1 s and by the 0.3 s cap.
        let response = ends(
            f.wire,
            provider.complete(&request(f.model, "x"), &CancellationToken::new()),
        )
        .await
        .unwrap();
        assert_eq!(response.text.as_deref(), Some("ok"), "{:?}", f.wire);
        assert_eq!(stub.request_count(), 3, "{:?}", f.wire);
        // A lower bound holds whatever the scheduler does.
        assert!(
            started.elapsed() >= Duration::from_millis(400),
            "{:?}: waited 0.1 s + the 0.3 s cap: {:?}",
            f.wire,
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn a_reply_over_the_byte_cap_is_refused_naming_the_cap() {
    let limits = CallLimits {
        max_reply_bytes: 1024,
        ..CallLimits::default()
    };
    for f in &FORMATS {
        let (stub, provider) = setup(f.wire, limits.clone()).await;
        stub.push(StubReply::text(&"x".repeat(4096)));
        let err = provider
            .complete(&request(f.model, "x"), &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            matches!(err, ModelError::BadReply(ref m) if m.contains("1024")),
            "{:?}: {err:?}",
            f.wire
        );
    }
}

#[tokio::test]
async fn compressed_or_malformed_replies_are_bad_replies() {
    for f in &FORMATS {
        let (stub, provider) = setup(f.wire, CallLimits::default()).await;
        stub.push(StubReply::raw(
            200,
            &[
                ("content-type", "application/json"),
                ("content-encoding", "gzip"),
            ],
            &[0x1f, 0x8b, 0x08, 0x00],
        ));
        stub.push(StubReply::raw(
            200,
            &[("content-type", "text/html")],
            b"<html>proxy</html>",
        ));
        for expected in ["compressed", "not the expected JSON"] {
            let err = provider
                .complete(&request(f.model, "x"), &CancellationToken::new())
                .await
                .unwrap_err();
            assert!(
                matches!(err, ModelError::BadReply(ref m) if m.contains(expected)),
                "{:?}: {err:?}",
                f.wire
            );
        }
    }
}

// ---- one format only ----

#[tokio::test]
async fn anthropic_a_labelled_request_with_tools_lets_the_model_call_them_first() {
    let f = format(Wire::Anthropic);
    let (stub, provider) = setup(f.wire, CallLimits::default()).await;
    stub.push(StubReply::tool_call(
        "mcp_docs_search",
        json!({"query": "q"}),
    ));
    let mut req = request(f.model, "draft");
    req.tools = vec![search_tool()];
    req.labels = Some(vec!["accept".into()]);
    let response = provider
        .complete(&req, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.tool_calls[0].name, "mcp_docs_search");
    let body = &stub.requests()[0].body;
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
    assert_eq!(body["tools"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn gemini_call_ids_are_kept_and_sent_back() {
    let f = format(Wire::Gemini);
    let (stub, provider) = setup(f.wire, CallLimits::default()).await;
    stub.push(StubReply::text("").and_tool_call(Some("fc-9"), "mcp_docs_search", json!({})));
    stub.push(StubReply::text("done"));
    let mut req = request(f.model, "x");
    req.tools = vec![search_tool()];
    let cancel = CancellationToken::new();
    let first = provider.complete(&req, &cancel).await.unwrap();
    assert_eq!(first.tool_calls[0].id, "fc-9");
    req.messages.push(Message::Assistant {
        text: None,
        tool_calls: first.tool_calls.clone(),
    });
    req.messages.push(Message::ToolResult {
        call_id: "fc-9".into(),
        name: "mcp_docs_search".into(),
        content: "failed".into(),
        is_error: true,
    });
    provider.complete(&req, &cancel).await.unwrap();
    let contents = stub.requests()[1].body["contents"].clone();
    assert_eq!(contents[1]["parts"][0]["functionCall"]["id"], "fc-9");
    assert_eq!(
        contents[2]["parts"][0]["functionResponse"],
        json!({"name": "mcp_docs_search", "id": "fc-9", "response": {"error": "failed"}})
    );
}

#[tokio::test]
async fn gemini_a_labelled_request_with_tools_answers_through_set_response() {
    let f = format(Wire::Gemini);
    let (stub, provider) = setup(f.wire, CallLimits::default()).await;
    stub.push(StubReply::tool_call(
        "set_response",
        json!({"label": "revise", "answer": "More."}),
    ));
    let mut req = request(f.model, "draft");
    req.tools = vec![search_tool()];
    req.labels = Some(vec!["accept".into(), "revise".into()]);
    let response = provider
        .complete(&req, &CancellationToken::new())
        .await
        .unwrap();
    assert!(response.tool_calls.is_empty());
    let answer: Value = serde_json::from_str(response.text.as_deref().unwrap()).unwrap();
    assert_eq!(answer, json!({"label": "revise", "answer": "More."}));
    let body = &stub.requests()[0].body;
    assert_eq!(body["toolConfig"]["functionCallingConfig"]["mode"], "ANY");
    assert!(body["generationConfig"].get("responseMimeType").is_none());
}
