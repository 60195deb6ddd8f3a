//! Supervisors (seed rules 1.52–1.55, 2.23–2.25): children are existing LLMAgent or Supervisor
//! nodes with one parent each and no edges, supervisors nested at most 3 levels (the top
//! supervisor is level 1; only supervisors count, so S1 → S2 → S3 → agent is allowed), and no
//! supervisor is its own descendant.

use super::analysis::Analysis;
use super::report::{Report, edge_loc, node_item, plain_list};
use crate::codes::{self, limits};
use crate::composition::NodeKind;

/// Reports supervisor rules.
pub(crate) fn check(a: &Analysis, r: &mut Report) {
    let n = a.spec.nodes.len();
    for (i, node) in a.spec.nodes.iter().enumerate() {
        if a.ignored[i] || node.kind != NodeKind::Supervisor {
            continue;
        }
        for (k, child) in node.children.iter().enumerate() {
            let loc = node_item(i, "children", k);
            let Some(&c) = a.index.get(child.as_str()) else {
                let agents = plain_list(
                    (0..n)
                        .filter(|&v| v != i && is_agent(a.kind(v)))
                        .map(|v| a.id(v)),
                );
                r.error(
                    codes::UNKNOWN_NODE,
                    loc,
                    format!(
                        "child '{child}' of supervisor '{}' is not a node; use one of: {agents}",
                        node.id
                    ),
                );
                continue;
            };
            if c == i {
                r.error(
                    codes::SUPERVISOR_CYCLE,
                    loc,
                    format!(
                        "supervisor '{}' lists itself as a child; remove it from children",
                        node.id
                    ),
                );
                continue;
            }
            if !is_agent(a.kind(c)) {
                r.error(
                    codes::CHILD_NOT_AGENT,
                    loc.clone(),
                    format!(
                        "child '{child}' of supervisor '{}' is a {}; children are LLMAgent or Supervisor nodes",
                        node.id,
                        a.kind(c).map(NodeKind::as_str).unwrap_or("node")
                    ),
                );
            }
            if let Some(p) = a.parent[c]
                && p != i
            {
                r.error(
                    codes::CHILD_HAS_TWO_PARENTS,
                    loc.clone(),
                    format!(
                        "'{child}' is already a child of supervisor '{}'; a child has one parent: give supervisor '{}' its own node",
                        a.id(p),
                        node.id
                    ),
                );
                continue;
            }
            match chain_to_top(a, c) {
                Chain::Cycle => r.error(
                    codes::SUPERVISOR_CYCLE,
                    loc,
                    format!(
                        "supervisor '{}' is, through its children, a descendant of '{child}'; supervisors form a tree: remove one of the child links",
                        node.id
                    ),
                ),
                Chain::Top(path) => {
                    // `path` is the child, its parent and every supervisor above it: all but the
                    // child are supervisors. Levels count supervisors only, so S1 → S2 → S3 →
                    // agent is 3 levels (allowed) and S1 → S2 → S3 → S4 is 4 (rule 1.25). Only
                    // the supervisor that first goes past the limit is reported.
                    let child_is_supervisor = a.kind(c) == Some(NodeKind::Supervisor);
                    let levels = path.len() - 1 + usize::from(child_is_supervisor);
                    if child_is_supervisor && levels == limits::MAX_SUPERVISOR_DEPTH + 1 {
                        let names: Vec<&str> = path.iter().rev().map(|&v| a.id(v)).collect();
                        r.error(
                            codes::TOO_DEEP,
                            loc,
                            format!(
                                "supervisor '{child}' makes {levels} levels of supervisors ({}); supervisors nest at most {} levels: attach it to a supervisor higher up, or make it an LLMAgent",
                                names.join(" → "),
                                limits::MAX_SUPERVISOR_DEPTH
                            ),
                        );
                    }
                }
            }
        }
    }
    for (j, edge) in a.spec.edges.iter().enumerate() {
        for end in [&edge.from, &edge.to] {
            if let Some(&v) = a.index.get(end.as_str())
                && let Some(p) = a.parent[v]
            {
                r.error(
                    codes::CHILD_HAS_EDGES,
                    edge_loc(j, None),
                    format!(
                        "edge {j} touches '{end}', a child of supervisor '{}'; a child runs only when its parent calls it: remove the edge, or take '{end}' out of children",
                        a.id(p)
                    ),
                );
            }
        }
    }
}

fn is_agent(kind: Option<NodeKind>) -> bool {
    matches!(kind, Some(NodeKind::LlmAgent | NodeKind::Supervisor))
}

enum Chain {
    /// The node and its ancestors, the node first, the top (a main node) last.
    Top(Vec<usize>),
    /// The parent links loop.
    Cycle,
}

fn chain_to_top(a: &Analysis, start: usize) -> Chain {
    let mut path = vec![start];
    let mut cur = start;
    while let Some(p) = a.parent[cur] {
        if path.contains(&p) {
            return Chain::Cycle;
        }
        path.push(p);
        cur = p;
    }
    Chain::Top(path)
}
