//! The plan: the structure the engine executes, built (with petgraph) from a composition that
//! validates. Indexes (`NodeIdx`, `EdgeIdx`, `LoopIdx`, `SectionIdx`) point into the plan's own
//! vectors; node indexes equal the node's position in `spec.nodes`, edge indexes its position
//! in `spec.edges`.
//!
//! PUBLIC API (fixed; the runner codes against it). `plan()` is implemented beside the
//! validator, which it shares its graph analysis with.

use crate::composition::NodeKind;
use crate::validate::Ceilings;
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
    /// The first node (the only one no edge enters, supervisor children aside).
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
    pub budgets: Ceilings,
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

/// A tool a node may call, resolved against the registry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedTool {
    /// The reference as written, e.g. `mcp:demo-tools.search_articles`.
    pub reference: String,
    /// Mcp or A2a.
    pub kind: ToolKind,
    /// The RegistryEntry name.
    pub entry: String,
    /// The tool's (or skill's) name on the remote.
    pub remote_name: String,
    /// The name the model sees: `mcp_<entry>_<tool>` / `a2a_<entry>_<skill>`, `-` as `_`.
    pub model_name: String,
    /// Whether calling it changes things (an Acting A2A entry): confirmed per call.
    pub acting: bool,
}

/// The kind of a planned tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ToolKind {
    /// A tool on an MCP server.
    Mcp,
    /// A skill of a remote A2A agent.
    A2a,
}

impl Plan {
    /// A node by id.
    pub fn node_by_id(&self, id: &str) -> Option<(NodeIdx, &PlanNode)> {
        self.nodes.iter().enumerate().find(|(_, n)| n.id == id)
    }
}
