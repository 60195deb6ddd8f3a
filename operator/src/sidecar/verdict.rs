//! The validator's verdict on a Composition spec, as every route that takes one gives it: the
//! one validator (`orrery_crds::validate::validate`, the CLI's and the controller's), run
//! against the RegistryEntries of the namespace the caller may read (listed with the caller's
//! own token) and the deployment's limits. `POST …/validate` replies with the verdict
//! ([`verdict_json`]); a run start, a save and an import refuse an invalid spec with
//! [`invalid_composition`]: 422, every finding in `errors` at its field.

use super::Sidecar;
use super::caller::{Caller, cluster_problem};
use super::problem::Problem;
use crate::registry_view::registry_view;
use axum::http::StatusCode;
use kube::Api;
use kube::api::ListParams;
use orrery_crds::validate::{Validation, validate};
use orrery_crds::{CompositionSpec, RegistryEntry};
use serde_json::{Value, json};

/// The code of a 422 that refuses a composition the validator found errors in.
pub const INVALID_COMPOSITION: &str = "invalid_composition";

/// The entries of `namespace` the caller may read.
pub async fn entries(caller: &Caller, namespace: &str) -> Result<Vec<RegistryEntry>, Problem> {
    Api::<RegistryEntry>::namespaced(caller.client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .map_err(|e| cluster_problem(&e, &format!("registryentries in {namespace}")))
}

/// The validator's verdict on `spec` in `namespace`, against the entries the caller may read.
pub async fn verdict(
    sidecar: &Sidecar,
    caller: &Caller,
    namespace: &str,
    spec: &CompositionSpec,
) -> Result<Validation, Problem> {
    let entries = entries(caller, namespace).await?;
    Ok(validate(
        spec,
        &registry_view(&entries),
        &sidecar.config.deployment_limits(),
    ))
}

/// `{"valid", "errors", "warnings"}`: what `POST …/validate` answers.
pub fn verdict_json(validation: &Validation) -> Value {
    json!({
        "valid": validation.is_valid(),
        "errors": validation.errors,
        "warnings": validation.warnings,
    })
}

/// 422 [`INVALID_COMPOSITION`] at `loc` (the spec's place in the request), with every error
/// and warning of `validation`, each at its field.
pub fn invalid_composition(loc: Vec<Value>, validation: &Validation) -> Problem {
    Problem::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        INVALID_COMPOSITION,
        format!(
            "the composition has {} error(s); each is in `errors` at its field: fix them and send it again",
            validation.errors.len()
        ),
    )
    .at(loc)
    .with("errors", json!(validation.errors))
    .with("warnings", json!(validation.warnings))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use orrery_crds::common::ValidationIssue;

    #[test]
    fn a_refused_composition_carries_every_finding_at_the_specs_place() {
        let issue = |code: &str| ValidationIssue {
            loc: vec!["spec".into(), "nodes".into(), 0.into()],
            field: "spec.nodes[0]".into(),
            code: code.into(),
            message: "m".into(),
        };
        let validation = Validation {
            errors: vec![issue("unknown_model"), issue("unbounded_cycle")],
            warnings: vec![issue("label_ends_run")],
        };
        let problem = invalid_composition(vec!["body".into(), "spec".into()], &validation);
        assert_eq!(problem.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(problem.body.code, INVALID_COMPOSITION);
        assert!(problem.body.message.contains("2 error(s)"));
        assert_eq!(problem.member("errors")[1]["code"], "unbounded_cycle");
        assert_eq!(problem.member("warnings")[0]["code"], "label_ends_run");
        assert_eq!(verdict_json(&validation)["valid"], false);
    }
}
