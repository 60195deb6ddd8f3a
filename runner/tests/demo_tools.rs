//! `demo-tools` with rmcp's own client over streamable HTTP: both the 2025-11-25 session model
//! (initialize, `Mcp-Session-Id`) and 2026-07-28 (`server/discover`, stateless).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod demo_support;

use orrery_runner::demo::clock::Clock;
use orrery_runner::demo::tools::TOOL_NAMES;
use orrery_runner::demo::{Fleet, FleetConfig, start_fleet};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

async fn fleet() -> Fleet {
    let clock = Clock::parse_fixed("2026-11-29T21:57:04Z").unwrap();
    start_fleet(FleetConfig {
        clock,
        ..FleetConfig::ephemeral()
    })
    .await
    .unwrap()
}

async fn session_client(fleet: &Fleet) -> RunningService<RoleClient, ()> {
    ().serve(StreamableHttpClientTransport::from_uri(fleet.tools_url()))
        .await
        .unwrap()
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &'static str,
    args: Value,
) -> CallToolResult {
    let params = CallToolRequestParams::new(tool).with_arguments(args.as_object().unwrap().clone());
    client.call_tool(params).await.unwrap()
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn every_tool_is_listed_read_only_closed_world_and_non_destructive() {
    let fleet = fleet().await;
    let client = session_client(&fleet).await;
    let info = client.peer_info().unwrap();
    assert_eq!(
        info.server_info.as_ref().map(|s| s.name.as_str()),
        Some("demo-tools")
    );
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, TOOL_NAMES);
    for tool in &tools {
        let a = tool
            .annotations
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no annotations", tool.name));
        assert_eq!(a.read_only_hint, Some(true), "{}", tool.name);
        assert_eq!(a.destructive_hint, Some(false), "{}", tool.name);
        assert_eq!(a.open_world_hint, Some(false), "{}", tool.name);
        assert!(tool.description.as_deref().is_some_and(|d| !d.is_empty()));
        assert_eq!(
            tool.input_schema.get("type"),
            Some(&json!("object")),
            "{}",
            tool.name
        );
        assert!(
            tool.output_schema.is_some(),
            "{} declares its output",
            tool.name
        );
    }
    let search = tools.iter().find(|t| t.name == "search_articles").unwrap();
    assert_eq!(search.input_schema["required"], json!(["query"]));
    client.cancel().await.unwrap();
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn search_then_get_article_finds_the_consumer_lag_article() {
    let fleet = fleet().await;
    let client = session_client(&fleet).await;
    let found = call(
        &client,
        "search_articles",
        json!({"query": "Kafka consumer lag", "limit": 3}),
    )
    .await;
    assert_eq!(found.is_error, Some(false));
    let structured = found.structured_content.clone().unwrap();
    assert_eq!(structured["results"].as_array().unwrap().len(), 3);
    assert_eq!(
        structured["results"][0]["id"],
        "kafka-consumer-lag-explained"
    );
    let text: Value = serde_json::from_str(&text_of(&found)).unwrap();
    assert_eq!(text, structured, "the text block carries the same JSON");
    let article = call(
        &client,
        "get_article",
        json!({"id": "kafka-consumer-lag-explained"}),
    )
    .await;
    assert_eq!(article.is_error, Some(false));
    let a = article.structured_content.unwrap();
    assert!(a["body"].as_str().unwrap().contains("log-end offset"));
    assert_eq!(
        a["source"],
        "https://articles.example.org/kafka-consumer-lag-explained"
    );
    client.cancel().await.unwrap();
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn convert_units_and_current_time_answer_deterministically() {
    let fleet = fleet().await;
    let client = session_client(&fleet).await;
    let km = call(
        &client,
        "convert_units",
        json!({"value": 5, "from": "km", "to": "mi"}),
    )
    .await;
    assert_eq!(km.structured_content.unwrap()["text"], "5 km = 3.106856 mi");
    let now = call(&client, "current_time", json!({})).await;
    assert_eq!(
        now.structured_content.unwrap()["iso8601"],
        "2026-11-29T21:57:04Z"
    );
    let india = call(&client, "current_time", json!({"timezone": "+05:30"})).await;
    let india = india.structured_content.unwrap();
    assert_eq!(india["iso8601"], "2026-11-30T03:27:04+05:30");
    assert_eq!(india["weekday"], "Monday");
    client.cancel().await.unwrap();
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn tool_failures_are_is_error_results_the_model_can_read() {
    let fleet = fleet().await;
    let client = session_client(&fleet).await;
    let cases = [
        (
            "get_article",
            json!({"id": "nope"}),
            "no article has the id 'nope'",
        ),
        (
            "convert_units",
            json!({"value": 1, "from": "furlong", "to": "m"}),
            "unknown unit 'furlong'",
        ),
        (
            "convert_units",
            json!({"value": 1, "from": "kg", "to": "m"}),
            "cannot convert kg (mass) to m (length)",
        ),
        (
            "current_time",
            json!({"timezone": "Mars/Olympus"}),
            "unknown time zone 'Mars/Olympus'",
        ),
        (
            "search_articles",
            json!({"query": "the of"}),
            "no words to search for",
        ),
        (
            "search_articles",
            json!({"query": "kafka", "limit": 50}),
            "limit must be between 1 and 20",
        ),
    ];
    for (tool, args, expected) in cases {
        let result = call(&client, tool, args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{tool} {args}");
        assert!(result.structured_content.is_none());
        assert!(
            text_of(&result).contains(expected),
            "{tool} {args}: {}",
            text_of(&result)
        );
    }
    // Input validation errors are tool execution errors (isError) in 2025-11-25.
    let missing = call(&client, "search_articles", json!({"limit": 2})).await;
    assert_eq!(missing.is_error, Some(true));
    assert!(text_of(&missing).contains("query"), "{}", text_of(&missing));
    let unknown =
        CallToolRequestParams::new("delete_everything").with_arguments(Default::default());
    assert!(
        client.call_tool(unknown).await.is_err(),
        "an unknown tool is a protocol error"
    );
    client.cancel().await.unwrap();
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_2026_07_28_client_discovers_and_calls_without_a_session() {
    let fleet = fleet().await;
    let transport = StreamableHttpClientTransport::from_uri(fleet.tools_url());
    let mode = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: None,
    };
    let client = ().serve_with_lifecycle(transport, mode).await.unwrap();
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), TOOL_NAMES.len());
    assert!(
        tools
            .iter()
            .all(|t| t.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true))
    );
    let found = call(&client, "search_articles", json!({"query": "consumer lag"})).await;
    assert_eq!(
        found.structured_content.unwrap()["results"][0]["id"],
        "kafka-consumer-lag-explained"
    );
    client.cancel().await.unwrap();
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_session_model_issues_a_session_id_and_refuses_foreign_origins_and_hosts() {
    let fleet = fleet().await;
    let http = demo_support::http();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    let resp = http
        .post(fleet.tools_url())
        .header("Accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let session = resp
        .headers()
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .unwrap()
        .to_owned();
    assert!(!session.is_empty());
    let body = resp.text().await.unwrap();
    let events = demo_support::sse_events(&body);
    let result = events
        .iter()
        .find(|(_, e)| e.get("result").is_some())
        .expect("an initialize result");
    assert_eq!(result.1["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(result.1["result"]["serverInfo"]["name"], "demo-tools");
    let deleted = http
        .delete(fleet.tools_url())
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());

    let evil = http
        .post(fleet.tools_url())
        .header("Accept", "application/json, text/event-stream")
        .header("Origin", "https://evil.example")
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(evil.status(), 403);
    let rebound = http
        .post(fleet.tools_url())
        .header("Accept", "application/json, text/event-stream")
        .header("Host", "evil.example")
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(
        rebound.status(),
        403,
        "a foreign Host is refused (DNS rebinding)"
    );
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_fleet_shuts_down_promptly_with_a_client_session_open() {
    let fleet = fleet().await;
    let client = session_client(&fleet).await;
    client.list_all_tools().await.unwrap();
    // A shutdown that waited for the open session would wait as long as the client lives (it
    // is dropped only after): the bound turns that hang into a failure, it measures nothing.
    tokio::time::timeout(std::time::Duration::from_secs(30), fleet.shutdown())
        .await
        .expect("the fleet shut down while a client session was still open")
        .unwrap();
    drop(client);
}
