//! Loops (seed rules 1.47–1.51, 2.12–2.14, 2.20): every cycle is closed by a back edge with
//! `maxIterations` 1–5; `maxIterations` only on back edges; no loop around a parallel section;
//! loops nest at most 2 deep; and a loop is entered only through its head, so "per entry of the
//! loop" has one meaning.

use super::analysis::{Analysis, BranchEnd};
use super::report::{Report, edge_loc};
use crate::codes::{self, limits};
use crate::composition::NodeKind;
use std::collections::HashSet;

/// Reports loop rules.
pub(crate) fn check(a: &Analysis, r: &mut Report) {
    // Loops inside a branch are reported by the parallel rules (a branch does not loop), not
    // again as loops around a parallel section.
    let in_branch_loop: HashSet<usize> = a
        .sections
        .iter()
        .flat_map(|s| &s.branches)
        .filter_map(|b| match b.end {
            BranchEnd::Loops(e) => Some(e),
            _ => None,
        })
        .collect();
    for (j, edge) in a.spec.edges.iter().enumerate() {
        let Some(max) = edge.max_iterations else {
            continue;
        };
        if !(1..=limits::MAX_LOOP_ITERATIONS).contains(&max) {
            r.error(
                codes::MAX_ITERATIONS_OUT_OF_RANGE,
                edge_loc(j, Some("maxIterations")),
                format!(
                    "maxIterations {max} on edge {j} is out of range; use 1 to {} (loops nested in it multiply: the run's budgets bound the rest)",
                    limits::MAX_LOOP_ITERATIONS
                ),
            );
        }
        let reached = a.source(j).is_some_and(|v| a.reachable[v]);
        if a.in_graph[j] && reached && !a.back_edge[j] {
            r.error(
                codes::MAX_ITERATIONS_NOT_BACK_EDGE,
                edge_loc(j, Some("maxIterations")),
                format!(
                    "edge {j} ('{}' → '{}') closes no loop, so maxIterations does nothing; remove it, or set it on the edge that goes back",
                    edge.from, edge.to
                ),
            );
        }
    }
    for lp in &a.loops {
        let j = lp.back_edge;
        let edge = &a.spec.edges[j];
        let path: Vec<&str> = lp
            .body
            .iter()
            .map(|&v| a.id(v))
            .chain([a.id(lp.head)])
            .collect();
        let path = path.join(" → ");
        if !lp.single_entry {
            r.error(
                codes::LOOP_WITH_TWO_ENTRIES,
                edge_loc(j, None),
                format!(
                    "the loop closed by edge {j} ({path}) can be entered without passing its head '{}', so its iterations cannot be counted per entry; route into the loop only through '{}'",
                    a.id(lp.head),
                    a.id(lp.head)
                ),
            );
        }
        // Every rule is judged on its own, so no code hides another: a loop can go around a
        // parallel section, lack maxIterations and nest too deep all at once. A loop inside a
        // branch is reported by the parallel rules, not again as going around the section.
        if !in_branch_loop.contains(&j)
            && let Some(&v) = lp
                .body
                .iter()
                .find(|&&v| matches!(a.kind(v), Some(NodeKind::Parallel | NodeKind::Join)))
        {
            r.error(
                codes::LOOP_AROUND_PARALLEL,
                edge_loc(j, None),
                format!(
                    "the loop closed by edge {j} ({path}) goes around the parallel section at '{}'; a section runs once per entry: loop before the parallel or after the join",
                    a.id(v)
                ),
            );
        }
        if edge.max_iterations.is_none() {
            r.error(
                codes::UNBOUNDED_CYCLE,
                edge_loc(j, None),
                format!(
                    "edge {j} ('{}' → '{}') closes the cycle {path} without maxIterations; set maxIterations (1–{}) on it",
                    edge.from,
                    edge.to,
                    limits::MAX_LOOP_ITERATIONS
                ),
            );
        }
        if lp.depth > limits::MAX_LOOP_DEPTH {
            r.error(
                codes::LOOP_TOO_DEEP,
                edge_loc(j, None),
                format!(
                    "the loop closed by edge {j} ({path}) is nested {} deep; loops nest at most {} deep (their caps multiply): flatten it into its outer loop",
                    lp.depth,
                    limits::MAX_LOOP_DEPTH
                ),
            );
        }
    }
}
