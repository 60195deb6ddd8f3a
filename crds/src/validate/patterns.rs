//! Patterns (seed rules 1.10–1.11, 1.71–1.75): the pattern is a label, but a graph that does not
//! fit it is refused (`pattern_mismatch`, at `spec.pattern`):
//!
//! - Pipeline: no labels (no `when` edge, labelled node or Router), no Parallel, no loop;
//! - Router: at least one `when` edge;
//! - CriticLoop: at least one loop;
//! - FanOutFanIn, MapReduce: a Parallel node and the Join that closes it;
//! - Supervisor: a Supervisor node;
//! - Debate: parallel speakers (a Parallel and its Join) or speakers taking turns (a loop);
//! - PlanAndExecute (the seeds give no rule; ours): at least two agent nodes (LLMAgent or
//!   Supervisor) on the main graph, a planner and something that executes its plan;
//! - Handoff: refused as `not_supported_yet` by the kind rules.

use super::analysis::Analysis;
use super::report::{Report, spec_loc};
use crate::codes;
use crate::composition::{NodeKind, Pattern};

/// Reports the pattern rule.
pub(crate) fn check(a: &Analysis, r: &mut Report) {
    let n = a.spec.nodes.len();
    let when_edge =
        (0..a.spec.edges.len()).find(|&j| a.in_graph[j] && a.spec.edges[j].when.is_some());
    // A Parallel whose branches reach a Join (a broken branch is reported on its own).
    let has_section = a.sections.iter().any(|s| {
        s.branches
            .iter()
            .any(|b| matches!(b.end, super::analysis::BranchEnd::Join(_)))
    });
    let has_loop = !a.loops.is_empty();
    let of_kind = |kind: NodeKind| (0..n).find(|&i| a.is_main(i) && a.kind(i) == Some(kind));
    let pattern = a.spec.pattern;
    let problem: Option<String> = match pattern {
        Pattern::Pipeline => {
            let mut found = Vec::new();
            if let Some(j) = when_edge {
                found.push(format!("a labelled edge (edge {j})"));
            }
            let routes = |i: usize| {
                a.kind(i) == Some(NodeKind::Router)
                    || (a.labelled(i) && a.kind(i) != Some(NodeKind::HumanApproval))
            };
            if when_edge.is_none()
                && let Some(i) = (0..n).find(|&i| a.is_main(i) && routes(i))
            {
                found.push(format!("a node that routes on labels ('{}')", a.id(i)));
            }
            if let Some(i) = of_kind(NodeKind::Parallel) {
                found.push(format!("a fan-out (parallel '{}')", a.id(i)));
            }
            if let Some(lp) = a.loops.first() {
                found.push(format!("a loop (edge {})", lp.back_edge));
            }
            (!found.is_empty()).then(|| {
                format!(
                    "pattern Pipeline is a chain with no labels, fan-out or loops, but this graph has {}; pick the pattern that fits (Router, FanOutFanIn, CriticLoop…)",
                    found.join(", ")
                )
            })
        }
        Pattern::Router => when_edge.is_none().then(|| {
            "pattern Router needs a node that picks a label and an edge with when for it; add a Router node with output.labels, or pick another pattern".to_owned()
        }),
        Pattern::CriticLoop => (!has_loop).then(|| {
            "pattern CriticLoop needs a loop: a critic whose label (e.g. rejected) sends work back over an edge with maxIterations".to_owned()
        }),
        Pattern::FanOutFanIn | Pattern::MapReduce => (!has_section).then(|| {
            format!(
                "pattern {} needs a Parallel node whose branches a Join closes; add them, or pick another pattern",
                pattern.as_str()
            )
        }),
        Pattern::Supervisor => of_kind(NodeKind::Supervisor).is_none().then(|| {
            "pattern Supervisor needs a Supervisor node with children; add one, or pick another pattern".to_owned()
        }),
        Pattern::Debate => (!has_section && !has_loop).then(|| {
            "pattern Debate needs speakers in parallel (a Parallel and its Join) or taking turns (a loop with maxIterations)".to_owned()
        }),
        Pattern::PlanAndExecute => {
            let agents = (0..n)
                .filter(|&i| a.is_main(i) && matches!(a.kind(i), Some(NodeKind::LlmAgent | NodeKind::Supervisor)))
                .count();
            (agents < 2).then(|| {
                format!(
                    "pattern PlanAndExecute needs a planner and at least one executor: two or more LLMAgent or Supervisor nodes on the graph (this one has {agents})"
                )
            })
        }
        Pattern::Handoff => None,
    };
    if let Some(message) = problem {
        r.error(codes::PATTERN_MISMATCH, spec_loc("pattern"), message);
    }
}
