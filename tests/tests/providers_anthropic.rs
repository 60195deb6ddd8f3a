//! The Anthropic Messages provider against the stub server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod providers_common;

use orrery_runner::model::{CallLimits, Message, Usage};
use orrery_tests::stub_model::{StubReply, Wire};
use providers_common::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const WIRE: Wire = Wire::Anthropic;
const MODEL: &str = "claude-stub";

#[tokio::test]
async fn a_text_reply_comes_back_with_its_usage_and_the_key_is_sent_as_x_api_key() {
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
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 42,
            output_tokens: 7
        }
    );

    let sent = &stub.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.header("accept-encoding"), Some("identity"));
    assert_eq!(sent.body["model"], MODEL);
    assert_eq!(sent.body["system"], "You write briefs.");
    assert_eq!(sent.body["max_tokens"], 256);
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "Kafka consumer lag"}]}])
    );
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
    assert_eq!(first.tool_calls.len(), 1);
    let call = first.tool_calls[0].clone();
    assert_eq!(call.name, "mcp_docs_search");
    assert_eq!(call.arguments, json!({"query": "lag"}));
    assert_eq!(
        first.usage,
        Usage {
            input_tokens: 10,
            output_tokens: 5
        }
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
    assert_eq!(second.text.as_deref(), Some("Found it."));

    let sent = stub.requests();
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

#[tokio::test]
async fn a_labelled_request_forces_set_response_and_returns_its_input_as_text() {
    let (stub, provider) = setup(WIRE, CallLimits::default()).await;
    stub.push(StubReply::tool_call(
        "set_response",
        json!({"label": "revise", "answer": "Needs sources."}),
    ));
    let mut req = request(MODEL, "draft");
    req.labels = Some(vec!["accept".into(), "revise".into()]);
    let response = provider
        .complete(&req, &CancellationToken::new())
        .await
        .unwrap();
    assert!(
        response.tool_calls.is_empty(),
        "set_response is not a tool to run"
    );
    let answer: Value = serde_json::from_str(response.text.as_deref().unwrap()).unwrap();
    assert_eq!(
        answer,
        json!({"label": "revise", "answer": "Needs sources."})
    );

    let body = &stub.requests()[0].body;
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

#[tokio::test]
async fn a_labelled_request_with_tools_lets_the_model_call_them_first() {
    let (stub, provider) = setup(WIRE, CallLimits::default()).await;
    stub.push(StubReply::tool_call(
        "mcp_docs_search",
        json!({"query": "q"}),
    ));
    let mut req = request(MODEL, "draft");
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

common_provider_tests!(WIRE, MODEL);
