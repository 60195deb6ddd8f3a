//! `GET /api/v1/runs/{ns}/{name}/composition`: the spec a run ran, so the console draws the
//! graph the run walked, not the Composition as it is now. To the run's owner and approvers
//! only (404 to anyone else). An inline run's spec is its own; a by-reference run's is the
//! Composition's ControllerRevision of the revision the run recorded, read with the caller's
//! token (their Role must grant `controllerrevisions get`; without it 403 saying so). Either
//! way the spec's digest is checked against the one the run recorded: a mismatch is 409, never
//! a spec the run did not run.

use super::caller::{Caller, run_for_owner_or_approver};
use super::compositions::revisions::read_revision;
use super::problem::{Problem, codes};
use crate::revisions::spec_digest;
use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use orrery_crds::run::RanComposition;
use orrery_crds::{CompositionSpec, StudioRun};
use serde_json::{Value, json};

/// The handler.
pub async fn run_composition(
    Path((namespace, name)): Path<(String, String)>,
    caller: Caller,
) -> Result<Json<Value>, Problem> {
    let run = run_for_owner_or_approver(&caller, &namespace, &name).await?;
    let recorded = run.status.as_ref().and_then(|s| s.composition.clone());
    let (ran, spec) = match (&run.spec.composition, &run.spec.composition_ref) {
        (Some(inline), _) => (recorded.unwrap_or_default(), inline.clone()),
        (None, Some(_)) => {
            let ran = recorded.filter(|r| r.revision.is_some()).ok_or_else(|| {
                Problem::not_found(format!(
                    "studiorun {namespace}/{name} has not started yet: the revision it runs is \
                     fixed when it starts; ask again once its status names a composition"
                ))
            })?;
            let spec = revision_spec(&caller, &namespace, &ran).await?;
            (ran, spec)
        }
        (None, None) => {
            return Err(Problem::not_found(format!(
                "studiorun {namespace}/{name} names no composition"
            )));
        }
    };
    Ok(Json(reply(&run, &ran, spec)?))
}

/// The spec revision `ran.revision` of Composition `ran.name` holds, read as the caller (403
/// naming the `controllerrevisions get` rule their Role lacks, 404 when no longer kept).
async fn revision_spec(
    caller: &Caller,
    namespace: &str,
    ran: &RanComposition,
) -> Result<CompositionSpec, Problem> {
    let number = ran.revision.unwrap_or_default();
    read_revision(caller, namespace, &ran.name, number)
        .await
        .map(|(_, spec)| spec)
}

/// `{name, revision, digest, spec}`, once the spec's digest is the one the run recorded.
fn reply(run: &StudioRun, ran: &RanComposition, spec: CompositionSpec) -> Result<Value, Problem> {
    let digest = spec_digest(&spec)
        .map_err(|_| Problem::unavailable("the spec's digest cannot be computed just now"))?;
    if !ran.digest.is_empty() && !ran.digest.eq_ignore_ascii_case(&digest) {
        let name = run.metadata.name.clone().unwrap_or_default();
        return Err(mismatch(
            &format!("the spec found for studiorun {name}"),
            &format!(
                "its digest {digest} is not the {} the run recorded",
                ran.digest
            ),
        ));
    }
    Ok(json!({
        "name": ran.name,
        "revision": ran.revision,
        "digest": digest,
        "spec": spec,
    }))
}

fn mismatch(what: &str, problem: &str) -> Problem {
    Problem::new(
        StatusCode::CONFLICT,
        codes::CONFLICT,
        format!("{what} {problem}: it is not the spec the run ran"),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn spec() -> CompositionSpec {
        serde_json::from_value(json!({
            "pattern": "Pipeline",
            "nodes": [{"id": "a", "kind": "LLMAgent", "model": "m", "instruction": "do"}]
        }))
        .unwrap()
    }

    fn run() -> StudioRun {
        let mut run: StudioRun = serde_json::from_value(json!({
            "apiVersion": "studio.orrery.dev/v1alpha1", "kind": "StudioRun",
            "metadata": {"name": "r1", "namespace": "ns"},
            "spec": {"compositionRef": {"name": "notes"}, "input": "x", "owner": "alice"}
        }))
        .unwrap();
        run.metadata.uid = Some("u1".into());
        run
    }

    #[test]
    fn the_reply_is_the_spec_with_the_recorded_name_revision_and_its_digest() {
        let ran = RanComposition {
            name: "notes".into(),
            revision: Some(3),
            digest: spec_digest(&spec()).unwrap(),
        };
        let reply = reply(&run(), &ran, spec()).unwrap();
        assert_eq!(reply["name"], "notes");
        assert_eq!(reply["revision"], 3);
        assert_eq!(reply["digest"], json!(ran.digest));
        assert_eq!(reply["spec"]["nodes"][0]["id"], "a");
    }

    #[test]
    fn a_spec_whose_digest_is_not_the_recorded_one_is_a_409_not_a_spec() {
        let ran = RanComposition {
            name: "notes".into(),
            revision: Some(3),
            digest: "0".repeat(64),
        };
        let problem = reply(&run(), &ran, spec()).expect_err("a mismatch");
        assert_eq!(problem.status, StatusCode::CONFLICT);
        assert!(problem.body.message.contains("not the spec the run ran"));
    }
}
