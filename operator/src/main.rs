//! `orrery-operator`: the Orrery Studio operator and its sidecar. The controllers and the sidecar
//! are not built yet, so the binary prints its usage and says so; it never pretends to run.

use clap::{CommandFactory, Parser};
use std::process::ExitCode;

/// Orrery Studio operator: reconciles Compositions, RegistryEntries and StudioRuns, runs each
/// StudioRun in its own sandboxed runner pod, and (as a sidecar) serves the run API, the trace
/// stream, approvals and the console.
#[derive(Debug, Parser)]
#[command(
    name = "orrery-operator",
    version,
    after_help = "Not built yet: the controllers and the sidecar come in later releases. Until then \
this binary only prints this help and exits with code 2. Validate manifests offline with \
`orrery validate`."
)]
struct Cli {}

fn main() -> ExitCode {
    let _ = Cli::parse();
    let _ = Cli::command().print_help();
    eprintln!(
        "\norrery-operator: the controllers and the sidecar are not built yet; nothing to run."
    );
    ExitCode::from(2)
}
