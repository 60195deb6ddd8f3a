//! The plan: the structure the engine executes, built (with petgraph) from a composition that
//! validates. Indexes (`NodeIdx`, `EdgeIdx`, `LoopIdx`, `SectionIdx`) point into the plan's own
//! vectors; node indexes equal the node's position in `spec.nodes`, edge indexes its position
//! in `spec.edges`.
//!
//! PUBLIC API (fixed; the runner codes against it). [`plan`] validates first and builds on the
//! validator's graph analysis (one home for every rule).
//!
//! Its tests: `tests.rs` (each construct's plan) and `generated_tests.rs` (generated
//! compositions: valid ones always plan, any spec plans exactly when it validates).

#[cfg(test)]
mod generated_tests;
#[cfg(test)]
mod tests;

use crate::budget::BudgetLimits;
use crate::common::{Loc, PathSegment, ValidationIssue, loc_to_string};
use crate::composition::{CompositionSpec, NodeKind};
pub use crate::tool_names::{PlannedTool, ToolKind, child_tool_name, model_tool_name};
use crate::validate::{
    Analysis, DeploymentLimits, RegistryView, Validation, resolve_model, resolve_tool,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Index of a node in [`Plan::nodes`] (= its index in `spec.nodes`).
pub type NodeIdx = usize;
/// Index of an edge in [`Plan::edges`] (= its index in `spec.edges`).
pub type EdgeIdx = usize;
/// Index of a loop in [`Plan::loops`].
pub type LoopIdx = usize;
/// Index of a parallel section in [`Plan::sections`].
pub type SectionIdx = usize;

/// An executable composition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The first node: the only one no forward edge enters (supervisor children aside); a
    /// critic loop may start at it, so its back edge may enter it.
    pub start: NodeIdx,
    /// Every node, supervisor children included, in spec order.
    pub nodes: Vec<PlanNode>,
    /// Every edge, in spec order.
    pub edges: Vec<PlanEdge>,
    /// Every loop (one per back edge), outer loops before the loops nested in them.
    pub loops: Vec<PlanLoop>,
    /// Every parallel section.
    pub sections: Vec<ParallelSection>,
    /// The budgets the run gets (the spec's, with the ceilings filled in).
    pub budgets: BudgetLimits,
    /// Topological order of the nodes on the main graph (back edges ignored, supervisor
    /// children left out): the order a console lays them out in.
    pub order: Vec<NodeIdx>,
}

/// One node of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanNode {
    /// The node's id.
    pub id: String,
    /// Its kind.
    pub kind: NodeKind,
    /// Its instruction (empty when none).
    pub instruction: String,
    /// Its description (empty when none).
    pub description: String,
    /// For a HumanApproval: the reviewer's prompt (empty when none).
    pub prompt: String,
    /// The model entry the node runs on: its own `model`, or the deployment's default. `None`
    /// for kinds that call no model.
    pub model: Option<String>,
    /// Labels of a labelled node, a Router (its `when` labels) or a HumanApproval
    /// (`approved`, `rejected`).
    pub labels: Vec<String>,
    /// The tools the node's model may call (supervisor children not included).
    pub tools: Vec<PlannedTool>,
    /// For a Supervisor: its children, exposed as tools named `n_<id>`.
    pub children: Vec<NodeIdx>,
    /// For a supervisor child: its parent.
    pub parent: Option<NodeIdx>,
    /// What happens after the node answers.
    pub next: Next,
    /// The section this node is a branch member of (Parallel and Join nodes excluded).
    pub in_section: Option<SectionIdx>,
}

/// What follows a node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum Next {
    /// No outgoing edge: the node's answer ends this branch (the run, on the main path).
    End,
    /// One unlabelled edge.
    Edge {
        /// The edge to take.
        edge: EdgeIdx,
    },
    /// Route by the node's label; a label missing from the map ends the branch
    /// (`label_ends_run`).
    Route {
        /// Label → edge.
        routes: BTreeMap<String, EdgeIdx>,
    },
    /// A Parallel node: fan out into its section's branches.
    FanOut {
        /// The section.
        section: SectionIdx,
    },
    /// A supervisor child: it returns to its parent, never follows an edge.
    ReturnToParent,
}

/// One edge of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanEdge {
    /// Source node.
    pub from: NodeIdx,
    /// Target node.
    pub to: NodeIdx,
    /// The label that takes it.
    pub when: Option<String>,
    /// Screen the text crossing it.
    pub screen: bool,
    /// When this edge closes a loop: that loop.
    pub back_edge_of: Option<LoopIdx>,
}

/// A loop: a back edge with its cap.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanLoop {
    /// The back edge (its `from` is the node that judges, its `to` the loop's head).
    pub back_edge: EdgeIdx,
    /// The node the back edge returns to.
    pub head: NodeIdx,
    /// The node the back edge leaves from.
    pub tail: NodeIdx,
    /// How many times per entry of the loop the back edge may be taken (1–5).
    pub max_iterations: u32,
    /// The nodes of the loop's body (head to tail), in order.
    pub body: Vec<NodeIdx>,
    /// The loop this one is nested in.
    pub parent: Option<LoopIdx>,
    /// Loops nested in this one: their counters restart from zero when this loop's back edge is
    /// taken.
    pub nested: Vec<LoopIdx>,
    /// 1 for an outermost loop, 2 for a loop inside it.
    pub depth: u32,
}

/// A parallel section: a Parallel node, its branches, and the Join that closes them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParallelSection {
    /// The Parallel node.
    pub parallel: NodeIdx,
    /// The Join node.
    pub join: NodeIdx,
    /// Each branch: the chain of nodes from the Parallel to the Join, in the Parallel's edge
    /// order. A branch's name (its `## <branch>` heading) is its first node's id.
    pub branches: Vec<Vec<NodeIdx>>,
}

impl Plan {
    /// A node by id.
    pub fn node_by_id(&self, id: &str) -> Option<(NodeIdx, &PlanNode)> {
        self.nodes.iter().enumerate().find(|(_, n)| n.id == id)
    }
}

/// Builds the plan of a composition: validates it first (the same [`crate::validate::validate`])
/// and refuses with its errors; a spec that validates always plans.
pub fn plan(
    spec: &CompositionSpec,
    registry: &RegistryView,
    limits: &DeploymentLimits,
) -> Result<Plan, Validation> {
    let (validation, analysis) = crate::validate::check(spec, registry, limits);
    if !validation.is_valid() {
        return Err(validation);
    }
    build(&analysis, registry, limits).ok_or_else(|| Validation {
        errors: vec![inconsistent()],
        warnings: validation.warnings,
    })
}

fn inconsistent() -> ValidationIssue {
    let loc: Loc = vec![PathSegment::from("spec")];
    ValidationIssue {
        field: loc_to_string(&loc),
        loc,
        code: crate::codes::PLAN_INCONSISTENT.to_owned(),
        message: "the validator accepted this composition but the planner could not build it; this is a bug: please report it with the composition".to_owned(),
    }
}

/// Builds the plan from an analysis; `None` when the graph is not one a plan can hold (only for
/// a spec that does not validate).
pub(crate) fn build(
    a: &Analysis,
    registry: &RegistryView,
    limits: &DeploymentLimits,
) -> Option<Plan> {
    let spec = a.spec;
    let [start] = a.roots.as_slice() else {
        return None;
    };
    if a.ignored.iter().any(|&i| i) || a.in_graph.iter().zip(&spec.edges).any(|(&on, _)| !on) {
        return None;
    }
    if a.loops.iter().any(|l| !l.single_entry) {
        return None;
    }
    // Loops: outer before nested (by depth, then back edge).
    let mut loop_order: Vec<usize> = (0..a.loops.len()).collect();
    loop_order.sort_by_key(|&l| (a.loops[l].depth, a.loops[l].back_edge));
    let new_index: BTreeMap<usize, LoopIdx> = loop_order
        .iter()
        .enumerate()
        .map(|(new, &old)| (old, new))
        .collect();
    let mut loops = Vec::with_capacity(a.loops.len());
    for &old in &loop_order {
        let l = &a.loops[old];
        let max_iterations = spec.edges.get(l.back_edge)?.max_iterations?;
        let nested = loop_order
            .iter()
            .filter(|&&other| a.loops[other].parent == Some(old))
            .filter_map(|other| new_index.get(other).copied())
            .collect();
        loops.push(PlanLoop {
            back_edge: l.back_edge,
            head: l.head,
            tail: l.tail,
            max_iterations,
            body: l.body.clone(),
            parent: match l.parent {
                Some(p) => Some(*new_index.get(&p)?),
                None => None,
            },
            nested,
            depth: l.depth,
        });
    }
    let mut back_edge_of = vec![None; spec.edges.len()];
    for (idx, l) in loops.iter().enumerate() {
        *back_edge_of.get_mut(l.back_edge)? = Some(idx);
    }

    let mut sections = Vec::with_capacity(a.sections.len());
    let mut section_of_parallel = BTreeMap::new();
    let mut in_section = vec![None; spec.nodes.len()];
    for s in &a.sections {
        let idx = sections.len();
        let branches: Vec<Vec<NodeIdx>> = s.branches.iter().map(|b| b.nodes.clone()).collect();
        for &v in branches.iter().flatten() {
            *in_section.get_mut(v)? = Some(idx);
        }
        section_of_parallel.insert(s.parallel, idx);
        sections.push(ParallelSection {
            parallel: s.parallel,
            join: s.join?,
            branches,
        });
    }

    let mut nodes = Vec::with_capacity(spec.nodes.len());
    for (i, node) in spec.nodes.iter().enumerate() {
        let model = resolve_model(node, registry, limits).ok()?;
        let tools = node
            .tools
            .iter()
            .map(|t| resolve_tool(t, registry, limits).ok())
            .collect::<Option<Vec<_>>>()?;
        let parent = *a.parent.get(i)?;
        let next = if parent.is_some() {
            Next::ReturnToParent
        } else if node.kind == NodeKind::Parallel {
            Next::FanOut {
                section: *section_of_parallel.get(&i)?,
            }
        } else if a.labelled(i) {
            let mut routes = BTreeMap::new();
            for &j in a.out_edges.get(i)? {
                routes.insert(spec.edges.get(j)?.when.clone()?, j);
            }
            Next::Route { routes }
        } else {
            match a.out_edges.get(i)?.as_slice() {
                [] => Next::End,
                [edge] => Next::Edge { edge: *edge },
                _ => return None,
            }
        };
        nodes.push(PlanNode {
            id: node.id.clone(),
            kind: node.kind,
            instruction: node.instruction.clone().unwrap_or_default(),
            description: node.description.clone().unwrap_or_default(),
            prompt: node.prompt.clone().unwrap_or_default(),
            model,
            labels: a.labels.get(i)?.clone(),
            tools,
            children: a.children.get(i)?.clone(),
            parent,
            next,
            in_section: *in_section.get(i)?,
        });
    }
    let edges = spec
        .edges
        .iter()
        .enumerate()
        .map(|(j, e)| {
            let (from, to) = a.ends.get(j).copied().flatten()?;
            Some(PlanEdge {
                from,
                to,
                when: e.when.clone(),
                screen: e.screen,
                back_edge_of: *back_edge_of.get(j)?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Plan {
        start: *start,
        nodes,
        edges,
        loops,
        sections,
        budgets: limits.ceilings.effective(&spec.budgets),
        order: a.order.clone(),
    })
}
