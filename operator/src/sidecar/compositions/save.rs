//! `PUT /api/v1/namespaces/{ns}/compositions/{name}`: a person saves a Composition, with their
//! own token (rules 11.15, 11.23). Body `{"spec", "resourceVersion"?, "force"?, "dryRun"?}`,
//! nothing else.
//!
//! 1. At most `--saves-per-minute` per person (429, [`super::super::limits`]).
//! 2. The spec goes through the one validator first, as a run start's and `POST …/validate`'s
//!    (422 `invalid_composition`, every finding at its field: [`super::super::verdict`]).
//! 3. Without `resourceVersion` the save only creates: an existing Composition is 409 `exists`
//!    with the object as it is. With it, the apiserver's optimistic concurrency decides: a stale
//!    one is 409 `conflict` with the object as it is now.
//! 4. Server-side apply as field manager [`FIELD_MANAGER`], `force` only when sent. Fields
//!    another manager owns with another value are 409 `field_conflict`, with the apiserver's
//!    list of them and their managers; `force: true` takes them over.
//! 5. `dryRun: true` asks the apiserver to apply without storing (`dryRun=All`): when the spec
//!    it would store is not the one sent (nodes merge by `id`, the CRD's list-map key, so a
//!    node another manager applied survives a save that leaves it out) the answer is 409
//!    `merge_differs` with that merged spec.
//!
//! 201 with the object when it was created, 200 when updated; 403 with the apiserver's refusal.

use super::super::Sidecar;
use super::super::body::parse_body;
use super::super::caller::{Caller, cluster_problem};
use super::super::objects::tidy;
use super::super::problem::{Problem, codes};
use super::super::verdict::{invalid_composition, verdict};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kube::api::{Patch, PatchParams};
use kube::core::response::StatusCause;
use kube::{Api, Resource};
use orrery_crds::{Composition, CompositionSpec};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// The field manager of every save through the sidecar (what `managedFields` shows).
pub const FIELD_MANAGER: &str = "orrery-console";

/// The body of a save.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SaveRequest {
    /// The Composition's spec, whole.
    pub spec: CompositionSpec,
    /// The `metadata.resourceVersion` the person edited; none: create only.
    #[serde(default)]
    pub resource_version: Option<String>,
    /// Take over fields other managers own (server-side apply's `force`).
    #[serde(default)]
    pub force: bool,
    /// Apply without storing, to see what the apiserver would store.
    #[serde(default)]
    pub dry_run: bool,
}

/// The body as a [`SaveRequest`], or 400 at the field that does not fit (an unknown field is
/// named, with the ones a save takes).
pub fn parse_save(bytes: &[u8]) -> Result<SaveRequest, Problem> {
    parse_body::<SaveRequest>(bytes).map_err(|mut problem| {
        problem.status = StatusCode::BAD_REQUEST;
        problem.body.message = format!(
            "{}; a save is {{\"spec\", \"resourceVersion\"?, \"force\"?, \"dryRun\"?}}",
            problem.body.message
        );
        problem
    })
}

/// The handler.
pub async fn save(
    State(sidecar): State<Arc<Sidecar>>,
    caller: Caller,
    Path((namespace, name)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    sidecar.limits.save(&caller.username)?;
    let request = parse_save(&body)?;
    let validation = verdict(&sidecar, &caller, &namespace, &request.spec).await?;
    if !validation.is_valid() {
        return Err(invalid_composition(
            vec!["body".into(), "spec".into()],
            &validation,
        ));
    }
    let api = Api::<Composition>::namespaced(caller.client.clone(), &namespace);
    let what = format!("composition {namespace}/{name}");
    if request.resource_version.is_none()
        && let Some(current) = api
            .get_opt(&name)
            .await
            .map_err(|e| cluster_problem(&e, &what))?
    {
        return Err(exists(&what, &current));
    }
    let mut params = PatchParams::apply(FIELD_MANAGER);
    if request.force {
        params = params.force();
    }
    if request.dry_run {
        params = params.dry_run();
    }
    let applied = match api
        .patch(&name, &params, &Patch::Apply(apply_body(&name, &request)))
        .await
    {
        Ok(applied) => applied,
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let causes = status
                .details
                .as_ref()
                .map(|d| d.causes.as_slice())
                .unwrap_or_default();
            let conflicts = field_conflicts(causes);
            if !conflicts.is_empty() {
                return Err(field_conflict(&what, conflicts));
            }
            let current = api.get_opt(&name).await.ok().flatten();
            return Err(stale(&what, &request, current.as_ref()));
        }
        Err(e) => return Err(apply_problem(&e, &what, &request)),
    };
    if request.dry_run && applied.spec != request.spec {
        return Err(merge_differs(&what, &applied.spec));
    }
    let status = if request.resource_version.is_none() {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(tidy(&applied))).into_response())
}

/// The apply configuration: the Composition's identity, the `resourceVersion` when sent (the
/// apiserver then refuses a stale one), and the spec.
pub fn apply_body(name: &str, request: &SaveRequest) -> Value {
    let mut metadata = json!({ "name": name });
    if let Some(version) = &request.resource_version {
        metadata["resourceVersion"] = Value::String(version.clone());
    }
    json!({
        "apiVersion": Composition::api_version(&()),
        "kind": Composition::kind(&()),
        "metadata": metadata,
        "spec": request.spec,
    })
}

/// A field another manager owns, as the apiserver's conflict names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldConflict {
    /// The manager that owns it (`kubectl`, `argocd-controller`…).
    pub manager: String,
    /// The field (`.spec.nodes[id="draft"].instruction`).
    pub field: String,
    /// The apiserver's words.
    pub message: String,
}

/// The field conflicts of a server-side apply's 409 (causes `FieldManagerConflict`, whose
/// message is `conflict with "<manager>"…`); none for any other 409.
pub fn field_conflicts(causes: &[StatusCause]) -> Vec<FieldConflict> {
    causes
        .iter()
        .filter(|c| c.reason == "FieldManagerConflict")
        .map(|c| FieldConflict {
            manager: c.message.split('"').nth(1).unwrap_or_default().to_owned(),
            field: c.field.clone(),
            message: c.message.clone(),
        })
        .collect()
}

/// 409 `exists`: a create-only save of a name that is taken.
fn exists(what: &str, current: &Composition) -> Problem {
    let version = current
        .metadata
        .resource_version
        .clone()
        .unwrap_or_default();
    Problem::new(
        StatusCode::CONFLICT,
        codes::EXISTS,
        format!(
            "{what} exists: to change it, send its resourceVersion ({version}) with your spec; \
             to keep both, save under another name"
        ),
    )
    .at(vec!["body".into(), "resourceVersion".into()])
    .with("current", tidy(current))
}

/// 409 `conflict`: the `resourceVersion` sent is not the stored one.
fn stale(what: &str, request: &SaveRequest, current: Option<&Composition>) -> Problem {
    let sent = request.resource_version.clone().unwrap_or_default();
    let now = current
        .and_then(|c| c.metadata.resource_version.clone())
        .unwrap_or_default();
    Problem::new(
        StatusCode::CONFLICT,
        codes::CONFLICT,
        format!(
            "{what} changed since resourceVersion {sent} (it is {now} now): reload it (`current` \
             is the object as it is), carry your changes over, and save with resourceVersion {now}"
        ),
    )
    .at(vec!["body".into(), "resourceVersion".into()])
    .with("current", current.map(tidy).unwrap_or(Value::Null))
}

/// 409 `field_conflict`, with the fields and their managers.
fn field_conflict(what: &str, conflicts: Vec<FieldConflict>) -> Problem {
    let mut managers: Vec<&str> = conflicts.iter().map(|c| c.manager.as_str()).collect();
    managers.sort_unstable();
    managers.dedup();
    let fields: Vec<&str> = conflicts.iter().map(|c| c.field.as_str()).collect();
    let list: Vec<Value> = conflicts
        .iter()
        .map(|c| json!({"manager": c.manager, "field": c.field, "message": c.message}))
        .collect();
    Problem::new(
        StatusCode::CONFLICT,
        codes::FIELD_CONFLICT,
        format!(
            "{what}: {} owned by {} with other values; keep their values in your spec, or save \
             with force: true to take the fields over",
            fields.join(", "),
            managers.join(", ")
        ),
    )
    .at(vec!["body".into(), "spec".into()])
    .with("conflicts", Value::Array(list))
}

/// 409 `merge_differs`: what a dry run would store is not the spec sent.
fn merge_differs(what: &str, merged: &CompositionSpec) -> Problem {
    Problem::new(
        StatusCode::CONFLICT,
        codes::MERGE_DIFFERS,
        format!(
            "saving would store a spec other than the one sent for {what}: other managers' \
             fields (a node they applied, a field they set) are kept by the merge; `merged` is \
             what would be stored; save it as it is, or edit from `merged`"
        ),
    )
    .at(vec!["body".into(), "spec".into()])
    .with("merged", json!(merged))
}

/// Any other refusal of the apply: 403 with the apiserver's message and the Role that grants a
/// save, 404 for a Composition gone since it was read, 422 for what the CRD's schema refuses.
fn apply_problem(e: &kube::Error, what: &str, request: &SaveRequest) -> Problem {
    match e {
        kube::Error::Api(status) if status.code == 403 => Problem::forbidden(format!(
            "the cluster refuses saving {what}: {}; saving needs `compositions create` and \
             `patch` in the namespace (examples/rbac/composition-editor-role.yaml grants them)",
            status.message
        )),
        kube::Error::Api(status) if status.code == 404 && request.resource_version.is_some() => {
            Problem::not_found(format!(
                "{what} no longer exists: save without resourceVersion to create it again"
            ))
        }
        kube::Error::Api(status) if status.code == 422 || status.code == 400 => Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            codes::INVALID,
            format!("the cluster refuses {what}: {}", status.message),
        )
        .at(vec!["body".into(), "spec".into()]),
        _ => cluster_problem(e, &format!("saving {what}")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn spec() -> Value {
        json!({"pattern": "Pipeline",
               "nodes": [{"id": "a", "kind": "LLMAgent", "model": "m", "instruction": "do"}]})
    }

    #[test]
    fn a_save_body_takes_spec_resource_version_force_and_dry_run_and_nothing_else() {
        let body = json!({"spec": spec(), "resourceVersion": "41", "force": true, "dryRun": true});
        let request = parse_save(body.to_string().as_bytes()).unwrap();
        assert_eq!(request.resource_version.as_deref(), Some("41"));
        assert!(request.force && request.dry_run);
        let plain = parse_save(json!({"spec": spec()}).to_string().as_bytes()).unwrap();
        assert!(plain.resource_version.is_none() && !plain.force && !plain.dry_run);

        let unknown = json!({"spec": spec(), "overwrite": true});
        let refused = parse_save(unknown.to_string().as_bytes()).unwrap_err();
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        assert!(refused.body.message.contains("overwrite"), "{refused:?}");
        assert!(refused.body.message.contains("resourceVersion"));

        let bad = json!({"spec": {"pattern": "Pipeline", "nodes": [{"id": "a", "kind": "Robot"}]}});
        let refused = parse_save(bad.to_string().as_bytes()).unwrap_err();
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        assert_eq!(
            Value::from(refused.body.loc),
            json!(["body", "spec", "nodes", 0, "kind"])
        );
    }

    #[test]
    fn the_apply_body_carries_the_resource_version_only_when_sent() {
        let request = parse_save(json!({"spec": spec()}).to_string().as_bytes()).unwrap();
        let body = apply_body("notes", &request);
        assert_eq!(body["kind"], "Composition");
        assert_eq!(body["apiVersion"], "studio.orrery.dev/v1alpha1");
        assert_eq!(body["metadata"], json!({"name": "notes"}));
        assert_eq!(body["spec"]["nodes"][0]["id"], "a");
        let request = parse_save(
            json!({"spec": spec(), "resourceVersion": "7"})
                .to_string()
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(
            apply_body("notes", &request)["metadata"],
            json!({"name": "notes", "resourceVersion": "7"})
        );
    }

    #[test]
    fn field_conflicts_name_their_manager_and_field_and_other_causes_are_not_conflicts() {
        let cause = |reason: &str, message: &str, field: &str| StatusCause {
            reason: reason.into(),
            message: message.into(),
            field: field.into(),
        };
        let causes = [
            cause(
                "FieldManagerConflict",
                r#"conflict with "kubectl" using studio.orrery.dev/v1alpha1"#,
                r#".spec.nodes[id="draft"].instruction"#,
            ),
            cause("FieldValueInvalid", "nope", ".spec"),
        ];
        let conflicts = field_conflicts(&causes);
        assert_eq!(
            conflicts,
            vec![FieldConflict {
                manager: "kubectl".into(),
                field: r#".spec.nodes[id="draft"].instruction"#.into(),
                message: r#"conflict with "kubectl" using studio.orrery.dev/v1alpha1"#.into(),
            }]
        );
        let problem = field_conflict("composition ns/notes", conflicts);
        assert_eq!(problem.body.code, codes::FIELD_CONFLICT);
        assert!(problem.body.message.contains("kubectl"));
        assert!(problem.body.message.contains("force: true"));
        assert_eq!(problem.member("conflicts")[0]["manager"], "kubectl");
        assert!(field_conflicts(&causes[1..]).is_empty());
    }
}
