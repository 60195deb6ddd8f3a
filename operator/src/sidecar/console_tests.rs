//! Serving the console: files, the page fallback, caching, both policies, and every way out of
//! the directory refused with the API's JSON 404.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use super::CONSOLE_CSP;
use crate::sidecar::{SidecarSettings, router};
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use std::path::PathBuf;
use tower::ServiceExt;

const API_CSP: &str = "default-src 'none'; frame-ancestors 'none'";

/// A console directory (`index.html`, a hashed asset, a file at the top) beside a secret file
/// outside it, and a symlink inside that points at the secret.
fn console_dir(name: &str) -> (PathBuf, PathBuf) {
    let root = std::env::temp_dir().join(format!("orrery-console-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let dir = root.join("console");
    std::fs::create_dir_all(dir.join("assets")).unwrap();
    std::fs::write(
        dir.join("index.html"),
        "<!doctype html><title>Orrery</title>",
    )
    .unwrap();
    std::fs::write(dir.join("assets/app-1a2b3c.js"), "console.log(1)").unwrap();
    std::fs::write(dir.join("favicon.svg"), "<svg/>").unwrap();
    std::fs::write(root.join("secret.txt"), "not for you").unwrap();
    std::os::unix::fs::symlink(root.join("secret.txt"), dir.join("leak.txt")).unwrap();
    std::os::unix::fs::symlink(&root, dir.join("up")).unwrap();
    (root, dir)
}

async fn app(dir: Option<PathBuf>) -> axum::Router {
    let settings = SidecarSettings {
        console_dir: dir,
        ..SidecarSettings::default()
    };
    router(crate::sidecar::tests::sidecar_with(&settings).await)
}

async fn call(
    app: &axum::Router,
    method: Method,
    path: &str,
) -> (StatusCode, axum::http::HeaderMap, String) {
    let response = app
        .clone()
        .oneshot(
            Request::builder()
                .method(method)
                .uri(path)
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

fn header(headers: &axum::http::HeaderMap, name: header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

#[tokio::test]
async fn a_file_is_served_with_its_type_its_caching_and_the_consoles_policy() {
    let (root, dir) = console_dir("files");
    let app = app(Some(dir)).await;
    let (status, headers, body) = call(&app, Method::GET, "/assets/app-1a2b3c.js").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, "console.log(1)");
    assert_eq!(
        header(&headers, header::CONTENT_TYPE),
        "text/javascript; charset=utf-8"
    );
    assert_eq!(
        header(&headers, header::CACHE_CONTROL),
        "public, max-age=31536000, immutable"
    );
    assert_eq!(
        header(&headers, header::CONTENT_SECURITY_POLICY),
        CONSOLE_CSP
    );
    assert_eq!(header(&headers, header::X_CONTENT_TYPE_OPTIONS), "nosniff");
    let (status, headers, body) = call(&app, Method::GET, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("<title>Orrery</title>"));
    assert_eq!(header(&headers, header::CACHE_CONTROL), "no-cache");
    assert_eq!(
        header(&headers, header::CONTENT_TYPE),
        "text/html; charset=utf-8"
    );
    let (status, headers, _) = call(&app, Method::GET, "/favicon.svg").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(header(&headers, header::CACHE_CONTROL), "no-cache");
    std::fs::remove_dir_all(root).unwrap();
}

#[tokio::test]
async fn a_page_path_is_the_index_and_head_answers_the_same_headers_without_a_body() {
    let (root, dir) = console_dir("pages");
    let app = app(Some(dir)).await;
    for path in ["/runs/team-a/notes-1", "/approvals", "/runs/team-a/"] {
        let (status, headers, body) = call(&app, Method::GET, path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(body.contains("<title>Orrery</title>"), "{path}");
        assert_eq!(
            header(&headers, header::CONTENT_SECURITY_POLICY),
            CONSOLE_CSP
        );
    }
    let (status, headers, body) = call(&app, Method::HEAD, "/runs/team-a/notes-1").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.is_empty());
    assert_eq!(
        header(&headers, header::CONTENT_TYPE),
        "text/html; charset=utf-8"
    );
    std::fs::remove_dir_all(root).unwrap();
}

#[tokio::test]
async fn every_way_out_of_the_directory_and_every_other_method_is_the_apis_json_404() {
    let (root, dir) = console_dir("escape");
    let app = app(Some(dir)).await;
    for (method, path) in [
        (Method::GET, "/../secret.txt"),
        (Method::GET, "/assets/../../secret.txt"),
        (Method::GET, "/%2e%2e/secret.txt"),
        (Method::GET, "/assets/%2E%2E/%2e%2e/secret.txt"),
        (Method::GET, "/..%2fsecret.txt"),
        (Method::GET, "/assets%5c..%5c..%5csecret.txt"),
        (Method::GET, "/leak.txt"),
        (Method::GET, "/up/secret.txt"),
        (Method::GET, "/%00"),
        (Method::GET, "/%ff"),
        (Method::GET, "/assets/missing-9z.js"),
        (Method::POST, "/"),
        (Method::PUT, "/index.html"),
        (Method::DELETE, "/runs/x"),
    ] {
        let (status, headers, body) = call(&app, method.clone(), path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {body}");
        assert!(!body.contains("not for you"), "{method} {path}");
        let json: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{method} {path}: not the API's JSON ({e}): {body}"));
        assert_eq!(json["code"], "not_found", "{method} {path}");
        assert_eq!(
            header(&headers, header::CONTENT_SECURITY_POLICY),
            API_CSP,
            "{path}"
        );
    }
    std::fs::remove_dir_all(root).unwrap();
}

#[tokio::test]
async fn api_paths_are_never_the_consoles_and_keep_the_apis_policy() {
    let (root, dir) = console_dir("api");
    let app = app(Some(dir)).await;
    for path in ["/api/v1/nothing-here", "/api/", "/internal/v1/x", "/api"] {
        let (status, headers, body) = call(&app, Method::GET, path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(body.contains("no such endpoint"), "{path}: {body}");
        assert_eq!(header(&headers, header::CONTENT_SECURITY_POLICY), API_CSP);
    }
    let (status, headers, _) = call(&app, Method::GET, "/healthz").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(header(&headers, header::CONTENT_SECURITY_POLICY), API_CSP);
    std::fs::remove_dir_all(root).unwrap();
}

#[tokio::test]
async fn without_a_console_directory_a_page_says_the_console_is_not_installed() {
    let missing = std::env::temp_dir().join("orrery-console-never-made");
    for dir in [None, Some(missing)] {
        let app = app(dir.clone()).await;
        let (status, headers, body) = call(&app, Method::GET, "/runs").await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{dir:?}");
        assert!(body.contains("the console is not installed"), "{body}");
        assert_eq!(header(&headers, header::CONTENT_SECURITY_POLICY), API_CSP);
    }
}

#[tokio::test]
async fn over_a_real_connection_raw_dot_dot_paths_get_the_json_404_and_pages_the_index() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (root, dir) = console_dir("tcp");
    let app = app(Some(dir)).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    // What curl --path-as-is sends: the path exactly as written, unnormalised.
    for (path, want) in [
        ("/../secret.txt", "404"),
        ("/assets/../../secret.txt", "404"),
        ("/%2e%2e/%2e%2e/secret.txt", "404"),
        ("/runs/team-a", "200"),
    ] {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut reply = Vec::new();
        tokio::time::timeout(
            std::time::Duration::from_secs(20),
            stream.read_to_end(&mut reply),
        )
        .await
        .expect("a reply within 20 s")
        .unwrap();
        let reply = String::from_utf8_lossy(&reply);
        assert!(
            reply.starts_with(&format!("HTTP/1.1 {want}")),
            "{path}: {reply}"
        );
        assert!(!reply.contains("not for you"), "{path}: {reply}");
        if want == "404" {
            assert!(reply.contains("\"code\":\"not_found\""), "{path}: {reply}");
        }
    }
    std::fs::remove_dir_all(root).unwrap();
}
