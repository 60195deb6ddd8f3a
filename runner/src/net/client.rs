//! The guarded HTTP client: one reqwest client per policy, used for every remote call.

use super::connector::GuardLayer;
use super::error::GuardError;
use super::policy::{GuardPolicy, Route};
use super::resolve::{GuardResolver, NameResolver, SystemResolver};
use reqwest::header::{ACCEPT_ENCODING, CONTENT_ENCODING, HeaderMap, HeaderValue, LOCATION};
use reqwest::{Client, Proxy, RequestBuilder, Response, StatusCode, Url};
use std::sync::Arc;

/// A reqwest client whose every connection is checked by the guard, and helpers that refuse
/// redirects and compressed replies and cap bodies.
///
/// Built with: redirects never followed, proxy environment variables ignored (only the policy's
/// explicit egress proxy, for public https), `Accept-Encoding: identity` on every request,
/// automatic decompression off, the policy's timeouts, the guard's resolver (every address of a
/// name checked at every connect) and the guard's connector layer (IP literals checked before
/// connecting, the peer address checked after). TLS trusts the system's roots (`SSL_CERT_FILE`,
/// `SSL_CERT_DIR`) and the policy's extra roots, read at the first certificate to check.
#[derive(Clone)]
pub struct GuardedClient {
    client: Client,
    policy: Arc<GuardPolicy>,
    verifier: Arc<super::tls::LazyVerifier>,
}

impl std::fmt::Debug for GuardedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedClient")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl GuardedClient {
    /// A client for `policy` using the system resolver.
    pub fn new(policy: GuardPolicy) -> Result<Self, GuardError> {
        Self::with_resolver(policy, Arc::new(SystemResolver))
    }

    /// A client for `policy` resolving names with `resolver`.
    pub fn with_resolver(
        policy: GuardPolicy,
        resolver: Arc<dyn NameResolver>,
    ) -> Result<Self, GuardError> {
        policy.validate()?;
        let policy = Arc::new(policy);
        let limits = policy.limits;
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT_ENCODING, HeaderValue::from_static("identity"));
        let mut builder = Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .no_gzip()
            .no_brotli()
            .no_deflate()
            .no_zstd()
            .default_headers(headers)
            .connect_timeout(limits.connect_timeout)
            .dns_resolver(Arc::new(GuardResolver {
                policy: policy.clone(),
                inner: resolver,
            }))
            .connector_layer(GuardLayer {
                policy: policy.clone(),
            });
        if let Some(t) = limits.request_timeout {
            builder = builder.timeout(t);
        }
        if let Some(t) = limits.read_timeout {
            builder = builder.read_timeout(t);
        }
        // The system's roots and the policy's extra roots, loaded at the first certificate to
        // check (never for plain http) and once per process (see `tls`).
        let (tls, verifier) = super::tls::client_config(&policy.extra_roots_pem)?;
        builder = builder.tls_backend_preconfigured(tls);
        if let Some(proxy_url) = policy.egress_proxy.clone() {
            let routing = policy.clone();
            builder = builder.proxy(Proxy::custom(move |url: &Url| {
                (routing.route(url) == Route::Proxy).then(|| proxy_url.clone())
            }));
        }
        let client = builder
            .build()
            .map_err(|e| GuardError::Config(format!("could not build the HTTP client: {e}")))?;
        Ok(Self {
            client,
            policy,
            verifier,
        })
    }

    /// The underlying reqwest client, for libraries that take one (rmcp, model SDKs). Its
    /// connections are guarded; redirects and compressed replies come back as plain responses,
    /// so prefer [`GuardedClient::send`] where the caller builds the request.
    pub fn reqwest(&self) -> &Client {
        &self.client
    }

    /// Whether this client has loaded the trusted roots yet (it does at its first certificate
    /// check: never for plain http).
    pub fn roots_loaded(&self) -> bool {
        self.verifier.roots_loaded()
    }

    /// The policy this client enforces.
    pub fn policy(&self) -> &GuardPolicy {
        &self.policy
    }

    /// Checks `url` against the policy without connecting.
    pub fn check_url(&self, url: &Url) -> Result<Route, GuardError> {
        self.policy.check_url(url)
    }

    /// A GET request builder for `url` (checked first).
    pub fn get(&self, url: &str) -> Result<RequestBuilder, GuardError> {
        Ok(self.client.get(self.parse_checked(url)?))
    }

    /// A POST request builder for `url` (checked first).
    pub fn post(&self, url: &str) -> Result<RequestBuilder, GuardError> {
        Ok(self.client.post(self.parse_checked(url)?))
    }

    fn parse_checked(&self, url: &str) -> Result<Url, GuardError> {
        let parsed = super::written::parse_url(url)?;
        self.policy.check_url(&parsed)?;
        Ok(parsed)
    }

    /// Sends a request built on this client: checks the URL, sends, and refuses a redirect
    /// (never followed) or a compressed reply before its body is read.
    pub async fn send(&self, request: RequestBuilder) -> Result<Response, GuardError> {
        let request = request.build().map_err(|e| GuardError::InvalidUrl {
            url: String::new(),
            reason: e.to_string(),
        })?;
        let url = request.url().to_string();
        self.policy.check_url(request.url())?;
        let response = self
            .client
            .execute(request)
            .await
            .map_err(|e| GuardError::from_reqwest(&url, e))?;
        check_response(&url, &response)?;
        Ok(response)
    }

    /// Sends and reads the whole body within `max_bytes` (see [`read_capped`]).
    pub async fn fetch_capped(
        &self,
        request: RequestBuilder,
        max_bytes: u64,
    ) -> Result<(StatusCode, HeaderMap, bytes::Bytes), GuardError> {
        let response = self.send(request).await?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = read_capped(response, max_bytes).await?;
        Ok((status, headers, body))
    }
}

/// Refuses redirects (3xx with or without `Location`) and replies whose `Content-Encoding` is
/// anything but identity.
pub fn check_response(url: &str, response: &Response) -> Result<(), GuardError> {
    let status = response.status();
    if status.is_redirection() {
        let location = response
            .headers()
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        return Err(GuardError::Redirect {
            url: url.to_owned(),
            status: status.as_u16(),
            location,
        });
    }
    check_encoding(url, response.headers())
}

/// Refuses a `Content-Encoding` other than `identity` (rule 5.29).
pub fn check_encoding(url: &str, headers: &HeaderMap) -> Result<(), GuardError> {
    for value in headers.get_all(CONTENT_ENCODING) {
        let text = String::from_utf8_lossy(value.as_bytes()).to_string();
        let all_identity = text
            .split(',')
            .map(str::trim)
            .all(|t| t.is_empty() || t.eq_ignore_ascii_case("identity"));
        if !all_identity {
            return Err(GuardError::CompressedReply {
                url: url.to_owned(),
                encoding: text,
            });
        }
    }
    Ok(())
}

/// Reads a reply body, refusing it once it is over `max_bytes`: at once when `Content-Length`
/// says so, otherwise while streaming (chunked or close-delimited). Refuses compressed replies
/// before reading a byte.
pub async fn read_capped(
    mut response: Response,
    max_bytes: u64,
) -> Result<bytes::Bytes, GuardError> {
    let url = response.url().to_string();
    check_encoding(&url, response.headers())?;
    let too_large = || GuardError::TooLarge {
        url: url.clone(),
        what: "reply body",
        limit: max_bytes,
    };
    if response.content_length().is_some_and(|n| n > max_bytes) {
        return Err(too_large());
    }
    let mut body = bytes::BytesMut::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| GuardError::from_reqwest(&url, e))?
    {
        if (body.len() + chunk.len()) as u64 > max_bytes {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}
