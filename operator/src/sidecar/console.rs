//! The web console's files (`--console-dir DIR`): GET and HEAD of any path outside the API
//! (`/api/`, `/internal/`, `/healthz`, `/readyz`) serve a file of the directory, or its
//! `index.html` for a page path (the console routes in the browser). Hashed assets under
//! `assets/` are cached for good (`immutable`); `index.html` and the rest are revalidated
//! (`no-cache`). Console replies carry the console's Content-Security-Policy ([`CONSOLE_CSP`]:
//! its own scripts, styles, workers and API only); every other reply keeps the API's
//! `default-src 'none'`.
//!
//! Refused with the API's JSON 404, never a file from elsewhere: a `..` or `.` segment (also
//! percent-encoded), a backslash or NUL, a path that resolves (through a symlink) outside the
//! directory, a method other than GET and HEAD, a missing asset (a last segment with a file
//! extension). Without a directory, or with one that does not exist, every console path is 404
//! "the console is not installed".

use super::Sidecar;
use super::problem::Problem;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The console's Content-Security-Policy: nothing but its own origin (no inline script or
/// style, no eval, no WebAssembly), images also as `data:` URLs, never framed.
pub const CONSOLE_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; worker-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The largest file served (the console's biggest bundle is far below it).
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The path prefixes that belong to the API: never the console's, whatever the method.
const API_PATHS: [&str; 2] = ["/api/", "/internal/"];

/// The API's endpoints outside those prefixes.
const API_EXACT: [&str; 4] = ["/healthz", "/readyz", "/api", "/internal"];

/// What the router answers for a path no route has: a console file for GET/HEAD outside the
/// API, else the API's JSON 404.
pub async fn fallback(State(sidecar): State<Arc<Sidecar>>, method: Method, uri: Uri) -> Response {
    let path = uri.path();
    if API_EXACT.contains(&path) || API_PATHS.iter().any(|p| path.starts_with(p)) {
        return no_endpoint();
    }
    if method != Method::GET && method != Method::HEAD {
        return Problem::not_found(format!(
            "{method} {path}: the console answers GET and HEAD only; the API is under /api/v1"
        ))
        .into_response();
    }
    let Some(dir) = installed(sidecar.console_dir.as_deref()) else {
        return Problem::not_found(
            "the console is not installed (the sidecar was started without --console-dir, or \
             its directory does not exist); the API is under /api/v1 (docs/sidecar-api.md)",
        )
        .into_response();
    };
    let Some(segments) = segments(path) else {
        return not_a_console_path(path);
    };
    match resolve(&dir, &segments).await {
        Some(file) => file_response(&file, method == Method::HEAD).await,
        None => not_a_console_path(path),
    }
}

/// The API's 404 for a path under the API that no route has.
pub fn no_endpoint() -> Response {
    Problem::not_found("no such endpoint; the API is under /api/v1 (docs/sidecar-api.md)")
        .into_response()
}

fn not_a_console_path(path: &str) -> Response {
    Problem::not_found(format!("{path}: no such file in the console")).into_response()
}

/// The console directory, canonical, when it exists.
fn installed(dir: Option<&Path>) -> Option<PathBuf> {
    let dir = dir?.canonicalize().ok()?;
    dir.is_dir().then_some(dir)
}

/// The path's segments, percent-decoded, or `None` when one of them could step out of the
/// directory or is not a plain name: `..`, `.`, a backslash, a NUL, or bytes that are not UTF-8.
fn segments(path: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for raw in path.split('/').filter(|s| !s.is_empty()) {
        let decoded = percent_encoding::percent_decode_str(raw)
            .decode_utf8()
            .ok()?
            .into_owned();
        // A decoded `/` would join two segments the checks below saw as one.
        if decoded == ".."
            || decoded == "."
            || decoded.contains(['/', '\\', '\0'])
            || decoded.is_empty()
        {
            return None;
        }
        out.push(decoded);
    }
    Some(out)
}

/// The file a path names inside `dir` (canonical): the file itself; for a page path (no file
/// extension in its last segment, or a directory) `index.html`; `None` for a missing asset or
/// anything that resolves outside `dir`.
async fn resolve(dir: &Path, segments: &[String]) -> Option<PathBuf> {
    let mut candidate = dir.to_path_buf();
    candidate.extend(segments);
    let is_asset = segments.last().is_some_and(|last| last.contains('.'));
    let target = match tokio::fs::metadata(&candidate).await {
        Ok(meta) if meta.is_file() => candidate,
        Ok(_) => dir.join("index.html"),
        Err(_) if is_asset => return None,
        Err(_) => dir.join("index.html"),
    };
    let real = tokio::fs::canonicalize(&target).await.ok()?;
    (real.starts_with(dir) && real.is_file()).then_some(real)
}

/// The file's reply: its type, its caching, the console's CSP; no body for HEAD.
async fn file_response(file: &Path, head: bool) -> Response {
    let too_large = tokio::fs::metadata(file)
        .await
        .map_or(true, |m| m.len() > MAX_FILE_BYTES);
    if too_large {
        return Problem::not_found("no such file in the console").into_response();
    }
    let bytes = match tokio::fs::read(file).await {
        Ok(b) => b,
        Err(_) => return Problem::not_found("no such file in the console").into_response(),
    };
    let immutable = file
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|d| d == "assets")
        && file.file_name().is_some_and(|n| n != "index.html");
    let cache = if immutable {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let length = bytes.len();
    let mut response = if head {
        Response::new(Body::empty())
    } else {
        Response::new(Body::from(bytes))
    };
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(file)),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONSOLE_CSP),
    );
    response
}

/// The media type of a console file, by its extension.
fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "webmanifest" => "application/manifest+json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
#[path = "console_tests.rs"]
mod tests;
