//! Node kinds and the fields each takes: kinds and patterns the engine does not run
//! (`not_supported_yet`, rule 1.76), fields a kind does not take (e.g. tools on a Parallel),
//! and fields a kind needs (a Router's labels, a Supervisor's children).

use super::analysis::Analysis;
use super::report::{Report, node_field, spec_loc};
use crate::codes;
use crate::composition::{NodeKind, Pattern};

/// Reports kind and field rules.
pub(crate) fn check(a: &Analysis, r: &mut Report) {
    if a.spec.pattern == Pattern::Handoff {
        r.error(
            codes::NOT_SUPPORTED_YET,
            spec_loc("pattern"),
            "pattern 'Handoff' is not supported yet (use a Router or labelled edges to pass work between agents)",
        );
    }
    for (i, node) in a.spec.nodes.iter().enumerate() {
        let kind = node.kind;
        match kind {
            NodeKind::RemoteA2a => {
                r.error(
                    codes::NOT_SUPPORTED_YET,
                    node_field(i, "kind"),
                    "node kind 'RemoteA2A' is not supported yet (use an LLMAgent with an a2a: tool)",
                );
                continue;
            }
            NodeKind::Handoff => {
                r.error(
                    codes::NOT_SUPPORTED_YET,
                    node_field(i, "kind"),
                    "node kind 'Handoff' is not supported yet (use a Router, or an LLMAgent with output.labels, to pick the next agent)",
                );
                continue;
            }
            _ => {}
        }
        let is_child = a.parent[i].is_some();
        let mut not_allowed = |field: &str, why: &str| {
            r.error(
                codes::FIELD_NOT_ALLOWED,
                node_field(i, field),
                format!(
                    "node '{}' is a {}, which {why}; remove {field}",
                    node.id,
                    kind.as_str()
                ),
            );
        };
        if !node.tools.is_empty() && !matches!(kind, NodeKind::LlmAgent | NodeKind::Supervisor) {
            not_allowed(
                "tools",
                "calls no tools (only LLMAgent and Supervisor nodes do; a Router only picks a label)",
            );
        }
        if node.model.is_some() && !kind.calls_model() {
            not_allowed("model", "calls no model");
        }
        if node.instruction.is_some() && !kind.calls_model() {
            not_allowed(
                "instruction",
                "calls no model (a HumanApproval asks its reviewer with prompt)",
            );
        }
        if node.output.is_some() {
            if kind == NodeKind::HumanApproval {
                not_allowed("output", "always routes on 'approved' and 'rejected'");
            } else if !kind.calls_model() {
                not_allowed("output", "answers with no label");
            } else if is_child {
                not_allowed(
                    "output",
                    "is a supervisor child: its answer returns to its parent, so labels are never used",
                );
            }
        }
        if !node.children.is_empty() && kind != NodeKind::Supervisor {
            not_allowed("children", "has no children (only a Supervisor does)");
        }
        if node.prompt.is_some() && kind != NodeKind::HumanApproval {
            not_allowed(
                "prompt",
                "asks no person (only a HumanApproval does; an agent takes instruction)",
            );
        }
        // An empty labels list is reported at output.labels by the bounds rules.
        if kind == NodeKind::Router && node.output.is_none() {
            r.error(
                codes::MISSING_FIELD,
                node_field(i, "output"),
                format!(
                    "router '{}' has no output.labels; list the labels it picks from, one per outgoing edge (e.g. labels: [billing, support])",
                    node.id
                ),
            );
        }
        if kind == NodeKind::Supervisor && node.children.is_empty() {
            r.error(
                codes::MISSING_FIELD,
                node_field(i, "children"),
                format!(
                    "supervisor '{}' has no children; list the ids of the agent nodes it delegates to, or make it an LLMAgent",
                    node.id
                ),
            );
        }
    }
}
