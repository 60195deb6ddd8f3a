//! `orrery up --traces`: a local OpenTelemetry trace receiver, so a person sees runs as traces
//! without a collector of their own. It takes OTLP/HTTP protobuf (`POST /v1/traces`, what the
//! sidecar and the controller send) and writes:
//!
//! - `traces.jsonl`: every span as one JSON line (trace and span ids in hex, name, service,
//!   start, duration, status, attributes), for `jq`;
//! - `traces.txt`: each run's trace as an indented tree once its root span arrives (the root
//!   ends last), with durations, statuses and model tokens: where to look first (the
//!   controller's reconciles of Compositions and entries, traces of their own, are left out).
//!
//! It runs in `orrery up`'s own process (stopped with it) and trusts what it is sent: it
//! listens only where the operator's pod reaches it (the bridge's gateway, or loopback).

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, header};
use orrery_operator::otel::proto::{ExportTraceServiceRequest, KeyValue, Span, Value};
use prost::Message as _;
use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The largest request body taken (a batch of the sidecar's is far smaller).
const MAX_BODY_BYTES: usize = 16 << 20;
/// Spans kept per trace until its root arrives; a trace past it is written without the rest.
const MAX_SPANS_PER_TRACE: usize = 4096;
/// Traces waiting for their root at once; the oldest go past it.
const MAX_OPEN_TRACES: usize = 1024;

/// A running receiver.
pub struct Receiver {
    /// Its OTLP/HTTP base URL (the chart's `otel.endpoint`).
    pub url: String,
    /// Every span, as JSON lines.
    pub spans_file: PathBuf,
    /// Each run's trace as a tree.
    pub trees_file: PathBuf,
}

/// One span as the files show it.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Shown {
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    name: String,
    service: String,
    start_unix_nano: u64,
    duration_ms: f64,
    status: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    status_message: String,
    attributes: BTreeMap<String, serde_json::Value>,
}

struct State {
    spans: std::fs::File,
    trees: std::fs::File,
    /// Spans of traces whose root has not arrived, by trace id, in arrival order.
    open: HashMap<String, Vec<Shown>>,
    order: std::collections::VecDeque<String>,
}

/// Starts the receiver on `bind`, writing into `dir`; the task serves until aborted.
pub async fn start(
    bind: SocketAddr,
    dir: &Path,
) -> Result<(Receiver, tokio::task::JoinHandle<()>)> {
    let spans_file = dir.join("traces.jsonl");
    let trees_file = dir.join("traces.txt");
    let open = |path: &Path| {
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))
    };
    let state = Arc::new(Mutex::new(State {
        spans: open(&spans_file)?,
        trees: open(&trees_file)?,
        open: HashMap::new(),
        order: std::collections::VecDeque::new(),
    }));
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .with_context(|| format!("listening on {bind} for traces"))?;
    let address = listener.local_addr()?;
    let app = axum::Router::new()
        .route("/v1/traces", axum::routing::post(take))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state);
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            eprintln!("orrery up: the trace receiver stopped: {e}");
        }
    });
    Ok((
        Receiver {
            url: format!("http://{address}"),
            spans_file,
            trees_file,
        },
        task,
    ))
}

async fn take(
    axum::extract::State(state): axum::extract::State<Arc<Mutex<State>>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, HeaderMap, Vec<u8>) {
    let mut reply = HeaderMap::new();
    let protobuf = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-protobuf"));
    if !protobuf {
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            reply,
            b"OTLP/HTTP protobuf only (Content-Type: application/x-protobuf)".to_vec(),
        );
    }
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return (
            StatusCode::BAD_REQUEST,
            reply,
            b"not an ExportTraceServiceRequest".to_vec(),
        );
    };
    let mut shown = Vec::new();
    for resource in &request.resource_spans {
        let service = resource
            .resource
            .as_ref()
            .and_then(|r| attributes(&r.attributes).remove("service.name"))
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        for scope in &resource.scope_spans {
            shown.extend(scope.spans.iter().map(|s| show(s, &service)));
        }
    }
    if let Ok(mut state) = state.lock() {
        state.take(shown);
    }
    reply.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/x-protobuf"),
    );
    // An empty ExportTraceServiceResponse: everything was taken.
    (StatusCode::OK, reply, Vec::new())
}

impl State {
    fn take(&mut self, spans: Vec<Shown>) {
        for span in spans {
            if let Ok(line) = serde_json::to_string(&span) {
                let _ = writeln!(self.spans, "{line}");
            }
            let root = span.parent_span_id.is_empty();
            let trace = span.trace_id.clone();
            if !self.open.contains_key(&trace) {
                if self.order.len() >= MAX_OPEN_TRACES
                    && let Some(oldest) = self.order.pop_front()
                {
                    self.open.remove(&oldest);
                }
                self.order.push_back(trace.clone());
            }
            let kept = self.open.entry(trace.clone()).or_default();
            if kept.len() < MAX_SPANS_PER_TRACE {
                kept.push(span);
            }
            if root {
                let spans = self.open.remove(&trace).unwrap_or_default();
                self.order.retain(|t| t != &trace);
                // A run's trace (its root is the run); a Composition's or an entry's
                // reconcile, a trace of its own, stays in the JSON lines only.
                let is_run = spans.iter().any(|s| {
                    s.parent_span_id.is_empty() && s.attributes.contains_key("orrery.run.name")
                });
                if is_run {
                    let _ = self.trees.write_all(tree(&spans).as_bytes());
                }
            }
        }
        let _ = self.spans.flush();
        let _ = self.trees.flush();
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attributes(kvs: &[KeyValue]) -> BTreeMap<String, serde_json::Value> {
    kvs.iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(Value::String(s)) => serde_json::Value::from(s.as_str()),
                Some(Value::Bool(b)) => serde_json::Value::from(*b),
                Some(Value::Int(i)) => serde_json::Value::from(*i),
                Some(Value::Double(d)) => serde_json::Value::from(*d),
                None => serde_json::Value::Null,
            };
            (kv.key.clone(), value)
        })
        .collect()
}

fn show(span: &Span, service: &str) -> Shown {
    let (status, status_message) = match &span.status {
        Some(s) if s.code == 2 => ("ERROR", s.message.clone()),
        Some(s) if s.code == 1 => ("OK", String::new()),
        _ => ("UNSET", String::new()),
    };
    Shown {
        trace_id: hex(&span.trace_id),
        span_id: hex(&span.span_id),
        parent_span_id: hex(&span.parent_span_id),
        name: span.name.clone(),
        service: service.to_owned(),
        start_unix_nano: span.start_time_unix_nano,
        duration_ms: span
            .end_time_unix_nano
            .saturating_sub(span.start_time_unix_nano) as f64
            / 1e6,
        status,
        status_message,
        attributes: attributes(&span.attributes),
    }
}

/// One trace as an indented tree, children in start order under their parents; spans whose
/// parent never came are listed under the root.
fn tree(spans: &[Shown]) -> String {
    let Some(root) = spans.iter().find(|s| s.parent_span_id.is_empty()) else {
        return String::new();
    };
    let mut children: HashMap<&str, Vec<&Shown>> = HashMap::new();
    let known: std::collections::HashSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    for span in spans.iter().filter(|s| !s.parent_span_id.is_empty()) {
        let parent = if known.contains(span.parent_span_id.as_str()) {
            span.parent_span_id.as_str()
        } else {
            root.span_id.as_str()
        };
        children.entry(parent).or_default().push(span);
    }
    for list in children.values_mut() {
        list.sort_by_key(|s| s.start_unix_nano);
    }
    let run = root
        .attributes
        .get("orrery.run.name")
        .and_then(|v| v.as_str())
        .map(|name| {
            let ns = root
                .attributes
                .get("orrery.run.namespace")
                .and_then(|v| v.as_str())
                .unwrap_or_default();
            format!(" (StudioRun {ns}/{name})")
        })
        .unwrap_or_default();
    let mut out = format!("trace {}{run}\n", root.trace_id);
    let mut stack = vec![(root, 1usize)];
    while let Some((span, depth)) = stack.pop() {
        out.push_str(&line(span, depth));
        if let Some(kids) = children.get(span.span_id.as_str()) {
            stack.extend(kids.iter().rev().map(|k| (*k, depth + 1)));
        }
    }
    out.push('\n');
    out
}

fn line(span: &Shown, depth: usize) -> String {
    let mut text = format!(
        "{}{}  {:.1} ms",
        "  ".repeat(depth),
        span.name,
        span.duration_ms
    );
    let int = |key: &str| span.attributes.get(key).and_then(serde_json::Value::as_i64);
    if let (Some(input), Some(output)) = (
        int("gen_ai.usage.input_tokens"),
        int("gen_ai.usage.output_tokens"),
    ) {
        text.push_str(&format!("  tokens in {input} out {output}"));
    }
    if span.status == "ERROR" {
        text.push_str(&format!("  ERROR {}", span.status_message));
    }
    text.push('\n');
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn span(id: &str, parent: &str, name: &str, start: u64, attrs: &[(&str, i64)]) -> Shown {
        Shown {
            trace_id: "t".into(),
            span_id: id.into(),
            parent_span_id: parent.into(),
            name: name.into(),
            service: "orrery-sidecar".into(),
            start_unix_nano: start,
            duration_ms: 2.0,
            status: "UNSET",
            status_message: String::new(),
            attributes: attrs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v)))
                .collect(),
        }
    }

    #[test]
    fn a_trace_is_drawn_as_a_tree_in_start_order_with_model_tokens() {
        let spans = vec![
            span("c2", "n1", "execute_tool docs_search", 30, &[]),
            span(
                "c1",
                "n1",
                "chat gpt-5-mini",
                20,
                &[
                    ("gen_ai.usage.input_tokens", 120),
                    ("gen_ai.usage.output_tokens", 30),
                ],
            ),
            span("n1", "r", "invoke_agent writer", 10, &[]),
            span("x", "gone", "reconcile StudioRun", 5, &[]),
            span("r", "", "run review", 0, &[]),
        ];
        let text = tree(&spans);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "trace t");
        assert_eq!(lines[1], "  run review  2.0 ms");
        // An orphan goes under the root, before the node (it started first).
        assert_eq!(lines[2], "    reconcile StudioRun  2.0 ms");
        assert_eq!(lines[3], "    invoke_agent writer  2.0 ms");
        assert_eq!(
            lines[4],
            "      chat gpt-5-mini  2.0 ms  tokens in 120 out 30"
        );
        assert_eq!(lines[5], "      execute_tool docs_search  2.0 ms");
    }

    #[tokio::test]
    async fn spans_posted_as_otlp_protobuf_are_written_and_a_trace_is_drawn_when_its_root_arrives()
    {
        use orrery_operator::otel::proto::{ResourceSpans, ScopeSpans};
        let dir = std::env::temp_dir().join(format!("orrery-up-traces-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (receiver, task) = start("127.0.0.1:0".parse().unwrap(), &dir).await.unwrap();
        let proto = |id: u8, parent: Option<u8>, name: &str| Span {
            trace_id: vec![7; 16],
            span_id: vec![id; 8],
            parent_span_id: parent.map(|p| vec![p; 8]).unwrap_or_default(),
            name: name.into(),
            start_time_unix_nano: u64::from(id),
            end_time_unix_nano: u64::from(id) + 1_000_000,
            ..Span::default()
        };
        let request = |spans: Vec<Span>| {
            ExportTraceServiceRequest {
                resource_spans: vec![ResourceSpans {
                    resource: None,
                    scope_spans: vec![ScopeSpans { scope: None, spans }],
                }],
            }
            .encode_to_vec()
        };
        let http = reqwest::Client::new();
        let post = |body: Vec<u8>, kind: &'static str| {
            http.post(format!("{}/v1/traces", receiver.url))
                .header("content-type", kind)
                .body(body)
                .send()
        };
        let r = post(
            request(vec![proto(2, Some(1), "invoke_agent a")]),
            "application/x-protobuf",
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 200);
        assert!(
            std::fs::read_to_string(&receiver.trees_file)
                .unwrap()
                .is_empty()
        );
        // A reconcile of a Composition is a trace of its own: no tree.
        let mut reconcile = proto(9, None, "reconcile Composition");
        reconcile.trace_id = vec![9; 16];
        post(request(vec![reconcile]), "application/x-protobuf")
            .await
            .unwrap();
        let mut root = proto(1, None, "run demo");
        root.attributes = vec![
            KeyValue::string("orrery.run.name", "demo-1"),
            KeyValue::string("orrery.run.namespace", "default"),
        ];
        post(request(vec![root]), "application/x-protobuf")
            .await
            .unwrap();
        let r = post(b"{}".to_vec(), "application/json").await.unwrap();
        assert_eq!(r.status(), 415);
        let spans = std::fs::read_to_string(&receiver.spans_file).unwrap();
        assert_eq!(spans.lines().count(), 3, "{spans}");
        assert!(spans.contains("\"traceId\":\"07070707070707070707070707070707\""));
        let trees = std::fs::read_to_string(&receiver.trees_file).unwrap();
        assert!(
            trees
                .starts_with("trace 07070707070707070707070707070707 (StudioRun default/demo-1)\n")
                && trees.contains("  run demo  1.0 ms\n    invoke_agent a  1.0 ms\n")
                && !trees.contains("reconcile Composition"),
            "{trees}"
        );
        task.abort();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
