//! `kubectl-orrery`: kubectl finds it on the PATH and runs it as `kubectl orrery …`.

use std::io::Read as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kubectl_orrery::{StartRequest, Target, cancel, connect, list, row, start, table};

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
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List runs: phase, composition and revision, owner, tokens, approvals waiting, age.
    Runs {
        /// Every namespace you may list.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
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

async fn run(cli: Cli) -> anyhow::Result<()> {
    let target = Target {
        kubeconfig: cli.kubeconfig,
        context: cli.context,
        namespace: cli.namespace,
    };
    let (client, namespace) = connect(&target).await?;
    match cli.command {
        Command::Runs { all_namespaces } => {
            let runs = list(&client, (!all_namespaces).then_some(namespace.as_str())).await?;
            if runs.is_empty() {
                if all_namespaces {
                    println!("No runs found in any namespace you may list.");
                } else {
                    println!("No runs found in {namespace}.");
                }
                return Ok(());
            }
            let now = jiff::Timestamp::now();
            let rows: Vec<_> = runs.iter().map(|r| row(r, now)).collect();
            print!("{}", table(&rows, all_namespaces));
        }
        Command::Start {
            composition,
            input,
            file,
            revision,
            approvers,
            capture_content,
        } => {
            let request = StartRequest {
                composition,
                revision,
                input: input_of(input, file)?,
                approvers,
                capture_content,
            };
            let name = start(&client, &namespace, &request).await?;
            println!("studiorun/{name} created in {namespace}");
        }
        Command::Cancel { run } => {
            cancel(&client, &namespace, &run).await?;
            println!("studiorun/{run} cancel requested");
        }
    }
    Ok(())
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
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
