//! Request bodies over a limit (issue 29 item 2): every route answers one with the API's
//! `{loc, code, message}` error (413, code `too_large`, the limit named), never axum's plain
//! text. A declared `Content-Length` over the limit is answered before the body is read (so a
//! client sending `Expect: 100-continue` gets the 413 instead of `100 Continue`); a chunked
//! body is cut as soon as it passes the limit ([`DefaultBodyLimit`] on the extractors, the
//! handlers' own caps on the internal routes), and the rejection becomes the same error.
//!
//! [`parse_body`] reads a JSON body into a request type, naming a bad field at its path.

use super::problem::Problem;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The largest body a public route takes (a Composition spec to validate or a run to start).
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// A JSON body as `T`, or 422 `invalid` at the path of what does not fit (`["body", "spec",
/// "nodes", 0, "kind"]`; an unknown field of a type that denies them is named in the message).
pub fn parse_body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, Problem> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            super::problem::codes::INVALID,
            format!("{}", e.inner()),
        )
        .at(super::problem::body_loc(&e.path().to_string()))
    })
}

/// The extractors' limit, to layer on the router beside [`body_limit`].
pub fn extractor_limit() -> DefaultBodyLimit {
    DefaultBodyLimit::max(MAX_BODY_BYTES)
}

/// The 413 of a route taking at most `limit` bytes.
pub fn too_large(limit: usize) -> Problem {
    Problem::too_large(format!(
        "the request body is over {limit} bytes, the most this endpoint takes; send less"
    ))
    .at(vec!["body".into()])
}

/// Refuses a body declared (`Content-Length`) over `limit` before reading it, and turns a
/// plain-text 413 (an extractor that stopped reading at the limit) into [`too_large`].
pub async fn body_limit(State(limit): State<usize>, request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return too_large(limit).into_response();
    }
    let response = next.run(request).await;
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE && !json {
        return too_large(limit).into_response();
    }
    response
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;
