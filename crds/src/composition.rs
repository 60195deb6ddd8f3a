//! The `Composition` resource: a graph of agent nodes wired in a named pattern.

use crate::budget::Budgets;
use crate::common::{Condition, ValidationIssue};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Pattern an id (node, label, registry entry) must match.
pub const ID_PATTERN: &str = "^[a-z][a-z0-9_-]{0,62}$";
/// Pattern a tool reference must match: `mcp:<entry>.<tool>` or `a2a:<entry>.<skill>`.
pub const TOOL_REF_PATTERN: &str = r"^(mcp|a2a):[a-z][a-z0-9_-]{0,62}\.[A-Za-z0-9_.-]{1,128}$";

/// A composition: agent nodes, the edges between them, a pattern and budgets. Each node gets the
/// previous node's answer as its input (the first gets the run's input); the run's output is the
/// last answer. The edges decide what runs; the pattern is a label the validator checks them
/// against.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "studio.orrery.dev",
    version = "v1alpha1",
    kind = "Composition",
    plural = "compositions",
    singular = "composition",
    shortname = "comp",
    shortname = "comps",
    category = "orrery",
    namespaced,
    doc = "A Composition: a graph of LLM agent nodes wired in a named pattern, with budgets. The operator validates it (status.conditions Valid, status.errors) and keeps every generation as an immutable revision that StudioRuns name.",
    status = "CompositionStatus",
    printcolumn = r#"{"name":"Pattern","type":"string","jsonPath":".spec.pattern"}"#,
    printcolumn = r#"{"name":"Nodes","type":"integer","jsonPath":".status.nodeCount"}"#,
    printcolumn = r#"{"name":"Valid","type":"string","jsonPath":".status.conditions[?(@.type==\"Valid\")].status"}"#,
    printcolumn = r#"{"name":"Revision","type":"integer","jsonPath":".status.revision"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompositionSpec {
    /// What this composition is for, shown in the console and `kubectl describe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub description: Option<String>,
    /// The named pattern the graph follows (Pipeline, Router, CriticLoop, FanOutFanIn,
    /// Supervisor, Debate, MapReduce, PlanAndExecute, Handoff). A label for the console's
    /// templates and the validator's checks: the edges decide what runs, and a graph that does
    /// not fit its pattern is refused (`pattern_mismatch`).
    pub pattern: Pattern,
    /// Limits for the whole run. A budget left out is set to the deployment's ceiling; a budget
    /// above the ceiling is refused.
    #[serde(default)]
    pub budgets: Budgets,
    /// The nodes of the graph (at most 30), keyed by their unique `id`.
    #[schemars(length(min = 1, max = 30))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["id"]))]
    pub nodes: Vec<Node>,
    /// Directed edges between nodes. The first node is the one no forward edge enters (a loop's
    /// back edge does not count, so a critic loop may start at its head); a node with no
    /// outgoing edge ends the run.
    #[serde(default)]
    #[schemars(length(max = 120))]
    pub edges: Vec<Edge>,
}

/// A named composition pattern.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum Pattern {
    /// A chain of nodes: no labels, no fan-out, no loops.
    Pipeline,
    /// A node picks a label and the matching `when` edge is taken.
    Router,
    /// A writer and a critic whose `rejected` label loops back (needs a loop).
    CriticLoop,
    /// A Parallel node fans out to 2–6 branches that a Join closes.
    FanOutFanIn,
    /// A Supervisor delegates to child agents exposed as tools.
    Supervisor,
    /// Parallel speakers, or speakers taking turns in a loop, then a judge.
    Debate,
    /// A fixed fan-out (the map width is the branch count) and a reducing Join.
    MapReduce,
    /// A planner, executors and a checker that may send work back.
    PlanAndExecute,
    /// Agents hand a conversation to each other (not supported yet).
    Handoff,
}

impl Pattern {
    /// Every pattern, in documentation order.
    pub const ALL: [Pattern; 9] = [
        Pattern::Pipeline,
        Pattern::Router,
        Pattern::CriticLoop,
        Pattern::FanOutFanIn,
        Pattern::Supervisor,
        Pattern::Debate,
        Pattern::MapReduce,
        Pattern::PlanAndExecute,
        Pattern::Handoff,
    ];

    /// The CamelCase name used in manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            Pattern::Pipeline => "Pipeline",
            Pattern::Router => "Router",
            Pattern::CriticLoop => "CriticLoop",
            Pattern::FanOutFanIn => "FanOutFanIn",
            Pattern::Supervisor => "Supervisor",
            Pattern::Debate => "Debate",
            Pattern::MapReduce => "MapReduce",
            Pattern::PlanAndExecute => "PlanAndExecute",
            Pattern::Handoff => "Handoff",
        }
    }
}

/// What a node is.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum NodeKind {
    /// One model turn with a tool loop. With `output.labels` it answers and labels (a critic).
    #[serde(rename = "LLMAgent")]
    LlmAgent,
    /// A model that only picks a label; its input passes on unchanged to the chosen branch.
    Router,
    /// Fans out to 2–6 branches that run concurrently.
    Parallel,
    /// Closes a Parallel: writes each branch's answer as a `## <branch>` block in edge order.
    Join,
    /// An agent whose `children` are exposed to it as tools named `n_<id>`.
    Supervisor,
    /// Waits for a person to approve or reject the text under review; routes on
    /// `approved` / `rejected`.
    HumanApproval,
    /// A remote A2A agent as a node (not supported yet: use an LLMAgent with an `a2a:` tool).
    #[serde(rename = "RemoteA2A")]
    RemoteA2a,
    /// Hands the conversation to another agent (not supported yet).
    Handoff,
}

impl NodeKind {
    /// Every node kind.
    pub const ALL: [NodeKind; 8] = [
        NodeKind::LlmAgent,
        NodeKind::Router,
        NodeKind::Parallel,
        NodeKind::Join,
        NodeKind::Supervisor,
        NodeKind::HumanApproval,
        NodeKind::RemoteA2a,
        NodeKind::Handoff,
    ];

    /// The CamelCase name used in manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::LlmAgent => "LLMAgent",
            NodeKind::Router => "Router",
            NodeKind::Parallel => "Parallel",
            NodeKind::Join => "Join",
            NodeKind::Supervisor => "Supervisor",
            NodeKind::HumanApproval => "HumanApproval",
            NodeKind::RemoteA2a => "RemoteA2A",
            NodeKind::Handoff => "Handoff",
        }
    }

    /// Whether the engine runs this kind today.
    pub fn is_supported(self) -> bool {
        !matches!(self, NodeKind::RemoteA2a | NodeKind::Handoff)
    }

    /// Whether this kind calls a model.
    pub fn calls_model(self) -> bool {
        matches!(
            self,
            NodeKind::LlmAgent | NodeKind::Router | NodeKind::Supervisor
        )
    }
}

/// One node of the graph.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.tools) || self.tools.all(t, t.matches('^(mcp|a2a):[a-z][a-z0-9_-]{0,62}[.][A-Za-z0-9_.-]{1,128}$'))",
     "fieldPath": ".tools",
     "message": "each tool must be mcp:<entry>.<tool> or a2a:<entry>.<skill>, where <entry> names a RegistryEntry (lowercase letters, digits and '-', starting with a letter) and <tool> is 1-128 of letters, digits, '_', '.' and '-', e.g. mcp:demo-tools.search_articles"},
    {"rule": "!has(self.children) || self.children.all(c, c.matches('^[a-z][a-z0-9_-]{0,62}$'))",
     "fieldPath": ".children",
     "message": "each child must be a node id: lowercase letters, digits, '-' and '_', starting with a letter, at most 63 characters (e.g. researcher)"}
]))]
pub struct Node {
    /// Unique id within the composition: lowercase letters, digits, `-` and `_`, starting with a
    /// letter, at most 63 characters. A supervisor sees its child as the tool `n_<id>`.
    #[schemars(length(min = 1, max = 63), regex(pattern = "^[a-z][a-z0-9_-]{0,62}$"))]
    #[schemars(extend("x-kubernetes-validations" = [
        {"rule": "self.matches('^[a-z][a-z0-9_-]{0,62}$')",
         "message": "a node id must be lowercase letters, digits, '-' and '_', starting with a letter, at most 63 characters (e.g. writer or step_2)"}
    ]))]
    pub id: String,
    /// What the node is: LLMAgent, Router, Parallel, Join, Supervisor, HumanApproval
    /// (RemoteA2A and Handoff parse but are refused with `not_supported_yet`).
    pub kind: NodeKind,
    /// A short description, shown to a supervisor when this node is its child tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub description: Option<String>,
    /// The system instruction for the node's model (LLMAgent, Router, Supervisor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32768))]
    pub instruction: Option<String>,
    /// Tools the node's model may call: `mcp:<entry>.<tool>` or `a2a:<entry>.<skill>`, each
    /// naming a RegistryEntry in the same namespace. Model-facing names are
    /// `mcp_<entry>_<tool>` and `a2a_<entry>_<skill>` (`-` becomes `_`), at most 64 characters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 32),
        inner(
            length(max = 200),
            regex(pattern = r"^(mcp|a2a):[a-z][a-z0-9_-]{0,62}\.[A-Za-z0-9_.-]{1,128}$")
        )
    )]
    pub tools: Vec<ToolRef>,
    /// Name of a RegistryEntry of kind model this node runs on, exactly (no fallback chain).
    /// Without it the node uses the deployment's default model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub model: Option<String>,
    /// Structured output: with labels, the node answers `{label, answer}` and its outgoing
    /// edges route on the label (`when`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<NodeOutput>,
    /// For a Supervisor: ids of its child nodes (LLMAgent or Supervisor nodes with no edges,
    /// one parent each, at most 3 levels deep).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 29),
        inner(length(max = 63), regex(pattern = "^[a-z][a-z0-9_-]{0,62}$"))
    )]
    pub children: Vec<String>,
    /// For a HumanApproval: what the reviewer is asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub prompt: Option<String>,
}

/// A tool reference, `mcp:<entry>.<tool>` or `a2a:<entry>.<skill>`.
pub type ToolRef = String;

/// Structured output of a node.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "self.labels.all(l, l.matches('^[a-z][a-z0-9_-]{0,62}$'))",
     "fieldPath": ".labels",
     "message": "each label must be lowercase letters, digits, '-' and '_', starting with a letter, at most 63 characters (e.g. approved, rejected)"}
]))]
pub struct NodeOutput {
    /// The labels the node may answer with, e.g. `[approved, rejected]`. Each outgoing edge
    /// names one of them in `when`; a label with no edge ends that branch (warning
    /// `label_ends_run`).
    #[schemars(
        length(min = 1, max = 16),
        inner(length(max = 63), regex(pattern = "^[a-z][a-z0-9_-]{0,62}$"))
    )]
    pub labels: Vec<String>,
}

/// A directed edge between two nodes.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Edge {
    /// Id of the source node.
    #[schemars(length(min = 1, max = 63))]
    pub from: String,
    /// Id of the target node.
    #[schemars(length(min = 1, max = 63))]
    pub to: String,
    /// The source's label that takes this edge (the source must have `output.labels`, or be a
    /// Router or HumanApproval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub when: Option<String>,
    /// On a back edge (one that closes a cycle): how many times per entry of the loop the edge
    /// may be taken, 1–5. On the next arrival the loop stops and the branch ends with the
    /// answer that was being judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 5))]
    pub max_iterations: Option<u32>,
    /// Run the safety screen (injection phrases, hidden characters, credential and email
    /// redaction) on the text that crosses this edge.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub screen: bool,
}

/// Observed state of a Composition.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompositionStatus {
    /// The generation the status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Valid` (the graph passed the validator against the current registry).
    #[serde(default)]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// Every problem the validator found, each at its field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ValidationIssue>,
    /// Findings that do not refuse the composition (e.g. `label_ends_run`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<ValidationIssue>,
    /// SHA-256 of the canonical JSON of the spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_digest: Option<String>,
    /// The immutable revision recorded for this generation; a StudioRun names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    /// Number of nodes (for `kubectl get`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_count: Option<i64>,
}
