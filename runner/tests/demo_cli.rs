//! `orrery demo` end to end: the real binary starts the demo fleet on free ports and runs the
//! critic-loop example through the real MCP and A2A clients; `--fleet-only` serves until a
//! signal or the end of stdin. Also what `orrery run` shares with it: the validator's report for
//! an invalid composition, and model endpoints checked by the network guard.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn orrery(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("the orrery binary runs")
}

fn events(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON event: {l}: {e}")))
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_demo_runs_the_critic_loop_with_real_mcp_and_a2a_calls_and_succeeds() {
    let out = orrery(&[
        "demo",
        "--output",
        "json",
        "--port-base",
        "0",
        "--capture-content",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let last = events.last().unwrap();
    assert_eq!(
        (&last["type"], &last["outcome"]),
        (&"run.end".into(), &"Succeeded".into())
    );

    let mcp = of_type(&events, "mcp.call");
    assert!(!mcp.is_empty(), "no mcp.call in {events:#?}");
    assert!(mcp.iter().all(|e| e["nodeId"] == "research"
        && e["entry"] == "demo-tools"
        && e["tool"] == "search_articles"
        && e["status"] == "ok"));

    let a2a = of_type(&events, "a2a.message");
    let outbound = a2a.iter().filter(|e| e["direction"] == "outbound").count();
    let completed = a2a
        .iter()
        .filter(|e| e["direction"] == "inbound" && e["taskState"] == "completed")
        .count();
    assert_eq!(outbound, 2, "the writer drafts, then revises: {a2a:#?}");
    assert!(completed >= 2, "{a2a:#?}");
    assert!(
        a2a.iter()
            .all(|e| e["entry"] == "demo-writer" && e["skill"] == "draft")
    );

    // The loop iterated once: the critic rejected, the writer revised, the critic approved.
    let loops = of_type(&events, "loop.iteration");
    assert_eq!(loops.len(), 1, "{loops:#?}");
    assert_eq!(
        (&loops[0]["iteration"], &loops[0]["stopped"]),
        (&1.into(), &false.into())
    );
    let routes: Vec<(&str, &str)> = of_type(&events, "route.taken")
        .iter()
        .map(|e| {
            (
                e["label"].as_str().unwrap(),
                e["to"].as_str().unwrap_or("(end)"),
            )
        })
        .collect();
    assert_eq!(routes, [("rejected", "writer"), ("approved", "(end)")]);
    assert_eq!(last["totals"]["remoteCalls"].as_u64(), Some(2), "{last}");

    // The critic's "Rejected:" line made the writer revise its draft.
    let output = last["output"].as_str().unwrap();
    assert!(output.contains("(revised)"), "{output}");
    assert!(output.contains("Changes from review"), "{output}");
}

#[test]
fn the_human_demo_trace_shows_the_remote_calls_the_loop_and_the_output() {
    let out = orrery(&[
        "demo",
        "--port-base",
        "0",
        "--input",
        "PostgreSQL autovacuum",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    for want in [
        "▶ run critic-loop (CriticLoop)",
        "⇄ mcp demo-tools.search_articles Ok",
        "⇢ a2a demo-writer.draft",
        "↻ loop critic → writer 1/3",
        "■ Succeeded",
        "── output ──",
        "(revised)",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    let err = stderr(&out);
    assert!(
        err.contains("demo fleet: demo-tools (MCP) at http://127.0.0.1:"),
        "{err}"
    );
}

#[test]
fn a_port_base_in_use_stops_the_demo_with_the_address() {
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let out = orrery(&["demo", "--port-base", &port, "--output", "json"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty(), "nothing ran");
    let err = stderr(&out);
    assert!(
        err.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{err}"
    );
}

#[test]
fn busy_default_ports_make_the_demo_run_on_free_ports() {
    // Hold 7801 unless something else already does: either way the default port is busy.
    let _held = TcpListener::bind("127.0.0.1:7801");
    let out = orrery(&["demo", "--output", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("is busy; the demo fleet uses free ports"),
        "{err}"
    );
    assert!(!err.contains("at http://127.0.0.1:7801/"), "{err}");
    assert!(!of_type(&events(&out), "mcp.call").is_empty());
}

/// The `--fleet-only` process, killed if a test fails before it stops.
struct FleetProcess {
    child: Child,
    tools: SocketAddr,
    writer: SocketAddr,
    banner: Vec<String>,
}

impl Drop for FleetProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn addr_in(line: &str) -> SocketAddr {
    let start = line.find("http://").unwrap() + "http://".len();
    let rest = &line[start..];
    let end = rest.find('/').unwrap_or(rest.len());
    rest[..end].parse().unwrap()
}

fn start_fleet_only(extra: &[&str]) -> FleetProcess {
    let mut child = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["demo", "--fleet-only", "--port-base", "0"])
        .args(extra)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let (mut tools, mut writer, mut banner) = (None, None, Vec::new());
    // The banner's last line names examples/registry/.
    while !banner
        .last()
        .is_some_and(|l: &String| l.contains("examples/registry/"))
    {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the fleet prints its URLs and commands");
        if line.contains("demo-tools ") {
            tools = Some(addr_in(&line));
        } else if line.contains("demo-writer ") {
            writer = Some(addr_in(&line));
        }
        banner.push(line);
    }
    FleetProcess {
        child,
        tools: tools.expect("the banner names demo-tools' URL"),
        writer: writer.expect("the banner names demo-writer's URL"),
        banner,
    }
}

/// A plain HTTP GET: (status line, body).
fn get(addr: SocketAddr, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let status = reply.lines().next().unwrap_or_default().to_owned();
    let body = reply
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Waits for the process to exit; its exit code and stderr.
fn wait_exit(fleet: &mut FleetProcess) -> (Option<i32>, String) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = fleet.child.try_wait().unwrap() {
            let mut err = String::new();
            fleet
                .child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status.code(), err);
        }
        assert!(Instant::now() < deadline, "the fleet did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn assert_serving(fleet: &FleetProcess) {
    let (status, body) = get(fleet.writer, "/.well-known/agent-card.json");
    assert!(status.contains(" 200 "), "{status}");
    let card: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(card["name"], "demo-writer");
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        format!("http://{}", fleet.writer)
    );
    TcpStream::connect(fleet.tools).expect("demo-tools listens");
}

fn assert_ports_released(fleet: &FleetProcess) {
    for addr in [fleet.tools, fleet.writer] {
        TcpListener::bind(addr).unwrap_or_else(|e| panic!("{addr} is still in use: {e}"));
    }
}

#[test]
fn the_fleet_only_mode_serves_until_sigterm_or_sigint_and_stops_cleanly() {
    for signal in ["-TERM", "-INT"] {
        let mut fleet = start_fleet_only(&[]);
        assert_serving(&fleet);
        let killed = Command::new("kill")
            .args([signal, &fleet.child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let (code, err) = wait_exit(&mut fleet);
        assert_eq!(code, Some(0), "{signal}: {err}");
        assert!(err.contains("stopping the demo fleet"), "{signal}: {err}");
        assert_ports_released(&fleet);
    }
}

#[test]
fn the_fleet_only_mode_stops_at_the_end_of_stdin_when_asked() {
    let mut fleet = start_fleet_only(&["--exit-on-stdin-eof"]);
    assert_serving(&fleet);
    drop(fleet.child.stdin.take());
    let (code, err) = wait_exit(&mut fleet);
    assert_eq!(code, Some(0), "{err}");
    assert_ports_released(&fleet);
}

#[test]
fn the_fleet_only_mode_prints_its_urls_and_commands_to_try_them() {
    let fleet = start_fleet_only(&[]);
    let banner = fleet.banner.join("\n");
    let card = format!("http://{}/.well-known/agent-card.json", fleet.writer);
    let mcp = format!("http://{}/mcp", fleet.tools);
    assert!(banner.contains(&format!("curl -s {card}")), "{banner}");
    assert!(
        banner.contains(&format!("curl -s http://{} ", fleet.writer)),
        "{banner}"
    );
    assert!(banner.contains(&format!("curl -s {mcp} ")), "{banner}");
    // Not on 7801/7802: the examples' registry does not match, and the banner says so.
    assert!(banner.contains("names ports 7801 and 7802"), "{banner}");
    let out = orrery(&["demo", "--fleet-only", "--input", "x"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "--fleet-only runs nothing, so --input is refused"
    );
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("orrery-demo-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn orrery_run_prints_the_validators_own_report_for_an_invalid_composition() {
    let dir = temp_dir("invalid");
    let file = dir.join("bad.yaml");
    std::fs::write(
        &file,
        "apiVersion: studio.orrery.dev/v1alpha1\nkind: Composition\nmetadata: {name: bad}\nspec:\n  pattern: Pipeline\n  nodes:\n    - {id: a, kind: LLMAgent, model: scripted, tools: [\"mcp:nowhere.x\"]}\n",
    )
    .unwrap();
    let registry = examples().join("registry").display().to_string();
    let file = file.to_str().unwrap();
    let validate = orrery(&["validate", file, &registry]);
    let run = orrery(&[
        "run", "-f", file, "-f", &registry, "--input", "x", "--output", "json",
    ]);
    assert_eq!(
        (validate.status.code(), run.status.code()),
        (Some(1), Some(1))
    );
    assert!(run.stdout.is_empty(), "nothing ran");
    let report = String::from_utf8(validate.stdout).unwrap();
    assert!(
        report.contains("spec.nodes[0].tools[0]") && report.contains("✗ invalid"),
        "{report}"
    );
    assert_eq!(stderr(&run), report);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn orrery_run_refuses_a_model_endpoint_the_network_guard_refuses_before_any_call() {
    let dir = temp_dir("guard");
    let file = dir.join("metadata-model.yaml");
    std::fs::write(
        &file,
        "apiVersion: studio.orrery.dev/v1alpha1\nkind: Composition\nmetadata: {name: one}\nspec:\n  pattern: Pipeline\n  nodes:\n    - {id: a, kind: LLMAgent, model: sneaky}\n---\n\
         apiVersion: studio.orrery.dev/v1alpha1\nkind: RegistryEntry\nmetadata: {name: sneaky}\nspec:\n  model:\n    provider: OpenAI\n    model: m\n    baseUrl: https://169.254.169.254/v1\n",
    )
    .unwrap();
    let out = orrery(&[
        "run",
        "-f",
        file.to_str().unwrap(),
        "--input",
        "x",
        "--output",
        "json",
    ]);
    // Refused by the validator, before any model is set up (exit 1: invalid, nothing ran),
    // with the guard's own verdict on the address (rule 5.27).
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "nothing ran");
    let err = stderr(&out);
    assert!(
        err.contains("unreachable_address")
            && err.contains("spec.model.baseUrl")
            && err.contains("network guard")
            && err.contains("sneaky"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
