//! The `StudioRun` resource: one execution of a composition in its own runner pod.

use crate::budget::Budgets;
use crate::common::Condition;
use crate::composition::CompositionSpec;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The approval types the run's status carries; their home is [`crate::approval`].
pub use crate::approval::{ApprovalKind, Decision, DecisionVerb, PendingApproval};

/// One run of a composition. The operator validates it, then runs it in its own sandboxed
/// runner pod behind an egress NetworkPolicy built from the registry. The spec is immutable
/// once created, except `cancel` (false to true only): the apiserver refuses any other change
/// (a different run is a new StudioRun). `kubectl get`,
/// `kubectl describe` and `kubectl wait --for=jsonpath='{.status.phase}'=Succeeded` show what
/// happened.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "studio.orrery.dev",
    version = "v1alpha1",
    kind = "StudioRun",
    plural = "studioruns",
    singular = "studiorun",
    shortname = "srun",
    shortname = "sruns",
    category = "orrery",
    namespaced,
    doc = "A StudioRun: one execution of a Composition in its own sandboxed runner pod. status.phase ends Succeeded, Failed, Cancelled, BudgetExhausted or Rejected.",
    status = "StudioRunStatus",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Composition","type":"string","jsonPath":".status.composition.name"}"#,
    printcolumn = r#"{"name":"Tokens","type":"integer","jsonPath":".status.totals.tokens"}"#,
    printcolumn = r#"{"name":"Owner","type":"string","jsonPath":".spec.owner"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    // Rule 4.24, with the status-level rule on `decisions`: this one covers the writes that
    // rule cannot see (a status written for the first time, a status removed).
    validation = kube::core::Rule::new("!has(oldSelf.status) ? (!has(self.status) || !has(self.status.decisions) || size(self.status.decisions) <= 1) : (has(self.status) || !has(oldSelf.status.decisions) || size(oldSelf.status.decisions) == 0)").message("status.decisions is append-only: a write may add at most one decision and never removes the decisions made").field_path(".status.decisions")
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "has(self.compositionRef) != has(self.composition)",
     "fieldPath": ".compositionRef",
     "message": "set exactly one of spec.compositionRef (a Composition by name) or spec.composition (inline)"},
    {"rule": "self.input == oldSelf.input",
     "fieldPath": ".input",
     "message": "spec.input is immutable: create a new StudioRun"},
    {"rule": "self.owner == oldSelf.owner",
     "fieldPath": ".owner",
     "message": "spec.owner is immutable: create a new StudioRun"},
    {"rule": "has(self.compositionRef) == has(oldSelf.compositionRef) && (!has(self.compositionRef) || self.compositionRef == oldSelf.compositionRef)",
     "fieldPath": ".compositionRef",
     "message": "spec.compositionRef is immutable: create a new StudioRun"},
    {"rule": "has(self.composition) == has(oldSelf.composition) && (!has(self.composition) || self.composition == oldSelf.composition)",
     "fieldPath": ".composition",
     "message": "spec.composition is immutable: create a new StudioRun"},
    {"rule": "has(self.approvers) == has(oldSelf.approvers) && (!has(self.approvers) || self.approvers == oldSelf.approvers)",
     "fieldPath": ".approvers",
     "message": "spec.approvers is immutable: create a new StudioRun"},
    {"rule": "has(self.budgets) == has(oldSelf.budgets) && (!has(self.budgets) || self.budgets == oldSelf.budgets)",
     "fieldPath": ".budgets",
     "message": "spec.budgets is immutable: create a new StudioRun"},
    {"rule": "(has(self.captureContent) && self.captureContent) == (has(oldSelf.captureContent) && oldSelf.captureContent)",
     "fieldPath": ".captureContent",
     "message": "spec.captureContent is immutable: create a new StudioRun"},
    {"rule": "!has(oldSelf.cancel) || !oldSelf.cancel || (has(self.cancel) && self.cancel)",
     "fieldPath": ".cancel",
     "message": "spec.cancel cannot be undone once set"}
]))]
pub struct StudioRunSpec {
    /// The Composition to run, by name (and optionally an exact revision). Exactly one of
    /// compositionRef and composition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composition_ref: Option<CompositionRef>,
    /// An inline composition, for one-off runs. Exactly one of compositionRef and composition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composition: Option<CompositionSpec>,
    /// The run's input: the first node's input.
    #[schemars(length(max = 65536))]
    pub input: String,
    /// The user the run belongs to. It must equal the user creating the run (an admission
    /// policy checks `request.userInfo.username`). The owner decides approvals.
    #[schemars(length(min = 1, max = 253))]
    pub owner: String,
    /// People who may decide approvals besides a human owner. Required when the owner is a
    /// service account (e.g. a GitOps pipeline) and the composition can ask a person anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvers: Option<Approvers>,
    /// Budget overrides, each at most the composition's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budgets: Option<Budgets>,
    /// Record (redacted, capped) arguments, results and text in trace events.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capture_content: bool,
    /// Set to true to cancel the run: in-flight calls are cancelled and the run ends Cancelled.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancel: bool,
}

/// A reference to a Composition in the run's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompositionRef {
    /// The Composition's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// An exact revision to run; without it, the current one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub revision: Option<i64>,
}

/// Who may decide a run's approvals besides its owner.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Approvers {
    /// User names (human users only; service accounts can never decide).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32), inner(length(min = 1, max = 253)))]
    pub users: Vec<String>,
    /// Group names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32), inner(length(min = 1, max = 253)))]
    pub groups: Vec<String>,
}

/// The phase of a run.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum RunPhase {
    /// Accepted, not started yet (reason Queued when over a limit).
    Pending,
    /// The runner pod is executing the graph.
    Running,
    /// Waiting for a person to decide an approval, a remote's question or an action.
    AwaitingApproval,
    /// Finished with an output.
    Succeeded,
    /// A node failed (a model error, a missing label, a refused configuration).
    Failed,
    /// Cancelled by `spec.cancel` or deletion.
    Cancelled,
    /// A budget ran out (`budget.hit`).
    BudgetExhausted,
    /// A person rejected (or let expire) an approval with no rejected edge.
    Rejected,
}

impl RunPhase {
    /// Whether the run has ended.
    pub fn is_terminal(self) -> bool {
        !matches!(
            self,
            RunPhase::Pending | RunPhase::Running | RunPhase::AwaitingApproval
        )
    }
}

/// Observed state of a StudioRun.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
// Rule 4.24: a write leaves `decisions` as it was or appends exactly one decision at the end,
// the earlier ones unchanged and in order; the list stays atomic (no list-type), so `==` and
// `+` are order-exact. It binds everyone, the operator included; who may append what is the
// admission policy's (the chart's `templates/policies/`).
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.decisions) ? (!has(oldSelf.decisions) || size(oldSelf.decisions) == 0) : !has(oldSelf.decisions) ? size(self.decisions) <= 1 : (self.decisions == oldSelf.decisions || (size(self.decisions) == size(oldSelf.decisions) + 1 && oldSelf.decisions + [self.decisions[size(self.decisions) - 1]] == self.decisions))",
     "fieldPath": ".decisions",
     "message": "status.decisions is append-only: a write may append exactly one decision at the end and must leave the earlier ones unchanged and in order"}
]))]
pub struct StudioRunStatus {
    /// The generation the status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Pending, Running, AwaitingApproval, Succeeded, Failed, Cancelled, BudgetExhausted or
    /// Rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RunPhase>,
    /// Standard conditions (`Accepted`, `Succeeded`).
    #[serde(default)]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// Exactly what ran: the composition's name, revision and spec digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composition: Option<RanComposition>,
    /// Name of the runner pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_pod: Option<String>,
    /// When the runner started (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// When the run ended (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<String>,
    /// What the run used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub totals: Option<RunTotals>,
    /// Trace events recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_count: Option<i64>,
    /// Trace events dropped past the per-run cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_dropped: Option<i64>,
    /// Decisions the run is waiting for (at most 12: a run asks at most 12 times). The text
    /// itself is never stored here. An entry is removed when it is settled or expires, so a
    /// decision naming an expired approval names nothing pending and is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 12),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["id"])
    )]
    pub pending_approvals: Vec<PendingApproval>,
    /// Decisions made, append-only: a write leaves them as they were or appends exactly one at
    /// the end (the apiserver refuses reordering, changing, removing or adding several). The
    /// owner or an approver appends one with `kubectl patch studiorun NAME --subresource=status
    /// --type=json -p '[{"op":"add","path":"/status/decisions/-","value":{...}}]'` (the list
    /// defaults to empty, so the first `add` works too). The admission policy
    /// (the chart's `templates/policies/`) lets only a person who is the owner or an approver append, once per
    /// pending approval, with `decidedBy` their own user name and, to approve, its digest.
    /// While those policies are off or one is missing, a decision appended by hand is not
    /// honoured: only those made through the sidecar's API count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), extend("default" = []))]
    pub decisions: Vec<Decision>,
    /// Why the run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
}

/// The composition a run executed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RanComposition {
    /// The Composition's name (empty for an inline composition).
    #[serde(default)]
    pub name: String,
    /// The revision that ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    /// SHA-256 of the canonical JSON of the spec that ran.
    #[serde(default)]
    pub digest: String,
}

/// What a run used. The same numbers close the trace with `run.end`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunTotals {
    /// Model tokens, all models.
    #[serde(default)]
    pub tokens: u64,
    /// Model tokens per model entry.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tokens_by_model: BTreeMap<String, u64>,
    /// Tool calls.
    #[serde(default)]
    pub tool_calls: u64,
    /// Delegations (supervisor child calls and A2A calls).
    #[serde(default)]
    pub delegations: u64,
    /// Remote calls (A2A messages).
    #[serde(default)]
    pub remote_calls: u64,
    /// Wall time in milliseconds (time waiting for people included).
    #[serde(default)]
    pub wall_time_ms: u64,
}

/// Why a run failed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunError {
    /// The node that failed, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// What went wrong.
    pub message: String,
}

/// A run's input over [`MAX_INPUT_CHARS`](crate::codes::limits::MAX_INPUT_CHARS) characters
/// (rule 1.28).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the run's input is {chars} characters; a run takes at most {max} (limits.maxInputChars): shorten it",
    max = crate::codes::limits::MAX_INPUT_CHARS
)]
pub struct InputTooLong {
    /// The input's length in characters.
    pub chars: usize,
}

/// Checks a run's input against the input limit: the one check, used by the CLI before a run
/// starts, by the engine, and by the operator and the sidecar when a run is created.
pub fn check_input(input: &str) -> Result<(), InputTooLong> {
    let chars = input.chars().count();
    if chars > crate::codes::limits::MAX_INPUT_CHARS {
        return Err(InputTooLong { chars });
    }
    Ok(())
}

#[cfg(test)]
mod input_tests {
    use super::*;
    use crate::codes::limits::MAX_INPUT_CHARS;

    #[test]
    fn an_input_at_the_limit_passes_and_one_character_more_is_refused_with_its_length() {
        assert_eq!(check_input(&"é".repeat(MAX_INPUT_CHARS)), Ok(()));
        let too_long = "é".repeat(MAX_INPUT_CHARS + 1);
        let err = check_input(&too_long).err();
        assert_eq!(
            err,
            Some(InputTooLong {
                chars: MAX_INPUT_CHARS + 1
            })
        );
        assert!(
            err.map(|e| e.to_string())
                .unwrap_or_default()
                .contains("at most 8192"),
            "the message names the limit"
        );
    }
}
