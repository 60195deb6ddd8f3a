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
/// `budgets: {}` and `edges: []` are left out (they mean the same as no field). A text that
/// kubectl (YAML 1.1) would read as something else if written plain (`yes`, `on`, `1_000`,
/// `0b101`, `~`) is written double-quoted, so the manifest reads back as it was written.
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
    // serde_yaml quotes what YAML 1.2 would misread, not what YAML 1.1 would: each such text
    // is written as a placeholder serde_yaml leaves plain, then replaced by the text as a JSON
    // string (which is a YAML double-quoted scalar). The placeholder is one no text contains.
    let plain = serde_yaml::to_string(&value)?;
    let mut prefix = String::from("orreryquoted");
    while plain.contains(&prefix) {
        prefix.push('x');
    }
    let mut texts = Vec::new();
    quote_misread(&mut value, &prefix, &mut texts);
    if texts.is_empty() {
        return Ok(plain);
    }
    let mut out = serde_yaml::to_string(&value)?;
    for (i, text) in texts.iter().enumerate() {
        let quoted = serde_json::to_string(text)
            .map_err(<serde_yaml::Error as serde::ser::Error>::custom)?;
        out = out.replacen(&placeholder(&prefix, i), &quoted, 1);
    }
    Ok(out)
}

#[cfg(feature = "files")]
fn placeholder(prefix: &str, i: usize) -> String {
    format!("{prefix}{i}z")
}

/// Replaces each string (keys too) of `value` that a plain scalar would not keep by a
/// placeholder, collecting the texts in order.
#[cfg(feature = "files")]
fn quote_misread(value: &mut serde_yaml::Value, prefix: &str, texts: &mut Vec<String>) {
    use serde_yaml::Value as Y;
    let take = |text: &str, texts: &mut Vec<String>| -> Option<String> {
        if crate::manifest::plain_is_text(text) {
            return None;
        }
        texts.push(text.to_owned());
        Some(placeholder(prefix, texts.len() - 1))
    };
    match value {
        Y::String(text) => {
            if let Some(p) = take(text, texts) {
                *text = p;
            }
        }
        Y::Sequence(items) => {
            for item in items {
                quote_misread(item, prefix, texts);
            }
        }
        Y::Mapping(map) => {
            let entries = std::mem::take(map);
            for (mut key, mut item) in entries {
                if let Y::String(text) = &mut key
                    && let Some(p) = take(text, texts)
                {
                    *text = p;
                }
                quote_misread(&mut item, prefix, texts);
                map.insert(key, item);
            }
        }
        Y::Tagged(tagged) => quote_misread(&mut tagged.value, prefix, texts),
        Y::Null | Y::Bool(_) | Y::Number(_) => {}
    }
}
