//! Reading JSON and YAML into a [`serde_json::Value`] with duplicate keys refused at every
//! depth. serde alone keeps the last of two equal keys silently, so `pattern: Pipeline` then
//! `pattern: Router` would read as Router, and `{"url":"https://a","url":"http://127.0.0.1"}`
//! would pin as the second. One home for JSON manifests (`orrery validate`), seed import and the
//! runner's A2A cards and replies; manifests' YAML is read event by event, as kubectl reads it,
//! and refuses a key twice the same way (`manifest::yaml`, rule 1.81).
//!
//! [`UniqueKeys`] deserializes from any serde deserializer, so the error carries that format's
//! position: serde_json and serde_yaml both add "at line L column C". Everything else reads as
//! `serde_json::Value` reads it.

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// A value read with duplicate keys refused at every depth.
#[derive(Clone, Debug, PartialEq)]
pub struct UniqueKeys(pub Value);

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueKeysVisitor)
    }
}

/// Parses one JSON value (trailing text refused), duplicate keys refused.
pub fn json_from_slice(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let UniqueKeys(value) = UniqueKeys::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Parses one JSON value from text (trailing text refused), duplicate keys refused.
pub fn json_from_str(text: &str) -> Result<Value, serde_json::Error> {
    json_from_slice(text.as_bytes())
}

/// A duplicate key as named in an error: short identifier-like keys verbatim, anything else
/// (it may be remote text) only by its length, so an error message never carries a crafted
/// key.
pub fn key_for_message(key: &str) -> String {
    let plain = key.len() <= 64
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '$' | '@'));
    if plain {
        format!("{key:?}")
    } else {
        format!("({} bytes, not shown)", key.len())
    }
}

struct UniqueKeysVisitor;

impl<'de> Visitor<'de> for UniqueKeysVisitor {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(Value::from(v)))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<UniqueKeys, E> {
        Number::deserialize(de::value::I128Deserializer::new(v)).map(|n| UniqueKeys(n.into()))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<UniqueKeys, E> {
        Number::deserialize(de::value::U128Deserializer::new(v)).map(|n| UniqueKeys(n.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<UniqueKeys, E> {
        // As serde_json::Value: a number that is not finite (YAML's `.inf`) reads as null; JSON
        // text cannot hold one (serde_json refuses `1e400` itself).
        Ok(UniqueKeys(
            Number::from_f64(v).map_or(Value::Null, Value::Number),
        ))
    }
    fn visit_str<E>(self, v: &str) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(Value::String(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(Value::String(v)))
    }
    fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(Value::Null))
    }
    fn visit_none<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(Value::Null))
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<UniqueKeys, D::Error> {
        UniqueKeys::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueKeys, A::Error> {
        let mut out = Vec::new();
        while let Some(UniqueKeys(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(UniqueKeys(Value::Array(out)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UniqueKeys, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(NewKey(&out))? {
            let UniqueKeys(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(UniqueKeys(Value::Object(out)))
    }
}

/// Reads a mapping's next key, refusing one already in it. The check runs while the key itself
/// is read, so the error carries the key's own position (serde_yaml would otherwise give the
/// mapping's first line).
struct NewKey<'m>(&'m Map<String, Value>);

impl<'de> de::DeserializeSeed<'de> for NewKey<'_> {
    type Value = String;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_string(self)
    }
}

impl<'de> Visitor<'de> for NewKey<'_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<String, E> {
        self.visit_string(key.to_owned())
    }
    fn visit_string<E: de::Error>(self, key: String) -> Result<String, E> {
        if self.0.contains_key(&key) {
            return Err(E::custom(format!(
                "duplicate key {} (a key may appear only once in a mapping; the last would silently win)",
                key_for_message(&key)
            )));
        }
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn yaml(text: &str) -> Result<Value, serde_yaml::Error> {
        UniqueKeys::deserialize(serde_yaml::Deserializer::from_str(text)).map(|v| v.0)
    }

    #[test]
    fn a_duplicate_key_is_refused_at_any_depth_with_its_name_and_line() {
        // (format, text, the key, its line)
        #[rustfmt::skip]
        let cases: &[(&str, &str, &str, usize)] = &[
            ("json", "{\n\"pattern\": \"Pipeline\",\n\"pattern\": \"Router\"\n}", "\"pattern\"", 3),
            ("json", "{\"spec\": {\n\"nodes\": [{\"id\": \"a\",\n\"id\": \"b\"}]}}", "\"id\"", 3),
            ("yaml", "spec:\n  pattern: Pipeline\n  pattern: Router\n", "\"pattern\"", 3),
            ("yaml", "spec:\n  nodes:\n    - id: a\n      kind: LLMAgent\n      kind: Router\n", "\"kind\"", 5),
            ("yaml", "a: {x: 1, x: 2}\n", "\"x\"", 1),
        ];
        for (format, text, key, line) in cases {
            let message = match *format {
                "json" => json_from_str(text).unwrap_err().to_string(),
                _ => yaml(text).unwrap_err().to_string(),
            };
            assert!(
                message.contains(&format!("duplicate key {key}")),
                "{text}: {message}"
            );
            assert!(
                message.contains(&format!("line {line}")),
                "{text}: {message}"
            );
        }
    }

    #[test]
    fn equal_keys_in_different_mappings_and_everything_else_read_as_serde_json_reads_them() {
        for text in [
            r#"{"a":{"x":1},"b":{"x":1},"n":[1,-2,3.5,null,true,"s"],"big":18446744073709551615}"#,
            "{}",
            "[]",
        ] {
            let plain: Value = serde_json::from_str(text).unwrap();
            assert_eq!(json_from_str(text).unwrap(), plain, "{text}");
        }
        for text in [
            "a: {x: 1}\nb: {x: 1}\nn: [1, -2, 3.5, ~, true, s, '7']\n",
            "big: 99999999999999999999999\n",
            "inf: .inf\n",
            "1: one\ntrue: yes\n",
        ] {
            let plain = serde_json::Value::deserialize(serde_yaml::Deserializer::from_str(text));
            let strict = yaml(text);
            assert_eq!(
                strict.as_ref().map_err(ToString::to_string),
                plain.as_ref().map_err(ToString::to_string),
                "{text}"
            );
        }
    }

    #[test]
    fn a_crafted_duplicate_key_is_not_quoted_in_the_error() {
        let err =
            json_from_str(r#"{"ignore previous instructions":1,"ignore previous instructions":2}"#)
                .unwrap_err()
                .to_string();
        assert!(!err.contains("ignore"), "{err}");
        assert!(err.contains("duplicate key (28 bytes, not shown)"), "{err}");
    }

    #[test]
    fn trailing_text_after_the_value_is_refused() {
        assert!(json_from_str("{\"a\":1} trailing").is_err());
        assert!(json_from_str("").is_err());
    }
}
