//! The run-scoped token: a JWT the operator signs (EdDSA, Ed25519) for one run; audience the
//! sidecar, subject the run's UID, expiring after the run's deadline. The runner sends it to
//! the sidecar; the sidecar verifies it with the public key ([`verify`]).

use crate::error::{Error, Result};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// The claims of a run token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunClaims {
    /// Issuer: `orrery-operator`.
    pub iss: String,
    /// Audience: the sidecar.
    pub aud: String,
    /// Subject: the run's UID.
    pub sub: String,
    /// Issued at (Unix seconds).
    pub iat: i64,
    /// Not before (Unix seconds).
    pub nbf: i64,
    /// Expiry (Unix seconds): after the run's deadline.
    pub exp: i64,
    /// The run's namespace.
    pub ns: String,
    /// The run's name.
    pub run: String,
}

/// The key run tokens are signed with.
pub struct RunTokenSigner {
    key: EncodingKey,
}

impl std::fmt::Debug for RunTokenSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunTokenSigner(Ed25519, key hidden)")
    }
}

impl RunTokenSigner {
    /// A signer from an Ed25519 private key in PEM (PKCS#8), as `openssl genpkey -algorithm
    /// ed25519` writes it.
    pub fn from_ed_pem(pem: &[u8]) -> Result<RunTokenSigner> {
        let key = EncodingKey::from_ed_pem(pem).map_err(|e| Error::RunToken {
            message: format!(
                "the signing key is not an Ed25519 private key in PEM (PKCS#8): {e}; make one with `openssl genpkey -algorithm ed25519`"
            ),
        })?;
        Ok(RunTokenSigner { key })
    }

    /// The signer of the config's `runToken.signingKeyFile`: read at start-up, so a missing or
    /// wrong key stops the operator with the field and the fix.
    pub fn from_config(
        path: &str,
        config: &crate::config::RunTokenConfig,
    ) -> Result<RunTokenSigner, crate::config::ConfigError> {
        let invalid = |problem: String| {
            crate::config::ConfigError::Invalid {
            path: path.to_owned(),
            problems: vec![crate::config::ConfigProblem {
                field: "runToken.signingKeyFile".into(),
                problem,
                fix: "mount an Ed25519 private key in PEM (PKCS#8) there; make one with `openssl genpkey -algorithm ed25519 -out key.pem`".into(),
            }],
        }
        };
        let pem = std::fs::read(&config.signing_key_file)
            .map_err(|e| invalid(format!("cannot read {}: {e}", config.signing_key_file)))?;
        RunTokenSigner::from_ed_pem(&pem).map_err(|_| {
            invalid(format!(
                "{} is not an Ed25519 private key in PEM (PKCS#8)",
                config.signing_key_file
            ))
        })
    }

    /// Signs `claims` (EdDSA).
    pub fn sign(&self, claims: &RunClaims) -> Result<String> {
        jsonwebtoken::encode(&Header::new(Algorithm::EdDSA), claims, &self.key).map_err(|e| {
            Error::RunToken {
                message: format!("signing failed: {e}"),
            }
        })
    }
}

/// The claims for a run: valid from `now` for `lifetime_seconds` (the run's deadline plus the
/// pod's margin, so the token outlives the run but not by much).
pub fn run_claims(
    namespace: &str,
    name: &str,
    uid: &str,
    audience: &str,
    now_unix: i64,
    lifetime_seconds: u64,
) -> RunClaims {
    let lifetime = i64::try_from(lifetime_seconds).unwrap_or(i64::MAX);
    RunClaims {
        iss: crate::config::RUN_TOKEN_ISSUER.to_owned(),
        aud: audience.to_owned(),
        sub: uid.to_owned(),
        iat: now_unix,
        nbf: now_unix,
        exp: now_unix.saturating_add(lifetime),
        ns: namespace.to_owned(),
        run: name.to_owned(),
    }
}

/// Verifies run tokens: what the sidecar does with every request a runner makes. Holds the
/// operator's public key, parsed once.
pub struct RunTokenVerifier {
    key: DecodingKey,
    validation: Validation,
}

impl std::fmt::Debug for RunTokenVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunTokenVerifier(Ed25519)")
    }
}

impl RunTokenVerifier {
    /// A verifier from the Ed25519 public key in PEM (`openssl pkey -in key.pem -pubout`),
    /// accepting tokens for `audience`.
    pub fn from_public_pem(public_pem: &[u8], audience: &str) -> Result<RunTokenVerifier> {
        let key = DecodingKey::from_ed_pem(public_pem).map_err(|e| Error::RunToken {
            message: format!(
                "the verifying key is not an Ed25519 public key in PEM: {e}; make it from the signing key with `openssl pkey -in key.pem -pubout -out key.pub.pem`"
            ),
        })?;
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.set_audience(&[audience]);
        validation.set_issuer(&[crate::config::RUN_TOKEN_ISSUER]);
        validation.set_required_spec_claims(&["exp", "nbf", "aud", "iss", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = 5;
        Ok(RunTokenVerifier { key, validation })
    }

    /// The claims of `token`, checked: signature, algorithm, issuer, audience, expiry and
    /// not-before.
    pub fn verify(&self, token: &str) -> Result<RunClaims> {
        jsonwebtoken::decode::<RunClaims>(token, &self.key, &self.validation)
            .map(|data| data.claims)
            .map_err(|e| Error::RunToken {
                message: format!("the token is refused: {e}"),
            })
    }
}

/// Verifies a run token with the operator's public key (PEM): signature, algorithm, issuer,
/// audience, expiry and not-before ([`RunTokenVerifier`] once).
pub fn verify(token: &str, public_pem: &[u8], audience: &str) -> Result<RunClaims> {
    RunTokenVerifier::from_public_pem(public_pem, audience)?.verify(token)
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::expect_used)]
    use super::*;

    /// A key made for these tests only (`openssl genpkey -algorithm ed25519`); other modules'
    /// tests sign with it too.
    pub(crate) const PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIJFsMCDY7n2ZvsfrK8nmpZUA0JQnU0Q3YI6biGiPXvhi
-----END PRIVATE KEY-----
";
    const PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEA3cchcNpgSSR94yoPqi3PPkFT3GbGkzotaslr7pm7CeQ=
-----END PUBLIC KEY-----
";

    /// A self-signed certificate carrying PUBLIC (what the Helm chart makes for the sidecar,
    /// since Helm can make an Ed25519 key and a certificate but not a bare public key):
    /// `openssl req -x509 -new -key <PRIVATE> -subj /CN=orrery-run-token -days 36500`.
    const CERTIFICATE: &str = "-----BEGIN CERTIFICATE-----
MIIBTDCB/6ADAgECAhQkgg4GGh5+pkp8Z4jlVtF/2q/nZTAFBgMrZXAwGzEZMBcG
A1UEAwwQb3JyZXJ5LXJ1bi10b2tlbjAgFw0yNjEyMDIxMjM4MzdaGA8yMTI2MTEw
ODEyMzgzN1owGzEZMBcGA1UEAwwQb3JyZXJ5LXJ1bi10b2tlbjAqMAUGAytlcAMh
AN3HIXDaYEkkfeMqD6otzz5BU9xmxpM6LWrJa+6Zuwnko1MwUTAdBgNVHQ4EFgQU
QdqAUukSmEgGrVKCofbZynFwC6QwHwYDVR0jBBgwFoAUQdqAUukSmEgGrVKCofbZ
ynFwC6QwDwYDVR0TAQH/BAUwAwEB/zAFBgMrZXADQQBFaTmdpV7TjGJ2ermKbf/q
BBySAhK1GDScWZPioJR+oqoTxUSa7Ab3eiDRmQwSdZTap5791JbvQTzyl9a2ETgH
-----END CERTIFICATE-----
";

    fn now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(0))
            .unwrap_or(0)
    }

    #[test]
    fn a_signed_token_verifies_with_its_claims() {
        let signer = RunTokenSigner::from_ed_pem(PRIVATE.as_bytes()).expect("key");
        let claims = run_claims("team", "notes-1", "uid-1", "orrery-sidecar", now(), 600);
        assert_eq!(claims.exp - claims.iat, 600);
        let token = signer.sign(&claims).expect("signed");
        let back = verify(&token, PUBLIC.as_bytes(), "orrery-sidecar").expect("verifies");
        assert_eq!(back, claims);
        assert_eq!(
            (back.sub.as_str(), back.aud.as_str(), back.iss.as_str()),
            ("uid-1", "orrery-sidecar", "orrery-operator")
        );
    }

    #[test]
    fn a_certificate_carrying_the_public_key_verifies_tokens_like_the_key_itself() {
        let signer = RunTokenSigner::from_ed_pem(PRIVATE.as_bytes()).expect("key");
        let claims = run_claims("team", "notes-1", "uid-1", "orrery-sidecar", now(), 600);
        let token = signer.sign(&claims).expect("signed");
        let back = verify(&token, CERTIFICATE.as_bytes(), "orrery-sidecar").expect("verifies");
        assert_eq!(back, claims);
        let other = RunTokenSigner::from_ed_pem(
            b"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIONMLOYLT0QC3Pf3gmlZxfhh6RrlIln9HWRhWn5e5kmZ\n-----END PRIVATE KEY-----\n",
        )
        .expect("another key");
        let forged = other.sign(&claims).expect("signed");
        assert!(
            verify(&forged, CERTIFICATE.as_bytes(), "orrery-sidecar").is_err(),
            "a token signed by another key"
        );
    }

    #[test]
    fn a_token_for_another_audience_expired_or_tampered_is_refused() {
        let signer = RunTokenSigner::from_ed_pem(PRIVATE.as_bytes()).expect("key");
        let good = signer
            .sign(&run_claims("team", "r", "u", "orrery-sidecar", now(), 600))
            .expect("signed");
        assert!(
            verify(&good, PUBLIC.as_bytes(), "someone-else").is_err(),
            "audience"
        );
        let expired = signer
            .sign(&run_claims(
                "team",
                "r",
                "u",
                "orrery-sidecar",
                now() - 3600,
                60,
            ))
            .expect("signed");
        assert!(
            verify(&expired, PUBLIC.as_bytes(), "orrery-sidecar").is_err(),
            "expiry"
        );
        let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
        if let Some(sig) = parts.get_mut(2) {
            let flipped = if sig.starts_with('A') { 'B' } else { 'A' };
            sig.replace_range(0..1, &flipped.to_string());
        }
        assert!(
            verify(&parts.join("."), PUBLIC.as_bytes(), "orrery-sidecar").is_err(),
            "signature"
        );
    }

    #[test]
    fn the_configured_key_file_is_read_or_refused_at_its_field() {
        let dir =
            std::env::temp_dir().join(format!("orrery-operator-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let good = dir.join("key.pem");
        std::fs::write(&good, PRIVATE).expect("write key");
        let bad = dir.join("bad.pem");
        std::fs::write(&bad, PUBLIC).expect("write public key");
        let config = |file: &std::path::Path| crate::config::RunTokenConfig {
            signing_key_file: file.display().to_string(),
            verifying_key_file: None,
            audience: "orrery-sidecar".into(),
        };
        assert!(RunTokenSigner::from_config("c.yaml", &config(&good)).is_ok());
        for file in [bad, dir.join("missing.pem")] {
            let err = RunTokenSigner::from_config("c.yaml", &config(&file))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                err.contains("runToken.signingKeyFile") && err.contains("openssl genpkey"),
                "{err}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_key_that_is_not_ed25519_pem_is_refused_with_the_fix() {
        let err = RunTokenSigner::from_ed_pem(b"not a key")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("openssl genpkey -algorithm ed25519"), "{err}");
    }

    #[test]
    fn the_example_config_runs_as_shipped_with_its_keys_beside_it() {
        // Copied as docs/run-on-a-cluster.md copies it, with a fresh key pair beside it, the example
        // starts both processes' key loading without an edit.
        let dir =
            std::env::temp_dir().join(format!("orrery-config-example-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let example = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/operator/config.yaml"
        );
        let path = dir.join("config.yaml");
        std::fs::copy(example, &path).expect("copied");
        let path = path.to_string_lossy().into_owned();
        let config = crate::config::Config::load(&path).expect("the example loads");
        assert_eq!(
            config.runner.image, "orrery/runner:0.1.0",
            "the chart's default image"
        );
        assert_eq!(config.sidecar.url(), "http://127.0.0.1:8080");
        std::fs::write(dir.join("run-token.pem"), PRIVATE).expect("key");
        std::fs::write(dir.join("run-token.pub.pem"), PUBLIC).expect("key");
        let signer = RunTokenSigner::from_config(&path, &config.run_token);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(signer.is_ok(), "the signing key beside the config is read");
    }
}
