//! `kubectl-orrery`: kubectl finds it on the PATH and runs it as `kubectl orrery …`.

use std::io::{IsTerminal as _, Read as _, Write as _};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use kubectl_orrery::approvals::{self, DecisionRequest, Shown, TakenUp};
use kubectl_orrery::logs::{self, Ending, Output, Printer};
use kubectl_orrery::sidecar::{Lookup, Sidecar};
use kubectl_orrery::{
    Connection, PluginError, StartRequest, Target, WatchTable, cancel, connect, list_at, row,
    run_name, start, table, watch_runs,
};
use orrery_crds::approval::{ApprovalKind, ApprovalList, DecisionVerb};

/// Orrery Studio's runs from the terminal, as yourself: the kubeconfig, context and namespace are
/// kubectl's, so RBAC and the admission policies decide as for kubectl.
#[derive(Debug, Parser)]
#[command(name = "kubectl orrery", version)]
struct Cli {
    /// The kubeconfig to use (else KUBECONFIG, else ~/.kube/config).
    #[arg(long, global = true)]
    kubeconfig: Option<std::path::PathBuf>,
    /// The kubeconfig context to use (else its current context).
    #[arg(long, global = true)]
    context: Option<String>,
    /// The namespace (else the context's, else default).
    #[arg(short = 'n', long, global = true)]
    namespace: Option<String>,
    /// A bearer token to use instead of the kubeconfig user's credentials (as kubectl's).
    #[arg(long, global = true, env = "ORRERY_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// The sidecar's URL (else found from the chart's Service).
    #[arg(long, global = true, env = "ORRERY_SIDECAR")]
    sidecar: Option<String>,
    /// The namespace the chart is installed in (else the current one, then orrery-system).
    #[arg(long, global = true)]
    sidecar_namespace: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum OutputFormat {
    /// As `orrery run` prints a trace.
    Text,
    /// One event's JSON a line.
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List runs: phase, composition and revision, owner, tokens, approvals waiting, age.
    Runs {
        /// Every namespace you may list.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        /// After the list, a line for each change.
        #[arg(short = 'w', long)]
        watch: bool,
    },
    /// Start a run of a Composition, owned by you.
    Start {
        /// The Composition to run.
        composition: String,
        /// The run's input.
        #[arg(long, conflicts_with = "file")]
        input: Option<String>,
        /// Read the input from a file (`-` for standard input).
        #[arg(short = 'f', long)]
        file: Option<std::path::PathBuf>,
        /// A revision of the Composition (else its current one).
        #[arg(long)]
        revision: Option<i64>,
        /// A user who may decide the run's approvals besides you (repeat for more).
        #[arg(long = "approver")]
        approvers: Vec<String>,
        /// Record prompts and replies in the run's trace.
        #[arg(long)]
        capture_content: bool,
        /// Then follow its trace live, as `logs -f`.
        #[arg(long)]
        follow: bool,
        /// `name`: print only `studiorun/NAME` (for scripts, as `kubectl create -o name`).
        #[arg(short = 'o', long, value_parser = ["name"])]
        output: Option<String>,
    },
    /// Print a run's trace, as `orrery run` prints it.
    Logs {
        /// The run.
        run: String,
        /// Follow it live until it ends (resuming after a dropped connection).
        #[arg(short = 'f', long)]
        follow: bool,
        /// text, or json (one event a line).
        #[arg(short = 'o', long, value_enum, default_value = "text")]
        output: OutputFormat,
    },
    /// Show a run's pending approvals: the text of each (escapes visible), kind, node, expiry,
    /// and its digest computed here and checked against the run's status.
    Approvals {
        /// The run.
        run: String,
    },
    /// Approve a pending approval, after showing its text.
    Approve {
        /// The run.
        run: String,
        /// The approval (else the only one waiting).
        id: Option<String>,
        /// Do not ask; with --digest, do not read the text either (the API server checks it).
        #[arg(short = 'y', long)]
        yes: bool,
        /// The digest of the text you read (from `approvals`).
        #[arg(long)]
        digest: Option<String>,
        /// A comment recorded with the decision.
        #[arg(long)]
        comment: Option<String>,
    },
    /// Reject a pending approval (a rejected edge's node receives the comment).
    Reject {
        /// The run.
        run: String,
        /// The approval (else the only one waiting).
        id: Option<String>,
        /// Do not ask, and do not read the text.
        #[arg(short = 'y', long)]
        yes: bool,
        /// Why (the node that asked receives it).
        #[arg(long)]
        comment: Option<String>,
    },
    /// Answer a remote agent's question (an Input approval), after showing it.
    Answer {
        /// The run.
        run: String,
        /// The approval.
        id: String,
        /// The answer.
        text: String,
        /// Do not ask; with --digest, do not read the question either.
        #[arg(short = 'y', long)]
        yes: bool,
        /// The digest of the question you read.
        #[arg(long)]
        digest: Option<String>,
    },
    /// Ask the operator to cancel a run.
    Cancel {
        /// The run.
        run: String,
    },
}

fn input_of(input: Option<String>, file: Option<std::path::PathBuf>) -> anyhow::Result<String> {
    match (input, file) {
        (Some(text), _) => Ok(text),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text)?;
            Ok(text)
        }
        (None, Some(path)) => std::fs::read_to_string(&path)
            .map_err(|e| anyhow::anyhow!("cannot read the input from {}: {e}", path.display())),
        (None, None) => {
            anyhow::bail!("give the run's input: --input TEXT, or -f FILE (- for standard input)")
        }
    }
}

struct Session {
    cx: Connection,
    lookup: Lookup,
}

impl Session {
    async fn sidecar(&self) -> Result<Sidecar, PluginError> {
        Sidecar::find(
            &self.cx.client,
            &self.cx.config,
            &self.lookup,
            &self.cx.namespace,
        )
        .await
    }

    /// The run's pending approvals, with their text read from the sidecar.
    async fn shown(&self, run: &str) -> Result<Vec<Shown>, PluginError> {
        let ns = &self.cx.namespace;
        let studio_run = approvals::run_of(&self.cx.client, ns, run).await?;
        let sidecar = self.sidecar().await?;
        let list: ApprovalList = sidecar
            .get_json(
                &format!("reading the approvals of studiorun {run} in {ns}"),
                &format!("/api/v1/runs/{ns}/{run}/approvals"),
            )
            .await?;
        Ok(approvals::join(&studio_run, Some(&list)))
    }

    async fn follow(&self, run: &str, output: Output) -> Result<Ending, PluginError> {
        let sidecar = self.sidecar().await?;
        let mut printer = Printer::stdout(output);
        logs::follow(
            &sidecar,
            &self.cx.client,
            &self.cx.namespace,
            run,
            0,
            &mut printer,
        )
        .await
    }
}

/// Asks on the terminal; refuses without one.
fn confirm(question: &str) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "{question} needs a yes, and standard input is not a terminal: read the text above, then run again with --yes"
        );
    }
    print!("{question} [y/N] ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes"))
}

fn ending_line(run: &str, ending: &Ending) -> Option<String> {
    match ending {
        Ending::Phase(phase) => Some(format!(
            "studiorun/{run} ended {phase} without a run.end event (see kubectl describe studiorun {run})"
        )),
        Ending::RunEnd(_) | Ending::Stored => None,
    }
}

/// Shows the approval the decision is about and returns it, unless `--yes` with `--digest`.
async fn read_before_deciding(
    session: &Session,
    run: &str,
    id: Option<&str>,
    skip_reading: bool,
) -> anyhow::Result<Option<Shown>> {
    if skip_reading {
        return Ok(None);
    }
    let shown = session.shown(run).await?;
    let picked = approvals::pick(&shown, run, id)?.clone();
    print!("{}", approvals::render(&picked, jiff::Timestamp::now()));
    Ok(Some(picked))
}

async fn decide(
    session: &Session,
    run: &str,
    request: DecisionRequest,
    ask: Option<String>,
) -> anyhow::Result<()> {
    if let Some(question) = ask
        && !confirm(&question)?
    {
        println!("Nothing decided.");
        return Ok(());
    }
    let ns = &session.cx.namespace;
    // Only if the sidecar is found: without it the decision is waited for as before.
    let sidecar = session.sidecar().await.ok();
    let refused = async |index: u64| {
        let list: ApprovalList = sidecar
            .as_ref()?
            .get_json(
                &format!("reading the approvals of studiorun {run} in {ns}"),
                &format!("/api/v1/runs/{ns}/{run}/approvals"),
            )
            .await
            .ok()?;
        approvals::refusal_in(&list, &request.id, index)
    };
    let taken = approvals::decide(&session.cx.client, ns, run, &request, refused).await?;
    let verb = match (request.verb, request.answer.is_some()) {
        (DecisionVerb::Approve, true) => "answered",
        (DecisionVerb::Approve, false) => "approved",
        (DecisionVerb::Reject, _) => "rejected",
    };
    match taken {
        TakenUp::Yes(phase) => println!(
            "approval {} of studiorun/{run} {verb}; the run took it up (phase {phase})",
            request.id
        ),
        TakenUp::NotYet => println!(
            "approval {} of studiorun/{run} {verb}: recorded in the run's status; the run has not taken it up yet (kubectl orrery logs -f {run} shows when it does)",
            request.id
        ),
        TakenUp::Refused(why) => anyhow::bail!(
            "approval {} of studiorun/{run}: the decision was recorded in the run's status but not taken: {why}",
            request.id
        ),
    }
    Ok(())
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let target = Target {
        kubeconfig: cli.kubeconfig,
        context: cli.context,
        namespace: cli.namespace,
        token: cli.token,
    };
    let mut command = cli.command;
    match &mut command {
        Command::Logs { run, .. }
        | Command::Approvals { run }
        | Command::Approve { run, .. }
        | Command::Reject { run, .. }
        | Command::Answer { run, .. }
        | Command::Cancel { run } => *run = run_name(run).to_owned(),
        Command::Runs { .. } | Command::Start { .. } => {}
    }
    let cx = connect(&target).await?;
    let session = Session {
        lookup: Lookup {
            url: cli.sidecar,
            namespace: cli.sidecar_namespace,
        },
        cx,
    };
    let namespace = session.cx.namespace.clone();
    let client = session.cx.client.clone();
    match command {
        Command::Runs {
            all_namespaces,
            watch,
        } => {
            let scope = (!all_namespaces).then_some(namespace.as_str());
            let (runs, version) = list_at(&client, scope).await?;
            let now = jiff::Timestamp::now();
            let rows: Vec<_> = runs.iter().map(|r| row(r, now)).collect();
            if !watch {
                if runs.is_empty() {
                    if all_namespaces {
                        println!("No runs found in any namespace you may list.");
                    } else {
                        println!("No runs found in {namespace}.");
                    }
                } else {
                    print!("{}", table(&rows, all_namespaces));
                }
                return Ok(ExitCode::SUCCESS);
            }
            let layout = WatchTable::new(&rows, all_namespaces);
            print!("{}", layout.header());
            for r in &rows {
                print!("{}", layout.row(r));
            }
            std::io::stdout().flush()?;
            watch_runs(&client, scope, &version, |changed, deleted| {
                let mut r = row(changed, jiff::Timestamp::now());
                if deleted {
                    r.phase = "Deleted".to_owned();
                }
                print!("{}", layout.row(&r));
                let _ = std::io::stdout().flush();
            })
            .await?;
        }
        Command::Start {
            composition,
            input,
            file,
            revision,
            approvers,
            capture_content,
            follow,
            output,
        } => {
            let request = StartRequest {
                composition,
                revision,
                input: input_of(input, file)?,
                approvers,
                capture_content,
            };
            let name = start(&client, &namespace, &request).await?;
            if output.is_some() {
                println!("studiorun/{name}");
            } else {
                println!("studiorun/{name} created in {namespace}");
            }
            if follow {
                let ending = session.follow(&name, Output::Text).await?;
                if let Some(line) = ending_line(&name, &ending) {
                    println!("{line}");
                }
            }
        }
        Command::Logs {
            run,
            follow,
            output,
        } => {
            let output = match output {
                OutputFormat::Text => Output::Text,
                OutputFormat::Json => Output::Json,
            };
            let ending = if follow {
                session.follow(&run, output).await?
            } else {
                let sidecar = session.sidecar().await?;
                logs::stored(&sidecar, &namespace, &run, &mut Printer::stdout(output)).await?
            };
            if let Some(line) = ending_line(&run, &ending)
                && output == Output::Text
            {
                println!("{line}");
            }
        }
        Command::Approvals { run } => {
            let shown = session.shown(&run).await?;
            if shown.is_empty() {
                println!("studiorun/{run} has no approval waiting.");
            }
            let now = jiff::Timestamp::now();
            let texts: Vec<String> = shown.iter().map(|s| approvals::render(s, now)).collect();
            print!("{}", texts.join("\n"));
            if shown.iter().any(|s| !s.digest_checked()) {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Approve {
            run,
            id,
            yes,
            digest,
            comment,
        } => {
            let picked =
                read_before_deciding(&session, &run, id.as_deref(), yes && digest.is_some())
                    .await?;
            let (id, digest) = match (picked, digest) {
                (None, Some(digest)) => match id {
                    Some(id) => (id, digest),
                    None => anyhow::bail!(
                        "name the approval with --digest: kubectl orrery approve {run} ID --yes --digest DIGEST"
                    ),
                },
                (None, None) => anyhow::bail!("nothing to approve"),
                (Some(shown), given) => {
                    if !shown.digest_checked() {
                        anyhow::bail!(
                            "not approving: the text read does not hash to the digest in the run's status (see above)"
                        );
                    }
                    if !shown.pending.complete {
                        anyhow::bail!(
                            "not approving: the text is over 128 KiB and could not be shown whole; it can only be rejected"
                        );
                    }
                    if let Some(given) = given
                        && !given.eq_ignore_ascii_case(&shown.pending.digest)
                    {
                        anyhow::bail!(
                            "not approving: --digest {given} is not the digest of the text shown above ({}); read it again",
                            shown.pending.digest
                        );
                    }
                    if shown.pending.kind == ApprovalKind::Input {
                        anyhow::bail!(
                            "approval {} is a remote agent's question: answer it with kubectl orrery answer {run} {} TEXT",
                            shown.pending.id,
                            shown.pending.id
                        );
                    }
                    (shown.pending.id.clone(), shown.pending.digest.clone())
                }
            };
            let ask = (!yes).then(|| format!("Approve {id} of studiorun/{run}?"));
            let request = DecisionRequest {
                id,
                verb: DecisionVerb::Approve,
                digest: Some(digest),
                comment,
                answer: None,
            };
            decide(&session, &run, request, ask).await?;
        }
        Command::Reject {
            run,
            id,
            yes,
            comment,
        } => {
            let id = match read_before_deciding(&session, &run, id.as_deref(), yes).await? {
                Some(shown) => shown.pending.id,
                None => match id {
                    Some(id) => id,
                    None => {
                        let studio_run = approvals::run_of(&client, &namespace, &run).await?;
                        let shown = approvals::join(&studio_run, None);
                        approvals::pick(&shown, &run, None)?.pending.id.clone()
                    }
                },
            };
            let ask = (!yes).then(|| format!("Reject {id} of studiorun/{run}?"));
            let request = DecisionRequest {
                id,
                verb: DecisionVerb::Reject,
                digest: None,
                comment,
                answer: None,
            };
            decide(&session, &run, request, ask).await?;
        }
        Command::Answer {
            run,
            id,
            text,
            yes,
            digest,
        } => {
            let digest = match read_before_deciding(
                &session,
                &run,
                Some(&id),
                yes && digest.is_some(),
            )
            .await?
            {
                Some(shown) => {
                    if !shown.digest_checked() {
                        anyhow::bail!(
                            "not answering: the question read does not hash to the digest in the run's status (see above)"
                        );
                    }
                    shown.pending.digest
                }
                None => digest.unwrap_or_default(),
            };
            let ask = (!yes).then(|| format!("Send this answer to {id} of studiorun/{run}?"));
            let request = DecisionRequest {
                id,
                verb: DecisionVerb::Approve,
                digest: Some(digest),
                comment: None,
                answer: Some(text),
            };
            decide(&session, &run, request, ask).await?;
        }
        Command::Cancel { run } => {
            cancel(&client, &namespace, &run).await?;
            println!("studiorun/{run} cancel requested");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
