//! Runs as OpenTelemetry traces: the sidecar turns each run's stored events into spans
//! ([`spans`]) as they are ingested and sends them to an OTLP/HTTP collector (protobuf,
//! `POST <endpoint>/v1/traces`). Runner pods gain no egress: the sidecar exports, the runners
//! do not.
//!
//! A collector that is down or slow never slows ingest or a run: ingest hands fresh events to
//! the exporter without waiting (a full hand-off is skipped and made up from the store), ended
//! spans wait in a bounded queue, and a batch the collector does not take is retried with
//! backoff (honouring `Retry-After`) a bounded number of times. Spans that found the queue full
//! or were given up are counted in `orrery_sidecar_otel_spans_dropped_total{reason}` and said
//! in a log line (at most one every 30 s).

pub mod proto;
pub mod spans;

use super::metrics::OtelMetrics;
use super::store::{RunRecord, Store, StoredEvent};
use proto::{
    ExportTraceServiceRequest, InstrumentationScope, KeyValue, Resource, ResourceSpans, ScopeSpans,
    Span,
};
use spans::{RunIdentity, RunSpans};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// Spans sent in one request at most.
pub const BATCH_SPANS: usize = 512;
/// Ended spans that may wait for the collector, by default; past it new spans are dropped.
pub const DEFAULT_QUEUE_SPANS: usize = 8192;
/// Ingested batches that may wait to become spans; past it a hand-off is skipped (and read
/// back from the store with the run's next batch).
pub const HANDOFF_BATCHES: usize = 4096;
/// How long a run's trace may be quiet before its open spans are ended and it is forgotten
/// (a runner that died without `run.end`).
pub const QUIET_RUN: Duration = Duration::from_secs(3600);
/// Sending attempts of one batch before it is given up.
pub const ATTEMPTS: u32 = 6;
/// One request's timeout.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Where and how runs are exported (the chart's `otel.*`).
#[derive(Clone, PartialEq, Eq)]
pub struct OtelSettings {
    /// The collector's OTLP/HTTP base URL (`http://collector:4318`); `/v1/traces` is added
    /// unless the path already ends with it.
    pub endpoint: url::Url,
    /// Headers sent with each request (an API key), from the `--otel-headers-file`.
    pub headers: Vec<(String, String)>,
    /// PEM certificates the collector's TLS certificate is checked against, beside the
    /// system's roots.
    pub ca_pem: Option<Vec<u8>>,
    /// Export the content a run captured (inputs, answers, tool arguments and results); off by
    /// default, so no content leaves even for runs that capture it.
    pub content: bool,
    /// Ended spans that may wait for the collector.
    pub queue_spans: usize,
}

impl std::fmt::Debug for OtelSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("OtelSettings")
            .field("endpoint", &self.endpoint.as_str())
            .field("headers (values hidden)", &header_names)
            .field("ca_pem", &self.ca_pem.as_ref().map(|p| p.len()))
            .field("content", &self.content)
            .field("queue_spans", &self.queue_spans)
            .finish()
    }
}

/// Why the export settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OtelError {
    /// The endpoint is not an http(s) URL.
    #[error(
        "--otel-endpoint {0}: not an http:// or https:// URL; give the collector's OTLP/HTTP address, e.g. http://otel-collector.monitoring:4318"
    )]
    Endpoint(String),
    /// The headers file is unreadable or malformed.
    #[error(
        "--otel-headers-file {path}: {problem}; write `name=value` pairs separated by commas or lines, as OTEL_EXPORTER_OTLP_HEADERS does"
    )]
    Headers {
        /// The file.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// The CA file is unreadable or holds no certificate.
    #[error(
        "--otel-ca-file {path}: {problem}; mount PEM certificates (-----BEGIN CERTIFICATE-----) there"
    )]
    Ca {
        /// The file.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// The HTTP client could not be built.
    #[error("the OTLP client: {0}")]
    Client(String),
}

impl OtelSettings {
    /// Settings for `endpoint`, with no headers, no CA, no content.
    pub fn new(endpoint: &str) -> Result<OtelSettings, OtelError> {
        let endpoint = url::Url::parse(endpoint)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .ok_or_else(|| OtelError::Endpoint(endpoint.to_owned()))?;
        Ok(OtelSettings {
            endpoint,
            headers: Vec::new(),
            ca_pem: None,
            content: false,
            queue_spans: DEFAULT_QUEUE_SPANS,
        })
    }

    /// The URL spans are posted to.
    pub fn traces_url(&self) -> url::Url {
        let mut url = self.endpoint.clone();
        if !url.path().ends_with("/v1/traces") {
            let path = format!("{}/v1/traces", url.path().trim_end_matches('/'));
            url.set_path(&path);
        }
        url
    }

    /// Reads headers (`name=value`, separated by commas or new lines; values percent-decoded,
    /// as `OTEL_EXPORTER_OTLP_HEADERS`) from `path`, a file of a mounted Secret.
    pub fn read_headers(path: &str) -> Result<Vec<(String, String)>, OtelError> {
        let bad = |problem: String| OtelError::Headers {
            path: path.to_owned(),
            problem,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
        parse_headers(&text).map_err(bad)
    }

    /// Reads the PEM certificates at `path`.
    pub fn read_ca(path: &str) -> Result<Vec<u8>, OtelError> {
        let bad = |problem: String| OtelError::Ca {
            path: path.to_owned(),
            problem,
        };
        let pem = std::fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
        match reqwest::Certificate::from_pem_bundle(&pem) {
            Ok(certs) if !certs.is_empty() => Ok(pem),
            _ => Err(bad("it holds no PEM certificate".into())),
        }
    }
}

/// `name=value` pairs separated by commas or new lines; blank parts and `#` lines skipped.
pub fn parse_headers(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut headers = Vec::new();
    for (i, part) in text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .enumerate()
    {
        // A part is never quoted back: it may hold the secret.
        let (name, value) = part
            .split_once('=')
            .ok_or_else(|| format!("header {} has no `=`", i + 1))?;
        let name = name.trim();
        let value = percent_encoding::percent_decode_str(value.trim())
            .decode_utf8()
            .map_err(|_| format!("the value of {name} is not UTF-8 once decoded"))?
            .into_owned();
        if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(format!("`{name}` is not a header name"));
        }
        if reqwest::header::HeaderValue::from_str(&value).is_err() {
            return Err(format!("the value of {name} is not a valid header value"));
        }
        headers.push((name.to_owned(), value));
    }
    Ok(headers)
}

struct Handoff {
    run: RunRecord,
    events: Arc<[StoredEvent]>,
}

/// Ended spans waiting for the collector.
struct Queue {
    spans: Mutex<VecDeque<Span>>,
    ready: Notify,
    capacity: usize,
}

/// The exporter: cheap to offer to, never blocking.
pub struct Exporter {
    handoff: mpsc::Sender<Handoff>,
    metrics: OtelMetrics,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Exporter")
    }
}

impl Exporter {
    /// Starts the exporter's two tasks on the current runtime: one turns ingested events into
    /// spans, the other sends them. Both stop when `shutdown` is cancelled (the sender after
    /// one last send of what waits, for at most [`REQUEST_TIMEOUT`]).
    pub fn start(
        settings: OtelSettings,
        store: Store,
        metrics: OtelMetrics,
        shutdown: CancellationToken,
    ) -> Result<Exporter, OtelError> {
        let client = client(&settings)?;
        let (handoff, events) = mpsc::channel(HANDOFF_BATCHES);
        let queue = Arc::new(Queue {
            spans: Mutex::new(VecDeque::new()),
            ready: Notify::new(),
            capacity: settings.queue_spans.max(1),
        });
        tokio::spawn(build_spans(
            events,
            store,
            settings.content,
            queue.clone(),
            metrics.clone(),
            shutdown.clone(),
        ));
        tokio::spawn(send_spans(
            settings,
            client,
            queue,
            metrics.clone(),
            shutdown,
        ));
        Ok(Exporter { handoff, metrics })
    }

    /// Offers events `run` just stored (in `seq` order, none stored before by this process).
    /// Never waits: when the exporter is behind, the hand-off is skipped and counted, and the
    /// events are read back from the store with the run's next batch.
    pub fn offer(&self, run: &RunRecord, events: Arc<[StoredEvent]>) {
        let handoff = Handoff {
            run: run.clone(),
            events,
        };
        if self.handoff.try_send(handoff).is_err() {
            self.metrics.skipped();
        }
    }
}

fn client(settings: &OtelSettings) -> Result<reqwest::Client, OtelError> {
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in &settings.headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| OtelError::Client(e.to_string()))?;
        let mut value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|e| OtelError::Client(e.to_string()))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    let mut builder = reqwest::Client::builder()
        .default_headers(headers)
        .timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none());
    if let Some(pem) = &settings.ca_pem {
        for cert in reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| OtelError::Client(format!("the CA file: {e}")))?
        {
            builder = builder.add_root_certificate(cert);
        }
    }
    builder
        .build()
        .map_err(|e| OtelError::Client(e.to_string()))
}

struct Tracked {
    spans: RunSpans,
    touched: Instant,
}

async fn build_spans(
    mut events: mpsc::Receiver<Handoff>,
    store: Store,
    content: bool,
    queue: Arc<Queue>,
    metrics: OtelMetrics,
    shutdown: CancellationToken,
) {
    let mut runs: HashMap<String, Tracked> = HashMap::new();
    let mut sweep = tokio::time::interval(Duration::from_secs(60));
    loop {
        let handoff = tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = sweep.tick() => {
                runs.retain(|_, t| t.touched.elapsed() < QUIET_RUN);
                continue;
            }
            h = events.recv() => match h {
                Some(h) => h,
                None => return,
            },
        };
        let Some(first) = handoff.events.first().map(|e| e.seq) else {
            continue;
        };
        let tracked = runs
            .entry(handoff.run.uid.clone())
            .or_insert_with(|| Tracked {
                spans: RunSpans::new(
                    RunIdentity {
                        uid: handoff.run.uid.clone(),
                        namespace: handoff.run.namespace.clone(),
                        name: handoff.run.name.clone(),
                    },
                    content,
                ),
                touched: Instant::now(),
            });
        tracked.touched = Instant::now();
        let mut ended = Vec::new();
        // Events this process did not see (another replica stored them, a hand-off was
        // skipped, the sidecar restarted): read back from the store.
        while tracked.spans.next_seq() < first {
            let after = tracked.spans.next_seq() - 1;
            let limit = u32::try_from((first - 1 - after).min(500)).unwrap_or(500);
            match store.events_after(&handoff.run.uid, after, limit).await {
                Ok(missed) if !missed.is_empty() => {
                    for event in missed.iter().filter(|e| e.seq < first) {
                        take(&mut tracked.spans, event, &mut ended);
                    }
                }
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(run_uid = %handoff.run.uid, "exporting run {}'s trace: reading its earlier events: {e}", handoff.run.uid);
                    break;
                }
            }
        }
        for event in handoff.events.iter() {
            take(&mut tracked.spans, event, &mut ended);
        }
        if tracked.spans.ended() {
            runs.remove(&handoff.run.uid);
        }
        if !ended.is_empty() {
            enqueue(&queue, ended, &metrics);
        }
    }
}

fn take(spans: &mut RunSpans, event: &StoredEvent, out: &mut Vec<Span>) {
    if event.seq != spans.next_seq() {
        return;
    }
    match serde_json::from_str::<orrery_crds::events::TraceEvent>(&event.body) {
        Ok(parsed) => out.extend(spans.push(&parsed)),
        Err(e) => tracing::warn!(
            "exporting a trace: stored event {} is not a trace event: {e}",
            event.seq
        ),
    }
}

fn enqueue(queue: &Queue, spans: Vec<Span>, metrics: &OtelMetrics) {
    let mut dropped = 0u64;
    {
        let mut waiting = queue.spans.lock().unwrap_or_else(|e| e.into_inner());
        for span in spans {
            if waiting.len() >= queue.capacity {
                dropped += 1;
            } else {
                waiting.push_back(span);
            }
        }
        metrics.queued(waiting.len());
    }
    if dropped > 0 {
        metrics.dropped("queue_full", dropped);
    }
    queue.ready.notify_one();
}

fn request(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![
                    KeyValue::string("service.name", "orrery"),
                    KeyValue::string("service.version", env!("CARGO_PKG_VERSION")),
                ],
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "orrery-sidecar".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }),
                spans,
            }],
        }],
    }
}

/// What one attempt to send came to.
enum Sent {
    Taken,
    /// Worth another try, after at least this long.
    Retry(Option<Duration>, String),
    /// Refused for good (a 4xx other than 408/429).
    Refused(String),
}

async fn send_once(client: &reqwest::Client, url: &url::Url, body: Vec<u8>) -> Sent {
    let reply = client
        .post(url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
        .body(body)
        .send()
        .await;
    match reply {
        Err(e) => Sent::Retry(None, without_url(&e)),
        Ok(r) if r.status().is_success() => Sent::Taken,
        Ok(r) => {
            let status = r.status();
            let after = r
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(|s| Duration::from_secs(s).min(MAX_BACKOFF));
            let why = format!("the collector answered {status}");
            match status.as_u16() {
                408 | 429 | 502 | 503 | 504 => Sent::Retry(after, why),
                s if s >= 500 => Sent::Retry(after, why),
                _ => Sent::Refused(why),
            }
        }
    }
}

fn without_url(e: &reqwest::Error) -> String {
    let e = e.to_string();
    // reqwest names the URL, which may carry credentials in its query; the endpoint is in the
    // settings for whoever reads the log.
    match e.find(" for url (") {
        Some(i) => e[..i].to_owned(),
        None => e,
    }
}

async fn send_spans(
    settings: OtelSettings,
    client: reqwest::Client,
    queue: Arc<Queue>,
    metrics: OtelMetrics,
    shutdown: CancellationToken,
) {
    let url = settings.traces_url();
    let mut last_said: Option<Instant> = None;
    let mut unsaid = 0u64;
    loop {
        let stopping = tokio::select! {
            _ = shutdown.cancelled() => true,
            _ = queue.ready.notified() => false,
            _ = tokio::time::sleep(Duration::from_secs(1)) => false,
        };
        loop {
            let batch: Vec<Span> = {
                let mut waiting = queue.spans.lock().unwrap_or_else(|e| e.into_inner());
                let n = waiting.len().min(BATCH_SPANS);
                let batch = waiting.drain(..n).collect();
                metrics.queued(waiting.len());
                batch
            };
            if batch.is_empty() {
                break;
            }
            let count = batch.len() as u64;
            let body = prost::Message::encode_to_vec(&request(batch));
            let mut attempt = 0;
            let mut backoff = Duration::from_secs(1);
            let given_up = loop {
                attempt += 1;
                let sent = if stopping {
                    match tokio::time::timeout(
                        REQUEST_TIMEOUT,
                        send_once(&client, &url, body.clone()),
                    )
                    .await
                    {
                        Ok(sent) => sent,
                        Err(_) => Sent::Retry(None, "timed out while stopping".into()),
                    }
                } else {
                    send_once(&client, &url, body.clone()).await
                };
                match sent {
                    Sent::Taken => {
                        metrics.exported(count);
                        break None;
                    }
                    Sent::Refused(why) => break Some(("refused", why)),
                    Sent::Retry(after, why) => {
                        metrics.failed_attempt();
                        if attempt >= ATTEMPTS || stopping {
                            break Some(("export_failed", why));
                        }
                        let jitter = Duration::from_millis(rand::random::<u64>() % 250);
                        let wait = after.unwrap_or(backoff).max(backoff / 2) + jitter;
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                        tokio::select! {
                            _ = shutdown.cancelled() => break Some(("export_failed", why)),
                            _ = tokio::time::sleep(wait) => {}
                        }
                    }
                }
            };
            let gave_up = given_up.is_some();
            if let Some((reason, why)) = given_up {
                metrics.dropped(reason, count);
                unsaid += count;
                if last_said.is_none_or(|t| t.elapsed() >= Duration::from_secs(30)) {
                    tracing::warn!(
                        "exporting run traces to {}: {why}; {unsaid} spans dropped since the last report (orrery_sidecar_otel_spans_dropped_total counts them all)",
                        settings.endpoint
                    );
                    last_said = Some(Instant::now());
                    unsaid = 0;
                }
            }
            if stopping && gave_up {
                return;
            }
        }
        if stopping {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_read_as_otel_exporter_otlp_headers_and_a_bad_one_is_named_without_its_value() {
        type Headers = Vec<(&'static str, &'static str)>;
        let cases: &[(&str, Result<Headers, &str>)] = &[
            ("api-key=abc", Ok(vec![("api-key", "abc")])),
            (
                "a=1, b=two%20words\n# a comment\nc = 3\n",
                Ok(vec![("a", "1"), ("b", "two words"), ("c", "3")]),
            ),
            ("", Ok(vec![])),
            ("a=1,secret-without-equals", Err("header 2 has no `=`")),
            ("bad name=1", Err("`bad name` is not a header name")),
            (
                "a=line%0Abreak",
                Err("the value of a is not a valid header value"),
            ),
        ];
        for (text, want) in cases {
            let got = parse_headers(text);
            let want = want.clone().map(|v| {
                v.into_iter()
                    .map(|(n, v)| (n.to_owned(), v.to_owned()))
                    .collect::<Vec<_>>()
            });
            assert_eq!(got, want.map_err(str::to_owned), "{text:?}");
        }
    }

    #[test]
    fn the_endpoint_is_a_base_url_to_which_v1_traces_is_added_once() {
        for (endpoint, url) in [
            ("http://collector:4318", "http://collector:4318/v1/traces"),
            ("http://collector:4318/", "http://collector:4318/v1/traces"),
            (
                "https://otlp.example/prefix",
                "https://otlp.example/prefix/v1/traces",
            ),
            (
                "https://otlp.example/v1/traces",
                "https://otlp.example/v1/traces",
            ),
        ] {
            let settings = OtelSettings::new(endpoint).map_err(|e| e.to_string());
            assert_eq!(
                settings.map(|s| s.traces_url().to_string()),
                Ok(url.to_owned())
            );
        }
        for bad in ["collector:4318", "ftp://collector", "http://", "not a url"] {
            let err = OtelSettings::new(bad)
                .map(|_| ())
                .map_err(|e| e.to_string());
            assert!(
                err.as_ref().is_err_and(|e| e.contains("--otel-endpoint")),
                "{bad}: {err:?}"
            );
        }
    }

    #[test]
    fn the_settings_never_print_a_header_value() {
        let mut settings = OtelSettings::new("http://c:4318").map_err(|e| e.to_string());
        if let Ok(s) = settings.as_mut() {
            s.headers = vec![("api-key".into(), "the-secret".into())];
        }
        let printed = format!("{settings:?}");
        assert!(
            printed.contains("api-key") && !printed.contains("the-secret"),
            "{printed}"
        );
    }

    fn event(seq: u64, body: serde_json::Value) -> StoredEvent {
        let mut body = body;
        body["seq"] = serde_json::json!(seq);
        body["runId"] = serde_json::json!("r");
        body["ts"] = serde_json::json!("2026-12-07T10:00:00.000Z");
        StoredEvent {
            seq,
            body: body.to_string(),
        }
    }

    /// A run of `nodes` node entries: `2 + 2 * nodes` events, `nodes + 1` spans.
    fn events(nodes: u64) -> Vec<StoredEvent> {
        let mut out = vec![event(
            1,
            serde_json::json!({"type": "run.start", "composition": "c", "pattern": "Sequential",
                               "nodes": nodes, "budgets": {"maxTokens": 1000, "maxToolCalls": 10, "maxDelegations": 5, "maxRemoteCalls": 5, "timeoutSeconds": 60}, "captureContent": false,
                               "dryRunTools": false, "inputSize": 1}),
        )];
        for entry in 1..=nodes {
            out.push(event(
                out.len() as u64 + 1,
                serde_json::json!({"type": "node.enter", "nodeId": format!("n{entry}"),
                                   "kind": "LLMAgent", "entry": entry, "depth": 0,
                                   "inputSize": 1}),
            ));
            out.push(event(
                out.len() as u64 + 1,
                serde_json::json!({"type": "node.exit", "nodeId": format!("n{entry}"),
                                   "kind": "LLMAgent", "entry": entry, "depth": 0,
                                   "status": "ok", "tokens": 1, "modelCalls": 1,
                                   "durationMs": 1, "answerSize": 1}),
            ));
        }
        out.push(event(
            out.len() as u64 + 1,
            serde_json::json!({"type": "run.end", "outcome": "Succeeded", "totals": {},
                               "dropped": 0, "outputSize": 0}),
        ));
        out
    }

    #[tokio::test]
    async fn a_collector_that_is_not_there_never_holds_up_ingest_and_spans_past_the_queue_are_dropped_and_counted()
     {
        let dir = std::env::temp_dir().join(format!("orrery-otel-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let store = Store::open(&format!("sqlite:{}", dir.join("events.db").display())).await;
        let Ok(store) = store else {
            unreachable!("the store: {:?}", store.err())
        };
        // Port 9 (discard) on loopback: nothing listens, every attempt fails at once.
        let mut settings = OtelSettings::new("http://127.0.0.1:9").map_err(|e| e.to_string());
        if let Ok(s) = settings.as_mut() {
            s.queue_spans = 5;
        }
        let Ok(settings) = settings else {
            unreachable!("the settings")
        };
        let metrics = OtelMetrics::default();
        let stop = CancellationToken::new();
        let exporter = Exporter::start(settings, store, metrics.clone(), stop.clone());
        let Ok(exporter) = exporter else {
            unreachable!("the exporter: {:?}", exporter.err())
        };
        let run = RunRecord {
            uid: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b".into(),
            namespace: "ns".into(),
            name: "r".into(),
        };
        // 41 spans in one hand-off: 5 fit the queue, 36 are dropped there and then.
        let started = Instant::now();
        exporter.offer(&run, Arc::from(events(40)));
        assert!(
            started.elapsed() < Duration::from_millis(50),
            "an offer never waits"
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while metrics.dropped_total("queue_full") < 36 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(metrics.dropped_total("queue_full"), 36);
        assert_eq!(metrics.exported_total(), 0);
        // The first attempt failed and is being retried with backoff.
        let deadline = Instant::now() + Duration::from_secs(10);
        while metrics.failures_total() == 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(metrics.failures_total() >= 1);
        stop.cancel();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
