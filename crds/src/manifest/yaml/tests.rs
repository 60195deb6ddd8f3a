#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use super::*;
use serde_json::json;

/// The one document of `text`, as the apiserver reads it.
fn read(text: &str) -> Result<Value, YamlError> {
    let mut all = documents(text)?;
    assert_eq!(all.len(), 1, "{text:?}");
    Ok(all.remove(0))
}

/// An expected outcome: the value of `v`, or an error of that kind whose message holds the text.
enum Want {
    Is(Value),
    NotJson(&'static str),
    Syntax(&'static str),
}
use Want::{Is, NotJson, Syntax};

/// The table of YAML 1.1's scalars in `crds/tests/fixtures/yaml-1-1.txt`: each row the text
/// after `v: ` and the JSON value the apiserver reads, or the words of the refusal. The same rows
/// go to the real apiserver in `the_apiserver_and_orrery_validate_read_every_yaml_1_1_scalar_alike_rule_1_81`
/// (`tests/tests/e2e_yaml.rs`).
fn table() -> Vec<(String, Result<Value, String>)> {
    include_str!("../../../tests/fixtures/yaml-1-1.txt")
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let mut stream = serde_json::Deserializer::from_str(line).into_iter::<String>();
            let text = stream.next().unwrap().unwrap();
            let rest = line[stream.byte_offset()..].trim_start();
            let rest = rest.strip_prefix("=> ").unwrap();
            let want = match rest.strip_prefix("refused: ") {
                Some(words) => Err(words.to_owned()),
                None => Ok(serde_json::from_str(rest).unwrap()),
            };
            (text, want)
        })
        .collect()
}

#[test]
fn plain_scalars_resolve_as_yaml_1_1_does_in_kubectl_and_quoted_ones_stay_strings_rule_1_81() {
    let rows = table();
    assert!(rows.len() > 100, "{} rows", rows.len());
    let mut wrong = Vec::new();
    for (text, want) in rows {
        // No line break at the end, as in the table's source: a block scalar keeps none.
        let got = read(&format!("v: {text}")).map(|v| v["v"].clone());
        let ok = match (&got, &want) {
            (Ok(value), Ok(expected)) => value == expected,
            (Err(YamlError::NotJson { message, .. }), Err(words)) => message.contains(words),
            _ => false,
        };
        if !ok {
            wrong.push(format!("{text:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn keys_become_the_strings_kubectl_makes_of_them() {
    #[rustfmt::skip]
    let cases: Vec<(&str, Want)> = vec![
        ("yes: 1", Is(json!({"true": 1}))), ("on: 1", Is(json!({"true": 1}))),
        ("n: 1", Is(json!({"false": 1}))), ("\"yes\": 1", Is(json!({"yes": 1}))),
        ("1: 1", Is(json!({"1": 1}))), ("0x10: 1", Is(json!({"16": 1}))),
        ("1.5: 1", Is(json!({"1.5": 1}))), ("1.0: 1", Is(json!({"1": 1}))),
        ("1e10: 1", Is(json!({"1e+10": 1}))), ("1000000.0: 1", Is(json!({"1e+06": 1}))),
        ("100000.0: 1", Is(json!({"100000": 1}))), ("0.1: 1", Is(json!({"0.1": 1}))),
        ("0.00001: 1", Is(json!({"1e-05": 1}))), ("-0.0: 1", Is(json!({"-0": 1}))),
        ("123456789.0: 1", Is(json!({"1.2345679e+08": 1}))), (".inf: 1", Is(json!({".inf": 1}))),
        ("-.inf: 1", Is(json!({"-.inf": 1}))), (".nan: 1", Is(json!({".nan": 1}))),
        ("2001-12-14: 1", Is(json!({"2001-12-14": 1}))),
        ("~: 1", NotJson("a null key")), (": 1", NotJson("a null key")),
        ("18446744073709551615: 1", NotJson("above 2^63-1")),
        ("[1]: a", NotJson("cannot be a key")), ("{a: 1}: a", NotJson("cannot be a key")),
        // A key and its quoted spelling are one key once JSON.
        ("'1': a\n1: b", Syntax("duplicate key \"1\"")),
        ("yes: a\n'true': b", Syntax("duplicate key \"true\"")),
    ];
    for (text, want) in cases {
        let got = read(text);
        match (&got, &want) {
            (Ok(value), Is(expected)) => assert_eq!(value, expected, "{text:?}"),
            (Err(YamlError::NotJson { message, .. }), NotJson(words))
            | (Err(YamlError::Syntax { message, .. }), Syntax(words)) => {
                assert!(message.contains(words), "{text:?}: {message}")
            }
            _ => panic!("{text:?}: {got:?}"),
        }
    }
}

#[test]
fn aliases_repeat_their_anchor_and_merge_keys_merge_without_overriding() {
    #[rustfmt::skip]
    let cases: Vec<(&str, Want)> = vec![
        ("a: &x yes\nb: *x", Is(json!({"a": true, "b": true}))),
        ("a: &x {b: 1}\nc:\n  <<: *x\n  d: 2", Is(json!({"a": {"b": 1}, "c": {"b": 1, "d": 2}}))),
        ("a: &x {b: 1}\nc: {<<: *x, e: 3}", Is(json!({"a": {"b": 1}, "c": {"b": 1, "e": 3}}))),
        ("c:\n  <<: [{a: 1}, {b: 2}]", Is(json!({"c": {"a": 1, "b": 2}}))),
        ("c:\n  !!merge <<: {a: 1}", Is(json!({"c": {"a": 1}}))),
        ("c:\n  \"<<\": {a: 1}", Is(json!({"c": {"<<": {"a": 1}}}))),
        ("a: &x [1]\nb: *x\nc: *x", Is(json!({"a": [1], "b": [1], "c": [1]}))),
        // kubectl's lenient default lets the later key win; the apiserver's strict field
        // validation refuses, and so do we (rule 1.62).
        ("a: &x {b: 1}\nc:\n  <<: *x\n  b: 2", Syntax("duplicate key \"b\" (a key may appear only once in a mapping; the last would silently win) at line 4 column 3")),
        ("a: &x {b: 1}\nc:\n  b: 2\n  <<: *x", Syntax("duplicate key \"b\" merged by `<<`")),
        ("c:\n  <<: [{a: 1}, {a: 2}]", Syntax("duplicate key \"a\" merged by `<<`")),
        ("a: &x [1]\nc:\n  <<: *x", NotJson("map merge requires map or sequence of maps")),
        ("c:\n  <<: 1", NotJson("map merge requires map or sequence of maps")),
        ("c:\n  <<: [[1]]", NotJson("map merge requires map or sequence of maps")),
        ("v: &a [*a]", Syntax("unknown anchor")),
        ("v: *nowhere", Syntax("")),
    ];
    for (text, want) in cases {
        let got = read(text);
        match (&got, &want) {
            (Ok(value), Is(expected)) => assert_eq!(value, expected, "{text:?}"),
            (Err(YamlError::NotJson { message, .. }), NotJson(words))
            | (Err(YamlError::Syntax { message, .. }), Syntax(words)) => {
                assert!(message.contains(words), "{text:?}: {message}")
            }
            _ => panic!("{text:?}: {got:?}"),
        }
    }
}

#[test]
fn aliases_that_expand_past_the_limit_are_refused_quickly() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..12 {
        let previous = format!("*a{}", level - 1);
        let items = [previous.as_str(); 10].join(", ");
        text.push_str(&format!("a{level}: &a{level} [{items}]\n"));
    }
    let started = std::time::Instant::now();
    let err = documents(&text).unwrap_err();
    assert!(
        matches!(&err, YamlError::Syntax { message, .. } if message.contains("aliases expand to more than")),
        "{err:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn a_long_string_aliased_many_times_is_refused_quickly_though_it_is_few_values() {
    // 64 KiB anchored once, then 300 aliases: 300 values, but 19 MiB of text once expanded
    // (before the byte cap, a body of a few hundred KiB could ask for gigabytes this way).
    let long = "x".repeat(64 * 1024);
    let aliases = vec!["*s"; 300].join(", ");
    let text = format!("s: &s {long}\nl: [{aliases}]\n");
    let started = std::time::Instant::now();
    let err = documents(&text).unwrap_err();
    assert!(
        matches!(&err, YamlError::Syntax { message, .. } if message.contains("MiB of text")),
        "{err:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // A few such aliases are fine.
    let aliases = vec!["*s"; 100].join(", ");
    let text = format!("s: &s {long}\nl: [{aliases}]\n");
    assert!(documents(&text).is_ok());
}

#[test]
fn errors_name_their_document_and_line() {
    let err = documents("a: 1\n---\nb: .inf\n").unwrap_err();
    assert_eq!(
        err,
        YamlError::NotJson {
            document: 2,
            message: "line 3 column 4: the number is +Inf, which JSON cannot hold (kubectl: \"json: unsupported value: +Inf\"); quote it if it is text".to_owned()
        }
    );
    match documents("a: 1\n---\nb: [1, 2\n").unwrap_err() {
        YamlError::Syntax { document, message } => {
            assert_eq!(document, 2);
            assert!(message.contains("line"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_stream_splits_into_documents_with_empty_ones_as_null() {
    let found = documents("---\na: on\n---\n# only a comment\n---\nb: 0x10\n...\n").unwrap();
    assert_eq!(found, [json!({"a": true}), json!(null), json!({"b": 16})]);
    assert_eq!(documents("").unwrap(), Vec::<Value>::new());
    assert_eq!(documents("# nothing\n").unwrap(), Vec::<Value>::new());
}
