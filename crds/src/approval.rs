//! Approvals, the one home (as [`crate::budget`] is for budgets): what a run asks a person
//! ([`ApprovalRequest`]: the exact text under review, its digest, size and expiry), the part
//! of it the run's status shows ([`PendingApproval`], never the text), the decision a person
//! appends ([`Decision`]), the kinds, how a request ends ([`DecisionKind`]) and the state a
//! stored approval is in ([`ApprovalState`]), and the limits: timeouts and text caps. The
//! runner, the sidecar's relay and API, its store, the trace events and the operator's
//! configuration all use these types; the relay's routes are [`crate::relay`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The most approvals one run asks for (rule 1.31): the limits table's entry.
pub use crate::codes::limits::MAX_APPROVALS_PER_RUN;

/// Text over this size is shown only in part and can only be rejected.
pub const MAX_COMPLETE_BYTES: usize = 128 * 1024;
/// The most text one request carries (a run's text over [`MAX_COMPLETE_BYTES`] is sent whole
/// up to this, and can only be rejected).
pub const MAX_TEXT_BYTES: usize = 1024 * 1024;
// A text shown whole is always sent whole.
const _: () = assert!(MAX_COMPLETE_BYTES < MAX_TEXT_BYTES);
/// How long a person has to decide, by default: 900 s.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(900);
/// The longest a person may be given to decide: one day (rule 4.13). Longer timeouts are
/// refused by the CLI and the operator's configuration, and cut to this by the runner.
pub const MAX_APPROVAL_TIMEOUT: Duration = Duration::from_secs(86_400);

/// What a person is asked to decide: the body of the relay's ask, the runner's request to its
/// decision source, and what the sidecar's store keeps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalRequest {
    /// The approval's id within the run (`approval-1`, `input-2`, `action-3`).
    pub id: String,
    /// Approval, Input (a remote's question) or Action (an acting remote's request).
    pub kind: ApprovalKind,
    /// The node asking.
    pub node: String,
    /// What the person is asked (a HumanApproval's prompt; empty for the other kinds).
    pub prompt: String,
    /// The exact text under review, exactly as the run goes on with it (never redacted).
    pub text: String,
    /// [`approval_digest`](crate::relay::approval_digest) of the run, `id` and `text`
    /// (SHA-256, hex): an approval must name it, and no other run's or approval's digest is
    /// this one.
    pub digest: String,
    /// Size of `text` in bytes.
    pub size: u64,
    /// False when `text` is over [`MAX_COMPLETE_BYTES`]: it can then only be rejected.
    pub complete: bool,
    /// When the request expires (a rejection), RFC 3339.
    pub expires_at: String,
}

impl ApprovalRequest {
    /// What the run's status shows of it: everything but the prompt and the text (rule 4.21:
    /// the text never goes to etcd).
    pub fn pending(&self) -> PendingApproval {
        PendingApproval {
            id: self.id.clone(),
            node: self.node.clone(),
            kind: self.kind,
            digest: self.digest.clone(),
            size: self.size,
            complete: self.complete,
            expires_at: self.expires_at.clone(),
        }
    }
}

/// What a pending decision is about.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum ApprovalKind {
    /// A HumanApproval node's text under review.
    Approval,
    /// A remote agent's question (A2A input-required).
    Input,
    /// An acting remote's exact request.
    Action,
}

impl ApprovalKind {
    /// Every kind.
    pub const ALL: [ApprovalKind; 3] = [
        ApprovalKind::Approval,
        ApprovalKind::Input,
        ApprovalKind::Action,
    ];

    /// Its name on the wire and in the store: `Approval`, `Input`, `Action`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalKind::Approval => "Approval",
            ApprovalKind::Input => "Input",
            ApprovalKind::Action => "Action",
        }
    }

    /// The kind named `name` ([`ApprovalKind::as_str`]).
    pub fn parse(name: &str) -> Option<ApprovalKind> {
        ApprovalKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The word an approval id starts with and people read: `approval`, `input`, `action`.
    pub fn word(self) -> &'static str {
        match self {
            ApprovalKind::Approval => "approval",
            ApprovalKind::Input => "input",
            ApprovalKind::Action => "action",
        }
    }
}

/// A decision the run is waiting for.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    /// The approval's id, named by a decision.
    pub id: String,
    /// The node asking.
    pub node: String,
    /// Approval, Input or Action.
    pub kind: ApprovalKind,
    /// The digest of the text under review (SHA-256, hex, over the run's UID, this id and the
    /// text); an approval must name it.
    pub digest: String,
    /// Size of the text in bytes.
    pub size: u64,
    /// False when the text is over 128 KiB and only part can be shown (it can only be rejected).
    pub complete: bool,
    /// When the approval expires (a rejection), RFC 3339.
    pub expires_at: String,
}

/// A decision verb.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum DecisionVerb {
    /// Approve (must name the digest of the text read).
    Approve,
    /// Reject (with an optional comment).
    Reject,
}

/// A decision made through the sidecar's API (`POST /api/v1/runs/{namespace}/{name}/approvals/{id}`),
/// which the sidecar turns into a [`Decision`] appended with the caller's own token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecideRequest {
    /// Approve or Reject.
    pub decision: DecisionVerb,
    /// The digest of the text read (required to approve).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// A comment (a rejected edge's node receives it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// For a remote's question: the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

/// One decision, appended to `status.decisions`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Decision {
    /// The pending approval's id.
    #[schemars(length(min = 1, max = 128))]
    pub approval_id: String,
    /// Approve or Reject.
    pub decision: DecisionVerb,
    /// The digest of the text the person read (required to approve).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128))]
    pub digest: Option<String>,
    /// The reviewer's comment; a rejected edge's node receives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 8192))]
    pub comment: Option<String>,
    /// For a remote agent's question (kind Input): the person's answer, sent to the remote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 8192))]
    pub answer: Option<String>,
    /// Who decided: the user name of the person appending the decision. The admission policy
    /// (the chart's `templates/policies/`) refuses a decision whose `decidedBy` is not the requester's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub decided_by: Option<String>,
    /// When (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub decided_at: Option<String>,
}

/// How an approval was settled (the `decision` of `approval.decided`, and the settlement the
/// sidecar's store keeps).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DecisionKind {
    /// Approved against the digest of the text.
    Approved,
    /// Rejected (with an optional comment).
    Rejected,
    /// Nobody decided in time: a rejection.
    Expired,
    /// The run was cancelled first.
    Cancelled,
}

impl DecisionKind {
    /// Every outcome.
    pub const ALL: [DecisionKind; 4] = [
        DecisionKind::Approved,
        DecisionKind::Rejected,
        DecisionKind::Expired,
        DecisionKind::Cancelled,
    ];

    /// Its name on the wire and in the store: `approved`, `rejected`, `expired`, `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::Approved => "approved",
            DecisionKind::Rejected => "rejected",
            DecisionKind::Expired => "expired",
            DecisionKind::Cancelled => "cancelled",
        }
    }

    /// The outcome named `name` ([`DecisionKind::as_str`]).
    pub fn parse(name: &str) -> Option<DecisionKind> {
        DecisionKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// Where an approval stands: waiting for a person, or settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalState {
    /// Waiting for a person.
    Pending,
    /// Approved against the digest of the text.
    Approved,
    /// Rejected.
    Rejected,
    /// Nobody decided in time.
    Expired,
    /// The run was cancelled first.
    Cancelled,
}

impl ApprovalState {
    /// Its name in the API's replies: `pending`, `approved`, `rejected`, `expired`, `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Approved => "approved",
            ApprovalState::Rejected => "rejected",
            ApprovalState::Expired => "expired",
            ApprovalState::Cancelled => "cancelled",
        }
    }
}

impl From<Option<DecisionKind>> for ApprovalState {
    fn from(settled: Option<DecisionKind>) -> Self {
        match settled {
            None => ApprovalState::Pending,
            Some(DecisionKind::Approved) => ApprovalState::Approved,
            Some(DecisionKind::Rejected) => ApprovalState::Rejected,
            Some(DecisionKind::Expired) => ApprovalState::Expired,
            Some(DecisionKind::Cancelled) => ApprovalState::Cancelled,
        }
    }
}

/// An approval as the API shows it: the text with control and invisible characters made
/// visible, and a note saying how many there were.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalView {
    /// The approval's id.
    pub id: String,
    /// Approval, Input or Action.
    pub kind: ApprovalKind,
    /// The node asking.
    pub node: String,
    /// What the person is asked, made visible.
    pub prompt: String,
    /// The text under review, made visible (empty once settled).
    pub text: String,
    /// How many characters of the text were made visible, when some were.
    pub text_note: Option<String>,
    /// The text exactly as asked (empty once settled), so a client computes the digest itself
    /// (`orrery_crds::relay::approval_digest` of the run's UID, the id and this text) and shows
    /// `text` to the person.
    pub exact_text: String,
    /// The digest of the exact text.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
    /// False when only a rejection is possible.
    pub complete: bool,
    /// When it expires, RFC 3339.
    pub expires_at: String,
    /// Pending or how it was settled.
    pub state: ApprovalState,
    /// Decisions on it that were not taken, in the order of `status.decisions`: one whose
    /// digest did not match the text (the run refused it), or one written to the status by hand
    /// while nothing checked who wrote it (the sidecar did not honour it, attack 46).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<RefusedDecision>,
}

/// A decision on an approval that was not taken, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefusedDecision {
    /// Its index in `status.decisions`.
    pub index: u64,
    /// Why it was not taken, and what to do instead.
    pub reason: String,
}

/// The reply of `GET …/approvals`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalList {
    /// Every approval of the run, in the order they were asked.
    pub items: Vec<ApprovalView>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn kinds_and_outcomes_are_named_as_serde_names_them_and_parse_back() {
        for kind in ApprovalKind::ALL {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::json!(kind.as_str())
            );
            assert_eq!(ApprovalKind::parse(kind.as_str()), Some(kind));
        }
        for outcome in DecisionKind::ALL {
            assert_eq!(
                serde_json::to_value(outcome).unwrap(),
                serde_json::json!(outcome.as_str())
            );
            assert_eq!(DecisionKind::parse(outcome.as_str()), Some(outcome));
            let state = ApprovalState::from(Some(outcome));
            assert_eq!(state.as_str(), outcome.as_str());
            assert_eq!(
                serde_json::to_value(state).unwrap(),
                serde_json::json!(state.as_str())
            );
        }
        assert_eq!(ApprovalState::from(None).as_str(), "pending");
        assert_eq!(ApprovalKind::parse("approval"), None);
        assert_eq!(DecisionKind::parse("Approved"), None);
    }

    #[test]
    fn the_status_shows_a_request_without_its_prompt_or_text() {
        let request = ApprovalRequest {
            id: "approval-1".into(),
            kind: ApprovalKind::Input,
            node: "review".into(),
            prompt: "Publish?".into(),
            text: "the secret draft".into(),
            digest: "d".into(),
            size: 16,
            complete: true,
            expires_at: "2026-12-02T10:00:00Z".into(),
        };
        let shown = serde_json::to_string(&request.pending()).unwrap();
        assert_eq!(
            shown,
            r#"{"id":"approval-1","node":"review","kind":"Input","digest":"d","size":16,"complete":true,"expiresAt":"2026-12-02T10:00:00Z"}"#
        );
    }

    #[test]
    fn an_approval_waits_fifteen_minutes_by_default_and_a_day_at_most_rule_4_13() {
        assert_eq!(DEFAULT_APPROVAL_TIMEOUT.as_secs(), 900);
        assert_eq!(MAX_APPROVAL_TIMEOUT.as_secs(), 24 * 3600);
    }
}
