//! Approvals for people, under `/api/v1/runs/{namespace}/{name}/approvals`: the text under
//! review (held by the sidecar, never in etcd) to the run's owner and approvers only, and a
//! decision made through the API, which the sidecar turns into an append to the run's
//! `status.decisions` **with the caller's own token** (the apiserver's admission policies
//! decide who may; `kubectl patch --subresource=status` is the same write by hand).
//!
//! - `GET …/approvals`: every approval of the run, pending or settled, with its text shown
//!   with control and invisible characters made visible (as the terminal prompt shows it) and
//!   a note saying how many there were; the digest is of the exact text; and the decisions on
//!   it that were not taken, with why.
//! - `POST …/approvals/{id}`: `{"decision": "Approve", "digest": "…"}` (the digest of the text
//!   read), `{"decision": "Reject", "comment": "…"}`, or for a remote's question
//!   `{"decision": "Approve", "digest": "…", "answer": "…"}`. The reply waits (up to 30 s) for
//!   the run to take it up: 200 with the outcome when it did; 409 when it lost a race (the
//!   approval expired, the run was cancelled, another decision was taken first) or the run
//!   refused it; 202 when the run has not taken it up yet (it will, or it settles otherwise).

use super::Sidecar;
use super::caller::{Caller, run_for_owner_or_approver};
use super::extract::Person;
use super::problem::Problem;
use super::store::StoredApproval;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kube::Api;
use kube::api::{Patch, PatchParams};
use orrery_crds::StudioRun;
pub use orrery_crds::approval::DecideRequest;
use orrery_crds::approval::{
    ApprovalList, ApprovalView, Decision, DecisionKind, DecisionVerb, RefusedDecision,
};
use orrery_crds::events::visible;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// How long a decision made through the API waits for the run to take it up.
pub const DECISION_WAIT: Duration = Duration::from_secs(30);

impl From<&StoredApproval> for ApprovalView {
    fn from(a: &StoredApproval) -> Self {
        let r = &a.request;
        let shown = visible(&r.text);
        ApprovalView {
            id: r.id.clone(),
            kind: r.kind,
            node: r.node.clone(),
            prompt: visible(&r.prompt).text.into_owned(),
            text_note: shown.note(),
            text: shown.text.into_owned(),
            exact_text: r.text.clone(),
            digest: r.digest.clone(),
            size: r.size,
            complete: r.complete,
            expires_at: r.expires_at.clone(),
            state: a.state(),
            refused: Vec::new(),
        }
    }
}

/// The reply of `POST …/approvals/{id}`: the outcome when the run took the decision up (200),
/// none and a message when it has not yet (202).
#[derive(Debug, Serialize)]
pub struct DecisionReply {
    /// The approval's id.
    pub id: String,
    /// The decision's index in `status.decisions`.
    pub index: u64,
    /// How the approval was settled.
    pub outcome: Option<DecisionKind>,
    /// What happens next, when the run has not taken the decision up yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<&'static str>,
}

/// `GET /api/v1/runs/{ns}/{name}/approvals`.
pub async fn list(
    State(sidecar): State<Arc<Sidecar>>,
    Path((namespace, name)): Path<(String, String)>,
    caller: Caller,
) -> Result<Json<ApprovalList>, Problem> {
    let run = run_for_owner_or_approver(&caller, &namespace, &name).await?;
    let uid = run.metadata.uid.clone().unwrap_or_default();
    let unavailable = |e: super::store::StoreError| {
        tracing::warn!(run_uid = %uid, "reading approvals of run {uid}: {e}");
        Problem::unavailable("the approvals cannot be read just now; retry")
    };
    let approvals = sidecar.store.approvals(&uid).await.map_err(unavailable)?;
    let refusals = sidecar.store.refusals(&uid).await.map_err(unavailable)?;
    let items = approvals
        .iter()
        .map(|a| {
            let mut view = ApprovalView::from(a);
            view.refused = refusals
                .iter()
                .filter(|(id, _, _)| *id == view.id)
                .map(|(_, index, reason)| RefusedDecision {
                    index: *index,
                    reason: reason.clone(),
                })
                .collect();
            view
        })
        .collect();
    Ok(Json(ApprovalList { items }))
}

/// `POST /api/v1/runs/{ns}/{name}/approvals/{id}`.
pub async fn decide(
    State(sidecar): State<Arc<Sidecar>>,
    Path((namespace, name, id)): Path<(String, String, String)>,
    Person(caller): Person,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    sidecar.limits.decide(&caller.username)?;
    let request: DecideRequest = super::body::parse_body(&body)?;
    let run = run_for_owner_or_approver(&caller, &namespace, &name).await?;
    let uid = run.metadata.uid.clone().unwrap_or_default();
    let approval = sidecar
        .store
        .approval(&uid, &id)
        .await
        .map_err(|_| Problem::unavailable("the approval cannot be read just now; retry"))?
        .ok_or_else(|| {
            Problem::not_found(format!("studiorun {namespace}/{name} has no approval {id}"))
        })?;
    if let Some(settled) = approval.settled {
        return Err(conflict(format!(
            "approval {id} is already settled: {}",
            settled.as_str()
        )));
    }
    if request.decision == DecisionVerb::Approve {
        match request.digest.as_deref() {
            None => {
                return Err(Problem::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    super::problem::codes::INVALID,
                    "an approval names the digest of the text read (GET the approvals for it)",
                )
                .at(vec!["body".into(), "digest".into()]));
            }
            Some(d) if !d.eq_ignore_ascii_case(&approval.request.digest) => {
                return Err(conflict(format!(
                    "the digest {d} is not the digest of approval {id}'s text ({}); read the text again and approve its digest",
                    approval.request.digest
                )));
            }
            Some(_) => {}
        }
    }
    let approve = request.decision == DecisionVerb::Approve;
    let decision = Decision {
        approval_id: id.clone(),
        decision: request.decision,
        digest: approve.then(|| approval.request.digest.clone()),
        comment: request.comment,
        answer: request.answer,
        decided_by: Some(caller.username.clone()),
        decided_at: Some(orrery_now()),
    };
    // Recorded before it is appended: the relay honours a decision it finds recorded even
    // while the admission policies are not in place, and must never see this one unrecorded.
    let recorded = decision_digest(&decision);
    sidecar
        .store
        .record_api_decision(&uid, &id, &recorded)
        .await
        .map_err(|e| {
            tracing::warn!(run_uid = %uid, "recording decision on approval {id} of run {uid}: {e}");
            Problem::unavailable("the decision cannot be recorded just now; retry")
        })?;
    let patch = append_decision(&decision).map_err(|e| {
        tracing::warn!(
            "building the decision patch for approval {id} of studiorun {namespace}/{name}: {e}"
        );
        Problem::unavailable("the decision cannot be recorded just now; retry")
    })?;
    let written = Api::<StudioRun>::namespaced(caller.client.clone(), &namespace)
        .patch_status(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await;
    let written = match written {
        Ok(written) => written,
        Err(e) => {
            // Not appended: nothing may match the record later (a hand-written copy).
            if let Err(forget) = sidecar
                .store
                .forget_api_decision(&uid, &id, &recorded)
                .await
            {
                tracing::warn!(run_uid = %uid, "forgetting unappended decision on approval {id} of run {uid}: {forget}");
            }
            return Err(super::caller::cluster_problem(
                &e,
                &format!("deciding approval {id} of studiorun {namespace}/{name}"),
            ));
        }
    };
    let index = written
        .status
        .as_ref()
        .and_then(|s| s.decisions.iter().rposition(|d| d.approval_id == id))
        .unwrap_or(0) as u64;
    sidecar.metrics.decided(approve);
    // Who decided what, for the audit trail: identifiers only, never the text, comment or answer.
    tracing::info!(
        run_uid = %uid,
        namespace = %namespace,
        name = %name,
        approval = %id,
        decision = ?decision.decision,
        decided_by = %caller.username,
        "approval {id} of studiorun {namespace}/{name}: {:?} by {}",
        decision.decision,
        caller.username
    );
    await_outcome(&sidecar, &uid, &id, index).await
}

/// The JSON patch appending `decision` to the run's `status.decisions` (rule 4.24: one
/// decision, at the end).
fn append_decision(decision: &Decision) -> Result<json_patch::Patch, serde_json::Error> {
    Ok(json_patch::Patch(vec![json_patch::PatchOperation::Add(
        json_patch::AddOperation {
            path: json_patch::jsonptr::PointerBuf::from_tokens(["status", "decisions", "-"]),
            value: serde_json::to_value(decision)?,
        },
    )]))
}

/// The digest of a decision as appended to `status.decisions`: SHA-256 over each of its fields,
/// length-prefixed, an absent one told from an empty one. The sidecar records the digests of
/// the decisions made through its API ([`super::store::Store::record_api_decision`]).
pub fn decision_digest(decision: &Decision) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(b"orrery-decision-v1\n");
    let verb = match decision.decision {
        DecisionVerb::Approve => "Approve",
        DecisionVerb::Reject => "Reject",
    };
    let fields = [
        Some(decision.approval_id.as_str()),
        Some(verb),
        decision.digest.as_deref(),
        decision.comment.as_deref(),
        decision.answer.as_deref(),
        decision.decided_by.as_deref(),
        decision.decided_at.as_deref(),
    ];
    for field in fields {
        match field {
            None => hasher.update([0u8]),
            Some(text) => {
                hasher.update([1u8]);
                hasher.update((text.len() as u64).to_be_bytes());
                hasher.update(text.as_bytes());
            }
        }
    }
    hex::encode(hasher.finalize())
}

fn conflict(message: String) -> Problem {
    Problem::new(StatusCode::CONFLICT, "conflict", message)
}

fn orrery_now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Waits until the run settles approval `id` or refuses the decision at `index`.
async fn await_outcome(
    sidecar: &Sidecar,
    uid: &str,
    id: &str,
    index: u64,
) -> Result<Response, Problem> {
    let deadline = tokio::time::Instant::now() + DECISION_WAIT;
    loop {
        if let Ok(Some(reason)) = sidecar.store.refusal(uid, id, index).await {
            return Err(conflict(format!("the run refused this decision: {reason}")));
        }
        if let Ok(Some(a)) = sidecar.store.approval(uid, id).await
            && let Some(settled) = a.settled
        {
            if a.settled_index == Some(index) {
                let reply = DecisionReply {
                    id: id.to_owned(),
                    index,
                    outcome: Some(settled),
                    message: None,
                };
                return Ok((StatusCode::OK, Json(reply)).into_response());
            }
            return Err(conflict(format!(
                "the decision came too late: approval {id} was settled first ({})",
                settled.as_str()
            )));
        }
        if tokio::time::Instant::now() >= deadline || sidecar.shutdown.is_cancelled() {
            let reply = DecisionReply {
                id: id.to_owned(),
                index,
                outcome: None,
                message: Some("recorded in the run's status; the run has not taken it up yet"),
            };
            return Ok((StatusCode::ACCEPTED, Json(reply)).into_response());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use orrery_crds::approval::{ApprovalKind, ApprovalRequest};
    use orrery_crds::relay::approval_digest;

    #[test]
    fn a_decisions_digest_changes_with_every_field_and_tells_absent_from_empty() {
        let base = Decision {
            approval_id: "approval-1".into(),
            decision: DecisionVerb::Approve,
            digest: Some("ab12".into()),
            comment: None,
            answer: None,
            decided_by: Some("alice@example.com".into()),
            decided_at: Some("2026-12-07T10:00:00Z".into()),
        };
        let same = base.clone();
        assert_eq!(decision_digest(&base), decision_digest(&same));
        let variants: Vec<Decision> = vec![
            Decision {
                approval_id: "approval-2".into(),
                ..base.clone()
            },
            Decision {
                decision: DecisionVerb::Reject,
                ..base.clone()
            },
            Decision {
                digest: None,
                ..base.clone()
            },
            Decision {
                comment: Some(String::new()),
                ..base.clone()
            },
            Decision {
                answer: Some("eu-west".into()),
                ..base.clone()
            },
            Decision {
                decided_by: Some("mallory".into()),
                ..base.clone()
            },
            Decision {
                decided_at: Some("2026-12-07T10:00:01Z".into()),
                ..base.clone()
            },
            // A field's text moved into its neighbour hashes differently.
            Decision {
                digest: Some("ab".into()),
                comment: Some("12".into()),
                ..base.clone()
            },
        ];
        let mut seen = std::collections::HashSet::from([decision_digest(&base)]);
        for variant in &variants {
            assert!(seen.insert(decision_digest(variant)), "{variant:?}");
        }
        // What the API server hands back reads as the same decision.
        let round_trip: Decision =
            serde_json::from_value(serde_json::to_value(&base).unwrap()).unwrap();
        assert_eq!(decision_digest(&round_trip), decision_digest(&base));
    }

    #[test]
    fn the_exact_text_hashes_to_the_digest_while_the_shown_text_makes_escapes_visible() {
        let text = "Publish?\u{202e}evil\u{1b}[31m red";
        let request = ApprovalRequest {
            id: "approval-1".into(),
            kind: ApprovalKind::Approval,
            node: "review".into(),
            prompt: "Publish these notes?".into(),
            text: text.into(),
            digest: approval_digest("uid-1", "approval-1", text),
            size: text.len() as u64,
            complete: true,
            expires_at: "2026-12-05T10:00:00Z".into(),
        };
        let view = ApprovalView::from(&StoredApproval {
            run_uid: "uid-1".into(),
            request,
            settled: None,
            settled_index: None,
        });
        assert_eq!(view.exact_text, text);
        assert_eq!(
            approval_digest("uid-1", &view.id, &view.exact_text),
            view.digest
        );
        assert_ne!(view.text, text, "the shown text makes the escapes visible");
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(json["exactText"], text);
    }
}
