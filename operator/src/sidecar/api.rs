//! The run API under `/api/v1` that reads and writes what the apiserver holds, always with the
//! caller's own token (the sidecar holds no more power than its caller; RBAC and the admission
//! policies decide):
//!
//! - `GET /api/v1/me`: who the cluster says the caller is.
//! - `GET /api/v1/schema`: the Composition spec's JSON Schema, the trace-event schema, the
//!   capabilities and the budget ceilings of this deployment.
//! - `POST /api/v1/namespaces/{ns}/validate`: the one validator, against the RegistryEntries of
//!   the namespace the caller may read.
//! - `GET /api/v1/namespaces/{ns}/registry`.
//! - `GET /api/v1/runs/{ns}`, `GET /api/v1/runs/{ns}/{name}`, `POST /api/v1/runs/{ns}`,
//!   `POST /api/v1/runs/{ns}/{name}/cancel`.
//!
//! Compositions (list, get, follow, save, revisions) are [`super::compositions`]'; an import of
//! a seed spec is [`super::import`].

use super::Sidecar;
use super::body::parse_body;
use super::caller::{Caller, cluster_problem, run_for_owner_or_approver};
use super::objects::tidy;
use super::problem::Problem;
use super::run_list::RunsQuery;
use super::verdict::{entries, invalid_composition, verdict, verdict_json};
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource};
use orrery_crds::capabilities::Capabilities;
use orrery_crds::run::{Approvers, CompositionRef};
use orrery_crds::{Budgets, CompositionSpec, StudioRun, StudioRunSpec};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// `GET /api/v1/me`.
pub async fn me(
    State(sidecar): State<Arc<Sidecar>>,
    caller: Caller,
) -> Result<Json<Value>, Problem> {
    Ok(Json(me_view(&caller, sidecar.namespace.as_deref())))
}

/// What `/api/v1/me` says: the caller's name, groups, whether a person (a service account
/// cannot decide approvals), and the namespaces this install serves (its `--namespace`, else
/// none named: the console asks the person to type one).
fn me_view(caller: &Caller, served: Option<&str>) -> Value {
    json!({
        "username": caller.username,
        "groups": caller.groups,
        "person": !caller.is_service_account(),
        "namespaces": served.into_iter().collect::<Vec<_>>(),
    })
}

/// `GET /api/v1/schema`: public to every authenticated caller (it says what this deployment
/// runs, nothing about anyone's runs).
pub async fn schema(
    State(sidecar): State<Arc<Sidecar>>,
    _caller: Caller,
) -> Result<Json<Value>, Problem> {
    let limits = sidecar.config.deployment_limits();
    Ok(Json(json!({
        "composition": orrery_crds::schema::composition_spec_schema(),
        "events": orrery_crds::events::schema(),
        "capabilities": Capabilities::for_limits(&limits),
        "budgetCeilings": limits.ceilings,
        "approvalTimeoutSeconds": sidecar.config.approval_timeout_seconds,
    })))
}

/// The body of `validate`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidateRequest {
    /// The composition's spec.
    pub spec: CompositionSpec,
}

/// `POST /api/v1/namespaces/{ns}/validate`: `{"valid", "errors", "warnings"}` (200 whatever
/// the verdict; 422 only when the body is not a spec at all).
pub async fn validate_spec(
    State(sidecar): State<Arc<Sidecar>>,
    Path(namespace): Path<String>,
    caller: Caller,
    body: axum::body::Bytes,
) -> Result<Json<Value>, Problem> {
    let request: ValidateRequest = parse_body(&body)?;
    let validation = verdict(&sidecar, &caller, &namespace, &request.spec).await?;
    Ok(Json(verdict_json(&validation)))
}

/// `GET /api/v1/namespaces/{ns}/registry`: each entry's kind, endpoint, readiness, pins and
/// tools, and its error, as the console's registry view shows them.
pub async fn registry(
    Path(namespace): Path<String>,
    caller: Caller,
) -> Result<Json<Value>, Problem> {
    let entries = entries(&caller, &namespace).await?;
    let items: Vec<Value> = entries
        .iter()
        .map(|e| {
            let status = e.status.as_ref();
            let ready = status.and_then(|s| crate::kstatus::find(&s.conditions, "Ready"));
            json!({
                "name": e.metadata.name,
                "spec": e.spec,
                "ready": ready.map(|c| c.status == orrery_crds::ConditionStatus::True),
                "reason": ready.map(|c| c.reason.clone()),
                "message": ready.map(|c| c.message.clone()),
                "status": status,
            })
        })
        .collect();
    Ok(Json(json!({ "items": items })))
}

/// `GET /api/v1/runs/{ns}`: the runs of the namespace the caller owns or approves, newest
/// first, narrowed and paged by the query ([`super::run_list`]).
pub async fn list_runs(
    Path(namespace): Path<String>,
    query: Result<Query<RunsQuery>, axum::extract::rejection::QueryRejection>,
    caller: Caller,
) -> Result<Json<Value>, Problem> {
    let Query(query) = query.map_err(|e| {
        Problem::invalid(
            vec!["query".into()],
            format!("{}; {}", e.body_text(), super::run_list::QUERY_HELP),
        )
    })?;
    let list = Api::<StudioRun>::namespaced(caller.client.clone(), &namespace)
        .list(&ListParams::default())
        .await
        .map_err(|e| cluster_problem(&e, &format!("studioruns in {namespace}")))?;
    let (runs, next) = super::run_list::page(&list.items, &query, &caller)?;
    let items: Vec<Value> = runs.into_iter().map(tidy).collect();
    let mut reply = json!({ "items": items });
    if let Some(next) = next {
        reply["continue"] = Value::String(next);
    }
    Ok(Json(reply))
}

/// `GET /api/v1/runs/{ns}/{name}`: the run, to its owner and approvers (404 to anyone else).
pub async fn get_run(
    Path((namespace, name)): Path<(String, String)>,
    caller: Caller,
) -> Result<Json<Value>, Problem> {
    let run = run_for_owner_or_approver(&caller, &namespace, &name).await?;
    Ok(Json(tidy(&run)))
}

/// The body of a run start: what the person chooses; the owner is always the caller.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartRequest {
    /// The run's name; default: generated from `run-`.
    #[serde(default)]
    pub name: Option<String>,
    /// A Composition by name (and optionally revision).
    #[serde(default)]
    pub composition_ref: Option<CompositionRef>,
    /// Or a composition inline.
    #[serde(default)]
    pub composition: Option<CompositionSpec>,
    /// The input.
    pub input: String,
    /// Approvers besides the owner.
    #[serde(default)]
    pub approvers: Option<Approvers>,
    /// Budget overrides (only lower).
    #[serde(default)]
    pub budgets: Option<Budgets>,
    /// Record content in events.
    #[serde(default)]
    pub capture_content: bool,
}

/// `POST /api/v1/runs/{ns}`: creates a StudioRun owned by the caller, with the caller's token
/// (the apiserver's RBAC and admission decide). An inline composition is validated first
/// (422 with every finding). 201 with the run.
pub async fn start_run(
    State(sidecar): State<Arc<Sidecar>>,
    Path(namespace): Path<String>,
    caller: Caller,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    sidecar.limits.start(&caller.username)?;
    let request: StartRequest = parse_body(&body)?;
    if request.composition.is_some() == request.composition_ref.is_some() {
        return Err(Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            super::problem::codes::INVALID,
            "give exactly one of compositionRef (a Composition by name) or composition (inline)",
        )
        .at(vec!["body".into(), "compositionRef".into()]));
    }
    if let Err(too_long) = orrery_crds::run::check_input(&request.input) {
        return Err(Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            super::problem::codes::INVALID,
            too_long.to_string(),
        )
        .at(vec!["body".into(), "input".into()]));
    }
    if let Some(spec) = &request.composition {
        let validation = verdict(&sidecar, &caller, &namespace, spec).await?;
        if !validation.is_valid() {
            return Err(invalid_composition(
                vec!["body".into(), "composition".into()],
                &validation,
            ));
        }
    }
    let spec = StudioRunSpec {
        composition_ref: request.composition_ref,
        composition: request.composition,
        input: request.input,
        owner: caller.username.clone(),
        approvers: request.approvers,
        budgets: request.budgets,
        capture_content: request.capture_content,
        cancel: false,
    };
    let mut run = StudioRun::new(request.name.as_deref().unwrap_or_default(), spec);
    if request.name.is_none() {
        run.metadata.name = None;
        run.metadata.generate_name = Some("run-".into());
    }
    let created = Api::<StudioRun>::namespaced(caller.client.clone(), &namespace)
        .create(&PostParams::default(), &run)
        .await
        .map_err(|e| match &e {
            kube::Error::Api(s) if s.code == 409 => Problem::new(
                StatusCode::CONFLICT,
                "conflict",
                format!("{}; choose another name", s.message),
            ),
            kube::Error::Api(s) if s.code == 422 => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                super::problem::codes::INVALID,
                s.message.clone(),
            ),
            _ => cluster_problem(&e, &format!("creating a studiorun in {namespace}")),
        })?;
    Ok((StatusCode::CREATED, Json(tidy(&created))).into_response())
}

/// `POST /api/v1/runs/{ns}/{name}/cancel`: sets `spec.cancel` with the caller's token, for
/// the run's owner and approvers; 202 (the runner ends `Cancelled` shortly), or 409 when the
/// run is already over.
pub async fn cancel_run(
    Path((namespace, name)): Path<(String, String)>,
    caller: Caller,
) -> Result<Response, Problem> {
    let run = run_for_owner_or_approver(&caller, &namespace, &name).await?;
    if let Some(phase) = run.status.as_ref().and_then(|s| s.phase)
        && phase.is_terminal()
    {
        return Err(Problem::new(
            StatusCode::CONFLICT,
            "finished",
            format!(
                "studiorun {namespace}/{name} already ended {phase:?}; there is nothing to cancel"
            ),
        ));
    }
    let patch = json!({
        "apiVersion": StudioRun::api_version(&()),
        "kind": StudioRun::kind(&()),
        "spec": {"cancel": true}
    });
    Api::<StudioRun>::namespaced(caller.client.clone(), &namespace)
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| cluster_problem(&e, &format!("cancelling studiorun {namespace}/{name}")))?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"namespace": namespace, "name": name, "cancel": true})),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn caller(username: &str) -> Caller {
        let config = kube::Config::new("https://127.0.0.1:1".parse().unwrap());
        Caller {
            username: username.into(),
            groups: vec!["system:authenticated".into()],
            client: kube::Client::try_from(config).unwrap(),
        }
    }

    #[tokio::test]
    async fn me_names_the_namespace_a_single_namespace_install_serves_and_none_otherwise() {
        let view = me_view(&caller("alice"), Some("team-a"));
        assert_eq!(view["namespaces"], json!(["team-a"]));
        assert_eq!(view["person"], true);
        let view = me_view(&caller("system:serviceaccount:ci:bot"), None);
        assert_eq!(view["namespaces"], json!([]));
        assert_eq!(view["person"], false);
        assert_eq!(view["username"], "system:serviceaccount:ci:bot");
    }
}
