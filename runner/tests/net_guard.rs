//! The network guard with real sockets on loopback (security anchors "Network guard" 6–17;
//! rules 5.22–5.40). A resolver we control stands in for DNS.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use futures::future::BoxFuture;
use orrery_runner::net::{
    GuardError, GuardPolicy, GuardedClient, NameResolver, Rule, SseLimits, SseReader,
    StaticResolver, read_capped,
};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the test server sends after reading a request head.
#[derive(Clone)]
enum Reply {
    /// These bytes, then close.
    Fixed(Vec<u8>),
    /// A head, then `chunk` forever (until the client goes away).
    Endless { head: Vec<u8>, chunk: Vec<u8> },
    /// A head, then one byte every `every`.
    Drip { head: Vec<u8>, every: Duration },
}

struct Server {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
    fn port(&self) -> u16 {
        self.addr.port()
    }
}

async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).to_string()
}

async fn serve(reply: Reply) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (c, r) = (connections.clone(), requests.clone());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            c.fetch_add(1, Ordering::SeqCst);
            let (reply, requests) = (reply.clone(), r.clone());
            tokio::spawn(async move {
                let head = read_head(&mut stream).await;
                requests.lock().unwrap().push(head);
                match reply {
                    Reply::Fixed(bytes) => {
                        let _ = stream.write_all(&bytes).await;
                        let _ = stream.shutdown().await;
                    }
                    Reply::Endless { head, chunk } => {
                        if stream.write_all(&head).await.is_err() {
                            return;
                        }
                        while stream.write_all(&chunk).await.is_ok() {}
                    }
                    Reply::Drip { head, every } => {
                        if stream.write_all(&head).await.is_err() {
                            return;
                        }
                        loop {
                            tokio::time::sleep(every).await;
                            if stream.write_all(b"a").await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    Server {
        addr,
        connections,
        requests,
    }
}

fn ok(body: &str) -> Reply {
    Reply::Fixed(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

fn loopback_policy() -> GuardPolicy {
    GuardPolicy {
        loopback: true,
        ..GuardPolicy::default()
    }
}

fn client(policy: GuardPolicy, resolver: StaticResolver) -> GuardedClient {
    GuardedClient::with_resolver(policy, Arc::new(resolver)).unwrap()
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Sends `url` through the raw reqwest client (no pre-send check), so only the resolver and
/// the connector layer can refuse it.
async fn raw_get(c: &GuardedClient, url: &str) -> Result<reqwest::Response, GuardError> {
    c.reqwest()
        .get(url)
        .send()
        .await
        .map_err(|e| GuardError::from_reqwest(url, e))
}

fn refused_rule(result: Result<reqwest::Response, GuardError>) -> Rule {
    match result {
        Err(GuardError::Refused { rule, .. }) => rule,
        Err(other) => panic!("expected a refusal, got: {other}"),
        Ok(r) => panic!("expected a refusal, got HTTP {}", r.status()),
    }
}

#[tokio::test]
async fn a_loopback_entry_reaches_a_server_on_127_0_0_1_asking_for_identity_encoding() {
    let server = serve(ok("hello")).await;
    let c = client(loopback_policy(), StaticResolver::new());
    let url = format!("http://127.0.0.1:{}/card", server.port());
    let (status, _, body) = c.fetch_capped(c.get(&url).unwrap(), 1024).await.unwrap();
    assert_eq!((status.as_u16(), &body[..]), (200, &b"hello"[..]));
    let head = server.requests.lock().unwrap()[0].to_ascii_lowercase();
    assert!(head.contains("accept-encoding: identity\r\n"), "{head}");
}

#[tokio::test]
async fn localhost_reaches_loopback_for_a_loopback_entry() {
    let server = serve(ok("hi")).await;
    let c = client(
        loopback_policy(),
        StaticResolver::new().with("localhost", &[ip("127.0.0.1")]),
    );
    let url = format!("http://localhost:{}/", server.port());
    let body = read_capped(c.send(c.get(&url).unwrap()).await.unwrap(), 64)
        .await
        .unwrap();
    assert_eq!(&body[..], b"hi");
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_refused_before_any_connection() {
    let server = serve(ok("x")).await;
    let resolver = StaticResolver::new().with("app.test", &[ip("127.0.0.1")]);
    for policy in [GuardPolicy::default(), loopback_policy()] {
        let c = client(policy, resolver.clone());
        let url = format!("https://app.test:{}/", server.port());
        assert_eq!(
            refused_rule(raw_get(&c, &url).await),
            Rule::LoopbackNotAllowed
        );
        let err = c.send(c.reqwest().get(&url)).await.unwrap_err();
        assert!(
            err.to_string()
                .contains("refused app.test at 127.0.0.1 (loopback is reachable only"),
            "{err}"
        );
        // Plain http to a non-loopback name is refused by the connector itself.
        let url = format!("http://app.test:{}/", server.port());
        assert_eq!(
            refused_rule(raw_get(&c, &url).await),
            Rule::PlainHttpOffLoopback(None)
        );
    }
    assert_eq!(server.connections(), 0);
}

#[tokio::test]
async fn redirects_are_never_followed_even_to_the_same_host() {
    for status in [301u16, 302, 303, 307, 308] {
        let reply = format!(
            "HTTP/1.1 {status} Moved\r\nLocation: /elsewhere\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        let server = serve(Reply::Fixed(reply.into_bytes())).await;
        let c = client(loopback_policy(), StaticResolver::new());
        let url = format!("http://127.0.0.1:{}/card", server.port());
        match c.send(c.get(&url).unwrap()).await {
            Err(GuardError::Redirect {
                status: s,
                location,
                ..
            }) => {
                assert_eq!((s, location.as_deref()), (status, Some("/elsewhere")));
            }
            other => panic!("{status}: {other:?}"),
        }
        // The raw client does not follow either: it hands back the 3xx.
        assert_eq!(raw_get(&c, &url).await.unwrap().status().as_u16(), status);
        let requests = server.requests.lock().unwrap().clone();
        assert!(
            requests.iter().all(|r| r.starts_with("GET /card ")),
            "{requests:?}"
        );
        assert_eq!(requests.len(), 2, "one request per send, no follow-up");
    }
}

#[tokio::test]
async fn compressed_replies_are_refused_before_decoding() {
    for encoding in ["gzip", "br", "deflate, identity"] {
        let mut reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Encoding: {encoding}\r\nContent-Length: 4\r\nConnection: close\r\n\r\n"
        )
        .into_bytes();
        reply.extend_from_slice(&[0x1f, 0x8b, 0x08, 0x00]);
        let server = serve(Reply::Fixed(reply)).await;
        let c = client(loopback_policy(), StaticResolver::new());
        let url = format!("http://127.0.0.1:{}/", server.port());
        let err = c.send(c.get(&url).unwrap()).await.unwrap_err();
        assert!(
            matches!(&err, GuardError::CompressedReply { encoding: e, .. } if e == encoding),
            "{err}"
        );
        let raw = raw_get(&c, &url).await.unwrap();
        assert!(matches!(
            read_capped(raw, 1024).await,
            Err(GuardError::CompressedReply { .. })
        ));
    }
}

#[tokio::test]
async fn an_oversized_body_is_refused_by_its_content_length() {
    let reply = "HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\nabc";
    let server = serve(Reply::Fixed(reply.as_bytes().to_vec())).await;
    let c = client(loopback_policy(), StaticResolver::new());
    let url = format!("http://127.0.0.1:{}/", server.port());
    let err = c
        .fetch_capped(c.get(&url).unwrap(), 64 * 1024)
        .await
        .unwrap_err();
    assert!(
        matches!(err, GuardError::TooLarge { limit: 65536, .. }),
        "{err}"
    );
}

#[tokio::test]
async fn an_endless_chunked_body_is_refused_at_the_cap() {
    let server = serve(Reply::Endless {
        head: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec(),
        chunk: b"400\r\n"
            .iter()
            .chain([b'x'; 1024].iter())
            .chain(b"\r\n")
            .copied()
            .collect(),
    })
    .await;
    let c = client(loopback_policy(), StaticResolver::new());
    let url = format!("http://127.0.0.1:{}/", server.port());
    let err = c
        .fetch_capped(c.get(&url).unwrap(), 100_000)
        .await
        .unwrap_err();
    assert!(
        matches!(err, GuardError::TooLarge { limit: 100_000, .. }),
        "{err}"
    );
}

fn sse_head() -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n".to_vec()
}

async fn sse_error(reply: Reply, limits: SseLimits) -> GuardError {
    let server = serve(reply).await;
    let c = client(loopback_policy(), StaticResolver::new());
    let url = format!("http://127.0.0.1:{}/sse", server.port());
    let mut reader = SseReader::new(c.send(c.get(&url).unwrap()).await.unwrap(), limits).unwrap();
    loop {
        match reader.next_event().await {
            Ok(Some(_)) => {}
            Ok(None) => panic!("the stream ended without hitting a limit"),
            Err(e) => return e,
        }
    }
}

#[tokio::test]
async fn an_endless_stream_of_small_events_is_capped() {
    let limits = SseLimits {
        max_event_bytes: 1024,
        max_total_bytes: Some(50_000),
        idle_timeout: Some(Duration::from_secs(5)),
        total_timeout: None,
    };
    let err = sse_error(
        Reply::Endless {
            head: sse_head(),
            chunk: b"data: x\n\n".to_vec(),
        },
        limits,
    )
    .await;
    assert!(
        matches!(
            err,
            GuardError::TooLarge {
                what: "SSE stream",
                limit: 50_000,
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn an_event_line_without_a_newline_is_capped() {
    let limits = SseLimits {
        max_event_bytes: 4096,
        max_total_bytes: None,
        idle_timeout: Some(Duration::from_secs(5)),
        total_timeout: None,
    };
    let mut head = sse_head();
    head.extend_from_slice(b"data: ");
    let err = sse_error(
        Reply::Endless {
            head,
            chunk: vec![b'a'; 512],
        },
        limits,
    )
    .await;
    assert!(
        matches!(
            err,
            GuardError::TooLarge {
                what: "SSE event",
                limit: 4096,
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_slow_drip_ends_at_the_total_timeout() {
    let limits = SseLimits {
        max_event_bytes: 1 << 20,
        max_total_bytes: None,
        idle_timeout: Some(Duration::from_secs(5)),
        total_timeout: Some(Duration::from_millis(400)),
    };
    let started = std::time::Instant::now();
    let err = sse_error(
        Reply::Drip {
            head: sse_head(),
            every: Duration::from_millis(20),
        },
        limits,
    )
    .await;
    assert!(matches!(err, GuardError::Timeout { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[tokio::test]
async fn a_name_with_a_public_and_a_metadata_address_is_refused() {
    let resolver = StaticResolver::new()
        .with(
            "mixed.example",
            &[ip("93.184.216.34"), ip("169.254.169.254")],
        )
        .with(
            "mixed6.example",
            &[ip("2606:4700::1111"), ip("fd00:ec2::254")],
        )
        .with("private.example", &[ip("93.184.216.34"), ip("10.0.0.7")]);
    let c = client(GuardPolicy::default(), resolver);
    for (url, rule) in [
        ("https://mixed.example/", Rule::LinkLocalOrMetadata),
        ("https://mixed6.example/", Rule::LinkLocalOrMetadata),
        ("https://private.example/", Rule::PrivateNotAllowed),
    ] {
        assert_eq!(refused_rule(raw_get(&c, url).await), rule, "{url}");
    }
}

#[tokio::test]
async fn metadata_literals_are_refused_in_the_connector_where_no_resolver_runs() {
    let c = client(
        GuardPolicy {
            private_network: true,
            ..loopback_policy()
        },
        StaticResolver::new(),
    );
    for url in [
        "http://[::ffff:169.254.169.254]/latest/meta-data/",
        "https://[::ffff:169.254.169.254]/",
        "https://169.254.169.254/",
        "https://[fd00:ec2::254]/",
        "https://100.100.100.200/",
        "https://[64:ff9b::a9fe:a9fe]/",
        "https://[fe80::1]/",
    ] {
        let started = std::time::Instant::now();
        let rule = refused_rule(raw_get(&c, url).await);
        assert!(
            matches!(
                rule,
                Rule::LinkLocalOrMetadata | Rule::PlainHttpOffLoopback(Some(_))
            ),
            "{url}: {rule}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{url} was refused without connecting"
        );
    }
}

#[tokio::test]
async fn every_spelling_of_loopback_is_refused_for_a_non_loopback_entry() {
    let server = serve(ok("loop")).await;
    let port = server.port();
    let spellings = ["2130706433", "0x7f.1", "0177.0.0.1", "127.1", "①②⑦.0.0.1"];
    let public = client(GuardPolicy::default(), StaticResolver::new());
    for host in spellings {
        let url = format!("http://{host}:{port}/");
        assert_eq!(
            refused_rule(raw_get(&public, &url).await),
            Rule::LoopbackNotAllowed,
            "{url}"
        );
    }
    assert_eq!(server.connections(), 0);
}

/// Table (issue 29, rule 5.24): a loopback entry too is refused every spelling of loopback
/// that is not written exactly, in the guard itself (`GuardedClient::get`/`post`, and so every
/// caller: the probe, MCP, A2A, models), while the exact hosts reach the same server.
#[tokio::test]
async fn a_loopback_entry_reaches_loopback_only_through_a_host_written_exactly() {
    let server = serve(ok("loop")).await;
    let port = server.port();
    let resolver = StaticResolver::new().with("localhost", &[ip("127.0.0.1")]);
    let local = client(loopback_policy(), resolver);
    let spellings = [
        "2130706433",
        "0x7f000001",
        "017700000001",
        "0x7f.1",
        "0x7f.0.0.1",
        "0177.0.0.1",
        "127.1",
        "127.0.1",
        "127.0.0.1.",
        "①②⑦.0.0.1",
        "LOCALHOST",
        "Localhost",
    ];
    for host in spellings {
        for scheme in ["http", "https"] {
            let url = format!("{scheme}://{host}:{port}/");
            match local.get(&url) {
                Err(GuardError::Refused {
                    host: written,
                    rule: Rule::LoopbackNotWrittenExactly(why),
                    ..
                }) => {
                    assert!(why.contains("not written exactly"), "{url}: {why}");
                    assert_eq!(
                        written, host,
                        "{url}: the refusal names the host as written"
                    );
                }
                other => panic!("{url}: expected a refusal, got {other:?}"),
            }
        }
    }
    // Embedded forms name no loopback host: the address rule refuses them.
    for host in ["[::ffff:127.0.0.1]", "[::ffff:7f00:1]"] {
        let url = format!("https://{host}:{port}/");
        assert!(
            matches!(
                local.get(&url),
                Err(GuardError::Refused {
                    rule: Rule::EmbeddedNonPublic { .. },
                    ..
                })
            ),
            "{url}"
        );
    }
    assert_eq!(server.connections(), 0);
    for host in ["127.0.0.1", "localhost"] {
        let url = format!("http://{host}:{port}/");
        let request = local.get(&url).expect("an exact loopback host passes");
        let response = local.send(request).await.expect("the server answers");
        assert_eq!(response.status().as_u16(), 200, "{url}");
    }
    assert_eq!(server.connections(), 2);
}

#[tokio::test]
async fn embedded_and_unspecified_forms_never_connect() {
    let server = serve(ok("x")).await;
    let port = server.port();
    let c = client(loopback_policy(), StaticResolver::new());
    for host in [
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[::127.0.0.1]",
        "0.0.0.0",
        "0",
        "[::]",
    ] {
        let url = format!("https://{host}:{port}/");
        let rule = refused_rule(raw_get(&c, &url).await);
        assert!(
            matches!(rule, Rule::EmbeddedNonPublic { .. } | Rule::NotUnicast(_)),
            "{url}: {rule}"
        );
    }
    assert_eq!(server.connections(), 0);
}

#[tokio::test]
async fn localhost_lookalikes_and_a_non_loopback_localhost_never_connect() {
    let server = serve(ok("x")).await;
    let port = server.port();
    let resolver = StaticResolver::new()
        .with("localhost.", &[ip("127.0.0.1")])
        .with("localhost.attacker.tld", &[ip("127.0.0.1")]);
    let c = client(loopback_policy(), resolver);
    for host in ["localhost.", "localhost.attacker.tld"] {
        let url = format!("https://{host}:{port}/");
        assert_eq!(
            refused_rule(raw_get(&c, &url).await),
            Rule::LoopbackNotAllowed,
            "{url}"
        );
    }
    let c = client(
        loopback_policy(),
        StaticResolver::new().with("localhost", &[ip("93.184.216.34")]),
    );
    let url = format!("http://localhost:{port}/");
    assert_eq!(
        refused_rule(raw_get(&c, &url).await),
        Rule::LoopbackHostNotLoopback
    );
    assert_eq!(server.connections(), 0);
}

/// Answers `localhost` with 127.0.0.1 once, then with the metadata address (DNS rebinding).
struct Rebinding(AtomicUsize);

impl NameResolver for Rebinding {
    fn lookup(&self, _host: &str) -> BoxFuture<'static, Result<Vec<IpAddr>, GuardError>> {
        let n = self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            Ok(vec![if n == 0 {
                ip("127.0.0.1")
            } else {
                ip("169.254.169.254")
            }])
        })
    }
}

#[tokio::test]
async fn dns_rebinding_is_caught_at_the_next_connect() {
    let server = serve(ok("first")).await; // Connection: close, so each request connects anew
    let c =
        GuardedClient::with_resolver(loopback_policy(), Arc::new(Rebinding(AtomicUsize::new(0))))
            .unwrap();
    let url = format!("http://localhost:{}/", server.port());
    assert_eq!(
        raw_get(&c, &url).await.unwrap().text().await.unwrap(),
        "first"
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        refused_rule(raw_get(&c, &url).await),
        Rule::LinkLocalOrMetadata
    );
    assert_eq!(server.connections(), 1);
}

/// A fake egress proxy: records what it receives and answers CONNECT with `answer`.
async fn fake_proxy(answer: &'static str) -> (SocketAddr, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let s = s.clone();
            tokio::spawn(async move {
                let head = read_head(&mut stream).await;
                s.lock().unwrap().extend_from_slice(head.as_bytes());
                let _ = stream.write_all(answer.as_bytes()).await;
                // After a 200, record what the client sends through the tunnel.
                let mut buf = vec![0u8; 4096];
                if let Ok(Ok(n)) =
                    tokio::time::timeout(Duration::from_secs(2), stream.read(&mut buf)).await
                {
                    s.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            });
        }
    });
    (addr, seen)
}

fn proxied_policy(proxy: SocketAddr) -> GuardPolicy {
    GuardPolicy {
        egress_proxy: Some(format!("http://user:secret@{proxy}").parse().unwrap()),
        limits: orrery_runner::net::Limits {
            connect_timeout: Duration::from_secs(3),
            ..Default::default()
        },
        ..loopback_policy()
    }
}

#[tokio::test]
async fn a_refused_connect_tunnel_fails_closed_and_names_the_destination() {
    for (answer, reason) in [
        ("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n", "407"),
        ("HTTP/1.1 403 Forbidden\r\n\r\n", "non-200 reply"),
    ] {
        let (proxy, seen) = fake_proxy(answer).await;
        // An empty resolver: the destination name must never be resolved locally.
        let c = client(proxied_policy(proxy), StaticResolver::new());
        let err = c
            .send(c.get("https://api.example.test/v1").unwrap())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("egress proxy refused CONNECT to api.example.test:443 ({reason})")
        );
        let seen = String::from_utf8_lossy(&seen.lock().unwrap()).to_string();
        assert!(
            seen.starts_with("CONNECT api.example.test:443 HTTP/1.1\r\n"),
            "{seen}"
        );
    }
}

#[tokio::test]
async fn tls_runs_end_to_end_through_the_tunnel_and_proxy_credentials_stay_with_the_proxy() {
    let (proxy, seen) = fake_proxy("HTTP/1.1 200 Connection established\r\n\r\n").await;
    let c = client(proxied_policy(proxy), StaticResolver::new());
    // The fake proxy is no TLS server, so the request fails after the ClientHello.
    assert!(
        c.send(c.get("https://api.example.test/v1").unwrap())
            .await
            .is_err()
    );
    let seen = seen.lock().unwrap().clone();
    let split = seen.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let (connect, tunnel) = seen.split_at(split);
    let connect = String::from_utf8_lossy(connect).to_ascii_lowercase();
    assert!(connect.contains("proxy-authorization: basic"), "{connect}");
    // Inside the tunnel: a TLS handshake record naming the origin (SNI), no plaintext HTTP.
    assert_eq!(&tunnel[..1], &[0x16], "a TLS handshake record");
    assert!(
        tunnel.windows(16).any(|w| w == b"api.example.test"),
        "SNI is the origin"
    );
    assert!(
        !tunnel
            .windows(19)
            .any(|w| w.eq_ignore_ascii_case(b"proxy-authorization"))
    );
}

#[tokio::test]
async fn loopback_goes_direct_when_an_egress_proxy_is_set() {
    let (proxy, seen) = fake_proxy("HTTP/1.1 403 Forbidden\r\n\r\n").await;
    let server = serve(ok("direct")).await;
    let c = client(proxied_policy(proxy), StaticResolver::new());
    let url = format!("http://127.0.0.1:{}/", server.port());
    assert_eq!(
        raw_get(&c, &url).await.unwrap().text().await.unwrap(),
        "direct"
    );
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn the_proxy_name_is_exempt_only_on_the_proxied_route() {
    let (proxy, seen) = fake_proxy("HTTP/1.1 403 Forbidden\r\n\r\n").await;
    let resolver = || {
        StaticResolver::new()
            .with("egress.proxy.test", &[ip("127.0.0.1")])
            .with("api.example.test", &[ip("93.184.216.34")])
    };
    let policy = |private_network: bool| GuardPolicy {
        egress_proxy: Some(
            format!("http://egress.proxy.test:{}", proxy.port())
                .parse()
                .unwrap(),
        ),
        private_network,
        limits: orrery_runner::net::Limits {
            connect_timeout: Duration::from_secs(3),
            ..Default::default()
        },
        ..GuardPolicy::default()
    };
    // Proxied: the proxy's name resolves to loopback, which deployment configuration may use.
    let c = client(policy(false), resolver());
    let err = c
        .send(c.get("https://api.example.test/v1").unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(err, GuardError::ProxyRefused { .. }),
        "the tunnel was asked for: {err}"
    );
    assert!(!seen.lock().unwrap().is_empty());
    // Direct (a privateNetwork entry): a destination sharing the proxy's name gets the entry's
    // rules, and loopback is not among them.
    let c = client(policy(true), resolver());
    let rule = refused_rule(raw_get(&c, "https://egress.proxy.test/").await);
    assert_eq!(rule, Rule::LoopbackNotAllowed);
}

const CHILD_URL: &str = "ORRERY_NET_TEST_CHILD_URL";

#[tokio::test]
async fn proxy_environment_variables_are_ignored() {
    if let Ok(base) = std::env::var(CHILD_URL) {
        // Child: proxy variables are set; the guarded client must not use them.
        let c = client(loopback_policy(), StaticResolver::new());
        let url = format!("{base}guarded");
        assert_eq!(raw_get(&c, &url).await.unwrap().status().as_u16(), 200);
        // Control: a default reqwest client does use them, so the variables are in effect.
        let control = reqwest::Client::new()
            .get(format!("{base}control"))
            .send()
            .await;
        drop(control);
        return;
    }
    let server = serve(ok("ok")).await;
    let (proxy, seen) = fake_proxy("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n").await;
    let proxy_url = format!("http://{proxy}");
    let exe = std::env::current_exe().unwrap();
    let mut cmd = tokio::process::Command::new(exe);
    cmd.args([
        "proxy_environment_variables_are_ignored",
        "--exact",
        "--test-threads=1",
    ])
    .env(CHILD_URL, format!("http://127.0.0.1:{}/", server.port()))
    .env_remove("NO_PROXY")
    .env_remove("no_proxy");
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        cmd.env(var, &proxy_url);
    }
    let out = cmd.output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let seen = String::from_utf8_lossy(&seen.lock().unwrap()).to_string();
    assert!(
        !seen.contains("/guarded"),
        "the guarded request went to the proxy: {seen}"
    );
    assert!(
        seen.contains("/control"),
        "control: the variables were not in effect: {seen}"
    );
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests.iter().any(|r| r.starts_with("GET /guarded ")),
        "{requests:?}"
    );
}
