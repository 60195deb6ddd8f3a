//! The approval relay between a runner pod and the sidecar: how a run asks a person (a
//! HumanApproval, a remote agent's question, an acting remote's request) and hears back. Both
//! sides build on these types, so they cannot drift apart. Every call carries the run's own
//! run-scoped token (`Authorization: Bearer`), as ingest does.
//!
//! 1. **Ask**: `POST` [`ask_path`] with an [`ApprovalRequest`](crate::approval::ApprovalRequest) (the exact text under review, its
//!    [`approval_digest`], size, whether it is complete, when it expires). The sidecar keeps the
//!    text (never in etcd; served only to the run's owner and approvers) and records the pending
//!    approval (id, node, kind, digest, size, complete, expiresAt) in the StudioRun's status.
//!    201; asking again with the same id and digest is a no-op (a retry), with another digest
//!    409.
//! 2. **Wait**: `GET` [`decision_path`]`?after=N&waitSeconds=S` long-polls for a decision on
//!    that approval appended to `status.decisions` at an index `>= N` (decisions arrive by the
//!    sidecar's API or by `kubectl patch --subresource=status`; the object is the truth, so any
//!    sidecar replica answers). 200 with a [`RelayedDecision`], or 204 when none came within
//!    `S` seconds (ask again).
//! 3. **Settle**: `POST` [`settle_path`] with a [`Settlement`]: how the run went on (approved,
//!    rejected, expired, cancelled, or the decision refused, e.g. a digest that does not match,
//!    in which case the runner waits again after it). The sidecar drops the pending approval
//!    from the status (for every outcome but a refusal) and tells a person waiting on an API
//!    decision whether theirs was the one taken (a decision that lost a race with expiry or
//!    cancel is answered 409).
//!
//! The digest binds the run, the approval and the text ([`approval_digest`]), so a decision
//! can never be replayed onto another run, another approval of the same run, or other text.

use crate::approval::DecisionVerb;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Where a run asks (`{uid}`: the run's UID).
pub const ASK_ROUTE: &str = "/internal/v1/runs/{uid}/approvals";
/// Where a run waits for the decision on approval `{id}`.
pub const DECISION_ROUTE: &str = "/internal/v1/runs/{uid}/approvals/{id}";
/// Where a run says how approval `{id}` was settled.
pub const SETTLE_ROUTE: &str = "/internal/v1/runs/{uid}/approvals/{id}/settled";
/// The longest one long-poll waits, in seconds.
pub const MAX_WAIT_SECONDS: u64 = 30;

/// [`ASK_ROUTE`] of a run.
pub fn ask_path(run_uid: &str) -> String {
    ASK_ROUTE.replace("{uid}", run_uid)
}

/// [`DECISION_ROUTE`] of a run's approval.
pub fn decision_path(run_uid: &str, approval_id: &str) -> String {
    DECISION_ROUTE
        .replace("{uid}", run_uid)
        .replace("{id}", approval_id)
}

/// [`SETTLE_ROUTE`] of a run's approval.
pub fn settle_path(run_uid: &str, approval_id: &str) -> String {
    SETTLE_ROUTE
        .replace("{uid}", run_uid)
        .replace("{id}", approval_id)
}

/// The digest a person approves: SHA-256 (lowercase hex) over the run's UID, the approval's id
/// and the exact text, each prefixed by its length in bytes (so no two different triples share
/// an input). An approval must name it; the runner checks it again.
pub fn approval_digest(run_uid: &str, approval_id: &str, text: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"orrery-approval-v1\n");
    for part in [run_uid, approval_id, text] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// A decision a person appended to the run's `status.decisions`, relayed to the runner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelayedDecision {
    /// Its index in `status.decisions` (wait with `after` one past it for the next one).
    pub index: usize,
    /// Approve or Reject.
    pub decision: DecisionVerb,
    /// The digest the person approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The reviewer's comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// For kind Input: the person's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Who decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
}

/// How a request was settled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "outcome")]
pub enum Settlement {
    /// The decision at `index` approved it.
    Approved {
        /// Its index in `status.decisions`.
        index: usize,
    },
    /// The decision at `index` rejected it.
    Rejected {
        /// Its index in `status.decisions`.
        index: usize,
    },
    /// Nobody decided in time: a rejection.
    Expired,
    /// The run was cancelled first.
    Cancelled,
    /// The decision at `index` was refused (a digest that does not match, an approval of
    /// incomplete text); the request stays open.
    Refused {
        /// Its index in `status.decisions`.
        index: usize,
        /// Why.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_digest_binds_the_run_the_approval_and_the_text() {
        let base = approval_digest("uid-1", "approval-1", "ship it");
        assert_eq!(base.len(), 64);
        assert_eq!(base, approval_digest("uid-1", "approval-1", "ship it"));
        for other in [
            approval_digest("uid-2", "approval-1", "ship it"),
            approval_digest("uid-1", "approval-2", "ship it"),
            approval_digest("uid-1", "approval-1", "ship it!"),
            // No field bleeds into the next: moving a byte across a boundary changes it.
            approval_digest("uid-1a", "pproval-1", "ship it"),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn the_paths_name_the_run_and_the_approval() {
        assert_eq!(ask_path("u"), "/internal/v1/runs/u/approvals");
        assert_eq!(
            decision_path("u", "a-1"),
            "/internal/v1/runs/u/approvals/a-1"
        );
        assert_eq!(
            settle_path("u", "a-1"),
            "/internal/v1/runs/u/approvals/a-1/settled"
        );
    }

    #[test]
    fn a_settlement_says_its_outcome_by_name() {
        let text = serde_json::to_string(&Settlement::Refused {
            index: 2,
            reason: "digest".into(),
        })
        .unwrap();
        assert_eq!(text, r#"{"outcome":"refused","index":2,"reason":"digest"}"#);
        let back: Settlement = serde_json::from_str(r#"{"outcome":"expired"}"#).unwrap();
        assert_eq!(back, Settlement::Expired);
    }
}
