//! Compositions through the sidecar, always with the caller's own token (RBAC decides who may
//! read, follow or write them; the sidecar holds no more power than its caller):
//!
//! - `GET /api/v1/namespaces/{ns}/compositions[/{name}]`: JSON, the objects with their status;
//!   with `Accept: text/event-stream`, the apiserver's watch of them as Server-Sent Events
//!   ([`watch`]).
//! - `PUT /api/v1/namespaces/{ns}/compositions/{name}`: a save, validated, then server-side
//!   applied as field manager `orrery-console` ([`save`]).
//! - `GET /api/v1/namespaces/{ns}/compositions/{name}/revisions[/{n}]`: the immutable revisions
//!   the operator records, from their ControllerRevisions ([`revisions`]).

pub mod revisions;
pub mod save;
pub mod watch;

use super::Sidecar;
use super::caller::{Caller, cluster_problem};
use super::events::wants_stream;
use super::objects::tidy;
use super::problem::Problem;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use kube::Api;
use kube::api::ListParams;
use orrery_crds::Composition;
use serde_json::{Value, json};
use std::sync::Arc;

/// `GET /api/v1/namespaces/{ns}/compositions`: `{"items": [...]}`, or with `Accept:
/// text/event-stream` the namespace's Compositions followed live ([`watch::follow`]).
pub async fn list(
    State(sidecar): State<Arc<Sidecar>>,
    caller: Caller,
    Path(namespace): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    if wants_stream(&headers) {
        return watch::follow(&sidecar, caller, &namespace, None, &headers).await;
    }
    let list = Api::<Composition>::namespaced(caller.client.clone(), &namespace)
        .list(&ListParams::default())
        .await
        .map_err(|e| cluster_problem(&e, &format!("compositions in {namespace}")))?;
    let items: Vec<Value> = list.items.iter().map(tidy).collect();
    Ok(Json(json!({ "items": items })).into_response())
}

/// `GET /api/v1/namespaces/{ns}/compositions/{name}`: the object, or with `Accept:
/// text/event-stream` that one Composition followed live ([`watch::follow`]).
pub async fn get(
    State(sidecar): State<Arc<Sidecar>>,
    caller: Caller,
    Path((namespace, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    if wants_stream(&headers) {
        return watch::follow(&sidecar, caller, &namespace, Some(&name), &headers).await;
    }
    let composition = Api::<Composition>::namespaced(caller.client.clone(), &namespace)
        .get(&name)
        .await
        .map_err(|e| cluster_problem(&e, &format!("composition {namespace}/{name}")))?;
    Ok(Json(tidy(&composition)).into_response())
}
