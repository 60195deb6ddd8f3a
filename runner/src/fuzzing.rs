//! The runner's parsers of outside input, each as one property over arbitrary bytes: the
//! entry points of the coverage-guided fuzz targets (`fuzz/`, run by `scripts/fuzz.sh`) and of
//! the replay of their committed corpus (`runner/tests/fuzz_corpus.rs`, every `cargo test`). A
//! property holds when the function returns `Ok`; a panic anywhere below is a failure too.
//! Bounded time is libFuzzer's `-timeout` there and the replay's bound here.
//!
//! | target | what it reads | beyond "no panic" |
//! |---|---|---|
//! | [`sse`] | a remote's SSE stream (A2A streaming, MCP) | the same events however the bytes are cut; each event's data read as an A2A stream event and applied to a task |
//! | [`json_rpc`] | a JSON-RPC request to the runner's A2A server, and a remote's JSON-RPC reply | a reply accepted answers our own id |
//! | [`agent_card`] | a remote's agent card | the signed payload never covers `signatures`; no card verifies without a trusted key |
//! | [`model_reply`] | a reply of each model provider (Anthropic, OpenAI, Gemini) | — |
//! | [`ca_bundle`] | a deployment's trusted CA bundle (PEM) | — |

use crate::a2a::client::signature::{SignaturePolicy, jku_urls, signed_payload, verify_card};
use crate::a2a::types::{AgentCard, BINDING_JSONRPC, RequestId, StreamResponse, Task};
use crate::model::wire::IdGenerator;
use crate::net::{SseEvent, SseParseError, SseParser};
use crate::pin::{card_trust_digest, parse_json_no_duplicate_keys};
use crate::safety::output::decode;
use serde_json::Value;

/// The largest event [`sse`] lets the parser hold (small, so the cap is reached too).
const SSE_EVENT_BYTES: u64 = 4096;

/// The events of `bytes` fed to a fresh parser in pieces ending at `ends` (`Err` once a piece
/// errs).
fn sse_events(bytes: &[u8], ends: &[usize]) -> Result<Vec<SseEvent>, SseParseError> {
    let mut parser = SseParser::new(SSE_EVENT_BYTES);
    let mut out = Vec::new();
    let mut at = 0;
    for &end in ends.iter().chain(std::iter::once(&bytes.len())) {
        let end = end.clamp(at, bytes.len());
        out.extend(parser.push(bytes.get(at..end).unwrap_or_default())?);
        at = end;
    }
    Ok(out)
}

/// A remote's SSE stream: the first byte says how many cut points follow (up to 7, one byte
/// each), the rest is the stream. The events are the same whether the stream comes whole or
/// cut there (or the same error), and each event's data is read as an A2A stream event and
/// applied to the task followed, which never panics.
pub fn sse(data: &[u8]) -> Result<(), String> {
    let cuts =
        usize::from(data.first().copied().unwrap_or(0) % 8).min(data.len().saturating_sub(1));
    let (head, stream) = data.split_at((1 + cuts).min(data.len()));
    let mut ends: Vec<usize> = head.iter().skip(1).map(|b| usize::from(*b)).collect();
    ends.sort_unstable();
    let whole = sse_events(stream, &[]);
    let cut = sse_events(stream, &ends);
    if whole != cut {
        return Err(format!("whole {whole:?}, cut at {ends:?} {cut:?}"));
    }
    let mut task: Option<Task> = None;
    for event in whole.unwrap_or_default() {
        if let Ok(value) = parse_json_no_duplicate_keys(event.data.as_bytes())
            && let Ok(update) = decode::<StreamResponse>(value)
        {
            let _ = crate::a2a::client::rpc::apply(&mut task, update);
        }
    }
    Ok(())
}

/// JSON-RPC both ways: `data` as a request to the runner's A2A server (read or answered with
/// an error), and as a remote's reply to our request `7`: one accepted answered id 7.
pub fn json_rpc(data: &[u8]) -> Result<(), String> {
    let _ = crate::a2a::server::envelope::parse_envelope(data);
    let ours = RequestId::Number(7);
    if crate::a2a::client::rpc::read_response("fuzz", data, &ours).is_ok() {
        let value = parse_json_no_duplicate_keys(data).map_err(|e| e.to_string())?;
        if value.get("id") != Some(&serde_json::json!(7)) {
            return Err(format!("a reply to another id was accepted: {value}"));
        }
    }
    Ok(())
}

/// A remote's agent card: read, digested for the pin, checked for signatures (with no trusted
/// key none verifies; the signed payload is the same with `signatures` removed) and decoded as
/// an A2A 1.0 card.
pub fn agent_card(data: &[u8]) -> Result<(), String> {
    let Ok(card) = parse_json_no_duplicate_keys(data) else {
        return Ok(());
    };
    let _ = card_trust_digest(&card);
    let policy = SignaturePolicy {
        allow_jku: true,
        ..SignaturePolicy::default()
    };
    let _ = jku_urls(&card, &policy);
    if let Ok(verified) = verify_card(&card, &policy, &Default::default(), 0) {
        return Err(format!(
            "a card verified with no trusted key (kid {})",
            verified.kid
        ));
    }
    let mut unsigned = card.clone();
    if let Some(object) = unsigned.as_object_mut() {
        object.remove("signatures");
    }
    if signed_payload(&card) != signed_payload(&unsigned) {
        return Err("the signed payload covers the signatures".to_owned());
    }
    if let Ok(card) = decode::<AgentCard>(card) {
        let _ = card.preferred_interface(BINDING_JSONRPC);
    }
    Ok(())
}

/// A model's reply, read by each provider's parser.
pub fn model_reply(data: &[u8]) -> Result<(), String> {
    let Ok(reply) = serde_json::from_slice::<Value>(data) else {
        return Ok(());
    };
    let ids = IdGenerator::default();
    let _ = crate::model::anthropic::parse_reply(&reply, &ids);
    let _ = crate::model::openai::parse_reply(&reply, &ids);
    let _ = crate::model::gemini::parse_reply(&reply, &ids);
    Ok(())
}

/// A trusted CA bundle (PEM): the guarded client's TLS configuration is built with it or
/// refused.
pub fn ca_bundle(data: &[u8]) -> Result<(), String> {
    let _ = crate::net::tls::client_config(&[data.to_vec()]);
    Ok(())
}

/// A property over arbitrary bytes: `Err` says how it broke.
pub type Property = fn(&[u8]) -> Result<(), String>;

/// Every target by name, as `scripts/fuzz.sh` and the corpus replay call them.
pub const TARGETS: [(&str, Property); 5] = [
    ("sse", sse),
    ("json_rpc", json_rpc),
    ("agent_card", agent_card),
    ("model_reply", model_reply),
    ("ca_bundle", ca_bundle),
];
