//! The validator against the CRD schema (the GitOps promise: `orrery validate` never says valid
//! for what the apiserver refuses), supervisor depth counted in supervisors (rule 1.25), and
//! edge screens only between agents (rule 2.28).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::fixtures::{env, spec};
use super::*;
use crate::codes::{self, limits};
use crate::composition::{Composition, ID_PATTERN};
use kube::CustomResourceExt;
use serde_json::Value;

/// The `spec` schema of the generated Composition CRD, as JSON.
fn crd_spec_schema() -> Value {
    let crd = serde_json::to_value(Composition::crd()).unwrap();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].clone()
}

fn number(v: &Value) -> u64 {
    v.as_u64()
        .or_else(|| v.as_f64().map(|f| f as u64))
        .unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn the_validators_limits_equal_the_crd_schemas_bounds() {
    let s = crd_spec_schema();
    let p = &s["properties"];
    let node = &p["nodes"]["items"]["properties"];
    let edge = &p["edges"]["items"]["properties"];
    let budgets = &p["budgets"]["properties"];
    let table: Vec<(&str, &Value, u64)> = vec![
        (
            "spec.description maxLength",
            &p["description"]["maxLength"],
            limits::MAX_DESCRIPTION_CHARS as u64,
        ),
        (
            "spec.nodes minItems",
            &p["nodes"]["minItems"],
            limits::MIN_NODES as u64,
        ),
        (
            "spec.nodes maxItems",
            &p["nodes"]["maxItems"],
            limits::MAX_NODES as u64,
        ),
        (
            "spec.edges maxItems",
            &p["edges"]["maxItems"],
            limits::MAX_EDGES as u64,
        ),
        (
            "node description maxLength",
            &node["description"]["maxLength"],
            limits::MAX_DESCRIPTION_CHARS as u64,
        ),
        (
            "node instruction maxLength",
            &node["instruction"]["maxLength"],
            limits::MAX_INSTRUCTION_CHARS as u64,
        ),
        (
            "node prompt maxLength",
            &node["prompt"]["maxLength"],
            limits::MAX_PROMPT_CHARS as u64,
        ),
        (
            "node model maxLength",
            &node["model"]["maxLength"],
            limits::MAX_MODEL_NAME_CHARS as u64,
        ),
        (
            "node tools maxItems",
            &node["tools"]["maxItems"],
            limits::MAX_TOOLS_PER_NODE as u64,
        ),
        (
            "node children maxItems",
            &node["children"]["maxItems"],
            limits::MAX_CHILDREN as u64,
        ),
        (
            "output.labels minItems",
            &node["output"]["properties"]["labels"]["minItems"],
            limits::MIN_LABELS as u64,
        ),
        (
            "output.labels maxItems",
            &node["output"]["properties"]["labels"]["maxItems"],
            limits::MAX_LABELS as u64,
        ),
        (
            "edge from maxLength",
            &edge["from"]["maxLength"],
            limits::MAX_ID_CHARS as u64,
        ),
        (
            "edge to maxLength",
            &edge["to"]["maxLength"],
            limits::MAX_ID_CHARS as u64,
        ),
        (
            "edge when maxLength",
            &edge["when"]["maxLength"],
            limits::MAX_ID_CHARS as u64,
        ),
        (
            "edge maxIterations minimum",
            &edge["maxIterations"]["minimum"],
            u64::from(limits::MIN_LOOP_ITERATIONS),
        ),
        (
            "edge maxIterations maximum",
            &edge["maxIterations"]["maximum"],
            u64::from(limits::MAX_LOOP_ITERATIONS),
        ),
        (
            "budgets maxTokens minimum",
            &budgets["maxTokens"]["minimum"],
            limits::MIN_MAX_TOKENS,
        ),
        (
            "budgets timeoutSeconds minimum",
            &budgets["timeoutSeconds"]["minimum"],
            limits::MIN_TIMEOUT_SECONDS,
        ),
    ];
    for (what, got, want) in table {
        assert_eq!(number(got), want, "{what}: CRD {got}, validator {want}");
    }
    // Ids and labels: one pattern, and its length bound is the validator's.
    assert_eq!(node["id"]["pattern"].as_str(), Some(ID_PATTERN));
    assert_eq!(
        node["output"]["properties"]["labels"]["items"]["pattern"].as_str(),
        Some(ID_PATTERN)
    );
    assert_eq!(
        node["children"]["items"]["pattern"].as_str(),
        Some(ID_PATTERN)
    );
    assert!(
        ID_PATTERN.ends_with(&format!("{{0,{}}}$", limits::MAX_ID_CHARS - 1)),
        "{ID_PATTERN} allows ids of at most {} characters",
        limits::MAX_ID_CHARS
    );
}

/// The review's reproduction: a description of 5000 characters, an instruction of 40 000 and
/// 40 labels, which the apiserver refuses, were reported valid.
#[test]
fn what_the_apiserver_refuses_is_never_valid_issue_2_gitops() {
    let labels: Vec<String> = (0..40).map(|i| format!("l{i}")).collect();
    let yaml = format!(
        "pattern: Router\ndescription: {}\nnodes:\n  - {{id: r, kind: Router, model: fast, instruction: {}, output: {{labels: [{}]}}}}\n  - {{id: e, kind: LLMAgent, model: fast}}\nedges:\n  - {{from: r, to: e, when: l0}}\n",
        "d".repeat(5000),
        "i".repeat(40_000),
        labels.join(", ")
    );
    let e = env();
    let v = validate(&spec(&yaml), &e.registry, &e.limits);
    let found: Vec<(&str, &str)> = v
        .errors
        .iter()
        .map(|i| (i.code.as_str(), i.field.as_str()))
        .collect();
    for want in [
        (codes::TEXT_TOO_LONG, "spec.description"),
        (codes::TEXT_TOO_LONG, "spec.nodes[0].instruction"),
        (codes::TOO_MANY_ITEMS, "spec.nodes[0].output.labels"),
    ] {
        assert!(found.contains(&want), "missing {want:?} in {found:?}");
    }
    let message = &v.errors[0].message;
    assert!(
        message.contains("5000") && message.contains("2048"),
        "{message}"
    );
}

#[test]
fn three_levels_of_supervisors_over_an_agent_are_allowed_and_a_fourth_is_too_deep_rule_1_25() {
    let e = env();
    let three = "pattern: Supervisor\nnodes: [{id: s1, kind: Supervisor, children: [s2]}, {id: s2, kind: Supervisor, children: [s3]}, {id: s3, kind: Supervisor, children: [a]}, {id: a, kind: LLMAgent}]";
    let v = validate(&spec(three), &e.registry, &e.limits);
    assert!(v.is_valid(), "S1 → S2 → S3 → agent: {:?}", v.errors);

    let four = "pattern: Supervisor\nnodes: [{id: s1, kind: Supervisor, children: [s2]}, {id: s2, kind: Supervisor, children: [s3]}, {id: s3, kind: Supervisor, children: [s4]}, {id: s4, kind: Supervisor, children: [a]}, {id: a, kind: LLMAgent}]";
    let v = validate(&spec(four), &e.registry, &e.limits);
    let deep: Vec<&str> = v
        .errors
        .iter()
        .filter(|i| i.code == codes::TOO_DEEP)
        .map(|i| i.field.as_str())
        .collect();
    assert_eq!(
        deep,
        ["spec.nodes[2].children[0]"],
        "reported once, where S4 joins"
    );
    assert!(v.errors[0].message.contains("s1 → s2 → s3 → s4"));
}

#[test]
fn a_screen_runs_only_between_two_llm_agents_rule_2_28() {
    let e = env();
    let cases = [
        ("LLMAgent", "LLMAgent", true),
        ("LLMAgent", "Router", false),
        ("Supervisor", "LLMAgent", false),
    ];
    for (from, to, ok) in cases {
        let extra = if from == "Supervisor" {
            ", children: [c]"
        } else {
            ""
        };
        let to_extra = if to == "Router" {
            ", output: {labels: [x]}"
        } else {
            ""
        };
        let yaml = format!(
            "pattern: Pipeline\nnodes: [{{id: a, kind: {from}{extra}}}, {{id: b, kind: {to}{to_extra}}}, {{id: c, kind: LLMAgent}}, {{id: z, kind: LLMAgent}}]\nedges: [{{from: a, to: b, screen: true}}, {{from: b, to: z{}}}]",
            if to == "Router" { ", when: x" } else { "" }
        );
        let yaml = if from == "Supervisor" {
            yaml
        } else {
            yaml.replace(", {id: c, kind: LLMAgent}", "")
        };
        let v = validate(&spec(&yaml), &e.registry, &e.limits);
        let screened = v.errors.iter().any(|i| {
            i.code == codes::SCREEN_NOT_BETWEEN_AGENTS && i.field == "spec.edges[0].screen"
        });
        assert_eq!(!screened, ok, "{from} → {to}: {:?}", v.errors);
    }
}
