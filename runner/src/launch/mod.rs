//! One launch path for a run, shared by `orrery run`, `orrery demo`, the runner pod and
//! `orrery probe`: the deployment's settings ([`Deployment`], read once), the composition
//! prepared ([`prepare`] loads, validates and plans; [`prepare_set`] for manifests already
//! loaded), the factories its models and tools come from ([`Factories`]: [`GuardedModels`] gives
//! each model entry its own client through the network guard; [`DryRunTools`] answers every
//! remote call with a description and calls nothing; [`crate::remote::RemoteToolFactory`]
//! builds the real MCP and A2A clients), then [`launch`]: build, run, and cancel on SIGINT or
//! SIGTERM ([`shutdown_signal`], the one signal handler).
//!
//! A runner pod reads its plan document instead of manifests ([`read_plan_document`],
//! [`prepare_document`]) and checks pins against the ones it carries ([`document_pins`]).
//!
//! [`build`] and [`run`] are the two steps of [`launch`], for callers that bring their own
//! factories or cancel token (tests).

mod build;
mod deployment;
mod models;
mod pod;
mod prepare;

pub use crate::tools::{DryRunTools, ToolBuildError, ToolFactory};
pub use build::{BuildError, Built, build};
pub use deployment::{Deployment, DeploymentError, REDACT_IPS_ENV};
pub use models::{GuardedModels, ModelFactory};
pub use pod::{
    MAX_PLAN_BYTES, PlanFileError, SIDECAR_URL_ENV, TOKEN_FILE, asks_people, document_pins,
    prepare_document, read_plan_document, read_plan_input, read_plan_token, sidecar_url,
};
pub use prepare::{PrepareError, Prepared, all_models_scripted, prepare, prepare_set};

use crate::approval::DecisionSource;
use crate::engine::{RunOptions, RunResult, RunSetup};
use crate::events::EventSink;
use crate::pin::store::Pins;
use crate::remote::{RemoteConfig, RemoteToolFactory};
use crate::secrets::SecretResolver;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Where a run's remote tools (MCP, A2A) come from.
#[derive(Clone, Debug)]
pub enum RemoteTools {
    /// Dry-run stand-ins: nothing is called.
    DryRun,
    /// The real clients, pinning tools and cards in `pins`.
    Real {
        /// Where pins are kept.
        pins: Arc<dyn Pins>,
    },
}

/// The factories a run's models and tools are built with.
pub struct Factories {
    /// Models.
    pub models: Box<dyn ModelFactory>,
    /// Tools.
    pub tools: Box<dyn ToolFactory>,
}

impl std::fmt::Debug for Factories {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Factories")
            .field("dry_run_tools", &self.tools.dry_run())
            .finish_non_exhaustive()
    }
}

impl Factories {
    /// The deployment's factories: models through the network guard, remote tools real or
    /// dry-run, secrets (API keys, bearer tokens) from `secrets`.
    pub fn for_deployment(
        deployment: &Deployment,
        tools: RemoteTools,
        secrets: Arc<dyn SecretResolver>,
    ) -> Self {
        let models = GuardedModels::new(deployment.network.clone(), secrets.clone());
        let tools: Box<dyn ToolFactory> = match tools {
            RemoteTools::DryRun => Box::new(DryRunTools),
            RemoteTools::Real { pins } => Box::new(RemoteToolFactory::new(RemoteConfig::new(
                deployment.network.clone(),
                deployment.limits.acting_remotes,
                pins,
                secrets,
            ))),
        };
        Factories {
            models: Box::new(models),
            tools,
        }
    }
}

/// What a launch needs besides the composition and its input.
pub struct Launch {
    /// The deployment's settings (its redaction becomes the run's).
    pub deployment: Deployment,
    /// Where models and tools come from.
    pub factories: Factories,
    /// Who decides approvals.
    pub decisions: Arc<dyn DecisionSource>,
    /// Where events go.
    pub sinks: Vec<Arc<dyn EventSink>>,
    /// The run's options.
    pub options: RunOptions,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("deployment", &self.deployment)
            .field("factories", &self.factories)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Builds the models and tools of `prepared`, then runs it on `input`, cancelling the run on
/// the first SIGINT (Ctrl-C) or SIGTERM (a note on standard error says so). An error: the run
/// could not start (a model or tool could not be built); nothing ran.
pub async fn launch(
    prepared: &Prepared,
    input: String,
    launch: Launch,
) -> Result<RunResult, BuildError> {
    let Launch {
        deployment,
        factories,
        decisions,
        sinks,
        mut options,
    } = launch;
    let built = build(
        prepared,
        factories.models.as_ref(),
        factories.tools.as_ref(),
    )
    .await?;
    options.redact = deployment.redact;
    let cancel = CancellationToken::new();
    // Installed now, before the run starts, so no early signal is lost.
    let stop = shutdown_signal();
    let signals = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            stop.await;
            eprintln!("\ncancelling the run…");
            cancel.cancel();
        }
    });
    let result = run(prepared, built, input, decisions, sinks, options, cancel).await;
    signals.abort();
    Ok(result)
}

/// Runs a prepared, built composition on `input`.
pub async fn run(
    prepared: &Prepared,
    built: Built,
    input: String,
    decisions: Arc<dyn DecisionSource>,
    sinks: Vec<Arc<dyn EventSink>>,
    mut options: RunOptions,
    cancel: CancellationToken,
) -> RunResult {
    options.dry_run_tools = built.dry_run_tools;
    let setup = RunSetup {
        plan: prepared.plan.clone(),
        composition: prepared.name.clone(),
        pattern: prepared.pattern.clone(),
        models: built.models,
        tools: built.tools,
        decisions,
        sinks,
        options,
    };
    crate::engine::run(setup, input, cancel).await
}

/// A fresh run id.
pub fn new_run_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Resolves on the first SIGINT (Ctrl-C) or SIGTERM: cancel a run with it, or stop the demo
/// fleet. The handlers are installed when this is called, not when the future is first polled,
/// so a signal that arrives while the run is starting is not missed (a pod's SIGTERM right after
/// start would otherwise kill the runner before it writes its summary). Must be called inside
/// the tokio runtime. Never resolves when no signal handler can be installed.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal(SignalKind::terminate()).ok();
        let interrupt = signal(SignalKind::interrupt()).ok();
        async move {
            let next = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = next(term) => {}
                () = next(interrupt) => {}
            }
        }
    }
    #[cfg(not(unix))]
    {
        async move {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}
