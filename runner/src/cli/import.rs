//! `orrery import`: a seed composition JSON (`spec_version: 1`) to a Composition manifest.

use super::{EXIT_INVALID, EXIT_OK, EXIT_UNREADABLE};
use clap::Args;
use orrery_crds::import::{
    ImportError, ImportOptions, display_path, import_spec_json, to_manifest_yaml,
};
use std::io::{Read, Write};
use std::path::PathBuf;

/// Arguments of `orrery import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The seed spec (JSON, `spec_version: 1`); `-` reads stdin.
    #[arg(value_name = "SPEC_JSON")]
    pub file: PathBuf,
    /// The Composition's name (default: the spec's `name`).
    #[arg(short = 'n', long, value_name = "NAME")]
    pub name: Option<String>,
    /// The Composition's namespace (default: none, so `kubectl apply -n` decides).
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
}

/// Runs `orrery import`: the manifest goes to stdout, problems to stderr. Exit code 0
/// converted, 1 not convertible, 2 unreadable or not JSON.
pub fn run(args: &ImportArgs) -> u8 {
    let from_stdin = args.file.as_os_str() == "-";
    let mut text = String::new();
    let read = if from_stdin {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(&args.file).map(|t| text = t)
    };
    let shown = if from_stdin {
        "<stdin>".to_owned()
    } else {
        args.file.display().to_string()
    };
    if let Err(e) = read {
        eprintln!("error: {shown}: cannot read: {e}");
        return EXIT_UNREADABLE;
    }
    let options = ImportOptions {
        name: args.name.clone(),
        namespace: args.namespace.clone(),
    };
    match import_spec_json(&text, &options) {
        Ok(composition) => match to_manifest_yaml(&composition) {
            Ok(yaml) => {
                let header = format!(
                    "# Imported by `orrery import` from {shown} (spec_version 1).\n# Check it with `orrery validate` against your RegistryEntries.\n"
                );
                let _ = std::io::stdout()
                    .lock()
                    .write_all(format!("{header}{yaml}").as_bytes());
                EXIT_OK
            }
            Err(e) => {
                eprintln!("error: cannot write the manifest: {e}");
                EXIT_INVALID
            }
        },
        Err(ImportError::NotJson(e)) => {
            eprintln!("error: {shown}: not valid JSON: {e}");
            EXIT_UNREADABLE
        }
        Err(ImportError::Unconvertible(problems)) => {
            eprintln!(
                "error: {shown} cannot be imported ({} {}):",
                problems.len(),
                if problems.len() == 1 {
                    "problem"
                } else {
                    "problems"
                }
            );
            for p in problems {
                eprintln!(
                    "  error[{}] {}: {}",
                    p.code,
                    display_path(&p.loc),
                    p.message
                );
            }
            EXIT_INVALID
        }
    }
}
