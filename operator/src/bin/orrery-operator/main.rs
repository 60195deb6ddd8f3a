//! `orrery-operator`: the Orrery Studio operator.
//!
//! `controller --config FILE` checks the deployment config, connects to the cluster of
//! `KUBECONFIG` (or the in-cluster config) and campaigns for the leader Lease
//! (`--leader-election-namespace`/`--leader-election-name`, default
//! `$POD_NAMESPACE`/`orrery-operator`). Only the holder runs the Composition, RegistryEntry and
//! StudioRun controllers (`--namespace NS` scopes them to one namespace); a standby waits
//! and takes over when the holder stops renewing (within `--lease-duration`) or releases the
//! Lease. `--leader-elect=false` runs the controllers without a Lease (one process, dev use).
//!
//! Every process serves `/metrics`, `/healthz` and `/readyz` on `--listen` (default
//! `0.0.0.0:8081`, the chart's `controller.metricsPort`, beside the sidecar's 8080; see
//! [`orrery_operator::http`] for what readiness means).
//!
//! Exit: SIGTERM or SIGINT stops accepting new reconciles, lets the ones in flight finish,
//! releases the Lease (a standby takes over at once) and exits 0; a second signal exits 1 at
//! once. A leader that loses the Lease stops its controllers at once and exits 1 (its
//! Deployment restarts it as a candidate).
//!
//! Logs go to standard error as text or, with `--log-format json` (the chart's default), one
//! JSON object a line ([`orrery_crds::logging`]); `--log-level` or `RUST_LOG` picks the levels.
//!
//! `sidecar --config FILE` serves runners' trace events and the run API (see
//! [`orrery_operator::sidecar`]).

mod cli;
mod controller;
mod sidecar;
mod signals;

use clap::Parser;
use cli::{Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = orrery_crds::logging::init(cli.log_format, cli.log_level.as_deref()) {
        // Logging is not set up, so this one line is the process's last word.
        eprintln!("orrery-operator: {e}");
        return ExitCode::from(2);
    }
    match cli.command {
        Command::Controller(args) => controller::main(args),
        Command::Sidecar(args) => sidecar::main(args),
    }
}
