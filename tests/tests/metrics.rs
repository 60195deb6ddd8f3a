//! The operator's and the sidecar's metrics as Prometheus reads them: every series the two
//! processes can show, with activity in each, parsed by the Prometheus project's own text
//! parser and passed through its linter (`testenv promcheck`: expfmt and promlint, what
//! `promtool check metrics` runs). Needs the control plane's `testenv` binary (built by
//! `tests/testenv/build.sh`, or `ORRERY_TESTENV_BIN`), not a cluster.

use anyhow::{Result, ensure};
use orrery_crds::approval::DecisionKind;
use orrery_crds::run::RunPhase;
use orrery_operator::metrics::{Metrics, PHASES};
use orrery_operator::retry::Reason;
use orrery_operator::sidecar::metrics::{SidecarMetrics, store_ops};
use orrery_tests::promcheck::promcheck;
use std::time::{Duration, Instant};

#[test]
fn the_operators_metrics_pass_the_prometheus_parser_and_linter() -> Result<()> {
    let metrics = Metrics::new();
    let guard = metrics.start_reconcile("StudioRun");
    metrics.failed("StudioRun", "kube");
    metrics.retried("StudioRun", Reason::ALL[0]);
    metrics.pod_created(Duration::from_millis(40));
    metrics.set_queue_depth(3);
    metrics.set_runs(RunPhase::Running, 2);
    metrics.set_leader(true);
    metrics.set_policies_missing(1);
    let report = promcheck(&metrics.encode())?;
    drop(guard);
    ensure!(
        report.problems.is_empty(),
        "the linter: {:?}",
        report.problems
    );
    ensure!(report.families["orrery_reconciles_total"].kind == "COUNTER");
    ensure!(report.families["orrery_run_pod_start_seconds"].kind == "HISTOGRAM");
    ensure!(report.value("orrery_reconciles_in_flight", &[]) == Some(1.0));
    ensure!(report.value("orrery_runs", &[("phase", "Running")]) == Some(2.0));
    ensure!(
        report.series("orrery_runs", &[]).count() == PHASES.len(),
        "one series per phase"
    );
    ensure!(report.count("orrery_run_pod_start_seconds", &[]) == Some(1));
    Ok(())
}

#[test]
fn the_sidecars_metrics_pass_the_prometheus_parser_and_linter() -> Result<()> {
    let ops = store_ops();
    let metrics = SidecarMetrics::new(&ops);
    metrics.answered(
        "/api/v1/runs/{namespace}/{name}",
        "GET",
        200,
        Duration::from_millis(3),
    );
    metrics.ingested(4, 1);
    metrics.batch(Some("gap"), Duration::from_millis(2));
    let open = metrics.stream_opened();
    metrics.delivered(Instant::now());
    metrics.asked();
    metrics.decided(false);
    metrics.settled(DecisionKind::Rejected);
    metrics.otel.exported(3);
    metrics.otel.dropped("queue_full", 2);
    metrics.otel.failed_attempt();
    metrics.otel.skipped();
    metrics.otel.queued(4);
    ops.get_or_create(&orrery_operator::sidecar::metrics::StoreOpLabels {
        backend: "postgres".into(),
        operation: "append".into(),
    })
    .observe(0.004);
    let report = promcheck(&metrics.encode())?;
    drop(open);
    ensure!(
        report.problems.is_empty(),
        "the linter: {:?}",
        report.problems
    );
    for (family, kind) in [
        ("orrery_sidecar_http_requests_total", "COUNTER"),
        ("orrery_sidecar_http_request_duration_seconds", "HISTOGRAM"),
        ("orrery_sidecar_events_stored_total", "COUNTER"),
        ("orrery_sidecar_ingest_batches_refused_total", "COUNTER"),
        (
            "orrery_sidecar_store_operation_duration_seconds",
            "HISTOGRAM",
        ),
        ("orrery_sidecar_streams_open", "GAUGE"),
        ("orrery_sidecar_stream_delay_seconds", "HISTOGRAM"),
        ("orrery_sidecar_approvals_settled_total", "COUNTER"),
        ("orrery_sidecar_decisions_not_honoured_total", "COUNTER"),
        ("orrery_sidecar_otel_spans_exported_total", "COUNTER"),
        ("orrery_sidecar_otel_spans_dropped_total", "COUNTER"),
        ("orrery_sidecar_otel_export_failures_total", "COUNTER"),
        ("orrery_sidecar_otel_handoffs_skipped_total", "COUNTER"),
        ("orrery_sidecar_otel_queue_spans", "GAUGE"),
    ] {
        let got = report.families.get(family).map(|f| f.kind.as_str());
        ensure!(got == Some(kind), "{family}: {got:?}, want {kind}");
    }
    ensure!(report.value("orrery_sidecar_events_stored_total", &[]) == Some(4.0));
    ensure!(
        report.value(
            "orrery_sidecar_ingest_batches_refused_total",
            &[("reason", "gap")]
        ) == Some(1.0)
    );
    ensure!(report.value("orrery_sidecar_streams_open", &[]) == Some(1.0));
    ensure!(
        report.value(
            "orrery_sidecar_otel_spans_dropped_total",
            &[("reason", "queue_full")]
        ) == Some(2.0)
    );
    ensure!(
        report
            .series("orrery_sidecar_otel_spans_dropped_total", &[])
            .count()
            == 3,
        "a series per reason from the start"
    );
    ensure!(report.value("orrery_sidecar_otel_queue_spans", &[]) == Some(4.0));
    ensure!(
        report.count(
            "orrery_sidecar_store_operation_duration_seconds",
            &[("backend", "postgres"), ("operation", "append")]
        ) == Some(1)
    );
    Ok(())
}
