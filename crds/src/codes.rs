//! Every validation code in one place, with its severity, what it means and the rule it
//! carries over (numbered in `docs/behaviour.md`), plus the numeric limits the validator
//! enforces and the capabilities publish.
//!
//! The seeds name twelve codes (rule 1.80): `unknown_tool`, `not_supported_yet`,
//! `pattern_mismatch`, `too_many_branches`, `loop_around_parallel`, `loop_too_deep`,
//! `unbounded_cycle`, `too_deep`, `model_not_allowed`, `tool_name_collision`,
//! `tool_name_too_long` and the warning `label_ends_run`. Every other code here is ours, for a
//! rule the seeds state without naming a code.

use crate::common::Severity;

/// The numeric limits of a composition (seed rules 1.23–1.31). One home: the validator checks
/// them and [`crate::capabilities::Capabilities`] publishes them.
pub mod limits {
    /// Most nodes in one composition (rule 1.23).
    pub const MAX_NODES: usize = 30;
    /// Most edges in one composition (the CRD schema's bound).
    pub const MAX_EDGES: usize = 120;
    /// Fewest branches of a Parallel node (rule 1.24: "2–6 branches").
    pub const MIN_PARALLEL_BRANCHES: usize = 2;
    /// Most branches of a Parallel node (rule 1.24).
    pub const MAX_PARALLEL_BRANCHES: usize = 6;
    /// Most levels of supervisor nesting, the top supervisor being level 1 (rule 1.25). Only
    /// supervisors count: S1 → S2 → S3 → agent is 3 levels, S1 → S2 → S3 → S4 is 4.
    pub const MAX_SUPERVISOR_DEPTH: usize = 3;
    /// Largest `maxIterations` of a back edge (rule 1.26).
    pub const MAX_LOOP_ITERATIONS: u32 = 5;
    /// Deepest loop nesting (rule 1.27).
    pub const MAX_LOOP_DEPTH: u32 = 2;
    /// Longest run input, in characters (rule 1.28).
    pub const MAX_INPUT_CHARS: usize = 8192;
    /// Longest model-facing tool name (rule 1.29).
    pub const MAX_TOOL_NAME_LENGTH: usize = 64;
    /// Most approvals (remote questions and acting confirmations included) one run asks for
    /// (rule 1.31).
    pub const MAX_APPROVALS_PER_RUN: u32 = 12;

    // The CRD schema's bounds (`crds/yaml/compositions.yaml`), which the validator enforces too
    // so that `orrery validate` never calls valid what the apiserver refuses. A test reads the
    // generated CRD and keeps these equal to its `maxLength` / `maxItems` / `minimum`.

    /// Fewest nodes (the CRD's `spec.nodes` `minItems`).
    pub const MIN_NODES: usize = 1;
    /// Longest `spec.description` and node `description`, in characters.
    pub const MAX_DESCRIPTION_CHARS: usize = 2048;
    /// Longest node `instruction`, in characters.
    pub const MAX_INSTRUCTION_CHARS: usize = 32768;
    /// Longest HumanApproval `prompt`, in characters.
    pub const MAX_PROMPT_CHARS: usize = 4096;
    /// Longest node `model` (a RegistryEntry name), in characters.
    pub const MAX_MODEL_NAME_CHARS: usize = 253;
    /// Most `tools` of one node.
    pub const MAX_TOOLS_PER_NODE: usize = 32;
    /// Most `children` of one Supervisor.
    pub const MAX_CHILDREN: usize = 29;
    /// Fewest `output.labels` of a node that sets `output`.
    pub const MIN_LABELS: usize = 1;
    /// Most `output.labels` of one node.
    pub const MAX_LABELS: usize = 16;
    /// Longest id (node id, label, an edge's `from` / `to` / `when`), in characters.
    pub const MAX_ID_CHARS: usize = 63;
    /// Smallest `maxIterations` of a back edge.
    pub const MIN_LOOP_ITERATIONS: u32 = 1;
    /// Smallest `maxTokens` budget.
    pub const MIN_MAX_TOKENS: u64 = 1;
    /// Smallest `timeoutSeconds` budget.
    pub const MIN_TIMEOUT_SECONDS: u64 = 1;
}

/// A text field over the length the CRD schema allows.
pub const TEXT_TOO_LONG: &str = "text_too_long";
/// A list field with more items than the CRD schema allows.
pub const TOO_MANY_ITEMS: &str = "too_many_items";
/// `screen: true` on an edge that does not join two LLMAgent nodes.
pub const SCREEN_NOT_BETWEEN_AGENTS: &str = "screen_not_between_agents";
/// Two nodes share an id.
pub const DUPLICATE_ID: &str = "duplicate_id";
/// A node id or label is not a lowercase name.
pub const INVALID_ID: &str = "invalid_id";
/// The composition has no node.
pub const EMPTY_COMPOSITION: &str = "empty_composition";
/// More nodes than allowed.
pub const TOO_MANY_NODES: &str = "too_many_nodes";
/// More edges than allowed.
pub const TOO_MANY_EDGES: &str = "too_many_edges";
/// An edge end or a supervisor child names no node.
pub const UNKNOWN_NODE: &str = "unknown_node";
/// An edge from a node to itself.
pub const SELF_LOOP: &str = "self_loop";
/// The same edge listed twice.
pub const DUPLICATE_EDGE: &str = "duplicate_edge";
/// A node no path from the first node reaches.
pub const UNREACHABLE_NODE: &str = "unreachable_node";
/// More than one node with no incoming edge (the first node is the one no forward edge enters;
/// back edges do not count, so a critic loop may start at its head).
pub const MULTIPLE_FIRST_NODES: &str = "multiple_first_nodes";
/// No node is on the main graph (every node is a supervisor's child), so none runs first.
pub const NO_FIRST_NODE: &str = "no_first_node";
/// No reachable node ends the run.
pub const NO_TERMINAL_NODE: &str = "no_terminal_node";
/// A node with several unlabelled outgoing edges that is not a Parallel node.
pub const FAN_OUT_NOT_PARALLEL: &str = "fan_out_not_parallel";
/// A node kind the engine does not run yet, or the Handoff pattern.
pub const NOT_SUPPORTED_YET: &str = "not_supported_yet";
/// A field set on a node kind that does not take it.
pub const FIELD_NOT_ALLOWED: &str = "field_not_allowed";
/// A field a node kind needs is missing (or an `output.labels` list is empty).
pub const MISSING_FIELD: &str = "missing_field";
/// `when` on an edge whose source has no labels.
pub const WHEN_WITHOUT_LABELS: &str = "when_without_labels";
/// `when` names a label its source does not have.
pub const UNKNOWN_LABEL: &str = "unknown_label";
/// Two edges for one label.
pub const LABEL_HAS_TWO_EDGES: &str = "label_has_two_edges";
/// An edge of a labelled node without `when`.
pub const MISSING_WHEN: &str = "missing_when";
/// A label listed twice in `output.labels`.
pub const DUPLICATE_LABEL: &str = "duplicate_label";
/// A label with no edge ends the branch (warning).
pub const LABEL_ENDS_RUN: &str = "label_ends_run";
/// A Parallel node with more than 6 branches.
pub const TOO_MANY_BRANCHES: &str = "too_many_branches";
/// A Parallel node with fewer than 2 branches.
pub const TOO_FEW_BRANCHES: &str = "too_few_branches";
/// A Join that does not close exactly one Parallel's branches.
pub const JOIN_MISMATCH: &str = "join_mismatch";
/// A branch that is not a chain of agents from the Parallel to its Join.
pub const BRANCH_NOT_A_CHAIN: &str = "branch_not_a_chain";
/// A branch that fans out, routes or loops again.
pub const NESTED_FAN_OUT: &str = "nested_fan_out";
/// A loop whose body holds a Parallel or Join node.
pub const LOOP_AROUND_PARALLEL: &str = "loop_around_parallel";
/// Loops nested more than 2 deep.
pub const LOOP_TOO_DEEP: &str = "loop_too_deep";
/// A cycle without `maxIterations`.
pub const UNBOUNDED_CYCLE: &str = "unbounded_cycle";
/// `maxIterations` on an edge that closes no loop.
pub const MAX_ITERATIONS_NOT_BACK_EDGE: &str = "max_iterations_not_back_edge";
/// `maxIterations` outside 1–5.
pub const MAX_ITERATIONS_OUT_OF_RANGE: &str = "max_iterations_out_of_range";
/// A loop that can be entered other than through its head.
pub const LOOP_WITH_TWO_ENTRIES: &str = "loop_with_two_entries";
/// A supervisor child that is not an LLMAgent or Supervisor.
pub const CHILD_NOT_AGENT: &str = "child_not_agent";
/// A node listed as a child by two supervisors.
pub const CHILD_HAS_TWO_PARENTS: &str = "child_has_two_parents";
/// An edge into or out of a supervisor child.
pub const CHILD_HAS_EDGES: &str = "child_has_edges";
/// Supervisors nested more than 3 levels (counting supervisors only).
pub const TOO_DEEP: &str = "too_deep";
/// Supervisors that are (indirectly) their own children.
pub const SUPERVISOR_CYCLE: &str = "supervisor_cycle";
/// A node's model is not a model entry, or not allowed here.
pub const MODEL_NOT_ALLOWED: &str = "model_not_allowed";
/// A model-calling node names no model and the deployment has no usable default.
pub const MODEL_REQUIRED: &str = "model_required";
/// A tool reference that is not `mcp:<entry>.<tool>` or `a2a:<entry>.<skill>`.
pub const MALFORMED_TOOL_REF: &str = "malformed_tool_ref";
/// A tool reference the registry does not back.
pub const UNKNOWN_TOOL: &str = "unknown_tool";
/// An MCP tool not listed read-only.
pub const TOOL_NOT_READ_ONLY: &str = "tool_not_read_only";
/// An acting remote where the deployment does not allow them.
pub const ACTING_NOT_ALLOWED: &str = "acting_not_allowed";
/// Two tools (or supervisor children) of one node reach the model under one name.
pub const TOOL_NAME_COLLISION: &str = "tool_name_collision";
/// A model-facing tool name over 64 characters.
pub const TOOL_NAME_TOO_LONG: &str = "tool_name_too_long";
/// A budget above the deployment's ceiling.
pub const BUDGET_OVER_CEILING: &str = "budget_over_ceiling";
/// A budget of zero where at least 1 is needed.
pub const BUDGET_OUT_OF_RANGE: &str = "budget_out_of_range";
/// A HumanApproval on a parallel branch.
pub const APPROVAL_ON_BRANCH: &str = "approval_on_branch";
/// A HumanApproval followed by a Router.
pub const APPROVAL_FEEDS_ROUTER: &str = "approval_feeds_router";
/// The graph does not fit its pattern.
pub const PATTERN_MISMATCH: &str = "pattern_mismatch";
/// The planner could not build a plan from a spec the validator accepted (a bug).
pub const PLAN_INCONSISTENT: &str = "plan_inconsistent";

/// One row of [`ALL_CODES`]: code, severity, what it means, seed rule(s).
pub type CodeInfo = (&'static str, Severity, &'static str, &'static str);

/// Every code the validator and planner emit: (code, severity, meaning, seed rule).
#[rustfmt::skip]
pub const ALL_CODES: &[CodeInfo] = &[
    (DUPLICATE_ID, Severity::Error, "two nodes share an id", "1.32"),
    (TEXT_TOO_LONG, Severity::Error, "a description (2048), instruction (32768), prompt (4096) or model name (253) longer than the CRD schema allows, in characters", "CRD schema"),
    (TOO_MANY_ITEMS, Severity::Error, "more tools (32), children (29) or output.labels (16) on a node than the CRD schema allows", "CRD schema"),
    (SCREEN_NOT_BETWEEN_AGENTS, Severity::Error, "screen: true on an edge that does not go from an LLMAgent to an LLMAgent (never on an edge leaving a HumanApproval)", "2.28, 4.18"),
    (INVALID_ID, Severity::Error, "a node id or label is not a lowercase name (letters, digits, '-', '_', at most 63)", "1.5"),
    (EMPTY_COMPOSITION, Severity::Error, "the composition has no node", "1.23"),
    (TOO_MANY_NODES, Severity::Error, "more than 30 nodes", "1.23"),
    (TOO_MANY_EDGES, Severity::Error, "more than 120 edges", "1.6"),
    (UNKNOWN_NODE, Severity::Error, "an edge end or supervisor child names no node", "1.33"),
    (SELF_LOOP, Severity::Error, "an edge from a node to itself", "1.34"),
    (DUPLICATE_EDGE, Severity::Error, "the same edge (from, to, when) listed twice", "1.35"),
    (UNREACHABLE_NODE, Severity::Error, "no path from the first node reaches the node", "1.36"),
    (MULTIPLE_FIRST_NODES, Severity::Error, "more than one node has no incoming edge", "1.37"),
    (NO_FIRST_NODE, Severity::Error, "no node runs first: every node is a supervisor's child (a supervisor cycle)", "1.37"),
    (NO_TERMINAL_NODE, Severity::Error, "no reachable node ends the run", "1.38"),
    (FAN_OUT_NOT_PARALLEL, Severity::Error, "a node with several unlabelled outgoing edges is not a Parallel", "1.43"),
    (NOT_SUPPORTED_YET, Severity::Error, "node kind RemoteA2A or Handoff, or pattern Handoff, which the engine does not run yet", "1.76"),
    (FIELD_NOT_ALLOWED, Severity::Error, "a field set on a node kind that does not take it (e.g. tools on a Parallel)", "1.5"),
    (MISSING_FIELD, Severity::Error, "a Router without output.labels, a Supervisor without children, or output with an empty labels list", "2.11"),
    (WHEN_WITHOUT_LABELS, Severity::Error, "`when` on an edge whose source has no labels", "1.39"),
    (UNKNOWN_LABEL, Severity::Error, "`when` names a label the source does not have", "1.40"),
    (LABEL_HAS_TWO_EDGES, Severity::Error, "two edges for one label", "1.41"),
    (MISSING_WHEN, Severity::Error, "an edge of a labelled node (or HumanApproval) without `when`", "1.42"),
    (DUPLICATE_LABEL, Severity::Error, "a label listed twice in output.labels", "1.40"),
    (LABEL_ENDS_RUN, Severity::Warning, "a label with no edge ends the branch", "1.78"),
    (TOO_MANY_BRANCHES, Severity::Error, "a Parallel with more than 6 branches", "1.44"),
    (TOO_FEW_BRANCHES, Severity::Error, "a Parallel with fewer than 2 branches", "1.24"),
    (JOIN_MISMATCH, Severity::Error, "a Join that does not close exactly one Parallel's branches", "1.45"),
    (BRANCH_NOT_A_CHAIN, Severity::Error, "a branch that is not a chain of agents from the Parallel to its Join", "2.17"),
    (NESTED_FAN_OUT, Severity::Error, "a branch that fans out, routes or loops again", "1.46"),
    (LOOP_AROUND_PARALLEL, Severity::Error, "a loop around a parallel section", "1.47"),
    (LOOP_TOO_DEEP, Severity::Error, "loops nested more than 2 deep", "1.48"),
    (UNBOUNDED_CYCLE, Severity::Error, "a cycle without maxIterations", "1.49"),
    (MAX_ITERATIONS_NOT_BACK_EDGE, Severity::Error, "maxIterations on an edge that is not a back edge", "1.50"),
    (MAX_ITERATIONS_OUT_OF_RANGE, Severity::Error, "maxIterations outside 1–5", "1.51"),
    (LOOP_WITH_TWO_ENTRIES, Severity::Error, "a loop entered other than through its head, so its counter has no single entry", "2.12"),
    (CHILD_NOT_AGENT, Severity::Error, "a supervisor child that is not an LLMAgent or Supervisor", "1.52"),
    (CHILD_HAS_TWO_PARENTS, Severity::Error, "a node listed as a child by two supervisors", "1.53"),
    (CHILD_HAS_EDGES, Severity::Error, "an edge into or out of a supervisor child", "1.54"),
    (TOO_DEEP, Severity::Error, "supervisors nested more than 3 levels (only supervisors count: S1 → S2 → S3 → agent is allowed, S1 → S2 → S3 → S4 is not)", "1.25, 1.55"),
    (SUPERVISOR_CYCLE, Severity::Error, "a supervisor that is (indirectly) its own child", "1.55"),
    (MODEL_NOT_ALLOWED, Severity::Error, "a node's model is not a model entry, or not allowed in this deployment", "1.56"),
    (MODEL_REQUIRED, Severity::Error, "a model-calling node names no model and the deployment has no usable default", "2.30"),
    (MALFORMED_TOOL_REF, Severity::Error, "a tool reference that is not mcp:<entry>.<tool> or a2a:<entry>.<skill>", "1.57"),
    (UNKNOWN_TOOL, Severity::Error, "a tool reference the registry does not back (entry, kind, tool or skill)", "1.58, 1.60"),
    (TOOL_NOT_READ_ONLY, Severity::Error, "an MCP tool not listed read-only", "1.59"),
    (ACTING_NOT_ALLOWED, Severity::Error, "an acting remote agent where the deployment does not allow them", "1.77"),
    (TOOL_NAME_COLLISION, Severity::Error, "two tools or supervisor children of one node reach the model under one name", "1.64, 1.65"),
    (TOOL_NAME_TOO_LONG, Severity::Error, "a model-facing tool name over 64 characters", "1.66"),
    (BUDGET_OVER_CEILING, Severity::Error, "a budget above the deployment's ceiling", "1.61"),
    (BUDGET_OUT_OF_RANGE, Severity::Error, "maxTokens or timeoutSeconds of zero", "1.30"),
    (APPROVAL_ON_BRANCH, Severity::Error, "a HumanApproval on a parallel branch", "1.69"),
    (APPROVAL_FEEDS_ROUTER, Severity::Error, "a HumanApproval followed by a Router", "1.70"),
    (PATTERN_MISMATCH, Severity::Error, "the graph does not fit its pattern", "1.71-1.75"),
    (PLAN_INCONSISTENT, Severity::Error, "the planner could not build a spec the validator accepted (a bug to report)", "1.19"),
];

/// The severity of a code, or `None` for a code not in [`ALL_CODES`].
pub fn severity(code: &str) -> Option<Severity> {
    ALL_CODES
        .iter()
        .find(|(c, ..)| *c == code)
        .map(|(_, s, ..)| *s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_code_is_listed_once_in_snake_case() {
        let mut seen = BTreeSet::new();
        for (code, ..) in ALL_CODES {
            assert!(seen.insert(*code), "{code} listed twice");
            assert!(
                code.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{code} is not snake_case"
            );
        }
    }

    #[test]
    fn the_seeds_named_codes_are_all_present_with_their_severity() {
        for code in [
            "unknown_tool",
            "not_supported_yet",
            "pattern_mismatch",
            "too_many_branches",
            "loop_around_parallel",
            "loop_too_deep",
            "unbounded_cycle",
            "too_deep",
            "model_not_allowed",
            "tool_name_collision",
            "tool_name_too_long",
        ] {
            assert_eq!(severity(code), Some(Severity::Error), "{code}");
        }
        assert_eq!(severity("label_ends_run"), Some(Severity::Warning));
        assert_eq!(severity("no_such_code"), None);
    }
}
