//! The guarded client's trusted roots. A runner pod gets the deployment's CAs
//! (`runner.trustedCertificates`) through `SSL_CERT_DIR=/etc/ssl/certs:/etc/orrery/trust`: a CA in
//! such a folder is trusted, a server whose CA is in none is refused, the policy's extra roots
//! (`ORRERY_A2A_CA_FILE`) are trusted, and a plain-http client never loads any roots.
//!
//! `SSL_CERT_DIR` is read from the process's environment, which a test cannot change while other
//! threads run, so those cases run this test binary again as a child with the variable set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use orrery_runner::net::{GuardPolicy, GuardedClient};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Set in a child: the folder holding the server's `server.pem` (chain) and `server.key`.
const CHILD_DIR: &str = "ORRERY_TLS_ROOTS_CHILD";
/// Set in a child: `trusted` or `refused`, what its handshake must end in.
const CHILD_EXPECT: &str = "ORRERY_TLS_ROOTS_EXPECT";
const CHILD_TEST: &str = "a_child_handshake_runs_only_when_a_parent_test_asks_for_it";

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// A throwaway CA and a certificate for 127.0.0.1 it signed: (CA PEM, chain PEM, key PEM).
fn ca_and_server() -> (String, String, String) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "orrery tls_roots test CA");
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    params.subject_alt_names = vec![SanType::IpAddress(LOCALHOST)];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca).unwrap();
    (
        ca.pem(),
        format!("{}{}", cert.pem(), ca.pem()),
        key.serialize_pem(),
    )
}

/// An https server on loopback answering every request `200 ok`.
async fn tls_server(chain_pem: &str, key_pem: &str) -> SocketAddr {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain_pem.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
    let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(stream) = acceptor.accept(tcp).await {
                    answer_ok(stream).await;
                }
            });
        }
    });
    addr
}

/// A plain-http server on loopback answering every request `200 ok`.
async fn http_server() -> SocketAddr {
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(answer_ok(tcp));
        }
    });
    addr
}

async fn answer_ok<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut stream: S) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let reply = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";
    let _ = stream.write_all(reply).await;
    let _ = stream.shutdown().await;
}

fn loopback_client(extra_roots_pem: Vec<Vec<u8>>) -> GuardedClient {
    GuardedClient::new(GuardPolicy {
        loopback: true,
        extra_roots_pem,
        ..GuardPolicy::default()
    })
    .unwrap()
}

/// GET `url` through `client`: the status, or the error's text.
async fn get(client: &GuardedClient, url: &str) -> Result<u16, String> {
    let request = client.get(url).map_err(|e| e.to_string())?;
    client
        .send(request)
        .await
        .map(|r| r.status().as_u16())
        .map_err(|e| e.to_string())
}

/// A fresh folder under the system's temporary folder.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("orrery-tls-roots-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs [`CHILD_TEST`] in a child of this test binary with `SSL_CERT_DIR=ssl_cert_dir` and the
/// server's files in `dir`, expecting `expect`; fails with the child's output if it fails.
fn run_child(dir: &Path, ssl_cert_dir: &str, expect: &str) {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads", "1"])
        .env("SSL_CERT_DIR", ssl_cert_dir)
        .env_remove("SSL_CERT_FILE")
        .env(CHILD_DIR, dir)
        .env(CHILD_EXPECT, expect)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "the child ({expect}, SSL_CERT_DIR={ssl_cert_dir}) failed:\n{stdout}\n{stderr}"
    );
}

/// The child's half: an https request to a server whose chain is in [`CHILD_DIR`], ending as
/// [`CHILD_EXPECT`] says. Does nothing (and passes) when no parent asked for it.
#[tokio::test]
async fn a_child_handshake_runs_only_when_a_parent_test_asks_for_it() {
    let (Some(dir), Some(expect)) = (
        std::env::var_os(CHILD_DIR),
        std::env::var(CHILD_EXPECT).ok(),
    ) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let chain = std::fs::read_to_string(dir.join("server.pem")).unwrap();
    let key = std::fs::read_to_string(dir.join("server.key")).unwrap();
    let addr = tls_server(&chain, &key).await;
    let client = loopback_client(Vec::new());
    assert!(
        !client.roots_loaded(),
        "no roots before the first handshake"
    );
    let got = get(&client, &format!("https://{addr}/")).await;
    assert!(client.roots_loaded());
    match expect.as_str() {
        "trusted" => assert_eq!(got, Ok(200)),
        _ => {
            let err = got.expect_err("a server whose CA is trusted nowhere is refused");
            assert!(err.contains("certificate"), "{err}");
        }
    }
}

#[test]
fn a_ca_in_an_ssl_cert_dir_folder_is_trusted_as_in_a_runner_pod() {
    let (ca, chain, key) = ca_and_server();
    let dir = scratch("trusted");
    let trust = dir.join("trust");
    std::fs::create_dir_all(&trust).unwrap();
    std::fs::write(trust.join("orrery-ca.pem"), ca).unwrap();
    std::fs::write(dir.join("server.pem"), chain).unwrap();
    std::fs::write(dir.join("server.key"), key).unwrap();
    // The runner pod's value: the image's CA folder, then the deployment's.
    run_child(
        &dir,
        &format!("/etc/ssl/certs:{}", trust.display()),
        "trusted",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_server_whose_ca_is_in_no_trusted_folder_is_refused() {
    let (_, chain, key) = ca_and_server();
    let dir = scratch("refused");
    std::fs::write(dir.join("server.pem"), chain).unwrap();
    std::fs::write(dir.join("server.key"), key).unwrap();
    run_child(&dir, "/etc/ssl/certs", "refused");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_policys_extra_roots_are_trusted() {
    let (ca, chain, key) = ca_and_server();
    let addr = tls_server(&chain, &key).await;
    let client = loopback_client(vec![ca.into_bytes()]);
    assert_eq!(get(&client, &format!("https://{addr}/")).await, Ok(200));
    let stranger = loopback_client(Vec::new());
    let err = get(&stranger, &format!("https://{addr}/")).await;
    assert!(err.is_err(), "{err:?}");
}

#[tokio::test]
async fn a_plain_http_loopback_client_never_loads_the_roots() {
    let addr = http_server().await;
    let client = loopback_client(Vec::new());
    assert_eq!(get(&client, &format!("http://{addr}/")).await, Ok(200));
    assert_eq!(get(&client, &format!("http://{addr}/")).await, Ok(200));
    assert!(!client.roots_loaded());
}
