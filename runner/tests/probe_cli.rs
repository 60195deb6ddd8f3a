//! `orrery probe`, the operator's probe pod: the demo fleet's entries are reached through the
//! guard and pinned (the card's RFC 8785 trust digest and skills, every read-only tool with
//! `pin::pinned_tool`), the report is one JSON line on standard output and in the termination
//! log, and the operator's reader (`crds::probe::parse_report`) reads it back; an endpoint that
//! is down, a skill the card lacks and an unreadable entry file are error reports with a
//! nonzero exit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod remote_support;

use orrery_crds::probe::{ProbeOutcome, ProbeReport, parse_report};
use orrery_runner::demo::{FleetConfig, start_fleet};
use remote_support::mcp_fixture::{McpFixture, tool};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

struct Probed {
    code: i32,
    stdout: String,
    log: String,
    report: ProbeReport,
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "orrery-probe-cli-{}-{name}-{}",
        std::process::id(),
        uuid_like()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn uuid_like() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Runs `orrery probe` on `entry` (written as the file's bytes) off the runtime's threads.
async fn probe(name: &str, entry: Vec<u8>) -> Probed {
    let dir = tmp(name);
    let (entry_path, log_path) = (dir.join("entry.json"), dir.join("termination-log"));
    std::fs::write(&entry_path, entry).expect("entry written");
    let output = {
        let (entry_path, log_path) = (entry_path.clone(), log_path.clone());
        tokio::task::spawn_blocking(move || {
            Command::new(env!("CARGO_BIN_EXE_orrery"))
                .env("NO_COLOR", "1")
                .env_remove("ORRERY_A2A_PRIVATE_ALLOW")
                .env_remove("ORRERY_STUDIO_EGRESS_PROXY")
                .args(["probe", "--entry"])
                .arg(&entry_path)
                .arg("--termination-log")
                .arg(&log_path)
                .args(["--timeout", "20"])
                .output()
                .expect("orrery runs")
        })
        .await
        .expect("join")
    };
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let log = std::fs::read_to_string(&log_path).expect("the termination log is written");
    let report = parse_report(&log).unwrap_or_else(|e| panic!("{e}: {log}"));
    let _ = std::fs::remove_dir_all(&dir);
    Probed {
        code: output.status.code().unwrap_or(-1),
        stdout,
        log,
        report,
    }
}

fn request(name: &str, spec: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"name": name, "generation": 3, "spec": spec})).expect("json")
}

fn error_of(report: &ProbeReport) -> &str {
    match &report.outcome {
        ProbeOutcome::Error { message } => message,
        ProbeOutcome::Ok => panic!("expected an error report, got {report:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_fleets_card_and_read_only_tools_are_pinned_and_reported_on_one_line() {
    let fleet = start_fleet(FleetConfig::ephemeral()).await.expect("fleet");
    let tools = [
        "search_articles",
        "get_article",
        "convert_units",
        "current_time",
    ];
    let mcp = probe(
        "mcp",
        request(
            "demo-tools",
            json!({"mcp": {"url": fleet.tools_url(), "tools": tools, "readOnly": tools}}),
        ),
    )
    .await;
    assert_eq!(mcp.code, 0, "{}", mcp.stdout);
    assert_eq!(
        mcp.stdout.trim_end(),
        mcp.log.trim_end(),
        "stdout and the log agree"
    );
    assert_eq!(mcp.stdout.lines().count(), 1, "{}", mcp.stdout);
    let report = &mcp.report;
    assert_eq!(
        (report.entry.as_str(), report.generation),
        ("demo-tools", 3)
    );
    assert!(report.is_ok(), "{report:?}");
    let names: Vec<&str> = report.pins.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "convert_units",
            "current_time",
            "get_article",
            "search_articles"
        ]
    );
    for tool in &report.pins.tools {
        assert_eq!(tool.read_only_hint, Some(true), "{}", tool.name);
        for digest in [
            &tool.description_sha256,
            &tool.schema_sha256,
            &tool.annotations_sha256,
        ] {
            assert!(
                digest.len() == 64 && digest.chars().all(|c| c.is_ascii_hexdigit()),
                "{digest}"
            );
        }
    }
    assert!(
        report.pins.resolved_addresses.is_empty(),
        "loopback resolves nothing"
    );
    // The same server probed again pins the same.
    let again = probe(
        "mcp-again",
        request(
            "demo-tools",
            json!({"mcp": {"url": fleet.tools_url(), "tools": tools, "readOnly": tools}}),
        ),
    )
    .await;
    assert_eq!(again.report.pins, report.pins);

    // A whole RegistryEntry object is read too; its generation is the object's.
    let entry = json!({
        "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "RegistryEntry",
        "metadata": {"name": "demo-writer", "generation": 7},
        "spec": {"a2a": {"cardUrl": fleet.writer_card_url(), "skills": ["draft"]}}
    });
    let a2a = probe("a2a", serde_json::to_vec(&entry).expect("json")).await;
    assert_eq!(a2a.code, 0, "{}", a2a.stdout);
    assert_eq!(
        (a2a.report.entry.as_str(), a2a.report.generation),
        ("demo-writer", 7)
    );
    let card = reqwest::get(fleet.writer_card_url())
        .await
        .expect("card")
        .bytes()
        .await
        .expect("card body");
    let card = orrery_runner::pin::parse_json_no_duplicate_keys(&card).expect("card json");
    assert_eq!(
        a2a.report.pins.card_sha256,
        Some(orrery_runner::pin::card_trust_digest(&card).expect("digest")),
        "the digest is the card's RFC 8785 trust digest"
    );
    assert_eq!(a2a.report.pins.skills, ["draft"]);
    assert!(a2a.report.pins.tools.is_empty());
    fleet.shutdown().await.expect("fleet stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_is_down_or_a_skill_the_card_lacks_fails_with_the_reason() {
    let fleet = start_fleet(FleetConfig::ephemeral()).await.expect("fleet");
    let missing = probe(
        "skill",
        request(
            "demo-writer",
            json!({"a2a": {"cardUrl": fleet.writer_card_url(), "skills": ["draft", "translate"]}}),
        ),
    )
    .await;
    assert_eq!(missing.code, 1);
    let message = error_of(&missing.report);
    assert!(message.contains("no skill 'translate'"), "{message}");
    assert!(
        missing.report.pins.card_sha256.is_none(),
        "an error pins nothing"
    );

    // A port nobody listens on (the fleet's, after it stopped).
    let url = fleet.tools_url();
    fleet.shutdown().await.expect("fleet stops");
    let down = probe(
        "down",
        request(
            "demo-tools",
            json!({"mcp": {"url": url, "tools": ["a"], "readOnly": ["a"]}}),
        ),
    )
    .await;
    assert_eq!(down.code, 1, "{}", down.stdout);
    assert_eq!(down.report.entry, "demo-tools");
    let message = error_of(&down.report);
    assert!(message.contains("demo-tools"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_entry_file_is_an_error_report_with_exit_code_2() {
    for (name, bytes) in [
        ("garbage", b"not json".to_vec()),
        (
            "duplicate",
            br#"{"name":"a","name":"b","spec":{}}"#.to_vec(),
        ),
        ("unknown", br#"{"name":"a","spec":{},"extra":1}"#.to_vec()),
    ] {
        let probed = probe(name, bytes).await;
        assert_eq!(probed.code, 2, "{name}: {}", probed.stdout);
        assert!(!error_of(&probed.report).is_empty(), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_tool_without_read_only_hint_fails_the_probe_and_a_pinned_tool_is_pinned_tool()
{
    let hinted = tool("lookup", "Looks a word up.", json!({"readOnlyHint": true}));
    let fixture = McpFixture::start(
        vec![
            hinted.clone(),
            tool("peek", "Peeks.", json!({})),
            tool("write", "Writes.", json!({"readOnlyHint": false})),
        ],
        BTreeMap::new(),
    )
    .await;
    // `write` is allowed but not read-only: never usable, so not pinned and not an error.
    let ok = probe(
        "hinted",
        request(
            "words",
            json!({"mcp": {"url": fixture.url(), "tools": ["lookup", "write"], "readOnly": ["lookup"]}}),
        ),
    )
    .await;
    assert_eq!(ok.code, 0, "{}", ok.stdout);
    let want = orrery_runner::pin::pinned_tool(
        "lookup",
        hinted["description"].as_str(),
        &hinted["inputSchema"],
        Some(&hinted["annotations"]),
    )
    .expect("pin");
    assert_eq!(ok.report.pins.tools, [want]);

    let refused = probe(
        "unhinted",
        request(
            "words",
            json!({"mcp": {"url": fixture.url(), "tools": ["lookup", "peek"], "readOnly": ["lookup", "peek"]}}),
        ),
    )
    .await;
    assert_eq!(refused.code, 1);
    let message = error_of(&refused.report);
    assert!(
        message.contains("'peek'") && message.contains("no readOnlyHint"),
        "{message}"
    );
    assert!(refused.report.pins.tools.is_empty());
}

/// Table (issue 29, rule 5.24): the probe skips the validator, so the guard itself refuses a
/// loopback host not written exactly, for an MCP `url` and an A2A `cardUrl`: the same server
/// answers when it is written `127.0.0.1`, and never when it is spelled otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spelled_loopback_url_is_refused_by_the_probe_where_the_exact_one_answers() {
    let fleet = start_fleet(FleetConfig::ephemeral()).await.expect("fleet");
    let (tools, card) = (fleet.tools_url(), fleet.writer_card_url());
    let exact = probe(
        "exact",
        request(
            "demo-tools",
            json!({"mcp": {"url": tools, "tools": ["current_time"], "readOnly": ["current_time"]}}),
        ),
    )
    .await;
    assert_eq!(exact.code, 0, "{}", exact.log);
    let spellings = [
        "0x7f000001",
        "017700000001",
        "2130706433",
        "127.1",
        "0177.0.0.1",
        "0x7f.0.0.1",
        "127.0.0.1.",
        "LOCALHOST",
        "[0:0:0:0:0:0:0:1]",
    ];
    for spelled in spellings {
        let (mcp_url, card_url) = (
            tools.replace("127.0.0.1", spelled),
            card.replace("127.0.0.1", spelled),
        );
        assert_ne!(mcp_url, tools, "the fixture's URL names 127.0.0.1");
        for (kind, spec) in [
            (
                "mcp",
                json!({"mcp": {"url": mcp_url, "tools": ["current_time"], "readOnly": ["current_time"]}}),
            ),
            (
                "a2a",
                json!({"a2a": {"cardUrl": card_url, "skills": ["draft"]}}),
            ),
        ] {
            let refused = probe(kind, request("spelled", spec)).await;
            assert_eq!(refused.code, 1, "{kind} {spelled}: {}", refused.log);
            let message = error_of(&refused.report);
            assert!(
                message.contains("reaches loopback, but is not written exactly"),
                "{kind} {spelled}: {message}"
            );
        }
    }
    fleet.shutdown().await.expect("fleet stops");
}

/// Table (issue 29): plain http to a literal address that is not loopback is refused naming
/// its class, in the validator's words (one table: `orrery_crds::host`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_to_a_literal_address_is_refused_naming_its_class() {
    let cases = [
        ("169.254.1.1", "a link-local address"),
        ("169.254.169.254", "a cloud metadata address"),
        ("192.0.2.1", "a documentation address"),
        ("224.0.0.1", "a multicast address"),
        ("255.255.255.255", "a broadcast address"),
        ("100.64.0.1", "a carrier-grade NAT shared address"),
        ("0.0.0.0", "an unspecified address"),
        ("10.0.0.1", "a private address"),
        ("[fe80::1]", "a link-local address"),
    ];
    for (host, class) in cases {
        let refused = probe(
            "class",
            request(
                "plain",
                json!({"mcp": {"url": format!("http://{host}/mcp"), "tools": ["a"], "readOnly": ["a"]}}),
            ),
        )
        .await;
        assert_eq!(refused.code, 1, "{host}: {}", refused.log);
        let message = error_of(&refused.report);
        assert!(
            message.contains("plain http is allowed only to loopback hosts, and this is")
                && message.contains(class),
            "{host}: {message}"
        );
    }
}
