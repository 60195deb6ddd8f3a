//! OpenTelemetry traces over OTLP/HTTP (protobuf, `POST <endpoint>/v1/traces`), for the
//! sidecar (runs: [`crate::sidecar::otel`]) and the controller (its reconciles): the settings
//! (`--otel-endpoint` and its siblings), the ids every span of a run shares, and
//! [`SpanSender`], which sends ended spans in batches.
//!
//! A collector that is down or slow never holds anything up: spans wait in a bounded queue
//! (past it new spans are dropped), and a batch the collector does not take is retried with
//! backoff (honouring `Retry-After`) a bounded number of times. Spans dropped are counted in
//! `<prefix>_spans_dropped_total{reason}` and said in a log line (at most one every 30 s).

pub mod proto;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use proto::{
    ExportTraceServiceRequest, InstrumentationScope, KeyValue, Resource, ResourceSpans, ScopeSpans,
    Span,
};
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Spans sent in one request at most.
pub const BATCH_SPANS: usize = 512;
/// Ended spans that may wait for the collector, by default; past it new spans are dropped.
pub const DEFAULT_QUEUE_SPANS: usize = 8192;
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

/// The place of a run's root span (see [`span_id`]).
pub const RUN_SPAN: &str = "run";

/// The W3C `traceparent` of run `uid`'s root span (`00-<trace id>-<span id>-01`): what its
/// runner pod gets as `TRACEPARENT`, so the pod's log lines name the trace.
pub fn traceparent(uid: &str) -> String {
    format!(
        "00-{}-{}-01",
        hex::encode(trace_id(uid)),
        hex::encode(span_id(uid, RUN_SPAN))
    )
}

/// The trace of object `uid` (a run's, a Composition's, a RegistryEntry's): the UUID's 16
/// bytes; a UID that is not a UUID is hashed.
pub fn trace_id(uid: &str) -> [u8; 16] {
    let hex: String = uid.chars().filter(|c| *c != '-').collect();
    let mut id = [0u8; 16];
    if hex.len() == 32 && hex::decode_to_slice(&hex, &mut id).is_ok() && id != [0; 16] {
        return id;
    }
    let digest = Sha256::digest(uid.as_bytes());
    id.copy_from_slice(&digest[..16]);
    id
}

/// The id of the span at `place` in run `uid` (never all zeros, which OTLP reads as none).
pub fn span_id(uid: &str, place: &str) -> [u8; 8] {
    let mut hasher = Sha256::new();
    hasher.update(uid.as_bytes());
    hasher.update([0]);
    hasher.update(place.as_bytes());
    let digest = hasher.finalize();
    let mut id = [0u8; 8];
    id.copy_from_slice(&digest[..8]);
    if id == [0; 8] {
        id[7] = 1;
    }
    id
}

/// Unix nanoseconds of an event's RFC 3339 `ts` (0 when unreadable: the runner writes it, the
/// store checked it, so that is a bug shown as a span at 1970, not a lost span).
pub fn unix_nanos(ts: &str) -> u64 {
    ts.parse::<jiff::Timestamp>()
        .ok()
        .and_then(|t| u64::try_from(t.as_nanosecond()).ok())
        .unwrap_or(0)
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

/// Why spans were not exported.
pub const OTEL_DROP_REASONS: [&str; 3] = ["queue_full", "export_failed", "refused"];

/// The trace exporter's series (cheap to clone: the exporter's tasks hold a copy).
#[derive(Clone, Debug, Default)]
pub struct OtelMetrics {
    exported: Counter,
    dropped: Family<ReasonLabel, Counter>,
    failures: Counter,
    skipped: Counter,
    queue: Gauge,
}

impl OtelMetrics {
    /// Registers the series in `registry` under `prefix` (`orrery_sidecar_otel`,
    /// `orrery_otel` for the controller's).
    pub fn register(&self, registry: &mut Registry, prefix: &str) {
        registry.register(
            format!("{prefix}_spans_exported"),
            "Spans the OTLP collector took",
            self.exported.clone(),
        );
        registry.register(
            format!("{prefix}_spans_dropped"),
            "Spans not exported, by reason (queue_full, export_failed, refused)",
            self.dropped.clone(),
        );
        registry.register(
            format!("{prefix}_export_failures"),
            "Attempts to send spans to the collector that failed (retried up to a bound)",
            self.failures.clone(),
        );
        registry.register(
            format!("{prefix}_handoffs_skipped"),
            "Batches of events the exporter was too far behind to take (the sidecar reads them back from its store)",
            self.skipped.clone(),
        );
        registry.register(
            format!("{prefix}_queue_spans"),
            "Ended spans waiting for the collector",
            self.queue.clone(),
        );
        for reason in OTEL_DROP_REASONS {
            drop(self.dropped.get_or_create(&ReasonLabel {
                reason: reason.into(),
            }));
        }
    }

    /// `n` spans the collector took.
    pub fn exported(&self, n: u64) {
        self.exported.inc_by(n);
    }

    /// Spans the collector took so far.
    pub fn exported_total(&self) -> u64 {
        self.exported.get()
    }

    /// `n` spans dropped for `reason` (one of [`OTEL_DROP_REASONS`]).
    pub fn dropped(&self, reason: &str, n: u64) {
        self.dropped
            .get_or_create(&ReasonLabel {
                reason: reason.into(),
            })
            .inc_by(n);
    }

    /// Spans dropped for `reason` so far.
    pub fn dropped_total(&self, reason: &str) -> u64 {
        self.dropped
            .get_or_create(&ReasonLabel {
                reason: reason.into(),
            })
            .get()
    }

    /// One sending attempt failed.
    pub fn failed_attempt(&self) {
        self.failures.inc();
    }

    /// Sending attempts that failed so far.
    pub fn failures_total(&self) -> u64 {
        self.failures.get()
    }

    /// A hand-off from ingest was skipped.
    pub fn skipped(&self) {
        self.skipped.inc();
    }

    /// `n` spans wait now.
    pub fn queued(&self, n: usize) {
        self.queue.set(i64::try_from(n).unwrap_or(i64::MAX));
    }
}

/// Ended spans waiting for the collector.
struct Queue {
    spans: Mutex<VecDeque<Span>>,
    ready: Notify,
    capacity: usize,
}

/// Sends ended spans to the collector in batches; cheap to clone, never blocking.
#[derive(Clone)]
pub struct SpanSender {
    queue: Arc<Queue>,
    metrics: OtelMetrics,
}

impl std::fmt::Debug for SpanSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SpanSender")
    }
}

impl SpanSender {
    /// Starts the sending task on the current runtime, spans named as coming from
    /// instrumentation scope `scope`; it stops when `shutdown` is cancelled, after one last
    /// send of what waits (for at most [`REQUEST_TIMEOUT`]).
    pub fn start(
        settings: OtelSettings,
        scope: &'static str,
        metrics: OtelMetrics,
        shutdown: CancellationToken,
    ) -> Result<SpanSender, OtelError> {
        let client = client(&settings)?;
        let queue = Arc::new(Queue {
            spans: Mutex::new(VecDeque::new()),
            ready: Notify::new(),
            capacity: settings.queue_spans.max(1),
        });
        tokio::spawn(send_spans(
            scope,
            settings,
            client,
            queue.clone(),
            metrics.clone(),
            shutdown,
        ));
        Ok(SpanSender { queue, metrics })
    }

    /// Queues ended spans; those past the queue's capacity are dropped and counted.
    pub fn send(&self, spans: Vec<Span>) {
        if !spans.is_empty() {
            enqueue(&self.queue, spans, &self.metrics);
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

fn request(scope: &str, spans: Vec<Span>) -> ExportTraceServiceRequest {
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
                    name: scope.to_owned(),
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
    scope: &'static str,
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
            let body = prost::Message::encode_to_vec(&request(scope, batch));
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
                        "exporting traces to {}: {why}; {unsaid} spans dropped since the last report (orrery_sidecar_otel_spans_dropped_total counts them all)",
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

    fn span(n: u64) -> Span {
        Span {
            trace_id: trace_id("r").to_vec(),
            span_id: span_id("r", &n.to_string()).to_vec(),
            name: format!("span {n}"),
            ..Span::default()
        }
    }

    #[tokio::test]
    async fn a_collector_that_is_not_there_never_holds_up_a_sender_and_spans_past_the_queue_are_dropped_and_counted()
     {
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
        let sender = SpanSender::start(settings, "test", metrics.clone(), stop.clone());
        let Ok(sender) = sender else {
            unreachable!("the sender: {:?}", sender.err())
        };
        // 41 spans at once: 5 fit the queue, 36 are dropped there and then.
        let started = Instant::now();
        sender.send((0..41).map(span).collect());
        assert!(
            started.elapsed() < Duration::from_millis(50),
            "sending never waits"
        );
        assert_eq!(metrics.dropped_total("queue_full"), 36);
        assert_eq!(metrics.exported_total(), 0);
        // The first attempt failed and is being retried with backoff.
        let deadline = Instant::now() + Duration::from_secs(10);
        while metrics.failures_total() == 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(metrics.failures_total() >= 1);
        // Told to stop, it gives the batch one last bounded try and counts it as given up.
        stop.cancel();
        let deadline = Instant::now() + REQUEST_TIMEOUT + Duration::from_secs(5);
        while metrics.dropped_total("export_failed") < 5 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(metrics.dropped_total("export_failed"), 5);
    }
}
