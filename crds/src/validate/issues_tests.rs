//! Tests of the findings the validator reports: a warning that refuses nothing, every message
//! and field as the seeds wrote them, every problem of a spec at once (rules 1.16, 1.22).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::fixtures::{RELEASE_NOTES, env, spec};
use super::*;
use crate::codes;

#[test]
fn a_label_with_no_edge_warns_but_still_plans() {
    let e = env();
    let v = validate(&spec(RELEASE_NOTES), &e.registry, &e.limits);
    assert!(v.is_valid());
    let fields: Vec<&str> = v.warnings.iter().map(|w| w.field.as_str()).collect();
    assert_eq!(fields, ["spec.nodes[2].output.labels[0]"]);
    assert_eq!(v.warnings[0].code, codes::LABEL_ENDS_RUN);
}

#[test]
fn the_seeds_example_messages_read_as_written() {
    let e = env();
    let s = spec(
        "pattern: Pipeline\nnodes: [{id: research, kind: LLMAgent, tools: ['a2a:demo-writer.deploy']}, {id: writer, kind: LLMAgent}, {id: critic, kind: RemoteA2A}]\nedges: [{from: research, to: writer}, {from: writer, to: writr}]",
    );
    let v = validate(&s, &e.registry, &e.limits);
    let find = |code: &str| {
        v.errors
            .iter()
            .find(|i| i.code == code)
            .unwrap_or_else(|| panic!("{code} missing: {v:#?}"))
    };
    let tool = find(codes::UNKNOWN_TOOL);
    assert_eq!(
        tool.message,
        "remote agent 'demo-writer' is not registered for skill 'deploy'"
    );
    assert_eq!(
        serde_json::to_value(&tool.loc).unwrap(),
        serde_json::json!(["spec", "nodes", 0, "tools", 0])
    );
    assert_eq!(tool.field, "spec.nodes[0].tools[0]");
    assert_eq!(
        find(codes::NOT_SUPPORTED_YET).message,
        "node kind 'RemoteA2A' is not supported yet (use an LLMAgent with an a2a: tool)"
    );
    assert_eq!(
        find(codes::UNKNOWN_NODE).message,
        "edge 1 goes to 'writr', which is not a node; use one of: research, writer, critic"
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let e = env();
    let s = spec(
        "pattern: Pipeline
budgets: {maxTokens: 900000}
nodes: [{id: a, kind: LLMAgent, tools: ['mcp:tirraflow.delete_article'], model: nope}, {id: a, kind: LLMAgent}, {id: p, kind: Parallel, prompt: hi}]
edges: [{from: a, to: p}, {from: a, to: ghost}]",
    );
    let v = validate(&s, &e.registry, &e.limits);
    let mut found: Vec<&str> = v.errors.iter().map(|i| i.code.as_str()).collect();
    found.sort_unstable();
    found.dedup();
    for code in [
        codes::BUDGET_OVER_CEILING,
        codes::TOOL_NOT_READ_ONLY,
        codes::MODEL_NOT_ALLOWED,
        codes::DUPLICATE_ID,
        codes::FIELD_NOT_ALLOWED,
        codes::UNKNOWN_NODE,
        codes::TOO_FEW_BRANCHES,
        codes::PATTERN_MISMATCH,
    ] {
        assert!(found.contains(&code), "{code} missing from {found:?}");
    }
}
