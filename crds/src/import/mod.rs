//! Import of the seeds' composition JSON (`spec_version: 1`, snake_case keys) into a
//! Composition manifest. Every key is checked (the seeds refuse unknown keys anywhere), and every
//! problem is reported at once with its JSON path; what has no equivalent here (a `catalog:`
//! tool, an id our pattern does not accept, a newer spec_version) is refused, not guessed.
//!
//! Graph rules are not checked here: run `orrery validate` on the result.
//!
//! The conversion needs no I/O, so it is built without the `files` feature: the CLI's `orrery
//! import` and the sidecar's `POST /api/v1/namespaces/{ns}/import` are this one conversion.
//! Only writing the manifest as YAML ([`to_manifest_yaml`]) needs `files`.

mod reader;

use crate::Composition;
use crate::common::{PathSegment, ValidationIssue, loc_to_string};
use reader::Reader;
use serde_json::Value;

/// The newest `spec_version` this import reads.
pub const SPEC_VERSION: u64 = 1;

/// What to name the imported Composition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// `metadata.name`; without it the spec's `name`.
    pub name: Option<String>,
    /// `metadata.namespace`; without it none (the namespace of `kubectl apply`).
    pub namespace: Option<String>,
}

/// Why a seed spec could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The text is not JSON, or holds a key twice in one object.
    #[error("not valid JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    /// The JSON cannot be converted; each problem names its JSON path (`loc`, in the seed
    /// format's own snake_case keys).
    #[error("cannot import the spec:\n{}", .0.iter().map(|p| format!("  {}: {} ({})", display_path(&p.loc), p.message, p.code)).collect::<Vec<_>>().join("\n"))]
    Unconvertible(Vec<ValidationIssue>),
}

/// Renders a seed JSON path: `$` for the root, else `nodes[1].tools[0]`.
pub fn display_path(loc: &[PathSegment]) -> String {
    if loc.is_empty() {
        "$".to_owned()
    } else {
        loc_to_string(loc)
    }
}

/// Reads a seed spec from JSON text. A key twice in one object, at any depth, is refused as
/// [`ImportError::NotJson`] naming the key and its line, never read as the last one.
pub fn import_spec_json(text: &str, options: &ImportOptions) -> Result<Composition, ImportError> {
    let value = crate::unique_keys::json_from_str(text)?;
    import_spec(&value, options).map_err(ImportError::Unconvertible)
}

/// Converts a seed spec into a Composition, or returns every problem found.
pub fn import_spec(
    value: &Value,
    options: &ImportOptions,
) -> Result<Composition, Vec<ValidationIssue>> {
    let mut r = Reader::default();
    let spec = r.spec(value, options);
    match spec {
        Some((name, spec)) if r.problems.is_empty() => {
            let mut composition = Composition::new(&name, spec);
            composition.metadata.namespace = options.namespace.clone();
            Ok(composition)
        }
        _ => Err(r.problems),
    }
}

#[cfg(feature = "files")]
/// Serializes a Composition as a manifest (apiVersion, kind, metadata, spec). Empty
/// `budgets: {}` and `edges: []` are left out (they mean the same as no field).
pub fn to_manifest_yaml(composition: &Composition) -> Result<String, serde_yaml::Error> {
    let mut value = serde_yaml::to_value(composition)?;
    if let Some(spec) = value
        .get_mut("spec")
        .and_then(serde_yaml::Value::as_mapping_mut)
    {
        for key in ["budgets", "edges"] {
            let empty = match spec.get(key) {
                Some(serde_yaml::Value::Mapping(m)) => m.is_empty(),
                Some(serde_yaml::Value::Sequence(s)) => s.is_empty(),
                _ => false,
            };
            if empty {
                spec.remove(key);
            }
        }
    }
    serde_yaml::to_string(&value)
}
