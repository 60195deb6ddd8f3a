//! `orrery`: validate manifests, import seed specs, print the CRDs (and, as they land, run
//! compositions locally).

mod cli;

use clap::Parser;

fn main() -> std::process::ExitCode {
    cli::run(cli::Cli::parse())
}
