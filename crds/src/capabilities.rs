//! What this deployment runs, for the console and `GET /api/v1/schema`: node kinds and patterns
//! (with whether each is supported), the limits the validator enforces, the budget ceilings and
//! the feature flags.

use crate::budget::BudgetLimits;
use crate::codes::limits;
use crate::composition::{NodeKind, Pattern};
use crate::validate::DeploymentLimits;
use serde::{Deserialize, Serialize};

/// What the server runs, so a console offers only that.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// Every node kind, with whether the engine runs it.
    pub node_kinds: Vec<KindCapability>,
    /// Every pattern, with whether the engine runs it.
    pub patterns: Vec<PatternCapability>,
    /// Nodes route on labels (`when` edges).
    pub routing: bool,
    /// Back edges with `maxIterations`.
    pub loops: bool,
    /// Parallel sections.
    pub parallel: bool,
    /// Supervisors with children.
    pub supervisor: bool,
    /// `screen: true` on edges.
    pub edge_screen: bool,
    /// A node may name its own model.
    pub per_node_models: bool,
    /// HumanApproval nodes.
    pub human_approval: bool,
    /// Whether entries with `effect: Acting` may be used.
    pub acting_remotes: bool,
    /// Model entries nodes may name; `None`: every model entry in the registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_models: Option<Vec<String>>,
    /// The model a node without `model` runs on, when the deployment sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// The numeric limits.
    pub limits: Limits,
    /// The budget ceilings (a budget left out is set to its ceiling).
    pub ceilings: BudgetLimits,
}

/// One node kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KindCapability {
    /// The kind as written in manifests.
    pub kind: NodeKind,
    /// Whether the engine runs it.
    pub supported: bool,
    /// For an unsupported kind: what to use instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One pattern.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PatternCapability {
    /// The pattern as written in manifests.
    pub pattern: Pattern,
    /// Whether the engine runs it.
    pub supported: bool,
    /// For an unsupported pattern: what to use instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The numeric limits of a composition and a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Most nodes.
    pub max_nodes: usize,
    /// Most branches of a Parallel.
    pub max_parallel_branches: usize,
    /// Most levels of supervisor nesting.
    pub max_supervisor_depth: usize,
    /// Largest `maxIterations`.
    pub max_loop_iterations: u32,
    /// Deepest loop nesting.
    pub max_loop_depth: u32,
    /// Longest run input, in characters.
    pub max_input_chars: usize,
    /// Longest model-facing tool name.
    pub max_tool_name_length: usize,
    /// Most approvals one run asks for.
    pub max_approvals_per_run: u32,
}

impl Limits {
    /// The limits of this release.
    pub fn current() -> Self {
        Limits {
            max_nodes: limits::MAX_NODES,
            max_parallel_branches: limits::MAX_PARALLEL_BRANCHES,
            max_supervisor_depth: limits::MAX_SUPERVISOR_DEPTH,
            max_loop_iterations: limits::MAX_LOOP_ITERATIONS,
            max_loop_depth: limits::MAX_LOOP_DEPTH,
            max_input_chars: limits::MAX_INPUT_CHARS,
            max_tool_name_length: limits::MAX_TOOL_NAME_LENGTH,
            max_approvals_per_run: limits::MAX_APPROVALS_PER_RUN,
        }
    }
}

impl Capabilities {
    /// What a deployment with these limits runs.
    pub fn for_limits(deployment: &DeploymentLimits) -> Self {
        Capabilities {
            node_kinds: NodeKind::ALL
                .iter()
                .map(|&kind| KindCapability {
                    kind,
                    supported: kind.is_supported(),
                    note: match kind {
                        NodeKind::RemoteA2a => Some("use an LLMAgent with an a2a: tool".to_owned()),
                        NodeKind::Handoff => {
                            Some("use a Router, or an LLMAgent with output.labels".to_owned())
                        }
                        _ => None,
                    },
                })
                .collect(),
            patterns: Pattern::ALL
                .iter()
                .map(|&pattern| PatternCapability {
                    pattern,
                    supported: pattern != Pattern::Handoff,
                    note: (pattern == Pattern::Handoff)
                        .then(|| "use a Router, or labelled edges between agents".to_owned()),
                })
                .collect(),
            routing: true,
            loops: true,
            parallel: true,
            supervisor: true,
            edge_screen: true,
            per_node_models: true,
            human_approval: true,
            acting_remotes: deployment.acting_remotes,
            allowed_models: deployment
                .allowed_models
                .as_ref()
                .map(|m| m.iter().cloned().collect()),
            default_model: deployment.default_model.clone(),
            limits: Limits::current(),
            ceilings: deployment.ceilings.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    #[test]
    fn capabilities_publish_the_seeds_limits_in_camel_case() {
        let caps =
            serde_json::to_value(Capabilities::for_limits(&DeploymentLimits::default())).unwrap();
        assert_eq!(
            caps["limits"],
            json!({
                "maxNodes": 30, "maxParallelBranches": 6, "maxSupervisorDepth": 3,
                "maxLoopIterations": 5, "maxLoopDepth": 2, "maxInputChars": 8192,
                "maxToolNameLength": 64, "maxApprovalsPerRun": 12
            })
        );
        assert_eq!(caps["edgeScreen"], json!(true));
        assert_eq!(caps["humanApproval"], json!(true));
        assert_eq!(caps["ceilings"]["maxTokens"], json!(500_000));
    }

    #[test]
    fn remote_a2a_and_handoff_are_listed_as_unsupported() {
        let caps = Capabilities::for_limits(&DeploymentLimits::default());
        let unsupported: Vec<&str> = caps
            .node_kinds
            .iter()
            .filter(|k| !k.supported)
            .map(|k| k.kind.as_str())
            .collect();
        assert_eq!(unsupported, ["RemoteA2A", "Handoff"]);
        let patterns: Vec<&str> = caps
            .patterns
            .iter()
            .filter(|p| !p.supported)
            .map(|p| p.pattern.as_str())
            .collect();
        assert_eq!(patterns, ["Handoff"]);
        assert_eq!(caps.node_kinds.len(), NodeKind::ALL.len());
    }

    #[test]
    fn acting_remotes_and_models_follow_the_deployment() {
        let deployment = DeploymentLimits {
            acting_remotes: true,
            allowed_models: Some(["fast".to_owned()].into()),
            default_model: Some("fast".to_owned()),
            ..DeploymentLimits::default()
        };
        let caps = serde_json::to_value(Capabilities::for_limits(&deployment)).unwrap();
        assert_eq!(caps["actingRemotes"], json!(true));
        assert_eq!(caps["allowedModels"], json!(["fast"]));
        assert_eq!(caps["defaultModel"], json!("fast"));
        let off =
            serde_json::to_value(Capabilities::for_limits(&DeploymentLimits::default())).unwrap();
        assert_eq!(off["actingRemotes"], json!(false));
        assert!(off.get("allowedModels").is_none());
    }
}
