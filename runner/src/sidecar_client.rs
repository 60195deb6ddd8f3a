//! How the runner talks to the sidecar, whatever it sends: the trace's events
//! ([`crate::events::HttpSink`]) and the approval relay
//! ([`crate::approval::SidecarDecisions`]) share one [`SidecarClient`].
//!
//! The sidecar's URL is the operator's (the plan's `sidecarUrl`; in pod mode
//! `ORRERY_SIDECAR_URL` overrides it for test and dev setups where the in-cluster Service name
//! does not resolve), not a user's, so the client does not go through the network guard of
//! [`crate::net`], which is for remote endpoints named in RegistryEntries: no proxy, no
//! redirects, a connect and a request timeout, `Accept-Encoding: identity`. Every request
//! carries the run's token as `Authorization: Bearer`; the header is marked sensitive, and the
//! token is never printed nor put in an error.

use crate::safety::cut_to;
use orrery_crds::events::ingest::ApiError;
use orrery_crds::events::visible_inline;
use reqwest::header::{self, HeaderMap, HeaderValue};
use std::hash::{BuildHasher, Hasher as _};
use std::time::Duration;

/// The largest sidecar reply read.
pub const MAX_REPLY_BYTES: usize = 64 * 1024;
/// The longest sidecar message kept in a note.
const MAX_MESSAGE_BYTES: usize = 300;

/// Why a [`SidecarClient`] cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum SidecarClientError {
    /// The sidecar URL is not an http(s) URL.
    #[error(
        "the sidecar URL '{url}' cannot be used: {reason}; the plan's sidecarUrl (or ORRERY_SIDECAR_URL) must be an http:// or https:// URL such as http://orrery-sidecar.orrery-system.svc:8080"
    )]
    Url {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The run UID cannot be a path segment.
    #[error(
        "the run UID '{uid}' cannot name a sidecar path: only letters, digits, '-', '.', '_' and '~' may appear"
    )]
    RunUid {
        /// The UID given.
        uid: String,
    },
    /// The token is empty or not a header value (it is never shown).
    #[error(
        "the run token cannot be sent as `Authorization: Bearer`: it is empty or holds a character a header cannot; check the `token` key of the run's plan Secret"
    )]
    Token,
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client for the sidecar: {0}")]
    Client(String),
}

/// An HTTP client for one run's calls to the sidecar (see the module).
#[derive(Clone)]
pub struct SidecarClient {
    client: reqwest::Client,
    base: reqwest::Url,
    run_uid: String,
    auth: HeaderValue,
}

impl std::fmt::Debug for SidecarClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SidecarClient")
            .field("base", &self.base.as_str())
            .field("run_uid", &self.run_uid)
            .finish_non_exhaustive()
    }
}

impl SidecarClient {
    /// A client for run `run_uid` on the sidecar at `sidecar_url`, sending `token`; each
    /// request times out after `request_timeout` unless it says otherwise.
    pub fn new(
        sidecar_url: &str,
        run_uid: &str,
        token: &str,
        connect_timeout: Duration,
        request_timeout: Duration,
    ) -> Result<SidecarClient, SidecarClientError> {
        let bad = |reason: &str| SidecarClientError::Url {
            url: sidecar_url.to_owned(),
            reason: reason.to_owned(),
        };
        let base = reqwest::Url::parse(sidecar_url.trim()).map_err(|e| bad(&e.to_string()))?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            return Err(bad("it is not an http:// or https:// URL with a host"));
        }
        let path_safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~');
        if run_uid.is_empty()
            || !run_uid.chars().all(path_safe)
            || run_uid.chars().all(|c| c == '.')
        {
            return Err(SidecarClientError::RunUid {
                uid: run_uid.to_owned(),
            });
        }
        let token = token.trim();
        if token.is_empty() {
            return Err(SidecarClientError::Token);
        }
        let mut auth = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| SidecarClientError::Token)?;
        auth.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("identity"),
        );
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(connect_timeout)
            .timeout(request_timeout)
            .default_headers(headers)
            .user_agent(concat!("orrery-runner/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| SidecarClientError::Client(e.to_string()))?;
        Ok(SidecarClient {
            client,
            base,
            run_uid: run_uid.to_owned(),
            auth,
        })
    }

    /// The run's UID (a valid path segment).
    pub fn run_uid(&self) -> &str {
        &self.run_uid
    }

    /// The sidecar's URL of `path` (a contract path, e.g. `/internal/v1/runs/{uid}/events`).
    pub fn url(&self, path: &str) -> Result<reqwest::Url, SidecarClientError> {
        self.base.join(path).map_err(|e| SidecarClientError::Url {
            url: self.base.to_string(),
            reason: e.to_string(),
        })
    }

    /// A request to `url` carrying the run token.
    pub fn request(&self, method: reqwest::Method, url: reqwest::Url) -> reqwest::RequestBuilder {
        self.client
            .request(method, url)
            .header(header::AUTHORIZATION, self.auth.clone())
    }

    /// A JSON `POST` of `body` to `url` carrying the run token.
    pub fn post_json(&self, url: reqwest::Url, body: Vec<u8>) -> reqwest::RequestBuilder {
        self.request(reqwest::Method::POST, url)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body)
    }
}

/// A transport error and its causes, without the URL (the caller names the endpoint).
pub fn error_chain(error: reqwest::Error) -> String {
    let mut causes = Vec::new();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        causes.push(cause.to_string());
        source = cause.source();
    }
    let mut text = error.without_url().to_string();
    for cause in causes {
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

/// The reply's body, at most [`MAX_REPLY_BYTES`].
pub async fn read_reply(mut response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > MAX_REPLY_BYTES {
                    return Err(format!(
                        "the sidecar's reply is over {MAX_REPLY_BYTES} bytes"
                    ));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => return Err(format!("the sidecar's reply was cut off: {e}")),
        }
    }
}

/// The `Retry-After` of a reply, in whole seconds, when it has one.
pub fn retry_after(response: &reqwest::Response) -> Option<u64> {
    response
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// `HTTP <status>` and the sidecar's message (an [`ApiError`] body), screened and cut: remote
/// text is never echoed raw.
pub fn api_message(status: reqwest::StatusCode, body: &Result<Vec<u8>, String>) -> String {
    let message = body
        .as_ref()
        .ok()
        .and_then(|b| serde_json::from_slice::<ApiError>(b).ok())
        .map(|e| cut_to(&visible_inline(&e.message).text, MAX_MESSAGE_BYTES));
    match message {
        Some(m) => format!("HTTP {status}: {m}"),
        None => format!("HTTP {status}"),
    }
}

/// The backoff ceiling after `failures` failures in a row: `base`, doubled each time, capped
/// at `max`.
pub fn backoff_ceiling(base: Duration, max: Duration, failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(30);
    base.saturating_mul(1u32 << doublings).min(max)
}

/// A uniformly random wait between zero and `ceiling` ("full jitter").
pub fn full_jitter(ceiling: Duration) -> Duration {
    let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
    if nanos == 0 {
        return Duration::ZERO;
    }
    // Every `RandomState` has keys of its own: its empty hash is a fresh random number.
    let hasher = std::hash::RandomState::new().build_hasher();
    Duration::from_nanos(hasher.finish() % nanos.saturating_add(1))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn client(url: &str, uid: &str, token: &str) -> Result<SidecarClient, SidecarClientError> {
        SidecarClient::new(
            url,
            uid,
            token,
            Duration::from_secs(1),
            Duration::from_secs(1),
        )
    }

    #[test]
    fn the_backoff_ceiling_doubles_from_the_base_up_to_the_cap() {
        let (base, max) = (Duration::from_millis(100), Duration::from_secs(5));
        let ceilings: Vec<u128> = (1..=8)
            .map(|n| backoff_ceiling(base, max, n).as_millis())
            .collect();
        assert_eq!(ceilings, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        assert_eq!(backoff_ceiling(base, max, u32::MAX), max);
        for _ in 0..100 {
            assert!(full_jitter(Duration::from_millis(100)) <= Duration::from_millis(100));
        }
        assert_eq!(full_jitter(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn a_sidecar_url_run_uid_or_token_that_cannot_be_used_is_named_but_the_token_never_shown() {
        let ok = client("http://orrery-sidecar.orrery-system.svc:8080", "u-1", "t").unwrap();
        assert_eq!(
            ok.url("/internal/v1/runs/u-1/approvals").unwrap().as_str(),
            "http://orrery-sidecar.orrery-system.svc:8080/internal/v1/runs/u-1/approvals"
        );
        for bad in ["ftp://x", "not a url", "unix:/run/sock"] {
            let e = client(bad, "u-1", "t").unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("http://"), "{e}");
        }
        for uid in ["", "a/b", "..", "a?b"] {
            assert!(matches!(
                client("http://x", uid, "t"),
                Err(SidecarClientError::RunUid { .. })
            ));
        }
        for token in ["", "  ", "secret\nvalue"] {
            let e = client("http://x", "u-1", token).unwrap_err();
            assert!(matches!(e, SidecarClientError::Token));
            assert!(!e.to_string().contains("secret"));
        }
        assert!(!format!("{ok:?}").contains("Bearer"));
    }
}
