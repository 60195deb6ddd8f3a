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

use regex::Regex;
use serde_json::{Number, Value};
use std::sync::LazyLock;

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

/// go-yaml's `yamlStyleFloat`, `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`: a decimal
/// float as YAML writes one.
fn yaml_style_float(text: &str) -> bool {
    let b = text.strip_prefix(['+', '-']).unwrap_or(text).as_bytes();
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let whole = digits(0);
    let mut i = whole;
    if b.get(i) == Some(&b'.') {
        let fraction = digits(i + 1);
        if whole == 0 && fraction == 0 {
            return false;
        }
        i += 1 + fraction;
    } else if whole == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exponent = digits(i);
        if exponent == 0 {
            return false;
        }
        i += exponent;
    }
    i == b.len()
}

/// A decimal float (already in YAML's float syntax) as Go's `ParseFloat` reads it: `None` when
/// it overflows (Go: a range error), 0 when it underflows (Go: no error).
fn finite(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Go's `strconv.ParseFloat(s, 64)` for text starting with `.`: underscores only between digits,
/// then a decimal float.
fn go_parse_float(text: &str) -> Option<f64> {
    if text.contains('_') && !underscores_ok(text) {
        return None;
    }
    let plain = text.replace('_', "");
    if yaml_style_float(&plain) {
        finite(&plain)
    } else {
        None
    }
}

/// Go's `underscoreOK`: every `_` between two digits (a base prefix counts as a digit).
fn underscores_ok(text: &str) -> bool {
    let s = text.strip_prefix(['+', '-']).unwrap_or(text).as_bytes();
    #[derive(PartialEq)]
    enum Saw {
        Start,
        Digit,
        Underscore,
        Other,
    }
    let mut saw = Saw::Start;
    let mut i = 0;
    let mut hex = false;
    if s.len() >= 2 && s[0] == b'0' && matches!(s[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        i = 2;
        saw = Saw::Digit;
        hex = s[1].eq_ignore_ascii_case(&b'x');
    }
    for &c in &s[i..] {
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = Saw::Digit;
        } else if c == b'_' {
            if saw != Saw::Digit {
                return false;
            }
            saw = Saw::Underscore;
        } else {
            if saw == Saw::Underscore {
                return false;
            }
            saw = Saw::Other;
        }
    }
    saw != Saw::Underscore
}

/// Go's `strconv.ParseUint(s, base, 64)` (no sign, no underscores: go-yaml removed them). Base 0
/// reads a prefix: `0x`, `0o`, `0b` (either case) or a leading `0` (octal).
fn go_parse_uint(text: &str, base: u32) -> Option<u64> {
    let bytes = text.as_bytes();
    if bytes.is_empty() {
        return None;
    }
    let (digits, radix) = if base != 0 {
        (text, base)
    } else if bytes[0] == b'0' {
        match bytes.get(1).map(u8::to_ascii_lowercase) {
            Some(b'b') if bytes.len() >= 3 => (&text[2..], 2),
            Some(b'o') if bytes.len() >= 3 => (&text[2..], 8),
            Some(b'x') if bytes.len() >= 3 => (&text[2..], 16),
            _ => (&text[1..], 8),
        }
    } else {
        (text, 10)
    };
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    if digits.is_empty() {
        // Only "0" (its prefix was the whole text).
        return Some(0);
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Go's `strconv.ParseInt(s, base, 64)`: an optional sign, then [`go_parse_uint`], in range.
fn go_parse_int(text: &str, base: u32) -> Option<i64> {
    let (negative, rest) = match text.as_bytes().first() {
        Some(b'+') => (false, &text[1..]),
        Some(b'-') => (true, &text[1..]),
        _ => (false, text),
    };
    let magnitude = go_parse_uint(rest, base)?;
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Go's `time.Parse` with go-yaml's four layouts (`2006-1-2T15:4:5.999999999Z07:00`, the same
/// with `t`, `2006-1-2 15:4:5.999999999`, `2006-1-2`), numbers in range. Only `!!timestamp`
/// needs it: untagged, a timestamp stays its text.
fn is_timestamp(text: &str) -> bool {
    static TIMESTAMP: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(
            r"^([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?:(?:[Tt]([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:\.[0-9]+)?(?:Z|[+-]([0-9]{2}):([0-9]{2})))|(?: ([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:\.[0-9]+)?))?$",
        )
        .ok()
    });
    let Some(caps) = TIMESTAMP.as_ref().and_then(|re| re.captures(text)) else {
        return false;
    };
    let n = |i: usize| -> Option<u32> { caps.get(i).and_then(|m| m.as_str().parse().ok()) };
    let (Some(year), Some(month), Some(day)) = (n(1), n(2), n(3)) else {
        return false;
    };
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    let in_range = |i: usize, max: u32| n(i).is_none_or(|v| v <= max);
    (1..=days).contains(&day)
        && in_range(4, 23)
        && in_range(5, 59)
        && in_range(6, 59)
        && in_range(7, 23)
        && in_range(8, 59)
        && in_range(9, 23)
        && in_range(10, 59)
        && in_range(11, 59)
}

/// A `!!binary` scalar as go-yaml decodes it: standard base64 (padded; line breaks skipped), the
/// bytes read as text (invalid UTF-8 replaced, as Go's JSON encoder does).
fn binary(text: &str) -> Result<String, String> {
    let refused = || "!!binary value contains invalid base64 data".to_owned();
    let symbols: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b'\r' | b'\n'))
        .collect();
    if !symbols.len().is_multiple_of(4) {
        return Err(refused());
    }
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut bytes = Vec::with_capacity(symbols.len() / 4 * 3);
    let quads = symbols.chunks(4).count();
    for (index, quad) in symbols.chunks(4).enumerate() {
        let padding = quad.iter().rev().take_while(|&&c| c == b'=').count();
        let last = index + 1 == quads;
        if padding > 2 || (padding > 0 && !last) {
            return Err(refused());
        }
        let mut group = 0u32;
        for &c in &quad[..4 - padding] {
            group = (group << 6) | value(c).ok_or_else(refused)?;
        }
        group <<= 6 * padding as u32;
        let [_, a, b, c] = group.to_be_bytes();
        bytes.extend_from_slice(&[a, b, c][..3 - padding]);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
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

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`, with go-yaml's names for the infinities and NaN:
/// the shortest digits of the float32, in exponent form when the exponent is below -4 or at
/// least 6.
fn go_format_g32(f: f64) -> String {
    let x = f as f32;
    if x.is_nan() {
        return ".nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { ".inf" } else { "-.inf" }.to_owned();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    // Rust's shortest round-trip digits, as `d.ddde±x`.
    let shortest = format!("{x:e}");
    let (mantissa, exponent) = shortest.split_once('e').unwrap_or((&shortest, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..6).contains(&exponent) {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        return format!("{sign}{first}{fraction}e{exp_sign}{:02}", exponent.abs());
    }
    // The decimal point sits `point` digits in.
    let point = exponent + 1;
    let n = digits.len() as i32;
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if point >= n {
        format!("{digits}{}", "0".repeat((point - n) as usize))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{body}")
}
