//! Fronts for services on this machine: a TLS front (a throwaway certificate authority and a TLS
//! listener that forwards every connection, decrypted, to a plain TCP address) and a plain TCP
//! front (a port forward, as `kubectl port-forward` gives).
//!
//! Why: a pod with a network namespace of its own reaches the host only at the bridge's gateway,
//! and the network guard lets a non-loopback entry URL be `https` only (rule: plain http is for
//! loopback). The demo fleet serves plain http on 127.0.0.1, so the dev node puts this front on
//! the gateway, registers the entries as `https://<gateway>:<port>` with `privateNetwork: true`,
//! and hands the CA to the pods through the operator's `runner.trustedCertificates`.
//!
//! The CA's key lives only in this process's memory (a new CA each session); the leaf
//! certificate names the front's IP address (a subject alternative name of type IP).
//!
//! The plain front puts a service that listens on the bridge's gateway (the sidecar of a
//! host-network operator pod) on loopback too, where `orrery up` promises it.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_util::sync::CancellationToken;

/// A certificate authority made for one session: it signs the fronts' certificates.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

impl TestCa {
    /// A new CA named `name` (its common name).
    pub fn new(name: &str) -> Result<TestCa> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)
            .context("signing the test CA")?;
        Ok(TestCa { issuer })
    }

    /// The CA's certificate in PEM: what clients must trust.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// The CA's certificate in DER.
    pub fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A server certificate for `ip`, signed by this CA, and its key.
    fn server_cert(&self, ip: IpAddr) -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>)> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, ip.to_string());
        params.subject_alt_names = vec![SanType::IpAddress(ip)];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate()?;
        let cert = params
            .signed_by(&key, &self.issuer)
            .context("signing the front's certificate")?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        Ok((cert.der().clone(), key))
    }
}

/// A running front: TLS or plain TCP on [`Front::addr`], each connection forwarded to its
/// target. Dropping it stops accepting; [`Front::stop`] also waits for the listener to close.
pub struct Front {
    addr: SocketAddr,
    target: Arc<std::sync::RwLock<SocketAddr>>,
    token: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Front {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Front")
            .field("addr", &self.addr)
            .field("target", &self.target())
            .finish_non_exhaustive()
    }
}

impl Front {
    /// Listens on `bind` (port 0: any free port) with a certificate for `bind`'s address signed
    /// by `ca`, and forwards every TLS connection's plaintext to `target`.
    pub async fn tls(bind: SocketAddr, target: SocketAddr, ca: &TestCa) -> Result<Front> {
        let (cert, key) = ca.server_cert(bind.ip())?;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![cert, ca.der()], key)
            .context("the front's TLS config")?;
        Front::start(bind, target, Some(TlsAcceptor::from(Arc::new(config)))).await
    }

    /// Listens on `bind` (port 0: any free port) and forwards every connection to `target`.
    pub async fn tcp(bind: SocketAddr, target: SocketAddr) -> Result<Front> {
        Front::start(bind, target, None).await
    }

    async fn start(
        bind: SocketAddr,
        target: SocketAddr,
        tls: Option<TlsAcceptor>,
    ) -> Result<Front> {
        let listener = TcpListener::bind(bind)
            .await
            .with_context(|| format!("listening on {bind} (in front of {target})"))?;
        let addr = listener.local_addr()?;
        let token = CancellationToken::new();
        let target = Arc::new(std::sync::RwLock::new(target));
        let task = tokio::spawn(serve(listener, tls, target.clone(), token.clone()));
        Ok(Front {
            addr,
            target,
            token,
            task: Some(task),
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where it forwards new connections to.
    pub fn target(&self) -> SocketAddr {
        self.retargeter().get()
    }

    /// Forwards new connections to `target` from now on (a pod that moved to another address);
    /// connections under way stay where they are.
    pub fn retarget(&self, target: SocketAddr) {
        self.retargeter().set(target);
    }

    /// A handle that retargets this front from elsewhere (a task following a pod).
    pub fn retargeter(&self) -> Retargeter {
        Retargeter(self.target.clone())
    }

    /// Stops accepting and closes the listener (connections under way are dropped).
    pub async fn stop(mut self) {
        self.token.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

/// Changes where a [`Front`] forwards new connections ([`Front::retargeter`]).
#[derive(Debug, Clone)]
pub struct Retargeter(Arc<std::sync::RwLock<SocketAddr>>);

impl Retargeter {
    /// The front's current target.
    pub fn get(&self) -> SocketAddr {
        *self
            .0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Forwards new connections to `target` from now on.
    pub fn set(&self, target: SocketAddr) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = target;
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

/// How long a TLS client may take over its handshake.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    target: Arc<std::sync::RwLock<SocketAddr>>,
    token: CancellationToken,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            _ = token.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            // A lasting error (too many open files) must not spin: try again a little later.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        let tls = tls.clone();
        let token = token.clone();
        let target = *target
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        connections.spawn(async move {
            let forward = async {
                match tls {
                    Some(acceptor) => {
                        // A client that never finishes its handshake holds nothing for long.
                        let mut stream =
                            tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream))
                                .await
                                .map_err(|_| std::io::ErrorKind::TimedOut)??;
                        let mut upstream = TcpStream::connect(target).await?;
                        tokio::io::copy_bidirectional(&mut stream, &mut upstream).await?;
                    }
                    None => {
                        let mut stream = stream;
                        let mut upstream = TcpStream::connect(target).await?;
                        tokio::io::copy_bidirectional(&mut stream, &mut upstream).await?;
                    }
                }
                std::io::Result::Ok(())
            };
            tokio::select! {
                _ = token.cancelled() => {}
                // A client that goes away mid-handshake or mid-stream is its own affair.
                _ = forward => {}
            }
        });
        while connections.try_join_next().is_some() {}
    }
    connections.shutdown().await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::unwrap_used)]
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::TlsConnector;
    use tokio_rustls::rustls::{ClientConfig, RootCertStore};

    async fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        addr
    }

    async fn connect(front: SocketAddr, trusted: &[CertificateDer<'static>]) -> Result<String> {
        let mut roots = RootCertStore::empty();
        for cert in trusted {
            roots.add(cert.clone())?;
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let stream = TcpStream::connect(front).await?;
        let name = rustls::pki_types::ServerName::IpAddress(front.ip().into());
        let mut tls = TlsConnector::from(Arc::new(config))
            .connect(name, stream)
            .await?;
        tls.write_all(b"ping").await?;
        let mut buf = [0u8; 4];
        tls.read_exact(&mut buf).await?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    #[tokio::test]
    async fn a_client_trusting_the_ca_reaches_the_target_through_the_front_and_others_are_refused()
    {
        let ca = TestCa::new("orrery test CA").unwrap();
        assert!(ca.pem().starts_with("-----BEGIN CERTIFICATE-----"));
        let target = echo_server().await;
        let front = Front::tls("127.0.0.1:0".parse().unwrap(), target, &ca)
            .await
            .unwrap();
        assert_eq!(connect(front.addr(), &[ca.der()]).await.unwrap(), "ping");
        let other = TestCa::new("another CA").unwrap();
        let refused = connect(front.addr(), &[other.der()]).await;
        assert!(refused.is_err(), "a client trusting another CA connected");
        let addr = front.addr();
        front.stop().await;
        assert!(
            TcpStream::connect(addr).await.is_err(),
            "still listening after stop"
        );
    }

    #[tokio::test]
    async fn a_plain_front_forwards_both_ways() {
        let target = echo_server().await;
        let front = Front::tcp("127.0.0.1:0".parse().unwrap(), target)
            .await
            .unwrap();
        let mut s = TcpStream::connect(front.addr()).await.unwrap();
        s.write_all(b"pong").await.unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"pong");
    }

    #[tokio::test]
    async fn a_retargeted_front_sends_new_connections_to_the_new_target() {
        let first = echo_server().await;
        let second = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let second_addr = second.local_addr().unwrap();
        let front = Front::tcp("127.0.0.1:0".parse().unwrap(), first)
            .await
            .unwrap();
        front.retarget(second_addr);
        assert_eq!(front.target(), second_addr);
        let _client = TcpStream::connect(front.addr()).await.unwrap();
        let accepted =
            tokio::time::timeout(std::time::Duration::from_secs(5), second.accept()).await;
        assert!(accepted.is_ok(), "the new target got the connection");
    }
}
