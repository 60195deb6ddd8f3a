//! One document to one typed resource: classify by apiVersion/kind, then read metadata, spec and
//! status with field paths for every type error.

use super::codes;
use super::schema::schema_problems;
use super::{
    DEFAULT_NAMESPACE, Finding, IgnoredDocument, LoadedResource, ManifestSet, Resource,
    ResourceRef, Source, issue,
};
use crate::common::{API_VERSION, GROUP, Loc, PathSegment, Severity, ValidationIssue};
use crate::{Composition, RegistryEntry, StudioRun};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::path::Path;

/// The kinds of our group.
pub const KINDS: [&str; 3] = ["Composition", "RegistryEntry", "StudioRun"];
/// Top-level keys a resource document may have.
const TOP_LEVEL_KEYS: [&str; 5] = ["apiVersion", "kind", "metadata", "spec", "status"];

impl ManifestSet {
    /// Classifies one document: ours (typed, or a problem), a `v1` `List` (its items are read),
    /// or another group's (ignored).
    pub(super) fn add_document(&mut self, file: &Path, document: usize, value: Value) {
        let source = Source {
            file: file.to_path_buf(),
            document,
            item: None,
        };
        let is_list = value.get("apiVersion").and_then(Value::as_str) == Some("v1")
            && value.get("kind").and_then(Value::as_str) == Some("List");
        if is_list && let Some(Value::Array(items)) = value.get("items") {
            for (i, item) in items.iter().enumerate() {
                let source = Source {
                    item: Some(i),
                    ..source.clone()
                };
                self.add_object(source, item.clone());
            }
            return;
        }
        self.add_object(source, value);
    }

    fn add_object(&mut self, source: Source, value: Value) {
        let problem =
            |source: &Source, resource: Option<ResourceRef>, issue: ValidationIssue| Finding {
                source: source.clone(),
                resource,
                severity: Severity::Error,
                issue,
            };
        let Value::Object(object) = value else {
            self.problems.push(problem(
                &source,
                None,
                issue(
                    Loc::new(),
                    codes::NOT_A_RESOURCE,
                    "the document is not a mapping with apiVersion and kind",
                ),
            ));
            return;
        };
        for key in ["apiVersion", "kind"] {
            if let Some(found) = object.get(key).filter(|v| !v.is_string() && !v.is_null()) {
                self.problems.push(problem(
                    &source,
                    None,
                    issue(
                        vec![PathSegment::from(key)],
                        codes::INVALID_TYPE,
                        format!("{key} must be a string, not {found}"),
                    ),
                ));
                return;
            }
        }
        let text = |key: &str| {
            object
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let (api_version, kind) = (text("apiVersion"), text("kind"));
        if api_version.is_empty() || kind.is_empty() {
            let field = if api_version.is_empty() {
                "apiVersion"
            } else {
                "kind"
            };
            self.problems.push(problem(
                &source,
                None,
                issue(
                    vec![PathSegment::from(field)],
                    codes::MISSING_FIELD,
                    format!(
                        "the document has no {field}: every manifest needs apiVersion and kind"
                    ),
                ),
            ));
            return;
        }
        // `studio.orrery.dev` without a version, or the group in other letter case, is a typo
        // of ours, not another group's document.
        let group = api_version
            .rsplit_once('/')
            .map_or(api_version.as_str(), |(group, _)| group);
        if !group.eq_ignore_ascii_case(GROUP) {
            self.ignored.push(IgnoredDocument {
                source,
                api_version,
                kind,
            });
            return;
        }
        let reference = reference_of(&kind, &object);
        if api_version != API_VERSION {
            self.problems.push(problem(
                &source,
                Some(reference),
                issue(
                    vec![PathSegment::from("apiVersion")],
                    codes::UNKNOWN_VERSION,
                    format!("apiVersion {api_version} is not served: use {API_VERSION}"),
                ),
            ));
            return;
        }
        // What the CRD's OpenAPI schema refuses (types, lengths, ranges, item counts…), in the
        // apiserver's words.
        let schema = schema_problems(&kind, &Value::Object(object.clone()));
        match parse_resource(&kind, object) {
            Ok(resource) => {
                // The resource is still checked further.
                for found in schema {
                    self.problems
                        .push(problem(&source, Some(reference.clone()), found));
                }
                self.resources.push(LoadedResource {
                    source,
                    reference,
                    resource,
                })
            }
            // A field of the wrong type: the schema names every one, as the apiserver does
            // (`instruction: yes` is a boolean: rule 1.81), where the typed reading stops at the
            // first in serde's words.
            Err(issue)
                if issue.code == codes::INVALID_TYPE
                    && schema.iter().any(|found| {
                        found.code == codes::INVALID_TYPE && found.loc == issue.loc
                    }) =>
            {
                for found in schema {
                    self.problems
                        .push(problem(&source, Some(reference.clone()), found));
                }
            }
            Err(issue) => self.problems.push(problem(&source, Some(reference), issue)),
        }
    }
}

/// The kind, namespace and name a document names (before it is typed).
fn reference_of(kind: &str, object: &Map<String, Value>) -> ResourceRef {
    let meta = object.get("metadata");
    let text = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str);
    let name = match (text("name"), text("generateName")) {
        (Some(name), _) => name.to_owned(),
        (None, Some(prefix)) => format!("{prefix}*"),
        (None, None) => String::new(),
    };
    ResourceRef {
        kind: kind.to_owned(),
        namespace: text("namespace").unwrap_or(DEFAULT_NAMESPACE).to_owned(),
        name,
    }
}

/// Reads a document of our group into its typed resource.
fn parse_resource(kind: &str, mut object: Map<String, Value>) -> Result<Resource, ValidationIssue> {
    if !KINDS.contains(&kind) {
        let hint = KINDS
            .iter()
            .find(|k| k.eq_ignore_ascii_case(kind))
            .map(|k| format!(" (kinds are case-sensitive: did you mean {k}?)"))
            .unwrap_or_default();
        return Err(issue(
            vec![PathSegment::from("kind")],
            codes::UNKNOWN_KIND,
            format!(
                "{GROUP} has no kind {kind:?}: the kinds are {}{hint}",
                KINDS.join(", ")
            ),
        ));
    }
    if let Some(key) = object
        .keys()
        .find(|k| !TOP_LEVEL_KEYS.contains(&k.as_str()))
    {
        return Err(issue(
            vec![PathSegment::from(key.as_str())],
            codes::UNKNOWN_FIELD,
            format!(
                "unknown field {key:?}: a resource has only {}",
                TOP_LEVEL_KEYS.join(", ")
            ),
        ));
    }
    let metadata: ObjectMeta = typed(object.remove("metadata").unwrap_or(Value::Null), "metadata")?;
    if metadata.name.is_none() && metadata.generate_name.is_none() {
        return Err(issue(
            vec![PathSegment::from("metadata")],
            codes::MISSING_FIELD,
            "metadata.name is required",
        ));
    }
    let Some(spec) = object.remove("spec") else {
        return Err(issue(
            vec![PathSegment::from("spec")],
            codes::MISSING_FIELD,
            "spec is required",
        ));
    };
    let status = object.remove("status").filter(|s| !s.is_null());
    Ok(match kind {
        "Composition" => Resource::Composition(Box::new(Composition {
            metadata,
            spec: typed(spec, "spec")?,
            status: status.map(|s| typed(s, "status")).transpose()?,
        })),
        "RegistryEntry" => Resource::RegistryEntry(Box::new(RegistryEntry {
            metadata,
            spec: typed(spec, "spec")?,
            status: status.map(|s| typed(s, "status")).transpose()?,
        })),
        _ => Resource::StudioRun(Box::new(StudioRun {
            metadata,
            spec: typed(spec, "spec")?,
            status: status.map(|s| typed(s, "status")).transpose()?,
        })),
    })
}

/// Deserializes `value` as `T`, reporting a type error at its field path under `prefix`.
fn typed<T: DeserializeOwned>(value: Value, prefix: &str) -> Result<T, ValidationIssue> {
    let value = if value.is_null() {
        Value::Object(Map::new())
    } else {
        value
    };
    serde_path_to_error::deserialize(value).map_err(|err| {
        let mut loc: Loc = vec![PathSegment::from(prefix)];
        for segment in err.path().iter() {
            match segment {
                serde_path_to_error::Segment::Seq { index } => loc.push(PathSegment::Index(*index)),
                serde_path_to_error::Segment::Map { key } => {
                    loc.push(PathSegment::Key(key.clone()))
                }
                serde_path_to_error::Segment::Enum { variant } => {
                    loc.push(PathSegment::Key(variant.clone()))
                }
                serde_path_to_error::Segment::Unknown => {}
            }
        }
        let message = err.inner().to_string();
        // "missing field `x`": point at where `x` belongs.
        if let Some(field) = message
            .strip_prefix("missing field `")
            .and_then(|m| m.strip_suffix('`'))
        {
            loc.push(PathSegment::Key(field.to_owned()));
        }
        issue(loc, code_of(&message), message)
    })
}

/// A code for a serde error message.
fn code_of(message: &str) -> &'static str {
    if message.starts_with("unknown field") {
        codes::UNKNOWN_FIELD
    } else if message.starts_with("missing field") {
        codes::MISSING_FIELD
    } else if message.starts_with("unknown variant") {
        codes::UNKNOWN_VALUE
    } else if message.starts_with("invalid type") {
        codes::INVALID_TYPE
    } else {
        codes::INVALID_VALUE
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::loc;
    use crate::manifest::Format;

    fn read(text: &str) -> ManifestSet {
        let mut set = ManifestSet::default();
        set.add_text(Path::new("m.yaml"), text, Format::Yaml)
            .unwrap();
        set
    }

    const COMPOSITION: &str = "apiVersion: studio.orrery.dev/v1alpha1
kind: Composition
metadata: {name: c, namespace: team-a}
spec:
  pattern: Pipeline
  nodes: [{id: a, kind: LLMAgent}]
";

    #[test]
    fn a_composition_is_read_with_its_namespace_and_document_position() {
        let set = read(&format!("---\n{COMPOSITION}---\n{COMPOSITION}"));
        assert!(set.problems.is_empty(), "{:?}", set.problems);
        assert_eq!(set.resources.len(), 2);
        let second = &set.resources[1];
        assert_eq!(second.source.document, 2);
        assert_eq!(second.reference.to_string(), "Composition team-a/c");
        assert!(matches!(second.resource, Resource::Composition(_)));
    }

    #[test]
    fn a_resource_without_namespace_is_in_default() {
        let set = read(&COMPOSITION.replace(", namespace: team-a", ""));
        assert_eq!(set.resources[0].reference.namespace, "default");
    }

    #[test]
    fn other_groups_are_ignored_and_counted() {
        let set = read(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n",
        );
        assert_eq!(set.ignored.len(), 2);
        assert!(set.problems.is_empty() && set.resources.is_empty());
    }

    #[test]
    fn the_items_of_a_v1_list_are_read_one_by_one() {
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
            serde_yaml::from_str::<Value>(COMPOSITION).unwrap(),
            {"apiVersion": "v1", "kind": "ConfigMap"}
        ]});
        let mut set = ManifestSet::default();
        set.add_text(Path::new("l.json"), &list.to_string(), Format::Json)
            .unwrap();
        assert_eq!(set.resources[0].source.item, Some(0));
        assert_eq!(set.ignored.len(), 1);
    }

    /// Table: a broken document of our group → (code, loc).
    #[test]
    fn broken_documents_of_our_group_report_code_and_field_path() {
        let cases: [(&str, &str, Loc); 9] = [
            ("kind: Compositon", "unknown_kind", loc!["kind"]),
            (
                "apiVersion: studio.orrery.dev/v1",
                "unknown_version",
                loc!["apiVersion"],
            ),
            ("specs: {}", "unknown_field", loc!["specs"]),
            (
                "metadata: {namespace: x}",
                "missing_field",
                loc!["metadata"],
            ),
            ("spec: null", "missing_field", loc!["spec", "pattern"]),
            (
                "spec: {pattern: Pipeline, nodes: [{id: a, kind: LLMAgent, tool: []}]}",
                "unknown_field",
                loc!["spec", "nodes", 0usize, "tool"],
            ),
            (
                "spec: {pattern: Pipelin, nodes: []}",
                "unknown_value",
                loc!["spec", "pattern"],
            ),
            (
                "spec: {pattern: Pipeline, nodes: [{id: a, kind: LLMAgent}], edges: [{from: a, to: b, maxIterations: many}]}",
                "invalid_type",
                loc!["spec", "edges", 0usize, "maxIterations"],
            ),
            (
                "metadata: {name: c, labels: [x]}",
                "invalid_type",
                loc!["metadata", "labels"],
            ),
        ];
        for (patch, code, want_loc) in cases {
            let mut doc: Map<String, Value> = serde_yaml::from_str(COMPOSITION).unwrap();
            doc.extend(serde_yaml::from_str::<Map<String, Value>>(patch).unwrap());
            let set = read(&serde_yaml::to_string(&doc).unwrap());
            assert_eq!(set.problems.len(), 1, "{patch}: {:?}", set.problems);
            let found = &set.problems[0].issue;
            assert_eq!(
                (found.code.as_str(), &found.loc),
                (code, &want_loc),
                "{}",
                found.message
            );
        }
    }

    /// Table: a mistyped apiVersion of our group → unknown_version (not ignored).
    #[test]
    fn a_mistyped_api_version_of_our_group_is_an_unknown_version() {
        for api_version in [
            "studio.orrery.dev",
            "Studio.Orrery.dev/v1alpha1",
            "STUDIO.ORRERY.DEV/v1alpha1",
            "studio.orrery.dev/v1",
            "studio.orrery.dev/",
        ] {
            let set = read(&COMPOSITION.replace(API_VERSION, api_version));
            assert!(set.ignored.is_empty(), "{api_version} was ignored");
            let codes: Vec<&str> = set.problems.iter().map(|p| p.issue.code.as_str()).collect();
            assert_eq!(codes, ["unknown_version"], "{api_version}");
        }
    }

    #[test]
    fn a_non_string_api_version_or_kind_must_be_a_string() {
        let set = read(&COMPOSITION.replace(API_VERSION, "5"));
        let found = &set.problems[0].issue;
        assert_eq!(
            (found.code.as_str(), found.field.as_str()),
            ("invalid_type", "apiVersion")
        );
        assert_eq!(found.message, "apiVersion must be a string, not 5");
        let set = read(&COMPOSITION.replace("kind: Composition", "kind: [Composition]"));
        assert_eq!(set.problems[0].issue.field, "kind");
        assert_eq!(set.problems[0].issue.code, "invalid_type");
    }

    #[test]
    fn a_kind_in_the_wrong_case_names_the_right_one() {
        let set = read(&COMPOSITION.replace("kind: Composition", "kind: composition"));
        assert!(
            set.problems[0]
                .issue
                .message
                .contains("did you mean Composition?"),
            "{:?}",
            set.problems
        );
    }

    #[test]
    fn a_document_that_is_not_a_mapping_is_not_a_resource() {
        let set = read("- just\n- a list\n");
        assert_eq!(set.problems[0].issue.code, "not_a_resource");
    }
}
