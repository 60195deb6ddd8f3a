//! Every example composition runs to its expected outcome with the Scripted model and dry-run
//! tools, and its trace (event types with their nodes) and output match the golden files in
//! `tests/golden/`. Regenerate them with `ORRERY_UPDATE_GOLDEN=1 cargo test -p orrery-runner
//! --test engine_examples`; the test fails on any drift.
//!
//! Parallel branches interleave nondeterministically, so within a run of branch events the lines
//! are ordered by branch (edge order), keeping each branch's own order.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use orrery_crds::plan::Plan;
use orrery_crds::validate::DeploymentLimits;
use orrery_runner::approval::{ScriptedDecision, ScriptedDecisions};
use orrery_runner::engine::RunOptions;
use orrery_runner::events::{EventBody, MemorySink, Outcome, TraceEvent};
use orrery_runner::launch::{self, DryRunTools};
use orrery_runner::model::ProviderFactory;
use orrery_runner::secrets::LocalSecrets;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const INPUT: &str = "Kafka consumer lag";

/// Each example, the decisions a person makes in it, and the outcome it must reach.
fn cases() -> Vec<(&'static str, Vec<ScriptedDecision>, Outcome)> {
    vec![
        ("pipeline", vec![], Outcome::Succeeded),
        ("critic-loop", vec![], Outcome::Succeeded),
        (
            "human-review",
            vec![
                ScriptedDecision::Reject(Some("Add a one-line summary at the top.".into())),
                ScriptedDecision::Approve,
            ],
            Outcome::Succeeded,
        ),
        ("router", vec![], Outcome::Succeeded),
        ("fan-out-fan-in", vec![], Outcome::Succeeded),
        ("supervisor", vec![], Outcome::Succeeded),
        ("debate", vec![], Outcome::Succeeded),
        ("map-reduce", vec![], Outcome::Succeeded),
        ("plan-and-execute", vec![], Outcome::Succeeded),
    ]
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Golden {
    composition: String,
    input: String,
    outcome: Outcome,
    output: Option<String>,
    events: Vec<String>,
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn golden_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.json"))
}

/// One line per event: its type and what it is about.
fn describe(event: &TraceEvent) -> String {
    match &event.body {
        EventBody::RunStart {
            composition,
            dry_run_tools,
            ..
        } => {
            format!(
                "run.start {composition}{}",
                if *dry_run_tools {
                    " (dry-run tools)"
                } else {
                    ""
                }
            )
        }
        EventBody::RunEnd { outcome, .. } => format!("run.end {}", outcome.as_str()),
        EventBody::NodeEnter {
            node_id,
            kind,
            depth,
            ..
        } => {
            format!(
                "{}node.enter {node_id} {kind}",
                "  ".repeat(*depth as usize)
            )
        }
        EventBody::NodeExit {
            node_id,
            depth,
            status,
            label,
            ..
        } => {
            let label = label
                .as_deref()
                .map(|l| format!(" label={l}"))
                .unwrap_or_default();
            format!(
                "{}node.exit {node_id} {status:?}{label}",
                "  ".repeat(*depth as usize)
            )
        }
        EventBody::LoopIteration {
            head,
            tail,
            iteration,
            max,
            stopped,
        } => {
            format!(
                "loop.iteration {tail}->{head} {iteration}/{max}{}",
                if *stopped { " stopped" } else { "" }
            )
        }
        EventBody::RouteTaken { node_id, label, to } => {
            format!(
                "route.taken {node_id} {label} -> {}",
                to.as_deref().unwrap_or("(end)")
            )
        }
        EventBody::ToolCall {
            node_id,
            tool,
            status,
            ..
        } => format!("tool.call {node_id} {tool} {status:?}"),
        EventBody::BudgetHit { budget, .. } => format!("budget.hit {budget}"),
        EventBody::ApprovalRequested { node_id, kind, .. } => {
            format!("approval.requested {node_id} {kind:?}")
        }
        EventBody::ApprovalDecided {
            node_id, decision, ..
        } => format!("approval.decided {node_id} {decision:?}"),
        EventBody::McpCall {
            node_id,
            tool,
            status,
            ..
        } => format!("mcp.call {node_id} {tool} {status:?}"),
        EventBody::A2aMessage {
            node_id,
            skill,
            direction,
            ..
        } => format!("a2a.message {node_id} {skill} {direction:?}"),
    }
}

/// The (section, branch) a node-scoped event belongs to, if it is on a parallel branch.
fn branch_of(plan: &Plan, event: &TraceEvent) -> Option<(usize, usize)> {
    let node = match &event.body {
        EventBody::NodeEnter { node_id, .. }
        | EventBody::NodeExit { node_id, .. }
        | EventBody::ToolCall { node_id, .. }
        | EventBody::RouteTaken { node_id, .. } => node_id,
        _ => return None,
    };
    let (idx, planned) = plan.node_by_id(node)?;
    let section = planned.in_section?;
    let branch = plan.sections[section]
        .branches
        .iter()
        .position(|chain| chain.contains(&idx))?;
    Some((section, branch))
}

/// The trace as lines, parallel branches' interleaving put in branch order.
fn canonical(plan: &Plan, events: &[TraceEvent]) -> Vec<String> {
    let mut lines = Vec::with_capacity(events.len());
    let mut window: Vec<((usize, usize), String)> = Vec::new();
    for event in events {
        match branch_of(plan, event) {
            Some(key) => window.push((key, describe(event))),
            None => {
                window.sort_by_key(|(key, _)| *key);
                lines.extend(window.drain(..).map(|(_, line)| line));
                lines.push(describe(event));
            }
        }
    }
    window.sort_by_key(|(key, _)| *key);
    lines.extend(window.into_iter().map(|(_, line)| line));
    lines
}

async fn run_example(name: &str, decisions: Vec<ScriptedDecision>) -> (Golden, Plan) {
    let paths = [
        examples().join(format!("compositions/{name}.yaml")),
        examples().join("registry"),
    ];
    let prepared = launch::prepare(&paths, None, &DeploymentLimits::default())
        .unwrap_or_else(|e| panic!("example {name} does not prepare: {e}"));
    let providers =
        ProviderFactory::new(reqwest::Client::new(), Arc::new(LocalSecrets::from_env()));
    let built = launch::build(&prepared, &providers, &DryRunTools)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let sink = Arc::new(MemorySink::new());
    let mut options = RunOptions::new(format!("golden-{name}"));
    options.approval_timeout = Duration::from_secs(5);
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        launch::run(
            &prepared,
            built,
            INPUT.into(),
            Arc::new(ScriptedDecisions::new(decisions)),
            vec![sink.clone()],
            options,
            CancellationToken::new(),
        ),
    )
    .await
    .unwrap_or_else(|_| panic!("example {name} hung"));
    let golden = Golden {
        composition: name.into(),
        input: INPUT.into(),
        outcome: result.outcome,
        output: result.output.clone(),
        events: canonical(&prepared.plan, &sink.events()),
    };
    (golden, prepared.plan)
}

#[tokio::test]
async fn every_example_composition_runs_to_its_expected_outcome_and_matches_its_golden_trace() {
    let update = std::env::var("ORRERY_UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    let mut drift = Vec::new();
    for (name, decisions, expected) in cases() {
        let (got, _) = run_example(name, decisions).await;
        assert_eq!(
            got.outcome, expected,
            "example {name} ended {:?}",
            got.outcome
        );
        let path = golden_path(name);
        if update {
            let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; generate it with ORRERY_UPDATE_GOLDEN=1",
                path.display()
            )
        });
        let want: Golden = serde_json::from_str(&text).unwrap();
        if want != got {
            drift.push(format!(
                "{name}: golden {} differs\n--- want\n{}\n--- got\n{}",
                path.display(),
                serde_json::to_string_pretty(&want).unwrap(),
                serde_json::to_string_pretty(&got).unwrap()
            ));
        }
    }
    assert!(
        drift.is_empty(),
        "{}\n(regenerate with ORRERY_UPDATE_GOLDEN=1 if the change is intended)",
        drift.join("\n\n")
    );
}

#[tokio::test]
async fn the_critic_loop_example_exercises_its_loop_once_and_succeeds() {
    let (got, _) = run_example("critic-loop", vec![]).await;
    assert_eq!(got.outcome, Outcome::Succeeded);
    assert!(
        got.events
            .iter()
            .any(|l| l == "loop.iteration critic->writer 1/3"),
        "{:#?}",
        got.events
    );
    assert!(
        got.events
            .iter()
            .any(|l| l == "route.taken critic approved -> (end)"),
        "{:#?}",
        got.events
    );
    assert_eq!(
        got.events.last().map(String::as_str),
        Some("run.end Succeeded")
    );
}
