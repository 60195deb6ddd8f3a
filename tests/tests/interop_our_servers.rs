//! The official SDK clients against OUR servers (issue 5, item 6): the a2a-sdk 1.3 client
//! against `demo-writer` (streaming and not, with a revision and a bearer token), and the PyPI
//! `mcp` 2.3 client against `demo-tools` (the 2026-07-28 discovery in `auto` mode and the
//! 2025-11-25 session handshake in `legacy` mode).
//!
//! The fleet is started in-process on free loopback ports with `orrery_runner::demo::start_fleet`;
//! the clients are `tests/peers/peer.sh a2a-check|mcp-check` (tests/peers/README.md), which
//! print one JSON object each. The peers are installed by `tests/peers/setup.sh`, which these
//! tests run themselves (cached: instant once installed). Without Python 3.10+, Node 20+ or npm
//! the tests fail with setup.sh's message: they never skip.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod interop_support;

use orrery_runner::demo::tools::TOOL_NAMES;
use orrery_runner::demo::{Fleet, FleetConfig, start_fleet};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// How long one client check may take (a cold Python start under load included).
const CHECK_TIMEOUT: Duration = Duration::from_secs(120);

fn peers_scripts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers")
}

/// Runs `peer.sh <check> <args>`: (exit code, the JSON it printed).
async fn check(which: &str, args: &[&str]) -> (Option<i32>, Value) {
    // Installs the peers once (or panics with setup.sh's message); peer.sh then finds them.
    interop_support::peers_dir();
    let child = tokio::process::Command::new(peers_scripts().join("peer.sh"))
        .arg(which)
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(CHECK_TIMEOUT, child)
        .await
        .unwrap_or_else(|_| panic!("{which} {args:?} did not finish within {CHECK_TIMEOUT:?}"))
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "{which} {args:?} printed no JSON (exit {:?})\nstdout: {stdout}\nstderr: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            )
        });
    (out.status.code(), json)
}

async fn fleet(config: FleetConfig) -> Fleet {
    start_fleet(config).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_a2a_client_streams_a_draft_from_demo_writer() {
    let fleet = fleet(FleetConfig::ephemeral()).await;
    let card = fleet.writer_card_url();
    let (code, out) = check("a2a-check", &[&card, "--text", "Kafka consumer lag"]).await;
    assert_eq!(code, Some(0), "{out:#}");
    assert_eq!(out["ok"], true);
    assert_eq!(out["card"]["name"], "demo-writer");
    assert_eq!(
        out["card"]["supportedInterfaces"][0]["url"],
        fleet.writer_rpc_url()
    );
    assert_eq!(
        out["card"]["supportedInterfaces"][0]["protocolVersion"],
        "1.0"
    );
    let rounds = out["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 1, "{out:#}");
    let kinds: Vec<&str> = rounds[0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"task"), "{kinds:?}");
    assert!(kinds.contains(&"artifact_update"), "a stream: {kinds:?}");
    assert_eq!(out["state"], "TASK_STATE_COMPLETED");
    assert!(
        out["text"]
            .as_str()
            .unwrap()
            .starts_with("# Release notes: Kafka consumer lag\n"),
        "{out:#}"
    );
    // GetTask read the same task back.
    assert_eq!(out["task"]["artifacts"][0]["name"], "draft");
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_a2a_client_gets_a_draft_and_a_revision_without_streaming() {
    let fleet = fleet(FleetConfig::ephemeral()).await;
    let card = fleet.writer_card_url();
    let (code, out) = check(
        "a2a-check",
        &[&card, "--text", "Kafka consumer lag", "--no-streaming"],
    )
    .await;
    assert_eq!(code, Some(0), "{out:#}");
    assert_eq!(out["rounds"][0]["events"], serde_json::json!(["task"]));
    assert_eq!(out["state"], "TASK_STATE_COMPLETED");
    let first = out["text"].as_str().unwrap().to_owned();
    assert!(
        first.starts_with("# Release notes: Kafka consumer lag\n"),
        "{first}"
    );

    // The draft sent back with a reviewer's feedback is revised, as in the critic loop.
    let request = format!("{first}\nFeedback: cite a source for every claim.");
    let (code, out) = check(
        "a2a-check",
        &[
            &card,
            "--text",
            &request,
            "--no-streaming",
            "--expect-text",
            "(revised)",
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{out:#}");
    let revised = out["text"].as_str().unwrap();
    assert!(
        revised.starts_with("# Release notes: Kafka consumer lag (revised)\n"),
        "{revised}"
    );
    assert!(
        revised.contains("- Addressed: Cite a source for every claim."),
        "{revised}"
    );
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_a2a_client_must_send_the_bearer_token_demo_writer_requires() {
    let fleet = fleet(FleetConfig {
        writer_bearer_token: Some("demo-t0ken".into()),
        ..FleetConfig::ephemeral()
    })
    .await;
    let card = fleet.writer_card_url();
    let (code, out) = check(
        "a2a-check",
        &[
            &card,
            "--text",
            "Kafka consumer lag",
            "--bearer",
            "demo-t0ken",
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{out:#}");
    assert_eq!(out["state"], "TASK_STATE_COMPLETED");
    assert!(
        out["card"]["securitySchemes"]["bearer"].is_object(),
        "the card says a bearer token is needed: {out:#}"
    );

    let (code, out) = check("a2a-check", &[&card, "--text", "Kafka consumer lag"]).await;
    assert_eq!(code, Some(1), "{out:#}");
    assert_eq!(out["ok"], false);
    let (code, out) = check(
        "a2a-check",
        &[&card, "--text", "Kafka consumer lag", "--bearer", "wrong"],
    )
    .await;
    assert_eq!(code, Some(1), "{out:#}");
    assert_eq!(out["ok"], false);
    fleet.shutdown().await.unwrap();
}

fn tool_names(tools: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_mcp_client_lists_and_calls_demo_tools_in_auto_and_legacy_mode() {
    let fleet = fleet(FleetConfig::ephemeral()).await;
    let url = fleet.tools_url();
    // auto: 2026-07-28 discovery; legacy: the 2025-11-25 initialize/session handshake.
    for (mode, version) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let (code, out) = check(
            "mcp-check",
            &[
                &url,
                "search_articles",
                r#"{"query":"Kafka consumer lag","limit":2}"#,
                "--mode",
                mode,
                "--list-twice",
            ],
        )
        .await;
        assert_eq!(code, Some(0), "{mode}: {out:#}");
        assert_eq!(out["protocolVersion"], version, "{mode}");
        assert_eq!(out["serverInfo"]["name"], "demo-tools", "{mode}");
        assert_eq!(tool_names(&out["tools"]), TOOL_NAMES, "{mode}");
        assert_eq!(
            out["tools"], out["tools2"],
            "{mode}: a second listing is identical"
        );
        for tool in out["tools"].as_array().unwrap() {
            let a = &tool["annotations"];
            assert_eq!(
                (&a["readOnlyHint"], &a["destructiveHint"]),
                (&Value::Bool(true), &Value::Bool(false)),
                "{mode}: {tool:#}"
            );
        }
        let call = &out["call"];
        assert_eq!(call["isError"], false, "{mode}: {call:#}");
        let results = call["structuredContent"]["results"].as_array().unwrap();
        assert_eq!(results.len(), 2, "{mode}: {call:#}");
        assert_eq!(results[0]["id"], "kafka-consumer-lag-explained", "{mode}");
        let text: Value =
            serde_json::from_str(call["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            text, call["structuredContent"],
            "{mode}: the text is the structured content"
        );
    }
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_mcp_client_gets_results_and_tool_errors_from_demo_tools() {
    let fleet = fleet(FleetConfig::ephemeral()).await;
    let url = fleet.tools_url();
    for mode in ["auto", "legacy"] {
        let (code, out) = check(
            "mcp-check",
            &[
                &url,
                "convert_units",
                r#"{"value":10,"from":"km","to":"mi"}"#,
                "--mode",
                mode,
            ],
        )
        .await;
        assert_eq!(code, Some(0), "{mode}: {out:#}");
        let result = out["call"]["structuredContent"]["result"].as_f64().unwrap();
        assert!((result - 6.213_712).abs() < 1e-3, "{mode}: {result}");

        let (code, out) = check(
            "mcp-check",
            &[
                &url,
                "get_article",
                r#"{"id":"no-such-article"}"#,
                "--mode",
                mode,
                "--expect-error",
                "--expect-text",
                "no article has the id",
            ],
        )
        .await;
        assert_eq!(code, Some(0), "{mode}: {out:#}");
        assert_eq!(out["call"]["isError"], true, "{mode}");
    }
    fleet.shutdown().await.unwrap();
}
