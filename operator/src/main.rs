//! `orrery-operator`: the Orrery Studio operator. `controller --config FILE` checks the
//! deployment config (the reconcilers that run on it come next); `sidecar` is the next issue.

use clap::{Parser, Subcommand};
use orrery_operator::Config;
use orrery_operator::run::token::RunTokenSigner;
use std::process::ExitCode;

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
            Ok(_) => {
                eprintln!(
                    "orrery-operator: {config} is a valid config; the reconcilers are not part \
                     of this build yet, so nothing runs"
                );
                ExitCode::from(2)
            }
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
