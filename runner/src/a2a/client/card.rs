//! Fetching and trusting an agent card (rules 5.13–5.17, 6.3, 6.18; anchors 20–25): through the
//! guard within the card cap, duplicate keys refused, the trust digest compared with the pin
//! (`cardSHA256`, else the pin store, pinned on first use), and the JSON-RPC interface checked:
//! https (plain http only to loopback) and on the entry's origins.

use super::endpoint::A2aEndpoint;
use super::outcome::{CallError, ErrorType};
use super::signature::{SignaturePolicy, jku_urls, verify_card};
use crate::a2a::types::{AgentCard, BINDING_JSONRPC};
use crate::net::GuardedClient;
use crate::net::is_loopback_host;
use crate::pin::store::{PinCheck, Pins};
use crate::pin::{card_trust_digest, parse_json_no_duplicate_keys};
use crate::safety::output::{decode, plain_name};
use orrery_crds::jwks::{Jwks, parse_jwks};
use reqwest::Url;
use reqwest::header::ACCEPT;
use std::collections::BTreeMap;

/// A card that passed every check.
#[derive(Clone, Debug)]
pub struct TrustedCard {
    /// The card.
    pub card: AgentCard,
    /// Its trust digest.
    pub digest: String,
    /// Where JSON-RPC requests go.
    pub rpc_url: Url,
    /// The interface's tenant, copied into every request.
    pub tenant: Option<String>,
    /// Whether the agent streams (`SendStreamingMessage`).
    pub streaming: bool,
}

impl TrustedCard {
    /// The JSON-RPC method a message goes by: `SendStreamingMessage` when the agent streams,
    /// else `SendMessage`.
    pub fn send_method(&self) -> &'static str {
        if self.streaming {
            "SendStreamingMessage"
        } else {
            "SendMessage"
        }
    }
}

fn refused(entry: &str, why: impl std::fmt::Display) -> CallError {
    CallError::new(
        ErrorType::CardRefused,
        format!("the card of remote agent '{entry}' was refused: {why}"),
    )
}

/// Fetches the card of `endpoint` and checks it against its pin in `pins`.
pub async fn fetch_trusted_card(
    client: &GuardedClient,
    endpoint: &A2aEndpoint,
    pins: &dyn Pins,
) -> Result<TrustedCard, CallError> {
    let entry = &endpoint.entry;
    let request = client
        .get(endpoint.card_url.as_str())
        .map_err(|e| CallError::from_card_fetch(entry, e))?
        .header(ACCEPT, "application/json")
        .header(crate::mcp::HOP_HEADER, "1");
    let fetch = client.fetch_capped(request, endpoint.max_card_bytes);
    let (status, _, body) = tokio::time::timeout(endpoint.message_timeout, fetch)
        .await
        .map_err(|_| {
            CallError::new(
                ErrorType::Timeout,
                format!("the card of remote agent '{entry}' did not arrive in time"),
            )
        })?
        .map_err(|e| CallError::from_card_fetch(entry, e))?;
    if !status.is_success() {
        return Err(CallError::new(
            ErrorType::RemoteError,
            format!("the card of remote agent '{entry}' could not be fetched: HTTP {status}"),
        ));
    }
    let value = parse_json_no_duplicate_keys(&body).map_err(|e| refused(entry, e))?;
    if let Some(policy) = &endpoint.card_signature {
        let fetched = fetch_key_sets(client, endpoint, &value, policy).await?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let verified = verify_card(&value, policy, &fetched, now)
            .map_err(|e| refused(entry, format!("its signature: {e}")))?;
        tracing::debug!(entry = %entry, kid = %verified.kid, alg = verified.alg, "agent card signature verified");
    }
    let digest = card_trust_digest(&value).map_err(|e| refused(entry, e))?;
    check_pin(endpoint, pins, &digest)?;
    let card: AgentCard = decode(value)
        .map_err(|e| refused(entry, format!("it is not an A2A 1.0 agent card ({e})")))?;
    let interface = card.preferred_interface(BINDING_JSONRPC).ok_or_else(|| {
        refused(entry, "it has no JSON-RPC interface for protocol version 1.x (only the JSON-RPC binding is called)")
    })?;
    let rpc_url = check_rpc_target(endpoint, &interface.url)?;
    let tenant = interface.tenant.clone().filter(|t| !t.is_empty());
    let streaming = card.capabilities.streaming == Some(true);
    Ok(TrustedCard {
        card,
        digest,
        rpc_url,
        tenant,
        streaming,
    })
}

/// Fetches, through the guard and within the card's cap, the key sets the card's signatures
/// name by `jku` (only those the entry's own keys cannot stand in for, and only on the card's
/// own origin: a `jku` anywhere else is not fetched, so its signature counts as untrusted).
async fn fetch_key_sets(
    client: &GuardedClient,
    endpoint: &A2aEndpoint,
    card: &serde_json::Value,
    policy: &SignaturePolicy,
) -> Result<BTreeMap<String, Jwks>, CallError> {
    let entry = &endpoint.entry;
    let card_origin = crate::net::Origin::of(&endpoint.card_url).map_err(|e| refused(entry, e))?;
    let mut out = BTreeMap::new();
    for jku in jku_urls(card, policy) {
        let same_origin = crate::net::parse_url(&jku)
            .ok()
            .and_then(|url| crate::net::Origin::of(&url).ok())
            .is_some_and(|origin| origin == card_origin);
        if !same_origin {
            tracing::warn!(entry = %entry, jku = %jku, "a card signature names a key set off the card's origin; it is not fetched");
            continue;
        }
        let unreadable = |why: String| {
            refused(
                entry,
                format!("the key set its signature names (jku {jku}) could not be read: {why}"),
            )
        };
        let request = client
            .get(&jku)
            .map_err(|e| unreadable(e.to_string()))?
            .header(ACCEPT, "application/json")
            .header(crate::mcp::HOP_HEADER, "1");
        let fetch = client.fetch_capped(request, endpoint.max_card_bytes);
        let (status, _, body) = tokio::time::timeout(endpoint.message_timeout, fetch)
            .await
            .map_err(|_| unreadable("it did not arrive in time".into()))?
            .map_err(|e| unreadable(e.to_string()))?;
        if !status.is_success() {
            return Err(unreadable(format!("HTTP {status}")));
        }
        let set = parse_jwks(&body).map_err(|e| unreadable(e.to_string()))?;
        out.insert(jku, set);
    }
    Ok(out)
}

/// Compares the digest with `cardSHA256`, or with the pin store (pinning it on first use).
fn check_pin(endpoint: &A2aEndpoint, pins: &dyn Pins, digest: &str) -> Result<(), CallError> {
    let entry = &endpoint.entry;
    if let Some(expected) = &endpoint.card_sha256 {
        if !expected.eq_ignore_ascii_case(digest) {
            return Err(refused(
                entry,
                format!(
                    "its trust fields (interfaces, security, skills) digest to {digest}, not the cardSHA256 {expected} the entry pins; the entry is disabled until an admin reviews the card and re-pins it"
                ),
            ));
        }
        return Ok(());
    }
    match pins.check_card(&endpoint.pin_key(), entry, digest) {
        Ok(PinCheck::PinnedNow | PinCheck::Matches) => Ok(()),
        Ok(PinCheck::Changed { pinned }) => Err(refused(
            entry,
            format!(
                "its trust fields (interfaces, security, skills) changed since the card was pinned ({pinned} then, {digest} now); the entry is disabled until re-pinned (`orrery pins reset {entry}`, or set cardSHA256)"
            ),
        )),
        Ok(PinCheck::Unpinned) => Err(refused(
            entry,
            format!(
                "its card (trust digest {digest}) has no pin in {}; the entry is used only once it is probed and its pin accepted",
                pins.describe()
            ),
        )),
        Err(e) => Err(CallError::new(
            ErrorType::Misconfigured,
            format!("remote agent '{entry}': {e}"),
        )),
    }
}

/// An RPC target must parse, be https (plain http only to a loopback host), and be on one of
/// the entry's origins (rule 5.31).
fn check_rpc_target(endpoint: &A2aEndpoint, url: &str) -> Result<Url, CallError> {
    let entry = &endpoint.entry;
    let parsed =
        crate::net::parse_url(url).map_err(|e| refused(entry, format!("its JSON-RPC URL: {e}")))?;
    let loopback = parsed.host().is_some_and(|h| is_loopback_host(&h));
    match parsed.scheme() {
        "https" => {}
        "http" if loopback => {}
        scheme => {
            return Err(refused(
                entry,
                format!(
                    "its JSON-RPC URL uses {}; RPC targets must be https (plain http only on loopback)",
                    plain_name(scheme).unwrap_or("another scheme")
                ),
            ));
        }
    }
    let origin = crate::net::Origin::of(&parsed).map_err(|e| refused(entry, e))?;
    if !endpoint.origins.contains(&origin) {
        let allowed: Vec<String> = endpoint.origins.iter().map(ToString::to_string).collect();
        return Err(refused(
            entry,
            format!(
                "its JSON-RPC URL is on {origin}, which is not one of the entry's origins ({}); add it to serviceOrigins if it is meant",
                allowed.join(", ")
            ),
        ));
    }
    Ok(parsed)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::net::Origin;
    use orrery_crds::registry::Effect;

    fn endpoint(card_url: &str, service: &[&str]) -> A2aEndpoint {
        let url = Url::parse(card_url).unwrap();
        let mut origins = vec![Origin::of(&url).unwrap()];
        origins.extend(service.iter().map(|s| Origin::parse(s).unwrap()));
        A2aEndpoint {
            entry: "writer".into(),
            card_url: url,
            card_sha256: None,
            skills: vec!["draft".into()],
            effect: Effect::ReadOnly,
            origins,
            private_network: false,
            bearer: None,
            message_timeout: std::time::Duration::from_secs(5),
            max_reply_bytes: 1024,
            max_card_bytes: 1024,
            card_signature: None,
        }
    }

    #[test]
    fn rpc_targets_are_checked_as_a_table() {
        let ep = endpoint(
            "https://agent.example.com/.well-known/agent-card.json",
            &["https://rpc.example.com"],
        );
        let cases = [
            ("https://agent.example.com/rpc", true),
            ("https://agent.example.com:443/", true),
            ("https://rpc.example.com/a2a", true),
            ("https://agent.example.com:8443/rpc", false),
            ("http://agent.example.com/rpc", false),
            ("https://evil.example.com/rpc", false),
            ("https://agent.example.com.evil.example/rpc", false),
            ("not a url", false),
        ];
        for (url, ok) in cases {
            let result = check_rpc_target(&ep, url);
            assert_eq!(result.is_ok(), ok, "{url}: {result:?}");
            if let Err(e) = result {
                assert_eq!(e.error_type, ErrorType::CardRefused, "{url}");
            }
        }
        let local = endpoint("http://127.0.0.1:7802/.well-known/agent-card.json", &[]);
        assert!(
            check_rpc_target(&local, "http://127.0.0.1:7802/").is_ok(),
            "plain http on loopback"
        );
        assert!(
            check_rpc_target(&local, "http://127.0.0.1:7803/").is_err(),
            "another port is another origin"
        );
    }

    #[test]
    fn a_config_pin_is_compared_and_a_first_use_pin_is_kept() {
        let pins = crate::pin::store::PinStore::in_memory();
        let mut ep = endpoint("https://agent.example.com/.well-known/agent-card.json", &[]);
        assert!(check_pin(&ep, &pins, "aa").is_ok(), "pinned on first use");
        assert!(check_pin(&ep, &pins, "aa").is_ok());
        let changed = check_pin(&ep, &pins, "bb").unwrap_err();
        assert_eq!(changed.error_type, ErrorType::CardRefused);
        assert!(
            changed.message.contains("orrery pins reset writer"),
            "{}",
            changed.message
        );
        ep.card_sha256 = Some("cc".into());
        assert!(
            check_pin(&ep, &pins, "CC").is_ok(),
            "cardSHA256 wins over the store"
        );
        assert!(check_pin(&ep, &pins, "aa").is_err());
    }
}
