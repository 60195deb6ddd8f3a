#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Card signatures made here with aws-lc-rs's signers (the interop suite checks cards signed by
//! the A2A SDK's own signer, PyJWT underneath: `tests/tests/interop_a2a.rs`).

use super::*;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::{KeySize, PublicKeyComponents};
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RSA_PKCS1_SHA256,
    RsaKeyPair,
};
use orrery_crds::jwks::parse_jwks;
use serde_json::json;

enum Signer {
    Ec(EcdsaKeyPair),
    Ed(Ed25519KeyPair),
    Rsa(RsaKeyPair),
}

impl Signer {
    fn ec() -> Self {
        Signer::Ec(EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap())
    }
    fn ed() -> Self {
        Signer::Ed(Ed25519KeyPair::generate().unwrap())
    }
    fn rsa() -> Self {
        Signer::Rsa(RsaKeyPair::generate(KeySize::Rsa2048).unwrap())
    }
    fn alg(&self) -> &'static str {
        match self {
            Signer::Ec(_) => "ES256",
            Signer::Ed(_) => "EdDSA",
            Signer::Rsa(_) => "RS256",
        }
    }
    fn jwk(&self, kid: &str) -> Value {
        match self {
            Signer::Ec(k) => {
                let point = k.public_key().as_ref();
                json!({"kty": "EC", "crv": "P-256", "kid": kid,
                       "x": to_base64url(&point[1..33]), "y": to_base64url(&point[33..65])})
            }
            Signer::Ed(k) => json!({"kty": "OKP", "crv": "Ed25519", "kid": kid,
                                    "x": to_base64url(k.public_key().as_ref())}),
            Signer::Rsa(k) => {
                let parts = PublicKeyComponents::<Vec<u8>>::from(k.public_key());
                json!({"kty": "RSA", "kid": kid, "n": to_base64url(&parts.n), "e": to_base64url(&parts.e)})
            }
        }
    }
    fn sign(&self, input: &[u8]) -> Vec<u8> {
        let rng = SystemRandom::new();
        match self {
            Signer::Ec(k) => k.sign(&rng, input).unwrap().as_ref().to_vec(),
            Signer::Ed(k) => k.sign(input).as_ref().to_vec(),
            Signer::Rsa(k) => {
                let mut out = vec![0; k.public_modulus_len()];
                k.sign(&RSA_PKCS1_SHA256, &rng, input, &mut out).unwrap();
                out
            }
        }
    }
    /// A signature over `card` (as it is now) with `header` as the protected header.
    fn signature(&self, card: &Value, header: Value) -> Value {
        let protected = to_base64url(header.to_string().as_bytes());
        let payload = to_base64url(signed_payload(card).unwrap().as_bytes());
        let sig = self.sign(format!("{protected}.{payload}").as_bytes());
        json!({"protected": protected, "signature": to_base64url(&sig)})
    }
    fn sign_card(&self, card: &Value, kid: &str) -> Value {
        let sig = self.signature(card, json!({"alg": self.alg(), "kid": kid, "typ": "JOSE"}));
        with_signatures(card, vec![sig])
    }
}

fn with_signatures(card: &Value, signatures: Vec<Value>) -> Value {
    let mut card = card.clone();
    card["signatures"] = Value::Array(signatures);
    card
}

fn card() -> Value {
    json!({
        "name": "Writer", "description": "drafts text", "version": "1.0.0",
        "supportedInterfaces": [{"url": "https://w.example/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "draft", "name": "Draft", "description": "drafts", "tags": ["text"]}]
    })
}

fn policy(keys: Vec<Value>) -> SignaturePolicy {
    SignaturePolicy {
        keys: parse_jwks(json!({ "keys": keys }).to_string().as_bytes()).unwrap(),
        allow_jku: false,
    }
}

const NOW: i64 = 1_800_000_000;

fn verify(card: &Value, policy: &SignaturePolicy) -> Result<Verified, String> {
    verify_card(card, policy, &BTreeMap::new(), NOW)
}

#[test]
fn a_card_signed_with_each_algorithm_verifies_with_its_trusted_key() {
    for signer in [Signer::ec(), Signer::ed(), Signer::rsa()] {
        let signed = signer.sign_card(&card(), "k1");
        let verified = verify(&signed, &policy(vec![signer.jwk("k1")])).unwrap();
        assert_eq!(verified.kid, "k1");
        assert_eq!(verified.alg, signer.alg());
    }
}

#[test]
fn cards_that_must_not_be_trusted_are_refused_as_a_table() {
    let ec = Signer::ec();
    let other = Signer::ec();
    let ed = Signer::ed();
    let trusted = policy(vec![ec.jwk("k1")]);
    let signed = ec.sign_card(&card(), "k1");
    let mut changed = signed.clone();
    changed["description"] = json!("drafts text, and sends your data elsewhere");
    let mut moved = signed.clone();
    moved["supportedInterfaces"][0]["url"] = json!("https://evil.example/");
    let mut expired_key = ec.jwk("k1");
    expired_key["exp"] = json!(NOW - 1);
    let good = ec.signature(&card(), json!({"alg": "ES256", "kid": "k1"}));
    let forged = other.signature(&card(), json!({"alg": "ES256", "kid": "k1"}));
    let none_alg =
        json!({"protected": to_base64url(br#"{"alg":"none","kid":"k1"}"#), "signature": ""});
    let wrong_alg = ed.signature(&card(), json!({"alg": "EdDSA", "kid": "k1"}));
    let cases: Vec<(&str, Value, SignaturePolicy, &str)> = vec![
        ("unsigned", card(), trusted.clone(), "carries no signature"),
        (
            "signatures emptied",
            with_signatures(&card(), vec![]),
            trusted.clone(),
            "carries no signature",
        ),
        (
            "changed after signing",
            changed,
            trusted.clone(),
            "does not match the card",
        ),
        (
            "interface moved",
            moved,
            trusted.clone(),
            "does not match the card",
        ),
        (
            "unknown kid",
            ec.sign_card(&card(), "k9"),
            trusted.clone(),
            "key \"k9\", which is not trusted (trusted: \"k1\")",
        ),
        (
            "expired key",
            signed.clone(),
            policy(vec![expired_key]),
            "expired at",
        ),
        (
            "another key under a trusted kid",
            with_signatures(&card(), vec![forged]),
            trusted.clone(),
            "does not match the card",
        ),
        (
            "a forged signature beside a good one",
            with_signatures(
                &card(),
                vec![
                    good.clone(),
                    other.signature(&card(), json!({"alg": "ES256", "kid": "k1"})),
                ],
            ),
            trusted.clone(),
            "signature 2 by trusted key \"k1\"",
        ),
        (
            "alg none",
            with_signatures(&card(), vec![none_alg]),
            trusted.clone(),
            "alg \"none\"",
        ),
        (
            "alg of another key type",
            with_signatures(&card(), vec![wrong_alg]),
            trusted.clone(),
            "says alg EdDSA but key \"k1\" verifies ES256 only",
        ),
        (
            "not a list",
            with_signatures(&card(), vec![])
                .as_object()
                .map(|o| {
                    let mut o = o.clone();
                    o.insert("signatures".into(), json!({"protected": "x"}));
                    Value::Object(o)
                })
                .unwrap(),
            trusted.clone(),
            "not a list",
        ),
        (
            "too many",
            with_signatures(&card(), vec![good.clone(); MAX_SIGNATURES + 1]),
            trusted.clone(),
            "more than the 8 read",
        ),
    ];
    for (name, card, policy, expected) in cases {
        let err = verify(&card, &policy).expect_err(name);
        assert!(err.contains(expected), "{name}: {err}");
    }
}

#[test]
fn a_signature_by_an_untrusted_key_beside_a_trusted_one_is_passed_over() {
    let ec = Signer::ec();
    let stranger = Signer::ed();
    let both = with_signatures(
        &card(),
        vec![
            stranger.signature(&card(), json!({"alg": "EdDSA", "kid": "partner"})),
            ec.signature(&card(), json!({"alg": "ES256", "kid": "k1"})),
        ],
    );
    let verified = verify(&both, &policy(vec![ec.jwk("k1")])).unwrap();
    assert_eq!(verified.kid, "k1");
}

#[test]
fn the_payload_drops_empty_values_and_ignores_member_order_and_spacing() {
    let ec = Signer::ec();
    let signed = ec.sign_card(&card(), "k1");
    // The same card served with empty values the signer dropped, members in another order.
    let mut served: Map<String, Value> = Map::new();
    served.insert("signatures".into(), signed["signatures"].clone());
    served.insert("documentationUrl".into(), json!(""));
    served.insert("securitySchemes".into(), json!({}));
    served.insert("provider".into(), Value::Null);
    for (k, v) in card().as_object().unwrap().iter().rev() {
        served.insert(k.clone(), v.clone());
    }
    served["skills"][0]["examples"] = json!([]);
    let text = serde_json::to_string_pretty(&Value::Object(served)).unwrap();
    let parsed: Value = crate::pin::parse_json_no_duplicate_keys(text.as_bytes()).unwrap();
    assert!(verify(&parsed, &policy(vec![ec.jwk("k1")])).is_ok());
}

#[test]
fn a_jku_key_set_is_asked_for_only_when_allowed_and_needed_and_then_vouches() {
    let ec = Signer::ec();
    let jku = "https://w.example/.well-known/jwks.json";
    let signed = with_signatures(
        &card(),
        vec![ec.signature(&card(), json!({"alg": "ES256", "kid": "rot-1", "jku": jku}))],
    );
    let mut allowed = SignaturePolicy {
        allow_jku: true,
        ..SignaturePolicy::default()
    };
    assert_eq!(jku_urls(&signed, &allowed), [jku]);
    assert!(
        jku_urls(&signed, &SignaturePolicy::default()).is_empty(),
        "not allowed"
    );
    let fetched: BTreeMap<String, Jwks> = [(
        jku.to_owned(),
        parse_jwks(json!({"keys": [ec.jwk("rot-1")]}).to_string().as_bytes()).unwrap(),
    )]
    .into();
    assert_eq!(
        verify_card(&signed, &allowed, &fetched, NOW).unwrap().kid,
        "rot-1"
    );
    let err = verify_card(
        &signed,
        &SignaturePolicy {
            allow_jku: false,
            ..allowed.clone()
        },
        &fetched,
        NOW,
    )
    .unwrap_err();
    assert!(err.contains("not trusted"), "{err}");
    // A kid the entry's own keys hold needs no fetch.
    allowed.keys = policy(vec![ec.jwk("rot-1")]).keys;
    assert!(jku_urls(&signed, &allowed).is_empty());
}
