//! `orrery-operator`: the Orrery Studio operator. `controller --config FILE` checks the
//! deployment config and runs the Composition, RegistryEntry and StudioRun controllers against
//! the cluster of `KUBECONFIG` (or the in-cluster config) until SIGTERM/SIGINT. `sidecar` is
//! the next issue.

use clap::{Parser, Subcommand};
use orrery_operator::Config;
use orrery_operator::run::token::RunTokenSigner;
use std::process::ExitCode;
use std::sync::Arc;

/// Orrery Studio operator: reconciles Compositions, RegistryEntries and StudioRuns and runs each
/// StudioRun in its own sandboxed runner pod.
#[derive(Debug, Parser)]
#[command(name = "orrery-operator", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the controllers (Compositions, RegistryEntries, StudioRuns) against the cluster of
    /// KUBECONFIG, or the in-cluster config in a pod.
    Controller {
        /// The deployment config (YAML); see examples/operator/config.yaml.
        #[arg(long, value_name = "FILE")]
        config: String,
    },
    /// The sidecar (run API, trace stream, approvals, console): not part of this release.
    Sidecar,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Controller { config } => match Config::load(&config).and_then(|c| {
            RunTokenSigner::from_config(&config, &c.run_token).map(|signer| (c, signer))
        }) {
            Ok((loaded, signer)) => match controller(&config, loaded, signer) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("orrery-operator: {e:#}");
                    ExitCode::from(1)
                }
            },
            Err(e) => {
                eprintln!("orrery-operator: {e}");
                ExitCode::from(1)
            }
        },
        Command::Sidecar => {
            eprintln!(
                "orrery-operator sidecar: the sidecar (run API, trace stream, approvals, console) \
                 is the next issue and is not in this build; run `orrery-operator controller \
                 --config FILE` for the controllers"
            );
            ExitCode::from(2)
        }
    }
}

/// Runs the controllers until SIGTERM or SIGINT, then lets the reconciles in flight finish.
fn controller(path: &str, config: Config, signer: RunTokenSigner) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async move {
        let client = kube::Client::try_default().await.context(
            "connecting to the cluster (KUBECONFIG, ~/.kube/config or the in-cluster config): \
             set KUBECONFIG to a kubeconfig whose current context reaches the cluster",
        )?;
        eprintln!(
            "orrery-operator: config {path}; running the Composition, RegistryEntry and \
             StudioRun controllers; SIGTERM or SIGINT stops"
        );
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("listening for SIGTERM")?;
        let shutdown = async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            eprintln!("orrery-operator: stopping: finishing the reconciles in flight");
        };
        orrery_operator::controller::run(
            client,
            Arc::new(config),
            Arc::new(signer),
            None,
            shutdown,
        )
        .await;
        eprintln!("orrery-operator: stopped");
        Ok(())
    })
}
