//! Parallel sections (seed rules 1.24, 1.44–1.46, 2.17–2.18): a Parallel node fans out to 2–6
//! branches, each a chain of agents that a single Join closes; branches do not route, loop or
//! fan out again, and a Join closes exactly one Parallel's branches.

use super::analysis::{Analysis, BranchEnd, SectionInfo};
use super::report::{Report, edge_loc, node_loc, plain_list};
use crate::codes::{self, limits};
use crate::composition::NodeKind;
use std::collections::{BTreeMap, HashSet};

/// Reports parallel-section rules.
pub(crate) fn check(a: &Analysis, r: &mut Report) {
    for section in &a.sections {
        check_section(a, section, r);
    }
    if a.sections.iter().any(SectionInfo::broken) {
        // The joins of a broken section cannot be judged; its own error says what to fix.
        return;
    }
    check_joins(a, r);
}

fn check_section(a: &Analysis, s: &SectionInfo, r: &mut Report) {
    let p = s.parallel;
    let count = s.branches.len();
    if count > limits::MAX_PARALLEL_BRANCHES {
        r.error(
            codes::TOO_MANY_BRANCHES,
            node_loc(p, &[]),
            format!(
                "parallel '{}' has {count} branches; at most {} run at once: merge branches, or use two parallel sections one after the other",
                a.id(p),
                limits::MAX_PARALLEL_BRANCHES
            ),
        );
    } else if count < limits::MIN_PARALLEL_BRANCHES {
        r.error(
            codes::TOO_FEW_BRANCHES,
            node_loc(p, &[]),
            format!(
                "parallel '{}' has {count} branch{}; a Parallel fans out to {}–{} branches: add edges to more agents, or remove the Parallel",
                a.id(p),
                if count == 1 { "" } else { "es" },
                limits::MIN_PARALLEL_BRANCHES,
                limits::MAX_PARALLEL_BRANCHES
            ),
        );
    }
    for branch in &s.branches {
        let first = a.target(branch.edge).map(|t| a.id(t)).unwrap_or("");
        match branch.end {
            BranchEnd::Join(_) | BranchEnd::Approval(_) | BranchEnd::FansOut(_) => {}
            BranchEnd::Empty(j) => r.error(
                codes::BRANCH_NOT_A_CHAIN,
                edge_loc(branch.edge, None),
                format!(
                    "edge {} goes straight from parallel '{}' to join '{}'; put at least one agent on each branch",
                    branch.edge,
                    a.id(p),
                    a.id(j)
                ),
            ),
            BranchEnd::MergesIn(x) => {
                let others = plain_list(a.in_edges[x].iter().filter_map(|&e| a.source(e)).map(|v| a.id(v)));
                r.error(
                    codes::BRANCH_NOT_A_CHAIN,
                    node_loc(x, &[]),
                    format!(
                        "node '{}' on branch '{first}' of parallel '{}' is entered from {others}; a branch is a chain that only its Parallel enters: remove the extra edges",
                        a.id(x),
                        a.id(p)
                    ),
                );
            }
            BranchEnd::EndsWithout(x) => r.error(
                codes::BRANCH_NOT_A_CHAIN,
                node_loc(x, &[]),
                format!(
                    "branch '{first}' of parallel '{}' ends at '{}' without reaching a Join; add an edge from '{}' to the Join that closes the branches",
                    a.id(p),
                    a.id(x),
                    a.id(x)
                ),
            ),
            BranchEnd::Parallel(x) => r.error(
                codes::NESTED_FAN_OUT,
                node_loc(x, &[]),
                format!(
                    "parallel '{}' sits on branch '{first}' of parallel '{}'; branches do not fan out again: run '{}' after the join",
                    a.id(x),
                    a.id(p),
                    a.id(x)
                ),
            ),
            BranchEnd::Routes(x) => r.error(
                codes::NESTED_FAN_OUT,
                node_loc(x, &[]),
                format!(
                    "node '{}' on branch '{first}' of parallel '{}' routes on labels; branches do not route: route after the join, or remove its labels",
                    a.id(x),
                    a.id(p)
                ),
            ),
            BranchEnd::Loops(e) => r.error(
                codes::NESTED_FAN_OUT,
                edge_loc(e, None),
                format!(
                    "edge {e} loops back inside branch '{first}' of parallel '{}'; branches do not loop: loop before the parallel or after the join",
                    a.id(p)
                ),
            ),
        }
    }
    let mut by_join: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for branch in &s.branches {
        if let BranchEnd::Join(j) = branch.end {
            by_join
                .entry(j)
                .or_default()
                .push(a.target(branch.edge).map(|t| a.id(t)).unwrap_or(""));
        }
    }
    if by_join.len() > 1 {
        let ends: Vec<String> = by_join
            .iter()
            .map(|(j, branches)| format!("'{}' (branches {})", a.id(*j), plain_list(branches)))
            .collect();
        r.error(
            codes::JOIN_MISMATCH,
            node_loc(p, &[]),
            format!(
                "the branches of parallel '{}' end at different joins: {}; close every branch with one Join",
                a.id(p),
                ends.join(", ")
            ),
        );
    }
}

fn check_joins(a: &Analysis, r: &mut Report) {
    for j in 0..a.spec.nodes.len() {
        if a.kind(j) != Some(NodeKind::Join) || !a.is_main(j) || !a.reachable[j] {
            continue;
        }
        let closing: Vec<&SectionInfo> = a
            .sections
            .iter()
            .filter(|s| s.branches.iter().any(|b| b.end == BranchEnd::Join(j)))
            .collect();
        match closing.as_slice() {
            [] => r.error(
                codes::JOIN_MISMATCH,
                node_loc(j, &[]),
                format!(
                    "join '{}' closes no Parallel's branches; a Join ends a parallel section: lead every branch of one Parallel into it, or make it an LLMAgent",
                    a.id(j)
                ),
            ),
            [s] if s.join == Some(j) => {
                let closing_edges: HashSet<usize> = s
                    .branches
                    .iter()
                    .filter_map(|b| b.nodes.last())
                    .filter_map(|&last| a.out_edges[last].first().copied())
                    .collect();
                for &e in &a.in_edges[j] {
                    if closing_edges.contains(&e) || a.back_edge[e] {
                        continue;
                    }
                    let from = a.source(e).map(|v| a.id(v)).unwrap_or("");
                    r.error(
                        codes::JOIN_MISMATCH,
                        edge_loc(e, None),
                        format!(
                            "edge {e} enters join '{}' from '{from}', which is not a branch of parallel '{}'; only the branches of its Parallel enter a Join",
                            a.id(j),
                            a.id(s.parallel)
                        ),
                    );
                }
            }
            [_] => {}
            many => r.error(
                codes::JOIN_MISMATCH,
                node_loc(j, &[]),
                format!(
                    "join '{}' closes branches of several parallels ({}); give each Parallel its own Join",
                    a.id(j),
                    plain_list(many.iter().map(|s| a.id(s.parallel)))
                ),
            ),
        }
    }
}
