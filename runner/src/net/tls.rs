//! TLS for the guarded client, with the trusted roots loaded only when a certificate has to be
//! checked, and once per process.
//!
//! reqwest's own rustls setup builds a `rustls_platform_verifier::Verifier` when the client is
//! built, and on Linux that reads and parses every certificate of the system's CA store (the
//! files `SSL_CERT_FILE` and the folders `SSL_CERT_DIR` name, or the distribution's defaults),
//! even for a client that only ever speaks plain http to a loopback endpoint. Here the client
//! gets the configuration reqwest builds (the same crypto provider, protocol versions, ALPN and
//! SNI) with a verifier that builds that same platform verifier, with the same extra roots, on
//! the first certificate it checks, and shares it with every client of the process that trusts
//! the same extra roots. What is trusted does not change: the system's roots (so
//! `SSL_CERT_DIR=/etc/ssl/certs:/etc/orrery/trust` in a runner pod still adds the deployment's
//! CAs) and the policy's extra roots; only when they are read does.

use super::error::GuardError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_platform_verifier::Verifier;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};

/// The crypto provider when the process has not installed a default: reqwest's own choice
/// (aws-lc-rs), one instance for the process so that verifiers can be shared.
static FALLBACK_PROVIDER: LazyLock<Arc<CryptoProvider>> =
    LazyLock::new(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));

/// A platform verifier built in this process: its provider, the extra roots it trusts beside the
/// system's, and the verifier.
type Built = (
    Arc<CryptoProvider>,
    Vec<CertificateDer<'static>>,
    Arc<Verifier>,
);

/// Every platform verifier built so far in this process. Usually one: every client of a run
/// trusts the same extra roots.
static VERIFIERS: Mutex<Vec<Built>> = Mutex::new(Vec::new());

/// The rustls configuration of a guarded client trusting the system's roots and
/// `extra_roots_pem` (PEM bundles), and its verifier (to ask whether it has loaded the roots).
/// The extra roots are parsed and checked now, so a bad one still fails the client's build.
pub(crate) fn client_config(
    extra_roots_pem: &[Vec<u8>],
) -> Result<(rustls::ClientConfig, Arc<LazyVerifier>), GuardError> {
    let mut extra_roots = Vec::new();
    for pem in extra_roots_pem {
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|_| {
                GuardError::Config("CA certificates: invalid certificate encoding".to_owned())
            })?;
            extra_roots.push(cert);
        }
    }
    let mut check = rustls::RootCertStore::empty();
    for cert in &extra_roots {
        check.add(cert.clone()).map_err(|e| {
            GuardError::Config(format!(
                "could not build the HTTP client: CA certificates: {e}"
            ))
        })?;
    }
    let provider = CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| FALLBACK_PROVIDER.clone());
    let verifier = Arc::new(LazyVerifier {
        extra_roots,
        provider: provider.clone(),
        built: OnceLock::new(),
    });
    // `dangerous()` is only rustls's name for bringing one's own verifier: the one given is the
    // platform verifier reqwest itself would use, built later.
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .map_err(|e| GuardError::Config(format!("could not build the HTTP client: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone())
        .with_no_client_auth();
    // reqwest's choice without its `http2` feature (which this workspace does not enable).
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((config, verifier))
}

/// A server certificate verifier that builds the platform verifier the first time it is needed.
#[derive(Debug)]
pub(crate) struct LazyVerifier {
    extra_roots: Vec<CertificateDer<'static>>,
    provider: Arc<CryptoProvider>,
    built: OnceLock<Result<Arc<Verifier>, rustls::Error>>,
}

impl LazyVerifier {
    /// The platform verifier: this process's one for these extra roots, built (loading the
    /// system's roots) by the first client that needs it.
    fn verifier(&self) -> Result<&Verifier, rustls::Error> {
        self.built
            .get_or_init(|| shared_verifier(&self.provider, &self.extra_roots))
            .as_deref()
            .map_err(Clone::clone)
    }

    /// Whether this client has needed the roots yet.
    pub(crate) fn roots_loaded(&self) -> bool {
        self.built.get().is_some()
    }
}

/// The process's platform verifier for `provider` and `extra_roots`, built once. The lock is held
/// while building, so clients that meet their first certificate together load the roots once.
fn shared_verifier(
    provider: &Arc<CryptoProvider>,
    extra_roots: &[CertificateDer<'static>],
) -> Result<Arc<Verifier>, rustls::Error> {
    let mut built = VERIFIERS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, _, verifier)) = built
        .iter()
        .find(|(p, roots, _)| Arc::ptr_eq(p, provider) && roots.as_slice() == extra_roots)
    {
        return Ok(verifier.clone());
    }
    let verifier = Arc::new(Verifier::new_with_extra_roots(
        extra_roots.iter().cloned(),
        provider.clone(),
    )?);
    built.push((provider.clone(), extra_roots.to_vec(), verifier.clone()));
    Ok(verifier)
}

impl ServerCertVerifier for LazyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier()?.verify_tls13_signature(message, cert, dss)
    }

    /// Asked for every ClientHello, before any certificate: the platform verifier answers with
    /// its provider's signature algorithms, and so does this, without loading the roots.
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn building_a_client_config_loads_no_roots_and_clients_share_the_verifier() {
        let (_, first) = client_config(&[]).unwrap();
        let (_, second) = client_config(&[]).unwrap();
        assert!(!first.roots_loaded());
        assert!(!second.roots_loaded());
        // The first certificate check loads them (or fails to, on a machine without CAs), once.
        let a = first.verifier().map(|v| v as *const Verifier);
        let b = second.verifier().map(|v| v as *const Verifier);
        assert!(first.roots_loaded() && second.roots_loaded());
        if let (Ok(a), Ok(b)) = (a, b) {
            assert_eq!(a, b, "one verifier per process for the same roots");
        }
    }

    #[test]
    fn the_schemes_offered_before_any_certificate_are_the_platform_verifiers() {
        let (_, lazy) = client_config(&[]).unwrap();
        let offered = lazy.supported_verify_schemes();
        assert!(!lazy.roots_loaded());
        if let Ok(platform) = lazy.verifier() {
            assert_eq!(offered, platform.supported_verify_schemes());
        }
    }

    #[test]
    fn a_bad_extra_root_still_fails_the_build() {
        let bad = b"-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n";
        let err = client_config(&[bad.to_vec()]).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("CA certificates")));
    }
}
