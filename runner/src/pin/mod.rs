//! Pins: RFC 8785 (JCS) canonical JSON, the A2A card trust digest, MCP tool digests, and a JSON
//! parser that refuses duplicate keys (rules 5.13–5.14, 5.18; anchors 20–23, 27).
//!
//! Canonicalisation is `serde_json_canonicalizer` (keys sorted by UTF-16 code units, numbers in
//! ECMAScript form). Trust fields are projected explicitly and cleaned of unset fields (null,
//! empty strings, lists and objects as field values, so SDKs that omit or emit defaults pin
//! alike, as A2A's signing rules do) — but never of data keys: a security requirement's scheme
//! names, a scopeless requirement and the "no auth" item `{}` all count. Integers outside
//! ±(2^53−1) are refused rather than silently rounded.
//!
//! [`store`]: where pins live and how they are checked (the [`store::Pins`] trait, the
//! in-memory and file stores).

pub mod store;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Why a document could not be parsed or pinned.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PinError {
    /// Not valid JSON, or a duplicate key (the message names it and its position).
    #[error("invalid JSON: {0}")]
    Json(String),
    /// The document is not a JSON object.
    #[error("the {0} must be a JSON object")]
    NotAnObject(&'static str),
    /// A field has the wrong type.
    #[error("field {field} must be {expected}")]
    WrongType {
        /// The field path.
        field: String,
        /// What was expected.
        expected: &'static str,
    },
    /// An integer that IEEE doubles cannot hold exactly (RFC 8785 would round it).
    #[error(
        "field {field} holds the integer {value}, outside ±(2^53−1); it cannot be pinned exactly"
    )]
    UnsafeInteger {
        /// The field path.
        field: String,
        /// The integer as written.
        value: String,
    },
    /// Canonicalisation failed.
    #[error("could not canonicalise: {0}")]
    Canonical(String),
}

/// RFC 8785 canonical JSON of `value`.
pub fn canonical_json(value: &Value) -> Result<String, PinError> {
    serde_json_canonicalizer::to_string(value).map_err(|e| PinError::Canonical(e.to_string()))
}

/// Lowercase hex SHA-256 of the canonical JSON of `value`.
pub fn canonical_sha256(value: &Value) -> Result<String, PinError> {
    let canonical = canonical_json(value)?;
    Ok(hex::encode(Sha256::digest(canonical.as_bytes())))
}

/// Parses JSON, refusing duplicate object keys at any depth (serde_json alone keeps the last
/// one silently, so `{"url":"https://a","url":"http://127.0.0.1"}` would pin as the second).
/// The parser is the one manifests and seed imports use ([`orrery_crds::unique_keys`]).
pub fn parse_json_no_duplicate_keys(bytes: &[u8]) -> Result<Value, PinError> {
    orrery_crds::unique_keys::json_from_slice(bytes).map_err(|e| PinError::Json(e.to_string()))
}

const SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Refuses integers outside ±(2^53−1) anywhere in `value`.
fn check_safe_integers(value: &Value, path: &str) -> Result<(), PinError> {
    match value {
        Value::Number(n) => {
            let unsafe_int = n.as_u64().is_some_and(|u| u > SAFE_INTEGER)
                || n.as_i64().is_some_and(|i| i.unsigned_abs() > SAFE_INTEGER);
            if unsafe_int {
                return Err(PinError::UnsafeInteger {
                    field: path.to_owned(),
                    value: n.to_string(),
                });
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| check_safe_integers(v, &format!("{path}[{i}]"))),
        Value::Object(map) => map
            .iter()
            .try_for_each(|(k, v)| check_safe_integers(v, &format!("{path}.{k}"))),
        _ => Ok(()),
    }
}

/// Cleans one field value of a schema object: unset values (null, `""`, `[]`, `{}`) drop out,
/// so SDKs that omit or emit defaults pin alike (A2A's signing rule). Fields whose keys are data
/// rather than schema (security requirements and schemes, OAuth scopes) keep every key.
fn clean_field(name: &str, value: Value) -> Option<Value> {
    let value = match (name, value) {
        (_, Value::Null) => return None,
        ("securityRequirements", Value::Array(items)) => {
            Value::Array(items.into_iter().map(requirement_v1).collect())
        }
        ("security", Value::Array(items)) => {
            Value::Array(items.into_iter().map(requirement_v03).collect())
        }
        ("securitySchemes", Value::Object(schemes)) => Value::Object(
            schemes
                .into_iter()
                .map(|(k, v)| (k, security_scheme(v)))
                .collect(),
        ),
        ("scopes", Value::Object(scopes)) => Value::Object(scopes),
        (_, Value::Array(items)) => Value::Array(items.into_iter().map(clean_item).collect()),
        (_, Value::Object(map)) => Value::Object(clean_object(map)),
        (_, other) => other,
    };
    let unset = match &value {
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    };
    (!unset).then_some(value)
}

/// Cleans every field of a schema object (see [`clean_field`]); the object itself stays.
fn clean_object(map: Map<String, Value>) -> Map<String, Value> {
    map.into_iter()
        .filter_map(|(k, v)| {
            let v = clean_field(&k, v)?;
            Some((k, v))
        })
        .collect()
}

/// A list item keeps its place: objects are cleaned but kept even when empty (`{}` in a
/// requirement list means "no auth"), scalars are kept as they are.
fn clean_item(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(clean_object(map)),
        Value::Array(items) => Value::Array(items.into_iter().map(clean_item).collect()),
        other => other,
    }
}

/// A2A 1.0 requirement `{"schemes": {name: {"list": [scopes]}}}`: every scheme name stays, and
/// an empty, null or absent scope list is the same scopeless requirement (`{}`; Python omits
/// the list, JS emits `{"list": []}`). A requirement without schemes is `{"schemes": {}}`.
fn requirement_v1(item: Value) -> Value {
    let Value::Object(mut map) = item else {
        return clean_item(item);
    };
    let schemes = match map.remove("schemes") {
        Some(Value::Object(schemes)) => Value::Object(
            schemes
                .into_iter()
                .map(|(name, scopes)| (name, scope_list_v1(scopes)))
                .collect(),
        ),
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(other) => clean_item(other),
    };
    let mut out = clean_object(map);
    out.insert("schemes".into(), schemes);
    Value::Object(out)
}

fn scope_list_v1(scopes: Value) -> Value {
    match scopes {
        Value::Null => Value::Object(Map::new()),
        Value::Object(mut map) => {
            let list = map.remove("list");
            let mut out = clean_object(map);
            match list {
                None | Some(Value::Null) => {}
                Some(Value::Array(l)) if l.is_empty() => {}
                Some(l) => {
                    out.insert("list".into(), l);
                }
            }
            Value::Object(out)
        }
        other => clean_item(other),
    }
}

/// A2A 0.3 requirement `{name: [scopes]}`: every scheme name stays, a null scope list is the
/// empty one, and the empty item `{}` ("no auth") stays.
fn requirement_v03(item: Value) -> Value {
    match item {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(name, scopes)| {
                    let scopes = match scopes {
                        Value::Null => Value::Array(Vec::new()),
                        other => other,
                    };
                    (name, scopes)
                })
                .collect(),
        ),
        other => clean_item(other),
    }
}

/// One security scheme: its fields are cleaned, but a 1.0 scheme-type key whose object is
/// empty (`{"mtlsSecurityScheme": {}}`) stays, and so does the scheme itself.
fn security_scheme(scheme: Value) -> Value {
    match scheme {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter_map(|(k, v)| match v {
                    Value::Object(inner) => Some((k, Value::Object(clean_object(inner)))),
                    other => clean_field(&k, other).map(|v| (k, v)),
                })
                .collect(),
        ),
        other => clean_item(other),
    }
}

/// The card fields that make up its trust: interfaces (A2A 1.0 `supportedInterfaces`, and the
/// 0.3 `url`, `preferredTransport`, `protocolVersion`, `additionalInterfaces` still sent in
/// compatibility mode), security schemes and requirements (1.0 `securityRequirements`, 0.3
/// `security`), and skills.
const CARD_TRUST_FIELDS: &[&str] = &[
    "supportedInterfaces",
    "url",
    "preferredTransport",
    "protocolVersion",
    "additionalInterfaces",
    "securitySchemes",
    "securityRequirements",
    "security",
    "skills",
];

/// The trust projection of an A2A card: [`CARD_TRUST_FIELDS`], with each skill's `examples`
/// removed and unset fields dropped (see the module docs). Everything else (name, description, version, provider,
/// capabilities, icons, signatures …) is left out, so editing it keeps the pin.
pub fn card_trust_projection(card: &Value) -> Result<Value, PinError> {
    let card = card
        .as_object()
        .ok_or(PinError::NotAnObject("agent card"))?;
    let mut out = Map::new();
    for field in CARD_TRUST_FIELDS {
        let Some(value) = card.get(*field) else {
            continue;
        };
        let value = if *field == "skills" {
            let skills = value.as_array().ok_or_else(|| PinError::WrongType {
                field: "skills".into(),
                expected: "a list",
            })?;
            let mut cleaned = Vec::with_capacity(skills.len());
            for (i, skill) in skills.iter().enumerate() {
                let mut skill = skill
                    .as_object()
                    .cloned()
                    .ok_or_else(|| PinError::WrongType {
                        field: format!("skills[{i}]"),
                        expected: "an object",
                    })?;
                skill.remove("examples");
                cleaned.push(Value::Object(skill));
            }
            Value::Array(cleaned)
        } else {
            value.clone()
        };
        check_safe_integers(&value, field)?;
        if let Some(value) = clean_field(field, value) {
            out.insert((*field).to_owned(), value);
        }
    }
    Ok(Value::Object(out))
}

/// The card pin: lowercase hex SHA-256 of the RFC 8785 canonical JSON of
/// [`card_trust_projection`]. A description edit keeps it; an endpoint, auth or skill change
/// changes it.
pub fn card_trust_digest(card: &Value) -> Result<String, PinError> {
    canonical_sha256(&card_trust_projection(card)?)
}

/// The pin of one MCP tool: SHA-256 of the canonical JSON of its name, description, input
/// schema and annotations (`tool` is the tool as listed by `tools/list`, camelCase). A missing
/// or null description or annotations pin as absent.
pub fn mcp_tool_digest(tool: &Value) -> Result<String, PinError> {
    let tool = tool.as_object().ok_or(PinError::NotAnObject("MCP tool"))?;
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| PinError::WrongType {
            field: "name".into(),
            expected: "a string",
        })?;
    let schema = tool.get("inputSchema").ok_or_else(|| PinError::WrongType {
        field: "inputSchema".into(),
        expected: "present",
    })?;
    mcp_tool_pin_digest(
        name,
        tool.get("description").and_then(Value::as_str),
        schema,
        tool.get("annotations").filter(|a| !a.is_null()),
    )
}

/// [`mcp_tool_digest`] from the parts.
pub fn mcp_tool_pin_digest(
    name: &str,
    description: Option<&str>,
    input_schema: &Value,
    annotations: Option<&Value>,
) -> Result<String, PinError> {
    let mut pin = Map::new();
    pin.insert("name".into(), Value::String(name.to_owned()));
    if let Some(d) = description {
        pin.insert("description".into(), Value::String(d.to_owned()));
    }
    check_safe_integers(input_schema, "inputSchema")?;
    pin.insert("inputSchema".into(), input_schema.clone());
    if let Some(a) = annotations {
        check_safe_integers(a, "annotations")?;
        pin.insert("annotations".into(), a.clone());
    }
    canonical_sha256(&Value::Object(pin))
}

/// A listed MCP tool as a RegistryEntry's status pins it (what the probe writes and a runner
/// pod checks against): lowercase hex SHA-256 of the description's UTF-8 (of `""` when it has
/// none), of the canonical JSON of the input schema and of the annotations (`""` when it has
/// none), and the `readOnlyHint`.
pub fn pinned_tool(
    name: &str,
    description: Option<&str>,
    input_schema: &Value,
    annotations: Option<&Value>,
) -> Result<orrery_crds::registry::PinnedTool, PinError> {
    check_safe_integers(input_schema, "inputSchema")?;
    let annotations_sha256 = match annotations {
        Some(a) => {
            check_safe_integers(a, "annotations")?;
            canonical_sha256(a)?
        }
        None => String::new(),
    };
    Ok(orrery_crds::registry::PinnedTool {
        name: name.to_owned(),
        description_sha256: hex::encode(Sha256::digest(description.unwrap_or("").as_bytes())),
        schema_sha256: canonical_sha256(input_schema)?,
        annotations_sha256,
        read_only_hint: annotations
            .and_then(|a| a.get("readOnlyHint"))
            .and_then(Value::as_bool),
    })
}

#[cfg(test)]
mod tests;
