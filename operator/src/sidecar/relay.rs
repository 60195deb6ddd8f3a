//! The runner side of approvals (the contract is [`orrery_crds::relay`]): a run asks a person
//! through the sidecar, long-polls for the decision, and says how it settled. Every call needs
//! the run's own run token ([`super::ingest::run_claims`]).
//!
//! - `POST /internal/v1/runs/{uid}/approvals`: the text is checked against its digest (bound
//!   to the run, the id and the text) and its size, stored (never in etcd), and the pending
//!   approval written into the run's status ([`super::run_status`]).
//! - `GET /internal/v1/runs/{uid}/approvals/{id}?after=N&waitSeconds=S`: the first decision on
//!   that approval at index `>= N` of the run's `status.decisions` (read from the apiserver:
//!   the object is the truth, so any replica answers), or 204 after `S` seconds.
//! - `POST /internal/v1/runs/{uid}/approvals/{id}/settled`: how the run went on; the pending
//!   approval leaves the status.

use super::Sidecar;
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
use orrery_crds::approval::{ApprovalRequest, DecisionKind, MAX_APPROVALS_PER_RUN, MAX_TEXT_BYTES};
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
pub fn decision_for(run: &StudioRun, id: &str, after: usize) -> Option<RelayedDecision> {
    let decisions = &run.status.as_ref()?.decisions;
    decisions
        .iter()
        .enumerate()
        .skip(after)
        .find(|(_, d)| d.approval_id == id)
        .map(|(index, d)| RelayedDecision {
            index,
            decision: d.decision,
            digest: d.digest.clone(),
            comment: d.comment.clone(),
            answer: d.answer.clone(),
            decided_by: d.decided_by.clone(),
        })
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
    loop {
        match api.get(&claims.run).await {
            Ok(run) if run.metadata.uid.as_deref() == Some(uid.as_str()) => {
                if let Some(decision) = decision_for(&run, &id, query.after) {
                    return Ok((StatusCode::OK, Json(decision)).into_response());
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
mod tests {
    use super::*;

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
