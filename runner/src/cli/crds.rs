//! `orrery crds`: print the CRDs, or write them one file per CRD.

use super::{EXIT_OK, EXIT_UNREADABLE};
use clap::Args;
use orrery_crds::crd_yaml::{all_crds_multidoc, write_crds};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `orrery crds`.
#[derive(Debug, Args)]
pub struct CrdsArgs {
    /// Write `compositions.yaml`, `registryentries.yaml` and `studioruns.yaml` into DIR
    /// (created if missing) instead of printing them. `--write crds/yaml/` refreshes the
    /// checked-in copies.
    #[arg(long, value_name = "DIR")]
    pub write: Option<PathBuf>,
}

/// Runs `orrery crds`.
pub fn run(args: &CrdsArgs) -> u8 {
    let result = match &args.write {
        Some(dir) => write_crds(dir).map(|paths| {
            for path in paths {
                eprintln!("wrote {}", path.display());
            }
        }),
        None => all_crds_multidoc().map(|yaml| {
            // A closed pipe (`orrery crds | head`) is not an error worth reporting.
            let _ = std::io::stdout().lock().write_all(yaml.as_bytes());
        }),
    };
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_UNREADABLE
        }
    }
}
