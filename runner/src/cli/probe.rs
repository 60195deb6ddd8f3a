//! `orrery probe`: check and pin one RegistryEntry the way a run reaches it, for the operator's
//! probe pod (the work is [`orrery_runner::probe`]). The report goes to standard output as one
//! JSON line and to the termination log, where the operator reads it.
//!
//! Exit codes: 0 the entry was reached and pinned, 1 the probe failed (the report says why),
//! 2 the entry file is unreadable or the command line is wrong.

use super::run::{TERMINATION_LOG, error, runtime};
use super::{EXIT_INVALID, EXIT_OK, EXIT_UNREADABLE};
use clap::Args;
use orrery_crds::probe::{ProbeReport, ProbeRequest};
use orrery_crds::registry::RegistryEntry;
use orrery_runner::probe::{ProbeSettings, probe};
use orrery_runner::secrets::LocalSecrets;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The largest entry file read.
const MAX_ENTRY_BYTES: u64 = 256 * 1024;

/// Arguments of `orrery probe`.
#[derive(Debug, Args)]
#[command(
    after_help = "The entry file is JSON: {\"name\": NAME, \"generation\": N, \"spec\": {...}} \
(what the operator writes for its probe pods), or a whole RegistryEntry object as JSON \
(`kubectl get registryentry NAME -o json`). Bearer tokens are read from $ORRERY_SECRETS_DIR/<secret>/<key> \
as in a runner pod; the private-network allowlist and the egress proxy from ORRERY_A2A_PRIVATE_ALLOW \
and ORRERY_STUDIO_EGRESS_PROXY.\n\n\
Exit codes: 0 reached and pinned, 1 the probe failed (the report says why), 2 unreadable entry or usage."
)]
pub struct ProbeArgs {
    /// The entry to probe (JSON; see below).
    #[arg(long, value_name = "FILE")]
    pub entry: PathBuf,
    /// Where the report is written besides standard output (the container's
    /// `terminationMessagePath`).
    #[arg(long, value_name = "FILE", default_value = TERMINATION_LOG)]
    pub termination_log: PathBuf,
    /// Seconds the whole probe may take: 1 to 600.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = orrery_runner::probe::DEFAULT_PROBE_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..=600)
    )]
    pub timeout: u64,
}

/// Reads the entry file: a probe request, or a RegistryEntry object.
fn read_request(path: &Path) -> Result<ProbeRequest, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("{}: cannot read the entry: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_ENTRY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: cannot read the entry: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_ENTRY_BYTES {
        return Err(format!(
            "{}: the entry is over {MAX_ENTRY_BYTES} bytes",
            path.display()
        ));
    }
    let value = orrery_crds::unique_keys::json_from_slice(&bytes).map_err(|e| {
        format!(
            "{}: the entry is not one JSON document with unique keys: {e}",
            path.display()
        )
    })?;
    let field_error = |e: serde_json::Error| format!("{}: {e}", path.display());
    if value.get("apiVersion").is_some() || value.get("metadata").is_some() {
        let entry: RegistryEntry = serde_json::from_value(value).map_err(field_error)?;
        return Ok(ProbeRequest {
            name: entry.metadata.name.clone().unwrap_or_default(),
            generation: entry.metadata.generation.unwrap_or(0),
            spec: entry.spec,
        });
    }
    serde_json::from_value(value).map_err(field_error)
}

/// Prints the report and writes it to the termination log.
fn report(args: &ProbeArgs, report: &ProbeReport) {
    let line = report.to_message();
    println!("{line}");
    if let Err(e) = std::fs::write(&args.termination_log, format!("{line}\n")) {
        error(&format!(
            "{}: cannot write the probe's report: {e}",
            args.termination_log.display()
        ));
    }
}

/// Runs `orrery probe`.
pub fn run(args: &ProbeArgs) -> u8 {
    let request = match read_request(&args.entry) {
        Ok(r) => r,
        Err(message) => {
            error(&message);
            report(args, &ProbeReport::error("", 0, message));
            return EXIT_UNREADABLE;
        }
    };
    let (name, generation) = (request.name.clone(), request.generation);
    let network = match orrery_runner::remote::network_from_env() {
        Ok(n) => n,
        Err(e) => {
            let message = e.to_string();
            error(&message);
            report(args, &ProbeReport::error(&name, generation, message));
            return EXIT_UNREADABLE;
        }
    };
    let mut settings = ProbeSettings::new(network, Arc::new(LocalSecrets::from_env()));
    settings.timeout = Duration::from_secs(args.timeout);
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(code) => {
            report(
                args,
                &ProbeReport::error(&name, generation, "cannot start the async runtime"),
            );
            return code;
        }
    };
    let result = runtime.block_on(probe(&request, &settings));
    runtime.shutdown_timeout(Duration::from_millis(200));
    report(args, &result);
    match &result.outcome {
        orrery_crds::probe::ProbeOutcome::Ok => EXIT_OK,
        orrery_crds::probe::ProbeOutcome::Error { message } => {
            error(message);
            EXIT_INVALID
        }
    }
}
