//! DNS rebinding is caught on every path of the remote clients that opens a connection, not
//! only a plain reconnect of one client (net_guard.rs): an A2A call after its card was fetched,
//! an MCP call after the server closed the pooled connection, and the reconnect of an MCP
//! event stream. The name `localhost` answers 127.0.0.1 until the test rebinds it to the
//! metadata address; every connection opened after that must be refused before it is made.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod remote_support;

use futures::future::BoxFuture;
use orrery_crds::plan::ToolKind;
use orrery_crds::registry::McpTransport;
use orrery_runner::net::{GuardError, GuardPolicy, NameResolver};
use orrery_runner::pin::store::PinStore;
use orrery_runner::remote::{RemoteConfig, RemoteToolFactory};
use orrery_runner::secrets::LocalSecrets;
use remote_support::a2a_fixture::{A2aFixture, Behaviour, Setup};
use remote_support::mcp_fixture::{McpFixture, text_result, tool};
use remote_support::{TestCtx, a2a_entry, build, mcp_entry};
use serde_json::json;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// `localhost` is 127.0.0.1 until [`Rebinding::rebind`], then the metadata address.
#[derive(Default)]
struct Rebinding {
    rebound: AtomicBool,
    lookups_after: AtomicUsize,
}

impl Rebinding {
    fn rebind(&self) {
        self.rebound.store(true, Ordering::SeqCst);
    }

    /// Lookups made since the rebinding.
    fn lookups_after(&self) -> usize {
        self.lookups_after.load(Ordering::SeqCst)
    }
}

impl NameResolver for Rebinding {
    fn lookup(&self, _host: &str) -> BoxFuture<'static, Result<Vec<IpAddr>, GuardError>> {
        let addr = if self.rebound.load(Ordering::SeqCst) {
            self.lookups_after.fetch_add(1, Ordering::SeqCst);
            "169.254.169.254"
        } else {
            "127.0.0.1"
        };
        let addr: IpAddr = addr.parse().unwrap();
        Box::pin(async move { Ok(vec![addr]) })
    }
}

fn factory(resolver: &Arc<Rebinding>) -> RemoteToolFactory {
    let secrets = Arc::new(LocalSecrets::new(None, Arc::new(|_: &str| None)));
    let mut config = RemoteConfig::new(
        GuardPolicy::default(),
        false,
        Arc::new(PinStore::in_memory()),
        secrets,
    );
    config.resolver = resolver.clone();
    RemoteToolFactory::new(config)
}

fn on_localhost(url: &str) -> String {
    url.replace("127.0.0.1", "localhost")
}

/// Waits (bounded) until `done` holds.
async fn eventually(what: &str, done: impl Fn() -> bool) {
    for _ in 0..600 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} never happened");
}

#[tokio::test]
async fn an_a2a_call_after_its_card_was_fetched_is_refused_when_the_name_rebinds() {
    let agent = A2aFixture::start(Setup::new(Behaviour::Echo).edit_card(|c| {
        c.supported_interfaces[0].url = on_localhost(&c.supported_interfaces[0].url)
    }))
    .await;
    agent.close_connections();
    let resolver = Arc::new(Rebinding::default());
    let entry = a2a_entry("agent", &on_localhost(&agent.card_url()), |_| {});
    let skill = build(&factory(&resolver), ToolKind::A2a, &entry, "draft")
        .await
        .unwrap();
    let fetched = agent.requests().len();
    assert!(fetched >= 1, "the card was fetched through localhost");

    resolver.rebind();
    let out = skill
        .call(
            json!({"request": "Draft release notes"}),
            &TestCtx::new([]).ctx,
        )
        .await
        .unwrap();
    assert!(out.is_error, "{}", out.content);
    assert!(
        out.content.contains("agent"),
        "names the entry: {}",
        out.content
    );
    assert!(resolver.lookups_after() >= 1, "the call connected anew");
    assert_eq!(
        agent.requests().len(),
        fetched,
        "nothing reached the agent after the rebinding"
    );
    assert!(agent.rpc_requests().is_empty());
}

async fn lookup_server() -> McpFixture {
    McpFixture::start(
        vec![tool(
            "lookup",
            "Looks a term up",
            json!({"readOnlyHint": true}),
        )],
        BTreeMap::from([("lookup".to_owned(), text_result("lookup: mcp"))]),
    )
    .await
}

#[tokio::test]
async fn an_mcp_call_after_the_pooled_connection_closed_is_refused_when_the_name_rebinds() {
    let server = lookup_server().await;
    server.edit(|s| s.close_connections = true);
    let resolver = Arc::new(Rebinding::default());
    let entry = mcp_entry(
        "docs",
        &on_localhost(&server.url()),
        McpTransport::StreamableHttp,
        &["lookup"],
        &["lookup"],
    );
    let lookup = build(&factory(&resolver), ToolKind::Mcp, &entry, "lookup")
        .await
        .unwrap();
    assert!(
        server.methods().contains(&"tools/list".to_owned()),
        "the session was set up through localhost"
    );

    resolver.rebind();
    let out = lookup
        .call(json!({"q": "mcp"}), &TestCtx::new([]).ctx)
        .await
        .unwrap();
    assert!(out.is_error, "{}", out.content);
    assert!(!out.content.contains("lookup: mcp"), "{}", out.content);
    assert!(
        out.content.contains("docs"),
        "names the entry: {}",
        out.content
    );
    assert!(resolver.lookups_after() >= 1, "the call connected anew");
    assert!(
        !server.methods().contains(&"tools/call".to_owned()),
        "the call never reached the server"
    );
    lookup.close().await;
}

#[tokio::test]
async fn an_mcp_event_stream_reconnect_is_refused_when_the_name_rebinds() {
    let server = lookup_server().await;
    // A reconnect over a still-open pooled connection resolves nothing: make each a new one.
    server.edit(|s| s.close_connections = true);
    let resolver = Arc::new(Rebinding::default());
    let entry = mcp_entry(
        "docs",
        &on_localhost(&server.url()),
        McpTransport::StreamableHttp,
        &["lookup"],
        &["lookup"],
    );
    let lookup = build(&factory(&resolver), ToolKind::Mcp, &entry, "lookup")
        .await
        .unwrap();
    let gets = || {
        server
            .requests()
            .iter()
            .filter(|r| r.method == "GET")
            .count()
    };
    eventually("the client opening its event stream", || gets() >= 1).await;
    let before = gets();

    resolver.rebind();
    server.end_event_streams();
    // The client reconnects its stream: it looks the name up again, and is refused.
    eventually("a reconnect of the event stream", || {
        resolver.lookups_after() >= 1
    })
    .await;
    // Give a wrongly allowed reconnect time to arrive before looking.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(gets(), before, "no reconnect reached the server");
    lookup.close().await;
}
