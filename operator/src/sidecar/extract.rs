//! Who may call, checked once, before a handler runs: axum extractors carrying the 401/403
//! rules of every route (the 404 rule for what only owners and approvers may see is
//! [`run_for_owner_or_approver`](super::caller::run_for_owner_or_approver), the one place that
//! says it).
//!
//! - [`Caller`]: a person or a service account the cluster authenticated from the bearer token
//!   (401 without one, or with one the cluster refuses; 503 when the cluster cannot be asked).
//! - [`Person`]: a [`Caller`] who is not a service account (403): only people decide approvals.
//! - [`RunToken`]: the run-scoped token of the run named by the route's `{uid}` (401 without a
//!   valid run token, 403 for another run's): every internal route of a runner.

use super::Sidecar;
use super::caller::Caller;
use super::problem::Problem;
use crate::run_token::RunClaims;
use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use std::collections::HashMap;
use std::sync::Arc;

impl FromRequestParts<Arc<Sidecar>> for Caller {
    type Rejection = Problem;

    async fn from_request_parts(
        parts: &mut Parts,
        sidecar: &Arc<Sidecar>,
    ) -> Result<Self, Self::Rejection> {
        sidecar.caller(&parts.headers).await
    }
}

/// A caller who is a person, not a service account (or another `system:` identity).
#[derive(Clone, Debug)]
pub struct Person(pub Caller);

impl FromRequestParts<Arc<Sidecar>> for Person {
    type Rejection = Problem;

    async fn from_request_parts(
        parts: &mut Parts,
        sidecar: &Arc<Sidecar>,
    ) -> Result<Self, Self::Rejection> {
        let caller = Caller::from_request_parts(parts, sidecar).await?;
        if caller.is_service_account() {
            return Err(Problem::forbidden(format!(
                "{} is not a person: approvals are decided by people only",
                caller.username
            )));
        }
        Ok(Person(caller))
    }
}

/// The checked run token of the run whose UID the route names (`{uid}`).
#[derive(Clone, Debug)]
pub struct RunToken {
    /// The run's UID, from the route.
    pub uid: String,
    /// The token's claims (namespace, run name).
    pub claims: RunClaims,
}

impl FromRequestParts<Arc<Sidecar>> for RunToken {
    type Rejection = Problem;

    async fn from_request_parts(
        parts: &mut Parts,
        sidecar: &Arc<Sidecar>,
    ) -> Result<Self, Self::Rejection> {
        let Path(params) = Path::<HashMap<String, String>>::from_request_parts(parts, sidecar)
            .await
            .map_err(|e| Problem::not_found(format!("{}; no such endpoint", e.body_text())))?;
        let uid = params
            .get("uid")
            .cloned()
            .ok_or_else(|| Problem::not_found("this route names no run"))?;
        let claims = super::ingest::run_claims(sidecar, &parts.headers, &uid)?;
        Ok(RunToken { uid, claims })
    }
}
