//! Approvals for people, under `/api/v1/runs/{namespace}/{name}/approvals`: the text under
//! review (held by the sidecar, never in etcd) to the run's owner and approvers only, and a
//! decision made through the API, which the sidecar turns into an append to the run's
//! `status.decisions` **with the caller's own token** (the apiserver's admission policies
//! decide who may; `kubectl patch --subresource=status` is the same write by hand).
//!
//! - `GET …/approvals`: every approval of the run, pending or settled, with its text shown
//!   with control and invisible characters made visible (as the terminal prompt shows it) and
//!   a note saying how many there were; the digest is of the exact text.
//! - `POST …/approvals/{id}`: `{"decision": "Approve", "digest": "…"}` (the digest of the text
//!   read), `{"decision": "Reject", "comment": "…"}`, or for a remote's question
//!   `{"decision": "Approve", "digest": "…", "answer": "…"}`. The reply waits (up to 30 s) for
//!   the run to take it up: 200 with the outcome when it did; 409 when it lost a race (the
//!   approval expired, the run was cancelled, another decision was taken first) or the run
//!   refused it; 202 when the run has not taken it up yet (it will, or it settles otherwise).

use super::Sidecar;
use super::caller::run_for_owner_or_approver;
use super::problem::{Problem, body_loc};
use super::store::StoredApproval;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use kube::Api;
use kube::api::{Patch, PatchParams};
use orrery_crds::StudioRun;
use orrery_crds::events::visible;
use orrery_crds::run::DecisionVerb;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// How long a decision made through the API waits for the run to take it up.
pub const DECISION_WAIT: Duration = Duration::from_secs(30);

fn view(a: &StoredApproval) -> Value {
    let shown = visible(&a.text);
    json!({
        "id": a.id,
        "kind": a.kind,
        "node": a.node,
        "prompt": visible(&a.prompt).text,
        "text": shown.text,
        "textNote": shown.note(),
        "digest": a.digest,
        "size": a.size,
        "complete": a.complete,
        "expiresAt": a.expires_at,
        "state": a.settled.as_deref().unwrap_or("pending"),
    })
}

/// `GET /api/v1/runs/{ns}/{name}/approvals`.
pub async fn list(
    State(sidecar): State<Arc<Sidecar>>,
    Path((namespace, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Json<Value>, Problem> {
    let caller = sidecar.caller(&headers).await?;
    let run = run_for_owner_or_approver(&caller, &namespace, &name).await?;
    let uid = run.metadata.uid.clone().unwrap_or_default();
    let approvals = sidecar.store.approvals(&uid).await.map_err(|e| {
        super::log(&format!("reading approvals of run {uid}: {e}"));
        Problem::unavailable("the approvals cannot be read just now; retry")
    })?;
    let items: Vec<Value> = approvals.iter().map(view).collect();
    Ok(Json(json!({ "items": items })))
}

/// A decision made through the API.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecideRequest {
    /// Approve or Reject.
    pub decision: DecisionVerb,
    /// The digest of the text read (required to approve).
    #[serde(default)]
    pub digest: Option<String>,
    /// A comment (a rejected edge's node receives it).
    #[serde(default)]
    pub comment: Option<String>,
    /// For a remote's question: the answer.
    #[serde(default)]
    pub answer: Option<String>,
}

/// `POST /api/v1/runs/{ns}/{name}/approvals/{id}`.
pub async fn decide(
    State(sidecar): State<Arc<Sidecar>>,
    Path((namespace, name, id)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let caller = sidecar.caller(&headers).await?;
    if caller.is_service_account() {
        return Err(Problem::forbidden(format!(
            "{} is not a person: approvals are decided by people only",
            caller.username
        )));
    }
    sidecar.limits.decide(&caller.username)?;
    let mut deserializer = serde_json::Deserializer::from_slice(&body);
    let request: DecideRequest =
        serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
            Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                super::problem::codes::INVALID,
                e.inner().to_string(),
            )
            .at(body_loc(&e.path().to_string()))
        })?;
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
    if let Some(settled) = &approval.settled {
        return Err(conflict(format!(
            "approval {id} is already settled: {settled}"
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
            Some(d) if !d.eq_ignore_ascii_case(&approval.digest) => {
                return Err(conflict(format!(
                    "the digest {d} is not the digest of approval {id}'s text ({}); read the text again and approve its digest",
                    approval.digest
                )));
            }
            Some(_) => {}
        }
    }
    let mut decision = json!({
        "approvalId": id,
        "decision": request.decision,
        "decidedBy": caller.username,
        "decidedAt": orrery_now(),
    });
    if request.decision == DecisionVerb::Approve {
        decision["digest"] = json!(approval.digest);
    }
    if let Some(comment) = &request.comment {
        decision["comment"] = json!(comment);
    }
    if let Some(answer) = &request.answer {
        decision["answer"] = json!(answer);
    }
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "add", "path": "/status/decisions/-", "value": decision}
    ]))
    .map_err(|e| Problem::unavailable(format!("building the patch: {e}")))?;
    let written = Api::<StudioRun>::namespaced(caller.client.clone(), &namespace)
        .patch_status(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .map_err(|e| {
            super::caller::cluster_problem(
                &e,
                &format!("deciding approval {id} of studiorun {namespace}/{name}"),
            )
        })?;
    let index = written
        .status
        .as_ref()
        .and_then(|s| s.decisions.iter().rposition(|d| d.approval_id == id))
        .unwrap_or(0) as u64;
    await_outcome(&sidecar, &uid, &id, index).await
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
                return Ok((
                    StatusCode::OK,
                    Json(json!({"id": id, "index": index, "outcome": settled})),
                )
                    .into_response());
            }
            return Err(conflict(format!(
                "the decision came too late: approval {id} was settled first ({settled})"
            )));
        }
        if tokio::time::Instant::now() >= deadline || sidecar.shutdown.is_cancelled() {
            return Ok((
                StatusCode::ACCEPTED,
                Json(json!({"id": id, "index": index, "outcome": null,
                    "message": "recorded in the run's status; the run has not taken it up yet"})),
            )
                .into_response());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
