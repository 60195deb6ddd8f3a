//! The CustomResourceDefinitions as YAML, generated from the Rust types. The checked-in copies in
//! `crds/yaml/` are kept equal to these by the `crd_drift` test; `orrery crds` prints them and
//! `orrery crds --write DIR` writes them.

use crate::{Composition, RegistryEntry, StudioRun};
use kube::CustomResourceExt;
use std::path::{Path, PathBuf};

/// The command that rewrites the checked-in CRD YAML from the types.
pub const REFRESH_COMMAND: &str =
    "cargo run -p orrery-runner --bin orrery -- crds --write crds/yaml/";

/// One generated CRD: the file it is checked in as and its YAML text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrdYaml {
    /// The file name in `crds/yaml/`, e.g. `compositions.yaml` (the CRD's plural name).
    pub file_name: String,
    /// The CRD as one YAML document (no leading `---`).
    pub yaml: String,
}

/// Why the CRD YAML could not be generated or written.
#[derive(Debug, thiserror::Error)]
pub enum CrdYamlError {
    /// A CRD did not serialize to YAML (a bug in the types' schema attributes).
    #[error("cannot serialize the {crd} CustomResourceDefinition to YAML: {source}")]
    Serialize {
        /// The CRD's name.
        crd: String,
        /// The serializer's error.
        source: serde_yaml::Error,
    },
    /// A file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Every CRD of the group as JSON, in a stable order (compositions, registryentries,
/// studioruns), with the schema's integer formats in the OpenAPI names Kubernetes knows: schemars
/// writes `uint64`/`uint32` for unsigned fields (the schema's `minimum: 0` already says
/// "unsigned"), which the apiserver accepts but warns about on every apply.
pub fn all_crds() -> Vec<serde_json::Value> {
    [Composition::crd(), RegistryEntry::crd(), StudioRun::crd()]
        .iter()
        .map(|crd| {
            let mut value = serde_json::to_value(crd).unwrap_or(serde_json::Value::Null);
            normalize_formats(&mut value);
            unwrap_descriptions(&mut value);
            value
        })
        .collect()
}

/// The folder, beside `crds/yaml/`, of the checked-in validation schemas (see
/// [`validation_schemas`]).
pub const SCHEMA_DIR: &str = "schema";

/// The command that rewrites the checked-in CRD YAML and validation schemas from the types (the
/// drift tests write them when `ORRERY_UPDATE_CRDS=1`).
pub const UPDATE_ALL_COMMAND: &str = "ORRERY_UPDATE_CRDS=1 cargo test -p orrery-crds";

/// One kind's `openAPIV3Schema` as the offline validator checks manifests against it.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidationSchema {
    /// The kind, e.g. `Composition`.
    pub kind: String,
    /// The file name in `crds/schema/`, e.g. `compositions.json` (the CRD's plural name).
    pub file_name: String,
    /// The schema.
    pub schema: serde_json::Value,
}

impl ValidationSchema {
    /// The schema as the checked-in file holds it: pretty JSON and a final line break.
    pub fn json(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.schema).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// Each kind's `openAPIV3Schema` from [`all_crds`] without its `description`s (they check
/// nothing), in the order of [`all_crds`]. The validator (`manifest::schema`) reads the
/// checked-in copies in `crds/schema/` instead of generating them at every start; a drift test
/// keeps those equal to these.
pub fn validation_schemas() -> Vec<ValidationSchema> {
    all_crds()
        .into_iter()
        .filter_map(|mut crd| {
            let kind = crd["spec"]["names"]["kind"].as_str()?.to_owned();
            let plural = crd["spec"]["names"]["plural"].as_str()?.to_owned();
            let mut schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].take();
            drop_descriptions(&mut schema);
            Some(ValidationSchema {
                kind,
                file_name: format!("{plural}.json"),
                schema,
            })
        })
        .collect()
}

/// Removes every `description` text of a schema. Only string values go: a property that happens
/// to be named `description` is a schema (an object) and stays.
fn drop_descriptions(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            if map
                .get("description")
                .is_some_and(serde_json::Value::is_string)
            {
                map.remove("description");
            }
            map.values_mut().for_each(drop_descriptions);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_descriptions),
        _ => {}
    }
}

/// Rewrites `format` values Kubernetes does not know into the ones it does, everywhere in a
/// schema.
fn normalize_formats(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::String(format)) = map.get_mut("format") {
                let known = match format.as_str() {
                    "uint64" | "uint" => Some("int64"),
                    "uint32" | "uint16" | "uint8" | "int16" | "int8" => Some("int32"),
                    _ => None,
                };
                if let Some(known) = known {
                    *format = known.to_owned();
                }
            }
            map.values_mut().for_each(normalize_formats);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(normalize_formats),
        _ => {}
    }
}

/// Rewrites every `description` of a schema so that `kubectl explain` wraps it itself: the
/// single line breaks of the doc comments become spaces, blank-line paragraph breaks stay.
fn unwrap_descriptions(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::String(text)) = map.get_mut("description") {
                *text = unwrap_paragraphs(text);
            }
            map.values_mut().for_each(unwrap_descriptions);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(unwrap_descriptions),
        _ => {}
    }
}

/// Joins the lines of each paragraph with spaces; paragraphs stay separated by one blank line.
fn unwrap_paragraphs(text: &str) -> String {
    let mut paragraphs: Vec<String> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            if !current.is_empty() {
                paragraphs.push(current.join(" "));
                current.clear();
            }
        } else {
            current.push(line);
        }
    }
    if !current.is_empty() {
        paragraphs.push(current.join(" "));
    }
    paragraphs.join("\n\n")
}

/// Every CRD of the group as YAML, in a stable order (compositions, registryentries,
/// studioruns).
pub fn all_crds_yaml() -> Result<Vec<CrdYaml>, CrdYamlError> {
    all_crds()
        .iter()
        .map(|crd| {
            let name = crd["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let plural = crd["spec"]["names"]["plural"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let yaml = serde_yaml::to_string(crd).map_err(|source| CrdYamlError::Serialize {
                crd: name.clone(),
                source,
            })?;
            Ok(CrdYaml {
                file_name: format!("{plural}.yaml"),
                yaml,
            })
        })
        .collect()
}

/// All CRDs as one multi-document YAML stream (each document starts with `---`).
pub fn all_crds_multidoc() -> Result<String, CrdYamlError> {
    let mut out = String::new();
    for crd in all_crds_yaml()? {
        out.push_str("---\n");
        out.push_str(&crd.yaml);
    }
    Ok(out)
}

/// Writes each CRD to `dir/<plural>.yaml`, creating `dir` if needed. Returns the paths written.
pub fn write_crds(dir: &Path) -> Result<Vec<PathBuf>, CrdYamlError> {
    let crds = all_crds_yaml()?;
    std::fs::create_dir_all(dir).map_err(|source| CrdYamlError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut written = Vec::with_capacity(crds.len());
    for crd in crds {
        let path = dir.join(&crd.file_name);
        std::fs::write(&path, crd.yaml.as_bytes()).map_err(|source| CrdYamlError::Write {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn there_is_one_file_per_resource_named_by_its_plural() {
        let names: Vec<String> = all_crds_yaml()
            .unwrap()
            .into_iter()
            .map(|c| c.file_name)
            .collect();
        assert_eq!(
            names,
            [
                "compositions.yaml",
                "registryentries.yaml",
                "studioruns.yaml"
            ]
        );
    }

    #[test]
    fn no_schema_uses_an_integer_format_kubernetes_does_not_know() {
        let text = serde_json::to_string(&all_crds()).unwrap_or_default();
        assert!(text.contains("\"format\":\"int64\""));
        for unknown in ["uint64", "uint32", "\"uint\""] {
            assert!(!text.contains(unknown), "{unknown} left in the CRDs");
        }
    }

    #[test]
    fn the_printer_columns_read_the_conditions_these_constants_name() {
        use crate::conditions::{PINNED, READY, VALID};
        let text = serde_json::to_string(&all_crds()).unwrap_or_default();
        for condition in [READY, VALID, PINNED] {
            assert!(
                text.contains(&format!("@.type==\\\"{condition}\\\"")),
                "no printer column reads condition {condition}"
            );
        }
    }

    #[test]
    fn descriptions_join_wrapped_lines_and_keep_paragraph_breaks() {
        assert_eq!(
            unwrap_paragraphs("The nodes of\nthe graph.\n\nSecond\n  paragraph.\n"),
            "The nodes of the graph.\n\nSecond paragraph."
        );
        let text = serde_json::to_string(&all_crds()).unwrap_or_default();
        // `budgets` is documented over two source lines.
        assert!(
            text.contains(
                "Limits for the whole run. A budget left out is set to the deployment's ceiling"
            ),
            "{text}"
        );
        for crd in all_crds() {
            let mut single_breaks = 0;
            count_single_breaks(&crd, &mut single_breaks);
            assert_eq!(single_breaks, 0);
        }
    }

    fn count_single_breaks(value: &serde_json::Value, found: &mut usize) {
        match value {
            serde_json::Value::Object(map) => {
                if let Some(serde_json::Value::String(d)) = map.get("description") {
                    *found += d.replace("\n\n", "").matches('\n').count();
                }
                map.values().for_each(|v| count_single_breaks(v, found));
            }
            serde_json::Value::Array(items) => {
                items.iter().for_each(|v| count_single_breaks(v, found))
            }
            _ => {}
        }
    }

    #[test]
    fn validation_schemas_drop_descriptions_but_keep_a_property_named_description() {
        let mut schema = serde_json::json!({
            "description": "The spec.",
            "properties": {"description": {"type": "string", "description": "Free text."}}
        });
        drop_descriptions(&mut schema);
        assert_eq!(
            schema,
            serde_json::json!({"properties": {"description": {"type": "string"}}})
        );
        let kinds: Vec<String> = validation_schemas().into_iter().map(|s| s.kind).collect();
        assert_eq!(kinds, ["Composition", "RegistryEntry", "StudioRun"]);
    }

    #[test]
    fn the_multidoc_stream_holds_three_documents() {
        let text = all_crds_multidoc().unwrap();
        assert_eq!(text.matches("---\n").count(), 3);
        assert!(text.contains("name: studioruns.studio.orrery.dev"));
    }
}
