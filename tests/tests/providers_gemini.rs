//! The Gemini generateContent provider against the stub server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod providers_common;

use orrery_runner::model::{CallLimits, Message, Usage};
use orrery_tests::stub_model::{StubReply, Wire};
use providers_common::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const WIRE: Wire = Wire::Gemini;
const MODEL: &str = "gemini-stub";

#[tokio::test]
async fn a_text_reply_comes_back_with_its_usage_and_the_key_is_sent_as_x_goog_api_key() {
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
    assert_eq!(sent.path, "/v1beta/models/gemini-stub:generateContent");
    assert_eq!(sent.header("x-goog-api-key"), Some(KEY));
    assert!(!sent.path.contains(KEY), "the key is never in the URL");
    assert_eq!(sent.header("accept-encoding"), Some("identity"));
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
    assert!(
        !call.id.is_empty(),
        "an id is generated when Gemini gives none"
    );
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

#[tokio::test]
async fn gemini_call_ids_are_kept_and_sent_back() {
    let (stub, provider) = setup(WIRE, CallLimits::default()).await;
    stub.push(StubReply::text("").and_tool_call(Some("fc-9"), "mcp_docs_search", json!({})));
    stub.push(StubReply::text("done"));
    let mut req = request(MODEL, "x");
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
async fn a_labelled_request_asks_for_json_with_a_response_schema() {
    let (stub, provider) = setup(WIRE, CallLimits::default()).await;
    stub.push(StubReply::text(r#"{"label":"accept","answer":"Good."}"#));
    let mut req = request(MODEL, "draft");
    req.labels = Some(vec!["accept".into(), "revise".into()]);
    let response = provider
        .complete(&req, &CancellationToken::new())
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(response.text.as_deref().unwrap()).unwrap();
    assert_eq!(answer, json!({"label": "accept", "answer": "Good."}));

    let config = &stub.requests()[0].body["generationConfig"];
    assert_eq!(config["responseMimeType"], "application/json");
    assert_eq!(
        config["responseSchema"]["properties"]["label"]["enum"],
        json!(["accept", "revise"])
    );
}

#[tokio::test]
async fn a_labelled_request_with_tools_answers_through_set_response() {
    let (stub, provider) = setup(WIRE, CallLimits::default()).await;
    stub.push(StubReply::tool_call(
        "set_response",
        json!({"label": "revise", "answer": "More."}),
    ));
    let mut req = request(MODEL, "draft");
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

common_provider_tests!(WIRE, MODEL);
