//! Interop peers (tests/peers/README.md) for our MCP and A2A clients: the official SDKs' agents
//! and servers, started on loopback from the cache `tests/peers/setup.sh` fills.
//!
//! The cache is found through `ORRERY_PEERS_DIR` (CI sets it: `.ci/run` runs setup.sh); without
//! it the tests run setup.sh themselves, and fail with its message when the peers cannot be
//! installed. They never skip.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use orrery_crds::budget::BudgetLimits;
use orrery_crds::common::BearerAuth;
use orrery_crds::plan::{PlannedTool, ToolKind, model_tool_name};
use orrery_crds::registry::{A2aEntry, McpEntry, McpTransport, RegistryEntry};
use orrery_runner::approval::{People, ScriptedDecision, ScriptedDecisions};
use orrery_runner::events::{MemorySink, Trace, TraceOptions};
use orrery_runner::launch::ToolFactory;
use orrery_runner::ledger::Ledger;
use orrery_runner::net::GuardPolicy;
use orrery_runner::pinstore::PinStore;
use orrery_runner::remote::{RemoteConfig, RemoteToolFactory};
use orrery_runner::secrets::LocalSecrets;
use orrery_runner::tools::{Tool, ToolContext};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

/// The environment variable naming the installed peers.
pub const PEERS_ENV: &str = "ORRERY_PEERS_DIR";

/// The peers' directory: `ORRERY_PEERS_DIR` when it is set (CI sets it), else the one
/// `tests/peers/setup.sh` installs (cached: instant once installed), run once per test binary.
/// Panics with setup.sh's own message when the peers cannot be installed (no Python 3.10+,
/// Node 20+ or npm, or an install that failed): the interop tests never skip.
pub fn peers_dir() -> PathBuf {
    static INSTALLED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let result = INSTALLED.get_or_init(|| {
        let dir = match std::env::var_os(PEERS_ENV).filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => install_peers()?,
        };
        if dir.join(".complete").exists() {
            Ok(dir)
        } else {
            Err(format!(
                "{} is not a complete peer install; run tests/peers/setup.sh (or unset {PEERS_ENV})",
                dir.display()
            ))
        }
    });
    match result {
        Ok(dir) => dir.clone(),
        Err(message) => panic!("{message}"),
    }
}

/// Runs `tests/peers/setup.sh`: the directory it printed last, or its error output.
fn install_peers() -> Result<PathBuf, String> {
    let out = std::process::Command::new(repo().join("tests").join("peers").join("setup.sh"))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run tests/peers/setup.sh: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match stdout.lines().last().map(str::trim) {
        Some(last) if out.status.success() && !last.is_empty() => Ok(PathBuf::from(last)),
        _ => Err(format!(
            "tests/peers/setup.sh failed ({}): the interop tests need Python 3.10+, Node 20+ and npm \
             (set PYTHON=, NODE=, NPM=) and the package registries once.\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A peer program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerKind {
    /// a2a-sdk 1.3 agent (Python).
    PyA2a,
    /// @a2a-js/sdk 1.3 agent (Node).
    JsA2a,
    /// mcp 2.3 MCPServer (Python).
    PyMcp,
    /// @modelcontextprotocol/server-everything (Node).
    Everything,
}

/// A running peer; killed when dropped.
pub struct Peer {
    child: Child,
    /// The READY URL: the card URL (A2A) or the endpoint URL (MCP).
    pub url: String,
    log: Option<PathBuf>,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        if let Some(log) = &self.log {
            let _ = std::fs::remove_file(log);
        }
    }
}

/// One request a peer logged.
#[derive(Clone, Debug)]
pub struct Logged {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

impl Peer {
    /// Starts `kind` with `args` and waits for its READY line.
    pub async fn start(peers: &Path, kind: PeerKind, args: &[&str]) -> Peer {
        let here = repo().join("tests").join("peers");
        let node = std::env::var("NODE").unwrap_or_else(|_| "node".into());
        let python = peers.join("venv").join("bin").join("python");
        let (program, mut full): (PathBuf, Vec<String>) = match kind {
            PeerKind::PyA2a => (
                python,
                vec![here.join("python/a2a_agent.py").display().to_string()],
            ),
            PeerKind::PyMcp => (
                python,
                vec![here.join("python/mcp_server.py").display().to_string()],
            ),
            PeerKind::JsA2a => (
                node.into(),
                vec![here.join("node/a2a_agent.mjs").display().to_string()],
            ),
            PeerKind::Everything => (
                node.into(),
                vec![here.join("node/everything.mjs").display().to_string()],
            ),
        };
        full.extend(args.iter().map(|a| (*a).to_owned()));
        let log = (kind != PeerKind::Everything).then(|| {
            std::env::temp_dir().join(format!(
                "orrery-peer-{}-{}.jsonl",
                std::process::id(),
                rand_suffix()
            ))
        });
        if let Some(log) = &log {
            full.push("--request-log".into());
            full.push(log.display().to_string());
        }
        full.push("--exit-on-stdin-eof".into());
        let mut child = Command::new(&program)
            .args(&full)
            .env(PEERS_ENV, peers)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let url = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(url) = line.strip_prefix("READY ") {
                    return url.trim().to_owned();
                }
            }
            panic!("{kind:?} exited before it was ready");
        })
        .await
        .unwrap_or_else(|_| panic!("{kind:?} was not ready within 60 s"));
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Peer { child, url, log }
    }

    /// The requests the peer logged.
    pub fn requests(&self) -> Vec<Logged> {
        let Some(log) = &self.log else {
            return Vec::new();
        };
        let text = std::fs::read_to_string(log).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|v| Logged {
                method: v["method"].as_str().unwrap_or_default().to_owned(),
                path: v["path"].as_str().unwrap_or_default().to_owned(),
                headers: v["headers"]
                    .as_object()
                    .map(|h| {
                        h.iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                            .collect()
                    })
                    .unwrap_or_default(),
                body: v["body"].as_str().unwrap_or_default().to_owned(),
            })
            .collect()
    }

    /// The JSON-RPC methods of the POSTs the peer logged.
    pub fn rpc_methods(&self) -> Vec<String> {
        self.requests()
            .iter()
            .filter(|r| r.method == "POST")
            .filter_map(|r| serde_json::from_str::<Value>(&r.body).ok())
            .filter_map(|v| v["method"].as_str().map(str::to_owned))
            .collect()
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    nanos ^ (NEXT.fetch_add(1, Ordering::SeqCst) << 32)
}

/// A factory for loopback peers with `secrets` (env var name → value).
pub fn factory(pins: Arc<PinStore>, secrets: &[(&str, &str)]) -> RemoteToolFactory {
    let values: BTreeMap<String, String> = secrets
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let secrets = Arc::new(LocalSecrets::new(
        None,
        Arc::new(move |n: &str| values.get(n).cloned()),
    ));
    RemoteToolFactory::new(RemoteConfig::new(
        GuardPolicy::default(),
        false,
        pins,
        secrets,
    ))
}

/// An MCP entry allowing `tools`, all read-only.
pub fn mcp_entry(name: &str, url: &str, transport: McpTransport, tools: &[&str]) -> RegistryEntry {
    RegistryEntry::from_mcp(name, McpEntry::new(url, transport, tools, tools))
}

/// An A2A entry for skill `draft`.
pub fn a2a_entry(name: &str, card_url: &str, edit: impl FnOnce(&mut A2aEntry)) -> RegistryEntry {
    let mut spec = A2aEntry::new(card_url, &["draft"]);
    edit(&mut spec);
    RegistryEntry::from_a2a(name, spec)
}

/// A bearer token reference read from `ORRERY_SECRET_<NAME>_TOKEN`.
pub fn bearer(name: &str) -> BearerAuth {
    BearerAuth::from_secret(name, "token")
}

/// Builds the tool `remote` of `entry`.
pub async fn build(
    factory: &RemoteToolFactory,
    kind: ToolKind,
    entry: &RegistryEntry,
    remote: &str,
) -> Result<Arc<dyn Tool>, String> {
    let name = entry.metadata.name.clone().unwrap();
    let prefix = if kind == ToolKind::Mcp { "mcp" } else { "a2a" };
    let planned = PlannedTool {
        reference: format!("{prefix}:{name}.{remote}"),
        kind,
        model_name: model_tool_name(kind, &name, remote),
        entry: name,
        remote_name: remote.into(),
        acting: false,
    };
    factory
        .build(&planned, entry)
        .await
        .map_err(|e| e.to_string())
}

/// A tool context with scripted decisions.
pub struct Ctx {
    pub ctx: ToolContext,
    pub sink: Arc<MemorySink>,
    pub decisions: Arc<ScriptedDecisions>,
}

impl Ctx {
    pub fn new(decisions: impl IntoIterator<Item = ScriptedDecision>) -> Self {
        let sink = Arc::new(MemorySink::new());
        let mut options = TraceOptions::new("interop");
        options.capture_content = true;
        let trace = Trace::new(options, vec![sink.clone()]);
        let ledger = Arc::new(Ledger::new(BudgetLimits::default()));
        let decisions = Arc::new(ScriptedDecisions::new(decisions));
        let people = Arc::new(People::new(
            decisions.clone(),
            trace.clone(),
            ledger.clone(),
            Duration::from_secs(2),
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
        Ctx {
            ctx,
            sink,
            decisions,
        }
    }
}

/// Calls `tool` with `arguments`; the result as JSON (or a JSON string for plain text), and
/// whether it was an error.
pub async fn call(tool: &Arc<dyn Tool>, ctx: &Ctx, arguments: Value) -> (Value, bool) {
    let out = tool.call(arguments, &ctx.ctx).await.unwrap();
    let value = serde_json::from_str(&out.content).unwrap_or(Value::String(out.content));
    (value, out.is_error)
}
