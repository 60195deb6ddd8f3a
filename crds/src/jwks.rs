//! Trusted keys for signed agent cards (A2A §8.4; security case 25): a JWKS document (RFC 7517)
//! read strictly, and the protected header of a card signature (RFC 7515). Parsing only: the
//! signature arithmetic is the runner's (`runner/src/a2a/client/signature.rs`). One home for
//! what a key may be, so the validator (`orrery validate`, the operator's static checks) and
//! the runner that verifies read a JWKS alike.
//!
//! Three algorithms, each tied to one key type: `ES256` (EC P-256), `RS256` (RSA, 2048 bits or
//! more) and `EdDSA` (OKP Ed25519). Every key needs a `kid`, unique in its set; a key that sets
//! `use` must say `sig`, `key_ops` must include `verify`, `alg` must be one of the three and fit
//! its type. A key may carry `exp` (seconds since the epoch, an extension member RFC 7517 §4
//! allows): past it, the key no longer vouches for a card. Private members (`d`, `p`, `q`, …)
//! are refused, so a private key pasted by mistake is named rather than stored in a resource.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

/// Most keys in one set.
pub const MAX_KEYS: usize = 32;

/// Longest JWKS document read, in bytes (the CRD field's bound too).
pub const MAX_JWKS_BYTES: usize = 65_536;

/// Smallest RSA modulus, in bits.
pub const MIN_RSA_BITS: usize = 2048;

/// Largest RSA modulus, in bits.
pub const MAX_RSA_BITS: usize = 8192;

/// A signature algorithm a card may be signed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// ECDSA with P-256 and SHA-256 (RFC 7518 §3.4).
    Es256,
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 §3.3).
    Rs256,
    /// Ed25519 (RFC 8037).
    EdDsa,
}

impl Algorithm {
    /// The algorithms accepted, as JOSE names them.
    pub const NAMES: &'static str = "ES256, RS256 or EdDSA";

    /// The algorithm a JOSE `alg` names, if it is one of the three.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "ES256" => Some(Algorithm::Es256),
            "RS256" => Some(Algorithm::Rs256),
            "EdDSA" => Some(Algorithm::EdDsa),
            _ => None,
        }
    }

    /// The JOSE name.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Es256 => "ES256",
            Algorithm::Rs256 => "RS256",
            Algorithm::EdDsa => "EdDSA",
        }
    }
}

/// The public part of a trusted key, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PublicKey {
    /// An EC P-256 point (`x`, `y`, 32 bytes each).
    P256 {
        /// The x coordinate.
        x: Vec<u8>,
        /// The y coordinate.
        y: Vec<u8>,
    },
    /// An RSA key: modulus and exponent, big-endian without leading zeros.
    Rsa {
        /// The modulus.
        n: Vec<u8>,
        /// The public exponent.
        e: Vec<u8>,
    },
    /// An Ed25519 key (`x`, 32 bytes).
    Ed25519 {
        /// The public key.
        x: Vec<u8>,
    },
}

impl PublicKey {
    /// The one algorithm this key verifies.
    pub fn algorithm(&self) -> Algorithm {
        match self {
            PublicKey::P256 { .. } => Algorithm::Es256,
            PublicKey::Rsa { .. } => Algorithm::Rs256,
            PublicKey::Ed25519 { .. } => Algorithm::EdDsa,
        }
    }
}

/// One trusted key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustedKey {
    /// Its `kid`.
    pub kid: String,
    /// Its public part.
    pub key: PublicKey,
    /// Its `exp`, seconds since the epoch, when it sets one.
    pub expires: Option<i64>,
}

/// A JWKS document, read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Jwks {
    /// The keys, in document order.
    pub keys: Vec<TrustedKey>,
}

impl Jwks {
    /// The key with `kid`.
    pub fn key(&self, kid: &str) -> Option<&TrustedKey> {
        self.keys.iter().find(|k| k.kid == kid)
    }

    /// The `kid`s, quoted and comma-separated, for messages.
    pub fn kids(&self) -> String {
        let kids: Vec<String> = self.keys.iter().map(|k| format!("{:?}", k.kid)).collect();
        if kids.is_empty() {
            "none".to_owned()
        } else {
            kids.join(", ")
        }
    }
}

/// Why a JWKS document or a protected header is refused; each message names the key or member
/// and says what to change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JwksError {
    /// Not JSON, a duplicate member, or too large.
    #[error("{0}")]
    Document(String),
    /// One key is refused.
    #[error("key {index}{kid}: {problem}")]
    Key {
        /// Its place in `keys`, from 0.
        index: usize,
        /// ` ("kid")` when it has one.
        kid: String,
        /// What is wrong and how to fix it.
        problem: String,
    },
}

fn key_error(index: usize, kid: Option<&str>, problem: impl Into<String>) -> JwksError {
    JwksError::Key {
        index,
        kid: kid.map(|k| format!(" ({k:?})")).unwrap_or_default(),
        problem: problem.into(),
    }
}

/// Decodes unpadded base64url (RFC 7515 §2), refusing padding and other alphabets.
pub fn base64url(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text.as_bytes()).ok()
}

/// Encodes unpadded base64url.
pub fn to_base64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Members of a private JWK (RFC 7518 §6.2.2, §6.3.2; RFC 8037 §2).
const PRIVATE_MEMBERS: [&str; 7] = ["d", "p", "q", "dp", "dq", "qi", "oth"];

/// Reads a JWKS document (`{"keys": [...]}`), refusing duplicate members, private keys, keys
/// without a `kid` or with one used twice, and keys of any other type or curve.
pub fn parse_jwks(text: &[u8]) -> Result<Jwks, JwksError> {
    if text.len() > MAX_JWKS_BYTES {
        return Err(JwksError::Document(format!(
            "the key set is {} bytes, more than the {MAX_JWKS_BYTES} read",
            text.len()
        )));
    }
    let value = crate::unique_keys::json_from_slice(text).map_err(|e| {
        JwksError::Document(format!(
            "the key set is not a JSON document without duplicate members: {e}"
        ))
    })?;
    jwks_from_value(&value)
}

/// [`parse_jwks`] of a document already parsed.
pub fn jwks_from_value(value: &Value) -> Result<Jwks, JwksError> {
    let keys = value
        .as_object()
        .and_then(|o| o.get("keys"))
        .and_then(Value::as_array)
        .ok_or_else(|| {
            JwksError::Document(
                "a key set is a JSON object whose \"keys\" is an array of JWKs ({\"keys\": [...]})"
                    .to_owned(),
            )
        })?;
    if keys.is_empty() {
        return Err(JwksError::Document(
            "the key set has no keys; add the public key the agent signs its card with".to_owned(),
        ));
    }
    if keys.len() > MAX_KEYS {
        return Err(JwksError::Document(format!(
            "the key set has {} keys, more than {MAX_KEYS}",
            keys.len()
        )));
    }
    let mut out = Jwks::default();
    for (index, key) in keys.iter().enumerate() {
        let key = trusted_key(index, key)?;
        if out.key(&key.kid).is_some() {
            return Err(key_error(
                index,
                Some(&key.kid),
                "another key has the same kid; each kid names one key",
            ));
        }
        out.keys.push(key);
    }
    Ok(out)
}

fn text_member<'a>(
    index: usize,
    kid: Option<&str>,
    key: &'a Map<String, Value>,
    name: &str,
) -> Result<Option<&'a str>, JwksError> {
    match key.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(key_error(
            index,
            kid,
            format!("\"{name}\" must be a string"),
        )),
    }
}

fn bytes_member(
    index: usize,
    kid: Option<&str>,
    key: &Map<String, Value>,
    name: &str,
) -> Result<Vec<u8>, JwksError> {
    let text = text_member(index, kid, key, name)?
        .ok_or_else(|| key_error(index, kid, format!("\"{name}\" is missing")))?;
    base64url(text)
        .ok_or_else(|| key_error(index, kid, format!("\"{name}\" is not unpadded base64url")))
}

fn trusted_key(index: usize, value: &Value) -> Result<TrustedKey, JwksError> {
    let key = value
        .as_object()
        .ok_or_else(|| key_error(index, None, "a JWK is a JSON object"))?;
    let kid = match text_member(index, None, key, "kid")? {
        Some(kid) if !kid.is_empty() && kid.len() <= 256 => kid.to_owned(),
        Some(_) => {
            return Err(key_error(
                index,
                None,
                "\"kid\" must be 1 to 256 characters",
            ));
        }
        None => {
            return Err(key_error(
                index,
                None,
                "it has no \"kid\"; a card's signature names its key by kid, so each trusted key needs one",
            ));
        }
    };
    let k = Some(kid.as_str());
    if let Some(private) = PRIVATE_MEMBERS.iter().find(|m| key.contains_key(**m)) {
        return Err(key_error(
            index,
            k,
            format!(
                "it holds the private member \"{private}\"; give the public key only (the agent keeps the private one)"
            ),
        ));
    }
    if let Some(usage) = text_member(index, k, key, "use")?
        && usage != "sig"
    {
        return Err(key_error(
            index,
            k,
            format!("its \"use\" is {usage:?}; a key that verifies cards has use \"sig\""),
        ));
    }
    if let Some(ops) = key.get("key_ops") {
        let verifies = ops
            .as_array()
            .is_some_and(|ops| ops.iter().any(|o| o.as_str() == Some("verify")));
        if !verifies {
            return Err(key_error(
                index,
                k,
                "its \"key_ops\" does not include \"verify\"",
            ));
        }
    }
    let expires = match key.get("exp") {
        None => None,
        Some(exp) => Some(exp.as_i64().ok_or_else(|| {
            key_error(
                index,
                k,
                "\"exp\" must be a whole number of seconds since the epoch",
            )
        })?),
    };
    let kty = text_member(index, k, key, "kty")?
        .ok_or_else(|| key_error(index, k, "\"kty\" is missing (EC, RSA or OKP)"))?;
    let crv = text_member(index, k, key, "crv")?;
    let public = match (kty, crv) {
        ("EC", Some("P-256")) => {
            let (x, y) = (
                bytes_member(index, k, key, "x")?,
                bytes_member(index, k, key, "y")?,
            );
            if x.len() != 32 || y.len() != 32 {
                return Err(key_error(
                    index,
                    k,
                    "a P-256 key's \"x\" and \"y\" are 32 bytes each",
                ));
            }
            PublicKey::P256 { x, y }
        }
        ("EC", other) => {
            return Err(key_error(
                index,
                k,
                format!(
                    "EC keys must be on curve P-256 (ES256), not {}",
                    other.map_or("an unnamed curve".to_owned(), |c| format!("{c:?}"))
                ),
            ));
        }
        ("OKP", Some("Ed25519")) => {
            let x = bytes_member(index, k, key, "x")?;
            if x.len() != 32 {
                return Err(key_error(index, k, "an Ed25519 key's \"x\" is 32 bytes"));
            }
            PublicKey::Ed25519 { x }
        }
        ("OKP", other) => {
            return Err(key_error(
                index,
                k,
                format!(
                    "OKP keys must be on curve Ed25519 (EdDSA), not {}",
                    other.map_or("an unnamed curve".to_owned(), |c| format!("{c:?}"))
                ),
            ));
        }
        ("RSA", _) => {
            let n = strip_zeros(bytes_member(index, k, key, "n")?);
            let e = strip_zeros(bytes_member(index, k, key, "e")?);
            let bits = bit_length(&n);
            if !(MIN_RSA_BITS..=MAX_RSA_BITS).contains(&bits) {
                return Err(key_error(
                    index,
                    k,
                    format!(
                        "its modulus has {bits} bits; RSA keys need {MIN_RSA_BITS} to {MAX_RSA_BITS}"
                    ),
                ));
            }
            if e.is_empty() || e.len() > 4 {
                return Err(key_error(
                    index,
                    k,
                    "its exponent \"e\" is not a usable RSA exponent",
                ));
            }
            PublicKey::Rsa { n, e }
        }
        (other, _) => {
            return Err(key_error(
                index,
                k,
                format!("its kty is {other:?}; trusted keys are EC (P-256), RSA or OKP (Ed25519)"),
            ));
        }
    };
    if let Some(alg) = text_member(index, k, key, "alg")? {
        match Algorithm::from_name(alg) {
            Some(a) if a == public.algorithm() => {}
            Some(a) => {
                return Err(key_error(
                    index,
                    k,
                    format!(
                        "its \"alg\" is {} but an {kty} key verifies {}",
                        a.name(),
                        public.algorithm().name()
                    ),
                ));
            }
            None => {
                return Err(key_error(
                    index,
                    k,
                    format!(
                        "its \"alg\" is {alg:?}; cards are verified with {}",
                        Algorithm::NAMES
                    ),
                ));
            }
        }
    }
    Ok(TrustedKey {
        kid,
        key: public,
        expires,
    })
}

fn strip_zeros(mut bytes: Vec<u8>) -> Vec<u8> {
    let zeros = bytes.iter().take_while(|b| **b == 0).count();
    bytes.drain(..zeros);
    bytes
}

fn bit_length(bytes: &[u8]) -> usize {
    bytes.first().map_or(0, |b| {
        (bytes.len() - 1) * 8 + (8 - b.leading_zeros() as usize)
    })
}

/// The protected header of one card signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtectedHeader {
    /// `alg`.
    pub alg: Algorithm,
    /// `kid`.
    pub kid: String,
    /// `jku`, when set.
    pub jku: Option<String>,
}

/// Reads a signature's `protected` member: unpadded base64url of a JSON object without
/// duplicate members, with `alg` one of the three and a `kid`; `crit` is refused (no extension
/// is understood), as is `alg: none` or any other algorithm.
pub fn parse_protected_header(protected: &str) -> Result<ProtectedHeader, String> {
    let bytes = base64url(protected)
        .ok_or_else(|| "its protected header is not unpadded base64url".to_owned())?;
    let value = crate::unique_keys::json_from_slice(&bytes).map_err(|e| {
        format!("its protected header is not a JSON object without duplicate members: {e}")
    })?;
    let header = value
        .as_object()
        .ok_or_else(|| "its protected header is not a JSON object".to_owned())?;
    if header.contains_key("crit") {
        return Err(
            "its protected header has \"crit\" extensions, which are not understood here".into(),
        );
    }
    let alg = match header.get("alg") {
        Some(Value::String(alg)) => Algorithm::from_name(alg).ok_or_else(|| {
            format!(
                "it uses alg {alg:?}; cards are verified with {}",
                Algorithm::NAMES
            )
        })?,
        _ => return Err("its protected header has no \"alg\"".into()),
    };
    let kid = match header.get("kid") {
        Some(Value::String(kid)) if !kid.is_empty() => kid.clone(),
        _ => return Err("its protected header has no \"kid\"".into()),
    };
    let jku = match header.get("jku") {
        None => None,
        Some(Value::String(jku)) => Some(jku.clone()),
        Some(_) => return Err("its protected header's \"jku\" is not a string".into()),
    };
    Ok(ProtectedHeader { alg, kid, jku })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    const X: &str = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU";
    const Y: &str = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0";
    const ED: &str = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";

    fn parse(value: Value) -> Result<Jwks, JwksError> {
        parse_jwks(value.to_string().as_bytes())
    }

    fn rsa_n(bits: usize) -> String {
        let mut n = vec![0xffu8; bits / 8];
        n[0] = 0x80 | 0x40;
        to_base64url(&n)
    }

    #[test]
    fn the_three_key_types_are_read_with_their_kid_and_expiry() {
        let set = parse(json!({"keys": [
            {"kty": "EC", "crv": "P-256", "kid": "ec", "x": X, "y": Y, "use": "sig", "alg": "ES256"},
            {"kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": ED, "exp": 1_900_000_000},
            {"kty": "RSA", "kid": "rsa", "n": rsa_n(2048), "e": "AQAB", "key_ops": ["verify"]},
        ]}))
        .unwrap();
        assert_eq!(set.keys.len(), 3);
        assert_eq!(set.key("ec").unwrap().key.algorithm(), Algorithm::Es256);
        assert_eq!(set.key("ed").unwrap().expires, Some(1_900_000_000));
        assert_eq!(set.key("rsa").unwrap().key.algorithm(), Algorithm::Rs256);
        assert_eq!(set.kids(), "\"ec\", \"ed\", \"rsa\"");
    }

    #[test]
    fn keys_a_card_cannot_be_verified_with_are_refused_as_a_table() {
        let ec = json!({"kty": "EC", "crv": "P-256", "kid": "k", "x": X, "y": Y});
        let with = |edit: &dyn Fn(&mut Map<String, Value>)| {
            let mut key = ec.as_object().unwrap().clone();
            edit(&mut key);
            json!({"keys": [Value::Object(key)]})
        };
        let cases: Vec<(Value, &str)> = vec![
            (json!({"keys": []}), "no keys"),
            (json!([ec]), "\"keys\" is an array"),
            (
                with(&|k| {
                    k.remove("kid");
                }),
                "no \"kid\"",
            ),
            (
                with(&|k| {
                    k.insert("d".into(), json!("secret"));
                }),
                "private member \"d\"",
            ),
            (
                with(&|k| {
                    k.insert("use".into(), json!("enc"));
                }),
                "use \"sig\"",
            ),
            (
                with(&|k| {
                    k.insert("key_ops".into(), json!(["sign"]));
                }),
                "\"verify\"",
            ),
            (
                with(&|k| {
                    k.insert("alg".into(), json!("RS256"));
                }),
                "an EC key verifies ES256",
            ),
            (
                with(&|k| {
                    k.insert("alg".into(), json!("none"));
                }),
                "alg\" is \"none\"",
            ),
            (
                with(&|k| {
                    k.insert("crv".into(), json!("P-384"));
                }),
                "curve P-256",
            ),
            (
                with(&|k| {
                    k.insert("x".into(), json!("AAAA"));
                }),
                "32 bytes each",
            ),
            (
                with(&|k| {
                    k.insert("x".into(), json!(format!("{X}=")));
                }),
                "not unpadded base64url",
            ),
            (
                with(&|k| {
                    k.insert("exp".into(), json!("soon"));
                }),
                "\"exp\" must be",
            ),
            (
                with(&|k| {
                    k.insert("kty".into(), json!("oct"));
                }),
                "trusted keys are EC",
            ),
            (json!({"keys": [ec, ec]}), "same kid"),
            (
                json!({"keys": [{"kty": "RSA", "kid": "r", "n": rsa_n(1024), "e": "AQAB"}]}),
                "1024 bits",
            ),
            (
                json!({"keys": [{"kty": "OKP", "crv": "X25519", "kid": "o", "x": ED}]}),
                "curve Ed25519",
            ),
        ];
        for (doc, expected) in cases {
            let err = parse(doc.clone()).expect_err(&doc.to_string()).to_string();
            assert!(err.contains(expected), "{doc}: {err}");
        }
        let dup = br#"{"keys": [], "keys": [{"kty": "EC"}]}"#;
        assert!(
            parse_jwks(dup)
                .unwrap_err()
                .to_string()
                .contains("duplicate")
        );
        let big = vec![b' '; MAX_JWKS_BYTES + 1];
        assert!(
            parse_jwks(&big)
                .unwrap_err()
                .to_string()
                .contains("more than")
        );
    }

    #[test]
    fn a_protected_header_needs_a_known_alg_and_a_kid_and_no_crit() {
        let enc = |v: Value| to_base64url(v.to_string().as_bytes());
        let ok = parse_protected_header(&enc(
            json!({"alg": "ES256", "kid": "k1", "typ": "JOSE", "jku": "https://a.example/jwks.json"}),
        ))
        .unwrap();
        assert_eq!(ok.alg, Algorithm::Es256);
        assert_eq!(ok.kid, "k1");
        assert_eq!(ok.jku.as_deref(), Some("https://a.example/jwks.json"));
        let cases = [
            (enc(json!({"alg": "none", "kid": "k"})), "alg \"none\""),
            (enc(json!({"alg": "HS256", "kid": "k"})), "alg \"HS256\""),
            (enc(json!({"kid": "k"})), "no \"alg\""),
            (enc(json!({"alg": "EdDSA"})), "no \"kid\""),
            (
                enc(json!({"alg": "EdDSA", "kid": "k", "crit": ["b64"]})),
                "crit",
            ),
            (enc(json!({"alg": "EdDSA", "kid": "k", "jku": 1})), "jku"),
            (enc(json!(["alg"])), "not a JSON object"),
            (
                to_base64url(br#"{"alg":"EdDSA","kid":"a","kid":"b"}"#),
                "duplicate",
            ),
            ("e30=".to_owned(), "base64url"),
        ];
        for (header, expected) in cases {
            let err = parse_protected_header(&header).unwrap_err();
            assert!(err.contains(expected), "{header}: {err}");
        }
    }
}
