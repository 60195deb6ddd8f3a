#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::approval_step::rejection_text;
use super::labels::{LabelProblem, parse_labelled, recorded_call_id, recorded_unknown_tool};
use crate::events::{Trace, TraceOptions};

fn labels() -> Vec<String> {
    vec!["approved".into(), "rejected".into()]
}

#[test]
fn a_labelled_answer_is_read_from_its_json_object() {
    let got = parse_labelled(r#"{"label":"approved","answer":"fine"}"#, &labels()).unwrap();
    assert_eq!(got, ("approved".into(), "fine".into()));
}

#[test]
fn a_labelled_answer_in_a_fenced_block_is_accepted() {
    let got = parse_labelled(
        "```json\n{\"label\":\"rejected\",\"answer\":\"fix it\"}\n```",
        &labels(),
    )
    .unwrap();
    assert_eq!(got.0, "rejected");
}

fn trace(capture: bool) -> Trace {
    let mut options = TraceOptions::new("t");
    options.capture_content = capture;
    Trace::new(options, Vec::new())
}

#[test]
fn labelled_answers_that_cannot_route_are_refused_with_a_reason() {
    let cases = [
        ("not json", "not the JSON object"),
        (r#"["approved"]"#, "not a JSON object"),
        (r#"{"answer":"x"}"#, "no label"),
        (r#"{"label":7}"#, "not a string"),
        (r#"{"label":"maybe","answer":"x"}"#, "unknown label 'maybe'"),
    ];
    for (text, want) in cases {
        let err = parse_labelled(text, &labels())
            .unwrap_err()
            .describe(&trace(true));
        assert!(err.contains(want), "{text}: {err}");
    }
}

#[test]
fn an_unknown_label_is_named_by_its_size_without_capture_and_cut_with_it_rule_8_4() {
    let label = format!("lbl-user@example.com-SECRET-{}", "x".repeat(5000));
    let problem = parse_labelled(&format!(r#"{{"label":"{label}"}}"#), &labels()).unwrap_err();
    assert_eq!(problem, LabelProblem::Unknown(label.clone()));
    let off = problem.describe(&trace(false));
    assert!(
        !off.contains("user@example.com") && !off.contains("SECRET"),
        "{off}"
    );
    assert!(off.contains("5028 characters"), "{off}");
    let on = problem.describe(&trace(true));
    assert!(!on.contains("user@example.com"), "redacted: {on}");
    assert!(on.len() < 140, "cut: {on}");
}

#[test]
fn model_names_are_recorded_only_when_plain_and_captured() {
    let long = "n_".to_owned() + &"y".repeat(3000);
    assert_eq!(
        recorded_unknown_tool(&trace(false), "mcp_docs_delete"),
        "(unknown tool, 15 characters)"
    );
    assert_eq!(
        recorded_unknown_tool(&trace(true), "mcp_docs_delete"),
        "mcp_docs_delete"
    );
    assert_eq!(
        recorded_unknown_tool(&trace(true), &long),
        "(unknown tool, 3002 characters)"
    );
    assert_eq!(
        recorded_unknown_tool(&trace(true), "a\x1b[2Kb"),
        "(unknown tool, 6 characters)"
    );
    assert_eq!(recorded_call_id("call_a_0"), "call_a_0");
    assert_eq!(
        recorded_call_id("id with spaces"),
        "(call id of 14 characters)"
    );
}

#[test]
fn a_rejection_carries_the_comment_and_the_rejected_text() {
    let text = rejection_text(Some("cite sources"), "the draft");
    assert!(text.contains("cite sources") && text.contains("the draft"));
    assert!(rejection_text(None, "d").contains("(no comment)"));
}

/// A context for a one-node plan, its events in memory.
fn ctx() -> (
    super::ctx::RunCtx,
    std::sync::Arc<crate::events::MemorySink>,
) {
    use crate::approval::{Nobody, People};
    use crate::ledger::Ledger;
    use orrery_crds::registry::ModelProvider;
    use orrery_crds::validate::{DeploymentLimits, EntryView, RegistryView};
    use std::sync::Arc;
    let spec = serde_yaml::from_str("pattern: Pipeline\nnodes: [{id: a, kind: LLMAgent}]").unwrap();
    let mut registry = RegistryView::default();
    registry.entries.insert(
        "m".into(),
        EntryView::Model {
            provider: ModelProvider::Scripted,
        },
    );
    let limits = DeploymentLimits {
        default_model: Some("m".into()),
        ..DeploymentLimits::default()
    };
    let plan = orrery_crds::plan::plan(&spec, &registry, &limits).unwrap();
    let sink = Arc::new(crate::events::MemorySink::new());
    let trace = Trace::new(TraceOptions::new("t"), vec![sink.clone()]);
    let ledger = Arc::new(Ledger::new(plan.budgets.clone()));
    let people = Arc::new(People::new(
        Arc::new(Nobody::quiet()),
        trace.clone(),
        ledger.clone(),
        std::time::Duration::from_secs(1),
    ));
    let options = super::RunOptions::new("t");
    let ctx = super::ctx::RunCtx::new(
        plan,
        Default::default(),
        vec![Vec::new()],
        trace,
        ledger,
        people,
        tokio_util::sync::CancellationToken::new(),
        &options,
    );
    (ctx, sink)
}

#[test]
fn a_deadline_after_the_walk_ended_changes_nothing() {
    let (ctx, sink) = ctx();
    ctx.seal();
    let hit = ctx.ledger.deadline_hit();
    ctx.budget_hit_at(hit, &[]);
    assert!(
        ctx.take_ending().is_none(),
        "the finished run keeps its outcome"
    );
    assert!(sink.types().is_empty(), "no budget.hit for a finished run");
    assert!(!ctx.token.is_cancelled());
}

#[test]
fn a_deadline_names_the_one_node_running_or_else_the_run() {
    let (ctx, sink) = ctx();
    let open = ctx.enter(0, 0, None, "in", Vec::new());
    assert_eq!(ctx.running_nodes(), ["a"]);
    ctx.exit(&open, crate::events::NodeStatus::Ok, Default::default());
    assert!(
        ctx.running_nodes().is_empty(),
        "exited entries are not running"
    );
    let hit = ctx.ledger.deadline_hit();
    ctx.budget_hit_at(hit, &["x".to_owned(), "y".to_owned()]);
    let ending = ctx.take_ending().unwrap();
    let error = ending.error.unwrap();
    assert_eq!(error.node, None);
    assert!(error.message.contains("while nodes x, y were running"));
    assert_eq!(sink.types().last(), Some(&"budget.hit"));
}
