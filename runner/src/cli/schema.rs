//! `orrery schema`: print what the console and tools build against, as JSON: the JSON Schema of
//! a Composition's spec, the JSON Schema of trace events, or the capabilities (node kinds,
//! patterns, limits, budget ceilings) for the given deployment settings.

use super::deployment::DeploymentArgs;
use super::{EXIT_OK, EXIT_UNREADABLE};
use clap::{Args, ValueEnum};
use orrery_crds::capabilities::Capabilities;
use std::io::Write;

/// Arguments of `orrery schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which document to print.
    #[arg(value_enum)]
    pub what: SchemaKind,
    /// For `capabilities`: what the deployment decides (acting remotes, allowed models,
    /// budget ceilings).
    #[command(flatten)]
    pub deployment: DeploymentArgs,
}

/// The documents `orrery schema` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SchemaKind {
    /// JSON Schema of `Composition.spec`.
    Composition,
    /// JSON Schema of one trace event (the JSON lines of `orrery run --output json`).
    Events,
    /// Node kinds, patterns, limits and budget ceilings.
    Capabilities,
}

/// Runs `orrery schema`.
pub fn run(args: &SchemaArgs) -> u8 {
    let value = match args.what {
        SchemaKind::Composition => orrery_crds::schema::composition_spec_schema(),
        SchemaKind::Events => orrery_runner::events::schema(),
        SchemaKind::Capabilities => {
            serde_json::to_value(Capabilities::for_limits(&args.deployment.limits()))
                .unwrap_or(serde_json::Value::Null)
        }
    };
    match serde_json::to_string_pretty(&value) {
        Ok(text) => {
            // A closed pipe (`orrery schema events | head`) is not an error worth reporting.
            let _ = writeln!(std::io::stdout().lock(), "{text}");
            EXIT_OK
        }
        Err(e) => {
            eprintln!("error: cannot print the schema: {e}");
            EXIT_UNREADABLE
        }
    }
}
