//! How MCP failures read: the endpoint, what happened and the limit, never rmcp's internals
//! ("Send message error Transport [rmcp::transport::worker::…]"), and a stream cut by the byte
//! cap names the cap instead of a closed connection.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod remote_support;

use orrery_crds::plan::ToolKind;
use orrery_crds::registry::{EndpointLimits, McpTransport, RegistryEntry};
use orrery_runner::pin::store::PinStore;
use remote_support::mcp_fixture::{McpFixture, text_result, tool};
use remote_support::{Override, TestCtx, build, build_err, factory, mcp_entry};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;

const CAP: u64 = 4096;

fn entry(url: &str) -> RegistryEntry {
    let mut entry = mcp_entry(
        "docs",
        url,
        McpTransport::StreamableHttp,
        &["lookup"],
        &["lookup"],
    );
    entry.spec.mcp.as_mut().unwrap().limits = Some(EndpointLimits {
        max_reply_bytes: Some(CAP),
        ..EndpointLimits::default()
    });
    entry
}

async fn lookup_fixture() -> McpFixture {
    McpFixture::start(
        vec![tool(
            "lookup",
            "Looks a term up",
            json!({"readOnlyHint": true}),
        )],
        BTreeMap::from([("lookup".to_owned(), text_result("found"))]),
    )
    .await
}

/// An event stream of small events that together are over [`CAP`].
fn oversized_stream() -> Override {
    let event = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"padding\"}}\n\n";
    Override {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        body: event.repeat(64).into_bytes(),
    }
}

fn no_rust_internals(message: &str) {
    for internal in [
        "rmcp::",
        "Send message error",
        "Transport [",
        "WorkerTransport",
    ] {
        assert!(
            !message.contains(internal),
            "{internal:?} in the message: {message}"
        );
    }
}

#[tokio::test]
async fn an_unreachable_mcp_server_is_named_with_what_happened_and_no_rust_internals() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", closed.local_addr().unwrap());
    drop(closed);
    let f = factory(Arc::new(PinStore::in_memory()), false, &[]);
    let err = build_err(&f, ToolKind::Mcp, &entry(&url), "lookup").await;
    no_rust_internals(&err);
    assert!(
        err.contains(&format!(
            "MCP server 'docs' at {url}: could not start a session: "
        )),
        "{err}"
    );
}

#[tokio::test]
async fn a_stream_cut_by_the_byte_cap_while_connecting_names_the_cap() {
    let fixture = lookup_fixture().await;
    fixture.edit(|s| s.post_override = Some(oversized_stream()));
    let f = factory(Arc::new(PinStore::in_memory()), false, &[]);
    let err = build_err(&f, ToolKind::Mcp, &entry(&fixture.url()), "lookup").await;
    no_rust_internals(&err);
    assert!(err.contains("MCP server 'docs' at "), "{err}");
    assert!(
        err.contains(&format!("over the cap of {CAP} bytes")),
        "{err}"
    );
    assert!(!err.contains("connection closed"), "{err}");
}

#[tokio::test]
async fn a_stream_cut_by_the_byte_cap_during_a_call_names_the_tool_and_the_cap() {
    let fixture = lookup_fixture().await;
    let f = factory(Arc::new(PinStore::in_memory()), false, &[]);
    let lookup = build(&f, ToolKind::Mcp, &entry(&fixture.url()), "lookup")
        .await
        .unwrap();
    // Connected and listed; now every answer is a stream over the cap.
    fixture.edit(|s| s.post_override = Some(oversized_stream()));
    let t = TestCtx::new([]);
    let out = lookup.call(json!({"q": "x"}), &t.ctx).await.unwrap();
    assert!(out.is_error);
    no_rust_internals(&out.content);
    assert!(
        out.content.contains("MCP server 'docs' at ")
            && out.content.contains("tool 'lookup' failed: "),
        "{}",
        out.content
    );
    assert!(
        out.content
            .contains(&format!("over the cap of {CAP} bytes")),
        "{}",
        out.content
    );
    lookup.close().await;
}
