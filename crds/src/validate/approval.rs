//! Human approval (seed rules 1.68–1.70, 2.33): a HumanApproval routes on `approved` /
//! `rejected` (its edges are checked with the label rules), never sits on a parallel branch and
//! is never followed by a Router (its edges already route).

use super::analysis::{Analysis, BranchEnd};
use super::report::{Report, edge_loc, node_loc};
use crate::codes;
use crate::composition::NodeKind;

/// Reports human-approval rules.
pub(crate) fn check(a: &Analysis, r: &mut Report) {
    for section in &a.sections {
        for branch in &section.branches {
            if let BranchEnd::Approval(x) = branch.end {
                r.error(
                    codes::APPROVAL_ON_BRANCH,
                    node_loc(x, &[]),
                    format!(
                        "human approval '{}' sits on a branch of parallel '{}'; a person reviews one text: put the approval after the join",
                        a.id(x),
                        a.id(section.parallel)
                    ),
                );
            }
        }
    }
    for i in 0..a.spec.nodes.len() {
        if a.kind(i) != Some(NodeKind::HumanApproval) {
            continue;
        }
        for &j in &a.out_edges[i] {
            if let Some(t) = a.target(j)
                && a.kind(t) == Some(NodeKind::Router)
            {
                r.error(
                    codes::APPROVAL_FEEDS_ROUTER,
                    edge_loc(j, None),
                    format!(
                        "edge {j} takes human approval '{}' to router '{}'; an approval already routes: send each of approved/rejected straight to the node it should reach",
                        a.id(i),
                        a.id(t)
                    ),
                );
            }
        }
    }
}
