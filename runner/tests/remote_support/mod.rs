//! Helpers for the MCP and A2A client tests: a tool context with a scripted decision source,
//! registry entries, the factory, and small loopback fixture servers that record what they
//! received.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod a2a_fixture;
pub mod mcp_fixture;

use orrery_crds::budget::BudgetLimits;
use orrery_crds::common::BearerAuth;
use orrery_crds::plan::{PlannedTool, ToolKind, model_tool_name};
use orrery_crds::registry::{A2aEntry, Effect, McpEntry, McpTransport, RegistryEntry};
use orrery_runner::approval::{People, ScriptedDecision, ScriptedDecisions};
use orrery_runner::events::{EventBody, MemorySink, Trace, TraceEvent, TraceOptions};
use orrery_runner::launch::ToolFactory;
use orrery_runner::ledger::Ledger;
use orrery_runner::net::GuardPolicy;
use orrery_runner::pin::store::PinStore;
use orrery_runner::remote::{RemoteConfig, RemoteToolFactory};
use orrery_runner::secrets::LocalSecrets;
use orrery_runner::tools::{Tool, ToolContext};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// One request a fixture received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// A canned reply a fixture sends instead of its normal one.
#[derive(Clone, Debug)]
pub struct Override {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Override {
    pub fn json(body: impl Into<Vec<u8>>) -> Self {
        Override {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
        }
    }

    pub fn redirect(to: &str) -> Self {
        Override {
            status: 307,
            headers: vec![("location".into(), to.into())],
            body: Vec::new(),
        }
    }

    pub fn gzip(body: impl Into<Vec<u8>>) -> Self {
        Override {
            status: 200,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("content-encoding".into(), "gzip".into()),
            ],
            body: body.into(),
        }
    }

    pub fn into_response(self) -> axum::response::Response {
        let mut builder = axum::response::Response::builder().status(self.status);
        for (k, v) in self.headers {
            builder = builder.header(k, v);
        }
        builder.body(axum::body::Body::from(self.body)).unwrap()
    }
}

/// Records a request and gives its body back.
pub async fn record(
    request: axum::extract::Request,
    log: &std::sync::Mutex<Vec<Recorded>>,
) -> axum::extract::Request {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let headers = parts
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    log.lock().unwrap().push(Recorded {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    });
    axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))
}

/// A tool context of one call, with a scripted decision source and content capture on.
pub struct TestCtx {
    pub ctx: ToolContext,
    pub sink: Arc<MemorySink>,
    pub decisions: Arc<ScriptedDecisions>,
}

impl TestCtx {
    pub fn new(decisions: impl IntoIterator<Item = ScriptedDecision>) -> Self {
        Self::with_budgets(decisions, BudgetLimits::default())
    }

    pub fn with_budgets(
        decisions: impl IntoIterator<Item = ScriptedDecision>,
        budgets: BudgetLimits,
    ) -> Self {
        let sink = Arc::new(MemorySink::new());
        let mut options = TraceOptions::new("remote-test");
        options.capture_content = true;
        let trace = Trace::new(options, vec![sink.clone()]);
        let ledger = Arc::new(Ledger::new(budgets));
        let decisions = Arc::new(ScriptedDecisions::new(decisions));
        let people = Arc::new(People::new(
            decisions.clone(),
            trace.clone(),
            ledger.clone(),
            Duration::from_secs(1),
        ));
        let ctx = ToolContext {
            node_id: "writer".into(),
            entry: 1,
            call_id: "call-1".into(),
            cancel: CancellationToken::new(),
            ledger,
            trace,
            people,
        };
        TestCtx {
            ctx,
            sink,
            decisions,
        }
    }

    pub fn events(&self) -> Vec<TraceEvent> {
        self.sink.events()
    }

    pub fn of(&self, kind: &str) -> Vec<EventBody> {
        self.events()
            .into_iter()
            .filter(|e| e.kind() == kind)
            .map(|e| e.body)
            .collect()
    }
}

/// A factory for loopback endpoints, with secrets from `secrets` (env var name → value).
pub fn factory(pins: Arc<PinStore>, acting: bool, secrets: &[(&str, &str)]) -> RemoteToolFactory {
    let values: BTreeMap<String, String> = secrets
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let env = Arc::new(move |name: &str| values.get(name).cloned());
    let secrets = Arc::new(LocalSecrets::new(None, env));
    RemoteToolFactory::new(RemoteConfig::new(
        GuardPolicy::default(),
        acting,
        pins,
        secrets,
    ))
}

/// An MCP entry.
pub fn mcp_entry(
    name: &str,
    url: &str,
    transport: McpTransport,
    tools: &[&str],
    read_only: &[&str],
) -> RegistryEntry {
    RegistryEntry::from_mcp(name, McpEntry::new(url, transport, tools, read_only))
}

/// An A2A entry for skill `draft`; edit the spec with `edit`.
pub fn a2a_entry(name: &str, card_url: &str, edit: impl FnOnce(&mut A2aEntry)) -> RegistryEntry {
    let mut spec = A2aEntry::new(card_url, &["draft"]);
    edit(&mut spec);
    RegistryEntry::from_a2a(name, spec)
}

/// A bearer token reference read from `ORRERY_SECRET_<NAME>_TOKEN`.
pub fn bearer(name: &str) -> BearerAuth {
    BearerAuth::from_secret(name, "token")
}

/// The planned tool of `entry`'s `remote` tool or skill.
pub fn planned(kind: ToolKind, entry: &RegistryEntry, remote: &str) -> PlannedTool {
    let name = entry.metadata.name.clone().unwrap();
    let prefix = match kind {
        ToolKind::Mcp => "mcp",
        ToolKind::A2a => "a2a",
    };
    PlannedTool {
        reference: format!("{prefix}:{name}.{remote}"),
        kind,
        model_name: model_tool_name(kind, &name, remote),
        entry: name.clone(),
        remote_name: remote.into(),
        acting: entry
            .spec
            .a2a
            .as_ref()
            .is_some_and(|a| a.effect == Effect::Acting),
    }
}

/// Builds one tool.
pub async fn build(
    factory: &RemoteToolFactory,
    kind: ToolKind,
    entry: &RegistryEntry,
    remote: &str,
) -> Result<Arc<dyn Tool>, String> {
    factory
        .build(&planned(kind, entry, remote), entry)
        .await
        .map_err(|e| e.to_string())
}

/// Builds one tool that must be refused; the error text.
pub async fn build_err(
    factory: &RemoteToolFactory,
    kind: ToolKind,
    entry: &RegistryEntry,
    remote: &str,
) -> String {
    match build(factory, kind, entry, remote).await {
        Ok(_) => panic!("{remote} of {:?} was built", entry.metadata.name),
        Err(e) => e,
    }
}

/// A fresh pin file in the temp directory.
pub fn temp_pin_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("orrery-test-pins-{}.json", uuid::Uuid::new_v4()))
}

/// Binds 127.0.0.1 on a free port.
pub async fn bind() -> (tokio::net::TcpListener, std::net::SocketAddr) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

/// Serves `app` on `listener` until the returned token is cancelled.
pub fn serve(listener: tokio::net::TcpListener, app: axum::Router) -> CancellationToken {
    let stop = CancellationToken::new();
    let token = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(token.cancelled_owned())
            .await;
    });
    stop
}
