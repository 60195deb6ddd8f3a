//! `orrery run`: run a composition locally from files, with a live trace; or, with `--plan`, the
//! plan document of a runner pod (JSON-line events, the summary as the termination message).
//!
//! In pod mode the events also go to the sidecar ([`HttpSink`]) when the run token (the `token`
//! file of the plan Secret) is next to the plan: to the plan's `sidecarUrl`, or to
//! `ORRERY_SIDECAR_URL` when that is set (test and dev setups where the in-cluster Service name
//! does not resolve); and people decide the run's approvals, remote questions and acting
//! remotes' confirmations through the sidecar's relay ([`SidecarDecisions`]), the run's deadline
//! paused while they do. Without a token file events go to standard output only and nobody can
//! be asked: every request expires at once, a rejection (default deny), and standard error says
//! so. The run's outcome never depends on the sidecar being up: the summary is written first,
//! then the process waits (at most the sink's flush timeout) for the sidecar to have every
//! event and every settlement.
//!
//! Exit codes: 0 Succeeded, 1 the composition is invalid (nothing ran), 2 unreadable input or a
//! wrong command line, 3 Failed, 4 BudgetExhausted, 5 Rejected, 130 Cancelled.

use super::deployment::DeploymentArgs;
use super::style::Style;
use super::{EXIT_INVALID, EXIT_OK, EXIT_UNREADABLE};
use clap::{Args, ValueEnum};
use orrery_crds::plan_document::PlanDocument;
use orrery_crds::plan_document::RunSummary;
use orrery_crds::run::{RunError, RunTotals};
use orrery_runner::approval::{
    DEFAULT_APPROVAL_TIMEOUT, DecisionSource, MAX_APPROVAL_TIMEOUT, Nobody, SidecarDecisions,
    SidecarDecisionsOptions, TerminalPrompt,
};
use orrery_runner::engine::RunOptions;
use orrery_runner::events::{
    DEFAULT_FLUSH_TIMEOUT, EventSink, HttpSink, HttpSinkOptions, JsonLinesSink, Outcome,
    PrinterOptions, TerminalHold, TerminalPrinter, visible,
};
use orrery_runner::launch::{self, Factories, Launch, PrepareError, Prepared, RemoteTools};
use orrery_runner::pin::store::PinStore;
use orrery_runner::secrets::LocalSecrets;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Exit code: a node failed.
pub const EXIT_FAILED: u8 = 3;
/// Exit code: a budget ran out.
pub const EXIT_BUDGET_EXHAUSTED: u8 = 4;
/// Exit code: a person rejected (or let expire) an approval.
pub const EXIT_REJECTED: u8 = 5;
/// Exit code: cancelled (SIGINT/SIGTERM), as a shell reports Ctrl-C.
pub const EXIT_CANCELLED: u8 = 130;

/// Where a runner pod writes its summary (the container's `terminationMessagePath`).
pub const TERMINATION_LOG: &str = "/dev/termination-log";

/// Arguments of `orrery run`.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit codes: 0 Succeeded, 1 invalid composition (nothing ran), 2 unreadable input or usage, \
3 Failed, 4 BudgetExhausted, 5 Rejected, 130 Cancelled."
)]
pub struct RunArgs {
    /// Manifests: the Composition and its RegistryEntries (files or folders of YAML/JSON;
    /// repeat -f).
    #[arg(
        short = 'f',
        long = "file",
        value_name = "PATH",
        required_unless_present = "plan"
    )]
    pub files: Vec<PathBuf>,
    /// Pod mode: run the plan document the operator wrote (the run's input is the `input` file
    /// next to it); events as JSON lines on standard output, the summary in --termination-log.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["files", "composition", "input", "input_file", "pin_store", "output", "capture_content", "approval_timeout"]
    )]
    pub plan: Option<PathBuf>,
    /// Pod mode: where the run's summary (its `run.end` line) is written.
    #[arg(long, value_name = "FILE", requires = "plan", default_value = TERMINATION_LOG)]
    pub termination_log: PathBuf,
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
    /// What the deployment decides.
    #[command(flatten)]
    pub deployment: DeploymentArgs,
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

    fn remote_tools(&self, prepared: &Prepared) -> Result<RemoteTools, String> {
        let dry_run = match (self.dry_run_tools, self.tools) {
            (true, _) | (false, ToolsMode::DryRun) => true,
            (false, ToolsMode::Real) => false,
            (false, ToolsMode::Auto) => launch::all_models_scripted(prepared),
        };
        if dry_run {
            return Ok(RemoteTools::DryRun);
        }
        let pins = match &self.pin_store {
            Some(path) => PinStore::open(path),
            None => PinStore::open_default(),
        };
        pins.map(|p| RemoteTools::Real { pins: Arc::new(p) })
            .map_err(|e| format!("cannot open the pin store: {e}"))
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

/// Prints an error on standard error.
pub(super) fn error(message: &str) {
    eprintln!("{}: {message}", Style::for_stderr().red("error"));
}

/// Reports why a composition could not be prepared; the exit code.
pub(super) fn prepare_failed(e: PrepareError) -> u8 {
    match e {
        PrepareError::Unreadable(errors) => {
            for e in errors {
                error(&e.to_string());
            }
            EXIT_UNREADABLE
        }
        PrepareError::Invalid { set, report } => {
            // The same report `orrery validate` prints, on stderr (stdout is the trace).
            eprint!(
                "{}",
                super::validate::human(&set, &report, Style::for_stderr())
            );
            EXIT_INVALID
        }
        e @ PrepareError::Plan(_) => {
            error(&e.to_string());
            EXIT_INVALID
        }
        e => {
            error(&e.to_string());
            EXIT_UNREADABLE
        }
    }
}

/// The async runtime a launch runs on.
pub(super) fn runtime() -> Result<tokio::runtime::Runtime, u8> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            error(&format!("cannot start the async runtime: {e}"));
            EXIT_FAILED
        })
}

/// Where a run's events go in this process (the live trace or JSON lines on standard output)
/// and who decides its approvals (the person at this terminal, or nobody). The trace and the
/// prompt share the terminal: while a prompt waits, the trace is held.
pub(super) fn terminal(output: RunOutput) -> (Vec<Arc<dyn EventSink>>, Arc<dyn DecisionSource>) {
    let hold = TerminalHold::stdout();
    let out = Box::new(hold.writer());
    let sink: Arc<dyn EventSink> = match output {
        RunOutput::Human => Arc::new(TerminalPrinter::new(out, PrinterOptions::detect())),
        RunOutput::Json => Arc::new(JsonLinesSink::new(out)),
    };
    (vec![sink], TerminalPrompt::or_nobody_holding(hold))
}

/// Launches a prepared run and reports how it ended (`run` and `demo`): the run's output after
/// a human trace, shown through [`visible`] (it is model-written: escapes and invisible
/// characters are shown, not run), and the exit code.
pub(super) async fn launch_and_report(
    prepared: &Prepared,
    input: String,
    launch: Launch,
    output: RunOutput,
) -> u8 {
    let result = match launch::launch(prepared, input, launch).await {
        Ok(result) => result,
        Err(e) => {
            error(&format!("cannot start the run: {e}"));
            return EXIT_FAILED;
        }
    };
    if output == RunOutput::Human
        && let Some(text) = &result.output
    {
        let (block, note) = output_block(text, Style::for_stdout());
        // A closed pipe (`| head`) ends the output quietly; the exit code still tells.
        let _ = std::io::stdout().lock().write_all(block.as_bytes());
        if let Some(note) = note {
            eprintln!("{}: {note}", Style::for_stderr().yellow("warning"));
        }
    }
    exit_code(result.outcome)
}

/// The run's output as printed after a human trace, and the warning to print when it held
/// escapes or invisible characters: model-written text is shown through [`visible`], never
/// written raw.
pub(super) fn output_block(text: &str, style: Style) -> (String, Option<String>) {
    let shown = visible(text);
    let block = format!("\n{}\n{}\n", style.bold("── output ──"), shown.text);
    (block, shown.note())
}

/// Runs `orrery run`.
pub fn run(args: &RunArgs) -> u8 {
    if let Some(plan) = &args.plan {
        return run_plan(args, plan);
    }
    let deployment = match args.deployment.deployment() {
        Ok(d) => d,
        Err(e) => {
            error(&e.to_string());
            return EXIT_UNREADABLE;
        }
    };
    let prepared =
        match launch::prepare(&args.files, args.composition.as_deref(), &deployment.limits) {
            Ok(p) => p,
            Err(e) => return prepare_failed(e),
        };
    for w in &prepared.warnings {
        eprintln!("{}: {w}", Style::for_stderr().yellow("warning"));
    }
    let input = match args.read_input() {
        Ok(i) => i,
        Err(message) => {
            error(&message);
            return EXIT_UNREADABLE;
        }
    };
    if let Err(too_long) = orrery_crds::run::check_input(&input) {
        error(&too_long.to_string());
        return EXIT_UNREADABLE;
    }
    let tools = match args.remote_tools(&prepared) {
        Ok(t) => t,
        Err(message) => {
            error(&message);
            return EXIT_UNREADABLE;
        }
    };
    let factories =
        Factories::for_deployment(&deployment, tools, Arc::new(LocalSecrets::from_env()));
    let mut options = RunOptions::new(launch::new_run_id());
    options.capture_content = args.capture_content;
    options.approval_timeout = Duration::from_secs(args.approval_timeout.max(1));
    let (sinks, decisions) = terminal(args.output);
    let launch = Launch {
        deployment,
        factories,
        decisions,
        sinks,
        options,
    };
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let code = runtime.block_on(launch_and_report(&prepared, input, launch, args.output));
    // A stdin reader may still be blocked; never wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

/// Writes a pod run's summary as its termination message (a warning when it cannot: the
/// operator then reports the exit code alone).
fn write_summary(path: &Path, summary: &RunSummary, output_size: usize) {
    let line = summary.to_line(output_size);
    if let Err(e) = std::fs::write(path, format!("{line}\n")) {
        error(&format!(
            "{}: cannot write the run's summary: {e}",
            path.display()
        ));
    }
}

/// A pod run that ended before it started: the `run.end` line on standard output (the trace)
/// and in the termination message, the reason on standard error; `code`.
fn end_before_start(args: &RunArgs, message: String, code: u8) -> u8 {
    error(&message);
    let summary = RunSummary {
        outcome: Outcome::Failed,
        error: Some(RunError {
            node: None,
            message,
        }),
        totals: RunTotals::default(),
        dropped: 0,
    };
    println!("{}", summary.to_line(0));
    write_summary(&args.termination_log, &summary, 0);
    code
}

/// The run token next to the plan, when there is a usable one; `None`, with a line on standard
/// error saying why, otherwise.
fn plan_token(plan: &Path) -> Option<String> {
    match launch::read_plan_token(plan) {
        Ok(Some(token)) => Some(token),
        Ok(None) => {
            tracing::info!(
                "no `{}` file next to the plan: trace events go to standard output only, not to the sidecar",
                launch::TOKEN_FILE
            );
            None
        }
        Err(e) => {
            warn(&format!("{e}; trace events go to standard output only"));
            None
        }
    }
}

/// A pod run's warning: a log line (JSON when the operator's chart asks for it).
fn warn(message: &str) {
    tracing::warn!("{message}");
}

/// The sink to the sidecar of a pod run with a token; `None`, with a line on standard error
/// saying why, when events go to standard output only.
fn sidecar_sink(
    url: &str,
    document: &PlanDocument,
    token: &str,
    runtime: &tokio::runtime::Handle,
) -> Option<Arc<HttpSink>> {
    let options = HttpSinkOptions {
        flush_timeout: flush_timeout(document),
        ..HttpSinkOptions::default()
    };
    match HttpSink::new(url, &document.run.uid, token, options, runtime) {
        Ok(sink) => Some(Arc::new(sink)),
        Err(e) => {
            warn(&format!("{e}; trace events go to standard output only"));
            None
        }
    }
}

/// How long the runner keeps trying to give the sidecar what it does not have yet after the
/// run ended: the plan's `flushSeconds`, else the sink's default.
fn flush_timeout(document: &PlanDocument) -> Duration {
    document
        .flush_seconds
        .map_or(DEFAULT_FLUSH_TIMEOUT, Duration::from_secs)
}

/// The relay's options in a pod: a settlement is tried, with backoff, for as long as the
/// events are ([`flush_timeout`], at least the default), so a sidecar unreachable for a while
/// still learns how each approval was settled.
fn relay_options(document: &PlanDocument) -> SidecarDecisionsOptions {
    let defaults = SidecarDecisionsOptions::default();
    let settle_timeout = flush_timeout(document).max(defaults.settle_timeout);
    SidecarDecisionsOptions {
        settle_timeout,
        // Enough tries to span the wait at the backoff's ceiling.
        settle_attempts: defaults.settle_attempts.max(
            u32::try_from(settle_timeout.as_secs() / defaults.backoff_max.as_secs().max(1) + 4)
                .unwrap_or(u32::MAX),
        ),
        ..defaults
    }
}

/// Who decides a pod run's requests: people through the sidecar's relay when the run has a
/// token (the relay too, to wait for its settlements), else nobody, said on standard error
/// when the run asks people.
fn pod_decisions(
    prepared: &Prepared,
    url: &str,
    document: &PlanDocument,
    token: Option<&str>,
    runtime: &tokio::runtime::Handle,
) -> (Arc<dyn DecisionSource>, Option<Arc<SidecarDecisions>>) {
    let asks = launch::asks_people(prepared);
    let why = match token {
        None => format!(
            "no `{}` file is next to the plan, so the sidecar's relay cannot be reached",
            launch::TOKEN_FILE
        ),
        Some(token) => match SidecarDecisions::new(
            url,
            &document.run.uid,
            token,
            relay_options(document),
            runtime,
        ) {
            Ok(relay) => {
                let relay = Arc::new(relay);
                return (relay.clone(), Some(relay));
            }
            Err(e) => format!("the sidecar's relay cannot be used ({e})"),
        },
    };
    if !asks.is_empty() {
        warn(&format!(
            "this run asks people ({}), but {why}: every request expires at once, which is a rejection (default deny)",
            asks.join(", ")
        ));
    }
    (Arc::new(Nobody::because(why)), None)
}

/// `orrery run --plan FILE`: a run in a runner pod.
fn run_plan(args: &RunArgs, plan: &Path) -> u8 {
    let mut deployment = match args.deployment.deployment() {
        Ok(d) => d,
        Err(e) => return end_before_start(args, e.to_string(), EXIT_UNREADABLE),
    };
    let document = match launch::read_plan_document(plan) {
        Ok(d) => d,
        Err(e) => return end_before_start(args, e.to_string(), EXIT_UNREADABLE),
    };
    // One process, one run: every log line of the pod names it.
    // And the run's trace (the operator gives the pod its W3C trace context; the sidecar
    // exports the trace), so a log line leads to the trace and back.
    let trace_id = std::env::var(orrery_crds::logging::TRACEPARENT_ENV)
        .ok()
        .and_then(|t| orrery_crds::logging::trace_id_of(&t).map(str::to_owned));
    let mut fields = vec![
        ("run_uid", document.run.uid.clone()),
        ("namespace", document.run.namespace.clone()),
        ("name", document.run.name.clone()),
    ];
    if let Some(trace_id) = trace_id {
        fields.push(("trace_id", trace_id));
    }
    orrery_crds::logging::set_process_fields(fields);
    deployment.limits = document.limits.clone();
    let prepared = match launch::prepare_document(&document) {
        Ok(p) => p,
        Err(e) => return end_before_start(args, e.to_string(), EXIT_INVALID),
    };
    let input = match launch::read_plan_input(plan) {
        Ok(i) => i,
        Err(e) => return end_before_start(args, e.to_string(), EXIT_UNREADABLE),
    };
    if let Err(too_long) = orrery_crds::run::check_input(&input) {
        return end_before_start(args, too_long.to_string(), EXIT_UNREADABLE);
    }
    let dry_run = match (args.dry_run_tools, args.tools) {
        (true, _) | (false, ToolsMode::DryRun) => true,
        (false, ToolsMode::Real) => false,
        (false, ToolsMode::Auto) => launch::all_models_scripted(&prepared),
    };
    let tools = if dry_run {
        RemoteTools::DryRun
    } else {
        RemoteTools::Real {
            pins: Arc::new(launch::document_pins(&document)),
        }
    };
    let factories =
        Factories::for_deployment(&deployment, tools, Arc::new(LocalSecrets::from_env()));
    let mut options = RunOptions::new(document.run.uid.clone());
    options.capture_content = document.capture_content;
    options.approval_timeout = Duration::from_secs(
        document
            .approval_timeout_seconds
            .clamp(1, MAX_APPROVAL_TIMEOUT.as_secs()),
    );
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(code) => return end_before_start(args, "cannot start the async runtime".into(), code),
    };
    let stdout: Box<dyn Write + Send> = Box::new(std::io::stdout());
    // Standard output first (`kubectl logs` shows the trace), then the sidecar: the writer
    // flushes them in this order after run.end.
    let mut sinks: Vec<Arc<dyn EventSink>> = vec![Arc::new(JsonLinesSink::new(stdout))];
    let token = plan_token(plan);
    let url = launch::sidecar_url(&document);
    let sidecar = token
        .as_deref()
        .and_then(|token| sidecar_sink(&url, &document, token, runtime.handle()));
    if let Some(sink) = &sidecar {
        sinks.push(sink.clone());
    }
    let (decisions, relay) = pod_decisions(
        &prepared,
        &url,
        &document,
        token.as_deref(),
        runtime.handle(),
    );
    let launch = Launch {
        deployment,
        factories,
        decisions,
        sinks,
        options,
    };
    let result = runtime.block_on(launch::launch(&prepared, input, launch));
    let code = match result {
        Ok(result) => {
            let summary = RunSummary {
                outcome: result.outcome,
                error: result.error,
                totals: result.totals,
                dropped: result.dropped,
            };
            write_summary(
                &args.termination_log,
                &summary,
                result.output.as_ref().map_or(0, String::len),
            );
            exit_code(result.outcome)
        }
        Err(e) => end_before_start(args, format!("cannot start the run: {e}"), EXIT_FAILED),
    };
    // The summary is written: now the sidecar gets what it does not have yet, for at most the
    // sink's flush timeout (one deadline with the writer's flush after run.end) and the
    // relay's settle timeout; a note on standard error says what did not get through.
    runtime.block_on(async {
        let events = async {
            if let Some(sink) = &sidecar {
                sink.wait().await;
            }
        };
        let settlements = async {
            let wait = relay_options(&document).settle_timeout;
            if let Some(relay) = &relay
                && !relay.wait(wait).await
            {
                warn("some approval settlements had not reached the sidecar when the runner stopped waiting for them");
            }
        };
        tokio::join!(events, settlements);
    });
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
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

    #[test]
    fn the_output_block_of_run_and_demo_shows_escapes_and_says_so() {
        let (block, note) = output_block("ok\x1b[2K\rdone\u{202e}", Style::plain());
        assert_eq!(block, "\n── output ──\nok\\x1b[2K\\rdone\\u{202e}\n");
        assert!(note.unwrap().contains("3 control or invisible characters"));
        let (block, note) = output_block("plain", Style::plain());
        assert_eq!((block.as_str(), note), ("\n── output ──\nplain\n", None));
    }
}
