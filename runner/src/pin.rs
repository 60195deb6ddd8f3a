//! Pins: RFC 8785 (JCS) canonical JSON, the A2A card trust digest, MCP tool digests, and a JSON
//! parser that refuses duplicate keys (rules 5.13–5.14, 5.18; anchors 20–23, 27).
//!
//! Canonicalisation is `serde_json_canonicalizer` (keys sorted by UTF-16 code units, numbers in
//! ECMAScript form). Trust fields are projected explicitly, cleaned of empty strings, lists and
//! objects (so SDKs that omit or emit empty values pin alike, as A2A's signing rules do), and
//! integers outside ±(2^53−1) are refused rather than silently rounded.

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::fmt;

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

/// A JSON value parsed with duplicate keys refused at every depth.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Strict, E> {
        Ok(Strict(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Strict, E> {
        Ok(Strict(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Strict, E> {
        Ok(Strict(Value::from(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Strict, E> {
        serde_json::Number::from_f64(v)
            .map(|n| Strict(Value::Number(n)))
            .ok_or_else(|| E::custom("a number that is not finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Strict, E> {
        Ok(Strict(Value::String(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Strict, E> {
        Ok(Strict(Value::String(v)))
    }
    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Strict, E> {
        Ok(Strict(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Strict(Value::Array(out)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            let Strict(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Strict(Value::Object(out)))
    }
}

/// Parses JSON, refusing duplicate object keys at any depth (serde_json alone keeps the last
/// one silently, so `{"url":"https://a","url":"http://127.0.0.1"}` would pin as the second).
pub fn parse_json_no_duplicate_keys(bytes: &[u8]) -> Result<Value, PinError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let Strict(value) = Strict::deserialize(&mut de).map_err(|e| PinError::Json(e.to_string()))?;
    de.end().map_err(|e| PinError::Json(e.to_string()))?;
    Ok(value)
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

/// Drops nulls, empty strings, empty lists and empty objects, recursively (A2A's signing rule).
fn clean_empty(value: Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(items) => {
            let items: Vec<Value> = items.into_iter().filter_map(clean_empty).collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        Value::Object(map) => {
            let map: Map<String, Value> = map
                .into_iter()
                .filter_map(|(k, v)| clean_empty(v).map(|v| (k, v)))
                .collect();
            (!map.is_empty()).then_some(Value::Object(map))
        }
        other => Some(other),
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
/// removed and empty values dropped. Everything else (name, description, version, provider,
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
        if let Some(value) = clean_empty(value) {
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

#[cfg(test)]
#[path = "pin_tests.rs"]
mod tests;
