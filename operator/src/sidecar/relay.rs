//! The runner side of approvals (the contract is [`orrery_crds::relay`]): a run asks a person
//! through the sidecar, long-polls for the decision, and says how it settled. Every call needs
//! the run's own run token ([`super::ingest::run_claims`]).
//!
//! - `POST /internal/v1/runs/{uid}/approvals`: the text is checked against its digest (bound
//!   to the run, the id and the text) and its size, stored (never in etcd), and the pending
//!   approval written into the run's status ([`super::run_status`]).
//! - `GET /internal/v1/runs/{uid}/approvals/{id}?after=N&waitSeconds=S`: the first decision on
//!   that approval at index `>= N` of the run's `status.decisions` (read from the apiserver:
//!   the object is the truth, so any replica answers), or 204 after `S` seconds. A decision
//!   written by hand while the admission policies are not in place is skipped and refused
//!   (attack 46, [`not_honoured`]); one made through the API always counts.
//! - `POST /internal/v1/runs/{uid}/approvals/{id}/settled`: how the run went on; the pending
//!   approval leaves the status.

use super::Sidecar;
use super::approvals::decision_digest;
use super::extract::RunToken;
use super::problem::{Problem, body_loc};
use super::run_status::publish_pending;
use super::store::{Put, RunRecord};
use crate::run_token::RunClaims;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kube::Api;
use orrery_crds::StudioRun;
use orrery_crds::approval::{
    ApprovalRequest, Decision, DecisionKind, MAX_APPROVALS_PER_RUN, MAX_TEXT_BYTES,
};
use orrery_crds::relay::{MAX_WAIT_SECONDS, RelayedDecision, Settlement, approval_digest};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// The largest ask body: the text at its cap plus room for the other fields.
pub const MAX_ASK_BYTES: usize = MAX_TEXT_BYTES + 64 * 1024;
/// How often a long-poll reads the run again.
const POLL_EVERY: Duration = Duration::from_millis(500);

fn record(uid: &str, claims: &RunClaims) -> RunRecord {
    RunRecord {
        uid: uid.to_owned(),
        namespace: claims.ns.clone(),
        name: claims.run.clone(),
    }
}

/// An approval id: what the runner makes (`approval-1`), at most 128 characters of lowercase
/// letters, digits and `-`.
pub fn valid_approval_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// `POST /internal/v1/runs/{uid}/approvals`.
pub async fn ask(
    State(sidecar): State<Arc<Sidecar>>,
    RunToken { uid, claims }: RunToken,
    body: axum::body::Body,
) -> Result<Response, Problem> {
    let bytes = axum::body::to_bytes(body, MAX_ASK_BYTES).await.map_err(|_| {
        Problem::too_large(format!(
            "an approval request is at most {MAX_ASK_BYTES} bytes; send the text cut to {MAX_TEXT_BYTES} bytes and marked incomplete"
        ))
    })?;
    let mut deserializer = serde_json::Deserializer::from_slice(&bytes);
    let ask: ApprovalRequest = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(|e| Problem::invalid(body_loc(&e.path().to_string()), e.inner().to_string()))?;
    if !valid_approval_id(&ask.id) {
        return Err(Problem::invalid(
            vec!["body".into(), "id".into()],
            "an approval id is 1 to 128 lowercase letters, digits and '-'",
        ));
    }
    if ask.size != ask.text.len() as u64 {
        return Err(Problem::invalid(
            vec!["body".into(), "size".into()],
            format!(
                "size is {} but the text is {} bytes",
                ask.size,
                ask.text.len()
            ),
        ));
    }
    if ask.digest != approval_digest(&uid, &ask.id, &ask.text) {
        return Err(Problem::invalid(
            vec!["body".into(), "digest".into()],
            "the digest is not the approval digest of this run, this id and this text",
        ));
    }
    let run = record(&uid, &claims);
    let asked = sidecar.store.approvals(&uid).await.map_err(|e| {
        tracing::warn!(run_uid = %uid, "reading approvals of run {uid}: {e}");
        Problem::unavailable("the run's approvals cannot be read just now; retry")
    })?;
    let max = MAX_APPROVALS_PER_RUN as usize;
    if asked.len() >= max && !asked.iter().any(|a| a.request.id == ask.id) {
        return Err(Problem::invalid(
            vec!["body".into(), "id".into()],
            format!("this run has asked {max} times, the most a run may ask (rule 4.20)"),
        ));
    }
    let put = sidecar.store.put_approval(&run, &ask).await.map_err(|e| {
        tracing::warn!(run_uid = %uid, "storing approval {} of run {uid}: {e}", ask.id);
        Problem::unavailable("the approval cannot be stored just now; retry")
    })?;
    if put == Put::Created {
        sidecar.metrics.asked();
    }
    if put == Put::Conflict {
        return Err(Problem::new(
            StatusCode::CONFLICT,
            "conflict",
            format!(
                "approval {} of this run was asked with another text; a new question needs a new id",
                ask.id
            ),
        ));
    }
    publish_pending(&sidecar, &run).await.map_err(|e| {
        tracing::warn!(run_uid = %uid, "run {uid}: {e}");
        Problem::unavailable("the pending approval cannot be written to the run just now; retry")
    })?;
    let status = if put == Put::Created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(serde_json::json!({"id": ask.id}))).into_response())
}

/// The query of a long-poll.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitQuery {
    /// Only decisions at this index of `status.decisions` or later.
    #[serde(default)]
    pub after: usize,
    /// How long to wait at most (capped at [`MAX_WAIT_SECONDS`]).
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

/// The first decision on approval `id` at index `>= after` of `run`'s decisions.
pub fn decision_for<'a>(
    run: &'a StudioRun,
    id: &str,
    after: usize,
) -> Option<(usize, &'a Decision)> {
    let decisions = &run.status.as_ref()?.decisions;
    decisions
        .iter()
        .enumerate()
        .skip(after)
        .find(|(_, d)| d.approval_id == id)
}

fn relayed(index: usize, d: &Decision) -> RelayedDecision {
    RelayedDecision {
        index,
        decision: d.decision,
        digest: d.digest.clone(),
        comment: d.comment.clone(),
        answer: d.answer.clone(),
        decided_by: d.decided_by.clone(),
    }
}

/// Why a decision could not be checked just now (the runner asks again).
#[derive(Debug, thiserror::Error)]
enum NotChecked {
    #[error(transparent)]
    Store(#[from] super::store::StoreError),
    #[error("the admission policies cannot be read just now: {0}")]
    PoliciesUnread(String),
}

/// Why the decision at `index` is not honoured, if it is not (attack 46). A decision made
/// through the API (recorded in the store) always is. One written to the status by hand
/// (`kubectl patch`) is honoured only while the admission policies that check such writes are
/// in place: with none configured (`admissionPolicies.enabled=false`) or one missing or not
/// denying, nothing checked who wrote it, so it is refused, once and for good (the refusal is
/// stored, and the person learns it from the approvals). The runner never sees it.
async fn not_honoured(
    sidecar: &Sidecar,
    uid: &str,
    id: &str,
    index: usize,
    decision: &Decision,
) -> Result<Option<String>, NotChecked> {
    let store = &sidecar.store;
    if let Some(reason) = store.refusal(uid, id, index as u64).await? {
        return Ok(Some(reason));
    }
    if store
        .is_api_decision(uid, id, &decision_digest(decision))
        .await?
    {
        return Ok(None);
    }
    let wanted = &sidecar.config.admission_policies;
    let missing = match (&sidecar.own_client, wanted.is_empty()) {
        (_, true) => Vec::new(),
        (Some(client), false) => {
            let looked = crate::admission_policies::look_closely(client, wanted).await;
            if looked.missing.is_empty() && !looked.unread.is_empty() {
                // Neither in place nor gone as far as can be told: asked again later.
                return Err(NotChecked::PoliciesUnread(looked.unread.join("; ")));
            }
            looked.missing
        }
        (None, false) => vec!["the sidecar has no cluster client to read them".to_owned()],
    };
    let reason = hand_decision_refusal(id, !wanted.is_empty(), &missing);
    if let Some(reason) = &reason {
        tracing::warn!(
            run_uid = %uid,
            approval = %id,
            index,
            decided_by = decision.decided_by.as_deref().unwrap_or(""),
            "a decision on approval {id} of run {uid} written to the status by hand is not honoured: {reason}"
        );
        store.refuse(uid, id, index as u64, reason).await?;
        sidecar.metrics.decision_not_honoured();
    }
    Ok(reason)
}

/// Why a decision on approval `id` written to the status by hand is not honoured, if it is
/// not: no admission policy is configured (`policies` false), or `missing` names those not in
/// place. The reason says how to decide instead.
pub fn hand_decision_refusal(id: &str, policies: bool, missing: &[String]) -> Option<String> {
    let instead = format!(
        "decide in the console or with POST /api/v1/runs/{{namespace}}/{{name}}/approvals/{id} (the sidecar's API)"
    );
    if !policies {
        Some(format!(
            "this deployment has no admission policies checking who writes status.decisions (admissionPolicies.enabled=false), so only decisions made through the sidecar's API count; {instead}"
        ))
    } else if !missing.is_empty() {
        Some(format!(
            "the admission policies that check who writes status.decisions are not all in place ({}), so a decision written there by hand (kubectl patch) is not honoured; {instead}",
            missing.join("; ")
        ))
    } else {
        None
    }
}

/// `GET /internal/v1/runs/{uid}/approvals/{id}`.
pub async fn wait_decision(
    State(sidecar): State<Arc<Sidecar>>,
    Path((_, id)): Path<(String, String)>,
    query: Result<Query<WaitQuery>, axum::extract::rejection::QueryRejection>,
    RunToken { uid, claims }: RunToken,
) -> Result<Response, Problem> {
    let Query(query) = query.map_err(|e| {
        Problem::invalid(
            vec!["query".into()],
            format!(
                "{}; the parameters are `after` and `waitSeconds`",
                e.body_text()
            ),
        )
    })?;
    let client = sidecar
        .own_client
        .clone()
        .ok_or_else(|| Problem::unavailable("the sidecar has no cluster client"))?;
    let api = Api::<StudioRun>::namespaced(client, &claims.ns);
    let wait = Duration::from_secs(
        query
            .wait_seconds
            .unwrap_or(MAX_WAIT_SECONDS)
            .min(MAX_WAIT_SECONDS),
    );
    let deadline = tokio::time::Instant::now() + wait;
    // Past the decisions found not honoured.
    let mut after = query.after;
    loop {
        match api.get(&claims.run).await {
            Ok(run) if run.metadata.uid.as_deref() == Some(uid.as_str()) => {
                while let Some((index, decision)) = decision_for(&run, &id, after) {
                    let refused = not_honoured(&sidecar, &uid, &id, index, decision)
                        .await
                        .map_err(|e| {
                            tracing::warn!(run_uid = %uid, "checking decision {index} on approval {id} of run {uid}: {e}");
                            Problem::unavailable("the decision cannot be checked just now; retry")
                        })?;
                    if refused.is_none() {
                        return Ok((StatusCode::OK, Json(relayed(index, decision))).into_response());
                    }
                    after = index + 1;
                }
            }
            Ok(_) => return Err(Problem::not_found("the run is gone")),
            Err(kube::Error::Api(s)) if s.code == 404 => {
                return Err(Problem::not_found("the run is gone"));
            }
            Err(e) => tracing::warn!(run_uid = %uid, "reading run {uid} for approval {id}: {e}"),
        }
        let now = tokio::time::Instant::now();
        if now >= deadline || sidecar.shutdown.is_cancelled() {
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        tokio::select! {
            () = tokio::time::sleep(POLL_EVERY.min(deadline - now)) => {}
            () = sidecar.shutdown.cancelled() => return Ok(StatusCode::NO_CONTENT.into_response()),
        }
    }
}

/// `POST /internal/v1/runs/{uid}/approvals/{id}/settled`.
pub async fn settled(
    State(sidecar): State<Arc<Sidecar>>,
    Path((_, id)): Path<(String, String)>,
    RunToken { uid, claims }: RunToken,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let mut deserializer = serde_json::Deserializer::from_slice(&body);
    let settlement: Settlement = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(|e| Problem::invalid(body_loc(&e.path().to_string()), e.inner().to_string()))?;
    let store_problem = |e: super::store::StoreError| {
        tracing::warn!(run_uid = %uid, "settling approval {id} of run {uid}: {e}");
        Problem::unavailable("the settlement cannot be stored just now; retry")
    };
    let (outcome, index) = match &settlement {
        Settlement::Refused { index, reason } => {
            sidecar
                .store
                .refuse(&uid, &id, *index as u64, reason)
                .await
                .map_err(store_problem)?;
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        Settlement::Approved { index } => (DecisionKind::Approved, Some(*index as u64)),
        Settlement::Rejected { index } => (DecisionKind::Rejected, Some(*index as u64)),
        Settlement::Expired => (DecisionKind::Expired, None),
        Settlement::Cancelled => (DecisionKind::Cancelled, None),
    };
    if sidecar
        .store
        .settle(&uid, &id, outcome, index)
        .await
        .map_err(store_problem)?
    {
        sidecar.metrics.settled(outcome);
    }
    publish_pending(&sidecar, &record(&uid, &claims))
        .await
        .map_err(|e| {
            tracing::warn!(run_uid = %uid, "run {uid}: {e}");
            Problem::unavailable("the run's pending approvals cannot be written just now; retry")
        })?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_written_by_hand_counts_only_while_every_admission_policy_is_in_place() {
        assert_eq!(hand_decision_refusal("approval-1", true, &[]), None);
        let off = hand_decision_refusal("approval-1", false, &[]).expect("refused");
        for part in [
            "admissionPolicies.enabled=false",
            "only decisions made through the sidecar's API count",
            "/approvals/approval-1",
        ] {
            assert!(off.contains(part), "{off}");
        }
        let gone = hand_decision_refusal(
            "approval-2",
            true,
            &["ValidatingAdmissionPolicyBinding b is missing".into()],
        )
        .expect("refused");
        for part in [
            "b is missing",
            "kubectl patch",
            "/approvals/approval-2",
            "console",
        ] {
            assert!(gone.contains(part), "{gone}");
        }
    }

    #[test]
    fn approval_ids_are_short_lowercase_words() {
        for ok in ["approval-1", "input-12", "a"] {
            assert!(valid_approval_id(ok), "{ok}");
        }
        for bad in ["", "Approval-1", "a/b", "a b", &"x".repeat(129)] {
            assert!(!valid_approval_id(bad), "{bad}");
        }
    }
}
