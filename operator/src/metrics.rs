//! The operator's metrics, served as Prometheus text (format 0.0.4) on `/metrics`:
//!
//! | series | type | what |
//! |---|---|---|
//! | `orrery_reconciles_total{kind}` | counter | reconciles started, per kind (failed ones too) |
//! | `orrery_reconcile_errors_total{kind,error}` | counter | failed reconciles, by [`Error::label`] |
//! | `orrery_reconcile_retries_total{kind,reason}` | counter | retries scheduled after a failure, by [`Reason`]: `transient` (backoff), `throttled` (the API server's `Retry-After`), `needs_fix` (at the cap) |
//! | `orrery_queue_depth` | gauge | StudioRuns waiting for a slot (`Pending`, reason `Queued`) |
//! | `orrery_runs{phase}` | gauge | StudioRuns per phase |
//! | `orrery_runs_ended_total{phase,reason}` | counter | StudioRuns this process recorded as ended, by final phase and condition reason |
//! | `orrery_run_tokens_total{run_namespace}` | counter | model tokens of the runs this process recorded as ended, per namespace of the run (not `namespace`, which a scrape sets to the operator's own) |
//! | `orrery_run_pod_start_seconds` | histogram | StudioRun creation → its runner pod created |
//! | `orrery_leader` | gauge | 1 while this process holds the Lease (or runs without one), else 0 |
//! | `orrery_reconciles_in_flight` | gauge | reconciles running now (graceful shutdown waits for 0) |
//!
//! One [`Metrics`] per process (no global registry): the controllers count through
//! [`crate::controller::Context::metrics`], the HTTP server encodes it. Every `kind`, `error`
//! and `phase` series exists from the start at 0, so a dashboard sees a rate of 0 rather
//! than no series.

use crate::error::Error;
use crate::retry::Reason;
use orrery_crds::run::RunPhase;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::time::Duration;

/// The `Content-Type` of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The kinds the operator reconciles (the `kind` label).
pub const KINDS: [&str; 3] = ["Composition", "RegistryEntry", "StudioRun"];

/// Every run phase (the `phase` label), in the order of [`RunPhase`].
pub const PHASES: [RunPhase; 8] = [
    RunPhase::Pending,
    RunPhase::Running,
    RunPhase::AwaitingApproval,
    RunPhase::Succeeded,
    RunPhase::Failed,
    RunPhase::Cancelled,
    RunPhase::BudgetExhausted,
    RunPhase::Rejected,
];

/// The buckets of `orrery_run_pod_start_seconds`, in seconds: from an idle operator's tens of
/// milliseconds to a cluster under a thousand-run burst.
pub const POD_START_BUCKETS: [f64; 12] = [
    0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    kind: String,
    error: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RetryLabels {
    kind: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabel {
    phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndLabels {
    phase: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NamespaceLabel {
    run_namespace: String,
}

/// The operator's metrics and the registry that encodes them.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    reconciles: Family<KindLabel, Counter>,
    errors: Family<ErrorLabels, Counter>,
    retries: Family<RetryLabels, Counter>,
    queue_depth: Gauge,
    runs: Family<PhaseLabel, Gauge>,
    ended: Family<EndLabels, Counter>,
    tokens: Family<NamespaceLabel, Counter>,
    pod_start: Histogram,
    leader: Gauge,
    in_flight: Gauge,
    policies_missing: Gauge,
    /// The trace exporter's series (`orrery_otel_*`).
    pub otel: crate::otel::OtelMetrics,
    /// Where reconciles are sent as spans, once [`Metrics::trace_to`] set it.
    traces: std::sync::OnceLock<crate::otel::SpanSender>,
}

/// One reconcile in flight: counted in `orrery_reconciles_in_flight` until dropped.
#[derive(Debug)]
pub struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Sends every reconcile from now on as a span through `sender` (`--otel-endpoint`); only
    /// the first call counts.
    pub fn trace_to(&self, sender: crate::otel::SpanSender) {
        let _ = self.traces.set(sender);
    }

    /// Where reconciles are sent as spans, if anywhere.
    pub fn traces(&self) -> Option<&crate::otel::SpanSender> {
        self.traces.get()
    }

    /// A fresh set, every labelled series registered at 0 and `orrery_leader` 0.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let reconciles = Family::<KindLabel, Counter>::default();
        let errors = Family::<ErrorLabels, Counter>::default();
        let retries = Family::<RetryLabels, Counter>::default();
        let queue_depth = Gauge::default();
        let runs = Family::<PhaseLabel, Gauge>::default();
        let ended = Family::<EndLabels, Counter>::default();
        let tokens = Family::<NamespaceLabel, Counter>::default();
        let pod_start = Histogram::new(POD_START_BUCKETS);
        let leader = Gauge::default();
        let in_flight = Gauge::default();
        let policies_missing = Gauge::default();
        registry.register(
            "orrery_reconciles",
            "Reconciles started, per kind (failed ones included)",
            reconciles.clone(),
        );
        registry.register(
            "orrery_reconcile_errors",
            "Failed reconciles, per kind and error label",
            errors.clone(),
        );
        registry.register(
            "orrery_reconcile_retries",
            "Retries scheduled after a failed reconcile, per kind and reason (transient: backoff; throttled: the API server's Retry-After; needs_fix: at the cap)",
            retries.clone(),
        );
        registry.register(
            "orrery_queue_depth",
            "StudioRuns waiting for a slot (Pending, reason Queued)",
            queue_depth.clone(),
        );
        registry.register("orrery_runs", "StudioRuns per phase", runs.clone());
        registry.register(
            "orrery_runs_ended",
            "StudioRuns this process recorded as ended, by final phase and condition reason",
            ended.clone(),
        );
        registry.register(
            "orrery_run_tokens",
            "Model tokens of the StudioRuns this process recorded as ended, per namespace",
            tokens.clone(),
        );
        registry.register(
            "orrery_run_pod_start_seconds",
            "Seconds from a StudioRun's creation to its runner pod's creation",
            pod_start.clone(),
        );
        registry.register(
            "orrery_leader",
            "1 while this process holds the leader Lease (or runs without leader election), else 0",
            leader.clone(),
        );
        registry.register(
            "orrery_reconciles_in_flight",
            "Reconciles running now",
            in_flight.clone(),
        );
        registry.register(
            "orrery_admission_policies_missing",
            "Admission policies and bindings of config admissionPolicies missing, unreadable or not denying, at the last look (while above 0, runs that can ask a person wait)",
            policies_missing.clone(),
        );
        for kind in KINDS {
            drop(reconciles.get_or_create(&KindLabel { kind: kind.into() }));
            for error in Error::LABELS {
                drop(errors.get_or_create(&ErrorLabels {
                    kind: kind.into(),
                    error: error.into(),
                }));
            }
            for reason in Reason::ALL {
                drop(retries.get_or_create(&RetryLabels {
                    kind: kind.into(),
                    reason: reason.label().into(),
                }));
            }
        }
        for phase in PHASES {
            drop(runs.get_or_create(&PhaseLabel {
                phase: phase_name(phase),
            }));
        }
        let otel = crate::otel::OtelMetrics::default();
        otel.register(&mut registry, "orrery_otel");
        Metrics {
            otel,
            traces: std::sync::OnceLock::new(),
            registry,
            reconciles,
            errors,
            retries,
            queue_depth,
            runs,
            ended,
            tokens,
            pod_start,
            leader,
            in_flight,
            policies_missing,
        }
    }

    /// Counts one reconcile of `kind` as it starts and holds it in
    /// `orrery_reconciles_in_flight` until the returned guard is dropped.
    pub fn start_reconcile(&self, kind: &str) -> InFlight {
        self.reconciled(kind);
        self.in_flight.inc();
        InFlight(self.in_flight.clone())
    }

    /// How many reconciles are running now.
    pub fn in_flight(&self) -> i64 {
        self.in_flight.get()
    }

    /// Counts one reconcile of `kind` (called as it starts, whatever its outcome).
    pub fn reconciled(&self, kind: &str) {
        self.reconciles
            .get_or_create(&KindLabel { kind: kind.into() })
            .inc();
    }

    /// Counts one failed reconcile of `kind` with the error's [`Error::label`].
    pub fn failed(&self, kind: &str, label: &str) {
        self.errors
            .get_or_create(&ErrorLabels {
                kind: kind.into(),
                error: label.into(),
            })
            .inc();
    }

    /// Counts one retry of `kind` scheduled for `reason`.
    pub fn retried(&self, kind: &str, reason: Reason) {
        self.retries
            .get_or_create(&RetryLabels {
                kind: kind.into(),
                reason: reason.label().into(),
            })
            .inc();
    }

    /// Counts one run recorded as ended in `phase` for `reason`, with the `tokens` its models
    /// used, in `namespace`.
    pub fn run_ended(&self, namespace: &str, phase: RunPhase, reason: &str, tokens: u64) {
        self.ended
            .get_or_create(&EndLabels {
                phase: phase_name(phase),
                reason: reason.into(),
            })
            .inc();
        self.tokens
            .get_or_create(&NamespaceLabel {
                run_namespace: namespace.into(),
            })
            .inc_by(tokens);
    }

    /// Records how long a StudioRun waited from its creation until its runner pod was created.
    pub fn pod_created(&self, latency: Duration) {
        self.pod_start.observe(latency.as_secs_f64());
    }

    /// Sets how many StudioRuns wait for a slot (`Pending`, reason `Queued`).
    pub fn set_queue_depth(&self, n: usize) {
        self.queue_depth.set(saturating_i64(n));
    }

    /// Sets how many StudioRuns are in `phase`.
    pub fn set_runs(&self, phase: RunPhase, n: usize) {
        self.runs
            .get_or_create(&PhaseLabel {
                phase: phase_name(phase),
            })
            .set(saturating_i64(n));
    }

    /// Sets `orrery_admission_policies_missing`.
    pub fn set_policies_missing(&self, n: usize) {
        self.policies_missing.set(saturating_i64(n));
    }

    /// Sets `orrery_leader`: whether this process holds the Lease (and so runs the controllers).
    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// The Prometheus text (format 0.0.4, [`CONTENT_TYPE`]) of every series.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail; an encoder error would only cut the text short.
        if prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry).is_err()
        {
            text.push_str("# the metrics could not be encoded in full\n");
        }
        text
    }
}

fn saturating_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The `phase` label of `phase`: its name as in `status.phase` (`Pending`, `Running`, …).
pub fn phase_name(phase: RunPhase) -> String {
    serde_json::to_value(phase)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{phase:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(text: &'a str, series: &str) -> Option<&'a str> {
        text.lines().find(|l| {
            l.strip_prefix(series)
                .is_some_and(|rest| rest.starts_with(' '))
        })
    }

    fn value(text: &str, series: &str) -> Option<f64> {
        line(text, series)
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }

    #[test]
    fn a_fresh_set_shows_every_series_at_zero_with_its_type() {
        let text = Metrics::new().encode();
        for kind in KINDS {
            assert_eq!(
                value(
                    &text,
                    &format!("orrery_reconciles_total{{kind=\"{kind}\"}}")
                ),
                Some(0.0),
                "{text}"
            );
            for error in Error::LABELS {
                let series =
                    format!("orrery_reconcile_errors_total{{kind=\"{kind}\",error=\"{error}\"}}");
                assert_eq!(value(&text, &series), Some(0.0), "{series} in {text}");
            }
            for reason in Reason::ALL {
                let series = format!(
                    "orrery_reconcile_retries_total{{kind=\"{kind}\",reason=\"{}\"}}",
                    reason.label()
                );
                assert_eq!(value(&text, &series), Some(0.0), "{series} in {text}");
            }
        }
        for phase in ["Pending", "Running", "Succeeded", "BudgetExhausted"] {
            let series = format!("orrery_runs{{phase=\"{phase}\"}}");
            assert_eq!(value(&text, &series), Some(0.0), "{series} in {text}");
        }
        assert_eq!(value(&text, "orrery_queue_depth"), Some(0.0), "{text}");
        assert_eq!(value(&text, "orrery_leader"), Some(0.0), "{text}");
        assert_eq!(
            value(&text, "orrery_run_pod_start_seconds_count"),
            Some(0.0),
            "{text}"
        );
        for (name, type_) in [
            ("orrery_reconciles_total", "counter"),
            ("orrery_reconcile_errors_total", "counter"),
            ("orrery_queue_depth", "gauge"),
            ("orrery_runs", "gauge"),
            ("orrery_run_pod_start_seconds", "histogram"),
            ("orrery_leader", "gauge"),
        ] {
            assert!(
                text.lines().any(|l| l == format!("# TYPE {name} {type_}")),
                "# TYPE {name} {type_} in {text}"
            );
        }
    }

    #[test]
    fn ended_runs_are_counted_by_phase_and_reason_and_their_tokens_per_namespace() {
        let m = Metrics::new();
        m.run_ended("team-a", RunPhase::Succeeded, "Succeeded", 120);
        m.run_ended("team-a", RunPhase::Failed, "PodDeleted", 30);
        m.run_ended("team-b", RunPhase::Succeeded, "Succeeded", 5);
        let text = m.encode();
        assert_eq!(
            value(
                &text,
                "orrery_runs_ended_total{phase=\"Succeeded\",reason=\"Succeeded\"}"
            ),
            Some(2.0),
            "{text}"
        );
        assert_eq!(
            value(&text, "orrery_run_tokens_total{run_namespace=\"team-a\"}"),
            Some(150.0),
            "{text}"
        );
    }

    #[test]
    fn reconciles_and_errors_are_counted_per_kind_and_label() {
        let m = Metrics::new();
        m.reconciled("Composition");
        m.reconciled("Composition");
        m.reconciled("RegistryEntry");
        m.failed("Composition", "kube_api");
        let text = m.encode();
        assert_eq!(
            value(&text, "orrery_reconciles_total{kind=\"Composition\"}"),
            Some(2.0)
        );
        assert_eq!(
            value(&text, "orrery_reconciles_total{kind=\"RegistryEntry\"}"),
            Some(1.0)
        );
        assert_eq!(
            value(
                &text,
                "orrery_reconcile_errors_total{kind=\"Composition\",error=\"kube_api\"}"
            ),
            Some(1.0)
        );
        assert_eq!(
            value(
                &text,
                "orrery_reconcile_errors_total{kind=\"RegistryEntry\",error=\"kube_api\"}"
            ),
            Some(0.0)
        );
    }

    #[test]
    fn gauges_hold_the_last_value_set_and_the_leader_flag_flips() {
        let m = Metrics::new();
        m.set_queue_depth(7);
        m.set_queue_depth(3);
        m.set_runs(RunPhase::Running, 4);
        m.set_runs(RunPhase::AwaitingApproval, 1);
        m.set_leader(true);
        let text = m.encode();
        assert_eq!(value(&text, "orrery_queue_depth"), Some(3.0));
        assert_eq!(value(&text, "orrery_runs{phase=\"Running\"}"), Some(4.0));
        assert_eq!(
            value(&text, "orrery_runs{phase=\"AwaitingApproval\"}"),
            Some(1.0)
        );
        assert_eq!(value(&text, "orrery_runs{phase=\"Pending\"}"), Some(0.0));
        assert_eq!(value(&text, "orrery_leader"), Some(1.0));
        m.set_leader(false);
        assert_eq!(value(&m.encode(), "orrery_leader"), Some(0.0));
    }

    #[test]
    fn pod_start_latencies_land_in_cumulative_buckets() {
        let m = Metrics::new();
        m.pod_created(Duration::from_millis(80));
        m.pod_created(Duration::from_millis(700));
        m.pod_created(Duration::from_secs(200));
        let text = m.encode();
        assert_eq!(
            value(&text, "orrery_run_pod_start_seconds_bucket{le=\"0.05\"}"),
            Some(0.0),
            "{text}"
        );
        assert_eq!(
            value(&text, "orrery_run_pod_start_seconds_bucket{le=\"0.1\"}"),
            Some(1.0)
        );
        assert_eq!(
            value(&text, "orrery_run_pod_start_seconds_bucket{le=\"1\"}"),
            Some(2.0),
            "{text}"
        );
        assert_eq!(
            value(&text, "orrery_run_pod_start_seconds_bucket{le=\"120\"}"),
            Some(2.0)
        );
        assert_eq!(
            value(&text, "orrery_run_pod_start_seconds_bucket{le=\"+Inf\"}"),
            Some(3.0)
        );
        assert_eq!(
            value(&text, "orrery_run_pod_start_seconds_count"),
            Some(3.0)
        );
        let sum = value(&text, "orrery_run_pod_start_seconds_sum").unwrap_or_default();
        assert!((sum - 200.78).abs() < 1e-9, "{sum}");
    }

    #[test]
    fn a_reconcile_is_in_flight_until_its_guard_is_dropped() {
        let m = Metrics::new();
        let first = m.start_reconcile("StudioRun");
        let second = m.start_reconcile("StudioRun");
        assert_eq!(m.in_flight(), 2);
        drop(first);
        assert_eq!(value(&m.encode(), "orrery_reconciles_in_flight"), Some(1.0));
        drop(second);
        assert_eq!(m.in_flight(), 0);
        assert_eq!(
            value(&m.encode(), "orrery_reconciles_total{kind=\"StudioRun\"}"),
            Some(2.0)
        );
    }

    #[test]
    fn phase_labels_are_the_status_phase_names() {
        assert_eq!(phase_name(RunPhase::AwaitingApproval), "AwaitingApproval");
        assert_eq!(phase_name(RunPhase::BudgetExhausted), "BudgetExhausted");
    }
}
