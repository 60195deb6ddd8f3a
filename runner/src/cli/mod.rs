//! The `orrery` command line: one module per subcommand. `main` parses [`Cli`] and calls
//! [`run`]; each subcommand returns the process exit code.
//!
//! Without the `cli` feature (on by default) only the runner pod's commands are built: `run`,
//! `probe` and `validate` (which `run` uses to report an invalid composition).

#[cfg(feature = "cli")]
mod crds;
#[cfg(feature = "cli")]
mod demo;
mod deployment;
#[cfg(feature = "cli")]
mod import;
#[cfg(feature = "cli")]
mod pins;
mod probe;
mod run;
#[cfg(feature = "cli")]
mod schema;
mod style;
#[cfg(feature = "cli")]
mod up;
mod validate;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Exit code: everything checked is valid / the command did what was asked.
pub const EXIT_OK: u8 = 0;
/// Exit code: the input was read but is invalid (a manifest or spec refused).
pub const EXIT_INVALID: u8 = 1;
/// Exit code: the input could not be read, or the command line is wrong.
pub const EXIT_UNREADABLE: u8 = 2;

/// Orrery Studio: agent compositions as Kubernetes resources.
#[derive(Debug, Parser)]
#[command(name = "orrery", version, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate manifests offline (Compositions against the RegistryEntries beside them), as
    /// the operator would. Exit code 0 valid, 1 invalid, 2 unreadable input.
    Validate(validate::ValidateArgs),
    /// Convert a seed composition JSON (`spec_version: 1`) into a Composition manifest on
    /// stdout.
    #[cfg(feature = "cli")]
    Import(import::ImportArgs),
    /// Print the CustomResourceDefinitions (multi-document YAML), or write one file per CRD.
    #[cfg(feature = "cli")]
    Crds(crds::CrdsArgs),
    /// Run a composition locally from files (Composition + RegistryEntries), with a live trace.
    /// Exit code 0 Succeeded, 1 invalid, 2 unreadable input, 3 Failed, 4 BudgetExhausted,
    /// 5 Rejected, 130 Cancelled.
    Run(run::RunArgs),
    /// The quickstart: start the demo fleet (an MCP server and an A2A agent) on loopback and
    /// run the critic-loop example on it with a Scripted model and a live trace. Exit codes as
    /// `run`. `--fleet-only` keeps the fleet running until Ctrl-C.
    #[cfg(feature = "cli")]
    Demo(demo::DemoArgs),
    /// List or reset the MCP tool and A2A card pins kept across runs.
    #[cfg(feature = "cli")]
    Pins(pins::PinsArgs),
    /// Check and pin one RegistryEntry as a run would reach it (the operator's probe pod): the
    /// report as one JSON line on standard output and in --termination-log. Exit code 0 pinned,
    /// 1 the probe failed, 2 unreadable entry.
    Probe(probe::ProbeArgs),
    /// Print a published document as JSON: the Composition spec's JSON Schema, the trace
    /// events' JSON Schema, or the capabilities (node kinds, patterns, limits, ceilings).
    #[cfg(feature = "cli")]
    Schema(schema::SchemaArgs),
    /// The whole system on this machine, from a checkout: a local control plane, a development
    /// node, the Helm chart, the demo fleet and the examples, then a critic-loop StudioRun
    /// followed live; stays up until Ctrl-C. `--detach`, `--status`, `--down`; `orrery up
    /// --help` for more. Needs Linux, root, Go and Debian's buildah and runc (installed when
    /// missing).
    #[cfg(feature = "cli")]
    Up(up::UpArgs),
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    let code = match cli.command {
        Command::Validate(args) => validate::run(&args),
        #[cfg(feature = "cli")]
        Command::Import(args) => import::run(&args),
        #[cfg(feature = "cli")]
        Command::Crds(args) => crds::run(&args),
        Command::Run(args) => run::run(&args),
        #[cfg(feature = "cli")]
        Command::Demo(args) => demo::run(&args),
        #[cfg(feature = "cli")]
        Command::Pins(args) => pins::run(&args),
        Command::Probe(args) => probe::run(&args),
        #[cfg(feature = "cli")]
        Command::Schema(args) => schema::run(&args),
        #[cfg(feature = "cli")]
        Command::Up(args) => up::run(&args),
    };
    ExitCode::from(code)
}
