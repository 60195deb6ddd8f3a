//! `POST /api/v1/namespaces/{ns}/import`: a seed composition (`spec_version: 1`, the seeds'
//! JSON) converted by the same import as `orrery import` (`orrery_crds::import`), for the
//! console to load (rule 11.26). Body `{"seed", "name"?}`, at most [`MAX_IMPORT_BYTES`] (413
//! past it): `seed` is the seed's JSON, as an object or as its text (a key twice in one object is refused
//! either way, never read as the last one); `name` names the Composition instead of the seed's
//! own `name`.
//!
//! 200 `{"composition", "validation"}`: the Composition (in the namespace; nothing is stored:
//! save it with `PUT …/compositions/{name}`) and the validator's verdict on its spec in that
//! namespace, as `POST …/validate` gives it. 422 `invalid_seed` with every problem the import
//! finds in `errors`, each at its JSON path under `["body", "seed"]` in the seed's own keys
//! (an unknown key, a newer `spec_version`, a catalogue tool…).

use super::Sidecar;
use super::caller::Caller;
use super::objects::tidy;
use super::problem::{Problem, body_loc, codes};
use super::verdict::{verdict, verdict_json};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use orrery_crds::common::{PathSegment, ValidationIssue};
use orrery_crds::import::{ImportError, ImportOptions, import_spec, import_spec_json};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// The largest import body: 1 MiB (a seed spec is far smaller; `orrery import` reads no more
/// either).
pub const MAX_IMPORT_BYTES: usize = 1024 * 1024;

/// The body of an import.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportRequest {
    /// The seed spec: its JSON object, or its text.
    pub seed: Value,
    /// The Composition's name; default: the seed's `name`.
    #[serde(default)]
    pub name: Option<String>,
}

/// The body as an [`ImportRequest`], read with duplicate keys refused at every depth: 422 at
/// the path of what does not fit.
pub fn parse_import(bytes: &[u8]) -> Result<ImportRequest, Problem> {
    let value = orrery_crds::unique_keys::json_from_slice(bytes).map_err(|e| {
        invalid_seed(
            vec!["body".into()],
            format!(
                "the body is not valid JSON: {e}; send {{\"seed\": <the seed spec>, \"name\"?}}"
            ),
        )
    })?;
    serde_path_to_error::deserialize(value).map_err(|e| {
        invalid_seed(
            body_loc(&e.path().to_string()),
            format!("{}; an import is {{\"seed\", \"name\"?}}", e.inner()),
        )
    })
}

/// The handler.
pub async fn import(
    State(sidecar): State<Arc<Sidecar>>,
    caller: Caller,
    Path(namespace): Path<String>,
    body: axum::body::Bytes,
) -> Result<Json<Value>, Problem> {
    if body.len() > MAX_IMPORT_BYTES {
        return Err(super::body::too_large(MAX_IMPORT_BYTES));
    }
    let request = parse_import(&body)?;
    let options = ImportOptions {
        name: request.name,
        namespace: Some(namespace.clone()),
    };
    let imported = match &request.seed {
        Value::String(text) => import_spec_json(text, &options),
        seed => import_spec(seed, &options).map_err(ImportError::Unconvertible),
    };
    let composition = imported.map_err(import_problem)?;
    let validation = verdict(&sidecar, &caller, &namespace, &composition.spec).await?;
    Ok(Json(json!({
        "composition": tidy(&composition),
        "validation": verdict_json(&validation),
    })))
}

/// 422 [`codes::INVALID_SEED`] at `loc`.
fn invalid_seed(loc: Vec<Value>, message: String) -> Problem {
    Problem::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        codes::INVALID_SEED,
        message,
    )
    .at(loc)
}

/// What the import refused, as a 422: text that is not JSON at `["body", "seed"]`; every
/// problem of a seed that cannot be converted in `errors`, each at its path under `["body",
/// "seed"]`.
pub fn import_problem(error: ImportError) -> Problem {
    let seed: Vec<Value> = vec!["body".into(), "seed".into()];
    match error {
        ImportError::NotJson(e) => invalid_seed(
            seed,
            format!("the seed is not valid JSON: {e}; fix the text (each key once per object)"),
        ),
        ImportError::Unconvertible(problems) => {
            let errors: Vec<Value> = problems.iter().map(|p| at_seed(&seed, p)).collect();
            invalid_seed(
                seed,
                format!(
                    "the seed cannot be imported: {} problem(s), each in `errors` at its path; \
                     fix them in the seed and import it again",
                    problems.len()
                ),
            )
            .with("errors", Value::Array(errors))
        }
    }
}

/// One import problem with its `loc` under `seed` (`["body", "seed", "nodes", 1, "kind"]`).
fn at_seed(seed: &[Value], problem: &ValidationIssue) -> Value {
    let mut loc = seed.to_vec();
    loc.extend(problem.loc.iter().map(|segment| match segment {
        PathSegment::Index(i) => Value::from(*i),
        PathSegment::Key(k) => Value::from(k.as_str()),
    }));
    json!({
        "loc": loc,
        "field": problem.field,
        "code": problem.code,
        "message": problem.message,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn seed() -> Value {
        json!({
            "spec_version": 1, "name": "notes", "pattern": "pipeline",
            "nodes": [{"id": "a", "kind": "llm_agent", "instruction": "do"}]
        })
    }

    #[test]
    fn an_import_body_is_a_seed_and_a_name_and_nothing_else() {
        let request =
            parse_import(json!({"seed": seed(), "name": "n2"}).to_string().as_bytes()).unwrap();
        assert_eq!(request.name.as_deref(), Some("n2"));
        let refused =
            parse_import(json!({"seed": seed(), "as": "x"}).to_string().as_bytes()).unwrap_err();
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(refused.body.message.contains("as"), "{refused:?}");
        let twice = br#"{"seed": {"spec_version": 1, "name": "a", "name": "b"}}"#;
        let refused = parse_import(twice).unwrap_err();
        assert_eq!(refused.body.code, codes::INVALID_SEED);
        assert!(refused.body.message.contains("name"), "{refused:?}");
    }

    #[test]
    fn every_import_problem_is_at_its_path_under_the_seed() {
        let mut bad = seed();
        bad["spec_version"] = json!(2);
        bad["nodes"][0]["colour"] = json!("red");
        let problems = import_spec(&bad, &ImportOptions::default()).unwrap_err();
        let problem = import_problem(ImportError::Unconvertible(problems));
        assert_eq!(problem.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            Value::from(problem.body.loc.clone()),
            json!(["body", "seed"])
        );
        let errors = problem.member("errors").as_array().unwrap();
        let locs: Vec<&Value> = errors.iter().map(|e| &e["loc"]).collect();
        assert!(
            locs.contains(&&json!(["body", "seed", "spec_version"])),
            "{errors:?}"
        );
        assert!(
            locs.contains(&&json!(["body", "seed", "nodes", 0, "colour"])),
            "{errors:?}"
        );
        let codes: Vec<&str> = errors.iter().filter_map(|e| e["code"].as_str()).collect();
        assert!(codes.contains(&"unsupported_spec_version") && codes.contains(&"unknown_key"));
    }

    #[test]
    fn seed_text_with_a_key_twice_is_not_json_at_the_seed() {
        let error = import_spec_json(
            r#"{"spec_version": 1, "pattern": "pipeline", "pattern": "router"}"#,
            &ImportOptions::default(),
        )
        .unwrap_err();
        let problem = import_problem(error);
        assert_eq!(Value::from(problem.body.loc), json!(["body", "seed"]));
        assert!(
            problem.body.message.contains("pattern"),
            "{}",
            problem.body.message
        );
    }
}
