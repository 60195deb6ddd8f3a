//! Fuzzing of the runner's parsers of remote input (issue 27 §3), property-based (proptest, on
//! the stable toolchain): SSE frames however the stream is cut, JSON-RPC envelopes to the A2A
//! server, the three model providers' replies, JSON with duplicate keys and its RFC 8785
//! canonical form (what pins an agent card), signed cards' key sets, protected headers and
//! signatures, and addresses and allowlist rules. Beyond "no
//! panic": the same events whatever the chunking, canonical JSON idempotent, bounded time.
//!
//! 256 cases a property (`cargo test -p orrery-runner --lib fuzz_tests`); more with
//! `ORRERY_FUZZ_CASES` (docs/reliability.md, "Fuzzing"). Inputs that failed are kept in
//! `src/fuzz_tests.proptest-regressions` and replayed first.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::net::{AllowRule, SseEvent, SseParseError, SseParser, parse_url};
use crate::pin::{canonical_json, parse_json_no_duplicate_keys};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::time::{Duration, Instant};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("ORRERY_FUZZ_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(256),
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..ProptestConfig::default()
    }
}

/// The most one small input may take (a debug build on a busy 2-core machine).
const BOUND: Duration = Duration::from_secs(5);

/// Any JSON value, up to a few levels deep, numbers of every kind included.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// JSON shaped like a provider's reply (its keys at its places), with anything as leaves.
fn model_reply() -> impl Strategy<Value = Value> {
    (json_value(), json_value(), json_value(), ".{0,8}").prop_map(|(a, b, c, text)| {
        json!({
            // Anthropic
            "content": [{"type": "text", "text": text}, {"type": "tool_use", "id": a, "name": b, "input": c}],
            "stop_reason": b, "usage": {"input_tokens": a, "output_tokens": c},
            // OpenAI
            "choices": [{"message": {"content": a, "tool_calls": [{"id": b, "type": "function",
                         "function": {"name": c, "arguments": text}}]}, "finish_reason": a}],
            // Gemini
            "candidates": [{"content": {"parts": [{"text": text}, {"functionCall": {"name": a, "args": b}, "thoughtSignature": c}]},
                            "finishReason": b}],
            "usageMetadata": {"promptTokenCount": a, "candidatesTokenCount": b},
        })
    })
}

/// Pieces of an SSE stream: fields, comments, every line ending, long values, bytes that are
/// not UTF-8.
fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        prop::sample::select(vec![
            &b"data: "[..],
            b"data:",
            b"event: ",
            b"id: ",
            b"retry: ",
            b"retry: 10",
            b": c",
            b"\n",
            b"\r",
            b"\r\n",
            b"\n\n",
            b"x",
            b"{\"a\":1}",
            b" ",
            b"\xff",
            b"\xc3",
            b"\xa9",
            b"id: a\0b",
            b"data",
            b":",
        ])
        .prop_map(<[u8]>::to_vec),
        prop::collection::vec(any::<u8>(), 0..8),
    ];
    prop::collection::vec(piece, 0..60).prop_map(|pieces| pieces.concat())
}

/// The events of `bytes` fed in `cuts` pieces (`Err` once a piece errs).
fn sse_events(bytes: &[u8], cuts: &[usize]) -> Result<Vec<SseEvent>, SseParseError> {
    let mut parser = SseParser::new(64);
    let mut out = Vec::new();
    let mut at = 0;
    let mut ends: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    ends.push(bytes.len());
    ends.sort_unstable();
    for end in ends {
        out.extend(parser.push(&bytes[at..end])?);
        at = end;
    }
    Ok(out)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn an_sse_stream_gives_the_same_events_however_it_is_cut(
        bytes in sse_bytes(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let whole = sse_events(&bytes, &[]);
        let cut = sse_events(&bytes, &cuts);
        match (&whole, &cut) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            _ => prop_assert!(false, "whole {:?}, cut {:?}", whole, cut),
        }
    }

    #[test]
    fn canonical_json_read_back_is_canonical_json_again(value in json_value()) {
        let Ok(once) = canonical_json(&value) else {
            return Ok(());
        };
        let back = parse_json_no_duplicate_keys(once.as_bytes()).unwrap();
        prop_assert_eq!(canonical_json(&back).unwrap(), once);
    }

    #[test]
    fn any_bytes_as_json_are_read_or_refused_never_a_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..200),
        value in json_value(),
    ) {
        let _ = parse_json_no_duplicate_keys(&bytes);
        // A key written twice is refused wherever it is.
        let text = serde_json::to_string(&json!({"a": value, "b": 1})).unwrap();
        // (`b` is the last key written: the outer one, whatever `value` holds.)
        let at = text.rfind("\"b\":1").unwrap();
        let twice = format!("{}\"a\":1{}", &text[..at], &text[at + 5..]);
        prop_assert!(parse_json_no_duplicate_keys(twice.as_bytes()).is_err(), "{}", twice);
    }

    #[test]
    fn any_json_rpc_body_to_the_a2a_server_is_answered_never_a_panic(
        value in json_value(),
        bytes in prop::collection::vec(any::<u8>(), 0..100),
        method in prop::sample::select(vec!["SendMessage", "GetTask", "CancelTask", "x"]),
    ) {
        use crate::a2a::server::envelope::parse_envelope;
        let _ = parse_envelope(&bytes);
        let _ = parse_envelope(value.to_string().as_bytes());
        let request = json!({"jsonrpc": "2.0", "id": value, "method": method, "params": value});
        let _ = parse_envelope(request.to_string().as_bytes());
    }

    #[test]
    fn any_reply_of_any_provider_is_read_or_refused_never_a_panic(
        reply in prop_oneof![json_value(), model_reply()],
    ) {
        use crate::model::wire::IdGenerator;
        let started = Instant::now();
        let ids = IdGenerator::default();
        let _ = crate::model::anthropic::parse_reply(&reply, &ids);
        let _ = crate::model::openai::parse_reply(&reply, &ids);
        let _ = crate::model::gemini::parse_reply(&reply, &ids);
        prop_assert!(started.elapsed() < BOUND);
    }

    #[test]
    fn any_signed_card_key_set_or_protected_header_is_read_or_refused_in_bounded_time(
        card in json_value(),
        keys in json_value(),
        jwk in (json_value(), json_value(), ".{0,12}", prop::sample::select(vec!["EC", "RSA", "OKP", "oct", ""])),
        header in json_value(),
        bytes in prop::collection::vec(any::<u8>(), 0..120),
        now in any::<i64>(),
    ) {
        use crate::a2a::client::signature::{SignaturePolicy, jku_urls, signed_payload, verify_card};
        use orrery_crds::jwks::{parse_jwks, parse_protected_header, to_base64url};
        let started = Instant::now();
        let (x, crv, kid, kty) = jwk;
        let set = json!({"keys": [keys, {"kty": kty, "crv": crv, "kid": kid, "x": x, "y": x, "n": x, "e": x}]});
        let _ = parse_jwks(set.to_string().as_bytes());
        let _ = parse_jwks(&bytes);
        let _ = parse_protected_header(&to_base64url(header.to_string().as_bytes()));
        let _ = parse_protected_header(&String::from_utf8_lossy(&bytes));
        // Any card, with anything as its signatures, is verified or refused, never a panic;
        // the payload never covers the signatures.
        let mut signed = json!({"card": card.clone(), "signatures": [{"protected": to_base64url(header.to_string().as_bytes()), "signature": kid}, card.clone()]});
        let policy = SignaturePolicy { allow_jku: true, ..SignaturePolicy::default() };
        let _ = jku_urls(&signed, &policy);
        prop_assert!(verify_card(&signed, &policy, &Default::default(), now).is_err());
        let with = signed_payload(&signed);
        signed.as_object_mut().unwrap().remove("signatures");
        prop_assert_eq!(with, signed_payload(&signed));
        prop_assert!(started.elapsed() < BOUND);
    }

    #[test]
    fn any_url_or_allowlist_rule_is_read_or_refused_never_a_panic(text in ".{0,60}") {
        let _ = parse_url(&text);
        let _ = AllowRule::parse(&text);
        let _ = parse_url(&format!("https://{text}"));
        let _ = AllowRule::parse(&format!("10.0.0.0/{text}"));
    }
}
