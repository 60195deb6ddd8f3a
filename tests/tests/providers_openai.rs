//! The OpenAI-compatible chat completions provider against the stub server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod providers_common;

use orrery_runner::model::{CallLimits, Message, ToolCall, Usage};
use orrery_tests::stub_model::{StubReply, Wire};
use providers_common::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const WIRE: Wire = Wire::OpenAi;
const MODEL: &str = "gpt-stub";

#[tokio::test]
async fn a_text_reply_comes_back_with_its_usage_and_the_key_is_sent_as_bearer() {
    let (stub, provider) = setup(WIRE, CallLimits::default()).await;
    stub.push(StubReply::text("Lag is growing.").usage(42, 7));
    let response = provider
        .complete(
            &request(MODEL, "Kafka consumer lag"),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(response.text.as_deref(), Some("Lag is growing."));
    assert!(response.tool_calls.is_empty());
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 42,
            output_tokens: 7
        }
    );

    let sent = &stub.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    let expected_auth = format!("Bearer {KEY}");
    assert_eq!(sent.header("authorization"), Some(expected_auth.as_str()));
    assert_eq!(sent.header("accept-encoding"), Some("identity"));
    assert_eq!(sent.body["model"], MODEL);
    assert_eq!(
        sent.body["messages"],
        json!([
            {"role": "system", "content": "You write briefs."},
            {"role": "user", "content": "Kafka consumer lag"}
        ])
    );
    assert_eq!(sent.body["max_completion_tokens"], 256);
}

#[tokio::test]
async fn a_tool_call_round_trip_sends_the_schema_and_the_result_back() {
    let (stub, provider) = setup(WIRE, CallLimits::default()).await;
    stub.push(StubReply::tool_call("mcp_docs_search", json!({"query": "lag"})).usage(10, 5));
    stub.push(StubReply::text("Found it.").usage(20, 3));
    let mut req = request(MODEL, "Kafka consumer lag");
    req.tools = vec![search_tool()];
    let cancel = CancellationToken::new();

    let first = provider.complete(&req, &cancel).await.unwrap();
    assert_eq!(first.text, None);
    assert_eq!(first.tool_calls.len(), 1);
    let call = first.tool_calls[0].clone();
    assert_eq!(call.name, "mcp_docs_search");
    assert_eq!(call.arguments, json!({"query": "lag"}));
    assert!(!call.id.is_empty());
    assert_eq!(first.usage.total(), 15);

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
    assert_eq!(second.text.as_deref(), Some("Found it."));

    let sent = stub.requests();
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

#[tokio::test]
async fn several_tool_calls_in_one_reply_keep_their_ids() {
    let (stub, provider) = setup(WIRE, CallLimits::default()).await;
    stub.push(StubReply::tool_call("a", json!({})).and_tool_call(
        Some("call_fixed"),
        "b",
        json!({"n": 1}),
    ));
    let response = provider
        .complete(&request(MODEL, "x"), &CancellationToken::new())
        .await
        .unwrap();
    let names: Vec<_> = response
        .tool_calls
        .iter()
        .map(|c: &ToolCall| c.name.as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(response.tool_calls[1].id, "call_fixed");
    assert_ne!(response.tool_calls[0].id, response.tool_calls[1].id);
}

#[tokio::test]
async fn a_labelled_request_uses_a_strict_json_schema_and_returns_the_json() {
    let (stub, provider) = setup(WIRE, CallLimits::default()).await;
    stub.push(StubReply::text(
        r#"{"label":"accept","answer":"Good draft."}"#,
    ));
    let mut req = request(MODEL, "draft");
    req.labels = Some(vec!["accept".into(), "revise".into()]);
    let response = provider
        .complete(&req, &CancellationToken::new())
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(response.text.as_deref().unwrap()).unwrap();
    assert_eq!(answer, json!({"label": "accept", "answer": "Good draft."}));

    let format = &stub.requests()[0].body["response_format"];
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

#[tokio::test]
async fn a_keyless_local_server_gets_no_authorization_header() {
    let stub = orrery_tests::stub_model::StubModel::start().await.unwrap();
    let provider = orrery_tests::stub_model::provider_for(
        &stub,
        WIRE,
        None,
        fast_retry(),
        CallLimits::default(),
    )
    .unwrap();
    stub.push(StubReply::text("hi"));
    provider
        .complete(&request(MODEL, "x"), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(stub.requests()[0].header("authorization"), None);
}

common_provider_tests!(WIRE, MODEL);
