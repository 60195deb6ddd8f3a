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
mod egress;
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
    /// How log lines (warnings about the sidecar, remotes, approvals) are written to standard
    /// error: `text` or `json` (one JSON object a line, with the run's UID in a runner pod;
    /// what the operator gives runner pods when the chart says so).
    #[arg(long, global = true, value_name = "FORMAT", env = orrery_crds::logging::FORMAT_ENV, default_value = "text")]
    pub log_format: orrery_crds::logging::LogFormat,
    /// Which log lines are written: a level (`error`, `warn`, `info`, `debug`, `trace`) or
    /// directives such as `warn,orrery_runner=debug`. Default: `RUST_LOG` when set, else info
    /// for orrery and warnings for the libraries under it.
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,
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
    /// Whether this pod's network lets it reach what a runner pod must never reach (the cloud
    /// metadata address, the API server, a public address): run it in a pod made like a runner
    /// pod under a policy made like a run's (deploy/egress-check.yaml). Exit code 0 nothing was
    /// reached, 1 something was, 2 usage.
    EgressCheck(egress::EgressCheckArgs),
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
    /// Any other word, in a build without the `cli` feature: a command of the full CLI gets an
    /// answer naming the build it is in (see [`missing_command`]), not clap's bare refusal.
    #[cfg(not(feature = "cli"))]
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// The commands only the full CLI (the `cli` feature) has; the runner image's binary is built
/// without them.
#[cfg(any(test, not(feature = "cli")))]
pub const FULL_CLI_ONLY: [&str; 6] = ["import", "crds", "demo", "pins", "schema", "up"];

/// What a build without the `cli` feature says of a command it does not have: for a command
/// of the full CLI, that it is not in this build and where it is; otherwise the usual refusal.
#[cfg(any(test, not(feature = "cli")))]
pub fn missing_command(name: &str) -> String {
    if FULL_CLI_ONLY.contains(&name) {
        format!(
            "error: `orrery {name}` is not in this build: this is the runner image's orrery, \
             built without the `cli` feature, with the commands run, probe and validate only. \
             The full command line has {}: install it with `cargo install --path runner` from a \
             checkout",
            FULL_CLI_ONLY.join(", ")
        )
    } else {
        format!(
            "error: unrecognized subcommand '{name}' (the commands are run, probe and validate; \
             `orrery --help` for more)"
        )
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    if let Err(e) = orrery_crds::logging::init(cli.log_format, cli.log_level.as_deref()) {
        eprintln!("error: {e}");
        return ExitCode::from(EXIT_UNREADABLE);
    }
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
        Command::EgressCheck(args) => egress::run(&args),
        #[cfg(feature = "cli")]
        Command::Schema(args) => schema::run(&args),
        #[cfg(feature = "cli")]
        Command::Up(args) => up::run(&args),
        #[cfg(not(feature = "cli"))]
        Command::Other(words) => {
            let name = words.first().map_or("", String::as_str);
            eprintln!("{}", missing_command(name));
            EXIT_UNREADABLE
        }
    };
    ExitCode::from(code)
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn command_names() -> Vec<String> {
        Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .collect()
    }

    #[cfg(feature = "cli")]
    #[test]
    fn the_full_cli_has_the_pod_commands_and_every_full_cli_only_command() {
        let names = command_names();
        for name in POD_COMMANDS.iter().chain(FULL_CLI_ONLY.iter()) {
            assert!(
                names.iter().any(|n| n == name),
                "{name} missing from {names:?}"
            );
        }
        assert_eq!(
            names.len(),
            POD_COMMANDS.len() + FULL_CLI_ONLY.len(),
            "{names:?}"
        );
    }

    /// What the runner image's binary runs: a run, a probe, the egress check, validation.
    const POD_COMMANDS: [&str; 4] = ["egress-check", "probe", "run", "validate"];

    #[cfg(not(feature = "cli"))]
    #[test]
    fn the_runner_image_build_has_run_probe_egress_check_and_validate_only() {
        let mut names = command_names();
        names.sort();
        assert_eq!(names, POD_COMMANDS);
    }

    #[cfg(not(feature = "cli"))]
    #[test]
    fn the_runner_image_build_takes_a_full_cli_command_as_another_word() {
        let cli = Cli::try_parse_from(["orrery", "demo", "--fleet-only"]).expect("parses");
        match cli.command {
            Command::Other(words) => assert_eq!(words, ["demo", "--fleet-only"]),
            other => panic!("demo parsed as {other:?}"),
        }
    }

    #[test]
    fn a_full_cli_command_missing_from_a_build_is_named_with_where_to_find_it() {
        for name in FULL_CLI_ONLY {
            let message = missing_command(name);
            assert!(
                message.contains(&format!("`orrery {name}` is not in this build")),
                "{message}"
            );
            assert!(
                message.contains("run, probe and validate only"),
                "{message}"
            );
            assert!(message.contains("cargo install --path runner"), "{message}");
        }
    }

    #[test]
    fn an_unknown_word_is_refused_as_an_unrecognized_subcommand() {
        let message = missing_command("frobnicate");
        assert!(
            message.contains("unrecognized subcommand 'frobnicate'"),
            "{message}"
        );
        assert!(!message.contains("not in this build"), "{message}");
    }
}
