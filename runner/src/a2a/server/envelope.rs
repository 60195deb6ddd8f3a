//! What is checked before a method runs: the JSON-RPC framing, the requested `A2A-Version`,
//! the content type and the bearer token.

use axum::http::{HeaderMap, Uri, header};
use serde_json::Value;

use crate::a2a::types::{
    A2A_CONTENT_TYPE, A2aErrorCode, A2aMethod, IMPLIED_LEGACY_VERSION, JSONRPC_VERSION,
    JsonRpcError, RequestId, VERSION_HEADER,
};

pub(crate) type EnvelopeError = (Option<RequestId>, JsonRpcError);

/// Reads the JSON-RPC framing: `jsonrpc` exactly "2.0", a valid `id`, a known 1.0 method.
pub(crate) fn parse_envelope(
    bytes: &[u8],
) -> Result<(Option<RequestId>, A2aMethod, Option<Value>), EnvelopeError> {
    // Duplicate keys refused, as everywhere else (serde_json alone keeps the last, so
    // `{"method": "GetTask", "method": "CancelTask"}` would be read as something a proxy
    // reading the first key did not see).
    let value: Value = crate::pin::parse_json_no_duplicate_keys(bytes).map_err(|e| {
        (
            None,
            JsonRpcError::new(A2aErrorCode::ParseError, format!("Parse error: {e}")),
        )
    })?;
    let invalid = |id: Option<RequestId>, why: &str| {
        (
            id,
            JsonRpcError::new(
                A2aErrorCode::InvalidRequest,
                format!("Invalid request: {why}"),
            ),
        )
    };
    let Value::Object(mut object) = value else {
        let why = if value.is_array() {
            "batch requests are not supported"
        } else {
            "the body must be a JSON-RPC request object"
        };
        return Err(invalid(None, why));
    };
    let id = match object.remove("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(RequestId::String(s)),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(n) => Some(RequestId::Number(n)),
            None => return Err(invalid(None, "`id` must be a string, an integer or null")),
        },
        Some(_) => return Err(invalid(None, "`id` must be a string, an integer or null")),
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some(JSONRPC_VERSION) {
        return Err(invalid(id, "`jsonrpc` must be \"2.0\""));
    }
    let Some(name) = object.get("method").and_then(Value::as_str) else {
        return Err(invalid(id, "`method` must be a string"));
    };
    let Some(method) = A2aMethod::from_name(name) else {
        let err = JsonRpcError::new(
            A2aErrorCode::MethodNotFound,
            format!("Method not found: {name}"),
        );
        return Err((id, err));
    };
    Ok((id, method, object.remove("params")))
}

/// The `A2A-Version` header, else the query parameter, else the implied 0.3.
pub(super) fn requested_version(headers: &HeaderMap, uri: &Uri) -> String {
    let from_header = headers
        .get(VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty());
    let from_query = || {
        uri.query()?
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(k, _)| k.eq_ignore_ascii_case(VERSION_HEADER))
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    };
    from_header
        .or_else(from_query)
        .unwrap_or(IMPLIED_LEGACY_VERSION)
        .to_owned()
}

pub(super) fn content_type_is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let media = value.split(';').next().unwrap_or_default().trim();
    media.eq_ignore_ascii_case("application/json") || media.eq_ignore_ascii_case(A2A_CONTENT_TYPE)
}

/// Constant-time comparison of the presented bearer token with the expected one.
pub(super) fn bearer_matches(headers: &HeaderMap, expected: &str) -> bool {
    let Some(presented) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
    else {
        return false;
    };
    let (a, b) = (presented.as_bytes(), expected.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use axum::http::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn the_version_comes_from_the_header_then_the_query_then_defaults_to_0_3() {
        let uri: Uri = "/?A2A-Version=1.0".parse().unwrap();
        let plain: Uri = "/".parse().unwrap();
        assert_eq!(
            requested_version(&headers(&[("a2a-version", "1.1")]), &plain),
            "1.1"
        );
        assert_eq!(requested_version(&headers(&[]), &uri), "1.0");
        assert_eq!(
            requested_version(&headers(&[("a2a-version", "")]), &plain),
            "0.3"
        );
        assert_eq!(requested_version(&headers(&[]), &plain), "0.3");
    }

    #[test]
    fn only_json_content_types_are_accepted() {
        for (value, ok) in [
            ("application/json", true),
            ("application/json; charset=utf-8", true),
            ("application/a2a+json", true),
            ("text/plain", false),
            ("application/x-www-form-urlencoded", false),
        ] {
            let mut map = HeaderMap::new();
            map.insert(header::CONTENT_TYPE, HeaderValue::from_static(value));
            assert_eq!(content_type_is_json(&map), ok, "{value}");
        }
        assert!(!content_type_is_json(&HeaderMap::new()));
    }

    #[test]
    fn the_bearer_token_must_match_exactly() {
        assert!(bearer_matches(
            &headers(&[("authorization", "Bearer s3cret")]),
            "s3cret"
        ));
        assert!(bearer_matches(
            &headers(&[("authorization", "bearer s3cret")]),
            "s3cret"
        ));
        assert!(!bearer_matches(
            &headers(&[("authorization", "Bearer s3cre")]),
            "s3cret"
        ));
        assert!(!bearer_matches(
            &headers(&[("authorization", "Basic s3cret")]),
            "s3cret"
        ));
        assert!(!bearer_matches(&headers(&[]), "s3cret"));
    }

    #[test]
    fn envelope_errors_follow_json_rpc() {
        let code = |body: &str| {
            parse_envelope(body.as_bytes())
                .map(|_| ())
                .unwrap_err()
                .1
                .code
        };
        assert_eq!(code("{"), -32700);
        assert_eq!(code("[]"), -32600);
        assert_eq!(code("5"), -32600);
        assert_eq!(
            code(r#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#),
            -32600
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":true,"method":"GetTask"}"#),
            -32600
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1.5,"method":"GetTask"}"#),
            -32600
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1}"#), -32600);
        // A key twice, at any depth, is not read as its last copy.
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","method":"CancelTask"}"#),
            -32700
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"a","id":"b"}}"#),
            -32700
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"message/send"}"#),
            -32601
        );
        let (id, method, params) =
            parse_envelope(br#"{"jsonrpc":"2.0","id":"x","method":"GetTask","params":{"id":"t"}}"#)
                .unwrap();
        assert_eq!(id, Some(RequestId::String("x".into())));
        assert_eq!(method, A2aMethod::GetTask);
        assert_eq!(params, Some(serde_json::json!({"id": "t"})));
    }
}
