//! Ids, edges and the shape of the main graph: duplicate or malformed ids, edge ends, self-loops,
//! duplicate edges, the first node, reachability, a terminal node, and fan-outs (seed rules
//! 1.23, 1.32–1.38, 1.43).

use super::analysis::Analysis;
use super::report::{Report, edge_loc, node_field, node_loc, plain_list, spec_loc};
use crate::codes::{self, limits};
use crate::composition::{ID_PATTERN, NodeKind};
use regex::Regex;
use std::collections::HashSet;
use std::sync::LazyLock;

/// The id pattern of nodes and labels.
pub(crate) static ID_RE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(ID_PATTERN).ok());

/// Whether `s` is a valid node id or label.
pub(crate) fn valid_id(s: &str) -> bool {
    ID_RE.as_ref().is_some_and(|re| re.is_match(s))
}

/// Reports the structural rules.
pub(crate) fn check(a: &Analysis, r: &mut Report) {
    let spec = a.spec;
    if spec.nodes.is_empty() {
        r.error(
            codes::EMPTY_COMPOSITION,
            spec_loc("nodes"),
            "the composition has no node; add at least one",
        );
        return;
    }
    if spec.nodes.len() > limits::MAX_NODES {
        r.error(
            codes::TOO_MANY_NODES,
            spec_loc("nodes"),
            format!(
                "the composition has {} nodes; at most {} are allowed: split it, or use a supervisor's children for repeated work",
                spec.nodes.len(),
                limits::MAX_NODES
            ),
        );
    }
    if spec.edges.len() > limits::MAX_EDGES {
        r.error(
            codes::TOO_MANY_EDGES,
            spec_loc("edges"),
            format!(
                "the composition has {} edges; at most {} are allowed",
                spec.edges.len(),
                limits::MAX_EDGES
            ),
        );
    }
    check_ids(a, r);
    check_edges(a, r);
    check_first_and_reachable(a, r);
    check_fan_out(a, r);
}

fn check_ids(a: &Analysis, r: &mut Report) {
    for (i, node) in a.spec.nodes.iter().enumerate() {
        if !valid_id(&node.id) {
            r.error(
                codes::INVALID_ID,
                node_field(i, "id"),
                format!(
                    "node id '{}' is not valid: use lowercase letters, digits, '-' and '_', starting with a letter, at most 63 characters",
                    node.id
                ),
            );
        }
        if a.ignored[i] {
            let first = a.index.get(node.id.as_str()).copied().unwrap_or(0);
            r.error(
                codes::DUPLICATE_ID,
                node_field(i, "id"),
                format!(
                    "node id '{}' is already used by node {first}; give this node another id",
                    node.id
                ),
            );
        }
    }
}

fn check_edges(a: &Analysis, r: &mut Report) {
    // Hint with the nodes an edge may touch (supervisor children take no edges).
    let ids = plain_list(
        (0..a.spec.nodes.len())
            .filter(|&i| a.is_main(i))
            .map(|i| a.id(i)),
    );
    let mut seen = HashSet::new();
    for (j, edge) in a.spec.edges.iter().enumerate() {
        for (field, end) in [("from", &edge.from), ("to", &edge.to)] {
            if !a.index.contains_key(end.as_str()) {
                let verb = if field == "from" {
                    "comes from"
                } else {
                    "goes to"
                };
                r.error(
                    codes::UNKNOWN_NODE,
                    edge_loc(j, Some(field)),
                    format!("edge {j} {verb} '{end}', which is not a node; use one of: {ids}"),
                );
            }
        }
        let Some((f, t)) = a.ends[j] else { continue };
        if f == t {
            r.error(
                codes::SELF_LOOP,
                edge_loc(j, None),
                format!(
                    "edge {j} goes from '{}' to itself; to repeat a node, loop back from a later node (e.g. a critic) with maxIterations",
                    edge.from
                ),
            );
            continue;
        }
        if !seen.insert((f, t, edge.when.as_deref())) {
            let label = edge
                .when
                .as_deref()
                .map(|w| format!(" when '{w}'"))
                .unwrap_or_default();
            r.error(
                codes::DUPLICATE_EDGE,
                edge_loc(j, None),
                format!(
                    "edge {j} ('{}' → '{}'{label}) is listed twice; remove one",
                    edge.from, edge.to
                ),
            );
        }
    }
}

fn check_first_and_reachable(a: &Analysis, r: &mut Report) {
    let main: Vec<usize> = (0..a.spec.nodes.len()).filter(|&i| a.is_main(i)).collect();
    // The first node is the one no forward edge enters: a critic loop may start at its head
    // (the analysis picks it), so only a graph with no node on it at all has none.
    let [first, rest @ ..] = a.roots.as_slice() else {
        r.error(
            codes::NO_FIRST_NODE,
            spec_loc("nodes"),
            "every node is a supervisor's child, so no node runs first; the first node is the one no forward edge enters: break the supervisor cycle so that the top supervisor is on the graph",
        );
        return;
    };
    for &i in rest {
        r.error(
            codes::MULTIPLE_FIRST_NODES,
            node_loc(i, &[]),
            format!(
                "node '{}' has no incoming edge, like the first node '{}'; only the first node may have none: add an edge into '{}', or remove it",
                a.id(i),
                a.id(*first),
                a.id(i)
            ),
        );
    }
    for &i in &main {
        if !a.reachable[i] {
            r.error(
                codes::UNREACHABLE_NODE,
                node_loc(i, &[]),
                format!(
                    "node '{}' cannot be reached from the first node '{}'; add an edge into it from a node that runs, or remove it",
                    a.id(i),
                    a.id(*first)
                ),
            );
        }
    }
    if !main.iter().any(|&i| a.reachable[i] && a.is_terminal(i)) {
        r.error(
            codes::NO_TERMINAL_NODE,
            spec_loc("edges"),
            "no reachable node ends the run: every node has an outgoing edge for every label; add a last node with no outgoing edge (or a label with no edge)",
        );
    }
}

fn check_fan_out(a: &Analysis, r: &mut Report) {
    for i in 0..a.spec.nodes.len() {
        let outs = &a.out_edges[i];
        if outs.len() < 2 || a.labelled(i) || a.kind(i) == Some(NodeKind::Parallel) {
            continue;
        }
        // A Router without labels is reported as missing its labels; its edges route.
        if a.kind(i) == Some(NodeKind::Router) {
            continue;
        }
        let targets = plain_list(outs.iter().filter_map(|&j| a.target(j)).map(|t| a.id(t)));
        r.error(
            codes::FAN_OUT_NOT_PARALLEL,
            node_loc(i, &[]),
            format!(
                "node '{}' has {} outgoing edges without labels (to {targets}); only a Parallel node fans out: insert a Parallel node to run them all, or give '{}' output.labels and a `when` on each edge to pick one",
                a.id(i),
                outs.len(),
                a.id(i)
            ),
        );
    }
}
