//! One scalar as kubectl reads it: go-yaml v2's `resolve()` (YAML 1.1 with Go's number parsing;
//! go.yaml.in/yaml/v2 v2.4.3, what sigs.k8s.io/yaml v1.6.0 uses in Kubernetes v1.36), then the
//! JSON that sigs.k8s.io/yaml's `YAMLToJSON` writes and the apiserver reads back (rule 1.81).
//!
//! A plain scalar (no quotes, no tag) resolves by its first character:
//! - the words `y Y yes Yes YES on On ON true True TRUE` are true, `n N no No NO off Off OFF
//!   false False FALSE` false, `~ null Null NULL` and nothing are null, `.inf .Inf .INF` (signed
//!   too) and `.nan .NaN .NAN` are numbers JSON cannot hold; any other spelling (`yEs`, `nan`) is
//!   a string;
//! - text starting with a digit or a sign, `_` removed, is an integer as Go's `ParseInt(s, 0,
//!   64)` reads it (`0777` octal, `0o17`, `0x1F`, `0b101`, `+7`), else an unsigned one above 2^63,
//!   else a float (`1e3`, `1.`, `08` = 8), else `0b…` once more in base 2; a timestamp
//!   (`2001-12-14`) and a sexagesimal number (`1:20`) stay strings;
//! - text starting with `.` is a float if Go's `ParseFloat` reads it (`.5`, `.5_5`).
//!
//! Quoted and block scalars are strings. An explicit tag (`!!str`, `!!int`, `!!float`, `!!bool`,
//! `!!null`, `!!timestamp`, `!!binary`) decodes as go-yaml does, and a value that is not of its
//! tag's type is refused as go-yaml refuses it; any other tag leaves the text a string.

use super::strconv::{
    binary, finite, go_format_g32, go_parse_float, go_parse_int, go_parse_uint, is_timestamp,
    yaml_style_float,
};
use serde_json::{Number, Value};

/// A resolved scalar, before it becomes JSON (go-yaml's Go value).
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Scalar {
    /// nil.
    Null,
    /// bool.
    Bool(bool),
    /// int (64 bits).
    Int(i64),
    /// uint64: an integer above `i64::MAX`.
    Uint(u64),
    /// float64.
    Float(f64),
    /// string (also a timestamp, and the bytes of a `!!binary`).
    Str(String),
}

/// The tags go-yaml resolves, by their short name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tag {
    /// No tag on a plain scalar.
    Plain,
    Str,
    Bool,
    Int,
    Float,
    Null,
    Timestamp,
}

impl Tag {
    fn short(self) -> &'static str {
        match self {
            Tag::Plain | Tag::Str => "!!str",
            Tag::Bool => "!!bool",
            Tag::Int => "!!int",
            Tag::Float => "!!float",
            Tag::Null => "!!null",
            Tag::Timestamp => "!!timestamp",
        }
    }
}

const CORE_PREFIX: &str = "tag:yaml.org,2002:";

/// Resolves one scalar: its text, whether it was written plain, and its tag (handle and suffix
/// joined; `None` when it has none). Refused: a value its explicit tag does not take.
pub(super) fn scalar(text: &str, plain: bool, tag: Option<&str>) -> Result<Scalar, String> {
    let tag = match tag {
        None if plain => Tag::Plain,
        None => return Ok(Scalar::Str(text.to_owned())),
        Some(full) => match full.strip_prefix(CORE_PREFIX) {
            Some("str") => Tag::Str,
            Some("bool") => Tag::Bool,
            Some("int") => Tag::Int,
            Some("float") => Tag::Float,
            Some("null") => Tag::Null,
            Some("timestamp") => Tag::Timestamp,
            Some("binary") => return binary(text).map(Scalar::Str),
            // `!` (non-specific), `!!map`, `!!merge` or a tag of one's own: the text.
            _ => return Ok(Scalar::Str(text.to_owned())),
        },
    };
    let (found, value) = resolve(tag, text);
    match (tag, found, value) {
        (Tag::Plain | Tag::Str, _, value) => Ok(value),
        (Tag::Float, Tag::Int, Scalar::Int(i)) => Ok(Scalar::Float(i as f64)),
        (want, found, value) if want == found => Ok(value),
        (want, found, _) => Err(format!(
            "cannot decode {} `{}` as a {} (kubectl refuses it too); remove the tag or change the value",
            found.short(),
            shortened(text),
            want.short()
        )),
    }
}

/// A value as an error names it: at most 20 characters.
pub(super) fn shortened(text: &str) -> String {
    if text.chars().count() > 20 {
        format!("{}…", text.chars().take(19).collect::<String>())
    } else {
        text.to_owned()
    }
}

/// go-yaml's `resolve(tag, in)` for a resolvable tag: what the text is, and its value.
fn resolve(tag: Tag, input: &str) -> (Tag, Scalar) {
    let string = || (Tag::Str, Scalar::Str(input.to_owned()));
    let Some(hint) = hint(input) else {
        return string();
    };
    if tag == Tag::Str {
        return string();
    }
    if let Some(known) = word(input) {
        return known;
    }
    match hint {
        Hint::Word => {}
        Hint::Dot => {
            if let Some(f) = go_parse_float(input) {
                return (Tag::Float, Scalar::Float(f));
            }
        }
        Hint::Number => {
            if tag == Tag::Timestamp && is_timestamp(input) {
                return (Tag::Timestamp, Scalar::Str(input.to_owned()));
            }
            // (Untagged, a timestamp is its text, which no number rule below would read.)
            let plain = input.replace('_', "");
            if let Some(i) = go_parse_int(&plain, 0) {
                return (Tag::Int, Scalar::Int(i));
            }
            if let Some(u) = go_parse_uint(&plain, 0) {
                return (Tag::Int, Scalar::Uint(u));
            }
            if yaml_style_float(&plain)
                && let Some(f) = finite(&plain)
            {
                return (Tag::Float, Scalar::Float(f));
            }
            if let Some(digits) = plain.strip_prefix("0b") {
                if let Some(i) = go_parse_int(digits, 2) {
                    return (Tag::Int, Scalar::Int(i));
                }
                if let Some(u) = go_parse_uint(digits, 2) {
                    return (Tag::Int, Scalar::Uint(u));
                }
            } else if let Some(digits) = plain.strip_prefix("-0b")
                && let Some(i) = go_parse_int(&format!("-{digits}"), 2)
            {
                return (Tag::Int, Scalar::Int(i));
            }
        }
    }
    string()
}

/// go-yaml's first-character hint.
#[derive(Clone, Copy)]
enum Hint {
    /// `y Y n N t T f F o O ~`: only the listed words.
    Word,
    /// `.`: a float, or one of the listed words.
    Dot,
    /// A digit or a sign: a number.
    Number,
}

fn hint(input: &str) -> Option<Hint> {
    match input.as_bytes().first() {
        // Nothing is null (a word).
        None => Some(Hint::Word),
        Some(b'+' | b'-' | b'0'..=b'9') => Some(Hint::Number),
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => {
            Some(Hint::Word)
        }
        Some(b'.') => Some(Hint::Dot),
        Some(_) => None,
    }
}

/// go-yaml's table of words.
fn word(input: &str) -> Option<(Tag, Scalar)> {
    Some(match input {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            (Tag::Bool, Scalar::Bool(true))
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            (Tag::Bool, Scalar::Bool(false))
        }
        "" | "~" | "null" | "Null" | "NULL" => (Tag::Null, Scalar::Null),
        ".nan" | ".NaN" | ".NAN" => (Tag::Float, Scalar::Float(f64::NAN)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            (Tag::Float, Scalar::Float(f64::INFINITY))
        }
        "-.inf" | "-.Inf" | "-.INF" => (Tag::Float, Scalar::Float(f64::NEG_INFINITY)),
        _ => return None,
    })
}

impl Scalar {
    /// The JSON value the apiserver reads: `YAMLToJSON` writes Go's JSON (a float64 with no
    /// fraction under 1e21 as digits), and the apiserver reads a number without `.` or exponent
    /// that fits 64 bits as an integer, any other as a float. `Err` names what JSON cannot hold
    /// (Go's `json: unsupported value`).
    pub(super) fn to_json(&self) -> Result<Value, String> {
        Ok(match self {
            Scalar::Null => Value::Null,
            Scalar::Bool(b) => Value::Bool(*b),
            Scalar::Int(i) => Value::from(*i),
            // Digits too large for an int64: a float.
            Scalar::Uint(u) => float(*u as f64)?,
            Scalar::Float(f) => float(*f)?,
            Scalar::Str(s) => Value::String(s.clone()),
        })
    }

    /// The JSON key `YAMLToJSON` makes of a key: a string as is, an integer in decimal, a bool as
    /// `true`/`false`, a float as Go's `FormatFloat(f, 'g', -1, 32)`. Null and integers above
    /// `i64::MAX` are refused, as there.
    pub(super) fn to_key(&self) -> Result<String, String> {
        match self {
            Scalar::Str(s) => Ok(s.clone()),
            Scalar::Int(i) => Ok(i.to_string()),
            Scalar::Bool(b) => Ok(b.to_string()),
            Scalar::Float(f) => Ok(go_format_g32(*f)),
            Scalar::Null => Err(
                "a null key (`~`, `null` or nothing) cannot become a JSON key; quote it".to_owned(),
            ),
            Scalar::Uint(u) => Err(format!(
                "the key {u} is an integer above 2^63-1, which kubectl cannot make a JSON key of; quote it"
            )),
        }
    }
}

/// A float64 as JSON: see [`Scalar::to_json`].
fn float(f: f64) -> Result<Value, String> {
    if f.is_nan() || f.is_infinite() {
        let name = if f.is_nan() {
            "NaN"
        } else if f > 0.0 {
            "+Inf"
        } else {
            "-Inf"
        };
        return Err(format!(
            "the number is {name}, which JSON cannot hold (kubectl: \"json: unsupported value: {name}\"); quote it if it is text"
        ));
    }
    // 2^63: the first float64 an int64 cannot hold.
    const TWO_TO_63: f64 = 9_223_372_036_854_775_808.0;
    if f.fract() == 0.0 && f.abs() < 1e21 && (-TWO_TO_63..TWO_TO_63).contains(&f) {
        return Ok(Value::from(f as i64));
    }
    Ok(Number::from_f64(f).map_or(Value::Null, Value::Number))
}
