//! The CRDs' own OpenAPI schema applied offline, so that `orrery validate` refuses what the
//! apiserver's schema refuses: types (in the apiserver's words, rule 1.81), lengths (in Unicode code points, as Kubernetes counts them),
//! ranges, item counts, patterns, enums, required fields and the keys of map-type lists. The
//! schema is the one generated from the types ([`crate::crd_yaml::validation_schemas`]), read
//! from its checked-in copy in `crds/schema/` (compiled into the binary; a test fails when it
//! drifts from the types), so a run does not generate schemas at start: only the kinds present
//! are parsed, and only the patterns met are compiled. CEL rules stay the apiserver's (the
//! one-of and URL rules are mirrored in `entries.rs` and `check.rs`).

use super::codes;
use super::issue;
use crate::common::{Loc, PathSegment, ValidationIssue};
use regex::Regex;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, OnceLock, PoisonError};

/// Each kind's checked-in validation schema, in the order of
/// [`crate::crd_yaml::validation_schemas`].
const CHECKED_IN: [(&str, &str); 3] = [
    (
        "Composition",
        include_str!("../../schema/compositions.json"),
    ),
    (
        "RegistryEntry",
        include_str!("../../schema/registryentries.json"),
    ),
    ("StudioRun", include_str!("../../schema/studioruns.json")),
];

/// The parsed schema of each kind of [`CHECKED_IN`], parsed the first time a manifest of that
/// kind is checked.
static SCHEMAS: [OnceLock<Value>; CHECKED_IN.len()] = [const { OnceLock::new() }; CHECKED_IN.len()];

/// The `openAPIV3Schema` of `kind`, or `None` for a kind that has none.
fn schema_of(kind: &str) -> Option<&'static Value> {
    let index = CHECKED_IN.iter().position(|(k, _)| *k == kind)?;
    let (_, text) = CHECKED_IN[index];
    Some(SCHEMAS[index].get_or_init(|| {
        // The drift test keeps the copy parseable and current; should it ever not parse, the
        // schema is generated rather than left unchecked.
        serde_json::from_str(text).unwrap_or_else(|_| {
            crate::crd_yaml::validation_schemas()
                .into_iter()
                .find(|s| s.kind == kind)
                .map_or(Value::Null, |s| s.schema)
        })
    }))
}

/// Every `pattern` met so far, compiled the first time it is met (`None`: not a regex this
/// engine compiles, and so not checked).
static PATTERNS: LazyLock<Mutex<HashMap<String, Option<Regex>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Whether `text` is refused by `pattern`.
fn refused_by_pattern(pattern: &str, text: &str) -> bool {
    let mut compiled = PATTERNS.lock().unwrap_or_else(PoisonError::into_inner);
    let re = compiled
        .entry(pattern.to_owned())
        .or_insert_with(|| Regex::new(pattern).ok());
    re.as_ref().is_some_and(|re| !re.is_match(text))
}

/// Everything the CRD schema of `kind` refuses in `document`, each at its field path.
pub(super) fn schema_problems(kind: &str, document: &Value) -> Vec<ValidationIssue> {
    let mut out = Vec::new();
    if let Some(schema) = schema_of(kind) {
        check(schema, document, &mut Vec::new(), &mut out);
    }
    out
}

fn violation(loc: &Loc, message: String) -> ValidationIssue {
    issue(loc.clone(), codes::SCHEMA_VIOLATION, message)
}

fn check(schema: &Value, value: &Value, loc: &mut Loc, out: &mut Vec<ValidationIssue>) {
    let Value::Object(schema) = schema else {
        return;
    };
    let flag = |key: &str| schema.get(key).and_then(Value::as_bool) == Some(true);
    if value.is_null() || flag("x-kubernetes-int-or-string") {
        return;
    }
    let Some(ty) = schema.get("type").and_then(Value::as_str) else {
        return;
    };
    let format = schema
        .get("format")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some((expected, found)) = type_mismatch(ty, format, value) {
        out.push(issue(
            loc.clone(),
            codes::INVALID_TYPE,
            type_message(loc, &expected, &found),
        ));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let names: Vec<String> = allowed.iter().map(Value::to_string).collect();
        out.push(violation(
            loc,
            format!("{value} is not one of {}", names.join(", ")),
        ));
    }
    match value {
        Value::String(text) => check_string(schema, text, loc, out),
        Value::Number(number) => check_number(schema, number.as_f64().unwrap_or(0.0), loc, out),
        Value::Array(items) => check_array(schema, items, loc, out),
        Value::Object(map) => check_object(schema, map, loc, out),
        _ => {}
    }
}

/// The apiserver's type check (kube-openapi's `typeValidator`, format included): `Some((the
/// type or format wanted, what the value is))` when it refuses `value`. Values are named as Go
/// sees the JSON the apiserver decoded: an integer that fits 64 bits is an `integer` (format
/// `int64`), any other number a `number` (`float64`).
fn type_mismatch(ty: &str, format: &str, value: &Value) -> Option<(String, String)> {
    let (found, found_format) = match value {
        Value::Null => return None,
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) if n.is_i64() => ("integer", "int64"),
        Value::Number(_) => ("number", "float64"),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
    };
    let text_or_list = value.is_string() || value.is_array();
    let float_int =
        found == "number" && ty == "integer" && value.as_f64().is_some_and(is_json_integer);
    let int_float = found == "integer" && ty == "number";
    let fits = ty == found || float_int || int_float;
    if !(text_or_list || format.is_empty() || fits || found_format == format) {
        return Some((format.to_owned(), found_format.to_owned()));
    }
    if !matches!(ty, "number" | "integer") && !format.is_empty() && text_or_list {
        return None;
    }
    (!fits).then(|| (ty.to_owned(), found.to_owned()))
}

/// go-openapi's `IsFloat64AJSONInteger`: within ±(2^53-1), and whole (to a relative 1e-9).
fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    let whole = f.trunc();
    f == whole || (f - whole).abs() / (f.abs() + whole.abs()) < 1e-9
}

/// The apiserver's words for a value of the wrong type (`field.Invalid` around kube-openapi's
/// `InvalidType`), then how to keep a YAML scalar as text.
fn type_message(loc: &Loc, expected: &str, found: &str) -> String {
    let field = crate::common::loc_to_string(loc);
    let hint = match (expected, found) {
        ("string", "boolean") => {
            " (an unquoted yes, no, on, off, y, n, true or false is a boolean in YAML, as kubectl reads it: quote the value to keep it text)"
        }
        ("string", "integer" | "number") => {
            " (an unquoted number is a number in YAML, 0777 octal and 0x1F hex included: quote the value to keep it text)"
        }
        ("integer" | "number" | "int32" | "int64" | "float" | "double", _) => {
            " (the field takes a number, written without quotes)"
        }
        _ => "",
    };
    format!("Invalid value: {found:?}: {field} in body must be of type {expected}: {found:?}{hint}")
}

fn bound(schema: &Map<String, Value>, key: &str) -> Option<u64> {
    schema.get(key).and_then(Value::as_u64)
}

fn check_string(
    schema: &Map<String, Value>,
    text: &str,
    loc: &Loc,
    out: &mut Vec<ValidationIssue>,
) {
    // Kubernetes counts a string's length in Unicode code points.
    let length = text.chars().count() as u64;
    if let Some(max) = bound(schema, "maxLength")
        && length > max
    {
        out.push(violation(
            loc,
            format!("must be at most {max} characters (it has {length})"),
        ));
    }
    if let Some(min) = bound(schema, "minLength")
        && length < min
    {
        let message = if length == 0 {
            "must not be empty".to_owned()
        } else {
            format!("must be at least {min} characters (it has {length})")
        };
        out.push(violation(loc, message));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
        && refused_by_pattern(pattern, text)
    {
        out.push(violation(
            loc,
            format!("{text:?} does not match '{pattern}'"),
        ));
    }
}

fn check_number(
    schema: &Map<String, Value>,
    number: f64,
    loc: &Loc,
    out: &mut Vec<ValidationIssue>,
) {
    let limit = |key: &str| schema.get(key).and_then(Value::as_f64);
    let exclusive = |key: &str| schema.get(key).and_then(Value::as_bool) == Some(true);
    if let Some(max) = limit("maximum") {
        let (over, words) = if exclusive("exclusiveMaximum") {
            (number >= max, "less than")
        } else {
            (number > max, "less than or equal to")
        };
        if over {
            out.push(violation(
                loc,
                format!("must be {words} {max} (it is {number})"),
            ));
        }
    }
    if let Some(min) = limit("minimum") {
        let (under, words) = if exclusive("exclusiveMinimum") {
            (number <= min, "greater than")
        } else {
            (number < min, "greater than or equal to")
        };
        if under {
            out.push(violation(
                loc,
                format!("must be {words} {min} (it is {number})"),
            ));
        }
    }
}

fn check_array(
    schema: &Map<String, Value>,
    items: &[Value],
    loc: &mut Loc,
    out: &mut Vec<ValidationIssue>,
) {
    let count = items.len() as u64;
    if let Some(max) = bound(schema, "maxItems")
        && count > max
    {
        out.push(violation(
            loc,
            format!("must have at most {max} items (it has {count})"),
        ));
    }
    if let Some(min) = bound(schema, "minItems")
        && count < min
    {
        out.push(violation(
            loc,
            format!(
                "must have at least {min} item{} (it has {count})",
                if min == 1 { "" } else { "s" }
            ),
        ));
    }
    if let Some(item_schema) = schema.get("items") {
        for (i, item) in items.iter().enumerate() {
            loc.push(PathSegment::Index(i));
            check(item_schema, item, loc, out);
            loc.pop();
        }
    }
    let is_map_list = schema.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map");
    let keys: Vec<&str> = schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if is_map_list && !keys.is_empty() {
        let mut seen: Vec<Vec<&Value>> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let key: Vec<&Value> = keys
                .iter()
                .map(|k| item.get(*k).unwrap_or(&Value::Null))
                .collect();
            if seen.contains(&key) {
                loc.push(PathSegment::Index(i));
                loc.push(PathSegment::from(keys[0]));
                let shown: Vec<String> = key.iter().map(|v| v.to_string()).collect();
                out.push(violation(
                    loc,
                    format!(
                        "duplicate {} {}: the list is keyed by {}",
                        keys.join("/"),
                        shown.join("/"),
                        keys.join(" and ")
                    ),
                ));
                loc.pop();
                loc.pop();
            } else {
                seen.push(key);
            }
        }
    }
}

fn check_object(
    schema: &Map<String, Value>,
    map: &Map<String, Value>,
    loc: &mut Loc,
    out: &mut Vec<ValidationIssue>,
) {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            let defaulted = properties
                .and_then(|p| p.get(name))
                .is_some_and(|p| p.get("default").is_some());
            if !map.contains_key(name) && !defaulted {
                loc.push(PathSegment::from(name));
                out.push(violation(loc, "is required".to_owned()));
                loc.pop();
            }
        }
    }
    let additional = schema.get("additionalProperties").filter(|a| a.is_object());
    for (name, value) in map {
        let property = properties.and_then(|p| p.get(name)).or(additional);
        if let Some(property) = property {
            loc.push(PathSegment::Key(name.clone()));
            check(property, value, loc, out);
            loc.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn found(kind: &str, yaml: &str) -> Vec<(String, String)> {
        let doc: Value = serde_yaml::from_str(yaml).unwrap();
        schema_problems(kind, &doc)
            .into_iter()
            .map(|i| (i.field, i.message))
            .collect()
    }

    fn fields(kind: &str, yaml: &str) -> Vec<String> {
        found(kind, yaml).into_iter().map(|(f, _)| f).collect()
    }

    /// Table: each limit at its boundary, just inside (no finding) and just outside (one).
    #[test]
    fn each_limit_refuses_just_past_its_boundary_and_accepts_it() {
        let run = |spec: &str| {
            format!(
                "apiVersion: studio.orrery.dev/v1alpha1\nkind: StudioRun\nmetadata: {{name: r}}\nspec: {spec}\n"
            )
        };
        let entry = |spec: &str| {
            format!(
                "apiVersion: studio.orrery.dev/v1alpha1\nkind: RegistryEntry\nmetadata: {{name: e}}\nspec: {spec}\n"
            )
        };
        let users = |n: usize| {
            (0..n)
                .map(|i| format!("u{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let cases: Vec<(&str, String, String, &str)> = vec![
            (
                "StudioRun",
                run(&format!(
                    "{{input: '{}', owner: o, compositionRef: {{name: c}}}}",
                    "é".repeat(65536)
                )),
                run(&format!(
                    "{{input: '{}', owner: o, compositionRef: {{name: c}}}}",
                    "é".repeat(65537)
                )),
                "spec.input",
            ),
            (
                "StudioRun",
                run("{input: x, owner: o, compositionRef: {name: c}}"),
                run("{input: x, owner: '', compositionRef: {name: c}}"),
                "spec.owner",
            ),
            (
                "StudioRun",
                run(&format!(
                    "{{input: x, owner: o, compositionRef: {{name: c}}, approvers: {{users: [{}]}}}}",
                    users(32)
                )),
                run(&format!(
                    "{{input: x, owner: o, compositionRef: {{name: c}}, approvers: {{users: [{}]}}}}",
                    users(33)
                )),
                "spec.approvers.users",
            ),
            (
                "RegistryEntry",
                entry(
                    "{mcp: {url: 'https://x', tools: [a], limits: {timeoutSeconds: 3600, maxReplyBytes: 1024}}}",
                ),
                entry(
                    "{mcp: {url: 'https://x', tools: [a], limits: {timeoutSeconds: 3601, maxReplyBytes: 1024}}}",
                ),
                "spec.mcp.limits.timeoutSeconds",
            ),
            (
                "RegistryEntry",
                entry("{mcp: {url: 'https://x', tools: [a], limits: {maxReplyBytes: 1024}}}"),
                entry("{mcp: {url: 'https://x', tools: [a], limits: {maxReplyBytes: 1023}}}"),
                "spec.mcp.limits.maxReplyBytes",
            ),
            (
                "RegistryEntry",
                entry("{model: {provider: OpenAI, model: m, baseUrl: 'https://x'}}"),
                entry("{model: {provider: OpenAI, model: '', baseUrl: 'https://x'}}"),
                "spec.model.model",
            ),
            (
                "RegistryEntry",
                entry(&format!(
                    "{{a2a: {{cardUrl: 'https://x', skills: [s], cardSHA256: '{}'}}}}",
                    "a".repeat(64)
                )),
                entry(&format!(
                    "{{a2a: {{cardUrl: 'https://x', skills: [s], cardSHA256: '{}'}}}}",
                    "A".repeat(64)
                )),
                "spec.a2a.cardSHA256",
            ),
        ];
        for (kind, inside, outside, field) in cases {
            assert_eq!(
                fields(kind, &inside),
                Vec::<String>::new(),
                "{field} inside"
            );
            assert_eq!(
                fields(kind, &outside),
                vec![field.to_owned()],
                "{field} outside"
            );
        }
    }

    #[test]
    fn thirty_one_nodes_are_one_too_many_and_duplicate_ids_are_refused() {
        let nodes = |n: usize| {
            (0..n)
                .map(|i| format!("{{id: n{i}, kind: LLMAgent}}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let comp = |nodes: &str| {
            format!(
                "apiVersion: studio.orrery.dev/v1alpha1\nkind: Composition\nmetadata: {{name: c}}\nspec: {{pattern: Pipeline, nodes: [{nodes}]}}\n"
            )
        };
        assert!(found("Composition", &comp(&nodes(30))).is_empty());
        let over = found("Composition", &comp(&nodes(31)));
        assert_eq!(
            over,
            [(
                "spec.nodes".to_owned(),
                "must have at most 30 items (it has 31)".to_owned()
            )]
        );
        let dup = found(
            "Composition",
            &comp("{id: a, kind: LLMAgent}, {id: a, kind: Join}"),
        );
        assert_eq!(dup[0].0, "spec.nodes[1].id");
        assert!(dup[0].1.starts_with("duplicate id \"a\""), "{dup:?}");
    }

    #[test]
    fn a_missing_required_field_an_enum_and_a_type_are_reported() {
        let entry = "apiVersion: studio.orrery.dev/v1alpha1\nkind: RegistryEntry\nmetadata: {name: e}\nspec: {mcp: {url: 'https://x', tools: [a], transport: Grpc, privateNetwork: 'yes'}}\n";
        let mut got = found("RegistryEntry", entry);
        got.sort();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].0, "spec.mcp.privateNetwork");
        assert_eq!(got[1].0, "spec.mcp.transport");
        let run = "apiVersion: studio.orrery.dev/v1alpha1\nkind: StudioRun\nmetadata: {name: r}\nspec: {owner: o}\n";
        assert_eq!(fields("StudioRun", run), ["spec.input"]);
    }

    #[test]
    fn the_checked_in_validation_schemas_equal_the_generated_ones() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(crate::crd_yaml::SCHEMA_DIR);
        let generated = crate::crd_yaml::validation_schemas();
        if std::env::var_os("ORRERY_UPDATE_CRDS").is_some_and(|v| v == "1") {
            std::fs::create_dir_all(&dir).unwrap();
            for schema in &generated {
                std::fs::write(dir.join(&schema.file_name), schema.json()).unwrap();
            }
        }
        let command = crate::crd_yaml::UPDATE_ALL_COMMAND;
        // The table compiled in names every kind, in order, each by its file.
        let table: Vec<(String, String)> = CHECKED_IN
            .iter()
            .map(|(kind, text)| ((*kind).to_owned(), (*text).to_owned()))
            .collect();
        let kinds: Vec<&str> = generated.iter().map(|s| s.kind.as_str()).collect();
        let table_kinds: Vec<&str> = table.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            table_kinds, kinds,
            "CHECKED_IN in crds/src/manifest/schema.rs must name every kind of crd_yaml::all_crds, \
             each with include_str!(\"../../schema/<plural>.json\"); regenerate the files with:\n  {command}"
        );
        let mut drifted = Vec::new();
        for (schema, (_, compiled_in)) in generated.iter().zip(&table) {
            let path = dir.join(&schema.file_name);
            let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
            // Compared as JSON values: key order does not matter, content does. The copy compiled
            // into this test binary must be the file on disk too.
            let parsed: Option<Value> = serde_json::from_str(compiled_in).ok();
            if parsed.as_ref() != Some(&schema.schema) || on_disk != *compiled_in {
                drifted.push(format!(
                    "{} differs from crd_yaml::validation_schemas() (kind {})",
                    path.display(),
                    schema.kind
                ));
            }
        }
        assert!(
            drifted.is_empty(),
            "the validation schemas in crds/schema/ are out of date:\n  {}\nRegenerate them (and the \
             CRD YAML) with:\n  {command}",
            drifted.join("\n  ")
        );
        let mut stale = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if !generated.iter().any(|s| s.file_name == name) {
                stale.push(name);
            }
        }
        assert!(
            stale.is_empty(),
            "crds/schema/ holds files no type generates: {stale:?}; delete them"
        );
    }

    #[test]
    fn a_pattern_is_compiled_once_and_one_that_does_not_compile_refuses_nothing() {
        assert!(refused_by_pattern("^[a-z]+$", "A"));
        assert!(!refused_by_pattern("^[a-z]+$", "a"));
        assert!(!refused_by_pattern("(unclosed", "anything"));
        let compiled = PATTERNS.lock().unwrap();
        assert!(compiled.get("(unclosed").is_some_and(Option::is_none));
    }

    /// Table: a field of the wrong type → the apiserver's words (kube-openapi's type check, with
    /// its format rule: a boolean in an `int64` field is "must be of type int64: \"\""). The
    /// same words come back from the real apiserver in `tests/tests/e2e_yaml.rs`.
    #[test]
    fn a_value_of_the_wrong_type_is_refused_in_the_apiservers_words_rule_1_81() {
        let composition = |node: &str, budgets: &str| {
            format!(
                "apiVersion: studio.orrery.dev/v1alpha1\nkind: Composition\nmetadata: {{name: c}}\nspec: {{pattern: Pipeline, nodes: [{{id: a, kind: LLMAgent, {node}}}], budgets: {{{budgets}}}}}\n"
            )
        };
        #[rustfmt::skip]
        let cases: [(&str, &str, &str, &str); 9] = [
            ("instruction: yes", "", "spec.nodes[0].instruction", "string: \"boolean\""),
            ("instruction: 0777", "", "spec.nodes[0].instruction", "string: \"integer\""),
            ("instruction: 1.5", "", "spec.nodes[0].instruction", "string: \"number\""),
            ("instruction: [a]", "", "spec.nodes[0].instruction", "string: \"array\""),
            ("instruction: {a: b}", "", "spec.nodes[0].instruction", "string: \"object\""),
            ("instruction: x", "maxTokens: on", "spec.budgets.maxTokens", "int64: \"\""),
            ("instruction: x", "maxTokens: '5'", "spec.budgets.maxTokens", "integer: \"string\""),
            ("instruction: x", "maxTokens: 1.5", "spec.budgets.maxTokens", "int64: \"float64\""),
            ("instruction: x", "maxTokens: [1]", "spec.budgets.maxTokens", "integer: \"array\""),
        ];
        for (node, budgets, field, wanted) in cases {
            let doc = crate::manifest::yaml::documents(&composition(node, budgets))
                .unwrap()
                .remove(0);
            let got = schema_problems("Composition", &doc);
            assert_eq!(got.len(), 1, "{node} {budgets}: {got:?}");
            let (found, value) = wanted.split_once(": ").unwrap();
            let words =
                format!("Invalid value: {value}: {field} in body must be of type {found}: {value}");
            assert_eq!(
                (got[0].field.as_str(), got[0].code.as_str()),
                (field, "invalid_type")
            );
            assert!(got[0].message.starts_with(&words), "{}", got[0].message);
        }
        // A number where a number goes, and an integer-valued float where an integer goes.
        let fine =
            crate::manifest::yaml::documents(&composition("instruction: x", "maxTokens: 1.0e3"))
                .unwrap()
                .remove(0);
        assert!(schema_problems("Composition", &fine).is_empty());
    }

    #[test]
    fn a_kind_without_a_schema_yields_nothing() {
        assert!(found("Workflow", "spec: {a: 1}").is_empty());
    }
}
