//! The HTTP side every real provider shares: the one place the `reqwest` client is configured,
//! and one JSON POST with a total timeout, retries on 429/5xx (exponential backoff with jitter,
//! `Retry-After` honoured up to a cap), a byte cap on replies, compressed replies refused, and
//! cancellation at any point.
//!
//! The network guard supplies its own `reqwest::Client` (with its connector) through
//! [`HttpCaller::new`]; [`client_builder`] holds the policies such a client must keep.

use super::ModelError;
use reqwest::StatusCode;
use reqwest::header::{self, HeaderMap, HeaderValue};
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Total time for one model call when the entry sets none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Largest reply read when the entry sets none.
pub const DEFAULT_MAX_REPLY_BYTES: u64 = 8 * 1024 * 1024;
/// Largest error body read (the provider's message is taken from it).
const MAX_ERROR_BODY_BYTES: u64 = 64 * 1024;
/// Longest provider message kept in an error.
const MAX_MESSAGE_CHARS: usize = 500;

/// A `reqwest` client builder with the policies every model call keeps: redirects never
/// followed, proxy variables ignored, `Accept-Encoding: identity`, a connect timeout.
pub fn client_builder() -> reqwest::ClientBuilder {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(Duration::from_secs(10))
        .default_headers(headers)
        .user_agent(concat!("orrery-runner/", env!("CARGO_PKG_VERSION")))
}

/// Builds the default client (see [`client_builder`]).
pub fn build_client() -> Result<reqwest::Client, ModelError> {
    client_builder()
        .build()
        .map_err(|e| ModelError::Misconfigured(format!("cannot build the HTTP client: {e}")))
}

/// When and how often a failing call is retried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all (the first included).
    pub max_attempts: u32,
    /// Delay before the first retry; doubles each time.
    pub base_delay: Duration,
    /// Longest backoff delay.
    pub max_delay: Duration,
    /// Longest `Retry-After` honoured.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The backoff before retry number `retry` (1 = first retry): exponential, capped, with
    /// jitter in its upper half.
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        let full = self.base_delay.saturating_mul(factor).min(self.max_delay);
        let half = full / 2;
        let jitter_range = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        let jitter = if jitter_range == 0 {
            0
        } else {
            random_u64() % jitter_range
        };
        half + Duration::from_nanos(jitter)
    }
}

/// A random number from the standard library's per-instance hasher keys.
fn random_u64() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0x9e37_79b9_7f4a_7c15);
    hasher.finish()
}

/// Per-call limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallLimits {
    /// Total time for one call, retries included.
    pub timeout: Duration,
    /// Largest reply read.
    pub max_reply_bytes: u64,
}

impl Default for CallLimits {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
        }
    }
}

/// Sends JSON requests to one model endpoint.
#[derive(Clone, Debug)]
pub struct HttpCaller {
    client: reqwest::Client,
    retry: RetryPolicy,
    limits: CallLimits,
}

impl HttpCaller {
    /// A caller using `client` (build it from [`client_builder`] or let the network guard
    /// supply it).
    pub fn new(client: reqwest::Client, retry: RetryPolicy, limits: CallLimits) -> Self {
        Self {
            client,
            retry,
            limits,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &CallLimits {
        &self.limits
    }

    /// POSTs `body` to `url` and returns the JSON reply. `secret` (the API key) is removed from
    /// any error text.
    pub async fn post_json(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &serde_json::Value,
        secret: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<serde_json::Value, ModelError> {
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let bytes = serde_json::to_vec(body)
            .map_err(|e| ModelError::BadReply(format!("cannot encode the request: {e}")))?;
        let timeout_secs = self.limits.timeout.as_secs_f64().ceil() as u64;
        let attempts = self.attempts(url, headers, bytes, secret);
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ModelError::Cancelled),
            result = tokio::time::timeout(self.limits.timeout, attempts) => {
                result.unwrap_or(Err(ModelError::Timeout(timeout_secs)))
            }
        }
    }

    async fn attempts(
        &self,
        url: &str,
        mut headers: HeaderMap,
        bytes: Vec<u8>,
        secret: Option<&str>,
    ) -> Result<serde_json::Value, ModelError> {
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        // Also set per request, in case a supplied client lacks the default header.
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("identity"),
        );
        let max_attempts = self.retry.max_attempts.max(1);
        let mut last_status = StatusCode::INTERNAL_SERVER_ERROR;
        for attempt in 1..=max_attempts {
            let response = self
                .client
                .post(url)
                .headers(headers.clone())
                .body(bytes.clone())
                .send()
                .await
                .map_err(|e| ModelError::Transport(redact(&e.without_url().to_string(), secret)))?;
            let status = response.status();
            if status.is_success() {
                let body = read_capped(response, self.limits.max_reply_bytes, secret).await?;
                return serde_json::from_slice(&body).map_err(|e| {
                    ModelError::BadReply(format!("the reply is not the expected JSON: {e}"))
                });
            }
            if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
                last_status = status;
                if attempt == max_attempts {
                    break;
                }
                let delay = retry_after(response.headers())
                    .map(|d| d.min(self.retry.max_retry_after))
                    .unwrap_or_else(|| self.retry.backoff(attempt));
                drop(response);
                tracing::debug!(
                    status = status.as_u16(),
                    attempt,
                    ?delay,
                    "model call retried"
                );
                tokio::time::sleep(delay).await;
                continue;
            }
            let body = read_capped(response, MAX_ERROR_BODY_BYTES, secret)
                .await
                .unwrap_or_default();
            return Err(ModelError::Refused {
                status: status.as_u16(),
                message: provider_message(&body, secret),
            });
        }
        Err(ModelError::Exhausted {
            attempts: max_attempts,
            status: last_status.as_u16(),
        })
    }
}

/// `Retry-After` in seconds (HTTP dates are not honoured: the backoff applies).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(header::RETRY_AFTER)?.to_str().ok()?.trim();
    let secs: f64 = value.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// Refuses a reply whose `Content-Encoding` headers (every one of them, each a list) name
/// anything but `identity`.
fn refuse_compressed(headers: &HeaderMap) -> Result<(), ModelError> {
    crate::net::check_encoding("the model endpoint", headers).map_err(|_| {
        ModelError::BadReply(
            "the reply is compressed (a Content-Encoding other than identity); only identity encoding is accepted".to_owned(),
        )
    })
}

/// Reads a reply of at most `cap` bytes; compressed replies are refused before decoding.
async fn read_capped(
    mut response: reqwest::Response,
    cap: u64,
    secret: Option<&str>,
) -> Result<Vec<u8>, ModelError> {
    refuse_compressed(response.headers())?;
    if response.content_length().is_some_and(|len| len > cap) {
        return Err(too_large(cap));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ModelError::Transport(redact(&e.without_url().to_string(), secret)))?
    {
        if (body.len() + chunk.len()) as u64 > cap {
            return Err(too_large(cap));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn too_large(cap: u64) -> ModelError {
    ModelError::BadReply(format!("the reply is larger than the {cap}-byte limit"))
}

/// The provider's error message (`error.message`, as OpenAI, Anthropic and Gemini send it),
/// or the start of the body; never containing `secret`.
pub(crate) fn provider_message(body: &[u8], secret: Option<&str>) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        let error = v.get("error");
        error
            .and_then(|e| e.get("message"))
            .and_then(|m| m.as_str())
            .or_else(|| error.and_then(|e| e.as_str()))
            .or_else(|| v.get("message").and_then(|m| m.as_str()))
            .map(str::to_string)
    });
    let text = from_json.unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string());
    let text = if text.is_empty() {
        "(no message)".to_string()
    } else {
        text
    };
    let redacted = redact(&text, secret);
    if redacted.chars().count() > MAX_MESSAGE_CHARS {
        let cut: String = redacted.chars().take(MAX_MESSAGE_CHARS).collect();
        format!("{cut}…")
    } else {
        redacted
    }
}

/// `text` with every occurrence of `secret` replaced.
pub(crate) fn redact(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(s) if !s.is_empty() => text.replace(s, "[redacted]"),
        _ => text.to_string(),
    }
}

/// A header value holding a credential (marked sensitive so it is never printed).
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue, ModelError> {
    let mut header = HeaderValue::from_str(value).map_err(|_| {
        ModelError::Misconfigured(
            "the API key holds characters an HTTP header cannot carry".to_string(),
        )
    })?;
    header.set_sensitive(true);
    Ok(header)
}

/// `base` without trailing slashes, followed by `path`.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!("{}{path}", base.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped_with_jitter_in_its_upper_half() {
        let policy = RetryPolicy {
            max_attempts: 6,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(400),
            max_retry_after: Duration::from_secs(1),
        };
        for (retry, full_ms) in [(1u32, 100u64), (2, 200), (3, 400), (4, 400), (9, 400)] {
            for _ in 0..20 {
                let d = policy.backoff(retry);
                assert!(d >= Duration::from_millis(full_ms / 2), "{retry}: {d:?}");
                assert!(d <= Duration::from_millis(full_ms), "{retry}: {d:?}");
            }
        }
    }

    #[test]
    fn retry_after_is_read_in_seconds_and_dates_are_ignored() {
        let cases = [
            ("2", Some(Duration::from_secs(2))),
            ("0.5", Some(Duration::from_millis(500))),
            ("-1", None),
            ("Wed, 21 Oct 2015 07:28:00 GMT", None),
        ];
        for (value, expected) in cases {
            let mut headers = HeaderMap::new();
            headers.insert(header::RETRY_AFTER, HeaderValue::from_str(value).unwrap());
            assert_eq!(retry_after(&headers), expected, "{value}");
        }
    }

    #[test]
    fn the_provider_message_is_taken_from_each_wire_format() {
        let cases: [(&[u8], &str); 5] = [
            (br#"{"error":{"message":"bad model","type":"invalid_request_error"}}"#, "bad model"),
            (br#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens missing"}}"#, "max_tokens missing"),
            (br#"{"error":{"code":400,"message":"API key not valid","status":"INVALID_ARGUMENT"}}"#, "API key not valid"),
            (b"plain failure", "plain failure"),
            (b"", "(no message)"),
        ];
        for (body, expected) in cases {
            assert_eq!(provider_message(body, None), expected);
        }
    }

    #[test]
    fn the_key_never_appears_in_a_provider_message() {
        let body = br#"{"error":{"message":"Incorrect API key provided: sk-abc123"}}"#;
        let message = provider_message(body, Some("sk-abc123"));
        assert!(!message.contains("sk-abc123"), "{message}");
        assert!(message.contains("[redacted]"));
    }

    #[test]
    fn long_messages_are_cut() {
        let body = "x".repeat(2000);
        let message = provider_message(body.as_bytes(), None);
        assert!(message.chars().count() <= MAX_MESSAGE_CHARS + 1);
    }

    #[test]
    fn every_content_encoding_header_is_checked_not_only_the_first() {
        let headers = |values: &[&str]| {
            let mut h = HeaderMap::new();
            for v in values {
                h.append(header::CONTENT_ENCODING, HeaderValue::from_str(v).unwrap());
            }
            h
        };
        let cases: [(&[&str], bool); 6] = [
            (&[], true),
            (&["identity"], true),
            (&["Identity", "identity"], true),
            (&["gzip"], false),
            (&["identity", "gzip"], false),
            (&["identity, br"], false),
        ];
        for (values, ok) in cases {
            assert_eq!(
                refuse_compressed(&headers(values)).is_ok(),
                ok,
                "{values:?}"
            );
        }
    }

    #[test]
    fn urls_are_joined_without_double_slashes() {
        assert_eq!(
            join_url("http://h/v1/", "/chat/completions"),
            "http://h/v1/chat/completions"
        );
        assert_eq!(join_url("http://h", "/v1/messages"), "http://h/v1/messages");
    }
}
