//! The operator's controllers run in-process for a test: a run-token signer with a key made
//! for the tests, the example deployment config adjusted for the test control plane (the
//! runner image the pod executor runs), and [`Operator`], which runs the controllers on a
//! task scoped to one namespace until [`Operator::stop`].

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use kube::Client;
use orrery_operator::Config;
use orrery_operator::manager::Stopped;
use orrery_operator::run_token::RunTokenSigner;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::harness::{TIMEOUT, workspace_root};

/// An Ed25519 key made for these tests only (`openssl genpkey -algorithm ed25519`); it signs
/// nothing outside them.
pub const TEST_SIGNING_KEY: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIJCA/XvmXjIkkujgD5y+mEEiluJLgK2GY7INN0Y0w8Jx
-----END PRIVATE KEY-----
";

/// The public half of [`TEST_SIGNING_KEY`] (`openssl pkey -pubout`): what the sidecar verifies
/// run tokens with.
pub const TEST_VERIFYING_KEY: &str = "-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAFJk0wXQcho2hsS5lUbOmUgumJxU/jpsgM298EsA/3DU=
-----END PUBLIC KEY-----
";

/// The image the pod executor maps to the `orrery` binary.
pub const RUNNER_IMAGE: &str = "orrery/runner:dev";

/// A signer with [`TEST_SIGNING_KEY`].
pub fn test_signer() -> Result<Arc<RunTokenSigner>> {
    RunTokenSigner::from_ed_pem(TEST_SIGNING_KEY.as_bytes())
        .map(Arc::new)
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// `examples/operator/config.yaml` with the runner image set to [`RUNNER_IMAGE`] and runners
/// posting their events to the test binary's shared sidecar
/// ([`crate::sidecar_fixture::shared`]).
pub fn test_config() -> Result<Config> {
    let path = workspace_root().join("examples/operator/config.yaml");
    let mut config = Config::load(&path.to_string_lossy()).map_err(|e| anyhow::anyhow!("{e}"))?;
    config.runner.image = RUNNER_IMAGE.to_owned();
    // The example names the chart's cluster-wide policies; a test binds its own per namespace
    // (`Studio::start` with `policies` names them).
    config.admission_policies.clear();
    config.sidecar.url = Some(crate::sidecar_fixture::shared()?.url.clone());
    Ok(config)
}

/// How long [`Operator::stop`] lets the reconciles in flight finish.
pub const DRAIN: Duration = Duration::from_secs(20);

/// The controllers of one test, stopped (gracefully) by [`Operator::stop`].
pub struct Operator {
    /// What the controllers count (and where they send spans, [`Metrics::trace_to`]).
    ///
    /// [`Metrics::trace_to`]: orrery_operator::metrics::Metrics::trace_to
    pub metrics: Arc<orrery_operator::metrics::Metrics>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Stopped>,
}

impl Operator {
    /// Runs every controller with `client` and `config`, watching only `namespace`.
    pub fn start(client: Client, config: Config, namespace: &str) -> Result<Operator> {
        let (stop, stopped) = oneshot::channel::<()>();
        let metrics = Arc::new(orrery_operator::metrics::Metrics::new());
        let task = tokio::spawn(orrery_operator::manager::run(
            client,
            Arc::new(config),
            metrics.clone(),
            test_signer()?,
            Some(namespace.to_owned()),
            async move {
                let _ = stopped.await;
            },
            DRAIN,
        ));
        Ok(Operator {
            metrics,
            stop,
            task,
        })
    }

    /// Stops the controllers and waits until the reconciles in flight have finished; an
    /// error if one was still running [`DRAIN`] after the signal.
    pub async fn stop(self) -> Result<()> {
        let _ = self.stop.send(());
        let stopped = tokio::time::timeout(TIMEOUT, self.task)
            .await
            .context("the controllers did not stop after the shutdown signal")?
            .context("the controllers' task")?;
        anyhow::ensure!(
            stopped != Stopped::Overdue,
            "a reconcile was still running {DRAIN:?} after the shutdown signal"
        );
        Ok(())
    }

    /// Kills the controllers where they are (a crash: no reconcile finishes).
    pub async fn kill(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}
