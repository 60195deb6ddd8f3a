//! `orrery import`: a seed composition JSON (`spec_version: 1`) to a Composition manifest.

use super::{EXIT_INVALID, EXIT_OK, EXIT_UNREADABLE};
use clap::Args;
use orrery_crds::import::{
    ImportError, ImportOptions, display_path, import_spec_json, to_manifest_yaml,
};
use orrery_crds::manifest::MAX_FILE_BYTES;
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

/// Reads at most [`MAX_FILE_BYTES`] of UTF-8 text; `None` when there is more (nothing past the
/// cap is read).
fn read_capped(input: impl Read) -> std::io::Result<Option<String>> {
    let mut bytes = Vec::new();
    input.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Ok(None);
    }
    String::from_utf8(bytes).map(Some).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// Runs `orrery import`: the manifest goes to stdout, problems to stderr. Exit code 0
/// converted, 1 not convertible, 2 unreadable, not JSON, or larger than `orrery validate`
/// reads ([`MAX_FILE_BYTES`], the apiserver's request limit).
pub fn run(args: &ImportArgs) -> u8 {
    let from_stdin = args.file.as_os_str() == "-";
    let shown = if from_stdin {
        "<stdin>".to_owned()
    } else {
        args.file.display().to_string()
    };
    let read = if from_stdin {
        read_capped(std::io::stdin().lock())
    } else {
        std::fs::File::open(&args.file).and_then(read_capped)
    };
    let text = match read {
        Ok(Some(text)) => text,
        Ok(None) => {
            eprintln!(
                "error: {shown}: the input is larger than {} MiB (the apiserver's request limit, which `orrery validate` applies too); a seed spec is far smaller: check that this is the right file",
                MAX_FILE_BYTES / (1024 * 1024)
            );
            return EXIT_UNREADABLE;
        }
        Err(e) => {
            eprintln!("error: {shown}: cannot read: {e}");
            return EXIT_UNREADABLE;
        }
    };
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
