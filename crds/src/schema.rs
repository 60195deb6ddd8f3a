//! The JSON Schema of a composition's `spec`, published for the console's live validation
//! (`GET /api/v1/schema`). Graph rules are not in it: they run in [`crate::validate::validate`].

use crate::composition::CompositionSpec;

/// The JSON Schema (draft 2020-12, from schemars) of [`CompositionSpec`].
pub fn composition_spec_schema() -> serde_json::Value {
    schemars::schema_for!(CompositionSpec).to_value()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::composition::{NodeKind, Pattern};

    fn enum_values(schema: &serde_json::Value, name: &str) -> Vec<String> {
        let def = schema
            .get("$defs")
            .and_then(|d| d.get(name))
            .cloned()
            .unwrap_or_default();
        let mut values = Vec::new();
        collect_strings(&def, &mut values);
        values
    }

    /// Every string under `enum` / `const` anywhere in the value.
    fn collect_strings(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("const", serde_json::Value::String(s)) => out.push(s.clone()),
                        ("enum", serde_json::Value::Array(items)) => {
                            out.extend(items.iter().filter_map(|i| i.as_str().map(str::to_owned)));
                        }
                        _ => collect_strings(value, out),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|i| collect_strings(i, out)),
            _ => {}
        }
    }

    #[test]
    fn the_schema_lists_every_node_kind_as_written_in_manifests() {
        let kinds = enum_values(&composition_spec_schema(), "NodeKind");
        for kind in NodeKind::ALL {
            assert!(
                kinds.iter().any(|k| k == kind.as_str()),
                "{} missing from {kinds:?}",
                kind.as_str()
            );
        }
    }

    #[test]
    fn the_schema_lists_every_pattern() {
        let patterns = enum_values(&composition_spec_schema(), "Pattern");
        for pattern in Pattern::ALL {
            assert!(
                patterns.iter().any(|p| p == pattern.as_str()),
                "{} missing",
                pattern.as_str()
            );
        }
    }

    #[test]
    fn the_schema_describes_the_spec_fields_in_camel_case() {
        let schema = composition_spec_schema();
        let props = schema.get("properties").and_then(|p| p.as_object());
        let keys: Vec<&str> = props
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        for key in ["pattern", "budgets", "nodes", "edges"] {
            assert!(keys.contains(&key), "{key} missing from {keys:?}");
        }
        let text = schema.to_string();
        assert!(text.contains("maxIterations") && text.contains("timeoutSeconds"));
    }
}
