//! `orrery demo`: the quickstart. Starts the demo fleet in-process on loopback (`demo-tools`,
//! an MCP server, and `demo-writer`, an A2A agent) and runs the critic-loop release-notes
//! example on it end to end: a Scripted model, the real MCP and A2A clients through the network
//! guard, and the live trace of `orrery run` (`mcp.call` and `a2a.message` events included).
//! The example and its registry are embedded, so the command works from any directory.
//!
//! `--fleet-only` starts the fleet and keeps it running for manual use until Ctrl-C.
//!
//! Exit codes as `orrery run`: 0 Succeeded, 1 invalid, 2 usage, 3 Failed (or the fleet could not
//! start), 4 BudgetExhausted, 5 Rejected, 130 Cancelled.

use super::run::{
    EXIT_FAILED, RunOutput, error, launch_and_report, prepare_failed, runtime, terminal,
};
use super::{EXIT_OK, EXIT_UNREADABLE};
use clap::Args;
use orrery_crds::manifest::{Format, ManifestSet, Resource};
use orrery_runner::demo::{Fleet, FleetConfig, FleetError, start_fleet};
use orrery_runner::engine::RunOptions;
use orrery_runner::launch::{self, Deployment, Factories, Launch, Prepared, RemoteTools};
use orrery_runner::pin::store::PinStore;
use orrery_runner::secrets::LocalSecrets;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The run's input when `--input` is not given.
pub const DEFAULT_INPUT: &str = "Kafka consumer lag";
/// The example's MCP entry (`mcp:demo-tools.*`).
const TOOLS_ENTRY: &str = "demo-tools";
/// The example's A2A entry (`a2a:demo-writer.draft`).
const WRITER_ENTRY: &str = "demo-writer";
/// The embedded manifests: the critic-loop example and the registry entries it uses.
const EMBEDDED: [(&str, &str); 4] = [
    (
        "examples/compositions/critic-loop.yaml",
        include_str!("../../../examples/compositions/critic-loop.yaml"),
    ),
    (
        "examples/registry/demo-tools.yaml",
        include_str!("../../../examples/registry/demo-tools.yaml"),
    ),
    (
        "examples/registry/demo-writer.yaml",
        include_str!("../../../examples/registry/demo-writer.yaml"),
    ),
    (
        "examples/registry/scripted.yaml",
        include_str!("../../../examples/registry/scripted.yaml"),
    ),
];

/// Arguments of `orrery demo`.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit codes: 0 Succeeded, 1 invalid composition, 2 usage, 3 Failed (or the fleet \
could not start), 4 BudgetExhausted, 5 Rejected, 130 Cancelled."
)]
pub struct DemoArgs {
    /// The run's input: the topic the release notes are about.
    #[arg(long, default_value = DEFAULT_INPUT)]
    pub input: String,
    /// `human` (a live trace) or `json` (one event per line; the last line is `run.end`).
    #[arg(long, short = 'o', value_enum, default_value_t = RunOutput::Human)]
    pub output: RunOutput,
    /// Record arguments, results and text in events (redacted, cut to 2 KB per field).
    #[arg(long)]
    pub capture_content: bool,
    /// Ports: demo-tools on PORT, demo-writer on PORT+1 (0: free ports chosen by the system).
    /// Without it 7801 and 7802, the ports examples/registry/ names; when those are busy the
    /// demo run uses free ports instead (the registry entries are pointed at them in memory).
    #[arg(long, value_name = "PORT")]
    pub port_base: Option<u16>,
    /// Only start the fleet and keep it running (Ctrl-C or SIGTERM stops it), for curl,
    /// the official SDK clients or `orrery run --tools real`.
    #[arg(long, conflicts_with_all = ["input", "output", "capture_content"])]
    pub fleet_only: bool,
    /// With --fleet-only: also stop when standard input reaches its end (for harnesses that
    /// keep a pipe open to it).
    #[arg(long, requires = "fleet_only")]
    pub exit_on_stdin_eof: bool,
}

/// Runs `orrery demo`.
pub fn run(args: &DemoArgs) -> u8 {
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let code = runtime.block_on(async {
        let fleet = match start(args.port_base, !args.fleet_only).await {
            Ok(f) => f,
            Err(e) => {
                error(&format!("cannot start the demo fleet: {e}"));
                return EXIT_FAILED;
            }
        };
        let code = if args.fleet_only {
            serve(&fleet, args.exit_on_stdin_eof).await
        } else {
            run_example(args, &fleet).await
        };
        match fleet.shutdown().await {
            Ok(()) => code,
            Err(e) => {
                error(&format!("the demo fleet did not stop cleanly: {e}"));
                if code == EXIT_OK { EXIT_FAILED } else { code }
            }
        }
    });
    // A stdin reader may still be blocked; never wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

/// Starts the fleet on `port_base` and the next port; without one on the default ports,
/// falling back to free ports when `fallback` and the default ones are busy.
async fn start(port_base: Option<u16>, fallback: bool) -> Result<Fleet, FleetError> {
    let config = FleetConfig::from_env()?;
    let Some(base) = port_base else {
        return match start_fleet(config.clone()).await {
            Err(FleetError::Bind { addr, .. }) if fallback => {
                eprintln!(
                    "note: {addr} is busy; the demo fleet uses free ports instead (start it with --port-base to choose)"
                );
                start_fleet(FleetConfig {
                    tools_port: 0,
                    writer_port: 0,
                    ..config
                })
                .await
            }
            other => other,
        };
    };
    let writer_port = if base == 0 { 0 } else { base.saturating_add(1) };
    start_fleet(FleetConfig {
        tools_port: base,
        writer_port,
        ..config
    })
    .await
}

/// The embedded example, its registry entries pointed at the running fleet.
pub fn example_manifests(tools_url: &str, writer_card_url: &str) -> Result<ManifestSet, String> {
    let mut set = ManifestSet::default();
    for (path, text) in EMBEDDED {
        set.add_text(Path::new(path), text, Format::Yaml)
            .map_err(|e| format!("the embedded example {path} does not load: {e}"))?;
    }
    let (mut tools, mut writer) = (false, false);
    for loaded in &mut set.resources {
        let Resource::RegistryEntry(entry) = &mut loaded.resource else {
            continue;
        };
        let spec = &mut entry.spec;
        match (
            loaded.reference.name.as_str(),
            spec.mcp.as_mut(),
            spec.a2a.as_mut(),
        ) {
            (TOOLS_ENTRY, Some(mcp), _) => {
                mcp.url = tools_url.to_owned();
                tools = true;
            }
            (WRITER_ENTRY, _, Some(a2a)) => {
                a2a.card_url = writer_card_url.to_owned();
                writer = true;
            }
            _ => {}
        }
    }
    if !(tools && writer) {
        return Err(format!(
            "the embedded registry lacks the MCP entry {TOOLS_ENTRY} or the A2A entry {WRITER_ENTRY}"
        ));
    }
    Ok(set)
}

/// Validates and plans the embedded example against the fleet.
fn prepare(fleet: &Fleet, deployment: &Deployment) -> Result<Prepared, u8> {
    let set = example_manifests(&fleet.tools_url(), &fleet.writer_card_url()).map_err(|e| {
        error(&e);
        EXIT_FAILED
    })?;
    launch::prepare_set(set, None, &deployment.limits).map_err(prepare_failed)
}

/// Runs the critic-loop example on the fleet with the real remote tools.
async fn run_example(args: &DemoArgs, fleet: &Fleet) -> u8 {
    eprintln!(
        "demo fleet: demo-tools (MCP) at {}, demo-writer (A2A) at {}",
        fleet.tools_url(),
        fleet.writer_card_url()
    );
    // The environment's deployment settings (network, redaction) with the default limits.
    let deployment = match Deployment::from_env() {
        Ok(d) => d,
        Err(e) => {
            error(&e.to_string());
            return EXIT_UNREADABLE;
        }
    };
    let prepared = match prepare(fleet, &deployment) {
        Ok(p) => p,
        Err(code) => return code,
    };
    // The fleet is ours and in-process: its card and tools are pinned for this run only, so a
    // pin left by another version of the fleet never stops the demo.
    let tools = RemoteTools::Real {
        pins: Arc::new(PinStore::in_memory()),
    };
    let factories =
        Factories::for_deployment(&deployment, tools, Arc::new(LocalSecrets::from_env()));
    let mut options = RunOptions::new(launch::new_run_id());
    options.capture_content = args.capture_content;
    let (sinks, decisions) = terminal(args.output);
    let launch = Launch {
        deployment,
        factories,
        decisions,
        sinks,
        options,
    };
    launch_and_report(&prepared, args.input.clone(), launch, args.output).await
}

/// Keeps the fleet running until SIGINT/SIGTERM (or the end of standard input when asked).
async fn serve(fleet: &Fleet, exit_on_stdin_eof: bool) -> u8 {
    // The handlers are installed before the banner: whoever reads it may signal at once, and a
    // signal before them would end the process instead of stopping the fleet.
    let signalled = launch::shutdown_signal();
    // A closed pipe (`| head`) is no reason to stop the fleet.
    let _ = writeln!(std::io::stdout().lock(), "{}", fleet_banner(fleet));
    let stdin_closed = async {
        if !exit_on_stdin_eof {
            return std::future::pending::<()>().await;
        }
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        // A plain thread: a read blocked on stdin must never keep the runtime from stopping.
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
            let _ = tx.send(());
        });
        let _ = rx.await;
    };
    tokio::select! {
        () = signalled => {}
        () = stdin_closed => {}
    }
    eprintln!("stopping the demo fleet…");
    EXIT_OK
}

/// What `--fleet-only` prints: the endpoints and commands to try them.
fn fleet_banner(fleet: &Fleet) -> String {
    let tools = fleet.tools_url();
    let card = fleet.writer_card_url();
    let rpc = fleet.writer_rpc_url();
    let default_ports = fleet.tools_addr().port() == orrery_runner::demo::fleet::DEFAULT_TOOLS_PORT
        && fleet.writer_addr().port() == orrery_runner::demo::fleet::DEFAULT_WRITER_PORT;
    let run_line = if default_ports {
        "  orrery run -f examples/compositions/critic-loop.yaml -f examples/registry/ --tools real --input \"Kafka consumer lag\"".to_owned()
    } else {
        format!(
            "  (examples/registry/ names ports 7801 and 7802; for `orrery run --tools real` on these \
ports, copy demo-tools.yaml and demo-writer.yaml and set their urls to {tools} and {card})"
        )
    };
    format!(
        "demo fleet running (Ctrl-C to stop)\n\
         \x20 demo-tools   MCP, streamable HTTP  {tools}\n\
         \x20 demo-writer  A2A 1.0 agent card    {card}\n\
         \x20              JSON-RPC              {rpc}\n\
         \n\
         Try:\n\
         \x20 curl -s {card}\n\
         \x20 curl -s {rpc} -H 'Content-Type: application/json' -H 'A2A-Version: 1.0' -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\",\"params\":{{\"message\":{{\"messageId\":\"m1\",\"role\":\"ROLE_USER\",\"parts\":[{{\"text\":\"Kafka consumer lag\"}}]}}}}}}'\n\
         \x20 curl -s {tools} -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{{}},\"clientInfo\":{{\"name\":\"curl\",\"version\":\"1\"}}}}}}'\n\
         {run_line}"
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use orrery_crds::manifest::check;
    use orrery_crds::validate::DeploymentLimits;

    const TOOLS: &str = "http://127.0.0.1:40001/mcp";
    const CARD: &str = "http://127.0.0.1:40002/.well-known/agent-card.json";

    #[test]
    fn the_embedded_example_validates_and_plans_the_critic_loop() {
        let set = example_manifests(TOOLS, CARD).unwrap();
        assert!(check(&set, &DeploymentLimits::default()).is_valid());
        let prepared = launch::prepare_set(set, None, &DeploymentLimits::default()).unwrap();
        assert_eq!(
            (prepared.name.as_str(), prepared.pattern.as_str()),
            ("critic-loop", "CriticLoop")
        );
        let tools: Vec<&str> = prepared
            .plan
            .nodes
            .iter()
            .flat_map(|n| n.tools.iter().map(|t| t.reference.as_str()))
            .collect();
        assert!(
            tools.contains(&"mcp:demo-tools.search_articles"),
            "{tools:?}"
        );
        assert!(tools.contains(&"a2a:demo-writer.draft"), "{tools:?}");
        assert!(launch::all_models_scripted(&prepared));
    }

    #[test]
    fn the_registry_entries_point_at_the_running_fleet() {
        let prepared = launch::prepare_set(
            example_manifests(TOOLS, CARD).unwrap(),
            None,
            &DeploymentLimits::default(),
        )
        .unwrap();
        let mcp = prepared.entries[TOOLS_ENTRY].spec.mcp.as_ref().unwrap();
        let a2a = prepared.entries[WRITER_ENTRY].spec.a2a.as_ref().unwrap();
        assert_eq!((mcp.url.as_str(), a2a.card_url.as_str()), (TOOLS, CARD));
    }
}
