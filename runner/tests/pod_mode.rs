//! `orrery run --plan FILE`, the runner in a pod: it reads the plan document the operator
//! writes (the same `crds::plan_document` type), runs with JSON-line events on standard
//! output, and writes its summary where the operator reads it (`crds::plan_document::
//! parse_summary`, the operator's reader).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use orrery_crds::events::Outcome;
use orrery_crds::plan_document::{
    INPUT_FILE, PLAN_DOCUMENT_VERSION, PlanDocument, PlannedEntry, RunIdentity, parse_summary,
};
use orrery_crds::run::RanComposition;
use orrery_crds::validate::{DeploymentLimits, RegistryView};
use orrery_crds::{CompositionSpec, RegistryEntry};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod relay_support;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn orrery() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_orrery"));
    command.env("NO_COLOR", "1").env_remove("ORRERY_REDACT_IPS");
    command
}

fn yaml<T: serde::de::DeserializeOwned>(path: &Path) -> T {
    serde_yaml::from_str(&std::fs::read_to_string(path).expect("example reads")).expect("yaml")
}

/// The spec of a Composition manifest.
fn composition(path: &Path) -> CompositionSpec {
    let value: serde_json::Value = yaml(path);
    serde_json::from_value(value["spec"].clone()).expect("composition spec")
}

fn registry() -> Vec<RegistryEntry> {
    ["scripted", "demo-tools", "demo-writer"]
        .iter()
        .map(|n| yaml(&examples().join(format!("registry/{n}.yaml"))))
        .collect()
}

/// A plan document as the operator builds it: the spec planned against the entries.
fn document(spec: CompositionSpec, entries: &[RegistryEntry]) -> PlanDocument {
    let limits = DeploymentLimits::default();
    let plan = orrery_crds::plan::plan(&spec, &RegistryView::from_entries(entries), &limits)
        .unwrap_or_else(|v| panic!("the test composition plans: {v:?}"));
    let used = orrery_crds::plan_document::plan_entry_names(&plan);
    PlanDocument {
        version: PLAN_DOCUMENT_VERSION,
        run: RunIdentity {
            name: "notes-1".into(),
            namespace: "team".into(),
            uid: "uid-notes-1".into(),
        },
        composition: RanComposition {
            name: "critic-loop".into(),
            revision: Some(1),
            digest: "d".repeat(64),
        },
        spec,
        plan,
        entries: entries
            .iter()
            .filter(|e| e.metadata.name.as_ref().is_some_and(|n| used.contains(n)))
            .map(PlannedEntry::from_entry)
            .collect(),
        limits,
        capture_content: false,
        sidecar_url: "http://orrery-sidecar.orrery-system.svc:8080".into(),
        approval_timeout_seconds: 60,
        flush_seconds: None,
    }
}

/// A plan Secret's mount: `plan.json` and `input` in a fresh folder.
struct Mount {
    dir: PathBuf,
}

impl Mount {
    fn new(name: &str, plan: &[u8], input: &str) -> Mount {
        let dir = std::env::temp_dir().join(format!("orrery-pod-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("plan.json"), plan).unwrap();
        std::fs::write(dir.join(INPUT_FILE), input).unwrap();
        Mount { dir }
    }

    fn of(name: &str, document: &PlanDocument) -> Mount {
        Mount::new(name, &serde_json::to_vec(document).unwrap(), "Version 2.4")
    }

    fn command(&self) -> Command {
        let mut command = orrery();
        command
            .arg("run")
            .arg("--plan")
            .arg(self.dir.join("plan.json"))
            .arg("--termination-log")
            .arg(self.termination_log());
        command
    }

    fn termination_log(&self) -> PathBuf {
        self.dir.join("termination-log")
    }

    fn summary(&self) -> String {
        std::fs::read_to_string(self.termination_log()).expect("the summary is written")
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn a_critic_loop_plan_succeeds_with_json_events_and_writes_the_summary_the_operator_reads() {
    let doc = document(
        composition(&examples().join("compositions/critic-loop.yaml")),
        &registry(),
    );
    let mount = Mount::of("critic", &doc);
    let out = mount.command().output().expect("orrery runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(events.first().unwrap()["type"], "run.start");
    assert_eq!(events.last().unwrap()["type"], "run.end");
    assert_eq!(events.first().unwrap()["runId"], "uid-notes-1");
    let loops = events
        .iter()
        .filter(|e| e["type"] == "loop.iteration")
        .count();
    assert!(loops >= 1, "the critic sent the draft back once: {stdout}");
    let summary = parse_summary(&mount.summary()).expect("the operator reads the summary");
    assert_eq!(summary.outcome, Outcome::Succeeded);
    assert_eq!(summary.error, None);
    assert!(summary.totals.tokens > 0, "{summary:?}");
    assert_eq!(
        mount.summary().lines().count(),
        1,
        "one line, no output text"
    );
}

#[test]
fn with_the_json_log_format_a_pod_runs_warnings_are_json_lines_naming_its_run() {
    let doc = document(
        composition(&examples().join("compositions/human-review.yaml")),
        &registry(),
    );
    let mount = Mount::of("json-logs", &doc);
    let out = mount
        .command()
        .env("ORRERY_LOG_FORMAT", "json")
        .env_remove("RUST_LOG")
        .output()
        .expect("orrery runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let warning = lines
        .iter()
        .find(|l| {
            l["message"]
                .as_str()
                .unwrap_or("")
                .contains("this run asks people (")
        })
        .unwrap_or_else(|| panic!("the warning is a JSON line: {stderr}"));
    assert_eq!(warning["level"], "WARN");
    assert_eq!(warning["run_uid"], "uid-notes-1");
    assert_eq!(warning["namespace"], "team");
    assert_eq!(warning["name"], "notes-1");
    assert!(warning["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    // The trace on standard output is unchanged: events, not log lines.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().all(|l| !l.contains("\"level\"")), "{stdout}");
}

#[test]
fn a_plan_with_a_human_approval_and_no_token_says_nobody_can_be_asked_and_ends_rejected() {
    let doc = document(
        composition(&examples().join("compositions/human-review.yaml")),
        &registry(),
    );
    let mount = Mount::of("approval", &doc);
    let out = mount.command().output().expect("orrery runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("this run asks people (")
            && stderr.contains("HumanApproval node 'review'")
            && stderr.contains("no `token` file is next to the plan")
            && stderr.contains("expires at once, which is a rejection"),
        "{stderr}"
    );
    let summary = parse_summary(&mount.summary()).expect("a summary");
    assert_eq!(summary.outcome, Outcome::Rejected);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\"approval.decided\"") && stdout.contains("\"expired\""),
        "the request was made and expired: {stdout}"
    );
}

#[test]
fn a_malformed_plan_exits_2_naming_the_field() {
    let doc = document(
        composition(&examples().join("compositions/critic-loop.yaml")),
        &registry(),
    );
    let mut value = serde_json::to_value(&doc).unwrap();
    value["spec"]["nodes"][0]["kind"] = serde_json::json!(42);
    let mount = Mount::new("malformed", &serde_json::to_vec(&value).unwrap(), "x");
    let out = mount.command().output().expect("orrery runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("field `spec.nodes[0].kind`"), "{stderr}");
    let summary = parse_summary(&mount.summary()).expect("a summary even so");
    assert_eq!(summary.outcome, Outcome::Failed);
    assert!(
        summary
            .error
            .expect("reason")
            .message
            .contains("spec.nodes[0].kind")
    );

    let text = serde_json::to_string(&doc).unwrap();
    let twice = text.replacen("{\"version\":1,", "{\"version\":1,\"version\":1,", 1);
    assert_ne!(twice, text);
    let mount = Mount::new("twice", twice.as_bytes(), "x");
    let out = mount.command().output().expect("orrery runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unique keys") && stderr.contains("\"version\""),
        "{stderr}"
    );
}

#[test]
fn sigterm_mid_run_ends_cancelled_with_the_summary_written() {
    let mut entries = registry();
    let script = &mut entries[0]
        .spec
        .model
        .as_mut()
        .expect("scripted is a model")
        .script;
    let mut value = serde_json::to_value(&*script).unwrap();
    value["nodes"]["research"] = serde_json::json!([{"reply": "slow", "delayMs": 600000}]);
    *script = serde_json::from_value(value).unwrap();
    let doc = document(
        composition(&examples().join("compositions/critic-loop.yaml")),
        &entries,
    );
    let mount = Mount::of("sigterm", &doc);
    let mut child = mount
        .command()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("orrery runs");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        if line.unwrap().contains("\"node.enter\"") {
            break;
        }
    }
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .expect("kill runs");
    assert!(status.success());
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let summary = parse_summary(&mount.summary()).expect("the summary is written");
    assert_eq!(summary.outcome, Outcome::Cancelled);
    assert!(
        rest.last().is_some_and(|l| l.contains("\"run.end\"")),
        "{rest:?}"
    );
}

/// A one-node plan whose research node calls demo-tools' `search_articles` on a live fleet,
/// with `pins` as the entry's status pins.
fn search_plan(tools_url: &str, pins: Vec<orrery_crds::registry::PinnedTool>) -> PlanDocument {
    let spec: CompositionSpec = serde_yaml::from_str(
        "pattern: Pipeline\nnodes:\n\
         - {id: research, kind: LLMAgent, model: scripted, instruction: look, tools: ['mcp:demo-tools.search_articles']}\n",
    )
    .expect("spec");
    let mut entries = registry();
    entries[1].spec.mcp.as_mut().expect("mcp").url = tools_url.to_owned();
    entries[1].status = Some(orrery_crds::RegistryEntryStatus {
        tools: pins,
        ..Default::default()
    });
    document(spec, &entries)
}

/// What demo-tools lists, pinned as the probe pins it.
async fn listed_pins(url: &str) -> Vec<orrery_crds::registry::PinnedTool> {
    use rmcp::ServiceExt;
    let client = ()
        .serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
            url.to_owned(),
        ))
        .await
        .expect("an MCP session");
    let tools = client.list_all_tools().await.expect("tools/list");
    tools
        .iter()
        .map(|t| {
            let schema = serde_json::Value::Object((*t.input_schema).clone());
            let annotations = t
                .annotations
                .as_ref()
                .map(|a| serde_json::to_value(a).expect("annotations"));
            orrery_runner::pin::pinned_tool(
                &t.name,
                t.description.as_deref(),
                &schema,
                annotations.as_ref(),
            )
            .expect("pins")
        })
        .collect()
}

async fn run_plan(name: &str, doc: &PlanDocument) -> (Option<i32>, String) {
    let mount = Mount::of(name, doc);
    let mut command = mount.command();
    command.arg("--tools").arg("real");
    let out = tokio::process::Command::from(command)
        .output()
        .await
        .expect("orrery runs");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[tokio::test]
async fn a_tool_is_used_only_when_the_plan_carries_its_pin_and_it_matches() {
    let fleet = orrery_runner::demo::start_fleet(orrery_runner::demo::FleetConfig::ephemeral())
        .await
        .expect("the demo fleet starts");
    let url = fleet.tools_url();
    let pins = listed_pins(&url).await;
    assert!(pins.iter().any(|p| p.name == "search_articles"));

    let (code, text) = run_plan("pinned", &search_plan(&url, pins.clone())).await;
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("\"mcp.call\""),
        "the pinned tool was called: {text}"
    );
    assert!(
        !text.contains("since it was pinned") && !text.contains("has no pin"),
        "{text}"
    );

    let mut changed = pins.clone();
    for p in &mut changed {
        p.description_sha256 = "0".repeat(64);
    }
    let (_, text) = run_plan("changed", &search_plan(&url, changed)).await;
    assert!(
        text.contains(
            "tool 'search_articles' of MCP entry 'demo-tools' changed since it was pinned"
        ),
        "{text}"
    );

    let (_, text) = run_plan("unpinned", &search_plan(&url, Vec::new())).await;
    assert!(
        text.contains("tool 'search_articles' of MCP entry 'demo-tools' has no pin in the pins the run was given"),
        "{text}"
    );
}

#[test]
fn a_plan_whose_composition_does_not_validate_against_its_entries_exits_1_naming_the_entry() {
    let mut doc = document(
        composition(&examples().join("compositions/critic-loop.yaml")),
        &registry(),
    );
    doc.entries.retain(|e| e.name != "demo-writer");
    let mount = Mount::of("invalid", &doc);
    let out = mount.command().output().expect("orrery runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let summary = parse_summary(&mount.summary()).expect("a summary");
    assert_eq!(summary.outcome, Outcome::Failed);
    let message = summary.error.expect("a reason").message;
    assert!(
        message.starts_with("the plan's composition does not validate")
            && message.contains("demo-writer"),
        "{message}"
    );
}

/// What a test sidecar received: every event by seq (as posted), and every request's
/// `Authorization` header.
#[derive(Default)]
struct Received {
    events: std::collections::BTreeMap<u64, serde_json::Value>,
    authorizations: Vec<Option<String>>,
}

/// A test sidecar keeping the ingest contract's order (409 past a gap, idempotent by seq).
async fn start_sidecar() -> (String, std::sync::Arc<std::sync::Mutex<Received>>) {
    let (url, received, _) = start_sidecar_with(None).await;
    (url, received)
}

/// [`start_sidecar`], also serving the approval relay of `relay` when given.
async fn start_sidecar_with(
    relay: Option<relay_support::Shared>,
) -> (
    String,
    std::sync::Arc<std::sync::Mutex<Received>>,
    Option<relay_support::Shared>,
) {
    use axum::http::{HeaderMap, StatusCode, header};
    use axum::response::IntoResponse;
    use orrery_crds::events::ingest::{ApiError, INGEST_ROUTE, IngestReply};
    use std::sync::{Arc, Mutex};

    async fn ingest(
        axum::extract::State(received): axum::extract::State<Arc<Mutex<Received>>>,
        axum::extract::Path(uid): axum::extract::Path<String>,
        headers: HeaderMap,
        body: axum::body::Bytes,
    ) -> axum::response::Response {
        let mut r = received.lock().unwrap();
        r.authorizations.push(
            headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        );
        let batch: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let events = batch["events"].as_array().unwrap();
        let first = events[0]["seq"].as_u64().unwrap();
        let next = r.events.len() as u64 + 1;
        if first > next || uid != "uid-notes-1" {
            let gap = ApiError {
                loc: Vec::new(),
                code: "gap".into(),
                message: "gap".into(),
                expected: Some(next),
            };
            return (StatusCode::CONFLICT, axum::Json(gap)).into_response();
        }
        let (mut stored, mut duplicates) = (0, 0);
        for event in events {
            let seq = event["seq"].as_u64().unwrap();
            if r.events.insert(seq, event.clone()).is_some() {
                duplicates += 1;
            } else {
                stored += 1;
            }
        }
        let reply = IngestReply {
            stored,
            duplicates,
            last_seq: r.events.len() as u64,
        };
        axum::Json(reply).into_response()
    }

    let received = Arc::new(Mutex::new(Received::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let mut app = axum::Router::new()
        .route(INGEST_ROUTE, axum::routing::post(ingest))
        .with_state(received.clone());
    if let Some(relay) = &relay {
        app = app.merge(relay_support::router(relay.clone()));
    }
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received, relay)
}

#[tokio::test]
async fn a_plan_with_a_token_file_delivers_its_whole_trace_to_the_sidecar_with_the_token() {
    let (url, received) = start_sidecar().await;
    let doc = document(
        composition(&examples().join("compositions/critic-loop.yaml")),
        &registry(),
    );
    let mount = Mount::of("sidecar", &doc);
    std::fs::write(
        mount.dir.join("token"),
        "eyJhbGciOiJFZERTQSJ9.run-token.sig\n",
    )
    .unwrap();
    let mut command = mount.command();
    command.env(orrery_runner::launch::SIDECAR_URL_ENV, &url);
    let out = tokio::process::Command::from(command)
        .output()
        .await
        .expect("orrery runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("not delivered"), "{stderr}");
    let stdout: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let r = received.lock().unwrap();
    let posted: Vec<serde_json::Value> = r.events.values().cloned().collect();
    assert_eq!(
        posted, stdout,
        "the sidecar has the trace standard output shows"
    );
    assert_eq!(posted.last().unwrap()["type"], "run.end");
    assert!(!r.authorizations.is_empty());
    assert!(
        r.authorizations
            .iter()
            .all(|a| a.as_deref() == Some("Bearer eyJhbGciOiJFZERTQSJ9.run-token.sig")),
        "{:?}",
        r.authorizations
    );
    assert!(
        !stderr.contains("run-token.sig"),
        "the token is never printed"
    );
    assert_eq!(
        parse_summary(&mount.summary()).expect("a summary").outcome,
        Outcome::Succeeded
    );
}

#[test]
fn a_plan_without_a_token_file_sends_its_trace_to_standard_output_only_and_says_so() {
    let doc = document(
        composition(&examples().join("compositions/critic-loop.yaml")),
        &registry(),
    );
    let mount = Mount::of("no-token", &doc);
    let out = mount.command().output().expect("orrery runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("no `token` file next to the plan")
            && stderr.contains("standard output only"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout
            .lines()
            .last()
            .is_some_and(|l| l.contains("\"run.end\"")),
        "{stdout}"
    );
}

#[tokio::test]
async fn a_plan_with_a_human_approval_and_a_token_is_decided_through_the_sidecars_relay() {
    let relay = relay_support::Relay::new("uid-notes-1", "eyJhbGciOiJFZERTQSJ9.run-token.sig");
    relay.lock().unwrap().poll_script = [
        relay_support::Reply::Nothing,
        relay_support::Reply::ApproveRight { index: 0 },
    ]
    .into();
    let (url, received, _) = start_sidecar_with(Some(relay.clone())).await;
    let doc = document(
        composition(&examples().join("compositions/human-review.yaml")),
        &registry(),
    );
    let mount = Mount::of("relay", &doc);
    std::fs::write(
        mount.dir.join(orrery_crds::plan_document::TOKEN_FILE),
        "eyJhbGciOiJFZERTQSJ9.run-token.sig\n",
    )
    .unwrap();
    let mut command = mount.command();
    command.env(orrery_runner::launch::SIDECAR_URL_ENV, &url);
    let out = tokio::process::Command::from(command)
        .output()
        .await
        .expect("orrery runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        !stderr.contains("run-token.sig"),
        "the token is never printed"
    );
    assert_eq!(
        parse_summary(&mount.summary()).expect("a summary").outcome,
        Outcome::Succeeded
    );
    let stdout: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let of = |kind: &str| -> Vec<&serde_json::Value> {
        stdout.iter().filter(|e| e["type"] == kind).collect()
    };
    let (requested, decided) = (of("approval.requested"), of("approval.decided"));
    assert_eq!((requested.len(), decided.len()), (1, 1), "{stdout:?}");
    assert_eq!(decided[0]["decision"], "approved");
    assert!(
        of("node.enter").iter().any(|e| e["nodeId"] == "publish"),
        "the run went on past the approval"
    );

    let r = relay.lock().unwrap();
    assert_eq!(r.asks.len(), 1);
    let asked = &r.asks[0];
    assert_eq!(
        (asked.id.as_str(), asked.node.as_str()),
        ("approval-1", "review")
    );
    assert_eq!(
        asked.digest,
        orrery_crds::relay::approval_digest("uid-notes-1", "approval-1", &asked.text)
    );
    assert_eq!(requested[0]["digest"], asked.digest.as_str());
    assert_eq!(decided[0]["digest"], asked.digest.as_str());
    assert_eq!(
        r.settlements(),
        [(
            "approval-1".to_owned(),
            orrery_crds::relay::Settlement::Approved { index: 0 }
        )]
    );
    let bearer = "Bearer eyJhbGciOiJFZERTQSJ9.run-token.sig";
    assert!(
        r.authorizations
            .iter()
            .all(|a| a.as_deref() == Some(bearer)),
        "{:?}",
        r.authorizations
    );
    // The sidecar has the whole trace, the approval events included.
    let posted: Vec<serde_json::Value> =
        received.lock().unwrap().events.values().cloned().collect();
    assert_eq!(posted, stdout);
}

#[tokio::test]
async fn a_runner_whose_sidecar_is_unreachable_gives_up_after_the_plans_flush_seconds_and_says_what_was_not_delivered()
 {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let mut doc = document(
        composition(&examples().join("compositions/critic-loop.yaml")),
        &registry(),
    );
    doc.flush_seconds = Some(2);
    let mount = Mount::of("flush", &doc);
    std::fs::write(mount.dir.join("token"), "run-token\n").unwrap();
    let mut command = mount.command();
    command.env(orrery_runner::launch::SIDECAR_URL_ENV, &url);
    let started = std::time::Instant::now();
    let out = tokio::process::Command::from(command)
        .output()
        .await
        .expect("orrery runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the outcome is the run's: {stderr}"
    );
    assert!(stderr.contains("not delivered"), "{stderr}");
    // The default wait is 30 s; the plan's 2 s is what it waited (with room for a slow run).
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "waited {:?}",
        started.elapsed()
    );
    assert_eq!(
        parse_summary(&mount.summary()).expect("a summary").outcome,
        Outcome::Succeeded
    );
}
