//! The sidecar's metrics, served as Prometheus text on its own listener (`--metrics-listen`,
//! the chart's `sidecar.metricsPort`), never on the API's port:
//!
//! | series | type | what |
//! |---|---|---|
//! | `orrery_sidecar_http_requests_total{route,method,code}` | counter | requests answered, by route template, method and status |
//! | `orrery_sidecar_http_request_duration_seconds{route}` | histogram | request → response head (a stream's events after its head are not counted) |
//! | `orrery_sidecar_events_stored_total` | counter | events runners sent that were stored |
//! | `orrery_sidecar_events_duplicate_total` | counter | events sent again that the store already held (a runner's retry) |
//! | `orrery_sidecar_ingest_batches_refused_total{reason}` | counter | event batches refused, by the reply's `code` (`unauthenticated`, `invalid`, `gap`, `ended`, `too_large`, `rate_limited`, `unavailable`, …) |
//! | `orrery_sidecar_ingest_batch_duration_seconds` | histogram | an event batch's request → reply, refused ones too |
//! | `orrery_sidecar_store_operation_duration_seconds{backend,operation}` | histogram | each call of the event store, by `sqlite`/`postgres` and operation |
//! | `orrery_sidecar_streams_open` | gauge | live streams (SSE) open now |
//! | `orrery_sidecar_stream_delay_seconds` | histogram | an event stored by this process → its frame taken by a live stream (a slow reader shows here) |
//! | `orrery_sidecar_approvals_asked_total` | counter | approvals runners asked for (a retry of the same ask not counted) |
//! | `orrery_sidecar_approval_decisions_total{decision}` | counter | decisions people made through the API (`approve`, `reject`; `kubectl patch` bypasses the sidecar) |
//! | `orrery_sidecar_approvals_settled_total{outcome}` | counter | approvals settled (`approved`, `rejected`, `expired`, `cancelled`), each once |
//! | `orrery_sidecar_decisions_not_honoured_total` | counter | decisions written to a run's status by hand while the admission policies were not in place, refused by the relay (attack 46) |
//! | `orrery_sidecar_otel_spans_exported_total` | counter | spans of runs the OTLP collector took |
//! | `orrery_sidecar_otel_spans_dropped_total{reason}` | counter | spans not exported: `queue_full` (the collector was behind), `export_failed` (given up after retries), `refused` (the collector answered 4xx) |
//! | `orrery_sidecar_otel_export_failures_total` | counter | sending attempts that failed (each retried, up to a bound) |
//! | `orrery_sidecar_otel_handoffs_skipped_total` | counter | ingested batches the exporter was too far behind to take (read back from the store with the run's next batch) |
//! | `orrery_sidecar_otel_queue_spans` | gauge | ended spans waiting for the collector |
//!
//! Labels are bounded: a route is its template (`/api/v1/runs/{namespace}/{name}`), never a
//! path, and a request no route matched is `route="unmatched"` (the console's files are
//! `route="console"`). Every series with a known label set exists from the start at 0.

use super::Sidecar;
use super::problem::Problem;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use orrery_crds::approval::DecisionKind;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Buckets of request durations, in seconds: from a cached read's milliseconds to a decision
/// or a runner's long-poll (30 s) and the request timeout (60 s).
pub const REQUEST_BUCKETS: [f64; 13] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Buckets of an ingest batch, in seconds: the benchmarks measure a reply's p50 at 2.5 ms,
/// its p99 at 10-25 ms and a busy store's worst at about 1.4 s (`docs/benchmarks.md`).
pub const INGEST_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// Buckets of a store call, in seconds: sub-millisecond reads to a busy PostgreSQL's seconds.
pub const STORE_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Buckets of a live event's delay, in seconds: p50 3 ms and p99 12-160 ms at 2,000
/// events/s, a slow reader tens of seconds behind (`docs/benchmarks.md`).
pub const DELAY_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The `route` of a request no route matched.
pub const UNMATCHED: &str = "unmatched";

/// The `route` of the console's files (the router's fallback when a console is served).
pub const CONSOLE: &str = "console";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabel {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabel {
    decision: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: String,
}

/// The labels of a store call's duration.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StoreOpLabels {
    /// `sqlite` or `postgres`.
    pub backend: String,
    /// The store's method (`append`, `events_after`, …).
    pub operation: String,
}

/// The durations of the event store's calls, kept by the store itself (cheap to clone).
pub type StoreOps = Family<StoreOpLabels, Histogram>;

/// A fresh [`StoreOps`] with [`STORE_BUCKETS`].
pub fn store_ops() -> StoreOps {
    Family::new_with_constructor(store_histogram)
}

fn store_histogram() -> Histogram {
    Histogram::new(STORE_BUCKETS)
}

fn request_histogram() -> Histogram {
    Histogram::new(REQUEST_BUCKETS)
}

/// The reasons a batch of events is refused: the `code` of its reply.
pub const INGEST_REFUSALS: [&str; 7] = [
    super::problem::codes::UNAUTHENTICATED,
    super::problem::codes::FORBIDDEN,
    super::problem::codes::INVALID,
    super::problem::codes::GAP,
    super::problem::codes::ENDED,
    super::problem::codes::TOO_LARGE,
    super::problem::codes::RATE_LIMITED,
];

/// The `code` of an error reply, put in its extensions by [`Problem`] so that the metrics
/// layer can count refusals by reason without reading the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProblemCode(pub String);

/// The sidecar's metrics and the registry that encodes them.
#[derive(Debug)]
pub struct SidecarMetrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_seconds: Family<RouteLabel, Histogram, fn() -> Histogram>,
    events_stored: Counter,
    events_duplicate: Counter,
    refused: Family<ReasonLabel, Counter>,
    batch_seconds: Histogram,
    streams_open: Gauge,
    stream_delay: Histogram,
    asked: Counter,
    decisions: Family<DecisionLabel, Counter>,
    settled: Family<OutcomeLabel, Counter>,
    not_honoured: Counter,
    /// The trace exporter's series.
    pub otel: crate::otel::OtelMetrics,
}

impl SidecarMetrics {
    /// A fresh set, the store's call durations `store` among them.
    pub fn new(store: &StoreOps) -> SidecarMetrics {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let request_seconds: Family<RouteLabel, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(request_histogram);
        let events_stored = Counter::default();
        let events_duplicate = Counter::default();
        let refused = Family::<ReasonLabel, Counter>::default();
        let batch_seconds = Histogram::new(INGEST_BUCKETS);
        let streams_open = Gauge::default();
        let stream_delay = Histogram::new(DELAY_BUCKETS);
        let asked = Counter::default();
        let decisions = Family::<DecisionLabel, Counter>::default();
        let settled = Family::<OutcomeLabel, Counter>::default();
        let not_honoured = Counter::default();
        registry.register(
            "orrery_sidecar_http_requests",
            "Requests the sidecar answered, by route template, method and status code",
            requests.clone(),
        );
        registry.register(
            "orrery_sidecar_http_request_duration_seconds",
            "Seconds from a request to its response head, by route template",
            request_seconds.clone(),
        );
        registry.register(
            "orrery_sidecar_events_stored",
            "Events runners sent that the sidecar stored",
            events_stored.clone(),
        );
        registry.register(
            "orrery_sidecar_events_duplicate",
            "Events sent again that the store already held (a runner's retry)",
            events_duplicate.clone(),
        );
        registry.register(
            "orrery_sidecar_ingest_batches_refused",
            "Event batches refused, by the reply's code",
            refused.clone(),
        );
        registry.register(
            "orrery_sidecar_ingest_batch_duration_seconds",
            "Seconds from an event batch's request to its reply (refused ones included)",
            batch_seconds.clone(),
        );
        registry.register(
            "orrery_sidecar_store_operation_duration_seconds",
            "Seconds each call of the event store took, by backend and operation",
            store.clone(),
        );
        registry.register(
            "orrery_sidecar_streams_open",
            "Live event streams (SSE) open now",
            streams_open.clone(),
        );
        registry.register(
            "orrery_sidecar_stream_delay_seconds",
            "Seconds from an event stored by this process to its frame taken by a live stream",
            stream_delay.clone(),
        );
        registry.register(
            "orrery_sidecar_approvals_asked",
            "Approvals runners asked for (a repeated ask not counted)",
            asked.clone(),
        );
        registry.register(
            "orrery_sidecar_approval_decisions",
            "Decisions people made through the sidecar's API, by decision",
            decisions.clone(),
        );
        registry.register(
            "orrery_sidecar_approvals_settled",
            "Approvals settled, each once, by outcome",
            settled.clone(),
        );
        registry.register(
            "orrery_sidecar_decisions_not_honoured",
            "Decisions written to a run's status by hand while the admission policies were not in place, refused",
            not_honoured.clone(),
        );
        for reason in INGEST_REFUSALS {
            drop(refused.get_or_create(&ReasonLabel {
                reason: reason.into(),
            }));
        }
        for decision in ["approve", "reject"] {
            drop(decisions.get_or_create(&DecisionLabel {
                decision: decision.into(),
            }));
        }
        for outcome in DecisionKind::ALL {
            drop(settled.get_or_create(&OutcomeLabel {
                outcome: outcome.as_str().into(),
            }));
        }
        let otel = crate::otel::OtelMetrics::default();
        otel.register(&mut registry, "orrery_sidecar_otel");
        SidecarMetrics {
            otel,
            registry,
            requests,
            request_seconds,
            events_stored,
            events_duplicate,
            refused,
            batch_seconds,
            streams_open,
            stream_delay,
            asked,
            decisions,
            settled,
            not_honoured,
        }
    }

    /// Counts one answered request.
    pub fn answered(&self, route: &str, method: &str, code: u16, took: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                route: route.into(),
                method: method.into(),
                code: code.to_string(),
            })
            .inc();
        self.request_seconds
            .get_or_create(&RouteLabel {
                route: route.into(),
            })
            .observe(took.as_secs_f64());
    }

    /// Counts one batch of events that reached the store: `stored` new, `duplicates` held
    /// before.
    pub fn ingested(&self, stored: u64, duplicates: u64) {
        self.events_stored.inc_by(stored);
        self.events_duplicate.inc_by(duplicates);
    }

    /// Events stored by this process since it started.
    pub fn stored(&self) -> u64 {
        self.events_stored.get()
    }

    /// Counts one batch refused with `code` that took `took`, or one answered (`None`).
    pub fn batch(&self, refused: Option<&str>, took: Duration) {
        if let Some(reason) = refused {
            self.refused
                .get_or_create(&ReasonLabel {
                    reason: reason.into(),
                })
                .inc();
        }
        self.batch_seconds.observe(took.as_secs_f64());
    }

    /// One more live stream open, until the returned guard is dropped.
    pub fn stream_opened(&self) -> StreamGauge {
        self.streams_open.inc();
        StreamGauge(self.streams_open.clone())
    }

    /// An event stored `stored_at` was taken by a live stream now.
    pub fn delivered(&self, stored_at: Instant) {
        self.stream_delay.observe(stored_at.elapsed().as_secs_f64());
    }

    /// A runner asked for a new approval.
    pub fn asked(&self) {
        self.asked.inc();
    }

    /// A person decided through the API (`approve` or `reject`).
    pub fn decided(&self, approve: bool) {
        let decision = if approve { "approve" } else { "reject" };
        self.decisions
            .get_or_create(&DecisionLabel {
                decision: decision.into(),
            })
            .inc();
    }

    /// An approval was settled (the first settlement of it; later ones are not counted).
    pub fn settled(&self, outcome: DecisionKind) {
        self.settled
            .get_or_create(&OutcomeLabel {
                outcome: outcome.as_str().into(),
            })
            .inc();
    }

    /// A decision written to a run's status by hand was refused (attack 46).
    pub fn decision_not_honoured(&self) {
        self.not_honoured.inc();
    }

    /// The Prometheus text (format 0.0.4, [`crate::metrics::CONTENT_TYPE`]) of every series.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry).is_err()
        {
            text.push_str("# the metrics could not be encoded in full\n");
        }
        text
    }
}

/// One live stream open: counted in `orrery_sidecar_streams_open` until dropped.
#[derive(Debug)]
pub struct StreamGauge(Gauge);

impl Drop for StreamGauge {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The layer that counts every request: its route template, method, status and duration;
/// an event batch's refusal by the reply's code.
pub async fn track(State(sidecar): State<Arc<Sidecar>>, request: Request, next: Next) -> Response {
    let began = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned());
    let method = request.method().as_str().to_owned();
    let response = next.run(request).await;
    let took = began.elapsed();
    let route = match route {
        Some(route) => route,
        None if sidecar.console_dir.is_some() => CONSOLE.to_owned(),
        None => UNMATCHED.to_owned(),
    };
    let code = response.status().as_u16();
    let metrics = &sidecar.metrics;
    metrics.answered(&route, &method, code, took);
    if route == orrery_crds::events::ingest::INGEST_ROUTE {
        let refused = (!response.status().is_success()).then(|| {
            response
                .extensions()
                .get::<ProblemCode>()
                .map_or_else(|| format!("http_{code}"), |c| c.0.clone())
        });
        metrics.batch(refused.as_deref(), took);
    }
    response
}

/// The metrics listener's routes: `GET /metrics`.
pub fn router(sidecar: Arc<Sidecar>) -> axum::Router {
    axum::Router::new()
        .route("/metrics", axum::routing::get(text))
        .with_state(sidecar)
}

async fn text(State(sidecar): State<Arc<Sidecar>>) -> Response {
    use axum::response::IntoResponse as _;
    (
        [(
            axum::http::header::CONTENT_TYPE,
            crate::metrics::CONTENT_TYPE,
        )],
        sidecar.metrics.encode(),
    )
        .into_response()
}

impl Problem {
    /// The extension [`track`] reads the code from.
    pub(super) fn code_extension(&self) -> ProblemCode {
        ProblemCode(self.body.code.clone())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;

    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
    }

    #[test]
    fn a_fresh_set_shows_the_known_series_at_zero() {
        let text = SidecarMetrics::new(&store_ops()).encode();
        for series in [
            "orrery_sidecar_events_stored_total",
            "orrery_sidecar_events_duplicate_total",
            "orrery_sidecar_ingest_batches_refused_total{reason=\"gap\"}",
            "orrery_sidecar_ingest_batches_refused_total{reason=\"unauthenticated\"}",
            "orrery_sidecar_streams_open",
            "orrery_sidecar_approvals_asked_total",
            "orrery_sidecar_approval_decisions_total{decision=\"reject\"}",
            "orrery_sidecar_approvals_settled_total{outcome=\"expired\"}",
            "orrery_sidecar_decisions_not_honoured_total",
            "orrery_sidecar_ingest_batch_duration_seconds_count",
            "orrery_sidecar_stream_delay_seconds_count",
        ] {
            assert_eq!(value(&text, series), Some(0.0), "{series} in\n{text}");
        }
        assert!(text.contains("# TYPE orrery_sidecar_ingest_batch_duration_seconds histogram"));
    }

    #[test]
    fn requests_are_counted_by_route_template_method_and_status() {
        let metrics = SidecarMetrics::new(&store_ops());
        let route = "/api/v1/runs/{namespace}/{name}";
        metrics.answered(route, "GET", 200, Duration::from_millis(3));
        metrics.answered(route, "GET", 200, Duration::from_millis(40));
        metrics.answered(route, "GET", 404, Duration::from_millis(2));
        let text = metrics.encode();
        let series = format!(
            "orrery_sidecar_http_requests_total{{route=\"{route}\",method=\"GET\",code=\"200\"}}"
        );
        assert_eq!(value(&text, &series), Some(2.0), "{text}");
        let bucket = format!(
            "orrery_sidecar_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"0.005\"}}"
        );
        assert_eq!(value(&text, &bucket), Some(2.0), "{text}");
    }

    #[test]
    fn batches_count_their_events_and_refusals_by_reason() {
        let metrics = SidecarMetrics::new(&store_ops());
        metrics.ingested(5, 2);
        metrics.batch(None, Duration::from_millis(2));
        metrics.batch(Some("gap"), Duration::from_millis(1));
        let text = metrics.encode();
        assert_eq!(metrics.stored(), 5);
        assert_eq!(
            value(&text, "orrery_sidecar_events_duplicate_total"),
            Some(2.0)
        );
        assert_eq!(
            value(
                &text,
                "orrery_sidecar_ingest_batches_refused_total{reason=\"gap\"}"
            ),
            Some(1.0)
        );
        assert_eq!(
            value(&text, "orrery_sidecar_ingest_batch_duration_seconds_count"),
            Some(2.0)
        );
    }

    #[test]
    fn a_stream_is_open_until_its_guard_is_dropped() {
        let metrics = SidecarMetrics::new(&store_ops());
        let one = metrics.stream_opened();
        let two = metrics.stream_opened();
        assert_eq!(
            value(&metrics.encode(), "orrery_sidecar_streams_open"),
            Some(2.0)
        );
        drop(one);
        drop(two);
        assert_eq!(
            value(&metrics.encode(), "orrery_sidecar_streams_open"),
            Some(0.0)
        );
    }

    #[test]
    fn approvals_are_counted_asked_decided_and_settled() {
        let metrics = SidecarMetrics::new(&store_ops());
        metrics.asked();
        metrics.decided(true);
        metrics.settled(DecisionKind::Approved);
        let text = metrics.encode();
        assert_eq!(
            value(&text, "orrery_sidecar_approvals_asked_total"),
            Some(1.0)
        );
        assert_eq!(
            value(
                &text,
                "orrery_sidecar_approval_decisions_total{decision=\"approve\"}"
            ),
            Some(1.0)
        );
        assert_eq!(
            value(
                &text,
                "orrery_sidecar_approvals_settled_total{outcome=\"approved\"}"
            ),
            Some(1.0)
        );
    }
}
