//! The controller process: the HTTP endpoints, connecting to the cluster, the leader
//! election, and the controllers while leading (see the binary's docs for the whole story).

use crate::cli::ControllerArgs;
use crate::signals::{signals, stopping};
use anyhow::Context as _;
use kube::api::ListParams;
use kube::{Api, Client};
use orrery_operator::Config;
use orrery_operator::http::Health;
use orrery_operator::leader::{self, Elector, LeaseSettings, Role};
use orrery_operator::manager::Stopped;
use orrery_operator::metrics::Metrics;
use orrery_operator::run_token::RunTokenSigner;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The controller process: checks the config and the run token's signing key, then runs
/// ([`run`]); its exit code, the error said on stderr.
pub fn main(args: ControllerArgs) -> ExitCode {
    let loaded = Config::load(&args.config).and_then(|c| {
        RunTokenSigner::from_config(&args.config, &c.run_token).map(|signer| (c, signer))
    });
    match loaded {
        Ok((config, signer)) => match run(args, config, signer) {
            Ok(code) => code,
            Err(e) => {
                tracing::error!("{e:#}");
                ExitCode::from(1)
            }
        },
        Err(e) => {
            tracing::error!("{e}");
            ExitCode::from(1)
        }
    }
}

/// Runs the controller process (see the binary's docs); returns its exit code.
fn run(args: ControllerArgs, config: Config, signer: RunTokenSigner) -> anyhow::Result<ExitCode> {
    let lease = args.lease(
        std::env::var("POD_NAMESPACE").ok(),
        std::env::var("POD_NAME").ok(),
    );
    if let Some(settings) = &lease {
        settings.check()?;
    }
    let otel = args.otel.settings()?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async move {
        let stop = signals()?;
        let metrics = Arc::new(Metrics::new());
        let traces_stop = tokio_util::sync::CancellationToken::new();
        if let Some(otel) = otel {
            tracing::info!(
                "sending reconciles as OpenTelemetry spans to {}",
                otel.traces_url()
            );
            metrics.trace_to(orrery_operator::otel::SpanSender::start(
                otel,
                "orrery-operator",
                metrics.otel.clone(),
                traces_stop.clone(),
            )?);
        }
        let health = Arc::new(Health::new());
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| {
                format!(
                    "--listen {}: cannot listen there; pick a free address (e.g. \
                     --listen 127.0.0.1:0 for any port)",
                    args.listen
                )
            })?;
        let address = listener.local_addr().unwrap_or(args.listen);
        let (server_stop, server_stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(orrery_operator::http::serve(
            listener,
            metrics.clone(),
            health.clone(),
            async move {
                let _ = server_stopped.await;
            },
        ));
        tracing::info!("serving /metrics, /healthz, /readyz on http://{address}");

        let code = lead(&args, config, signer, lease, &metrics, &health, stop).await;
        health.not_ready("stopped");
        // The spans of the last reconciles get one last bounded send.
        traces_stop.cancel();
        let _ = server_stop.send(());
        match server.await {
            Ok(Err(e)) => tracing::error!("the HTTP server on {address}: {e}"),
            Err(e) => tracing::error!("the HTTP server on {address}: {e}"),
            Ok(Ok(())) => {}
        }
        code
    })
}

/// Connects, campaigns (unless `lease` is `None`), runs the controllers while leading, and
/// stops on a signal or a lost Lease.
async fn lead(
    args: &ControllerArgs,
    config: Config,
    signer: RunTokenSigner,
    lease: Option<LeaseSettings>,
    metrics: &Arc<Metrics>,
    health: &Arc<Health>,
    stop: watch::Receiver<bool>,
) -> anyhow::Result<ExitCode> {
    let kube_config = kube::Config::infer().await.context(
        "reading the cluster's config (KUBECONFIG, ~/.kube/config or the in-cluster config): set \
         KUBECONFIG to a kubeconfig whose current context reaches the cluster",
    )?;
    let client = Client::try_from(kube_config.clone()).context("building the cluster client")?;
    if !connect(&client, health, stop.clone()).await {
        tracing::info!("stopped before reaching the cluster");
        return Ok(ExitCode::SUCCESS);
    }
    tracing::info!(
        "config {}; reconciling {}",
        args.config,
        args.namespace
            .as_deref()
            .map_or("every namespace".to_owned(), |ns| format!("namespace {ns}"))
    );

    let elector = match lease {
        None => {
            tracing::info!("leader election off (--leader-elect=false): leading at once");
            None
        }
        Some(settings) => {
            let elector = Elector::start(kube_config, settings).await?;
            if !wait_leading(&elector, health, stop.clone()).await {
                health.not_ready("stopping");
                elector.release().await?;
                tracing::info!("stopped as a standby");
                return Ok(ExitCode::SUCCESS);
            }
            Some(elector)
        }
    };

    metrics.set_leader(true);
    health.not_ready("leader: starting the controllers (listing what they watch)");
    let lost = match &elector {
        Some(e) => futures::future::Either::Left(leader::lost(e.role())),
        None => futures::future::Either::Right(std::future::pending::<String>()),
    };
    let ready = async {
        tokio::select! {
            () = listable(&client, args.namespace.as_deref(), health) => {
                health.ready("leader: controllers running");
            }
            () = stopping(stop.clone()) => {}
        }
        std::future::pending::<()>().await
    };
    // After the signal the controllers take no new work and finish the reconciles in flight,
    // for at most --shutdown-timeout (a reconcile still running then is abandoned at its next
    // await; reconciles are idempotent, so the next leader redoes it).
    let drain = Duration::from_secs(args.shutdown_timeout);
    let controllers = orrery_operator::manager::run(
        client.clone(),
        Arc::new(config),
        metrics.clone(),
        Arc::new(signer),
        args.namespace.clone(),
        stopping(stop.clone()),
        drain,
    );
    tokio::select! {
        stopped = controllers => match stopped {
            Stopped::Drained => {}
            Stopped::Idle => {
                tracing::info!("no reconcile in flight: the controllers are stopped");
            }
            Stopped::Overdue => tracing::warn!(
                "the controllers did not stop within {drain:?} of the signal \
                 (--shutdown-timeout); stopping them now"
            ),
        },
        reason = lost => {
            // Stop at once: dropping the controllers abandons the reconciles in flight at their
            // next await; they are idempotent, so the new leader redoes them.
            metrics.set_leader(false);
            health.not_ready(format!("lost the leader Lease: {reason}"));
            tracing::warn!(
                "lost the leader Lease: {reason}; stopped the controllers; \
                 exiting 1 (restart as a candidate)"
            );
            return Ok(ExitCode::from(1));
        }
        () = ready => {}
    }
    metrics.set_leader(false);
    health.not_ready("stopping");
    if let Some(elector) = elector {
        let settings = elector.settings().clone();
        match elector.release().await {
            Ok(()) => tracing::info!(
                "released the Lease {}/{}",
                settings.namespace,
                settings.name
            ),
            Err(e) => tracing::warn!(
                "could not release the Lease (it expires by itself within {} s): {e}",
                settings.duration_seconds
            ),
        }
    }
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// Waits until the apiserver answers (retrying every 2 s, reporting the error on /readyz);
/// false if a stop signal came first.
async fn connect(client: &Client, health: &Health, stop: watch::Receiver<bool>) -> bool {
    let mut last_error = String::new();
    loop {
        let attempt = tokio::select! {
            r = client.apiserver_version() => r,
            () = stopping(stop.clone()) => return false,
        };
        match attempt {
            Ok(_) => return true,
            Err(e) => {
                let text = format!("connecting to the cluster: {e}");
                if text != last_error {
                    tracing::warn!("{text}; retrying every 2 s");
                    last_error = text.clone();
                }
                health.not_ready(text);
            }
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(2)) => {}
            () = stopping(stop.clone()) => return false,
        }
    }
}

/// Waits until this process leads; meanwhile it is a ready standby and logs who holds the
/// Lease. False if a stop signal came first.
async fn wait_leading(elector: &Elector, health: &Health, stop: watch::Receiver<bool>) -> bool {
    let settings = elector.settings();
    let mut role = elector.role();
    let mut stopped = std::pin::pin!(stopping(stop));
    let mut logged: Option<String> = None;
    loop {
        let now = role.borrow_and_update().clone();
        match now {
            Role::Leader => {
                tracing::info!(
                    "{} holds the Lease {}/{}: leading",
                    settings.identity,
                    settings.namespace,
                    settings.name
                );
                return true;
            }
            // Our own name while not leading yet: the manager is about to say it leads.
            Role::Standby { holder } if holder.as_deref() != Some(settings.identity.as_str()) => {
                let holder = holder.unwrap_or_else(|| "nobody yet".into());
                if logged.as_ref() != Some(&holder) {
                    tracing::info!(
                        "standby {}: waiting for the Lease {}/{}, held by {holder}",
                        settings.identity,
                        settings.namespace,
                        settings.name
                    );
                    logged = Some(holder.clone());
                }
                health.ready(format!("standby: the Lease is held by {holder}"));
            }
            Role::Standby { .. } => {}
            Role::Lost { .. } | Role::Released => return false,
        }
        tokio::select! {
            changed = role.changed() => if changed.is_err() { return false },
            () = &mut stopped => return false,
        }
    }
}

/// Retries (every 2 s) until one list of every kind the controllers watch succeeds in their
/// scope: the CRDs are installed and RBAC lets the operator list them.
async fn listable(client: &Client, namespace: Option<&str>, health: &Health) {
    use orrery_operator::controller::scoped;
    let params = ListParams::default().limit(1);
    loop {
        let compositions: Api<orrery_crds::Composition> = scoped(client.clone(), namespace);
        let entries: Api<orrery_crds::registry::RegistryEntry> = scoped(client.clone(), namespace);
        let runs: Api<orrery_crds::StudioRun> = scoped(client.clone(), namespace);
        let revisions: Api<k8s_openapi::api::apps::v1::ControllerRevision> =
            scoped(client.clone(), namespace);
        let result = async {
            compositions
                .list_metadata(&params)
                .await
                .context("listing Compositions")?;
            entries
                .list_metadata(&params)
                .await
                .context("listing RegistryEntries")?;
            runs.list_metadata(&params)
                .await
                .context("listing StudioRuns")?;
            revisions
                .list_metadata(&params)
                .await
                .context("listing ControllerRevisions")?;
            anyhow::Ok(())
        }
        .await;
        match result {
            Ok(()) => return,
            Err(e) => {
                let text = format!("leader: the controllers cannot start: {e:#}");
                tracing::warn!("{text}; retrying every 2 s");
                health.not_ready(text);
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}
