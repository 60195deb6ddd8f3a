//! The sidecar process: the event store and the run API until SIGTERM/SIGINT.

use crate::cli::SidecarArgs;
use crate::signals::{signals, stopping};
use anyhow::Context as _;
use orrery_operator::Config;
use std::process::ExitCode;
use std::sync::Arc;

/// The sidecar process; its exit code, the error said on stderr.
pub fn main(args: SidecarArgs) -> ExitCode {
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::from(1)
        }
    }
}

/// Runs the sidecar process until SIGTERM/SIGINT.
fn run(args: SidecarArgs) -> anyhow::Result<ExitCode> {
    use orrery_operator::sidecar::SidecarSettings;
    use orrery_operator::sidecar::process::{Bound, verifier_from_config};
    let config = Config::load(&args.config)?;
    let verifier = verifier_from_config(&args.config, &config)?;
    let listen = args
        .listen
        .unwrap_or_else(|| std::net::SocketAddr::from(([0, 0, 0, 0], config.sidecar.pod_port())));
    let mut otel = args.otel.settings()?;
    if let Some(otel) = otel.as_mut() {
        otel.content = args.otel_export_content;
    }
    let settings = SidecarSettings {
        max_streams_per_person: args.max_streams_per_person,
        ingest_concurrency: args.ingest_concurrency,
        starts_per_minute: args.starts_per_minute,
        decisions_per_minute: args.decisions_per_minute,
        saves_per_minute: args.saves_per_minute,
        namespace: args.namespace,
        console_dir: args.console_dir,
        metrics_listen: args.metrics_listen,
        otel,
        ..SidecarSettings::default()
    };
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async move {
        let stop = signals()?;
        let kube_config = kube::Config::infer().await.context(
            "reading the cluster's config (KUBECONFIG, ~/.kube/config or the in-cluster config): \
             the sidecar acts for callers on that cluster",
        )?;
        let Some(bound) = Bound::start_when_store_opens(
            listen,
            &args.store,
            verifier,
            kube_config,
            Arc::new(config),
            &settings,
            stopping(stop.clone()),
        )
        .await?
        else {
            tracing::info!("stopped before the event store opened");
            return Ok(ExitCode::SUCCESS);
        };
        tracing::info!(
            "serving on http://{} (store: {:?})",
            bound.address(),
            bound.sidecar.store
        );
        if let Some(metrics) = bound.metrics_address() {
            tracing::info!("serving metrics on http://{metrics}/metrics");
        }
        if let Some(otel) = &settings.otel {
            tracing::info!(
                "exporting runs as OpenTelemetry traces to {} (content: {})",
                otel.traces_url(),
                if otel.content {
                    "captured content included"
                } else {
                    "none"
                }
            );
        }
        bound.serve(stopping(stop)).await.context("serving")?;
        tracing::info!("stopped");
        Ok(ExitCode::SUCCESS)
    })
}
