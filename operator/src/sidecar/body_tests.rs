//! Over real TCP connections to a served router (issue 29 item 2, rule 11.18): declared and chunked
//! bodies over the limit, with and without `Expect: 100-continue`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use super::super::tests::{run_token, sidecar};
use super::MAX_BODY_BYTES;
use orrery_crds::events::ingest::{ApiError, MAX_BATCH_BYTES};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn served() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = super::super::router(sidecar().await);
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// Reads one response (its head, then `Content-Length` bytes of body, or up to the close).
async fn read_response(stream: &mut TcpStream) -> (String, String) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let read = async {
        loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_string();
                let length = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if buf.len() >= end + 4 + length {
                    let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + length]).to_string();
                    return (head, body);
                }
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => {
                    return (String::from_utf8_lossy(&buf).to_string(), String::new());
                }
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .expect("a reply within 20 s")
}

fn assert_too_large(head: &str, body: &str, limit: usize) {
    assert!(head.starts_with("HTTP/1.1 413"), "{head}\n{body}");
    let error: ApiError = serde_json::from_str(body).expect("the API's JSON error");
    assert_eq!(error.code, "too_large", "{body}");
    assert!(error.message.contains(&limit.to_string()), "{body}");
}

#[tokio::test]
async fn a_declared_body_over_the_limit_gets_the_json_413_before_it_is_read_with_or_without_expect()
{
    let addr = served().await;
    for size in [3 * 1024 * 1024, 20 * 1024 * 1024] {
        for expect in [true, false] {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            let head = format!(
                "POST /api/v1/namespaces/team/validate HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {size}\r\n{}\r\n",
                if expect {
                    "expect: 100-continue\r\n"
                } else {
                    ""
                }
            );
            stream.write_all(head.as_bytes()).await.unwrap();
            if !expect {
                // A little of the body, as a client that does not wait would send.
                let _ = stream.write_all(&[b' '; 16 * 1024]).await;
            }
            let (head, body) = read_response(&mut stream).await;
            assert!(!head.contains("100 Continue"), "{size} {expect}: {head}");
            assert_too_large(&head, &body, MAX_BODY_BYTES);
        }
    }
}

#[tokio::test]
async fn an_internal_route_refuses_a_declared_body_over_its_own_cap() {
    let addr = served().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let size = MAX_BATCH_BYTES + 1;
    let head = format!(
        "POST /internal/v1/runs/uid-1/events HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {size}\r\nexpect: 100-continue\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let (head, body) = read_response(&mut stream).await;
    assert_too_large(&head, &body, MAX_BATCH_BYTES);
}

#[tokio::test]
async fn a_chunked_body_is_cut_with_the_json_413_once_it_passes_the_limit_with_or_without_expect() {
    let addr = served().await;
    let token = run_token("uid-1");
    for expect in [true, false] {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "POST /internal/v1/runs/uid-1/events HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n{}\r\n",
            if expect {
                "expect: 100-continue\r\n"
            } else {
                ""
            }
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        if expect {
            let mut first = [0u8; 25];
            stream.read_exact(&mut first).await.unwrap();
            assert!(
                String::from_utf8_lossy(&first).starts_with("HTTP/1.1 100 Continue"),
                "{}",
                String::from_utf8_lossy(&first)
            );
        }
        // Twice the cap, in 64 KiB chunks; the server may stop reading once past it.
        let piece = vec![b' '; 64 * 1024];
        let mut sent = 0;
        while sent <= 2 * MAX_BATCH_BYTES {
            let frame = [
                format!("{:x}\r\n", piece.len()).into_bytes(),
                piece.clone(),
                b"\r\n".to_vec(),
            ]
            .concat();
            if tokio::time::timeout(Duration::from_secs(2), stream.write_all(&frame))
                .await
                .map_or(true, |r| r.is_err())
            {
                break;
            }
            sent += piece.len();
        }
        let (head, body) = read_response(&mut stream).await;
        assert_too_large(&head, &body, MAX_BATCH_BYTES);
    }
}
