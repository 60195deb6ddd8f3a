//! Checks every real provider must pass against the stub server, whatever its wire format:
//! refusals, retries, exhaustion, timeouts and cancellation. Each `providers_*.rs` calls them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use orrery_runner::model::{
    CallLimits, ChatRequest, Message, ModelError, ModelProvider, RetryPolicy, ToolSpec,
};
use orrery_tests::stub_model::{StubModel, StubReply, Wire, provider_for};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The API key the tests use; it must never appear in an error.
pub const KEY: &str = "sk-stub-7f3a9c1e5b";

/// A retry policy fast enough for tests.
pub fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        max_retry_after: Duration::from_millis(50),
    }
}

/// A stub and a provider speaking `wire` to it.
pub async fn setup(wire: Wire, limits: CallLimits) -> (StubModel, Arc<dyn ModelProvider>) {
    let stub = StubModel::start().await.unwrap();
    let provider = provider_for(&stub, wire, Some(KEY), fast_retry(), limits).unwrap();
    (stub, provider)
}

/// A plain request from node `writer`.
pub fn request(model: &str, input: &str) -> ChatRequest {
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
pub fn search_tool() -> ToolSpec {
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

/// A 400 is refused with the provider's message, and the key never shows.
pub async fn a_client_error_is_refused_with_the_message_and_without_the_key(wire: Wire) {
    let (stub, provider) = setup(wire, CallLimits::default()).await;
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
            assert!(message.contains("model nope does not exist"), "{message}");
        }
        other => panic!("expected Refused, got {other:?}"),
    }
    assert!(!text.contains(KEY), "the key leaked: {text}");
    assert!(!format!("{err:?}").contains(KEY), "the key leaked in Debug");
    assert_eq!(stub.request_count(), 1, "a 4xx is not retried");
}

/// 429s are retried (honouring `Retry-After`) until success.
pub async fn rate_limits_are_retried_until_success(wire: Wire, model: &str) {
    let (stub, provider) = setup(wire, CallLimits::default()).await;
    stub.push(StubReply::rate_limited());
    stub.push(StubReply::rate_limited());
    stub.push(StubReply::text("finally").usage(3, 2));
    let response = provider
        .complete(&request(model, "x"), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.text.as_deref(), Some("finally"));
    assert_eq!(stub.request_count(), 3, "two retries");
}

/// A provider that keeps answering 429 exhausts the attempts.
pub async fn endless_rate_limits_exhaust_the_attempts(wire: Wire, model: &str) {
    let (stub, provider) = setup(wire, CallLimits::default()).await;
    stub.set_default(StubReply::rate_limited());
    let err = provider
        .complete(&request(model, "x"), &CancellationToken::new())
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
        "{err:?}"
    );
    assert_eq!(stub.request_count(), 4);
}

/// Server errors are retried with backoff, then reported as exhausted.
pub async fn server_errors_are_retried_then_exhausted(wire: Wire, model: &str) {
    let (stub, provider) = setup(wire, CallLimits::default()).await;
    stub.push(StubReply::error(503, "overloaded"));
    stub.push(StubReply::text("recovered"));
    let ok = provider
        .complete(&request(model, "x"), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(ok.text.as_deref(), Some("recovered"));
    stub.set_default(StubReply::error(500, "broken"));
    let err = provider
        .complete(&request(model, "x"), &CancellationToken::new())
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
        "{err:?}"
    );
    assert_eq!(stub.request_count(), 2 + 4);
}

/// A reply slower than the entry's timeout fails with Timeout.
pub async fn a_slow_reply_times_out(wire: Wire, model: &str) {
    let limits = CallLimits {
        timeout: Duration::from_secs(1),
        ..CallLimits::default()
    };
    let (stub, provider) = setup(wire, limits).await;
    stub.push(StubReply::text("late").delayed(Duration::from_secs(10)));
    let started = Instant::now();
    let err = provider
        .complete(&request(model, "x"), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Timeout(1)), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

/// Cancelling mid-call returns Cancelled promptly.
pub async fn a_cancelled_call_returns_promptly(wire: Wire, model: &str) {
    let (stub, provider) = setup(wire, CallLimits::default()).await;
    stub.push(StubReply::text("never").delayed(Duration::from_secs(30)));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let err = provider
        .complete(&request(model, "x"), &cancel)
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Cancelled), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(stub.request_count(), 1, "the call was in flight");
}

/// Cancelling during a retry backoff also returns promptly.
pub async fn a_cancel_during_backoff_returns_promptly(wire: Wire, model: &str) {
    let stub = StubModel::start().await.unwrap();
    let slow_retry = RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_secs(20),
        max_delay: Duration::from_secs(20),
        max_retry_after: Duration::from_secs(20),
    };
    let provider = provider_for(&stub, wire, Some(KEY), slow_retry, CallLimits::default()).unwrap();
    stub.set_default(StubReply::error(503, "busy"));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let err = provider
        .complete(&request(model, "x"), &cancel)
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Cancelled), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

/// A reply larger than the entry's byte cap is refused.
pub async fn an_oversized_reply_is_refused(wire: Wire, model: &str) {
    let limits = CallLimits {
        max_reply_bytes: 1024,
        ..CallLimits::default()
    };
    let (stub, provider) = setup(wire, limits).await;
    stub.push(StubReply::text(&"x".repeat(4096)));
    let err = provider
        .complete(&request(model, "x"), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ModelError::BadReply(ref m) if m.contains("1024")),
        "{err:?}"
    );
}

/// A compressed reply is refused before decoding, and so is a reply that is not JSON.
pub async fn compressed_or_malformed_replies_are_bad_replies(wire: Wire, model: &str) {
    let (stub, provider) = setup(wire, CallLimits::default()).await;
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
            .complete(&request(model, "x"), &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            matches!(err, ModelError::BadReply(ref m) if m.contains(expected)),
            "{err:?}"
        );
    }
}

/// `Retry-After` replaces the backoff, up to the policy's cap.
pub async fn retry_after_replaces_the_backoff_up_to_a_cap(wire: Wire, model: &str) {
    let stub = StubModel::start().await.unwrap();
    let policy = RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_secs(30),
        max_delay: Duration::from_secs(30),
        max_retry_after: Duration::from_millis(300),
    };
    let provider = provider_for(&stub, wire, Some(KEY), policy, CallLimits::default()).unwrap();
    stub.push(StubReply::rate_limited().retry_after("0.1"));
    stub.push(StubReply::rate_limited().retry_after("3600"));
    stub.push(StubReply::text("ok"));
    let started = Instant::now();
    let response = provider
        .complete(&request(model, "x"), &CancellationToken::new())
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(response.text.as_deref(), Some("ok"));
    assert!(
        elapsed >= Duration::from_millis(400),
        "waited 0.1 s + the 0.3 s cap: {elapsed:?}"
    );
    assert!(
        elapsed < Duration::from_secs(5),
        "neither the backoff nor 3600 s: {elapsed:?}"
    );
}

/// The shared behaviour tests, instantiated for one wire format and model name.
#[macro_export]
macro_rules! common_provider_tests {
    ($wire:expr, $model:expr) => {
        #[tokio::test]
        async fn client_errors_are_refused_with_the_message_and_without_the_key() {
            providers_common::a_client_error_is_refused_with_the_message_and_without_the_key($wire)
                .await;
        }

        #[tokio::test]
        async fn rate_limits_are_retried_then_succeed() {
            providers_common::rate_limits_are_retried_until_success($wire, $model).await;
        }

        #[tokio::test]
        async fn endless_rate_limits_are_exhausted() {
            providers_common::endless_rate_limits_exhaust_the_attempts($wire, $model).await;
        }

        #[tokio::test]
        async fn server_errors_are_retried() {
            providers_common::server_errors_are_retried_then_exhausted($wire, $model).await;
        }

        #[tokio::test]
        async fn a_slow_response_times_out() {
            providers_common::a_slow_reply_times_out($wire, $model).await;
        }

        #[tokio::test]
        async fn cancelling_mid_call_returns_promptly() {
            providers_common::a_cancelled_call_returns_promptly($wire, $model).await;
        }

        #[tokio::test]
        async fn cancelling_during_backoff_returns_promptly() {
            providers_common::a_cancel_during_backoff_returns_promptly($wire, $model).await;
        }

        #[tokio::test]
        async fn retry_after_is_honoured_up_to_a_cap() {
            providers_common::retry_after_replaces_the_backoff_up_to_a_cap($wire, $model).await;
        }

        #[tokio::test]
        async fn compressed_or_malformed_replies_are_refused() {
            providers_common::compressed_or_malformed_replies_are_bad_replies($wire, $model).await;
        }

        #[tokio::test]
        async fn an_oversized_reply_is_refused_by_the_byte_cap() {
            providers_common::an_oversized_reply_is_refused($wire, $model).await;
        }
    };
}
