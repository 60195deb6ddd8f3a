//! `orrery run`: run a composition locally from files, with a live trace.
//!
//! Exit codes: 0 Succeeded, 1 the composition is invalid (nothing ran), 2 unreadable input or a
//! wrong command line, 3 Failed, 4 BudgetExhausted, 5 Rejected, 130 Cancelled.

use super::style::Style;
use super::{EXIT_INVALID, EXIT_OK, EXIT_UNREADABLE};
use clap::{Args, ValueEnum};
use orrery_crds::validate::DeploymentLimits;
use orrery_runner::approval::{DEFAULT_APPROVAL_TIMEOUT, MAX_APPROVAL_TIMEOUT, TerminalPrompt};
use orrery_runner::engine::{RunOptions, RunResult};
use orrery_runner::events::{EventSink, JsonLinesSink, Outcome, PrinterOptions, TerminalPrinter};
use orrery_runner::local::{self, DryRunTools, GuardedModels, PrepareError, ToolFactory};
use orrery_runner::pinstore::PinStore;
use orrery_runner::remote::{RemoteConfig, RemoteToolFactory};
use orrery_runner::secrets::LocalSecrets;
use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Exit code: a node failed.
pub const EXIT_FAILED: u8 = 3;
/// Exit code: a budget ran out.
pub const EXIT_BUDGET_EXHAUSTED: u8 = 4;
/// Exit code: a person rejected (or let expire) an approval.
pub const EXIT_REJECTED: u8 = 5;
/// Exit code: cancelled (SIGINT/SIGTERM), as a shell reports Ctrl-C.
pub const EXIT_CANCELLED: u8 = 130;

/// Arguments of `orrery run`.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit codes: 0 Succeeded, 1 invalid composition (nothing ran), 2 unreadable input or usage, \
3 Failed, 4 BudgetExhausted, 5 Rejected, 130 Cancelled."
)]
pub struct RunArgs {
    /// Manifests: the Composition and its RegistryEntries (files or folders of YAML/JSON;
    /// repeat -f).
    #[arg(short = 'f', long = "file", value_name = "PATH", required = true)]
    pub files: Vec<PathBuf>,
    /// The Composition to run when the files hold several.
    #[arg(long, value_name = "NAME")]
    pub composition: Option<String>,
    /// The run's input (the first node's input). Without it, --input-file or standard input.
    #[arg(long, conflicts_with = "input_file")]
    pub input: Option<String>,
    /// Read the run's input from a file.
    #[arg(long, value_name = "FILE")]
    pub input_file: Option<PathBuf>,
    /// `human` (a live trace) or `json` (one event per line; the last line is `run.end`).
    #[arg(long, short = 'o', value_enum, default_value_t = RunOutput::Human)]
    pub output: RunOutput,
    /// Record arguments, results and text in events (redacted, cut to 2 KB per field).
    #[arg(long)]
    pub capture_content: bool,
    /// The model entry a node without `model` runs on.
    #[arg(long, value_name = "NAME")]
    pub default_model: Option<String>,
    /// A model entry nodes may name (repeat for several). Without it, every model entry.
    #[arg(long = "allowed-model", value_name = "NAME")]
    pub allowed_models: Vec<String>,
    /// Allow A2A entries with `effect: Acting` (each call is confirmed by you).
    #[arg(long)]
    pub acting_remotes: bool,
    /// Seconds a person has to decide an approval before it expires (a rejection): 1 to 86400
    /// (one day).
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = DEFAULT_APPROVAL_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..=MAX_APPROVAL_TIMEOUT.as_secs())
    )]
    pub approval_timeout: u64,
    /// Remote tools (MCP, A2A): `real`, `dry-run` (answered with "[dry run] … would be called
    /// with …", nothing is called), or `auto` (dry-run when every model is Scripted).
    #[arg(long, value_enum, default_value_t = ToolsMode::Auto)]
    pub tools: ToolsMode,
    /// Shorthand for `--tools dry-run`.
    #[arg(long, conflicts_with = "tools")]
    pub dry_run_tools: bool,
    /// Where MCP tool pins and A2A card pins are kept across runs (default
    /// `$XDG_STATE_HOME/orrery/pins.json`). `orrery pins reset ENTRY` re-pins an entry.
    #[arg(long, value_name = "FILE")]
    pub pin_store: Option<PathBuf>,
}

/// Output format of `orrery run`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RunOutput {
    /// A live trace for people (colour on a terminal).
    Human,
    /// JSON lines: one trace event per line.
    Json,
}

/// How remote tools are provided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ToolsMode {
    /// The real MCP and A2A clients.
    Real,
    /// Dry-run stand-ins: nothing is called.
    DryRun,
    /// Dry-run when every model node runs on a Scripted model, real otherwise.
    Auto,
}

impl RunArgs {
    fn limits(&self) -> DeploymentLimits {
        DeploymentLimits {
            allowed_models: (!self.allowed_models.is_empty())
                .then(|| self.allowed_models.iter().cloned().collect()),
            acting_remotes: self.acting_remotes,
            default_model: self.default_model.clone(),
            ..DeploymentLimits::default()
        }
    }

    fn read_input(&self) -> Result<String, String> {
        if let Some(input) = &self.input {
            return Ok(input.clone());
        }
        if let Some(path) = &self.input_file {
            return std::fs::read_to_string(path)
                .map_err(|e| format!("{}: cannot read the input: {e}", path.display()));
        }
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return Err(
                "give the run's input with --input \"…\", --input-file FILE, or on standard input"
                    .into(),
            );
        }
        let mut text = String::new();
        stdin
            .lock()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read the input from standard input: {e}"))?;
        Ok(text)
    }
}

/// The exit code of an outcome.
pub fn exit_code(outcome: Outcome) -> u8 {
    match outcome {
        Outcome::Succeeded => EXIT_OK,
        Outcome::Failed => EXIT_FAILED,
        Outcome::BudgetExhausted => EXIT_BUDGET_EXHAUSTED,
        Outcome::Rejected => EXIT_REJECTED,
        Outcome::Cancelled => EXIT_CANCELLED,
    }
}

/// Runs `orrery run`.
pub fn run(args: &RunArgs) -> u8 {
    let style = Style::for_stdout();
    let err = |message: &str| eprintln!("{}: {message}", style.red("error"));
    let prepared = match local::prepare(&args.files, args.composition.as_deref(), &args.limits()) {
        Ok(p) => p,
        Err(PrepareError::Unreadable(errors)) => {
            for e in errors {
                err(&e.to_string());
            }
            return EXIT_UNREADABLE;
        }
        Err(PrepareError::Invalid { set, report }) => {
            // The same report `orrery validate` prints, on stderr (stdout is the trace).
            eprint!(
                "{}",
                super::validate::human(&set, &report, Style::for_stderr())
            );
            return EXIT_INVALID;
        }
        Err(e @ PrepareError::Plan(_)) => {
            err(&e.to_string());
            return EXIT_INVALID;
        }
        Err(e) => {
            err(&e.to_string());
            return EXIT_UNREADABLE;
        }
    };
    for w in &prepared.warnings {
        eprintln!("{}: {w}", style.yellow("warning"));
    }
    let input = match args.read_input() {
        Ok(i) => i,
        Err(message) => {
            err(&message);
            return EXIT_UNREADABLE;
        }
    };
    let max_input = orrery_crds::codes::limits::MAX_INPUT_CHARS;
    let input_chars = input.chars().count();
    if input_chars > max_input {
        err(&format!(
            "the run's input is {input_chars} characters; a run takes at most {max_input} (limits.maxInputChars): shorten it"
        ));
        return EXIT_UNREADABLE;
    }
    let dry_run = match (args.dry_run_tools, args.tools) {
        (true, _) | (false, ToolsMode::DryRun) => true,
        (false, ToolsMode::Real) => false,
        (false, ToolsMode::Auto) => local::all_models_scripted(&prepared),
    };
    // Model and remote-tool traffic goes through the network guard, one guarded client per
    // registry entry.
    let network = match orrery_runner::remote::network_from_env() {
        Ok(n) => n,
        Err(e) => {
            err(&e.to_string());
            return EXIT_UNREADABLE;
        }
    };
    let secrets = Arc::new(LocalSecrets::from_env());
    let providers = GuardedModels::new(network.clone(), secrets.clone());
    let remote = if dry_run {
        None
    } else {
        let pins = match &args.pin_store {
            Some(path) => PinStore::open(path),
            None => PinStore::open_default(),
        };
        let pins = match pins {
            Ok(p) => Arc::new(p),
            Err(e) => {
                err(&format!("cannot open the pin store: {e}"));
                return EXIT_UNREADABLE;
            }
        };
        Some(RemoteToolFactory::new(RemoteConfig::new(
            network,
            args.acting_remotes,
            pins,
            secrets,
        )))
    };
    let tool_factory: &dyn ToolFactory = match &remote {
        Some(factory) => factory,
        None => &DryRunTools,
    };
    let sink: Arc<dyn EventSink> = match args.output {
        RunOutput::Human => Arc::new(TerminalPrinter::stdout(PrinterOptions::detect())),
        RunOutput::Json => Arc::new(JsonLinesSink::stdout()),
    };
    let mut options = RunOptions::new(local::new_run_id());
    options.capture_content = args.capture_content;
    options.approval_timeout = Duration::from_secs(args.approval_timeout.max(1));

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            err(&format!("cannot start the async runtime: {e}"));
            return EXIT_FAILED;
        }
    };
    let result: Option<RunResult> = runtime.block_on(async {
        let built = match local::build(&prepared, &providers, tool_factory).await {
            Ok(b) => b,
            Err(e) => {
                err(&format!("cannot start the run: {e}"));
                return None;
            }
        };
        let cancel = CancellationToken::new();
        let signals = tokio::spawn(cancel_on_signal(cancel.clone()));
        let result = local::run(
            &prepared,
            built,
            input,
            TerminalPrompt::or_nobody(),
            vec![sink],
            options,
            cancel,
        )
        .await;
        signals.abort();
        Some(result)
    });
    // A stdin reader may still be blocked; never wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));

    let Some(result) = result else {
        return EXIT_FAILED;
    };
    if args.output == RunOutput::Human
        && let Some(output) = &result.output
    {
        // The output is model-written: escapes and invisible characters are shown, not run.
        let shown = orrery_runner::events::visible(output);
        println!("\n{}\n{}", style.bold("── output ──"), shown.text);
        if let Some(note) = shown.note() {
            eprintln!("{}: {note}", style.yellow("warning"));
        }
    }
    exit_code(result.outcome)
}

/// Cancels the run on SIGINT (Ctrl-C) or SIGTERM.
async fn cancel_on_signal(cancel: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            let _ = tokio::signal::ctrl_c().await;
            cancel.cancel();
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    eprintln!("\ncancelling the run…");
    cancel.cancel();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_has_its_own_exit_code() {
        let codes = [
            (Outcome::Succeeded, 0),
            (Outcome::Failed, 3),
            (Outcome::BudgetExhausted, 4),
            (Outcome::Rejected, 5),
            (Outcome::Cancelled, 130),
        ];
        for (outcome, code) in codes {
            assert_eq!(exit_code(outcome), code, "{outcome:?}");
        }
        assert_ne!(EXIT_INVALID, EXIT_UNREADABLE);
    }
}
