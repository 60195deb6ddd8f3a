//! Go's number parsing and formatting (`strconv`), `time.Parse` and base64, as go-yaml v2 calls
//! them to resolve a scalar and sigs.k8s.io/yaml to make a key: each function says which Go
//! function it stands for, and what of it go-yaml reaches.

use regex::Regex;
use std::sync::LazyLock;

/// go-yaml's `yamlStyleFloat`, `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`: a decimal
/// float as YAML writes one.
pub(super) fn yaml_style_float(text: &str) -> bool {
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
pub(super) fn finite(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Go's `strconv.ParseFloat(s, 64)` for text starting with `.`: underscores only between digits,
/// then a decimal float.
pub(super) fn go_parse_float(text: &str) -> Option<f64> {
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
pub(super) fn go_parse_uint(text: &str, base: u32) -> Option<u64> {
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
pub(super) fn go_parse_int(text: &str, base: u32) -> Option<i64> {
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
pub(super) fn is_timestamp(text: &str) -> bool {
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
pub(super) fn binary(text: &str) -> Result<String, String> {
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

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`, with go-yaml's names for the infinities and NaN:
/// the shortest digits of the float32, in exponent form when the exponent is below -4 or at
/// least 6.
pub(super) fn go_format_g32(f: f64) -> String {
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
