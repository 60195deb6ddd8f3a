//! What the validator's tests and the plan's tests run against: a registry and a deployment
//! ([`env`]), a spec parser ([`spec`]), the compositions both read ([`RELEASE_NOTES`],
//! [`HEAD_FIRST_LOOP`]) and a short form of findings for failure messages ([`brief`]). Made of
//! the validator's types, it lives in `validate/`; the plan's tests reach it through
//! `crate::validate::fixtures`, as the plan depends on the validator (never the reverse).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::{DeploymentLimits, EntryView, RegistryView};
use crate::common::ValidationIssue;
use crate::composition::CompositionSpec;
use crate::registry::{Effect, ModelProvider};
use std::collections::{BTreeMap, BTreeSet};

/// The registry and deployment a test runs against.
pub(crate) struct Env {
    pub registry: RegistryView,
    pub limits: DeploymentLimits,
}

/// A set of names.
pub(crate) fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// tirraflow (MCP, delete_article not read-only), my-x / my_x (MCP, tool t), wide (MCP, 40
/// read-only tools t0…t39), a long-named MCP server, demo-writer (A2A, draft), deployer (A2A,
/// acting), models fast and smart; default model fast.
pub(crate) fn env() -> Env {
    let mut entries = BTreeMap::new();
    let mcp = |tools: &[&str], ro: &[&str]| EntryView::Mcp {
        tools: set(tools),
        read_only: set(ro),
    };
    entries.insert(
        "tirraflow".to_owned(),
        mcp(
            &["search_articles", "get_article", "delete_article"],
            &["search_articles", "get_article"],
        ),
    );
    entries.insert("my-x".to_owned(), mcp(&["t"], &["t"]));
    let wide: Vec<String> = (0..40).map(|i| format!("t{i}")).collect();
    let wide: Vec<&str> = wide.iter().map(String::as_str).collect();
    entries.insert("wide".to_owned(), mcp(&wide, &wide));
    entries.insert("my_x".to_owned(), mcp(&["t"], &["t"]));
    entries.insert(
        "knowledge-base-of-the-platform-engineering-team".to_owned(),
        mcp(&["search_everything"], &["search_everything"]),
    );
    entries.insert(
        "demo-writer".to_owned(),
        EntryView::A2a {
            skills: set(&["draft"]),
            effect: Effect::ReadOnly,
        },
    );
    entries.insert(
        "deployer".to_owned(),
        EntryView::A2a {
            skills: set(&["deploy"]),
            effect: Effect::Acting,
        },
    );
    entries.insert(
        "fast".to_owned(),
        EntryView::Model {
            provider: ModelProvider::Scripted,
        },
    );
    entries.insert(
        "smart".to_owned(),
        EntryView::Model {
            provider: ModelProvider::OpenAi,
        },
    );
    Env {
        registry: RegistryView { entries },
        limits: DeploymentLimits {
            default_model: Some("fast".to_owned()),
            ..DeploymentLimits::default()
        },
    }
}

/// Parses a spec written in YAML (flow style keeps cases short).
pub(crate) fn spec(yaml: &str) -> CompositionSpec {
    serde_yaml::from_str(yaml).unwrap_or_else(|e| panic!("bad test spec: {e}\n{yaml}"))
}

/// Findings one line each (`code at field: message`), for failure messages.
pub(crate) fn brief(issues: &[ValidationIssue]) -> Vec<String> {
    issues
        .iter()
        .map(|i| format!("{} at {}: {}", i.code, i.field, i.message))
        .collect()
}

/// The seeds' release-notes composition (001 Compositions), as a CRD spec.
pub(crate) const RELEASE_NOTES: &str = "pattern: CriticLoop
budgets: {maxTokens: 120000, maxToolCalls: 20, maxRemoteCalls: 4, timeoutSeconds: 240}
nodes:
  - {id: research, kind: LLMAgent, instruction: 'Search Tirraflow.', tools: ['mcp:tirraflow.search_articles', 'mcp:tirraflow.get_article']}
  - {id: writer, kind: LLMAgent, tools: ['a2a:demo-writer.draft'], model: smart}
  - {id: critic, kind: LLMAgent, output: {labels: [approved, rejected]}}
edges:
  - {from: research, to: writer}
  - {from: writer, to: critic}
  - {from: critic, to: writer, when: rejected, maxIterations: 3}";

/// The canonical critic loop starting at its head: `draft → review`, `review → draft` when
/// `again`. Nothing but the back edge enters `draft`, so it is the first node.
pub(crate) const HEAD_FIRST_LOOP: &str = "pattern: CriticLoop
nodes: [{id: draft, kind: LLMAgent}, {id: review, kind: LLMAgent, output: {labels: [again, done]}}]
edges: [{from: draft, to: review}, {from: review, to: draft, when: again, maxIterations: 2}]";
