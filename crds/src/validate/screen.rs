//! Edge screens (seed rule 2.28): `screen: true` adds the safety screen between two LLMAgent
//! nodes, and only there. Above all it never sits on an edge leaving a HumanApproval: what a
//! person approved is exactly what the next node gets (rule 4.18), so nothing may rewrite it.

use super::analysis::Analysis;
use super::report::{Report, edge_loc};
use crate::codes;
use crate::composition::NodeKind;

/// Reports screens on edges that do not join two LLMAgent nodes.
pub(crate) fn check(a: &Analysis, r: &mut Report) {
    for (j, edge) in a.spec.edges.iter().enumerate() {
        if !edge.screen {
            continue;
        }
        // An edge end that names no node is reported by the structure rules.
        let (Some(&from), Some(&to)) = (
            a.index.get(edge.from.as_str()),
            a.index.get(edge.to.as_str()),
        ) else {
            continue;
        };
        let (from_kind, to_kind) = (a.kind(from), a.kind(to));
        if from_kind == Some(NodeKind::LlmAgent) && to_kind == Some(NodeKind::LlmAgent) {
            continue;
        }
        let kind_of = |k: Option<NodeKind>| k.map(NodeKind::as_str).unwrap_or("node");
        let message = if from_kind == Some(NodeKind::HumanApproval) {
            format!(
                "edge {j} leaves human approval '{}' with screen: true; the text a person approved must reach '{}' exactly as they read it (rule 4.18): remove screen (screen an edge between two agents before the approval instead)",
                edge.from, edge.to
            )
        } else {
            format!(
                "edge {j} ('{}', a {} → '{}', a {}) has screen: true, but a screen runs only between two LLMAgent nodes: remove screen, or move it to an edge between two agents",
                edge.from,
                kind_of(from_kind),
                edge.to,
                kind_of(to_kind)
            )
        };
        r.error(
            codes::SCREEN_NOT_BETWEEN_AGENTS,
            edge_loc(j, Some("screen")),
            message,
        );
    }
}
