//! Every error reply of the sidecar: a status code and an [`ApiError`] body (`loc`, `code`,
//! `message`, and `expected` for a gap), plus `Retry-After` for back-pressure. Messages say what
//! is wrong and what to do; they never echo a token.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use orrery_crds::events::ingest::ApiError;

/// Stable error codes of the sidecar's replies.
pub mod codes {
    /// No bearer token, or one the cluster (or the run-token check) does not accept.
    pub const UNAUTHENTICATED: &str = "unauthenticated";
    /// Authenticated, but not allowed.
    pub const FORBIDDEN: &str = "forbidden";
    /// No such run (or the caller may not know it exists).
    pub const NOT_FOUND: &str = "not_found";
    /// The request body or a parameter is malformed.
    pub const INVALID: &str = "invalid";
    /// A batch starts past what the sidecar holds.
    pub const GAP: &str = "gap";
    /// A batch brings events after the run's `run.end`.
    pub const ENDED: &str = "ended";
    /// The body is too large.
    pub const TOO_LARGE: &str = "too_large";
    /// Back-pressure or a per-person limit.
    pub const RATE_LIMITED: &str = "rate_limited";
    /// The store or the apiserver cannot be reached.
    pub const UNAVAILABLE: &str = "unavailable";
    /// What the request would change changed since the caller read it (a stale
    /// `resourceVersion`, a revision that is not what was recorded).
    pub const CONFLICT: &str = "conflict";
    /// A create-only save of a name that is taken.
    pub const EXISTS: &str = "exists";
    /// A save would change fields another field manager owns.
    pub const FIELD_CONFLICT: &str = "field_conflict";
    /// A dry-run save would store a spec other than the one sent.
    pub const MERGE_DIFFERS: &str = "merge_differs";
    /// A seed spec that cannot be imported.
    pub const INVALID_SEED: &str = "invalid_seed";
}

/// An error reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The HTTP status.
    pub status: StatusCode,
    /// The body.
    pub body: ApiError,
    /// `Retry-After`, in seconds.
    pub retry_after: Option<u64>,
    /// Members of the body beside `loc`, `code` and `message` (a conflict's current object,
    /// a refused composition's findings), set with [`Problem::with`] (boxed: most problems
    /// have none, and every handler's `Result` carries the type).
    pub extra: Option<Box<serde_json::Map<String, serde_json::Value>>>,
}

impl Problem {
    /// A reply with `status`, `code` and `message`, about the request as a whole.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Problem {
        Problem {
            status,
            body: ApiError {
                loc: Vec::new(),
                code: code.to_owned(),
                message: message.into(),
                expected: None,
            },
            retry_after: None,
            extra: None,
        }
    }

    /// 401.
    pub fn unauthenticated(message: impl Into<String>) -> Problem {
        Problem::new(StatusCode::UNAUTHORIZED, codes::UNAUTHENTICATED, message)
    }

    /// 403.
    pub fn forbidden(message: impl Into<String>) -> Problem {
        Problem::new(StatusCode::FORBIDDEN, codes::FORBIDDEN, message)
    }

    /// 404.
    pub fn not_found(message: impl Into<String>) -> Problem {
        Problem::new(StatusCode::NOT_FOUND, codes::NOT_FOUND, message)
    }

    /// 400 at `loc`.
    pub fn invalid(loc: Vec<serde_json::Value>, message: impl Into<String>) -> Problem {
        Problem::new(StatusCode::BAD_REQUEST, codes::INVALID, message).at(loc)
    }

    /// 413.
    pub fn too_large(message: impl Into<String>) -> Problem {
        Problem::new(StatusCode::PAYLOAD_TOO_LARGE, codes::TOO_LARGE, message)
    }

    /// 429 with `Retry-After`.
    pub fn rate_limited(retry_after_seconds: u64, message: impl Into<String>) -> Problem {
        let mut p = Problem::new(StatusCode::TOO_MANY_REQUESTS, codes::RATE_LIMITED, message);
        p.retry_after = Some(retry_after_seconds);
        p
    }

    /// 503 with `Retry-After`.
    pub fn unavailable(message: impl Into<String>) -> Problem {
        let mut p = Problem::new(StatusCode::SERVICE_UNAVAILABLE, codes::UNAVAILABLE, message);
        p.retry_after = Some(1);
        p
    }

    /// The same problem at `loc`.
    pub fn at(mut self, loc: Vec<serde_json::Value>) -> Problem {
        self.body.loc = loc;
        self
    }

    /// The same problem with `key` in its body beside `loc`, `code` and `message` (those three
    /// are never replaced).
    pub fn with(mut self, key: &str, value: serde_json::Value) -> Problem {
        if !matches!(key, "loc" | "code" | "message" | "expected") {
            self.extra
                .get_or_insert_with(Box::default)
                .insert(key.to_owned(), value);
        }
        self
    }

    /// The member `key` set with [`Problem::with`] (`null` when none).
    pub fn member(&self, key: &str) -> &serde_json::Value {
        self.extra
            .as_ref()
            .and_then(|extra| extra.get(key))
            .unwrap_or(&serde_json::Value::Null)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let retry_after = self.retry_after;
        let code = self.code_extension();
        let mut response = match self.extra {
            None => (self.status, Json(self.body)).into_response(),
            Some(extra) => {
                let mut body = match serde_json::to_value(&self.body) {
                    Ok(serde_json::Value::Object(map)) => map,
                    _ => serde_json::Map::new(),
                };
                body.extend(*extra);
                (self.status, Json(body)).into_response()
            }
        };
        if let Some(seconds) = retry_after
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response.extensions_mut().insert(code);
        response
    }
}

/// A JSON path (`serde_path_to_error`'s `events[3].seq`) as a `loc` under `body`:
/// `["body", "events", 3, "seq"]`.
pub fn body_loc(path: &str) -> Vec<serde_json::Value> {
    let mut loc = vec![serde_json::Value::from("body")];
    for part in path.split('.').filter(|p| !p.is_empty() && *p != "?") {
        let mut rest = part;
        if let Some(open) = rest.find('[') {
            let (name, indexes) = rest.split_at(open);
            if !name.is_empty() {
                loc.push(name.into());
            }
            rest = indexes;
            for index in rest.split('[').filter(|s| !s.is_empty()) {
                let index = index.trim_end_matches(']');
                match index.parse::<u64>() {
                    Ok(i) => loc.push(i.into()),
                    Err(_) => loc.push(index.into()),
                }
            }
        } else {
            loc.push(rest.into());
        }
    }
    loc
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_json_path_becomes_a_loc_under_body() {
        let cases = [
            ("events[3].seq", json!(["body", "events", 3, "seq"])),
            (".", json!(["body"])),
            ("events", json!(["body", "events"])),
            ("a.b[0][1]", json!(["body", "a", "b", 0, 1])),
        ];
        for (path, want) in cases {
            assert_eq!(serde_json::Value::from(body_loc(path)), want, "{path}");
        }
    }

    #[tokio::test]
    async fn extra_members_join_the_body_and_never_replace_loc_code_or_message() {
        let problem = Problem::new(StatusCode::CONFLICT, "conflict", "stale")
            .at(vec!["body".into(), "resourceVersion".into()])
            .with("current", json!({"spec": {}}))
            .with("code", json!("forged"));
        let response = problem.into_response();
        assert_eq!(response.status(), StatusCode::CONFLICT);
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap_or_default();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        assert_eq!(
            body,
            json!({"loc": ["body", "resourceVersion"], "code": "conflict", "message": "stale",
                   "current": {"spec": {}}})
        );
    }

    #[test]
    fn back_pressure_says_when_to_retry() {
        let response = Problem::rate_limited(2, "busy").into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            response.headers().get(header::RETRY_AFTER),
            Some(&HeaderValue::from_static("2"))
        );
        let response = Problem::forbidden("no").into_response();
        assert!(response.headers().get(header::RETRY_AFTER).is_none());
    }
}
