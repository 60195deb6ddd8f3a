//! Signed agent cards (A2A §8.4; security case 25): an entry with `cardSignature` takes a card
//! only when one of its JWS signatures verifies with a trusted, unexpired key.
//!
//! The signed payload is the card as served, without `signatures`, with empty strings, lists
//! and objects (and nulls) dropped at every depth, in RFC 8785 canonical JSON: what the A2A
//! SDK's signer covers (`a2a.utils.signing`). Each signature is a detached JWS: the signing input
//! is `protected || "." || base64url(payload)`. Keys come from the entry's JWKS, or, when the
//! entry allows it, from the key set a signature's `jku` names on the card's own origin
//! (fetched through the network guard by the caller, [`jku_urls`]).
//!
//! A card passes when at least one signature verifies with a trusted key and none by a trusted
//! key fails: a signature by a known key over other bytes means the card was changed after it
//! was signed. Signatures by keys nobody trusts are passed over; a key past its `exp` vouches
//! for nothing.

use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED, ED25519, RSA_PKCS1_2048_8192_SHA256, RsaPublicKeyComponents,
    UnparsedPublicKey,
};
use orrery_crds::jwks::{
    Jwks, ProtectedHeader, PublicKey, TrustedKey, base64url, parse_protected_header, to_base64url,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Most signatures read from one card.
pub const MAX_SIGNATURES: usize = 8;

/// Deepest nesting the payload is cleaned to (the card parser refuses deeper documents first).
const MAX_DEPTH: usize = 64;

/// What an entry requires of its card's signatures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignaturePolicy {
    /// The entry's trusted keys (`cardSignature.jwks`).
    pub keys: Jwks,
    /// Whether a signature's `jku` on the card's own origin may supply keys.
    pub allow_jku: bool,
}

/// The signature that vouched for a card.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// Its key's `kid`.
    pub kid: String,
    /// Its algorithm.
    pub alg: &'static str,
}

/// One signature of a card, read.
struct Signature {
    header: Result<ProtectedHeader, String>,
    protected: String,
    signature: Option<Vec<u8>>,
}

/// The card's `signatures`, each with its protected header read (or why it could not be).
fn signatures(card: &Value) -> Result<Vec<Signature>, String> {
    let list = match card.get("signatures") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err("its \"signatures\" is not a list".into()),
    };
    if list.len() > MAX_SIGNATURES {
        return Err(format!(
            "it carries {} signatures, more than the {MAX_SIGNATURES} read",
            list.len()
        ));
    }
    Ok(list
        .iter()
        .map(|s| {
            let protected = s.get("protected").and_then(Value::as_str).unwrap_or("");
            Signature {
                header: if protected.is_empty() {
                    Err("it has no \"protected\" header".into())
                } else {
                    parse_protected_header(protected)
                },
                protected: protected.to_owned(),
                signature: s
                    .get("signature")
                    .and_then(Value::as_str)
                    .and_then(base64url),
            }
        })
        .collect())
}

/// The `jku` URLs of the card's signatures whose `kid` the entry's own keys do not hold, when
/// the policy allows `jku` at all; each at most once. The caller fetches them (only on the
/// card's own origin) and hands them to [`verify_card`].
pub fn jku_urls(card: &Value, policy: &SignaturePolicy) -> Vec<String> {
    if !policy.allow_jku {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for signature in signatures(card).unwrap_or_default() {
        if let Ok(header) = signature.header
            && policy.keys.key(&header.kid).is_none()
            && let Some(jku) = header.jku
            && !out.contains(&jku)
        {
            out.push(jku);
        }
    }
    out
}

/// The bytes a card's signatures cover: the card without `signatures`, emptied values dropped,
/// RFC 8785 canonical JSON.
pub fn signed_payload(card: &Value) -> Result<String, String> {
    let mut card = card.clone();
    if let Some(object) = card.as_object_mut() {
        object.remove("signatures");
    }
    let cleaned = clean_empty(card, 0).unwrap_or(Value::Object(Map::new()));
    crate::pin::canonical_json(&cleaned).map_err(|e| e.to_string())
}

/// Drops empty strings, lists and objects and nulls at every depth (`None`: the value itself
/// is empty), as the A2A SDK's signer does before it canonicalizes.
fn clean_empty(value: Value, depth: usize) -> Option<Value> {
    if depth > MAX_DEPTH {
        return Some(value);
    }
    match value {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(items) => {
            let kept: Vec<Value> = items
                .into_iter()
                .filter_map(|v| clean_empty(v, depth + 1))
                .collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::Object(members) => {
            let kept: Map<String, Value> = members
                .into_iter()
                .filter_map(|(k, v)| clean_empty(v, depth + 1).map(|v| (k, v)))
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other),
    }
}

/// Checks `card` against `policy`: at least one signature verifies with a trusted key that has
/// not expired at `now` (seconds since the epoch), and no signature by a trusted key fails.
/// `fetched` holds the key sets fetched from `jku` URLs ([`jku_urls`]), by URL. The error says
/// what each signature lacked, to end "the card … was refused: ".
pub fn verify_card(
    card: &Value,
    policy: &SignaturePolicy,
    fetched: &BTreeMap<String, Jwks>,
    now: i64,
) -> Result<Verified, String> {
    let list = signatures(card)?;
    if list.is_empty() {
        return Err(
            "the entry requires a signed card (spec.a2a.cardSignature) and the card carries no signature; have the agent sign its card, or remove cardSignature".into(),
        );
    }
    let payload = signed_payload(card)?;
    let encoded = to_base64url(payload.as_bytes());
    let mut verified: Option<Verified> = None;
    let mut passed_over = Vec::new();
    for (i, signature) in list.iter().enumerate() {
        let n = i + 1;
        let header = match &signature.header {
            Ok(header) => header,
            Err(why) => {
                passed_over.push(format!("signature {n}: {why}"));
                continue;
            }
        };
        let key = match trusted_key(header, policy, fetched) {
            Some(key) => key,
            None => {
                passed_over.push(format!(
                    "signature {n} is by key {:?}, which is not trusted (trusted: {}{})",
                    header.kid,
                    policy.keys.kids(),
                    if policy.allow_jku {
                        ", and any on the card's own origin named by jku"
                    } else {
                        ""
                    }
                ));
                continue;
            }
        };
        if let Some(expires) = key.expires
            && expires <= now
        {
            passed_over.push(format!(
                "signature {n} is by key {:?}, which expired at {expires} (seconds since the epoch); a key past its exp vouches for nothing, so the agent must sign with a current key",
                header.kid
            ));
            continue;
        }
        if key.key.algorithm() != header.alg {
            return Err(format!(
                "signature {n} says alg {} but key {:?} verifies {} only; the card is not trusted",
                header.alg.name(),
                header.kid,
                key.key.algorithm().name()
            ));
        }
        let input = format!("{}.{encoded}", signature.protected);
        let good = signature
            .signature
            .as_deref()
            .is_some_and(|sig| verifies(&key.key, input.as_bytes(), sig));
        if !good {
            return Err(format!(
                "signature {n} by trusted key {:?} ({}) does not match the card: the card was changed after it was signed, or the signature is not the key's",
                header.kid,
                header.alg.name()
            ));
        }
        verified.get_or_insert(Verified {
            kid: header.kid.clone(),
            alg: header.alg.name(),
        });
    }
    verified.ok_or_else(|| {
        format!(
            "no signature verifies with a trusted key ({})",
            passed_over.join("; ")
        )
    })
}

/// The trusted key a signature names: the entry's own by `kid`, else one from the key set its
/// `jku` named, when that set was fetched.
fn trusted_key<'a>(
    header: &ProtectedHeader,
    policy: &'a SignaturePolicy,
    fetched: &'a BTreeMap<String, Jwks>,
) -> Option<&'a TrustedKey> {
    policy.keys.key(&header.kid).or_else(|| {
        header
            .jku
            .as_ref()
            .filter(|_| policy.allow_jku)
            .and_then(|jku| fetched.get(jku))
            .and_then(|set| set.key(&header.kid))
    })
}

/// Whether `signature` is `key`'s over `input`.
fn verifies(key: &PublicKey, input: &[u8], signature: &[u8]) -> bool {
    match key {
        PublicKey::P256 { x, y } => {
            let mut point = Vec::with_capacity(65);
            point.push(0x04);
            point.extend_from_slice(x);
            point.extend_from_slice(y);
            UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
                .verify(input, signature)
                .is_ok()
        }
        PublicKey::Rsa { n, e } => RsaPublicKeyComponents { n, e }
            .verify(&RSA_PKCS1_2048_8192_SHA256, input, signature)
            .is_ok(),
        PublicKey::Ed25519 { x } => UnparsedPublicKey::new(&ED25519, x)
            .verify(input, signature)
            .is_ok(),
    }
}

#[cfg(test)]
#[path = "signature_tests.rs"]
mod tests;
