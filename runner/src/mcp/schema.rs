//! Checks on a tool's input schema before it reaches a model (anchors 29–30): `$ref`s are never
//! dereferenced, and a schema whose references leave the document (a network URI, another file)
//! is refused; `x-mcp-header` names must be single-line and unique.

use serde_json::Value;
use std::collections::BTreeSet;

/// Keywords that reference another schema.
const REFERENCE_KEYWORDS: &[&str] = &["$ref", "$dynamicRef", "$recursiveRef"];

/// Why a schema was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchemaProblem {
    /// The schema is not a JSON object.
    #[error("its input schema is not a JSON object")]
    NotAnObject,
    /// A reference that leaves the document.
    #[error(
        "its input schema refers to {reference:?} at {path}; references outside the schema (network URIs, other documents) are never dereferenced, so the tool is refused"
    )]
    ExternalReference {
        /// The reference as written.
        reference: String,
        /// Where it is (a JSON pointer).
        path: String,
    },
    /// A reference keyword that is not a string.
    #[error("its input schema has a non-string {keyword} at {path}")]
    MalformedReference {
        /// The keyword.
        keyword: String,
        /// Where it is.
        path: String,
    },
    /// An `x-mcp-header` carrying a line break, or given twice.
    #[error("its input schema has an invalid x-mcp-header at {path}: {reason}")]
    BadHeader {
        /// Where it is.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

/// Checks `schema`; `Ok` when the tool may be offered to a model.
pub fn check_input_schema(schema: &Value) -> Result<(), SchemaProblem> {
    if !schema.is_object() {
        return Err(SchemaProblem::NotAnObject);
    }
    let mut headers = BTreeSet::new();
    walk(schema, "", &mut headers)
}

fn walk(value: &Value, path: &str, headers: &mut BTreeSet<String>) -> Result<(), SchemaProblem> {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let child_path = format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"));
                if REFERENCE_KEYWORDS.contains(&key.as_str()) {
                    let reference =
                        child
                            .as_str()
                            .ok_or_else(|| SchemaProblem::MalformedReference {
                                keyword: key.clone(),
                                path: child_path.clone(),
                            })?;
                    if !reference.starts_with('#') {
                        return Err(SchemaProblem::ExternalReference {
                            reference: reference.to_owned(),
                            path: child_path,
                        });
                    }
                    continue;
                }
                if key == "x-mcp-header" {
                    check_header(child, &child_path, headers)?;
                    continue;
                }
                walk(child, &child_path, headers)?;
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, item)| walk(item, &format!("{path}/{i}"), headers)),
        _ => Ok(()),
    }
}

fn check_header(
    value: &Value,
    path: &str,
    seen: &mut BTreeSet<String>,
) -> Result<(), SchemaProblem> {
    let bad = |reason: &str| SchemaProblem::BadHeader {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    let name = value.as_str().ok_or_else(|| bad("it is not a string"))?;
    if name.is_empty() || name.chars().any(|c| c.is_control()) {
        return Err(bad(
            "it is empty or carries a line break or control character",
        ));
    }
    if !seen.insert(name.to_ascii_lowercase()) {
        return Err(bad("the same header name is given twice"));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_are_checked_as_a_table() {
        let cases = [
            (
                json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "string"}}}),
                true,
            ),
            (
                json!({"type": "object", "properties": {"a": {"$ref": "http://169.254.169.254/latest/meta-data"}}}),
                false,
            ),
            (
                json!({"type": "object", "properties": {"a": {"$ref": "https://schemas.example.com/a.json"}}}),
                false,
            ),
            (
                json!({"type": "object", "properties": {"a": {"$ref": "other.json#/a"}}}),
                false,
            ),
            (
                json!({"type": "object", "allOf": [{"$dynamicRef": "https://x.example/s"}]}),
                false,
            ),
            (
                json!({"type": "object", "properties": {"a": {"$ref": 5}}}),
                false,
            ),
            (
                json!({"type": "object", "properties": {"$ref": {"type": "string"}}}),
                false,
            ),
            (json!("not an object"), false),
        ];
        for (schema, ok) in cases {
            assert_eq!(check_input_schema(&schema).is_ok(), ok, "{schema}");
        }
    }

    #[test]
    fn an_external_reference_names_the_reference_and_where_it_is() {
        let schema =
            json!({"type": "object", "properties": {"q": {"$ref": "http://169.254.169.254/x"}}});
        let err = check_input_schema(&schema).unwrap_err();
        assert_eq!(
            err,
            SchemaProblem::ExternalReference {
                reference: "http://169.254.169.254/x".into(),
                path: "/properties/q/$ref".into()
            }
        );
        assert!(err.to_string().contains("never dereferenced"));
    }

    #[test]
    fn mcp_headers_must_be_single_line_and_unique() {
        let ok = json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Region"}}});
        assert!(check_input_schema(&ok).is_ok());
        let crlf = json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Region\r\nX-Evil: 1"}}});
        assert!(matches!(
            check_input_schema(&crlf),
            Err(SchemaProblem::BadHeader { .. })
        ));
        let twice = json!({"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "string", "x-mcp-header": "region"}
        }});
        assert!(matches!(
            check_input_schema(&twice),
            Err(SchemaProblem::BadHeader { .. })
        ));
    }
}
