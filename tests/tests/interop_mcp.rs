//! Our MCP client against servers nobody here wrote: npm
//! `@modelcontextprotocol/server-everything` (streamable HTTP, 2025-11-25 sessions; legacy SSE)
//! and a PyPI `mcp` 2.3 `MCPServer` (2026-07-28 and 2025-11-25 on one endpoint).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod interop_support;

use interop_support::{Ctx, Peer, PeerKind, bearer, build, call, factory, mcp_entry, peers_dir};
use orrery_crds::plan::ToolKind;
use orrery_crds::registry::McpTransport;
use orrery_runner::pinstore::PinStore;
use serde_json::{Value, json};
use std::sync::Arc;

fn pins() -> Arc<PinStore> {
    Arc::new(PinStore::in_memory())
}

#[tokio::test]
async fn server_everything_answers_echo_and_get_sum_over_streamable_http_and_legacy_sse() {
    let dir = peers_dir();
    for transport in ["streamableHttp", "sse"] {
        let peer = Peer::start(&dir, PeerKind::Everything, &[transport]).await;
        let kind = if transport == "sse" {
            McpTransport::Sse
        } else {
            McpTransport::StreamableHttp
        };
        let entry = mcp_entry("everything", &peer.url, kind, &["echo", "get-sum"]);
        let f = factory(pins(), &[]);
        let echo = build(&f, ToolKind::Mcp, &entry, "echo").await.unwrap();
        assert_eq!(echo.spec().name, "mcp_everything_echo");
        let ctx = Ctx::new([]);
        let (result, is_error) = call(&echo, &ctx, json!({"message": "hi"})).await;
        assert!(!is_error, "{transport}: {result}");
        assert_eq!(result, Value::String("Echo: hi".into()), "{transport}");
        let sum = build(&f, ToolKind::Mcp, &entry, "get-sum").await.unwrap();
        let (result, _) = call(&sum, &ctx, json!({"a": 1, "b": 2})).await;
        assert_eq!(
            result,
            Value::String("The sum of 1 and 2 is 3.".into()),
            "{transport}"
        );
        echo.close().await;
    }
}

#[tokio::test]
async fn server_everythings_tools_without_read_only_hint_are_refused_when_listed_read_only() {
    let dir = peers_dir();
    let peer = Peer::start(&dir, PeerKind::Everything, &["streamableHttp"]).await;
    let entry = mcp_entry(
        "everything",
        &peer.url,
        McpTransport::StreamableHttp,
        &["echo", "toggle-simulated-logging"],
    );
    let f = factory(pins(), &[]);
    let err = build(&f, ToolKind::Mcp, &entry, "toggle-simulated-logging")
        .await
        .err()
        .unwrap();
    assert!(
        err.contains("lists tool 'toggle-simulated-logging' as read-only, but the server gives it"),
        "{err}"
    );
    assert!(build(&f, ToolKind::Mcp, &entry, "echo").await.is_ok());
}

#[tokio::test]
async fn the_python_server_is_reached_in_2026_mode_with_structured_and_error_results() {
    let dir = peers_dir();
    let peer = Peer::start(&dir, PeerKind::PyMcp, &[]).await;
    let entry = mcp_entry(
        "py",
        &peer.url,
        McpTransport::StreamableHttp,
        &["lookup", "stats", "explode"],
    );
    let f = factory(pins(), &[]);
    let ctx = Ctx::new([]);
    let lookup = build(&f, ToolKind::Mcp, &entry, "lookup").await.unwrap();
    let (result, _) = call(&lookup, &ctx, json!({"term": "mcp"})).await;
    assert_eq!(
        result,
        Value::String("lookup: mcp = Model Context Protocol".into())
    );
    let stats = build(&f, ToolKind::Mcp, &entry, "stats").await.unwrap();
    let (result, _) = call(&stats, &ctx, json!({"text": "two words"})).await;
    assert!(result.to_string().contains("words"), "{result}");
    let explode = build(&f, ToolKind::Mcp, &entry, "explode").await.unwrap();
    let (result, is_error) = call(&explode, &ctx, json!({"reason": "asked to"})).await;
    assert!(is_error, "{result}");
    let posts: Vec<_> = peer
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert!(
        posts[0].body.contains("server/discover"),
        "{}",
        posts[0].body
    );
    let call_post = posts
        .iter()
        .find(|r| r.body.contains("tools/call"))
        .unwrap();
    assert_eq!(
        call_post
            .headers
            .get("mcp-protocol-version")
            .map(String::as_str),
        Some("2026-07-28")
    );
    assert_eq!(
        call_post.headers.get("x-orrery-hop").map(String::as_str),
        Some("1")
    );
    lookup.close().await;
}

#[tokio::test]
async fn the_python_servers_unannotated_and_destructive_tools_are_refused() {
    let dir = peers_dir();
    let peer = Peer::start(&dir, PeerKind::PyMcp, &[]).await;
    let entry = mcp_entry(
        "py",
        &peer.url,
        McpTransport::StreamableHttp,
        &["write_note", "delete_note"],
    );
    let f = factory(pins(), &[]);
    for tool in ["write_note", "delete_note"] {
        let err = build(&f, ToolKind::Mcp, &entry, tool).await.err().unwrap();
        assert!(
            err.contains(&format!("lists tool '{tool}' as read-only")),
            "{err}"
        );
    }
}

#[tokio::test]
async fn a_tool_that_changes_between_runs_is_caught_by_its_pin() {
    let dir = peers_dir();
    for change in ["description", "schema", "annotations"] {
        let peer = Peer::start(
            &dir,
            PeerKind::PyMcp,
            &[
                "--mode",
                "rotate",
                "--change",
                change,
                "--change-after",
                "1",
            ],
        )
        .await;
        let entry = mcp_entry("py", &peer.url, McpTransport::StreamableHttp, &["lookup"]);
        let pins = pins();
        build(&factory(pins.clone(), &[]), ToolKind::Mcp, &entry, "lookup")
            .await
            .unwrap();
        let err = build(&factory(pins, &[]), ToolKind::Mcp, &entry, "lookup")
            .await
            .err()
            .unwrap();
        assert!(
            err.contains("changed since it was pinned") || err.contains("readOnlyHint: false"),
            "{change}: {err}"
        );
    }
}

#[tokio::test]
async fn the_python_server_over_legacy_sse_and_with_a_bearer_token() {
    let dir = peers_dir();
    let peer = Peer::start(&dir, PeerKind::PyMcp, &["--transport", "sse"]).await;
    let entry = mcp_entry("py", &peer.url, McpTransport::Sse, &["lookup"]);
    let tool = build(&factory(pins(), &[]), ToolKind::Mcp, &entry, "lookup")
        .await
        .unwrap();
    let (result, _) = call(&tool, &Ctx::new([]), json!({"term": "mcp"})).await;
    assert_eq!(
        result,
        Value::String("lookup: mcp = Model Context Protocol".into())
    );
    tool.close().await;

    let peer = Peer::start(&dir, PeerKind::PyMcp, &["--require-bearer", "mcp-token"]).await;
    let mut entry = mcp_entry("py", &peer.url, McpTransport::StreamableHttp, &["lookup"]);
    entry.spec.mcp.as_mut().unwrap().auth = Some(bearer("py"));
    let f = factory(pins(), &[("ORRERY_SECRET_PY_TOKEN", "mcp-token")]);
    let tool = build(&f, ToolKind::Mcp, &entry, "lookup").await.unwrap();
    let (result, _) = call(&tool, &Ctx::new([]), json!({"term": "mcp"})).await;
    assert_eq!(
        result,
        Value::String("lookup: mcp = Model Context Protocol".into())
    );
    let requests = peer.requests();
    assert!(
        !requests.is_empty(),
        "the peer logged the requests the call made"
    );
    assert!(
        requests.iter().all(
            |r| r.headers.get("authorization").map(String::as_str) == Some("Bearer mcp-token")
        ),
        "every request carried the token: {requests:?}"
    );
}
