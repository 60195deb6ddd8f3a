//! Parallel sections as the analysis sees them: each branch of a Parallel node walked from the
//! Parallel until a Join, or until the first thing that makes it more than a chain of agents.
//! A part of the analysis (it walks [`Analysis`]'s edges); the rule modules reach its types
//! through the analysis's re-export.

use super::Analysis;
use crate::composition::NodeKind;
use std::collections::BTreeSet;

/// How the walk of one parallel branch ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BranchEnd {
    /// It reached this Join after at least one node.
    Join(usize),
    /// The Parallel's edge goes straight to this Join.
    Empty(usize),
    /// A Parallel node on the branch.
    Parallel(usize),
    /// A HumanApproval on the branch.
    Approval(usize),
    /// A labelled node or Router on the branch.
    Routes(usize),
    /// A branch node another edge also enters.
    MergesIn(usize),
    /// A branch node with no outgoing edge.
    EndsWithout(usize),
    /// A branch node with several outgoing edges (the fan-out rule reports it).
    FansOut(usize),
    /// This edge goes back into the branch or to its Parallel.
    Loops(usize),
}

/// One branch of a Parallel node.
#[derive(Clone, Debug)]
pub(crate) struct BranchWalk {
    /// The Parallel's edge that starts it.
    pub edge: usize,
    /// Its nodes, Parallel and Join excluded.
    pub nodes: Vec<usize>,
    /// How it ended.
    pub end: BranchEnd,
}

/// A Parallel node and its branches.
#[derive(Clone, Debug)]
pub(crate) struct SectionInfo {
    /// The Parallel node.
    pub parallel: usize,
    /// Its branches in edge order.
    pub branches: Vec<BranchWalk>,
    /// The Join every branch reaches, when they all reach the same one.
    pub join: Option<usize>,
}

impl SectionInfo {
    /// Whether some branch is not a plain chain ending at a Join.
    pub fn broken(&self) -> bool {
        self.branches
            .iter()
            .any(|b| !matches!(b.end, BranchEnd::Join(_)))
    }
}

impl Analysis<'_> {
    pub(super) fn walk_section(&self, parallel: usize) -> SectionInfo {
        let branches: Vec<BranchWalk> = self.out_edges[parallel]
            .iter()
            .map(|&edge| self.walk_branch(parallel, edge))
            .collect();
        let joins: BTreeSet<usize> = branches
            .iter()
            .filter_map(|b| match b.end {
                BranchEnd::Join(j) => Some(j),
                _ => None,
            })
            .collect();
        let complete = branches.iter().all(|b| matches!(b.end, BranchEnd::Join(_)));
        let join = match (complete, joins.len()) {
            (true, 1) => joins.first().copied(),
            _ => None,
        };
        SectionInfo {
            parallel,
            branches,
            join,
        }
    }

    fn walk_branch(&self, parallel: usize, edge: usize) -> BranchWalk {
        let mut nodes: Vec<usize> = Vec::new();
        let mut cur = self.target(edge).unwrap_or(parallel);
        let end = loop {
            let kind = self.kind(cur);
            if kind == Some(NodeKind::Join) {
                break if nodes.is_empty() {
                    BranchEnd::Empty(cur)
                } else {
                    BranchEnd::Join(cur)
                };
            }
            if kind == Some(NodeKind::Parallel) {
                break BranchEnd::Parallel(cur);
            }
            if kind == Some(NodeKind::HumanApproval) {
                break BranchEnd::Approval(cur);
            }
            if kind == Some(NodeKind::Router) || self.labelled(cur) {
                break BranchEnd::Routes(cur);
            }
            if self.in_edges[cur].len() != 1 {
                break BranchEnd::MergesIn(cur);
            }
            let next_edge = match self.out_edges[cur].as_slice() {
                [] => break BranchEnd::EndsWithout(cur),
                [one] => *one,
                _ => break BranchEnd::FansOut(cur),
            };
            nodes.push(cur);
            match self.target(next_edge) {
                Some(next) if next != parallel && !nodes.contains(&next) => cur = next,
                _ => break BranchEnd::Loops(next_edge),
            }
        };
        BranchWalk { edge, nodes, end }
    }
}
