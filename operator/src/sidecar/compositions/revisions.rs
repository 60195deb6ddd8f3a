//! `GET /api/v1/namespaces/{ns}/compositions/{name}/revisions[/{n}]`: the immutable revisions
//! the operator records of a Composition, one ControllerRevision per generation (owned by the
//! Composition, labelled with its UID, named by [`revision_name`]), read with the caller's own
//! token (rule 11.24). Each is `{revision, created, digest, spec}`; the list is newest first.
//! Their Role must grant `controllerrevisions get` and `list` (403 naming the rule otherwise);
//! a revision that is not kept is 404; one whose data is not a spec, or whose digest is not the one the
//! Composition's status records for that revision, is 409, never a spec it did not record.
//!
//! [`read_revision`] is also how the spec a run ran is read ([`super::super::run_spec`]).

use super::super::caller::{Caller, cluster_problem};
use super::super::problem::{Problem, codes};
use crate::revisions::{COMPOSITION_UID_LABEL, revision_name, spec_digest, spec_of};
use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use k8s_openapi::api::apps::v1::ControllerRevision;
use kube::Api;
use kube::api::ListParams;
use orrery_crds::{Composition, CompositionSpec};
use serde_json::{Value, json};

/// What a Role needs to read revisions, and the example that grants it.
const REVISIONS_RULE: &str = "reading a Composition's revisions needs `controllerrevisions get` \
    and `list` in the namespace (the studio-user Role in examples/rbac/studio-user-role.yaml \
    grants them)";

/// `GET …/compositions/{name}/revisions`: `{"items": [{revision, created, digest, spec}]}`,
/// newest first.
pub async fn list(
    caller: Caller,
    Path((namespace, name)): Path<(String, String)>,
) -> Result<Json<Value>, Problem> {
    let composition = composition(&caller, &namespace, &name).await?;
    let uid = composition.metadata.uid.clone().unwrap_or_default();
    let what = format!("the revisions of composition {namespace}/{name}");
    let mut revisions: Vec<ControllerRevision> =
        Api::<ControllerRevision>::namespaced(caller.client.clone(), &namespace)
            .list(&ListParams::default().labels(&format!("{COMPOSITION_UID_LABEL}={uid}")))
            .await
            .map_err(|e| refused(&e, &what))?
            .items
            .into_iter()
            .filter(|r| owned_by(r, &uid))
            .collect();
    revisions.sort_by_key(|r| std::cmp::Reverse(r.revision));
    let items = revisions
        .iter()
        .map(|r| {
            let spec = spec_of(r).map_err(|e| not_recorded(&what, &e.to_string()))?;
            view(&composition, r, spec)
        })
        .collect::<Result<Vec<Value>, Problem>>()?;
    Ok(Json(json!({ "items": items })))
}

/// `GET …/compositions/{name}/revisions/{n}`: one revision.
pub async fn one(
    caller: Caller,
    Path((namespace, name, number)): Path<(String, String, String)>,
) -> Result<Json<Value>, Problem> {
    let number = parse_number(&number).ok_or_else(|| {
        Problem::not_found(format!(
            "no revision {number:?} of composition {namespace}/{name}: revisions are whole \
             numbers from 1; list them at …/compositions/{name}/revisions"
        ))
    })?;
    let composition = composition(&caller, &namespace, &name).await?;
    let uid = composition.metadata.uid.clone().unwrap_or_default();
    let (revision, spec) = read_revision(&caller, &namespace, &name, number).await?;
    if !owned_by(&revision, &uid) {
        return Err(Problem::not_found(format!(
            "revision {number} of composition {namespace}/{name} is not kept (the one found \
             belongs to an earlier Composition of that name)"
        )));
    }
    Ok(Json(view(&composition, &revision, spec)?))
}

/// A revision number: a whole number from 1.
fn parse_number(text: &str) -> Option<i64> {
    text.parse::<i64>().ok().filter(|n| *n >= 1)
}

/// The Composition, read as the caller.
async fn composition(caller: &Caller, namespace: &str, name: &str) -> Result<Composition, Problem> {
    Api::<Composition>::namespaced(caller.client.clone(), namespace)
        .get(name)
        .await
        .map_err(|e| cluster_problem(&e, &format!("composition {namespace}/{name}")))
}

/// Revision `number` of Composition `composition` in `namespace` and the spec it holds, read
/// as the caller: 403 naming the rule their Role lacks, 404 when it is not kept, 409 when it
/// holds another number or no spec.
pub async fn read_revision(
    caller: &Caller,
    namespace: &str,
    composition: &str,
    number: i64,
) -> Result<(ControllerRevision, CompositionSpec), Problem> {
    let object = revision_name(composition, number);
    let what = format!(
        "controllerrevision {namespace}/{object} (revision {number} of Composition {composition})"
    );
    let revision = Api::<ControllerRevision>::namespaced(caller.client.clone(), namespace)
        .get(&object)
        .await
        .map_err(|e| match &e {
            kube::Error::Api(status) if status.code == 404 => Problem::not_found(format!(
                "{what} is no longer kept (the newest revisions are kept while the Composition \
                 exists)"
            )),
            _ => refused(&e, &what),
        })?;
    if revision.revision != number {
        return Err(not_recorded(&what, "holds another revision number"));
    }
    let spec = spec_of(&revision).map_err(|e| not_recorded(&what, &e.to_string()))?;
    Ok((revision, spec))
}

/// 403 naming [`REVISIONS_RULE`], or the cluster's other answers.
fn refused(e: &kube::Error, what: &str) -> Problem {
    match e {
        kube::Error::Api(status) if status.code == 403 => Problem::forbidden(format!(
            "the cluster refuses {what}: {}; {REVISIONS_RULE}",
            status.message
        )),
        _ => cluster_problem(e, what),
    }
}

/// 409: what was found is not a revision the Composition recorded.
pub fn not_recorded(what: &str, problem: &str) -> Problem {
    Problem::new(
        StatusCode::CONFLICT,
        codes::CONFLICT,
        format!("{what} {problem}: it is not a spec the Composition recorded"),
    )
}

/// Whether the revision is labelled and owned as one of the Composition with UID `uid`.
fn owned_by(revision: &ControllerRevision, uid: &str) -> bool {
    let labelled = revision
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(COMPOSITION_UID_LABEL))
        .is_some_and(|l| l == uid);
    let owned = revision
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == uid);
    !uid.is_empty() && labelled && owned
}

/// `{revision, created, digest, spec}`, once the digest is the one the Composition's status
/// records for that revision (when it records one).
pub fn view(
    composition: &Composition,
    revision: &ControllerRevision,
    spec: CompositionSpec,
) -> Result<Value, Problem> {
    let digest = spec_digest(&spec)
        .map_err(|_| Problem::unavailable("the spec's digest cannot be computed just now"))?;
    let status = composition.status.as_ref();
    if let Some(recorded) = status
        .filter(|s| s.revision == Some(revision.revision))
        .and_then(|s| s.spec_digest.as_deref())
        && !recorded.eq_ignore_ascii_case(&digest)
    {
        let name = composition.metadata.name.clone().unwrap_or_default();
        return Err(not_recorded(
            &format!("revision {} of composition {name}", revision.revision),
            &format!("hashes to {digest}, not the {recorded} its status records"),
        ));
    }
    Ok(json!({
        "revision": revision.revision,
        "created": revision.metadata.creation_timestamp,
        "digest": digest,
        "spec": spec,
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
    use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
    use orrery_crds::CompositionStatus;

    fn spec() -> CompositionSpec {
        serde_json::from_value(json!({
            "pattern": "Pipeline",
            "nodes": [{"id": "a", "kind": "LLMAgent", "model": "m", "instruction": "do"}]
        }))
        .unwrap()
    }

    fn revision(number: i64, uid: &str) -> ControllerRevision {
        ControllerRevision {
            metadata: ObjectMeta {
                name: Some(revision_name("notes", number)),
                labels: Some([(COMPOSITION_UID_LABEL.to_owned(), uid.to_owned())].into()),
                owner_references: Some(vec![OwnerReference {
                    uid: uid.into(),
                    ..OwnerReference::default()
                }]),
                ..ObjectMeta::default()
            },
            data: Some(RawExtension(serde_json::to_value(spec()).unwrap())),
            revision: number,
        }
    }

    fn composition(revision: i64, digest: &str) -> Composition {
        let mut c = Composition::new("notes", spec());
        c.metadata.uid = Some("u1".into());
        c.status = Some(CompositionStatus {
            revision: Some(revision),
            spec_digest: Some(digest.into()),
            ..CompositionStatus::default()
        });
        c
    }

    #[test]
    fn a_revision_is_its_number_time_digest_and_spec_when_the_digest_is_the_recorded_one() {
        let digest = spec_digest(&spec()).unwrap();
        let view = view(&composition(2, &digest), &revision(2, "u1"), spec()).unwrap();
        assert_eq!(view["revision"], 2);
        assert_eq!(view["digest"], json!(digest));
        assert_eq!(view["spec"]["nodes"][0]["id"], "a");
        // An older revision is not checked against the current status's digest.
        let older = super::view(&composition(3, &"0".repeat(64)), &revision(2, "u1"), spec());
        assert!(older.is_ok());
    }

    #[test]
    fn a_revision_whose_digest_is_not_the_recorded_one_is_a_409() {
        let problem = view(&composition(2, &"0".repeat(64)), &revision(2, "u1"), spec())
            .expect_err("a mismatch");
        assert_eq!(problem.status, StatusCode::CONFLICT);
        assert!(
            problem
                .body
                .message
                .contains("not a spec the Composition recorded")
        );
    }

    #[test]
    fn only_revisions_labelled_and_owned_by_the_composition_are_its_own() {
        assert!(owned_by(&revision(1, "u1"), "u1"));
        assert!(!owned_by(&revision(1, "u0"), "u1"));
        let mut unowned = revision(1, "u1");
        unowned.metadata.owner_references = None;
        assert!(!owned_by(&unowned, "u1"));
        assert!(!owned_by(&revision(1, ""), ""));
        assert_eq!(parse_number("3"), Some(3));
        assert_eq!(parse_number("0"), None);
        assert_eq!(parse_number("x"), None);
    }
}
