//! Labels and `when` (seed rules 1.39–1.42, 1.68, 1.78): a labelled node (output.labels, a
//! Router, or a HumanApproval with its implicit approved/rejected) routes on its label, so each
//! of its edges names one label and each label has at most one edge; an unlabelled node's edges
//! carry no `when`. A label with no edge ends the branch (warning `label_ends_run`).

use super::analysis::Analysis;
use super::report::{Report, edge_loc, node_loc, plain_list};
use super::structure::valid_id;
use crate::codes;
use crate::composition::NodeKind;
use std::collections::HashMap;

/// Reports label rules.
pub(crate) fn check(a: &Analysis, r: &mut Report) {
    check_declared_labels(a, r);
    for (j, edge) in a.spec.edges.iter().enumerate() {
        if !a.in_graph[j] {
            continue;
        }
        let Some(from) = a.source(j) else { continue };
        let labels = &a.labels[from];
        match (&edge.when, labels.is_empty()) {
            (Some(when), true) => r.error(
                codes::WHEN_WITHOUT_LABELS,
                edge_loc(j, Some("when")),
                format!(
                    "edge {j} has when '{when}', but its source '{}' has no labels; give '{}' output.labels, or remove when",
                    edge.from, edge.from
                ),
            ),
            (Some(when), false) if !labels.contains(when) => r.error(
                codes::UNKNOWN_LABEL,
                edge_loc(j, Some("when")),
                format!(
                    "edge {j} has when '{when}', which is not a label of '{}'; use one of: {}",
                    edge.from,
                    plain_list(labels)
                ),
            ),
            (None, false) => r.error(
                codes::MISSING_WHEN,
                edge_loc(j, None),
                format!(
                    "edge {j} leaves '{}', which routes on its label, but has no when; set when to one of: {}",
                    edge.from,
                    plain_list(labels)
                ),
            ),
            _ => {}
        }
    }
    check_label_edges(a, r);
}

fn check_declared_labels(a: &Analysis, r: &mut Report) {
    for (i, node) in a.spec.nodes.iter().enumerate() {
        let Some(output) = &node.output else { continue };
        let mut seen = Vec::new();
        for (k, label) in output.labels.iter().enumerate() {
            let loc = node_loc(i, &["output".into(), "labels".into(), k.into()]);
            if !valid_id(label) {
                r.error(
                    codes::INVALID_ID,
                    loc.clone(),
                    format!(
                        "label '{label}' of '{}' is not valid: use lowercase letters, digits, '-' and '_', starting with a letter",
                        node.id
                    ),
                );
            }
            if seen.contains(&label) {
                r.error(
                    codes::DUPLICATE_LABEL,
                    loc,
                    format!(
                        "label '{label}' is listed twice in the labels of '{}'; remove one",
                        node.id
                    ),
                );
            }
            seen.push(label);
        }
    }
}

/// Two edges for one label, and labels with no edge.
fn check_label_edges(a: &Analysis, r: &mut Report) {
    for i in 0..a.spec.nodes.len() {
        if !a.is_main(i) || a.labels[i].is_empty() {
            continue;
        }
        let mut by_label: HashMap<&str, usize> = HashMap::new();
        for &j in &a.out_edges[i] {
            let Some(when) = a.spec.edges[j].when.as_deref() else {
                continue;
            };
            if !a.labels[i].iter().any(|l| l == when) {
                continue;
            }
            if let Some(first) = by_label.get(when) {
                r.error(
                    codes::LABEL_HAS_TWO_EDGES,
                    edge_loc(j, Some("when")),
                    format!(
                        "label '{when}' of '{}' already takes edge {first}; a label picks one edge: remove this one, or use another label (a Parallel node runs several)",
                        a.id(i)
                    ),
                );
            } else {
                by_label.insert(when, j);
            }
        }
        let is_approval = a.kind(i) == Some(NodeKind::HumanApproval);
        // A HumanApproval with no edge at all simply ends the run once decided.
        if is_approval && a.out_edges[i].is_empty() {
            continue;
        }
        for (k, label) in a.labels[i].iter().enumerate() {
            if by_label.contains_key(label.as_str()) {
                continue;
            }
            let (loc, outcome) = if is_approval {
                let outcome = if label == "rejected" {
                    "ends the run Rejected"
                } else {
                    "ends the run with the approved text"
                };
                (node_loc(i, &[]), outcome)
            } else {
                let k = a.spec.nodes[i]
                    .output
                    .as_ref()
                    .and_then(|o| o.labels.iter().position(|l| l == label))
                    .unwrap_or(k);
                (
                    node_loc(i, &["output".into(), "labels".into(), k.into()]),
                    "ends the branch with its answer",
                )
            };
            r.warn(
                codes::LABEL_ENDS_RUN,
                loc,
                format!(
                    "label '{label}' of '{}' has no edge, so answering it {outcome}; add an edge with when '{label}' if that is not meant",
                    a.id(i)
                ),
            );
        }
    }
}
